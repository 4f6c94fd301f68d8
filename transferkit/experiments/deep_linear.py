r"""End-to-end simulations of transfer in deep linear networks (paper 000, Sec. 3; App. D).

One *draw* consists of a source teacher :math:`\beta_s`, a unit vector
:math:`\nu\perp\beta_s` (so the target at angle :math:`\theta` is
:math:`\beta_t = \cos\theta\,\beta_s + \sin\theta\,\nu`), a network pretrained on the
population source loss from scale :math:`\alpha`, and, for every sample size
:math:`n = \mathrm{round}(\gamma d)`, a target design :math:`X` and label noise
:math:`\epsilon`.  The three methods are compared on the same :math:`X, \epsilon`:

* **scratch**: the same architecture trained on the target sample from scale
  :math:`\alpha` (Thm 3.5-3.6);
* **linear**: last layer re-fitted on frozen pretrained features (Eq. 9, Thm 3.7);
* **finetune**: all layers trained from the pretrained weights (Thm 3.9).

What does not depend on a parameter is computed once: pretraining does not depend on
:math:`(\gamma, \theta)`, the eigendecomposition of :math:`X` not on :math:`\theta`, and the
risk of scratch training not on :math:`\theta` in distribution (the inputs and the
initialisation are isotropic, so only :math:`\|\beta_t\| = 1` matters).  One scratch model
per :math:`(n, \text{draw})` is therefore trained, on the :math:`\theta = \pi/2` target
:math:`y = X\nu + \epsilon`, and its risk is used for every :math:`\theta` (set
``reuse_scratch=False`` to train one per :math:`\theta`).  All risks are excess
population risks :math:`\|\hat\beta - \beta_t\|^2`.

Random numbers come from :class:`numpy.random.Generator` keyed by
``(seed, draw, purpose, n)``: a cell's numbers do not depend on the other cells of the
grid, and the same seed gives the same numbers.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from tqdm import tqdm

from .. import config
from .._validate import (MAX_INT, check_budget, check_grid, check_int, check_magnitude,
                         check_open_unit, check_positive, check_seed)
from ..models.deep_linear import (
    empirical_objective,
    end_to_end,
    feature_map,
    feature_subspace,
    finetune_chain,
    gradient_descent,
    init_deep_linear,
    linear_transfer,
    population_objective,
    rank_one_chain,
)
from ..models.device import as_tensor, default_device
from ..streams import keyed_rng
from ..theory.linear_teachers import deep_finetune_scale

__all__ = ["METHODS", "GridResult", "MethodRuns", "PointResult", "Pretrained", "pretrain", "sample_size",
           "simulate_grid", "simulate_transfer"]


METHODS = ("scratch", "linear", "finetune")


TEACHER_STREAM, DATA_STREAM, SCRATCH_STREAM = 0, 1, 2


#: Largest initialisation scale of the simulations.  The theory (paper 000, Sec. 3) is that
#: of small initialisation; the book uses alpha <= 0.5.  From alpha ~ 1e10 the scratch problem
#: starts at weights of size alpha^depth: gradient descent ran for minutes and returned
#: risks of 1e39.  Larger values are refused.
ALPHA_MAX = 10.0

#: Largest label-noise standard deviation of the simulations.  Their losses are sums of
#: squared targets of order sigma^2: at sigma = 1e150 (d = 3) scratch training overflowed to
#: a non-finite loss and stopped with a divergence, after minutes of work.  Below 1e100 the
#: squares stay far from the float range (the rule of the closed forms' inputs,
#: ``MAX_ENTRY`` = 1e100 of the validators); larger values are refused.
SIGMA_MAX = 1e100

#: Smallest ``alpha ** depth`` of the simulations.  The initial end-to-end map is of order
#: alpha^depth; at depth 3, alpha = 1e-160 (1e-480, not a float) stopped pretraining with a
#: divergence blamed on the step size, and alpha = 5e-324 (depth 2) ran without end on
#: subnormal numbers.  Smaller scales are refused (depth 2: alpha >= 1e-150).
ALPHA_POW_MIN = 1e-300


def sample_size(gamma, d) -> int:
    """``n = round(gamma d)``, checked to be at least 1 and at most 2**53 (``MAX_INT``)."""
    try:
        n = int(round(float(gamma) * d))
    except (OverflowError, ValueError, TypeError):  # gamma * d = inf or NaN, or not a number
        raise ValueError(f"gamma * d must be a finite sample size (gamma={gamma!r}, d={d!r})") from None
    if n < 1:
        raise ValueError(f"gamma * d must round to n >= 1 (gamma={gamma!r}, d={d!r})")
    if n > MAX_INT:
        raise ValueError(f"gamma * d must round to n <= 2**53 (gamma={gamma!r}, d={d!r})")
    return n


def check_simulation_args(d, sigma, depth, draws, alpha, seed=0):
    """Validate the arguments shared by the simulations (``ValueError`` naming the first bad one)
    and return ``(d, depth, draws, seed)`` as ``int`` (whole floats such as ``10.0`` are
    accepted).

    ``d >= 2``, ``0 <= sigma <=`` :data:`SIGMA_MAX`, ``depth >= 2``, ``draws >= 1``,
    :data:`ALPHA_POW_MIN` ``** (1 / depth) <= alpha <=`` :data:`ALPHA_MAX`, ``seed`` an
    integer >= 0; and the weights of ``draws`` networks of width ``d`` must fit the memory
    budget (``transferkit._validate.check_budget``).
    """
    d = check_int("d", d, 2)
    check_magnitude("sigma", check_positive("sigma", sigma, allow_zero=True), SIGMA_MAX)
    depth = check_int("depth", depth, 2)
    draws = check_int("draws", draws, 1)
    check_alpha("alpha", alpha, depth)
    seed = check_seed("seed", seed)
    # pretrained and initial weights, their feature subspace: ~ (depth + 2) d^2 per draw
    check_simulation_budget(d, depth, draws, [1])
    return d, depth, draws, seed


def check_alpha(name, alpha, depth) -> float:
    """An initialisation scale of a depth-``depth`` linear network (``alpha`` of the
    simulations, ``init_scale`` or an entry of ``alphas`` elsewhere), as a ``float``:
    :data:`ALPHA_POW_MIN` ``** (1 / depth) <= alpha <=`` :data:`ALPHA_MAX`, else a
    ``ValueError`` naming ``name`` and the range."""
    alpha = check_positive(name, alpha)
    if alpha > ALPHA_MAX:
        raise ValueError(f"{name} must be in (0, {ALPHA_MAX:g}] (got {alpha!r}): the simulations "
                         "model small initialisation (paper 000, Sec. 3)")
    lo = ALPHA_POW_MIN ** (1.0 / depth)
    if alpha < lo:
        raise ValueError(f"{name} must be >= {lo:.3g} at depth {depth} (got {alpha!r}): below it "
                         f"alpha**depth, the scale of the initial end-to-end map, is under "
                         f"{ALPHA_POW_MIN:g} and gradient descent cannot leave the origin")
    return alpha


def _check_training(rcond, loss_tol, flow_tol=None) -> None:
    """The training settings of :func:`pretrain` and :func:`simulate_grid`, checked before
    any work (the trainers check them too, but only once they are reached): ``rcond`` in
    (0, 1) (:func:`~transferkit.models.deep_linear.feature_subspace`), ``loss_tol`` > 0,
    ``flow_tol`` > 0 or ``None``."""
    check_open_unit("rcond", rcond)
    check_positive("loss_tol", loss_tol)
    if flow_tol is not None:
        check_positive("finetune_flow_tol", flow_tol)


def check_simulation_budget(d, depth, draws, ns, cells=1, methods=1) -> None:
    """Refuse, before any allocation, a grid whose arrays would exceed the memory budget.

    Estimate (float64): per draw, ``depth + 2`` matrices ``d x d`` (weights, their copies and
    the eigendecomposition) and a design ``n x d`` for the largest ``n``; plus
    ``cells * draws * methods`` result entries of ~4 arrays.  The parameter named is the
    one that dominates the estimate.
    """
    n_max = max(ns)
    parts = {"d": 8 * draws * (depth + 2) * d * d, "gammas": 8 * draws * 2 * n_max * d,
             "draws": 8 * draws * (depth + 2) * d * d}
    total = 8 * draws * ((depth + 2) * d * d + 2 * n_max * d + 4 * cells * methods)
    if draws * cells * methods * 32 > parts["d"]:
        parts["draws"] = 32 * draws * cells * methods
    name = max(parts, key=parts.get)
    if name == "d" and draws > d:
        name = "draws"
    if name in ("d", "draws") and depth + 2 > max(d, draws):    # the d x d matrices per layer
        name = "depth"
    value = {"d": d, "draws": draws, "depth": depth, "gammas": f"... (n up to {n_max})"}[name]
    check_budget(name, value, total)


@dataclass
class Pretrained:
    """Teachers and networks pretrained on the population source loss, one per draw."""

    beta_s: torch.Tensor        # (B, d)
    nu: torch.Tensor            # (B, d), unit, orthogonal to beta_s
    weights: list               # pretrained layers
    U: torch.Tensor             # (B, d, r) feature subspace
    S: torch.Tensor             # (B, r)
    rank: np.ndarray            # (B,) effective feature rank
    info: object = field(repr=False, default=None)

    @functools.cached_property
    def feature_svals(self) -> torch.Tensor:
        r"""All singular values of :math:`W_1\cdots W_{L-1}`, ``(B, min(d, p))`` (Thm 3.4), computed
        from ``weights`` when first asked for (a full decomposition that pretraining itself
        does not need)."""
        return torch.linalg.svd(feature_map(self.weights), full_matrices=False)[1]

    def beta_t(self, theta) -> torch.Tensor:
        """Targets for an array of angles, ``(B, m, d)``."""
        th = as_tensor(np.atleast_1d(theta), self.beta_s.device, self.beta_s.dtype)
        return (torch.cos(th)[None, :, None] * self.beta_s[:, None, :]
                + torch.sin(th)[None, :, None] * self.nu[:, None, :])


@dataclass(frozen=True)
class MethodRuns:
    r"""The runs of one method (scratch, linear transfer or fine-tuning) over a grid or a point.

    Attributes
    ----------
    risk : numpy.ndarray
        Excess population risks :math:`\|\hat\beta - \beta_t\|^2` (paper 000, Eq. 6), shape
        ``(len(gammas), len(thetas), draws)`` in a :class:`GridResult`, ``(draws,)`` in a
        :class:`PointResult`.
    converged : numpy.ndarray of bool or None
        Whether gradient descent met its stopping rule, same shape as ``risk``; ``None`` for
        linear transfer (a least-squares fit, paper 000, Eq. 9).
    steps : numpy.ndarray of int or None
        Gradient steps taken, same shape as ``risk``; ``None`` for linear transfer.
    """

    risk: np.ndarray
    converged: np.ndarray | None = None
    steps: np.ndarray | None = None


#: Per-cell diagnostics a :class:`GridResult` may carry, by the name of its field (and of the
#: flat key that the cell functions of the sweeps return).
DIAGNOSTICS = ("scratch_minnorm_dist", "feature_rank", "finetune_thm52", "finetune_thm52_dist",
               "finetune_thm52_k", "finetune_row_error", "finetune_imbalance_drift",
               "finetune_chain_residual", "finetune_eq14")


def _runs_methods(self) -> tuple:
    """The methods simulated, in order."""
    return tuple(self.runs)


def _runs_risk(self, method: str) -> np.ndarray:
    """Risks of ``method`` (``KeyError`` naming the methods present if absent)."""
    if method not in self.runs:
        raise KeyError(f"no {method!r} runs in this result (methods: {tuple(self.runs)})")
    return self.runs[method].risk


def _runs_converged(self, method: str) -> np.ndarray:
    """Convergence flags of a trained method, shaped as its risks."""
    _runs_risk(self, method)                                # KeyError if absent
    c = self.runs[method].converged
    if c is None:
        raise KeyError(f"{method!r} has no convergence flags (not trained by gradient descent)")
    return c


@dataclass(frozen=True)
class GridResult:
    r"""A :math:`(\gamma, \theta)` grid of the transfer phase diagram (paper 000, Figs. 1-2).

    Returned by :func:`transferkit.experiments.deep_linear.simulate_grid`,
    :func:`transferkit.experiments.linear_transfer.linear_transfer_grid` and
    :func:`transferkit.experiments.finetuning.finetune_grid`.  ``G = len(gammas)``,
    ``T = len(thetas)``, ``B = draws``.

    Attributes
    ----------
    gammas, thetas : numpy.ndarray
        The grid: sample ratios :math:`\gamma = n/d` and source-target angles.
    n : numpy.ndarray of int
        Sample sizes ``round(gamma d)``, shape ``(G,)``.
    d, sigma, depth, draws, seed, alpha
        Input dimension, label-noise standard deviation, network depth :math:`L`, draws per
        cell, base seed and initialisation scale.
    runs : dict of str to MethodRuns
        Per method (``"scratch"``, ``"linear"``, ``"finetune"``), its risks ``(G, T, B)`` and
        convergence diagnostics.
    feature_rank : numpy.ndarray or None
        Effective rank of the pretrained features per draw ``(B,)`` (paper 000, Thm 3.4).
    scratch_minnorm_dist : numpy.ndarray or None
        Distance of the scratch solution to :math:`X^+y` (Thm 3.5), ``(G, B)``.
    finetune_thm52, finetune_thm52_dist, finetune_thm52_k : numpy.ndarray or None
        Risk of paper 001's Thm 5.2 limit :math:`kP_\perp\beta(0) + X^+y` on the same
        sample, distance of the fine-tuned :math:`\hat\beta` to it, and its :math:`k`,
        ``(G, T, B)``.
    finetune_row_error : numpy.ndarray or None
        Certified bound on the distance of :math:`P_\parallel\hat\beta` to :math:`X^+y`,
        ``(G, T, B)``.
    finetune_imbalance_drift : numpy.ndarray or None
        Change of the layer imbalances during fine-tuning (departure from gradient flow),
        ``(G, T, B)``.
    finetune_chain_residual : numpy.ndarray or None
        Distance of the pretrained weights to their rank-one chain, ``(B,)``.
    finetune_eq14 : numpy.ndarray or None
        Risk of paper 000's Eq. 14 predictor on the same samples, ``(G, T, B)``.
    pretrained : Pretrained or None
        The pretrained networks (:func:`simulate_grid` only).
    sweep, scratch_sweep : transferkit.sweep.SweepResult or None
        The cached sweeps behind a ``*_grid`` result (``scratch_sweep``: the scratch runs
        that :func:`transferkit.experiments.finetuning.finetune_grid` takes from the Fig. 1
        sweep).
    """

    gammas: np.ndarray
    thetas: np.ndarray
    n: np.ndarray
    d: int
    sigma: float
    depth: int
    draws: int
    seed: int
    alpha: float
    runs: dict = field(default_factory=dict)
    feature_rank: np.ndarray | None = None
    scratch_minnorm_dist: np.ndarray | None = None
    finetune_thm52: np.ndarray | None = None
    finetune_thm52_dist: np.ndarray | None = None
    finetune_thm52_k: np.ndarray | None = None
    finetune_row_error: np.ndarray | None = None
    finetune_imbalance_drift: np.ndarray | None = None
    finetune_chain_residual: np.ndarray | None = None
    finetune_eq14: np.ndarray | None = None
    pretrained: Pretrained | None = field(default=None, repr=False)
    sweep: object = field(default=None, repr=False)
    scratch_sweep: object = field(default=None, repr=False)

    methods = property(_runs_methods)
    risk = _runs_risk
    converged = _runs_converged

    def replace(self, **changes) -> GridResult:
        """A copy with some fields replaced (:func:`dataclasses.replace`)."""
        return replace(self, **changes)

    @classmethod
    def from_flat(cls, flat, **fields) -> GridResult:
        """Build from a flat mapping of arrays keyed as the sweep cells return them.

        Keys ``<method>``, ``<method>_converged``, ``<method>_steps`` make ``runs``; the
        keys in :data:`DIAGNOSTICS` their fields; ``fields`` gives the rest.
        """
        runs = {m: MethodRuns(flat[m], flat.get(m + "_converged"), flat.get(m + "_steps"))
                for m in flat if m in METHODS}
        diag = {k: flat[k] for k in DIAGNOSTICS if k in flat and k not in fields}
        return cls(runs=runs, **diag, **fields)


@dataclass(frozen=True)
class PointResult:
    r"""One point :math:`(\gamma, \theta)` of the phase diagram (:func:`simulate_transfer`).

    Attributes
    ----------
    gamma, theta : float
        Sample ratio and source-target angle.
    n : int
        Sample size ``round(gamma d)``.
    d, sigma, depth, draws, seed, alpha
        As in :class:`GridResult`.
    runs : dict of str to MethodRuns
        Per method, its ``draws`` risks and convergence diagnostics, each ``(draws,)``.
    """

    gamma: float
    theta: float
    n: int
    d: int
    sigma: float
    depth: int
    draws: int
    seed: int
    alpha: float
    runs: dict = field(default_factory=dict)

    methods = property(_runs_methods)
    risk = _runs_risk
    converged = _runs_converged


def pretrain(d, depth=2, draws=20, seed=0, alpha=1e-5, rcond=1e-3, loss_tol=1e-12,
             max_steps=100_000, device=None, dtype=torch.float64, progress=None) -> Pretrained:
    r"""Draw teachers and pretrain one network per draw on :math:`\frac12\|\beta-\beta_s\|^2`.

    By Lemma 3.3 :math:`\beta\to\beta_s`; by Thm 3.4 the features
    :math:`W_1\cdots W_{L-1}` collapse to rank one along :math:`\beta_s` as
    :math:`\alpha\to0` (see ``feature_svals`` and ``rank``).
    """
    d, depth, draws, seed = check_simulation_args(d, 0.0, depth, draws, alpha, seed)
    _check_training(rcond, loss_tol)
    max_steps = check_int("max_steps", max_steps, 0)
    device = device or default_device()
    bs, nus = [], []
    for b in range(draws):
        rng = keyed_rng(seed, b, TEACHER_STREAM)
        u = rng.standard_normal(d)
        u /= np.linalg.norm(u)
        v = rng.standard_normal(d)
        v -= (v @ u) * u
        v /= np.linalg.norm(v)
        bs.append(u)
        nus.append(v)
    beta_s = as_tensor(np.stack(bs), device, dtype)
    nu = as_tensor(np.stack(nus), device, dtype)
    W0 = init_deep_linear(d, depth, alpha, [keyed_rng(seed, b, TEACHER_STREAM, 1) for b in range(draws)],
                          device=device, dtype=dtype)
    Ws, info = gradient_descent(W0, population_objective(beta_s), loss_tol=loss_tol,
                                max_steps=max_steps, progress=False, desc="pretraining")
    U, S, rank, _ = feature_subspace(Ws, rcond, spectrum=False)
    return Pretrained(beta_s, nu, Ws, U, S, rank, info)


def simulate_grid(d, gammas, thetas, sigma, depth=2, draws=20, seed=0, alpha=1e-5,
                  methods=METHODS, rcond=1e-3, loss_tol=1e-10, max_steps=100_000,
                  reuse_scratch=True, scratch_method="whitened", pretrained: Pretrained | None = None,
                  finetune_method="chain", finetune_flow_tol=1e-3,
                  finetune_max_steps=2_000_000, device=None,
                  dtype=torch.float64, progress=None) -> GridResult:
    r"""Simulate a :math:`(\gamma, \theta)` grid of the transfer phase diagram.

    Parameters
    ----------
    d : int
        Input dimension (>= 2).
    gammas, thetas : float or 1-d sequence
        Sample ratios :math:`\gamma = n/d` (> 0) and source-target angles in
        :math:`[0, \pi]`.
    sigma : float
        Target label-noise standard deviation (>= 0).
    depth, draws, seed, alpha
        Network depth ``L``, independent draws per cell, base seed, initialisation scale.
    methods : iterable of {"scratch", "linear", "finetune"}
    rcond, loss_tol, max_steps
        Feature-rank cutoff (:func:`~transferkit.models.deep_linear.feature_subspace`) and the
        stopping rule of :func:`~transferkit.models.deep_linear.gradient_descent`
        (``max_steps``: the budget of scratch training).
    scratch_method : {"whitened", "nesterov", "gd"}
        Optimiser of scratch training (``method`` of
        :func:`~transferkit.models.deep_linear.gradient_descent`).  Only its limit point
        enters the risk, and that limit (the minimum-norm interpolant, Thm 3.5) is the same
        for all three up to :math:`O(\alpha)`.  ``"whitened"`` (gradient descent in
        whitened input coordinates) takes about 40 steps at every :math:`\gamma`;
        ``"nesterov"`` needs :math:`O(\sqrt\kappa)` steps near :math:`\gamma = 1`
        (about 1,000 at ``d = 500``) and ``"gd"`` :math:`O(\kappa)`.  The whitened run
        also ends nearer :math:`X^+y`: it converges every eigendirection at the same rate
        (the error is not left in the directions of small eigenvalue), and it converges so
        fast that the first check below ``loss_tol`` finds the loss far below it.  Pretraining and fine-tuning always use
        plain gradient descent (their path matters).
    pretrained : Pretrained, optional
        Re-use networks from :func:`pretrain` (must match ``d, depth, draws``).
    finetune_method : {"chain", "full"}
        ``"chain"`` (default): gradient descent on all layers of the rank-one chain of the
        pretrained weights (:func:`~transferkit.models.deep_linear.finetune_chain`; the same iterates as
        plain gradient descent on the full network from that chain, which differs from the
        pretrained weights by :math:`O(\alpha)`, reported as ``finetune_chain_residual``),
        every angle and draw of a :math:`\gamma` row in one batch.  ``"full"``:
        :func:`~transferkit.models.deep_linear.gradient_descent` on the full pretrained layers, one
        batch of draws per angle (slow; kept as the reference).
    finetune_max_steps : int
        Budget of fine-tuning (either ``finetune_method``): plain gradient descent needs
        :math:`O(\kappa)` steps, about :math:`10^5` at :math:`\gamma = 0.95`, ``d = 500``
        (a step of the compiled chain kernel costs about a microsecond per instance).
    finetune_flow_tol : float or None
        ``flow_tol`` of :func:`~transferkit.models.deep_linear.finetune_chain`: the budget for the
        departure of gradient descent from gradient flow (the change of the layer
        imbalances; reported per run as ``finetune_imbalance_drift``).

    Returns
    -------
    GridResult
        The grid and parameters; in ``runs``, per method, risks of shape
        ``(len(gammas), len(thetas), draws)`` and, for the trained methods, ``converged`` and
        ``steps``; ``scratch_minnorm_dist`` (distance of the scratch solution to
        :math:`X^+y`, Thm 3.5, shape ``(len(gammas), draws)``), ``feature_rank`` and
        ``pretrained``.  With ``"finetune"`` and ``finetune_method="chain"`` also, per cell
        and draw, ``finetune_thm52`` (risk of paper 001's Thm 5.2 limit
        :math:`k P_\perp\beta(0) + X^+y` on the same sample, from the pretrained
        :math:`\beta(0)`), ``finetune_thm52_dist`` (distance of the fine-tuned
        :math:`\hat\beta` to it), ``finetune_thm52_k`` (its :math:`k`),
        ``finetune_row_error`` (certified bound on the distance of
        :math:`P_\parallel\hat\beta` to :math:`X^+y`), ``finetune_imbalance_drift`` and
        ``finetune_chain_residual`` ``(draws,)``.
    """
    d, depth, draws, seed = check_simulation_args(d, sigma, depth, draws, alpha, seed)
    _check_training(rcond, loss_tol, finetune_flow_tol)
    gammas = check_grid("gamma", gammas, 0.0, np.inf, True)
    thetas = check_grid("theta", thetas, 0.0, math.pi, False)
    check_simulation_budget(d, depth, draws, [sample_size(g, d) for g in gammas],
                            gammas.size * thetas.size, len(tuple(methods)))
    methods = tuple(methods)
    unknown = set(methods) - set(METHODS)
    if unknown or not methods:
        raise ValueError(f"methods must be a non-empty subset of {METHODS} (got {methods!r})")
    if finetune_method not in ("chain", "full"):
        raise ValueError(f"finetune_method must be 'chain' or 'full' (got {finetune_method!r})")
    if scratch_method not in ("whitened", "nesterov", "gd"):
        raise ValueError(f"scratch_method must be 'whitened', 'nesterov' or 'gd' "
                         f"(got {scratch_method!r})")
    max_steps = check_int("max_steps", max_steps, 0)
    finetune_max_steps = check_int("finetune_max_steps", finetune_max_steps, 0)
    ns = [sample_size(g, d) for g in gammas]
    device = device or default_device()
    if pretrained is None:
        pretrained = pretrain(d, depth, draws, seed, alpha, rcond, device=device, dtype=dtype,
                              progress=progress)
    elif pretrained.beta_s.shape != (draws, d) or len(pretrained.weights) != depth:
        raise ValueError("pretrained networks do not match d, depth and draws")
    P = pretrained
    G, T = len(gammas), len(thetas)
    out = {"feature_rank": P.rank}       # flat arrays, keyed as the sweep cells return them
    for m in methods:
        out[m] = np.full((G, T, draws), np.nan)
        if m != "linear":
            out[m + "_converged"] = np.zeros((G, T, draws), dtype=bool)
            out[m + "_steps"] = np.zeros((G, T, draws), dtype=np.int64)
    if "scratch" in methods:
        out["scratch_minnorm_dist"] = np.full((G, draws), np.nan)
    chain = None
    if "finetune" in methods and finetune_method == "chain":
        chain = rank_one_chain(P.weights)
        out["finetune_chain_residual"] = chain.residual.cpu().numpy()
        for k in ("thm52", "thm52_dist", "thm52_k", "row_error", "imbalance_drift"):
            out["finetune_" + k] = np.full((G, T, draws), np.nan)
    beta_t = P.beta_t(thetas)                                       # (B, T, d)
    cells = tqdm(list(enumerate(ns)), desc=f"simulating d={d}, L={depth}",
                 disable=not config.progress(progress))
    for i, n in cells:
        cells.set_postfix(n=n)
        Xs, eps = [], []
        for b in range(draws):
            rng = keyed_rng(seed, b, DATA_STREAM, n)
            Xs.append(rng.standard_normal((n, d)))
            eps.append(sigma * rng.standard_normal(n))
        X = as_tensor(np.stack(Xs), device, dtype)
        eps = as_tensor(np.stack(eps), device, dtype)
        Y = (X @ beta_t.transpose(1, 2)) + eps[..., None]          # (B, n, T)
        if "linear" in methods:
            bh = linear_transfer(P.U, X, Y)                         # (B, T, d)
            out["linear"][i] = _risk(bh, beta_t).T
        need_obj = "finetune" in methods or "scratch" in methods
        obj = empirical_objective(X, Y[..., 0]) if need_obj else None
        if "scratch" in methods:
            # one scratch model per draw, trained on the theta = pi/2 target y = X nu + eps
            # (its risk does not depend on theta), or one per theta without reuse_scratch
            jobs = ([(slice(None), (X @ P.nu[..., None])[..., 0] + eps, P.nu)] if reuse_scratch
                    else [(j, Y[..., j], beta_t[:, j]) for j in range(T)])
            for j, y_sc, b_t in jobs:
                W0 = init_deep_linear(d, depth, alpha,
                                      [keyed_rng(seed, b, SCRATCH_STREAM, n) for b in range(draws)],
                                      device=device, dtype=dtype)
                o = obj.relabel(X, y_sc)
                Ws, info = gradient_descent(W0, o, loss_tol=loss_tol, max_steps=max_steps,
                                            method=scratch_method, desc=f"scratch n={n}")
                beta = end_to_end(Ws)
                out["scratch"][i, j] = _risk(beta[:, None, :], b_t[:, None, :])[:, 0]
                out["scratch_converged"][i, j] = info.converged
                out["scratch_steps"][i, j] = info.steps
                out["scratch_minnorm_dist"][i] = (beta - o.minimiser()).norm(dim=1).cpu().numpy()
        if "finetune" in methods and chain is not None:
            ft = _finetune_row(chain, obj, X, Y, beta_t, depth, loss_tol, finetune_max_steps, n,
                               finetune_flow_tol)
            for k, v in ft.items():
                out[k][i] = v
        elif "finetune" in methods:
            for j in range(T):
                o = obj.relabel(X, Y[..., j])
                Ws, info = gradient_descent(P.weights, o, loss_tol=loss_tol,
                                            max_steps=finetune_max_steps,
                                            desc=f"fine-tuning n={n}")
                out["finetune"][i, j] = _risk(end_to_end(Ws)[:, None, :], beta_t[:, j:j + 1]).ravel()
                out["finetune_converged"][i, j] = info.converged
                out["finetune_steps"][i, j] = info.steps
    return GridResult.from_flat(out, gammas=gammas, thetas=thetas, n=np.array(ns), d=d, sigma=sigma,
                                depth=depth, draws=draws, seed=seed, alpha=alpha, pretrained=P)


def simulate_transfer(d, gamma, theta, sigma, depth=2, draws=20, seed=0, alpha=1e-5,
                      methods=METHODS, **kwargs) -> PointResult:
    r"""One point of the phase diagram: per-draw risks of scratch, linear transfer, fine-tuning.

    Parameters are those of :func:`simulate_grid` with scalar ``gamma`` and ``theta``.

    Returns
    -------
    PointResult
        In ``runs``, per method, ``draws`` generalization errors
        :math:`\|\hat\beta-\beta_t\|^2` (population excess risk) and, for the trained
        methods, ``converged`` flags and ``steps``.  The same ``seed`` gives the same numbers.

    Examples
    --------
    >>> r = simulate_transfer(d=50, gamma=0.5, theta=1.0, sigma=0.2, draws=4, progress=False)
    >>> r.methods
    ('scratch', 'linear', 'finetune')
    >>> r.risk("linear").shape
    (4,)
    """
    for name, v in (("gamma", gamma), ("theta", theta)):
        if np.ndim(v) != 0:
            raise ValueError(f"{name} must be a scalar for simulate_transfer (use simulate_grid)")
    kwargs.setdefault("progress", False)
    res = simulate_grid(d, [gamma], [theta], sigma, depth, draws, seed, alpha, methods, **kwargs)
    runs = {m: MethodRuns(r.risk[0, 0], None if r.converged is None else r.converged[0, 0],
                          None if r.steps is None else r.steps[0, 0])
            for m, r in res.runs.items()}
    return PointResult(float(res.gammas[0]), float(res.thetas[0]), int(res.n[0]), d, sigma,
                       res.depth, res.draws, seed, alpha, runs)


def _finetune_row(chain, obj, X, Y, beta_t, depth, loss_tol, max_steps, n, flow_tol=1e-3) -> dict:
    r"""Fine-tune every (angle, draw) of one :math:`\gamma` row at once (rank-one chain).

    The eigendecomposition of :math:`X` is shared by the angles; targets
    :math:`V^\top X^+ y = V^\top X^\top y / (n\lambda)` for all angles come from one
    product.  Returns arrays ``(T, B)``: risks, convergence, steps and the paired
    comparison with paper 001's Thm 5.2 limit on the same sample.
    """

    B, T = Y.shape[0], Y.shape[2]
    V, lam = obj.V, obj.lam                                        # (B, d, r), (B, r)
    r = lam.shape[1]
    target = (V.transpose(1, 2) @ (X.transpose(1, 2) @ Y)) / (n * lam)[..., None]   # (B, r, T)
    z0 = (V.transpose(1, 2) @ chain.w[..., None])[..., 0]        # (B, r)
    flat = lambda a: a.reshape(B * T, *a.shape[2:])              # noqa: E731
    rep = lambda a: flat(a[:, None].expand(B, T, *a.shape[1:]))  # noqa: E731
    ch = type(chain)(rep(chain.w), rep(chain.c), rep(chain.residual))
    # for n >= d the minimiser is unique and the path does not matter: plain curvature steps
    z, c, info = finetune_chain(ch, rep(lam), rep(z0), flat(target.transpose(1, 2)),
                                loss_tol=loss_tol, max_steps=max_steps,
                                flow_tol=flow_tol if n < X.shape[2] else None,
                                desc=f"fine-tuning n={n}")
    dz = (z - rep(z0)).reshape(B, T, r)
    C = c.prod(1).reshape(B, T)
    beta = C[..., None] * (chain.w[:, None, :] + (V @ dz.transpose(1, 2)).transpose(1, 2))
    # paper 001, Thm 5.2 on the same sample: k P_perp beta(0) + X^+ y, beta(0) pretrained
    b0 = chain.beta                                                # (B, d)
    perp = b0 - (V @ (V.transpose(1, 2) @ b0[..., None]))[..., 0]
    mn = (V @ target).transpose(1, 2)                              # X^+ y, (B, T, d)
    k = deep_finetune_scale(perp.norm(dim=1).cpu().numpy()[:, None],
                            mn.norm(dim=2).cpu().numpy(), b0.norm(dim=1).cpu().numpy()[:, None],
                            depth)                                 # (B, T)
    k_t = torch.as_tensor(k, dtype=beta.dtype, device=beta.device)
    b52 = k_t[..., None] * perp[:, None, :] + mn
    tr = lambda a: np.ascontiguousarray(np.asarray(a).reshape(B, T).T)   # noqa: E731
    return {"finetune": _risk(beta, beta_t).T,
            "finetune_converged": tr(info.converged), "finetune_steps": tr(info.steps),
            "finetune_row_error": tr(info.row_error),
            "finetune_imbalance_drift": tr(info.imbalance_drift),
            "finetune_thm52": _risk(b52, beta_t).T,
            "finetune_thm52_dist": (beta - b52).norm(dim=2).cpu().numpy().T,
            "finetune_thm52_k": k.T}


def _risk(beta_hat, beta_t):
    """``||beta_hat - beta_t||^2`` over the last axis, as numpy ``(B, m)``."""
    return (beta_hat - beta_t).pow(2).sum(-1).cpu().numpy()


# ---------------------------------------------------------------------------
# cells of the book's grids
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=2)
def pretrain_cached(d, depth, draws, seed, alpha):
    """Pretraining is the same for every cell of a grid: once per process (and worker)."""
    return pretrain(d, depth, draws, seed=seed, alpha=alpha, progress=False)
