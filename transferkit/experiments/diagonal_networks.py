r"""Diagonal linear networks (paper 004): sparse teachers, STL / PT+FT / MTL across sample sizes."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .._validate import check_int, check_positive
from ..models.diagonal import init_state, q_min_interpolant, train_diagonal
from ..sweep import Grid, run

__all__ = ["sparse_teachers", "run_tasks", "tasks_cell", "MethodRun", "QMinSolution", "TasksResult"]


# ---------------------------------------------------------------------------
# the experiment: sparse teachers, STL / PT+FT / MTL
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MethodRun:
    r"""The gradient-descent solutions of one method (STL, PT+FT or MTL) on the main task.

    Attributes
    ----------
    beta : ndarray, shape (len(ns), draws, D)
        The learned main-task weights :math:`\hat\beta`.
    risk : ndarray, shape (len(ns), draws)
        :math:`\|\hat\beta - \beta\|^2` against the main teacher.
    steps : ndarray, shape (len(ns), draws)
        Gradient-descent steps taken.
    converged : ndarray of bool, shape (len(ns), draws)
        Whether training reached its loss tolerance.
    """

    beta: np.ndarray
    risk: np.ndarray
    steps: np.ndarray
    converged: np.ndarray


@dataclass(frozen=True)
class QMinSolution:
    r"""The minimiser of paper 004's Eq. 22 at one initialisation (the theory for STL or PT+FT).

    Attributes
    ----------
    beta : ndarray, shape (len(ns), draws, D)
        The minimum-:math:`\|\cdot\|_Q` interpolant of the main-task samples.
    risk : ndarray, shape (len(ns), draws)
        :math:`\|\beta_Q - \beta\|^2` against the main teacher.
    residual : ndarray, shape (len(ns), draws)
        Relative residual of the convex solver
        (:func:`transferkit.models.diagonal.q_min_interpolant`).
    """

    beta: np.ndarray
    risk: np.ndarray
    residual: np.ndarray


@dataclass(frozen=True)
class TasksResult:
    r"""The result of :func:`run_tasks`: STL, PT+FT and MTL on sparse teachers (paper 004).

    Attributes
    ----------
    ns : ndarray of int
        The main-task sample sizes.
    D, k, overlap, n_aux : int
        Input dimension, features per task, shared features, auxiliary samples.
    alpha, gamma : float
        Initialisation scale and PT+FT readout re-initialisation.
    beta_aux, beta_main, beta_pre : ndarray, shape (draws, D)
        The teachers and the pretrained (auxiliary-task STL) weights.
    pre_converged : ndarray of bool, shape (draws,)
        Whether pretraining converged.
    stl, ptft, mtl : MethodRun
        Gradient-descent solutions of each method (MTL: its main-task output).
    mtl_aux : ndarray, shape (len(ns), draws, D)
        The auxiliary-task output of the MTL networks.
    qmin_stl, qmin_ptft : QMinSolution
        Minimisers of Eq. 22 at the STL and PT+FT initialisations.
    """

    ns: np.ndarray
    D: int
    k: int
    overlap: int
    alpha: float
    gamma: float
    n_aux: int
    beta_aux: np.ndarray
    beta_main: np.ndarray
    beta_pre: np.ndarray
    pre_converged: np.ndarray
    stl: MethodRun
    ptft: MethodRun
    mtl: MethodRun
    mtl_aux: np.ndarray
    qmin_stl: QMinSolution
    qmin_ptft: QMinSolution

    @property
    def methods(self) -> dict[str, MethodRun]:
        """``{"stl": ..., "ptft": ..., "mtl": ...}``, in that order."""
        return {"stl": self.stl, "ptft": self.ptft, "mtl": self.mtl}

    @property
    def qmin(self) -> dict[str, QMinSolution]:
        """The Eq. 22 minimisers by method, ``{"stl": ..., "ptft": ...}``."""
        return {"stl": self.qmin_stl, "ptft": self.qmin_ptft}


def sparse_teachers(D: int, k: int, overlap: int, rng: np.random.Generator):
    r"""Auxiliary and main teachers with ``k`` non-zero coefficients each, ``overlap`` shared.

    Coefficients are i.i.d. random signs :math:`\pm1` (bounded away from 0, which keeps
    gradient descent from small initialisation well conditioned); the shared support carries
    independent signs in the two tasks (features shared, weights not).  Returns ``(beta_aux,
    beta_main)``, each of shape ``(D,)``.
    """
    D, k = check_int("D", D, 1), check_int("k", k, 1)
    overlap = check_int("overlap", overlap, 0)
    if overlap > k or 2 * k - overlap > D:
        raise ValueError(f"overlap must be in [max(0, 2k - D), k] (got {overlap})")
    perm = rng.permutation(D)
    aux_idx = perm[:k]
    main_idx = np.r_[perm[:overlap], perm[k:2 * k - overlap]]
    ba, bm = np.zeros(D), np.zeros(D)
    ba[aux_idx] = rng.choice([-1.0, 1.0], k)
    bm[main_idx] = rng.choice([-1.0, 1.0], k)
    return ba, bm


def _padded(Xs, N):
    """Stack a list of ``(n_i, D)`` arrays into ``(len, N, D)`` with zero rows."""
    out = np.zeros((len(Xs), N, Xs[0].shape[1]))
    for i, x in enumerate(Xs):
        out[i, :len(x)] = x
    return out


def run_tasks(D: int, k: int, overlap: int, ns, *, draws: int, n_aux: int, alpha: float,
              gamma: float, seed: int = 0, rel_step: float = 0.01, loss_tol: float = 1e-12,
              mtl_loss_tol: float = 1e-8, max_steps: int = 200_000,
              **run_kwargs) -> TasksResult:
    r"""STL, PT+FT and MTL on sparse teachers, for every sample size ``ns`` and draw.

    Noiseless data :math:`x\sim\mathcal N(0, I_D)`, :math:`y = \beta^\top x`.  Draw ``j`` uses
    the generator ``default_rng([seed, j, n])`` for the main-task sample of size ``n`` and
    ``default_rng([seed, j])`` for the teachers and the auxiliary sample, so a cell does not
    depend on the rest of the grid.

    * **STL**: both layers from :math:`w_0^{(1)} = w_0^{(2)} = \alpha` on the main task.
    * **PT+FT**: pretrain by STL on ``n_aux`` auxiliary samples, then fine-tune both layers
      from :math:`w^{(1)}_{\pm,0} = \sqrt{|\beta^{\rm aux}|}` (the pretrained magnitudes, in
      both branches as Eq. 22 assumes) and :math:`w^{(2)}_{\pm,0} = \gamma`.
    * **MTL**: a two-output network from :math:`\alpha`, trained on both tasks at once, to
      the looser ``mtl_loss_tol`` (the over-determined auxiliary task converges
      sublinearly: its off-support weights decay at a rate proportional to their size).
    * **Q-min**: the minimiser of Eq. 22 at the STL and PT+FT initialisations
      (:func:`transferkit.models.diagonal.q_min_interpolant`), the theory for STL and PT+FT.

    Returns
    -------
    TasksResult
        Per method a :class:`MethodRun` (weights ``(len(ns), draws, D)``; risks
        :math:`\|\hat\beta - \beta\|^2`, steps and convergence ``(len(ns), draws)``), per
        theory a :class:`QMinSolution`, plus teachers and pretrained weights ``(draws, D)``.

    Everything is trained in one batch, so the experiment is one cell of
    :func:`transferkit.sweep.run` (:func:`tasks_cell`): cached and resumable as a whole
    (a per-:math:`(n, \text{draw})` split would change the batches, hence possibly the last
    bits).  ``run_kwargs`` (``cache``, ``directory``, ``version``, ``scheduler``,
    ``progress``) go to :func:`~transferkit.sweep.run`.
    """
    ns = [check_int("n", n, 1) for n in ns]
    draws = check_int("draws", draws, 1)
    alpha, gamma = check_positive("alpha", alpha), check_positive("gamma", gamma)
    n_aux = check_int("n_aux", n_aux, 1)
    seed = check_int("seed", seed, 0)
    sw = run(tasks_cell, Grid(seed=[seed]),
             fixed=dict(D=D, k=k, overlap=overlap, ns=ns, draws=draws, n_aux=n_aux, alpha=alpha,
                        gamma=gamma, rel_step=rel_step, loss_tol=loss_tol,
                        mtl_loss_tol=mtl_loss_tol, max_steps=max_steps),
             desc="STL, PT+FT, MTL", **run_kwargs)
    out = {name: np.ascontiguousarray(sw[name][0]) for name in sw.keys()}

    def part(cls, prefix):
        return cls(**{f.name: out[prefix + f.name] for f in fields(cls)})

    return TasksResult(ns=np.array(ns), D=D, k=k, overlap=overlap, alpha=alpha, gamma=gamma,
                       n_aux=n_aux, beta_aux=out["beta_aux"], beta_main=out["beta_main"],
                       beta_pre=out["beta_pre"], pre_converged=out["pre_converged"],
                       stl=part(MethodRun, "stl_"), ptft=part(MethodRun, "ptft_"),
                       mtl=part(MethodRun, "mtl_"), mtl_aux=out["mtl_aux"],
                       qmin_stl=part(QMinSolution, "qmin_stl_"),
                       qmin_ptft=part(QMinSolution, "qmin_ptft_"))


def tasks_cell(seed, D, k, overlap, ns, draws, n_aux, alpha, gamma, rel_step=0.01,
               loss_tol=1e-12, mtl_loss_tol=1e-8, max_steps=200_000):
    r"""The whole of :func:`run_tasks` for one ``seed``: a cell function for
    :func:`transferkit.sweep.run`.  Returns the arrays of :class:`TasksResult` by name
    (``beta_aux``, ``beta_main``, ``beta_pre``, ``pre_converged``, ``mtl_aux``), those of
    its :class:`MethodRun` and :class:`QMinSolution` parts as ``<part>_<field>``
    (``stl_beta``, ``qmin_ptft_residual``, ...)."""
    ns = [int(n) for n in ns]
    teach, Xa, ya = [], [], []
    for j in range(draws):
        rng = np.random.default_rng([seed, j])
        ba, bm = sparse_teachers(D, k, overlap, rng)
        xa = rng.standard_normal((n_aux, D))
        teach.append((ba, bm))
        Xa.append(xa)
        ya.append(xa @ ba)
    b_aux = np.array([t[0] for t in teach])
    b_main = np.array([t[1] for t in teach])
    # pretraining (STL on the auxiliary task), once per draw
    st = init_state(draws, 1, D, alpha, alpha)
    pre = train_diagonal(st, np.array(Xa)[:, None], np.array(ya)[:, None], np.full((draws, 1), n_aux),
                rel_step=rel_step, loss_tol=loss_tol, max_steps=max_steps)
    b_pre = pre.beta[:, 0]
    # main-task samples for every (n, draw), padded to the largest n
    N = max(ns)
    Xm, ym, nn = [], [], []
    for n in ns:
        for j in range(draws):
            rng = np.random.default_rng([seed, j, n])
            x = rng.standard_normal((n, D))
            Xm.append(x)
            ym.append(x @ b_main[j])
            nn.append(n)
    G = len(ns) * draws
    Xm_p = _padded(Xm, N)
    ym_p = np.zeros((G, N))
    for i, v in enumerate(ym):
        ym_p[i, :len(v)] = v
    nn = np.array(nn, float)
    jj = np.tile(np.arange(draws), len(ns))
    shape = (len(ns), draws)

    def method_run(res, beta):
        return MethodRun(beta=beta.reshape(shape + (D,)),
                         risk=((beta - b_main[jj]) ** 2).sum(-1).reshape(shape),
                         steps=res.steps.reshape(shape), converged=res.converged.reshape(shape))

    st = init_state(G, 1, D, alpha, alpha)
    res = train_diagonal(st, Xm_p[:, None], ym_p[:, None], nn[:, None], rel_step=rel_step,
                loss_tol=loss_tol, max_steps=max_steps)
    stl = method_run(res, res.beta[:, 0])
    w1_ft = np.sqrt(np.abs(b_pre))[jj]
    st = init_state(G, 1, D, w1_ft, gamma)
    res = train_diagonal(st, Xm_p[:, None], ym_p[:, None], nn[:, None], rel_step=rel_step,
                loss_tol=loss_tol, max_steps=max_steps)
    ptft = method_run(res, res.beta[:, 0])
    # MTL: task 0 auxiliary (n_aux samples), task 1 main
    Na = max(N, n_aux)
    Xt = np.zeros((G, 2, Na, D))
    yt = np.zeros((G, 2, Na))
    Xt[:, 0, :n_aux] = np.array(Xa)[jj]
    yt[:, 0, :n_aux] = np.array(ya)[jj]
    Xt[:, 1, :N] = Xm_p
    yt[:, 1, :N] = ym_p
    st = init_state(G, 2, D, alpha, alpha)
    res = train_diagonal(st, Xt, yt, np.stack([np.full(G, n_aux, float), nn], 1), rel_step=rel_step,
                loss_tol=mtl_loss_tol, max_steps=max_steps)
    mtl = method_run(res, res.beta[:, 1])
    mtl_aux = res.beta[:, 0].reshape(shape + (D,))
    # theory: minimisers of Eq. 22 at the STL and PT+FT initialisations
    qmin = []
    for w1, w2 in ((np.full((G, D), alpha), alpha), (w1_ft, gamma)):
        betas, resid = [], []
        for i in range(G):
            b, r = q_min_interpolant(Xm[i], ym[i], w1[i], w2)
            betas.append(b)
            resid.append(r)
        betas = np.array(betas)
        qmin.append(QMinSolution(beta=betas.reshape(shape + (D,)),
                                 risk=((betas - b_main[jj]) ** 2).sum(-1).reshape(shape),
                                 residual=np.array(resid).reshape(shape)))
    out = {"beta_aux": b_aux, "beta_main": b_main, "beta_pre": b_pre,
           "pre_converged": pre.converged, "mtl_aux": mtl_aux}
    for prefix, part in (("stl_", stl), ("ptft_", ptft), ("mtl_", mtl), ("qmin_stl_", qmin[0]),
                         ("qmin_ptft_", qmin[1])):
        out.update({prefix + f.name: getattr(part, f.name) for f in fields(part)})
    return out
