r"""Two-layer ReLU networks, batched over a leading dimension, and their training.

One module for the four parametrisations the papers use:

* mean-field student-teacher with units on the sphere (paper 000, Sec. 4, App. C-D, Fig. 3):
  :class:`Teacher`, :func:`population_risk` (exact, through the ReLU kernel of Eq. 150),
  :func:`train_population`, :func:`train_samples`, :func:`readout_transfer_risk`;
* the init-scale protocol between lazy and rich (paper 000, App. E, Fig. 9):
  :func:`pretrain_init_scale`, :func:`scratch_init_scale`, :func:`readout_transfer`;
* small networks with free units (paper 003 Eq. 1, paper 004 App. E.2): :func:`teacher_pair`,
  :func:`forward`, :func:`train_units`;
* the NTK parametrisation of Du et al. used by paper 002 (Sec. 6): :func:`init_ntk`,
  :func:`train_ntk`.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from .._validate import (MAX_ENTRY, InputTypeError, check_array, check_bool, check_budget,
                         check_budget_among, check_choice, check_fraction, check_int,
                         check_positive, check_positive_or_inf, check_rows, check_values)
from ..streams import keyed_rng, unit_rows
from ..theory.relu import arccos_kernel_terms, relu_kernel, snap_cosines
from ._units_kernel import units_descent
from .descent import Descent, bold_driver, check_engine, keep_where, run_kernel
from .device import as_tensor, default_device

__all__ = ["check_earlier_stops", "InitScaleTeachers", "InitScaleResult", "draw_init_scale_teachers", "relu_features", "descend_init_scale", "pretrain_init_scale", "readout_transfer", "scratch_init_scale", "init_scale_targets", "check_init_scale_settings", "init_ntk", "train_ntk", "NTKTrainInfo", "MeanFieldInfo", "Teacher", "make_teachers", "ablate", "relu_kernel_torch", "population_risk", "population_risk_grad", "population_risk_tangent_grad", "sample_risk", "sample_loss_grad", "train_population", "train_samples", "GRAD_DTYPES", "check_grad_dtype", "readout_transfer_risk", "rkhs_norms", "feature_gram", "tile_teacher", "repeat_teacher", "random_sphere", "teacher_pair", "forward", "train_units", "train_units_mtl", "mtl_loss_and_grads", "hidden_representation", "loss_and_grads"]


TEACHER_STREAM, INIT_STREAM, DATA_STREAM, SCRATCH_STREAM, TEST_STREAM = 10, 11, 12, 13, 14


# ---------------------------------------------------------------------------
# the network and its teachers (paper 000, Sec. 4, Eqs. 16-17)
# ---------------------------------------------------------------------------
#
# The arc-cosine kernel, the exact population risk and its gradient, the teachers and the
# ablated sources, and the out-of-span norm live in :mod:`transferkit.models.relu` (Fig. 3);
# this module adds the init-scale protocol of the sweep.

def relu_features(W, X) -> torch.Tensor:
    r"""Hidden features :math:`\sigma(X W^\top)`, ``(B, n, m)``."""
    return torch.relu(X @ W.transpose(-1, -2))


@dataclass
class InitScaleTeachers:
    """Target and source teachers, one per draw: neurons ``V`` and readouts ``b_t, b_s``."""

    V: torch.Tensor       # (B, m_*, d) unit neurons
    b_t: torch.Tensor     # (B, m_*) target readout c_*/m_*  (||f_t||_{L2} = 1)
    b_s: torch.Tensor     # (B, m_*) source readout: c_*/((1-mu) m_*) on the kept neurons, else 0
    keep: torch.Tensor    # (B, m_*) bool, the source neurons (complement of the ablated set A)


def draw_init_scale_teachers(d, m_star, mu, draws, seed=0, device=None, dtype=torch.float64) -> InitScaleTeachers:
    r"""Teachers of paper 000, Eqs. 16-17.

    :math:`f_t = \frac1{m_*}\sum_{i=1}^{m_*}c^*_i\sigma(w_i^{*\top}x)`,
    :math:`f_s = \frac1{(1-\mu)m_*}\sum_{i\in\mathcal A^c}c^*_i\sigma(w_i^{*\top}x)` with
    :math:`|\mathcal A| = \mu m_*` ablated neurons.  :math:`w^*_i` uniform on the sphere,
    :math:`c^*_i\sim\mathcal N(0,1)` rescaled so that :math:`\|f_t\|_{L_2} = 1` (the paper
    does not state the law of :math:`c^*`; it normalises risks by the target variance).
    """
    d = check_int("d", d, 1)
    m_star = check_int("m_star", m_star, 1)
    draws = check_int("draws", draws, 1)
    mu_v = float(check_values("mu", mu, 0.0))
    if not mu_v < 1:
        raise ValueError(f"mu must be in [0, 1) (got {mu!r})")
    targets, sources, keeps = [], [], []
    for b in range(draws):  # one generator per draw: draws are independent of their number
        rng = keyed_rng(seed, b, TEACHER_STREAM)
        target = make_teachers(1, m_star, d, rng)
        source, keep = ablate(target, mu, rng)
        targets.append(target)
        sources.append(source.a)
        keeps.append(keep)
    W = np.concatenate([t.W for t in targets])
    a_t = np.concatenate([t.a for t in targets])
    norm = np.sqrt(teacher_norm(Teacher(W, a_t)))[:, None]   # ||f_t||_{L2}
    device = device or default_device()
    V = as_tensor(W, device, dtype)
    b_t = as_tensor(a_t / norm, device, dtype)
    b_s = as_tensor(np.concatenate(sources) / norm, device, dtype)
    keep = torch.as_tensor(np.concatenate(keeps), device=device)
    return InitScaleTeachers(V, b_t, b_s, keep)


def init_scale_targets(teachers: InitScaleTeachers, n, sigma=0.0, seed=0):
    r""":math:`n` target samples per draw: ``X (B, n, d)`` and ``y = f_t(X) + sigma eps``."""
    n = check_int("n", n, 1)
    check_positive("sigma", sigma, allow_zero=True)
    B, _, d = teachers.V.shape
    Xs, es = [], []
    for b in range(B):
        rng = keyed_rng(seed, b, DATA_STREAM, n)
        Xs.append(rng.standard_normal((n, d)))
        es.append(rng.standard_normal(n))
    X = as_tensor(np.stack(Xs), teachers.V.device, teachers.V.dtype)
    eps = as_tensor(np.stack(es), teachers.V.device, teachers.V.dtype)
    y = (relu_features(teachers.V, X) @ teachers.b_t[..., None])[..., 0] + sigma * eps
    return X, y


# ---------------------------------------------------------------------------
# training: full-batch gradient descent with a per-instance stable step
# ---------------------------------------------------------------------------

@dataclass
class InitScaleResult:
    W: torch.Tensor
    c: torch.Tensor
    loss: np.ndarray
    steps: np.ndarray
    converged: np.ndarray
    stalled: np.ndarray


def check_init_scale_settings(loss_tol, max_steps, stall_tol) -> tuple[float, int, float]:
    """The stopping settings of :func:`descend_init_scale` (and of the trainers built on it,
    :func:`pretrain_init_scale` and :func:`scratch_init_scale`), checked: ``loss_tol`` > 0,
    ``max_steps`` an integer >= 0, ``stall_tol`` >= 0; returned as ``(float, int, float)``.
    Experiments call it before any work, so that bad settings fail before the first cell."""
    return (check_positive("loss_tol", loss_tol), check_int("max_steps", max_steps, 0),
            check_positive("stall_tol", stall_tol, allow_zero=True))


def descend_init_scale(loss_fn, W, c, *, loss_tol=1e-6, max_steps=20_000, stall_tol=1e-4,
                     window=200, step0=1.0, grow=1.2, progress=None,
                     desc="training") -> InitScaleResult:
    r"""Full-batch gradient descent on ``(W, c)`` with a per-instance adaptive step.

    ``loss_fn(W, c)`` returns the loss of every batch element, ``(B,)``.  Each instance
    keeps its own step :math:`\eta_b`: a step is accepted when it lowers the loss, and
    then :math:`\eta_b` grows by ``grow``; otherwise it is rejected and :math:`\eta_b` is
    halved.  The step thus tracks the largest stable step (about :math:`2/\lambda_{\max}`
    of the local curvature; the "bold driver" rule), which one fixed learning rate cannot
    do across a sweep of initialisation scales.  An instance stops when its loss is at most
    ``loss_tol`` (``converged``), when its loss fell by less than a fraction ``stall_tol``
    over the last ``window`` steps (``stalled``: a stationary point or a plateau, e.g. a
    random-features model that cannot represent the target), or after ``max_steps``.
    """
    loss_tol, max_steps, stall_tol = check_init_scale_settings(loss_tol, max_steps, stall_tol)
    window = check_int("window", window, 1)
    step0 = check_positive("step0", step0)
    if check_positive("grow", grow) < 1:
        raise ValueError(f"grow must be a number >= 1 (got {grow!r})")
    W = W.detach().clone()
    c = c.detach().clone()
    B = W.shape[0]
    eta = torch.full((B,), float(step0), dtype=W.dtype, device=W.device)
    rule = Descent(B, tol=loss_tol, max_steps=max_steps, device=W.device, desc=desc,
                   progress=progress, hint="the initial loss or a step is not finite")

    def value_and_grad(W, c):
        Wg, cg = W.detach().requires_grad_(True), c.detach().requires_grad_(True)
        val = loss_fn(Wg, cg)
        gW, gc = torch.autograd.grad(val.sum(), (Wg, cg))
        return val.detach(), gW, gc

    loss, gW, gc = value_and_grad(W, c)
    stalled = torch.zeros(B, dtype=torch.bool, device=W.device)
    mark = loss.clone()
    while True:
        if rule.stop(loss):          # loss <= loss_tol, or the budget is spent
            break
        active = rule.active
        e = rule.masked(eta)
        W_new = W - e[:, None, None] * gW
        c_new = c - e[:, None] * gc
        new, gWn, gcn = value_and_grad(W_new, c_new)
        ok = active & torch.isfinite(new) & (new < loss)
        W, c = keep_where(ok, W_new, W), keep_where(ok, c_new, c)
        gW, gc = keep_where(ok, gWn, gW), keep_where(ok, gcn, gc)
        loss = torch.where(ok, new, loss)
        eta = bold_driver(eta, ok, active, grow)
        rule.advance()
        if rule.t % window == 0:
            stall = active & (mark - loss <= stall_tol * mark)
            stalled |= stall
            rule.retire(stall)
            mark = loss.clone()
    info = rule.finish(loss, warn=False)
    return InitScaleResult(W, c, info.excess_loss, info.steps, info.converged,
                           (stalled.cpu().numpy() & ~info.converged))


def check_alphas(alphas) -> np.ndarray:
    """The init scales as a 1-d float array; ``ValueError`` unless all are finite and > 0."""
    try:
        out = np.atleast_1d(check_values("alphas", alphas, 0.0, lo_open=True))
    except ValueError as e:          # an InputTypeError (a string) stays one
        raise type(e)(f"alphas must be finite numbers > 0 (got {alphas!r})") from None
    if out.ndim != 1 or out.size == 0:
        raise ValueError(f"alphas must be finite numbers > 0 (got {alphas!r})")
    return out


def _init_scale_weights(d, m, draws, seed, purpose, scale, device, dtype):
    W = np.stack([random_sphere((m, d), keyed_rng(seed, b, purpose)) for b in range(draws)])
    W = as_tensor(scale * W, device, dtype)
    return W, torch.zeros(W.shape[:2], dtype=dtype, device=device)


def pretrain_init_scale(teachers: InitScaleTeachers, m, alphas, seed=0, loss_tol=1e-6, max_steps=20_000,
             stall_tol=1e-4, progress=None) -> tuple[InitScaleResult, torch.Tensor]:
    r"""Pretrain on the population source loss :math:`\frac12\mathbb E(f - f_s)^2`, all ``alphas`` at once.

    Initialisation: :math:`w_i(0) = \alpha\hat w_i`, :math:`\hat w_i` uniform on the unit
    sphere (the same :math:`\hat w` for every ``alpha``), :math:`c_i(0) = 0`.  The loss is
    exact (:func:`transferkit.models.relu.population_risk`) and normalised by
    :math:`\frac12\|f_s\|^2`, so ``loss_tol`` is relative.  The batch is
    ``(len(alphas) * draws)``, alpha-major.  Returns the result and the initial first layers ``(len(alphas) * draws, m, d)``.
    """
    m = check_int("m", m, 1)
    alphas = check_alphas(alphas)
    T = teachers
    D, _, d = T.V.shape
    A = len(alphas)
    W_hat, c0 = _init_scale_weights(d, m, D, seed, INIT_STREAM, 1.0, T.V.device, T.V.dtype)
    scale = as_tensor(np.repeat(alphas, D), T.V.device, T.V.dtype)
    W0 = scale[:, None, None] * W_hat.repeat(A, 1, 1)
    c0 = c0.repeat(A, 1)
    V, b_s = T.V.repeat(A, 1, 1), T.b_s.repeat(A, 1)
    norm2 = population_risk(torch.zeros_like(W0[:, :1]), c0[:, :1], V, b_s)   # ||f_s||^2

    def loss(W, c):
        return population_risk(W, c / m, V, b_s, cross_t=norm2) / norm2

    res = descend_init_scale(loss, W0, c0, loss_tol=loss_tol, max_steps=max_steps,
                           stall_tol=stall_tol, progress=progress, desc="pretraining")
    return res, W0


def readout_transfer(W, X, y, rcond=1e-3) -> torch.Tensor:
    r"""Linear transfer: minimum-norm least squares on the frozen features (paper 000, Eq. 9).

    Returns the effective readout :math:`a = \sigma(XW^\top)^+ y`, ``(B, m)``: the limit
    of gradient flow on the readout from zero.  Singular values of the feature matrix
    below ``rcond`` times the largest are dropped, as the rank cutoff of the deep linear
    features (:func:`~transferkit.models.deep_linear.feature_subspace`, ``rcond = 1e-3``): rich
    pretraining makes many neurons (nearly) parallel, and without a cutoff the
    pseudo-inverse would amplify those directions.  Predictions do not depend on the scale
    of :math:`W` (ReLU is positively homogeneous).
    """
    Phi = relu_features(W, X)
    return (torch.linalg.pinv(Phi, rtol=rcond) @ y[..., None])[..., 0]


def scratch_init_scale(X, y, m, seed=0, loss_tol=1e-6, max_steps=20_000, stall_tol=1e-4,
            progress=None) -> InitScaleResult:
    r"""The same network trained on the target sample from the paper's initialisation.

    :math:`w_i(0)` uniform on the unit sphere, :math:`c_i(0) = 0` (paper 000, App. D.2:
    output weights :math:`10^{-7}`); empirical loss :math:`\frac1{2n}\sum(f(x_i)-y_i)^2`,
    ``loss_tol`` relative to :math:`\frac1{2n}\|y\|^2`.
    """
    m = check_int("m", m, 1)
    B, n, d = X.shape
    W0, c0 = _init_scale_weights(d, m, B, seed, SCRATCH_STREAM, 1.0, X.device, X.dtype)
    scale = 0.5 * y.pow(2).mean(1)

    def loss(W, c):
        f = relu_features(W, X) @ (c / m)[..., None]
        return 0.5 * (f[..., 0] - y).pow(2).mean(1) / scale

    return descend_init_scale(loss, W0, c0, loss_tol=loss_tol, max_steps=max_steps,
                            stall_tol=stall_tol, progress=progress, desc=f"scratch n={n}")


# ---------------------------------------------------------------------- simulation

def init_ntk(d: int, m: int, kappa: float, seeds, symmetric: bool = True,
                   device=None):
    r"""Initial weights :math:`W(0)`, shape ``(S, d, m)`` (one per seed), and readouts :math:`a` ``(S, m)``.

    :math:`w_r(0)\sim\mathcal N(0,\kappa^2 I)`, :math:`a_r = \pm1` (paper 002, Sec. 6.1), float64,
    drawn on the CPU with ``numpy.random.default_rng([seed, 7])`` and moved to ``device``.
    ``symmetric=True`` pairs the units (the second half copies the first half's :math:`w_r`
    with :math:`a_r` of opposite sign), so that :math:`f_{W(0)} = 0` exactly: this removes the
    :math:`O(\kappa)` output at initialisation, the source of Eq. 2's :math:`O(\kappa^{1/2})` term,
    without changing :math:`H^\infty`.  ``symmetric=False`` draws :math:`a_r` uniformly as the paper.
    """
    d, m = check_int("d", d, 1), check_int("m", m, 2)
    kappa = check_positive("kappa", kappa)
    seeds = [check_int("seed", s, 0) for s in np.atleast_1d(seeds).tolist()]
    if symmetric and m % 2:
        raise ValueError(f"m must be even with symmetric=True (got {m})")
    # the weights (d x m) and readouts of every seed, and their stacked copies
    check_budget_among(lambda d, m, seeds: 16 * seeds * (d + 1) * m,
                       dict(d=d, m=m, seeds=len(seeds)), dict(d=1, m=2, seeds=1))
    Ws, As = [], []
    for s in seeds:
        g = np.random.default_rng([s, 7])
        if symmetric:
            w = g.standard_normal((d, m // 2)) * kappa
            Ws.append(np.concatenate([w, w], axis=1))
            As.append(np.r_[np.ones(m // 2), -np.ones(m // 2)])
        else:
            Ws.append(g.standard_normal((d, m)) * kappa)
            As.append(g.choice([-1.0, 1.0], size=m))
    dev = device or default_device()
    W = torch.tensor(np.stack(Ws), dtype=torch.float64, device=dev)
    A = torch.tensor(np.stack(As), dtype=torch.float64, device=dev)
    return W, A


#: The negative double nearest zero: ``x > _BELOW_ZERO`` is ``x >= 0`` for every double
#: (``-0.0`` included), the ReLU derivative convention :math:`\mathbf 1\{w\cdot x\ge 0\}` of
#: paper 002 (Eq. 4) as a threshold of ``aten.threshold_backward``.  It is subnormal: with
#: ``torch.set_flush_denormal(True)`` it reads as 0, and a unit with ``w.x = 0`` exactly
#: (a measure-zero event for continuous inputs) would get no gradient from that input.
_BELOW_ZERO = -math.ulp(0.0)


def _ntk_forward(W, A, X):
    """Outputs ``(S, n)`` and activation pattern ``(S, n, m)`` of the network."""
    pre = X @ W                                   # (S, n, m)
    out = torch.relu(pre).mul_(A[:, None, :]).sum(-1) / math.sqrt(W.shape[-1])
    return out, pre


@dataclass
class NTKTrainInfo:
    r"""Diagnostics of :func:`train_ntk`, per draw ``(S,)`` unless stated.

    Attributes
    ----------
    steps : int
        Steps taken (all draws step together).
    converged : ndarray of bool
        :math:`\|u - y\| \le \mathrm{tol}\,\|y\|` at the end.
    residual : ndarray
        :math:`\|u - y\|` at the end.
    flips : ndarray
        Fraction of activation signs :math:`\mathbb I\{w_r^\top x_i\ge0\}` that changed (the
        lazy regime of the theory needs it small).
    outputs0 : ndarray, shape (S, n)
        Outputs at the start.
    path_steps : ndarray of int, shape (K,)
        Steps at which the path was recorded.
    path : ndarray, shape (S, K)
        :math:`\|W_k - W_{\rm start}\|_F` at those steps.
    """

    steps: int
    converged: np.ndarray
    residual: np.ndarray
    flips: np.ndarray
    outputs0: np.ndarray
    path_steps: np.ndarray
    path: np.ndarray


def _checked_ntk(W, A, X, y):
    """The shapes of :func:`train_ntk` (``W (S, d, m)``, ``A (S, m)``, ``X (n, d)``,
    ``y (n,)`` or one target per draw ``(S, n)``, tensors) and finite entries of magnitude
    at most ``MAX_ENTRY`` (1e100), checked before any step."""
    for arg, T in (("W", W), ("A", A), ("X", X), ("y", y)):
        if not isinstance(T, torch.Tensor):
            raise InputTypeError(f"{arg} must be a torch tensor (got {type(T).__name__})")
    if W.ndim != 3 or tuple(A.shape) != (W.shape[0], W.shape[2]) or X.ndim != 2 \
            or X.shape[1] != W.shape[1] or tuple(y.shape) not in ((X.shape[0],),
                                                                  (W.shape[0], X.shape[0])):
        raise ValueError(f"W must be (S, d, m), A (S, m), X (n, d) and y (n,) or (S, n) with the "
                         f"same S, d, m and n (got W {tuple(W.shape)}, A {tuple(A.shape)}, X "
                         f"{tuple(X.shape)}, y {tuple(y.shape)})")
    for arg, T in (("W", W), ("A", A), ("X", X), ("y", y)):
        if not bool(torch.isfinite(T).all()):
            raise ValueError(f"{arg} must be finite (got non-finite entries)")
        # products of entries and squared residual norms stay in the float range (targets
        # of 1e200 overflowed the residual's norm, and the divergence blamed eta)
        top = float(T.abs().max()) if T.numel() else 0.0
        if top > MAX_ENTRY:
            raise ValueError(f"{arg} must have entries of magnitude <= {MAX_ENTRY:g} (got {top!r})")


def train_ntk(W, A, X, y, *, eta: float, tol: float = 1e-6, max_steps: int = 20_000,
                    record_every: int = 1):
    r"""Full-batch gradient descent on :math:`L = \frac12\|y - f(X)\|^2` from ``W`` (not modified).

    ``W`` ``(S, d, m)``, ``A`` ``(S, m)`` as from :func:`init_ntk`; ``X`` ``(n, d)``
    and ``y`` ``(n,)`` (or one target per draw, ``(S, n)``) tensors.  The update is paper 002's Eq. 4,
    :math:`\mathrm{vec}\,W \leftarrow \mathrm{vec}\,W - \eta Z(u - y)`.  It stops when every draw
    has :math:`\|u - y\| \le \mathrm{tol}\,\|y\|` (or after ``max_steps``).

    Returns ``(W_end, info)``, ``info`` a :class:`NTKTrainInfo` (the path is recorded
    every ``record_every`` steps).
    """
    eta = check_positive("eta", eta)
    tol = check_positive("tol", tol)
    max_steps = check_int("max_steps", max_steps, 1)
    record_every = check_int("record_every", record_every, 1)
    _checked_ntk(W, A, X, y)
    W0 = W
    W = W.clone()
    m = W.shape[-1]
    target = tol * torch.linalg.vector_norm(y)
    # every draw keeps the fixed step until all are at tolerance (Eq. 4 for all draws alike)
    rule = Descent(W.shape[0], tol=target, max_steps=max_steps, device=W.device,
                   desc="NTK gradient descent", per_instance=False,
                   hint=f"eta = {eta} is too large for this problem")
    path_steps, path = [0], [torch.zeros(W.shape[0], dtype=W.dtype, device=W.device)]
    out, pre = _ntk_forward(W, A, X)
    outputs0 = out.clone()
    a_m = A[:, None, :] / math.sqrt(m)                         # (S, 1, m), a_r / sqrt(m)
    Xt = X.T.contiguous()   # X^T laid out as rows: the product below twice as fast, same bits
    while True:
        res = out - y                                          # (S, n)
        rn = torch.linalg.vector_norm(res, dim=-1)
        if rule.stop(rn):
            break
        # dL/dw_r = (1/sqrt m) a_r sum_i (u_i - y_i) 1{w_r.x_i >= 0} x_i: the products
        # (u_i - y_i) a_r / sqrt(m), kept where w_r.x_i >= 0 by ReLU's backward kernel (it
        # keeps what lies above its threshold, here the negative double nearest zero): one
        # pass instead of a mask, its conversion and two products, the same bits (tested)
        grad = Xt @ torch.ops.aten.threshold_backward(res[:, :, None] * a_m, pre,
                                                      _BELOW_ZERO)     # (S, d, m)
        W -= eta * grad
        rule.advance()
        steps = rule.t
        out, pre = _ntk_forward(W, A, X)
        if steps % record_every == 0:
            path_steps.append(steps)
            path.append(torch.linalg.vector_norm(W - W0, dim=(-2, -1)))
    steps = rule.t
    if path_steps[-1] != steps:
        path_steps.append(steps)
        path.append(torch.linalg.vector_norm(W - W0, dim=(-2, -1)))
    flips = ((X @ W0 >= 0) != (pre >= 0)).to(W.dtype).mean(dim=(-2, -1))
    info = NTKTrainInfo(steps=steps, converged=rule.finish(rn, warn=False).converged,
                        residual=rn.cpu().numpy(), flips=flips.cpu().numpy(),
                        outputs0=outputs0.cpu().numpy(), path_steps=np.array(path_steps),
                        path=torch.stack(path, dim=-1).cpu().numpy())
    return W, info


TWO_PI = 2 * math.pi


# ---------------------------------------------------------------------------
# teachers
# ---------------------------------------------------------------------------

@dataclass
class Teacher:
    """Batched teachers :math:`f(x) = \\sum_i a_i\\,\\sigma(w_i\\cdot x)`: ``W (S, k, d)``, ``a (S, k)``."""
    W: np.ndarray
    a: np.ndarray


def random_sphere(shape, rng) -> np.ndarray:
    """Rows uniform on the unit sphere, ``shape = (..., d)`` (within the memory budget)."""
    shape = tuple(check_int("shape", k, 0) for k in np.atleast_1d(shape).tolist())
    check_budget("shape", shape, 16 * math.prod(shape))
    Z = rng.standard_normal(shape)
    return Z / np.linalg.norm(Z, axis=-1, keepdims=True)


def make_teachers(seeds: int, m_star: int, d: int, rng) -> Teacher:
    r"""``seeds`` target teachers (paper 000, Eq. 17): :math:`m_*` units uniform on
    :math:`\mathbb S^{d-1}`, output weights :math:`c_i^*\sim\mathcal N(0, 1)` (our choice: the paper
    does not state their law), effective weights :math:`a^* = c^*/m_*`."""
    seeds = check_int("seeds", seeds, 1)
    m_star = check_int("m_star", m_star, 1)
    d = check_int("d", d, 1)
    W = random_sphere((seeds, m_star, d), rng)
    c = rng.standard_normal((seeds, m_star))
    return Teacher(W, c / m_star)


def ablate(target: Teacher, mu: float, rng) -> tuple[Teacher, np.ndarray]:
    r"""Source teacher of paper 000, Eq. 16: a uniformly random set :math:`\mathcal A` of
    :math:`\mu m_*` units (rounded to the nearest integer) gets output weight 0 and the others are
    rescaled by :math:`m_*/|\mathcal A^c|` (i.e. :math:`1/(1-\mu)`). Returns the source (same units,
    ablated weights) and the boolean mask of kept units ``(S, m_*)``."""
    mu = float(mu)
    if not (np.isfinite(mu) and 0.0 <= mu < 1.0):
        raise ValueError(f"mu must be in [0, 1) (got {mu!r})")
    S, m_star = target.a.shape
    n_abl = int(round(mu * m_star))
    if n_abl >= m_star:
        raise ValueError(f"mu must leave at least one source neuron (mu m* = {n_abl} of "
                         f"{m_star})")
    keep = np.ones((S, m_star), dtype=bool)
    for s in range(S):
        keep[s, rng.choice(m_star, size=n_abl, replace=False)] = False
    a = np.where(keep, target.a * m_star / (m_star - n_abl), 0.0)
    return Teacher(target.W.copy(), a), keep


def tile_teacher(t: Teacher, reps: int) -> Teacher:
    """``reps`` copies of a batch of teachers, the whole batch after itself
    (``np.tile`` on the seed axis: index ``r * S + s``)."""
    return Teacher(np.tile(t.W, (reps, 1, 1)), np.tile(t.a, (reps, 1)))


def repeat_teacher(t: Teacher, reps: int) -> Teacher:
    """Each teacher of a batch ``reps`` times in a row (``np.repeat`` on the seed axis:
    index ``s * reps + r``)."""
    return Teacher(np.repeat(t.W, reps, axis=0), np.repeat(t.a, reps, axis=0))


# ---------------------------------------------------------------------------
# closed-form population risk and its gradient (torch, batched)
# ---------------------------------------------------------------------------

def _kernel_parts(W, V):
    r"""The ReLU kernel of rows and the two factors of its gradient (torch, batched).

    Returns ``K (..., N, M)``, ``S = sin t / 2pi``, ``Q = (pi - t) / 2pi`` and the row
    norms ``nw (..., N)``, ``nv (..., M)``, so that

    :math:`\nabla_w K(w_i, v_j) = \|v_j\| S_{ij}\,\hat w_i + Q_{ij}\,v_j .`

    Cosines are clipped to :math:`[-1, 1]` and those within :math:`10^{-15}` of :math:`\pm1` rounded to
    :math:`\pm1` (exact limits at parallel and antiparallel rows, as
    :func:`transferkit.theory.relu.relu_kernel`); a zero row has cosine 0 and a zero row of
    ``K``.
    """
    nw = W.norm(dim=-1)
    nv = V.norm(dim=-1)
    denom = (nw[..., :, None] * nv[..., None, :])
    dots = W @ V.transpose(-1, -2)
    u = snap_cosines(torch.where(denom > 0,
                                 dots / torch.where(denom > 0, denom, torch.ones_like(denom)),
                                 torch.zeros_like(dots)), xp=torch)  # exact at (anti)parallel
    t, s, j1 = arccos_kernel_terms(u, xp=torch)    # the formula of theory.relu, in torch
    K = denom * j1 / TWO_PI
    return K, s / TWO_PI, (math.pi - t) / TWO_PI, nw, nv


def _unit(W, nw):
    """Rows divided by their norms ``nw``; a zero row stays zero."""
    return W / nw.clamp(min=1e-300)[..., None]


class _ReluKernel(torch.autograd.Function):
    """:func:`relu_kernel_torch` with the analytic backward pass (finite everywhere)."""

    @staticmethod
    def forward(ctx, W, V):
        K, S, Q, nw, nv = _kernel_parts(W, V)
        ctx.save_for_backward(W, V, S, Q, nw, nv)
        return K

    @staticmethod
    def backward(ctx, G):
        W, V, S, Q, nw, nv = ctx.saved_tensors
        GS, GQ = G * S, G * Q
        gW = gV = None
        if ctx.needs_input_grad[0]:
            gW = (GS @ nv[..., :, None]) * _unit(W, nw) + GQ @ V
        if ctx.needs_input_grad[1]:
            GSt, GQt = GS.transpose(-1, -2), GQ.transpose(-1, -2)
            gV = (GSt @ nw[..., :, None]) * _unit(V, nv) + GQt @ W
        return gW, gV


def relu_kernel_torch(W: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    r"""Population Gram matrix of ReLU units, differentiable, torch ``(..., N, M)``:

    :math:`K_{ij} = E_{x\sim\mathcal N(0, I_d)}[\sigma(w_i\cdot x)\sigma(v_j\cdot x)] = \frac{\|w_i\|\|v_j\|}{2\pi}\big(\sin t_{ij} + (\pi - t_{ij})\cos t_{ij}\big)`

    (paper 000, Eq. 150).  One kernel: the forward pass is the formula of
    :func:`transferkit.theory.relu.relu_kernel` itself (:func:`transferkit.theory.relu.snap_cosines`
    and :func:`transferkit.theory.relu.arccos_kernel_terms`, evaluated in torch). The
    backward pass is the analytic gradient
    :math:`\nabla_w K(w, v) = \frac{\|v\|\sin t}{2\pi}\hat w + \frac{\pi - t}{2\pi}v`, finite
    also at parallel rows (:math:`t = 0`), where autograd through ``arccos`` would give NaN; at
    a zero row it takes :math:`\hat w = 0`.
    """
    return _ReluKernel.apply(W, V)


def _quad(x, K, y):
    return torch.einsum("si,sij,sj->s", x, K, y)


def population_risk(W, a, Wt, at, cross_t=None):
    r"""Exact population risk :math:`E_{x\sim\mathcal N(0,I)}(f(x) - f_*(x))^2` of
    :math:`f = \sum_i a_i\sigma(w_i\cdot x)` against :math:`f_* = \sum_j a^*_j\sigma(w^*_j\cdot x)`
    (paper 000, Eqs. 149-150),

    :math:`\mathcal R = a^\top K(W, W)\,a - 2a^\top K(W, W_*)\,a_* + a_*^\top K(W_*, W_*)\,a_*,`

    batched torch tensors ``W (S, m, d)``, ``a (S, m)``, ``Wt (S, k, d)``, ``at (S, k)``;
    returns ``(S,)``, clipped at 0 (it is :math:`\ge 0` up to rounding). ``cross_t`` is the last
    term when already known. Differentiable in all four arguments
    (:func:`relu_kernel_torch`); :func:`population_risk_grad` gives the same gradient in
    closed form."""
    if cross_t is None:
        cross_t = _teacher_norm(Wt, at)
    risk = (_quad(a, relu_kernel_torch(W, W), a) - 2 * _quad(a, relu_kernel_torch(W, Wt), at)
            + cross_t)
    return risk.clamp(min=0.0)


def _teacher_norm(Wt, at):
    return _quad(at, relu_kernel_torch(Wt, Wt), at)


def population_risk_grad(W, a, Wt, at, cross_t=None):
    r"""Population risk ``(S,)`` and its Euclidean gradients w.r.t. ``a`` and ``W``:

    :math:`\partial_{a}\mathcal R = 2(K_{WW}a - K_{WW_*}a_*),\qquad \nabla_{w_i}\mathcal R = 2a_i\Big[\sum_j a_j\nabla_w K(w_i, w_j) - \sum_j a^*_j\nabla_w K(w_i, w^*_j)\Big]`

    with :math:`\nabla_w K(w, v) = \frac{\|v\|\sin t}{2\pi}\hat w + \frac{\pi - t}{2\pi}v`."""
    if cross_t is None:
        cross_t = _teacher_norm(Wt, at)
    Kww, Sww, Qww, nw, _ = _kernel_parts(W, W)
    Kwt, Swt, Qwt, _, nt = _kernel_parts(W, Wt)
    Ka = torch.einsum("sij,sj->si", Kww, a)
    Kt = torch.einsum("sij,sj->si", Kwt, at)
    risk = torch.einsum("si,si->s", a, Ka) - 2 * torch.einsum("si,si->s", a, Kt) + cross_t
    ga = 2 * (Ka - Kt)
    what = _unit(W, nw)
    radial = (torch.einsum("sij,sj->si", Sww, nw * a)
              - torch.einsum("sij,sj->si", Swt, nt * at))
    lin = (Qww * a[:, None, :]) @ W - (Qwt * at[:, None, :]) @ Wt
    gW = 2 * a[..., None] * (radial[..., None] * what + lin)
    return risk, ga, gW


def _sphere_parts(W, V):
    r"""``K`` and ``Q = (pi - t) / 2pi`` of :func:`_kernel_parts` for rows of unit norm
    (no norms, no division: :math:`\cos t = w\cdot v`), in place where possible."""
    u = (W @ V.transpose(-1, -2)).clamp_(-1.0, 1.0)
    Q = torch.arccos(u).neg_().add_(math.pi).div_(TWO_PI)
    K = (1.0 - u * u).clamp_(min=0.0).sqrt_().div_(TWO_PI).addcmul_(Q, u).clamp_(min=0.0)
    return K, Q


def population_risk_tangent_grad(W, a, Wt, at, cross_t=None):
    r""":func:`population_risk_grad` for units on the sphere, with the ``W`` gradient
    projected on the tangent space of the sphere at each row (what Riemannian gradient
    descent uses). Rows of ``W`` and ``Wt`` must have unit norm (not checked here:
    :func:`train_population` checks the teacher and keeps ``W`` on the sphere).

    The radial term :math:`\|v\|\frac{\sin t}{2\pi}\hat w` of :math:`\nabla_w K` is
    parallel to :math:`w` and vanishes under the projection
    :math:`g\mapsto g - (g\cdot w)w`, so only :math:`K` and
    :math:`Q = \frac{\pi-t}{2\pi}` are needed: about half the work of the general form.
    """
    if cross_t is None:
        cross_t = _teacher_norm(Wt, at)
    Ka, lin = _student_terms(W, a)
    Kwt, Qwt = _sphere_parts(W, Wt)
    Kt = torch.einsum("sij,sj->si", Kwt, at)
    risk = torch.einsum("si,si->s", a, Ka) - 2 * torch.einsum("si,si->s", a, Kt) + cross_t
    ga = 2 * (Ka - Kt)
    lin -= Qwt.mul_(at[:, None, :]) @ Wt
    gW = 2 * a[..., None] * lin
    return risk, ga, _tangent(W, gW)


#: :func:`_student_terms` works on blocks of this many units: a pair of blocks' kernel
#: (128 x 128 per seed) stays in cache, where the whole m x m kernel (8 MB per seed at the
#: paper's m = 1000) is written to fresh memory at every step.  The blocks do not depend on
#: the number of seeds, so a seed's numbers do not either.
_UNIT_BLOCK = 128


def _student_terms(W, a):
    r""":math:`K(W, W)\,a` ``(S, m)`` and :math:`(Q(W, W)\odot a^\top)\,W` ``(S, m, d)`` of
    :func:`population_risk_tangent_grad` for unit rows ``W``, by blocks of ``_UNIT_BLOCK``
    rows: :math:`K` and :math:`Q` are symmetric, so each pair of blocks is evaluated once
    and used for both (half the cosines, arc-cosines and square roots of the whole
    matrix); the same numbers up to rounding (tested)."""
    S, m, d = W.shape
    Ka = W.new_zeros(S, m, 1)
    lin = W.new_zeros(S, m, d)
    ac = a[..., None]
    for i in range(0, m, _UNIT_BLOCK):
        I = slice(i, min(i + _UNIT_BLOCK, m))
        for j in range(i, m, _UNIT_BLOCK):                # each pair of blocks once
            J = slice(j, min(j + _UNIT_BLOCK, m))
            K, Q = _sphere_parts(W[:, I], W[:, J])
            Ka[:, I] += torch.bmm(K, ac[:, J])
            lin[:, I] += torch.bmm(Q * a[:, None, J], W[:, J])
            if j != i:
                Ka[:, J] += torch.bmm(K.transpose(1, 2), ac[:, I])
                lin[:, J] += torch.bmm(Q.transpose(1, 2).mul_(a[:, None, I]), W[:, I])
    return Ka[..., 0], lin


#: :func:`sample_loss_grad` works on blocks of samples of at most this many hidden
#: activations per seed (samples x units, 1 MB in float64): the blocks stay in cache and
#: their buffers are reused, where the activations of all samples at once (200 MB at the
#: paper's n = 6400, m = 1000 and 4 seeds) are written to fresh memory at every step.  The
#: blocks do not depend on the number of seeds, so a seed's numbers do not either.
_SAMPLE_BLOCK = 1 << 17


def sample_loss_grad(W, c, X, y):
    r"""Empirical loss of the mean-field student and its gradients, batched over seeds.

    For :math:`f(x) = \frac1m\sum_i c_i\sigma(w_i\cdot x)` on samples ``X (S, n, d)``
    with targets ``y (S, n)`` and residuals :math:`r_\mu = f(x_\mu) - y_\mu`,

    .. math::

        \mathcal L = \frac1n\sum_\mu r_\mu^2,\qquad
        \partial_{c_i}\mathcal L = \frac{2}{nm}\sum_\mu r_\mu\,\sigma(w_i\cdot x_\mu),
        \qquad
        \nabla_{w_i}\mathcal L = \frac{2c_i}{nm}\sum_\mu r_\mu\,
        \mathbf 1[w_i\cdot x_\mu > 0]\,x_\mu

    (paper 000, Eqs. 2-3 without their factor :math:`\frac12`; :math:`\sigma'(0) = 0`, as
    torch's ReLU), computed over blocks of samples (``_SAMPLE_BLOCK``) and summed, the
    same numbers as autograd of the loss up to rounding (tested).  ``W (S, m, d)``,
    ``c (S, m)`` tensors; returns ``(loss (S,), g_c (S, m), g_W (S, m, d))``.
    """
    S, n, d = X.shape
    m = W.shape[-2]
    b = max(1, _SAMPLE_BLOCK // m)
    loss = X.new_zeros(S)
    gc = X.new_zeros(S, m, 1)
    gW = X.new_zeros(S, m, d)
    Wt, cc = W.transpose(1, 2), c[..., None]
    for k in range(0, n, b):
        Xk = X[:, k:k + b]
        A = torch.bmm(Xk, Wt).clamp_(min=0.0)                        # sigma(w_i . x), (S, b, m)
        r = torch.bmm(A, cc).div_(m).sub_(y[:, k:k + b, None])      # residuals, (S, b, 1)
        loss += (r * r).sum((1, 2))
        gc.baddbmm_(A.transpose(1, 2), r)
        # r_mu where w_i . x_mu > 0, else 0 (ReLU's backward kernel: one pass, the same bits)
        gW.baddbmm_(torch.ops.aten.threshold_backward(r.expand_as(A), A, 0).transpose(1, 2), Xk)
    scale = 2.0 / (n * m)
    return loss / n, gc[..., 0].mul_(scale), gW.mul_(c[..., None] * scale)


def sample_risk(W, a, Wt, at, X):
    r"""Monte Carlo estimate of the risk on inputs ``X (S, n, d)``: the per-sample squared
    errors ``(S, n)`` (for tests of :func:`population_risk`)."""
    f = torch.relu(X @ W.transpose(-1, -2)) @ a[..., None]
    ft = torch.relu(X @ Wt.transpose(-1, -2)) @ at[..., None]
    return ((f - ft) ** 2)[..., 0]


# ---------------------------------------------------------------------------
# gradient descent with a per-seed backtracking step
# ---------------------------------------------------------------------------

def _tangent(W, gW):
    """Project the gradient on the tangent space of the sphere at each unit row."""
    return gW - (gW * W).sum(-1, keepdim=True) * W


@dataclass
class MeanFieldInfo:
    r"""Diagnostics of the mean-field trainers (:func:`train_population`,
    :func:`train_samples`), per seed ``(S,)`` unless stated.

    Attributes
    ----------
    loss : ndarray
        Final loss (population risk, plus the anchor penalty when there is one).
    history : ndarray, shape (K, S)
        Loss every ``record_every`` iterations (row 0: at the start); NaN once a seed stopped.
    time_history : ndarray, shape (K, S)
        Gradient-flow time :math:`\sum h` at those points (NaN once stopped).
    steps : ndarray of int
        Accepted steps.
    converged : ndarray of bool
        Stopped by the tolerance (relative to the initial loss, or absolute) or by a stall
        at a step of at least ``min_step``.
    horizon : ndarray of bool
        Stopped at the time horizon ``max_time``.
    loss0, h, time : ndarray
        Initial loss, final step size, final gradient-flow time.
    teacher_norm : ndarray or None
        :math:`\|f^*\|^2` of each teacher (:func:`train_population` only).
    risk, anchor_dist : ndarray or None
        With ``anchor_weight``: the population risk alone and
        :math:`\sum_i\|w_i - w_i^{(0)}\|^2`, at the end.
    stuck : ndarray of bool or None
        Stopped by a stall at which the backtracking step had fallen below ``min_step``:
        the line search, not the loss, had stopped the descent (as on the kinks of an
        empirical ReLU loss); not converged.
    """

    loss: np.ndarray
    history: np.ndarray
    time_history: np.ndarray
    steps: np.ndarray
    converged: np.ndarray
    horizon: np.ndarray
    loss0: np.ndarray
    h: np.ndarray
    time: np.ndarray
    teacher_norm: np.ndarray | None = None
    risk: np.ndarray | None = None
    anchor_dist: np.ndarray | None = None
    stuck: np.ndarray | None = None

    def stop_reasons(self) -> np.ndarray:
        """Why each run stopped, ``(S,)`` strings: ``"converged"`` (tolerance or a stall),
        ``"horizon"`` (``max_time``), ``"stuck"`` (a stall at a collapsed step) or
        ``"step cap"`` (``max_steps``)."""
        stuck = np.zeros_like(self.converged) if self.stuck is None else self.stuck
        return np.where(self.converged, "converged",
                        np.where(self.horizon, "horizon", np.where(stuck, "stuck", "step cap")))


#: The fixed step of paper 000, App. D.2 in the units of the mean-field trainers (its
#: learning rate 0.01 m on Eqs. 2-3, whose factor 1/2 these losses drop, is h = 0.005).
PAPER_STEP = 0.005


class _EarlierStop:
    """An earlier stopping rule (``max_time``, ``abs_tol``) of ``_descend``, read off its run:
    which runs the rule still trains, and the state of each run where the rule stopped it."""

    def __init__(self, max_time, abs_tol, tol, loss0, W, c, h, time_, steps):
        self.max_time = float(max_time)
        self.target = torch.clamp(tol * loss0, min=float(abs_tol))
        S = loss0.shape[0]
        self.active = torch.ones(S, dtype=torch.bool, device=loss0.device)
        self.stalled = torch.zeros_like(self.active)
        self.stuck = torch.zeros_like(self.active)
        self.last_it = torch.zeros(S, dtype=torch.long, device=loss0.device)
        self.state = [W.clone(), c.clone(), loss0.clone(), h.clone(), time_.clone(),
                      steps.clone()]

    def take(self, stopped, *state) -> None:
        """Keep the current ``state`` (W, c, loss, h, time, steps) of the runs ``stopped``."""
        if bool(stopped.any()):
            self.state = [keep_where(stopped, new, old) for new, old in zip(state, self.state)]


def check_earlier_stops(earlier, max_time: float, abs_tol: float) -> list:
    """``earlier`` (pairs ``(max_time', abs_tol')``) as a list of float pairs, each a rule
    that stops no later than ``(max_time, abs_tol)``: ``max_time' <= max_time`` (``inf``
    allowed) and ``abs_tol' >= abs_tol``; else a ``ValueError`` naming the parameter."""
    try:
        pairs = [tuple(rule) for rule in earlier]
    except TypeError:
        pairs = None
    if pairs is None or any(len(rule) != 2 for rule in pairs):
        raise InputTypeError("earlier must be a sequence of (max_time, abs_tol) pairs "
                             f"(got {earlier!r})")
    rules = [(t_e if t_e == math.inf else check_positive("max_time", t_e),
              check_positive("abs_tol", a_e, allow_zero=True)) for t_e, a_e in pairs]
    for t_e, a_e in rules:
        if t_e > max_time or a_e < abs_tol:
            raise ValueError("an earlier stopping rule must stop no later than the run: "
                             f"max_time <= {max_time} and abs_tol >= {abs_tol} "
                             f"(got max_time = {t_e}, abs_tol = {a_e})")
    return rules


