"""Helpers shared by several test modules (imported as ``from _helpers import ...``)."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import resource
import signal
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from transferkit.models.device import default_device

REPO = Path(__file__).resolve().parents[1]
BOOK_ENV_VAR = "TRANSFERKIT_BOOK_HTML"


def built_book_dir() -> Path:
    """The built book to check: ``$TRANSFERKIT_BOOK_HTML`` (must exist) or ``_build/html``.

    Fails when the variable names a missing folder; skips when it is unset and no book
    has been built (``make test`` builds one and sets the variable).
    """
    value = os.environ.get(BOOK_ENV_VAR)
    if value:
        path = Path(value)
        if not path.is_absolute():
            path = Path.cwd() / path
        if not path.is_dir():
            pytest.fail(f"{BOOK_ENV_VAR}={value} is set but {path} is not a folder: "
                        "build the book first")
        return path
    path = REPO / "_build" / "html"
    if not path.is_dir():
        pytest.skip(f"no built book at {path} (run `make book`, or set {BOOK_ENV_VAR}); "
                    "`make test` builds one and runs this test on it")
    return path


def hessian_norm(Ws, Sig, bhat) -> float:
    """Largest |eigenvalue| of the Hessian of 1/2 (beta - bhat)^T Sig (beta - bhat) in all
    weights of one (unbatched) deep linear network, by autograd."""
    shapes = [W.shape for W in Ws]
    sizes = [int(np.prod(s)) for s in shapes]

    def loss(flat):
        mats, i = [], 0
        for s, k in zip(shapes, sizes):
            mats.append(flat[i:i + k].reshape(s))
            i += k
        prod = mats[0]
        for W in mats[1:]:
            prod = prod @ W
        diff = prod[:, 0] - bhat
        return 0.5 * diff @ Sig @ diff

    H = torch.autograd.functional.hessian(loss, torch.cat([W.reshape(-1) for W in Ws]))
    return float(torch.linalg.eigvalsh(H).abs().max())


# ---------------------------------------------------------------------------
# hypothesis: one deterministic profile for every property test
# ---------------------------------------------------------------------------

def _hypothesis_home():
    from hypothesis.configuration import set_hypothesis_home_dir

    # hypothesis keeps a cache (constants found in the code) in ./.hypothesis: keep it in _build/
    set_hypothesis_home_dir(str(REPO / "_build" / ".hypothesis"))


_hypothesis_home()
HYPOTHESIS_EXPLORE = os.environ.get("TRANSFERKIT_HYPOTHESIS") == "explore"


def cfg(max_examples: int):
    """Hypothesis settings: derandomized, no database, no deadline (CI); ten times the
    examples and random draws with ``TRANSFERKIT_HYPOTHESIS=explore``."""
    from hypothesis import HealthCheck, settings

    return settings(derandomize=not HYPOTHESIS_EXPLORE, database=None, deadline=None,
                    max_examples=max_examples * (10 if HYPOTHESIS_EXPLORE else 1),
                    print_blob=True, suppress_health_check=[HealthCheck.too_slow])


def check_figure(fig, n_axes: int) -> None:
    """``fig`` is a matplotlib Figure with ``n_axes`` axes that draws without error; closed."""
    assert isinstance(fig, Figure)
    assert len(fig.axes) == n_axes
    fig.canvas.draw()
    plt.close(fig)


def close_after(fig, check) -> None:
    """Draw ``fig``, run ``check(fig)`` (its assertions), and close the figure whatever
    happens."""
    try:
        fig.canvas.draw()
        check(fig)
    finally:
        plt.close(fig)


def assert_same(x, y, path="res"):
    """Bitwise equality of nested results (dataclasses, lists, tuples, arrays, scalars).

    Used to check that a result loaded from the sweep cache is the one computed.
    """
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


def assert_same_computation(actual, desired, err_msg="", scale=None):
    """``actual``, computed by transferkit on its default device, equals ``desired``, the same
    computation done on the CPU: bit for bit when the default device is the CPU; on a GPU,
    floating-point arrays to rounding (1e-12 relative to ``scale``, by default the largest
    entry of ``desired``), since cuBLAS sums in another order than the CPU (DEVELOPERS.md,
    "Determinism, CPU and GPU"). A difference of nearby quantities (a distance between two
    close weight vectors) passes the size of those quantities as ``scale``. Integer and
    boolean arrays (step counts, flags) are compared exactly on every device."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    if default_device().type == "cpu" or not np.issubdtype(desired.dtype, np.floating):
        np.testing.assert_array_equal(actual, desired, err_msg=err_msg)
        return
    if scale is None:
        scale = float(np.max(np.abs(desired), initial=0.0))
    np.testing.assert_allclose(actual, desired, rtol=1e-12, atol=1e-12 * scale, err_msg=err_msg)


def trained_again(*args, **kwargs):
    """Stand-in for a trainer that must not run (monkeypatched in while loading a cache)."""
    raise AssertionError("trained again instead of loading the cache")


#: Marker for tests that need the LeNet chapter's data sets: the session fixture
#: ``lenet_data`` (``conftest.py``) skips them when MNIST, Fashion-MNIST or the digits are
#: not installed, loading the data only when such a test runs.
needs_data = pytest.mark.usefixtures("lenet_data")


def check_presets(presets, cls, tuples, frozen_field):
    """A chapter's presets: exactly ``paper`` and ``smoke``, each a ``cls``, the fields named
    in ``tuples`` tuples (hashable sweep parameters), and frozen (setting ``frozen_field``
    raises)."""
    assert set(presets) == {"paper", "smoke"}
    for p in presets.values():
        assert isinstance(p, cls)
        for name in tuples:
            assert isinstance(getattr(p, name), tuple), name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(presets["paper"], frozen_field, getattr(presets["paper"], frozen_field))


@contextlib.contextmanager
def time_limit(seconds):
    """Fail with a TimeoutError (instead of hanging) when the body runs longer than ``seconds``
    (``signal.alarm``; a guard against hangs, not a timing assertion)."""
    def _raise(signum, frame):
        raise TimeoutError(f"no result within {seconds} s")
    old = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_cli_in_process(argv, seconds=30):
    """``transferkit.cli.main(argv)`` with stdout and stderr captured and warnings silenced:
    ``(exit status, stdout, stderr)``.  The same code as ``python -m transferkit`` without a
    fresh interpreter (``tests/test_cli.py`` runs the real entry points)."""
    from transferkit import cli

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with time_limit(seconds):
            try:
                code = cli.main(list(argv))
            except SystemExit as exc:  # --help / --version
                code = exc.code
    return code, out.getvalue(), err.getvalue()


def gamma_k(k, dtype=torch.float32):
    r"""The rounding bound :math:`\gamma_k = ku/(1-ku)` of a sum of ``k`` products in
    ``dtype``, :math:`u` its unit roundoff (Higham, *Accuracy and Stability of Numerical
    Algorithms*, 2nd ed., Sec. 3.1)."""
    u = torch.finfo(dtype).eps / 2
    return k * u / (1 - k * u)


@contextlib.contextmanager
def memory_cap(extra: int):
    """Lower the soft address-space limit to the current size plus ``extra`` (Linux), and
    restore it after."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        soft = None
    cap = None if soft is None else size + extra
    if cap is not None and hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if cap is not None and soft != resource.RLIM_INFINITY and soft <= cap:
        cap = None                                              # already below
    if cap is not None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        if cap is not None:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
