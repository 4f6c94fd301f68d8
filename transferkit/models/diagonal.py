r"""Diagonal linear networks trained by single-task learning, PT+FT and multi-task learning.

The model of paper 004 (Eqs. 6-7 and 24-25): with :math:`O` outputs (tasks) and a shared
first layer,

.. math:: \beta_{o,d} = w^{(2)}_{+,o,d}\,w^{(1)}_{+,d} - w^{(2)}_{-,o,d}\,w^{(1)}_{-,d},

trained by gradient descent on :math:`\sum_o \frac1{2n_o}\|X_o\beta_o - y_o\|^2` with a
small relative step, so that it follows gradient flow (whose limit Eq. 22 describes).

* :func:`train_diagonal` -- batched gradient descent (leading batch dimension: draws and sample
  sizes; rows of ``X`` padded with zeros), stopping at a loss tolerance;
* :func:`train_diagonal_gram` -- the same descent written with the sample moments
  :math:`X^\top X/n`, :math:`X^\top y/n` (:func:`sample_moments`), shared by every network
  trained on the same samples (draws, initialisation scales and sample sizes in one batch):
  a matrix-matrix product per sample set instead of a matrix-vector product per network,
  and converged networks dropped from the working tensors;
* :func:`q_min_interpolant` -- the minimiser of Eq. 22 under :math:`X\beta = y`, by Newton's
  method on the convex dual;
* :func:`~transferkit.experiments.diagonal_networks.sparse_teachers`, :func:`~transferkit.experiments.diagonal_networks.run_tasks` -- the experiment of the chapter: sparse
  teachers with overlapping or disjoint supports, STL / PT+FT / MTL against the number of
  samples;
* :func:`~transferkit.stats.participation_ratio`, :func:`~transferkit.stats.ensd` -- dimensionality of representations (App. G).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import torch

from .._validate import (check_array, check_coordinates, check_fraction, check_int, check_open_unit,
                         check_positive)
from ._diagonal_kernel import (diagonal_descent, diagonal_gram_descent, lockstep_accept,
                               lockstep_beta, lockstep_gather, lockstep_grad_loss, lockstep_stop,
                               lockstep_trial)
from .descent import (ConvergenceWarning, Descent, bold_driver, check_engine, keep_where,
                      run_kernel)
from .device import default_device

__all__ = ["DiagonalState", "init_state", "effective_weights", "train_diagonal", "SampleMoments",
           "sample_moments", "train_diagonal_gram", "q_min_interpolant", "min_l12_interpolant", "L12Interpolant",
           "L12_GAP_WARN"]


#: Largest input dimension at which ``train_diagonal_gram(engine="auto")`` runs the compiled
#: kernel (one network at a time, its moments read by that network alone) instead of the
#: lockstep engine (one matrix product per sample set for all its networks).
#: Measured on one idle thread (2026-11-27; 15 MTL networks of one draw, n_aux = 2D, grown
#: step), network-steps per second, kernel / lockstep / torch loop: 233,358 / 117,204 /
#: 18,648 at D = 100; 31,604 / 67,657 / 25,018 at D = 200; 8,706 / 25,225 / 11,391 at
#: D = 400.  On one D = 1000 draw cell of the diagonal chapter (25 networks run to
#: convergence): 144 s lockstep, 210 s torch loop; 345 s of CPU kernel (beside another job);
#: the lockstep engine's products through numpy's BLAS instead of torch's since 2026-11-29
#: (44 s against 74 s for that cell, idle machine).
#: (``benchmarks/diagonal_speed.py`` prints the rates at the chapter's D = 50 and at 1000).
KERNEL_MAX_D = 128


@dataclass
class DiagonalState:
    """Weights of a batch of diagonal networks: ``w1`` ``(B, 2, D)``, ``w2`` ``(B, 2, O, D)``.

    Index 0 of the second axis is the :math:`+` branch, index 1 the :math:`-` branch.
    """

    w1: torch.Tensor
    w2: torch.Tensor


def init_state(B: int, O: int, D: int, w1_0, w2_0, device=None) -> DiagonalState:
    r"""The symmetric initialisation :math:`w_\pm(0) = w_0` of paper 004 (before Eq. 18).

    ``w1_0`` broadcasts to ``(B, D)``, ``w2_0`` to ``(B, O, D)``; :math:`\beta(0) = 0`.
    """
    B, O, D = check_int("B", B, 1), check_int("O", O, 1), check_int("D", D, 1)
    w1_0, w2_0 = check_array("w1_0", w1_0, 0), check_array("w2_0", w2_0, 0)
    for name, v, shape in (("w1_0", w1_0, (B, D)), ("w2_0", w2_0, (B, O, D))):
        try:
            np.broadcast_to(v, shape)
        except ValueError:
            raise ValueError(f"{name} must broadcast to {shape} (got shape {v.shape})") from None
    dev = device or default_device()
    w1 = torch.tensor(np.broadcast_to(np.asarray(w1_0, float), (B, D)).copy(),
                      dtype=torch.float64, device=dev)
    w2 = torch.tensor(np.broadcast_to(np.asarray(w2_0, float), (B, O, D)).copy(),
                      dtype=torch.float64, device=dev)
    return DiagonalState(torch.stack([w1, w1], 1).clone(), torch.stack([w2, w2], 1).clone())


def effective_weights(state: DiagonalState) -> torch.Tensor:
    r""":math:`\beta` of Eq. 25, shape ``(B, O, D)``."""
    return state.w2[:, 0] * state.w1[:, 0, None] - state.w2[:, 1] * state.w1[:, 1, None]


@dataclass
class TrainResult:
    beta: np.ndarray        # (B, O, D)
    loss: np.ndarray        # (B,) final training loss
    steps: np.ndarray       # (B,) steps taken
    converged: np.ndarray   # (B,) loss <= loss_tol
    state: DiagonalState


def train_diagonal(state: DiagonalState, X, y, n, *, train_first: bool = True, rel_step: float = 0.01,
                   loss_tol: float = 1e-12, max_steps: int = 200_000,
                   engine: str = "auto") -> TrainResult:
    r"""Gradient descent on :math:`\sum_o \frac{1}{2n_o}\|X_o\beta_o - y_o\|^2` (paper 004, Eq. 8).

    Parameters
    ----------
    state : DiagonalState
        Initial weights (modified in place).
    X : array ``(B, O, N, D)``
        Inputs of every task; rows beyond ``n[b, o]`` must be zero (padding).
    y : array ``(B, O, N)``
        Targets (zero in padded rows).
    n : array ``(B, O)``
        Number of real samples per task (>= 1).
    train_first : bool
        ``False`` freezes the first layer (linear probing).
    rel_step : float
        Largest relative change of a weight in one step; the step is
        :math:`\eta = \min(\min(1, 50\,\mathrm{rel\_step})/\kappa,\
        \mathrm{rel\_step}/\max|\nabla_\beta L|)` (so the whole trajectory's
        discretisation error scales with ``rel_step`` up to 0.02) with
        :math:`\kappa = \lambda_{\max}\max_d\sum(w^2) + \max|\nabla_\beta L|` a bound on the
        curvature.  Small ``rel_step`` keeps the trajectory close to gradient flow, whose
        implicit bias Eq. 22 describes (a finite step changes it, Nacson et al. 2022).
    loss_tol : float
        Stop (per network) when the training loss is at most ``loss_tol`` times the mean
        of :math:`y^2`.
    engine : {"auto", "torch", "kernel"}
        ``"torch"``: one batched loop (every device; a stopped network takes zero steps
        until the last one stops).  ``"kernel"``: the compiled CPU kernel
        (``transferkit.models._diagonal_kernel``), which runs each network to its own stop
        with the same operations, on ``torch.get_num_threads()`` threads (its sums run in
        sequence, torch's in BLAS order: weights equal to rounding, and the same steps
        unless a loss lands within rounding of its tolerance); 5-20 times faster at the
        chapter's :math:`D = 50`.  ``"auto"``: the kernel for weights on the CPU, else
        torch.

    A network that has not converged after ``max_steps`` raises a
    :class:`~transferkit.models.descent.ConvergenceWarning`.

    Raises
    ------
    ValueError
        Naming the parameter: a bad ``rel_step``, ``loss_tol``, ``max_steps`` or
        ``engine``, shapes that do not match, non-finite ``X`` or ``y``, ``X`` whose second
        moments overflow.
    DivergenceError
        A loss that is not finite (``rel_step`` too large).
    """
    rel_step = check_positive("rel_step", rel_step)
    loss_tol = check_positive("loss_tol", loss_tol)
    max_steps = check_int("max_steps", max_steps, 1)
    dev = state.w1.device
    engine = check_engine(engine, ("auto", "torch", "kernel"), dev)
    X = torch.as_tensor(np.asarray(X, float), device=dev)
    y = torch.as_tensor(np.asarray(y, float), device=dev)
    n = torch.as_tensor(np.asarray(n, float), device=dev)
    if not (torch.isfinite(X).all() and torch.isfinite(y).all()):
        raise ValueError("X and y must be finite")
    B, O, N, D = X.shape
    if y.shape != (B, O, N) or n.shape != (B, O):
        raise ValueError(f"y must have shape {(B, O, N)} and n {(B, O)}")
    # lambda_max of X_o^T X_o / n_o, per network (largest over tasks)
    gram = X.transpose(-1, -2) @ X / n[..., None, None]
    if not bool(torch.isfinite(gram).all()):
        raise ValueError("X is too large: its second moments X^T X / n overflow")
    lam = torch.linalg.eigvalsh(gram)[..., -1].amax(-1)               # (B,)
    scale = ((y ** 2).sum((1, 2)) / n.sum(1)).clamp_min(1e-300)         # mean y^2
    w1, w2 = state.w1, state.w2
    curv_frac = min(1.0, 50 * rel_step)
    rule = Descent(B, tol=loss_tol * scale, max_steps=max_steps, device=dev,
                   desc="diagonal networks", hint=f"rel_step={rel_step!r} is too large")
    if engine == "kernel" or (engine == "auto" and dev.type == "cpu"):
        loss = _on_kernel(state, X, y, n, lam, rule, train_first, rel_step)
        return _result(state, rule, loss)
    while True:
        beta = w2[:, 0] * w1[:, 0, None] - w2[:, 1] * w1[:, 1, None]    # (B, O, D)
        r = (X @ beta[..., None])[..., 0] - y                            # (B, O, N)
        loss = 0.5 * ((r ** 2).sum(-1) / n).sum(-1)
        if rule.stop(loss):
            break
        g = (r[..., None, :] @ X)[..., 0, :] / n[..., None]               # dL/dbeta (B, O, D)
        gmax = g.abs().amax((1, 2))
        kappa = _curvature(w1, w2, lam, gmax, 2 if train_first else 1)
        eta = rule.masked(torch.minimum(curv_frac / kappa, rel_step / gmax.clamp_min(1e-300)))
        g1, g2 = _layer_grads(g, w1, w2)
        if train_first:
            w1 = w1 - eta[:, None, None] * g1
        w2 = w2 - eta[:, None, None, None] * g2
        rule.advance()
    state.w1, state.w2 = w1, w2
    return _result(state, rule, loss)


def _result(state, rule, loss) -> TrainResult:
    """The :class:`TrainResult` of a finished run (``loss``: the final losses ``(B,)``),
    warning about unconverged networks on behalf of the trainer's caller."""
    info = rule.finish(loss, stacklevel=4)
    beta = effective_weights(state)
    return TrainResult(beta.cpu().numpy(), info.excess_loss, info.steps, info.converged, state)


