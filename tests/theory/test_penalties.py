"""Tests of transferkit.theory.penalties (papers 003 and 004).

* the ReLU-unit penalty (paper 003, Eqs. 6-11) against direct numerical minimisation of
  p(u), and its derivative against finite differences;
* q (paper 004, Eq. 23) against its Taylor series, its derivative and its symmetries;
* Eq. 22 against its definition, its limits and its scaling;
* property-based contracts (hypothesis, derandomized): finite in -> finite out, the
  documented symmetries and limits, ValueError naming the parameter outside the domain.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import cfg
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from transferkit import theory


def brute_min_p(m, rho, m0, gamma):
    """min over u > 0 of p(u): dense log grid, then Brent around the best grid point."""
    f = lambda lu: float(theory.penalties.relu_ptft_p(math.exp(lu), m, rho, m0, gamma))  # noqa: E731
    grid = np.linspace(-12, 12, 4801)
    vals = np.array(theory.penalties.relu_ptft_p(np.exp(grid), m, rho, m0, gamma))
    i = int(np.argmin(vals))
    res = minimize_scalar(f, bracket=(grid[max(i - 1, 0)], grid[i], grid[min(i + 1, 4800)]),
                          tol=1e-13)
    return min(res.fun, vals[i])


# ---------------------------------------------------------------------------
# paper 003
# ---------------------------------------------------------------------------

CASES = [(m, rho, maux, gamma) for m in (1e-3, 0.05, 1.0, 3.0, 200.0) for rho in (1.0, 0.99, 0.9, 0.0, -0.5)
         for maux in (0.01, 1.0, 100.0) for gamma in (0.0, 1e-2, 0.5)]


@pytest.mark.parametrize("m,rho,maux,gamma", CASES[::3])
def test_relu_penalty_is_the_minimum_of_p(m, rho, maux, gamma):
    m0 = math.sqrt(maux)
    r = theory.penalties.relu_ptft_penalty(m, rho, m0, gamma)
    b = brute_min_p(m, rho, m0, gamma)
    assert r <= b * (1 + 1e-9) + 1e-13  # never above a direct minimum
    assert r == pytest.approx(b, rel=1e-7, abs=1e-13)
    u, nmin = theory.penalties.relu_ptft_u_star(m, rho, m0, gamma)
    assert theory.penalties.relu_ptft_p(u, m, rho, m0, gamma) == pytest.approx(r, rel=1e-12, abs=1e-15)
    # u* is a stationary point: the quartic Eq. 10 vanishes there
    quartic = -m ** 2 + gamma * m * u - m0 * rho * u ** 3 + u ** 4
    assert abs(quartic) <= 1e-9 * max(m ** 2, u ** 4, 1e-300)
    assert nmin in (1, 2)


def test_relu_penalty_broadcasts_and_matches_scalars():
    m = np.logspace(-2, 2, 7)[:, None]
    rho = np.array([1.0, 0.99, 0.9])
    r = theory.penalties.relu_ptft_penalty(m, rho, 1.0, 0.01)
    assert r.shape == (7, 3)
    for i in range(7):
        for j in range(3):
            assert r[i, j] == theory.penalties.relu_ptft_penalty(float(m[i, 0]), float(rho[j]), 1.0, 0.01)


def test_relu_penalty_two_minima_picks_the_global_one():
    # rho m0 > 0 and gamma m > 0: Eq. 10 can have three positive roots (Descartes)
    m0, rho = 3.0, 1.0
    found = 0
    for gamma in np.linspace(0.5, 6, 23):
        for m in np.linspace(0.05, 4, 40):
            u, nmin = theory.penalties.relu_ptft_u_star(m, rho, m0, gamma)
            if nmin == 2:
                found += 1
                assert theory.penalties.relu_ptft_penalty(m, rho, m0, gamma) == pytest.approx(
                    brute_min_p(m, rho, m0, gamma), rel=1e-8, abs=1e-12)
    assert found > 0, "expected a region with two local minima of p"


def test_relu_penalty_limits():
    # m = 0: the infimum gamma^2 + m0^2 (1 - max(rho, 0)^2)
    assert theory.penalties.relu_ptft_penalty(0.0, 0.6, 2.0, 0.3) == pytest.approx(0.09 + 4 * (1 - 0.36))
    assert theory.penalties.relu_ptft_penalty(0.0, -0.6, 2.0, 0.3) == pytest.approx(0.09 + 4)
    # m0 = 0, gamma = 0 (a fresh unit): min_u m^2/u^2 + u^2 = 2|m| (the l1 cost, Eq. 35)
    for m in (1e-3, 0.7, 50.0):
        assert theory.penalties.relu_ptft_penalty(m, 0.3, 0.0, 0.0) == pytest.approx(2 * m, rel=1e-12)
    # rho = 1, m = m0 gamma: the initial unit itself costs nothing
    assert theory.penalties.relu_ptft_penalty(2.0 * 0.3, 1.0, 2.0, 0.3) == pytest.approx(0.0, abs=1e-12)


def test_dlog_penalty_matches_finite_differences():
    m = np.logspace(-2, 2, 9)
    for rho, maux in ((1.0, 0.01), (0.99, 1.0), (0.9, 100.0)):
        m0 = math.sqrt(maux)
        h = 1e-5
        fd = (np.log(theory.penalties.relu_ptft_penalty(m * math.exp(h), rho, m0, 1e-3))
              - np.log(theory.penalties.relu_ptft_penalty(m * math.exp(-h), rho, m0, 1e-3))) / (2 * h)
        np.testing.assert_allclose(theory.penalties.relu_ptft_dlog_penalty(m, rho, m0, 1e-3), fd, rtol=1e-5,
                                   atol=1e-7)


def test_relu_penalty_is_fast_enough_for_grids():
    m = np.logspace(-3, 3, 20_000)
    r = theory.penalties.relu_ptft_penalty(m, 0.99, 1.0, 1e-3)
    assert r.shape == m.shape and np.all(np.isfinite(r))


# ---------------------------------------------------------------------------
# paper 004
# ---------------------------------------------------------------------------


def test_q_matches_its_series_and_definition():
    z = np.array([1e-8, 1e-5, 1e-4, 1e-3, 0.01, 0.03])
    series = z ** 2 / 4 - z ** 4 / 192 + z ** 6 / 2560
    np.testing.assert_allclose(theory.penalties.q(z), series, rtol=1e-12)
    zz = np.array([0.3, 1.0, 5.0, 40.0])
    direct = 2 - np.sqrt(4 + zz ** 2) + zz * np.arcsinh(zz / 2)
    np.testing.assert_allclose(theory.penalties.q(zz), direct, rtol=1e-12)
    # derivative: q'(z) = arcsinh(z/2)
    zc = np.linspace(-6, 6, 13)
    h = 1e-6
    np.testing.assert_allclose((theory.penalties.q(zc + h) - theory.penalties.q(zc - h)) / (2 * h), theory.penalties.q_prime(zc), atol=1e-8)
    # large z: |z| log|z| - |z| + 2 + O(log|z| / |z|)
    big = np.array([1e4, 1e8, 1e100, 1e300])
    np.testing.assert_allclose(theory.penalties.q(big), big * np.log(big) - big, rtol=1e-3)
    assert np.all(np.isfinite(theory.penalties.q(big)))


def test_diagonal_penalty_definition_and_limits():
    beta = np.array([0.5, -1.0, 0.0, 2.0])
    w1 = np.array([1.0, 0.1, 0.3, 0.0])
    w2 = 0.2
    c = w1 ** 2 + w2 ** 2
    expected = np.sum(c * (2 - np.sqrt(4 + (2 * beta / c) ** 2)
                           + 2 * beta / c * np.arcsinh(beta / c)))
    assert theory.penalties.diagonal_ptft_penalty(beta, w1, w2) == pytest.approx(expected, rel=1e-12)
    # large initialisation: l2-like, ||beta||_Q ~ sum beta^2 / c
    c_big = 1e4
    np.testing.assert_allclose(theory.penalties.diagonal_ptft_penalty(beta, 100.0, 0.0),
                               np.sum(beta ** 2) / c_big, rtol=1e-6)
    # small initialisation: l1-like, ||beta||_Q / (2 log(1/c)) -> ||beta||_1
    for a in (1e-10, 1e-50):
        c_small = 2 * a ** 2
        ratio = theory.penalties.diagonal_ptft_penalty(beta, a, a) / (2 * np.log(1 / c_small)
                                                       * np.abs(beta).sum())
        assert abs(ratio - 1) < 3 / np.log(1 / c_small)
    # c = 0: free at beta = 0, infinite otherwise
    assert theory.penalties.diagonal_ptft_penalty([0.0, 0.0], 0.0, 0.0) == 0.0
    assert theory.penalties.diagonal_ptft_penalty([0.0, 1e-3], 0.0, 0.0) == math.inf
    # per-coordinate terms
    assert theory.penalties.diagonal_ptft_penalty(beta, w1, w2, axis=None).shape == (4,)


def test_diagonal_dual_beta_is_stationary():
    # 2 q'(2 beta / c) = s at beta = c sinh(s / 2)
    s = np.linspace(-20, 20, 11)
    w1, w2 = 0.3, 0.05
    b = theory.penalties.diagonal_dual_beta(s, w1, w2)
    c = w1 ** 2 + w2 ** 2
    np.testing.assert_allclose(2 * theory.penalties.q_prime(2 * b / c), s, rtol=1e-10, atol=1e-10)


def test_l12_norm():
    beta = np.array([[3.0, 0.0, 1.0], [4.0, 0.0, -1.0]])  # (O=2, D=3)
    assert theory.penalties.l12_norm(beta) == pytest.approx(5 + math.sqrt(2))
    assert theory.penalties.l12_norm(beta[:1]) == pytest.approx(4.0)  # one output: the l1 norm
    # Eq. 30: min over z of z^2 + ||beta_d||^2 / z^2 is 2 ||beta_d||
    z = np.r_[0.0, np.linspace(0.01, 5, 200_001)][:, None]
    nrm = np.linalg.norm(beta, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = np.where(nrm == 0, z ** 2, z ** 2 + nrm ** 2 / z ** 2)
    assert np.sum(cost.min(0)) == pytest.approx(2 * theory.penalties.l12_norm(beta),
                                                                        rel=1e-6)
    with pytest.raises(ValueError, match="^beta must"):
        theory.penalties.l12_norm(np.ones(3))


# ---------------------------------------------------------------------------
# property-based contracts (issue #9)
# ---------------------------------------------------------------------------

reals = st.floats(-1e3, 1e3, allow_nan=False)
mags = st.one_of(st.just(0.0), st.floats(1e-4, 1e3))
rhos = st.one_of(st.sampled_from([-1.0, 0.0, 0.9, 0.99, 1.0]), st.floats(-1.0, 1.0))
zs = st.one_of(st.sampled_from([0.0, 1e-300, 1e-8]), st.floats(-1e300, 1e300))


@cfg(150)
@given(reals, rhos, mags, st.floats(-10, 10))
def test_relu_penalty_finite_nonnegative_and_symmetric(m, rho, m0, gamma):
    r = theory.penalties.relu_ptft_penalty(m, rho, m0, gamma)
    assert type(r) is float and math.isfinite(r) and r >= 0
    # (m, gamma) -> (-m, -gamma) leaves p unchanged
    assert theory.penalties.relu_ptft_penalty(-m, rho, m0, -gamma) == pytest.approx(r, rel=1e-9, abs=1e-12)
    # never above p at any particular u, e.g. u = 1 and u = sqrt(|m|)
    for u in (1.0, math.sqrt(abs(m)) or 1.0):
        assert r <= theory.penalties.relu_ptft_p(u, m, rho, m0, gamma) * (1 + 1e-9) + 1e-12


@cfg(100)
@given(st.floats(1e-3, 1e2), rhos, st.floats(0.0, 10.0), st.floats(0.01, 100.0))
def test_relu_penalty_scaling(m, rho, m0, s):
    # p(u; s^2 m, s m0, s gamma) at s u = s^2 p(u; m, m0, gamma): r~ scales as s^2
    r = theory.penalties.relu_ptft_penalty(m, rho, m0, 0.1)
    rs = theory.penalties.relu_ptft_penalty(s * s * m, rho, s * m0, 0.1 * s)
    assert rs == pytest.approx(s * s * r, rel=1e-7, abs=1e-12 * s * s)


@cfg(200)
@given(zs)
def test_q_finite_even_nonnegative(z):
    v = theory.penalties.q(z)
    assert math.isfinite(v) and v >= 0
    assert theory.penalties.q(-z) == v
    if abs(z) < 1e-3:
        assert v == pytest.approx(z * z / 4, rel=1e-6, abs=1e-320)


@cfg(150)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=6), st.floats(1e-3, 1e2),
       st.floats(0.0, 1e2), st.floats(1e-2, 1e2))
def test_diagonal_penalty_scaling_and_sign(beta, w1, w2, s):
    beta = np.array(beta)
    v = theory.penalties.diagonal_ptft_penalty(beta, w1, w2)
    assert math.isfinite(v) and v >= 0
    assert theory.penalties.diagonal_ptft_penalty(-beta, w1, w2) == v  # q is even
    vs = theory.penalties.diagonal_ptft_penalty(s * beta, math.sqrt(s) * w1, math.sqrt(s) * w2)
    assert vs == pytest.approx(s * v, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("fn,args,param", [
    (theory.penalties.relu_ptft_penalty, (1.0, 1.5, 1.0, 0.0), "rho"),
    (theory.penalties.relu_ptft_penalty, (1.0, -1.01, 1.0, 0.0), "rho"),
    (theory.penalties.relu_ptft_penalty, (1.0, 0.5, -1.0, 0.0), "m0"),
    (theory.penalties.relu_ptft_penalty, (np.nan, 0.5, 1.0, 0.0), "m"),
    (theory.penalties.relu_ptft_penalty, (1.0, 0.5, 1.0, np.inf), "gamma"),
    (theory.penalties.relu_ptft_penalty, ([1.0, np.inf], 0.5, 1.0, 0.0), "m"),
    (theory.penalties.relu_ptft_dlog_penalty, (1.0, 2.0, 1.0, 0.0), "rho"),
    (theory.penalties.relu_ptft_p, (0.0, 1.0, 0.5, 1.0, 0.0), "u"),
    (theory.penalties.q, (np.nan,), "z"),
    (theory.penalties.q, ("a",), "z"),
    (theory.penalties.diagonal_ptft_penalty, ([1.0, np.nan], 1.0, 1.0), "beta"),
    (theory.penalties.diagonal_ptft_penalty, (1.0, np.inf, 1.0), "w1_0"),
    (theory.penalties.diagonal_ptft_penalty, (1.0, 1.0, np.nan), "w2_0"),
])
def test_out_of_domain_raises_naming_the_parameter(fn, args, param):
    with pytest.raises(ValueError, match=rf"^{param} must be"):
        fn(*args)


@pytest.mark.parametrize("m, rho, m0, gamma, exact", [
    (0.5, 0.3, 1.0, 1e16, 1.0), (0.5, 0.3, 1.0, 1e20, 1.0), (1e99, 0.3, 1.0, 1e99, 1.4),
    (1.2302687708123811e-06, -0.9, 0.0, 3.0, None)])
def test_relu_ptft_penalty_does_not_cancel_where_m_over_u_is_gamma(m, rho, m0, gamma, exact):
    # at a root u of Eq. 10, m/u - gamma = (u - m0 rho) u^2 / m; the direct difference
    # cancelled where m/u ~ gamma is large: the penalty at gamma = 1e16 came out 5 (exact:
    # 1, the minimum at u = m/gamma) and the local exponent 2.028 where it is 2 - 4e-14
    # (the values checked at 60 digits with mpmath)
    r = theory.penalties.relu_ptft_penalty(m, rho, m0, gamma)
    if exact is not None:
        assert r == pytest.approx(exact, rel=1e-12)
    else:
        d = theory.penalties.relu_ptft_dlog_penalty(m, rho, m0, gamma)
        assert d == pytest.approx(1.9999999999999627, rel=1e-13)
