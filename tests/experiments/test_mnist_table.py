"""The MNIST chapter (paper 001, Sec. 4.2, Table 1): presets, and the fit of the teachers."""
from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest
from _helpers import check_presets, trained_again

from transferkit.experiments.mnist_table import (
    DEFAULT_FIT,
    FIT_SENSITIVITY,
    N_TASK_PAIRS,
    R2,
    TABLE1,
    FitSensitivityResult,
    Table1Preset,
    draw_task_pairs,
    fit_label,
    fit_sensitivity_sim,
    fit_teacher,
    gd_teacher_starts,
    mnist_table_sim,
    parse_fit,
    r2_difference,
    r2_ordering,
    task_teacher,
)


def test_presets_are_frozen_tuples():
    check_presets(TABLE1, Table1Preset, ("ns", "other_c"), "pairs")


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_preset_is_valid(scale):
    p = TABLE1[scale]
    pairs = draw_task_pairs(p.pairs, p.seed)
    assert pairs.shape == (p.pairs, 4) and p.pairs <= N_TASK_PAIRS
    assert all(len(set(row)) == 4 for row in pairs.tolist())   # four distinct digits
    assert p.pairs >= 3                    # an R^2 across pairs needs more than two points
    assert all(isinstance(n, int) and n >= 1 for n in p.ns) and list(p.ns) == sorted(p.ns)
    assert p.draws >= 2 and p.reps >= 2    # standard deviations over draws and repetitions
    assert p.m >= 1 and p.delta >= 1       # Thm 4.2: 1 <= m <= d, delta >= 1
    assert p.c > 0 and all(c > 0 and c != p.c for c in p.other_c)
    assert 0 < p.rcond < 1 and p.seed >= 0
    assert 1 <= p.gd_n and 1 <= p.gd_draws and 0 < p.gd_loss_tol < 1 and p.gd_max_steps >= 1
    # the notebook passes these keywords to mnist_table_sim
    assert {"m", "delta", "c", "rcond", "other_c", "seed"} <= set(
        inspect.signature(mnist_table_sim).parameters)


def test_paper_preset_is_table_1():
    p = TABLE1["paper"]
    # paper 001, Table 1 and its caption: "a mean over 10 calculations of R^2 ..., each R^2
    # is calculated from 20 points, each one representing a mean accuracy value of 25 random
    # samples"; columns n = 10, 15, 20, 25, 30; "Ours for m = 2"
    assert (p.pairs, p.draws, p.reps) == (20, 25, 10)
    assert p.ns == (10, 15, 20, 25, 30)
    assert p.m == 2
    # ours (the paper leaves them open): delta, c, the teachers' cutoff, the seed
    assert (p.delta, p.c, p.rcond, p.seed) == (1.0, 3.0, 1e-6, 0)
    assert np.array_equal(TABLE1["smoke"].ns, (10, 20, 30))


# ---------------------------------------------------------------------------------------
# the fit of the teachers (issue 17)
# ---------------------------------------------------------------------------------------

