"""Regression cases of issue 15 ("The input contract, everywhere").

Every concrete example named in the issue's "Classes of failure" is one test here; the
old flat names of the issue map to the new modules (``teachers.population_risk`` is
:func:`transferkit.theory.linear_teachers.excess_risk`, ``kernels.*`` is
:mod:`transferkit.theory.relu`, ``predictors.score`` is :func:`transferkit.stats.score`, ...).
The contract: a bad argument is a ``ValueError`` (``TypeError`` for a wrong type) naming the
parameter, raised before any work; no hang, no NaN, no wrong number; the CLI reports every
error on one line of stderr with exit status 2.
"""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest
from _helpers import run_cli_in_process, time_limit

from transferkit import _validate, cli, stats, streams
from transferkit.data import binary_task
from transferkit.experiments import deep_linear as sim
from transferkit.models import relu as models_relu
from transferkit.models import deep_linear as models_deep_linear
from transferkit.theory import deep_linear as th
from transferkit.theory import linear_teachers as lt
from transferkit.theory import penalties, relu

HUGE_INT = 10**400  # beyond the float range: float(HUGE_INT) raises OverflowError


def refused(func, *args, match, exc=ValueError, seconds=10, **kwargs):
    with time_limit(seconds), pytest.raises(exc, match=match):
        func(*args, **kwargs)


# ------------------------------------------------------------------ hangs

def test_draw_task_pairs_more_pairs_than_exist():
    from transferkit.experiments.mnist_table import draw_task_pairs
    refused(draw_task_pairs, 10**6, match="K", seconds=5)  # 45 distinct pairs exist


def test_simulate_transfer_huge_draws_refused_up_front():
    refused(sim.simulate_transfer, 10, 0.5, 1.0, 0.2, draws=10**12, progress=False,
            match=r"draws.*(bytes|GiB|TiB|size)", seconds=5)


def test_simulate_transfer_huge_alpha_refused():
    refused(sim.simulate_transfer, 10, 0.5, 1.0, 0.2, alpha=1e10, progress=False,
            match="alpha", seconds=5)


def test_simulate_grid_huge_d_refused():
    refused(sim.simulate_grid, 100_000, [0.5], [1.0], 0.2, progress=False, match=r"\bd\b",
            seconds=5)


# ------------------------------------------------------------------ wrong numbers

@pytest.mark.parametrize("mu", [1e8, 1e13, 1e16, 1e30, 1e300])
def test_ridge_risk_large_mu_tends_to_one(mu):
    # mu -> inf: beta_hat -> 0, the excess risk -> ||beta||^2 = 1
    r = th.ridge_risk(0.5, 0.2, mu)
    assert abs(r - 1.0) < 1e-6 and r <= 1.0 + 1e-12


@pytest.mark.parametrize("mu", [1e8, 1e13, 1e16, 1e30, 1e300])
def test_ridge_norm2_large_mu_non_negative(mu):
    v = th.ridge_norm2(0.5, 0.2, mu)
    assert v >= 0 and v < 1e-6


@pytest.mark.parametrize("g, s", [(0.5, 0.2), (2.0, 1.0), (0.1, 0.0), (5.0, 3.0), (0.01, 1.0)])
def test_ridge_asymptotic_branch_continuous(g, s):
    # the series takes over at mu = RIDGE_MU_ASYMPTOTIC (1 + sqrt(1/gamma))^2
    mu0 = th.RIDGE_MU_ASYMPTOTIC * (1 + math.sqrt(1 / g)) ** 2
    lo, hi = mu0 * (1 - 1e-12), mu0 * (1 + 1e-12)
    a, b = th.ridge_risk(g, s, lo), th.ridge_risk(g, s, hi)
    assert abs(a - b) <= 1e-12 * abs(a)
    # the direct squared norm 1 - 2 mu m + mu^2 m' + ... cancels to ~1e-7 at the switch:
    # it is itself only good to ~1e-5 relative there (the series is the accurate side)
    a, b = th.ridge_norm2(g, s, lo), th.ridge_norm2(g, s, hi)
    assert abs(a - b) <= 1e-5 * abs(a)


@pytest.mark.parametrize("g", [0.1, 0.5, 2.0])
def test_ridge_series_matches_high_precision_limit(g):
    # against the first terms of the expansion in 1/mu: risk = 1 - 2/mu + O(mu^-2)
    mu = 1e9
    assert abs(th.ridge_risk(g, 0.0, mu) - (1 - 2 / mu + 3 * (1 + 1 / g) / mu**2)) < 4e-16
    assert abs(th.ridge_norm2(g, 0.0, mu) / ((1 + 1 / g) / mu**2) - 1) < 1e-7  # next term: -2 m3 / (m2 mu)


@pytest.mark.parametrize("sigma", [1e6, 1e20, 1e78, 1e150, 1e300])
def test_optimal_ridge_risk_large_sigma_tends_to_one(sigma):
    r = th.optimal_ridge_risk(0.5, sigma)
    assert abs(r - 1.0) < 1e-6


def test_optimal_ridge_risk_continuous_at_switch():
    s0 = th.OPTIMAL_RIDGE_SIGMA_ASYMPTOTIC
    for g in (0.1, 0.5, 2.0, 10.0):
        a, b = th.optimal_ridge_risk(g, s0 * (1 - 1e-12)), th.optimal_ridge_risk(g, s0 * (1 + 1e-12))
        assert abs(a - b) <= 1e-9 * abs(a)


