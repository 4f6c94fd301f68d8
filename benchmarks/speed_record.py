"""Speed record: transferkit against the authors' protocol on a slice of the Fig. 1 grid.

Run with ``make bench`` or ``python benchmarks/speed_record.py [--quick] [--full-grid]``.

Both sides run in this one process on this machine, on the same cells of the Fig. 1 grid of
paper 000 (L = 2, d = 500, sigma = 0.2, alpha = 1e-5, 20 draws; default slice: theta = pi/3,
gamma = 0.5, 0.95, 1.5), with the *same* teachers, target samples and initial weights
(transferkit's random streams), so that the generalization errors are paired.

* **transferkit**: :func:`transferkit.experiments.linear_transfer.linear_transfer_cell` through
  :func:`transferkit.sweep.run` (no cache): pretraining once, then per gamma one scratch
  model per draw (gradient descent in whitened coordinates, curvature step, stopped at an
  excess loss of 1e-10) and linear
  transfer for all 19 angles of the book's grid at once.
* **authors' protocol** (paper 000 App. D as described in the issue): per (theta, n) cell,
  20 instances, each trained with plain full-batch gradient descent, torch autograd,
  ``torch.optim.SGD(lr=0.01)``, float32, for a fixed 5,000 epochs: pretraining on the
  population source loss, scratch training and last-layer (linear transfer) training; init
  scale 1e-5.  (App. D itself says lr 1e-3 and up to 1e5 steps.)

A full run of the authors' loop takes several minutes per cell here (hours for the grid), so its
*time* is measured on a few epochs of a few instances of each phase and extrapolated
linearly (the cost of an epoch does not change during training), and its *generalization
errors* are those of the same 5,000-epoch gradient-descent iterates computed by a batched
implementation with closed-form gradients (the same update, all instances in one tensor
program; the script checks that it reproduces the autograd loop's weights).  Everything
that is extrapolated is labelled as such in the output.

It also times one cell computed alone, as ``transferkit simulate`` does
(:func:`transferkit.experiments.deep_linear.simulate_transfer`: pretraining, then scratch
training, linear transfer and fine-tuning of all draws at one angle), against the authors'
cell with the same work: pretraining, scratch, last layer and their fine-tuning (all layers
from the pretrained weights, 5,000 epochs per instance, timed like the other phases; it
costs an epoch of scratch training). The ratio against the cell without fine-tuning, the
yardstick of issue 19 until 2026-11-28, is printed beside it.  ``--json PATH`` writes these
numbers for ``benchmarks/speed_table.py``.

Prints (a) the time and speed-up per cell, (b) the generalization errors of both beside the
exact finite-size theory, with the convergence of the authors' fixed-epoch runs, (c) the
time of the full 21 x 19 grid for both (extrapolated; ``--full-grid`` measures
transferkit's), and a short profile of where transferkit's time goes.
"""
from __future__ import annotations

import argparse
import cProfile
import math
import os
import pstats
import time

import numpy as np
import torch

import transferkit as tk
from transferkit import experiments, sweep, theory

# transferkit's random streams, so that both sides see the same draws
from transferkit.experiments.deep_linear import (
    DATA_STREAM,
    SCRATCH_STREAM,
    TEACHER_STREAM,
)
from transferkit.experiments.linear_transfer import FIG1
from transferkit.models.deep_linear import init_deep_linear
from transferkit.streams import keyed_rng

from _record import write_json  # benchmarks/ is on sys.path

#: The chapter's preset (notebooks/linear_transfer.py: ``experiments.linear_transfer.FIG1[SCALE]``);
#: the speed record runs its ``paper`` entry.  No private copy of the chapter's parameters.
PRESETS = FIG1
#: The chapter notebook whose preset and experiment function this benchmark runs.
CHAPTER = "linear_transfer"
#: The chapter's experiment, cell by cell (the cell function of
#: :func:`transferkit.experiments.linear_transfer.linear_transfer_grid`, swept here without cache).
EXPERIMENT = experiments.linear_transfer.linear_transfer_cell
BOOK = PRESETS["paper"]
BOOK_GAMMAS = np.array(BOOK.gammas)
BOOK_THETAS = np.array(BOOK.thetas)
ALPHA, SIGMA, DEPTH = BOOK.alpha, BOOK.sigma, BOOK.depth
EPOCHS, LR = 5000, 0.01  # the authors' protocol, not the chapter's
CONV_TOL = 1e-6          # App. D: "until the training loss reaches 1e-6"


