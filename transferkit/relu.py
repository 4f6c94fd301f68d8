r"""Two-layer ReLU student-teacher networks in the mean-field scaling (paper 000, Sec. 4,
App. C-D, Fig. 3).

The student is $f(x) = \frac1m\sum_{i=1}^m c_i\,\sigma(w_i^\top x)$ with
$\sigma = \mathrm{relu}$ and hidden weights on the unit sphere (paper 000, Eq. 142);
teachers have $m_*$ units on the sphere (Eq. 143). The target teacher is Eq. 17,
$f_t^*(x) = \frac1{m_*}\sum_{i} c_i^*\sigma(w_i^{*\top}x)$, and the source (Eq. 16) keeps
the units outside a random set $\mathcal A$ of $\mu m_*$ ablated ones, rescaled by
$1/(1-\mu)$.

Internally every network is a pair ``(W, a)`` of unit rows and *effective* output
weights, $f(x) = \sum_i a_i\sigma(w_i^\top x)$ (so $a = c/m$). Because inputs are
$\mathcal N(0, I_d)$, all population quantities are closed forms in the ReLU
(arc-cosine) kernel $K(w, v) = E_x[\sigma(w\cdot x)\sigma(v\cdot x)]$
(:func:`transferkit.kernels.relu_kernel`, paper 000, Eq. 150), e.g. the population
risk

$$\mathcal R = E_x (f - f_*)^2 = a^\top K(W, W) a - 2 a^\top K(W, W_*) a_*
   + a_*^\top K(W_*, W_*) a_*,$$

which this module evaluates without sampling, with an analytic gradient: for any
$w, v$ at angle $t$,

$$\nabla_w K(w, v) = \frac{\|v\|\sin t}{2\pi}\,\hat w + \frac{\pi - t}{2\pi}\,v,$$

smooth at parallel and antiparallel pairs: :func:`population_risk_grad` uses it in
closed form, and :func:`relu_kernel_torch` (the torch kernel, shared with
:mod:`transferkit.lazy_rich`) as its backward pass, so that autograd through
:func:`population_risk` is exact and finite as well.

Training functions are torch (float64, :func:`transferkit.models.default_device`) and
batched over a leading "seed" dimension ``S``: ``W`` is ``(S, m, d)``, ``c`` is ``(S, m)``.
Gradient descent uses a per-seed backtracking (Armijo) step size that grows by 1.2
after every accepted step, i.e. the largest stable step, instead of the paper's fixed
learning rate $0.01\,m$; it stops at a relative loss tolerance.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ._validate import check_int, check_positive
from .kernels import check_rows, relu_kernel
from .models import default_device

__all__ = ["Teacher", "make_teachers", "ablate", "unit_rows", "relu_kernel_torch",
           "population_risk", "population_risk_grad", "population_risk_tangent_grad", "sample_risk", "train_population", "train_samples",
           "linear_transfer_risk", "rkhs_norms", "gram", "kernel_distance", "fit_power_law",
           "least_squares_factor", "anchored_experiment", "tile_teacher", "repeat_teacher",
           "random_sphere"]

TWO_PI = 2 * math.pi


# ---------------------------------------------------------------------------
# teachers
# ---------------------------------------------------------------------------

@dataclass
class Teacher:
    """Batched teachers $f(x) = \\sum_i a_i\\,\\sigma(w_i\\cdot x)$: ``W (S, k, d)``, ``a (S, k)``."""
    W: np.ndarray
    a: np.ndarray


def random_sphere(shape, rng) -> np.ndarray:
    """Rows uniform on the unit sphere, ``shape = (..., d)``."""
    Z = rng.standard_normal(shape)
    return Z / np.linalg.norm(Z, axis=-1, keepdims=True)


def unit_rows(W):
    """Rows of ``W`` (numpy or torch) scaled to unit norm."""
    if isinstance(W, torch.Tensor):
        return W / W.norm(dim=-1, keepdim=True)
    return W / np.linalg.norm(W, axis=-1, keepdims=True)


def make_teachers(seeds: int, m_star: int, d: int, rng) -> Teacher:
    r"""``seeds`` target teachers (paper 000, Eq. 17): $m_*$ units uniform on
    $\mathbb S^{d-1}$, output weights $c_i^*\sim\mathcal N(0, 1)$ (our choice: the paper
    does not state their law), effective weights $a^* = c^*/m_*$."""
    seeds = check_int("seeds", seeds, 1)
    m_star = check_int("m_star", m_star, 1)
    d = check_int("d", d, 1)
    W = random_sphere((seeds, m_star, d), rng)
    c = rng.standard_normal((seeds, m_star))
    return Teacher(W, c / m_star)


def ablate(target: Teacher, mu: float, rng) -> tuple[Teacher, np.ndarray]:
    r"""Source teacher of paper 000, Eq. 16: a uniformly random set $\mathcal A$ of
    $\mu m_*$ units (rounded to the nearest integer) gets output weight 0 and the others are
    rescaled by $m_*/|\mathcal A^c|$ (i.e. $1/(1-\mu)$). Returns the source (same units,
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

    $$\nabla_w K(w_i, v_j) = \|v_j\| S_{ij}\,\hat w_i + Q_{ij}\,v_j .$$

    Cosines are clipped to $[-1, 1]$ and those within $10^{-15}$ of $\pm1$ rounded to
    $\pm1$ (exact limits at parallel and antiparallel rows, as
    :func:`transferkit.kernels.relu_kernel`); a zero row has cosine 0 and a zero row of
    ``K``.
    """
    nw = W.norm(dim=-1)
    nv = V.norm(dim=-1)
    denom = (nw[..., :, None] * nv[..., None, :])
    dots = W @ V.transpose(-1, -2)
    u = torch.where(denom > 0, dots / torch.where(denom > 0, denom, torch.ones_like(denom)),
                    torch.zeros_like(dots)).clamp(-1.0, 1.0)
    u = torch.where(u.abs() >= 1.0 - 1e-15, torch.sign(u), u)  # exact at (anti)parallel
    t = torch.arccos(u)
    s = torch.sqrt((1.0 - u * u).clamp(min=0.0))
    K = denom * (s + (math.pi - t) * u).clamp(min=0.0) / TWO_PI
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

    $$K_{ij} = E_{x\sim\mathcal N(0, I_d)}[\sigma(w_i\cdot x)\sigma(v_j\cdot x)]
      = \frac{\|w_i\|\|v_j\|}{2\pi}\big(\sin t_{ij} + (\pi - t_{ij})\cos t_{ij}\big)$$

    (paper 000, Eq. 150; the torch twin of :func:`transferkit.kernels.relu_kernel`). The
    backward pass is the analytic gradient
    $\nabla_w K(w, v) = \frac{\|v\|\sin t}{2\pi}\hat w + \frac{\pi - t}{2\pi}v$, finite
    also at parallel rows ($t = 0$), where autograd through ``arccos`` would give NaN; at
    a zero row it takes $\hat w = 0$.
    """
    return _ReluKernel.apply(W, V)


def _quad(x, K, y):
    return torch.einsum("si,sij,sj->s", x, K, y)


def population_risk(W, a, Wt, at, cross_t=None):
    r"""Exact population risk $E_{x\sim\mathcal N(0,I)}(f(x) - f_*(x))^2$ of
    $f = \sum_i a_i\sigma(w_i\cdot x)$ against $f_* = \sum_j a^*_j\sigma(w^*_j\cdot x)$
    (paper 000, Eqs. 149-150),

    $$\mathcal R = a^\top K(W, W)\,a - 2a^\top K(W, W_*)\,a_* + a_*^\top K(W_*, W_*)\,a_*,$$

    batched torch tensors ``W (S, m, d)``, ``a (S, m)``, ``Wt (S, k, d)``, ``at (S, k)``;
    returns ``(S,)``, clipped at 0 (it is $\ge 0$ up to rounding). ``cross_t`` is the last
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

    $$\partial_{a}\mathcal R = 2(K_{WW}a - K_{WW_*}a_*),\qquad
      \nabla_{w_i}\mathcal R = 2a_i\Big[\sum_j a_j\nabla_w K(w_i, w_j)
      - \sum_j a^*_j\nabla_w K(w_i, w^*_j)\Big]$$

    with $\nabla_w K(w, v) = \frac{\|v\|\sin t}{2\pi}\hat w + \frac{\pi - t}{2\pi}v$."""
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
    Kww, Qww = _sphere_parts(W, W)
    Kwt, Qwt = _sphere_parts(W, Wt)
    Ka = torch.einsum("sij,sj->si", Kww, a)
    Kt = torch.einsum("sij,sj->si", Kwt, at)
    risk = torch.einsum("si,si->s", a, Ka) - 2 * torch.einsum("si,si->s", a, Kt) + cross_t
    ga = 2 * (Ka - Kt)
    lin = Qww.mul_(a[:, None, :]) @ W - Qwt.mul_(at[:, None, :]) @ Wt
    gW = 2 * a[..., None] * lin
    return risk, ga, _tangent(W, gW)


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


def _descend(loss_grad, W, c, m, lr, tol, max_steps, record_every, grow=1.2,
             max_time=math.inf, max_step=math.inf):
    r"""Riemannian gradient descent on (c, W in sphere^m) with Armijo backtracking.

    ``loss_grad(W, c) -> (loss (S,), g_c (S, m), g_W (S, m, d))``.  Step ``h`` (per seed)
    in units of the mean-field time: ``c -= h m g_c``, ``W -= h m g_W`` (so the paper's
    fixed step is ``h = 0.01``). Accepted steps multiply ``h`` by ``grow`` (up to
    ``max_step``, which keeps the iteration close to the gradient flow), rejected ones
    halve it. Stops a seed when its loss is below ``tol`` times its initial loss or when
    the relative decrease over the last 200 iterations is below ``tol``, or when its
    gradient-flow time $\sum h$ over accepted steps reaches ``max_time`` (the paper's
    $10^5$ steps at learning rate $0.01\,m$ are a time of $10^3$).
    """
    S = W.shape[0]
    h = torch.full((S,), min(float(lr), float(max_step)), dtype=W.dtype, device=W.device)
    loss, gc, gW = loss_grad(W, c)
    gW = _tangent(W, gW)
    loss0 = loss.clone()
    active = torch.ones(S, dtype=torch.bool, device=W.device)
    history, steps = [loss.cpu().numpy().copy()], np.zeros(S, dtype=int)
    met = torch.zeros(S, dtype=torch.bool, device=W.device)
    window = [loss.clone()]
    time_ = torch.zeros(S, dtype=W.dtype, device=W.device)
    times = [time_.cpu().numpy().copy()]
    for it in range(int(max_steps)):
        if not active.any():
            break
        was_active = active.clone()
        hm = (h * m * active)
        c_new = c - hm[:, None] * gc
        W_new = unit_rows(W - hm[:, None, None] * gW)
        loss_new, gc_new, gW_new = loss_grad(W_new, c_new)
        gW_new = _tangent(W_new, gW_new)
        sq = (gc * gc).sum(-1) + (gW * gW).sum((-1, -2))
        ok = active & torch.isfinite(loss_new) & (loss_new <= loss - 0.25 * hm * sq)
        okc = ok[:, None]
        c = torch.where(okc, c_new, c)
        W = torch.where(okc[..., None], W_new, W)
        loss = torch.where(ok, loss_new, loss)
        gc = torch.where(okc, gc_new, gc)
        gW = torch.where(okc[..., None], gW_new, gW)
        time_ = time_ + torch.where(ok, h, torch.zeros_like(h))
        active &= time_ < max_time
        h = torch.where(ok, torch.clamp(h * grow, max=max_step), torch.where(active, h * 0.5, h))
        steps += ok.cpu().numpy()
        if (it + 1) % record_every == 0:
            history.append(torch.where(was_active, loss, torch.nan).cpu().numpy())
            times.append(torch.where(was_active, time_, torch.nan).cpu().numpy())
            window.append(loss.clone())
            if len(window) > max(1, 200 // record_every):
                old = window.pop(0)
                stalled = active & ((old - loss) <= tol * old)
                met |= stalled
                active &= ~stalled
        small = active & (loss <= tol * loss0)
        met |= small
        active &= ~small
    return W, c, {"loss": loss.cpu().numpy(), "history": np.array(history),
                  "time_history": np.array(times),
                  "steps": steps, "converged": met.cpu().numpy(),
                  "loss0": loss0.cpu().numpy(), "h": h.cpu().numpy(),
                  "time": time_.cpu().numpy(),
                  "horizon": (time_ >= max_time).cpu().numpy()}


def _to_t(x, device):
    return torch.as_tensor(np.asarray(x), dtype=torch.float64, device=device)


def train_population(W0, c0, teacher: Teacher, lr: float = 1.0, tol: float = 1e-6,
                     max_steps: int = 5000, record_every: int = 10, max_time: float = math.inf,
                     max_step: float = math.inf, anchor_weight=None):
    r"""Pretrain the mean-field student $f = \frac1m\sum c_i\sigma(w_i\cdot x)$ on the exact
    population loss $E(f - f_s^*)^2$ of a teacher (paper 000, Sec. 4: "train the source
    task on the population loss, which can be computed exactly"), by Riemannian gradient
    descent on the sphere for the $w_i$ (App. D: weights on the sphere) with the
    backtracking step of :func:`_descend`.

    ``W0 (S, m, d)``, ``c0 (S, m)`` numpy; returns numpy ``W``, ``c`` and an info dict
    (``history``: loss every ``record_every`` iterations, NaN once a seed has stopped;
    ``time_history``: the gradient-flow time at those points; ``steps``: accepted
    steps; ``converged``: stopped by the tolerance; ``horizon``: stopped at ``max_time``).

    ``anchor_weight`` :math:`\lambda` (a number >= 0 or one per seed, ``(S,)``): add the
    penalty of paper 000, App. E (Fig. 9),
    $\lambda\sum_{i=1}^m\|w_i - w_i^{(0)}\|^2$ with $w_i^{(0)}$ the initial units, which
    keeps the features near their random start (lazy as $\lambda\to\infty$). The info dict
    then also holds ``risk`` (the population risk alone) and ``anchor_dist``
    ($\sum_i\|w_i - w_i^{(0)}\|^2$), both at the end; ``loss`` is risk plus penalty.
    """
    W0 = check_rows("W0", W0)
    dev = default_device()
    W = unit_rows(_to_t(W0, dev))
    c = _to_t(c0, dev)
    m = W.shape[-2]
    Wt, at = _to_t(teacher.W, dev), _to_t(teacher.a, dev)
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

    W, c, info = _descend(lg, W, c, m, lr, tol, max_steps, record_every, max_time=max_time,
                          max_step=max_step)
    info["teacher_norm"] = cross.cpu().numpy()
    if lam is not None:
        dW = W - Wa
        info["anchor_dist"] = (dW * dW).sum((-1, -2)).cpu().numpy()
        info["risk"] = population_risk(W, c / m, Wt, at, cross).cpu().numpy()
    return W.cpu().numpy(), c.cpu().numpy(), info


def train_samples(W0, c0, X, y, lr: float = 1.0, tol: float = 1e-6, max_steps: int = 5000,
                  record_every: int = 10, max_time: float = math.inf,
                  max_step: float = math.inf):
    r"""Scratch training on ``n`` samples: gradient descent on the empirical loss
    $\frac1n\sum_\mu (f(x_\mu) - y_\mu)^2$ of the mean-field student (both layers,
    $w_i$ on the sphere), batched over seeds: ``X (S, n, d)``, ``y (S, n)``."""
    dev = default_device()
    W = unit_rows(_to_t(W0, dev))
    c = _to_t(c0, dev)
    X, y = _to_t(X, dev), _to_t(y, dev)
    m = W.shape[-2]

    def lg(W, c):
        W = W.detach().requires_grad_(True)
        c = c.detach().requires_grad_(True)
        r = ((torch.relu(X @ W.transpose(-1, -2)) @ c[..., None])[..., 0] / m - y)
        loss = (r * r).mean(-1)
        gW, gc = torch.autograd.grad(loss.sum(), (W, c))
        return loss.detach(), gc, gW

    W, c, info = _descend(lg, W, c, m, lr, tol, max_steps, record_every, max_time=max_time,
                          max_step=max_step)
    return W.cpu().numpy(), c.cpu().numpy(), info


# ---------------------------------------------------------------------------
# evaluation: risks, linear transfer, RKHS projections (numpy)
# ---------------------------------------------------------------------------

def risk_np(W, a, teacher: Teacher) -> np.ndarray:
    """Exact population risk ``(S,)`` of batched students ``(W, a)`` (numpy)."""
    Kww = relu_kernel(W, W)
    Kwt = relu_kernel(W, teacher.W)
    Ktt = relu_kernel(teacher.W, teacher.W)
    return (np.einsum("si,sij,sj->s", a, Kww, a) - 2 * np.einsum("si,sij,sj->s", a, Kwt, teacher.a)
            + np.einsum("si,sij,sj->s", teacher.a, Ktt, teacher.a))


def teacher_norm(teacher: Teacher) -> np.ndarray:
    r"""$\|f_*\|^2_{L_2} = a_*^\top K(W_*, W_*) a_*$ ``(S,)`` (paper 000, Eq. 156, first term)."""
    return np.einsum("si,sij,sj->s", teacher.a, relu_kernel(teacher.W, teacher.W), teacher.a)


def teacher_mean(teacher: Teacher) -> np.ndarray:
    r"""$E_x f_*(x) = \sum_i a_i\|w_i\|/\sqrt{2\pi}$ ``(S,)``."""
    return np.einsum(
        "si,si->s", teacher.a, np.linalg.norm(teacher.W, axis=-1)) / np.sqrt(2 * np.pi)


def linear_transfer_risk(W, X, teacher: Teacher, rcond: float = 1e-10) -> np.ndarray:
    r"""Linear transfer (paper 000, Eq. 18): freeze the pretrained units ``W (S, m, d)``,
    fit the readout by minimum-norm least squares on the noiseless target sample
    ``X (S, n, d)`` (kernel interpolation with $k(x, x') = \frac1m\sum_i
    \sigma(w_i\cdot x)\sigma(w_i\cdot x')$; the min-norm readout is the limit of gradient
    flow from zero), and return its exact population risk ``(S,)``."""
    W = check_rows("W", W)
    X = check_rows("X", X)
    Phi = np.maximum(X @ np.swapaxes(W, -1, -2), 0.0)          # (S, n, m)
    y = np.einsum("snk,sk->sn", np.maximum(X @ np.swapaxes(teacher.W, -1, -2), 0.0), teacher.a)
    a = np.stack([np.linalg.lstsq(P, yy, rcond=rcond * max(P.shape))[0] for P, yy in zip(Phi, y)])
    return risk_np(W, a, teacher)


def rkhs_norms(W, teacher: Teacher, rcond: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    r"""In- and out-of-RKHS parts of a teacher w.r.t. the span of the units ``W (S, m, d)``
    (paper 000, App. C, Eqs. 151-156):

    $$\|P_\parallel f_*\|^2 = b^\top K^{+} b,\quad b = K(W, W_*)a_*,\qquad
      \|P_\perp f_*\|^2 = a_*^\top K(W_*, W_*)a_* - \|P_\parallel f_*\|^2,$$

    with $K = K(W, W)$ (Eq. 151 up to the factor $1/m$, which cancels with those of
    Eqs. 153 and 155). $K$ is singular when units repeat (as after pretraining, when
    units condense onto the teacher's): $K^+$ is the pseudo-inverse that drops the
    eigenvalues below ``rcond`` times the largest. Returns ``(in, out)``, each ``(S,)``,
    ``out`` clipped at 0 (it is $\ge 0$ up to rounding).
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


def gram(W, a_or_none, X) -> np.ndarray:
    r"""Gram matrix of a network's feature kernel on inputs ``X (n, d)``:
    $k(x, x') = \sum_i p_i\,\sigma(w_i\cdot x)\sigma(w_i\cdot x')$ with weights
    ``p = a_or_none`` (``None``: $1/m$, the model's kernel of Sec. 4)."""
    F = np.maximum(X @ W.T, 0.0)
    p = np.full(W.shape[0], 1.0 / W.shape[0]) if a_or_none is None else a_or_none
    return (F * p) @ F.T


def kernel_distance(A, B) -> float:
    r"""Relative Frobenius distance $\|A - B\|_F / \|B\|_F$ of two Gram matrices."""
    return float(np.linalg.norm(A - B) / np.linalg.norm(B))


def least_squares_factor(n, m):
    r"""Risk of least squares on ``m`` features over the part of the target outside their
    span, for Gaussian features (the Breiman-Freedman / inverse-Wishart identity):

    $$\frac{\mathbb E\,\mathcal R_{lt}}{\|P_\perp f_t\|^2} = 1 + \frac{m}{n-m-1}
      = \frac{n-1}{n-m-1}, \qquad n > m + 1,$$

    the out-of-span part acting as noise of variance $\|P_\perp f_t\|^2$ uncorrelated with
    the features. This is the $n$-dependent term $C(n)$ that paper 000 (Sec. 4, Eq. 18)
    neglects at large $n$; here it is the approximation we test against the ReLU
    features (which are not Gaussian). ``inf`` at ``n = m + 1``; ``nan`` below (the
    minimum-norm interpolant of ``n <= m`` points has no such form). Broadcasts."""
    n = np.asarray(n, dtype=float)
    m = np.asarray(m, dtype=float)
    if np.any(n < 1) or np.any(m < 1):
        raise ValueError(f"n and m must be >= 1 (got n = {n!r}, m = {m!r})")
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(n > m + 1, (n - 1) / (n - m - 1),
                       np.where(n == m + 1, np.inf, np.nan))
    return float(out) if out.ndim == 0 else out


def fit_power_law(n, R, R_se=None):
    r"""Weighted least-squares fit of $\log R = \log A - \nu\log n$; returns
    ``(A, nu, se_logA, se_nu)`` with standard errors from the residuals (or from the
    standard errors ``R_se`` of the means, by the delta method, when given)."""
    n = np.asarray(n, dtype=float)
    R = np.asarray(R, dtype=float)
    if n.shape != R.shape or n.size < 3 or np.any(n <= 0) or np.any(R <= 0):
        raise ValueError("n, R must be positive arrays of the same shape with >= 3 points")
    x, yv = np.log(n), np.log(R)
    w = np.ones_like(x) if R_se is None else 1.0 / np.maximum(np.asarray(R_se) / R, 1e-12) ** 2
    Xd = np.stack([np.ones_like(x), -x], axis=1)
    WX = Xd * w[:, None]
    cov = np.linalg.inv(Xd.T @ WX)
    beta = cov @ (WX.T @ yv)
    resid = yv - Xd @ beta
    dof = max(n.size - 2, 1)
    scale = float(resid @ (w * resid)) / dof
    if R_se is None:
        cov = cov * scale
    else:
        cov = cov * max(scale, 1.0)  # inflate when the scatter exceeds the error bars
    return float(np.exp(beta[0])), float(beta[1]), float(np.sqrt(cov[0, 0])), float(np.sqrt(cov[1, 1]))


# ---------------------------------------------------------------------------
# the experiment of Fig. 3 (paper 000)
# ---------------------------------------------------------------------------

def _targets(X, teacher_W, teacher_a):
    return np.einsum("snk,sk->sn", np.maximum(X @ np.swapaxes(teacher_W, -1, -2), 0.0),
                     teacher_a)


def fig3_experiment(d: int, m: int, m_star: int, mus, ns, teachers: int = 1,
                    draws: int = 4, scratch_seeds: int = 2, readout_init: float = 1e-7,
                    lr: float = 1.0, tol: float = 1e-6, pretrain_steps: int = 3000,
                    scratch_steps: int = 3000, max_time: float = 1000.0, max_step: float = 1.0,
                    gram_points: int = 60, seed: int = 0,
                    progress: bool | None = None) -> dict:
    r"""Everything Fig. 3 of paper 000 plots, from exact population formulas where they
    exist and from training where they do not:

    * ``teachers`` target teachers (Eq. 17) and, for every $\mu$ in ``mus``, the source
      of Eq. 16; a student with $m$ units on the sphere and readout ``readout_init``
      pretrained on each source's population loss (:func:`train_population`);
    * (a, b) the Gram matrices, on ``gram_points`` Gaussian inputs, of the pretrained
      kernel $\frac1m\sum_i\sigma(w_i\cdot x)\sigma(w_i\cdot x')$ and of the source
      teacher's $\frac1{(1-\mu)m_*}\sum_{i\in\mathcal A^c}\sigma(w^*_i\cdot x)
      \sigma(w^*_i\cdot x')$ (first teacher, each $\mu$), with their relative distance;
    * (c) scratch training (:func:`train_samples`) on $n$ target samples for every $n$ in
      ``ns``: ``teachers x scratch_seeds`` runs (each with its own data and
      initialisation) and their exact population risks;
    * (d) $\|P_\perp f_t\|^2/\|f_t\|^2$ for the pretrained units (simulation) and for the
      source teacher's kept units (the limit in which the kernel has sparsified exactly);
    * (e) linear-transfer risks (:func:`linear_transfer_risk`) on ``draws`` target sets per
      $(\mu, n)$ and teacher.

    Training stops at the relative tolerance ``tol``, at ``pretrain_steps`` /
    ``scratch_steps`` iterations, or at gradient-flow time ``max_time`` (default
    $10^3$: the paper's $10^5$ steps at learning rate $0.01\,m$, App. D), whichever
    comes first; the step size is capped at ``max_step`` (default 1: 100 times the
    paper's, below the curvature bound of the readout, about 6). All risks are exact population risks (no test sample). Returns a dict
    of arrays.
    """
    from .config import progress as _progress
    d, m, m_star = check_int("d", d, 1), check_int("m", m, 1), check_int("m_star", m_star, 1)
    mus = np.asarray(mus, dtype=float)
    ns = np.asarray(ns, dtype=int)
    rng = np.random.default_rng(seed)
    T = make_teachers(teachers, m_star, d, rng)
    tn = teacher_norm(T)                                       # (teachers,)
    # sources for every (mu, teacher), stacked on the seed axis: index = i_mu * teachers + t
    srcs, keeps = zip(*(ablate(T, mu, rng) for mu in mus))
    SW = np.concatenate([s.W for s in srcs])
    Sa = np.concatenate([s.a for s in srcs])
    keep = np.concatenate(keeps)
    source = Teacher(SW, Sa)
    W0 = random_sphere((len(mus) * teachers, m, d), rng)
    c0 = np.full((len(mus) * teachers, m), float(readout_init))
    Wp, cp, pinfo = train_population(W0, c0, source, lr=lr, tol=tol, max_steps=pretrain_steps,
                                     max_time=max_time, max_step=max_step)
    TT = tile_teacher(T, len(mus))
    _, out_sim = rkhs_norms(Wp, TT)
    kept_units = np.where(keep[..., None], SW, 0.0)            # zero rows drop out of the span
    _, out_th = rkhs_norms(kept_units, TT)
    _, out_src = rkhs_norms(Wp, source)                         # how well pretraining spans f_s
    _, out_init = rkhs_norms(W0, TT)                            # random initial units
    shape = (len(mus), teachers)
    # Gram matrices (first teacher)
    Xg = rng.standard_normal((gram_points, d))
    grams = []
    for i in range(len(mus)):
        k = i * teachers
        G_model = gram(Wp[k], None, Xg)
        G_src = gram(SW[k][keep[k]], np.full(keep[k].sum(), 1.0 / keep[k].sum()), Xg)
        grams.append((G_model, G_src))
    G_init = gram(W0[0], None, Xg)
    # linear transfer and scratch training for every n
    R_lt = np.zeros((len(mus), len(ns), teachers, draws))
    R_sc = np.zeros((len(ns), teachers, scratch_seeds))
    sc_info = []
    it = ns
    if _progress(progress):
        from tqdm.auto import tqdm
        it = tqdm(ns, desc="n")
    Trep = repeat_teacher(T, draws)
    Ts = repeat_teacher(T, scratch_seeds)
    for j, n in enumerate(it):
        X = rng.standard_normal((len(mus), teachers, draws, n, d))
        for i in range(len(mus)):
            Wrep = np.repeat(Wp[i * teachers:(i + 1) * teachers, None], draws, 1)
            R_lt[i, j] = linear_transfer_risk(Wrep.reshape(-1, m, d), X[i].reshape(-1, n, d),
                                              Trep).reshape(teachers, draws)
        Xs = rng.standard_normal((teachers * scratch_seeds, n, d))
        ys = _targets(Xs, Ts.W, Ts.a)
        Ws0 = random_sphere((teachers * scratch_seeds, m, d), rng)
        cs0 = np.full((teachers * scratch_seeds, m), float(readout_init))
        Ws, cs, info = train_samples(Ws0, cs0, Xs, ys, lr=lr, tol=tol, max_steps=scratch_steps,
                                     max_time=max_time, max_step=max_step)
        R_sc[j] = risk_np(Ws, cs / m, Ts).reshape(teachers, scratch_seeds)
        info["train_loss_rel"] = info["loss"] / np.mean(ys ** 2, axis=1)
        sc_info.append(info)
    return {"d": d, "m": m, "m_star": m_star, "mus": mus, "ns": ns, "teacher_norm": tn,
            "target": T, "source": source, "seed": seed, "readout_init": readout_init,
            "lr": lr, "tol": tol, "pretrain_steps": pretrain_steps, "max_time": max_time,
            "max_step": max_step,
            "pretrain": pinfo, "pretrain_rel": (pinfo["loss"] / pinfo["teacher_norm"]).reshape(shape),
            "perp_sim": out_sim.reshape(shape) / tn, "perp_theory": out_th.reshape(shape) / tn,
            "perp_source": out_src.reshape(shape) / pinfo["teacher_norm"].reshape(shape),
            "perp_init": out_init.reshape(shape) / tn,
            "grams": grams, "gram_init": G_init,
            "gram_distance": np.array([kernel_distance(a, b) for a, b in grams]),
            "gram_init_distance": np.array([kernel_distance(G_init, b) for _, b in grams]),
            "teacher_var": tn - teacher_mean(T) ** 2,
            "R_lt": R_lt, "R_sc": R_sc,
            "scratch": sc_info}


def anchored_experiment(res: dict, lambdas, mu: float, draws: int = 8, seed: int = 1,
                        progress: bool | None = None) -> dict:
    r"""Paper 000, App. E, Fig. 9: pretraining with the penalty
    $\lambda\sum_i\|w_i - w_i^{(0)}\|^2$ (:func:`train_population` with ``anchor_weight``),
    then linear transfer, on the teachers of a :func:`fig3_experiment` result ``res``.

    For every $\lambda$ in ``lambdas`` and every target teacher of ``res``: a fresh student
    (random units on the sphere, readout ``res["readout_init"]``) is pretrained on the
    source of ablation ``mu`` (which must be one of ``res["mus"]``) with the training
    settings of ``res``; then $\|P_\perp f_t\|^2$ of its units and its linear-transfer risk
    (:func:`linear_transfer_risk`) on ``draws`` fresh target sets for every $n$ of
    ``res["ns"]``. Scratch training does not depend on $\lambda$: compare with
    ``res["R_sc"]``.

    Returns dict ``lambdas, mu, ns``, ``R_lt`` ``(len(lambdas), len(ns), teachers, draws)``,
    ``perp`` ``(len(lambdas), teachers)`` (normalised by $\|f_t\|^2$), ``anchor_dist``
    (:math:`\sum_i\|w_i-w_i^{(0)}\|^2 / m`), ``source_rel`` (pretraining source risk over
    $\|f_s\|^2$) and the pretraining ``info``.
    """
    lambdas = np.atleast_1d(np.asarray(lambdas, dtype=float))
    if lambdas.ndim != 1 or not np.all(np.isfinite(lambdas) & (lambdas >= 0)):
        raise ValueError(f"lambdas must be finite numbers >= 0 (got {lambdas!r})")
    hit = np.flatnonzero(np.isclose(res["mus"], mu))
    if hit.size != 1:
        raise ValueError(f"mu must be one of res['mus'] = {list(res['mus'])} (got {mu!r})")
    draws = check_int("draws", draws, 1)
    i = int(hit[0])
    T = res["target"]
    nt = T.W.shape[0]
    m, d = res["m"], res["d"]
    src = Teacher(res["source"].W[i * nt:(i + 1) * nt], res["source"].a[i * nt:(i + 1) * nt])
    L = len(lambdas)
    rng = np.random.default_rng([int(seed), 9])
    W0 = random_sphere((L * nt, m, d), rng)
    c0 = np.full((L * nt, m), float(res["readout_init"]))
    src_rep = tile_teacher(src, L)
    Wp, cp, info = train_population(W0, c0, src_rep, lr=res["lr"], tol=res["tol"],
                                    max_steps=res["pretrain_steps"], max_time=res["max_time"],
                                    max_step=res["max_step"],
                                    anchor_weight=np.repeat(lambdas, nt))
    T_rep = tile_teacher(T, L)
    _, perp = rkhs_norms(Wp, T_rep)
    tn = np.tile(res["teacher_norm"], L)
    ns = res["ns"]
    R_lt = np.zeros((L, len(ns), nt, draws))
    it = list(enumerate(ns))
    from .config import progress as _progress
    if _progress(progress):
        from tqdm.auto import tqdm
        it = tqdm(it, desc="n (anchored)")
    Trep = repeat_teacher(T, draws)
    for j, n in it:
        for k in range(L):          # one lambda at a time: the features are (draws, n, m)
            Wk = np.repeat(Wp[k * nt:(k + 1) * nt, None], draws, 1).reshape(-1, m, d)
            X = rng.standard_normal((nt * draws, int(n), d))
            R_lt[k, j] = linear_transfer_risk(Wk, X, Trep).reshape(nt, draws)
    return {"lambdas": lambdas, "mu": float(res["mus"][i]), "ns": ns, "R_lt": R_lt,
            "perp": (perp / tn).reshape(L, nt),
            "anchor_dist": info["anchor_dist"].reshape(L, nt) / m,
            "source_rel": (info["risk"] / info["teacher_norm"]).reshape(L, nt), "info": info}
