r"""Compiled CPU kernels of the diagonal-network trainers of :mod:`transferkit.models.diagonal`.

A diagonal network of the chapter's size (paper 004 reduced: :math:`D = 50`, tens to a hundred
samples per task) costs a few thousand multiply-adds per gradient step, so a batched torch
loop is bound by Python's and torch's per-operation overhead (about 0.5 ms a step for the
whole batch), and every network waits for the slowest of its batch.

* :func:`diagonal_descent` (``train_diagonal``) and :func:`diagonal_gram_descent`
  (``train_diagonal_gram``) run each network to its own stop, its weights and samples in the
  CPU cache for all of its steps;
* the ``lockstep_*`` loops do the element-wise work of ``train_diagonal_gram`` around
  torch's matrix products (one per sample set for all the networks that use it), for large
  :math:`D`, where sharing the read of a :math:`D\times D` matrix matters more than the
  per-operation overhead.

All perform the torch loops' floating-point operations: the same step rule and update,
written once here (:func:`_step_size`, :func:`_trial`), and the stopping rule of
:class:`~transferkit.models.descent.Descent`, checked at every step.  Their sums run in
sequence (vectorised by the compiler), torch's matrix products in BLAS order, so the iterates
agree to rounding, and the steps taken are the same unless a loss lands within rounding of
its tolerance or, under the grown step, a trial step's loss within rounding of the current
one (``tests/models/test_diagonal.py`` holds them against the torch loops).  Compiled by
numba (``cache=True``: once per machine; ``nogil``: threads of one process run disjoint
networks side by side).
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["diagonal_descent", "diagonal_gram_descent", "lockstep_beta", "lockstep_gather",
           "lockstep_grad_loss", "lockstep_trial", "lockstep_accept", "lockstep_stop"]


@numba.njit(cache=True, error_model="numpy", nogil=True)
def _beta(u1, u2, out):
    r""":math:`\beta_o = w^{(2)}_{+,o}w^{(1)}_+ - w^{(2)}_{-,o}w^{(1)}_-` (paper 004, Eq. 25)
    of one network's weights ``u1`` ``(2, D)``, ``u2`` ``(2, O, D)`` into ``out`` ``(O, D)``."""
    for o in range(u2.shape[1]):
        for d in range(u2.shape[2]):
            out[o, d] = u2[0, o, d] * u1[0, d] - u2[1, o, d] * u1[1, d]


@numba.njit(cache=True, error_model="numpy", nogil=True)
def _step_size(u1, u2, g, lam, layers, rel_step, eta):
    r"""The step for one network's weights ``u1`` ``(2, D)``, ``u2`` ``(2, O, D)`` and
    gradient ``g`` ``(O, D)``: if ``eta < 0`` (not yet set, or the fixed rule)
    :math:`\min(\min(1, 50\rho)/\kappa,\ \rho/\max|g|)` with the curvature bound
    :math:`\kappa = \lambda\max_d\sum w_d^2\cdot\text{layers} + \max|g|`, else
    :math:`\min(\eta, \rho/\max|g|)`, the relative cap :math:`\rho` = ``rel_step`` on a
    grown step (``models.diagonal.train_diagonal``, ``train_diagonal_gram``)."""
    O = u2.shape[1]
    D = u2.shape[2]
    gmax = 0.0
    for o in range(O):
        for d in range(D):
            gmax = max(gmax, abs(g[o, d]))
    cap = rel_step / max(gmax, 1e-300)
    if eta >= 0.0:
        return min(eta, cap)
    wmax = 0.0
    for d in range(D):
        q = u1[0, d] * u1[0, d] + u1[1, d] * u1[1, d]
        for o in range(O):
            q += u2[0, o, d] * u2[0, o, d] + u2[1, o, d] * u2[1, o, d]
        wmax = max(wmax, q)
    return min(min(1.0, 50.0 * rel_step) / (lam * wmax * layers + gmax), cap)


