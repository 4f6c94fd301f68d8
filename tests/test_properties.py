"""Property-based tests (hypothesis) of the closed forms, the agreement statistics,
the curvature bound and the determinism of the simulations.

``tests/test_theory.py`` checks the formulas against Monte Carlo at chosen points;
here the documented *contracts* are checked over whole domains:

* finite in-domain inputs give finite outputs, except ``inf`` exactly at the
  divergences the docstrings name (and ``ValueError`` for the one ``inf - inf``);
* documented identities, symmetries, monotonicity and limits (Eqs. 8-15 of paper 000);
* out-of-domain inputs raise ``ValueError`` whose message starts with the parameter;
* :func:`transferkit.stats.critical_value` / :func:`~transferkit.stats.agreement`
  behave like the statistics they claim to be;
* :func:`transferkit.models.deep_linear.curvature_bound` dominates the true Hessian norm;
* :func:`transferkit.experiments.deep_linear.simulate_transfer` is bit-for-bit reproducible.

Hypothesis runs derandomized (a fixed sequence of examples, no example database), so
CI is deterministic; ``TRANSFERKIT_HYPOTHESIS=explore`` turns on random search with
ten times the examples for local bug hunting.  The file runs in well under a minute.
"""

from __future__ import annotations

import math
import types
import warnings

import numpy as np
import pytest
import torch
from _helpers import cfg, hessian_norm
from hypothesis import assume, given
from hypothesis import strategies as st

from transferkit import models, stats, theory
from transferkit.experiments.deep_linear import simulate_transfer

PI = math.pi


# ---------------------------------------------------------------------------
# strategies: valid values, with the special points drawn often
# ---------------------------------------------------------------------------

gammas = st.one_of(st.sampled_from([1.0, 0.5, 2.0, 1e-3]), st.floats(1e-6, 1e6))
sigmas = st.one_of(st.just(0.0), st.floats(0.0, 1e3))
thetas = st.one_of(st.sampled_from([0.0, PI / 6, PI / 3, PI / 2, PI]), st.floats(0.0, PI))
half_thetas = st.floats(0.0, PI / 2)
lams = st.one_of(st.just(0.0), st.floats(0.0, 1e6))
ints = st.integers(1, 10**6)


@st.composite
def sizes(draw):
    """(n, d) with n close to d (the divergences) or to 2 (small n) half of the time."""
    d = draw(st.integers(1, 10**5))
    n = draw(st.one_of(st.integers(1, 10**5), st.integers(-3, 3).map(lambda k: max(1, d + k)),
                       st.integers(1, 4)))
    return n, d


def sin2(theta: float) -> float:
    """sin^2 with the module's convention: exactly 0 at 0 and pi."""
    return 0.0 if theta in (0.0, PI) else math.sin(theta) ** 2


def close(a, b, rtol=1e-9, atol=1e-12) -> bool:
    return a == b or abs(a - b) <= atol + rtol * max(abs(a), abs(b))


# ---------------------------------------------------------------------------
# finite in, finite out -- or inf exactly where documented
# ---------------------------------------------------------------------------


@cfg(200)
@given(gammas, sigmas)
def test_scratch_risk_is_finite_except_at_the_threshold(gamma, sigma):
    r = theory.deep_linear.scratch_risk(gamma, sigma)
    assert type(r) is float
    if gamma == 1 and sigma > 0:
        assert r == math.inf
    else:
        assert math.isfinite(r) and r >= 0


@cfg(200)
@given(sizes(), sigmas)
def test_scratch_risk_finite_diverges_exactly_for_n_near_d(nd, sigma):
    n, d = nd
    r = theory.deep_linear.scratch_risk_finite(n, d, sigma)
    if abs(n - d) <= 1 and sigma > 0:
        assert r == math.inf
    else:
        assert math.isfinite(r) and r >= 0
        if sigma == 0:
            assert r == (1 - n / d if n < d else 0.0)


@cfg(200)
@given(sizes(), thetas, sigmas)
def test_linear_transfer_risk_diverges_exactly_for_n_at_most_2(nd, theta, sigma):
    n, _ = nd
    r = theory.deep_linear.linear_transfer_risk(n, theta, sigma)
    noisy = sigma > 0 or sin2(theta) > 0
    if n <= 2:
        assert r == (math.inf if noisy else 0.0)
    else:
        assert math.isfinite(r)
        assert r >= sin2(theta) * (1 - 1e-12)  # the bias sin^2(theta) is a floor
    std = theory.deep_linear.linear_transfer_risk_std(n, theta, sigma)
    assert (std == math.inf) == (n <= 4 and noisy) and std >= 0


