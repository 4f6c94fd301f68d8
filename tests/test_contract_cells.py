"""The input contract on the cell functions of :mod:`transferkit.experiments`.

The cell functions (``*_cell`` and ``diagonal_networks.task_data``, public in their module's
``__all__``) are what :func:`transferkit.sweep.run` calls, from the experiment functions
(``*_sim``, ``*_grid``, ``run_*``), which validate their arguments first.  A cell is public and
importable, so it is held to the project's contract on its own:

* **A** an integer parameter given as a whole float (``3.0`` for ``3``) is accepted and gives
  the same numbers as the integer;
* **B** a size of ``10**12`` (``1e12``) is refused before any allocation: a ``ValueError``
  naming the parameter, within :data:`LIMIT_S` seconds, never a ``MemoryError`` or a hang;
* **C** a vectorised parameter (or a sequence parameter) given as a python scalar is either
  taken as a length-1 array (the same numbers) or refused by a ``ValueError``/``TypeError``
  naming it, never a raw numpy or Python message;
* **D** NaN, and a negative value where the parameter's range excludes it, is a ``ValueError``
  naming the parameter, within :data:`LIMIT_S` seconds.

Every refusal must come from a frame inside ``transferkit/`` (as in
``tests/test_contract_experiments.py``); during tests B and D the process may grow by at most
:data:`MEMORY_CAP` (``RLIMIT_AS``), so an allocation that slips through is a ``MemoryError``
at once.  Data arrays (``W``, ``rng_state``, ``XP``, ``tasks`` ...), switches (bools, strings)
and ``None`` defaults are not driven.  :data:`CELLS` holds, for every cell, small valid
arguments (those the experiment function passes to ``run``: vectorised axes as 1-d arrays,
iterated axes as python scalars) and which of its parameters are integers, sizes, vectorised,
sequences and signed.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
import os
import re
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
from _helpers import memory_cap, time_limit

from transferkit import experiments
from transferkit.experiments import diagonal_networks as dn
from transferkit.experiments import finetuning as ft
from transferkit.experiments import lazy_rich as lr
from transferkit.experiments import linear_teachers as lt
from transferkit.experiments import linear_transfer as ltr
from transferkit.experiments import mnist_table as mt
from transferkit.experiments import ntk_similarity as ns_
from transferkit.experiments import ptft_relu as pr
from transferkit.experiments import regularisation as rg
from transferkit.experiments import relu_student_teacher as rst

#: Seconds a refusal (tests B and D) may take.
LIMIT_S = 10
#: Seconds a valid call (tests A and C) may take.
RUN_LIMIT_S = 60
#: Address space a refusal may add to the process (tests B and D): an allocation beyond it is
#: a MemoryError at once instead of a machine that swaps (e.g. a loop over 10**12 draws).
MEMORY_CAP = 4 * 2**30
HUGE = 10**12
PACKAGE_DIR = os.path.dirname(os.path.abspath(experiments.__file__)).rsplit(os.sep, 1)[0]

os.environ.setdefault("TRANSFERKIT_PROGRESS", "0")

#: Cells not in the table, and why.
SKIPPED = {
    "lenet_transfer.transfer_cell": "needs the downloaded MNIST / Fashion-MNIST data sets "
                                    "(tests/test_contract_experiments.py drives it)",
}


@dataclass
class Cell:
    """One cell function and what the tests need to know about its parameters."""

    func: object
    kw: object                  # () -> dict of small valid keyword arguments
    ints: tuple = ()            # integer parameters (scalars, or sequences of integers)
    sizes: tuple = ()           # sizes and counts (test B)
    vec: tuple = ()             # vectorised axes, passed whole as 1-d arrays
    seq: tuple = ()             # other parameters that take a 1-d sequence of numbers
    signed: tuple = ()          # numeric parameters whose range holds negative numbers
    float_huge: tuple = ()      # sizes also tried as the float 1e12
    _kw: dict = field(default=None, repr=False)

    def valid(self) -> dict:
        if self._kw is None:
            self._kw = self.kw()
        return dict(self._kw)


# ---------------------------------------------------------------------------
# inputs the experiments build before calling a cell
# ---------------------------------------------------------------------------

_RNG = np.random.default_rng(0)
_SPHERE = _RNG.standard_normal((12, 3))
_SPHERE /= np.linalg.norm(_SPHERE, axis=1, keepdims=True)


def _fig3():
    """The first draws of ``fig3_experiment(d=4, m=6, m_star=2, mus=[0.5], teachers=1, seed=0)``."""
    T, source, _, W0, rng = rst._fig3_start(4, 6, 2, np.array([0.5]), 1, 0)
    return T, source, W0, rng


def _fig3_n_kw():
    T, _, W0, rng = _fig3()
    return dict(j=0, t=0, ns=np.array([8]), rng_state=rng.bit_generator.state, W=W0,
                target_W=T.W, target_a=T.a, draws=2, scratch_seeds=1, readout_init=1e-7,
                lr=1.0, tol=1e-6, scratch_steps=20, max_time=1000.0, max_step=1.0,
                abs_tol=0.0, fixed_step=False, earlier=(), W_earlier=(), grad_dtype="float64")


def _anchored_pre_kw():
    _, source, _, _ = _fig3()
    return dict(seed=1, k=np.arange(1), lambdas=np.array([0.1]), source_W=source.W[0:1],
                source_a=source.a[0:1], m=6, readout_init=1e-7, lr=1.0, tol=1e-6,
                pretrain_steps=20, max_time=1000.0, max_step=1.0, abs_tol=0.0,
                fixed_step=False)


def _anchored_n_kw():
    T, _, _, _ = _fig3()
    W, rng = rst._anchored_start(1, 1, 6, 4, 1)
    return dict(j=0, k=np.arange(1), ns=np.array([8]), rng_state=rng.bit_generator.state, W=W,
                target_W=T.W, target_a=T.a, draws=2)


# ---------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------

_DL = dict(d=8, gamma=0.5, sigma=0.2, depth=2, draws=2, seed=0, alpha=1e-5)
_DL_INTS = ("d", "depth", "draws", "seed")
_DL_SIZES = ("d", "depth", "draws", "gamma")          # gamma = n / d: the sample size

_DIAG = dict(seed=0, D=10, k=2, overlap=1, ns=[4], n_aux=8)
_DIAG_INTS = ("seed", "D", "k", "overlap", "ns", "n_aux")
_DIAG_SIZES = ("D", "k", "overlap", "ns", "n_aux")
_DIAG_TRAIN = dict(rel_step=0.01, loss_tol=1e-8, max_steps=200)

_PT = dict(seed=0, d=12, ns=[8], draws=1, width=8, units=2, n_aux=16, n_test=20,
           loss_tol=1e-3, max_steps=50, lr_scale=0.5)
_PT_INTS = ("seed", "d", "ns", "draws", "width", "units", "n_aux", "n_test", "max_steps")
_PT_SIZES = ("d", "ns", "draws", "width", "units", "n_aux", "n_test")

def _table_data():
    """Table 1's cell arguments on 600 synthetic 20-pixel "digits" (labels 0..9)."""
    rng = np.random.default_rng(0)
    x, y = rng.random((600, 20)), rng.integers(0, 10, 600)
    G, s, cnt = mt.digit_moments(x, y)
    return dict(pairs=np.array([[0, 1, 2, 3], [4, 5, 6, 7]]), G=G, s=s, cnt=cnt, x_train=x,
                y_train=y, x_test=rng.random((200, 20)), y_test=rng.integers(0, 10, 200),
                ns=np.array([10]), draws=3, reps=2, seed=0, m=2, delta=1.0, c=3.0)


