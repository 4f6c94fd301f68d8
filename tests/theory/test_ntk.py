"""Tests for :mod:`transferkit.theory.ntk`: the Gram matrices of paper 002 (Sec. 6.1) against Monte
Carlo over w ~ N(0, I), the similarity quantities of Thms 1-2, the linearised trajectory and
the wide-network simulation."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transferkit import experiments, models, stats, theory


def _sphere(n, d, seed):
    x = np.random.default_rng(seed).standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_gram_matches_monte_carlo_over_gaussian_w(one_thread):
    """H_ij = E_w[x_i.x_j 1{w.x_i >= 0} 1{w.x_j >= 0}], w ~ N(0, I) (Sec. 6.1)."""
    X = _sphere(4, 5, 0)
    X = np.r_[X, -X[:1], X[:1]]                   # antiparallel and parallel pairs too
    w = np.random.default_rng(1).standard_normal((200_000, 5))
    act = (w @ X.T >= 0).astype(float)            # (draws, n)
    samples = (X @ X.T)[None] * act[:, :, None] * act[:, None, :]
    mean = samples.mean(0)
    se = samples.std(0, ddof=1) / np.sqrt(len(w))
    crit = stats.critical_value(X.shape[0] ** 2, None)
    H = theory.ntk.gram(X)
    assert np.all(np.abs(mean - H) <= crit * se + 1e-12)
    assert np.allclose(np.diag(H), 0.5) and H[0, 4] == 0.0 and np.isclose(H[0, 5], 0.5)


def test_gram_finite_width_from_the_initialisation(one_thread):
    """The empirical Gram of init_two_layer's units (any kappa) converges to H^inf."""
    X = _sphere(5, 3, 2)
    W, _ = models.relu.init_ntk(3, 100_000, 0.3, [0], symmetric=False, device="cpu")
    act = (torch.tensor(X) @ W[0] >= 0).double().numpy()          # (n, m)
    samples = (X @ X.T)[:, :, None] * act[:, None, :] * act[None, :, :]
    se = samples.std(-1, ddof=1) / np.sqrt(act.shape[1])
    crit = stats.critical_value(25, None)
    assert np.all(np.abs(samples.mean(-1) - theory.ntk.gram(X)) <= crit * se + 1e-12)


def test_gram_cross_and_psd():
    XP, XQ = _sphere(6, 4, 3), _sphere(3, 4, 4)
    HPQ = theory.ntk.gram(XP, XQ)
    assert HPQ.shape == (6, 3)
    assert np.allclose(theory.ntk.gram(np.r_[XP, XQ])[:6, 6:], HPQ)
    assert np.linalg.eigvalsh(theory.ntk.gram(XP))[0] > 0


def test_sphere_is_required():
    with pytest.raises(ValueError, match="unit norm"):
        theory.ntk.gram(2 * _sphere(3, 4, 0))
    with pytest.raises(ValueError, match="same number of columns"):
        theory.ntk.gram(_sphere(3, 4, 0), _sphere(3, 5, 0))
    with pytest.raises(ValueError, match="lambda_min"):
        X = _sphere(3, 4, 0)
        theory.ntk.deviation_bound(np.r_[X, X[:1]], np.ones(4))


def test_same_task_transfers_its_labels_exactly():
    """Q = P: y_{P->Q} = H_P^T H_P^{-1} y_P = y_P, both similarity terms vanish."""
    X, y = _sphere(8, 5, 5), np.sign(np.random.default_rng(6).standard_normal(8))
    yPQ = theory.ntk.transformed_labels(X, y, X)
    assert np.allclose(yPQ, y)
    assert theory.ntk.label_discrepancy(y, yPQ) < 1e-20
    assert theory.ntk.deviation_bound(X, y, yPQ) < 1e-8
    H = theory.ntk.gram(X)
    assert np.isclose(theory.ntk.deviation_bound(X, y), np.sqrt(y @ np.linalg.solve(H, y)))
    # swapping the labels doubles the residual: distance twice the scratch one
    assert np.isclose(theory.ntk.deviation_bound(X, -y, yPQ), 2 * theory.ntk.deviation_bound(X, y))


