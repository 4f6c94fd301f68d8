"""Tests for :mod:`transferkit.experiments.regularisation` (paper 000, App. E, Figs. 5-6)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from transferkit import experiments, stats, theory
from transferkit.experiments.regularisation import (
    FIG56,
    Fig56Preset,
    RegularisedChecks,
    RidgeTransferCurve,
    TunedWeightDecay,
    WeightDecayGrid,
)

pytestmark = pytest.mark.usefixtures("one_thread")

GAMMAS = [0.5, 1.5]
WDS = (0.0, 1e-2, 1e-1)


@pytest.fixture(scope="module")
def wd_grid():
    return experiments.regularisation.weight_decay_scratch_grid(24, GAMMAS, 0.2, WDS, draws=6, seed=2,
                                                                cache=False, progress=False)


@pytest.fixture(scope="module")
def lin_grid():
    return experiments.linear_transfer.linear_transfer_grid(
        24, GAMMAS, [0.0, np.pi / 2], 0.2, draws=6, seed=2, methods=("linear",), cache=False,
        progress=False)


def test_ridge_transfer_curve_agrees_and_scales():
    lams = np.r_[0.0, 4.0 ** np.arange(-3, 2)]
    thetas = [0.0, np.pi / 3, np.pi / 2]
    c = experiments.regularisation.ridge_transfer_curve(40, 0.75, lams, thetas, 0.2, draws=24, seed=1,
                               feature_scales=(1.0, 2.0))
    lam_eff = lams[None, :, None] / np.array([1.0, 2.0])[:, None, None] ** 2
    th = theory.deep_linear.ridge_linear_transfer_risk_finite(c.n, np.array(thetas), 0.2, lam_eff)
    assert stats.agreement(c.risk, th).ok
    # features scaled by s = 2 act as lambda / 4: the grid 4^k maps onto 4^(k-1)
    assert np.allclose(c.risk[1, 2:], c.risk[0, 1:-1], rtol=1e-9, atol=1e-12)
    assert np.all(np.abs(c.feature_scale - 1) < 1e-3)


def test_ridge_transfer_curve_is_a_dataclass():
    lams, thetas = [0.0, 0.25, 1.0], [0.0, np.pi / 2]
    c = experiments.regularisation.ridge_transfer_curve(10, 0.5, lams, thetas, 0.2, draws=2,
                                                        feature_scales=(1.0, 2.0))
    assert isinstance(c, RidgeTransferCurve)
    assert [f.name for f in dataclasses.fields(c)] == [
        "lams", "thetas", "feature_scales", "n", "d", "gamma", "sigma", "draws", "risk",
        "feature_scale", "feature_rank"]
    assert c.risk.shape == (2, 3, 2, 2) and c.feature_scale.shape == (2,)
    assert c.feature_rank.shape == (2,)
    assert (c.n, c.d, c.gamma, c.sigma, c.draws) == (5, 10, 0.5, 0.2, 2)
    np.testing.assert_array_equal(c.lams, lams)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.n = 3


def test_weight_decay_cell_matches_linear_grid_and_closed_form(wd_grid, lin_grid):
    out = wd_grid
    assert out.risk.shape == (2, 3, 6) and out.converged.all()
    assert np.max(out.dist[:, 1:]) < 1e-5
    # the unregularised column is the scratch model of the linear-transfer grid (same draws)
    lin = experiments.linear_transfer.linear_transfer_grid(24, GAMMAS, [0.0], 0.2, draws=6, seed=2, cache=False,
                                     progress=False)
    assert np.allclose(out.risk[:, 0], lin.risk("scratch")[:, 0], rtol=1e-8)
    t = experiments.regularisation.tune(out)
    assert np.array_equal(t.index, np.argmin(out.risk.mean(-1), axis=1))
    assert np.allclose(t.risk, out.risk[[0, 1], t.index])
    ch = experiments.regularisation.regularised_checks(out, lin_grid)
    assert [name for name, _ in ch.items()] == ["weight decay", "tuned transferability"]
    assert ch.weight_decay.ok


def test_limit_solver_is_where_descent_ends(wd_grid):
    # the same draws without training: every trained network is within its distance to
    # the limit (the bound of stats.risk_error_bound), the ridge parameter is the same
    lim = experiments.regularisation.weight_decay_scratch_grid(
        24, GAMMAS, 0.2, WDS, draws=6, seed=2, solver="limit", cache=False, progress=False)
    assert lim.solver == "limit" and wd_grid.solver == "descent"
    assert lim.converged.all() and not lim.steps.any() and not lim.dist.any()
    np.testing.assert_array_equal(lim.mu, wd_grid.mu)
    np.testing.assert_array_equal(lim.n, wd_grid.n)
    gap = np.abs(lim.risk - wd_grid.risk)
    assert np.all(gap <= stats.risk_error_bound(lim.risk, wd_grid.dist) * (1 + 1e-9) + 1e-15)
    # not vacuous: the draws differ and the gaps are small against them
    assert lim.risk.std(-1).min() > 1e-3 and gap.max() < 1e-4


def test_limit_solver_draws_do_not_depend_on_their_number():
    # draw b is the same data and teacher whatever the number of draws: the chapter compares
    # trained networks on the first draws with the limit grid's
    kw = dict(solver="limit", cache=False, progress=False)
    grid = experiments.regularisation.weight_decay_scratch_grid
    six = grid(16, [0.5, 1.5], 0.2, WDS, draws=6, **kw)
    two = grid(16, [0.5, 1.5], 0.2, WDS, draws=2, **kw)
    np.testing.assert_allclose(two.risk, six.risk[..., :2], rtol=1e-12)


def test_weight_decay_solver_validates():
    cell = experiments.regularisation.weight_decay_scratch_cell
    grid = experiments.regularisation.weight_decay_scratch_grid
    with pytest.raises(ValueError, match="solver"):
        cell(10, 0.5, [0.1], 0.2, draws=2, solver="newton")
    with pytest.raises(TypeError, match="solver"):
        cell(10, 0.5, [0.1], 0.2, draws=2, solver=1)
    with pytest.raises(ValueError, match="depth = 2"):
        cell(10, 0.5, [0.1], 0.2, depth=3, draws=2, solver="limit")
    with pytest.raises(ValueError, match="solver"):
        grid(10, [0.5], 0.2, [0.1], draws=2, solver="newton", cache=False, progress=False)
    with pytest.raises(ValueError, match="depth = 2"):
        grid(10, [0.5], 0.2, [0.1], depth=3, draws=2, solver="limit", cache=False, progress=False)


def test_weight_decay_grid_is_a_dataclass(wd_grid):
    g = wd_grid
    assert isinstance(g, WeightDecayGrid)
    G, W, B = len(GAMMAS), len(WDS), 6
    for name in ("risk", "dist", "mu", "converged", "steps"):
        assert getattr(g, name).shape == (G, W, B), name
    assert g.converged.dtype == bool and np.issubdtype(g.steps.dtype, np.integer)
    np.testing.assert_array_equal(g.gammas, GAMMAS)
    np.testing.assert_array_equal(g.weight_decays, WDS)
    np.testing.assert_array_equal(g.n, [12, 36])
    assert (g.d, g.sigma, g.depth, g.draws, g.seed, g.alpha) == (24, 0.2, 2, 6, 2, 1e-5)
    assert g.sweep is not None and "sweep" not in repr(g)
    assert np.all(g.mu[:, 0] == 0) and np.all(g.mu[:, 1:] > 0)
    th = experiments.regularisation.theory_risks(g)
    assert th.shape == (G, W)
    np.testing.assert_allclose(th[:, 0], theory.deep_linear.scratch_risk_finite(g.n, 24, 0.2))


def test_tune_is_a_dataclass(wd_grid):
    t = experiments.regularisation.tune(wd_grid)
    assert isinstance(t, TunedWeightDecay)
    G, B = len(GAMMAS), 6
    assert t.index.shape == t.weight_decay.shape == t.theory_of_choice.shape == (G,)
    assert t.theory_index.shape == t.theory_risk.shape == (G,)
    assert t.risk.shape == (G, B)
    np.testing.assert_array_equal(t.weight_decay, np.array(WDS)[t.index])
    th = experiments.regularisation.theory_risks(wd_grid)
    np.testing.assert_array_equal(t.theory_risk, th.min(axis=1))
    assert np.all(t.theory_risk <= t.theory_of_choice)


def test_regularised_checks_is_a_dataclass(wd_grid, lin_grid):
    ch = experiments.regularisation.regularised_checks(wd_grid, lin_grid)
    assert isinstance(ch, RegularisedChecks)
    assert [f.name for f in dataclasses.fields(ch)] == ["weight_decay", "tuned_transferability"]
    assert isinstance(ch.weight_decay, stats.Agreement)
    assert ch.weight_decay.mean.shape == (len(GAMMAS), len(WDS))
    assert ch.tuned_transferability.mean.shape == (len(GAMMAS), 2)
    assert dict(ch.items()) == {"weight decay": ch.weight_decay,
                                "tuned transferability": ch.tuned_transferability}


def test_fig56_presets():
    assert set(FIG56) == {"paper", "smoke"}
    for p in FIG56.values():
        assert isinstance(p, Fig56Preset)
        for name in ("gammas", "thetas", "lams", "slices", "feature_scales", "weight_decays"):
            assert isinstance(getattr(p, name), tuple), name
        assert p.weight_decays == experiments.regularisation.WEIGHT_DECAYS
        assert 0.0 in p.lams and 1.0 not in p.gammas
        # the ridge grid {0} and 4^k maps onto itself under the feature scale s = 2
        assert set(np.array(p.lams[2:]) / 4) <= set(p.lams)
    paper = FIG56["paper"]
    assert (paper.ridge_d, paper.wd_d, paper.draws, paper.ridge_gamma) == (500, 500, 20, 0.5)
    assert (paper.descent_d, paper.check_gammas, paper.check_draws) == (200, (0.97, 1.03), 4)
    for p in FIG56.values():
        # the networks trained at wd_d are on the grid, on draws the grid has
        assert set(p.check_gammas) <= set(p.gammas) and 0 < p.check_draws <= p.draws
    assert (paper.depth, paper.sigma, paper.alpha) == (2, 0.2, 1e-5)
    assert len(paper.gammas) == 23 and len(paper.thetas) == 19
    with pytest.raises(dataclasses.FrozenInstanceError):
        paper.draws = 3


def test_weight_decay_cell_validates():
    with pytest.raises(ValueError, match="weight_decay"):
        experiments.regularisation.weight_decay_scratch_cell(10, 0.5, [-1.0], 0.2, draws=2)
    with pytest.raises(ValueError, match="grad_tol"):
        experiments.regularisation.weight_decay_scratch_cell(10, 0.5, [0.1], 0.2, draws=2, grad_tol=0)
    with pytest.raises(ValueError, match="lams"):
        experiments.regularisation.ridge_transfer_curve(10, 0.5, [-1.0], [0.0], 0.2, draws=2)
