"""Two-layer ReLU networks between lazy and rich (paper 000, Sec. 4, Eqs. 16-17, App. C, Fig. 9)."""
import dataclasses

import numpy as np
import pytest
import torch

from transferkit import experiments, models, stats


def _rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def test_population_risk_of_the_teachers_matches_monte_carlo():
    # the sweep's teachers and features against the shared exact risk (transferkit.models.relu)
    T = models.relu.draw_init_scale_teachers(6, 5, 0.4, 2, seed=1, device="cpu")
    W, a = _rand(2, 7, 6, seed=6), _rand(2, 7, seed=7) / 7
    exact = models.relu.population_risk(W, a, T.V, T.b_t).numpy()
    X = torch.as_tensor(np.random.default_rng(2).standard_normal((2, 200_000, 6)))
    f = (models.relu.relu_features(W, X) @ a[..., None])[..., 0]
    ft = (models.relu.relu_features(T.V, X) @ T.b_t[..., None])[..., 0]
    chk = stats.agreement((f - ft).pow(2).numpy(), exact)
    assert chk.ok, chk.summary()


def test_teachers_follow_eqs_16_17():
    T = models.relu.draw_init_scale_teachers(8, 10, 0.7, 3, seed=0, device="cpu")
    np.testing.assert_allclose(T.V.norm(dim=-1).numpy(), 1.0)
    assert (T.keep.sum(1) == 3).all()                       # (1 - mu) m_* source neurons
    # ||f_t|| = 1; source readout c_*/((1-mu) m_*) on the kept neurons, zero elsewhere
    zero = torch.zeros(3, 1, 8, dtype=torch.float64)
    norm = models.relu.population_risk(zero, torch.zeros(3, 1, dtype=torch.float64), T.V, T.b_t)
    np.testing.assert_allclose(norm.numpy(), 1.0, rtol=1e-10)
    np.testing.assert_allclose(T.b_s[T.keep].numpy(), (T.b_t[T.keep] * 10 / 3).numpy())
    assert (T.b_s[~T.keep] == 0).all()
    with pytest.raises(ValueError, match="mu"):
        models.relu.draw_init_scale_teachers(8, 10, 1.0, 1)
    with pytest.raises(ValueError, match="source neuron"):
        models.relu.draw_init_scale_teachers(8, 2, 0.9, 1)


def test_span_floor_is_a_lower_bound_and_zero_inside_the_span():
    T = models.relu.draw_init_scale_teachers(5, 4, 0.0, 2, seed=3, device="cpu")
    # the teacher's own neurons (plus others) span the target: floor 0
    W = torch.cat([T.V, _rand(2, 3, 5, seed=8)], dim=1)
    assert np.all(experiments.lazy_rich.span_floor(W, T.V, T.b_t) < 1e-10)
    # any readout on random neurons has risk >= their floor
    W = _rand(2, 6, 5, seed=9)
    floor = experiments.lazy_rich.span_floor(W, T.V, T.b_t)
    for s in range(5):
        a = _rand(2, 6, seed=10 + s) / 6
        assert (models.relu.population_risk(W, a, T.V, T.b_t).numpy() >= floor - 1e-12).all()
    # zero rows add nothing to the span (the source-neuron floor of the sweep)
    Wz = torch.cat([W, torch.zeros(2, 2, 5, dtype=torch.float64)], dim=1)
    np.testing.assert_allclose(experiments.lazy_rich.span_floor(Wz, T.V, T.b_t), floor, rtol=1e-10)


def test_readout_transfer_is_least_squares_and_scale_free():
    T = models.relu.draw_init_scale_teachers(4, 3, 0.0, 1, seed=4, device="cpu")
    X, y = models.relu.init_scale_targets(T, 40, seed=1)
    W = _rand(1, 6, 4, seed=11)
    a = models.relu.readout_transfer(W, X, y)
    Phi = models.relu.relu_features(W, X)
    grad = Phi.transpose(1, 2) @ (Phi @ a[..., None] - y[..., None])
    assert grad.abs().max() < 1e-8
    a10 = models.relu.readout_transfer(10 * W, X, y)
    np.testing.assert_allclose((models.relu.relu_features(10 * W, X) @ a10[..., None]).numpy(),
                               (Phi @ a[..., None]).numpy(), rtol=1e-9, atol=1e-12)


