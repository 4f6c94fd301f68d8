"""Diagonal linear networks (paper 004) through transferkit.sweep: cache, same numbers."""
import numpy as np
import pytest

from _helpers import assert_same, trained_again

from transferkit.experiments import diagonal_networks as dn
from transferkit.models.diagonal import min_l12_interpolant

P = dict(D=6, k=2, overlap=1, ns=[2, 4], draws=2, n_aux=8, alpha=0.1, gamma=0.1, seed=3,
         loss_tol=1e-8, mtl_loss_tol=1e-6, max_steps=3000, progress=False)

# tiny budgets: unconverged runs are expected (and flagged in the result)
pytestmark = pytest.mark.filterwarnings("ignore:.*did not reach:UserWarning")


@pytest.fixture(scope="module")
def tasks(one_thread, cache):
    return dn.run_tasks(**P, directory=cache)


def test_shapes(tasks):
    assert tasks.stl.beta.shape == (2, 2, 6) and tasks.mtl.risk.shape == (2, 2)
    assert tasks.qmin_ptft.residual.shape == (2, 2) and tasks.beta_pre.shape == (2, 6)
    assert tasks.pre_converged.dtype == bool and tasks.stl.converged.dtype == bool
    assert list(tasks.methods) == ["stl", "ptft", "mtl"]


def test_second_run_loads_the_cache(tasks, cache, monkeypatch):
    monkeypatch.setattr(dn, "train_diagonal", trained_again)
    assert_same(dn.run_tasks(**P, directory=cache), tasks)


def test_without_cache_gives_the_same_numbers(tasks, one_thread):
    assert_same(dn.run_tasks(**P, cache=False), tasks)


def test_mtl_small_init_shares_the_samples_and_the_mtl_runs(tasks, cache):
    """At the same alpha the per-alpha MTL cell gives the bits of run_tasks' MTL; the
    minimum-l1,2 interpolant interpolates and is never above the teachers' l1,2 norm."""
    keep = ("D", "k", "overlap", "ns", "draws", "n_aux", "seed", "max_steps", "progress")
    r = dn.mtl_small_init(**{k: P[k] for k in keep}, alphas=[P["alpha"], 0.05],
                          mtl_loss_tol=P["mtl_loss_tol"], directory=cache)
    assert r.beta_mtl.shape == (2, 2, 2, 2, 6) and r.steps.shape == (2, 2, 2)
    np.testing.assert_array_equal(r.beta_mtl[0, ..., 1, :], tasks.mtl.beta)
    np.testing.assert_array_equal(r.beta_mtl[0, ..., 0, :], tasks.mtl_aux)
    np.testing.assert_array_equal(r.beta_main, tasks.beta_main)
    assert r.l12_residual.max() < 1e-7
    assert (r.l12_min <= r.l12_true * (1 + 1e-7)).all()
    assert r.distance.shape == (2, 2, 2) and (r.l12_mtl >= r.l12_min * (1 - 1e-7)).all()


def test_min_l12_interpolant_matches_its_definition():
    """A case with a known answer: one task, then l1,2 is l1 (basis pursuit), and two tasks
    with the same rows of X and proportional targets share one support."""
    X = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 1.0]])
    B, res = min_l12_interpolant([X], [X @ np.array([0.0, 1.0, 0.0])])
    np.testing.assert_allclose(B[0], [0.0, 1.0, 0.0], atol=1e-7)
    B, res = min_l12_interpolant([X, X], [X @ np.array([0.0, 1.0, 0.0]), X @ np.array([0.0, 2.0, 0.0])])
    np.testing.assert_allclose(B, [[0.0, 1.0, 0.0], [0.0, 2.0, 0.0]], atol=1e-7)
    with pytest.raises(ValueError, match="same number"):
        min_l12_interpolant([X], [])
    with pytest.raises(ValueError, match="task 0"):
        min_l12_interpolant([X], [np.ones(3)])


# ---------------------------------------------------------------- rescaling before fine-tuning

RP = dict(D=6, k=2, ns=[2, 4], draws=2, n_aux=8, alpha=0.1, gamma=0.1, seed=3, loss_tol=1e-8,
          max_steps=3000, progress=False)


@pytest.fixture(scope="module")
def rescaled(one_thread, cache):
    return dn.rescaling_experiment(**RP, k_main=1, scales=[1.0, 0.5, 0.25], directory=cache)


