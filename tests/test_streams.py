"""transferkit.streams: the one keyed random-stream helper."""
from __future__ import annotations

import numpy as np
import pytest

from transferkit.streams import keyed_rng


def test_keyed_rng_is_numpy_default_rng_of_the_key():
    a = keyed_rng(3, 1, np.int64(2), 0).standard_normal(5)
    b = np.random.default_rng([3, 1, 2, 0]).standard_normal(5)
    assert np.array_equal(a, b)
    assert np.array_equal(keyed_rng(7.0, 2.0).random(3), keyed_rng(7, 2).random(3))


@pytest.mark.parametrize("args, name", [((-1,), "seed"), ((1.5,), "seed"), (("a",), "seed"),
                                        ((None,), "seed"), ((True,), "seed"), ((0, 1, -2), "key\\[1\\]")])
def test_keyed_rng_refuses_non_integers_naming_them(args, name):
    with pytest.raises(ValueError, match=f"^{name} must be an integer >= 0"):
        keyed_rng(*args)


def test_trailing_zeros_of_a_key_do_not_change_the_stream():
    """numpy's SeedSequence ignores trailing zeros (the keyed_rng docstring warns of it):
    a key extended by 0 is the same stream, extended by a non-zero entry another one."""
    draw = lambda *key: keyed_rng(5, *key).standard_normal(6)  # noqa: E731
    np.testing.assert_array_equal(draw(2, 0), draw(2))
    np.testing.assert_array_equal(draw(2, 0, 0), draw(2))
    assert not np.any(draw(2, 0, 1) == draw(2)) and not np.any(draw(2, 1) == draw(2))
