"""Tests for :mod:`transferkit.models.deep_linear` (paper 000, Sec. 3; paper 001, Thm 5.2).

References are computed independently of the package: numpy ``pinv``/``lstsq``, a
high-accuracy ODE solution of gradient flow (``scipy.integrate.solve_ivp``) and the
closed forms of the theorems.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp

from transferkit import models

CPU = torch.device("cpu")


# tiny tensors: one intra-op thread (fixture in conftest.py)
pytestmark = pytest.mark.usefixtures("one_thread")


def _rngs(seed, B):
    return [np.random.default_rng([seed, b]) for b in range(B)]


def _t(x):
    return torch.as_tensor(np.array(x, dtype=float))


def _data(seed, B, n, d, noise=1.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((B, n, d))
    y = rng.standard_normal((B, n)) * noise
    return X, y


def _pinv_solution(X, y):
    return np.stack([np.linalg.pinv(X[b]) @ y[b] for b in range(X.shape[0])])


def _unit(rng, B, d):
    v = rng.standard_normal((B, d))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# ---------------------------------------------------------------------------
# objectives
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n, d", [(8, 20), (20, 20), (35, 20)])
def test_empirical_objective_reproduces_the_loss(n, d):
    B = 3
    X, y = _data(n, B, n, d)
    obj = models.deep_linear.empirical_objective(_t(X), _t(y))
    k = min(n, d)
    assert obj.V.shape == (B, d, k) and obj.lam.shape == (B, k)
    # V has orthonormal columns and lam are the eigenvalues of X^T X / n
    VtV = obj.V.transpose(1, 2) @ obj.V
    torch.testing.assert_close(VtV, torch.eye(k, dtype=torch.float64).expand(B, k, k),
                               rtol=0, atol=1e-10)
    for b in range(B):
        ev = np.sort(np.linalg.eigvalsh(X[b].T @ X[b] / n))[::-1][:k]
        np.testing.assert_allclose(np.sort(obj.lam[b].numpy())[::-1], ev, rtol=1e-9)
    # the minimiser is the minimum-norm least-squares solution
    np.testing.assert_allclose(obj.minimiser().numpy(), _pinv_solution(X, y), rtol=1e-8,
                               atol=1e-10)
    rng = np.random.default_rng(1)
    for _ in range(3):
        beta = rng.standard_normal((B, d))
        direct = np.sum((y - np.einsum("bnd,bd->bn", X, beta)) ** 2, axis=1) / (2 * n)
        # quadratic form in the eigenbasis
        c = (obj.V.transpose(1, 2) @ _t(beta)[..., None])[..., 0] - obj.beta_hat
        quad = 0.5 * (obj.lam * c ** 2).sum(1) + obj.loss_min
        np.testing.assert_allclose(quad.numpy(), direct, rtol=1e-9)
    loss_min = np.sum((y - np.einsum("bnd,bd->bn", X, _pinv_solution(X, y))) ** 2, 1) / (2 * n)
    np.testing.assert_allclose(obj.loss_min.numpy(), loss_min, rtol=1e-7, atol=1e-12)
    if n <= d:
        np.testing.assert_allclose(obj.loss_min.numpy(), 0.0, atol=1e-10)


def test_population_objective_is_half_squared_distance():
    rng = np.random.default_rng(0)
    bs = rng.standard_normal((2, 5))
    obj = models.deep_linear.population_objective(_t(bs))
    assert obj.V is None
    torch.testing.assert_close(obj.minimiser(), _t(bs))
    torch.testing.assert_close(obj.lam, torch.ones(2, 5, dtype=torch.float64))
    torch.testing.assert_close(obj.loss_min, torch.zeros(2, dtype=torch.float64))


def test_with_targets_keeps_the_eigenbasis():
    X, y = _data(2, 2, 6, 10)
    _, y2 = _data(3, 2, 6, 10)
    obj = models.deep_linear.empirical_objective(_t(X), _t(y))
    obj2 = models.deep_linear.empirical_objective(_t(X), _t(y2))
    re = obj.with_targets(obj2.beta_hat, obj2.loss_min)
    assert re.V is obj.V and re.lam is obj.lam
    np.testing.assert_allclose(re.minimiser().numpy(), _pinv_solution(X, y2), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("bad", ["shape_y", "shape_B", "ndim", "nan_X", "inf_y"])
def test_empirical_objective_rejects_bad_input(bad):
    X, y = _data(0, 2, 6, 10)
    if bad == "shape_y":
        y = y[:, :5]
    elif bad == "shape_B":
        y = y[:1]
    elif bad == "ndim":
        X = X[0]
    elif bad == "nan_X":
        X[1, 2, 3] = np.nan
    elif bad == "inf_y":
        y[0, 0] = np.inf
    with pytest.raises(ValueError):
        models.deep_linear.empirical_objective(_t(X), _t(y))


@pytest.mark.parametrize("n, d", [(6, 10), (15, 4)])
def test_empirical_objective_rejects_rank_deficient_X(n, d):
    # several exactly rank-deficient designs: each must raise (the failure above is
    # sign-of-rounding dependent, so one design alone could pass by luck)
    raised = []
    for seed in range(6):
        X, y = _data(seed, 1, n, d)
        if n < d:
            X[0, 1] = X[0, 0]          # two identical samples
        else:
            X[0, :, 3] = X[0, :, 2]    # two identical features
        try:
            models.deep_linear.empirical_objective(_t(X), _t(y))
            raised.append(False)
        except ValueError:
            raised.append(True)
    assert all(raised), raised


# ---------------------------------------------------------------------------
# gradient descent follows gradient flow
# ---------------------------------------------------------------------------


def _gradient_flow(Ws0, X, y, t_end=2000.0):
    """Gradient flow on 1/(2n)||y - X W_1...W_L||^2 by a high-order ODE solver (numpy)."""
    n, d = X.shape
    shapes = [W.shape for W in Ws0]
    sizes = [int(np.prod(s)) for s in shapes]
    L = len(Ws0)

    def unpack(z):
        out, i = [], 0
        for s, k in zip(shapes, sizes):
            out.append(z[i:i + k].reshape(s))
            i += k
        return out

    def rhs(_, z):
        Ws = unpack(z)
        beta = np.linalg.multi_dot(Ws)[:, 0] if L > 2 else (Ws[0] @ Ws[1])[:, 0]
        g = X.T @ (X @ beta - y) / n
        grads = []
        for l in range(L):
            left = np.eye(d)
            for W in Ws[:l]:
                left = left @ W
            right = np.ones((1, 1))
            for W in reversed(Ws[l + 1:]):
                right = W @ right
            grads.append(-np.outer(left.T @ g, right[:, 0]))
        return np.concatenate([gr.ravel() for gr in grads])

    z0 = np.concatenate([W.ravel() for W in Ws0])
    sol = solve_ivp(rhs, (0.0, t_end), z0, method="DOP853", rtol=1e-11, atol=1e-13)
    assert sol.success
    return np.linalg.multi_dot(unpack(sol.y[:, -1]) + [np.ones((1, 1))])[:, 0]


@pytest.mark.parametrize("depth", [2, 3])
def test_gd_converges_to_gradient_flow_limit_at_first_order(depth):
    # Moderate alpha: the limit of gradient flow depends on the path (it is far from
    # X^+ y), so only a faithful discretisation of the flow lands on it.
    d, n, p, alpha = 6, 3, 5, 0.6
    X, y = _data(3, 1, n, d)
    W0 = models.deep_linear.init_deep_linear(d, depth, alpha, [np.random.default_rng(7)], width=p, device=CPU)
    beta_flow = _gradient_flow([W[0].numpy() for W in W0], X[0], y[0])
    obj = models.deep_linear.empirical_objective(_t(X), _t(y))
    assert np.linalg.norm(beta_flow - obj.minimiser()[0].numpy()) > 0.1  # path matters
    err = {}
    for s in (0.5, 0.1):
        Ws, info = models.deep_linear.gradient_descent(W0, obj, loss_tol=1e-14, step_scale=s)
        assert info.all_converged
        err[s] = np.linalg.norm(models.deep_linear.end_to_end(Ws)[0].numpy() - beta_flow)
    assert err[0.1] < 1e-3
    # first-order method: the error shrinks ~ linearly with the step
    assert 3.0 < err[0.5] / err[0.1] < 8.0, err


def test_gd_does_not_modify_inputs_and_instances_are_independent():
    d, n, B = 12, 5, 3
    X, y = _data(11, B, n, d)
    obj = models.deep_linear.empirical_objective(_t(X), _t(y))
    W0 = models.deep_linear.init_deep_linear(d, 3, 0.3, _rngs(2, B), device=CPU)
    copies = [W.clone() for W in W0]
    for method in ("gd", "nesterov"):
        Ws, info = models.deep_linear.gradient_descent(W0, obj, loss_tol=1e-12, method=method)
        for W, C in zip(W0, copies):
            torch.testing.assert_close(W, C, rtol=0, atol=0)
        # instance 1 trained alone gives the same weights as in the batch
        obj1 = models.deep_linear.empirical_objective(_t(X[1:2]), _t(y[1:2]))
        Ws1, info1 = models.deep_linear.gradient_descent([W[1:2] for W in W0], obj1, loss_tol=1e-12, method=method)
        assert info1.steps[0] == info.steps[1]
        for W, W1 in zip(Ws, Ws1):
            torch.testing.assert_close(W1[0], W[1], rtol=1e-9, atol=1e-12)


def test_gd_leaves_null_space_rows_of_first_layer_untouched():
    # Gradients of W_1 lie in the row space of X (paper 001, proof of Thm 5.2).
    d, n, B = 15, 6, 2
    X, y = _data(5, B, n, d)
    W0 = models.deep_linear.init_deep_linear(d, 2, 0.5, _rngs(4, B), device=CPU)
    Ws, _ = models.deep_linear.gradient_descent(W0, models.deep_linear.empirical_objective(_t(X), _t(y)), loss_tol=1e-12)
    for b in range(B):
        Pn = np.eye(d) - np.linalg.pinv(X[b]) @ X[b]
        np.testing.assert_allclose(Pn @ Ws[0][b].numpy(), Pn @ W0[0][b].numpy(), atol=1e-10)
        assert np.linalg.norm(Ws[0][b].numpy() - W0[0][b].numpy()) > 0.1


def test_train_info_reports_the_true_excess_loss():
    d, n, B = 10, 20, 3
    X, y = _data(8, B, n, d)
    obj = models.deep_linear.empirical_objective(_t(X), _t(y))
    W0 = models.deep_linear.init_deep_linear(d, 2, 0.1, _rngs(1, B), device=CPU)
    Ws, info = models.deep_linear.gradient_descent(W0, obj, loss_tol=1e-9)
    beta = models.deep_linear.end_to_end(Ws).numpy()
    loss = np.sum((y - np.einsum("bnd,bd->bn", X, beta)) ** 2, 1) / (2 * n)
    loss_min = np.sum((y - np.einsum("bnd,bd->bn", X, _pinv_solution(X, y))) ** 2, 1) / (2 * n)
    np.testing.assert_allclose(info.excess_loss, loss - loss_min, rtol=1e-4, atol=1e-13)
    assert info.all_converged and (info.excess_loss <= 1e-9).all() and (info.steps > 0).all()


# ---------------------------------------------------------------------------
# pretraining: Lemma 3.3 and Thm 3.4
# ---------------------------------------------------------------------------


def _pretrain(d, depth, alpha, B, seed=0):
    bs = _unit(np.random.default_rng(seed), B, d)
    W0 = models.deep_linear.init_deep_linear(d, depth, alpha, _rngs(seed + 100, B), device=CPU)
    Ws, info = models.deep_linear.gradient_descent(W0, models.deep_linear.population_objective(_t(bs)), loss_tol=1e-14)
    assert info.all_converged
    return bs, W0, Ws


def test_pretraining_recovers_source_teacher_and_rank_one_features_depth2():
    d, B = 30, 3
    ratios = {}
    for alpha in (1e-5, 1e-4, 1e-3):
        bs, W0, Ws = _pretrain(d, 2, alpha, B)
        # Lemma 3.3: beta -> beta_s
        np.testing.assert_allclose(models.deep_linear.end_to_end(Ws).numpy(), bs, atol=1e-6)
        Phi = models.deep_linear.feature_map(Ws).numpy()
        r = []
        for b in range(B):
            U, s, Vt = np.linalg.svd(Phi[b])
            # Thm 3.4: the top feature direction is beta_s
            assert abs(U[:, 0] @ bs[b]) > 1 - 1e-8
            r.append(s[1] / s[0])
            # off the rank-one part, W_1 is still its initialisation alpha * W_bar
            Pu = np.eye(d) - np.outer(U[:, 0], U[:, 0])
            Pv = np.eye(d) - np.outer(Vt[0], Vt[0])
            pred = np.linalg.norm(Pu @ W0[0][b].numpy() @ Pv, 2)
            np.testing.assert_allclose(s[1], pred, rtol=1e-3)
        ratios[alpha] = np.array(r)
    # s2 / s1 proportional to alpha
    np.testing.assert_allclose(ratios[1e-4] / ratios[1e-5], 10.0, rtol=0.03)
    np.testing.assert_allclose(ratios[1e-3] / ratios[1e-4], 10.0, rtol=0.03)
    assert (ratios[1e-3] < 1e-2).all()


def test_pretraining_features_collapse_to_rank_one_depth3():
    d, B = 20, 2
    ratios = {}
    for alpha in (1e-4, 1e-3):
        bs, _, Ws = _pretrain(d, 3, alpha, B, seed=3)
        np.testing.assert_allclose(models.deep_linear.end_to_end(Ws).numpy(), bs, atol=1e-6)
        U, s, _ = np.linalg.svd(models.deep_linear.feature_map(Ws).numpy())
        np.testing.assert_allclose(np.abs(np.einsum("bi,bi->b", U[:, :, 0], bs)), 1.0, atol=1e-8)
        ratios[alpha] = s[:, 1] / s[:, 0]
    # the residual features vanish (at least) linearly in alpha
    assert (ratios[1e-3] < 1e-2).all()
    assert (ratios[1e-3] / ratios[1e-4] > 9.5).all()


# ---------------------------------------------------------------------------
# scratch training: Thm 3.5
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [20, 70])
@pytest.mark.parametrize("depth", [2, 3])
def test_scratch_training_reaches_min_norm_solution(n, depth):
    d, B = 40, 3
    X, y = _data(n + depth, B, n, d)
    obj = models.deep_linear.empirical_objective(_t(X), _t(y))
    mn = _pinv_solution(X, y)
    W0 = models.deep_linear.init_deep_linear(d, depth, 1e-5, _rngs(5, B), device=CPU)
    betas = {}
    for method in ("gd", "nesterov", "whitened"):
        Ws, info = models.deep_linear.gradient_descent(W0, obj, loss_tol=1e-12, method=method)
        assert info.all_converged
        betas[method] = models.deep_linear.end_to_end(Ws).numpy()
        assert np.linalg.norm(betas[method] - mn, axis=1).max() < 1e-3
    assert np.linalg.norm(betas["gd"] - betas["nesterov"], axis=1).max() < 1e-4
    assert np.linalg.norm(betas["gd"] - betas["whitened"], axis=1).max() < 1e-4


def test_whitened_descent_does_not_see_the_condition_number():
    """Near n = d (condition number ~1e4 here) plain and accelerated descent need hundreds
    to thousands of steps; descent in whitened coordinates needs about as many as on
    isotropic data, stops at the same excess loss, and ends nearer X^+ y."""
    d, n, B = 60, 58, 3
    X, y = _data(11, B, n, d)
    obj = models.deep_linear.empirical_objective(_t(X), _t(y))
    kappa = float((obj.lam.max(1).values / obj.lam.min(1).values).min())
    assert kappa > 1e3
    mn = _pinv_solution(X, y)
    W0 = models.deep_linear.init_deep_linear(d, 2, 1e-5, _rngs(6, B), device=CPU)
    out = {}
    for method in ("nesterov", "whitened"):
        Ws, info = models.deep_linear.gradient_descent(W0, obj, loss_tol=1e-10, method=method)
        assert info.all_converged and (info.excess_loss <= 1e-10).all()
        out[method] = (info.steps.max(),
                       np.linalg.norm(models.deep_linear.end_to_end(Ws).numpy() - mn, axis=1).max())
    assert out["whitened"][0] < 100 < 3 * out["whitened"][0] < out["nesterov"][0], out
    assert out["whitened"][1] < out["nesterov"][1], out
    # the population objective (no eigenbasis: V is None) and the refusals
    pop = models.deep_linear.population_objective(_t(np.ones((B, d)) / np.sqrt(d)))
    Ws, info = models.deep_linear.gradient_descent(W0, pop, loss_tol=1e-12, method="whitened")
    np.testing.assert_allclose(models.deep_linear.end_to_end(Ws).numpy(), 1 / np.sqrt(d), atol=1e-5)
    with pytest.raises(ValueError, match="weight_decay"):
        models.deep_linear.gradient_descent(W0, obj, method="whitened", weight_decay=0.1)
    with pytest.raises(ValueError, match="'whitened'"):
        models.deep_linear.gradient_descent(W0, obj, method="adam")


def test_distance_to_min_norm_grows_linearly_with_alpha():
    d, n, B = 30, 12, 3
    X, y = _data(21, B, n, d)
    obj = models.deep_linear.empirical_objective(_t(X), _t(y))
    mn = _pinv_solution(X, y)
    dist = {}
    for alpha in (1e-3, 1e-2):
        W0 = models.deep_linear.init_deep_linear(d, 2, alpha, _rngs(6, B), device=CPU)
        Ws, _ = models.deep_linear.gradient_descent(W0, obj, loss_tol=1e-14)
        dist[alpha] = np.linalg.norm(models.deep_linear.end_to_end(Ws).numpy() - mn, axis=1)
    assert (dist[1e-2] < 0.1).all() and (dist[1e-3] > 1e-5).all()
    np.testing.assert_allclose(dist[1e-2] / dist[1e-3], 10.0, rtol=0.05)


# ---------------------------------------------------------------------------
# fine-tuning: paper 001, Thm 5.2
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [2, 3])
def test_finetuning_rescales_null_space_component(depth):
    """Fine-tuning a pretrained deep net converges to (paper 001, Eq. 5)

        beta = k P_perp beta_s + X^+ y,   k = (||beta|| / ||beta_s||)^((L-1)/L),

    not to Thm 3.9's ``P_perp beta_s + X^+ y`` (k = 1).
    """
    d, n, B = 40, 10, 4
    bs, _, Wp = _pretrain(d, depth, 1e-5, B, seed=8)
    rng = np.random.default_rng(9)
    X = rng.standard_normal((B, n, d))
    y = np.einsum("bnd,bd->bn", X, 0.6 * bs + 0.8 * _unit(rng, B, d)) + 0.3 * rng.standard_normal((B, n))
    Ws, info = models.deep_linear.gradient_descent(Wp, models.deep_linear.empirical_objective(_t(X), _t(y)), loss_tol=1e-14,
                                  step_scale=0.2)
    assert info.all_converged
    beta = models.deep_linear.end_to_end(Ws).numpy()
    off_39 = []
    for b in range(B):
        Xp = np.linalg.pinv(X[b])
        mn = Xp @ y[b]
        perp = bs[b] - Xp @ (X[b] @ bs[b])
        k = 1.0
        for _ in range(200):   # fixed point of k = (k^2 |perp|^2 + |mn|^2)^((L-1)/2L)
            k = (k * k * perp @ perp + mn @ mn) ** ((depth - 1) / (2 * depth))
        assert np.linalg.norm(beta[b] - (mn + k * perp)) < 1e-2
        off_39.append(np.linalg.norm(beta[b] - (mn + perp)))
    # the rescaling is visible (k != 1 here), so Thm 3.9's k = 1 is off by more
    assert max(off_39) > 0.03


# ---------------------------------------------------------------------------
# convergence flags and validation
# ---------------------------------------------------------------------------


def test_convergence_warning_when_budget_too_small():
    d, n, B = 20, 10, 3
    X, y = _data(1, B, n, d)
    obj = models.deep_linear.empirical_objective(_t(X), _t(y))
    W0 = models.deep_linear.init_deep_linear(d, 2, 1e-5, _rngs(0, B), device=CPU)
    with pytest.warns(models.descent.ConvergenceWarning, match="did not reach"):
        Ws, info = models.deep_linear.gradient_descent(W0, obj, loss_tol=1e-12, max_steps=5)
    assert not info.converged.any() and not info.all_converged
    assert (info.steps == 5).all() and (info.excess_loss > 1e-12).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, info2 = models.deep_linear.gradient_descent(W0, obj, loss_tol=1e-12, max_steps=5, warn=False)
    assert not info2.converged.any()
    # zero steps: the initial weights come back
    with pytest.warns(models.descent.ConvergenceWarning):
        W_same, info0 = models.deep_linear.gradient_descent(W0, obj, max_steps=0)
    assert (info0.steps == 0).all()
    for W, V in zip(W0, W_same):
        torch.testing.assert_close(W, V, rtol=0, atol=1e-15)


def test_no_warning_when_converged():
    d, B = 10, 2
    bs = _unit(np.random.default_rng(0), B, d)
    W0 = models.deep_linear.init_deep_linear(d, 2, 1e-3, _rngs(0, B), device=CPU)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, info = models.deep_linear.gradient_descent(W0, models.deep_linear.population_objective(_t(bs)), loss_tol=1e-10)
    assert info.all_converged


@pytest.mark.parametrize("kwargs, match", [
    (dict(step_scale=0.0), "step_scale"), (dict(step_scale=2.0), "step_scale"),
    (dict(step_scale=-1.0), "step_scale"), (dict(step_scale=float("nan")), "step_scale"),
    (dict(method="adam"), "method"),
    (dict(loss_tol=0.0), "loss_tol"), (dict(loss_tol=-1.0), "loss_tol"),
    (dict(loss_tol=float("nan")), "loss_tol"),
    (dict(max_steps=-1), "max_steps"), (dict(max_steps=2.5), "max_steps"),
])
def test_gradient_descent_rejects_bad_arguments(kwargs, match):
    d, B = 6, 2
    bs = _unit(np.random.default_rng(0), B, d)
    W0 = models.deep_linear.init_deep_linear(d, 2, 1e-3, _rngs(0, B), device=CPU)
    with pytest.raises(ValueError, match=match):
        models.deep_linear.gradient_descent(W0, models.deep_linear.population_objective(_t(bs)), **kwargs)


def test_gradient_descent_rejects_mismatched_shapes():
    d, n = 8, 4
    X, y = _data(0, 2, n, d)
    obj = models.deep_linear.empirical_objective(_t(X), _t(y))
    with pytest.raises(ValueError, match="batch"):
        models.deep_linear.gradient_descent(models.deep_linear.init_deep_linear(d, 2, 1e-3, _rngs(0, 3), device=CPU), obj)
    with pytest.raises(ValueError, match="dimension"):
        models.deep_linear.gradient_descent(models.deep_linear.init_deep_linear(d + 1, 2, 1e-3, _rngs(0, 2), device=CPU), obj)


def test_non_finite_weights_or_targets_are_refused_with_value_error():
    d, B = 6, 2
    bs = _unit(np.random.default_rng(0), B, d)
    W0 = models.deep_linear.init_deep_linear(d, 2, 1e-3, _rngs(0, B), device=CPU)
    W0[1][1, 0, 0] = float("nan")
    for method in ("gd", "nesterov"):
        with pytest.raises(ValueError, match=r"Ws\[1\]"):
            models.deep_linear.gradient_descent(W0, models.deep_linear.population_objective(_t(bs)), method=method)
    W0 = models.deep_linear.init_deep_linear(d, 2, 1e-3, _rngs(0, B), device=CPU)
    bad = _t(bs).clone()
    bad[0, 0] = float("inf")
    with pytest.raises(ValueError, match="beta_hat"):
        models.deep_linear.gradient_descent(W0, models.deep_linear.population_objective(bad))


def test_divergence_raises_a_clear_error_not_nan_weights():
    # A genuine divergence cannot be provoked with step_scale < 2 (the step is bounded by
    # the curvature bound); finite weights whose loss overflows reach the same branch,
    # which must raise (a ValueError that is also a FloatingPointError) instead of
    # returning NaN weights.
    d, B = 6, 2
    bs = _unit(np.random.default_rng(0), B, d)
    W0 = models.deep_linear.init_deep_linear(d, 2, 1e-3, _rngs(0, B), device=CPU)
    W0 = [W * 1e160 for W in W0]
    for method in ("gd", "nesterov"):
        with pytest.raises(models.descent.DivergenceError, match="step_scale"):
            models.deep_linear.gradient_descent(W0, models.deep_linear.population_objective(_t(bs)), method=method)
    assert issubclass(models.descent.DivergenceError, ValueError)
    assert issubclass(models.descent.DivergenceError, FloatingPointError)


# ---------------------------------------------------------------------------
# feature_subspace, linear transfer and ridge linear transfer
# ---------------------------------------------------------------------------


def test_feature_subspace_rank_and_padding():
    rng = np.random.default_rng(0)
    d, p = 8, 6
    u = _unit(rng, 2, d)
    v = _unit(rng, 2, p)
    W1 = np.einsum("bi,bj->bij", u, v) + 1e-6 * rng.standard_normal((2, d, p))
    # instance 1: add a second strong direction -> rank 2
    u2 = rng.standard_normal(d)
    u2 -= (u2 @ u[1]) * u[1]
    u2 /= np.linalg.norm(u2)
    W1[1] += 0.5 * np.outer(u2, v[0])
    Ws = [_t(W1), _t(rng.standard_normal((2, p, 1)))]
    # the cutoff is relative to the largest singular value: rescaling changes nothing
    for scale in (1e-5, 1e5):
        _, _, rank_s, _ = models.deep_linear.feature_subspace([Ws[0] * scale, Ws[1]], rcond=1e-3)
        assert list(rank_s) == [1, 2], scale
    U, S, rank, svals = models.deep_linear.feature_subspace(Ws, rcond=1e-3)
    assert list(rank) == [1, 2]
    assert U.shape == (2, d, 2) and S.shape == (2, 2) and svals.shape == (2, p)
    assert S[0, 1] == 0 and torch.all(U[0, :, 1] == 0)
    np.testing.assert_allclose(abs(U[0, :, 0].numpy() @ u[0]), 1.0, atol=1e-9)
    for b in range(2):
        np.testing.assert_allclose(svals[b].numpy(), np.linalg.svd(W1[b], compute_uv=False),
                                   rtol=1e-10, atol=1e-15)
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="rcond"):
            models.deep_linear.feature_subspace(Ws, rcond=bad)
    for bad in (0, "no", None):                  # a switch, not a truthy value
        with pytest.raises(TypeError, match="spectrum"):
            models.deep_linear.feature_subspace(Ws, spectrum=bad)


def _spiked(rng, B, d, p, spikes, noise):
    """``(B, d, p)``: orthonormal rank-``len(spikes)`` part with singular values ``spikes``
    plus Gaussian noise of entry scale ``noise``."""
    out = np.zeros((B, d, p))
    for b in range(B):
        U = np.linalg.qr(rng.standard_normal((d, len(spikes))))[0]
        V = np.linalg.qr(rng.standard_normal((p, len(spikes))))[0]
        out[b] = (U * np.asarray(spikes)) @ V.T + noise * rng.standard_normal((d, p))
    return out


def test_feature_subspace_without_spectrum_is_the_full_decomposition_to_rounding():
    """spectrum=False: the certified block power iteration gives the rank, projector and
    singular values of the full SVD (to 1e-12), svals None; rank 1 and 2 in one batch."""
    rng = np.random.default_rng(3)
    d, p = 60, 40
    W1 = _spiked(rng, 3, d, p, [1.0], 1e-6)
    W1[1] += _spiked(rng, 1, d, p, [0.3], 0.0)[0]           # instance 1: rank 2
    Ws = [_t(W1), _t(rng.standard_normal((3, p, 1)))]
    assert models.deep_linear._top_singular(_t(W1), 1e-3) is not None     # the fast path
    U0, S0, r0, sv0 = models.deep_linear.feature_subspace(Ws, rcond=1e-3)
    U1, S1, r1, sv1 = models.deep_linear.feature_subspace(Ws, rcond=1e-3, spectrum=False)
    assert sv1 is None and sv0.shape == (3, p)
    assert list(r1) == list(r0) == [1, 2, 1]
    assert U1.shape == U0.shape and S1.shape == S0.shape
    P0, P1 = U0 @ U0.transpose(1, 2), U1 @ U1.transpose(1, 2)
    assert float((P0 - P1).abs().max()) < 1e-12
    assert float((S0 - S1).abs().max()) < 1e-12
    assert S1[0, 1] == 0 and torch.all(U1[0, :, 1] == 0)    # padding as the full path pads


@pytest.mark.parametrize("case", ["near the cutoff", "too many kept", "noise above the cutoff",
                                  "too small", "zero"])
def test_top_singular_declines_what_it_cannot_certify(case):
    """_top_singular returns None (and feature_subspace falls back to the full SVD, bit for
    bit) when a singular value sits near the cutoff, when q or more are kept, when the rest
    is not certainly below the cutoff, when the matrix has no more than q columns, or when an
    instance is zero (rank 0)."""
    rng = np.random.default_rng(4)
    d, p = 60, 40
    W1 = {"near the cutoff": _spiked(rng, 2, d, p, [1.0, 1.0005e-3], 1e-9),
          "too many kept": _spiked(rng, 2, d, p, list(np.linspace(1, 0.5, 8)), 1e-9),
          "noise above the cutoff": _spiked(rng, 2, d, p, [1.0], 1e-3),
          "too small": _spiked(rng, 2, 8, 8, [1.0], 1e-6),
          "zero": np.concatenate([_spiked(rng, 1, d, p, [1.0], 1e-9), np.zeros((1, d, p))])}[case]
    assert models.deep_linear._top_singular(_t(W1), 1e-3) is None
    Ws = [_t(W1), _t(rng.standard_normal((2, W1.shape[2], 1)))]
    full = models.deep_linear.feature_subspace(Ws, rcond=1e-3)
    fast = models.deep_linear.feature_subspace(Ws, rcond=1e-3, spectrum=False)
    assert torch.equal(full[0], fast[0]) and torch.equal(full[1], fast[1])
    assert list(full[2]) == list(fast[2]) and fast[3] is None


def _orthonormal(rng, B, d, r):
    return np.stack([np.linalg.qr(rng.standard_normal((d, r)))[0] for _ in range(B)])


@pytest.mark.parametrize("n", [2, 10, 40])
def test_linear_transfer_is_min_norm_least_squares_on_features(n):
    rng = np.random.default_rng(n)
    B, d, r, m = 3, 20, 3, 4
    U = _orthonormal(rng, B, d, r)
    X = rng.standard_normal((B, n, d))
    Y = rng.standard_normal((B, n, m))
    got = models.deep_linear.linear_transfer(_t(U), _t(X), _t(Y)).numpy()
    assert got.shape == (B, m, d)
    for b in range(B):
        coef = np.linalg.lstsq(X[b] @ U[b], Y[b], rcond=None)[0]    # min-norm for n < r
        np.testing.assert_allclose(got[b], (U[b] @ coef).T, rtol=1e-8, atol=1e-10)


def test_linear_transfer_rank_one_closed_form_and_padding():
    rng = np.random.default_rng(4)
    B, d, n, m = 4, 15, 9, 2
    bs = _unit(rng, B, d)
    X = rng.standard_normal((B, n, d))
    Y = rng.standard_normal((B, n, m))
    got = models.deep_linear.linear_transfer(_t(bs[..., None]), _t(X), _t(Y)).numpy()
    z = np.einsum("bnd,bd->bn", X, bs)
    b_coef = np.einsum("bn,bnm->bm", z, Y) / np.sum(z * z, 1)[:, None]
    np.testing.assert_allclose(got, b_coef[..., None] * bs[:, None, :], rtol=1e-10, atol=1e-12)
    # a zero-padded column (rank 1 in a rank-2 batch) drops out
    Upad = np.concatenate([bs[..., None], np.zeros((B, d, 1))], axis=2)
    np.testing.assert_allclose(models.deep_linear.linear_transfer(_t(Upad), _t(X), _t(Y)).numpy(), got,
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n", [5, 30])
def test_ridge_linear_transfer_lam0_equals_linear_transfer(n):
    rng = np.random.default_rng(n + 1)
    B, d, r, m = 2, 12, 3, 2
    U = _orthonormal(rng, B, d, r)
    S = rng.uniform(0.5, 2.0, (B, r))
    X = rng.standard_normal((B, n, d))
    Y = rng.standard_normal((B, n, m))
    np.testing.assert_allclose(models.deep_linear.ridge_linear_transfer(_t(U), _t(S), _t(X), _t(Y), 0.0).numpy(),
                               models.deep_linear.linear_transfer(_t(U), _t(X), _t(Y)).numpy(),
                               rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("lam", [0.0, 0.1, 2.0])
def test_ridge_linear_transfer_rank_one_closed_form(lam):
    rng = np.random.default_rng(7)
    B, d, n, m = 3, 10, 25, 2
    bs = _unit(rng, B, d)
    s = rng.uniform(0.5, 2.0, (B, 1))
    X = rng.standard_normal((B, n, d))
    Y = rng.standard_normal((B, n, m))
    got = models.deep_linear.ridge_linear_transfer(_t(bs[..., None]), _t(s), _t(X), _t(Y), lam).numpy()
    z = np.einsum("bnd,bd->bn", X, bs)
    # minimise 1/(2n)||s z w - y||^2 + lam/2 w^2, beta = s w beta_s
    s2 = s[:, 0] ** 2
    coef = s2[:, None] * np.einsum("bn,bnm->bm", z, Y) / (s2 * np.sum(z * z, 1) + n * lam)[:, None]
    np.testing.assert_allclose(got, coef[..., None] * bs[:, None, :], rtol=1e-10, atol=1e-12)


def test_ridge_linear_transfer_equals_ridge_on_full_feature_matrix():
    # Phi = X U S Q^T with a random orthonormal Q: the ridge solution for W_L on the
    # p-dimensional features, mapped through W_1...W_{L-1} = U S Q^T.
    rng = np.random.default_rng(3)
    B, d, r, p, n, lam = 2, 10, 2, 5, 14, 0.3
    U = _orthonormal(rng, B, d, r)
    Q = _orthonormal(rng, B, p, r)
    S = rng.uniform(0.5, 2.0, (B, r))
    X = rng.standard_normal((B, n, d))
    Y = rng.standard_normal((B, n, 1))
    got = models.deep_linear.ridge_linear_transfer(_t(U), _t(S), _t(X), _t(Y), lam).numpy()
    for b in range(B):
        F = U[b] * S[b] @ Q[b].T                     # d x p feature map
        Phi = X[b] @ F
        WL = np.linalg.solve(Phi.T @ Phi / n + lam * np.eye(p), Phi.T @ Y[b] / n)
        np.testing.assert_allclose(got[b, 0], (F @ WL)[:, 0], rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("lam", [-0.1, float("nan"), float("inf")])
def test_ridge_linear_transfer_rejects_bad_lambda(lam):
    rng = np.random.default_rng(0)
    U = _t(_orthonormal(rng, 1, 5, 1))
    with pytest.raises(ValueError, match="lam"):
        models.deep_linear.ridge_linear_transfer(U, _t(np.ones((1, 1))), _t(rng.standard_normal((1, 4, 5))),
                                _t(rng.standard_normal((1, 4, 1))), lam)


def test_train_scratch_and_finetune_wrappers():
    """The convenience wrappers reach X^+ y (scratch) and interpolate (fine-tuning)."""
    import numpy as np

    from transferkit.models.deep_linear import end_to_end

    rng = np.random.default_rng(5)
    X = torch.tensor(rng.standard_normal((2, 10, 20)))
    y = torch.tensor(rng.standard_normal((2, 10)))
    Ws, info = models.deep_linear.train_scratch(X, y, 2, 1e-5, [np.random.default_rng(b) for b in range(2)])
    assert info.all_converged
    ref = torch.linalg.pinv(X) @ y[..., None]
    assert torch.allclose(end_to_end(Ws), ref[..., 0], atol=1e-4)
    Wf, info_f = models.deep_linear.finetune(Ws, X, 2 * y)
    assert info_f.all_converged
    resid = (X @ end_to_end(Wf)[..., None])[..., 0] - 2 * y
    assert float(resid.abs().max()) < 1e-3


@pytest.mark.parametrize("n, d", [(6, 10), (10, 10), (15, 4)])
def test_relabel_equals_a_fresh_objective(n, d):
    """Quadratic.relabel re-uses the eigenbasis and gives the objective of the new labels."""
    rng = np.random.default_rng(11)
    X = torch.tensor(rng.standard_normal((2, n, d)))
    y1, y2 = (torch.tensor(rng.standard_normal((2, n))) for _ in range(2))
    re = models.deep_linear.empirical_objective(X, y1).relabel(X, y2)
    fresh = models.deep_linear.empirical_objective(X, y2)
    assert torch.allclose(re.minimiser(), fresh.minimiser(), atol=1e-9)
    assert torch.allclose(re.loss_min, fresh.loss_min, atol=1e-9)
    with pytest.raises(ValueError, match="empirical"):
        models.deep_linear.population_objective(torch.ones(2, 3, dtype=torch.float64)).relabel(X, y2)


# ---------------------------------------------------------------------------
# fine-tuning from the rank-one pretrained chain (finetune_chain)
# ---------------------------------------------------------------------------


def _chain_problem(depth, d=30, n=12, B=3, seed=21):
    bs, _, Wp = _pretrain(d, depth, 1e-5, B, seed=seed)
    rng = np.random.default_rng(seed + 1)
    X = rng.standard_normal((B, n, d))
    y = np.einsum("bnd,bd->bn", X, 0.6 * bs + 0.8 * _unit(rng, B, d)) + 0.3 * rng.standard_normal((B, n))
    obj = models.deep_linear.empirical_objective(_t(X), _t(y))
    chain = models.deep_linear.rank_one_chain(Wp)
    z0 = (obj.V.transpose(1, 2) @ chain.w[..., None])[..., 0]
    return bs, Wp, X, y, obj, chain, z0


def _chain_beta(obj, chain, z0, z, c):
    return (c.prod(1)[:, None] * (chain.w + (obj.V @ (z - z0)[..., None])[..., 0])).numpy()


@pytest.mark.parametrize("depth", [2, 3])
def test_rank_one_chain_of_pretrained_weights(depth):
    bs, Wp, *_, chain, _ = _chain_problem(depth)
    # the chain keeps the end-to-end vector and leaves out only O(alpha) of the weights
    np.testing.assert_allclose(chain.beta.numpy(), models.deep_linear.end_to_end(Wp).numpy(), atol=1e-12)
    assert (chain.residual.numpy() < 1e-3).all()
    # balanced: |w| = |c_l| = ||beta_s||^(1/L)
    np.testing.assert_allclose(chain.w.norm(dim=1).numpy(), 1.0, atol=1e-5)
    np.testing.assert_allclose(chain.c.abs().numpy(), 1.0, atol=1e-5)
    # the full layers of the chain have the same product
    np.testing.assert_allclose(models.deep_linear.end_to_end(chain.weights()).numpy(), chain.beta.numpy(), atol=1e-14)


@pytest.mark.parametrize("depth", [2, 3])
def test_finetune_chain_is_gradient_descent_on_the_full_network(depth):
    """Without the flow cap, finetune_chain takes exactly gradient_descent's steps."""
    bs, Wp, X, y, obj, chain, z0 = _chain_problem(depth)
    z, c, info = models.deep_linear.finetune_chain(chain, obj.lam, z0, obj.beta_hat, loss_tol=1e-12, flow_tol=None)
    Ws, ref = models.deep_linear.gradient_descent(chain.weights(), obj, loss_tol=1e-12)
    assert info.all_converged and ref.all_converged
    np.testing.assert_array_equal(info.steps, ref.steps)
    beta = _chain_beta(obj, chain, z0, z, c)
    np.testing.assert_allclose(beta, models.deep_linear.end_to_end(Ws).numpy(), atol=1e-12)
    # and, up to the O(alpha) the chain leaves out, fine-tuning of the pretrained weights
    Wf, _ = models.deep_linear.gradient_descent(Wp, obj, loss_tol=1e-12)
    np.testing.assert_allclose(beta, models.deep_linear.end_to_end(Wf).numpy(), atol=1e-6)


