"""Paper 000, Sec. 4, Figs. 3 and 9 through transferkit.sweep: cache, resumption, same numbers."""
import dataclasses

import numpy as np
import pytest

from _helpers import assert_same, check_presets, gamma_k, memory_cap, trained_again

from transferkit import sweep
from transferkit.experiments import relu_student_teacher as rst
from transferkit.models.relu import make_teachers, random_sphere

P = dict(d=4, m=6, m_star=3, mus=[0.0, 0.5], ns=[5, 8], teachers=1, draws=2, scratch_seeds=2,
         pretrain_steps=60, scratch_steps=40, gram_points=7, seed=2, progress=False)


def test_skip_normals_replays_the_draws():
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    a.standard_normal((3, 7))
    random_sphere((2, 4, 3), a)
    rst.skip_normals(b, 3 * 7 + 2 * 4 * 3, chunk=5)     # chunks across the array boundaries
    assert a.bit_generator.state == b.bit_generator.state
    np.testing.assert_array_equal(a.standard_normal(4), b.standard_normal(4))


@pytest.fixture(scope="module")
def fig3(one_thread, cache):
    return rst.fig3_experiment(**P, directory=cache)


def test_fig3_second_run_loads_the_cache(fig3, cache, monkeypatch):
    monkeypatch.setattr(rst, "train_population", trained_again)
    monkeypatch.setattr(rst, "train_samples", trained_again)
    assert_same(rst.fig3_experiment(**P, directory=cache), fig3)


def test_fig3_without_cache_gives_the_same_numbers(fig3, one_thread):
    res = rst.fig3_experiment(**P, cache=False)
    assert_same(res, fig3)
    assert res.R_lt.shape == (2, 2, 1, 2) and res.R_sc.shape == (2, 1, 2)
    assert len(res.scratch) == 2 and res.scratch[0].history.shape[1] == 2
    assert res.pretrain.risk is None and res.scratch[0].teacher_norm is None


def test_float32_scratch_runs_are_their_own_cells(fig3, cache, one_thread, monkeypatch):
    """``grad_dtype="float32"`` changes the scratch runs only, within single-precision
    rounding of the float64 ones (the same steps), and is part of the (n, teacher) cells'
    keys: the float64 cells of the cache are not read back for it, while pretraining,
    double precision either way, is.  A bad ``grad_dtype`` is refused before any work."""
    monkeypatch.setattr(rst, "train_population", trained_again)
    res = rst.fig3_experiment(**P, grad_dtype="float32", directory=cache)
    assert res.grad_dtype == "float32" and fig3.grad_dtype == "float64"
    assert_same(res.pretrain, fig3.pretrain)
    np.testing.assert_array_equal(res.R_lt, fig3.R_lt)
    assert not np.array_equal(res.R_sc, fig3.R_sc)
    # each of at most scratch_steps steps moves the iterate by gradients of relative error
    # gamma_k (k = d + m + n along the chain): a first-order bound on the risks' change
    k = P["d"] + P["m"] + max(P["ns"])
    np.testing.assert_allclose(res.R_sc, fig3.R_sc, rtol=P["scratch_steps"] * gamma_k(k))
    for a, b in zip(res.scratch, fig3.scratch):
        np.testing.assert_array_equal(a.steps, b.steps)
    monkeypatch.setattr(rst, "train_samples", trained_again)
    with pytest.raises(ValueError, match="^grad_dtype must be one of"):
        rst.fig3_experiment(**P, grad_dtype="half", cache=False)


def test_fig3_cell_of_the_first_n_does_not_depend_on_the_others(fig3, one_thread):
    # the second n replays the draws of the first one: the first cell alone is unchanged
    res = rst.fig3_experiment(**dict(P, ns=P["ns"][:1]), cache=False)
    assert_same(res.R_lt[:, 0], fig3.R_lt[:, 0])
    assert_same(res.scratch[0], fig3.scratch[0])


