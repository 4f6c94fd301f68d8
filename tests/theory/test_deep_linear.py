"""Tests for :mod:`transferkit.theory.deep_linear` (paper 000, Sec. 3).

Three kinds of checks:

1. Monte Carlo: every closed form is compared with an independent numpy
   simulation of the estimator it describes (min-norm least squares, linear
   transfer on ``beta_s``, ridge linear transfer, fine-tuning as min-norm
   correction from ``beta_s``), asserting ``|mean - theory| <= 4 SE`` with the
   standard error estimated from the draws.  Points are chosen with
   ``|n - d| >= 30`` because the risk's variance is infinite for
   ``|n - d| <= 3`` and heavy-tailed close to it.  Asymptotic (``n, d -> oo``)
   formulas are simulated only where their finite-size correction is exactly
   zero or asserted to be well below one SE; elsewhere they are checked
   against the exact finite-size formulas in the limit.
2. Edge cases and the sign structure of Figs. 1-2.
3. Input validation.

All simulations use fixed seeds; the file runs in a few seconds.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from transferkit import theory

PI = math.pi
N_SE = 4.0  # Monte Carlo acceptance: |mean - theory| <= N_SE * standard error


# ---------------------------------------------------------------------------
# Monte Carlo harness (independent of transferkit.theory.deep_linear)
# ---------------------------------------------------------------------------


def _teachers(rng, d, theta):
    """Random unit ``beta_s`` and ``beta_t`` in R^d with ``beta_s . beta_t = cos(theta)``."""
    q, _ = np.linalg.qr(rng.standard_normal((d, 2)))
    beta_s, nu = q[:, 0], q[:, 1]
    return beta_s, math.cos(theta) * beta_s + math.sin(theta) * nu


def _se(x):
    return float(np.std(x, ddof=1) / np.sqrt(x.size))


@functools.lru_cache(maxsize=None)
def _simulate_full(n, d, theta, sigma, draws, seed, chunk=100):
    """Excess risks of scratch, fine-tuning and linear transfer on shared data.

    For Gaussian ``X`` (full rank a.s.) the min-norm solution is
    ``X^+ y = X^T (X X^T)^{-1} y`` when ``n < d`` and
    ``(X^T X)^{-1} X^T y`` when ``n > d``; ``P_row(X) = X^T (X X^T)^{-1} X``
    (``= I`` for ``n >= d``).  Fine-tuning is ``P_row X^+ y + (I - P_row) beta_s``
    and linear transfer is ``b beta_s`` with ``b = (X beta_s)^+ y``.
    """
    rng = np.random.default_rng(seed)
    beta_s, beta_t = _teachers(rng, d, theta)
    out = {"scratch": [], "finetune": [], "linear": []}
    for start in range(0, draws, chunk):
        b = min(chunk, draws - start)
        X = rng.standard_normal((b, n, d))
        y = X @ beta_t + sigma * rng.standard_normal((b, n))
        Xt = np.swapaxes(X, 1, 2)
        if n < d:
            sol = np.linalg.solve(X @ Xt, np.stack([y, X @ beta_s], axis=-1))
            beta_sc = (Xt @ sol[..., :1])[..., 0]
            p_beta_s = (Xt @ sol[..., 1:])[..., 0]
            beta_ft = beta_sc + (beta_s - p_beta_s)  # P_row X^+ y = X^+ y
        else:
            beta_sc = np.linalg.solve(Xt @ X, Xt @ y[..., None])[..., 0]
            beta_ft = beta_sc  # P_row = I
        z = X @ beta_s
        coef = np.sum(z * y, axis=1) / np.sum(z * z, axis=1)
        beta_lt = coef[:, None] * beta_s
        out["scratch"].append(np.sum((beta_sc - beta_t) ** 2, axis=1))
        out["finetune"].append(np.sum((beta_ft - beta_t) ** 2, axis=1))
        out["linear"].append(np.sum((beta_lt - beta_t) ** 2, axis=1))
    return {k: np.concatenate(v) for k, v in out.items()}


@functools.lru_cache(maxsize=None)
def _simulate_linear(n, d, theta, sigma, draws, seed, lam=0.0, chunk=100):
    """Excess risk of (ridge) linear transfer.

    ``b`` minimises ``1/(2n) ||b z - y||^2 + lam/2 b^2`` with ``z = X beta_s``,
    i.e. ``b = z.y / (z.z + n lam)``; ``lam = 0`` is ``b = z^+ y``.
    """
    rng = np.random.default_rng(seed)
    beta_s, beta_t = _teachers(rng, d, theta)
    risks = []
    for start in range(0, draws, chunk):
        b = min(chunk, draws - start)
        X = rng.standard_normal((b, n, d))
        y = X @ beta_t + sigma * rng.standard_normal((b, n))
        z = X @ beta_s
        coef = np.sum(z * y, axis=1) / (np.sum(z * z, axis=1) + n * lam)
        risks.append(np.sum((coef[:, None] * beta_s - beta_t) ** 2, axis=1))
    return np.concatenate(risks)


def _assert_mc(samples, expected, label=""):
    mean, se = float(np.mean(samples)), _se(samples)
    assert np.isfinite(expected), label
    assert abs(mean - expected) <= N_SE * se, (
        f"{label}: MC mean {mean:.5f} vs theory {expected:.5f} "
        f"({(mean - expected) / se:+.2f} SE, SE = {se:.2e})"
    )


def test_harness_min_norm_matches_pinv():
    """The Gram-matrix formulas used by the harness equal numpy's pseudo-inverse."""
    rng = np.random.default_rng(0)
    for n, d in [(7, 12), (12, 7)]:
        X = rng.standard_normal((n, d))
        y = rng.standard_normal(n)
        pinv = np.linalg.pinv(X)
        if n < d:
            ref = X.T @ np.linalg.solve(X @ X.T, y)
            np.testing.assert_allclose(pinv @ X, X.T @ np.linalg.solve(X @ X.T, X), atol=1e-10)
        else:
            ref = np.linalg.solve(X.T @ X, X.T @ y)
            np.testing.assert_allclose(pinv @ X, np.eye(d), atol=1e-10)
        np.testing.assert_allclose(pinv @ y, ref, atol=1e-10)
        np.testing.assert_allclose(np.linalg.lstsq(X, y, rcond=None)[0], ref, atol=1e-10)


# Finite-size points (n, d, theta, sigma): |n - d| >= 30 throughout.
FULL_POINTS = [
    (50, 150, PI / 6, 0.5),
    (100, 150, 1.2, 0.5),
    (120, 150, 2 * PI / 3, 0.5),
    (200, 150, PI / 3, 0.5),
    (300, 150, PI / 2, 0.5),
]
FULL_DRAWS = 400


def _full(point):
    n, d, theta, sigma = point
    return _simulate_full(n, d, theta, sigma, FULL_DRAWS, 1000 + FULL_POINTS.index(point))


