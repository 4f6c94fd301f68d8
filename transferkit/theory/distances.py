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

from .._validate import as_array, check_array, check_broadcast, check_int, check_positive

__all__ = ["gaussian_w2", "joint_covariance", "joint_samples", "kl_divergence", "kl_linear", "kl_monte_carlo", "reduce_to_span", "wasserstein1", "wasserstein1_linear", "w1_bounds_linear"]


# ---------------------------------------------------------------------------
# KL divergence (exact, Eq. 31) and its Monte Carlo check
# ---------------------------------------------------------------------------

def _vectors(beta_s, beta_t):
    bs = np.asarray(beta_s, float)
    bt = np.asarray(beta_t, float)
    if bs.ndim < 1 or bt.ndim < 1 or bs.shape[-1] != bt.shape[-1]:
        raise ValueError("beta_s and beta_t must be vectors of the same dimension d "
                         f"(got shapes {bs.shape} and {bt.shape})")
    if not (np.isfinite(bs).all() and np.isfinite(bt).all()):
        raise ValueError("beta_s and beta_t must be finite")
    return bs, bt


#: Largest magnitude accepted for the entries of the covariance helpers
#: (:func:`joint_covariance`, :func:`gaussian_w2`): their products and sums then stay far
#: from the float range (1e308), so no overflow turns into ``inf - inf``.
MAX_ENTRY = 1e100

#: Largest teacher norm accepted by :func:`kl_linear` (``norm_s ** 2`` stays finite).
MAX_NORM = 1e150


def _bounded(name, a, limit=MAX_ENTRY):
    """``ValueError`` naming ``name`` when an entry of ``a`` exceeds ``limit`` in magnitude."""
    if a.size and np.max(np.abs(a)) > limit:
        raise ValueError(f"{name} must have entries of magnitude <= {limit:g} "
                         f"(got {float(np.max(np.abs(a)))!r})")
    return a


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
    num = ((bs - bt) ** 2).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(s > 0, num / (2 * np.where(s > 0, s, 1.0) ** 2),
                       np.where(num > 0, np.inf, 0.0))
        out = np.where(num == 0, 0.0, out)  # 0, not 0/0, where sigma ** 2 underflows
    return float(out) if np.ndim(out) == 0 else out


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
        _bounded(name, v, MAX_NORM)
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
    beta = np.asarray(beta, float)
    if beta.ndim != 1 or not np.isfinite(beta).all():
        raise ValueError("beta must be a finite 1-d vector")
    check_positive("sigma", sigma, allow_zero=True)
    n = check_int("n", n, 1)
    x = rng.standard_normal((n, beta.size))
    y = x @ beta + sigma * rng.standard_normal(n)
    return np.column_stack([x, y])


def kl_monte_carlo(beta_s, beta_t, sigma, n=100_000, seed=0):
    r"""Monte Carlo estimate of :math:`\mathbb E_{p_s}\log(p_s/p_t)` and its standard error.

    Samples :math:`(x, y)\sim p_s` and averages
    :math:`\log p_s(y|x) - \log p_t(y|x) = [(y-\beta_t^\top x)^2 - (y-\beta_s^\top x)^2]/2\sigma^2`
    (the input densities cancel).  An independent check of Eq. 31 (no algebra shared
    with :func:`kl_divergence`).
    """
    bs, bt = _vectors(beta_s, beta_t)
    if bs.ndim != 1 or bt.ndim != 1:
        raise ValueError("beta_s and beta_t must be 1-d vectors")
    check_positive("sigma", sigma)
    xy = joint_samples(bs, sigma, n, np.random.default_rng(seed))
    x, y = xy[:, :-1], xy[:, -1]
    llr = ((y - x @ bt) ** 2 - (y - x @ bs) ** 2) / (2 * sigma ** 2)
    return float(llr.mean()), float(llr.std(ddof=1) / math.sqrt(n))


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
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    a = a[:, None] if a.ndim == 1 else a
    b = b[:, None] if b.ndim == 1 else b
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or len(a) < 1 or len(b) < 1:
        raise ValueError(f"a and b must be non-empty samples of the same dimension "
                         f"(got shapes {a.shape} and {b.shape})")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("a and b must be finite")
    if method == "exact":
        M = ot.dist(a, b, metric="euclidean")
        wa = np.full(len(a), 1.0 / len(a))
        wb = np.full(len(b), 1.0 / len(b))
        return float(ot.emd2(wa, wb, M, numItermax=10_000_000))
    if method == "sliced":
        check_int("n_projections", n_projections, 1)
        return float(ot.sliced_wasserstein_distance(a, b, n_projections=n_projections, p=1,
                                                    seed=seed))
    raise ValueError(f"method must be 'exact' or 'sliced' (got {method!r})")


