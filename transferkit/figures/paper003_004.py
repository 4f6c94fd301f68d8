r"""Figures of papers 003 (*the PT+FT penalty of a ReLU unit*) and 004 (*diagonal linear networks*).

Paper 003: the penalty and its local exponent (Fig. 1a-b), sample efficiency of STL against
PT+FT (Fig. 1c) with the penalty's prediction beside the measured benefit, and the
clustering of the learned ReLU features and their alignment with the teacher for STL, PT+FT
and MTL (paper 004, App. E.2/G, Figs. 6a-e, with Fig. 6a's dense teacher).
Paper 004: generalisation of STL, PT+FT and MTL diagonal networks against the number of
samples, and the :math:`Q` and :math:`\ell_{1,2}` norms of their solutions (Fig. 5a).

Each function returns a :class:`matplotlib.figure.Figure`; the notebooks
``ptft_relu`` and ``diagonal_networks`` call them and show them through
:func:`transferkit.provenance.record`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from .._validate import check_bool, check_int
from ..experiments.diagonal_networks import aux_norm_fraction, l1_norm, top_k_variance
from ..experiments.ptft_relu import penalty_ratio
from ..stats import mean_se
from ..theory.penalties import relu_ptft_penalty
from .plotting import tight_layout

__all__ = ["METHOD_COLORS", "METHOD_LABELS", "ptft_penalty_figure", "sample_efficiency_figure",
           "paired_log_ratio", "reversal_figure", "relu_features_figure", "alignment_figure",
           "participation_ratio_figure", "stl_clusters_figure", "dense_clusters_figure",
           "nested_rescaling_figure", "overlap_figure", "NTK_STYLE",
           "diagonal_generalisation_figure", "diagonal_norms_figure",
           "diagonal_l12_figure", "diagonal_l12_large_figure", "diagonal_rescaling_figure", "diagonal_sparsity_figure"]

#: Colour of each method in every figure of this module.
METHOD_COLORS = {"stl": "C0", "ptft": "C1", "mtl": "C2"}
#: Legend label of each method.
METHOD_LABELS = {"stl": "STL", "ptft": "PT+FT", "mtl": "MTL"}


def _open_where_stopped(ax, x, y, done, color, **kw):
    """Open (white-filled) markers over the points of ``(x, y)`` whose runs did not all reach
    their tolerance (``done`` false): how every figure of this module marks runs stopped at
    a step cap."""
    stopped = ~np.asarray(done, bool)
    if stopped.any():
        ax.plot(np.asarray(x)[stopped], np.asarray(y)[stopped], "o", mfc="white", color=color,
                **kw)


def _legend_below(fig, axes, rows: int = 1, group=None, fontsize=7):
    """One legend for the whole figure, below its panels, where it covers no data.

    Gathers the labelled artists of every axis in ``axes`` (a label met twice is kept
    once, the first time), orders them by ``group(label)`` (stable; groups in the order
    they first occur; default: no reordering) and places them in ``rows`` rows under the
    figure, which is laid out first (:func:`~transferkit.figures.plotting.tight_layout`).
    Columns are filled first, so the labels of a group share a column when each group
    holds ``rows`` labels.  Returns the legend.
    """
    entries = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    labels = list(entries)
    if group is not None:
        firsts = list(dict.fromkeys(group(label) for label in labels))
        labels.sort(key=lambda label: firsts.index(group(label)))
    tight_layout(fig)
    return fig.legend([entries[label] for label in labels], labels, loc="upper center",
                      bbox_to_anchor=(0.5, 0.0), ncol=max(1, -(-len(labels) // rows)),
                      fontsize=fontsize)


def ptft_penalty_figure(m, penalty: dict, dlog: dict, m_check, direct: dict, fd: dict,
                        rhos, m_aux):
    r"""The PT+FT penalty of one ReLU unit and its local exponent (paper 003, Fig. 1a-b).

    Parameters
    ----------
    m : array_like
        Grid of magnitudes :math:`m` for the closed-form curves.
    penalty, dlog : dict
        ``{(rho, m_aux): array like m}``: the penalty :math:`\tilde r(m)` (paper 003,
        Eqs. 10-11; :func:`transferkit.theory.penalties.relu_ptft_penalty`) and its local
        exponent :math:`\partial\log\tilde r/\partial\log m`
        (:func:`transferkit.theory.penalties.relu_ptft_dlog_penalty`).
    m_check : array_like
        Magnitudes of the numerical checks (circles).
    direct, fd : dict
        ``{(rho, m_aux): array like m_check}``: the direct numerical minimum of
        :math:`p(u)` and the finite-difference exponent.
    rhos, m_aux : sequence of float
        Cosines :math:`\rho` (columns) and auxiliary coefficients :math:`m^{\rm aux}` (colours).

    Returns
    -------
    matplotlib.figure.Figure
        Top row Fig. 1a, bottom row Fig. 1b, one column per :math:`\rho`.
    """
    fig, axes = plt.subplots(2, len(rhos), figsize=(10, 6), sharex=True, squeeze=False)
    for j, rho in enumerate(rhos):
        for c, ma in enumerate(m_aux):
            k = (rho, ma)
            axes[0, j].loglog(m, penalty[k], color=f"C{c}", label=rf"$m^{{\rm aux}}={ma:g}$")
            axes[0, j].loglog(m_check, direct[k], "o", color=f"C{c}", ms=4, mfc="none")
            axes[1, j].semilogx(m, dlog[k], color=f"C{c}")
            axes[1, j].semilogx(m_check, fd[k], "o", color=f"C{c}", ms=4, mfc="none")
        axes[0, j].set_title(rf"$\rho = {rho}$")
        axes[1, j].set_xlabel("$m$")
        axes[1, j].axhline(1, color="k", lw=0.6, ls=":")
        axes[1, j].axhline(2, color="k", lw=0.6, ls=":")
        axes[1, j].set_ylim(-0.5, 2.5)
    axes[0, 0].set_ylabel(r"$\tilde r$")
    axes[1, 0].set_ylabel(r"$\partial\log\tilde r/\partial\log m$")
    axes[0, 0].legend(fontsize=8)
    tight_layout(fig)
    return fig


def sample_efficiency_figure(results: dict, rhos, magnitudes, gamma: float):
    r"""Test error of STL and PT+FT ReLU students against the sample size (paper 003, Fig. 1c).

    Parameters
    ----------
    results : dict
        ``{(rho, magnitude): SampleEfficiencyResult}`` from
        :func:`transferkit.experiments.ptft_relu.run_sample_efficiency`.
    rhos, magnitudes : sequence of float
        Rows (cosines :math:`\rho`) and columns (main-task magnitudes :math:`m`).
    gamma : float
        Readout re-initialisation :math:`\gamma`; each title gives the theory's ratio
        :math:`\tilde r(m; \rho, m_0 = 1)/\tilde r(m; 0, 0)` of re-using a pretrained unit
        against a fresh one (paper 003, Eqs. 10-11).

    Returns
    -------
    matplotlib.figure.Figure
        One panel per :math:`(\rho, m)`: mean normalised test error over draws; an open
        marker where some draw of that method stopped at its step cap before the loss
        tolerance.
    """
    fig, axes = plt.subplots(len(rhos), len(magnitudes),
                             figsize=(3.3 * len(magnitudes), 2.8 * len(rhos)), squeeze=False,
                             sharex=True)
    for i, rho in enumerate(rhos):
        for j, mag in enumerate(magnitudes):
            r, ax = results[rho, mag], axes[i, j]
            ns = [int(n) for n in r.ns]
            for name, run in r.methods.items():
                ax.loglog(ns, run.error.mean(1), "o-", color=METHOD_COLORS[name],
                          label=METHOD_LABELS[name])
                _open_where_stopped(ax, ns, run.error.mean(1), np.asarray(run.converged).all(1),
                                    METHOD_COLORS[name], ms=7)
            ratio = relu_ptft_penalty(mag, rho, 1.0, gamma) / relu_ptft_penalty(mag, 0.0, 0.0, gamma)
            ax.set_title(rf"$\rho={rho}$, $m={mag}$; $\tilde r/\tilde r_{{\rm new}}={ratio:.2f}$",
                         fontsize=8)
            ax.set_xlabel("main-task samples $n$")
            ax.set_xticks(ns, [str(n) for n in ns])
            ax.minorticks_off()
    axes[0, 0].set_ylabel("test error / Var f*")
    axes[0, 0].legend(fontsize=8)
    tight_layout(fig)
    return fig


def paired_log_ratio(result, converged_only: bool = True):
    r"""Per draw, :math:`\log_{10}` of the PT+FT test error over the STL test error of the
    same draw (same teachers and samples) in one cell of paper 003, Fig. 1c.

    Parameters
    ----------
    result : SampleEfficiencyResult
        One :math:`(\rho, m)` of
        :func:`transferkit.experiments.ptft_relu.run_sample_efficiency`.
    converged_only : bool
        Set to NaN every draw whose pretraining, STL or PT+FT run stopped at its step cap
        before the loss tolerance.

    Returns
    -------
    ndarray, shape (len(ns), draws)
        :math:`\log_{10}(e_{\rm PT+FT}/e_{\rm STL})`; below 0 pretraining helped.
    """
    lr = np.log10(result.ptft.error / result.stl.error)
    if converged_only:
        ok = result.stl.converged & result.ptft.converged & np.asarray(result.pre_converged)[None, :]
        lr = np.where(ok, lr, np.nan)
    return lr


def reversal_figure(results: dict, rhos, magnitudes, gamma: float, m_curve=None,
                    note: str | None = None):
    r"""Measured benefit of pretraining against the penalty's prediction (paper 003, Fig. 1c
    beside Eqs. 10-11).

    One panel per :math:`\rho`, against the main-task magnitude :math:`m`.  Markers (one
    colour per sample size :math:`n`): mean and standard error over draws of the paired
    :math:`\log_{10}(e_{\rm PT+FT}/e_{\rm STL})` (:func:`paired_log_ratio`), over the draws
    where pretraining, STL and PT+FT all reached their loss tolerance; where some draw
    stopped at its step cap a thin dashed line gives the mean over all draws.  Black line:
    the prediction, :math:`\log_{10}` of the penalty of re-using a pretrained unit over that
    of a fresh one, :math:`\tilde r(m;\rho, 1, \gamma)/\tilde r(m; 0, 0, \gamma)`
    (:func:`transferkit.experiments.ptft_relu.penalty_ratio`).  The theory predicts the sign
    (below 0: pretraining helps; above 0: the reversal), not the size of the error ratio.

    Parameters
    ----------
    results : dict
        ``{(rho, magnitude): SampleEfficiencyResult}``.
    rhos, magnitudes : sequence of float
        Panels (cosines :math:`\rho`) and the magnitudes :math:`m` on the horizontal axis.
    gamma : float
        Readout re-initialisation :math:`\gamma` of PT+FT.
    m_curve : array_like, optional
        Magnitudes of the prediction's curve (default: 200 points log-spaced over the
        range of ``magnitudes``, widened by a factor 2 each side).
    note : str, optional
        Appended to every panel's title (e.g. the step the networks were trained with, when
        the figure is drawn again under another reading).

    Returns
    -------
    matplotlib.figure.Figure
        One panel per :math:`\rho`.
    """
    mags = np.asarray(magnitudes, float)
    if m_curve is None:
        m_curve = np.logspace(np.log10(mags.min() / 2), np.log10(mags.max() * 2), 200)
    ns = [int(n) for n in results[rhos[0], magnitudes[0]].ns]
    shades = plt.cm.viridis(np.linspace(0.1, 0.85, len(ns)))
    # each rho on its own scale: at rho = 1 the ratios reach -9, which on a shared axis
    # squeezed the rho = 0.9 panel, the one the chapter reads, into a thin band
    fig, axes = plt.subplots(1, len(rhos), figsize=(4.2 * len(rhos), 3.4), squeeze=False)
    for ax, rho in zip(axes[0], rhos):
        conv = np.array([paired_log_ratio(results[rho, m]) for m in magnitudes])     # (M, N, draws)
        every = np.array([paired_log_ratio(results[rho, m], False) for m in magnitudes])
        mean, se = mean_se(conv, where=np.isfinite(conv))        # converged runs
        for i, (n, col) in enumerate(zip(ns, shades)):
            ax.errorbar(mags, mean[:, i], yerr=se[:, i], fmt="o-", ms=3, lw=0.8, capsize=2,
                        color=col, label=f"$n = {n}$")
            if np.isnan(conv[:, i]).any():
                ax.plot(mags, every[:, i].mean(-1), "--", lw=0.8, color=col)
        ax.plot(m_curve, np.log10(penalty_ratio(m_curve, rho, gamma)), "k-", lw=1.5,
                label=r"penalty: $\log_{10}\tilde r/\tilde r_{\rm new}$")
        ax.axhline(0, color="k", lw=0.6, ls=":")
        ax.set_xscale("log")
        ax.set_xlabel("main-task magnitude $m$")
        ax.set_ylabel(r"$\log_{10}(e_{\rm PT+FT}/e_{\rm STL})$")
        ax.set_title(rf"$\rho = {rho}$" + (f", {note}" if note else ""), fontsize=9)
    axes[0, 0].legend(fontsize=7)
    tight_layout(fig)
    return fig


def relu_features_figure(ks, rows):
    r"""k-means inertia of the learned ReLU features, STL, PT+FT and MTL (paper 004, App. E.2/G,
    Figs. 6a, c, d).

    Parameters
    ----------
    ks : sequence of int
        Numbers of clusters :math:`K`.
    rows : sequence of tuple
        ``(method, inertia, alignment, participation_ratio)`` per method (``"stl"``,
        ``"ptft"``, ``"mtl"``): the mean inertia for each ``K``
        (:func:`transferkit.stats.kmeans_inertia`), the alignment score
        (:func:`transferkit.stats.alignment_score`) and the participation ratio
        (:func:`transferkit.stats.participation_ratio`, paper 004, App. G).

    Returns
    -------
    matplotlib.figure.Figure
        Inertia against :math:`K`, alignment and participation ratio in the legend.
    """
    fig, ax = plt.subplots(figsize=(4, 3))
    for name, inert, align, pr in rows:
        ax.plot(ks, inert, "o-", color=METHOD_COLORS[name],
                label=f"{METHOD_LABELS[name]}: alignment {align:.2f}, PR {pr:.1f}")
    ax.set_xlabel("clusters $K$")
    ax.set_ylabel("inertia")
    ax.legend(fontsize=7)
    tight_layout(fig)
    return fig


def alignment_figure(ns, align: dict, converged: dict | None = None):
    r"""Alignment score of the learned ReLU features against :math:`n`, one line per method
    (paper 004, App. E.2.2, Fig. 6e, reduced).

    Parameters
    ----------
    ns : sequence of int
        Main-task sample sizes.
    align : dict
        ``{title: {method: scores}}``, one panel per title (e.g. a :math:`(\rho, m)` cell),
        ``scores`` of shape ``(len(ns), draws)``: per student the alignment score
        (:func:`transferkit.stats.alignment_score`) of its k-means centres with the main
        teacher's units.
    converged : dict, optional
        ``{title: {method: flags}}``, bool ``flags`` of the shape of that ``scores`` (one per
        student) or ``(len(ns),)`` (one per point): whether the runs reached their
        tolerance.  A point whose runs did not all is drawn with an open marker, and the
        legend says so.  A title or method left out: every run converged (the default).

    Returns
    -------
    matplotlib.figure.Figure
        Mean and standard error over the draws against :math:`n`.

    Raises
    ------
    ValueError
        If some ``flags`` have neither of the two shapes.
    """
    converged = {} if converged is None else converged
    fig, axes = plt.subplots(1, len(align), figsize=(3.6 * len(align), 3), squeeze=False,
                             sharey=True)
    any_open = False
    for ax, (title, runs) in zip(axes[0], align.items()):
        for name, scores in runs.items():
            scores = np.asarray(scores, float)
            done = _points_done(converged.get(title, {}).get(name), scores.shape,
                                f"converged[{title!r}][{name!r}]")
            m, se = mean_se(scores, axis=1, single=0.0)
            line = ax.errorbar(ns, m, yerr=se, marker="o", capsize=3, color=METHOD_COLORS[name],
                               label=METHOD_LABELS[name])
            _open_where_stopped(ax, ns, m, done, METHOD_COLORS[name],
                                zorder=line[0].get_zorder())   # over errorbar's data line
            any_open |= not done.all()
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.minorticks_off()
        ax.set_xlabel("main-task samples $n$")
        ax.set_title(title, fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if any_open:
        handles.append(Line2D([], [], marker="o", ls="none", color="0.3", mfc="white"))
        labels.append("open: some run stopped\nat its step cap")
    axes[0, 0].set_ylabel("alignment score")
    axes[0, 0].legend(handles, labels, fontsize=7)
    tight_layout(fig)
    return fig


def _points_done(flags, shape, name):
    """Per point (first axis of ``shape``), whether every run converged: ``flags`` of
    ``shape`` (one per run) or ``shape[:1]`` (one per point); ``None``: all converged."""
    if flags is None:
        return np.ones(shape[:1], bool)
    flags = np.asarray(flags, bool)
    if flags.shape == tuple(shape):
        return flags.reshape(shape[0], -1).all(axis=1)
    if flags.shape == tuple(shape[:1]):
        return flags
    raise ValueError(f"{name} must have the shape of its scores {tuple(shape)} or "
                     f"{tuple(shape[:1])} (got {flags.shape})")


def participation_ratio_figure(ns, alphas, pr, pr_se, converged=None):
    r"""Participation ratio of trained STL students against :math:`n`, one line per
    initialisation scale (paper 004, App. G, Fig. 8a, reduced).

    ``pr`` and ``pr_se`` have shape ``(len(alphas), len(ns))``: mean and standard error over
    draws of :func:`transferkit.stats.participation_ratio`.  ``converged`` (optional, shape
    ``(len(alphas), len(ns))``, bool): whether every run of that point reached its
    tolerance; the others are drawn hollow.
    """
    done = (np.ones(np.shape(pr), bool) if converged is None
            else np.asarray(converged, bool))
    if done.shape != np.shape(pr):
        raise ValueError(f"converged must have the shape of pr {np.shape(pr)} "
                         f"(got {done.shape})")
    fig, ax = plt.subplots(figsize=(4, 3))
    for k, alpha in enumerate(alphas):
        line = ax.errorbar(ns, pr[k], yerr=pr_se[k], marker="o", capsize=3,
                           label=rf"$\alpha = {alpha:g}$")
        _open_where_stopped(ax, ns, pr[k], done[k], line[0].get_color(),
                            zorder=line[0].get_zorder())   # over errorbar's raised data line
    ax.set_xscale("log", base=2)
    ax.set_xlabel("main-task samples $n$")
    ax.set_ylabel("participation ratio")
    ax.legend(fontsize=7)
    tight_layout(fig)
    return fig


def stl_clusters_figure(ns, alphas, clusters, converged=None):
    r"""Weighted k-means of STL students against :math:`n` and the initialisation scale
    (paper 004, App. E.2.1, Figs. 6a-b, reduced).

    (a) inertia against the number of clusters :math:`K`, one colour per :math:`n`, one line
    style per initialisation scale (mean over the draws); (b) the alignment score against
    :math:`n`, one line per scale (mean and standard error over the draws).  Markers are
    hollow where a run stopped at its step cap.

    Parameters
    ----------
    ns : sequence of int
        Main-task sample sizes.
    alphas : sequence of float
        Initialisation scales.
    clusters : sequence of transferkit.experiments.ptft_relu.UnitClusters
        Per scale, :func:`~transferkit.experiments.ptft_relu.unit_clusters` of the students,
        ``inertia`` ``(len(ns), draws, K)`` and ``alignment`` ``(len(ns), draws)``.
    converged : sequence of bool arrays ``(len(ns), draws)``, optional
        Per scale, whether each run reached its tolerance (default: all did).
    """
    if len(clusters) != len(alphas):
        raise ValueError(f"clusters must hold one UnitClusters per alpha "
                         f"(got {len(clusters)} for {len(alphas)} alphas)")
    if converged is None:
        converged = [np.ones(cl.alignment.shape, bool) for cl in clusters]
    if len(converged) != len(alphas):
        raise ValueError(f"converged must hold one array per alpha "
                         f"(got {len(converged)} for {len(alphas)} alphas)")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.2))
    _inertia_panel(ax1, ns, alphas, clusters, converged, "(a) inertia, STL")
    for k, (alpha, cl, conv) in enumerate(zip(alphas, clusters, converged)):
        ls = _STYLES[k % len(_STYLES)]
        done = np.asarray(conv).all(axis=1)                                 # (len(ns),)
        m, se = mean_se(cl.alignment, axis=1)
        line = ax2.errorbar(ns, m, yerr=se, ls=ls, c="k", marker="o", ms=5, capsize=3,
                            label=rf"$\alpha = {alpha:g}$")
        _open_where_stopped(ax2, ns, m, done, "k", ms=5, zorder=line[0].get_zorder())
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("main-task samples $n$")
    ax2.set_ylabel(f"alignment score ($K = {clusters[0].align_k}$)")
    ax2.set_title("(b) alignment with the teacher, STL (hollow: stopped at the cap)", fontsize=8)
    ax2.legend(fontsize=7)
    tight_layout(fig)
    return fig


#: Line style of the k-th initialisation scale in the cluster figures.
_STYLES = ["-", "--", ":", "-."]


def _inertia_panel(ax, ns, alphas, clusters, converged, title):
    """Inertia against :math:`K`, one colour per :math:`n` and one line style per
    initialisation scale (mean over the draws; hollow markers where a run stopped at its
    cap): panel (a) of :func:`stl_clusters_figure` and the panels of
    :func:`dense_clusters_figure`."""
    colours = plt.cm.viridis(np.linspace(0, 0.9, len(ns)))
    for k, (alpha, cl, conv) in enumerate(zip(alphas, clusters, converged)):
        ls = _STYLES[k % len(_STYLES)]
        done = np.asarray(conv).all(axis=1)                                 # (len(ns),)
        for i, n in enumerate(ns):
            ax.plot(cl.ks, cl.inertia[i].mean(0), ls, marker="o", ms=3, c=colours[i],
                    mfc=colours[i] if done[i] else "white",
                    label=rf"$n = {n}$" if k == 0 else None)
        ax.plot([], [], ls, c="k", label=rf"$\alpha = {alpha:g}$")
    ax.set_xlabel("clusters $K$")
    ax.set_ylabel("inertia")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, ncol=2)


def dense_clusters_figure(ns, alphas, readouts, clusters, converged, sparse, sparse_converged,
                          k: int = 6):
    r"""Weighted k-means of STL students of dense teachers (paper 004, App. E.2.1, Fig. 6a,
    reduced), beside those of the sparse teacher.

    One panel per readout law of the dense teacher: inertia against :math:`K`, as panel (a)
    of :func:`stl_clusters_figure`; a last panel: the inertia at ``k`` clusters against
    :math:`n`, one colour per teacher (sparse, then each dense law), one line style per
    initialisation scale, mean and standard error over the draws (hollow where a run
    stopped at its cap).

    Parameters
    ----------
    ns, alphas : sequences
        Main-task sample sizes and initialisation scales, shared by every teacher.
    readouts : sequence of str
        The dense teachers' readout laws.
    clusters : sequence of sequence of transferkit.experiments.ptft_relu.UnitClusters
        ``clusters[i][j]``: law ``readouts[i]``, scale ``alphas[j]``; ``inertia``
        ``(len(ns), draws, K)``.
    converged : sequence of sequence of bool arrays ``(len(ns), draws)``
        Shaped as ``clusters``.
    sparse, sparse_converged : sequences over ``alphas``
        The same for the sparse (six-unit) teacher.
    k : int
        The :math:`K` of the last panel; one of the clusters' ``ks``.
    """
    if len(clusters) != len(readouts) or len(converged) != len(readouts):
        raise ValueError(f"clusters and converged must hold one entry per readout law "
                         f"(got {len(clusters)} and {len(converged)} for {len(readouts)})")
    if any(len(c) != len(alphas) for c in (*clusters, *converged, sparse, sparse_converged)):
        raise ValueError(f"every entry of clusters and converged, and sparse and "
                         f"sparse_converged, must hold one item per alpha ({len(alphas)})")
    ks = list(np.asarray(sparse[0].ks))
    if k not in ks:
        raise ValueError(f"k must be one of the clusters' ks {ks} (got {k!r})")
    fig, axes = plt.subplots(1, len(readouts) + 1, figsize=(4 * (len(readouts) + 1), 3.2))
    for i, (law, cls, conv) in enumerate(zip(readouts, clusters, converged)):
        _inertia_panel(axes[i], ns, alphas, cls, conv,
                       f"({chr(97 + i)}) dense teacher, {law} readouts")
    ax = axes[-1]
    ik = ks.index(k)
    teachers = [("sparse (6 units)", sparse, sparse_converged)] + [
        (f"dense, {law}", cls, conv) for law, cls, conv in zip(readouts, clusters, converged)]
    for c, (label, cls, conv) in enumerate(teachers):
        for j, alpha in enumerate(alphas):
            m, se = mean_se(cls[j].inertia[..., ik], axis=1)
            line = ax.errorbar(ns, m, yerr=se, ls=_STYLES[j % len(_STYLES)], c=f"C{c}",
                               marker="o", ms=4, capsize=2,
                               label=label if j == 0 else None)
            _open_where_stopped(ax, ns, m, np.asarray(conv[j]).all(axis=1), f"C{c}", ms=4,
                                zorder=line[0].get_zorder())
    for j, alpha in enumerate(alphas):
        ax.plot([], [], _STYLES[j % len(_STYLES)], c="k", label=rf"$\alpha = {alpha:g}$")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("main-task samples $n$")
    ax.set_ylabel(f"inertia at $K = {k}$")
    ax.set_title(f"({chr(97 + len(readouts))}) inertia at K = {k} (hollow: stopped at the cap)",
                 fontsize=8)
    ax.legend(fontsize=6)
    tight_layout(fig)
    return fig


def nested_rescaling_figure(result, statistics, mtl=None, mtl_statistics=None):
    r"""Rescaled PT+FT on one-feature main tasks (paper 004, App. E.2.3 and G; Figs. 6f-g,
    8b-c), one colour per method, the nested task solid and the disjoint one dashed.

    Parameters
    ----------
    result : transferkit.experiments.ptft_relu.NestedRescalingResult
        From :func:`transferkit.experiments.ptft_relu.run_nested_rescaling`.
    statistics : transferkit.experiments.ptft_relu.NestedStatistics
        ``nested_statistics(result)``.
    mtl : transferkit.experiments.ptft_relu.NestedMtlResult, optional
        Multi-task students of the same tasks
        (:func:`transferkit.experiments.ptft_relu.run_nested_mtl`), drawn as diamonds on
        the first three panels: black with each unit weighted by the norm of its two
        readouts (Eq. 32), brown by its main readout (spread and alignment).
    mtl_statistics : transferkit.experiments.ptft_relu.NestedMtlStatistics, optional
        ``nested_mtl_statistics(mtl)``; given with ``mtl``.

    Returns
    -------
    matplotlib.figure.Figure
        Five panels against the number of main-task samples, mean and standard error over
        draws: the normalised test error; the one-cluster spread of the unit directions
        (Fig. 6f); the alignment of the weighted mean direction with the main teacher's unit
        (Fig. 6g); the participation ratio after training, nested task, of the hidden
        responses and of the readout-weighted ones (Fig. 8b; black: after pretraining), with
        crosses for the ENSD between the pretrained and the fine-tuned representations
        (Fig. 8c).  An open marker: some draw stopped at its step cap.  One legend under
        the panels, one column per method, its tasks one above the other.

    Raises
    ------
    ValueError
        If only one of ``mtl`` and ``mtl_statistics`` is given.
    """
    if (mtl is None) != (mtl_statistics is None):
        raise ValueError("mtl and mtl_statistics must be given together")
    r, st = result, statistics
    fig, axes = plt.subplots(1, 5, figsize=(15, 3.3))
    colours = ["0.45"] + [plt.cm.viridis(v) for v in np.linspace(0.1, 0.85, len(r.scales))]
    panels = ((r.error, "normalised test error", True, None, None),
              (st.spread, "Fig. 6f: one-cluster spread", False, None, None),
              (st.alignment, "Fig. 6g: alignment with the main unit", False, None, None),
              (st.pr, "Fig. 8b-c: PR, hidden responses", False, st.ensd, st.pr_pre),
              (st.pr_readout, "Fig. 8b-c: PR, readout-weighted", False, st.ensd_readout,
               st.pr_pre_readout))
    for ax, (value, title, log, shared, before) in zip(axes, panels):
        tasks = r.tasks[:1] if shared is not None else r.tasks
        for t, task in enumerate(tasks):
            for k, method in enumerate(r.methods):
                mean, se = mean_se(value[t, k], single=0.0)
                done = r.converged[t, k].all(-1)
                ax.errorbar(r.ns, mean, se, ls="-" if t == 0 else "--", color=colours[k],
                            capsize=2, lw=1, label=f"{method}, {task}" if ax is axes[0] else None)
                for filled in (True, False):
                    at = done == filled
                    ax.plot(r.ns[at], mean[at], "o", ms=4, color=colours[k],
                            mfc=colours[k] if filled else "white", zorder=3)
                if shared is not None and k > 0:
                    ax.plot(r.ns, mean_se(shared[t, k - 1], single=0.0)[0], "x", ms=6,
                            color=colours[k])
        if mtl is not None and shared is None:
            mtl_panels = {0: ((mtl.error, "k", "MTL"),),
                          1: ((mtl_statistics.spread, "k", "MTL"),
                              (mtl_statistics.spread_main, "tab:brown", "MTL, main readout")),
                          2: ((mtl_statistics.alignment, "k", "MTL"),
                              (mtl_statistics.alignment_main, "tab:brown", "MTL, main readout"))}
            for mvalue, colour, label in mtl_panels[list(axes).index(ax)]:
                for t, task in enumerate(mtl.tasks):
                    mean, se = mean_se(mvalue[t], single=0.0)
                    ax.errorbar(mtl.ns, mean, se, ls="-" if t == 0 else "--", color=colour,
                                capsize=2, lw=1,
                                label=f"{label}, {task}" if ax is not axes[2] else None)
                    done = mtl.converged[t].all(-1)
                    for filled in (True, False):
                        at = done == filled
                        ax.plot(mtl.ns[at], mean[at], "D", ms=4, color=colour,
                                mfc=colour if filled else "white", zorder=3)
        if shared is not None:
            ax.axhline(before.mean(), color="k", lw=1, label="after pretraining")
            ax.plot([], [], "kx", label="ENSD(pretrained, fine-tuned)")
        ax.set_title(title, fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("main-task samples $n$")
        if log:
            ax.set_yscale("log")
    tasks = tuple(r.tasks) + (tuple(mtl.tasks) if mtl is not None else ())

    def method(label):                        # "PT+FT s=1, nested" -> "PT+FT s=1"
        return next((label[:-len(t) - 2] for t in tasks if label.endswith(", " + t)), label)

    # one legend under the panels, a column per method, its tasks one above the other
    _legend_below(fig, axes, rows=len(r.tasks), group=method)
    return fig


def diagonal_generalisation_figure(runs: dict):
    r"""Generalisation of STL, PT+FT and MTL diagonal networks against :math:`n` (paper 004).

    Markers: gradient descent (mean and standard error over draws); lines: the minimiser of
    paper 004's Eq. 22 at the STL and PT+FT initialisations (the theory).

    Parameters
    ----------
    runs : dict
        ``{support name: TasksResult}`` from
        :func:`transferkit.experiments.diagonal_networks.run_tasks`, one panel each.

    Returns
    -------
    matplotlib.figure.Figure
        :math:`\|\hat\beta-\beta\|^2` against the number of main-task samples; one
        legend under the panels, one column per method.
    """
    fig, axes = plt.subplots(1, len(runs), figsize=(9, 3.4), sharey=True, squeeze=False)
    axes = axes[0]
    for ax, (name, r) in zip(axes, runs.items()):
        ns = r.ns
        for m, run in r.methods.items():
            risk = run.risk
            ax.errorbar(ns, *mean_se(risk, 1), fmt="o",
                        color=METHOD_COLORS[m], label=f"{METHOD_LABELS[m]} (GD)", ms=4, capsize=2)
        for m, q in r.qmin.items():
            ax.plot(ns, q.risk.mean(1), "-", color=METHOD_COLORS[m],
                    label=f"{METHOD_LABELS[m]}: Eq. 22 minimiser")
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.set_xlabel("main-task samples $n$")
        ax.set_title(f"{name} supports ({r.overlap}/{r.k})")
    axes[0].set_ylabel(r"$\|\hat\beta - \beta\|^2$")
    # one legend under the panels, a column per method (gradient descent above its theory)
    by_method = {lab: m for m, lab in METHOD_LABELS.items()}
    _legend_below(fig, axes, rows=2, group=lambda label: by_method.get(
        label.split(":")[0].removesuffix(" (GD)"), label))
    return fig


def diagonal_norms_figure(ns, q_ratio: dict, l12_ratio: dict):
    r"""The :math:`Q` and :math:`\ell_{1,2}` norms of learned solutions (paper 004, Fig. 5a).

    Parameters
    ----------
    ns : array_like
        Main-task sample sizes.
    q_ratio, l12_ratio : dict
        ``{method: array (len(ns), draws)}``: the PT+FT penalty :math:`\|\hat\beta\|_Q`
        (paper 004, Eq. 22; :func:`transferkit.theory.penalties.diagonal_ptft_penalty`) and
        the :math:`\ell_{1,2}` norm (Eq. 30; :func:`transferkit.theory.penalties.l12_norm`) of
        each method's solutions, relative to the ground truth's.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels, mean ratio over draws against :math:`n`.
    """
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for m, q in q_ratio.items():
        axes[0].plot(ns, q.mean(1), "o-", color=METHOD_COLORS[m], label=METHOD_LABELS[m])
        axes[1].plot(ns, l12_ratio[m].mean(1), "o-", color=METHOD_COLORS[m], label=METHOD_LABELS[m])
    for ax, t in zip(axes, [r"$\|\hat\beta\|_Q / \|\beta\|_Q$ (PT+FT penalty)",
                            r"$\ell_{1,2}$ / ground truth"]):
        ax.axhline(1, color="k", lw=0.8, ls=":")
        ax.set_xlabel("main-task samples $n$")
        ax.set_title(t)
    axes[0].legend(fontsize=8)
    tight_layout(fig)
    return fig


def diagonal_l12_figure(ns, alphas, ratio, distance, converged=None):
    r"""MTL diagonal networks against the minimum-:math:`\ell_{1,2}` interpolant (paper 004,
    Eqs. 30 and 35) as the initialisation scale shrinks.

    Parameters
    ----------
    ns : array_like
        Main-task sample sizes.
    alphas : array_like, shape (A,)
        Initialisation scales.
    ratio, distance : array_like, shape (A, len(ns), draws)
        :math:`\ell_{1,2}` norm of the networks over that of the interpolant, and their
        relative distance to it
        (:class:`transferkit.experiments.diagonal_networks.L12Result`).
    converged : array_like of bool, shape (A, len(ns), draws), optional
        Which runs reached their loss tolerance.  Solid lines and markers are then means over
        converged runs only (a point without one is left out); where some runs stopped at
        the step budget, a thin dashed line gives the mean over all runs.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels, mean and standard error over draws against :math:`n`, one line per
        :math:`\alpha`.
    """
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    _l12_panels(axes, ns, alphas, ratio, distance, converged)
    axes[0].legend(fontsize=8)
    tight_layout(fig)
    return fig


def _l12_panels(axes, ns, alphas, ratio, distance, converged, prefix=""):
    """The two panels of :func:`diagonal_l12_figure` on ``axes`` (ratio, distance), their
    titles after ``prefix``."""
    ratio, distance = np.asarray(ratio, float), np.asarray(distance, float)
    conv = np.ones(ratio.shape, bool) if converged is None else np.asarray(converged, bool)
    shades = plt.cm.viridis(np.linspace(0.1, 0.85, len(alphas)))
    for a, col, r, dist, c in zip(alphas, shades, ratio, distance, conv):
        for ax, v in zip(axes, (r, dist)):
            mean, se = mean_se(v, where=c & np.isfinite(v), single=0.0)   # converged runs
            ax.errorbar(ns, mean, yerr=se, fmt="o-", ms=3, color=col, label=rf"$\alpha = {a:g}$")
            if not c.all():
                ax.plot(ns, v.mean(-1), "--", lw=0.8, color=col)
    axes[0].axhline(1, color="k", lw=0.8, ls=":")
    axes[0].set_title(prefix + r"$\ell_{1,2}$(MTL) / $\ell_{1,2}$(minimum interpolant)")
    axes[1].set_title(prefix + r"$\|B_{\rm MTL} - B_{1,2}\|_F / \|B_{1,2}\|_F$")
    axes[1].set_yscale("log")
    for ax in axes:
        ax.set_xlabel("main-task samples $n$")


def diagonal_l12_large_figure(results: dict):
    r"""MTL diagonal networks against the minimum-:math:`\ell_{1,2}` interpolant at the
    paper's size, one row per support overlap (paper 004, Eqs. 30 and 35; the panels of
    :func:`diagonal_l12_figure`).

    Parameters
    ----------
    results : dict
        ``{name: L12Result}`` by overlap name
        (:func:`transferkit.experiments.diagonal_networks.mtl_small_init_large`); solid
        lines: means over converged runs, dashed: over all runs where some stopped at the
        step budget.

    Returns
    -------
    matplotlib.figure.Figure
        ``2 * len(results)`` panels; the sample-size axis is logarithmic.
    """
    if not results:
        raise ValueError("results must hold at least one L12Result (got none)")
    fig, axes = plt.subplots(len(results), 2, figsize=(9, 3.0 * len(results)), squeeze=False)
    for row, (name, r) in zip(axes, results.items()):
        _l12_panels(row, r.ns, r.alphas, r.l12_mtl / r.l12_min[None], r.distance,
                    r.converged, prefix=f"{name}: ")
        for ax in row:
            ax.set_xscale("log", base=2)
    axes[0, 0].legend(fontsize=8)
    tight_layout(fig)
    return fig


def diagonal_rescaling_figure(result):
    r"""PT+FT with the pretrained weights rescaled before fine-tuning, on a nested main task
    (paper 004, App. E.1, Fig. 5b; App. E.2.3).

    Parameters
    ----------
    result : transferkit.experiments.diagonal_networks.RescalingResult
        From :func:`transferkit.experiments.diagonal_networks.rescaling_experiment`.

    Returns
    -------
    matplotlib.figure.Figure
        Left: :math:`\|\hat\beta-\beta\|^2` against the number of main-task samples, one
        colour per factor :math:`s` (markers: gradient descent, mean and standard error over
        draws; lines: the minimiser of Eq. 22 at the rescaled initialisation, the theory).
        Right: the fraction of :math:`\|\hat\beta\|^2` on the auxiliary support (Fig. 5b's
        quantity), the same way.  :math:`s = 1` (no rescaling) is drawn in black.  The left
        title gives :math:`D` and the readout re-initialisation :math:`\gamma`.
    """
    r = result
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    shades = plt.cm.viridis(np.linspace(0.05, 0.9, len(r.scales)))
    panels = ((r.risk, r.qmin_risk), (r.aux_fraction, r.qmin_aux_fraction))
    for i, s in enumerate(r.scales):
        col = "k" if s == 1 else shades[i]
        for ax, (gd, th) in zip(axes, panels):
            mean, se = mean_se(gd[i], single=0.0)
            ax.errorbar(r.ns, mean, se, fmt="o", ms=4, capsize=2, color=col,
                        label=rf"$s = {s:g}$" + (" (no rescaling)" if s == 1 else ""))
            ax.plot(r.ns, th[i].mean(-1), "-", lw=1, color=col)
    axes[0].set_ylabel(r"$\|\hat\beta - \beta\|^2$")
    axes[0].set_title(f"nested main task ({r.k_main} of {r.k} auxiliary features)\n"
                      rf"$D = {r.D}$, $\gamma = {r.gamma:g}$")
    axes[1].set_ylabel(r"fraction of $\|\hat\beta\|^2$ on the auxiliary support")
    axes[1].set_title("Fig. 5b's quantity")
    for ax in axes:
        ax.set_xlabel("main-task samples $n$")
    axes[0].legend(fontsize=7)
    tight_layout(fig)
    return fig


def diagonal_sparsity_figure(runs: dict, readout: dict, n_show: int, k_max: int | None = None):
    r"""Sparsity of the learned diagonal-network solutions (paper 004, Fig. 5c-f).

    Parameters
    ----------
    runs : dict
        ``{support name: TasksResult}`` from
        :func:`transferkit.experiments.diagonal_networks.run_tasks` (the first entry gives
        panels c and d).
    readout : dict
        ``{support name: ReadoutRuns}`` from
        :func:`transferkit.experiments.diagonal_networks.stl_readout_only`, same keys, ns
        and draws: STL (LP), readout-only training.
    n_show : int
        The main-task sample size of panel e (one of the runs' ``ns``).
    k_max : int, optional
        The largest :math:`k` of panels c and e (default: the input dimension :math:`D`;
        a smaller one shows the top of a large :math:`D`).

    Returns
    -------
    matplotlib.figure.Figure
        Six axes, row-major.  **c** (top left): the share of :math:`\sum_d\hat\beta_d^2`
        outside the :math:`k` largest weights, :math:`1 - V_k`
        (:func:`~transferkit.experiments.diagonal_networks.top_k_variance`), against
        :math:`k`, for STL (markers: gradient descent; thin lines: the minimiser of Eq. 22
        at the STL initialisation) and STL (LP) (dashed), one colour per :math:`n`, mean over
        draws.  **e** (top middle, right): the same at :math:`n` = ``n_show`` for STL, PT+FT
        and MTL, one axis per support.  **d** (bottom left): :math:`\|\hat\beta\|_1` of STL
        against :math:`n` (mean and standard error; line: Eq. 22 minimiser; dashed: STL (LP);
        dotted: the teacher's).  **f** (bottom middle, right): the fraction of
        :math:`\|\hat\beta\|^2` on the auxiliary support
        (:func:`~transferkit.experiments.diagonal_networks.aux_norm_fraction`) against
        :math:`n`, per method, one axis per support.

    Raises
    ------
    ValueError
        Naming ``readout`` when its keys differ from those of ``runs``, ``n_show`` when it
        is not one of the sample sizes, ``k_max`` when it is not an integer >= 1.
    """
    if list(readout) != list(runs):
        raise ValueError(f"readout must have the keys of runs {list(runs)} (got {list(readout)})")
    first = next(iter(runs))
    ns = np.asarray(runs[first].ns)
    if n_show not in ns:
        raise ValueError(f"n_show must be one of the sample sizes {list(ns)} (got {n_show!r})")
    j = int(np.flatnonzero(ns == n_show)[0])
    K = runs[first].D if k_max is None else min(check_int("k_max", k_max, 1), runs[first].D)
    fig, axes = plt.subplots(2, 1 + len(runs), figsize=(4 + 3.6 * len(runs), 6.6),
                             squeeze=False)

    def outside(beta):                                  # mean over draws, k = 1, ..., K
        return np.maximum(1 - top_k_variance(beta), 1e-16).mean(-2)[..., :K]

    # c: STL against STL (LP), every n
    r, lp = runs[first], readout[first]
    ks = np.arange(1, K + 1)
    shades = plt.cm.viridis(np.linspace(0.05, 0.9, len(ns)))
    ax = axes[0, 0]
    out_gd, out_q, out_lp = outside(r.stl.beta), outside(r.qmin_stl.beta), outside(lp.beta)
    for i, n in enumerate(ns):
        ax.plot(ks, out_gd[i], "o", ms=2.5, color=shades[i], label=f"$n = {n}$")
        ax.plot(ks, out_q[i], "-", lw=0.8, color=shades[i])
        ax.plot(ks, out_lp[i], "--", lw=1, color=shades[i])
    ax.plot([], [], "ko", ms=2.5, label="STL (GD)")
    ax.plot([], [], "k-", lw=0.8, label="STL: Eq. 22 minimiser")
    ax.plot([], [], "k--", lw=1, label="STL (LP)")
    ax.set_title(f"c: STL vs STL (LP), {first} run")
    # d: l1 norm of STL against n
    ax = axes[1, 0]
    m, se = mean_se(l1_norm(r.stl.beta), single=0.0)
    ax.errorbar(ns, m, se, fmt="o", ms=4, capsize=2, color=METHOD_COLORS["stl"], label="STL (GD)")
    ax.plot(ns, l1_norm(r.qmin_stl.beta).mean(-1), "-", color=METHOD_COLORS["stl"],
            label="STL: Eq. 22 minimiser")
    ax.plot(ns, l1_norm(lp.beta).mean(-1), "--", color="0.4", label="STL (LP)")
    ax.axhline(l1_norm(r.beta_main).mean(), ls=":", color="k", label="teacher")
    ax.set_xlabel("main-task samples $n$")
    ax.set_ylabel(r"$\|\hat\beta\|_1$")
    ax.set_title("d: L1 norm, STL")
    ax.legend(fontsize=7)
    # e and f, one column per support
    for col, (name, r) in enumerate(runs.items(), start=1):
        ax = axes[0, col]
        for mth, run in r.methods.items():
            ax.plot(ks, outside(run.beta[j][None])[0], "o", ms=2.5, color=METHOD_COLORS[mth],
                    label=f"{METHOD_LABELS[mth]} (GD)")
        for mth, q in r.qmin.items():
            ax.plot(ks, outside(q.beta[j][None])[0], "-", lw=0.8, color=METHOD_COLORS[mth],
                    label=f"{METHOD_LABELS[mth]}: Eq. 22 minimiser")
        ax.plot(ks, outside(readout[name].beta[j][None])[0], "--", color="0.4", label="STL (LP)")
        ax.set_title(f"e: {name} ({r.overlap}/{r.k}), $n = {n_show}$")
        ax = axes[1, col]
        aux = r.beta_aux[None]
        for mth, run in r.methods.items():
            m, se = mean_se(aux_norm_fraction(run.beta, aux), single=0.0)
            ax.errorbar(r.ns, m, se, fmt="o", ms=4, capsize=2, color=METHOD_COLORS[mth],
                        label=f"{METHOD_LABELS[mth]} (GD)")
        for mth, q in r.qmin.items():
            ax.plot(r.ns, aux_norm_fraction(q.beta, aux).mean(-1), "-", lw=1,
                    color=METHOD_COLORS[mth], label=f"{METHOD_LABELS[mth]}: Eq. 22 minimiser")
        ax.plot(r.ns, aux_norm_fraction(readout[name].beta, aux).mean(-1), "--", color="0.4",
                label="STL (LP)")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("main-task samples $n$")
        ax.set_title(f"f: {name} ({r.overlap}/{r.k})")
    for ax in axes[0]:
        ax.set_yscale("log")
        # from the data's smallest positive share (at most 1e-9 below it: the small D's
        # shares reach 1e-9; at D = 1000 they stay above 1e-2 and a fixed 1e-9 emptied six
        # decades of the panel)
        lows = [v for line in ax.get_lines() for v in np.asarray(line.get_ydata(), float)
                if np.isfinite(v) and v > 0]
        ax.set_ylim(max(1e-9, 0.5 * min(lows)) if lows else 1e-9, 1.5)
        ax.set_xlabel("top $k$ weights")
    axes[0, 0].set_ylabel(r"$1 - V_k$: share of $\|\hat\beta\|^2$ outside the top $k$")
    axes[1, 1].set_ylabel(r"fraction of $\|\hat\beta\|^2$ on the auxiliary support")
    axes[0, 0].legend(fontsize=6, ncol=2)
    axes[0, 1].legend(fontsize=6)
    tight_layout(fig)
    return fig


#: Colour and label of the lazy NTK solution in :func:`overlap_figure`, black for a closed form
#: (not a trained network).
NTK_STYLE = dict(color="k", label="NTK (lazy)")


def overlap_figure(result, lazy: bool = False):
    r"""Paper 004, Fig. 4b (reduced): test error against the number of teacher units the
    main task shares with the auxiliary one.

    Parameters
    ----------
    result : transferkit.experiments.ptft_relu.OverlapResult
        From :func:`transferkit.experiments.ptft_relu.run_overlap`.
    lazy : bool
        Also draw the other readings of the caption's "(lazy) tangent kernel solution": the
        lazy limits from the students' own starting weights (``result.lazy_stl_error``,
        ``result.lazy_ptft_error``: dotted, open squares, in the colour of STL and PT+FT)
        and, where trained, PT+FT after rescaling the pretrained first layer by 10
        (``result.ptft_rescaled``: dash-dotted, triangles, in PT+FT's colour).

    Returns
    -------
    matplotlib.figure.Figure
        One panel per main-task :math:`n`: mean normalised test error over the draws with one
        standard error, against :math:`s` (shared units out of ``result.units``), for STL,
        PT+FT (and MTL) and the lazy NTK solution (black, dashed); an open marker where
        some draw of that method stopped at its step cap before the loss tolerance.
    """
    lazy = check_bool("lazy", lazy)
    ns, shared = [int(n) for n in result.ns], np.asarray(result.shared)
    fig, axes = plt.subplots(1, len(ns), figsize=(2.9 * len(ns) + 0.6, 3.1), squeeze=False,
                             sharey=True)
    for j, (n, ax) in enumerate(zip(ns, axes[0])):
        for name, run in result.methods.items():
            mean, se = mean_se(run.error[:, j], -1, single=0.0)
            ax.errorbar(shared, mean, yerr=se, fmt="o-", color=METHOD_COLORS[name], ms=4,
                        capsize=2, label=METHOD_LABELS[name])
            _open_where_stopped(ax, shared, mean, np.asarray(run.converged)[:, j].all(-1),
                                METHOD_COLORS[name], ms=7)
        mean, se = mean_se(result.ntk_error[:, j], -1, single=0.0)
        ax.errorbar(shared, mean, yerr=se, fmt="s--", ms=4, capsize=2, mfc="none", **NTK_STYLE)
        for name in ("stl", "ptft") if lazy else ():
            mean, se = mean_se(getattr(result, f"lazy_{name}_error")[:, j], -1, single=0.0)
            ax.errorbar(shared, mean, yerr=se, fmt="s:", ms=4, capsize=2, mfc="none",
                        color=METHOD_COLORS[name], label=f"{METHOD_LABELS[name]} (lazy)")
        if lazy and result.ptft_rescaled is not None:
            run = result.ptft_rescaled
            mean, se = mean_se(run.error[:, j], -1, single=0.0)
            ax.errorbar(shared, mean, yerr=se, fmt="^-.", ms=4, capsize=2,
                        color=METHOD_COLORS["ptft"], label="PT+FT x 10")
            _open_where_stopped(ax, shared, mean, np.asarray(run.converged)[:, j].all(-1),
                                METHOD_COLORS["ptft"], ms=7)
        ax.set_yscale("log")
        ax.set_xticks(shared, [str(s) for s in shared])
        ax.set_xlabel(f"shared units $s$ (of {result.units})")
        ax.set_title(f"n = {n}", fontsize=9)
    axes[0, 0].set_ylabel("test error / Var f*")
    _legend_below(fig, axes[0], rows=1, fontsize=8)
    return fig
