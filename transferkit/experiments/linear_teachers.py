r"""Paper 001, Secs. 4-6: simulations of fine-tuning with linear teachers (eigen-alignment, depth,
frozen layers, a wide two-layer ReLU network in the NTK regime)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.sparse.linalg import LinearOperator, eigsh

from .. import models
from .._validate import (MAX_INT, check_bool, check_budget_among, check_int, check_one,
                         check_positive, check_values)
from ..models.deep_linear import (
    balanced_weights,
    deep_finetune_sim,
    end_to_end,
    frozen_first_layer_gd,
    pretrain_gd,
)
from ..models.device import as_tensor, default_device
from ..models.relu import init_ntk, train_ntk
from ..stats import mean_se, risk_error_bound
from ..streams import keyed_rng, unit_rows
from ..sweep import Grid, run
from ..theory.linear_teachers import (
    check_eigenvalues,
    cor62_term,
    cor63_leading_term,
    deep_finetune_predictor,
    finetune_predictor,
    frozen_predictor,
    null_space_projection,
    ramp_loss,
)
from ..theory.ntk import deviation_bound, gram
from .deep_linear import check_alpha

__all__ = ["FIG1_EIGEN_ALIGN", "FIG2_DEPTH", "FIG3_FROZEN", "EigenAlignPreset", "DepthPreset",
           "FrozenPreset", "spiked_spectrum", "eigen_align_sim", "depth_alpha_sim", "scaling_sim",
           "frozen_sim", "eigen_align_cell", "depth_alpha_cell", "scaling_cell", "frozen_cell",
           "EigenAlignResult", "DepthAlphaResult", "ScalingResult", "FrozenResult",
           "SEC6_NTK", "NtkFinetunePreset", "NtkFinetuneResult", "ntk_finetune_sim",
           "ntk_finetune_cell"]


@dataclass(frozen=True)
class EigenAlignPreset:
    r"""Parameters of Fig. 1 of paper 001 (top vs bottom eigen-align) at one scale.

    The presets are :data:`FIG1_EIGEN_ALIGN`; the chapter notebook
    ``notebooks/linear_teachers.py`` passes them to :func:`spiked_spectrum`,
    :func:`eigen_align_sim` and :func:`transferkit.theory.linear_teachers.g_function`.

    Attributes
    ----------
    d : int
        Input dimension (paper 001, Sec. 4.2: 1000).
    m : int
        Number of large eigenvalues of :math:`\Sigma` (Sec. 4.2, caption of Fig. 1: 50).
    draws : int
        Draws (designs and teachers) per sample size (ours; the paper does not state it).
    ns : tuple of int
        Target sample sizes :math:`n < d` (ours; the paper does not state its grid).
    top, bottom : float
        The :math:`m` large and the :math:`d - m` small eigenvalues of :math:`\Sigma`
        (Sec. 4.2, caption of Fig. 1: 1.5 and 0.3).
    norm : float
        :math:`\|\theta_T-\theta_S\|` of both settings (ours; Sec. 4.2 says only that it is
        the same in both).
    c : float
        The constant of :math:`g` in the bound of Thm 4.2 (ours; the theorem only says that
        one exists).
    delta : float
        The confidence :math:`\delta\ge 1` of Thm 4.2, the bound holding with probability
        :math:`1-e^{-\delta}` (ours: :math:`\log 100`, probability 99 %).
    seed : int
        Base seed of the random streams (ours).
    """

    d: int                          # paper 001, Sec. 4.2
    m: int                          # paper 001, Sec. 4.2, caption of Fig. 1
    draws: int                      # ours (not stated)
    ns: tuple                       # ours (not stated)
    top: float = 1.5                # paper 001, Sec. 4.2, caption of Fig. 1
    bottom: float = 0.3             # paper 001, Sec. 4.2, caption of Fig. 1
    norm: float = 1.0               # ours (Sec. 4.2: "the same norm" in both settings)
    c: float = 3.0                  # ours (Thm 4.2: "there exists a constant c > 0")
    delta: float = float(np.log(100))   # ours (Thm 4.2 holds for every delta >= 1)
    seed: int = 0                   # ours


#: The parameters of Fig. 1 of paper 001 at each ``TRANSFERKIT_SCALE``.
#:
#: ``paper``: d = 1000, m = 50 eigenvalues 1.5 and the rest 0.3 (paper 001, Sec. 4.2 and the
#: caption of Fig. 1).  The paper states neither its draws nor its n grid nor the common norm
#: of theta_T - theta_S nor the constant c and the confidence delta of Thm 4.2; ours (stated
#: in the chapter): 20 draws per n, n = 10, ..., 950 (n < d: the
#: under-determined regression of Sec. 4.1, Assumption 3.1), norm 1, c = 3
#: (the smallest constant with 3 max(sqrt x, x) >= 2 sqrt x + x, the leading term of the
#: covariance deviation for Gaussian data) and delta = log 100; seed 0.
#: ``smoke``: ours, the same pipeline small enough for the tests (d = 200, m = 10, 10 draws,
#: six sample sizes).
FIG1_EIGEN_ALIGN = {
    "paper": EigenAlignPreset(d=1000, m=50, draws=20,
                              ns=(10, 25, 50, 100, 200, 300, 400, 600, 800, 950)),
    "smoke": EigenAlignPreset(d=200, m=10, draws=10, ns=(5, 20, 50, 100, 150, 190)),
}


@dataclass(frozen=True)
class DepthPreset:
    r"""Parameters of Fig. 2 of paper 001 (fine-tuning deep linear networks) at one scale.

    The presets are :data:`FIG2_DEPTH`; the chapter notebook ``notebooks/linear_teachers.py``
    passes them to :func:`depth_alpha_sim` (panel a) and :func:`scaling_sim` (panel b).

    Attributes
    ----------
    d : int
        Input dimension and width (ours; the paper does not state it).
    draws : int
        Draws (teachers and designs) per point (ours; not stated).
    depths : tuple of int
        Depths :math:`L` of panel (a) (ours; the text of the paper does not list them).
    alphas : tuple of float
        Scales :math:`\alpha` of :math:`\theta_T = \alpha\theta_S + \epsilon`, panel (a)
        (ours; not stated).
    scales : tuple of float
        Scaling factors :math:`a` of panel (b) (ours; not stated).
    depth_b : int
        Depth of panel (b) (caption of Fig. 2: a 7-layer model).
    noise_norm : float
        :math:`\|\epsilon\|` in panel (a) (Sec. 5.3: approximately
        :math:`0.5\|\theta_S\|`, with :math:`\|\theta_S\| = 1`).
    angle_dist : float
        :math:`\|\hat\theta_T-\hat\theta_S\|` in panel (b) (Sec. 5.3: approximately 0.1).
    seed_a, seed_b : int
        Base seeds of the random streams of panels (a) and (b) (ours).
    n : int
        The number of target samples, :math:`d/10` (caption of Fig. 2); a property.
    """

    d: int                          # ours (not stated)
    draws: int                      # ours (not stated)
    depths: tuple                   # ours (not listed)
    alphas: tuple                   # ours (not stated)
    scales: tuple                   # ours (not stated)
    depth_b: int = 7                # paper 001, caption of Fig. 2
    noise_norm: float = 0.5         # paper 001, Sec. 5.3
    angle_dist: float = 0.1         # paper 001, Sec. 5.3
    seed_a: int = 1                 # ours
    seed_b: int = 2                 # ours

    @property
    def n(self) -> int:
        """The number of target samples, ``d // 10`` (paper 001, caption of Fig. 2: d/10)."""
        return self.d // 10


#: The parameters of Fig. 2 of paper 001 at each ``TRANSFERKIT_SCALE``.
#:
#: ``paper``: n = d/10 target samples and depth 7 in panel (b) (paper 001, caption of Fig. 2),
#: the noise norm 0.5 of panel (a) and the distance 0.1 of the unit teachers in panel (b)
#: (Sec. 5.3, both "approximately").  The paper states neither d nor the draws nor the grids;
#: ours (stated in the chapter): d = 100, 20 draws, depths 1, 2, 3, 5, 7, alpha = 0.5, ..., 4
#: (8 values), a = 0.25, 0.5, 1, 2, 4, 8; seeds 1 and 2.
#: ``smoke``: ours, the same pipeline small enough for the tests (d = 30, 10 draws,
#: depths 1, 2, 7, four alphas, three scales).
FIG2_DEPTH = {
    "paper": DepthPreset(d=100, draws=20, depths=(1, 2, 3, 5, 7),
                         alphas=tuple(np.linspace(0.5, 4, 8).tolist()),
                         scales=(0.25, 0.5, 1.0, 2.0, 4.0, 8.0)),
    "smoke": DepthPreset(d=30, draws=10, depths=(1, 2, 7), alphas=(0.5, 1.0, 2.0, 4.0),
                         scales=(0.5, 1.0, 4.0)),
}


