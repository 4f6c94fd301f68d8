r"""Device and dtype: CUDA when present, float64 kept."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["default_device", "as_tensor"]


def default_device() -> torch.device:
    """The GPU when one is present, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def as_tensor(x, device=None, dtype=torch.float64) -> torch.Tensor:
    """A new tensor on the default device holding a copy of ``x`` (never shares memory)."""
    return torch.tensor(np.asarray(x), dtype=dtype, device=device or default_device())
