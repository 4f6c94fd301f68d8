"""Smoke tests of the paper 003/004 figure builders on tiny synthetic results."""

from __future__ import annotations

import dataclasses

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from _helpers import check_figure, close_after  # noqa: E402

from transferkit.experiments.diagonal_networks import (  # noqa: E402
    MethodRun,
    QMinSolution,
    ReadoutRuns,
    TasksResult,
)
from transferkit.experiments.ptft_relu import (  # noqa: E402
    NestedMtlResult,
    NestedMtlStatistics,
    NestedRescalingResult,
    NestedStatistics,
    OverlapResult,
    SampleEfficiencyResult,
    StudentRun,
    UnitClusters,
)
from transferkit.figures import paper003_004  # noqa: E402

RNG = np.random.default_rng(0)


def _pos(*shape):
    return RNG.uniform(0.1, 1.0, shape)


def test_ptft_penalty_figure():
    rhos, m_aux = [1.0, 0.9], [0.01, 1.0]
    m, m_check = np.logspace(-2, 2, 20), np.logspace(-2, 2, 4)
    keys = [(r, a) for r in rhos for a in m_aux]
    fig = paper003_004.ptft_penalty_figure(m, {k: _pos(20) for k in keys}, {k: _pos(20) for k in keys},
                                           m_check, {k: _pos(4) for k in keys},
                                           {k: _pos(4) for k in keys}, rhos, m_aux)
    check_figure(fig, 4)

def _student(ns, draws, width=3, d=2):
    return StudentRun(error=_pos(len(ns), draws), converged=np.ones((len(ns), draws), bool),
                      W=RNG.standard_normal((len(ns), draws, width, d)),
                      a=RNG.standard_normal((len(ns), draws, width)))

def test_sample_efficiency_figure():
    ns, draws = [4, 8], 2
    res = {(rho, mag): SampleEfficiencyResult(ns=np.array(ns), rho=rho, magnitude=mag,
                                              pre_converged=np.ones(draws, bool), teachers=[],
                                              W_pre=np.zeros((draws, 3, 2)),
                                              stl=_student(ns, draws), ptft=_student(ns, draws),
                                              X_test=np.zeros((draws, 5, 2)))
           for rho in (1.0, 0.9) for mag in (1.0, 0.1)}
    check_figure(paper003_004.sample_efficiency_figure(res, [1.0, 0.9], [1.0, 0.1], 1e-2), 4)

def test_relu_features_figure():
    ks = [1, 2, 4]
    rows = [("stl", np.array([1.0, 0.6, 0.3]), 0.5, 3.0), ("ptft", np.array([1.0, 0.7, 0.4]), 0.7, 5.0),
            ("mtl", np.array([1.0, 0.8, 0.2]), 0.9, 4.0)]
    fig = paper003_004.relu_features_figure(ks, rows)
    check_figure(fig, 1)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert [t.split(":")[0] for t in labels] == ["STL", "PT+FT", "MTL"]


def test_alignment_figure():
    ns = [8, 64]
    align = {"a": {name: _pos(2, 3) for name in ("stl", "ptft", "mtl")},
             "b": {"stl": _pos(2, 1)}}      # one draw: no error bar, no warning
    fig = paper003_004.alignment_figure(ns, align)
    check_figure(fig, 2)
    assert [len(ax.lines) > 0 for ax in fig.axes] == [True, True]


def _marker_faces(ax):
    """(x, y, face colour) of every marker drawn on ``ax``."""
    return [(x, y, to_rgba(ln.get_markerfacecolor())) for ln in ax.lines
            if ln.get_marker() not in (None, "None", "", " ")
            for x, y in zip(ln.get_xdata(), ln.get_ydata())]


