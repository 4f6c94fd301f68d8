"""Speed of the small ReLU trainers (papers 003 and 004) at the chapter's sizes.

Run with ``python benchmarks/ptft_speed.py [--scale smoke] [--steps N] [--no-grid]
[--json F]``.

The sizes are the chapter's: the preset :data:`transferkit.experiments.ptft_relu.SAMPLE_EFFICIENCY`
that ``notebooks/ptft_relu.py`` reads (``experiments.ptft_relu.SAMPLE_EFFICIENCY[SCALE]``), and
``EXPERIMENT`` is the function its Fig. 1c section calls; ``tests/test_benchmarks.py`` checks
both.

Printed (wall-clock and process time; on a shared machine the CPU time is the better estimate
of an idle core):

* network-steps per second (networks x steps / s) of the two trainers,
  :func:`transferkit.models.relu.train_units` on one batch of fine-tuning or STL students
  (every main-task ``n`` and draw of the preset, samples zero-padded to the largest ``n``) and
  :func:`transferkit.models.relu.train_units_mtl` on one batch of multi-task students (the
  ``n_aux`` auxiliary samples and the main ones), each as the chapter runs it
  (``engine="auto"``: the compiled kernel on the CPU) and on each engine (``[kernel]``, each
  network on its own samples; ``[torch]``, the batched loop).  Nothing converges (tolerance
  1e-300), so the rates leave out the kernel's other saving, that a network stops at its own
  tolerance instead of stepping (at zero step) until its batch is compacted;
* the chapter's Fig. 1c grid (``--no-grid`` skips it): ``EXPERIMENT`` with the preset, from an
  empty cache, as the chapter calls it, timed.

Neither paper states its optimiser, step or stopping rule, so there is no authors' protocol
to set beside these numbers.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import warnings

import numpy as np
import torch

from transferkit.experiments.ptft_relu import SAMPLE_EFFICIENCY, run_sample_efficiency_grid
from transferkit.models.device import use_threads
from transferkit.models.relu import teacher_pair, train_units, train_units_mtl

from _record import step_rates, timed, write_json  # benchmarks/ is on sys.path

#: The chapter notebook whose sizes this benchmark uses.
CHAPTER = "ptft_relu"
#: The chapter's preset (notebooks/ptft_relu.py: ``experiments.ptft_relu.SAMPLE_EFFICIENCY[SCALE]``).
PRESETS = SAMPLE_EFFICIENCY
#: The experiment of the chapter's Fig. 1c section, timed on the preset.
EXPERIMENT = run_sample_efficiency_grid

#: The trainers timed: each as the chapter runs it (``engine="auto"``), then on each engine.
KINDS = ("train_units", "train_units [kernel]", "train_units [torch]",
         "train_units_mtl", "train_units_mtl [kernel]", "train_units_mtl [torch]")


def _batch(p):
    """One batch of the chapter's students (every main-task ``n`` and draw of preset ``p``):
    start weights of scale ``p.alpha``, main samples zero-padded to the largest ``n``, and the
    ``p.n_aux`` auxiliary samples of each draw, labelled by teachers of ``p.units`` units at
    ``(rho, m) = (1, 1)``."""
    rng = np.random.default_rng(p.seed)
    t = lambda x: torch.as_tensor(np.asarray(x), dtype=torch.float64)  # noqa: E731
    N, G = max(p.ns), len(p.ns) * p.draws
    X, y, Xa, ya = np.zeros((G, N, p.d)), np.zeros((G, N)), [], []
    for j in range(p.draws):
        aux, a_aux, main, a_main = teacher_pair(p.d, p.units, 1.0, 1.0, rng)
        xa = rng.standard_normal((p.n_aux, p.d))
        Xa.append(xa)
        ya.append(np.maximum(xa @ aux.T, 0) @ a_aux)
        for i, n in enumerate(p.ns):
            x = rng.standard_normal((n, p.d))
            X[i * p.draws + j, :n], y[i * p.draws + j, :n] = x, np.maximum(x @ main.T, 0) @ a_main
    jj = np.tile(np.arange(p.draws), len(p.ns))
    W0 = p.alpha * rng.standard_normal((G, p.width, p.d)) / np.sqrt(p.d)
    A0 = p.alpha * rng.standard_normal((G, p.width, 2))
    n = np.repeat(np.asarray(p.ns, float), p.draws)
    return (t(W0), t(A0), t(X), t(y), n, t(np.array(Xa)[jj]), t(np.array(ya)[jj]),
            np.full(G, float(p.n_aux)))


def _rates(batch, steps, lr_scale):
    """Network-steps per second (wall, CPU) of each kind of :data:`KINDS` on ``batch``, setup
    cancelled by timing ``k`` and ``2 * k`` steps (``k = steps``, times 4 until a run takes
    half a second)."""
    W0, A0, X, y, n, Xa, ya, na = batch
    B = W0.shape[0]

    def run(kind, k):
        engine = kind.split("[")[1].rstrip("]") if "[" in kind else "auto"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind.startswith("train_units_mtl"):
                return train_units_mtl(W0.clone(), A0.clone(), [Xa, X], [ya, y], [na, n],
                                       lr_scale=lr_scale, loss_tol=1e-300, max_steps=k,
                                       engine=engine)
            return train_units(W0.clone(), A0[..., 1].clone(), X, y, n, lr_scale=lr_scale,
                               loss_tol=1e-300, max_steps=k, engine=engine)

    return step_rates(run, KINDS, B, steps)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=sorted(PRESETS), default="paper",
                    help="the chapter's sizes (default paper; smoke checks the plumbing)")
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    ap.add_argument("--steps", type=int, default=None, help="steps per rate measurement")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads (default: TRANSFERKIT_THREADS, 1 unless set: the chapter's count)")
    ap.add_argument("--no-grid", action="store_true", help="skip the Fig. 1c grid's timing")
    args = ap.parse_args(argv)
    use_threads(args.threads)
    args.threads = torch.get_num_threads()
    p = PRESETS[args.scale]
    steps = args.steps or (50 if args.scale == "paper" else 10)
    print(f"load average {os.getloadavg()[0]:.1f}, torch threads {args.threads}, scale {args.scale}")
    res = {"benchmark": "ptft_speed", "scale": args.scale, "threads": args.threads}
    batch = _batch(p)
    r = _rates(batch, steps, p.lr_scale)
    B = batch[0].shape[0]
    print(f"\nthe chapter's batch: d = {p.d}, width {p.width}, n = {list(p.ns)}, {p.draws} draws "
          f"({B} networks; MTL with n_aux = {p.n_aux}); network-steps per second (wall | CPU):")
    for kind, (w, c) in r.items():
        print(f"  {kind:26s} {w:10.0f} | {c:10.0f}")
    res["rates"] = {k: {"wall": w, "cpu": c} for k, (w, c) in r.items()}
    res.update(d=p.d, width=p.width, ns=list(p.ns), draws=p.draws, n_aux=p.n_aux, networks=B)
    if not args.no_grid:
        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grid, w, c = timed(lambda: EXPERIMENT(p, directory=tmp, progress=False))
        cells = len(grid)
        print(f"\nFig. 1c grid ({args.scale}: {cells} cells (rho, m), pretraining once): "
              f"{w:.1f} s wall, {c:.1f} s CPU")
        res.update(grid_cells=cells, grid_wall_s=w, grid_cpu_s=c)
    if args.json:
        write_json(args.json, res)
    return res


if __name__ == "__main__":
    main()
