r"""Paper 003, Fig. 1c: single-task learning against PT+FT in small ReLU networks."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from .._validate import check_int
from ..models.device import default_device
from ..models.relu import forward, teacher_pair, train_units
from ..sweep import Grid, run

__all__ = ["PENALTY", "SAMPLE_EFFICIENCY", "RELU_FEATURES", "PenaltyPreset",
           "SampleEfficiencyPreset", "ReluFeaturesPreset", "run_sample_efficiency",
           "sample_efficiency_cell", "StudentRun", "SampleEfficiencyResult"]


# ---------------------------------------------------------------------------
# the chapter's parameters
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PenaltyPreset:
    r"""Parameters of Figs. 1a-b of paper 003 (the PT+FT penalty of one ReLU unit) at one scale.

    The presets are :data:`PENALTY`; the chapter notebook ``notebooks/ptft_relu.py`` passes
    them to :func:`transferkit.theory.penalties.relu_ptft_penalty` and
    :func:`transferkit.theory.penalties.relu_ptft_dlog_penalty`.  The grids of :math:`m` are
    ``np.logspace(*log10_m, m_points)`` and ``np.logspace(*log10_m_check, check_points)``.

    Attributes
    ----------
    rhos : tuple of float
        Cosines :math:`\rho` between the unit's new and pretrained directions (paper 003,
        Sec. 1.2: 1, 0.99 and 0.9).
    m_aux : tuple of float
        Pretrained coefficients :math:`m^{\rm aux}`, :math:`m_0 = \sqrt{m^{\rm aux}}`
        (caption of Fig. 1a: 0.01, 1 and 100).
    gamma : float
        Readout re-initialisation :math:`\gamma` (ours; Sec. 1.1 says only "a small value").
    log10_m : tuple of float
        :math:`\log_{10}` of the smallest and largest magnitude :math:`m` of the curves
        (ours; the axes of the figure are not in the text).
    m_points : int
        Points of the curves (ours).
    log10_m_check : tuple of float
        :math:`\log_{10}` of the smallest and largest checked magnitude (ours).
    check_points : int
        Magnitudes where :math:`p(u)` is minimised directly and the exponent is taken by
        finite differences (ours).
    fd_step : float
        Step :math:`h` in :math:`\log m` of the central finite differences of
        :math:`\log\tilde r` (ours; the caption of Fig. 1b says only "computed
        empirically").
    """

    rhos: tuple = (1.0, 0.99, 0.9)              # paper 003, Sec. 1.2
    m_aux: tuple = (0.01, 1.0, 100.0)           # paper 003, caption of Fig. 1a
    gamma: float = 1e-2                         # ours (Sec. 1.1: "a small value")
    log10_m: tuple = (-2.95, 2.0)               # ours
    m_points: int = 400                         # ours
    log10_m_check: tuple = (-2.9, 2.0)          # ours
    check_points: int = 11                      # ours
    fd_step: float = 1e-4                       # ours


#: The parameters of Figs. 1a-b of paper 003 at each ``TRANSFERKIT_SCALE``.
#:
#: ``paper``: rho = 1, 0.99, 0.9 (paper 003, Sec. 1.2 names these three; the figure itself
#: is not in our text of the paper) and m_aux = 0.01, 1, 100 (caption of Fig. 1a).  The paper
#: leaves open gamma ("a small value", Sec. 1.1), the range of m and how the derivative of
#: Fig. 1b is "computed empirically".  Ours: gamma = 1e-2; 400 magnitudes m log-spaced on
#: [10^-2.95, 10^2], a grid that avoids m = gamma m0 = 1e-3 (rho = 1, m_aux = 0.01), where the
#: penalty is 0 and its logarithmic derivative jumps from -inf to +inf; 11 checked magnitudes
#: on [10^-2.9, 10^2]; central differences with the step 1e-4 in log m.
#: ``smoke``: ours, the same with 6 checked magnitudes (the curves cost little).
PENALTY = {
    "paper": PenaltyPreset(check_points=11),
    "smoke": PenaltyPreset(check_points=6),
}


@dataclass(frozen=True)
class SampleEfficiencyPreset:
    r"""Parameters of Fig. 1c of paper 003 (sample efficiency of STL and PT+FT) at one scale.

    The presets are :data:`SAMPLE_EFFICIENCY`; the chapter notebook ``notebooks/ptft_relu.py``
    passes them to :func:`run_sample_efficiency` once per :math:`(\rho, m)`.

    Attributes
    ----------
    rhos : tuple of float
        Cosines :math:`\rho` between the auxiliary and main teacher directions, the rows of
        the figure (ours; the caption of Fig. 1c says "different possible correlations" and
        Sec. 1.2 discusses :math:`\rho = 1` and :math:`0.9`).
    magnitudes : tuple of float
        Main-task readout magnitudes :math:`m`, the columns, the auxiliary readout being 1
        (ours; the caption says "different possible magnitudes").
    ns : tuple of int
        Main-task sample sizes (ours; paper 004, App. D: up to 1024 in most experiments).
    draws : int
        Draws of teachers, samples and initialisation (ours; not stated).
    max_steps : int
        Step cap of fine-tuning and STL training (ours; not stated).
    pre_max_steps : int or None
        Step cap of pretraining; ``None``: ``5 * max_steps``, the default of
        :func:`run_sample_efficiency` (ours).
    loss_tol : float
        Training stops at a loss below ``loss_tol`` times the mean squared label (ours; not
        stated).  The optimiser, full-batch gradient descent with the step of
        :func:`transferkit.models.relu.train_units`, is ours too.
    d : int
        Input dimension (ours; not stated).
    width : int
        Hidden units of the students (ours; not stated).
    units : int
        Units of each teacher (caption of Fig. 1c: six).
    n_aux : int
        Auxiliary-task samples (ours; paper 004, App. D: 1024 in most experiments).
    n_test : int
        Test inputs per draw (ours).
    alpha : float
        Initialisation scale of the students (ours; not stated).
    gamma : float
        Readout re-initialisation :math:`\gamma` of PT+FT (ours; paper 003, Sec. 1.1: "a
        small value"); the chapter prints it as equal to ``alpha``.
    seed : int
        Base seed of the random streams (ours).
    """

    rhos: tuple                     # ours (values not stated)
    magnitudes: tuple               # ours (values not stated)
    ns: tuple                       # ours (paper 004, App. D: up to 1024)
    draws: int                      # ours (not stated)
    max_steps: int                  # ours (not stated)
    pre_max_steps: int | None = None    # ours: 5 * max_steps
    loss_tol: float = 1e-6          # ours (not stated)
    d: int = 12                     # ours (not stated)
    width: int = 24                 # ours (not stated)
    units: int = 6                  # paper 003, caption of Fig. 1c
    n_aux: int = 128                # ours (paper 004, App. D: 1024)
    n_test: int = 1000              # ours
    alpha: float = 1e-2             # ours (not stated)
    gamma: float = 1e-2             # ours (paper 003, Sec. 1.1: "a small value")
    seed: int = 0                   # ours


#: The parameters of Fig. 1c of paper 003 at each ``TRANSFERKIT_SCALE``.
#:
#: ``paper``: six teacher units (caption of Fig. 1c; also paper 004, App. D).  Paper 003 states
#: no other parameter of the experiment: not the values of rho and m of its rows and columns,
#: not d, the width, the sample sizes, the initialisation, the optimiser, the stopping rule or
#: the number of draws; paper 004, App. D gives 1024 auxiliary samples and up to 1024
#: main-task samples "in most of our experiments".  Ours, and less than that because every
#: student is trained to a small loss on the book's CPU: rho = 1, 0.9 (the two values of the
#: prediction of Sec. 1.2) times m = 1, 0.1 (auxiliary readout 1, so m_aux / m = 1 and 10);
#: n = 8, 16, 32, 64; 2 draws; d = 12, 24 hidden units, 128 auxiliary samples, 1000 test
#: inputs; alpha = gamma = 1e-2; full-batch gradient descent that stops at a loss of 1e-6
#: times the mean squared label or after 20000 steps (pretraining 100000); seed 0.  The chapter's caption lists these
#: differences and prints how many runs converged.
#: ``smoke``: ours, the same pipeline small enough for the tests (rho = 1, m = 1, n = 8, 32,
#: one draw, 3000 steps).
SAMPLE_EFFICIENCY = {
    "paper": SampleEfficiencyPreset(rhos=(1.0, 0.9), magnitudes=(1.0, 0.1), ns=(8, 16, 32, 64),
                                    draws=2, max_steps=20_000),
    "smoke": SampleEfficiencyPreset(rhos=(1.0,), magnitudes=(1.0,), ns=(8, 32), draws=1,
                                    max_steps=3_000),
}


@dataclass(frozen=True)
class ReluFeaturesPreset:
    r"""Parameters of the clustering and dimensionality analysis of the students of Fig. 1c
    (paper 004, App. E.2 and G) at one scale.

    The presets are :data:`RELU_FEATURES`; the chapter notebook ``notebooks/ptft_relu.py``
    passes them to :func:`transferkit.stats.kmeans_inertia` and
    :func:`transferkit.stats.alignment_score`.

    Attributes
    ----------
    ks : tuple of int
        Numbers of clusters :math:`K` of the weighted k-means (ours; paper 004, App. E.2
        plots the inertia against :math:`K` without listing its values in the text).
    align_k : int
        :math:`K` of the alignment score (ours: the six teacher units of paper 003, caption
        of Fig. 1c; App. E.2 of paper 004 does not state it).
    """

    ks: tuple = (1, 2, 4, 6, 8)     # ours
    align_k: int = 6                # ours (six teacher units)


#: The parameters of the ReLU-feature analysis (paper 004, App. E.2 and G) at each
#: ``TRANSFERKIT_SCALE``.
#:
#: The analysis (k-means of the readout-weighted unit directions, App. E.2 with its footnote
#: on the weights; alignment score, App. E.2.1; participation ratio, App. G) is the paper's;
#: its numbers are ours: K = 1, 2, 4, 6, 8 clusters and the alignment score at K = 6, the
#: number of teacher units.  Paper 004's Figs. 6 and 8 use larger networks and more samples
#: (the students here are those of :data:`SAMPLE_EFFICIENCY`).  ``smoke``: the same.
RELU_FEATURES = {
    "paper": ReluFeaturesPreset(),
    "smoke": ReluFeaturesPreset(),
}


@dataclass(frozen=True)
class StudentRun:
    r"""The trained students of one method (STL or PT+FT) of paper 003, Fig. 1c.

    Attributes
    ----------
    error : ndarray, shape (len(ns), draws)
        Test error normalised by the variance of the main teacher's output.
    converged : ndarray of bool, shape (len(ns), draws)
        Whether training reached its loss tolerance.
    W : ndarray, shape (len(ns), draws, width, d)
        First-layer weights :math:`w_h`.
    a : ndarray, shape (len(ns), draws, width)
        Readout weights :math:`a_h`.
    """

    error: np.ndarray
    converged: np.ndarray
    W: np.ndarray
    a: np.ndarray


@dataclass(frozen=True)
class SampleEfficiencyResult:
    r"""The result of :func:`run_sample_efficiency` (paper 003, Fig. 1c).

    Attributes
    ----------
    ns : ndarray of int
        The main-task sample sizes.
    rho, magnitude : float
        Cosine between auxiliary and main teacher directions; main readout magnitude.
    pre_converged : ndarray of bool, shape (draws,)
        Whether pretraining converged.
    teachers : list of tuple
        Per draw, the teachers of :func:`transferkit.models.relu.teacher_pair`.
    W_pre : ndarray, shape (draws, width, d)
        The pretrained first-layer weights.
    stl, ptft : StudentRun
        The single-task and the pretrained-then-fine-tuned students.
    X_test : ndarray, shape (draws, n_test, d)
        The test inputs.
    """

    ns: np.ndarray
    rho: float
    magnitude: float
    pre_converged: np.ndarray
    teachers: list
    W_pre: np.ndarray
    stl: StudentRun
    ptft: StudentRun
    X_test: np.ndarray

    @property
    def methods(self) -> dict[str, StudentRun]:
        """``{"stl": ..., "ptft": ...}``, in that order."""
        return {"stl": self.stl, "ptft": self.ptft}


def _teacher_out(theta, w, X):
    return np.maximum(X @ theta.T, 0) @ w


def run_sample_efficiency(d: int, rho: float, magnitude: float, ns, *, draws: int,
                          width: int = 32, units: int = 6, n_aux: int = 256,
                          n_test: int = 2000, alpha: float = 1e-2, gamma: float = 1e-2,
                          seed: int = 0, loss_tol: float = 1e-6, max_steps: int = 50_000,
                          pre_max_steps: int | None = None,
                          **run_kwargs) -> SampleEfficiencyResult:
    r"""STL against PT+FT on a six-unit ReLU teacher (paper 003, Fig. 1c).

    Per draw ``j`` (generator ``default_rng([seed, j])``): the teachers
    (:func:`transferkit.models.relu.teacher_pair`), ``n_aux`` auxiliary samples, a student
    initialisation of scale ``alpha`` (:math:`w_h\sim\mathcal N(0, \alpha^2 I/d)`, :math:`a_h\sim\mathcal N(0,\alpha^2)`)
    and a test set; per sample size ``n`` (``default_rng([seed, j, n])``) the main-task
    samples.  **STL** trains from the initialisation on the main task; **PT+FT** pretrains on
    the auxiliary task, resets the readout to ``gamma`` and trains both layers on the main
    task.  Pretraining (one network per draw) may run for ``pre_max_steps`` (default
    ``5 * max_steps``).

    Returns
    -------
    SampleEfficiencyResult
        Per method a :class:`StudentRun`: test errors normalised by the teacher's output
        variance, ``(len(ns), draws)``, convergence and the trained weights.

    Everything is trained in one batch, so the experiment is one cell of
    :func:`transferkit.sweep.run` (:func:`sample_efficiency_cell`): cached and resumable as
    a whole.  ``run_kwargs`` (``cache``, ``directory``, ``version``, ``scheduler``,
    ``progress``) go to :func:`~transferkit.sweep.run`.
    """
    ns = [check_int("n", v, 1) for v in ns]
    draws = check_int("draws", draws, 1)
    seed = check_int("seed", seed, 0)
    sw = run(sample_efficiency_cell, Grid(seed=[seed]),
             fixed=dict(d=d, rho=rho, magnitude=magnitude, ns=ns, draws=draws, width=width,
                        units=units, n_aux=n_aux, n_test=n_test, alpha=alpha, gamma=gamma,
                        loss_tol=loss_tol, max_steps=max_steps, pre_max_steps=pre_max_steps),
             desc="STL, PT+FT", **run_kwargs)
    out = {name: np.ascontiguousarray(sw[name][0]) for name in sw.keys()}
    teachers = [tuple(np.ascontiguousarray(out[f"teacher_{i}"][j]) for i in range(4))
                for j in range(draws)]
    runs = {name: StudentRun(**{f.name: out[f"{name}_{f.name}"] for f in fields(StudentRun)})
            for name in ("stl", "ptft")}
    return SampleEfficiencyResult(ns=np.array(ns), rho=rho, magnitude=magnitude,
                                  pre_converged=out["pre_converged"], teachers=teachers,
                                  W_pre=out["W_pre"], stl=runs["stl"], ptft=runs["ptft"],
                                  X_test=out["X_test"])


def sample_efficiency_cell(seed, d, rho, magnitude, ns, draws, width=32, units=6, n_aux=256,
                           n_test=2000, alpha=1e-2, gamma=1e-2, loss_tol=1e-6,
                           max_steps=50_000, pre_max_steps=None):
    r"""The whole of :func:`run_sample_efficiency` for one ``seed``: a cell function for
    :func:`transferkit.sweep.run`.  Returns ``pre_converged``, ``W_pre``, ``X_test``, the
    teachers as ``teacher_0`` .. ``teacher_3`` (the four arrays of
    :func:`transferkit.models.relu.teacher_pair`, stacked over the draws) and each
    method's :class:`StudentRun` as ``stl_<field>``, ``ptft_<field>``."""
    dev = default_device()
    ns = [int(v) for v in ns]
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
    Wp, ap, _, _, pconv = train_units(W0.clone(), a0.clone(), t(Xa), t(ya), np.full(draws, n_aux),
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
    starts = {"stl": (W0[jj], a0[jj]), "ptft": (Wp[jj], torch.full_like(a0[jj], gamma))}
    runs = {}
    for name, (Ws, as_) in starts.items():
        W, a, loss, steps, conv = train_units(Ws.clone(), as_.clone(), t(X), t(y), np.array(nn, float),
                                        loss_tol=loss_tol, max_steps=max_steps)
        err = ((forward(W, a, Xt_t[jj]) - yt_t[jj]) ** 2).mean(1) / var[jj]
        runs[name] = StudentRun(error=err.cpu().numpy().reshape(len(ns), draws),
                                converged=conv.cpu().numpy().reshape(len(ns), draws),
                                W=W.cpu().numpy().reshape(len(ns), draws, width, d),
                                a=a.cpu().numpy().reshape(len(ns), draws, width))
    out = {"pre_converged": pconv.cpu().numpy(), "W_pre": Wp.cpu().numpy(), "X_test": np.array(Xt)}
    out.update({f"teacher_{i}": np.array([T[i] for T in teachers]) for i in range(4)})
    for name, r in runs.items():
        out.update({f"{name}_{f.name}": getattr(r, f.name) for f in fields(r)})
    return out
