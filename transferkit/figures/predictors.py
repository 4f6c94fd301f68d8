r"""Figures and tables of the predictor benchmark (beyond the papers)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np

from ..experiments.predictors import PREDICTORS
from ..stats import spearman

__all__ = ["markdown_table", "scatter_figure"]


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


def scatter_figure(preds: dict, outcome, title: str, ylabel: str, color=None, clabel=""):
    """One panel per predictor: ``outcome`` against the predictor (log axis where the
    predictor is positive and spans more than two decades; values below ``1e-12`` times the
    largest count as zero), Spearman rho in the panel title."""
    names = list(PREDICTORS)
    ncol = 4
    nrow = -(-len(names) // ncol)
    fig, grid = plt.subplots(nrow, ncol, figsize=(2.6 * ncol, 2.5 * nrow), sharey=True,
                             squeeze=False, layout="constrained")
    axs = grid.ravel()
    for ax in axs[len(names):]:
        ax.set_visible(False)
    y = np.asarray(outcome, float)
    for ax, p in zip(axs, names):
        x = np.asarray(preds[p], float)
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
    if color is not None:
        fig.colorbar(sc, ax=axs[len(names) - 1], label=clabel)
    fig.suptitle(title, fontsize=10)
    return fig
