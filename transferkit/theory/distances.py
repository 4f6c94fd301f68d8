r"""Dataset distances against transferability (paper 000, Sec. 2.1, Thm 2.2, App. B.1, Fig. 4).

A tempting notion of task relatedness compares the joint distributions
:math:`p_s(x, y)` and :math:`p_t(x, y)` of the source and target datasets.  Paper 000
argues (Thm 2.2) that neither a :math:`\phi`-divergence (KL) nor an integral probability
metric (Wasserstein-1) can predict transfer: two functions representable with the *same*
features can be arbitrarily far apart.

Setting (paper 000, Sec. 3): :math:`x\sim\mathcal N(0, I_d)` for both tasks and
:math:`y = \beta^\top x + \epsilon`, :math:`\epsilon\sim\mathcal N(0,\sigma^2)`, with
:math:`\beta = \beta_s` or :math:`\beta_t`.  Then

* the KL divergence is exact (Eq. 31):
  :math:`D_{KL}(p_s\|p_t) = \|f_s - f_t\|^2_{L_2(p)}/2\sigma^2 = \|\beta_s-\beta_t\|^2/2\sigma^2`
  (:func:`kl_divergence`, :func:`kl_linear`);
* the Wasserstein-1 distance (Euclidean ground cost on :math:`(x, y)\in\mathbb R^{d+1}`)
  has no closed form; it is estimated from samples with the exact optimal-transport
  solver of POT (:func:`wasserstein1`, ``ot.emd2``: the linear program between the two
  empirical measures, which is the estimator of Sriperumbudur et al. that the paper
  uses), and bracketed by closed-form bounds (:func:`w1_bounds_linear`).

Transferability itself depends on the source only through the *direction* of
:math:`\beta_s` (the pretrained features, Thm 3.4), while both distances grow with
:math:`\|\beta_s - \beta_t\|`: scaling or flipping the source changes the distance and
leaves transfer unchanged.  :func:`~transferkit.experiments.dataset_distances.simulate_pairs` simulates transfer for such pairs of
tasks and :func:`~transferkit.stats.rank_correlation` measures how well a distance ranks them.
"""

from __future__ import annotations

import math

import numpy as np
import ot

from .._validate import MAX_ENTRY as _MAX_ENTRY
from .._validate import (
    InputTypeError,
    as_array,
    check_array,
    check_bool,
    check_broadcast,
    check_budget,
    check_int,
    check_magnitude,
    check_positive,
    check_seed,
)

__all__ = ["gaussian_w2", "joint_covariance", "joint_samples", "kl_divergence", "kl_linear", "kl_monte_carlo", "reduce_to_span", "wasserstein1", "wasserstein1_linear", "w1_bounds_linear"]


# ---------------------------------------------------------------------------
# KL divergence (exact, Eq. 31) and its Monte Carlo check
# ---------------------------------------------------------------------------

def _vectors(beta_s, beta_t, one_d=False):
    """The two teachers as float arrays ``(..., d)`` of one ``d`` (``(d,)``, ``d >= 1``, with
    ``one_d``), finite, else ``ValueError`` naming them."""
    bs = as_array("beta_s", beta_s)
    bt = as_array("beta_t", beta_t)
    if bs.ndim < 1 or bt.ndim < 1 or bs.shape[-1] != bt.shape[-1]:
        raise ValueError("beta_s and beta_t must be vectors of the same dimension d "
                         f"(got shapes {bs.shape} and {bt.shape})")
    if one_d and (bs.ndim != 1 or bt.ndim != 1 or bs.size < 1):
        raise ValueError("beta_s and beta_t must be 1-d vectors (d,) with d >= 1 "
                         f"(got shapes {bs.shape} and {bt.shape})")
    if not (np.isfinite(bs).all() and np.isfinite(bt).all()):
        raise ValueError("beta_s and beta_t must be finite")
    check_broadcast(beta_s=bs, beta_t=bt)
    return bs, bt


def _seed_key(seed):
    """``seed`` (an integer >= 0 or a sequence of them) as a list of ints."""
    if isinstance(seed, (str, bytes)) or seed is None:
        raise InputTypeError(f"seed must be an integer >= 0 or a sequence of them (got {seed!r})")
    try:
        keys = np.atleast_1d(np.asarray(seed, dtype=object)).ravel().tolist()
    except (TypeError, ValueError):
        raise ValueError(f"seed must be an integer >= 0 or a sequence of them (got {seed!r})") from None
    if not keys:
        raise ValueError(f"seed must be an integer >= 0 or a non-empty sequence of them (got {seed!r})")
    return [check_seed("seed", k) for k in keys]


