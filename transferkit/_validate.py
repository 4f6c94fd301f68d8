"""Argument checks shared by the package: a clear ``ValueError`` naming the parameter.

The input contract (README, "Input contract"): a bad value is a ``ValueError`` naming the
parameter and its range; a value of the wrong type (a string, ``None``, a bool where a
number is expected) is an :class:`InputTypeError`, which is both a ``TypeError`` and a
``ValueError``; a request larger than :data:`MAX_BYTES` of memory is refused by
:func:`check_budget` before anything is allocated.
"""

from __future__ import annotations

import math
import numbers
import os

import numpy as np

#: Integers above this are refused where they are converted to float (``float(10**400)``
#: overflows); 2**53 is the largest range in which floats hold every integer.
MAX_INT = 2**53

#: Default memory budget of :func:`check_budget`: 32 GiB, or ``$TRANSFERKIT_MAX_BYTES``.
MAX_BYTES = 32 * 2**30

#: Largest magnitude of the entries of data, targets and weights that are multiplied and
#: summed (Gram matrices, covariances, inner products, residual norms): below it their
#: products and sums stay far from the float range (1e308), so no overflow turns into
#: ``inf - inf`` or ``inf * 0`` (:func:`check_magnitude`).
MAX_ENTRY = 1e100


class InputTypeError(TypeError, ValueError):
    """A parameter of the wrong type; a ``TypeError`` that ``except ValueError`` also catches."""


def max_bytes() -> int:
    """The memory budget: ``$TRANSFERKIT_MAX_BYTES`` (bytes) if set, else :data:`MAX_BYTES`."""
    env = os.environ.get("TRANSFERKIT_MAX_BYTES", "").strip()
    if not env:
        return MAX_BYTES
    try:
        return max(int(env), 1)
    except ValueError:
        raise ValueError(f"TRANSFERKIT_MAX_BYTES must be a whole number of bytes (got {env!r})") from None


def _size(n) -> str:
    try:
        n = int(n)
    except (OverflowError, ValueError):  # inf or NaN estimates
        return "an unbounded amount"
    if n >= 2**1000:  # n / 2**k would overflow a float
        return f"about 2**{n.bit_length() - 1} bytes"
    for unit, k in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 2**k:
            return f"{n / 2**k:.3g} {unit}"
    return f"{n} bytes"


def check_budget(name: str, value, n_bytes: int, limit: int | None = None) -> None:
    """Refuse, before any allocation, a request estimated to need ``n_bytes`` of memory.

    ``ValueError`` naming ``name`` (the parameter that makes the request large), its
    ``value`` and the estimated size when ``n_bytes`` exceeds ``limit`` (default
    :func:`max_bytes`: 32 GiB, or ``$TRANSFERKIT_MAX_BYTES``).
    """
    limit = max_bytes() if limit is None else limit
    if n_bytes > limit:
        raise ValueError(f"{name}={value!r} is too large: the request needs about "
                         f"{_size(n_bytes)} of memory, above the limit of {_size(limit)} "
                         "(set TRANSFERKIT_MAX_BYTES to raise it)")


def check_budget_among(estimate, sizes: dict, typical: dict, shown: dict | None = None,
                       limit: int | None = None) -> None:
    """Refuse, before any allocation, a request of ``estimate(**sizes)`` bytes above the
    budget (:func:`check_budget`), naming the size that makes it large.

    The size named is the one whose reset to its ``typical`` value (a paper preset's, say)
    shrinks the estimate most; ``shown`` maps a name to the value the message prints (the
    largest of a list of sample sizes, say; default ``sizes[name]``).  ``estimate`` takes the
    sizes as keywords and should compute in Python integers, which do not overflow.
    """
    limit = max_bytes() if limit is None else limit
    n_bytes = estimate(**sizes)
    if n_bytes <= limit:
        return
    name = min(sizes, key=lambda k: estimate(**{**sizes, k: min(sizes[k], typical[k])}))
    check_budget(name, (shown or {}).get(name, sizes[name]), n_bytes, limit)