# ---------------------------------------------------------------------------
# the authors' protocol
# ---------------------------------------------------------------------------


def cell_data(pre, d, gamma, theta, sigma, draws, seed):
    """Target samples of one cell, exactly as transferkit draws them (float64 numpy)."""
    n = tk.experiments.deep_linear.sample_size(gamma, d)
    bs, nu = pre.beta_s.cpu().numpy(), pre.nu.cpu().numpy()
    beta_t = math.cos(theta) * bs + math.sin(theta) * nu
    X, y = [], []
    for b in range(draws):
        rng = keyed_rng(seed, b, DATA_STREAM, n)
        Xb = rng.standard_normal((n, d))
        eps = sigma * rng.standard_normal(n)
        X.append(Xb)
        y.append(Xb @ beta_t[b] + eps)
    return n, np.stack(X), np.stack(y), beta_t


def initial_weights(d, draws, seed, purpose, n=0):
    """alpha-scale LeCun initialisation, transferkit's streams, as float32 (B, d, d), (B, d, 1)."""
    W = init_deep_linear(d, DEPTH, ALPHA, [keyed_rng(seed, b, purpose, n) for b in range(draws)],
                         device=torch.device("cpu"), dtype=torch.float32)
    return W[0], W[1]


def autograd_phase(phase, W1, W2, X=None, y=None, beta_s=None, epochs=EPOCHS, lr=LR):
    """The authors' loop for ONE instance: autograd + torch.optim.SGD, fixed epochs.

    ``phase``: ``"pretrain"`` (population source loss), ``"scratch"`` and ``"finetune"``
    (all layers on the target sample; the same loop, started from random or from pretrained
    weights), ``"linear"`` (the last layer only)."""
    W1 = W1.clone().requires_grad_(phase != "linear")
    W2 = W2.clone().requires_grad_()
    opt = torch.optim.SGD([W2] if phase == "linear" else [W1, W2], lr=lr)
    for _ in range(epochs):
        opt.zero_grad()
        if phase == "pretrain":
            loss = 0.5 * ((W1 @ W2 - beta_s) ** 2).sum()          # population loss, E xx^T = I
        else:
            loss = 0.5 * ((X @ W1 @ W2 - y) ** 2).mean()           # (1/2n) ||X W1 W2 - y||^2
        loss.backward()
        opt.step()
    return W1.detach(), W2.detach()


def batched_gd(phase, W1, W2, X=None, y=None, beta_s=None, epochs=EPOCHS, lr=LR):
    """The same iterates for all instances at once, closed-form gradients (no autograd).

    With u = W1 W2 and g the gradient in u (u - beta_s, or X^T (X u - y) / n):
    dW1 = g W2^T, dW2 = W1^T g, both at the current point, as SGD steps them.
    """
    W1, W2 = W1.clone(), W2.clone()
    if phase == "linear":
        F = X @ W1                                                  # frozen features
        n = X.shape[1]
        for _ in range(epochs):
            W2 -= lr * (F.transpose(1, 2) @ (F @ W2 - y)) / n
        return W1, W2
    n = None if phase == "pretrain" else X.shape[1]
    if n is not None and n > X.shape[2]:          # g = (X^T X / n) u - X^T y / n: d x d, not n x d
        S, c = X.transpose(1, 2) @ X / n, X.transpose(1, 2) @ y / n
        grad = lambda u: S @ u - c                                     # noqa: E731
    elif n is not None:
        grad = lambda u: X.transpose(1, 2) @ (X @ u - y) / n             # noqa: E731
    else:
        grad = lambda u: u - beta_s                                    # noqa: E731
    for _ in range(epochs):
        u = W1 @ W2
        g = grad(u)
        gW2 = W1.transpose(1, 2) @ g
        W1.baddbmm_(g, W2.transpose(1, 2), alpha=-lr)
        W2 -= lr * gW2
    return W1, W2


