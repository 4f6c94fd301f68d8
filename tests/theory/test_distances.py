"""Dataset distances (paper 000, Eq. 31, Fig. 4): KL against Monte Carlo, W1 on known cases."""
import math

import numpy as np
import pytest
from scipy import stats

from transferkit import experiments, theory
from transferkit import stats as tkstats


def _unit(rng, d):
    v = rng.standard_normal(d)
    return v / np.linalg.norm(v)


# ---------------------------------------------------------------------------
# KL divergence, Eq. 31
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("r,sigma", [(0.5, 0.2), (1.0, 0.5), (2.0, 1.0), (1.0, 3.0)])
def test_kl_matches_monte_carlo(r, sigma):
    rng = np.random.default_rng(1)
    bs, bt = r * _unit(rng, 20), _unit(rng, 20)
    exact = theory.distances.kl_divergence(bs, bt, sigma)
    mc, se = theory.distances.kl_monte_carlo(bs, bt, sigma, n=100_000, seed=3)
    crit = tkstats.critical_value(4, None)
    assert abs(mc - exact) <= crit * se, (exact, mc, se)


def test_kl_linear_is_eq31_in_angle_and_norms():
    rng = np.random.default_rng(0)
    u, v = _unit(rng, 30), _unit(rng, 30)
    v -= (v @ u) * u
    v /= np.linalg.norm(v)
    thetas = np.linspace(0, np.pi, 7)
    for r in (0.3, 1.0, 2.5):
        bt = np.cos(thetas)[:, None] * u + np.sin(thetas)[:, None] * v
        direct = theory.distances.kl_divergence(r * u, bt, 0.4)       # broadcasts over rows
        assert direct.shape == (7,)
        np.testing.assert_allclose(theory.distances.kl_linear(thetas, 0.4, norm_s=r), direct,
                                   rtol=1e-12, atol=1e-12)
    # unit teachers: (1 - cos theta) / sigma^2
    np.testing.assert_allclose(theory.distances.kl_linear(thetas, 0.5), (1 - np.cos(thetas)) / 0.25)


def test_kl_scale_and_sign_make_it_arbitrarily_large():
    # Thm 2.2: g = -a f is far from f in KL for large a
    f = np.array([1.0, 0.0])
    kls = [theory.distances.kl_divergence(-a * f, f, 0.2) for a in (1, 10, 100)]
    assert kls == sorted(kls) and kls[-1] > 1e5


def test_kl_zero_noise_and_bad_input():
    assert theory.distances.kl_divergence([1.0, 0.0], [1.0, 0.0], 0.0) == 0.0
    assert theory.distances.kl_divergence([1.0, 0.0], [0.0, 1.0], 0.0) == math.inf
    with pytest.raises(ValueError, match="sigma"):
        theory.distances.kl_divergence([1.0], [0.0], -1.0)
    with pytest.raises(ValueError, match="beta_s and beta_t"):
        theory.distances.kl_divergence([1.0, 0.0], [0.0], 1.0)
    with pytest.raises(ValueError, match="theta"):
        theory.distances.kl_linear(4.0, 1.0)
    with pytest.raises(ValueError, match="norm_s"):
        theory.distances.kl_linear(1.0, 1.0, norm_s=-1.0)
    with pytest.raises(ValueError, match="sigma"):
        theory.distances.kl_monte_carlo([1.0], [0.0], 0.0)


# ---------------------------------------------------------------------------
# Wasserstein-1 through POT
# ---------------------------------------------------------------------------

def test_w1_of_a_translation_is_its_length():
    # W1(mu_n, mu_n + a) = |a| exactly: the translation coupling gives <=, the
    # 1-Lipschitz test function z -> a.z/|a| gives >=
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 4))
    a = np.array([0.3, -1.2, 0.5, 2.0])
    assert theory.distances.wasserstein1(X, X + a) == pytest.approx(np.linalg.norm(a), rel=1e-9)


