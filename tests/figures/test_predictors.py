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