def check_real(name: str, value, valid: str = "a number") -> None:
    """An :class:`InputTypeError` "``name`` must be ``valid`` (got ...)" unless ``value`` is a
    real number: not a ``bool``, a string, ``None`` or a complex number.  The type test of
    every scalar check here, before its range test (which for a string would raise Python's
    own comparison error)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputTypeError(f"{name} must be {valid} (got {value!r})")


def check_seed(name: str, value, allow_generator: bool = False):
    """A seed: an integer >= 0 (integer-valued floats taken as integers), returned as ``int``.

    With ``allow_generator`` a :class:`numpy.random.SeedSequence` or
    :class:`numpy.random.Generator` is returned unchanged.  Wrong types (``None``, strings,
    bools, generators where not allowed) are an :class:`InputTypeError`; negative or
    fractional numbers a ``ValueError``; both name the parameter.
    """
    if allow_generator and isinstance(value, (np.random.SeedSequence, np.random.Generator)):
        return value
    also = ", a numpy SeedSequence or Generator" if allow_generator else ""
    check_real(name, value, f"an integer >= 0{also}")
    return check_int(name, value, 0, None)                 # any size: a SeedSequence entropy


def check_int(name: str, value, minimum: int, maximum: int | None = MAX_INT) -> int:
    """``value`` as an ``int`` if it is a whole number >= ``minimum`` and <= ``maximum``
    (default :data:`MAX_INT` = 2**53: sizes, counts and step budgets beyond it are no
    machine's and would overflow the int64 of numpy, torch and the compiled kernels;
    ``None``: no bound, as for seeds).

    Integer-valued floats (``10.0``) are returned as ``int``.  Booleans, strings and other
    non-numbers are an :class:`InputTypeError` (a ``ValueError`` too); NaN, infinities,
    non-integral floats and values out of range a ``ValueError`` naming ``name``.
    """
    rng = f">= {minimum}" + ("" if maximum is None else f" and <= {maximum}")
    check_real(name, value, f"an integer {rng}")
    if isinstance(value, numbers.Integral):  # any size: np.isfinite fails beyond int64
        ok = int(value) >= minimum
    else:
        ok = math.isfinite(value) and float(value).is_integer() and value >= minimum
    if ok and maximum is not None:
        ok = int(value) <= maximum
    if not ok:
        raise ValueError(f"{name} must be an integer {rng} (got {value!r})")
    return int(value)


def check_int_or_inf(name: str, value, minimum: int):
    """``value`` as an ``int`` >= ``minimum``, or ``inf`` (e.g. a network depth), else ``ValueError``."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and value == math.inf:
        return math.inf
    try:
        return check_int(name, value, minimum)
    except ValueError:
        raise ValueError(f"{name} must be an integer >= {minimum} or inf (got {value!r})") from None