#: Largest magnitude accepted for the entries of the covariance helpers
#: (:func:`joint_covariance`, :func:`gaussian_w2`): their products and sums then stay far
#: from the float range (1e308), so no overflow turns into ``inf - inf`` (the bound of every
#: validator of the package).
MAX_ENTRY = _MAX_ENTRY

#: Largest teacher norm accepted by :func:`kl_linear` (``norm_s ** 2`` stays finite).
MAX_NORM = 1e150


def _sigma(sigma, allow_zero=False):
    s = as_array("sigma", sigma)
    if not np.isfinite(s).all() or np.any(s < 0):
        raise ValueError(f"sigma must be a finite number > 0 (got {sigma!r})")
    return s


def kl_divergence(beta_s, beta_t, sigma):
    r"""Exact :math:`D_{KL}(p_s\|p_t)` of two linear-Gaussian regression tasks (paper 000, Eq. 31).

    With the same input distribution :math:`x\sim\mathcal N(0, I_d)` and labels
    :math:`y\,|\,x\sim\mathcal N(\beta^\top x, \sigma^2)`,

    .. math::

        D_{KL}(p_s\|p_t) = \frac{\|f_s - f_t\|^2_{L_2(p)}}{2\sigma^2}
        = \frac{\|\beta_s - \beta_t\|_2^2}{2\sigma^2}.

    Broadcasts over leading axes (the last axis is :math:`d`).  ``sigma = 0`` gives
    ``inf`` for distinct teachers (the conditional laws are singular) and ``0`` for equal
    ones.
    """
    bs, bt = _vectors(beta_s, beta_t)
    s = _sigma(sigma)
    check_broadcast(beta_s=np.zeros(np.broadcast_shapes(bs.shape, bt.shape)[:-1]), sigma=s)
    with np.errstate(over="ignore"):
        num = ((bs - bt) ** 2).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = np.where(s > 0, num / (2 * np.where(s > 0, s, 1.0) ** 2),
                       np.where(num > 0, np.inf, 0.0))
        out = np.where(num == 0, 0.0, out)  # 0, not 0/0, where sigma ** 2 underflows
    # ||beta_s - beta_t|| or sigma so large or small that a square over- or underflows:
    # (||D|| / sigma)^2 / 2 from the halved difference D / 2 (no overflow) divided by its
    # largest entry
    half = bs / 2 - bt / 2
    top = np.max(np.abs(half), axis=-1) if half.shape[-1] else np.zeros(half.shape[:-1])
    extreme = (s > 0) & (top > 0) & ~((s > _SQUARE_RANGE[0]) & (s < _SQUARE_RANGE[1])
                                      & (top > _SQUARE_RANGE[0]) & (top < _SQUARE_RANGE[1]))
    if np.any(extreme):
        safe = np.where(top > 0, top, 1.0)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            r = (2 * (top / np.where(s > 0, s, 1.0))
                 * np.sqrt(((half / safe[..., None]) ** 2).sum(-1)))
            out = np.where(extreme, r * r / 2, out)
    return float(out) if np.ndim(out) == 0 else out


#: ``kl_divergence`` divides the norm by ``sigma`` before squaring outside this range.
_SQUARE_RANGE = (1e-150, 1e150)


