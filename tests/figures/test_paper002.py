"""The figure builders of paper 002 on tiny synthetic results: a Figure with the expected axes."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from transferkit.experiments.ntk_similarity import (  # noqa: E402
    TaskTransfer,
    WidthSweepResult,
    fit_excess_decay,
)
from transferkit.figures import paper002  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def ntk_tasks(names=("A", "B", "C"), seeds=3, steps=(0, 5, 10, 50)):
    """``TransferResult.tasks`` of a tiny synthetic experiment: task i has Thm 2 term 0.5 + i."""
    rng = np.random.default_rng(0)
    out = {}
    for i, k in enumerate(names):
        t = 0.5 + i
        path = np.outer(1 + 0.01 * rng.standard_normal(seeds), np.linspace(0, t, len(steps)))
        out[k] = TaskTransfer(
            yPQ=np.zeros(10), thm1=t ** 2, thm2=t, scratch=2 * t, lam_P=0.1, lam_Q=0.1,
            dev=t + 0.01 * rng.standard_normal(seeds),
            dev_scratch=2 * t + 0.01 * rng.standard_normal(seeds),
            grad2=t ** 2 + 0.01 * rng.standard_normal(seeds),
            flips=np.zeros(seeds), flips_scratch=np.zeros(seeds),
            path_steps=np.array(steps), path=path, path_theory=np.linspace(0, t, len(steps)),
            atol=1e-3, eta=0.5, steps=(np.full(seeds, 50), np.full(seeds, 60)),
            converged=True, n=10)
    return out


def test_ntk_similarity_figure():
    tasks = ntk_tasks()
    fig = paper002.ntk_similarity_figure(tasks)
    assert isinstance(fig, Figure)
    ax1, ax2 = fig.axes
    assert ax1.get_title().startswith("(a) Thm 2")
    assert ax2.get_title().startswith("(b) Thm 1")
    assert sorted(t.get_text() for t in ax1.get_legend().get_texts()) == [
        "A", "B", "C", "theory = simulation"]
    assert ax1.get_xlim() == ax1.get_ylim()
    assert ax1.get_xlim()[1] == pytest.approx(1.1 * max(2 * 2.5, max(
        r.dev_scratch.max() for r in tasks.values())))
    assert ax2.get_legend() is None


def test_ntk_similarity_figure_every_series_visible():
    """Each task has its own marker shape in both panels; fine-tuning markers have a
    translucent face (a marker under them stays visible), scratch markers none, so a
    scratch point at the place of another task's point is still seen."""
    tasks = ntk_tasks(names=("A", "B", "C", "D"))
    ax1, ax2 = paper002.ntk_similarity_figure(tasks).axes
    for ax, per_task in ((ax1, 2), (ax2, 1)):
        pts = [c.lines[0] for c in ax.containers]      # the data markers of each errorbar
        assert len(pts) == per_task * len(tasks)
        fine = pts[::per_task]
        assert len({ln.get_marker() for ln in fine}) == len(tasks)
        for i, ln in enumerate(fine):
            assert ln.get_color() == f"C{i}"
            assert 0 < matplotlib.colors.to_rgba(ln.get_markerfacecolor())[3] < 1
    scratch = [c.lines[0] for c in ax1.containers][1::2]
    for i, ln in enumerate(scratch):
        assert ln.get_markerfacecolor() == "none"
        assert ln.get_marker() == paper002.TASK_MARKERS[i]
    assert ax1.get_title() == "(a) Thm 2: fine-tuning (filled), scratch (open)"


def test_deviation_path_figure():
    fig = paper002.deviation_path_figure(ntk_tasks(names=("A", "B")))
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_xscale() == "symlog"
    assert len(ax.get_lines()) == 4                  # simulation and theory per task
    assert ax.get_title().startswith("Fig. 2 (NTK regime)")
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(),
                               np.linspace(0, 0.5, 4) / np.sqrt(10))


def test_fig8a_figure():
    rng = np.random.default_rng(1)
    labels = ["MNIST", "upside-down MNIST", "Fashion-MNIST", "scratch"]
    acc = 0.9 + 0.05 * rng.random((4, 2))
    dev_rel = rng.random((4, 2, len(paper002.LAYER_TICKS)))
    dev_abs = 10 * dev_rel + 5
    fig = paper002.fig8a_figure(acc, dev_abs, dev_rel, np.array([0.5, 0.6, 0.7, 0.9]), labels)
    assert isinstance(fig, Figure)
    a, b, c, d = fig.axes
    assert [t.get_text() for t in a.get_xticklabels()] == labels
    # (b) the paper's absolute deviation, (c) our relative one: each bar is a layer's mean
    for ax, dev, title in ((b, dev_abs, "(b) simulation: deviation of each layer (paper)"),
                           (c, dev_rel, "(c) simulation: relative deviation (ours)")):
        assert ax.get_title() == title
        assert [t.get_text() for t in ax.get_xticklabels()] == list(paper002.LAYER_TICKS)
        assert len(ax.patches) == 4 * len(paper002.LAYER_TICKS)
        np.testing.assert_allclose([p.get_height() for p in ax.patches],
                                   dev.mean(1).ravel())
        assert [t.get_text() for t in ax.get_legend().get_texts()] == labels
    assert "/" not in b.get_ylabel() and "/" in c.get_ylabel()
    assert d.get_title() == "(d) theory: Thm 1 task dissimilarity"
    assert d.get_ylim() == pytest.approx((0.45, 0.945))


