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
