"""Benchmark: the whole Fig. 2 fine-tuning grid of paper 000 at paper scale, and the authors' protocol.

Run with ``python benchmarks/fig2_grid.py [--quick] [--threads 2]``.

transferkit: L = 2, d = 500, sigma = 0.2, alpha = 1e-5, 20 draws per cell, the book's grid
of 21 gamma x 19 theta = 399 cells (the grid of Fig. 1), every cell and draw a full
fine-tuning run of all layers from the pretrained weights (7,980 runs), trained to an
excess loss of 1e-10 (:func:`transferkit.models.deep_linear.finetune_chain`: all angles and draws of a
gamma row in one batch, curvature steps capped while the loss is large for gradient-flow
fidelity, converged runs dropped from the batch).  Pretraining is done once and reused by
every cell.  The scratch risks that the transferability also needs are the Fig. 1 sweep
(``benchmarks/fig1_grid.py``), shared with the linear-transfer chapter; they are not
re-timed here.

Authors' protocol (as the issue describes their scripts): per (theta, n) cell, 20 instances,
each fine-tuned by plain full-batch gradient descent with autograd on the full d x d network
for a fixed 5,000 epochs at lr 0.01 (App. D itself says lr 1e-3 and up to 1e5 steps).  A
full run takes minutes per cell, so a few epochs are timed at three sample sizes and
extrapolated linearly (an epoch costs the same throughout training).

Prints wall and CPU time (the machine may be shared), the time per cell, the gradient
steps used per run beside the authors' 5,000 epochs, and the ratio.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import transferkit as tk
from transferkit.experiments.finetuning import FIG2
from transferkit.models.device import default_device

BOOK = FIG2["paper"].grid  # the book's Fig. 2 grid at paper scale (the grid of Fig. 1)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 4 x 5 sub-grid with 4 draws")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--d", type=int, default=BOOK.d)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    d, draws, sigma = args.d, BOOK.draws, BOOK.sigma
    gammas, thetas = np.array(BOOK.gammas), np.array(BOOK.thetas)
    if args.quick:
        gammas, thetas, draws = gammas[[1, 5, 9, 15]], thetas[::4], 4
    cells = len(gammas) * len(thetas)
    print(f"threads: {torch.get_num_threads()}, device: {default_device()}")

    w0, c0 = time.perf_counter(), time.process_time()
    pre = tk.pretrain(d, BOOK.depth, draws, seed=BOOK.seed, alpha=BOOK.alpha)
    t_pre, c_pre = time.perf_counter() - w0, time.process_time() - c0
    rows = []
    for g in gammas:        # row by row, to report where the time goes
        w0, c0 = time.perf_counter(), time.process_time()
        r = tk.simulate_grid(d, [g], thetas, sigma, depth=BOOK.depth, draws=draws, seed=BOOK.seed,
                             alpha=BOOK.alpha, methods=("finetune",), pretrained=pre,
                             max_steps=2_000_000, progress=False)
        rows.append((g, time.perf_counter() - w0, time.process_time() - c0, r))
        st = r["finetune_steps"]
        print(f"  gamma = {g:4.2f} (n = {r['n'][0]:4d}): {rows[-1][1]:6.1f} s wall, "
              f"{rows[-1][2]:6.1f} s CPU; steps per run median {int(np.median(st)):6d}, "
              f"max {st.max():6d}; converged {int(r['finetune_converged'].sum())}/{st.size}",
              flush=True)
    wall = t_pre + sum(x[1] for x in rows)
    cpu = c_pre + sum(x[2] for x in rows)
    steps = np.concatenate([x[3]["finetune_steps"].ravel() for x in rows])
    drift = max(x[3]["finetune_imbalance_drift"].max() for x in rows if x[3]["n"][0] < d)
    dist = max(x[3]["finetune_thm52_dist"].max() for x in rows)
    print(f"\ntransferkit, Fig. 2 grid ({len(gammas)} gamma x {len(thetas)} theta = {cells} cells, "
          f"{draws} draws, d = {d}, {steps.size} fine-tuning runs):")
    print(f"  pretraining (once)   {t_pre:7.1f} s wall  {c_pre:7.1f} s CPU")
    print(f"  total                {wall:7.1f} s wall  {cpu:7.1f} s CPU  = {wall / 60:.2f} min wall, "
          f"{cpu / 60:.2f} min CPU")
    print(f"  per cell             {wall / cells:7.3f} s wall  {cpu / cells:7.3f} s CPU")
    print(f"  gradient steps per run: median {int(np.median(steps))}, mean {steps.mean():.0f}, "
          f"max {steps.max()} (authors: {EPOCHS} epochs); all converged: "
          f"{all(x[3]['finetune_converged'].all() for x in rows)}")
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
    print(f"  per cell {per_cell:8.1f} s; full {cells}-cell grid {per_cell * cells / 3600:.1f} h")
    print(f"\nratio (authors' per cell / transferkit per cell, wall): {per_cell / (wall / cells):,.0f}x")


if __name__ == "__main__":
    main()