def test_w1_matches_scipy_in_one_dimension():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(400), 1.5 + 2 * rng.standard_normal(300)
    assert theory.distances.wasserstein1(a, b) == pytest.approx(stats.wasserstein_distance(a, b),
                                                         rel=1e-9)


@pytest.mark.parametrize("shift,scale", [(1.0, 1.0), (0.0, 2.0), (-0.7, 0.5)])
def test_w1_of_gaussians_on_quantile_grids(shift, scale):
    # 1-d: W1(N(0,1), N(m, s^2)) = E|Z(1 - s) - m|; on quantile grids the empirical
    # distance converges to it at rate O(log n / n): below 5e-3 for n = 1000
    n = 1000
    q = stats.norm.ppf((np.arange(n) + 0.5) / n)
    w = theory.distances.wasserstein1(q, shift + scale * q)
    z = (1 - scale)
    exact = (stats.norm(0, abs(z)).expect(lambda t: abs(t - shift)) if z != 0 else abs(shift))
    assert w == pytest.approx(exact, abs=5e-3)


def test_sliced_w1_is_a_lower_bound():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((200, 3))
    b = rng.standard_normal((200, 3)) * [1, 2, 0.5] + [0.5, 0, 0]
    exact = theory.distances.wasserstein1(a, b)
    sliced = theory.distances.wasserstein1(a, b, method="sliced", n_projections=200, seed=0)
    assert 0 < sliced <= exact


def test_w1_bad_input():
    with pytest.raises(ValueError, match="method"):
        theory.distances.wasserstein1([0.0, 1.0], [1.0, 2.0], method="sinkhorn")
    with pytest.raises(ValueError, match="same dimension"):
        theory.distances.wasserstein1(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="finite"):
        theory.distances.wasserstein1([0.0, np.nan], [1.0, 2.0])
    with pytest.raises(ValueError, match="seed"):
        theory.distances.wasserstein1_linear([1.0, 0.0], [0.0, 1.0], 0.1, seed=-1)


def test_gaussian_w2_closed_form():
    assert theory.distances.gaussian_w2(np.eye(3), np.eye(3)) == pytest.approx(0, abs=1e-12)
    assert theory.distances.gaussian_w2(np.diag([1.0, 4.0]), np.diag([9.0, 4.0])) == pytest.approx(2.0)


def test_reduction_to_the_span_preserves_the_bounds():
    rng = np.random.default_rng(5)
    u, v = _unit(rng, 40), _unit(rng, 40)
    Q = theory.distances.reduce_to_span(2 * u, v)
    assert Q.shape == (40, 2)
    np.testing.assert_allclose(Q.T @ Q, np.eye(2), atol=1e-12)
    assert theory.distances.reduce_to_span(u, -3 * u).shape == (40, 1)


@pytest.mark.parametrize("r,theta", [(2.0, 0.0), (0.5, 0.0), (1.0, np.pi / 2), (1.0, np.pi)])
def test_w1_estimate_lies_between_the_bounds(r, theta):
    # E W1_hat >= W1 >= lower (Jensen); above the upper bound by at most the estimator's
    # value between two samples of one law (its bias scale), within Monte Carlo error
    u = np.array([1.0, 0.0, 0.0, 0.0])
    v = np.array([0.0, 1.0, 0.0, 0.0])
    bt = np.cos(theta) * u + np.sin(theta) * v
    lo, hi = theory.distances.w1_bounds_linear(r * u, bt, 0.2)
    assert 0 <= lo <= hi
    reps = np.array([theory.distances.wasserstein1_linear(r * u, bt, 0.2, n=600, seed=[9, k])
                     for k in range(6)])
    null = np.mean([theory.distances.wasserstein1_linear(bt, bt, 0.2, n=600, seed=[8, k])
                    for k in range(6)])
    tol = tkstats.critical_value(8, 6) * reps.std(ddof=1) / math.sqrt(6)
    assert lo - tol <= reps.mean() <= hi + null + tol, (lo, hi, reps.mean(), null, tol)