def test_transformed_labels_of_a_stack_of_target_sets():
    """``XQ`` a stack ``(..., n_Q, d)``: each set's labels are those of its own call, bit for
    bit, for vector and matrix labels; an ``XQ`` of one row only is refused."""
    XP, XQ = _sphere(9, 4, 11), _sphere(2 * 3 * 5, 4, 12).reshape(2, 3, 5, 4)
    for yP in (np.random.default_rng(13).standard_normal(9),
               np.random.default_rng(14).standard_normal((9, 2))):
        got = theory.ntk.transformed_labels(XP, yP, XQ)
        assert got.shape == (2, 3, 5) + yP.shape[1:]
        for i in np.ndindex(2, 3):
            np.testing.assert_array_equal(got[i], theory.ntk.transformed_labels(XP, yP, XQ[i]))
    with pytest.raises(ValueError, match="^XQ must be an array of shape"):
        theory.ntk.transformed_labels(XP, np.ones(9), XQ[0, 0, 0])


def test_label_matrices_sum_over_columns():
    XP, XQ = _sphere(7, 4, 7), _sphere(5, 4, 8)
    Y = np.random.default_rng(9).standard_normal((7, 2))
    YQ = np.random.default_rng(10).standard_normal((5, 2))
    YPQ = theory.ntk.transformed_labels(XP, Y, XQ)
    cols = [theory.ntk.deviation_bound(XQ, YQ[:, j], theory.ntk.transformed_labels(XP, Y[:, j], XQ)) ** 2
            for j in range(2)]
    assert np.isclose(theory.ntk.deviation_bound(XQ, YQ, YPQ) ** 2, sum(cols))


def test_deviation_path_rises_to_the_bound():
    X, y = _sphere(6, 4, 11), np.random.default_rng(12).standard_normal(6)
    H = theory.ntk.gram(X)
    eta = 1 / np.linalg.eigvalsh(H)[-1]
    k = np.array([0, 1, 10, 100, 100_000])
    p = theory.ntk.deviation_path(H, y, eta, k)
    assert p[0] == 0 and np.all(np.diff(p) > 0)
    assert np.isclose(p[-1], theory.ntk.deviation_bound(X, y))
    # one step moves the weights by eta Z r, of squared norm eta^2 r^T H r
    assert np.isclose(p[1] ** 2, eta ** 2 * y @ H @ y)
    with pytest.raises(ValueError, match="eta"):
        theory.ntk.deviation_path(H, y, 2.5 * eta, k)
    with pytest.raises(ValueError, match="steps"):
        theory.ntk.deviation_path(H, y, eta, [-1])


def test_init_validation_and_symmetry():
    W, A = models.relu.init_ntk(3, 8, 0.5, [0, 1], device="cpu")
    assert W.shape == (2, 3, 8) and A.shape == (2, 8)
    assert torch.equal(W[:, :, :4], W[:, :, 4:]) and float(A.sum()) == 0
    W2, _ = models.relu.init_ntk(3, 8, 0.5, [0, 1], device="cpu")
    assert torch.equal(W, W2)
    for kwargs, match in (({"m": 7}, "even"), ({"kappa": 0.0}, "kappa"), ({"d": 0}, "d")):
        args = {"d": 3, "m": 8, "kappa": 0.5, "seeds": [0], **kwargs}
        with pytest.raises(ValueError, match=match):
            models.relu.init_ntk(**args)


def test_wide_network_follows_theorem_2(one_thread):
    """Fine-tuning a wide network travels Eq. 2's leading term; the gradient of Thm 1 is
    ||y_Q - y_P->Q||^2.  Finite-width corrections are O(m^{-1/2}) (~1 % here)."""
    XP, XQ = _sphere(6, 8, 13), _sphere(5, 8, 14)
    yP, yQ = np.array([1., -1, 1, -1, 1, -1]), np.array([1., 1, -1, -1, 1])
    out = experiments.ntk_similarity.transfer_experiment(XP, yP, {"q": (XQ, yQ)}, m=20_000, seeds=[0, 1],
                                  tol=1e-6, device=torch.device("cpu"))
    r = out.tasks["q"]
    assert r.converged and out.pretrain.converged.all()
    assert np.allclose(r.dev, r.thm2, rtol=0.05)
    assert np.allclose(r.dev_scratch, r.scratch, rtol=0.05)
    assert np.allclose(r.grad2, r.thm1, rtol=0.05)
    assert np.allclose(r.path[:, -1], r.dev)
    again = experiments.ntk_similarity.transfer_experiment(XP, yP, {"q": (XQ, yQ)}, m=20_000, seeds=[0, 1],
                                    tol=1e-6, device=torch.device("cpu"))
    assert np.array_equal(again.tasks["q"].dev, r.dev)