@numba.njit(cache=True, error_model="numpy", nogil=True)
def _trial(u1, u2, g, eta, n1, n2):
    r"""One gradient step (paper 004, Eq. 20) from ``u1`` ``(2, D)``, ``u2`` ``(2, O, D)``
    into ``n1``, ``n2``: :math:`w^{(1)}_\pm \mp \eta\sum_o g_o w^{(2)}_{\pm,o}` and
    :math:`w^{(2)}_{\pm,o} \mp \eta\, g_o w^{(1)}_\pm` (the torch loops' operations, in
    their order)."""
    O = u2.shape[1]
    D = u2.shape[2]
    for d in range(D):
        a0 = 0.0
        a1 = 0.0
        for o in range(O):
            a0 += g[o, d] * u2[0, o, d]
            a1 += g[o, d] * u2[1, o, d]
            n2[0, o, d] = u2[0, o, d] - eta * (g[o, d] * u1[0, d])
            n2[1, o, d] = u2[1, o, d] + eta * (g[o, d] * u1[1, d])
        n1[0, d] = u1[0, d] - eta * a0
        n1[1, d] = u1[1, d] + eta * a1


@numba.njit(cache=True, error_model="numpy", nogil=True, fastmath={"reassoc", "contract"})
def diagonal_descent(w1, w2, X, y, n, rows, lam, tol, train_first, rel_step, max_steps, lo, hi):
    r"""Gradient descent of networks ``lo, ..., hi-1`` (paper 004, Eq. 8), in place on ``w1``
    and ``w2``.

    Network :math:`b` runs, with :math:`\beta_o = w^{(2)}_{+,o}w^{(1)}_+ - w^{(2)}_{-,o}w^{(1)}_-`,
    :math:`r_o = X_o\beta_o - y_o`, :math:`L = \sum_o \|r_o\|^2/(2n_o)` and
    :math:`g_o = X_o^\top r_o/n_o`,

    .. math::
        w^{(1)}_\pm \leftarrow w^{(1)}_\pm \mp \eta\textstyle\sum_o g_o w^{(2)}_{\pm,o},
        \qquad w^{(2)}_{\pm,o} \leftarrow w^{(2)}_{\pm,o} \mp \eta\, g_o w^{(1)}_\pm,

    (the first only if ``train_first``) with
    :math:`\eta = \min(\min(1, 50\rho)/\kappa,\ \rho/\max|g|)`,
    :math:`\kappa = \lambda\max_d\sum w_d^2\cdot(1 + \text{train\_first}) + \max|g|`,
    :math:`\rho` = ``rel_step``, until :math:`L \le` ``tol[b]`` or ``max_steps`` steps.

    Parameters
    ----------
    w1 : float64 array ``(B, 2, D)``; w2 : float64 array ``(B, 2, O, D)`` (updated in place).
    X : float64 array ``(B, O, N, D)``; y : float64 array ``(B, O, N)``.
    n : float64 array ``(B, O)``, the divisors :math:`n_o`.
    rows : int64 array ``(B, O)``, rows of ``X`` and ``y`` that enter (the rest are zero and
        contribute exact zeros).
    lam, tol : float64 arrays ``(B,)``, curvature constant and loss tolerance.
    train_first : bool; rel_step : float; max_steps : int; lo, hi : the networks to run.

    Returns
    -------
    steps : int64 array ``(hi - lo,)``; loss : float64 array ``(hi - lo,)`` at the final
    iterate; diverged : int, ``-1`` or the first network whose loss was not finite (its
    ``steps`` entry holds the step; later networks are not run).
    """
    O = w2.shape[2]
    D = w2.shape[3]
    steps = np.zeros(hi - lo, np.int64)
    losses = np.zeros(hi - lo)
    beta = np.empty((O, D))
    g = np.empty((O, D))
    n1 = np.empty((2, D))
    n2 = np.empty((2, O, D))
    layers = 2.0 if train_first else 1.0
    for b in range(lo, hi):
        t = 0
        while True:
            _beta(w1[b], w2[b], beta)
            loss = 0.0
            for o in range(O):
                for d in range(D):
                    g[o, d] = 0.0
                s = 0.0
                for i in range(rows[b, o]):
                    r = 0.0
                    for d in range(D):
                        r += X[b, o, i, d] * beta[o, d]
                    r -= y[b, o, i]
                    s += r * r
                    for d in range(D):
                        g[o, d] += r * X[b, o, i, d]
                loss += s / n[b, o]
                for d in range(D):
                    g[o, d] /= n[b, o]
            loss *= 0.5
            if not math.isfinite(loss):
                steps[b - lo] = t
                losses[b - lo] = loss
                return steps, losses, b
            if loss <= tol[b] or t >= max_steps:
                break
            eta = _step_size(w1[b], w2[b], g, lam[b], layers, rel_step, -1.0)
            _trial(w1[b], w2[b], g, eta, n1, n2)
            if train_first:
                w1[b] = n1
            w2[b] = n2
            t += 1
        steps[b - lo] = t
        losses[b - lo] = loss
    return steps, losses, -1



