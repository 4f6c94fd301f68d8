"""Paper 003, Fig. 1c (STL against PT+FT, ReLU) through transferkit.sweep: cache, same numbers;
the chapter's presets (Figs. 1a-c of paper 003, App. E.2 / G of paper 004)."""
import dataclasses
import math

import numpy as np
import pytest
import torch

from _helpers import assert_same, assert_same_computation, trained_again

from transferkit import models, stats, theory
from transferkit.experiments import ptft_relu
from transferkit.models.relu import teacher_pair
from transferkit.streams import keyed_rng

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
           (ptft_relu.RELU_FEATURES, ptft_relu.ReluFeaturesPreset),
           (ptft_relu.OVERLAP, ptft_relu.OverlapPreset))


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


@pytest.mark.parametrize("scale", SCALES + ["full"])
def test_sample_efficiency_preset_is_valid(scale):
    p = (ptft_relu.SAMPLE_EFFICIENCY_FULL if scale == "full"
         else ptft_relu.SAMPLE_EFFICIENCY[scale])
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
    # the steps of the sensitivity section: other than the chapter's (whose students it
    # takes from Fig. 1c), distinct, > 0
    assert p.lr_scale > 0 and all(s > 0 for s in p.step_ladder)
    assert p.lr_scale not in p.step_ladder and len(set(p.step_ladder)) == len(p.step_ladder)
    assert p.step_check > 0 and p.step_check != p.lr_scale


@pytest.mark.parametrize("scale", SCALES)
def test_relu_features_preset_is_valid(scale):
    p = ptft_relu.RELU_FEATURES[scale]
    width = ptft_relu.SAMPLE_EFFICIENCY[scale].width
    # the chapter checks that the inertia is 1 for the first K and lower for the last
    assert p.ks[0] == 1 and list(p.ks) == sorted(set(p.ks)) and p.ks[-1] <= width
    assert 1 <= p.align_k <= width
    assert len(p.rescale_factors) > 0 and all(s > 0 for s in p.rescale_factors)
    assert p.nested_magnitude > 0
    # the MTL students are the first draws of Fig. 1c at some of its n
    grid = ptft_relu.SAMPLE_EFFICIENCY[scale]
    assert set(p.mtl_ns) <= set(grid.ns) and 1 <= p.mtl_draws <= grid.draws
    # the chapter asserts its claims at rho = 1, m = 1, the first cell
    assert p.mtl_cells[0] == (1.0, 1.0)
    # the STL students of Figs. 6a-b and 8a: Fig. 1c's n first (Fig. 8a is shown there and
    # checked against Fig. 1c's students), then larger n, with a cap no smaller than Fig. 1c's
    assert p.cluster_ns[:len(grid.ns)] == grid.ns
    assert list(p.cluster_ns) == sorted(set(p.cluster_ns))
    assert p.cluster_max_steps >= grid.max_steps
    assert all(-1 <= rho <= 1 and m > 0 for rho, m in p.mtl_cells)
    # Fig. 6a's dense teacher: known readout laws, a cap no smaller than Fig. 1c's
    assert p.dense_units >= 1 and len(p.dense_readouts) >= 1
    assert set(p.dense_readouts) <= set(ptft_relu.DENSE_READOUTS)
    assert p.dense_max_steps >= grid.max_steps


def test_paper_presets_state_the_papers_values():
    # paper 003, Sec. 1.2 (rho = 1, 0.99, 0.9) and caption of Fig. 1a (m_aux = 0.01, 1, 100)
    assert ptft_relu.PENALTY["paper"].rhos == (1.0, 0.99, 0.9)
    assert ptft_relu.PENALTY["paper"].m_aux == (0.01, 1.0, 100.0)
    # paper 003, caption of Fig. 1c: six teacher units; the alignment score at K = 6 (ours)
    assert ptft_relu.SAMPLE_EFFICIENCY["paper"].units == 6
    assert ptft_relu.RELU_FEATURES["paper"].align_k == 6
    # paper 004, App. E.2.3 and the captions of Figs. 6f-g, 8b: rescaling factors 0.1, 1, 10
    assert ptft_relu.RELU_FEATURES["paper"].rescale_factors == (0.1, 1.0, 10.0)
    # paper 004, App. E.2.1: a teacher of "many (1000) units"; both readout laws (ours)
    assert ptft_relu.RELU_FEATURES["paper"].dense_units == 1000
    assert ptft_relu.RELU_FEATURES["paper"].dense_readouts == ptft_relu.DENSE_READOUTS
    # ours, stated in the preset (the paper states neither)
    p = ptft_relu.SAMPLE_EFFICIENCY["paper"]
    assert (p.rhos, p.magnitudes, p.ns, p.draws, p.max_steps, p.pre_max_steps) == (
        (1.0, 0.9), (1.0, 0.1, 0.03, 0.01), (8, 16, 32, 64), 8, 50_000, 1_000_000)
    assert (p.d, p.width, p.alpha, p.loss_tol, p.lr_scale) == (12, 24, 1e-2, 1e-6, 0.5)
    # paper 004, App. D: 1024 auxiliary samples, main-task samples up to 1024 (the full
    # protocol, for a cluster)
    assert p.n_aux == 1024
    full = ptft_relu.SAMPLE_EFFICIENCY_FULL
    assert full.n_aux == 1024 and full.ns[-1] == 1024 and full.units == 6
    assert full.rhos == p.rhos and full.magnitudes == p.magnitudes and full.draws >= 8
    # issue 18: at least 8 draws and the magnitudes where the penalty predicts a reversal
    assert p.draws >= 8 and {0.03, 0.01} <= set(p.magnitudes)


# ------------------------------------------------------- the grid of Fig. 1c (issue 18)

GP = ptft_relu.SampleEfficiencyPreset(rhos=(1.0, 0.9), magnitudes=(1.0, 0.03), ns=(4, 8), draws=2,
                                      max_steps=200, pre_max_steps=300, d=6, width=5, units=2,
                                      n_aux=16, n_test=30, seed=1)


@pytest.fixture(scope="module")
def grid(one_thread, cache):
    return ptft_relu.run_sample_efficiency_grid(GP, directory=cache, progress=False)


def test_grid_cells_are_the_single_runs(grid, one_thread, monkeypatch):
    """Each (rho, m) of the grid gives the numbers of run_sample_efficiency with the same
    parameters (same seed, same numbers), whatever the grid around it; the single run
    pretrains afresh at rho = 0.9, m = 0.03 (the grid's pretraining, kept in memory, came
    from its first cell, rho = 1, m = 1): pretraining depends on neither."""
    monkeypatch.setattr(ptft_relu, "_PRETRAINED", {})
    assert list(grid) == [(1.0, 1.0), (1.0, 0.03), (0.9, 1.0), (0.9, 0.03)]
    args = dict(d=6, ns=[4, 8], draws=2, width=5, units=2, n_aux=16, n_test=30, seed=1,
                max_steps=200, pre_max_steps=300, progress=False, cache=False)
    assert_same(ptft_relu.run_sample_efficiency(rho=0.9, magnitude=0.03, **args), grid[0.9, 0.03])
    # pretraining depends on neither rho nor m: the same in every cell
    for r in grid.values():
        np.testing.assert_array_equal(r.W_pre, grid[1.0, 1.0].W_pre)
        assert r.pre_steps.shape == (2,) and np.all(r.pre_steps <= 300)
        assert np.array_equal(r.pre_converged, r.pre_steps < 300) or np.all(r.pre_converged)


