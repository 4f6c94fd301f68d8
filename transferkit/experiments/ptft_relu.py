r"""Paper 003, Fig. 1c: single-task learning against PT+FT in small ReLU networks."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np
import torch

from .._validate import (MAX_INT, InputTypeError, check_array, check_bool, check_budget,
                         check_budget_among, check_choice, check_int, check_magnitude,
                         check_positive, check_values)
from ..models.device import as_tensor, default_device
from ..models.relu import forward, teacher_pair, train_units, train_units_mtl
from ..stats import alignment_score, direction_spread, ensd, kmeans_inertia, participation_ratio
from ..streams import keyed_rng
from ..sweep import Grid, run
from ..theory.penalties import relu_ptft_penalty
from ..theory.relu import relu_kernel, relu_ntk_kernel, tangent_kernel_solution

__all__ = ["PENALTY", "SAMPLE_EFFICIENCY", "SAMPLE_EFFICIENCY_FULL", "RELU_FEATURES",
           "PenaltyPreset", "SampleEfficiencyPreset", "ReluFeaturesPreset",
           "run_sample_efficiency", "run_sample_efficiency_grid", "sample_efficiency_cell",
           "run_mtl_students",
           "penalty_ratio", "StudentRun", "SampleEfficiencyResult", "run_stl_init_scale",
           "stl_init_scale_cell", "StlInitScaleResult", "DENSE_READOUTS", "dense_teacher",
           "run_stl_dense", "stl_dense_cell", "StlDenseResult", "NESTED_TASKS",
           "NestedRescalingResult", "run_nested_rescaling", "nested_rescaling_cell", "OVERLAP_LAZY_SCALE",
           "NestedStatistics", "nested_statistics", "NestedMtlResult", "run_nested_mtl",
           "nested_mtl_cell", "NestedMtlStatistics", "nested_mtl_statistics",
           "UnitClusters", "unit_clusters", "OVERLAP", "OVERLAP_FULL", "OVERLAP_FULL_STUDENTS",
           "OverlapPreset", "OverlapResult", "overlap_teachers", "overlap_cell", "run_overlap",
           "run_overlap_mtl"]


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
    lr_scale : float
        That step's fraction of the curvature bound, for pretraining, fine-tuning, STL and
        MTL alike (ours: 0.5, the trainer's default; neither paper states a learning rate;
        the chapter shows the results under other steps).
    step_ladder : tuple of float
        Other steps at which the chapter trains Fig. 1c's STL students of
        :math:`(\rho, m) = (1, 1)` again, each for the same horizon (step cap times
        ``lr_scale``), to show how far the chapter's step is from the small-step limit
        (ours).
    step_check : float
        The step at which the chapter runs the whole Fig. 1c grid again (ours: four times
        the chapter's, about five times fewer pretraining steps).
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
    mtl : bool
        Also train multi-task students (paper 004 trains MTL beside STL and PT+FT in Figs.
        4b, 5a and 6d-e; paper 003's Fig. 1c does not).  The loss weighting of the two tasks
        (the sum of their mean losses) and the stopping rule (every task to ``loss_tol``)
        are ours: paper 004 states neither.
    """

    rhos: tuple                     # ours (values not stated)
    magnitudes: tuple               # ours (values not stated)
    ns: tuple                       # ours (paper 004, App. D: up to 1024)
    draws: int                      # ours (not stated)
    max_steps: int                  # ours (not stated)
    pre_max_steps: int | None = None    # ours: 5 * max_steps
    loss_tol: float = 1e-6          # ours (not stated)
    lr_scale: float = 0.5           # ours (not stated)
    step_ladder: tuple = (0.125, 0.25, 1.0, 2.0)    # ours (sensitivity to the step)
    step_check: float = 2.0                         # ours (sensitivity to the step)
    d: int = 12                     # ours (not stated)
    width: int = 24                 # ours (not stated)
    units: int = 6                  # paper 003, caption of Fig. 1c
    n_aux: int = 128                # ours (paper 004, App. D: 1024)
    n_test: int = 1000              # ours
    alpha: float = 1e-2             # ours (not stated)
    gamma: float = 1e-2             # ours (paper 003, Sec. 1.1: "a small value")
    seed: int = 0                   # ours
    mtl: bool = False               # ours (paper 004 trains MTL in Figs. 4b, 5a, 6d-e)


#: The parameters of Fig. 1c of paper 003 at each ``TRANSFERKIT_SCALE``.
#:
#: ``paper``: six teacher units (caption of Fig. 1c; also paper 004, App. D) and 1024
#: auxiliary samples (paper 004, App. D: "1024 auxiliary task samples and up to 1024 main
#: task samples in most of our experiments").  Paper 003 states no other parameter of the
#: experiment: not the values of rho and m of its rows and columns, not d, the width, the
#: initialisation, the optimiser, the stopping rule or the number of draws.  Ours: rho = 1,
#: 0.9 (the two values of the prediction of Sec. 1.2) times m = 1, 0.1, 0.03, 0.01 (auxiliary
#: readout 1, so m_aux / m = 1 to 100; issue 18: the penalty predicts parity at m = 0.1 for
#: rho = 0.9 and a reversal only at m = 0.03 and 0.01, reuse / fresh ratios about 3.4 and
#: 10.5); 8 draws; d = 12 and 24 hidden units (neither is stated; larger ones do not fit the
#: book's CPU budget with every run trained to its tolerance); main-task n = 8, 16, 32, 64
#: (less than the paper's "up to 1024": the CPU budget); 1000 test inputs; alpha = gamma =
#: 1e-2; full-batch gradient descent that stops at a loss of 1e-6 times the mean squared
#: label, or after 50000 steps for STL and fine-tuning; pretraining (one network per draw,
#: the same for every rho and m) may take 10^6 steps, enough to reach the tolerance (it took
#: 17000 to 37000 in our runs; the chapter prints the steps and marks any run stopped at a
#: cap); seed 0.  The whole grid ran in 5 to 8 minutes on two shared CPU cores with the torch
#: loop, and in 36 s of one core on the compiled kernel of ``train_units`` (2026-11-29).  The step,
#: half the curvature bound of :func:`transferkit.models.relu.train_units` (ours: neither
#: paper states a learning rate), is varied by the chapter: STL at 1/4 to 4 times it, the
#: whole grid at 4 times it (``step_ladder``, ``step_check``).
#: ``smoke``: ours, the same pipeline small enough for the tests (rho = 1, m = 1, n = 8, 32,
#: one draw, 128 auxiliary samples, 3000 steps, pretraining stopped at 15000 steps; STL at
#: half and four times the step).
SAMPLE_EFFICIENCY = {
    "paper": SampleEfficiencyPreset(rhos=(1.0, 0.9), magnitudes=(1.0, 0.1, 0.03, 0.01),
                                    ns=(8, 16, 32, 64), draws=8, max_steps=50_000,
                                    pre_max_steps=1_000_000, n_aux=1024),
    "smoke": SampleEfficiencyPreset(rhos=(1.0,), magnitudes=(1.0,), ns=(8, 32), draws=1,
                                    max_steps=3_000, step_ladder=(0.25, 2.0)),
}

