r"""Small shallow ReLU networks for paper 003, Fig. 1c and paper 004, App. E.2.

:math:`f(x) = \sum_h a_h (\langle w_h, x\rangle)_+` (paper 003, Eq. 1), batched over a leading
dimension (draws, sample sizes, grid cells), trained by full-batch gradient descent from a
small initialisation (the rich regime) to a loss tolerance.

* :func:`teacher_pair` -- six-unit auxiliary and main teachers whose units have cosine
  :math:`\rho` and main-task weights of a given magnitude;
* :func:`train` -- gradient descent on :math:`\frac1{2n}\|f(X) - y\|^2`;
* :func:`run_sample_efficiency` -- STL against PT+FT across sample sizes (Fig. 1c);
* :func:`kmeans_inertia`, :func:`alignment_score` -- the clustering analysis of App. E.2.
"""
from __future__ import annotations

import warnings

import numpy as np
import torch

from ._validate import check_int, check_positive
from .models import default_device
from .trainers import ConvergenceWarning

__all__ = ["teacher_pair", "forward", "train", "run_sample_efficiency", "kmeans_inertia",
           "alignment_score", "hidden_representation", "loss_and_grads"]


def teacher_pair(d: int, units: int, rho: float, magnitude: float, rng: np.random.Generator):
    r"""Auxiliary and main ReLU teachers (paper 003, Sec. 1.2 and Fig. 1c).

    The auxiliary teacher has ``units`` orthonormal directions :math:`\theta_h` with
    readout 1; the main teacher has directions
    :math:`\theta'_h = \rho\theta_h + \sqrt{1-\rho^2}\,\xi_h` (:math:`\xi_h\perp\theta_h`,
    unit) and readout ``magnitude``.  Returns ``(W_aux, a_aux, W_main, a_main)``.
    """
    d, units = check_int("d", d, 2), check_int("units", units, 1)
    if not -1 <= rho <= 1:
        raise ValueError(f"rho must be in [-1, 1] (got {rho!r})")
    magnitude = check_positive("magnitude", magnitude)
    if 2 * units > d:
        raise ValueError(f"d must be >= 2 * units (got d={d}, units={units})")
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
    gW = ((r[..., None] * a[:, None, :]) * (pre > 0)).transpose(1, 2) @ X / n[:, None, None]
    return loss, gW, ga


def train(W, a, X, y, n, *, lr_scale: float = 0.5, loss_tol: float = 1e-8,
          max_steps: int = 100_000):
    r"""Full-batch gradient descent on :math:`\frac{1}{2n}\|f(X)-y\|^2`, both layers.

    ``X`` ``(B, N, d)`` and ``y`` ``(B, N)`` are zero-padded beyond ``n[b]`` samples.  The
    step is ``lr_scale`` over a bound on the curvature,
    :math:`\lambda_{\max}(X^\top X/n)\,(\|a\|^2 + \max_h\|w_h\|^2) + \|\nabla\|`, recomputed
    every step; a network stops when its loss is below ``loss_tol`` times the mean
    :math:`y^2`.  Returns ``(W, a, loss, steps, converged)``.
    """
    lr_scale, loss_tol = check_positive("lr_scale", lr_scale), check_positive("loss_tol", loss_tol)
    max_steps = check_int("max_steps", max_steps, 1)
    n = torch.as_tensor(np.asarray(n, float), device=X.device)
    lam = torch.linalg.eigvalsh(X.transpose(1, 2) @ X / n[:, None, None])[:, -1]
    scale = ((y ** 2).sum(1) / n).clamp_min(1e-300)
    steps = torch.zeros(len(W), dtype=torch.long, device=X.device)
    for _ in range(max_steps):
        loss, gW, ga = loss_and_grads(W, a, X, y, n)
        if not torch.isfinite(loss).all():
            raise FloatingPointError("ReLU network training diverged")
        active = loss > loss_tol * scale
        if not active.any():
            break
        gnorm = torch.sqrt((ga ** 2).sum(1) + (gW ** 2).sum((1, 2)))
        kappa = lam * ((a ** 2).sum(1) + (W ** 2).sum(-1).amax(-1)) + gnorm
        eta = torch.where(active, lr_scale / kappa, torch.zeros_like(kappa))
        a = a - eta[:, None] * ga
        W = W - eta[:, None, None] * gW
        steps += active.long()
    conv = ~active
    if not conv.all():
        warnings.warn(f"{int((~conv).sum())} of {len(W)} ReLU networks did not reach the loss "
                      f"tolerance in {max_steps} steps", ConvergenceWarning, stacklevel=2)
    return W, a, loss, steps, conv


