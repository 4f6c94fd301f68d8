"""Diagonal linear networks (paper 004) through transferkit.sweep: cache, same numbers."""
import numpy as np
import pytest

from _helpers import assert_same, check_presets, trained_again

from transferkit.experiments import diagonal_networks as dn
from transferkit.models import diagonal
from transferkit.models.diagonal import init_state, min_l12_interpolant, train_diagonal
from transferkit.streams import keyed_rng

P = dict(D=6, k=2, overlap=1, ns=[2, 4], draws=2, n_aux=8, alpha=0.1, gamma=0.1, seed=3,
         loss_tol=1e-8, mtl_loss_tol=1e-6, max_steps=1500, progress=False)

# tiny budgets: unconverged runs are expected (and flagged in the result).  What the tests
# of P and RP check (same numbers again, from the cache, between two routes) holds at any
# budget; 1500 steps (3000 before) still stop some STL and PT+FT networks on their own
# (n = 2) and leave the others, the pretraining and MTL at the budget.
pytestmark = pytest.mark.filterwarnings("ignore:.*did not reach:UserWarning")

#: Loss tolerance (relative to the mean squared target) of the grown-step MTL networks and of
#: their reference, the fixed step rule run to convergence (mtl_fixed_converged); 1e-6
#: before.  Their distance is bounded by 1e-2 (= rel_step, the discretisation error's
#: scale, unchanged); measured (mtl_small_init and mtl_small_init_large alike): 3.4e-4 at
#: most with 1e-6, 5.0e-4 with 1e-5 -- the stopping point adds little -- while the fixed
#: rule takes 3.3x fewer steps (8.4k instead of 27.7k for the slowest network).
MTL_TOL = 1e-5


@pytest.fixture(scope="module")
def tasks(one_thread, cache):
    return dn.run_tasks(**P, directory=cache)


@pytest.fixture(scope="module")
def mtl_fixed_converged(one_thread, cache):
    """mtl_small_init's MTL networks on P's samples from alpha = 0.1 and 0.05 with the fixed
    step rule (grow=None) run to convergence: the reference of the grown step in
    mtl_small_init and in mtl_small_init_large, computed once for both tests."""
    return dn.mtl_small_init(6, 2, 1, [2, 4], draws=2, n_aux=8, alphas=[0.1, 0.05], seed=3,
                             mtl_loss_tol=MTL_TOL, max_steps=200_000, grow=None,
                             directory=cache, progress=False)


def test_shapes(tasks):
    assert tasks.stl.beta.shape == (2, 2, 6) and tasks.mtl.risk.shape == (2, 2)
    assert tasks.qmin_ptft.residual.shape == (2, 2) and tasks.beta_pre.shape == (2, 6)
    assert tasks.pre_converged.dtype == bool and tasks.stl.converged.dtype == bool
    assert list(tasks.methods) == ["stl", "ptft", "mtl"]


def test_second_run_loads_the_cache(tasks, cache, monkeypatch):
    monkeypatch.setattr(dn, "train_diagonal", trained_again)
    assert_same(dn.run_tasks(**P, directory=cache), tasks)


def test_without_cache_gives_the_same_numbers(tasks, one_thread):
    assert_same(dn.run_tasks(**P, cache=False), tasks)


