"""Speed of the ReLU student-teacher trainers (paper 000, Fig. 3) at the paper's size.

Run with ``make bench`` or ``python benchmarks/relu_speed.py [--scale smoke] [--steps N] [--n N] [--seeds S] [--json F]``.

The sizes (d, m, m*) are the chapter's: the preset
:data:`transferkit.experiments.relu_student_teacher.FIG3` that
``notebooks/relu_student_teacher.py`` reads (``experiments.relu_student_teacher.FIG3[SCALE]``);
``tests/test_benchmarks.py`` checks that :data:`PRESETS` is that very object.

Measures iterations per second (one iteration = one loss + gradient evaluation at the
trial point of the backtracking step; about 80 % of iterations are accepted steps) of

* population pretraining (:func:`transferkit.models.relu.train_population`): exact closed-form
  loss and gradient, m = 1000, d = 100, m* = 100;
* scratch training (:func:`transferkit.models.relu.train_samples`): full-batch autograd on n
  samples, m = 1000, d = 100;

both for ``--seeds`` seeds batched in one tensor program, and the number of iterations
the backtracking step needs to reach the gradient-flow time ``--horizon`` (default App.
D.2's horizon t = 500) against the ``horizon / 0.005`` steps of the paper's fixed learning
rate 0.01 m (App. D.2: on Eqs. 2-3, whose factor 1/2 our losses drop, it is a step
h = 0.005 in our units, and its 10^5 steps end at t = 500).  It prints the time of one
pretraining run to the horizon per seed, ours and the authors' protocol at the same
per-iteration cost (extrapolated, the same code), and their ratio, and the authors' cost
of one scratch run of 10^5 steps at ``--n``.  Both wall-clock and process (CPU) time are
printed: on a shared machine the CPU time is the better estimate of what an idle core would
do.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from transferkit import experiments, models
from transferkit.experiments.relu_student_teacher import FIG3, fig3_experiment
from transferkit.models.device import use_threads

from _record import write_json  # benchmarks/ is on sys.path

#: The chapter notebook whose sizes this benchmark uses.
CHAPTER = "relu_student_teacher"
#: The chapter's preset (notebooks/relu_student_teacher.py:
#: ``experiments.relu_student_teacher.FIG3[SCALE]``); the trainers' speed depends on its
#: sizes ``d``, ``m`` and ``m_star``.
PRESETS = FIG3
#: The experiment of the chapter whose trainers this benchmark times.
EXPERIMENT = fig3_experiment
#: Paper 000, App. D.2: 10^5 full-batch steps at learning rate 0.01 m, the step
#: :data:`transferkit.models.relu.PAPER_STEP` (h = 0.005 in the trainers' units), ending at
#: gradient-flow time t = 500.
PAPER_STEPS, PAPER_STEP = 100_000, models.relu.PAPER_STEP
PAPER_HORIZON = PAPER_STEPS * PAPER_STEP
#: A relative tolerance that no run reaches (the trainers refuse 0), so that every run
#: takes the steps it is timed for.
NEVER = float(np.finfo(float).tiny)


def _rate(fn, steps):
    w0, c0 = time.perf_counter(), time.process_time()
    fn(steps)
    return steps / (time.perf_counter() - w0), steps / (time.process_time() - c0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=sorted(PRESETS), default="paper",
                    help="the chapter's sizes (default paper; smoke checks the plumbing)")
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--n", type=int, default=800)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads (default: TRANSFERKIT_THREADS, 1 unless set: the chapter's count)")
    ap.add_argument("--horizon", type=float, default=PAPER_HORIZON,
                    help="gradient-flow time of the pretraining run (default App. D.2's 500)")
    ap.add_argument("--max-step", type=float, default=1.0, help="step cap (the chapter's: 1)")
    args = ap.parse_args(argv)
    use_threads(args.threads)
    args.threads = torch.get_num_threads()
    preset = PRESETS[args.scale]
    d, m, m_star, S = preset.d, preset.m, preset.m_star, args.seeds
    rng = np.random.default_rng(0)
    T = models.relu.make_teachers(S, m_star, d, rng)
    src, _ = models.relu.ablate(T, 0.5, rng)
    W0 = models.relu.random_sphere((S, m, d), rng)
    c0 = np.full((S, m), 1e-7)
    pre = _rate(lambda k: models.relu.train_population(W0, c0, src, tol=NEVER, max_steps=k), args.steps)
    X = rng.standard_normal((S, args.n, d))
    y = experiments.relu_student_teacher._targets(X, T.W, T.a)
    sc = _rate(lambda k: models.relu.train_samples(W0, c0, X, y, tol=NEVER, max_steps=k), args.steps)
    w0, c0_ = time.perf_counter(), time.process_time()
    Xl = rng.standard_normal((S, args.n, d))
    models.relu.readout_transfer_risk(W0, Xl, T)
    models.relu.rkhs_norms(W0, T)
    lt = (time.perf_counter() - w0, time.process_time() - c0_)
    # iterations to reach gradient-flow time `horizon` vs the paper's fixed step 0.01 m
    _, _, info = models.relu.train_population(W0, c0, src, tol=NEVER, max_steps=100_000,
                                       max_time=args.horizon, record_every=1,
                                       max_step=args.max_step)
    its = int(np.isfinite(info.history[:, 0]).sum()) - 1     # row 0 is the start
    paper_steps = args.horizon / PAPER_STEP
    per_seed_it = 1.0 / (pre[1] * S)                          # CPU s per iteration and seed
    run_s, authors_run_s = its * per_seed_it, paper_steps * per_seed_it
    scratch_authors_s = PAPER_STEPS / (sc[1] * S)
    print(f"pretraining to gradient-flow time {args.horizon:g}: {its} iterations "
          f"with step cap {args.max_step:g} (the paper's step h = {PAPER_STEP:g}: "
          f"{paper_steps:,.0f} steps; ratio {paper_steps / its:.0f}x); "
          f"relative loss {info.loss[0] / info.teacher_norm[0]:.2e}")
    print(f"one pretraining run per seed: {run_s:.1f} s CPU (ours) against {authors_run_s:,.0f} s "
          f"(the paper's {paper_steps:,.0f} steps at our cost per step, extrapolated), "
          f"{authors_run_s / run_s:.0f}x; one scratch run of the paper's {PAPER_STEPS:,} steps "
          f"at n = {args.n}: {scratch_authors_s:,.0f} s per seed")
    print(f"load average {os.getloadavg()[0]:.1f}, torch threads {args.threads}, seeds {S}")
    print(f"population pretraining m={m}, d={d}, m*={m_star}: "
          f"{pre[0]:.2f} it/s wall, {pre[1]:.2f} it/s CPU (per seed x{S})")
    print(f"scratch training n={args.n}: {sc[0]:.2f} it/s wall, {sc[1]:.2f} it/s CPU (x{S})")
    print(f"one linear transfer (n={args.n}) + one projection: {lt[0]:.2f} s wall, "
          f"{lt[1]:.2f} s CPU (x{S})")
    if args.json:
        data = {"benchmark": "relu_speed", "scale": args.scale, "d": d, "m": m,
                "m_star": m_star, "seeds": S, "n": args.n, "threads": args.threads,
                "pretrain_it_s": pre[0], "pretrain_it_s_cpu": pre[1],
                "scratch_it_s": sc[0], "scratch_it_s_cpu": sc[1],
                "horizon": args.horizon, "horizon_iterations": its,
                "paper_steps": paper_steps, "run_s": run_s, "authors_run_s": authors_run_s,
                "ratio": authors_run_s / run_s, "scratch_authors_run_s": scratch_authors_s}
        write_json(args.json, data)
    return pre, sc, lt


if __name__ == "__main__":
    main()