@cfg(200)
@given(gammas, thetas, sigmas)
def test_asymptotic_risks_and_transferabilities(gamma, theta, sigma):
    sc = theory.deep_linear.scratch_risk(gamma, sigma)
    lt = theory.deep_linear.linear_transferability(gamma, theta, sigma)
    ft = theory.deep_linear.finetune_risk(gamma, theta, sigma)
    tft = theory.deep_linear.finetune_transferability(gamma, theta)
    divergent = gamma == 1 and sigma > 0
    assert (lt == math.inf) == divergent and (ft == math.inf) == divergent
    assert math.isfinite(tft)  # well defined even at gamma = 1 (documented)
    if not divergent:
        assert math.isfinite(lt) and math.isfinite(ft)
        assert close(lt, sc - sin2(theta), atol=1e-12 * (1 + sc))  # Eq. 11 = Eq. 8 - sin^2
        assert close(tft, sc - ft, atol=1e-12 * (1 + sc))  # Eq. 15 = Eq. 8 - Eq. 14


@cfg(300)
@given(sizes(), thetas, sigmas)
def test_linear_transferability_finite_infinities_and_undefined_point(nd, theta, sigma):
    n, d = nd
    sc_div = abs(n - d) <= 1 and sigma > 0
    lt_div = n <= 2 and (sigma > 0 or sin2(theta) > 0)
    if sc_div and lt_div:
        with pytest.raises(ValueError, match="undefined"):
            theory.deep_linear.linear_transferability_finite(n, d, theta, sigma)
        return
    t = theory.deep_linear.linear_transferability_finite(n, d, theta, sigma)
    if sc_div:
        assert t == math.inf
    elif lt_div:
        assert t == -math.inf
    else:
        sc = theory.deep_linear.scratch_risk_finite(n, d, sigma)
        lt = theory.deep_linear.linear_transfer_risk(n, theta, sigma)
        assert math.isfinite(t) and close(t, sc - lt, rtol=1e-9, atol=1e-12 * (1 + sc + lt))


@cfg(200)
@given(sizes(), thetas, sigmas)
def test_finetune_risk_finite(nd, theta, sigma):
    n, d = nd
    ft = theory.deep_linear.finetune_risk_finite(n, d, theta, sigma)
    sc = theory.deep_linear.scratch_risk_finite(n, d, sigma)
    assert (ft == math.inf) == (abs(n - d) <= 1 and sigma > 0)
    if n >= d:
        assert ft == sc  # the data determine the whole solution: fine-tuning = scratch
    elif math.isfinite(ft):
        assert ft >= 0 and close(ft - sc, (1 - n / d) * (1 - 2 * math.cos(theta)), atol=1e-9 * (1 + sc))


# ---------------------------------------------------------------------------
# symmetries, monotonicity and special values
# ---------------------------------------------------------------------------


@cfg(200)
@given(gammas, sigmas)
def test_linear_transferability_at_theta_zero_is_the_scratch_risk(gamma, sigma):
    assert theory.deep_linear.linear_transferability(gamma, 0.0, sigma) == theory.deep_linear.scratch_risk(gamma, sigma)


@cfg(200)
@given(gammas, half_thetas, half_thetas, sigmas)
def test_linear_transferability_decreases_in_theta_on_the_first_quadrant(gamma, t1, t2, sigma):
    lo, hi = min(t1, t2), max(t1, t2)
    assert theory.deep_linear.linear_transferability(gamma, lo, sigma) >= theory.deep_linear.linear_transferability(gamma, hi, sigma)


@cfg(150)
@given(sizes(), half_thetas, half_thetas, sigmas)
def test_finite_linear_transferability_decreases_in_theta(nd, t1, t2, sigma):
    n, d = nd
    lo, hi = min(t1, t2), max(t1, t2)
    try:
        a = theory.deep_linear.linear_transferability_finite(n, d, lo, sigma)
        b = theory.deep_linear.linear_transferability_finite(n, d, hi, sigma)
    except ValueError:  # the documented inf - inf point
        assume(False)
    assert a >= b


