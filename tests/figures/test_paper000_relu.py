"""Each figure builder of :mod:`transferkit.figures.paper000_relu` returns a figure on a tiny
synthetic result (paper 000, Fig. 3 and Fig. 9)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from matplotlib.figure import Figure

from transferkit.figures import paper000_relu
from transferkit.models.relu import MeanFieldInfo

RNG = np.random.default_rng(0)
NS = np.array([8, 16, 32])
MUS = np.array([0.0, 0.5])
M = 6


def _info(runs=2, steps=5):
    hist = np.abs(RNG.standard_normal((steps, runs))) + 1.0
    one = np.ones(runs)
    return MeanFieldInfo(loss=hist[-1], history=hist,
                         time_history=np.cumsum(np.ones((steps, runs)), axis=0),
                         steps=np.full(runs, steps), converged=one > 0, horizon=one < 0,
                         loss0=hist[0], h=one, time=one, teacher_norm=one)


def _psd(p=5):
    X = RNG.standard_normal((p, 3))
    return X @ X.T


CASES = {
    "gram": lambda: paper000_relu.gram_figure(_psd(), _psd(), _psd()),
    "scratch": lambda: paper000_relu.scratch_power_law_figure(
        NS, [1.0, 0.5, 0.25], [0.1, 0.05, 0.02], 8.0, 1.0, 0.1),
    "scratch_marked": lambda: paper000_relu.scratch_power_law_figure(
        NS, [1.0, 0.5, 0.25], [0.1, 0.05, 0.02], 8.0, 1.0, 0.1, converged=[True, True, False],
        converged_fit=SimpleNamespace(ns=np.array(NS[:2]), A=8.0, nu=1.0, se_nu=0.1)),
    "out_of_span": lambda: paper000_relu.out_of_span_figure(
        MUS, RNG.random((2, 2)), RNG.random((2, 2)), RNG.random((2, 2))),
    "transfer_map": lambda: paper000_relu.transfer_map_figure(
        NS, MUS, RNG.standard_normal((2, 3)), np.array([10.0, np.inf])),
    "least_squares": lambda: paper000_relu.least_squares_factor_figure(
        NS, MUS, 1 + RNG.random((3, 2, 4)), M),
    "anchored": lambda: paper000_relu.anchored_figure(
        NS, [0.0, 1e-2], RNG.standard_normal((2, 3, 1, 4)), RNG.standard_normal(3),
        RNG.random(3)),
    "convergence": lambda: paper000_relu.convergence_figure(_info(), NS, [_info() for _ in NS]),
    "readings": lambda: _readings(),
}


def _readings():
    curve = SimpleNamespace(ns=NS, mean=np.array([1.0, 0.5, 0.25]), se=np.array([0.1, 0.05, 0.02]),
                            converged=np.array([True, True, False]))
    fit = SimpleNamespace(ns=NS, A=8.0, nu=1.0, se_nu=0.1)
    none = SimpleNamespace(ns=NS[:2], A=None, nu=None, se_nu=None)
    return paper000_relu.readings_figure(["ours", "variant"], [curve, curve], [fit, fit],
                                         [fit, none])


@pytest.mark.parametrize("name", sorted(CASES))
def test_figure_builders_return_a_figure(name):
    fig = CASES[name]()
    try:
        assert isinstance(fig, Figure)
        assert fig.axes
    finally:
        plt.close(fig)


def test_interactive_map_is_a_plotly_figure():
    pytest.importorskip("plotly")
    fig = paper000_relu.transfer_map_interactive(NS, MUS, RNG.standard_normal((2, 3)))
    assert len(fig.data) == 1 and fig.data[0].zmin == -1 and fig.data[0].zmax == 1


def test_every_public_function_is_tested():
    tested = {"gram_figure", "scratch_power_law_figure", "out_of_span_figure",
              "transfer_map_figure", "least_squares_factor_figure", "anchored_figure",
              "convergence_figure", "transfer_map_interactive", "readings_figure"}
    assert set(paper000_relu.__all__) == tested


def test_scratch_figure_marks_the_unconverged_n_and_draws_both_fits():
    fig = CASES["scratch_marked"]()
    try:
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert {"scratch, converged", "scratch, not converged (horizon or step cap)"} <= set(labels)
        assert any(lbl.startswith("converged $n$") for lbl in labels) and len(labels) == 4
    finally:
        plt.close(fig)


def test_readings_figure_draws_each_fit_once_and_the_papers_exponent():
    fig = CASES["readings"]()
    try:
        ax, bx = fig.axes
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ours", "variant"]
        # panel b: three exponents with error bars (the missing converged fit is left out)
        assert len(bx.containers) == 3
        assert [t.get_text() for t in bx.get_yticklabels()] == ["ours", "variant"]
        assert any(np.allclose(line.get_xdata(), 1.18) for line in bx.get_lines())
    finally:
        plt.close(fig)


def test_readings_figure_keeps_coincident_readings_apart():
    # the two readings have the same curve and fit: each needs its own line style and
    # marker (and the legend shows both), or the second hides the first
    fig = CASES["readings"]()
    try:
        ax = fig.axes[0]
        fits = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 30]
        assert len(fits) == 2 and fits[0].get_linestyle() != fits[1].get_linestyle()
        handles = ax.get_legend().legend_handles
        assert len({h.get_marker() for h in handles}) == 2
        assert len({h.get_linestyle() for h in handles}) == 2
    finally:
        plt.close(fig)


def test_anchored_figure_keeps_the_curves_readable_when_the_rich_model_is_far_below():
    """Fig. 9: a rich-model mean of -2.7e4 near n = m (as at ||f_t|| = 1) neither flattens
    the other curves (the axis top follows the data above the cut at -1.5, said on the
    axes) nor shares a colour between two of 11 lambdas."""
    ns = np.array([100, 200, 400, 800])
    lambdas = np.array([0.0, 1e-7, 3e-7, 1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 1e-3, 1e-2, 1e-1])
    T = np.full((len(lambdas), len(ns), 1, 2), -0.2)
    T[0, 3] = -2.7e4
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no layout-engine warning in the book
        fig = paper000_relu.anchored_figure(ns, lambdas, T, np.full(4, 0.05), np.full(4, 0.01))
        fig.canvas.draw()
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert lo == pytest.approx(-1.55) and hi < 0.2
    assert any(t.get_text() == "axis cut at -1.5" for t in ax.texts)
    colours = {tuple(line.get_color()) for line in ax.lines[:len(lambdas)]}
    assert len(colours) == len(lambdas)
    plt.close(fig)


def test_convergence_figure_names_the_pretraining_runs_by_mu():
    """The left panel's lines are the pretraining runs, mu-major (two teachers per mu here):
    one legend entry per mu, in greys, not in the colours that mean n on the right."""
    fig = paper000_relu.convergence_figure(_info(runs=4), NS, [_info() for _ in NS],
                                           mus=[0.0, 0.5])
    left, right = fig.axes
    assert [t.get_text() for t in left.get_legend().get_texts()] == [r"$\mu = 0$", r"$\mu = 0.5$"]
    greys = {line.get_color()[0] == line.get_color()[1] == line.get_color()[2]
             for line in left.lines}
    assert greys == {True}
    plt.close(fig)