def test_grid_second_run_loads_the_cache(grid, cache, monkeypatch):
    monkeypatch.setattr(ptft_relu, "train_units", trained_again)
    again = ptft_relu.run_sample_efficiency_grid(GP, directory=cache, progress=False)
    assert list(again) == list(grid)
    for k in grid:
        assert_same(again[k], grid[k])


def test_pretraining_memory_does_not_change_the_numbers(se, one_thread, monkeypatch):
    """Pretraining kept in memory between cells gives the numbers of a fresh pretraining."""
    monkeypatch.setattr(ptft_relu, "_PRETRAINED", {})
    assert_same(ptft_relu.run_sample_efficiency(**P, cache=False), se)


@pytest.mark.parametrize("name, value", [
    ("rho", 1.5), ("rho", float("nan")), ("magnitude", 0.0), ("magnitude", -1.0), ("ns", []),
    ("n", [4, 0]), ("draws", 0), ("width", 0), ("d", 3), ("n_aux", 0), ("n_test", 1),
    ("alpha", 0.0), ("gamma", -1e-2), ("loss_tol", 0.0), ("loss_tol", 2.0), ("max_steps", 0),
    ("pre_max_steps", 0), ("seed", -1), ("lr_scale", 0.0), ("lr_scale", float("inf"))])
def test_bad_input_names_the_parameter(name, value):
    kwargs = {**P, "cache": False}
    kwargs["ns" if name == "n" else name] = value
    with pytest.raises(ValueError, match=name):
        ptft_relu.run_sample_efficiency(**kwargs)


def test_lr_scale_reaches_every_trainer(one_thread, monkeypatch):
    """The step of gradient descent (lr_scale, a choice the papers leave open) is the one
    given, for pretraining, STL, PT+FT and MTL, the nested tasks, the initialisation scales
    and the dense teacher: no trainer silently keeps the default."""
    seen = []

    def recording(trainer):
        def wrapped(*args, lr_scale=0.5, **kwargs):
            seen.append(lr_scale)
            return trainer(*args, lr_scale=lr_scale, **kwargs)
        return wrapped

    monkeypatch.setattr(ptft_relu, "train_units", recording(models.relu.train_units))
    monkeypatch.setattr(ptft_relu, "train_units_mtl", recording(models.relu.train_units_mtl))
    monkeypatch.setattr(ptft_relu, "_PRETRAINED", {})
    kw = {k: v for k, v in P.items() if k != "pre_max_steps"}
    small = dataclasses.replace(NESTED_PRESET, lr_scale=0.3)
    ptft_relu.run_sample_efficiency(**P, mtl=True, lr_scale=0.3, cache=False)
    assert len(seen) == 4                           # pretraining, STL, PT+FT, MTL
    ptft_relu.run_sample_efficiency_grid(dataclasses.replace(GP, lr_scale=0.3), cache=False,
                                         progress=False)
    ptft_relu.run_nested_rescaling(small, (0.5,), cache=False, progress=False)
    ptft_relu.run_nested_mtl(small, ptft_relu.ReluFeaturesPreset(mtl_ns=(4,), mtl_draws=1),
                             cache=False, progress=False)
    ptft_relu.run_stl_init_scale(**kw, alphas=[1e-2], lr_scale=0.3, cache=False)
    kw.pop("rho"), kw.pop("magnitude")
    ptft_relu.run_stl_dense(**kw, alphas=[1e-2], readouts=["gaussian"], dense_units=10,
                            lr_scale=0.3, cache=False)
    assert len(seen) > 10 and set(seen) == {0.3}, seen
    # and it changes the networks (same draws, another step)
    a = ptft_relu.run_stl_init_scale(**kw, rho=1.0, magnitude=1.0, alphas=[1e-2], cache=False)
    b = ptft_relu.run_stl_init_scale(**kw, rho=1.0, magnitude=1.0, alphas=[1e-2], lr_scale=0.3,
                                     cache=False)
    assert not np.array_equal(a.runs[0].W, b.runs[0].W)


def test_bad_grid_preset_names_the_parameter():
    with pytest.raises(TypeError, match="preset"):
        ptft_relu.run_sample_efficiency_grid({"rhos": (1.0,)})
    with pytest.raises(ValueError, match="magnitude"):
        ptft_relu.run_sample_efficiency_grid(dataclasses.replace(GP, magnitudes=(1.0, 0.0)))
    with pytest.raises(ValueError, match="rho"):
        ptft_relu.run_sample_efficiency_grid(dataclasses.replace(GP, rhos=(2.0,)))


def test_penalty_ratio_is_the_issues_prediction():
    """The reuse / fresh penalty ratios quoted in issue 18 for rho = 0.9 (gamma = 1e-2), and
    pretraining helping at every magnitude for rho = 1."""
    r = ptft_relu.penalty_ratio(np.array([0.1, 0.03, 0.01]), 0.9, 1e-2)
    np.testing.assert_allclose(r, [1.03, 3.37, 10.5], rtol=5e-3)
    assert np.all(ptft_relu.penalty_ratio(np.array([1.0, 0.1, 0.03]), 1.0, 1e-2) < 1)
    for name, args in [("magnitude", (0.0, 0.9, 1e-2)), ("rho", (0.1, 1.2, 1e-2)),
                       ("gamma", (0.1, 0.9, 0.0)), ("m0", (0.1, 0.9, 1e-2, -1.0))]:
        with pytest.raises(ValueError, match=name):
            ptft_relu.penalty_ratio(*args)


def test_stl_init_scale_reproduces_the_stl_students_and_caches(se, cache, one_thread, monkeypatch):
    """Paper 004 Fig. 8a (reduced): at the alpha of run_sample_efficiency the STL students
    are exactly those of Fig. 1c; another alpha scales the same initial normals."""
    kw = {k: v for k, v in P.items() if k != "pre_max_steps"}
    alpha0 = 1e-2                                           # run_sample_efficiency's default
    r = ptft_relu.run_stl_init_scale(**kw, alphas=[alpha0, 1.0], directory=cache)
    assert isinstance(r, ptft_relu.StlInitScaleResult)
    np.testing.assert_array_equal(r.alphas, [alpha0, 1.0])
    for f in ("error", "converged", "W", "a"):
        np.testing.assert_array_equal(getattr(r.runs[0], f), getattr(se.stl, f), err_msg=f)
    np.testing.assert_array_equal(r.X_test, se.X_test)
    np.testing.assert_array_equal(r.teacher_dirs, [T[2] for T in se.teachers])
    np.testing.assert_allclose(r.W0[1], r.W0[0] / alpha0, rtol=1e-14)
    assert not np.array_equal(r.runs[1].W, r.runs[0].W)
    monkeypatch.setattr(ptft_relu, "train_units", trained_again)
    assert_same(ptft_relu.run_stl_init_scale(**kw, alphas=[alpha0, 1.0], directory=cache), r)