def test_alignment_figure_opens_unconverged_points():
    ns = [8, 16, 64]
    align = {"a": {"stl": _pos(3, 4), "ptft": _pos(3, 4)}, "b": {"ptft": _pos(3, 4)}}
    stopped = np.ones((3, 4), bool)
    stopped[2, 1] = False                                 # PT+FT of "a", n = 64: one draw
    conv = {"a": {"ptft": stopped, "stl": np.ones((3, 4), bool)},
            "b": {"ptft": np.array([False, True, True])}}  # per point
    fig = paper003_004.alignment_figure(ns, align, converged=conv)
    white = to_rgba("white")
    for ax, (title, runs) in zip(fig.axes, align.items()):
        faces = _marker_faces(ax)
        for name, scores in runs.items():
            done = conv[title][name]
            done = done.all(1) if done.ndim == 2 else done
            for n, y, ok in zip(ns, scores.mean(1), done):
                # the topmost marker at the point (drawn last) is open where a run stopped
                top = [f for x, yy, f in faces if x == n and np.isclose(yy, y)][-1]
                assert (top == white) == (not ok), (title, name, n)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("stopped" in t for t in labels)
    check_figure(fig, 2)
    # every run converged (or no flags): all filled, no legend entry for open markers
    plain = paper003_004.alignment_figure(ns, align)
    assert all(f != white for ax in plain.axes for *_, f in _marker_faces(ax))
    assert not any("stopped" in t.get_text() for t in plain.axes[0].get_legend().get_texts())
    check_figure(plain, 2)
    with pytest.raises(ValueError, match="converged"):
        paper003_004.alignment_figure(ns, align, converged={"a": {"stl": np.ones((2, 4), bool)}})


def _assert_one_legend_clear_of_axes(fig):
    """``fig`` has no legend inside an axis and one figure legend that overlaps no axis."""
    fig.canvas.draw()
    assert [ax.get_legend() for ax in fig.axes] == [None] * len(fig.axes)
    assert len(fig.legends) == 1
    box = fig.legends[0].get_window_extent()
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent()), ax.get_title()

def _tasks(overlap, ns=(3, 6), draws=2, D=5):
    shape = (len(ns), draws)

    def run():
        return MethodRun(beta=RNG.standard_normal(shape + (D,)), risk=_pos(*shape),
                         steps=np.full(shape, 10), converged=np.ones(shape, bool))

    def qmin():
        return QMinSolution(beta=RNG.standard_normal(shape + (D,)), risk=_pos(*shape),
                            residual=np.full(shape, 1e-14))

    return TasksResult(ns=np.array(ns), D=D, k=2, overlap=overlap, alpha=0.1, gamma=0.1, n_aux=10,
                       beta_aux=np.zeros((draws, D)), beta_main=np.zeros((draws, D)),
                       beta_pre=np.zeros((draws, D)), pre_converged=np.ones(draws, bool),
                       stl=run(), ptft=run(), mtl=run(), mtl_aux=np.zeros(shape + (D,)),
                       qmin_stl=qmin(), qmin_ptft=qmin())

def test_diagonal_generalisation_figure():
    runs = {"overlapping": _tasks(2), "disjoint": _tasks(0)}
    fig = paper003_004.diagonal_generalisation_figure(runs)
    _assert_one_legend_clear_of_axes(fig)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert sorted(labels) == sorted(["STL (GD)", "PT+FT (GD)", "MTL (GD)",
                                     "STL: Eq. 22 minimiser", "PT+FT: Eq. 22 minimiser"])
    check_figure(fig, 2)

def test_diagonal_norms_figure():
    ns = np.array([3, 6])
    ratios = {m: _pos(2, 2) for m in ("stl", "ptft", "mtl")}
    check_figure(paper003_004.diagonal_norms_figure(ns, ratios, ratios), 2)


def test_diagonal_l12_figure_marks_unconverged_runs():
    ns, alphas = np.array([3, 6]), [0.1, 0.01]
    ratio, dist = 1 + _pos(2, 2, 3), _pos(2, 2, 3)
    conv = np.ones((2, 2, 3), bool)
    check_figure(paper003_004.diagonal_l12_figure(ns, alphas, ratio, dist), 2)
    conv[1, 0] = False                      # no converged run at (alpha = 0.01, n = 3)
    conv[1, 1, 0] = False
    fig = paper003_004.diagonal_l12_figure(ns, alphas, ratio, dist, converged=conv)
    solid = [ln for ln in fig.axes[0].lines if ln.get_linestyle() == "-"]
    dashed = [ln for ln in fig.axes[0].lines if ln.get_linestyle() == "--"]
    assert len(dashed) == 1                 # all-runs mean only for the alpha with stopped runs
    y = solid[1].get_ydata()
    assert np.isnan(y[0]) and np.isclose(y[1], ratio[1, 1, 1:].mean())
    np.testing.assert_allclose(dashed[0].get_ydata(), ratio[1].mean(-1))
    check_figure(fig, 2)


