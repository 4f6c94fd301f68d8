"""Diagonal linear networks (paper 004) through transferkit.sweep: cache, same numbers."""
import dataclasses

import numpy as np
import pytest

from transferkit.experiments import diagonal_networks as dn

P = dict(D=6, k=2, overlap=1, ns=[2, 4], draws=2, n_aux=8, alpha=0.1, gamma=0.1, seed=3,
         loss_tol=1e-8, mtl_loss_tol=1e-6, max_steps=3000, progress=False)

# tiny budgets: unconverged runs are expected (and flagged in the result)
pytestmark = pytest.mark.filterwarnings("ignore:.*did not reach:UserWarning")


def assert_same(x, y, path="res"):
    if dataclasses.is_dataclass(x):
        assert type(x) is type(y), path
        for f in dataclasses.fields(x):
            assert_same(getattr(x, f.name), getattr(y, f.name), f"{path}.{f.name}")
    elif isinstance(x, np.ndarray):
        assert isinstance(y, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape, path
        np.testing.assert_array_equal(x, y, err_msg=path)
    else:
        assert type(x) is type(y) and x == y, (path, x, y)


def _boom(*args, **kwargs):
    raise AssertionError("trained again instead of loading the cache")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def tasks(one_thread, cache):
    return dn.run_tasks(**P, directory=cache)


def test_shapes(tasks):
    assert tasks.stl.beta.shape == (2, 2, 6) and tasks.mtl.risk.shape == (2, 2)
    assert tasks.qmin_ptft.residual.shape == (2, 2) and tasks.beta_pre.shape == (2, 6)
    assert tasks.pre_converged.dtype == bool and tasks.stl.converged.dtype == bool
    assert list(tasks.methods) == ["stl", "ptft", "mtl"]


def test_second_run_loads_the_cache(tasks, cache, monkeypatch):
    monkeypatch.setattr(dn, "train_diagonal", _boom)
    assert_same(dn.run_tasks(**P, directory=cache), tasks)


def test_without_cache_gives_the_same_numbers(tasks, one_thread):
    assert_same(dn.run_tasks(**P, cache=False), tasks)
