r"""Trainers for batched deep linear networks (paper 000, Sec. 3; App. D).

Every objective used by paper 000 for deep linear networks is a quadratic in the
end-to-end vector :math:`\beta`:

.. math::
    \ell(\beta) = \tfrac12 (\beta - \hat\beta)^\top \Sigma (\beta - \hat\beta) + \ell_{\min},

with :math:`\Sigma = I` and :math:`\hat\beta = \beta_s` for pretraining on the population
loss (Eq. 2 with :math:`\mathbb E\, xx^\top = I`), and :math:`\Sigma = X^\top X/n`,
:math:`\hat\beta = X^+ y` for the empirical loss
:math:`\frac1{2n}\|y - X W_1\cdots W_L\|^2` (Eq. 3).  :class:`Quadratic` stores
:math:`\Sigma = V \operatorname{diag}(\lambda) V^\top` in the eigenbasis of the data.

Gradient descent on the first layer is equivariant under the rotation
:math:`W_1 \mapsto V^\top W_1`; rows of :math:`W_1` outside the data span receive no
gradient.  :func:`gradient_descent` therefore trains the rotated, active block
:math:`V^\top W_1` (``k x p`` instead of ``d x p``) and adds the change back at the end:
the iterates are *the same* as plain gradient descent on the full network, at a fraction
of the cost and without touching ``X`` inside the loop.

Gradient descent approximates gradient flow (Eq. 4): the step of each instance is
``step_scale / B_t`` where ``B_t`` (:func:`transferkit.models.curvature_bound`) bounds the
Hessian norm at the current weights, so the step is as large as stability allows and
adapts as the weights grow from :math:`O(\alpha)` to :math:`O(1)`.  Training stops, per
instance, when the *excess* training loss :math:`\ell - \ell_{\min}` falls below
``loss_tol``; instances still above it after ``max_steps`` are reported with a
:class:`ConvergenceWarning` and flagged in :class:`TrainInfo`.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from . import config

from ._validate import check_int
from .models import curvature_bound, feature_map, layer_gradients, right_products

__all__ = [
    "ConvergenceWarning",
    "DivergenceError",
    "Quadratic",
    "TrainInfo",
    "population_objective",
    "empirical_objective",
    "gradient_descent",
    "feature_subspace",
    "linear_transfer",
    "ridge_linear_transfer",
    "train_scratch",
    "finetune",
]


class ConvergenceWarning(UserWarning):
    """Some instances did not reach the loss tolerance within ``max_steps``."""


class DivergenceError(ValueError, FloatingPointError):
    """Training produced a non-finite loss: the step size (``step_scale``) is too large
    for this problem, or the inputs were not finite.

    A :class:`ValueError` (bad input: the step size) and a :class:`FloatingPointError`
    (what happened), so either ``except`` clause catches it.
    """


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


@dataclass
class TrainInfo:
    """Per-instance diagnostics of a training run (numpy arrays of length ``B``)."""

    steps: np.ndarray
    converged: np.ndarray
    excess_loss: np.ndarray

    @property
    def all_converged(self) -> bool:
        return bool(self.converged.all())


def gradient_descent(Ws, obj: Quadratic, *, loss_tol: float = 1e-10, max_steps: int = 100_000,
                     step_scale: float = 1.0, method: str = "gd", check_every: int = 10,
                     progress: bool | None = False, desc: str = "gradient descent",
                     warn: bool = True):
    r"""Full-batch gradient descent on all layers until :math:`\ell-\ell_{\min} \le` ``loss_tol``.

    Parameters
    ----------
    Ws : list of tensors ``(B, p_{l-1}, p_l)``
        Initial weights (not modified).
    obj : Quadratic
        The objective (population or empirical).
    loss_tol : float
        Tolerance on the excess training loss, per instance (> 0).
    max_steps : int
        Budget of steps; instances above tolerance after it are flagged.
    step_scale : float in (0, 2)
        Step in units of the inverse curvature bound.  ``1`` is the largest step that
        keeps every instance inside the stability region with margin; smaller values
        follow gradient flow more closely.
    method : {"gd", "nesterov"}
        ``"gd"``: plain gradient descent, a discretisation of gradient flow (Eq. 4); use it
        whenever the *path* matters (fine-tuning: the null-space component of
        :math:`\beta_s` is rescaled along the way, paper 001 Thm 5.2).
        ``"nesterov"``: Nesterov's accelerated gradient with adaptive restart (O'Donoghue
        and Candes 2015), which needs :math:`O(\sqrt\kappa)` instead of
        :math:`O(\kappa)` steps on ill-conditioned data (near :math:`\gamma = 1`).  Every
        update of :math:`W_1` is still a combination of gradients, which lie in the row
        space of :math:`X`, so the limit point is :math:`X^+y + O(\alpha)` exactly as for
        gradient flow (the argument of Thm 3.5); use it when only the limit matters
        (scratch training).  ``tests/test_trainers.py`` checks that both reach the same point.

    Returns
    -------
    Ws : list of tensors, the trained weights.
    info : TrainInfo
    """
    if not (0 < step_scale < 2):
        raise ValueError(f"step_scale must be in (0, 2) (got {step_scale!r})")
    if not (loss_tol > 0):
        raise ValueError(f"loss_tol must be > 0 (got {loss_tol!r})")
    if method not in ("gd", "nesterov"):
        raise ValueError(f"method must be 'gd' or 'nesterov' (got {method!r})")
    max_steps = check_int("max_steps", max_steps, 0)
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
    lam_max = lam.max(dim=1).values
    active = torch.ones(B, dtype=torch.bool, device=dev)
    steps = torch.zeros(B, dtype=torch.long, device=dev)

    def sq_norms():
        return torch.stack([torch.linalg.vector_norm(W, dim=(1, 2)) ** 2 for W in point])

    point = work
    sq = sq_norms()
    excess = None
    nesterov = method == "nesterov"
    if nesterov:
        prev = [W.clone() for W in work]      # x_{t-1}
        ybuf = [torch.empty_like(W) for W in work]
        k = torch.zeros(B, dtype=work[0].dtype, device=dev)  # momentum counter (restarts)
        last = torch.full((B,), float("inf"), dtype=work[0].dtype, device=dev)
    bar = tqdm(total=max_steps, desc=desc, disable=not config.progress(progress), leave=False)
    t = 0
    while True:
        if nesterov:
            # y = x + mu (x - x_prev), mu = (k - 1)/(k + 2) (zero right after a restart)
            mu = ((k - 1).clamp_min(0) / (k + 2))[:, None, None]
            for l in range(L):
                torch.lerp(work[l], prev[l], -mu, out=ybuf[l])  # x + mu (x - x_prev), fused
            point = ybuf
            sq = sq_norms()
        else:
            point = work
        r = right_products(point)
        beta = (point[0] @ r[0])[..., 0]
        diff = beta - target
        g = lam * diff
        excess = 0.5 * (g * diff).sum(1)
        if t % check_every == 0 or t == max_steps:
            if not torch.isfinite(excess).all():
                raise DivergenceError(
                    f"gradient descent diverged (non-finite loss at step {t}): step_scale="
                    f"{step_scale!r} is too large for this problem; use a value in (0, 1]")
            active &= excess > loss_tol
            if not bool(active.any()) or t >= max_steps:
                work = point  # the point whose loss was just checked
                break
            bar.update(check_every if t else 0)
            bar.set_postfix(converged=f"{int((~active).sum())}/{B}")
            if t % 1000 == 0 and not nesterov:
                sq = sq_norms()  # refresh the incrementally updated norms
        eta = step_scale / curvature_bound(sq, lam_max, g.norm(dim=1))
        eta = torch.where(active, eta, torch.zeros_like(eta))
        a, _ = layer_gradients(point, g, r)
        if nesterov:
            # function-value restart: drop the momentum where the loss went up
            k = torch.where(excess > last, torch.zeros_like(k), k + 1)
            last = excess
            for l in range(L):
                ybuf[l].baddbmm_(a[l] * (-eta)[:, None, None], r[l].transpose(1, 2))
            # frozen (converged) instances keep x: y = x there because eta = 0 and mu -> 0
            k = torch.where(active, k, torch.zeros_like(k))
            prev, work, ybuf = work, ybuf, prev
        else:
            gb = (g * beta).sum(1)
            for l in range(L):
                # ||W - eta a r^T||^2 = ||W||^2 - 2 eta a^T W r + eta^2 ||a||^2 ||r||^2, a^T W r = g.beta
                sq[l] = (sq[l] - 2 * eta * gb
                         + eta ** 2 * a[l].pow(2).sum((1, 2)) * r[l].pow(2).sum((1, 2)))
                work[l].baddbmm_(a[l] * (-eta)[:, None, None], r[l].transpose(1, 2))
        steps += active
        t += 1
    bar.close()
    converged = (excess <= loss_tol).cpu().numpy()
    info = TrainInfo(steps.cpu().numpy(), converged, excess.cpu().numpy())
    if warn and not info.all_converged:
        warnings.warn(f"{int((~converged).sum())} of {B} instances of '{desc}' did not reach "
                      f"excess loss {loss_tol:g} within {max_steps} steps (largest excess "
                      f"{float(excess.max()):.3g}); they are flagged in TrainInfo.converged",
                      ConvergenceWarning, stacklevel=2)
    if obj.V is not None:
        work[0] = W1 + obj.V @ (work[0] - W1_act0)
    return work, info


def feature_subspace(Ws, rcond: float = 1e-3):
    r"""Orthonormal basis of the pretrained feature space and its singular values.

    The features of a pretrained network are the columns of
    :math:`\Phi = W_1\cdots W_{L-1}` (Thm 3.4).  Singular values below
    ``rcond * s_max`` are treated as zero: after pretraining from scale :math:`\alpha` the
    feature map has one singular value of order one and the rest of order
    :math:`\alpha`, and gradient descent on the last layer cannot use directions whose
    curvature is :math:`O(\alpha^2)`.  This is the :math:`\alpha\to 0` limit of Thm 3.4.

    Returns
    -------
    U : tensor ``(B, d, r)``, left singular vectors, zero-padded to the largest rank ``r``
        in the batch.
    S : tensor ``(B, r)``, singular values (zero in padded columns).
    rank : numpy array ``(B,)``, effective rank per instance.
    svals : tensor ``(B, min(d, p))``, all singular values (for plots of Thm 3.4).
    """
    if not (0 < rcond < 1):
        raise ValueError(f"rcond must be in (0, 1) (got {rcond!r})")
    M = feature_map(Ws)
    U, svals, _ = torch.linalg.svd(M, full_matrices=False)
    keep = svals > rcond * svals[:, :1]
    rank = keep.sum(1)
    r = int(rank.max())
    Ur = U[:, :, :r] * keep[:, None, :r]
    Sr = svals[:, :r] * keep[:, :r]
    return Ur, Sr, rank.cpu().numpy(), svals


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
    Returns ``(weights, TrainInfo)``.
    """
    from .models import init_deep_linear

    W0 = init_deep_linear(X.shape[2], depth, alpha, rngs, device=X.device, dtype=X.dtype)
    return gradient_descent(W0, empirical_objective(X, y), method=method,
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