def _stalls(active, flat, h, min_step):
    """The stall rule of ``_descend``: the ``active`` runs whose loss fell by at most ``tol``
    relative over the window (``flat``) stop; ``(stop, stalled, stuck)``, where a stall
    counts as convergence (``stalled``) only if the step is at least ``min_step`` (else the
    run is ``stuck``)."""
    stop = active & flat
    stuck = stop & (h < min_step)
    return stop, stop & ~stuck, stuck


def _earlier_info(rule: _EarlierStop, loss0, history, times, record_every):
    """The :class:`MeanFieldInfo` of a run stopped by ``rule`` (``_descend``'s ``earlier``):
    the iterates and history of the longer run up to where the rule stopped each seed."""
    W, c, loss, h, time_, steps = rule.state
    T = int(rule.last_it.max()) if rule.last_it.numel() else 0
    K = 1 + T // record_every
    alive = (np.arange(K)[:, None] * record_every <= rule.last_it.cpu().numpy()[None, :])
    converged = rule.stalled | ((loss <= rule.target) & (time_ < rule.max_time))
    info = MeanFieldInfo(
        loss=loss.cpu().numpy(), history=np.where(alive, history[:K], np.nan),
        time_history=np.where(alive, times[:K], np.nan), steps=steps.cpu().numpy(),
        converged=converged.cpu().numpy(), horizon=(time_ >= rule.max_time).cpu().numpy(),
        loss0=loss0.cpu().numpy(), h=h.cpu().numpy(), time=time_.cpu().numpy(),
        stuck=rule.stuck.cpu().numpy())
    return W, c, info


