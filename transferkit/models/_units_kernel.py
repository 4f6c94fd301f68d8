r"""Compiled CPU kernel of the small two-layer ReLU trainers of :mod:`transferkit.models.relu`
(:func:`~transferkit.models.relu.train_units`, :func:`~transferkit.models.relu.train_units_mtl`).

The networks of papers 003 and 004 as the book trains them (``d = 12``, 24 or 32 hidden units,
tens to a thousand samples per task) cost a few ten thousand multiply-adds per gradient step,
and run for tens of thousands of steps.  A batched torch loop then pays, at every step, the
per-operation overhead of about twenty operations (a few hundred microseconds for the whole
batch), the padding of every network's samples to the largest sample count of its batch, and
the steps of the networks that have already stopped, until enough of them have to be
compacted out.  :func:`units_descent` runs each network to its own stop, on its own samples
only, its weights in the CPU cache for all of its steps.

It performs the torch loop's operations (:func:`transferkit.models.relu._descend_units`): the
loss and gradients of :func:`~transferkit.models.relu.loss_and_grads` per task, their sum over
tasks, the step :math:`\eta = \text{lr\_scale}/\kappa` with the curvature bound :math:`\kappa`
of :func:`~transferkit.models.relu.train_units_mtl`, and the stopping rule of
:class:`~transferkit.models.descent.Descent`, checked at every step.  The two matrix products
of a step go to BLAS (``np.dot``: scipy's, on one thread), the rest are loops in sequence, so
the iterates agree with the torch loop's to rounding, and the steps taken are the same unless a
loss lands within rounding of its tolerance (``tests/models/test_relu_units.py`` holds the two
against each other).  Compiled by numba (``cache=True``: once per machine; ``nogil``: threads
of one process run disjoint networks side by side).
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["units_descent"]


@numba.njit(cache=True, error_model="numpy", nogil=True, fastmath={"reassoc", "contract"})
def _task_loss_grad(W, a, X, y, n, gW, ga, P, M):
    r"""Loss :math:`\frac{1}{2n}\|f(X)-y\|^2` of one network ``W`` ``(H, d)``, readout ``a``
    ``(H,)`` on one task's samples ``X`` ``(rows, d)``, ``y`` ``(rows,)`` (``n`` the divisor),
    with :math:`\partial_a` into ``ga`` ``(H,)`` and :math:`\partial_W` into ``gW``
    ``(H, d)`` (overwritten); ``P``, ``M`` ``(>= rows, H)`` are work space."""
    H = W.shape[0]
    rows = X.shape[0]
    pre = P[:rows]
    mask = M[:rows]
    np.dot(X, W.T, pre)                                 # w_h . x_mu
    for h in range(H):
        ga[h] = 0.0
    s = 0.0
    for i in range(rows):
        f = 0.0
        for h in range(H):
            p = pre[i, h]
            if p > 0.0:
                f += p * a[h]
        r = f - y[i]
        s += r * r
        for h in range(H):
            p = pre[i, h]
            if p > 0.0:
                ga[h] += p * r
                mask[i, h] = r * a[h]                  # r a_h where w_h . x > 0, else 0
            else:
                mask[i, h] = 0.0
    np.dot(mask.T, X, gW)
    for h in range(H):
        ga[h] = ga[h] / n
        for k in range(W.shape[1]):
            gW[h, k] = gW[h, k] / n
    return 0.5 * s / n


@numba.njit(cache=True, error_model="numpy", nogil=True, fastmath={"reassoc", "contract"})
def units_descent(W, A, X, y, rows, n, lam, tol, lr_scale, max_steps, lo, hi):
    r"""Gradient descent of networks ``lo, ..., hi-1`` (paper 004, Eq. 31; one task: the
    network of paper 003), in place on ``W`` and ``A``.

    Network :math:`b` with :math:`f_o(x) = \sum_h A_{ho}(\langle w_h, x\rangle)_+` runs, on
    :math:`L = \sum_o \frac{1}{2n_o}\|f_o(X_o) - y_o\|^2`,

    .. math::
        W \leftarrow W - \eta\,\partial_W L,\qquad A \leftarrow A - \eta\,\partial_A L,\qquad
        \eta = \frac{\text{lr\_scale}}{\sum_o \lambda_o\,(\|A_{:,o}\|^2 + \max_h\|w_h\|^2)
        + \|\nabla L\|},

    until every task's loss term is at most ``tol[b, o]`` or ``max_steps`` steps.

    Parameters
    ----------
    W : float64 array ``(B, H, d)``; A : float64 array ``(B, H, O)`` (updated in place).
    X : float64 array ``(B, O, N, d)``; y : float64 array ``(B, O, N)``.
    rows : int64 array ``(B, O)``, rows of ``X`` and ``y`` that enter (the rest are zero and
        contribute exact zeros).
    n : float64 array ``(B, O)``, the divisors :math:`n_o`.
    lam : float64 array ``(B, O)``, :math:`\lambda_{\max}(X_o^\top X_o/n_o)`.
    tol : float64 array ``(B, O)``, the loss tolerances.
    lr_scale : float; max_steps : int; lo, hi : the networks to run.

    Returns
    -------
    steps : int64 array ``(hi - lo,)``; losses : float64 array ``(hi - lo, O)``, the task
    terms at the final iterate; diverged : int, ``-1`` or the first network whose loss was not
    finite (its ``steps`` entry holds the step; later networks are not run).
    """
    H = W.shape[1]
    d = W.shape[2]
    O = A.shape[2]
    N = X.shape[2]
    steps = np.zeros(hi - lo, np.int64)
    losses = np.zeros((hi - lo, O))
    P = np.empty((N, H))
    M = np.empty((N, H))
    gWo = np.empty((H, d))
    gW = np.empty((H, d))
    gA = np.empty((O, H))
    At = np.empty((O, H))
    loss = np.empty(O)
    for b in range(lo, hi):
        Wb = W[b]
        for o in range(O):
            for h in range(H):
                At[o, h] = A[b, h, o]
        t = 0
        while True:
            for o in range(O):
                r = rows[b, o]
                loss[o] = _task_loss_grad(Wb, At[o], X[b, o, :r], y[b, o, :r], n[b, o],
                                          gWo if o else gW, gA[o], P, M)
                if o:
                    for h in range(H):
                        for k in range(d):
                            gW[h, k] += gWo[h, k]
            active = False
            for o in range(O):
                if not math.isfinite(loss[o]):
                    steps[b - lo] = t
                    losses[b - lo] = loss
                    return steps, losses, b
                if loss[o] - tol[b, o] > 0.0:
                    active = True
            if not active or t >= max_steps:
                break
            sa = 0.0
            for o in range(O):
                for h in range(H):
                    sa += gA[o, h] * gA[o, h]
            sw = 0.0
            for h in range(H):
                for k in range(d):
                    sw += gW[h, k] * gW[h, k]
            wmax = 0.0
            for h in range(H):
                q = 0.0
                for k in range(d):
                    q += Wb[h, k] * Wb[h, k]
                wmax = max(wmax, q)
            kappa = 0.0
            for o in range(O):
                q = 0.0
                for h in range(H):
                    q += At[o, h] * At[o, h]
                kappa += lam[b, o] * (q + wmax)
            eta = lr_scale / (kappa + math.sqrt(sa + sw))
            for o in range(O):
                for h in range(H):
                    At[o, h] -= eta * gA[o, h]
            for h in range(H):
                for k in range(d):
                    Wb[h, k] -= eta * gW[h, k]
            t += 1
        for o in range(O):
            for h in range(H):
                A[b, h, o] = At[o, h]
        steps[b - lo] = t
        losses[b - lo] = loss
    return steps, losses, -1
