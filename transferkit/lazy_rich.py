r"""Between lazy and rich: transfer from two-layer ReLU networks pretrained at different init scales.

Paper 000 (Sec. 4, conclusion, App. E Fig. 9) argues that a network pretrained in the
*rich* regime sparsifies its features to those of the source task, and then transfers
badly to targets outside them, while a network pretrained in the *lazy* regime keeps its
random features and gains nothing from pretraining; somewhere in between, negative
transfer may disappear.

Model (paper 000, Sec. 4): :math:`f(x) = \frac1m\sum_{i=1}^m c_i\,\sigma(w_i^\top x)`,
:math:`\sigma = \mathrm{ReLU}`, :math:`x\sim\mathcal N(0, I_d)`; teachers of Eqs. 16-17:
a target network of :math:`m_*` neurons and a source network made of a random fraction
:math:`1-\mu` of them.

Everything population-level is exact: for Gaussian inputs the arc-cosine kernel
(Cho & Saul)

.. math::

    \kappa(w, v) = \mathbb E\,\sigma(w^\top x)\sigma(v^\top x)
    = \frac{\|w\|\|v\|}{2\pi}\bigl(\sin\varphi + (\pi-\varphi)\cos\varphi\bigr),

with :math:`\varphi` the angle between :math:`w` and :math:`v`, gives the population
risk of any network against any teacher as a quadratic form
(:func:`transferkit.relu.population_risk`, shared with Fig. 3),
so pretraining is done on the *population* source loss (as for the deep linear
networks of Sec. 3) and every risk is exact, without a test set.

Protocol (ours; paper 000 gives none for an init-scale sweep, see :func:`sweep`):
pretrain from :math:`w_i(0) = \alpha\,\hat w_i` (:math:`\hat w_i` uniform on the sphere)
and :math:`c_i(0) = 0`; gradient flow conserves :math:`c_i^2 - \|w_i\|^2 = -\alpha^2`,
so for large :math:`\alpha` the readout does all the work and the features stay at
their random initial value (lazy: the network is a random-features model), while for
small :math:`\alpha` the neurons align with the teacher's before they grow (rich).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from . import config, relu
from ._validate import check_int, check_positive
from .models import as_tensor, default_device

__all__ = ["Teachers", "TrainResult", "draw_teachers", "features", "gradient_descent",
           "pretrain", "readout_transfer", "scratch", "lazy_rich_figure", "monte_carlo_check",
           "span_floor", "sweep", "target_samples"]

_TEACHER, _INIT, _DATA, _SCRATCH, _TEST = 10, 11, 12, 13, 14


def _rng(seed, draw, purpose, n=0):
    return np.random.default_rng([int(seed), int(draw), purpose, int(n)])


# ---------------------------------------------------------------------------
# the network and its teachers (paper 000, Sec. 4, Eqs. 16-17)
# ---------------------------------------------------------------------------
#
# The arc-cosine kernel, the exact population risk and its gradient, the teachers and the
# ablated sources, and the out-of-span norm live in :mod:`transferkit.relu` (Fig. 3);
# this module adds the init-scale protocol of the sweep.

def features(W, X) -> torch.Tensor:
    r"""Hidden features :math:`\sigma(X W^\top)`, ``(B, n, m)``."""
    return torch.relu(X @ W.transpose(-1, -2))


@dataclass
class Teachers:
    """Target and source teachers, one per draw: neurons ``V`` and readouts ``b_t, b_s``."""

    V: torch.Tensor       # (B, m_*, d) unit neurons
    b_t: torch.Tensor     # (B, m_*) target readout c_*/m_*  (||f_t||_{L2} = 1)
    b_s: torch.Tensor     # (B, m_*) source readout: c_*/((1-mu) m_*) on the kept neurons, else 0
    keep: torch.Tensor    # (B, m_*) bool, the source neurons (complement of the ablated set A)


def draw_teachers(d, m_star, mu, draws, seed=0, device=None, dtype=torch.float64) -> Teachers:
    r"""Teachers of paper 000, Eqs. 16-17.

    :math:`f_t = \frac1{m_*}\sum_{i=1}^{m_*}c^*_i\sigma(w_i^{*\top}x)`,
    :math:`f_s = \frac1{(1-\mu)m_*}\sum_{i\in\mathcal A^c}c^*_i\sigma(w_i^{*\top}x)` with
    :math:`|\mathcal A| = \mu m_*` ablated neurons.  :math:`w^*_i` uniform on the sphere,
    :math:`c^*_i\sim\mathcal N(0,1)` rescaled so that :math:`\|f_t\|_{L_2} = 1` (the paper
    does not state the law of :math:`c^*`; it normalises risks by the target variance).
    """
    check_int("draws", draws, 1)
    targets, sources, keeps = [], [], []
    for b in range(draws):  # one generator per draw: draws are independent of their number
        rng = _rng(seed, b, _TEACHER)
        target = relu.make_teachers(1, m_star, d, rng)
        source, keep = relu.ablate(target, mu, rng)
        targets.append(target)
        sources.append(source.a)
        keeps.append(keep)
    W = np.concatenate([t.W for t in targets])
    a_t = np.concatenate([t.a for t in targets])
    norm = np.sqrt(relu.teacher_norm(relu.Teacher(W, a_t)))[:, None]   # ||f_t||_{L2}
    device = device or default_device()
    V = as_tensor(W, device, dtype)
    b_t = as_tensor(a_t / norm, device, dtype)
    b_s = as_tensor(np.concatenate(sources) / norm, device, dtype)
    keep = torch.as_tensor(np.concatenate(keeps), device=device)
    return Teachers(V, b_t, b_s, keep)


def target_samples(teachers: Teachers, n, sigma=0.0, seed=0):
    r""":math:`n` target samples per draw: ``X (B, n, d)`` and ``y = f_t(X) + sigma eps``."""
    check_int("n", n, 1)
    check_positive("sigma", sigma, allow_zero=True)
    B, _, d = teachers.V.shape
    Xs, es = [], []
    for b in range(B):
        rng = _rng(seed, b, _DATA, n)
        Xs.append(rng.standard_normal((n, d)))
        es.append(rng.standard_normal(n))
    X = as_tensor(np.stack(Xs), teachers.V.device, teachers.V.dtype)
    eps = as_tensor(np.stack(es), teachers.V.device, teachers.V.dtype)
    y = (features(teachers.V, X) @ teachers.b_t[..., None])[..., 0] + sigma * eps
    return X, y


# ---------------------------------------------------------------------------
# training: full-batch gradient descent with a per-instance stable step
# ---------------------------------------------------------------------------

@dataclass
class TrainResult:
    W: torch.Tensor
    c: torch.Tensor
    loss: np.ndarray
    steps: np.ndarray
    converged: np.ndarray
    stalled: np.ndarray


def gradient_descent(loss_fn, W, c, *, loss_tol=1e-6, max_steps=20_000, stall_tol=1e-4,
                     window=200, step0=1.0, grow=1.2, progress=None,
                     desc="training") -> TrainResult:
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
    W = W.detach().clone()
    c = c.detach().clone()
    B = W.shape[0]
    eta = torch.full((B,), float(step0), dtype=W.dtype, device=W.device)
    steps = torch.zeros(B, dtype=torch.int64, device=W.device)
    bar = tqdm(total=max_steps, desc=desc, disable=not config.progress(progress), leave=False)

    def value_and_grad(W, c):
        Wg, cg = W.detach().requires_grad_(True), c.detach().requires_grad_(True)
        val = loss_fn(Wg, cg)
        gW, gc = torch.autograd.grad(val.sum(), (Wg, cg))
        return val.detach(), gW, gc

    loss, gW, gc = value_and_grad(W, c)
    if not torch.isfinite(loss).all():
        raise ValueError("the initial loss is not finite")
    stalled = torch.zeros(B, dtype=torch.bool, device=W.device)
    mark = loss.clone()
    for t in range(1, max_steps + 1):
        active = (loss > loss_tol) & ~stalled
        if not active.any():
            break
        e = torch.where(active, eta, torch.zeros_like(eta))
        W_new = W - e[:, None, None] * gW
        c_new = c - e[:, None] * gc
        new, gWn, gcn = value_and_grad(W_new, c_new)
        ok = active & torch.isfinite(new) & (new < loss)
        W = torch.where(ok[:, None, None], W_new, W)
        c = torch.where(ok[:, None], c_new, c)
        gW = torch.where(ok[:, None, None], gWn, gW)
        gc = torch.where(ok[:, None], gcn, gc)
        loss = torch.where(ok, new, loss)
        eta = torch.where(ok, eta * grow, torch.where(active, eta / 2, eta))
        steps += active
        if t % window == 0:
            stalled |= active & (mark - loss <= stall_tol * mark)
            mark = loss.clone()
            bar.update(window)
    bar.close()
    conv = loss <= loss_tol
    return TrainResult(W, c, loss.cpu().numpy(), steps.cpu().numpy(), conv.cpu().numpy(),
                       (stalled & ~conv).cpu().numpy())


def _check_alphas(alphas) -> np.ndarray:
    """The init scales as a 1-d float array; ``ValueError`` unless all are finite and > 0."""
    out = np.atleast_1d(np.asarray(alphas, float))
    if out.ndim != 1 or not np.all(np.isfinite(out) & (out > 0)):
        raise ValueError(f"alphas must be finite numbers > 0 (got {alphas!r})")
    return out


def _init(d, m, draws, seed, purpose, scale, device, dtype):
    W = np.stack([relu.random_sphere((m, d), _rng(seed, b, purpose)) for b in range(draws)])
    W = as_tensor(scale * W, device, dtype)
    return W, torch.zeros(W.shape[:2], dtype=dtype, device=device)


def pretrain(teachers: Teachers, m, alphas, seed=0, loss_tol=1e-6, max_steps=20_000,
             stall_tol=1e-4, progress=None) -> tuple[TrainResult, torch.Tensor]:
    r"""Pretrain on the population source loss :math:`\frac12\mathbb E(f - f_s)^2`, all ``alphas`` at once.

    Initialisation: :math:`w_i(0) = \alpha\hat w_i`, :math:`\hat w_i` uniform on the unit
    sphere (the same :math:`\hat w` for every ``alpha``), :math:`c_i(0) = 0`.  The loss is
    exact (:func:`transferkit.relu.population_risk`) and normalised by
    :math:`\frac12\|f_s\|^2`, so ``loss_tol`` is relative.  The batch is
    ``(len(alphas) * draws)``, alpha-major.  Returns the result and the initial first layers ``(len(alphas) * draws, m, d)``.
    """
    check_int("m", m, 1)
    alphas = _check_alphas(alphas)
    T = teachers
    D, _, d = T.V.shape
    A = len(alphas)
    W_hat, c0 = _init(d, m, D, seed, _INIT, 1.0, T.V.device, T.V.dtype)
    scale = as_tensor(np.repeat(alphas, D), T.V.device, T.V.dtype)
    W0 = scale[:, None, None] * W_hat.repeat(A, 1, 1)
    c0 = c0.repeat(A, 1)
    V, b_s = T.V.repeat(A, 1, 1), T.b_s.repeat(A, 1)
    norm2 = relu.population_risk(torch.zeros_like(W0[:, :1]), c0[:, :1], V, b_s)   # ||f_s||^2

    def loss(W, c):
        return relu.population_risk(W, c / m, V, b_s, cross_t=norm2) / norm2

    res = gradient_descent(loss, W0, c0, loss_tol=loss_tol, max_steps=max_steps,
                           stall_tol=stall_tol, progress=progress, desc="pretraining")
    return res, W0


def readout_transfer(W, X, y, rcond=1e-3) -> torch.Tensor:
    r"""Linear transfer: minimum-norm least squares on the frozen features (paper 000, Eq. 9).

    Returns the effective readout :math:`a = \sigma(XW^\top)^+ y`, ``(B, m)``: the limit
    of gradient flow on the readout from zero.  Singular values of the feature matrix
    below ``rcond`` times the largest are dropped, as the rank cutoff of the deep linear
    features (:func:`~transferkit.trainers.feature_subspace`, ``rcond = 1e-3``): rich
    pretraining makes many neurons (nearly) parallel, and without a cutoff the
    pseudo-inverse would amplify those directions.  Predictions do not depend on the scale
    of :math:`W` (ReLU is positively homogeneous).
    """
    Phi = features(W, X)
    return (torch.linalg.pinv(Phi, rtol=rcond) @ y[..., None])[..., 0]


def scratch(X, y, m, seed=0, loss_tol=1e-6, max_steps=20_000, stall_tol=1e-4,
            progress=None) -> TrainResult:
    r"""The same network trained on the target sample from the paper's initialisation.

    :math:`w_i(0)` uniform on the unit sphere, :math:`c_i(0) = 0` (paper 000, App. D.2:
    output weights :math:`10^{-7}`); empirical loss :math:`\frac1{2n}\sum(f(x_i)-y_i)^2`,
    ``loss_tol`` relative to :math:`\frac1{2n}\|y\|^2`.
    """
    B, n, d = X.shape
    W0, c0 = _init(d, m, B, seed, _SCRATCH, 1.0, X.device, X.dtype)
    scale = 0.5 * y.pow(2).mean(1)

    def loss(W, c):
        f = features(W, X) @ (c / m)[..., None]
        return 0.5 * (f[..., 0] - y).pow(2).mean(1) / scale

    return gradient_descent(loss, W0, c0, loss_tol=loss_tol, max_steps=max_steps,
                            stall_tol=stall_tol, progress=progress, desc=f"scratch n={n}")


# ---------------------------------------------------------------------------
# the sweep
# ---------------------------------------------------------------------------

def sweep(d, m, m_star, mu, alphas, ns, draws=4, sigma=0.0, seed=0, loss_tol=1e-6,
          max_steps=20_000, stall_tol=1e-4, scratch_max_steps=None, device=None,
          dtype=torch.float64, progress=None) -> dict:
    r"""Transferability against the pretraining init scale :math:`\alpha` and the target size :math:`n`.

    For each draw (teachers, initial directions, target samples): pretrain at every
    ``alpha`` on the population source loss (:func:`pretrain`, all alphas and draws in one
    batch), re-fit the readout on :math:`n` target samples (linear transfer,
    :func:`readout_transfer`), and train the whole network from scratch on the same
    samples (:func:`scratch`; it does not depend on :math:`\alpha`).  All risks are exact
    population excess risks, in units of :math:`\|f_t\|^2_{L_2} = 1`.  Two references
    bracket the sweep:

    * ``lazy``: readout re-fitted on the *initial* random features
      :math:`\sigma(\hat W x)`: the :math:`\alpha\to\infty` limit, where the features do
      not move (by homogeneity the scale of :math:`W` does not matter);
    * ``source``: readout re-fitted on the source teacher's own neurons (the features a
      perfectly rich pretraining keeps, the analogue of Thm 3.4); its :math:`n\to\infty`
      risk is the out-of-span norm :math:`\|P_\perp f_t\|^2` (paper 000, App. C,
      Eq. 156), returned as ``floor``.

    Returns a dict of arrays: ``transfer`` ``(len(alphas), len(ns), draws)``, ``scratch``,
    ``lazy``, ``source`` ``(len(ns), draws)``, ``T = scratch - transfer``, ``floor``
    ``(draws,)``, ``pretrain_loss``, ``pretrain_converged``, ``pretrain_stalled``,
    ``movement`` (:math:`\|W - W_0\|_F/\|W_0\|_F`), ``span_floor`` (the out-of-span norm of
    the target for the pretrained features, :func:`span_floor`: a lower bound on every
    transfer risk), all ``(len(alphas), draws)``, ``lazy_floor`` ``(draws,)``, and
    ``scratch_converged``, ``scratch_stalled``, ``scratch_loss`` ``(len(ns), draws)``.
    ``scratch_max_steps`` is the step budget of scratch training (default ``max_steps``).
    """
    check_int("m", m, 1)
    check_int("draws", draws, 1)
    alphas = _check_alphas(alphas)
    ns = [check_int("n", n, 1) for n in np.atleast_1d(ns)]
    device = device or default_device()
    T = draw_teachers(d, m_star, mu, draws, seed, device, dtype)
    A, N = len(alphas), len(ns)
    out = {"alphas": alphas, "ns": np.array(ns), "d": d, "m": m, "m_star": m_star, "mu": mu,
           "sigma": sigma, "draws": draws,
           "transfer": np.empty((A, N, draws)), "scratch": np.empty((N, draws)),
           "lazy": np.empty((N, draws)), "source": np.empty((N, draws)),
           "scratch_converged": np.zeros((N, draws), bool),
           "scratch_stalled": np.zeros((N, draws), bool), "scratch_loss": np.empty((N, draws))}
    data = [target_samples(T, n, sigma, seed) for n in ns]
    res, W0 = pretrain(T, m, alphas, seed, loss_tol, max_steps, stall_tol, progress)
    shape = (A, draws)
    out["pretrain_loss"] = res.loss.reshape(shape)
    out["pretrain_converged"] = res.converged.reshape(shape)
    out["pretrain_stalled"] = res.stalled.reshape(shape)
    out["pretrain_steps"] = res.steps.reshape(shape)
    out["movement"] = ((res.W - W0).flatten(1).norm(dim=1)
                       / W0.flatten(1).norm(dim=1)).cpu().numpy().reshape(shape)
    V_all, b_all = T.V.repeat(A, 1, 1), T.b_t.repeat(A, 1)
    keepV = torch.where(T.keep[..., None], T.V, torch.zeros_like(T.V))  # source neurons only
    with torch.no_grad():
        for j, (X, y) in enumerate(data):
            a = readout_transfer(res.W, X.repeat(A, 1, 1), y.repeat(A, 1))
            out["transfer"][:, j] = relu.population_risk(res.W, a, V_all, b_all).cpu().numpy() \
                .reshape(shape)
            W_hat = W0[:draws] / float(alphas[0])
            out["lazy"][j] = relu.population_risk(W_hat, readout_transfer(W_hat, X, y),
                                                  T.V, T.b_t).cpu().numpy()
            a_s = readout_transfer(keepV, X, y) * T.keep
            out["source"][j] = relu.population_risk(T.V, a_s, T.V, T.b_t).cpu().numpy()
    bar = tqdm(list(enumerate(data)), desc="scratch", disable=not config.progress(progress))
    for j, (X, y) in bar:
        sc = scratch(X, y, m, seed, loss_tol, scratch_max_steps or max_steps, stall_tol,
                     progress=False)
        with torch.no_grad():
            out["scratch"][j] = relu.population_risk(sc.W, sc.c / m, T.V, T.b_t).cpu().numpy()
        out["scratch_converged"][j] = sc.converged
        out["scratch_stalled"][j] = sc.stalled
        out["scratch_loss"][j] = sc.loss
    out["T"] = out["scratch"][None] - out["transfer"]
    out["floor"] = span_floor(keepV, T.V, T.b_t)    # zero rows add nothing to the span
    out["span_floor"] = span_floor(res.W, V_all, b_all).reshape(shape)
    out["lazy_floor"] = span_floor(W0[:draws], T.V, T.b_t)
    return out


def span_floor(W, V, b, rcond=1e-10) -> np.ndarray:
    r"""Out-of-span norm :math:`\|P_\perp f_*\|^2_{L_2}` of the teacher ``(V, b)`` for the
    features of ``W`` (torch, batched), ``(B,)``.

    The smallest population risk of any readout on the neurons ``W`` (paper 000, App. C,
    Eqs. 154-156): :func:`transferkit.relu.rkhs_norms`.  Every linear-transfer risk of
    these features is at least this value, whatever the sample; zero rows of ``W`` add
    nothing to the span.
    """
    def np_(x):
        return x.detach().cpu().numpy()

    return relu.rkhs_norms(np_(W), relu.Teacher(np_(V), np_(b)), rcond=rcond)[1]


def _mean_se(x, axis=-1):
    x = np.asarray(x, float)
    return x.mean(axis), x.std(axis, ddof=1) / math.sqrt(x.shape[axis])


def lazy_rich_figure(res: dict, title: str = "Fig. 9"):
    r"""(a) Transferability against :math:`\alpha` per target size, with the lazy (dashed)
    and perfectly rich (dotted) references; (b) transfer risk of one target size beside
    the out-of-span lower bound of the pretrained features; (c) relative movement of the
    first layer during pretraining."""
    import matplotlib.pyplot as plt

    al, ns = res["alphas"], res["ns"]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4), layout="constrained")
    ax = axes[0]
    for j, n in enumerate(ns):
        c = colors[j % len(colors)]
        m, se = _mean_se(res["T"][:, j])
        ax.errorbar(al, m, yerr=se, fmt="o-", color=c, ms=4, label=f"$n = {n}$")
        ax.axhline(np.mean(res["scratch"][j] - res["lazy"][j]), color=c, ls="--", lw=0.8)
        ax.axhline(np.mean(res["scratch"][j] - res["source"][j]), color=c, ls=":", lw=0.8)
    ax.axhline(0, color="k", lw=0.8)
    top = float(np.max(res["T"].mean(-1) + _mean_se(res["T"])[1]))
    ax.set_ylim(max(ax.get_ylim()[0], -1.0), max(top, 0.0) + 0.1)
    ax.set_xscale("log")
    ax.set_xlabel(r"pretraining init scale $\alpha$ (rich $\to$ lazy)")
    ax.set_ylabel(r"transferability $\mathcal{T}$")
    ax.set_title("(a) transferability (dashed: lazy limit, dotted: source features)",
                 fontsize="small")
    ax.legend(fontsize="small")
    ax = axes[1]
    for j, n in enumerate(ns):
        m, se = _mean_se(res["transfer"][:, j])
        ax.errorbar(al, m, yerr=se, fmt="o-", color=colors[j % len(colors)], ms=4,
                    label=f"transfer, $n = {n}$")
    m, se = _mean_se(res["span_floor"])
    ax.errorbar(al, m, yerr=se, fmt="s-", color="k", ms=4,
                label=r"$\|P_\perp f_t\|^2$ of the pretrained features")
    ax.axhline(np.mean(res["floor"]), color="k", ls=":", lw=0.8,
               label=r"$\|P_\perp f_t\|^2$, source neurons")
    ax.axhline(np.mean(res["lazy_floor"]), color="k", ls="--", lw=0.8,
               label=r"$\|P_\perp f_t\|^2$, initial features")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\alpha$")
    ax.set_ylabel(r"target risk $/\|f_t\|^2$")
    ax.set_title("(b) transfer risk and its lower bound", fontsize="small")
    ax.legend(fontsize="x-small")
    ax = axes[2]
    m, se = _mean_se(res["movement"])
    ax.errorbar(al, m, yerr=se, fmt="o-", color="k", ms=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\alpha$")
    ax.set_ylabel(r"$\|W - W_0\|_F / \|W_0\|_F$")
    ax.set_title("(c) feature movement in pretraining", fontsize="small")
    fig.suptitle(title)
    return fig


def monte_carlo_check(d, m, m_star, mu, n, draws=4, seed=0, max_steps=20_000, test=20_000,
                      loss_tol=1e-6, stall_tol=1e-4) -> dict:
    r"""The exact risk (:func:`transferkit.relu.population_risk`) against a Monte Carlo test set.

    Trains the scratch networks of :func:`sweep` for one target size ``n`` and returns,
    per draw, the exact risk ``exact`` ``(draws,)`` and the squared errors on ``test``
    fresh Gaussian inputs ``sq_err`` ``(draws, test)``, whose mean estimates it.
    """
    check_int("test", test, 2)
    T = draw_teachers(d, m_star, mu, draws, seed)
    X, y = target_samples(T, n, 0.0, seed)
    sc = scratch(X, y, m, seed, loss_tol, max_steps, stall_tol, progress=False)
    Xt = as_tensor(np.stack([_rng(seed, b, _TEST, test).standard_normal((test, d))
                             for b in range(draws)]), T.V.device, T.V.dtype)
    with torch.no_grad():
        exact = relu.population_risk(sc.W, sc.c / m, T.V, T.b_t)
        sq_err = relu.sample_risk(sc.W, sc.c / m, T.V, T.b_t, Xt)
    return {"exact": exact.cpu().numpy(), "sq_err": sq_err.cpu().numpy()}
