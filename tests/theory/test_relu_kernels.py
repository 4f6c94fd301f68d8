"""Tests of :mod:`transferkit.theory.relu`: closed forms against Monte Carlo, the edge cases
(parallel, antiparallel, zero rows), and property-based contracts (issue #9):
symmetry, positive semi-definiteness, homogeneity, limits, and ``ValueError`` naming the
parameter for bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import cfg
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from transferkit import theory
from transferkit.stats import critical_value

# ---------------------------------------------------------------------------
# Monte Carlo
# ---------------------------------------------------------------------------

def _mc(f, A, B, draws, rng):
    """Per-draw products f(A x) f(B x), shape (draws, N, M)."""
    Z = rng.standard_normal((draws, A.shape[-1]))
    FA, FB = f(Z @ A.T), f(Z @ B.T)
    return FA[:, :, None] * FB[:, None, :]


@pytest.mark.parametrize("name", ["relu_kernel", "arccos_kernel1", "arccos_kernel0"])
def test_kernels_match_monte_carlo(name):
    rng = np.random.default_rng(1)
    d = 6
    A = rng.standard_normal((4, d)) * rng.uniform(0.2, 3.0, (4, 1))
    B = np.vstack([A[0] * 2.5, -A[1], rng.standard_normal((2, d)), A[2] + 1e-3 * A[3]])
    draws = 200_000
    f = (lambda z: np.maximum(z, 0.0)) if name != "arccos_kernel0" else (lambda z: (z > 0) * 1.0)
    samples = _mc(f, A, B, draws, rng)
    mean, se = samples.mean(0), samples.std(0, ddof=1) / math.sqrt(draws)
    K = getattr(theory.relu, name)(A, B)
    crit = critical_value(K.size, draws)
    assert np.all(np.abs(mean - K) <= crit * se + 1e-12), np.max(np.abs(mean - K) / (se + 1e-300))


def test_edge_cases_exact():
    x = np.array([[3.0, 4.0, 0.0]])
    assert theory.relu.relu_kernel(x, 2 * x)[0, 0] == pytest.approx(5 * 10 / 2, rel=1e-15)
    assert theory.relu.relu_kernel(x, -x)[0, 0] == 0.0
    assert theory.relu.arccos_kernel0(x, x)[0, 0] == 0.5
    assert theory.relu.arccos_kernel0(x, -x)[0, 0] == 0.0
    z = np.zeros((1, 3))
    assert theory.relu.relu_kernel(x, z)[0, 0] == 0.0 and theory.relu.relu_kernel(z, z)[0, 0] == 0.0
    assert theory.relu.arccos_kernel0(x, z)[0, 0] == 0.25
    # cosine rounding above 1 must not give NaN
    v = np.array([[0.1, 0.2, 0.3]])
    assert np.isfinite(theory.relu.relu_kernel(v * 7.0, v * 3.0)).all()
    assert theory.relu.safe_arccos(1 + 1e-12) == 0.0 and theory.relu.safe_arccos(-1 - 1e-12) == math.pi
    # orthogonal unit vectors: 1 / (2 pi)
    e = np.eye(3)
    assert theory.relu.relu_kernel(e[:1], e[1:2])[0, 0] == pytest.approx(1 / (2 * math.pi), rel=1e-14)


def test_batch_broadcasting():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((2, 3, 5, 4))
    B = rng.standard_normal((3, 6, 4))
    K = theory.relu.relu_kernel(A, B)
    assert K.shape == (2, 3, 5, 6)
    np.testing.assert_allclose(K[1, 2], theory.relu.relu_kernel(A[1, 2], B[2]), rtol=1e-14)


def test_ntk_matches_monte_carlo():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((3, 5))
    m = 400_000
    W = rng.standard_normal((m, 5))
    Z = X @ W.T
    emp = (np.maximum(Z, 0) @ np.maximum(Z, 0).T + (X @ X.T) * ((Z > 0) * 1.0 @ (Z > 0).T)) / m
    np.testing.assert_allclose(theory.relu.relu_ntk_kernel(X, X), emp, rtol=0.02, atol=0.02)


# ---------------------------------------------------------------------------
# property-based contracts (issue #9)
# ---------------------------------------------------------------------------

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@st.composite
def rows(draw, n_max=6, d_max=5, d=None):
    d = d if d is not None else draw(st.integers(1, d_max))
    n = draw(st.integers(1, n_max))
    return draw(hnp.arrays(np.float64, (n, d), elements=finite))


@st.composite
def row_pairs(draw):
    A = draw(rows())
    B = draw(rows(d=A.shape[1]))
    return A, B


KERNELS = [theory.relu.relu_kernel, theory.relu.arccos_kernel1, theory.relu.arccos_kernel0,
           theory.relu.relu_ntk_kernel]


@cfg(60)
@given(row_pairs())
def test_symmetry_and_finiteness(pair):
    A, B = pair
    for k in KERNELS:
        K = k(A, B)
        assert K.shape == (A.shape[0], B.shape[0]) and np.isfinite(K).all()
        np.testing.assert_allclose(K, k(B, A).T, rtol=1e-12, atol=1e-12 * (1 + np.abs(K).max()))


@cfg(60)
@given(rows(n_max=8))
def test_gram_psd(A):
    for k in KERNELS:
        G = k(A, A)
        lam = np.linalg.eigvalsh((G + G.T) / 2)
        assert lam.min() >= -1e-9 * max(1.0, np.abs(lam).max())


@cfg(60)
@given(row_pairs(), st.floats(1e-3, 1e3), st.floats(1e-3, 1e3))
def test_homogeneity(pair, s, t):
    A, B = pair
    K1 = theory.relu.relu_kernel(A, B)
    np.testing.assert_allclose(theory.relu.relu_kernel(s * A, t * B), s * t * K1,
                               rtol=1e-9, atol=1e-12 * s * t * (1 + np.abs(K1).max()))
    # k0 is scale-free, except that a row whose norm underflows to 0 counts as a zero row
    # (k0 = 1/4, the module's convention): compare only rows that scaling keeps on one side
    zero = [(np.linalg.norm(X, axis=1) == 0) for X in (A, B)]
    same = [(np.linalg.norm(c * X, axis=1) == 0) == z for X, c, z in zip((A, B), (s, t), zero)]
    K0 = theory.relu.arccos_kernel0(A, B)
    keep = same[0][:, None] & same[1][None, :]
    np.testing.assert_allclose(theory.relu.arccos_kernel0(s * A, t * B)[keep], K0[keep], atol=1e-9)


@cfg(60)
@given(rows(n_max=4, d_max=5), st.floats(1e-3, 1e3))
def test_parallel_and_antiparallel_limits(A, s):
    norms = np.linalg.norm(A, axis=1)
    Kp = np.diag(theory.relu.relu_kernel(A, s * A))
    np.testing.assert_allclose(Kp, s * norms ** 2 / 2, rtol=1e-9, atol=1e-300)
    assert np.all(np.diag(theory.relu.relu_kernel(A, -s * A)) == 0.0)
    K0 = np.diag(theory.relu.arccos_kernel0(A, s * A))
    assert np.all(K0[norms > 0] == 0.5) and np.all(K0[norms == 0] == 0.25)
    assert np.all(np.diag(theory.relu.arccos_kernel0(A, -s * A))[norms > 0] == 0.0)


@cfg(40)
@given(st.floats(-2.0, 2.0))
def test_safe_arccos_in_range(c):
    t = theory.relu.safe_arccos(c)
    assert 0.0 <= t <= math.pi


@pytest.mark.parametrize("bad", [
    np.ones(3),                      # not 2-d
    np.ones((0, 2)),                 # no rows
    np.array([[1.0, np.nan]]),       # non-finite
    np.array([[1.0, np.inf]]),
    "abc",
], ids=["1d", "empty", "nan", "inf", "str"])
@pytest.mark.parametrize("k", KERNELS)
def test_bad_input_names_parameter(k, bad):
    first, second = ("W", "V") if k is theory.relu.relu_kernel else ("X", "Y")
    with pytest.raises(ValueError, match=f"^{first}"):
        k(bad, np.ones((2, 2)))
    with pytest.raises(ValueError, match=f"^{second}"):
        k(np.ones((2, 2)), bad)


def test_relu_kernel_names_w_v_and_mismatched_d():
    with pytest.raises(ValueError, match=r"^W"):
        theory.relu.relu_kernel(np.array([[np.nan]]), np.ones((1, 1)))
    with pytest.raises(ValueError, match=r"^V"):
        theory.relu.relu_kernel(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"^Y"):
        theory.relu.arccos_kernel1(np.ones((2, 2, 3)), np.ones((3, 2, 3)))


# ---------------------------------------------------------------------------
# one kernel formula for numpy and torch (issue 14)
# ---------------------------------------------------------------------------

def test_kernel_terms_are_one_formula_for_numpy_and_torch():
    """snap_cosines and arccos_kernel_terms are one formula on numpy arrays and on torch
    tensors (the torch kernel of transferkit.models.relu uses them with xp=torch): the same
    bits for the snapping, and up to the last bits of the two libraries' arccos elsewhere."""
    import torch

    from transferkit.theory.relu import arccos_kernel_terms, snap_cosines

    c = np.concatenate([np.random.default_rng(5).uniform(-1, 1, 200),
                        [1.0, -1.0, 1 - 1e-16, -1 + 1e-16, 1 + 1e-16, 0.0, 1 - 1e-14]])
    cn = snap_cosines(c)
    ct = snap_cosines(torch.from_numpy(c), xp=torch)
    assert np.array_equal(cn, ct.numpy())
    assert cn[-7:-2].tolist() == [1.0, -1.0, 1.0, -1.0, 1.0] and cn[-1] < 1.0
    # the last bit of an angle in [0, pi] is up to spacing(pi) = 4.4e-16, and the terms are
    # O(1) sums of it (j1 = sin t + (pi - t) cos t cancels near t = pi): two ulps of pi
    last_bits = 2 * np.spacing(np.pi)
    for a, b in zip(arccos_kernel_terms(cn), arccos_kernel_terms(ct, xp=torch)):
        np.testing.assert_allclose(a, b.numpy(), rtol=4e-16, atol=last_bits)
    t, s, j1 = arccos_kernel_terms(cn)
    np.testing.assert_allclose(j1, np.sin(t) + (np.pi - t) * np.cos(t), atol=1e-15)
    assert j1[-6] == 0.0 and j1[-7] == np.pi        # antiparallel, parallel


