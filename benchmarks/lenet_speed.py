"""Speed of LeNet training (paper 002, Figs. 8a and 9) on the whole MNIST training set.

Run with ``python benchmarks/lenet_speed.py [--scale smoke] [--batches N] [--threads 1,2] [--no-cell] [--json F]``.

The protocol is the chapter's: the preset :data:`transferkit.experiments.lenet_transfer.LENET_FIG9`
that ``notebooks/lenet_transfer.py`` reads (``experiments.lenet_transfer.LENET_FIG9[SCALE]``;
``tests/test_benchmarks.py`` checks that :data:`PRESETS` is that very object), with the paper's
optimiser (App. A: SGD, momentum 0.9, learning rate 0.01, weight decay 5e-4, batch 64).

Measures, for each number of torch threads in ``--threads``:

* images per second of :func:`transferkit.models.lenet.train_lenet` (forward, backward and the
  SGD step, batch 64, index batches into the data held as one tensor) on ``--batches``
  minibatches of the preset's pretraining set (the 60,000 MNIST images at ``paper`` scale),
  and from it the seconds per epoch on the 60,000 images;
* images per second of :func:`transferkit.models.lenet.accuracy` (forward only) at evaluation
  batches of 256, 2048 (the default) and 8192.

Then the time of the chapter's schedules: the reduced one, ``LENET_FIG9[scale]`` (Fig. 9 and
the two extra sources of Fig. 8a; upside-down MNIST is the mirror image of the MNIST network,
fine-tuned in its cell), *measured* by calling the chapter's cell function
:func:`transferkit.experiments.lenet_transfer.transfer_cell` with that preset for one seed
(``--no-cell`` skips it), and, *estimated* from the measured images per second, the reduced
and the full schedule :data:`transferkit.experiments.lenet_transfer.LENET_FIG9_FULL` (App. A:
100 pretraining epochs with snapshots at 1, 2, 5, 10, 20, 50, 100, 100 fine-tuning epochs,
3 seeds), which is the authors' protocol for these figures; the book's budget for it is 20
minutes.  Wall and process (CPU) time are printed: on a shared machine the CPU time is the
better estimate of what an idle core would do.  Run on one thread, as the chapter does
(``transferkit.models.device.use_threads()``, one thread unless ``TRANSFERKIT_THREADS`` says
otherwise); two threads on two shared cores were slower here.
"""
from __future__ import annotations

import argparse
import os
import time

import torch

from transferkit.experiments.lenet_transfer import (
    LENET_FIG9,
    LENET_FIG9_FULL,
    source_data,
    transfer_cell,
)
from transferkit.models.device import use_threads
from transferkit.models.lenet import accuracy, make_lenet, train_lenet

from _record import authors_ratio, write_json  # benchmarks/ is on sys.path

#: The chapter notebook whose protocol this benchmark times.
CHAPTER = "lenet_transfer"
#: The chapter's preset (notebooks/lenet_transfer.py reads
#: ``experiments.lenet_transfer.LENET_FIG9[SCALE]``).
PRESETS = LENET_FIG9
#: The chapter's cell function, called with the preset for one seed.
EXPERIMENT = transfer_cell
#: Images of the MNIST training set (an epoch of the ``paper`` preset, ``n_pretrain = 0``).
N_MNIST = 60_000
#: The book's budget for one schedule (issue 17), seconds.
BUDGET_S = 20 * 60


def _timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def train_rate(x, y, preset, batches: int):
    """(wall, CPU) images per second of one :func:`train_lenet` epoch over ``batches``
    minibatches of ``x``, with the preset's optimiser, after a warm-up of 5 minibatches."""
    n = min(len(y), batches * preset.batch)
    kw = {"seed": 0, "lr": preset.lr, "batch": preset.batch, "optimizer": preset.optimizer,
          "momentum": preset.momentum, "weight_decay": preset.weight_decay}
    model = make_lenet(0, "cpu")
    train_lenet(model, x[:5 * preset.batch], y[:5 * preset.batch], epochs=1, **kw)
    wall, cpu = _timed(lambda: train_lenet(model, x[:n], y[:n], epochs=1, **kw))
    return n / wall, n / cpu


