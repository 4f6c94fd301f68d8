r"""Figures of paper 002 (Liu et al., *Towards Understanding the Transferability of Deep
Representations*): Thms 1-2 and the Fig. 2 analogue in the NTK regime (Sec. 6), and LeNet
transfer among digit-like data sets (Sec. 5, Figs. 8a and 9).

Each function returns a :class:`matplotlib.figure.Figure`; the notebooks
``ntk_similarity`` and ``lenet_transfer`` call them and show them through
:func:`transferkit.provenance.record`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.ticker import FixedLocator, FuncFormatter

from ..stats import mean_se
from .plotting import tight_layout

__all__ = ["LAYER_TICKS", "TASK_MARKERS", "deviation_path_figure", "fig8a_figure",
           "fig9_figure", "ntk_similarity_figure", "thm2_width_figure"]

#: tick labels of the layers of :data:`transferkit.models.lenet.LAYERS` in Fig. 8a (b)
#:
#: :meta hide-value:
LAYER_TICKS = (r"$\psi_1$ conv1", r"$\psi_2$ conv2", "fc1", "fc2", "fc3")

#: marker shape of task ``i`` in :func:`ntk_similarity_figure` (cycled beyond ten tasks)
TASK_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")

# opacity of the face of a filled marker in ntk_similarity_figure: a marker drawn over
# another leaves the one below visible
_FACE_ALPHA = 0.5


def _task_style(i, filled=True):
    """Marker keywords of task ``i``: colour ``C{i}``, shape :data:`TASK_MARKERS` ``[i]``, a
    translucent face (``filled``) or none (open), and a solid edge of the task's colour."""
    c = f"C{i}"
    return dict(fmt=TASK_MARKERS[i % len(TASK_MARKERS)], c=c, mec=c, ms=7, mew=1.3,
                mfc=to_rgba(c, _FACE_ALPHA) if filled else "none")


def ntk_similarity_figure(tasks):
    r"""Thms 1-2 of paper 002 (Sec. 6, Eqs. 1-2) against the wide network, one point per task.

    Parameters
    ----------
    tasks : dict of str to transferkit.experiments.ntk_similarity.TaskTransfer
        ``tasks`` of the :class:`transferkit.experiments.ntk_similarity.TransferResult` of
        :func:`transferkit.experiments.ntk_similarity.transfer_experiment`: the closed forms
        ``thm1``, ``thm2``, ``scratch`` and the measured ``grad2``, ``dev``, ``dev_scratch``
        (one value per initialisation). Task ``i`` is drawn in colour ``C{i}`` with the
        marker :data:`TASK_MARKERS` ``[i]``.

    Returns
    -------
    matplotlib.figure.Figure
        Regenerates the figure "Thms 1-2" of paper 002 (our numerical check of Sec. 6; the
        paper has none): (a) measured :math:`\|W(Q) - W(P)\|_F` against Eq. 2's leading
        term, fine-tuning (filled markers, translucent so that overlapping markers stay
        visible) and scratch (open markers of the same shape); (b) measured
        :math:`\|u_Q(P) - y_Q\|^2` against Eq. 1's :math:`\|y_Q - y_{P\to Q}\|^2`. Means
        over the initialisations with one standard deviation; dashed: theory = simulation.
    """
    names = list(tasks)
    grad2 = np.stack([tasks[k].grad2 for k in names])
    dev = np.stack([tasks[k].dev for k in names])
    dev_sc = np.stack([tasks[k].dev_scratch for k in names])
    thm1 = np.array([tasks[k].thm1 for k in names])
    thm2 = np.array([tasks[k].thm2 for k in names])
    scr = np.array([tasks[k].scratch for k in names])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.2))
    for i, k in enumerate(names):
        ax1.errorbar(thm2[i], dev[i].mean(), yerr=dev[i].std(ddof=1), capsize=2, label=k,
                     **_task_style(i))
        ax1.errorbar(scr[i], dev_sc[i].mean(), yerr=dev_sc[i].std(ddof=1), capsize=2,
                     **_task_style(i, filled=False))
    lim = [0, 1.1 * max(thm2.max(), scr.max(), dev.max(), dev_sc.max())]
    ax1.plot(lim, lim, "k--", lw=1, label="theory = simulation")
    ax1.set_xlim(lim)
    ax1.set_ylim(lim)
    ax1.set_xlabel(r"theory $\sqrt{(y_Q - y_{P\to Q})^\top H_Q^{-1}(y_Q - y_{P\to Q})}$")
    ax1.set_ylabel(r"measured $\|W(Q) - W(P)\|_F$")
    ax1.set_title("(a) Thm 2: fine-tuning (filled), scratch (open)")
    ax1.legend(fontsize=7, loc="upper left")
    for i, k in enumerate(names):
        ax2.errorbar(thm1[i], grad2[i].mean(), yerr=grad2[i].std(ddof=1), capsize=2,
                     **_task_style(i))
    lim = [0, 1.1 * max(thm1.max(), grad2.max())]
    ax2.plot(lim, lim, "k--", lw=1)
    ax2.set_xlabel(r"theory $\|y_Q - y_{P\to Q}\|^2$")
    ax2.set_ylabel(r"measured $\|u_Q(P) - y_Q\|^2$")
    ax2.set_title("(b) Thm 1: squared loss gradient at $W(P)$")
    tight_layout(fig)
    return fig


