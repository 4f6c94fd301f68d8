"""Tests for :mod:`transferkit.theory.linear_teachers` (paper 001, Thms 4.1, 4.2, 5.2, 5.5; Table 1).

References are independent of the module: numpy ``pinv``, gradient descent from
:mod:`transferkit.models.deep_linear` (which knows nothing of paper 001's closed forms) and the
fixed-point iteration of Eq. 5.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transferkit import experiments, models, stats, theory

CPU = torch.device("cpu")
pytestmark = pytest.mark.usefixtures("one_thread")


def _t(x):
    return torch.as_tensor(np.array(x, dtype=float))


def _unit(rng, B, d):
    v = rng.standard_normal((B, d))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _pretrain(d, depth, alpha, bs, seed):
    B = bs.shape[0]
    W0 = models.deep_linear.init_deep_linear(d, depth, alpha, [np.random.default_rng([seed, b]) for b in range(B)],
                            device=CPU)
    Ws, info = models.deep_linear.gradient_descent(W0, models.deep_linear.population_objective(_t(bs)), loss_tol=1e-14)
    assert info.all_converged
    return Ws


# ----------------------------------------------------------------- Thm 4.1


def test_thm41_closed_form_matches_pinv_and_gradient_descent():
    """Eq. 1 against numpy pinv and against gradient descent on a linear model (depth 1)."""
    rng = np.random.default_rng(0)
    B, n, d = 4, 8, 25
    X = rng.standard_normal((B, n, d))
    ts, tt = rng.standard_normal((B, d)), rng.standard_normal((B, d))
    y = np.einsum("bnd,bd->bn", X, tt)
    gamma = theory.linear_teachers.finetune_predictor(X, y, ts)
    for b in range(B):
        Xp = np.linalg.pinv(X[b])
        P_par = Xp @ X[b]
        ref = (np.eye(d) - P_par) @ ts[b] + P_par @ tt[b]
        np.testing.assert_allclose(gamma[b], ref, atol=1e-10)
    # gradient descent on w (one "layer" of shape d x 1) from theta_s
    Ws, info = models.deep_linear.gradient_descent([_t(ts)[..., None]], models.deep_linear.empirical_objective(_t(X), _t(y)),
                                  loss_tol=1e-20, max_steps=200_000)
    assert info.all_converged
    np.testing.assert_allclose(models.deep_linear.end_to_end(Ws).numpy(), gamma, atol=1e-7)
    # Eq. 2: the risk for Sigma = I and for a general Sigma
    np.testing.assert_allclose(theory.linear_teachers.finetune_predictor_risk(X, ts, tt), ((gamma - tt) ** 2).sum(1), rtol=1e-10)
    A = rng.standard_normal((d, d)) / np.sqrt(d)
    np.testing.assert_allclose(theory.linear_teachers.finetune_predictor_risk(X, ts, tt, A), theory.linear_teachers.excess_risk(gamma, tt, A),
                               rtol=1e-10)


def test_thm41_risk_is_monte_carlo_risk():
    """Eq. 2 is the population loss: compare with a Monte Carlo estimate over fresh x."""
    rng = np.random.default_rng(1)
    n, d, m = 10, 30, 200_000
    lam = np.where(np.arange(d) < 5, 1.5, 0.3)
    X = rng.standard_normal((n, d)) * np.sqrt(lam)
    ts, tt = rng.standard_normal(d), rng.standard_normal(d)
    gamma = theory.linear_teachers.finetune_predictor(X, X @ tt, ts)
    xs = rng.standard_normal((m, d)) * np.sqrt(lam)
    loss = (xs @ (tt - gamma)) ** 2
    R = theory.linear_teachers.finetune_predictor_risk(X, ts, tt, np.diag(np.sqrt(lam)))
    se = loss.std() / np.sqrt(m)
    assert abs(loss.mean() - R) < 4 * se


def test_validation():
    with pytest.raises(ValueError, match="linearly independent"):
        theory.linear_teachers.finetune_predictor(np.ones((3, 5)), np.ones(3), np.ones(5))
    with pytest.raises(ValueError, match="depth"):
        theory.linear_teachers.deep_finetune_predictor(np.eye(2, 5), np.ones(2), np.ones(5), 0)
    with pytest.raises(ValueError, match="theta_s must be nonzero"):
        theory.linear_teachers.deep_finetune_predictor(np.eye(2, 5), np.ones(2), np.zeros(5), 3)
    with pytest.raises(ValueError, match="finite"):
        theory.linear_teachers.finetune_predictor(np.eye(2, 5), np.array([1.0, np.nan]), np.ones(5))
    with pytest.raises(ValueError, match="delta"):
        theory.linear_teachers.g_function(np.ones(4), 0.5, 10)
    with pytest.raises(ValueError, match="decreasing"):
        theory.linear_teachers.g_function(np.arange(4.0), 1, 10)
    with pytest.raises(ValueError, match="m must"):
        theory.linear_teachers.eq3_bound(np.ones(4), np.eye(4), np.ones(4), 5, 10)


# ----------------------------------------------------------------- Thm 4.2


def test_g_function_and_bounds():
    lam = np.array([4.0, 2.0, 1.0, 1.0])     # r0 = 2
    np.testing.assert_allclose(theory.linear_teachers.g_function(lam, 1, 8, c=1), 4 * 0.5)       # sqrt(2/8)
    np.testing.assert_allclose(theory.linear_teachers.g_function(lam, 1, 1), 3 * 4 * 2.0)        # r0/n, c = 3
    np.testing.assert_allclose(theory.linear_teachers.g_function(lam, 32, 8, c=2), 2 * 4 * 4.0)  # delta/n
    V = np.eye(4)
    dv = np.array([1.0, 2.0, 3.0, 0.0])
    g = theory.linear_teachers.g_function(lam, 1, 8)
    np.testing.assert_allclose(theory.linear_teachers.eq3_bound(dv, V, lam, 2, 8),
                               2 * g ** 3 * 5 / 2.0 ** 2 + 2 * g * 9)
    np.testing.assert_allclose(theory.linear_teachers.bartlett_bound(dv, lam, 8), 14 * g)
    np.testing.assert_allclose(theory.linear_teachers.distance_measure(np.zeros(4), dv), 14)


def test_eq3_bound_holds_with_default_c():
    """With the default c = 3 the bound of Eq. 3 holds in the top/bottom setting of Fig. 1
    in every one of 50 draws per n, and so does its premise ||Sigma~ - Sigma|| <= g."""
    rng = np.random.default_rng(2)
    d, m = 200, 10
    lam = np.where(np.arange(d) < m, 1.5, 0.3)
    for n in (20, 60, 150):
        for top in (True, False):
            dv = np.zeros(d)
            idx = slice(0, m) if top else slice(m, d)
            dv[idx] = rng.standard_normal(dv[idx].shape)
            dv /= np.linalg.norm(dv)
            X = rng.standard_normal((50, n, d)) * np.sqrt(lam)
            R = theory.linear_teachers.finetune_predictor_risk(X, np.zeros(d), dv, np.diag(np.sqrt(lam)))
            assert (R <= theory.linear_teachers.eq3_bound(dv, np.eye(d), lam, m, n)).all()
        dev = [np.abs(np.linalg.eigvalsh(x.T @ x / n - np.diag(lam))).max() for x in X[:10]]
        assert max(dev) <= theory.linear_teachers.g_function(lam, 1, n)


# ----------------------------------------------------------------- Thm 5.2


def _fixed_point(X, y, bs, depth):
    Xp = np.linalg.pinv(X)
    mn = Xp @ y
    perp = bs - Xp @ (X @ bs)
    k = 1.0
    for _ in range(500):   # k = (||beta|| / ||bs||)^((L-1)/L), ||beta||^2 = k^2 |perp|^2 + |mn|^2
        k = (np.sqrt(k * k * perp @ perp + mn @ mn) / np.linalg.norm(bs)) ** ((depth - 1) / depth)
    return mn + k * perp


@pytest.mark.parametrize("depth", [1, 2, 3, 6, np.inf])
def test_thm52_root_matches_fixed_point(depth):
    rng = np.random.default_rng(3)
    B, n, d = 5, 6, 20
    X = rng.standard_normal((B, n, d))
    bs = rng.standard_normal((B, d)) * np.array([0.3, 1, 3, 10, 0.01])[:, None]
    y = rng.standard_normal((B, n)) * np.array([2, 0.1, 1, 5, 1])[:, None]
    beta = theory.linear_teachers.deep_finetune_predictor(X, y, bs, depth)
    for b in range(B):
        if depth == np.inf:
            Xp = np.linalg.pinv(X[b])
            ref = Xp @ y[b] + (np.linalg.norm(Xp @ y[b]) / np.linalg.norm(Xp @ (X[b] @ bs[b]))
                               * (bs[b] - Xp @ (X[b] @ bs[b])))
        else:
            ref = _fixed_point(X[b], y[b], bs[b], depth)
        np.testing.assert_allclose(beta[b], ref, rtol=1e-9, atol=1e-12)
    if depth == 1:
        np.testing.assert_allclose(beta, theory.linear_teachers.finetune_predictor(X, y, bs), atol=1e-12)
    # the large-depth limit approaches Eq. 6
    if depth == 6:
        far = theory.linear_teachers.deep_finetune_predictor(X, y, bs, 10_000)
        np.testing.assert_allclose(far, theory.linear_teachers.deep_finetune_predictor(X, y, bs, np.inf), rtol=1e-2,
                                   atol=1e-3)


def test_thm52_against_gradient_descent_depth3():
    """Fine-tune a depth-3 network pretrained from scale 1e-5 (approximately balanced) by
    gradient descent; its end-to-end vector matches Eq. 5 within 1e-2 (observed 1e-3 at
    step_scale 0.2), while Thm 4.1's depth-1 prediction is off by 0.3-0.9.  The residual is
    the discretisation error of gradient descent against gradient flow: it shrinks in
    proportion to the step (checked by halving it)."""
    d, n, B, depth = 40, 10, 4, 3
    rng = np.random.default_rng(9)
    bs = _unit(rng, B, d) * np.array([1.0, 1.0, 2.0, 0.5])[:, None]
    Wp = _pretrain(d, depth, 1e-5, bs, seed=8)
    np.testing.assert_allclose(models.deep_linear.end_to_end(Wp).numpy(), bs, atol=1e-6)
    X = rng.standard_normal((B, n, d))
    tt = 2.5 * bs + 0.8 * _unit(rng, B, d)
    y = np.einsum("bnd,bd->bn", X, tt)
    pred = theory.linear_teachers.deep_finetune_predictor(X, y, bs, depth)
    errs = []
    for step in (0.2, 0.1):
        Ws, info = models.deep_linear.finetune(Wp, _t(X), _t(y), loss_tol=1e-14, step_scale=step)
        assert info.all_converged
        errs.append(np.linalg.norm(models.deep_linear.end_to_end(Ws).numpy() - pred, axis=1))
    assert errs[0].max() < 1e-2, errs[0]
    assert (errs[1] < 0.7 * errs[0]).all(), errs       # first order in the step: ratio ~0.5
    off = np.linalg.norm(theory.linear_teachers.finetune_predictor(X, y, bs) - pred, axis=1)
    assert off.min() > 10 * errs[0].max(), (off, errs[0])


# ----------------------------------------------------------------- Thm 5.5


def test_frozen_predictor_is_scaled_source():
    rng = np.random.default_rng(4)
    n, d = 7, 15
    X = rng.standard_normal((n, d))
    ts = rng.standard_normal(d)
    y = rng.standard_normal(n)
    beta = theory.linear_teachers.frozen_predictor(X, y, ts)
    c = np.linalg.lstsq((X @ ts)[:, None], y, rcond=None)[0][0]
    np.testing.assert_allclose(beta, c * ts, rtol=1e-12)


def test_frozen_first_layer_gd_stays_at_scaled_source():
    """Thm 5.5 by simulation: pretrain a two-layer net by gradient descent from 1e-5, freeze
    the first layer, train the last by gradient descent (1000 steps): the end-to-end vector
    is c theta_S with the least-squares c, to O(alpha) (1e-4 allowed, observed ~1e-6)."""
    rng = np.random.default_rng(10)
    B, n, d = 4, 6, 20
    ts = _unit(rng, B, d)
    Wp = models.deep_linear.pretrain_gd(ts, 2, 1e-5, seed=1)
    X = rng.standard_normal((B, n, d))
    y = np.einsum("bnd,bd->bn", X, 0.5 * ts + _unit(rng, B, d))
    beta = models.deep_linear.frozen_first_layer_gd(Wp, X, y, 1000)
    np.testing.assert_allclose(beta, theory.linear_teachers.frozen_predictor(X, y, ts), atol=1e-4)


# ----------------------------------------------------------------- Table 1 statistics


def test_r_squared_known_value():
    x = np.array([0.0, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(stats.r_squared(x, 2 * x + 1), 1.0)
    # y = x + e with e orthogonal to x and the constant: R^2 = var x / (var x + var e)
    e = np.array([1.0, -1.0, -1.0, 1.0])
    np.testing.assert_allclose(stats.r_squared(x, x + e), 5.0 / (5.0 + 4.0))
    np.testing.assert_allclose(stats.r_squared(x, -3 * x), 1.0)
    with pytest.raises(ValueError, match="constant"):
        stats.r_squared(x, np.ones(4))


def test_table_r2_on_synthetic_case():
    """A tiny Table 1: 2 repetitions, 2 sample sizes, K = 4 pairs, with known R^2."""
    x = np.array([0.0, 1.0, 2.0, 3.0])
    e = np.array([1.0, -1.0, -1.0, 1.0])
    errors = np.stack([np.stack([x + e, 2 * x]), np.stack([x - e, 3 * x + 1])])  # (2, 2, 4)
    out = stats.table_r2(errors, {"m": x})
    np.testing.assert_allclose(out["m"][0], [5 / 9, 1.0])
    np.testing.assert_allclose(out["m"][1], [0.0, 0.0], atol=1e-15)


def test_balanced_weights_are_balanced_with_the_source_end_to_end():
    rng = np.random.default_rng(5)
    ts = rng.standard_normal((3, 12)) * np.array([0.5, 1, 3])[:, None]
    for depth in (1, 2, 4):
        Ws = models.deep_linear.balanced_weights(ts, depth, seed=1)
        np.testing.assert_allclose(models.deep_linear.end_to_end(Ws).cpu().numpy(), ts, atol=1e-12)
        for j in range(depth - 1):   # Def. 5.1: W_j^T W_j = W_{j+1} W_{j+1}^T
            lhs = Ws[j].transpose(1, 2) @ Ws[j]
            rhs = Ws[j + 1] @ Ws[j + 1].transpose(1, 2)
            torch.testing.assert_close(lhs, rhs, rtol=0, atol=1e-12)


# ----------------------------------------------------------------- Table 1 pipeline


def _fake_digits(seed, N, d):
    rng = np.random.default_rng(seed)
    centers = rng.random((10, d))
    labels = rng.integers(0, 10, N)
    x = np.clip(centers[labels] + 0.3 * rng.standard_normal((N, d)), 0, 1).astype(np.float32)
    return x, labels


def test_task_teacher_is_least_squares_and_table_pipeline_runs():
    d = 20
    x, lab = _fake_digits(6, 3000, d)
    xt, labt = _fake_digits(7, 1000, d)
    G, s, cnt = experiments.mnist_table.digit_moments(x, lab)
    keep = (lab == 2) | (lab == 7)
    t = np.where(lab[keep] == 2, 1.0, -1.0)
    ref = np.linalg.lstsq(x[keep].astype(float), t, rcond=None)[0]
    np.testing.assert_allclose(experiments.mnist_table.task_teacher(G, s, 2, 7), ref, rtol=1e-8, atol=1e-10)
    lam, V = experiments.mnist_table.task_covariance(G, cnt, 2, 7)
    np.testing.assert_allclose((V * lam) @ V.T, x[keep].astype(float).T @ x[keep] / keep.sum(),
                               atol=1e-10)
    pairs = experiments.mnist_table.draw_task_pairs(5, seed=0)
    assert len({tuple(p) for p in pairs}) == 5 and all(len(set(p)) == 4 for p in pairs)
    out = experiments.mnist_table.mnist_table_sim(x, lab, xt, labt, pairs, [5, 8], draws=4, reps=2, seed=0)
    assert out.errors.shape == (2, 2, 5)
    assert ((out.errors >= 0) & (out.errors <= 1)).all()
    for r in out.r2.values():
        assert r.mean.shape == (2,) and ((r.mean >= 0) & (r.mean <= 1)).all() and (r.sd >= 0).all()
    # same seed, same numbers
    again = experiments.mnist_table.mnist_table_sim(x, lab, xt, labt, pairs, [5, 8], draws=4, reps=2, seed=0)
    np.testing.assert_array_equal(out.errors, again.errors)
    with pytest.raises(ValueError, match="5040"):
        experiments.mnist_table.draw_task_pairs(5041)


def test_thm52_edge_cases():
    """y = 0 (the flow shrinks the null-space part to ||P_perp theta_s||^L / ||theta_s||^(L-1)
    in norm), theta_s in the row space (pure interpolation), and huge depths stay finite."""
    rng = np.random.default_rng(8)
    n, d = 4, 10
    X = rng.standard_normal((n, d))
    bs = rng.standard_normal(d)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        for L in (2, 5, 10_000):
            beta = theory.linear_teachers.deep_finetune_predictor(X, np.zeros(n), bs, L)
            perp = theory.linear_teachers.null_space_projection(X, bs)
            rho = np.linalg.norm(perp) / np.linalg.norm(bs)
            np.testing.assert_allclose(np.linalg.norm(beta), np.linalg.norm(bs) * rho ** L,
                                       rtol=1e-8, atol=1e-200)
        in_row = X.T @ rng.standard_normal(n)
        y = rng.standard_normal(n)
        np.testing.assert_allclose(theory.linear_teachers.deep_finetune_predictor(X, y, in_row, 3),
                                   theory.linear_teachers.row_space_solution(X, y), atol=1e-12)