def test_gradient_descent_reaches_tolerance_on_a_quadratic():
    target = _rand(3, 4, 2, seed=12)

    def loss(W, c):
        return 0.5 * ((W - target).pow(2).sum((1, 2)) + c.pow(2).sum(1))

    res = models.relu.descend_init_scale(loss, torch.zeros(3, 4, 2, dtype=torch.float64),
                              torch.ones(3, 4, dtype=torch.float64), loss_tol=1e-12,
                              max_steps=2000)
    assert res.converged.all() and not res.stalled.any()
    np.testing.assert_allclose(res.W.numpy(), target.numpy(), atol=1e-5)


def test_gradient_descent_flags_a_plateau():
    def loss(W, c):
        return 1.0 + 0 * W.sum((1, 2)) + 0 * c.sum(1)

    res = models.relu.descend_init_scale(loss, torch.zeros(2, 1, 1, dtype=torch.float64),
                              torch.zeros(2, 1, dtype=torch.float64), max_steps=1000, window=50)
    assert res.stalled.all() and not res.converged.any() and (res.steps <= 50).all()


@pytest.fixture(scope="module")
def small_sweep(one_thread, tmp_path_factory):
    return experiments.lazy_rich.init_scale_sweep(6, 12, 4, 0.5, [0.1, 3.0, 300.0], [4, 40], draws=2, max_steps=600,
                    progress=False, directory=tmp_path_factory.mktemp("cache"))


def test_sweep_shapes_and_bounds(small_sweep):
    r = small_sweep
    assert r.transfer.shape == (3, 2, 2) and r.scratch.shape == (2, 2)
    np.testing.assert_allclose(r.T, r.scratch[None] - r.transfer)
    assert np.all(r.transfer >= r.span_floor[:, None, :] - 1e-8)
    assert np.all(r.source >= r.floor[None, :] - 1e-8)
    assert np.all(r.lazy >= r.lazy_floor[None, :] - 1e-8)


def test_sweep_lazy_end_is_the_random_features_model(small_sweep):
    r = small_sweep
    assert r.movement[-1].max() < 1e-3                      # the first layer stays put
    assert np.all(np.diff(r.movement.mean(1)) < 0)           # rich -> lazy
    np.testing.assert_allclose(r.transfer[-1], r.lazy, rtol=1e-2)


def test_sweep_same_seed_same_numbers(small_sweep):
    again = experiments.lazy_rich.init_scale_sweep(6, 12, 4, 0.5, [0.1, 3.0, 300.0], [4, 40], draws=2, max_steps=600,
                     progress=False, cache=False)
    for k in ("transfer", "scratch", "movement"):
        np.testing.assert_array_equal(getattr(again, k), getattr(small_sweep, k))


def test_sweep_rerun_loads_the_cache(one_thread, tmp_path, monkeypatch):
    args = (5, 6, 3, 0.5, [0.3, 30.0], [4, 8])
    kw = dict(draws=1, max_steps=200, progress=False, directory=tmp_path)
    first = experiments.lazy_rich.init_scale_sweep(*args, **kw)

    def fail(*a, **k):
        raise AssertionError("a cached cell was recomputed")

    monkeypatch.setattr(experiments.lazy_rich, "scratch_init_scale", fail)
    monkeypatch.setattr(experiments.lazy_rich, "pretrain_init_scale", fail)
    again = experiments.lazy_rich.init_scale_sweep(*args, **kw)
    for k in ("transfer", "scratch", "T", "span_floor"):
        np.testing.assert_array_equal(getattr(again, k), getattr(first, k))


