"""Shared fixtures of the test suite."""
import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch


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
