"""Tests of :mod:`transferkit.models.relu`: exact population risk against a sampled risk, its
analytic gradient against finite differences (including parallel and antiparallel
units), the RKHS projections of paper 000, App. C, the source ablation (Eq. 16), the
trainers and the power-law fit."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from _helpers import gamma_k

from transferkit import experiments, models, stats, streams, theory
from transferkit.stats import critical_value
from transferkit.theory.relu import relu_kernel


def _t(x):
    return torch.as_tensor(np.asarray(x), dtype=torch.float64)


@pytest.fixture
def small():
    rng = np.random.default_rng(0)
    T = models.relu.make_teachers(2, 4, 5, rng)
    W = rng.standard_normal((2, 6, 5))
    W[0, 1] = 2.0 * W[0, 0]      # parallel
    W[0, 2] = -0.5 * W[0, 0]     # antiparallel
    W[1, 3] = T.W[1, 0]          # student unit on a teacher unit
    a = rng.standard_normal((2, 6))
    return rng, T, W, a


def test_population_risk_matches_sampled_risk(small):
    rng, T, W, a = small
    draws = 200_000
    X = _t(rng.standard_normal((2, draws, 5)))
    err = models.relu.sample_risk(_t(W), _t(a), _t(T.W), _t(T.a), X).numpy()
    mean, se = err.mean(-1), err.std(-1, ddof=1) / math.sqrt(draws)
    exact = models.relu.population_risk(_t(W), _t(a), _t(T.W), _t(T.a)).numpy()
    assert np.all(np.abs(mean - exact) <= critical_value(2, draws) * se), (mean, exact, se)
    np.testing.assert_allclose(models.relu.risk_np(W, a, T), exact, rtol=1e-12)


def _central_differences(f, x, eps=1e-6):
    """d f(x)[s] / d x[s, ...] by central differences, for a batched ``f: (S, ...) -> (S,)``."""
    out = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        out[idx] = (f(xp) - f(xm))[idx[0]] / (2 * eps)
    return out


def test_population_gradient_matches_finite_differences(small):
    _, T, W, a = small
    Wt, at = _t(T.W), _t(T.a)
    Wq, aq = _t(W), _t(a)
    risk, ga, gW = models.relu.population_risk_grad(Wq, aq, Wt, at)
    np.testing.assert_allclose(risk.numpy(), models.relu.population_risk(Wq, aq, Wt, at).numpy(),
                               rtol=1e-13)
    num_W = _central_differences(lambda W_: models.relu.risk_np(W_, a, T), W)
    num_a = _central_differences(lambda a_: models.relu.risk_np(W, a_, T), a)
    scale = 1 + np.abs(gW.numpy()).max()
    np.testing.assert_allclose(gW.numpy(), num_W, atol=1e-6 * scale)
    np.testing.assert_allclose(ga.numpy(), num_a, atol=1e-6 * (1 + np.abs(num_a).max()))


def test_torch_kernel_is_the_numpy_kernel(small):
    rng, T, W, _ = small
    V = np.concatenate([T.W, np.zeros((2, 1, 5)), W[:, :2]], axis=1)   # with a zero row
    np.testing.assert_allclose(models.relu.relu_kernel_torch(_t(W), _t(V)).numpy(),
                               relu_kernel(W, V), rtol=1e-14, atol=1e-15)


def test_torch_kernel_matches_monte_carlo():
    g = torch.Generator().manual_seed(1)
    A = torch.randn(1, 4, 5, generator=g, dtype=torch.float64)
    B = torch.randn(1, 3, 5, generator=g, dtype=torch.float64)
    n = 400_000
    X = _t(np.random.default_rng(0).standard_normal((n, 5)))
    prod = (torch.relu(X @ A[0].T)[:, :, None] * torch.relu(X @ B[0].T)[:, None, :]).numpy()
    mean, se = prod.mean(0), prod.std(0, ddof=1) / math.sqrt(n)
    K = models.relu.relu_kernel_torch(A, B)[0].numpy()
    assert np.all(np.abs(K - mean) <= critical_value(K.size, None) * se), np.abs(K - mean) / se


def test_torch_kernel_closed_form_special_cases():
    w = _t([[[3.0, 0.0], [0.0, 2.0], [-1.0, 0.0]]])
    K = models.relu.relu_kernel_torch(w, w)[0]
    # diagonal ||w||^2 / 2; orthogonal: |w||v| / 2pi; opposite: 0
    assert K[0, 0].item() == pytest.approx(4.5)
    assert K[0, 1].item() == pytest.approx(6 / (2 * math.pi))
    assert K[0, 2].item() == pytest.approx(0.0, abs=1e-15)


def test_torch_kernel_gradient_is_exact_and_finite_on_the_diagonal():
    g = torch.Generator().manual_seed(3)
    A = torch.randn(2, 4, 3, generator=g, dtype=torch.float64).requires_grad_(True)
    B = torch.randn(2, 5, 3, generator=g, dtype=torch.float64).requires_grad_(True)
    assert torch.autograd.gradcheck(models.relu.relu_kernel_torch, (A, B))
    A2 = torch.randn(1, 4, 3, generator=g, dtype=torch.float64).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a: models.relu.relu_kernel_torch(a, a), (A2,))
    # parallel neurons (t = 0): autograd through arccos would give nan
    P = _t([[[1.0, 1.0], [2.0, 2.0]]]).requires_grad_(True)
    models.relu.relu_kernel_torch(P, P).sum().backward()
    assert torch.isfinite(P.grad).all()


def test_autograd_gradient_of_the_risk_is_the_analytic_one(small):
    """Autograd through population_risk (the kernel's backward pass, used by the lazy-rich
    sweep) and the closed form of population_risk_grad (used by Fig. 3) agree, also at
    parallel, antiparallel and student-on-teacher units."""
    _, T, W, a = small
    Wq = _t(W).requires_grad_(True)
    aq = _t(a).requires_grad_(True)
    Wt, at = _t(T.W), _t(T.a)
    risk = models.relu.population_risk(Wq, aq, Wt, at)
    gW_auto, ga_auto = torch.autograd.grad(risk.sum(), (Wq, aq))
    r, ga, gW = models.relu.population_risk_grad(_t(W), _t(a), Wt, at)
    np.testing.assert_allclose(risk.detach().numpy(), r.numpy(), rtol=1e-13)
    np.testing.assert_allclose(ga_auto.numpy(), ga.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gW_auto.numpy(), gW.numpy(), rtol=1e-12, atol=1e-14)
    assert np.all(np.isfinite(gW_auto.numpy()))


def _tangent_is_the_projected_gradient(W, a, T):
    """population_risk_tangent_grad at unit rows ``W`` against population_risk_grad followed
    by the tangent projection; returns the tangent path's (risk, g_a, g_W)."""
    Wt, at = _t(T.W), _t(T.a)
    r0, ga0, gW0 = models.relu.population_risk_grad(_t(W), _t(a), Wt, at)
    r1, ga1, gW1 = models.relu.population_risk_tangent_grad(_t(W), _t(a), Wt, at)
    np.testing.assert_allclose(r1.numpy(), r0.numpy(), rtol=1e-13)
    np.testing.assert_allclose(ga1.numpy(), ga0.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gW1.numpy(), models.relu._tangent(_t(W), gW0).numpy(),
                               rtol=1e-11, atol=1e-14)
    return r1, ga1, gW1