@cfg(200)
@given(gammas, thetas, sigmas)
def test_transferabilities_depend_on_theta_through_sin2_or_cos(gamma, theta, sigma):
    # Eq. 11 sees theta only through sin^2: mirror symmetry theta -> pi - theta
    a = theory.deep_linear.linear_transferability(gamma, theta, sigma)
    b = theory.deep_linear.linear_transferability(gamma, PI - theta, sigma)
    assert close(a, b, rtol=1e-9, atol=1e-12 * (1 + abs(a) if math.isfinite(a) else 1))


@cfg(200)
@given(gammas, thetas)
def test_finetune_transferability_sign_structure(gamma, theta):
    t = theory.deep_linear.finetune_transferability(gamma, theta)
    if gamma > 1:
        assert t == 0.0
    elif gamma < 1 and abs(theta - PI / 3) > 1e-9:
        # positive for theta < pi/3, negative beyond (paper 000, Sec. 3.4)
        assert (t > 0) == (theta < PI / 3) and t != 0
    assert close(t, (gamma - 1) * (1 - 2 * math.cos(theta)) if gamma <= 1 else 0.0, atol=1e-12)


@cfg(200)
@given(lams, lams, thetas)
def test_ridge_risk_increases_in_lambda_between_sin2_and_one(l1, l2, theta):
    lo, hi = min(l1, l2), max(l1, l2)
    r_lo = theory.deep_linear.ridge_linear_transfer_risk(lo, theta)
    r_hi = theory.deep_linear.ridge_linear_transfer_risk(hi, theta)
    assert r_lo <= r_hi + 1e-15
    s2 = sin2(theta)
    assert s2 - 1e-12 <= r_lo <= 1 + 1e-15
    assert close(theory.deep_linear.ridge_linear_transfer_risk(0.0, theta), s2, atol=1e-15)


@cfg(200)
@given(st.floats(1e-3, PI - 1e-3), st.floats(1e-3, 10.0))
def test_boundary_of_negative_transfer_separates_the_signs(theta, sigma):
    gc = theory.deep_linear.linear_transfer_boundary(theta, sigma)
    s2 = math.sin(theta) ** 2
    assert gc >= 1 and close(gc, 1 + sigma**2 / s2)
    # T(gamma) = sigma^2/(gamma - 1) - sin^2 for gamma > 1: sin^2 at 1 + (gc-1)/2, -sin^2/2 at 1 + 2(gc-1)
    t_in = theory.deep_linear.linear_transferability(1 + (gc - 1) / 2, theta, sigma)
    t_out = theory.deep_linear.linear_transferability(1 + 2 * (gc - 1), theta, sigma)
    assert close(t_in, s2, rtol=1e-6) and close(t_out, -s2 / 2, rtol=1e-6)


@cfg(50)
@given(st.sampled_from([0.0, PI]), sigmas)
def test_no_boundary_when_source_and_target_are_parallel(theta, sigma):
    assert theory.deep_linear.linear_transfer_boundary(theta, sigma) == math.inf


@cfg(300)
@given(st.floats(1e-4, 1 - 1e-4), thetas, st.floats(0.0, 1.5))
def test_negative_transfer_window_is_where_eq11_is_negative(gamma, theta, sigma):
    window = theory.deep_linear.negative_transfer_window(theta, sigma)
    c = abs(math.cos(theta))
    margin = abs(c - (1 - sigma))
    if margin > 1e-9:
        assert (window is not None) == (c < 1 - sigma)
    t = theory.deep_linear.linear_transferability(gamma, theta, sigma)
    if window is None:
        if margin > 1e-6:
            assert t >= -1e-12
        return
    lower, upper = window
    assert 0 <= lower < upper <= 1 and close(lower * upper, c * c, atol=1e-15)
    q = lambda g: g * g - (1 + c * c - sigma * sigma) * g + c * c  # noqa: E731 (its roots)
    width = upper - lower
    if width > 1e-6:  # narrower windows are below the roundoff of q
        assert q((lower + upper) / 2) < 0
    if lower + 1e-7 * width < gamma < upper - 1e-7 * width:
        assert t < 0
    elif gamma < lower - 1e-7 * width or gamma > upper + 1e-7 * width:
        assert t > 0


# ---------------------------------------------------------------------------
# finite size -> the proportional limit (n, d -> oo, n/d fixed)
# ---------------------------------------------------------------------------