@pytest.mark.parametrize("depth", [2, 3])
def test_finetune_chain_reaches_the_gradient_flow_limit_of_thm_5_2(depth):
    """With the flow cap the limit is paper 001's Thm 5.2 predictor; plain curvature steps
    change the layer imbalances by O(eta * loss) and miss it by more."""
    from transferkit.theory.linear_teachers import deep_finetune_predictor

    bs, Wp, X, y, obj, chain, z0 = _chain_problem(depth)
    pred = deep_finetune_predictor(X, y, chain.beta.numpy(), depth)
    z, c, info = models.deep_linear.finetune_chain(chain, obj.lam, z0, obj.beta_hat, loss_tol=1e-12, flow_tol=3e-4)
    assert info.all_converged and (info.imbalance_drift < 1e-3).all()
    beta = _chain_beta(obj, chain, z0, z, c)
    err = np.linalg.norm(beta - pred, axis=1)
    assert err.max() < 2e-3
    # row-space certificate holds
    row = np.linalg.norm(np.einsum("bdk,bd->bk", obj.V.numpy(), beta) - obj.beta_hat.numpy(), axis=1)
    assert (row <= info.row_error * (1 + 1e-6) + 1e-12).all()
    zf, cf, inf_f = models.deep_linear.finetune_chain(chain, obj.lam, z0, obj.beta_hat, loss_tol=1e-12, flow_tol=None)
    err_fast = np.linalg.norm(_chain_beta(obj, chain, z0, zf, cf) - pred, axis=1)
    assert inf_f.imbalance_drift.max() > 10 * info.imbalance_drift.max()
    assert err_fast.max() > 3 * err.max()