def test_anchored_cached_and_uncached_agree(fig3, cache, one_thread, monkeypatch):
    kw = dict(lambdas=[0.0, 0.1], mu=0.5, draws=2, seed=1, progress=False)
    first = rst.anchored_experiment(fig3, **kw, directory=cache)
    assert first.R_lt.shape == (2, 2, 1, 2) and first.info.anchor_dist.shape == (2,)
    assert_same(rst.anchored_experiment(fig3, **kw, cache=False), first)
    monkeypatch.setattr(rst, "train_population", trained_again)
    assert_same(rst.anchored_experiment(fig3, **kw, directory=cache), first)


def test_anchored_lambda_is_the_papers_penalty_on_eq2(fig3, one_thread):
    # paper 000, App. E adds lambda sum_i ||w_i - w_i(0)||^2 to Eq. 2, (1/2) E(f - f_s)^2;
    # our loss is E(f - f_s)^2, so the final loss is risk + 2 lambda * distance
    lambdas = np.array([0.0, 1e-3, 0.1])
    an = rst.anchored_experiment(fig3, lambdas, 0.5, draws=2, seed=1, progress=False,
                                 cache=False)
    np.testing.assert_array_equal(an.lambdas, lambdas)
    info = an.info
    np.testing.assert_allclose(info.loss, info.risk + 2 * lambdas * info.anchor_dist,
                               rtol=1e-12, atol=0)
    assert np.all(info.anchor_dist[1:] > 0)


def test_anchored_cells_per_lambda_give_the_batch_of_all(fig3, anchored4, one_thread):
    """Pretraining one cell per lambda (lambda_cells=True, what a cluster spreads) gives,
    bit for bit, the batch of every lambda: the runs of a batch do not depend on each
    other, and each cell draws the initial units of all lambdas and keeps its own."""
    per = rst.anchored_experiment(fig3, lambdas=[0.0, 1e-3, 0.1], mu=0.5, draws=4, seed=1,
                                  lambda_cells=True, progress=False, cache=False)
    assert_same(per, anchored4)
    with pytest.raises(TypeError, match="^lambda_cells must be a bool"):
        rst.anchored_experiment(fig3, [0.0], 0.5, lambda_cells="yes", cache=False)


def test_anchored_per_lambda_on_a_local_dask_cluster_gives_the_local_numbers(fig3, anchored4,
                                                                             one_thread):
    """The cluster path of Fig. 9's full protocol (ANCHORED_FULL on FIG3_FULL): the cells
    per lambda on Dask workers give the numbers of the local batch."""
    distributed = pytest.importorskip("distributed")
    with distributed.Client(sweep._local_cluster(distributed, 2)) as client:
        remote = rst.anchored_experiment(fig3, lambdas=[0.0, 1e-3, 0.1], mu=0.5, draws=4,
                                         seed=1, lambda_cells=True, progress=False,
                                         cache=False, scheduler=client)
    assert_same(remote, anchored4)


def test_anchored_linear_transfer_in_pieces_gives_the_whole(fig3, anchored4, one_thread,
                                                            monkeypatch):
    """anchored_n_cell draws and fits the target sets of a lambda a few at a time (at most
    _LT_CHUNK features): fitting one set at a time gives the same numbers bit for bit."""
    monkeypatch.setattr(rst, "_LT_CHUNK", 1)
    one = rst.anchored_experiment(fig3, lambdas=[0.0, 1e-3, 0.1], mu=0.5, draws=4, seed=1,
                                  progress=False, cache=False)
    assert_same(one, anchored4)


def test_anchored_presets():
    check_presets(rst.ANCHORED, rst.AnchoredPreset, ("lambdas", "fine_lambdas"), "draws")
    for p in rst.ANCHORED.values():
        assert p.lambdas == (0.0, 1e-4, 1e-3, 1e-2, 1e-1)          # paper 000, App. E
        assert set(p.lambdas) <= set(p.fine_lambdas)     # the paper's grid is read off it
        below = [v for v in p.fine_lambdas if 0 < v < 1e-4]
        assert len(below) >= 4 and p.draws >= 4
        assert p.lambda_cells is False                               # the book: one batch
    full = rst.ANCHORED_FULL                 # App. D.2's 100 realisations, cells per lambda
    assert full.draws == 100 and full.lambda_cells is True
    assert full.lambdas == rst.ANCHORED["paper"].lambdas


