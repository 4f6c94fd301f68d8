"""The input contract on the entry points of :mod:`transferkit.experiments` and the trainers
of :mod:`transferkit.models` (issue 15's contract, beyond the closed forms that
``tests/test_contract.py`` drives with hypothesis).

Every function of :data:`VALID` and :data:`MODELS_VALID` is called with small valid arguments in which one numeric
argument (a number, or a list of numbers) is replaced by NaN or by a string.  Each call
must raise a ``ValueError`` or ``TypeError`` from a frame inside ``transferkit/`` whose
message names the argument, within :data:`CALL_LIMIT_S` seconds: never a return (NaN
results), never numpy's or torch's own message, never a hang.  The cases found by this
sweep on 2026-11-28 are in the CHANGELOG (e.g. a NaN ``loss_tol`` of the lazy-to-rich
sweep trained and returned, a string ``sigma`` reached a numpy ufunc).
"""

from __future__ import annotations

import inspect
import numbers
import os
import re
import traceback
import warnings

import numpy as np
import pytest
import torch
from _helpers import time_limit

from transferkit import experiments

CALL_LIMIT_S = 30
PACKAGE_DIR = os.path.dirname(os.path.abspath(experiments.__file__)).rsplit(os.sep, 1)[0]

_RNG = np.random.default_rng(0)
_SPHERE = _RNG.standard_normal((12, 3))
_SPHERE /= np.linalg.norm(_SPHERE, axis=1, keepdims=True)      # inputs of paper 002, Sec. 6.1

#: Entry point -> small valid arguments (the other numeric arguments keep their defaults,
#: which are driven too).
VALID = {
    "deep_linear.simulate_transfer": dict(d=10, gamma=0.5, theta=1.0, sigma=0.2, draws=2),
    "deep_linear.simulate_grid": dict(d=10, gammas=[0.5], thetas=[1.0], sigma=0.2, draws=2),
    "deep_linear.pretrain": dict(d=10, draws=2),
    "linear_transfer.linear_transfer_grid": dict(d=10, gammas=[0.5], thetas=[1.0], sigma=0.2,
                                                 draws=2, cache=False),
    "linear_transfer.scratch_limit_vs_alpha": dict(d=10, gamma=0.5, sigma=0.2, alphas=[1e-3],
                                                   draws=2),
    "linear_transfer.feature_spectrum": dict(d=10, alphas=[1e-3], draws=2),
    "finetuning.finetune_grid": dict(d=10, gammas=[0.5], thetas=[1.0], sigma=0.2, draws=2,
                                     cache=False),
    "regularisation.ridge_transfer_curve": dict(d=10, gamma=0.5, lams=[0.1], thetas=[1.0],
                                                sigma=0.2, draws=2),
    "regularisation.weight_decay_scratch_grid": dict(d=10, gammas=[0.5], sigma=0.2, draws=2,
                                                     cache=False),
    "dataset_distances.simulate_pairs": dict(d=10, gammas=[0.5], thetas=[1.0], norms=[1.0],
                                             sigma=0.2, draws=2),
    "predictors.synthetic_benchmark": dict(d=10, gammas=[0.5], thetas=[1.0], sigmas=[0.2],
                                           norms=[1.0], draws=2),
    "predictors.isotropic_eq3": dict(dist=0.5, n=5, d=10),
    "predictors.gaussian_kl": dict(A=_RNG.standard_normal((30, 4)),
                                   B=_RNG.standard_normal((30, 4)), k=2),
    "linear_teachers.eigen_align_sim": dict(lam=np.ones(6), m=2, ns=[3], draws=2, cache=False),
    "linear_teachers.depth_alpha_sim": dict(d=10, n=4, depths=[2], alphas=[0.5], draws=2,
                                            cache=False),
    "linear_teachers.scaling_sim": dict(d=10, n=4, depth=2, scales=[1.0], draws=2, cache=False),
    "linear_teachers.frozen_sim": dict(d=10, ns=[4], cos_angle=0.5, draws=2, cache=False),
    "linear_teachers.spiked_spectrum": dict(d=10, m=2),
    "lazy_rich.init_scale_sweep": dict(d=4, m=8, m_star=2, mu=0.5, alphas=[0.1], ns=[10],
                                       draws=2, cache=False),
    "lazy_rich.monte_carlo_check": dict(d=4, m=8, m_star=2, mu=0.5, n=10, draws=2, test=100),
    "relu_student_teacher.fig3_experiment": dict(d=4, m=10, m_star=2, mus=[0.1], ns=[10],
                                                 cache=False),
    "ptft_relu.run_sample_efficiency": dict(d=12, rho=1.0, magnitude=1.0, ns=[8], draws=1,
                                            cache=False),
    "ptft_relu.run_stl_init_scale": dict(d=12, rho=1.0, magnitude=1.0, ns=[8], alphas=[0.1],
                                         draws=1, cache=False),
    "ptft_relu.run_stl_dense": dict(d=12, ns=[8], alphas=[0.1], draws=1, cache=False),
    "ptft_relu.run_nested_rescaling": dict(preset=experiments.ptft_relu.SAMPLE_EFFICIENCY["smoke"],
                                           scales=[1.0], cache=False),
    "ptft_relu.penalty_ratio": dict(magnitude=1.0, rho=1.0, gamma=0.01),
    "ptft_relu.overlap_teachers": dict(
        teachers=[experiments.ptft_relu.teacher_pair(4, 2, 0.0, 1.0, np.random.default_rng(0))],
        shared=1),
    "diagonal_networks.run_tasks": dict(D=10, k=2, overlap=1, ns=[4], draws=1, n_aux=8,
                                        alpha=0.1, gamma=0.1, cache=False),
    "diagonal_networks.mtl_small_init": dict(D=10, k=2, overlap=1, ns=[4], draws=1, n_aux=8,
                                             alphas=[0.1], cache=False),
    "diagonal_networks.rescaling_experiment": dict(D=10, k=2, k_main=1, ns=[4], scales=[1.0],
                                                   draws=1, n_aux=8, alpha=0.1, gamma=0.1,
                                                   cache=False),
    "diagonal_networks.stl_readout_only": dict(D=10, k=2, overlap=1, ns=[4], draws=1, n_aux=8,
                                               alpha=0.1),
    "mnist_table.draw_task_pairs": dict(K=3),
    "ntk_similarity.transfer_experiment": dict(
        XP=_SPHERE[:8], yP=np.ones(8), tasks={"Q": (_SPHERE[8:], -np.ones(4))}, m=16,
        seeds=(0,), max_steps=5),
    "ntk_similarity.width_sweep": dict(
        XP=_SPHERE[:8], yP=np.ones(8), tasks={"Q": (_SPHERE[8:], -np.ones(4))}, widths=[16],
        seeds=(0,), max_steps=5, cache=False),
    "lenet_transfer.transfer_cell": dict(source="mnist", seed=0, n_pretrain=20, snapshots=(1,),
                                         n_target=20, ft_epochs=1),
    "lenet_transfer.target_data": dict(n=20, seed=0),
}