def _se_result(rho, mag, ns, draws, pre_converged=True):
    return SampleEfficiencyResult(ns=np.array(ns), rho=rho, magnitude=mag,
                                  pre_converged=np.full(draws, pre_converged), teachers=[],
                                  W_pre=np.zeros((draws, 3, 2)), stl=_student(ns, draws),
                                  ptft=_student(ns, draws), X_test=np.zeros((draws, 5, 2)),
                                  pre_steps=np.full(draws, 10))


def test_paired_log_ratio_leaves_out_unconverged_runs():
    r = _se_result(0.9, 0.1, [4, 8], 3)
    lr = paper003_004.paired_log_ratio(r)
    np.testing.assert_allclose(lr, np.log10(r.ptft.error / r.stl.error))
    r.ptft.converged[0, 1] = False
    lr = paper003_004.paired_log_ratio(r)
    assert np.isnan(lr[0, 1]) and np.isfinite(lr).sum() == 5
    assert np.isfinite(paper003_004.paired_log_ratio(r, converged_only=False)).all()
    assert np.isnan(paper003_004.paired_log_ratio(_se_result(0.9, 0.1, [4], 2, False))).all()


def test_reversal_figure_draws_the_penalty_beside_the_measurements():
    ns, draws, rhos, mags = [4, 8], 3, [1.0, 0.9], [1.0, 0.1, 0.01]
    res = {(rho, m): _se_result(rho, m, ns, draws) for rho in rhos for m in mags}
    res[0.9, 0.01].stl.converged[1, 0] = False      # one run stopped at its cap
    fig = paper003_004.reversal_figure(res, rhos, mags, 1e-2, m_curve=np.logspace(-2.5, 0.5, 50))
    check_figure(fig, 2)
    ax = fig.axes[1]
    theory = [ln for ln in ax.lines if len(ln.get_xdata()) == 50]
    assert len(theory) == 1 and theory[0].get_color() == "k"
    np.testing.assert_allclose(theory[0].get_ydata(), np.log10(
        paper003_004.penalty_ratio(np.logspace(-2.5, 0.5, 50), 0.9, 1e-2)))
    dashed = [ln for ln in ax.lines if ln.get_linestyle() == "--"]
    assert len(dashed) == 1                         # the all-draws mean, only where one stopped
    assert len([ln for ln in fig.axes[0].lines if ln.get_linestyle() == "--"]) == 0
    # a note (the step of a sensitivity reading) ends every panel's title
    titled = paper003_004.reversal_figure(res, rhos, mags, 1e-2, note="step 2")
    assert [ax.get_title() for ax in titled.axes] == [r"$\rho = 1.0$, step 2",
                                                      r"$\rho = 0.9$, step 2"]
    assert [ax.get_title() for ax in fig.axes] == [r"$\rho = 1.0$", r"$\rho = 0.9$"]


def test_diagonal_rescaling_figure_draws_theory_beside_gd():
    from transferkit.experiments.diagonal_networks import RescalingResult

    S, ns, draws, D = 3, np.array([2, 4]), 3, 5
    shape = (S, len(ns), draws)
    beta_aux = np.zeros((draws, D))
    beta_aux[:, :2] = 1.0
    r = RescalingResult(scales=np.array([0.5, 1.0, 2.0]), ns=ns, D=D, k=2, k_main=1, n_aux=10,
                        alpha=0.1, gamma=0.1, beta_aux=beta_aux, beta_main=beta_aux * 0,
                        beta_pre=beta_aux, pre_converged=np.ones(draws, bool),
                        beta=RNG.standard_normal(shape + (D,)), risk=_pos(*shape),
                        steps=np.full(shape, 10), converged=np.ones(shape, bool),
                        qmin_beta=RNG.standard_normal(shape + (D,)), qmin_risk=_pos(*shape),
                        qmin_residual=np.full(shape, 1e-14))
    fig = paper003_004.diagonal_rescaling_figure(r)
    lines = [ln for ln in fig.axes[0].lines if ln.get_linestyle() == "-"]
    assert len(lines) == S                       # one theory line per factor
    np.testing.assert_allclose(lines[1].get_ydata(), r.qmin_risk[1].mean(-1))
    assert lines[1].get_color() == "k"           # s = 1, the reference, in black
    right = [ln for ln in fig.axes[1].lines if ln.get_linestyle() == "-"]
    np.testing.assert_allclose(right[0].get_ydata(), r.qmin_aux_fraction[0].mean(-1))
    assert f"$D = {r.D}$" in fig.axes[0].get_title()
    assert rf"$\gamma = {r.gamma:g}$" in fig.axes[0].get_title()
    check_figure(fig, 2)