def reduce_to_span(beta_s, beta_t) -> np.ndarray:
    r"""Orthonormal basis ``(d, k)``, :math:`k\le 2`, of :math:`\mathrm{span}(\beta_s, \beta_t)`.

    Both joint laws are the product of the same :math:`\mathcal N(0, I_{d-k})` on the
    orthogonal complement and a law of :math:`(Q^\top x, y)\in\mathbb R^{k+1}`, so
    :math:`W_1(p_s, p_t) = W_1` of the :math:`(k+1)`-dimensional marginals: the coupling
    that is the identity on the complement gives :math:`\le`, and a 1-Lipschitz test
    function of :math:`(Q^\top x, y)` is 1-Lipschitz in :math:`(x, y)`, which gives
    :math:`\ge`.
    """
    bs, bt = _vectors(beta_s, beta_t)
    B = np.stack([bs, bt], axis=1)
    U, s, _ = np.linalg.svd(B, full_matrices=False)
    keep = s > 1e-12 * max(s.max(), 1e-300)
    return U[:, keep]


def joint_covariance(beta, sigma, Q) -> np.ndarray:
    r"""Covariance of :math:`(Q^\top x, y)`: :math:`\begin{pmatrix} I & Q^\top\beta\\ \beta^\top Q & \|\beta\|^2+\sigma^2\end{pmatrix}`.

    ``beta`` a vector ``(d,)``, ``sigma >= 0`` and ``Q`` a ``(d, k)`` matrix (an orthonormal
    basis, :func:`reduce_to_span`); entries of magnitude at most :data:`MAX_ENTRY`
    (``1e100``), beyond which :math:`Q^\top\beta` and :math:`\|\beta\|^2` may overflow.
    """
    beta = _bounded("beta", check_array("beta", beta, 1))
    Q = _bounded("Q", check_array("Q", Q, 2))
    sigma = check_positive("sigma", sigma, allow_zero=True)
    _bounded("sigma", np.asarray(sigma))
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
        S = _bounded(name, check_array(name, S, 2))
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
    bs, bt = _vectors(beta_s, beta_t)
    check_positive("sigma", sigma, allow_zero=True)
    Q = reduce_to_span(bs, bt)
    Ss, St = joint_covariance(bs, sigma, Q), joint_covariance(bt, sigma, Q)
    c = math.sqrt(2 / math.pi)
    upper = min(c * float(np.linalg.norm(bs - bt)), gaussian_w2(Ss, St))
    U = _sphere(Q.shape[1] + 1)
    ss = np.sqrt(np.einsum("mi,ij,mj->m", U, Ss, U))
    st = np.sqrt(np.einsum("mi,ij,mj->m", U, St, U))
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
    bs, bt = _vectors(beta_s, beta_t)
    check_positive("sigma", sigma, allow_zero=True)
    key = [int(k) for k in np.atleast_1d(seed)]
    if any(k < 0 for k in key):
        raise ValueError(f"seed must be an integer >= 0 or a sequence of them (got {seed!r})")
    rng = np.random.default_rng([*key, 7])
    if reduce:
        Q = reduce_to_span(bs, bt)
        bs_r, bt_r = Q.T @ bs, Q.T @ bt
    else:
        bs_r, bt_r = bs, bt
    a = joint_samples(bs_r, sigma, n, rng)
    b = joint_samples(bt_r, sigma, n, rng)
    return wasserstein1(a, b, method=method, seed=key[0])