def kl_linear(theta, sigma, norm_s=1.0, norm_t=1.0):
    r"""Eq. 31 in terms of the angle and the norms of the teachers.

    .. math::

        D_{KL}(p_s\|p_t) = \frac{r_s^2 + r_t^2 - 2 r_s r_t\cos\theta}{2\sigma^2},
        \qquad r_s = \|\beta_s\|,\ r_t = \|\beta_t\|.

    For unit teachers, :math:`(1-\cos\theta)/\sigma^2`.  Broadcasts like a ufunc.  The
    norms are at most :data:`MAX_NORM` (``1e150``; beyond it :math:`r_s^2` and
    :math:`r_sr_t` overflow and the difference is ``inf - inf``).
    """
    th = as_array("theta", theta)
    if not np.isfinite(th).all() or np.any((th < 0) | (th > np.pi)):
        raise ValueError(f"theta must be in [0, pi] (got {theta!r})")
    rs, rt = as_array("norm_s", norm_s), as_array("norm_t", norm_t)
    for name, v in (("norm_s", rs), ("norm_t", rt)):
        if not np.isfinite(v).all() or np.any(v < 0):
            raise ValueError(f"{name} must be a finite number >= 0 (got {v!r})")
        check_magnitude(name, v, MAX_NORM)
    s = _sigma(sigma)
    check_broadcast(theta=th, sigma=s, norm_s=rs, norm_t=rt)
    num = np.clip(rs ** 2 + rt ** 2 - 2 * rs * rt * np.cos(th), 0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(s > 0, num / (2 * np.where(s > 0, s, 1.0) ** 2),
                       np.where(num > 0, np.inf, 0.0))
        out = np.where(num == 0, 0.0, out)  # 0, not 0/0, where sigma ** 2 underflows
    return float(out) if np.ndim(out) == 0 else out


def joint_samples(beta, sigma, n, rng) -> np.ndarray:
    r"""``n`` samples of :math:`(x, y)`, :math:`x\sim\mathcal N(0,I_d)`, :math:`y=\beta^\top x+\sigma\epsilon`.

    Returns an array ``(n, d + 1)`` (inputs, then the label).
    """
    beta = check_array("beta", beta, 1)
    if beta.ndim != 1:
        raise ValueError(f"beta must be a finite 1-d vector (got shape {beta.shape})")
    check_positive("sigma", sigma, allow_zero=True)
    n = check_int("n", n, 1)
    if not isinstance(rng, np.random.Generator):
        raise InputTypeError(f"rng must be a numpy Generator (got {rng!r})")
    check_budget("n", n, 8 * 3 * n * (beta.size + 1))      # x, y and the stacked samples
    x = rng.standard_normal((n, beta.size))
    y = x @ beta + sigma * rng.standard_normal(n)
    return np.column_stack([x, y])


def kl_monte_carlo(beta_s, beta_t, sigma, n=100_000, seed=0):
    r"""Monte Carlo estimate of :math:`\mathbb E_{p_s}\log(p_s/p_t)` and its standard error.

    Samples :math:`(x, y)\sim p_s` and averages
    :math:`\log p_s(y|x) - \log p_t(y|x) = [(y-\beta_t^\top x)^2 - (y-\beta_s^\top x)^2]/2\sigma^2`
    (the input densities cancel).  An independent check of Eq. 31 (no algebra shared
    with :func:`kl_divergence`).

    ``beta_s``, ``beta_t``: 1-d, entries of magnitude at most :data:`MAX_ENTRY` (beyond it
    :math:`x^\top\beta` overflows); ``sigma > 0``; ``n >= 2`` samples (a standard error needs
    two), refused up front when they would need more memory than the budget of
    ``transferkit._validate.check_budget``; ``seed``: an integer >= 0, a numpy
    ``SeedSequence`` or ``Generator``.  For ``sigma`` below ``1e-100`` (where
    :math:`\sigma^2` underflows) the log-ratio is taken as
    :math:`z(2\epsilon + z)/2`, :math:`z = (\beta_s-\beta_t)^\top x/\sigma`; an infinite
    estimate has an infinite standard error.
    """
    bs, bt = _vectors(beta_s, beta_t, one_d=True)
    check_magnitude("beta_s", bs, MAX_ENTRY)
    check_magnitude("beta_t", bt, MAX_ENTRY)
    sigma = check_positive("sigma", sigma)
    n = check_int("n", n, 2)
    check_budget("n", n, 8 * 4 * n * (bs.size + 2))
    rng = np.random.default_rng(check_seed("seed", seed, allow_generator=True))
    if sigma >= _SIGMA_TINY:
        xy = joint_samples(bs, sigma, n, rng)
        x, y = xy[:, :-1], xy[:, -1]
        llr = ((y - x @ bt) ** 2 - (y - x @ bs) ** 2) / (2 * sigma ** 2)
    else:  # the draws of joint_samples, the noise kept apart: (a^2 - b^2) = (a - b)(a + b)
        x = rng.standard_normal((n, bs.size))
        eps = rng.standard_normal(n)
        with np.errstate(over="ignore", invalid="ignore"):
            z = (x @ (bs - bt)) / sigma
            llr = z * (2 * eps + z) / 2
    with np.errstate(over="ignore", invalid="ignore"):
        mean = float(llr.mean())
        se = float(llr.std(ddof=1) / math.sqrt(n)) if math.isfinite(mean) else math.inf
    return mean, se


#: ``kl_monte_carlo`` rewrites the log-ratio below this ``sigma`` (``sigma ** 2`` underflows).
_SIGMA_TINY = 1e-100


# ---------------------------------------------------------------------------
# Wasserstein-1: POT's exact solver, a reduction to 3 dimensions, closed-form bounds
# ---------------------------------------------------------------------------

def wasserstein1(a, b, method: str = "exact", n_projections: int = 500, seed: int = 0) -> float:
    r"""Wasserstein-1 distance between the empirical measures of two samples (POT).

    Parameters
    ----------
    a, b : arrays ``(n_a, k)`` and ``(n_b, k)`` (or 1-d for :math:`k = 1`)
        Samples, each point with weight :math:`1/n`.
    method : {"exact", "sliced"}
        ``"exact"``: ``ot.emd2`` with the Euclidean ground cost
        :math:`\|a_i - b_j\|_2` (``ot.dist(..., metric="euclidean")``), i.e. the linear
        program :math:`\min_{\pi\in\Pi(\mu_n,\nu_n)}\sum_{ij}\pi_{ij}\|a_i-b_j\|`: the
        estimator of Sriperumbudur et al. that paper 000 uses for Fig. 4.  Network
        simplex, about :math:`O(n^3)` time and :math:`O(n^2)` memory: a few thousand
        points.  ``"sliced"``: ``ot.sliced_wasserstein_distance`` with ``p=1``, the
        mean of 1-d :math:`W_1` over random directions, :math:`O(L\,n\log n)`.  It is a
        different metric, a *lower bound* on :math:`W_1` (each projection is
        1-Lipschitz); use it only where the exact solver is too slow.
    n_projections, seed
        Directions and their seed for ``"sliced"``.
    """
    a = as_array("a", a)
    b = as_array("b", b)
    a = a[:, None] if a.ndim == 1 else a
    b = b[:, None] if b.ndim == 1 else b
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or len(a) < 1 or len(b) < 1:
        raise ValueError(f"a and b must be non-empty samples of the same dimension "
                         f"(got shapes {a.shape} and {b.shape})")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("a and b must be finite")
    for name, v in (("a", a), ("b", b)):
        check_magnitude(name, v, MAX_ENTRY)  # squared distances stay finite
    if not isinstance(method, str) or method not in ("exact", "sliced"):
        raise ValueError(f"method must be 'exact' or 'sliced' (got {method!r})")
    if method == "exact":
        check_budget("a", a.shape, 8 * 3 * len(a) * len(b))  # the cost matrix and the plan
        M = ot.dist(a, b, metric="euclidean")
        wa = np.full(len(a), 1.0 / len(a))
        wb = np.full(len(b), 1.0 / len(b))
        return float(ot.emd2(wa, wb, M, numItermax=10_000_000))
    n_projections = check_int("n_projections", n_projections, 1)
    seed = check_seed("seed", seed)
    check_budget("n_projections", n_projections,
                 8 * 2 * n_projections * (len(a) + len(b) + a.shape[1]))
    return float(ot.sliced_wasserstein_distance(a, b, n_projections=n_projections, p=1,
                                                seed=seed))


def reduce_to_span(beta_s, beta_t) -> np.ndarray:
    r"""Orthonormal basis ``(d, k)``, :math:`k\le 2`, of :math:`\mathrm{span}(\beta_s, \beta_t)`.

    Both joint laws are the product of the same :math:`\mathcal N(0, I_{d-k})` on the
    orthogonal complement and a law of :math:`(Q^\top x, y)\in\mathbb R^{k+1}`, so
    :math:`W_1(p_s, p_t) = W_1` of the :math:`(k+1)`-dimensional marginals: the coupling
    that is the identity on the complement gives :math:`\le`, and a 1-Lipschitz test
    function of :math:`(Q^\top x, y)` is 1-Lipschitz in :math:`(x, y)`, which gives
    :math:`\ge`.
    """
    bs, bt = _vectors(beta_s, beta_t, one_d=True)
    B = np.stack([bs, bt], axis=1)
    top = float(np.max(np.abs(B)))
    if top > MAX_ENTRY or 0 < top < 1 / MAX_ENTRY:  # rescaled (same span): no over/underflow
        B = B / top
    U, s, _ = np.linalg.svd(B, full_matrices=False)
    keep = s > 1e-12 * max(s.max(), 1e-300)
    return U[:, keep]


def joint_covariance(beta, sigma, Q) -> np.ndarray:
    r"""Covariance of :math:`(Q^\top x, y)`: :math:`\begin{pmatrix} I & Q^\top\beta\\ \beta^\top Q & \|\beta\|^2+\sigma^2\end{pmatrix}`.

    ``beta`` a vector ``(d,)``, ``sigma >= 0`` and ``Q`` a ``(d, k)`` matrix (an orthonormal
    basis, :func:`reduce_to_span`); entries of magnitude at most :data:`MAX_ENTRY`
    (``1e100``), beyond which :math:`Q^\top\beta` and :math:`\|\beta\|^2` may overflow.
    """
    beta = check_magnitude("beta", check_array("beta", beta, 1), MAX_ENTRY)
    Q = check_magnitude("Q", check_array("Q", Q, 2), MAX_ENTRY)
    sigma = check_positive("sigma", sigma, allow_zero=True)
    check_magnitude("sigma", np.asarray(sigma), MAX_ENTRY)
    if beta.ndim != 1 or Q.ndim != 2 or Q.shape[0] != beta.shape[0]:
        raise ValueError(f"beta must be a vector (d,) and Q a (d, k) matrix (got beta "
                         f"{beta.shape}, Q {Q.shape})")
    c = Q.T @ beta
    k = Q.shape[1]
    S = np.eye(k + 1)
    S[:k, k] = S[k, :k] = c
    S[k, k] = beta @ beta + sigma ** 2
    return S


def gaussian_w2(S1, S2) -> float:
    r""":math:`W_2` between centred Gaussians (Bures): :math:`\mathrm{tr}\,S_1 + \mathrm{tr}\,S_2 - 2\,\mathrm{tr}(S_1^{1/2}S_2S_1^{1/2})^{1/2}`.

    ``S1`` and ``S2`` are symmetric ``(k, k)`` matrices of the same shape (covariances; tiny
    negative eigenvalues from rounding are clipped to 0), with entries of magnitude at most
    :data:`MAX_ENTRY` (``1e100``): beyond it the products overflow.
    """
    mats = {"S1": S1, "S2": S2}
    for name, S in mats.items():
        S = check_magnitude(name, check_array(name, S, 2), MAX_ENTRY)
        if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] < 1:
            raise ValueError(f"{name} must be a square (k, k) matrix with k >= 1 (got shape {S.shape})")
        if not np.array_equal(S, S.T):
            raise ValueError(f"{name} must be symmetric (a covariance matrix)")
        mats[name] = S
    S1, S2 = mats["S1"], mats["S2"]
    if S1.shape != S2.shape:
        raise ValueError(f"S1 and S2 must have the same shape (got {S1.shape} and {S2.shape})")
    def sqrtm(S):
        w, V = np.linalg.eigh(S)
        return (V * np.sqrt(np.clip(w, 0, None))) @ V.T
    r = sqrtm(S1)
    cross = np.trace(sqrtm(r @ S2 @ r))
    return float(math.sqrt(max(np.trace(S1) + np.trace(S2) - 2 * cross, 0.0)))