# ---------------------------------------------------------------------------
# Monte Carlo: exact finite-size formulas
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("point", FULL_POINTS, ids=lambda p: f"n{p[0]}-d{p[1]}")
def test_scratch_risk_finite_monte_carlo(point):
    n, d, _, sigma = point
    _assert_mc(_full(point)["scratch"], theory.deep_linear.scratch_risk_finite(n, d, sigma), "scratch")


@pytest.mark.parametrize("point", FULL_POINTS, ids=lambda p: f"n{p[0]}-d{p[1]}")
def test_finetune_risk_finite_monte_carlo(point):
    n, d, theta, sigma = point
    _assert_mc(
        _full(point)["finetune"], theory.deep_linear.finetune_risk_finite(n, d, theta, sigma), "finetune"
    )


@pytest.mark.parametrize("point", FULL_POINTS, ids=lambda p: f"n{p[0]}-d{p[1]}")
def test_linear_transferability_finite_monte_carlo(point):
    """Paired difference R_sc - R_lt on the same training sets."""
    n, d, theta, sigma = point
    sim = _full(point)
    _assert_mc(
        sim["scratch"] - sim["linear"],
        theory.deep_linear.linear_transferability_finite(n, d, theta, sigma),
        "T_lt",
    )


@pytest.mark.parametrize("point", FULL_POINTS, ids=lambda p: f"n{p[0]}-d{p[1]}")
def test_finetune_transferability_is_exact_at_finite_size(point):
    """Eq. 15 holds exactly at gamma = n/d (the noise cancels pairwise)."""
    n, d, theta, _ = point
    sim = _full(point)
    diff = sim["scratch"] - sim["finetune"]
    expected = theory.deep_linear.finetune_transferability(n / d, theta)
    if n >= d:
        np.testing.assert_allclose(diff, 0.0, atol=1e-9)
        assert expected == 0.0
    else:
        _assert_mc(diff, expected, "T_ft")


@pytest.mark.parametrize(
    "n, theta, sigma, seed",
    [(8, PI / 3, 0.5, 11), (20, 2 * PI / 3, 0.5, 12), (60, 1.0, 0.2, 13), (12, 0.0, 0.5, 14)],
)
def test_linear_transfer_risk_monte_carlo(n, theta, sigma, seed):
    """Eq. 10 is exact at finite n (the risk has finite variance only for n >= 5;
    n >= 8 keeps the tails mild enough for a standard-error test)."""
    risks = _simulate_linear(n, 100, theta, sigma, 2000, seed)
    _assert_mc(risks, theory.deep_linear.linear_transfer_risk(n, theta, sigma), "linear transfer")


@pytest.mark.parametrize("n", [5, 8, 30, 60])
def test_linear_transfer_risk_std_against_quadrature(n):
    """Var R_lt = (s^2 + sin^2)^2 Var(chi2_1 / chi2_n), with E[chi2_n^-2] by quadrature."""
    theta, sigma = 0.7, 0.3
    inv2 = stats.chi2(n).expect(lambda r: r ** -2.0, lb=0, ub=np.inf)
    inv1 = stats.chi2(n).expect(lambda r: r ** -1.0, lb=0, ub=np.inf)
    var = (sigma**2 + math.sin(theta) ** 2) ** 2 * (3 * inv2 - inv1**2)
    assert theory.deep_linear.linear_transfer_risk_std(n, theta, sigma) == pytest.approx(math.sqrt(var), rel=1e-6)


@pytest.mark.parametrize("n, theta, sigma, seed", [(40, 1.0, 0.2, 31), (12, PI / 6, 0.5, 32)])
def test_linear_transfer_risk_std_monte_carlo(n, theta, sigma, seed):
    """The sample variance of simulated risks matches, within 4 of its own standard errors."""
    risks = _simulate_linear(n, 60, theta, sigma, 20000, seed)
    c = risks - risks.mean()
    var, m4 = np.mean(c**2), np.mean(c**4)
    se_var = math.sqrt((m4 - var**2) / risks.size)
    expected = theory.deep_linear.linear_transfer_risk_std(n, theta, sigma) ** 2
    assert abs(var - expected) <= N_SE * se_var, (var, expected, se_var)


def test_linear_transfer_risk_std_edges():
    assert theory.deep_linear.linear_transfer_risk_std(4, 1.0, 0.2) == math.inf
    assert theory.deep_linear.linear_transfer_risk_std(3, 0.0, 0.0) == 0.0
    assert isinstance(theory.deep_linear.linear_transfer_risk_std(10, 1.0, 0.2), float)


def _ridge_exact_finite_n(n, lam, theta, sigma):
    """E R for ridge linear transfer at finite n, by quadrature over ||z||^2 ~ chi2_n.

    Given r = ||z||^2, b = (cos r + sqrt(r (sin^2 + sigma^2)) xi) / (r + n lam) with
    xi ~ N(0, 1), and R = (b - cos)^2 + sin^2.
    """
    c, s2 = math.cos(theta), math.sin(theta) ** 2

    def conditional(r):
        return (c * r / (r + n * lam) - c) ** 2 + (s2 + sigma**2) * r / (r + n * lam) ** 2 + s2

    half_width = 15 * math.sqrt(2 * n)  # chi2_n has sd sqrt(2n); the rest is negligible
    lb, ub = max(0.0, n - half_width), n + half_width
    return float(stats.chi2(n).expect(conditional, lb=lb, ub=ub))


@pytest.mark.parametrize("lam, theta, seed", [(0.5, PI / 3, 21), (2.0, PI / 4, 22), (1.0, 2.5, 23)])
def test_ridge_linear_transfer_risk_monte_carlo(lam, theta, seed):
    """Eq. 13 (an n -> oo limit) at n = 40000, where the O(1/n) correction << SE."""
    n, d, sigma, draws = 40_000, 4, 0.5, 300
    risks = _simulate_linear(n, d, theta, sigma, draws, seed, lam=lam, chunk=25)
    limit = theory.deep_linear.ridge_linear_transfer_risk(lam, theta)
    # precondition: the finite-n correction is negligible at this SE
    assert abs(_ridge_exact_finite_n(n, lam, theta, sigma) - limit) < 0.5 * _se(risks)
    _assert_mc(risks, limit, "ridge linear transfer")


def test_ridge_finite_n_quadrature_converges_to_eq13():
    # the quadrature helper reproduces the exact Eq. 10 at lam = 0 ...
    for n in (10, 100, 40_000):
        assert _ridge_exact_finite_n(n, 0.0, 1.0, 0.3) == pytest.approx(
            theory.deep_linear.linear_transfer_risk(n, 1.0, 0.3), rel=1e-7
        )
    # ... and converges to Eq. 13 as n grows
    lam, theta, sigma = 0.7, 1.0, 0.3
    limit = theory.deep_linear.ridge_linear_transfer_risk(lam, theta)
    errs = [abs(_ridge_exact_finite_n(n, lam, theta, sigma) - limit) for n in (100, 1000, 10_000)]
    assert errs[0] > errs[1] > errs[2]
    assert errs[2] < 1e-3