def test_diagonal_sparsity_figure():
    runs = {"overlapping": _tasks(2), "disjoint": _tasks(0)}
    for r in runs.values():
        r.beta_aux[:, :2] = 1.0
    lp = {name: ReadoutRuns(ns=r.ns, beta_main=r.beta_main, beta=RNG.standard_normal(r.stl.beta.shape),
                            risk=_pos(2, 2), residual=np.zeros((2, 2))) for name, r in runs.items()}
    check_figure(paper003_004.diagonal_sparsity_figure(runs, lp, 6), 6)
    with pytest.raises(ValueError, match="n_show"):
        paper003_004.diagonal_sparsity_figure(runs, lp, 5)
    with pytest.raises(ValueError, match="readout"):
        paper003_004.diagonal_sparsity_figure(runs, {"overlapping": lp["overlapping"]}, 6)
    # k_max: panels c and e stop at k = k_max (default: every k up to D)
    D = runs["overlapping"].D
    full = paper003_004.diagonal_sparsity_figure(runs, lp, 6)
    assert all(len(ln.get_xdata()) == D for ln in full.axes[0].lines if len(ln.get_xdata()))
    top = paper003_004.diagonal_sparsity_figure(runs, lp, 6, k_max=2)
    for ax in (top.axes[0], top.axes[1]):
        drawn = [ln for ln in ax.lines if len(ln.get_xdata())]
        assert drawn and all(list(ln.get_xdata()) == [1, 2] for ln in drawn)
    first = [ln for ln in full.axes[0].lines if len(ln.get_xdata())][0]
    np.testing.assert_array_equal(
        [ln for ln in top.axes[0].lines if len(ln.get_xdata())][0].get_ydata(), first.get_ydata()[:2])
    for bad in (0, 1.5, "3"):
        with pytest.raises((ValueError, TypeError), match="k_max"):
            paper003_004.diagonal_sparsity_figure(runs, lp, 6, k_max=bad)


def test_diagonal_l12_large_figure_one_row_per_overlap():
    from transferkit.experiments.diagonal_networks import L12Result
    rng = np.random.default_rng(0)
    A, S, R, D = 2, 2, 3, 5
    b12 = rng.standard_normal((S, R, 2, D))
    res = L12Result(alphas=np.array([0.1, 0.01]), ns=np.array([4, 8]),
                    beta_aux=rng.standard_normal((R, D)), beta_main=rng.standard_normal((R, D)),
                    beta_mtl=b12[None] + 0.1 * rng.standard_normal((A, S, R, 2, D)),
                    steps=np.ones((A, S, R), int), converged=np.ones((A, S, R), bool),
                    beta_l12=b12, l12_residual=np.zeros((S, R)), l12_gap=np.zeros((S, R)))
    check_figure(paper003_004.diagonal_l12_large_figure({"overlapping": res, "disjoint": res}), 4)
    with pytest.raises(ValueError, match="results"):
        paper003_004.diagonal_l12_large_figure({})


