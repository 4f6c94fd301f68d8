r"""Paper 001, Table 1: bounds against fine-tuning error on pairs of binary MNIST tasks."""

from __future__ import annotations

import numpy as np

from .. import config
from ..data import binary_task
from ..stats import table_r2
from ..streams import keyed_rng
from ..theory.linear_teachers import (
    bartlett_bound,
    distance_measure,
    eq3_bound,
    finetune_predictor,
)

__all__ = ["digit_moments", "task_teacher", "task_covariance", "draw_task_pairs", "mnist_measures", "finetune_test_error", "mnist_table_sim"]


# ---------------------------------------------------------------------------------------
# Table 1 of paper 001: binary MNIST tasks
# ---------------------------------------------------------------------------------------


def digit_moments(x, labels):
    r"""Per-digit sufficient statistics of least squares: ``G[k] = X_k^T X_k`` ``(10, d, d)``,
    ``s[k] = X_k^T 1`` ``(10, d)`` and counts ``(10,)`` (float64).  A binary task "a vs b"
    with targets +-1 has :math:`X^\top X = G_a + G_b` and :math:`X^\top y = s_a - s_b`."""
    x = np.asarray(x)
    labels = np.asarray(labels)
    d = x.shape[1]
    G = np.zeros((10, d, d))
    s = np.zeros((10, d))
    cnt = np.zeros(10)
    for k in range(10):
        xk = np.asarray(x[labels == k], dtype=np.float64)
        G[k] = xk.T @ xk
        s[k] = xk.sum(0)
        cnt[k] = len(xk)
    return G, s, cnt


def task_teacher(G, s, a, b, rcond=1e-6):
    r"""The linear teacher of task "a vs b" fitted on all its data: the minimum-norm least
    squares solution :math:`\theta = (X^\top X)^+ X^\top y` (the limit of gradient descent
    from zero on the square loss), with eigenvalues of :math:`X^\top X` below
    ``rcond`` times the largest treated as zero (MNIST has pixels that are always 0)."""
    ev, V = np.linalg.eigh(G[a] + G[b])
    keep = ev > rcond * ev[-1]
    coef = (V.T @ (s[a] - s[b]))
    return V[:, keep] @ (coef[keep] / ev[keep])


def task_covariance(G, cnt, c, d_):
    r"""Second-moment matrix :math:`\Sigma = \mathbb E\,xx^\top` of the inputs of task "c vs d"
    (the models have no bias, so the uncentred moment is the covariance of Eq. 2), as
    eigenvalues (decreasing) and eigenvectors (columns)."""
    S = (G[c] + G[d_]) / (cnt[c] + cnt[d_])
    ev, V = np.linalg.eigh(S)
    ev = np.clip(ev[::-1], 0, None)
    return ev, V[:, ::-1]


def draw_task_pairs(K, seed=0):
    r"""``K`` distinct (source, target) pairs of binary digit tasks, four distinct digits each:
    an array ``(K, 4)`` of ``(a, b, c, d)`` for source "a vs b" and target "c vs d"."""
    rng = keyed_rng(seed, 20)
    pairs = set()
    while len(pairs) < K:
        pairs.add(tuple(int(v) for v in rng.choice(10, 4, replace=False)))
    return np.array(sorted(pairs))


def mnist_measures(theta_s, theta_t, lam, V, ns, m=2, delta=1.0, c=3.0):
    r"""The three measures of Table 1 for one pair, per sample size: ``dist``
    (:math:`\|\theta_T-\theta_S\|^2`), ``bartlett`` (:func:`~transferkit.theory.linear_teachers.bartlett_bound`) and ``eq3``
    (:func:`~transferkit.theory.linear_teachers.eq3_bound` with ``m``).  Returns dict name -> array ``(len(ns),)``."""
    dv = theta_t - theta_s
    ns = np.asarray(ns, float)
    return {"dist": np.full(ns.shape, distance_measure(theta_s, theta_t)),
            "bartlett": bartlett_bound(dv, lam, ns, delta, c),
            "eq3": eq3_bound(dv, V, lam, m, ns, delta, c)}


def sample_indices(pool_size, n, count, seed):
    r"""Row indices ``(count, n)`` of ``count`` independent draws of ``n`` of ``pool_size``
    rows without replacement: the target samples of :func:`finetune_test_error` for the
    same ``seed`` and ``n`` (so other quantities can be computed on the same samples)."""
    rng = keyed_rng(seed, 21, n)
    return np.stack([rng.choice(pool_size, n, replace=False) for _ in range(int(count))])