# ---------------------------------------------------------------------------
# Monte Carlo: asymptotic formulas where the finite-size correction vanishes
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n, theta", [(75, 1.0), (40, 2.2)])
def test_asymptotic_risks_monte_carlo_noiseless(n, theta):
    """With sigma = 0 and n < d - 1 the finite-size correction to Eqs. 8 and 14 is 0."""
    d, sigma = 150, 0.0
    gamma = n / d
    assert theory.deep_linear.scratch_risk_finite(n, d, sigma) == pytest.approx(
        theory.deep_linear.scratch_risk(gamma, sigma), rel=1e-12
    )
    assert theory.deep_linear.finetune_risk_finite(n, d, theta, sigma) == pytest.approx(
        theory.deep_linear.finetune_risk(gamma, theta, sigma), rel=1e-12
    )
    sim = _simulate_full(n, d, theta, sigma, FULL_DRAWS, 31 + n)
    _assert_mc(sim["scratch"], theory.deep_linear.scratch_risk(gamma, sigma), "Eq. 8")
    _assert_mc(sim["finetune"], theory.deep_linear.finetune_risk(gamma, theta, sigma), "Eq. 14")


@pytest.mark.parametrize("gamma", [0.25, 0.5, 0.8, 1.5, 2.0, 4.0])
@pytest.mark.parametrize("theta, sigma", [(0.3, 0.5), (1.2, 0.0), (2.5, 1.5)])
def test_finite_size_formulas_converge_to_asymptotic(gamma, theta, sigma):
    pairs = [
        (lambda n, d: theory.deep_linear.scratch_risk_finite(n, d, sigma), theory.deep_linear.scratch_risk(gamma, sigma)),
        (
            lambda n, d: theory.deep_linear.finetune_risk_finite(n, d, theta, sigma),
            theory.deep_linear.finetune_risk(gamma, theta, sigma),
        ),
        (
            lambda n, d: theory.deep_linear.linear_transferability_finite(n, d, theta, sigma),
            theory.deep_linear.linear_transferability(gamma, theta, sigma),
        ),
        (lambda n, d: theory.deep_linear.linear_transfer_risk(n, theta, sigma), math.sin(theta) ** 2),
    ]
    for finite, limit in pairs:
        errs = [abs(finite(round(gamma * d), d) - limit) for d in (1_000, 10_000, 100_000)]
        if errs[0] < 1e-12:  # no finite-size correction (e.g. sigma = 0 scratch risk)
            assert max(errs) < 1e-12
            continue
        assert errs[2] < 2e-3
        assert errs[2] < 0.2 * errs[1] and errs[1] < 0.2 * errs[0]  # O(1/d) convergence


# ---------------------------------------------------------------------------
# sensitivity: the harness rejects plausible wrong formulas
# ---------------------------------------------------------------------------


def _reject(samples, wrong):
    return abs(float(np.mean(samples)) - wrong) > N_SE * _se(samples)


def test_monte_carlo_rejects_wrong_formulas():
    # Eq. 10 with 1/n instead of the exact 1/(n - 2)
    n, theta, sigma = 8, PI / 3, 0.5
    lt = _simulate_linear(n, 100, theta, sigma, 2000, 11)
    assert _reject(lt, math.sin(theta) ** 2 + (sigma**2 + math.sin(theta) ** 2) / n)
    # Eq. 14 with (1 - cos) instead of (1 - 2 cos)
    point = FULL_POINTS[1]
    n, d, theta, sigma = point
    wrong = theory.deep_linear.scratch_risk_finite(n, d, sigma) + (1 - n / d) * (1 - math.cos(theta))
    assert _reject(_full(point)["finetune"], wrong)
    # Eq. 13 with cos^2/(1 + lam)^2 in place of (1 + 2 lam) cos^2/(1 + lam)^2
    lam, theta = 0.5, PI / 3
    ridge = _simulate_linear(40_000, 4, theta, 0.5, 300, 21, lam=lam, chunk=25)
    assert _reject(ridge, 1 - math.cos(theta) ** 2 / (1 + lam) ** 2)


# ---------------------------------------------------------------------------
# edge cases
# ---------------------------------------------------------------------------


def test_scratch_risk_interpolation_threshold():
    assert theory.deep_linear.scratch_risk(1.0, 0.1) == math.inf
    assert theory.deep_linear.scratch_risk(1, 0.0) == 0.0
    # both one-sided limits vanish when sigma = 0
    assert theory.deep_linear.scratch_risk(1 - 1e-9, 0.0) == pytest.approx(0.0, abs=1e-8)
    assert theory.deep_linear.scratch_risk(1 + 1e-9, 0.0) == 0.0
    assert theory.deep_linear.scratch_risk(0.5, 0.0) == pytest.approx(0.5)
    assert theory.deep_linear.scratch_risk(2.0, 0.5) == pytest.approx(0.25)
    assert theory.deep_linear.scratch_risk(0.5, 0.5) == pytest.approx((0.25 + 0.125) / 0.5)


def test_scratch_risk_finite_threshold():
    for n in (99, 100, 101):
        assert theory.deep_linear.scratch_risk_finite(n, 100, 0.3) == math.inf
    assert theory.deep_linear.scratch_risk_finite(99, 100, 0.0) == pytest.approx(0.01)
    assert theory.deep_linear.scratch_risk_finite(100, 100, 0.0) == 0.0
    assert theory.deep_linear.scratch_risk_finite(101, 100, 0.0) == 0.0
    assert theory.deep_linear.scratch_risk_finite(98, 100, 0.0) == pytest.approx(0.02)
    assert theory.deep_linear.scratch_risk_finite(50, 100, 1.0) == pytest.approx(0.5 + 50 / 49)
    assert theory.deep_linear.scratch_risk_finite(200, 100, 1.0) == pytest.approx(100 / 99)


def test_linear_transfer_small_n():
    for n in (1, 2):
        assert theory.deep_linear.linear_transfer_risk(n, 0.4, 0.0) == math.inf
        assert theory.deep_linear.linear_transfer_risk(n, 0.0, 0.2) == math.inf
        # zero numerator: b = cos(theta) exactly, risk 0
        assert theory.deep_linear.linear_transfer_risk(n, 0.0, 0.0) == 0.0
        assert theory.deep_linear.linear_transfer_risk(n, PI, 0.0) == 0.0
    assert theory.deep_linear.linear_transfer_risk(3, PI / 2, 0.0) == pytest.approx(2.0)
    assert theory.deep_linear.linear_transfer_risk(12, PI / 6, 1.0) == pytest.approx(0.25 + 1.25 / 10)


