"""Tests of transferkit.models.relu: teachers, the ReLU trainer's gradients, k-means inertia
and the alignment score (paper 004, App. E.2)."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch

from transferkit import experiments, models, stats
from transferkit.models.descent import ConvergenceWarning, DivergenceError


def test_teacher_pair_cosines():
    rng = np.random.default_rng(0)
    th, a, main, b = models.relu.teacher_pair(12, 6, 0.9, 0.1, rng)
    np.testing.assert_allclose(np.sum(th * main, 1), 0.9, atol=1e-12)
    np.testing.assert_allclose(th @ th.T, np.eye(6), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(main, axis=1), 1, atol=1e-12)
    assert np.all(a == 1) and np.all(b == 0.1)
    with pytest.raises(ValueError, match="^rho"):
        models.relu.teacher_pair(12, 6, 1.5, 1.0, rng)
    with pytest.raises(ValueError, match="^d must"):
        models.relu.teacher_pair(8, 6, 0.5, 1.0, rng)


def test_train_gradient_matches_autograd(one_thread):
    rng = np.random.default_rng(1)
    X = torch.tensor(rng.standard_normal((2, 10, 4)))
    y = torch.tensor(rng.standard_normal((2, 10)))
    W = torch.tensor(rng.standard_normal((2, 5, 4)), requires_grad=True)
    a = torch.tensor(rng.standard_normal((2, 5)), requires_grad=True)
    loss = 0.5 * ((models.relu.forward(W, a, X) - y) ** 2).sum(1) / 10
    loss.sum().backward()
    lv, gW, ga = models.relu.loss_and_grads(W.detach(), a.detach(), X, y, torch.full((2,), 10.0,
                                                                          dtype=torch.float64))
    torch.testing.assert_close(lv, loss.detach())
    torch.testing.assert_close(ga, a.grad)
    torch.testing.assert_close(gW, W.grad)


def test_first_layer_gradient_is_the_masked_product_bit_for_bit(one_thread):
    """loss_and_grads masks r a_h with ReLU's backward kernel: the same bits as the product
    with the indicator 1[w_h . x > 0] written out (zero-padded samples and a dead unit,
    where w_h . x = 0, included)."""
    rng = np.random.default_rng(2)
    X = torch.tensor(rng.standard_normal((3, 40, 6)))
    X[:, 30:] = 0                                            # padding beyond n
    y = torch.tensor(rng.standard_normal((3, 40)))
    y[:, 30:] = 0
    W = torch.tensor(rng.standard_normal((3, 8, 6)))
    W[:, 0] = 0                                              # a dead unit: w . x = 0 exactly
    a = torch.tensor(rng.standard_normal((3, 8)))
    n = torch.full((3,), 30.0, dtype=torch.float64)
    _, gW, _ = models.relu.loss_and_grads(W, a, X, y, n)
    pre = X @ W.transpose(1, 2)
    r = (torch.relu(pre) * a[:, None, :]).sum(-1) - y
    mask = ((r[..., None] * a[:, None, :]) * (pre > 0)).transpose(1, 2) @ X / n[:, None, None]
    assert torch.equal(gW, mask)
    assert np.array_equal(gW.numpy().view(np.int64), mask.numpy().view(np.int64))


def test_train_fits_a_teacher_and_is_deterministic(one_thread):
    out = []
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            out.append(experiments.ptft_relu.run_sample_efficiency(8, 1.0, 1.0, [6], draws=1, width=8, units=2,
                                                n_aux=32, n_test=200, max_steps=1500))
    np.testing.assert_array_equal(out[0].ptft.error, out[1].ptft.error)
    assert np.all(np.isfinite(out[0].stl.error))
    assert out[0].stl.W.shape == (1, 1, 8, 8) and out[0].ptft.a.shape == (1, 1, 8)
    assert list(out[0].methods) == ["stl", "ptft"]


@pytest.mark.parametrize("engine", ["torch", "kernel"])
def test_train_units_compaction_keeps_the_iterates(engine, one_thread):
    """Dropping stopped networks from the working tensors is bookkeeping: the same weights,
    losses, steps and flags bit for bit as never compacting, and as each network trained
    alone; networks with fast and slow convergence and one at the step cap (the compiled
    engine ignores ``compact``: each network runs alone)."""
    rng = np.random.default_rng(7)
    B, N, d, H = 6, 12, 4, 5
    t = lambda x: torch.as_tensor(x, dtype=torch.float64)  # noqa: E731
    X, W0 = rng.standard_normal((B, N, d)), 0.3 * rng.standard_normal((B, H, d))
    y = np.maximum(X @ rng.standard_normal(d), 0)             # one teacher unit
    a0 = 0.3 * rng.standard_normal((B, H))
    n = np.array([12, 12, 8, 4, 12, 6], float)
    X[2, 8:], X[3, 4:], X[5, 6:] = 0, 0, 0
    y[2, 8:], y[3, 4:], y[5, 6:] = 0, 0, 0
    W0[4] *= 30                                               # a slow one: stops at the cap
    runs = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for c in (0.0, 0.5, 0.99):
            runs[c] = models.relu.train_units(t(W0), t(a0), t(X), t(y), n, loss_tol=1e-3,
                                              max_steps=3000, compact=c, engine=engine)
        alone = [models.relu.train_units(t(W0[b:b + 1]), t(a0[b:b + 1]), t(X[b:b + 1]),
                                         t(y[b:b + 1]), n[b:b + 1], loss_tol=1e-3,
                                         max_steps=3000, engine=engine) for b in range(B)]
    ref = runs[0.0]
    steps = np.asarray(ref[3])
    assert ref[4].any() and not ref[4].all() and len(set(steps.tolist())) > 2
    for c, out in runs.items():
        for k in range(5):
            torch.testing.assert_close(out[k], ref[k], rtol=0, atol=0, msg=f"compact={c}, {k}")
    for b, out in enumerate(alone):
        for k in range(5):
            torch.testing.assert_close(out[k][0], ref[k][b], rtol=0, atol=0, msg=f"network {b}, {k}")
    for bad, kind in ((1.0, ValueError), (-0.1, ValueError), (True, TypeError), ("0.5", TypeError)):
        with pytest.raises(kind, match=r"compact must be a number in \[0, 1\)"):
            models.relu.train_units(t(W0), t(a0), t(X), t(y), n, compact=bad)


def test_train_units_refuses_mismatched_shapes_and_counts():
    """Before any step, a ValueError naming the argument (the checks of train_units_mtl):
    before, n = 0 raised torch's own LinAlgError, n above N or of the wrong length trained
    silently, and mismatched shapes raised torch's RuntimeError."""
    rng = np.random.default_rng(0)
    t = lambda v: torch.as_tensor(v, dtype=torch.float64)  # noqa: E731
    W, a = t(rng.standard_normal((2, 3, 4))), t(rng.standard_normal((2, 3)))
    X, y = t(rng.standard_normal((2, 5, 4))), t(rng.standard_normal((2, 5)))
    n = np.array([5.0, 4.0])
    with pytest.raises(ValueError, match=r"^W must be \(B, H, d\) and a \(B, H\)"):
        models.relu.train_units(W, a[:, :2], X, y, n)
    with pytest.raises(ValueError, match=r"^W must be \(B, H, d\) and a \(B, H\)"):
        models.relu.train_units(W, a[..., None], X, y, n)
    with pytest.raises(ValueError, match=r"^X must be \(B, N, d\) = \(2, N, 4\) and y \(B, N\)"):
        models.relu.train_units(W, a, X, y[:, :3], n)
    with pytest.raises(ValueError, match=r"^X must be"):
        models.relu.train_units(W, a, X[..., :3], y, n)
    for bad in (np.array([0.0, 4.0]), np.array([6.0, 4.0]), np.array([5.0])):
        with pytest.raises(ValueError, match=r"^n must hold B = 2 sample counts in \[1, 5\]"):
            models.relu.train_units(W, a, X, y, bad)


