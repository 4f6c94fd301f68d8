r"""Closed-form risks and transferabilities for deep linear networks.

This module implements the exactly solvable model of paper 000, *Features are
Fate: a theory of transfer learning in high-dimensional regression*, Sec. 3
(Eqs. 8, 10, 11, 13, 14, 15 and the negative-transfer window of Sec. 3.3; the
proofs are in App. B.5-B.8).

Setting
-------
Inputs are isotropic Gaussians :math:`x \sim \mathcal{N}(0, I_d)`.  The source
and target teachers are unit vectors with
:math:`\|\beta_s\| = \|\beta_t\| = 1` and :math:`\beta_s^T\beta_t = \cos\theta`.
The target training set has :math:`n = \gamma d` points with labels
:math:`y = \beta_t^T x + \epsilon`, :math:`\epsilon \sim \mathcal{N}(0,
\sigma^2)`.  "Risk" always means the *excess* population risk
:math:`\mathcal{R} = \|\hat\beta - \beta_t\|_2^2` (no :math:`\sigma^2` floor),
averaged over the training set.  The estimators are

* **scratch**: the minimum-norm least-squares solution
  :math:`\hat\beta_{sc} = X^+ y` (the gradient-flow limit, Theorem 3.5);
* **linear transfer**: least squares on the single pretrained feature
  direction, :math:`\hat\beta_{lt} = b\,\beta_s` with
  :math:`b = (X\beta_s)^+ y` (Theorem 3.4 / App. B.6);
* **ridge linear transfer**: :math:`b` minimises
  :math:`\frac{1}{2n}\|b\,X\beta_s - y\|^2 + \frac{\lambda}{2} b^2`;
* **fine-tuning**: the minimum-norm correction from :math:`\beta_s`,
  :math:`\hat\beta_{ft} = P_{\mathrm{row}(X)} X^+ y + (I - P_{\mathrm{row}(X)})
  \beta_s` (App. B.8).

Transferability is :math:`\mathcal{T} = \mathbb{E}\mathcal{R}_{sc} -
\mathbb{E}\mathcal{R}_{tx}`, positive when transfer helps.

Conventions
-----------
* Every public function validates its arguments with one private helper and
  raises :class:`ValueError` naming the offending parameter and its valid range
  (e.g. ``"gamma must be > 0 (got -1.0)"``).  NaN and infinite inputs are
  rejected.  ``n`` and ``d`` must be integer-valued (``100`` or ``100.0``).
* Functions broadcast like numpy ufuncs.  If every argument is a scalar the
  result is a python ``float``; otherwise it is an ``ndarray`` of the
  broadcast shape.  (:func:`negative_transfer_window` is scalar-only.)
* Results are never NaN.  Divergent expectations are returned as ``+inf``
  (and ``-inf`` for a transferability whose *transfer* side alone diverges).
  The only undefined quantity, :math:`\infty - \infty` in
  :func:`linear_transferability_finite`, raises :class:`ValueError`.
* No floating-point warnings are emitted: every branch is evaluated only on
  the entries it applies to.
"""

from __future__ import annotations

import functools
import math
from numbers import Real
from typing import Callable

import numpy as np

__all__ = [
    "scratch_risk",
    "scratch_risk_finite",
    "linear_transfer_risk",
    "linear_transfer_risk_std",
    "linear_transferability",
    "linear_transferability_finite",
    "linear_transfer_boundary",
    "ridge_linear_transfer_risk",
    "finetune_risk",
    "finetune_risk_finite",
    "finetune_transferability",
    "negative_transfer_window",
]


# ---------------------------------------------------------------------------
# validation and output helpers
# ---------------------------------------------------------------------------

# name -> (predicate on a finite float array, human-readable valid range)
_RULES: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "gamma": (lambda a: a > 0, "a finite number > 0"),
    "sigma": (lambda a: a >= 0, "a finite number >= 0"),
    "lam": (lambda a: a >= 0, "a finite number >= 0"),
    "theta": (lambda a: (a >= 0) & (a <= np.pi), "in [0, pi]"),
    "n": (lambda a: (a >= 1) & (a == np.floor(a)), "an integer >= 1"),
    "d": (lambda a: (a >= 1) & (a == np.floor(a)), "an integer >= 1"),
}


def _validate(name: str, value) -> np.ndarray:
    """Convert ``value`` to a float array and check it against ``_RULES[name]``.

    Raises
    ------
    ValueError
        If ``value`` is not real-valued, contains NaN or +/-inf, or lies outside
        the valid range of parameter ``name``.  The message starts with
        ``name`` and states the valid range and the first offending value.
    """
    predicate, valid = _RULES[name]
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be {valid} (got {value!r})")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be {valid} (got {value!r})") from exc
    finite = np.isfinite(arr)
    ok = np.zeros(arr.shape, dtype=bool)
    ok[finite] = predicate(arr[finite])
    if not np.all(ok):
        bad = float(arr[~ok].flat[0])
        raise ValueError(f"{name} must be {valid} (got {bad!r})")
    return arr


