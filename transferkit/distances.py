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
leaves transfer unchanged.  :func:`simulate_pairs` simulates transfer for such pairs of
tasks and :func:`rank_correlation` measures how well a distance ranks them.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import ot
from scipy import stats

from . import theory
from ._validate import check_int, check_positive
from .models import init_deep_linear
from .simulate import simulate_grid
from .trainers import feature_subspace, gradient_descent, population_objective

__all__ = ["distance_figure", "gaussian_w2", "joint_covariance", "joint_samples", "kl_divergence",
           "kl_linear", "opposite_sign_pairs",
           "kl_monte_carlo", "rank_correlation", "reduce_to_span", "simulate_pairs",
           "wasserstein1", "wasserstein1_linear", "w1_bounds_linear"]


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


def _sigma(sigma, allow_zero=False):
    s = np.asarray(sigma, float)
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
    return float(out) if np.ndim(out) == 0 else out


def kl_linear(theta, sigma, norm_s=1.0, norm_t=1.0):
    r"""Eq. 31 in terms of the angle and the norms of the teachers.

    .. math::

        D_{KL}(p_s\|p_t) = \frac{r_s^2 + r_t^2 - 2 r_s r_t\cos\theta}{2\sigma^2},
        \qquad r_s = \|\beta_s\|,\ r_t = \|\beta_t\|.

    For unit teachers, :math:`(1-\cos\theta)/\sigma^2`.  Broadcasts like a ufunc.
    """
    th = np.asarray(theta, float)
    if not np.isfinite(th).all() or np.any((th < 0) | (th > np.pi)):
        raise ValueError(f"theta must be in [0, pi] (got {theta!r})")
    rs, rt = np.asarray(norm_s, float), np.asarray(norm_t, float)
    for name, v in (("norm_s", rs), ("norm_t", rt)):
        if not np.isfinite(v).all() or np.any(v < 0):
            raise ValueError(f"{name} must be a finite number >= 0 (got {v!r})")
    s = _sigma(sigma)
    num = np.clip(rs ** 2 + rt ** 2 - 2 * rs * rt * np.cos(th), 0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(s > 0, num / (2 * np.where(s > 0, s, 1.0) ** 2),
                       np.where(num > 0, np.inf, 0.0))
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
    r"""Covariance of :math:`(Q^\top x, y)`: :math:`\begin{pmatrix} I & Q^\top\beta\\ \beta^\top Q & \|\beta\|^2+\sigma^2\end{pmatrix}`."""
    beta = np.asarray(beta, float)
    c = Q.T @ beta
    k = Q.shape[1]
    S = np.eye(k + 1)
    S[:k, k] = S[k, :k] = c
    S[k, k] = beta @ beta + sigma ** 2
    return S


def gaussian_w2(S1, S2) -> float:
    r""":math:`W_2` between centred Gaussians (Bures): :math:`\mathrm{tr}\,S_1 + \mathrm{tr}\,S_2 - 2\,\mathrm{tr}(S_1^{1/2}S_2S_1^{1/2})^{1/2}`."""
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


# ---------------------------------------------------------------------------
# rank correlation with a bootstrap interval
# ---------------------------------------------------------------------------

def rank_correlation(x, y, n_boot: int = 2000, level: float = 0.95, seed: int = 0):
    r"""Spearman's :math:`\rho` between ``x`` and ``y`` with a paired bootstrap interval.

    The interval resamples the *pairs* (``scipy.stats.bootstrap``, percentile method,
    ``n_boot`` resamples).  Returns ``(rho, low, high)``.
    """
    x = np.asarray(x, float).ravel()
    y = np.asarray(y, float).ravel()
    if x.shape != y.shape or x.size < 3:
        raise ValueError("x and y must have the same length >= 3")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x and y must be finite")
    check_int("n_boot", n_boot, 10)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1) (got {level!r})")
    rho = float(stats.spearmanr(x, y).statistic)

    def stat(a, b):
        return stats.spearmanr(a, b).statistic

    res = stats.bootstrap((x, y), stat, paired=True, vectorized=False, n_resamples=n_boot,
                          confidence_level=level, method="percentile",
                          random_state=np.random.default_rng(seed))
    ci = res.confidence_interval
    return rho, float(ci.low), float(ci.high)


# ---------------------------------------------------------------------------
# pairs of tasks: transfer simulated, distances computed
# ---------------------------------------------------------------------------