def test_kmeans_inertia_and_alignment_on_planted_clusters():
    rng = np.random.default_rng(0)
    centres = np.linalg.qr(rng.standard_normal((10, 3)))[0].T  # 3 orthonormal directions
    W = np.repeat(centres, 8, axis=0) * rng.uniform(0.5, 2, (24, 1))
    W += 1e-4 * rng.standard_normal(W.shape)
    a = rng.choice([-1.0, 1.0], 24)
    inert1, _ = stats.kmeans_inertia(W, a, 1)
    inert3, C = stats.kmeans_inertia(W, a, 3)
    assert inert1 == pytest.approx(1.0)
    assert inert3 < 1e-6
    assert stats.alignment_score(C, centres) == pytest.approx(1.0, abs=1e-6)
    # units with zero output weight do not count
    a0 = a.copy()
    a0[:8] = 0
    assert stats.kmeans_inertia(W, a0, 2)[0] < 1e-6


def _mtl_problem(seed=3, B=4, d=4, H=8, sizes=(12, 7), small=0.05, init=0.3):
    """Two tasks on one shared first layer: inputs zero-padded per network, labels of two
    ReLU teachers (the second of small magnitude), small initial weights."""
    rng = np.random.default_rng(seed)
    t = lambda x: torch.as_tensor(x, dtype=torch.float64)  # noqa: E731
    Xs, ys, ns = [], [], []
    for o, (N, mag) in enumerate(zip(sizes, (1.0, small))):
        X = rng.standard_normal((B, N, d))
        n = np.array([N - (b % 3) for b in range(B)], float)
        for b in range(B):
            X[b, int(n[b]):] = 0
        y = mag * np.maximum(X @ rng.standard_normal(d), 0)
        Xs.append(t(X))
        ys.append(t(y))
        ns.append(n)
    W0, A0 = init * rng.standard_normal((B, H, d)), init * rng.standard_normal((B, H, 2))
    return t(W0), t(A0), Xs, ys, ns