def test_mtl_small_init_shares_the_samples_and_the_mtl_runs(tasks, mtl_fixed_converged, cache):
    """At the same alpha the per-alpha MTL cell with the fixed step rule (grow=None) gives
    run_tasks' MTL networks up to rounding, and with the grown step (the default) the same
    networks within the discretisation error; the minimum-l1,2 interpolant interpolates and
    is never above the teachers' l1,2 norm."""
    keep = ("D", "k", "overlap", "ns", "draws", "n_aux", "seed", "progress")
    fixed = dn.mtl_small_init(**{k: P[k] for k in keep}, alphas=[P["alpha"]], grow=None,
                              mtl_loss_tol=P["mtl_loss_tol"], max_steps=P["max_steps"],
                              directory=cache)
    np.testing.assert_allclose(fixed.beta_mtl[0, ..., 1, :], tasks.mtl.beta, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fixed.beta_mtl[0, ..., 0, :], tasks.mtl_aux, rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(fixed.steps[0], tasks.mtl.steps)
    r = dn.mtl_small_init(**{k: P[k] for k in keep}, alphas=[P["alpha"], 0.05],
                          mtl_loss_tol=MTL_TOL, max_steps=3000, directory=cache)
    assert r.beta_mtl.shape == (2, 2, 2, 2, 6) and r.steps.shape == (2, 2, 2)
    # against the fixed rule run to convergence (run_tasks' budget here is tiny)
    conv = mtl_fixed_converged
    assert r.converged.all() and conv.converged.all() and (r.steps < conv.steps).all()
    diff = np.linalg.norm((r.beta_mtl - conv.beta_mtl).reshape(2, 2, 2, -1), axis=-1)
    assert (diff < 1e-2 * np.linalg.norm(conv.beta_mtl.reshape(2, 2, 2, -1), axis=-1)).all(), diff
    np.testing.assert_array_equal(r.beta_main, tasks.beta_main)
    assert r.l12_residual.max() < 1e-7
    assert (r.l12_min <= r.l12_true * (1 + 1e-7)).all()
    assert r.distance.shape == (2, 2, 2) and (r.l12_mtl >= r.l12_min * (1 - 1e-7)).all()


def test_min_l12_interpolant_matches_its_definition():
    """A case with a known answer: one task, then l1,2 is l1 (basis pursuit), and two tasks
    with the same rows of X and proportional targets share one support."""
    X = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 1.0]])
    sol = min_l12_interpolant([X], [X @ np.array([0.0, 1.0, 0.0])])
    np.testing.assert_allclose(sol.B[0], [0.0, 1.0, 0.0], atol=1e-7)
    sol = min_l12_interpolant([X, X], [X @ np.array([0.0, 1.0, 0.0]), X @ np.array([0.0, 2.0, 0.0])])
    np.testing.assert_allclose(sol.B, [[0.0, 1.0, 0.0], [0.0, 2.0, 0.0]], atol=1e-7)
    assert sol.norm == pytest.approx(np.sqrt(5.0), rel=1e-7) and sol.status == "optimal"
    with pytest.raises(ValueError, match="same number"):
        min_l12_interpolant([X], [])
    with pytest.raises(ValueError, match="task 0"):
        min_l12_interpolant([X], [np.ones(3)])


def test_min_l12_interpolant_certifies_its_gap_by_duality():
    """The dual bound is a lower bound on the minimum and meets the norm: with X = I every
    task's weights are fixed, the minimum is sum_d ||Y_d||_2 exactly; on random
    under-determined tasks the bound is below the norm of every feasible point tried (the
    interpolant plus null-space moves) and within the solver's tolerance of the norm."""
    rng = np.random.default_rng(4)
    Y = rng.standard_normal((2, 6))
    sol = min_l12_interpolant([np.eye(6), np.eye(6)], list(Y))
    exact = np.linalg.norm(Y, axis=0).sum()
    assert sol.lower_bound <= exact * (1 + 1e-12) and sol.norm == pytest.approx(exact, rel=1e-8)
    assert 0 <= sol.gap < 1e-7
    Xs = [rng.standard_normal((4, 12)) for _ in range(3)]
    ys = [x @ (rng.standard_normal(12) * (rng.random(12) < 0.3)) for x in Xs]
    sol = min_l12_interpolant(Xs, ys)
    assert sol.gap < 1e-7 and sol.residual < 1e-8
    for _ in range(200):                                    # feasible points: B + null moves
        moved = np.stack([b + 0.1 * (np.eye(12) - np.linalg.pinv(x) @ x) @ rng.standard_normal(12)
                          for x, b in zip(Xs, sol.B)])
        assert sol.lower_bound <= np.linalg.norm(moved, axis=0).sum() + 1e-12
    # any multipliers give a bound: the solver's with the wrong sign, or random ones
    for nus in ([rng.standard_normal(4) for _ in Xs], [np.zeros(4) for _ in Xs]):
        assert diagonal._l12_dual_bound(Xs, ys, nus) <= sol.norm * (1 + 1e-7)


# ---------------------------------------------------------------- rescaling before fine-tuning