def _sphere(k, m=4000):
    """Deterministic, roughly uniform directions on the sphere in R^k (Fibonacci for k=3)."""
    if k == 1:
        return np.ones((1, 1))
    if k == 2:
        t = np.linspace(0, np.pi, m, endpoint=False)
        return np.column_stack([np.cos(t), np.sin(t)])
    i = np.arange(m) + 0.5
    z = 1 - 2 * i / m
    phi = np.pi * (1 + 5 ** 0.5) * i
    r = np.sqrt(1 - z ** 2)
    return np.column_stack([r * np.cos(phi), r * np.sin(phi), z])


def w1_bounds_linear(beta_s, beta_t, sigma) -> tuple[float, float]:
    r"""Closed-form bounds :math:`L\le W_1(p_s, p_t)\le U` for two linear-Gaussian tasks.

    * Upper: :math:`U = \min\{\sqrt{2/\pi}\,\|\beta_s-\beta_t\|,\ W_2(p_s, p_t)\}` -- the
      coupling with the same :math:`x` and the same noise moves :math:`y` by
      :math:`|(\beta_s-\beta_t)^\top x|`, whose mean is :math:`\sqrt{2/\pi}\|\beta_s-\beta_t\|`;
      and :math:`W_1\le W_2`, the Gaussian :math:`W_2` being in closed form (Bures,
      :func:`gaussian_w2`).
    * Lower: :math:`L = \sqrt{2/\pi}\max_{\|u\|=1}|\sqrt{u^\top\Sigma_s u} - \sqrt{u^\top\Sigma_t u}|`
      -- the 1-d projections are 1-Lipschitz, and between centred 1-d Gaussians
      :math:`W_1 = \sqrt{2/\pi}\,|s_1 - s_2|`.  The maximum is taken over a fine grid of
      directions of the reduced space (:func:`reduce_to_span`), so ``L`` is a valid bound.
    """
    bs, bt = _vectors(beta_s, beta_t, one_d=True)
    check_magnitude("beta_s", bs, MAX_ENTRY)
    check_magnitude("beta_t", bt, MAX_ENTRY)
    check_magnitude("sigma", check_positive("sigma", sigma, allow_zero=True), MAX_ENTRY)
    Q = reduce_to_span(bs, bt)
    Ss, St = joint_covariance(bs, sigma, Q), joint_covariance(bt, sigma, Q)
    c = math.sqrt(2 / math.pi)
    upper = min(c * float(np.linalg.norm(bs - bt)), gaussian_w2(Ss, St))
    U = _sphere(Q.shape[1] + 1)
    # variances of the projections: >= 0 up to rounding (a singular covariance at sigma = 0)
    ss = np.sqrt(np.clip(np.einsum("mi,ij,mj->m", U, Ss, U), 0.0, None))
    st = np.sqrt(np.clip(np.einsum("mi,ij,mj->m", U, St, U), 0.0, None))
    lower = c * float(np.abs(ss - st).max())
    return lower, upper


