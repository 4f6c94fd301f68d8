r"""Figures of paper 000 (*Features are Fate*), Sec. 4 and App. E: linear transfer in a
two-layer ReLU student-teacher model (Fig. 3 (a)-(e), Fig. 9), with the extra panel (f) and
the loss curves of the book.

Each function draws one figure from the output of
:func:`transferkit.experiments.relu_student_teacher.fig3_experiment` or
:func:`transferkit.experiments.relu_student_teacher.anchored_experiment` (or from quantities
the chapter derives from them) and returns it; the chapter
``notebooks/relu_student_teacher.py`` shows each through :func:`transferkit.provenance.record`.
The functions draw only: they compute no statistic that the chapter prints or checks.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
import numpy as np

from .. import theory
from ..stats import mean_se
from . import plotting

__all__ = [
    "anchored_figure",
    "convergence_figure",
    "gram_figure",
    "least_squares_factor_figure",
    "out_of_span_figure",
    "readings_figure",
    "scratch_power_law_figure",
    "transfer_map_figure",
    "transfer_map_interactive",
]


def gram_figure(G_model, G_source, G_init):
    r"""Paper 000, Fig. 3 (a, b): Gram matrices of the pretrained kernel and of the source
    teacher's kernel.

    Parameters
    ----------
    G_model, G_source : ndarray, shape (p, p)
        Gram matrices, on the same ``p`` Gaussian inputs, of the pretrained student's kernel
        :math:`\frac1m\sum_i\sigma(w_i\cdot x)\sigma(w_i\cdot x')` (panel a) and of the source
        teacher's kernel (panel b); one entry of ``res.grams`` of
        :func:`transferkit.experiments.relu_student_teacher.fig3_experiment`.
    G_init : ndarray, shape (p, p)
        The kernel of the random initial units (``res.gram_init``), drawn on the right for
        scale.

    Returns
    -------
    matplotlib.figure.Figure
        Three heat maps on one colour scale, with a shared colour bar.
    """

    fig, axs = plt.subplots(1, 3, figsize=(11, 3.4))
    vmax = max(G_model.max(), G_source.max())
    for ax, G, title in zip(axs, (G_model, G_source, G_init),
                            ("(a) pretrained model", "(b) source teacher",
                             "random init (for scale)")):
        im = ax.imshow(G, vmin=0, vmax=vmax, cmap="viridis")
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=axs, shrink=0.8)
    return fig


def scratch_power_law_figure(ns, risk_mean, risk_se, A: float, nu: float, se_nu: float,
                             converged=None, converged_fit=None):
    r"""Paper 000, Fig. 3 (c): scratch risk against :math:`n`, with a power-law fit.

    Parameters
    ----------
    ns : array_like of int
        The target sample sizes.
    risk_mean, risk_se : array_like, shape (len(ns),)
        Mean and standard error of the scratch population risk over the target variance,
        :math:`\mathcal R_{sc}/\mathrm{Var} f_t^*`.
    A, nu, se_nu : float
        The fit :math:`A n^{-\nu}` and the standard error of :math:`\nu`, as returned by
        :func:`transferkit.stats.fit_power_law`.
    converged : array_like of bool, shape (len(ns),), optional
        Whether every run at that :math:`n` converged; the others are drawn hollow (stopped
        at the time horizon or the step cap).
    converged_fit : transferkit.experiments.relu_student_teacher.ScratchLaw, optional
        The fit on the converged :math:`n` only, drawn dashed over their range (when it has
        a fit).

    Returns
    -------
    matplotlib.figure.Figure
        Markers with error bars and the fitted line(s), on log-log axes.
    """

    ns = np.asarray(ns)
    risk_mean, risk_se = np.asarray(risk_mean), np.asarray(risk_se)
    fig, ax = plt.subplots(figsize=(4.5, 3.4))
    if converged is None:
        ax.errorbar(ns, risk_mean, yerr=risk_se, fmt="o", label="scratch (simulation)")
    else:
        ok = np.asarray(converged, dtype=bool)
        if ok.any():
            ax.errorbar(ns[ok], risk_mean[ok], yerr=risk_se[ok], fmt="o", color="C0",
                        label="scratch, converged")
        if not ok.all():
            ax.errorbar(ns[~ok], risk_mean[~ok], yerr=risk_se[~ok], fmt="o", color="C0",
                        mfc="white", label="scratch, not converged (horizon or step cap)")
    nn = np.geomspace(ns.min(), ns.max(), 50)
    ax.plot(nn, A * nn ** -nu, "-", color="C1",
            label=rf"$A n^{{-\nu}}$, all $n$: $\nu = {nu:.2f}\pm{se_nu:.2f}$")
    if converged_fit is not None and converged_fit.nu is not None:
        nc = np.geomspace(converged_fit.ns.min(), converged_fit.ns.max(), 20)
        ax.plot(nc, converged_fit.A * nc ** -converged_fit.nu, "--", color="C2",
                label=rf"converged $n$: $\nu = {converged_fit.nu:.2f}\pm{converged_fit.se_nu:.2f}$")
    ax.set(xscale="log", yscale="log", xlabel="$n$",
           ylabel=r"$\mathcal{R}_{sc}/\mathrm{Var} f_t^*$")
    ax.xaxis.set_minor_formatter(plt.NullFormatter())     # the minor labels overlap on short ranges
    ax.legend(fontsize="x-small", loc="lower left")  # a falling curve leaves this corner free
    return fig


def out_of_span_figure(mus, perp_sim, perp_theory, perp_init):
    r"""Paper 000, Fig. 3 (d): the target's squared norm outside the span of the units,
    :math:`\|P_\perp f_t^*\|^2/\|f_t^*\|^2` (Eqs. 155-156), against the ablation :math:`\mu`.

    Parameters
    ----------
    mus : array_like, shape (k,)
        The ablation fractions.
    perp_sim, perp_theory, perp_init : array_like, shape (k, teachers)
        The normalised out-of-span norm for the pretrained units (markers, mean and standard
        error over teachers), for the source teacher's kept units (line; App. C, exact
        sparsification) and for the random initial units (dashed); ``res.perp_sim``,
        ``res.perp_theory`` and ``res.perp_init`` of
        :func:`transferkit.experiments.relu_student_teacher.fig3_experiment`.

    Returns
    -------
    matplotlib.figure.Figure
    """

    ps = np.asarray(perp_sim)
    fig, ax = plt.subplots(figsize=(4.5, 3.4))
    ax.plot(mus, np.asarray(perp_theory).mean(1), "-",
            label="source units (App. C, exact sparsification)")
    ax.errorbar(mus, *mean_se(ps, 1, single=0.0), fmt="o",
                label="pretrained units (simulation)")
    ax.plot(mus, np.asarray(perp_init).mean(1), "--", color="0.5", label="random initial units")
    ax.set(xlabel=r"$\mu$", ylabel=r"$\|P_\perp f_t^*\|^2 / \|f_t^*\|^2$")
    ax.legend()
    return fig


#: Marker and line style per reading of :func:`readings_figure` (cycled).
_READING_MARKERS = ("o", "s", "^", "D")
_READING_LINES = ("-", "--", ":", "-.")


def readings_figure(labels, curves, laws, converged_laws, paper_nu: float = 1.18):
    r"""Paper 000, Fig. 3 (c) under several readings of its protocol: the scratch curves with
    their power laws, and the fitted exponents beside the paper's.

    Parameters
    ----------
    labels : sequence of str
        One name per reading (the legend).
    curves : sequence of transferkit.experiments.relu_student_teacher.ScratchCurve
        The scratch risk :math:`\mathcal R_{sc}/\mathrm{Var} f_t^*` per :math:`n` of each
        reading; :math:`n` at which some run did not converge are drawn hollow.
    laws, converged_laws : sequence of transferkit.experiments.relu_student_teacher.ScratchLaw
        Each reading's fit on all :math:`n` (drawn as a line) and on the converged
        :math:`n` only (a law without a fit, ``nu is None``, is left out of panel b).
    paper_nu : float
        The exponent the paper reports (drawn as a horizontal line in panel b).

    Returns
    -------
    matplotlib.figure.Figure
        (a) the curves and fits on log-log axes; (b) :math:`\nu` with two standard errors
        per reading, on all :math:`n` (filled) and on the converged :math:`n` (hollow).
    """

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9.0, 3.6), width_ratios=(1.3, 1.0))
    k = len(labels)
    handles = []
    for i, (lab, c, law) in enumerate(zip(labels, curves, laws)):
        # each reading its own colour, marker and line style: readings that agree (ours and
        # the absolute tolerance) draw on top of each other and must both stay visible
        col, mk, ls = f"C{i}", _READING_MARKERS[i % 4], _READING_LINES[i % 4]
        ns, ok = np.asarray(c.ns), np.asarray(c.converged, dtype=bool)
        shift = 1.0 + 0.03 * (i - (k - 1) / 2)           # offset in n for legibility
        for sel, face in ((ok, col), (~ok, "white")):
            if sel.any():
                ax.errorbar(ns[sel] * shift, np.asarray(c.mean)[sel], yerr=np.asarray(c.se)[sel],
                            fmt=mk, ms=4, color=col, mfc=face)
        if law.nu is not None:
            nn = np.geomspace(ns.min(), ns.max(), 30)
            ax.plot(nn, law.A * nn ** -law.nu, ls=ls, color=col, lw=1.2)
        handles.append(Line2D([], [], color=col, marker=mk, ms=4, ls=ls, lw=1.2, label=lab))
        for j, (fit, face) in enumerate(((law, col), (converged_laws[i], "white"))):
            if fit.nu is not None:
                bx.errorbar([fit.nu], [i + 0.15 * (j - 0.5)], xerr=[2 * fit.se_nu], fmt=mk,
                            color=col, mfc=face)
    ax.set(xscale="log", yscale="log", xlabel="$n$",
           ylabel=r"$\mathcal{R}_{sc}/\mathrm{Var} f_t^*$", title="(a) scratch risk")
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.legend(handles=handles, fontsize="small")
    bx.axvline(paper_nu, color="0.4", ls="--", lw=1)
    bx.text(paper_nu, k - 0.4, f" paper: {paper_nu:g}", color="0.3", fontsize="small")
    bx.set_yticks(np.arange(k), labels, fontsize="small")
    bx.set(xlabel=r"$\nu$ ($\pm 2$ s.e.; hollow: converged $n$ only)", ylim=(-0.6, k - 0.2),
           title=r"(b) fitted $\nu$")
    bx.invert_yaxis()
    return fig


def transfer_map_figure(ns, mus, T, n_star):
    r"""Paper 000, Fig. 3 (e): transferability over :math:`(\mu, n)` with the predicted
    boundary.

    Parameters
    ----------
    ns : array_like of int, shape (k_n,)
        The target sample sizes (columns, equally spaced on the grid).
    mus : array_like, shape (k_mu,)
        The ablation fractions (rows).
    T : array_like, shape (k_mu, k_n)
        Transferability :math:`(\mathcal R_{sc} - \mathcal R_{lt})/\mathrm{Var} f_t^*`,
        drawn clipped to :math:`[-1, 1]` (blue: pretraining helps, red: it hurts).
    n_star : array_like, shape (k_mu,)
        The predicted boundary :math:`n^*(\mu)` where
        :math:`\|P_\perp f_t^*\|^2 = A n^{-\nu}` (paper 000, Eq. 18 without :math:`C(n)`);
        drawn as grey circles, interpolated in :math:`\log n`; a value outside the grid is
        not drawn.

    Returns
    -------
    matplotlib.figure.Figure
    """

    ns, mus = np.asarray(ns), np.asarray(mus)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    im = ax.pcolormesh(np.arange(len(ns) + 1), np.arange(len(mus) + 1),
                       np.clip(T, -1, 1), cmap="RdBu", vmin=-1, vmax=1)
    ax.set_xticks(np.arange(len(ns)) + 0.5, ns)
    ax.set_yticks(np.arange(len(mus)) + 0.5, mus)
    # predicted boundary, in the grid's log-n coordinates
    x_star = np.interp(np.log(n_star), np.log(ns), np.arange(len(ns)) + 0.5,
                       left=np.nan, right=np.nan)
    ax.plot(x_star, np.arange(len(mus)) + 0.5, "o", color="0.5", ms=8,
            label=r"$\|P_\perp f_t\|^2 = A n^{-\nu}$")
    ax.set(xlabel="$n$", ylabel=r"$\mu$")
    fig.colorbar(im, ax=ax, label=r"$\mathcal{T}/\mathrm{Var} f_t^*$")
    ax.legend(loc="lower left", fontsize=8, frameon=True, framealpha=0.9)  # legible on any cell
    return fig


def transfer_map_interactive(ns, mus, T):
    r"""Paper 000, Fig. 3 (e), interactive: the map of :func:`transfer_map_figure` as a
    plotly heat map (:func:`transferkit.figures.plotting.plotly_heatmap`).

    Parameters
    ----------
    ns, mus, T
        As for :func:`transfer_map_figure`. The colours are clipped to :math:`[-1, 1]`; the
        hover label shows :math:`n`, :math:`\mu` and the unclipped value.

    Returns
    -------
    plotly.graph_objects.Figure
        Unlike the other functions of this module, a plotly figure (the book embeds it).
    """
    fig = plotting.plotly_heatmap(T, [str(n) for n in ns], [f"{mu:g}" for mu in mus],
                                  xlabel="n", ylabel="mu", zlabel="T / Var f_t")
    fig.update_traces(zmin=-1, zmax=1)   # colours clipped as in the static map, hover unclipped
    return fig


def least_squares_factor_figure(ns, mus, ratio, m: int):
    r"""Fig. 3 (f) of the book, not in paper 000: the linear-transfer risk over the
    out-of-span norm, :math:`\mathcal R_{lt}/\|P_\perp f_t^*\|^2`, against :math:`n`, with
    the Gaussian least-squares factor :math:`(n-1)/(n-m-1)`
    (:func:`transferkit.theory.relu.least_squares_factor`), the term :math:`C(n)` that the
    boundary of paper 000, Eq. 18 neglects.

    Parameters
    ----------
    ns : array_like of int, shape (k_n,)
        The target sample sizes.
    mus : array_like, shape (k_mu,)
        The ablation fractions (one marker series each, offset by 2 % per series in
        :math:`n` for legibility).
    ratio : array_like, shape (k_n, k_mu, draws)
        The ratio per target draw (markers: mean and standard error over draws).
    m : int
        The number of student units; a dotted vertical line marks :math:`n = m`.

    Returns
    -------
    matplotlib.figure.Figure
    """

    ns = np.asarray(ns)
    fig, ax = plt.subplots(figsize=(4.5, 3.4))
    for i, mu in enumerate(mus):
        r = ratio[:, i]
        ax.errorbar(ns * (1 + 0.02 * i), *mean_se(r), fmt="o", ms=3, label=rf"$\mu = {mu:g}$")
    nn = np.geomspace(m + 2, ns.max() * 1.1, 200)
    ax.plot(nn, theory.relu.least_squares_factor(nn, m), "k-", lw=1, label="$(n-1)/(n-m-1)$")
    ax.axvline(m, color="0.6", ls=":", lw=1)
    ax.set(xscale="log", yscale="log", xlabel="$n$",
           ylabel=r"$\mathcal{R}_{lt} / \|P_\perp f_t^*\|^2$")
    ax.legend(fontsize=7, ncol=2)
    return fig


def anchored_figure(ns, lambdas, T_lam, T_best, T_best_se):
    r"""Paper 000, Fig. 9 (App. E): transferability after pretraining with the penalty
    :math:`\lambda\sum_i\|w_i - w_i^{(0)}\|^2`, per :math:`\lambda` and for the best
    :math:`\lambda`.

    Parameters
    ----------
    ns : array_like of int, shape (k_n,)
        The target sample sizes.
    lambdas : array_like, shape (L,)
        The penalty weights.
    T_lam : array_like, shape (L, k_n, teachers, draws)
        Transferability over the target variance per :math:`\lambda` and draw (thin lines:
        mean over teachers and draws).
    T_best, T_best_se : array_like, shape (k_n,)
        Transferability of the :math:`\lambda` chosen per :math:`n` on held-in draws, mean
        and standard error on the held-out draws (thick line with error bars).

    Returns
    -------
    matplotlib.figure.Figure
    """

    ns = np.asarray(ns)
    T_best, T_best_se = np.asarray(T_best, float), np.asarray(T_best_se, float)
    means = np.asarray(T_lam, float).mean(axis=(2, 3))              # (L, k_n)
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    # one colour per lambda from a sequential map (rich: dark, lazy: light), however many
    colours = plt.cm.viridis(np.linspace(0.0, 0.9, len(lambdas)))
    for k, lam in enumerate(lambdas):
        ax.plot(ns, means[k], "-", lw=0.9, alpha=0.8, color=colours[k],
                label=rf"$\lambda$ = {lam:g}")
    ax.errorbar(ns, T_best, yerr=T_best_se, fmt="o-", color="k", lw=2,
                label="best $\\lambda$ (held-out draws)")
    ax.axhline(0, color="0.5", lw=0.8)
    # the axis shows [-1.5, top]: the rich model's mean can lie far below near n = m, and an
    # automatic top would follow the data's range down there and flatten every other curve
    bottom = max(-1.5, float(np.nanmin(means))) - 0.05
    top = float(max(np.nanmax(means), np.nanmax(T_best + T_best_se)))
    ax.set(xscale="log", xlabel="$n$", ylabel=r"$\mathcal{T}/\mathrm{Var} f_t^*$",
           ylim=(bottom, top + 0.05 * (top - bottom)))
    if np.nanmin(means) < -1.5:
        ax.text(0.99, 0.01, "axis cut at -1.5", transform=ax.transAxes, fontsize=7,
                va="bottom", ha="right", color="0.3")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.legend(fontsize=7, ncol=1 if len(lambdas) <= 6 else 2, loc="upper left",
              bbox_to_anchor=(1.01, 1.0))                 # beside the axes, off the curves
    return fig


def convergence_figure(pretrain: dict, ns, scratch: list, mus=None):
    r"""Loss curves of the runs behind paper 000, Fig. 3: pretraining (left) and scratch
    training (right) against gradient-flow time :math:`t = \sum_k h_k`.

    Parameters
    ----------
    pretrain : dict
        The pretraining ``info`` of
        :func:`transferkit.experiments.relu_student_teacher.fig3_experiment`
        (``res.pretrain``), with ``history`` and ``time_history`` of shape
        ``(steps, runs)`` and ``teacher_norm`` of shape ``(runs,)``; the population loss is
        drawn over :math:`\|f_s^*\|^2`.
    ns : array_like of int
        The target sample sizes.
    scratch : list of dict
        One scratch-training ``info`` per entry of ``ns`` (``res.scratch``); the training
        loss is drawn over its initial value, one colour per :math:`n`.
    mus : array_like, optional
        The ablated fractions :math:`\mu` of the pretraining runs (``res.mus``; the runs are
        ``mu``-major, the teachers of one :math:`\mu` together): the left panel's legend.
        Its lines are shades of grey, so that they are not read as the right panel's
        :math:`n`.

    Returns
    -------
    matplotlib.figure.Figure
    """

    fig, axs = plt.subplots(1, 2, figsize=(10, 3.4))
    h = pretrain.history / pretrain.teacher_norm
    runs = h.shape[1]
    groups = len(mus) if mus is not None and runs % len(mus) == 0 else 1   # one per mu
    per = runs // groups
    shades = plt.cm.Greys(np.linspace(0.35, 0.95, groups))
    for k in range(runs):
        label = rf"$\mu = {mus[k // per]:g}$" if groups > 1 and k % per == 0 else None
        axs[0].plot(pretrain.time_history[:, k], h[:, k], lw=0.8, color=shades[k // per],
                    label=label)
    axs[0].set(xscale="symlog", yscale="log", xlabel=r"gradient-flow time $\sum_k h_k$",
               ylabel=r"$\mathcal{R} / \|f_s^*\|^2$", title="pretraining (population loss)")
    if groups > 1:
        axs[0].legend(fontsize=7)
    for j, (n, info) in enumerate(zip(ns, scratch)):
        hh = info.history / info.history[0]
        for k in range(hh.shape[1]):
            axs[1].plot(info.time_history[:, k], hh[:, k], lw=0.8,
                        color=f"C{j}", label=f"n = {n}" if k == 0 else None)
    axs[1].set(xscale="symlog", yscale="log", xlabel=r"gradient-flow time $\sum_k h_k$",
               ylabel="training loss / initial", title="scratch training")
    axs[1].legend(fontsize=7)
    return fig
