"""Figures of the predictor benchmark (transferkit.figures.predictors)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from transferkit import figures  # noqa: E402
from transferkit.experiments.predictors import PREDICTORS  # noqa: E402


@pytest.mark.parametrize("values, scale", [
    ([0.0, 0.5, 1.0, 0.5], "linear"),          # a fraction that is exactly zero
    ([1e-16, 0.5, 1.0, 0.5], "linear"),        # the same zero computed to rounding
    ([1e-3, 0.5, 1.0, 0.02], "log"),           # positive, three decades
    ([0.2, 0.5, 1.0, 0.3], "linear"),          # positive, under two decades
])
def test_scatter_axis_is_log_only_for_positive_values_over_two_decades(values, scale):
    """A predictor that is zero up to rounding must plot on the axis of an exact zero: the
    log axis once came and went with the last bit of a singular vector."""
    y = np.array([0.1, -0.2, 0.3, 0.0])
    preds = {p: np.array([1.0, 2.0, 3.0, 4.0]) for p in PREDICTORS}
    preds["feature"] = np.array(values)
    fig = figures.predictors.scatter_figure(preds, y, "t", "y", color=np.arange(4.0))
    ax = fig.axes[list(PREDICTORS).index("feature")]
    assert ax.get_xscale() == scale
    plt.close(fig)


def _kinds_figure(**kw):
    kind = np.repeat(np.arange(4.0), 3)
    rng = np.random.default_rng(0)
    preds = {p: rng.uniform(1.0, 2.0, kind.size) for p in PREDICTORS}
    return figures.predictors.scatter_figure(preds, rng.normal(size=kind.size), "t", "y",
                                             color=kind, **kw)


def _legend_entries(fig):
    legends = [leg for ax in fig.axes for leg in [ax.get_legend()] if leg is not None]
    legends += fig.legends
    assert len(legends) == 1
    leg = legends[0]
    return leg.get_title().get_text(), [t.get_text() for t in leg.get_texts()], leg


def test_kinds_of_pairs_get_a_legend_entry_each_not_a_colour_bar():
    """Four kinds of pairs are categories: one legend entry (own colour and marker) per kind,
    named by ``labels``; a colour bar would suggest a continuum."""
    fig = _kinds_figure(clabel="kind of pair",
                        labels={0.0: "M→M", 1.0: "F→M", 2.0: "M→F", 3.0: "F→F"})
    fig.canvas.draw()
    title, texts, leg = _legend_entries(fig)
    assert title == "kind of pair"
    assert texts == ["M→M", "F→M", "M→F", "F→F"]
    handles = leg.legend_handles
    colours = {tuple(np.round(h.get_edgecolor()[0], 3)) for h in handles}
    markers = {h.get_paths()[0].vertices.tobytes() for h in handles}
    assert len(colours) == 4 and len(markers) == 4
    # no colour bar: the axes are the predictor panels and the (frameless) legend panel
    assert not [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    plt.close(fig)


def test_few_values_without_names_are_labelled_by_value():
    norm = np.tile([0.5, 1.0, 2.0], 4)
    preds = {p: np.arange(norm.size, dtype=float) + 1 for p in PREDICTORS}
    fig = figures.predictors.scatter_figure(preds, np.arange(norm.size, dtype=float), "t", "y",
                                            color=norm, clabel="source norm r")
    title, texts, _ = _legend_entries(fig)
    assert (title, texts) == ("source norm r", ["0.5", "1", "2"])
    plt.close(fig)


def test_many_values_keep_the_colour_bar():
    c = np.linspace(0.0, 1.0, 12)
    preds = {p: np.arange(c.size, dtype=float) + 1 for p in PREDICTORS}
    fig = figures.predictors.scatter_figure(preds, c, "t", "y", color=c, clabel="theta")
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(bars) == 1 and bars[0].get_ylabel() == "theta"
    assert not fig.legends and all(ax.get_legend() is None for ax in fig.axes)
    plt.close(fig)


def test_explicit_labels_name_the_categories():
    fig = _kinds_figure(clabel="pair", labels={0.0: "a", 1.0: "b", 2.0: "c", 3.0: "d"})
    assert _legend_entries(fig)[:2] == ("pair", ["a", "b", "c", "d"])
    plt.close(fig)


def test_labels_must_name_every_category():
    with pytest.raises(ValueError, match="labels must name every category"):
        _kinds_figure(clabel="pair", labels={0.0: "a", 1.0: "b"})
