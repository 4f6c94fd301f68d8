"""The presets of the NTK task-similarity chapter (paper 002, Sec. 6, Thms 1-2)."""
from __future__ import annotations

import dataclasses
import inspect

import pytest

from transferkit.experiments.ntk_similarity import (
    NTK_SIMILARITY,
    NtkSimilarityPreset,
    transfer_experiment,
)
from transferkit.models.relu import init_ntk


def test_presets_are_frozen_tuples():
    assert set(NTK_SIMILARITY) == {"paper", "smoke"}
    for p in NTK_SIMILARITY.values():
        assert isinstance(p, NtkSimilarityPreset)
        assert isinstance(p.seeds, tuple) and isinstance(p.target_tasks, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        NTK_SIMILARITY["paper"].m = 3


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_preset_is_valid(scale):
    p = NTK_SIMILARITY[scale]
    W0, A = init_ntk(p.d, p.m, p.kappa, p.seeds, symmetric=p.symmetric, device="cpu")
    assert W0.shape == (len(p.seeds), p.d, p.m)        # m even for the symmetric init
    assert len(set(p.seeds)) == len(p.seeds) >= 2       # standard errors over initialisations
    assert 1 <= p.d <= 784 and p.d < p.sphere_fit <= 60_000 and p.n >= 2
    assert 0 < p.tol < 1 and p.max_steps >= 1 and p.record_every >= 1
    assert {"m", "kappa", "seeds", "symmetric", "tol", "max_steps", "record_every"} <= set(
        inspect.signature(transfer_experiment).parameters)
    # the tasks: (data set, a, b, draw) with two distinct labels; distinct names
    specs = [p.source_task] + [t[1:] for t in p.target_tasks]
    for source, a, b, draw in specs:
        assert source in ("mnist", "fashion") and {a, b} <= set(range(10)) and a != b
        assert draw >= 0
    names = [t[0] for t in p.target_tasks]
    assert len(set(names)) == len(names)
    # the swapped-label task is the new-images task with a and b exchanged at the same draw
    tasks = {t[0]: t[1:] for t in p.target_tasks}
    src, a, b, draw = tasks["MNIST 0/1 (new images)"]
    assert tasks["MNIST 0/1 swapped labels"] == (src, b, a, draw)
    assert p.source_task[:3] == (src, a, b) and p.source_task[3] != draw   # other images


def test_presets_are_ours_and_paper_is_the_larger():
    # paper 002 has no numerical experiment for Sec. 6: nothing to compare with the paper;
    # the paper scale is the larger run, the protocol is the same at both scales
    paper, smoke = NTK_SIMILARITY["paper"], NTK_SIMILARITY["smoke"]
    assert (paper.d, paper.n, paper.m, paper.seeds, paper.max_steps) == (64, 80, 1024,
                                                                        (0, 1, 2), 3000)
    assert paper.d > smoke.d and paper.n > smoke.n and paper.m > smoke.m
    for f in ("kappa", "symmetric", "tol", "record_every", "sphere_fit", "source_task",
              "target_tasks"):
        assert getattr(paper, f) == getattr(smoke, f), f
