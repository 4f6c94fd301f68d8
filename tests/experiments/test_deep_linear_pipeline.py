"""Tests for :mod:`transferkit.experiments.deep_linear` (paper 000, Sec. 3; App. D).

Reproducibility, independence of grid cells, input validation, and Monte Carlo
agreement of the simulated risks with the closed forms of :mod:`transferkit.theory.deep_linear`
(judged with Bonferroni-corrected t critical values, :func:`transferkit.stats.agreement`).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from transferkit import experiments, models, stats, streams, theory

CPU = torch.device("cpu")
KW = dict(device=CPU, progress=False)


# tiny tensors: one intra-op thread (fixture in conftest.py)
pytestmark = pytest.mark.usefixtures("one_thread")


# ---------------------------------------------------------------------------
# pretraining
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [2, 3])
def test_pretrain_teachers_and_features(depth):
    d, draws = 25, 4
    P = experiments.deep_linear.pretrain(d, depth=depth, draws=draws, seed=3, device=CPU)
    bs, nu = P.beta_s.numpy(), P.nu.numpy()
    np.testing.assert_allclose(np.linalg.norm(bs, axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(nu, axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.einsum("bi,bi->b", bs, nu), 0.0, atol=1e-12)
    assert P.info.all_converged
    # Lemma 3.3 and Thm 3.4: beta -> beta_s, features rank one along beta_s
    np.testing.assert_allclose(models.deep_linear.end_to_end(P.weights).numpy(), bs, atol=1e-5)
    assert list(P.rank) == [1] * draws and P.U.shape == (draws, d, 1)
    np.testing.assert_allclose(np.abs(np.einsum("bi,bi->b", P.U[..., 0].numpy(), bs)), 1.0,
                               atol=1e-8)
    # the kept subspace is the full decomposition's; the full spectrum only when asked for
    U, S, rank, svals = models.deep_linear.feature_subspace(P.weights)
    assert list(rank) == list(P.rank)
    assert float((U @ U.transpose(1, 2) - P.U @ P.U.transpose(1, 2)).abs().max()) < 1e-12
    assert float((S - P.S).abs().max()) < 1e-12
    assert "feature_svals" not in vars(P)
    assert torch.equal(P.feature_svals, svals) and "feature_svals" in vars(P)
    # targets at angle theta
    thetas = np.array([0.0, 0.7, math.pi / 2, math.pi])
    bt = P.beta_t(thetas).numpy()
    assert bt.shape == (draws, 4, d)
    np.testing.assert_allclose(np.einsum("bmi,bi->bm", bt, bs), np.cos(thetas)[None].repeat(draws, 0),
                               atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(bt, axis=2), 1.0, rtol=1e-12)
    # draws are different teachers
    assert np.abs(bs[0] @ bs[1]) < 0.9


def test_pretrain_is_reproducible_per_draw():
    a = experiments.deep_linear.pretrain(12, draws=3, seed=5, device=CPU)
    b = experiments.deep_linear.pretrain(12, draws=2, seed=5, device=CPU)
    np.testing.assert_array_equal(a.beta_s[:2].numpy(), b.beta_s.numpy())
    for Wa, Wb in zip(a.weights, b.weights):
        np.testing.assert_allclose(Wa[:2].numpy(), Wb.numpy(), rtol=1e-12, atol=1e-15)
    c = experiments.deep_linear.pretrain(12, draws=2, seed=6, device=CPU)
    assert np.abs(np.einsum("bi,bi->b", c.beta_s.numpy(), b.beta_s.numpy())).max() < 0.99
    assert not torch.allclose(c.weights[0], b.weights[0])


# ---------------------------------------------------------------------------
# reproducibility and structure of the output
# ---------------------------------------------------------------------------


def test_simulate_transfer_same_seed_same_numbers_and_keys():
    args = dict(d=20, gamma=0.6, theta=0.8, sigma=0.3, draws=5)
    r1 = experiments.deep_linear.simulate_transfer(seed=11, **args, **KW)
    r2 = experiments.deep_linear.simulate_transfer(seed=11, **args, **KW)
    r3 = experiments.deep_linear.simulate_transfer(seed=12, **args, **KW)
    for m in experiments.deep_linear.METHODS:
        risk = r1.risk(m)
        assert risk.shape == (5,) and np.isfinite(risk).all() and (risk >= 0).all()
        np.testing.assert_array_equal(risk, r2.risk(m))
        assert not np.allclose(risk, r3.risk(m))
    for m in ("scratch", "finetune"):
        assert r1.runs[m].converged.shape == (5,) and r1.runs[m].converged.all()
        assert r1.runs[m].steps.shape == (5,)
    assert r1.methods == ("scratch", "linear", "finetune") and r1.runs["linear"].converged is None
    assert (r1.gamma, r1.theta, r1.n, r1.d, r1.draws, r1.seed) == (0.6, 0.8, 12, 20, 5, 11)


def test_simulate_transfer_method_subset():
    r = experiments.deep_linear.simulate_transfer(20, 0.5, 1.0, 0.2, draws=3, methods=("linear",), **KW)
    assert r.methods == ("linear",) and r.risk("linear").shape == (3,)
    with pytest.raises(KeyError, match="scratch"):
        r.risk("scratch")


def test_grid_cell_equals_cell_computed_alone():
    d, draws, sigma, seed = 20, 4, 0.4, 2
    grid = experiments.deep_linear.simulate_grid(d, [0.5, 1.6], [0.3, 1.2], sigma, draws=draws, seed=seed, **KW)
    assert grid.n.tolist() == [10, 32]
    for m in experiments.deep_linear.METHODS:
        assert grid.risk(m).shape == (2, 2, draws)
    assert grid.scratch_minnorm_dist.shape == (2, draws)
    for i, g in enumerate([0.5, 1.6]):
        for j, t in enumerate([0.3, 1.2]):
            alone = experiments.deep_linear.simulate_transfer(d, g, t, sigma, draws=draws, seed=seed, **KW)
            for m in experiments.deep_linear.METHODS:
                np.testing.assert_allclose(alone.risk(m), grid.risk(m)[i, j], rtol=1e-9, atol=1e-12,
                                           err_msg=f"{m} at gamma={g}, theta={t}")
    # scratch is trained once per n and re-used across theta (reuse_scratch=True)
    np.testing.assert_array_equal(grid.risk("scratch")[:, 0], grid.risk("scratch")[:, 1])
    # transferability draws are the paired differences
    np.testing.assert_array_equal(experiments.linear_transfer.transferability_draws(grid, "linear"),
                                  grid.risk("scratch") - grid.risk("linear"))


def test_reuse_scratch_equals_training_at_theta_half_pi():
    # the re-used scratch model is trained on y = X nu + eps, i.e. theta = pi/2
    d, draws = 16, 3
    kw = dict(draws=draws, seed=4, methods=("scratch",), **KW)
    a = experiments.deep_linear.simulate_grid(d, [0.5, 2.0], [math.pi / 2], 0.3, reuse_scratch=True, **kw)
    b = experiments.deep_linear.simulate_grid(d, [0.5, 2.0], [math.pi / 2], 0.3, reuse_scratch=False, **kw)
    np.testing.assert_allclose(a.risk("scratch"), b.risk("scratch"), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("scratch_method", ["gd", "nesterov", "whitened"])
def test_scratch_reaches_min_norm_solution(scratch_method):
    # Thm 3.5 from alpha = 1e-5: the distance to X^+ y is O(alpha)
    r = experiments.deep_linear.simulate_grid(20, [0.5, 2.0], [1.0], 0.3, draws=3, seed=1, methods=("scratch",),
                        scratch_method=scratch_method, **KW)
    assert r.converged("scratch").all()
    assert r.scratch_minnorm_dist.max() < 1e-3


def test_pretrained_argument_is_used_and_checked():
    P = experiments.deep_linear.pretrain(15, depth=2, draws=3, seed=9, device=CPU)
    a = experiments.deep_linear.simulate_grid(15, [0.7], [0.5], 0.2, draws=3, seed=9, methods=("linear",), **KW)
    b = experiments.deep_linear.simulate_grid(15, [0.7], [0.5], 0.2, draws=3, seed=9, methods=("linear",),
                        pretrained=P, **KW)
    np.testing.assert_allclose(a.risk("linear"), b.risk("linear"), rtol=1e-12)
    for bad in (dict(draws=4), dict(depth=3)):
        kw = dict(draws=3, depth=2)
        kw.update(bad)
        with pytest.raises(ValueError, match="pretrained"):
            experiments.deep_linear.simulate_grid(15, [0.7], [0.5], 0.2, seed=9, pretrained=P, **kw, **KW)


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, name", [
    (dict(d=1), "d"), (dict(d=2.5), "d"), (dict(d=True), "d"),
    (dict(gamma=0.0), "gamma"), (dict(gamma=-0.5), "gamma"), (dict(gamma=float("nan")), "gamma"),
    (dict(gamma=float("inf")), "gamma"), (dict(gamma=0.001), "gamma"),
    (dict(gamma=[0.5, 1.0]), "gamma"),
    (dict(theta=-0.1), "theta"), (dict(theta=3.2), "theta"), (dict(theta=float("nan")), "theta"),
    (dict(theta=[0.1]), "theta"),
    (dict(sigma=-0.1), "sigma"), (dict(sigma=float("nan")), "sigma"),
    (dict(draws=0), "draws"), (dict(draws=2.5), "draws"),
    (dict(depth=1), "depth"), (dict(depth=2.5), "depth"),
    (dict(alpha=0.0), "alpha"), (dict(alpha=float("nan")), "alpha"),
    (dict(methods=("scratch", "ridge")), "methods"), (dict(methods=()), "methods"),
])
def test_simulate_transfer_rejects_bad_arguments(kwargs, name):
    args = dict(d=20, gamma=0.5, theta=1.0, sigma=0.1, draws=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        experiments.deep_linear.simulate_transfer(**args, **KW)


def test_simulate_grid_rejects_empty_grids():
    with pytest.raises(ValueError, match="gamma"):
        experiments.deep_linear.simulate_grid(20, [], [1.0], 0.1, draws=2, **KW)
    with pytest.raises(ValueError, match="theta"):
        experiments.deep_linear.simulate_grid(20, [0.5], [[0.1, 0.2]], 0.1, draws=2, **KW)


def test_simulate_transfer_rejects_infinite_d_with_value_error():
    with pytest.raises(ValueError, match="d"):
        experiments.deep_linear.simulate_transfer(float("inf"), 0.5, 1.0, 0.1, draws=2, **KW)


# ---------------------------------------------------------------------------
# Monte Carlo agreement with the closed forms
# ---------------------------------------------------------------------------

D, DRAWS, SIGMA, THETA = 60, 40, 0.5, 1.0
GAMMAS = (0.5, 1.5)


@pytest.fixture(scope="module")
def mc_grid():
    return experiments.deep_linear.simulate_grid(D, list(GAMMAS), [THETA], SIGMA, draws=DRAWS, seed=2024, **KW)


def _check(agr, what):
    assert agr.n_compared == len(GAMMAS)
    assert agr.ok, f"{what}: {agr.summary(what)}; mean={agr.mean.ravel()}, theory={agr.theory.ravel()}"


def test_monte_carlo_linear_transfer_matches_theorem_3_7(mc_grid):
    ns = mc_grid.n
    expected = theory.deep_linear.linear_transfer_risk(ns, THETA, SIGMA)[:, None]
    std = theory.deep_linear.linear_transfer_risk_std(ns, THETA, SIGMA)[:, None]
    # 3 methods x 2 cells are compared in this file: Bonferroni over all six.
    # Linear transfer has an exact standard deviation: use it, not the sample one.
    _check(stats.agreement(mc_grid.risk("linear"), expected, fwer=0.01 / 3, std=std), "linear")
    # and with the sample standard deviation (Student t) as well
    _check(stats.agreement(mc_grid.risk("linear"), expected, fwer=0.01 / 3), "linear")


def test_monte_carlo_scratch_matches_exact_finite_size_risk(mc_grid):
    assert mc_grid.converged("scratch").all()
    expected = theory.deep_linear.scratch_risk_finite(mc_grid.n, D, SIGMA)[:, None]
    # optimisation error certified by the distance to X^+ y (Thm 3.5)
    dist = mc_grid.scratch_minnorm_dist[:, None, :]
    atol = stats.risk_error_bound(mc_grid.risk("scratch"), dist).mean(-1)
    assert atol.max() < 1e-3
    _check(stats.agreement(mc_grid.risk("scratch"), expected, fwer=0.01 / 3, atol=atol), "scratch")


def test_monte_carlo_finetune_matches_theorem_3_9(mc_grid):
    # Deep-net fine-tuning rescales the null-space part of beta_s (paper 001, Thm 5.2;
    # see test_trainers.py::test_finetuning_rescales_null_space_component), so Thm 3.9's
    # estimator is only approximately what is simulated; at d = 60 and 40 draws the
    # resulting bias (~0.03 at gamma = 0.5) is within the Monte Carlo error.
    assert mc_grid.converged("finetune").all()
    expected = theory.deep_linear.finetune_risk_finite(mc_grid.n, D, THETA, SIGMA)[:, None]
    _check(stats.agreement(mc_grid.risk("finetune"), expected, fwer=0.01 / 3), "finetune")


def test_linear_transfer_checks_agree_on_the_simulation(mc_grid):
    checks = experiments.linear_transfer.linear_transfer_checks(mc_grid, fwer=0.01)
    assert isinstance(checks, experiments.linear_transfer.LinearTransferChecks)
    assert [f.name for f in dataclasses.fields(checks)] == ["scratch", "linear_transfer",
                                                            "transferability"]
    assert [name for name, _ in checks.items()] == ["scratch", "linear transfer", "transferability"]
    G = len(GAMMAS)
    assert checks.scratch.mean.shape == (G, 1)
    assert checks.linear_transfer.mean.shape == checks.transferability.mean.shape == (G, 1)
    ns = mc_grid.n
    np.testing.assert_allclose(checks.linear_transfer.theory[:, 0],
                               theory.deep_linear.linear_transfer_risk(ns, THETA, SIGMA))
    np.testing.assert_allclose(checks.scratch.theory[:, 0], theory.deep_linear.scratch_risk_finite(ns, D, SIGMA))
    np.testing.assert_allclose(checks.transferability.theory[:, 0],
                               theory.deep_linear.scratch_risk_finite(ns, D, SIGMA)
                               - theory.deep_linear.linear_transfer_risk(ns, THETA, SIGMA))
    for name, agr in checks.items():
        assert agr.ok, agr.summary(name)


# ---------------------------------------------------------------------------
# scratch_limit_vs_alpha (Thm 3.5 at finite alpha)
# ---------------------------------------------------------------------------


def test_scratch_limit_vs_alpha_is_linear_in_alpha():
    r = experiments.linear_transfer.scratch_limit_vs_alpha(30, 0.4, 0.2, [1e-3, 1e-2], draws=3, seed=1, device=CPU)
    assert isinstance(r, experiments.linear_transfer.ScratchLimitResult)
    assert r.n == 12
    np.testing.assert_array_equal(r.alphas, [1e-3, 1e-2])
    assert list(r.dist) == list(r.limits) == ["gd", "nesterov", "whitened"]
    for m in ("gd", "nesterov", "whitened"):
        dist = r.dist[m]
        assert dist.shape == (2, 3) and r.limits[m].shape == (2, 3, 30)
        assert (dist[1] < 0.1).all()
        # O(alpha) for both optimisers ...
        assert (dist[0] / 1e-3 < 2).all() and (dist[1] / 1e-2 < 2).all()
    # ... and exactly proportional to alpha along the gradient-flow path (plain GD); the
    # restarts of Nesterov's method make its O(alpha) coefficient path dependent
    np.testing.assert_allclose(r.dist["gd"][1] / r.dist["gd"][0], 10.0, rtol=0.02)
    # both optimisers reach X^+ y + O(alpha): their limits differ by at most O(alpha)
    for m in ("nesterov", "whitened"):
        gap = np.linalg.norm(r.limits["gd"] - r.limits[m], axis=2)
        assert (gap[0] < 10 * 1e-3).all() and (gap[1] < 10 * 1e-2).all()
    with pytest.raises(ValueError, match="alpha"):
        experiments.linear_transfer.scratch_limit_vs_alpha(30, 0.4, 0.2, [0.0], draws=2, device=CPU)


def test_feature_spectrum_is_a_dataclass():
    # Thm 3.4: after pretraining from small alpha the features are rank one along beta_s
    s = experiments.linear_transfer.feature_spectrum(10, [1e-4, 1e-2], draws=2, seed=1, device=CPU)
    assert isinstance(s, experiments.linear_transfer.FeatureSpectrum)
    assert [f.name for f in dataclasses.fields(s)] == ["alphas", "svals", "ratio", "align"]
    np.testing.assert_array_equal(s.alphas, [1e-4, 1e-2])
    assert s.svals.shape == (2, 10) and s.ratio.shape == s.align.shape == (2,)
    assert np.all(s.ratio < 0.1) and s.ratio[0] < s.ratio[1]
    assert np.all(s.align > 1 - 1e-3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.ratio = None


# ---------------------------------------------------------------------------
# fine-tuning: the batched rank-one chain (finetune_method="chain") and Thm 5.2
# ---------------------------------------------------------------------------


def test_finetune_chain_equals_full_network_fine_tuning():
    """Without the flow cap the batched chain trainer reproduces the full-network trainer."""
    args = dict(d=24, gammas=[0.4, 1.5], thetas=[0.2, 1.3], sigma=0.3, draws=3, seed=5,
                methods=("finetune",), loss_tol=1e-12, max_steps=10**6, **KW)
    chain = experiments.deep_linear.simulate_grid(finetune_method="chain", finetune_flow_tol=None, **args)
    full = experiments.deep_linear.simulate_grid(finetune_method="full", **args)
    np.testing.assert_allclose(chain.risk("finetune"), full.risk("finetune"), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(chain.runs["finetune"].steps, full.runs["finetune"].steps)
    assert chain.converged("finetune").all() and (chain.finetune_chain_residual < 1e-3).all()
    with pytest.raises(ValueError, match="finetune_method"):
        experiments.deep_linear.simulate_grid(24, [0.5], [0.1], 0.1, draws=2, methods=("finetune",),
                        finetune_method="fast", **KW)


@pytest.mark.parametrize("depth", [2, 3])
def test_finetune_grid_reports_the_thm_5_2_limit_of_the_same_samples(depth):
    from transferkit.theory.linear_teachers import deep_finetune_predictor

    d, gamma, thetas, sigma, draws, seed = 30, 0.5, [0.4, 1.4], 0.3, 3, 8
    r = experiments.deep_linear.simulate_grid(d, [gamma], thetas, sigma, depth=depth, draws=draws, seed=seed,
                        methods=("finetune",), max_steps=10**6, **KW)
    P = r.pretrained
    n = r.n[0]
    b0 = models.deep_linear.end_to_end(P.weights).numpy()
    for j, t in enumerate(thetas):
        bt = P.beta_t([t])[:, 0].numpy()
        X, y = [], []
        for b in range(draws):          # the samples simulate_grid draws
            rng = streams.keyed_rng(seed, b, experiments.deep_linear.DATA_STREAM, n)
            X.append(rng.standard_normal((n, d)))
            y.append(X[-1] @ bt[b] + sigma * rng.standard_normal(n))
        pred = deep_finetune_predictor(np.stack(X), np.stack(y), b0, depth)
        np.testing.assert_allclose(r.finetune_thm52[0, j], ((pred - bt) ** 2).sum(1), rtol=1e-8)
    # the simulated fine-tuning is that limit up to its measured distance
    assert r.finetune_thm52_dist.max() < 2e-3
    bound = stats.risk_error_bound(r.risk("finetune"), r.finetune_thm52_dist)
    assert (np.abs(r.risk("finetune") - r.finetune_thm52) <= bound + 1e-12).all()
    assert (r.finetune_imbalance_drift < 1e-2).all() and (r.finetune_row_error < 1e-3).all()


def test_monte_carlo_deep_finetune_matches_thm_5_2_form_not_eq_15():
    """At small d, large noise and gamma near 1 the rescaling k > 1 is visible in the mean:
    the paired transferability agrees with the finite-size Thm 5.2 form, not with Eq. 15."""
    d, gamma, theta, sigma, draws, depth = 40, 0.8, math.pi / 2, 0.6, 40, 3
    r = experiments.deep_linear.simulate_grid(d, [gamma], [theta], sigma, depth=depth, draws=draws, seed=3,
                        methods=("scratch", "finetune"), max_steps=10**6, **KW)
    n = r.n[0]
    T = experiments.linear_transfer.transferability_draws(r, "finetune")[0]
    sc = theory.deep_linear.scratch_risk_finite(n, d, sigma)
    opt = (stats.risk_error_bound(r.risk("scratch"), r.scratch_minnorm_dist[:, None, :])
           + stats.risk_error_bound(r.risk("finetune"), r.finetune_thm52_dist)).mean(-1)[0]
    a52 = stats.agreement(T, np.array([sc - theory.deep_linear.finetune_risk_deep_finite(n, d, theta, sigma, depth)]),
                      atol=opt)
    a15 = stats.agreement(T, np.array([sc - theory.deep_linear.finetune_risk_finite(n, d, theta, sigma)]), atol=opt)
    assert a52.ok, a52.summary("Thm 5.2")
    assert not a15.ok, a15.summary("Eq. 15")


@pytest.mark.parametrize("call, match", [
    (lambda m: m.pretrain(10, draws=2, rcond=0.0), r"^rcond must be in \(0, 1\)"),
    (lambda m: m.pretrain(10, draws=2, loss_tol=float("nan")), r"^loss_tol must be"),
    (lambda m: m.pretrain(10, draws=2, max_steps=-1), r"^max_steps must be"),
    (lambda m: m.simulate_grid(10, [0.5], [1.0], 0.2, draws=2, rcond=2.0), r"^rcond must be in \(0, 1\)"),
    (lambda m: m.simulate_grid(10, [0.5], [1.0], 0.2, draws=2, loss_tol=0.0), r"^loss_tol must be"),
    (lambda m: m.simulate_grid(10, [0.5], [1.0], 0.2, draws=2, finetune_flow_tol=-1.0),
     r"^finetune_flow_tol must be")])
def test_training_settings_refused_before_any_work(call, match, monkeypatch):
    """Before, these reached the trainers only after pretraining (or scratch training) had
    run.  ``gradient_descent`` is a tripwire here: nothing may be trained first."""
    from transferkit.experiments import deep_linear as m

    def tripwire(*a, **k):
        raise AssertionError("training started before the input was checked")
    monkeypatch.setattr(m, "gradient_descent", tripwire)
    with pytest.raises(ValueError, match=match):
        call(m)