ratios = st.tuples(st.integers(1, 9), st.integers(1, 9)).filter(lambda pq: pq[0] != pq[1])


@cfg(150)
@given(ratios, st.integers(3, 10**4), st.floats(0.0, 10.0), thetas)
def test_finite_size_formulas_tend_to_the_limits(pq, k, sigma, theta):
    p, q = pq
    gamma, a = p / q, abs(p - q) / q
    errs = []
    for kk in (k, 10 * k, 100 * k):
        n, d = p * kk, q * kk
        fin, lim = theory.deep_linear.scratch_risk_finite(n, d, sigma), theory.deep_linear.scratch_risk(gamma, sigma)
        err = fin - lim
        # err = sigma^2 max(gamma, 1) / (a (a d - 1)) >= 0 exactly; allow roundoff
        tol = 1e-12 * (1 + abs(lim))
        assert -tol <= err <= 2 * sigma**2 * max(gamma, 1) / (a * a * d) + tol
        errs.append(err)
        ft_err = theory.deep_linear.finetune_risk_finite(n, d, theta, sigma) - theory.deep_linear.finetune_risk(gamma, theta, sigma)
        assert close(ft_err, err, atol=1e-9 * (1 + abs(lim)))  # Eq. 14 adds an exact term
    assert errs[0] + 1e-12 * (1 + abs(lim)) >= errs[1] >= errs[2] - 1e-12 * (1 + abs(lim))


@cfg(100)
@given(ratios, thetas, st.floats(0.0, 3.0))
def test_finite_linear_transferability_tends_to_eq11(pq, theta, sigma):
    p, q = pq
    gamma, a = p / q, abs(p - q) / q
    lim = theory.deep_linear.linear_transferability(gamma, theta, sigma)
    n, d = p * 10**6, q * 10**6
    fin = theory.deep_linear.linear_transferability_finite(n, d, theta, sigma)
    bound = 2 * sigma**2 * max(gamma, 1) / (a * a * d) + (sigma**2 + 1) / (n - 2)
    assert abs(fin - lim) <= bound + 1e-9 * (1 + abs(lim))


# ---------------------------------------------------------------------------
# broadcasting: arrays give the elementwise scalar results
# ---------------------------------------------------------------------------

BROADCAST = {
    "scratch_risk": (theory.deep_linear.scratch_risk, ("gamma", "sigma")),
    "scratch_risk_finite": (theory.deep_linear.scratch_risk_finite, ("n", "d", "sigma")),
    "linear_transfer_risk": (theory.deep_linear.linear_transfer_risk, ("n", "theta", "sigma")),
    "linear_transfer_risk_std": (theory.deep_linear.linear_transfer_risk_std, ("n", "theta", "sigma")),
    "linear_transferability": (theory.deep_linear.linear_transferability, ("gamma", "theta", "sigma")),
    "linear_transfer_boundary": (theory.deep_linear.linear_transfer_boundary, ("theta", "sigma")),
    "ridge_linear_transfer_risk": (theory.deep_linear.ridge_linear_transfer_risk, ("lam", "theta")),
    "finetune_risk": (theory.deep_linear.finetune_risk, ("gamma", "theta", "sigma")),
    "finetune_risk_finite": (theory.deep_linear.finetune_risk_finite, ("n", "d", "theta", "sigma")),
    "finetune_transferability": (theory.deep_linear.finetune_transferability, ("gamma", "theta")),
    "finetune_transferability_finite": (theory.deep_linear.finetune_transferability_finite, ("n", "d", "theta")),
    # ridge and weight decay (paper 000, Sec. 3.3.1, Figs. 5-6)
    "ridge_linear_transfer_risk_finite": (theory.deep_linear.ridge_linear_transfer_risk_finite,
                                          ("n", "theta", "sigma", "lam")),
    "mp_stieltjes": (theory.deep_linear.mp_stieltjes, ("gamma", "mu")),
    "ridge_risk": (theory.deep_linear.ridge_risk, ("gamma", "sigma", "mu")),
    "ridge_norm2": (theory.deep_linear.ridge_norm2, ("gamma", "sigma", "mu")),
    "optimal_ridge_risk": (theory.deep_linear.optimal_ridge_risk, ("gamma", "sigma")),
    "weight_decay_ridge_parameter": (theory.deep_linear.weight_decay_ridge_parameter,
                                     ("gamma", "sigma", "weight_decay")),
    "weight_decay_scratch_risk": (theory.deep_linear.weight_decay_scratch_risk,
                                  ("gamma", "sigma", "weight_decay")),
}
VALID = {"gamma": gammas, "sigma": sigmas, "theta": thetas, "lam": lams,
         "n": st.integers(1, 200), "d": st.integers(1, 200),
         "mu": st.floats(1e-6, 10.0), "weight_decay": st.floats(0.0, 1.0)}  # mp_stieltjes: mu > 0


