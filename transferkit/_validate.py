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