def _scaled_pretrained(P, norm, depth, seed, alpha, rcond, loss_tol):
    """Networks of ``P`` re-pretrained on the population loss of ``norm * beta_s``."""
    if norm == 1.0:
        return P
    B, d = P.beta_s.shape
    W0 = init_deep_linear(d, depth, alpha,
                          [np.random.default_rng([int(seed), b, 0, 1]) for b in range(B)],
                          device=P.beta_s.device, dtype=P.beta_s.dtype)
    Ws, info = gradient_descent(W0, population_objective(norm * P.beta_s), loss_tol=loss_tol,
                                desc=f"pretraining |beta_s| = {norm:g}")
    U, S, rank, svals = feature_subspace(Ws, rcond)
    return dataclasses.replace(P, weights=Ws, U=U, S=S, rank=rank, feature_svals=svals,
                               info=info)


def simulate_pairs(d, gammas, thetas, norms, sigma, depth=2, draws=20, seed=0, alpha=1e-5,
                   w1_samples=1000, w1_repeats=5, rcond=1e-3, loss_tol=1e-10, progress=None) -> dict:
    r"""Transferability and dataset distances for pairs of linear tasks (paper 000, Fig. 4).

    A pair is a unit target :math:`\beta_t` and a source :math:`\beta_s = r\,u` with
    :math:`\|u\| = 1`, :math:`u^\top\beta_t = \cos\theta`, :math:`\theta\in[0,\pi]`,
    :math:`r` in ``norms``; the target set has :math:`n = \gamma d` points with noise
    ``sigma`` and both tasks have label noise ``sigma`` (so that the KL is finite).
    A deep linear network is pretrained on the population source loss (from scale
    ``alpha``), its last layer re-fitted on the target sample (linear transfer) and
    compared with scratch training on the same sample (:func:`~transferkit.simulate.simulate_grid`).

    Returns
    -------
    dict with ``thetas, norms, gammas, n``; ``T`` (per-draw transferability,
    ``(len(norms), len(gammas), len(thetas), draws)``), ``T_theory`` (exact finite-size
    value, :func:`~transferkit.theory.linear_transferability_finite`, broadcast to
    ``(len(norms), len(gammas), len(thetas))``), ``kl`` (Eq. 31) and ``w1``, ``w1_lower``,
    ``w1_upper`` (``(len(norms), len(thetas))``; ``w1`` is the mean of ``w1_repeats``
    estimates, each on ``w1_samples`` fresh points per law, kept in ``w1_draws``),
    ``w1_null`` (the estimator between two independent samples of the same target law,
    ``w1_repeats`` times: its bias scale), ``scratch`` and ``linear`` risks.
    """
    check_int("d", d, 2)
    check_positive("sigma", sigma)
    norms = np.atleast_1d(np.asarray(norms, float))
    if norms.ndim != 1 or not np.all(np.isfinite(norms) & (norms > 0)):
        raise ValueError(f"norms must be finite numbers > 0 (got {norms!r})")
    sim_sc = simulate_grid(d, gammas, thetas, sigma, depth=depth, draws=draws, seed=seed,
                           alpha=alpha, methods=("scratch",), rcond=rcond, loss_tol=loss_tol,
                           progress=progress)
    P = sim_sc["pretrained"]
    gammas, thetas, ns = sim_sc["gammas"], sim_sc["thetas"], sim_sc["n"]
    R, G, T = len(norms), len(gammas), len(thetas)
    lin = np.empty((R, G, T, draws))
    for i, r in enumerate(norms):
        Pr = _scaled_pretrained(P, float(r), depth, seed, alpha, rcond, 1e-12)
        res = simulate_grid(d, gammas, thetas, sigma, depth=depth, draws=draws, seed=seed,
                            alpha=alpha, methods=("linear",), rcond=rcond, pretrained=Pr,
                            progress=progress)
        lin[i] = res["linear"]
    scratch = np.broadcast_to(sim_sc["scratch"], lin.shape)
    T_th = theory.linear_transferability_finite(ns[:, None], d, thetas[None, :], sigma)
    # distances: the target beta_t = cos(theta) u + sin(theta) nu, the source r u (draw 0)
    u = P.beta_s[0].cpu().numpy()
    nu = P.nu[0].cpu().numpy()
    kl = kl_linear(thetas[None, :], sigma, norm_s=norms[:, None])
    check_int("w1_repeats", w1_repeats, 2)
    w1 = np.empty((R, T, w1_repeats))
    lo = np.empty((R, T))
    hi = np.empty((R, T))
    for i, r in enumerate(norms):
        for j, th in enumerate(thetas):
            bt = math.cos(th) * u + math.sin(th) * nu
            w1[i, j] = [wasserstein1_linear(r * u, bt, sigma, n=w1_samples,
                                            seed=[seed, i, j, k]) for k in range(w1_repeats)]
            lo[i, j], hi[i, j] = w1_bounds_linear(r * u, bt, sigma)
    w1_null = np.array([wasserstein1_linear(nu, nu, sigma, n=w1_samples,
                                            seed=[seed, 10**6, k]) for k in range(w1_repeats)])
    return {"d": d, "sigma": sigma, "depth": depth, "draws": draws, "alpha": alpha,
            "gammas": gammas, "thetas": thetas, "norms": norms, "n": ns,
            "scratch": scratch, "linear": lin, "T": scratch - lin,
            "T_theory": np.broadcast_to(T_th, (R, G, T)),
            "scratch_minnorm_dist": sim_sc["scratch_minnorm_dist"],
            "scratch_converged": sim_sc["scratch_converged"],
            "kl": kl, "w1": w1.mean(-1), "w1_draws": w1, "w1_lower": lo, "w1_upper": hi, "w1_null": w1_null,
            "w1_samples": w1_samples}


