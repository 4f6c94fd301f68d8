"""Tests for the Sec. 6 closed forms of :mod:`transferkit.theory.linear_teachers` (paper 001,
Thm 6.1 / Eq. 11, Cors. 6.2-6.3).

References are independent of the module: the Gram matrix written out from its definition
(:math:`x_i^\\top x_j(\\pi - \\arccos x_i^\\top x_j)/(2\\pi)`) and ``numpy.linalg.solve``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from transferkit.theory import linear_teachers as lt


def _sphere(rng, n, d):
    X = rng.standard_normal((n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _gram(X):
    G = np.clip(X @ X.T, -1, 1)
    return G * (np.pi - np.arccos(G)) / (2 * np.pi)


def _quad(X, r):
    return float(r @ np.linalg.solve(_gram(X), r))


# ----------------------------------------------------------------- the loss of Thm 6.1

def test_ramp_loss_is_a_loss_of_thm61():
    rng = np.random.default_rng(0)
    f, g, y = rng.normal(0, 2, (3, 1000))
    loss = lt.ramp_loss(f, y)
    np.testing.assert_array_equal(loss, np.minimum(np.abs(f - y), 1))
    assert loss.min() >= 0 and loss.max() <= 1 and loss.max() == 1   # into [0, 1], capped
    np.testing.assert_array_equal(lt.ramp_loss(y, y), 0)              # l(y, y) = 0
    assert np.all(np.abs(lt.ramp_loss(f, y) - lt.ramp_loss(g, y)) <= np.abs(f - g) + 1e-15)  # 1-Lipschitz
    assert lt.ramp_loss(np.ones((2, 1)), np.zeros(3)).shape == (2, 3)  # broadcasts
    assert lt.ramp_loss(1e308, -1e308) == 1.0                          # overflow: capped, no NaN


def test_ramp_loss_validation():
    with pytest.raises(ValueError, match="f"):
        lt.ramp_loss([np.nan], [0.0])
    with pytest.raises(ValueError, match="broadcast"):
        lt.ramp_loss(np.zeros(2), np.zeros(3))
    with pytest.raises(TypeError):
        lt.ramp_loss("a", 0.0)


# ----------------------------------------------------------------- Cor. 6.2

@pytest.mark.parametrize("n, d", [(5, 20), (30, 10), (200, 5), (400, 3)])
def test_cor62_holds_with_the_sharp_constant_two(n, d):
    rng = np.random.default_rng([n, d])
    for _ in range(5):
        X = _sphere(rng, n, d)
        ts, tt = rng.standard_normal((2, d))
        q = lt.cor62_term(X, ts, tt)
        assert q == pytest.approx(math.sqrt(_quad(X, X @ (tt - ts))), rel=1e-7)
        dist = np.linalg.norm(tt - ts)
        assert q <= 2 * dist * (1 + 1e-9) <= lt.COR62_CONSTANT * dist   # Cor. 6.2, and sharper


def test_gram_dominates_a_quarter_of_the_linear_kernel():
    # the reason for the constant 2: H^inf - X X^T / 4 is positive semidefinite
    rng = np.random.default_rng(1)
    for n, d in [(10, 3), (50, 5), (40, 40)]:
        X = _sphere(rng, n, d)
        assert np.linalg.eigvalsh(_gram(X) - X @ X.T / 4)[0] >= -1e-12


def test_cor62_term_approaches_two_distances_as_the_inputs_fill_the_sphere():
    rng = np.random.default_rng(2)
    d = 3
    ts, tt = rng.standard_normal((2, d))
    dist = np.linalg.norm(tt - ts)
    X = _sphere(rng, 800, d)
    ratios = [lt.cor62_term(X[:n], ts, tt) / dist for n in (10, 100, 800)]
    assert ratios[0] < ratios[1] < ratios[2] <= 2     # nested inputs: non-decreasing
    assert ratios[2] > 1.97                           # the kernel norm of a linear function is 2 ||.||


def test_cor62_term_validation():
    X = _sphere(np.random.default_rng(3), 4, 3)
    with pytest.raises(ValueError, match="unit norm"):
        lt.cor62_term(2 * X, np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="theta_t"):
        lt.cor62_term(X, np.zeros(3), np.ones(4))
    with pytest.raises(ValueError, match="theta_s"):
        lt.cor62_term(X, np.full(3, 1e200), np.ones(3))


# ----------------------------------------------------------------- Thm 6.1 and Cor. 6.3

def test_thm61_leading_term_is_twice_the_root_of_the_quadratic_form_over_n():
    rng = np.random.default_rng(4)
    n, d = 20, 6
    X = _sphere(rng, n, d)
    y, f0 = rng.uniform(-1, 1, (2, n))
    lead = lt.thm61_leading_term(X, y, f0)
    assert lead == pytest.approx(2 * math.sqrt(_quad(X, y - f0) / n), rel=1e-9)
    assert lt.thm61_leading_term(X, y, y) == 0.0                  # nothing left to learn
    assert lt.thm61_leading_term(X, 3 * y, 3 * f0) == pytest.approx(3 * lead, rel=1e-12)


def test_cor63_is_thm61_with_cor62_under_perfect_pretraining():
    rng = np.random.default_rng(5)
    for n, d in [(10, 4), (60, 8)]:
        X = _sphere(rng, n, d)
        ts, tt = rng.standard_normal((2, d))
        lead = lt.thm61_leading_term(X, X @ tt, X @ ts)             # f(X, Theta(0)) = X theta_S
        dist = np.linalg.norm(tt - ts)
        assert lead == pytest.approx(2 * lt.cor62_term(X, ts, tt) / math.sqrt(n), rel=1e-12)
        assert lead <= lt.cor63_leading_term(dist, n)
    np.testing.assert_allclose(lt.cor63_leading_term([0.0, 1.0, 2.0], [[1], [4]]),
                               [[0, 6, 12], [0, 3, 6]])


def test_thm61_leading_term_validation():
    X = _sphere(np.random.default_rng(6), 4, 3)
    with pytest.raises(ValueError, match="f0"):
        lt.thm61_leading_term(X, np.zeros(4), np.zeros(5))
    with pytest.raises(ValueError, match="y"):
        lt.thm61_leading_term(X, np.zeros((4, 2)), np.zeros(4))
    with pytest.raises(ValueError, match="X"):
        lt.thm61_leading_term(X[None], np.zeros(4), np.zeros(4))
    with pytest.raises(ValueError, match="positive definite|singular"):
        lt.thm61_leading_term(np.vstack([X, X[:1]]), np.zeros(5), np.ones(5))
    with pytest.raises(ValueError, match="distance"):
        lt.cor63_leading_term(-1.0, 4)
    with pytest.raises(ValueError, match="n must be an integer"):
        lt.cor63_leading_term(1.0, 2.5)


def test_thm61_remainder():
    assert lt.thm61_remainder(100, 0.05, 0.01) == pytest.approx(
        math.sqrt(math.log(100 / (0.05 * 0.01)) / 100))
    r = lt.thm61_remainder(np.array([10, 100, 1000, 10_000]), 0.05, 0.01)
    assert np.all(np.diff(r) < 0)                      # vanishes like sqrt(log n / n)
    assert np.isfinite(lt.thm61_remainder(2**53, 5e-324, 5e-324))
    with pytest.raises(ValueError, match="lam0"):
        lt.thm61_remainder(10, 0.6, 0.1)               # lambda_0 <= 1/2 for unit inputs
    with pytest.raises(ValueError, match="delta"):
        lt.thm61_remainder(10, 0.1, 1.0)
    with pytest.raises(ValueError, match="n"):
        lt.thm61_remainder(0, 0.1, 0.1)