def test_fit_sphere_map():
    ref = np.random.default_rng(15).random((50, 10))
    f = theory.ntk.fit_sphere_map(ref, 3)
    z = f(ref[:4])
    assert z.shape == (4, 3) and np.allclose(np.linalg.norm(z, axis=1), 1)
    with pytest.raises(ValueError, match="dim"):
        theory.ntk.fit_sphere_map(ref, 11)


def test_similarity_result_holds_the_closed_forms():
    """theory.ntk.similarity returns a frozen SimilarityResult whose fields are Eq. 1, Eq. 2's
    leading term, the scratch term and the smallest Gram eigenvalues (paper 002, Sec. 6)."""
    import dataclasses

    XP, XQ = _sphere(6, 4, 16), _sphere(5, 4, 17)
    yP, yQ = np.random.default_rng(18).standard_normal(6), np.random.default_rng(19).standard_normal(5)
    s = theory.ntk.similarity(XP, yP, XQ, yQ)
    assert isinstance(s, theory.ntk.SimilarityResult)
    assert [f.name for f in dataclasses.fields(s)] == ["yPQ", "thm1", "thm2", "scratch", "lam_P", "lam_Q"]
    yPQ = theory.ntk.transformed_labels(XP, yP, XQ)
    assert np.array_equal(s.yPQ, yPQ)
    assert s.thm1 == theory.ntk.label_discrepancy(yQ, yPQ)
    assert s.thm2 == theory.ntk.deviation_bound(XQ, yQ, yPQ)
    assert s.scratch == theory.ntk.deviation_bound(XQ, yQ)
    assert s.lam_P == np.linalg.eigvalsh(theory.ntk.gram(XP))[0] > 0
    assert s.lam_Q == np.linalg.eigvalsh(theory.ntk.gram(XQ))[0] > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.thm1 = 0.0


# ---------------------------------------------------------------- input contract (issue 15)

def _unit(v):
    v = np.asarray(v, float)
    return v / np.max(np.abs(v))


def test_bad_input_names_the_parameter():
    X = _sphere(4, 3, 20)
    y = np.ones(4)
    cases = [
        (lambda: theory.ntk.label_discrepancy(np.nan, 10**400), "yQ"),   # found by the contract test
        (lambda: theory.ntk.label_discrepancy([1.0], 10**400), "yPQ"),
        (lambda: theory.ntk.label_discrepancy("a", [1.0]), "yQ"),
        (lambda: theory.ntk.label_discrepancy([1.0, 2.0], [1.0]), "same shape"),
        (lambda: theory.ntk.check_labels("y", y, "a"), "n must"),
        (lambda: theory.ntk.gram(np.ones((2, 1, 1)), np.ones((3, 1, 1))), "batch"),
        (lambda: theory.ntk.transformed_labels(X, y, _sphere(3, 5, 21)), "XQ"),
        (lambda: theory.ntk.transformed_labels(X[None], y, X), "^XP must be a 2-d array"),
        (lambda: theory.ntk.deviation_bound(X, y, np.ones((4, 2))), "yPQ"),
        (lambda: theory.ntk.deviation_path(np.zeros((0, 0)), [], 0.1, [1]), "HQ"),
        (lambda: theory.ntk.deviation_path(10**400, y, 0.1, [1]), "HQ"),
        (lambda: theory.ntk.deviation_path([[np.nan]], [1.0], 0.1, [1]), "HQ"),
        (lambda: theory.ntk.deviation_path(theory.ntk.gram(X), y, 0.1, [0.5]), "steps"),
        (lambda: theory.ntk.fit_sphere_map("abc", 2), "x_ref"),
        (lambda: theory.ntk.fit_sphere_map(np.full((3, 2), np.inf), 1), "x_ref"),
        (lambda: theory.ntk.fit_sphere_map(np.eye(3), 2)(np.ones((2, 4))), "x must"),
    ]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()
    with pytest.raises(TypeError, match="n must"):
        theory.ntk.check_labels("y", y, None)


