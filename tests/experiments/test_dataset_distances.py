"""Tests for the presets of :mod:`transferkit.experiments.dataset_distances` (paper 000, Fig. 4).

The simulation itself is tested in ``tests/theory/test_distances.py``."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from transferkit._validate import check_grid, check_int
from transferkit.experiments.dataset_distances import FIG4, Fig4Preset
from transferkit.experiments.deep_linear import check_simulation_args, sample_size


def test_fig4_presets_are_frozen_tuples():
    assert set(FIG4) == {"paper", "smoke"}
    for p in FIG4.values():
        assert isinstance(p, Fig4Preset)
        for name in ("thetas", "gammas", "norms"):
            assert isinstance(getattr(p, name), tuple), name
    with pytest.raises(dataclasses.FrozenInstanceError):
        FIG4["paper"].draws = 3


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_fig4_preset_passes_the_validation_of_simulate_pairs(scale):
    p = FIG4[scale]
    # what simulate_pairs -> simulate_grid check before any computation
    check_simulation_args(p.d, p.sigma, p.depth, p.draws, p.alpha, p.seed)
    assert p.sigma > 0                                  # simulate_pairs: a finite KL
    check_grid("gamma", p.gammas, 0.0, np.inf, True)
    check_grid("theta", p.thetas, 0.0, math.pi, False)
    assert all(sample_size(g, p.d) > 2 for g in p.gammas)   # Eq. 10 divides by n - 2
    norms = np.asarray(p.norms, float)
    assert norms.ndim == 1 and np.all(np.isfinite(norms) & (norms > 0))
    check_int("w1_samples", p.w1_samples, 2)
    # the pairs of the figure: theta on [0, pi] with both ends (theta = pi transfers as well
    # as theta = 0 and is the farthest source), under- and overparameterised gammas
    assert p.thetas[0] == 0.0 and p.thetas[-1] == math.pi
    assert min(p.gammas) < 1 < max(p.gammas)


def test_fig4_paper_preset_is_the_papers_setup():
    p = FIG4["paper"]
    # paper 000, caption of Fig. 4: "the setup in Section 3": caption of Fig. 1 and App. D.1
    assert (p.depth, p.d, p.sigma) == (2, 500, 0.2)
    assert (p.alpha, p.draws) == (1e-5, 20)
    # ours (the paper states neither): 13 angles, W1 from 1000 points of each law
    assert len(p.thetas) == 13 and p.w1_samples == 1000
    assert np.array(p.thetas).tobytes() == np.linspace(0, np.pi, 13).tobytes()


def test_opposite_sign_pairs_refuses_a_bad_critical_value_and_unequal_sizes():
    """A negative critical value counted every pair as significant before."""
    from transferkit.experiments.dataset_distances import opposite_sign_pairs
    d, m, se = np.array([2.0, 1.0]), np.array([1.0, -1.0]), np.array([0.1, 0.1])
    assert opposite_sign_pairs(d, m, se, 3.0).tolist() == [[0, 1]]
    with pytest.raises(ValueError, match=r"^critical must be a finite number > 0"):
        opposite_sign_pairs(d, m, se, -1.0)
    with pytest.raises(ValueError, match=r"^distance, T_mean and T_se must hold one value"):
        opposite_sign_pairs(d, m[:1], se, 3.0)
