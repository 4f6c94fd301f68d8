r"""Task similarity through infinite-width Gram matrices (paper 002, Sec. 6).

Liu et al. analyse transfer in the two-layer ReLU network of Du et al. (2019),

:math:`f_{W,a}(x) = \frac{1}{\sqrt m}\, a^\top \sigma(W^\top x),\qquad w_r(0)\sim\mathcal N(0, \kappa^2 I),\quad a_r\in\{-1, +1\}\ \text{fixed},`

with inputs on the unit sphere, trained by full-batch gradient descent on the squared
loss :math:`L(W) = \tfrac12\|y - f_{W,a}(X)\|^2`: first on the source task :math:`P` (giving
:math:`W(P)`), then fine-tuned from :math:`W(P)` on the target task :math:`Q` (giving :math:`W(Q)`).  Everything
is expressed with the Gram matrices of Sec. 6.1,

:math:`H^\infty_{ij} = \mathbb E_{w\sim\mathcal N(0, I)}\big[x_i^\top x_j\, \mathbb I\{w^\top x_i\ge0, w^\top x_j\ge0\}\big] = \frac{x_i^\top x_j\,(\pi - \arccos x_i^\top x_j)}{2\pi},`

built on :math:`P` (:math:`H_P`), on :math:`Q` (:math:`H_Q`) and across (:math:`H_{PQ}`), and with the
*transformed labels* :math:`y_{P\to Q} = H_{PQ}^\top H_P^{-1} y_P`.  Thm 1 (Eq. 1) says
that the squared gradient of the target loss at :math:`W(P)` is, to leading order,
:math:`\|y_Q - y_{P\to Q}\|^2`; Thm 2 (Eq. 2) bounds the distance travelled by fine-tuning,
:math:`\|W(Q) - W(P)\|_F \le \sqrt{(y_Q - y_{P\to Q})^\top H_Q^{-1} (y_Q - y_{P\to Q})}`
plus terms that vanish as :math:`\kappa\to0` and :math:`m\to\infty`.

This module holds the closed forms (numpy, float64) and the simulation of the wide
network (torch, batched over initialisation draws as a leading dimension; CPU, or the
GPU when present).
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import as_array, check_int, check_positive
from .relu import arccos_kernel0, check_rows

__all__ = ["check_sphere", "deviation_bound", "deviation_path", "fit_sphere_map", "gram", "label_discrepancy", "similarity", "transformed_labels"]


#: relative tolerance on row norms accepted as "on the unit sphere"
SPHERE_ATOL = 1e-6


# ---------------------------------------------------------------------- closed forms

def check_sphere(name: str, X) -> np.ndarray:
    """``X`` as float64 rows ``(..., N, d)`` of unit norm (within 1e-6), else ``ValueError``."""
    A = check_rows(name, X)
    norms = np.linalg.norm(A, axis=-1)
    if not np.all(np.abs(norms - 1.0) <= SPHERE_ATOL):
        worst = float(np.max(np.abs(norms - 1.0)))
        raise ValueError(f"{name} must have rows of unit norm (Sec. 6.1 assumes ||x|| = 1; "
                         f"largest | ||x|| - 1 | = {worst:.3g}); normalise the rows first")
    return A


def check_labels(name: str, y, n: int) -> np.ndarray:
    """``y`` as a finite float array of shape ``(n,)`` or ``(n, k)``, else ``ValueError``."""
    v = as_array(name, y)
    if v.ndim not in (1, 2) or v.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},) or ({n}, k), one label per row "
                         f"(got shape {v.shape})")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite")
    return v


def gram(X, Y=None) -> np.ndarray:
    r"""Infinite-width Gram matrix of Sec. 6.1 (paper 002), shape ``(..., N, M)``:

    :math:`H^\infty_{ij} = \mathbb E_{w\sim\mathcal N(0,I)}\big[x_i^\top y_j\, \mathbb I\{w^\top x_i\ge 0,\, w^\top y_j\ge0\}\big] = \frac{x_i^\top y_j\,(\pi - \arccos x_i^\top y_j)}{2\pi}.`

    ``gram(X_P)`` is :math:`H_P^\infty`, ``gram(X_Q)`` is :math:`H_Q^\infty` and
    ``gram(X_P, X_Q)`` is :math:`H_{PQ}^\infty`.  Rows must lie on the unit sphere (the
    paper's assumption :math:`\|x\| = 1`); the arccos is clipped (``kernels.safe_arccos``).
    It is the first-layer part of the ReLU NTK, :math:`x^\top y\,k_0(x, y)`
    (:func:`transferkit.theory.relu.arccos_kernel0`); the readout :math:`a` is not trained.
    """
    A = check_sphere("X", X)
    B = A if Y is None else check_sphere("Y", Y)
    if B.shape[-1] != A.shape[-1]:
        raise ValueError(f"Y must have the same number of columns as X "
                         f"(got d = {B.shape[-1]} and {A.shape[-1]})")
    return (A @ np.swapaxes(B, -1, -2)) * arccos_kernel0(A, B)


def _solve_spd(H: np.ndarray, b: np.ndarray, name: str) -> np.ndarray:
    try:
        c = np.linalg.cholesky(H)
    except np.linalg.LinAlgError as err:
        raise ValueError(f"{name} is not positive definite (Sec. 6.1 assumes "
                         f"lambda_min > 0): are two inputs identical?") from err
    if np.min(np.diagonal(c, axis1=-2, axis2=-1)) ** 2 <= 1e-12 * np.max(np.diagonal(H)):
        raise ValueError(f"{name} is numerically singular (Sec. 6.1 assumes lambda_min > 0): "
                         f"are two inputs identical?")
    z = np.linalg.solve(c, b)
    return np.linalg.solve(np.swapaxes(c, -1, -2), z)


def transformed_labels(XP, yP, XQ) -> np.ndarray:
    r"""Transformed labels :math:`y_{P\to Q} = H_{PQ}^{\infty\top} H_P^{\infty\,-1} y_P`
    (paper 002, Sec. 6.1), shape ``(n_Q,)`` (or ``(n_Q, k)`` for ``k`` label columns).

    The pretrained network's outputs on the target inputs, to leading order in
    :math:`\kappa` and :math:`1/m`: pretraining moves :math:`W` by :math:`Z_P H_P^{-1} y_P` (App. C, Eq. 5), and
    the target outputs move by :math:`Z_Q^\top` times that, :math:`Z_Q^\top Z_P \to H_{PQ}^\top`.
    """
    A = check_sphere("XP", XP)
    B = check_sphere("XQ", XQ)
    if A.ndim != 2 or B.ndim != 2:
        raise ValueError("XP and XQ must be 2-d arrays of rows")
    y = check_labels("yP", yP, A.shape[0])
    return gram(A, B).T @ _solve_spd(gram(A), y, "H_P")


def label_discrepancy(yQ, yPQ) -> np.ndarray:
    r""":math:`\|y_Q - y_{P\to Q}\|^2`, the task-similarity term of Thm 1 (paper 002, Eq. 1).

    Sums over the last axis of vector labels (both axes for ``(n, k)`` label matrices)."""
    a = np.asarray(yQ, dtype=np.float64)
    b = np.asarray(yPQ, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"yQ and yPQ must have the same shape (got {a.shape} and {b.shape})")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("yQ and yPQ must be finite")
    return float(np.sum((a - b) ** 2))


def deviation_bound(XQ, yQ, yPQ=None) -> float:
    r"""Leading term of Thm 2 (paper 002, Eq. 2),

    :math:`\sqrt{(y_Q - y_{P\to Q})^\top H_Q^{\infty\,-1} (y_Q - y_{P\to Q})},`

    the Frobenius distance :math:`\|W(Q) - W(P)\|_F` travelled by fine-tuning in the limit
    :math:`\kappa\to0`, :math:`m\to\infty` (App. C, Eq. 45: there it is an equality up to the
    vanishing terms).  ``yPQ=None`` means :math:`y_{P\to Q} = 0`: training from scratch,
    :math:`\sqrt{y_Q^\top H_Q^{-1} y_Q}` (Arora et al. 2019).  Label matrices ``(n, k)`` sum
    over the columns.
    """
    B = check_sphere("XQ", XQ)
    if B.ndim != 2:
        raise ValueError("XQ must be a 2-d array of rows")
    r = check_labels("yQ", yQ, B.shape[0])
    if yPQ is not None:
        r = r - check_labels("yPQ", yPQ, B.shape[0]).reshape(r.shape)
    s = _solve_spd(gram(B), r, "H_Q")
    return float(math.sqrt(max(float(np.sum(r * s)), 0.0)))


def similarity(XP, yP, XQ, yQ) -> dict:
    """Both similarity quantities of Thms 1-2 for one task pair, and the scratch baseline.

    Returns ``{"yPQ", "thm1", "thm2", "scratch", "lam_P", "lam_Q"}``: the transformed labels,
    :math:`\\|y_Q - y_{P\\to Q}\\|^2` (Eq. 1), the leading term of Eq. 2, the same with
    :math:`y_{P\\to Q} = 0`, and the smallest eigenvalues :math:`\\lambda_P, \\lambda_Q` of the Gram matrices.
    """
    yPQ = transformed_labels(XP, yP, XQ)
    return {"yPQ": yPQ, "thm1": label_discrepancy(yQ, yPQ),
            "thm2": deviation_bound(XQ, yQ, yPQ), "scratch": deviation_bound(XQ, yQ),
            "lam_P": float(np.linalg.eigvalsh(gram(XP))[0]),
            "lam_Q": float(np.linalg.eigvalsh(gram(XQ))[0])}


def deviation_path(HQ, r, eta, steps) -> np.ndarray:
    r""":math:`\|W_k - W(P)\|_F` along gradient descent in the linearised (infinite-width) model.

    With :math:`H_Q^\infty = \sum_i \lambda_i v_i v_i^\top`, the residual after :math:`k` steps is
    :math:`(I - \eta H_Q)^k r` and the weights have moved by :math:`Z_Q \sum_{j<k}\eta
    (I-\eta H_Q)^j r` (App. C, Eq. 42), whose squared norm is

    :math:`\sum_i \frac{(v_i^\top r)^2}{\lambda_i}\big(1 - (1-\eta\lambda_i)^k\big)^2,`

    rising monotonically to Eq. 2's leading term :math:`r^\top H_Q^{-1} r` (for
    :math:`0 < \eta < 2/\lambda_{\max}`).  ``r`` is :math:`y_Q - y_{P\to Q}`, ``steps`` an array of
    step counts :math:`k \ge 0`.  Returns an array shaped like ``steps``.
    """
    H = np.asarray(HQ, dtype=np.float64)
    if H.ndim != 2 or H.shape[0] != H.shape[1]:
        raise ValueError(f"HQ must be a square matrix (got shape {H.shape})")
    r = check_labels("r", r, H.shape[0])
    eta = check_positive("eta", eta)
    k = as_array("steps", steps)
    if np.any(k < 0) or not np.all(np.isfinite(k)):
        raise ValueError("steps must be finite and >= 0")
    lam, V = np.linalg.eigh(H)
    if lam[0] <= 0:
        raise ValueError("HQ must be positive definite")
    if eta >= 2 / lam[-1]:
        raise ValueError(f"eta must be in (0, 2/lambda_max) = (0, {2 / lam[-1]:.4g}) "
                         f"(got {eta!r}): gradient descent diverges")
    c2 = (V.T @ r) ** 2
    c2 = c2.sum(axis=1) if c2.ndim == 2 else c2
    decay = (1.0 - eta * lam)[:, None] ** k.reshape(-1)[None, :]
    out = np.sqrt(np.sum((c2 / lam)[:, None] * (1.0 - decay) ** 2, axis=0))
    return out.reshape(k.shape)


# ---------------------------------------------------------------------- data

def fit_sphere_map(x_ref, dim: int):
    r"""A map from images to the unit sphere of :math:`\mathbb R^{\rm dim}`: centre with the
    mean of ``x_ref``, project on its top ``dim`` principal directions, normalise.

    Returns ``f(x) -> (n, dim)`` float64 rows of unit norm.  Sec. 6.1 needs
    :math:`\|x\| = 1`; centring spreads the inputs over the sphere (raw pixels are all
    positive, so their Gram matrix is badly conditioned), and the projection makes the
    wide network cheap (the theory holds for every :math:`d`).
    """
    ref = np.asarray(x_ref, dtype=np.float64)
    if ref.ndim != 2 or ref.shape[0] < 2:
        raise ValueError(f"x_ref must be a 2-d array with at least 2 rows (got {ref.shape})")
    dim = check_int("dim", dim, 1)
    if dim > ref.shape[1]:
        raise ValueError(f"dim must be in 1..{ref.shape[1]} (got {dim})")
    mean = ref.mean(axis=0)
    _, _, vt = np.linalg.svd(ref - mean, full_matrices=False)
    basis = vt[:dim].T.copy()

    def to_sphere(x):
        z = (np.asarray(x, dtype=np.float64) - mean) @ basis
        nrm = np.linalg.norm(z, axis=1, keepdims=True)
        if np.any(nrm == 0):
            raise ValueError("x has a row equal to the reference mean: it has no direction")
        return z / nrm

    return to_sphere
