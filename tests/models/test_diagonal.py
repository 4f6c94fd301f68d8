"""Tests of transferkit.models.diagonal: gradient descent on diagonal linear networks reaches the
minimiser of paper 004's Eq. 22 as the step goes to zero; the convex solver; the
experiment runner; participation ratio and ENSD (App. G)."""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
import torch

from transferkit import experiments, models, stats, theory
from transferkit.models.descent import ConvergenceWarning, DivergenceError


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    B, n, D = 3, 8, 20
    X = rng.standard_normal((B, n, D))
    bt = np.zeros((B, D))
    bt[:, :2] = [1.0, -1.0]
    y = np.einsum("bnd,bd->bn", X, bt)
    w1 = np.abs(rng.standard_normal((B, D))) * 0.5 + 0.05  # a "pretrained" first layer
    return X, y, w1


def test_q_min_interpolant_is_feasible_and_minimal(problem):
    X, y, w1 = problem
    beta, res = models.diagonal.q_min_interpolant(X[0], y[0], w1[0], 0.1)
    assert res < 1e-12
    q0 = theory.penalties.diagonal_ptft_penalty(beta, w1[0], 0.1)
    # any other interpolant beta + null-space direction costs more
    rng = np.random.default_rng(1)
    _, _, Vt = np.linalg.svd(X[0])
    null = Vt[X.shape[1]:]
    for _ in range(20):
        v = rng.standard_normal(len(null)) @ null
        for t in (1e-3, 1e-1):
            assert theory.penalties.diagonal_ptft_penalty(beta + t * v, w1[0], 0.1) > q0
    # KKT: beta = c sinh(X^T lam / 2) for some lam, i.e. arcsinh(beta / c) in the row space
    c = w1[0] ** 2 + 0.01
    s = 2 * np.arcsinh(beta / c)
    lam, *_ = np.linalg.lstsq(X[0].T, s, rcond=None)
    np.testing.assert_allclose(X[0].T @ lam, s, atol=1e-7)


@pytest.mark.parametrize("init", ["stl", "ptft"])
def test_gradient_descent_reaches_the_eq22_minimiser_as_the_step_vanishes(problem, init, one_thread):
    """The distance to the minimiser of Eq. 22 is first order in the step and Richardson's
    extrapolation removes it.  The stopping error must stay well below the discretisation
    error (relative distance 3e-4..1.6e-3 at step 0.01 here): a relative loss of 1e-11 leaves
    a relative residual of sqrt(2e-11) ~ 4.5e-6; the extrapolated distance d0 is then at
    most 3.4 % of dist[0.01] (2 % with 1e-13, which took ~25 % more steps), well inside the
    bound 0.5, and the ratios stay 0.50 +- 0.002."""
    X, y, w1 = problem
    B, n, D = X.shape
    w1_0, w2_0 = (0.1, 0.1) if init == "stl" else (w1, 0.1)
    qmin = np.array([models.diagonal.q_min_interpolant(X[b], y[b], np.broadcast_to(w1_0, (B, D))[b], w2_0)[0]
                     for b in range(B)])
    betas = {}
    for h in (0.02, 0.01):
        st = models.diagonal.init_state(B, 1, D, w1_0, w2_0)
        res = models.diagonal.train_diagonal(st, X[:, None], y[:, None], np.full((B, 1), n), rel_step=h,
                       loss_tol=1e-11, max_steps=100_000)
        assert res.converged.all()
        betas[h] = res.beta[:, 0]
    dist = {h: np.linalg.norm(b - qmin, axis=-1) / np.linalg.norm(qmin, axis=-1)
            for h, b in betas.items()}
    # first-order convergence to the gradient-flow limit: halving the step halves the error
    # (the late, curvature-limited steps are not scaled by rel_step: ratio near, not at, 1/2)
    ratio = dist[0.01] / dist[0.02]
    assert np.all((ratio > 0.35) & (ratio < 0.7)), ratio
    assert np.all(dist[0.01] < 0.01)
    # Richardson extrapolation to step 0 lands on the minimiser of Eq. 22
    extrap = 2 * betas[0.01] - betas[0.02]
    d0 = np.linalg.norm(extrap - qmin, axis=-1) / np.linalg.norm(qmin, axis=-1)
    assert np.all(d0 < 0.5 * dist[0.01]), (d0, dist[0.01])