def test_score_is_scale_invariant():
    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    y = x + rng.normal(size=50)
    a, b = stats.score(x, y, n_boot=200), stats.score(x * 1e200, y, n_boot=200)
    for k, v in vars(a).items():
        assert np.allclose(v, getattr(b, k), rtol=1e-12, atol=0), k


# ------------------------------------------------------------------ NaN

def test_cosines_and_k1_of_huge_parallel_rows():
    X = np.full((1, 3), 1e300)
    assert relu.cosines(X, X)[0, 0] == 1.0
    k = relu.arccos_kernel1(X, X)
    assert np.isfinite(k).all() or np.isinf(k).all()  # never NaN; k1 = |x|^2 / 2 = inf here
    assert not np.isnan(k).any()
    Y = np.full((1, 3), 1e150)
    assert not np.isnan(relu.arccos_kernel1(Y, Y)).any()


def test_diagonal_ptft_penalty_huge_initial_weight():
    try:
        out = penalties.diagonal_ptft_penalty(np.array([0.3, -0.2]), np.array([1e300, 1.0]),
                                              np.array([1.0, 1.0]))
    except ValueError as exc:
        assert "w1_0" in str(exc) or "w2_0" in str(exc)
    else:
        assert not np.isnan(out).any()


def test_diagonal_dual_beta_no_nan():
    out = penalties.diagonal_dual_beta(2000.0, 0, 0)
    assert not np.isnan(out).any()


@pytest.mark.parametrize("which", ["cov_sqrt", "theta_t", "beta"])
def test_excess_risk_nan_inputs_refused(which):
    args = dict(beta=np.ones(4), theta_t=np.zeros(4), cov_sqrt=np.eye(4))
    args[which] = np.full_like(args[which], np.nan)
    refused(lt.excess_risk, **args, match=which)


def test_finetune_predictor_risk_nan_cov_refused():
    X = np.random.default_rng(0).normal(size=(2, 4))
    refused(lt.finetune_predictor_risk, X, np.ones(4), np.zeros(4), np.full((4, 4), np.nan),
            match="cov_sqrt")


def test_eq3_bound_nan_basis_refused():
    refused(lt.eq3_bound, np.ones(4), np.full((4, 4), np.nan), np.ones(4), 2, 10, match="V")


def test_r_squared_large_values():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=30), rng.normal(size=30)
    r = stats.r_squared(x, y)
    for s in (1e200, 1e-200, 1e300):
        assert np.isclose(stats.r_squared(x * s, y * s), r, rtol=1e-12)
        assert np.isclose(stats.r_squared(x * s, y), r, rtol=1e-12)


def test_binary_task_nan_images_refused():
    x = np.zeros((4, 28, 28), dtype=np.float32)
    x[0, 0, 0] = np.nan
    refused(binary_task, x, np.array([0, 1, 0, 1]), 0, 1, match="x")


# ------------------------------------------------------------------ exceptions other than ValueError

@pytest.mark.parametrize("call", [
    lambda: th.scratch_risk(HUGE_INT, 0.2),
    lambda: th.ridge_risk(0.5, 0.2, HUGE_INT),
    lambda: th.finetune_risk(HUGE_INT, 1.0, 0.2),
    lambda: th.linear_transfer_risk(HUGE_INT, 1.0, 0.2),
    lambda: penalties.diagonal_dual_beta(HUGE_INT, 0, 0),
    lambda: penalties.diagonal_ptft_penalty([HUGE_INT], [1.0], [1.0]),
])
def test_huge_integers_never_overflowerror(call):
    try:
        with time_limit(10):
            out = call()
    except ValueError:
        return
    assert not np.isnan(np.asarray(out, dtype=float)).any()


def test_check_int_returns_int():
    v = _validate.check_int("n", 10.0, 1)
    assert v == 10 and type(v) is int
    v = _validate.check_int("n", np.int64(7), 1)
    assert type(v) is int


def test_check_int_refuses_int_beyond_float_range_when_a_float_is_needed():
    with pytest.raises(ValueError, match="n"):
        _validate.check_int("n", HUGE_INT, 1, maximum=_validate.MAX_INT)


def test_check_choice_takes_a_string_among_the_choices():
    """The one check of a string option (grad_dtype, readout, solver): the value back, an
    InputTypeError naming the parameter for a non-string, a ValueError listing the choices
    for another string."""
    assert _validate.check_choice("mode", "b", ("a", "b")) == "b"
    with pytest.raises(_validate.InputTypeError, match=r"^mode must be a string, one of \('a', 'b'\)"):
        _validate.check_choice("mode", 1, ("a", "b"))
    with pytest.raises(ValueError, match=r"^mode must be one of \['a', 'b'\] \(got 'c'\)"):
        _validate.check_choice("mode", "c", ["a", "b"])


@pytest.mark.parametrize("seed, exc", [(-1, ValueError), ("a", TypeError), (None, TypeError),
                                        (1.5, ValueError), (True, TypeError)])
def test_seeds_validated(seed, exc):
    refused(_validate.check_seed, "seed", seed, exc=exc, match="seed")
    refused(streams.keyed_rng, seed, 0, exc=(ValueError, TypeError), match="seed")
    refused(stats.score, [1.0, 2.0, 3.0], [1.0, 3.0, 2.0], seed=seed, exc=(ValueError, TypeError),
            match="seed")
    refused(sim.simulate_transfer, 10, 0.5, 1.0, 0.2, draws=2, seed=seed, progress=False,
            exc=(ValueError, TypeError), match="seed")


