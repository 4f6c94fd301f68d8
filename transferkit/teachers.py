r"""Fine-tuning with linear teachers (paper 001, Shachaf, Brutzkus and Globerson 2021).

Closed forms of paper 001, all numpy float64 and batched over leading dimensions:

- :func:`finetune_predictor`, :func:`finetune_risk`: Thm 4.1, the limit of gradient
  descent on a linear model started at :math:`\theta_S` (Eq. 1) and its population risk
  (Eq. 2).
- :func:`g_function`, :func:`eq3_bound`: Thm 4.2, the high-probability bound of Eq. 3.
- :func:`distance_measure`, :func:`bartlett_bound`: the comparison measures of Table 1.
- :func:`deep_finetune_predictor`: Thm 5.2, the limit of gradient flow when fine-tuning a
  depth-:math:`L` linear network from balanced pretrained weights (Eq. 5; ``depth=inf``
  gives Eq. 6); :func:`population_risk` for any predictor.
- :func:`frozen_predictor`: Thm 5.5, fine-tuning with the first layer frozen.
- :func:`r_squared`, :func:`table_r2`: the statistics of Table 1.

Simulations beside them (gradient descent from :mod:`transferkit.trainers`):
:func:`eigen_align_sim` (Fig. 1), :func:`depth_alpha_sim` and :func:`scaling_sim`
(Fig. 2), :func:`frozen_sim` (Fig. 3), :func:`mnist_table_sim` (Table 1).  Random numbers
come from :class:`numpy.random.Generator` keyed by ``(seed, purpose, ...)``: same seed,
same numbers.

Conventions: ``X`` has shape ``(..., n, d)`` with ``n < d`` and full row rank
(Assumption 3.1), ``y`` ``(..., n)``, vectors ``(..., d)``; leading dimensions broadcast.
"""
from __future__ import annotations

import numbers

import numpy as np

from ._validate import check_int_or_inf
from .data import binary_task

__all__ = [
    "row_space_solution",
    "null_space_projection",
    "finetune_predictor",
    "population_risk",
    "finetune_risk",
    "g_function",
    "eq3_bound",
    "distance_measure",
    "bartlett_bound",
    "deep_finetune_scale",
    "deep_finetune_predictor",
    "frozen_predictor",
    "r_squared",
    "table_r2",
    "spiked_spectrum",
    "eigen_align_sim",
    "balanced_weights",
    "pretrain_gd",
    "deep_finetune_sim",
    "depth_alpha_sim",
    "scaling_sim",
    "frozen_first_layer_gd",
    "frozen_sim",
    "digit_moments",
    "task_teacher",
    "task_covariance",
    "draw_task_pairs",
    "mnist_measures",
    "finetune_test_error",
    "mnist_table_sim",
]


def _arr(name, x, min_ndim):
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s) (got shape {x.shape})")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return x


def _check_xy(X, y):
    X = _arr("X", X, 2)
    y = _arr("y", y, 1)
    if y.shape[-1] != X.shape[-2]:
        raise ValueError(f"y must have one entry per row of X: X {X.shape}, y {y.shape}")
    return X, y


def _gram_solve(X, r):
    r"""``X^T (X X^T)^{-1} r`` (batched), the minimum-norm solution of ``X w = r``.

    ``ValueError`` when ``X X^T`` is numerically singular (Assumption 3.1 fails).
    """
    G = X @ np.swapaxes(X, -1, -2)
    n = G.shape[-1]
    ev = np.linalg.eigvalsh(G)
    if (ev[..., 0] <= 100 * np.finfo(float).eps * n * ev[..., -1]).any() or (ev[..., -1] <= 0).any():
        raise ValueError("X must have linearly independent rows (Assumption 3.1): X X^T is "
                         "numerically singular; use n < d samples in general position")
    z = np.linalg.solve(G, r[..., None])
    return (np.swapaxes(X, -1, -2) @ z)[..., 0]


def row_space_solution(X, y):
    r"""Minimum-norm interpolant :math:`X^+ y = X^\top (XX^\top)^{-1} y`.

    Noise-free, :math:`X^+ y = P_\parallel \theta_T` (paper 001, Sec. 3).
    """
    X, y = _check_xy(X, y)
    return _gram_solve(X, y)


def null_space_projection(X, v):
    r""":math:`P_\perp v = v - X^\top(XX^\top)^{-1}Xv` (paper 001, Sec. 3)."""
    X = _arr("X", X, 2)
    v = _arr("v", v, 1)
    if v.shape[-1] != X.shape[-1]:
        raise ValueError(f"v must have the input dimension of X: X {X.shape}, v {v.shape}")
    Xv = (X @ v[..., None])[..., 0]
    return v - _gram_solve(X, Xv)


def finetune_predictor(X, y, theta_s):
    r"""Thm 4.1 (paper 001, Eq. 1): gradient descent on the square loss from :math:`\theta_S`.

    .. math:: \gamma = P_\perp \theta_S + X^+ y
              = \theta_S + X^\top (XX^\top)^{-1}(y - X\theta_S),

    which is :math:`P_\perp\theta_S + P_\parallel\theta_T` for noise-free labels.  It is the
    point of the affine set :math:`\{w: Xw = y\}` closest to the initialisation.
    """
    X, y = _check_xy(X, y)
    theta_s = _arr("theta_s", theta_s, 1)
    r = y - (X @ theta_s[..., None])[..., 0]
    return theta_s + _gram_solve(X, r)