@dataclass(frozen=True)
class FrozenPreset:
    r"""Parameters of Fig. 3 of paper 001 (frozen first layer) at one scale.

    The presets are :data:`FIG3_FROZEN`; the chapter notebook ``notebooks/linear_teachers.py``
    passes them to :func:`frozen_sim` (two-layer networks, paper 001, Sec. 5.3).

    Attributes
    ----------
    d : int
        Input dimension and width (ours; the paper does not state it).
    draws : int
        Draws (teachers and designs) per sample size (ours; not stated).
    ns : tuple of int
        Target sample sizes (ours; not stated).
    cos_angle : float
        :math:`\cos\angle(\theta_S, \theta_T)` of the unit teachers (ours; not stated).
    seed : int
        Base seed of the random streams (ours).
    """

    d: int                          # ours (not stated)
    draws: int                      # ours (not stated)
    ns: tuple                       # ours (not stated)
    cos_angle: float = 0.7          # ours (not stated)
    seed: int = 3                   # ours


#: The parameters of Fig. 3 of paper 001 at each ``TRANSFERKIT_SCALE``.
#:
#: ``paper``: the paper states only the architecture (two-layer linear networks, Sec. 5.3), not
#: d, the draws, the n grid or the angle of the teachers; ours (stated in the chapter): d = 100,
#: 20 draws, n = 5, 10, 20, ..., 70 (up to 0.7 d: plain gradient descent slows down like the
#: condition number of X X^T as n approaches d), cos = 0.7; seed 3.
#: ``smoke``: ours, the same pipeline small enough for the tests (d = 30, 10 draws, four
#: sample sizes).
FIG3_FROZEN = {
    "paper": FrozenPreset(d=100, draws=20, ns=(5, 10, 20, 30, 40, 50, 60, 70)),
    "smoke": FrozenPreset(d=30, draws=10, ns=(3, 10, 15, 20)),
}


@dataclass(frozen=True)
class EigenAlignResult:
    r"""The result of :func:`eigen_align_sim` (paper 001, Fig. 1).

    Attributes
    ----------
    ns : ndarray of int
        The target sample sizes.
    settings : tuple of str
        ``("top", "bottom")``: the first axis of every array ("Top Eigen Align":
        :math:`P_{\le m}(\theta_T-\theta_S) = 0`; "Bottom Eigen Align":
        :math:`P_{> m}(\theta_T-\theta_S) = 0`).
    risk_gd : ndarray, shape (2, len(ns), draws)
        Population risk of the weights trained by gradient descent.
    risk_thm41 : ndarray, shape (2, len(ns), draws)
        Thm 4.1 (Eq. 2) on the same designs.
    opt_err : ndarray, shape (2, len(ns), draws)
        Certified bound on ``|risk_gd - risk_thm41|`` from the stopping rule.
    cov_dev : ndarray, shape (2, len(ns), draws)
        :math:`\|\tilde\Sigma-\Sigma\|` of the design (the same for both settings).
    converged : ndarray of bool, shape (2, len(ns), draws)
        Whether gradient descent reached its tolerance.
    """

    ns: np.ndarray
    settings: tuple
    risk_gd: np.ndarray
    risk_thm41: np.ndarray
    opt_err: np.ndarray
    cov_dev: np.ndarray
    converged: np.ndarray


@dataclass(frozen=True)
class DepthAlphaResult:
    r"""The result of :func:`depth_alpha_sim` (paper 001, Fig. 2a).

    Attributes
    ----------
    depths : ndarray of int
        The network depths :math:`L`.
    alphas : ndarray
        The scales :math:`\alpha` of :math:`\theta_T = \alpha\theta_S + \epsilon`.
    risk_gd : ndarray, shape (len(depths), len(alphas), draws)
        Population risk :math:`\|\beta-\theta_T\|^2` after gradient descent.
    risk_thm52 : ndarray, shape (len(depths), len(alphas), draws)
        Thm 5.2 (depth-:math:`L` fine-tuning predictor).
    risk_thm41 : ndarray, shape (len(alphas), draws)
        Thm 4.1 (the linear model, depth 1).
    risk_eq6 : ndarray, shape (len(alphas), draws)
        The :math:`L\to\infty` limit (Eq. 6).
    converged : ndarray of bool, shape (len(depths), len(alphas), draws)
        Whether gradient descent reached its tolerance.
    """

    depths: np.ndarray
    alphas: np.ndarray
    risk_gd: np.ndarray
    risk_thm52: np.ndarray
    risk_thm41: np.ndarray
    risk_eq6: np.ndarray
    converged: np.ndarray


@dataclass(frozen=True)
class ScalingResult:
    r"""The result of :func:`scaling_sim` (paper 001, Fig. 2b).

    Attributes
    ----------
    scales : ndarray
        The scales :math:`a`.
    scaled : tuple of str
        ``("target", "source")``: the first axis of every array (which teacher is scaled).
    risk_gd, risk_thm52, risk_thm41, risk_eq6 : ndarray, shape (2, len(scales), draws)
        Population risks of gradient descent, Thm 5.2, Thm 4.1 and Eq. 6.
    converged : ndarray of bool, shape (2, len(scales), draws)
        Whether gradient descent reached its tolerance.
    """

    scales: np.ndarray
    scaled: tuple
    risk_gd: np.ndarray
    risk_thm52: np.ndarray
    risk_thm41: np.ndarray
    risk_eq6: np.ndarray
    converged: np.ndarray


@dataclass(frozen=True)
class FrozenResult:
    r"""The result of :func:`frozen_sim` (paper 001, Fig. 3).

    Attributes
    ----------
    ns : ndarray of int
        The target sample sizes.
    risk_frozen : ndarray, shape (len(ns), draws)
        Frozen first layer, last layer fitted: the minimum-norm least-squares limit.
    risk_frozen_gd : ndarray, shape (len(ns), draws)
        The same by gradient descent, for ``frozen_gd_steps`` steps.
    risk_vanilla : ndarray, shape (len(ns), draws)
        Trained from scratch from a small initialisation.
    risk_finetune : ndarray, shape (len(ns), draws)
        All layers fine-tuned from the pretrained weights.
    risk_thm55 : ndarray, shape (len(ns), draws)
        Thm 5.5 (the frozen-layer predictor).
    risk_thm52 : ndarray, shape (len(ns), draws)
        Thm 5.2 at depth 2 (fine-tuning).
    risk_scratch_theory : ndarray, shape (len(ns),)
        :math:`(1-n/d)\|\theta_T\|^2`, the expectation for :math:`X^+y`.
    rank : ndarray of int, shape (draws,)
        Effective rank of the frozen features.
    converged : ndarray of bool, shape (len(ns), draws)
        Whether scratch training and fine-tuning both converged.
    frozen_gd_steps : ndarray of int, shape (len(ns),)
        Steps of the frozen gradient descent (those fine-tuning needed).
    """

    ns: np.ndarray
    risk_frozen: np.ndarray
    risk_frozen_gd: np.ndarray
    risk_vanilla: np.ndarray
    risk_finetune: np.ndarray
    risk_thm55: np.ndarray
    risk_thm52: np.ndarray
    risk_scratch_theory: np.ndarray
    rank: np.ndarray
    converged: np.ndarray
    frozen_gd_steps: np.ndarray


def _run_kw(run_kwargs, desc):
    kw = dict(run_kwargs)
    kw.setdefault("desc", desc)
    return kw


def _checked_run(draws, seed, loss_tol, step_scale=None):
    """The settings every simulation of this chapter takes, checked before any work:
    ``draws`` >= 1, ``seed`` >= 0, ``loss_tol`` > 0 and ``step_scale`` in (0, 2) (the
    step in units of the inverse curvature bound, :func:`~transferkit.models.deep_linear.gradient_descent`).
    Returns ``(draws, seed)`` as ``int``."""
    draws = check_int("draws", draws, 1)
    seed = check_int("seed", seed, 0)
    check_positive("loss_tol", loss_tol)
    if step_scale is not None:
        step = check_positive("step_scale", step_scale)
        if step >= 2:
            raise ValueError(f"step_scale must be in (0, 2) (got {step_scale!r})")
    return draws, seed


def _checked_sizes(name, values, d):
    """Sample sizes ``values`` (a number or a non-empty 1-d sequence): integers in
    ``[1, d - 1]`` (``n < d``: the overparameterised regime of paper 001's theorems)."""
    v = check_values(name, values, 1, max(d - 1, 1), integer=True)
    if v.ndim > 1 or v.size == 0 or d < 2:
        raise ValueError(f"{name} must be a non-empty 1-d sequence of integers in [1, d - 1] "
                         f"(got {values!r}, d = {d})")
    return v