def test_nested_rescaling_figure():
    ns, T, M, draws = np.array([4, 8, 16]), 2, 3, 2
    shape = (T, M, len(ns), draws)
    conv = np.ones(shape, bool)
    conv[0, 2, 1, 0] = False                                  # an open marker
    r = NestedRescalingResult(
        ns=ns, scales=np.array([0.1, 1.0]), tasks=("nested", "disjoint"),
        methods=("STL", "PT+FT s=0.1", "PT+FT s=1"), error=_pos(*shape), converged=conv,
        steps=np.ones(shape, int), W=RNG.standard_normal(shape + (3, 2)),
        a=RNG.standard_normal(shape + (3,)), main_dirs=RNG.standard_normal((T, draws, 2)),
        W_pre=RNG.standard_normal((draws, 3, 2)), a_pre=RNG.standard_normal((draws, 3)),
        pre_converged=np.ones(draws, bool),
        pre_steps=np.ones(draws, int), X_test=RNG.standard_normal((draws, 5, 2)))
    st = NestedStatistics(spread=_pos(*shape), alignment=_pos(*shape), pr=1 + _pos(*shape),
                          pr_pre=1 + _pos(draws), ensd=1 + _pos(T, M - 1, len(ns), draws),
                          pr_readout=1 + _pos(*shape), pr_pre_readout=1 + _pos(draws),
                          ensd_readout=1 + _pos(T, M - 1, len(ns), draws))
    check_figure(paper003_004.nested_rescaling_figure(r, st), 5)
    # with the multi-task students: diamonds on the first three panels, legends on two
    mshape = (T, len(ns[1:]), draws)
    mconv = np.ones(mshape, bool)
    mconv[1, 0, 1] = False
    m = NestedMtlResult(ns=ns[1:], tasks=("nested", "disjoint"), error=_pos(*mshape),
                        converged=mconv, steps=np.ones(mshape, int),
                        W=RNG.standard_normal(mshape + (3, 2)), a=RNG.standard_normal(mshape + (3,)),
                        a_aux=RNG.standard_normal(mshape + (3,)),
                        main_dirs=RNG.standard_normal((T, draws, 2)),
                        X_test=RNG.standard_normal((draws, 5, 2)))
    mst = NestedMtlStatistics(spread=_pos(*mshape), alignment=_pos(*mshape),
                              spread_main=_pos(*mshape), alignment_main=_pos(*mshape))
    fig = paper003_004.nested_rescaling_figure(r, st, m, mst)
    _assert_one_legend_clear_of_axes(fig)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(labels) == len(set(labels)) == 2 * 3 + 2 * 2 + 2     # each label once
    assert {"MTL, nested", "MTL, main readout, disjoint", "after pretraining"} <= set(labels)
    assert labels[:2] == ["STL, nested", "STL, disjoint"]             # a column per method
    n_lines = [len(ax.lines) for ax in fig.axes]
    check_figure(fig, 5)
    plain = paper003_004.nested_rescaling_figure(r, st)
    assert [len(ax.lines) for ax in plain.axes][3:] == n_lines[3:]     # PR panels unchanged
    assert all(a > b for a, b in zip(n_lines[:3], [len(ax.lines) for ax in plain.axes]))
    check_figure(plain, 5)
    with pytest.raises(ValueError, match="together"):
        paper003_004.nested_rescaling_figure(r, st, m)


def test_stl_clusters_figure():
    ns, ks = [8, 16, 32], np.array([1, 2, 4])
    cl = [UnitClusters(ks=ks, inertia=RNG.uniform(size=(3, 4, 3)), align_k=2,
                       alignment=RNG.uniform(size=(3, 4))) for _ in range(2)]
    check_figure(paper003_004.stl_clusters_figure(ns, [1e-2, 1.0], cl), 2)
    conv = [np.ones((3, 4), bool), np.array([[True] * 4, [True] * 4, [False] + [True] * 3])]
    check_figure(paper003_004.stl_clusters_figure(ns, [1e-2, 1.0], cl, conv), 2)
    with pytest.raises(ValueError, match="one UnitClusters per alpha"):
        paper003_004.stl_clusters_figure(ns, [1e-2], cl)
    with pytest.raises(ValueError, match="one array per alpha"):
        paper003_004.stl_clusters_figure(ns, [1e-2, 1.0], cl, conv[:1])


def test_dense_clusters_figure():
    ns, ks = [8, 16, 32], np.array([1, 2, 4, 6])
    cl = lambda: UnitClusters(ks=ks, inertia=RNG.uniform(size=(3, 4, 4)), align_k=6,  # noqa: E731
                              alignment=RNG.uniform(size=(3, 4)))
    conv = np.array([[True] * 4, [True] * 4, [False] + [True] * 3])
    dense = [[cl(), cl()] for _ in range(2)]
    dconv = [[conv, np.ones((3, 4), bool)] for _ in range(2)]
    sparse, sconv = [cl(), cl()], [np.ones((3, 4), bool)] * 2
    fig = paper003_004.dense_clusters_figure(ns, [1e-2, 1.0], ["gaussian", "positive"], dense,
                                             dconv, sparse, sconv)
    check_figure(fig, 3)
    # last panel: 3 teachers x 2 scales of errorbars, one hollow overlay per stopped curve
    # (the first scale of each dense law), two style keys
    last = fig.axes[-1]
    assert len(last.containers) == 6 and len(last.lines) - 6 * 3 == 2 + 2
    check_figure(paper003_004.dense_clusters_figure(ns, [1e-2, 1.0], ["gaussian"], dense[:1],
                                                    dconv[:1], sparse, sconv, k=4), 2)
    with pytest.raises(ValueError, match="one entry per readout"):
        paper003_004.dense_clusters_figure(ns, [1e-2, 1.0], ["gaussian"], dense, dconv, sparse,
                                           sconv)
    with pytest.raises(ValueError, match="one item per alpha"):
        paper003_004.dense_clusters_figure(ns, [1e-2], ["gaussian", "positive"], dense, dconv,
                                           sparse, sconv)
    with pytest.raises(ValueError, match="k must be one of"):
        paper003_004.dense_clusters_figure(ns, [1e-2, 1.0], ["gaussian", "positive"], dense,
                                           dconv, sparse, sconv, k=8)