def _teacher_out(theta, w, X):
    return np.maximum(X @ theta.T, 0) @ w


def run_sample_efficiency(d: int, rho: float, magnitude: float, ns, *, draws: int,
                          width: int = 32, units: int = 6, n_aux: int = 256,
                          n_test: int = 2000, alpha: float = 1e-2, gamma: float = 1e-2,
                          seed: int = 0, loss_tol: float = 1e-6, max_steps: int = 50_000,
                          pre_max_steps: int | None = None) -> dict:
    r"""STL against PT+FT on a six-unit ReLU teacher (paper 003, Fig. 1c).

    Per draw ``j`` (generator ``default_rng([seed, j])``): the teachers
    (:func:`teacher_pair`), ``n_aux`` auxiliary samples, a student initialisation of scale
    ``alpha`` (:math:`w_h\sim\mathcal N(0, \alpha^2 I/d)`, :math:`a_h\sim\mathcal N(0,\alpha^2)`)
    and a test set; per sample size ``n`` (``default_rng([seed, j, n])``) the main-task
    samples.  **STL** trains from the initialisation on the main task; **PT+FT** pretrains on
    the auxiliary task, resets the readout to ``gamma`` and trains both layers on the main
    task.  Pretraining (one network per draw) may run for ``pre_max_steps`` (default
    ``5 * max_steps``).  Returns test errors normalised by the teacher's output variance, ``(len(ns),
    draws)``, and the trained weights.
    """
    dev = default_device()
    ns = [check_int("n", v, 1) for v in ns]
    draws = check_int("draws", draws, 1)
    teachers, Xa, ya, inits, Xt, yt = [], [], [], [], [], []
    for j in range(draws):
        rng = np.random.default_rng([seed, j])
        T = teacher_pair(d, units, rho, magnitude, rng)
        teachers.append(T)
        xa = rng.standard_normal((n_aux, d))
        Xa.append(xa)
        ya.append(_teacher_out(T[0], T[1], xa))
        inits.append((alpha * rng.standard_normal((width, d)) / np.sqrt(d),
                      alpha * rng.standard_normal(width)))
        xt = rng.standard_normal((n_test, d))
        Xt.append(xt)
        yt.append(_teacher_out(T[2], T[3], xt))
    t = lambda x: torch.tensor(np.asarray(x), dtype=torch.float64, device=dev)  # noqa: E731
    W0 = t([i[0] for i in inits])
    a0 = t([i[1] for i in inits])
    Wp, ap, _, _, pconv = train(W0.clone(), a0.clone(), t(Xa), t(ya), np.full(draws, n_aux),
                                loss_tol=loss_tol,
                                max_steps=pre_max_steps or 5 * max_steps)
    N = max(ns)
    G = len(ns) * draws
    X = np.zeros((G, N, d))
    y = np.zeros((G, N))
    nn, jj = [], []
    for i, n in enumerate(ns):
        for j in range(draws):
            rng = np.random.default_rng([seed, j, n])
            x = rng.standard_normal((n, d))
            X[i * draws + j, :n] = x
            y[i * draws + j, :n] = _teacher_out(teachers[j][2], teachers[j][3], x)
            nn.append(n)
            jj.append(j)
    jj = np.array(jj)
    Xt_t, yt_t = t(Xt), t(yt)
    var = yt_t.var(1)
    out = {"ns": np.array(ns), "rho": rho, "magnitude": magnitude, "pre_converged": pconv.cpu().numpy(),
           "teachers": teachers, "W_pre": Wp.cpu().numpy()}
    starts = {"stl": (W0[jj], a0[jj]), "ptft": (Wp[jj], torch.full_like(a0[jj], gamma))}
    for name, (Ws, as_) in starts.items():
        W, a, loss, steps, conv = train(Ws.clone(), as_.clone(), t(X), t(y), np.array(nn, float),
                                        loss_tol=loss_tol, max_steps=max_steps)
        err = ((forward(W, a, Xt_t[jj]) - yt_t[jj]) ** 2).mean(1) / var[jj]
        out[name + "_error"] = err.cpu().numpy().reshape(len(ns), draws)
        out[name + "_converged"] = conv.cpu().numpy().reshape(len(ns), draws)
        out[name + "_W"] = W.cpu().numpy().reshape(len(ns), draws, width, d)
        out[name + "_a"] = a.cpu().numpy().reshape(len(ns), draws, width)
    out["X_test"] = np.array(Xt)
    return out


