"""Figures of the book, built from simulation results and the closed forms.

Each function returns a :class:`matplotlib.figure.Figure`; notebooks call them with a
result of :func:`transferkit.simulate.simulate_grid` and the agreement checks of
:mod:`transferkit.analysis`, so the figure and the asserted numbers are the same.
"""
from __future__ import annotations

import numpy as np

from . import plotting, theory

__all__ = ["feature_spectrum_figure", "finetune_depth_figure", "finetune_phase_boundaries",
           "finetune_phase_figure", "linear_phase_boundaries", "linear_phase_figure",
           "linear_value_maps", "minnorm_distance_figure"]


def linear_phase_boundaries(sigma: float, thetas) -> list:
    r"""Phase boundaries of linear transfer (paper 000, Sec. 3.3) as ``(gamma, theta, label)``.

    Underparameterised: :math:`\gamma = 1 + \sigma^2/\sin^2\theta`; overparameterised: the
    window :math:`(\gamma_+, \gamma_-)` of :func:`~transferkit.theory.negative_transfer_window`,
    drawn as one closed curve.
    """
    thetas = np.asarray(thetas, float)
    th = thetas[np.sin(thetas) > 0]
    curves = [(theory.linear_transfer_boundary(th, sigma), th,
               r"$\gamma = 1 + \sigma^2/\sin^2\theta$")]
    lo, hi, tw = [], [], []
    for t in thetas:
        w = theory.negative_transfer_window(float(t), sigma)
        if w is not None:
            lo.append(w[0])
            hi.append(w[1])
            tw.append(t)
    if tw:
        curves.append((np.r_[lo, hi[::-1]], np.r_[tw, tw[::-1]], r"window $(\gamma_+, \gamma_-)$"))
    return curves


def linear_phase_figure(result: dict, transferability, slices, title: str):
    r"""Fig. 1 / Fig. 7 of paper 000: (a) surface of Eq. 11, (b) sign map, (c) slices.

    Parameters
    ----------
    result : dict from :func:`~transferkit.simulate.simulate_grid`.
    transferability : :class:`~transferkit.analysis.Agreement` of the simulated
        transferability (its means and standard deviations are plotted).
    slices : angles at which (c) is drawn (the nearest grid angles are used).
    """
    import matplotlib.pyplot as plt

    sigma, d = result["sigma"], result["d"]
    g_fine = np.linspace(0.01, 2.0, 400)
    t_fine = np.linspace(0, np.pi / 2, 200)
    T_fine = theory.linear_transferability(g_fine[:, None], t_fine[None, :], sigma)
    fig = plt.figure(figsize=(11, 9))
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.05])
    ax1 = fig.add_subplot(grid[0, 0], projection="3d")
    plotting.phase_surface(ax1, g_fine, t_fine, T_fine)
    ax1.set_title("(a) theory, Eq. 11")
    ax2 = fig.add_subplot(grid[0, 1])
    plotting.sign_map(ax2, g_fine, t_fine, T_fine, boundaries=linear_phase_boundaries(sigma, t_fine))
    G, TH = np.meshgrid(result["gammas"], result["thetas"], indexing="ij")
    sgn = np.sign(transferability.mean)
    for s, mk, c, lab in ((-1, "s", plotting.NEGATIVE, r"simulated $\mathcal{T} < 0$"),
                          (1, "o", plotting.POSITIVE, r"simulated $\mathcal{T} > 0$")):
        ax2.scatter(G[sgn == s], TH[sgn == s], s=14, marker=mk, c=c, edgecolors="k",
                    linewidths=0.5, label=lab)
    ax2.legend(loc="upper right", fontsize=8, framealpha=0.9)
    ax2.set_title("(b) sign: red negative, blue positive")
    ax3 = fig.add_subplot(grid[1, :])
    n_fine = np.maximum(np.round(g_fine * d), 3).astype(int)
    for k, t in enumerate(slices):
        j = int(np.argmin(np.abs(result["thetas"] - t)))
        tj, c = result["thetas"][j], f"C{k}"
        ax3.plot(g_fine, theory.linear_transferability(g_fine, tj, sigma), c=c,
                 label=plotting.theta_label(tj))
        ax3.plot(g_fine, theory.linear_transferability_finite(n_fine, d, tj, sigma), c=c, ls=":",
                 lw=1)
        ax3.errorbar(result["gammas"], transferability.mean[:, j], yerr=transferability.std[:, j],
                     fmt="o", c=c, ms=4, capsize=2)
    ax3.axhline(0, c="k", lw=0.8)
    ax3.set_ylim(-1.2, 1.5 if sigma > 0 else 1.2)
    ax3.set_xlabel(r"$\gamma = n/d$")
    ax3.set_ylabel(r"$\mathcal{T} = \mathcal{R}_{sc} - \mathcal{R}_{lt}$")
    ax3.set_title("(c) slices: theory (lines), simulation (dots)")
    ax3.legend(fontsize=9, ncol=4, loc="lower left")
    fig.suptitle(f"{title}: linear transferability, sigma = {sigma}")
    return fig