_RELU = dict(readout_init=1e-7, lr=1.0, tol=1e-6, max_time=1000.0, max_step=1.0, abs_tol=0.0)

CELLS = {
    # --- deep linear networks (paper 000) ---
    "finetuning.finetune_cell": Cell(
        ft.finetune_cell,
        lambda: dict(_DL, theta=np.array([0.5]), loss_tol=1e-10, max_steps=500, flow_tol=1e-3),
        ints=_DL_INTS + ("max_steps",), sizes=_DL_SIZES, vec=("theta",),
        float_huge=("draws",)),
    "finetuning.finetune_eq14_cell": Cell(
        ft.finetune_eq14_cell, lambda: dict(_DL, theta=np.array([0.5])),
        ints=_DL_INTS, sizes=_DL_SIZES, vec=("theta",), float_huge=("draws",)),
    "linear_transfer.linear_transfer_cell": Cell(
        ltr.linear_transfer_cell,
        lambda: dict(_DL, theta=np.array([0.5]), loss_tol=1e-10, max_steps=500),
        ints=_DL_INTS + ("max_steps",), sizes=_DL_SIZES, vec=("theta",)),
    "regularisation.weight_decay_scratch_cell": Cell(
        rg.weight_decay_scratch_cell,
        lambda: dict(_DL, weight_decay=np.array([0.1]), loss_tol=1e-10, grad_tol=1e-16,
                     max_steps=200, solver="descent"),
        ints=_DL_INTS + ("max_steps",), sizes=_DL_SIZES, vec=("weight_decay",)),
    # --- ReLU networks, lazy to rich (paper 000, App. C) ---
    "lazy_rich.init_scale_pretrain_cell": Cell(
        lr.init_scale_pretrain_cell,
        lambda: dict(alpha=np.array([0.5]), d=4, m=8, m_star=2, mu=0.5, draws=2, seed=0,
                     loss_tol=1e-6, max_steps=100, stall_tol=1e-4),
        ints=("d", "m", "m_star", "draws", "seed", "max_steps"),
        sizes=("d", "m", "m_star", "draws"), vec=("alpha",)),
    "lazy_rich.init_scale_scratch_cell": Cell(
        lr.init_scale_scratch_cell,
        lambda: dict(n=10, d=4, m=8, m_star=2, mu=0.5, draws=2, sigma=0.0, seed=0,
                     loss_tol=1e-6, max_steps=100, stall_tol=1e-4),
        ints=("n", "d", "m", "m_star", "draws", "seed", "max_steps"),
        sizes=("n", "d", "m", "m_star", "draws"), float_huge=("n",)),
    # --- linear teachers (paper 001) ---
    "linear_teachers.eigen_align_cell": Cell(
        lt.eigen_align_cell,
        lambda: dict(n=3, lam=lt.spiked_spectrum(6, 2), m=2, draws=2, seed=0, norm=1.0,
                     loss_tol=1e-12, max_steps=2000),
        ints=("n", "m", "draws", "seed", "max_steps"), sizes=("n", "m", "draws"),
        seq=("lam",)),
    "linear_teachers.depth_alpha_cell": Cell(
        lt.depth_alpha_cell,
        lambda: dict(depth=2, d=10, n=4, alphas=np.array([0.5]), draws=2, seed=0,
                     noise_norm=0.5, step_scale=0.5, loss_tol=1e-12),
        ints=("depth", "d", "n", "draws", "seed"), sizes=("depth", "d", "n", "draws"),
        seq=("alphas",), signed=("alphas",)),
    "linear_teachers.scaling_cell": Cell(
        lt.scaling_cell,
        lambda: dict(scale=np.array([1.0]), d=10, n=4, depth=2, draws=2, seed=0,
                     angle_dist=0.1, step_scale=0.5, loss_tol=1e-12),
        ints=("d", "n", "depth", "draws", "seed"), sizes=("d", "n", "depth", "draws"),
        vec=("scale",)),
    "linear_teachers.frozen_cell": Cell(
        lt.frozen_cell,
        lambda: dict(n=4, d=10, cos_angle=0.5, draws=2, seed=0, init_scale=1e-5,
                     step_scale=0.5, loss_tol=1e-12, rcond=1e-3),
        ints=("n", "d", "draws", "seed"), sizes=("n", "d", "draws"), signed=("cos_angle",),
        float_huge=("n",)),
    "linear_teachers.ntk_finetune_cell": Cell(
        lt.ntk_finetune_cell,
        lambda: dict(m=16, kappa=1.0, symmetric=True, d=4, n_source=8, ns=[4],
                     distances=np.array([0.5]), draws=1, n_test=50, tol=1e-3, max_steps=200,
                     seed=0),
        ints=("m", "d", "n_source", "ns", "draws", "n_test", "max_steps", "seed"),
        sizes=("m", "d", "n_source", "ns", "draws", "n_test"), seq=("ns", "distances")),
    # --- Table 1 of paper 001, on synthetic digits (the cells take the data as arrays) ---
    "mnist_table.table1_pair_cell": Cell(
        mt.table1_pair_cell, lambda: dict(_table_data(), k=0, rcond=1e-6, other_c=(1.0,)),
        ints=("k", "ns", "draws", "reps", "seed", "m"), sizes=("ns", "draws", "reps"),
        seq=("ns", "other_c")),
    "mnist_table.fit_sensitivity_cell": Cell(
        mt.fit_sensitivity_cell, lambda: dict(_table_data(), fit=np.array(["pinv"]), k=0),
        ints=("k", "ns", "draws", "reps", "seed", "m"), sizes=("ns", "draws", "reps"),
        seq=("ns",)),
    # --- NTK similarity (paper 002) ---
    "ntk_similarity.width_cell": Cell(
        ns_.width_cell,
        lambda: dict(m=16, XP=_SPHERE[:8], yP=np.ones(8), names=["Q"],
                     tasks={"Q": [_SPHERE[8:], -np.ones(4)]}, kappa=1.0, seeds=[0],
                     symmetric=True, tol=1e-5, max_steps=5, record_every=1),
        ints=("m", "seeds", "max_steps", "record_every"), sizes=("m",), seq=("seeds",)),
    # --- ReLU PT+FT (paper 003/004) ---
    "ptft_relu.sample_efficiency_cell": Cell(
        pr.sample_efficiency_cell,
        lambda: dict(_PT, rho=1.0, magnitude=1.0, alpha=1e-2, gamma=1e-2),
        ints=_PT_INTS, sizes=_PT_SIZES, seq=("ns",), signed=("rho",)),
    "ptft_relu.stl_init_scale_cell": Cell(
        pr.stl_init_scale_cell, lambda: dict(_PT, alpha=0.1, rho=1.0, magnitude=1.0),
        ints=_PT_INTS, sizes=_PT_SIZES, seq=("ns",), signed=("rho",)),
    "ptft_relu.stl_dense_cell": Cell(
        pr.stl_dense_cell,
        lambda: dict(_PT, alpha=0.1, readout="gaussian", dense_units=20),
        ints=_PT_INTS + ("dense_units",), sizes=_PT_SIZES + ("dense_units",), seq=("ns",)),
    "ptft_relu.nested_rescaling_cell": Cell(
        pr.nested_rescaling_cell,
        lambda: dict(_PT, scales=[1.0], magnitude=1.0, alpha=1e-2, gamma=1e-2),
        ints=_PT_INTS, sizes=_PT_SIZES, seq=("ns", "scales")),
    "ptft_relu.nested_mtl_cell": Cell(
        pr.nested_mtl_cell, lambda: dict(_PT, magnitude=1.0, alpha=1e-2),
        ints=_PT_INTS, sizes=_PT_SIZES, seq=("ns",)),
    "ptft_relu.overlap_cell": Cell(
        pr.overlap_cell,
        lambda: dict(_PT, shared=np.array([1]), alpha=1e-2, gamma=1e-2, mtl=False),
        ints=_PT_INTS + ("shared",), sizes=_PT_SIZES, vec=("shared",), seq=("ns",)),
    # --- diagonal networks (paper 004) ---
    "diagonal_networks.task_data": Cell(
        dn.task_data, lambda: dict(_DIAG, draws=1),
        ints=_DIAG_INTS + ("draws",), sizes=_DIAG_SIZES + ("draws",), seq=("ns",),
        float_huge=("D",)),
    "diagonal_networks.tasks_cell": Cell(
        dn.tasks_cell,
        lambda: dict(_DIAG, **_DIAG_TRAIN, draws=1, alpha=0.1, gamma=0.1, mtl_loss_tol=1e-8),
        ints=_DIAG_INTS + ("draws", "max_steps"), sizes=_DIAG_SIZES + ("draws",),
        seq=("ns",)),
    "diagonal_networks.mtl_cell": Cell(
        dn.mtl_cell, lambda: dict(_DIAG, **_DIAG_TRAIN, alpha=0.1, draws=1, grow=1.1),
        ints=_DIAG_INTS + ("draws", "max_steps"), sizes=_DIAG_SIZES + ("draws",),
        seq=("ns",)),
    "diagonal_networks.l12_cell": Cell(
        dn.l12_cell, lambda: dict(_DIAG, draws=1),
        ints=_DIAG_INTS + ("draws",), sizes=_DIAG_SIZES + ("draws",), seq=("ns",)),
    "diagonal_networks.mtl_draw_cell": Cell(
        dn.mtl_draw_cell, lambda: dict(_DIAG, **_DIAG_TRAIN, alpha=np.array([0.1]), draw=0),
        ints=_DIAG_INTS + ("draw", "max_steps"), sizes=_DIAG_SIZES, vec=("alpha",),
        seq=("ns",)),
    "diagonal_networks.l12_draw_cell": Cell(
        dn.l12_draw_cell, lambda: dict(_DIAG, draw=0),
        ints=_DIAG_INTS + ("draw",), sizes=_DIAG_SIZES, seq=("ns",)),
    "diagonal_networks.tasks_draw_cell": Cell(
        dn.tasks_draw_cell,
        lambda: dict(_DIAG, **_DIAG_TRAIN, draw=0, alpha=0.1, gamma=0.1, mtl_loss_tol=1e-8),
        ints=_DIAG_INTS + ("draw", "max_steps"), sizes=_DIAG_SIZES, seq=("ns",)),
    "diagonal_networks.rescaling_cell": Cell(
        dn.rescaling_cell,
        lambda: dict(seed=0, D=10, k=2, k_main=1, ns=[4], n_aux=8, draws=1, scale=1.0,
                     alpha=0.1, gamma=0.1, **_DIAG_TRAIN),
        ints=("seed", "D", "k", "k_main", "ns", "n_aux", "draws", "max_steps"),
        sizes=("D", "k", "k_main", "ns", "n_aux", "draws"), seq=("ns",)),
    "diagonal_networks.rescaling_draw_cell": Cell(
        dn.rescaling_draw_cell,
        lambda: dict(draw=0, seed=0, D=10, k=2, k_main=1, ns=[4], n_aux=8, scales=[1.0],
                     alpha=0.1, gamma=0.1, **_DIAG_TRAIN),
        ints=("draw", "seed", "D", "k", "k_main", "ns", "n_aux", "max_steps"),
        sizes=("D", "k", "k_main", "ns", "n_aux"), seq=("ns", "scales")),
    # --- ReLU student-teacher (paper 000, Fig. 3 and App. E) ---
    "relu_student_teacher.fig3_pretrain_cell": Cell(
        rst.fig3_pretrain_cell,
        lambda: dict(_RELU, seed=0, teacher=0, d=4, m=6, m_star=2, mus=np.array([0.5]),
                     teachers=1, pretrain_steps=20, target_norm=None, fixed_step=False,
                     earlier=()),
        ints=("seed", "teacher", "d", "m", "m_star", "teachers", "pretrain_steps"),
        sizes=("d", "m", "m_star", "teachers", "pretrain_steps"), seq=("mus",),
        signed=("readout_init",)),
    "relu_student_teacher.fig3_n_cell": Cell(
        rst.fig3_n_cell, _fig3_n_kw,
        ints=("j", "t", "ns", "draws", "scratch_seeds", "scratch_steps"),
        sizes=("ns", "draws", "scratch_seeds", "scratch_steps"), seq=("ns",),
        signed=("readout_init",)),
    "relu_student_teacher.anchored_pretrain_cell": Cell(
        rst.anchored_pretrain_cell, _anchored_pre_kw,
        ints=("seed", "k", "m", "pretrain_steps"), sizes=("m", "pretrain_steps"),
        vec=("k",), seq=("lambdas",), signed=("readout_init",)),
    "relu_student_teacher.anchored_n_cell": Cell(
        rst.anchored_n_cell, _anchored_n_kw,
        ints=("j", "k", "ns", "draws"), sizes=("ns", "draws"), vec=("k",), seq=("ns",)),
}


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def _real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _arguments(cell: Cell) -> dict:
    """The valid arguments and the numeric defaults of the signature."""
    args = cell.valid()
    for p, par in inspect.signature(cell.func).parameters.items():
        if p not in args and par.default is not inspect.Parameter.empty and _real(par.default):
            args[p] = par.default
    return args


