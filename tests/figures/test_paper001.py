"""Smoke tests of the paper 001 figure builders on tiny synthetic results."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np
import pytest
from _helpers import check_figure  # noqa: E402

from transferkit import figures
from transferkit.experiments.linear_teachers import (
    DepthAlphaResult,
    EigenAlignResult,
    FrozenResult,
    NtkFinetuneResult,
    ScalingResult,
)
from transferkit.experiments.mnist_table import R2, FitSensitivityResult, Table1Result
from transferkit.figures import paper001

RNG = np.random.default_rng(0)


def _risk(*shape):
    return RNG.uniform(0.1, 1.0, shape)


def test_eigen_align_figure():
    ns, draws = np.array([2, 5, 8]), 3
    res = EigenAlignResult(ns=ns, settings=("top", "bottom"), risk_gd=_risk(2, 3, draws),
                           risk_thm41=_risk(2, 3, draws), opt_err=_risk(2, 3, draws),
                           cov_dev=_risk(2, 3, draws), converged=np.ones((2, 3, draws), bool))
    check_figure(paper001.eigen_align_figure(res, ns, _risk(2, 3), m=2, d=10), 1)

def test_depth_figure():
    depths, alphas, scales, draws = [1, 3], np.array([0.5, 1, 2]), np.array([0.5, 2]), 3
    res_a = DepthAlphaResult(depths=np.array(depths), alphas=alphas, risk_gd=_risk(2, 3, draws),
                             risk_thm52=_risk(2, 3, draws), risk_thm41=_risk(3, draws),
                             risk_eq6=_risk(3, draws), converged=np.ones((2, 3, draws), bool))
    res_b = ScalingResult(scales=scales, scaled=("target", "source"), risk_gd=_risk(2, 2, draws),
                          risk_thm52=_risk(2, 2, draws), risk_thm41=_risk(2, 2, draws),
                          risk_eq6=_risk(2, 2, draws), converged=np.ones((2, 2, draws), bool))
    check_figure(paper001.depth_figure(res_a, res_b, depths, alphas, scales, d=10, n=1,
                                 depth_scaled=3), 2)

def test_frozen_figure():
    ns, draws = np.array([2, 4]), 3
    res = FrozenResult(ns=ns, risk_frozen=_risk(2, draws), risk_frozen_gd=_risk(2, draws),
                       risk_vanilla=_risk(2, draws), risk_finetune=_risk(2, draws),
                       risk_thm55=_risk(2, draws), risk_thm52=_risk(2, draws),
                       risk_scratch_theory=1 - ns / 10, rank=np.ones(draws, int),
                       converged=np.ones((2, draws), bool), frozen_gd_steps=np.ones(2, int))
    check_figure(paper001.frozen_figure(res, ns, cos_angle=0.7, d=10), 1)

@pytest.mark.parametrize("ns", [[10], [10, 20]])
def test_table1_figure(ns):
    reps, K = 2, 4
    names = ("dist", "bartlett", "eq3")
    res = Table1Result(pairs=np.zeros((K, 4), int), ns=np.array(ns), c=3.0,
                       errors=_risk(reps, len(ns), K), errors_sd=_risk(reps, len(ns), K),
                       measures={k: _risk(len(ns), K) for k in names}, measures_other_c={},
                       r2={k: R2(_risk(len(ns)), _risk(len(ns))) for k in names}, r2_other_c={},
                       theta_norms=_risk(K, 2), thetas=_risk(K, 2, 5))
    check_figure(paper001.table1_figure(res, ns, {"eq3": "Eq. 3"}), 3 * len(ns))


@pytest.mark.parametrize("ns,sets", [([10], 1), ([10, 20, 30], 2)])
def test_fit_sensitivity_figure(ns, sets):
    fits, reps, K = ("pinv", "eig:1e-06", "ridge:0.01", "gd:100"), 2, 4
    names = ("dist", "bartlett", "eq3")
    results = [FitSensitivityResult(
        fits=fits, pairs=np.zeros((K, 4), int), pair_seed=s, ns=np.array(ns),
        errors=_risk(len(fits), reps, len(ns), K),
        measures={k: _risk(len(fits), reps, len(ns), K) for k in names},
        r2={k: R2(_risk(len(fits), len(ns)), _risk(len(fits), len(ns))) for k in names},
        theta_norms=_risk(len(fits), reps, K, 2)) for s in range(sets)]
    paper = {"eq3": ([0.86, 0.89, 0.84, 0.75, 0.69], [0.02, 0.02, 0.02, 0.01, 0.02])}
    check_figure(paper001.fit_sensitivity_figure(results, paper, labels={"eq3": "Eq. 3"},
                                                 fit_labels=[f.upper() for f in fits],
                                                 highlight="eig:1e-06"), len(ns))


def test_fit_sensitivity_figure_rejects_mismatched_results():
    def res(fits):
        return FitSensitivityResult(fits=fits, pairs=np.zeros((3, 4), int), pair_seed=0,
                                    ns=np.array([10]), errors=_risk(len(fits), 2, 1, 3),
                                    measures={}, r2={}, theta_norms=_risk(len(fits), 2, 3, 2))
    with pytest.raises(ValueError, match="results"):
        paper001.fit_sensitivity_figure([res(("pinv",)), res(("pinv", "gd:100"))])
    with pytest.raises(ValueError, match="results"):
        paper001.fit_sensitivity_figure([])


# ---------------------------------------------------------------- readability

def _close_after(fig, check):
    try:
        fig.canvas.draw()
        check(fig)
    finally:
        plt.close(fig)


def test_eigen_align_figure_shows_the_bounds_where_they_are_large():
    # the Thm 4.2 bound reaches 1e6 at small n (paper scale): the y axis must contain it and
    # the smallest risk, not cut at a fixed 1e2
    ns, draws = np.array([10, 100, 950]), 3
    risk = np.array([1.0, 0.1, 3e-3])[None, :, None] * np.ones((2, 1, draws))
    res = EigenAlignResult(ns=ns, settings=("top", "bottom"), risk_gd=risk, risk_thm41=risk,
                           opt_err=risk * 0, cov_dev=risk, converged=np.ones(risk.shape, bool))
    bound = np.array([[2e2, 2e1, 4.5], [1.1e6, 1.1e3, 10.0]])

    def check(fig):
        lo, hi = fig.axes[0].get_ylim()
        assert lo <= risk.min() and hi >= bound.max()
        assert fig.axes[0].get_yscale() == "log"
    _close_after(paper001.eigen_align_figure(res, ns, bound, m=2, d=1000), check)


def _coinciding_depth_results():
    """Fig. 2 inputs whose two settings of (b) are equal (as they nearly are at paper scale)."""
    depths, alphas, scales, draws = [1, 3], np.array([0.5, 1, 2]), np.array([0.5, 2]), 3
    res_a = DepthAlphaResult(depths=np.array(depths), alphas=alphas, risk_gd=_risk(2, 3, draws),
                             risk_thm52=_risk(2, 3, draws), risk_thm41=_risk(3, draws),
                             risk_eq6=_risk(3, draws), converged=np.ones((2, 3, draws), bool))
    risk = np.concatenate([_risk(1, 2, draws)] * 2)
    res_b = ScalingResult(scales=scales, scaled=("target", "source"), risk_gd=risk,
                          risk_thm52=risk, risk_thm41=risk, risk_eq6=risk,
                          converged=np.ones((2, 2, draws), bool))
    return res_a, res_b, depths, alphas, scales


def test_depth_figure_keeps_both_scaled_settings_visible():
    # (b): the target- and source-scaled series coincide; the second must not hide the first:
    # other marker (open), other line style and a thinner line drawn over the wider one
    res_a, res_b, depths, alphas, scales = _coinciding_depth_results()

    def check(fig):
        ax = fig.axes[1]
        handles = ax.get_legend().legend_handles
        assert len(handles) == 6
        thm52 = [ln for ln in ax.get_lines() if "Thm 5.2" in ln.get_label()]
        assert len(thm52) == 2
        assert thm52[0].get_linestyle() != thm52[1].get_linestyle()
        assert thm52[0].get_linewidth() > thm52[1].get_linewidth()
        assert thm52[0].get_zorder() < thm52[1].get_zorder()
        gd = [c[0] for c in ax.containers]                 # the errorbars' data lines
        assert len(gd) == 2 and gd[0].get_marker() != gd[1].get_marker()
        assert matplotlib.colors.same_color(gd[1].get_markerfacecolor(), "white")
    _close_after(paper001.depth_figure(res_a, res_b, depths, alphas, scales, d=10, n=1,
                                       depth_scaled=3), check)


def _ntk_result(configs):
    C, S, N, D = len(configs), 3, 2, 4
    ns, dist = np.array([10, 20]), np.array([0.0, 0.5, 1.0, 2.0])
    return NtkFinetuneResult(
        configs=tuple(configs), ns=ns, distances=dist, risk=_risk(C, S, N, D),
        risk_se=_risk(C, S, N, D) / 100, risk_dse_distance=_risk(C, S, N, D - 1) / 100,
        risk_dse_n=_risk(C, S, N - 1, D) / 100, risk_pre=_risk(C, S, D), lead=_risk(C, S, N, D),
        cor62=_risk(C, S, N, D), cor62_linear=_risk(S, N, D), cor63=6 * dist / np.sqrt(ns)[:, None],
        pre_err=_risk(C, S, N), pre_term=_risk(C, S, N), pre_err_pop=_risk(C, S), lam0=_risk(S, N),
        move=_risk(C, S, N, D), move_pre=_risk(C, S), init_norm=_risk(C, S) + 10,
        flips=_risk(C, S, N, D) / 10, flips_pre=_risk(C, S) / 10, steps=np.ones((C, S, N), int),
        steps_pre=np.ones((C, S), int), converged=np.ones((C, S, N, D), bool),
        pre_converged=np.ones((C, S), bool), seconds=np.ones(C))


def test_ntk_finetune_figure_tells_the_initialisations_apart():
    # (d): the paired curve and the kappa = 0.1 one coincide (as at paper scale); every
    # initialisation needs its own marker and colour, the coinciding two colours far apart
    # (the old orange and yellow were 0.38 apart in RGB), and its own line width, the later
    # ones thinner and drawn on top
    configs = [(64, 1.0, True), (256, 1.0, True), (64, 1.0, False), (64, 0.1, False)]
    res = _ntk_result(configs)
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
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert all(paper001._init_label(configs[i]) in labels for i in (0, 2, 3))
        leads = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-" and len(ln.get_xdata())]
        widths = [ln.get_linewidth() for ln in leads]
        assert len(widths) == 3 and widths == sorted(widths, reverse=True)
        assert len(set(widths)) == 3
        assert leads[2].get_zorder() > leads[0].get_zorder()
    with plt.rc_context():                               # the book's colours
        figures.plotting.use_style()
        _close_after(paper001.ntk_finetune_figure(res), check)


def test_table1_figure_labels_every_x_axis():
    # each row plots against another measure: every panel names its x axis
    ns, reps, K = [10, 20], 2, 4
    names = ("dist", "bartlett", "eq3")
    res = Table1Result(pairs=np.zeros((K, 4), int), ns=np.array(ns), c=3.0,
                       errors=_risk(reps, len(ns), K), errors_sd=_risk(reps, len(ns), K),
                       measures={k: _risk(len(ns), K) for k in names}, measures_other_c={},
                       r2={k: R2(_risk(len(ns)), _risk(len(ns))) for k in names}, r2_other_c={},
                       theta_norms=_risk(K, 2), thetas=_risk(K, 2, 5))

    def check(fig):
        axes = np.array(fig.axes).reshape(3, len(ns))
        for i, name in enumerate(names):
            for ax in axes[i]:
                assert ax.get_xlabel() == {"eq3": "Eq. 3"}.get(name, name)
                assert any(t.get_text() for t in ax.get_xticklabels())
    _close_after(paper001.table1_figure(res, ns, {"eq3": "Eq. 3"}), check)
