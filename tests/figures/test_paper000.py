"""Figure builders of paper 000 (transferkit.figures.paper000): the noisy depth panel, Fig. 5
and Fig. 6."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

from tests._helpers import check_figure  # noqa: E402
from transferkit import experiments, figures, stats, theory  # noqa: E402


def _noisy_result(depth, d=40, draws=5):
    gammas, thetas = np.array([0.5, 0.75]), np.array([0.0, np.pi / 2])
    rng = np.random.default_rng(depth)
    ft = 1.0 + 0.1 * rng.standard_normal((2, 2, draws))
    return experiments.deep_linear.GridResult.from_flat(
        {"finetune": ft, "finetune_eq14": ft - 0.1 - 0.01 * rng.standard_normal((2, 2, draws))},
        gammas=gammas, thetas=thetas, n=np.round(gammas * d).astype(int), d=d, sigma=0.5,
        depth=depth, draws=draws, seed=0, alpha=1e-5)


def test_finetune_noisy_depth_figure_draws_one_panel_per_depth():
    res = {L: _noisy_result(L) for L in (3, 4)}
    check_figure(figures.paper000.finetune_noisy_depth_figure(res, "Noisy depth"), 2)


def test_eq14_cell_uses_the_fine_tuned_samples():
    # On one sample the Thm 5.2 limit k P_perp beta_s + X^+ y has risk
    # R(k) = p k^2 - 2 c k + e, and Eq. 14's predictor is k = 1.  With the same samples at
    # depths 2 and 3, R(k) - R(1) fixes p and c; depth 4 must then follow.
    kw = dict(d=10, gamma=0.5, theta=np.array([0.4, 1.2]), sigma=0.5, draws=3, seed=0)
    e14 = {L: experiments.finetuning.finetune_eq14_cell(depth=L, **kw)["finetune_eq14"]
           for L in (2, 3, 4)}
    ft = {L: experiments.finetuning.finetune_cell(depth=L, **kw) for L in (2, 3, 4)}
    assert e14[2].shape == (2, 3)
    np.testing.assert_allclose(e14[2], e14[4], rtol=0, atol=1e-6)   # beta(0) differs by O(alpha)
    k = {L: ft[L]["finetune_thm52_k"] for L in (2, 3, 4)}
    gap = {L: ft[L]["finetune_thm52"] - e14[L] for L in (2, 3, 4)}
    a = np.stack([np.stack([k[L] ** 2 - 1, -2 * (k[L] - 1)], -1) for L in (2, 3)], -2)
    pc = np.linalg.solve(a, np.stack([gap[2], gap[3]], -1)[..., None])[..., 0]
    pred4 = pc[..., 0] * (k[4] ** 2 - 1) - 2 * pc[..., 1] * (k[4] - 1)
    np.testing.assert_allclose(gap[4], pred4, rtol=0, atol=1e-5)


def test_regularised_phase_figure_says_when_it_shows_limits():
    kw = dict(draws=3, seed=1, cache=False, progress=False)
    wds, gammas = (0.0, 1e-2), [0.5, 1.5]
    lin = experiments.linear_transfer.linear_transfer_grid(12, gammas, [0.0, np.pi / 2], 0.2,
                                                           methods=("linear",), **kw)
    for solver in ("descent", "limit"):
        wd = experiments.regularisation.weight_decay_scratch_grid(12, gammas, 0.2, wds,
                                                                  solver=solver, **kw)
        checks = experiments.regularisation.regularised_checks(wd, lin)
        fig = figures.paper000.regularised_phase_figure(wd, lin, checks)
        title = fig._suptitle.get_text()
        assert "d = 12" in title
        assert ("limits of converged training" in title) == (solver == "limit")
        check_figure(fig, 3)


def _ridge_curve(draws=3):
    lams = np.r_[0.0, 4.0 ** np.arange(-5, 3)]
    thetas, scales = np.array([0.0, np.pi / 3]), np.array([0.5, 1.0, 2.0])
    mean = theory.deep_linear.ridge_linear_transfer_risk(
        lams[None, :, None] / scales[:, None, None] ** 2, thetas)
    risk = mean[..., None] + 0.01 * np.random.default_rng(0).standard_normal(mean.shape + (draws,))
    curve = experiments.regularisation.RidgeTransferCurve(
        lams=lams, thetas=thetas, feature_scales=scales, n=50, d=100, gamma=0.5, sigma=0.2,
        draws=draws, risk=risk, feature_scale=np.ones(draws), feature_rank=np.ones(draws))
    return curve, stats.agreement(risk, mean)


def test_ridge_figure_symlog_tick_labels_do_not_crowd():
    """Fig. 6: the label of lambda = 0 once nearly touched that of a power of ten placed inside
    the linear part of the symlog axis; adjacent labels keep at least one em apart."""
    curve, agree = _ridge_curve()
    fig = figures.paper000.ridge_figure(curve, agree, curve.thetas)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        assert ax.get_xscale() == "symlog"
        labels = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        assert "0" in labels[0].get_text() and len(labels) >= 4
        boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
        em = labels[0].get_fontsize() * fig.dpi / 72
        gaps = [b.x0 - a.x1 for a, b in zip(boxes, boxes[1:])]
        assert min(gaps) >= em, gaps
    check_figure(fig, 2)
