r"""Regularisation in the linear-transfer model (paper 000, Sec. 3.3.1, App. E Figs. 5-6).

Two experiments of *Features are Fate* are regenerated here.

* **Ridge cannot fix negative transfer** (Fig. 6, Eq. 13): the last layer of the
  pretrained network is refitted with a ridge penalty (Eq. 12),
  :func:`ridge_transfer_curve`.  With features :math:`\Phi = X W_1` of scale :math:`s`
  (the top singular value of :math:`W_1\cdots W_{L-1}`; :math:`s = \|\beta_s\|^{(L-1)/L} = 1`
  after balanced pretraining on a unit teacher) the fitted coefficient is
  :math:`b = s\,z^\top y/(s^2\|z\|^2 + n\lambda)`, i.e. Eq. 13 holds with
  :math:`\lambda/s^2` in place of :math:`\lambda`.
* **Regularised scratch training removes anomalous positive transfer** (Fig. 5): the
  scratch model is a two-layer linear network trained by gradient descent with weight
  decay :math:`\lambda_{wd}\in\{0, 10^{-4}, 10^{-3}, 10^{-2}, 10^{-1}\}`
  (:func:`weight_decay_scratch_grid`), tuned per :math:`\gamma` by its population risk
  (oracle tuning, as the paper does: "choose the model that has the lowest
  generalization error").  Its limit is ridge with the data-dependent parameter
  :math:`\mu = \lambda_{wd}/\|\beta\|` (:func:`transferkit.models.deep_linear.weight_decay_minimiser`,
  :func:`transferkit.theory.deep_linear.weight_decay_scratch_risk`); the continuous optimum is
  :func:`transferkit.theory.deep_linear.optimal_ridge_risk`.

Data, teachers and initialisations use the random keys of :mod:`transferkit.experiments.deep_linear`,
so a draw here is the same draw as in the linear-transfer grids with the same seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np
import torch

from .. import stats, sweep, theory
from .._validate import check_choice, check_grid, check_int, check_positive
from ..models.deep_linear import (
    empirical_objective,
    end_to_end,
    gradient_descent,
    init_deep_linear,
    ridge_linear_transfer,
    weight_decay_minimiser,
)
from ..models.device import as_tensor, default_device
from ..stats import Agreement
from ..streams import keyed_rng
from . import deep_linear
from .deep_linear import DATA_STREAM, SCRATCH_STREAM, GridResult, sample_size

__all__ = ["WEIGHT_DECAYS", "WEIGHT_DECAY_SOLVERS", "FIG56", "Fig56Preset", "RidgeTransferCurve",
           "WeightDecayGrid",
           "TunedWeightDecay", "RegularisedChecks", "ridge_transfer_curve",
           "weight_decay_scratch_cell", "weight_decay_scratch_grid", "theory_risks", "tune",
           "regularised_checks"]


#: The weight-decay grid of paper 000, App. E, caption of Fig. 5.
WEIGHT_DECAYS = (0.0, 1e-4, 1e-3, 1e-2, 1e-1)


@dataclass(frozen=True)
class Fig56Preset:
    r"""Parameters of the regularisation chapter (paper 000, App. E, Figs. 5 and 6) at one scale.

    The presets are :data:`FIG56` (``FIG56["paper"]``, ``FIG56["smoke"]``); the chapter
    notebook ``notebooks/regularisation.py`` reads them from there.  Grids are tuples of
    floats (immutable); ``np.array(preset.gammas)`` is the array the simulations take.

    Attributes
    ----------
    ridge_d : int
        Input dimension of Fig. 6 (paper 000, App. D: 500).
    wd_d : int
        Input dimension of Fig. 5 (caption of Fig. 5: 500).  Its scratch models are the
        points that converged training reaches, computed without training
        (:func:`weight_decay_scratch_grid` with ``solver="limit"``).
    descent_d : int
        Input dimension at which every scratch model of the Fig. 5 grid is also trained by
        gradient descent (ours: 200, CPU time; the trained networks are compared with the
        closed-form limit and with theory cell by cell).
    draws : int
        Draws of the target set per cell, both figures (captions of Figs. 1 and 6, App. D: 20).
    gammas, thetas : tuple of float
        The :math:`(\gamma, \theta)` grid of Fig. 5 (ours: the grid of Fig. 1, see
        :data:`transferkit.experiments.linear_transfer.FIG1`, plus :math:`\gamma = 0.97, 1.03`).
    lams : tuple of float
        Ridge strengths :math:`\lambda` of Eq. 12 in Fig. 6 (ours, :math:`\{0\}\cup\{4^k\}`; the
        paper does not state its grid).
    ridge_gamma : float
        Sample ratio :math:`\gamma` of Fig. 6 (caption of Fig. 6: 0.5).
    depth : int
        Network depth :math:`L` (captions of Figs. 1 and 5, App. D: 2).
    sigma : float
        Label-noise standard deviation (captions of Figs. 1 and 5: 0.2; Fig. 6 does not state it).
    alpha : float
        Initialisation scale (App. D: :math:`10^{-5}`).
    seed : int
        Base seed of the random streams (ours).
    slices : tuple of float
        Angles of Fig. 6 (ours; the paper does not state them).
    feature_scales : tuple of float
        Feature scales :math:`s` of Fig. 6 (b) (ours).
    weight_decays : tuple of float
        The weight decays :math:`\lambda_{wd}` of Fig. 5 (caption of Fig. 5,
        :data:`WEIGHT_DECAYS`).
    check_gammas : tuple of float
        The :math:`\gamma` at which networks are also trained at ``wd_d`` (ours: the two points
        of the spike of anomalous positive transfer, where training is slowest), on the
        first ``check_draws`` draws of the Fig. 5 grid.
    check_draws : int
        Number of those draws (ours).
    """

    ridge_d: int                # paper 000, App. D
    wd_d: int                   # paper 000, caption of Fig. 5
    descent_d: int              # ours (CPU time)
    draws: int                  # paper 000, captions of Figs. 1 and 6, App. D
    gammas: tuple               # ours (the Fig. 1 grid plus 0.97, 1.03)
    thetas: tuple               # ours (the Fig. 1 grid)
    lams: tuple                 # ours (not stated in the paper)
    ridge_gamma: float = 0.5    # paper 000, caption of Fig. 6
    depth: int = 2              # paper 000, captions of Figs. 1 and 5, App. D
    sigma: float = 0.2          # paper 000, captions of Figs. 1 and 5
    alpha: float = 1e-5         # paper 000, App. D
    seed: int = 0               # ours
    slices: tuple = (0.0, math.pi / 6, math.pi / 3, math.pi / 2)  # ours
    feature_scales: tuple = (0.5, 1.0, 2.0)                        # ours
    weight_decays: tuple = WEIGHT_DECAYS                           # paper 000, caption of Fig. 5
    check_gammas: tuple = (0.97, 1.03)                             # ours
    check_draws: int = 4                                           # ours


#: The parameters of Figs. 5 and 6 at each ``TRANSFERKIT_SCALE``.
#:
#: ``paper``: L = 2, sigma = 0.2 (paper 000, captions of Figs. 1 and 5), alpha = 1e-5 and
#: d = 500 for Fig. 6 (App. D) and Fig. 5 (its caption), gamma = 0.5 and 20 draws for Fig. 6
#: (caption of Fig. 6), the weight decays 0, 1e-4, ..., 1e-1 (caption of Fig. 5).  Ours
#: (stated in the chapter): Fig. 5 at d = 500 from the limits of converged training, every
#: network of its grid trained at d = 200 (CPU time) and at d = 500 at gamma = 0.97, 1.03 on 4
#: draws; the gamma grid of Fig. 5 is that of Fig. 1 (0.1, ..., 2.0 with
#: gamma = 1 replaced by 0.95 and 1.05) plus 0.97 and 1.03, which resolve the spike of
#: anomalous positive transfer, on 19 angles; the ridge grid {0} and 4^k, k = -5, ..., 2 (so
#: that the feature scale s = 2 maps it onto itself), the four angles of Fig. 6, the feature
#: scales 0.5, 1, 2 and seed 0.
#: ``smoke``: ours, the same pipeline small enough for the tests (d = 60 and 40, 16 draws,
#: 6 x 7 grid, k = -3, ..., 1, networks trained on the whole grid and again at gamma = 0.75).
FIG56 = {
    "paper": Fig56Preset(
        ridge_d=500, wd_d=500, descent_d=200, draws=20,
        gammas=tuple(np.round(np.r_[np.arange(1, 10) / 10, 0.95, 0.97, 1.03, 1.05,
                                    np.arange(11, 21) / 10], 3).tolist()),
        thetas=tuple(np.linspace(0, np.pi / 2, 19).tolist()),
        lams=tuple(np.r_[0.0, 4.0 ** np.arange(-5, 3)].tolist())),
    "smoke": Fig56Preset(
        ridge_d=60, wd_d=40, descent_d=40, draws=16,
        gammas=(0.25, 0.5, 0.75, 1.25, 1.5, 2.0),
        thetas=tuple(np.linspace(0, np.pi / 2, 7).tolist()),
        lams=tuple(np.r_[0.0, 4.0 ** np.arange(-3, 2)].tolist()),
        check_gammas=(0.75,)),
}


@dataclass(frozen=True)
class RidgeTransferCurve:
    r"""Risk of ridge linear transfer against :math:`\lambda` (paper 000, Fig. 6, Eqs. 12-13).

    Returned by :func:`ridge_transfer_curve`.  ``S = len(feature_scales)``,
    ``K = len(lams)``, ``T = len(thetas)``, ``B = draws``.

    Attributes
    ----------
    lams, thetas, feature_scales : numpy.ndarray
        The ridge strengths :math:`\lambda` of Eq. 12, the angles :math:`\theta` and the
        feature scales :math:`s`.
    n : int
        Target sample size :math:`n = \mathrm{round}(\gamma d)`.
    d : int
        Input dimension.
    gamma, sigma : float
        Sample ratio and label-noise standard deviation.
    draws : int
        Draws of the target set (one pretrained network each).
    risk : numpy.ndarray
        Risks :math:`\|\hat\beta - \beta_t\|^2`, shape ``(S, K, T, B)``; Eq. 13 (with
        :math:`\lambda/s^2` for :math:`\lambda`) is their :math:`n\to\infty` mean.
    feature_scale : numpy.ndarray
        The pretrained top singular value per draw, ``(B,)`` (1 after balanced pretraining
        on a unit teacher).
    feature_rank : numpy.ndarray
        Effective rank of the pretrained features per draw, ``(B,)`` (Thm 3.4).
    """

    lams: np.ndarray
    thetas: np.ndarray
    feature_scales: np.ndarray
    n: int
    d: int
    gamma: float
    sigma: float
    draws: int
    risk: np.ndarray
    feature_scale: np.ndarray
    feature_rank: np.ndarray


@dataclass(frozen=True)
class WeightDecayGrid:
    r"""The :math:`(\gamma, \lambda_{wd})` grid of weight-decay scratch training (paper 000, Fig. 5).

    Returned by :func:`weight_decay_scratch_grid`.  ``G = len(gammas)``,
    ``W = len(weight_decays)``, ``B = draws``.

    Attributes
    ----------
    gammas, weight_decays : numpy.ndarray
        Sample ratios :math:`\gamma = n/d` and weight decays :math:`\lambda_{wd}`.
    n : numpy.ndarray of int
        Sample sizes ``round(gamma d)``, shape ``(G,)``.
    d, sigma, depth, draws, seed, alpha
        Input dimension, label-noise standard deviation, network depth :math:`L`, draws per
        cell, base seed and initialisation scale.
    risk : numpy.ndarray
        Scratch risks :math:`\|\hat\beta - \beta_t\|^2`, shape ``(G, W, B)``; the
        :math:`\lambda_{wd} = 0` column is the scratch model of Fig. 1 (Eq. 8).
    dist : numpy.ndarray
        Distance of the end-to-end vector to the exact limit (:math:`X^+y` for
        :math:`\lambda_{wd} = 0`, :func:`~transferkit.models.deep_linear.weight_decay_minimiser`
        otherwise; ``nan`` beyond depth 2), ``(G, W, B)``.
    mu : numpy.ndarray
        Effective ridge parameter :math:`\mu = \lambda_{wd}/\|\beta\|` of that limit, ``(G, W, B)``.
    converged : numpy.ndarray of bool
        Whether training met its stopping rule, ``(G, W, B)``.
    steps : numpy.ndarray of int
        Gradient steps taken, ``(G, W, B)``.
    solver : str
        ``"descent"`` (trained networks) or ``"limit"`` (the point converged training
        reaches, without training: ``dist`` and ``steps`` are 0, ``converged`` true).
    sweep : transferkit.sweep.SweepResult
        The cached sweep behind the grid.
    """

    gammas: np.ndarray
    weight_decays: np.ndarray
    n: np.ndarray
    d: int
    sigma: float
    depth: int
    draws: int
    seed: int
    alpha: float
    risk: np.ndarray
    dist: np.ndarray
    mu: np.ndarray
    converged: np.ndarray
    steps: np.ndarray
    solver: str = "descent"
    sweep: object = field(default=None, repr=False)


@dataclass(frozen=True)
class TunedWeightDecay:
    r"""Oracle tuning of the weight decay per :math:`\gamma` (paper 000, Fig. 5 (a)).

    Returned by :func:`tune`.  ``G = len(gammas)``, ``B = draws``.

    Attributes
    ----------
    index : numpy.ndarray of int
        Index into ``weight_decays`` of the weight decay with the smallest mean simulated
        risk, ``(G,)``.
    weight_decay : numpy.ndarray
        That weight decay, ``(G,)``.
    risk : numpy.ndarray
        Per-draw risks of the chosen models, ``(G, B)``.
    theory_of_choice : numpy.ndarray
        Theory (:func:`theory_risks`) of the chosen weight decay, ``(G,)``.
    theory_index : numpy.ndarray of int
        The same choice made on the closed forms, ``(G,)``.
    theory_risk : numpy.ndarray
        Theory of that choice, ``(G,)``.
    """

    index: np.ndarray
    weight_decay: np.ndarray
    risk: np.ndarray
    theory_of_choice: np.ndarray
    theory_index: np.ndarray
    theory_risk: np.ndarray


@dataclass(frozen=True)
class RegularisedChecks:
    r"""Agreement of regularised scratch training with theory (paper 000, Fig. 5).

    Returned by :func:`regularised_checks`; each field is a
    :class:`~transferkit.stats.Agreement`.

    Attributes
    ----------
    weight_decay : transferkit.stats.Agreement
        Every :math:`(\gamma, \lambda_{wd})` cell against :func:`theory_risks`, ``(G, W)``.
    tuned_transferability : transferkit.stats.Agreement
        Paired per-draw difference of the tuned scratch risk and the linear-transfer risk
        (Eq. 5 with tuned scratch training), against the theory of the chosen weight decay
        minus Eq. 10, ``(G, T)``.
    """

    weight_decay: Agreement
    tuned_transferability: Agreement

    def items(self) -> list[tuple[str, Agreement]]:
        """``(label, check)`` pairs in field order; the label is the field name with spaces
        (``"weight decay"``), as the chapter prints it."""
        return [(f.name.replace("_", " "), getattr(self, f.name)) for f in fields(self)]


def _target_data(pre, n, sigma, draws, seed, device, dtype):
    """``X`` ``(B, n, d)`` and noise ``(B, n)`` with the keys of :mod:`transferkit.experiments.deep_linear`."""
    d = pre.beta_s.shape[1]
    Xs, eps = [], []
    for b in range(draws):
        rng = keyed_rng(seed, b, DATA_STREAM, n)
        Xs.append(rng.standard_normal((n, d)))
        eps.append(sigma * rng.standard_normal(n))
    return as_tensor(np.stack(Xs), device, dtype), as_tensor(np.stack(eps), device, dtype)


def ridge_transfer_curve(d, gamma, lams, thetas, sigma, depth=2, draws=20, seed=0, alpha=1e-5,
                         feature_scales=(1.0,), device=None,
                         dtype=torch.float64) -> RidgeTransferCurve:
    r"""Risk of ridge linear transfer (Eq. 12) against :math:`\lambda` (paper 000, Fig. 6).

    Networks are pretrained once per draw (:func:`transferkit.experiments.deep_linear.pretrain`, memoised);
    for :math:`n = \mathrm{round}(\gamma d)` target points the last layer is refitted by
    :func:`~transferkit.models.deep_linear.ridge_linear_transfer` for every :math:`\lambda` and
    :math:`\theta`.  ``feature_scales`` multiplies the pretrained feature map by ``s``
    (as a source teacher of norm :math:`s^{L/(L-1)}` would), to show that the ridge
    strength acts as :math:`\lambda/s^2`.

    Returns
    -------
    RidgeTransferCurve
        The grids and parameters; ``risk`` of shape
        ``(len(feature_scales), len(lams), len(thetas), draws)``; ``feature_scale``, the
        pretrained top singular value per draw.
    """
    draws = check_int("draws", draws, 2)
    d, depth, draws, seed = deep_linear.check_simulation_args(d, sigma, depth, draws, alpha, seed)
    lams = check_grid("lams", lams, 0.0, np.inf, False)
    thetas = check_grid("theta", thetas, 0.0, np.pi, False)
    scales = check_grid("feature_scales", feature_scales, 0.0, np.inf, True)
    device = device or default_device()
    n = sample_size(gamma, d)
    deep_linear.check_simulation_budget(d, depth, draws, [n], len(thetas), len(lams))
    pre = deep_linear.pretrain_cached(d, depth, draws, seed, alpha)
    X, eps = _target_data(pre, n, sigma, draws, seed, device, dtype)
    beta_t = pre.beta_t(thetas)                                  # (B, T, d)
    Y = X @ beta_t.transpose(1, 2) + eps[..., None]               # (B, n, T)
    risk = np.empty((len(scales), len(lams), len(thetas), draws))
    for i, s in enumerate(scales):
        for j, lam in enumerate(lams):
            bh = ridge_linear_transfer(pre.U, pre.S * float(s), X, Y, lam)
            risk[i, j] = (bh - beta_t).pow(2).sum(-1).cpu().numpy().T
    return RidgeTransferCurve(lams=lams, thetas=thetas, feature_scales=scales, n=n, d=d,
                              gamma=float(gamma), sigma=sigma, draws=draws, risk=risk,
                              feature_scale=pre.S[:, 0].cpu().numpy(), feature_rank=pre.rank)


#: The two ways :func:`weight_decay_scratch_cell` obtains each scratch model.
WEIGHT_DECAY_SOLVERS = ("descent", "limit")


def weight_decay_scratch_cell(d, gamma, weight_decay, sigma, depth=2, draws=20, seed=0,
                              alpha=1e-5, loss_tol=1e-10, grad_tol=1e-16,
                              max_steps=100_000, solver="descent") -> dict:
    r"""Scratch training with weight decay at one :math:`\gamma`, every ``weight_decay`` at once.

    A cell function for :func:`transferkit.sweep.run` (vectorise ``weight_decay``).  For
    each draw the scratch network (depth ``depth``, scale ``alpha``, the initialisation of
    :func:`~transferkit.experiments.deep_linear.simulate_grid`) is trained by
    :func:`~transferkit.models.deep_linear.gradient_descent` (``weight_decay = 0``: in whitened
    coordinates, as ``simulate_grid`` trains scratch models; otherwise Nesterov's method) on the
    :math:`\theta = \pi/2` target
    :math:`y = X\nu + \epsilon`; the risk of scratch training does not depend on
    :math:`\theta` in distribution.  ``weight_decay = 0`` is the unregularised model,
    stopped at excess loss ``loss_tol``; for ``weight_decay > 0`` training stops at a
    squared gradient norm ``grad_tol``.

    ``solver = "limit"`` (depth 2 only) skips the training and returns, on the same draws,
    the point that converged training reaches: :math:`X^+y` for ``weight_decay = 0`` (the
    :math:`\alpha\to 0` limit of Thm 3.5) and
    :func:`~transferkit.models.deep_linear.weight_decay_minimiser` otherwise.  It costs one
    eigendecomposition per draw instead of up to thousands of steps (the way to run paper 000
    Fig. 5 at its :math:`d = 500`); ``dist`` and ``steps`` are then 0 and ``converged`` true, and
    how far trained networks end from this point is what ``solver = "descent"`` measures.

    Returns
    -------
    dict of arrays with leading dimension ``len(weight_decay)``: ``risk`` ``(W, draws)``;
    ``dist``, the distance of the end-to-end vector to the exact limit (:math:`X^+y` for
    ``0``, :func:`~transferkit.models.deep_linear.weight_decay_minimiser` otherwise, depth 2 only:
    ``nan`` for deeper networks); ``mu``, the effective ridge parameter of that limit;
    ``converged``, ``steps``; ``n``.
    """
    wds = check_grid("weight_decay", weight_decay, 0.0, np.inf, False)
    d, depth, draws, seed = deep_linear.check_simulation_args(d, sigma, depth, draws, alpha, seed)
    check_positive("loss_tol", loss_tol)
    check_positive("grad_tol", grad_tol)
    solver = _check_solver(solver, depth)
    device = default_device()
    dtype = torch.float64
    n = sample_size(gamma, d)
    deep_linear.check_simulation_budget(d, depth, draws, [n], 1, len(wds))
    pre = deep_linear.pretrain_cached(d, depth, draws, seed, alpha)
    X, eps = _target_data(pre, n, sigma, draws, seed, device, dtype)
    y = (X @ pre.nu[..., None])[..., 0] + eps
    obj = empirical_objective(X, y)
    if solver == "descent":
        W0 = init_deep_linear(d, depth, alpha,
                              [keyed_rng(seed, b, SCRATCH_STREAM, n) for b in range(draws)],
                              device=device, dtype=dtype)
    W = len(wds)
    out = {"n": np.full(W, n), "risk": np.empty((W, draws)), "dist": np.zeros((W, draws)),
           "mu": np.empty((W, draws)), "converged": np.ones((W, draws), bool),
           "steps": np.zeros((W, draws), np.int64)}
    for k, wd in enumerate(wds):
        wd = float(wd)
        if wd == 0:
            limit, mu = obj.minimiser(), torch.zeros(draws, dtype=dtype)
        elif depth == 2:
            limit, mu = weight_decay_minimiser(obj, wd)
        else:
            limit, mu = None, torch.full((draws,), float("nan"), dtype=dtype)
        out["mu"][k] = mu.cpu().numpy()
        if solver == "limit":
            out["risk"][k] = (limit - pre.nu).pow(2).sum(1).cpu().numpy()
            continue
        # wd = 0 is the scratch model of simulate_grid, trained as there (whitened);
        # whitening does not combine with decay: Nesterov for wd > 0
        Ws, info = gradient_descent(W0, obj, method="whitened" if wd == 0 else "nesterov",
                                    weight_decay=wd,
                                    loss_tol=grad_tol if wd > 0 else loss_tol,
                                    max_steps=max_steps, desc=f"scratch wd={wd:g}, n={n}")
        beta = end_to_end(Ws)
        out["risk"][k] = (beta - pre.nu).pow(2).sum(1).cpu().numpy()
        out["dist"][k] = (np.full(draws, np.nan) if limit is None
                          else (beta - limit).norm(dim=1).cpu().numpy())
        out["converged"][k] = info.converged
        out["steps"][k] = info.steps
    return out


def _check_solver(solver, depth):
    """``solver`` of :func:`weight_decay_scratch_cell`: one of :data:`WEIGHT_DECAY_SOLVERS`,
    ``"limit"`` only at depth 2 (the only depth with a closed-form limit)."""
    check_choice("solver", solver, WEIGHT_DECAY_SOLVERS)
    if solver == "limit" and depth != 2:
        raise ValueError(f"solver='limit' needs depth = 2 (the closed-form limit of weight "
                         f"decay is that of a two-layer network), got depth = {depth}")
    return solver


def weight_decay_scratch_grid(d, gammas, sigma, weight_decays=WEIGHT_DECAYS, depth=2, draws=20,
                              seed=0, alpha=1e-5, loss_tol=1e-10, grad_tol=1e-16,
                              max_steps=100_000, solver="descent",
                              **run_kwargs) -> WeightDecayGrid:
    r"""The :math:`(\gamma, \lambda_{wd})` grid of :func:`weight_decay_scratch_cell`, swept and cached.

    ``solver``: ``"descent"`` trains every network; ``"limit"`` (depth 2) takes the point
    converged training reaches on the same draws, without training (see
    :func:`weight_decay_scratch_cell`).

    Returns a :class:`WeightDecayGrid`: the grid and parameters, arrays
    ``risk, dist, mu, converged, steps`` of shape ``(len(gammas), len(weight_decays), draws)``
    and the :class:`~transferkit.sweep.SweepResult` as ``sweep``.
    """
    gammas = check_grid("gamma", gammas, 0.0, np.inf, True)
    wds = check_grid("weight_decay", weight_decays, 0.0, np.inf, False)
    solver = _check_solver(solver, depth)
    d, depth, draws, seed = deep_linear.check_simulation_args(d, sigma, depth, draws, alpha,
                                                              seed)           # before the sweep
    deep_linear.check_simulation_budget(d, depth, draws, [sample_size(g, d) for g in gammas],
                                        len(gammas), len(wds))
    check_positive("loss_tol", loss_tol)
    check_positive("grad_tol", grad_tol)
    max_steps = check_int("max_steps", max_steps, 0)
    fixed = dict(d=d, sigma=sigma, depth=depth, draws=draws, seed=seed, alpha=alpha,
                 loss_tol=loss_tol, grad_tol=grad_tol, max_steps=max_steps, solver=solver)
    run_kwargs.setdefault("desc", f"weight-decay scratch ({solver}) d={d}, sigma={sigma}")
    res = sweep.run(weight_decay_scratch_cell, sweep.Grid(gamma=gammas, weight_decay=wds),
                    fixed=fixed, vectorize=("weight_decay",), **run_kwargs)
    return WeightDecayGrid(gammas=gammas, weight_decays=wds, n=res["n"][:, 0], d=d, sigma=sigma,
                           depth=depth, draws=draws, seed=seed, alpha=alpha, risk=res["risk"],
                           dist=res["dist"], mu=res["mu"], converged=res["converged"],
                           steps=res["steps"], solver=solver, sweep=res)


def theory_risks(result: WeightDecayGrid) -> np.ndarray:
    r"""Theory for every :math:`(\gamma, \lambda_{wd})` cell of :func:`weight_decay_scratch_grid`.

    ``0``: the exact finite-size minimum-norm risk
    (:func:`~transferkit.theory.deep_linear.scratch_risk_finite`); ``> 0``: the :math:`n, d\to\infty`
    weight-decay risk (:func:`~transferkit.theory.deep_linear.weight_decay_scratch_risk`, depth 2).
    Returns an array ``(len(gammas), len(weight_decays))``.
    """
    g = result.gammas[:, None]
    wd = result.weight_decays[None, :]
    fin = theory.deep_linear.scratch_risk_finite(result.n[:, None], result.d, result.sigma)
    lim = theory.deep_linear.weight_decay_scratch_risk(g, result.sigma, wd)
    return np.where(wd == 0, fin + 0 * wd, lim)


def tune(result: WeightDecayGrid) -> TunedWeightDecay:
    r"""Oracle tuning of the weight decay per :math:`\gamma` by mean population risk.

    The paper chooses, per point, "the model that has the lowest generalization error";
    here that is the weight decay whose mean risk over the draws is smallest (the population
    risk :math:`\|\hat\beta - \beta_t\|^2` is known exactly given :math:`\hat\beta`, so this
    is oracle tuning, not cross-validation).  Returns a :class:`TunedWeightDecay`:
    ``index`` ``(G,)``, ``weight_decay`` ``(G,)``, the per-draw ``risk`` ``(G, draws)`` of the
    chosen models, the theory of that choice (``theory_of_choice``) and the same choice made
    on the closed forms (``theory_index``, ``theory_risk``).
    """
    idx = np.argmin(result.risk.mean(-1), axis=1)
    G = np.arange(len(idx))
    th = theory_risks(result)
    t_idx = np.argmin(th, axis=1)
    return TunedWeightDecay(index=idx, weight_decay=result.weight_decays[idx],
                            risk=result.risk[G, idx], theory_of_choice=th[G, idx],
                            theory_index=t_idx, theory_risk=th[G, t_idx])


def regularised_checks(wd_result: WeightDecayGrid, linear: GridResult,
                       fwer: float = 0.01) -> RegularisedChecks:
    r"""Agreement of the regularised-scratch simulation with theory.

    * ``weight_decay``: every :math:`(\gamma, \lambda_{wd})` cell against
      :func:`theory_risks`, with the optimisation error (distance to the exact limit,
      :func:`~transferkit.stats.risk_error_bound`) allowed on top;
    * ``tuned_transferability``: the paired per-draw difference of the tuned scratch risk and
      the linear-transfer risk (``linear`` from :func:`transferkit.experiments.linear_transfer.linear_transfer_grid`
      on the same draws) against the theory of the chosen weight decay minus Eq. 10.

    Returns a :class:`RegularisedChecks` of the two.
    """
    th = theory_risks(wd_result)
    opt = stats.risk_error_bound(wd_result.risk, np.nan_to_num(wd_result.dist))
    t = tune(wd_result)
    G = np.arange(len(t.index))
    lt = linear.risk("linear")                                     # (G, T, draws)
    n = linear.n[:, None]
    lt_th = theory.deep_linear.linear_transfer_risk(n, linear.thetas[None, :], linear.sigma)
    tuned_T = t.risk[:, None, :] - lt
    atol = opt[G, t.index].mean(-1)[:, None]
    return RegularisedChecks(
        weight_decay=stats.agreement(wd_result.risk, th, atol=opt.mean(-1), fwer=fwer),
        tuned_transferability=stats.agreement(tuned_T, t.theory_of_choice[:, None] - lt_th,
                                              atol=atol, fwer=fwer),
    )