def test_linear_transferability_finite_divergences():
    # only the scratch side diverges
    assert theory.deep_linear.linear_transferability_finite(100, 100, 0.5, 0.1) == math.inf
    # only the transfer side diverges
    assert theory.deep_linear.linear_transferability_finite(2, 50, 0.5, 0.1) == -math.inf
    # both diverge: undefined
    with pytest.raises(ValueError, match="undefined"):
        theory.deep_linear.linear_transferability_finite(2, 2, 0.5, 0.1)
    with pytest.raises(ValueError, match="undefined"):
        theory.deep_linear.linear_transferability_finite([10, 2], [50, 3], 0.5, 0.1)
    # noiseless, aligned: both finite
    assert theory.deep_linear.linear_transferability_finite(2, 2, 0.0, 0.0) == 0.0


def test_linear_transferability_finite_is_difference_of_risks():
    n = np.arange(3, 40)[:, None]
    d = np.array([1, 5, 17, 30, 60])[None, :]
    for theta, sigma in [(0.0, 0.0), (0.7, 0.0), (1.3, 0.4), (PI, 2.0)]:
        sc = theory.deep_linear.scratch_risk_finite(n, d, sigma)
        lt = theory.deep_linear.linear_transfer_risk(n, theta, sigma)
        T = theory.deep_linear.linear_transferability_finite(n, d, theta, sigma)
        finite = np.isfinite(sc)
        np.testing.assert_allclose(T[finite], (sc - lt)[finite], rtol=1e-12, atol=1e-12)
        assert np.all(T[~finite] == np.inf)


def test_finetune_edges():
    assert theory.deep_linear.finetune_risk(1.0, 1.0, 0.2) == math.inf
    assert theory.deep_linear.finetune_risk(1.0, 1.0, 0.0) == 0.0
    assert theory.deep_linear.finetune_risk(2.0, 1.0, 0.5) == theory.deep_linear.scratch_risk(2.0, 0.5)
    assert theory.deep_linear.finetune_risk(0.5, 0.0, 0.0) == pytest.approx(0.0, abs=1e-15)  # beta_s = beta_t
    assert theory.deep_linear.finetune_risk_finite(100, 100, 1.0, 0.2) == math.inf
    assert theory.deep_linear.finetune_risk_finite(150, 100, 1.0, 0.2) == theory.deep_linear.scratch_risk_finite(
        150, 100, 0.2
    )
    assert theory.deep_linear.finetune_transferability(1.0, 2.0) == 0.0
    assert theory.deep_linear.finetune_transferability(3.0, 2.0) == 0.0
    gammas = np.linspace(0.05, 3, 60)
    assert np.all(np.abs(theory.deep_linear.finetune_transferability(gammas, PI / 3)) < 1e-15)
    under = gammas[gammas < 1]
    assert np.all(theory.deep_linear.finetune_transferability(under, PI / 3 - 0.1) > 0)
    assert np.all(theory.deep_linear.finetune_transferability(under, PI / 3 + 0.1) < 0)
    # Eq. 15 is Eq. 8 minus Eq. 14 wherever both are finite
    g, t, s = np.meshgrid(np.r_[0.1:0.95:0.1, 1.2, 3.0], np.linspace(0, PI, 7), [0.0, 0.4])
    np.testing.assert_allclose(
        theory.deep_linear.scratch_risk(g, s) - theory.deep_linear.finetune_risk(g, t, s),
        theory.deep_linear.finetune_transferability(g, t),
        atol=1e-12,
    )


def test_transferability_at_theta_zero():
    gammas = np.r_[np.linspace(0.05, 0.95, 19), np.linspace(1.05, 5, 19)]
    for sigma in (0.0, 0.3):
        np.testing.assert_allclose(
            theory.deep_linear.linear_transferability(gammas, 0.0, sigma), theory.deep_linear.scratch_risk(gammas, sigma)
        )
    assert np.all(theory.deep_linear.linear_transferability(gammas, 0.0, 0.3) > 0)
    np.testing.assert_allclose(
        theory.deep_linear.finetune_transferability(gammas, 0.0), np.where(gammas <= 1, 1 - gammas, 0.0)
    )


def test_fig1_sign_structure():
    """Fig. 1: sigma = 0.2; T < 0 for gamma > 1 + sigma^2/sin^2(theta), window for gamma < 1."""
    sigma = 0.2
    thetas = np.linspace(0.05, PI - 0.05, 41)
    boundary = theory.deep_linear.linear_transfer_boundary(thetas, sigma)
    np.testing.assert_allclose(boundary, 1 + sigma**2 / np.sin(thetas) ** 2)
    gammas = np.linspace(1.01, 10, 400)
    T = theory.deep_linear.linear_transferability(gammas[:, None], thetas[None, :], sigma)
    clear = np.abs(gammas[:, None] - boundary[None, :]) > 1e-9
    assert np.array_equal((T < 0)[clear], (gammas[:, None] > boundary[None, :])[clear])
    # the overparameterised region has negative transfer only near theta = pi/2
    assert theory.deep_linear.negative_transfer_window(0.3, sigma) is None
    lo, hi = theory.deep_linear.negative_transfer_window(PI / 2, sigma)
    assert lo == pytest.approx(0.0, abs=1e-15) and hi == pytest.approx(1 - sigma**2)
    # anomalous positive transfer between the two regions at theta = pi/2
    assert theory.deep_linear.linear_transferability(1.02, PI / 2, sigma) > 0
    assert theory.deep_linear.linear_transfer_boundary(0.0, 0.2) == math.inf
    assert theory.deep_linear.linear_transfer_boundary(PI, 0.0) == math.inf
    assert theory.deep_linear.linear_transfer_boundary(1.0, 0.0) == 1.0


@pytest.mark.parametrize(
    "theta, sigma",
    [
        (1.2, 0.2),
        (PI / 2, 0.2),
        (1.0, 0.0),
        (1.5, 0.6),
        (PI - 1.2, 0.2),  # mirror image: Eq. 11 depends on theta only via sin^2
        (0.3, 0.2),  # theta < arccos(1 - sigma): no window
        (1.2, 1.0),  # sigma >= 1: no window
        (1.2, 1.7),
        (2.9, 0.3),
    ],
)
def test_negative_transfer_window_matches_scan(theta, sigma):
    gammas = np.linspace(1e-4, 1 - 1e-4, 20_001)
    negative = theory.deep_linear.linear_transferability(gammas, theta, sigma) < 0
    window = theory.deep_linear.negative_transfer_window(theta, sigma)
    exists = abs(math.cos(theta)) < 1 - sigma
    if window is None:
        assert not exists
        assert not negative.any()
        return
    assert exists
    lo, hi = window
    assert isinstance(lo, float) and isinstance(hi, float)
    assert 0 <= lo < hi <= 1
    inside = (gammas > lo) & (gammas < hi)
    clear = (np.abs(gammas - lo) > 1e-9) & (np.abs(gammas - hi) > 1e-9)
    assert np.array_equal(negative[clear], inside[clear])
    assert negative.any()
    # the roots of the paper's quadratic, labelled (gamma_+, gamma_-) there
    a = 1 + math.cos(theta) ** 2 - sigma**2
    disc = a * a - 4 * math.cos(theta) ** 2
    assert lo == pytest.approx((a - math.sqrt(disc)) / 2, abs=1e-12)
    assert hi == pytest.approx((a + math.sqrt(disc)) / 2, abs=1e-12)
    # T vanishes at the interior ends of the window
    for root in (lo, hi):
        if 0 < root < 1:
            assert theory.deep_linear.linear_transferability(root, theta, sigma) == pytest.approx(0, abs=1e-9)


