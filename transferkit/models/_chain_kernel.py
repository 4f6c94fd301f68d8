r"""Compiled CPU kernel of :func:`transferkit.models.deep_linear.finetune_chain`.

Gradient descent on a rank-one chain (paper 000, Sec. 3.4) costs :math:`O(k)` per step
and instance, so the batched torch loop of ``finetune_chain`` is bound by the memory
traffic of a ``(B, k)`` batch per step (and by Python's per-step overhead for small
batches).  The instances are independent, so this kernel runs them one after the other,
each to its own stop: one instance's vectors (a few kB) stay in the CPU cache for all of its
steps.  It performs the same floating-point operations as the torch loop (the same step
rule, the same stopping rule of :class:`~transferkit.models.descent.Descent`, checked every
``check_every`` steps); its sums run in sequence where torch reduces in vectorised order, so
the iterates agree to rounding and the steps taken are the same unless a loss lands within
rounding of the tolerance at a check (``tests/models/test_deep_linear_training.py`` holds
the two against each other).  Compiled by numba (``cache=True``: once per machine;
``nogil``: threads of one process can run it side by side).
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["chain_descent"]


@numba.njit(cache=True, error_model="numpy", nogil=True)
def _curvature(sq, lam_max, g_norm):
    """:func:`transferkit.models.deep_linear.curvature_bound` of one instance (``sq``: ``(L,)``)."""
    L = sq.shape[0]
    gn = 0.0
    res = 0.0
    for l in range(L):
        p = 1.0
        for k in range(L):
            if k != l:
                p *= sq[k]
        gn += p
        for m in range(L):
            if m != l:
                q = 1.0
                for k in range(L):
                    if k != l and k != m:
                        q *= math.sqrt(max(sq[k], 0.0))
                res += q
    return lam_max * gn + g_norm * res


@numba.njit(cache=True, error_model="numpy", nogil=True)
def chain_descent(z, c, lam, target, loss_tol, max_steps, step_scale, flow_tol, check_every):
    r"""Gradient descent of every instance of a rank-one chain, in place on ``z`` and ``c``.

    One instance :math:`b` runs, with :math:`C = \prod_l c_l`,
    :math:`\mathbf g = \lambda\odot(C\mathbf z - \mathbf t)` and the excess loss
    :math:`\tfrac12\mathbf g^\top(C\mathbf z - \mathbf t)`,

    .. math::
        \mathbf z \leftarrow \mathbf z - \eta C\mathbf g, \qquad
        c_l \leftarrow c_l - \eta\,(\mathbf g^\top\mathbf z)\textstyle\prod_{m\ne l}c_m ,

    with :math:`\eta` = ``step_scale`` / curvature bound, capped at
    :math:`\rho/\ell` when ``flow_tol > 0`` (:math:`\rho` = ``flow_tol`` /
    :math:`\max(\log(\ell(0)/\text{loss\_tol}), 1)`), until at a check (every
    ``check_every`` steps, and at ``max_steps``) its excess loss is at most ``loss_tol``.

    Parameters
    ----------
    z : float64 array ``(B, k)``, row-space coordinates (updated in place).
    c : float64 array ``(B, L-1)``, the chain's scalars (updated in place).
    lam, target : float64 arrays ``(B, k)``, eigenvalues of the data and
        :math:`V^\top X^+ y`.
    loss_tol, step_scale : float
    max_steps, check_every : int
    flow_tol : float, ``<= 0`` for no cap.

    Returns
    -------
    steps : int64 array ``(B,)``, steps taken per instance;
    excess : float64 array ``(B,)``, excess loss at the final iterate;
    diverged : int, ``-1``, or the first instance whose loss was not finite at a check
        (``steps`` holds the step of that check; later instances are not run).
    """
    B, k = z.shape
    L = c.shape[1] + 1
    steps = np.zeros(B, np.int64)
    excess = np.zeros(B)
    sq = np.empty(L)
    others = np.empty(L - 1)
    g = np.empty(k)
    for b in range(B):
        lam_max = lam[b, 0]
        for i in range(k):
            if lam[b, i] > lam_max:
                lam_max = lam[b, i]
        rho = -1.0
        t = 0
        while True:
            C = 1.0
            for l in range(L - 1):
                C *= c[b, l]
            ex = 0.0
            gz = 0.0
            g2 = 0.0
            zz = 0.0
            for i in range(k):
                diff = C * z[b, i] - target[b, i]
                gi = lam[b, i] * diff
                g[i] = gi
                ex += gi * diff
                gz += gi * z[b, i]
                g2 += gi * gi
                zz += z[b, i] * z[b, i]
            ex *= 0.5
            if rho < 0.0 and flow_tol > 0.0:
                rho = flow_tol / max(math.log(ex / loss_tol), 1.0)
            if t % check_every == 0 or t == max_steps:
                if not math.isfinite(ex):
                    steps[b] = t
                    excess[b] = ex
                    return steps, excess, b
                if ex <= loss_tol or t >= max_steps:
                    break
            sq[0] = zz
            for l in range(L - 1):
                sq[l + 1] = c[b, l] * c[b, l]
            eta = step_scale / _curvature(sq, lam_max, math.sqrt(g2))
            if flow_tol > 0.0:
                eta = min(eta, rho / ex)
            for l in range(L - 1):
                p = 1.0
                for m in range(L - 1):
                    if m != l:
                        p *= c[b, m]
                others[l] = p
            s = eta * C
            for i in range(k):
                z[b, i] -= s * g[i]
            for l in range(L - 1):
                c[b, l] -= eta * gz * others[l]
            t += 1
        steps[b] = t
        excess[b] = ex
    return steps, excess, -1
