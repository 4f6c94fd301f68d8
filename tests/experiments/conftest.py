"""Fixtures shared by the experiment tests."""
import pytest


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A sweep cache folder per test module (the second run of an experiment must load it)."""
    return tmp_path_factory.mktemp("cache")