def test_negative_transfer_window_noiseless():
    for theta in (0.4, 1.0, 1.4):
        lo, hi = theory.deep_linear.negative_transfer_window(theta, 0.0)
        assert lo == pytest.approx(math.cos(theta) ** 2)
        assert hi == pytest.approx(1.0)
    assert theory.deep_linear.negative_transfer_window(0.0, 0.0) is None


def test_ridge_risk_properties():
    lams = np.linspace(0, 20, 2001)
    for theta in (0.0, PI / 6, PI / 3, 1.4, 2.0):
        r = theory.deep_linear.ridge_linear_transfer_risk(lams, theta)
        assert r[0] == pytest.approx(math.sin(theta) ** 2, abs=1e-15)
        assert np.all(np.diff(r) > 0)
        assert np.all(r < 1)
    np.testing.assert_allclose(theory.deep_linear.ridge_linear_transfer_risk(lams, PI / 2), 1.0)
    # lam = 0 ridge is the n -> oo limit of Eq. 10
    assert theory.deep_linear.ridge_linear_transfer_risk(0, 1.0) == pytest.approx(
        theory.deep_linear.linear_transfer_risk(10**9, 1.0, 0.5), abs=1e-8
    )


# ---------------------------------------------------------------------------
# broadcasting, return types, NaN/warning freedom
# ---------------------------------------------------------------------------

# name -> (function, {param: kind}) ; kinds pick valid sample values
SIGNATURES = {
    "scratch_risk": (theory.deep_linear.scratch_risk, ["gamma", "sigma"]),
    "scratch_risk_finite": (theory.deep_linear.scratch_risk_finite, ["n", "d", "sigma"]),
    "linear_transfer_risk": (theory.deep_linear.linear_transfer_risk, ["n", "theta", "sigma"]),
    "linear_transfer_risk_std": (theory.deep_linear.linear_transfer_risk_std, ["n", "theta", "sigma"]),
    "linear_transferability": (theory.deep_linear.linear_transferability, ["gamma", "theta", "sigma"]),
    "linear_transferability_finite": (
        theory.deep_linear.linear_transferability_finite,
        ["n", "d", "theta", "sigma"],
    ),
    "linear_transfer_boundary": (theory.deep_linear.linear_transfer_boundary, ["theta", "sigma"]),
    "ridge_linear_transfer_risk": (theory.deep_linear.ridge_linear_transfer_risk, ["lam", "theta"]),
    "finetune_risk": (theory.deep_linear.finetune_risk, ["gamma", "theta", "sigma"]),
    "finetune_risk_finite": (theory.deep_linear.finetune_risk_finite, ["n", "d", "theta", "sigma"]),
    "finetune_transferability": (theory.deep_linear.finetune_transferability, ["gamma", "theta"]),
    "finetune_transferability_finite": (theory.deep_linear.finetune_transferability_finite, ["n", "d", "theta"]),
    "negative_transfer_window": (theory.deep_linear.negative_transfer_window, ["theta", "sigma"]),
}
BROADCASTING = [k for k in SIGNATURES if k != "negative_transfer_window"]

VALID = {"gamma": 0.5, "sigma": 0.3, "theta": 1.0, "lam": 0.4, "n": 40, "d": 100}
VALID_ARRAYS = {
    "gamma": [0.2, 0.5, 1.0, 1.5, 3.0],
    "sigma": [0.0, 0.3, 1.2],
    "theta": [0.0, 1.0, PI / 2, PI],
    "lam": [0.0, 0.4, 5.0],
    "n": [3, 40, 99, 100, 101, 300],
    "d": [100, 200],
}


def _valid_kwargs(name):
    return {p: VALID[p] for p in SIGNATURES[name][1]}


def test_public_api():
    assert sorted(theory.deep_linear.__all__) == sorted(SIGNATURES)


@pytest.mark.parametrize("name", list(SIGNATURES))
def test_scalar_in_float_out(name):
    func, params = SIGNATURES[name]
    out = func(**_valid_kwargs(name))
    if name == "negative_transfer_window":
        assert out is None or (type(out) is tuple and all(type(v) is float for v in out))
    else:
        assert type(out) is float
        # numpy scalars count as scalars too
        out_np = func(**{p: np.float64(v) for p, v in _valid_kwargs(name).items()})
        assert type(out_np) is float and out_np == out


@pytest.mark.parametrize("name", BROADCASTING)
def test_broadcasting(name):
    func, params = SIGNATURES[name]
    kwargs = _valid_kwargs(name)
    first, second = params[0], params[-1]
    a = np.array([VALID[first]] * 3).reshape(3, 1)
    b = np.array([VALID[second]] * 4)
    out = func(**{**kwargs, first: a, second: b})
    assert isinstance(out, np.ndarray) and out.shape == (3, 4)
    assert np.all(out == func(**kwargs))
    # a 1-element array input still gives an array
    out1 = func(**{**kwargs, first: [VALID[first]]})
    assert isinstance(out1, np.ndarray) and out1.shape == (1,)


def test_broadcast_values_match_elementwise():
    g = np.array([0.3, 1.0, 2.0])[:, None]
    s = np.array([0.0, 0.5])[None, :]
    out = theory.deep_linear.scratch_risk(g, s)
    for i in range(3):
        for j in range(2):
            assert out[i, j] == theory.deep_linear.scratch_risk(float(g[i, 0]), float(s[0, j]))