def wasserstein1_linear(beta_s, beta_t, sigma, n=1000, seed=0, reduce=True,
                        method="exact") -> float:
    r"""Sample estimate of :math:`W_1(p_s, p_t)` for two linear-Gaussian regression tasks.

    Draws ``n`` independent samples of each joint law and calls :func:`wasserstein1`.
    With ``reduce=True`` (default) the samples are drawn in the :math:`(k+1)\le 3`
    dimensional space of :func:`reduce_to_span`, where the distance is the same and the
    empirical estimator converges at rate :math:`n^{-1/3}`; in the full
    :math:`d+1` dimensions it converges at rate :math:`n^{-1/(d+1)}` and at
    :math:`d = 500` it measures the sampling noise of the inputs, not the tasks.
    By Jensen's inequality (:math:`W_1` is jointly convex) the estimator is biased
    upwards: :math:`\mathbb E\,\widehat W_1 \ge W_1`.
    """
    bs, bt = _vectors(beta_s, beta_t, one_d=True)
    check_magnitude("beta_s", bs, MAX_ENTRY)
    check_magnitude("beta_t", bt, MAX_ENTRY)
    check_magnitude("sigma", check_positive("sigma", sigma, allow_zero=True), MAX_ENTRY)
    key = _seed_key(seed)
    n = check_int("n", n, 1)
    reduce = check_bool("reduce", reduce)
    if not isinstance(method, str) or method not in ("exact", "sliced"):
        raise ValueError(f"method must be 'exact' or 'sliced' (got {method!r})")
    dim = (3 if reduce else bs.size + 1)
    check_budget("n", n, 8 * (3 * n * n if method == "exact" else 4 * n * dim))
    rng = np.random.default_rng([*key, 7])
    if reduce:
        Q = reduce_to_span(bs, bt)
        bs_r, bt_r = Q.T @ bs, Q.T @ bt
    else:
        bs_r, bt_r = bs, bt
    a = joint_samples(bs_r, sigma, n, rng)
    b = joint_samples(bt_r, sigma, n, rng)
    return wasserstein1(a, b, method=method, seed=key[0])