def _names(param):
    """The names a message may use for ``param`` ("ns" or "n", "scale" or "scales")."""
    out = {param, param + "s"}
    if param.endswith("s"):
        out.add(param[:-1])
    return out


def _names_param(message, param) -> bool:
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", message)
               for n in _names(param))


def _from_transferkit(exc) -> str | None:
    """``None`` when the innermost frame of ``exc`` is in ``transferkit/``, else its file."""
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    path = os.path.abspath(frame.filename)
    return None if path.startswith(PACKAGE_DIR + os.sep) else f"{frame.filename}:{frame.lineno}"


def _call(cell: Cell, args, seconds):
    with warnings.catch_warnings(), time_limit(seconds):
        warnings.simplefilter("ignore")
        return cell.func(**args)


def _assert_refused(cell: Cell, args, param, kinds=(ValueError,)):
    """The call raises one of ``kinds`` from inside transferkit, naming ``param``, within
    :data:`LIMIT_S` seconds."""
    try:
        with memory_cap(MEMORY_CAP):
            out = _call(cell, args, LIMIT_S)
    except kinds as exc:
        where = _from_transferkit(exc)
        assert where is None, f"raised outside transferkit ({where}): {type(exc).__name__}: {exc}"
        assert _names_param(str(exc), param), \
            f"the message does not name {param!r}: {type(exc).__name__}: {exc}"
        return
    except (MemoryError, TimeoutError) as exc:
        pytest.fail(f"{type(exc).__name__} instead of a refusal: {exc}")
    except Exception as exc:                                    # noqa: BLE001
        pytest.fail(f"{type(exc).__name__} instead of a ValueError naming {param!r}: {exc}")
    pytest.fail(f"no error: returned {_summary(out)}")