# ---------------------------------------------------------------------------
# clustering analysis (paper 004, App. E.2)
# ---------------------------------------------------------------------------


def _weighted_kmeans(P, w, K, rng, iters=100):
    """Weighted Lloyd's algorithm with k-means++ seeding; returns (centres, weighted SSE)."""
    n = len(P)
    K = min(K, n)
    idx = [rng.choice(n, p=w / w.sum())]
    for _ in range(1, K):
        d2 = np.min(((P[:, None] - P[idx][None]) ** 2).sum(-1), 1) * w
        idx.append(rng.choice(n, p=d2 / d2.sum()) if d2.sum() > 0 else rng.choice(n))
    C = P[idx].copy()
    for _ in range(iters):
        lab = np.argmin(((P[:, None] - C[None]) ** 2).sum(-1), 1)
        newC = np.array([np.average(P[lab == k], 0, w[lab == k]) if np.any(w[lab == k] > 0)
                         else C[k] for k in range(K)])
        if np.allclose(newC, C, atol=1e-12):
            break
        C = newC
    sse = float((w * ((P - C[lab]) ** 2).sum(-1)).sum())
    return C, sse


def kmeans_inertia(W, a, K: int, *, restarts: int = 5, seed: int = 0):
    r"""Fraction of variance of the hidden units' directions left unexplained by ``K`` clusters.

    Paper 004, App. E.2: k-means on the normalised input weights :math:`w_h/\|w_h\|`, each
    unit weighted by :math:`|a_h|\,\|w_h\|` (its contribution to the function); the
    "inertia" is the weighted within-cluster sum of squares over the weighted total sum of
    squares about the mean.  Returns ``(inertia, centres)`` (best of ``restarts``).
    """
    W, a = np.asarray(W, float), np.asarray(a, float)
    K = check_int("K", K, 1)
    norms = np.linalg.norm(W, axis=1)
    w = np.abs(a) * norms
    keep = w > 1e-12 * max(w.max(), 1e-300)
    P, w = W[keep] / norms[keep, None], w[keep]
    total = float((w * ((P - np.average(P, 0, w)) ** 2).sum(-1)).sum())
    rng = np.random.default_rng(seed)
    best = (None, np.inf)
    for _ in range(restarts):
        C, sse = _weighted_kmeans(P, w, K, rng)
        if sse < best[1]:
            best = (C, sse)
    return (best[1] / total if total > 0 else 0.0), best[0]


def alignment_score(centres, teacher_dirs):
    r"""Mean over teacher units of the largest cosine with a cluster centre (App. E.2)."""
    C = np.asarray(centres, float)
    T = np.asarray(teacher_dirs, float)
    C = C / np.maximum(np.linalg.norm(C, axis=1, keepdims=True), 1e-300)
    T = T / np.linalg.norm(T, axis=1, keepdims=True)
    return float((T @ C.T).max(1).mean())