def _descend(loss_grad, W, c, m, lr, tol, max_steps, record_every, grow=1.2,
             max_time=math.inf, max_step=math.inf, abs_tol=0.0, min_step=PAPER_STEP,
             fixed_step=False, earlier=()):
    r"""Riemannian gradient descent on (c, W in sphere^m) with Armijo backtracking.

    ``loss_grad(W, c) -> (loss (S,), g_c (S, m), g_W (S, m, d))``.  Step ``h`` (per seed)
    in units of the mean-field time: ``c -= h m g_c``, ``W -= h m g_W``, with ``g`` the
    gradients of ``loss_grad``'s loss.  The book's losses are mean squared errors without the
    factor 1/2 of paper 000's Eqs. 2-3, so the paper's learning rate :math:`0.01\,m` is
    ``h = 0.005`` here.  Accepted steps multiply ``h`` by ``grow`` (up to
    ``max_step``, which keeps the iteration close to the gradient flow), rejected ones
    halve it. Stops a seed when its loss is below ``tol`` times its initial loss (or below
    ``abs_tol``, whichever is larger) or when
    the relative decrease over the last 200 iterations is below ``tol``, or when its
    gradient-flow time :math:`\sum h` over accepted steps reaches ``max_time`` (the paper's
    :math:`10^5` steps at learning rate :math:`0.01\,m` end at a time of 500 in these
    units).  A stall counts as convergence only if the step is then at least ``min_step``
    (default the paper's fixed step, ``PAPER_STEP``): where the backtracking has halved the
    step below it, the line search stopped the descent, not a flat loss (on the kinks of
    an empirical ReLU loss the computed gradient is no descent direction for any but the
    smallest steps), and the run is marked ``stuck``.

    With ``fixed_step`` the step is ``min(lr, max_step)`` throughout and every finite step
    is taken, with neither backtracking nor the stall rule: plain gradient descent at a
    fixed learning rate, as App. D.2 trains (its :math:`0.01\,m` is ``max_step = 0.005``),
    stopped by the tolerance, the horizon or ``max_steps``.

    ``earlier``: pairs ``(max_time', abs_tol')`` of stopping rules that stop no later than
    this one (``max_time' <= max_time``, ``abs_tol' >= abs_tol``).  Each seed's iterates do
    not depend on the rule until the rule stops it, so the run under such a rule is this run
    up to that point: its result is read off this run (the same numbers, bit for bit, as a
    run with that rule; tested) instead of a second training.  Returns ``W, c, info`` and one
    ``(W, c, info)`` per earlier rule.
    """
    tol = check_positive("tol", tol)
    abs_tol = check_positive("abs_tol", abs_tol, allow_zero=True)
    fixed_step = check_bool("fixed_step", fixed_step)
    lr, max_step = check_positive_or_inf("lr", lr), check_positive_or_inf("max_step", max_step)
    max_time = check_positive_or_inf("max_time", max_time)
    max_steps = check_int("max_steps", max_steps, 0)
    record_every = check_int("record_every", record_every, 1)
    if fixed_step and not math.isfinite(min(float(lr), float(max_step))):
        raise ValueError("fixed_step needs a finite step: lr or max_step must be finite "
                         f"(got lr = {lr!r}, max_step = {max_step!r})")
    earlier = check_earlier_stops(earlier, max_time, abs_tol)
    S = W.shape[0]
    h = torch.full((S,), min(float(lr), float(max_step)), dtype=W.dtype, device=W.device)
    loss, gc, gW = loss_grad(W, c)
    gW = _tangent(W, gW)
    loss0 = loss.clone()
    # an instance stops when its loss is below tol times its initial loss or abs_tol (the
    # engine's rule), when it stalls or when it reaches the time horizon (retired below)
    target = torch.clamp(tol * loss0, min=float(abs_tol))
    rule = Descent(S, tol=target, max_steps=int(max_steps), device=W.device,
                   desc="mean-field training", hint="a step or the initial loss is not finite")
    history = [loss.cpu().numpy().copy()]
    stalled = torch.zeros(S, dtype=torch.bool, device=W.device)
    stuck = torch.zeros(S, dtype=torch.bool, device=W.device)
    window = [loss.clone()]
    time_ = torch.zeros(S, dtype=W.dtype, device=W.device)
    times = [time_.cpu().numpy().copy()]
    rules = [_EarlierStop(t_e, a_e, tol, loss0, W, c, h, time_, rule.steps) for t_e, a_e in earlier]
    while True:
        for e in rules:                            # the tolerance of an earlier rule
            stop_e = e.active & ~(loss > e.target)
            e.active &= ~stop_e
            e.take(stop_e, W, c, loss, h, time_, rule.steps)
        if rule.stop(loss):
            break
        for e in rules:
            e.last_it = torch.where(e.active, rule.t + 1, e.last_it)
        active_e = [e.active.clone() for e in rules]
        active = rule.active
        was_active = active.clone()
        hm = (h * m * active)
        c_new = c - hm[:, None] * gc
        W_new = unit_rows(W - hm[:, None, None] * gW)
        loss_new, gc_new, gW_new = loss_grad(W_new, c_new)
        gW_new = _tangent(W_new, gW_new)
        sq = (gc * gc).sum(-1) + (gW * gW).sum((-1, -2))
        ok = active & torch.isfinite(loss_new)
        if fixed_step:                             # a step that is not finite diverged
            rule.retire(active & ~ok)
            for e in rules:
                e.active &= ok
        else:                                      # Armijo's sufficient decrease
            ok &= loss_new <= loss - 0.25 * hm * sq
        okc = ok[:, None]
        c = torch.where(okc, c_new, c)
        W = torch.where(okc[..., None], W_new, W)
        loss = torch.where(ok, loss_new, loss)
        gc = torch.where(okc, gc_new, gc)
        gW = torch.where(okc[..., None], gW_new, gW)
        time_ = time_ + torch.where(ok, h, torch.zeros_like(h))
        rule.retire(time_ >= max_time)
        for e in rules:
            e.active &= ~(time_ >= e.max_time)
        if not fixed_step:
            h = bold_driver(h, ok, active, grow, max_step)
        rule.advance(counted=ok)                   # accepted steps
        if rule.t % record_every == 0:
            history.append(torch.where(was_active, loss, torch.nan).cpu().numpy())
            times.append(torch.where(was_active, time_, torch.nan).cpu().numpy())
            if not fixed_step:                     # no stall rule: no window to keep
                window.append(loss.clone())
                if len(window) > max(1, 200 // record_every):
                    old = window.pop(0)
                    flat = (old - loss) <= tol * old
                    for e in rules:
                        stall_e, stalled_e, stuck_e = _stalls(e.active, flat, h, min_step)
                        e.stalled |= stalled_e
                        e.stuck |= stuck_e
                        e.active &= ~stall_e
                    stall, stalled_now, stuck_now = _stalls(active, flat, h, min_step)
                    stalled |= stalled_now
                    stuck |= stuck_now
                    rule.retire(stall)
        for e, before in zip(rules, active_e):     # stopped in this iteration by a rule
            e.take(before & ~e.active, W, c, loss, h, time_, rule.steps)
    for e in rules:                                # still running at the step cap
        e.take(e.active, W, c, loss, h, time_, rule.steps)
    # converged: stopped by the tolerance (before the horizon) or stalled
    info = rule.finish(loss, converged=stalled | ((loss <= target) & (time_ < max_time)),
                       warn=False)
    history, times = np.array(history), np.array(times)
    return W, c, MeanFieldInfo(
        loss=loss.cpu().numpy(), history=history, time_history=times,
        steps=info.steps, converged=info.converged, horizon=(time_ >= max_time).cpu().numpy(),
        loss0=loss0.cpu().numpy(), h=h.cpu().numpy(), time=time_.cpu().numpy(),
        stuck=stuck.cpu().numpy()), [_earlier_info(e, loss0, history, times, record_every)
                                     for e in rules]


def _to_t(x, device):
    return torch.as_tensor(np.asarray(x), dtype=torch.float64, device=device)


def _checked_students(W0, c0):
    """The students ``W0 (S, m, d)`` and readouts ``c0 (S, m)`` of the mean-field trainers,
    checked before any work: finite, shapes that match, no zero unit (``ValueError``
    naming the argument)."""
    W0 = check_rows("W0", W0)
    if W0.ndim != 3:
        raise ValueError(f"W0 must have shape (S, m, d) (got {W0.shape})")
    if not np.all(np.linalg.norm(W0, axis=-1) > 0):
        raise ValueError("W0 must have no zero rows (a unit on the sphere needs a direction)")
    c0 = check_array("c0", c0, 0)
    if c0.shape != W0.shape[:2]:
        raise ValueError(f"c0 must have shape (S, m) = {W0.shape[:2]} (got {c0.shape})")
    return W0, c0


def _checked_batch(name, A, S, d):
    """Rows ``A (S, N, d)`` of the batch (a teacher's units, the samples), checked."""
    A = check_rows(name, A)
    if A.ndim != 3 or A.shape[0] != S or A.shape[2] != d:
        raise ValueError(f"{name} must have shape (S, N, d) = ({S}, N, {d}) (got {A.shape})")
    return A


def _checked_values(name, v, shape):
    """Finite values ``v`` of the given ``shape`` (readouts, labels), checked."""
    v = check_array(name, v, 0)
    if v.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)} (got {v.shape})")
    return v