def _summary(out) -> str:
    if isinstance(out, dict):
        bad = [k for k, v in out.items() if _has_nan(v)]
        return f"a dict of {len(out)} entries" + (f", NaN in {bad[:4]}" if bad else "")
    return type(out).__name__


def _has_nan(v) -> bool:
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        return False
    return bool(np.isnan(a).any())


def _leaves(out, path="out"):
    """The arrays of a result (dicts, dataclasses, lists, tuples), by path."""
    if isinstance(out, dict):
        for k in sorted(out):
            yield from _leaves(out[k], f"{path}[{k!r}]")
    elif dataclasses.is_dataclass(out):
        for f in dataclasses.fields(out):
            yield from _leaves(getattr(out, f.name), f"{path}.{f.name}")
    elif isinstance(out, (list, tuple)):
        for i, v in enumerate(out):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, np.asarray(out)


def _same(a, b) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


_REFERENCE = {}


def _reference(name):
    """The result of the valid call of cell ``name`` (computed once)."""
    if name not in _REFERENCE:
        _REFERENCE[name] = _call(CELLS[name], CELLS[name].valid(), RUN_LIMIT_S)
    return _REFERENCE[name]


def _as_float(v):
    """An integer argument as whole floats: a scalar, a list or an array of them."""
    if isinstance(v, np.ndarray):
        return v.astype(float)
    if isinstance(v, (list, tuple)):
        return type(v)(float(x) for x in v)
    return float(v)


