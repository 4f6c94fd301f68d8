"""Run-time configuration: the scale at which notebooks run.

``TRANSFERKIT_SCALE=paper`` (the default of ``make book``) uses each paper's own
parameters wherever a CPU can run them; ``smoke`` shrinks every notebook to about a
minute for the tests.
"""
from __future__ import annotations

import os

SCALES = ("paper", "smoke")


def scale() -> str:
    """The value of ``TRANSFERKIT_SCALE`` (default ``"paper"``), validated."""
    value = os.environ.get("TRANSFERKIT_SCALE", "paper").strip().lower()
    if value not in SCALES:
        raise ValueError(f"TRANSFERKIT_SCALE must be one of {SCALES} (got {value!r})")
    return value