def test_finetune_chain_compaction_does_not_change_the_iterates():
    bs, Wp, X, y, obj, chain, z0 = _chain_problem(2, B=5)
    kw = dict(loss_tol=1e-12, flow_tol=1e-2)
    kw["engine"] = "torch"        # compaction is the torch loop's (the kernel runs one by one)
    a = models.deep_linear.finetune_chain(chain, obj.lam, z0, obj.beta_hat, compact=0.0, **kw)
    b = models.deep_linear.finetune_chain(chain, obj.lam, z0, obj.beta_hat, compact=0.9, **kw)
    np.testing.assert_array_equal(a[2].steps, b[2].steps)
    torch.testing.assert_close(a[0], b[0], rtol=0, atol=1e-13)
    torch.testing.assert_close(a[1], b[1], rtol=0, atol=1e-13)


@pytest.mark.parametrize("depth", [2, 3, 4])
@pytest.mark.parametrize("flow_tol, check_every, max_steps",
                         [(None, 10, 1_000_000), (1e-3, 10, 1_000_000), (1e-2, 1, 1_000_000),
                          (1e-3, 7, 40)])
def test_finetune_chain_kernel_takes_the_torch_loops_steps(depth, flow_tol, check_every, max_steps):
    """The compiled CPU kernel and the batched torch loop: the same steps, the same
    convergence flags, iterates equal to rounding (also when stopped at ``max_steps``)."""
    bs, Wp, X, y, obj, chain, z0 = _chain_problem(depth, B=5)
    kw = dict(loss_tol=1e-12, flow_tol=flow_tol, check_every=check_every, max_steps=max_steps,
              warn=False)
    zt, ct, it = models.deep_linear.finetune_chain(chain, obj.lam, z0, obj.beta_hat, engine="torch", **kw)
    zk, ck, ik = models.deep_linear.finetune_chain(chain, obj.lam, z0, obj.beta_hat, engine="kernel", **kw)
    za, ca, ia = models.deep_linear.finetune_chain(chain, obj.lam, z0, obj.beta_hat, **kw)
    np.testing.assert_array_equal(ik.steps, it.steps)
    np.testing.assert_array_equal(ik.converged, it.converged)
    assert (max_steps == 40) == (not it.all_converged)
    torch.testing.assert_close(zk, zt, rtol=0, atol=1e-12)
    torch.testing.assert_close(ck, ct, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ik.excess_loss, it.excess_loss, rtol=1e-8, atol=1e-20)
    np.testing.assert_allclose(ik.imbalance_drift, it.imbalance_drift, rtol=1e-6, atol=1e-14)
    # float64 on the CPU: "auto" is the kernel, bit for bit
    torch.testing.assert_close(za, zk, rtol=0, atol=0)
    np.testing.assert_array_equal(ia.steps, ik.steps)


