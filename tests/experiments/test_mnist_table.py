"""The presets of the MNIST chapter (paper 001, Sec. 4.2, Table 1)."""
from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from transferkit.experiments.mnist_table import (
    N_TASK_PAIRS,
    TABLE1,
    Table1Preset,
    draw_task_pairs,
    mnist_table_sim,
)


def test_presets_are_frozen_tuples():
    assert set(TABLE1) == {"paper", "smoke"}
    for p in TABLE1.values():
        assert isinstance(p, Table1Preset)
        assert isinstance(p.ns, tuple) and isinstance(p.other_c, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        TABLE1["paper"].pairs = 3


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_preset_is_valid(scale):
    p = TABLE1[scale]
    pairs = draw_task_pairs(p.pairs, p.seed)
    assert pairs.shape == (p.pairs, 4) and p.pairs <= N_TASK_PAIRS
    assert all(len(set(row)) == 4 for row in pairs.tolist())   # four distinct digits
    assert p.pairs >= 3                    # an R^2 across pairs needs more than two points
    assert all(isinstance(n, int) and n >= 1 for n in p.ns) and list(p.ns) == sorted(p.ns)
    assert p.draws >= 2 and p.reps >= 2    # standard deviations over draws and repetitions
    assert p.m >= 1 and p.delta >= 1       # Thm 4.2: 1 <= m <= d, delta >= 1
    assert p.c > 0 and all(c > 0 and c != p.c for c in p.other_c)
    assert 0 < p.rcond < 1 and p.seed >= 0
    assert 1 <= p.gd_n and 1 <= p.gd_draws and 0 < p.gd_loss_tol < 1 and p.gd_max_steps >= 1
    # the notebook passes these keywords to mnist_table_sim
    assert {"m", "delta", "c", "rcond", "other_c", "seed"} <= set(
        inspect.signature(mnist_table_sim).parameters)


def test_paper_preset_is_table_1():
    p = TABLE1["paper"]
    # paper 001, Table 1 and its caption: "a mean over 10 calculations of R^2 ..., each R^2
    # is calculated from 20 points, each one representing a mean accuracy value of 25 random
    # samples"; columns n = 10, 15, 20, 25, 30; "Ours for m = 2"
    assert (p.pairs, p.draws, p.reps) == (20, 25, 10)
    assert p.ns == (10, 15, 20, 25, 30)
    assert p.m == 2
    # ours (the paper leaves them open): delta, c, the teachers' cutoff, the seed
    assert (p.delta, p.c, p.rcond, p.seed) == (1.0, 3.0, 1e-6, 0)
    assert np.array_equal(TABLE1["smoke"].ns, (10, 20, 30))
