"""Benchmark: the Fig. 2 fine-tuning grid of paper 000 as the fine-tuning chapter runs it, and the authors' protocol.

Run with ``make bench`` or ``python benchmarks/fig2_grid.py [--scale smoke] [--quick] [--threads N] [--json F]``.

transferkit: the chapter's own call, :func:`transferkit.experiments.finetuning.finetune_grid`
with the chapter's preset :data:`transferkit.experiments.finetuning.FIG2` (``paper``: the grid of
Fig. 1, L = 2, d = 500, sigma = 0.2, alpha = 1e-5, 20 draws, 21 gamma x 19 theta = 399 cells,
every cell and draw a full fine-tuning run of all layers from the pretrained weights), without
the sweep cache and without the scratch risks (``scratch=False``: those are the Fig. 1 sweep,
timed by ``benchmarks/fig1_grid.py``).  Time per cell as the chapter prints it: fine-tuning
compute / cells.

Authors' protocol (as the issue describes their scripts): per (theta, n) cell, 20 instances,
each fine-tuned by plain full-batch gradient descent with autograd on the full d x d network
for a fixed 5,000 epochs at lr 0.01 (App. D itself says lr 1e-3 and up to 1e5 steps).  A
full run takes minutes per cell, so a few epochs are timed at three sample sizes and
extrapolated linearly (an epoch costs the same throughout training).

Prints wall and CPU time (the machine may be shared), the time per cell, the gradient
steps used per run beside the authors' 5,000 epochs, and the ratio; ``--json`` writes them
for ``benchmarks/speed_table.py`` (the README speed table).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from transferkit.experiments.finetuning import FIG2, finetune_grid
from transferkit.models.device import default_device, use_threads

from _record import authors_ratio, write_json  # benchmarks/ is on sys.path

#: The chapter's preset (notebooks/finetuning.py: ``experiments.finetuning.FIG2[SCALE]``).
PRESETS = FIG2
#: The chapter notebook whose preset and experiment function this benchmark runs.
CHAPTER = "finetuning"
#: The chapter's experiment function, called as the chapter calls it.
EXPERIMENT = finetune_grid
EPOCHS, LR = 5000, 0.01


def authors_finetune_epoch(d, n, instances=2, epochs=10, seed=0):
    """Seconds per epoch per instance of autograd fine-tuning of a d x d x 1 network (float32)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g)
    y = torch.randn(n, 1, generator=g)
    best = np.inf
    for _ in range(instances):
        u = torch.randn(d, 1, generator=g)
        u /= u.norm()
        q = torch.randn(d, 1, generator=g)
        q /= q.norm()
        W1 = (u @ q.T).requires_grad_()          # pretrained rank-one weights
        W2 = q.clone().requires_grad_()
        opt = torch.optim.SGD([W1, W2], lr=LR)
        for _ in range(2):                        # warm-up
            opt.zero_grad()
            (0.5 * ((X @ W1 @ W2 - y) ** 2).mean()).backward()
            opt.step()
        t0 = time.perf_counter()
        for _ in range(epochs):
            opt.zero_grad()
            loss = 0.5 * ((X @ W1 @ W2 - y) ** 2).mean()
            loss.backward()
            opt.step()
        best = min(best, (time.perf_counter() - t0) / epochs)
    return best