def _models_valid() -> dict:
    """Small valid arguments of the models' trainers and helpers (built once, on the CPU)."""
    from transferkit.models import deep_linear as dl
    from transferkit.models import diagonal, relu
    rng = np.random.default_rng(1)
    t = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float64)  # noqa: E731
    X, y = t(rng.standard_normal((2, 6, 4))), t(rng.standard_normal((2, 6)))
    Ws = dl.init_deep_linear(4, 2, 1e-3, [np.random.default_rng(i) for i in range(2)])
    T = relu.make_teachers(2, 2, 4, rng)
    W0 = relu.random_sphere((2, 5, 4), rng)
    Wn, An = relu.init_ntk(4, 8, 1.0, [0, 1])
    Xn = torch.nn.functional.normalize(t(rng.standard_normal((6, 4))), dim=1)
    state = diagonal.init_state(2, 1, 4, 0.1, 0.1)
    Xd, yd = t(rng.standard_normal((2, 1, 6, 4))), t(rng.standard_normal((2, 1, 6)))
    return {
        "models.deep_linear.init_deep_linear": (dl.init_deep_linear, dict(
            d=4, depth=2, alpha=1e-3, rngs=[np.random.default_rng(0)])),
        "models.deep_linear.gradient_descent": (dl.gradient_descent, dict(
            Ws=Ws, obj=dl.empirical_objective(X, y), max_steps=5)),
        "models.deep_linear.feature_subspace": (dl.feature_subspace, dict(Ws=Ws)),
        "models.deep_linear.deep_finetune_sim": (dl.deep_finetune_sim, dict(
            Ws=Ws, X=X, y=y, max_steps=5)),
        "models.deep_linear.weight_decay_minimiser": (dl.weight_decay_minimiser, dict(
            obj=dl.empirical_objective(X, y), weight_decay=0.1)),
        "models.relu.train_units": (relu.train_units, dict(
            W=t(W0), a=t(np.full((2, 5), 0.1)), X=X, y=y, n=np.full(2, 6.0), max_steps=5)),
        "models.relu.train_samples": (relu.train_samples, dict(
            W0=W0, c0=np.full((2, 5), 1e-3), X=X.numpy(), y=y.numpy(), max_steps=5)),
        "models.relu.train_population": (relu.train_population, dict(
            W0=W0, c0=np.full((2, 5), 1e-3), teacher=T, max_steps=5)),
        "models.relu.train_ntk": (relu.train_ntk, dict(
            W=Wn, A=An, X=Xn, y=t(rng.standard_normal(6)), eta=0.1, max_steps=5)),
        "models.relu.init_ntk": (relu.init_ntk, dict(d=4, m=8, kappa=1.0, seeds=[0])),
        "models.relu.readout_transfer_risk": (relu.readout_transfer_risk, dict(
            W=W0, X=X.numpy(), teacher=T)),
        "models.relu.rkhs_norms": (relu.rkhs_norms, dict(W=W0, teacher=T)),
        "models.relu.teacher_pair": (relu.teacher_pair, dict(
            d=4, units=2, rho=0.5, magnitude=1.0, rng=np.random.default_rng(0))),
        "models.relu.make_teachers": (relu.make_teachers, dict(
            seeds=2, m_star=2, d=4, rng=np.random.default_rng(0))),
        "models.relu.draw_init_scale_teachers": (relu.draw_init_scale_teachers, dict(
            d=4, m_star=2, mu=0.5, draws=2)),
        "models.diagonal.train_diagonal": (diagonal.train_diagonal, dict(
            state=state, X=Xd, y=yd, n=np.full((2, 1), 6.0), max_steps=5)),
        "models.diagonal.init_state": (diagonal.init_state, dict(
            B=2, O=1, D=4, w1_0=0.1, w2_0=0.1)),
        "models.diagonal.min_l12_interpolant": (diagonal.min_l12_interpolant, dict(
            Xs=[Xd[0, 0].numpy()], ys=[yd[0, 0].numpy()])),
    }