def train_population(W0, c0, teacher: Teacher, lr: float = 1.0, tol: float = 1e-6,
                     max_steps: int = 5000, record_every: int = 10, max_time: float = math.inf,
                     max_step: float = math.inf, anchor_weight=None, abs_tol: float = 0.0,
                     fixed_step: bool = False, earlier=()):
    r"""Pretrain the mean-field student :math:`f = \frac1m\sum c_i\sigma(w_i\cdot x)` on the exact
    population loss :math:`E(f - f_s^*)^2` of a teacher (paper 000, Sec. 4: "train the source
    task on the population loss, which can be computed exactly"), by Riemannian gradient
    descent on the sphere for the :math:`w_i` (App. D: weights on the sphere) with the
    backtracking step of ``_descend``.

    ``W0 (S, m, d)``, ``c0 (S, m)`` numpy; returns numpy ``W``, ``c`` and a
    :class:`MeanFieldInfo` (``history`` every ``record_every`` iterations).

    ``anchor_weight`` :math:`\lambda` (a number >= 0 or one per seed, ``(S,)``): add the
    penalty of paper 000, App. E (Fig. 9),
    :math:`\lambda\sum_{i=1}^m\|w_i - w_i^{(0)}\|^2` with :math:`w_i^{(0)}` the initial units, which
    keeps the features near their random start (lazy as :math:`\lambda\to\infty`). The info
    then also holds ``risk`` (the population risk alone) and ``anchor_dist``
    (:math:`\sum_i\|w_i - w_i^{(0)}\|^2`), both at the end; ``loss`` is risk plus penalty.

    A run stops when its loss is at most ``tol`` times its initial loss or at most
    ``abs_tol`` (default 0: the relative rule alone), whichever is larger; paper 000,
    App. D.2's "until the loss reaches :math:`10^{-6}`" on its Eqs. 2-3, which carry a
    factor 1/2 that this loss does not, is ``abs_tol = 2e-6``.  ``fixed_step``: gradient
    descent at the fixed step ``min(lr, max_step)``, every step taken (App. D.2's protocol;
    see ``_descend``).

    ``earlier``: pairs ``(max_time', abs_tol')`` of stopping rules that stop no later
    (``max_time' <= max_time``, ``abs_tol' >= abs_tol``; e.g. App. D.2's horizon and
    absolute tolerance beside a longer run), read off this run: the same numbers, bit for
    bit, as a run with that rule, without training twice.  With ``earlier`` the result has a
    fourth element, one ``(W, c, info)`` per rule.
    """
    W0, c0 = _checked_students(W0, c0)
    S, m, d = W0.shape
    tW = _checked_batch("teacher.W", teacher.W, S, d)
    ta = _checked_values("teacher.a", teacher.a, tW.shape[:2])
    dev = default_device()
    W = unit_rows(_to_t(W0, dev))
    c = _to_t(c0, dev)
    m = W.shape[-2]
    Wt, at = _to_t(tW, dev), _to_t(ta, dev)
    cross = _teacher_norm(Wt, at)
    on_sphere = bool(torch.all((Wt.norm(dim=-1) - 1.0).abs() <= 1e-12))
    grad = population_risk_tangent_grad if on_sphere else population_risk_grad

    lam = None
    if anchor_weight is not None:
        lam = np.array(np.broadcast_to(np.asarray(anchor_weight, dtype=float), (W.shape[0],)))
        if not np.all(np.isfinite(lam) & (lam >= 0)):
            raise ValueError(f"anchor_weight must be finite numbers >= 0 (got {anchor_weight!r})")
        lam = _to_t(lam, dev)
        Wa = W.clone()

    def lg(W, c):
        r, ga, gW = grad(W, c / m, Wt, at, cross)
        if lam is not None:
            dW = W - Wa
            r = r + lam * (dW * dW).sum((-1, -2))
            gW = gW + 2 * lam[:, None, None] * dW
        return r, ga / m, gW  # chain rule a = c / m

    W, c, info, runs = _descend(lg, W, c, m, lr, tol, max_steps, record_every,
                                max_time=max_time, max_step=max_step, abs_tol=abs_tol,
                                fixed_step=fixed_step, earlier=earlier)
    out = []
    for W, c, info in [(W, c, info)] + runs:
        info.teacher_norm = cross.cpu().numpy()
        if lam is not None:
            dW = W - Wa
            info.anchor_dist = (dW * dW).sum((-1, -2)).cpu().numpy()
            info.risk = population_risk(W, c / m, Wt, at, cross).cpu().numpy()
        out.append((W.cpu().numpy(), c.cpu().numpy(), info))
    return (*out[0], out[1:]) if earlier else out[0]