def test_mtl_gradient_matches_autograd(one_thread):
    """Eq. 31's network on the sum of the tasks' mean losses: loss terms and gradients of
    mtl_loss_and_grads against autograd of the loss written out."""
    W0, A0, Xs, ys, ns = _mtl_problem()
    W, A = W0.clone().requires_grad_(True), A0.clone().requires_grad_(True)
    terms = [0.5 * ((models.relu.forward(W, A[..., o], X) - y) ** 2).sum(1) / torch.as_tensor(n)
             for o, (X, y, n) in enumerate(zip(Xs, ys, ns))]
    sum(terms).sum().backward()
    losses, gW, gA = models.relu.mtl_loss_and_grads(W0, A0, Xs, ys,
                                                    [torch.as_tensor(n) for n in ns])
    torch.testing.assert_close(losses, torch.stack(terms, 1).detach())
    torch.testing.assert_close(gW, W.grad)
    torch.testing.assert_close(gA, A.grad)


@pytest.mark.parametrize("engine", ["torch", "kernel"])
def test_mtl_with_one_task_is_train_units(engine, one_thread):
    """With one task the multi-task trainer takes train_units' steps: the same weights bit
    for bit at a common step cap (neither converged), on either engine."""
    W0, A0, Xs, ys, ns = _mtl_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        W1, a1, _, s1, c1 = models.relu.train_units(W0, A0[..., 0], Xs[0], ys[0], ns[0],
                                                    loss_tol=1e-14, max_steps=200, engine=engine)
        W2, A2, _, s2, c2 = models.relu.train_units_mtl(W0, A0[..., :1], Xs[:1], ys[:1], ns[:1],
                                                        loss_tol=1e-14, max_steps=200,
                                                        engine=engine)
    assert not c1.any() and not c2.any() and (s1 == 200).all() and (s2 == 200).all()
    torch.testing.assert_close(W2, W1, rtol=0, atol=0)
    torch.testing.assert_close(A2[..., 0], a1, rtol=0, atol=0)


