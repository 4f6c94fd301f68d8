"""Tests for :mod:`transferkit.models.deep_linear` (batched deep linear networks).

Every quantity is held against an independent computation: explicit numpy
matrix products, ``torch.autograd`` gradients and ``torch.autograd.functional``
Hessians of a loss written out directly in the weights.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _helpers import hessian_norm

from transferkit import models

CPU = torch.device("cpu")


# tiny tensors: one intra-op thread (fixture in conftest.py)
pytestmark = pytest.mark.usefixtures("one_thread")


def _rngs(seed, B):
    return [np.random.default_rng([seed, b]) for b in range(B)]


def _random_net(rng, dims, B, scale=1.0):
    """``B`` instances of a net with layer shapes ``dims[l] x dims[l+1]`` (float64, CPU)."""
    return [torch.tensor(scale * rng.standard_normal((B, dims[l], dims[l + 1])))
            for l in range(len(dims) - 1)]


def _np_product(mats):
    out = mats[0]
    for m in mats[1:]:
        out = out @ m
    return out


def _spd(rng, d):
    A = rng.standard_normal((d, d))
    return A @ A.T / d + 0.1 * np.eye(d)


# ---------------------------------------------------------------------------
# end_to_end, right_products, feature_map
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_end_to_end_is_the_explicit_product(depth):
    rng = np.random.default_rng(depth)
    d, p, B = 5, 4, 3
    dims = [d] + [p + l for l in range(depth - 1)] + [1]   # unequal widths on purpose
    Ws = _random_net(rng, dims, B)
    beta = models.deep_linear.end_to_end(Ws)
    assert beta.shape == (B, d)
    for b in range(B):
        expected = _np_product([W[b].numpy() for W in Ws])[:, 0]
        np.testing.assert_allclose(beta[b].numpy(), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_right_products_and_feature_map(depth):
    rng = np.random.default_rng(10 + depth)
    d, p, B = 4, 3, 2
    dims = [d] + [p] * (depth - 1) + [1]
    Ws = _random_net(rng, dims, B)
    r = models.deep_linear.right_products(Ws)
    Phi = models.deep_linear.feature_map(Ws)
    assert Phi.shape == (B, d, p)
    for b in range(B):
        mats = [W[b].numpy() for W in Ws]
        for l in range(depth):
            expected = _np_product(mats[l + 1:]) if l < depth - 1 else np.ones((1, 1))
            assert r[l][b].shape == (dims[l + 1], 1)
            np.testing.assert_allclose(r[l][b].numpy(), expected, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(Phi[b].numpy(), _np_product(mats[:-1]), rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------
# layer_gradients against autograd
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_layer_gradients_match_autograd(depth):
    rng = np.random.default_rng(100 + depth)
    d, p, B = 6, 5, 3
    dims = [d] + [p] * (depth - 1) + [1]
    Ws = _random_net(rng, dims, B, scale=0.7)
    Sig = torch.tensor(np.stack([_spd(rng, d) for _ in range(B)]))
    bhat = torch.tensor(rng.standard_normal((B, d)))

    # autograd on the loss written directly in the weights (explicit chain of matmuls)
    leaves = [W.clone().requires_grad_(True) for W in Ws]
    prod = leaves[0]
    for W in leaves[1:]:
        prod = prod @ W
    diff = prod[..., 0] - bhat
    loss = 0.5 * torch.einsum("bi,bij,bj->", diff, Sig, diff)
    grads = torch.autograd.grad(loss, leaves)

    beta = models.deep_linear.end_to_end(Ws)
    g = (Sig @ (beta - bhat)[..., None])[..., 0]
    a, r = models.deep_linear.layer_gradients(Ws, g)
    assert len(a) == len(r) == depth
    for l in range(depth):
        assert a[l].shape == (B, dims[l], 1) and r[l].shape == (B, dims[l + 1], 1)
        got = a[l] @ r[l].transpose(1, 2)
        np.testing.assert_allclose(got.numpy(), grads[l].numpy(), rtol=1e-10, atol=1e-12)
    # passing precomputed right products gives the same factors
    a2, _ = models.deep_linear.layer_gradients(Ws, g, models.deep_linear.right_products(Ws))
    for l in range(depth):
        torch.testing.assert_close(a2[l], a[l], rtol=0, atol=0)


# ---------------------------------------------------------------------------
# curvature_bound against the true Hessian
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [2, 3, 4])
@pytest.mark.parametrize("scale", [1e-6, 1e-2, 0.3, 1.0, 2.0])
def test_curvature_bound_dominates_hessian(depth, scale):
    rng = np.random.default_rng([depth, int(-math.log10(scale) * 10) + 50])
    d, p, B = 3, 3, 4
    dims = [d] + [p] * (depth - 1) + [1]
    Ws = _random_net(rng, dims, B, scale=scale)
    Sig = np.stack([_spd(rng, d) for _ in range(B)])
    bhat = rng.standard_normal((B, d))
    beta = models.deep_linear.end_to_end(Ws).numpy()
    g = np.einsum("bij,bj->bi", Sig, beta - bhat)
    sq = torch.stack([torch.linalg.vector_norm(W, dim=(1, 2)) ** 2 for W in Ws])
    lam_max = torch.tensor(np.linalg.eigvalsh(Sig)[:, -1])
    bound = models.deep_linear.curvature_bound(sq, lam_max, torch.tensor(np.linalg.norm(g, axis=1)))
    assert bound.shape == (B,)
    for b in range(B):
        true = hessian_norm([W[b] for W in Ws], torch.tensor(Sig[b]), torch.tensor(bhat[b]))
        assert bound[b].item() >= true * (1 - 1e-10), (b, bound[b].item(), true)


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_curvature_bound_is_tight_for_width_one_at_a_minimum(depth):
    # Width 1, Sigma = c I and g = 0: the Hessian is c J^T J with
    # ||J J^T|| = sum_l prod_{k != l} ||W_k||_F^2 exactly, i.e. the Gauss-Newton term.
    rng = np.random.default_rng(depth + 30)
    d, c = 4, 1.7
    dims = [d] + [1] * (depth - 1) + [1]
    Ws = _random_net(rng, dims, 1)
    beta = models.deep_linear.end_to_end(Ws)[0]
    sq = torch.stack([torch.linalg.vector_norm(W, dim=(1, 2)) ** 2 for W in Ws])
    bound = models.deep_linear.curvature_bound(sq, torch.tensor([c], dtype=torch.float64),
                              torch.zeros(1, dtype=torch.float64))
    true = hessian_norm([W[0] for W in Ws], c * torch.eye(d, dtype=torch.float64), beta)
    assert bound.item() == pytest.approx(true, rel=1e-9)


def test_curvature_bound_depth2_at_zero_is_twice_residual():
    # At W = 0 (depth 2) the Hessian is [[0, -g (x) I], [., 0]] with norm ||g||; the bound
    # has no Gauss-Newton part and a residual part 2 ||g|| (sum over ordered pairs).
    sq = torch.zeros(2, 3, dtype=torch.float64)
    gn = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64)
    bound = models.deep_linear.curvature_bound(sq, torch.ones(3, dtype=torch.float64), gn)
    torch.testing.assert_close(bound, 2 * gn)


# ---------------------------------------------------------------------------
# init_deep_linear
# ---------------------------------------------------------------------------


def test_init_shapes_scale_and_reproducibility_per_instance():
    d, depth, alpha, width = 7, 3, 0.1, 5
    Ws = models.deep_linear.init_deep_linear(d, depth, alpha, _rngs(3, 4), width=width, device=CPU)
    assert [tuple(W.shape) for W in Ws] == [(4, d, width), (4, width, width), (4, width, 1)]
    assert all(W.dtype == torch.float64 and W.device == CPU for W in Ws)
    # instance b depends on rngs[b] only: the same generator in another batch and position
    other = models.deep_linear.init_deep_linear(d, depth, alpha,
                               [np.random.default_rng(99), np.random.default_rng([3, 2])],
                               width=width, device=CPU)
    alone = models.deep_linear.init_deep_linear(d, depth, alpha, [np.random.default_rng([3, 2])], width=width,
                               device=CPU)
    for W, Wo, Wa in zip(Ws, other, alone):
        torch.testing.assert_close(Wo[1], W[2], rtol=0, atol=0)
        torch.testing.assert_close(Wa[0], W[2], rtol=0, atol=0)
    # weights are alpha times unit-variance-per-fan-in Gaussians: alpha enters linearly
    Ws2 = models.deep_linear.init_deep_linear(d, depth, 2 * alpha, _rngs(3, 4), width=width, device=CPU)
    for W, W2 in zip(Ws, Ws2):
        torch.testing.assert_close(W2, 2 * W, rtol=1e-15, atol=0)
    assert not torch.equal(Ws[0][0], Ws[0][1])


def test_init_lecun_variance():
    d, width, alpha, B = 40, 30, 0.5, 100
    Ws = models.deep_linear.init_deep_linear(d, 3, alpha, _rngs(1, B), width=width, device=CPU)
    fan_in = [d, width, width]
    for W, f in zip(Ws, fan_in):
        x = W.numpy().ravel() / alpha
        # Gaussian entries of variance 1/f: sample variance within 4 standard errors
        tol = 4 * np.sqrt(2.0 / x.size)
        assert abs(np.mean(x ** 2) * f - 1) < tol, (f, np.mean(x ** 2) * f, tol)
        assert abs(np.mean(x)) * np.sqrt(f * x.size) < 4


def test_init_default_width_is_d():
    Ws = models.deep_linear.init_deep_linear(4, 2, 1.0, _rngs(0, 1), device=CPU)
    assert tuple(Ws[0].shape) == (1, 4, 4) and tuple(Ws[1].shape) == (1, 4, 1)


@pytest.mark.parametrize("kwargs, name", [
    (dict(d=0), "d"), (dict(d=2.5), "d"), (dict(d=-3), "d"),
    (dict(depth=1), "depth"), (dict(depth=2.5), "depth"), (dict(depth=0), "depth"),
    (dict(alpha=0.0), "alpha"), (dict(alpha=-1e-3), "alpha"), (dict(alpha=float("nan")), "alpha"),
    (dict(alpha=float("inf")), "alpha"),
    (dict(width=0), "width"), (dict(width=1.5), "width"),
])
def test_init_rejects_bad_arguments(kwargs, name):
    args = dict(d=4, depth=2, alpha=1e-3, width=None)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        models.deep_linear.init_deep_linear(args["d"], args["depth"], args["alpha"], _rngs(0, 2),
                           width=args["width"], device=CPU)


def test_init_rejects_infinite_d_with_value_error():
    with pytest.raises(ValueError, match="d"):
        models.deep_linear.init_deep_linear(float("inf"), 2, 1e-3, _rngs(0, 1), device=CPU)


def test_as_tensor_copies_numpy():
    x = np.arange(3.0)
    t = models.device.as_tensor(x, CPU)
    x[0] = 99.0
    assert t.dtype == torch.float64 and t[0].item() == 0.0
