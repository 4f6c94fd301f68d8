r"""Device, dtype and CPU threads: CUDA when present (``TRANSFERKIT_DEVICE`` chooses), float64
kept, one torch thread by default."""

from __future__ import annotations

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from .. import config

__all__ = ["default_device", "as_tensor", "use_threads"]


def default_device() -> torch.device:
    """Where torch computes: :func:`transferkit.config.device` (``TRANSFERKIT_DEVICE``).

    ``auto`` (the default) is the GPU when one is present, else the CPU; ``cpu`` and
    ``cuda`` force one.

    Raises
    ------
    ValueError
        If ``TRANSFERKIT_DEVICE`` is not ``auto``, ``cpu`` or ``cuda``, or is ``cuda`` on a
        machine without a CUDA device.
    """
    choice = config.device()
    if choice == "cpu":
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda")
    if choice == "cuda":
        raise ValueError("TRANSFERKIT_DEVICE is 'cuda' but torch sees no CUDA device "
                         "(use 'auto' or 'cpu')")
    return torch.device("cpu")


def as_tensor(x, device=None, dtype=torch.float64) -> torch.Tensor:
    """A new tensor on the default device holding a copy of ``x`` (never shares memory)."""
    return torch.tensor(np.asarray(x), dtype=dtype, device=device or default_device())


def use_threads(n=None) -> int:
    """Set torch's CPU intra-op threads, and the thread pools of numpy's and scipy's BLAS and
    of OpenMP, to ``n`` (default :func:`transferkit.config.threads`).

    Every chapter calls this once at its top, and every benchmark before it times the
    chapter's experiment, so that both run with the same thread count (1 unless
    ``TRANSFERKIT_THREADS`` says otherwise; see :func:`transferkit.config.threads` for why).
    The BLAS pools matter as much as torch's: with one other busy process on 2 cores,
    the predictors chapter (numpy and scipy linear algebra) ran 6 times slower with
    OpenBLAS's default 2 threads than with 1 (119 s against 19 s at smoke scale).  They are
    set with ``threadpoolctl`` (the package scikit-learn uses for the same purpose).  The
    command line sets them for the length of one command.  Returns torch's thread count it
    replaced, so that a caller can restore it (``use_threads(previous)`` sets the pools to
    that count too).
    """
    n = config.threads(n)
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    threadpool_limits(limits=n)
    return previous