def _host_copy(state, rule):
    """Float64 numpy copies of the weights ``state.w1``, ``state.w2`` for a compiled
    engine, and the per-network loss tolerance of ``rule`` ``(B,)``."""
    w1 = state.w1.detach().cpu().numpy().astype(np.float64, copy=True)
    w2 = state.w2.detach().cpu().numpy().astype(np.float64, copy=True)
    tol = np.broadcast_to(np.asarray(rule.tol.cpu().numpy(), float), (w1.shape[0],)).copy()
    return w1, w2, tol


def _on_kernel(state, X, y, n, lam, rule, train_first, rel_step):
    """:func:`train_diagonal` on the compiled kernel (CPU): updates ``state`` and
    ``rule.steps``; returns the final losses ``(B,)``."""
    w1, w2, tol = _host_copy(state, rule)
    Xn, yn = np.ascontiguousarray(X.numpy()), np.ascontiguousarray(y.numpy())
    # rows that enter: up to the last row of X or y that is not zero (padding contributes
    # exact zeros to the loss and the gradient in either engine)
    nz = (Xn != 0).any(-1) | (yn != 0)                                   # (B, O, N)
    rows = np.where(nz.any(-1), nz.shape[-1] - np.argmax(nz[..., ::-1], -1), 0).astype(np.int64)
    loss = run_kernel(diagonal_descent, (w1, w2, Xn, yn, np.ascontiguousarray(n.numpy()), rows,
                                          np.ascontiguousarray(lam.numpy()), tol,
                                          bool(train_first), float(rel_step),
                                          int(rule.max_steps)), X.shape[0], rule)
    state.w1, state.w2 = torch.from_numpy(w1), torch.from_numpy(w2)
    return loss