@pytest.mark.parametrize("name", sorted(BROADCAST))
@cfg(25)
@given(data=st.data())
def test_broadcasting_matches_scalar_calls(name, data):
    func, params = BROADCAST[name]
    first = params[0]
    col = data.draw(st.lists(VALID[first], min_size=1, max_size=3), label=first)
    rest = {p: data.draw(st.lists(VALID[p], min_size=1, max_size=3), label=p) for p in params[1:]}
    # first parameter along axis 0, every other one along axis 1 (same length)
    m = min(len(v) for v in rest.values()) if rest else 1
    rest = {p: v[:m] for p, v in rest.items()}
    out = func(**{first: np.array(col, float)[:, None]}, **{p: np.array(v, float) for p, v in rest.items()})
    assert isinstance(out, np.ndarray) and out.shape == (len(col), m) and not np.isnan(out).any()
    for i, x in enumerate(col):
        for j in range(m):
            expect = func(**{first: x}, **{p: v[j] for p, v in rest.items()})
            assert type(expect) is float
            np.testing.assert_allclose(out[i, j], expect, rtol=1e-12, atol=0)


# ---------------------------------------------------------------------------
# out-of-domain input: ValueError naming the parameter
# ---------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")
_NON_FINITE = st.sampled_from([NAN, INF, -INF])
INVALID = {
    "gamma": st.one_of(st.floats(max_value=0.0), _NON_FINITE),
    "sigma": st.one_of(st.floats(max_value=0.0, exclude_max=True), _NON_FINITE),
    "lam": st.one_of(st.floats(max_value=0.0, exclude_max=True), _NON_FINITE),
    "theta": st.one_of(st.floats(max_value=0.0, exclude_max=True),
                       st.floats(min_value=PI, exclude_min=True), _NON_FINITE),
    "n": st.one_of(st.integers(max_value=0), _NON_FINITE,
                   st.floats(1.0, 1e6).filter(lambda x: x != math.floor(x))),
}
INVALID["d"] = INVALID["n"]
INVALID["mu"] = INVALID["weight_decay"] = INVALID["lam"]
DEFAULTS = {"gamma": 0.5, "sigma": 0.2, "theta": 1.0, "lam": 0.1, "n": 50, "d": 100,
            "mu": 0.1, "weight_decay": 0.01}
ALL_FUNCS = {**BROADCAST,
             "linear_transferability_finite": (theory.deep_linear.linear_transferability_finite,
                                               ("n", "d", "theta", "sigma")),
             "negative_transfer_window": (theory.deep_linear.negative_transfer_window, ("theta", "sigma"))}
CASES = [(name, p) for name, (_, params) in sorted(ALL_FUNCS.items()) for p in params]


def test_every_public_theory_function_is_covered():
    assert sorted(ALL_FUNCS) == sorted(theory.deep_linear.__all__)


@pytest.mark.parametrize("name, param", CASES, ids=[f"{n}-{p}" for n, p in CASES])
@cfg(20)
@given(data=st.data())
def test_out_of_domain_raises_value_error_naming_the_parameter(name, param, data):
    func, params = ALL_FUNCS[name]
    bad = data.draw(INVALID[param], label=param)
    if name != "negative_transfer_window" and data.draw(st.booleans(), label="inside an array"):
        bad = np.array([DEFAULTS[param], bad])  # one bad entry is enough
    kwargs = {p: DEFAULTS[p] for p in params}
    kwargs[param] = bad
    with pytest.raises(ValueError, match=rf"^{param} must be"):
        func(**kwargs)


# ---------------------------------------------------------------------------
# transferkit.stats: critical_value and agreement
# ---------------------------------------------------------------------------

