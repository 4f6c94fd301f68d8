"""Paper 003, Fig. 1c (STL against PT+FT, ReLU) through transferkit.sweep: cache, same numbers."""
import dataclasses

import numpy as np
import pytest

from transferkit.experiments import ptft_relu

P = dict(d=6, rho=0.5, magnitude=1.0, ns=[4, 8], draws=2, width=5, units=2, n_aux=16, n_test=30,
         seed=1, max_steps=200, pre_max_steps=300, progress=False)

# tiny budgets: unconverged runs are expected (and flagged in the result)
pytestmark = pytest.mark.filterwarnings("ignore:.*did not reach:UserWarning")


def assert_same(x, y, path="res"):
    if dataclasses.is_dataclass(x):
        assert type(x) is type(y), path
        for f in dataclasses.fields(x):
            assert_same(getattr(x, f.name), getattr(y, f.name), f"{path}.{f.name}")
    elif isinstance(x, (list, tuple)):
        assert type(x) is type(y) and len(x) == len(y), path
        for i, (u, v) in enumerate(zip(x, y)):
            assert_same(u, v, f"{path}[{i}]")
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
def se(one_thread, cache):
    return ptft_relu.run_sample_efficiency(**P, directory=cache)


def test_shapes(se):
    assert se.stl.error.shape == (2, 2) and se.ptft.W.shape == (2, 2, 5, 6)
    assert se.W_pre.shape == (2, 5, 6) and se.X_test.shape == (2, 30, 6)
    assert len(se.teachers) == 2 and len(se.teachers[0]) == 4
    np.testing.assert_array_equal(se.teachers[1][3], np.full(2, 1.0))


def test_second_run_loads_the_cache(se, cache, monkeypatch):
    monkeypatch.setattr(ptft_relu, "train_units", _boom)
    assert_same(ptft_relu.run_sample_efficiency(**P, directory=cache), se)


def test_without_cache_gives_the_same_numbers(se, one_thread):
    assert_same(ptft_relu.run_sample_efficiency(**P, cache=False), se)
