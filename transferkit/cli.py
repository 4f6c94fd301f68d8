r"""The ``transferkit`` command line: closed forms, simulations and phase diagrams.

::

    transferkit theory linear --gamma 0.5 --theta 1.0 --sigma 0.2 [--d 500] [--json]
    transferkit theory finetune|scratch|ridge ...
    transferkit simulate --gamma 0.5 --theta pi/3 --sigma 0.2 --d 100 --draws 20 [--json]
    transferkit phase-diagram --method linear --sigma 0.1 --depth 3 --out fig.png [--simulate]
    transferkit notebook notebooks/linear_transfer.py --scale smoke --figures out/

Every closed form cites its equation in paper 000 (*Features are Fate*).  Angles accept
``pi`` expressions (``pi/3``, ``2*pi/5``).  Every error is reported on one line of stderr
(``transferkit: error: ...``), never with a traceback: exit status 2 for a bad argument
(including a request beyond the memory budget, or an unwritable cache), 1 for any other
failure (out of memory, a file that cannot be written), 0 on success.  Progress bars
go to stderr (``--no-progress`` or ``TRANSFERKIT_PROGRESS=0`` turn them off).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import sys
import time
from pathlib import Path

import matplotlib
import numpy as np
from tqdm import tqdm

from . import experiments, figures, models, provenance, stats, theory
from ._validate import MAX_INT, check_grid, check_int
from ._version import __version__
from .config import environment, progress
from .experiments.deep_linear import sample_size, simulate_grid
from .sweep import cache_dir

__all__ = ["main", "build_parser", "phase_diagram_command", "simulate_point", "theory_values"]


PROG = "transferkit"


_PI = re.compile(r"^\s*(?:(?P<num>[0-9.eE+-]+)\s*\*?\s*)?pi\s*(?:/\s*(?P<den>[0-9.eE+-]+))?\s*$")


class UsageError(Exception):
    """A bad argument: reported on one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block) and exit status 2."""

    def error(self, message):
        raise UsageError(f"{message} (see `{self.prog} --help`)")


# ---------------------------------------------------------------- argument types

def _real(text: str) -> float:
    """A float, or a multiple of pi (``pi``, ``pi/2``, ``2*pi/3``, ``0.5pi``)."""
    m = _PI.match(text.lower())
    try:
        if m:
            num = float(m.group("num")) if m.group("num") else 1.0
            den = float(m.group("den")) if m.group("den") else 1.0
            if den == 0:
                raise ValueError
            return num * math.pi / den
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


_INT = re.compile(r"^\s*[+-]?\d+\s*$")


def _int(text: str) -> int:
    """An integer, parsed exactly (``12345678901234567`` stays itself); ``1e3`` is taken
    as 1000 only where the float is exact (below 2**53)."""
    if _INT.match(text):
        return int(text)
    try:
        value = float(text)
        if not math.isfinite(value) or value != int(value) or abs(value) > 2**53:
            raise ValueError
        return int(value)
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


#: Largest count of a ``start:stop:count`` grid (a million points; beyond it the grid
#: alone, let alone a simulation over it, does not fit in memory).
MAX_GRID = 10**6


def _grid(text: str) -> list:
    """``start:stop:count`` (evenly spaced, both ends included) or ``a,b,c``."""

    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise argparse.ArgumentTypeError(f"a grid is start:stop:count or a,b,c (got {text!r})")
        start, stop = _real(parts[0]), _real(parts[1])
        count = _int(parts[2])
        if not 1 <= count <= MAX_GRID:
            raise argparse.ArgumentTypeError(f"the count of a grid must be in 1..{MAX_GRID} "
                                             f"(got {text!r})")
        return [float(v) for v in np.linspace(start, stop, count)]
    values = [_real(p) for p in text.split(",") if p.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"empty grid: {text!r}")
    return values


# ---------------------------------------------------------------- theory

_EQ = {
    "scratch": "paper 000, Eq. 8",
    "scratch_finite": "paper 000, Eq. 8 at finite n, d (exact)",
    "linear": "paper 000, Eq. 10",
    "linear_limit": "paper 000, Eq. 10, n -> inf",
    "linear_std": "std over data draws (companion to Eq. 10)",
    "transferability_linear": "paper 000, Eq. 11",
    "transferability_linear_finite": "paper 000, Eq. 11 at finite n, d (exact)",
    "boundary": "paper 000, Sec. 3.3: gamma_c = 1 + sigma^2 / sin^2(theta)",
    "window": "paper 000, Sec. 3.3: (gamma_+, gamma_-)",
    "ridge": "paper 000, Eq. 13",
    "finetune": "paper 000, Eq. 14",
    "finetune_finite": "paper 000, Eq. 14 at finite n, d (exact)",
    "transferability_finetune": "paper 000, Eq. 15",
    "transferability_finetune_finite": "Eq. 15 at finite n, d (exact)",
}


def theory_values(model: str, gamma=None, theta=None, sigma=None, lam=None, d=None) -> dict:
    """The closed forms of ``model`` at one point, as ``{quantity: (value, source)}``.

    ``model`` is ``linear``, ``finetune``, ``scratch`` or ``ridge``.  With ``d`` the exact
    finite-size values at ``n = round(gamma d)`` are added.  Raises ``ValueError`` naming
    a bad parameter (from :mod:`transferkit.theory.deep_linear`).
    """

    out = {}
    n = None
    if d is not None:
        check_int("d", d, 1, MAX_INT)  # beyond 2**53 the closed forms would round d
        if gamma is not None:
            theory.deep_linear.scratch_risk(gamma, 0.0)  # validates gamma first, with its own message
            n = sample_size(gamma, d)
            out["n"] = (n, "round(gamma d)")
    if model == "scratch":
        out["scratch risk"] = (theory.deep_linear.scratch_risk(gamma, sigma), _EQ["scratch"])
        if n is not None:
            out["scratch risk (finite d)"] = (theory.deep_linear.scratch_risk_finite(n, d, sigma), _EQ["scratch_finite"])
    elif model == "linear":
        T = theory.deep_linear.linear_transferability(gamma, theta, sigma)
        out["scratch risk"] = (theory.deep_linear.scratch_risk(gamma, sigma), _EQ["scratch"])
        out["linear-transfer risk"] = (math.sin(theta) ** 2 if theta != math.pi else 0.0,
                                       _EQ["linear_limit"])
        out["transferability"] = (T, _EQ["transferability_linear"])
        out["gamma_c"] = (theory.deep_linear.linear_transfer_boundary(theta, sigma), _EQ["boundary"])
        out["negative-transfer window"] = (theory.deep_linear.negative_transfer_window(theta, sigma), _EQ["window"])
        if n is not None:
            out["scratch risk (finite d)"] = (theory.deep_linear.scratch_risk_finite(n, d, sigma), _EQ["scratch_finite"])
            out["linear-transfer risk (finite n)"] = (theory.deep_linear.linear_transfer_risk(n, theta, sigma),
                                                      _EQ["linear"])
            out["linear-transfer risk std"] = (theory.deep_linear.linear_transfer_risk_std(n, theta, sigma),
                                               _EQ["linear_std"])
            try:
                out["transferability (finite d)"] = (
                    theory.deep_linear.linear_transferability_finite(n, d, theta, sigma),
                    _EQ["transferability_linear_finite"])
            except ValueError as exc:  # inf - inf: undefined, say so
                out["transferability (finite d)"] = (None, f"undefined: {exc}")
    elif model == "finetune":
        out["scratch risk"] = (theory.deep_linear.scratch_risk(gamma, sigma), _EQ["scratch"])
        out["fine-tuning risk"] = (theory.deep_linear.finetune_risk(gamma, theta, sigma), _EQ["finetune"])
        out["transferability"] = (theory.deep_linear.finetune_transferability(gamma, theta),
                                  _EQ["transferability_finetune"])
        if n is not None:
            sc = theory.deep_linear.scratch_risk_finite(n, d, sigma)
            ft = theory.deep_linear.finetune_risk_finite(n, d, theta, sigma)
            out["scratch risk (finite d)"] = (sc, _EQ["scratch_finite"])
            out["fine-tuning risk (finite d)"] = (ft, _EQ["finetune_finite"])
            # the noise terms are the same sample by sample: the difference is finite
            out["transferability (finite d)"] = (
                theory.deep_linear.finetune_transferability_finite(n, d, theta),
                _EQ["transferability_finetune_finite"])
    elif model == "ridge":
        out["ridge linear-transfer risk"] = (theory.deep_linear.ridge_linear_transfer_risk(lam, theta), _EQ["ridge"])
        out["unregularised (lam = 0)"] = (theory.deep_linear.ridge_linear_transfer_risk(0.0, theta), _EQ["ridge"])
    else:  # pragma: no cover - argparse restricts the choices
        raise ValueError(f"model must be one of linear, finetune, scratch, ridge (got {model!r})")
    return out


def _json_value(v):
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # "inf" / "-inf": JSON has no infinities
    if isinstance(v, tuple):
        return [_json_value(x) for x in v]
    return v


def _fmt(v) -> str:
    if v is None:
        return "none"
    if isinstance(v, tuple):
        return "(" + ", ".join(_fmt(x) for x in v) + ")"
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return f"{v:.6g}"


def _cmd_theory(args) -> int:
    params = {k: getattr(args, k) for k in ("gamma", "theta", "sigma", "lam", "d")
              if getattr(args, k, None) is not None}
    values = theory_values(args.model, **params)
    if args.json:
        print(json.dumps({"model": args.model, "parameters": params,
                          "results": {k: {"value": _json_value(v), "source": s}
                                      for k, (v, s) in values.items()}}, indent=2))
        return 0
    print(f"{args.model}: " + ", ".join(f"{k} = {_fmt(v)}" for k, v in params.items()))
    width = max(len(k) for k in values)
    for k, (v, s) in values.items():
        print(f"  {k:<{width}}  {_fmt(v):>12}   {s}")
    return 0


# ---------------------------------------------------------------- simulate

def _progress(args) -> bool:
    return progress(False if args.no_progress else None)


def simulate_point(gamma, theta, sigma, d=100, depth=2, draws=20, seed=0, alpha=1e-5,
                   methods=("scratch", "linear", "finetune"), progress=False) -> dict:
    """Run :func:`~transferkit.experiments.deep_linear.simulate_transfer` at one point.

    Pretraining first, then every method in one call, so that the methods share the target
    data and the eigendecomposition of its covariance (the numbers are those of one
    ``simulate_transfer`` call).  ``progress``: a bar of the two stages.  Returns a dict
    mapping each method to its :class:`~transferkit.experiments.deep_linear.MethodRuns`
    (per-draw risks and convergence flags).
    """

    bar = tqdm(total=2, desc="pretraining", disable=not progress, file=sys.stderr,
               unit="stage")
    try:
        pre = experiments.deep_linear.pretrain(d, depth, draws, seed, alpha, progress=False)
        bar.update()
        bar.set_description(", ".join(methods))
        r = experiments.deep_linear.simulate_transfer(d, gamma, theta, sigma, depth, draws, seed,
                                                      alpha, methods=tuple(methods),
                                                      pretrained=pre)
        bar.update()
    finally:
        bar.close()
    return dict(r.runs)


def _check_sim_args(args, gammas=(), cells=1, sigma=0.0) -> None:
    """Validate the simulation arguments (``sigma``: the label noise of a simulation, 0 when
    only the closed forms run) and their memory estimate before any work."""
    experiments.deep_linear.check_simulation_args(args.d, sigma, args.depth, args.draws,
                                                  args.alpha, args.seed)
    ns = [sample_size(g, args.d) for g in gammas] or [1]
    experiments.deep_linear.check_simulation_budget(args.d, args.depth, args.draws, ns, cells, 3)


def check_cache_writable() -> None:
    """``UsageError`` (before any work) when the sweep cache folder cannot be written."""

    where = cache_dir()
    fix = ("set TRANSFERKIT_CACHE to a writable folder, or pass --no-cache")
    probe = where
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise UsageError(f"the cache folder {str(where)!r} (TRANSFERKIT_CACHE) is not a folder: "
                         f"{str(probe)!r} is a file; {fix}")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"the cache folder {str(where)!r} (TRANSFERKIT_CACHE) is not "
                         f"writable; {fix}")


def _cmd_simulate(args) -> int:
    methods = tuple(dict.fromkeys(m.strip() for m in args.methods.split(",") if m.strip()))
    bad = [m for m in methods if m not in ("scratch", "linear", "finetune")]
    if bad or not methods:
        raise UsageError(f"--methods must be a comma-separated subset of scratch,linear,finetune "
                         f"(got {args.methods!r})")
    if args.draws < 2:
        raise UsageError(f"--draws must be >= 2 for a standard error (got {args.draws})")
    # validate everything first: one clear message before any work
    theory.deep_linear.finetune_risk(args.gamma, args.theta, args.sigma)
    _check_sim_args(args, [args.gamma], 1, args.sigma)
    n = sample_size(args.gamma, args.d)
    t0 = time.perf_counter()
    res = simulate_point(args.gamma, args.theta, args.sigma, args.d, args.depth, args.draws,
                         args.seed, args.alpha, methods, progress=_progress(args))
    wall = time.perf_counter() - t0
    exact = {"scratch": theory.deep_linear.scratch_risk_finite(n, args.d, args.sigma),
             "linear": theory.deep_linear.linear_transfer_risk(n, args.theta, args.sigma),
             "finetune": theory.deep_linear.finetune_risk_finite(n, args.d, args.theta, args.sigma)}
    limit = {"scratch": theory.deep_linear.scratch_risk(args.gamma, args.sigma),
             "linear": math.sin(args.theta) ** 2,
             "finetune": theory.deep_linear.finetune_risk(args.gamma, args.theta, args.sigma)}
    std = {"linear": theory.deep_linear.linear_transfer_risk_std(n, args.theta, args.sigma)}
    rows = []
    for m in methods:
        draws = np.asarray(res[m].risk, float)
        a = stats.agreement(draws[None, :], [exact[m]], fwer=0.01, std=std.get(m))
        mean, se = stats.mean_se(draws)
        rows.append({"method": m, "mean": float(mean), "se": float(se),
                     "theory_finite": exact[m], "theory_limit": limit[m],
                     "z": float(a.z[0]) if a.mask[0] else None,
                     "agrees": bool(a.ok) if a.mask[0] else None,
                     "converged": (bool(np.all(res[m].converged))
                                   if res[m].converged is not None else None)})
    if args.json:
        print(json.dumps({"parameters": {"gamma": args.gamma, "theta": args.theta,
                                         "sigma": args.sigma, "d": args.d, "n": n,
                                         "depth": args.depth, "draws": args.draws,
                                         "seed": args.seed, "alpha": args.alpha},
                          "wall_time_s": round(wall, 3),
                          "results": [{k: _json_value(v) for k, v in r.items()} for r in rows]},
                         indent=2))
        return 0
    print(f"simulate_transfer: gamma = {args.gamma:g} (n = {n}), theta = {args.theta:.6g}, "
          f"sigma = {args.sigma:g}; d = {args.d}, depth = {args.depth}, {args.draws} draws, "
          f"seed {args.seed}, alpha = {args.alpha:g} ({wall:.1f} s)")
    print(f"  {'method':<9} {'simulated mean ± s.e.':>24} {'theory (finite d)':>18} "
          f"{'theory (d -> inf)':>18}  agrees")
    for r in rows:
        agree = {True: "yes", False: "NO", None: "n/a"}[r["agrees"]]
        if r["converged"] is False:
            agree += " (not converged)"
        print(f"  {r['method']:<9} {r['mean']:>13.5g} ± {r['se']:<8.3g} "
              f"{_fmt(r['theory_finite']):>18} {_fmt(r['theory_limit']):>18}  {agree}")
    print("  agreement: |mean - theory| within the 1% Bonferroni critical value times the "
          "standard error")
    return 0


# ---------------------------------------------------------------- phase diagram

def _interactive() -> bool:
    """True inside IPython/Jupyter (keep its backend)."""
    return "IPython" in sys.modules and getattr(sys.modules["IPython"], "get_ipython",
                                                lambda: None)() is not None


def _cmd_phase_diagram(args) -> int:
    theory.deep_linear.linear_transferability(1.0 if args.sigma == 0 else 0.5, 0.0, args.sigma)  # validates sigma
    out = args.out
    if out.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise UsageError(f"--out must end in .png, .pdf or .svg (got {str(out)!r})")

    gammas = check_grid("gamma", args.gammas, 0.0, np.inf, True)
    thetas = check_grid("theta", args.thetas, 0.0, np.pi, False)
    _check_sim_args(args, gammas if args.simulate else (), gammas.size * thetas.size,
                    args.sigma if args.simulate else 0.0)
    if args.simulate:
        if args.draws < 2:
            raise UsageError(f"--draws must be >= 2 for a standard error (got {args.draws})")
        if args.method == "linear" and not args.no_cache:
            check_cache_writable()
    t0 = time.perf_counter()
    result = check = None
    params = {"method": args.method, "sigma": args.sigma}
    if args.method == "finetune":
        params["depth"] = args.depth  # of the Thm 5.2 boundary, drawn with or without --simulate
    if args.simulate:
        params.update(d=args.d, depth=args.depth, draws=args.draws, alpha=args.alpha,
                      gammas=gammas, thetas=thetas)
        if args.method == "linear":
            result = experiments.linear_transfer.linear_transfer_grid(args.d, gammas, thetas, args.sigma,
                                                depth=args.depth, draws=args.draws,
                                                seed=args.seed, alpha=args.alpha,
                                                progress=_progress(args), cache=not args.no_cache)
            check = experiments.linear_transfer.linear_transfer_checks(result).transferability
        else:
            result = simulate_grid(args.d, gammas, thetas, args.sigma, depth=args.depth,
                                   draws=args.draws, seed=args.seed, alpha=args.alpha,
                                   methods=("scratch", "finetune"), progress=_progress(args))
            fin = theory.deep_linear.finetune_transferability_finite(result.n[:, None], args.d,
                                                                     thetas[None, :])
            check = stats.agreement(experiments.linear_transfer.transferability_draws(result, "finetune"), fin)

    if not _interactive():
        matplotlib.use("Agg")  # a file is written, no window opened
    figures.plotting.use_style()  # the book's look
    # the figures of the book: Fig. 1 / Fig. 7 (linear), Fig. 2 (fine-tuning)
    if args.method == "linear":
        fig = figures.paper000.linear_phase_figure(result, check, args.slices, args.title,
                                                   sigma=args.sigma)
    else:
        fig = figures.paper000.finetune_phase_figure(result, check, args.slices, args.title,
                                                     sigma=args.sigma, depth=args.depth)
    wall = time.perf_counter() - t0
    cli = shlex.join([PROG] + args.argv)
    rec = provenance.save(fig, out, params=params, seeds=args.seed if args.simulate else None,
                          cli=cli, wall_time=wall)
    print(f"wrote {out} and {out.with_suffix('.json')} ({wall:.1f} s)")
    if not args.simulate and args.method == "finetune":
        print(f"theory only (Eq. 15 does not depend on depth, d, draws or alpha; the dashed "
              f"Thm 5.2 boundary is drawn at depth {args.depth}); add --simulate for the "
              "simulated diagram")
    elif not args.simulate:
        print("theory only (the closed forms do not depend on depth, d, draws or alpha); "
              "add --simulate for the simulated diagram")
    if check is not None:
        print(check.summary(f"simulated transferability vs exact finite-d theory ({rec['name']})"))
    return 0


def phase_diagram_command(out, *, method="linear", sigma=0.2, simulate=False, d=None,
                          depth=None, draws=None, seed=None, alpha=None, gammas=None,
                          thetas=None, title=None) -> str:
    """The ``transferkit phase-diagram`` command line that draws a figure with these values.

    For provenance records (:func:`transferkit.provenance.record`): a notebook passes its
    parameters and gets the command a reader can run.  Floats are written with ``repr``,
    so the command reproduces the grid exactly.
    """
    def num(v):
        return repr(float(v))

    argv = [PROG, "phase-diagram", "--method", method, "--sigma", num(sigma)]
    if simulate:
        argv.append("--simulate")
        for flag, v in (("--d", d), ("--depth", depth), ("--draws", draws), ("--seed", seed)):
            if v is not None:
                argv += [flag, str(int(v))]
        if alpha is not None:
            argv += ["--alpha", num(alpha)]
        for flag, grid in (("--gammas", gammas), ("--thetas", thetas)):
            if grid is not None:
                argv += [flag, ",".join(num(v) for v in grid)]
    elif method == "finetune" and depth is not None:  # the depth of the Thm 5.2 boundary
        argv += ["--depth", str(int(depth))]
    if title:
        argv += ["--title", title]
    argv += ["--out", str(out)]
    return shlex.join(argv)


# ---------------------------------------------------------------- notebook

def _cmd_notebook(args) -> int:
    path = Path(args.path)
    if not path.is_file():
        raise UsageError(f"no notebook at {str(path)!r}")
    if path.suffix not in (".py", ".ipynb"):
        raise UsageError(f"a notebook is a jupytext .py or an .ipynb file (got {str(path)!r})")
    try:
        import jupytext
        import nbclient
    except ImportError as exc:
        raise UsageError(f"`transferkit notebook` needs the book extra ({exc.name} is missing): "
                         "pip install 'transferkit[book]'") from None

    nb = jupytext.read(path)
    figures = Path(args.figures).resolve() if args.figures else provenance.figures_dir()
    env = {"TRANSFERKIT_SCALE": args.scale, provenance.ENV_VAR: str(figures)}
    t0 = time.perf_counter()
    try:
        with environment(**env):  # the kernel inherits this process's environment
            client = nbclient.NotebookClient(
                nb, timeout=args.timeout, kernel_name="python3",
                resources={"metadata": {"path": str(path.parent.resolve())}})
            client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        print(f"{PROG}: {path} failed at scale {args.scale}:\n{exc}", file=sys.stderr)
        return 1
    records = provenance.harvest(nb)
    print(f"ran {path} at scale {args.scale} in {time.perf_counter() - t0:.0f} s; "
          f"{len(records)} figure(s) with records in {figures}:")
    for rec in records:
        print(f"  {rec['file']}  {rec['name']}.json")
    return 0


# ---------------------------------------------------------------- parser

def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Closed forms, simulations and phase diagrams of "
                "transfer learning (paper 000, Features are Fate).")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    t = sub.add_parser("theory", help="print the closed forms at one point")
    tsub = t.add_subparsers(dest="model", metavar="MODEL", parser_class=_Parser)
    for model, help_, need in (
            ("linear", "linear transfer vs scratch (Eqs. 8, 10, 11; Sec. 3.3)", "gts"),
            ("finetune", "fine-tuning vs scratch (Eqs. 8, 14, 15)", "gts"),
            ("scratch", "scratch training, minimum-norm interpolant (Eq. 8)", "gs"),
            ("ridge", "ridge-regularised linear transfer, n -> inf (Eq. 13)", "lt")):
        m = tsub.add_parser(model, help=help_, description=help_)
        if "g" in need:
            m.add_argument("--gamma", type=_real, required=True, help="n/d > 0")
        if "t" in need:
            m.add_argument("--theta", type=_real, required=True,
                           help="source-target angle in [0, pi] (accepts pi/3 etc.)")
        if "s" in need:
            m.add_argument("--sigma", type=_real, required=True, help="label noise >= 0")
        if "l" in need:
            m.add_argument("--lam", type=_real, required=True, help="ridge strength >= 0")
        if "g" in need:
            m.add_argument("--d", type=_int, help="dimension: add the exact finite-size values "
                           "at n = round(gamma d)")
        m.add_argument("--json", action="store_true", help="machine-readable output")
        m.set_defaults(func=_cmd_theory)

    s = sub.add_parser("simulate", help="simulate_transfer at one point, beside the theory",
                       description="Train scratch, linear-transfer and fine-tuned deep linear "
                       "networks on `draws` target sets at one (gamma, theta, sigma) and print "
                       "the mean and standard error of each risk beside the closed forms.")
    s.add_argument("--gamma", type=_real, required=True, help="n/d > 0")
    s.add_argument("--theta", type=_real, required=True, help="angle in [0, pi] (accepts pi/3)")
    s.add_argument("--sigma", type=_real, required=True, help="label noise >= 0")
    _sim_args(s, d=100, draws=20)
    s.add_argument("--methods", default="scratch,linear,finetune",
                   help="comma-separated subset of scratch,linear,finetune")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=_cmd_simulate)

    ph = sub.add_parser("phase-diagram", help="draw a phase diagram (theory; --simulate adds "
                        "a simulation)", description="Draw the (gamma, theta) phase diagram "
                        "of linear transfer (Eq. 11) or fine-tuning (Eq. 15) for any sigma; "
                        "with --simulate, beside a simulated grid. Writes the figure and a "
                        "JSON provenance record next to it.")
    ph.add_argument("--method", choices=("linear", "finetune"), default="linear")
    ph.add_argument("--sigma", type=_real, default=0.2, help="label noise >= 0 (default 0.2)")
    ph.add_argument("--out", type=_path, required=True, help="figure file: .png, .pdf or .svg")
    ph.add_argument("--simulate", action="store_true", help="simulate the grid as well")
    _sim_args(ph, d=60, draws=8)
    ph.add_argument("--gammas", type=_grid, default=_grid("0.25:2:8"),
                    help="simulated gamma grid: start:stop:count or a,b,c (default 0.25:2:8)")
    ph.add_argument("--thetas", type=_grid, default=_grid("0:pi/2:5"),
                    help="simulated theta grid (default 0:pi/2:5)")
    ph.add_argument("--slices", type=_grid, default=_grid("0,pi/6,pi/3,pi/2"),
                    help="angles of the slices panel with --simulate "
                    "(nearest grid angles; default 0,pi/6,pi/3,pi/2)")
    ph.add_argument("--title", default="", help="figure title prefix (e.g. 'Fig. 1')")
    ph.add_argument("--no-cache", action="store_true",
                    help="do not use the sweep cache (linear method)")
    ph.set_defaults(func=_cmd_phase_diagram)

    nb = sub.add_parser("notebook", help="run a chapter notebook and save its figures with "
                        "their records", description="Execute a chapter of the book "
                        "(jupytext .py or .ipynb) and write every figure it records, with its "
                        "provenance record, into --figures.")
    nb.add_argument("path", help="e.g. notebooks/linear_transfer.py")
    nb.add_argument("--scale", choices=("paper", "smoke"), default="smoke")
    nb.add_argument("--figures", help="records folder (default $TRANSFERKIT_FIGURES or "
                    "_build/figures)")
    nb.add_argument("--timeout", type=_int, default=3600, help="seconds per cell")
    nb.set_defaults(func=_cmd_notebook)
    return p


def _path(text: str):
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path")
    return Path(text)


def _sim_args(p, d, draws) -> None:
    p.add_argument("--d", type=_int, default=d, help=f"input dimension (default {d})")
    p.add_argument("--depth", type=_int, default=2, help="network depth L >= 2 (default 2)")
    p.add_argument("--draws", type=_int, default=draws,
                   help=f"independent draws per point (default {draws})")
    p.add_argument("--seed", type=_int, default=0, help="base seed (default 0)")
    p.add_argument("--alpha", type=_real, default=1e-5,
                   help="initialisation scale (default 1e-5)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def main(argv=None) -> int:
    """Entry point of the ``transferkit`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        if args.command == "theory" and args.model is None:
            raise UsageError("theory needs a MODEL: linear, finetune, scratch or ridge "
                             f"(see `{PROG} theory --help`)")
        args.argv = argv
        previous = models.device.use_threads()    # TRANSFERKIT_THREADS (default 1), as the book
        try:
            return args.func(args)
        finally:
            models.device.use_threads(previous)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:  # transferkit's checks name the parameter and range
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except (MemoryError, OSError) as exc:  # the machine, not the argument: exit status 1
        print(f"{PROG}: error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:  # never a traceback; TRANSFERKIT_DEBUG=1 shows it

        if os.environ.get("TRANSFERKIT_DEBUG", "").strip() not in ("", "0"):
            raise
        print(f"{PROG}: error: {type(exc).__name__}: {_one_line(exc)} (a bug: please report "
              "it; TRANSFERKIT_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1


def _one_line(exc) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
