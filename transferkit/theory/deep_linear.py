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
* Every public function validates its arguments with the package's one validator
  (``check_values``, one range per parameter) before any work and raises
  :class:`ValueError` naming the offending parameter and its valid range
  (e.g. ``"gamma must be a finite number > 0 (got -1.0)"``); a string, ``None`` or a
  bool is a :class:`TypeError` (one that ``except ValueError`` also catches).  NaN and
  infinite inputs are rejected.  ``n`` and ``d`` must be integer-valued (``100`` or
  ``100.0``).
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
from collections.abc import Callable

import numpy as np
from scipy import integrate, special

from .._validate import MAX_INT, check_broadcast, check_int_or_inf, check_values
from .linear_teachers import deep_finetune_scale

__all__ = ["scratch_risk", "scratch_risk_finite", "linear_transfer_risk", "linear_transfer_risk_std", "linear_transferability", "linear_transferability_finite", "linear_transfer_boundary", "ridge_linear_transfer_risk", "finetune_risk", "finetune_risk_finite", "finetune_transferability", "finetune_transferability_finite", "negative_transfer_window", "ridge_linear_transfer_risk_finite", "mp_stieltjes", "ridge_risk", "ridge_norm2", "optimal_ridge_risk", "weight_decay_ridge_parameter", "weight_decay_scratch_risk"]


# ---------------------------------------------------------------------------
# validation and output helpers
# ---------------------------------------------------------------------------

#: The domain of every elementwise parameter of this module's closed forms, as the arguments
#: of :func:`transferkit._validate.check_values`: one range per name, whichever function
#: takes it (the sample count and dimension integers :math:`\ge 1`, :math:`\gamma > 0`,
#: :math:`\theta\in[0, \pi]`, the noise, ridge and weight-decay parameters :math:`\ge 0`).
_DOMAINS = {
    "n": dict(lo=1, hi=MAX_INT, integer=True),
    "d": dict(lo=1, hi=MAX_INT, integer=True),
    "gamma": dict(lo=0.0, lo_open=True),
    "theta": dict(lo=0.0, hi=math.pi),
    "sigma": dict(lo=0.0),
    "lam": dict(lo=0.0),
    "mu": dict(lo=0.0),
    "weight_decay": dict(lo=0.0),
}


def _prepare(**values) -> tuple[bool, list[np.ndarray]]:
    """Check each parameter against its range (:data:`_DOMAINS`, in the order given) and
    broadcast them together.

    Returns ``(all_scalar, arrays)`` where ``arrays`` are read-only broadcast
    views in the order the keywords were given.
    """
    arrays = {name: check_values(name, v, **_DOMAINS[name]) for name, v in values.items()}
    check_broadcast(**arrays)
    all_scalar = all(a.ndim == 0 for a in arrays.values())
    return all_scalar, list(np.broadcast_arrays(*arrays.values()))


def _finish(out: np.ndarray, all_scalar: bool):
    """Return a python float for scalar input, an ndarray otherwise."""
    out = np.asarray(out, dtype=float)
    if np.isnan(out).any():  # pragma: no cover - guarded against by construction
        raise FloatingPointError("transferkit.theory.deep_linear produced NaN; please report this")
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


def _unless_overflow(direct: np.ndarray, alternative: Callable[[], np.ndarray]) -> np.ndarray:
    """``direct`` where finite; elsewhere ``alternative()``, the same expression ordered so
    that it overflows only where its value does (``sigma ** 2`` overflows beyond 1.3e154
    although ``sigma ** 2 / n`` need not)."""
    if np.all(np.isfinite(direct)):
        return direct
    return np.where(np.isfinite(direct), direct, alternative())


