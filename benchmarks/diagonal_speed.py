"""Speed of the diagonal-network trainers (paper 004) at the chapter's sizes and at D = 1000.

Run with ``python benchmarks/diagonal_speed.py [--scale smoke] [--steps N] [--n N]
[--no-section] [--no-chapter] [--json F]``.

The sizes are the chapter's: the preset :data:`transferkit.experiments.diagonal_networks.DIAGONAL`
that ``notebooks/diagonal_networks.py`` reads (``experiments.diagonal_networks.DIAGONAL[SCALE]``;
its field ``l12_large`` holds the D = 1000 section's sizes), and ``EXPERIMENT`` is the function
that section calls; ``tests/test_benchmarks.py`` checks both.

Printed (wall-clock and process time; on a shared machine the CPU time is the better estimate
of an idle core):

* network-steps per second (networks x steps / s) of one MTL batch, for
  :func:`transferkit.models.diagonal.train_diagonal` (one matrix-vector product per network and
  task) and :func:`transferkit.models.diagonal.train_diagonal_gram` (the sample moments shared
  by the networks of one draw), each as the chapter runs it (``engine="auto"``) and on each
  engine (``[kernel]``: the compiled kernel, one network at a time; ``[lockstep]``: numpy's
  BLAS products with compiled element-wise work; ``[torch]``: the batched loop), at the chapter's
  MTL sizes (``D``, ``n_aux``, every ``n`` and draw of the preset, one
  alpha) and at the section's D = 1000 with ``--n`` main-task samples (default 1024) and every
  alpha of one draw (where the Gram trainer's batched loop shares each matrix read among the
  networks of a draw: ``KERNEL_MAX_D``);
* steps to converge of one MTL batch of the chapter's sizes at alpha = 0.1 under the fixed
  step rule of ``train_diagonal`` and under the accept-and-grow step of ``train_diagonal_gram``
  (the largest stable step under the same relative cap; ``--scale paper`` only, about a minute);
* the D = 1000 section (``--no-section`` skips it): one draw cell of
  :func:`~transferkit.experiments.diagonal_networks.mtl_small_init_large` at the first overlap
  and one cell of its minimum-l1,2 interpolants, timed, and the section's time estimated as
  (cells per overlap x overlaps) x that;
* the whole chapter (``--no-chapter`` skips it): ``notebooks/diagonal_networks.py`` executed
  as ``make book`` executes it (``_record.chapter_seconds``), at ``--scale``, from an empty
  sweep cache, its wall time (issue 18 asks for under 10 min at paper scale).
"""
from __future__ import annotations

import argparse
import os
import warnings

import numpy as np
import torch

from transferkit.experiments import diagonal_networks as dn
from transferkit.experiments.diagonal_networks import DIAGONAL, mtl_small_init_large
from transferkit.models.device import use_threads
from transferkit.models.diagonal import init_state, sample_moments, train_diagonal, train_diagonal_gram

from _record import chapter_seconds, step_rates, timed, write_json  # benchmarks/ is on sys.path

#: The chapter notebook whose sizes this benchmark uses.
CHAPTER = "diagonal_networks"
#: The chapter's preset (notebooks/diagonal_networks.py: ``experiments.diagonal_networks.DIAGONAL[SCALE]``).
PRESETS = DIAGONAL
#: The experiment of the chapter's D = 1000 section, whose trainer this benchmark times.
EXPERIMENT = mtl_small_init_large


def _batch(D, k, ns, draws, n_aux, alphas, seed=0):
    """One MTL batch: every (alpha, n, draw) of task_data, as X-form and moment-form inputs."""
    data = dn.task_data(seed, D, k, k, ns, draws, n_aux)
    G = len(ns) * draws
    jj = np.tile(np.arange(draws), len(ns))
    N = max(max(ns), n_aux)
    X = np.zeros((G, 2, N, D))
    y = np.zeros((G, 2, N))
    X[:, 0, :n_aux], y[:, 0, :n_aux] = np.array(data.Xa)[jj], np.array(data.ya)[jj]
    for i, (x, v) in enumerate(zip(data.Xm, data.ym)):
        X[i, 1, :len(v)], y[i, 1, :len(v)] = x, v
    n = np.stack([np.full(G, n_aux, float), [len(v) for v in data.ym]], 1)
    A = len(alphas)
    a = np.repeat(np.asarray(alphas, float), G)
    mom = sample_moments(list(data.Xa) + list(data.Xm), list(data.ya) + list(data.ym))
    index = np.tile(np.stack([jj, draws + np.arange(G)], 1), (A, 1))
    return (np.tile(X, (A, 1, 1, 1)), np.tile(y, (A, 1, 1)), np.tile(n, (A, 1))), (mom, index), a