def _gram_on_kernel(state, moments, index, lam, const, rule, rel_step, grow):
    """:func:`train_diagonal_gram` on the compiled kernel (CPU): updates ``state`` and
    ``rule.steps``; returns the final losses ``(B,)``.  The moments of every set are packed
    into one flat array (Gram matrices ``(D, D)``, sample sets ``(n_k, D)``)."""
    mats = [m.cpu().numpy() for m in moments.mats]
    sizes = np.array([m.size for m in mats], np.int64)
    offset = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    flat = np.concatenate([m.ravel() for m in mats])
    rows = np.array([m.shape[0] for m in mats], np.int64)
    w1, w2, tol = _host_copy(state, rule)
    B = w1.shape[0]
    args = (w1, w2, np.ascontiguousarray(index, np.int64), flat, offset, rows,
            np.array(moments.gram, np.bool_), np.ascontiguousarray(moments.xty.cpu().numpy()),
            np.ascontiguousarray(const.cpu().numpy()), np.ascontiguousarray(lam.cpu().numpy()),
            tol, float(rel_step), -1.0 if grow is None else float(grow), int(rule.max_steps))
    loss = run_kernel(diagonal_gram_descent, args, B, rule)
    state.w1, state.w2 = torch.from_numpy(w1), torch.from_numpy(w2)
    return loss


def _gram_lockstep(state, moments, index, lam, const, rule, rel_step, grow):
    """:func:`train_diagonal_gram` in lockstep (CPU): one matrix product per sample set for
    the active networks that use it, with the element-wise work in the compiled
    ``lockstep_*`` loops of ``transferkit.models._diagonal_kernel``.  Updates ``state`` and
    ``rule.steps``; returns the final losses ``(B,)``.

    The products go through numpy's BLAS (OpenBLAS) on the host arrays: for a few rows times
    a 1000 x 1000 Gram matrix (the chapter's D = 1000), one thread of this project's machine
    ran them 1.2 to 2.2 times faster than torch's (MKL), and one draw cell of the chapter in
    44 s against 74 s (idle machine, 2026-11-29)."""
    w1, w2, tol = _host_copy(state, rule)
    B, _, O, D = w2.shape
    K = len(moments.mats)
    mats = [m.cpu().numpy() for m in moments.mats]
    mats_t = [None if g else m.T for m, g in zip(mats, moments.gram)]
    div = np.array([1.0 if g else float(m.shape[0]) for m, g in zip(mats, moments.gram)])
    sets = np.ascontiguousarray(index, np.int64)
    xty = np.ascontiguousarray(moments.xty.cpu().numpy())
    half_yy = np.ascontiguousarray(const.cpu().numpy())
    lam_ = np.ascontiguousarray(lam.cpu().numpy())
    grow_ = -1.0 if grow is None else float(grow)
    bt, g, gn = (np.empty((B, O, D)) for _ in range(3))
    loss, lossn = np.empty(B), np.empty(B)
    n1, n2 = np.empty_like(w1), np.empty_like(w2)
    eta, acc = np.full(B, -1.0), np.zeros(B, np.int64)
    act, nact = np.arange(B, dtype=np.int64), B
    buf, prod = np.empty((B * O, D)), np.empty((B * O, D))
    ptr, rowidx = np.empty(K + 1, np.int64), np.empty((B, O), np.int64)

    def grad_loss(g_out, loss_out):
        """Products of the rows in ``bt`` of the active networks, then gradient and loss."""
        lockstep_gather(bt, act, nact, sets, K, buf, ptr, rowidx)
        for k in range(K):
            lo, hi = int(ptr[k]), int(ptr[k + 1])
            if hi > lo:
                a, out = buf[lo:hi], prod[lo:hi]
                if mats_t[k] is None:
                    np.dot(a, mats[k], out=out)                   # G symmetric: beta G
                else:                                             # (beta X^T) X, / n below
                    np.dot(np.dot(a, mats_t[k]), mats[k], out=out)
        lockstep_grad_loss(prod, rowidx, act, nact, sets, div, xty, half_yy, bt, g_out,
                           loss_out)

    lockstep_beta(w1, w2, act, nact, bt)
    grad_loss(g, loss)
    t = 0
    nact, bad = lockstep_stop(loss, tol, act, nact, t, rule.max_steps)
    while nact and bad < 0:
        lockstep_trial(w1, w2, g, eta, lam_, act, nact, float(rel_step), grow_, n1, n2, bt)
        grad_loss(gn, lossn)
        lockstep_accept(w1, w2, g, loss, eta, acc, n1, n2, gn, lossn, act, nact, grow_)
        t += 1
        nact, bad = lockstep_stop(loss, tol, act, nact, t, rule.max_steps)
    if bad >= 0:
        raise rule.diverged(t)
    state.w1, state.w2 = torch.from_numpy(w1), torch.from_numpy(w2)
    rule.steps = torch.from_numpy(acc)
    rule.t = t
    return torch.from_numpy(loss)