@numba.njit(cache=True, error_model="numpy", nogil=True, fastmath={"reassoc", "contract"})
def _moment_grad(u1, u2, sets, mats, offset, rows, is_gram, xty, half_yy, beta, g):
    r"""Gradient :math:`g_o = G_k\beta_o - b_k` (``k = sets[o]``) into ``g`` ``(O, D)`` and
    the loss :math:`\sum_o \tfrac12(g_o - b_k)^\top\beta_o` + ``half_yy`` of one network
    with weights ``u1`` ``(2, D)``, ``u2`` ``(2, O, D)`` (its :math:`\beta` into ``beta``).
    Set ``k`` is held in ``mats[offset[k]:]``: the Gram matrix ``(D, D)`` if ``is_gram[k]``,
    else its ``rows[k]`` samples ``(rows[k], D)``, with
    :math:`G_k\beta = X_k^\top(X_k\beta)/n_k`."""
    O = u2.shape[1]
    D = u2.shape[2]
    _beta(u1, u2, beta)
    loss = 0.0
    for o in range(O):
        k = sets[o]
        base = offset[k]
        for d in range(D):
            g[o, d] = 0.0
        if is_gram[k]:
            for e in range(D):
                be = beta[o, e]
                row = base + e * D
                for d in range(D):
                    g[o, d] += be * mats[row + d]
        else:
            for i in range(rows[k]):
                row = base + i * D
                r = 0.0
                for d in range(D):
                    r += mats[row + d] * beta[o, d]
                for d in range(D):
                    g[o, d] += r * mats[row + d]
            for d in range(D):
                g[o, d] /= rows[k]
        s = 0.0
        for d in range(D):
            g[o, d] -= xty[k, d]
            s += (g[o, d] - xty[k, d]) * beta[o, d]
        loss += s
    return 0.5 * loss + half_yy