def spiked_spectrum(d, m, top=1.5, bottom=0.3):
    r"""Eigenvalues of the target covariance of Fig. 1 (paper 001, Sec. 4.2): ``m`` equal to
    ``top`` and ``d - m`` equal to ``bottom`` (decreasing)."""
    d = check_int("d", d, 2)
    m = check_int("m", m, 1)
    if m >= d:
        raise ValueError(f"m must be in 1..d-1 (got m = {m}, d = {d})")
    top, bottom = check_positive("top", top), check_positive("bottom", bottom)
    if bottom > top:
        raise ValueError(f"bottom must be <= top (got {bottom} > {top})")
    return np.where(np.arange(d) < m, top, bottom).astype(float)


def eigen_align_sim(lam, m, ns, draws, seed=0, norm=1.0, loss_tol=1e-12, max_steps=200_000,
                    **run_kwargs) -> EigenAlignResult:
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

    One :math:`n` is one cell of :func:`transferkit.sweep.run` (:func:`eigen_align_cell`),
    cached and resumable; ``run_kwargs`` go to :func:`~transferkit.sweep.run`.

    Returns
    -------
    EigenAlignResult
        Arrays ``(2, len(ns), draws)`` (settings ``("top", "bottom")``): ``risk_gd``
        (population risk of the trained weights, exact given the weights), ``risk_thm41``
        (Eq. 2 on the same ``X``), ``opt_err`` (certified bound on
        ``|risk_gd - risk_thm41|`` from the stopping rule), ``cov_dev``
        (:math:`\|\tilde\Sigma-\Sigma\|`, for checking the constant of ``g``), ``converged``.
    """

    lam, ns, m, draws, seed, norm, max_steps = _checked_eigen_align(
        "ns", ns, lam, m, draws, seed, norm, loss_tol, max_steps)
    fixed = dict(lam=lam, m=int(m), draws=int(draws), seed=int(seed), norm=float(norm),
                 loss_tol=loss_tol, max_steps=max_steps)
    sw = run(eigen_align_cell, Grid(n=np.array(ns)), fixed=fixed,
             **_run_kw(run_kwargs, "Fig. 1 (paper 001): n"))
    out = {k: np.ascontiguousarray(np.swapaxes(sw[k], 0, 1))
           for k in ("risk_gd", "risk_thm41", "opt_err", "cov_dev", "converged")}
    return EigenAlignResult(ns=np.array(ns), settings=("top", "bottom"), **out)


def _checked_eigen_align(n_name, ns, lam, m, draws, seed, norm, loss_tol, max_steps):
    """The arguments of :func:`eigen_align_sim` and :func:`eigen_align_cell` (``ns`` named
    ``n_name``), checked before any work, with the arrays of a cell within the memory
    budget.  Returns ``(lam, ns, m, draws, seed, norm, max_steps)``, the integers as ``int``."""
    lam = check_eigenvalues(lam)
    d = lam.shape[-1]
    if lam.ndim != 1:
        raise ValueError(f"lam must be one spectrum, shape (d,) (got shape {lam.shape})")
    ns = [int(n) for n in np.atleast_1d(_checked_sizes(n_name, ns, d))]
    m = check_int("m", m, 1, d - 1)
    draws, seed = _checked_run(draws, seed, loss_tol)
    norm = check_positive("norm", norm)
    max_steps = check_int("max_steps", max_steps, 1)
    # per draw and setting: X, its copy and y, the trained weights, X X^T
    paper = FIG1_EIGEN_ALIGN["paper"]
    check_budget_among(lambda n, draws: 8 * 2 * draws * (3 * n * d + n * n + 10 * d),
                       dict(n=max(ns), draws=draws), dict(n=max(paper.ns), draws=paper.draws),
                       shown=dict(n=max(ns)))
    return lam, ns, m, draws, seed, norm, max_steps


def eigen_align_cell(n, lam, m, draws, seed=0, norm=1.0, loss_tol=1e-12, max_steps=200_000):
    r"""One sample size ``n`` of :func:`eigen_align_sim`: a cell function for
    :func:`transferkit.sweep.run`.  Returns ``risk_gd``, ``risk_thm41``, ``opt_err``,
    ``cov_dev`` and ``converged``, each ``(2, draws)`` (settings ``("top", "bottom")``)."""
    check_one("n", n)
    lam, (n,), m, draws, seed, norm, max_steps = _checked_eigen_align(
        "n", n, lam, m, draws, seed, norm, loss_tol, max_steps)
    d = lam.shape[-1]
    out = {k: np.zeros((2, draws)) for k in ("risk_gd", "risk_thm41", "opt_err", "cov_dev")}
    out["converged"] = np.zeros((2, draws), bool)
    sq = np.sqrt(lam)
    X = np.stack([keyed_rng(seed, 1, n, b).standard_normal((n, d)) for b in range(draws)]) * sq
    ts = np.stack([unit_rows(keyed_rng(seed, 2, b).standard_normal(d)) for b in range(draws)])
    dv = np.zeros((2, draws, d))
    for s in range(2):
        idx = slice(m, d) if s == 0 else slice(0, m)
        g = np.stack([keyed_rng(seed, 3, s, b).standard_normal(d) for b in range(draws)])
        dv[s, :, idx] = g[:, idx]
    dv = norm * unit_rows(dv)
    tt = ts[None] + dv                                              # (2, draws, d)
    Xb = np.broadcast_to(X, (2,) + X.shape).reshape(-1, n, d)
    yb = np.einsum("bnd,bd->bn", Xb, tt.reshape(-1, d))
    obj = models.deep_linear.empirical_objective(as_tensor(Xb), as_tensor(yb))
    w0 = [as_tensor(np.broadcast_to(ts, (2,) + ts.shape).reshape(-1, d, 1))]
    Ws, info = models.deep_linear.gradient_descent(w0, obj, method="nesterov", loss_tol=loss_tol,
                                  max_steps=max_steps, desc=f"n = {n}")
    beta = end_to_end(Ws).cpu().numpy().reshape(2, draws, d)
    out["risk_gd"][:] = (lam * (beta - tt) ** 2).sum(-1)
    p = null_space_projection(X[None], dv)
    out["risk_thm41"][:] = (lam * p ** 2).sum(-1)
    # excess loss 1/2 sum_i lam_i c_i^2 <= tol  =>  ||beta - beta*|| <= sqrt(2 tol / lam_min)
    lmin = obj.lam.min(1).values.cpu().numpy().reshape(2, draws)
    excess = np.maximum(info.excess_loss.reshape(2, draws), 0)
    dist = np.sqrt(lam[0]) * np.sqrt(2 * excess / lmin)
    out["opt_err"][:] = risk_error_bound(out["risk_thm41"], dist)
    out["converged"][:] = info.converged.reshape(2, draws)
    out["cov_dev"][:] = _cov_deviation(X, lam)[None]
    return out


def _cov_deviation(X, lam):
    r""":math:`\|X^\top X/n - \mathrm{diag}(\lambda)\|` per draw (Lanczos on the operator)."""

    n, d = X.shape[-2:]
    res = []
    for Xb in X:
        op = LinearOperator((d, d), matvec=lambda v, Xb=Xb: Xb.T @ (Xb @ v) / n - lam * v.ravel(),
                            dtype=float)
        res.append(abs(eigsh(op, k=1, which="LM", return_eigenvectors=False,
                             v0=np.ones(d), tol=1e-8)[0]))
    return np.array(res)


def _tile(Ws, reps):
    """Repeat a batch of weights ``reps`` times (outer index ``reps``)."""
    return [W.repeat(reps, 1, 1) for W in Ws]


def _depth_alpha_data(d, n, alphas, draws, seed, noise_norm):
    ts = unit_rows(np.stack([keyed_rng(seed, 5, b).standard_normal(d) for b in range(draws)]))
    eps = noise_norm * unit_rows(np.stack([keyed_rng(seed, 6, b).standard_normal(d) for b in range(draws)]))
    X = np.stack([keyed_rng(seed, 7, n, b).standard_normal((n, d)) for b in range(draws)])
    tt = np.asarray(alphas, float)[:, None, None] * ts[None] + eps[None]   # (A, draws, d)
    y = np.einsum("bnd,abd->abn", X, tt)
    A = len(alphas)
    Xa = np.broadcast_to(X, (A,) + X.shape)
    tsa = np.broadcast_to(ts, (A, draws, d))
    return ts, tt, y, Xa, tsa


def depth_alpha_sim(d, n, depths, alphas, draws, seed=0, noise_norm=0.5,
                    step_scale=0.5, loss_tol=1e-12, **run_kwargs) -> DepthAlphaResult:
    r"""Fig. 2a of paper 001: :math:`\theta_T = \alpha\theta_S + \epsilon` with unit
    :math:`\theta_S`, :math:`\epsilon` Gaussian of norm ``noise_norm`` (the paper's
    :math:`\approx 0.5\|\theta_S\|`), ``n`` isotropic Gaussian samples; networks of each
    depth holding exactly balanced pretrained weights (:func:`~transferkit.models.deep_linear.balanced_weights`) fine-tuned
    by gradient descent.

    One depth is one cell of :func:`transferkit.sweep.run` (:func:`depth_alpha_cell`, all
    :math:`\alpha` and draws in one batch), cached and resumable; ``run_kwargs`` go to
    :func:`~transferkit.sweep.run`.

    Returns
    -------
    DepthAlphaResult
        ``risk_gd``, ``risk_thm52`` and ``converged`` of shape
        ``(len(depths), len(alphas), draws)``, ``risk_thm41`` and ``risk_eq6``
        ``(len(alphas), draws)`` (population risks :math:`\|\beta-\theta_T\|^2`,
        :math:`\Sigma = I`).  The draws (teachers, ``X``) are shared by all depths and
        :math:`\alpha` (paired)."""
    d, n, depths, alphas, draws, seed = _checked_depth_alpha(
        "depths", d, n, depths, alphas, draws, seed, noise_norm, step_scale, loss_tol)
    fixed = dict(d=int(d), n=int(n), alphas=alphas, draws=int(draws), seed=int(seed),
                 noise_norm=noise_norm, step_scale=step_scale, loss_tol=loss_tol)
    sw = run(depth_alpha_cell, Grid(depth=np.array(depths)), fixed=fixed,
             **_run_kw(run_kwargs, "Fig. 2a (paper 001): depth"))
    _, tt, y, Xa, tsa = _depth_alpha_data(d, n, alphas, draws, seed, noise_norm)
    return DepthAlphaResult(
        depths=np.array(depths), alphas=alphas, risk_gd=sw["risk_gd"],
        risk_thm52=sw["risk_thm52"],
        risk_thm41=((finetune_predictor(Xa, y, tsa) - tt) ** 2).sum(-1),
        risk_eq6=((deep_finetune_predictor(Xa, y, tsa, np.inf) - tt) ** 2).sum(-1),
        converged=sw["converged"])


def _checked_depth_alpha(depth_name, d, n, depths, alphas, draws, seed, noise_norm,
                         step_scale, loss_tol):
    """The arguments of :func:`depth_alpha_sim` and :func:`depth_alpha_cell` (``depths``
    named ``depth_name``), checked before any work, with a cell's arrays within the memory
    budget.  Returns ``(d, n, depths, alphas, draws, seed)``: the integers as ``int``,
    ``depths`` a list, ``alphas`` a float array."""
    d = check_int("d", d, 2)
    check_one("n", n)
    n = int(_checked_sizes("n", n, d))
    depths_v = check_values(depth_name, depths, 1, MAX_INT, integer=True)
    alphas_v = check_values("alphas", alphas)
    for name, v in ((depth_name, np.atleast_1d(depths_v)), ("alphas", alphas_v)):
        if v.ndim != 1 or v.size == 0:
            raise ValueError(f"{name} must be a non-empty 1-d sequence (got {v.tolist()!r})")
    draws, seed = _checked_run(draws, seed, loss_tol, step_scale)
    check_positive("noise_norm", noise_norm, allow_zero=True)
    depths = [int(L) for L in np.atleast_1d(depths_v)]
    _check_chain_budget(d, n, depth_name, max(depths), "alphas", alphas_v.size, draws)
    return d, n, depths, np.asarray(alphas, float), draws, seed


def _check_chain_budget(d, n, depth_name, depth, batch_name, batch, draws):
    """Memory of ``batch * draws`` fine-tuned linear chains of ``depth`` layers of width
    ``d`` on ``n`` samples (weights, gradients, the data and its Gram matrix), before any
    allocation.  The size named is the one furthest above Fig. 2's paper protocol, the
    depth and the batch as ``depth_name`` and ``batch_name`` (``None``: a fixed number of
    chains per draw, never named)."""
    paper = FIG2_DEPTH["paper"]
    sizes = dict(d=d, n=n, depth=depth, batch=batch, draws=draws)
    typical = dict(d=paper.d, n=paper.n, depth=max(paper.depths), batch=2 * len(paper.scales),
                   draws=paper.draws)
    names = {"d": "d", "n": "n", depth_name: "depth", "draws": "draws"}
    if batch_name is not None:
        names[batch_name] = "batch"

    def estimate(**kw):
        z = {**sizes, **{names[k]: v for k, v in kw.items()}}
        return 8 * z["batch"] * z["draws"] * (3 * z["depth"] * z["d"] ** 2 + 2 * z["n"] * z["d"]
                                              + z["n"] ** 2)

    check_budget_among(estimate, {k: sizes[v] for k, v in names.items()},
                       {k: typical[v] for k, v in names.items()})


def depth_alpha_cell(depth, d, n, alphas, draws, seed=0, noise_norm=0.5, step_scale=0.5,
                     loss_tol=1e-12):
    r"""One depth of :func:`depth_alpha_sim`: a cell function for :func:`transferkit.sweep.run`.
    Returns ``risk_gd``, ``risk_thm52`` and ``converged``, each ``(len(alphas), draws)``."""
    check_one("depth", depth)
    d, n, (depth,), alphas, draws, seed = _checked_depth_alpha(
        "depth", d, n, depth, alphas, draws, seed, noise_norm, step_scale, loss_tol)
    A = len(alphas)
    ts, tt, y, Xa, tsa = _depth_alpha_data(d, n, alphas, draws, seed, noise_norm)
    Wp = balanced_weights(ts, depth, seed=seed)
    beta, info = deep_finetune_sim(_tile(Wp, A), Xa.reshape(-1, n, d), y.reshape(-1, n),
                                   step_scale, loss_tol)
    return {"risk_gd": ((beta.reshape(A, draws, d) - tt) ** 2).sum(-1),
            "risk_thm52": ((deep_finetune_predictor(Xa, y, tsa, depth) - tt) ** 2).sum(-1),
            "converged": info.converged.reshape(A, draws)}


def scaling_sim(d, n, depth, scales, draws, seed=0, angle_dist=0.1,
                step_scale=0.5, loss_tol=1e-12, **run_kwargs) -> ScalingResult:
    r"""Fig. 2b of paper 001: unit directions with :math:`\|\hat\theta_T-\hat\theta_S\|` =
    ``angle_dist``; either the target is scaled (:math:`\theta_T = a\hat\theta_T`,
    :math:`\theta_S=\hat\theta_S`, ``"target"``) or the source
    (:math:`\theta_S = a\hat\theta_S`, :math:`\theta_T=\hat\theta_T`, ``"source"``).

    Every scale and draw is trained in one batch (splitting it could change the last bits),
    so the sweep has one cell (:func:`scaling_cell`, the scales vectorised), cached;
    ``run_kwargs`` go to :func:`~transferkit.sweep.run`.

    Returns
    -------
    ScalingResult
        ``risk_gd``, ``risk_thm52``, ``risk_thm41``, ``risk_eq6`` and ``converged`` of
        shape ``(2, len(scales), draws)`` (index 0: target scaled, 1: source scaled)."""
    d, n, depth, scales, draws, seed = _checked_scaling(
        "scales", d, n, depth, scales, draws, seed, angle_dist, step_scale, loss_tol)
    fixed = dict(d=int(d), n=int(n), depth=int(depth), draws=int(draws), seed=int(seed),
                 angle_dist=angle_dist, step_scale=step_scale, loss_tol=loss_tol)
    sw = run(scaling_cell, Grid(scale=scales), fixed=fixed, vectorize=("scale",),
             **_run_kw(run_kwargs, "Fig. 2b (paper 001)"))
    out = {k: np.ascontiguousarray(np.swapaxes(sw[k], 0, 1))
           for k in ("risk_gd", "risk_thm52", "risk_thm41", "risk_eq6", "converged")}
    return ScalingResult(scales=scales, scaled=("target", "source"), **out)


def _checked_scaling(scale_name, d, n, depth, scales, draws, seed, angle_dist, step_scale,
                     loss_tol):
    """The arguments of :func:`scaling_sim` and :func:`scaling_cell` (``scales`` named
    ``scale_name``), checked before any work, with a cell's arrays within the memory
    budget.  Returns ``(d, n, depth, scales, draws, seed)``, the integers as ``int`` and
    ``scales`` a float array."""
    d = check_int("d", d, 2)
    check_one("n", n)
    n = int(_checked_sizes("n", n, d))
    depth = check_int("depth", depth, 1)
    scales_v = check_values(scale_name, scales, 0, lo_open=True)
    if scales_v.ndim != 1 or scales_v.size == 0:
        raise ValueError(f"{scale_name} must be a non-empty 1-d sequence of numbers > 0 "
                         f"(got {scales!r})")
    draws, seed = _checked_run(draws, seed, loss_tol, step_scale)
    if not 0 <= check_positive("angle_dist", angle_dist, allow_zero=True) <= 2:
        raise ValueError(f"angle_dist must be in [0, 2], a distance of unit vectors "
                         f"(got {angle_dist!r})")
    _check_chain_budget(d, n, "depth", depth, scale_name, 2 * scales_v.size, draws)
    return d, n, depth, np.asarray(scales, float), draws, seed


def scaling_cell(scale, d, n, depth, draws, seed=0, angle_dist=0.1, step_scale=0.5,
                 loss_tol=1e-12):
    r"""All scales of :func:`scaling_sim` in one batch: a cell function for
    :func:`transferkit.sweep.run` (vectorise ``scale``; one number is one scale).  Returns
    ``risk_gd``, ``risk_thm52``, ``risk_thm41``, ``risk_eq6`` and ``converged``, each
    ``(len(scale), 2, draws)``."""
    d, n, depth, scales, draws, seed = _checked_scaling(
        "scale", d, n, depth, np.atleast_1d(check_values("scale", scale, 0, lo_open=True)),
        draws, seed, angle_dist, step_scale, loss_tol)
    S = len(scales)
    u = unit_rows(np.stack([keyed_rng(seed, 8, b).standard_normal(d) for b in range(draws)]))
    v = np.stack([keyed_rng(seed, 9, b).standard_normal(d) for b in range(draws)])
    v = unit_rows(v - (v * u).sum(-1, keepdims=True) * u)
    # ||u - w|| = angle_dist for unit w = cos(phi) u + sin(phi) v: 2 - 2 cos(phi) = dist^2
    phi = np.arccos(np.clip(1 - angle_dist ** 2 / 2, -1, 1))
    w = np.cos(phi) * u + np.sin(phi) * v
    X = np.stack([keyed_rng(seed, 10, n, b).standard_normal((n, d)) for b in range(draws)])
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
    return {k: np.swapaxes(v, 0, 1) for k, v in out.items()}


def frozen_sim(d, ns, cos_angle, draws, seed=0, init_scale=1e-5, step_scale=0.5,
               loss_tol=1e-12, rcond=1e-3, **run_kwargs) -> FrozenResult:
    r"""Fig. 3 of paper 001: two-layer linear networks on a target at angle
    :math:`\arccos(\cos\theta)` from the unit source, noise free, :math:`\Sigma = I`.

    * ``"frozen"``: pretrained first layer frozen, last layer fitted: ``risk_frozen_gd`` by
      gradient descent (:func:`~transferkit.models.deep_linear.frozen_first_layer_gd`) for as many steps as ``"finetune"``
      needed (``frozen_gd_steps``), ``risk_frozen`` by its limit along
      the features that carry signal, the minimum-norm least squares on the pretrained
      features of effective rank ``r`` (:func:`transferkit.models.deep_linear.linear_transfer` with
      ``rcond``);
    * ``"vanilla"``: trained from scratch from scale ``init_scale``;
    * ``"finetune"``: all layers trained from the pretrained weights (gradient descent).

    One :math:`n` is one cell of :func:`transferkit.sweep.run` (:func:`frozen_cell`; each
    cell repeats the deterministic pretraining), cached and resumable; ``run_kwargs`` go
    to :func:`~transferkit.sweep.run`.

    Returns
    -------
    FrozenResult
        ``risk_<method>`` ``(len(ns), draws)`` for the simulations, ``risk_thm55``
        (:func:`~transferkit.theory.linear_teachers.frozen_predictor`), ``risk_thm52`` (depth 2),
        ``risk_scratch_theory`` (:math:`(1-n/d)\|\theta_T\|^2`, the expectation for
        :math:`X^+y`), ``rank`` (effective rank of the frozen features) and ``converged``.
    """

    d, ns, draws, seed = _checked_frozen("ns", d, ns, cos_angle, draws, seed, init_scale,
                                         step_scale, loss_tol, rcond)
    fixed = dict(d=int(d), cos_angle=cos_angle, draws=int(draws), seed=int(seed),
                 init_scale=init_scale, step_scale=step_scale, loss_tol=loss_tol, rcond=rcond)
    sw = run(frozen_cell, Grid(n=np.array(ns)), fixed=fixed,
             **_run_kw(run_kwargs, "Fig. 3 (paper 001): n"))
    return FrozenResult(
        ns=np.array(ns), risk_frozen=sw["risk_frozen"], risk_frozen_gd=sw["risk_frozen_gd"],
        risk_vanilla=sw["risk_vanilla"], risk_finetune=sw["risk_finetune"],
        risk_thm55=sw["risk_thm55"], risk_thm52=sw["risk_thm52"],
        risk_scratch_theory=(1 - np.asarray(ns) / d) * 1.0, rank=sw["rank"][0],
        converged=sw["converged"], frozen_gd_steps=sw["frozen_gd_steps"].astype(int))


def _checked_frozen(n_name, d, ns, cos_angle, draws, seed, init_scale, step_scale, loss_tol,
                    rcond):
    """The arguments of :func:`frozen_sim` and :func:`frozen_cell` (``ns`` named ``n_name``),
    checked before any work, with a cell's arrays within the memory budget.  Returns
    ``(d, ns, draws, seed)``: the integers as ``int``, ``ns`` a list."""
    d = check_int("d", d, 2)
    ns = [int(n) for n in np.atleast_1d(_checked_sizes(n_name, ns, d))]
    check_values("cos_angle", cos_angle, -1, 1)
    draws, seed = _checked_run(draws, seed, loss_tol, step_scale)
    check_alpha("init_scale", init_scale, 2)
    check_positive("rcond", rcond)
    # pretrained, scratch and fine-tuned two-layer chains of width d, the data
    _check_chain_budget(d, max(ns), "depth", 2, None, 3, draws)
    return d, ns, draws, seed


def frozen_cell(n, d, cos_angle, draws, seed=0, init_scale=1e-5, step_scale=0.5,
                loss_tol=1e-12, rcond=1e-3):
    r"""One sample size ``n`` of :func:`frozen_sim`: a cell function for
    :func:`transferkit.sweep.run`.  Returns the risks ``risk_frozen``, ``risk_frozen_gd``,
    ``risk_vanilla``, ``risk_finetune``, ``risk_thm55``, ``risk_thm52`` and ``converged``
    ``(draws,)``, ``rank`` ``(draws,)`` and ``frozen_gd_steps`` (a scalar)."""
    check_one("n", n)
    d, (n,), draws, seed = _checked_frozen("n", d, n, cos_angle, draws, seed, init_scale,
                                           step_scale, loss_tol, rcond)
    u = unit_rows(np.stack([keyed_rng(seed, 11, b).standard_normal(d) for b in range(draws)]))
    v = np.stack([keyed_rng(seed, 12, b).standard_normal(d) for b in range(draws)])
    v = unit_rows(v - (v * u).sum(-1, keepdims=True) * u)
    tt = cos_angle * u + np.sqrt(1 - cos_angle ** 2) * v
    Wp = pretrain_gd(u, 2, init_scale, seed)
    U, _, rank, _ = models.deep_linear.feature_subspace(Wp, rcond)
    out = {}
    X = np.stack([keyed_rng(seed, 13, n, b).standard_normal((n, d)) for b in range(draws)])
    y = np.einsum("bnd,bd->bn", X, tt)
    Xt, yt = as_tensor(X), as_tensor(y)
    bf = models.deep_linear.linear_transfer(U, Xt, yt[..., None])[:, 0].cpu().numpy()
    out["risk_frozen"] = ((bf - tt) ** 2).sum(-1)
    Wv, iv = models.deep_linear.train_scratch(Xt, yt, 2, init_scale, [keyed_rng(seed, 14, n, b) for b in range(draws)],
                             loss_tol=loss_tol, max_steps=200_000)
    out["risk_vanilla"] = ((end_to_end(Wv).cpu().numpy() - tt) ** 2).sum(-1)
    bft, ift = deep_finetune_sim(Wp, X, y, step_scale, loss_tol)
    out["risk_finetune"] = ((bft - tt) ** 2).sum(-1)
    bg = frozen_first_layer_gd(Wp, X, y, int(ift.steps.max()))
    out["risk_frozen_gd"] = ((bg - tt) ** 2).sum(-1)
    out["frozen_gd_steps"] = int(ift.steps.max())
    out["risk_thm55"] = ((frozen_predictor(X, y, u) - tt) ** 2).sum(-1)
    out["risk_thm52"] = ((deep_finetune_predictor(X, y, u, 2) - tt) ** 2).sum(-1)
    out["converged"] = iv.converged & ift.converged
    out["rank"] = np.asarray(rank)
    return out


# ---------------------------------------------------------------------------------------
# Sec. 6 (issue 17): Thm 6.1 / Cor. 6.3 against a wide two-layer ReLU network fine-tuned
# by gradient descent
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NtkFinetunePreset:
    r"""Parameters of the Sec. 6 check of paper 001 (Thm 6.1, Cors. 6.2-6.3) at one scale.

    The presets are :data:`SEC6_NTK`; the chapter notebook ``notebooks/linear_teachers.py``
    passes them to :func:`ntk_finetune_sim`.  Paper 001 states the model of Sec. 6 (a
    two-layer ReLU network :math:`f(x) = m^{-1/2}\sum_r a_r\sigma(w_r^\top x)`, readout
    :math:`a_r` uniform on :math:`\{-1, 1\}` and fixed, :math:`w_r(0)\sim\mathcal
    N(0,\kappa^2 I)`, inputs :math:`\|x\| = 1`, labels :math:`|y_i|\le 1`, pretraining and
    fine-tuning by gradient descent with the same :math:`m`, linear teachers in Cors.
    6.2-6.3) and asks for :math:`\kappa = O(\lambda_0\delta/n)` and :math:`m` above a
    polynomial; it has no experiment for Sec. 6, so every number is ours.

    Attributes
    ----------
    d : int
        Input dimension; inputs uniform on the unit sphere of :math:`\mathbb R^d` (ours;
        Sec. 6 assumes :math:`\|x\| = 1`).
    n_source : int
        Pretraining samples :math:`n_S` (ours).
    ns : tuple of int
        Target sample sizes :math:`n` (ours).
    distances : tuple of float
        :math:`\|\theta_T-\theta_S\|` of the unit teachers, in :math:`[0, 2]` (ours; unit
        teachers keep :math:`|y| \le 1` as Sec. 6 assumes).
    widths : tuple of int
        Hidden widths :math:`m`, even (ours; Thm 6.1 asks for :math:`m` above a polynomial).
    draws : int
        Independent draws of teachers, data and initialisation (ours).
    kappa : float
        Initialisation scale :math:`\kappa` of the width sweep (ours; Thm 6.1 asks for
        :math:`\kappa = O(\lambda_0\delta/n)`).
    symmetric : bool
        Units in pairs with opposite :math:`a_r` so that :math:`f(\cdot, W(0)) = 0`, in the
        width sweep (ours; Sec. 6 draws :math:`a_r` uniformly,
        :func:`transferkit.models.relu.init_ntk`).
    readings : tuple of tuple
        Other initialisations ``(kappa, symmetric)``, run at ``reading_width`` (ours):
        the paper's independent :math:`a_r` with :math:`\kappa = 1` and with a small
        :math:`\kappa`.
    reading_width : int
        Width of the ``readings`` (ours).
    n_test : int
        Fresh test inputs per draw for the population risk (ours).
    tol : float
        Stopping rule :math:`\|u - y\| \le {\rm tol}\,\|y\|` of pretraining and of every
        fine-tuning run (ours; Thm 6.1 takes :math:`t \ge \Omega(\log(1/\|\tilde
        y\|)/(\eta\lambda_0))` steps, i.e. training to a small loss).
    max_steps : int
        Step budget of every training run (ours).
    seed : int
        Base seed of the random streams (ours).
    """

    d: int                          # ours (Sec. 6: ||x|| = 1)
    n_source: int                   # ours
    ns: tuple                       # ours
    distances: tuple                # ours
    widths: tuple                   # ours (Thm 6.1: m >= kappa^-2 poly(n, n_S, 1/lambda0, 1/delta))
    draws: int                      # ours
    kappa: float = 1.0              # ours (Thm 6.1: kappa = O(lambda0 delta / n))
    symmetric: bool = True          # ours (Sec. 6: a_r uniform on {-1, 1})
    readings: tuple = ((1.0, False), (0.1, False))  # ours (Sec. 6's a_r uniform, two kappas)
    reading_width: int = 1024       # ours
    n_test: int = 10_000            # ours
    tol: float = 1e-3               # ours (Thm 6.1: t large enough)
    max_steps: int = 20_000         # ours
    seed: int = 4                   # ours


#: The Sec. 6 check of paper 001 at each ``TRANSFERKIT_SCALE``.
#:
#: Every value is ours (the paper has no experiment for Sec. 6).  ``paper``: inputs
#: uniform on the unit sphere of R^10, unit teachers at distances
#: ``||theta_T - theta_S||`` = 0, 0.1, 0.25, 0.5, 1, 2 (so that ``|y| <= 1``), pretraining
#: on n_S = 200 source samples, n = 25, 50, 100 target samples, widths m = 256, 1024, 4096
#: with kappa = 1 and the symmetric initialisation, and the paper's independent readout
#: a_r with kappa = 1 and kappa = 0.1 at m = 1024; 3 draws, 5,000 test inputs per draw,
#: stopping rule ``||u - y|| <= 1e-3 ||y||``, at most 20,000 steps; about 70 CPU-seconds
#: (measured with one torch thread: 2.7 minutes of wall time on two cores shared with
#: other jobs, the width 4096 about 40 % of it).  ``smoke``: the same pipeline small
#: (d = 10, n_S = 100, n = 10, 20, 40, five distances, m = 128, 512, readings at m = 128,
#: 2 draws, 2,000 test inputs).
SEC6_NTK = {
    "paper": NtkFinetunePreset(d=10, n_source=200, ns=(25, 50, 100),
                               distances=(0.0, 0.1, 0.25, 0.5, 1.0, 2.0),
                               widths=(256, 1024, 4096), draws=3, n_test=5000),
    "smoke": NtkFinetunePreset(d=10, n_source=100, ns=(10, 20, 40),
                               distances=(0.0, 0.25, 0.5, 1.0, 2.0), widths=(128, 512),
                               draws=2, reading_width=128, n_test=2000),
}


@dataclass(frozen=True)
class NtkFinetuneResult:
    r"""The result of :func:`ntk_finetune_sim` (paper 001, Sec. 6, Thm 6.1, Cors. 6.2-6.3).

    Index order: initialisation (``configs``), draw, target size (``ns``), distance
    (``distances``).

    Attributes
    ----------
    configs : tuple of tuple
        ``(m, kappa, symmetric)`` of each initialisation: the width sweep, then the readings.
    ns : ndarray of int
        Target sample sizes :math:`n`.
    distances : ndarray
        :math:`\|\theta_T - \theta_S\|`.
    risk : ndarray, shape (C, draws, N, D)
        Population ramp loss (:func:`transferkit.theory.linear_teachers.ramp_loss`) of the
        fine-tuned network, the mean over the fresh test inputs.
    risk_se : ndarray, shape (C, draws, N, D)
        Its Monte Carlo standard error (over the test inputs).
    risk_dse_distance : ndarray, shape (C, draws, N, D - 1)
        Monte Carlo standard error of ``risk[..., k + 1] - risk[..., k]`` (neighbouring
        distances, the same test inputs: paired).
    risk_dse_n : ndarray, shape (C, draws, N - 1, D)
        The same for ``risk[..., j + 1, :] - risk[..., j, :]`` (neighbouring target sizes).
    risk_pre : ndarray, shape (C, draws, D)
        The same population ramp loss on the target task of the pretrained network, before
        fine-tuning.
    lead : ndarray, shape (C, draws, N, D)
        Thm 6.1's leading term :math:`2\sqrt{\tilde y^\top(H^\infty)^{-1}\tilde y/n}` with the
        pretrained network's outputs :math:`f(X, \Theta(0))` (Eq. 11).
    cor62 : ndarray, shape (C, draws, N, D)
        :math:`\sqrt{\tilde y^\top(H^\infty)^{-1}\tilde y}` with those outputs.
    cor62_linear : ndarray, shape (draws, N, D)
        The same under Assumption 3.2, :math:`\tilde y = X(\theta_T-\theta_S)`
        (:func:`transferkit.theory.linear_teachers.cor62_term`).
    cor63 : ndarray, shape (N, D)
        Cor. 6.3's leading term :math:`6\|\theta_T-\theta_S\|/\sqrt n`.
    pre_err : ndarray, shape (C, draws, N)
        RMS of :math:`f(X, \Theta(0)) - X\theta_S` on the target inputs: how far the
        pretrained network is from Assumption 3.2.
    pre_term : ndarray, shape (C, draws, N)
        :math:`\sqrt{e^\top(H^\infty)^{-1}e}` of that error :math:`e`; by the triangle
        inequality ``cor62 <= cor62_linear + pre_term``.
    pre_err_pop : ndarray, shape (C, draws)
        RMS of :math:`f(x, \Theta(0)) - x^\top\theta_S` on the test inputs.
    lam0 : ndarray, shape (draws, N)
        :math:`\lambda_0 = \lambda_{\min}(H^\infty)` of the target inputs.
    move : ndarray, shape (C, draws, N, D)
        :math:`\|W(t) - W(0)\|_F` travelled by fine-tuning.
    move_pre, init_norm : ndarray, shape (C, draws)
        :math:`\|W(0) - W_{\rm init}\|_F` travelled by pretraining and :math:`\|W_{\rm
        init}\|_F`.
    flips : ndarray, shape (C, draws, N, D)
        Fraction of activation signs on the target inputs flipped by fine-tuning.
    flips_pre : ndarray, shape (C, draws)
        The same for pretraining, on the source inputs.
    steps : ndarray of int, shape (C, draws, N)
        Fine-tuning steps (all distances of one draw and ``n`` step together).
    steps_pre : ndarray of int, shape (C, draws)
        Pretraining steps.
    converged : ndarray of bool, shape (C, draws, N, D)
        Whether fine-tuning met the stopping rule.
    pre_converged : ndarray of bool, shape (C, draws)
        Whether pretraining met it.
    seconds : ndarray, shape (C,)
        Compute time of each initialisation (for cached cells, the time it took when computed).
    """

    configs: tuple
    ns: np.ndarray
    distances: np.ndarray
    risk: np.ndarray
    risk_se: np.ndarray
    risk_dse_distance: np.ndarray
    risk_dse_n: np.ndarray
    risk_pre: np.ndarray
    lead: np.ndarray
    cor62: np.ndarray
    cor62_linear: np.ndarray
    cor63: np.ndarray
    pre_err: np.ndarray
    pre_term: np.ndarray
    pre_err_pop: np.ndarray
    lam0: np.ndarray
    move: np.ndarray
    move_pre: np.ndarray
    init_norm: np.ndarray
    flips: np.ndarray
    flips_pre: np.ndarray
    steps: np.ndarray
    steps_pre: np.ndarray
    converged: np.ndarray
    pre_converged: np.ndarray
    seconds: np.ndarray


#: Largest number of entries of one block of hidden activations on the test inputs
#: (16 Mi float64 entries, 128 MiB).
_TEST_BLOCK = 2 ** 24


def _sec6_teachers(d, distances, seed, b):
    r"""Unit :math:`\theta_S` ``(d,)`` and the unit targets :math:`\theta_T` ``(D, d)`` at the
    given distances, in the plane of :math:`\theta_S` and a random orthogonal direction:
    :math:`\|\theta_T-\theta_S\| = 2\sin(\phi/2)`."""
    rng = keyed_rng(seed, 20, b)
    ts = unit_rows(rng.standard_normal(d))
    u = rng.standard_normal(d)
    u = unit_rows(u - (u @ ts) * ts)
    phi = 2 * np.arcsin(np.clip(np.asarray(distances, float) / 2, 0, 1))
    return ts, np.cos(phi)[:, None] * ts + np.sin(phi)[:, None] * u


def _sphere(seed, purpose, b, n, d):
    """``n`` inputs uniform on the unit sphere of R^d, stream ``(seed, purpose, b)``."""
    return unit_rows(keyed_rng(seed, purpose, b).standard_normal((n, d)))


def _outputs(W, A, X):
    r"""Outputs :math:`m^{-1/2}\sum_r a_r\sigma(w_r^\top x)` ``(S, N)`` of the networks ``W``
    ``(S, d, m)``, ``A`` ``(S, m)`` on the rows of ``X`` ``(N, d)``, in blocks of inputs."""
    S, _, m = W.shape
    Wt, a = W.transpose(1, 2), A / np.sqrt(m)
    step = max(1, _TEST_BLOCK // (S * m))
    return torch.cat([models.relu.forward(Wt, a, X[i:i + step])
                      for i in range(0, X.shape[0], step)], dim=-1)


def _sec6_draw(m, kappa, symmetric, d, n_source, ns, distances, n_test, tol, max_steps, seed, b):
    """One draw of :func:`ntk_finetune_cell`: pretrain, fine-tune on every ``n``, measure."""
    dev = default_device()
    ts, tt = _sec6_teachers(d, distances, seed, b)
    XS = _sphere(seed, 21, b, n_source, d)
    XT = _sphere(seed, 22, b, max(ns), d)          # nested: the first n rows for each n
    Xte = _sphere(seed, 23, b, n_test, d)
    init_seed = int(keyed_rng(seed, 24, b).integers(2 ** 31))
    W, A = init_ntk(d, m, kappa, [init_seed], symmetric=symmetric, device=dev)
    eta = 1.0 / np.linalg.eigvalsh(gram(XS))[-1]
    Wp, ip = train_ntk(W, A, as_tensor(XS, dev), as_tensor(XS @ ts, dev), eta=eta, tol=tol,
                       max_steps=max_steps, record_every=max_steps)
    Xte_t = as_tensor(Xte, dev)
    fte_pre = _outputs(Wp, A, Xte_t).cpu().numpy()[0]
    D = tt.shape[0]
    yte = tt @ Xte.T                                                    # (D, n_test)
    out = {"pre_err_pop": np.sqrt(np.mean((fte_pre - Xte @ ts) ** 2)),
           "risk_pre": ramp_loss(fte_pre, yte).mean(-1),
           "move_pre": float(ip.path[0, -1]), "init_norm": float(torch.linalg.vector_norm(W)),
           "flips_pre": float(ip.flips[0]), "steps_pre": ip.steps,
           "pre_converged": bool(ip.converged[0])}
    per_n, losses = [], []
    for n in ns:
        X = XT[:n]
        y = tt @ X.T                                                    # (D, n)
        lam = np.linalg.eigvalsh(gram(X))
        # train_ntk stops when every run has ||u - y|| <= tol * ||all labels||: scale tol so
        # that this is ||u_k - y_k|| <= tol * min_k ||y_k|| <= tol * ||y_k|| for every distance
        norms = np.linalg.norm(y, axis=1)
        tol_b = tol * norms.min() / np.linalg.norm(y)
        Wf, info = train_ntk(Wp.repeat(D, 1, 1), A.repeat(D, 1), as_tensor(X, dev),
                             as_tensor(y, dev), eta=1.0 / lam[-1], tol=tol_b,
                             max_steps=max_steps, record_every=max_steps)
        f0 = info.outputs0[0]                                          # f(X, Theta(0))
        loss = ramp_loss(_outputs(Wf, A.repeat(D, 1), Xte_t).cpu().numpy(), yte)
        e = f0 - X @ ts
        q = np.array([deviation_bound(X, y[k], f0) for k in range(D)])     # Cor. 6.2
        losses.append(loss)
        per_n.append({
            "risk": loss.mean(-1), "risk_se": mean_se(loss)[1],
            "lead": 2.0 * q / np.sqrt(X.shape[0]),   # Thm 6.1 (theory.thm61_leading_term)
            "cor62": q,
            "cor62_linear": np.array([cor62_term(X, ts, tt[k]) for k in range(D)]),
            "pre_err": np.sqrt(np.mean(e ** 2)), "pre_term": deviation_bound(X, f0, X @ ts),
            "lam0": lam[0], "move": info.path[:, -1], "flips": info.flips,
            "steps": info.steps, "converged": info.residual <= tol * norms})
    out.update({k: np.stack([np.asarray(r[k]) for r in per_n]) for k in per_n[0]})
    # paired standard errors of the differences of neighbouring cells (the same test inputs)
    losses = np.stack(losses)                                          # (N, D, n_test)
    out["risk_dse_distance"] = mean_se(np.diff(losses, axis=1))[1]
    out["risk_dse_n"] = mean_se(np.diff(losses, axis=0))[1]
    return out


def _checked_ntk_finetune(m_name, m, d, n_source, ns, distances, draws, n_test, tol,
                          max_steps, seed):
    """The arguments of :func:`ntk_finetune_sim` and :func:`ntk_finetune_cell` shared by every
    initialisation, checked before any work, with one draw's arrays and the results of all
    draws within the memory budget at width ``m`` (named ``m_name``; the size named is the
    one furthest above the paper preset :data:`SEC6_NTK`).  Returns ``(d, n_source, ns,
    distances, draws, n_test, tol, max_steps, seed)``: the integers as ``int``, ``ns`` a
    list, ``distances`` a float array."""
    d = check_int("d", d, 2)
    n_source = check_int("n_source", n_source, 1)
    ns = [check_int("ns", n, 1) for n in np.atleast_1d(check_values("ns", ns, 1)).tolist()]
    if not ns:
        raise ValueError("ns must hold at least one sample size")
    dist = np.atleast_1d(check_values("distances", distances, 0, 2))
    if dist.ndim != 1 or dist.size == 0:
        raise ValueError(f"distances must be a non-empty 1-d sequence in [0, 2], distances of "
                         f"unit vectors (got {distances!r})")
    draws = check_int("draws", draws, 1)
    n_test = check_int("n_test", n_test, 2)
    tol = check_positive("tol", tol)
    max_steps = check_int("max_steps", max_steps, 1)
    seed = check_int("seed", seed, 0)
    paper, K, len_ns = SEC6_NTK["paper"], dist.size, len(ns)

    def estimate(m, d, n_source, ns, n_test, draws):
        one_draw = (m * d * (2 + 2 * K) + m * (n_source + K * ns + n_test) + n_source ** 2
                    + ns ** 2 + (n_source + ns + n_test) * d + K * ns * n_test)
        return 8 * (one_draw + 32 * draws * len_ns * K)

    names = {m_name: "m", "d": "d", "n_source": "n_source", "ns": "ns", "n_test": "n_test",
             "draws": "draws"}
    sizes = dict(m=m, d=d, n_source=n_source, ns=max(ns), n_test=n_test, draws=draws)
    typical = dict(m=max(paper.widths), d=paper.d, n_source=paper.n_source, ns=max(paper.ns),
                   n_test=paper.n_test, draws=paper.draws)
    check_budget_among(lambda **kw: estimate(**{names[k]: v for k, v in kw.items()}),
                       {k: sizes[v] for k, v in names.items()},
                       {k: typical[v] for k, v in names.items()})
    return d, n_source, ns, dist, draws, n_test, tol, max_steps, seed


def ntk_finetune_cell(m, kappa, symmetric, d, n_source, ns, distances, draws, n_test=10_000,
                      tol=1e-3, max_steps=20_000, seed=0):
    r"""One initialisation (width ``m``, scale ``kappa``, ``symmetric`` or not) of
    :func:`ntk_finetune_sim`: a cell function for :func:`transferkit.sweep.run`.

    For each draw: unit teachers, pretraining of :func:`transferkit.models.relu.init_ntk`'s
    network on ``n_source`` samples of :math:`\theta_S` by
    :func:`transferkit.models.relu.train_ntk` (step :math:`1/\lambda_{\max}(H^\infty)` of
    the source inputs), then fine-tuning from the pretrained weights on the first ``n``
    target inputs for every ``n`` (all distances in one batch, step
    :math:`1/\lambda_{\max}(H^\infty)` of the target inputs), and the measurements of
    :class:`NtkFinetuneResult`.  Returns them stacked over the draws (the index order of
    :class:`NtkFinetuneResult` without the leading initialisation axis).
    """
    check_one("m", m)
    m, kappa, symmetric = check_int("m", m, 2), check_positive("kappa", kappa), check_bool(
        "symmetric", symmetric)
    if symmetric and m % 2:
        raise ValueError(f"m must be even for the symmetric initialisation (got {m})")
    d, n_source, ns, dist, draws, n_test, tol, max_steps, seed = _checked_ntk_finetune(
        "m", m, d, n_source, ns, distances, draws, n_test, tol, max_steps, seed)
    runs = [_sec6_draw(m, kappa, symmetric, d, n_source, ns, dist, n_test, tol, max_steps, seed,
                       b) for b in range(draws)]
    return {k: np.stack([np.asarray(r[k]) for r in runs]) for k in runs[0]}


def ntk_finetune_sim(d, n_source, ns, distances, widths, draws, *, kappa=1.0, symmetric=True,
                     readings=(), reading_width=1024, n_test=10_000, tol=1e-3,
                     max_steps=20_000, seed=0, **run_kwargs) -> NtkFinetuneResult:
    r"""Sec. 6 of paper 001: Thm 6.1 (Eq. 11) and Cors. 6.2-6.3 against a wide two-layer ReLU
    network pretrained on a linear source teacher and fine-tuned by gradient descent.

    Inputs uniform on the unit sphere of :math:`\mathbb R^d`; unit teachers :math:`\theta_S`,
    :math:`\theta_T` at the given ``distances`` (so :math:`|y|\le 1`); the network
    :math:`f(x) = m^{-1/2}\sum_r a_r\sigma(w_r^\top x)` of
    :func:`transferkit.models.relu.init_ntk` is pretrained on ``n_source`` samples of
    :math:`y = x^\top\theta_S` and fine-tuned on ``n`` samples of :math:`y = x^\top\theta_T`
    (full-batch gradient descent on the squared loss, :func:`transferkit.models.relu.train_ntk`,
    to the stopping rule ``tol``).  Measured: the population ramp loss of the fine-tuned
    network on ``n_test`` fresh inputs (with its Monte Carlo standard error), Eq. 11's
    leading term with the actual pretrained outputs, Cor. 6.2's quadratic form with them and
    under Assumption 3.2, how far the pretrained network is from :math:`x^\top\theta_S`, the
    distances travelled in weight space and the activation flips.

    One initialisation is one cell of :func:`transferkit.sweep.run`
    (:func:`ntk_finetune_cell`, all draws, ``ns`` and distances inside; pretraining is done
    once per draw): every width of ``widths`` with ``kappa`` and ``symmetric``, then every
    ``(kappa, symmetric)`` of ``readings`` at ``reading_width``.  The draws (teachers, data,
    test inputs, initialisation seeds) are the same for every initialisation (paired).
    ``run_kwargs`` go to :func:`~transferkit.sweep.run`.

    Returns
    -------
    NtkFinetuneResult
    """
    widths = [check_int("widths", w, 2) for w in np.atleast_1d(widths).tolist()]
    readings = [(check_positive("readings kappa", k), bool(s)) for k, s in readings]
    configs = ([(w, check_positive("kappa", kappa), bool(symmetric)) for w in widths]
               + [(check_int("reading_width", reading_width, 2), k, s) for k, s in readings])
    if any(s and w % 2 for w, _, s in configs):
        raise ValueError(f"widths must be even for the symmetric initialisation (got {configs!r})")
    d, n_source, ns, dist, draws, n_test, tol, max_steps, seed = _checked_ntk_finetune(
        "widths", max(w for w, _, _ in configs), d, n_source, ns, distances, draws, n_test,
        tol, max_steps, seed)
    fixed = dict(d=d, n_source=n_source, ns=ns, distances=dist, draws=draws, n_test=n_test,
                 tol=tol, max_steps=max_steps, seed=seed)
    kw = _run_kw(run_kwargs, "Sec. 6 (paper 001): width")
    parts = [run(ntk_finetune_cell, Grid(m=np.array(widths)),
                 fixed=dict(fixed, kappa=float(kappa), symmetric=bool(symmetric)), **kw)]
    for k, s in readings:
        parts.append(run(ntk_finetune_cell, Grid(m=np.array([configs[-1][0]])),
                         fixed=dict(fixed, kappa=k, symmetric=s), **kw))
    cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0].keys()}
    return NtkFinetuneResult(
        configs=tuple(configs), ns=np.array(ns), distances=dist, risk=cat["risk"],
        risk_se=cat["risk_se"], risk_dse_distance=cat["risk_dse_distance"],
        risk_dse_n=cat["risk_dse_n"], risk_pre=cat["risk_pre"], lead=cat["lead"],
        cor62=cat["cor62"],
        cor62_linear=cat["cor62_linear"][0],
        cor63=cor63_leading_term(dist[None, :], np.array(ns)[:, None]),
        pre_err=cat["pre_err"], pre_term=cat["pre_term"], pre_err_pop=cat["pre_err_pop"],
        lam0=cat["lam0"][0], move=cat["move"], move_pre=cat["move_pre"],
        init_norm=cat["init_norm"], flips=cat["flips"], flips_pre=cat["flips_pre"],
        steps=cat["steps"].astype(int), steps_pre=cat["steps_pre"].astype(int),
        converged=cat["converged"].astype(bool), pre_converged=cat["pre_converged"].astype(bool),
        seconds=np.concatenate([np.asarray(p.seconds) for p in parts]))