def _scratch(g: np.ndarray, s: np.ndarray) -> np.ndarray:
    s2 = s * s
    under, over = g < 1, g > 1
    at_one = ~under & ~over
    return _piecewise(
        g.shape,
        [
            (under, lambda m: _unless_overflow(
                ((1 - g[m]) ** 2 + g[m] * s2[m]) / (1 - g[m]),
                lambda: (1 - g[m]) + s[m] * (s[m] * (g[m] / (1 - g[m]))))),
            (over, lambda m: _unless_overflow(s2[m] / (g[m] - 1),
                                              lambda: s[m] * (s[m] / (g[m] - 1)))),
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
            (under, lambda m: _unless_overflow(
                (1 - n[m] / d[m]) + s2[m] * n[m] / (d[m] - n[m] - 1),
                lambda: (1 - n[m] / d[m]) + s[m] * (s[m] * (n[m] / (d[m] - n[m] - 1))))),
            (over, lambda m: _unless_overflow(
                s2[m] * d[m] / (n[m] - d[m] - 1),
                lambda: s[m] * (s[m] * (d[m] / (n[m] - d[m] - 1))))),
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
            (ok, lambda m: _unless_overflow(
                sin2[m] + num[m] / (n[m] - 2),
                lambda: sin2[m] + s[m] * (s[m] / (n[m] - 2)) + sin2[m] / (n[m] - 2))),
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
            (ok, lambda m: _unless_overflow(
                num[m] * np.sqrt(3 / ((n_[m] - 2) * (n_[m] - 4)) - 1 / (n_[m] - 2) ** 2),
                lambda: (s[m] * (s[m] * np.sqrt(3 / ((n_[m] - 2) * (n_[m] - 4))
                                                - 1 / (n_[m] - 2) ** 2))
                         + _sin2(t[m]) * np.sqrt(3 / ((n_[m] - 2) * (n_[m] - 4))
                                                 - 1 / (n_[m] - 2) ** 2)))),
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
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        # beyond 1e150 (1 + lam)^2 overflows (inf / inf): the same ratio divided through
        # by lam^2, (2 + 1/lam) / lam / (1 + 1/lam)^2 -> 2 / lam
        shrink = np.where(lm > _LAM_LARGE, (2 + 1 / lm) / lm / (1 + 1 / lm) ** 2,
                          (1 + 2 * lm) / (1 + lm) ** 2)
        out = 1 - shrink * _cos(t) ** 2
    return _finish(out, scalar)


_LAM_LARGE = 1e150


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


def finetune_transferability_finite(n, d, theta):
    r"""Exact transferability of fine-tuning at finite :math:`n, d`.

    Finite-size form of paper 000, Eq. 15 (:func:`finetune_transferability`): the
    difference of the exact finite-size expectations of Eq. 8
    (:func:`scratch_risk_finite`) and Eq. 14 (:func:`finetune_risk_finite`),

    .. math::

        \mathcal{T}_{ft}(n, d) = \mathbb{E}\mathcal{R}_{sc}(n, d) - \mathbb{E}\mathcal{R}_{ft}(n, d) =
        \begin{cases}
            -\left(1 - \dfrac{n}{d}\right)(1 - 2\cos\theta) & n < d \\
            0 & n \ge d
        \end{cases}

    which is Eq. 15 with :math:`\gamma = n/d`.  Scratch training and fine-tuning on the
    same sample share the noise term :math:`X^+\epsilon`, so the difference is finite
    sample by sample and does not depend on :math:`\sigma`: it is defined also at
    :math:`|n - d| \le 1`, where both expected risks are infinite for :math:`\sigma > 0`
    and their difference cannot be formed from :func:`finetune_risk_finite`.

    The cosine is ``np.cos(theta)`` (the value the command line
    :func:`transferkit.cli.theory_values` has always printed), so at
    :math:`\theta = \pi/2` it carries a rounding-level ``6e-17`` where
    :func:`finetune_risk_finite` uses an exact zero.

    Parameters
    ----------
    n : int or array_like
        Number of target samples, integer :math:`\ge 1`.
    d : int or array_like
        Input dimension, integer :math:`\ge 1`.
    theta : float or array_like
        Source-target angle in :math:`[0, \pi]`.

    Returns
    -------
    float or ndarray
        :math:`\mathbb{E}\mathcal{R}_{sc} - \mathbb{E}\mathcal{R}_{ft}` at :math:`(n, d)`.

    Raises
    ------
    ValueError
        If an argument is NaN, infinite, non-integer (``n``, ``d``) or out of range.
    """
    scalar, (n_, d_, t) = _prepare(n=n, d=d, theta=theta)
    below = n_ < d_
    out = np.where(below, -((1 - n_ / d_) * (1 - 2 * np.cos(t))), 0.0)
    return _finish(out, scalar)


# ---------------------------------------------------------------------------
# fine-tuning of deep networks: the null-space rescaling of paper 001, Thm 5.2
# ---------------------------------------------------------------------------


def _check_depth(depth):
    """``depth`` as an int >= 2 or ``inf``, else ``ValueError``."""
    return check_int_or_inf("depth", depth, 2)


def _deep_scale(r, par, depth):
    """``k`` of Thm 5.2 with ``||P_par beta_s||^2 = r`` (so ``||P_perp beta_s||^2 = 1 - r``),
    ``||X^+ y|| = par`` and ``||beta_s|| = 1``.

    For ``depth = inf`` (Eq. 6) ``k = par / sqrt(r)``; below ``_DEEP_R_SMALL`` it is taken in
    this form, since ``1 - ||P_perp beta_s||^2`` of the norms cancels (to 0 for
    ``r < 1e-16``, which made ``k`` infinite).
    """
    if depth == math.inf:
        small = r < _DEEP_R_SMALL
        if np.all(small):
            return par / np.sqrt(r)
        k = deep_finetune_scale(np.sqrt(1 - r), par, np.ones_like(r), depth)
        return np.where(small, par / np.sqrt(r), k)
    return deep_finetune_scale(np.sqrt(1 - r), par, np.ones_like(r), depth)


_DEEP_R_SMALL = 1e-4


@_overflow_to_inf
def finetune_depth_scale(gamma, sigma, depth):
    r"""Large-:math:`d` rescaling :math:`k` of the null-space component of :math:`\beta_s`.

    Paper 001, Thm 5.2 (Eq. 5): fine-tuning a depth-:math:`L` linear network by gradient
    flow from balanced pretrained weights (:math:`\beta(0) = \beta_s`, :math:`\|\beta_s\| = 1`)
    converges to :math:`\beta = k\,P_\perp\beta_s + X^+y` with
    :math:`k = \|\beta\|^{(L-1)/L}`, so :math:`k^{2L/(L-1)} = k^2\|P_\perp\beta_s\|^2 + \|X^+y\|^2`.
    In the setting of paper 000 (Gaussian :math:`X`, :math:`n = \gamma d`) the norms
    concentrate as :math:`d\to\infty`: :math:`\|P_\perp\beta_s\|^2\to 1-\gamma` and
    :math:`\|X^+y\|^2 \to \gamma + \sigma^2\gamma/(1-\gamma)` (:math:`\|P_\parallel\beta_t\|^2`
    plus the scratch variance of Eq. 8), so for :math:`\gamma < 1`

    .. math:: k^{2L/(L-1)} = (1-\gamma)\,k^2 + \gamma + \frac{\sigma^2\gamma}{1-\gamma} .

    (our derivation; it is in neither paper).  :math:`k = 1` at :math:`\sigma = 0`, for every
    :math:`L`: the rescaling is then invisible in the mean.  :math:`k > 1` for
    :math:`\sigma > 0`, growing with :math:`L` (``depth = inf`` is Eq. 6,
    :math:`k^2 = 1 + \sigma^2/(1-\gamma)`) and diverging as :math:`\gamma\to 1`.  For
    :math:`\gamma \ge 1` there is no null space and ``1`` is returned.
    """
    depth = _check_depth(depth)
    scalar, (g, s) = _prepare(gamma=gamma, sigma=sigma)
    out = np.ones(g.shape)
    under = g < 1
    if np.any(under):
        gu, su = g[under], s[under]
        m = gu + su ** 2 * gu / (1 - gu)  # ||X^+ y||^2, overflowing for sigma near 1e154
        par = np.where(np.isfinite(m), np.sqrt(m),
                       np.hypot(np.sqrt(gu), su * np.sqrt(gu / (1 - gu))))
        out[under] = _deep_scale(gu, par, depth)
    return _finish(out, scalar)


@_overflow_to_inf
def finetune_depth_scale_finite(n, d, sigma, depth):
    r"""Finite-size version of :func:`finetune_depth_scale` (paper 001, Thm 5.2).

    Uses the exact means :math:`\mathbb E\|P_\perp\beta_s\|^2 = 1 - n/d` and
    :math:`\mathbb E\|X^+y\|^2 = n/d + \sigma^2 n/(d-n-1)` for :math:`n < d - 1`
    (``inf`` for :math:`n = d - 1`, :math:`\sigma > 0`); ``1`` for :math:`n \ge d`.  The
    fluctuations of the two norms around their means (:math:`O(d^{-1/2})`) are ignored, so
    the resulting risk is exact up to :math:`O(1/d)` (checked against the per-sample
    Thm 5.2 limit in ``tests/test_theory.py``).
    """
    depth = _check_depth(depth)
    scalar, (n_, d_, s) = _prepare(n=n, d=d, sigma=sigma)
    out = np.ones(n_.shape)
    under = n_ < d_
    if np.any(under):
        nu, du, su = n_[under], d_[under], s[under]
        with np.errstate(divide="ignore"):
            var = np.where(nu < du - 1, su ** 2 * nu / np.maximum(du - nu - 1, 1),
                           np.where(su > 0, np.inf, 0.0))
        k = np.full(nu.shape, np.inf)
        fin = (nu < du - 1) | (su == 0)  # else n = d - 1 with sigma > 0: E||X^+ y||^2 = inf
        if np.any(fin):
            nf, df, sf, vf = nu[fin], du[fin], su[fin], var[fin]
            # sqrt(n/d + var) as a hypot where sigma^2 overflows
            tail = sf * np.sqrt(nf / np.maximum(df - nf - 1, 1))
            par = np.where(np.isfinite(vf), np.sqrt(nf / df + vf), np.hypot(np.sqrt(nf / df), tail))
            k[fin] = _deep_scale(nf / df, par, depth)
        out[under] = k
    return _finish(out, scalar)


@_overflow_to_inf
def finetune_risk_deep(gamma, theta, sigma, depth):
    r"""Large-:math:`d` excess risk of fine-tuning a depth-:math:`L` network (Thm 5.2 form).

    Eq. 14 of paper 000 with the null-space component of :math:`\beta_s` rescaled by
    :math:`k` (:func:`finetune_depth_scale`, paper 001 Thm 5.2): since
    :math:`\hat\beta - \beta_t = P_\perp(k\beta_s - \beta_t) + X^+\epsilon`,

    .. math::
        \mathbb E\mathcal R_{ft}^{(L)} = \mathbb E\mathcal R_{sc}
            + (1-\gamma)\,(k^2 - 2k\cos\theta) \quad (\gamma < 1),
        \qquad \mathbb E\mathcal R_{sc} \quad (\gamma \ge 1),

    which is Eq. 14 at :math:`k = 1`.  ``inf`` at :math:`\gamma = 1`, :math:`\sigma > 0`.
    """
    depth = _check_depth(depth)
    scalar, (g, t, s) = _prepare(gamma=gamma, theta=theta, sigma=sigma)
    k = np.asarray(finetune_depth_scale(g, s, depth), dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        extra = np.where(g < 1, (1 - g) * (k * k - 2 * k * _cos(t)), 0.0)
    return _finish(_scratch(g, s) + np.where(np.isfinite(extra), extra, 0.0), scalar)


@_overflow_to_inf
def finetune_risk_deep_finite(n, d, theta, sigma, depth):
    r"""Finite-size excess risk of deep fine-tuning, Thm 5.2 form.

    :math:`\mathbb E\mathcal R_{sc}(n, d) + (1 - n/d)(k^2 - 2k\cos\theta)` for :math:`n < d`
    with :math:`k` from :func:`finetune_depth_scale_finite` (paper 001, Thm 5.2; the
    finite-size Eq. 14 of paper 000, :func:`finetune_risk_finite`, is :math:`k = 1`), and the
    scratch risk for :math:`n \ge d`.
    """
    depth = _check_depth(depth)
    scalar, (n_, d_, t, s) = _prepare(n=n, d=d, theta=theta, sigma=sigma)
    k = np.asarray(finetune_depth_scale_finite(n_, d_, s, depth), dtype=float)
    base = _scratch_finite(n_, d_, s)
    with np.errstate(over="ignore", invalid="ignore"):
        extra = np.where((n_ < d_) & np.isfinite(k), (1 - n_ / d_) * (k * k - 2 * k * _cos(t)), 0.0)
    return _finish(base + extra, scalar)


@_overflow_to_inf
def finetune_transferability_deep(gamma, theta, sigma, depth):
    r"""Large-:math:`d` fine-tuning transferability with the Thm 5.2 rescaling.

    .. math::
        \mathcal T_{ft}^{(L)} = (1-\gamma)\,(2k\cos\theta - k^2) \quad (\gamma < 1),
        \qquad 0 \quad (\gamma \ge 1),

    with :math:`k` from :func:`finetune_depth_scale`; Eq. 15 of paper 000 is :math:`k = 1`.
    Unlike Eq. 15 it depends on :math:`\sigma` and :math:`L`, and its sign changes at
    :math:`\cos\theta = k/2` (:func:`finetune_boundary_deep`) instead of :math:`\theta = \pi/3`.
    """
    depth = _check_depth(depth)
    scalar, (g, t, s) = _prepare(gamma=gamma, theta=theta, sigma=sigma)
    k = np.asarray(finetune_depth_scale(g, s, depth), dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.where(g < 1, (1 - g) * (2 * k * _cos(t) - k * k), 0.0)
        # k beyond 1e154 (sigma that large): 2 k cos - k^2 as k (2 cos - k), no inf - inf
        out = np.where(np.isnan(out), (1 - g) * (k * (2 * _cos(t) - k)), out)
    return _finish(out, scalar)


@_overflow_to_inf
def finetune_boundary_deep(gamma, sigma, depth):
    r"""Angle where :func:`finetune_transferability_deep` changes sign, :math:`\arccos(k/2)`.

    Eq. 15 puts it at :math:`\theta = \pi/3` for every :math:`\gamma < 1`; with the
    Thm 5.2 rescaling (:math:`k \ge 1`) it moves to smaller angles as :math:`\gamma \to 1`,
    :math:`\sigma` or :math:`L` grow (``0`` once :math:`k \ge 2`).  ``nan``-free: for
    :math:`\gamma \ge 1` (no transfer either way) ``pi/3`` is returned by convention.
    """
    depth = _check_depth(depth)
    scalar, (g, s) = _prepare(gamma=gamma, sigma=sigma)
    k = np.asarray(finetune_depth_scale(g, s, depth), dtype=float)
    out = np.where(g < 1, np.arccos(np.clip(k / 2, -1.0, 1.0)), np.pi / 3)
    return _finish(out, scalar)


# ---------------------------------------------------------------------------
# negative-transfer window (Sec. 3.3)
# ---------------------------------------------------------------------------


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
    for name, value in (("theta", theta), ("sigma", sigma)):
        if np.ndim(value) != 0:
            raise ValueError(f"{name} must be a real scalar for negative_transfer_window "
                             f"(got {value!r})")
    t = float(check_values("theta", theta, **_DOMAINS["theta"]))
    s = float(check_values("sigma", sigma, **_DOMAINS["sigma"]))
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


def _chi2_expect(func, n: float) -> float:
    """:math:`\\mathbb E f(Q)` for :math:`Q \\sim \\chi^2_n` by adaptive quadrature.

    The density is scipy's ``stats.chi2.pdf`` written out, the same operations in the same
    order (``scipy.stats._continuous_distns.chi2_gen._logpdf``: the same values bit for bit,
    tested), without the argument handling of a frozen-distribution call at every node
    (about ten times faster)."""
    lo = max(0.0, n - 40 * math.sqrt(2 * n))
    hi = n + 40 * math.sqrt(2 * n) + 60
    df = np.asarray(float(n))
    half, lgam, log2n = df / 2. - 1, special.gammaln(df / 2.), (np.log(2) * df) / 2.

    def pdf(q):
        return np.exp(special.xlogy(half, np.asarray(q)) - np.asarray(q) / 2. - lgam - log2n)

    val, _ = integrate.quad(lambda q: func(q) * pdf(q), lo, hi,
                            points=[n], limit=200, epsabs=1e-13, epsrel=1e-11)
    return val


@_overflow_to_inf
def ridge_linear_transfer_risk_finite(n, theta, sigma, lam):
    r"""Exact finite-``n`` excess risk of ridge linear transfer (paper 000, Eqs. 124-125).

    With :math:`z = X\beta_s`, :math:`Q = \|z\|^2 \sim \chi^2_n` and
    :math:`b = z^\top y/(Q + n\lambda)` (Eq. 123), conditioning on :math:`z` gives

    .. math::

        \mathbb{E}\mathcal{R}^{\lambda}_{lt} = \sin^2\theta
        + \cos^2\theta\,\mathbb{E}\frac{(n\lambda)^2}{(Q+n\lambda)^2}
        + (\sin^2\theta + \sigma^2)\,\mathbb{E}\frac{Q}{(Q+n\lambda)^2},

    evaluated by one-dimensional quadrature over the :math:`\chi^2_n` density.  At
    :math:`\lambda = 0` it is Eq. 10 (:func:`linear_transfer_risk`); as
    :math:`n\to\infty` it tends to Eq. 13 (:func:`ridge_linear_transfer_risk`), which
    drops the :math:`O(1/n)` terms
    :math:`[(\sin^2\theta+\sigma^2)(1+\lambda)^2 + 6\lambda^2\cos^2\theta]/(n(1+\lambda)^4)`
    (label noise, and the fluctuation of :math:`Q` in the shrinkage bias).  The first
    decreases with :math:`\lambda`, so at finite :math:`n` the risk has its minimum at
    :math:`\lambda^\star \approx (\sin^2\theta + \sigma^2)/(n\cos^2\theta) > 0`, not at 0.
    Unit feature scale is assumed (for features :math:`s\,X\beta_s` use
    :math:`\lambda/s^2`, see :func:`transferkit.models.deep_linear.ridge_linear_transfer`).

    Parameters
    ----------
    n : int or array_like
        Number of target samples, integer :math:`\ge 1`.
    theta : float or array_like
        Source-target angle in :math:`[0, \pi]`.
    sigma : float or array_like
        Label-noise standard deviation :math:`\ge 0`.
    lam : float or array_like
        Ridge strength :math:`\lambda \ge 0` of Eq. 12.

    Returns
    -------
    float or ndarray
        Expected excess risk (``inf`` only at :math:`\lambda = 0`, :math:`n \le 2`).
    """
    scalar, (n_, t, s, lm) = _prepare(n=n, theta=theta, sigma=sigma, lam=lam)
    sin2, cos2 = _sin2(t), _cos(t) ** 2

    def _ridge(m):
        out = np.empty(int(np.count_nonzero(m)))
        for i, (nn, c2, s2, ss, ll) in enumerate(zip(n_[m], cos2[m], sin2[m], s[m], lm[m])):
            nl = nn * ll
            bias = _chi2_expect(lambda q: (nl / (q + nl)) ** 2, nn)
            var = _chi2_expect(lambda q: q / (q + nl) ** 2, nn)
            out[i] = s2 + c2 * bias + (s2 + ss * ss) * var
        return out

    out = _piecewise(n_.shape, [
        (lm > 0, _ridge),
        (lm == 0, lambda m: _linear_transfer(n_[m], t[m], s[m])),
    ])
    return _finish(out, scalar)


def _mp_m(psi: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Stieltjes transform of Marchenko-Pastur (ratio ``psi``) at ``-mu < 0``, cancellation-free."""
    b = 1 - psi + mu
    with np.errstate(over="ignore"):
        root = np.sqrt(b * b + 4 * psi * mu)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        neg = (root - b) / (2 * psi * mu)
        pos = 2 / (b + root)
        big = ~np.isfinite(root) | ~np.isfinite(2 * psi * mu)
        if np.any(big & (b <= 0)):
            # psi (or mu) so large that b^2 or 2 psi mu overflow: the same root divided by psi
            bs = b / psi
            neg = np.where(big, (np.hypot(bs, 2 * np.sqrt(mu / psi)) - bs) / (2 * mu), neg)
    return np.where(b > 0, pos, neg)


def _mp_dm(psi: np.ndarray, mu: np.ndarray, m: np.ndarray) -> np.ndarray:
    """:math:`\\int (s+\\mu)^{-2}\\,dF_\\psi(s) = m(1+\\psi m)/\\sqrt{b^2 + 4\\psi\\mu}`."""
    b = 1 - psi + mu
    return m * (1 + psi * m) / np.sqrt(b * b + 4 * psi * mu)


@_overflow_to_inf
def mp_stieltjes(gamma, mu):
    r"""Stieltjes transform of the Marchenko-Pastur law of :math:`X^\top X/n` at :math:`-\mu`.

    For :math:`X \in \mathbb R^{n\times d}` with i.i.d. standard entries and
    :math:`\psi = d/n = 1/\gamma` (paper 000 uses :math:`\gamma = n/d`), the spectral
    distribution :math:`F_\psi` of :math:`X^\top X/n` has

    .. math::

        m(-\mu) = \int\frac{dF_\psi(s)}{s+\mu}
        = \frac{-(1-\psi+\mu) + \sqrt{(1-\psi+\mu)^2 + 4\psi\mu}}{2\psi\mu},

    the root of :math:`\psi\mu m^2 + (1-\psi+\mu)m - 1 = 0` (Marchenko and Pastur 1967;
    Hastie et al. 2022, Sec. 5).  Requires :math:`\mu > 0`.
    """
    scalar, (g, mu_) = _prepare(gamma=gamma, mu=mu)
    if np.any(mu_ == 0):
        raise ValueError("mu must be > 0 for mp_stieltjes (got 0.0)")
    direct = _ridge_direct(g, 0.0, mu_) & (mu_ <= RIDGE_SIGMA_MAX)  # b^2 overflows beyond
    out = _piecewise(g.shape, [
        (direct, lambda m: _mp_m(1 / g[m], mu_[m])),
        (~direct, lambda m: _mp_m_tails(g[m], mu_[m])),
    ])
    return _finish(out, scalar)


def _ridge_parts(g, s, mu):
    r"""Asymptotic (risk, ||beta||^2) of ridge with parameter ``mu > 0``, unit signal.

    For :math:`\psi > 1` the law has an atom :math:`1 - 1/\psi` at 0, so :math:`m` and
    :math:`\int(s+\mu)^{-2}dF` grow like :math:`1/\mu` and :math:`1/\mu^2` and
    :math:`m - \mu\,m'` cancels catastrophically for small :math:`\mu`: the atom is taken
    out in closed form, :math:`m = (1-1/\psi)/\mu + \tilde m` with
    :math:`\tilde m = [N/D - 1]/(2\psi)`, :math:`N = 2(\psi+1)+\mu`, :math:`D = R+\psi-1`,
    :math:`R = \sqrt{(\psi-1)^2 + 2\mu(\psi+1) + \mu^2}`.
    """
    g, s, mu = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (g, s, mu)))
    psi = 1 / g
    m = _mp_m(psi, mu)
    dm = _mp_dm(psi, mu, m)
    mu_m, mu2_dm, reg = mu * m, mu * mu * dm, m - mu * dm
    atom = psi > 1
    if np.any(atom):
        p, u = psi[atom], mu[atom]
        R = np.sqrt((p - 1) ** 2 + 2 * u * (p + 1) + u * u)
        D, N = R + p - 1, 2 * (p + 1) + u
        mt = (N / D - 1) / (2 * p)                        # regular part of m
        dmt = -(D - N * (p + 1 + u) / R) / (2 * p * D * D)  # its -d/dmu
        w = 1 - 1 / p
        mu_m, mu2_dm, reg = (np.array(a, dtype=float) for a in (mu_m, mu2_dm, reg))
        mu_m[atom] = w + u * mt
        mu2_dm[atom] = w + u * u * dmt
        reg[atom] = mt - u * dmt
    var = s * s * psi * reg                   # sigma^2 psi int s/(s+mu)^2
    risk = mu2_dm + var                       # bias + variance
    norm2 = 1 - 2 * mu_m + mu2_dm + var       # int s^2/(s+mu)^2 + variance
    return risk, norm2


#: ``ridge_risk`` and ``ridge_norm2`` switch to their large-``mu`` series (``_ridge_series``)
#: for ``mu > RIDGE_MU_ASYMPTOTIC * (1 + sqrt(psi))^2`` (the top of the spectrum times this):
#: there the direct forms cancel (the risk of ``mu = 1e16`` came out 1.5, the squared norm of
#: ``mu = 1e13`` negative) and eight terms of the series are exact to float precision.
RIDGE_MU_ASYMPTOTIC = 1e3

#: ``optimal_ridge_risk`` divides through by ``sigma^2`` above this (``sigma^2`` would overflow).
OPTIMAL_RIDGE_SIGMA_ASYMPTOTIC = 1e50


def _ridge_far(g, mu):
    """Where the large-``mu`` series of ``_ridge_series`` is used."""
    return mu > RIDGE_MU_ASYMPTOTIC * (1 + np.sqrt(1 / g)) ** 2


def _mp_moments(psi, k_max):
    """Moments ``E[s^k]``, ``k = 0..k_max``, of Marchenko-Pastur with ratio ``psi`` (Narayana)."""
    out = [np.ones_like(psi)]
    for k in range(1, k_max + 1):
        out.append(sum(math.comb(k, j) * math.comb(k, j + 1) / k * psi ** j for j in range(k)))
    return out


def _ridge_series(g, s, mu, terms=8):
    r"""(risk, ||beta||^2) of :func:`_ridge_parts` as series in :math:`x = 1/\mu`:

    :math:`\int (1+sx)^{-2}dF = \sum_k (-1)^k (k+1) m_k x^k`, with :math:`m_k` the
    Marchenko-Pastur moments; :math:`\int s^j/(s+\mu)^2 = x^2\sum_k (-1)^k(k+1)m_{k+j}x^k`.
    Used for :math:`\mu(1+\sqrt\psi)^{-2} > 10^3`, where the truncation is below
    :math:`10^{-24}` relative.
    """
    g, s, mu = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (g, s, mu)))
    psi, x = 1 / g, 1 / mu
    mom = _mp_moments(psi, terms + 2)

    def series(j):
        tot = np.zeros_like(x)
        for k in reversed(range(terms)):  # Horner in x
            tot = tot * x + (-1) ** k * (k + 1) * mom[k + j]
        return tot

    with np.errstate(under="ignore"):
        sx = s * x
        var = sx * sx * psi * series(1)  # sigma^2 psi x^2 (...): no inf * 0 for huge sigma, mu
        return series(0) + var, x * x * series(2) + var


#: The direct forms above (``_mp_m``, ``_ridge_parts``, ``_ridge_series``) are used where
#: ``RIDGE_GAMMA_RANGE[0] <= gamma <= RIDGE_GAMMA_RANGE[1]``, ``mu >= RIDGE_MU_MIN`` and
#: ``sigma <= RIDGE_SIGMA_MAX`` (every value the book prints); beyond, ``psi = 1/gamma``,
#: ``b^2``, ``m'`` or ``sigma^2`` leave the float range (``inf * 0`` gave NaN at
#: ``gamma = 1e-308`` or at ``gamma = 1``, ``mu = 1e-308``) and ``_ridge_tails`` evaluates
#: the same limits without cancellation, overflow or a ratio above one.
RIDGE_GAMMA_RANGE = (1e-4, 1e4)

#: Below this ``mu`` the ridge forms switch to the cancellation-free ones (at ``gamma = 1``
#: the derivative ``m'`` grows like ``mu ** -1.5``); see ``RIDGE_GAMMA_RANGE``.
RIDGE_MU_MIN = 1e-150

#: Above this ``sigma`` the ridge forms switch to the cancellation-free ones, which take the
#: variance as ``(sigma sqrt(psi C)) ** 2`` (``sigma ** 2`` overflows beyond ``1.3e154``).
RIDGE_SIGMA_MAX = 1e100


def _ridge_direct(g, s, mu):
    """Where the direct forms are used (see :data:`RIDGE_GAMMA_RANGE`)."""
    return ((g >= RIDGE_GAMMA_RANGE[0]) & (g <= RIDGE_GAMMA_RANGE[1]) & (mu >= RIDGE_MU_MIN)
            & (s <= RIDGE_SIGMA_MAX))


def _mp_ratio_at_most_one(g, mu):
    r"""Marchenko-Pastur with ratio :math:`p \le 1` (no atom) that carries :math:`F_\psi`.

    For :math:`\gamma \ge 1` it is :math:`F_\psi` itself (:math:`p = \psi = 1/\gamma`,
    :math:`u = \mu`).  For :math:`\gamma < 1` the nonzero eigenvalues of :math:`X^\top X/n`
    are those of :math:`XX^\top/n = \psi\,XX^\top/d`, so :math:`F_\psi = (1-\gamma)\delta_0
    + \gamma\,(\psi t)_\# G` with :math:`G` the law of ratio :math:`p = \gamma` and
    :math:`u = \mu\gamma`: :math:`\int h(s)\,dF_\psi = (1-\gamma)h(0) + \gamma\,
    \mathbb E_G\,h(\psi t)`.  Returns ``(p, q = 1 - p, u)``, ``q`` without rounding.
    """
    under = g < 1
    with np.errstate(under="ignore"):
        p = np.where(under, g, 1 / g)
        q = np.where(under, 1 - g, (g - 1) / g)
        u = np.where(under, mu * g, mu)
    return p, q, u


def _mp_m_tails(g, mu):
    r""":math:`m(-\mu)` of :func:`mp_stieltjes` for every :math:`\gamma, \mu > 0`: for
    :math:`\gamma \ge 1` :math:`m = 2/(b + R)`, :math:`b = 1 - p + u`,
    :math:`R = \sqrt{b^2 + 4pu}` (``hypot``); for :math:`\gamma < 1`
    :math:`m = (1-\gamma)/\mu + \gamma^2\, m_G(-\mu\gamma)` (the atom and the bulk)."""
    p, q, u = _mp_ratio_at_most_one(g, mu)
    with np.errstate(under="ignore", over="ignore"):
        b = q + u
        mg = 1 / (0.5 * b + 0.5 * np.hypot(b, 2 * np.sqrt(p) * np.sqrt(u)))  # b + R may overflow
        return np.where(g < 1, q / mu + (g * g) * mg, mg)


def _ridge_tails_parts(g, s, mu):
    r"""(bias, :math:`\int s^2/(s+\mu)^2`, standard deviation of the noise) of
    :func:`ridge_risk` and :func:`ridge_norm2` at every :math:`\gamma, \mu > 0`,
    :math:`\sigma \ge 0`, through the law of ratio
    :math:`p \le 1` of :func:`_mp_ratio_at_most_one` (no atom, no cancellation).

    With :math:`b = q + u`, :math:`R = \sqrt{b^2 + 4pu}`, :math:`A = u\,m = 2u/(b+R)`,
    :math:`1 - A = (R - u + q)/(b + R)` and :math:`R - u = (q^2 + 2u(1+p))/(R + u)`
    (from :math:`pum^2 + bm = 1`), the three integrals of :func:`_ridge_parts` are

    .. math::

        \int\frac{u^2}{(s+u)^2} = \frac{A(u + pA)}{R},\qquad
        p\int\frac{s}{(s+u)^2} = \frac{p(1-A)}{R},\qquad
        \int\frac{s^2}{(s+u)^2} = \frac{(1-A)(R-u)}{R},

    sums of positive terms; beyond :data:`RIDGE_MU_ASYMPTOTIC` :math:`(1+\sqrt p)^2` the series
    of :func:`_ridge_series` in :math:`1/u` (moments of ratio :math:`p \le 1`, all finite).  For
    :math:`\gamma < 1`: bias :math:`(1-\gamma) + \gamma\,B_G`, squared norm
    :math:`\gamma\,N_G`, variance :math:`\sigma^2 pC_G` unchanged.  The variance comes as its
    square root :math:`\sigma\sqrt p\sqrt C` (finite wherever the variance is, and never a
    subnormal product).
    """
    g, s, mu = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (g, s, mu)))
    p, q, u = _mp_ratio_at_most_one(g, mu)
    far = u > RIDGE_MU_ASYMPTOTIC * (1 + np.sqrt(p)) ** 2
    with np.errstate(under="ignore", over="ignore", divide="ignore", invalid="ignore"):
        # near: the closed forms (u below ~4e3, so no overflow); far entries get u = 1 here
        un = np.where(far, 1.0, u)
        b = q + un
        R = np.hypot(b, 2 * np.sqrt(p) * np.sqrt(un))
        A = 2 * un / (b + R)
        r_u = (q * q + 2 * un * (1 + p)) / (R + un)
        one_a = (r_u + q) / (b + R)
        bias = A * (un + p * A) / R
        norm = one_a * r_u / R
        sd = (s * np.sqrt(p)) * np.sqrt(one_a / R)  # sqrt of the variance: no subnormal p C
        if np.any(far):
            x = 1 / np.where(far, u, 1.0)
            mom = _mp_moments(p, 10)

            def series(j):
                tot = np.zeros_like(x)
                for k in reversed(range(8)):  # Horner in x, as in _ridge_series
                    tot = tot * x + (-1) ** k * (k + 1) * mom[k + j]
                return tot

            bias = np.where(far, series(0), bias)
            norm = np.where(far, x * x * series(2), norm)
            sd = np.where(far, (s * x) * np.sqrt(p) * np.sqrt(series(1)), sd)
        under = g < 1
        bias = np.where(under, q + g * bias, bias)
        norm = np.where(under, g * norm, norm)
    return bias, norm, sd


def _ridge_tails(g, s, mu):
    """(risk, ||beta||^2) from :func:`_ridge_tails_parts`: bias + sd^2, norm + sd^2."""
    bias, norm, sd = _ridge_tails_parts(g, s, mu)
    with np.errstate(over="ignore", under="ignore"):
        var = sd * sd
    return bias + var, norm + var


def _ridge_values(g, s, mu):
    """(risk, ||beta||^2) for ``mu > 0``: the direct forms where :func:`_ridge_direct` (the
    series beyond :func:`_ridge_far`), :func:`_ridge_tails` elsewhere."""
    direct = _ridge_direct(g, s, mu)
    far = _ridge_far(g, mu)
    risk, norm2 = np.empty(g.shape), np.empty(g.shape)
    for mask, func in ((direct & ~far, _ridge_parts), (direct & far, _ridge_series),
                       (~direct, _ridge_tails)):
        if np.any(mask):
            r, n2 = func(g[mask], s[mask], mu[mask])
            risk[mask], norm2[mask] = r, n2
    return risk, norm2


@_overflow_to_inf
def ridge_risk(gamma, sigma, mu):
    r"""Asymptotic excess risk of ridge regression on isotropic data (Dobriban and Wager 2018).

    The estimator :math:`\hat\beta_\mu = (X^\top X/n + \mu I)^{-1}X^\top y/n` (objective
    :math:`\frac1{2n}\|y - X\beta\|^2 + \frac\mu2\|\beta\|^2`) with
    :math:`\|\beta_t\| = 1` has, as :math:`n, d\to\infty` with
    :math:`\gamma = n/d` (paper 000's convention; :math:`\psi = 1/\gamma = d/n`),

    .. math::

        \mathcal R(\mu) = \mu^2\, m'(-\mu) + \sigma^2\psi\,\big(m(-\mu) - \mu\, m'(-\mu)\big),
        \qquad m'(-\mu) = \int\frac{dF_\psi(s)}{(s+\mu)^2}
        = \frac{m(1+\psi m)}{\sqrt{(1-\psi+\mu)^2+4\psi\mu}},

    with :math:`m` from :func:`mp_stieltjes` (Dobriban and Wager 2018, Thm 2.1; Hastie et
    al. 2022, Thm 5).  At :math:`\mu = 0` it is the minimum-norm risk, Eq. 8 of paper 000
    (:func:`scratch_risk`).

    Beyond :data:`RIDGE_MU_ASYMPTOTIC` :math:`(1+\sqrt\psi)^2` the series in :math:`1/\mu`
    is used (the direct form cancels).  Outside :data:`RIDGE_GAMMA_RANGE`, below
    :data:`RIDGE_MU_MIN` or above :data:`RIDGE_SIGMA_MAX` (where :math:`1/\gamma`,
    :math:`m'` or :math:`\sigma^2` leave the float range) the same limit is evaluated through
    the Marchenko-Pastur law of ratio :math:`\min(\gamma, 1/\gamma) \le 1`, without an atom
    and in sums of positive terms: it tends to 1 as :math:`\gamma\to0` (no data), to
    :math:`\mu^2/(1+\mu)^2 + \sigma^2/(\gamma(1+\mu)^2)` as :math:`\gamma\to\infty`, and
    is ``inf`` only where its value overflows.

    Parameters
    ----------
    gamma : float or array_like
        :math:`\gamma = n/d > 0`.
    sigma : float or array_like
        Label-noise standard deviation :math:`\ge 0`.
    mu : float or array_like
        Ridge parameter :math:`\mu \ge 0`.
    """
    scalar, (g, s, mu_) = _prepare(gamma=gamma, sigma=sigma, mu=mu)
    out = _piecewise(g.shape, [
        (mu_ > 0, lambda m: _ridge_values(g[m], s[m], mu_[m])[0]),
        (mu_ == 0, lambda m: _scratch(g[m], s[m])),
    ])
    return _finish(out, scalar)


@_overflow_to_inf
def ridge_norm2(gamma, sigma, mu):
    r"""Asymptotic squared norm :math:`\|\hat\beta_\mu\|^2` of the ridge estimator (:func:`ridge_risk`).

    .. math::

        \|\hat\beta_\mu\|^2 \to \int\frac{s^2\,dF_\psi}{(s+\mu)^2}
        + \sigma^2\psi\int\frac{s\,dF_\psi}{(s+\mu)^2}
        = 1 - 2\mu m + \mu^2 m' + \sigma^2\psi(m - \mu m'),

    for :math:`\mu > 0` (:math:`m, m'` at :math:`-\mu`, :math:`\psi = 1/\gamma`).
    """
    scalar, (g, s, mu_) = _prepare(gamma=gamma, sigma=sigma, mu=mu)
    if np.any(mu_ == 0):
        raise ValueError("mu must be > 0 for ridge_norm2 (got 0.0)")
    out = _ridge_values(g, s, mu_)[1]
    return _finish(out, scalar)


@_overflow_to_inf
def optimal_ridge_risk(gamma, sigma):
    r"""Asymptotic excess risk of optimally tuned ridge on isotropic data.

    With :math:`\|\beta_t\| = 1` the optimal ridge parameter is
    :math:`\mu^\star = \sigma^2\psi = \sigma^2/\gamma` (Dobriban and Wager 2018, Thm 2.1;
    Hastie et al. 2022, Thm 5 and Cor. 5, with signal :math:`r^2 = 1`, :math:`\psi = d/n`).
    At :math:`\mu^\star` the bias and variance terms of :func:`ridge_risk` combine to
    :math:`\mathcal R^\star = \sigma^2\psi\, m(-\mu^\star)`, which in paper 000's
    :math:`\gamma = n/d` reads

    .. math::

        \mathcal R^\star(\gamma, \sigma)
        = \tfrac12\Big[\sqrt{(\gamma - 1 + \sigma^2)^2 + 4\sigma^2} - (\gamma - 1 + \sigma^2)\Big].

    It is finite for every :math:`\gamma` (no double descent), tends to :math:`1-\gamma`
    for :math:`\gamma < 1` and to :math:`0` for :math:`\gamma > 1` as :math:`\sigma\to0`,
    and to :math:`\sigma^2/\gamma` as :math:`\gamma\to\infty`.  It is a lower bound on
    the limiting risk of every ridge or (depth-2) weight-decay estimator of this data.

    Parameters
    ----------
    gamma : float or array_like
        :math:`\gamma = n/d > 0`.
    sigma : float or array_like
        Label-noise standard deviation :math:`\ge 0`.
    """
    scalar, (g, s) = _prepare(gamma=gamma, sigma=sigma)
    a = g - 1 + s * s
    root = np.sqrt(a * a + 4 * s * s)
    with np.errstate(divide="ignore", invalid="ignore"):
        pos = 2 * s * s / (root + a)
        out = np.where(a > 0, pos, 0.5 * (root - a))  # inf - inf only where far, replaced below
    far = s > OPTIMAL_RIDGE_SIGMA_ASYMPTOTIC
    if np.any(far):  # sigma -> inf: a^2 overflows; divide through by sigma^2 (tends to 1)
        t = 1 / (s[far] * s[far])
        at = 1 + (g[far] - 1) * t
        out = np.array(out, dtype=float)
        out[far] = 2 / (np.sqrt(at * at + 4 * t) + at)
    return _finish(out, scalar)


_WD_NEGLIGIBLE = 1e-100


def _wd_mu(g, s, wd):
    """Solve mu * ||beta_mu|| = wd by bisection in log(mu) (vectorised, wd > 0 below threshold)."""
    psi = 1 / g
    smax = (1 + np.sqrt(psi)) ** 2
    G = np.sqrt(1 + psi + s * s * psi)             # lim ||X^T y / n||
    lo = np.log(wd) - 50.0
    hi = np.log(wd * smax / (G - wd)) + 1.0
    for _ in range(120):
        mid = 0.5 * (lo + hi)
        mu = np.exp(mid)
        f = mu * np.sqrt(_ridge_parts(g, s, mu)[1]) - wd
        hi = np.where(f > 0, mid, hi)
        lo = np.where(f > 0, lo, mid)
    return np.exp(0.5 * (lo + hi))


def _wd_mu_tails(g, s, wd):
    """:func:`_wd_mu` where the direct forms do not apply (:func:`_ridge_direct`): bisection in
    ``log(mu)`` on ``log(mu) + log||beta_mu|| - log(wd)`` (increasing in ``mu``), the norm
    from :func:`_ridge_tails_parts` as ``hypot`` (no overflow of its square), the bracket
    widened until it holds the root or reaches the ends of the float range."""
    log_wd = np.log(wd)

    def f(log_mu):
        _, norm, sd = _ridge_tails_parts(g, s, np.exp(log_mu))
        with np.errstate(divide="ignore", over="ignore"):
            return log_mu + np.log(np.hypot(np.sqrt(norm), sd)) - log_wd

    lo = np.maximum(log_wd - 50.0, _LOG_MU_RANGE[0])
    hi = np.minimum(log_wd + 50.0, _LOG_MU_RANGE[1])
    for _ in range(16):  # 16 * 100 covers the whole range of log(mu)
        lo = np.where(f(lo) > 0, np.maximum(lo - 100.0, _LOG_MU_RANGE[0]), lo)
        hi = np.where(f(hi) <= 0, np.minimum(hi + 100.0, _LOG_MU_RANGE[1]), hi)
    for _ in range(120):
        mid = 0.5 * (lo + hi)
        pos = f(mid) > 0
        hi = np.where(pos, mid, hi)
        lo = np.where(pos, lo, mid)
    return np.exp(0.5 * (lo + hi))


#: ``log(mu)`` from the smallest subnormal to the largest float (``_wd_mu_tails``).
_LOG_MU_RANGE = (-744.0, 709.0)


@_overflow_to_inf
def weight_decay_ridge_parameter(gamma, sigma, weight_decay):
    r"""Effective ridge parameter of a weight-decay-trained two-layer linear network.

    Training :math:`f(x) = x^\top W_1 w_2` on
    :math:`\frac1{2n}\|y - XW_1w_2\|^2 + \frac{\lambda_{wd}}2(\|W_1\|_F^2 + \|w_2\|^2)`
    (paper 000, App. E, Fig. 5) reaches a balanced minimum, where the penalty equals
    :math:`\lambda_{wd}\|\beta\|` (:math:`\min_{W_1w_2=\beta}\frac12(\|W_1\|^2+\|w_2\|^2)
    = \|\beta\|`).  The stationarity condition
    :math:`\Sigma(\beta - \hat\beta) + \lambda_{wd}\beta/\|\beta\| = 0` makes :math:`\beta`
    the ridge estimator with the data-dependent parameter :math:`\mu = \lambda_{wd}/\|\beta\|`:

    .. math:: \mu\,\|\hat\beta_\mu\| = \lambda_{wd},

    which, with the limit of :math:`\|\hat\beta_\mu\|` (:func:`ridge_norm2`), has a unique
    root for :math:`0 < \lambda_{wd} < \sqrt{1 + \psi + \sigma^2\psi}` (the limit of
    :math:`\|X^\top y/n\|`); above that threshold :math:`\beta = 0` and ``inf`` is returned.
    ``0`` for :math:`\lambda_{wd} = 0`.
    """
    scalar, (g, s, w) = _prepare(gamma=gamma, sigma=sigma, weight_decay=weight_decay)
    direct = _ridge_direct(g, s, 1.0)
    with np.errstate(divide="ignore", over="ignore"):
        # G = sqrt(1 + psi + sigma^2 psi) as hypot where psi or sigma^2 would overflow
        G = np.where(direct, np.sqrt(1 + 1 / g + s * s / g),
                     np.hypot(1.0, np.hypot(1.0, s) / np.sqrt(g)))
    # below _WD_NEGLIGIBLE the root mu ~ weight_decay is beyond what the Marchenko-Pastur
    # forms resolve in float64 (m(-mu) ~ mu^(-1/2) at gamma = 1 overflows its derivative):
    # treated as 0, whose risk it equals to far below float resolution for gamma != 1
    inner = (w > _WD_NEGLIGIBLE) & (w < G)
    out = _piecewise(g.shape, [
        (inner & direct, lambda m: _wd_mu(g[m], s[m], w[m])),
        (inner & ~direct, lambda m: _wd_mu_tails(g[m], s[m], w[m])),
        (w <= _WD_NEGLIGIBLE, lambda m: np.zeros(int(np.count_nonzero(m)))),
        (w >= G, lambda m: np.full(int(np.count_nonzero(m)), np.inf)),
    ])
    return _finish(out, scalar)


@_overflow_to_inf
def weight_decay_scratch_risk(gamma, sigma, weight_decay):
    r"""Asymptotic excess risk of a two-layer linear network trained with weight decay.

    :func:`ridge_risk` at the effective ridge parameter
    :math:`\mu = \lambda_{wd}/\|\beta\|` of :func:`weight_decay_ridge_parameter`; equal to
    :func:`scratch_risk` (Eq. 8) at :math:`\lambda_{wd} = 0` and to ``1`` (the zero
    predictor) above the threshold :math:`\sqrt{1 + \psi + \sigma^2\psi}`.
    Depth 2 only: for depth :math:`L` the penalty at a balanced minimum is
    :math:`\frac{L\lambda_{wd}}2\|\beta\|^{2/L}`, not convex for :math:`L > 2`.
    """
    scalar, (g, s, w) = _prepare(gamma=gamma, sigma=sigma, weight_decay=weight_decay)
    mu = np.asarray(weight_decay_ridge_parameter(g, s, w), dtype=float).reshape(g.shape)
    direct = _ridge_direct(g, s, 1.0)
    out = _piecewise(g.shape, [
        (np.isfinite(mu) & (mu > 0) & direct, lambda m: _ridge_parts(g[m], s[m], mu[m])[0]),
        (np.isfinite(mu) & (mu > 0) & ~direct, lambda m: _ridge_tails(g[m], s[m], mu[m])[0]),
        (mu == 0, lambda m: _scratch(g[m], s[m])),
        (np.isinf(mu), lambda m: np.ones(int(np.count_nonzero(m)))),
    ])
    return _finish(out, scalar)