def summarise(X, y, beta_t, b_sc, b_lt):
    """Risks, and how far scratch training is from its limit X^+ y (float64)."""
    b_mn = np.stack([np.linalg.lstsq(Xb, yb, rcond=None)[0] for Xb, yb in zip(X, y)])
    loss = lambda b: ((np.einsum("bnd,bd->bn", X, b) - y) ** 2).mean(1) / 2  # noqa: E731
    return {"scratch": ((b_sc - beta_t) ** 2).sum(1), "linear": ((b_lt - beta_t) ** 2).sum(1),
            "minnorm": ((b_mn - beta_t) ** 2).sum(1),
            "scratch_excess": loss(b_sc) - loss(b_mn),
            "scratch_dist": np.linalg.norm(b_sc - b_mn, axis=1)}


def authors_cell(seed, W_pre, d, X, y, beta_t, epochs):
    """The authors' protocol on one cell, batched iterates (pretrained weights given)."""
    X32 = torch.as_tensor(X, dtype=torch.float32)
    y32 = torch.as_tensor(y, dtype=torch.float32)[..., None]
    W1, W2 = batched_gd("linear", *W_pre, X=X32, y=y32, epochs=epochs)     # last layer only
    b_lt = (W1 @ W2)[..., 0].double().numpy()
    n = X.shape[1]
    W1, W2 = batched_gd("scratch", *initial_weights(d, X.shape[0], seed, SCRATCH_STREAM, n),
                        X=X32, y=y32, epochs=epochs)
    b_sc = (W1 @ W2)[..., 0].double().numpy()
    return summarise(X, y, beta_t, b_sc, b_lt)


def authors_cell_autograd(seed, d, X, y, beta_t, beta_s, epochs):
    """The authors' loop itself, instance by instance, all three phases (``--authors-full``)."""
    B, n = X.shape[:2]
    W1p, W2p = initial_weights(d, B, seed, TEACHER_STREAM, 1)
    W1s, W2s = initial_weights(d, B, seed, SCRATCH_STREAM, n)
    X32 = torch.as_tensor(X, dtype=torch.float32)
    y32 = torch.as_tensor(y, dtype=torch.float32)[..., None]
    bs = torch.as_tensor(beta_s, dtype=torch.float32)[..., None]
    b_sc, b_lt = [], []
    t_ft = 0.0
    for i in range(B):
        P1, P2 = autograd_phase("pretrain", W1p[i], W2p[i], beta_s=bs[i], epochs=epochs)
        L1, L2 = autograd_phase("linear", P1, P2, X=X32[i], y=y32[i], epochs=epochs)
        S1, S2 = autograd_phase("scratch", W1s[i], W2s[i], X=X32[i], y=y32[i], epochs=epochs)
        t0 = time.perf_counter()
        autograd_phase("finetune", P1, P2, X=X32[i], y=y32[i], epochs=epochs)
        t_ft += time.perf_counter() - t0
        b_lt.append((L1 @ L2)[:, 0].double().numpy())
        b_sc.append((S1 @ S2)[:, 0].double().numpy())
    return summarise(X, y, beta_t, np.stack(b_sc), np.stack(b_lt)), t_ft