def test_kernel_terms_validate_their_input():
    from transferkit.theory.relu import arccos_kernel_terms, snap_cosines

    with pytest.raises(ValueError, match="c must be finite"):
        snap_cosines([0.5, np.nan])
    with pytest.raises(ValueError, match=r"c must lie in \[-1, 1\]"):
        arccos_kernel_terms(2.0)
    with pytest.raises(TypeError, match="xp must be the numpy or the torch module"):
        arccos_kernel_terms(np.zeros(2), xp="numpy")


def test_beyond_linear_norm_against_monte_carlo():
    """The norm beyond the constant and linear parts, E f^2 - (E f)^2 - ||E[f x]||^2, of a
    random network against its Monte Carlo estimate (tolerance: 4 standard errors of the
    estimate, from the delta method on the per-sample terms); one unit: (1/4 - 1/2pi)|w|^2."""
    rng = np.random.default_rng(21)
    W = rng.standard_normal((2, 5, 3))
    a = rng.standard_normal((2, 5))
    exact = theory.relu.beyond_linear_norm(W, a)
    N = 400_000
    X = rng.standard_normal((N, 3))
    for s in range(2):
        f = np.maximum(X @ W[s].T, 0.0) @ a[s]                       # (N,)
        mf, mfx = f.mean(), (f[:, None] * X).mean(0)
        est = np.mean(f ** 2) - mf ** 2 - np.sum(mfx ** 2)
        # per-sample influence of the three means (delta method)
        infl = f ** 2 - 2 * mf * f - 2 * (f[:, None] * X) @ mfx
        se = infl.std(ddof=1) / math.sqrt(N)
        assert abs(est - exact[s]) < 4 * se, (est, exact[s], se)
    w = rng.standard_normal(4)
    assert theory.relu.beyond_linear_norm(w[None, :], [1.0]) == pytest.approx(
        (0.25 - 1 / (2 * math.pi)) * w @ w, rel=1e-12)
    with pytest.raises(ValueError, match="^a must have shape"):
        theory.relu.beyond_linear_norm(W, a[:, :4])
    with pytest.raises(ValueError, match="^a must be"):
        theory.relu.beyond_linear_norm(W, np.full((2, 5), np.nan))
    # degree four in the entries: huge ones are refused, not turned into inf - inf = NaN
    with pytest.raises(ValueError, match="^W must have entries of magnitude <= 1e"):
        theory.relu.beyond_linear_norm(np.full((1, 2, 2), 1e300), [[1.0, 1.0]])
    with pytest.raises(ValueError, match="^a must have entries of magnitude <= 1e"):
        theory.relu.beyond_linear_norm(np.ones((2, 2)), [1e300, -1e300])
    assert np.isfinite(theory.relu.beyond_linear_norm(np.full((2, 2), 1e50), [1e50, -1e50]))