def _layer_grads(g, w1, w2):
    r"""Gradients in ``w1`` ``(B, 2, D)`` and ``w2`` ``(B, 2, O, D)`` from
    :math:`g = \partial L/\partial\beta` ``(B, O, D)``, for
    :math:`\beta = w_2^+ w_1^+ - w_2^- w_1^-` (paper 004, Eq. 20)."""
    return (torch.stack([(g * w2[:, 0]).sum(1), -(g * w2[:, 1]).sum(1)], 1),
            torch.stack([g * w1[:, 0, None], -g * w1[:, 1, None]], 1))


def _curvature(w1, w2, lam, gmax, layers):
    r"""The step rule's curvature estimate :math:`\lambda_{\max}\max_d\|w_d\|^2\cdot`
    ``layers`` :math:`+ \max|g|` per network (``layers``: 2 when both layers train)."""
    wsq = (w1 ** 2).sum(1) + (w2 ** 2).sum((1, 2))                        # (B, D)
    return lam * wsq.amax(-1) * layers + gmax


@dataclass(frozen=True)
class SampleMoments:
    r"""The sufficient statistics of :math:`K` sample sets for the squared loss
    (:func:`sample_moments`).

    Attributes
    ----------
    mats : tuple of K tensors
        Per set, what its gradient is computed with, whichever is smaller: the Gram matrix
        :math:`G_k = X_k^\top X_k/n_k` ``(D, D)`` where ``gram[k]``, else the inputs
        :math:`X_k` ``(n_k, D)`` (:math:`G_k\beta = X_k^\top(X_k\beta)/n_k`).
    gram : tuple of bool
        Which sets are held as Gram matrices (:math:`2n_k \ge D`).
    xty : tensor ``(K, D)``
        :math:`b_k = X_k^\top y_k/n_k`.
    yy : tensor ``(K,)``
        :math:`y_k^\top y_k/n_k`, the mean squared target.
    n : tensor ``(K,)``
        Sample sizes :math:`n_k`.
    lam : tensor ``(K,)``
        :math:`\lambda_{\max}(G_k)`.
    """

    mats: tuple
    gram: tuple
    xty: torch.Tensor
    yy: torch.Tensor
    n: torch.Tensor
    lam: torch.Tensor

    def product(self, k: int, beta: torch.Tensor) -> torch.Tensor:
        r""":math:`G_k\beta` for the rows of ``beta`` ``(M, D)``."""
        if self.gram[k]:
            return beta @ self.mats[k]                     # G symmetric
        X = self.mats[k]
        return (beta @ X.T) @ X / X.shape[0]


def sample_moments(Xs, ys, device=None) -> SampleMoments:
    r"""The moments :math:`X^\top X/n` (or :math:`X` itself where :math:`2n < D`, the cheaper
    product), :math:`X^\top y/n`, :math:`y^\top y/n` and :math:`\lambda_{\max}(X^\top X/n)`
    of each sample set, for :func:`train_diagonal_gram`.

    Parameters
    ----------
    Xs : sequence of K arrays ``(n_k, D)``
        Inputs (finite, ``n_k >= 1``, one ``D``).
    ys : sequence of K arrays ``(n_k,)``
        Targets.
    device : torch device, optional
        Default :func:`transferkit.models.device.default_device`.

    Raises
    ------
    ValueError
        Naming ``Xs`` or ``ys``: different lengths, no set, shapes that do not match,
        non-finite entries, or inputs or targets whose moments overflow.
    """
    if len(Xs) != len(ys) or not len(Xs):
        raise ValueError(f"Xs and ys must list the same number (>= 1) of sample sets "
                         f"(got {len(Xs)} and {len(ys)})")
    Xs = [np.asarray(x, float) for x in Xs]
    ys = [np.asarray(v, float) for v in ys]
    D = Xs[0].shape[-1] if Xs[0].ndim == 2 else -1
    for k, (x, v) in enumerate(zip(Xs, ys)):
        if x.ndim != 2 or x.shape[1] != D or x.shape[0] < 1 or v.shape != (x.shape[0],):
            raise ValueError(f"set {k}: Xs[{k}] must be (n >= 1, {D}) and ys[{k}] (n,) "
                             f"(got {x.shape} and {v.shape})")
        if not (np.isfinite(x).all() and np.isfinite(v).all()):
            raise ValueError(f"set {k}: Xs and ys must be finite")
    dev = device or default_device()
    gram = tuple(2 * len(x) >= D for x in Xs)
    mats, lam = [], []
    for k, (x, is_gram) in enumerate(zip(Xs, gram)):
        with np.errstate(over="ignore", invalid="ignore"):   # overflow: refused below
            m = x.T @ x / len(x) if is_gram else x
            sec = m if is_gram else x @ x.T / len(x)      # the same nonzero eigenvalues
        if not np.isfinite(sec).all():
            raise ValueError(f"set {k}: Xs[{k}] is too large: its second moments overflow")
        lam.append(np.linalg.eigvalsh(sec)[-1])
        mats.append(torch.as_tensor(m, device=dev))
    with np.errstate(over="ignore", invalid="ignore"):        # overflow: refused below
        xty = np.stack([x.T @ v / len(v) for x, v in zip(Xs, ys)])
        yy = np.array([v @ v / len(v) for v in ys])
    if not (np.isfinite(xty).all() and np.isfinite(yy).all()):
        raise ValueError("ys is too large: X^T y / n or y^T y / n of a set overflows")
    return SampleMoments(mats=tuple(mats), gram=gram, xty=torch.as_tensor(xty, device=dev),
                         yy=torch.as_tensor(yy, device=dev),
                         n=torch.as_tensor(np.array([len(v) for v in ys], float), device=dev),
                         lam=torch.as_tensor(np.array(lam), device=dev))


