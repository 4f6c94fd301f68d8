"""Shared fixtures of the test suite."""
import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch

from transferkit import data


@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors: one intra-op thread avoids oversubscription on shared CPUs."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(autouse=True)
def matplotlib_state():
    """Every test starts from the same matplotlib settings: a test that applies the book's
    style (a CLI run calls ``figures.plotting.use_style``) must not change what the next
    one draws; figures left open are closed."""
    with matplotlib.rc_context():
        yield
    plt.close("all")


@pytest.fixture(scope="session")
def lenet_data():
    """Skips the test unless MNIST, Fashion-MNIST and the 28x28 digits are installed
    (``make data``); used through ``_helpers.needs_data``."""
    try:
        data.load_mnist(), data.load_fashion_mnist(), data.load_digits_28()
    except (data.DataNotFoundError, FileNotFoundError):
        pytest.skip("MNIST / Fashion-MNIST / digits not installed (make data)")