def test_w1_bounds_are_tight_for_aligned_teachers():
    # theta = 0: the laws differ in the scale of y only; the y-projection and the
    # same-x coupling give nearly the same number
    lo, hi = theory.distances.w1_bounds_linear([2.0, 0.0], [1.0, 0.0], 0.2)
    assert hi - lo < 0.01 * hi


# ---------------------------------------------------------------------------
# rank correlation, pairs of tasks
# ---------------------------------------------------------------------------

def test_rank_correlation_perfect_and_null():
    x = np.arange(30.0)
    rho, lo, hi = tkstats.rank_correlation(x, np.exp(x / 10), n_boot=200)
    assert rho == pytest.approx(1) and lo == pytest.approx(1) and hi == pytest.approx(1)
    rng = np.random.default_rng(6)
    rho, lo, hi = tkstats.rank_correlation(rng.standard_normal(200), rng.standard_normal(200),
                                             n_boot=500, seed=1)
    assert lo < 0 < hi and lo <= rho <= hi
    with pytest.raises(ValueError, match="same length"):
        tkstats.rank_correlation([1, 2], [1, 2])
    with pytest.raises(ValueError, match="level"):
        tkstats.rank_correlation(x, x, level=1.5)


def test_opposite_sign_pairs():
    dist = np.array([1.0, 5.0, 3.0])
    mean = np.array([-1.0, 1.0, 1.0])
    se = np.full(3, 0.1)
    pairs = experiments.dataset_distances.opposite_sign_pairs(dist, mean, se, 3.0)
    assert {tuple(p) for p in pairs} == {(1, 0), (2, 0)}
    assert len(experiments.dataset_distances.opposite_sign_pairs(dist, mean, np.full(3, 1.0), 3.0)) == 0


@pytest.fixture(scope="module")
def pairs(one_thread):
    return experiments.dataset_distances.simulate_pairs(24, [0.5, 1.5], [0.0, np.pi / 3, np.pi / 2, np.pi],
                                    [0.5, 2.0], 0.2, draws=8, w1_samples=100, w1_repeats=2,
                                    progress=False)


def test_simulated_pairs_agree_with_theory(pairs):
    opt = tkstats.risk_error_bound(pairs.scratch[0], pairs.scratch_minnorm_dist[:, None, :])
    a = tkstats.agreement(pairs.T, pairs.T_theory, atol=opt.mean(-1))
    assert a.ok, a.summary("T")
    assert pairs.scratch_converged.all()


def test_transfer_ignores_source_norm_and_sign_but_distances_do_not(pairs):
    lin = pairs.linear
    np.testing.assert_allclose(lin[0], lin[1], rtol=0, atol=1e-8)    # norms 0.5 and 2
    np.testing.assert_allclose(lin[:, :, 0], lin[:, :, 3], rtol=0, atol=1e-8)
    kl = pairs.kl
    assert kl[1, 3] > kl[1, 0] and kl[1, 0] > kl[0, 0]


def test_simulate_pairs_same_seed_same_numbers(pairs):
    again = experiments.dataset_distances.simulate_pairs(24, [0.5, 1.5], [0.0, np.pi / 3, np.pi / 2, np.pi],
                                     [0.5, 2.0], 0.2, draws=8, w1_samples=100, w1_repeats=2,
                                     progress=False)
    for k in ("T", "w1_draws", "w1_null", "kl"):
        np.testing.assert_array_equal(getattr(again, k), getattr(pairs, k))


def test_simulate_pairs_bad_input():
    with pytest.raises(ValueError, match="norms"):
        experiments.dataset_distances.simulate_pairs(10, [0.5], [0.0], [-1.0], 0.2, draws=2)
    with pytest.raises(ValueError, match="sigma"):
        experiments.dataset_distances.simulate_pairs(10, [0.5], [0.0], [1.0], 0.0, draws=2)