@pytest.mark.parametrize("alphas, match", [([], "alphas"), ("0.1", "alphas"), ([0.1, 0.0], "alpha"),
                                           ([-1.0], "alpha")])
def test_stl_init_scale_refuses_bad_alphas(alphas, match):
    kw = {k: v for k, v in P.items() if k != "pre_max_steps"}
    with pytest.raises(ValueError, match=match):
        ptft_relu.run_stl_init_scale(**kw, alphas=alphas, cache=False)


# ------------------------------------------------- paper 004, Fig. 6a: the dense teacher

@pytest.mark.parametrize("readout", ptft_relu.DENSE_READOUTS)
def test_dense_teacher_has_its_law_and_second_moment(readout):
    """The closed form a^T K a of the teacher's mean squared output (relu_kernel) against a
    Monte Carlo mean over Gaussian inputs, within 4 standard errors; unit directions; the
    law of the readouts; the same stream, the same teacher."""
    theta, a = ptft_relu.dense_teacher(5, 300, readout, 2.5, keyed_rng(3, 0))
    assert theta.shape == (300, 5) and a.shape == (300,)
    np.testing.assert_allclose(np.linalg.norm(theta, axis=1), 1.0, rtol=1e-12)
    if readout == "positive":
        assert np.all(a > 0) and np.ptp(a) == 0
    else:
        assert (a > 0).any() and (a < 0).any()
    X = keyed_rng(4, 0).standard_normal((200_000, 5))
    f2 = (np.maximum(X @ theta.T, 0) @ a) ** 2
    assert abs(f2.mean() - 2.5) < 4 * f2.std() / math.sqrt(f2.size), (f2.mean(), f2.std())
    again = ptft_relu.dense_teacher(5, 300, readout, 2.5, keyed_rng(3, 0))
    np.testing.assert_array_equal(again[0], theta)
    np.testing.assert_array_equal(again[1], a)


@pytest.mark.parametrize("kw, err, match", [
    (dict(d=0), ValueError, "d"), (dict(units=0), ValueError, "units"),
    (dict(readout="cauchy"), ValueError, "readout"), (dict(readout=1), TypeError, "readout"),
    (dict(second_moment=0.0), ValueError, "second_moment")])
def test_dense_teacher_refuses_bad_input(kw, err, match):
    args = dict(d=4, units=10, readout="gaussian", second_moment=1.0) | kw
    rng = keyed_rng(0)
    with pytest.raises(err, match=match):
        ptft_relu.dense_teacher(**args, rng=rng)
    assert rng.standard_normal() == keyed_rng(0).standard_normal()     # nothing drawn


DENSE = {k: v for k, v in P.items() if k not in ("pre_max_steps", "rho", "magnitude")} | dict(
    dense_units=40)


@pytest.fixture(scope="module")
def dense(one_thread, cache):
    return ptft_relu.run_stl_dense(**DENSE, alphas=[1e-2, 1.0], directory=cache)


def test_dense_students_differ_from_the_sparse_ones_in_the_teacher_alone(dense, cache, one_thread):
    """Paper 004 Fig. 6a, dense teacher: the initial normals and main-task inputs are those
    of run_stl_init_scale; each student is the network train_units gives on its draw's
    dense teacher built by hand (the stream (seed, draw, *DENSE_TEACHER_KEY), scaled to the
    six-unit teacher's mean squared output), bit for bit."""
    assert isinstance(dense, ptft_relu.StlDenseResult)
    assert dense.readouts == ptft_relu.DENSE_READOUTS and dense.dense_units == 40
    sparse = ptft_relu.run_stl_init_scale(**{k: v for k, v in DENSE.items() if k != "dense_units"},
                                          rho=1.0, magnitude=1.0, alphas=[1e-2, 1.0],
                                          directory=cache)
    np.testing.assert_array_equal(dense.W0, sparse.W0)
    kw, dev = DENSE, torch.device("cpu")
    for readout in dense.readouts:
        for k, alpha in enumerate(dense.alphas):
            got = dense.student(readout, alpha)
            assert got is dense.runs[dense.readouts.index(readout)][k]
            assert got.error.shape == (2, 2) and got.W.shape == (2, 2, 5, 6)
            assert not np.array_equal(got.W, sparse.runs[k].W)
            teachers, _, _, W0, a0, _, _ = ptft_relu._task_draws(
                kw["seed"], kw["d"], 1.0, 1.0, kw["draws"], kw["width"], kw["units"],
                kw["n_aux"], kw["n_test"], alpha, dev)
            dense_t = []
            for j, T in enumerate(teachers):
                target = float(T[3] @ theory.relu.relu_kernel(T[2], T[2]) @ T[3])
                rng = keyed_rng(kw["seed"], j, *ptft_relu.DENSE_TEACHER_KEY)
                dense_t.append((None, None) + ptft_relu.dense_teacher(kw["d"], 40, readout,
                                                                      target, rng))
            X, y, nn, jj = ptft_relu._main_samples(kw["seed"], kw["d"], kw["ns"], kw["draws"],
                                                   dense_t)
            W, a, _, _, conv = models.relu.train_units(
                W0[jj].clone(), a0[jj].clone(), torch.as_tensor(X), torch.as_tensor(y),
                np.array(nn, float), loss_tol=1e-6, max_steps=kw["max_steps"])
            np.testing.assert_array_equal(got.W, W.numpy().reshape(got.W.shape))
            np.testing.assert_array_equal(got.a, a.numpy().reshape(got.a.shape))
            np.testing.assert_array_equal(got.converged, conv.numpy().reshape(2, 2))
    with pytest.raises(KeyError, match="readout"):
        dense.student("gaussian", 0.5)


def test_dense_second_run_loads_the_cache(dense, cache, monkeypatch):
    monkeypatch.setattr(ptft_relu, "train_units", trained_again)
    assert_same(ptft_relu.run_stl_dense(**DENSE, alphas=[1e-2, 1.0], directory=cache), dense)


@pytest.mark.parametrize("kw, err, match", [
    (dict(alphas=[]), ValueError, "alphas"), (dict(alphas=[0.0]), ValueError, "alpha"),
    (dict(readouts=[]), ValueError, "readouts"), (dict(readouts="gaussian"), ValueError, "readouts"),
    (dict(readouts=["cauchy"]), ValueError, "readout"), (dict(readouts=[2]), TypeError, "readout"),
    (dict(dense_units=0), ValueError, "dense_units"), (dict(ns=[]), ValueError, "ns"),
    (dict(d=3), ValueError, "d")])
def test_run_stl_dense_refuses_bad_input_before_any_training(kw, err, match, monkeypatch):
    monkeypatch.setattr(ptft_relu, "train_units", trained_again)
    args = DENSE | dict(alphas=[1e-2]) | kw
    with pytest.raises(err, match=match):
        ptft_relu.run_stl_dense(**args, cache=False)


# ----------------------------------------------- paper 004, App. E.2.3 / G: nested tasks

NESTED_PRESET = ptft_relu.SampleEfficiencyPreset(
    rhos=(0.5,), magnitudes=(1.0,), ns=(4, 8), draws=2, max_steps=200, pre_max_steps=300,
    d=6, width=5, units=2, n_aux=16, n_test=30, seed=1)


