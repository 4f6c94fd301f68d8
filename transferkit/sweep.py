r"""Parameter sweeps with an on-disk cache, resumption and an optional Dask cluster.

A phase diagram is a grid of cells, e.g. :math:`(\gamma, \theta, \text{draw})`.  This module
runs such a grid once, for every notebook:

.. code-block:: python

    from transferkit import sweep
    res = sweep.run(sweep.linear_transfer_cell,
                    sweep.Grid(gamma=[0.5, 1.5], theta=np.linspace(0, np.pi / 2, 7)),
                    fixed=dict(d=500, sigma=0.2, draws=20),
                    vectorize=("theta",))
    res["linear"].shape          # (2, 7, 20): the grid axes, then what the cell returns

**Grid and cells.** A :class:`Grid` is data: an ordered mapping of parameter names to 1-d
arrays of values.  ``fixed`` parameters are the same for every cell.  The *cell function*
is a plain, importable, top-level callable (so that Dask can pickle it by reference); it
is called with keyword arguments, one per grid axis and fixed parameter, and returns a dict
of numpy arrays or scalars.  The caller chooses which axes the sweep iterates and which
the cell function handles itself (``vectorize``): a vectorised axis is passed *whole*, as
a 1-d numpy array, and every output of the cell must then have the vectorised axes as its
leading dimensions, in grid order (anything after them, e.g. the draws, is free).  An
iterated axis is passed as one python scalar per call.  :func:`run` stacks the cells into
arrays indexed by the grid axes, in the order of the grid, followed by the trailing
dimensions of the outputs.  With ``vectorize=("theta",)``, :func:`~transferkit.experiments.linear_transfer.linear_transfer_cell`
solves every angle of one :math:`\gamma` at once and trains one scratch model per draw,
as :func:`transferkit.experiments.deep_linear.simulate_grid` does; its draws are a trailing dimension
batched inside the cell (``simulate_grid`` numbers them ``0 .. draws-1``), so a cell is
one :math:`\gamma` row of the :math:`(\gamma, \theta, \text{draw})` grid.

**Cache key.** Each call of the cell function is stored in one file,
``<cache dir>/<module.qualname>/<version hash>/<key>.npz``, where ``key`` is the SHA-256 of

* the cell function's qualified name (``module.qualname``) and the hash of its source;
* its parameters, canonicalised: ints and floats by value (floats by ``repr``, so
  ``0.1`` and ``0.1 + 1e-17`` differ, and ``1`` and ``1.0`` differ), strings, lists and
  tuples (the same), dicts by sorted key, numpy arrays by dtype, shape and a hash of their
  bytes; any other type is a ``ValueError`` naming the parameter;
* the *code version*: by default the SHA-256 of every ``transferkit/**/*.py`` file
  (:func:`code_version`), or the ``version=`` string passed to :func:`run`.

**Why a code version.** A cached number is only valid for the code that computed it.
The book's notebook cache (jupyter-cache, used by Jupyter Book) re-executes a notebook
only when its own cells change and cannot see a change inside ``transferkit``; the
Makefile therefore wipes that cache when the package changes.  This cache lives below the
notebooks and is invalidated the same way, automatically: any edit to any file of the
package gives a new version, hence new keys, and every cell is recomputed.  Cell functions
outside the package are covered by the hash of their own source only (not of what they
call): pass ``version=`` when they depend on other changing code.  The version is
computed once per process (the code a long-running kernel has imported).  Entries of old
versions are never read again; :func:`clear_cache` removes them.

**Where.** ``$TRANSFERKIT_CACHE`` if set, else ``_build/cache`` in the repository that
holds the package (found from the package's location, not from the working directory, so
notebooks executed from ``notebooks/`` or ``_build/nbval/`` share it), else, for an
installed package outside a repository, ``~/.cache/transferkit``.  :func:`cache_dir`
returns it.  ``make clean`` removes it with the rest of ``_build``; ``sweep.clear_cache()``
removes every entry, ``sweep.clear_cache(func)`` those of one cell function,
``sweep.clear_cache(stale=True)`` only those of other code versions; deleting the folder
by hand is safe too.

**Safety.** Entries are written atomically: to a temporary file in the same folder,
flushed and ``fsync``-ed, then renamed over the final name (``os.replace``).  A run
killed at any moment leaves either no entry or a complete one (and at most a
``.tmp-*`` file, which is never read and is removed by :func:`clear_cache`).  Entries are
``.npz`` files read with ``allow_pickle=False``; every entry stores its full key, which is
compared on reading; an unreadable, truncated, corrupted or foreign entry is a miss: the
cell is recomputed and the entry rewritten, never returned.

**Resumption.** Every cell is stored as soon as it is computed, so rerunning an
interrupted sweep (an exception, a killed kernel, a lost worker) computes only the
missing cells.

**Backends.** By default cells run one after another in this process (the cell functions
batch on tensors and use the GPU when present).  ``scheduler="tcp://host:port"`` or a
``dask.distributed.Client`` sends the missing cells to a Dask cluster (install
``transferkit[cluster]``); so does ``TRANSFERKIT_SCHEDULER=tcp://host:port`` in the
environment for every sweep that passes no ``scheduler`` (e.g.
``TRANSFERKIT_SCHEDULER=tcp://... make book``).  ``scheduler="local:N"`` (or
``TRANSFERKIT_SCHEDULER=local:N``) starts, once per process and only when a sweep has
cells to compute, a Dask ``LocalCluster`` of ``N`` worker processes of
:func:`transferkit.config.threads` torch threads each on this machine: several cores
without sharing them between threads of one process.  Results come back to this process,
which writes the cache, so the workers need no shared file system.  A cell's random numbers are
keyed by its seeds, not by the worker that runs it, so both backends give the same numbers
(the workers must run the same transferkit code and the same number of torch threads; the
test suite checks bitwise equality on a ``LocalCluster``).  Note that vectorising an axis
or not may change the last bits of a result (a batched solve sums in another order): the
vectorised values are part of the key, so such results never mix in the cache.

**Progress.** A tqdm bar counts cells (those from the cache are counted at the start and
excluded from the rate, so the time left is that of the cells still to compute); it
follows :func:`transferkit.config.progress` (``TRANSFERKIT_PROGRESS``).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import inspect
import json
import logging
import os
import shutil
import tempfile
import time
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from . import config
from ._validate import check_int

__all__ = ["CacheWarning", "Grid", "SweepResult", "cache_dir", "cell_key", "clear_cache", "code_version", "run"]


_PACKAGE = Path(__file__).resolve().parent


_META = "__meta__"


_VALUE_KINDS = "biufcU"   # bool, int, uint, float, complex, unicode


class CacheWarning(UserWarning):
    """A cache entry was unreadable or corrupted and has been recomputed."""


# ---------------------------------------------------------------------------
# where and which version
# ---------------------------------------------------------------------------


def cache_dir() -> Path:
    """The default cache folder: ``$TRANSFERKIT_CACHE``, else ``<repo>/_build/cache``.

    The repository is the folder holding the ``transferkit`` package, recognised by its
    ``pyproject.toml``; an installed package outside a repository uses
    ``$XDG_CACHE_HOME/transferkit`` (default ``~/.cache/transferkit``).  The working
    directory plays no role.
    """
    env = os.environ.get("TRANSFERKIT_CACHE", "").strip()
    if env:
        return Path(env).expanduser().resolve()
    root = _PACKAGE.parent
    if (root / "pyproject.toml").is_file():
        return root / "_build" / "cache"
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or "~/.cache"
    return Path(base).expanduser() / "transferkit"


def code_version(root=None) -> str:
    """SHA-256 of the sources of the package: every ``**/*.py`` file below ``root``.

    ``root`` defaults to the installed ``transferkit`` package; that value is computed
    once per process.  Files are taken in sorted order of their relative paths, and
    both the path and the content enter the hash, so adding, removing, renaming or
    editing any module changes the version.
    """
    if root is None:
        return _package_version()
    return _hash_tree(Path(root))


@functools.lru_cache(maxsize=1)
def _package_version() -> str:
    return _hash_tree(_PACKAGE)


def _hash_tree(root: Path) -> str:
    if not root.is_dir():
        raise ValueError(f"root must be a folder (got {str(root)!r})")
    h = hashlib.sha256()
    files = sorted((p for p in root.rglob("*.py") if "__pycache__" not in p.parts),
                   key=lambda p: p.relative_to(root).as_posix())
    for p in files:
        h.update(p.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


# ---------------------------------------------------------------------------
# keys
# ---------------------------------------------------------------------------


def _canon(value, where: str):
    """A JSON-able, type-tagged canonical form of a parameter value."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return ["bool", bool(value)]
    if isinstance(value, (int, np.integer)):
        return ["int", str(int(value))]
    if isinstance(value, float):                     # includes np.float64
        return ["float", repr(float(value))]
    if isinstance(value, complex):                   # includes np.complex128
        return ["complex", repr(complex(value))]
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, np.generic):                # other numpy scalars: as 0-d arrays
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _VALUE_KINDS:
            raise ValueError(f"{where} is a numpy array of dtype {value.dtype}, which cannot be "
                             f"part of a cache key (use numeric, bool or str arrays)")
        a = np.ascontiguousarray(value)
        return ["ndarray", a.dtype.str, list(a.shape), hashlib.sha256(a.tobytes()).hexdigest()]
    if isinstance(value, (list, tuple)):
        return ["list", [_canon(v, f"{where}[{i}]") for i, v in enumerate(value)]]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"{where} is a dict with a non-string key {k!r}")
            out[k] = _canon(v, f"{where}[{k!r}]")
        return ["dict", out]
    t = type(value)
    if t.__module__ == "torch" and t.__name__ == "dtype":
        return ["torch.dtype", str(value)]
    raise ValueError(f"{where} has type {t.__name__}, which cannot be part of a cache key "
                     f"(use numbers, strings, numpy arrays, or lists and dicts of them)")


def _func_name(func) -> str:
    """``module.qualname`` of a top-level function, else ``ValueError`` naming ``func``."""
    if not callable(func):
        raise ValueError(f"func must be a callable (got {func!r})")
    module = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", None)
    if not module or not qualname or "<" in qualname or not inspect.isfunction(func):
        raise ValueError(f"func must be a top-level python function that can be imported "
                         f"(got {func!r}): lambdas, nested functions, partials and methods "
                         f"have no stable name for the cache and cannot be sent to Dask")
    return f"{module}.{qualname}"


@functools.lru_cache(maxsize=256)
def _source_hash(func) -> str:
    try:
        src = inspect.getsource(func)
    except (OSError, TypeError):
        return ""
    return hashlib.sha256(src.encode()).hexdigest()


def _payload(func, params: dict, version: str, where=None, canon=None) -> str:
    """The JSON of a cell's key; ``canon``: parameters already in canonical form (the fixed
    parameters of a sweep, canonicalised once instead of once per cell)."""
    where = where or {}
    canon = dict(canon or {})
    canon.update({k: _canon(v, where.get(k, f"parameter {k!r}")) for k, v in params.items()
                  if k not in canon})
    return json.dumps({"func": _func_name(func), "source": _source_hash(func),
                       "version": version, "params": canon},
                      sort_keys=True, separators=(",", ":"))


def cell_key(func, params: Mapping, version: str | None = None) -> str:
    """The cache key (SHA-256 hex) of calling ``func(**params)`` at a code version.

    ``version`` defaults to :func:`code_version`.  See the module docstring for what
    enters the key.
    """
    version = code_version() if version is None else _check_version(version)
    return hashlib.sha256(_payload(func, dict(params), version).encode()).hexdigest()


def _check_version(version) -> str:
    if not isinstance(version, str) or not version:
        raise ValueError(f"version must be a non-empty string (got {version!r})")
    return version


def _version_dir(version: str) -> str:
    return hashlib.sha256(version.encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------
# the store: atomic writes, verified reads
# ---------------------------------------------------------------------------


def _load(path: Path, payload: str):
    """``(outputs, meta)`` of a valid entry for ``payload``; ``None`` if absent; ``False`` if bad."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z[_META][()]))
            names = meta["outputs"]
            if meta.get("key") != payload or sorted(z.files) != sorted(names + [_META]):
                return False
            out = {k: z[k] for k in names}     # reads every member: checks its CRC
    except Exception:   # noqa: BLE001 -- truncated, corrupted or foreign: a miss
        return False
    return out, meta


def _store(path: Path, outputs: dict, meta: dict) -> None:
    """Write an entry atomically: temp file in the same folder, fsync, ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            # np.savez's own format, written member by member: output names cannot
            # collide with savez's keyword arguments, and nothing is pickled
            with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                arrays = {_META: np.array(json.dumps(meta)), **outputs}
                for k, a in arrays.items():
                    with zf.open(k + ".npy", "w", force_zip64=True) as m:
                        np.lib.format.write_array(m, np.asanyarray(a), allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):        # make the rename itself durable
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def clear_cache(func=None, *, stale: bool = False, directory=None) -> int:
    """Remove cache entries; returns the number of entry files removed.

    Parameters
    ----------
    func : callable, optional
        Only the entries of this cell function (default: all).
    stale : bool
        Only entries of code versions other than the current :func:`code_version`.
    directory : path, optional
        The cache folder (default :func:`cache_dir`).

    Leftover ``.tmp-*`` files of killed runs are removed as well.
    """
    root = Path(directory) if directory is not None else cache_dir()
    if not root.is_dir():
        return 0
    funcs = [root / _func_name(func)] if func is not None else [p for p in root.iterdir() if p.is_dir()]
    keep = _version_dir(code_version()) if stale else None
    removed = 0
    for fdir in funcs:
        if not fdir.is_dir():
            continue
        for vdir in [p for p in fdir.iterdir() if p.is_dir()]:
            if vdir.name == keep:
                for tmp in vdir.glob(".tmp-*"):
                    with contextlib.suppress(OSError):
                        tmp.unlink()
                continue
            removed += sum(1 for p in vdir.glob("*.npz") if not p.name.startswith("."))
            shutil.rmtree(vdir, ignore_errors=True)
        if not stale:
            shutil.rmtree(fdir, ignore_errors=True)
    return removed


# ---------------------------------------------------------------------------
# grid and result
# ---------------------------------------------------------------------------


class Grid:
    """Named axes of a sweep: ``Grid(gamma=[...], theta=[...])`` or ``Grid({"gamma": [...]})``.

    Axes keep their order (the order of the result's dimensions).  Values are 1-d
    sequences of numbers, booleans or strings (a scalar is an axis of length one).
    """

    def __init__(self, axes: Mapping | None = None, /, **kwargs):
        if axes is not None and not isinstance(axes, Mapping):
            raise ValueError(f"grid axes must be a mapping of names to values (got {type(axes).__name__})")
        items = dict(axes or {})
        for k in kwargs:
            if k in items:
                raise ValueError(f"grid axis {k!r} is given twice")
        items.update(kwargs)
        if not items:
            raise ValueError("grid must have at least one axis")
        self._axes: dict[str, np.ndarray] = {}
        for name, values in items.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"grid axis names must be python identifiers (got {name!r})")
            if hasattr(values, "detach"):                      # torch tensors
                values = values.detach().cpu().numpy()
            try:
                v = np.array(values)
            except (ValueError, TypeError) as e:
                raise ValueError(f"grid axis {name!r} must be a 1-d sequence ({e})") from None
            if v.ndim == 0:
                v = v.reshape(1)
            if v.ndim != 1 or v.size == 0:
                raise ValueError(f"grid axis {name!r} must be a non-empty 1-d sequence "
                                 f"(got shape {v.shape})")
            if v.dtype.kind not in _VALUE_KINDS:
                raise ValueError(f"grid axis {name!r} must hold numbers, booleans or strings "
                                 f"(got dtype {v.dtype})")
            v.flags.writeable = False
            self._axes[name] = v

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._axes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(v.size for v in self._axes.values())

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def __getitem__(self, name: str) -> np.ndarray:
        return self._axes[name]

    def __contains__(self, name) -> bool:
        return name in self._axes

    def items(self):
        return self._axes.items()

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}=<{v.size} values>" for k, v in self._axes.items())
        return f"Grid({inner})"


@dataclass
class SweepResult:
    """Outputs of a sweep, indexed by the grid axes (in grid order) then the cells' own.

    ``res[name]`` looks up an output, else a grid axis, else a fixed parameter.
    ``seconds`` is the compute time of each call of the cell function (shape of the
    iterated axes; for cached cells, the time it took when computed).
    """

    axes: dict
    data: dict
    fixed: dict
    vectorize: tuple
    computed: int
    cached: int
    seconds: np.ndarray
    version: str
    directory: Path | None = field(default=None, repr=False)

    def __getitem__(self, name):
        for d in (self.data, self.axes, self.fixed):
            if name in d:
                return d[name]
        raise KeyError(name)

    def __contains__(self, name) -> bool:
        return name in self.data or name in self.axes or name in self.fixed

    def keys(self):
        return self.data.keys()

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(v.size for v in self.axes.values())

    @property
    def cells(self) -> int:
        return self.computed + self.cached


# ---------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------


def _as_output(name, value):
    if hasattr(value, "detach"):                               # torch tensors
        value = value.detach().cpu().numpy()
    try:
        a = np.asarray(value)
    except Exception as e:   # noqa: BLE001
        raise ValueError(f"output {name!r} cannot be converted to a numpy array ({e})") from None
    if a.dtype.kind not in _VALUE_KINDS:
        raise ValueError(f"output {name!r} must be numbers, booleans or strings "
                         f"(got dtype {a.dtype}); results are stored without pickle")
    return a


def _call_cell(func, params: dict):
    """Run one cell (in this process or on a worker): ``(outputs, seconds)``."""
    t0 = time.perf_counter()
    out = func(**params)
    seconds = time.perf_counter() - t0
    if not isinstance(out, Mapping) or not out:
        raise ValueError(f"the cell function must return a non-empty dict of arrays "
                         f"(got {type(out).__name__})")
    res = {}
    for k, v in out.items():
        if not isinstance(k, str) or not k or k.startswith("__") or "/" in k:
            raise ValueError(f"output names must be non-empty strings without '/' that do not "
                             f"start with '__' (got {k!r})")
        res[k] = _as_output(k, v)
    return res, seconds


def _check_signature(func, names):
    sig = inspect.signature(func)
    params = sig.parameters
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
    accepted = {k for k, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if not var_kw:
        for n in names:
            if n not in accepted:
                raise ValueError(f"parameter {n!r} is not accepted by {_func_name(func)}"
                                 f"{sig}")
    for k, p in params.items():
        if (p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is p.empty
                and k not in names):
            raise ValueError(f"parameter {k!r} of {_func_name(func)} is neither a grid axis "
                             f"nor a fixed parameter")
        if p.kind is p.POSITIONAL_ONLY and p.default is p.empty:
            raise ValueError(f"parameter {k!r} of {_func_name(func)} is positional-only; "
                             f"cells are called with keyword arguments")


def _call_cell_parts(func, fixed: dict, axes: dict):
    """:func:`_call_cell` of the fixed parameters (scattered once) and one cell's axes."""
    return _call_cell(func, {**fixed, **axes})


def _dask_results(func, todo, scheduler, fixed):
    """Yield ``(index, (outputs, seconds))`` as the cells finish on a Dask cluster.

    The ``fixed`` parameters are sent to the workers once (``scatter`` with
    ``broadcast=True``, under keys of their own), not inside every task: a sweep over a
    data set would otherwise ship the data with each cell.  ``"local:N"`` starts (or
    reuses) this process's cluster of N workers."""
    try:
        import distributed
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("scheduler= needs dask.distributed: pip install 'transferkit[cluster]'") from e
    own = False
    if isinstance(scheduler, distributed.Client):
        client = scheduler
    elif isinstance(scheduler, str):
        workers = _local_workers(scheduler)
        target = scheduler if workers is None else _local_cluster(distributed, workers)
        client, own = distributed.Client(target), True
    elif hasattr(scheduler, "scheduler_address"):            # a cluster object
        client, own = distributed.Client(scheduler), True
    else:
        raise ValueError(f"scheduler must be None, an address 'tcp://host:port', a "
                         f"dask.distributed.Client or a cluster (got {scheduler!r})")
    futures = {}
    try:
        # fresh random keys per sweep (hash=False): a dict would use the parameter names as
        # keys and values hashed to keys would be shared between sweeps, so that a sweep
        # could ask for data that the previous one was just releasing ("lost data")
        names = list(fixed)
        futs = client.scatter([fixed[k] for k in names], broadcast=True, hash=False) if names else []
        shared = dict(zip(names, futs))
        for i, key, params in todo:
            axes = {k: v for k, v in params.items() if k not in fixed}
            fut = client.submit(_call_cell_parts, func, shared, axes,
                                key=f"transferkit-sweep-{key}", pure=False)
            futures[fut] = i
        for fut in distributed.as_completed(list(futures)):
            yield futures[fut], fut.result()
    finally:
        pending = [f for f in futures if not f.done()]
        if pending:
            client.cancel(pending)
        if own:
            client.close()


#: The clusters of ``scheduler="local:N"``, one per ``N``, kept for the life of the process.
_LOCAL_CLUSTERS: dict = {}


def _local_workers(spec: str, name: str = "scheduler"):
    """``N`` of ``"local:N"`` (an int >= 1), or None when ``spec`` is not of that form."""
    if not spec.startswith("local:"):
        return None
    raw = spec[len("local:"):].strip()
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} 'local:N' needs N, an integer >= 1 and <= 256 workers "
                         f"(got {spec!r})") from None
    return check_int(f"{name} 'local:N' workers", value, 1, 256)


def _local_cluster(distributed, workers: int):
    """A Dask ``LocalCluster`` of ``workers`` processes, started once per process."""
    cluster = _LOCAL_CLUSTERS.get(workers)
    if cluster is not None and cluster.status.name == "running":
        return cluster
    threads = str(config.threads())          # the workers' torch threads: the book's count
    cluster = distributed.LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
        silence_logs=logging.ERROR,
        env={"TRANSFERKIT_THREADS": threads, "OMP_NUM_THREADS": threads,
             "MKL_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads})
    _LOCAL_CLUSTERS[workers] = cluster
    atexit.register(cluster.close)
    return cluster


def _check_scheduler(scheduler, name: str = "scheduler"):
    """``scheduler`` checked (``name``: the argument or ``TRANSFERKIT_SCHEDULER``): None for
    the sequential backend, else what :func:`_dask_results` takes; starts nothing."""
    if scheduler is None or scheduler == "local":
        return None
    if isinstance(scheduler, str):
        if "://" not in scheduler and _local_workers(scheduler, name) is None:
            none = "None, " if name == "scheduler" else ""
            raise ValueError(f"{name} must be {none}'local', 'local:N' or an address such as "
                             f"'tcp://host:8786' (got {scheduler!r})")
        return scheduler
    mod = type(scheduler).__module__ or ""
    if not (mod.startswith("distributed") or hasattr(scheduler, "scheduler_address")):
        raise ValueError(f"scheduler must be None, 'local', an address 'tcp://host:port', a "
                         f"dask.distributed.Client or a cluster (got {type(scheduler).__name__})")
    return scheduler


def run(func, grid, *, fixed: Mapping | None = None, vectorize=(), cache: bool = True,
        directory=None, version: str | None = None, scheduler=None, progress=None,
        desc: str | None = None) -> SweepResult:
    """Evaluate ``func`` on every cell of ``grid``; cached, resumable, local or on Dask.

    Parameters
    ----------
    func : callable
        Top-level function ``func(**axes, **fixed) -> dict`` of numpy arrays or scalars.
    grid : Grid or mapping of axis name -> 1-d values
    fixed : mapping, optional
        Parameters passed unchanged to every call (part of the cache key).
    vectorize : str or sequence of str
        Grid axes that ``func`` handles itself: each is passed whole as a 1-d numpy array,
        and every output must start with these axes' lengths (in grid order).  The
        others are iterated, one python scalar per call.
    cache : bool
        Read and write the on-disk cache (``False``: compute everything, store nothing).
    directory : path, optional
        Cache folder (default :func:`cache_dir`).
    version : str, optional
        Code version of the key (default :func:`code_version`, the hash of the package).
    scheduler : None, "local", "local:N", "tcp://host:port", dask.distributed.Client or cluster
        Where to compute the missing cells.  ``None``: ``$TRANSFERKIT_SCHEDULER`` if set,
        else sequentially in this process (``"local"``); ``"local:N"``: on ``N`` worker
        processes of this machine (one ``LocalCluster`` per process, started on first use).
    progress : bool, optional
        Show a progress bar (default :func:`transferkit.config.progress`).
    desc : str, optional
        Label of the progress bar.

    Returns
    -------
    SweepResult, whose outputs have shape ``grid.shape + trailing`` in grid order.
    """
    name = _func_name(func)
    if not isinstance(grid, Grid):
        if not isinstance(grid, Mapping):
            raise ValueError(f"grid must be a Grid or a mapping of axis names to values "
                             f"(got {type(grid).__name__})")
        grid = Grid(grid)
    if fixed is not None and not isinstance(fixed, Mapping):
        raise ValueError(f"fixed must be a mapping of parameter names to values "
                         f"(got {type(fixed).__name__})")
    fixed = dict(fixed or {})
    for k in fixed:
        if not isinstance(k, str):
            raise ValueError(f"fixed parameter names must be strings (got {k!r})")
        if k in grid:
            raise ValueError(f"parameter {k!r} is both a grid axis and a fixed parameter")
    vec = (vectorize,) if isinstance(vectorize, str) else tuple(vectorize)
    for v in vec:
        if v not in grid:
            raise ValueError(f"vectorize names {v!r}, which is not a grid axis {grid.names}")
    if len(set(vec)) != len(vec):
        raise ValueError(f"vectorize lists an axis twice ({vec!r})")
    vec = tuple(n for n in grid.names if n in vec)                 # grid order
    iters = tuple(n for n in grid.names if n not in vec)
    if not isinstance(cache, bool):
        raise ValueError(f"cache must be True or False (got {cache!r}); use directory= for a folder")
    version = code_version() if version is None else _check_version(version)
    if scheduler is None:
        env = os.environ.get("TRANSFERKIT_SCHEDULER", "").strip()
        scheduler = _check_scheduler(env or None, "TRANSFERKIT_SCHEDULER")
    else:
        scheduler = _check_scheduler(scheduler)
    _check_signature(func, list(grid.names) + list(fixed))
    where = {k: f"fixed parameter {k!r}" for k in fixed}
    where.update({k: f"grid axis {k!r}" for k in grid.names})

    iter_shape = tuple(grid[n].size for n in iters)
    vec_shape = tuple(grid[n].size for n in vec)
    root = (Path(directory) if directory is not None else cache_dir()) if cache else None
    folder = root / name / _version_dir(version) if cache else None

    fixed_canon = {k: _canon(v, where[k]) for k, v in fixed.items()}   # hashed once
    cells = []                       # (params, payload, key)
    for idx in np.ndindex(*iter_shape):
        params = dict(fixed)
        params.update({n: grid[n][i].item() for n, i in zip(iters, idx)})
        params.update({n: np.array(grid[n]) for n in vec})
        payload = _payload(func, params, version, where, canon=fixed_canon)
        cells.append((params, payload, hashlib.sha256(payload.encode()).hexdigest()))

    results: list = [None] * len(cells)
    seconds = np.zeros(len(cells))
    bad = 0
    if cache:
        for i, (_, payload, key) in enumerate(cells):
            got = _load(folder / f"{key}.npz", payload)
            if got is False:
                bad += 1
            elif got is not None:
                results[i], seconds[i] = got[0], float(got[1].get("seconds", np.nan))
    n_cached = sum(r is not None for r in results)
    if bad:
        warnings.warn(f"{bad} unreadable or corrupted cache entr{'y' if bad == 1 else 'ies'} of "
                      f"{name} in {folder}: recomputing", CacheWarning, stacklevel=2)
    todo = [(i, cells[i][2], cells[i][0]) for i in range(len(cells)) if results[i] is None]

    def finish(i, out, secs):
        _check_leading(out, vec_shape, vec, cells[i][0], iters)
        if cache:
            meta = {"key": cells[i][1], "outputs": sorted(out), "seconds": secs,
                    "function": name, "written": time.time()}
            _store(folder / f"{cells[i][2]}.npz", out, meta)
        results[i], seconds[i] = out, secs

    computed = 0
    with tqdm(total=len(cells), initial=n_cached, unit="cell",
              desc=desc or f"sweep {name.rsplit('.', 1)[-1]}",
              disable=not config.progress(progress)) as bar:
        bar.set_postfix(computed=0, cached=n_cached)
        if scheduler is None:
            stream = ((i, _call_cell(func, params)) for i, _, params in todo)
        else:
            stream = _dask_results(func, todo, scheduler, fixed) if todo else iter(())
        for i, (out, secs) in stream:
            finish(i, out, secs)
            computed += 1
            bar.set_postfix(computed=computed, cached=n_cached, refresh=False)
            bar.update(1)

    for i, out in enumerate(results):          # cached entries are checked as well
        _check_leading(out, vec_shape, vec, cells[i][0], iters)
    data = _assemble(results, grid, iters, vec, iter_shape)
    return SweepResult(axes={n: np.array(v) for n, v in grid.items()}, data=data, fixed=fixed,
                       vectorize=vec, computed=computed, cached=n_cached,
                       seconds=seconds.reshape(iter_shape), version=version, directory=folder)


def _cell_label(params, iters):
    return ", ".join(f"{n}={params[n]!r}" for n in iters) or "the only cell"


def _check_leading(out, vec_shape, vec, params, iters):
    k = len(vec_shape)
    for name, a in out.items():
        if a.shape[:k] != vec_shape:
            raise ValueError(f"output {name!r} of cell ({_cell_label(params, iters)}) has shape "
                             f"{a.shape}; its leading dimensions must be those of the vectorised "
                             f"axes {vec} = {vec_shape}")


def _assemble(results, grid, iters, vec, iter_shape):
    names = list(results[0])
    for i, out in enumerate(results):
        if sorted(out) != sorted(names):
            raise ValueError(f"cells return different outputs: {sorted(names)} and {sorted(out)} "
                             f"(output {sorted(set(names) ^ set(out))[0]!r})")
    order = list(iters) + list(vec)
    data = {}
    for name in names:
        arrs = [r[name] for r in results]
        if len({a.shape for a in arrs}) != 1:
            raise ValueError(f"output {name!r} has different shapes in different cells: "
                             f"{sorted({a.shape for a in arrs})}")
        stacked = np.stack(arrs).astype(np.result_type(*arrs), copy=False)
        stacked = stacked.reshape(iter_shape + arrs[0].shape)
        trailing = list(range(len(order), stacked.ndim))
        perm = [order.index(n) for n in grid.names] + trailing
        data[name] = np.ascontiguousarray(stacked.transpose(perm))
    return data