def test_seed_sequence_and_generator_accepted():
    assert _validate.check_seed("seed", np.random.SeedSequence(3), allow_generator=True) is not None
    g = np.random.default_rng(0)
    assert _validate.check_seed("seed", g, allow_generator=True) is g
    with pytest.raises(TypeError, match="seed"):
        _validate.check_seed("seed", g)


def test_mismatched_shapes_name_parameters():
    refused(penalties.diagonal_ptft_penalty, np.ones(3), np.ones(4), np.ones(3), match="w1_0")
    refused(lt.excess_risk, np.ones(3), np.ones(4), match="theta_t")
    refused(stats.score, np.ones(5), np.ones(6), match="y")
    refused(stats.r_squared, np.ones(5), np.ones(6), match="y")


def test_row_space_solution_empty_X():
    refused(lt.row_space_solution, np.zeros((0, 3)), np.zeros(0), match="X")


def test_no_message_advises_a_missing_step_scale_option():
    # the advice lives in transferkit.models (gradient descent); what simulate_transfer and
    # the CLI can reach must not send the user to an option they do not have.  With
    # alpha <= ALPHA_MAX the divergence that printed it is refused up front.
    import inspect
    src = inspect.getsource(sim) + inspect.getsource(cli)
    assert "step_scale" not in src or "step_scale" in str(inspect.signature(sim.simulate_grid))
    assert sim.ALPHA_MAX <= 10


# ------------------------------------------------------------------ CLI

def run_cli(*argv):
    """The command in process (``tests/test_cli.py`` runs the real entry points): refusals
    come before any work, so each call returns at once; ``time_limit`` fails a hang."""
    code, _, err = run_cli_in_process(argv, seconds=30)
    return code, err


