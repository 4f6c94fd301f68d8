"""The shared figure style ships with the package and applies cleanly."""

from __future__ import annotations

import io
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from transferkit import (
    figures,
    provenance,  # noqa: E402
)


def test_use_style_applies_the_packaged_style():
    with plt.rc_context():
        figures.plotting.use_style()
        assert plt.rcParams["figure.dpi"] == 110
        assert plt.rcParams["savefig.bbox"] == "tight"
        assert plt.rcParams["figure.constrained_layout.use"] is True
        colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        assert len(colours) >= 6 and colours[0].lower() == "#0072b2"
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1], label="$x$")
        ax.legend()
        fig.canvas.draw()
        plt.close(fig)


def test_show_plotly_embeds_without_cdn():
    pytest.importorskip("IPython")
    calls = {}

    class FakeFigure:
        def to_html(self, **kwargs):
            calls.update(kwargs)
            return "<div id='plot'></div>"

    html = provenance.show_plotly(FakeFigure())
    assert calls == {"include_plotlyjs": False, "include_mathjax": False, "full_html": False}
    assert "plot" in html.data


def _two_panels():
    fig, axes = plt.subplots(1, 2, figsize=(6, 2.5))
    for i, ax in enumerate(axes):
        ax.plot([0, 1, 2], [i, 2, 1], label=f"line {i}")
        ax.set_title(f"a long title on panel {i}")
        ax.set_xlabel("x label")
        ax.legend()
    return fig


def test_tight_layout_lays_out_as_matplotlib_without_the_warning():
    def png(fig):
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        plt.close(fig)
        return buf.getvalue()

    with plt.rc_context():
        figures.plotting.use_style()
        old = _two_panels()
        with pytest.warns(UserWarning, match="layout has changed to tight"):
            old.tight_layout()
        new = _two_panels()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            figures.plotting.tight_layout(new)
        assert png(new) == png(old)