def _problem(N=60, d=8, seed=0, rank=None):
    """A least-squares problem X (N, d), y (N,), rank ``rank`` (full by default)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, d))
    if rank is not None:
        X = X @ np.diag((np.arange(d) < rank).astype(float))
    return X, rng.choice([-1.0, 1.0], N)


def test_eig_fit_is_the_chapters_teacher_bit_for_bit():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(10, 30, 6))
    G = np.swapaxes(A, 1, 2) @ A
    s = rng.normal(size=(10, 6))
    cnt = np.full(10, 30.0)
    for a, b in ((2, 3), (7, 1)):
        assert np.array_equal(fit_teacher(G[a] + G[b], s[a] - s[b], 60, DEFAULT_FIT),
                              task_teacher(G, s, a, b))
    assert parse_fit(DEFAULT_FIT) == ("eig", TABLE1["paper"].rcond)
    assert cnt.sum() > 0


def test_min_norm_ridge_limit_and_cutoff_on_a_full_rank_problem():
    X, y = _problem()
    G, s, N = X.T @ X, X.T @ y, len(y)
    ls = np.linalg.lstsq(X, y, rcond=None)[0]            # unique: full column rank
    np.testing.assert_allclose(fit_teacher(G, s, N, "pinv"), ls, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fit_teacher(G, s, N, "eig:1e-12"), ls, rtol=1e-10, atol=1e-12)
    # ridge: (G + N lam I)^{-1} s, tending to the least-squares solution as lam -> 0
    for lam in (1.0, 1e-2):
        np.testing.assert_allclose(fit_teacher(G, s, N, f"ridge:{lam}"),
                                   np.linalg.solve(G + N * lam * np.eye(len(s)), s), rtol=1e-10)
    gaps = [np.linalg.norm(fit_teacher(G, s, N, f"ridge:{lam}") - ls) for lam in (1e-2, 1e-4, 1e-6)]
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-5 * np.linalg.norm(ls)


def test_cutoff_keeps_exactly_the_eigenvalues_above_it():
    # G = diag(1, 1e-3, 1e-7, 0): theta_i = s_i / lambda_i where lambda_i > r * lambda_1
    G, s = np.diag([1.0, 1e-3, 1e-7, 0.0]), np.array([1.0, 1.0, 1.0, 0.0])
    np.testing.assert_allclose(fit_teacher(G, s, 1, "eig:1e-06"), [1, 1e3, 0, 0], rtol=1e-12)
    np.testing.assert_allclose(fit_teacher(G, s, 1, "eig:1e-02"), [1, 0, 0, 0], rtol=1e-12)
    np.testing.assert_allclose(fit_teacher(G, s, 1, "pinv"), [1, 1e3, 1e7, 0], rtol=1e-12)
    np.testing.assert_allclose(fit_teacher(G, s, 4, "ridge:0.5"), s / (np.diag(G) + 2.0),
                               rtol=1e-12)


def test_gd_fit_is_gradient_descent_in_closed_form():
    X, y = _problem(N=40, d=6, rank=4)                    # a null space of dimension 2
    G, s, N = X.T @ X, X.T @ y, len(y)
    theta0 = np.random.default_rng(3).normal(size=(2, 6))
    eta = N / np.linalg.eigvalsh(G)[-1]
    th = theta0.copy()
    for _ in range(37):
        th = th - eta * (th @ G - s) / N                 # full-batch GD on (1/2N)||X th - y||^2
    np.testing.assert_allclose(fit_teacher(G, s, N, "gd:37", theta0), th, rtol=1e-10, atol=1e-12)
    # long runs: the minimum-norm solution plus the start's null-space component (Thm 4.1)
    long = fit_teacher(G, s, N, "gd:1000000", theta0)
    P0 = np.diag((np.arange(6) >= 4).astype(float))      # projector on the null space
    np.testing.assert_allclose(long, fit_teacher(G, s, N, "pinv") + theta0 @ P0, atol=1e-8)


@pytest.mark.parametrize("fit", ["eig", "eig:0", "eig:1", "eig:x", "ridge:0", "ridge:-1",
                                 "ridge:inf", "pinv:1", "gd:0", "gd:2.5", "sgd:10", "", 1e-6, None])
def test_bad_fit_raises_naming_fit(fit):
    with pytest.raises(ValueError, match="fit must be"):
        parse_fit(fit)


def test_bad_teacher_input_raises_naming_the_parameter():
    X, y = _problem()
    G, s = X.T @ X, X.T @ y
    with pytest.raises(ValueError, match="count"):
        fit_teacher(G, s, 0)
    with pytest.raises(ValueError, match="gram"):
        fit_teacher(G[:3], s, 10)
    with pytest.raises(ValueError, match="gram"):
        fit_teacher(np.full_like(G, np.nan), s, 10)
    with pytest.raises(ValueError, match="moment"):
        fit_teacher(G, s[:3], 10)
    with pytest.raises(ValueError, match="theta0"):
        fit_teacher(G, s, 10, "gd:10")
    with pytest.raises(ValueError, match="theta0"):
        fit_teacher(G, s, 10, "ridge:1", theta0=np.zeros(len(s)))
    with pytest.raises(ValueError, match="theta0"):
        fit_teacher(G, s, 10, "gd:10", theta0=np.zeros(3))
    with pytest.raises(ValueError, match="reps"):
        gd_teacher_starts(1, 2, 0, 5)
    with pytest.raises(ValueError, match="fits"):
        fit_sensitivity_sim(*_digits(), [], np.array([[0, 1, 2, 3]]), [5], 2, 2)


def test_sensitivity_presets():
    assert set(FIT_SENSITIVITY) == {"paper", "smoke"}
    p, t = FIT_SENSITIVITY["paper"], TABLE1["paper"]
    # the protocol of Table 1 for every fit (paper 001, caption of Table 1)
    assert (p.pairs, p.ns, p.draws, p.reps) == (t.pairs, t.ns, t.draws, t.reps)
    assert p.fits[0] == "pinv" and DEFAULT_FIT in p.fits
    assert {f"eig:1e-{e:02d}" for e in range(3, 13)} <= set(p.fits)
    assert {"ridge:0.0001", "ridge:1"} <= set(p.fits) and any(f.startswith("gd:") for f in p.fits)
    assert len(set(p.pair_seeds)) >= 2                   # a second set of pairs at paper scale
    for q in FIT_SENSITIVITY.values():
        assert DEFAULT_FIT in q.fits and q.pair_seeds[0] == TABLE1["paper"].seed
        assert [parse_fit(f) for f in q.fits]            # every fit parses


def _digits(N=400, d=20, seed=0):
    """A synthetic ten-class data set shaped like MNIST (fast): x_train, y_train, x_test, y_test."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(0, 1, (10, d))
    y, yt = np.arange(N) % 10, np.arange(N // 2) % 10
    x = np.clip(means[y] + 0.3 * rng.normal(size=(N, d)), 0, 1)
    xt = np.clip(means[yt] + 0.3 * rng.normal(size=(N // 2, d)), 0, 1)
    return x, y, xt, yt


SMALL = {"ns": [4, 6], "draws": 3, "reps": 2, "seed": 5}


def test_sensitivity_same_seed_same_numbers_and_default_fit_is_table1(cache):
    data, pairs = _digits(), draw_task_pairs(4, 5)
    fits = ("pinv", DEFAULT_FIT, "ridge:0.01", "gd:50")
    r1 = fit_sensitivity_sim(*data, fits, pairs, cache=False, **SMALL)
    r2 = fit_sensitivity_sim(*data, fits, pairs, cache=False, **SMALL)
    assert isinstance(r1, FitSensitivityResult) and r1.fits == fits
    assert r1.errors.shape == (4, 2, 2, 4) and r1.r2["eq3"].mean.shape == (4, 2)
    _same(r1, r2)
    # the default fit gives the numbers of mnist_table_sim (same target samples, same teachers)
    t1 = mnist_table_sim(*data, pairs, cache=False, **SMALL)
    assert np.array_equal(r1.errors[1], t1.errors)
    for name in ("dist", "bartlett", "eq3"):
        np.testing.assert_array_equal(r1.measures[name][1], np.broadcast_to(t1.measures[name], (2, 2, 4)))
        np.testing.assert_array_equal(r1.r2[name].mean[1], t1.r2[name].mean)
    # the GD teachers differ between repetitions (one random start each), the others do not
    assert not np.array_equal(r1.theta_norms[3, 0], r1.theta_norms[3, 1])
    assert np.array_equal(r1.theta_norms[2, 0], r1.theta_norms[2, 1])


def test_sensitivity_sweep_cache_returns_the_same_result(cache, monkeypatch):
    data, pairs = _digits(), draw_task_pairs(3, 6)
    fits = (DEFAULT_FIT, "gd:20")
    first = fit_sensitivity_sim(*data, fits, pairs, directory=cache, **SMALL)
    monkeypatch.setattr("transferkit.experiments.mnist_table.finetune_test_errors", trained_again)
    again = fit_sensitivity_sim(*data, fits, pairs, directory=cache, **SMALL)
    _same(first, again)


def _same(a, b):
    """Bitwise equality of two FitSensitivityResult (dict fields key by key)."""
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, dict):
            assert x.keys() == y.keys()
            for k in x:
                if isinstance(x[k], R2):
                    assert np.array_equal(x[k].mean, y[k].mean) and np.array_equal(x[k].sd, y[k].sd)
                else:
                    assert np.array_equal(x[k], y[k]), (f.name, k)
        elif isinstance(x, np.ndarray):
            assert np.array_equal(x, y), f.name
        else:
            assert x == y, f.name


def test_fit_labels():
    assert [fit_label(f) for f in ("pinv", DEFAULT_FIT, "ridge:0.001", "gd:100")] == [
        "min-norm", "cutoff 1e-06", "ridge 0.001", "GD 100 ep."]


def _r2_result(means, sds, reps=4):
    """A FitSensitivityResult holding only R^2: means/sds dict name -> (fits, ns)."""
    F, N = np.shape(means["eq3"])
    return FitSensitivityResult(fits=tuple(f"eig:1e-0{i + 1}" for i in range(F)),
                                pairs=np.zeros((3, 4), int), pair_seed=0, ns=np.arange(N) + 5,
                                errors=np.zeros((F, reps, N, 3)), measures={},
                                r2={k: R2(np.asarray(means[k], float), np.asarray(sds[k], float))
                                    for k in means}, theta_norms=np.zeros((F, reps, 3, 2)))


def test_r2_difference_and_ordering():
    # fit 0: 0.8 > 0.5 > 0.2 (holds); fit 1: Bartlett far above Eq. 3 (fails); fit 2: ties (n.s.)
    means = {"eq3": [[0.8, 0.8], [0.2, 0.2], [0.5, 0.5]],
             "bartlett": [[0.5, 0.5], [0.6, 0.6], [0.5, 0.5]],
             "dist": [[0.2, 0.2], [0.1, 0.1], [0.5, 0.5]]}
    sds = {k: np.full((3, 2), 0.02) for k in means}
    res = _r2_result(means, sds)
    d, se = r2_difference(res, "eq3", "bartlett")
    np.testing.assert_allclose(d[0], 0.3)
    np.testing.assert_allclose(se, np.sqrt(2 * 0.02 ** 2) / np.sqrt(4))   # reps = 4
    assert list(r2_ordering(res, 3.0)) == ["holds", "fails", "n.s."]
    # a larger critical value can only turn a verdict into "n.s."
    assert list(r2_ordering(res, 1e3)) == ["n.s.", "n.s.", "n.s."]
    with pytest.raises(ValueError, match="crit"):
        r2_ordering(res, 0)
    with pytest.raises(ValueError, match="hi"):
        r2_difference(res, "eq2", "dist")


def test_sample_indices_refuses_more_rows_than_the_pool():
    """numpy's "Cannot take a larger sample than population" escaped before."""
    from transferkit.experiments.mnist_table import sample_indices
    assert sample_indices(5, 5, 2, 0).shape == (2, 5)
    with pytest.raises(ValueError, match=r"^n must be an integer >= 1 and <= 5"):
        sample_indices(5, 10, 2, 0)
    with pytest.raises(ValueError, match=r"^count must be an integer >= 1"):
        sample_indices(5, 2, 0, 0)


def test_finetune_errors_from_several_starts_are_each_starts_own():
    """``finetune_test_errors``: one draw of the target samples and one factorisation of
    X X^T for every initialisation, each start's errors those of its own
    ``finetune_test_error`` call (bit for bit), a start per draw included."""
    from transferkit.experiments.mnist_table import finetune_test_error, finetune_test_errors
    rng = np.random.default_rng(3)
    x_pool, x_test = rng.standard_normal((40, 12)), rng.standard_normal((30, 12))
    w = rng.standard_normal(12)
    t_pool, t_test = np.sign(x_pool @ w), np.sign(x_test @ w)
    shape = (2, 3)
    starts = [rng.standard_normal(12), np.zeros(12), rng.standard_normal((6, 12))]
    got = finetune_test_errors(x_pool, t_pool, starts, x_test, t_test, 5, shape, seed=4)
    assert got.shape == (3,) + shape
    for g, th in zip(got, starts):
        np.testing.assert_array_equal(g, finetune_test_error(x_pool, t_pool, th, x_test, t_test,
                                                             5, shape, seed=4))
    assert not np.array_equal(got[0], got[1])           # the starts matter
    for bad, err, match in (([], ValueError, "^thetas must hold at least one"),
                            ([np.zeros(11)], ValueError, r"^thetas must have shape \(12,\)"),
                            ([np.zeros((5, 12))], ValueError, r"^thetas must have shape"),
                            (["a"], TypeError, "^thetas must be an array"),
                            ([np.full(12, np.nan)], ValueError, "^thetas must be finite")):
        with pytest.raises(err, match=match):
            finetune_test_errors(x_pool, t_pool, bad, x_test, t_test, 5, shape, seed=4)
    with pytest.raises(ValueError, match=r"^theta_s must have shape \(12,\) or \(6, 12\)"):
        finetune_test_error(x_pool, t_pool, np.zeros(3), x_test, t_test, 5, shape, seed=4)