#: The precisions :func:`train_samples` computes the sample loss and gradient in.
GRAD_DTYPES = {"float64": torch.float64, "float32": torch.float32}


def check_grad_dtype(grad_dtype) -> str:
    """``grad_dtype`` of :func:`train_samples`, checked: one of :data:`GRAD_DTYPES`."""
    return check_choice("grad_dtype", grad_dtype, list(GRAD_DTYPES))


def train_samples(W0, c0, X, y, lr: float = 1.0, tol: float = 1e-6, max_steps: int = 5000,
                  record_every: int = 10, max_time: float = math.inf,
                  max_step: float = math.inf, abs_tol: float = 0.0, fixed_step: bool = False,
                  earlier=(), grad_dtype: str = "float64"):
    r"""Scratch training on ``n`` samples: gradient descent on the empirical loss
    :math:`\frac1n\sum_\mu (f(x_\mu) - y_\mu)^2` of the mean-field student (both layers,
    :math:`w_i` on the sphere), batched over seeds: ``X (S, n, d)``, ``y (S, n)``.  Stops
    as :func:`train_population` (``tol`` relative, ``abs_tol`` absolute, ``fixed_step``;
    ``earlier``: the runs under earlier stopping rules, read off this one).

    ``grad_dtype``: the precision of :func:`sample_loss_grad`, the products over the samples
    that cost all but a small part of a step (``"float64"``, the default, or ``"float32"``,
    about 1.8 times faster on a CPU).  The iterate, the step and the stopping rule stay in
    double precision: with ``"float32"`` the loss and the gradient the descent reads carry
    single-precision rounding (relative :math:`\sim 10^{-7}` on the gradient), so the
    trajectory differs from the double-precision one by rounding only; whether that moves a
    printed number is for the caller to check."""
    W0, c0 = _checked_students(W0, c0)
    X = _checked_batch("X", X, W0.shape[0], W0.shape[2])
    y = _checked_values("y", y, X.shape[:2])
    low = GRAD_DTYPES[check_grad_dtype(grad_dtype)]
    dev = default_device()
    W = unit_rows(_to_t(W0, dev))
    c = _to_t(c0, dev)
    X, y = _to_t(X, dev), _to_t(y, dev)
    m = W.shape[-2]

    if low == torch.float64:
        def lg(W, c):
            return sample_loss_grad(W, c, X, y)
    else:
        X_low, y_low = X.to(low), y.to(low)

        def lg(W, c):
            loss, gc, gW = sample_loss_grad(W.to(low), c.to(low), X_low, y_low)
            return loss.double(), gc.double(), gW.double()

    W, c, info, runs = _descend(lg, W, c, m, lr, tol, max_steps, record_every,
                                max_time=max_time, max_step=max_step, abs_tol=abs_tol,
                                fixed_step=fixed_step, earlier=earlier)
    out = [(W.cpu().numpy(), c.cpu().numpy(), info) for W, c, info in [(W, c, info)] + runs]
    return (*out[0], out[1:]) if earlier else out[0]


