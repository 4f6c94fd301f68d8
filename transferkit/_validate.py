"""Argument checks shared by the package: a clear ``ValueError`` naming the parameter."""

from __future__ import annotations

import math
import numbers

import numpy as np


def check_int(name: str, value, minimum: int) -> int:
    """``value`` as an ``int`` if it is a whole number >= ``minimum``, else ``ValueError``.

    Booleans, NaN, infinities, strings and non-integral floats are rejected.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        ok = False
    elif isinstance(value, numbers.Integral):  # any size: np.isfinite fails beyond int64
        ok = int(value) >= minimum
    else:
        ok = math.isfinite(value) and float(value).is_integer() and value >= minimum
    if not ok:
        raise ValueError(f"{name} must be an integer >= {minimum} (got {value!r})")
    return int(value)


def check_int_or_inf(name: str, value, minimum: int):
    """``value`` as an ``int`` >= ``minimum``, or ``inf`` (e.g. a network depth), else ``ValueError``."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and value == math.inf:
        return math.inf
    try:
        return check_int(name, value, minimum)
    except ValueError:
        raise ValueError(f"{name} must be an integer >= {minimum} or inf (got {value!r})") from None


def check_positive(name: str, value, allow_zero: bool = False) -> float:
    """``value`` as a ``float`` if finite and > 0 (or >= 0), else ``ValueError``."""
    ok = (isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
          and (value >= 0 if allow_zero else value > 0))
    if not ok:
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0 "
                         f"(got {value!r})")
    return float(value)


def check_grid(name, values, lo, hi, lo_open):
    v = np.atleast_1d(np.asarray(values, dtype=float))
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"{name} must be a scalar or a non-empty 1-d sequence")
    bad = ~np.isfinite(v) | (v > hi) | ((v <= lo) if lo_open else (v < lo))
    if bad.any():
        rng = f"({lo}, {hi}]" if lo_open else f"[{lo}, {hi}]"
        raise ValueError(f"{name} must lie in {rng} (got {v[bad][0]!r})")
    return v


def check_array(name, x, min_ndim):
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s) (got shape {x.shape})")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return x