@pytest.fixture(scope="module")
def nested(one_thread, cache):
    return ptft_relu.run_nested_rescaling(NESTED_PRESET, (0.5, 2.0), directory=cache,
                                          progress=False)


def test_nested_shapes_and_labels(nested):
    r = nested
    assert r.tasks == ("nested", "disjoint")
    assert r.methods == ("STL", "PT+FT s=0.5", "PT+FT s=2")
    assert r.error.shape == r.converged.shape == r.steps.shape == (2, 3, 2, 2)
    assert r.W.shape == (2, 3, 2, 2, 5, 6) and r.a.shape == (2, 3, 2, 2, 5)
    assert r.main_dirs.shape == (2, 2, 6) and r.X_test.shape == (2, 30, 6)


def test_nested_pretraining_and_teachers_are_those_of_fig1c(nested, se):
    """The preset's values are P's: the same pretraining as run_sample_efficiency (it depends
    on neither rho nor m); the nested unit is auxiliary unit 0, the disjoint one is
    orthogonal to every auxiliary unit."""
    np.testing.assert_array_equal(nested.W_pre, se.W_pre)
    assert nested.a_pre.shape == (2, 5) and np.abs(nested.a_pre).max() > 0
    np.testing.assert_array_equal(nested.X_test, se.X_test)
    for j, T in enumerate(se.teachers):
        np.testing.assert_array_equal(nested.main_dirs[0, j], T[0][0])
        np.testing.assert_allclose(T[0] @ nested.main_dirs[1, j], 0, atol=1e-14)
        assert abs(np.linalg.norm(nested.main_dirs[1, j]) - 1) < 1e-14


def test_nested_students_are_those_trained_alone(nested, one_thread):
    """The batch of every task and method is bookkeeping: one student trained alone from its
    start (PT+FT s = 2, disjoint task, n = 8, draw 1) on its samples gets the same weights,
    and its error is the normalised test error of the one-unit teacher."""
    import torch

    from transferkit.models.relu import train_units
    t, k, i, j = 1, 2, 1, 1
    s, n = nested.scales[k - 1], int(nested.ns[i])
    rng = np.random.default_rng([NESTED_PRESET.seed, j, n])
    X = rng.standard_normal((n, 6))
    u = nested.main_dirs[t, j]
    y = np.maximum(X @ u, 0)
    tt = lambda x: torch.as_tensor(np.asarray(x)[None], dtype=torch.float64)  # noqa: E731
    W, a, _, _, conv = train_units(tt(s * nested.W_pre[j]), tt(np.full(5, NESTED_PRESET.gamma)),
                                   tt(X), tt(y), np.array([float(n)]), loss_tol=1e-6, max_steps=200)
    np.testing.assert_allclose(W[0].numpy(), nested.W[t, k, i, j], rtol=0, atol=1e-12)
    np.testing.assert_allclose(a[0].numpy(), nested.a[t, k, i, j], rtol=0, atol=1e-12)
    assert bool(conv[0]) == nested.converged[t, k, i, j]
    Xt = nested.X_test[j]
    pred = np.maximum(Xt @ nested.W[t, k, i, j].T, 0) @ nested.a[t, k, i, j]
    yt = np.maximum(Xt @ u, 0)
    assert np.isclose(((pred - yt) ** 2).mean() / yt.var(ddof=1), nested.error[t, k, i, j],
                      rtol=1e-10)


def test_nested_second_run_loads_the_cache(nested, cache, monkeypatch):
    monkeypatch.setattr(ptft_relu, "train_units", trained_again)
    assert_same(ptft_relu.run_nested_rescaling(NESTED_PRESET, (0.5, 2.0), directory=cache,
                                               progress=False), nested)


def test_nested_statistics(nested):
    from transferkit import stats
    st = ptft_relu.nested_statistics(nested)
    assert st.spread.shape == st.alignment.shape == st.pr.shape == (2, 3, 2, 2)
    assert st.ensd.shape == (2, 2, 2, 2) and st.pr_pre.shape == (2,)
    assert np.all((st.spread >= 0) & (st.spread <= 1)) and np.all(np.abs(st.alignment) <= 1)
    idx = (1, 1, 0, 1)
    W, a = nested.W[idx], nested.a[idx]
    P = W / np.linalg.norm(W, axis=1, keepdims=True)
    mean = (np.abs(a) * np.linalg.norm(W, axis=1)) @ P
    u = nested.main_dirs[1, 1]
    assert np.isclose(st.alignment[idx], mean @ u / np.linalg.norm(mean), rtol=1e-12)
    H = np.maximum(nested.X_test[1] @ W.T, 0)
    H_pre = np.maximum(nested.X_test[1] @ nested.W_pre[1].T, 0)
    assert np.isclose(st.pr[idx], stats.participation_ratio(H), rtol=1e-12)
    assert np.isclose(st.pr_pre[1], stats.participation_ratio(H_pre), rtol=1e-12)
    assert np.isclose(st.ensd[1, 0, 0, 1], stats.ensd(H_pre, H), rtol=1e-12)
    Ha, Ha_pre = H * np.abs(a), H_pre * np.abs(nested.a_pre[1])
    assert np.isclose(st.pr_readout[idx], stats.participation_ratio(Ha), rtol=1e-12)
    assert np.isclose(st.pr_pre_readout[1], stats.participation_ratio(Ha_pre), rtol=1e-12)
    assert np.isclose(st.ensd_readout[1, 0, 0, 1], stats.ensd(Ha_pre, Ha), rtol=1e-12)


@pytest.mark.parametrize("kw, match", [(dict(scales=[]), "scales"), (dict(scales="1"), "scales"),
                                       (dict(scales=[1.0, 0.0]), "scale"),
                                       (dict(scales=[1.0], magnitude=-1.0), "magnitude")])
def test_nested_refuses_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        ptft_relu.run_nested_rescaling(NESTED_PRESET, **kw, cache=False)


def test_nested_refuses_wrong_types():
    with pytest.raises(TypeError, match="preset"):
        ptft_relu.run_nested_rescaling(dataclasses.asdict(NESTED_PRESET), (1.0,), cache=False)
    with pytest.raises(TypeError, match="result"):
        ptft_relu.nested_statistics({"W": 1})


NESTED_FEATURES = ptft_relu.ReluFeaturesPreset(mtl_ns=(4, 8), mtl_draws=2)


@pytest.fixture(scope="module")
def nested_mtl(one_thread, cache):
    return ptft_relu.run_nested_mtl(NESTED_PRESET, NESTED_FEATURES, directory=cache,
                                    progress=False)


def test_nested_mtl_shapes_and_the_draws_of_the_nested_tasks(nested_mtl, nested):
    """The MTL students' draws are those of run_nested_rescaling: the same main units and
    test inputs."""
    r = nested_mtl
    assert r.tasks == ("nested", "disjoint") and list(r.ns) == [4, 8]
    assert r.error.shape == r.converged.shape == r.steps.shape == (2, 2, 2)
    assert r.W.shape == (2, 2, 2, 5, 6) and r.a.shape == r.a_aux.shape == (2, 2, 2, 5)
    np.testing.assert_array_equal(r.main_dirs, nested.main_dirs)
    np.testing.assert_array_equal(r.X_test, nested.X_test)
    np.testing.assert_array_equal(r.unit_readout, np.hypot(r.a, r.a_aux))
    assert (r.steps > 0).all() and (r.steps <= 300).all()        # the pretraining's cap


