"""Benchmark: the Fig. 1 grid of paper 000 as the linear-transfer chapter runs it, and one cell of the authors' protocol.

Run with ``make bench`` or ``python benchmarks/fig1_grid.py [--scale smoke] [--quick] [--json F]``.

transferkit: the chapter's own call, :func:`transferkit.experiments.linear_transfer.linear_transfer_grid`
with the chapter's preset :data:`transferkit.experiments.linear_transfer.FIG1` (``paper``: L = 2,
d = 500, sigma = 0.2, alpha = 1e-5, 20 draws per cell, 21 gamma x 19 theta cells; scratch +
linear transfer, pretraining included, trained to an excess loss of 1e-10), without the
sweep cache.  The time per cell is computed as the chapter prints it (sweep compute time /
cells).

Authors' protocol (paper 000 App. D and the issue's description of their scripts): per
(theta, n) cell, 20 instances, each trained by plain full-batch gradient descent with
autograd for a fixed 5,000 epochs at lr 0.01 (pretraining, scratch training and last-layer
training each).  Running it in full takes minutes per cell, so we time a few hundred epochs
of each phase on one cell and extrapolate linearly (the cost per epoch is constant).

Prints the time per cell of both and their ratio; ``--json`` writes them for
``benchmarks/speed_table.py`` (the README speed table).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from transferkit.experiments.linear_transfer import FIG1, linear_transfer_grid
from transferkit.models.device import default_device, use_threads

from _record import authors_ratio, write_json  # benchmarks/ is on sys.path

#: The chapter's preset (notebooks/linear_transfer.py: ``experiments.linear_transfer.FIG1[SCALE]``).
PRESETS = FIG1
#: The chapter notebook whose preset and experiment function this benchmark runs.
CHAPTER = "linear_transfer"
#: The chapter's experiment function, called as the chapter calls it.
EXPERIMENT = linear_transfer_grid
EPOCHS, LR = 5000, 0.01  # the authors' protocol, not the chapter's


def authors_epoch_time(d=500, n=250, instances=20, epochs=200, seed=0):
    """Seconds per epoch for the three phases of one cell, authors' style (unbatched autograd)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=torch.float32)
    y = torch.randn(n, 1, generator=g, dtype=torch.float32)
    beta_s = torch.randn(d, 1, generator=g)
    beta_s /= beta_s.norm()
    out = {}
    for phase in ("pretrain", "scratch", "linear"):
        t0 = time.perf_counter()
        for _ in range(instances):
            W1 = (1e-5 * torch.randn(d, d, generator=g) / d ** 0.5).requires_grad_()
            W2 = (1e-5 * torch.randn(d, 1, generator=g) / d ** 0.5).requires_grad_()
            params = [W2] if phase == "linear" else [W1, W2]
            opt = torch.optim.SGD(params, lr=0.01)
            for _ in range(epochs):
                opt.zero_grad()
                if phase == "pretrain":
                    loss = 0.5 * ((W1 @ W2 - beta_s) ** 2).sum()  # population loss, Sigma = I
                else:
                    loss = 0.5 * ((X @ W1 @ W2 - y) ** 2).mean()
                loss.backward()
                opt.step()
        out[phase] = (time.perf_counter() - t0) / epochs
    return out


def run_chapter_grid(P, gammas=None, thetas=None):
    """The chapter's Fig. 1 sweep (one sigma) with preset ``P``, uncached; returns (result, wall seconds)."""
    gammas = np.array(P.gammas if gammas is None else gammas)
    thetas = np.array(P.thetas if thetas is None else thetas)
    t0 = time.perf_counter()
    res = EXPERIMENT(P.d, gammas, thetas, P.sigma, depth=P.depth, draws=P.draws,
                               seed=P.seed, alpha=P.alpha, cache=False)
    return res, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=sorted(PRESETS), default="paper",
                    help="the chapter's preset (default paper; smoke checks the plumbing)")
    ap.add_argument("--quick", action="store_true",
                    help="every 4th gamma and theta of the preset's grid instead of all")
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    args = ap.parse_args(argv)
    use_threads()                               # the chapter's count (TRANSFERKIT_THREADS)
    P = PRESETS[args.scale]
    gammas, thetas = np.array(P.gammas), np.array(P.thetas)
    if args.quick:
        gammas, thetas = gammas[::4], thetas[::4]
    cells = len(gammas) * len(thetas)
    print(f"threads: {torch.get_num_threads()}, device: {default_device()}, preset FIG1[{args.scale!r}]")

    res, wall = run_chapter_grid(P, gammas, thetas)
    computed = float(res.sweep.seconds.sum())
    steps = res.runs["scratch"].steps[:, 0]
    print(f"\ntransferkit, Fig. 1 grid as the chapter runs it ({len(gammas)} gamma x {len(thetas)} "
          f"theta = {cells} cells, {P.draws} draws, d = {P.d}, pretraining included):")
    print(f"  wall {wall:7.2f} s = {wall / 60:.2f} min; compute {computed:.2f} s "
          f"({computed / cells:.3f} s per (gamma, theta) cell, {P.draws} draws each)")
    print(f"  scratch steps per run: median {int(np.median(steps))}, max {steps.max()} "
          f"(whitened gradient descent, curvature step, excess loss 1e-10); all converged: "
          f"{bool(res.converged('scratch').all())}")

    n_auth = int(round(0.5 * P.d))
    ep = authors_epoch_time(d=P.d, n=n_auth, instances=P.draws, epochs=50 if args.quick else 200)
    per_cell = EPOCHS * sum(ep.values())
    print(f"\nauthors' protocol, one cell (n = {n_auth}, {P.draws} instances, {EPOCHS:,} epochs per "
          f"phase, lr {LR}, extrapolated from timed epochs):")
    for k, v in ep.items():
        print(f"  {k:9s} {1e3 * v:7.2f} ms/epoch for {P.draws} instances -> {EPOCHS * v:7.1f} s")
    ratio = authors_ratio(per_cell, cells, wall)
    if args.json:
        write_json(args.json, {
            "benchmark": "fig1_grid", "scale": args.scale, "quick": args.quick, "cells": cells,
            "draws": P.draws, "d": P.d, "gammas": len(gammas), "thetas": len(thetas),
            "wall_s": wall, "compute_s": computed, "per_cell_s": wall / cells,
            "scratch_steps_median": int(np.median(steps)), "scratch_steps_max": int(steps.max()),
            "authors_per_cell_s": per_cell, "authors_grid_s": per_cell * cells, "ratio": ratio})


if __name__ == "__main__":
    main()
