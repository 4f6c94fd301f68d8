"""Run-time configuration: the scale at which notebooks run, their progress bars, CPU threads
and the device.

``TRANSFERKIT_SCALE=paper`` (the default of ``make book``) uses each paper's own
parameters wherever a CPU can run them; ``smoke`` shrinks every notebook to about a
minute for the tests.  ``TRANSFERKIT_THREADS`` (default 1) is the number of torch CPU
threads a chapter uses (:func:`threads`).  ``TRANSFERKIT_DEVICE`` (``auto``, the default,
``cpu`` or ``cuda``) is where torch computes (:func:`device`).
"""

from __future__ import annotations

import contextlib
import os

from ._validate import InputTypeError, check_int

SCALES = ("paper", "smoke")

#: The values :func:`device` accepts.
DEVICES = ("auto", "cpu", "cuda")

#: The most torch CPU threads :func:`threads` accepts.
MAX_THREADS = 1024


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


def threads(value=None) -> int:
    """Torch CPU threads per process: ``value`` if given, else ``TRANSFERKIT_THREADS`` (default 1).

    The chapters and benchmarks run torch with this many intra-op threads
    (:func:`transferkit.models.device.use_threads`).  One is the default because it is
    both the robust and the reproducible choice:

    - on a 2-core machine with any other busy process beside it, torch with 2 threads ran
      the fine-tuning grid of paper 000, Fig. 2 five times slower than idle (26.8 s against
      5.3 s for the ``fig2_grid.py --quick`` grid), while one thread was unaffected (6.5 s
      against 6.6 s idle); this is the slowdown of issue 19 (3.57 s per cell in the book
      against 0.46 s in the benchmark);
    - torch's multi-threaded reductions split sums by thread, so results differ in the last
      bits between thread counts (4.8e-14 relative on that grid); with one thread a seed
      gives the same bits on every machine whatever its core count.

    Raises
    ------
    ValueError
        If the value (or the variable) is not an integer in ``[1, MAX_THREADS]``; a
        ``value`` that is not a number is an ``InputTypeError`` (a ``TypeError``).
    """
    if value is not None:
        return check_int("threads", value, 1, MAX_THREADS)
    raw = os.environ.get("TRANSFERKIT_THREADS", "1")
    try:
        parsed = int(raw.strip())
    except ValueError:
        raise ValueError(f"TRANSFERKIT_THREADS must be an integer >= 1 and <= {MAX_THREADS} "
                         f"(got {raw!r})") from None
    return check_int("TRANSFERKIT_THREADS", parsed, 1, MAX_THREADS)


def device() -> str:
    """The value of ``TRANSFERKIT_DEVICE`` (default ``"auto"``), validated.

    ``auto`` computes on a CUDA GPU when one is present, else on the CPU; ``cpu`` and
    ``cuda`` force one (:func:`transferkit.models.device.default_device`).  The choice
    changes speed more than printed numbers: on an H100 the smoke chapters printed the
    same text as on that machine's CPU except the LeNet accuracies (third digit) and one
    number of the ReLU chapter (fourth digit), but most ran slower on the GPU at that
    scale (fine-tuning grid 0.09 s per cell on the CPU against 2.96 s on the GPU;
    DEVELOPERS.md, "Determinism, CPU and GPU").

    Raises
    ------
    ValueError
        If the variable is not one of :data:`DEVICES`.
    """
    value = os.environ.get("TRANSFERKIT_DEVICE", "auto").strip().lower()
    if value not in DEVICES:
        raise ValueError(f"TRANSFERKIT_DEVICE must be one of {DEVICES} (got {value!r})")
    return value


@contextlib.contextmanager
def environment(**values: str):
    """Set the environment variables ``values`` for the ``with`` block (a notebook kernel
    started inside it inherits them), then restore each to its value before, unset where it
    was unset, also when the block raises.  A value that is not a ``str`` is a ``TypeError``
    naming the variable, before anything is set."""
    for k, v in values.items():
        if not isinstance(v, str):
            raise InputTypeError(f"{k} must be a str, an environment variable's value "
                                 f"(got {v!r})")
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