def test_nested_mtl_student_is_the_one_trained_alone(nested_mtl):
    """One MTL network written out (disjoint task, n = 8, draw 1): the draw's teachers,
    auxiliary samples and initialisation (stream (seed, draw)), its auxiliary readout
    (stream (seed, draw, 0, 1)), its main samples (stream (seed, draw, n)) labelled by the
    one-unit main teacher, trained alone on both tasks at once."""
    t, i, j, n = 1, 1, 1, 8
    p = NESTED_PRESET
    rng = np.random.default_rng([p.seed, j])
    th, a_t, mt, m_t = teacher_pair(p.d, p.units, ptft_relu.NESTED_TASKS["disjoint"], 1.0, rng)
    xa = rng.standard_normal((p.n_aux, p.d))
    W0 = p.alpha * rng.standard_normal((p.width, p.d)) / np.sqrt(p.d)
    a0 = p.alpha * rng.standard_normal(p.width)
    np.testing.assert_array_equal(mt[0], nested_mtl.main_dirs[t, j])
    x = np.random.default_rng([p.seed, j, n]).standard_normal((n, p.d))
    a_aux = p.alpha * keyed_rng(p.seed, j, *ptft_relu.MTL_READOUT_KEY).standard_normal(p.width)
    tt = lambda v: torch.as_tensor(np.asarray(v)[None], dtype=torch.float64)  # noqa: E731
    W, A, _, steps, conv = models.relu.train_units_mtl(
        tt(W0), tt(np.stack([a_aux, a0], -1)), (tt(xa), tt(x)),
        (tt(np.maximum(xa @ th.T, 0) @ a_t), tt(np.maximum(x @ mt[:1].T, 0) @ m_t[:1])),
        (np.array([p.n_aux], float), np.array([n], float)), loss_tol=p.loss_tol,
        max_steps=p.pre_max_steps)
    assert_same_computation(nested_mtl.W[t, i, j], W[0].numpy())
    assert_same_computation(nested_mtl.a[t, i, j], A[0, :, 1].numpy())
    assert_same_computation(nested_mtl.a_aux[t, i, j], A[0, :, 0].numpy())
    assert nested_mtl.converged[t, i, j] == bool(conv[0])
    assert nested_mtl.steps[t, i, j] == int(torch.as_tensor(steps)[0])
    Xt = nested_mtl.X_test[j]
    yt = np.maximum(Xt @ mt[0], 0) * m_t[0]
    pred = np.maximum(Xt @ nested_mtl.W[t, i, j].T, 0) @ nested_mtl.a[t, i, j]
    assert np.isclose(((pred - yt) ** 2).mean() / yt.var(ddof=1), nested_mtl.error[t, i, j],
                      rtol=1e-10)


def test_nested_mtl_second_run_loads_the_cache(nested_mtl, cache, monkeypatch):
    monkeypatch.setattr(ptft_relu, "train_units_mtl", trained_again)
    assert_same(ptft_relu.run_nested_mtl(NESTED_PRESET, NESTED_FEATURES, directory=cache,
                                         progress=False), nested_mtl)


def test_nested_mtl_statistics_under_both_weightings(nested_mtl):
    st = ptft_relu.nested_mtl_statistics(nested_mtl)
    for v in (st.spread, st.alignment, st.spread_main, st.alignment_main):
        assert v.shape == (2, 2, 2)
    assert np.all((st.spread >= 0) & (st.spread <= 1)) and np.all(np.abs(st.alignment) <= 1)
    idx = (0, 1, 1)
    W = nested_mtl.W[idx]
    norms = np.linalg.norm(W, axis=1)
    P_ = W / norms[:, None]
    u = nested_mtl.main_dirs[0, 1]
    for weight, spread, align in ((nested_mtl.unit_readout[idx], st.spread, st.alignment),
                                  (np.abs(nested_mtl.a[idx]), st.spread_main, st.alignment_main)):
        omega = weight * norms
        mean = omega @ P_ / omega.sum()
        assert np.isclose(spread[idx], 1 - mean @ mean, rtol=1e-10, atol=1e-14)
        assert np.isclose(align[idx], mean @ u / np.linalg.norm(mean), rtol=1e-12)
    assert not np.array_equal(st.spread, st.spread_main)     # the two weightings differ


def test_nested_mtl_refuses_bad_input():
    with pytest.raises(TypeError, match="features"):
        ptft_relu.run_nested_mtl(NESTED_PRESET, dataclasses.asdict(NESTED_FEATURES), cache=False)
    with pytest.raises(TypeError, match="preset"):
        ptft_relu.run_nested_mtl(dataclasses.asdict(NESTED_PRESET), NESTED_FEATURES, cache=False)
    with pytest.raises(ValueError, match="magnitude"):
        ptft_relu.run_nested_mtl(NESTED_PRESET, NESTED_FEATURES, magnitude=0.0, cache=False)
    with pytest.raises(ValueError, match="draws"):
        ptft_relu.run_nested_mtl(NESTED_PRESET, dataclasses.replace(NESTED_FEATURES, mtl_draws=0),
                                 cache=False)
    with pytest.raises(ValueError, match="ns"):
        ptft_relu.run_nested_mtl(NESTED_PRESET, dataclasses.replace(NESTED_FEATURES, mtl_ns=()),
                                 cache=False)
    with pytest.raises(TypeError, match="result"):
        ptft_relu.nested_mtl_statistics(NESTED_PRESET)


# ------------------------------------------------------------------- multi-task students


