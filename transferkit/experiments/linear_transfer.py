r"""Linear transfer in deep linear networks (paper 000, Sec. 3.3, Fig. 1): grids, checks, spectra."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import torch

from .. import theory
from .._validate import check_grid, check_int
from ..models.deep_linear import (
    empirical_objective,
    end_to_end,
    feature_map,
    gradient_descent,
    init_deep_linear,
)
from ..models.device import as_tensor, default_device
from ..stats import Agreement, agreement, risk_error_bound
from ..streams import keyed_rng
from ..sweep import Grid, run
from .deep_linear import (
    DATA_STREAM,
    SCRATCH_STREAM,
    GridResult,
    check_alpha,
    check_simulation_args,
    pretrain,
    pretrain_cached,
    sample_size,
    simulate_grid,
)

__all__ = ["FIG1", "Fig1Preset", "LinearTransferChecks", "ScratchLimitResult", "FeatureSpectrum",
           "linear_transfer_checks", "scratch_limit_table", "transferability_draws", "feature_spectrum", "scratch_limit_vs_alpha", "linear_transfer_cell", "linear_transfer_grid"]


@dataclass(frozen=True)
class Fig1Preset:
    r"""Parameters of the linear-transfer grid of paper 000, Fig. 1 (and Figs. 7-8), at one scale.

    The presets are :data:`FIG1` (``FIG1["paper"]``, ``FIG1["smoke"]``); the chapter
    notebooks, the ``transferkit notebook`` command and the benchmarks read their grids
    from there.  Grids are tuples of floats (immutable); ``np.array(preset.gammas)`` is the
    array the simulations take.

    Attributes
    ----------
    d : int
        Input dimension.
    draws : int
        Independent draws of the target set per :math:`(\gamma, \theta)` cell.
    gammas, thetas : tuple of float
        The :math:`\gamma = n/d` and :math:`\theta` grids.
    depth : int
        Network depth :math:`L`.
    sigma : float
        Label-noise standard deviation of Fig. 1 (Fig. 7 is the same grid at :math:`\sigma = 0`).
    alpha : float
        Initialisation scale.
    seed : int
        Base seed of the random streams.
    slices : tuple of float
        Angles of the slices panel (c).
    """

    d: int
    draws: int
    gammas: tuple
    thetas: tuple
    depth: int = 2
    sigma: float = 0.2
    alpha: float = 1e-5
    seed: int = 0
    slices: tuple = (0.0, math.pi / 6, math.pi / 3, math.pi / 2)


#: The Fig. 1 grid at each ``TRANSFERKIT_SCALE``.
#:
#: ``paper``: L = 2, d = 500, sigma = 0.2 (paper 000, caption of Fig. 1), alpha = 1e-5 (App. D),
#: 20 draws of the target set per point (caption of Fig. 1 and App. D); the slices
#: theta = 0, pi/6, pi/3, pi/2 of panel (c).  Our choices (stated in the chapter): gamma =
#: 0.1, ..., 2.0 with gamma = 1 replaced by 0.95 and 1.05 (the expected scratch risk is
#: infinite at n = d for every finite d), and 19 angles on [0, pi/2] so that pi/6 and pi/3
#: lie on the grid; seed 0.
#: ``smoke``: ours, the same pipeline small enough for the tests (d = 60, 16 draws, 6 x 7 grid).
FIG1 = {
    "paper": Fig1Preset(
        d=500, draws=20,
        gammas=tuple(np.round(np.r_[np.arange(1, 10) / 10, 0.95, 1.05,
                                    np.arange(11, 21) / 10], 3).tolist()),
        thetas=tuple(np.linspace(0, np.pi / 2, 19).tolist())),
    "smoke": Fig1Preset(
        d=60, draws=16,
        gammas=(0.25, 0.5, 0.75, 1.25, 1.5, 2.0),
        thetas=tuple(np.linspace(0, np.pi / 2, 7).tolist())),
}


@dataclass(frozen=True)
class LinearTransferChecks:
    r"""Agreement of a linear-transfer grid with paper 000's theory (Fig. 1, Eqs. 8, 10, 11).

    Returned by :func:`linear_transfer_checks`; each field is a
    :class:`~transferkit.stats.Agreement` over the :math:`(\gamma, \theta)` grid.

    Attributes
    ----------
    scratch : transferkit.stats.Agreement
        Scratch risk against its exact finite-size value (the finite-size form of Eq. 8),
        shape ``(G, 1)``: one value per :math:`\gamma`, it does not depend on :math:`\theta`.
    linear_transfer : transferkit.stats.Agreement
        Linear-transfer risk against Eq. 10 with its exact standard deviation, ``(G, T)``.
    transferability : transferkit.stats.Agreement
        Paired per-draw transferability (Eq. 5) against the exact finite-size difference of
        the two (the finite-size form of Eq. 11), ``(G, T)``.
    """

    scratch: Agreement
    linear_transfer: Agreement
    transferability: Agreement

    def items(self) -> list[tuple[str, Agreement]]:
        """``(label, check)`` pairs in field order; the label is the field name with spaces
        (``"linear transfer"``), as the chapter prints it."""
        return [(f.name.replace("_", " "), getattr(self, f.name)) for f in fields(self)]


@dataclass(frozen=True)
class ScratchLimitResult:
    r"""Distance of scratch training's limit to :math:`X^+y` against the init scale (paper 000, Thm 3.5).

    Returned by :func:`scratch_limit_vs_alpha`.  ``A = len(alphas)``, ``B = draws``.

    Attributes
    ----------
    n : int
        Target sample size :math:`n = \mathrm{round}(\gamma d)`.
    alphas : numpy.ndarray
        Initialisation scales :math:`\alpha`, shape ``(A,)``.
    dist : dict of str to numpy.ndarray
        Per optimiser (``"gd"``, ``"nesterov"``, ``"whitened"``), the distance :math:`\|\hat\beta - X^+y\|`,
        shape ``(A, B)``.
    limits : dict of str to numpy.ndarray
        Per optimiser, the end-to-end vectors :math:`\hat\beta` after training, ``(A, B, d)``.
    """

    n: int
    alphas: np.ndarray
    dist: dict
    limits: dict


@dataclass(frozen=True)
class FeatureSpectrum:
    r"""Spectrum of the pretrained features against the init scale (paper 000, Thm 3.4).

    Returned by :func:`feature_spectrum`.  ``A = len(alphas)``.

    Attributes
    ----------
    alphas : numpy.ndarray
        Initialisation scales :math:`\alpha`, shape ``(A,)``.
    svals : numpy.ndarray
        Singular values of the feature map :math:`\Phi = W_1\cdots W_{L-1}` of the first
        draw, shape ``(A, min(d, p))``.
    ratio : numpy.ndarray
        The largest :math:`s_2/s_1` over draws, shape ``(A,)`` (Thm 3.4: :math:`O(\alpha)`).
    align : numpy.ndarray
        The smallest :math:`|u_1^\top\beta_s|` over draws (top left singular vector),
        shape ``(A,)`` (Thm 3.4: :math:`\to 1`).
    """

    alphas: np.ndarray
    svals: np.ndarray
    ratio: np.ndarray
    align: np.ndarray


def transferability_draws(result: GridResult, method: str = "linear") -> np.ndarray:
    r"""Per-draw transferability :math:`\mathcal R_{sc} - \mathcal R_{tx}` (Eq. 5).

    Scratch and transferred models of one draw share the target sample, so the
    difference is paired; returns an array ``(len(gammas), len(thetas), draws)``.
    ``result`` is a :class:`transferkit.experiments.deep_linear.GridResult`.
    """
    if "scratch" not in result.runs or method not in result.runs:
        raise ValueError(f"result must contain 'scratch' and {method!r} risks")
    return result.risk("scratch") - result.risk(method)


def linear_transfer_checks(result: GridResult, fwer: float = 0.01) -> LinearTransferChecks:
    r"""Agreement of a :func:`~transferkit.experiments.deep_linear.simulate_grid` result with paper 000's theory.

    Compares, cell by cell, with the **exact finite-size** expectations: the scratch risk
    (:func:`~transferkit.theory.deep_linear.scratch_risk_finite`, the finite-size form of Eq. 8; one
    value per :math:`\gamma`, it does not depend on :math:`\theta`), the linear-transfer
    risk (Eq. 10, with its exact standard deviation,
    :func:`~transferkit.theory.deep_linear.linear_transfer_risk_std`) and the transferability (paired
    per draw).  The optimisation error of scratch training,
    bounded by its distance to :math:`X^+y` (:func:`~transferkit.stats.risk_error_bound`), is allowed on top of
    the Monte Carlo error.

    Returns a :class:`LinearTransferChecks` (fields ``scratch``, ``linear_transfer``,
    ``transferability``, each an :class:`~transferkit.stats.Agreement`).
    """

    n = result.n[:, None]
    d, sigma = result.d, result.sigma
    th = result.thetas[None, :]
    fin_sc = theory.deep_linear.scratch_risk_finite(n, d, sigma) + 0 * th
    fin_lt = theory.deep_linear.linear_transfer_risk(n, th, sigma)
    scratch = result.risk("scratch")
    opt = risk_error_bound(scratch, result.scratch_minnorm_dist[:, None, :]).mean(-1)
    return LinearTransferChecks(
        scratch=agreement(scratch[:, :1], fin_sc[:, :1], atol=opt[:, :1], fwer=fwer),
        linear_transfer=agreement(result.risk("linear"), fin_lt, fwer=fwer,
                                  std=theory.deep_linear.linear_transfer_risk_std(n, th, sigma)),
        transferability=agreement(transferability_draws(result), fin_sc - fin_lt, atol=opt,
                                  fwer=fwer),
    )


def scratch_limit_table(result: GridResult, scratch_check: Agreement) -> tuple[str, Agreement]:
    r"""Simulated scratch risk beside its exact finite-size value and the limit of Eq. 8.

    Returns the table as text and the :class:`~transferkit.stats.Agreement` of the simulation with the
    :math:`d\to\infty` formula (cells marked ``*`` lie outside the Monte Carlo tolerance).
    """

    lim = theory.deep_linear.scratch_risk(result.gammas, result.sigma)
    a_lim = agreement(result.risk("scratch")[:, :1], lim[:, None], atol=scratch_check.atol)
    lines = [f"sigma = {result.sigma}, d = {result.d}",
             f"{'gamma':>6} {'n':>5} {'simulated':>17} {'exact (finite d)':>17} {'Eq. 8 (limit)':>14}"]
    for i, g in enumerate(result.gammas):
        flag = "*" if a_lim.disagree[i, 0] else ""
        lines.append(f"{g:6.2f} {result.n[i]:5d} {scratch_check.mean[i, 0]:10.4f} ± "
                     f"{scratch_check.se[i, 0]:.4f} {scratch_check.theory[i, 0]:17.4f} "
                     f"{lim[i]:14.4f} {flag}")
    return "\n".join(lines), a_lim


def scratch_limit_vs_alpha(d, gamma, sigma, alphas, depth=2, draws=4, seed=0,
                           methods=("gd", "nesterov", "whitened"), loss_tol=1e-14, device=None,
                           dtype=torch.float64) -> ScratchLimitResult:
    r"""Distance of the scratch-trained solution to :math:`X^+y` against the init scale (Thm 3.5).

    Every update of :math:`W_1` lies in the row space of :math:`X`, so the limit of training
    differs from the minimum-norm solution only by :math:`W_1(0)W_2\cdots W_L(\infty)
    = O(\alpha)`.  One target sample per draw (teacher of unit norm, noise ``sigma``) is
    trained from each ``alpha`` with each optimiser in ``methods``.

    Returns
    -------
    ScratchLimitResult
        ``dist[method]``: array ``(len(alphas), draws)`` of :math:`\|\hat\beta - X^+y\|`,
        ``limits[method]``: the end-to-end vectors ``(len(alphas), draws, d)``, ``alphas``
        and ``n``.
    """
    d, depth, draws, _ = check_simulation_args(d, sigma, depth, draws, 1.0)
    alphas = check_grid("alpha", alphas, 0.0, np.inf, True)
    for a in alphas:
        check_alpha("alphas", a, depth)
    device = device or default_device()
    n = sample_size(gamma, d)
    rngs = [keyed_rng(seed, b, DATA_STREAM, n) for b in range(draws)]
    X = as_tensor(np.stack([r.standard_normal((n, d)) for r in rngs]), device, dtype)
    beta = np.stack([r.standard_normal(d) for r in rngs])
    beta = as_tensor(beta / np.linalg.norm(beta, axis=1, keepdims=True), device, dtype)
    noise = as_tensor(np.stack([sigma * r.standard_normal(n) for r in rngs]), device, dtype)
    obj = empirical_objective(X, (X @ beta[..., None])[..., 0] + noise)
    target = obj.minimiser()
    dists, limits = {}, {}
    for m in methods:
        dist, lim = [], []
        for a in alphas:
            W0 = init_deep_linear(d, depth, a, [keyed_rng(seed, b, SCRATCH_STREAM, n) for b in range(draws)],
                                  device=device, dtype=dtype)
            Ws, info = gradient_descent(W0, obj, method=m, loss_tol=loss_tol,
                                        desc=f"scratch alpha={a:g}")
            b_hat = end_to_end(Ws)
            dist.append((b_hat - target).norm(dim=1).cpu().numpy())
            lim.append(b_hat.cpu().numpy())
        dists[m] = np.array(dist)
        limits[m] = np.array(lim)
    return ScratchLimitResult(n=n, alphas=alphas, dist=dists, limits=limits)


def feature_spectrum(d, alphas, depth=2, draws=4, seed=0, device=None,
                     dtype=torch.float64) -> FeatureSpectrum:
    r"""Singular values of the pretrained features against the init scale (Thm 3.4).

    For each ``alpha`` the networks of :func:`~transferkit.experiments.deep_linear.pretrain` are trained and the feature map
    :math:`\Phi = W_1\cdots W_{L-1}` decomposed.  Thm 3.4 says
    :math:`\Phi\to\beta_s v^\top` as :math:`\alpha\to0`.

    Returns
    -------
    FeatureSpectrum
        ``alphas``; ``svals`` ``(len(alphas), min(d, p))``, the singular values of the first
        draw; ``ratio`` ``(len(alphas),)``, the largest :math:`s_2/s_1` over draws;
        ``align``, the smallest :math:`|u_1^\top\beta_s|` over draws (top left singular
        vector).
    """
    depth = check_int("depth", depth, 2)
    alphas = check_grid("alpha", alphas, 0.0, np.inf, True)
    for a in alphas:
        check_alpha("alphas", a, depth)
    svals, ratio, align = [], [], []
    for a in alphas:
        p = pretrain(d, depth, draws, seed, float(a), device=device, dtype=dtype, progress=False)
        U, sv, _ = torch.linalg.svd(feature_map(p.weights), full_matrices=False)
        sv, U = sv.cpu().numpy(), U[:, :, 0]          # sv: p.feature_svals, bit for bit
        svals.append(sv[0])
        ratio.append((sv[:, 1] / sv[:, 0]).max())
        align.append(float((U * p.beta_s).sum(1).abs().min()))
    return FeatureSpectrum(alphas=np.asarray(alphas), svals=np.asarray(svals),
                           ratio=np.asarray(ratio), align=np.asarray(align))


def linear_transfer_cell(d, gamma, theta, sigma, depth=2, draws=20, seed=0, alpha=1e-5,
                         methods=("scratch", "linear"), loss_tol=1e-10,
                         max_steps=100_000) -> dict:
    r"""One :math:`\gamma` of the linear-transfer phase diagram, every ``theta`` at once.

    A cell function for :func:`~transferkit.sweep.run` (vectorise ``theta``): it calls
    :func:`transferkit.experiments.deep_linear.simulate_grid` for ``gammas=[gamma]`` and returns the same
    numbers as a whole-grid call with the same seed (the random numbers of a cell are keyed
    by ``(seed, draw, n)``).  Pretraining is memoised per process.

    Parameters are those of :func:`~transferkit.experiments.deep_linear.simulate_grid`; ``theta`` is a
    scalar or a 1-d array.

    Returns
    -------
    dict of arrays with leading dimension ``len(theta)`` (none for a scalar ``theta``):
    ``n``; per method, risks ``(draws,)`` per angle; ``<method>_converged`` and
    ``<method>_steps`` for the trained methods; ``scratch_minnorm_dist`` (distance of the
    scratch solution to :math:`X^+y`) and ``feature_rank`` (per draw), repeated over the
    angles.
    """

    thetas = np.atleast_1d(np.asarray(theta, dtype=float))
    methods = tuple(methods)
    pre = pretrain_cached(d, depth, draws, seed, alpha)
    res = simulate_grid(d, [gamma], thetas, sigma, depth=depth, draws=draws, seed=seed,
                        alpha=alpha, methods=methods, loss_tol=loss_tol, max_steps=max_steps,
                        pretrained=pre, progress=False)
    T = thetas.size
    out = {"n": np.full(T, res.n[0])}
    for m, r in res.runs.items():                # the cache keys: <method>, _converged, _steps
        out[m] = r.risk[0]
        if r.converged is not None:
            out[m + "_converged"] = r.converged[0]
            out[m + "_steps"] = r.steps[0]
    if res.scratch_minnorm_dist is not None:
        out["scratch_minnorm_dist"] = np.repeat(res.scratch_minnorm_dist[:1], T, axis=0)
    out["feature_rank"] = np.repeat(np.asarray(res.feature_rank)[None], T, axis=0)
    if np.ndim(theta) == 0:
        out = {k: v[0] for k, v in out.items()}
    return out


def linear_transfer_grid(d, gammas, thetas, sigma, depth=2, draws=20, seed=0, alpha=1e-5,
                         methods=("scratch", "linear"), loss_tol=1e-10, max_steps=100_000,
                         **run_kwargs) -> GridResult:
    r"""The :math:`(\gamma, \theta)` grid of :func:`~transferkit.experiments.deep_linear.simulate_grid`, swept.

    One cell per :math:`\gamma` (all angles at once, :func:`linear_transfer_cell`),
    cached and resumable; ``run_kwargs`` go to :func:`~transferkit.sweep.run` (``cache``, ``directory``,
    ``version``, ``scheduler``, ``progress``).  Returns a
    :class:`transferkit.experiments.deep_linear.GridResult` with the fields of
    :func:`~transferkit.experiments.deep_linear.simulate_grid` that the analysis and figures use
    (the grid and parameters, ``runs`` of each method with risks
    ``(len(gammas), len(thetas), draws)``, ``converged`` and ``steps``,
    ``scratch_minnorm_dist`` ``(len(gammas), draws)``, ``feature_rank`` ``(draws,)``), the
    same numbers for the same seed, and the :class:`~transferkit.sweep.SweepResult` as ``sweep``.
    """

    gammas = check_grid("gamma", gammas, 0.0, np.inf, True)
    thetas = check_grid("theta", thetas, 0.0, np.pi, False)
    fixed = dict(d=d, sigma=sigma, depth=depth, draws=draws, seed=seed, alpha=alpha,
                 methods=tuple(methods), loss_tol=loss_tol, max_steps=max_steps)
    run_kwargs.setdefault("desc", f"linear transfer d={d}, sigma={sigma}")
    res = run(linear_transfer_cell, Grid(gamma=gammas, theta=thetas), fixed=fixed,
              vectorize=("theta",), **run_kwargs)
    extra = {}
    if "scratch_minnorm_dist" in res:
        extra["scratch_minnorm_dist"] = res["scratch_minnorm_dist"][:, 0]
    return GridResult.from_flat(res.data, gammas=gammas, thetas=thetas, n=res["n"][:, 0], d=d,
                                sigma=sigma, depth=depth, draws=draws, seed=seed, alpha=alpha,
                                feature_rank=res["feature_rank"][0, 0], sweep=res, **extra)
