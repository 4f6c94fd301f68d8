r"""Fine-tuning with linear teachers (paper 001, Shachaf, Brutzkus and Globerson 2021).

Closed forms of paper 001, all numpy float64 and batched over leading dimensions:

- :func:`finetune_predictor`, :func:`finetune_predictor_risk`: Thm 4.1, the limit of gradient
  descent on a linear model started at :math:`\theta_S` (Eq. 1) and its population risk
  (Eq. 2).
- :func:`g_function`, :func:`eq3_bound`: Thm 4.2, the high-probability bound of Eq. 3.
- :func:`distance_measure`, :func:`bartlett_bound`: the comparison measures of Table 1.
- :func:`deep_finetune_predictor`: Thm 5.2, the limit of gradient flow when fine-tuning a
  depth-:math:`L` linear network from balanced pretrained weights (Eq. 5; ``depth=inf``
  gives Eq. 6); :func:`excess_risk` for any predictor.
- :func:`frozen_predictor`: Thm 5.5, fine-tuning with the first layer frozen.
- :func:`ramp_loss`, :func:`thm61_leading_term`, :func:`thm61_remainder`, :func:`cor62_term`,
  :func:`cor63_leading_term`: Sec. 6, fine-tuning a wide two-layer ReLU network in the NTK
  regime (Eq. 11, Cors. 6.2-6.3), with the infinite-width Gram matrix
  :func:`transferkit.theory.ntk.gram`; those with a design take one ``X`` ``(n, d)`` at a
  time, rows on the unit sphere and any ``n`` (no ``n < d`` needed).
- :func:`~transferkit.stats.r_squared`, :func:`~transferkit.stats.table_r2`: the statistics of Table 1.

Simulations beside them (gradient descent from :mod:`transferkit.models.deep_linear` and
:mod:`transferkit.models.relu`):
:func:`~transferkit.experiments.linear_teachers.eigen_align_sim` (Fig. 1),
:func:`~transferkit.experiments.linear_teachers.depth_alpha_sim` and
:func:`~transferkit.experiments.linear_teachers.scaling_sim`
(Fig. 2), :func:`~transferkit.experiments.linear_teachers.frozen_sim` (Fig. 3),
:func:`~transferkit.experiments.linear_teachers.ntk_finetune_sim` (Sec. 6),
:func:`~transferkit.experiments.mnist_table.mnist_table_sim` (Table 1).  Random numbers
come from :class:`numpy.random.Generator` keyed by ``(seed, purpose, ...)``: same seed,
same numbers.

Conventions: ``X`` has shape ``(..., n, d)`` with ``n < d`` and full row rank
(Assumption 3.1), ``y`` ``(..., n)``, vectors ``(..., d)``; leading dimensions broadcast.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._validate import MAX_ENTRY as _MAX_ENTRY
from .._validate import (
    MAX_INT,
    as_array,
    check_array,
    check_broadcast,
    check_int_or_inf,
    check_magnitude,
    check_positive,
    check_values,
)
from .ntk import check_sphere, deviation_bound

__all__ = ["row_space_solution", "null_space_projection", "finetune_predictor", "excess_risk", "finetune_predictor_risk", "g_function", "eq3_bound", "distance_measure", "bartlett_bound", "deep_finetune_scale", "deep_finetune_predictor", "frozen_predictor", "ramp_loss", "thm61_leading_term", "thm61_remainder", "cor62_term", "cor63_leading_term"]


#: Largest magnitude accepted for the entries of ``X``, ``y`` and the vectors and matrices
#: multiplied with them: below it Gram matrices, inner products and their sums stay far from
#: the float range (1e308), so no overflow turns into ``inf - inf`` or ``inf * 0`` (the
#: bound of every validator of the package).
MAX_ENTRY = _MAX_ENTRY


def _check_xy(X, y):
    X = check_magnitude("X", check_array("X", X, 2), MAX_ENTRY)
    y = check_magnitude("y", check_array("y", y, 1), MAX_ENTRY)
    if X.shape[-2] < 1 or X.shape[-1] < 1:
        raise ValueError(f"X must have at least one row and one column (got shape {X.shape})")
    if y.shape[-1] != X.shape[-2]:
        raise ValueError(f"y must have one entry per row of X: X {X.shape}, y {y.shape}")
    check_broadcast(X=X[..., 0], y=y)
    return X, y



def _vectors(a_name, a, b_name, b):
    """Two ``(..., d)`` vectors with the same ``d`` and broadcasting batch dimensions."""
    a, b = check_array(a_name, a, 1), check_array(b_name, b, 1)
    if a.shape[-1] == 0:
        raise ValueError(f"{a_name} must have at least one entry (got shape {a.shape})")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"{b_name} must have the dimension of {a_name}: {a_name} {a.shape}, "
                         f"{b_name} {b.shape}")
    check_broadcast(**{a_name: a, b_name: b})
    return a, b


def _square(name, M, d):
    """``M`` as a finite ``(..., d, d)`` array (entries within ``MAX_ENTRY``)."""
    M = check_magnitude(name, check_array(name, M, 2), MAX_ENTRY)
    if M.shape[-2:] != (d, d):
        raise ValueError(f"{name} must have shape (..., {d}, {d}) (got {M.shape})")
    return M


def _gram_solve(X, r):
    r"""``X^T (X X^T)^{-1} r`` (batched), the minimum-norm solution of ``X w = r``.

    ``ValueError`` when ``X X^T`` is numerically singular (Assumption 3.1 fails).
    """
    G = X @ np.swapaxes(X, -1, -2)
    n = G.shape[-1]
    singular = ValueError("X must have linearly independent rows (Assumption 3.1): X X^T is "
                          "numerically singular; use n < d samples in general position")
    try:
        ev = np.linalg.eigvalsh(G)
        if (ev[..., 0] <= 100 * np.finfo(float).eps * n * ev[..., -1]).any() or (ev[..., -1] <= 0).any():
            raise singular
        z = np.linalg.solve(G, r[..., None])
    except np.linalg.LinAlgError:
        raise singular from None
    return (np.swapaxes(X, -1, -2) @ z)[..., 0]


def _null_space(X, v):
    """``P_perp v`` on validated input (entries within ``MAX_ENTRY``)."""
    Xv = (X @ v[..., None])[..., 0]
    return v - _gram_solve(X, Xv)


#: Norms of vectors whose largest entry lies outside this range are taken after dividing by
#: that entry (``_norm``): their squares would overflow or underflow.
_NORM_RANGE = (1e-150, 1e150)


def _norm(v):
    """Euclidean norm over the last axis, ``np.linalg.norm`` bit for bit inside
    ``_NORM_RANGE`` and rescaled by the largest entry outside it."""
    top = np.max(np.abs(v), axis=-1) if v.shape[-1] else np.zeros(v.shape[:-1])
    ok = ((top > _NORM_RANGE[0]) & (top < _NORM_RANGE[1])) | (top == 0)
    if np.all(ok):
        return np.linalg.norm(v, axis=-1)
    safe = np.where(ok, 1.0, top)
    with np.errstate(over="ignore", under="ignore"):
        return np.where(ok, np.linalg.norm(v, axis=-1),
                        safe * np.linalg.norm(v / safe[..., None], axis=-1))


def row_space_solution(X, y):
    r"""Minimum-norm interpolant :math:`X^+ y = X^\top (XX^\top)^{-1} y`.

    Noise-free, :math:`X^+ y = P_\parallel \theta_T` (paper 001, Sec. 3).
    """
    X, y = _check_xy(X, y)
    return _gram_solve(X, y)


def null_space_projection(X, v):
    r""":math:`P_\perp v = v - X^\top(XX^\top)^{-1}Xv` (paper 001, Sec. 3)."""
    X = check_magnitude("X", check_array("X", X, 2), MAX_ENTRY)
    v = check_magnitude("v", check_array("v", v, 1), MAX_ENTRY)
    if X.shape[-2] < 1 or X.shape[-1] < 1:
        raise ValueError(f"X must have at least one row and one column (got shape {X.shape})")
    if v.shape[-1] != X.shape[-1]:
        raise ValueError(f"v must have the input dimension of X: X {X.shape}, v {v.shape}")
    check_broadcast(X=X[..., 0, :], v=v)
    return _null_space(X, v)


def finetune_predictor(X, y, theta_s):
    r"""Thm 4.1 (paper 001, Eq. 1): gradient descent on the square loss from :math:`\theta_S`.

    .. math:: \gamma = P_\perp \theta_S + X^+ y
              = \theta_S + X^\top (XX^\top)^{-1}(y - X\theta_S),

    which is :math:`P_\perp\theta_S + P_\parallel\theta_T` for noise-free labels.  It is the
    point of the affine set :math:`\{w: Xw = y\}` closest to the initialisation.
    """
    X, y = _check_xy(X, y)
    theta_s = check_magnitude("theta_s", check_array("theta_s", theta_s, 1), MAX_ENTRY)
    if theta_s.shape[-1] != X.shape[-1]:
        raise ValueError(f"theta_s must have the input dimension of X: X {X.shape}, "
                         f"theta_s {theta_s.shape}")
    check_broadcast(X=X[..., 0, :], theta_s=theta_s)
    r = y - (X @ theta_s[..., None])[..., 0]
    return theta_s + _gram_solve(X, r)


def excess_risk(beta, theta_t, cov_sqrt=None):
    r""":math:`R(\beta) = \|\Sigma^{1/2}(\theta_T - \beta)\|^2` (paper 001, Sec. 3).

    ``cov_sqrt`` is :math:`\Sigma^{1/2}` (``(..., d, d)``) or ``None`` for :math:`\Sigma = I`.
    """
    beta, theta_t = _vectors("beta", beta, "theta_t", theta_t)
    diff = theta_t - beta
    if cov_sqrt is not None:
        cov_sqrt = _square("cov_sqrt", cov_sqrt, diff.shape[-1])
        check_magnitude("beta", beta, MAX_ENTRY)  # Sigma^(1/2) (theta_t - beta) stays finite
        check_magnitude("theta_t", theta_t, MAX_ENTRY)
        check_broadcast(cov_sqrt=cov_sqrt[..., 0], diff=diff)
        diff = (cov_sqrt @ diff[..., None])[..., 0]
    return (diff ** 2).sum(-1)


def finetune_predictor_risk(X, theta_s, theta_t, cov_sqrt=None):
    r"""Thm 4.1 (paper 001, Eq. 2): :math:`R(\gamma)=\|\Sigma^{1/2}P_\perp(\theta_T-\theta_S)\|^2`.

    Exact given ``X`` (noise-free labels :math:`y = X\theta_T`).
    """
    theta_s, theta_t = _vectors("theta_s", theta_s, "theta_t", theta_t)
    check_magnitude("theta_s", theta_s, MAX_ENTRY)
    check_magnitude("theta_t", theta_t, MAX_ENTRY)
    if cov_sqrt is not None:
        cov_sqrt = _square("cov_sqrt", cov_sqrt, theta_t.shape[-1])
    delta = theta_t - theta_s
    if delta.size and np.max(np.abs(delta)) > MAX_ENTRY:  # P_perp is linear: halve, project, double
        p = 2 * null_space_projection(X, delta / 2)
    else:
        p = null_space_projection(X, delta)
    if cov_sqrt is not None:
        check_broadcast(cov_sqrt=cov_sqrt[..., 0], theta_t=p)
        p = (cov_sqrt @ p[..., None])[..., 0]
    return (p ** 2).sum(-1)


def check_eigenvalues(lam):
    """``lam`` as finite eigenvalues ``(..., d)``, ``d >= 1``, >= 0, sorted decreasingly."""
    lam = check_array("lam", lam, 1)
    if lam.size == 0:
        raise ValueError(f"lam must hold at least one eigenvalue (got shape {lam.shape})")
    if (lam < 0).any():
        raise ValueError("lam (the eigenvalues of Sigma) must be >= 0")
    if (np.diff(lam, axis=-1) > 1e-12 * np.abs(lam).max(-1, keepdims=True)).any():
        raise ValueError("lam must be sorted in decreasing order (lambda_1 >= ... >= lambda_d)")
    if not (lam[..., 0] > 0).all():
        raise ValueError("lam must have a positive largest eigenvalue")
    return lam


def g_function(lam, delta, n, c=3.0):
    r""":math:`g(\lambda,\delta,n)` of Thm 4.2 (paper 001, below Eq. 3).

    .. math:: g = c\,\lambda_1 \max\Big\{\sqrt{\tfrac{r_0}{n}}, \tfrac{r_0}{n},
              \sqrt{\tfrac{\delta}{n}}, \tfrac{\delta}{n}\Big\}, \qquad
              r_0 = \frac{\sum_i\lambda_i}{\lambda_1},

    the Koltchinskii-Lounici bound on :math:`\|\tilde\Sigma - \Sigma\|` that holds with
    probability :math:`1-e^{-\delta}`.  The paper leaves the absolute constant ``c``
    unspecified.  We use ``c = 3``: for Gaussian data the deviation concentrates at
    :math:`\|\tilde\Sigma-\Sigma\| \approx \lambda_1(2\sqrt{r_0/n} + r_0/n)` (exact as
    :math:`n, d\to\infty` for isotropic :math:`\Sigma`, Bai-Yin), and
    :math:`2\sqrt x + x \le 3\max(\sqrt x, x)` for all :math:`x\ge0`, so ``c = 3`` is the
    smallest constant for which ``g`` covers this leading term at every ``n`` (equality at
    :math:`r_0 = n`).  ``c = 1`` is violated in most draws (``notebooks/linear_teachers.py``
    measures the deviation).  The R^2 of Table 1 depends on ``c`` only through the relative
    weight of the two terms of Eq. 3.

    ``lam``: eigenvalues ``(..., d)`` sorted decreasingly; ``delta >= 1``; ``n >= 1``
    (broadcasts).
    """
    lam = check_eigenvalues(lam)
    n = check_array("n", n, 0)
    delta = check_array("delta", delta, 0)
    if not (n >= 1).all():
        raise ValueError(f"n must be >= 1 (got {n!r})")
    if not (delta >= 1).all():
        raise ValueError(f"delta must be >= 1 (Thm 4.2; got {delta!r})")
    check_positive("c", c)
    check_broadcast(lam=lam[..., 0], n=n, delta=delta)
    l1 = lam[..., 0]
    with np.errstate(over="ignore"):  # a bound beyond the float range is inf
        r0 = lam.sum(-1) / l1
        terms = np.stack(np.broadcast_arrays(np.sqrt(r0 / n), r0 / n, np.sqrt(delta / n), delta / n))
        return c * l1 * terms.max(0)


def eq3_bound(delta_vec, V, lam, m, n, delta=1.0, c=3.0):
    r"""Thm 4.2 (paper 001, Eq. 3): with :math:`\Delta = \theta_T - \theta_S` and :math:`g` of
    :func:`g_function`,

    .. math:: R(\gamma) \le 2g^3\frac{\|P_{\le m}\Delta\|^2}{\lambda_m^2}
              + 2g\,\|P_{>m}\Delta\|^2 .

    ``delta_vec`` ``(..., d)``; ``V`` ``(..., d, d)`` eigenvectors of :math:`\Sigma` (columns,
    in the order of ``lam``); ``lam`` ``(..., d)`` decreasing; ``m`` in ``1..d`` with
    :math:`\lambda_m > 0` (``ValueError`` otherwise).
    """
    lam = check_eigenvalues(lam)
    d = lam.shape[-1]
    if not (isinstance(m, numbers.Integral) and not isinstance(m, bool) and 1 <= m <= d):
        raise ValueError(f"m must be an integer in 1..{d} (got {m!r})")
    if not (lam[..., m - 1] > 0).all():
        raise ValueError(f"m must satisfy lambda_m > 0 (lambda_{m} = 0 here)")
    delta_vec = check_array("delta_vec", delta_vec, 1)
    if delta_vec.shape[-1] != d:
        raise ValueError(f"delta_vec must have the dimension of lam: lam {lam.shape}, "
                         f"delta_vec {delta_vec.shape}")
    check_magnitude("delta_vec", delta_vec, MAX_ENTRY)
    V = _square("V", V, d)
    check_broadcast(V=V[..., 0], delta_vec=delta_vec, lam=lam)
    coords = (np.swapaxes(V, -1, -2) @ delta_vec[..., None])[..., 0]
    top = (coords[..., :m] ** 2).sum(-1)
    bottom = (coords[..., m:] ** 2).sum(-1)
    g = g_function(lam, delta, n, c)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        out = 2 * g ** 3 * top / lam[..., m - 1] ** 2 + 2 * g * bottom
    if np.all(np.isfinite(out)):
        return out
    # beyond the float range (g^3, the squared norms or 1/lambda_m^2 overflow): the same bound
    # from the norms, 2 g (g |P<=m D| / lambda_m)^2 + 2 g |P>m D|^2, inf where it overflows
    a, b = _norm(coords[..., :m]), _norm(coords[..., m:])
    with np.errstate(over="ignore", invalid="ignore"):
        t1 = np.where(a == 0, 0.0, 2 * g * (g * a / lam[..., m - 1]) ** 2)
        t2 = np.where(b == 0, 0.0, 2 * g * b * b)
    return np.where(np.isfinite(out), out, t1 + t2)[()]


def distance_measure(theta_s, theta_t):
    r""":math:`\|\theta_T - \theta_S\|^2`, the first comparison measure of Table 1."""
    theta_s, theta_t = _vectors("theta_s", theta_s, "theta_t", theta_t)
    return ((theta_t - theta_s) ** 2).sum(-1)


def bartlett_bound(delta_vec, lam, n, delta=1.0, c=3.0):
    r"""Bound of Bartlett et al. (2020, Thm 4) adapted to fine-tuning (paper 001, footnote 1).

    Bartlett et al. bound the excess risk of the minimum-norm interpolant by a bias term
    :math:`c\|\theta^*\|^2\|\Sigma\|\max\{\sqrt{r_0/n}, r_0/n, \sqrt{\log(1/\delta')/n}\}`
    plus a noise term.  Footnote 1 replaces :math:`\theta^*` by
    :math:`\theta_T-\theta_S`; the labels of paper 001 are noise free, so the noise term is
    zero.  With :math:`\log(1/\delta') = \delta` this is

    .. math:: \|\theta_T - \theta_S\|^2\, g(\lambda, \delta, n),

    the bias term written with :func:`g_function` (the extra :math:`\delta/n` of ``g`` only
    matters for :math:`\delta > n`).
    """
    delta_vec = check_magnitude("delta_vec", check_array("delta_vec", delta_vec, 1), MAX_ENTRY)
    dist = (delta_vec ** 2).sum(-1)
    g = g_function(lam, delta, n, c)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(dist == 0, 0.0, dist * g)[()]  # 0, not 0 * inf, for theta_s = theta_t


def _check_depth(depth):
    """``depth`` as an int in [1, 2**53] or ``inf``, else ``ValueError``."""
    depth = check_int_or_inf("depth", depth, 1)
    if depth != np.inf and depth > MAX_INT:  # (L - 1) / L would overflow a float
        raise ValueError(f"depth must be an integer in [1, 2**53] or inf (got {depth!r})")
    return depth


def deep_finetune_scale(perp_norm, par_norm, src_norm, depth, rtol=1e-14):
    r"""The self-consistent rescaling :math:`k` of Thm 5.2 (paper 001, Eq. 5).

    With :math:`a = \|P_\perp\theta_S\|`, :math:`b = \|X^+y\|`, :math:`s = \|\theta_S\|` and
    :math:`p = (L-1)/L`, the limit :math:`\beta = k\,P_\perp\theta_S + X^+y` has
    :math:`k = (\|\beta\|/s)^p` and :math:`\|\beta\|^2 = k^2a^2 + b^2`, so
    :math:`u = \|\beta\|/s` solves

    .. math:: h(u) = u^{2/L} - \rho^2 - \kappa^2 u^{-2p} = 0,
              \qquad \rho = a/s \le 1,\ \kappa = b/s .

    ``h`` is strictly increasing on :math:`u > 0` (from :math:`-\infty` when
    :math:`\kappa > 0`, from :math:`-\rho^2` when :math:`\kappa = 0`) to :math:`+\infty`, so
    the root is unique; it is found by bisection in :math:`\log u` on the bracket
    :math:`[\max(\kappa, \rho^L),\ \max(1, \kappa)\,(1+\kappa^2)^{L/2}]` (vectorised, to
    relative precision ``rtol``).  ``depth = 1`` gives ``k = 1`` (Thm 4.1); ``depth = inf``
    gives :math:`k = b / \|P_\parallel\theta_S\|` (Eq. 6), ``inf`` where
    :math:`P_\parallel\theta_S = 0` and :math:`b > 0`.  Returns ``k`` (broadcast shape).
    """
    depth = _check_depth(depth)
    named = {"perp_norm": perp_norm, "par_norm": par_norm, "src_norm": src_norm}
    named = {k: as_array(k, v) for k, v in named.items()}
    check_broadcast(**named)
    a, b, s = np.broadcast_arrays(*named.values())
    if not (np.isfinite(s).all() and (s > 0).all()):
        raise ValueError("src_norm = ||theta_s|| must be finite and > 0 (a zero source network "
                         "is a saddle point that gradient flow never leaves)")
    if not (np.isfinite(a).all() and np.isfinite(b).all() and (a >= 0).all() and (b >= 0).all()):
        raise ValueError("perp_norm and par_norm must be finite and >= 0")
    with np.errstate(over="ignore"):  # b / s beyond the float range: handled below
        rho = np.minimum(a / s, 1.0)
        kap = b / s
    if depth == 1:
        return np.ones_like(rho)
    if depth == np.inf:
        par_src = np.sqrt(np.clip(1 - rho ** 2, 0, None))  # ||P_par theta_s|| / s
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.where(par_src > 0, kap / np.where(par_src > 0, par_src, 1), np.inf)
        return np.where((par_src == 0) & (kap == 0), 1.0, k)
    L = depth
    p = (L - 1) / L

    with np.errstate(divide="ignore", over="ignore"):
        log_kap2 = np.where(kap > 0, 2 * np.log(np.where(kap > 0, kap, 1.0)), -np.inf)
        # kap = b / s beyond the float range (b large, s small): its logarithm, exactly
        big = kap > _KAP_LARGE
        log_kap = np.where(np.isfinite(kap), 0.5 * log_kap2, np.log(b) - np.log(s))
        log_kap2 = np.where(big, 2 * log_kap, log_kap2)

    def h_negative(logu):
        # kap^2 u^(-2p) as one exponential: 0 when kap = 0, never inf * 0
        with np.errstate(over="ignore", invalid="ignore"):
            hv = np.exp(2 * logu / L) - rho ** 2 - np.exp(log_kap2 - 2 * p * logu)
        if np.isnan(hv).any():  # both terms overflow (inf - inf): compare their logarithms
            with np.errstate(divide="ignore"):
                alt = 2 * logu / L < np.logaddexp(2 * np.log(rho), log_kap2 - 2 * p * logu)
            return np.where(np.isnan(hv), alt, hv < 0)
        return hv < 0

    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        lo = np.where(big, log_kap, np.log(np.maximum(np.maximum(kap, rho ** L), 1e-300)))
        # log((1 + kap^2)^(L/2)) = L log kap + (L/2) log1p(kap^-2) where kap^2 overflows
        hi = np.where(big, (1 + L) * log_kap + 0.5 * L * np.log1p(1 / kap ** 2),
                      np.log(np.maximum(1.0, kap)) + 0.5 * L * np.log1p(kap ** 2)) + 1e-12
    # h(hi) >= 0: with u_hi = max(1, kap) (1 + kap^2)^(L/2), u^(2/L) >= 1 + kap^2 >= rho^2 + kap^2 u^(-2p)
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        neg = h_negative(mid)
        new_lo, new_hi = np.where(neg, mid, lo), np.where(neg, hi, mid)
        if np.array_equal(new_lo, lo) and np.array_equal(new_hi, hi):
            break  # adjacent floats (a large log u): every further step is the same
        lo, hi = new_lo, new_hi
        if (hi - lo <= rtol).all():
            break
    log_u = 0.5 * (lo + hi)
    with np.errstate(over="ignore"):
        u = np.exp(log_u)
        # u beyond the float range with k = u^p inside it: k as one exponential
        return np.where(np.isfinite(u), u ** p, np.exp(p * log_u))


#: Above this ``kap = ||X^+ y|| / ||theta_s||`` the bracket of ``deep_finetune_scale`` is
#: taken in logarithms (``kap ** 2`` overflows).
_KAP_LARGE = 1e150


def deep_finetune_predictor(X, y, theta_s, depth):
    r"""Thm 5.2 (paper 001, Eq. 5): fine-tuning a depth-``depth`` linear network by gradient
    flow from the balanced pretrained solution :math:`\beta(0) = \theta_S`,

    .. math:: \beta = \Big(\frac{\|\beta\|}{\|\theta_S\|}\Big)^{\frac{L-1}{L}} P_\perp\theta_S
              + X^+ y ,

    (``X^+ y = P_\parallel\theta_T`` for noise-free labels): the row-space component
    interpolates, and the null-space component of :math:`\theta_S`, which the first layer
    never updates, is rescaled by the growth of the deeper layers.  The scalar
    self-consistency is solved by :func:`deep_finetune_scale`.  ``depth = 1`` is
    :func:`finetune_predictor` (Thm 4.1); ``depth = np.inf`` is Eq. 6,
    :math:`\frac{\|P_\parallel\theta_T\|}{\|P_\parallel\theta_S\|}P_\perp\theta_S + X^+y`.

    ``X`` ``(..., n, d)``, ``y`` ``(..., n)``, ``theta_s`` ``(..., d)`` nonzero -> ``(..., d)``.
    """
    X, y = _check_xy(X, y)
    theta_s = check_magnitude("theta_s", check_array("theta_s", theta_s, 1), MAX_ENTRY)
    depth = _check_depth(depth)
    if theta_s.shape[-1] != X.shape[-1]:
        raise ValueError(f"theta_s must have the input dimension of X: X {X.shape}, theta_s {theta_s.shape}")
    mn = _gram_solve(X, y)
    perp = null_space_projection(X, theta_s)
    s = _norm(theta_s)
    if not (s > 0).all():
        raise ValueError("theta_s must be nonzero (a zero source network is a saddle point "
                         "that gradient flow never leaves)")
    k = deep_finetune_scale(_norm(perp), _norm(mn), s, depth)
    with np.errstate(invalid="ignore", over="ignore"):
        out = k[..., None] * perp + mn
    if np.isnan(out).any():  # k = inf (Eq. 6 with P_par theta_s = 0): inf * 0 where perp is 0
        out = np.where(perp == 0, mn, out)
    return out


def frozen_predictor(X, y, theta_s):
    r"""Thm 5.5 (paper 001): fine-tuning with the first layer(s) frozen gives
    :math:`\beta = c\,\theta_S`.

    With balanced pretraining the frozen first layer is rank one, so the network can only
    rescale :math:`\theta_S`; training the remaining layers to the minimum of the training
    loss gives the least-squares scale :math:`c = \langle X\theta_S, y\rangle / \|X\theta_S\|^2`.
    """
    X, y = _check_xy(X, y)
    theta_s = check_magnitude("theta_s", check_array("theta_s", theta_s, 1), MAX_ENTRY)
    if theta_s.shape[-1] != X.shape[-1]:
        raise ValueError(f"theta_s must have the input dimension of X: X {X.shape}, theta_s {theta_s.shape}")
    # c theta_s does not change when theta_s is scaled: scaled by the power of two that brings
    # its largest entry into [0.5, 1) (exact, the same bits where nothing underflows), a
    # subnormal theta_s (1e-310) no longer gives c = inf
    _, e = np.frexp(np.max(np.abs(theta_s), axis=-1, keepdims=True))
    theta_s = np.ldexp(theta_s, -e)
    z = (X @ theta_s[..., None])[..., 0]
    top = np.max(np.abs(z), axis=-1)
    if not (top > 0).all():
        raise ValueError("X theta_s must be nonzero (the frozen features carry no signal)")
    if np.all((top > _NORM_RANGE[0]) & (top < _NORM_RANGE[1])):
        zz = (z ** 2).sum(-1)
        return ((z * y).sum(-1) / zz)[..., None] * theta_s
    # |X theta_s| beyond 1e150 (or below 1e-150, X tiny): its square leaves the float range;
    # the same least-squares scale from z / max|z|
    zs = z / top[..., None]
    with np.errstate(over="ignore", invalid="ignore"):
        out = ((zs * y).sum(-1) / (zs ** 2).sum(-1) / top)[..., None] * theta_s
    return np.where(theta_s == 0, 0.0, out)


# ---------------------------------------------------------------------------
# Sec. 6: fine-tuning a wide two-layer ReLU network in the NTK regime
# ---------------------------------------------------------------------------

#: The constant 3 of Cor. 6.2 (paper 001), which bounds
#: :math:`\sqrt{\tilde y^\top H^{\infty\,-1}\tilde y}` by :math:`3\|\theta_T-\theta_S\|` under
#: Assumption 3.2; Cor. 6.3 doubles it (the factor 2 of Eq. 11).
COR62_CONSTANT = 3.0


def ramp_loss(f, y):
    r"""The ramp loss :math:`\ell(f, y) = \min(|f - y|, 1)`, elementwise (paper 001, Thm 6.1).

    Thm 6.1 bounds the population risk :math:`R = \mathbb E_x\,\ell(f(x), y(x))` for any loss
    :math:`\ell:\mathbb R\times\mathbb R\to[0, 1]` that is 1-Lipschitz in its first argument
    with :math:`\ell(y, y) = 0`; this is the simplest such loss (the absolute error, capped at 1).

    ``f`` and ``y`` are finite arrays that broadcast together; the result has their broadcast
    shape, with entries in ``[0, 1]``.
    """
    f = check_array("f", f, 0)
    y = check_array("y", y, 0)
    check_broadcast(f=f, y=y)
    with np.errstate(over="ignore"):        # |f - y| beyond the float range is inf: capped at 1
        return np.minimum(np.abs(f - y), 1.0)


def _labels(name, v, n):
    """``v`` as a float vector of length ``n`` (the labels of the ``n`` rows of ``X``)."""
    v = check_array(name, v, 1)
    if v.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), one entry per row of X "
                         f"(got shape {v.shape})")
    return v


def thm61_leading_term(X, y, f0):
    r"""The leading term of Thm 6.1 (paper 001, Eq. 11),

    .. math:: 2\sqrt{\frac{\tilde y^\top (H^\infty)^{-1}\tilde y}{n}}, \qquad
              \tilde y = y - f(X, \Theta(0)),

    the bound on the population risk of the two-layer ReLU network fine-tuned by gradient
    descent from the pretrained weights :math:`\Theta(0)`, up to the remainder
    :math:`O\big(\sqrt{\log(n/(\lambda_0\delta))/n}\big)` (:func:`thm61_remainder`).
    :math:`H^\infty` is the infinite-width Gram matrix of the target inputs
    (:func:`transferkit.theory.ntk.gram`); ``f0`` holds the pretrained network's outputs on
    them, ``f(X, Theta(0))``.

    ``X`` ``(n, d)`` with rows on the unit sphere (Sec. 6 assumes :math:`\|x\| = 1`), ``y`` and
    ``f0`` ``(n,)``.  A value beyond the float range is ``inf``.
    """
    A = check_sphere("X", X)
    if A.ndim != 2:
        raise ValueError(f"X must be a 2-d array of rows (got shape {A.shape})")
    n = A.shape[0]
    q = deviation_bound(A, _labels("y", y, n), _labels("f0", f0, n))
    return float(2.0 * q / math.sqrt(n))


def thm61_remainder(n, lam0, delta):
    r"""The argument of the remainder of Thm 6.1 (paper 001, Eq. 11),
    :math:`\sqrt{\log\big(n/(\lambda_0\delta)\big)/n}`, elementwise.

    Eq. 11 adds :math:`O(\cdot)` of it to the leading term (:func:`thm61_leading_term`) with
    a constant the paper does not give; this is the term with constant 1, for scale only.
    ``n`` integers >= 1 (target samples); ``lam0`` the smallest eigenvalue of :math:`H^\infty`,
    in ``(0, 1/2]`` (the diagonal of :math:`H^\infty` is :math:`1/2` for unit inputs, so
    :math:`\lambda_0 \le 1/2` and the logarithm is positive); ``delta`` the failure
    probability in ``(0, 1)``.  They broadcast together.
    """
    n = check_values("n", n, 1, MAX_INT, integer=True)
    lam0 = check_values("lam0", lam0, 0.0, 0.5, lo_open=True)
    delta = check_values("delta", delta, 0.0, 1.0, lo_open=True)
    if np.any(delta == 1.0):
        raise ValueError("delta must be in (0, 1) (got 1.0): a failure probability below 1")
    check_broadcast(n=n, lam0=lam0, delta=delta)
    # log(n / (lam0 delta)) as a sum of logarithms: no overflow for tiny lam0 * delta
    return np.sqrt((np.log(n) - np.log(lam0) - np.log(delta)) / n)[()]


def cor62_term(X, theta_s, theta_t):
    r"""The left side of Cor. 6.2 (paper 001) under Assumption 3.2,

    .. math:: \sqrt{\tilde y^\top (H^\infty)^{-1}\tilde y}, \qquad
              \tilde y = X\theta_T - X\theta_S = X(\theta_T - \theta_S),

    i.e. Eq. 11's quadratic form when the pretrained network is exactly the source teacher,
    :math:`f(x, \Theta(0)) = x^\top\theta_S` ("perfect pretraining").  Cor. 6.2 bounds it by
    :math:`3\|\theta_T-\theta_S\|` (:data:`COR62_CONSTANT`).

    The sharper constant 2 holds for every ``X`` on the sphere:
    :math:`H^\infty = \tfrac14 XX^\top + \tfrac1{2\pi}(XX^\top)\circ\arcsin(XX^\top)`
    (:math:`\pi - \arccos t = \pi/2 + \arcsin t`), and the second term is positive
    semidefinite (the Taylor coefficients of :math:`\arcsin` are >= 0; Schur product
    theorem), so :math:`H^\infty \succeq \tfrac14 XX^\top` and
    :math:`\tilde y^\top (H^\infty)^{-1}\tilde y \le 4\|\theta_T-\theta_S\|^2`.  It is
    approached as the inputs fill the sphere: linear functions enter :math:`H^\infty` only
    through :math:`\tfrac14 XX^\top` (the other term is even in :math:`x^\top x'`), so the
    kernel norm of :math:`x\mapsto x^\top(\theta_T-\theta_S)` is
    :math:`2\|\theta_T-\theta_S\|`.

    ``X`` ``(n, d)`` rows on the unit sphere; ``theta_s``, ``theta_t`` ``(d,)``, entries of
    magnitude <= 1e100.
    """
    A = check_sphere("X", X)
    if A.ndim != 2:
        raise ValueError(f"X must be a 2-d array of rows (got shape {A.shape})")
    d = A.shape[1]
    ts = check_magnitude("theta_s", check_array("theta_s", theta_s, 1), MAX_ENTRY)
    tt = check_magnitude("theta_t", check_array("theta_t", theta_t, 1), MAX_ENTRY)
    for name, v in (("theta_s", ts), ("theta_t", tt)):
        if v.shape != (d,):
            raise ValueError(f"{name} must have shape ({d},), the input dimension of X "
                             f"(got shape {v.shape})")
    return deviation_bound(A, A @ (tt - ts))


def cor63_leading_term(distance, n):
    r"""The leading term of Cor. 6.3 (paper 001), :math:`6\|\theta_T-\theta_S\|/\sqrt n`,
    elementwise.

    Eq. 11's :math:`2\sqrt{\tilde y^\top(H^\infty)^{-1}\tilde y/n}` with Cor. 6.2's
    :math:`\sqrt{\tilde y^\top(H^\infty)^{-1}\tilde y} \le 3\|\theta_T-\theta_S\|`; the bound
    on the risk adds :math:`O\big(\sqrt{\log(n/(\lambda_0\delta))/n}\big)`
    (:func:`thm61_remainder`).  ``distance`` :math:`\|\theta_T - \theta_S\| \ge 0`, ``n``
    integers >= 1; they broadcast together.
    """
    dist = check_values("distance", distance, 0.0)
    n = check_values("n", n, 1, MAX_INT, integer=True)
    check_broadcast(distance=dist, n=n)
    with np.errstate(over="ignore"):        # a distance near the float range: inf
        return (2 * COR62_CONSTANT * dist / np.sqrt(n))[()]