def test_mtl_students_beside_stl_and_ptft(se, one_thread):
    """mtl=True adds the MTL students (paper 004, App. B.2) and leaves the STL and PT+FT
    students bit for bit as without them; each MTL network is the one trained alone on its
    draw's auxiliary samples and its main samples, from the STL initialisation and an
    auxiliary readout of stream (seed, draw, 0, 1), which is not the draw's stream (seed,
    draw): numpy's SeedSequence ignores trailing zeros, as checked here."""
    assert ptft_relu.MTL_READOUT_KEY == (0, 1)
    assert (keyed_rng(3, 1, 0).standard_normal(4) == keyed_rng(3, 1).standard_normal(4)).all()
    assert not (keyed_rng(3, 1, 0, 1).standard_normal(4) == keyed_rng(3, 1).standard_normal(4)).any()
    r = ptft_relu.run_sample_efficiency(**P, mtl=True, cache=False)
    assert list(r.methods) == ["stl", "ptft", "mtl"]
    for name in ("stl", "ptft"):
        assert_same(getattr(r, name), getattr(se, name))
    assert se.mtl is None and se.stl.a_aux is None and r.mtl.a_aux.shape == r.mtl.a.shape
    np.testing.assert_array_equal(r.mtl.unit_readout, np.hypot(r.mtl.a, r.mtl.a_aux))
    np.testing.assert_array_equal(r.stl.unit_readout, np.abs(r.stl.a))
    # one network written out: n = 8, draw 1
    i, j, n = 1, 1, 8
    rng = np.random.default_rng([P["seed"], j])
    th, a_t, mt, m_t = teacher_pair(P["d"], P["units"], P["rho"], P["magnitude"], rng)
    xa = rng.standard_normal((P["n_aux"], P["d"]))
    W0 = P.get("alpha", 1e-2) * rng.standard_normal((P["width"], P["d"])) / np.sqrt(P["d"])
    a0 = P.get("alpha", 1e-2) * rng.standard_normal(P["width"])
    x = np.random.default_rng([P["seed"], j, n]).standard_normal((n, P["d"]))
    a_aux = 1e-2 * keyed_rng(P["seed"], j, 0, 1).standard_normal(P["width"])
    t = lambda v: torch.as_tensor(np.asarray(v)[None], dtype=torch.float64)  # noqa: E731
    W, A, _, _, conv = models.relu.train_units_mtl(
        t(W0), t(np.stack([a_aux, a0], -1)), (t(xa), t(x)),
        (t(np.maximum(xa @ th.T, 0) @ a_t), t(np.maximum(x @ mt.T, 0) @ m_t)),
        (np.array([P["n_aux"]], float), np.array([n], float)), loss_tol=1e-6,
        max_steps=P["pre_max_steps"])
    assert_same_computation(r.mtl.W[i, j], W[0].numpy())
    assert_same_computation(r.mtl.a[i, j], A[0, :, 1].numpy())
    assert_same_computation(r.mtl.a_aux[i, j], A[0, :, 0].numpy())
    assert r.mtl.converged[i, j] == bool(conv[0])
    with pytest.raises(TypeError, match="mtl"):
        ptft_relu.run_sample_efficiency(**P, mtl=1, cache=False)


def test_run_mtl_students_is_the_grid_at_its_draws_and_n(grid, one_thread):
    """The MTL run's STL and PT+FT students are the Fig. 1c grid's at the chosen n and first
    draws (same streams; each network trained as if alone: the weights bit for bit, the
    test error to rounding, its batched product depending on the batch)."""
    feats = dataclasses.replace(ptft_relu.RELU_FEATURES["smoke"], mtl_ns=(8,), mtl_draws=1)
    r = ptft_relu.run_mtl_students(GP, feats, cache=False, progress=False)
    assert list(r.methods) == ["stl", "ptft", "mtl"] and r.mtl.error.shape == (1, 1)
    g = grid[1.0, 1.0]
    for name in ("stl", "ptft"):
        for f in ("W", "a"):
            np.testing.assert_array_equal(getattr(getattr(r, name), f)[0, 0],
                                          getattr(getattr(g, name), f)[1, 0])
        np.testing.assert_allclose(getattr(r, name).error[0, 0], getattr(g, name).error[1, 0],
                                   rtol=1e-12)
    with pytest.raises(TypeError, match="features"):
        ptft_relu.run_mtl_students(GP, GP)
    with pytest.raises(TypeError, match="preset"):
        ptft_relu.run_mtl_students(feats, feats)


# ---------------------------------------------------------------------------
# unit_clusters (paper 004, App. E.2)
# ---------------------------------------------------------------------------