def _replace_entries(v, x):
    """A sequence argument ``v`` with its entries replaced by ``x`` (same container)."""
    if isinstance(v, np.ndarray):
        return np.full(v.shape, x, dtype=float if isinstance(x, float) else v.dtype)
    return type(v)(x for _ in v)


def _first(v):
    """The first entry of a sequence argument, as a python scalar."""
    x = v[0] if not isinstance(v, np.ndarray) else v.reshape(-1)[0]
    return x.item() if isinstance(x, np.generic) else x


# ---------------------------------------------------------------------------
# the cases
# ---------------------------------------------------------------------------

def _a_cases():
    for name, cell in CELLS.items():
        args = _arguments(cell)
        ints = list(cell.ints) + [p for p, v in args.items()
                                  if isinstance(v, int) and not isinstance(v, bool)
                                  and p not in cell.ints]
        for p in ints:
            yield pytest.param(name, p, id=f"{name}-{p}")


def _b_cases():
    for name, cell in CELLS.items():
        for p in cell.sizes:
            yield pytest.param(name, p, HUGE, id=f"{name}-{p}=10**12")
            if p in cell.float_huge:
                yield pytest.param(name, p, 1e12, id=f"{name}-{p}=1e12")


def _c_cases():
    for name, cell in CELLS.items():
        for p in cell.vec:
            yield pytest.param(name, p, id=f"{name}-{p}-vectorised")
        for p in cell.seq:
            yield pytest.param(name, p, id=f"{name}-{p}-sequence")