@numba.njit(cache=True, error_model="numpy", nogil=True, fastmath={"reassoc", "contract"})
def diagonal_gram_descent(w1, w2, sets, mats, offset, rows, is_gram, xty, half_yy, lam, tol,
                          rel_step, grow, max_steps, lo, hi):
    r"""Gradient descent of :func:`transferkit.models.diagonal.train_diagonal_gram` for
    networks ``lo, ..., hi-1``, each to its own stop, in place on ``w1`` ``(B, 2, D)`` and
    ``w2`` ``(B, 2, O, D)``; task ``o`` of network ``b`` uses set ``sets[b, o]``.

    The loss and gradient from the sample moments (:func:`_moment_grad`); the step
    :math:`\eta = \min(\min(1, 50\rho)/\kappa, \rho/\max|g|)` at the first iteration (and
    at every one if ``grow <= 0``: the fixed rule, every step taken), else
    :math:`\min(\eta, \rho/\max|g|)`; with ``grow > 0`` a step is kept if it does not
    raise the loss, and :math:`\eta` is then multiplied by ``grow``, else halved
    (:func:`~transferkit.models.descent.bold_driver`).  Stops when the loss is at most
    ``tol[b]`` or after ``max_steps`` iterations.

    Returns
    -------
    steps : int64 array ``(hi - lo,)``, steps taken (accepted ones with ``grow > 0``);
    loss : float64 array ``(hi - lo,)``; diverged : int, ``-1`` or the first network whose
    loss was not finite (its ``steps`` entry holds the iteration).
    """
    O = w2.shape[2]
    D = w2.shape[3]
    steps = np.zeros(hi - lo, np.int64)
    losses = np.zeros(hi - lo)
    beta = np.empty((O, D))
    g = np.empty((O, D))
    gn = np.empty((O, D))
    n1 = np.empty((2, D))
    n2 = np.empty((2, O, D))
    for b in range(lo, hi):
        loss = _moment_grad(w1[b], w2[b], sets[b], mats, offset, rows, is_gram, xty,
                            half_yy[b], beta, g)
        eta = -1.0
        t = 0
        acc = 0
        while True:
            if not math.isfinite(loss):
                steps[b - lo] = t
                losses[b - lo] = loss
                return steps, losses, b
            if loss <= tol[b] or t >= max_steps:
                break
            eta = _step_size(w1[b], w2[b], g, lam[b], 2.0, rel_step,
                             -1.0 if grow <= 0.0 else eta)
            _trial(w1[b], w2[b], g, eta, n1, n2)
            lossn = _moment_grad(n1, n2, sets[b], mats, offset, rows, is_gram, xty,
                                 half_yy[b], beta, gn)
            t += 1
            if grow <= 0.0 or lossn <= loss:
                w1[b] = n1
                w2[b] = n2
                g, gn = gn, g
                loss = lossn
                acc += 1
                if grow > 0.0:
                    eta = eta * grow
            else:
                eta = eta * 0.5
        steps[b - lo] = acc
        losses[b - lo] = loss
    return steps, losses, -1


# ---------------------------------------------------------------------------------------
# the Gram trainer in lockstep (large D): compiled element-wise work around torch's matrix
# products, one product per sample set for all the networks that use it
# ---------------------------------------------------------------------------------------


@numba.njit(cache=True, error_model="numpy", nogil=True)
def lockstep_beta(w1, w2, act, nact, bt):
    r""":math:`\beta = w^{(2)}_+w^{(1)}_+ - w^{(2)}_-w^{(1)}_-` of the networks ``act[:nact]``
    into ``bt`` ``(B, O, D)``."""
    # written out, not _beta: through the helper numba contracts this product to a fused
    # multiply-add here, which changes the lockstep engine's rounding (and with it the grown
    # step's printed step counts) against the runs the chapter's prose reports
    O = w2.shape[2]
    D = w2.shape[3]
    for j in range(nact):
        b = act[j]
        for o in range(O):
            for d in range(D):
                bt[b, o, d] = w2[b, 0, o, d] * w1[b, 0, d] - w2[b, 1, o, d] * w1[b, 1, d]


@numba.njit(cache=True, error_model="numpy", nogil=True)
def lockstep_gather(bt, act, nact, sets, K, buf, ptr, rowidx):
    r"""Rows of ``bt`` of the active networks grouped by sample set: set ``k``'s rows are
    ``buf[ptr[k]:ptr[k + 1]]``; ``rowidx[b, o]`` is the row of task ``o`` of network ``b``."""
    O = sets.shape[1]
    pos = 0
    for k in range(K):
        ptr[k] = pos
        for j in range(nact):
            b = act[j]
            for o in range(O):
                if sets[b, o] == k:
                    buf[pos, :] = bt[b, o, :]
                    rowidx[b, o] = pos
                    pos += 1
    ptr[K] = pos


