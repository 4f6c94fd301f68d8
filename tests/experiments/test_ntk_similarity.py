"""The presets of the NTK task-similarity chapter (paper 002, Sec. 6, Thms 1-2)."""
from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest
from _helpers import assert_same_computation, check_presets

from transferkit.experiments.ntk_similarity import (
    NTK_SIMILARITY,
    NTK_SIMILARITY_WIDTH,
    NTK_SIMILARITY_WIDTH_FULL,
    THM2_RATE,
    ExcessDecay,
    ExcessFit,
    NtkSimilarityPreset,
    NtkWidthPreset,
    WidthSweepResult,
    fit_excess_decay,
    transfer_experiment,
    width_sweep,
)
from transferkit.models.relu import init_ntk


def test_presets_are_frozen_tuples():
    check_presets(NTK_SIMILARITY, NtkSimilarityPreset, ("seeds", "target_tasks"), "m")


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
                                                                        (0, 1, 2), 10_000)
    assert paper.d > smoke.d and paper.n > smoke.n and paper.m > smoke.m
    for f in ("kappa", "symmetric", "tol", "record_every", "sphere_fit", "source_task",
              "target_tasks"):
        assert getattr(paper, f) == getattr(smoke, f), f


# ---------------------------------------------------------------------------------------
# Thm 2 against width (issue 17): width_sweep, fit_excess_decay
# ---------------------------------------------------------------------------------------


def tiny_tasks(d=6, n=5):
    """P and two targets on the unit sphere, random labels +-1 (fixed seed)."""
    rng = np.random.default_rng(3)

    def one():
        X = rng.standard_normal((n, d))
        return X / np.linalg.norm(X, axis=1, keepdims=True), rng.choice([-1.0, 1.0], n)

    XP, yP = one()
    return XP, yP, {"A": one(), "B": one()}


TINY = dict(widths=(16, 32, 64), seeds=(0, 1), tol=1e-3, max_steps=3000, record_every=10,
            progress=False)


def test_width_presets():
    assert set(NTK_SIMILARITY_WIDTH) == {"paper", "smoke"}
    full = NTK_SIMILARITY_WIDTH_FULL
    assert full.widths == (512, 1024, 2048, 4096, 8192, 16384) and len(full.seeds) == 3
    for p in list(NTK_SIMILARITY_WIDTH.values()) + [full]:
        assert isinstance(p, NtkWidthPreset) and isinstance(p.widths, tuple)
        assert len(p.widths) >= 3                       # the fit needs three widths
        assert list(p.widths) == sorted(set(p.widths)) and all(w % 2 == 0 for w in p.widths)
        assert len(set(p.seeds)) == len(p.seeds) >= 2 and 0 < p.tol < 1e-3
    paper = NTK_SIMILARITY_WIDTH["paper"]
    assert set(paper.widths) <= set(full.widths) and paper.seeds == full.seeds
    assert paper.tol == full.tol and paper.max_steps == full.max_steps
    with pytest.raises(dataclasses.FrozenInstanceError):
        paper.widths = (2,)


def test_width_sweep_cache_and_seed(tmp_path):
    XP, yP, tasks = tiny_tasks()
    a = width_sweep(XP, yP, tasks, directory=tmp_path, **TINY)
    assert isinstance(a, WidthSweepResult)
    assert a.dev.shape == a.excess.shape == (3, 2, 2) and a.converged.shape == (3, 2)
    assert a.names == ("A", "B") and a.pre_converged.shape == (3, 2)
    np.testing.assert_allclose(a.excess, a.dev / a.thm2[:, None] - 1)
    # the leading term is the closed form of transfer_experiment at any width
    ref = transfer_experiment(XP, yP, tasks, m=32, seeds=(0, 1), tol=1e-3, max_steps=3000,
                              record_every=10, device="cpu")
    np.testing.assert_allclose(a.thm2, [ref.tasks[k].thm2 for k in ("A", "B")])
    assert_same_computation(a.dev[1], np.stack([ref.tasks[k].dev for k in ("A", "B")]))
    # the cache returns the same result, without computing
    b = width_sweep(XP, yP, tasks, directory=tmp_path, **TINY)
    for f in dataclasses.fields(WidthSweepResult):
        if f.name != "seconds":
            np.testing.assert_array_equal(getattr(a, f.name), getattr(b, f.name), err_msg=f.name)
    assert len(list(tmp_path.rglob("*.npz"))) == 3                  # one cell per width
    # same seed, same numbers, without the cache
    c = width_sweep(XP, yP, tasks, cache=False, **TINY)
    np.testing.assert_array_equal(a.dev, c.dev)
    # another seed, other numbers (a batch stops together: the other seed may move too)
    d = width_sweep(XP, yP, tasks, cache=False, **{**TINY, "seeds": (5, 1)})
    assert not np.allclose(a.dev[:, :, 0], d.dev[:, :, 0], rtol=1e-3)


