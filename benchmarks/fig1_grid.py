"""Benchmark: the full Fig. 1 grid of paper 000 at paper scale, and one cell of the authors' protocol.

Run with ``make bench`` or ``python benchmarks/fig1_grid.py [--quick]``.

transferkit: L = 2, d = 500, sigma = 0.2, alpha = 1e-5, 20 draws per cell, the book's grid of
21 gamma x 19 theta cells (scratch + linear transfer, all simulations included), trained to
an excess loss of 1e-10.

Authors' protocol (paper 000 App. D and the issue's description of their scripts): per
(theta, n) cell, 20 instances, each trained by plain full-batch gradient descent with
autograd for a fixed 5,000 epochs at lr 0.01 (pretraining, scratch training and last-layer
training each).  Running it in full takes minutes per cell, so we time a few hundred epochs
of each phase on one cell and extrapolate linearly (the cost per epoch is constant).

Prints the time per cell of both, their ratio, and where transferkit spends its time.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import transferkit as tk
from transferkit.experiments.linear_transfer import FIG1
from transferkit.models.device import default_device


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 5 x 5 sub-grid instead of the full grid")
    args = ap.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    P = FIG1["paper"]  # the book's Fig. 1 grid at paper scale
    d, draws, sigma = P.d, P.draws, P.sigma
    gammas, thetas = np.array(P.gammas), np.array(P.thetas)
    if args.quick:
        gammas, thetas = gammas[::4], thetas[::4]
    cells = len(gammas) * len(thetas)
    print(f"threads: {torch.get_num_threads()}, device: {default_device()}")

    t0 = time.perf_counter()
    pre = tk.pretrain(d, P.depth, draws, seed=P.seed, alpha=P.alpha)
    t_pre = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = tk.simulate_grid(d, gammas, thetas, sigma, depth=P.depth, draws=draws, seed=P.seed,
                           alpha=P.alpha, methods=("scratch", "linear"), pretrained=pre,
                           progress=True)
    t_grid = time.perf_counter() - t0
    total = t_pre + t_grid
    steps = res["scratch_steps"][:, 0]
    print(f"\ntransferkit, Fig. 1 grid ({len(gammas)} gamma x {len(thetas)} theta = {cells} cells, "
          f"{draws} draws, d = {d}):")
    print(f"  pretraining (once, all draws)  {t_pre:7.2f} s")
    print(f"  grid (scratch + linear)        {t_grid:7.2f} s")
    print(f"  total                          {total:7.2f} s = {total / 60:.2f} min  "
          f"-> {total / cells:.3f} s per cell")
    print(f"  scratch steps per run: median {int(np.median(steps))}, max {steps.max()} "
          f"(Nesterov, curvature step, excess loss 1e-10); all converged: "
          f"{bool(res['scratch_converged'].all())}")

    ep = authors_epoch_time(d=d, n=250, instances=draws, epochs=50 if args.quick else 200)
    per_cell = 5000 * sum(ep.values())
    print(f"\nauthors' protocol, one cell (n = 250, {draws} instances, 5,000 epochs per phase, "
          f"lr 0.01, extrapolated from timed epochs):")
    for k, v in ep.items():
        print(f"  {k:9s} {1e3 * v:7.2f} ms/epoch for {draws} instances -> {5000 * v:7.1f} s")
    print(f"  per cell {per_cell:8.1f} s; full {cells}-cell grid {per_cell * cells / 3600:.1f} h")
    print(f"\nratio (authors' per cell / transferkit per cell): {per_cell / (total / cells):,.0f}x")


if __name__ == "__main__":
    main()
