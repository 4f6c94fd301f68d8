r"""Deep linear networks, batched over independent instances.

A depth-:math:`L` linear network (paper 000, Eq. 7)

.. math::  f(\mathbf x) = \mathbf x^\top W_1 W_2 \cdots W_L,
           \qquad W_l \in \mathbb R^{p_{l-1}\times p_l},\ p_0 = d,\ p_L = 1,

is represented by a list of ``L`` tensors of shape ``(B, p_{l-1}, p_l)``: the leading
dimension ``B`` indexes independent instances (data draws, grid cells) that are trained
together as one batched tensor program.  Everything here is a small pure function of the
weights; the trainers in :mod:`transferkit.trainers` compose them.

Because the network is linear, the loss depends on the weights only through the
end-to-end vector :math:`\beta = W_1 \cdots W_L`.  For any loss :math:`\ell(\beta)` with
function-space gradient :math:`\mathbf g = \nabla_\beta \ell`, the gradient with respect to
layer :math:`l` is the rank-one matrix

.. math::  \nabla_{W_l} \ell = (W_1\cdots W_{l-1})^\top \mathbf g\,
           (W_{l+1}\cdots W_L)^\top = \mathbf a_l \mathbf r_l^\top ,

which :func:`layer_gradients` returns as the pair of factors; no autograd is needed and
a gradient step costs a handful of batched matrix-vector products.
"""
from __future__ import annotations

import numpy as np
import torch

from ._validate import check_int, check_positive

__all__ = [
    "default_device",
    "as_tensor",
    "init_deep_linear",
    "right_products",
    "end_to_end",
    "layer_gradients",
    "feature_map",
    "curvature_bound",
]


def default_device() -> torch.device:
    """The GPU when one is present, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def as_tensor(x, device=None, dtype=torch.float64) -> torch.Tensor:
    """A new tensor on the default device holding a copy of ``x`` (never shares memory)."""
    return torch.tensor(np.asarray(x), dtype=dtype, device=device or default_device())


def init_deep_linear(d: int, depth: int, alpha: float, rngs, width: int | None = None,
                     device=None, dtype=torch.float64) -> list[torch.Tensor]:
    r"""Small random initialisation :math:`W_l(0) = \alpha \bar W_l` (paper 000, Sec. 3).

    :math:`\bar W_l` has i.i.d. :math:`\mathcal N(0, 1/p_{l-1})` entries (LeCun scaling), so
    the end-to-end vector at initialisation is :math:`O(\alpha^L)`.  ``rngs`` is a sequence
    of :class:`numpy.random.Generator`, one per instance: instance ``b`` draws its weights
    from ``rngs[b]`` alone, so its numbers do not depend on the batch it is trained in.

    Parameters
    ----------
    d : int
        Input dimension (>= 1).
    depth : int
        Number of layers ``L`` (>= 2).
    alpha : float
        Initialisation scale (> 0).  The feature-learning regime of the paper is
        ``alpha -> 0``; App. D uses ``1e-5``.
    rngs : sequence of numpy.random.Generator
        One generator per instance; the batch size is ``len(rngs)``.
    width : int, optional
        Hidden width ``p_1 = ... = p_{L-1}``; defaults to ``d`` as in the paper.
    """
    d = check_int("d", d, 1)
    depth = check_int("depth", depth, 2)
    alpha = check_positive("alpha", alpha)
    width = d if width is None else check_int("width", width, 1)
    dims = [d] + [width] * (depth - 1) + [1]
    layers = []
    for l in range(depth):
        w = np.stack([r.standard_normal((dims[l], dims[l + 1])) for r in rngs])
        layers.append(as_tensor(alpha * w / np.sqrt(dims[l]), device, dtype))
    return layers


def right_products(Ws: list[torch.Tensor]) -> list[torch.Tensor]:
    r"""Right factors :math:`\mathbf r_l = W_{l+1}\cdots W_L` of shape ``(B, p_l, 1)``.

    ``r[L-1]`` is the scalar one; ``W_1 r_1`` is the end-to-end vector.
    """
    L = len(Ws)
    r = [None] * L
    r[L - 1] = torch.ones_like(Ws[-1][:, :1, :])
    for l in range(L - 2, -1, -1):
        r[l] = Ws[l + 1] @ r[l + 1]
    return r


def end_to_end(Ws: list[torch.Tensor]) -> torch.Tensor:
    r"""End-to-end regression vector :math:`\beta = W_1\cdots W_L`, shape ``(B, d)``."""
    return (Ws[0] @ right_products(Ws)[0])[..., 0]


def layer_gradients(Ws, g, r=None):
    r"""Rank-one factors of :math:`\nabla_{W_l}\ell = \mathbf a_l \mathbf r_l^\top`.

    Parameters
    ----------
    Ws : list of tensors ``(B, p_{l-1}, p_l)``
    g : tensor ``(B, d)``
        Function-space gradient :math:`\nabla_\beta \ell`.
    r : list, optional
        Output of :func:`right_products` (recomputed when omitted).

    Returns
    -------
    a, r : lists of tensors ``(B, p_{l-1}, 1)`` and ``(B, p_l, 1)``.
    """
    if r is None:
        r = right_products(Ws)
    a = [g[..., None]]
    for l in range(len(Ws) - 1):
        a.append(Ws[l].transpose(1, 2) @ a[l])
    return a, r


def feature_map(Ws: list[torch.Tensor]) -> torch.Tensor:
    r"""Hidden features :math:`\Phi = W_1\cdots W_{L-1}` (paper 000, Thm 3.4), ``(B, d, p)``."""
    M = Ws[0]
    for W in Ws[1:-1]:
        M = M @ W
    return M


def curvature_bound(sq_norms: torch.Tensor, lam_max: torch.Tensor, g_norm: torch.Tensor):
    r"""Upper bound on the Hessian norm of :math:`\ell(\beta(W))` in the weights.

    With :math:`H_\beta = \nabla^2_\beta \ell` (largest eigenvalue ``lam_max``) and
    :math:`\|W_l\|_2 \le \|W_l\|_F`,

    .. math::
        \|\nabla^2_W \ell\| \le \lambda_{\max}(H_\beta)\sum_l \prod_{k\ne l}\|W_k\|_F^2
        + \|\mathbf g\| \sum_{l\ne m} \prod_{k\ne l,m}\|W_k\|_F ,

    the Gauss-Newton term plus the residual term.  A step :math:`\eta \le 1/\text{bound}`
    is inside the stability region of gradient descent and tracks gradient flow.

    ``sq_norms`` has shape ``(L, B)`` (squared Frobenius norms per layer).
    """
    L = sq_norms.shape[0]
    norms = sq_norms.clamp_min(0).sqrt()
    gn = torch.zeros_like(sq_norms[0])
    res = torch.zeros_like(sq_norms[0])
    for l in range(L):
        others = [k for k in range(L) if k != l]
        gn = gn + torch.prod(sq_norms[others], dim=0)
        for m in range(L):
            if m != l:
                rest = [k for k in range(L) if k not in (l, m)]
                res = res + (torch.prod(norms[rest], dim=0) if rest else torch.ones_like(gn))
    return lam_max * gn + g_norm * res