def assert_one_line_error(result, *words):
    code, err = result
    assert code == 2, (code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("transferkit: error:"), lines
    for w in words:
        assert re.search(rf"(?<!\w){re.escape(w)}\b", lines[0]), (w, lines[0])


@pytest.fixture(autouse=True)
def _no_progress(monkeypatch):
    monkeypatch.setenv("TRANSFERKIT_PROGRESS", "0")


def test_cli_simulate_huge_draws():
    assert_one_line_error(run_cli("simulate", "--gamma", "0.5", "--theta", "1", "--sigma", "0.2",
                                  "--draws", "1000000000000"), "draws")


def test_cli_simulate_huge_d():
    assert_one_line_error(run_cli("simulate", "--gamma", "0.5", "--theta", "1", "--sigma", "0.2",
                                  "--d", "100000"), "d")


def test_whole_floats_are_taken_as_the_integers_they_are():
    # check_int accepts 8.0 and returns 8, but callers passed the float on and numpy refused
    # it ("'float' object cannot be interpreted as an integer") after the validation
    from transferkit.experiments import lazy_rich
    kw = dict(d=4, m=8, m_star=2, mu=0.5, n=10, draws=2, test=100, max_steps=200)
    ref = lazy_rich.monte_carlo_check(**kw)
    got = lazy_rich.monte_carlo_check(**dict(kw, d=4.0, m=8.0, m_star=np.float64(2), n=10.0,
                                             draws=2.0, test=100.0, seed=0.0))
    np.testing.assert_array_equal(got.exact, ref.exact)
    np.testing.assert_array_equal(got.sq_err, ref.sq_err)
    a = sim.simulate_transfer(10.0, 0.5, 1.0, 0.2, depth=2.0, draws=np.float64(2), seed=0.0,
                              methods=("linear",), progress=False)
    b = sim.simulate_transfer(10, 0.5, 1.0, 0.2, draws=2, methods=("linear",), progress=False)
    np.testing.assert_array_equal(a.runs["linear"].risk, b.runs["linear"].risk)


def test_integers_beyond_two_to_the_53_are_refused_by_name():
    # max_steps = 1e300 is a whole float: it passed check_int and failed inside a compiled
    # kernel (numba TypingError) after the work had started
    for value in (1e300, 2**63, 10**20):
        refused(_validate.check_int, "max_steps", value, 0, match="max_steps")
    assert _validate.check_seed("seed", 10**20) == 10**20          # seeds stay unbounded
    refused(sim.pretrain, 10, draws=2, max_steps=1e300, match="max_steps")


@pytest.mark.parametrize("depth, alpha", [(2, 5e-324), (2, 1e-151), (3, 1e-160)])
def test_initial_scales_whose_power_underflows_are_refused(depth, alpha):
    # alpha = 5e-324 ran without end on subnormal numbers (pretrain, ridge_transfer_curve,
    # the CLI); at depth 3, alpha = 1e-160 stopped with a divergence blamed on the step size
    refused(sim.pretrain, 10, depth=depth, draws=2, alpha=alpha, match="alpha")
    assert_one_line_error(run_cli("simulate", "--gamma", "0.5", "--theta", "1", "--sigma", "0.2",
                                  "--d", "4", "--draws", "2", "--depth", str(depth),
                                  "--alpha", repr(alpha)), "alpha")
    lo = sim.ALPHA_POW_MIN ** (1 / depth)
    sim.pretrain(10, depth=depth, draws=2, alpha=lo * 1.01)       # just above: runs


def _ptft_small(**kw):
    return dict(dict(d=12, rho=1.0, magnitude=1.0, ns=[8], draws=1, cache=False), **kw)


def _lazy_small(**kw):
    return dict(dict(d=4, m=8, m_star=2, mu=0.5, alphas=[0.1], ns=[10], draws=2, cache=False), **kw)


def _fig3_small(**kw):
    return dict(dict(d=4, m=10, m_star=2, mus=[0.1], ns=[10], cache=False), **kw)


@pytest.mark.parametrize("func, kwargs, name", [
    # numpy's MemoryError or "Maximum allowed dimension exceeded", or a loop over 1e12 draws
    ("lazy_rich.init_scale_sweep", _lazy_small(m=10**12), "m"),
    ("lazy_rich.init_scale_sweep", _lazy_small(ns=[10, 10**12]), "ns"),
    ("lazy_rich.init_scale_sweep", _lazy_small(draws=10**12), "draws"),
    ("lazy_rich.monte_carlo_check", dict(d=4, m=8, m_star=2, mu=0.5, n=10, test=10**12), "test"),
    ("regularisation.ridge_transfer_curve",
     dict(d=10, gamma=1e200, lams=[0.1], thetas=[1.0], sigma=0.2, draws=2), "gamma"),
    ("regularisation.weight_decay_scratch_grid", dict(d=10, gammas=[1e12], sigma=0.2, draws=2),
     "gammas"),
    ("ptft_relu.run_sample_efficiency", _ptft_small(width=10**12), "width"),
    ("ptft_relu.run_sample_efficiency", _ptft_small(n_test=10**12), "n_test"),
    ("ptft_relu.run_sample_efficiency", _ptft_small(ns=[8, 10**12]), "ns"),
    ("ptft_relu.run_sample_efficiency", _ptft_small(draws=10**12), "draws"),
    ("relu_student_teacher.fig3_experiment", _fig3_small(pretrain_steps=10**12), "pretrain_steps"),
    ("relu_student_teacher.fig3_experiment", _fig3_small(m_star=10**12), "m_star"),
    ("relu_student_teacher.fig3_experiment", _fig3_small(draws=10**12), "draws"),
    # huge scales overflowed the first losses, and the trainers blamed their step size
    ("ptft_relu.run_sample_efficiency", _ptft_small(magnitude=1e300), "magnitude"),
    ("ptft_relu.run_sample_efficiency", _ptft_small(gamma=1e300), "gamma"),
    ("ptft_relu.run_sample_efficiency", _ptft_small(alpha=1e300), "alpha"),
    ("lazy_rich.init_scale_sweep", _lazy_small(sigma=1e200), "sigma"),
    ("regularisation.ridge_transfer_curve",
     dict(d=10, gamma=0.5, lams=[0.1], thetas=[1.0], sigma=0.2, draws=2, alpha=5e-324), "alpha"),
])
def test_sizes_and_scales_beyond_the_machine_are_refused_by_name(func, kwargs, name):
    import importlib
    module, attr = func.split(".")
    f = getattr(importlib.import_module(f"transferkit.experiments.{module}"), attr)
    refused(f, **kwargs, match=rf"^{name}\b")


def test_cli_names_the_parameter_that_makes_the_request_large(tmp_path):
    # --depth 1e12 was reported as "d=60 is too large"; gamma = 1e300 as a bad n
    assert_one_line_error(run_cli("phase-diagram", "--out", str(tmp_path / "f.png"), "--method",
                                  "finetune", "--depth", "1000000000000"), "depth")
    assert_one_line_error(run_cli("theory", "linear", "--gamma", "1e300", "--theta", "1",
                                  "--sigma", "0.2", "--d", "10"), "gamma")


@pytest.mark.parametrize("sigma", ["1e150", "1e101"])
def test_cli_simulate_huge_noise(sigma, tmp_path):
    # sigma = 1e150 overflowed scratch training's loss after minutes of work and blamed the
    # step size; the simulations now refuse sigma > SIGMA_MAX before any work
    assert_one_line_error(run_cli("simulate", "--gamma", "0.5", "--theta", "1", "--sigma", sigma,
                                  "--d", "3", "--draws", "2"), "sigma")
    assert_one_line_error(run_cli("phase-diagram", "--simulate", "--sigma", sigma,
                                  "--out", str(tmp_path / "f.png")), "sigma")
    refused(sim.simulate_transfer, 3, 0.5, 1.0, float(sigma), draws=2, match="sigma")


def test_simulate_at_the_largest_noise_gives_finite_means_and_errors():
    # at SIGMA_MAX the risks are of order 1e200: their means and standard errors are finite
    # (their squared deviations overflowed in the CLI's standard error before)
    r = sim.simulate_transfer(3, 0.5, 1.0, sim.SIGMA_MAX, draws=2, methods=("linear",),
                              progress=False)
    mean, se = stats.mean_se(r.runs["linear"].risk)
    assert 1e190 < mean < 1e210 and 0 < se < np.inf


def test_cli_phase_diagram_huge_grid(tmp_path):
    assert_one_line_error(run_cli("phase-diagram", "--simulate", "--gammas", "0.5:1:1000000000",
                                  "--out", str(tmp_path / "f.png")), "gammas")


def test_cli_integer_not_parsed_through_float():
    assert_one_line_error(run_cli("theory", "scratch", "--gamma", "0.5", "--sigma", "0.2",
                                  "--d", "99999999999999999999999"), "d")
    assert cli._int("12345678901234567") == 12345678901234567


@pytest.mark.parametrize("kind", ["file", "unwritable"])
def test_cli_bad_cache_reported_before_work(tmp_path, monkeypatch, kind):
    if kind == "file":
        bad = tmp_path / "afile"
        bad.write_text("x")
        bad = bad / "sub"
    else:
        if os.geteuid() == 0:
            pytest.skip("root can write anywhere")
        bad = tmp_path / "ro"
        bad.mkdir()
        bad.chmod(0o500)
    monkeypatch.setenv("TRANSFERKIT_CACHE", str(bad))
    assert_one_line_error(run_cli("phase-diagram", "--simulate", "--d", "4", "--draws", "2",
                                  "--gammas", "0.5", "--thetas", "0",
                                  "--out", str(tmp_path / "f.png")),
                          "TRANSFERKIT_CACHE", "--no-cache")
    assert not (tmp_path / "f.png").exists()


# ------------------------------------------------------------------ the former KNOWN_LIMITS
# (tests/test_contract.py): one case each; the validation sits in front of the computation.

from transferkit.theory import distances  # noqa: E402


@pytest.mark.parametrize("call, match", [
    (lambda: stats.agreement(np.ones((2, 3)), [1.0, 2.0, 3.0]), "theory"),
    (lambda: stats.agreement(np.ones((2, 3)), HUGE_INT), "theory"),
    (lambda: stats.agreement(np.ones((2, 3)), 1.0, mask="a"), "mask"),
    (lambda: stats.alignment_score(np.ones(3), np.ones((2, 3))), "centres"),
    (lambda: stats.alignment_score(np.ones((2, 3)), [[HUGE_INT, 0, 0]]), "teacher_dirs"),
    (lambda: stats.kernel_distance("a", np.eye(2)), "A"),
    (lambda: stats.kernel_distance(np.eye(2), np.zeros((2, 2))), "B"),
    (lambda: stats.kmeans_inertia(np.ones((3, 2)), np.ones(3), 2, restarts=10**30), "restarts"),
    (lambda: stats.kmeans_inertia(np.ones(3), np.ones(3), 2), "W"),
    (lambda: stats.participation_ratio([[HUGE_INT, 0], [0, 1]]), "X"),
    (lambda: stats.risk_error_bound([1.0, math.nan], 0.1), "risk"),
    (lambda: stats.risk_error_bound(np.ones(2), np.ones(3)), "risk, dist"),
    (lambda: stats.spearman(np.ones(3), np.ones(4)), "x, y"),
    (lambda: stats.spearman(1.0, [1.0, 2.0]), "x"),
    (lambda: th.finetune_risk_deep(0.5, np.zeros(2), np.ones(3), 2), "theta, sigma"),
    (lambda: th.finetune_transferability_deep(np.full(2, 0.5), np.zeros(3), 0.1, 2), "gamma, theta"),
    (lambda: distances.gaussian_w2(np.ones(3), np.eye(3)), "S1"),
    (lambda: distances.gaussian_w2(np.eye(2), [[1.0, 2.0], [0.0, 1.0]]), "S2"),
    (lambda: distances.gaussian_w2(np.eye(2), 1e300 * np.eye(2)), "S2"),
    (lambda: distances.joint_covariance([HUGE_INT], 0.1, np.ones((1, 1))), "beta"),
    (lambda: distances.joint_covariance(np.ones(2), 0.1, "Q"), "Q"),
    (lambda: distances.kl_linear(np.zeros(2), np.ones(3)), "theta, sigma"),
    (lambda: distances.kl_linear(HUGE_INT, 1.0), "theta"),
    (lambda: distances.kl_linear(0.0, 1.0, norm_s=1e300, norm_t=1e300), "norm_s"),
    (lambda: lt.deep_finetune_scale(np.ones(2), np.ones(3), 1.0, 2), "perp_norm, par_norm"),
    (lambda: lt.deep_finetune_scale(HUGE_INT, 1.0, 1.0, 2), "perp_norm"),
    (lambda: lt.deep_finetune_scale(0.5, 0.5, 1.0, HUGE_INT), "depth"),
    (lambda: penalties.diagonal_ptft_penalty(np.ones((2, 3)), 1.0, 1.0, axis=5), "axis"),
    (lambda: penalties.relu_ptft_u_star(np.ones(2), 0.5, np.ones(3), 1.0), "m, rho, m0, gamma"),
    (lambda: penalties.relu_ptft_penalty(np.ones(2), 0.5, np.ones(3), 1.0), "m, rho"),
    (lambda: penalties.relu_ptft_dlog_penalty(np.ones(2), np.zeros(3), 1.0, 1.0), "m, rho"),
])
def test_former_known_limits_refused_with_the_parameter(call, match):
    refused(call, match=match)


def test_scale_invariant_statistics_rescale_exactly_near_the_float_range():
    rng = np.random.default_rng(0)
    X, A, B = rng.normal(size=(6, 3)), rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    W, a, T = rng.normal(size=(5, 3)), rng.normal(size=5), rng.normal(size=(2, 3))
    big = 2.0 ** 1000  # a power of two: the exact answer is the unscaled one
    assert stats.participation_ratio(X * big) == stats.participation_ratio(X)
    assert stats.ensd(X * big, X) == stats.ensd(X, X)
    assert stats.kernel_distance(A * big, B * big) == stats.kernel_distance(A, B)
    assert stats.kernel_distance(A / big, B / big) == stats.kernel_distance(A, B)
    r0, c0 = stats.kmeans_inertia(W, a, 2, seed=1)
    r1, c1 = stats.kmeans_inertia(W * big, a / big, 2, seed=1)
    assert r1 == r0 and np.array_equal(c1, c0)
    assert stats.alignment_score(c0 * big, T / big) == stats.alignment_score(c0, T)
    assert math.isfinite(stats.participation_ratio(np.full((3, 2), 1e308) * [[1], [-1], [1]]))


def test_kl_is_zero_not_nan_where_sigma_squared_underflows():
    assert distances.kl_linear(0.0, 1e-200) == 0.0
    assert distances.kl_divergence([1.0, 2.0], [1.0, 2.0], 1e-200) == 0.0
    assert distances.kl_linear(1.0, 1e-200) == math.inf


# ------------------------------------------------------------------ explore-mode breaches
# (TRANSFERKIT_HYPOTHESIS=explore of tests/test_contract.py): one case each, and each
# asymptotic branch against its limit and continuous at its switch.

def test_ridge_risk_tiny_gamma_is_the_zero_predictor():
    # gamma -> 0: no data, beta_hat -> 0, risk -> ||beta_t||^2 = 1 (was "produced NaN")
    for mu in (5e-324, 1e-308, 1.0, 1e154, 1e300):
        assert th.ridge_risk(1e-308, 0.0, mu) == pytest.approx(1.0, rel=1e-15)
        assert th.ridge_risk(5e-324, 0.3, mu) == pytest.approx(1.0, rel=1e-15)
        assert 0.0 <= th.ridge_norm2(1e-308, 0.0, mu) <= 1e-300
    assert math.isfinite(th.mp_stieltjes(5e-324, 1.0))


@pytest.mark.parametrize("mu", [0.5, 1.0, 3.0])
def test_ridge_huge_gamma_tends_to_the_shrunk_teacher(mu):
    # gamma -> inf: the spectrum is delta_1, beta_hat -> beta_t / (1 + mu)
    assert th.ridge_risk(1e300, 0.0, mu) == pytest.approx(mu**2 / (1 + mu) ** 2, rel=1e-14)
    assert th.ridge_norm2(1e300, 0.0, mu) == pytest.approx(1 / (1 + mu) ** 2, rel=1e-14)
    # the variance sigma^2 psi / (1 + mu)^2 although sigma^2 overflows
    assert th.ridge_risk(1e300, 1e200, mu) == pytest.approx(1e100 / (1 + mu) ** 2, rel=1e-12)


def test_ridge_at_gamma_one_and_tiny_mu_follows_its_limit():
    # psi = 1: m ~ mu^(-1/2), variance sigma^2 / (2 sqrt(mu)), bias sqrt(mu) / 2
    mu = 1e-300
    assert th.ridge_risk(1.0, 1.0, mu) == pytest.approx(1 / (2 * math.sqrt(mu)), rel=1e-12)
    assert th.ridge_risk(1.0, 0.0, mu) == pytest.approx(math.sqrt(mu) / 2, rel=1e-12)
    assert th.ridge_norm2(1.0, 0.0, 5e-324) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("g, s, mu", [(th.RIDGE_GAMMA_RANGE[0], 0.3, 0.7),
                                      (th.RIDGE_GAMMA_RANGE[1], 0.3, 0.7),
                                      (0.5, 0.3, th.RIDGE_MU_MIN), (1.0, 0.3, th.RIDGE_MU_MIN),
                                      (0.5, th.RIDGE_SIGMA_MAX, 2.0),
                                      (2.0, th.RIDGE_SIGMA_MAX, 2.0)])
def test_ridge_tails_continuous_at_their_switch(g, s, mu):
    # one side the direct forms, the other the cancellation-free ones
    def nudged(which, f):
        args = [g, s, mu]
        return [th.ridge_risk(*args[:which], args[which] * f, *args[which + 1:]),
                th.ridge_norm2(*args[:which], args[which] * f, *args[which + 1:])]
    which = 0 if s == 0.3 and mu == 0.7 else (2 if mu == th.RIDGE_MU_MIN else 1)
    for a, b in zip(nudged(which, 1 - 1e-15), nudged(which, 1 + 1e-15)):
        assert a == pytest.approx(b, rel=1e-9)


@pytest.mark.parametrize("g, s, wd", [(1e-300, 1e100, 1.0), (1e300, 1.0, 0.5), (1e-5, 1e120, 1e3),
                                      (0.5, 1e120, 1.0), (1e-300, 0.0, 1e-50)])
def test_weight_decay_extremes_solve_their_equation(g, s, wd):
    # mu ||beta_mu|| = wd (was NaN: 1/gamma, sigma^2 or the bisection bracket overflowed)
    mu = th.weight_decay_ridge_parameter(g, s, wd)
    assert 0 < mu < math.inf
    assert mu * math.sqrt(th.ridge_norm2(g, s, mu)) == pytest.approx(wd, rel=1e-9)
    assert th.weight_decay_scratch_risk(g, s, wd) == th.ridge_risk(g, s, mu)
    for s_huge in (1e154, 1e300):  # no NaN where sigma^2 / gamma overflows
        assert not math.isnan(th.weight_decay_scratch_risk(g, s_huge, wd))


@pytest.mark.parametrize("lam", [1e100, 1e150, 1e150 * (1 + 1e-15), 1e200, 1e308])
def test_ridge_linear_transfer_risk_huge_lambda_tends_to_one(lam):
    # (1 + 2 lam) / (1 + lam)^2 -> 2 / lam: the risk tends to ||beta_t||^2 (was inf / inf)
    for theta in (0.0, 1.0, math.pi):
        assert th.ridge_linear_transfer_risk(lam, theta) == 1.0
    assert th.ridge_linear_transfer_risk(1e10, 0.0) == pytest.approx(1 - 2e-10, rel=1e-15)


def test_risks_whose_sigma_squared_overflows_stay_finite():
    # sigma^2 / n is in range although sigma^2 is not
    assert th.scratch_risk(5e-324, 1e308) == pytest.approx(5e-324 * 1e308 * 1e308, rel=1e-12)
    assert th.scratch_risk(1e300, 1e200) == pytest.approx(1e100, rel=1e-12)
    n = 2**53
    expect = 1 + 1e160 * (1e160 / (n - 2)) + 1 / (n - 2)
    assert th.linear_transfer_risk(n, math.pi / 2, 1e160) == pytest.approx(expect, rel=1e-12)
    assert math.isfinite(th.linear_transfer_risk_std(n, 1.0, 1e160))


def test_deep_scales_beyond_the_float_range_of_their_squares():
    # k^(2L/(L-1)) = (1 - g) k^2 + g + sigma^2 g / (1 - g): k ~ sigma^(1/2) for L = 2
    assert th.finetune_depth_scale(0.5, 1e200, 2) == pytest.approx(1e100, rel=1e-12)
    # Eq. 6 (depth inf) at gamma -> 0: k^2 = 1 + sigma^2 / (1 - gamma), not 1 / 0
    assert th.finetune_depth_scale(1e-300, 0.0, math.inf) == 1.0
    assert th.finetune_depth_scale(1e-300, 3.0, math.inf) == pytest.approx(math.sqrt(10.0), rel=1e-15)
    assert th.finetune_transferability_deep(5e-324, 0.0, 1e308, math.inf) == -math.inf
    assert lt.deep_finetune_scale(0.3, 1e200, 1.0, 2) == pytest.approx(1e100, rel=1e-12)
    assert lt.deep_finetune_scale(0.3, 1e308, 1e-300, 2) == pytest.approx(1e304, rel=1e-12)


def test_kl_divergence_of_huge_or_tiny_scales():
    assert distances.kl_divergence([0.0, 0.0], [1.34078079e154, 0.0], 9.48075191e153) == \
        pytest.approx(0.5 * (1.34078079e154 / 9.48075191e153) ** 2, rel=1e-14)
    assert distances.kl_divergence([1e308], [-1e308], 1e308) == pytest.approx(2.0, rel=1e-15)
    assert distances.kl_divergence([1e-100], [0.0], 1e-200) == pytest.approx(5e199, rel=1e-15)
    refused(distances.kl_divergence, [HUGE_INT], [0.0], 1.0, match="beta_s")


@pytest.mark.parametrize("call, match", [
    (lambda: distances.reduce_to_span(np.zeros((1, 1)), np.zeros((1, 1))), "beta_s and beta_t"),
    (lambda: distances.reduce_to_span([HUGE_INT], [1.0]), "beta_s"),
    (lambda: distances.w1_bounds_linear([0.0], np.zeros((0, 1)), 0.0), "beta_s and beta_t"),
    (lambda: distances.w1_bounds_linear(np.zeros((0, 0, 1)), np.zeros((0, 0, 1)), 0.0),
     "beta_s and beta_t"),
    (lambda: distances.wasserstein1(HUGE_INT, [1.0]), r"\ba\b"),
    (lambda: distances.wasserstein1([1.0], [1e300]), r"\bb\b"),
    (lambda: distances.wasserstein1_linear([1.0], [0.0], 0.1, seed=math.inf), "seed"),
    (lambda: distances.wasserstein1_linear([1.0], [0.0], 0.1, n=10**7), r"\bn\b"),
    (lambda: distances.wasserstein1_linear([1.0], [0.0], 0.1, reduce="yes"), "reduce"),
    (lambda: distances.kl_monte_carlo([HUGE_INT], [0.0], 1.0), "beta_s"),
    (lambda: distances.kl_monte_carlo([1.0], [0.0], 1.0, n=1), r"\bn\b"),
    (lambda: distances.kl_monte_carlo([1.0], [0.0], 1.0, seed=-1), "seed"),
    (lambda: relu.safe_arccos(HUGE_INT), r"\bc\b"),
    (lambda: lt.null_space_projection(np.array([[1.34078079e154], [0.0]]), np.zeros(1)), r"\bX\b"),
    (lambda: lt.null_space_projection(np.array([[0.0, 0, 0, 0], [1.3e154, 0, 0, 0],
                                                [0, 0, 0, 0]]), np.zeros(4)), r"\bX\b"),
])
def test_explore_breaches_refused_with_the_parameter(call, match):
    refused(call, match=match)


def test_kl_monte_carlo_tiny_sigma_is_inf_not_nan():
    assert distances.kl_monte_carlo([1.0], [0.0], 1e-200, n=100) == (math.inf, math.inf)
    assert distances.kl_monte_carlo([1.0], [1.0], 1e-200, n=100) == (0.0, 0.0)


def test_linear_teachers_extremes_without_nan():
    X = np.array([[1e100, 0.0, 0.0]])
    out = lt.frozen_predictor(X, [1e100], [1e100, 1.0, 1.0])   # |X theta_s|^2 = 1e400
    np.testing.assert_allclose(out, [1.0, 1e-100, 1e-100], rtol=1e-15)
    # Eq. 6 with theta_s in the null space of X: k = inf on its coordinates, X^+ y elsewhere
    out = lt.deep_finetune_predictor(np.array([[1.0, 0.0]]), [2.0], [0.0, 1.0], math.inf)
    assert not np.isnan(out).any() and out[0] == 2.0 and out[1] == math.inf
    assert lt.bartlett_bound(np.zeros(2), [1e308, 1e308], 1, 1e308) == 0.0
    assert not np.isnan(lt.eq3_bound(np.array([1.0, 0.0]), np.eye(2), [1e300, 1e-300], 1, 1,
                                     delta=1e300)).any()


def test_relu_ptft_zero_magnitude_with_a_subnormal_root_scale():
    # m = 0 and m0 rho = -5e-324: gamma / s overflowed into inf * 0 in the companion matrix
    u, n_min = penalties.relu_ptft_u_star([0.0], -1.0, 5e-324, [1.0])
    assert u.tolist() == [0.0] and n_min.tolist() == [1]
    assert penalties.relu_ptft_penalty(0.0, 5e-324, 1.0, 1.0) == 2.0
    assert penalties.relu_ptft_dlog_penalty(0.0, -1.0, 5e-324, -1.0) == 0.0


@pytest.mark.parametrize("value, exc", [(True, TypeError), ("a", TypeError), (None, TypeError),
                                        (1j, TypeError), (np.array([True]), TypeError),
                                        (HUGE_INT, ValueError), ([1.0, [2.0]], ValueError),
                                        (2.5, ValueError), (-1, ValueError), (math.nan, ValueError)])
def test_check_values_names_the_parameter_and_range(value, exc):
    refused(_validate.check_values, "n", value, 1, _validate.MAX_INT, integer=True, exc=exc,
            match=r"^n must be an integer in \[1, 2\*\*53\]")
    assert _validate.check_values("theta", [0.0, math.pi], 0.0, math.pi).tolist() == [0.0, math.pi]
    with pytest.raises(ValueError, match=r"^theta must be in \[0, pi\] \(got 4\.0\)$"):
        _validate.check_values("theta", 4.0, 0.0, math.pi)
    with pytest.raises(ValueError, match=r"^gamma must be a finite number > 0 \(got 0\.0\)$"):
        _validate.check_values("gamma", [1.0, 0.0], 0.0, lo_open=True)


def test_one_validator_issue_14():
    # the local copies of _validate are gone: deep_linear's rule table, penalties._array and
    # relu.check_rows (now _validate.check_rows, the row rule shared with models.relu)
    assert not hasattr(th, "_RULES") and not hasattr(th, "_validate")
    assert not hasattr(penalties, "_array")
    assert "check_rows" not in relu.__all__
    assert models_relu.check_rows is _validate.check_rows
    with pytest.raises(TypeError, match="^gamma must be"):
        th.scratch_risk("abc", 0.1)
    with pytest.raises(TypeError, match="^rho must be"):
        penalties.relu_ptft_penalty(1.0, True, 1.0, 0.0)


@pytest.mark.parametrize("bad", [0, 1, 1.0, "yes", None, np.array([True])])
def test_one_bool_check(bad):
    """Every switch of the package goes through _validate.check_bool: a bool (Python's or
    numpy's) passes as a bool, anything else is an InputTypeError (a TypeError and a
    ValueError) naming the parameter."""
    assert _validate.check_bool("x", np.bool_(True)) is True
    assert _validate.check_bool("x", False) is False
    with pytest.raises(_validate.InputTypeError, match=r"^x must be a bool, True or False \(got "):
        _validate.check_bool("x", bad)
    with pytest.raises(_validate.InputTypeError, match=r"^reduce must be a bool, True or False"):
        distances.wasserstein1_linear(np.ones(3), np.zeros(3), 0.5, reduce=bad)


@pytest.mark.parametrize("bad", ["0.5", None, True, np.bool_(False), 1j, [0.5]])
def test_check_real_refuses_what_is_not_a_real_number(bad):
    """The type test every scalar check shares: an InputTypeError (a TypeError and a
    ValueError) naming the parameter and what it must be."""
    with pytest.raises(_validate.InputTypeError, match=r"^lr must be a number > 0 \(got "):
        _validate.check_real("lr", bad, "a number > 0")


@pytest.mark.parametrize("good", [0.5, 3, np.float32(2.0), np.int64(-1), float("nan")])
def test_check_real_passes_real_numbers_to_the_range_test(good):
    assert _validate.check_real("lr", good) is None


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.5, 2.0, float("nan"), "0.5", True])
def test_check_open_unit_is_the_one_test_of_a_number_in_0_1(bad):
    """stats' levels and error rates and deep-linear's rcond share one test: a number in the
    open interval (0, 1), else an error naming the parameter and the interval (a type
    error for what is not a number)."""
    err = _validate.InputTypeError if isinstance(bad, (str, bool)) else ValueError
    with pytest.raises(err, match=r"^rcond must be (a number )?in \(0, 1\)"):
        _validate.check_open_unit("rcond", bad)
    assert _validate.check_open_unit("rcond", np.float32(0.25)) == 0.25
    for call in (lambda: sim._check_training(bad, 1e-6),
                 lambda: models_deep_linear.feature_subspace(np.ones((1, 1, 2, 2)), rcond=bad)):
        with pytest.raises(err, match=r"^rcond must be (a number )?in \(0, 1\)"):
            call()