def test_finetune_chain_engines_refuse_and_diverge_alike():
    bs, Wp, X, y, obj, chain, z0 = _chain_problem(2, B=2)
    with pytest.raises(ValueError, match="engine"):
        models.deep_linear.finetune_chain(chain, obj.lam, z0, obj.beta_hat, engine="numba")
    f32 = lambda t: t.to(torch.float32)  # noqa: E731
    with pytest.raises(ValueError, match="float64 tensors on the CPU"):
        models.deep_linear.finetune_chain(chain, f32(obj.lam), f32(z0), f32(obj.beta_hat),
                                          engine="kernel")
    # an overflowing loss is a DivergenceError on both engines, not a NaN result
    huge = torch.full_like(obj.lam, 1e300)
    for engine in ("torch", "kernel"):
        with pytest.raises(models.descent.DivergenceError, match="diverged"):
            models.deep_linear.finetune_chain(chain, huge, z0, obj.beta_hat * 1e10, engine=engine)


def test_finetune_chain_validation():
    bs, Wp, X, y, obj, chain, z0 = _chain_problem(2, B=2)
    for kw, match in ((dict(step_scale=2.0), "step_scale"), (dict(loss_tol=0.0), "loss_tol"),
                      (dict(flow_tol=-1.0), "flow_tol"), (dict(compact=1.0), "compact"),
                      (dict(max_steps=-1), "max_steps")):
        with pytest.raises(ValueError, match=match):
            models.deep_linear.finetune_chain(chain, obj.lam, z0, obj.beta_hat, **kw)
    with pytest.raises(ValueError, match="same shape"):
        models.deep_linear.finetune_chain(chain, obj.lam, z0[:, :-1], obj.beta_hat)
    bad = obj.beta_hat.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="target"):
        models.deep_linear.finetune_chain(chain, obj.lam, z0, bad)
    with pytest.raises(ValueError, match="2 layers"):
        models.deep_linear.rank_one_chain(Wp[:1])
    with pytest.warns(models.descent.ConvergenceWarning):
        _, _, info = models.deep_linear.finetune_chain(chain, obj.lam, z0, obj.beta_hat, max_steps=3)
    assert not info.converged.any()