def run_chapter_grid(P, gammas=None, thetas=None):
    """The chapter's Fig. 2 sweep with grid preset ``P`` (``FIG2[scale].grid``), uncached, no scratch."""
    gammas = np.array(P.gammas if gammas is None else gammas)
    thetas = np.array(P.thetas if thetas is None else thetas)
    w0, c0 = time.perf_counter(), time.process_time()
    res = EXPERIMENT(P.d, gammas, thetas, P.sigma, depth=P.depth, draws=P.draws, seed=P.seed,
                        alpha=P.alpha, scratch=False, cache=False)
    return res, time.perf_counter() - w0, time.process_time() - c0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=sorted(PRESETS), default="paper",
                    help="the chapter's preset (default paper; smoke checks the plumbing)")
    ap.add_argument("--quick", action="store_true",
                    help="4 gammas x every 4th theta of the preset's grid instead of all")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads (default: TRANSFERKIT_THREADS, 1 unless set: the chapter's count)")
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    args = ap.parse_args(argv)
    use_threads(args.threads)
    P = PRESETS[args.scale].grid
    d, draws = P.d, P.draws
    gammas, thetas = np.array(P.gammas), np.array(P.thetas)
    if args.quick:
        gammas, thetas = gammas[np.linspace(0, len(gammas) - 1, 4).astype(int)], thetas[::4]
    cells = len(gammas) * len(thetas)
    print(f"threads: {torch.get_num_threads()}, device: {default_device()}, preset FIG2[{args.scale!r}]")

    sim, wall, cpu = run_chapter_grid(P, gammas, thetas)
    ft_sec = float(sim.sweep.seconds.sum())
    steps = sim.runs["finetune"].steps
    for i, g in enumerate(gammas):
        st = steps[i]
        print(f"  gamma = {g:4.2f} (n = {sim.n[i]:4d}): {sim.sweep.seconds[i].sum():6.1f} s; "
              f"steps per run median {int(np.median(st)):6d}, max {st.max():6d}; converged "
              f"{int(sim.converged('finetune')[i].sum())}/{st.size}")
    under = sim.n < d
    drift = float(sim.finetune_imbalance_drift[under].max()) if under.any() else float("nan")
    dist = float(sim.finetune_thm52_dist.max())
    print(f"\ntransferkit, Fig. 2 grid as the chapter runs it ({len(gammas)} gamma x {len(thetas)} "
          f"theta = {cells} cells, {draws} draws, d = {d}, {steps.size} fine-tuning runs):")
    print(f"  total                {wall:7.1f} s wall  {cpu:7.1f} s CPU  = {wall / 60:.2f} min wall, "
          f"{cpu / 60:.2f} min CPU (pretraining included)")
    print(f"  fine-tuning compute {ft_sec:.0f} s ({ft_sec / cells:.3f} s per (gamma, theta) cell of "
          f"{draws} runs; the chapter's figure)")
    print(f"  gradient steps per run: median {int(np.median(steps))}, mean {steps.mean():.0f}, "
          f"max {steps.max()} (authors: {EPOCHS} epochs); all converged: "
          f"{bool(sim.converged('finetune').all())}")
    print(f"  gradient-flow fidelity: imbalance drift <= {drift:.1e}, distance to the Thm 5.2 "
          f"limit <= {dist:.1e}")

    ns = [int(round(g * d)) for g in (0.2, 1.0, 2.0)]
    ep = {n: authors_finetune_epoch(d, n, epochs=3 if args.quick else 10) for n in ns}
    per_inst = np.mean(list(ep.values()))
    per_cell = EPOCHS * draws * per_inst
    print(f"\nauthors' protocol, fine-tuning only ({draws} instances x {EPOCHS} epochs at lr {LR}, "
          f"autograd, extrapolated from timed epochs):")
    for n, v in ep.items():
        print(f"  n = {n:4d}: {1e3 * v:6.2f} ms per epoch per instance")
    ratio = authors_ratio(per_cell, cells, wall)
    if args.json:
        write_json(args.json, {
            "benchmark": "fig2_grid", "scale": args.scale, "quick": args.quick, "cells": cells,
            "draws": draws, "d": d, "runs": int(steps.size), "wall_s": wall, "cpu_s": cpu,
            "finetune_compute_s": ft_sec, "per_cell_s": wall / cells,
            "steps_median": int(np.median(steps)), "steps_max": int(steps.max()),
            "gamma_at_steps_max": float(gammas[np.unravel_index(np.argmax(steps), steps.shape)[0]]),
            "all_converged": bool(sim.converged("finetune").all()),
            "authors_per_cell_s": per_cell, "authors_grid_s": per_cell * cells, "ratio": ratio})


if __name__ == "__main__":
    main()