# ---------------------------------------------------------------------------
# the empirical tangent kernel of one network and its lazy limit
# ---------------------------------------------------------------------------

def _net(rng, H=7, d=4):
    return rng.standard_normal((H, d)), rng.standard_normal(H)


def test_tangent_kernel_is_the_gram_matrix_of_the_gradients():
    """Theta(x, y) = grad_theta f(x) . grad_theta f(y), with the gradients from torch's
    autograd of models.relu.forward (relu'(0) = 0 on both sides)."""
    import torch

    from transferkit import models
    rng = np.random.default_rng(11)
    W, a = _net(rng)
    X, Y = rng.standard_normal((5, 4)), rng.standard_normal((3, 4))

    def jac(Z):
        rows = []
        for z in Z:
            Wt = torch.tensor(W, requires_grad=True)
            at = torch.tensor(a, requires_grad=True)
            out = models.relu.forward(Wt[None], at[None], torch.tensor(z)[None, None])[0, 0]
            gW, ga = torch.autograd.grad(out, (Wt, at))
            rows.append(np.concatenate([gW.numpy().ravel(), ga.numpy()]))
        return np.array(rows)

    np.testing.assert_allclose(theory.relu.tangent_kernel(W, a, X, Y), jac(X) @ jac(Y).T,
                               rtol=1e-12, atol=1e-12)