# ---------------------------------------------------------------------------
# weight decay (paper 000, App. E, Fig. 5)
# ---------------------------------------------------------------------------

def _wd_problem(seed, B, n, d, sigma=0.2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((B, n, d))
    beta = rng.standard_normal((B, d))
    beta /= np.linalg.norm(beta, axis=1, keepdims=True)
    y = np.einsum("bnd,bd->bn", X, beta) + sigma * rng.standard_normal((B, n))
    return _t(X), _t(y)


def _wd_reference(X, y, wd):
    """Independent numpy/scipy minimiser of 1/2n ||y - X b||^2 + wd ||b|| (convex)."""
    from scipy.optimize import minimize
    X, y = X.numpy(), y.numpy()
    out = []
    for Xb, yb in zip(X, y):
        n = Xb.shape[0]
        b0 = np.linalg.lstsq(Xb, yb, rcond=None)[0] * 0.5
        f = lambda b: 0.5 / n * np.sum((yb - Xb @ b) ** 2) + wd * np.sqrt(b @ b + 1e-300)
        grad = lambda b: -Xb.T @ (yb - Xb @ b) / n + wd * b / np.sqrt(b @ b + 1e-300)
        res = minimize(f, b0, jac=grad, method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-12,
                                                                     "maxiter": 20000})
        out.append(res.x)
    return np.array(out)


