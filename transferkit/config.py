"""Run-time configuration: the scale at which notebooks run.

``TRANSFERKIT_SCALE=paper`` (the default of ``make book``) uses each paper's own
parameters wherever a CPU can run them; ``smoke`` shrinks every notebook to about a
minute for the tests.
"""

from __future__ import annotations

import os

SCALES = ("paper", "smoke")


_FALSE = ("0", "false", "no", "off")


def scale() -> str:
    """The value of ``TRANSFERKIT_SCALE`` (default ``"paper"``), validated."""
    value = os.environ.get("TRANSFERKIT_SCALE", "paper").strip().lower()
    if value not in SCALES:
        raise ValueError(f"TRANSFERKIT_SCALE must be one of {SCALES} (got {value!r})")
    return value


def progress(value=None) -> bool:
    """Whether to show progress bars: ``value`` if given, else ``TRANSFERKIT_PROGRESS``.

    Progress bars are on by default for interactive use; the Makefile sets
    ``TRANSFERKIT_PROGRESS=0`` for the book and the tests, whose pages and logs would
    otherwise hold every refresh of every bar.
    """
    if value is not None:
        return bool(value)
    return os.environ.get("TRANSFERKIT_PROGRESS", "1").strip().lower() not in _FALSE