def test_tangent_kernel_tends_to_the_infinite_width_ntk():
    """At width H with w_h = w~_h / sqrt(H), a_h = a~_h / sqrt(H) (standard normal w~, a~)
    the empirical kernel is the mean of H independent per-unit terms whose expectation is
    relu_ntk_kernel: within 5 Monte Carlo standard errors at every entry (Bonferroni over
    the 6 distinct entries, family-wise 1e-5)."""
    rng = np.random.default_rng(12)
    H, d = 200_000, 5
    X = rng.standard_normal((3, d))
    Wt, at = rng.standard_normal((H, d)), rng.standard_normal(H)
    emp = theory.relu.tangent_kernel(Wt / math.sqrt(H), at / math.sqrt(H), X, X)
    Z = X @ Wt.T                                                         # (3, H)
    terms = (np.maximum(Z, 0)[:, None] * np.maximum(Z, 0)[None]
             + (X @ X.T)[..., None] * (at ** 2 * (Z > 0))[:, None] * (Z > 0)[None])  # (3, 3, H)
    np.testing.assert_allclose(terms.mean(-1), emp, rtol=1e-10)
    se = terms.std(-1, ddof=1) / math.sqrt(H)
    crit = critical_value(6, None, 1e-5)
    assert np.all(np.abs(emp - theory.relu.relu_ntk_kernel(X, X)) <= crit * se)


def test_tangent_kernel_solution_is_the_limit_of_gradient_descent_on_the_linearised_model():
    """Gradient descent on 1/2 ||f(X) + J (theta - theta0) - y||^2 from theta0 reaches the
    closed form's predictions (n < number of weights: it interpolates), and so does the
    closed form when n exceeds the weights (least squares of least norm)."""
    rng = np.random.default_rng(13)
    W, a = _net(rng, H=3, d=2)                                # 9 weights
    for n in (4, 15):
        X, y, Xt = rng.standard_normal((n, 2)), rng.standard_normal(n), rng.standard_normal((6, 2))

        def jac(Z):
            P = Z @ W.T
            return np.concatenate([((P > 0) * a)[:, :, None] * Z[:, None, :]
                                   .repeat(3, 1), np.maximum(P, 0)[:, :, None]], -1).reshape(len(Z), -1)

        f = lambda Z: np.maximum(Z @ W.T, 0) @ a            # noqa: E731
        J = jac(X)
        step = 1.0 / np.linalg.eigvalsh(J.T @ J).max()
        delta = np.zeros(J.shape[1])
        for _ in range(200_000):
            delta -= step * J.T @ (f(X) + J @ delta - y)
        want = f(Xt) + jac(Xt) @ delta
        got = theory.relu.tangent_kernel_solution(W, a, X, y, Xt)
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-8)
        if n < 9:                                             # interpolates the samples
            np.testing.assert_allclose(theory.relu.tangent_kernel_solution(W, a, X, y, X), y,
                                       atol=1e-10)


@pytest.mark.parametrize("kwargs, name", [
    ({"W": np.zeros((3,))}, "W"), ({"W": np.full((3, 2), np.nan)}, "W"),
    ({"a": np.zeros(4)}, "a"), ({"a": "x"}, "a"), ({"X": np.zeros((2, 3))}, "X"),
    ({"y": np.zeros(5)}, "y"), ({"Xt": np.zeros((2, 1))}, "Xt"),
    ({"X": np.full((4, 2), 1e200)}, "X"), ({"a": np.full(3, 1e60)}, "a")])
def test_tangent_kernel_solution_rejects_bad_inputs(kwargs, name):
    args = {"W": np.ones((3, 2)), "a": np.ones(3), "X": np.ones((4, 2)), "y": np.ones(4),
            "Xt": np.ones((2, 2)), **kwargs}
    with pytest.raises(ValueError, match=name):
        theory.relu.tangent_kernel_solution(**args)
    if "y" not in kwargs and "Xt" not in kwargs:
        with pytest.raises(ValueError, match=name):
            theory.relu.tangent_kernel(args["W"], args["a"], args["X"], args["X"])