def test_fig8a_figure_rejects_mismatched_deviations():
    acc = np.full((4, 2), 0.9)
    dev = np.ones((4, 2, 5))
    thm1 = np.ones(4)
    with pytest.raises(ValueError, match="dev_rel"):
        paper002.fig8a_figure(acc, dev, dev[:, :, :3], thm1, list("abcd"))
    with pytest.raises(ValueError, match="dev_abs"):
        paper002.fig8a_figure(acc, dev[:, :1], dev, thm1, list("abcd"))
    with pytest.raises(ValueError, match="dev_abs"):
        paper002.fig8a_figure(acc, dev[0], dev, thm1, list("abcd"))


def test_fig9_figure():
    ep = np.array([0, 1, 3])
    pa = np.array([[0.8, 0.9], [0.82, 0.91]])
    ft = np.array([[0.90, 0.92, 0.93], [0.91, 0.93, 0.95]])
    fig = paper002.fig9_figure(ep, pa, ft)
    assert isinstance(fig, Figure)
    ax1, ax2 = fig.axes
    assert ax1.get_xlabel() == "pretraining epochs"
    assert ax2.get_xlabel() == "pretraining epochs (0: scratch)"
    np.testing.assert_allclose(ax2.get_lines()[0].get_xdata(), ep)
    np.testing.assert_allclose(ax2.get_lines()[0].get_ydata(), ft.mean(0))
    assert ax1.get_xscale() == ax2.get_xscale() == "linear"


def test_fig9_figure_symlog_axis():
    """xscale="symlog" spreads snapshots over decades (0, 1, 2, 5, 10, 20) on both panels;
    anything else but "linear" is a ValueError naming xscale."""
    ep = np.array([0, 1, 2, 5, 10, 20])
    pa = np.tile([0.9, 0.95, 0.97, 0.98, 0.99], (3, 1))
    ft = np.tile([0.90, 0.92, 0.93, 0.94, 0.94, 0.93], (3, 1))
    fig = paper002.fig9_figure(ep, pa, ft, xscale="symlog")
    assert [ax.get_xscale() for ax in fig.axes] == ["symlog", "symlog"]
    # every snapshot epoch is a tick labelled as a plain integer, not a power of ten
    fig.canvas.draw()
    for ax, ticks in zip(fig.axes, (ep[1:], ep)):
        np.testing.assert_array_equal(ax.get_xticks(), ticks)
        assert [t.get_text() for t in ax.get_xticklabels()] == [str(e) for e in ticks]
    np.testing.assert_allclose(fig.axes[1].get_lines()[0].get_xdata(), ep)
    with pytest.raises(ValueError, match="xscale"):
        paper002.fig9_figure(ep, pa, ft, xscale="log")


def width_result(converged_last=True):
    """A synthetic :class:`WidthSweepResult`: task A decays as m^-1/2, task B as m^-1/4, task C
    has a negative mean excess at the last width (not drawn there, not fitted)."""
    widths = np.array([256, 512, 1024, 2048])
    mean = np.stack([widths ** -0.5, 0.5 * widths ** -0.25, np.r_[0.01, 0.01, 0.01, -0.01]], 1)
    excess = mean[..., None] * np.array([0.98, 1.0, 1.02])
    thm2 = np.ones(3)
    conv = np.ones((4, 3), bool)
    conv[-1, 1] = converged_last
    return WidthSweepResult(widths=widths, seeds=(0, 1, 2), names=("A", "B", "C"), thm2=thm2,
                            scratch=thm2, dev=1 + excess, dev_scratch=1 + excess,
                            excess=excess, excess_scratch=excess, atol=np.zeros((4, 3)),
                            flips=np.zeros((4, 3, 3)), steps=np.ones((4, 3, 3), int),
                            steps_scratch=np.ones((4, 3, 3), int), converged=conv,
                            pre_converged=np.ones((4, 3), bool), seconds=np.ones(4))


def test_thm2_width_figure():
    res = width_result(converged_last=False)
    decay = fit_excess_decay(res)
    assert set(decay.fits) == {"A", "B"}
    fig = paper002.thm2_width_figure(res, decay)
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(texts) == 4                          # one entry per task and the rate
    assert any(t.startswith("A: $\\nu = 0.50") for t in texts)
    assert "C" in texts and any("m^{-0.25}" in t for t in texts)
    lines = ax.get_lines()
    fitted = [ln for ln in lines if ln.get_linestyle() == "-" and len(ln.get_xdata()) > 1]
    assert len(fitted) == 2                         # the fitted lines of A and B
    np.testing.assert_allclose(fitted[0].get_ydata(), res.excess[:, 0].mean(-1), rtol=1e-9)
    np.testing.assert_allclose(fitted[1].get_xdata(), [256, 512, 1024])   # B: converged only
    ref = lines[-1]
    assert ref.get_linestyle() == "--"
    y = ref.get_ydata()
    np.testing.assert_allclose(np.log(y[1:] / y[:-1]), -0.25 * np.log(2))   # slope -1/4
    # only positive means are drawn: C has three points; B's unconverged point is open
    pts = {ln.get_color(): ln for ln in lines if ln.get_linestyle() == "None"}
    assert len(pts["C2"].get_xdata()) == 3
    assert ax.get_title().startswith("Thm 2 against width")


def test_thm2_width_figure_legend_covers_no_data():
    """The legend lies outside the axes (below them), inside the figure."""
    res = width_result()
    fig = paper002.thm2_width_figure(res, fit_excess_decay(res))
    (ax,) = fig.axes
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    leg = ax.get_legend().get_window_extent(renderer)
    box = ax.get_window_extent(renderer)
    assert not leg.overlaps(box)
    assert leg.y1 < box.y0 and leg.y0 >= 0