def finetune_test_error(x_pool, t_pool, theta_s, x_test, t_test, n, shape, seed):
    r"""0-1 test error of :func:`~transferkit.theory.linear_teachers.finetune_predictor` (Thm 4.1, the limit of gradient
    descent from :math:`\theta_S` on the square loss) fitted on ``n`` target samples drawn
    without replacement from ``(x_pool, t_pool)`` (:func:`sample_indices`), for a batch of
    independent draws of shape ``shape``.  Returns errors of shape ``shape``."""
    idx = sample_indices(len(x_pool), n, int(np.prod(shape)), seed)
    X = np.asarray(x_pool, dtype=np.float64)[idx]                    # (B, n, d)
    gamma = finetune_predictor(X, np.asarray(t_pool, dtype=np.float64)[idx], theta_s)
    pred = np.asarray(x_test, dtype=np.float64) @ gamma.T           # (N_test, B)
    err = (np.sign(pred) != np.asarray(t_test)[:, None]).mean(0)
    return err.reshape(shape)


def mnist_table_sim(x_train, y_train, x_test, y_test, pairs, ns, draws, reps, seed=0, m=2,
                    delta=1.0, c=3.0, rcond=1e-6, other_c=(), progress=None):
    r"""Table 1 of paper 001.  For each (source "a vs b", target "c vs d") pair: the source
    and target teachers fitted on all their training data (:func:`task_teacher`), the
    target covariance, the three measures (:func:`mnist_measures`), and the 0-1 test error
    (on the target task's test images) of fine-tuning from :math:`\theta_S` on ``n`` target
    samples, averaged over ``draws`` draws, for ``reps`` independent repetitions.

    Returns dict: ``errors`` ``(reps, len(ns), K)``, ``errors_sd`` (std over draws),
    ``measures`` (name -> ``(len(ns), K)``; for every value ``c2`` of ``other_c`` also
    ``bartlett_c{c2}`` and ``eq3_c{c2}``), ``r2`` (:func:`~transferkit.stats.table_r2`), ``theta_norms``
    ``(K, 2)``, ``thetas`` ``(K, 2, d)`` (source, target teachers).
    """
    from tqdm import tqdm

    G, s, cnt = digit_moments(x_train, y_train)
    K = len(pairs)
    errors = np.zeros((reps, len(ns), K))
    errors_sd = np.zeros((reps, len(ns), K))
    names = ["dist", "bartlett", "eq3"] + [f"{b}_c{c2:g}" for c2 in other_c for b in ("bartlett", "eq3")]
    measures = {k: np.zeros((len(ns), K)) for k in names}
    norms = np.zeros((K, 2))
    thetas = np.zeros((K, 2, x_train.shape[1]))
    for k, (a, b, cc, dd) in enumerate(tqdm(pairs, desc="pairs", disable=not config.progress(progress))):
        ts = task_teacher(G, s, a, b, rcond)
        tt = task_teacher(G, s, cc, dd, rcond)
        norms[k] = np.linalg.norm(ts), np.linalg.norm(tt)
        thetas[k] = ts, tt
        lam, V = task_covariance(G, cnt, cc, dd)
        for name, v in mnist_measures(ts, tt, lam, V, ns, m, delta, c).items():
            measures[name][:, k] = v
        for c2 in other_c:
            for name, v in mnist_measures(ts, tt, lam, V, ns, m, delta, c2).items():
                if name != "dist":
                    measures[f"{name}_c{c2:g}"][:, k] = v
        x_pool, t_pool = binary_task(x_train, y_train, cc, dd)
        x_t, t_t = binary_task(x_test, y_test, cc, dd)
        for j, n in enumerate(ns):
            e = finetune_test_error(x_pool, t_pool, ts, x_t, t_t, int(n), (reps, draws),
                                    seed=int(seed) * 1000 + k)
            errors[:, j, k] = e.mean(-1)
            errors_sd[:, j, k] = e.std(-1, ddof=1)
    r2 = table_r2(errors, {name: v for name, v in measures.items()})
    return {"errors": errors, "errors_sd": errors_sd, "measures": measures, "r2": r2,
            "theta_norms": norms, "thetas": thetas}