#: The trainers timed: each as the chapter runs it (``engine="auto"``), then on each engine.
KINDS = (("train_diagonal", "train_diagonal [kernel]", "train_diagonal [torch]")
         + tuple(f"{kind}{eng}" for kind in ("gram, fixed step", "gram, grown step")
                 for eng in ("", " [kernel]", " [lockstep]", " [torch]")))


def _rates(xform, gform, a, steps, D):
    """Network-steps per second (wall, CPU) of the three trainers, each with
    ``engine="auto"`` (as the chapter runs it: the compiled kernel, or for
    ``train_diagonal_gram`` at D > ``KERNEL_MAX_D`` the lockstep engine) and with each engine,
    setup cancelled by timing ``k`` and ``2 * k`` steps (``k = steps``, times 4 until a
    run takes half a second); nothing converges (tolerance 1e-300)."""
    B = len(a)
    X, y, n = xform
    mom, index = gform

    def run(kind, k):
        st = init_state(B, 2, D, a[:, None], a[:, None, None])
        engine = kind.split("[")[1].rstrip("]") if "[" in kind else "auto"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind.startswith("train_diagonal"):
                return train_diagonal(st, X, y, n, loss_tol=1e-300, max_steps=k, engine=engine)
            return train_diagonal_gram(st, mom, index, loss_tol=1e-300, max_steps=k,
                                       grow=None if "fixed" in kind else 1.1, engine=engine)

    return step_rates(run, KINDS, B, steps)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=sorted(PRESETS), default="paper",
                    help="the chapter's sizes (default paper; smoke checks the plumbing)")
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    ap.add_argument("--steps", type=int, default=None, help="steps per rate measurement")
    ap.add_argument("--n", type=int, default=1024, help="main-task samples of the D = 1000 rate")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads (default: TRANSFERKIT_THREADS, 1 unless set: the chapter's count)")
    ap.add_argument("--no-section", action="store_true", help="skip the section's timing")
    ap.add_argument("--no-chapter", action="store_true",
                    help="skip executing the whole chapter (paper scale: about 6 min)")
    args = ap.parse_args(argv)
    use_threads(args.threads)
    args.threads = torch.get_num_threads()
    p = PRESETS[args.scale]
    L = p.l12_large
    steps = args.steps or (200 if args.scale == "paper" else 20)
    print(f"load average {os.getloadavg()[0]:.1f}, torch threads {args.threads}, scale {args.scale}")
    res = {"benchmark": "diagonal_speed", "scale": args.scale, "threads": args.threads}

    # the chapter's MTL batch (D = p.D): every n and draw, one alpha
    xf, gf, a = _batch(p.D, p.k, p.ns, p.draws, p.n_aux, [p.alpha], p.seed)
    r = _rates(xf, gf, a, steps * 10, p.D)
    print(f"\nchapter MTL batch: D = {p.D}, n_aux = {p.n_aux}, n = {list(p.ns)}, {p.draws} draws "
          f"({len(a)} networks); network-steps per second (wall | CPU):")
    for kind, (w, c) in r.items():
        print(f"  {kind:27s} {w:10.0f} | {c:10.0f}")
    res["chapter"] = {k: {"wall": w, "cpu": c} for k, (w, c) in r.items()}

    # the section's D = 1000 batch with n = args.n: every alpha, one draw
    xf, gf, a = _batch(L.D, L.k, [args.n], 1, L.n_aux, L.alphas, L.seed)
    r = _rates(xf, gf, a, max(steps // 10, 20), L.D)
    print(f"\nD = {L.D} batch: k = {L.k}, n_aux = {L.n_aux}, n = {args.n}, alphas {list(L.alphas)} "
          f"({len(a)} networks); network-steps per second (wall | CPU):")
    for kind, (w, c) in r.items():
        print(f"  {kind:27s} {w:10.0f} | {c:10.0f}")
    res["large"] = {k: {"wall": w, "cpu": c} for k, (w, c) in r.items()}
    res.update(D_large=L.D, n_large=args.n, n_aux_large=L.n_aux)

    if args.scale == "paper":
        # steps to converge: the fixed rule against the grown step, chapter's batch at alpha = 0.1
        xf, gf, a = _batch(p.D, p.k, p.ns, p.draws, p.n_aux, [p.alpha], p.seed)
        conv = {}
        for grow in (None, 1.1):
            st = init_state(len(a), 2, p.D, p.alpha, p.alpha)
            out, w, c = timed(lambda: train_diagonal_gram(
                st, *gf, rel_step=p.rel_step, loss_tol=p.mtl_loss_tol, max_steps=p.mtl_max_steps,
                grow=grow))
            conv["fixed" if grow is None else "grown"] = (out, w, c)
        f, g = conv["fixed"][0], conv["grown"][0]
        d = np.linalg.norm((f.beta - g.beta).reshape(len(a), -1), axis=1) / np.linalg.norm(
            f.beta.reshape(len(a), -1), axis=1)
        print(f"\nsteps to converge (alpha = {p.alpha}, loss tol {p.mtl_loss_tol:g}, {len(a)} networks):"
              f" fixed rule max {f.steps.max()} (CPU {conv['fixed'][2]:.1f} s), grown step max "
              f"{g.steps.max()} (CPU {conv['grown'][2]:.1f} s); ratio {f.steps.max() / g.steps.max():.0f}x;"
              f" largest relative distance between the two solutions {d.max():.1e}")
        res.update(steps_fixed=int(f.steps.max()), steps_grown=int(g.steps.max()),
                   cpu_fixed=conv["fixed"][2], cpu_grown=conv["grown"][2], rule_distance=float(d.max()))

    if not args.no_section:
        name, ov = L.overlaps[0]
        kw = dict(seed=L.seed, D=L.D, k=L.k, overlap=ov, ns=list(L.ns), n_aux=L.n_aux)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out, w, c = timed(lambda: dn.mtl_draw_cell(np.array(L.alphas), 0, rel_step=L.rel_step,
                                                        loss_tol=L.loss_tol, max_steps=L.max_steps,
                                                        **kw))
        _, wl, cl = timed(lambda: dn.l12_draw_cell(0, **kw))
        cells = L.draws * len(L.overlaps)
        n_inst, n_steps = out["steps"].size, int(out["steps"].sum())
        print(f"\nD = {L.D} section ({args.scale}): one draw cell ({name}, {n_inst} networks, "
              f"{n_steps} accepted steps in all, at most {out['steps'].max()}; converged "
              f"{out['converged'].mean():.0%}): {w:.1f} s wall, {c:.1f} s CPU "
              f"({n_steps / max(c, 1e-9):.0f} network-steps per CPU second); its min-l1,2 cell "
              f"{wl:.1f} s wall, {cl:.1f} s CPU")
        print(f"estimated section time ({cells} cells of each): {cells * (w + wl) / 60:.1f} min wall, "
              f"{cells * (c + cl) / 60:.1f} min CPU")
        res.update(section_cell_wall=w, section_cell_cpu=c, section_l12_wall=wl,
                   section_l12_cpu=cl, section_cells=cells,
                   section_estimate_cpu_s=cells * (c + cl))
    if not args.no_chapter:
        # the whole chapter, executed as make book executes it, from an empty sweep cache
        secs, err = chapter_seconds(CHAPTER, args.scale)
        if err:
            raise RuntimeError(f"the chapter {CHAPTER} failed at scale {args.scale}:\n{err}")
        print(f"\nthe chapter ({CHAPTER}, {args.scale}), executed as make book executes it from "
              f"an empty sweep cache: {secs:.0f} s wall")
        res.update(chapter_s=secs)
    if args.json:
        write_json(args.json, res)
    return res


if __name__ == "__main__":
    main()