def test_unit_clusters_on_networks_built_by_hand():
    # draw 0: four units on the teacher's two directions, draw 1: on two other directions
    e = np.eye(4)
    W = np.stack([np.stack([e[0], 2 * e[0], e[1], 3 * e[1]]),
                  np.stack([e[2], e[2], e[3], e[3]])])                   # (draws, width, d)
    a = np.array([[1.0, 0.5, -2.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    teachers = np.stack([e[:2], e[:2]])                                  # (draws, units, d)
    cl = ptft_relu.unit_clusters(W, a, teachers, ks=(1, 2, 3), align_k=2)
    assert isinstance(cl, ptft_relu.UnitClusters)
    assert cl.inertia.shape == (2, 3) and cl.alignment.shape == (2,)
    np.testing.assert_array_equal(cl.ks, [1, 2, 3])
    np.testing.assert_allclose(cl.inertia[:, 0], 1.0)        # one cluster: all the variance
    np.testing.assert_allclose(cl.inertia[:, 1:], 0.0, atol=1e-12)   # two directions
    # draw 0's centres are the teacher's units; draw 1's are orthogonal to them
    np.testing.assert_allclose(cl.alignment, [1.0, 0.0], atol=1e-12)


def test_unit_clusters_is_the_loop_over_networks():
    # bit for bit the loop over networks of kmeans_inertia and alignment_score (the chapter
    # replaced such loops by this function), teacher of each network taken from its draw
    rng = np.random.default_rng(3)
    W, a = rng.standard_normal((2, 3, 7, 5)), rng.standard_normal((2, 3, 7))
    T = rng.standard_normal((3, 2, 5))
    cl = ptft_relu.unit_clusters(W, a, T, ks=(1, 2, 4), align_k=3)
    for i in range(2):
        for j in range(3):
            for k, K in enumerate((1, 2, 4)):
                assert cl.inertia[i, j, k] == stats.kmeans_inertia(W[i, j], a[i, j], K)[0]
            C = stats.kmeans_inertia(W[i, j], a[i, j], 3)[1]
            assert cl.alignment[i, j] == stats.alignment_score(C, T[j])
    # align_k among ks: its centres are reused, the same numbers
    again = ptft_relu.unit_clusters(W, a, T, ks=(1, 3), align_k=3)
    np.testing.assert_array_equal(again.alignment, cl.alignment)


@pytest.mark.parametrize("kw, match", [
    (dict(readout=np.ones((2, 3))), "readout"),
    (dict(W=np.ones((4, 3))), "W must be"),
    (dict(teacher_dirs=np.ones((3, 1, 3))), "teacher_dirs"),
    (dict(teacher_dirs=np.ones((2, 1, 4))), "teacher_dirs"),
    (dict(ks=()), "ks"),
    (dict(ks="12"), "ks"),
    (dict(ks=(1, 0)), "ks"),
    (dict(align_k=0), "align_k"),
])
def test_unit_clusters_refuses_bad_input(kw, match):
    args = dict(W=np.ones((2, 4, 3)), readout=np.ones((2, 4)), teacher_dirs=np.ones((2, 1, 3)),
                ks=(1, 2), align_k=1)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        ptft_relu.unit_clusters(**args)


# --------------------------------------------------- paper 004, Fig. 4b: shared teacher units

OV_STUDENTS = dataclasses.replace(GP, rhos=(0.0,), magnitudes=(1.0,), d=8, units=3)
OV = ptft_relu.OverlapPreset(shared=(0, 1, 3), ns=(4, 8))


@pytest.fixture(scope="module")
def overlap(one_thread, cache):
    return ptft_relu.run_overlap(OV, OV_STUDENTS, directory=cache, progress=False)


def test_overlap_teachers_share_exactly_s_units():
    T = teacher_pair(8, 3, 0.0, 1.0, np.random.default_rng(0))
    for s in range(4):
        (theta, a_aux, main, a_main), = ptft_relu.overlap_teachers([T], s)
        np.testing.assert_array_equal(theta, T[0])
        np.testing.assert_array_equal(main[:s], theta[:s])
        np.testing.assert_allclose(main @ main.T, np.eye(3), atol=1e-14)   # orthonormal units
        # the others are orthogonal to every auxiliary unit
        np.testing.assert_allclose(theta @ main[s:].T, 0, atol=1e-14)
        np.testing.assert_array_equal(a_main, np.ones(3))
        np.testing.assert_array_equal(a_aux, np.ones(3))
    with pytest.raises(ValueError, match="shared"):
        ptft_relu.overlap_teachers([T], 4)


def test_overlap_shapes(overlap):
    r = overlap
    assert list(r.shared) == [0, 1, 3] and r.units == 3 and list(r.ns) == [4, 8]
    for run in r.methods.values():
        assert run.error.shape == run.converged.shape == (3, 2, 2)
        assert run.W.shape == (3, 2, 2, 5, 8)
    for err in (r.ntk_error, r.lazy_stl_error, r.lazy_ptft_error, r.ptft_rescaled.error,
                r.lazy_ptft_rescaled_error):
        assert err.shape == (3, 2, 2) and np.all(np.isfinite(err)) and np.all(err > 0)
    assert list(r.methods) == ["stl", "ptft"]          # the rescaled run is not a method
    assert r.mtl is None and r.pre_converged.shape == r.pre_steps.shape == (2,)


def test_overlap_at_every_shared_unit_is_fig1c_at_rho_1(overlap, one_thread, monkeypatch):
    """At s = K the main teacher is the auxiliary one: the students are those of
    run_sample_efficiency at rho = 1, m = 1, bit for bit (the same draws, samples and
    pretraining); at s = 0 those of rho = 0, m = 1."""
    monkeypatch.setattr(ptft_relu, "_PRETRAINED", {})
    args = {**ptft_relu._preset_args(OV_STUDENTS), "ns": list(OV.ns), "cache": False,
            "progress": False}
    for rho, k in ((1.0, 2), (0.0, 0)):
        fig1c = ptft_relu.run_sample_efficiency(rho=rho, magnitude=1.0, **args)
        for name in ("stl", "ptft"):
            np.testing.assert_array_equal(getattr(overlap, name).error[k],
                                          getattr(fig1c, name).error)
            np.testing.assert_array_equal(getattr(overlap, name).W[k], getattr(fig1c, name).W)


def _overlap_cell_data(k, i, j):
    """The draws of OV_STUDENTS (_task_draws) and, rebuilt from scratch, the main samples
    (X, y) and test set (Xt, yt) of cell (s = OV.shared[k], n = OV.ns[i], draw j)."""
    n = int(OV.ns[i])
    draws = ptft_relu._task_draws(1, 8, 0.0, 1.0, 2, 5, 3, 16, 30, 1e-2, torch.device("cpu"))
    T, = ptft_relu.overlap_teachers([draws[0][j]], int(OV.shared[k]))
    X = np.random.default_rng([1, j, n]).standard_normal((n, 8))
    Xt = draws[5][j]                                    # the draw's test inputs
    return draws, X, np.maximum(X @ T[2].T, 0) @ T[3], Xt, np.maximum(Xt @ T[2].T, 0) @ T[3]


def _pretrained_units(j):
    """Fig. 1c's pretrained first layer of draw j at OV_STUDENTS (run afresh)."""
    args = {**ptft_relu._preset_args(OV_STUDENTS), "ns": list(OV.ns), "cache": False,
            "progress": False}
    return ptft_relu.run_sample_efficiency(rho=0.0, magnitude=1.0, **args).W_pre[j]


def test_overlap_ntk_is_kernel_regression_that_interpolates(overlap):
    """The NTK error of (s, n, draw) is that of the interpolating kernel regressor, checked
    here from scratch on the draw's samples and test inputs."""
    k, i, j = 1, 1, 1
    _, X, y, Xt, yt = _overlap_cell_data(k, i, j)
    K = theory.relu.relu_ntk_kernel(X, X)
    coef = np.linalg.solve(K, y)
    np.testing.assert_allclose(K @ coef, y, rtol=1e-9, atol=1e-9)          # interpolates
    pred = theory.relu.relu_ntk_kernel(Xt, X) @ coef
    assert np.isclose(((pred - yt) ** 2).mean() / yt.var(ddof=1), overlap.ntk_error[k, i, j],
                      rtol=1e-10)


def test_overlap_lazy_readings_are_the_tangent_kernel_solutions(overlap, one_thread,
                                                               monkeypatch):
    """The lazy STL and PT+FT errors of (s, n, draw) are those of the limit of gradient
    descent on the network linearised at the STL initialisation and at the PT+FT start (the
    pretrained units of Fig. 1c, readout gamma), checked from scratch on the draw's samples
    and test inputs; with all units shared (s = K) the lazy fine-tuning is below the lazy
    scratch training on average (pretraining found the main task's units)."""
    monkeypatch.setattr(ptft_relu, "_PRETRAINED", {})
    k, i, j = 1, 1, 0
    draws, X, y, Xt, yt = _overlap_cell_data(k, i, j)
    W_pre = _pretrained_units(j)
    gamma = OV_STUDENTS.gamma
    for (W, a), err in (((draws[3][j].numpy(), draws[4][j].numpy()), overlap.lazy_stl_error),
                        ((W_pre, np.full(5, gamma)), overlap.lazy_ptft_error),
                        ((ptft_relu.OVERLAP_LAZY_SCALE * W_pre, np.full(5, gamma)),
                         overlap.lazy_ptft_rescaled_error)):
        pred = theory.relu.tangent_kernel_solution(W, a, X, y, Xt)
        assert np.isclose(((pred - yt) ** 2).mean() / yt.var(ddof=1), err[k, i, j], rtol=1e-10)
    assert overlap.lazy_ptft_error[-1].mean() < overlap.lazy_stl_error[-1].mean()


def test_overlap_rescaled_ptft_is_ptft_from_ten_times_the_pretrained_units(overlap,
                                                                          one_thread):
    """PT+FT x 10 of (s, n, draw) is train_units from 10 W_pre with readout gamma on the
    draw's main samples: the same weights to rounding (a batch of one network)."""
    k, i, j = 2, 0, 1
    n = int(OV.ns[i])
    W_pre = _pretrained_units(j)
    _, X, y, _, _ = _overlap_cell_data(k, i, j)
    t = lambda v: torch.as_tensor(np.asarray(v, float))[None]          # noqa: E731
    W, a, _, steps, conv = models.relu.train_units(
        t(ptft_relu.OVERLAP_LAZY_SCALE * W_pre), t(np.full(5, OV_STUDENTS.gamma)), t(X), t(y),
        np.array([n]), loss_tol=OV_STUDENTS.loss_tol, max_steps=OV_STUDENTS.pre_max_steps,
        lr_scale=OV_STUDENTS.lr_scale)
    np.testing.assert_allclose(overlap.ptft_rescaled.W[k, i, j], W[0].numpy(), rtol=1e-9,
                               atol=1e-12)
    assert overlap.ptft_rescaled.converged[k, i, j] == bool(conv[0])


def test_overlap_cells_per_s_are_the_batch(overlap, one_thread):
    """One sweep cell per s (for a cluster) gives the numbers of the batch of every s."""
    per_s = ptft_relu.run_overlap(OV, OV_STUDENTS, shared_cells=True, cache=False,
                                  progress=False)
    assert_same(per_s, overlap)


def test_overlap_cells_are_cached(overlap, cache, monkeypatch):
    monkeypatch.setattr(ptft_relu, "train_units", trained_again)
    again = ptft_relu.run_overlap(OV, OV_STUDENTS, directory=cache, progress=False)
    for name in ("stl", "ptft"):
        assert_same(getattr(again, name), getattr(overlap, name))
    np.testing.assert_array_equal(again.ntk_error, overlap.ntk_error)


def test_overlap_mtl_students_are_those_of_fig1c(one_thread, monkeypatch):
    """With ``mtl`` the multi-task students at s = K are run_sample_efficiency's MTL students
    at rho = 1 (one cell of one draw)."""
    students = dataclasses.replace(OV_STUDENTS, draws=1)
    r = ptft_relu.run_overlap(dataclasses.replace(OV, shared=(3,), ns=(4,), mtl=True), students,
                              cache=False, progress=False)
    fig1c = ptft_relu.run_sample_efficiency(rho=1.0, magnitude=1.0,
                                            **{**ptft_relu._preset_args(students), "ns": [4],
                                               "mtl": True}, cache=False, progress=False)
    assert r.mtl.error.shape == (1, 1, 1)
    np.testing.assert_array_equal(r.mtl.error[0], fig1c.mtl.error)
    np.testing.assert_array_equal(r.mtl.a_aux[0], fig1c.mtl.a_aux)


def test_overlap_mtl_is_the_overlap_run_at_its_draws_and_n(overlap, one_thread):
    """run_overlap_mtl's STL and PT+FT students and NTK errors are run_overlap's at the MTL
    sizes' n and first draws (same streams; each network trained as if alone: the weights
    bit for bit, the test error to rounding); MTL students at every s; bad types refused."""
    feats = dataclasses.replace(ptft_relu.RELU_FEATURES["smoke"], mtl_ns=(8,), mtl_draws=1)
    r = ptft_relu.run_overlap_mtl(OV, OV_STUDENTS, feats, cache=False, progress=False)
    assert list(r.methods) == ["stl", "ptft", "mtl"] and r.mtl.error.shape == (3, 1, 1)
    assert r.ns.tolist() == [8] and r.shared.tolist() == list(OV.shared)
    j = list(overlap.ns).index(8)
    for name in ("stl", "ptft"):
        for f in ("W", "a"):
            np.testing.assert_array_equal(getattr(getattr(r, name), f)[:, 0, 0],
                                          getattr(getattr(overlap, name), f)[:, j, 0])
        np.testing.assert_allclose(getattr(r, name).error[:, 0, 0],
                                   getattr(overlap, name).error[:, j, 0], rtol=1e-12)
    np.testing.assert_allclose(r.ntk_error[:, 0, 0], overlap.ntk_error[:, j, 0], rtol=1e-12)
    assert np.all(np.isfinite(r.mtl.error))
    for args, match in (((OV, OV_STUDENTS, OV_STUDENTS), "features"),
                        ((feats, OV_STUDENTS, feats), "preset"),
                        ((OV, OV, feats), "students")):
        with pytest.raises(TypeError, match=match):
            ptft_relu.run_overlap_mtl(*args, cache=False)


@pytest.mark.parametrize("preset, students, err, match", [
    (ptft_relu.OverlapPreset(shared=(0, 4), ns=(4,)), OV_STUDENTS, ValueError, "shared"),
    (ptft_relu.OverlapPreset(shared=(-1,), ns=(4,)), OV_STUDENTS, ValueError, "shared"),
    (ptft_relu.OverlapPreset(shared=(), ns=(4,)), OV_STUDENTS, ValueError, "shared"),
    (ptft_relu.OverlapPreset(shared=(0,), ns=()), OV_STUDENTS, ValueError, "ns"),
    (ptft_relu.OverlapPreset(shared=(0,), ns=(0,)), OV_STUDENTS, ValueError, "n"),
    (ptft_relu.OverlapPreset(shared=(0,), ns=(4,), mtl=1), OV_STUDENTS, TypeError, "mtl"),
    (dict(shared=(0,), ns=(4,)), OV_STUDENTS, TypeError, "preset"),
    (OV, dict(d=8), TypeError, "preset"),
    (OV, dataclasses.replace(OV_STUDENTS, d=5), ValueError, "d"),
    (OV, OV_STUDENTS, TypeError, "shared_cells"),
])
def test_overlap_refuses_bad_input_before_any_training(preset, students, err, match,
                                                       monkeypatch):
    monkeypatch.setattr(ptft_relu, "train_units", None)            # no training may start
    kw = dict(shared_cells="yes") if match == "shared_cells" else {}
    with pytest.raises(err, match=match):
        ptft_relu.run_overlap(preset, students, cache=False, progress=False, **kw)


def test_pretraining_memory_keeps_the_last_few(one_thread, monkeypatch):
    """The in-process memory of pretrainings keeps the last _PRETRAINED_KEEP keys: cells that
    alternate between two pretrainings (the chapter's 8-draw grids and 4-draw MTL students)
    pretrain each once; a fifth key drops the oldest."""
    calls = []

    def counting(*args, **kwargs):
        calls.append(kwargs.get("max_steps"))
        return models.relu.train_units(*args, **kwargs)

    monkeypatch.setattr(ptft_relu, "train_units", counting)
    monkeypatch.setattr(ptft_relu, "_PRETRAINED", {})
    args = {**P, "cache": False}
    ptft_relu.run_sample_efficiency(**args)
    after_one = len(calls)
    ptft_relu.run_sample_efficiency(**{**args, "draws": 1})
    ptft_relu.run_sample_efficiency(**args)
    ptft_relu.run_sample_efficiency(**{**args, "draws": 1})
    per_run = after_one - 1                        # the trainings that are not pretraining
    assert len(calls) == 4 * per_run + 2           # two pretrainings, each once
    assert len(ptft_relu._PRETRAINED) == 2
    for cap in range(1, ptft_relu._PRETRAINED_KEEP + 1):
        ptft_relu.run_sample_efficiency(**{**args, "pre_max_steps": P["pre_max_steps"] + cap})
    assert len(ptft_relu._PRETRAINED) == ptft_relu._PRETRAINED_KEEP
    assert all(key[8] != P["pre_max_steps"] for key in ptft_relu._PRETRAINED)


def test_nested_rescaling_cell_counts_its_factors_in_the_budget():
    """The cell trains every factor's networks in one batch, with the main samples copied
    per factor: a million factors is refused by name before any work (it passed the
    per-draw budget, which counts three methods per n, and ran out of memory)."""
    P = ptft_relu.SAMPLE_EFFICIENCY["smoke"]
    with pytest.raises(ValueError, match=r"^len\(scales\)=1000000 is too large"):
        ptft_relu.nested_rescaling_cell(0, P.d, P.ns, P.draws, [1.0] * 10**6, width=P.width,
                                        n_aux=P.n_aux)
