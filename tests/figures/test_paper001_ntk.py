"""Smoke test of the paper 001 Sec. 6 figure builder on a tiny synthetic result."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np
import pytest
from _helpers import check_figure, close_after  # noqa: E402

from transferkit import figures
from transferkit.experiments.linear_teachers import NtkFinetuneResult
from transferkit.figures import paper001

RNG = np.random.default_rng(0)


def _pos(*shape):
    return RNG.uniform(0.01, 1.0, shape)


def _result(configs, converged=True):
    C, S, N, D = len(configs), 3, 2, 4
    ns, dist = np.array([10, 20]), np.array([0.0, 0.5, 1.0, 2.0])
    conv = np.full((C, S, N, D), converged)
    conv[0, 0, 0, 0] = True
    return NtkFinetuneResult(
        configs=tuple(configs), ns=ns, distances=dist, risk=_pos(C, S, N, D),
        risk_se=_pos(C, S, N, D) / 100, risk_dse_distance=_pos(C, S, N, D - 1) / 100,
        risk_dse_n=_pos(C, S, N - 1, D) / 100, risk_pre=_pos(C, S, D), lead=_pos(C, S, N, D),
        cor62=_pos(C, S, N, D), cor62_linear=_pos(S, N, D), cor63=6 * dist / np.sqrt(ns)[:, None],
        pre_err=_pos(C, S, N), pre_term=_pos(C, S, N), pre_err_pop=_pos(C, S), lam0=_pos(S, N),
        move=_pos(C, S, N, D), move_pre=_pos(C, S), init_norm=_pos(C, S) + 10,
        flips=_pos(C, S, N, D) / 10, flips_pre=_pos(C, S) / 10, steps=np.ones((C, S, N), int),
        steps_pre=np.ones((C, S), int), converged=conv, pre_converged=np.ones((C, S), bool),
        seconds=np.ones(C))


@pytest.mark.parametrize("configs", [
    [(64, 1.0, True), (256, 1.0, True), (64, 0.1, False), (64, 1.0, False)],
    [(64, 1.0, True), (256, 1.0, True)],                       # no readings
    [(64, 1.0, True), (256, 1.0, True), (128, 0.1, False)],    # readings at another width
])
def test_ntk_finetune_figure(configs):
    check_figure(paper001.ntk_finetune_figure(_result(configs)), 4)


def test_ntk_finetune_figure_marks_runs_at_their_step_budget():
    # a cell where some run did not converge is drawn (mean of the converged draws) and marked
    check_figure(paper001.ntk_finetune_figure(_result([(64, 1.0, True), (256, 1.0, True)],
                                                      converged=False)), 4)


def test_ntk_finetune_figure_tells_the_initialisations_apart():
    # (d): the paired curve and the kappa = 0.1 one coincide (as at paper scale); every
    # initialisation needs its own marker and colour, the coinciding two colours far apart
    # (the old orange and yellow were 0.38 apart in RGB), and its own line width, the later
    # ones thinner and drawn on top
    configs = [(64, 1.0, True), (256, 1.0, True), (64, 1.0, False), (64, 0.1, False)]
    res = _result(configs)
    for field in ("risk", "lead", "risk_pre"):
        getattr(res, field)[3] = getattr(res, field)[0]

    def check(fig):
        ax = fig.axes[3]
        points = [c[0] for c in ax.containers]           # the errorbars' data lines
        assert len(points) == 3
        assert len({p.get_marker() for p in points}) == 3
        rgb = [np.array(matplotlib.colors.to_rgb(p.get_color())) for p in points]
        assert min(np.linalg.norm(a - b) for k, a in enumerate(rgb) for b in rgb[k + 1:]) > 0.3
        assert np.linalg.norm(rgb[0] - rgb[2]) > 0.8     # paired against kappa = 0.1
        # and none is the colour of a sample size in (a), which (d) would seem to continue
        n_colours = {matplotlib.colors.to_hex(c[0].get_color()) for c in fig.axes[0].containers}
        assert len(n_colours) == len(res.ns)
        assert not n_colours & {matplotlib.colors.to_hex(p.get_color()) for p in points}
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert all(paper001._init_label(configs[i]) in labels for i in (0, 2, 3))
        leads = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-" and len(ln.get_xdata())]
        widths = [ln.get_linewidth() for ln in leads]
        assert len(widths) == 3 and widths == sorted(widths, reverse=True)
        assert len(set(widths)) == 3
        assert leads[2].get_zorder() > leads[0].get_zorder()
    with plt.rc_context():                               # the book's colours
        figures.plotting.use_style()
        close_after(paper001.ntk_finetune_figure(res), check)