def test_sweep_bad_input():
    with pytest.raises(ValueError, match="alphas"):
        experiments.lazy_rich.init_scale_sweep(4, 5, 2, 0.5, [0.0], [3], draws=1)
    with pytest.raises(ValueError, match="n must"):
        experiments.lazy_rich.init_scale_sweep(4, 5, 2, 0.5, [1.0], [0], draws=1)
    with pytest.raises(ValueError, match="m must"):
        models.relu.pretrain_init_scale(models.relu.draw_init_scale_teachers(4, 2, 0.5, 1), 0, [1.0])


def test_monte_carlo_check_is_a_frozen_record(one_thread):
    """monte_carlo_check returns a MonteCarloCheck: the exact risk per draw and the squared
    errors on fresh test inputs, whose mean agrees with it (paper 000, Sec. 4 model)."""
    import dataclasses

    mc = experiments.lazy_rich.monte_carlo_check(4, 6, 3, 0.5, n=8, draws=2, max_steps=300,
                                                 test=5_000)
    assert isinstance(mc, experiments.lazy_rich.MonteCarloCheck)
    assert mc.exact.shape == (2,) and mc.sq_err.shape == (2, 5_000)
    assert np.all(mc.sq_err >= 0)
    chk = stats.agreement(mc.sq_err, mc.exact)
    assert chk.ok, chk.summary()
    with pytest.raises(dataclasses.FrozenInstanceError):
        mc.exact = None


def test_init_scale_presets_are_frozen_tuples():
    presets = experiments.lazy_rich.INIT_SCALE
    assert set(presets) == {"paper", "smoke"}
    for p in presets.values():
        assert isinstance(p, experiments.lazy_rich.InitScalePreset)
        assert isinstance(p.alphas, tuple) and isinstance(p.ns, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        presets["paper"].draws = 3


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_init_scale_preset_is_valid(scale):
    p = experiments.lazy_rich.INIT_SCALE[scale]
    # what init_scale_sweep and the teachers of Eqs. 16-17 check, without training
    T = models.relu.draw_init_scale_teachers(p.d, p.m_star, p.mu, 1, seed=p.seed, device="cpu")
    assert T.keep.sum() == round((1 - p.mu) * p.m_star) >= 1
    alphas = models.relu.check_alphas(p.alphas)
    assert np.all(np.diff(alphas) > 0)              # rich -> lazy, as the chapter reads them
    assert all(isinstance(n, int) and n >= 1 for n in p.ns) and list(p.ns) == sorted(p.ns)
    assert p.m not in p.ns                          # the interpolation threshold is left out
    assert p.draws >= 2 and p.scratch_max_steps >= p.max_steps >= 1
    assert p.sigma >= 0 and 0 < p.loss_tol < 1 and 0 < p.stall_tol < 1 and p.mc_test >= 2
    # the chapter's finding needs an intermediate alpha between the two ends
    assert len(p.alphas) >= 3 and len(p.ns) >= 2


def test_init_scale_paper_preset_states_the_paper_where_cited():
    p = experiments.lazy_rich.INIT_SCALE["paper"]
    assert p.sigma == 0.0            # paper 000, caption of Fig. 3: no label noise
    assert p.loss_tol == 1e-6        # paper 000, App. D.2: until the loss reaches 1e-6
    # ours (reduced from d = 100, m = 1000, m* = 100, mu = 0.9 of the caption of Fig. 9)
    assert (p.d, p.m, p.m_star, p.mu) == (20, 50, 12, 0.5)
    assert p.scratch_max_steps == 4 * p.max_steps


def test_span_floor_takes_arrays_as_tensors_and_refuses_mismatched_shapes():
    """numpy arrays raised AttributeError ('detach') before; now they give the tensors'
    numbers, and mismatched shapes are a ValueError naming the argument."""
    rng = np.random.default_rng(0)
    W, V, b = rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3))
    np.testing.assert_array_equal(
        experiments.lazy_rich.span_floor(W, V, b),
        experiments.lazy_rich.span_floor(torch.tensor(W), torch.tensor(V), torch.tensor(b)))
    with pytest.raises(ValueError, match=r"^V must have the same number of columns as W"):
        experiments.lazy_rich.span_floor(W, V[..., :3], b)