def test_fit_excess_decay_recovers_a_power_law():
    widths = np.array([256, 512, 1024, 2048])
    thm2 = np.array([1.0, 2.0, 3.0])
    mean = np.stack([0.5 * widths ** -0.5, 0.2 * widths ** -0.25, np.full(4, 1e-3)], 1)
    mean[2, 2] = -1e-3                                  # task C: a negative mean excess
    noise = np.array([1.01, 0.99])
    excess = mean[..., None] * noise
    excess[2, 2] = [-1e-3, -1e-3]
    dev = (1 + excess) * thm2[None, :, None]
    conv = np.ones((4, 3), bool)
    res = WidthSweepResult(widths=widths, seeds=(0, 1), names=("A", "B", "C"), thm2=thm2,
                           scratch=thm2, dev=dev, dev_scratch=dev, excess=excess,
                           excess_scratch=excess, atol=np.zeros((4, 3)),
                           flips=np.zeros((4, 3, 2)), steps=np.ones((4, 3, 2), int),
                           steps_scratch=np.ones((4, 3, 2), int), converged=conv,
                           pre_converged=np.ones((4, 2), bool), seconds=np.ones(4))
    fd = fit_excess_decay(res)
    assert isinstance(fd, ExcessDecay) and fd.rate == THM2_RATE == 0.25
    assert isinstance(fd.fits["A"], ExcessFit)
    assert fd.fits["A"].exponent == pytest.approx(0.5, abs=1e-9)
    assert fd.fits["B"].exponent == pytest.approx(0.25, abs=1e-9)
    assert fd.fits["A"].amplitude == pytest.approx(0.5 * noise.mean())
    assert set(fd.skipped) == {"C"} and "1024" in fd.skipped["C"]
    # widths where a run did not converge are left out; fewer than three: skipped
    conv[3, 0] = conv[2, 1] = conv[1, 1] = False
    fd = fit_excess_decay(dataclasses.replace(res, converged=conv), scratch=True)
    np.testing.assert_array_equal(fd.fits["A"].widths, [256, 512, 1024])
    assert "B" in fd.skipped and "converged" in fd.skipped["B"]


@pytest.mark.parametrize("kw, name", [
    (dict(widths=(16, 31)), "widths"),
    (dict(widths=(16, 16, 32)), "widths"),
    (dict(widths=(0, 16)), "widths"),
    (dict(widths=()), "widths"),
    (dict(seeds=(-1,)), "seeds"),
    (dict(tol=0.0), "tol"),
    (dict(max_steps=0), "max_steps"),
    (dict(kappa=-1.0), "kappa"),
    (dict(record_every=0), "record_every"),
])
def test_width_sweep_bad_input(kw, name):
    XP, yP, tasks = tiny_tasks()
    with pytest.raises(ValueError, match=name):
        width_sweep(XP, yP, tasks, **{**TINY, "cache": False, **kw})


def test_width_sweep_bad_tasks():
    XP, yP, tasks = tiny_tasks()
    with pytest.raises(ValueError, match="tasks"):
        width_sweep(XP, yP, {}, **{**TINY, "cache": False})
    with pytest.raises(ValueError, match="tasks"):
        width_sweep(XP, yP, {"A": tasks["A"][0]}, **{**TINY, "cache": False})
    with pytest.raises(ValueError, match="XP"):
        width_sweep(2 * XP, yP, tasks, **{**TINY, "cache": False})
    with pytest.raises(ValueError, match="result"):
        fit_excess_decay({"excess": 1})
