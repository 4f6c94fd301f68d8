"""Run-time configuration: scale, progress bars and torch CPU threads."""
from __future__ import annotations

import os

import pytest
import torch

from transferkit import config
from transferkit.models import device


def test_threads_default_is_one(monkeypatch):
    monkeypatch.delenv("TRANSFERKIT_THREADS", raising=False)
    assert config.threads() == 1


def test_threads_reads_the_variable_and_the_argument(monkeypatch):
    monkeypatch.setenv("TRANSFERKIT_THREADS", " 3 ")
    assert config.threads() == 3
    assert config.threads(2) == 2          # an argument wins over the variable


@pytest.mark.parametrize("raw", ["0", "-1", "x", "2.5", "", "1025"])
def test_threads_refuses_a_bad_variable_naming_it(monkeypatch, raw):
    monkeypatch.setenv("TRANSFERKIT_THREADS", raw)
    with pytest.raises(ValueError, match="TRANSFERKIT_THREADS must be an integer >= 1 and <= 1024"):
        config.threads()


@pytest.mark.parametrize("value, exc", [(0, ValueError), (1025, ValueError), (1.5, ValueError),
                                        (float("nan"), ValueError), (True, TypeError),
                                        ("2", TypeError), ([2], TypeError)])
def test_threads_refuses_a_bad_argument_naming_it(value, exc):
    with pytest.raises(exc, match="threads must be an integer"):
        config.threads(value)


def test_use_threads_sets_torch_and_returns_the_previous_count(monkeypatch):
    start = torch.get_num_threads()
    try:
        monkeypatch.setenv("TRANSFERKIT_THREADS", "2")
        torch.set_num_threads(1)
        assert device.use_threads() == 1 and torch.get_num_threads() == 2
        assert device.use_threads(1) == 2 and torch.get_num_threads() == 1
        with pytest.raises(ValueError, match="threads must be"):
            device.use_threads(0)
        assert torch.get_num_threads() == 1                 # refused before any change
    finally:
        torch.set_num_threads(start)


def test_use_threads_sets_the_blas_and_openmp_pools_too():
    """numpy's and scipy's OpenBLAS (and OpenMP) follow the torch count: one thread each by
    default, so that a busy neighbour does not stall their spinning threads."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import scipy.linalg  # noqa: F401  (loads scipy's own BLAS, so that it is in the pools)

    start = torch.get_num_threads()
    try:
        for n in (2, 1):
            device.use_threads(n)
            pools = threadpoolctl.threadpool_info()
            blas = [p["num_threads"] for p in pools if p["user_api"] == "blas"]
            # a single-threaded build (torch's bundled OpenBLAS) stays at 1
            assert n in blas and all(k <= n for k in blas), pools
            assert all(p["num_threads"] <= n for p in pools), pools
    finally:
        device.use_threads(start)


def test_cli_restores_the_thread_count(monkeypatch, capsys):
    from transferkit import cli
    start = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        monkeypatch.setenv("TRANSFERKIT_THREADS", "1")
        assert cli.main(["theory", "linear", "--gamma", "0.5", "--theta", "0.3", "--sigma", "0.2"]) == 0
        assert torch.get_num_threads() == 2
        monkeypatch.setenv("TRANSFERKIT_THREADS", "0")
        assert cli.main(["theory", "linear", "--gamma", "0.5", "--theta", "0.3", "--sigma", "0.2"]) == 2
        assert "TRANSFERKIT_THREADS must be" in capsys.readouterr().err
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(start)


# ---------------------------------------------------------------- TRANSFERKIT_DEVICE

def test_device_default_is_auto_and_auto_follows_cuda(monkeypatch):
    monkeypatch.delenv("TRANSFERKIT_DEVICE", raising=False)
    assert config.device() == "auto"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device.default_device() == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert device.default_device() == torch.device("cuda")


def test_device_cpu_wins_over_a_gpu(monkeypatch):
    monkeypatch.setenv("TRANSFERKIT_DEVICE", " CPU ")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert config.device() == "cpu"
    assert device.default_device() == torch.device("cpu")
    assert device.as_tensor([1.0]).device == torch.device("cpu")


def test_device_cuda_without_a_gpu_is_refused_naming_the_variable(monkeypatch):
    monkeypatch.setenv("TRANSFERKIT_DEVICE", "cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="TRANSFERKIT_DEVICE is 'cuda' but torch sees no CUDA"):
        device.default_device()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert device.default_device() == torch.device("cuda")


@pytest.mark.parametrize("raw", ["gpu", "", "cuda:0", "mps"])
def test_device_refuses_a_bad_variable_naming_it(monkeypatch, raw):
    monkeypatch.setenv("TRANSFERKIT_DEVICE", raw)
    with pytest.raises(ValueError, match=r"TRANSFERKIT_DEVICE must be one of \('auto', 'cpu', 'cuda'\)"):
        device.default_device()


def test_environment_sets_then_restores_also_on_error(monkeypatch):
    """``config.environment`` (``transferkit notebook``, ``benchmarks/_record.py``): the
    variables hold inside the block; afterwards a set one has its old value and an unset one
    is unset again, also when the block raises."""
    monkeypatch.setenv("TK_TEST_SET", "old")
    monkeypatch.delenv("TK_TEST_UNSET", raising=False)
    with pytest.raises(RuntimeError):
        with config.environment(TK_TEST_SET="new", TK_TEST_UNSET="x"):
            assert os.environ["TK_TEST_SET"] == "new" and os.environ["TK_TEST_UNSET"] == "x"
            raise RuntimeError
    assert os.environ["TK_TEST_SET"] == "old" and "TK_TEST_UNSET" not in os.environ


def test_environment_refuses_a_value_that_is_not_a_str():
    with pytest.raises(TypeError, match=r"^TK_TEST_INT must be a str"):
        with config.environment(TK_TEST_INT=3):
            pass
    assert "TK_TEST_INT" not in os.environ