def _prepare(**params) -> tuple[bool, list[np.ndarray]]:
    """Validate every keyword argument and broadcast them together.

    Returns ``(all_scalar, arrays)`` where ``arrays`` are read-only broadcast
    views in the order the keywords were given.
    """
    arrays = [_validate(name, value) for name, value in params.items()]
    all_scalar = all(a.ndim == 0 for a in arrays)
    return all_scalar, list(np.broadcast_arrays(*arrays))


def _finish(out: np.ndarray, all_scalar: bool):
    """Return a python float for scalar input, an ndarray otherwise."""
    out = np.asarray(out, dtype=float)
    if np.isnan(out).any():  # pragma: no cover - guarded against by construction
        raise FloatingPointError("transferkit.theory produced NaN; please report this")
    return float(out) if all_scalar else out


def _piecewise(shape, cases) -> np.ndarray:
    """Fill ``out[mask] = func(mask)`` for each ``(mask, func)`` in ``cases``.

    The masks must partition the output.  Evaluating each branch only on its own
    entries avoids spurious division warnings from discarded branches.
    """
    out = np.empty(shape, dtype=float)
    with np.errstate(over="ignore"):  # overflow to +inf is the correct limit here
        for mask, func in cases:
            if np.any(mask):
                out[mask] = func(mask)
    return out