def test_linear_probe_keeps_the_first_layer(problem, one_thread):
    X, y, w1 = problem
    B, n, D = X.shape
    st = models.diagonal.init_state(B, 1, D, w1, 0.1)
    models.diagonal.train_diagonal(st, X[:, None], y[:, None], np.full((B, 1), n), train_first=False,
             loss_tol=1e-10, max_steps=50_000)
    np.testing.assert_array_equal(st.w1.cpu().numpy(), np.stack([w1, w1], 1))


def _padded_mtl_batch():
    """Two-task networks with different sample counts (rows of X and y padded with zeros):
    some converge at different steps, others stop at the step budget."""
    rng = np.random.default_rng(7)
    B, O, N, D = 6, 2, 14, 9
    n = np.array([[14, 3], [14, 6], [10, 9], [14, 14], [5, 2], [12, 7]], float)
    X = np.zeros((B, O, N, D))
    y = np.zeros((B, O, N))
    bt = np.zeros((O, D))
    bt[:, :3] = [[1.0, -0.5, 0.8], [1.0, 0.0, -0.7]]
    for b in range(B):
        for o in range(O):
            m = int(n[b, o])
            X[b, o, :m] = rng.standard_normal((m, D))
            y[b, o, :m] = X[b, o, :m] @ bt[o]
    return X, y, n