def _negative(v):
    if isinstance(v, (int, np.integer)):
        return -1
    return -abs(float(v)) if v else -0.5


def _d_cases():
    for name, cell in CELLS.items():
        args = _arguments(cell)
        for p, v in args.items():
            if not (p in cell.vec or p in cell.seq or _real(v)):
                continue
            yield pytest.param(name, p, "nan", id=f"{name}-{p}-nan")
            if p not in cell.signed:
                yield pytest.param(name, p, "negative", id=f"{name}-{p}-negative")


# ---------------------------------------------------------------------------
# the tests
# ---------------------------------------------------------------------------

def test_the_table_covers_every_public_cell():
    """Every public ``*_cell`` of every experiment module (and ``task_data``) is in
    :data:`CELLS` or :data:`SKIPPED`; every argument of the table exists."""
    found = {"diagonal_networks.task_data"}
    for mod in experiments.__all__:
        module = getattr(experiments, mod)
        found |= {f"{mod}.{n}" for n in module.__all__ if n.endswith("_cell")}
    assert found == set(CELLS) | set(SKIPPED)
    for name, cell in CELLS.items():
        params = inspect.signature(cell.func).parameters
        declared = set(cell.ints) | set(cell.sizes) | set(cell.vec) | set(cell.seq) \
            | set(cell.signed) | set(cell.valid())
        assert declared <= set(params), (name, declared - set(params))