def test_rescaling_shapes(rescaled):
    r = rescaled
    assert r.beta.shape == (3, 2, 2, 6) and r.qmin_beta.shape == (3, 2, 2, 6)
    for a in (r.risk, r.steps, r.converged, r.qmin_risk, r.qmin_residual, r.aux_fraction,
              r.qmin_aux_fraction, r.distance):
        assert a.shape == (3, 2, 2)
    assert r.beta_pre.shape == (2, 6) and r.pre_converged.shape == (2,)
    assert r.converged.dtype == bool and list(r.scales) == [1.0, 0.5, 0.25]
    assert r.k_main == 1 and (np.count_nonzero(r.beta_main, axis=-1) == 1).all()


def test_rescaling_same_seed_same_numbers(rescaled, cache, monkeypatch):
    assert_same(dn.rescaling_experiment(**RP, k_main=1, scales=[1.0, 0.5, 0.25], cache=False),
                rescaled)
    monkeypatch.setattr(dn, "train_diagonal", trained_again)
    assert_same(dn.rescaling_experiment(**RP, k_main=1, scales=[1.0, 0.5, 0.25],
                                        directory=cache), rescaled)


def test_rescaling_by_one_is_the_chapters_ptft(one_thread):
    """With the whole auxiliary support as main support (k_main = k) the factor s = 1 is
    run_tasks' PT+FT with overlap k, bit for bit, and s = 0.5 is not."""
    keep = {k: v for k, v in RP.items() if k not in ("progress",)}
    t = dn.run_tasks(**keep, overlap=2, cache=False, progress=False)
    r = dn.rescaling_experiment(**RP, k_main=2, scales=[0.5, 1.0], cache=False)
    np.testing.assert_array_equal(r.beta_main, t.beta_main)
    np.testing.assert_array_equal(r.beta_pre, t.beta_pre)
    np.testing.assert_array_equal(r.beta[1], t.ptft.beta)
    np.testing.assert_array_equal(r.risk[1], t.ptft.risk)
    np.testing.assert_array_equal(r.steps[1], t.ptft.steps)
    np.testing.assert_array_equal(r.converged[1], t.ptft.converged)
    np.testing.assert_array_equal(r.qmin_beta[1], t.qmin_ptft.beta)
    assert not np.array_equal(r.beta[0], t.ptft.beta)


def test_nested_task_is_a_subset_of_the_auxiliary_support():
    full = dn.task_data(5, 12, 4, 4, [3, 6], 3, 10)
    assert_same(dn.nested_task_data(5, 12, 4, 4, [3, 6], 3, 10), full)
    d = dn.nested_task_data(5, 12, 4, 2, [3, 6], 3, 10)
    np.testing.assert_array_equal(d.beta_aux, full.beta_aux)
    on = d.beta_main != 0
    assert (on.sum(-1) == 2).all() and (full.beta_aux[on] != 0).all()
    np.testing.assert_array_equal(d.beta_main[on], full.beta_main[on])   # the main task's signs
    jj = np.tile(np.arange(3), 2)
    for x, v, j in zip(d.Xm, d.ym, jj):
        np.testing.assert_allclose(v, x @ d.beta_main[j], rtol=0, atol=1e-12)
    # the kept features differ between draws (a random subset, not a fixed rule)
    assert len({tuple(np.flatnonzero(b)) for b in d.beta_main}) > 1


def test_aux_norm_fraction():
    beta_aux = np.array([1.0, -1.0, 0.0, 0.0])
    beta = np.array([[3.0, 0.0, 4.0, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    f = dn.aux_norm_fraction(beta, beta_aux)
    np.testing.assert_allclose(f[:2], [9 / 25, 1.0])
    assert np.isnan(f[2])


@pytest.mark.parametrize("bad, name", [(dict(k_main=0), "k_main"), (dict(k_main=3), "k_main"),
                                       (dict(scales=[0.0]), "scales"),
                                       (dict(scales=[1.0, np.nan]), "scales"),
                                       (dict(scales=[-0.5]), "scales"),
                                       (dict(scales=[]), "scales")])
def test_rescaling_bad_input_names_the_parameter(bad, name):
    kw = dict(RP, k_main=1, scales=[1.0], cache=False)
    kw.update(bad)
    with pytest.raises(ValueError, match=name):
        dn.rescaling_experiment(**kw)
