r"""Device, dtype and CPU threads: CUDA when present, float64 kept, one torch thread by default."""

from __future__ import annotations

import numpy as np
import torch

from .. import config

__all__ = ["default_device", "as_tensor", "use_threads"]


def default_device() -> torch.device:
    """The GPU when one is present, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def as_tensor(x, device=None, dtype=torch.float64) -> torch.Tensor:
    """A new tensor on the default device holding a copy of ``x`` (never shares memory)."""
    return torch.tensor(np.asarray(x), dtype=dtype, device=device or default_device())


def use_threads(n=None) -> int:
    """Set torch's CPU intra-op threads to ``n`` (default :func:`transferkit.config.threads`).

    Every chapter calls this once at its top, and every benchmark before it times the
    chapter's experiment, so that both run with the same thread count (1 unless
    ``TRANSFERKIT_THREADS`` says otherwise; see :func:`transferkit.config.threads` for why).
    The command line sets it for the length of one command.  Returns the thread count it
    replaced, so that a caller can restore it.
    """
    n = config.threads(n)
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    return previous