def check_bool(name: str, value) -> bool:
    """``value`` as a ``bool`` if it is one (Python's or numpy's), else an
    :class:`InputTypeError` naming ``name``: a switch takes no ``0``, ``1`` or ``"yes"``."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputTypeError(f"{name} must be a bool, True or False (got {value!r})")
    return bool(value)


def check_choice(name: str, value, choices) -> str:
    """``value`` if it is a string among ``choices``, else an :class:`InputTypeError` naming
    ``name`` (not a string) or a ``ValueError`` naming it and listing ``choices``."""
    if not isinstance(value, str):
        raise InputTypeError(f"{name} must be a string, one of {choices} "
                             f"(got {type(value).__name__})")
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices} (got {value!r})")
    return value


def check_positive(name: str, value, allow_zero: bool = False) -> float:
    """``value`` as a ``float`` if finite and > 0 (or >= 0), else ``ValueError``."""
    check_real(name, value, f"a finite number {'>=' if allow_zero else '>'} 0")
    try:
        ok = bool(np.isfinite(float(value)) and (value >= 0 if allow_zero else value > 0))
    except OverflowError:  # an int beyond the float range
        ok = False
    if not ok:
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0 "
                         f"(got {value!r})")
    return float(value)


def check_positive_or_inf(name: str, value) -> float:
    """``value`` as a ``float`` if > 0, finite or ``inf`` (a step cap, a time horizon that
    may be absent), else ``ValueError``; a non-number is an :class:`InputTypeError`."""
    check_real(name, value, "a number > 0 or inf")
    try:
        ok = float(value) > 0                      # False for NaN
    except OverflowError:                          # an int beyond the float range
        ok = False
    if not ok:
        raise ValueError(f"{name} must be a number > 0 or inf (got {value!r})")
    return float(value)


def check_open_unit(name: str, value) -> float:
    """``value`` as a ``float`` in the open interval ``(0, 1)`` (a level, a family-wise error
    rate, a relative cutoff); a non-number is an :class:`InputTypeError`, a number out of
    range (NaN included) a ``ValueError``, each naming ``name``."""
    check_real(name, value, "a number in (0, 1)")
    if not 0 < value < 1:  # NaN fails too
        raise ValueError(f"{name} must be in (0, 1) (got {value!r})")
    return float(value)


def check_fraction(name: str, value) -> float:
    """``value`` as a ``float`` in ``[0, 1)`` (a share of a batch, e.g. the trainers'
    ``compact``); a non-number (``bool`` included) is an :class:`InputTypeError`, a number out
    of range a ``ValueError``."""
    check_real(name, value, "a number in [0, 1)")
    if not 0 <= value < 1:
        raise ValueError(f"{name} must be a number in [0, 1) (got {value!r})")
    return float(value)


def check_grid(name, values, lo, hi, lo_open):
    """``values`` as a 1-d float array in ``(lo, hi]`` (``[lo, hi]``), else ``ValueError``."""
    try:
        v = np.atleast_1d(np.asarray(values, dtype=float))
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a number or a 1-d sequence of numbers "
                         f"(got {values!r})") from None
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"{name} must be a scalar or a non-empty 1-d sequence")
    bad = ~np.isfinite(v) | (v > hi) | ((v <= lo) if lo_open else (v < lo))
    if bad.any():
        rng = f"({lo}, {hi}]" if lo_open else f"[{lo}, {hi}]"
        raise ValueError(f"{name} must lie in {rng} (got {v[bad][0]!r})")
    return v


def _bound(v) -> str:
    """A bound of a range as the messages print it (``pi``, ``2**53``, ``0.5``)."""
    if v == math.pi:
        return "pi"
    if v == MAX_INT:
        return "2**53"
    return f"{v:g}"


def check_values(name, value, lo=-math.inf, hi=math.inf, lo_open=False, integer=False):
    """``value`` (a number or an array of any shape) as a float64 array of finite entries in
    ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``; whole numbers only with ``integer``).

    The range of a parameter, written once for every closed form that takes it elementwise:
    ``check_values("gamma", gamma, 0, lo_open=True)``, ``check_values("theta", theta, 0,
    math.pi)``, ``check_values("n", n, 1, MAX_INT, integer=True)``.  Strings, ``None``,
    booleans and complex numbers are an :class:`InputTypeError`; ragged input, integers
    beyond the float range (``10**400``) and entries that are NaN, infinite or out of range
    a ``ValueError`` "``name`` must be <range> (got <first bad entry>)", the range reading
    "a finite number > 0", "in [0, pi]", "an integer in [1, 2**53]", "a finite number".
    """
    if integer:
        valid = f"an integer in [{_bound(lo)}, {_bound(hi)}]"
    elif math.isinf(lo) and math.isinf(hi):
        valid = "a finite number"
    elif math.isinf(hi):
        valid = f"a finite number {'>' if lo_open else '>='} {_bound(lo)}"
    else:
        valid = f"in {'(' if lo_open else '['}{_bound(lo)}, {_bound(hi)}]"
    if (value is None or isinstance(value, (str, bytes, bool, np.bool_, complex, np.complexfloating))
            or (isinstance(value, np.ndarray) and value.dtype.kind in "bcOSUV")):
        raise InputTypeError(f"{name} must be {valid} (got {value!r})")
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):  # strings inside, ragged, beyond float
        raise ValueError(f"{name} must be {valid} (got {value!r})") from None
    bad = ~np.isfinite(a) | (a > hi) | ((a <= lo) if lo_open else (a < lo))
    if integer:
        bad |= np.floor(np.where(bad, 0.0, a)) != np.where(bad, 0.0, a)
    if np.any(bad):
        raise ValueError(f"{name} must be {valid} (got {float(a[bad].flat[0])!r})")
    return a


def check_magnitude(name: str, a, max_abs: float) -> np.ndarray:
    """``a`` as a float64 array (:func:`as_array`: unchanged if it is one) if every entry has
    magnitude <= ``max_abs``, else a ``ValueError`` naming ``name`` and the bound.

    The rule of the closed forms that multiply and add entries (covariances, Gram matrices,
    inner products): below ``max_abs`` (``1e100`` there) their products and sums stay far from
    the float range, so no overflow turns into ``inf - inf`` or ``inf * 0``.
    """
    a = as_array(name, a)
    bad = ~(np.abs(a) <= max_abs)  # NaN is not within the bound either
    if np.any(bad):
        raise ValueError(f"{name} must have entries of magnitude <= {max_abs:g} "
                         f"(got {float(a[bad].flat[0])!r})")
    return a


def check_rows(name: str, X) -> np.ndarray:
    """``X`` as a finite float64 array of rows ``(..., N, d)`` with ``N, d >= 1``.

    The shape rule of every kernel and network that takes points or units as rows; a
    ``ValueError`` (an :class:`InputTypeError` for a string or ``None``) naming ``name``
    otherwise.
    """
    A = as_array(name, X)
    if A.ndim < 2 or A.shape[-1] < 1 or A.shape[-2] < 1:
        raise ValueError(f"{name} must be an array of shape (..., N, d) with N, d >= 1 "
                         f"(got shape {A.shape})")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} must be finite (got non-finite entries)")
    return A


def check_array(name, x, min_ndim):
    """``x`` as a finite float64 array of at least ``min_ndim`` dimensions, else ``ValueError``."""
    x = as_array(name, x, min_ndim)
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return x


def check_coordinates(name, x, D: int) -> np.ndarray:
    """``x`` as a finite float64 array that is one number or one value per coordinate:
    shape ``()``, ``(1,)`` or ``(D,)`` (:func:`check_array`), returned unbroadcast, else a
    ``ValueError`` naming ``name`` and the shape it must have."""
    x = check_array(name, x, 0)
    if x.ndim > 1 or (x.ndim == 1 and x.shape[0] not in (1, D)):
        raise ValueError(f"{name} must be a number or have shape ({D},) (got shape {x.shape})")
    return x


def check_one(name, value) -> None:
    """A sweep cell's iterated parameter is one value (``np.ndim(value) == 0``), not a
    sequence, else a ``ValueError`` naming ``name``."""
    if np.ndim(value) != 0:
        raise ValueError(f"{name} must be one number, the cell's grid point (got {value!r})")


def as_array(name, x, min_ndim=0):
    """``x`` as a float64 array of at least ``min_ndim`` dimensions; entries may be NaN or inf.

    Like :func:`check_array` without the finiteness check (for inputs where ``inf`` has a
    documented meaning): strings and ``None`` are an :class:`InputTypeError`; ragged or
    non-numeric input and integers beyond the float range (``10**400``) a ``ValueError``
    naming ``name``.
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise InputTypeError(f"{name} must be an array of numbers (got {x!r})")
    try:
        x = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be an array of real numbers (got {type(x).__name__})") from None
    if x.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s) (got shape {x.shape})")
    return x


def check_broadcast(**arrays) -> tuple:
    """The common shape of the named arrays, else a ``ValueError`` naming them and their shapes.

    ``check_broadcast(theta=theta, sigma=sigma)`` returns ``np.broadcast_shapes`` of their
    shapes; the error reads "theta, sigma must have shapes that broadcast together (got
    theta (2,), sigma (3,))" instead of numpy's own message.
    """
    shapes = {k: np.shape(v) for k, v in arrays.items()}
    try:
        return np.broadcast_shapes(*shapes.values())
    except ValueError:
        got = ", ".join(f"{k} {s}" for k, s in shapes.items())
        raise ValueError(f"{', '.join(shapes)} must have shapes that broadcast together "
                         f"(got {got})") from None


def check_axis(name, axis, ndim: int, allow_none: bool = True):
    """``axis`` as an ``int`` in ``[-ndim, ndim)`` (or ``None`` where allowed), else ``ValueError``."""
    if axis is None and allow_none:
        return None
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) \
            or not -ndim <= axis < ndim:
        also = "None or " if allow_none else ""
        raise ValueError(f"{name} must be {also}an axis of an array with {ndim} dimension(s) "
                         f"(got {axis!r})")
    return int(axis)
