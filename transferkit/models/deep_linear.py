r"""Deep linear networks, batched over independent instances.

A depth-:math:`L` linear network (paper 000, Eq. 7)

.. math::  f(\mathbf x) = \mathbf x^\top W_1 W_2 \cdots W_L,
           \qquad W_l \in \mathbb R^{p_{l-1}\times p_l},\ p_0 = d,\ p_L = 1,

is represented by a list of ``L`` tensors of shape ``(B, p_{l-1}, p_l)``: the leading
dimension ``B`` indexes independent instances (data draws, grid cells) that are trained
together as one batched tensor program.  Everything here is a small pure function of the
weights; the trainers in :mod:`transferkit.models.deep_linear` compose them.

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

from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from .. import config
from .._validate import (InputTypeError, check_array, check_bool, check_budget_among, check_int,
                         check_open_unit, check_positive, check_real)
from ..streams import keyed_rng, unit_rows
from ._chain_kernel import chain_descent
from .descent import Descent
from .device import as_tensor

__all__ = ["init_deep_linear", "right_products", "end_to_end", "layer_gradients", "feature_map", "curvature_bound", "balanced_weights", "pretrain_gd", "deep_finetune_sim", "frozen_first_layer_gd", "Quadratic", "population_objective", "empirical_objective", "gradient_descent", "feature_subspace", "linear_transfer", "ridge_linear_transfer", "train_scratch", "finetune", "weight_decay_minimiser", "RankOneChain", "rank_one_chain", "finetune_chain"]


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
    # every layer of every instance, drawn then converted (twice the float64 entries); the
    # width, d unless given, is named only when given; typical sizes: paper 000's (d = 500,
    # depth 2, 20 draws)
    sizes = dict(d=d, depth=depth, rngs=len(rngs))
    if width is not None:
        sizes["width"] = check_int("width", width, 1)
    def estimate(d, depth, rngs, width=None):
        p = width or d
        return 16 * rngs * (d * p + (depth - 2) * p * p + p)

    check_budget_among(estimate, sizes, dict(d=500, width=500, depth=2, rngs=20))
    width = sizes.get("width", d)
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
        # W_l^T a_l computed as (a_l^T W_l)^T: the same bits, without the copy of the
        # transposed layer that the product with W_l^T makes (3-4x faster at d = p = 500)
        a.append((a[l].transpose(1, 2) @ Ws[l]).transpose(1, 2))
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


def balanced_weights(theta_s, depth, width=None, seed=0):
    r"""Exactly 0-balanced weights with end-to-end vector :math:`\theta_S` (paper 001, Def. 5.1).

    .. math:: W_1 = s^{1/L}\hat\theta_S v_1^\top,\quad W_j = s^{1/L} v_{j-1}v_j^\top,
              \quad W_L = s^{1/L} v_{L-1},\qquad s = \|\theta_S\|,

    with random unit vectors :math:`v_j \in \mathbb R^{p}`: the point that gradient flow
    from a 0-balanced initialisation of vanishing scale reaches on the population source
    loss (Arora et al. 2019; the assumption of Thms 5.2 and 5.5).  It satisfies
    :math:`W_j^\top W_j = W_{j+1}W_{j+1}^\top` exactly.  Gradient-descent pretraining from a
    small initialisation (:func:`pretrain_gd`) reaches it approximately, but needs a number
    of steps that grows like :math:`\alpha^{-(L-2)}` and is impractical beyond depth 3.
    ``theta_s`` ``(B, d)`` nonzero; returns a list of ``depth`` tensors ``(B, p_{l-1}, p_l)``.
    """

    theta_s = check_array("theta_s", theta_s, 2)
    depth = check_int("depth", depth, 1)
    B, d = theta_s.shape
    s = np.linalg.norm(theta_s, axis=-1)
    if not (s > 0).all():
        raise ValueError("theta_s must be nonzero")
    if depth == 1:
        return [as_tensor(theta_s[..., None])]
    p = d if width is None else check_int("width", width, 1)
    v = [unit_rows(np.stack([keyed_rng(seed, 4, j, b).standard_normal(p) for b in range(B)]))
         for j in range(depth - 1)]
    f = s ** (1.0 / depth)
    Ws = [(f / s)[:, None, None] * theta_s[:, :, None] * v[0][:, None, :]]
    for j in range(1, depth - 1):
        Ws.append(f[:, None, None] * v[j - 1][:, :, None] * v[j][:, None, :])
    Ws.append((f[:, None] * v[-1])[:, :, None])
    return [as_tensor(W) for W in Ws]


def pretrain_gd(theta_s, depth, init_scale=1e-5, seed=0, loss_tol=1e-14):
    r"""Pretrain depth-``depth`` linear networks (width ``d``) by gradient descent on the
    population source loss :math:`\frac12\|\beta-\theta_S\|^2` from the small random
    initialisation :math:`W_l(0)=\alpha\bar W_l`: approximately 0-balanced weights (paper
    001, Sec. 5).  Practical up to depth 3 (see :func:`balanced_weights`)."""

    theta_s = check_array("theta_s", theta_s, 2)
    B, d = theta_s.shape
    if depth == 1:
        return [as_tensor(theta_s[..., None])]
    W0 = init_deep_linear(d, depth, init_scale, [keyed_rng(seed, 4, b) for b in range(B)])
    Ws, _ = gradient_descent(W0, population_objective(as_tensor(theta_s)),
                               loss_tol=loss_tol, desc="pretraining")
    return Ws


def deep_finetune_sim(Ws, X, y, step_scale=0.5, loss_tol=1e-12, max_steps=200_000):
    r"""Fine-tune pretrained weights ``Ws`` on ``(X, y)`` by plain gradient descent (a
    discretisation of the gradient flow of Thm 5.2; the path matters).  Returns the
    end-to-end vectors ``(B, d)`` and the :class:`~transferkit.models.descent.TrainInfo`."""

    Wf, info = finetune(Ws, as_tensor(X), as_tensor(y), loss_tol=loss_tol,
                          step_scale=step_scale, max_steps=max_steps)
    return end_to_end(Wf).cpu().numpy(), info


def frozen_first_layer_gd(Ws, X, y, steps):
    r"""``steps`` steps of gradient descent on the last layer of two-layer networks whose
    first layer is frozen (paper 001, Thm 5.5, Fig. 3): :math:`\beta = W_1 w_2` with the loss
    :math:`\frac1{2n}\|Zw_2 - y\|^2` on the features :math:`Z = XW_1`, step
    :math:`1/\lambda_{\max}(Z^\top Z/n)`.

    After pretraining from scale :math:`\alpha` the features have one singular value of
    order one and the others of order :math:`\alpha`, whose curvature is
    :math:`O(\alpha^2)`: along them gradient descent moves by :math:`O(\alpha^2)` per step
    relative to the signal direction, so there is no stopping rule that separates
    "converged" from "still creeping"; the caller fixes the budget (``frozen_sim`` gives it the
    steps that full fine-tuning needed on the same data).  Returns the end-to-end vectors
    ``(B, d)``.
    """

    steps = check_int("steps", steps, 0)
    if len(Ws) != 2:
        raise ValueError(f"Ws must hold the two layers of two-layer networks (got {len(Ws)})")
    W1, w2 = Ws[0], Ws[1].clone()
    Xt, yt = as_tensor(X, W1.device), as_tensor(y, W1.device)
    n = Xt.shape[1]
    Z = Xt @ W1                                             # (B, n, p)
    lmax = torch.linalg.eigvalsh(Z @ Z.transpose(1, 2) / n)[:, -1]
    # tolerance 0: the whole budget is run (an instance stops only at an exact interpolant)
    rule = Descent(Z.shape[0], tol=0.0, max_steps=steps, device=Z.device,
                   desc="frozen first layer")
    while True:
        r = Z @ w2 - yt[..., None]
        if rule.due() and rule.stop(0.5 * r.pow(2).sum((1, 2)) / n):
            break
        w2 = w2 - rule.masked(1.0 / lmax)[:, None, None] * (Z.transpose(1, 2) @ r) / n
        rule.advance()
    return (W1 @ w2)[..., 0].cpu().numpy()


@dataclass
class Quadratic:
    r"""The quadratic :math:`\frac12(\beta-\hat\beta)^\top V\,\mathrm{diag}(\lambda)V^\top(\beta-\hat\beta)`.

    Attributes
    ----------
    V : tensor ``(B, d, k)`` with orthonormal columns, or ``None`` for the identity
        (then ``k = d``).
    lam : tensor ``(B, k)``, the positive eigenvalues of :math:`\Sigma`.
    beta_hat : tensor ``(B, k)``, :math:`V^\top \hat\beta` (coordinates of the
        minimiser in the eigenbasis; the minimum-norm minimiser is ``V @ beta_hat``).
    loss_min : tensor ``(B,)``, the minimum of the training loss.
    """

    V: torch.Tensor | None
    lam: torch.Tensor
    beta_hat: torch.Tensor
    loss_min: torch.Tensor

    def minimiser(self) -> torch.Tensor:
        """Minimum-norm minimiser in input coordinates, ``(B, d)``."""
        if self.V is None:
            return self.beta_hat
        return (self.V @ self.beta_hat[..., None])[..., 0]

    def with_targets(self, beta_hat: torch.Tensor, loss_min: torch.Tensor) -> "Quadratic":
        """Same data covariance, other labels (re-use the eigendecomposition)."""
        return Quadratic(self.V, self.lam, beta_hat, loss_min)

    def relabel(self, X: torch.Tensor, y: torch.Tensor) -> "Quadratic":
        r"""The empirical objective of the same ``X`` (``(B, n, d)``) with labels ``y``.

        Re-uses the eigendecomposition: :math:`S U^\top y = V^\top X^\top y`, so only two
        matrix-vector products per instance are needed.
        """
        if self.V is None:
            raise ValueError("relabel needs an empirical objective (V is None for the population)")
        n = X.shape[1]
        Xty = (X.transpose(1, 2) @ y[..., None])[..., 0]                 # (B, d)
        S = (self.lam * n).sqrt()
        Uty = (self.V.transpose(1, 2) @ Xty[..., None])[..., 0] / S       # U^T y
        loss_min = ((y ** 2).sum(1) - (Uty ** 2).sum(1)).clamp_min(0) / (2 * n)
        return self.with_targets(Uty / S, loss_min)


def population_objective(beta_star: torch.Tensor) -> Quadratic:
    r"""Population loss :math:`\frac12\|\beta-\beta_\star\|^2` for isotropic inputs (Eq. 2).

    The label-noise floor :math:`\sigma^2/2` is dropped: it does not depend on the weights.
    """
    B, d = beta_star.shape
    return Quadratic(None, torch.ones_like(beta_star), beta_star.clone(),
                     torch.zeros(B, dtype=beta_star.dtype, device=beta_star.device))


def empirical_objective(X: torch.Tensor, y: torch.Tensor) -> Quadratic:
    r"""Empirical loss :math:`\frac1{2n}\|y - X\beta\|^2` (Eq. 3) in the eigenbasis of ``X``.

    ``X`` has shape ``(B, n, d)``, ``y`` shape ``(B, n)``.  With the thin SVD
    :math:`X = U S V^\top`, :math:`\Sigma = V\,\mathrm{diag}(S^2/n)V^\top`,
    :math:`V^\top X^+ y = U^\top y / S` and :math:`\ell_{\min} = \|(I-UU^\top)y\|^2/2n`.
    The eigendecomposition is taken of the smaller Gram matrix (``eigh``), which is
    several times faster than an SVD and accurate in float64 for the condition numbers
    met here (``lambda_min/lambda_max`` down to ``~1e-7`` at ``n = d``).
    """
    if X.ndim != 3 or y.ndim != 2 or X.shape[:2] != y.shape:
        raise ValueError(f"X must have shape (B, n, d) and y shape (B, n); got {tuple(X.shape)} "
                         f"and {tuple(y.shape)}")
    if not (torch.isfinite(X).all() and torch.isfinite(y).all()):
        raise ValueError("X and y must be finite (found NaN or inf)")
    B, n, d = X.shape
    if n <= d:
        ev, U = torch.linalg.eigh(X @ X.transpose(1, 2))  # (B, n), (B, n, n)
        S = ev.clamp_min(0).sqrt()
        V = X.transpose(1, 2) @ U / S[:, None, :]
        Uty = (U.transpose(1, 2) @ y[..., None])[..., 0]
    else:
        ev, V = torch.linalg.eigh(X.transpose(1, 2) @ X)  # (B, d), (B, d, d)
        S = ev.clamp_min(0).sqrt()
        Uty = (V.transpose(1, 2) @ (X.transpose(1, 2) @ y[..., None]))[..., 0] / S
    # eigh of the Gram matrix resolves eigenvalues down to ~ eps * size * ev_max; anything
    # below 100 times that is a zero eigenvalue: X does not have full rank min(n, d)
    floor = 100 * torch.finfo(X.dtype).eps * max(n, d) * ev[:, -1:]
    if (ev <= floor).any():
        raise ValueError("X is numerically rank deficient (rank < min(n, d)); the "
                         "minimum-norm solution cannot be computed in its eigenbasis")
    lam = S ** 2 / n
    loss_min = ((y ** 2).sum(1) - (Uty ** 2).sum(1)).clamp_min(0) / (2 * n)
    return Quadratic(V, lam, Uty / S, loss_min)


def _check_numbers(**values) -> None:
    """Each value a real number (not a bool), else an :class:`InputTypeError` naming it: the
    range checks that follow compare them, which for a string would raise Python's own
    ``TypeError``."""
    for name, v in values.items():
        check_real(name, v)


# Relative rounding error of the end-to-end vector that _rounding_tol allows (1000 units of
# float64 rounding, far above what a product of a few layers accumulates).
_ROUNDING_ULPS = 1000


def _rounding_tol(loss_tol, lam, target):
    r"""The excess-loss tolerance of each instance, ``loss_tol`` raised where it lies below
    what float64 can resolve.

    An end-to-end vector within relative rounding error :math:`\epsilon` of its target
    :math:`\hat\beta` has excess loss up to about
    :math:`\epsilon^2\,\ell_0`, :math:`\ell_0 = \frac12\sum_i\lambda_i\hat\beta_i^2`;
    the tolerance is :math:`\max(\mathrm{loss\_tol},\ (K u)^2\ell_0)` with :math:`u` the
    unit roundoff and :math:`K` = :data:`_ROUNDING_ULPS`.  For targets of order one this is
    ``loss_tol`` itself (the floor is about 1e-25), and ``loss_tol`` is returned unchanged (the
    same bits); under label noise of 1e12 the floor is about 0.05, and a tolerance of 1e-14
    could never be met (scratch training ran to its step budget: 85 s at d = 6 instead of
    0.2 s).  Returns ``loss_tol`` or a tensor ``(B,)``.
    """
    u = torch.finfo(lam.dtype).eps / 2
    floor = (_ROUNDING_ULPS * u) ** 2 * 0.5 * (lam * target ** 2).sum(1)
    if not bool((floor > loss_tol).any()):
        return loss_tol
    return floor.clamp_min(loss_tol)


def gradient_descent(Ws, obj: Quadratic, *, loss_tol: float = 1e-10, max_steps: int = 100_000,
                     step_scale: float = 1.0, method: str = "gd", check_every: int = 10,
                     progress: bool | None = False, desc: str = "gradient descent",
                     warn: bool = True, weight_decay: float = 0.0):
    r"""Full-batch gradient descent on all layers until :math:`\ell-\ell_{\min} \le` ``loss_tol``.

    Parameters
    ----------
    Ws : list of tensors ``(B, p_{l-1}, p_l)``
        Initial weights (not modified).
    obj : Quadratic
        The objective (population or empirical).
    loss_tol : float
        Tolerance on the excess training loss, per instance (> 0).  Where it lies below
        what float64 resolves, about :math:`(1000\,u)^2\frac12\sum_i\lambda_i\hat\beta_i^2`
        (:math:`u` the unit roundoff; targets of order :math:`10^{12}` and more), that floor
        is the instance's tolerance: the excess loss could not fall further.
    max_steps : int
        Budget of steps; instances above tolerance after it are flagged.
    step_scale : float in (0, 2)
        Step in units of the inverse curvature bound.  ``1`` is the largest step that
        keeps every instance inside the stability region with margin; smaller values
        follow gradient flow more closely.
    method : {"gd", "nesterov", "whitened"}
        ``"gd"``: plain gradient descent, a discretisation of gradient flow (Eq. 4); use it
        whenever the *path* matters (fine-tuning: the null-space component of
        :math:`\beta_s` is rescaled along the way, paper 001 Thm 5.2).
        ``"whitened"``: plain gradient descent in whitened input coordinates.  With
        :math:`U = \Lambda^{1/2}V^\top W_1` the loss is
        :math:`\frac12\|U W_2\cdots W_L - \Lambda^{1/2}V^\top\hat\beta\|^2`, that of
        isotropic data (every eigenvalue 1), and gradient descent on
        :math:`(U, W_2, \dots, W_L)` is gradient descent on the weights with the first
        layer's gradient preconditioned by :math:`\Sigma^+` (steepest descent in the metric
        :math:`\Sigma` on the row space).  The condition number of the data no
        longer enters the number of steps (about 40 at every :math:`\gamma` of the Fig. 1
        grid, against hundreds to thousands for ``"nesterov"`` near :math:`\gamma = 1`).
        The path changes, the limit does not: every update of :math:`W_1` still lies in
        the row space of :math:`X`, so the limit is :math:`X^+y + O(\alpha)` (the
        argument of Thm 3.5); the stopping quantity is the same excess loss.  Use it when
        only the limit matters (scratch training).  Not with ``weight_decay``.
        ``"nesterov"``: Nesterov's accelerated gradient with adaptive restart (O'Donoghue
        and Candes 2015), which needs :math:`O(\sqrt\kappa)` instead of
        :math:`O(\kappa)` steps on ill-conditioned data (near :math:`\gamma = 1`).  Every
        update of :math:`W_1` is still a combination of gradients, which lie in the row
        space of :math:`X`, so the limit point is :math:`X^+y + O(\alpha)` exactly as for
        gradient flow (the argument of Thm 3.5); use it when only the limit matters
        (scratch training).  ``tests/models/test_deep_linear_training.py`` checks that the
        three methods reach the same point.
    weight_decay : float >= 0
        Weight decay :math:`\lambda_{wd}`: the objective becomes
        :math:`\ell(\beta) + \frac{\lambda_{wd}}2\sum_l \|W_l\|_F^2` (the convention of
        ``torch.optim.SGD(weight_decay=...)``, which adds :math:`\lambda_{wd} W_l` to each
        gradient; paper 000, App. E, Fig. 5).  The step uses the curvature bound plus
        :math:`\lambda_{wd}`.  The minimum of this objective is not known to the trainer,
        so with ``weight_decay > 0`` it stops when the **squared gradient norm** of the
        regularised objective (summed over layers, all instances separately) falls below
        ``loss_tol``, and ``TrainInfo.excess_loss`` holds that squared norm.  The rows of
        :math:`W_1` outside the data span receive only the decay and shrink by the factor
        :math:`\prod_t(1-\eta_t\lambda_{wd})`, tracked exactly.  ``0`` (the default) gives
        bit-for-bit the iterates of plain (un-regularised) training.
        For the closed-form limit at depth 2 see :func:`weight_decay_minimiser`.
    Returns
    -------
    Ws : list of tensors, the trained weights.
    info : transferkit.models.descent.TrainInfo
    """
    _check_numbers(step_scale=step_scale, loss_tol=loss_tol)
    check_every = check_int("check_every", check_every, 1)
    if not (0 < step_scale < 2):
        raise ValueError(f"step_scale must be in (0, 2) (got {step_scale!r})")
    if not (loss_tol > 0):
        raise ValueError(f"loss_tol must be > 0 (got {loss_tol!r})")
    if method not in ("gd", "nesterov", "whitened"):
        raise ValueError(f"method must be 'gd', 'nesterov' or 'whitened' (got {method!r})")
    max_steps = check_int("max_steps", max_steps, 0)
    wd = check_positive("weight_decay", weight_decay, allow_zero=True)
    whiten = method == "whitened"
    if whiten and wd > 0:
        raise ValueError("method='whitened' cannot be combined with weight_decay > 0")
    for i, W in enumerate(Ws):
        if not bool(torch.isfinite(W).all()):
            raise ValueError(f"Ws[{i}] (initial weights) must be finite; it holds NaN or inf")
    for name in ("lam", "beta_hat"):
        if not bool(torch.isfinite(getattr(obj, name)).all()):
            raise ValueError(f"obj.{name} must be finite (non-finite data or targets?)")
    if Ws[0].shape[0] != obj.lam.shape[0]:
        raise ValueError(f"batch sizes differ: weights {Ws[0].shape[0]}, objective {obj.lam.shape[0]}")
    W1 = Ws[0]
    if obj.V is not None:
        if obj.V.shape[1] != W1.shape[1]:
            raise ValueError(f"input dimension of the weights ({W1.shape[1]}) does not match the "
                             f"data ({obj.V.shape[1]})")
        W1_act0 = obj.V.transpose(1, 2) @ W1          # active rows, rotated
        work = [W1_act0.clone()] + [W.clone() for W in Ws[1:]]
    else:
        work = [W.clone() for W in Ws]
    B = W1.shape[0]
    L = len(work)
    dev = W1.device
    lam, target = obj.lam, obj.beta_hat
    if whiten:
        root = obj.lam.sqrt()
        work[0] = root[..., None] * work[0]           # U = Lambda^(1/2) V^T W_1
        lam, target = torch.ones_like(lam), root * target
    lam_max = lam.max(dim=1).values
    rule = Descent(B, tol=loss_tol if wd > 0 else _rounding_tol(loss_tol, lam, target),
                   max_steps=max_steps, check_every=check_every, device=dev,
                   desc=desc, progress=progress,
                   hint=f"step_scale={step_scale!r} is too large for this problem; use a value "
                        f"in (0, 1]")

    def sq_norms():
        return torch.stack([torch.linalg.vector_norm(W, dim=(1, 2)) ** 2 for W in point])

    point = work
    sq = sq_norms()
    excess = None
    nesterov = method == "nesterov"
    if wd > 0:
        # the part of W_1 outside the data span only decays: it is c * W1_null(0), track c
        one = torch.ones(B, dtype=work[0].dtype, device=dev)
        c_x, c_prev, c_pt = one.clone(), one.clone(), one.clone()
        null_sq = (torch.linalg.vector_norm(W1, dim=(1, 2)) ** 2
                   - torch.linalg.vector_norm(work[0], dim=(1, 2)) ** 2).clamp_min(0) \
            if obj.V is not None else torch.zeros(B, dtype=work[0].dtype, device=dev)
    if nesterov:
        prev = [W.clone() for W in work]      # x_{t-1}
        ybuf = [torch.empty_like(W) for W in work]
        k = torch.zeros(B, dtype=work[0].dtype, device=dev)  # momentum counter (restarts)
        last = torch.full((B,), float("inf"), dtype=work[0].dtype, device=dev)
    while True:
        t = rule.t
        if nesterov:
            # y = x + mu (x - x_prev), mu = (k - 1)/(k + 2) (zero right after a restart)
            mu = ((k - 1).clamp_min(0) / (k + 2))[:, None, None]
            for l in range(L):
                torch.lerp(work[l], prev[l], -mu, out=ybuf[l])  # x + mu (x - x_prev), fused
            point = ybuf
            sq = sq_norms()
            if wd > 0:
                c_pt = c_x + mu[:, 0, 0] * (c_x - c_prev)
        else:
            point = work
            if wd > 0:
                c_pt = c_x
        r = right_products(point)
        beta = (point[0] @ r[0])[..., 0]
        diff = beta - target
        g = lam * diff
        excess = 0.5 * (g * diff).sum(1)
        fval = excess
        if wd > 0:
            # regularised objective (for the restart test) and its squared gradient norm
            # (the stopping quantity); the gradient of layer l is a_l r_l^T + wd W_l
            fval = excess + 0.5 * wd * (sq.sum(0) + c_pt ** 2 * null_sq)
            a, _ = layer_gradients(point, g, r)
            if rule.due():
                excess = (wd * c_pt) ** 2 * null_sq
                for l in range(L):
                    excess = excess + torch.baddbmm(point[l], a[l], r[l].transpose(1, 2),
                                                    beta=wd).pow(2).sum((1, 2))
        if rule.due():
            if rule.stop(excess):
                work = point  # the point whose loss was just checked
                break
            if t % 1000 == 0 and not nesterov:
                sq = sq_norms()  # refresh the incrementally updated norms
        active = rule.active
        eta = rule.masked(step_scale / (curvature_bound(sq, lam_max, g.norm(dim=1)) + wd))
        if wd == 0:
            a, _ = layer_gradients(point, g, r)
        else:
            shrink = 1 - eta * wd
        if nesterov:
            # function-value restart: drop the momentum where the loss went up
            k = torch.where(fval > last, torch.zeros_like(k), k + 1)
            last = fval
            for l in range(L):
                if wd > 0:
                    ybuf[l].mul_(shrink[:, None, None])
                ybuf[l].baddbmm_(a[l] * (-eta)[:, None, None], r[l].transpose(1, 2))
            if wd > 0:
                c_prev, c_x = c_x, c_pt * shrink
            # frozen (converged) instances keep x: y = x there because eta = 0 and mu -> 0
            k = torch.where(active, k, torch.zeros_like(k))
            prev, work, ybuf = work, ybuf, prev
        else:
            gb = (g * beta).sum(1)
            for l in range(L):
                if wd > 0:
                    # W <- (1 - eta wd) W - eta a r^T
                    sq[l] = (shrink ** 2 * sq[l] - 2 * eta * shrink * gb
                             + eta ** 2 * a[l].pow(2).sum((1, 2)) * r[l].pow(2).sum((1, 2)))
                    work[l].mul_(shrink[:, None, None])
                else:
                    # ||W - eta a r^T||^2 = ||W||^2 - 2 eta a^T W r + eta^2 ||a||^2 ||r||^2, a^T W r = g.beta
                    sq[l] = (sq[l] - 2 * eta * gb
                             + eta ** 2 * a[l].pow(2).sum((1, 2)) * r[l].pow(2).sum((1, 2)))
                work[l].baddbmm_(a[l] * (-eta)[:, None, None], r[l].transpose(1, 2))
            if wd > 0:
                c_x = c_x * shrink
        rule.advance()
    info = rule.finish(excess, warn=warn)
    if whiten:
        work[0] = work[0] / root[..., None]
    if obj.V is not None:
        if wd > 0:  # the null-space rows decayed by the factor c (c = 1 without decay)
            c = c_pt[:, None, None]
            work[0] = c * W1 + obj.V @ (work[0] - c * W1_act0)
        else:
            work[0] = W1 + obj.V @ (work[0] - W1_act0)
    return work, info


def feature_subspace(Ws, rcond: float = 1e-3, spectrum: bool = True):
    r"""Orthonormal basis of the pretrained feature space and its singular values.

    The features of a pretrained network are the columns of
    :math:`\Phi = W_1\cdots W_{L-1}` (Thm 3.4).  Singular values below
    ``rcond * s_max`` are treated as zero: after pretraining from scale :math:`\alpha` the
    feature map has one singular value of order one and the rest of order
    :math:`\alpha`, and gradient descent on the last layer cannot use directions whose
    curvature is :math:`O(\alpha^2)`.  This is the :math:`\alpha\to 0` limit of Thm 3.4.

    Parameters
    ----------
    Ws : list of tensors
        The layers, ``(B, p_{l-1}, p_l)``.
    rcond : float in (0, 1)
        The cutoff relative to the largest singular value.
    spectrum : bool
        ``True`` (default): the full singular value decomposition of :math:`\Phi`, whose
        singular values are returned as ``svals``.  ``False``: only the kept part, from
        ``_top_singular`` (a block power iteration on a few columns, a tenth of the
        cost at ``d = 500``) where its residual certifies it, else from the full
        decomposition; ``svals`` is then ``None``.  The two give the same rank, the same
        kept subspace ``U`` to an angle of ``1e-12`` (the certificate) and the same ``S`` to
        second order in that angle.

    Returns
    -------
    U : tensor ``(B, d, r)``, left singular vectors, zero-padded to the largest rank ``r``
        in the batch.
    S : tensor ``(B, r)``, singular values (zero in padded columns).
    rank : numpy array ``(B,)``, effective rank per instance.
    svals : tensor ``(B, min(d, p))``, all singular values (for plots of Thm 3.4), or
        ``None`` when ``spectrum`` is false.
    """
    check_open_unit("rcond", rcond)
    spectrum = check_bool("spectrum", spectrum)
    M = feature_map(Ws)
    top = None if spectrum else _top_singular(M, rcond)
    if top is None:
        U, svals, _ = torch.linalg.svd(M, full_matrices=False)
    else:
        U, svals = top
    keep = svals > rcond * svals[:, :1]
    rank = keep.sum(1)
    r = int(rank.max())
    Ur = U[:, :, :r] * keep[:, None, :r]
    Sr = svals[:, :r] * keep[:, :r]
    return Ur, Sr, rank.cpu().numpy(), (svals if spectrum else None)


#: Columns and power iterations of :func:`_top_singular`, and the bound it certifies on the
#: distance of its singular vectors to the full decomposition's.
_TOP_COLUMNS, _TOP_ITERATIONS, _TOP_TOL = 8, 2, 1e-12


def _top_singular(M, rcond, q=_TOP_COLUMNS, iterations=_TOP_ITERATIONS, tol=_TOP_TOL):
    r"""The singular triplets of ``M (B, d, p)`` above ``rcond * s_max``, certified, or ``None``.

    Block power iteration (Halko, Martinsson and Tropp 2011, Alg. 4.4) from ``q`` fixed
    Gaussian columns (stream ``(0, 1)`` of :func:`~transferkit.streams.keyed_rng`: the same
    for every call, nothing drawn from a global state): an orthonormal ``Q (B, d, q)``,
    :math:`B = Q^\top M = \tilde U \Sigma V^\top` and :math:`U = Q\tilde U`, so that
    :math:`M^\top U = V\Sigma` exactly and the whole error is the residual
    :math:`R = (I - QQ^\top)M`.  By Weyl's and Wedin's theorems the result is returned only if

    * every singular value of ``M`` beyond the ``q`` found is below the cutoff,
      :math:`\|R\|_F \le \frac12\,\mathrm{rcond}\,\sigma_1(B)`, and fewer than ``q`` are kept;
    * no singular value lies near the cutoff, so that ``M``'s rank is the one found:
      :math:`\sigma_i(B) \le \sigma_i(M) \le (\sigma_i(B)^2 + \|R\|_F^2)^{1/2}`;
    * the kept singular vectors are those of ``M`` to ``tol``:
      :math:`\|R V_r\|_F / (\sigma_r(B) - c) \le` ``tol``, with ``c`` the cutoff, above
      every dropped singular value of ``M``
      (:math:`M^\top U_r - V_r\Sigma_r = 0` and :math:`M V_r - U_r\Sigma_r = R V_r`).

    Otherwise (an initialisation too large for Thm 3.4's rank one, say) ``None``, and the
    caller decomposes ``M`` in full.  Returns ``(U, s)`` with ``q`` columns, the singular
    values at and beyond the first dropped one being lower bounds only (below the cutoff).
    """
    B, d, p = M.shape
    if q >= min(d, p):
        return None
    G = torch.as_tensor(keyed_rng(0, 1).standard_normal((p, q)), dtype=M.dtype, device=M.device)
    Y = M @ G
    for _ in range(iterations):
        Q = torch.linalg.qr(Y).Q
        Y = M @ torch.linalg.qr(M.transpose(1, 2) @ Q).Q
    Q = torch.linalg.qr(Y).Q                                    # (B, d, q)
    Bm = Q.transpose(1, 2) @ M                                  # (B, q, p)
    Ub, s, Vh = torch.linalg.svd(Bm, full_matrices=False)
    R = M - Q @ Bm
    res = torch.linalg.matrix_norm(R)                           # (B,) Frobenius >= spectral
    cut = rcond * s[:, :1]
    keep = s > cut
    r = keep.sum(1)
    if not bool(((r >= 1) & (r < q)).all()) or not bool((res <= 0.5 * cut[:, 0]).all()):
        return None                                             # (r = 0: a zero matrix)
    upper = torch.sqrt(s ** 2 + res[:, None] ** 2)             # sigma_i(M) <= upper
    cut_hi = rcond * upper[:, :1]                               # sigma_1(M) <= upper_1
    if not bool(torch.where(keep, s > cut_hi, upper <= cut).all()):
        return None
    rmax = int(r.max())
    Vr = Vh[:, :rmax].transpose(1, 2) * keep[:, None, :rmax]   # kept right vectors
    s_r = s.gather(1, (r - 1)[:, None])[:, 0]                   # smallest kept
    if not bool((torch.linalg.matrix_norm(R @ Vr) <= tol * (s_r - cut[:, 0])).all()):
        return None
    return Q @ Ub, s


def linear_transfer(U: torch.Tensor, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    r"""Linear transfer: min-norm least squares on frozen features (Eq. 9), many targets at once.

    With features :math:`\Phi = X W_1\cdots W_{L-1}` and the feature map truncated to
    its rank-``r`` part :math:`U_r S_r Q_r^\top` (:func:`feature_subspace`), the
    minimum-norm solution of Eq. 9 gives the end-to-end vector

    .. math:: \hat\beta = W_1\cdots W_{L-1}\hat W_L = U_r (X U_r)^+ y ,

    i.e. least squares restricted to the pretrained feature subspace.

    Parameters
    ----------
    U : ``(B, d, r)`` from :func:`feature_subspace`.
    X : ``(B, n, d)`` target inputs.
    Y : ``(B, n, m)`` target labels for ``m`` tasks sharing the inputs (e.g. a grid of theta).

    Returns
    -------
    beta : ``(B, m, d)``
    """
    Z = X @ U                                   # (B, n, r)
    coef = torch.linalg.pinv(Z, rtol=1e-10) @ Y  # (B, r, m); padded zero columns drop out
    return (U @ coef).transpose(1, 2)


def ridge_linear_transfer(U: torch.Tensor, S: torch.Tensor, X: torch.Tensor, Y: torch.Tensor,
                          lam) -> torch.Tensor:
    r"""Ridge linear transfer (Eq. 12) on the rank-``r`` pretrained features.

    Minimises :math:`\frac1{2n}\|\Phi W_L - y\|^2 + \frac\lambda2\|W_L\|^2` with
    :math:`\Phi = X U_r S_r Q_r^\top`; the end-to-end vector is

    .. math:: \hat\beta = U_r S_r\,(S_r G S_r + \lambda I)^{-1} S_r U_r^\top X^\top y/n,
              \qquad G = U_r^\top X^\top X U_r/n .

    The feature scale :math:`S_r` (``||beta_s||^{(L-1)/L}`` after balanced pretraining)
    multiplies the effective ridge: Eq. 13 holds for unit feature scale.

    ``lam`` is a scalar (>= 0).  Returns ``(B, m, d)``.
    """
    lam = float(lam)
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam must be a finite number >= 0 (got {lam!r})")
    n = X.shape[1]
    Z = (X @ U) * S[:, None, :]                 # (B, n, r) = X U_r S_r
    G = Z.transpose(1, 2) @ Z / n
    eye = torch.eye(G.shape[-1], dtype=G.dtype, device=G.device)
    rhs = Z.transpose(1, 2) @ Y / n
    if lam == 0:
        coef = torch.linalg.pinv(G, rtol=1e-10, hermitian=True) @ rhs
    else:
        coef = torch.linalg.solve(G + lam * eye, rhs)
    return ((U * S[:, None, :]) @ coef).transpose(1, 2)


def train_scratch(X: torch.Tensor, y: torch.Tensor, depth: int, alpha: float, rngs, *,
                  method: str = "nesterov", **kwargs):
    r"""Train a depth-``depth`` linear network on ``(X, y)`` from scale ``alpha`` (Thm 3.5).

    ``X`` is ``(B, n, d)``, ``y`` is ``(B, n)`` and ``rngs`` one numpy generator per instance
    for the initialisation.  As :math:`\alpha\to0` the end-to-end vector converges to
    :math:`X^+y`.  Keyword arguments go to :func:`gradient_descent`.
    Returns ``(weights, TrainInfo)``.  The shapes (and one generator per instance) are
    checked before any work.
    """
    for name, T in (("X", X), ("y", y)):
        if not isinstance(T, torch.Tensor):
            raise InputTypeError(f"{name} must be a torch tensor (got {type(T).__name__})")
    objective = empirical_objective(X, y)           # checks the shapes and finiteness
    if isinstance(rngs, (str, bytes)) or not hasattr(rngs, "__len__") or len(rngs) != X.shape[0]:
        raise ValueError(f"rngs must hold one numpy generator per instance, {X.shape[0]} "
                         f"(got {rngs!r})")
    W0 = init_deep_linear(X.shape[2], depth, alpha, rngs, device=X.device, dtype=X.dtype)
    return gradient_descent(W0, objective, method=method,
                            desc=kwargs.pop("desc", "scratch"), **kwargs)


def finetune(Ws, X: torch.Tensor, y: torch.Tensor, **kwargs):
    r"""Fine-tune every layer of pretrained weights ``Ws`` on ``(X, y)`` (paper 000, Sec. 3.4).

    Plain gradient descent (the path matters: the null-space component of the pretrained
    solution is rescaled along the way in deep networks, paper 001 Thm 5.2).  Keyword
    arguments go to :func:`gradient_descent`.  Returns ``(weights, TrainInfo)``.
    """
    kwargs.setdefault("method", "gd")
    return gradient_descent(Ws, empirical_objective(X, y), desc=kwargs.pop("desc", "fine-tuning"),
                            **kwargs)


def weight_decay_minimiser(obj: Quadratic, weight_decay: float, iters: int = 200):
    r"""Closed-form limit of a depth-2 linear network trained with weight decay.

    For :math:`\ell(\beta) + \frac{\lambda_{wd}}2(\|W_1\|_F^2 + \|w_2\|^2)` with
    :math:`\beta = W_1w_2` (:func:`gradient_descent` with ``weight_decay``), the penalty of
    the cheapest factorisation of :math:`\beta` is :math:`\lambda_{wd}\|\beta\|`
    (:math:`\|W_1\|_F^2 + \|w_2\|^2 \ge 2\|W_1\|_F\|w_2\| \ge 2\|\beta\|`, equality for the
    balanced rank-one factorisation; weight decay drives :math:`W_1^\top W_1 - w_2w_2^\top`
    to zero, so every stationary point is balanced).  The end-to-end problem
    :math:`\min_\beta \frac12(\beta-\hat\beta)^\top\Sigma(\beta-\hat\beta) +
    \lambda_{wd}\|\beta\|` is convex; its minimiser is zero when
    :math:`\|\Sigma\hat\beta\| \le \lambda_{wd}` and otherwise the ridge solution

    .. math::

        \beta = (\Sigma + \mu I)^{-1}\Sigma\hat\beta
              = V\,\mathrm{diag}\!\Big(\frac{\lambda_i}{\lambda_i+\mu}\Big)V^\top\hat\beta,
        \qquad \mu\,\|\beta(\mu)\| = \lambda_{wd},

    a shrinkage of :math:`\hat\beta` along the eigenbasis of the data, whose parameter
    :math:`\mu = \lambda_{wd}/\|\beta\|` is the unique root of the increasing function
    :math:`\mu \mapsto \mu\|\beta(\mu)\|` (found by bisection in :math:`\log\mu`).  From a
    small initialisation gradient descent escapes the saddle at the origin and reaches this
    global minimum; the component of :math:`W_1(0)` outside the data span decays to zero, so
    unlike unregularised training (Thm 3.5) the limit does not depend on :math:`\alpha`.

    Returns ``(beta, mu)``: the end-to-end vectors ``(B, d)`` and the effective ridge
    parameters ``(B,)`` (``inf`` where :math:`\beta = 0`).
    """
    wd = check_positive("weight_decay", weight_decay)
    iters = check_int("iters", iters, 1)
    lam, b = obj.lam, obj.beta_hat
    grad0 = (lam * b).norm(dim=1)                   # ||Sigma beta_hat||, the gradient at 0
    alive = grad0 > wd
    lo = torch.log(wd / b.norm(dim=1).clamp_min(1e-300))
    hi = torch.log(wd * lam.max(dim=1).values / (grad0 - wd).clamp_min(1e-300)) + 1
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        mu = mid.exp()[:, None]
        f = (mu * lam * b / (lam + mu)).norm(dim=1) - wd
        hi = torch.where(f > 0, mid, hi)
        lo = torch.where(f > 0, lo, mid)
    mu = (0.5 * (lo + hi)).exp()
    coef = lam * b / (lam + mu[:, None]) * alive[:, None]
    beta = coef if obj.V is None else (obj.V @ coef[..., None])[..., 0]
    mu = torch.where(alive, mu, torch.full_like(mu, float("inf")))
    return beta, mu


# ---------------------------------------------------------------------------
# fine-tuning from the rank-one pretrained chain (paper 000, Sec. 3.4; paper 001, Thm 5.2)
# ---------------------------------------------------------------------------


@dataclass
class RankOneChain:
    r"""A deep linear network whose layers form a rank-one chain.

    :math:`W_1 = \mathbf w\,\mathbf q_1^\top`, :math:`W_l = c_l\,\mathbf q_{l-1}\mathbf q_l^\top`
    (:math:`1<l<L`), :math:`W_L = c_L\,\mathbf q_{L-1}` with unit :math:`\mathbf q_l`, so that
    :math:`\beta = W_1\cdots W_L = (c_2\cdots c_L)\,\mathbf w`.  Pretraining from a small
    initialisation converges to such a chain up to :math:`O(\alpha)` (paper 000, Thm 3.4:
    the features collapse to rank one; the layers are balanced, so
    :math:`\|\mathbf w\| = |c_l| = \|\beta_s\|^{1/L}`).

    Attributes
    ----------
    w : tensor ``(B, d)``, the first layer's column :math:`W_1\mathbf q_1`.
    c : tensor ``(B, L-1)``, the scalars :math:`c_2, \dots, c_L`.
    residual : tensor ``(B,)``, :math:`\big(\sum_l\|W_l - \hat W_l\|_F^2\big)^{1/2}`, the size
        of what the rank-one chain :math:`\hat W` leaves out of the weights it was taken from.
    """

    w: torch.Tensor
    c: torch.Tensor
    residual: torch.Tensor

    @property
    def beta(self) -> torch.Tensor:
        r"""End-to-end vector :math:`(c_2\cdots c_L)\,\mathbf w`, ``(B, d)``."""
        return self.c.prod(1)[:, None] * self.w

    def weights(self):
        r"""The full layers :math:`\hat W_l` of the chain (for checks at small ``d``).

        The unit vectors :math:`\mathbf q_l` are the first canonical basis vector (any unit
        vectors give the same end-to-end function and the same gradient-descent path).
        """
        B, d = self.w.shape
        L = self.c.shape[1] + 1
        e = torch.zeros(B, d, 1, dtype=self.w.dtype, device=self.w.device)
        e[:, 0] = 1.0
        Ws = [self.w[..., None] @ e.transpose(1, 2)]
        for l in range(L - 2):
            Ws.append(self.c[:, l, None, None] * (e @ e.transpose(1, 2)))
        Ws.append(self.c[:, -1, None, None] * e)
        return Ws


def rank_one_chain(Ws) -> RankOneChain:
    r"""The rank-one chain nearest to pretrained weights ``Ws`` along their own product.

    With :math:`\mathbf r_l = W_{l+1}\cdots W_L` (:func:`~transferkit.models.deep_linear.right_products`)
    and :math:`\mathbf q_l = \mathbf r_l/\|\mathbf r_l\|`, the chain has
    :math:`\mathbf w = W_1\mathbf q_1`, :math:`c_l = \mathbf q_{l-1}^\top W_l\mathbf q_l` and
    :math:`c_L = \mathbf q_{L-1}^\top W_L`.  Its end-to-end vector equals that of ``Ws``
    exactly when :math:`W_l\mathbf q_l \parallel \mathbf q_{l-1}` (true for the pretrained
    networks up to :math:`O(\alpha)`); ``residual`` measures what is left out.
    """
    L = len(Ws)
    if L < 2:
        raise ValueError(f"Ws must hold at least 2 layers (got {L})")
    r = right_products(Ws)
    q = []
    for l in range(L - 1):
        nrm = r[l].norm(dim=(1, 2), keepdim=True)
        if not bool((nrm > 0).all()):
            raise ValueError("Ws has a zero right product W_{l+1}...W_L: not a pretrained network")
        q.append(r[l] / nrm)                                       # (B, p_l, 1)
    w = (Ws[0] @ q[0])[..., 0]
    cs, res = [], (Ws[0] - w[..., None] @ q[0].transpose(1, 2)).pow(2).sum((1, 2))
    for l in range(1, L):
        left = q[l - 1]
        if l < L - 1:
            c = (left.transpose(1, 2) @ Ws[l] @ q[l])[:, 0, 0]
            hat = c[:, None, None] * (left @ q[l].transpose(1, 2))
        else:
            c = (left.transpose(1, 2) @ Ws[l])[:, 0, 0]
            hat = c[:, None, None] * left
        cs.append(c)
        res = res + (Ws[l] - hat).pow(2).sum((1, 2))
    return RankOneChain(w, torch.stack(cs, 1), res.sqrt())


def _imbalances(z, c):
    r"""Layer imbalances :math:`\|V^\top W_1\|^2 - c_2^2,\ c_l^2 - c_{l+1}^2` of a chain, ``(B, L-1)``.

    (:math:`\|W_1\|_F^2 = \|\mathbf z\|^2 + \|P_\perp\mathbf w\|^2` and the second term never
    changes, so differences of these are differences of the invariants of gradient flow.)
    """
    sq = torch.cat([z.pow(2).sum(1, keepdim=True), c.pow(2)], 1)
    return sq[:, :-1] - sq[:, 1:]


def finetune_chain(chain: RankOneChain, lam: torch.Tensor, z0: torch.Tensor,
                   target: torch.Tensor, *, loss_tol: float = 1e-10, max_steps: int = 1_000_000,
                   step_scale: float = 1.0, flow_tol: float | None = 1e-3, check_every: int = 10,
                   compact: float = 0.5, progress: bool | None = False, desc: str = "fine-tuning",
                   warn: bool = True, engine: str = "auto"):
    r"""Gradient descent on every layer of a rank-one chain, in the eigenbasis of the data.

    Paper 000, Sec. 3.4 (fine-tuning: all layers trained from the pretrained weights on
    :math:`\frac1{2n}\|y - XW_1\cdots W_L\|^2`, Eq. 3).  From a rank-one chain
    (:class:`RankOneChain`) the full-network gradients
    :math:`\nabla_{W_l}\ell = \mathbf a_l\mathbf r_l^\top` (see :mod:`transferkit.models.deep_linear`) are

    .. math::
        \nabla_{W_1}\ell = C\,\mathbf g\,\mathbf q_1^\top, \qquad
        \nabla_{W_l}\ell = (\mathbf g^\top\mathbf w)\textstyle\prod_{k\ne l}c_k\;
        \mathbf q_{l-1}\mathbf q_l^\top ,\qquad C = c_2\cdots c_L ,

    with :math:`\mathbf g = \Sigma(\beta - \hat\beta)`, so every step of gradient descent on
    the *full* network maps a chain to a chain with the same :math:`\mathbf q_l`: plain
    gradient descent on all :math:`L` layers is exactly gradient descent on
    :math:`(\mathbf w, c_2, \dots, c_L)`, with the same curvature-based step
    (:func:`~transferkit.models.deep_linear.curvature_bound` with :math:`\|V^\top W_1\|_F = \|\mathbf z\|`,
    :math:`\|W_l\|_F = |c_l|`) and the same stopping rule as :func:`gradient_descent`.
    Since :math:`\mathbf g` lies in the row space of :math:`X`, only the coordinates
    :math:`\mathbf z = V^\top\mathbf w` move (the null-space part of :math:`\mathbf w`, hence
    of :math:`\beta_s`, is never updated, paper 001 Sec. 5) and a step costs
    :math:`O(k)` per instance instead of :math:`O(kd)`.

    Parameters
    ----------
    chain : RankOneChain
        Initial chain (``w`` is used only through its norm: pass the row-space coordinates
        as ``z0``).
    lam : tensor ``(B, k)``
        Eigenvalues of :math:`\Sigma = X^\top X/n` (:class:`Quadratic` ``.lam``).
    z0 : tensor ``(B, k)``
        :math:`V^\top\mathbf w` at the start.
    target : tensor ``(B, k)``
        :math:`V^\top X^+ y` (:class:`Quadratic` ``.beta_hat``).
    loss_tol, max_steps, step_scale, check_every, progress, desc, warn
        As in :func:`gradient_descent`.
    flow_tol : float or None
        Budget for the departure from gradient flow.  Gradient flow conserves the
        imbalances :math:`\|W_l\|_F^2 - \|W_{l+1}\|_F^2` (zero after pretraining from a
        small initialisation), and with them the limit of fine-tuning (paper 001, Thm 5.2:
        the rescaling of the null-space component depends on them).  A gradient step of size
        :math:`\eta` changes them by exactly
        :math:`\eta^2(\|\nabla_{W_l}\ell\|^2 - \|\nabla_{W_{l+1}}\ell\|^2)`, which adds up
        to about :math:`\eta\,\ell(0)` at the largest stable step.  The step is therefore
        also capped at :math:`\text{flow\_tol}/(\ell\,\log(\ell(0)/\text{loss\_tol}))`
        (small steps while the loss is large, the curvature step afterwards), which keeps the
        accumulated change of the imbalances near ``flow_tol``; the change actually
        accumulated is measured (imbalances at the end minus at the start) and returned
        (``info.imbalance_drift``).  ``None``:
        no cap (plain curvature steps, as :func:`gradient_descent`).
    compact : float in [0, 1)
        When fewer than this fraction of the instances still train, the converged ones are
        dropped from the working tensors (same iterates, less work); ``0`` never compacts.
        (Torch engine only.)
    engine : {"auto", "torch", "kernel"}
        ``"torch"``: the batched loop below (every device).  ``"kernel"``: the compiled CPU
        kernel (``transferkit.models._chain_kernel``), which runs the
        instances one after the other, each to its own stop, with the same operations (its
        sums run in sequence, torch's in vectorised order: iterates equal to rounding, and
        the same steps unless a loss lands within rounding of ``loss_tol`` at a check),
        about ten times faster at ``d = 500``; float64 CPU tensors only.  ``"auto"``: the kernel for
        float64 tensors on the CPU, else torch.  The progress bar of the kernel counts
        instances, that of the torch loop steps.

    Returns
    -------
    z : tensor ``(B, k)``, final :math:`V^\top\mathbf w`;
    c : tensor ``(B, L-1)``, final scalars; the end-to-end vector is
        :math:`c_2\cdots c_L\,(\mathbf w + V(\mathbf z - \mathbf z_0))`;
    info : transferkit.models.descent.TrainInfo (``excess_loss`` per instance), with ``imbalance_drift`` (largest
        accumulated change of a layer imbalance, per instance) and ``row_error``: the
        certified bound :math:`\|V^\top(\beta-\beta_\star)\| \le \sqrt{2(\ell-\ell_{\min})/\lambda_{\min}}`
        on the distance of the row-space part of :math:`\beta` to :math:`X^+y`.
    """
    _check_numbers(step_scale=step_scale, loss_tol=loss_tol, compact=compact,
                   **({} if flow_tol is None else {"flow_tol": flow_tol}))
    if not (0 < step_scale < 2):
        raise ValueError(f"step_scale must be in (0, 2) (got {step_scale!r})")
    if not (loss_tol > 0):
        raise ValueError(f"loss_tol must be > 0 (got {loss_tol!r})")
    if flow_tol is not None and not (flow_tol > 0):
        raise ValueError(f"flow_tol must be > 0 or None (got {flow_tol!r})")
    if not (0 <= compact < 1):
        raise ValueError(f"compact must be in [0, 1) (got {compact!r})")
    if engine not in ("auto", "torch", "kernel"):
        raise ValueError(f"engine must be 'auto', 'torch' or 'kernel' (got {engine!r})")
    max_steps = check_int("max_steps", max_steps, 0)
    check_every = check_int("check_every", check_every, 1)
    B, k = lam.shape
    if z0.shape != (B, k) or target.shape != (B, k) or chain.w.shape[0] != B:
        raise ValueError(f"lam, z0 and target must have the same shape (B, k) and the chain B "
                         f"instances; got {tuple(lam.shape)}, {tuple(z0.shape)}, "
                         f"{tuple(target.shape)} and B = {chain.w.shape[0]}")
    for name, t in (("lam", lam), ("z0", z0), ("target", target), ("chain.w", chain.w),
                    ("chain.c", chain.c)):
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} must be finite (found NaN or inf)")
    on_cpu64 = all(t.device.type == "cpu" and t.dtype == torch.float64
                   for t in (lam, z0, target, chain.c))
    if engine == "kernel" and not on_cpu64:
        raise ValueError("engine='kernel' needs float64 tensors on the CPU (use engine='torch' "
                         "or 'auto' for other devices and dtypes)")
    hint = f"step_scale={step_scale!r} is too large; use a value in (0, 1]"
    if engine == "kernel" or (engine == "auto" and on_cpu64):
        z_out, c_out, rule, excess_out = _chain_on_kernel(
            z0, chain.c, lam, target, loss_tol, max_steps, step_scale, flow_tol, check_every,
            desc, progress, hint)
    else:
        z_out, c_out, rule, excess_out = _chain_on_torch(
            z0, chain.c, lam, target, loss_tol, max_steps, step_scale, flow_tol, check_every,
            compact, desc, progress, hint)
    info = rule.finish(excess_out, warn=warn)
    drift = _imbalances(z_out, c_out) - _imbalances(z0, chain.c)
    info.imbalance_drift = drift.abs().max(1).values.cpu().numpy()
    info.row_error = (2 * excess_out / lam.min(1).values).sqrt().cpu().numpy()
    return z_out, c_out, info


def _chain_on_kernel(z0, c0, lam, target, loss_tol, max_steps, step_scale, flow_tol,
                     check_every, desc, progress, hint):
    """:func:`finetune_chain` on the compiled kernel ``chain_descent``
    (float64, CPU): ``(z, c, rule, excess)``, ``rule`` holding the steps taken."""
    B = lam.shape[0]
    z = z0.detach().numpy().copy()
    c = c0.detach().numpy().copy()
    lm = np.ascontiguousarray(lam.detach().numpy())
    tg = np.ascontiguousarray(target.detach().numpy())
    rule = Descent(B, tol=loss_tol, max_steps=max_steps, check_every=check_every,
                   device=lam.device, desc=desc, progress=False, hint=hint)
    steps = np.zeros(B, np.int64)
    excess = np.zeros(B)
    # chunks of instances only to move a progress bar; the kernel itself runs them one by one
    chunk = max(1, B // 50 if config.progress(progress) else B)
    with tqdm(total=B, desc=desc, unit="run", disable=not config.progress(progress),
              leave=False) as bar:
        for lo in range(0, B, chunk):
            hi = min(B, lo + chunk)
            zs, cs = z[lo:hi], c[lo:hi]           # views: updated in place
            st, ex, bad = chain_descent(zs, cs, lm[lo:hi], tg[lo:hi], float(loss_tol),
                                        int(max_steps), float(step_scale),
                                        -1.0 if flow_tol is None else float(flow_tol),
                                        int(check_every))
            if bad >= 0:
                raise rule.diverged(int(st[bad]))
            steps[lo:hi], excess[lo:hi] = st, ex
            bar.update(hi - lo)
    rule.steps = torch.from_numpy(steps)
    rule.t = int(steps.max(initial=0))
    return torch.from_numpy(z), torch.from_numpy(c), rule, torch.from_numpy(excess)


def _chain_on_torch(z0, c0, lam, target, loss_tol, max_steps, step_scale, flow_tol,
                    check_every, compact, desc, progress, hint):
    """:func:`finetune_chain` as one batched torch loop: ``(z, c, rule, excess)``."""
    B = lam.shape[0]
    L = c0.shape[1] + 1
    z_out, c_out = z0.clone(), c0.clone()
    excess_out = torch.zeros(B, dtype=lam.dtype, device=lam.device)
    z, c, lm, tg = z_out.clone(), c_out.clone(), lam, target
    rho = None
    lam_max = lm.max(1).values
    rule = Descent(B, tol=loss_tol, max_steps=max_steps, check_every=check_every,
                   device=lam.device, desc=desc, progress=progress, hint=hint)
    while True:
        C = c.prod(1)
        diff = C[:, None] * z - tg
        g = lm * diff
        excess = 0.5 * (g * diff).sum(1)
        if rho is None and flow_tol is not None:
            rho = flow_tol / torch.log(excess / loss_tol).clamp_min(1.0)
        if rule.due():
            if rule.stop(excess):
                break
            keep = rule.compact(compact)
            if keep is not None:
                # store the finished instances, keep training the others only
                done = ~keep
                z_out[rule.dropped], c_out[rule.dropped], excess_out[rule.dropped] = \
                    z[done], c[done], excess[done]
                z, c, lm, tg = z[keep], c[keep], lm[keep], tg[keep]
                rho = rho[keep] if rho is not None else None
                lam_max = lam_max[keep]
                continue                      # recompute the loss of the smaller set
        gz = (g * z).sum(1)                                             # g . w
        # only the active block V^T W_1 enters the curvature (g lies in the row space),
        # as in gradient_descent
        sq = torch.cat([z.pow(2).sum(1)[None], c.T.pow(2)])             # (L, b)
        eta = step_scale / curvature_bound(sq, lam_max, g.norm(dim=1))
        if rho is not None:
            eta = torch.minimum(eta, rho / excess)
        eta = rule.masked(eta)
        others = torch.stack([torch.cat([c[:, :l], c[:, l + 1:]], 1).prod(1)
                              for l in range(L - 1)], 1)                # prod_{k != l} c_k
        z = z - (eta * C)[:, None] * g
        c = c - (eta * gz)[:, None] * others
        rule.advance()
    if rule.idx is None:
        z_out, c_out, excess_out = z, c, excess
    else:
        z_out[rule.idx], c_out[rule.idx], excess_out[rule.idx] = z, c, excess
    return z_out, c_out, rule, excess_out