def population_risk(beta, theta_t, cov_sqrt=None):
    r""":math:`R(\beta) = \|\Sigma^{1/2}(\theta_T - \beta)\|^2` (paper 001, Sec. 3).

    ``cov_sqrt`` is :math:`\Sigma^{1/2}` (``(..., d, d)``) or ``None`` for :math:`\Sigma = I`.
    """
    diff = _arr("theta_t", theta_t, 1) - _arr("beta", beta, 1)
    if cov_sqrt is not None:
        diff = (np.asarray(cov_sqrt, dtype=float) @ diff[..., None])[..., 0]
    return (diff ** 2).sum(-1)


def finetune_risk(X, theta_s, theta_t, cov_sqrt=None):
    r"""Thm 4.1 (paper 001, Eq. 2): :math:`R(\gamma)=\|\Sigma^{1/2}P_\perp(\theta_T-\theta_S)\|^2`.

    Exact given ``X`` (noise-free labels :math:`y = X\theta_T`).
    """
    delta = _arr("theta_t", theta_t, 1) - _arr("theta_s", theta_s, 1)
    p = null_space_projection(X, delta)
    if cov_sqrt is not None:
        p = (np.asarray(cov_sqrt, dtype=float) @ p[..., None])[..., 0]
    return (p ** 2).sum(-1)


def _check_lam(lam):
    lam = _arr("lam", lam, 1)
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
    lam = _check_lam(lam)
    n = np.asarray(n, dtype=float)
    delta = np.asarray(delta, dtype=float)
    if not (np.isfinite(n).all() and (n >= 1).all()):
        raise ValueError(f"n must be >= 1 (got {n!r})")
    if not (np.isfinite(delta).all() and (delta >= 1).all()):
        raise ValueError(f"delta must be >= 1 (Thm 4.2; got {delta!r})")
    if not (np.isfinite(c) and c > 0):
        raise ValueError(f"c must be a finite number > 0 (got {c!r})")
    l1 = lam[..., 0]
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
    lam = _check_lam(lam)
    d = lam.shape[-1]
    if not (isinstance(m, numbers.Integral) and 1 <= m <= d):
        raise ValueError(f"m must be an integer in 1..{d} (got {m!r})")
    if not (lam[..., m - 1] > 0).all():
        raise ValueError(f"m must satisfy lambda_m > 0 (lambda_{m} = 0 here)")
    delta_vec = _arr("delta_vec", delta_vec, 1)
    coords = (np.swapaxes(np.asarray(V, dtype=float), -1, -2) @ delta_vec[..., None])[..., 0]
    top = (coords[..., :m] ** 2).sum(-1)
    bottom = (coords[..., m:] ** 2).sum(-1)
    g = g_function(lam, delta, n, c)
    return 2 * g ** 3 * top / lam[..., m - 1] ** 2 + 2 * g * bottom


def distance_measure(theta_s, theta_t):
    r""":math:`\|\theta_T - \theta_S\|^2`, the first comparison measure of Table 1."""
    return ((_arr("theta_t", theta_t, 1) - _arr("theta_s", theta_s, 1)) ** 2).sum(-1)


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
    delta_vec = _arr("delta_vec", delta_vec, 1)
    return (delta_vec ** 2).sum(-1) * g_function(lam, delta, n, c)


def _check_depth(depth):
    """``depth`` as an int >= 1 or ``inf``, else ``ValueError``."""
    return check_int_or_inf("depth", depth, 1)


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
    a, b, s = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (perp_norm, par_norm, src_norm)))
    if not (np.isfinite(s).all() and (s > 0).all()):
        raise ValueError("src_norm = ||theta_s|| must be finite and > 0 (a zero source network "
                         "is a saddle point that gradient flow never leaves)")
    if not (np.isfinite(a).all() and np.isfinite(b).all() and (a >= 0).all() and (b >= 0).all()):
        raise ValueError("perp_norm and par_norm must be finite and >= 0")
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

    with np.errstate(divide="ignore"):
        log_kap2 = np.where(kap > 0, 2 * np.log(np.where(kap > 0, kap, 1.0)), -np.inf)

    def h(logu):
        # kap^2 u^(-2p) as one exponential: 0 when kap = 0, never inf * 0
        return np.exp(2 * logu / L) - rho ** 2 - np.exp(log_kap2 - 2 * p * logu)

    with np.errstate(divide="ignore"):
        lo = np.log(np.maximum(np.maximum(kap, rho ** L), 1e-300))
    hi = np.log(np.maximum(1.0, kap)) + 0.5 * L * np.log1p(kap ** 2) + 1e-12
    # h(hi) >= 0: with u_hi = max(1, kap) (1 + kap^2)^(L/2), u^(2/L) >= 1 + kap^2 >= rho^2 + kap^2 u^(-2p)
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        neg = h(mid) < 0
        lo = np.where(neg, mid, lo)
        hi = np.where(neg, hi, mid)
        if (hi - lo <= rtol).all():
            break
    u = np.exp(0.5 * (lo + hi))
    return u ** p


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
    theta_s = _arr("theta_s", theta_s, 1)
    depth = _check_depth(depth)
    if theta_s.shape[-1] != X.shape[-1]:
        raise ValueError(f"theta_s must have the input dimension of X: X {X.shape}, theta_s {theta_s.shape}")
    mn = _gram_solve(X, y)
    perp = null_space_projection(X, theta_s)
    s = np.linalg.norm(theta_s, axis=-1)
    if not (s > 0).all():
        raise ValueError("theta_s must be nonzero (a zero source network is a saddle point "
                         "that gradient flow never leaves)")
    k = deep_finetune_scale(np.linalg.norm(perp, axis=-1), np.linalg.norm(mn, axis=-1), s, depth)
    return k[..., None] * perp + mn