def test_overflow_is_inf_not_nan():
    """Labels near the float range: every closed form is homogeneous in the labels and is
    computed at an exact power-of-two rescaling, so results are the scaled ones bit for bit
    (deviation_path: up to rounding), or inf where they leave the float range; never NaN, no
    numpy OverflowError or warning."""
    XP, XQ = _sphere(6, 4, 22), _sphere(5, 4, 23)
    yP = _unit(np.random.default_rng(24).standard_normal(6))
    yQ = _unit(np.random.default_rng(25).standard_normal(5))
    big = 2.0 ** 1000
    assert theory.ntk.label_discrepancy([1e300], [-1e300]) == np.inf
    s, sb = theory.ntk.similarity(XP, yP, XQ, yQ), theory.ntk.similarity(XP, yP * big, XQ, yQ * big)
    assert np.array_equal(sb.yPQ, s.yPQ * big)
    assert sb.thm2 == s.thm2 * big and sb.scratch == s.scratch * big
    assert sb.thm1 == np.inf                                 # ||.||^2 ~ 2**2000
    assert np.array_equal(theory.ntk.transformed_labels(XP, yP * big, XQ),
                          theory.ntk.transformed_labels(XP, yP, XQ) * big)
    assert theory.ntk.deviation_bound(XQ, yQ * big) == theory.ntk.deviation_bound(XQ, yQ) * big
    top = 1.7e308
    assert theory.ntk.deviation_bound(XQ, yQ * top, -yQ * top) == np.inf
    yPQ = theory.ntk.transformed_labels(XP, yP * top, XQ)    # H_P^-1 y_P leaves the range
    assert not np.isnan(yPQ).any()
    si = theory.ntk.similarity(XP, yP * top, XQ, yQ * top)
    for v in (si.thm1, si.thm2, si.scratch, *np.ravel(si.yPQ)):
        assert not np.isnan(v)
    assert si.thm2 == np.inf or si.thm2 > 1e300
    H = theory.ntk.gram(XQ)
    eta = 1 / np.linalg.eigvalsh(H)[-1]
    p = theory.ntk.deviation_path(H, yQ * top, eta, [0, 1, 10, 10**6])
    assert p[0] == 0 and not np.isnan(p).any() and p[-1] == np.inf
    # (the fallback sums the same terms in another order: equal up to rounding)
    np.testing.assert_allclose(theory.ntk.deviation_path(H, yQ * big, eta, [0, 1, 10]),
                               theory.ntk.deviation_path(H, yQ, eta, [0, 1, 10]) * big, rtol=1e-12)
    # a tiny eigenvalue: c^2 / lambda overflows, times (1 - decay)^2 = 0 at k = 0
    assert np.array_equal(theory.ntk.deviation_path([[1e-320]], [1.0], 1.0, [0, 1]), [0.0, 0.0])


def test_fit_sphere_map_far_from_the_data_scale():
    ref = np.random.default_rng(26).random((20, 6))
    f = theory.ntk.fit_sphere_map(ref, 3)
    g = theory.ntk.fit_sphere_map(ref * 2.0 ** 600, 3)          # huge data: rescaled exactly
    assert np.array_equal(g(ref[:3] * 2.0 ** 600), f(ref[:3]))
    for x in (ref[:2] * 1e305, ref[:2] + 1e-170):               # huge rows, rows near the mean
        z = f(x)
        assert np.all(np.isfinite(z)) and np.allclose(np.linalg.norm(z, axis=1), 1)
    with pytest.raises(ValueError, match="reference mean"):
        f(ref.mean(0)[None])