def linear_value_maps(result: dict, transferability, title: str):
    r"""Fig. 8 of paper 000: theory (Eq. 11) and simulation shaded by value."""
    import matplotlib.pyplot as plt

    sigma = result["sigma"]
    g_fine = np.linspace(0.01, 2.0, 400)
    t_fine = np.linspace(0, np.pi / 2, 200)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    plotting.value_map(ax1, g_fine, t_fine,
                       theory.linear_transferability(g_fine[:, None], t_fine[None, :], sigma))
    ax1.set_title("(a) theory, Eq. 11")
    plotting.value_map(ax2, result["gammas"], result["thetas"], transferability.mean)
    ax2.set_title(f"(b) simulation, mean of {result['draws']} draws")
    fig.suptitle(f"{title}: linear transferability, theory vs simulation, sigma = {sigma}")
    return fig


def feature_spectrum_figure(spec: dict):
    r"""Thm 3.4 of paper 000: spectrum of the pretrained features and :math:`s_2/s_1` vs alpha.

    ``spec`` is the output of :func:`transferkit.simulate.feature_spectrum`.
    """
    import matplotlib.pyplot as plt

    alphas = spec["alphas"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for k, a in enumerate(alphas):
        s = spec["svals"][k]
        ax1.semilogy(np.arange(1, len(s) + 1), s / s[0], c=f"C{k}", label=rf"$\alpha = {a:g}$")
    ax1.set_xscale("log")
    ax1.set_xlabel("index k")
    ax1.set_ylabel(r"$s_k(\Phi)/s_1(\Phi)$")
    ax1.legend(fontsize=8)
    ax1.set_title("(a) spectrum of the pretrained features")
    ax2.loglog(alphas, spec["ratio"], "o", label=r"$\max\, s_2/s_1$ over draws")
    ax2.loglog(alphas, spec["ratio"][0] / alphas[0] * alphas, "k:", label=r"$\propto \alpha$")
    ax2.set_xlabel(r"initialisation scale $\alpha$")
    ax2.legend(fontsize=8)
    ax2.set_title(r"(b) Thm 3.4: $s_2/s_1 \to 0$ as $\alpha \to 0$")
    return fig


def minnorm_distance_figure(res: dict):
    r"""Thm 3.5 of paper 000: distance of the scratch limit to :math:`X^+y` against alpha.

    ``res`` is the output of :func:`transferkit.simulate.scratch_limit_vs_alpha`.
    """
    import matplotlib.pyplot as plt

    alphas = res["alphas"]
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for m, mk in zip(res["dist"], ("o", "x", "+")):
        ax.loglog(alphas, res["dist"][m].max(axis=1), mk, ms=7, label=m)
    first = next(iter(res["dist"].values())).max(axis=1)
    ax.loglog(alphas, first[0] / alphas[0] * alphas, "k:", label=r"$\propto\alpha$")
    ax.set_xlabel(r"initialisation scale $\alpha$")
    ax.set_ylabel(r"$\max_b \|\hat\beta - X^+y\|$")
    ax.set_title(rf"Thm 3.5: scratch limit vs min-norm, $n = {res['n']}$")
    ax.legend(fontsize=8)
    return fig


# ---------------------------------------------------------------------------
# fine-tuning (paper 000, Fig. 2; paper 001, Thm 5.2)
# ---------------------------------------------------------------------------


def finetune_phase_boundaries(sigma: float, depth, gammas=None) -> list:
    r"""Boundaries of the fine-tuning sign map as ``(gamma, theta, label)`` curves.

    Eq. 15 of paper 000: :math:`\theta = \pi/3` for :math:`\gamma < 1` and :math:`\gamma = 1`;
    with paper 001's Thm 5.2 rescaling (:func:`~transferkit.theory.finetune_boundary_deep`)
    the angle boundary becomes :math:`\theta = \arccos(k/2)`.
    """
    g = np.linspace(0.005, 0.995, 300) if gammas is None else np.asarray(gammas, float)
    curves = [(np.array([g[0], 1.0]), np.array([np.pi / 3, np.pi / 3]), r"$\theta = \pi/3$ (Eq. 15)"),
              (np.array([1.0, 1.0]), np.array([0.0, np.pi / 2]), r"$\gamma = 1$")]
    if sigma > 0:
        curves.append((g, theory.finetune_boundary_deep(g, sigma, depth),
                       rf"$\cos\theta = k/2$ (Thm 5.2, $L = {depth}$)"))
    return curves


def finetune_phase_figure(result: dict, transferability, slices, title: str):
    r"""Fig. 2 of paper 000: (a) surface of Eq. 15, (b) sign map, (c) slices with simulation.

    Parameters
    ----------
    result : dict from :func:`~transferkit.sweep.finetune_grid` (with scratch risks).
    transferability : :class:`~transferkit.analysis.Agreement` of the simulated fine-tuning
        transferability (means, standard deviations and standard errors are plotted).
    slices : angles at which (c) is drawn (the nearest grid angles are used).

    (b) marks a simulated cell by the sign of its mean only where the mean is more than
    its tolerance (critical value times standard error plus optimisation error) away from
    zero, and as "0" otherwise.  (c) draws Eq. 15 (solid), the large-:math:`d` Thm 5.2
    form :func:`~transferkit.theory.finetune_transferability_deep` (dashed) and the
    simulated means with one standard deviation.
    """
    import matplotlib.pyplot as plt

    sigma, depth = result["sigma"], result["depth"]
    g_fine = np.linspace(0.01, 2.0, 400)
    t_fine = np.linspace(0, np.pi / 2, 200)
    T_fine = theory.finetune_transferability(g_fine[:, None], t_fine[None, :])
    fig = plt.figure(figsize=(11, 9))
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.05])
    ax1 = fig.add_subplot(grid[0, 0], projection="3d")
    plotting.phase_surface(ax1, g_fine, t_fine, T_fine)
    ax1.set_title("(a) theory, Eq. 15")
    ax2 = fig.add_subplot(grid[0, 1])
    plotting.sign_map(ax2, g_fine, t_fine, T_fine, boundaries=finetune_phase_boundaries(sigma, depth)[:2])
    if sigma > 0:
        gb, tb, lab = finetune_phase_boundaries(sigma, depth)[2]
        ax2.plot(gb, tb, color="k", lw=1.2, ls="--", label=lab)
    G, TH = np.meshgrid(result["gammas"], result["thetas"], indexing="ij")
    a = transferability
    tol = a.critical * a.se + a.atol
    sgn = np.where(np.abs(a.mean) > tol, np.sign(a.mean), 0)
    for s, mk, c, lab in ((-1, "s", plotting.NEGATIVE, r"simulated $\mathcal{T} < 0$"),
                          (0, "D", "white", r"simulated $\mathcal{T} = 0$ within tolerance"),
                          (1, "o", plotting.POSITIVE, r"simulated $\mathcal{T} > 0$")):
        if np.any(sgn == s):
            ax2.scatter(G[sgn == s], TH[sgn == s], s=14, marker=mk, c=c, edgecolors="k",
                        linewidths=0.5, label=lab)
    ax2.legend(loc="upper right", fontsize=7, framealpha=0.9)
    ax2.set_title("(b) sign: red negative, blue positive, white zero")
    ax3 = fig.add_subplot(grid[1, :])
    for k, t in enumerate(slices):
        j = int(np.argmin(np.abs(result["thetas"] - t)))
        tj, c = result["thetas"][j], f"C{k}"
        ax3.plot(g_fine, theory.finetune_transferability(g_fine, tj), c=c,
                 label=plotting.theta_label(tj))
        ax3.plot(g_fine, theory.finetune_transferability_deep(g_fine, tj, sigma, depth), c=c,
                 ls="--", lw=1)
        ax3.errorbar(result["gammas"], a.mean[:, j], yerr=a.std[:, j], fmt="o", c=c, ms=4,
                     capsize=2)
    ax3.axhline(0, c="k", lw=0.8)
    ax3.set_xlabel(r"$\gamma = n/d$")
    ax3.set_ylabel(r"$\mathcal{T} = \mathcal{R}_{sc} - \mathcal{R}_{ft}$")
    ax3.set_title(f"(c) slices: Eq. 15 (solid), Thm 5.2 with L = {depth} (dashed), "
                  "simulation (dots, one standard deviation)")
    ax3.legend(fontsize=9, ncol=4, loc="lower right")
    fig.suptitle(f"{title}: fine-tuning transferability, sigma = {sigma}")
    return fig