def frozen_predictor(X, y, theta_s):
    r"""Thm 5.5 (paper 001): fine-tuning with the first layer(s) frozen gives
    :math:`\beta = c\,\theta_S`.

    With balanced pretraining the frozen first layer is rank one, so the network can only
    rescale :math:`\theta_S`; training the remaining layers to the minimum of the training
    loss gives the least-squares scale :math:`c = \langle X\theta_S, y\rangle / \|X\theta_S\|^2`.
    """
    X, y = _check_xy(X, y)
    theta_s = _arr("theta_s", theta_s, 1)
    z = (X @ theta_s[..., None])[..., 0]
    zz = (z ** 2).sum(-1)
    if not (zz > 0).all():
        raise ValueError("X theta_s must be nonzero (the frozen features carry no signal)")
    return ((z * y).sum(-1) / zz)[..., None] * theta_s


def r_squared(x, y, axis=-1):
    r"""Coefficient of determination of the least-squares line of ``y`` on ``x``:
    the squared Pearson correlation :math:`R^2 = \mathrm{cov}(x,y)^2/(\mathrm{var}\,x\,\mathrm{var}\,y)`
    (Table 1 of paper 001), along ``axis``.  ``ValueError`` when ``x`` or ``y`` is constant.
    """
    x = _arr("x", x, 1)
    y = _arr("y", y, 1)
    x, y = np.broadcast_arrays(x, y)
    xc = x - x.mean(axis, keepdims=True)
    yc = y - y.mean(axis, keepdims=True)
    vx = (xc ** 2).sum(axis)
    vy = (yc ** 2).sum(axis)
    if not ((vx > 0).all() and (vy > 0).all()):
        raise ValueError("x and y must not be constant along axis (R^2 undefined)")
    return (xc * yc).sum(axis) ** 2 / (vx * vy)


def table_r2(errors, measures):
    r"""Table 1 statistics: R^2 between error and each measure across pairs.

    ``errors`` ``(reps, n_values, K)``: the 0-1 error of each of ``K`` pairs (averaged over
    draws); ``measures``: dict name -> array broadcastable to ``errors``.  Returns dict
    name -> ``(mean, std)`` over repetitions, each of shape ``(n_values,)``; ``std`` is the
    sample standard deviation (ddof = 1, 0 for one repetition).
    """
    errors = _arr("errors", errors, 3)
    out = {}
    for name, m in measures.items():
        r2 = r_squared(np.broadcast_to(np.asarray(m, dtype=float), errors.shape), errors, axis=-1)
        sd = r2.std(0, ddof=1) if r2.shape[0] > 1 else np.zeros(r2.shape[1:])
        out[name] = (r2.mean(0), sd)
    return out


# ---------------------------------------------------------------------------------------
# simulations (Figs. 1-3 of paper 001): gradient descent beside the closed forms above
# ---------------------------------------------------------------------------------------


def _rng(seed, *key):
    return np.random.default_rng([int(seed), *[int(k) for k in key]])


def _unit_rows(g):
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


def spiked_spectrum(d, m, top=1.5, bottom=0.3):
    r"""Eigenvalues of the target covariance of Fig. 1 (paper 001, Sec. 4.2): ``m`` equal to
    ``top`` and ``d - m`` equal to ``bottom`` (decreasing)."""
    from ._validate import check_int, check_positive
    d = check_int("d", d, 2)
    m = check_int("m", m, 1)
    if m >= d:
        raise ValueError(f"m must be in 1..d-1 (got m = {m}, d = {d})")
    top, bottom = check_positive("top", top), check_positive("bottom", bottom)
    if bottom > top:
        raise ValueError(f"bottom must be <= top (got {bottom} > {top})")
    return np.where(np.arange(d) < m, top, bottom).astype(float)