def time_autograd(d, ns, draws, seed, pre, instances, epochs, sigma=SIGMA, block=10):
    """Seconds per epoch per instance of each phase of the authors' loop.

    Each phase is timed on ``instances`` instances for ``epochs`` epochs, in blocks of
    ``block`` epochs after a warm-up; the fastest block is kept (the least disturbed by
    other processes on a shared machine; an epoch costs the same throughout training).
    """
    W1p, W2p = initial_weights(d, instances, seed, TEACHER_STREAM, 1)
    bs = torch.as_tensor(pre.beta_s[:instances].cpu().numpy(), dtype=torch.float32)[..., None]

    def fastest(phase, A, B, **kw):
        best = np.inf
        for i in range(instances):
            kwi = {k: (v[i] if k == "beta_s" else v) for k, v in kw.items()}
            autograd_phase(phase, A[i], B[i], epochs=2, **kwi)                # warm-up
            for _ in range(max(1, epochs // block)):
                t0 = time.perf_counter()
                autograd_phase(phase, A[i], B[i], epochs=block, **kwi)
                best = min(best, (time.perf_counter() - t0) / block)
        return float(best)

    out = {"pretrain": fastest("pretrain", W1p, W2p, beta_s=bs), "scratch": {}, "linear": {},
           "finetune": {}}
    for n in ns:
        rng = np.random.default_rng([seed, n])
        X = torch.as_tensor(rng.standard_normal((n, d)), dtype=torch.float32)
        y = X @ bs[0] + sigma * torch.as_tensor(rng.standard_normal((n, 1)), dtype=torch.float32)
        W1s, W2s = initial_weights(d, instances, seed, SCRATCH_STREAM, n)
        out["scratch"][n] = fastest("scratch", W1s, W2s, X=X, y=y)
        out["linear"][n] = fastest("linear", W1p, W2p, X=X, y=y)
        # all layers from the pretraining start (an epoch costs what it costs whatever the
        # weights: the same products as scratch training)
        out["finetune"][n] = fastest("finetune", W1p, W2p, X=X, y=y)
    return out


def check_batched_matches_autograd(d, seed, pre, epochs=30):
    """Max relative difference of the end-to-end vectors, autograd loop vs batched iterates.

    Two instances, every phase, n < d and n > d (the batched scratch update uses X^T X / n
    when n > d), from a point where the weights are O(1) so that any difference shows.
    """
    worst = 0.0
    bs = torch.as_tensor(pre.beta_s[:2].cpu().numpy(), dtype=torch.float32)[..., None]
    for n in (d // 2, 3 * d // 2):
        W1, W2 = initial_weights(d, 2, seed, SCRATCH_STREAM, n)
        W1 = W1 + 0.5 * bs @ bs.transpose(1, 2)
        W2 = W2 + 0.5 * bs
        rng = np.random.default_rng([seed, n, 1])
        X = torch.as_tensor(rng.standard_normal((2, n, d)), dtype=torch.float32)
        y = X @ bs + SIGMA * torch.as_tensor(rng.standard_normal((2, n, 1)), dtype=torch.float32)
        for phase in ("pretrain", "scratch", "linear"):
            kw = dict(beta_s=bs) if phase == "pretrain" else dict(X=X, y=y)
            B1, B2 = batched_gd(phase, W1, W2, epochs=epochs, **kw)
            for i in range(2):
                kwi = dict(beta_s=bs[i]) if phase == "pretrain" else dict(X=X[i], y=y[i])
                A1, A2 = autograd_phase(phase, W1[i], W2[i], epochs=epochs, **kwi)
                a, b = (A1 @ A2).ravel(), (B1[i] @ B2[i]).ravel()
                worst = max(worst, float((a - b).norm() / a.norm()))
    return worst


# ---------------------------------------------------------------------------
# reporting helpers
# ---------------------------------------------------------------------------


def ms(x):
    if x < 1:
        return f"{1e3 * x:.0f} ms"
    return f"{x:.2f} s" if x < 600 else f"{x / 60:.1f} min" if x < 7200 else f"{x / 3600:.1f} h"


def mean_se(x):
    x = np.asarray(x, float)
    if not np.isfinite(x).all():
        return "inf"
    return f"{x.mean():.4f} ± {x.std(ddof=1) / np.sqrt(x.size):.4f}"


def fit_linear(ns, ts):
    """Cost model t(n) = a + b n through the measured points (constant for one point)."""
    ns, ts = np.asarray(ns, float), np.asarray(ts, float)
    if ns.size == 1:
        return lambda n: ts[0] * np.ones_like(np.asarray(n, float))
    b, a = np.polyfit(ns, ts, 1)
    return lambda n: np.maximum(a + b * np.asarray(n, float), ts.min() * 0.5)


STAGES = [  # (label, file, function, "cum" or "own" time): experiments/ and models/deep_linear.py
    ("simulate_grid's own code (numpy draws of X)", "deep_linear.py", "simulate_grid", "own"),
    ("eigendecomposition of X", "deep_linear.py", "empirical_objective", "cum"),
    ("scratch initialisation", "deep_linear.py", "init_deep_linear", "cum"),
    ("scratch training (whitened gradient descent)", "deep_linear.py", "gradient_descent", "cum"),
    ("linear transfer, 19 angles", "deep_linear.py", "linear_transfer", "cum"),
    ("relabelling the targets", "deep_linear.py", "relabel", "cum"),
]


def profile_row(d, gamma, draws, seed, top=8):
    """cProfile of one transferkit row (one gamma, all angles), pretraining memoised."""
    prof = cProfile.Profile()
    prof.enable()
    experiments.linear_transfer.linear_transfer_cell(d=d, gamma=gamma, theta=BOOK_THETAS, sigma=SIGMA, depth=DEPTH,
                               draws=draws, seed=seed, alpha=ALPHA)
    prof.disable()
    st = pstats.Stats(prof)
    rows, stages = [], {label: 0.0 for label, *_ in STAGES}
    for (file, _line, name), (_cc, nc, tt, ct, _callers) in st.stats.items():
        where = os.path.basename(file) if file != "~" else ""
        rows.append((tt, nc, f"{where}:{name}" if where else name))
        for label, f, fn, kind in STAGES:
            if name == fn and where == f:
                stages[label] += ct if kind == "cum" else tt
    rows.sort(reverse=True)
    return st.total_tt, stages, rows[:top]


# ---------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="a check that the script works: 4 draws, 2 cells, fewer timed epochs")
    ap.add_argument("--d", type=int, default=BOOK.d)
    ap.add_argument("--draws", type=int, default=None, help=f"draws per cell (default the preset's, {BOOK.draws})")
    ap.add_argument("--gammas", type=float, nargs="+", default=None,
                    help="gammas of the slice (default 0.5 0.95 1.5)")
    ap.add_argument("--theta", type=float, default=math.pi / 3,
                    help="angle of the slice (rounded to the book's grid)")
    ap.add_argument("--epochs", type=int, default=EPOCHS,
                    help="epochs of the authors' runs whose errors are reported (default 5000)")
    ap.add_argument("--timed-epochs", type=int, default=None,
                    help="epochs of the autograd loop timed per instance, phase and n")
    ap.add_argument("--timed-instances", type=int, default=2)
    ap.add_argument("--authors-full", action="store_true",
                    help="run the authors' autograd loop in full (all instances, all epochs; "
                         "minutes per cell) instead of timing a few epochs and extrapolating")
    ap.add_argument("--full-grid", action="store_true",
                    help="measure transferkit's full 21 x 19 grid instead of extrapolating it")
    ap.add_argument("--repeat", type=int, default=None,
                    help="runs of transferkit's slice; the fastest is reported (default 2, quick 1)")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--scale", choices=["paper"], default="paper",
                    help="the chapter's preset: paper only (the record is a paper-scale figure)")
    ap.add_argument("--json", default=None,
                    help="write the one-cell timings here (read by benchmarks/speed_table.py)")
    args = ap.parse_args()
    tk.models.device.use_threads()               # the chapters' count (TRANSFERKIT_THREADS)
    d, theta, epochs, seed = args.d, args.theta, args.epochs, BOOK.seed
    draws = args.draws or (4 if args.quick else BOOK.draws)
    gammas = args.gammas or ([0.5, 1.5] if args.quick else [0.5, 0.95, 1.5])
    timed_epochs = args.timed_epochs or (20 if args.quick else 50)
    repeat = args.repeat or (1 if args.quick else 2)
    ns = [tk.experiments.deep_linear.sample_size(g, d) for g in gammas]
    j = int(np.argmin(np.abs(BOOK_THETAS - theta)))
    theta = float(BOOK_THETAS[j])
    n_cells = len(BOOK_GAMMAS) * len(BOOK_THETAS)
    print(f"speed record: d = {d}, L = {DEPTH}, sigma = {SIGMA}, alpha = {ALPHA:g}, {draws} draws "
          f"per cell; slice theta = {theta:.4f} (pi/3), gamma = {gammas} (n = {ns})")
    print(f"machine: {os.cpu_count()} cores, torch {torch.__version__} with "
          f"{torch.get_num_threads()} threads, device {tk.models.device.default_device()}, "
          f"load average {os.getloadavg()[0]:.2f} (a shared machine: timings are noisy)")

    # ------------------------------------------------------------- transferkit
    # every timing of transferkit is the fastest of --repeat runs (a shared machine is noisy)
    pre = experiments.deep_linear.pretrain_cached(d, DEPTH, draws, seed, ALPHA)        # memoised: the cells reuse it
    t_pre = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        tk.pretrain(d, DEPTH, draws, seed=seed, alpha=ALPHA, progress=False)
        t_pre = min(t_pre, time.perf_counter() - t0)
    # one cell alone, as `transferkit simulate` computes it (pretraining included, nothing
    # memoised: simulate_transfer pretrains afresh)
    one_s = {}
    for g, n in zip(gammas, ns):
        one_s[n] = np.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            tk.experiments.deep_linear.simulate_transfer(d, g, theta, SIGMA, depth=DEPTH, draws=draws,
                                                         seed=seed, alpha=ALPHA)
            one_s[n] = min(one_s[n], time.perf_counter() - t0)
    row_s = np.inf
    for _ in range(repeat):
        res = sweep.run(experiments.linear_transfer.linear_transfer_cell, sweep.Grid(gamma=gammas, theta=BOOK_THETAS),
                        fixed=dict(d=d, sigma=SIGMA, depth=DEPTH, draws=draws, seed=seed,
                                   alpha=ALPHA),
                        vectorize="theta", cache=False, desc="transferkit rows")
        row_s = np.minimum(row_s, res.seconds)          # per gamma: one row of 19 angles

    # ------------------------------------------------------------- authors' protocol
    print(f"timing the authors' autograd loop: {timed_epochs} epochs x {args.timed_instances} "
          f"instances per phase and n ...", flush=True)
    tim = time_autograd(d, ns, draws, seed, pre, args.timed_instances, timed_epochs)
    auth_cell = {n: draws * EPOCHS * (tim["pretrain"] + tim["scratch"][n] + tim["linear"][n])
                 for n in ns}
    # the same cell with the authors' fine-tuning (all layers from the pretrained weights,
    # 5,000 epochs per instance), the work `transferkit simulate` does too
    auth_ft = {n: draws * EPOCHS * tim["finetune"][n] for n in ns}
    auth_how = f"extrapolated from the fastest of {timed_epochs // 10} blocks of 10 timed epochs x {args.timed_instances} instances"
    worst = check_batched_matches_autograd(d, seed, pre)
    W1p, W2p = initial_weights(d, draws, seed, TEACHER_STREAM, 1)
    bs32 = torch.as_tensor(pre.beta_s.cpu().numpy(), dtype=torch.float32)[..., None]
    print(f"running the authors' protocol on the slice ({epochs} epochs, "
          f"{'autograd loop' if args.authors_full else 'batched iterates'}) ...", flush=True)
    t0 = time.perf_counter()
    W_pre = batched_gd("pretrain", W1p, W2p, beta_s=bs32, epochs=epochs)
    t_batched = {"pretrain": time.perf_counter() - t0}
    pre_err = float(((W_pre[0] @ W_pre[1])[..., 0] - bs32[..., 0]).norm(dim=1).max())
    auth = {}
    for g, n in zip(gammas, ns):
        _, X, y, bt = cell_data(pre, d, g, theta, SIGMA, draws, seed)
        t0 = time.perf_counter()
        if args.authors_full:
            auth[n], t_ft = authors_cell_autograd(seed, d, X, y, bt, pre.beta_s.cpu().numpy(),
                                                  epochs)
            auth_cell[n] = (time.perf_counter() - t0 - t_ft) * EPOCHS / epochs
            auth_ft[n] = t_ft * EPOCHS / epochs
            auth_how = "measured" if epochs == EPOCHS else f"measured over {epochs} epochs, scaled"
        else:
            auth[n] = authors_cell(seed, W_pre, d, X, y, bt, epochs)
        t_batched[n] = time.perf_counter() - t0

    # ------------------------------------------------------------- (a) time per cell
    print(f"\n(a) time per (gamma, theta) cell, {draws} draws each")
    print(f"    authors' loop, seconds per instance and epoch: pretraining {1e3 * tim['pretrain']:.2f} ms; "
          + "; ".join(f"n = {n}: scratch {1e3 * tim['scratch'][n]:.2f} ms, last layer "
                      f"{1e3 * tim['linear'][n]:.2f} ms, fine-tuning {1e3 * tim['finetune'][n]:.2f} ms"
                      for n in ns))
    print(f"    authors per cell = {draws} instances x {EPOCHS} epochs x (pretraining + scratch + last "
          f"layer), {auth_how}; transferkit: pretraining {ms(t_pre)} once per grid")
    print(f"    {'gamma':>6} {'n':>5} | {'authors':>9} | {'transferkit alone':>17} {'speed-up':>8} | "
          f"{'tk in grid':>10} {'speed-up':>8} | {'tk scratch steps med/max':>24}")
    for i, (g, n) in enumerate(zip(gammas, ns)):
        alone = t_pre + row_s[i]
        in_grid = t_pre / n_cells + row_s[i] / len(BOOK_THETAS)
        steps = res["scratch_steps"][i, j]
        print(f"    {g:6.2f} {n:5d} | {ms(auth_cell[n]):>9} | {ms(alone):>17} "
              f"{auth_cell[n] / alone:7.0f}x | {ms(in_grid):>10} {auth_cell[n] / in_grid:7.0f}x | "
              f"{int(np.median(steps)):>11d} / {int(steps.max()):<6d} (authors: {EPOCHS})")
    print(f"    'alone': pretraining + the cell's whole gamma row (all 19 angles: an upper bound for "
          f"one cell); 'in grid': pretraining / {n_cells} + row / 19, the cost of a cell within Fig. 1.")
    print(f"    one cell computed alone as `transferkit simulate` does (pretraining, scratch, linear "
          f"transfer and fine-tuning at theta = {theta:.4f}), against the authors' cell with their "
          f"fine-tuning (the same work) and, in brackets, without it: "
          + "; ".join(f"n = {n}: {ms(one_s[n])}, {(auth_cell[n] + auth_ft[n]) / one_s[n]:,.0f}x "
                      f"({auth_cell[n] / one_s[n]:,.0f}x)" for n in ns))
    if args.json:
        write_json(args.json, dict(
            scale=args.scale, quick=bool(args.quick), d=d, depth=DEPTH, draws=draws,
            theta=theta, epochs=EPOCHS, authors_how=auth_how,
            cells=[dict(gamma=float(g), n=int(n), authors_s=float(auth_cell[n]),
                        simulate_s=float(one_s[n]), simulate_ratio=float(auth_cell[n] / one_s[n]),
                        authors_ft_s=float(auth_cell[n] + auth_ft[n]),
                        simulate_ratio_ft=float((auth_cell[n] + auth_ft[n]) / one_s[n]),
                        row_alone_s=float(t_pre + row_s[i]),
                        in_grid_s=float(t_pre / n_cells + row_s[i] / len(BOOK_THETAS)))
                   for i, (g, n) in enumerate(zip(gammas, ns))]))
    if not args.authors_full:
        scale = EPOCHS / epochs
        print("    for comparison, the authors' protocol as batched iterates (same updates, all "
              f"instances in one tensor program, pretraining shared): pretraining "
              f"{ms(t_batched['pretrain'] * scale)}, "
              + ", ".join(f"n = {n}: {ms(t_batched[n] * scale)}" for n in ns)
              + ": what batching alone buys, without transferkit's step size, stopping rule and "
                "eigenbasis")

    # ------------------------------------------------------------- (b) errors
    print(f"\n(b) generalization errors ||beta_hat - beta_t||^2 at theta = {theta:.4f}, mean ± s.e. over "
          f"{draws} draws (both sides: same teachers, target samples and initial weights)")
    if epochs != EPOCHS:
        print(f"    NOTE: the authors' runs below stop after {epochs} epochs, not {EPOCHS} (--epochs)")
    if not args.authors_full:
        print(f"    authors' errors from batched iterates, which reproduce the autograd loop to a "
              f"relative {worst:.1e} (30 epochs, float32, n < d and n > d)")
    print(f"    authors' pretraining after {epochs} epochs: max ||W1 W2 - beta_s|| = {pre_err:.1e}")
    print(f"    {'gamma':>6} {'n':>5} {'':12} {'transferkit':>17} {'authors':>17} "
          f"{'X^+y, same draws':>17} {'theory (finite d)':>18}")
    for i, (g, n) in enumerate(zip(gammas, ns)):
        a = auth[n]
        th_sc = float(theory.deep_linear.scratch_risk_finite(n, d, SIGMA))
        th_lt = float(theory.deep_linear.linear_transfer_risk(n, theta, SIGMA))
        tk_sc, tk_lt = res["scratch"][i, j], res["linear"][i, j]
        rows = [("scratch", tk_sc, a["scratch"], mean_se(a["minnorm"]), th_sc),
                ("linear", tk_lt, a["linear"], "", th_lt),
                ("T = sc - lt", tk_sc - tk_lt, a["scratch"] - a["linear"],
                 mean_se(a["minnorm"] - a["linear"]), th_sc - th_lt)]
        for k, (name, x, yv, mn, t) in enumerate(rows):
            lead = f"    {g:6.2f} {n:5d} " if k == 0 else " " * 17
            print(f"{lead}{name:12} {mean_se(x):>17} {mean_se(yv):>17} {mn:>17} {t:18.4f}")
        conv = int((a["scratch_excess"] <= CONV_TOL).sum())
        print(f"{' ' * 17}scratch converged: transferkit {int(res['scratch_converged'][i, j].sum())}"
              f"/{draws} (excess training loss <= 1e-10, median ||beta - X^+y|| "
              f"{np.median(res['scratch_minnorm_dist'][i, j]):.0e}); authors {conv}/{draws} "
              f"(excess loss <= {CONV_TOL:g}; median {np.median(a['scratch_excess']):.0e}, "
              f"median ||beta - X^+y|| {np.median(a['scratch_dist']):.0e})")
        if conv < draws:
            print(f"{' ' * 17}-> NOT converged: after {epochs} epochs at lr {LR} the authors' scratch "
                  f"models are still far from X^+y (early stopping regularises them), so their "
                  f"scratch risk and T are not those the theory describes")
    print("    (transferkit trains one scratch model per draw on the theta = pi/2 target and uses its "
          "risk for every theta, which has the same distribution; the authors train one per cell, so "
          "scratch risks are not paired draw by draw)")

    # ------------------------------------------------------------- (c) full grid
    all_ns = np.array([tk.experiments.deep_linear.sample_size(g, d) for g in BOOK_GAMMAS])
    sc_fit = fit_linear(ns, [tim["scratch"][n] for n in ns])
    lt_fit = fit_linear(ns, [tim["linear"][n] for n in ns])
    auth_full = len(BOOK_THETAS) * draws * EPOCHS * float(
        np.sum(tim["pretrain"] + sc_fit(all_ns) + lt_fit(all_ns)))
    print(f"\n(c) the full Fig. 1 grid: {len(BOOK_GAMMAS)} gamma x {len(BOOK_THETAS)} theta = "
          f"{n_cells} cells, {draws} draws, d = {d}")
    print(f"    authors' protocol: {ms(auth_full)} = {auth_full / 86400:.1f} days (extrapolated: "
          f"timed cost per epoch, linear in n, fitted on n = {ns})")
    if args.full_grid:
        full = sweep.run(experiments.linear_transfer.linear_transfer_cell, sweep.Grid(gamma=BOOK_GAMMAS, theta=BOOK_THETAS),
                         fixed=dict(d=d, sigma=SIGMA, depth=DEPTH, draws=draws, seed=seed,
                                    alpha=ALPHA),
                         vectorize="theta", cache=False, desc="transferkit full grid")
        tk_full, how = t_pre + float(full.seconds.sum()), "measured, one run"
    else:
        order = np.argsort(ns)
        est = np.interp(all_ns, np.asarray(ns)[order], np.asarray(row_s)[order])
        tk_full = t_pre + float(est.sum())
        how = (f"extrapolated: row times interpolated in n between n = {sorted(ns)}; rough, the "
               f"cost peaks near gamma = 1; --full-grid measures it")
    print(f"    transferkit:       {ms(tk_full)} ({how})")
    print(f"    ratio: {auth_full / tk_full:,.0f}x")

    # ------------------------------------------------------------- profile
    if not args.no_profile:
        i = int(np.argmax(row_s))
        total, stages, top = profile_row(d, gammas[i], draws, seed)
        print(f"\nwhere transferkit's time goes: cProfile of the slowest row (gamma = {gammas[i]}, "
              f"n = {ns[i]}, 19 angles; {ms(row_s[i])} unprofiled, {ms(total)} profiled; "
              f"pretraining, {ms(t_pre)}, is not in it)")
        for label, t in stages.items():
            print(f"    {label:44s} {ms(t):>9} {100 * t / total:5.1f} %")
        print("    top functions by own time:")
        for tt, nc, label in top:
            print(f"    {ms(tt):>9} {100 * tt / total:5.1f} % {nc:>7d} calls  {label}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