def finetune_depth_figure(results: dict, thetas, title: str):
    r"""Simulation, Eq. 14 and Thm 5.2 side by side, one panel per depth.

    ``results`` maps a depth ``L`` to a :func:`~transferkit.sweep.finetune_grid` result.
    Plotted against :math:`\gamma < 1`, for each angle in ``thetas`` (nearest grid angles),
    is the fine-tuning risk **minus Eq. 14** (finite-size,
    :func:`~transferkit.theory.finetune_risk_finite`): simulated means with their standard
    errors (dots), the per-sample Thm 5.2 limit on the same samples (crosses) and the
    finite-size Thm 5.2 form :func:`~transferkit.theory.finetune_risk_deep_finite` (lines).
    Eq. 14 is the zero line.
    """
    import matplotlib.pyplot as plt

    depths = sorted(results)
    fig, axes = plt.subplots(1, len(depths), figsize=(4.2 * len(depths), 3.8), sharey=True,
                             squeeze=False)
    for ax, L in zip(axes[0], depths):
        r = results[L]
        d, sigma = r["d"], r["sigma"]
        keep = r["n"] < d
        g, n = r["gammas"][keep], r["n"][keep]
        n_fine = np.arange(max(2, int(n.min()) - 1), d - 1)
        for k, t in enumerate(thetas):
            j = int(np.argmin(np.abs(r["thetas"] - t)))
            tj, c = r["thetas"][j], f"C{k}"
            eq14 = theory.finetune_risk_finite(n, d, tj, sigma)
            diff = r["finetune"][keep, j] - eq14[:, None]
            se = diff.std(-1, ddof=1) / np.sqrt(diff.shape[-1])
            ax.errorbar(g, diff.mean(-1), yerr=se, fmt="o", c=c, ms=4, capsize=2,
                        label=plotting.theta_label(tj))
            ax.plot(g, (r["finetune_thm52"][keep, j] - eq14[:, None]).mean(-1), "x", c=c, ms=6)
            ax.plot(n_fine / d, theory.finetune_risk_deep_finite(n_fine, d, tj, sigma, L)
                    - theory.finetune_risk_finite(n_fine, d, tj, sigma), c=c, lw=1)
        ax.axhline(0, c="k", lw=0.8)
        ax.set_xlabel(r"$\gamma = n/d$")
        ax.set_title(f"L = {L}")
    axes[0, 0].set_ylabel(r"$\mathcal{R}_{ft} - $ Eq. 14")
    axes[0, 0].legend(fontsize=8, loc="upper left")
    fig.suptitle(f"{title}: simulation (dots, ±1 s.e.), Thm 5.2 on the same samples (x), "
                 "Thm 5.2 finite-size form (lines); Eq. 14 = 0", fontsize=10)
    return fig