n_tests = st.integers(1, 10**6)
draw_counts = st.integers(2, 10**4)
fwers = st.floats(1e-6, 0.5)


@cfg(150)
@given(n_tests, n_tests, draw_counts, draw_counts, fwers, fwers)
def test_critical_value_is_monotone(k1, k2, m1, m2, f1, f2):
    k_lo, k_hi = sorted((k1, k2))
    m_lo, m_hi = sorted((m1, m2))
    f_lo, f_hi = sorted((f1, f2))
    cv = stats.critical_value
    rel = 1 + 1e-10
    base = cv(k_lo, m_lo, f_lo)
    assert math.isfinite(base) and base > 0
    assert cv(k_hi, m_lo, f_lo) * rel >= base  # more tests: stricter (Bonferroni)
    assert base * rel >= cv(k_lo, m_hi, f_lo)  # more draws: thinner t tails
    assert cv(k_lo, m_hi, f_lo) * rel >= cv(k_lo, None, f_lo)  # t quantile >= normal quantile
    assert base * rel >= cv(k_lo, m_lo, f_hi)  # larger family-wise error: laxer


@cfg(60)
@given(st.data())
def test_critical_value_rejects_bad_arguments(data):
    which = data.draw(st.sampled_from(["n_tests", "draws", "fwer"]))
    args = {"n_tests": 3, "draws": 10, "fwer": 0.01}
    args[which] = data.draw({
        "n_tests": st.one_of(st.integers(max_value=0), st.floats(1.1, 10.0).filter(lambda x: x != int(x)),
                             _NON_FINITE, st.just(True)),
        "draws": st.one_of(st.integers(max_value=1), st.floats(2.1, 9.9), _NON_FINITE),
        "fwer": st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0), st.just(NAN)),
    }[which])
    with pytest.raises(ValueError, match=which):
        stats.critical_value(**args)


values = st.floats(-1e3, 1e3)


@st.composite
def draw_tables(draw):
    cells = draw(st.integers(1, 4))
    m = draw(st.integers(3, 8))
    x = np.array(draw(st.lists(values, min_size=cells * m, max_size=cells * m))).reshape(cells, m)
    theory_ = np.array(draw(st.lists(values, min_size=cells, max_size=cells)))
    return x, theory_


@cfg(100)
@given(draw_tables(), st.floats(-1e3, 1e3), st.floats(1e-2, 1e2), st.randoms(use_true_random=False))
def test_agreement_is_invariant_under_shift_scale_and_permutation(table, shift, scale, rnd):
    x, th = table
    assume(np.all(x.std(-1, ddof=1) > 1e-3 * (1 + np.abs(x).max())))
    a = stats.agreement(x, th)
    assert a.n_compared == x.shape[0] and a.critical == stats.critical_value(x.shape[0], x.shape[1])
    np.testing.assert_allclose(a.z, (x.mean(-1) - th) / (x.std(-1, ddof=1) / math.sqrt(x.shape[1])),
                               rtol=1e-9, atol=1e-9)
    perm = list(range(x.shape[1]))
    rnd.shuffle(perm)
    for b in (stats.agreement(scale * x + shift, scale * th + shift), stats.agreement(x[:, perm], th)):
        assert b.critical == a.critical
        np.testing.assert_allclose(b.z, a.z, rtol=1e-6, atol=1e-6)
        robust = np.abs(np.abs(a.z) / a.critical - 1) > 1e-6  # away from the decision boundary
        assert np.array_equal(b.disagree[robust], a.disagree[robust])


@cfg(100)
@given(draw_tables(), st.floats(0.0, 0.99), st.floats(1.01, 100.0))
def test_agreement_decision_matches_the_critical_value(table, inside, outside):
    x, _ = table
    assume(np.all(x.std(-1, ddof=1) > 1e-6 * (1 + np.abs(x).max())))
    mean, se = x.mean(-1), x.std(-1, ddof=1) / math.sqrt(x.shape[1])
    crit = stats.critical_value(x.shape[0], x.shape[1])
    assert stats.agreement(x, mean + inside * crit * se).ok
    assert stats.agreement(x, mean - outside * crit * se).disagree.all()
    # cells with an infinite theory are not compared
    th = mean.copy()
    th[0] = math.inf
    b = stats.agreement(x, th)
    assert not b.mask[0] and b.n_compared == x.shape[0] - 1 and b.ok