def train_diagonal_gram(state: DiagonalState, moments: SampleMoments, index, *,
                        rel_step: float = 0.01, loss_tol: float = 1e-12,
                        max_steps: int = 200_000, grow: float | None = 1.1,
                        compact: float = 0.5, desc: str = "diagonal networks",
                        engine: str = "auto") -> TrainResult:
    r"""Gradient descent of :func:`train_diagonal` (same loss, same relative-step cap) with
    the samples entering through their moments (paper 004, Eq. 8).

    Task :math:`o` of network :math:`b` is trained on sample set ``index[b, o]``:

    .. math:: L_b = \sum_o \tfrac12\beta_o^\top G_k\beta_o - b_k^\top\beta_o
              + \tfrac12\,y^\top y/n_k,\qquad \nabla_{\beta_o}L_b = G_k\beta_o - b_k,
              \qquad k = \mathrm{index}[b, o],

    which is :math:`\sum_o\frac1{2n_o}\|X_o\beta_o - y_o\|^2`.  Every network that uses
    set :math:`k` is multiplied by :math:`G_k` in one matrix-matrix product, so a batch of
    initialisation scales (or draws, or sample sizes) on shared samples costs one read of
    :math:`G_k` per step (or of :math:`X_k` where :math:`2n_k < D`, the smaller), so the
    per-step cost is at most :math:`O(D^2)` per set, whatever :math:`n_k`.  Networks
    stop on their own (:class:`~transferkit.models.descent.Descent`); once fewer than
    ``compact`` of the working set are active the stopped ones are dropped from the working
    tensors (the same iterates, less work).  The stopping quantity is the loss written with
    the moments, exact up to rounding of order :math:`10^{-16}\,y^\top y/n`.

    Step size.  ``grow=None``: the rule of :func:`train_diagonal`,
    :math:`\eta = \min(\min(1, 50\,\mathrm{rel\_step})/\kappa,\ \mathrm{rel\_step}/\max|\nabla_\beta L|)`
    (the same iterates up to rounding).  ``grow > 1`` (default): the largest stable step
    under the same relative cap, per network: it starts at that value, a step is accepted
    if it does not raise the loss and then :math:`\eta \leftarrow \min(g\,\eta,\
    \mathrm{rel\_step}/\max|\nabla_\beta L|)`, else rejected and halved
    (:func:`~transferkit.models.descent.bold_driver`,
    :func:`~transferkit.models.descent.keep_where`).  The curvature bound :math:`\kappa`
    uses :math:`\lambda_{\max}` of the whole :math:`G_k`, about :math:`D/n` for
    :math:`n < D`, while the weights that are not small live on a few coordinates: the
    accepted step is then many times the bound's, and the relative cap keeps the
    trajectory as close to gradient flow as under the fixed rule.  ``steps`` counts
    accepted steps; ``max_steps`` bounds the iterations (accepted or not).

    Parameters
    ----------
    state : DiagonalState
        Initial weights, ``w1`` ``(B, 2, D)``, ``w2`` ``(B, 2, O, D)`` (replaced by the
        final ones).
    moments : SampleMoments
        The :math:`K` sample sets (:func:`sample_moments`).
    index : int array ``(B, O)``
        The sample set of each task of each network, in ``[0, K)``.
    rel_step, loss_tol, max_steps
        As in :func:`train_diagonal` (the tolerance is relative to the mean squared target
        over all the network's samples).
    grow : float > 1 or None
        Growth factor of an accepted step; ``None``: the fixed rule.
    compact : float in [0, 1)
        Compaction threshold (``0``: never).
    desc : str
        Name of the run in the progress bar and warnings.
    engine : {"auto", "torch", "kernel", "lockstep"}
        ``"torch"``: the batched loop above (every device).  ``"kernel"``: the compiled CPU
        kernel (``transferkit.models._diagonal_kernel``), each network to its own stop with
        the same operations, on ``torch.get_num_threads()`` threads.  Each network then
        reads its sets' moments alone: the faster for small :math:`D` (about 10 times the
        torch loop at the chapter's :math:`D = 50`).  ``"lockstep"``: the torch loop's
        iterations and matrix products (one per sample set, for all the networks that use
        it; through numpy's BLAS) with the element-wise work (steps, trial weights, losses,
        acceptance, stopping) in compiled loops, which removes the torch loop's
        per-operation overhead (a draw cell of the chapter at :math:`D = 1000`: 144 s
        against 210 s; 44 s against 74 s for torch's products, idle); CPU only.  Either
        compiled engine gives weights equal to the torch loop's up to rounding, and the same
        steps unless a loss lands within rounding of its tolerance or a trial step's loss
        within rounding of the current one.  ``"auto"``: on the CPU the kernel for
        :math:`D \le` ``KERNEL_MAX_D`` (128), else lockstep; torch on other devices.

    Raises
    ------
    ValueError
        Naming the parameter: ``index`` not of shape ``(B, O)`` or outside ``[0, K)``,
        ``grow`` not above 1, ``compact`` outside ``[0, 1)``, a bad ``rel_step``,
        ``loss_tol``, ``max_steps`` or ``engine``.
    """
    rel_step = check_positive("rel_step", rel_step)
    loss_tol = check_positive("loss_tol", loss_tol)
    max_steps = check_int("max_steps", max_steps, 1)
    if grow is not None and not (isinstance(grow, (int, float)) and 1 < grow < math.inf):
        raise ValueError(f"grow must be a number in (1, inf) or None (got {grow!r})")
    compact = check_fraction("compact", compact)
    w1, w2 = state.w1, state.w2
    B, _, O, D = w2.shape
    K = len(moments.mats)
    index = np.asarray(index)
    if index.shape != (B, O) or not np.issubdtype(index.dtype, np.integer):
        raise ValueError(f"index must be an integer array of shape {(B, O)} (got {index.shape})")
    if index.size and (index.min() < 0 or index.max() >= K):
        raise ValueError(f"index must lie in [0, {K}) (got {index.min()}..{index.max()})")
    dev = w1.device
    engine = check_engine(engine, ("auto", "torch", "kernel", "lockstep"), dev)
    if engine == "auto" and dev.type == "cpu":
        engine = "kernel" if D <= KERNEL_MAX_D else "lockstep"
    idx = torch.as_tensor(index, device=dev)
    bv, yy, nn = moments.xty, moments.yy, moments.n
    lam = moments.lam[idx].amax(-1)                                        # (B,)
    scale = ((yy * nn)[idx].sum(-1) / nn[idx].sum(-1)).clamp_min(1e-300)   # mean y^2
    const = 0.5 * yy[idx].sum(-1)                                           # (B,)
    curv_frac = min(1.0, 50 * rel_step)
    rule = Descent(B, tol=loss_tol * scale, max_steps=max_steps, device=dev, desc=desc,
                   hint=f"rel_step={rel_step!r} is too large")
    if engine in ("kernel", "lockstep"):
        run_on = _gram_on_kernel if engine == "kernel" else _gram_lockstep
        loss = run_on(state, moments, index, lam, const, rule, rel_step, grow)
        return _result(state, rule, loss)
    w1_out, w2_out = w1.clone(), w2.clone()
    loss_out = torch.zeros(B, dtype=w1.dtype, device=dev)

    def groups(ix):
        """(task, set, rows) of the working set: the networks whose task uses each set."""
        out = []
        for o in range(O):
            col = ix[:, o]
            for k in torch.unique(col).tolist():
                out.append((o, k, torch.nonzero(col == k)[:, 0]))
        return out

    def grad_loss(w1, w2, bb, grp, const):
        beta = w2[:, 0] * w1[:, 0, None] - w2[:, 1] * w1[:, 1, None]       # (B, O, D)
        g = torch.empty_like(beta)
        for o, k, rows in grp:
            g[rows, o] = moments.product(k, beta[rows, o])
        g -= bb
        return g, 0.5 * ((g - bb) * beta).sum((1, 2)) + const              # (B, O, D), (B,)

    grp = groups(idx)
    bb = bv[idx]                                                           # (B, O, D)
    g, loss = grad_loss(w1, w2, bb, grp, const)
    eta = None
    while True:
        if rule.stop(loss):
            break
        keep = rule.compact(compact)
        if keep is not None:
            done = ~keep
            w1_out[rule.dropped], w2_out[rule.dropped] = w1[done], w2[done]
            loss_out[rule.dropped] = loss[done]
            w1, w2, idx, lam = w1[keep], w2[keep], idx[keep], lam[keep]
            g, loss, const = g[keep], loss[keep], const[keep]
            eta = eta[keep] if eta is not None else None
            bb = bb[keep]
            grp = groups(idx)
        gmax = g.abs().amax((1, 2))
        cap = rel_step / gmax.clamp_min(1e-300)
        if eta is None or grow is None:
            eta = torch.minimum(curv_frac / _curvature(w1, w2, lam, gmax, 2), cap)
        else:
            eta = torch.minimum(eta, cap)
        e = rule.masked(eta)
        g1, g2 = _layer_grads(g, w1, w2)
        w1n = w1 - e[:, None, None] * g1
        w2n = w2 - e[:, None, None, None] * g2
        if grow is None:
            w1, w2 = w1n, w2n
            g, loss = grad_loss(w1, w2, bb, grp, const)
            rule.advance()
            continue
        gn, lossn = grad_loss(w1n, w2n, bb, grp, const)
        ok = rule.active & (lossn <= loss)
        w1, w2 = keep_where(ok, w1n, w1), keep_where(ok, w2n, w2)
        g, loss = keep_where(ok, gn, g), torch.where(ok, lossn, loss)
        eta = bold_driver(eta, ok, rule.active, grow)
        rule.advance(ok)
    if rule.idx is None:
        w1_out, w2_out, loss_out = w1, w2, loss
    else:
        w1_out[rule.idx], w2_out[rule.idx], loss_out[rule.idx] = w1, w2, loss
    state.w1, state.w2 = w1_out, w2_out
    return _result(state, rule, loss_out)


