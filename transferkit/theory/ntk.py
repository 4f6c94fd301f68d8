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
from dataclasses import dataclass

import numpy as np

from .._validate import as_array, check_array, check_int, check_positive, check_rows
from .relu import arccos_kernel0

__all__ = ["SimilarityResult", "check_sphere", "deviation_bound", "deviation_path", "fit_sphere_map", "gram", "label_discrepancy", "similarity", "transformed_labels"]


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
    n = check_int("n", n, 0)
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
    try:
        np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    except ValueError:
        raise ValueError(f"Y's batch dimensions {B.shape[:-2]} must broadcast with X's "
                         f"{A.shape[:-2]}") from None
    return (A @ np.swapaxes(B, -1, -2)) * arccos_kernel0(A, B)


def _exponent(*arrays) -> int:
    """The power of two ``k`` with the largest ``|entry|`` of ``arrays`` in ``[1/2, 1)``
    after scaling by ``2**-k`` (0 when all are zero): a rescaling that is exact in floating
    point (barring underflow), for the fallbacks of the closed forms below when a result
    overflows."""
    top = max((float(np.max(np.abs(a))) for a in arrays if np.size(a)), default=0.0)
    return int(np.frexp(top)[1]) if top > 0 else 0


def _scale(x, k):
    """``x * 2**k`` (exact), ``inf`` of the right sign where it overflows, no warning."""
    with np.errstate(over="ignore", under="ignore"):
        return np.ldexp(x, k)


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

    ``XQ`` may also be a stack ``(..., n_Q, d)`` of target sets: :math:`H_P^{\infty\,-1} y_P`
    is then solved once for all of them, and each set's labels are those of its own call
    (the same numbers), stacked ``(..., n_Q)`` (or ``(..., n_Q, k)``).
    """
    A = check_sphere("XP", XP)
    B = check_sphere("XQ", XQ)
    if A.ndim != 2:
        raise ValueError(f"XP must be a 2-d array of rows (got shape {A.shape})")
    if B.shape[-1] != A.shape[1]:
        raise ValueError(f"XQ must have the same number of columns as XP "
                         f"(got d = {B.shape[-1]} and {A.shape[1]})")
    y = check_labels("yP", yP, A.shape[0])
    HP = gram(A)
    sets = B.reshape((-1,) + B.shape[-2:])

    def labels(y):
        sol = _solve_spd(HP, y, "H_P")
        return np.stack([gram(A, Bi).T @ sol for Bi in sets])

    with np.errstate(over="ignore", invalid="ignore"):
        out = labels(y)
    if not np.all(np.isfinite(out)):  # huge labels: solve for y / 2**k, scale back exactly
        k = _exponent(y)
        out = _scale(labels(np.ldexp(y, -k)), k)
    return out.reshape(B.shape[:-2] + out.shape[1:])


def label_discrepancy(yQ, yPQ) -> float:
    r""":math:`\|y_Q - y_{P\to Q}\|^2`, the task-similarity term of Thm 1 (paper 002, Eq. 1).

    Sums over the last axis of vector labels (both axes for ``(n, k)`` label matrices).
    Both must be finite; a sum beyond the float range is ``inf``."""
    a = check_array("yQ", yQ, 0)
    b = check_array("yPQ", yPQ, 0)
    if a.shape != b.shape:
        raise ValueError(f"yQ and yPQ must have the same shape (got {a.shape} and {b.shape})")
    with np.errstate(over="ignore"):
        return float(np.sum((a - b) ** 2))


def deviation_bound(XQ, yQ, yPQ=None) -> float:
    r"""Leading term of Thm 2 (paper 002, Eq. 2),

    :math:`\sqrt{(y_Q - y_{P\to Q})^\top H_Q^{\infty\,-1} (y_Q - y_{P\to Q})},`

    the Frobenius distance :math:`\|W(Q) - W(P)\|_F` travelled by fine-tuning in the limit
    :math:`\kappa\to0`, :math:`m\to\infty` (App. C, Eq. 45: there it is an equality up to the
    vanishing terms).  ``yPQ=None`` means :math:`y_{P\to Q} = 0`: training from scratch,
    :math:`\sqrt{y_Q^\top H_Q^{-1} y_Q}` (Arora et al. 2019).  Label matrices ``(n, k)`` sum
    over the columns.  A value beyond the float range is ``inf``.
    """
    B = check_sphere("XQ", XQ)
    if B.ndim != 2:
        raise ValueError("XQ must be a 2-d array of rows")
    y = check_labels("yQ", yQ, B.shape[0])
    b = np.zeros_like(y)
    if yPQ is not None:
        b = check_labels("yPQ", yPQ, B.shape[0])
        if b.size != y.size:
            raise ValueError(f"yPQ must have the shape of yQ (got {b.shape} and {y.shape})")
        b = b.reshape(y.shape)
    H = gram(B)
    with np.errstate(over="ignore", invalid="ignore"):
        r = y - b if yPQ is not None else y
        q = float(np.sum(r * _solve_spd(H, r, "H_Q")))
    if math.isfinite(q):
        return float(math.sqrt(max(q, 0.0)))
    # huge labels: the quadratic form of (y - b) / 2**k, scaled back exactly
    k = _exponent(y, b)
    r = np.ldexp(y, -k) - np.ldexp(b, -k)
    q = float(np.sum(r * _solve_spd(H, r, "H_Q")))
    return float(_scale(math.sqrt(max(q, 0.0)), k))


@dataclass(frozen=True)
class SimilarityResult:
    r"""The result of :func:`similarity`: the task-similarity quantities of Thms 1-2 (paper 002,
    Sec. 6) for one pair of tasks :math:`P \to Q`.

    Attributes
    ----------
    yPQ : ndarray, shape (n_Q,) or (n_Q, k)
        The transformed labels :math:`y_{P\to Q} = H_{PQ}^{\infty\top} H_P^{\infty\,-1} y_P`
        (Sec. 6.1, :func:`transformed_labels`).
    thm1 : float
        :math:`\|y_Q - y_{P\to Q}\|^2`, the task-similarity term of Thm 1 (Eq. 1,
        :func:`label_discrepancy`).
    thm2 : float
        The leading term of Thm 2 (Eq. 2), :math:`\sqrt{(y_Q - y_{P\to Q})^\top
        H_Q^{\infty\,-1} (y_Q - y_{P\to Q})}` (:func:`deviation_bound`).
    scratch : float
        The same with :math:`y_{P\to Q} = 0`: training from scratch, :math:`\sqrt{y_Q^\top
        H_Q^{\infty\,-1} y_Q}`.
    lam_P, lam_Q : float
        The smallest eigenvalues :math:`\lambda_{\min}` of :math:`H_P^\infty` and
        :math:`H_Q^\infty` (Sec. 6.1 assumes both positive).
    """

    yPQ: np.ndarray
    thm1: float
    thm2: float
    scratch: float
    lam_P: float
    lam_Q: float


def similarity(XP, yP, XQ, yQ) -> SimilarityResult:
    """Both similarity quantities of Thms 1-2 for one task pair, and the scratch baseline
    (paper 002, Eqs. 1-2).

    Returns a :class:`SimilarityResult`: the transformed labels,
    :math:`\\|y_Q - y_{P\\to Q}\\|^2` (Eq. 1), the leading term of Eq. 2, the same with
    :math:`y_{P\\to Q} = 0`, and the smallest eigenvalues :math:`\\lambda_P, \\lambda_Q` of the Gram matrices.
    Values beyond the float range are ``inf``.
    """
    yPQ = transformed_labels(XP, yP, XQ)
    if np.all(np.isfinite(yPQ)):
        return _similarity(XP, XQ, yQ, yPQ)
    # huge labels: every quantity is homogeneous in (yP, yQ); compute them at 2**-k times the
    # labels (an exact rescaling) and scale back, inf where the result leaves the float range
    y_P = check_labels("yP", yP, np.shape(XP)[0])
    y_Q = check_labels("yQ", yQ, yPQ.shape[0])
    k = _exponent(y_P, y_Q)
    s = _similarity(XP, XQ, np.ldexp(y_Q, -k), transformed_labels(XP, np.ldexp(y_P, -k), XQ))
    return SimilarityResult(yPQ=_scale(s.yPQ, k), thm1=float(_scale(s.thm1, 2 * k)),
                            thm2=float(_scale(s.thm2, k)), scratch=float(_scale(s.scratch, k)),
                            lam_P=s.lam_P, lam_Q=s.lam_Q)


def _similarity(XP, XQ, yQ, yPQ) -> SimilarityResult:
    return SimilarityResult(
        yPQ=yPQ, thm1=label_discrepancy(yQ, yPQ), thm2=deviation_bound(XQ, yQ, yPQ),
        scratch=deviation_bound(XQ, yQ), lam_P=float(np.linalg.eigvalsh(gram(XP))[0]),
        lam_Q=float(np.linalg.eigvalsh(gram(XQ))[0]))


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
    H = check_array("HQ", HQ, 2)
    if H.ndim != 2 or H.shape[0] != H.shape[1] or H.shape[0] < 1:
        raise ValueError(f"HQ must be a non-empty square matrix (got shape {H.shape})")
    r = check_labels("r", r, H.shape[0])
    eta = check_positive("eta", eta)
    k = as_array("steps", steps)
    if not np.all(np.isfinite(k)) or np.any(k < 0) or np.any(k != np.floor(k)):
        raise ValueError("steps must be finite whole numbers >= 0 (step counts)")
    try:
        lam, V = np.linalg.eigh(H)
    except np.linalg.LinAlgError:
        raise ValueError("HQ must be a symmetric matrix with an eigendecomposition "
                         "(LAPACK's did not converge)") from None
    if not np.all(np.isfinite(lam)) or lam[0] <= 0:
        raise ValueError("HQ must be positive definite")
    with np.errstate(over="ignore", divide="ignore"):
        eta_max = 2 / lam[-1]
    if eta >= eta_max:
        raise ValueError(f"eta must be in (0, 2/lambda_max) = (0, {eta_max:.4g}) "
                         f"(got {eta!r}): gradient descent diverges")
    with np.errstate(over="ignore", invalid="ignore"):
        c2 = (V.T @ r) ** 2
        c2 = c2.sum(axis=1) if c2.ndim == 2 else c2
        decay = (1.0 - eta * lam)[:, None] ** k.reshape(-1)[None, :]
        out = np.sqrt(np.sum((c2 / lam)[:, None] * (1.0 - decay) ** 2, axis=0))
    if not np.all(np.isfinite(out)):
        # huge residuals or tiny eigenvalues: the same sum as a norm of terms scaled to at
        # most 1 (r by 2**-e, exactly), inf only where the result leaves the float range
        e = _exponent(r)
        c = (V.T @ np.ldexp(r, -e)) ** 2
        c = c.sum(axis=1) if c.ndim == 2 else c
        t = (np.sqrt(c) / np.sqrt(lam))[:, None] * (1.0 - np.clip(decay, -1.0, 1.0))
        top = np.max(np.abs(t), axis=0)
        safe = np.where(top > 0, top, 1.0)
        out = _scale(top * np.sqrt(np.sum((t / safe) ** 2, axis=0)), e)
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
    ref = check_array("x_ref", x_ref, 2)
    if ref.ndim != 2 or ref.shape[0] < 2:
        raise ValueError(f"x_ref must be a 2-d array with at least 2 rows (got {ref.shape})")
    dim = check_int("dim", dim, 1)
    if dim > ref.shape[1]:
        raise ValueError(f"dim must be in 1..{ref.shape[1]} (got {dim})")
    # data beyond 1e150 are scaled by a power of two first (exact; the directions are the same)
    shift = _exponent(ref) if np.max(np.abs(ref)) > 1e150 else 0
    ref = np.ldexp(ref, -shift) if shift else ref
    mean = ref.mean(axis=0)
    _, _, vt = np.linalg.svd(ref - mean, full_matrices=False)
    basis = vt[:dim].T.copy()

    def to_sphere(x):
        xa = check_array("x", x, 2)
        if xa.ndim != 2 or xa.shape[1] != ref.shape[1]:
            raise ValueError(f"x must be a 2-d array of rows with {ref.shape[1]} columns "
                             f"(got shape {xa.shape})")
        xa = np.ldexp(xa, -shift) if shift else xa
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            z = (xa - mean) @ basis
            nrm = np.linalg.norm(z, axis=1, keepdims=True)
        bad = ~((nrm > 1e-150) & (nrm < 1e150))[:, 0]
        if np.any(bad):  # rows far from the data's scale: the same direction, rescaled
            e = np.frexp(np.maximum(np.max(np.abs(xa[bad]), axis=1), np.max(np.abs(mean))))[1]
            zb = (np.ldexp(xa[bad], -e[:, None]) - np.ldexp(mean, -e[:, None])) @ basis
            top = np.max(np.abs(zb), axis=1, keepdims=True)
            zb = zb / np.where(top > 0, top, 1.0)
            z, nrm = z.copy(), nrm.copy()
            z[bad], nrm[bad] = zb, np.linalg.norm(zb, axis=1, keepdims=True)
        if np.any(nrm == 0):
            raise ValueError("x has a row equal to the reference mean: it has no direction")
        return z / nrm

    return to_sphere
