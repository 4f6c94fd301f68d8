"""Paper 003, Fig. 1c (STL against PT+FT, ReLU) through transferkit.sweep: cache, same numbers."""
import numpy as np
import pytest

from _helpers import assert_same, trained_again

from transferkit.experiments import ptft_relu

P = dict(d=6, rho=0.5, magnitude=1.0, ns=[4, 8], draws=2, width=5, units=2, n_aux=16, n_test=30,
         seed=1, max_steps=200, pre_max_steps=300, progress=False)

# tiny budgets: unconverged runs are expected (and flagged in the result)
pytestmark = pytest.mark.filterwarnings("ignore:.*did not reach:UserWarning")


@pytest.fixture(scope="module")
def se(one_thread, cache):
    return ptft_relu.run_sample_efficiency(**P, directory=cache)


def test_shapes(se):
    assert se.stl.error.shape == (2, 2) and se.ptft.W.shape == (2, 2, 5, 6)
    assert se.W_pre.shape == (2, 5, 6) and se.X_test.shape == (2, 30, 6)
    assert len(se.teachers) == 2 and len(se.teachers[0]) == 4
    np.testing.assert_array_equal(se.teachers[1][3], np.full(2, 1.0))


def test_second_run_loads_the_cache(se, cache, monkeypatch):
    monkeypatch.setattr(ptft_relu, "train_units", trained_again)
    assert_same(ptft_relu.run_sample_efficiency(**P, directory=cache), se)


def test_without_cache_gives_the_same_numbers(se, one_thread):
    assert_same(ptft_relu.run_sample_efficiency(**P, cache=False), se)