#: Largest move of cosh's argument that :func:`q_min_interpolant` tries where no Newton
#: step of length >= 1e-12 is accepted (cosh grows by at most e**20 per step).
_MAX_COSH_STEP = 20.0


def q_min_interpolant(X, y, w1_0, w2_0, *, tol: float = 1e-12, max_iter: int = 200):
    r"""Minimiser of :math:`\|\beta\|_Q` (paper 004, Eq. 22) subject to :math:`X\beta = y`.

    The problem is convex; its dual is the smooth unconstrained problem

    .. math:: \min_\lambda\ \sum_d 2c_d\left(\cosh\frac{(X^\top\lambda)_d}{2} - 1\right)
              - \lambda^\top y,\qquad c_d = (w^{(1)}_{0,d})^2 + (w^{(2)}_{0,d})^2,

    (the convex conjugate of :math:`c\,q(2\beta/c)` is :math:`2c(\cosh(s/2) - 1)`), solved by
    Newton's method with backtracking; the primal solution is
    :math:`\beta = c\circ\sinh(X^\top\lambda/2)` (:func:`~transferkit.theory.penalties.diagonal_dual_beta`).
    Stops when :math:`\|X\beta - y\| \le \mathrm{tol}\,\|y\|`.  ``X`` is ``(n, D)`` with full
    row rank, ``y`` ``(n,)``; ``c_d > 0`` for all ``d``.

    The problem is solved at unit scale: :math:`(X, y)` divided by one power of two (the
    constraints are unchanged), then :math:`y` and :math:`c` by another, :math:`s`, with
    :math:`\beta = s\,\beta'` (:math:`Q_c(s\beta') = s\,Q_{c/s}(\beta')`).  Exact: the same
    bits where nothing over- or underflows, and inputs of 1e200 or 1e-300 are solved as
    those of order one.

    Returns ``(beta, residual)`` with the relative residual reached.

    Raises
    ------
    ValueError
        Naming the parameter: ``X`` not a finite ``(n, D)`` array, ``y`` not finite of shape
        ``(n,)``, ``w1_0`` or ``w2_0`` not finite or not broadcasting to ``(D,)``, ``c_d = 0``
        (or beyond the float range once scaled), ``tol`` not in (0, 1) or ``max_iter`` < 1.
    """
    X = check_array("X", X, 2)
    if X.ndim != 2 or min(X.shape) < 1:
        raise ValueError(f"X must have shape (n, D) with n, D >= 1 (got shape {X.shape})")
    y = check_array("y", y, 1)
    if y.shape != X.shape[:1]:
        raise ValueError(f"y must have shape ({X.shape[0]},), one entry per row of X "
                         f"(got shape {y.shape})")
    tol = check_open_unit("tol", tol)
    max_iter = check_int("max_iter", max_iter, 1)
    ws = {name: check_coordinates(name, w, X.shape[1])
          for name, w in (("w1_0", w1_0), ("w2_0", w2_0))}
    with np.errstate(over="ignore", under="ignore"):
        c = np.broadcast_to(ws["w1_0"] ** 2 + ws["w2_0"] ** 2, X.shape[1:])
    if np.any(c <= 0):
        raise ValueError("w1_0**2 + w2_0**2 must be > 0 in every coordinate")
    # unit scale (exact powers of two): the rows of (X, y) by 2**-ex, then y and c by 2**-ey
    _, ex = np.frexp(np.abs(X).max())
    top_y = np.abs(y).max() * 2.0 ** -ex
    ey = int(np.frexp(top_y)[1]) if top_y > 0 else 0          # y = 0: beta = 0, unscaled
    X, y = np.ldexp(X, -ex), np.ldexp(y, -ex - ey)
    c = np.ldexp(c, -ey)
    if not (np.all(np.isfinite(c)) and np.all(c > 0)):
        raise ValueError("w1_0**2 + w2_0**2 relative to the scale of X^+ y must stay within "
                         "the float range (the problem is at its lazy or rich limit)")
    ynorm = max(np.linalg.norm(y), 1e-300)

    def dual(lam):
        s = X.T @ lam
        with np.errstate(over="ignore"):
            return float(np.sum(2 * c * (np.cosh(s / 2) - 1)) - lam @ y)

    lam = np.zeros(X.shape[0])
    res = np.inf
    for _ in range(max_iter):
        s = X.T @ lam
        with np.errstate(over="ignore"):
            beta = c * np.sinh(s / 2)
        grad = X @ beta - y
        res = np.linalg.norm(grad) / ynorm
        if res <= tol:
            break
        H = (X * (c * np.cosh(s / 2) / 2)) @ X.T
        H += 1e-14 * np.trace(H) / len(H) * np.eye(len(H))
        step = np.linalg.solve(H, grad)
        f0, t = dual(lam), 1.0
        dec = grad @ step
        gnorm = np.linalg.norm(grad)
        # backtrack until the dual decreases enough (Armijo) or, close to the optimum where
        # the dual's decrease drowns in rounding, the residual shrinks
        floor = 1e-12
        while t > floor:
            new = lam - t * step
            with np.errstate(over="ignore", invalid="ignore"):
                rnew = np.linalg.norm(X @ (c * np.sinh(X.T @ new / 2)) - y)
            if dual(new) <= f0 - 0.25 * t * dec or rnew < gnorm:
                break
            t /= 2
            if t <= floor and floor == 1e-12:
                # small c (the rich limit, c ~ 1e-16 and below): far from the optimum the
                # Newton step moves cosh's argument by 1e4 or more, beyond any t >= 1e-12;
                # backtrack instead from the t that moves it by MAX_COSH_STEP
                reach = t * np.abs(X.T @ step).max() / 2
                if reach > _MAX_COSH_STEP:
                    t, floor = t * _MAX_COSH_STEP / reach, floor * _MAX_COSH_STEP / reach
        lam = lam - t * step
    beta = c * np.sinh(X.T @ lam / 2)
    return np.ldexp(beta, ey), float(np.linalg.norm(X @ beta - y) / ynorm)