@pytest.mark.parametrize("name", list(CELLS))
def test_valid_arguments_run(name):
    """The table's arguments are a valid call (else the other tests test nothing)."""
    out = _reference(name)
    assert list(_leaves(out))


@pytest.mark.parametrize("name, param", list(_a_cases()))
def test_A_whole_float_is_an_integer(name, param):
    cell = CELLS[name]
    want = _reference(name)
    args = _arguments(cell)
    args[param] = _as_float(args[param])
    try:
        got = _call(cell, args, RUN_LIMIT_S)
    except Exception as exc:                                   # noqa: BLE001
        pytest.fail(f"{param}={args[param]!r} raised {type(exc).__name__}: {exc}")
    a, b = dict(_leaves(want)), dict(_leaves(got))
    assert a.keys() == b.keys(), f"other outputs: {sorted(set(a) ^ set(b))}"
    diff = [k for k in a if not _same(a[k], b[k])]
    assert not diff, f"different numbers with {param}={args[param]!r}: {diff[:5]}"


@pytest.mark.parametrize("name, param, value", list(_b_cases()))
def test_B_huge_size_is_refused(name, param, value):
    cell = CELLS[name]
    args = _arguments(cell)
    if param in cell.seq or param in cell.vec:
        args[param] = _replace_entries(args[param], value)
    else:
        args[param] = value
    _assert_refused(cell, args, param)