@pytest.mark.parametrize("n", [8, 30])
def test_weight_decay_minimiser_matches_convex_reference(n):
    X, y = _wd_problem(1, 3, n, 16)
    obj = models.deep_linear.empirical_objective(X, y)
    beta, mu = models.deep_linear.weight_decay_minimiser(obj, 0.05)
    ref = _wd_reference(X, y, 0.05)
    assert np.abs(beta.numpy() - ref).max() < 1e-5
    # stationarity: Sigma (beta - beta_hat) + wd beta / ||beta|| = 0, and mu = wd / ||beta||
    assert torch.allclose(mu, 0.05 / beta.norm(dim=1), rtol=1e-10)


@pytest.mark.parametrize("method", ["gd", "nesterov"])
@pytest.mark.parametrize("n", [8, 30])
def test_weight_decay_training_reaches_closed_form(method, n):
    X, y = _wd_problem(2, 3, n, 16)
    obj = models.deep_linear.empirical_objective(X, y)
    W0 = models.deep_linear.init_deep_linear(16, 2, 1e-4, _rngs(3, 3), device=CPU)
    Ws, info = models.deep_linear.gradient_descent(W0, obj, weight_decay=0.05, method=method, loss_tol=1e-22,
                                  max_steps=200_000)
    assert info.all_converged
    beta, _ = models.deep_linear.weight_decay_minimiser(obj, 0.05)
    assert (models.deep_linear.end_to_end(Ws) - beta).norm(dim=1).max() < 1e-8
    # balanced at the minimum: W1^T W1 = w2 w2^T (the weight-decay flow drives it to zero)
    gap = Ws[0].transpose(1, 2) @ Ws[0] - Ws[1] @ Ws[1].transpose(1, 2)
    assert gap.abs().max() < 1e-6


