r"""Keyed random streams: every random draw of the package comes from one generator per key.

A key is a tuple of non-negative integers, e.g. ``(seed, draw, purpose, n)``; the generator is
``numpy.random.default_rng([seed, *key])``, so a draw does not depend on which other cells of a
grid are computed, nor in which order. Random directions on the sphere are rows scaled to
unit norm (:func:`unit_rows`).
"""

from __future__ import annotations

import numpy as np
import torch

from ._validate import check_array, check_int, check_seed

__all__ = ["keyed_rng", "unit_rows"]


def unit_rows(W):
    """Rows of ``W`` (numpy or torch) scaled to unit norm (numpy: finite, no zero row, else ``ValueError``)."""
    if isinstance(W, torch.Tensor):
        return W / W.norm(dim=-1, keepdim=True)
    check_array("W", W, 1)  # finite real rows; W itself keeps its dtype
    W = np.asarray(W)
    norms = np.linalg.norm(W, axis=-1, keepdims=True)
    if not (norms > 0).all():
        raise ValueError("W must have no zero rows (a zero row has no direction)")
    return W / norms


def keyed_rng(seed, *key) -> np.random.Generator:
    """The generator of stream ``(seed, *key)``: ``numpy.random.default_rng([seed, *key])``.

    ``seed`` and every entry of ``key`` must be integers >= 0 (integer-valued floats are
    taken as integers); anything else is a ``ValueError`` naming it, before any draw.

    Trailing zeros of a key do not change the stream (numpy's ``SeedSequence`` ignores
    them): ``keyed_rng(s, j, 0)`` is ``keyed_rng(s, j)``.  Where a module uses a key and a
    longer one with the same prefix, end the longer one with a non-zero entry.
    """
    return np.random.default_rng([check_seed("seed", seed),
                                  *[check_int(f"key[{i}]", k, 0) for i, k in enumerate(key)]])
