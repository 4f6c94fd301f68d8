"""Finite-size fine-tuning transferability, paper 000, Eq. 15 at finite n, d.

:func:`transferkit.theory.deep_linear.finetune_transferability_finite` against the exact
finite-size risks it is the difference of (Eqs. 8 and 14), against the n, d -> inf form of
Eq. 15, and against a Monte Carlo estimate of E(R_sc - R_ft) from the closed-form estimators
(scratch: X^+ y; fine-tuning: X^+ y + P_perp beta_s, paper 000, Thm 3.9).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from transferkit import theory

dl = theory.deep_linear


@pytest.mark.parametrize("d", [10, 57, 500])
@pytest.mark.parametrize("theta", [0.0, 0.3, math.pi / 3, 1.0, math.pi / 2, 2.5, math.pi])
@pytest.mark.parametrize("sigma", [0.0, 0.2, 1.5])
def test_difference_of_the_exact_finite_risks(d, theta, sigma):
    ns = np.array([n for n in range(1, 2 * d + 3) if abs(n - d) > 1])
    T = dl.finetune_transferability_finite(ns, d, theta)
    diff = dl.scratch_risk_finite(ns, d, sigma) - dl.finetune_risk_finite(ns, d, theta, sigma)
    tol = 1e-12 * (1 + dl.scratch_risk_finite(ns, d, sigma))  # rounding of the larger terms
    assert np.all(np.abs(T - diff) <= tol), np.max(np.abs(T - diff) / tol)
    assert np.all(T[ns >= d] == 0.0) and not np.any(np.signbit(T[ns >= d]))


def test_equals_eq15_at_gamma_n_over_d():
    d = 200
    ns = np.arange(1, 3 * d)
    th = np.linspace(0, np.pi, 13)[None, :]
    np.testing.assert_allclose(dl.finetune_transferability_finite(ns[:, None], d, th),
                               dl.finetune_transferability(ns[:, None] / d, th),
                               rtol=0, atol=1e-15)


def test_finite_where_the_expected_risks_are_not():
    # at |n - d| <= 1 both expected risks are infinite for sigma > 0; the difference is not
    d, theta = 40, 1.2
    for n in (d - 1, d, d + 1):
        assert math.isinf(dl.finetune_risk_finite(n, d, theta, 0.2))
    assert dl.finetune_transferability_finite(d - 1, d, theta) == pytest.approx(
        -(1 / d) * (1 - 2 * math.cos(theta)), rel=1e-14)
    assert dl.finetune_transferability_finite(d, d, theta) == 0.0
    assert dl.finetune_transferability_finite(d + 1, d, theta) == 0.0


def test_scalar_and_array_and_validation():
    assert isinstance(dl.finetune_transferability_finite(5, 10, 1.0), float)
    assert dl.finetune_transferability_finite([5, 20], 10, [[0.0], [1.0]]).shape == (2, 2)
    # sign: negative transfer beyond pi/3 (for n < d), positive below
    assert dl.finetune_transferability_finite(5, 10, 0.5) > 0 > dl.finetune_transferability_finite(5, 10, 1.5)
    for name, bad in (("n", dict(n=0, d=10, theta=1.0)), ("n", dict(n=2.5, d=10, theta=1.0)),
                      ("d", dict(n=5, d=0, theta=1.0)), ("theta", dict(n=5, d=10, theta=4.0)),
                      ("theta", dict(n=5, d=10, theta=float("nan")))):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            dl.finetune_transferability_finite(**bad)


@pytest.mark.parametrize("n,d,theta", [(6, 15, 0.4), (10, 15, math.pi / 2), (12, 15, 2.0),
                                       (20, 15, 1.0)])
def test_monte_carlo(n, d, theta):
    """Mean of R_sc - R_ft over draws of (X, eps): the noise term X^+ eps cancels draw by draw."""
    rng = np.random.default_rng([15, n, d])
    draws, sigma = 4000, 0.3
    e1, e2 = np.eye(d)[0], np.eye(d)[1]
    beta_s, beta_t = e1, math.cos(theta) * e1 + math.sin(theta) * e2
    T = np.empty(draws)
    for b in range(draws):
        X = rng.standard_normal((n, d))
        y = X @ beta_t + sigma * rng.standard_normal(n)
        pinv = np.linalg.pinv(X)
        sc = pinv @ y
        ft = sc + beta_s - pinv @ (X @ beta_s)  # X^+ y + P_perp beta_s
        T[b] = np.sum((sc - beta_t) ** 2) - np.sum((ft - beta_t) ** 2)
    se = T.std(ddof=1) / math.sqrt(draws)
    expect = dl.finetune_transferability_finite(n, d, theta)
    assert abs(T.mean() - expect) <= 5 * se + 1e-12, (T.mean(), expect, se)