# ---------------------------------------------------------------------------
# evaluation: risks, linear transfer, RKHS projections (numpy)
# ---------------------------------------------------------------------------

def _first_equal(W, V):
    """For batched ``W (S, N, d)``, ``V (S, M, d)``: the entries whose pair ``(W[s], V[s])``
    first occurs at ``s`` (``reps``), and for every entry the position in ``reps`` of its
    equal, bit for bit (``inv``).  Hashes find the candidates, ``array_equal`` decides."""
    reps, inv, seen = [], np.empty(W.shape[0], dtype=np.intp), {}
    for s in range(W.shape[0]):
        key = hashlib.blake2b(W[s].tobytes() + V[s].tobytes(), digest_size=16).digest()
        for u in seen.get(key, ()):
            r = reps[u]
            if np.array_equal(W[s], W[r]) and np.array_equal(V[s], V[r]):
                inv[s] = u
                break
        else:
            seen.setdefault(key, []).append(len(reps))
            inv[s] = len(reps)
            reps.append(s)
    return np.array(reps, dtype=np.intp), inv


def _batch_kernel(W, V) -> np.ndarray:
    """:func:`~transferkit.theory.relu.relu_kernel` of batched rows ``W (S, N, d)`` and
    ``V (S, M, d)``, computed once per distinct pair ``(W[s], V[s])``: linear transfer
    scores many draws of one set of pretrained units against one teacher, whose ``N x M``
    arc-cosine kernel would otherwise be computed once per draw.  Each entry's kernel is
    computed from its own rows alone, so the values are those of the whole batch bit for
    bit (tested at the paper's sizes), returned as a contiguous ``(S, N, M)`` array.  When
    ``V`` is ``W`` (the same array) the distinct rows are passed as one array twice, as the
    whole batch was: numpy computes :math:`AA^\top` by a symmetric product (BLAS ``syrk``),
    which sums in another order than the general product of two arrays (``gemm``; risks
    moved by up to 6e-15 relative at the paper's sizes when the two were mixed)."""
    same = V is W                      # before asarray, which copies a list each time
    W, V = np.asarray(W), np.asarray(V)
    if not (W.ndim == V.ndim == 3 and W.shape[0] == V.shape[0] > 1):
        return relu_kernel(W, V)
    reps, inv = _first_equal(W, V)
    if reps.size == W.shape[0]:
        return relu_kernel(W, V)
    Wr = W[reps]
    return relu_kernel(Wr, Wr if same else V[reps])[inv]


