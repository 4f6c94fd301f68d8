"""Tests for :mod:`transferkit.stats` (Monte Carlo agreement with theory)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from transferkit import experiments, theory
from transferkit import stats as tkstats

# ---------------------------------------------------------------------------
# critical_value
# ---------------------------------------------------------------------------


def test_critical_value_known_table_values():
    # two-sided 5%, 10 degrees of freedom: the textbook t_{10, 0.975} = 2.228
    assert tkstats.critical_value(1, 11, fwer=0.05) == pytest.approx(2.228138852, abs=1e-8)
    # Bonferroni over 5 tests at 5%: t_{10}^{-1}(1 - 0.005) = 3.169
    assert tkstats.critical_value(5, 11, fwer=0.05) == pytest.approx(3.169272673, abs=1e-8)
    # many draws: the normal quantile z_{0.995} = 2.5758
    assert tkstats.critical_value(1, 10 ** 7, fwer=0.01) == pytest.approx(2.575829, abs=1e-4)
    # known standard deviation (draws=None): normal quantiles z_{0.995} and z_{1-0.01/8}
    assert tkstats.critical_value(1, None, fwer=0.01) == pytest.approx(2.5758293035, abs=1e-9)
    assert tkstats.critical_value(4, None, fwer=0.01) == pytest.approx(stats.norm.isf(0.01 / 8),
                                                                  rel=1e-12)
    assert tkstats.critical_value(4, None) < tkstats.critical_value(4, 1000) < tkstats.critical_value(4, 10)


@pytest.mark.parametrize("k, m, fwer", [(1, 2, 0.01), (3, 40, 0.01), (60, 25, 0.05), (7, 500, 0.2)])
def test_critical_value_against_scipy(k, m, fwer):
    expected = stats.t.isf(fwer / (2 * k), df=m - 1)
    assert tkstats.critical_value(k, m, fwer) == pytest.approx(expected, rel=1e-12)
    # its meaning: the two-sided tail probability of t_{m-1} beyond it is fwer / k
    assert 2 * stats.t.sf(tkstats.critical_value(k, m, fwer), df=m - 1) == pytest.approx(fwer / k,
                                                                                     rel=1e-9)


def test_critical_value_monotone():
    by_tests = [tkstats.critical_value(k, 30) for k in (1, 2, 5, 10, 100, 1000)]
    assert np.all(np.diff(by_tests) > 0)
    by_draws = [tkstats.critical_value(4, m) for m in (2, 3, 5, 10, 100, 1000)]
    assert np.all(np.diff(by_draws) < 0)
    by_fwer = [tkstats.critical_value(4, 20, f) for f in (0.001, 0.01, 0.1, 0.5)]
    assert np.all(np.diff(by_fwer) < 0)
    by_tests_normal = [tkstats.critical_value(k, None) for k in (1, 3, 30, 300)]
    assert np.all(np.diff(by_tests_normal) > 0)


@pytest.mark.parametrize("args, name", [
    ((0, 10), "n_tests"), ((2.5, 10), "n_tests"), ((-1, 10), "n_tests"),
    ((1, 1), "draws"), ((1, 0), "draws"), ((1, 5.5), "draws"),
    ((1, 10, 0.0), "fwer"), ((1, 10, 1.0), "fwer"), ((1, 10, float("nan")), "fwer"),
    ((1, 10, -0.1), "fwer"), ((1, None, 0.0), "fwer"), ((0, None), "n_tests"),
])
def test_critical_value_rejects_bad_inputs(args, name):
    with pytest.raises(ValueError, match=name):
        tkstats.critical_value(*args)


def test_critical_value_rejects_infinite_n_tests_with_value_error():
    with pytest.raises(ValueError, match="n_tests"):
        tkstats.critical_value(float("inf"), 10)


# ---------------------------------------------------------------------------
# agreement
# ---------------------------------------------------------------------------


def _normal_draws(seed, mu, sd, m):
    rng = np.random.default_rng(seed)
    mu = np.asarray(mu, float)
    return mu[..., None] + sd * rng.standard_normal(mu.shape + (m,))


def test_agreement_statistics_are_the_textbook_ones():
    mu = np.array([[0.0, 1.0, -2.0], [5.0, 0.5, 3.0]])
    m = 50
    x = _normal_draws(0, mu, 0.7, m)
    theory = mu + 0.01
    a = tkstats.agreement(x, theory)
    mean = x.sum(-1) / m
    sd = np.sqrt(((x - mean[..., None]) ** 2).sum(-1) / (m - 1))
    np.testing.assert_allclose(a.mean, mean, rtol=1e-12)
    np.testing.assert_allclose(a.std, sd, rtol=1e-12)
    np.testing.assert_allclose(a.se, sd / np.sqrt(m), rtol=1e-12)
    np.testing.assert_allclose(a.z, (mean - theory) / (sd / np.sqrt(m)), rtol=1e-10)
    assert a.n_compared == 6 and a.mask.all()
    assert a.critical == pytest.approx(stats.t.ppf(1 - 0.01 / 12, m - 1), rel=1e-12)
    assert a.worst == pytest.approx(np.abs(a.z).max())


def test_agreement_compares_draws_of_order_1e200():
    # risks under huge label noise: the squared deviations overflowed, the cells were left
    # out as if their error were infinite; scaled by a power of two, every statistic is the
    # same up to that power (z exactly)
    mu = np.array([[0.0, 1.0, -2.0], [5.0, 0.5, 3.0]])
    x = _normal_draws(0, mu, 0.7, 50)
    a, big = tkstats.agreement(x, mu), tkstats.agreement(x * 2.0 ** 660, mu * 2.0 ** 660)
    assert big.mask.all()
    np.testing.assert_array_equal(big.z, a.z)
    np.testing.assert_array_equal(big.std, a.std * 2.0 ** 660)
    np.testing.assert_array_equal(big.mean, a.mean * 2.0 ** 660)


def test_agreement_accepts_true_mean_and_rejects_shifted_mean():
    mu = np.linspace(-1.0, 2.0, 12).reshape(3, 4)
    m, sd = 400, 1.3
    x = _normal_draws(7, mu, sd, m)
    good = tkstats.agreement(x, mu)
    assert good.ok and "agree" in good.summary("x")
    # z of the true mean are standard-normal-ish: none beyond the Bonferroni bound
    assert good.worst < good.critical
    # shift one cell by 8 (estimated) standard errors
    shifted = mu.copy()
    shifted[1, 2] += 8 * np.std(x[1, 2], ddof=1) / np.sqrt(m)
    bad = tkstats.agreement(x, shifted)
    assert not bad.ok and "DISAGREE" in bad.summary()
    assert np.unravel_index(np.argmax(np.abs(bad.z)), bad.z.shape) == (1, 2)
    assert bad.z[1, 2] == pytest.approx(good.z[1, 2] - 8, abs=1e-9)


def test_agreement_coverage_rate_under_the_null():
    # z of 400 independent cells at the true mean follow t_{m-1}: about 5% of them
    # lie beyond its two-sided 5% point (binomial sd ~1.1%)
    k, m = 400, 30
    x = _normal_draws(3, np.zeros(k), 1.0, m)
    a = tkstats.agreement(x, 0.0)
    frac = np.mean(np.abs(a.z) > stats.t.ppf(0.975, m - 1))
    assert 0.02 < frac < 0.09
    assert a.ok


def test_agreement_excludes_infinite_theory_and_masked_cells():
    x = _normal_draws(1, [1.0, 2.0, 3.0, 4.0], 0.5, 20)
    theory = np.array([1.0, np.inf, 100.0, np.nan])
    a = tkstats.agreement(x, theory)
    assert a.mask.tolist() == [True, False, True, False]
    assert a.n_compared == 2 and a.z[1] == 0 and a.z[3] == 0
    assert a.critical == pytest.approx(tkstats.critical_value(2, 20))
    assert not a.ok                                        # cell 2 is far off
    b = tkstats.agreement(x, theory, mask=np.array([True, True, False, True]))
    assert b.mask.tolist() == [True, False, False, False]   # inf/nan still excluded
    assert b.n_compared == 1 and b.ok
    assert b.critical == pytest.approx(tkstats.critical_value(1, 20))
    # nothing compared: trivially fine
    c = tkstats.agreement(x, np.full(4, np.inf))
    assert c.n_compared == 0 and c.worst == 0.0 and c.ok


def test_agreement_zero_variance_cells():
    x = np.array([[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]])
    a = tkstats.agreement(x, np.array([2.0, 2.5]))
    assert a.z[0] == 0 and np.isinf(a.z[1]) and not a.ok
    assert tkstats.agreement(x, 2.0).ok


def test_agreement_broadcasts_scalar_theory():
    x = _normal_draws(2, np.zeros((2, 3)), 1.0, 10)
    a = tkstats.agreement(x, 0.0)
    assert a.theory.shape == (2, 3) and a.n_compared == 6


@pytest.mark.parametrize("draws", [np.array(1.0), np.ones((3, 1)), np.ones(1)])
def test_agreement_rejects_too_few_draws(draws):
    with pytest.raises(ValueError, match="draws"):
        tkstats.agreement(draws, 1.0)


def test_agreement_with_known_std_uses_it_and_the_normal_quantile():
    mu = np.array([0.0, 1.0, 2.0])
    m, sd = 25, 2.0
    x = _normal_draws(5, mu, sd, m)
    a = tkstats.agreement(x, mu, std=sd)
    np.testing.assert_allclose(a.se, sd / np.sqrt(m))
    np.testing.assert_allclose(a.z, (x.mean(-1) - mu) / (sd / np.sqrt(m)), rtol=1e-12)
    assert a.critical == pytest.approx(stats.norm.isf(0.01 / 6), rel=1e-12)
    assert a.ok
    # the true sd is used even where the sample sd is far off
    b = tkstats.agreement(np.array([[1.0, 1.0, 1.0, 1.0]]), 0.0, std=4.0)
    assert b.se[0] == pytest.approx(2.0) and b.z[0] == pytest.approx(0.5) and b.ok


def test_agreement_atol_widens_by_exactly_the_allowed_optimisation_error():
    m = 100
    x = _normal_draws(9, [0.0, 0.0], 1.0, m)
    se = x.std(-1, ddof=1) / np.sqrt(m)
    crit = tkstats.critical_value(2, m)
    # theory placed just outside the MC tolerance in cell 0
    theory = x.mean(-1) + np.array([crit * se[0] + 0.05, 0.0])
    assert not tkstats.agreement(x, theory).ok
    a = tkstats.agreement(x, theory, atol=np.array([0.06, 0.0]))
    assert a.ok and a.excess[0] == pytest.approx((crit * se[0] + 0.05) / (crit * se[0] + 0.06))
    b = tkstats.agreement(x, theory, atol=0.04)
    assert not b.ok and b.disagree.tolist() == [True, False]
    assert b.excess[0] == pytest.approx((crit * se[0] + 0.05) / (crit * se[0] + 0.04))
    for bad in (-0.1, np.nan, np.inf):
        with pytest.raises(ValueError, match="atol"):
            tkstats.agreement(x, theory, atol=bad)


def test_risk_error_bound_holds_and_is_attained():
    rng = np.random.default_rng(0)
    for _ in range(200):
        d = 5
        bt, bstar = rng.standard_normal(d), rng.standard_normal(d)
        bhat = bstar + rng.uniform(0, 2) * rng.standard_normal(d)
        R, Rstar = np.sum((bhat - bt) ** 2), np.sum((bstar - bt) ** 2)
        delta = np.linalg.norm(bhat - bstar)
        assert abs(R - Rstar) <= tkstats.risk_error_bound(R, delta) * (1 + 1e-12)
    # attained when bhat - bstar points away from beta_t: R = (r + delta)^2, R* = r^2
    # |R - R*| = delta (2 r + delta) <= delta (2 sqrt(R) + delta)
    np.testing.assert_allclose(tkstats.risk_error_bound(np.array([0.0, 4.0]), np.array([0.5, 0.0])),
                               [0.25, 0.0])
    with pytest.raises(ValueError):
        tkstats.risk_error_bound(-1.0, 0.1)
    with pytest.raises(ValueError):
        tkstats.risk_error_bound(1.0, -0.1)


def _synthetic_result(shift_linear=0.0, seed=0):
    """A simulate_grid-like result whose draws have the theoretical means."""

    d, sigma, m = 60, 0.5, 400
    ns, thetas = np.array([30, 90]), np.array([0.5, 1.0])
    rng = np.random.default_rng(seed)
    sc_mean = theory.deep_linear.scratch_risk_finite(ns, d, sigma)
    lt_mean = theory.deep_linear.linear_transfer_risk(ns[:, None], thetas[None, :], sigma)
    lt_std = theory.deep_linear.linear_transfer_risk_std(ns[:, None], thetas[None, :], sigma)
    scratch = sc_mean[:, None, None] + 0.05 * rng.standard_normal((2, 1, m)) + np.zeros((2, 2, m))
    linear = lt_mean[..., None] + lt_std[..., None] * rng.standard_normal((2, 2, m))
    linear = linear + shift_linear
    return experiments.deep_linear.GridResult.from_flat(
        {"scratch": scratch, "linear": linear, "scratch_minnorm_dist": np.zeros((2, m))},
        gammas=ns / d, thetas=thetas, n=ns, d=d, sigma=sigma, depth=2, draws=m, seed=seed, alpha=1e-5)


def test_linear_transfer_checks_on_synthetic_results():
    good = experiments.linear_transfer.linear_transfer_checks(_synthetic_result())
    assert all(a.ok for _, a in good.items()), {k: a.summary(k) for k, a in good.items()}
    assert good.scratch.n_compared == 2 and good.linear_transfer.n_compared == 4
    assert good.scratch.mean.shape == (2, 1) and good.transferability.mean.shape == (2, 2)
    # the exact std of linear transfer is used: normal critical value
    assert good.linear_transfer.critical == pytest.approx(tkstats.critical_value(4, None))
    bad = experiments.linear_transfer.linear_transfer_checks(_synthetic_result(shift_linear=0.05))
    assert bad.scratch.ok
    assert not bad.linear_transfer.ok and not bad.transferability.ok


def test_transferability_draws():
    grid = {"gammas": np.array([0.5]), "thetas": np.array([1.0]), "n": np.array([5]), "d": 10,
            "sigma": 0.1, "depth": 2, "draws": 2, "seed": 0, "alpha": 1e-5}
    flat = {"scratch": np.array([[[3.0, 2.0]]]), "linear": np.array([[[1.0, 2.5]]]),
            "finetune": np.array([[[0.5, 0.5]]])}
    r = experiments.deep_linear.GridResult.from_flat(flat, **grid)
    np.testing.assert_array_equal(experiments.linear_transfer.transferability_draws(r), [[[2.0, -0.5]]])
    np.testing.assert_array_equal(experiments.linear_transfer.transferability_draws(r, "finetune"), [[[2.5, 1.5]]])
    with pytest.raises(ValueError, match="scratch"):
        experiments.linear_transfer.transferability_draws(
            experiments.deep_linear.GridResult.from_flat({"linear": flat["linear"]}, **grid))
    with pytest.raises(ValueError):
        experiments.linear_transfer.transferability_draws(
            experiments.deep_linear.GridResult.from_flat({"scratch": flat["scratch"]}, **grid), "finetune")


def test_spearman_is_scipys_and_batched():
    from scipy import stats as sps

    from transferkit.stats import spearman
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((2, 3, 40))
    y[1, :10] = y[1, 0]  # ties
    for i in range(3):
        assert spearman(x[i], y[i]) == pytest.approx(sps.spearmanr(x[i], y[i]).statistic, abs=1e-12)
    assert np.allclose(spearman(x, y), [sps.spearmanr(x[i], y[i]).statistic for i in range(3)])
    assert np.isnan(spearman(np.ones(5), np.arange(5.0)))  # constant: no ranking


# ---------------------------------------------------------------------------
# input contract (issue 15): bad input is a ValueError / TypeError naming the parameter,
# never an OverflowError or a NaN
# ---------------------------------------------------------------------------

HUGE = 10 ** 400  # an int beyond the float range


@pytest.mark.parametrize("call, name", [
    (lambda: tkstats.fit_power_law([1, 2, HUGE], [1, 2, 3]), "n"),
    (lambda: tkstats.fit_power_law([1, 2, 3], [1, HUGE, 3]), "R"),
    (lambda: tkstats.fit_power_law([1, 2, 3], [1, 2, 3], [1, HUGE, 1]), "R_se"),
    (lambda: tkstats.fit_power_law("abc", [1, 2, 3]), "n"),
    (lambda: tkstats.fit_power_law([1, 2, np.nan], [1, 2, 3]), "n"),
    (lambda: tkstats.fit_power_law([1, 2, 3], [1, 2, 3], [1, -1, 1]), "R_se"),
    (lambda: tkstats.fit_power_law([1, 2, 3], [1, 2, 3], [1, 1]), "R_se"),
    (lambda: tkstats.fit_power_law([2, 2, 2], [1, 2, 3]), "n"),             # singular fit
    (lambda: tkstats.fit_power_law(np.ones((3, 3)), np.ones((3, 3))), "n"),
    (lambda: tkstats.fit_power_law([1, 2, 3], [5e-324, 5e-324, 1], [1, 1, 1]), "R_se"),
    (lambda: tkstats.rank_correlation([1, 2, HUGE], [1, 2, 3]), "x"),
    (lambda: tkstats.rank_correlation([1, 2, 3], [0, 0, 0]), "constant"),
    (lambda: tkstats.rank_correlation([1, 2, 3], [3, 1, 2], n_boot=10 ** 30), "n_boot"),
    (lambda: tkstats.score([1, 2, 3], [3, 1, 2], n_boot=2 ** 62), "n_boot"),
    (lambda: tkstats.score([1, 2, 3], [3, 1, 2], n_boot=1e308), "n_boot"),
    (lambda: tkstats.critical_value(HUGE, 10), "n_tests"),
    (lambda: tkstats.critical_value(3, 10 ** 30), "draws"),
    (lambda: tkstats.critical_value(3, 10, "a"), "fwer"),
    (lambda: tkstats.critical_value(3, 10, np.array([0.1, 0.2])), "fwer"),
    (lambda: tkstats.agreement(np.ones((2, 3)), 1.0, fwer=None), "fwer"),
    (lambda: tkstats.agreement(np.ones((2, 3)), 1.0, std=-1.0), "std"),
    (lambda: tkstats.ensd(np.ones((2, 3, 2)), np.ones((3, 3, 2))), "X and Y"),
    (lambda: tkstats.pow2_normalise(np.ones(3), axis=1), "axis"),
    (lambda: tkstats.r_squared(np.arange(3.0), np.arange(3.0) ** 2, axis=True), "axis"),
    (lambda: tkstats.table_r2(np.ones((2, 2, 3)), [np.ones(3)]), "measures"),
    (lambda: tkstats.table_r2(np.ones((2, 2, 3)), {"m": [1, 2, HUGE]}), "measures\\['m'\\]"),
    (lambda: tkstats.table_r2(np.ones((2, 2, 3)), {"m": np.ones(4)}), "measures\\['m'\\]"),
    (lambda: tkstats.score_table({"a": [1, 2, 3]}, None), "outcomes"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises((ValueError, TypeError), match=name) as info:
        call()
    assert not isinstance(info.value, OverflowError)


def test_fit_power_law_unchanged_and_overflow_is_inf():
    n = np.array([10.0, 20.0, 40.0, 80.0])
    R = 3.0 * n ** -0.7 * np.array([1.0, 1.01, 0.99, 1.0])
    A, nu, se_a, se_nu = tkstats.fit_power_law(n, R)
    assert A == pytest.approx(3.0, rel=0.05) and nu == pytest.approx(0.7, rel=0.05)
    assert se_a > 0 and se_nu > 0
    # integers and a list give the same numbers, bit for bit
    assert tkstats.fit_power_law([10, 20, 40, 80], list(R)) == (A, nu, se_a, se_nu)
    # exact error bars: the delta-method weights; zero error bars are allowed
    assert all(np.isfinite(tkstats.fit_power_law(n, R, 0.01 * R)))
    assert all(np.isfinite(tkstats.fit_power_law(n, R, np.zeros(4))))
    # a prefactor beyond the float range is inf, never NaN
    out = tkstats.fit_power_law([1e296, 1e298, 1e300], [1e302, 1e301, 1e300])
    assert out[0] == np.inf and out[1] == pytest.approx(0.5) and not np.isnan(out).any()


def test_rank_correlation_drops_constant_resamples_instead_of_nan():
    """Few distinct values: some bootstrap resamples are constant (no rho); the interval
    comes from the others, as in score, never NaN."""
    rho, lo, hi = tkstats.rank_correlation([0.0, 0.0, 1.0, 0.0], [1.0, 2.0, 3.0, 4.0], n_boot=50)
    assert np.isfinite([rho, lo, hi]).all() and -1 <= lo <= hi <= 1
    # and where no resample is constant the numbers are scipy's bootstrap, unchanged
    x, y = np.arange(10.0), np.array([0.0, 2, 1, 3, 5, 4, 6, 8, 7, 9])
    assert tkstats.rank_correlation(x, y, n_boot=100, seed=1)[0] == pytest.approx(
        stats.spearmanr(x, y).statistic)


def test_score_every_resample_constant_is_a_value_error():
    """x = [0, 0, 1], 10 resamples: with seed 6581 every resample of x is constant, so no
    resample has a correlation (the percentiles of nothing were NaN)."""
    x, y, seed = [0.0, 0.0, 1.0], [1.0, 2.0, 3.0], 6581
    idx = np.random.default_rng([seed, 8]).integers(0, 3, (10, 3))  # score's resamples
    assert all(np.ptp(np.asarray(x)[i]) == 0 for i in idx)
    with pytest.raises(ValueError, match="no bootstrap resample"):
        tkstats.score(x, y, n_boot=10, seed=seed)


@pytest.mark.parametrize("scale", [1e150, 1e-150, 1e100])
def test_representation_measures_do_not_overflow_to_nan(scale):
    """Degree-4 (participation ratio) and degree-8 (ENSD) statistics of entries near
    1e150 overflowed to inf / inf = NaN; they are scale invariant, so an exact power-of-two
    rescaling gives the answer for the unscaled representation."""
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((2, 6, 3))
    big = 2.0 ** int(np.log2(scale))
    assert tkstats.participation_ratio(X * big) == tkstats.participation_ratio(X)
    assert tkstats.ensd(X * big, Y) == tkstats.ensd(X, Y)
    assert tkstats.ensd(X * big, Y * big) == tkstats.ensd(X, Y)
    A, B = X @ X.T, Y @ Y.T
    assert tkstats.kernel_distance(A * big, B * big) == tkstats.kernel_distance(A, B)
    assert np.isfinite(tkstats.participation_ratio(X * scale))
    assert np.isfinite(tkstats.ensd(X * scale, Y))


# ---------------------------------------------------------------------------
# mean_se
# ---------------------------------------------------------------------------

def test_mean_se_is_the_textbook_mean_and_standard_error():
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, size=(4, 25))
    m, se = tkstats.mean_se(x)
    np.testing.assert_array_equal(m, x.mean(-1))
    np.testing.assert_array_equal(se, x.std(-1, ddof=1) / np.sqrt(25))
    m0, se0 = tkstats.mean_se(x.T, 0)
    np.testing.assert_allclose(m0, m, rtol=1e-15)
    np.testing.assert_allclose(se0, se, rtol=1e-14)


def test_mean_se_covers_the_true_mean_at_its_nominal_rate():
    # normal draws: |mean - mu| <= t_{0.975, 49} SE with probability exactly 0.95; 4000
    # experiments of 50 draws, tolerance four binomial standard errors
    rng = np.random.default_rng(1)
    m, se = tkstats.mean_se(rng.normal(1.0, 3.0, size=(4000, 50)))
    cover = np.mean(np.abs(m - 1.0) <= stats.t.ppf(0.975, 49) * se)
    assert abs(cover - 0.95) < 4 * np.sqrt(0.95 * 0.05 / 4000)


def test_mean_se_where_and_single():
    x = np.array([[1.0, 2.0, np.nan, 4.0], [5.0, np.nan, np.nan, np.nan], [np.nan] * 4])
    m, se = tkstats.mean_se(x, where=np.isfinite(x), single=0.0)
    np.testing.assert_allclose(m[:2], [7 / 3, 5.0])
    assert np.isnan(m[2])
    np.testing.assert_allclose(se[0], np.std([1, 2, 4], ddof=1) / np.sqrt(3))
    assert se[1] == 0.0 and se[2] == 0.0
    assert np.isnan(tkstats.mean_se([[1.0]])[1][0])              # one draw: NaN by default


@pytest.mark.parametrize("kwargs, name", [
    (dict(x=[]), "x"), (dict(x="abc"), "x"), (dict(x=[1.0, 2.0], axis=1), "axis"),
    (dict(x=[1.0, 2.0], where=[True]), "where"), (dict(x=[1.0, 2.0], where=[1, 0]), "where"),
])
def test_mean_se_rejects_bad_inputs(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name):
        tkstats.mean_se(**kwargs)


@pytest.mark.parametrize("single, exc", [(-1.0, ValueError), (True, TypeError), ("0", TypeError),
                                         (None, TypeError)])
def test_mean_se_refuses_a_bad_single(single, exc):
    with pytest.raises(exc, match="single must be a number >= 0 or nan"):
        tkstats.mean_se([1.0, 2.0], single=single)


@pytest.mark.parametrize("scale", [2.0 ** 600, 2.0 ** -600, 1e200, 1e-250])
def test_mean_se_is_finite_and_exact_at_the_ends_of_the_float_range(scale):
    # squared deviations of draws of order 1e200 overflow, of order 1e-250 underflow; the
    # power-of-two scaling gives a power of two times the mean and error of the draws
    # exactly, and any other factor within rounding
    rng = np.random.default_rng(2)
    x = rng.normal(3.0, 2.0, size=(4, 25))
    m, se = tkstats.mean_se(x)
    ms, ses = tkstats.mean_se(x * scale)
    assert np.all(np.isfinite(ms)) and np.all(np.isfinite(ses)) and np.all(ses > 0)
    if np.log2(scale).is_integer():
        np.testing.assert_array_equal(ms, m * scale)
        np.testing.assert_array_equal(ses, se * scale)
    np.testing.assert_allclose(ms / scale, m, rtol=1e-13)
    np.testing.assert_allclose(ses / scale, se, rtol=1e-13)


def test_mean_se_scaling_changes_no_bit_of_ordinary_draws():
    # the unscaled formula, as before the scaling, on draws spread over 1e-3..1e3 with a mask
    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 1.0, size=(6, 9)) * 10.0 ** rng.uniform(-3, 3, size=(6, 1))
    ok = rng.random(x.shape) < 0.8
    k = ok.sum(-1)
    mean = np.where(ok, x, 0.0).sum(-1) / np.maximum(k, 1)
    dev = np.where(ok, x - mean[:, None], 0.0)
    se = np.sqrt((dev * dev).sum(-1) / np.maximum(k - 1, 1)) / np.sqrt(np.maximum(k, 1))
    m1, se1 = tkstats.mean_se(x, where=ok)
    np.testing.assert_array_equal(m1, np.where(k > 0, mean, np.nan))
    np.testing.assert_array_equal(se1, np.where(k > 1, se, np.nan))


def test_mean_se_keeps_a_diverged_run_visible():
    m, se = tkstats.mean_se([1.0, np.inf, 2.0])
    assert m == np.inf and np.isnan(se)


# ------------------------------------------------------------------ direction_spread

def _spread_by_definition(W, a):
    """The one-cluster weighted k-means sum of squares over the total weight, directly."""
    norms = np.linalg.norm(W, axis=1)
    w = np.abs(a) * norms
    P = W / norms[:, None]
    centre = (w[:, None] * P).sum(0) / w.sum()
    return float((w * ((P - centre) ** 2).sum(1)).sum() / w.sum())


def test_direction_spread_is_the_one_cluster_inertia_per_weight():
    rng = np.random.default_rng(3)
    for _ in range(5):
        W, a = rng.standard_normal((7, 4)), rng.standard_normal(7)
        assert np.isclose(tkstats.direction_spread(W, a), _spread_by_definition(W, a), rtol=1e-12)


def test_direction_spread_zero_for_one_feature_and_scale_invariant():
    rng = np.random.default_rng(4)
    u = rng.standard_normal(5)
    W = np.outer(rng.uniform(0.1, 3, 6), u)          # every unit along u, norms differ
    a = rng.standard_normal(6)
    assert tkstats.direction_spread(W, a) < 1e-15
    W2, a2 = rng.standard_normal((6, 5)), rng.standard_normal(6)
    s = tkstats.direction_spread(W2, a2)
    for c, e in ((1e-250, 1e250), (1e280, 3.0), (2.0, 1e-290)):
        assert np.isclose(tkstats.direction_spread(c * W2, e * a2), s, rtol=1e-12)
    # two opposite units of equal weight: the mean direction is 0, the spread 1
    assert np.isclose(tkstats.direction_spread(np.array([[1.0, 0], [-2.0, 0]]), np.array([2.0, 1.0])), 1)


def test_direction_spread_batches_and_refuses():
    rng = np.random.default_rng(5)
    W, a = rng.standard_normal((2, 3, 6, 4)), rng.standard_normal((2, 3, 6))
    got = tkstats.direction_spread(W, a)
    assert got.shape == (2, 3)
    for idx in np.ndindex(2, 3):
        assert np.isclose(got[idx], _spread_by_definition(W[idx], a[idx]), rtol=1e-12)
    with pytest.raises(ValueError, match="W"):
        tkstats.direction_spread(np.ones((3, 2)), np.ones(2))
    with pytest.raises(ValueError, match="a_h"):
        tkstats.direction_spread(np.ones((3, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="W"):
        tkstats.direction_spread(np.full((3, 2), np.nan), np.ones(3))


def test_paired_test_is_the_one_sample_t_test_of_the_differences():
    rng = np.random.default_rng(4)
    diff = rng.standard_normal((3, 4, 6)) + np.array([0.0, 2.0, -3.0])[:, None, None]
    res = tkstats.paired_test(diff, n_tests=12)
    ref = stats.ttest_1samp(diff, 0.0, axis=-1)
    np.testing.assert_allclose(res.t, ref.statistic, rtol=1e-12)
    np.testing.assert_allclose(res.mean, diff.mean(-1), rtol=1e-12)
    assert np.all(res.count == 6)
    crit = tkstats.critical_value(12, 6)
    assert np.all(res.critical == crit)
    np.testing.assert_array_equal(res.sign, np.sign(res.t) * (np.abs(res.t) > crit))


def test_paired_test_where_and_too_few_draws():
    diff = np.array([[1.0, 1.1, 0.9, 50.0], [2.0, np.nan, 2.1, 1.9], [5.0, 0.0, 0.0, 0.0]])
    ok = np.array([[1, 1, 1, 0], [1, 0, 1, 1], [1, 0, 0, 0]], bool)
    res = tkstats.paired_test(diff, n_tests=3, where=ok)
    np.testing.assert_array_equal(res.count, [3, 3, 1])
    assert res.critical[2] == np.inf and res.sign[2] == 0 and np.isnan(res.t[2])
    assert res.critical[0] == tkstats.critical_value(3, 3)
    np.testing.assert_allclose(res.mean[:2], [1.0, 2.0])
    # a zero standard error is never significant (t is NaN, not inf)
    flat = tkstats.paired_test(np.ones((2, 5)), n_tests=2)
    assert np.all(np.isnan(flat.t)) and np.all(flat.sign == 0)


def test_paired_test_holds_its_family_wise_level():
    """Under the null (normal differences of mean 0), the fraction of families of K cells
    with any significant cell is at most fwer, within 3 Monte Carlo standard errors; a shift
    of 3 standard deviations at 8 draws is found in every cell."""
    rng = np.random.default_rng(5)
    K, draws, families, fwer = 10, 8, 4000, 0.1
    null = tkstats.paired_test(rng.standard_normal((families, K, draws)), K, fwer=fwer)
    alarm = np.any(null.sign != 0, axis=-1).mean()
    assert alarm <= fwer + 3 * np.sqrt(fwer * (1 - fwer) / families)
    assert alarm > 0.5 * fwer              # Bonferroni is conservative, not blind
    shifted = tkstats.paired_test(rng.standard_normal((50, K, draws)) - 3.0, K, fwer=fwer)
    assert np.all(shifted.sign == -1)


@pytest.mark.parametrize("kwargs, exc, name", [
    ({"n_tests": 0}, ValueError, "n_tests"), ({"n_tests": 2.5}, ValueError, "n_tests"), ({"n_tests": "3"}, TypeError, "n_tests"),
    ({"n_tests": 2, "fwer": 1.0}, ValueError, "fwer"),
    ({"n_tests": 2, "where": np.ones((2, 3))}, ValueError, "where")])
def test_paired_test_rejects_bad_inputs(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        tkstats.paired_test(np.zeros((2, 3)), **kwargs)
