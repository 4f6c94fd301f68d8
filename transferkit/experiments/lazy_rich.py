r"""Between lazy and rich: transfer from two-layer ReLU networks pretrained at different init scales.

Paper 000 (Sec. 4, conclusion, App. E Fig. 9) argues that a network pretrained in the
*rich* regime sparsifies its features to those of the source task, and then transfers
badly to targets outside them, while a network pretrained in the *lazy* regime keeps its
random features and gains nothing from pretraining; somewhere in between, negative
transfer may disappear.

Model (paper 000, Sec. 4): :math:`f(x) = \frac1m\sum_{i=1}^m c_i\,\sigma(w_i^\top x)`,
:math:`\sigma = \mathrm{ReLU}`, :math:`x\sim\mathcal N(0, I_d)`; teachers of Eqs. 16-17:
a target network of :math:`m_*` neurons and a source network made of a random fraction
:math:`1-\mu` of them.

Everything population-level is exact: for Gaussian inputs the arc-cosine kernel
(Cho & Saul)

.. math::

    \kappa(w, v) = \mathbb E\,\sigma(w^\top x)\sigma(v^\top x)
    = \frac{\|w\|\|v\|}{2\pi}\bigl(\sin\varphi + (\pi-\varphi)\cos\varphi\bigr),

with :math:`\varphi` the angle between :math:`w` and :math:`v`, gives the population
risk of any network against any teacher as a quadratic form
(:func:`transferkit.models.relu.population_risk`, shared with Fig. 3),
so pretraining is done on the *population* source loss (as for the deep linear
networks of Sec. 3) and every risk is exact, without a test set.

Protocol (ours; paper 000 gives none for an init-scale sweep, see :func:`init_scale_sweep`):
pretrain from :math:`w_i(0) = \alpha\,\hat w_i` (:math:`\hat w_i` uniform on the sphere)
and :math:`c_i(0) = 0`; gradient flow conserves :math:`c_i^2 - \|w_i\|^2 = -\alpha^2`,
so for large :math:`\alpha` the readout does all the work and the features stay at
their random initial value (lazy: the network is a random-features model), while for
small :math:`\alpha` the neurons align with the teacher's before they grow (rich).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .. import models
from .._validate import check_budget_among, check_int, check_magnitude, check_positive
from ..models.device import as_tensor, default_device
from ..models.relu import (
    TEST_STREAM,
    check_alphas,
    draw_init_scale_teachers,
    init_scale_targets,
    pretrain_init_scale,
    readout_transfer,
    scratch_init_scale,
)
from ..streams import keyed_rng
from ..sweep import Grid, run

__all__ = ["INIT_SCALE", "InitScalePreset", "monte_carlo_check", "span_floor", "init_scale_sweep",
           "init_scale_pretrain_cell", "init_scale_scratch_cell", "Training",
           "InitScaleSweepResult", "MonteCarloCheck"]


# ---------------------------------------------------------------------------
# the chapter's parameters
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class InitScalePreset:
    r"""Parameters of the lazy-to-rich chapter (paper 000, App. E, Fig. 9, as an init-scale
    sweep) at one scale.

    The presets are :data:`INIT_SCALE` (``INIT_SCALE["paper"]``, ``INIT_SCALE["smoke"]``);
    the chapter notebook ``notebooks/lazy_rich.py`` reads them from there and passes them to
    :func:`init_scale_sweep` and :func:`monte_carlo_check`.  Grids are tuples (immutable);
    ``np.array(preset.alphas)`` is the array the sweep takes.

    Attributes
    ----------
    draws : int
        Draws of teachers, initial directions and target samples (ours; paper 000, App. D.2
        uses 100 realisations of the training data and 10 initialisation seeds).
    alphas : tuple of float
        Pretraining initialisation scales :math:`\alpha` (ours; the paper's Fig. 9 sweeps a
        penalty :math:`\lambda` instead).
    ns : tuple of int
        Target sample sizes :math:`n` (ours; the caption of Fig. 9 does not list them).
    max_steps : int
        Step budget of pretraining, and of the scratch runs of :func:`monte_carlo_check`
        (ours; App. D.2: :math:`10^5` iterations).
    scratch_max_steps : int
        Step budget of scratch training in :func:`init_scale_sweep` (ours: four times
        ``max_steps``).
    d, m, m_star : int
        Input dimension, student width :math:`m`, teacher width :math:`m_*` (ours; the
        caption of Fig. 9 and App. D.2: 100, 1000, 100).
    mu : float
        Ablated fraction :math:`\mu` of Eq. 16 (ours; the caption of Fig. 9: 0.9).
    sigma : float
        Label-noise standard deviation of the target samples (caption of Fig. 3: 0).
    loss_tol : float
        Stopping tolerance on the relative training loss (App. D.2: :math:`10^{-6}`).
    stall_tol : float
        Plateau rule: stop when the loss fell by less than this fraction of itself over the
        trainer's window of 200 steps (ours).
    mc_test : int
        Monte Carlo test inputs per draw of :func:`monte_carlo_check` (ours).
    seed : int
        Base seed of the random streams (ours).
    """

    draws: int                  # ours (paper: 100 data realisations x 10 seeds, App. D.2)
    alphas: tuple               # ours (paper: a penalty sweep, caption of Fig. 9)
    ns: tuple                   # ours (not stated in the paper)
    max_steps: int              # ours (paper: 1e5 iterations, App. D.2)
    scratch_max_steps: int      # ours (paper: 1e5 iterations, App. D.2)
    d: int = 20                 # ours (paper: 100, caption of Fig. 9, App. D.2)
    m: int = 50                 # ours (paper: 1000, caption of Fig. 9, App. D.2)
    m_star: int = 12            # ours (paper: 100, caption of Fig. 9, App. D.2)
    mu: float = 0.5             # ours (paper: 0.9, caption of Fig. 9)
    sigma: float = 0.0          # paper 000, caption of Fig. 3
    loss_tol: float = 1e-6      # paper 000, App. D.2 (ours: relative to the zero function)
    stall_tol: float = 1e-4     # ours
    mc_test: int = 20_000       # ours
    seed: int = 0               # ours


#: The lazy-to-rich chapter's parameters at each ``TRANSFERKIT_SCALE``.
#:
#: The paper (000) states d = 100, m = 1000, m* = 100 (App. E, caption of Fig. 9, and
#: App. D.2), mu = 0.9 (caption of Fig. 9); first-layer weights initialised on the sphere and
#: output weights at 1e-7, full-batch gradient descent at learning rate 0.01 m for 1e5
#: iterations or until the loss reaches 1e-6, 100 realisations of the training data and 10
#: initialisation seeds (App. D.2); label noise sigma = 0 (caption of Fig. 3).  Its Fig. 9
#: moves between the regimes with a penalty lambda in {0, 1e-4, 1e-3, 1e-2, 1e-1} on the
#: pretraining, not with the initialisation scale, and lists no target sizes.
#:
#: Taken from the paper: sigma = 0 (Fig. 3) and the loss tolerance 1e-6 (App. D.2; ours is
#: relative to the loss of the zero function).  Ours, at both scales: the init-scale
#: protocol (the alphas, pretraining from w = alpha w_hat and c = 0; scratch training from
#: w on the sphere with c = 0 rather than 1e-7), the target sizes, the adaptive step instead
#: of the fixed learning rate, the plateau rule (loss down by less than 1e-4 of itself over
#: 200 steps), the step budgets (scratch four times pretraining) instead of 1e5 iterations,
#: 20,000 Monte Carlo test inputs and seed 0; the sizes d = 20, m = 50, m* = 12, mu = 0.5
#: (6 source neurons of 12) because the sweep trains every alpha and draw on one CPU core
#: (the paper's own penalty protocol at its sizes is in the chapter on Fig. 3).  ``paper``:
#: 10 draws (each a draw of teachers, initial directions and target sample), 8 alphas over
#: four decades, n from d/4 to 10d without n = m (the interpolation threshold of the
#: re-fitted readout), 5000 pretraining steps.  ``smoke``: the same pipeline small enough
#: for the tests (8 draws, 4 alphas, 2 sizes, 1500 pretraining steps).
INIT_SCALE = {
    "paper": InitScalePreset(draws=10, alphas=(0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0),
                             ns=(5, 10, 20, 100, 200), max_steps=5000, scratch_max_steps=20_000),
    "smoke": InitScalePreset(draws=8, alphas=(0.1, 1.0, 3.0, 100.0), ns=(5, 100),
                             max_steps=1500, scratch_max_steps=6000),
}


@dataclass(frozen=True)
class Training:
    r"""How one batch of trainings ended (:class:`transferkit.models.relu.InitScaleResult`).

    Attributes
    ----------
    loss : ndarray
        Final training loss, relative to the loss of the zero function.
    converged : ndarray of bool
        Whether the loss reached ``loss_tol``.
    stalled : ndarray of bool
        Whether training stopped because the loss stopped decreasing (``stall_tol``).
    steps : ndarray of int
        Gradient steps taken.
    """

    loss: np.ndarray
    converged: np.ndarray
    stalled: np.ndarray
    steps: np.ndarray


@dataclass(frozen=True)
class InitScaleSweepResult:
    r"""The result of :func:`init_scale_sweep`: transferability against the init scale.

    All risks are exact population excess risks in units of :math:`\|f_t\|^2_{L_2} = 1`
    (paper 000, Sec. 4 model, teachers of Eqs. 16-17).

    Attributes
    ----------
    alphas, ns : ndarray
        The init scales :math:`\alpha` and the target sample sizes :math:`n`.
    d, m, m_star, mu, sigma, draws
        Input dimension, student and teacher widths, ablated fraction, label noise, draws.
    transfer : ndarray, shape (len(alphas), len(ns), draws)
        Risk of the readout re-fitted on the pretrained features (linear transfer).
    scratch : ndarray, shape (len(ns), draws)
        Risk of the network trained from scratch on the same samples.
    lazy : ndarray, shape (len(ns), draws)
        Readout re-fitted on the initial random features (the :math:`\alpha\to\infty` limit).
    source : ndarray, shape (len(ns), draws)
        Readout re-fitted on the source teacher's own neurons.
    T : ndarray, shape (len(alphas), len(ns), draws)
        Transferability ``scratch - transfer``.
    floor : ndarray, shape (draws,)
        :math:`\|P_\perp f_t\|^2` for the source neurons (paper 000, App. C, Eq. 156).
    span_floor : ndarray, shape (len(alphas), draws)
        :math:`\|P_\perp f_t\|^2` for the pretrained features (:func:`span_floor`).
    lazy_floor : ndarray, shape (draws,)
        :math:`\|P_\perp f_t\|^2` for the initial random features.
    movement : ndarray, shape (len(alphas), draws)
        :math:`\|W - W_0\|_F/\|W_0\|_F` of pretraining.
    pretraining : Training
        How pretraining ended, arrays ``(len(alphas), draws)``.
    scratch_training : Training
        How scratch training ended, arrays ``(len(ns), draws)``.
    """

    alphas: np.ndarray
    ns: np.ndarray
    d: int
    m: int
    m_star: int
    mu: float
    sigma: float
    draws: int
    transfer: np.ndarray
    scratch: np.ndarray
    lazy: np.ndarray
    source: np.ndarray
    T: np.ndarray
    floor: np.ndarray
    span_floor: np.ndarray
    lazy_floor: np.ndarray
    movement: np.ndarray
    pretraining: Training
    scratch_training: Training


@dataclass(frozen=True)
class MonteCarloCheck:
    r"""The result of :func:`monte_carlo_check`.

    Attributes
    ----------
    exact : ndarray, shape (draws,)
        The exact population risk (:func:`transferkit.models.relu.population_risk`).
    sq_err : ndarray, shape (draws, test)
        Squared errors on fresh Gaussian test inputs (their mean estimates ``exact``).
    """

    exact: np.ndarray
    sq_err: np.ndarray


# ---------------------------------------------------------------------------
# the sweep
# ---------------------------------------------------------------------------

def _device(device):
    return torch.device(device) if device is not None else default_device()


#: Largest label noise of the init-scale simulations.  Their losses are sums of squared
#: targets; at sigma = 1e200 scratch training overflowed to a non-finite loss after
#: pretraining had run, and the message blamed the step size.
SIGMA_MAX = 1e100


def _check_size(d, m, m_star, n_max, draws, scales=1, test=0) -> None:
    """Refuse, before any allocation or loop over draws, a sweep whose float64 arrays would
    exceed the memory budget (``transferkit._validate.check_budget``): per draw, ``scales``
    students of ``m`` units (weights, gradients and their ``m x (m + m_star)`` kernels), the
    samples ``n_max x d`` and ``test x d``; then ``draws`` of them.  Names the size furthest
    above the paper preset (:data:`INIT_SCALE`)."""
    paper = INIT_SCALE["paper"]

    def estimate(m, d, ns, test, m_star, draws):
        return 8 * draws * (scales * m * (3 * d + m + m_star)
                            + (scales * 3 * m + ns + test + m_star) * d + ns * (d + scales * m)
                            + test * (d + m) + m_star * (d + scales * m))

    check_budget_among(estimate, dict(m=m, d=d, ns=n_max, test=test, m_star=m_star, draws=draws),
                       dict(m=paper.m, d=paper.d, ns=max(paper.ns), test=paper.mc_test,
                            m_star=paper.m_star, draws=paper.draws))


def _checked_sweep_sizes(d, m, m_star, draws) -> tuple[int, int, int, int]:
    """The sizes of the sweep and of its cells, checked before any work: ``d``, ``m``,
    ``m_star`` and ``draws`` integers >= 1 (whole floats taken as integers), returned as
    ``int`` in that order."""
    d = check_int("d", d, 1)
    m_star = check_int("m_star", m_star, 1)
    m = check_int("m", m, 1)
    return d, m, m_star, check_int("draws", draws, 1)


def _check_training(sigma, seed, loss_tol, max_steps, stall_tol) -> tuple[int, float, int, float]:
    """The settings of the sweep's cells, checked before any work: the trainers' own check
    (:func:`~transferkit.models.relu.check_init_scale_settings`, which
    :func:`~transferkit.models.relu.descend_init_scale` runs again once reached) and the
    target's noise and seed.  Returns ``(seed, loss_tol, max_steps, stall_tol)`` as checked
    (``int``, ``float``, ``int``, ``float``)."""
    check_magnitude("sigma", check_positive("sigma", sigma, allow_zero=True), SIGMA_MAX)
    seed = check_int("seed", seed, 0)
    return (seed, *models.relu.check_init_scale_settings(loss_tol, max_steps, stall_tol))


def init_scale_pretrain_cell(alpha, d, m, m_star, mu, draws, seed=0, loss_tol=1e-6,
                             max_steps=20_000, stall_tol=1e-4, device=None,
                             dtype=torch.float64):
    r"""Pretraining of :func:`init_scale_sweep`, every ``alpha`` and draw in one batch
    (:func:`transferkit.models.relu.pretrain_init_scale`): a cell function for
    :func:`transferkit.sweep.run` (vectorise ``alpha``).  Returns ``W``, ``W0``
    ``(len(alpha), draws, m, d)``, ``loss``, ``converged``, ``stalled``, ``steps`` and
    ``movement`` ``(len(alpha), draws)``.

    The arguments are checked as :func:`init_scale_sweep` checks them, before any work (a
    number ``alpha`` is one init scale; a request beyond the memory budget is refused)."""
    d, m, m_star, draws = _checked_sweep_sizes(d, m, m_star, draws)
    alpha = check_alphas(alpha)
    seed, loss_tol, max_steps, stall_tol = _check_training(0.0, seed, loss_tol, max_steps,
                                                           stall_tol)
    _check_size(d, m, m_star, 0, draws, len(alpha))
    T = draw_init_scale_teachers(d, m_star, mu, draws, seed, _device(device), dtype)
    res, W0 = pretrain_init_scale(T, m, alpha, seed, loss_tol, max_steps, stall_tol, False)
    shape = (len(alpha), draws)
    movement = ((res.W - W0).flatten(1).norm(dim=1) / W0.flatten(1).norm(dim=1)).cpu().numpy()
    return {"W": res.W.cpu().numpy().reshape(shape + (m, d)),
            "W0": W0.cpu().numpy().reshape(shape + (m, d)),
            "loss": res.loss.reshape(shape), "converged": res.converged.reshape(shape),
            "stalled": res.stalled.reshape(shape), "steps": res.steps.reshape(shape),
            "movement": movement.reshape(shape)}


def init_scale_scratch_cell(n, d, m, m_star, mu, draws, sigma=0.0, seed=0, loss_tol=1e-6,
                            max_steps=20_000, stall_tol=1e-4, device=None, dtype=torch.float64):
    r"""Scratch training of :func:`init_scale_sweep` for one target size ``n``
    (:func:`transferkit.models.relu.scratch_init_scale`, all draws in one batch): a cell
    function for :func:`transferkit.sweep.run`.  Returns ``risk``, ``loss``, ``converged``,
    ``stalled`` and ``steps`` ``(draws,)``.

    The arguments are checked as :func:`init_scale_sweep` checks them, before any work (a
    request beyond the memory budget is refused)."""
    d, m, m_star, draws = _checked_sweep_sizes(d, m, m_star, draws)
    n = check_int("n", n, 1)
    seed, loss_tol, max_steps, stall_tol = _check_training(sigma, seed, loss_tol, max_steps,
                                                           stall_tol)
    _check_size(d, m, m_star, n, draws)
    T = draw_init_scale_teachers(d, m_star, mu, draws, seed, _device(device), dtype)
    X, y = init_scale_targets(T, n, sigma, seed)
    sc = scratch_init_scale(X, y, m, seed, loss_tol, max_steps, stall_tol, progress=False)
    with torch.no_grad():
        risk = models.relu.population_risk(sc.W, sc.c / m, T.V, T.b_t).cpu().numpy()
    return {"risk": risk, "loss": sc.loss, "converged": sc.converged, "stalled": sc.stalled,
            "steps": sc.steps}


def init_scale_sweep(d, m, m_star, mu, alphas, ns, draws=4, sigma=0.0, seed=0, loss_tol=1e-6,
          max_steps=20_000, stall_tol=1e-4, scratch_max_steps=None, device=None,
          dtype=torch.float64, progress=None, **run_kwargs) -> InitScaleSweepResult:
    r"""Transferability against the pretraining init scale :math:`\alpha` and the target size :math:`n`.

    For each draw (teachers, initial directions, target samples): pretrain at every
    ``alpha`` on the population source loss (:func:`~transferkit.models.relu.pretrain_init_scale`, all alphas and draws in one
    batch), re-fit the readout on :math:`n` target samples (linear transfer,
    :func:`~transferkit.models.relu.readout_transfer`), and train the whole network from scratch on the same
    samples (:func:`~transferkit.models.relu.scratch_init_scale`; it does not depend on :math:`\alpha`).  All risks are exact
    population excess risks, in units of :math:`\|f_t\|^2_{L_2} = 1`.  Two references
    bracket the sweep:

    * ``lazy``: readout re-fitted on the *initial* random features
      :math:`\sigma(\hat W x)`: the :math:`\alpha\to\infty` limit, where the features do
      not move (by homogeneity the scale of :math:`W` does not matter);
    * ``source``: readout re-fitted on the source teacher's own neurons (the features a
      perfectly rich pretraining keeps, the analogue of Thm 3.4); its :math:`n\to\infty`
      risk is the out-of-span norm :math:`\|P_\perp f_t\|^2` (paper 000, App. C,
      Eq. 156), returned as ``floor``.

    The two heavy steps go through :func:`transferkit.sweep.run` (cached, resumable, Dask):
    pretraining is one cell with every :math:`\alpha` vectorised
    (:func:`init_scale_pretrain_cell`: one batch, as before), scratch training one cell
    per :math:`n` (:func:`init_scale_scratch_cell`); ``run_kwargs`` go to
    :func:`~transferkit.sweep.run`.  ``scratch_max_steps`` is the step budget of scratch
    training (default ``max_steps``).

    Returns
    -------
    InitScaleSweepResult
        ``transfer`` ``(len(alphas), len(ns), draws)``, ``scratch``, ``lazy``, ``source``
        ``(len(ns), draws)``, ``T = scratch - transfer``, the floors, ``movement`` and how
        pretraining and scratch training ended.
    """
    d, m, m_star, draws = _checked_sweep_sizes(d, m, m_star, draws)
    alphas = check_alphas(alphas)
    ns = [check_int("n", n, 1) for n in np.atleast_1d(ns)]
    seed, loss_tol, max_steps, stall_tol = _check_training(sigma, seed, loss_tol, max_steps,
                                                           stall_tol)
    _check_size(d, m, m_star, max(ns, default=1), draws, len(alphas))
    if scratch_max_steps is not None:
        scratch_max_steps = check_int("scratch_max_steps", scratch_max_steps, 0)
    device = torch.device(device) if device is not None else default_device()
    dev_key = None if device == default_device() else str(device)
    T = draw_init_scale_teachers(d, m_star, mu, draws, seed, device, dtype)
    A, N = len(alphas), len(ns)
    common = dict(d=d, m=m, m_star=m_star, mu=mu, draws=draws, seed=seed, loss_tol=loss_tol,
                  stall_tol=stall_tol, device=dev_key, dtype=dtype)
    kw = dict(run_kwargs)
    kw.setdefault("progress", progress)
    pre = run(init_scale_pretrain_cell, Grid(alpha=alphas), vectorize=("alpha",),
              fixed=dict(common, max_steps=max_steps), desc="pretraining (all alphas)", **kw)
    sc = run(init_scale_scratch_cell, Grid(n=np.array(ns)),
             fixed=dict(common, sigma=sigma, max_steps=scratch_max_steps or max_steps),
             desc="scratch", **kw)
    W = as_tensor(pre["W"].reshape((A * draws,) + pre["W"].shape[2:]), device, dtype)
    W0 = as_tensor(pre["W0"].reshape((A * draws,) + pre["W0"].shape[2:]), device, dtype)
    shape = (A, draws)
    transfer, lazy, source = np.empty((A, N, draws)), np.empty((N, draws)), np.empty((N, draws))
    data = [init_scale_targets(T, n, sigma, seed) for n in ns]
    V_all, b_all = T.V.repeat(A, 1, 1), T.b_t.repeat(A, 1)
    keepV = torch.where(T.keep[..., None], T.V, torch.zeros_like(T.V))  # source neurons only
    with torch.no_grad():
        for j, (X, y) in enumerate(data):
            a = readout_transfer(W, X.repeat(A, 1, 1), y.repeat(A, 1))
            transfer[:, j] = models.relu.population_risk(W, a, V_all, b_all).cpu().numpy() \
                .reshape(shape)
            W_hat = W0[:draws] / float(alphas[0])
            lazy[j] = models.relu.population_risk(W_hat, readout_transfer(W_hat, X, y),
                                                  T.V, T.b_t).cpu().numpy()
            a_s = readout_transfer(keepV, X, y) * T.keep
            source[j] = models.relu.population_risk(T.V, a_s, T.V, T.b_t).cpu().numpy()
    scratch = sc["risk"]
    return InitScaleSweepResult(
        alphas=alphas, ns=np.array(ns), d=d, m=m, m_star=m_star, mu=mu, sigma=sigma, draws=draws,
        transfer=transfer, scratch=scratch, lazy=lazy, source=source, T=scratch[None] - transfer,
        floor=span_floor(keepV, T.V, T.b_t),    # zero rows add nothing to the span
        span_floor=span_floor(W, V_all, b_all).reshape(shape),
        lazy_floor=span_floor(W0[:draws], T.V, T.b_t), movement=pre["movement"],
        pretraining=Training(loss=pre["loss"], converged=pre["converged"],
                             stalled=pre["stalled"], steps=pre["steps"]),
        scratch_training=Training(loss=sc["loss"], converged=sc["converged"],
                                  stalled=sc["stalled"], steps=sc["steps"]))


def span_floor(W, V, b, rcond=1e-10) -> np.ndarray:
    r"""Out-of-span norm :math:`\|P_\perp f_*\|^2_{L_2}` of the teacher ``(V, b)`` for the
    features of ``W`` (torch or numpy, batched), ``(B,)``.

    The smallest population risk of any readout on the neurons ``W`` (paper 000, App. C,
    Eqs. 154-156): :func:`transferkit.models.relu.rkhs_norms`.  Every linear-transfer risk of
    these features is at least this value, whatever the sample; zero rows of ``W`` add
    nothing to the span.
    """
    def np_(x):                      # torch tensors as the sweep holds them, or arrays
        return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else x

    return models.relu.rkhs_norms(np_(W), models.relu.Teacher(np_(V), np_(b)), rcond=rcond)[1]


def monte_carlo_check(d, m, m_star, mu, n, draws=4, seed=0, max_steps=20_000, test=20_000,
                      loss_tol=1e-6, stall_tol=1e-4) -> MonteCarloCheck:
    r"""The exact risk (:func:`transferkit.models.relu.population_risk`) against a Monte Carlo test set.

    Trains the scratch networks of :func:`init_scale_sweep` for one target size ``n`` and returns,
    per draw, the exact risk ``exact`` ``(draws,)`` and the squared errors on ``test``
    fresh Gaussian inputs ``sq_err`` ``(draws, test)``, whose mean estimates it, as a
    :class:`MonteCarloCheck`.
    """
    test = check_int("test", test, 2)
    d, m, m_star, draws = _checked_sweep_sizes(d, m, m_star, draws)
    n = check_int("n", n, 1)
    seed, loss_tol, max_steps, stall_tol = _check_training(0.0, seed, loss_tol, max_steps,
                                                           stall_tol)
    _check_size(d, m, m_star, n, draws, 1, test)
    T = draw_init_scale_teachers(d, m_star, mu, draws, seed)
    X, y = init_scale_targets(T, n, 0.0, seed)
    sc = scratch_init_scale(X, y, m, seed, loss_tol, max_steps, stall_tol, progress=False)
    Xt = as_tensor(np.stack([keyed_rng(seed, b, TEST_STREAM, test).standard_normal((test, d))
                             for b in range(draws)]), T.V.device, T.V.dtype)
    with torch.no_grad():
        exact = models.relu.population_risk(sc.W, sc.c / m, T.V, T.b_t)
        sq_err = models.relu.sample_risk(sc.W, sc.c / m, T.V, T.b_t, Xt)
    return MonteCarloCheck(exact=exact.cpu().numpy(), sq_err=sq_err.cpu().numpy())