MODELS_VALID = _models_valid()


def _real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _entries():
    for name, kw in VALID.items():
        mod, fn = name.split(".")
        yield name, getattr(getattr(experiments, mod), fn), kw
    for name, (func, kw) in MODELS_VALID.items():
        yield name, func, kw


def _cases():
    for name, func, kw in _entries():
        args = dict(kw)
        for p, par in inspect.signature(func).parameters.items():
            if p not in args and par.default is not inspect.Parameter.empty and _real(par.default):
                args[p] = par.default
        for p, v in args.items():
            numeric_list = isinstance(v, list) and v and all(_real(x) for x in v)
            if not (_real(v) or numeric_list):
                continue
            for bad in (float("nan"), "x"):
                yield pytest.param(func, kw, p, [bad] if numeric_list else bad,
                                   id=f"{name}-{p}-{bad}")


@pytest.mark.parametrize("func, valid, param, bad", list(_cases()))
def test_bad_number_is_refused_by_transferkit_naming_it(func, valid, param, bad):
    args = dict(valid)
    args[param] = bad
    with warnings.catch_warnings(), time_limit(CALL_LIMIT_S):
        warnings.simplefilter("ignore")
        with pytest.raises((ValueError, TypeError)) as info:
            func(**args)
    frame = traceback.extract_tb(info.value.__traceback__)[-1]
    assert os.path.abspath(frame.filename).startswith(PACKAGE_DIR), \
        f"raised outside transferkit ({frame.filename}): {info.value}"
    message = str(info.value)
    names = {param, param[:-1] if param.endswith("s") else param}     # "ns" or "n", "mus" or "mu"
    assert any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", message)
               for n in names), f"the message does not name {param!r}: {message}"


def test_the_table_holds_valid_calls_of_real_functions():
    """Every entry names a function of the package and its arguments exist (a table that
    drifted from the code would test nothing)."""
    for name, func, kw in _entries():
        params = inspect.signature(func).parameters
        has_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        for k in kw:
            assert k in params or has_kwargs, f"{name} has no argument {k!r}"