def deviation_path_figure(tasks):
    r"""The Fig. 2 analogue of paper 002 in the NTK regime: weight deviation during fine-tuning.

    Parameters
    ----------
    tasks : dict of str to transferkit.experiments.ntk_similarity.TaskTransfer
        ``tasks`` of the :class:`transferkit.experiments.ntk_similarity.TransferResult`:
        ``path_steps``, ``path`` (one row per initialisation), ``path_theory``
        (:func:`transferkit.theory.ntk.deviation_path`, paper 002 App. C, Eq. 42) and ``n``.
        Task ``i`` is drawn in colour ``C{i}``.

    Returns
    -------
    matplotlib.figure.Figure
        Regenerates Fig. 2 of paper 002 (:math:`\|W_k - W(P)\|_F/\sqrt n` against the
        fine-tuning step) for the wide two-layer network: mean over initialisations (solid)
        and the linearised theory (dotted), on a symlog step axis.
    """
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for i, (k, r) in enumerate(tasks.items()):
        ax.plot(r.path_steps, r.path.mean(0) / np.sqrt(r.n), c=f"C{i}", label=k)
        ax.plot(r.path_steps, r.path_theory / np.sqrt(r.n), c=f"C{i}", ls=":", lw=2)
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel("gradient-descent step $k$ of fine-tuning")
    ax.set_ylabel(r"$\|W_k - W(P)\|_F / \sqrt{n}$")
    ax.legend(fontsize=7)
    ax.set_title("Fig. 2 (NTK regime): simulation (solid), linearised theory (dotted)")
    tight_layout(fig)
    return fig


def thm2_width_figure(result, decay):
    r"""Thm 2 of paper 002 (Sec. 6.3, Eq. 2) against the width: the relative excess of the
    measured distance over the leading term, with its fitted decay and the theorem's rate.

    Parameters
    ----------
    result : transferkit.experiments.ntk_similarity.WidthSweepResult
        From :func:`transferkit.experiments.ntk_similarity.width_sweep`: ``widths``,
        ``names``, ``excess`` ``(width, task, seed)`` and ``converged`` ``(width, task)``.
        Task ``i`` is drawn in colour ``C{i}``.
    decay : transferkit.experiments.ntk_similarity.ExcessDecay
        From :func:`transferkit.experiments.ntk_similarity.fit_excess_decay`: the fitted
        :math:`A m^{-\nu}` per task and the theorem's rate.

    Returns
    -------
    matplotlib.figure.Figure
        Log-log plot of the mean relative excess :math:`\|W(Q) - W(P)\|_F /
        \sqrt{(y_Q - y_{P\to Q})^\top H_Q^{-1}(y_Q - y_{P\to Q})} - 1` against :math:`m`
        (dots, one standard error over the initialisations; open dots: a run did not
        converge; only positive means can be drawn), the fitted line per task (solid,
        :math:`\nu` in the legend) and the slope :math:`m^{-1/4}` of Eq. 2's remainder
        (dashed, through the first fitted point of the largest excess); the legend lies
        below the axes, clear of the data.
    """
    m = np.asarray(result.widths, dtype=float)
    ex = np.asarray(result.excess)
    fig, ax = plt.subplots(figsize=(6.5, 5.2))
    for i, k in enumerate(result.names):
        mean, se = mean_se(ex[:, i], single=0.0)
        pos = mean > 0
        conv = np.asarray(result.converged)[:, i]
        f = decay.fits.get(k)
        label = k if f is None else rf"{k}: $\nu = {f.exponent:.2f} \pm {f.se_exponent:.2f}$"
        for sel, mfc in ((pos & conv, None), (pos & ~conv, "none")):
            if sel.any():
                ax.errorbar(m[sel], mean[sel], yerr=np.minimum(se[sel], 0.99 * mean[sel]),
                            fmt="o", c=f"C{i}", mfc=mfc, capsize=2, label=label)
                label = None                       # one legend entry per task
        if f is not None:
            ax.plot(f.widths, f.amplitude * f.widths.astype(float) ** -f.exponent, c=f"C{i}",
                    lw=1)
    if decay.fits:
        ref = max(decay.fits.values(), key=lambda f: f.mean[0])
        x0, y0 = float(ref.widths[0]), float(ref.mean[0])
        ax.plot(m, y0 * (m / x0) ** -decay.rate, "k--", lw=1,
                label=rf"Eq. 2 remainder rate $m^{{-{decay.rate:g}}}$")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("width $m$")
    ax.set_ylabel(r"relative excess $\|W(Q) - W(P)\|_F\,/\,$leading term $- 1$")
    ax.set_title("Thm 2 against width: excess over Eq. 2's leading term")
    # below the axes, where it covers no point, error bar or line
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
    tight_layout(fig)
    return fig