def eval_rates(x, y, sizes=(256, 2048, 8192)):
    """Wall images per second of :func:`accuracy` on ``x`` for each evaluation batch size."""
    model = make_lenet(0, "cpu")
    accuracy(model, x[:256], y[:256])
    return {b: len(y) / _timed(lambda b=b: accuracy(model, x, y, batch=b))[0] for b in sizes}


def images(preset, mirrored: bool = True) -> dict:
    """Training images of a schedule, per seed: pretraining of Fig. 9's MNIST network,
    fine-tuning of its snapshots, and Fig. 8a's two other sources fine-tuned once each:
    Fashion-MNIST pretrained for ``fig8a_epochs``, and upside-down MNIST, which transferkit
    computes as the mirror image of the MNIST snapshot (``mirrored``: its fine-tuning only)
    and the authors pretrain on its own (``mirrored=False``)."""
    n = preset.n_pretrain or N_MNIST
    ft = preset.ft_epochs * preset.n_target
    pretrained = 1 if mirrored else 2
    return {"fig9_pretrain": max(preset.snapshots) * n,
            "fig9_finetune": len(preset.snapshots) * ft,
            "fig8a_extra": pretrained * preset.fig8a_epochs * n + 2 * ft}


def schedule_seconds(preset, rate: float, mirrored: bool = True) -> dict:
    """Estimated seconds of each part of a schedule for all its seeds at ``rate`` images/s."""
    return {k: v * len(preset.seeds) / rate for k, v in images(preset, mirrored).items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=sorted(PRESETS), default="paper",
                    help="the chapter's preset (default paper; smoke checks the plumbing)")
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    ap.add_argument("--batches", type=int, default=None,
                    help="minibatches timed per thread count (default 200 paper, 20 smoke)")
    ap.add_argument("--threads", default="1,2", help="torch thread counts, comma-separated")
    ap.add_argument("--no-cell", action="store_true",
                    help="skip the measured transfer_cell of one seed")
    args = ap.parse_args(argv)
    preset = PRESETS[args.scale]
    batches = args.batches or (200 if args.scale == "paper" else 20)
    threads = [int(t) for t in args.threads.split(",")]
    x, y, xt, yt = source_data("mnist", preset.n_pretrain, 0)
    print(f"LeNet, {preset.optimizer.upper()} lr {preset.lr}, momentum {preset.momentum}, weight "
          f"decay {preset.weight_decay}, batch {preset.batch}; {len(y)} pretraining images "
          f"({args.scale} preset), {batches} minibatches timed; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rates, evals = {}, {}
    for t in threads:
        torch.set_num_threads(t)
        rates[t] = train_rate(x, y, preset, batches)
        evals[t] = eval_rates(xt, yt)
        print(f"  {t} thread(s): forward+backward+step {rates[t][0]:7.0f} images/s wall, "
              f"{rates[t][1]:7.0f} CPU; {N_MNIST / rates[t][0]:5.2f} s per epoch of 60,000 "
              f"(CPU {N_MNIST / rates[t][1]:.2f}); evaluation " + ", ".join(
                  f"batch {b}: {r:.0f}/s" for b, r in evals[t].items()))
    use_threads()                                # the chapter's setting (TRANSFERKIT_THREADS)
    rate, rate_cpu = rates.get(torch.get_num_threads(), rates[threads[0]])
    out = {"benchmark": "lenet_speed", "scale": args.scale, "batches": batches,
           "n_pretrain": len(y), "threads_timed": threads,
           "images_s": {str(t): r[0] for t, r in rates.items()},
           "images_s_cpu": {str(t): r[1] for t, r in rates.items()},
           "eval_images_s": {str(t): {str(b): r for b, r in e.items()} for t, e in evals.items()},
           "s_per_epoch_60k": N_MNIST / rate, "s_per_epoch_60k_cpu": N_MNIST / rate_cpu}
    print(f"\nschedules estimated as training images / rate, at one thread's {rate:.0f} images/s "
          f"wall ({rate_cpu:.0f} CPU, the estimate for an idle core, in brackets):")
    for name, p in ((f"reduced, LENET_FIG9[{args.scale!r}]", preset),
                    ("full, LENET_FIG9_FULL (the authors' protocol, App. A, with upside-down "
                     "MNIST as the mirror image)", LENET_FIG9_FULL)):
        est, est_cpu = schedule_seconds(p, rate), schedule_seconds(p, rate_cpu)
        total, total_cpu = sum(est.values()), sum(est_cpu.values())
        parts = ", ".join(f"{label} {est[k] / 60:.1f} ({est_cpu[k] / 60:.1f})" for k, label in (
            ("fig9_pretrain", "Fig. 9 pretraining"), ("fig9_finetune", "its fine-tuning"),
            ("fig8a_extra", "Fig. 8a's two other sources (upside-down MNIST: fine-tuning "
                            "only, the mirror image)")))
        print(f"  {name}: snapshots {list(p.snapshots)}, Fig. 8a at {p.fig8a_epochs} epochs, "
              f"{p.ft_epochs} fine-tuning epochs, {len(p.seeds)} seeds: estimated "
              f"{total / 60:.1f} min ({total_cpu / 60:.1f}); {parts}"
              + (" > the 20-minute budget" if total_cpu > BUDGET_S else ""))
        key = "reduced" if p is preset else "full"
        out.update({f"{key}_estimated_s": total, f"{key}_estimated_cpu_s": total_cpu,
                    f"{key}_parts_estimated_s": est, f"{key}_parts_estimated_cpu_s": est_cpu})
    out["full_exceeds_budget"] = out["full_estimated_cpu_s"] > BUDGET_S
    if not args.no_cell:
        cell = {k: v for k, v in vars(preset).items() if k not in ("seeds", "fig8a_epochs",
                                                                   "establish_claims")}
        # as the chapter calls it: with the mirror image (upside-down MNIST) at Fig. 8a's epoch
        wall, cpu = _timed(lambda: transfer_cell("mnist", preset.seeds[0], **cell,
                                                 mirrored=[preset.fig8a_epochs]))
        n_cells = len(preset.seeds)
        print(f"\nmeasured: transfer_cell('mnist', seed {preset.seeds[0]}, mirrored="
              f"[{preset.fig8a_epochs}]) with LENET_FIG9[{args.scale!r}] (Fig. 9 and upside-down "
              f"MNIST, one seed): {wall:.1f} s wall, {cpu:.1f} s CPU; x {n_cells} seeds = "
              f"{wall * n_cells / 60:.1f} min")
    # the authors' protocol (upside-down MNIST pretrained on its own) against the chapter's
    # reduced one, both at the measured training rate (the same code: the ratio is the
    # reduction in training images and the mirror image's saved pretraining)
    full_seed = sum(images(LENET_FIG9_FULL, mirrored=False).values()) / rate
    reduced_seed = sum(images(preset).values()) / rate
    print(f"\nauthors' protocol (LENET_FIG9_FULL: Fig. 9's MNIST cell and Fig. 8a's two other "
          f"sources; a cell is one seed), estimated at {rate:.0f} images/s, against the "
          f"chapter's LENET_FIG9[{args.scale!r}]:")
    out["ratio"] = authors_ratio(full_seed, len(LENET_FIG9_FULL.seeds),
                                 reduced_seed * len(LENET_FIG9_FULL.seeds))
    print("(the same code: the ratio is the reduction in training images, and the mirror "
          "image's saved pretraining)")
    out["authors_per_seed_s"] = full_seed
    out["authors_estimated_s"] = full_seed * len(LENET_FIG9_FULL.seeds)
    if args.json:
        write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
