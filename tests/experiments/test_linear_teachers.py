"""Tests for the presets of :mod:`transferkit.experiments.linear_teachers` (paper 001, Figs. 1-3).

The simulations themselves are tested in ``tests/theory/test_linear_teachers.py`` and
``tests/figures/test_paper001.py``."""
from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import check_presets

from transferkit import theory
from transferkit._validate import check_int, check_positive, check_seed
from transferkit.experiments.linear_teachers import (
    FIG1_EIGEN_ALIGN,
    FIG2_DEPTH,
    FIG3_FROZEN,
    DepthPreset,
    EigenAlignPreset,
    FrozenPreset,
    spiked_spectrum,
)
from transferkit.models.deep_linear import balanced_weights

PRESETS = [(FIG1_EIGEN_ALIGN, EigenAlignPreset, ("ns",)),
           (FIG2_DEPTH, DepthPreset, ("depths", "alphas", "scales")),
           (FIG3_FROZEN, FrozenPreset, ("ns",))]


@pytest.mark.parametrize("presets, cls, grids", PRESETS)
def test_presets_are_frozen_tuples(presets, cls, grids):
    check_presets(presets, cls, grids, "draws")


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_fig1_preset_passes_the_validation(scale):
    p = FIG1_EIGEN_ALIGN[scale]
    lam = spiked_spectrum(p.d, p.m, p.top, p.bottom)      # validates d, m < d, top >= bottom > 0
    theory.linear_teachers.check_eigenvalues(lam)
    g = theory.linear_teachers.g_function(lam, p.delta, np.array(p.ns), c=p.c)  # delta >= 1, c > 0
    assert np.all(np.isfinite(g))
    # eigen_align_sim: every n in 1..d-1 (under-determined), increasing
    assert all(1 <= n < p.d for n in p.ns) and list(p.ns) == sorted(set(p.ns))
    check_int("draws", p.draws, 2)
    check_positive("norm", p.norm)
    check_seed("seed", p.seed)


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_fig2_preset_passes_the_validation(scale):
    p = FIG2_DEPTH[scale]
    check_int("d", p.d, 10)
    assert p.n == p.d // 10 and 1 <= p.n < p.d
    check_int("draws", p.draws, 2)
    for L in p.depths + (p.depth_b,):
        balanced_weights(np.ones((1, 3)), L)             # validates the depth (>= 1)
    assert all(a > 0 for a in p.alphas) and all(a > 0 for a in p.scales)
    assert 1.0 in p.scales                               # panel (b): the unscaled pair
    check_positive("noise_norm", p.noise_norm)
    assert 0 < p.angle_dist < 2                          # a distance of unit vectors
    check_seed("seed_a", p.seed_a)
    check_seed("seed_b", p.seed_b)


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_fig3_preset_passes_the_validation(scale):
    p = FIG3_FROZEN[scale]
    check_int("d", p.d, 2)
    assert all(1 <= n < p.d for n in p.ns) and list(p.ns) == sorted(set(p.ns))
    check_int("draws", p.draws, 2)
    assert -1 < p.cos_angle < 1
    check_seed("seed", p.seed)


def test_paper_presets_are_the_papers_values():
    # paper 001, Sec. 4.2 and caption of Fig. 1: d = 1000, m = 50, eigenvalues 1.5 vs 0.3
    p1 = FIG1_EIGEN_ALIGN["paper"]
    assert (p1.d, p1.m, p1.top, p1.bottom) == (1000, 50, 1.5, 0.3)
    assert p1.delta == math.log(100) and p1.delta >= 1   # ours; Thm 4.2 needs delta >= 1
    # paper 001, caption of Fig. 2: n = d/10, depth 7 in (b); Sec. 5.3: ||eps|| ~ 0.5, 0.1
    p2 = FIG2_DEPTH["paper"]
    assert p2.n == p2.d / 10 and p2.depth_b == 7
    assert (p2.noise_norm, p2.angle_dist) == (0.5, 0.1)
    assert max(p2.depths) == 7
    # ours (the paper states none of them): the grids the chapter prints
    assert (p1.draws, p2.d, p2.draws) == (20, 100, 20)
    p3 = FIG3_FROZEN["paper"]
    assert (p3.d, p3.draws, p3.cos_angle) == (100, 20, 0.7)
    assert max(p3.ns) <= 0.7 * p3.d


@pytest.mark.parametrize("call, match", [
    (lambda E: E.eigen_align_sim(np.ones(6), 2, [3.5], 2), r"^ns must be an integer in \[1, 5\]"),
    (lambda E: E.eigen_align_sim(np.ones(6), 2, [], 2), r"^ns must be a non-empty"),
    (lambda E: E.eigen_align_sim(np.ones(6), 0, [3], 2), r"^m must be an integer >= 1 and <= 5"),
    (lambda E: E.eigen_align_sim(np.ones(6), 2, [3], 2, norm=np.nan), r"^norm must be"),
    (lambda E: E.eigen_align_sim(np.ones((2, 6)), 2, [3], 2), r"^lam must be one spectrum"),
    (lambda E: E.depth_alpha_sim(10, 4, [0], [0.1], 2), r"^depths must be an integer in \[1, 2\*\*53\]"),
    (lambda E: E.depth_alpha_sim(10, 4, [2], [np.inf], 2), r"^alphas must be a finite number"),
    (lambda E: E.depth_alpha_sim(10, 10, [2], [0.1], 2), r"^n must be an integer in \[1, 9\]"),
    (lambda E: E.depth_alpha_sim(10, 4, [2], [0.1], 2, step_scale=2.0), r"^step_scale must be in \(0, 2\)"),
    (lambda E: E.depth_alpha_sim(10, 4, [2], [0.1], 2, noise_norm=-1.0), r"^noise_norm must be"),
    (lambda E: E.scaling_sim(10, 4, 2, [0.0], 2), r"^scales must be a finite number > 0"),
    (lambda E: E.scaling_sim(10, 4, 2, [1.0], 2, angle_dist=3.0), r"^angle_dist must be in \[0, 2\]"),
    (lambda E: E.scaling_sim(10, 4, 0, [1.0], 2), r"^depth must be an integer >= 1"),
    (lambda E: E.frozen_sim(10, [4], 2.0, 2), r"^cos_angle must be in \[-1, 1\]"),
    (lambda E: E.frozen_sim(10, [4], 0.5, 0), r"^draws must be an integer >= 1"),
    (lambda E: E.frozen_sim(10, [4], 0.5, 2, seed=-1), r"^seed must be an integer >= 0"),
    (lambda E: E.frozen_sim(10, [4], 0.5, 2, loss_tol=0.0), r"^loss_tol must be"),
    (lambda E: E.frozen_sim(10, [4], 0.5, 2, init_scale=0.0), r"^init_scale must be"),
    (lambda E: E.frozen_sim(10, [12], 0.5, 2), r"^ns must be an integer in \[1, 9\]")])
def test_simulations_refuse_bad_input_before_any_work(call, match, monkeypatch):
    """Paper 001's simulations check their arguments before the sweep starts (``run`` is a
    tripwire).  Before, n = 4.5 and depths = [2.5] were truncated by int(), cos_angle = 2
    became NaN targets ("X and y must be finite" from deep inside), scales = [0] a zero
    source ("theta_s must be nonzero"), and n >= d a singular design after the work began."""
    from transferkit.experiments import linear_teachers as E

    def tripwire(*a, **k):
        raise AssertionError("work started before the input was checked")
    monkeypatch.setattr(E, "run", tripwire)
    with pytest.raises(ValueError, match=match):
        call(E)