@pytest.fixture(scope="module")
def anchored4(fig3, cache, one_thread):
    return rst.anchored_experiment(fig3, lambdas=[0.0, 1e-3, 0.1], mu=0.5, draws=4, seed=1,
                                   progress=False, directory=cache)


def test_select_lambda_is_the_held_in_argmax_scored_on_held_out(fig3, anchored4):
    sel = rst.select_lambda(fig3, anchored4)
    tv = fig3.teacher_var
    Rsc = (fig3.R_sc / tv[None, :, None]).mean(axis=(1, 2))
    for j in range(len(fig3.ns)):                     # written out, one n at a time
        T = Rsc[j] - anchored4.R_lt[:, j] / tv[None, :, None]       # (lambdas, teachers, draws)
        k = int(np.argmax(T[..., :2].mean(axis=(1, 2))))
        assert sel.best[j] == k
        held = T[k, :, 2:].ravel()
        assert sel.T_best[j] == pytest.approx(held.mean(), rel=1e-12, abs=1e-15)
        assert sel.T_best_se[j] == pytest.approx(held.std(ddof=1) / np.sqrt(held.size), rel=1e-12)
        assert sel.T_first[j] == pytest.approx(T[0, :, 2:].mean(), rel=1e-12, abs=1e-15)
    assert sel.T.shape == anchored4.R_lt.shape


def test_select_lambda_among_a_subset(fig3, anchored4):
    full = rst.select_lambda(fig3, anchored4)
    only = rst.select_lambda(fig3, anchored4, among=[0.1])
    assert (only.best == 2).all()
    np.testing.assert_array_equal(only.T, full.T)
    both = rst.select_lambda(fig3, anchored4, among=[0.0, 1e-3, 0.1])
    np.testing.assert_array_equal(both.best, full.best)