def opposite_sign_pairs(distance, T_mean, T_se, critical):
    r"""Pairs of tasks where the *farther* one transfers positively and the nearer negatively.

    Thm 2.2 in numbers: indices ``(i, j)`` (into the flattened arrays) with
    ``distance[i] >= distance[j]``, :math:`\mathcal T_i > c\,\mathrm{se}_i` and
    :math:`\mathcal T_j < -c\,\mathrm{se}_j` (both signs significant at the critical value
    ``c``).  Returns an array ``(k, 2)``.
    """
    dist = np.asarray(distance, float).ravel()
    m = np.asarray(T_mean, float).ravel()
    se = np.asarray(T_se, float).ravel()
    pos = np.flatnonzero(m > critical * se)
    neg = np.flatnonzero(m < -critical * se)
    pairs = [(i, j) for i in pos for j in neg if dist[i] >= dist[j]]
    return np.array(pairs, dtype=int).reshape(-1, 2)


def distance_figure(res: dict, agree, gamma_index: int = 0, title: str = "Fig. 4"):
    r"""Transferability against :math:`D_{KL}` (a) and :math:`W_1` (b), theory beside simulation.

    One point per pair :math:`(r, \theta)` at the sample ratio ``gammas[gamma_index]``:
    filled markers are simulated means (error bars: one standard error), open markers
    the exact finite-size theory; colours are the source norms :math:`r`.  In (b) the
    horizontal bars span the closed-form bounds of :func:`w1_bounds_linear` and the grey
    band is the estimator's bias scale (its value between two samples of the same law).
    """
    import matplotlib.pyplot as plt

    g = gamma_index
    norms, thetas = res["norms"], res["thetas"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True, layout="constrained")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    mean, se = agree.mean[:, g], agree.se[:, g]
    for ax, key, label in ((axes[0], "kl", r"$D_{KL}(p_s\|p_t)$ (Eq. 31)"),
                           (axes[1], "w1", r"$\widehat W_1(p_s, p_t)$ (POT, exact EMD)")):
        for i, r in enumerate(norms):
            x = np.broadcast_to(res[key], (len(norms), len(thetas)))[i]
            c = colors[i % len(colors)]
            if key == "w1":
                for xl, xu, yv in zip(res["w1_lower"][i], res["w1_upper"][i],
                                      res["T_theory"][i, g]):
                    ax.plot([xl, xu], [yv, yv], color=c, lw=0.8, alpha=0.5)
            ax.errorbar(x, mean[i], yerr=se[i], fmt="o", color=c, ms=5,
                        label=fr"simulation, $\|\beta_s\| = {r:g}$")
            ax.plot(x, res["T_theory"][i, g], "o", mfc="none", mec="k", ms=8,
                    label="theory" if i == 0 else None)
        ax.axhline(0, color="0.5", lw=0.8)
        ax.set_xlabel(label)
    axes[1].axvspan(0, float(np.max(res["w1_null"])), color="0.85", zorder=0,
                    label="estimator bias scale")
    axes[0].set_xscale("symlog", linthresh=1.0)
    axes[0].set_xlim(left=0)
    axes[0].set_ylabel(r"transferability $\mathcal{T}$")
    axes[0].set_title(f"(a) KL, $\\gamma = {res['gammas'][g]:g}$")
    axes[1].set_title(f"(b) Wasserstein-1, $\\gamma = {res['gammas'][g]:g}$")
    axes[1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(title)
    return fig
