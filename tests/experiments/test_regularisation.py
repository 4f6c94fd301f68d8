"""Tests for :mod:`transferkit.experiments.regularisation` (paper 000, App. E, Figs. 5-6)."""
from __future__ import annotations

import numpy as np
import pytest

from transferkit import experiments, stats, theory

pytestmark = pytest.mark.usefixtures("one_thread")


def test_ridge_transfer_curve_agrees_and_scales():
    lams = np.r_[0.0, 4.0 ** np.arange(-3, 2)]
    thetas = [0.0, np.pi / 3, np.pi / 2]
    c = experiments.regularisation.ridge_transfer_curve(40, 0.75, lams, thetas, 0.2, draws=24, seed=1,
                               feature_scales=(1.0, 2.0))
    lam_eff = lams[None, :, None] / np.array([1.0, 2.0])[:, None, None] ** 2
    th = theory.deep_linear.ridge_linear_transfer_risk_finite(c["n"], np.array(thetas), 0.2, lam_eff)
    assert stats.agreement(c["risk"], th).ok
    # features scaled by s = 2 act as lambda / 4: the grid 4^k maps onto 4^(k-1)
    assert np.allclose(c["risk"][1, 2:], c["risk"][0, 1:-1], rtol=1e-9, atol=1e-12)
    assert np.all(np.abs(c["feature_scale"] - 1) < 1e-3)


def test_weight_decay_cell_matches_linear_grid_and_closed_form():
    gammas = [0.5, 1.5]
    out = experiments.regularisation.weight_decay_scratch_grid(24, gammas, 0.2, (0.0, 1e-2, 1e-1), draws=6, seed=2,
                                      cache=False, progress=False)
    assert out["risk"].shape == (2, 3, 6) and out["converged"].all()
    assert np.max(out["dist"][:, 1:]) < 1e-5
    # the unregularised column is the scratch model of the linear-transfer grid (same draws)
    lin = experiments.linear_transfer.linear_transfer_grid(24, gammas, [0.0], 0.2, draws=6, seed=2, cache=False,
                                     progress=False)
    assert np.allclose(out["risk"][:, 0], lin.risk("scratch")[:, 0], rtol=1e-8)
    t = experiments.regularisation.tune(out)
    assert np.array_equal(t["index"], np.argmin(out["risk"].mean(-1), axis=1))
    assert np.allclose(t["risk"], out["risk"][[0, 1], t["index"]])
    ch = experiments.regularisation.regularised_checks(out, experiments.linear_transfer.linear_transfer_grid(
        24, gammas, [0.0, np.pi / 2], 0.2, draws=6, seed=2, methods=("linear",), cache=False,
        progress=False))
    assert set(ch) == {"weight decay", "tuned transferability"}
    assert ch["weight decay"].ok


def test_weight_decay_cell_validates():
    with pytest.raises(ValueError, match="weight_decay"):
        experiments.regularisation.weight_decay_scratch_cell(10, 0.5, [-1.0], 0.2, draws=2)
    with pytest.raises(ValueError, match="grad_tol"):
        experiments.regularisation.weight_decay_scratch_cell(10, 0.5, [0.1], 0.2, draws=2, grad_tol=0)
    with pytest.raises(ValueError, match="lams"):
        experiments.regularisation.ridge_transfer_curve(10, 0.5, [-1.0], [0.0], 0.2, draws=2)