@pytest.mark.parametrize("name", BROADCASTING)
def test_never_nan_and_no_warnings(name):
    func, params = SIGNATURES[name]
    grids = np.meshgrid(*[np.asarray(VALID_ARRAYS[p], dtype=float) for p in params], indexing="ij")
    kwargs = dict(zip(params, grids))
    if name == "linear_transferability_finite":
        # avoid the documented inf - inf points (n <= 2 with |n - d| <= 1)
        kwargs["n"] = np.maximum(kwargs["n"], 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = func(**kwargs)
        extreme = func(**{p: VALID_ARRAYS[p][-1] * (1e300 if p in ("gamma", "sigma", "lam") else 1)
                          for p in params})
    assert not np.isnan(out).any()
    assert not np.isnan(extreme)


def test_negative_transfer_window_scalar_only():
    with pytest.raises(ValueError, match="theta"):
        theory.deep_linear.negative_transfer_window([1.0, 1.2], 0.2)
    with pytest.raises(ValueError, match="sigma"):
        theory.deep_linear.negative_transfer_window(1.0, np.array([0.2]))
    assert theory.deep_linear.negative_transfer_window(np.float64(1.2), np.array(0.2)) is not None


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------

BAD = {
    "gamma": [0, -1.0, float("nan"), float("inf"), -float("inf"), "abc", 1j, [0.5, -0.5]],
    "sigma": [-0.1, float("nan"), float("inf"), [0.1, float("nan")]],
    "lam": [-1e-3, float("nan"), float("inf")],
    "theta": [-0.1, PI + 1e-6, 4.0, float("nan"), float("inf"), [0.5, -1.0]],
    "n": [0, -3, 2.5, float("nan"), float("inf"), [10, 0]],
    "d": [0, 1.5, -2, float("nan"), float("inf")],
}
BAD_CASES = [
    pytest.param(name, param, value, id=f"{name}-{param}-{value!r}")
    for name, (_, params) in SIGNATURES.items()
    for param in params
    for value in BAD[param]
    if not (name == "negative_transfer_window" and isinstance(value, list))
]


@pytest.mark.parametrize("name, param, value", BAD_CASES)
def test_bad_input_raises(name, param, value):
    func, _ = SIGNATURES[name]
    kwargs = {**_valid_kwargs(name), param: value}
    with pytest.raises(ValueError, match=rf"^{param} must be"):
        func(**kwargs)


def test_error_message_format():
    with pytest.raises(ValueError, match=r"^gamma must be a finite number > 0 \(got -1\.0\)$"):
        theory.deep_linear.scratch_risk(-1, 0.1)
    with pytest.raises(ValueError, match=r"^theta must be in \[0, pi\] \(got nan\)$"):
        theory.deep_linear.ridge_linear_transfer_risk(0.1, float("nan"))
    with pytest.raises(ValueError, match=r"^n must be an integer in \[1, 2\*\*53\] \(got 2\.5\)$"):
        theory.deep_linear.linear_transfer_risk(2.5, 0.1, 0.1)
    # beyond 2**53 a float no longer holds every integer: refused, not silently rounded
    with pytest.raises(ValueError, match=r"^d must be an integer in \[1, 2\*\*53\]"):
        theory.deep_linear.scratch_risk_finite(10, 2**60, 0.1)


# ---------------------------------------------------------------------------
# deep fine-tuning: the Thm 5.2 rescaling (paper 001) in the setting of paper 000
# ---------------------------------------------------------------------------


def test_finetune_depth_scale_limits():
    g = np.array([0.1, 0.5, 0.9])
    # no label noise: k = 1 for every depth, and the Thm 5.2 forms reduce to Eqs. 14-15
    for L in (2, 3, 7, np.inf):
        np.testing.assert_allclose(theory.deep_linear.finetune_depth_scale(g, 0.0, L), 1.0, atol=1e-12)
        np.testing.assert_allclose(theory.deep_linear.finetune_transferability_deep(g, 1.0, 0.0, L),
                                   theory.deep_linear.finetune_transferability(g, 1.0), atol=1e-12)
        np.testing.assert_allclose(theory.deep_linear.finetune_risk_deep(g, 1.0, 0.0, L),
                                   theory.deep_linear.finetune_risk(g, 1.0, 0.0), atol=1e-12)
    # the infinite-depth limit (paper 001, Eq. 6): k^2 = ||X^+ y||^2 / ||P_par beta_s||^2
    s = 0.3
    np.testing.assert_allclose(theory.deep_linear.finetune_depth_scale(g, s, np.inf) ** 2, 1 + s ** 2 / (1 - g),
                               rtol=1e-10)
    # L = 2 in closed form: k^4 - (1 - g) k^2 - m = 0
    m = g + s ** 2 * g / (1 - g)
    k2 = ((1 - g) + np.sqrt((1 - g) ** 2 + 4 * m)) / 2
    np.testing.assert_allclose(theory.deep_linear.finetune_depth_scale(g, s, 2), np.sqrt(k2), rtol=1e-10)
    # k grows with depth and no rescaling without a null space
    ks = [theory.deep_linear.finetune_depth_scale(0.7, s, L) for L in (2, 3, 5, np.inf)]
    assert all(a < b for a, b in zip(ks, ks[1:])) and ks[0] > 1
    assert theory.deep_linear.finetune_depth_scale(1.5, s, 3) == 1.0
    assert theory.deep_linear.finetune_transferability_deep(1.5, 1.0, s, 3) == 0.0
    # the sign boundary moves below pi/3 with noise
    b = theory.deep_linear.finetune_boundary_deep(g, s, 2)
    assert (b < PI / 3).all() and np.all(np.diff(b) < 0)
    assert theory.deep_linear.finetune_boundary_deep(0.5, 0.0, 2) == pytest.approx(PI / 3, abs=1e-10)
    np.testing.assert_allclose(theory.deep_linear.finetune_transferability_deep(g, b, s, 2), 0.0, atol=1e-12)


def test_finetune_deep_finite_matches_thm_5_2_monte_carlo():
    """The finite-size Thm 5.2 form against the per-sample Thm 5.2 limit (paper 001, Eq. 5)."""
    from transferkit.theory.linear_teachers import deep_finetune_predictor

    d, n, sigma, theta, draws = 200, 140, 0.3, 1.2, 200
    rng = np.random.default_rng(52)
    out = {2: [], 4: []}
    for _ in range(draws // 20):
        X = rng.standard_normal((20, n, d))
        bs = rng.standard_normal((20, d))
        bs /= np.linalg.norm(bs, axis=1, keepdims=True)
        v = rng.standard_normal((20, d))
        v -= np.sum(v * bs, 1, keepdims=True) * bs
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        bt = math.cos(theta) * bs + math.sin(theta) * v
        y = np.einsum("bnd,bd->bn", X, bt) + sigma * rng.standard_normal((20, n))
        for L in out:
            out[L].append(((deep_finetune_predictor(X, y, bs, L) - bt) ** 2).sum(1))
    for L, r in out.items():
        r = np.concatenate(r)
        th = theory.deep_linear.finetune_risk_deep_finite(n, d, theta, sigma, L)
        se = r.std(ddof=1) / math.sqrt(r.size)
        assert abs(r.mean() - th) < N_SE * se, (L, r.mean(), th, se)
        # and it is a different number from Eq. 14 (k = 1)
        assert theory.deep_linear.finetune_risk_finite(n, d, theta, sigma) < th


def test_finetune_deep_validation():
    for bad in (1, 0, 2.5, True, "2"):
        with pytest.raises(ValueError, match="depth"):
            theory.deep_linear.finetune_depth_scale(0.5, 0.2, bad)
    with pytest.raises(ValueError, match="gamma"):
        theory.deep_linear.finetune_risk_deep(-0.5, 1.0, 0.2, 2)
    with pytest.raises(ValueError, match="theta"):
        theory.deep_linear.finetune_transferability_deep(0.5, 4.0, 0.2, 2)
    with pytest.raises(ValueError, match="sigma"):
        theory.deep_linear.finetune_depth_scale_finite(10, 20, -0.1, 2)
    assert theory.deep_linear.finetune_risk_deep(1.0, 1.0, 0.2, 2) == math.inf
    assert theory.deep_linear.finetune_risk_deep_finite(19, 20, 1.0, 0.2, 3) == math.inf
    assert theory.deep_linear.finetune_risk_deep_finite(30, 20, 1.0, 0.2, 3) == theory.deep_linear.scratch_risk_finite(30, 20, 0.2)
    assert isinstance(theory.deep_linear.finetune_risk_deep(0.5, 1.0, 0.2, 2), float)


# ---------------------------------------------------------------------------
# ridge and weight decay (paper 000, Figs. 5-6): finite-n ridge transfer, ridge and
# weight-decay risks from the Marchenko-Pastur law, optimally tuned ridge
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n, lam, theta, seed", [(12, 0.3, PI / 3, 31), (40, 0.05, PI / 2, 32),
                                                 (6, 2.0, 0.4, 33)])