RP = dict(D=6, k=2, ns=[2, 4], draws=2, n_aux=8, alpha=0.1, gamma=0.1, seed=3, loss_tol=1e-8,
          max_steps=1500, progress=False)


@pytest.fixture(scope="module")
def rescaled(one_thread, cache):
    return dn.rescaling_experiment(**RP, k_main=1, scales=[1.0, 0.5, 0.25], directory=cache)


def test_rescaling_shapes(rescaled):
    r = rescaled
    assert r.beta.shape == (3, 2, 2, 6) and r.qmin_beta.shape == (3, 2, 2, 6)
    for a in (r.risk, r.steps, r.converged, r.qmin_risk, r.qmin_residual, r.aux_fraction,
              r.qmin_aux_fraction, r.distance):
        assert a.shape == (3, 2, 2)
    assert r.beta_pre.shape == (2, 6) and r.pre_converged.shape == (2,)
    assert r.converged.dtype == bool and list(r.scales) == [1.0, 0.5, 0.25]
    assert r.k_main == 1 and (np.count_nonzero(r.beta_main, axis=-1) == 1).all()


def test_rescaling_same_seed_same_numbers(rescaled, cache, monkeypatch):
    assert_same(dn.rescaling_experiment(**RP, k_main=1, scales=[1.0, 0.5, 0.25], cache=False),
                rescaled)
    monkeypatch.setattr(dn, "train_diagonal", trained_again)
    assert_same(dn.rescaling_experiment(**RP, k_main=1, scales=[1.0, 0.5, 0.25],
                                        directory=cache), rescaled)


def test_rescaling_by_one_is_the_chapters_ptft(one_thread):
    """With the whole auxiliary support as main support (k_main = k) the factor s = 1 is
    run_tasks' PT+FT with overlap k, bit for bit, and s = 0.5 is not."""
    keep = {k: v for k, v in RP.items() if k not in ("progress",)}
    t = dn.run_tasks(**keep, overlap=2, cache=False, progress=False)
    r = dn.rescaling_experiment(**RP, k_main=2, scales=[0.5, 1.0], cache=False)
    np.testing.assert_array_equal(r.beta_main, t.beta_main)
    np.testing.assert_array_equal(r.beta_pre, t.beta_pre)
    np.testing.assert_array_equal(r.beta[1], t.ptft.beta)
    np.testing.assert_array_equal(r.risk[1], t.ptft.risk)
    np.testing.assert_array_equal(r.steps[1], t.ptft.steps)
    np.testing.assert_array_equal(r.converged[1], t.ptft.converged)
    np.testing.assert_array_equal(r.qmin_beta[1], t.qmin_ptft.beta)
    assert not np.array_equal(r.beta[0], t.ptft.beta)


def test_nested_task_is_a_subset_of_the_auxiliary_support():
    full = dn.task_data(5, 12, 4, 4, [3, 6], 3, 10)
    assert_same(dn.nested_task_data(5, 12, 4, 4, [3, 6], 3, 10), full)
    d = dn.nested_task_data(5, 12, 4, 2, [3, 6], 3, 10)
    np.testing.assert_array_equal(d.beta_aux, full.beta_aux)
    on = d.beta_main != 0
    assert (on.sum(-1) == 2).all() and (full.beta_aux[on] != 0).all()
    np.testing.assert_array_equal(d.beta_main[on], full.beta_main[on])   # the main task's signs
    jj = np.tile(np.arange(3), 2)
    for x, v, j in zip(d.Xm, d.ym, jj):
        np.testing.assert_allclose(v, x @ d.beta_main[j], rtol=0, atol=1e-12)
    # the kept features differ between draws (a random subset, not a fixed rule)
    assert len({tuple(np.flatnonzero(b)) for b in d.beta_main}) > 1