def test_tangent_gradient_on_the_sphere_is_the_projected_full_gradient(small):
    """population_risk_tangent_grad (the fast path of train_population for units on the
    sphere) equals population_risk_grad followed by the tangent projection, also at
    parallel, antiparallel and student-on-teacher units; train_population takes it for
    unit teachers and gives the same iterates as the general path."""
    _, T, W, a = small
    _tangent_is_the_projected_gradient(streams.unit_rows(W), a, T)
    # whole training runs: the fast path against the general one (teacher rows scaled by
    # 1 + 1e-9 are "not on the sphere" for the check but give the same kernel to 1e-9)
    rng = np.random.default_rng(3)
    W0 = models.relu.random_sphere((2, 8, 5), rng)
    c0 = np.full((2, 8), 1e-3)
    Wf, cf, _ = models.relu.train_population(W0, c0, T, max_steps=40)
    Tn = models.relu.Teacher(T.W * (1 + 1e-9), T.a)
    Wg, cg, _ = models.relu.train_population(W0, c0, Tn, max_steps=40)
    np.testing.assert_allclose(Wf, Wg, atol=1e-7)
    np.testing.assert_allclose(cf, cg, atol=1e-7)


def test_student_equal_to_teacher_has_zero_risk():
    rng = np.random.default_rng(1)
    T = models.relu.make_teachers(3, 5, 7, rng)
    r, ga, gW = models.relu.population_risk_grad(_t(T.W), _t(T.a), _t(T.W), _t(T.a))
    assert np.all(np.abs(r.numpy()) < 1e-14)
    assert np.abs(ga.numpy()).max() < 1e-14 and np.abs(gW.numpy()).max() < 1e-14


def test_rkhs_norms_inside_and_orthogonal():
    rng = np.random.default_rng(2)
    T = models.relu.make_teachers(2, 5, 6, rng)
    # target inside the span: the student's units contain the teacher's
    W = np.concatenate([T.W, models.relu.random_sphere((2, 7, 6), rng)], axis=1)
    inside, out = models.relu.rkhs_norms(W, T)
    total = models.relu.teacher_norm(T)
    np.testing.assert_allclose(inside, total, rtol=1e-8)
    assert np.all(out <= 1e-8 * total)
    # repeated units make K singular: the pseudo-inverse still gives the same answer
    inside2, out2 = models.relu.rkhs_norms(np.concatenate([W, W[:, :3]], axis=1), T)
    np.testing.assert_allclose(inside2, total, rtol=1e-8)
    # orthogonal to the span: target relu(x1) - relu(-x1) = x1 against units that see only
    # x2, x3 (independent of x1, and x1 has mean 0, so every overlap vanishes)
    e = np.eye(3)
    odd = models.relu.Teacher(np.stack([np.vstack([e[0], -e[0]])]), np.array([[1.0, -1.0]]))
    other_units = np.stack([np.vstack([e[1], -e[1], e[2], (e[1] - e[2]) / np.sqrt(2)])])
    inside, out = models.relu.rkhs_norms(other_units, odd)
    assert inside[0] == pytest.approx(0.0, abs=1e-14)
    assert out[0] == pytest.approx(1.0, rel=1e-12)                         # E x1^2 = 1


def test_rkhs_norms_match_regression_on_samples():
    """||P_par f||^2 is the population R^2 numerator: compare with a least-squares fit."""
    rng = np.random.default_rng(3)
    T = models.relu.make_teachers(1, 4, 5, rng)
    W = models.relu.random_sphere((1, 3, 5), rng)
    inside, out = models.relu.rkhs_norms(W, T)
    # the best L2 fit has risk ||P_perp f||^2: minimise the exact risk over a
    K = relu_kernel(W, W)[0]
    b = relu_kernel(W, T.W)[0] @ T.a[0]
    a_best = np.linalg.solve(K, b)
    np.testing.assert_allclose(models.relu.risk_np(W, a_best[None], T), out, rtol=1e-10)


def test_rkhs_bad_rcond():
    rng = np.random.default_rng(0)
    T = models.relu.make_teachers(1, 2, 3, rng)
    with pytest.raises(ValueError, match="^rcond"):
        models.relu.rkhs_norms(T.W, T, rcond=0.0)


def test_ablate():
    rng = np.random.default_rng(4)
    T = models.relu.make_teachers(3, 10, 4, rng)
    src, keep = models.relu.ablate(T, 0.3, rng)
    assert np.all(keep.sum(1) == 7)
    np.testing.assert_allclose(src.a[keep], (T.a * 10 / 7)[keep])
    assert np.all(src.a[~keep] == 0)
    src0, keep0 = models.relu.ablate(T, 0.0, rng)
    np.testing.assert_array_equal(src0.a, T.a)
    for bad in (-0.1, 1.0, float("nan")):
        with pytest.raises(ValueError, match="^mu"):
            models.relu.ablate(T, bad, rng)


