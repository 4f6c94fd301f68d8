"""tests for transferkit.experiments.predictors: scores, the predictors' closed forms, the benchmark
on a tiny case whose ranking is known."""
import dataclasses

import numpy as np
import pytest
from _helpers import check_presets
from scipy import stats

from transferkit import experiments, theory
from transferkit import stats as tkstats
from transferkit.experiments.deep_linear import check_simulation_args, sample_size

# ------------------------------------------------------------------------------- score

def test_score_perfect_monotone_and_reversed():
    x = np.arange(10.0)
    s = tkstats.score(x, x ** 3, n_boot=200)
    assert s.rho == pytest.approx(1.0)
    assert s.rho_lo == pytest.approx(1.0) and s.rho_hi == pytest.approx(1.0)
    assert 0.7 < s.r2 < 1.0                                 # monotone but not linear
    assert tkstats.score(x, 2 * x + 1, n_boot=200).r2 == pytest.approx(1.0)
    assert tkstats.score(x, -x, n_boot=200).rho == pytest.approx(-1.0)


def test_score_is_a_frozen_dataclass():
    x = np.arange(8.0)
    s = tkstats.score(x, x ** 2 + np.sin(x), n_boot=100)
    assert isinstance(s, tkstats.Score)
    assert [f.name for f in dataclasses.fields(s)] == [
        "rho", "rho_lo", "rho_hi", "r2", "r2_lo", "r2_hi", "n", "dropped"]
    assert s.n == 8 and type(s.n) is int and type(s.dropped) is int
    assert all(type(getattr(s, k)) is float for k in ("rho", "rho_lo", "rho_hi", "r2", "r2_lo", "r2_hi"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.rho = 0.0


def test_score_matches_scipy_and_interval_covers():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(40)
    y = x + rng.standard_normal(40)
    s = tkstats.score(x, y, n_boot=500, seed=3)
    assert s.rho == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert s.r2 == pytest.approx(stats.pearsonr(x, y).statistic ** 2, abs=1e-12)
    assert s.rho_lo <= s.rho <= s.rho_hi
    assert s.r2_lo <= s.r2 <= s.r2_hi
    assert tkstats.score(x, y, n_boot=500, seed=3) == s          # same seed, same numbers


def test_score_interval_coverage_under_the_null_is_honest():
    """Independent x, y: the 90 % bootstrap interval of rho covers 0 in most of 200 trials
    (binomial: at least 80 % for a nominal 90 %, allowing the percentile method's
    known under-coverage at n = 30)."""
    rng = np.random.default_rng(5)
    cover = 0
    for t in range(200):
        x, y = rng.standard_normal((2, 30))
        s = tkstats.score(x, y, n_boot=300, level=0.9, seed=t)
        cover += s.rho_lo <= 0 <= s.rho_hi
    assert cover >= 160, cover


@pytest.mark.parametrize("kw, match", [
    (dict(x=[1, 2], y=[1, 2]), "length >= 3"),
    (dict(x=[1, 2, 3], y=[1, 2]), "same length"),
    (dict(x=[1, 2, np.nan], y=[1, 2, 3]), "finite"),
    (dict(x=[1, 1, 1], y=[1, 2, 3]), "constant"),
    (dict(x=[1, 2, 3], y=[1, 2, 3], n_boot=5), "n_boot"),
    (dict(x=[1, 2, 3], y=[1, 2, 3], level=1.0), "level"),
])
def test_score_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        tkstats.score(**kw)


def test_score_table_marks_constant_predictor():
    rows = tkstats.score_table({"a": np.arange(5.0), "b": np.ones(5)}, {"y": np.arange(5.0) ** 2},
                          n_boot=50)
    assert [r.predictor for r in rows] == ["a", "b"]
    assert all(isinstance(r, tkstats.ScoreRow) and r.outcome == "y" for r in rows)
    assert rows[0].rho == pytest.approx(1.0) and not rows[0].constant
    assert rows[1].constant and np.isnan(rows[1].rho) and rows[1].n == 5


def test_score_table_rows_are_the_scores_with_names():
    """A row of score_table holds exactly score's numbers, plus the names; frozen."""
    x, y = np.arange(6.0), np.array([0.0, 2.0, 1.0, 5.0, 3.0, 4.0])
    (row,) = tkstats.score_table({"a": x}, {"y": y}, n_boot=50, seed=2)
    s = tkstats.score(x, y, n_boot=50, seed=2)
    assert isinstance(row, tkstats.Score)
    assert {f.name: getattr(row, f.name) for f in dataclasses.fields(s)} == dataclasses.asdict(s)
    assert (row.predictor, row.outcome, row.constant) == ("a", "y", False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.constant = True


def test_score_table_names_the_bad_predictor():
    with pytest.raises(ValueError, match="predictor 'b', outcome 'y'.*finite"):
        tkstats.score_table({"a": np.arange(5.0), "b": [1.0, 2.0, np.nan, 3.0, 4.0]},
                            {"y": np.arange(5.0)}, n_boot=50)
    with pytest.raises(TypeError, match="preds"):
        tkstats.score_table([np.arange(5.0)], {"y": np.arange(5.0)})


# ----------------------------------------------------------------------- predictors

def test_feature_fraction_closed_forms():
    d = 6
    rng = np.random.default_rng(0)
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    nu = rng.standard_normal(d)
    nu -= (nu @ u) * u
    nu /= np.linalg.norm(nu)
    th = np.linspace(0, np.pi, 7)
    bt = np.cos(th)[:, None] * u + np.sin(th)[:, None] * nu
    np.testing.assert_allclose(experiments.predictors.feature_fraction(u, bt), np.sin(th) ** 2, atol=1e-12)
    # inside the span: 0; orthogonal to it: 1; the full space: 0
    assert experiments.predictors.feature_fraction(np.column_stack([u, nu]), bt).max() < 1e-12
    assert experiments.predictors.feature_fraction(np.eye(d), nu) < 1e-12
    # with a covariance: brute force over the L2(p) inner product
    A = rng.standard_normal((d, d))
    S = A @ A.T + np.eye(d)
    b = rng.standard_normal(d)
    c = (u @ S @ b) / (u @ S @ u)                           # best multiple of u . x
    r = b - c * u
    assert experiments.predictors.feature_fraction(u, b, S) == pytest.approx((r @ S @ r) / (b @ S @ b), rel=1e-10)
    with pytest.raises(ValueError, match="beta_t"):
        experiments.predictors.feature_fraction(u, np.zeros(d))


def test_isotropic_eq3_is_the_tightest_basis():
    d, n, m = 12, np.array([3.0, 30.0, 3000.0]), 2
    rng = np.random.default_rng(2)
    dv = rng.standard_normal(d)
    ours = experiments.predictors.isotropic_eq3(dv @ dv, n, d, m)
    for _ in range(20):                                      # random orthonormal bases
        V, _ = np.linalg.qr(rng.standard_normal((d, d)))
        assert np.all(ours <= theory.linear_teachers.eq3_bound(dv, V, np.ones(d), m, n) * (1 + 1e-12))
    # the basis with dv first or last attains it
    first = np.linalg.qr(np.column_stack([dv, rng.standard_normal((d, d - 1))]))[0]
    last = first[:, ::-1]
    best = np.minimum(theory.linear_teachers.eq3_bound(dv, first, np.ones(d), m, n),
                      theory.linear_teachers.eq3_bound(dv, last, np.ones(d), m, n))
    np.testing.assert_allclose(ours, best, rtol=1e-10)
    with pytest.raises(ValueError, match="m must be"):
        experiments.predictors.isotropic_eq3(1.0, 10, 4, m=4)


def test_gaussian_kl_exact_for_gaussians_and_zero_for_same_law():
    """Two Gaussian samples in p = 3 dims with k = p: the fit converges to the exact
    Gaussian KL (error ~ 1/sqrt(N)); the same law gives ~0."""
    rng = np.random.default_rng(4)
    N, p = 200_000, 3
    mu_b = np.array([0.5, 0.0, 0.0, 0.3])
    Sa = np.diag([1.0, 1.0, 1.0, 1.0])
    Sb = np.diag([2.0, 1.0, 1.0, 0.5])
    A = rng.multivariate_normal(np.zeros(4), Sa, N)
    B = rng.multivariate_normal(mu_b, Sb, N)
    exact = 0.5 * (np.trace(np.linalg.solve(Sb, Sa)) + mu_b @ np.linalg.solve(Sb, mu_b) - 4
                   + np.log(np.linalg.det(Sb) / np.linalg.det(Sa)))
    est = experiments.predictors.gaussian_kl(A, B, k=p, ridge=1e-9)
    assert est == pytest.approx(exact, abs=0.01)
    assert experiments.predictors.gaussian_kl(A, rng.multivariate_normal(np.zeros(4), Sa, N), k=p,
                          ridge=1e-9) < 1e-3
    with pytest.raises(ValueError, match="same width"):
        experiments.predictors.gaussian_kl(A, B[:, :2])


def test_ntk_discrepancy_of_a_stack_is_each_sets_own():
    """A stack of target sets: H_P^-1 y_P solved once, each value that of the set's own call
    and of Thm 1's ||y_Q - y_{P->Q}||^2 / n_Q from ``theory.ntk.similarity``, bit for bit;
    labels of the wrong shape are refused."""
    rng = np.random.default_rng(8)
    XP, yP = rng.standard_normal((30, 6)), rng.standard_normal(30)
    XQ, yQ = rng.standard_normal((4, 7, 6)), rng.standard_normal((4, 7))
    got = experiments.predictors.ntk_discrepancy(XP, yP, XQ, yQ)
    assert got.shape == (4,)
    to = experiments.predictors.to_sphere
    for b in range(4):
        one = experiments.predictors.ntk_discrepancy(XP, yP, XQ[b], yQ[b])
        assert isinstance(one, float) and got[b] == one
        assert one == theory.ntk.similarity(to(XP), yP, to(XQ[b]), yQ[b]).thm1 / 7
    with pytest.raises(ValueError, match="^yQ must have one label per target point"):
        experiments.predictors.ntk_discrepancy(XP, yP, XQ, yQ[:, :5])


def test_ntk_discrepancy_zero_when_target_is_source():
    """Target = source sample and labels: y_{P->Q} = H_P H_P^{-1} y_P = y_P exactly."""
    rng = np.random.default_rng(6)
    X = rng.standard_normal((40, 5))
    y = rng.standard_normal(40)
    assert experiments.predictors.ntk_discrepancy(X, y, X, y) < 1e-16
    assert experiments.predictors.ntk_discrepancy(X, y, X, -y) == pytest.approx(4 * (y @ y) / 40, rel=1e-9)
    with pytest.raises(ValueError, match="zero rows"):
        experiments.predictors.to_sphere(np.zeros((2, 3)))


# -------------------------------------------------- the benchmark on a tiny known case

@pytest.fixture(scope="module")
def tiny():
    """d = 20, one noise level and source norm, angles far apart, many draws: the
    transferred risk of linear transfer is sin^2(theta) + noise terms, strictly increasing
    in theta, and its Monte Carlo error is far below the gaps."""
    return experiments.predictors.synthetic_benchmark(20, [2.0], np.linspace(0, np.pi / 2, 5), [0.2], [1.0],
                                  draws=60, methods=("linear",), w1_samples=200, ntk_draws=2,
                                  progress=False)


def test_tiny_benchmark_known_ranking(tiny):
    pred = tiny.pred
    lin = tiny.linear.mean(-1)
    assert np.all(np.diff(lin) > 0), lin                    # the ranking is known
    for name in ("kl", "dist", "bartlett", "eq3", "feature"):
        s = tkstats.score(pred[name], lin, n_boot=100)
        assert s.rho == pytest.approx(1.0), name
    np.testing.assert_allclose(pred["feature"], np.sin(tiny.thetas) ** 2, atol=1e-6)
    np.testing.assert_allclose(pred["kl"], theory.distances.kl_linear(tiny.thetas, 0.2))
    assert tiny.feature_rank == 1


def test_tiny_benchmark_shapes_and_determinism(tiny):
    T = len(tiny.tasks)
    assert T == 5 and tiny.linear.shape == (5, 60) and tiny.scratch.shape == (5, 60)
    assert set(tiny.pred) == set(experiments.predictors.PREDICTORS)
    assert all(v.shape == (T,) and np.isfinite(v).all() for v in tiny.pred.values())
    again = experiments.predictors.synthetic_benchmark(20, [2.0], np.linspace(0, np.pi / 2, 5), [0.2], [1.0],
                                   draws=60, methods=("linear",), w1_samples=200, ntk_draws=2,
                                   progress=False)
    for k in tiny.pred:
        np.testing.assert_array_equal(again.pred[k], tiny.pred[k])
    np.testing.assert_array_equal(again.linear, tiny.linear)


def test_synthetic_benchmark_result_is_a_frozen_dataclass(tiny):
    assert isinstance(tiny, experiments.predictors.SyntheticBenchmarkResult)
    assert tiny.methods == ("linear",) and tiny.finetune is None
    assert tiny.risk("linear") is tiny.linear and tiny.risk("scratch") is tiny.scratch
    with pytest.raises(ValueError, match="method"):
        tiny.risk("finetune")
    assert (tiny.d, tiny.depth, tiny.draws, tiny.seed, tiny.ntk_draws) == (20, 2, 60, 0, 2)
    np.testing.assert_array_equal(tiny.n, [40])
    assert tiny.tasks.dtype.names == ("gamma", "n", "theta", "sigma", "norm")
    with pytest.raises(dataclasses.FrozenInstanceError):
        tiny.draws = 1


@pytest.mark.parametrize("kw, match", [
    (dict(gammas=[0.0]), "gammas"),
    (dict(sigmas=[-1.0]), "sigmas"),
    (dict(thetas=[4.0]), "thetas"),
    (dict(methods=("ridge",)), "methods"),
])
def test_synthetic_benchmark_bad_input(kw, match):
    args = dict(d=4, gammas=[1.5], thetas=[0.5], sigmas=[0.1], norms=[1.0], draws=2)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        experiments.predictors.synthetic_benchmark(**args)


def test_real_benchmark_on_synthetic_images():
    """The real-data pipeline on a fake ten-class data set whose classes are Gaussian blobs
    along orthogonal directions: a target identical to the source has zero distance,
    zero feature fraction, and fine-tuning from its teacher beats scratch."""
    rng = np.random.default_rng(7)
    d, per = 30, 120
    centres = np.eye(d)[:10] * 3.0
    def split(N):
        y = np.repeat(np.arange(10), N)
        x = centres[y] + 0.5 * rng.standard_normal((len(y), d))
        return x, y
    xtr, ytr = split(per)
    xte, yte = split(40)
    data = {"fake": (xtr, ytr, xte, yte)}
    pairs = [("fake", 0, 1, "fake", 0, 1), ("fake", 2, 3, "fake", 0, 1),
             ("fake", 0, 2, "fake", 0, 1), ("fake", 4, 5, "fake", 6, 7)]
    res = experiments.predictors.real_benchmark(data, pairs, ns=[5, 10], draws=4, w1_samples=100, kl_dims=5,
                            ntk_source=60, progress=False)
    assert isinstance(res, experiments.predictors.RealBenchmarkResult)
    assert res.pairs == pairs and res.ns.tolist() == [5, 10] and res.draws == 4
    assert (res.w1_samples, res.kl_dims, res.ntk_source, res.seed) == (100, 5, 60, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.draws = 1
    p = res.pred
    assert set(p) == set(experiments.predictors.PREDICTORS)
    assert p["dist"][0, 0] < 1e-20 and p["feature"][0, 0] < 1e-12
    assert p["dist"][0, 1] > 0 and p["feature"][0, 1] > 0.5
    assert res.finetune[:, 0].mean() <= res.scratch[:, 0].mean()
    assert res.finetune.shape == (2, 4, 4) and res.scratch.shape == (2, 4, 4)
    assert all(np.isfinite(v).all() for v in p.values())
    with pytest.raises(ValueError, match="each pair"):
        experiments.predictors.real_benchmark(data, [("nope", 0, 1, "fake", 2, 3)] * 3, ns=[5], draws=2)


# ------------------------------------------------------------------------------- presets

SCALES = ["paper", "smoke"]


def test_presets_are_frozen_with_tuple_grids():
    P = experiments.predictors
    for presets, cls, grids in ((P.SYNTHETIC_TASKS, P.SyntheticTasksPreset,
                                 ("thetas", "sigmas", "norms", "gammas")),
                                (P.REAL_TASKS, P.RealTasksPreset, ("ns",))):
        check_presets(presets, cls, grids, "seed")


@pytest.mark.parametrize("scale", SCALES)
def test_synthetic_preset_is_valid(scale):
    p = experiments.predictors.SYNTHETIC_TASKS[scale]
    for sigma in p.sigmas:
        check_simulation_args(p.d, sigma, p.depth, p.draws, p.alpha, p.seed)
    # what synthetic_benchmark checks, and what the chapter reads: sigma > 0 (a finite KL),
    # theta on [0, pi] with both ends, one under- and one overparameterised gamma (the chapter
    # scores fine-tuning at gamma < 1 only and checks that it equals scratch at gamma > 1)
    assert min(p.sigmas) > 0 and min(p.norms) > 0 and min(p.gammas) > 0
    assert p.thetas[0] == 0.0 and p.thetas[-1] == np.pi
    assert list(p.thetas) == sorted(p.thetas)
    assert min(p.gammas) < 1 < max(p.gammas)
    assert all(sample_size(g, p.d) > 2 for g in p.gammas)   # Eq. 10 divides by n - 2
    assert p.n_boot >= 1000                                  # 95 % percentile intervals


@pytest.mark.parametrize("scale", SCALES)
def test_real_preset_is_valid(scale):
    p = experiments.predictors.REAL_TASKS[scale]
    pairs = experiments.predictors.draw_pairs(p.per_kind, seed=p.seed)
    assert len(pairs) == 4 * p.per_kind >= p.min_pairs      # the chapter asserts the latter
    assert all(isinstance(n, int) and n >= 1 for n in p.ns) and list(p.ns) == sorted(set(p.ns))
    assert p.draws >= 1 and p.w1_samples >= 2 and p.ntk_source >= 1 and p.n_boot >= 1000


def test_paper_presets_state_the_papers_values():
    syn = experiments.predictors.SYNTHETIC_TASKS["paper"]
    # paper 000, caption of Fig. 1 and App. D.1: two layers, alpha = 1e-5, 20 draws
    assert (syn.depth, syn.alpha, syn.draws) == (2, 1e-5, 20)
    # ours, stated in the preset: d = 100 (the paper's 500 is not run), 9 angles on [0, pi]
    assert syn.d == 100
    assert np.array(syn.thetas).tobytes() == np.linspace(0, np.pi, 9).tobytes()
    real = experiments.predictors.REAL_TASKS["paper"]
    # paper 001, caption of Table 1: R^2 from 20 points, each the mean of 25 random samples;
    # the table's n run from 10 to 30
    assert (real.min_pairs, real.draws) == (20, 25)
    assert real.ns[0] == 10 and 30 in real.ns


def test_feature_fraction_refuses_mismatched_dimensions():
    """numpy's matmul message escaped before."""
    with pytest.raises(ValueError, match=r"^phi must be \(\.\.\., d, r\), beta_t \(\.\.\., d\)"):
        experiments.predictors.feature_fraction(np.ones((2, 3)), np.ones(3))
    with pytest.raises(ValueError, match=r"^phi must be \(\.\.\., d, r\)"):
        experiments.predictors.feature_fraction(np.ones((3, 1)), np.ones(3), cov=np.eye(2))
    with pytest.raises(ValueError, match=r"^beta_t must be finite"):
        experiments.predictors.feature_fraction(np.ones((3, 1)), np.array([1.0, np.nan, 0.0]))
    assert experiments.predictors.feature_fraction(np.eye(3)[:, :1], np.array([1.0, 1.0, 0.0])) \
        == pytest.approx(0.5)
