"""The input contract at the ends of the float range: valid, finite inputs of 1e200 or
1e-300 give finite, correct results or a ``ValueError`` naming the parameter, never NaN, inf
or a raw error from numpy, LAPACK or the convex solver.

The cases are those of the second fuzzing audit (2026-11-29, in the CHANGELOG); each test
failed before its fix.  Where a function is scale invariant (a ratio, a t statistic, a
least-squares scale, an interpolant of rescaled constraints) the test holds the extreme
input to the result at unit scale.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _helpers import time_limit

from transferkit import stats
from transferkit._validate import check_coordinates, check_one
from transferkit.experiments import dataset_distances, linear_teachers, linear_transfer
from transferkit.experiments import diagonal_networks as dn
from transferkit.models import diagonal as md
from transferkit.models import relu
from transferkit.models.deep_linear import init_deep_linear
from transferkit.theory.distances import joint_samples
from transferkit.theory import linear_teachers as lt

_RNG = np.random.default_rng(0)
X = _RNG.standard_normal((5, 12))
Y = _RNG.standard_normal(5)
THETA = _RNG.standard_normal(12)
BETA = _RNG.standard_normal((3, 12))
AUX = np.where(np.arange(12) < 4, 1.0, 0.0)


@pytest.mark.parametrize("scale", [1e-310, 2.0 ** -1000, 1e-200, 1e90])
def test_frozen_predictor_is_scale_free_in_theta_s(scale):
    # beta = c theta_s with c = <X theta_s, y> / |X theta_s|^2: theta_s's scale cancels
    # (1e-310 gave c = inf and beta inf or NaN)
    want = lt.frozen_predictor(X, Y, THETA)
    got = lt.frozen_predictor(X, Y, THETA * scale)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-12 if scale > 1e-300 else 1e-9)


def test_frozen_predictor_names_a_theta_s_of_the_wrong_dimension():
    with pytest.raises(ValueError, match="theta_s must have the input dimension of X"):
        lt.frozen_predictor(X, Y, THETA[:5])


@pytest.mark.parametrize("unit", [5e-324, 1e-310, 1e-300, 1.0, 1e300])
def test_paired_test_t_is_scale_free(unit):
    # t = mean / se; subnormal differences rounded the standard error to 0 and t to NaN
    d = np.array([[1.0, 2.0, 1.0, 3.0]])
    got = stats.paired_test(d * unit, 3)
    want = stats.paired_test(d, 3)
    assert got.t == pytest.approx(want.t, rel=1e-15)
    assert got.sign == want.sign


@pytest.mark.parametrize("scale", [1e200, 1e-300])
def test_top_k_variance_is_scale_free(scale):
    # squares of 1e200 overflowed (NaN shares); of 1e-300 underflowed (refused as all-zero)
    np.testing.assert_allclose(dn.top_k_variance(BETA * scale), dn.top_k_variance(BETA),
                               rtol=1e-13)


@pytest.mark.parametrize("scale", [1e200, 1e-300])
def test_aux_norm_fraction_is_scale_free(scale):
    np.testing.assert_allclose(dn.aux_norm_fraction(BETA * scale, AUX),
                               dn.aux_norm_fraction(BETA, AUX), rtol=1e-14)


@pytest.mark.parametrize("alpha", [1e-150, 1e8, 1e200])
def test_readout_only_training_does_not_depend_on_alpha(alpha):
    # the limit is X^+ y whatever alpha (the docstring's claim); at 1e200 Phi v0 overflowed
    # (NaN), and at 1e8 the step was lost to rounding in w2_0 + dv
    fit = dn.readout_only_fit(X, Y, alpha, alpha)
    np.testing.assert_allclose(fit.beta, np.linalg.pinv(X) @ Y, rtol=1e-9, atol=1e-12)
    assert fit.residual < 1e-12


@pytest.mark.parametrize("sx,sy", [(1e200, 1.0), (1e-300, 1.0), (1.0, 1e-200), (1e-100, 1e100)])
def test_q_min_interpolant_of_rescaled_constraints(sx, sy):
    # (X, y) -> (X sx, y sy): beta_Q(X sx, y sy, c) = sy/sx beta_Q(X, y, c sx/sy), so the
    # problem at (sx, sy) with c is the unit problem with c sx / sy; X * 1e200 gave inf,
    # X * 1e-300 LAPACK's LinAlgError
    c_unit = 0.02
    w = np.sqrt(c_unit / 2 * sy / sx)
    beta, res = md.q_min_interpolant(X * sx, Y * sy, w, w)
    want, _ = md.q_min_interpolant(X, Y, np.sqrt(c_unit / 2), np.sqrt(c_unit / 2))
    assert res < 1e-10
    np.testing.assert_allclose(beta * sx / sy, want, rtol=1e-8, atol=1e-12)


def test_q_min_interpolant_tends_to_the_minimum_l1_interpolant():
    # c -> 0 is the rich limit, the minimum-l1 interpolant (a linear program, solved here by
    # scipy's HiGHS); from alpha = 1e-8 the Newton step was beyond every step length tried
    # and the result NaN
    from scipy.optimize import linprog
    n, D = X.shape
    lp = linprog(np.ones(2 * D), A_eq=np.hstack([X, -X]), b_eq=Y, bounds=(0, None),
                 method="highs")
    l1 = []
    for alpha in (1e-3, 1e-8, 1e-20, 1e-50, 1e-150):
        beta, res = md.q_min_interpolant(X, Y, alpha, alpha)
        assert res < 1e-10 and np.isfinite(beta).all()
        l1.append(np.abs(beta).sum())
    assert all(a >= b - 1e-12 for a, b in zip(l1, l1[1:]))        # falls as c falls
    assert l1[-1] >= lp.fun - 1e-9
    assert l1[-1] == pytest.approx(lp.fun, rel=1e-7)


@pytest.mark.parametrize("kwargs,match", [
    (dict(X=X[:, :, None]), "X must have shape"),
    (dict(X=X * np.nan), "X must be finite"),
    (dict(y=Y[:3]), r"y must have shape \(5,\)"),
    (dict(w1_0=np.ones(3)), "w1_0 must be a number or have shape"),
    (dict(w2_0=0.0, w1_0=0.0), "w1_0\\*\\*2 \\+ w2_0\\*\\*2 must be > 0"),
    (dict(tol=0.0), "tol must"),
    (dict(max_iter=0), "max_iter must"),
])
def test_q_min_interpolant_names_bad_input(kwargs, match):
    args = dict(X=X, y=Y, w1_0=0.1, w2_0=0.1)
    args.update(kwargs)
    opts = {k: args.pop(k) for k in ("tol", "max_iter") if k in args}
    with pytest.raises(ValueError, match=match):
        md.q_min_interpolant(args["X"], args["y"], args["w1_0"], args["w2_0"], **opts)


@pytest.mark.parametrize("sx,sy", [(1e200, 1.0), (1e-200, 1.0), (1.0, 1e200), (1.0, 1e-5),
                                   (1e10, 1e-10)])
def test_min_l12_interpolant_of_rescaled_constraints(sx, sy):
    # the l1,2 norm is homogeneous: B(X sx, y sy) = sy/sx B(X, y).  X * 1e200 and y * 1e200
    # were Clarabel's SolverError, X * 1e-200 a wrong "infeasible", and y / 1e5 a gap of 2e-6
    Xs = [X, X[:, ::-1]]
    ys = [Y, Y[::-1] + 1.0]
    want = md.min_l12_interpolant(Xs, ys)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no ConvergenceWarning: the gap is certified
        got = md.min_l12_interpolant([x * sx for x in Xs], [v * sy for v in ys])
    assert got.gap < md.L12_GAP_WARN and got.residual < 1e-6
    assert got.norm * sx / sy == pytest.approx(want.norm, rel=1e-6)
    assert got.lower_bound <= got.norm
    # an interpolant within a relative gap g of the minimum is within about sqrt(g) of it
    np.testing.assert_allclose(got.B * sx / sy, want.B, atol=1e-3 * np.abs(want.B).max())


def test_min_l12_interpolant_at_unit_scale_is_solved_as_given(monkeypatch):
    # data within [2**-8, 2**8] reach the solver unscaled (the book's numbers stay)
    seen = []
    real = md.cp.Problem

    def spy(objective, constraints):
        seen.append(constraints)
        return real(objective, constraints)

    monkeypatch.setattr(md.cp, "Problem", spy)
    md.min_l12_interpolant([X], [Y])
    (con,) = seen[0]
    assert np.array_equal(con.args[1].value, Y)


def test_stl_readout_only_at_huge_alpha_is_the_minimum_l2_interpolant():
    with time_limit(60):
        small = dn.stl_readout_only(20, 3, 2, [5], draws=2, n_aux=10, alpha=0.1)
        huge = dn.stl_readout_only(20, 3, 2, [5], draws=2, n_aux=10, alpha=1e200)
    np.testing.assert_allclose(huge.beta, small.beta, rtol=1e-9, atol=1e-12)
    assert np.isfinite(huge.risk).all()


# ------------------------------------------------------------------ scales refused up front
# Each of these trained first and then diverged with the step size blamed, or ran for
# minutes (the second audit's "huge scales blamed on the step size").

@pytest.mark.parametrize("call,match", [
    (lambda: linear_teachers.frozen_sim(6, [2], 0.5, draws=1, init_scale=1e200), "init_scale"),
    (lambda: linear_teachers.frozen_sim(6, [2], 0.5, draws=1, init_scale=5e-324), "init_scale"),
    (lambda: linear_transfer.scratch_limit_vs_alpha(6, 0.5, 0.1, [1e-3, 1e200]), "alphas"),
    (lambda: linear_transfer.scratch_limit_vs_alpha(6, 0.5, 0.1, [5e-324]), "alphas"),
    (lambda: linear_transfer.feature_spectrum(6, [1e200]), "alphas"),
    (lambda: dataset_distances.simulate_pairs(5, [0.5], [1.0], [1e200], 0.2, draws=2), "norms"),
    (lambda: dataset_distances.simulate_pairs(5, [0.5], [1.0], [1e13], 0.2, draws=2), "norms"),
])
def test_scales_beyond_the_models_range_are_refused_before_any_work(call, match):
    with time_limit(5), pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("module,worker,call,match", [
    # w1_repeats = 1 was refused only after every network was trained
    (dataset_distances, "simulate_grid",
     lambda: dataset_distances.simulate_pairs(5, [0.5], [1.0], [1.0], 0.2, draws=2,
                                              w1_repeats=1), "w1_repeats"),
    (linear_transfer, "pretrain", lambda: linear_transfer.feature_spectrum(6, [1e-3], depth=1),
     "depth"),
    # the W1 estimate's n x n plan was refused after the training, under W1's own name "n"
    (dataset_distances, "simulate_grid",
     lambda: dataset_distances.simulate_pairs(5, [0.5], [1.0], [1.0], 0.2, draws=2,
                                              w1_samples=10**12), "^w1_samples=.* is too large"),
])
def test_refused_before_the_first_network_is_trained(monkeypatch, module, worker, call, match):
    def no_work(*args, **kwargs):
        raise AssertionError(f"{worker} ran before the arguments were checked")

    monkeypatch.setattr(module, worker, no_work)
    with pytest.raises(ValueError, match=match):
        call()


def test_ntk_training_refuses_targets_whose_squares_overflow():
    import torch
    W, A = relu.init_ntk(3, 10, 0.1, [0])
    Xt = torch.tensor(X[:4, :3])
    with time_limit(5), pytest.raises(ValueError, match="y must have entries of magnitude"):
        relu.train_ntk(W, A, Xt, torch.full((4,), 1e200, dtype=torch.float64), eta=0.5)


# ------------------------------------------------------------------ the shared budget rule

def _estimate(d, n, draws):
    return 8 * draws * (d * d + n * d)


@pytest.mark.parametrize("sizes,named", [
    (dict(d=10**6, n=100, draws=20), "d"),          # d x d dominates
    (dict(d=500, n=10**9, draws=20), "n"),
    (dict(d=500, n=1000, draws=10**9), "draws"),
    (dict(d=10**5, n=10**5, draws=10**6), "draws"),  # the reset that shrinks the estimate most
])
def test_check_budget_among_names_the_size_furthest_above_typical(sizes, named):
    from transferkit._validate import check_budget_among
    typical = dict(d=500, n=1000, draws=20)
    with pytest.raises(ValueError, match=rf"^{named}=\d+ is too large"):
        check_budget_among(_estimate, sizes, typical)


def test_check_budget_among_passes_what_fits_and_shows_the_value_asked():
    from transferkit._validate import check_budget_among
    typical = dict(d=500, n=1000, draws=20)
    check_budget_among(_estimate, typical, typical)                 # 46 MB: passes
    with pytest.raises(ValueError, match=r"^n=\[7, 10000000000\] is too large"):
        check_budget_among(_estimate, dict(d=500, n=10**10, draws=20), typical,
                           shown=dict(n=[7, 10**10]))
    with pytest.raises(ValueError, match="d=2000 is too large"):
        check_budget_among(_estimate, dict(d=2000, n=1000, draws=20), typical, limit=2**20)


@pytest.mark.parametrize("case,match", [
    ("X 2-d", "X must have shape"), ("y short", "X must have shape"),
    ("one rng", "rngs must hold one numpy generator per instance"),
    ("numpy X", "X must be a torch tensor"),
])
def test_train_scratch_checks_its_shapes_before_any_work(case, match):
    # a 2-d X was an IndexError, a numpy X torch's TypeError
    import torch
    from transferkit.models.deep_linear import train_scratch
    X = torch.tensor(_RNG.standard_normal((2, 5, 8)))
    y = torch.tensor(_RNG.standard_normal((2, 5)))
    rngs = [np.random.default_rng(i) for i in range(2)]
    args = {"X 2-d": (X[0], y[0], rngs), "y short": (X, y[:, :3], rngs),
            "one rng": (X, y, rngs[:1]), "numpy X": (X.numpy(), y, rngs)}[case]
    with pytest.raises(ValueError, match=match):
        train_scratch(args[0], args[1], 2, 1e-3, args[2], max_steps=10)


@pytest.mark.parametrize("call,match", [
    (lambda r: relu.init_ntk(3, 10**12, 1.0, [0]), "^m=1000000000000 is too large"),
    (lambda r: relu.init_ntk(10**12, 4, 1.0, [0]), "^d=1000000000000 is too large"),
    (lambda r: relu.random_sphere((10**6, 10**6), r), r"^shape=\(1000000, 1000000\) is too large"),
    (lambda r: relu.teacher_pair(10**12, 2, 0.5, 1.0, r), "^d=1000000000000 is too large"),
    (lambda r: init_deep_linear(10**12, 2, 0.1, [r]), "^d=1000000000000 is too large"),
    (lambda r: init_deep_linear(10, 2, 0.1, [r], width=10**12), "^width=1000000000000 is too"),
    (lambda r: init_deep_linear(10**3, 10**6, 0.1, [r]), "^depth=1000000 is too large"),
    (lambda r: joint_samples(np.ones(3), 0.1, 10**12, r), "^n=1000000000000 is too large"),
    (lambda r: dn.sparse_teachers(10**12, 2, 1, r), "^D=1000000000000 is too large"),
])
def test_constructors_refuse_sizes_beyond_the_memory_budget(call, match):
    # each raised numpy's MemoryError (the second audit)
    with time_limit(5), pytest.raises(ValueError, match=match):
        call(np.random.default_rng(0))


@pytest.mark.parametrize("noise", [1e12, 1e50])
def test_scratch_training_under_huge_label_noise_stops_at_the_rounding_floor(noise):
    # an excess-loss tolerance of 1e-14 under targets of 1e12 is below float64's resolution:
    # training ran to its step budget (85 s at d = 6); it now stops at the floor, converged
    import torch
    from transferkit.models.deep_linear import end_to_end, train_scratch
    rng = np.random.default_rng(3)
    X = torch.tensor(rng.standard_normal((2, 3, 6)))
    y = torch.tensor(rng.standard_normal((2, 3))) * noise
    rngs = [np.random.default_rng(i) for i in range(2)]
    Ws, info = train_scratch(X, y, 2, 1e-3, rngs, method="gd", loss_tol=1e-14,
                             max_steps=100_000)
    assert bool(info.converged.all()) and int(info.steps.max()) < 10_000
    beta = end_to_end(Ws)
    fit = (X @ beta[..., None])[..., 0]
    assert float((fit - y).abs().max() / y.abs().max()) < 1e-9        # interpolates


def test_the_rounding_floor_leaves_the_books_tolerances_alone():
    import torch
    from transferkit.models.deep_linear import _rounding_tol
    lam = torch.ones(3, 5, dtype=torch.float64)
    target = torch.full((3, 5), 10.0, dtype=torch.float64)          # targets of order 10
    assert _rounding_tol(1e-14, lam, target) == 1e-14                 # unchanged: same bits
    tol = _rounding_tol(1e-14, lam, target * 1e12)
    assert torch.is_tensor(tol) and bool((tol > 1e-14).all())


def test_q_min_interpolant_of_zero_targets_is_zero():
    # the unit scaling must leave y = 0 alone (scaling c by 2**1021 overflowed to a refusal)
    beta, res = md.q_min_interpolant(X, np.zeros(5), 0.1, 0.1)
    assert np.array_equal(beta, np.zeros(12)) and res == 0.0


@pytest.mark.parametrize("value, ok", [(0.3, True), ([0.3], True), (np.full(4, 0.3), True),
                                       (np.ones(3), False), (np.ones((1, 4)), False),
                                       (np.nan, False), ("0.3", False)])
def test_check_coordinates_takes_a_number_or_one_per_coordinate(value, ok):
    """``q_min_interpolant`` and ``readout_only_fit`` share this check of their
    initialisation vectors: a number, ``(1,)`` or ``(D,)``, finite, returned unbroadcast."""
    if ok:
        out = check_coordinates("w1", value, 4)
        assert np.array_equal(out, np.asarray(value, float))
    else:
        with pytest.raises(ValueError, match=r"^w1 must"):
            check_coordinates("w1", value, 4)


@pytest.mark.parametrize("value, ok", [(2, True), (2.5, True), (np.float64(1), True),
                                       ([2], False), (np.arange(3), False)])
def test_check_one_refuses_a_sequence_for_a_cell_grid_point(value, ok):
    if ok:
        check_one("n", value)
    else:
        with pytest.raises(ValueError, match=r"^n must be one number, the cell's grid point"):
            check_one("n", value)