def test_restrict_is_the_same_runs_at_fewer_lambdas(fig3, anchored4):
    """The paper's grid read off a finer run: every array of the restriction is the whole's
    at those lambdas (in the order asked), and choosing on it is choosing among them."""
    sub = anchored4.restrict([0.1, 0.0])
    k, nt = [2, 0], anchored4.perp.shape[1]
    runs = np.array([kk * nt + t for kk in k for t in range(nt)])
    np.testing.assert_array_equal(sub.lambdas, [0.1, 0.0])
    for name in ("R_lt", "perp", "anchor_dist", "source_rel"):
        np.testing.assert_array_equal(getattr(sub, name), getattr(anchored4, name)[k])
    for f in dataclasses.fields(sub.info):
        whole = getattr(anchored4.info, f.name)
        if whole is None:
            assert getattr(sub.info, f.name) is None
        else:
            np.testing.assert_array_equal(getattr(sub.info, f.name), whole[..., runs])
    assert sub.mu == anchored4.mu and np.array_equal(sub.ns, anchored4.ns)
    paper = anchored4.restrict([0.0, 0.1])             # lambda = 0 first, as in the whole
    a, b = rst.select_lambda(fig3, paper), rst.select_lambda(fig3, anchored4, among=[0.0, 0.1])
    np.testing.assert_array_equal(paper.lambdas[a.best], anchored4.lambdas[b.best])
    for name in ("T_best", "T_best_se", "T_first", "T_first_se"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    for bad in ([], [0.5], [0.0, 0.0], [[0.0]]):
        with pytest.raises(ValueError, match="lambdas must be distinct values"):
            anchored4.restrict(bad)
    for bad in ("0.1", None):                           # not numbers: check_values' TypeError
        with pytest.raises(TypeError, match="lambdas"):
            anchored4.restrict(bad)
    with pytest.raises(ValueError, match="lambdas"):     # a string inside: its ValueError
        anchored4.restrict([0.0, "x"])


def test_select_lambda_refuses_bad_input(fig3, anchored4):
    with pytest.raises(ValueError, match="among must be values of an.lambdas"):
        rst.select_lambda(fig3, anchored4, among=[0.5])
    with pytest.raises(TypeError, match="Fig3Result and an AnchoredResult"):
        rst.select_lambda(anchored4, fig3)
    two = dataclasses.replace(anchored4, R_lt=anchored4.R_lt[..., :2])
    with pytest.raises(ValueError, match="draws >= 4"):
        rst.select_lambda(fig3, two)


def test_fig3_full_preset_is_the_papers_protocol():
    """FIG3_FULL holds what App. D.2 and the caption of Fig. 3 state (ours: the grids)."""
    F, Pp = rst.FIG3_FULL, rst.FIG3["paper"]
    assert (F.d, F.m, F.m_star, F.readout_init) == (100, 1000, 100, 1e-7)
    assert (F.teachers, F.draws, F.scratch_seeds) == (10, 100, 10)
    # 1e5 steps of 0.01 m on Eqs. 2-3 (factor 1/2) are steps h = 0.005 here, ending at t = 500;
    # the budget must let a run reach that horizon: added one at a time in float64, as
    # models.relu._descend adds them, 1e5 steps of h fall short (not Python's sum(), which
    # since 3.12 compensates its rounding and gives 500.0 exactly)
    assert (F.max_step, F.max_time) == (0.005, 500.0)
    t = 0.0
    for _ in range(100_000):
        t += F.max_step
    assert t < F.max_time < F.max_step * min(F.pretrain_steps, F.scratch_steps)
    assert min(F.pretrain_steps, F.scratch_steps) <= 1.01 * 100_000
    assert (F.mus, F.ns, F.tol) == (Pp.mus, Pp.ns, Pp.tol)
    # the fixed learning rate and the absolute loss 1e-6 of Eqs. 2-3 (2e-6 without the 1/2)
    assert F.fixed_step is True and F.abs_tol == 2e-6 and not Pp.fixed_step


def test_fixed_step_reaches_the_cells(fig3, one_thread):
    """``fixed_step`` takes every step at ``max_step``: the gradient-flow time of a run is
    its steps times the step, in pretraining and scratch training alike."""
    res = rst.fig3_experiment(**dict(P, fixed_step=True, max_step=0.05, max_time=2.0,
                                     pretrain_steps=60, scratch_steps=60), cache=False)
    assert res.fixed_step is True
    for info in [res.pretrain] + list(res.scratch):
        np.testing.assert_allclose(info.time, info.steps * 0.05, rtol=1e-12)
        assert np.all(info.h == 0.05) and np.all(info.horizon | info.converged)
    with pytest.raises(TypeError, match="^fixed_step must be a bool"):
        rst.fig3_experiment(**dict(P, fixed_step="yes"), cache=False)


def test_fig3_on_a_local_dask_cluster_gives_the_local_numbers(fig3, one_thread):
    """The cluster path of the full protocol: every sweep of fig3_experiment on Dask
    workers (other processes) gives the numbers of the local run, bit for bit."""
    distributed = pytest.importorskip("distributed")
    # worker processes as TRANSFERKIT_SCHEDULER=local:2 starts them (one torch thread each),
    # shared with the sweep tests when they run in this process
    with distributed.Client(sweep._local_cluster(distributed, 2)) as client:
        remote = rst.fig3_experiment(**P, cache=False, scheduler=client)
    assert_same(remote, fig3)


def test_cells_per_teacher_give_the_batch_of_all_teachers(one_thread):
    """Pretraining one cell per teacher and the (n, teacher) cells give, bit for bit, what
    one batch of all teachers gives: the runs of a batch do not depend on each other, and
    each cell replays the draws of the others.  Written out here as the one-batch loop."""
    from transferkit.models.relu import (readout_transfer_risk, repeat_teacher, risk_np,
                                         train_population, train_samples)
    Q = dict(P, teachers=2, draws=3, ns=[5, 9], pretrain_steps=50, scratch_steps=40)
    res = rst.fig3_experiment(**Q, cache=False)
    mus = np.asarray(Q["mus"], dtype=float)
    T, source, _, W0, rng = rst._fig3_start(Q["d"], Q["m"], Q["m_star"], mus, 2, Q["seed"])
    S, m, d = W0.shape
    Wp, _, pinfo = train_population(W0, np.full((S, m), 1e-7), source, lr=1.0, tol=1e-6,
                                    max_steps=50, max_time=1000.0, max_step=1.0)
    assert_same(res.pretrain, pinfo)
    rng.standard_normal((Q["gram_points"], d))                  # the Gram inputs
    for j, n in enumerate(Q["ns"]):
        X = rng.standard_normal((len(mus), 2, 3, n, d))
        for i in range(len(mus)):
            R = readout_transfer_risk(np.repeat(Wp[2 * i:2 * i + 2, None], 3, 1).reshape(-1, m, d),
                                      X[i].reshape(-1, n, d), repeat_teacher(T, 3))
            np.testing.assert_array_equal(res.R_lt[i, j], R.reshape(2, 3))
        Xs = rng.standard_normal((4, n, d))
        Ts = repeat_teacher(T, 2)
        ys = rst._targets(Xs, Ts.W, Ts.a)
        Ws, cs, info = train_samples(random_sphere((4, m, d), rng), np.full((4, m), 1e-7), Xs,
                                     ys, lr=1.0, tol=1e-6, max_steps=40, max_time=1000.0,
                                     max_step=1.0, record_every=10)
        assert_same(res.scratch[j], info)
        np.testing.assert_array_equal(res.R_sc[j], risk_np(Ws, cs / m, Ts).reshape(2, 2))


def test_cells_refuse_a_teacher_out_of_range():
    with pytest.raises(ValueError, match=r"teacher must be in \[0, 0\]"):
        rst.fig3_pretrain_cell(0, 1, 4, 6, 3, [0.0], 1, 1e-7, 1.0, 1e-6, 5, 10.0, 1.0)
    W = np.ones((1, 6, 4)) / 2.0
    with pytest.raises(ValueError, match=r"t must be in \[0, 0\]"):
        rst.fig3_n_cell(0, 1, [5], np.random.default_rng(0).bit_generator.state, W,
                        np.ones((1, 3, 4)) / 2.0, np.ones((1, 3)), 1, 1, 1e-7, 1.0, 1e-6, 5,
                        10.0, 1.0)


def test_linear_transfer_in_chunks_of_one_draw_gives_the_same_risks(fig3, one_thread, monkeypatch):
    monkeypatch.setattr(rst, "_LT_CHUNK", 1)          # one draw at a time
    np.testing.assert_array_equal(rst.fig3_experiment(**P, cache=False).R_lt, fig3.R_lt)


def _with_converged(res, flags):
    """``res`` with the scratch runs at each n marked converged or not (``flags`` per n)."""
    sc = [dataclasses.replace(i, converged=np.full(i.converged.shape, f))
          for i, f in zip(res.scratch, flags)]
    return dataclasses.replace(res, scratch=sc)


def test_scratch_law_on_all_and_on_converged_n(fig3):
    """Written out: mean and standard error over teachers and seeds of R_sc / Var f_t, the
    weighted fit of stats.fit_power_law, on every n or on the n whose runs all converged."""
    from transferkit.stats import fit_power_law
    ns = np.array([100, 200, 400, 800, 1600])
    rng = np.random.default_rng(3)
    R = np.exp(-0.8 * np.log(ns))[:, None, None] * (1 + 0.1 * rng.standard_normal((5, 2, 3)))
    info = fig3.scratch[0]
    res = dataclasses.replace(fig3, ns=ns, R_sc=R * fig3.teacher_var[0],
                              teacher_var=np.repeat(fig3.teacher_var[:1], 2),
                              scratch=[info] * 5)
    res = _with_converged(res, [True, True, True, False, False])
    Rv = R.reshape(5, -1)
    mean, se = Rv.mean(1), Rv.std(1, ddof=1) / np.sqrt(6)
    sr = rst.scratch_curve(res)
    np.testing.assert_allclose(sr.mean, mean, rtol=1e-14)
    np.testing.assert_allclose(sr.se, se, rtol=1e-12)
    assert sr.converged.tolist() == [True, True, True, False, False]
    every, conv = rst.scratch_law(res), rst.scratch_law(res, converged_only=True)
    A, nu, _, se_nu = fit_power_law(ns, mean, se)
    assert (every.A, every.nu, every.se_nu) == pytest.approx((A, nu, se_nu), rel=1e-12)
    A3, nu3, _, se3 = fit_power_law(ns[:3], mean[:3], se[:3])
    assert conv.ns.tolist() == [100, 200, 400]
    assert (conv.A, conv.nu, conv.se_nu) == pytest.approx((A3, nu3, se3), rel=1e-12)
    assert "converged runs only: nu = " in str(conv) and "(3 values)" in str(conv)
    two = rst.scratch_law(_with_converged(res, [True, True, False, False, False]),
                          converged_only=True)
    assert two.nu is None and two.A is None and two.ns.tolist() == [100, 200]
    assert "no fit, 2 value(s) of n qualify (100, 200" in str(two)


def test_scratch_law_refuses_bad_input(fig3):
    with pytest.raises(TypeError, match="res must be a Fig3Result"):
        rst.scratch_law({"R_sc": 1})
    with pytest.raises(TypeError, match="converged_only must be a bool"):
        rst.scratch_law(fig3, converged_only="yes")


def test_transfer_map_written_out(fig3):
    law = rst.scratch_law(dataclasses.replace(fig3, ns=np.array([5, 8, 13]),
                                              R_sc=np.concatenate([fig3.R_sc, fig3.R_sc[:1] / 2]),
                                              scratch=fig3.scratch + fig3.scratch[:1]))
    tm = rst.transfer_map(fig3, law)
    R_sc = (fig3.R_sc / fig3.teacher_var[None, :, None]).mean(axis=(1, 2))
    R_lt = (fig3.R_lt / fig3.teacher_var[None, None, :, None]).mean(axis=(2, 3))
    np.testing.assert_allclose(tm.T, R_sc[None, :] - R_lt, rtol=1e-14, atol=1e-15)
    pv = (fig3.perp_sim * fig3.teacher_norm[None, :] / fig3.teacher_var[None, :]).mean(1)
    np.testing.assert_allclose(tm.perp_var, pv, rtol=1e-14)
    for p, n in zip(pv, tm.n_star):             # n* solves perp_var = A n^(-nu)
        assert n == np.inf if p == 0 else law.A * n ** -law.nu == pytest.approx(p, rel=1e-10)


def test_transfer_map_refuses_bad_input(fig3):
    no_fit = rst.scratch_law(fig3, converged_only=True)       # 2 values of n: no fit
    with pytest.raises(ValueError, match="law must hold a fit"):
        rst.transfer_map(fig3, no_fit)
    with pytest.raises(TypeError, match="law must be a ScratchLaw"):
        rst.transfer_map(fig3, (1.0, 0.5))


def test_target_norm_rescales_the_drawn_readouts(fig3, one_thread):
    """``target_norm`` keeps every draw and rescales each teacher's readouts (and so its
    sources') to that L2 norm; quantities normalised by the teacher do not change."""
    res = rst.fig3_experiment(**dict(P, target_norm=2.0), cache=False)
    np.testing.assert_allclose(res.teacher_norm, 4.0, rtol=1e-12)
    np.testing.assert_array_equal(res.target.W, fig3.target.W)
    scale = 2.0 / np.sqrt(fig3.teacher_norm)                   # per teacher
    np.testing.assert_allclose(res.target.a, fig3.target.a * scale[:, None], rtol=1e-14)
    np.testing.assert_allclose(res.source.a, fig3.source.a * np.tile(scale, 2)[:, None], rtol=1e-14)
    np.testing.assert_allclose(res.perp_init, fig3.perp_init, rtol=1e-9)
    np.testing.assert_allclose(res.perp_theory, fig3.perp_theory, rtol=1e-9, atol=1e-12)
    assert res.target_norm == 2.0 and fig3.target_norm is None and fig3.abs_tol == 0.0


def test_absolute_tolerance_reaches_the_cells(fig3, one_thread):
    """An absolute tolerance above every final loss of ``fig3`` but below every initial one
    ends every run at it: pretraining and scratch runs stop sooner and converged."""
    losses = np.concatenate([fig3.pretrain.loss] + [i.loss for i in fig3.scratch])
    starts = np.concatenate([fig3.pretrain.loss0] + [i.loss0 for i in fig3.scratch])
    abs_tol = float(np.sqrt(losses.max() * starts.min()))
    assert losses.max() < abs_tol < starts.min()
    res = rst.fig3_experiment(**dict(P, abs_tol=abs_tol), cache=False)
    assert res.abs_tol == abs_tol
    for a, b in [(res.pretrain, fig3.pretrain)] + list(zip(res.scratch, fig3.scratch)):
        assert np.all(a.converged) and np.all(a.loss <= abs_tol) and np.all(a.steps <= b.steps)


@pytest.mark.parametrize("kw, name", [(dict(abs_tol=-1.0), "abs_tol"), (dict(abs_tol=np.inf), "abs_tol"),
                                      (dict(target_norm=0.0), "target_norm"),
                                      (dict(target_norm=np.nan), "target_norm"), (dict(tol=0.0), "tol")])
def test_fig3_refuses_bad_tolerances_and_norms(kw, name):
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        rst.fig3_experiment(**dict(P, **kw), cache=False)


def test_earlier_stops_are_the_experiments_with_those_rules(one_thread):
    """fig3_earlier_stops gives, for each earlier rule (a shorter horizon, an absolute
    tolerance, both), the result of fig3_experiment with that rule, bit for bit, and the
    result of the longer run itself; the rules stop runs at every stage (pretraining and
    scratch), in cells of two teachers."""
    Q = dict(P, teachers=2, ns=[5, 9], max_time=30.0)
    longer = rst.fig3_experiment(**Q, cache=False)
    abs_tol = float(np.quantile(np.concatenate([longer.pretrain.loss] + [i.loss for i in longer.scratch]), 0.7))
    earlier = {"t = 8": dict(max_time=8.0), "abs": dict(abs_tol=abs_tol),
               "both": dict(max_time=8.0, abs_tol=abs_tol)}
    res, runs = rst.fig3_earlier_stops(earlier, **Q, cache=False)
    assert_same(res, longer)
    assert list(runs) == list(earlier)
    for name, rule in earlier.items():
        alone = rst.fig3_experiment(**dict(Q, **rule), cache=False)
        assert_same(runs[name], alone)
        stopped_sooner = [(a.steps < b.steps).any() for a, b in
                          [(alone.pretrain, longer.pretrain)] + list(zip(alone.scratch, longer.scratch))]
        assert stopped_sooner[0] and any(stopped_sooner[1:]), name
    for bad, kind in ((dict(a=dict(max_time=60.0)), ValueError), (dict(a=dict(abs_tol=-1.0)), ValueError),
                      (dict(a=dict(lr=1.0)), ValueError), (dict(a=dict()), ValueError),
                      ([dict(max_time=8.0)], TypeError), (dict(a=8.0), TypeError)):
        with pytest.raises(kind, match="max_time|abs_tol|earlier"):
            rst.fig3_earlier_stops(bad, **Q, cache=False)


def test_a_rule_that_stops_nothing_reuses_the_fits(one_thread, monkeypatch):
    """A rule that stops no run earlier (here the same horizon, and an absolute tolerance no
    loss reaches) has the chapter's units and students bit for bit, so fig3_n_cell reuses
    their linear-transfer fits and scratch risks instead of computing them again: the same
    results as fig3_experiment with that rule, and no more fits or risks than without it."""
    Q = dict(P, ns=[5, 9], max_time=30.0)
    calls = {"lt": 0, "risk": 0}
    lt, risk = rst.readout_transfer_risk, rst.risk_np

    def count_lt(*a, **k):
        calls["lt"] += 1
        return lt(*a, **k)

    def count_risk(*a, **k):
        calls["risk"] += 1
        return risk(*a, **k)

    monkeypatch.setattr(rst, "readout_transfer_risk", count_lt)
    monkeypatch.setattr(rst, "risk_np", count_risk)
    alone = rst.fig3_experiment(**Q, cache=False)
    once = dict(calls)
    earlier = {"same horizon": dict(max_time=30.0), "unreached": dict(abs_tol=1e-300)}
    res, runs = rst.fig3_earlier_stops(earlier, **Q, cache=False)
    assert calls["lt"] - once["lt"] == once["lt"] and calls["risk"] - once["risk"] == once["risk"]
    assert_same(res, alone)
    for name, rule in earlier.items():
        assert_same(runs[name], rst.fig3_experiment(**dict(Q, **rule), cache=False))


@pytest.mark.parametrize("kw, match", [
    (dict(ns=[0]), r"^ns must be an integer in \[1, 2\*\*53\]"),
    (dict(ns=[10.5]), r"^ns must be an integer"), (dict(ns=[]), r"^ns must be a non-empty"),
    (dict(ns=[[10, 20]]), r"^ns must be a non-empty 1-d"),
    (dict(mus=[]), r"^mus must be a non-empty"), (dict(mus=[1.0]), r"^mus must be a non-empty 1-d sequence of numbers in \[0, 1\)"),
    (dict(mus=[np.nan]), r"^mus must be"), (dict(lr=0.0), r"^lr must be a number > 0 or inf"),
    (dict(max_time=np.nan), r"^max_time must be"), (dict(max_step=-1.0), r"^max_step must be"),
    (dict(pretrain_steps=-1), r"^pretrain_steps must be"), (dict(scratch_steps=1.5), r"^scratch_steps must be"),
    (dict(gram_points=0), r"^gram_points must be"), (dict(readout_init=np.inf), r"^readout_init must be"),
    (dict(ns=[10**12]), r"^ns=1000000000000 is too large"), (dict(m=10**6), r"^m=1000000 is too large")])
def test_fig3_experiment_refuses_bad_input_before_any_work(kw, match, monkeypatch):
    """Before, ns = [0] raised a ZeroDivisionError after pretraining had run, ns = [10.5]
    was truncated to 10, lr = 0 trained without moving and the other settings reached the
    trainers unchecked.  No sweep starts (``run`` is replaced by a tripwire)."""
    def tripwire(*a, **k):
        raise AssertionError("work started before the input was checked")
    monkeypatch.setattr(rst, "run", tripwire)
    args = dict(d=4, m=10, m_star=2, mus=[0.1], ns=[10], cache=False, progress=False)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        rst.fig3_experiment(**args)


def test_anchored_n_cell_fits_many_draws_a_few_at_a_time():
    """Many target sets at a small n: the cell builds the units, teachers and kernels of a
    few draws at a time.  Before, it repeated the units for every draw at once, and the
    risk's m x m kernel of every draw of a chunk sized by the features alone (n x m): here
    4000 x 500 x 100 units (1.6 GB) and 4000 kernels (8 GB), a MemoryError under the cap."""
    rng = np.random.default_rng(0)
    m, d, draws = 500, 100, 4000
    W = random_sphere((2, m, d), rng)                         # 2 lambdas, 1 teacher
    T = make_teachers(1, 10, d, rng)
    state = np.random.default_rng(1).bit_generator.state
    with memory_cap(2**30):
        R = rst.anchored_n_cell(0, 1, [1], state, W, T.W, T.a, draws)["R_lt"]
    assert R.shape == (1, draws) and np.all(np.isfinite(R)) and np.all(R >= 0)