def test_ridge_linear_transfer_risk_finite_monte_carlo(n, lam, theta, seed):
    risks = _simulate_linear(n, 3, theta, 0.5, 20_000, seed, lam=lam)
    exact = theory.deep_linear.ridge_linear_transfer_risk_finite(n, theta, 0.5, lam)
    assert exact == pytest.approx(_ridge_exact_finite_n(n, lam, theta, 0.5), rel=1e-8)
    _assert_mc(risks, exact, "finite-n ridge linear transfer")


def test_ridge_linear_transfer_risk_finite_limits():
    th = np.array([0.0, PI / 6, PI / 2])
    # lambda = 0 is Eq. 10 exactly (including inf at n <= 2)
    np.testing.assert_allclose(theory.deep_linear.ridge_linear_transfer_risk_finite(50, th, 0.2, 0.0),
                               theory.deep_linear.linear_transfer_risk(50, th, 0.2), rtol=0, atol=0)
    assert theory.deep_linear.ridge_linear_transfer_risk_finite(2, 1.0, 0.2, 0.0) == math.inf
    assert math.isfinite(theory.deep_linear.ridge_linear_transfer_risk_finite(2, 1.0, 0.2, 0.1))
    # large n: Eq. 13 plus O(1/n): the noise term (sin^2 + sigma^2) / (n (1 + lam)^2) and the
    # fluctuation of ||z||^2 (variance 2n) in the bias, 6 cos^2 lam^2 / (n (1 + lam)^4)
    n, lam = 100_000, np.array([0.1, 1.0, 5.0])
    gap = (theory.deep_linear.ridge_linear_transfer_risk_finite(n, PI / 3, 0.2, lam)
           - theory.deep_linear.ridge_linear_transfer_risk(lam, PI / 3))
    np.testing.assert_allclose(gap * n * (1 + lam) ** 2,
                               0.75 + 0.04 + 0.25 * 6 * lam ** 2 / (1 + lam) ** 2, rtol=1e-3)
    with pytest.raises(ValueError, match="lam"):
        theory.deep_linear.ridge_linear_transfer_risk_finite(10, 1.0, 0.2, -1.0)


def test_ridge_linear_transfer_risk_finite_is_the_quadrature_over_scipys_chi2():
    """The chi-square density is written out in the package (speed); the risk is the same
    quadrature over ``scipy.stats.chi2.pdf``, bit for bit, from n = 1 to 4000."""
    from scipy import integrate, stats

    def expect(func, n):
        lo, hi = max(0.0, n - 40 * math.sqrt(2 * n)), n + 40 * math.sqrt(2 * n) + 60
        return integrate.quad(lambda q: func(q) * stats.chi2.pdf(q, n), lo, hi, points=[n],
                              limit=200, epsabs=1e-13, epsrel=1e-11)[0]

    for n, lam, theta, sigma in [(1, 0.3, 0.4, 0.2), (7, 1e-3, PI / 3, 0.5), (30, 2.0, PI / 2, 0.0),
                                 (250, 0.05, 1.0, 1.0), (4000, 10.0, 0.2, 0.3)]:
        nl, s2, c2 = n * lam, math.sin(theta) ** 2, math.cos(theta) ** 2
        want = (s2 + c2 * expect(lambda q: (nl / (q + nl)) ** 2, n)
                + (s2 + sigma ** 2) * expect(lambda q: q / (q + nl) ** 2, n))
        assert theory.deep_linear.ridge_linear_transfer_risk_finite(n, theta, sigma, lam) == want


def _mp_expect(f, psi):
    """int f(s) dF_psi(s) for the Marchenko-Pastur law of X^T X / n (psi = d / n), by quadrature."""
    from scipy import integrate
    a, b = (1 - math.sqrt(psi)) ** 2, (1 + math.sqrt(psi)) ** 2
    dens = lambda s: math.sqrt(max((b - s) * (s - a), 0.0)) / (2 * math.pi * psi * s)
    val = integrate.quad(lambda s: f(s) * dens(s), a, b, limit=400, epsabs=1e-13)[0]
    return val + (max(0.0, 1 - 1 / psi) * f(0.0))


@pytest.mark.parametrize("gamma", [0.3, 0.8, 1.0, 1.7])
@pytest.mark.parametrize("mu", [0.02, 0.5])
def test_ridge_risk_matches_marchenko_pastur_quadrature(gamma, mu):
    psi, s2 = 1 / gamma, 0.3 ** 2
    m = _mp_expect(lambda s: 1 / (s + mu), psi)
    assert theory.deep_linear.mp_stieltjes(gamma, mu) == pytest.approx(m, rel=1e-7)
    bias = _mp_expect(lambda s: mu ** 2 / (s + mu) ** 2, psi)
    var = s2 * psi * _mp_expect(lambda s: s / (s + mu) ** 2, psi)
    assert theory.deep_linear.ridge_risk(gamma, 0.3, mu) == pytest.approx(bias + var, rel=1e-6)
    norm2 = _mp_expect(lambda s: s ** 2 / (s + mu) ** 2, psi) + var
    assert theory.deep_linear.ridge_norm2(gamma, 0.3, mu) == pytest.approx(norm2, rel=1e-6)


