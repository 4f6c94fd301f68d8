r"""Fine-tuning in deep linear networks (paper 000, Sec. 3.3, Fig. 2): cached grids."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import check_grid
from ..sweep import Grid, run
from .deep_linear import pretrain_cached, simulate_grid
from .linear_transfer import FIG1, Fig1Preset, linear_transfer_grid

__all__ = ["FIG2", "Fig2Preset", "finetune_cell", "finetune_grid"]


@dataclass(frozen=True)
class Fig2Preset:
    r"""Parameters of the fine-tuning chapter (paper 000, Fig. 2) at one scale.

    Attributes
    ----------
    grid : :class:`transferkit.experiments.linear_transfer.Fig1Preset`
        The :math:`(\gamma, \theta)` grid, depth, dimension, noise, initialisation, draws,
        seed and slices of Fig. 2: those of Fig. 1.
    depth_gammas, depth_thetas : tuple of float
        The grid of the depth comparison (fine-tuning risk minus Eq. 14 against paper 001,
        Thm 5.2), on :math:`\gamma < 1`.
    depths : tuple of int
        The depths :math:`L` of that comparison.
    """

    grid: Fig1Preset
    depth_gammas: tuple
    depth_thetas: tuple = (0.0, math.pi / 3, math.pi / 2)
    depths: tuple = (2, 3, 4)


#: The fine-tuning chapter's parameters at each ``TRANSFERKIT_SCALE``.
#:
#: ``grid``: paper 000, caption of Fig. 2, "using the same transfer setup as in Fig. 1",
#: hence :data:`transferkit.experiments.linear_transfer.FIG1` of the same scale.  The depth
#: comparison (L = 2, 3, 4 at theta = 0, pi/3, pi/2 and the gammas below) is ours: it is in
#: neither paper 000 nor paper 001; ``smoke`` is ours throughout.
FIG2 = {
    "paper": Fig2Preset(FIG1["paper"], depth_gammas=(0.2, 0.4, 0.6, 0.8, 0.9, 0.95)),
    "smoke": Fig2Preset(FIG1["smoke"], depth_gammas=(0.5, 0.8)),
}


def finetune_cell(d, gamma, theta, sigma, depth=2, draws=20, seed=0, alpha=1e-5, loss_tol=1e-10,
                  max_steps=2_000_000, flow_tol=1e-3) -> dict:
    r"""One :math:`\gamma` of the fine-tuning phase diagram (paper 000, Fig. 2), every ``theta`` at once.

    A cell function for :func:`~transferkit.sweep.run` (vectorise ``theta``): all angles and draws of the row
    are fine-tuned in one batch (:func:`transferkit.models.deep_linear.finetune_chain`, called by
    :func:`transferkit.experiments.deep_linear.simulate_grid` with ``methods=("finetune",)``), from networks
    pretrained once per process.  Same numbers as a whole-grid ``simulate_grid`` call with
    the same seed.

    Returns
    -------
    dict of arrays with leading dimension ``len(theta)``, each ``(draws,)`` per angle:
    ``finetune`` (risks), ``finetune_converged``, ``finetune_steps``, ``finetune_thm52``
    (risk of paper 001's Thm 5.2 limit on the same sample), ``finetune_thm52_dist``,
    ``finetune_thm52_k``, ``finetune_row_error``, ``finetune_imbalance_drift``, and ``n``
    and ``finetune_chain_residual`` repeated over the angles.
    """

    thetas = np.atleast_1d(np.asarray(theta, dtype=float))
    pre = pretrain_cached(d, depth, draws, seed, alpha)
    res = simulate_grid(d, [gamma], thetas, sigma, depth=depth, draws=draws, seed=seed,
                        alpha=alpha, methods=("finetune",), loss_tol=loss_tol,
                        max_steps=max_steps, pretrained=pre, finetune_flow_tol=flow_tol,
                        progress=False)
    T = thetas.size
    out = {"n": np.full(T, res["n"][0]),
           "finetune_chain_residual": np.repeat(res["finetune_chain_residual"][None], T, axis=0)}
    for key in res:
        if key.startswith("finetune") and key != "finetune_chain_residual":
            out[key] = res[key][0]
    if np.ndim(theta) == 0:
        out = {k: v[0] for k, v in out.items()}
    return out


def finetune_grid(d, gammas, thetas, sigma, depth=2, draws=20, seed=0, alpha=1e-5,
                  loss_tol=1e-10, max_steps=2_000_000, flow_tol=1e-3, scratch=True,
                  **run_kwargs) -> dict:
    r"""The fine-tuning :math:`(\gamma, \theta)` grid of paper 000, Fig. 2, swept and cached.

    One cell per :math:`\gamma` (:func:`finetune_cell`, all angles and draws in one batch),
    cached and resumable like :func:`~transferkit.experiments.linear_transfer.linear_transfer_grid`; ``run_kwargs`` go to :func:`~transferkit.sweep.run`.
    With ``scratch=True`` the scratch risks of the same samples come from
    :func:`~transferkit.experiments.linear_transfer.linear_transfer_grid` (the Fig. 1 sweep, whose cache the linear-transfer chapter
    shares: same parameters, same entries), so that
    :func:`transferkit.experiments.linear_transfer.transferability_draws` ``(result, "finetune")`` gives the paired
    transferability.

    Returns a dict with ``gammas, thetas, n, d, sigma, depth, draws, seed, alpha``, the
    fine-tuning outputs of :func:`finetune_cell` as ``(len(gammas), len(thetas), draws)``
    arrays, ``finetune_chain_residual`` ``(draws,)``, the scratch keys of
    :func:`~transferkit.experiments.linear_transfer.linear_transfer_grid` (with
    ``scratch=True``), and the :class:`~transferkit.sweep.SweepResult` under ``"sweep"`` (and
    ``"scratch_sweep"``).
    """

    gammas = check_grid("gamma", gammas, 0.0, np.inf, True)
    thetas = check_grid("theta", thetas, 0.0, np.pi, False)
    fixed = dict(d=d, sigma=sigma, depth=depth, draws=draws, seed=seed, alpha=alpha,
                 loss_tol=loss_tol, max_steps=max_steps, flow_tol=flow_tol)
    kw = dict(run_kwargs)
    kw.setdefault("desc", f"fine-tuning d={d}, L={depth}, sigma={sigma}")
    res = run(finetune_cell, Grid(gamma=gammas, theta=thetas), fixed=fixed,
              vectorize=("theta",), **kw)
    out = {"gammas": gammas, "thetas": thetas, "n": res["n"][:, 0], "d": d, "sigma": sigma,
           "depth": depth, "draws": draws, "seed": seed, "alpha": alpha,
           "finetune_chain_residual": res["finetune_chain_residual"][0, 0]}
    for k, v in res.data.items():
        if k not in out:
            out[k] = v
    out["sweep"] = res
    if scratch:
        kw = dict(run_kwargs)
        sc = linear_transfer_grid(d, gammas, thetas, sigma, depth=depth, draws=draws, seed=seed,
                                  alpha=alpha, **kw)
        for k in ("scratch", "scratch_converged", "scratch_steps", "scratch_minnorm_dist",
                  "linear", "feature_rank"):
            out[k] = sc[k]
        out["scratch_sweep"] = sc["sweep"]
    return out