@pytest.mark.parametrize("train_first", [True, False])
def test_kernel_engine_takes_the_steps_of_the_torch_loop(train_first, one_thread):
    """The compiled kernel (each network to its own stop) and the batched torch loop: the same
    step counts, convergence flags and weights up to rounding, padded rows and networks
    stopped at the budget included; the kernel's result does not depend on its threads.  Both
    on the CPU, where the kernel runs (on a GPU machine too)."""
    X, y, n = _padded_mtl_batch()
    B, O, _, D = X.shape
    out = {}
    w1_0 = 0.1 if train_first else 0.3        # a frozen first layer of 0.1 converges too slowly
    for engine, threads in (("torch", 1), ("kernel", 1), ("kernel", 2)):
        torch.set_num_threads(threads)
        st = models.diagonal.init_state(B, O, D, w1_0, 0.1, device="cpu")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            res = models.diagonal.train_diagonal(st, X, y, n, train_first=train_first,
                                                 rel_step=0.05, loss_tol=1e-5, max_steps=5_000,
                                                 engine=engine)
        out[engine, threads] = res, [str(w.message) for w in caught], st
    torch.set_num_threads(1)
    (ref, wref, sref), (ker, wker, sker) = out["torch", 1], out["kernel", 1]
    assert 0 < ref.converged.sum() < B                 # both stopping reasons occur
    if train_first:                                    # networks stop at different steps
        assert len(set(ref.steps[ref.converged])) > 1
    np.testing.assert_array_equal(ker.steps, ref.steps)
    np.testing.assert_array_equal(ker.converged, ref.converged)
    assert wker == wref and len(wref) == 1             # the same ConvergenceWarning
    np.testing.assert_allclose(ker.beta, ref.beta, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ker.loss, ref.loss, rtol=1e-8, atol=1e-300)
    np.testing.assert_allclose(sker.w1.numpy(), sref.w1.numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(sker.w2.numpy(), sref.w2.numpy(), rtol=0, atol=1e-12)
    two = out["kernel", 2][0]
    np.testing.assert_array_equal(two.beta, ker.beta)
    np.testing.assert_array_equal(two.steps, ker.steps)
    if not train_first:
        np.testing.assert_array_equal(sker.w1.numpy(), np.full((B, 2, D), w1_0))


def test_train_diagonal_engines_refuse_and_diverge_alike(problem):
    X, y, _ = problem
    B, n, D = X.shape
    st = models.diagonal.init_state(B, 1, D, 0.1, 0.1)
    with pytest.raises(ValueError, match="engine"):
        models.diagonal.train_diagonal(st, X[:, None], y[:, None], np.full((B, 1), n),
                                       engine="numba")
    with pytest.raises(TypeError, match="^engine must be a string"):
        models.diagonal.train_diagonal(st, X[:, None], y[:, None], np.full((B, 1), n),
                                       engine=None)
    for engine in ("torch", "kernel"):
        # an overflowing loss is a DivergenceError on both engines, not a NaN result (the
        # kernel's weights on the CPU, where it runs; the torch loop's on the default device)
        dev = "cpu" if engine == "kernel" else None
        st = models.diagonal.init_state(B, 1, D, 0.1, 0.1, device=dev)
        with pytest.raises(DivergenceError, match="non-finite loss at step 0"):
            models.diagonal.train_diagonal(st, X[:, None], 1e160 * y[:, None],
                                           np.full((B, 1), n), engine=engine)
        # inputs whose second moments overflow are refused, naming X (not a LinAlgError)
        with pytest.raises(ValueError, match="X"):
            models.diagonal.train_diagonal(st, 1e200 * X[:, None], y[:, None],
                                           np.full((B, 1), n), engine=engine)


def test_run_tasks_shapes_and_determinism(one_thread):
    kw = dict(draws=2, n_aux=20, alpha=0.1, gamma=0.1, seed=3, max_steps=1_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a short run: shapes and seeds only
        a = experiments.diagonal_networks.run_tasks(10, 2, 1, [3, 6], **kw)
        b = experiments.diagonal_networks.run_tasks(10, 2, 1, [3, 6], **kw)
    for key in ("stl", "ptft", "mtl", "qmin_stl", "qmin_ptft"):
        assert getattr(a, key).beta.shape == (2, 2, 10)
        np.testing.assert_array_equal(getattr(a, key).beta, getattr(b, key).beta)
        assert getattr(a, key).risk.shape == (2, 2)
    for run in a.methods.values():
        assert run.steps.shape == run.converged.shape == (2, 2)
    assert list(a.methods) == ["stl", "ptft", "mtl"] and list(a.qmin) == ["stl", "ptft"]
    assert a.mtl_aux.shape == (2, 2, 10) and a.beta_pre.shape == (2, 10)
    assert np.all(a.qmin_ptft.residual < 1e-10)


def test_sparse_teachers_supports():
    rng = np.random.default_rng(0)
    ba, bm = experiments.diagonal_networks.sparse_teachers(30, 5, 2, rng)
    sa, sm = set(np.flatnonzero(ba)), set(np.flatnonzero(bm))
    assert len(sa) == len(sm) == 5 and len(sa & sm) == 2
    with pytest.raises(ValueError, match="^overlap"):
        experiments.diagonal_networks.sparse_teachers(30, 5, 6, rng)


def test_participation_ratio_and_ensd():
    rng = np.random.default_rng(0)
    n = 20_000
    X = rng.standard_normal((n, 10))  # 10 uncorrelated unit-variance units
    assert stats.participation_ratio(X) == pytest.approx(10, rel=0.02)
    assert stats.participation_ratio(X[:, :1] * [1, 2, 3]) == pytest.approx(1.0)  # rank one
    # the example of App. G: Y = five of X's units -> ENSD 5; independent units -> 0
    assert stats.ensd(X, X[:, :5]) == pytest.approx(5, rel=0.02)
    Z = rng.standard_normal((n, 5))
    assert stats.ensd(X, Z) < 0.05
    # a 1/sqrt(i) spectrum: PR = (sum 1/i)^2 / sum 1/i^2, exactly from the covariance
    lam = 1 / np.arange(1, 11)
    Y = rng.standard_normal((n, 10)) * np.sqrt(lam)
    assert stats.participation_ratio(Y) == pytest.approx(lam.sum() ** 2 / (lam ** 2).sum(), rel=0.03)
    with pytest.raises(ValueError, match="^X must"):
        stats.participation_ratio(np.ones(3))


def _moment_problem(draws=2, ns=(4, 8), D=12, k=2, n_aux=24, seed=1, device=None):
    data = experiments.diagonal_networks.task_data(seed, D, k, k, list(ns), draws, n_aux)
    jj = np.tile(np.arange(draws), len(ns))
    mom = models.diagonal.sample_moments(list(data.Xa) + list(data.Xm), list(data.ya) + list(data.ym),
                                         device=device)
    index = np.stack([jj, draws + np.arange(len(jj))], 1)
    return data, mom, index


def test_gram_trainer_with_the_fixed_rule_is_train_diagonal(one_thread):
    """train_diagonal_gram(grow=None) takes the steps of train_diagonal on the same MTL batch
    (same count per network) and lands on its weights up to rounding.

    The two take the same steps at any tolerance: 1e-4 (1e-8 before, 6x the steps) still
    stops the networks at different steps (~1.8k..5.6k), so the last one runs on after the
    others are compacted away, through both step-rule branches (relative cap early,
    curvature bound late) and both products (X for n = 4 < D/2, the Gram matrix for n = 8
    and the 24 auxiliary samples)."""
    data, mom, index = _moment_problem()
    ns, draws, D = [4, 8], 2, 12
    ref = experiments.diagonal_networks._train_mtl(data, ns, draws, 24, 0.1, 0.01, 1e-4, 50_000)
    st = models.diagonal.init_state(len(index), 2, D, 0.1, 0.1)
    res = models.diagonal.train_diagonal_gram(st, mom, index, rel_step=0.01, loss_tol=1e-4,
                                              max_steps=50_000, grow=None, engine="torch")
    assert ref.converged.all() and res.converged.all()
    assert mom.gram == (True, True, False, False, True, True)
    last, second = np.sort(ref.steps)[-2:][::-1]
    assert last > second                  # one network runs alone: compaction is exercised
    np.testing.assert_array_equal(res.steps, ref.steps)
    np.testing.assert_allclose(res.beta, ref.beta, rtol=0, atol=1e-10)


def test_gram_trainer_grown_step_follows_the_fixed_rule(one_thread):
    """The grown step (bold driver under the same relative cap) converges in fewer steps to
    within the discretisation error (~rel_step / 10 here) of the fixed rule's solution;
    compaction does not change the iterates.

    Loss tolerance 1e-6 (1e-8 before, 1.7x the fixed rule's steps): the distance between the
    two solutions is the discretisation error, 1.2e-4..4.7e-4 relative at either tolerance
    (stopping at 1e-6 moves it by < 15 %), so the bound is unchanged."""
    data, mom, index = _moment_problem()
    out = {}
    for grow, compact in ((None, 0.5), (1.1, 0.5), (1.1, 0.0)):
        st = models.diagonal.init_state(len(index), 2, 12, 0.1, 0.1)
        out[grow, compact] = models.diagonal.train_diagonal_gram(
            st, mom, index, rel_step=0.01, loss_tol=1e-6, max_steps=50_000, grow=grow,
            compact=compact, engine="torch")
    fixed, grown = out[None, 0.5], out[1.1, 0.5]
    assert fixed.converged.all() and grown.converged.all()
    assert grown.steps.max() < fixed.steps.max() / 2
    d = np.linalg.norm((grown.beta - fixed.beta).reshape(len(index), -1), axis=1)
    assert (d < 1e-3 * np.linalg.norm(fixed.beta.reshape(len(index), -1), axis=1)).all()
    np.testing.assert_array_equal(out[1.1, 0.0].steps, grown.steps)
    np.testing.assert_allclose(out[1.1, 0.0].beta, grown.beta, rtol=0, atol=1e-12)


@pytest.mark.parametrize("grow", [None, 1.1])
def test_gram_kernel_engine_takes_the_steps_of_the_torch_loop(grow, one_thread):
    """train_diagonal_gram's compiled kernel (each network to its own stop), its lockstep
    engine (compiled element-wise work around torch's products) and its batched torch loop,
    fixed and grown step: the same accepted steps and convergence flags, weights and losses
    up to rounding, over both kinds of moments (Gram matrices and samples), with networks
    stopped at the budget; the kernel's result does not depend on its threads.  All on the
    CPU, where the compiled engines run (on a GPU machine too)."""
    _, mom, index = _moment_problem(device="cpu")
    assert mom.gram == (True, True, False, False, True, True)
    budget = 2_500 if grow is None else 400      # two of the four networks converge by then
    out = {}
    for engine, threads in (("torch", 1), ("kernel", 1), ("kernel", 2), ("lockstep", 1)):
        torch.set_num_threads(threads)
        st = models.diagonal.init_state(len(index), 2, 12, 0.1, 0.1, device="cpu")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            res = models.diagonal.train_diagonal_gram(st, mom, index, rel_step=0.01,
                                                      loss_tol=1e-4, max_steps=budget,
                                                      grow=grow, engine=engine)
        out[engine, threads] = res, [str(w.message) for w in caught]
    torch.set_num_threads(1)
    (ref, wref), (ker, wker) = out["torch", 1], out["kernel", 1]
    assert 0 < ref.converged.sum() < len(index)       # both stopping reasons occur
    np.testing.assert_array_equal(ker.steps, ref.steps)
    np.testing.assert_array_equal(ker.converged, ref.converged)
    assert wker == wref and len(wref) == 1
    atol = 1e-12
    if grow is not None:
        # the grown step accepts a trial step whose loss is not above the current one: on a
        # plateau the two can be equal to rounding, and rounding then picks the branch.  The
        # yardstick is the torch loop's own spread under a perturbation of 1e-15 of the
        # initial weights (2.4e-10 here); the engines must agree to ten times it.
        st = models.diagonal.init_state(len(index), 2, 12, 0.1 * (1 + 1e-15), 0.1, device="cpu")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)     # as above: one stops
            pert = models.diagonal.train_diagonal_gram(st, mom, index, rel_step=0.01,
                                                       loss_tol=1e-4, max_steps=budget,
                                                       grow=grow, engine="torch")
        atol = max(atol, 10 * np.abs(pert.beta - ref.beta).max())
        assert atol < 1e-8
    for res, warned in ((ker, wker), out["lockstep", 1]):
        np.testing.assert_array_equal(res.steps, ref.steps)
        np.testing.assert_array_equal(res.converged, ref.converged)
        assert warned == wref
        np.testing.assert_allclose(res.beta, ref.beta, rtol=0, atol=atol)
        np.testing.assert_allclose(res.loss, ref.loss, rtol=1e-7, atol=1e-18)
    np.testing.assert_array_equal(out["kernel", 2][0].beta, ker.beta)


def test_gram_engines_refuse_alike():
    """On the CPU, where the compiled engines run (on a GPU machine too)."""
    _, mom, index = _moment_problem(device="cpu")
    st = models.diagonal.init_state(len(index), 2, 12, 0.1, 0.1, device="cpu")
    with pytest.raises(ValueError, match="engine"):
        models.diagonal.train_diagonal_gram(st, mom, index, engine="numba")
    # a non-finite loss under the fixed rule is a DivergenceError on every engine (moments
    # written by hand: sample_moments refuses targets whose mean square overflows)
    one = models.diagonal.sample_moments([np.eye(12)], [np.ones(12)], device="cpu")
    big = dataclasses.replace(one, yy=torch.tensor([math.inf], dtype=torch.float64))
    for engine in ("torch", "kernel", "lockstep"):
        st = models.diagonal.init_state(1, 1, 12, 0.1, 0.1, device="cpu")
        with pytest.raises(DivergenceError, match="non-finite loss at step 0"):
            models.diagonal.train_diagonal_gram(st, big, np.zeros((1, 1), int), grow=None,
                                                engine=engine)


def test_sample_moments_refuse_overflowing_inputs():
    rng = np.random.default_rng(0)
    for n in (3, 30):                     # held as X (2n < D) and as the Gram matrix
        x = 1e200 * rng.standard_normal((n, 10))
        with pytest.raises(ValueError, match=r"Xs\[0\] is too large"):
            models.diagonal.sample_moments([x], [np.zeros(n)])
        with pytest.raises(ValueError, match="ys is too large"):
            models.diagonal.sample_moments([x / 1e200], [1e160 * np.ones(n)])


def test_gram_trainer_refuses_bad_input():
    _, mom, index = _moment_problem()
    st = models.diagonal.init_state(len(index), 2, 12, 0.1, 0.1)
    for kw, name in ((dict(index=index[:, :1]), "index"), (dict(index=index + 100), "index"),
                     (dict(grow=1.0), "grow"), (dict(compact=1.0), "compact"),
                     (dict(rel_step=-1.0), "rel_step"), (dict(max_steps=0), "max_steps")):
        args = dict(index=index)
        args.update(kw)
        with pytest.raises(ValueError, match=name):
            models.diagonal.train_diagonal_gram(st, mom, **args)
    for bad in (False, "0.5", None):          # not a number: a TypeError, as train_units's
        with pytest.raises(TypeError, match=r"compact must be a number in \[0, 1\)"):
            models.diagonal.train_diagonal_gram(st, mom, index=index, compact=bad)
    with pytest.raises(ValueError, match="Xs"):
        models.diagonal.sample_moments([np.ones((2, 3))], [])
    with pytest.raises(ValueError, match="finite"):
        models.diagonal.sample_moments([np.full((2, 3), np.nan)], [np.ones(2)])
    with pytest.raises(ValueError, match="set 0"):
        models.diagonal.sample_moments([np.ones((2, 3))], [np.ones(3)])