def fig8a_figure(acc, dev_abs, dev_rel, thm1, labels, layer_ticks=None):
    r"""Fig. 8a of paper 002 (Sec. 5.1) at LeNet scale, with the task similarity of Thm 1.

    Parameters
    ----------
    acc : array ``(source, seed)``
        Target test accuracy after fine-tuning, one row per entry of ``labels``.
    dev_abs : array ``(source, seed, layer)``
        Deviation :math:`\|W_{(l)} - W_{0(l)}\|_F` of each layer's weights from where
        fine-tuning started: paper 002's measure (Sec. 5.1, Fig. 8a: "the deviation from
        pretrained weight of each layer"; Sec. 3 defines it with a factor :math:`1/\sqrt n`,
        :math:`n` the number of target examples, the same for every source here and left
        out), ``dev_abs`` of :func:`transferkit.experiments.lenet_transfer.transfer_cell`.
    dev_rel : array ``(source, seed, layer)``
        The relative deviation :math:`\|W_{(l)} - W_{0(l)}\|_F / \|W_{0(l)}\|_F` (ours, not
        the paper's), ``dev`` of the same cell.
    thm1 : array ``(source,)``
        Thm 1's term :math:`\|Y_Q - Y_{P\to Q}\|^2 / n_Q` (paper 002, Eq. 1): the ``thm1`` of
        each source's :class:`transferkit.experiments.lenet_transfer.PixelSimilarity`.
    labels : list of str
        The sources (up to four: the bars of panels (b) and (c) are centred for four).
    layer_ticks : sequence of str
        One tick label per layer (default, ``None``: :data:`LAYER_TICKS`).

    Returns
    -------
    matplotlib.figure.Figure
        Regenerates Fig. 8a of paper 002: (a) target accuracy (bars: mean and standard
        deviation over seeds; dots: seeds); (b) absolute deviation of each layer, the
        paper's measure; (c) relative deviation of each layer (ours); (d) Thm 1's term.

    Raises
    ------
    ValueError
        If ``dev_abs`` and ``dev_rel`` do not both have the shape ``(len(labels), seeds,
        layers)`` with the seeds of ``acc``.
    """
    acc, thm1 = np.asarray(acc), np.asarray(thm1)
    devs = {"dev_abs": np.asarray(dev_abs), "dev_rel": np.asarray(dev_rel)}
    for name, d in devs.items():
        if d.ndim != 3 or d.shape[:2] != acc.shape or d.shape != devs["dev_abs"].shape:
            raise ValueError(f"{name} must have the shape (source, seed, layer) with "
                             f"(source, seed) = {acc.shape} as acc and the shape of dev_abs "
                             f"(got {d.shape})")
    x = np.arange(len(labels))
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    ax = axes[0, 0]
    ax.bar(x, acc.mean(1), yerr=acc.std(1, ddof=1), capsize=3, color=[f"C{k}" for k in x])
    for k in x:
        ax.plot(np.full(acc.shape[1], k), acc[k], "k.", ms=4)
    ax.set_xticks(x, labels, rotation=20)
    ax.set_ylim(max(0, acc.min() - 0.1), 1)
    ax.set_ylabel("target test accuracy")
    ax.set_title("(a) simulation: accuracy after fine-tuning")
    w = 0.2
    panels = ((axes[0, 1], devs["dev_abs"], r"$\|W_l - W_l^{\rm start}\|_F$",
               "(b) simulation: deviation of each layer (paper)"),
              (axes[1, 0], devs["dev_rel"],
               r"$\|W_l - W_l^{\rm start}\|_F / \|W_l^{\rm start}\|_F$",
               "(c) simulation: relative deviation (ours)"))
    for ax, dev, ylabel, title in panels:
        n_layers = dev.shape[-1]
        for k in x:
            ax.bar(np.arange(n_layers) + (k - 1.5) * w, dev[k].mean(0), w,
                   yerr=dev[k].std(0, ddof=1), capsize=2, color=f"C{k}", label=labels[k])
        ax.set_xticks(np.arange(n_layers),
                      list(LAYER_TICKS if layer_ticks is None else layer_ticks))
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(fontsize=7)
    ax = axes[1, 1]
    ax.bar(x, thm1, color=[f"C{k}" for k in x])
    ax.set_xticks(x, labels, rotation=20)
    ax.set_ylim(0.9 * thm1.min(), 1.05 * thm1.max())
    ax.set_ylabel(r"$\|Y_Q - Y_{P\to Q}\|^2 / n_Q$")
    ax.set_title("(d) theory: Thm 1 task dissimilarity")
    tight_layout(fig)
    return fig