def test_weight_decay_zero_is_bit_identical_and_validated():
    X, y = _wd_problem(4, 2, 10, 12)
    obj = models.deep_linear.empirical_objective(X, y)
    W0 = models.deep_linear.init_deep_linear(12, 2, 0.1, _rngs(5, 2), device=CPU)
    for method in ("gd", "nesterov"):
        a, ia = models.deep_linear.gradient_descent(W0, obj, method=method, loss_tol=1e-8)
        b, ib = models.deep_linear.gradient_descent(W0, obj, method=method, loss_tol=1e-8, weight_decay=0.0)
        assert all(torch.equal(u, v) for u, v in zip(a, b))
        assert np.array_equal(ia.steps, ib.steps)
    for bad in (-1e-3, float("nan"), float("inf"), True, "0.1"):
        with pytest.raises(ValueError, match="weight_decay"):
            models.deep_linear.gradient_descent(W0, obj, weight_decay=bad)
        with pytest.raises(ValueError, match="weight_decay"):
            models.deep_linear.weight_decay_minimiser(obj, bad)
    with pytest.raises(ValueError, match="weight_decay"):
        models.deep_linear.weight_decay_minimiser(obj, 0.0)


def test_weight_decay_population_and_threshold():
    # population objective (Sigma = I): the minimiser shrinks the norm by wd, zero beyond it
    rng = np.random.default_rng(6)
    bs = _t(rng.standard_normal((3, 10)))
    bs = bs / bs.norm(dim=1, keepdim=True) * _t([0.5, 1.0, 2.0])[:, None]
    obj = models.deep_linear.population_objective(bs)
    beta, mu = models.deep_linear.weight_decay_minimiser(obj, 0.7)
    expect = bs * (1 - 0.7 / bs.norm(dim=1, keepdim=True)).clamp_min(0)
    assert torch.allclose(beta, expect, atol=1e-12)
    assert torch.isinf(mu[0]) and torch.isfinite(mu[1:]).all()
    W0 = models.deep_linear.init_deep_linear(10, 2, 1e-3, _rngs(7, 3), device=CPU)
    Ws, info = models.deep_linear.gradient_descent(W0, obj, weight_decay=0.7, loss_tol=1e-24, max_steps=200_000)
    assert info.all_converged
    assert (models.deep_linear.end_to_end(Ws) - expect).norm(dim=1).max() < 1e-8