def _ridge_mc(n, d, sigma, mu, draws, seed, wd=None):
    """Monte Carlo ridge (or depth-2 weight-decay) risk with isotropic data, unit teacher."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(draws):
        X = rng.standard_normal((n, d))
        beta = rng.standard_normal(d)
        beta /= np.linalg.norm(beta)
        y = X @ beta + sigma * rng.standard_normal(n)
        S = X.T @ X / n
        ev, V = np.linalg.eigh(S)
        c = V.T @ X.T @ y / n
        if wd is not None:  # mu ||beta_mu|| = wd, by bisection (independent of the package)
            lo, hi = 1e-12, 1e6
            for _ in range(200):
                mid = math.sqrt(lo * hi)
                if mid * np.linalg.norm(c / (ev + mid)) > wd:
                    hi = mid
                else:
                    lo = mid
            mu = math.sqrt(lo * hi)
        b = V @ (c / (ev + mu))
        out.append(np.sum((b - beta) ** 2))
    return np.array(out)


@pytest.mark.parametrize("gamma, mu, seed", [(0.5, 0.1, 41), (1.5, 0.03, 42)])
def test_ridge_risk_monte_carlo(gamma, mu, seed):
    d = 300
    risks = _ridge_mc(int(gamma * d), d, 0.3, mu, 30, seed)
    _assert_mc(risks, theory.deep_linear.ridge_risk(gamma, 0.3, mu), "ridge")


@pytest.mark.parametrize("gamma, wd, seed", [(0.5, 0.05, 43), (1.0, 0.01, 44), (1.5, 0.1, 45)])
def test_weight_decay_scratch_risk_monte_carlo(gamma, wd, seed):
    d = 300
    risks = _ridge_mc(int(gamma * d), d, 0.2, None, 30, seed, wd=wd)
    _assert_mc(risks, theory.deep_linear.weight_decay_scratch_risk(gamma, 0.2, wd), "weight decay")
    mu = theory.deep_linear.weight_decay_ridge_parameter(gamma, 0.2, wd)
    assert mu * math.sqrt(theory.deep_linear.ridge_norm2(gamma, 0.2, mu)) == pytest.approx(wd, rel=1e-10)


def test_weight_decay_scratch_risk_edges():
    g = np.array([0.3, 0.9, 1.2])
    np.testing.assert_array_equal(theory.deep_linear.weight_decay_scratch_risk(g, 0.2, 0.0),
                                  theory.deep_linear.scratch_risk(g, 0.2))
    # beyond lim ||X^T y / n|| = sqrt(1 + psi + sigma^2 psi) the network is zero: risk 1
    assert theory.deep_linear.weight_decay_scratch_risk(1.0, 0.2, 2.0) == 1.0
    assert theory.deep_linear.weight_decay_ridge_parameter(1.0, 0.2, 2.0) == math.inf
    # finite at gamma = 1 where Eq. 8 diverges
    assert math.isfinite(theory.deep_linear.weight_decay_scratch_risk(1.0, 0.2, 1e-4))
    with pytest.raises(ValueError, match="weight_decay"):
        theory.deep_linear.weight_decay_scratch_risk(1.0, 0.2, -0.1)


@pytest.mark.parametrize("gamma", [0.2, 0.7, 1.0, 1.3, 3.0])
@pytest.mark.parametrize("sigma", [0.05, 0.2, 1.0])
def test_optimal_ridge_risk_is_the_minimum_at_sigma2_over_gamma(gamma, sigma):
    from scipy.optimize import minimize_scalar
    res = minimize_scalar(lambda l: theory.deep_linear.ridge_risk(gamma, sigma, math.exp(l)),
                          bounds=(-15, 5), method="bounded", options={"xatol": 1e-10})
    assert theory.deep_linear.optimal_ridge_risk(gamma, sigma) == pytest.approx(res.fun, rel=1e-9)
    assert math.exp(res.x) == pytest.approx(sigma ** 2 / gamma, rel=1e-3)
    assert theory.deep_linear.optimal_ridge_risk(gamma, sigma) == pytest.approx(
        theory.deep_linear.ridge_risk(gamma, sigma, sigma ** 2 / gamma), rel=1e-12)


def test_optimal_ridge_risk_limits_and_validation():
    g = np.array([0.25, 0.5, 2.0, 4.0])
    np.testing.assert_allclose(theory.deep_linear.optimal_ridge_risk(g, 0.0), np.maximum(1 - g, 0), atol=0)
    assert theory.deep_linear.optimal_ridge_risk(1e8, 0.3) == pytest.approx(0.09 / 1e8, rel=1e-6)
    assert isinstance(theory.deep_linear.optimal_ridge_risk(0.5, 0.2), float)
    for name, kw in (("gamma", dict(gamma=0.0, sigma=0.2)), ("sigma", dict(gamma=1.0, sigma=-1))):
        with pytest.raises(ValueError, match=name):
            theory.deep_linear.optimal_ridge_risk(**kw)
    with pytest.raises(ValueError, match="mu"):
        theory.deep_linear.ridge_risk(1.0, 0.2, float("nan"))


# the closed forms of Figs. 5-6 in the public API (test_public_api reads SIGNATURES at run time)
SIGNATURES.update({
    "ridge_linear_transfer_risk_finite": (theory.deep_linear.ridge_linear_transfer_risk_finite,
                                          ["n", "theta", "sigma", "lam"]),
    "mp_stieltjes": (theory.deep_linear.mp_stieltjes, ["gamma", "mu"]),
    "ridge_risk": (theory.deep_linear.ridge_risk, ["gamma", "sigma", "mu"]),
    "ridge_norm2": (theory.deep_linear.ridge_norm2, ["gamma", "sigma", "mu"]),
    "optimal_ridge_risk": (theory.deep_linear.optimal_ridge_risk, ["gamma", "sigma"]),
    "weight_decay_ridge_parameter": (theory.deep_linear.weight_decay_ridge_parameter,
                                     ["gamma", "sigma", "weight_decay"]),
    "weight_decay_scratch_risk": (theory.deep_linear.weight_decay_scratch_risk,
                                  ["gamma", "sigma", "weight_decay"]),
})


@pytest.mark.parametrize("name", ["ridge_linear_transfer_risk_finite", "mp_stieltjes", "ridge_risk",
                                  "ridge_norm2", "optimal_ridge_risk",
                                  "weight_decay_ridge_parameter", "weight_decay_scratch_risk"])
def test_regularisation_closed_forms_scalar_broadcast_and_validate(name):
    func, params = SIGNATURES[name]
    valid = {"gamma": 0.7, "sigma": 0.3, "theta": 1.0, "lam": 0.4, "n": 40, "mu": 0.2,
             "weight_decay": 0.01}
    kw = {p: valid[p] for p in params}
    out = func(**kw)
    assert type(out) is float and math.isfinite(out)
    arr = func(**{**kw, params[0]: np.array([kw[params[0]]] * 3)})
    assert isinstance(arr, np.ndarray) and arr.shape == (3,) and np.all(arr == out)
    for p in params:
        with pytest.raises(ValueError, match=p):
            func(**{**kw, p: float("nan")})
