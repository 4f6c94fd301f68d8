r"""Figures of paper 001 (Shachaf, Brutzkus and Globerson, *A theoretical analysis of
fine-tuning with linear teachers*): eigen-align (Fig. 1), depth (Fig. 2), the frozen first
layer (Fig. 3), the scatter plots behind Table 1, Table 1's :math:`R^2` against the fit of
the teachers, and Sec. 6 (Thm 6.1, Cors. 6.2-6.3) against a wide two-layer ReLU network.

Each function returns a :class:`matplotlib.figure.Figure`; the notebooks
``notebooks/linear_teachers.py`` and ``notebooks/mnist_table.py`` call them and show them
through :func:`transferkit.provenance.record`.  Points are simulated means with one standard
error (over the last axis, the draws) as error bars; lines are the closed forms of
:mod:`transferkit.theory.linear_teachers` evaluated on the same designs.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import LogFormatterSciNotation, LogLocator

from ..stats import mean_se

__all__ = ["depth_figure", "eigen_align_figure", "fit_sensitivity_figure", "frozen_figure",
           "ntk_finetune_figure", "table1_figure"]

TABLE1_MEASURES = ("dist", "bartlett", "eq3")


def eigen_align_figure(res, ns, bound, m: int, d: int):
    r"""Paper 001, Fig. 1: population risk of fine-tuning against the number of target samples,
    "Top Eigen Align" against "Bottom Eigen Align".

    Parameters
    ----------
    res : transferkit.experiments.linear_teachers.EigenAlignResult
        Result of :func:`transferkit.experiments.linear_teachers.eigen_align_sim`; uses
        ``risk_gd`` and ``risk_thm41`` (paper 001, Thm 4.1, Eq. 2), both
        ``(2, len(ns), draws)``.
    ns : array_like
        Numbers of target samples (x axis).
    bound : array_like
        The Thm 4.2 bound (paper 001, Eq. 3) per setting, ``(2, len(ns))``.
    m : int
        Number of top eigenvalues (for the legend).
    d : int
        Input dimension (for the title).

    Returns
    -------
    matplotlib.figure.Figure
        One axis: gradient descent (points), Thm 4.1 (lines), Thm 4.2 bound (dashed).
    """
    fig, ax = plt.subplots(figsize=(6, 4))
    handles, drawn = [], []
    for s, (name, col) in enumerate(zip(("Top Eigen Align", "Bottom Eigen Align"), ("C0", "C3"))):
        mean, se = mean_se(res.risk_gd[s])
        handles.append(ax.errorbar(ns, mean, yerr=se, fmt="o", color=col, ms=4, capsize=2,
                                   label=f"{name}: gradient descent"))
        handles += ax.plot(ns, res.risk_thm41[s].mean(-1), "-", color=col,
                           label="Thm 4.1 (Eq. 2, same $X$)")
        handles += ax.plot(ns, bound[s], "--", color=col, lw=1,
                           label=f"Thm 4.2 bound (Eq. 3, $m={m}$)")
        drawn += [mean - se, mean + se, res.risk_thm41[s].mean(-1), bound[s]]
    ax.set_yscale("log")
    # the bound runs to 1e6 at small n: the limits follow everything drawn, with room below
    # the data for the legend (one column per setting)
    ax.set_ylim(*_log_limits(drawn, below=30.0, above=3.0))
    ax.set_xlabel("target samples $n$")
    ax.set_ylabel(r"population risk $R(\gamma)$")
    ax.legend(handles=handles, fontsize=7, ncol=2, loc="lower left")
    ax.set_title(f"d = {d}, m = {m}: eigenvalues 1.5 / 0.3")
    return fig


def _log_limits(values, below: float = 1.0, above: float = 1.0):
    """Limits of a log axis that contain every positive finite value of ``values`` (a
    sequence of arrays), widened by the factors ``below`` and ``above`` (room for a legend)."""
    v = np.concatenate([np.ravel(np.asarray(a, float)) for a in values])
    v = v[np.isfinite(v) & (v > 0)]
    return v.min() / below, v.max() * above


#: Styles of the two settings of :func:`depth_figure` (b) (target scaled, source scaled).
_SCALED_STYLES = (dict(marker="o", ms=6, filled=True, ls="-", lw=3.0),
                  dict(marker="s", ms=6, filled=False, ls="--", lw=1.2))


def depth_figure(res_alpha, res_scaling, depths, alphas, scales, d: int, n: int,
                 depth_scaled: int = 7):
    r"""Paper 001, Fig. 2: fine-tuning risk of deep linear networks against the target scale
    :math:`\alpha` by depth (a), and at one depth with the target or the source scaled (b).

    Parameters
    ----------
    res_alpha : transferkit.experiments.linear_teachers.DepthAlphaResult
        Result of :func:`transferkit.experiments.linear_teachers.depth_alpha_sim`; uses
        ``risk_gd`` and ``risk_thm52`` ``(len(depths), len(alphas), draws)`` (paper 001,
        Thm 5.2, Eq. 5) and ``risk_eq6`` ``(len(alphas), draws)`` (the :math:`L\to\infty`
        limit, Eq. 6).
    res_scaling : transferkit.experiments.linear_teachers.ScalingResult
        Result of :func:`transferkit.experiments.linear_teachers.scaling_sim`; uses
        ``risk_gd``, ``risk_thm52`` and ``risk_thm41`` ``(2, len(scales), draws)`` (target
        scaled, source scaled).
    depths, alphas, scales : array_like
        The grids of the two simulations.
    d, n : int
        Input dimension and number of target samples (for the titles).
    depth_scaled : int, optional
        Depth of the network of panel (b) (for the title).

    Returns
    -------
    matplotlib.figure.Figure
        Two axes, (a) and (b).
    """
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    ax = axes[0]
    for i, L in enumerate(depths):
        mean, se = mean_se(res_alpha.risk_gd[i])
        ax.errorbar(alphas, mean, yerr=se, fmt="o", color=f"C{i}", ms=4, capsize=2,
                    label=f"L = {L}: gradient descent")
        ax.plot(alphas, res_alpha.risk_thm52[i].mean(-1), "-", color=f"C{i}")
    ax.plot(alphas, res_alpha.risk_eq6.mean(-1), "k:", label=r"$L\to\infty$ (Eq. 6)")
    ax.plot([], [], "k-", label="Thm 5.2 (Eq. 5, same $X$)")
    ax.set_xlabel(r"$\alpha$ in $\theta_T = \alpha\theta_S + \epsilon$")
    ax.set_ylabel(r"population risk $\|\beta-\theta_T\|^2$")
    ax.set_yscale("log")
    ax.set_title(f"(a) d = {d}, n = {n}")
    ax.legend(fontsize=7)
    ax = axes[1]
    # the two settings nearly coincide: the first is drawn with filled circles and wide lines,
    # the second over it with open squares and thin lines, so that both stay visible
    handles = []
    for k, (name, col) in enumerate(zip(("target scaled", "source scaled"), ("C0", "C3"))):
        st = _SCALED_STYLES[k]
        mean, se = mean_se(res_scaling.risk_gd[k])
        handles.append(ax.errorbar(scales, mean, yerr=se, fmt=st["marker"], color=col,
                                   ms=st["ms"], mfc=col if st["filled"] else "white",
                                   capsize=2, zorder=2 + k, label=f"{name}: gradient descent"))
        handles += ax.plot(scales, res_scaling.risk_thm52[k].mean(-1), st["ls"], color=col,
                           lw=st["lw"], zorder=2 + k, label=f"{name}: Thm 5.2")
        handles += ax.plot(scales, res_scaling.risk_thm41[k].mean(-1), ":", color=col,
                           lw=st["lw"], zorder=2 + k, label=f"{name}: Thm 4.1 (L = 1)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(scales, [f"{a:g}" for a in scales])
    ax.minorticks_off()
    ax.set_xlabel("scaling factor $a$")
    ax.set_title(f"(b) depth {depth_scaled}, d = {d}, n = {n}")
    ax.legend(handles=handles, fontsize=7, ncol=2, loc="upper left")
    return fig


def frozen_figure(res, ns, cos_angle: float, d: int):
    r"""Paper 001, Fig. 3: frozen first layer, training from scratch ("Vanilla") and
    fine-tuning all layers of two-layer linear networks against the number of target samples.

    Parameters
    ----------
    res : transferkit.experiments.linear_teachers.FrozenResult
        Result of :func:`transferkit.experiments.linear_teachers.frozen_sim`; uses
        ``risk_frozen``, ``risk_frozen_gd``, ``risk_vanilla``, ``risk_finetune``,
        ``risk_thm55`` (paper 001, Thm 5.5), ``risk_thm52`` (Thm 5.2, :math:`L = 2`), all
        ``(len(ns), draws)``, and ``risk_scratch_theory`` ``(len(ns),)`` (:math:`1-n/d`).
    ns : array_like
        Numbers of target samples (x axis).
    cos_angle : float
        :math:`\cos\angle(\theta_S,\theta_T)`: the frozen model's large-:math:`n` risk is
        :math:`1-\cos^2`.
    d : int
        Input dimension (for the title).

    Returns
    -------
    matplotlib.figure.Figure
        One axis.
    """
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(ns, res.risk_frozen.mean(-1), "x", color="C3", ms=6,
            label="Frozen: rank-one least squares")
    for risk, name, line, col in ((res.risk_frozen_gd, "Frozen", res.risk_thm55.mean(-1), "C3"),
                                  (res.risk_vanilla, "Vanilla (scratch)", res.risk_scratch_theory,
                                   "C0"),
                                  (res.risk_finetune, "Finetune", res.risk_thm52.mean(-1), "C2")):
        mean, se = mean_se(risk)
        ax.errorbar(ns, mean, yerr=se, fmt="o", color=col, ms=4, capsize=2,
                    label=f"{name}: gradient descent")
        ax.plot(ns, line, "-", color=col)
    ax.axhline(1 - cos_angle ** 2, color="C3", ls=":", lw=1,
               label=r"$\sin^2\angle$ (frozen, $n\to\infty$)")
    ax.plot([], [], "k-", label="theory: Thm 5.5 / $(1-n/d)$ / Thm 5.2")
    ax.set_xlabel("target samples $n$")
    ax.set_ylabel(r"population risk $\|\beta-\theta_T\|^2$")
    ax.set_title(f"two-layer linear networks, d = {d}")
    ax.legend(fontsize=7)
    return fig


def table1_figure(res, ns, labels: dict | None = None):
    r"""Paper 001, Table 1: 0-1 test error of fine-tuning on MNIST against each measure of
    source-target similarity, one point per task pair, one column per sample size, with the
    least-squares line whose :math:`R^2` enters the table.

    Parameters
    ----------
    res : transferkit.experiments.mnist_table.Table1Result
        Result of :func:`transferkit.experiments.mnist_table.mnist_table_sim`; uses
        ``errors`` ``(reps, len(ns), K)``, ``measures`` and ``r2`` for the measures
        ``dist``, ``bartlett`` and ``eq3`` (paper 001, Eq. 3).
    ns : sequence of int
        The sample sizes (columns).
    labels : dict, optional
        Measure name -> label for the y axes; the names themselves by default.

    Returns
    -------
    matplotlib.figure.Figure
        ``3 * len(ns)`` axes, rows: measures, columns: sample sizes.
    """
    labels = labels or {}
    fig, axes = plt.subplots(3, len(ns), figsize=(2.6 * len(ns), 7), squeeze=False)
    err = res.errors.mean(0)
    for j, n in enumerate(ns):
        for i, name in enumerate(TABLE1_MEASURES):
            ax = axes[i, j]
            mval = res.measures[name][j]
            ax.scatter(mval, err[j], s=12)
            slope, icpt = np.polyfit(mval, err[j], 1)
            xs = np.linspace(mval.min(), mval.max(), 2)
            ax.plot(xs, slope * xs + icpt, "k-", lw=0.8)
            ax.set_title(f"n = {n}, $R^2$ = {res.r2[name].mean[j]:.2f}", fontsize=8)
            # every panel names its own x axis: the measures differ by row
            ax.set_xlabel(labels.get(name, name), fontsize=8)
            if j == 0:
                ax.set_ylabel("test error", fontsize=8)
            ax.tick_params(labelsize=6)
    return fig


def fit_sensitivity_figure(results, paper=None, paper_ns=(10, 15, 20, 25, 30), labels=None,
                           fit_labels=None, highlight=None):
    r"""Paper 001, Table 1, against the fit of the teachers: :math:`R^2` of each measure
    (:math:`\|\theta_T-\theta_S\|^2`, the Bartlett-style bound and Eq. 3) for every fitting
    choice, one axis per sample size, the paper's values marked.

    Parameters
    ----------
    results : sequence of transferkit.experiments.mnist_table.FitSensitivityResult
        Results of :func:`transferkit.experiments.mnist_table.fit_sensitivity_sim` with the
        same ``fits`` and ``ns``, one per set of task pairs; uses ``r2`` (mean and standard
        deviation over repetitions, ``(len(fits), len(ns))``).  The first is drawn with
        filled markers and error bars (one standard deviation over repetitions, as in the
        paper's table), the others with open markers.
    paper : dict, optional
        Measure name -> ``(means, sds)`` of the paper's Table 1 at ``paper_ns``; drawn as a
        horizontal line with a band of one standard deviation where ``n`` is in
        ``paper_ns``.
    paper_ns : sequence of int
        The sample sizes of ``paper``.
    labels : dict, optional
        Measure name -> legend label.
    fit_labels : sequence of str, optional
        Tick labels of the fits (default: the fit strings).
    highlight : str, optional
        A fit to mark with a vertical line (e.g. the chapter's default).

    Returns
    -------
    matplotlib.figure.Figure
        ``len(ns)`` axes, one per sample size, sharing the fitting-choice axis.
    """
    results = list(results)
    if not results:
        raise ValueError("results must hold at least one FitSensitivityResult (got none)")
    first = results[0]
    fits, ns = list(first.fits), [int(n) for n in first.ns]
    for r in results[1:]:
        if list(r.fits) != fits or [int(n) for n in r.ns] != ns:
            raise ValueError("results must share fits and ns (got different ones)")
    labels = labels or {}
    paper = paper or {}
    paper_ns = [int(n) for n in paper_ns]
    x = np.arange(len(fits))
    fig, axes = plt.subplots(len(ns), 1, figsize=(max(6.0, 0.45 * len(fits) + 2), 2.1 * len(ns) + 1),
                             sharex=True, squeeze=False)
    for j, (n, ax) in enumerate(zip(ns, axes[:, 0])):
        for i, name in enumerate(TABLE1_MEASURES):
            col = f"C{i}"
            for s, res in enumerate(results):
                r2 = res.r2[name]
                shift = (i - 1) * 0.12 + 0.04 * s
                if s == 0:
                    ax.errorbar(x + shift, r2.mean[:, j], yerr=r2.sd[:, j], fmt="o-", color=col,
                                ms=3.5, lw=0.8, capsize=1.5,
                                label=f"{labels.get(name, name)} (pairs, seed {res.pair_seed})")
                else:
                    ax.plot(x + shift, r2.mean[:, j], "o--", mfc="none", color=col, ms=3.5, lw=0.6,
                            label=f"{labels.get(name, name)} (pairs, seed {res.pair_seed})")
            if name in paper and n in paper_ns:
                pm, ps = paper[name][0][paper_ns.index(n)], paper[name][1][paper_ns.index(n)]
                ax.axhline(pm, color=col, ls=":", lw=1.2)
                ax.axhspan(pm - ps, pm + ps, color=col, alpha=0.12, lw=0)
        if highlight is not None and highlight in fits:
            ax.axvline(fits.index(highlight), color="0.5", lw=0.8, ls="-", zorder=0)
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel(f"$R^2$, n = {n}", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0, 0].plot([], [], "k:", label="paper 001, Table 1 (band: its sd)")
    axes[0, 0].legend(fontsize=6, ncol=2, loc="upper left", bbox_to_anchor=(0, 1.6), frameon=False)
    ax = axes[-1, 0]
    ax.set_xticks(x, list(fit_labels) if fit_labels is not None else fits, rotation=60,
                  ha="right", fontsize=7)
    ax.set_xlabel("fit of the teachers")
    return fig


def _sec6_configs(res):
    """Indices of the width sweep (the initialisation of ``configs[0]``), by width, and of the
    configurations at the readings' width (the others and the sweep's own at that width)."""
    base = res.configs[0][1:]
    sweep = [i for i, c in enumerate(res.configs) if c[1:] == base]
    other = [i for i, c in enumerate(res.configs) if c[1:] != base]
    if other:
        m_r = res.configs[other[0]][0]
        at = [i for i in sweep if res.configs[i][0] == m_r]
        other = at + other
    return sweep, other


def _log_room(ax, factor=30.0):
    """Log scale on y with room above the data for a legend in the upper corner."""
    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * factor)


#: Colours and markers of the initialisations of :func:`ntk_finetune_figure` (d), in the order
#: of ``_sec6_configs``: the paired readout in orange, the independent ones in sky blue and
#: dark purple; the third is far from the first, whose curves it can cover (no yellow, which
#: looks like the orange).  None is a colour of the sample sizes in (a)-(c) (``C0``-``C2``
#: at the presets' three n): (d) is drawn at one n, and a blue there would read as n = 25.
_INIT_COLOURS = ("C4", "C5", "#6A3D9A", "C3", "C6")
_INIT_MARKERS = ("o", "s", "^", "D", "v")


def _init_style(k):
    """Colour, marker, marker size, marker face and line width of the ``k``-th initialisation
    of (d): filled and open markers alternate; later ones are smaller and thinner, so that they
    stay visible over earlier ones."""
    col = _INIT_COLOURS[k % len(_INIT_COLOURS)]
    return (col, _INIT_MARKERS[k % len(_INIT_MARKERS)], max(7.0 - 1.25 * k, 4.5),
            col if k % 2 == 0 else "white", max(3.0 - 0.9 * k, 1.0))


def _init_label(cfg):
    m, kappa, sym = cfg
    return f"m = {m}, $\\kappa$ = {kappa:g}, " + ("paired $a_r$" if sym else "independent $a_r$")


def ntk_finetune_figure(res):
    r"""Paper 001, Sec. 6: Thm 6.1 and Cors. 6.2-6.3 against a wide two-layer ReLU network
    pretrained on a linear source teacher and fine-tuned by gradient descent.

    Parameters
    ----------
    res : transferkit.experiments.linear_teachers.NtkFinetuneResult
        Result of :func:`transferkit.experiments.linear_teachers.ntk_finetune_sim`.  The
        width sweep is the initialisation of ``configs[0]``; its largest width is drawn in
        (a) and (b).  Means and standard errors are over the draws whose runs converged;
        a cell where some run stopped at its step budget is marked with a cross.

    Returns
    -------
    matplotlib.figure.Figure
        Four axes: (a) population ramp loss against :math:`\|\theta_T-\theta_S\|` for each
        :math:`n` with Eq. 11's leading term and Cor. 6.3's; (b) Cor. 6.2's quadratic form
        with the pretrained outputs and under Assumption 3.2, against :math:`3\|\theta_T
        -\theta_S\|` and :math:`2\|\theta_T-\theta_S\|`; (c) the lazy regime against the
        width, the relative excess of :math:`\|W(t)-W(0)\|_F` over
        :math:`\sqrt{\tilde y^\top(H^\infty)^{-1}\tilde y}` and the fraction of flipped
        activations; (d) the risk at the largest :math:`n` for every initialisation at the
        readings' width.
    """
    sweep, other = _sec6_configs(res)
    top = max(sweep, key=lambda i: res.configs[i][0])
    dist, ns = np.asarray(res.distances), np.asarray(res.ns)
    ok_all = res.converged & res.pre_converged[:, :, None, None]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    ax = axes[0, 0]
    for j, n in enumerate(ns):
        col = f"C{j}"
        ok = ok_all[top, :, j]
        mean, se = mean_se(res.risk[top, :, j], 0, where=ok)
        ax.errorbar(dist, mean, yerr=se, fmt="o", color=col, ms=4, capsize=2,
                    label=f"n = {n}: fine-tuned network")
        bad = ~ok.all(0)
        ax.plot(dist[bad], res.risk[top, :, j].mean(0)[bad], "x", color="k", ms=7)
        ax.plot(dist, res.lead[top, :, j].mean(0), "-", color=col)
        ax.plot(dist[dist > 0], res.cor63[j][dist > 0], "--", color=col, lw=1)
    ax.plot([], [], "k-", label="Thm 6.1 leading term (Eq. 11)")
    ax.plot([], [], "k--", lw=1, label=r"Cor. 6.3: $6\|\theta_T-\theta_S\|/\sqrt{n}$")
    _log_room(ax)
    ax.set_xlabel(r"$\|\theta_T-\theta_S\|$")
    ax.set_ylabel("population ramp loss")
    ax.set_title(f"(a) {_init_label(res.configs[top])}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    ax = axes[0, 1]
    for j, n in enumerate(ns):
        col = f"C{j}"
        ax.plot(dist, res.cor62[top, :, j].mean(0), "o", color=col, ms=4,
                label=f"n = {n}: pretrained outputs")
        ax.plot(dist, res.cor62_linear[:, j].mean(0), "s", mfc="none", color=col, ms=6,
                label=f"n = {n}: Assumption 3.2")
    xs = np.linspace(0, dist.max(), 50)
    ax.plot(xs, 3 * xs, "k-", lw=1, label=r"Cor. 6.2: $3\|\theta_T-\theta_S\|$")
    ax.plot(xs, 2 * xs, "k:", lw=1, label=r"$2\|\theta_T-\theta_S\|$ ($H^\infty\succeq XX^\top/4$)")
    ax.set_xlabel(r"$\|\theta_T-\theta_S\|$")
    ax.set_ylabel(r"$\sqrt{\tilde y^\top (H^\infty)^{-1}\tilde y}$")
    ax.set_title("(b) Cor. 6.2", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[1, 0]
    widths = np.array([res.configs[i][0] for i in sweep])
    pos = dist > 0
    for j, n in enumerate(ns):
        col = f"C{j}"
        ex = np.abs(res.move[sweep][:, :, j][..., pos] / res.cor62[sweep][:, :, j][..., pos] - 1)
        ax.plot(widths, ex.mean(axis=(1, 2)), "o-", color=col, ms=4,
                label=f"n = {n}: $|\\,\\|W(t)-W(0)\\|_F / \\sqrt{{\\tilde y^\\top H^{{-1}}\\tilde y}} - 1|$")
        ax.plot(widths, res.flips[sweep][:, :, j].mean(axis=(1, 2)), "^--", color=col, ms=4,
                mfc="none", label=f"n = {n}: flipped activations")
    ax.plot(widths, res.flips[sweep][:, :, 0].mean(axis=(1, 2))[0] * np.sqrt(widths[0] / widths),
            "k:", lw=1, label=r"$\propto m^{-1/2}$")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(widths, [str(w) for w in widths])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    # labelled ticks at 1, 2 and 5 per decade: the values span about one decade
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(LogFormatterSciNotation(labelOnlyBase=False))
    ax.yaxis.set_minor_locator(plt.NullLocator())
    ax.set_xlabel("width $m$")
    ax.set_ylabel("relative excess; fraction flipped")
    ax.set_title("(c) the lazy regime (mean over draws and distances > 0)", fontsize=9)
    ax.legend(fontsize=6)
    ax = axes[1, 1]
    j = len(ns) - 1
    # curves of different initialisations can coincide (paired and kappa = 0.1): each has its
    # own colour and marker, and later ones are drawn thinner over the earlier ones
    handles = []
    for k, i in enumerate(other):
        col, mk, ms, mfc, lw = _init_style(k)
        ok = ok_all[i, :, j]
        mean, se = mean_se(res.risk[i, :, j], 0, where=ok)
        ax.errorbar(dist, mean, yerr=se, fmt=mk, color=col, ms=ms, mfc=mfc, capsize=2,
                    zorder=3 + k)
        ax.plot(dist, res.lead[i, :, j].mean(0), "-", color=col, lw=lw, zorder=2 + k)
        ax.plot(dist, res.risk_pre[i].mean(0), ":", color=col, lw=lw / 2, zorder=2 + k)
        handles.append(Line2D([], [], color=col, marker=mk, ms=ms, mfc=mfc, lw=lw,
                              label=_init_label(res.configs[i])))
    handles += ax.plot([], [], "k-", label="Thm 6.1 leading term")
    handles += ax.plot([], [], "k:", lw=1, label="pretrained network, before fine-tuning")
    _log_room(ax)
    ax.set_xlabel(r"$\|\theta_T-\theta_S\|$")
    ax.set_ylabel("population ramp loss")
    ax.set_title(f"(d) initialisations, n = {ns[j]}", fontsize=9)
    ax.legend(handles=handles, fontsize=7, loc="upper left")
    return fig
