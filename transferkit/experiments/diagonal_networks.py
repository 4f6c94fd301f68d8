r"""Diagonal linear networks (paper 004): sparse teachers, STL / PT+FT / MTL across sample sizes."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .._validate import check_int, check_positive
from ..models.diagonal import (
    init_state,
    min_l12_interpolant,
    q_min_interpolant,
    train_diagonal,
)
from ..sweep import Grid, run
from ..theory.penalties import l12_norm

__all__ = ["DiagonalPreset", "DIAGONAL", "sparse_teachers", "task_data", "run_tasks", "tasks_cell", "mtl_small_init", "mtl_cell",
           "l12_cell", "TaskData", "MethodRun", "QMinSolution", "TasksResult", "L12Result"]


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


# ---------------------------------------------------------------------------
# the chapter's parameters
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DiagonalPreset:
    r"""Parameters of the diagonal-networks chapter (paper 004) at one scale.

    Attributes
    ----------
    D, k : int
        Input dimension and teacher features per task.
    ns : tuple of int
        Main-task sample sizes.
    draws : int
        Draws of teachers and samples.
    n_aux : int
        Auxiliary-task samples.
    overlaps : tuple of (str, int)
        The main/auxiliary support overlaps shown, by name.
    alpha, gamma : float
        Initialisation scale (STL, MTL, pretraining) and PT+FT readout re-initialisation.
    rel_step, loss_tol, mtl_loss_tol, max_steps : float, float, float, int
        Step control and stopping rule of :func:`run_tasks`.
    mtl_alphas : tuple of float
        The initialisation scales of the MTL-against-:math:`\ell_{1,2}` section
        (:func:`mtl_small_init`).
    mtl_max_steps : int
        Step budget of that section (smaller :math:`\alpha` trains longer).
    seed : int
        Base seed.
    """

    D: int
    k: int
    ns: tuple
    draws: int
    n_aux: int
    overlaps: tuple
    alpha: float = 0.1
    gamma: float = 0.1
    rel_step: float = 0.01
    loss_tol: float = 1e-10
    mtl_loss_tol: float = 1e-8
    max_steps: int = 100_000
    mtl_alphas: tuple = (0.1, 0.03, 0.01)
    mtl_max_steps: int = 400_000
    seed: int = 0


#: The diagonal-networks chapter's parameters at each ``TRANSFERKIT_SCALE``.
#:
#: The paper (004, App. text to Fig. 4 and captions of Figs. 1 and 5) uses D = 1000, 40
#: features per task, 1024 auxiliary samples and up to 1024 main-task samples, overlaps
#: 40/40 and 0/40, and a smaller initialisation than ours; it states neither the step nor the
#: stopping rule.  Ours (``paper``): the same design reduced to D = 50, k = 5, 8 draws,
#: n = 5, ..., 30 and n_aux = 2D (so pretraining recovers the auxiliary teacher exactly);
#: alpha = gamma = 0.1; relative step 0.01; stopping at a loss of 1e-10 times the mean
#: squared target (1e-8 for MTL, whose over-determined auxiliary task converges
#: sublinearly); seed 0; the MTL section at alpha = 0.1, 0.03, 0.01 with a budget of 4e5
#: steps (about 14 min on 2 loaded cores; at alpha = 0.01 about half the runs stop at the
#: budget).  The paper's sizes are not run here.  ``smoke``: D = 16, k = 2, 2 draws, n = 4, 8, the MTL section at alpha =
#: 0.1, 0.03.
DIAGONAL = {
    "paper": DiagonalPreset(D=50, k=5, ns=(5, 10, 15, 20, 25, 30), draws=8, n_aux=100,
                            overlaps=(("overlapping", 5), ("disjoint", 0))),
    "smoke": DiagonalPreset(D=16, k=2, ns=(4, 8), draws=2, n_aux=32,
                            overlaps=(("overlapping", 2), ("disjoint", 0)),
                            mtl_alphas=(0.1, 0.03)),
}


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


@dataclass(frozen=True)
class TaskData:
    r"""The samples of one seed of :func:`run_tasks`: teachers, auxiliary and main-task data.

    Attributes
    ----------
    beta_aux, beta_main : ndarray, shape (draws, D)
        The teachers (:func:`sparse_teachers`).
    Xa, ya : list of ndarray
        Per draw, the auxiliary inputs ``(n_aux, D)`` and targets ``(n_aux,)``.
    Xm, ym : list of ndarray
        Per ``(n, draw)``, ``n``-major, the main-task inputs ``(n, D)`` and targets ``(n,)``.
    """

    beta_aux: np.ndarray
    beta_main: np.ndarray
    Xa: list
    ya: list
    Xm: list
    ym: list


def task_data(seed, D, k, overlap, ns, draws, n_aux) -> TaskData:
    r"""Draw the teachers and samples of :func:`run_tasks` for one ``seed``.

    Draw ``j`` uses ``default_rng([seed, j])`` for its teachers and auxiliary sample and
    ``default_rng([seed, j, n])`` for its main-task sample of size ``n``: noiseless
    :math:`y = \beta^\top x`, :math:`x\sim\mathcal N(0, I_D)`.
    """
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
    Xm, ym = [], []
    for n in ns:
        for j in range(draws):
            rng = np.random.default_rng([seed, j, n])
            x = rng.standard_normal((n, D))
            Xm.append(x)
            ym.append(x @ b_main[j])
    return TaskData(b_aux, b_main, Xa, ya, Xm, ym)


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
    data = task_data(seed, D, k, overlap, ns, draws, n_aux)
    b_aux, b_main, Xa, ya, Xm, ym = data.beta_aux, data.beta_main, data.Xa, data.ya, data.Xm, data.ym
    # pretraining (STL on the auxiliary task), once per draw
    st = init_state(draws, 1, D, alpha, alpha)
    pre = train_diagonal(st, np.array(Xa)[:, None], np.array(ya)[:, None], np.full((draws, 1), n_aux),
                rel_step=rel_step, loss_tol=loss_tol, max_steps=max_steps)
    b_pre = pre.beta[:, 0]
    # main-task samples for every (n, draw), padded to the largest n
    N = max(ns)
    nn = [n for n in ns for _ in range(draws)]
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
    res = _train_mtl(data, ns, draws, n_aux, alpha, rel_step, mtl_loss_tol, max_steps)
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


def _train_mtl(data: TaskData, ns, draws, n_aux, alpha, rel_step, loss_tol, max_steps):
    """MTL of :func:`tasks_cell`: a two-output network from ``alpha`` on (auxiliary, main)."""
    D = data.beta_aux.shape[1]
    N, G = max(ns), len(ns) * draws
    nn = np.array([n for n in ns for _ in range(draws)], float)
    jj = np.tile(np.arange(draws), len(ns))
    Na = max(N, n_aux)
    Xt = np.zeros((G, 2, Na, D))
    yt = np.zeros((G, 2, Na))
    Xt[:, 0, :n_aux] = np.array(data.Xa)[jj]
    yt[:, 0, :n_aux] = np.array(data.ya)[jj]
    Xt[:, 1, :N] = _padded(data.Xm, N)
    for i, v in enumerate(data.ym):
        yt[i, 1, :len(v)] = v
    st = init_state(G, 2, D, alpha, alpha)
    return train_diagonal(st, Xt, yt, np.stack([np.full(G, n_aux, float), nn], 1),
                          rel_step=rel_step, loss_tol=loss_tol, max_steps=max_steps)


# ---------------------------------------------------------------------------
# MTL against the minimum-l1,2 interpolant, as the initialisation shrinks
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class L12Result:
    r"""The result of :func:`mtl_small_init`: MTL diagonal networks from several
    initialisation scales beside the minimum-:math:`\ell_{1,2}` interpolant (paper 004,
    Eqs. 30 and 35) of the same samples.

    Attributes
    ----------
    alphas : ndarray, shape (A,)
        The initialisation scales :math:`\alpha`.
    ns : ndarray of int
        The main-task sample sizes.
    beta_aux, beta_main : ndarray, shape (draws, D)
        The teachers.
    beta_mtl : ndarray, shape (A, len(ns), draws, 2, D)
        The MTL networks' (auxiliary, main) weights after gradient descent.
    steps, converged : ndarray, shape (A, len(ns), draws)
        Gradient steps taken and whether training reached its loss tolerance.
    beta_l12 : ndarray, shape (len(ns), draws, 2, D)
        The minimum-:math:`\ell_{1,2}` interpolant
        (:func:`transferkit.models.diagonal.min_l12_interpolant`).
    l12_residual : ndarray, shape (len(ns), draws)
        Its largest relative interpolation residual.
    """

    alphas: np.ndarray
    ns: np.ndarray
    beta_aux: np.ndarray
    beta_main: np.ndarray
    beta_mtl: np.ndarray
    steps: np.ndarray
    converged: np.ndarray
    beta_l12: np.ndarray
    l12_residual: np.ndarray

    @property
    def l12_true(self) -> np.ndarray:
        r""":math:`\ell_{1,2}` norm of the teachers (aux, main), ``(draws,)``."""
        return l12_norm(np.stack([self.beta_aux, self.beta_main], -2), axis=-2)

    @property
    def l12_min(self) -> np.ndarray:
        r""":math:`\ell_{1,2}` norm of the minimum interpolant, ``(len(ns), draws)``."""
        return l12_norm(self.beta_l12, axis=-2)

    @property
    def l12_mtl(self) -> np.ndarray:
        r""":math:`\ell_{1,2}` norm of the MTL networks, ``(A, len(ns), draws)``."""
        return l12_norm(self.beta_mtl, axis=-2)

    @property
    def distance(self) -> np.ndarray:
        r"""Relative distance :math:`\|B_{\rm MTL} - B_{1,2}\|_F/\|B_{1,2}\|_F` of the
        networks to the interpolant, ``(A, len(ns), draws)``."""
        diff = np.linalg.norm((self.beta_mtl - self.beta_l12).reshape(self.beta_mtl.shape[:3] + (-1,)), axis=-1)
        return diff / np.linalg.norm(self.beta_l12.reshape(self.beta_l12.shape[:2] + (-1,)), axis=-1)


def mtl_small_init(D: int, k: int, overlap: int, ns, *, draws: int, n_aux: int, alphas,
                   seed: int = 0, rel_step: float = 0.01, mtl_loss_tol: float = 1e-8,
                   max_steps: int = 200_000, **run_kwargs) -> L12Result:
    r"""MTL from shrinking initialisations against the minimum-:math:`\ell_{1,2}` interpolant.

    Paper 004 (Eqs. 30 and 35, App. B) states that multi-task diagonal networks at minimum
    parameter norm minimise the :math:`\ell_{1,2}` norm of their task weights.  Gradient
    descent from a finite :math:`\alpha` need not be there; if the small-initialisation
    limit is that minimiser, the networks approach it as :math:`\alpha` shrinks.  Same
    teachers and samples as :func:`run_tasks` with the same ``seed`` (:func:`task_data`), the
    MTL network trained as there, one sweep cell per :math:`\alpha` (:func:`mtl_cell`), the
    interpolant in one more (:func:`l12_cell`).  ``run_kwargs`` go to
    :func:`~transferkit.sweep.run`.
    """
    ns = [check_int("n", n, 1) for n in ns]
    draws = check_int("draws", draws, 1)
    n_aux = check_int("n_aux", n_aux, 1)
    seed = check_int("seed", seed, 0)
    alphas = [check_positive("alpha", a) for a in np.atleast_1d(alphas)]
    fixed = dict(D=D, k=k, overlap=overlap, ns=ns, draws=draws, n_aux=n_aux)
    sw = run(mtl_cell, Grid(alpha=alphas),
             fixed=dict(fixed, seed=seed, rel_step=rel_step, loss_tol=mtl_loss_tol,
                        max_steps=max_steps),
             desc="MTL per alpha", **run_kwargs)
    lw = run(l12_cell, Grid(seed=[seed]), fixed=fixed, desc="min-l1,2 interpolant", **run_kwargs)
    return L12Result(alphas=np.array(alphas), ns=np.array(ns),
                     beta_aux=lw["beta_aux"][0], beta_main=lw["beta_main"][0],
                     beta_mtl=sw["beta"], steps=sw["steps"], converged=sw["converged"],
                     beta_l12=lw["beta"][0], l12_residual=lw["residual"][0])


def mtl_cell(alpha, seed, D, k, overlap, ns, draws, n_aux, rel_step=0.01, loss_tol=1e-8,
             max_steps=200_000) -> dict:
    r"""MTL of :func:`mtl_small_init` at one :math:`\alpha`: a cell function for
    :func:`transferkit.sweep.run`.  Returns ``beta`` ``(len(ns), draws, 2, D)``, ``steps``
    and ``converged`` ``(len(ns), draws)``."""
    ns = [int(n) for n in ns]
    data = task_data(seed, D, k, overlap, ns, draws, n_aux)
    res = _train_mtl(data, ns, draws, n_aux, alpha, rel_step, loss_tol, max_steps)
    shape = (len(ns), draws)
    return {"beta": res.beta.reshape(shape + (2, D)), "steps": res.steps.reshape(shape),
            "converged": res.converged.reshape(shape)}


def l12_cell(seed, D, k, overlap, ns, draws, n_aux) -> dict:
    r"""The minimum-:math:`\ell_{1,2}` interpolant of every (auxiliary, main) sample of
    :func:`mtl_small_init`: a cell function for :func:`transferkit.sweep.run`.  Returns
    ``beta`` ``(len(ns), draws, 2, D)``, ``residual`` ``(len(ns), draws)`` and the teachers."""
    ns = [int(n) for n in ns]
    data = task_data(seed, D, k, overlap, ns, draws, n_aux)
    jj = np.tile(np.arange(draws), len(ns))
    sols = [min_l12_interpolant([data.Xa[j], x], [data.ya[j], v])
            for j, x, v in zip(jj, data.Xm, data.ym)]
    shape = (len(ns), draws)
    return {"beta": np.array([b for b, _ in sols]).reshape(shape + (2, D)),
            "residual": np.array([r for _, r in sols]).reshape(shape),
            "beta_aux": data.beta_aux, "beta_main": data.beta_main}