def _overflow_to_inf(func):
    """Evaluate ``func`` letting float overflow silently produce ``inf``.

    Overflow only happens for absurdly large (but finite and valid) inputs such
    as ``sigma = 1e200``, where ``inf`` is the correct limiting value.  Invalid
    operations (which would produce NaN) are *not* silenced.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with np.errstate(over="ignore"):
            return func(*args, **kwargs)

    return wrapper


def _sin2(theta: np.ndarray) -> np.ndarray:
    """:math:`\\sin^2\\theta`, exactly 0 at :math:`\\theta \\in \\{0, \\pi\\}`."""
    return np.where(theta == np.pi, 0.0, np.sin(theta) ** 2)


def _cos(theta: np.ndarray) -> np.ndarray:
    """:math:`\\cos\\theta`, exactly 0 at :math:`\\theta = \\pi/2`."""
    return np.where(theta == np.pi / 2, 0.0, np.cos(theta))


# ---------------------------------------------------------------------------
# private kernels on validated, broadcast arrays
# ---------------------------------------------------------------------------


def _scratch(g: np.ndarray, s: np.ndarray) -> np.ndarray:
    s2 = s * s
    under, over = g < 1, g > 1
    at_one = ~under & ~over
    return _piecewise(
        g.shape,
        [
            (under, lambda m: ((1 - g[m]) ** 2 + g[m] * s2[m]) / (1 - g[m])),
            (over, lambda m: s2[m] / (g[m] - 1)),
            (at_one, lambda m: np.where(s[m] > 0, np.inf, 0.0)),
        ],
    )


def _scratch_finite(n: np.ndarray, d: np.ndarray, s: np.ndarray) -> np.ndarray:
    s2 = s * s
    under, over = n < d - 1, n > d + 1
    critical = ~under & ~over
    return _piecewise(
        n.shape,
        [
            (under, lambda m: (1 - n[m] / d[m]) + s2[m] * n[m] / (d[m] - n[m] - 1)),
            (over, lambda m: s2[m] * d[m] / (n[m] - d[m] - 1)),
            (
                critical,
                lambda m: np.where(
                    s[m] > 0, np.inf, np.where(n[m] < d[m], 1 - n[m] / d[m], 0.0)
                ),
            ),
        ],
    )


def _linear_transfer(n: np.ndarray, t: np.ndarray, s: np.ndarray) -> np.ndarray:
    sin2 = _sin2(t)
    num = s * s + sin2
    ok = n > 2
    # the numerator vanishes only for sigma = 0 and sin(theta) = 0 (test the
    # inputs, not ``num``, so that an underflowing sigma**2 still counts as > 0)
    noisy = (s > 0) | (sin2 > 0)
    return _piecewise(
        n.shape,
        [
            (ok, lambda m: sin2[m] + num[m] / (n[m] - 2)),
            (~ok, lambda m: np.where(noisy[m], np.inf, 0.0)),
        ],
    )


# ---------------------------------------------------------------------------
# scratch training (Theorem 3.6)
# ---------------------------------------------------------------------------


@_overflow_to_inf
def scratch_risk(gamma, sigma):
    r"""Asymptotic excess risk of the minimum-norm (scratch-trained) solution.

    Paper 000, Eq. 8 (Theorem 3.6, proof in App. B.5):

    .. math::

        \mathbb{E}_{\mathcal{D}}\mathcal{R}_{sc} =
        \begin{cases}
            \dfrac{(1-\gamma)^2 + \gamma\sigma^2}{1-\gamma} & \gamma < 1 \\[1ex]
            \dfrac{\sigma^2}{\gamma - 1} & \gamma > 1
        \end{cases}

    in the proportional limit :math:`n, d \to \infty` with
    :math:`\gamma = n/d` fixed.

    At the interpolation threshold :math:`\gamma = 1` the risk is ``inf`` when
    :math:`\sigma > 0`.  When :math:`\sigma = 0` it is ``0``: both one-sided
    limits vanish (:math:`1-\gamma \to 0` and :math:`0/(\gamma-1) = 0`), and for
    a square Gaussian :math:`X` the min-norm solution recovers
    :math:`\beta_t` exactly.

    Parameters
    ----------
    gamma : float or array_like
        Sample ratio :math:`\gamma = n/d > 0`.
    sigma : float or array_like
        Label-noise standard deviation :math:`\sigma \ge 0`.

    Returns
    -------
    float or ndarray
        Expected excess risk :math:`\mathbb{E}\|\hat\beta_{sc} - \beta_t\|^2`
        (``float`` if all inputs are scalars).

    Raises
    ------
    ValueError
        If an argument is NaN, infinite or out of range.

    See Also
    --------
    scratch_risk_finite : exact expectation at finite ``n``, ``d``.
    """
    scalar, (g, s) = _prepare(gamma=gamma, sigma=sigma)
    return _finish(_scratch(g, s), scalar)


@_overflow_to_inf
def scratch_risk_finite(n, d, sigma):
    r"""Exact finite-size excess risk of the minimum-norm solution, Gaussian ``X``.

    Finite-``n, d`` version of paper 000, Eq. 8:

    .. math::

        \mathbb{E}\mathcal{R}_{sc}(n, d) =
        \begin{cases}
            \left(1 - \dfrac{n}{d}\right) + \sigma^2\dfrac{n}{d - n - 1}
                & n < d - 1 \\[1ex]
            \sigma^2 \dfrac{d}{n - d - 1} & n > d + 1 \\[1ex]
            +\infty & |n - d| \le 1,\ \sigma > 0
        \end{cases}

    and, for :math:`\sigma = 0`, :math:`1 - n/d` when :math:`n < d` and
    :math:`0` when :math:`n \ge d`.

    Derivation (following App. B.5, Eq. 92, but without taking a limit): with
    :math:`P = X^+X` the projector onto :math:`\mathrm{row}(X)`,

    .. math::

        \mathbb{E}\|X^+y - \beta_t\|^2
        = \mathbb{E}\|(I - P)\beta_t\|^2
          + \sigma^2\,\mathbb{E}\operatorname{tr}\big((X^+)^T X^+\big).

    For :math:`n \le d`, :math:`\mathrm{row}(X)` is uniform on the
    Grassmannian, so :math:`\mathbb{E}P = (n/d) I` and the bias term is
    :math:`1 - n/d` exactly.  The variance term is
    :math:`\sigma^2\mathbb{E}\operatorname{tr}\big((XX^T)^{-1}\big)`; since
    :math:`XX^T \sim W_n(d, I)`, its inverse is inverse-Wishart with
    :math:`\mathbb{E}(XX^T)^{-1} = I_n/(d - n - 1)`, hence
    :math:`\mathbb{E}\operatorname{tr} = n/(d - n - 1)` for :math:`d > n + 1`
    (and ``inf`` otherwise).  For :math:`n \ge d` the bias vanishes
    (:math:`P = I` a.s.) and :math:`X^TX \sim W_d(n, I)` gives
    :math:`\sigma^2 d/(n - d - 1)` for :math:`n > d + 1`.  As
    :math:`n, d \to \infty` with :math:`n/d = \gamma` this tends to
    :func:`scratch_risk`.

    Note that although the mean is finite for :math:`|n - d| \ge 2`, the
    variance of the risk is only finite for :math:`|n - d| \ge 4`; Monte Carlo
    estimates near the threshold are heavy-tailed.

    Parameters
    ----------
    n : int or array_like
        Number of training samples, integer :math:`\ge 1`.
    d : int or array_like
        Input dimension, integer :math:`\ge 1`.
    sigma : float or array_like
        Label-noise standard deviation :math:`\sigma \ge 0`.

    Returns
    -------
    float or ndarray
        Exact expected excess risk.

    Raises
    ------
    ValueError
        If an argument is NaN, infinite, non-integer (``n``, ``d``) or out of
        range.
    """
    scalar, (n_, d_, s) = _prepare(n=n, d=d, sigma=sigma)
    return _finish(_scratch_finite(n_, d_, s), scalar)


# ---------------------------------------------------------------------------
# linear transfer (Theorems 3.7 and 3.8)
# ---------------------------------------------------------------------------


@_overflow_to_inf
def linear_transfer_risk(n, theta, sigma):
    r"""Excess risk of linear transfer (refit the output along :math:`\beta_s`).

    Paper 000, Eq. 10 (Theorem 3.7, proof in App. B.6):

    .. math::

        \mathbb{E}_{\mathcal{D}}\mathcal{R}_{lt}
        = \sin^2\theta + \frac{\sigma^2 + \sin^2\theta}{n - 2}.

    This is exact at every finite :math:`n \ge 3` and independent of
    :math:`d`: with :math:`z = X\beta_s \sim \mathcal{N}(0, I_n)`,
    :math:`b = z^T y/\|z\|^2` has :math:`\mathbb{E}b = \cos\theta` and
    :math:`\mathbb{E}b^2 = \cos^2\theta + (\sin^2\theta + \sigma^2)\,
    \mathbb{E}[1/\chi^2_n]` with :math:`\mathbb{E}[1/\chi^2_n] = 1/(n-2)`.

    For :math:`n \le 2`, :math:`\mathbb{E}[1/\chi^2_n] = \infty`, so the risk
    is ``inf`` unless the numerator :math:`\sigma^2 + \sin^2\theta` is zero
    (:math:`\sigma = 0` and :math:`\theta \in \{0, \pi\}`), in which case
    :math:`b = \cos\theta` exactly and the risk is ``0``.

    Parameters
    ----------
    n : int or array_like
        Number of target samples, integer :math:`\ge 1`.
    theta : float or array_like
        Source-target angle in :math:`[0, \pi]` radians.
    sigma : float or array_like
        Label-noise standard deviation :math:`\sigma \ge 0`.

    Returns
    -------
    float or ndarray
        Expected excess risk :math:`\mathbb{E}\|b\beta_s - \beta_t\|^2`.

    Raises
    ------
    ValueError
        If an argument is NaN, infinite or out of range.
    """
    scalar, (n_, t, s) = _prepare(n=n, theta=theta, sigma=sigma)
    return _finish(_linear_transfer(n_, t, s), scalar)


@_overflow_to_inf
def linear_transfer_risk_std(n, theta, sigma):
    r"""Standard deviation over data draws of the linear-transfer risk (companion to Eq. 10).

    With :math:`z = X\beta_s` and :math:`a = \sin\theta\, X\nu + \epsilon` independent
    Gaussians (App. B.6), :math:`(b - \cos\theta)^2 = (a^\top z)^2/\|z\|^4` and

    .. math::

        \mathcal R_{lt} = \sin^2\theta + (\sigma^2 + \sin^2\theta)\,
        \frac{\chi^2_1}{\chi^2_n}, \qquad
        \operatorname{Var}\mathcal R_{lt} = (\sigma^2 + \sin^2\theta)^2
        \left[\frac{3}{(n-2)(n-4)} - \frac{1}{(n-2)^2}\right]

    with independent :math:`\chi^2` variables (:math:`\mathbb E\chi_1^4 = 3`,
    :math:`\mathbb E[\chi_n^{-4}] = 1/((n-2)(n-4))`).  Exact for :math:`n > 4`; ``inf``
    for :math:`n \le 4` unless :math:`\sigma = 0` and :math:`\sin\theta = 0` (then 0).
    It gives the Monte Carlo error of simulated means without estimating it from a
    handful of skewed draws.
    """
    scalar, (n_, t, s) = _prepare(n=n, theta=theta, sigma=sigma)
    num = s * s + _sin2(t)
    noisy = (s > 0) | (_sin2(t) > 0)
    ok = n_ > 4
    out = _piecewise(
        n_.shape,
        [
            (ok, lambda m: num[m] * np.sqrt(3 / ((n_[m] - 2) * (n_[m] - 4))
                                            - 1 / (n_[m] - 2) ** 2)),
            (~ok, lambda m: np.where(noisy[m], np.inf, 0.0)),
        ],
    )
    return _finish(out, scalar)


@_overflow_to_inf
def linear_transferability(gamma, theta, sigma):
    r"""Asymptotic transferability of linear transfer.

    Paper 000, Eq. 11 (the :math:`n, d \to \infty` limit of Eq. 8 minus
    Eq. 10):

    .. math::

        \mathcal{T}_{lt} =
        \begin{cases}
            \dfrac{(1-\gamma)^2 + \gamma\sigma^2}{1-\gamma} - \sin^2\theta
                & \gamma < 1 \\[1ex]
            \dfrac{\sigma^2}{\gamma - 1} - \sin^2\theta & \gamma > 1
        \end{cases}

    At :math:`\gamma = 1` it is ``+inf`` for :math:`\sigma > 0` and
    :math:`-\sin^2\theta` for :math:`\sigma = 0` (see :func:`scratch_risk`).
    Negative values mean negative transfer.  For :math:`\gamma > 1` the sign
    changes at :func:`linear_transfer_boundary`; for :math:`\gamma < 1` it is
    negative exactly inside :func:`negative_transfer_window`.

    Parameters
    ----------
    gamma : float or array_like
        Sample ratio :math:`\gamma = n/d > 0`.
    theta : float or array_like
        Source-target angle in :math:`[0, \pi]`.
    sigma : float or array_like
        Label-noise standard deviation :math:`\sigma \ge 0`.

    Returns
    -------
    float or ndarray
        :math:`\mathbb{E}\mathcal{R}_{sc} - \mathbb{E}\mathcal{R}_{lt}`.

    Raises
    ------
    ValueError
        If an argument is NaN, infinite or out of range.
    """
    scalar, (g, t, s) = _prepare(gamma=gamma, theta=theta, sigma=sigma)
    return _finish(_scratch(g, s) - _sin2(t), scalar)


@_overflow_to_inf
def linear_transferability_finite(n, d, theta, sigma):
    r"""Exact finite-size transferability of linear transfer.

    Difference of the finite-size scratch risk (:func:`scratch_risk_finite`)
    and the exact linear-transfer risk (paper 000, Eq. 10):

    .. math::

        \mathcal{T}_{lt}(n, d) = \mathbb{E}\mathcal{R}_{sc}(n, d)
        - \sin^2\theta - \frac{\sigma^2 + \sin^2\theta}{n - 2}.

    Its :math:`n, d \to \infty` limit is paper 000, Eq. 11
    (:func:`linear_transferability`).

    Divergences: the result is ``+inf`` where only the scratch risk diverges
    (:math:`|n - d| \le 1`, :math:`\sigma > 0`) and ``-inf`` where only the
    linear-transfer risk diverges (:math:`n \le 2` with
    :math:`\sigma^2 + \sin^2\theta > 0`).  Where *both* diverge (e.g.
    :math:`n = d = 2`, :math:`\sigma > 0`) the difference of expectations is
    :math:`\infty - \infty`, which is undefined: a :class:`ValueError` is
    raised rather than returning NaN.

    Parameters
    ----------
    n : int or array_like
        Number of target samples, integer :math:`\ge 1`.
    d : int or array_like
        Input dimension, integer :math:`\ge 1`.
    theta : float or array_like
        Source-target angle in :math:`[0, \pi]`.
    sigma : float or array_like
        Label-noise standard deviation :math:`\sigma \ge 0`.

    Returns
    -------
    float or ndarray
        :math:`\mathbb{E}\mathcal{R}_{sc} - \mathbb{E}\mathcal{R}_{lt}`.

    Raises
    ------
    ValueError
        If an argument is invalid, or if both expected risks diverge for some
        entry (the transferability is undefined there).
    """
    scalar, (n_, d_, t, s) = _prepare(n=n, d=d, theta=theta, sigma=sigma)
    sin2 = _sin2(t)
    sc_diverges = (np.abs(n_ - d_) <= 1) & (s > 0)
    lt_diverges = (n_ <= 2) & ((s > 0) | (sin2 > 0))
    both = sc_diverges & lt_diverges
    if np.any(both):
        i = np.flatnonzero(both.ravel())[0]
        raise ValueError(
            "linear transferability is undefined (inf - inf) at "
            f"n = {n_.flat[i]:g}, d = {d_.flat[i]:g}, sigma = {s.flat[i]:g}: the "
            "scratch risk diverges for |n - d| <= 1 with sigma > 0 and the "
            "linear-transfer risk diverges for n <= 2"
        )
    regular = (n_ > 2) & (np.abs(n_ - d_) > 1)
    degenerate = ~regular & ~sc_diverges & ~lt_diverges

    def _regular(m):
        nm, dm, sm, s2m = n_[m], d_[m], s[m], sin2[m]
        under = nm < dm
        bias = np.where(under, 1 - nm / dm, 0.0)
        trace = np.where(under, nm, dm) / (np.abs(dm - nm) - 1)  # E tr((X^+)^T X^+)
        # collect the sigma^2 terms first: no inf - inf even if sigma**2 overflows
        coef = trace - 1 / (nm - 2)
        noise = np.multiply(sm * sm, coef, out=np.zeros_like(coef), where=coef != 0)
        return bias - s2m - s2m / (nm - 2) + noise

    def _degenerate(m):  # both risks finite but at least one uses a special case
        return _scratch_finite(n_[m], d_[m], s[m]) - _linear_transfer(n_[m], t[m], s[m])

    out = _piecewise(
        n_.shape,
        [
            (regular, _regular),
            (degenerate, _degenerate),
            (sc_diverges & ~lt_diverges, lambda m: np.full(int(np.count_nonzero(m)), np.inf)),
            (lt_diverges & ~sc_diverges, lambda m: np.full(int(np.count_nonzero(m)), -np.inf)),
        ],
    )
    return _finish(out, scalar)


@_overflow_to_inf
def linear_transfer_boundary(theta, sigma):
    r"""Underparameterised boundary between positive and negative linear transfer.

    From paper 000, Eq. 11 and Sec. 3.3: for :math:`\gamma > 1`,
    :math:`\mathcal{T}_{lt} < 0` if and only if

    .. math::

        \gamma > \gamma_c = 1 + \frac{\sigma^2}{\sin^2\theta}.

    Returns :math:`\gamma_c`, which is ``inf`` where :math:`\sin\theta = 0`
    (:math:`\theta \in \{0, \pi\}`: no negative transfer for :math:`\gamma > 1`).
    With :math:`\sigma = 0` and :math:`\sin\theta > 0`, :math:`\gamma_c = 1`.

    Parameters
    ----------
    theta : float or array_like
        Source-target angle in :math:`[0, \pi]`.
    sigma : float or array_like
        Label-noise standard deviation :math:`\sigma \ge 0`.

    Returns
    -------
    float or ndarray
        :math:`\gamma_c \ge 1`.

    Raises
    ------
    ValueError
        If an argument is NaN, infinite or out of range.
    """
    scalar, (t, s) = _prepare(theta=theta, sigma=sigma)
    sin2 = _sin2(t)
    pos = sin2 > 0
    out = _piecewise(
        t.shape,
        [
            (pos, lambda m: 1 + s[m] ** 2 / sin2[m]),
            (~pos, lambda m: np.full(int(np.count_nonzero(m)), np.inf)),
        ],
    )
    return _finish(out, scalar)


@_overflow_to_inf
def ridge_linear_transfer_risk(lam, theta):
    r"""Large-``n`` excess risk of ridge-regularised linear transfer.

    Paper 000, Eq. 13 (Theorem 3.8, proof in App. B.7):

    .. math::

        \lim_{n\to\infty}\mathbb{E}_{\mathcal{D}}\mathcal{R}^{\lambda}_{lt}
        = 1 - \frac{1 + 2\lambda}{(1+\lambda)^2}\cos^2\theta,

    for :math:`b` minimising
    :math:`\frac{1}{2n}\|b\,X\beta_s - y\|^2 + \frac{\lambda}{2}b^2`, i.e.
    :math:`b = (X\beta_s)^T y / (\|X\beta_s\|^2 + n\lambda) \to
    \cos\theta/(1+\lambda)`.  The noise level drops out in this limit.  It
    equals :math:`\sin^2\theta` at :math:`\lambda = 0` and, since
    :math:`\partial_\lambda (1+2\lambda)/(1+\lambda)^2 = -2\lambda/(1+\lambda)^3`,
    is strictly increasing in :math:`\lambda` whenever
    :math:`\cos\theta \ne 0`.

    Parameters
    ----------
    lam : float or array_like
        Ridge strength :math:`\lambda \ge 0`.
    theta : float or array_like
        Source-target angle in :math:`[0, \pi]`.

    Returns
    -------
    float or ndarray
        Limiting expected excess risk.

    Raises
    ------
    ValueError
        If an argument is NaN, infinite or out of range.
    """
    scalar, (lm, t) = _prepare(lam=lam, theta=theta)
    with np.errstate(over="ignore", under="ignore"):
        out = 1 - (1 + 2 * lm) / (1 + lm) ** 2 * _cos(t) ** 2
    return _finish(out, scalar)


# ---------------------------------------------------------------------------
# fine-tuning (Theorem 3.9)
# ---------------------------------------------------------------------------


@_overflow_to_inf
def finetune_risk(gamma, theta, sigma):
    r"""Asymptotic excess risk of full fine-tuning from the pretrained weights.

    Paper 000, Eq. 14 (Theorem 3.9, proof in App. B.8):

    .. math::

        \mathbb{E}_{\mathcal{D}}\mathcal{R}_{ft} =
        \begin{cases}
            \mathbb{E}\mathcal{R}_{sc} + (1-\gamma)(1 - 2\cos\theta)
                & \gamma \le 1 \\
            \mathbb{E}\mathcal{R}_{sc} & \gamma > 1
        \end{cases}

    with :math:`\mathbb{E}\mathcal{R}_{sc}` from :func:`scratch_risk`
    (Eq. 8).  Fine-tuning converges to
    :math:`X^+y + (I - P_{\mathrm{row}(X)})\beta_s`: the component of
    :math:`\beta_s` in the null space of :math:`X` is never updated.

    Parameters
    ----------
    gamma : float or array_like
        Sample ratio :math:`\gamma = n/d > 0`.
    theta : float or array_like
        Source-target angle in :math:`[0, \pi]`.
    sigma : float or array_like
        Label-noise standard deviation :math:`\sigma \ge 0`.

    Returns
    -------
    float or ndarray
        Expected excess risk (``inf`` at :math:`\gamma = 1`,
        :math:`\sigma > 0`).

    Raises
    ------
    ValueError
        If an argument is NaN, infinite or out of range.
    """
    scalar, (g, t, s) = _prepare(gamma=gamma, theta=theta, sigma=sigma)
    with np.errstate(over="ignore"):
        extra = np.where(g <= 1, (1 - g) * (1 - 2 * _cos(t)), 0.0)
    return _finish(_scratch(g, s) + extra, scalar)


@_overflow_to_inf
def finetune_risk_finite(n, d, theta, sigma):
    r"""Exact finite-size excess risk of fine-tuning, Gaussian ``X``.

    Finite-``n, d`` version of paper 000, Eq. 14:

    .. math::

        \mathbb{E}\mathcal{R}_{ft}(n, d) =
        \begin{cases}
            \mathbb{E}\mathcal{R}_{sc}(n, d)
                + \left(1 - \dfrac{n}{d}\right)(1 - 2\cos\theta) & n < d \\
            \mathbb{E}\mathcal{R}_{sc}(n, d) & n \ge d
        \end{cases}

    with :math:`\mathbb{E}\mathcal{R}_{sc}(n, d)` from
    :func:`scratch_risk_finite`.

    Derivation: with :math:`P = P_{\mathrm{row}(X)}`,
    :math:`\hat\beta_{ft} - \beta_t = (I - P)(\beta_s - \beta_t) + X^+\epsilon`,
    and the two terms are orthogonal (:math:`X^+\epsilon \in \mathrm{row}(X)`).
    Since :math:`\mathbb{E}(I - P) = (1 - n/d) I` exactly for :math:`n \le d`
    and :math:`\|\beta_s - \beta_t\|^2 = 2 - 2\cos\theta`,

    .. math::

        \mathbb{E}\mathcal{R}_{ft} = \left(1 - \tfrac{n}{d}\right)(2 - 2\cos\theta)
        + \sigma^2\,\mathbb{E}\operatorname{tr}\big((X^+)^TX^+\big),

    which is the expression above because the scratch bias is
    :math:`1 - n/d`.  For :math:`n \ge d`, :math:`P = I` a.s. and fine-tuning
    coincides with scratch training.

    Parameters
    ----------
    n : int or array_like
        Number of target samples, integer :math:`\ge 1`.
    d : int or array_like
        Input dimension, integer :math:`\ge 1`.
    theta : float or array_like
        Source-target angle in :math:`[0, \pi]`.
    sigma : float or array_like
        Label-noise standard deviation :math:`\sigma \ge 0`.

    Returns
    -------
    float or ndarray
        Exact expected excess risk (``inf`` for :math:`|n - d| \le 1`,
        :math:`\sigma > 0`).

    Raises
    ------
    ValueError
        If an argument is NaN, infinite, non-integer (``n``, ``d``) or out of
        range.
    """
    scalar, (n_, d_, t, s) = _prepare(n=n, d=d, theta=theta, sigma=sigma)
    extra = np.where(n_ < d_, (1 - n_ / d_) * (1 - 2 * _cos(t)), 0.0)
    return _finish(_scratch_finite(n_, d_, s) + extra, scalar)


@_overflow_to_inf
def finetune_transferability(gamma, theta):
    r"""Asymptotic transferability of fine-tuning.

    Paper 000, Eq. 15 (Eq. 8 minus Eq. 14):

    .. math::

        \mathcal{T}_{ft} =
        \begin{cases}
            (\gamma - 1)(1 - 2\cos\theta) & \gamma \le 1 \\
            0 & \gamma > 1
        \end{cases}

    It is independent of :math:`\sigma`: the noise contribution
    :math:`X^+\epsilon` is identical for both estimators on the same data, so
    the difference of risks is finite sample by sample.  In particular the
    value at :math:`\gamma = 1` (``0``) is well defined even though both
    expected risks diverge there when :math:`\sigma > 0`.  Positive for
    :math:`\theta < \pi/3`, negative for :math:`\theta > \pi/3` (when
    :math:`\gamma < 1`).

    Parameters
    ----------
    gamma : float or array_like
        Sample ratio :math:`\gamma = n/d > 0`.
    theta : float or array_like
        Source-target angle in :math:`[0, \pi]`.

    Returns
    -------
    float or ndarray
        :math:`\mathbb{E}\mathcal{R}_{sc} - \mathbb{E}\mathcal{R}_{ft}`.

    Raises
    ------
    ValueError
        If an argument is NaN, infinite or out of range.
    """
    scalar, (g, t) = _prepare(gamma=gamma, theta=theta)
    with np.errstate(over="ignore"):
        out = np.where(g <= 1, (g - 1) * (1 - 2 * _cos(t)), 0.0)
    return _finish(out, scalar)


# ---------------------------------------------------------------------------
# negative-transfer window (Sec. 3.3)
# ---------------------------------------------------------------------------


def _scalar(name: str, value) -> float:
    if np.ndim(value) != 0 or not isinstance(np.asarray(value).item(), (Real, bool)):
        raise ValueError(
            f"{name} must be a real scalar for negative_transfer_window (got {value!r})"
        )
    return float(_validate(name, value))


def negative_transfer_window(theta, sigma):
    r"""Overparameterised window of negative linear transfer.

    Paper 000, Sec. 3.3: for :math:`\gamma < 1`, :math:`\mathcal{T}_{lt} < 0`
    (Eq. 11) is equivalent to
    :math:`\gamma^2 - (1 + \cos^2\theta - \sigma^2)\gamma + \cos^2\theta < 0`,
    i.e. :math:`\gamma` strictly between the roots

    .. math::

        \gamma_{\pm} = \tfrac12\Big[(1 + \cos^2\theta - \sigma^2)
            \mp \sqrt{(1 + \cos^2\theta - \sigma^2)^2 - 4\cos^2\theta}\Big].

    The paper labels the lower root :math:`\gamma_+` and writes the window as
    :math:`(\gamma_+, \gamma_-)`; this function returns the plain-language
    ``(lower, upper)`` tuple, i.e. ``(gamma_plus, gamma_minus)`` in the paper's
    notation, with ``lower < upper <= 1``.  The window is the open interval
    ``lower < gamma < upper``; its product of roots is :math:`\cos^2\theta`
    (used for a cancellation-free lower root), and at :math:`\sigma = 0` it is
    :math:`(\cos^2\theta, 1)`.

    A non-empty window exists if and only if :math:`|\cos\theta| < 1 - \sigma`
    (which requires :math:`\sigma < 1`); otherwise ``None`` is returned.  For
    :math:`\theta \le \pi/2` this is the paper's condition
    :math:`\theta \in (\arccos(1 - \sigma), \pi/2]`.  Because Eq. 11 depends on
    :math:`\theta` only through :math:`\sin^2\theta`, the window also exists
    for the mirror-image angles :math:`\theta \in [\pi/2, \pi - \arccos(1 -
    \sigma))` (anti-aligned source; linear transfer simply learns a negative
    output weight) -- the paper only discusses :math:`\theta \le \pi/2`.

    Only scalar inputs are accepted (the result is a tuple or ``None``).

    Parameters
    ----------
    theta : float
        Source-target angle in :math:`[0, \pi]`.
    sigma : float
        Label-noise standard deviation :math:`\sigma \ge 0`.

    Returns
    -------
    tuple of (float, float) or None
        ``(lower, upper)`` = (:math:`\gamma_+`, :math:`\gamma_-` in the
        paper's labels), or ``None`` when there is no overparameterised
        negative transfer.

    Raises
    ------
    ValueError
        If an argument is not a real scalar, is NaN/infinite, or out of range.
    """
    t = _scalar("theta", theta)
    s = _scalar("sigma", sigma)
    c = 0.0 if t == math.pi / 2 else abs(math.cos(t))
    u, v = 1.0 - c, 1.0 + c
    if not u > s:
        return None
    # discriminant in factorised form, strictly positive whenever u > s
    disc = (u - s) * (u + s) * (v - s) * (v + s)
    a = 1.0 + c * c - s * s
    upper = 0.5 * (a + math.sqrt(disc))
    lower = (c * c) / upper
    return (lower, upper)