@dataclass(frozen=True)
class L12Interpolant:
    r"""The minimum-:math:`\ell_{1,2}` interpolant of :func:`min_l12_interpolant` with its
    certificate of optimality.

    Attributes
    ----------
    B : ndarray ``(T, D)``
        The interpolant, one row per task.
    residual : float
        Largest relative residual :math:`\|X_tB_{:,t} - y_t\|/\|y_t\|` over the tasks.
    norm : float
        Its :math:`\ell_{1,2}` norm :math:`\sum_d\|B_{d,:}\|_2`.
    lower_bound : float
        A lower bound on the minimum from the solver's dual variables, made feasible
        (Lagrange duality; :func:`min_l12_interpolant`).
    gap : float
        The certified relative gap :math:`(\mathrm{norm} - \mathrm{lower\_bound})/\mathrm{norm}`:
        ``norm`` is within ``gap`` of the minimum, up to the interpolant's own ``residual``.
    status : str
        The solver's status (``"optimal"``, or ``"optimal_inaccurate"`` where it stopped
        at its reduced tolerances; ``gap`` says how far that is).
    """

    B: np.ndarray
    residual: float
    norm: float
    lower_bound: float
    gap: float
    status: str


#: Certified relative gap above which :func:`min_l12_interpolant` warns
#: (:class:`~transferkit.models.descent.ConvergenceWarning`).
L12_GAP_WARN = 1e-6