def risk_np(W, a, teacher: Teacher) -> np.ndarray:
    """Exact population risk ``(S,)`` of batched students ``(W, a)`` (numpy): ``W (S, m, d)``,
    ``a (S, m)``, a teacher of ``S`` rows ``(S, m_*, d)`` and readouts ``(S, m_*)``."""
    W, a = np.asarray(W), np.asarray(a)
    tW, ta = np.asarray(teacher.W), np.asarray(teacher.a)
    if W.ndim != 3 or a.shape != W.shape[:2] or tW.ndim != 3 or tW.shape[0] != W.shape[0] \
            or tW.shape[2] != W.shape[2] or ta.shape != tW.shape[:2]:
        raise ValueError(f"W must be (S, m, d), a (S, m), teacher.W (S, m_*, d) and teacher.a "
                         f"(S, m_*) (got W {W.shape}, a {a.shape}, teacher.W {tW.shape}, "
                         f"teacher.a {ta.shape})")
    Kww = _batch_kernel(W, W)
    Kwt = _batch_kernel(W, teacher.W)
    Ktt = _batch_kernel(teacher.W, teacher.W)
    return (np.einsum("si,sij,sj->s", a, Kww, a) - 2 * np.einsum("si,sij,sj->s", a, Kwt, teacher.a)
            + np.einsum("si,sij,sj->s", teacher.a, Ktt, teacher.a))


def teacher_norm(teacher: Teacher) -> np.ndarray:
    r""":math:`\|f_*\|^2_{L_2} = a_*^\top K(W_*, W_*) a_*` ``(S,)`` (paper 000, Eq. 156, first term)."""
    return np.einsum("si,sij,sj->s", teacher.a, relu_kernel(teacher.W, teacher.W), teacher.a)


def teacher_mean(teacher: Teacher) -> np.ndarray:
    r""":math:`E_x f_*(x) = \sum_i a_i\|w_i\|/\sqrt{2\pi}` ``(S,)``."""
    return np.einsum(
        "si,si->s", teacher.a, np.linalg.norm(teacher.W, axis=-1)) / np.sqrt(2 * np.pi)


def readout_transfer_risk(W, X, teacher: Teacher, rcond: float = 1e-10) -> np.ndarray:
    r"""Linear transfer (paper 000, Eq. 18): freeze the pretrained units ``W (S, m, d)``,
    fit the readout by minimum-norm least squares on the noiseless target sample
    ``X (S, n, d)`` (kernel interpolation with :math:`k(x, x') = \frac1m\sum_i
    \sigma(w_i\cdot x)\sigma(w_i\cdot x')`; the min-norm readout is the limit of gradient
    flow from zero), and return its exact population risk ``(S,)``."""
    W = check_rows("W", W)
    X = check_rows("X", X)
    rcond = check_positive("rcond", rcond)
    Phi = np.maximum(X @ np.swapaxes(W, -1, -2), 0.0)          # (S, n, m)
    y = np.einsum("snk,sk->sn", np.maximum(X @ np.swapaxes(teacher.W, -1, -2), 0.0), teacher.a)
    a = np.stack([np.linalg.lstsq(P, yy, rcond=rcond * max(P.shape))[0] for P, yy in zip(Phi, y)])
    return risk_np(W, a, teacher)


