"""Shared fixtures of the test suite."""
import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch

from transferkit import data
from transferkit.models.device import use_threads

# Each test process computes on one thread (torch, numpy's and scipy's BLAS, OpenMP), as every
# chapter does (TRANSFERKIT_THREADS overrides): `make test` starts a process per core, and with
# each process's default pools (a thread per core) a numpy-only Monte Carlo test took 258 s on
# a 16-core machine running 14 processes, against 0.24 s here
# (tests/theory/test_deep_linear.py::test_scratch_risk_finite_monte_carlo[n100-d150]).
use_threads()

#: Test files that take longest in `make test` (about 150, 60 and 40 s of one process,
#: 2026-11-27), run first.  `make test` gives each process a whole file at a time in collection order
#: (pytest-xdist ``--dist loadfile --no-loadscope-reorder``); xdist's default order, the
#: files with most tests first, left the browser test (5 tests, about 150 s) for last, and
#: one process waited alone for it for about 100 s.  Only the order changes.
SLOW_FIRST = ("test_browser.py", "test_cli.py", "test_sweep.py")


def pytest_collection_modifyitems(session, config, items):
    """Move the tests of :data:`SLOW_FIRST` to the front (a stable sort: the order within a
    file, and of the other files, is kept)."""
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


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