@pytest.mark.parametrize("engine", ["torch", "kernel"])
def test_mtl_fits_every_task_to_its_own_tolerance(engine, one_thread):
    """A network stops only when each task's loss is below loss_tol times that task's mean
    squared label (the second task's labels are 5 times smaller); the returned losses are
    those of the returned weights; compaction is bookkeeping (the same results bit for bit);
    bad shapes are refused."""
    W0, A0, Xs, ys, ns = _mtl_problem(seed=4, small=0.2)
    runs = {c: models.relu.train_units_mtl(W0, A0, Xs, ys, ns, loss_tol=1e-3, max_steps=4000,
                                           compact=c, engine=engine) for c in (0.0, 0.9)}
    W, A, losses, steps, conv = runs[0.0]
    assert conv.all() and len(set(steps.tolist())) > 1
    nt = [torch.as_tensor(n) for n in ns]
    scale = torch.stack([(y ** 2).sum(1) / n for y, n in zip(ys, nt)], 1)
    assert ((losses / scale) <= 1e-3).all()
    # the torch loop returns its own losses; the kernel's differ from torch's in rounding
    torch.testing.assert_close(losses, models.relu.mtl_loss_and_grads(W, A, Xs, ys, nt)[0],
                               rtol=0 if engine == "torch" else 1e-12, atol=0)
    for k in range(5):
        torch.testing.assert_close(runs[0.9][k], runs[0.0][k], rtol=0, atol=0)
    with pytest.raises(ValueError, match="one entry per column of A"):
        models.relu.train_units_mtl(W0, A0, Xs[:1], ys[:1], ns[:1])
    with pytest.raises(ValueError, match=r"^W must be \(B, H, d\) and A"):
        models.relu.train_units_mtl(W0, A0[:2], Xs, ys, ns)
    with pytest.raises(ValueError, match=r"^Xs\[1\] must be"):
        models.relu.train_units_mtl(W0, A0, [Xs[0], Xs[1][:2]], ys, ns)
    with pytest.raises(ValueError, match=r"^Xs\[0\] must be"):
        models.relu.train_units_mtl(W0, A0, Xs, [ys[0][:, :3], ys[1]], ns)
    for bad in (ns[0][:2], np.zeros(4), ns[0] + 100):
        with pytest.raises(ValueError, match=r"^ns\[0\] must hold B = 4 sample counts"):
            models.relu.train_units_mtl(W0, A0, Xs, ys, [bad, ns[1]])


@pytest.mark.parametrize("arg", ["W", "a", "X", "y"])
def test_train_units_refuses_non_finite_input(arg):
    """A NaN or inf in the weights or the data is a ValueError naming it, before any step
    (before: NaN in X raised torch's LinAlgError from the curvature bound's eigh, inf in y
    a DivergenceError after the first loss); also for train_units_mtl's task lists."""
    rng = np.random.default_rng(1)
    t = lambda v: torch.as_tensor(v, dtype=torch.float64)  # noqa: E731
    args = dict(W=t(rng.standard_normal((2, 3, 4))), a=t(rng.standard_normal((2, 3))),
                X=t(rng.standard_normal((2, 5, 4))), y=t(rng.standard_normal((2, 5))))
    for bad in (np.nan, np.inf):
        kw = {k: v.clone() for k, v in args.items()}
        kw[arg].view(-1)[1] = bad
        with pytest.raises(ValueError, match=rf"^{arg} must be finite"):
            models.relu.train_units(kw["W"], kw["a"], kw["X"], kw["y"], np.array([5.0, 5.0]))
        if arg in ("X", "y"):
            name = "Xs[1]" if arg == "X" else "ys[1]"
            with pytest.raises(ValueError, match=rf"^{re.escape(name)} must be finite"):
                models.relu.train_units_mtl(
                    args["W"], torch.stack([args["a"], args["a"]], -1), [args["X"], kw["X"]],
                    [args["y"], kw["y"]], [np.array([5.0, 5.0])] * 2)


def _engine_runs(trainer, args, kw):
    """``trainer(*args, **kw)`` on the torch loop, and on the compiled kernel with one and two
    threads: ``{(engine, threads): (result, warning messages)}``."""
    out = {}
    for engine, threads in (("torch", 1), ("kernel", 1), ("kernel", 2)):
        torch.set_num_threads(threads)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            res = trainer(*[a.clone() if torch.is_tensor(a) else a for a in args], **kw,
                          engine=engine)
        out[engine, threads] = res, [str(w.message) for w in caught]
    torch.set_num_threads(1)
    return out


