r"""Paper 003, Fig. 1c: single-task learning against PT+FT in small ReLU networks."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from .._validate import check_int
from ..models.device import default_device
from ..models.relu import forward, teacher_pair, train_units
from ..sweep import Grid, run

__all__ = ["run_sample_efficiency", "sample_efficiency_cell", "StudentRun", "SampleEfficiencyResult"]


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
