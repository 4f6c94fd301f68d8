r"""Figures and tables of the predictor benchmark (beyond the papers)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np

from ..experiments.predictors import PREDICTORS
from ..stats import spearman

__all__ = ["category_labels", "markdown_table", "scatter_figure"]


def markdown_table(rows: dict, settings: list[str], outcome: str) -> str:
    r"""A markdown table of Spearman :math:`\rho` [95 % interval] and :math:`R^2`, one
    row per predictor, one column per setting; ``rows``: dict setting -> rows
    (:class:`~transferkit.stats.ScoreRow`) of :func:`~transferkit.stats.score_table`; the
    best :math:`\rho` of each column in bold."""
    head = "| predictor | " + " | ".join(settings) + " |\n|---|" + "---|" * len(settings) + "\n"
    best = {}
    for s in settings:
        vals = [r.rho for r in rows[s] if r.outcome == outcome and not r.constant]
        best[s] = max(vals) if vals else math.nan
    lines = []
    for p in PREDICTORS:
        cells = []
        for s in settings:
            r = next(r for r in rows[s] if r.predictor == p and r.outcome == outcome)
            if r.constant:
                cells.append("constant")
                continue
            txt = f"{r.rho:+.2f} [{r.rho_lo:+.2f}, {r.rho_hi:+.2f}]; R² {r.r2:.2f}"
            cells.append(f"**{txt}**" if r.rho == best[s] else txt)
        lines.append(f"| `{p}` | " + " | ".join(cells) + " |")
    return head + "\n".join(lines)


#: most distinct values of ``color`` that :func:`scatter_figure` draws as categories
MAX_CATEGORIES = 6
#: markers of the categories, in order (the colours are the style's cycle C0, C1, ...)
CATEGORY_MARKERS = "os^Dv<>"


def category_labels(values, labels: dict | None = None) -> list[str]:
    """One legend text per value of ``values`` (sorted distinct category values):
    ``labels[value]`` where ``labels`` (value -> text) is given, else the value itself."""
    values = [float(v) for v in values]
    if labels is None:
        return [f"{v:g}" for v in values]
    missing = [v for v in values if v not in labels]
    if missing:
        raise ValueError(f"labels must name every category (missing {missing})")
    return [str(labels[v]) for v in values]


def _is_categorical(color, categorical) -> bool:
    """Whether ``color`` is drawn as categories (``categorical=None``: automatic, at most
    :data:`MAX_CATEGORIES` distinct finite values)."""
    if color is None:
        return False
    if categorical is not None:
        return bool(categorical)
    c = np.asarray(color)
    return c.ndim == 1 and np.unique(c).size <= MAX_CATEGORIES


def _category_legend(fig, axs, used: int, handles, title: str) -> None:
    """One legend for the whole figure: in the first unused panel of ``axs`` (made visible
    without its frame) or, when every panel is used, under the panels."""
    if used < len(axs):
        lax = axs[used]
        lax.set_visible(True)
        lax.set_axis_off()
        lax.legend(handles=handles, title=title or None, loc="center", frameon=False)
    else:
        fig.legend(handles=handles, title=title or None, loc="outside lower center",
                   ncols=len(handles))


def scatter_figure(preds: dict, outcome, title: str, ylabel: str, color=None, clabel="",
                   categorical=None, labels=None):
    """One panel per predictor: ``outcome`` against the predictor (log axis where the
    predictor is positive and spans more than two decades; values below ``1e-12`` times the
    largest count as zero), Spearman rho in the panel title.

    Parameters
    ----------
    preds : dict
        Predictor name -> values, one per point, for each name of
        :data:`~transferkit.experiments.predictors.PREDICTORS`.
    outcome : array_like
        The outcome of each point (the y axis).
    title, ylabel : str
        Figure title and y-axis label.
    color : array_like, optional
        A value per point.  A few distinct values (categories, as the kinds of pairs or a
        grid of source norms) get one colour and marker each and one legend entry each;
        other values are coloured continuously with a colour bar.
    clabel : str
        Name of ``color``: the colour-bar label, or the legend's title.
    categorical : bool, optional
        Draw ``color`` as categories (``True``) or continuously (``False``); ``None``:
        categories when it has at most :data:`MAX_CATEGORIES` distinct values.
    labels : dict, optional
        Category value -> legend text (see :func:`category_labels`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    names = list(PREDICTORS)
    ncol = 4
    nrow = -(-len(names) // ncol)
    fig, grid = plt.subplots(nrow, ncol, figsize=(2.6 * ncol, 2.5 * nrow), sharey=True,
                             squeeze=False, layout="constrained")
    axs = grid.ravel()
    for ax in axs[len(names):]:
        ax.set_visible(False)
    y = np.asarray(outcome, float)
    cats = _is_categorical(color, categorical)
    if cats:
        code = np.asarray(color)
        values = np.unique(code)
        texts = category_labels(values, labels)
    for ax, p in zip(axs, names):
        x = np.asarray(preds[p], float)
        if cats:
            handles = [ax.scatter(x[code == v], y[code == v], s=16, edgecolors=f"C{k}",
                                  marker=CATEGORY_MARKERS[k % len(CATEGORY_MARKERS)],
                                  facecolors="none", linewidths=1.0, label=text)
                       for k, (v, text) in enumerate(zip(values, texts))]
        else:
            sc = ax.scatter(x, y, s=10, c=color, cmap="viridis")
        # a value at the rounding level of the largest (a fraction that is zero in exact
        # arithmetic, computed as 1e-16) counts as zero: it must not switch the axis to log
        tiny = 1e-12 * np.abs(x).max() if x.size else 0.0
        if x.size and bool((x > tiny).all()) and x.max() > 100 * x.min():
            ax.set_xscale("log")
        rho = float(spearman(x, y)) if np.ptp(x) > 0 else math.nan
        ax.set_title(f"{p}: ρ = {rho:+.2f}", fontsize=9)
        ax.tick_params(labelsize=7)
    for row in grid:
        row[0].set_ylabel(ylabel)
    if cats:
        _category_legend(fig, axs, len(names), handles, clabel)
    elif color is not None:
        fig.colorbar(sc, ax=axs[len(names) - 1], label=clabel)
    fig.suptitle(title, fontsize=10)
    return fig
