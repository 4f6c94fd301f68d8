r"""Figures of paper 000 (*Features are Fate*): phase diagrams (Figs. 1-2), ridge and weight decay
(Figs. 5-6), dataset distances (Fig. 4), the lazy-rich sweep (Fig. 9).

Each function returns a :class:`matplotlib.figure.Figure`; notebooks and the command line call
the same functions and show them through :func:`transferkit.provenance.record`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .. import theory
from ..stats import mean_se
from ..experiments.deep_linear import GridResult
from ..experiments.linear_transfer import FeatureSpectrum, ScratchLimitResult
from ..experiments.regularisation import (
    RegularisedChecks,
    RidgeTransferCurve,
    WeightDecayGrid,
    tune,
)
from . import plotting
from .plotting import theta_label

__all__ = ["distance_figure", "feature_spectrum_figure", "finetune_depth_figure", "finetune_noisy_depth_figure", "finetune_phase_boundaries", "finetune_phase_figure", "linear_phase_boundaries", "linear_phase_figure", "linear_value_maps", "minnorm_distance_figure", "lazy_rich_figure", "ridge_figure", "regularised_phase_figure"]


def distance_figure(res, agree, gamma_index: int = 0, title: str = "Fig. 4"):
    r"""Transferability against :math:`D_{KL}` (a) and :math:`W_1` (b), theory beside simulation.

    One point per pair :math:`(r, \theta)` at the sample ratio ``gammas[gamma_index]``:
    filled markers are simulated means (error bars: one standard error), open markers
    the exact finite-size theory; colours are the source norms :math:`r`.  In (b) the
    horizontal bars span the closed-form bounds of :func:`~transferkit.theory.distances.w1_bounds_linear` and the grey
    band is the estimator's bias scale (its value between two samples of the same law).
    ``res`` is the :class:`~transferkit.experiments.dataset_distances.PairsResult` of
    :func:`transferkit.experiments.dataset_distances.simulate_pairs`.
    """
    g = gamma_index
    norms, thetas = res.norms, res.thetas
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True, layout="constrained")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    mean, se = agree.mean[:, g], agree.se[:, g]
    for ax, key, label in ((axes[0], "kl", r"$D_{KL}(p_s\|p_t)$ (Eq. 31)"),
                           (axes[1], "w1", r"$\widehat W_1(p_s, p_t)$ (POT, exact EMD)")):
        for i, r in enumerate(norms):
            x = np.broadcast_to(getattr(res, key), (len(norms), len(thetas)))[i]
            c = colors[i % len(colors)]
            if key == "w1":
                for xl, xu, yv in zip(res.w1_lower[i], res.w1_upper[i],
                                      res.T_theory[i, g]):
                    ax.plot([xl, xu], [yv, yv], color=c, lw=0.8, alpha=0.5)
            ax.errorbar(x, mean[i], yerr=se[i], fmt="o", color=c, ms=5,
                        label=fr"simulation, $\|\beta_s\| = {r:g}$")
            ax.plot(x, res.T_theory[i, g], "o", mfc="none", mec="k", ms=8,
                    label="theory" if i == 0 else None)
        ax.axhline(0, color="0.5", lw=0.8)
        ax.set_xlabel(label)
    axes[1].axvspan(0, float(np.max(res.w1_null)), color="0.85", zorder=0,
                    label="estimator bias scale")
    axes[0].set_xscale("symlog", linthresh=1.0)
    # room for the whole marker at KL = 0 and at the largest KL (an axis edge cut them)
    kl_max = float(np.max(res.kl))
    axes[0].set_xlim(-0.1, kl_max * 1.3 if kl_max > 0 else 1.0)
    axes[0].set_ylabel(r"transferability $\mathcal{T}$")
    axes[0].set_title(f"(a) KL, $\\gamma = {res.gammas[g]:g}$")
    axes[1].set_title(f"(b) Wasserstein-1, $\\gamma = {res.gammas[g]:g}$")
    axes[1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(title)
    return fig


def linear_phase_boundaries(sigma: float, thetas) -> list:
    r"""Phase boundaries of linear transfer (paper 000, Sec. 3.3) as ``(gamma, theta, label)``.

    Underparameterised: :math:`\gamma = 1 + \sigma^2/\sin^2\theta`; overparameterised: the
    window :math:`(\gamma_+, \gamma_-)` of :func:`~transferkit.theory.deep_linear.negative_transfer_window`,
    drawn as one closed curve.
    """
    thetas = np.asarray(thetas, float)
    th = thetas[np.sin(thetas) > 0]
    curves = [(theory.deep_linear.linear_transfer_boundary(th, sigma), th,
               r"$\gamma = 1 + \sigma^2/\sin^2\theta$")]
    lo, hi, tw = [], [], []
    for t in thetas:
        w = theory.deep_linear.negative_transfer_window(float(t), sigma)
        if w is not None:
            lo.append(w[0])
            hi.append(w[1])
            tw.append(t)
    if tw:
        curves.append((np.r_[lo, hi[::-1]], np.r_[tw, tw[::-1]], r"window $(\gamma_+, \gamma_-)$"))
    return curves


def _phase_layout(g_fine, t_fine, T_fine, eq: str, simulated: bool):
    """A phase-diagram figure: (a) the theory surface drawn, the axes of (b) returned.

    With ``simulated`` the figure has a second row for the slices panel (c), on ``grid[1, :]``.
    """
    if simulated:
        fig = plt.figure(figsize=(11, 9))
        grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.05])
    else:
        fig = plt.figure(figsize=(11, 4.6))
        grid = fig.add_gridspec(1, 2)
    ax1 = fig.add_subplot(grid[0, 0], projection="3d")
    plotting.phase_surface(ax1, g_fine, t_fine, T_fine)
    ax1.set_title(f"(a) theory, {eq}")
    ax2 = fig.add_subplot(grid[0, 1])
    return fig, grid, ax2


def _title_prefix(title: str) -> str:
    return f"{title}: " if title else ""


def linear_phase_figure(result: GridResult | None = None, transferability=None, slices=(),
                        title: str = "", *, sigma: float | None = None):
    r"""Fig. 1 / Fig. 7 of paper 000: (a) surface of Eq. 11, (b) sign map, (c) slices.

    The notebook of the linear-transfer chapter and ``transferkit phase-diagram --method
    linear`` both draw this figure.

    Parameters
    ----------
    result : :class:`~transferkit.experiments.deep_linear.GridResult` from
        :func:`~transferkit.experiments.deep_linear.simulate_grid`, or ``None``
        for the theory alone: (a) and (b) without simulated markers and no panel (c).
    transferability : :class:`~transferkit.stats.Agreement` of the simulated
        transferability (its means and standard deviations are plotted); with ``result``.
    slices : angles at which (c) is drawn (the nearest grid angles are used).
    title : prefix of the figure title (e.g. ``"Fig. 1"``).
    sigma : label noise; only without ``result`` (a result carries its own).
    """
    if result is None:
        if sigma is None:
            raise ValueError("linear_phase_figure needs sigma when there is no simulated result")
    else:
        sigma, d = result.sigma, result.d
    g_fine = np.linspace(0.01, 2.0, 400)
    t_fine = np.linspace(0, np.pi / 2, 200)
    T_fine = theory.deep_linear.linear_transferability(g_fine[:, None], t_fine[None, :], sigma)
    fig, grid, ax2 = _phase_layout(g_fine, t_fine, T_fine, "Eq. 11", result is not None)
    plotting.sign_map(ax2, g_fine, t_fine, T_fine, boundaries=linear_phase_boundaries(sigma, t_fine))
    if result is None:
        ax2.legend(loc="upper right", fontsize=8, frameon=True, framealpha=0.9)
        ax2.set_title("(b) sign: red negative, blue positive")
        fig.suptitle(f"{_title_prefix(title)}linear transferability, sigma = {sigma} "
                     "(theory: the same for every depth)")
        return fig
    G, TH = np.meshgrid(result.gammas, result.thetas, indexing="ij")
    sgn = np.sign(transferability.mean)
    for s, mk, c, lab in ((-1, "s", plotting.NEGATIVE, r"simulated $\mathcal{T} < 0$"),
                          (1, "o", plotting.POSITIVE, r"simulated $\mathcal{T} > 0$")):
        ax2.scatter(G[sgn == s], TH[sgn == s], s=14, marker=mk, c=c, edgecolors="k",
                    linewidths=0.5, label=lab)
    ax2.legend(loc="upper right", fontsize=8, frameon=True, framealpha=0.9)
    ax2.set_title("(b) sign: red negative, blue positive")
    ax3 = fig.add_subplot(grid[1, :])
    n_fine = np.maximum(np.round(g_fine * d), 3).astype(int)
    for k, t in enumerate(slices):
        j = int(np.argmin(np.abs(result.thetas - t)))
        tj, c = result.thetas[j], f"C{k}"
        ax3.plot(g_fine, theory.deep_linear.linear_transferability(g_fine, tj, sigma), c=c,
                 label=plotting.theta_label(tj))
        ax3.plot(g_fine, theory.deep_linear.linear_transferability_finite(n_fine, d, tj, sigma), c=c, ls=":",
                 lw=1)
        ax3.errorbar(result.gammas, transferability.mean[:, j], yerr=transferability.std[:, j],
                     fmt="o", c=c, ms=4, capsize=2)
    ax3.axhline(0, c="k", lw=0.8)
    ax3.set_ylim(-1.2, 1.5 if sigma > 0 else 1.2)
    ax3.set_xlabel(r"$\gamma = n/d$")
    ax3.set_ylabel(r"$\mathcal{T} = \mathcal{R}_{sc} - \mathcal{R}_{lt}$")
    ax3.set_title("(c) slices: theory (lines), simulation (dots)")
    ax3.legend(fontsize=9, ncol=4, loc="lower left")
    fig.suptitle(f"{_title_prefix(title)}linear transferability, sigma = {sigma}")
    return fig


def linear_value_maps(result: GridResult, transferability, title: str):
    r"""Fig. 8 of paper 000: theory (Eq. 11) and simulation shaded by value."""
    sigma = result.sigma
    g_fine = np.linspace(0.01, 2.0, 400)
    t_fine = np.linspace(0, np.pi / 2, 200)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    plotting.value_map(ax1, g_fine, t_fine,
                       theory.deep_linear.linear_transferability(g_fine[:, None], t_fine[None, :], sigma))
    ax1.set_title("(a) theory, Eq. 11")
    plotting.value_map(ax2, result.gammas, result.thetas, transferability.mean)
    ax2.set_title(f"(b) simulation, mean of {result.draws} draws")
    fig.suptitle(f"{title}: linear transferability, theory vs simulation, sigma = {sigma}")
    return fig


def feature_spectrum_figure(spec: FeatureSpectrum):
    r"""Thm 3.4 of paper 000: spectrum of the pretrained features and :math:`s_2/s_1` vs alpha.

    ``spec`` is the :class:`~transferkit.experiments.linear_transfer.FeatureSpectrum` of
    :func:`transferkit.experiments.linear_transfer.feature_spectrum`.
    """
    alphas = spec.alphas
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for k, a in enumerate(alphas):
        s = spec.svals[k]
        ax1.semilogy(np.arange(1, len(s) + 1), s / s[0], c=f"C{k}", label=rf"$\alpha = {a:g}$")
    ax1.set_xscale("log")
    ax1.set_xlabel("index k")
    ax1.set_ylabel(r"$s_k(\Phi)/s_1(\Phi)$")
    ax1.legend(fontsize=8)
    ax1.set_title("(a) spectrum of the pretrained features")
    ax2.loglog(alphas, spec.ratio, "o", label=r"$\max\, s_2/s_1$ over draws")
    ax2.loglog(alphas, spec.ratio[0] / alphas[0] * alphas, "k:", label=r"$\propto \alpha$")
    ax2.set_xlabel(r"initialisation scale $\alpha$")
    ax2.legend(fontsize=8)
    ax2.set_title(r"(b) Thm 3.4: $s_2/s_1 \to 0$ as $\alpha \to 0$")
    return fig


def minnorm_distance_figure(res: ScratchLimitResult):
    r"""Thm 3.5 of paper 000: distance of the scratch limit to :math:`X^+y` against alpha.

    ``res`` is the :class:`~transferkit.experiments.linear_transfer.ScratchLimitResult` of
    :func:`transferkit.experiments.linear_transfer.scratch_limit_vs_alpha`.
    """
    alphas = res.alphas
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for m, mk in zip(res.dist, ("o", "x", "+")):
        ax.loglog(alphas, res.dist[m].max(axis=1), mk, ms=7, label=m)
    first = next(iter(res.dist.values())).max(axis=1)
    ax.loglog(alphas, first[0] / alphas[0] * alphas, "k:", label=r"$\propto\alpha$")
    ax.set_xlabel(r"initialisation scale $\alpha$")
    ax.set_ylabel(r"$\max_b \|\hat\beta - X^+y\|$")
    ax.set_title(rf"Thm 3.5: scratch limit vs min-norm, $n = {res.n}$")
    ax.legend(fontsize=8)
    return fig


# ---------------------------------------------------------------------------
# fine-tuning (paper 000, Fig. 2; paper 001, Thm 5.2)
# ---------------------------------------------------------------------------


def finetune_phase_boundaries(sigma: float, depth, gammas=None) -> list:
    r"""Boundaries of the fine-tuning sign map as ``(gamma, theta, label)`` curves.

    Eq. 15 of paper 000: :math:`\theta = \pi/3` for :math:`\gamma < 1` and :math:`\gamma = 1`;
    with paper 001's Thm 5.2 rescaling (:func:`~transferkit.theory.deep_linear.finetune_boundary_deep`)
    the angle boundary becomes :math:`\theta = \arccos(k/2)`.
    """
    g = np.linspace(0.005, 0.995, 300) if gammas is None else np.asarray(gammas, float)
    curves = [(np.array([g[0], 1.0]), np.array([np.pi / 3, np.pi / 3]), r"$\theta = \pi/3$ (Eq. 15)"),
              (np.array([1.0, 1.0]), np.array([0.0, np.pi / 2]), r"$\gamma = 1$")]
    if sigma > 0:
        curves.append((g, theory.deep_linear.finetune_boundary_deep(g, sigma, depth),
                       rf"$\cos\theta = k/2$ (Thm 5.2, $L = {depth}$)"))
    return curves


def finetune_phase_figure(result: GridResult | None = None, transferability=None, slices=(),
                          title: str = "", *, sigma: float | None = None, depth=None):
    r"""Fig. 2 of paper 000: (a) surface of Eq. 15, (b) sign map, (c) slices with simulation.

    The notebook of the fine-tuning chapter and ``transferkit phase-diagram --method
    finetune`` both draw this figure.

    Parameters
    ----------
    result : :class:`~transferkit.experiments.deep_linear.GridResult` from :func:`~transferkit.experiments.finetuning.finetune_grid` (with scratch
        risks) or :func:`~transferkit.experiments.deep_linear.simulate_grid`, or ``None`` for
        the theory alone: (a) and (b) without simulated markers and no panel (c).
    transferability : :class:`~transferkit.stats.Agreement` of the simulated fine-tuning
        transferability (means, standard deviations and standard errors are plotted); with
        ``result``.
    slices : angles at which (c) is drawn (the nearest grid angles are used).
    title : prefix of the figure title (e.g. ``"Fig. 2"``).
    sigma, depth : label noise and network depth :math:`L` (of the Thm 5.2 boundary); only
        without ``result`` (a result carries its own).

    (b) marks a simulated cell by the sign of its mean only where the mean is more than
    its tolerance (critical value times standard error plus optimisation error) away from
    zero, and as "0" otherwise.  (c) draws Eq. 15 (solid), the large-:math:`d` Thm 5.2
    form :func:`~transferkit.theory.deep_linear.finetune_transferability_deep` (dashed) and the
    simulated means with one standard deviation.
    """
    if result is None:
        if sigma is None or depth is None:
            raise ValueError("finetune_phase_figure needs sigma and depth when there is no "
                             "simulated result")
    else:
        sigma, depth = result.sigma, result.depth
    g_fine = np.linspace(0.01, 2.0, 400)
    t_fine = np.linspace(0, np.pi / 2, 200)
    T_fine = theory.deep_linear.finetune_transferability(g_fine[:, None], t_fine[None, :])
    fig, grid, ax2 = _phase_layout(g_fine, t_fine, T_fine, "Eq. 15", result is not None)
    plotting.sign_map(ax2, g_fine, t_fine, T_fine, boundaries=finetune_phase_boundaries(sigma, depth)[:2])
    if sigma > 0:
        gb, tb, lab = finetune_phase_boundaries(sigma, depth)[2]
        ax2.plot(gb, tb, color="k", lw=1.2, ls="--", label=lab)
    if result is None:
        ax2.legend(loc="upper right", fontsize=7, frameon=True, framealpha=0.9)
        ax2.set_title("(b) sign: red negative, blue positive, white zero")
        fig.suptitle(f"{_title_prefix(title)}fine-tuning transferability, sigma = {sigma} "
                     f"(theory; dashed boundary: Thm 5.2 at L = {depth})")
        return fig
    G, TH = np.meshgrid(result.gammas, result.thetas, indexing="ij")
    a = transferability
    tol = a.critical * a.se + a.atol
    sgn = np.where(np.abs(a.mean) > tol, np.sign(a.mean), 0)
    for s, mk, c, lab in ((-1, "s", plotting.NEGATIVE, r"simulated $\mathcal{T} < 0$"),
                          (0, "D", "white", r"simulated $\mathcal{T} = 0$ within tolerance"),
                          (1, "o", plotting.POSITIVE, r"simulated $\mathcal{T} > 0$")):
        if np.any(sgn == s):
            ax2.scatter(G[sgn == s], TH[sgn == s], s=14, marker=mk, c=c, edgecolors="k",
                        linewidths=0.5, label=lab)
    ax2.legend(loc="upper right", fontsize=7, frameon=True, framealpha=0.9)
    ax2.set_title("(b) sign: red negative, blue positive, white zero")
    ax3 = fig.add_subplot(grid[1, :])
    for k, t in enumerate(slices):
        j = int(np.argmin(np.abs(result.thetas - t)))
        tj, c = result.thetas[j], f"C{k}"
        ax3.plot(g_fine, theory.deep_linear.finetune_transferability(g_fine, tj), c=c,
                 label=plotting.theta_label(tj))
        ax3.plot(g_fine, theory.deep_linear.finetune_transferability_deep(g_fine, tj, sigma, depth), c=c,
                 ls="--", lw=1)
        ax3.errorbar(result.gammas, a.mean[:, j], yerr=a.std[:, j], fmt="o", c=c, ms=4,
                     capsize=2)
    ax3.axhline(0, c="k", lw=0.8)
    ax3.set_xlabel(r"$\gamma = n/d$")
    ax3.set_ylabel(r"$\mathcal{T} = \mathcal{R}_{sc} - \mathcal{R}_{ft}$")
    ax3.set_title(f"(c) slices: Eq. 15 (solid), Thm 5.2 with L = {depth} (dashed), "
                  "simulation (dots, one standard deviation)")
    ax3.legend(fontsize=9, ncol=4, loc="lower right")
    fig.suptitle(f"{_title_prefix(title)}fine-tuning transferability, sigma = {sigma}")
    return fig


def finetune_depth_figure(results: dict, thetas, title: str):
    r"""Simulation, Eq. 14 and Thm 5.2 side by side, one panel per depth.

    ``results`` maps a depth ``L`` to a :func:`~transferkit.experiments.finetuning.finetune_grid` result.
    Plotted against :math:`\gamma < 1`, for each angle in ``thetas`` (nearest grid angles),
    is the fine-tuning risk **minus Eq. 14** (finite-size,
    :func:`~transferkit.theory.deep_linear.finetune_risk_finite`): simulated means with their standard
    errors (dots), the per-sample Thm 5.2 limit on the same samples (crosses) and the
    finite-size Thm 5.2 form :func:`~transferkit.theory.deep_linear.finetune_risk_deep_finite` (lines).
    Eq. 14 is the zero line.
    """
    depths = sorted(results)
    fig, axes = plt.subplots(1, len(depths), figsize=(4.2 * len(depths), 3.8), sharey=True,
                             squeeze=False)
    for ax, L in zip(axes[0], depths):
        r = results[L]
        d, sigma = r.d, r.sigma
        keep = r.n < d
        g, n = r.gammas[keep], r.n[keep]
        n_fine = np.arange(max(2, int(n.min()) - 1), d - 1)
        for k, t in enumerate(thetas):
            j = int(np.argmin(np.abs(r.thetas - t)))
            tj, c = r.thetas[j], f"C{k}"
            eq14 = theory.deep_linear.finetune_risk_finite(n, d, tj, sigma)
            diff = r.risk("finetune")[keep, j] - eq14[:, None]
            mean, se = mean_se(diff)
            ax.errorbar(g, mean, yerr=se, fmt="o", c=c, ms=4, capsize=2,
                        label=plotting.theta_label(tj))
            ax.plot(g, (r.finetune_thm52[keep, j] - eq14[:, None]).mean(-1), "x", c=c, ms=6)
            ax.plot(n_fine / d, theory.deep_linear.finetune_risk_deep_finite(n_fine, d, tj, sigma, L)
                    - theory.deep_linear.finetune_risk_finite(n_fine, d, tj, sigma), c=c, lw=1)
        ax.axhline(0, c="k", lw=0.8)
        ax.set_xlabel(r"$\gamma = n/d$")
        ax.set_title(f"L = {L}")
    axes[0, 0].set_ylabel(r"$\mathcal{R}_{ft} - $ Eq. 14")
    axes[0, 0].legend(fontsize=8, loc="upper left")
    fig.suptitle(f"{title}: simulation (dots, ±1 s.e.), Thm 5.2 on the same samples (x), "
                 "Thm 5.2 finite-size form (lines); Eq. 14 = 0", fontsize=10)
    return fig


def finetune_noisy_depth_figure(results: dict, title: str = "Noisy depth"):
    r"""Fine-tuning risk minus Eq. 14 where Eq. 14 and Thm 5.2 part most, one panel per depth.

    ``results`` maps a depth ``L`` to a :func:`~transferkit.experiments.finetuning.finetune_grid`
    result computed with ``eq14=True`` (all :math:`\gamma < 1`).  For each angle of the grid,
    against :math:`\gamma`: the simulated fine-tuning risk minus the risk of Eq. 14's
    predictor :math:`P_\perp\beta(0) + X^+y` on the same samples (paper 000, Eq. 14; paired
    draw by draw), mean with one Monte Carlo standard error (dots); the large-:math:`d`
    Thm 5.2 form of paper 001 (:func:`transferkit.theory.deep_linear.finetune_risk_deep` minus
    :func:`transferkit.theory.deep_linear.finetune_risk`, i.e.
    :math:`(1-\gamma)[(k^2-1) - 2(k-1)\cos\theta]` with :math:`k` from
    :func:`transferkit.theory.deep_linear.finetune_depth_scale`; solid lines) and its
    finite-size form (:func:`transferkit.theory.deep_linear.finetune_risk_deep_finite` minus
    :func:`transferkit.theory.deep_linear.finetune_risk_finite`; dashed).  Eq. 14 is the
    zero line.
    """
    depths = sorted(results)
    fig, axes = plt.subplots(1, len(depths), figsize=(4.2 * len(depths), 3.8), sharey=True,
                             squeeze=False)
    for ax, L in zip(axes[0], depths):
        r = results[L]
        d, sigma = r.d, r.sigma
        g = r.gammas
        g_fine = np.linspace(min(0.05, g.min()), min(0.97, 1 - 2 / d), 120)
        n_fine = np.arange(max(2, int(r.n.min()) - 1), d - 1)
        for j, t in enumerate(r.thetas):
            c = f"C{j}"
            m, se = mean_se(r.risk("finetune")[:, j] - r.finetune_eq14[:, j])
            ax.errorbar(g, m, yerr=se, fmt="o", c=c, ms=4, capsize=2, label=plotting.theta_label(t))
            ax.plot(g_fine, theory.deep_linear.finetune_risk_deep(g_fine, t, sigma, L)
                    - theory.deep_linear.finetune_risk(g_fine, t, sigma), c=c, lw=1)
            ax.plot(n_fine / d, theory.deep_linear.finetune_risk_deep_finite(n_fine, d, t, sigma, L)
                    - theory.deep_linear.finetune_risk_finite(n_fine, d, t, sigma), c=c, lw=1,
                    ls="--")
        ax.axhline(0, c="k", lw=0.8)
        ax.set_xlim(g_fine[0], 1)
        ax.set_xlabel(r"$\gamma = n/d$")
        ax.set_title(f"L = {L}, $\\sigma$ = {sigma:g}, d = {d}")
    axes[0, 0].set_ylabel(r"$\mathcal{R}_{ft} - $ Eq. 14 (same samples)")
    axes[0, 0].legend(fontsize=8, loc="upper left")
    fig.suptitle(f"{title}: simulation (dots, ±1 s.e., paired), Thm 5.2 large-d (lines) and "
                 "finite-d (dashed); Eq. 14 = 0", fontsize=10)
    return fig


def lazy_rich_figure(res, title: str = "Fig. 9"):
    r"""(a) Transferability against :math:`\alpha` per target size, with the lazy (dashed)
    and perfectly rich (dotted) references; (b) transfer risk of one target size beside
    the out-of-span lower bound of the pretrained features; (c) relative movement of the
    first layer during pretraining.  ``res`` is the
    :class:`~transferkit.experiments.lazy_rich.InitScaleSweepResult` of
    :func:`transferkit.experiments.lazy_rich.init_scale_sweep`."""
    al, ns = res.alphas, res.ns
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4), layout="constrained")
    ax = axes[0]
    for j, n in enumerate(ns):
        c = colors[j % len(colors)]
        m, se = mean_se(res.T[:, j])
        ax.errorbar(al, m, yerr=se, fmt="o-", color=c, ms=4, label=f"$n = {n}$")
        ax.axhline(np.mean(res.scratch[j] - res.lazy[j]), color=c, ls="--", lw=0.8)
        ax.axhline(np.mean(res.scratch[j] - res.source[j]), color=c, ls=":", lw=0.8)
    ax.axhline(0, color="k", lw=0.8)
    top = float(np.max(res.T.mean(-1) + mean_se(res.T)[1]))
    ax.set_ylim(max(ax.get_ylim()[0], -1.0), max(top, 0.0) + 0.1)
    ax.set_xscale("log")
    ax.set_xlabel(r"pretraining init scale $\alpha$ (rich $\to$ lazy)")
    ax.set_ylabel(r"transferability $\mathcal{T}$")
    ax.set_title("(a) transferability (dashed: lazy limit, dotted: source features)",
                 fontsize="small")
    ax.legend(fontsize="small")
    ax = axes[1]
    for j, n in enumerate(ns):
        m, se = mean_se(res.transfer[:, j])
        ax.errorbar(al, m, yerr=se, fmt="o-", color=colors[j % len(colors)], ms=4,
                    label=f"transfer, $n = {n}$")
    m, se = mean_se(res.span_floor)
    ax.errorbar(al, m, yerr=se, fmt="s-", color="k", ms=4,
                label=r"$\|P_\perp f_t\|^2$ of the pretrained features")
    ax.axhline(np.mean(res.floor), color="k", ls=":", lw=0.8,
               label=r"$\|P_\perp f_t\|^2$, source neurons")
    ax.axhline(np.mean(res.lazy_floor), color="k", ls="--", lw=0.8,
               label=r"$\|P_\perp f_t\|^2$, initial features")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\alpha$")
    ax.set_ylabel(r"target risk $/\|f_t\|^2$")
    ax.set_title("(b) transfer risk and its lower bound", fontsize="small")
    # below the panel: inside, it covered the curves of the middle n around alpha = 1
    ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    ax = axes[2]
    m, se = mean_se(res.movement)
    ax.errorbar(al, m, yerr=se, fmt="o-", color="k", ms=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\alpha$")
    ax.set_ylabel(r"$\|W - W_0\|_F / \|W_0\|_F$")
    ax.set_title("(c) feature movement in pretraining", fontsize="small")
    fig.suptitle(title)
    return fig


def _symlog_decade_ticks(ax, linthresh: float) -> None:
    r"""Major x ticks of a symlog axis at 0 and at the powers of ten from ``linthresh`` on.

    The default locator of the symlog scale also puts a power of ten inside the linear part
    :math:`(0, \mathrm{linthresh})`, where its label crowds the label of 0; this drops it.
    Call after the data are drawn: the ticks are the ones inside the current limits.
    """
    lo, hi = ax.get_xlim()
    decades = 10.0 ** np.arange(np.ceil(np.log10(linthresh)), np.floor(np.log10(hi)) + 1)
    ticks = np.r_[[0.0] if lo <= 0.0 <= hi else [], decades]
    ax.set_xticks(ticks)


def ridge_figure(curve: RidgeTransferCurve, agree, slices_theta, scale_theta=np.pi / 3):
    r"""Fig. 6 of paper 000: ridge linear-transfer risk against :math:`\lambda`.

    (a) Eq. 13 (solid), its exact finite-``n`` value (dotted,
    :func:`~transferkit.theory.deep_linear.ridge_linear_transfer_risk_finite`) and simulation means with
    one-standard-deviation error bars, at unit feature scale; (b) the simulation at
    :math:`\theta` = ``scale_theta`` (nearest angle simulated) for each feature scale ``s``, plotted against
    :math:`\lambda/s^2`, on the single curve of Eq. 13.
    ``curve`` is the :class:`~transferkit.experiments.regularisation.RidgeTransferCurve` of
    :func:`transferkit.experiments.regularisation.ridge_transfer_curve` and ``agree`` the
    :class:`~transferkit.stats.Agreement` of its ``risk``.
    """
    lams, thetas, scales = curve.lams, curve.thetas, curve.feature_scales
    n, sigma = curve.n, curve.sigma
    pos = lams[lams > 0]
    fine = np.r_[0.0, np.geomspace(pos.min() / 3, pos.max() * 3, 200)]
    lin = pos.min() / 3
    i1 = int(np.argmin(np.abs(scales - 1.0)))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for k, t in enumerate(slices_theta):
        j = int(np.argmin(np.abs(thetas - t)))
        c = f"C{k}"
        ax1.plot(fine, theory.deep_linear.ridge_linear_transfer_risk(fine, thetas[j]), c=c,
                 label=theta_label(thetas[j]))
        ax1.plot(fine, theory.deep_linear.ridge_linear_transfer_risk_finite(n, thetas[j], sigma, fine), c=c,
                 ls=":", lw=1)
        ax1.errorbar(lams, agree.mean[i1, :, j], yerr=agree.std[i1, :, j], fmt="o", c=c, ms=4,
                     capsize=2)
    ax1.set_xscale("symlog", linthresh=lin)
    _symlog_decade_ticks(ax1, lin)
    ax1.set_xlabel(r"ridge strength $\lambda$ (Eq. 12)")
    ax1.set_ylabel(r"$\mathcal{R}^\lambda_{lt}$")
    ax1.set_title(rf"(a) $\gamma = {curve.gamma:g}$, $n = {n}$: Eq. 13 (solid), exact (dotted)")
    ax1.legend(fontsize=8)
    j = int(np.argmin(np.abs(thetas - scale_theta)))
    for i, s in enumerate(scales):
        ax2.errorbar(lams / s ** 2, agree.mean[i, :, j], yerr=agree.std[i, :, j], fmt="os^v"[i % 4],
                     c=f"C{i}", ms=10 - 2.5 * i, mfc="none", capsize=2,
                     label=rf"feature scale $s = {s:g}$")
    ax2.plot(fine, theory.deep_linear.ridge_linear_transfer_risk(fine, thetas[j]), "k", lw=1,
             label=r"Eq. 13 at $\lambda/s^2$")
    ax2.set_xscale("symlog", linthresh=lin)
    _symlog_decade_ticks(ax2, lin)
    ax2.set_xlabel(r"effective ridge $\lambda/s^2$")
    ax2.set_ylabel(r"$\mathcal{R}^\lambda_{lt}$")
    ax2.set_title(rf"(b) features scaled by $s$, $\theta = {thetas[j]:.2f}$")
    ax2.legend(fontsize=8)
    fig.suptitle(f"Fig. 6: ridge linear transfer, sigma = {sigma}, {curve.draws} draws")
    return fig


def regularised_phase_figure(wd_result: WeightDecayGrid, linear: GridResult,
                             checks: RegularisedChecks):
    r"""Fig. 5 of paper 000: linear transfer against tuned and unregularised scratch training.

    (a) sign of the transferability against the oracle-tuned weight-decay scratch model:
    background from theory (the tuned closed form minus :math:`\sin^2\theta`, Eqs. 10 and
    13's :math:`n\to\infty` limit), markers from simulation; (b) the same against the
    unregularised model (Eq. 11); (c) scratch risk against :math:`\gamma` for every weight
    decay (theory lines, simulated means with one-standard-deviation bars), the tuned one,
    and the optimally tuned ridge risk (:func:`~transferkit.theory.deep_linear.optimal_ridge_risk`).
    ``wd_result`` is the :class:`~transferkit.experiments.regularisation.WeightDecayGrid` of
    :func:`transferkit.experiments.regularisation.weight_decay_scratch_grid` (trained networks
    or, with ``solver="limit"``, the limits of converged training, which the title then
    says), ``linear`` the
    linear-transfer grid on the same draws and ``checks`` their
    :class:`~transferkit.experiments.regularisation.RegularisedChecks`.
    """
    sigma = wd_result.sigma
    wds = wd_result.weight_decays
    g_fine = np.linspace(0.02, 2.0, 300)
    t_fine = np.linspace(0, np.pi / 2, 120)
    R_wd = np.stack([theory.deep_linear.weight_decay_scratch_risk(g_fine, sigma, w) for w in wds])
    T_tuned = R_wd.min(0)[:, None] - np.sin(t_fine)[None, :] ** 2
    T_plain = theory.deep_linear.linear_transferability(g_fine[:, None], t_fine[None, :], sigma)
    t = tune(wd_result)
    G, TH = np.meshgrid(linear.gammas, linear.thetas, indexing="ij")
    fig = plt.figure(figsize=(11, 9))
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.05])
    tuned_mean = checks.tuned_transferability.mean
    plain_mean = (wd_result.risk[:, list(wds).index(0.0)][:, None, :] - linear.risk("linear")).mean(-1) \
        if 0.0 in wds else None
    panels = [(grid[0, 0], T_tuned, tuned_mean, "(a) tuned weight decay"),
              (grid[0, 1], T_plain, plain_mean, "(b) no regularisation")]
    for spec, T_th, T_sim, title in panels:
        ax = fig.add_subplot(spec)
        plotting.sign_map(ax, g_fine, t_fine, T_th)
        if T_sim is not None:
            sgn = np.sign(T_sim)
            for s, mk, c in ((-1, "s", plotting.NEGATIVE), (1, "o", plotting.POSITIVE)):
                ax.scatter(G[sgn == s], TH[sgn == s], s=14, marker=mk, c=c, edgecolors="k",
                           linewidths=0.5)
        ax.set_title(title)
    ax3 = fig.add_subplot(grid[1, :])
    agree = checks.weight_decay
    for k, w in enumerate(wds):
        c = f"C{k}"
        lab = r"$\lambda_{wd} = 0$ (Eq. 8)" if w == 0 else rf"$\lambda_{{wd}} = {w:g}$"
        ax3.plot(g_fine, np.minimum(R_wd[k], 3), c=c, lw=1, label=lab)
        ax3.errorbar(wd_result.gammas, agree.mean[:, k], yerr=agree.std[:, k], fmt="o", c=c,
                     ms=3, capsize=2)
    ax3.plot(wd_result.gammas, t.risk.mean(-1), "k*", ms=9, label="tuned (simulation)")
    ax3.plot(g_fine, theory.deep_linear.optimal_ridge_risk(g_fine, sigma), "k--", lw=1.5,
             label=r"optimal ridge, $\mu^\star = \sigma^2/\gamma$")
    ax3.axhline(1, c="grey", lw=0.8, ls=":")
    ax3.set_ylim(0, 1.6)
    ax3.set_xlabel(r"$\gamma = n/d$")
    ax3.set_ylabel(r"scratch risk $\mathcal{R}_{sc}$")
    ax3.set_title("(c) scratch risk: theory (lines), simulation (dots)")
    ax3.legend(fontsize=8, ncol=3)
    how = ("; scratch models: the limits of converged training on each draw"
           if wd_result.solver == "limit" else "")
    fig.suptitle(f"Fig. 5: regularised scratch training, sigma = {sigma}, d = {wd_result.d}{how}")
    return fig