def test_participation_ratio_figure():
    ns, pr, se = [8, 16, 32], RNG.uniform(1, 6, size=(2, 3)), RNG.uniform(0, 1, size=(2, 3))
    check_figure(paper003_004.participation_ratio_figure(ns, [1e-2, 1.0], pr, se), 1)
    conv = np.array([[True, True, False], [True, False, True]])
    check_figure(paper003_004.participation_ratio_figure(ns, [1e-2, 1.0], pr, se, conv), 1)
    with pytest.raises(ValueError, match="converged must have the shape"):
        paper003_004.participation_ratio_figure(ns, [1e-2, 1.0], pr, se, conv[:, :2])


def _overlap_result(mtl=False, draws=3):
    shared, ns = np.array([0, 2, 6]), np.array([8, 64])

    def run():
        conv = np.ones((3, 2, draws), bool)
        conv[1, 0, 0] = False                         # one run at its step cap
        return StudentRun(error=_pos(3, 2, draws), converged=conv,
                          W=np.zeros((3, 2, draws, 4, 2)), a=np.zeros((3, 2, draws, 4)))
    return OverlapResult(shared=shared, units=6, ns=ns, stl=run(), ptft=run(),
                         mtl=run() if mtl else None, ntk_error=_pos(3, 2, draws),
                         lazy_stl_error=_pos(3, 2, draws), lazy_ptft_error=_pos(3, 2, draws),
                         pre_converged=np.ones(draws, bool), pre_steps=np.ones(draws, int))


@pytest.mark.parametrize("mtl, draws", [(False, 3), (True, 3), (False, 1)])
def test_overlap_figure(mtl, draws):
    res = _overlap_result(mtl, draws)

    def check(fig):
        assert len(fig.axes) == 2
        ax = fig.axes[0]
        # one series per method and the NTK, each with its error bars; the x ticks are s
        assert len(ax.containers) == 3 + mtl
        assert [int(t) for t in ax.get_xticks()] == [0, 2, 6]
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert labels == ["STL", "PT+FT"] + ["MTL"] * mtl + ["NTK (lazy)"]
        # the cell with a run at its cap is marked with an open marker, for both methods
        opened = [ln for ln in ax.get_lines() if ln.get_markerfacecolor() == "white"]
        assert len(opened) == 2 + mtl and all(len(ln.get_xdata()) == 1 for ln in opened)
        assert all(ln.get_xdata()[0] == 2 for ln in opened)
    close_after(paper003_004.overlap_figure(res), check)


@pytest.mark.parametrize("rescaled", [False, True])
def test_overlap_figure_with_the_lazy_readings(rescaled):
    res = _overlap_result(False, 3)
    if rescaled:
        res = dataclasses.replace(res, ptft_rescaled=res.ptft)

    def check(fig):
        ax = fig.axes[0]
        # STL, PT+FT, NTK, the two lazy limits (and PT+FT x 10)
        assert len(ax.containers) == 5 + rescaled
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert labels == (["STL", "PT+FT", "NTK (lazy)", "STL (lazy)", "PT+FT (lazy)"]
                          + ["PT+FT x 10"] * rescaled)
        # the lazy PT+FT curve is the mean of its errors at n = 8
        bars = ax.containers[4]
        np.testing.assert_allclose(bars.lines[0].get_ydata(), res.lazy_ptft_error[:, 0].mean(-1))
    close_after(paper003_004.overlap_figure(res, lazy=True), check)
    with pytest.raises(TypeError, match="lazy"):
        paper003_004.overlap_figure(res, lazy="yes")