def _assert_engines_agree(out, B):
    """The kernel's steps, flags and warning equal the torch loop's, its weights and losses
    equal them to rounding (many steps, each rounding differently), and its result does not
    depend on its threads (bit for bit)."""
    (ref, wref), (ker, wker) = out["torch", 1], out["kernel", 1]
    W, A, loss, steps, conv = ref
    assert 0 < int(conv.sum()) < B and len(set(steps[conv].tolist())) > 1   # both stops occur
    torch.testing.assert_close(ker[3], steps, rtol=0, atol=0)
    torch.testing.assert_close(ker[4], conv, rtol=0, atol=0)
    assert wker == wref and len(wref) == 1
    torch.testing.assert_close(ker[0], W, rtol=0, atol=1e-11)
    torch.testing.assert_close(ker[1], A, rtol=0, atol=1e-11)
    torch.testing.assert_close(ker[2], loss, rtol=1e-8, atol=0)
    for k in range(5):
        torch.testing.assert_close(out["kernel", 2][0][k], ker[k], rtol=0, atol=0)


def test_units_kernel_takes_the_steps_of_the_torch_loop(one_thread):
    """train_units on the compiled kernel (each network to its own stop, on its own samples)
    and on the batched torch loop: the same steps and convergence flags, weights equal to
    rounding; zero-padded samples, networks of every sample count and one at the step cap."""
    rng = np.random.default_rng(11)
    B, N, d, H = 8, 40, 6, 10
    t = lambda x: torch.as_tensor(x, dtype=torch.float64)  # noqa: E731
    X = rng.standard_normal((B, N, d))
    n = np.array([40, 5, 12, 30, 40, 8, 20, 33], float)
    for b in range(B):
        X[b, int(n[b]):] = 0
    y = np.maximum(X @ rng.standard_normal((d, 3)), 0).sum(-1)
    W0, a0 = 0.1 * rng.standard_normal((B, H, d)), 0.1 * rng.standard_normal((B, H))
    W0[4] *= 20                                               # stops at the cap
    out = _engine_runs(models.relu.train_units, (t(W0), t(a0), t(X), t(y), n),
                       dict(loss_tol=1e-6, max_steps=4000))
    _assert_engines_agree(out, B)


def test_units_kernel_takes_the_steps_of_the_mtl_torch_loop(one_thread):
    """train_units_mtl likewise: two tasks of different sample counts and label scales, each
    to its own tolerance."""
    W0, A0, Xs, ys, ns = _mtl_problem(seed=5, B=6, small=0.2)
    W0[2] *= 8                                                # stops at the cap
    out = _engine_runs(models.relu.train_units_mtl, (W0, A0, Xs, ys, ns),
                       dict(loss_tol=1e-3, max_steps=4000))
    _assert_engines_agree(out, 6)


def test_units_engines_refuse_and_diverge_alike():
    """A bad ``engine`` is a ValueError naming it; ``"kernel"`` needs float64 tensors on the
    CPU (``"auto"`` falls back to torch); a step that overflows is a DivergenceError on both
    engines, not a NaN result."""
    rng = np.random.default_rng(2)
    t = lambda v, dt=torch.float64: torch.as_tensor(v, dtype=dt)  # noqa: E731
    W, a = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3))
    X, y = rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5))
    n = np.array([5.0, 4.0])
    with pytest.raises(ValueError, match="^engine must be 'auto', 'torch' or 'kernel'"):
        models.relu.train_units(t(W), t(a), t(X), t(y), n, engine="numba")
    with pytest.raises(TypeError, match="^engine must be a string"):
        models.relu.train_units(t(W), t(a), t(X), t(y), n, engine=3)
    f32 = [t(v, torch.float32) for v in (W, a, X, y)]
    with pytest.raises(ValueError, match="^engine='kernel' needs float64"):
        models.relu.train_units(*f32, n, engine="kernel")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert models.relu.train_units(*f32, n, max_steps=5)[0].dtype == torch.float32
    for engine in ("torch", "kernel"):
        with pytest.raises(DivergenceError, match="non-finite loss"):
            models.relu.train_units(t(W) * 1e100, t(a) * 1e100, t(X), t(y), n, lr_scale=1e3,
                                    engine=engine)