@numba.njit(cache=True, error_model="numpy", nogil=True, fastmath={"reassoc", "contract"})
def lockstep_grad_loss(prod, rowidx, act, nact, sets, div, xty, half_yy, bt, g, loss):
    r"""From the products :math:`n_k G_k\beta_o` or :math:`G_k\beta_o` (rows of ``prod``,
    divided here by ``div[k]``: :math:`n_k` for a set held as samples, 1 for a Gram matrix):
    the gradient :math:`g_o = G_k\beta_o - b_k` into ``g`` and the loss
    :math:`\sum_o\tfrac12(g_o - b_k)^\top\beta_o` + ``half_yy`` into ``loss``, for the active
    networks (:func:`_moment_grad`)."""
    O = sets.shape[1]
    D = bt.shape[2]
    for j in range(nact):
        b = act[j]
        s = 0.0
        for o in range(O):
            k = sets[b, o]
            r = rowidx[b, o]
            dk = div[k]
            for d in range(D):
                gi = (prod[r, d] if dk == 1.0 else prod[r, d] / dk) - xty[k, d]
                g[b, o, d] = gi
                s += (gi - xty[k, d]) * bt[b, o, d]
        loss[b] = 0.5 * s + half_yy[b]


@numba.njit(cache=True, error_model="numpy", nogil=True)
def lockstep_trial(w1, w2, g, eta, lam, act, nact, rel_step, grow, n1, n2, bt):
    r"""The step of :func:`diagonal_gram_descent` for the active networks (``eta[b] < 0``:
    not yet set, the curvature rule): trial weights into ``n1``, ``n2`` and their
    :math:`\beta` into ``bt``."""
    for j in range(nact):
        b = act[j]
        eta[b] = _step_size(w1[b], w2[b], g[b], lam[b], 2.0, rel_step,
                            -1.0 if grow <= 0.0 else eta[b])
        _trial(w1[b], w2[b], g[b], eta[b], n1[b], n2[b])
        for o in range(w2.shape[2]):                 # not _beta: see lockstep_beta
            for d in range(w2.shape[3]):
                bt[b, o, d] = n2[b, 0, o, d] * n1[b, 0, d] - n2[b, 1, o, d] * n1[b, 1, d]


@numba.njit(cache=True, error_model="numpy", nogil=True)
def lockstep_accept(w1, w2, g, loss, eta, acc, n1, n2, gn, lossn, act, nact, grow):
    r"""Keep the trial step of each active network if ``grow <= 0`` (the fixed rule) or its
    loss is not above the current one (then :math:`\eta` grows by ``grow``), else halve
    :math:`\eta` (:func:`diagonal_gram_descent`)."""
    for j in range(nact):
        b = act[j]
        if grow <= 0.0 or lossn[b] <= loss[b]:
            w1[b] = n1[b]
            w2[b] = n2[b]
            g[b] = gn[b]
            loss[b] = lossn[b]
            acc[b] += 1
            if grow > 0.0:
                eta[b] = eta[b] * grow
        else:
            eta[b] = eta[b] * 0.5


@numba.njit(cache=True, error_model="numpy", nogil=True)
def lockstep_stop(loss, tol, act, nact, t, max_steps):
    r"""The stopping rule at iteration ``t`` (:class:`~transferkit.models.descent.Descent`):
    drop from ``act[:nact]`` the networks at their tolerance, or all at ``max_steps``.
    Returns the new count and ``-1``, or the first network whose loss is not finite."""
    m = 0
    for j in range(nact):
        b = act[j]
        if not math.isfinite(loss[b]):
            return nact, b
        if loss[b] > tol[b] and t < max_steps:
            act[m] = b
            m += 1
    return m, -1