def test_aux_norm_fraction():
    beta_aux = np.array([1.0, -1.0, 0.0, 0.0])
    beta = np.array([[3.0, 0.0, 4.0, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    f = dn.aux_norm_fraction(beta, beta_aux)
    np.testing.assert_allclose(f[:2], [9 / 25, 1.0])
    assert np.isnan(f[2])


@pytest.mark.parametrize("bad, name", [(dict(k_main=0), "k_main"), (dict(k_main=3), "k_main"),
                                       (dict(scales=[0.0]), "scales"),
                                       (dict(scales=[1.0, np.nan]), "scales"),
                                       (dict(scales=[-0.5]), "scales"),
                                       (dict(scales=[]), "scales")])
def test_rescaling_bad_input_names_the_parameter(bad, name):
    kw = dict(RP, k_main=1, scales=[1.0], cache=False)
    kw.update(bad)
    with pytest.raises(ValueError, match=name):
        dn.rescaling_experiment(**kw)


# ---------------------------------------------------------------- sparsity (Fig. 5c-f)


def test_top_k_variance_analytic_cases():
    """A 1-sparse vector has top-1 share 1; (3, 4) shares 16/25 then 1; the shares rise to 1
    and do not depend on signs or order."""
    v = dn.top_k_variance([0.0, -2.0, 0.0])
    np.testing.assert_allclose(v, [1.0, 1.0, 1.0])
    v = dn.top_k_variance([[3.0, 0.0, -4.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(v, [[16 / 25, 1.0, 1.0], [1 / 3, 2 / 3, 1.0]])
    b = np.random.default_rng(1).standard_normal((4, 7))
    v = dn.top_k_variance(b)
    assert (np.diff(v, axis=-1) >= 0).all() and np.allclose(v[:, -1], 1.0)
    np.testing.assert_allclose(dn.top_k_variance(-b[:, ::-1]), v)


def test_l1_norm():
    np.testing.assert_allclose(dn.l1_norm([[1.0, -2.0, 0.5], [0.0, 0.0, 0.0]]), [3.5, 0.0])


@pytest.mark.parametrize("f, bad", [(dn.top_k_variance, [0.0, 0.0]),
                                    (dn.top_k_variance, [1.0, np.nan]),
                                    (dn.top_k_variance, 1.0),
                                    (dn.l1_norm, [np.inf]), (dn.l1_norm, "x")])
def test_sparsity_measures_bad_input_names_beta(f, bad):
    with pytest.raises(ValueError, match="beta"):
        f(bad)


def test_readout_only_fit_is_the_minimum_distance_interpolant():
    """The fit interpolates, its readout step is numpy's minimum-norm least-squares solution
    (orthogonal to the null space of the feature map), and with a constant first layer beta
    is the minimum-l2 interpolant X^+ y."""
    rng = np.random.default_rng(2)
    X, y = rng.standard_normal((3, 5)), rng.standard_normal(3)
    w1, w2_0 = rng.uniform(0.5, 2.0, 5), rng.uniform(0.1, 1.0, 5)
    fit = dn.readout_only_fit(X, y, w1, w2_0)
    assert fit.residual < 1e-12
    np.testing.assert_allclose(X @ fit.beta, y, atol=1e-12)
    phi = np.concatenate([X * w1, -X * w1], 1)
    v0 = np.concatenate([w2_0, w2_0])
    dv = fit.readout.ravel() - v0
    np.testing.assert_allclose(dv, np.linalg.lstsq(phi, y - phi @ v0, rcond=None)[0], atol=1e-12)
    null = np.linalg.svd(phi)[2][3:]                # the null space of phi (rank 3)
    np.testing.assert_allclose(null @ dv, 0.0, atol=1e-12)
    np.testing.assert_allclose(dn.readout_only_fit(X, y, 0.1, 0.1).beta, np.linalg.pinv(X) @ y,
                               atol=1e-12)


def test_readout_only_fit_is_the_limit_of_readout_descent(one_thread):
    """Gradient descent on the readout alone (train_diagonal with train_first=False) from the
    same initialisation lands on the closed form."""
    rng = np.random.default_rng(4)
    X, y = rng.standard_normal((3, 5)), rng.standard_normal(3)
    w1 = rng.uniform(0.5, 1.5, 5)
    st = init_state(1, 1, 5, w1, 0.2)
    res = train_diagonal(st, X[None, None], y[None, None], np.array([[3.0]]), train_first=False,
                         rel_step=0.01, loss_tol=1e-24, max_steps=200_000)
    assert res.converged.all()
    fit = dn.readout_only_fit(X, y, w1, 0.2)
    np.testing.assert_allclose(res.beta[0, 0], fit.beta, atol=1e-9)
    np.testing.assert_allclose(res.state.w2[0, :, 0].cpu().numpy(), fit.readout, atol=1e-9)


@pytest.mark.parametrize("kw, name", [(dict(X=np.ones(3)), "X"), (dict(y=np.ones(2)), "y"),
                                      (dict(y=[1.0, np.nan, 0.0]), "y"),
                                      (dict(w1=np.ones(4)), "w1"), (dict(w2_0=[np.inf]), "w2_0")])
def test_readout_only_fit_bad_input_names_the_parameter(kw, name):
    args = dict(X=np.ones((3, 5)), y=np.ones(3), w1=0.1, w2_0=0.1)
    args.update(kw)
    with pytest.raises(ValueError, match=name):
        dn.readout_only_fit(**args)


def test_stl_readout_only_uses_the_chapters_samples(tasks):
    """Same teachers as run_tasks; every fit interpolates its main-task sample."""
    keep = ("D", "k", "overlap", "ns", "draws", "n_aux", "alpha", "seed")
    lp = dn.stl_readout_only(**{k: P[k] for k in keep})
    np.testing.assert_array_equal(lp.beta_main, tasks.beta_main)
    assert lp.beta.shape == tasks.stl.beta.shape and lp.risk.shape == (2, 2)
    assert lp.residual.max() < 1e-12
    data = dn.task_data(P["seed"], P["D"], P["k"], P["overlap"], P["ns"], P["draws"], P["n_aux"])
    np.testing.assert_allclose(lp.beta[1, 0], np.linalg.pinv(data.Xm[2]) @ data.ym[2], atol=1e-12)
    with pytest.raises(ValueError, match="alpha"):
        dn.stl_readout_only(**{k: P[k] for k in keep if k != "alpha"}, alpha=0.0)


def test_l12_large_presets():
    check_presets(dn.DIAGONAL_L12_LARGE, dn.L12LargePreset, ("ns", "overlaps", "alphas"), "D")
    assert isinstance(dn.DIAGONAL_L12_FULL, dn.L12LargePreset)
    for scale, p in dn.DIAGONAL.items():
        assert p.l12_large is dn.DIAGONAL_L12_LARGE[scale]
    paper = dn.DIAGONAL_L12_LARGE["paper"]
    assert (paper.D, paper.k, paper.alphas[:4]) == (1000, 40, (0.1, 0.03, 0.01, 0.003))  # issue 18
    assert dn.DIAGONAL_L12_FULL.n_aux == 1024 and max(dn.DIAGONAL_L12_FULL.ns) <= 1024  # paper 004 App. D


@pytest.fixture(scope="module")
def large(one_thread, cache):
    return dn.mtl_small_init_large(6, 2, 1, [2, 4], draws=2, n_aux=8, alphas=[0.1, 0.05],
                                   seed=3, loss_tol=MTL_TOL, max_steps=20_000, directory=cache,
                                   progress=False)


def test_mtl_small_init_large_shares_the_samples(large, mtl_fixed_converged, cache, monkeypatch):
    """Same teachers, samples and interpolants as mtl_small_init; networks within the
    discretisation error of its (fixed-step) networks; the second call loads the cache."""
    r = large
    assert r.beta_mtl.shape == (2, 2, 2, 2, 6) and r.rel_loss.shape == (2, 2, 2)
    assert r.converged.all() and (r.rel_loss <= MTL_TOL).all()
    ref = mtl_fixed_converged
    np.testing.assert_array_equal(r.beta_main, ref.beta_main)
    np.testing.assert_array_equal(r.beta_aux, ref.beta_aux)
    # the same convex problem (the auxiliary rows replaced by beta_aux = X_a^+ y_a): the same
    # minimum to the solver's gap; the minimiser's weights agree to about its square root
    np.testing.assert_allclose(r.l12_min, ref.l12_min, rtol=1e-7)
    np.testing.assert_allclose(r.beta_l12, ref.beta_l12, atol=1e-4)
    assert r.l12_residual.max() < 1e-9 and ref.converged.all()
    diff = np.linalg.norm((r.beta_mtl - ref.beta_mtl).reshape(2, 2, 2, -1), axis=-1)
    assert (diff < 1e-2 * np.linalg.norm(ref.beta_mtl.reshape(2, 2, 2, -1), axis=-1)).all()
    monkeypatch.setattr(dn, "train_diagonal_gram", trained_again)
    monkeypatch.setattr(dn, "min_l12_interpolant", trained_again)
    assert_same(dn.mtl_small_init_large(6, 2, 1, [2, 4], draws=2, n_aux=8, alphas=[0.1, 0.05],
                                        seed=3, loss_tol=MTL_TOL, max_steps=20_000,
                                        directory=cache, progress=False), r)


def test_mtl_small_init_large_refuses_bad_input():
    for kw, name in ((dict(alphas=[0.1, -1.0]), "alpha"), (dict(draws=0), "draws"),
                     (dict(overlap=3), "overlap"), (dict(alphas=[]), "alphas"),
                     (dict(loss_tol=0.0), "loss_tol")):
        args = dict(D=6, k=2, overlap=1, ns=[2], draws=1, n_aux=8, alphas=[0.1])
        args.update(kw)
        with pytest.raises(ValueError, match=name):
            dn.mtl_small_init_large(**args, cache=False)


def test_excess_limit_is_exact_for_a_geometric_sequence():
    """Aitken's extrapolation recovers e_inf from e_inf + c alpha^p on scales in a constant ratio."""
    alphas = np.array([0.1, 0.03, 0.009, 0.0027])
    S, R, D = 2, 3, 4
    rng = np.random.default_rng(0)
    b12 = np.abs(rng.standard_normal((S, R, 2, D))) + 0.1
    target = 0.04 + 0.5 * alphas ** 0.7                          # the excess per alpha
    beta = b12[None] * (1 + target[:, None, None, None, None])   # scales every row
    r = dn.L12Result(alphas=alphas, ns=np.array([3, 6]), beta_aux=np.zeros((R, D)),
                     beta_main=np.zeros((R, D)), beta_mtl=beta, steps=np.ones((4, S, R), int),
                     converged=np.ones((4, S, R), bool), beta_l12=b12, l12_residual=np.zeros((S, R)),
                     l12_gap=np.zeros((S, R)))
    np.testing.assert_allclose(r.excess, np.broadcast_to(target[:, None, None], (4, S, R)))
    np.testing.assert_allclose(r.excess_limit, 0.04, rtol=1e-9)
    short = dn.L12Result(**{**r.__dict__, "alphas": alphas[:2], "beta_mtl": beta[:2]})
    with pytest.raises(ValueError, match="alphas"):
        short.excess_limit


# ---------------------------------------------------------------------------
# run_tasks_large: run_tasks' networks on the sample moments with the grown step
# ---------------------------------------------------------------------------

#: run_tasks_large's arguments at a test size (n < D), every network trained to its
#: tolerance; TL_REF is run_tasks with the same arguments (the fixed step rule) run to
#: convergence, the reference.
TL = dict(D=8, k=2, overlap=1, ns=[2, 4], draws=2, n_aux=16, alpha=0.1, gamma=0.1, seed=3,
          loss_tol=1e-10, mtl_loss_tol=1e-8, max_steps=400_000, progress=False)


@pytest.fixture(scope="module")
def tasks_large(one_thread, cache):
    return dn.run_tasks_large(**TL, directory=cache)


@pytest.fixture(scope="module")
def tasks_converged(one_thread, cache):
    return dn.run_tasks(**TL, directory=cache)


def test_tasks_large_presets():
    check_presets(dn.DIAGONAL_TASKS_LARGE, dn.TasksLargePreset, ("ns", "overlaps"), "D")
    for scale, p in dn.DIAGONAL.items():
        assert p.tasks_large is dn.DIAGONAL_TASKS_LARGE[scale]
        q = p.tasks_large
        assert q.sparsity_n in q.ns and max(q.ns) < q.D
        assert all(0 <= ov <= q.k for _, ov in q.overlaps)
        assert 1 <= q.rescale_k_main <= q.k and max(q.rescale_ns) < q.D
        assert 1.0 in q.rescale_factors and q.gamma in q.rescale_gammas   # the references
        for name in ("rescale_ns", "rescale_factors", "rescale_gammas"):
            assert isinstance(getattr(q, name), tuple), name
    paper = dn.DIAGONAL_TASKS_LARGE["paper"]
    assert (paper.D, paper.k) == (1000, 40) and max(paper.ns) <= 1024     # issue 18; App. D
    assert {ov for _, ov in paper.overlaps} >= {40, 0}                    # Fig. 5a caption


def test_run_tasks_large_is_run_tasks_on_the_moments(tasks_large, tasks_converged):
    """The same teachers, samples and Eq. 22 theory at the STL initialisation as run_tasks;
    every network converged and within the discretisation error (the relative step, 1e-2) of
    run_tasks' network run to convergence, and of the Eq. 22 minimiser at its own
    initialisation (STL, PT+FT)."""
    r, ref = tasks_large, tasks_converged
    assert r.stl.beta.shape == (2, 2, 8) and r.mtl_aux.shape == (2, 2, 8)
    assert r.beta_pre.shape == (2, 8) and r.qmin_ptft.residual.shape == (2, 2)
    np.testing.assert_array_equal(r.beta_main, ref.beta_main)
    np.testing.assert_array_equal(r.beta_aux, ref.beta_aux)
    np.testing.assert_array_equal(r.qmin_stl.beta, ref.qmin_stl.beta)   # same samples, same alpha
    assert r.pre_converged.all() and ref.pre_converged.all()
    for m, run in r.methods.items():
        assert run.converged.all() and ref.methods[m].converged.all(), m
        b, b_ref = run.beta, ref.methods[m].beta
        assert (np.linalg.norm(b - b_ref, axis=-1) < 1e-2 * np.linalg.norm(b_ref, axis=-1)).all(), m
        np.testing.assert_allclose(run.risk, ((b - r.beta_main[None]) ** 2).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(r.mtl_aux, ref.mtl_aux, atol=1e-2 * np.abs(ref.mtl_aux).max())
    for m, q in r.qmin.items():
        assert q.residual.max() < 1e-10, m
        dist = np.linalg.norm(r.methods[m].beta - q.beta, axis=-1)
        assert (dist < 1e-2 * np.linalg.norm(q.beta, axis=-1)).all(), (m, dist)


def test_run_tasks_large_loads_the_cache(tasks_large, cache, monkeypatch):
    monkeypatch.setattr(dn, "train_diagonal_gram", trained_again)
    monkeypatch.setattr(dn, "q_min_interpolant", trained_again)
    assert_same(dn.run_tasks_large(**TL, directory=cache), tasks_large)


@pytest.mark.parametrize("kw, name", [
    (dict(ns=[2, 8]), "n"), (dict(ns=[]), "ns"), (dict(ns=[0]), "n"), (dict(draws=0), "draws"),
    (dict(overlap=3), "overlap"), (dict(alpha=0.0), "alpha"), (dict(gamma=-1.0), "gamma"),
    (dict(mtl_loss_tol=0.0), "mtl_loss_tol"), (dict(max_steps=0), "max_steps"),
    (dict(n_aux=0), "n_aux"), (dict(rel_step=float("nan")), "rel_step")])
def test_run_tasks_large_refuses_bad_input_before_training(kw, name, monkeypatch):
    monkeypatch.setattr(dn, "run", trained_again)
    with pytest.raises(ValueError, match=name):
        dn.run_tasks_large(**{**TL, **kw}, cache=False)


#: rescaling_experiment_large's arguments at a test size, every network trained to its
#: tolerance; rescaling_experiment with the same arguments (the fixed step rule) is the
#: reference.
RL = dict(D=8, k=3, k_main=1, ns=[2, 4], scales=[0.25, 1.0], draws=2, n_aux=16, alpha=0.1,
          gamma=0.1, seed=3, loss_tol=1e-10, max_steps=400_000, progress=False)


@pytest.fixture(scope="module")
def rescaled_large(one_thread, cache):
    return dn.rescaling_experiment_large(**RL, directory=cache)


def test_rescaling_large_is_rescaling_experiment_on_the_moments(rescaled_large, one_thread, cache):
    """The same teachers, nested samples and Eq. 22 minimisers (up to the pretrained weights'
    discretisation) as rescaling_experiment; every network converged and within the
    discretisation error (the relative step, 1e-2) of the reference and of its own Eq. 22
    minimiser."""
    r = rescaled_large
    ref = dn.rescaling_experiment(**RL, directory=cache)
    assert r.beta.shape == (2, 2, 2, 8) and r.risk.shape == (2, 2, 2)
    np.testing.assert_array_equal(r.beta_main, ref.beta_main)
    np.testing.assert_array_equal(r.beta_aux, ref.beta_aux)
    assert r.pre_converged.all() and r.converged.all() and ref.converged.all()
    diff = np.linalg.norm(r.beta - ref.beta, axis=-1)
    assert (diff < 1e-2 * np.linalg.norm(ref.beta, axis=-1)).all(), diff
    assert r.qmin_residual.max() < 1e-10 and r.distance.max() < 1e-2
    np.testing.assert_allclose(r.risk, ((r.beta - r.beta_main[None, None]) ** 2).sum(-1),
                               rtol=1e-12)
    # the nested teacher: k_main of the auxiliary features, nothing outside its support
    assert ((r.beta_main != 0).sum(-1) == RL["k_main"]).all()
    assert np.all((r.beta_main != 0) <= (r.beta_aux != 0))


def test_rescaling_large_loads_the_cache(rescaled_large, cache, monkeypatch):
    monkeypatch.setattr(dn, "train_diagonal_gram", trained_again)
    monkeypatch.setattr(dn, "q_min_interpolant", trained_again)
    assert_same(dn.rescaling_experiment_large(**RL, directory=cache), rescaled_large)


@pytest.mark.parametrize("kw, name", [
    (dict(k_main=4), "k_main"), (dict(k_main=0), "k_main"), (dict(scales=[]), "scales"),
    (dict(scales=[1.0, -0.5]), "scales"), (dict(ns=[2, 8]), "n"), (dict(ns=[]), "ns"),
    (dict(draws=0), "draws"), (dict(gamma=0.0), "gamma"), (dict(k=9), "k"),
    (dict(loss_tol=float("inf")), "loss_tol")])
def test_rescaling_large_refuses_bad_input_before_training(kw, name, monkeypatch):
    monkeypatch.setattr(dn, "run", trained_again)
    with pytest.raises(ValueError, match=name):
        dn.rescaling_experiment_large(**{**RL, **kw}, cache=False)


def test_nested_task_data_keeps_its_draws():
    """nested_task_data's main teachers and targets, bit for bit those of its documented
    rule written out here: the first k_main of a permutation of the auxiliary support drawn
    from keyed_rng(seed, j, 0, k_main), with task_data's main signs."""
    seed, D, k, k_main, ns, draws, n_aux = 3, 8, 3, 2, [2, 4], 2, 16
    data = dn.nested_task_data(seed, D, k, k_main, ns, draws, n_aux)
    full = dn.task_data(seed, D, k, k, ns, draws, n_aux)
    for j in range(draws):
        supp = np.flatnonzero(full.beta_aux[j])
        keep = supp[keyed_rng(seed, j, 0, k_main).permutation(len(supp))[:k_main]]
        bm = np.zeros(D)
        bm[keep] = full.beta_main[j, keep]
        np.testing.assert_array_equal(data.beta_main[j], bm)
    for i, (x, y) in enumerate(zip(data.Xm, data.ym)):
        np.testing.assert_array_equal(y, x @ data.beta_main[i % draws])


def test_aux_norm_fraction_refuses_shapes_that_do_not_broadcast_and_non_finite_input():
    """numpy's broadcasting message escaped before."""
    assert dn.aux_norm_fraction(np.array([[1.0, 2.0, 0.0]]), np.array([1.0, 0.0, 0.0])) == pytest.approx(0.2)
    with pytest.raises(ValueError, match=r"^beta, beta_aux must have shapes that broadcast together"):
        dn.aux_norm_fraction(np.ones((3, 4)), np.ones((2, 5)))
    with pytest.raises(ValueError, match=r"^beta must be finite"):
        dn.aux_norm_fraction(np.array([np.nan, 1.0]), np.ones(2))
