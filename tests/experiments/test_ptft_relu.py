"""Paper 003, Fig. 1c (STL against PT+FT, ReLU) through transferkit.sweep: cache, same numbers;
the chapter's presets (Figs. 1a-c of paper 003, App. E.2 / G of paper 004)."""
import dataclasses
import math

import numpy as np
import pytest

from _helpers import assert_same, trained_again

from transferkit import theory
from transferkit.experiments import ptft_relu
from transferkit.models.relu import teacher_pair

P = dict(d=6, rho=0.5, magnitude=1.0, ns=[4, 8], draws=2, width=5, units=2, n_aux=16, n_test=30,
         seed=1, max_steps=200, pre_max_steps=300, progress=False)

# tiny budgets: unconverged runs are expected (and flagged in the result)
pytestmark = pytest.mark.filterwarnings("ignore:.*did not reach:UserWarning")


@pytest.fixture(scope="module")
def se(one_thread, cache):
    return ptft_relu.run_sample_efficiency(**P, directory=cache)


def test_shapes(se):
    assert se.stl.error.shape == (2, 2) and se.ptft.W.shape == (2, 2, 5, 6)
    assert se.W_pre.shape == (2, 5, 6) and se.X_test.shape == (2, 30, 6)
    assert len(se.teachers) == 2 and len(se.teachers[0]) == 4
    np.testing.assert_array_equal(se.teachers[1][3], np.full(2, 1.0))


def test_second_run_loads_the_cache(se, cache, monkeypatch):
    monkeypatch.setattr(ptft_relu, "train_units", trained_again)
    assert_same(ptft_relu.run_sample_efficiency(**P, directory=cache), se)


def test_without_cache_gives_the_same_numbers(se, one_thread):
    assert_same(ptft_relu.run_sample_efficiency(**P, cache=False), se)


# ------------------------------------------------------------------------------- presets

SCALES = ["paper", "smoke"]
PRESETS = ((ptft_relu.PENALTY, ptft_relu.PenaltyPreset),
           (ptft_relu.SAMPLE_EFFICIENCY, ptft_relu.SampleEfficiencyPreset),
           (ptft_relu.RELU_FEATURES, ptft_relu.ReluFeaturesPreset))


def test_presets_are_frozen_with_tuple_grids():
    for presets, cls in PRESETS:
        assert set(presets) == set(SCALES)
        for p in presets.values():
            assert isinstance(p, cls)
            for f in dataclasses.fields(p):
                assert not isinstance(getattr(p, f.name), (list, np.ndarray)), f.name
        with pytest.raises(dataclasses.FrozenInstanceError):
            presets["paper"].rhos = ()


@pytest.mark.parametrize("scale", SCALES)
def test_penalty_preset_is_valid(scale):
    """Every curve and check point has a finite penalty and a finite local exponent (the
    grids miss m = gamma m0, where the exponent is undefined), and the checks lie inside
    the curves' range."""
    p = ptft_relu.PENALTY[scale]
    M = np.logspace(*p.log10_m, p.m_points)
    M_check = np.logspace(*p.log10_m_check, p.check_points)
    assert M[0] <= M_check[0] and M_check[-1] <= M[-1] and p.check_points >= 2
    assert 0 < p.gamma and 0 < p.fd_step < 1e-2
    assert all(-1 <= r <= 1 for r in p.rhos) and all(v > 0 for v in p.m_aux)
    for rho in p.rhos:
        for ma in p.m_aux:
            for m in (M, M_check):
                r = theory.penalties.relu_ptft_penalty(m, rho, math.sqrt(ma), p.gamma)
                e = theory.penalties.relu_ptft_dlog_penalty(m, rho, math.sqrt(ma), p.gamma)
                assert np.all(np.isfinite(r) & (r > 0)) and np.all(np.isfinite(e)), (rho, ma)


@pytest.mark.parametrize("scale", SCALES)
def test_sample_efficiency_preset_is_valid(scale):
    p = ptft_relu.SAMPLE_EFFICIENCY[scale]
    rng = np.random.default_rng(0)
    for rho in p.rhos:
        for mag in p.magnitudes:
            teacher_pair(p.d, p.units, rho, mag, rng)       # raises on a bad d, units, rho, m
    assert all(isinstance(n, int) and n >= 1 for n in p.ns) and list(p.ns) == sorted(set(p.ns))
    assert p.draws >= 1 and p.max_steps >= 1 and p.width >= p.units
    assert p.pre_max_steps is None or p.pre_max_steps >= 1
    assert 0 < p.loss_tol < 1 and p.alpha > 0 and p.n_aux >= 1 and p.n_test >= 2
    # the chapter prints "alpha = gamma" and checks (and analyses) the cell rho = 1, m = 1
    assert p.gamma == p.alpha
    assert 1.0 in p.rhos and 1.0 in p.magnitudes


@pytest.mark.parametrize("scale", SCALES)
def test_relu_features_preset_is_valid(scale):
    p = ptft_relu.RELU_FEATURES[scale]
    width = ptft_relu.SAMPLE_EFFICIENCY[scale].width
    # the chapter checks that the inertia is 1 for the first K and lower for the last
    assert p.ks[0] == 1 and list(p.ks) == sorted(set(p.ks)) and p.ks[-1] <= width
    assert 1 <= p.align_k <= width


def test_paper_presets_state_the_papers_values():
    # paper 003, Sec. 1.2 (rho = 1, 0.99, 0.9) and caption of Fig. 1a (m_aux = 0.01, 1, 100)
    assert ptft_relu.PENALTY["paper"].rhos == (1.0, 0.99, 0.9)
    assert ptft_relu.PENALTY["paper"].m_aux == (0.01, 1.0, 100.0)
    # paper 003, caption of Fig. 1c: six teacher units; the alignment score at K = 6 (ours)
    assert ptft_relu.SAMPLE_EFFICIENCY["paper"].units == 6
    assert ptft_relu.RELU_FEATURES["paper"].align_k == 6
    # ours, stated in the preset (the paper states neither)
    p = ptft_relu.SAMPLE_EFFICIENCY["paper"]
    assert (p.rhos, p.magnitudes, p.ns, p.draws, p.max_steps) == (
        (1.0, 0.9), (1.0, 0.1), (8, 16, 32, 64), 2, 20_000)
    assert (p.d, p.width, p.n_aux, p.alpha, p.loss_tol) == (12, 24, 128, 1e-2, 1e-6)
