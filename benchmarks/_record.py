"""What every timing benchmark shares: the authors'-protocol summary and the JSON record.

Not a benchmark itself (``tests/test_benchmarks.py`` lists the benchmarks and skips ``_*.py``).
"""

from __future__ import annotations

import datetime
import json
import os

import torch

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