#: The protocol of Fig. 1c as far as papers 003 and 004 state it, for a cluster.
#:
#: 1024 auxiliary samples and main-task samples up to 1024 (paper 004, App. D), six teacher
#: units (paper 003, caption of Fig. 1c), every run trained to its tolerance (caps of 10^6
#: steps, ours), 8 draws (ours).  The rest as in ``SAMPLE_EFFICIENCY["paper"]`` (ours: d,
#: width, rho, m, alpha, gamma, the optimiser and the tolerance are not stated).  Far beyond
#: the book's CPU budget: run it with :func:`run_sample_efficiency_grid` and a Dask
#: scheduler (``scheduler=`` or ``TRANSFERKIT_SCHEDULER``), one cell per (rho, m).
SAMPLE_EFFICIENCY_FULL = SampleEfficiencyPreset(
    rhos=(1.0, 0.9), magnitudes=(1.0, 0.1, 0.03, 0.01),
    ns=(8, 16, 32, 64, 128, 256, 512, 1024), draws=8, max_steps=1_000_000,
    pre_max_steps=1_000_000, n_aux=1024)


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
    pr_alphas : tuple of float
        Initialisation scales of the reduced Fig. 8a (participation ratio of STL students,
        rich against large initialisation): the chapter's :math:`\alpha = 10^{-2}` and
        100 times it (ours; paper 004 states neither).
    rescale_factors : tuple of float
        Factors :math:`s` applied to the pretrained first layer before fine-tuning on the
        nested and disjoint one-feature tasks (paper 004, App. E.2.3 and the captions of
        Figs. 6f-g and 8b: 0.1, 1.0 and 10.0).
    nested_magnitude : float
        Readout of the one-unit main teacher of those tasks, the auxiliary readout being 1
        (ours; the ratio of main-task coefficient to pretrained weight scale that App. E.2.3
        says sets the regime is not stated, nor the coefficient).
    mtl_ns, mtl_draws : tuple of int, int
        Main-task sample sizes and draws of the multi-task students of the reduced Figs.
        6d-e (:func:`run_mtl_students`; ours: an MTL network learns the auxiliary task from
        the small initialisation, about 65,000 steps on 1024 + n samples at the ``paper``
        preset, so only the smallest and largest ``n`` of Fig. 1c and 4 of its draws fit
        the book's CPU budget: 315 to 422 s (rho = 1, in the chapter's paper runs) and 385 to
        711 s (rho = 0.9) of one core per cell; the paper's Figs. 6d-e use the tasks of its
        Fig. 2).  The multi-task students of the nested tasks (Figs. 6f-g,
        :func:`run_nested_mtl`) use the same sizes: 418 s of one core in the chapter's paper
        run.
    mtl_cells : tuple of (float, float)
        The :math:`(\rho, m)` cells of Fig. 1c at which the MTL students are trained (ours:
        :math:`(1, 1)`, two tasks with the same features, and :math:`(0.9, 1)`, features at
        cosine 0.9; paper 004 says "when main task and auxiliary task features are shared"
        without the tasks).
    cluster_ns : tuple of int
        Main-task sample sizes of the STL students of the reduced Figs. 6a-b and 8a
        (:func:`run_stl_init_scale` at ``pr_alphas``; ours: the :math:`n` of Fig. 1c, which
        must come first, then 128 and 256, beyond which the paper's "up to 1024" does not
        fit the book's CPU budget).
    cluster_max_steps : int
        Step cap of those students (ours: at Fig. 1c's 50,000 no small-initialisation run at
        :math:`n \ge 128` reached its tolerance; at 250,000 all 8 at :math:`n = 256` and 4 of 8
        at :math:`n = 128` did, in 314 s of one core for both scales; the runs that reach
        their tolerance are the same whatever the cap, so those of Fig. 1c's :math:`n` are
        Fig. 1c's STL students).
    dense_units : int
        Units of the dense teacher of Fig. 6a (paper 004, App. E.2.1: "many (1000) units";
        :func:`run_stl_dense`).
    dense_readouts : tuple of str
        Laws of the dense teacher's readouts, each a reading of its own
        (:data:`DENSE_READOUTS`; ours: the paper states no law, nor the units' directions;
        ours too, the directions uniform on the sphere and the readouts scaled so that the
        teacher's mean squared output is the six-unit teacher's).
    dense_max_steps : int
        Step cap of the students of the dense teacher (ours: at :math:`n \le 64` a run
        that has not reached its tolerance by 50,000 steps did not reach it by 250,000 in
        our trial, 8 draws of the Gaussian law from the small initialisation; the runs
        stopped at the cap are marked).
    """

    ks: tuple = (1, 2, 4, 6, 8)     # ours
    align_k: int = 6                # ours (six teacher units)
    pr_alphas: tuple = (1e-2, 1.0)  # ours (paper 004, Fig. 8a: small against large init)
    rescale_factors: tuple = (0.1, 1.0, 10.0)   # paper 004, App. E.2.3, Figs. 6f-g, 8b
    nested_magnitude: float = 1.0               # ours (not stated)
    mtl_ns: tuple = (8, 64)                     # ours (a subset of Fig. 1c's n)
    mtl_draws: int = 4                          # ours (the first draws of Fig. 1c)
    mtl_cells: tuple = ((1.0, 1.0), (0.9, 1.0))  # ours (rho, m)
    cluster_ns: tuple = (8, 16, 32, 64, 128, 256)   # ours (paper 004: up to 1024)
    cluster_max_steps: int = 250_000                # ours (not stated)
    dense_units: int = 1000                         # paper 004, App. E.2.1
    dense_readouts: tuple = ("gaussian", "positive")  # ours (not stated)
    dense_max_steps: int = 50_000                   # ours (not stated)


#: The parameters of the ReLU-feature analysis (paper 004, App. E.2 and G) at each
#: ``TRANSFERKIT_SCALE``.
#:
#: The analysis (k-means of the readout-weighted unit directions, App. E.2 with its footnote
#: on the weights; alignment score, App. E.2.1; participation ratio, App. G) is the paper's;
#: its numbers are ours: K = 1, 2, 4, 6, 8 clusters and the alignment score at K = 6, the
#: number of teacher units.  Paper 004 states no width or input dimension for its Figs. 6
#: and 8; its samples, "1024 auxiliary task samples and up to 1024 main task samples in most
#: of our experiments" (App. D), are more than ours (the students here are those of
#: :data:`SAMPLE_EFFICIENCY`).  The rescaling factors of the
#: nested-feature-selection tasks are the paper's (App. E.2.3: 0.1, 1.0, 10.0); the main
#: teacher's readout 1 is ours; so are the sizes of the multi-task students (``mtl_ns``,
#: ``mtl_draws``, ``mtl_cells``: n = 8 and 64, 4 draws, rho = 1 and 0.9 at m = 1).
#: The STL students of the reduced Figs. 6a-b and 8a are trained at n = 8 to 256 (ours), with
#: a cap of 250,000 steps (ours).  Fig. 6a's dense teacher has 1000 units (paper 004, App.
#: E.2.1); its law is ours (directions uniform on the sphere, Gaussian or equal positive
#: readouts scaled to the six-unit teacher's mean squared output), and so are its students'
#: sizes (those of Figs. 6a-b) and their cap of 50,000 steps.
#: ``smoke``: the same, with MTL at n = 32, 1 draw, rho = 1, STL students at n = 8, 32, 64 with
#: Fig. 1c's smoke cap of 3000 steps (the dense teacher's too, Gaussian readouts only).
RELU_FEATURES = {
    "paper": ReluFeaturesPreset(),
    "smoke": ReluFeaturesPreset(mtl_ns=(32,), mtl_draws=1, mtl_cells=((1.0, 1.0),),
                                cluster_ns=(8, 32, 64), cluster_max_steps=3_000,
                                dense_readouts=("gaussian",), dense_max_steps=3_000),
}


@dataclass(frozen=True)
class StudentRun:
    r"""The trained students of one method (STL, PT+FT or MTL) of paper 003, Fig. 1c.

    Attributes
    ----------
    error : ndarray, shape (len(ns), draws)
        Test error normalised by the variance of the main teacher's output.
    converged : ndarray of bool, shape (len(ns), draws)
        Whether training reached its loss tolerance.
    W : ndarray, shape (len(ns), draws, width, d)
        First-layer weights :math:`w_h`.
    a : ndarray, shape (len(ns), draws, width)
        Readout weights :math:`a_h` (MTL: the main task's readout).
    a_aux : ndarray, shape (len(ns), draws, width), or None
        MTL only: the auxiliary task's readout of the same units.
    """

    error: np.ndarray
    converged: np.ndarray
    W: np.ndarray
    a: np.ndarray
    a_aux: np.ndarray | None = None

    @property
    def unit_readout(self) -> np.ndarray:
        r"""Readout magnitude of each unit, :math:`\|A_h\|_2` over the tasks it serves (paper
        004, Eq. 32: the unit's weight in the :math:`\ell_{1,2}` norm is
        :math:`\|A_h\|_2\|w_h\|_2`); :math:`|a_h|` for a single-task network."""
        if self.a_aux is None:
            return np.abs(self.a)
        return np.hypot(self.a, self.a_aux)


def _student_methods(result) -> dict[str, StudentRun]:
    """``{"stl": ..., "ptft": ...}`` and ``"mtl"`` when trained, in that order: the
    ``methods`` of the results that hold these three :class:`StudentRun` fields."""
    runs = {"stl": result.stl, "ptft": result.ptft}
    if result.mtl is not None:
        runs["mtl"] = result.mtl
    return runs


def _student_runs(out, names=("stl", "ptft", "mtl")) -> dict[str, StudentRun]:
    """The :class:`StudentRun` of each method of ``names`` whose ``<method>_<field>`` arrays a
    cell returned (:func:`_run_arrays` with the method as prefix), in the order of ``names``."""
    return {name: StudentRun(**{f.name: out[f"{name}_{f.name}"] for f in fields(StudentRun)
                                if f"{name}_{f.name}" in out})
            for name in names if f"{name}_error" in out}


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
    mtl : StudentRun or None
        The multi-task students (shared first layer trained on both tasks at once), when
        the run asked for them (``mtl=True``).
    X_test : ndarray, shape (draws, n_test, d)
        The test inputs.
    pre_steps : ndarray of int, shape (draws,), optional
        Gradient steps pretraining took (its cap where it did not converge).
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
    pre_steps: np.ndarray | None = None
    mtl: StudentRun | None = None

    methods = property(_student_methods)


#: Key of the stream of the MTL students' auxiliary readout after ``(seed, draw)``.  Not
#: ``(0,)``: numpy's SeedSequence ignores trailing zeros, so ``[seed, j, 0]`` is the stream
#: ``[seed, j]`` of the draw's teachers; ``(0, 1)`` is used by no other stream of this module
#: (the main samples are ``[seed, j, n]`` with ``n >= 1``).
MTL_READOUT_KEY = (0, 1)

#: In-process memory of the last pretrainings of :func:`sample_efficiency_cell` and the cells
#: that share it, keyed by the parameters they depend on (the same for every ``rho`` and
#: ``magnitude``), at most :data:`_PRETRAINED_KEEP` of them, the oldest dropped first.
_PRETRAINED: dict = {}
_PRETRAINED_KEEP = 4


#: Largest teacher magnitude, initialisation scale and readout re-initialisation of the
#: small ReLU networks: their losses grow as the fourth power of the weights' scale (at
#: 1e300 the first step overflowed to a non-finite loss that the trainer blamed on its step
#: size).  Below 1e50 every loss stays far inside the float range.
SCALE_MAX = 1e50


def _checked(d, rho, magnitude, ns, draws, width, units, n_aux, n_test, alpha, gamma, seed,
             loss_tol, max_steps, pre_max_steps, mtl=False, lr_scale=0.5):
    """The arguments of :func:`run_sample_efficiency`, checked; the integers as ``int``.

    The one check of the experiment functions and of their cells (which pass neutral values,
    e.g. ``gamma=1.0``, ``pre_max_steps=None``, for the parameters they do not take): a
    ``ValueError`` naming the parameter, and the memory budget, before any allocation."""
    d, width, units = check_int("d", d, 2), check_int("width", width, 1), check_int("units", units, 1)
    check_values("rho", rho, -1, 1)
    check_magnitude("magnitude", check_positive("magnitude", magnitude), SCALE_MAX)
    if isinstance(ns, (str, bytes)) or not np.iterable(ns) or len(ns) == 0:
        raise ValueError(f"ns must be a non-empty sequence of integers >= 1 (got {ns!r})")
    ns = [check_int("n", v, 1) for v in ns]
    draws, seed = check_int("draws", draws, 1), check_int("seed", seed, 0)
    n_aux, n_test = check_int("n_aux", n_aux, 1), check_int("n_test", n_test, 2)
    check_magnitude("alpha", check_positive("alpha", alpha), SCALE_MAX)
    check_magnitude("gamma", check_positive("gamma", gamma), SCALE_MAX)
    check_values("loss_tol", loss_tol, 0, 1, lo_open=True)
    check_positive("lr_scale", lr_scale)
    max_steps = check_int("max_steps", max_steps, 1)
    if pre_max_steps is not None:
        pre_max_steps = check_int("pre_max_steps", pre_max_steps, 1)
    check_bool("mtl", mtl)
    if 2 * units > d:
        raise ValueError(f"d must be >= 2 * units (got d={d}, units={units})")
    # float64 per draw: the samples (auxiliary, test, main) with their hidden activations and
    # the networks (pretraining, then STL, PT+FT and MTL per n) with their gradients, before
    # any allocation or loop over draws; named: the size furthest above the paper preset
    len_ns, paper = len(ns), SAMPLE_EFFICIENCY["paper"]

    def estimate(d, width, n_aux, n_test, ns, draws):
        return 8 * draws * ((n_aux + n_test + ns) * (d + width)
                            + 4 * (3 * len_ns + 1) * width * (d + 2))

    check_budget_among(estimate, dict(d=d, width=width, n_aux=n_aux, n_test=n_test, ns=sum(ns),
                                      draws=draws),
                       dict(d=paper.d, width=paper.width, n_aux=paper.n_aux,
                            n_test=paper.n_test, ns=max(paper.ns) * len_ns, draws=paper.draws),
                       shown=dict(ns=max(ns)))
    return d, width, units, ns, draws, seed, n_aux, n_test, max_steps, pre_max_steps


def _teacher_out(theta, w, X):
    return np.maximum(X @ theta.T, 0) @ w


def run_sample_efficiency(d: int, rho: float, magnitude: float, ns, *, draws: int,
                          width: int = 32, units: int = 6, n_aux: int = 256,
                          n_test: int = 2000, alpha: float = 1e-2, gamma: float = 1e-2,
                          seed: int = 0, loss_tol: float = 1e-6, max_steps: int = 50_000,
                          pre_max_steps: int | None = None, mtl: bool = False,
                          lr_scale: float = 0.5, **run_kwargs) -> SampleEfficiencyResult:
    r"""STL against PT+FT (and MTL) on a six-unit ReLU teacher (paper 003, Fig. 1c).

    Per draw ``j`` (generator ``default_rng([seed, j])``): the teachers
    (:func:`transferkit.models.relu.teacher_pair`), ``n_aux`` auxiliary samples, a student
    initialisation of scale ``alpha`` (:math:`w_h\sim\mathcal N(0, \alpha^2 I/d)`, :math:`a_h\sim\mathcal N(0,\alpha^2)`)
    and a test set; per sample size ``n`` (``default_rng([seed, j, n])``) the main-task
    samples.  **STL** trains from the initialisation on the main task; **PT+FT** pretrains on
    the auxiliary task, resets the readout to ``gamma`` and trains both layers on the main
    task.  Pretraining (one network per draw) may run for ``pre_max_steps`` (default
    ``5 * max_steps``).  With ``mtl``, **MTL** (paper 004, App. B.2) trains the same
    initialisation, with a second readout for the auxiliary task (scale ``alpha``, from
    the stream ``(seed, j, *MTL_READOUT_KEY)``), on both tasks at once
    (:func:`transferkit.models.relu.train_units_mtl`: the sum of the two tasks' mean
    losses, every task to ``loss_tol``), for at most the pretraining's cap of steps, since
    it learns the auxiliary task from the small initialisation as pretraining does.  Every
    network is trained with the step ``lr_scale`` of
    :func:`transferkit.models.relu.train_units` and
    :func:`~transferkit.models.relu.train_units_mtl`.

    Returns
    -------
    SampleEfficiencyResult
        Per method a :class:`StudentRun`: test errors normalised by the teacher's output
        variance, ``(len(ns), draws)``, convergence and the trained weights.

    Raises
    ------
    ValueError
        Naming the parameter, for ``d`` < 2 ``units``, ``rho`` outside [-1, 1], a magnitude,
        ``alpha``, ``gamma`` or ``lr_scale`` not > 0, ``loss_tol`` outside (0, 1], an empty ``ns`` or a
        count (``n``, ``draws``, ``width``, ``units``, ``n_aux``, ``n_test``,
        ``max_steps``, ``pre_max_steps``, ``seed``) below its minimum; a ``TypeError`` for
        an ``mtl`` that is not a bool.

    Notes
    -----
    Everything is trained in one batch, so the experiment is one cell of
    :func:`transferkit.sweep.run` (:func:`sample_efficiency_cell`): cached and resumable as
    a whole.  ``run_kwargs`` (``cache``, ``directory``, ``version``, ``scheduler``,
    ``progress``) go to :func:`~transferkit.sweep.run`.  Pretraining depends on neither
    ``rho`` nor ``magnitude``; a process that runs several of them (e.g.
    :func:`run_sample_efficiency_grid`) trains it once.  ``pre_steps`` in the result says
    how many steps it took: a run at its cap is marked unconverged in ``pre_converged``.
    """
    d, width, units, ns, draws, seed, n_aux, n_test, max_steps, pre_max_steps = _checked(
        d, rho, magnitude, ns, draws, width, units, n_aux, n_test, alpha, gamma, seed, loss_tol,
        max_steps, pre_max_steps, mtl, lr_scale)
    sw = run(sample_efficiency_cell, Grid(seed=[seed]),
             fixed=dict(d=d, rho=rho, magnitude=magnitude, ns=ns, draws=draws, width=width,
                        units=units, n_aux=n_aux, n_test=n_test, alpha=alpha, gamma=gamma,
                        loss_tol=loss_tol, max_steps=max_steps, pre_max_steps=pre_max_steps,
                        mtl=mtl, lr_scale=lr_scale),
             desc="STL, PT+FT, MTL" if mtl else "STL, PT+FT", **run_kwargs)
    return _result(sw, (0,), rho, magnitude, draws, ns)


def _task_draws(seed, d, rho, magnitude, draws, width, units, n_aux, n_test, alpha, dev):
    """Per draw ``j`` from ``default_rng([seed, j])``, in this order: the teachers, the
    auxiliary samples and labels, the student initialisation of scale ``alpha``, the test
    inputs and labels.  ``(teachers, Xa, ya, W0, a0, Xt, yt)``: lists, and the
    initialisation as float64 tensors on ``dev``."""
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
    W0 = as_tensor([i[0] for i in inits], dev)
    a0 = as_tensor([i[1] for i in inits], dev)
    return teachers, Xa, ya, W0, a0, Xt, yt


def _main_samples(seed, d, ns, draws, teachers):
    """The main-task samples of every ``(n, draw)`` (``default_rng([seed, j, n])``), padded
    to the largest ``n``: ``X (G, N, d)``, ``y (G, N)``, the sizes and the draw indices."""
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
    return X, y, nn, np.array(jj)


def _train_students(W_start, a_start, seed, d, ns, draws, teachers, Xt, yt, loss_tol, max_steps,
                    dev, lr_scale=0.5) -> StudentRun:
    """Train students from ``(W_start, a_start)`` (one per draw) on the main-task samples of
    every ``(n, draw)`` (:func:`_main_samples`) and score them on the test set."""
    X, y, nn, jj = _main_samples(seed, d, ns, draws, teachers)
    W, a, loss, steps, conv = train_units(W_start[jj].clone(), a_start[jj].clone(),
                                          as_tensor(X, dev), as_tensor(y, dev),
                                          np.array(nn, float), loss_tol=loss_tol,
                                          max_steps=max_steps, lr_scale=lr_scale)
    return _scored(W, a, conv, Xt, yt, jj, (len(ns), draws), dev)


def _scored(W, a, conv, Xt, yt, jj, shape, dev, a_aux=None) -> StudentRun:
    """The :class:`StudentRun` of networks ``(W, a)``: network ``i`` is scored on test set
    ``jj[i]`` of the stacked ``(Xt, yt)`` (its draw's; in the nested cell, its task's and
    draw's), test error over the variance of that set's labels, everything reshaped to
    ``shape`` (``(len(ns), draws)``, or with leading axes of tasks and methods)."""
    Xt_t, yt_t = as_tensor(Xt, dev), as_tensor(yt, dev)
    err = ((forward(W, a, Xt_t[jj]) - yt_t[jj]) ** 2).mean(1) / yt_t.var(1)[jj]
    host = lambda v, *tail: v.cpu().numpy().reshape(*shape, *tail)  # noqa: E731
    width, d = W.shape[1:]
    return StudentRun(error=host(err), converged=host(conv), W=host(W, width, d),
                      a=host(a, width), a_aux=None if a_aux is None else host(a_aux, width))


def _run_arrays(run: StudentRun) -> dict:
    """The fields of a :class:`StudentRun` that hold arrays (``a_aux`` only for MTL), as a
    sweep cell returns them."""
    return {f.name: getattr(run, f.name) for f in fields(run) if getattr(run, f.name) is not None}


def _train_mtl(W0, a0, seed, d, ns, draws, teachers, Xa, ya, Xt, yt, alpha, loss_tol, max_steps,
               dev, lr_scale=0.5) -> StudentRun:
    """MTL students: from the STL initialisation ``(W0, a0)`` plus an auxiliary readout of
    scale ``alpha`` (stream ``(seed, j, *MTL_READOUT_KEY)``), one network
    per ``(n, draw)`` trained on the draw's auxiliary samples and the main samples of
    :func:`_main_samples` at once; scored on the main task's test set."""
    W_s, A0, Xs, ys, counts, jj = _mtl_batch(W0, a0, seed, d, ns, draws, teachers, Xa, ya,
                                             alpha, dev)
    W, A, _, _, conv = train_units_mtl(W_s, A0, Xs, ys, counts, loss_tol=loss_tol,
                                       max_steps=max_steps, lr_scale=lr_scale)
    return _scored(W, A[..., 1], conv, Xt, yt, jj, (len(ns), draws), dev, a_aux=A[..., 0])


def _mtl_batch(W0, a0, seed, d, ns, draws, teachers, Xa, ya, alpha, dev):
    """The MTL students' start and data, one network per ``(n, draw)`` of
    :func:`_main_samples`: ``(W, A, (Xa, X), (ya, y), (n_aux, n), jj)`` as
    :func:`transferkit.models.relu.train_units_mtl` takes them (outputs: auxiliary, main),
    and the draw index of each network."""
    X, y, nn, jj = _main_samples(seed, d, ns, draws, teachers)
    width = W0.shape[1]
    a_aux0 = as_tensor([alpha * keyed_rng(seed, j, *MTL_READOUT_KEY).standard_normal(width)
                        for j in range(draws)], dev)
    A0 = torch.stack([a_aux0[jj], a0[jj]], -1)          # outputs: (auxiliary, main)
    Xa_t, ya_t = as_tensor(Xa, dev)[jj], as_tensor(ya, dev)[jj]
    return (W0[jj].clone(), A0, (Xa_t, as_tensor(X, dev)), (ya_t, as_tensor(y, dev)),
            (np.full(len(jj), Xa_t.shape[1], float), np.array(nn, float)), jj)


def stl_init_scale_cell(alpha, seed, d, rho, magnitude, ns, draws, width=32, units=6,
                        n_aux=256, n_test=2000, loss_tol=1e-6, max_steps=50_000,
                        lr_scale=0.5) -> dict:
    r"""Single-task learning of :func:`sample_efficiency_cell` alone, at initialisation
    scale ``alpha``: a cell function for :func:`transferkit.sweep.run` (one cell per
    ``alpha``).  The teachers, main-task and test samples are those of
    :func:`run_sample_efficiency` with the same arguments (the auxiliary samples are drawn
    and not used, so that the streams stay the same), and the initialisation is the same
    normals times ``alpha``; the step is ``lr_scale``
    (:func:`transferkit.models.relu.train_units`).  Returns the :class:`StudentRun` fields
    as ``error``, ``converged``, ``W``, ``a``, the initial weights ``W0``
    ``(draws, width, d)`` and ``a0``, ``X_test`` and the main teacher's unit directions
    ``teacher_dirs`` ``(draws, units, d)``.  The arguments are checked as by
    :func:`run_stl_init_scale`, before any work."""
    d, width, units, ns, draws, seed, n_aux, n_test, max_steps, _ = _checked(
        d, rho, magnitude, ns, draws, width, units, n_aux, n_test, alpha, 1.0, seed, loss_tol,
        max_steps, None, lr_scale=lr_scale)
    dev = default_device()
    teachers, _, _, W0, a0, Xt, yt = _task_draws(seed, d, rho, magnitude, draws, width, units,
                                                 n_aux, n_test, alpha, dev)
    run = _train_students(W0, a0, seed, d, ns, draws, teachers, Xt, yt, loss_tol, max_steps, dev,
                          lr_scale)
    return {**_run_arrays(run),
            "W0": W0.cpu().numpy(), "a0": a0.cpu().numpy(), "X_test": np.array(Xt),
            "teacher_dirs": np.array([T[2] for T in teachers])}


@dataclass(frozen=True)
class StlInitScaleResult:
    r"""Single-task students at several initialisation scales (:func:`run_stl_init_scale`).

    Attributes
    ----------
    alphas : ndarray
        The initialisation scales.
    ns : ndarray of int
        The main-task sample sizes.
    runs : list of StudentRun
        Per ``alpha``, the trained students (``(len(ns), draws, ...)`` arrays).
    W0 : ndarray, shape (len(alphas), draws, width, d)
        The initial first-layer weights.
    X_test : ndarray, shape (draws, n_test, d)
        The test inputs (the same for every ``alpha``).
    teacher_dirs : ndarray, shape (draws, units, d)
        The main teacher's unit directions :math:`\theta'_h` of each draw (the same for
        every ``alpha``).
    """

    alphas: np.ndarray
    ns: np.ndarray
    runs: list
    W0: np.ndarray
    X_test: np.ndarray
    teacher_dirs: np.ndarray


def _checked_alphas(alphas) -> np.ndarray:
    """Initialisation scales as a float array: a ``ValueError`` for an empty sequence, a
    non-sequence, or a scale not > 0 or above :data:`SCALE_MAX` (naming ``alpha``)."""
    if isinstance(alphas, (str, bytes)) or not np.iterable(alphas) or len(alphas) == 0:
        raise ValueError(f"alphas must be a non-empty sequence of numbers > 0 (got {alphas!r})")
    alphas = np.array([check_positive("alpha", a) for a in alphas], dtype=float)
    check_magnitude("alpha", alphas, SCALE_MAX)
    return alphas


def run_stl_init_scale(d: int, rho: float, magnitude: float, ns, alphas, *, draws: int,
                       width: int = 32, units: int = 6, n_aux: int = 256, n_test: int = 2000,
                       seed: int = 0, loss_tol: float = 1e-6, max_steps: int = 50_000,
                       lr_scale: float = 0.5, **run_kwargs) -> StlInitScaleResult:
    r"""STL of paper 003, Fig. 1c at several initialisation scales (paper 004, Fig. 8a).

    Paper 004, App. G: networks in the rich regime (small initialisation) learn
    representations of lower participation ratio than networks in the lazy regime (large
    initialisation).  For every ``alpha`` the single-task students of
    :func:`run_sample_efficiency` (same arguments, same teachers and samples; at the
    ``alpha`` of a :func:`run_sample_efficiency` call its STL students exactly) are trained
    from the initialisation scaled to ``alpha``, with the step ``lr_scale`` of
    :func:`transferkit.models.relu.train_units`; one :func:`transferkit.sweep.run` cell per
    ``alpha`` (:func:`stl_init_scale_cell`).  ``run_kwargs`` go to
    :func:`~transferkit.sweep.run`.

    Raises
    ------
    ValueError
        As :func:`run_sample_efficiency`, and for an empty ``alphas`` or one not > 0.
    """
    alphas = _checked_alphas(alphas)
    d, width, units, ns, draws, seed, n_aux, n_test, max_steps, _ = _checked(
        d, rho, magnitude, ns, draws, width, units, n_aux, n_test, float(alphas[0]), 1.0, seed,
        loss_tol, max_steps, None, lr_scale=lr_scale)
    kw = dict(run_kwargs)
    kw.setdefault("desc", "STL at each initialisation scale")
    sw = run(stl_init_scale_cell, Grid(alpha=alphas),
             fixed=dict(seed=seed, d=d, rho=rho, magnitude=magnitude, ns=ns, draws=draws,
                        width=width, units=units, n_aux=n_aux, n_test=n_test,
                        loss_tol=loss_tol, max_steps=max_steps, lr_scale=lr_scale), **kw)
    runs = [StudentRun(**{f.name: np.ascontiguousarray(sw[f.name][k]) for f in fields(StudentRun)
                          if f.name in sw.keys()})
            for k in range(len(alphas))]
    return StlInitScaleResult(alphas=alphas, ns=np.array(ns), runs=runs,
                              W0=np.ascontiguousarray(sw["W0"]),
                              X_test=np.ascontiguousarray(sw["X_test"][0]),
                              teacher_dirs=np.ascontiguousarray(sw["teacher_dirs"][0]))


#: Key of the dense teacher's stream after ``(seed, draw)`` (:func:`stl_dense_cell`: its
#: units, readouts and test inputs); used by no other stream of this module.
DENSE_TEACHER_KEY = (0, 2)

#: Laws of a dense teacher's readouts (:func:`dense_teacher`): ``"gaussian"``,
#: :math:`a_h\sim\mathcal N(0, 1)`; ``"positive"``, every :math:`a_h` equal; both scaled.
DENSE_READOUTS = ("gaussian", "positive")


def dense_teacher(d: int, units: int, readout: str, second_moment: float,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    r"""A dense ReLU teacher :math:`f_*(x) = \sum_{h=1}^{H} a_h(\langle\theta_h, x\rangle)_+`
    (paper 004, App. E.2.1 and Fig. 6a: a teacher of "many (1000) units").

    The directions :math:`\theta_h` are uniform on the unit sphere of :math:`\mathbb R^d`;
    the readouts follow the law ``readout`` (:data:`DENSE_READOUTS`) and are then scaled by
    one factor so that the teacher's mean squared output is ``second_moment``,

    .. math:: \mathbb E_{x\sim\mathcal N(0, I_d)}\, f_*(x)^2 = a^\top K(\Theta, \Theta)\, a,

    with :math:`K` the ReLU Gram matrix of :func:`transferkit.theory.relu.relu_kernel`.  The
    paper states neither the law of the units nor that of the readouts.

    Returns ``(theta, a)``, shapes ``(units, d)`` and ``(units,)``.

    Raises
    ------
    ValueError
        Before any draw, naming the argument: ``d`` < 1, ``units`` < 1, ``readout`` not one of
        :data:`DENSE_READOUTS`, ``second_moment`` not > 0.
    """
    d, units = check_int("d", d, 1), check_int("units", units, 1)
    readout = check_choice("readout", readout, DENSE_READOUTS)
    second_moment = check_positive("second_moment", second_moment)
    theta = rng.standard_normal((units, d))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)
    a = rng.standard_normal(units) if readout == "gaussian" else np.ones(units)
    return theta, a * np.sqrt(second_moment / (a @ relu_kernel(theta, theta) @ a))


def _checked_dense_units(dense_units, d, draws, n_test) -> int:
    """``dense_units`` (:func:`stl_dense_cell`) as an ``int`` >= 1 within the memory budget:
    per draw the teacher's units, its Gram matrix and its test activations (``d``, ``draws``
    and ``n_test`` already checked)."""
    dense_units = check_int("dense_units", dense_units, 1)
    check_budget("dense_units", dense_units,
                 8 * dense_units * (draws * d + n_test + 4 * dense_units))
    return dense_units


def stl_dense_cell(alpha, readout, seed, d, ns, draws, width=32, units=6, dense_units=1000,
                   n_aux=256, n_test=2000, loss_tol=1e-6, max_steps=50_000,
                   lr_scale=0.5) -> dict:
    r"""Single-task students of a dense teacher (:func:`run_stl_dense`), one initialisation
    scale ``alpha`` and readout law ``readout``: a cell function for
    :func:`transferkit.sweep.run`.

    Per draw :math:`j` the teacher (:func:`dense_teacher`, ``dense_units`` units, scaled to
    the mean squared output of draw :math:`j`'s six-unit main teacher of
    :func:`run_stl_init_scale` at :math:`\rho = m = 1`) and then the test inputs come from the
    stream ``(seed, j, *DENSE_TEACHER_KEY)``; the main-task inputs and the initial normals
    are those of :func:`run_stl_init_scale` with the same arguments, so a student here and
    there differ in their teacher alone.  Returns the :class:`StudentRun` fields as
    ``error``, ``converged``, ``W``, ``a`` and the initial weights ``W0``
    ``(draws, width, d)``.  The arguments are checked as by :func:`run_stl_dense`, before any
    work."""
    d, width, units, ns, draws, seed, n_aux, n_test, max_steps, _ = _checked(
        d, 1.0, 1.0, ns, draws, width, units, n_aux, n_test, alpha, 1.0, seed, loss_tol,
        max_steps, None, lr_scale=lr_scale)
    readout = check_choice("readout", readout, DENSE_READOUTS)
    dense_units = _checked_dense_units(dense_units, d, draws, n_test)
    dev = default_device()
    sparse, _, _, W0, a0, _, _ = _task_draws(seed, d, 1.0, 1.0, draws, width, units, n_aux,
                                             n_test, alpha, dev)
    teachers, Xt, yt = [], [], []
    for j, T in enumerate(sparse):
        rng = keyed_rng(seed, j, *DENSE_TEACHER_KEY)
        theta, a = dense_teacher(d, dense_units, readout,
                                 float(T[3] @ relu_kernel(T[2], T[2]) @ T[3]), rng)
        teachers.append((None, None, theta, a))             # the main teacher's slots
        Xt.append(rng.standard_normal((n_test, d)))
        yt.append(_teacher_out(theta, a, Xt[-1]))
    run = _train_students(W0, a0, seed, d, ns, draws, teachers, Xt, yt, loss_tol, max_steps, dev,
                          lr_scale)
    return {**_run_arrays(run), "W0": W0.cpu().numpy()}


@dataclass(frozen=True)
class StlDenseResult:
    r"""Single-task students of dense teachers (:func:`run_stl_dense`; paper 004, Fig. 6a).

    Attributes
    ----------
    readouts : tuple of str
        The readout laws of the teachers (:data:`DENSE_READOUTS`).
    alphas : ndarray
        The initialisation scales.
    ns : ndarray of int
        The main-task sample sizes.
    dense_units : int
        Units of each teacher.
    runs : tuple of tuple of StudentRun
        ``runs[i][k]``: the students of law ``readouts[i]`` from scale ``alphas[k]``
        (``(len(ns), draws, ...)`` arrays); :meth:`student` looks them up by value.
    W0 : ndarray, shape (len(alphas), draws, width, d)
        The initial first-layer weights (those of :func:`run_stl_init_scale`).
    """

    readouts: tuple
    alphas: np.ndarray
    ns: np.ndarray
    dense_units: int
    runs: tuple
    W0: np.ndarray

    def student(self, readout: str, alpha: float) -> StudentRun:
        """The students of law ``readout`` from scale ``alpha`` (a ``KeyError`` if not run)."""
        hits = np.flatnonzero(self.alphas == alpha)
        if readout not in self.readouts or hits.size == 0:
            raise KeyError(f"no students of readout {readout!r} at alpha {alpha!r} (run: "
                           f"{self.readouts} x {self.alphas.tolist()})")
        return self.runs[self.readouts.index(readout)][int(hits[0])]


def run_stl_dense(d: int, ns, alphas, readouts=DENSE_READOUTS, *, draws: int,
                  width: int = 32, units: int = 6, dense_units: int = 1000, n_aux: int = 256,
                  n_test: int = 2000, seed: int = 0, loss_tol: float = 1e-6,
                  max_steps: int = 50_000, lr_scale: float = 0.5,
                  **run_kwargs) -> StlDenseResult:
    r"""Single-task learning on a dense teacher at several initialisation scales (paper 004,
    App. E.2.1, Fig. 6a: "for tasks with many (1000) units in the teacher network, the
    network finds solutions that use a small number of feature clusters when main task
    samples are limited, but gradually uses more clusters as the number of samples is
    increased"; networks from a large initialisation "display no such bias").

    The students of :func:`run_stl_init_scale` (same arguments: same main-task inputs,
    initial normals, widths, stopping rule) with the six-unit teacher replaced by a dense one
    of ``dense_units`` units per readout law (:func:`dense_teacher`,
    :func:`stl_dense_cell`); one :func:`transferkit.sweep.run` cell per ``(alpha,
    readout)``, cached, resumable, Dask with ``scheduler=``.  ``run_kwargs`` go to
    :func:`~transferkit.sweep.run`.

    Raises
    ------
    ValueError
        As :func:`run_stl_init_scale`; for ``dense_units`` < 1 or beyond the memory budget
        and for an empty ``readouts`` or one not in :data:`DENSE_READOUTS` (a ``TypeError``
        if not a str); all before any training.
    """
    alphas = _checked_alphas(alphas)
    if isinstance(readouts, (str, bytes)) or not np.iterable(readouts) or len(readouts) == 0:
        raise ValueError(f"readouts must be a non-empty sequence of {DENSE_READOUTS} "
                         f"(got {readouts!r})")
    readouts = tuple(check_choice("readout", r, DENSE_READOUTS) for r in readouts)
    d, width, units, ns, draws, seed, n_aux, n_test, max_steps, _ = _checked(
        d, 1.0, 1.0, ns, draws, width, units, n_aux, n_test, float(alphas[0]), 1.0, seed,
        loss_tol, max_steps, None, lr_scale=lr_scale)
    dense_units = _checked_dense_units(dense_units, d, draws, n_test)
    kw = dict(run_kwargs)
    kw.setdefault("desc", "STL on dense teachers")
    sw = run(stl_dense_cell, Grid(readout=list(readouts), alpha=alphas),
             fixed=dict(seed=seed, d=d, ns=ns, draws=draws, width=width, units=units,
                        dense_units=dense_units, n_aux=n_aux, n_test=n_test,
                        loss_tol=loss_tol, max_steps=max_steps, lr_scale=lr_scale), **kw)
    runs = tuple(tuple(StudentRun(**{f.name: np.ascontiguousarray(sw[f.name][i, k])
                                     for f in fields(StudentRun) if f.name in sw.keys()})
                       for k in range(len(alphas)))
                 for i in range(len(readouts)))
    return StlDenseResult(readouts=readouts, alphas=alphas, ns=np.array(ns),
                          dense_units=dense_units, runs=runs,
                          W0=np.ascontiguousarray(sw["W0"][0]))


def _pretrained(seed, d, units, n_aux, width, alpha, draws, loss_tol, cap, W0, a0, Xa, ya, dev,
                lr_scale=0.5):
    """The pretrained networks ``(Wp, ap, steps, converged)`` of the draws of
    :func:`_task_draws`: gradient descent on the auxiliary task from ``(W0, a0)`` with the
    step ``lr_scale``, at most ``cap`` steps.  Pretraining depends on neither rho nor the
    magnitude (the auxiliary teacher, its samples and the initialisation come first from the
    same streams), so it is trained once per process and kept in :data:`_PRETRAINED` (the
    last few: the chapter alternates between the 8 draws of its grids and the 4 of its MTL
    students)."""
    key = (seed, d, units, n_aux, width, alpha, draws, loss_tol, cap, str(dev), lr_scale)
    if key not in _PRETRAINED:
        while len(_PRETRAINED) >= _PRETRAINED_KEEP:
            del _PRETRAINED[next(iter(_PRETRAINED))]        # the oldest (insertion order)
        Wp, ap, _, psteps, pconv = train_units(W0.clone(), a0.clone(), as_tensor(Xa, dev),
                                               as_tensor(ya, dev), np.full(draws, n_aux),
                                               loss_tol=loss_tol, max_steps=cap,
                                               lr_scale=lr_scale)
        _PRETRAINED[key] = (Wp, ap, psteps, pconv)
    return _PRETRAINED[key]


def sample_efficiency_cell(seed, d, rho, magnitude, ns, draws, width=32, units=6, n_aux=256,
                           n_test=2000, alpha=1e-2, gamma=1e-2, loss_tol=1e-6,
                           max_steps=50_000, pre_max_steps=None, mtl=False, lr_scale=0.5):
    r"""The whole of :func:`run_sample_efficiency` for one ``seed``: a cell function for
    :func:`transferkit.sweep.run`.  Returns ``pre_converged``, ``pre_steps``, ``W_pre``,
    ``X_test``, the
    teachers as ``teacher_0`` .. ``teacher_3`` (the four arrays of
    :func:`transferkit.models.relu.teacher_pair`, stacked over the draws) and each
    method's :class:`StudentRun` as ``stl_<field>``, ``ptft_<field>`` (and ``mtl_<field>``
    with ``mtl``; fields that are ``None`` are left out).  The arguments are checked as by
    :func:`run_sample_efficiency`, before any work (whole floats taken as integers)."""
    d, width, units, ns, draws, seed, n_aux, n_test, max_steps, pre_max_steps = _checked(
        d, rho, magnitude, ns, draws, width, units, n_aux, n_test, alpha, gamma, seed, loss_tol,
        max_steps, pre_max_steps, mtl, lr_scale)
    dev = default_device()
    teachers, Xa, ya, W0, a0, Xt, yt = _task_draws(seed, d, rho, magnitude, draws, width, units,
                                                   n_aux, n_test, alpha, dev)
    Wp, _, psteps, pconv = _pretrained(seed, d, units, n_aux, width, alpha, draws, loss_tol,
                                       pre_max_steps or 5 * max_steps, W0, a0, Xa, ya, dev,
                                       lr_scale)
    starts = {"stl": (W0, a0), "ptft": (Wp, torch.full_like(a0, gamma))}
    runs = {name: _train_students(Ws, as_, seed, d, ns, draws, teachers, Xt, yt, loss_tol,
                                  max_steps, dev, lr_scale)
            for name, (Ws, as_) in starts.items()}
    if mtl:
        runs["mtl"] = _train_mtl(W0, a0, seed, d, ns, draws, teachers, Xa, ya, Xt, yt, alpha,
                                 loss_tol, pre_max_steps or 5 * max_steps, dev, lr_scale)
    out = {"pre_converged": pconv.cpu().numpy(), "pre_steps": np.asarray(torch.as_tensor(psteps).cpu()),
           "W_pre": Wp.cpu().numpy(), "X_test": np.array(Xt)}
    out.update({f"teacher_{i}": np.array([T[i] for T in teachers]) for i in range(4)})
    for name, r in runs.items():
        out.update({f"{name}_{k}": v for k, v in _run_arrays(r).items()})
    return out


def penalty_ratio(magnitude, rho, gamma: float, m0: float = 1.0) -> np.ndarray:
    r"""The penalty's prediction for Fig. 1c of paper 003: the cost of re-using a pretrained
    unit over that of a fresh one,

    :math:`\tilde r(m;\rho, m_0, \gamma)\,/\,\tilde r(m; 0, 0, \gamma)`

    (paper 003, Eqs. 10-11, :func:`transferkit.theory.penalties.relu_ptft_penalty`; a fresh
    unit has :math:`m_0 = 0`, whose penalty is Eq. 35's :math:`2|m|` as
    :math:`\gamma\to0`).  Below 1 pretraining should help (PT+FT more sample-efficient
    than STL), above 1 it should hurt: the reversal predicted in Sec. 1.2 for
    :math:`\rho = 0.9` and a pretrained weight much larger than the new one.

    Parameters
    ----------
    magnitude : float or array_like
        Main-task readout magnitude :math:`m > 0` (the auxiliary readout being 1).
    rho : float or array_like
        Cosine :math:`\rho\in[-1, 1]` between the pretrained and the new direction.
    gamma : float
        Readout re-initialisation :math:`\gamma > 0`.
    m0 : float
        First-layer norm :math:`m_0 = \sqrt{m^{\rm aux}} > 0` of the pretrained unit
        (1: auxiliary readout 1).

    Returns
    -------
    ndarray
        The ratio, broadcast over ``magnitude`` and ``rho``.
    """
    m = check_values("magnitude", magnitude, 0, lo_open=True)
    r = check_values("rho", rho, -1, 1)
    g = float(check_values("gamma", gamma, 0, lo_open=True))
    m0 = float(check_values("m0", m0, 0, lo_open=True))
    return np.asarray(relu_ptft_penalty(m, r, m0, g) / relu_ptft_penalty(m, 0.0, 0.0, g))


def _preset_args(preset) -> dict:
    """The arguments of :func:`run_sample_efficiency` but ``rho`` and ``magnitude`` that a
    :class:`SampleEfficiencyPreset` holds, else an :class:`InputTypeError`."""
    if not isinstance(preset, SampleEfficiencyPreset):
        raise InputTypeError(f"preset must be a SampleEfficiencyPreset (got {type(preset).__name__})")
    return dict(d=preset.d, ns=list(preset.ns), draws=preset.draws, width=preset.width,
                units=preset.units, n_aux=preset.n_aux, n_test=preset.n_test,
                alpha=preset.alpha, gamma=preset.gamma, seed=preset.seed,
                loss_tol=preset.loss_tol, max_steps=preset.max_steps,
                pre_max_steps=preset.pre_max_steps, mtl=preset.mtl, lr_scale=preset.lr_scale)


def run_mtl_students(preset: SampleEfficiencyPreset, features: ReluFeaturesPreset,
                     rho: float = 1.0, magnitude: float = 1.0,
                     **run_kwargs) -> SampleEfficiencyResult:
    r"""STL, PT+FT and MTL students side by side for the reduced Figs. 6d-e of paper 004.

    :func:`run_sample_efficiency` with the parameters of ``preset`` (the Fig. 1c grid) but
    ``ns = features.mtl_ns``, ``draws = features.mtl_draws`` and ``mtl=True``: its draws are
    the first draws of the grid (same teachers, samples and initialisations), and its STL
    and PT+FT students are the grid's at those ``n`` (each network is trained as if alone).

    Raises
    ------
    TypeError
        For a ``preset`` or ``features`` of the wrong type.
    ValueError
        As :func:`run_sample_efficiency`.
    """
    if not isinstance(features, ReluFeaturesPreset):
        raise InputTypeError(f"features must be a ReluFeaturesPreset "
                             f"(got {type(features).__name__})")
    args = {**_preset_args(preset), "ns": list(features.mtl_ns), "draws": features.mtl_draws,
            "mtl": True}
    return run_sample_efficiency(rho=rho, magnitude=magnitude, **args, **run_kwargs)


def run_sample_efficiency_grid(preset: SampleEfficiencyPreset,
                               **run_kwargs) -> dict[tuple[float, float], SampleEfficiencyResult]:
    r"""Fig. 1c of paper 003 on the whole grid of a :class:`SampleEfficiencyPreset`: every
    :math:`(\rho, m)` of ``preset.rhos`` times ``preset.magnitudes`` in one
    :func:`transferkit.sweep.run` (one cell per :math:`(\rho, m)`; cached, resumable, and
    spread over a Dask cluster with ``scheduler=`` or ``$TRANSFERKIT_SCHEDULER``).

    The cells are those of :func:`run_sample_efficiency` (:func:`sample_efficiency_cell`), so
    each :math:`(\rho, m)` gets the same numbers as a call of :func:`run_sample_efficiency`
    with the preset's values.  Pretraining, which depends on neither :math:`\rho` nor
    :math:`m`, is trained once per process.

    Parameters
    ----------
    preset : SampleEfficiencyPreset
        The parameters (e.g. ``SAMPLE_EFFICIENCY["paper"]`` or
        :data:`SAMPLE_EFFICIENCY_FULL`).
    **run_kwargs
        ``cache``, ``directory``, ``version``, ``scheduler``, ``progress`` of
        :func:`transferkit.sweep.run`.

    Returns
    -------
    dict
        ``{(rho, magnitude): SampleEfficiencyResult}`` in grid order.
    """
    args = _preset_args(preset)
    rhos, mags = list(preset.rhos), list(preset.magnitudes)
    if not rhos or not mags:
        raise ValueError("preset.rhos and preset.magnitudes must be non-empty")
    for rho in rhos:
        for mag in mags:
            _checked(rho=rho, magnitude=mag, **args)
    fixed = {k: v for k, v in args.items() if k != "seed"}
    sw = run(sample_efficiency_cell, Grid(rho=rhos, magnitude=mags, seed=[preset.seed]),
             fixed=fixed, desc="Fig. 1c grid", **run_kwargs)
    return {(rho, mag): _result(sw, (i, j, 0), rho, mag, preset.draws, fixed["ns"])
            for i, rho in enumerate(rhos) for j, mag in enumerate(mags)}


def _result(sw, index, rho, magnitude, draws, ns) -> SampleEfficiencyResult:
    out = {name: np.ascontiguousarray(sw[name][index]) for name in sw.keys()}
    teachers = [tuple(np.ascontiguousarray(out[f"teacher_{i}"][j]) for i in range(4))
                for j in range(draws)]
    runs = _student_runs(out)
    return SampleEfficiencyResult(ns=np.array(ns), rho=rho, magnitude=magnitude,
                                  pre_converged=out["pre_converged"], teachers=teachers,
                                  W_pre=out["W_pre"], stl=runs["stl"], ptft=runs["ptft"],
                                  X_test=out["X_test"], pre_steps=out["pre_steps"],
                                  mtl=runs.get("mtl"))


# ---------------------------------------------------------------------------
# paper 004, App. E.2.3 and G: rescaling before fine-tuning, nested one-feature tasks
# ---------------------------------------------------------------------------

#: The main tasks of :func:`run_nested_rescaling`: the one unit of the main teacher is the
#: first auxiliary unit ("nested", cosine 1) or a direction orthogonal to all of them
#: ("disjoint", cosine 0); paper 004, App. E.2.3 and Fig. 6g.
NESTED_TASKS = {"nested": 1.0, "disjoint": 0.0}


@dataclass(frozen=True)
class NestedRescalingResult:
    r"""Students on one-feature main tasks after rescaled pretraining (:func:`run_nested_rescaling`).

    The method axis is ``methods``: STL first, then PT+FT from the pretrained first layer
    times each factor of ``scales``.

    Attributes
    ----------
    ns : ndarray of int
        The main-task sample sizes.
    scales : ndarray
        The factors :math:`s` applied to the pretrained first layer.
    tasks : tuple of str
        ``("nested", "disjoint")`` (:data:`NESTED_TASKS`).
    methods : tuple of str
        Labels of the method axis: ``"STL"``, ``"PT+FT s=0.1"``, ...
    error : ndarray, shape (tasks, methods, len(ns), draws)
        Test error normalised by the variance of the main teacher's output.
    converged : ndarray of bool, shape (tasks, methods, len(ns), draws)
        Whether training reached its loss tolerance.
    steps : ndarray of int, shape (tasks, methods, len(ns), draws)
        Gradient steps taken.
    W : ndarray, shape (tasks, methods, len(ns), draws, width, d)
        Trained first-layer weights.
    a : ndarray, shape (tasks, methods, len(ns), draws, width)
        Trained readouts.
    main_dirs : ndarray, shape (tasks, draws, d)
        The main teacher's unit direction per task and draw.
    W_pre : ndarray, shape (draws, width, d)
        The pretrained first layers (before rescaling).
    a_pre : ndarray, shape (draws, width)
        The pretrained readouts (which PT+FT replaces by :math:`\gamma`).
    pre_converged : ndarray of bool, shape (draws,)
        Whether pretraining reached its tolerance.
    pre_steps : ndarray of int, shape (draws,)
        Its gradient steps.
    X_test : ndarray, shape (draws, n_test, d)
        The test inputs.
    """

    ns: np.ndarray
    scales: np.ndarray
    tasks: tuple
    methods: tuple
    error: np.ndarray
    converged: np.ndarray
    steps: np.ndarray
    W: np.ndarray
    a: np.ndarray
    main_dirs: np.ndarray
    W_pre: np.ndarray
    a_pre: np.ndarray
    pre_converged: np.ndarray
    pre_steps: np.ndarray
    X_test: np.ndarray


def _nested_task(seed, d, rho, magnitude, draws, width, units, n_aux, n_test, alpha, dev):
    """:func:`_task_draws` of a task of :data:`NESTED_TASKS` (cosine ``rho``) with the main
    teacher cut to its first unit: ``(teachers, Xa, ya, W0, a0, Xt, yt, dirs)``, with ``yt``
    that unit's test labels per draw and ``dirs`` ``(draws, d)`` its direction."""
    teachers, Xa, ya, W0, a0, Xt, _ = _task_draws(seed, d, rho, magnitude, draws, width, units,
                                                  n_aux, n_test, alpha, dev)
    one = [(T[0], T[1], T[2][:1], T[3][:1]) for T in teachers]      # the main unit 0
    yt = [_teacher_out(T[2], T[3], x) for T, x in zip(one, Xt)]
    return one, Xa, ya, W0, a0, Xt, yt, np.array([T[2] for T in one])[:, 0]


def _checked_scales(scales) -> list:
    """The factors of :func:`run_nested_rescaling` as a list of floats > 0, else a
    ``ValueError`` naming ``scales`` (empty, or not a sequence) or ``scale``."""
    if isinstance(scales, (str, bytes)) or not np.iterable(scales) or len(scales) == 0:
        raise ValueError(f"scales must be a non-empty sequence of numbers > 0 (got {scales!r})")
    return [check_positive("scale", s) for s in scales]


def nested_rescaling_cell(seed, d, ns, draws, scales, magnitude=1.0, width=32, units=6,
                          n_aux=256, n_test=2000, alpha=1e-2, gamma=1e-2, loss_tol=1e-6,
                          max_steps=50_000, pre_max_steps=None, lr_scale=0.5) -> dict:
    r"""The whole of :func:`run_nested_rescaling` for one ``seed``: a cell function for
    :func:`transferkit.sweep.run`.

    Per task of :data:`NESTED_TASKS` the draws are those of :func:`run_sample_efficiency` at
    that cosine (the same auxiliary teacher, samples, initialisation and test inputs for both
    tasks, and the same pretraining as Fig. 1c), with the main teacher cut to its first unit,
    readout ``magnitude``.  Every student of every task and method is trained in one batch of
    :func:`transferkit.models.relu.train_units` (step ``lr_scale``, pretraining's too).
    Returns the fields of :class:`NestedRescalingResult` but ``ns``, ``scales``, ``tasks`` and ``methods``.
    The arguments are checked as by :func:`run_nested_rescaling`, before any work.
    """
    scales = _checked_scales(scales)
    d, width, units, ns, draws, seed, n_aux, n_test, max_steps, pre_max_steps = _checked(
        d, 1.0, magnitude, ns, draws, width, units, n_aux, n_test, alpha, gamma, seed, loss_tol,
        max_steps, pre_max_steps, lr_scale=lr_scale)
    # the one batch holds, per task and method (no rescaling, then each factor), the padded
    # main samples of every (n, draw) and the networks with their gradients: the part of this
    # cell that _checked's per-draw estimate (three methods per n) does not count
    check_budget("len(scales)", len(scales),
                 8 * len(NESTED_TASKS) * (1 + len(scales)) * len(ns) * draws
                 * (max(ns) * (d + 1) + 4 * width * (d + 2)))
    dev = default_device()
    starts_W, starts_a, Xs, ys, nns, test_X, test_y, dirs = [], [], [], [], [], [], [], []
    for rho in NESTED_TASKS.values():
        one, Xa, ya, W0, a0, Xt, yt, u = _nested_task(seed, d, rho, magnitude, draws, width,
                                                      units, n_aux, n_test, alpha, dev)
        Wp, ap, psteps, pconv = _pretrained(seed, d, units, n_aux, width, alpha, draws,
                                            loss_tol, pre_max_steps or 5 * max_steps, W0, a0,
                                            Xa, ya, dev, lr_scale)
        dirs.append(u)
        X, y, nn, jj = _main_samples(seed, d, ns, draws, one)
        test_X.extend(Xt)
        test_y.extend(yt)
        for W_s, a_s in [(W0, a0)] + [(s * Wp, torch.full_like(a0, gamma)) for s in scales]:
            starts_W.append(W_s[jj])
            starts_a.append(a_s[jj])
            Xs.append(X)
            ys.append(y)
            nns.extend(nn)
    W, a, _, steps, conv = train_units(torch.cat(starts_W).clone(), torch.cat(starts_a).clone(),
                                       as_tensor(np.concatenate(Xs), dev),
                                       as_tensor(np.concatenate(ys), dev), np.array(nns, float),
                                       loss_tol=loss_tol, max_steps=max_steps, lr_scale=lr_scale)
    shape = (len(NESTED_TASKS), 1 + len(scales), len(ns), draws)
    # the network of (task t, method, n, draw j) is scored on test set t * draws + j
    jj = np.tile(np.arange(draws), len(ns))
    sets = np.broadcast_to(np.arange(shape[0])[:, None, None] * draws + jj, shape[:2] + jj.shape)
    run = _scored(W, a, conv, np.array(test_X), np.array(test_y), sets.ravel(), shape, dev)
    return {"error": run.error, "converged": run.converged,
            "steps": np.asarray(torch.as_tensor(steps).cpu()).reshape(shape),
            "W": run.W, "a": run.a,
            "main_dirs": np.array(dirs), "W_pre": Wp.cpu().numpy(), "a_pre": ap.cpu().numpy(),
            "pre_converged": pconv.cpu().numpy(),
            "pre_steps": np.asarray(torch.as_tensor(psteps).cpu()), "X_test": np.array(Xt)}


def run_nested_rescaling(preset: SampleEfficiencyPreset, scales, *, magnitude: float = 1.0,
                         **run_kwargs) -> NestedRescalingResult:
    r"""Rescaling the pretrained weights before fine-tuning, on one-feature main tasks
    (paper 004, App. E.2.3 and G; Figs. 6f-g and 8b-c).

    Pretraining is that of Fig. 1c (``preset``, a :class:`SampleEfficiencyPreset`: six-unit
    auxiliary teacher, its samples, the students' initialisation and size).  The main task
    uses one feature: the first auxiliary unit (``"nested"``) or a unit orthogonal to every
    auxiliary unit (``"disjoint"``), with readout ``magnitude``.  Per task, the students are
    STL (from the initialisation) and PT+FT from the pretrained first layer times each
    factor :math:`s` of ``scales``, readout re-initialised at ``preset.gamma``:

    .. math:: w_h(0) = s\,w_h^{\rm pre},\qquad a_h(0) = \gamma,

    trained on both layers to the preset's tolerance or step cap, at every ``preset.ns`` and
    draw.  One :func:`transferkit.sweep.run` cell (cached, resumable, Dask with
    ``scheduler=``); ``run_kwargs`` go to :func:`~transferkit.sweep.run`.

    Returns
    -------
    NestedRescalingResult

    Raises
    ------
    ValueError
        As :func:`run_sample_efficiency` for the preset's values; for an empty ``scales``, a
        factor or ``magnitude`` not > 0.
    TypeError
        For a ``preset`` that is not a :class:`SampleEfficiencyPreset`.

    Notes
    -----
    Which weights the paper rescales is not stated; the first layer is rescaled here and the
    readout re-initialised, as in the chapter's PT+FT (paper 003, Sec. 1.1), so that
    :math:`s` sets the pretrained norm :math:`m_0` of the penalty of Eqs. 10-11.  The
    multi-task students of the same tasks (Figs. 6f-g) are :func:`run_nested_mtl`'s.
    """
    args = _preset_args(preset)
    scales = _checked_scales(scales)
    d, width, units, ns, draws, seed, n_aux, n_test, max_steps, pre_max_steps = _checked(
        rho=1.0, magnitude=magnitude, **args)
    magnitude = float(magnitude)
    kw = dict(run_kwargs)
    kw.setdefault("desc", "nested tasks, rescaled PT+FT")
    sw = run(nested_rescaling_cell, Grid(seed=[seed]),
             fixed=dict(d=d, ns=ns, draws=draws, scales=scales, magnitude=magnitude,
                        width=width, units=units, n_aux=n_aux, n_test=n_test,
                        alpha=preset.alpha, gamma=preset.gamma, loss_tol=preset.loss_tol,
                        max_steps=max_steps, pre_max_steps=pre_max_steps,
                        lr_scale=preset.lr_scale), **kw)
    out = {name: np.ascontiguousarray(sw[name][0]) for name in sw.keys()}
    return NestedRescalingResult(ns=np.array(ns), scales=np.array(scales),
                                 tasks=tuple(NESTED_TASKS),
                                 methods=("STL",) + tuple(f"PT+FT s={s:g}" for s in scales),
                                 **out)


@dataclass(frozen=True)
class NestedStatistics:
    r"""The statistics of paper 004's Figs. 6f-g and 8b-c for a :class:`NestedRescalingResult`
    (:func:`nested_statistics`); axes as in the result.

    The representation of Figs. 8b-c is read two ways, the paper not saying which: the hidden
    ReLU responses :math:`(\langle w_h, x\rangle)_+` (``pr``, ``pr_pre``, ``ensd``), and the
    same times the readout, :math:`|a_h|\,(\langle w_h, x\rangle)_+` (``*_readout``; the
    reading of the chapter's Fig. 8a), on the draw's test inputs.

    Attributes
    ----------
    spread : ndarray, shape (tasks, methods, len(ns), draws)
        One-cluster inertia per unit weight of the readout-weighted unit directions
        (:func:`transferkit.stats.direction_spread`; Fig. 6f).
    alignment : ndarray, shape (tasks, methods, len(ns), draws)
        Cosine between the weighted mean unit direction (the one k-means centre) and the main
        teacher's unit (:func:`transferkit.stats.alignment_score` with one centre; Fig. 6g).
    pr, pr_readout : ndarray, shape (tasks, methods, len(ns), draws)
        Participation ratio of the representation after training
        (:func:`transferkit.stats.participation_ratio`; Fig. 8b).
    pr_pre, pr_pre_readout : ndarray, shape (draws,)
        The same for the pretrained network (the factor does not change it; Fig. 8c, left).
    ensd, ensd_readout : ndarray, shape (tasks, len(scales), len(ns), draws)
        :func:`transferkit.stats.ensd` between the pretrained and the fine-tuned
        representations, PT+FT methods only (Fig. 8c, right).
    """

    spread: np.ndarray
    alignment: np.ndarray
    pr: np.ndarray
    pr_pre: np.ndarray
    ensd: np.ndarray
    pr_readout: np.ndarray
    pr_pre_readout: np.ndarray
    ensd_readout: np.ndarray


def nested_statistics(result: NestedRescalingResult) -> NestedStatistics:
    r"""Figs. 6f-g and 8b-c of paper 004 for the students of :func:`run_nested_rescaling`
    (the two readings of the representation: :class:`NestedStatistics`)."""
    if not isinstance(result, NestedRescalingResult):
        raise InputTypeError(f"result must be a NestedRescalingResult (got {type(result).__name__})")
    # the main unit of each network (task, method, n, draw)
    dirs = np.broadcast_to(result.main_dirs[:, None, None],
                           result.W.shape[:-2] + result.W.shape[-1:])
    spread, alignment = _one_cluster(result.W, result.a, dirs)
    Xt = result.X_test                                            # (draws, n_test, d)
    H = np.maximum(Xt @ np.swapaxes(result.W, -1, -2), 0)         # (T, M, n, draws, n_test, width)
    H_pre = np.maximum(Xt @ np.swapaxes(result.W_pre, -1, -2), 0)  # (draws, n_test, width)
    Ha = H * np.abs(result.a)[..., None, :]
    Ha_pre = H_pre * np.abs(result.a_pre)[:, None, :]
    return NestedStatistics(spread=spread, alignment=alignment, pr=participation_ratio(H),
                            pr_pre=participation_ratio(H_pre), ensd=ensd(H_pre, H[:, 1:]),
                            pr_readout=participation_ratio(Ha),
                            pr_pre_readout=participation_ratio(Ha_pre),
                            ensd_readout=ensd(Ha_pre, Ha[:, 1:]))


def _one_cluster(W, weight, dirs):
    r"""Fig. 6f-g's statistics of networks ``W`` ``(..., width, d)`` whose units weigh
    :math:`|{\rm weight}_h|\,\|w_h\|`: the one-cluster spread
    (:func:`transferkit.stats.direction_spread`) and the cosine between the weighted mean
    direction and the network's main unit ``dirs`` ``(..., d)``."""
    spread = direction_spread(W, weight)
    # the one k-means centre, up to its scale (cosines ignore it): the unit directions
    # w_h / ||w_h|| weighted by |weight_h| ||w_h||, i.e. sum_h |weight_h| w_h
    centre = (np.abs(weight)[..., None] * W).sum(-2)
    alignment = np.zeros(spread.shape)
    for idx in np.ndindex(spread.shape):
        alignment[idx] = alignment_score(centre[idx][None], dirs[idx][None])
    return spread, alignment


@dataclass(frozen=True)
class NestedMtlResult:
    r"""Multi-task students on the one-feature main tasks of :func:`run_nested_rescaling`
    (:func:`run_nested_mtl`; paper 004, Figs. 6f-g).

    Attributes
    ----------
    ns : ndarray of int
        The main-task sample sizes.
    tasks : tuple of str
        ``("nested", "disjoint")`` (:data:`NESTED_TASKS`).
    error : ndarray, shape (tasks, len(ns), draws)
        Main-task test error normalised by the variance of the main teacher's output.
    converged : ndarray of bool, shape (tasks, len(ns), draws)
        Whether both tasks reached their loss tolerance.
    steps : ndarray of int, shape (tasks, len(ns), draws)
        Gradient steps taken.
    W : ndarray, shape (tasks, len(ns), draws, width, d)
        Trained first-layer weights (shared by the two tasks).
    a, a_aux : ndarray, shape (tasks, len(ns), draws, width)
        Trained readouts of the main and of the auxiliary task.
    main_dirs : ndarray, shape (tasks, draws, d)
        The main teacher's unit direction per task and draw.
    X_test : ndarray, shape (draws, n_test, d)
        The test inputs.
    """

    ns: np.ndarray
    tasks: tuple
    error: np.ndarray
    converged: np.ndarray
    steps: np.ndarray
    W: np.ndarray
    a: np.ndarray
    a_aux: np.ndarray
    main_dirs: np.ndarray
    X_test: np.ndarray

    @property
    def unit_readout(self) -> np.ndarray:
        r""":math:`\|A_h\|_2`, the norm of each unit's two readouts (its weight in the
        :math:`\ell_{1,2}` norm is :math:`\|A_h\|_2\|w_h\|_2`, paper 004, Eq. 32)."""
        return np.hypot(self.a, self.a_aux)


def nested_mtl_cell(seed, d, ns, draws, magnitude=1.0, width=32, units=6, n_aux=256,
                    n_test=2000, alpha=1e-2, loss_tol=1e-6, max_steps=250_000,
                    lr_scale=0.5) -> dict:
    r"""The whole of :func:`run_nested_mtl` for one ``seed``: a cell function for
    :func:`transferkit.sweep.run`.

    Per task of :data:`NESTED_TASKS`, the draws, the one-unit main teacher and its samples
    are those of :func:`nested_rescaling_cell`, and the students those of
    :func:`run_sample_efficiency` with ``mtl=True`` (the STL initialisation plus an
    auxiliary readout from the stream ``(seed, j, *MTL_READOUT_KEY)``, trained on the
    auxiliary and the main samples at once).  Every student of both tasks is trained in
    one batch of :func:`transferkit.models.relu.train_units_mtl`.  Returns the fields of
    :class:`NestedMtlResult` but ``ns`` and ``tasks``.  The arguments are checked as by
    :func:`run_nested_mtl`, before any work (``max_steps`` is the cap of the MTL students).
    """
    d, width, units, ns, draws, seed, n_aux, n_test, max_steps, _ = _checked(
        d, 1.0, magnitude, ns, draws, width, units, n_aux, n_test, alpha, 1.0, seed, loss_tol,
        max_steps, None, lr_scale=lr_scale)
    dev = default_device()
    parts, test_X, test_y, dirs = [], [], [], []
    for rho in NESTED_TASKS.values():
        one, Xa, ya, W0, a0, Xt, yt, u = _nested_task(seed, d, rho, magnitude, draws, width,
                                                      units, n_aux, n_test, alpha, dev)
        dirs.append(u)
        test_X.extend(Xt)
        test_y.extend(yt)
        parts.append(_mtl_batch(W0, a0, seed, d, ns, draws, one, Xa, ya, alpha, dev))
    W_s, A0, Xs, ys, counts, jjs = zip(*parts)          # per task; Xs, ys, counts per output
    per_output = lambda v, cat: tuple(cat([t[o] for t in v]) for o in (0, 1))  # noqa: E731
    W, A, _, steps, conv = train_units_mtl(
        torch.cat(W_s), torch.cat(A0), per_output(Xs, torch.cat), per_output(ys, torch.cat),
        per_output(counts, np.concatenate), loss_tol=loss_tol, max_steps=max_steps,
        lr_scale=lr_scale)
    shape = (len(NESTED_TASKS), len(ns), draws)
    # the network of (task t, n, draw j) is scored on test set t * draws + j
    sets = np.concatenate([t * draws + jj for t, jj in enumerate(jjs)])
    run_ = _scored(W, A[..., 1], conv, np.array(test_X), np.array(test_y), sets, shape, dev,
                   a_aux=A[..., 0])
    return {"error": run_.error, "converged": run_.converged,
            "steps": np.asarray(torch.as_tensor(steps).cpu()).reshape(shape),
            "W": run_.W, "a": run_.a, "a_aux": run_.a_aux, "main_dirs": np.array(dirs),
            "X_test": np.array(Xt)}


def run_nested_mtl(preset: SampleEfficiencyPreset, features: ReluFeaturesPreset, *,
                   magnitude: float = 1.0, **run_kwargs) -> NestedMtlResult:
    r"""Multi-task students on the nested and disjoint one-feature tasks of
    :func:`run_nested_rescaling` (paper 004, App. E.2.3, Figs. 6f-g: "MTL or PT+FT").

    The draws (teachers, auxiliary samples, initialisation, main samples and test inputs)
    are the first ``features.mtl_draws`` draws of :func:`run_nested_rescaling` with the
    same ``preset`` and ``magnitude``, at ``n`` in ``features.mtl_ns``: each MTL student
    has a PT+FT and an STL twin there.  MTL (paper 004, App. B.2) trains the STL
    initialisation, with a second readout of scale ``preset.alpha`` for the auxiliary task,
    on the auxiliary task (``preset.n_aux`` samples of the six-unit teacher) and the main
    task at once, as :func:`run_mtl_students` does: the sum of the two tasks' mean losses,
    every task to ``preset.loss_tol``, at most the pretraining's cap of steps.  One
    :func:`transferkit.sweep.run` cell (cached, resumable, Dask with ``scheduler=``);
    ``run_kwargs`` go to :func:`~transferkit.sweep.run`.

    Returns
    -------
    NestedMtlResult

    Raises
    ------
    TypeError
        For a ``preset`` or ``features`` of the wrong type.
    ValueError
        As :func:`run_sample_efficiency`, for the preset's values, ``features.mtl_ns``,
        ``features.mtl_draws`` and ``magnitude``.
    """
    if not isinstance(features, ReluFeaturesPreset):
        raise InputTypeError(f"features must be a ReluFeaturesPreset "
                             f"(got {type(features).__name__})")
    args = {**_preset_args(preset), "ns": list(features.mtl_ns), "draws": features.mtl_draws}
    d, width, units, ns, draws, seed, n_aux, n_test, max_steps, pre_max_steps = _checked(
        rho=1.0, magnitude=magnitude, **args)
    kw = dict(run_kwargs)
    kw.setdefault("desc", "nested tasks, MTL")
    sw = run(nested_mtl_cell, Grid(seed=[seed]),
             fixed=dict(d=d, ns=ns, draws=draws, magnitude=float(magnitude), width=width,
                        units=units, n_aux=n_aux, n_test=n_test, alpha=preset.alpha,
                        loss_tol=preset.loss_tol, max_steps=pre_max_steps or 5 * max_steps,
                        lr_scale=preset.lr_scale), **kw)
    out = {name: np.ascontiguousarray(sw[name][0]) for name in sw.keys()}
    return NestedMtlResult(ns=np.array(ns), tasks=tuple(NESTED_TASKS), **out)


@dataclass(frozen=True)
class NestedMtlStatistics:
    r"""Figs. 6f-g of paper 004 for a :class:`NestedMtlResult` (:func:`nested_mtl_statistics`),
    under the two weightings of a multi-task unit the paper leaves open; axes as in the
    result, ``(tasks, len(ns), draws)``.

    Attributes
    ----------
    spread, alignment : ndarray
        One-cluster spread and alignment with the main unit (as in
        :class:`NestedStatistics`), each unit weighted by :math:`\|A_h\|_2\|w_h\|_2`, its
        weight in the :math:`\ell_{1,2}` norm (paper 004, Eq. 32).
    spread_main, alignment_main : ndarray
        The same, each unit weighted by its main-task readout, :math:`|a_h|\,\|w_h\|_2`.
    """

    spread: np.ndarray
    alignment: np.ndarray
    spread_main: np.ndarray
    alignment_main: np.ndarray


def nested_mtl_statistics(result: NestedMtlResult) -> NestedMtlStatistics:
    r"""Figs. 6f-g of paper 004 for the students of :func:`run_nested_mtl` (the two
    weightings: :class:`NestedMtlStatistics`)."""
    if not isinstance(result, NestedMtlResult):
        raise InputTypeError(f"result must be a NestedMtlResult (got {type(result).__name__})")
    dirs = np.broadcast_to(result.main_dirs[:, None], result.W.shape[:-2] + result.W.shape[-1:])
    spread, alignment = _one_cluster(result.W, result.unit_readout, dirs)
    spread_main, alignment_main = _one_cluster(result.W, result.a, dirs)
    return NestedMtlStatistics(spread=spread, alignment=alignment, spread_main=spread_main,
                               alignment_main=alignment_main)


# ---------------------------------------------------------------------------
# weighted k-means of the hidden units (paper 004, App. E.2)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitClusters:
    r"""Weighted k-means of students' hidden units (paper 004, App. E.2; :func:`unit_clusters`).

    Attributes
    ----------
    ks : ndarray of int, shape (K,)
        The numbers of clusters.
    inertia : ndarray, shape (..., K)
        Per network and number of clusters, the fraction of the weighted variance of the unit
        directions left unexplained (:func:`transferkit.stats.kmeans_inertia`; Figs. 6a, c, d).
    align_k : int
        The number of clusters whose centres the alignment score uses.
    alignment : ndarray, shape (...)
        Per network, the mean over the teacher's units of the best cosine with one of the
        ``align_k`` centres (:func:`transferkit.stats.alignment_score`; Figs. 6b, e).
    """

    ks: np.ndarray
    inertia: np.ndarray
    align_k: int
    alignment: np.ndarray


def unit_clusters(W, readout, teacher_dirs, ks, align_k: int) -> UnitClusters:
    r"""Inertia and alignment score of every network's hidden units (paper 004, App. E.2).

    A unit :math:`h` has direction :math:`w_h/\|w_h\|` and weight
    :math:`|{\rm readout}_h|\,\|w_h\|` (App. E.2, footnote 3: the magnitude of the product
    of its input and output weights; for a multi-task unit pass
    :attr:`StudentRun.unit_readout`, its weight in the :math:`\ell_{1,2}` norm, Eq. 35).
    For each network, weighted k-means with each :math:`K` in ``ks`` gives the inertia, and
    the centres of ``align_k`` clusters the alignment score with the teacher's units.

    Parameters
    ----------
    W : array, shape (..., draws, width, d)
        First-layer weights; the axis before the units is the draw.
    readout : array, shape (..., draws, width)
        Readout of each unit (its absolute value is used).
    teacher_dirs : array, shape (draws, units, d)
        Draw :math:`j`'s teacher units, for every network of that draw.
    ks : sequence of int >= 1
        Numbers of clusters of the inertia.
    align_k : int >= 1
        Number of clusters of the alignment score.

    Returns
    -------
    UnitClusters
        ``inertia`` ``(..., draws, len(ks))`` and ``alignment`` ``(..., draws)``.
    """
    W = check_array("W", W, 0)
    readout = check_array("readout", readout, 0)
    teacher_dirs = check_array("teacher_dirs", teacher_dirs, 0)
    if W.ndim < 3 or readout.shape != W.shape[:-1]:
        raise ValueError(f"W must be (..., draws, width, d) and readout (..., draws, width) "
                         f"(got W {W.shape}, readout {readout.shape})")
    if teacher_dirs.ndim != 3 or teacher_dirs.shape[0] != W.shape[-3] \
            or teacher_dirs.shape[2] != W.shape[-1]:
        raise ValueError(f"teacher_dirs must be (draws, units, d) = ({W.shape[-3]}, units, "
                         f"{W.shape[-1]}) (got {teacher_dirs.shape})")
    ks = check_values("ks", ks, 1, MAX_INT, integer=True).astype(int)
    if ks.ndim != 1 or ks.size == 0:
        raise ValueError(f"ks must be a non-empty sequence of ints >= 1 (got {ks!r})")
    align_k = check_int("align_k", align_k, 1)
    lead = W.shape[:-2]
    inertia, alignment = np.empty(lead + (len(ks),)), np.empty(lead)
    for idx in np.ndindex(lead):
        centres = {}
        for i, k in enumerate(ks):
            inertia[idx + (i,)], centres[int(k)] = kmeans_inertia(W[idx], readout[idx], int(k))
        C = centres[align_k] if align_k in centres else kmeans_inertia(W[idx], readout[idx],
                                                                       align_k)[1]
        alignment[idx] = alignment_score(C, teacher_dirs[idx[-1]])
    return UnitClusters(ks=ks, inertia=inertia, align_k=align_k, alignment=alignment)


# ---------------------------------------------------------------------------
# paper 004, App. D, Fig. 4b: main and auxiliary teachers sharing some of their units
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class OverlapPreset:
    r"""Parameters of the reduced Fig. 4b of paper 004 (generalisation against the number of
    teacher units the main task shares with the auxiliary one) at one scale.

    The presets are :data:`OVERLAP` and, for a cluster, :data:`OVERLAP_FULL`; the chapter
    passes them to :func:`run_overlap`.  Every other parameter (input dimension, width,
    auxiliary samples, initialisation, step, tolerance, step caps, seed) is that of the
    :class:`SampleEfficiencyPreset` the run is given, so that the draws are Fig. 1c's.

    Attributes
    ----------
    shared : tuple of int
        Numbers :math:`s` of the main teacher's units that are auxiliary units, the x axis
        (paper 004, caption of Fig. 4b: "different numbers of overlapping features (out of 40
        total)"; the values are ours).  The main teacher's other units are orthogonal to
        every auxiliary unit; all readouts are 1.
    ns : tuple of int
        Main-task sample sizes, one panel each (ours; App. D: up to 1024).
    mtl : bool
        Also train multi-task students (the caption's MTL; ours to leave out where they do
        not fit: an MTL network learns the auxiliary task from the small initialisation).
    """

    shared: tuple           # paper 004, Fig. 4b (its values ours)
    ns: tuple               # ours (paper 004, App. D: up to 1024)
    mtl: bool = False       # paper 004, Fig. 4b trains MTL (ours to leave it out)


#: The reduced Fig. 4b of paper 004 at each ``TRANSFERKIT_SCALE``, on the draws of
#: :data:`SAMPLE_EFFICIENCY` (six teacher units, 1024 auxiliary samples at ``paper``).
#:
#: ``paper``: s = 0, 2, 4, 6 of the six units and Fig. 1c's main-task n = 8 to 64 (ours).
#: Paper 004 repeats its Fig. 2a with 40 teacher units and 8192 auxiliary samples (App. D);
#: with 12 units and 1024 samples (d = 24, width 48) pretraining from the chapter's
#: initialisation had not reached its tolerance after 200,000 steps (two draws, a trial of
#: 2026-11-28), so the book keeps Fig. 1c's six units, where pretraining converges
#: in 17,000 to 37,000 steps.  No MTL students: at the six-unit size one takes about 65,000
#: steps: Figs. 6d-e's, 4 draws at two n, took 315 to 422 s of one core per (rho, m) cell,
#: and this figure would need one such cell per s.
#: ``smoke``: s = 0 and the preset's six, n = 8, 32.
OVERLAP = {
    "paper": OverlapPreset(shared=(0, 2, 4, 6), ns=(8, 16, 32, 64)),
    "smoke": OverlapPreset(shared=(0, 6), ns=(8, 32)),
}

#: The size of paper 004's Fig. 4b as far as App. D states it, for a cluster, with 40
#: teacher units, 8192 auxiliary samples, main-task n up to 1024, MTL beside STL and PT+FT
#: (run with :data:`OVERLAP_FULL_STUDENTS`).  Ours: the values of s, d = 80 (the least for 40
#: orthonormal auxiliary units and 40 more orthogonal to them), width 160 (four times the
#: units, as the chapter's 24 for 6) and everything App. D leaves open, as in
#: :data:`SAMPLE_EFFICIENCY_FULL`.  Not run here (see :data:`OVERLAP`).
OVERLAP_FULL = OverlapPreset(shared=(0, 10, 20, 30, 40),
                             ns=(8, 16, 32, 64, 128, 256, 512, 1024), mtl=True)

#: The students of :data:`OVERLAP_FULL`, those of :data:`SAMPLE_EFFICIENCY_FULL` with App.
#: D's 40 teacher units and 8192 auxiliary samples, d = 80 and width 160 (ours).
OVERLAP_FULL_STUDENTS = SampleEfficiencyPreset(
    rhos=(0.0,), magnitudes=(1.0,), ns=OVERLAP_FULL.ns, draws=8, max_steps=1_000_000,
    pre_max_steps=1_000_000, d=80, width=160, units=40, n_aux=8192)


@dataclass(frozen=True)
class OverlapResult:
    r"""The reduced Fig. 4b of paper 004 (:func:`run_overlap`).

    Attributes
    ----------
    shared : ndarray of int
        The numbers :math:`s` of shared units (first axis of every array but ``pre_*``).
    units : int
        Units of each teacher.
    ns : ndarray of int
        Main-task sample sizes.
    stl, ptft : StudentRun
        STL and PT+FT students with a leading axis of ``shared``: ``error`` ``(len(shared),
        len(ns), draws)``, ``W`` ``(len(shared), len(ns), draws, width, d)`` etc.
    mtl : StudentRun or None
        The multi-task students, when trained.
    ntk_error : ndarray, shape (len(shared), len(ns), draws)
        Test error of the lazy solution: kernel regression with the infinite-width NTK of
        the two-layer network (:func:`transferkit.theory.relu.relu_ntk_kernel`) on the main
        samples, normalised as the students'.
    ptft_rescaled : StudentRun
        The papers' own lazy fine-tuning: PT+FT after the pretrained first layer is rescaled
        by :data:`OVERLAP_LAZY_SCALE` (10; the readout reset to :math:`\gamma` as in PT+FT),
        as ``stl``; at most the pretraining's cap of steps, since the rescaled weights take
        smaller steps (about 110,000 at the ``paper`` preset, against its 50,000 for PT+FT).
    lazy_ptft_rescaled_error : ndarray, shape (len(shared), len(ns), draws)
        The lazy limit from the start of ``ptft_rescaled`` (its own linearisation, as
        ``lazy_ptft_error``), which tells how lazy the rescaled students are.
    lazy_stl_error, lazy_ptft_error : ndarray, shape (len(shared), len(ns), draws)
        The two other readings of the caption's "(lazy) tangent kernel solution": the limit
        of gradient descent on the network linearised at the start of STL (its small
        initialisation, width ``width``) and at the start of PT+FT (the pretrained first
        layer, readout :math:`\gamma`), on the same samples
        (:func:`transferkit.theory.relu.tangent_kernel_solution`), normalised as the
        students'.
    pre_converged : ndarray of bool, shape (draws,)
        Whether pretraining (Fig. 1c's) reached its tolerance.
    pre_steps : ndarray of int, shape (draws,)
        Its gradient steps.
    """

    shared: np.ndarray
    units: int
    ns: np.ndarray
    stl: StudentRun
    ptft: StudentRun
    ntk_error: np.ndarray
    lazy_stl_error: np.ndarray
    lazy_ptft_error: np.ndarray
    pre_converged: np.ndarray
    pre_steps: np.ndarray
    mtl: StudentRun | None = None
    ptft_rescaled: StudentRun | None = None
    lazy_ptft_rescaled_error: np.ndarray | None = None

    methods = property(_student_methods)


def overlap_teachers(teachers, shared: int) -> list:
    r"""The teachers of Fig. 4b from those of :func:`transferkit.models.relu.teacher_pair`
    at :math:`\rho = 0`, one tuple per draw: the auxiliary teacher unchanged (units
    :math:`\theta_h`, readout 1) and a main teacher with units
    :math:`\theta_1, \dots, \theta_s, \xi_{s+1}, \dots, \xi_K` and readout 1, where
    :math:`\xi_h` are the orthonormal directions orthogonal to every :math:`\theta` that
    the pair at :math:`\rho = 0` uses as its main units.  ``shared`` (:math:`s`) must lie in
    ``[0, K]``; at :math:`s = K` the main teacher is the auxiliary one (the pair at
    :math:`\rho = 1`), at :math:`s = 0` that at :math:`\rho = 0`."""
    out = []
    for theta, a_aux, xi, _ in teachers:
        shared = check_int("shared", shared, 0, len(theta))
        out.append((theta, a_aux, np.concatenate([theta[:shared], xi[shared:]]),
                    np.ones(len(theta))))
    return out


def _checked_shared(shared, units, name="shared") -> list:
    """The :math:`s` of :func:`run_overlap` (a non-empty sequence, named ``name``) as a list of
    ``int`` in ``[0, units]``, else a ``ValueError`` naming it."""
    if isinstance(shared, (str, bytes)) or not np.iterable(shared) or len(shared) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of integers in [0, "
                         f"units = {units}] (got {shared!r})")
    return [check_int("shared", s, 0, units) for s in shared]


def _ntk_errors(X, y, nn, tests) -> np.ndarray:
    """Test errors ``(len(nn),)`` of NTK kernel regression on the padded main samples ``X
    (G, N, d)``, ``y (G, N)`` of sizes ``nn``, network ``g`` scored on the test inputs and
    labels ``tests[g]``, normalised by the variance of those labels (as :func:`_scored`)."""
    err = np.empty(len(nn))
    for g, (n, (Xt, yt)) in enumerate(zip(nn, tests)):
        Xg = X[g, :n]
        coef = np.linalg.solve(relu_ntk_kernel(Xg, Xg), y[g, :n])
        pred = relu_ntk_kernel(Xt, Xg) @ coef
        err[g] = np.mean((pred - yt) ** 2) / np.var(yt, ddof=1)
    return err


#: The factor by which the lazy reading of :func:`run_overlap` rescales the pretrained first
#: layer before fine-tuning, 10 (paper 004, App. E.2.3 and G, where networks "rescaled by a
#: factor of 10.0 following pretraining" behave lazily; the largest of ``rescale_factors``).
OVERLAP_LAZY_SCALE = 10.0


def _lazy_errors(W, a, X, y, nn, tests) -> np.ndarray:
    """Test errors ``(len(nn),)`` of the lazy limit from each network ``g`` (start weights
    ``W[g]`` ``(H, d)``, ``a[g]`` ``(H,)``; :func:`transferkit.theory.relu.tangent_kernel_solution`)
    on its padded main samples, scored as :func:`_ntk_errors`."""
    err = np.empty(len(nn))
    for g, (n, (Xt, yt)) in enumerate(zip(nn, tests)):
        pred = tangent_kernel_solution(W[g], a[g], X[g, :n], y[g, :n], Xt)
        err[g] = np.mean((pred - yt) ** 2) / np.var(yt, ddof=1)
    return err


def overlap_cell(shared, seed, d, ns, draws, width=32, units=6, n_aux=256, n_test=2000,
                 alpha=1e-2, gamma=1e-2, loss_tol=1e-6, max_steps=50_000, pre_max_steps=None,
                 mtl=False, lr_scale=0.5) -> dict:
    r"""The :math:`s` of ``shared`` (an int, or a 1-d array of them) of :func:`run_overlap`:
    a cell function for :func:`transferkit.sweep.run` (one cell per :math:`s`, or every
    :math:`s` at once with ``vectorize=("shared",)``).

    The draws are those of :func:`run_sample_efficiency` (``_task_draws``; the same
    auxiliary teacher, samples, initialisation, pretraining and test inputs as Fig. 1c),
    the main teacher that of :func:`overlap_teachers`, the main-task inputs those of
    ``_main_samples`` (the same for every :math:`s`).  The students of every
    :math:`s`, :math:`n` and draw are trained in one batch per method (at the ``paper``
    preset 94 s against 141 s for one cell per :math:`s`, pretraining included, on the
    project's 2-core machine beside other jobs), as in :func:`sample_efficiency_cell`,
    whose numbers they are at :math:`s = K` (the pair at :math:`\rho = 1`, main readout 1;
    tested).  Returns ``stl_<field>``, ``ptft_<field>``, ``ptft_rescaled_<field>`` (and
    ``mtl_<field>``) of :class:`StudentRun`, ``ntk_error``, ``lazy_stl_error``,
    ``lazy_ptft_error`` and ``lazy_ptft_rescaled_error`` ``(len(ns), draws)``, ``pre_converged`` and ``pre_steps`` ``(draws,)``, each with a
    leading axis of ``shared`` when it is an array.  The arguments are checked as by
    :func:`run_overlap`, before any work.
    """
    d, width, units, ns, draws, seed, n_aux, n_test, max_steps, pre_max_steps = _checked(
        d, 0.0, 1.0, ns, draws, width, units, n_aux, n_test, alpha, gamma, seed, loss_tol,
        max_steps, pre_max_steps, mtl, lr_scale)
    many = np.iterable(shared) and not isinstance(shared, (str, bytes))
    ss = _checked_shared(shared if many else np.atleast_1d(shared).tolist(), units)
    dev = default_device()
    pairs, Xa, ya, W0, a0, Xt, _ = _task_draws(seed, d, 0.0, 1.0, draws, width, units, n_aux,
                                               n_test, alpha, dev)
    cap = pre_max_steps or 5 * max_steps
    Wp, _, psteps, pconv = _pretrained(seed, d, units, n_aux, width, alpha, draws, loss_tol,
                                       cap, W0, a0, Xa, ya, dev, lr_scale)
    batch, mtl_parts, yts = [], [], []
    for s in ss:
        teachers = overlap_teachers(pairs, s)
        yts.append([_teacher_out(T[2], T[3], x) for T, x in zip(teachers, Xt)])
        batch.append(_main_samples(seed, d, ns, draws, teachers))
        if mtl:
            mtl_parts.append(_mtl_batch(W0, a0, seed, d, ns, draws, teachers, Xa, ya, alpha,
                                        dev))
    X = np.concatenate([b[0] for b in batch])
    y = np.concatenate([b[1] for b in batch])
    nn = np.concatenate([b[2] for b in batch]).astype(float)
    jj = batch[0][3]                                   # the draw of each network of one s
    G = len(jj)

    def scored(W, a, conv, a_aux=None):
        # each s scored as its own block, the batch of sample_efficiency_cell (the rounding
        # of the batched forward pass depends on the batch: the same bits as Fig. 1c at s = K)
        blocks = [_scored(W[k * G:(k + 1) * G], a[k * G:(k + 1) * G], conv[k * G:(k + 1) * G],
                          Xt, yts[k], jj, (len(ns), draws), dev,
                          a_aux=None if a_aux is None else a_aux[k * G:(k + 1) * G])
                  for k in range(len(ss))]
        return StudentRun(**{f.name: np.stack([getattr(b, f.name) for b in blocks])
                             for f in fields(StudentRun) if getattr(blocks[0], f.name) is not None})

    runs = {}
    idx = np.tile(jj, len(ss))                         # the draw of every network
    starts = {"stl": (W0, a0), "ptft": (Wp, torch.full_like(a0, gamma)),
              "ptft_rescaled": (OVERLAP_LAZY_SCALE * Wp, torch.full_like(a0, gamma))}
    for name, (Ws, as_) in starts.items():
        # rescaled weights take smaller steps (the curvature bound grows with their squared
        # norm): the rescaled students get the pretraining's cap, as MTL
        W, a, _, _, conv = train_units(Ws[idx].clone(), as_[idx].clone(), as_tensor(X, dev),
                                       as_tensor(y, dev), nn, loss_tol=loss_tol,
                                       max_steps=cap if name == "ptft_rescaled" else max_steps,
                                       lr_scale=lr_scale)
        runs[name] = scored(W, a, conv)
    if mtl:
        cat = lambda i: torch.cat([part[i] for part in mtl_parts])      # noqa: E731
        W, A, _, _, conv = train_units_mtl(
            cat(0), cat(1), [torch.cat([part[2][o] for part in mtl_parts]) for o in (0, 1)],
            [torch.cat([part[3][o] for part in mtl_parts]) for o in (0, 1)],
            [np.concatenate([part[4][o] for part in mtl_parts]) for o in (0, 1)],
            loss_tol=loss_tol, max_steps=cap, lr_scale=lr_scale)
        runs["mtl"] = scored(W, A[..., 1], conv, a_aux=A[..., 0])
    tests = [(Xt[j], yts[k][j]) for k in range(len(ss)) for j in jj]
    ntk = _ntk_errors(X, y, nn.astype(int), tests)
    # the lazy limits from the same starting weights as the trained students
    lazy = {f"lazy_{name}_error": _lazy_errors(Ws[idx].cpu().numpy(), as_[idx].cpu().numpy(),
                                               X, y, nn.astype(int), tests).reshape(
                len(ss), len(ns), draws)
            for name, (Ws, as_) in starts.items()}
    out = {"ntk_error": ntk.reshape(len(ss), len(ns), draws), **lazy,
           "pre_converged": np.repeat(pconv.cpu().numpy()[None], len(ss), 0),
           "pre_steps": np.repeat(np.asarray(torch.as_tensor(psteps).cpu())[None], len(ss), 0)}
    for name, r in runs.items():
        out.update({f"{name}_{k}": v for k, v in _run_arrays(r).items()})
    return out if many else {k: v[0] for k, v in out.items()}


def run_overlap(preset: OverlapPreset, students: SampleEfficiencyPreset, *,
                shared_cells: bool = False, **run_kwargs) -> OverlapResult:
    r"""Paper 004, App. D, Fig. 4b (reduced): test error of STL, PT+FT (and MTL) and of the
    lazy NTK solution against the number :math:`s` of the main teacher's units that the
    auxiliary teacher shares.

    Per draw of Fig. 1c (``students``, a :class:`SampleEfficiencyPreset`: its ``d``,
    ``width``, ``units``, ``n_aux``, ``draws``, initialisation, step, tolerance and caps;
    its ``rhos``, ``magnitudes`` and ``ns`` are not used), the auxiliary teacher has
    ``units`` orthonormal units with readout 1 and the main teacher shares :math:`s` of them
    (:func:`overlap_teachers`); for every :math:`s` of ``preset.shared`` and :math:`n` of
    ``preset.ns``:

    * **STL** trains from the initialisation on the main samples, **PT+FT** from the
      pretrained first layer with readout :math:`\gamma` (Fig. 1c's pretraining, which does
      not depend on :math:`s`), **MTL** (with ``preset.mtl``) both tasks at once, as in
      :func:`run_sample_efficiency`;
    * **NTK**: the limit of gradient descent from a small-output initialisation in the
      lazy regime, kernel regression
      :math:`f(x) = \Theta(x, X)\,\Theta(X, X)^{-1}y` with the infinite-width NTK
      :math:`\Theta` of the two-layer ReLU network
      (:func:`transferkit.theory.relu.relu_ntk_kernel`; paper 004, caption of Fig. 4b:
      "NTK indicates the (lazy) tangent kernel solution");
    * **PT+FT x 10**: the papers' own lazy fine-tuning, PT+FT after the pretrained first
      layer is rescaled by :data:`OVERLAP_LAZY_SCALE` (``ptft_rescaled``);
    * **lazy STL** and **lazy PT+FT**: the caption's words read at the students' own width
      and starting weights, the limit of gradient descent on the network linearised where STL
      and PT+FT start (:func:`transferkit.theory.relu.tangent_kernel_solution`; the caption
      does not say which network's kernel it means).

    One :func:`transferkit.sweep.run` cell (:func:`overlap_cell`; cached, resumable) trains
    every :math:`s` in one batch per method; with ``shared_cells=True`` one cell per
    :math:`s`, which a Dask cluster spreads (``scheduler=``; the same numbers, tested; the
    two are cached apart).  Pretraining is trained once per process (``_pretrained``),
    the same as Fig. 1c's and the nested tasks'.

    Returns
    -------
    OverlapResult

    Raises
    ------
    TypeError
        For a ``preset`` or ``students`` of the wrong type.
    ValueError
        As :func:`run_sample_efficiency` for the values of ``students``; for an empty
        ``preset.shared`` or ``preset.ns``, or an :math:`s` outside ``[0, units]``.
    """
    if not isinstance(preset, OverlapPreset):
        raise InputTypeError(f"preset must be an OverlapPreset (got {type(preset).__name__})")
    args = {**_preset_args(students), "ns": preset.ns, "mtl": preset.mtl}
    d, width, units, ns, draws, seed, n_aux, n_test, max_steps, pre_max_steps = _checked(
        rho=0.0, magnitude=1.0, **args)
    shared = _checked_shared(preset.shared, units, "preset.shared")
    fixed = {k: v for k, v in args.items() if k != "seed"}
    fixed.update(ns=ns, max_steps=max_steps, pre_max_steps=pre_max_steps)
    kw = dict(run_kwargs)
    kw.setdefault("desc", "Fig. 4b: shared units")
    shared_cells = check_bool("shared_cells", shared_cells)
    sw = run(overlap_cell, Grid(shared=shared, seed=[seed]), fixed=fixed,
             vectorize=() if shared_cells else ("shared",), **kw)
    out = {name: np.ascontiguousarray(sw[name][:, 0]) for name in sw.keys()}
    runs = _student_runs(out)
    return OverlapResult(shared=np.array(shared), units=units, ns=np.array(ns),
                         stl=runs["stl"], ptft=runs["ptft"], mtl=runs.get("mtl"),
                         ptft_rescaled=_student_runs(out, ("ptft_rescaled",))["ptft_rescaled"],
                         ntk_error=out["ntk_error"], lazy_stl_error=out["lazy_stl_error"],
                         lazy_ptft_error=out["lazy_ptft_error"],
                         lazy_ptft_rescaled_error=out["lazy_ptft_rescaled_error"],
                         pre_converged=out["pre_converged"][0],
                         pre_steps=out["pre_steps"][0])


def run_overlap_mtl(preset: OverlapPreset, students: SampleEfficiencyPreset,
                    features: ReluFeaturesPreset, **run_kwargs) -> OverlapResult:
    r"""The reduced Fig. 4b of paper 004 with multi-task students beside STL and PT+FT, at the
    sizes of the multi-task students of the reduced Figs. 6d-e.

    :func:`run_overlap` with ``preset``'s :math:`s` but ``ns = features.mtl_ns``,
    ``students.draws = features.mtl_draws`` and ``mtl=True``: the draws are the first draws
    of ``run_overlap(preset, students)`` (the same teachers, samples, initialisations and
    pretraining), and its STL and PT+FT students are that run's at those :math:`n` (each
    network is trained as if alone).  The reduction is the one of :func:`run_mtl_students`
    (``features.mtl_ns``, ``features.mtl_draws``): an MTL network learns the auxiliary task
    from the small initialisation.

    Raises
    ------
    TypeError
        For a ``preset``, ``students`` or ``features`` of the wrong type.
    ValueError
        As :func:`run_overlap`.
    """
    if not isinstance(features, ReluFeaturesPreset):
        raise InputTypeError(f"features must be a ReluFeaturesPreset "
                             f"(got {type(features).__name__})")
    if not isinstance(preset, OverlapPreset):
        raise InputTypeError(f"preset must be an OverlapPreset (got {type(preset).__name__})")
    if not isinstance(students, SampleEfficiencyPreset):
        raise InputTypeError(f"students must be a SampleEfficiencyPreset "
                             f"(got {type(students).__name__})")
    return run_overlap(replace(preset, ns=tuple(features.mtl_ns), mtl=True),
                       replace(students, draws=features.mtl_draws), **run_kwargs)