def _epoch_ticks(epochs):
    """Major ticks of a symmetric-log epoch axis: 0 if among ``epochs``, the first and the
    last positive epoch, and 1, 2, 5, 10, 20, 50, ... between them."""
    ep = np.asarray(epochs)
    pos = ep[ep > 0]
    ticks = {0} if (ep == 0).any() else set()
    if pos.size:
        lo, hi = pos.min(), pos.max()
        ticks |= {lo, hi} | {v for k in range(int(np.log10(hi)) + 1)
                             for v in (10 ** k, 2 * 10 ** k, 5 * 10 ** k) if lo <= v <= hi}
    return sorted(float(v) for v in ticks)


def _epoch_axis(ax, epochs):
    """Integer ticks on the symmetric-log epoch axis of ``ax``: :func:`_epoch_ticks`, labelled
    as plain numbers (not powers of ten)."""
    ax.xaxis.set_major_locator(FixedLocator(_epoch_ticks(epochs)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))


def fig9_figure(epochs, pre_acc, ft_acc, xscale: str = "linear"):
    r"""Fig. 9 of paper 002 (Sec. 5) in small: transfer accuracy against pretraining epochs.

    Parameters
    ----------
    epochs : array ``(E + 1,)``
        Pretraining epochs, starting with 0 (training from scratch).
    pre_acc : array ``(seed, E)``
        Test accuracy on the source after ``epochs[1:]`` epochs of pretraining.
    ft_acc : array ``(seed, E + 1)``
        Target test accuracy after fine-tuning from each of those networks (column 0:
        from scratch).
    xscale : {"linear", "symlog"}
        Scale of the epoch axes; ``"symlog"`` is linear below 1 epoch and logarithmic
        above, for snapshots spread over decades (1, 2, 5, 10, 20, ...).

    Returns
    -------
    matplotlib.figure.Figure
        Regenerates Fig. 9 of paper 002 in small: (a) source accuracy and (b) target
        accuracy after fine-tuning against pretraining epochs, mean and standard deviation
        over seeds. On ``"symlog"`` the epoch axes are ticked at 0, 1, 2, 5, 10, 20, ...
        within the epochs (and the first and last epoch), labelled as integers.
    """
    if xscale not in ("linear", "symlog"):
        raise ValueError(f"xscale must be 'linear' or 'symlog' (got {xscale!r})")
    ep, pa, ft = np.asarray(epochs), np.asarray(pre_acc), np.asarray(ft_acc)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    if xscale == "symlog":
        for ax in (ax1, ax2):
            ax.set_xscale("symlog", linthresh=1)
    ax1.errorbar(ep[1:], pa.mean(0), yerr=pa.std(0, ddof=1), fmt="o-", capsize=3)
    ax1.set_xlabel("pretraining epochs")
    ax1.set_ylabel("MNIST test accuracy")
    ax1.set_title("(a) pretraining task")
    ax2.errorbar(ep, ft.mean(0), yerr=ft.std(0, ddof=1), fmt="o-", capsize=3, c="C1")
    ax2.set_xlabel("pretraining epochs (0: scratch)")
    ax2.set_ylabel("target test accuracy")
    ax2.set_title("(b) after fine-tuning on digits")
    if xscale == "symlog":
        _epoch_axis(ax1, ep[1:])
        _epoch_axis(ax2, ep)
    tight_layout(fig)
    return fig