def rkhs_norms(W, teacher: Teacher, rcond: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    r"""In- and out-of-RKHS parts of a teacher w.r.t. the span of the units ``W (S, m, d)``
    (paper 000, App. C, Eqs. 151-156):

    :math:`\|P_\parallel f_*\|^2 = b^\top K^{+} b,\quad b = K(W, W_*)a_*,\qquad \|P_\perp f_*\|^2 = a_*^\top K(W_*, W_*)a_* - \|P_\parallel f_*\|^2,`

    with :math:`K = K(W, W)` (Eq. 151 up to the factor :math:`1/m`, which cancels with those of
    Eqs. 153 and 155). :math:`K` is singular when units repeat (as after pretraining, when
    units condense onto the teacher's): :math:`K^+` is the pseudo-inverse that drops the
    eigenvalues below ``rcond`` times the largest. Returns ``(in, out)``, each ``(S,)``,
    ``out`` clipped at 0 (it is :math:`\ge 0` up to rounding).
    """
    W = check_rows("W", W)
    rcond = check_positive("rcond", rcond)
    K = relu_kernel(W, W)
    b = np.einsum("sij,sj->si", relu_kernel(W, teacher.W), teacher.a)
    lam, U = np.linalg.eigh(K)
    keep = lam > rcond * lam[..., -1:]
    proj = np.einsum("sij,si->sj", U, b)
    inside = np.sum(np.where(keep, proj ** 2 / np.where(keep, lam, 1.0), 0.0), axis=-1)
    total = teacher_norm(teacher)
    return inside, np.maximum(total - inside, 0.0)


def feature_gram(W, a_or_none, X) -> np.ndarray:
    r"""Gram matrix of a network's feature kernel on inputs ``X (n, d)``:
    :math:`k(x, x') = \sum_i p_i\,\sigma(w_i\cdot x)\sigma(w_i\cdot x')` with weights
    ``p = a_or_none`` (``None``: :math:`1/m`, the model's kernel of Sec. 4)."""
    F = np.maximum(X @ W.T, 0.0)
    p = np.full(W.shape[0], 1.0 / W.shape[0]) if a_or_none is None else a_or_none
    return (F * p) @ F.T


def teacher_pair(d: int, units: int, rho: float, magnitude: float, rng: np.random.Generator):
    r"""Auxiliary and main ReLU teachers (paper 003, Sec. 1.2 and Fig. 1c).

    The auxiliary teacher has ``units`` orthonormal directions :math:`\theta_h` with
    readout 1; the main teacher has directions
    :math:`\theta'_h = \rho\theta_h + \sqrt{1-\rho^2}\,\xi_h` (:math:`\xi_h\perp\theta_h`,
    unit) and readout ``magnitude``.  Returns ``(W_aux, a_aux, W_main, a_main)``.
    """
    d, units = check_int("d", d, 2), check_int("units", units, 1)
    if not -1 <= float(check_values("rho", rho)) <= 1:
        raise ValueError(f"rho must be in [-1, 1] (got {rho!r})")
    magnitude = check_positive("magnitude", magnitude)
    if 2 * units > d:
        raise ValueError(f"d must be >= 2 * units (got d={d}, units={units})")
    check_budget("d", d, 8 * 4 * d * 2 * units)           # the d x 2 units draw, Q and R
    Q, _ = np.linalg.qr(rng.standard_normal((d, 2 * units)))
    theta, xi = Q[:, :units].T, Q[:, units:].T
    main = rho * theta + np.sqrt(max(1 - rho * rho, 0.0)) * xi
    return theta, np.ones(units), main, np.full(units, magnitude)


def forward(W, a, X):
    """Network outputs ``(B, n)`` for ``W`` ``(B, H, d)``, ``a`` ``(B, H)``, ``X`` ``(B, n, d)``."""
    return (torch.relu(X @ W.transpose(1, 2)) * a[:, None, :]).sum(-1)


def hidden_representation(W, X):
    """Hidden activations :math:`(\\langle w_h, x\\rangle)_+`, ``(B, n, H)``."""
    return torch.relu(X @ W.transpose(1, 2))


def loss_and_grads(W, a, X, y, n):
    r"""Loss :math:`\frac1{2n}\|f(X)-y\|^2` per network and its gradients in ``W`` and ``a``."""
    pre = X @ W.transpose(1, 2)
    act = torch.relu(pre)
    r = (act * a[:, None, :]).sum(-1) - y
    loss = 0.5 * (r ** 2).sum(1) / n
    ga = (act * r[..., None]).sum(1) / n[:, None]
    # r a_h where w_h . x > 0, else 0: ReLU's own backward kernel, one pass over the
    # activations instead of a boolean mask, its conversion to float and a product (the
    # same bits, tested)
    masked = torch.ops.aten.threshold_backward(r[..., None] * a[:, None, :], pre, 0)
    gW = masked.transpose(1, 2) @ X / n[:, None, None]
    return loss, gW, ga


def train_units(W, a, X, y, n, *, lr_scale: float = 0.5, loss_tol: float = 1e-8,
                max_steps: int = 100_000, compact: float = 0.5, engine: str = "auto"):
    r"""Full-batch gradient descent on :math:`\frac{1}{2n}\|f(X)-y\|^2`, both layers.

    ``X`` ``(B, N, d)`` and ``y`` ``(B, N)`` are zero-padded beyond ``n[b]`` samples.  The
    step is ``lr_scale`` over a bound on the curvature,
    :math:`\lambda_{\max}(X^\top X/n)\,(\|a\|^2 + \max_h\|w_h\|^2) + \|\nabla\|`, recomputed
    every step; a network stops when its loss is below ``loss_tol`` times the mean
    :math:`y^2`.  Once fewer than ``compact`` of the networks still being stepped are
    active, the stopped ones leave the working tensors (the same iterates, less work;
    ``0``: never).  ``engine``: ``"torch"``, one batched loop (every device);
    ``"kernel"``, the compiled CPU kernel (``transferkit.models._units_kernel``), which runs
    each network to its own stop on its own samples with the same operations (weights equal
    to the torch loop's up to rounding, and the same steps unless a loss lands within rounding
    of its tolerance; float64 weights on the CPU); ``"auto"``, the kernel where it applies,
    else torch.  Returns ``(W, a, loss, steps, converged)``.

    Raises
    ------
    ValueError
        Before any step, naming the argument: shapes that do not match (``W``, ``a``, ``X``,
        ``y``), sample counts ``n`` not one per network in ``[1, N]``, ``lr_scale`` or
        ``loss_tol`` not > 0, ``max_steps`` < 1, ``compact`` outside ``[0, 1)``, ``engine``
        not one of the three (or ``"kernel"`` for weights that are not float64 on the CPU).
    """
    lr_scale, loss_tol = check_positive("lr_scale", lr_scale), check_positive("loss_tol", loss_tol)
    max_steps = check_int("max_steps", max_steps, 1)
    compact = check_fraction("compact", compact)
    ns = _checked_units(W, a, [X], [y], [n], one_task=True)
    engine = _units_engine(engine, W, a, X)
    W, A, loss, rule, scale = _descend_units(W, a[..., None], [X], [y], ns, lr_scale, loss_tol,
                                             max_steps, compact, "ReLU networks", engine)
    loss, tol = loss[:, 0], loss_tol * scale[:, 0]
    converged = loss <= tol
    rule.finish(loss, converged=converged)             # warns about unconverged networks
    return W, A[..., 0], loss, rule.steps, converged


def _checked_units(W, A, Xs, ys, ns, one_task=False):
    """The shapes and sample counts of :func:`train_units` (``one_task``: ``A`` is its ``a``,
    the lists hold its ``X``, ``y``, ``n``) and :func:`train_units_mtl`, checked before any
    step: a ``ValueError`` naming the argument.  Returns ``ns`` as tensors of ``W``'s dtype on its
    device."""
    a_name, a_shape = ("a", "(B, H)") if one_task else ("A", "(B, H, O)")
    if W.ndim != 3 or A.ndim != 3 - one_task or A.shape[:2] != W.shape[:2]:
        raise ValueError(f"W must be (B, H, d) and {a_name} {a_shape} (got W of shape "
                         f"{tuple(W.shape)} and {a_name} of shape {tuple(A.shape)})")
    if not one_task and not (len(Xs) == len(ys) == len(ns) == A.shape[-1]):
        raise ValueError(f"Xs, ys and ns must have one entry per column of A (B, H, O) "
                         f"(got {len(Xs)}, {len(ys)}, {len(ns)} and A of shape {tuple(A.shape)})")
    B, d = W.shape[0], W.shape[2]
    name = (lambda arg, o: arg) if one_task else (lambda arg, o: f"{arg}s[{o}]")  # noqa: E731
    for arg, T in (("W", W), (a_name, A)):
        if not bool(torch.isfinite(T).all()):
            raise ValueError(f"{arg} must be finite (got non-finite entries)")
    out = []
    for o, (X, y, n) in enumerate(zip(Xs, ys, ns)):
        if X.ndim != 3 or X.shape[0] != B or X.shape[2] != d or tuple(y.shape) != tuple(X.shape[:2]):
            raise ValueError(f"{name('X', o)} must be (B, N, d) = ({B}, N, {d}) and "
                             f"{name('y', o)} (B, N) (got {tuple(X.shape)} and {tuple(y.shape)})")
        for arg, T in (("X", X), ("y", y)):
            if not bool(torch.isfinite(T).all()):
                raise ValueError(f"{name(arg, o)} must be finite (got non-finite entries)")
        n = np.asarray(n.cpu() if isinstance(n, torch.Tensor) else n, float)
        if n.shape != (B,) or not np.all((n >= 1) & (n <= X.shape[1])):
            raise ValueError(f"{name('n', o)} must hold B = {B} sample counts in "
                             f"[1, {X.shape[1]}] (got {n!r})")
        out.append(torch.as_tensor(n, dtype=W.dtype, device=W.device))
    return out


def _units_engine(engine, W, *tensors) -> str:
    """``"kernel"`` or ``"torch"``: the engine that :func:`train_units` and
    :func:`train_units_mtl` run (``engine`` checked, a ``ValueError`` naming it)."""
    engine = check_engine(engine, ("auto", "torch", "kernel"), W.device)
    if engine == "torch":
        return engine
    f64 = all(t.dtype == torch.float64 and t.device.type == "cpu" for t in (W, *tensors))
    if engine == "kernel" and not f64:
        raise ValueError("engine='kernel' needs float64 tensors on the CPU (use engine='torch' "
                         "or 'auto')")
    return "kernel" if f64 else "torch"


def _descend_units(W, A, Xs, ys, ns, lr_scale, loss_tol, max_steps, compact, desc,
                   engine="torch"):
    """The descent loop of :func:`train_units` and :func:`train_units_mtl` (checked
    arguments, ``ns`` tensors): curvature steps until every task's loss is at most
    ``loss_tol`` times its mean :math:`y_o^2`, stopped networks compacted out (``engine``
    ``"kernel"``: :func:`_units_on_kernel`).  Returns ``(W, A, losses, rule, scale)``: the
    losses ``(B, O)`` of the returned weights, the
    :class:`~transferkit.models.descent.Descent` rule (the caller finishes it) and the
    tasks' mean :math:`y_o^2` ``(B, O)``."""
    lams = [torch.linalg.eigvalsh(X.transpose(1, 2) @ X / n[:, None, None])[:, -1]
            for X, n in zip(Xs, ns)]
    scale = torch.stack([((y ** 2).sum(1) / n).clamp_min(1e-300) for y, n in zip(ys, ns)], 1)
    tol = loss_tol * scale
    # a network is active while some task's loss is above its tolerance: loss - tol > 0
    # exactly when loss > tol (a difference of floats is 0 only for equal floats)
    rule = Descent(len(W), tol=torch.zeros(len(W), dtype=W.dtype, device=W.device),
                   max_steps=max_steps, device=W.device, desc=desc,
                   hint=f"lr_scale={lr_scale!r} is too large")
    if engine == "kernel":
        W, A, losses = _units_on_kernel(W, A, Xs, ys, ns, lams, tol, lr_scale, rule)
        return W, A, losses, rule, scale
    W_out, A_out = W.clone(), A.clone()
    loss_out = torch.zeros(len(W), A.shape[-1], dtype=W.dtype, device=W.device)
    while True:
        losses, gW, gA = mtl_loss_and_grads(W, A, Xs, ys, ns)
        if rule.stop((losses - tol).amax(1)):
            break
        keep = rule.compact(compact)
        if keep is not None:
            done = ~keep
            W_out[rule.dropped], A_out[rule.dropped], loss_out[rule.dropped] = W[done], A[done], losses[done]
            W, A, tol, losses, gW, gA = W[keep], A[keep], tol[keep], losses[keep], gW[keep], gA[keep]
            Xs, ys = [X[keep] for X in Xs], [y[keep] for y in ys]
            ns, lams = [n[keep] for n in ns], [lam[keep] for lam in lams]
        gnorm = torch.sqrt((gA ** 2).sum((1, 2)) + (gW ** 2).sum((1, 2)))
        wmax = (W ** 2).sum(-1).amax(-1)
        kappa = sum(lam * ((A[..., o] ** 2).sum(1) + wmax) for o, lam in enumerate(lams)) + gnorm
        eta = rule.masked(lr_scale / kappa)
        A = A - eta[:, None, None] * gA
        W = W - eta[:, None, None] * gW
        rule.advance()
    if rule.idx is None:
        W_out, A_out, loss_out = W, A, losses
    else:
        W_out[rule.idx], A_out[rule.idx], loss_out[rule.idx] = W, A, losses
    return W_out, A_out, loss_out, rule, scale


def _units_on_kernel(W, A, Xs, ys, ns, lams, tol, lr_scale, rule):
    """:func:`_descend_units` on the compiled kernel (float64, CPU): the tasks' samples packed
    into ``(B, O, N, d)`` (``N`` the largest of any task; the rows beyond a task's last
    nonzero row, padding, contribute exact zeros in either engine and are skipped), BLAS held
    to one thread (the kernel's threads are those of :func:`~transferkit.models.descent.run_kernel`).
    Sets ``rule.steps``; returns the new ``(W, A, losses)``."""
    B, _, d = W.shape
    O, N = len(Xs), max(X.shape[1] for X in Xs)
    Xp, yp = np.zeros((B, O, N, d)), np.zeros((B, O, N))
    rows = np.zeros((B, O), np.int64)
    for o, (X, y) in enumerate(zip(Xs, ys)):
        Xn, yn = X.detach().numpy(), y.detach().numpy()
        Xp[:, o, :Xn.shape[1]], yp[:, o, :yn.shape[1]] = Xn, yn
        nz = (Xn != 0).any(-1) | (yn != 0)                              # (B, N_o)
        rows[:, o] = np.where(nz.any(-1), nz.shape[-1] - np.argmax(nz[:, ::-1], -1), 0)
    Wn, An = W.detach().numpy().copy(), A.detach().numpy().copy()
    n = torch.stack(ns, 1).numpy().astype(np.float64)
    args = (Wn, An, Xp, yp, rows, np.ascontiguousarray(n),
            np.ascontiguousarray(torch.stack(lams, 1).numpy()), np.ascontiguousarray(tol.numpy()),
            float(lr_scale), int(rule.max_steps))
    with threadpool_limits(limits=1, user_api="blas"):
        losses = run_kernel(units_descent, args, B, rule)
    return torch.from_numpy(Wn), torch.from_numpy(An), losses


def mtl_loss_and_grads(W, A, Xs, ys, ns):
    r"""Multi-task loss of a shared first layer and its gradients (paper 004, Eq. 31).

    The network of Eq. 31 with :math:`O` outputs, :math:`f_o(x) = \sum_h A_{ho}
    (\langle w_h, x\rangle)_+`, each output trained on its own task's samples; the loss is the
    sum of the tasks' mean losses, as for the multi-task diagonal networks (paper 004, Eq. 8),

    .. math:: L = \sum_{o=1}^{O} \frac{1}{2 n_o}\,\|f_o(X_o) - y_o\|^2 .

    Parameters
    ----------
    W : tensor ``(B, H, d)``
        Shared first layer.
    A : tensor ``(B, H, O)``
        Readouts, one column per task.
    Xs, ys, ns : sequences of length ``O``
        Per task: inputs ``(B, N_o, d)`` and labels ``(B, N_o)``, zero beyond ``ns[o][b]``
        samples, and the sample counts (tensors ``(B,)``).

    Returns
    -------
    losses : tensor ``(B, O)``
        The terms :math:`\frac{1}{2n_o}\|f_o(X_o)-y_o\|^2`.
    gW : tensor ``(B, H, d)``
        :math:`\partial L/\partial W`, the sum over tasks.
    gA : tensor ``(B, H, O)``
        :math:`\partial L/\partial A`.
    """
    parts = [loss_and_grads(W, A[..., o], X, y, n) for o, (X, y, n) in enumerate(zip(Xs, ys, ns))]
    gW = parts[0][1]
    for part in parts[1:]:
        gW = gW + part[1]
    return (torch.stack([p[0] for p in parts], 1), gW, torch.stack([p[2] for p in parts], -1))


def train_units_mtl(W, A, Xs, ys, ns, *, lr_scale: float = 0.5, loss_tol: float = 1e-8,
                    max_steps: int = 100_000, compact: float = 0.5, engine: str = "auto"):
    r"""Multi-task learning (MTL): full-batch gradient descent on both layers of Eq. 31's
    network with a shared first layer, on the loss of :func:`mtl_loss_and_grads` (paper 004,
    App. B.2; its implicit bias is the :math:`\ell_{1,2}` norm of Eq. 35 over the units'
    readout vectors).

    The step is ``lr_scale`` over a bound on the curvature, the sum over tasks of the bound
    of :func:`train_units`,
    :math:`\sum_o\lambda_{\max}(X_o^\top X_o/n_o)\,(\|A_{:,o}\|^2+\max_h\|w_h\|^2)+\|\nabla\|`,
    recomputed every step.  A network stops when *every* task's loss is below ``loss_tol``
    times that task's mean :math:`y_o^2` (so that a task of small labels is fitted as
    closely, relative to its scale, as a task of large ones).  Stopped networks leave the
    working tensors as in :func:`train_units` (``compact``); ``engine`` as there.

    Parameters
    ----------
    W, A, Xs, ys, ns
        As in :func:`mtl_loss_and_grads`; ``ns`` may be numpy arrays.

    Returns
    -------
    W, A : tensors
        The trained weights.
    losses : tensor ``(B, O)``
        The final per-task loss terms.
    steps : tensor ``(B,)``
    converged : tensor of bool ``(B,)``

    Raises
    ------
    ValueError
        Before any step, naming the argument: shapes that do not match (``W`` and ``A``,
        one ``Xs``, ``ys``, ``ns`` entry per task, each task's inputs and labels), sample
        counts outside ``[1, N_o]``, ``lr_scale`` or ``loss_tol`` not > 0, ``max_steps`` < 1,
        ``compact`` outside ``[0, 1)``, ``engine`` as in :func:`train_units`.
    """
    lr_scale, loss_tol = check_positive("lr_scale", lr_scale), check_positive("loss_tol", loss_tol)
    max_steps = check_int("max_steps", max_steps, 1)
    compact = check_fraction("compact", compact)
    Xs, ys = list(Xs), list(ys)
    ns = _checked_units(W, A, Xs, ys, ns)
    engine = _units_engine(engine, W, A, *Xs)
    W, A, losses, rule, scale = _descend_units(W, A, Xs, ys, ns, lr_scale, loss_tol, max_steps,
                                               compact, "multi-task ReLU networks", engine)
    converged = (losses <= loss_tol * scale).all(1)
    rule.finish((losses / scale).amax(1), converged=converged)   # largest relative task loss
    return W, A, losses, rule.steps, converged