# ---------------------------------------------------------------------------
# transferkit.models.deep_linear.curvature_bound >= true Hessian norm
# ---------------------------------------------------------------------------


@cfg(40)
@given(st.integers(2, 4), st.integers(1, 3), st.integers(1, 3), st.floats(-4.0, 0.5),
       st.integers(0, 2**32 - 1))
def test_curvature_bound_dominates_the_hessian_norm(depth, d, width, log_scale, seed):
    rng = np.random.default_rng(seed)
    dims = [d] + [width] * (depth - 1) + [1]
    scale = 10.0 ** log_scale
    Ws = [torch.tensor(scale * rng.standard_normal((1, dims[l], dims[l + 1]))) for l in range(depth)]
    A = rng.standard_normal((d, d))
    Sig = A @ A.T / d + 0.1 * np.eye(d)
    bhat = rng.standard_normal(d)
    beta = models.deep_linear.end_to_end(Ws)[0].numpy()
    g = Sig @ (beta - bhat)
    sq = torch.stack([torch.linalg.vector_norm(W, dim=(1, 2)) ** 2 for W in Ws])
    bound = models.deep_linear.curvature_bound(sq, torch.tensor([np.linalg.eigvalsh(Sig)[-1]]),
                                   torch.tensor([np.linalg.norm(g)]))
    true = hessian_norm([W[0] for W in Ws], torch.tensor(Sig), torch.tensor(bhat))
    assert bound.shape == (1,) and math.isfinite(bound.item())
    assert bound.item() >= true * (1 - 1e-10) - 1e-12, (bound.item(), true)


# ---------------------------------------------------------------------------
# transferkit.experiments.deep_linear: the same seed gives bit-identical numbers
# ---------------------------------------------------------------------------


@st.composite
def small_simulations(draw):
    d = draw(st.integers(3, 8))
    # |n - d| >= 2: at n ~ d the scratch problem is ill-conditioned and slow to train
    n = draw(st.one_of(st.integers(1, d - 2), st.integers(d + 2, 2 * d + 2)))
    return dict(d=d, gamma=n / d, theta=draw(thetas), sigma=draw(st.floats(0.0, 1.0)),
                draws=draw(st.integers(1, 2)), seed=draw(st.integers(0, 2**31 - 1)),
                depth=draw(st.integers(2, 3)))


@cfg(5)
@given(small_simulations())
def test_simulate_transfer_same_seed_bit_identical(kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a ConvergenceWarning does not matter here
        a = simulate_transfer(**kw, max_steps=20_000)
        b = simulate_transfer(**kw, max_steps=20_000)
    assert a.methods == b.methods
    for m in a.methods:
        for what in ("risk", "converged", "steps"):
            x, y = getattr(a.runs[m], what), getattr(b.runs[m], what)
            if x is None:
                assert y is None, (m, what)
                continue
            x, y = np.asarray(x), np.asarray(y)
            assert x.dtype == y.dtype and x.shape == y.shape == (kw["draws"],)
            assert x.tobytes() == y.tobytes(), (m, what)


# ---------------------------------------------------------------------------
# CI hygiene: pyproject's filterwarnings make transferkit's own warnings errors
# ---------------------------------------------------------------------------

_PROBE = """
import warnings
import numpy as np

def numpy_invalid():
    return np.zeros(2) / np.zeros(2)  # numpy's RuntimeWarning, raised from this module

def deprecated():
    warnings.warn("old API", DeprecationWarning)

def user_warning():
    warnings.warn("just a note", UserWarning)
"""


def test_warnings_raised_inside_transferkit_are_errors():
    # a module *inside* the transferkit namespace, as the warnings machinery sees it
    probe = types.ModuleType("transferkit._warning_probe")
    exec(compile(_PROBE, "transferkit/_warning_probe.py", "exec"), probe.__dict__)
    with warnings.catch_warnings(record=True) as seen:  # keeps the active filters
        with pytest.raises(RuntimeWarning, match="invalid value"):
            probe.numpy_invalid()
        with pytest.raises(DeprecationWarning, match="old API"):
            probe.deprecated()
        probe.user_warning()  # other categories stay warnings
        np.zeros(2) / np.zeros(2)  # the same RuntimeWarning outside transferkit: not an error
    assert sorted(w.category.__name__ for w in seen) == ["RuntimeWarning", "UserWarning"]
