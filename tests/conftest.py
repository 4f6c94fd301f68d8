"""Shared fixtures of the test suite."""
import pytest
import torch


@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors: one intra-op thread avoids oversubscription on shared CPUs."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
