"""Smoke tests of the paper 001 figure builders on tiny synthetic results."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors  # noqa: E402
import numpy as np
import pytest
from _helpers import check_figure, close_after  # noqa: E402

from transferkit.experiments.linear_teachers import (
    DepthAlphaResult,
    EigenAlignResult,
    FrozenResult,
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

def _table1_result(ns, reps=2, K=4, names=("dist", "bartlett", "eq3")):
    return Table1Result(pairs=np.zeros((K, 4), int), ns=np.array(ns), c=3.0,
                        errors=_risk(reps, len(ns), K), errors_sd=_risk(reps, len(ns), K),
                        measures={k: _risk(len(ns), K) for k in names}, measures_other_c={},
                        r2={k: R2(_risk(len(ns)), _risk(len(ns))) for k in names},
                        r2_other_c={}, theta_norms=_risk(K, 2), thetas=_risk(K, 2, 5))


@pytest.mark.parametrize("ns", [[10], [10, 20]])
def test_table1_figure(ns):
    res = _table1_result(ns)
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
    close_after(paper001.eigen_align_figure(res, ns, bound, m=2, d=1000), check)


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
    close_after(paper001.depth_figure(res_a, res_b, depths, alphas, scales, d=10, n=1,
                                       depth_scaled=3), check)


def test_table1_figure_labels_every_x_axis():
    # each row plots against another measure: every panel names its x axis
    ns = [10, 20]
    res = _table1_result(ns)

    def check(fig):
        axes = np.array(fig.axes).reshape(3, len(ns))
        for i, name in enumerate(res.measures):          # the rows, in order
            for ax in axes[i]:
                assert ax.get_xlabel() == {"eq3": "Eq. 3"}.get(name, name)
                assert any(t.get_text() for t in ax.get_xticklabels())
    close_after(paper001.table1_figure(res, ns, {"eq3": "Eq. 3"}), check)