def eigen_align_sim(lam, m, ns, draws, seed=0, norm=1.0, loss_tol=1e-12, max_steps=200_000):
    r"""Fig. 1 of paper 001: fine-tune a linear model by gradient descent from
    :math:`\theta_S` on ``n`` noise-free samples :math:`x\sim\mathcal N(0,\Sigma)`,
    :math:`\Sigma = \mathrm{diag}(\lambda)` (no loss of generality: the Gaussian problem is
    rotation invariant), in the two settings

    * ``"top"`` ("Top Eigen Align"): :math:`P_{\le m}(\theta_T-\theta_S) = 0`;
    * ``"bottom"`` ("Bottom Eigen Align"): :math:`P_{> m}(\theta_T-\theta_S) = 0`;

    with :math:`\|\theta_T-\theta_S\| =` ``norm`` and the difference uniform on the sphere of
    its subspace.  Both settings use the same designs ``X`` (paired).  Gradient descent
    (Nesterov with restarts: the limit of a linear model started at :math:`\theta_S` is the
    same closest interpolant for any method whose steps are gradients) stops at excess loss
    ``loss_tol``.

    Returns a dict of arrays ``(2, len(ns), draws)`` (settings ``("top", "bottom")``):
    ``risk_gd`` (population risk of the trained weights, exact given the weights),
    ``risk_thm41`` (Eq. 2 on the same ``X``), ``opt_err`` (certified bound on
    ``|risk_gd - risk_thm41|`` from the stopping rule), ``cov_dev``
    (:math:`\|\tilde\Sigma-\Sigma\|`, for checking the constant of ``g``), ``converged``.
    """
    from . import trainers as T
    from .analysis import risk_error_bound
    from .models import as_tensor, end_to_end

    lam = _check_lam(lam)
    d = lam.shape[-1]
    ns = [int(n) for n in ns]
    if any(n < 1 or n >= d for n in ns):
        raise ValueError(f"ns must lie in 1..d-1 (got {ns}, d = {d})")
    shape = (2, len(ns), draws)
    out = {k: np.zeros(shape) for k in ("risk_gd", "risk_thm41", "opt_err", "cov_dev")}
    out["converged"] = np.zeros(shape, bool)
    sq = np.sqrt(lam)
    for j, n in enumerate(ns):
        X = np.stack([_rng(seed, 1, n, b).standard_normal((n, d)) for b in range(draws)]) * sq
        ts = np.stack([_unit_rows(_rng(seed, 2, b).standard_normal(d)) for b in range(draws)])
        dv = np.zeros((2, draws, d))
        for s in range(2):
            idx = slice(m, d) if s == 0 else slice(0, m)
            g = np.stack([_rng(seed, 3, s, b).standard_normal(d) for b in range(draws)])
            dv[s, :, idx] = g[:, idx]
        dv = norm * _unit_rows(dv)
        tt = ts[None] + dv                                              # (2, draws, d)
        Xb = np.broadcast_to(X, (2,) + X.shape).reshape(-1, n, d)
        yb = np.einsum("bnd,bd->bn", Xb, tt.reshape(-1, d))
        obj = T.empirical_objective(as_tensor(Xb), as_tensor(yb))
        w0 = [as_tensor(np.broadcast_to(ts, (2,) + ts.shape).reshape(-1, d, 1))]
        Ws, info = T.gradient_descent(w0, obj, method="nesterov", loss_tol=loss_tol,
                                      max_steps=max_steps, desc=f"n = {n}")
        beta = end_to_end(Ws).cpu().numpy().reshape(2, draws, d)
        out["risk_gd"][:, j] = (lam * (beta - tt) ** 2).sum(-1)
        p = null_space_projection(X[None], dv)
        out["risk_thm41"][:, j] = (lam * p ** 2).sum(-1)
        # excess loss 1/2 sum_i lam_i c_i^2 <= tol  =>  ||beta - beta*|| <= sqrt(2 tol / lam_min)
        lmin = obj.lam.min(1).values.cpu().numpy().reshape(2, draws)
        excess = np.maximum(info.excess_loss.reshape(2, draws), 0)
        dist = np.sqrt(lam[0]) * np.sqrt(2 * excess / lmin)
        out["opt_err"][:, j] = risk_error_bound(out["risk_thm41"][:, j], dist)
        out["converged"][:, j] = info.converged.reshape(2, draws)
        out["cov_dev"][:, j] = _cov_deviation(X, lam)[None]
    return out


