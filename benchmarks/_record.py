"""What every timing benchmark shares: the authors'-protocol summary and the JSON record.

Not a benchmark itself (``tests/test_benchmarks.py`` lists the benchmarks and skips ``_*.py``).
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
import time
from pathlib import Path

import torch

from transferkit.config import environment
from transferkit.models.device import default_device


def authors_ratio(per_cell: float, cells: int, wall: float) -> float:
    """Print the authors' per-cell and whole-grid times and the speed ratio; return the ratio.

    ``per_cell``: the authors' protocol for one cell (seconds, extrapolated from timed
    epochs); ``wall``: transferkit's wall time for all ``cells``.
    """
    print(f"  per cell {per_cell:8.1f} s; full {cells}-cell grid {per_cell * cells / 3600:.1f} h")
    ratio = per_cell / (wall / cells)
    print(f"\nratio (authors' per cell / transferkit per cell, wall): {ratio:,.0f}x")
    return ratio


def write_json(path, data):
    """Write ``data`` with the machine, date, torch threads and the sweeps' scheduler
    (``TRANSFERKIT_SCHEDULER``, ``local`` when unset) to ``path`` (read by
    benchmarks/speed_table.py)."""
    data = dict(data, date=datetime.date.today().isoformat(), cores=os.cpu_count(),
                threads=torch.get_num_threads(), device=str(default_device()),
                scheduler=os.environ.get("TRANSFERKIT_SCHEDULER", "").strip() or "local")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


def timed(fn):
    """``(fn(), wall seconds, process CPU seconds)``."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def step_rates(run, kinds, B: int, steps: int) -> dict:
    """Network-steps per second ``{kind: (wall, CPU)}`` of ``run(kind, k)`` (``k`` steps of
    ``B`` networks) for each kind, setup cancelled by timing ``k`` and ``2 * k`` steps
    (``k = steps``, times 4 until a run takes half a second: the compiled engines take
    about a microsecond a step); each kind run once first (compiling its kernel)."""
    out = {}
    for kind in kinds:
        run(kind, 2)
        k = steps
        while True:
            _, w1, c1 = timed(lambda: run(kind, k))
            _, w2, c2 = timed(lambda: run(kind, 2 * k))
            if w2 >= 0.5 or k >= 64 * steps:
                break
            k *= 4
        # the difference cancels the setup; where timer noise makes it vanish, the whole run
        out[kind] = (B * k / (w2 - w1) if w2 > 1.05 * w1 else 2 * B * k / w2,
                     B * k / (c2 - c1) if c2 > 1.05 * c1 else 2 * B * k / c2)
    return out


def chapter_seconds(chapter: str, scale: str) -> tuple[float, str | None]:
    """Execute ``notebooks/<chapter>.py`` as ``make book`` does (``execute_book.py``: read
    with jupytext, executed by jupyter-cache's ``single_nb_execution`` with ``_config.yml``'s
    timeout, ``TRANSFERKIT_BOOK_BUILD=1``) at ``scale``, from an empty sweep cache (a
    temporary ``TRANSFERKIT_CACHE`` and figures folder), and return ``(seconds, error)``:
    the execution time and the traceback text of a failure (``None`` on success)."""
    from book_times import ROOT, read_notebook
    from execute_book import execution_settings
    from jupyter_cache.executors.utils import single_nb_execution

    path = ROOT / "notebooks" / f"{chapter}.py"
    settings = execution_settings()
    with tempfile.TemporaryDirectory() as tmp, environment(
            TRANSFERKIT_SCALE=scale, TRANSFERKIT_CACHE=str(Path(tmp, "cache")),
            TRANSFERKIT_FIGURES=str(Path(tmp, "figures")), TRANSFERKIT_PROGRESS="0",
            TRANSFERKIT_BOOK_BUILD="1", MPLBACKEND="Agg"):
        result = single_nb_execution(read_notebook(path), cwd=str(path.parent),
                                     allow_errors=settings["allow_errors"],
                                     timeout=settings["timeout"], meta_override=True)
    err = None if result.err is None else (result.exc_string or repr(result.err))
    return result.time, err