def min_l12_interpolant(Xs, ys, *, tol: float = 1e-9) -> L12Interpolant:
    r"""Minimum-:math:`\ell_{1,2}` interpolant of several tasks (paper 004, Eqs. 30 and 35),
    with a certified optimality gap.

    .. math:: \min_{B\in\mathbb R^{D\times T}}\ \sum_{d=1}^D \|B_{d,:}\|_2
              \quad\text{subject to}\quad X_t B_{:,t} = y_t,\ t = 1, \dots, T,

    the minimum-parameter-norm interpolant of a diagonal network whose first layer the
    :math:`T` tasks share (paper 004, App. B: at minimum :math:`\ell_2` parameter norm the
    network's task weights minimise the :math:`\ell_{1,2}` norm).  A second-order cone
    program, solved by CVXPY with the Clarabel interior-point solver (maintained packages,
    not a hand-written solver).  Its Lagrange dual is

    .. math:: \max_{\nu_1,\dots,\nu_T}\ \sum_t y_t^\top\nu_t \quad\text{subject to}\quad
              \big\|\big((X_1^\top\nu_1)_d, \dots, (X_T^\top\nu_T)_d\big)\big\|_2 \le 1
              \ \text{for every } d,

    so the solver's equality multipliers, divided by the largest of these norms where it
    exceeds 1, give a lower bound on the minimum whatever the solver's accuracy
    (``lower_bound``, ``gap``).  A gap above :data:`L12_GAP_WARN` is a
    :class:`~transferkit.models.descent.ConvergenceWarning`; CVXPY's own warning of an
    inaccurate solution is replaced by the gap.

    Parameters
    ----------
    Xs : sequence of T arrays ``(n_t, D)``
        The inputs of each task.
    ys : sequence of T arrays ``(n_t,)``
        The targets.
    tol : float
        Clarabel's relative feasibility and gap tolerances.

    Returns
    -------
    L12Interpolant
        The interpolant ``B`` ``(T, D)``, its residual, norm, dual lower bound, certified
        gap and the solver's status.

    References
    ----------
    Paper 004 (implicit regularisation of pretraining and fine-tuning, appendix), Eqs. 30
    and 35; the solver: Goulart and Chen, *Clarabel: an interior-point solver for conic
    programs with quadratic objectives* (2024); the dual: Boyd and Vandenberghe, *Convex
    Optimization* (2004), Sec. 5.1.
    """
    if len(Xs) != len(ys) or not len(Xs):
        raise ValueError(f"Xs and ys must list the same number (>= 1) of tasks "
                         f"(got {len(Xs)} and {len(ys)})")
    Xs = [np.asarray(x, float) for x in Xs]
    ys = [np.asarray(v, float) for v in ys]
    D = Xs[0].shape[1]
    for t, (x, v) in enumerate(zip(Xs, ys)):
        if x.ndim != 2 or x.shape[1] != D or v.shape != (x.shape[0],):
            raise ValueError(f"task {t}: Xs[{t}] must be (n, {D}) and ys[{t}] (n,) "
                             f"(got {x.shape} and {v.shape})")
        if not (np.isfinite(x).all() and np.isfinite(v).all()):
            raise ValueError(f"task {t}: Xs and ys must be finite")
    check_positive("tol", tol)
    # The solver's tolerances are absolute: far from unit scale it stops early (y / 1e5 gave
    # a gap of 2.5e-6) or fails (X * 1e10, y * 1e20).  Outside [2**-8, 2**8] the rows of each
    # task (X_t, y_t) are divided by a power of two (the constraints are unchanged), then
    # every y_t by a common 2**b, and B = 2**b B' (the norm is homogeneous).
    Xs, ys = list(Xs), list(ys)
    for t, x in enumerate(Xs):
        e = _off_unit_exponent(np.abs(x).max() if x.size else 0.0)
        Xs[t], ys[t] = np.ldexp(x, -e), np.ldexp(ys[t], -e)
    b = _off_unit_exponent(max(np.abs(v).max() if v.size else 0.0 for v in ys))
    ys = [np.ldexp(v, -b) for v in ys]
    B = cp.Variable((D, len(Xs)))
    cons = [x @ B[:, t] == v for t, (x, v) in enumerate(zip(Xs, ys))]
    prob = cp.Problem(cp.Minimize(cp.sum(cp.norm(B, 2, axis=1))), cons)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")  # gap below
        prob.solve(solver=cp.CLARABEL, tol_feas=tol, tol_gap_abs=tol, tol_gap_rel=tol)
    if B.value is None:
        raise ValueError(f"the interpolation constraints admit no solution ({prob.status})")
    sol = np.ascontiguousarray(B.value.T)
    res = max(np.linalg.norm(x @ b - v) / max(np.linalg.norm(v), 1e-300)
              for x, b, v in zip(Xs, sol, ys))
    norm = float(np.linalg.norm(sol, axis=0).sum())
    lower = max(_l12_dual_bound(Xs, ys, [sign * np.asarray(c.dual_value, float) for c in cons])
                for sign in (1.0, -1.0))        # whichever sign convention the solver uses
    gap = (norm - lower) / norm if norm > 0 else 0.0
    if gap > L12_GAP_WARN:
        warnings.warn(f"min_l12_interpolant: certified relative gap {gap:.1e} above "
                      f"{L12_GAP_WARN:g} (solver status {prob.status})", ConvergenceWarning,
                      stacklevel=2)
    return L12Interpolant(B=np.ldexp(sol, b), residual=float(res), norm=math.ldexp(norm, b),
                          lower_bound=math.ldexp(float(lower), b), gap=float(gap),
                          status=str(prob.status))


def _off_unit_exponent(top) -> int:
    """0 where ``top`` lies in [2**-8, 2**8] (or is 0), else the exponent ``e`` with
    ``top * 2**-e`` in [0.5, 1)."""
    if top == 0 or 2.0 ** -8 <= top <= 2.0 ** 8:
        return 0
    return int(np.frexp(top)[1])


def _l12_dual_bound(Xs, ys, nus) -> float:
    """The dual objective of :func:`min_l12_interpolant` at the multipliers ``nus`` scaled
    into the dual feasible set: a lower bound on the minimum (``-inf`` if they are not
    finite)."""
    if not all(np.all(np.isfinite(n)) for n in nus):
        return -math.inf
    G = np.stack([x.T @ n for x, n in zip(Xs, nus)], 1)          # (D, T)
    scale = max(1.0, float(np.linalg.norm(G, axis=1).max()))
    return float(sum(v @ n for v, n in zip(ys, nus)) / scale)