def _cov_deviation(X, lam):
    r""":math:`\|X^\top X/n - \mathrm{diag}(\lambda)\|` per draw (Lanczos on the operator)."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    n, d = X.shape[-2:]
    res = []
    for Xb in X:
        op = LinearOperator((d, d), matvec=lambda v, Xb=Xb: Xb.T @ (Xb @ v) / n - lam * v.ravel(),
                            dtype=float)
        res.append(abs(eigsh(op, k=1, which="LM", return_eigenvectors=False,
                             v0=np.ones(d), tol=1e-8)[0]))
    return np.array(res)


def balanced_weights(theta_s, depth, width=None, seed=0):
    r"""Exactly 0-balanced weights with end-to-end vector :math:`\theta_S` (paper 001, Def. 5.1).

    .. math:: W_1 = s^{1/L}\hat\theta_S v_1^\top,\quad W_j = s^{1/L} v_{j-1}v_j^\top,
              \quad W_L = s^{1/L} v_{L-1},\qquad s = \|\theta_S\|,

    with random unit vectors :math:`v_j \in \mathbb R^{p}`: the point that gradient flow
    from a 0-balanced initialisation of vanishing scale reaches on the population source
    loss (Arora et al. 2019; the assumption of Thms 5.2 and 5.5).  It satisfies
    :math:`W_j^\top W_j = W_{j+1}W_{j+1}^\top` exactly.  Gradient-descent pretraining from a
    small initialisation (:func:`pretrain_gd`) reaches it approximately, but needs a number
    of steps that grows like :math:`\alpha^{-(L-2)}` and is impractical beyond depth 3.
    ``theta_s`` ``(B, d)`` nonzero; returns a list of ``depth`` tensors ``(B, p_{l-1}, p_l)``.
    """
    from ._validate import check_int
    from .models import as_tensor

    theta_s = _arr("theta_s", theta_s, 2)
    depth = check_int("depth", depth, 1)
    B, d = theta_s.shape
    s = np.linalg.norm(theta_s, axis=-1)
    if not (s > 0).all():
        raise ValueError("theta_s must be nonzero")
    if depth == 1:
        return [as_tensor(theta_s[..., None])]
    p = d if width is None else check_int("width", width, 1)
    v = [_unit_rows(np.stack([_rng(seed, 4, j, b).standard_normal(p) for b in range(B)]))
         for j in range(depth - 1)]
    f = s ** (1.0 / depth)
    Ws = [(f / s)[:, None, None] * theta_s[:, :, None] * v[0][:, None, :]]
    for j in range(1, depth - 1):
        Ws.append(f[:, None, None] * v[j - 1][:, :, None] * v[j][:, None, :])
    Ws.append((f[:, None] * v[-1])[:, :, None])
    return [as_tensor(W) for W in Ws]


def pretrain_gd(theta_s, depth, init_scale=1e-5, seed=0, loss_tol=1e-14):
    r"""Pretrain depth-``depth`` linear networks (width ``d``) by gradient descent on the
    population source loss :math:`\frac12\|\beta-\theta_S\|^2` from the small random
    initialisation :math:`W_l(0)=\alpha\bar W_l`: approximately 0-balanced weights (paper
    001, Sec. 5).  Practical up to depth 3 (see :func:`balanced_weights`)."""
    from . import trainers as T
    from .models import as_tensor, init_deep_linear

    theta_s = _arr("theta_s", theta_s, 2)
    B, d = theta_s.shape
    if depth == 1:
        return [as_tensor(theta_s[..., None])]
    W0 = init_deep_linear(d, depth, init_scale, [_rng(seed, 4, b) for b in range(B)])
    Ws, _ = T.gradient_descent(W0, T.population_objective(as_tensor(theta_s)),
                               loss_tol=loss_tol, desc="pretraining")
    return Ws


def deep_finetune_sim(Ws, X, y, step_scale=0.5, loss_tol=1e-12, max_steps=200_000):
    r"""Fine-tune pretrained weights ``Ws`` on ``(X, y)`` by plain gradient descent (a
    discretisation of the gradient flow of Thm 5.2; the path matters).  Returns the
    end-to-end vectors ``(B, d)`` and the :class:`~transferkit.trainers.TrainInfo`."""
    from . import trainers as T
    from .models import as_tensor, end_to_end

    Wf, info = T.finetune(Ws, as_tensor(X), as_tensor(y), loss_tol=loss_tol,
                          step_scale=step_scale, max_steps=max_steps)
    return end_to_end(Wf).cpu().numpy(), info


def _tile(Ws, reps):
    """Repeat a batch of weights ``reps`` times (outer index ``reps``)."""
    return [W.repeat(reps, 1, 1) for W in Ws]


def depth_alpha_sim(d, n, depths, alphas, draws, seed=0, noise_norm=0.5,
                    step_scale=0.5, loss_tol=1e-12):
    r"""Fig. 2a of paper 001: :math:`\theta_T = \alpha\theta_S + \epsilon` with unit
    :math:`\theta_S`, :math:`\epsilon` Gaussian of norm ``noise_norm`` (the paper's
    :math:`\approx 0.5\|\theta_S\|`), ``n`` isotropic Gaussian samples; networks of each
    depth holding exactly balanced pretrained weights (:func:`balanced_weights`) fine-tuned
    by gradient descent.

    Returns dict with ``risk_gd``, ``risk_thm52``, ``risk_thm41``, ``risk_eq6`` of shape
    ``(len(depths), len(alphas), draws)`` (population risks :math:`\|\beta-\theta_T\|^2`,
    :math:`\Sigma = I`), and ``converged``.  The draws (teachers, ``X``) are shared by all
    depths and :math:`\alpha` (paired)."""
    A, D = len(alphas), len(depths)
    ts = _unit_rows(np.stack([_rng(seed, 5, b).standard_normal(d) for b in range(draws)]))
    eps = noise_norm * _unit_rows(np.stack([_rng(seed, 6, b).standard_normal(d) for b in range(draws)]))
    X = np.stack([_rng(seed, 7, n, b).standard_normal((n, d)) for b in range(draws)])
    tt = np.asarray(alphas, float)[:, None, None] * ts[None] + eps[None]   # (A, draws, d)
    y = np.einsum("bnd,abd->abn", X, tt)
    Xa = np.broadcast_to(X, (A,) + X.shape)
    tsa = np.broadcast_to(ts, (A, draws, d))
    out = {k: np.zeros((D, A, draws)) for k in ("risk_gd", "risk_thm52")}
    out["converged"] = np.zeros((D, A, draws), bool)
    for i, L in enumerate(depths):
        Wp = balanced_weights(ts, L, seed=seed)
        beta, info = deep_finetune_sim(_tile(Wp, A), Xa.reshape(-1, n, d), y.reshape(-1, n),
                                       step_scale, loss_tol)
        out["risk_gd"][i] = ((beta.reshape(A, draws, d) - tt) ** 2).sum(-1)
        out["risk_thm52"][i] = ((deep_finetune_predictor(Xa, y, tsa, L) - tt) ** 2).sum(-1)
        out["converged"][i] = info.converged.reshape(A, draws)
    out["risk_thm41"] = ((finetune_predictor(Xa, y, tsa) - tt) ** 2).sum(-1)
    out["risk_eq6"] = ((deep_finetune_predictor(Xa, y, tsa, np.inf) - tt) ** 2).sum(-1)
    return out


def scaling_sim(d, n, depth, scales, draws, seed=0, angle_dist=0.1,
                step_scale=0.5, loss_tol=1e-12):
    r"""Fig. 2b of paper 001: unit directions with :math:`\|\hat\theta_T-\hat\theta_S\|` =
    ``angle_dist``; either the target is scaled (:math:`\theta_T = a\hat\theta_T`,
    :math:`\theta_S=\hat\theta_S`, ``"target"``) or the source
    (:math:`\theta_S = a\hat\theta_S`, :math:`\theta_T=\hat\theta_T`, ``"source"``).

    Returns dict with ``risk_gd``, ``risk_thm52``, ``risk_thm41``, ``risk_eq6`` of shape
    ``(2, len(scales), draws)`` (index 0: target scaled, 1: source scaled), ``converged``."""
    S = len(scales)
    u = _unit_rows(np.stack([_rng(seed, 8, b).standard_normal(d) for b in range(draws)]))
    v = np.stack([_rng(seed, 9, b).standard_normal(d) for b in range(draws)])
    v = _unit_rows(v - (v * u).sum(-1, keepdims=True) * u)
    # ||u - w|| = angle_dist for unit w = cos(phi) u + sin(phi) v: 2 - 2 cos(phi) = dist^2
    phi = np.arccos(np.clip(1 - angle_dist ** 2 / 2, -1, 1))
    w = np.cos(phi) * u + np.sin(phi) * v
    X = np.stack([_rng(seed, 10, n, b).standard_normal((n, d)) for b in range(draws)])
    a = np.asarray(scales, float)[:, None, None]
    ts = np.stack([np.broadcast_to(u, (S, draws, d)), a * u[None]])       # (2, S, draws, d)
    tt = np.stack([a * w[None], np.broadcast_to(w, (S, draws, d))])
    Xa = np.broadcast_to(X, (2, S) + X.shape)
    y = np.einsum("kabnd,kabd->kabn", Xa, tt)
    Wp = balanced_weights(ts.reshape(-1, d), depth, seed=seed)
    beta, info = deep_finetune_sim(Wp, Xa.reshape(-1, n, d), y.reshape(-1, n), step_scale, loss_tol)
    out = {"risk_gd": ((beta.reshape(ts.shape) - tt) ** 2).sum(-1),
           "risk_thm52": ((deep_finetune_predictor(Xa, y, ts, depth) - tt) ** 2).sum(-1),
           "risk_thm41": ((finetune_predictor(Xa, y, ts) - tt) ** 2).sum(-1),
           "risk_eq6": ((deep_finetune_predictor(Xa, y, ts, np.inf) - tt) ** 2).sum(-1),
           "converged": info.converged.reshape(ts.shape[:-1])}
    return out


def frozen_first_layer_gd(Ws, X, y, steps):
    r"""``steps`` steps of gradient descent on the last layer of two-layer networks whose
    first layer is frozen (paper 001, Thm 5.5, Fig. 3): :math:`\beta = W_1 w_2` with the loss
    :math:`\frac1{2n}\|Zw_2 - y\|^2` on the features :math:`Z = XW_1`, step
    :math:`1/\lambda_{\max}(Z^\top Z/n)`.

    After pretraining from scale :math:`\alpha` the features have one singular value of
    order one and the others of order :math:`\alpha`, whose curvature is
    :math:`O(\alpha^2)`: along them gradient descent moves by :math:`O(\alpha^2)` per step
    relative to the signal direction, so there is no stopping rule that separates
    "converged" from "still creeping"; the caller fixes the budget (``frozen_sim`` gives it the
    steps that full fine-tuning needed on the same data).  Returns the end-to-end vectors
    ``(B, d)``.
    """
    from ._validate import check_int
    from .models import as_tensor

    steps = check_int("steps", steps, 0)
    if len(Ws) != 2:
        raise ValueError(f"Ws must hold the two layers of two-layer networks (got {len(Ws)})")
    W1, w2 = Ws[0], Ws[1].clone()
    Xt, yt = as_tensor(X, W1.device), as_tensor(y, W1.device)
    n = Xt.shape[1]
    Z = Xt @ W1                                             # (B, n, p)
    import torch
    lmax = torch.linalg.eigvalsh(Z @ Z.transpose(1, 2) / n)[:, -1]
    eta = (1.0 / lmax)[:, None, None]
    for _ in range(steps):
        w2 = w2 - eta * (Z.transpose(1, 2) @ (Z @ w2 - yt[..., None])) / n
    return (W1 @ w2)[..., 0].cpu().numpy()


def frozen_sim(d, ns, cos_angle, draws, seed=0, init_scale=1e-5, step_scale=0.5,
               loss_tol=1e-12, rcond=1e-3):
    r"""Fig. 3 of paper 001: two-layer linear networks on a target at angle
    :math:`\arccos(\cos\theta)` from the unit source, noise free, :math:`\Sigma = I`.

    * ``"frozen"``: pretrained first layer frozen, last layer fitted: ``risk_frozen_gd`` by
      gradient descent (:func:`frozen_first_layer_gd`) for as many steps as ``"finetune"``
      needed (``frozen_gd_steps``), ``risk_frozen`` by its limit along
      the features that carry signal, the minimum-norm least squares on the pretrained
      features of effective rank ``r`` (:func:`transferkit.trainers.linear_transfer` with
      ``rcond``);
    * ``"vanilla"``: trained from scratch from scale ``init_scale``;
    * ``"finetune"``: all layers trained from the pretrained weights (gradient descent).

    Returns dict with ``risk_<method>`` ``(len(ns), draws)`` for the simulations,
    ``risk_thm55`` (:func:`frozen_predictor`), ``risk_thm52`` (depth 2),
    ``risk_scratch_theory`` (:math:`(1-n/d)\|\theta_T\|^2`, the expectation for
    :math:`X^+y`), ``rank`` (effective rank of the frozen features) and ``converged``.
    """
    from . import trainers as T
    from .models import as_tensor, end_to_end

    ns = [int(n) for n in ns]
    u = _unit_rows(np.stack([_rng(seed, 11, b).standard_normal(d) for b in range(draws)]))
    v = np.stack([_rng(seed, 12, b).standard_normal(d) for b in range(draws)])
    v = _unit_rows(v - (v * u).sum(-1, keepdims=True) * u)
    tt = cos_angle * u + np.sqrt(1 - cos_angle ** 2) * v
    Wp = pretrain_gd(u, 2, init_scale, seed)
    U, _, rank, _ = T.feature_subspace(Wp, rcond)
    keys = ("risk_frozen", "risk_frozen_gd", "risk_vanilla", "risk_finetune", "risk_thm55",
            "risk_thm52")
    out = {k: np.zeros((len(ns), draws)) for k in keys}
    out["converged"] = np.ones((len(ns), draws), bool)
    out["frozen_gd_steps"] = np.zeros(len(ns), int)
    for j, n in enumerate(ns):
        X = np.stack([_rng(seed, 13, n, b).standard_normal((n, d)) for b in range(draws)])
        y = np.einsum("bnd,bd->bn", X, tt)
        Xt, yt = as_tensor(X), as_tensor(y)
        bf = T.linear_transfer(U, Xt, yt[..., None])[:, 0].cpu().numpy()
        out["risk_frozen"][j] = ((bf - tt) ** 2).sum(-1)
        Wv, iv = T.train_scratch(Xt, yt, 2, init_scale, [_rng(seed, 14, n, b) for b in range(draws)],
                                 loss_tol=loss_tol, max_steps=200_000)
        out["risk_vanilla"][j] = ((end_to_end(Wv).cpu().numpy() - tt) ** 2).sum(-1)
        bft, ift = deep_finetune_sim(Wp, X, y, step_scale, loss_tol)
        out["risk_finetune"][j] = ((bft - tt) ** 2).sum(-1)
        bg = frozen_first_layer_gd(Wp, X, y, int(ift.steps.max()))
        out["risk_frozen_gd"][j] = ((bg - tt) ** 2).sum(-1)
        out["frozen_gd_steps"][j] = int(ift.steps.max())
        out["risk_thm55"][j] = ((frozen_predictor(X, y, u) - tt) ** 2).sum(-1)
        out["risk_thm52"][j] = ((deep_finetune_predictor(X, y, u, 2) - tt) ** 2).sum(-1)
        out["converged"][j] = iv.converged & ift.converged
    out["risk_scratch_theory"] = (1 - np.asarray(ns) / d) * 1.0
    out["rank"] = rank
    return out


# ---------------------------------------------------------------------------------------
# Table 1 of paper 001: binary MNIST tasks
# ---------------------------------------------------------------------------------------


def digit_moments(x, labels):
    r"""Per-digit sufficient statistics of least squares: ``G[k] = X_k^T X_k`` ``(10, d, d)``,
    ``s[k] = X_k^T 1`` ``(10, d)`` and counts ``(10,)`` (float64).  A binary task "a vs b"
    with targets +-1 has :math:`X^\top X = G_a + G_b` and :math:`X^\top y = s_a - s_b`."""
    x = np.asarray(x)
    labels = np.asarray(labels)
    d = x.shape[1]
    G = np.zeros((10, d, d))
    s = np.zeros((10, d))
    cnt = np.zeros(10)
    for k in range(10):
        xk = np.asarray(x[labels == k], dtype=np.float64)
        G[k] = xk.T @ xk
        s[k] = xk.sum(0)
        cnt[k] = len(xk)
    return G, s, cnt


def task_teacher(G, s, a, b, rcond=1e-6):
    r"""The linear teacher of task "a vs b" fitted on all its data: the minimum-norm least
    squares solution :math:`\theta = (X^\top X)^+ X^\top y` (the limit of gradient descent
    from zero on the square loss), with eigenvalues of :math:`X^\top X` below
    ``rcond`` times the largest treated as zero (MNIST has pixels that are always 0)."""
    ev, V = np.linalg.eigh(G[a] + G[b])
    keep = ev > rcond * ev[-1]
    coef = (V.T @ (s[a] - s[b]))
    return V[:, keep] @ (coef[keep] / ev[keep])


def task_covariance(G, cnt, c, d_):
    r"""Second-moment matrix :math:`\Sigma = \mathbb E\,xx^\top` of the inputs of task "c vs d"
    (the models have no bias, so the uncentred moment is the covariance of Eq. 2), as
    eigenvalues (decreasing) and eigenvectors (columns)."""
    S = (G[c] + G[d_]) / (cnt[c] + cnt[d_])
    ev, V = np.linalg.eigh(S)
    ev = np.clip(ev[::-1], 0, None)
    return ev, V[:, ::-1]


def draw_task_pairs(K, seed=0):
    r"""``K`` distinct (source, target) pairs of binary digit tasks, four distinct digits each:
    an array ``(K, 4)`` of ``(a, b, c, d)`` for source "a vs b" and target "c vs d"."""
    rng = _rng(seed, 20)
    pairs = set()
    while len(pairs) < K:
        pairs.add(tuple(int(v) for v in rng.choice(10, 4, replace=False)))
    return np.array(sorted(pairs))


def mnist_measures(theta_s, theta_t, lam, V, ns, m=2, delta=1.0, c=3.0):
    r"""The three measures of Table 1 for one pair, per sample size: ``dist``
    (:math:`\|\theta_T-\theta_S\|^2`), ``bartlett`` (:func:`bartlett_bound`) and ``eq3``
    (:func:`eq3_bound` with ``m``).  Returns dict name -> array ``(len(ns),)``."""
    dv = theta_t - theta_s
    ns = np.asarray(ns, float)
    return {"dist": np.full(ns.shape, distance_measure(theta_s, theta_t)),
            "bartlett": bartlett_bound(dv, lam, ns, delta, c),
            "eq3": eq3_bound(dv, V, lam, m, ns, delta, c)}


def sample_indices(pool_size, n, count, seed):
    r"""Row indices ``(count, n)`` of ``count`` independent draws of ``n`` of ``pool_size``
    rows without replacement: the target samples of :func:`finetune_test_error` for the
    same ``seed`` and ``n`` (so other quantities can be computed on the same samples)."""
    rng = _rng(seed, 21, n)
    return np.stack([rng.choice(pool_size, n, replace=False) for _ in range(int(count))])


def finetune_test_error(x_pool, t_pool, theta_s, x_test, t_test, n, shape, seed):
    r"""0-1 test error of :func:`finetune_predictor` (Thm 4.1, the limit of gradient
    descent from :math:`\theta_S` on the square loss) fitted on ``n`` target samples drawn
    without replacement from ``(x_pool, t_pool)`` (:func:`sample_indices`), for a batch of
    independent draws of shape ``shape``.  Returns errors of shape ``shape``."""
    idx = sample_indices(len(x_pool), n, int(np.prod(shape)), seed)
    X = np.asarray(x_pool, dtype=np.float64)[idx]                    # (B, n, d)
    gamma = finetune_predictor(X, np.asarray(t_pool, dtype=np.float64)[idx], theta_s)
    pred = np.asarray(x_test, dtype=np.float64) @ gamma.T           # (N_test, B)
    err = (np.sign(pred) != np.asarray(t_test)[:, None]).mean(0)
    return err.reshape(shape)


def mnist_table_sim(x_train, y_train, x_test, y_test, pairs, ns, draws, reps, seed=0, m=2,
                    delta=1.0, c=3.0, rcond=1e-6, other_c=(), progress=None):
    r"""Table 1 of paper 001.  For each (source "a vs b", target "c vs d") pair: the source
    and target teachers fitted on all their training data (:func:`task_teacher`), the
    target covariance, the three measures (:func:`mnist_measures`), and the 0-1 test error
    (on the target task's test images) of fine-tuning from :math:`\theta_S` on ``n`` target
    samples, averaged over ``draws`` draws, for ``reps`` independent repetitions.

    Returns dict: ``errors`` ``(reps, len(ns), K)``, ``errors_sd`` (std over draws),
    ``measures`` (name -> ``(len(ns), K)``; for every value ``c2`` of ``other_c`` also
    ``bartlett_c{c2}`` and ``eq3_c{c2}``), ``r2`` (:func:`table_r2`), ``theta_norms``
    ``(K, 2)``, ``thetas`` ``(K, 2, d)`` (source, target teachers).
    """
    from . import config
    from tqdm import tqdm

    G, s, cnt = digit_moments(x_train, y_train)
    K = len(pairs)
    errors = np.zeros((reps, len(ns), K))
    errors_sd = np.zeros((reps, len(ns), K))
    names = ["dist", "bartlett", "eq3"] + [f"{b}_c{c2:g}" for c2 in other_c for b in ("bartlett", "eq3")]
    measures = {k: np.zeros((len(ns), K)) for k in names}
    norms = np.zeros((K, 2))
    thetas = np.zeros((K, 2, x_train.shape[1]))
    for k, (a, b, cc, dd) in enumerate(tqdm(pairs, desc="pairs", disable=not config.progress(progress))):
        ts = task_teacher(G, s, a, b, rcond)
        tt = task_teacher(G, s, cc, dd, rcond)
        norms[k] = np.linalg.norm(ts), np.linalg.norm(tt)
        thetas[k] = ts, tt
        lam, V = task_covariance(G, cnt, cc, dd)
        for name, v in mnist_measures(ts, tt, lam, V, ns, m, delta, c).items():
            measures[name][:, k] = v
        for c2 in other_c:
            for name, v in mnist_measures(ts, tt, lam, V, ns, m, delta, c2).items():
                if name != "dist":
                    measures[f"{name}_c{c2:g}"][:, k] = v
        x_pool, t_pool = binary_task(x_train, y_train, cc, dd)
        x_t, t_t = binary_task(x_test, y_test, cc, dd)
        for j, n in enumerate(ns):
            e = finetune_test_error(x_pool, t_pool, ts, x_t, t_t, int(n), (reps, draws),
                                    seed=int(seed) * 1000 + k)
            errors[:, j, k] = e.mean(-1)
            errors_sd[:, j, k] = e.std(-1, ddof=1)
    r2 = table_r2(errors, {name: v for name, v in measures.items()})
    return {"errors": errors, "errors_sd": errors_sd, "measures": measures, "r2": r2,
            "theta_norms": norms, "thetas": thetas}