def test_train_population_decreases_and_is_deterministic():
    rng = np.random.default_rng(5)
    T = models.relu.make_teachers(2, 3, 5, rng)
    W0 = models.relu.random_sphere((2, 30, 5), rng)
    c0 = np.full((2, 30), 1e-7)
    W, c, info = models.relu.train_population(W0, c0, T, max_steps=200)
    W2, c2, _ = models.relu.train_population(W0, c0, T, max_steps=200)
    np.testing.assert_array_equal(W, W2)
    np.testing.assert_array_equal(c, c2)
    diffs = np.diff(info.history, axis=0)
    assert np.all(diffs[np.isfinite(diffs)] <= 1e-15)       # monotone (Armijo)
    assert np.all(np.isfinite(info.history[:2]))
    assert np.all(info.loss < 0.05 * info.teacher_norm)
    np.testing.assert_allclose(np.linalg.norm(W, axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(models.relu.risk_np(W, c / 30, T), info.loss, rtol=1e-10)


def test_train_samples_fits_training_set():
    rng = np.random.default_rng(6)
    T = models.relu.make_teachers(2, 2, 4, rng)
    X = rng.standard_normal((2, 20, 4))
    y = np.einsum("snk,sk->sn", np.maximum(X @ np.swapaxes(T.W, -1, -2), 0), T.a)
    W0 = models.relu.random_sphere((2, 40, 4), rng)
    W, c, info = models.relu.train_samples(W0, np.full((2, 40), 1e-7), X, y, max_steps=400)
    diffs = np.diff(info.history, axis=0)
    assert np.all(diffs[np.isfinite(diffs)] <= 1e-15)
    assert np.all(info.loss < 1e-2 * np.mean(y ** 2, axis=1))


def test_linear_transfer_exact_when_units_contain_target():
    rng = np.random.default_rng(7)
    T = models.relu.make_teachers(2, 3, 5, rng)
    W = np.concatenate([T.W, models.relu.random_sphere((2, 4, 5), rng)], axis=1)
    X = rng.standard_normal((2, 40, 5))          # n > m: least squares recovers f_t
    r = models.relu.readout_transfer_risk(W, X, T)
    assert np.all(r < 1e-12 * models.relu.teacher_norm(T))
    # few samples: risk at least the out-of-RKHS part for units not containing the target
    W2 = models.relu.random_sphere((2, 4, 5), rng)
    _, out = models.relu.rkhs_norms(W2, T)
    r2 = models.relu.readout_transfer_risk(W2, X, T)
    assert np.all(r2 >= out * (1 - 1e-10))


def test_fit_power_law_recovers_exponent():
    rng = np.random.default_rng(8)
    n = np.array([50, 100, 200, 400, 800, 1600.0])
    R = 3.0 * n ** -1.2 * np.exp(0.01 * rng.standard_normal(n.size))
    A, nu, se_logA, se_nu = stats.fit_power_law(n, R)
    assert abs(nu - 1.2) < 5 * se_nu + 1e-3 and se_nu < 0.05
    with pytest.raises(ValueError):
        stats.fit_power_law(n[:2], R[:2])


def test_kernel_distance_and_gram():
    rng = np.random.default_rng(9)
    W = models.relu.random_sphere((5, 3), rng)
    X = rng.standard_normal((7, 3))
    G = models.relu.feature_gram(W, None, X)
    np.testing.assert_allclose(G, models.relu.feature_gram(W, np.full(5, 0.2), X))
    assert stats.kernel_distance(G, G) == 0.0


def test_time_horizon_stops_training():
    rng = np.random.default_rng(10)
    T = models.relu.make_teachers(2, 3, 5, rng)
    W0 = models.relu.random_sphere((2, 20, 5), rng)
    _, _, info = models.relu.train_population(W0, np.full((2, 20), 1e-7), T, max_steps=10_000,
                                       max_time=5.0)
    assert np.all(info.horizon) and not np.any(info.converged)
    assert np.all(info.time >= 5.0) and np.all(info.time < 5.0 * 1.2 + 10)
    t = info.time_history
    assert np.all(np.diff(t, axis=0)[np.isfinite(np.diff(t, axis=0))] >= 0)


def test_least_squares_factor_against_gaussian_regression():
    """Gaussian features, target = a feature combination plus an orthogonal part of
    variance v: the mean risk of least squares over v is (n-1)/(n-m-1) (Monte Carlo,
    critical value from the draws)."""
    rng = np.random.default_rng(11)
    m, n, draws, v = 5, 12, 4000, 0.3
    ratios = np.empty(draws)
    for k in range(draws):
        F = rng.standard_normal((n, m))
        y = F @ np.ones(m) + np.sqrt(v) * rng.standard_normal(n)
        a = np.linalg.lstsq(F, y, rcond=None)[0]
        ratios[k] = ((a - 1) ** 2).sum() / v + 1.0        # population risk / v
    se = ratios.std(ddof=1) / np.sqrt(draws)
    assert abs(ratios.mean() - theory.relu.least_squares_factor(n, m)) < critical_value(1, draws) * se
    assert theory.relu.least_squares_factor(6, 5) == np.inf
    assert np.isnan(theory.relu.least_squares_factor(4, 5))
    with pytest.raises(ValueError, match="n and m"):
        theory.relu.least_squares_factor(0, 5)


def test_anchor_penalty_of_fig9():
    """lambda = 0 is plain pretraining (same iterates); the penalty pulls the units towards
    their start monotonically in lambda; the reported loss is risk + lambda sum ||w - w0||^2."""
    rng = np.random.default_rng(5)
    T = models.relu.make_teachers(1, 4, 5, rng)
    W0 = models.relu.random_sphere((3, 8, 5), rng)
    c0 = np.full((3, 8), 1e-3)
    Tr = models.relu.Teacher(np.tile(T.W, (3, 1, 1)), np.tile(T.a, (3, 1)))
    Wa, ca, _ = models.relu.train_population(W0, c0, Tr, max_steps=60)
    Wb, cb, info = models.relu.train_population(W0, c0, Tr, max_steps=60, anchor_weight=0.0)
    np.testing.assert_array_equal(Wa, Wb)
    np.testing.assert_array_equal(ca, cb)
    _, _, info = models.relu.train_population(W0, c0, Tr, max_steps=200,
                                       anchor_weight=[0.0, 1e-2, 1.0])
    assert np.all(np.diff(info.anchor_dist) < 0), info.anchor_dist
    np.testing.assert_allclose(info.loss, info.risk + [0.0, 1e-2, 1.0] * info.anchor_dist,
                               rtol=1e-10)
    for bad in (-1.0, np.nan):
        with pytest.raises(ValueError, match="anchor_weight"):
            models.relu.train_population(W0, c0, Tr, max_steps=2, anchor_weight=bad)


def test_anchored_experiment_checks_mu():
    res = experiments.relu_student_teacher.fig3_experiment(d=4, m=6, m_star=3, mus=[0.0, 0.5], ns=[8, 12, 16], draws=2,
                               scratch_seeds=2, pretrain_steps=20, scratch_steps=20)
    an = experiments.relu_student_teacher.anchored_experiment(res, [0.0, 1.0], 0.5, draws=2)
    assert an.R_lt.shape == (2, 3, 1, 2) and np.isfinite(an.R_lt).all()
    with pytest.raises(ValueError, match="mu must be one of"):
        experiments.relu_student_teacher.anchored_experiment(res, [0.0], 0.3)
    with pytest.raises(ValueError, match="lambdas"):
        experiments.relu_student_teacher.anchored_experiment(res, [-1.0], 0.5)


def _sample_problem(seed, units, d, n, m, c0):
    """Two seeds of a teacher with ``units`` units, ``n`` samples in ``d`` dimensions, and
    students of ``m`` units on the sphere with readouts ``c0``: ``(X, y, W0, c0)``."""
    rng = np.random.default_rng(seed)
    T = models.relu.make_teachers(2, units, d, rng)
    X = rng.standard_normal((2, n, d))
    y = np.einsum("snk,sk->sn", np.maximum(X @ np.swapaxes(T.W, -1, -2), 0), T.a)
    return X, y, models.relu.random_sphere((2, m, d), rng), np.full((2, m), c0)


def test_absolute_tolerance_stops_the_same_iterates_earlier():
    """``abs_tol`` only ends a run sooner: the run that stops at the absolute tolerance is,
    bit for bit, the relative-tolerance run cut at the same number of accepted steps, and
    it stops at the first accepted step whose loss is at most ``abs_tol``."""
    X, y, W0, c0 = _sample_problem(11, units=2, d=4, n=20, m=30, c0=1e-7)
    kw = dict(record_every=1, max_step=1.0)
    _, _, rel = models.relu.train_samples(W0, c0, X, y, max_steps=300, **kw)
    abs_tol = float(np.sqrt(rel.loss0 * rel.loss).min())        # between start and end of both
    Wa, ca, a = models.relu.train_samples(W0, c0, X, y, max_steps=300, abs_tol=abs_tol, **kw)
    assert np.all(a.converged) and np.all(a.loss <= abs_tol) and np.all(a.steps < rel.steps)
    for s in range(2):
        # the same batch (a batch of another shape may round differently)
        Wc, cc, cut = models.relu.train_samples(W0, c0, X, y, max_steps=int(a.steps[s]), **kw)
        np.testing.assert_array_equal(Wc[s], Wa[s])
        np.testing.assert_array_equal(cc[s], ca[s])
        h = rel.history[:, s]
        accepted = h[np.concatenate([[True], np.diff(h) < 0])]  # the loss after each accepted step
        assert np.flatnonzero(accepted <= abs_tol)[0] == a.steps[s]
    # the default is the relative rule alone, as without the argument
    W0b, c0b, d0 = models.relu.train_samples(W0, c0, X, y, max_steps=50, abs_tol=0.0, **kw)
    W1b, c1b, d1 = models.relu.train_samples(W0, c0, X, y, max_steps=50, **kw)
    np.testing.assert_array_equal(W0b, W1b)


@pytest.mark.parametrize("kw, name", [(dict(abs_tol=-1e-6), "abs_tol"), (dict(abs_tol=np.nan), "abs_tol"),
                                      (dict(tol=0.0), "tol"), (dict(tol=np.inf), "tol")])
def test_trainers_refuse_bad_tolerances(kw, name):
    rng = np.random.default_rng(12)
    T = models.relu.make_teachers(1, 2, 3, rng)
    W0 = models.relu.random_sphere((1, 4, 3), rng)
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        models.relu.train_population(W0, np.full((1, 4), 1e-7), T, max_steps=5, **kw)
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        models.relu.train_samples(W0, np.full((1, 4), 1e-7), rng.standard_normal((1, 5, 3)),
                                  np.ones((1, 5)), max_steps=5, **kw)


@pytest.mark.parametrize("n", [1, 7, 300])
def test_sample_gradient_is_autograd_of_the_sample_loss(n, monkeypatch):
    """``sample_loss_grad`` (blocks of samples, the gradient written out) gives the loss of
    the mean-field student on the samples and autograd's gradients, over several blocks and
    one, and each seed's numbers do not depend on the other seeds of the batch."""
    rng = np.random.default_rng(13)
    S, m, d = 4, 40, 5
    X = torch.tensor(rng.standard_normal((S, n, d)))
    y = torch.tensor(rng.standard_normal((S, n)))
    W = torch.tensor(models.relu.random_sphere((S, m, d), rng))
    c = torch.tensor(rng.standard_normal((S, m)))
    Wg, cg = W.clone().requires_grad_(True), c.clone().requires_grad_(True)
    r = torch.relu(X @ Wg.transpose(1, 2)) @ cg[..., None] / m - y[..., None]
    loss = (r[..., 0] ** 2).mean(-1)
    gW, gc = torch.autograd.grad(loss.sum(), (Wg, cg))
    for block in (m * 2, m * 1000):                   # blocks of 2 samples, and one block
        monkeypatch.setattr(models.relu, "_SAMPLE_BLOCK", block)
        out = models.relu.sample_loss_grad(W, c, X, y)
        for got, want in zip(out, (loss, gc, gW)):
            np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-15)
        two = models.relu.sample_loss_grad(W[1:3], c[1:3], X[1:3], y[1:3])
        for got, alone in zip(out, two):
            np.testing.assert_array_equal(got[1:3].numpy(), alone.numpy())


def test_sample_gradient_mask_is_the_indicator_product_bit_for_bit():
    """The first-layer gradient of ``sample_loss_grad`` masks the residuals with ReLU's
    backward kernel: the same bits as the product with the indicator 1[w_i . x > 0] written
    out (one block; a unit orthogonal to an input included)."""
    rng = np.random.default_rng(14)
    S, n, m, d = 3, 30, 20, 5
    X = torch.tensor(rng.standard_normal((S, n, d)))
    X[:, 0] = 0.0
    X[:, 0, 0] = 1.0                                         # x = e_1
    y = torch.tensor(rng.standard_normal((S, n)))
    W = torch.tensor(models.relu.random_sphere((S, m, d), rng))
    W[:, :2, 0] = 0.0                                        # w . e_1 = 0 for two units
    c = torch.tensor(rng.standard_normal((S, m)))
    _, _, gW = models.relu.sample_loss_grad(W, c, X, y)
    A = torch.bmm(X, W.transpose(1, 2)).clamp_(min=0.0)
    r = torch.bmm(A, c[..., None]).div_(m).sub_(y[..., None])
    want = X.new_zeros(S, m, d).baddbmm_((A > 0).to(A.dtype).mul_(r).transpose(1, 2), X)
    want.mul_(c[..., None] * (2.0 / (n * m)))
    assert np.array_equal(gW.numpy().view(np.int64), want.numpy().view(np.int64))


@pytest.mark.parametrize("block", [1, 3, 7, 128])
def test_tangent_gradient_by_blocks_of_units(block, monkeypatch):
    """The student-student terms by blocks of units, each pair of blocks evaluated once
    (``_UNIT_BLOCK``; 7 units, so blocks of 3 leave a short last one), give the general
    closed form projected on the sphere, also with units repeated (as after pretraining),
    and a seed's numbers do not depend on the other seeds of the batch."""
    monkeypatch.setattr(models.relu, "_UNIT_BLOCK", block)
    rng = np.random.default_rng(14)
    W = models.relu.random_sphere((3, 7, 4), rng)
    W[:, 5] = W[:, 1]                                   # a repeated unit (cosine 1)
    W[:, 6] = -W[:, 2]                                  # an antiparallel one
    a = rng.standard_normal((3, 7))
    T = models.relu.make_teachers(3, 2, 4, rng)
    out = _tangent_is_the_projected_gradient(W, a, T)
    two = models.relu.population_risk_tangent_grad(_t(W[1:]), _t(a[1:]), _t(T.W[1:]), _t(T.a[1:]))
    for got, alone in zip(out, two):
        np.testing.assert_array_equal(got[1:].numpy(), alone.numpy())


def test_a_stall_at_a_collapsed_step_is_not_convergence():
    """On the kinks of an empirical ReLU loss the backtracking step can collapse (the
    computed gradient is then no descent direction but for the smallest steps) and the loss
    stalls far above its tolerance: such a run is ``stuck``, not converged; the same runs at
    a teacher of small norm converge by the tolerance with the step at its cap."""
    rng = np.random.default_rng(15)
    T = models.relu.make_teachers(1, 10, 10, rng)
    X = rng.standard_normal((4, 20, 10))
    W0 = models.relu.random_sphere((4, 100, 10), rng)
    c0 = np.full((4, 100), 1e-7)
    for norm, expect_stuck in ((1.0, True), (None, False)):
        a = T.a if norm is None else T.a / np.sqrt(models.relu.teacher_norm(T))[:, None]
        y = np.einsum("snk,sk->sn", np.maximum(X @ np.swapaxes(T.W, -1, -2), 0), np.repeat(a, 4, 0))
        _, _, info = models.relu.train_samples(W0, c0, X, y, max_steps=1000, max_step=1.0,
                                               max_time=1000.0)
        assert not np.any(info.converged & info.stuck)
        low = info.h < models.relu.PAPER_STEP
        assert np.all(low[info.stuck]) and not np.any(info.converged & low)
        rel = info.loss / np.mean(y ** 2, axis=1)
        reasons = info.stop_reasons()
        np.testing.assert_array_equal(reasons == "converged", info.converged)
        np.testing.assert_array_equal(reasons == "stuck", info.stuck)
        if expect_stuck:
            assert info.stuck.any(), info.h
            assert np.all(rel[info.stuck] > 1e-4), rel    # far above the tolerance 1e-6
        else:
            assert not info.stuck.any() and info.converged.all(), info.h
            assert np.all(rel <= 1e-6 * (1 + 1e-9)) and np.all(info.h == 1.0)


def test_fixed_step_is_riemannian_gradient_descent_written_out():
    """``fixed_step``: every step taken at ``max_step`` (no backtracking, no stall rule),
    c <- c - h m g_c and w_i <- (w_i - h m g_i) / |w_i - h m g_i| with the tangent gradient:
    the iterates of plain gradient descent at the paper's fixed learning rate."""
    X, y, W0, c0 = _sample_problem(16, units=3, d=4, n=15, m=6, c0=1e-3)
    h, K = 0.5, 25
    W, c, info = models.relu.train_samples(W0, c0, X, y, max_steps=K, max_step=h, fixed_step=True)
    assert np.all(info.steps == K) and np.all(info.h == h) and not info.converged.any()
    Wt, ct, Xt, yt = (torch.tensor(v) for v in (W0, c0, X, y))
    for _ in range(K):
        _, gc, gW = models.relu.sample_loss_grad(Wt, ct, Xt, yt)
        gW = models.relu._tangent(Wt, gW)
        ct = ct - h * 6 * gc
        Wt = streams.unit_rows(Wt - h * 6 * gW)
    np.testing.assert_allclose(W, Wt.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(c, ct.numpy(), rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="fixed_step needs a finite step"):
        models.relu.train_samples(W0, c0, X, y, lr=math.inf, max_steps=3, fixed_step=True)
    with pytest.raises(TypeError, match="^fixed_step must be a bool"):
        models.relu.train_samples(W0, c0, X, y, max_steps=3, fixed_step=1)


def test_float32_sample_gradient_is_within_single_rounding_of_double():
    r"""``sample_loss_grad`` in float32 is the float64 one on the same (float32-exact) inputs
    up to the componentwise bound :math:`\gamma_k\,f(|\cdot|)` of a product of sums with
    ``k = d + m + n`` terms along the chain, where :math:`f(|\cdot|)` is the same function of
    the absolute values (the residuals bounded by :math:`|A||c|/m + |y|`)."""
    rng = np.random.default_rng(21)
    S, n, m, d = 3, 40, 30, 5
    X, y = rng.standard_normal((S, n, d)), rng.standard_normal((S, n))
    W, c = models.relu.random_sphere((S, m, d), rng), rng.standard_normal((S, m))
    X, y, W, c = (torch.tensor(v, dtype=torch.float32) for v in (X, y, W, c))
    low = models.relu.sample_loss_grad(W, c, X, y)
    high = models.relu.sample_loss_grad(*(v.double() for v in (W, c, X, y)))
    bound = models.relu.sample_loss_grad(*(v.double().abs() for v in (W, c, X)), -y.double().abs())
    for lo, hi, b in zip(low, high, bound):
        assert lo.dtype == torch.float32
        assert torch.all((lo.double() - hi).abs() <= gamma_k(d + m + n + 2) * b.abs())


def test_float32_gradient_run_keeps_double_iterates_within_rounding():
    r"""``grad_dtype="float32"``: the iterate stays in double precision (float64 arrays
    back) and, at a fixed step, follows the float64 run within the rounding of its
    gradients: at most ``K`` steps of a relative error :math:`\gamma_k` each on gradients
    whose steps move no coordinate by more than 1 (a first-order bound, ``k = d + m + n``)."""
    X, y, W0, c0 = _sample_problem(16, units=3, d=4, n=15, m=6, c0=1e-3)
    h, K = 0.5, 25
    kw = dict(max_steps=K, max_step=h, fixed_step=True)
    W, c, info = models.relu.train_samples(W0, c0, X, y, **kw)
    W32, c32, info32 = models.relu.train_samples(W0, c0, X, y, grad_dtype="float32", **kw)
    assert W32.dtype == c32.dtype == info32.loss.dtype == np.float64
    tol = K * gamma_k(4 + 6 + 15) * max(1.0, np.abs(c).max())
    assert np.abs(W32 - W).max() <= tol and np.abs(c32 - c).max() <= tol
    assert not np.array_equal(W32, W)                  # single precision did run
    np.testing.assert_array_equal(info32.steps, info.steps)
    for bad, err in (("float16", ValueError), ("double", ValueError), (torch.float32, TypeError)):
        with pytest.raises(err, match="^grad_dtype must be"):
            models.relu.train_samples(W0, c0, X, y, grad_dtype=bad, **kw)


def _assert_same_run(a, b):
    """Two ``(W, c, MeanFieldInfo)`` results are the same, bit for bit (NaN where NaN)."""
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    for f in dataclasses.fields(models.relu.MeanFieldInfo):
        x, y = getattr(a[2], f.name), getattr(b[2], f.name)
        assert (x is None) == (y is None), f.name
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=f.name)


@pytest.mark.parametrize("fixed_step", [False, True])
def test_earlier_stopping_rules_are_the_runs_with_those_rules(fixed_step):
    """train_samples(earlier=...) gives, for each earlier rule, the weights and every
    diagnostic of a separate run with that rule (bit for bit); the runs stop for every
    reason (tolerance, stall, horizon, step cap) under one rule or another."""
    rng = np.random.default_rng(12)
    S, m, d, n = 8, 12, 4, 10
    T = models.relu.make_teachers(S, 3, d, rng)
    X = rng.standard_normal((S, n, d))
    y = np.einsum("snk,sk->sn", np.maximum(X @ np.swapaxes(T.W, 1, 2), 0), T.a)
    W0 = models.relu.random_sphere((S, m, d), rng)
    c0 = np.logspace(-7, 0, S)[:, None] * np.ones((S, m))
    kw = dict(tol=1e-3, max_steps=400, record_every=10, max_time=300.0,
              max_step=0.5 if fixed_step else 2.0, fixed_step=fixed_step)
    rules = [(100.0, 0.0), (300.0, 1e-3), (30.0, 1e-2)]
    W, c, info, runs = models.relu.train_samples(W0, c0, X, y, earlier=rules, **kw)
    _assert_same_run((W, c, info), models.relu.train_samples(W0, c0, X, y, **kw))
    reasons = set(info.stop_reasons())
    for (t_e, a_e), run in zip(rules, runs):
        alone = models.relu.train_samples(W0, c0, X, y, **dict(kw, max_time=t_e, abs_tol=a_e))
        _assert_same_run(run, alone)
        reasons |= set(alone[2].stop_reasons())
        assert (run[2].steps < info.steps).any()       # the rule did stop some run earlier
    # every reason, mixed within the batch: the step cap at the fixed step, a collapsed
    # backtracking step (stuck) without it
    assert {"converged", "horizon", "step cap" if fixed_step else "stuck"} <= reasons
    with pytest.raises(ValueError, match="no later"):
        models.relu.train_samples(W0, c0, X, y, earlier=[(400.0, 0.0)], **kw)
    with pytest.raises(ValueError, match="abs_tol"):
        models.relu.train_samples(W0, c0, X, y, earlier=[(10.0, -1.0)], **kw)


def test_earlier_stopping_rules_of_pretraining():
    """train_population(earlier=...) with the anchor penalty: each rule's run, bit for bit."""
    rng = np.random.default_rng(13)
    T = models.relu.make_teachers(3, 3, 4, rng)
    W0 = models.relu.random_sphere((3, 10, 4), rng)
    c0 = np.full((3, 10), 1e-3)
    kw = dict(max_steps=400, max_time=30.0, anchor_weight=[0.0, 1e-3, 1e-2])
    rules = [(5.0, 0.0), (30.0, 1e-3)]
    *_, runs = models.relu.train_population(W0, c0, T, earlier=rules, **kw)
    for (t_e, a_e), run in zip(rules, runs):
        _assert_same_run(run, models.relu.train_population(
            W0, c0, T, **dict(kw, max_time=t_e, abs_tol=a_e)))


def test_check_earlier_stops_refuses_rules_that_stop_later_and_bad_input():
    assert models.relu.check_earlier_stops([(5, 0), (math.inf, 1e-3)], math.inf, 0.0) == [
        (5.0, 0.0), (math.inf, 1e-3)]
    for bad, kind, name in (([(20.0, 0.0)], ValueError, "no later"), ([(5.0, -1.0)], ValueError, "abs_tol"),
                            ([(0.0, 0.0)], ValueError, "max_time"), ([(5.0,)], TypeError, "earlier"),
                            (5.0, TypeError, "earlier"), ([("a", 0.0)], TypeError, "max_time")):
        with pytest.raises(kind, match=name):
            models.relu.check_earlier_stops(bad, 10.0, 0.0)


def test_train_ntk_is_paper_002_eq4_written_out_bit_for_bit():
    """train_ntk's update is vec W <- vec W - eta Z (u - y) (paper 002, Eq. 4) with the ReLU
    derivative 1{w.x >= 0}: the same bits as the update written out with that indicator,
    including inputs where w.x = 0 exactly (zero rows, -0.0, and units orthogonal to an
    input that is not zero, where the convention decides the update)."""
    rng = np.random.default_rng(5)
    d, n, m = 6, 12, 16
    X = torch.tensor(rng.standard_normal((n, d)))
    X[0] = 0.0                                               # w.x = 0 for every unit
    X[1] = -0.0
    X[2] = 0.0
    X[2, 0] = 2.0                                            # x = 2 e_1, not zero
    y = torch.tensor(rng.standard_normal(n))
    W0, A = models.relu.init_ntk(d, m, 1.0, [0, 1], device=torch.device("cpu"))
    W0[:, 0, :3] = 0.0                                       # units with w.x = 0 on x = 2 e_1
    W, info = models.relu.train_ntk(W0, A, X, y, eta=0.05, tol=1e-300, max_steps=7)
    assert info.steps == 7
    Wr = W0.clone()
    for _ in range(7):
        pre = X @ Wr
        out = (torch.relu(pre) * A[:, None, :]).sum(-1) / math.sqrt(m)
        act = (pre >= 0).to(Wr.dtype) * (A[:, None, :] / math.sqrt(m))
        Wr -= 0.05 * (X.T @ ((out - y)[:, :, None] * act))
    assert np.array_equal(W.numpy().view(np.int64), Wr.numpy().view(np.int64))
    assert not torch.equal(W, W0)


@pytest.mark.parametrize("S, m, d, m_star", [(8, 120, 10, 7), (5, 64, 12, 3), (2, 9, 4, 2),
                                         (4, 300, 100, 100)])
def test_risk_of_shared_units_is_the_batched_computation_bit_for_bit(S, m, d, m_star, monkeypatch):
    """Linear transfer scores S draws of one set of pretrained units: risk_np computes their
    kernel once (_batch_kernel).  The kernels are those of every copy, bit for bit, and so are
    the risks; at d = 100 this needs the symmetric product numpy uses for A A^T (a first
    version passed the distinct rows as two arrays, a general product, and moved the paper's
    risks by up to 6e-15).  A batch whose entries differ is computed entry by entry."""
    rng = np.random.default_rng(S * 1000 + m)
    W1 = models.relu.random_sphere((1, m, d), rng) * rng.uniform(0.5, 2.0, (1, m, 1))
    T1 = models.relu.make_teachers(1, m_star, d, rng)
    W = np.repeat(W1, S, 0)
    T = models.relu.repeat_teacher(T1, S)
    a = rng.standard_normal((S, m)) / m

    def explicit(W, a, T):          # every kernel computed for every copy
        Kww, Kwt, Ktt = relu_kernel(W, W), relu_kernel(W, T.W), relu_kernel(T.W, T.W)
        return (np.einsum("si,sij,sj->s", a, Kww, a) - 2 * np.einsum("si,sij,sj->s", a, Kwt, T.a)
                + np.einsum("si,sij,sj->s", T.a, Ktt, T.a))

    for A, B in ((W, W), (W, T.W), (T.W, T.W)):
        assert np.array_equal(models.relu._batch_kernel(A, B), relu_kernel(A, B))
    assert np.array_equal(models.relu.risk_np(W, a, T), explicit(W, a, T))
    calls = []

    def counting(A, B):
        calls.append(np.shape(A)[0])
        return relu_kernel(A, B)
    monkeypatch.setattr(models.relu, "relu_kernel", counting)
    models.relu.risk_np(W, a, T)
    assert calls == [1, 1, 1]                                  # each kernel computed once
    monkeypatch.undo()
    # entries that differ: no sharing, the same numbers as before
    W_other = W.copy()
    W_other[-1, 0] = -W_other[-1, 0]
    assert np.array_equal(models.relu.risk_np(W_other, a, T), explicit(W_other, a, T))
    T_other = models.relu.Teacher(T.W.copy(), T.a)
    T_other.W[0, 0] = -T_other.W[0, 0]
    assert np.array_equal(models.relu.risk_np(W, a, T_other), explicit(W, a, T_other))
    # two distinct unit sets, each repeated (several teachers' draws in one batch, as
    # anchored_n_cell stacks them): each kernel computed once, gathered
    W2 = np.concatenate([W, -W])
    T2 = models.relu.repeat_teacher(T1, 2 * S)
    a2 = np.concatenate([a, a[::-1]])
    reps, inv = models.relu._first_equal(W2, T2.W)
    assert reps.tolist() == [0, S] and inv.tolist() == [0] * S + [1] * S
    assert np.array_equal(models.relu._batch_kernel(W2, W2), relu_kernel(W2, W2))
    assert np.array_equal(models.relu.risk_np(W2, a2, T2), explicit(W2, a2, T2))


def test_mean_field_trainers_refuse_bad_input_before_any_step():
    """train_samples and train_population: shapes, finiteness and the step settings are
    checked first, each a ValueError naming the argument.  Before, NaN data and a NaN teacher
    became a DivergenceError after the first loss, lr = 0 trained without moving, and
    mismatched shapes raised torch's own errors."""
    rng = np.random.default_rng(13)
    T = models.relu.make_teachers(1, 2, 3, rng)
    W0 = models.relu.random_sphere((1, 4, 3), rng)
    c0 = np.full((1, 4), 1e-7)
    X, y = rng.standard_normal((1, 5, 3)), np.ones((1, 5))
    nan_X = X.copy()
    nan_X[0, 0, 0] = np.nan
    zero_W = W0.copy()
    zero_W[0, 1] = 0.0
    samples = [(dict(X=nan_X), r"^X must be finite"), (dict(y=y * np.inf), r"^y must be finite"),
               (dict(X=X[..., :2]), r"^X must have shape \(S, N, d\) = \(1, N, 3\)"),
               (dict(y=y[:, :4]), r"^y must have shape \(1, 5\)"),
               (dict(c0=c0[:, :3]), r"^c0 must have shape \(S, m\)"),
               (dict(W0=zero_W), r"^W0 must have no zero rows"),
               (dict(lr=0.0), r"^lr must be a number > 0 or inf"),
               (dict(lr=np.nan), r"^lr must be a number > 0 or inf"),
               (dict(max_step=-1.0), r"^max_step must be"), (dict(max_time=0.0), r"^max_time must be"),
               (dict(max_steps=-1), r"^max_steps must be"), (dict(record_every=0), r"^record_every must be")]
    for kw, match in samples:
        args = dict(W0=W0, c0=c0, X=X, y=y, max_steps=5)
        args.update(kw)
        with pytest.raises(ValueError, match=match):
            models.relu.train_samples(args.pop("W0"), args.pop("c0"), args.pop("X"), args.pop("y"),
                                      **args)
    bad_T = models.relu.Teacher(np.where(T.W > 0, np.nan, T.W), T.a)
    with pytest.raises(ValueError, match=r"^teacher\.W must be finite"):
        models.relu.train_population(W0, c0, bad_T, max_steps=5)
    with pytest.raises(ValueError, match=r"^teacher\.a must have shape \(1, 2\)"):
        models.relu.train_population(W0, c0, models.relu.Teacher(T.W, T.a[:, :1]), max_steps=5)
    with pytest.raises(ValueError, match=r"^teacher\.W must have shape \(S, N, d\) = \(1, N, 3\)"):
        models.relu.train_population(W0, c0, models.relu.Teacher(T.W[..., :2], T.a), max_steps=5)


def test_risk_np_and_train_ntk_refuse_mismatched_shapes():
    """numpy's einsum message and torch's bmm message were what escaped before."""
    rng = np.random.default_rng(14)
    T = models.relu.make_teachers(2, 2, 3, rng)
    W = rng.standard_normal((2, 4, 3))
    with pytest.raises(ValueError, match=r"^W must be \(S, m, d\), a \(S, m\)"):
        models.relu.risk_np(W, np.ones((2, 5)), T)
    with pytest.raises(ValueError, match=r"^W must be \(S, m, d\), a \(S, m\)"):
        models.relu.risk_np(W[:1], np.ones((1, 4)), T)
    Wn, A = models.relu.init_ntk(3, 8, 1.0, [0])
    X, y = torch.randn(5, 3, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"^W must be \(S, d, m\), A \(S, m\), X \(n, d\)"):
        models.relu.train_ntk(Wn.transpose(1, 2), A, X, y, eta=0.1)
    with pytest.raises(ValueError, match=r"^W must be \(S, d, m\)"):
        models.relu.train_ntk(Wn, A, X, y[:4], eta=0.1)
    with pytest.raises(ValueError, match=r"^X must be finite"):
        models.relu.train_ntk(Wn, A, X * np.nan, y, eta=0.1)
    with pytest.raises(TypeError, match=r"^y must be a torch tensor"):
        models.relu.train_ntk(Wn, A, X, y.numpy(), eta=0.1)


@pytest.mark.parametrize("args, name", [((0.0, 10, 0.0), "loss_tol"), ((1e-6, -1, 0.0), "max_steps"),
                                        ((1e-6, 2.5, 0.0), "max_steps"),
                                        ((1e-6, 10, -1e-4), "stall_tol"),
                                        ((math.nan, 10, 0.0), "loss_tol")])
def test_init_scale_settings_are_checked_by_one_function(args, name):
    # the experiments (lazy_rich) check the trainers' settings before any work with the
    # function the trainer itself runs: the same message for the same bad value
    with pytest.raises(ValueError, match=name):
        models.relu.check_init_scale_settings(*args)
    with pytest.raises(ValueError, match=name) as direct:
        models.relu.descend_init_scale(lambda W, c: W.sum((1, 2)), torch.zeros(1, 2, 2),
                                       torch.zeros(1, 2), loss_tol=args[0], max_steps=args[1],
                                       stall_tol=args[2])
    with pytest.raises(ValueError, match=name) as early:
        experiments.lazy_rich.init_scale_sweep(d=4, m=4, m_star=2, mu=0.5, alphas=[1.0],
                                               ns=[4], draws=1, loss_tol=args[0],
                                               max_steps=args[1], stall_tol=args[2])
    assert str(early.value) == str(direct.value)
    assert models.relu.check_init_scale_settings(1e-6, 10, 0) == (1e-6, 10, 0.0)
    with pytest.raises(TypeError, match="loss_tol"):
        models.relu.check_init_scale_settings("1e-6", 10, 0.0)
