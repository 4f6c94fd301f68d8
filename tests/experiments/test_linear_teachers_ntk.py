"""Tests for the Sec. 6 experiment of :mod:`transferkit.experiments.linear_teachers` (paper 001,
Thm 6.1, Cors. 6.2-6.3): its presets and a tiny run of :func:`ntk_finetune_sim`."""
from __future__ import annotations

import numpy as np
import pytest
from _helpers import assert_same, check_presets

from transferkit._validate import check_int, check_positive, check_seed
from transferkit.experiments.linear_teachers import (
    SEC6_NTK,
    NtkFinetunePreset,
    NtkFinetuneResult,
    ntk_finetune_sim,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def test_presets_are_frozen_tuples():
    check_presets(SEC6_NTK, NtkFinetunePreset, ("ns", "distances", "widths", "readings"), "draws")


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_preset_passes_the_validation(scale):
    p = SEC6_NTK[scale]
    check_int("d", p.d, 2)
    check_int("n_source", p.n_source, 1)
    assert list(p.ns) == sorted(set(p.ns)) and min(p.ns) >= 2
    assert list(p.distances) == sorted(set(p.distances))
    assert p.distances[0] == 0 and 0 <= min(p.distances) and max(p.distances) <= 2   # unit teachers
    assert list(p.widths) == sorted(set(p.widths)) and all(w % 2 == 0 for w in p.widths)
    assert len(p.widths) >= 2                          # the width check needs two widths
    check_int("draws", p.draws, 2)                     # a standard error over draws
    check_positive("kappa", p.kappa)
    for kappa, symmetric in p.readings:
        check_positive("kappa", kappa)
        assert isinstance(symmetric, bool)
    assert any(not s for _, s in p.readings)           # the paper's independent a_r is run
    check_int("reading_width", p.reading_width, 2)
    check_int("n_test", p.n_test, 100)
    assert 0 < p.tol < 1
    check_int("max_steps", p.max_steps, 1)
    check_seed("seed", p.seed)


TINY = dict(d=5, n_source=40, ns=(8, 16), distances=(0.0, 0.5, 2.0), widths=(64, 256), draws=2,
            readings=((0.1, False),), reading_width=64, n_test=400, seed=1)


@pytest.fixture(scope="module")
def tiny():
    return ntk_finetune_sim(**TINY, cache=False, progress=False)


def test_tiny_run_shapes_and_bookkeeping(tiny):
    r = tiny
    assert isinstance(r, NtkFinetuneResult)
    C, S, N, D = 3, 2, 2, 3
    assert r.configs == ((64, 1.0, True), (256, 1.0, True), (64, 0.1, False))
    for name in ("risk", "risk_se", "lead", "cor62", "move", "flips", "converged"):
        assert getattr(r, name).shape == (C, S, N, D), name
    assert r.cor62_linear.shape == (S, N, D) and r.cor63.shape == (N, D)
    assert r.pre_err.shape == (C, S, N) and r.risk_pre.shape == (C, S, D)
    assert r.converged.all() and r.pre_converged.all()
    assert np.all((r.risk >= 0) & (r.risk <= 1)) and np.all(r.risk_se > 0)
    n = np.asarray(TINY["ns"])
    # distance 0: the target is the source, y~ = -(pretraining error): Eq. 11 is 2 pre_term / sqrt n
    np.testing.assert_allclose(r.lead[..., 0], 2 * r.pre_term / np.sqrt(n), rtol=1e-9)
    np.testing.assert_allclose(r.lead, 2 * r.cor62 / np.sqrt(n)[:, None], rtol=1e-12)
    # triangle inequality in the H^-1 norm: y~ = X (theta_T - theta_S) - e
    assert np.all(r.cor62 <= r.cor62_linear + r.pre_term[..., None] + 1e-9)
    assert np.all(r.cor62_linear <= 2 * np.asarray(TINY["distances"]) + 1e-9)   # Cor. 6.2, sharp
    np.testing.assert_allclose(r.cor63, 6 * np.asarray(TINY["distances"]) / np.sqrt(n)[:, None])
    # the paired symmetric initialisation starts at f = 0 and pretrains close to theta_S
    assert np.all(r.pre_err_pop[:2] < 0.25 / np.sqrt(TINY["d"]))


def test_tiny_run_is_lazy_and_wider_is_lazier(tiny):
    r = tiny
    # Arora et al. / paper 002 Thm 2: fine-tuning moves W by about sqrt(y~^T H^-1 y~)
    rel = np.abs(r.move[:2, ..., 1:] / r.cor62[:2, ..., 1:] - 1)
    assert rel.max() < 0.3
    assert r.flips[1].mean() < r.flips[0].mean()        # m = 256 flips fewer activations than 64
    assert np.all(r.move_pre[:2] < 0.2 * r.init_norm[:2])      # kappa = 1: small beside W_init


def test_same_seed_same_numbers(tiny, tmp_path):
    kw = dict(TINY, widths=(64,), readings=(), draws=1)
    a = ntk_finetune_sim(**kw, cache=False, progress=False)
    assert_same(a.risk, tiny.risk[:1, :1])
    assert_same(a.move, tiny.move[:1, :1])
    b = ntk_finetune_sim(**kw, directory=tmp_path, progress=False)     # through the cache
    c = ntk_finetune_sim(**kw, directory=tmp_path, progress=False)
    assert_same(b.lead, c.lead)
    assert_same(a.lead, b.lead)


@pytest.mark.parametrize("bad, match", [(dict(distances=(0.0, 2.5)), "distances"),
                                        (dict(widths=(63,)), "even"),
                                        (dict(ns=(0,)), "ns"),
                                        (dict(readings=((0.0, False),)), "kappa")])
def test_validation(bad, match):
    with pytest.raises(ValueError, match=match):
        ntk_finetune_sim(**dict(TINY, **bad), cache=False, progress=False)