@pytest.mark.parametrize("name, param", list(_c_cases()))
def test_C_scalar_for_an_array(name, param):
    cell = CELLS[name]
    args = _arguments(cell)
    scalar = _first(args[param])
    args[param] = scalar
    try:
        got = _call(cell, args, RUN_LIMIT_S)
    except (ValueError, TypeError) as exc:
        where = _from_transferkit(exc)
        assert where is None, f"raised outside transferkit ({where}): {type(exc).__name__}: {exc}"
        assert _names_param(str(exc), param), \
            f"{param}={scalar!r}: the message does not name {param!r}: {type(exc).__name__}: {exc}"
        return
    except Exception as exc:                                   # noqa: BLE001
        pytest.fail(f"{param}={scalar!r} raised {type(exc).__name__}: {exc}")
    want = dict(_leaves(_reference(name)))
    got = dict(_leaves(got))
    assert want.keys() == got.keys(), f"other outputs: {sorted(set(want) ^ set(got))}"
    diff = [k for k in want if not (_same(want[k], got[k]) or (
        want[k].ndim >= 1 and want[k].shape[0] == 1 and _same(want[k][0], got[k])))]
    assert not diff, f"{param}={scalar!r} gives other numbers than a length-1 array: {diff[:5]}"


@pytest.mark.parametrize("name, param, bad", list(_d_cases()))
def test_D_nan_or_negative_is_refused(name, param, bad):
    cell = CELLS[name]
    args = _arguments(cell)
    v = args[param]
    if param in cell.vec or param in cell.seq:
        x = float("nan") if bad == "nan" else _negative(_first(v))
        if isinstance(v, np.ndarray):
            a = v.astype(float) if bad == "nan" else v.copy()
            a.reshape(-1)[0] = x
            args[param] = a
        else:
            args[param] = type(v)([x] + list(v)[1:])
    else:
        args[param] = float("nan") if bad == "nan" else _negative(v)
    _assert_refused(cell, args, param)


def test_nan_positions_helper():
    """The comparison of test A sees a NaN moved or a number changed (the test is honest)."""
    a = np.array([1.0, np.nan])
    assert _same(a, a.copy())
    assert not _same(a, np.array([np.nan, 1.0]))
    assert not _same(a, np.array([1.0 + 1e-16 * 4, np.nan]))
    assert _names_param("ns must be ...", "ns") and _names_param("n must be", "ns")
    assert not _names_param("n_aux must be", "n")
    assert math.isnan(float("nan"))
