"""Tests for :mod:`transferkit.sweep`: grid assembly, the on-disk cache, resumption, Dask.

The cache is always a temporary folder here (``directory=`` or ``$TRANSFERKIT_CACHE``), never
the repository's ``_build/cache``.  Cell functions are module-level so that they have a
stable name; calls are counted to tell computed cells from cached ones.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from _helpers import assert_same_computation

from transferkit import config, experiments, sweep

CALLS: list = []
FAIL_AT: list = []        # raise on this (1-based) call number, if set


def toy_cell(a, b, c=0.0, scale=1.0):
    """``scale (100 a + 10 b + c)`` and friends; any of ``a, b, c`` may be a 1-d array.

    Vectorised parameters get their own dimension, in the order ``a, b, c``.
    """
    CALLS.append((a, np.copy(b), np.copy(c)))
    if FAIL_AT and len(CALLS) == FAIL_AT[0]:
        raise RuntimeError(f"cell {len(CALLS)} fails")
    vals = [np.asarray(x, dtype=float) for x in (a, b, c)]
    k = sum(v.ndim for v in vals)
    shaped, pos = [], 0
    for v in vals:
        if v.ndim:
            shape = [1] * k
            shape[pos] = v.size
            shaped.append(v.reshape(shape))
            pos += 1
        else:
            shaped.append(v)
    v = scale * (100 * shaped[0] + 10 * shaped[1] + shaped[2])
    return {"v": v, "pair": np.stack([v, -v], axis=-1), "flag": v > 150,
            "count": np.broadcast_to(shaped[0], v.shape).astype(np.int64)}


def bad_shape_cell(a, b):
    return {"v": np.zeros(5)}


def object_cell(a):
    return {"v": np.array([{"x": 1}], dtype=object)}


def not_a_dict_cell(a):
    return [a]


@pytest.fixture(autouse=True)
def _reset(monkeypatch, tmp_path):
    CALLS.clear()
    FAIL_AT.clear()
    monkeypatch.delenv("TRANSFERKIT_SCHEDULER", raising=False)
    monkeypatch.setenv("TRANSFERKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TRANSFERKIT_PROGRESS", "0")


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


A, B, C = [1, 2], [0.5, 1.0, 2.5], [0.0, 0.1, 0.3, 7.0]


def expected_v(scale=1.0):
    a, b, c = np.meshgrid(A, B, C, indexing="ij")
    return scale * (100 * a + 10 * b + c)


def entries(directory):
    return sorted(p for p in Path(directory).rglob("*.npz") if not p.name.startswith("."))


# ---------------------------------------------------------------------------
# grid, assembly and input validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("vec", [(), ("b",), ("c",), ("b", "c"), ("c", "b"), ("a", "c"),
                                 ("a", "b", "c")])
def test_assembly_does_not_depend_on_which_axes_are_vectorised(vec):
    res = sweep.run(toy_cell, sweep.Grid(a=A, b=B, c=C), vectorize=vec, cache=False)
    v = expected_v()
    assert res.shape == (2, 3, 4) and res["v"].shape == (2, 3, 4)
    np.testing.assert_array_equal(res["v"], v)
    np.testing.assert_array_equal(res["pair"], np.stack([v, -v], axis=-1))
    np.testing.assert_array_equal(res["flag"], v > 150)
    assert res["count"].dtype == np.int64
    np.testing.assert_array_equal(res["count"], np.broadcast_to(np.array(A)[:, None, None], v.shape))
    n_calls = int(np.prod([len(x) for n, x in zip("abc", (A, B, C)) if n not in vec]))
    assert len(CALLS) == n_calls == res.computed and res.cached == 0
    assert res.vectorize == tuple(n for n in "abc" if n in vec)
    np.testing.assert_array_equal(res["b"], B)                   # axes are looked up too


def test_dict_grid_fixed_parameters_and_scalar_axis():
    res = sweep.run(toy_cell, {"a": A, "b": 2.0}, fixed={"c": np.float64(0.25), "scale": 2},
                    cache=False)
    assert res.shape == (2, 1) and res["scale"] == 2
    np.testing.assert_array_equal(res["v"][:, 0], 2 * (100 * np.array(A) + 20 + 0.25))
    assert isinstance(CALLS[0][0], int)                          # iterated values: python scalars


@pytest.mark.parametrize("kwargs, match", [
    (dict(grid={"a": []}), "grid axis 'a'"),
    (dict(grid={"a": [[1, 2]]}), "grid axis 'a'"),
    (dict(grid={"a": [object()]}), "grid axis 'a'"),
    (dict(grid={}), "at least one axis"),
    (dict(grid=[1, 2]), "grid must be"),
    (dict(fixed={"a": 1, "b": 1}), "parameter 'a' is both"),
    (dict(vectorize=("z",)), "vectorize names 'z'"),
    (dict(fixed={"zeta": 3}), "parameter 'zeta' is not accepted"),
    (dict(grid={"a": A}), "parameter 'b' of .* is neither"),
    (dict(fixed={"c": {1, 2}}), "fixed parameter 'c'"),
    (dict(fixed={"c": [0.1, object()]}), r"fixed parameter 'c'\[1\]"),
    (dict(fixed={"c": np.array([None])}), "fixed parameter 'c'"),
    (dict(version=""), "version"),
    (dict(version=3), "version"),
    (dict(scheduler="localhost"), "scheduler"),
    (dict(scheduler=3), "scheduler"),
    (dict(scheduler="local:"), "scheduler 'local:N'"),
    (dict(scheduler="local:two"), "scheduler 'local:N'"),
    (dict(scheduler="local:0"), "scheduler 'local:N' workers must be an integer >= 1"),
    (dict(scheduler="local:1000"), "and <= 256"),
    (dict(cache="yes"), "cache"),
])
def test_bad_input_names_the_parameter(kwargs, match):
    kw = dict(grid={"a": A, "b": B}, fixed=None)
    kw.update(kwargs)
    with pytest.raises(ValueError, match=match):
        sweep.run(toy_cell, kw.pop("grid"), **kw)
    assert not CALLS


def test_scheduler_from_the_environment(monkeypatch):
    monkeypatch.setenv("TRANSFERKIT_SCHEDULER", "nowhere")
    with pytest.raises(ValueError, match="TRANSFERKIT_SCHEDULER"):
        sweep.run(toy_cell, {"a": A, "b": B}, cache=False)
    monkeypatch.setenv("TRANSFERKIT_SCHEDULER", "local")
    assert sweep.run(toy_cell, {"a": A, "b": B}, cache=False).computed == 6
    monkeypatch.setenv("TRANSFERKIT_SCHEDULER", "local:-1")
    with pytest.raises(ValueError, match="TRANSFERKIT_SCHEDULER 'local:N' workers"):
        sweep.run(toy_cell, {"a": A, "b": B}, cache=False)


def test_bad_cell_functions_and_outputs():
    with pytest.raises(ValueError, match="func must be a top-level"):
        sweep.run(lambda a: {"v": a}, {"a": A}, cache=False)
    with pytest.raises(ValueError, match="func must be a callable"):
        sweep.run(3, {"a": A}, cache=False)
    with pytest.raises(ValueError, match="output 'v' .* leading dimensions"):
        sweep.run(bad_shape_cell, {"a": A, "b": B}, vectorize="b", cache=False)
    with pytest.raises(ValueError, match="output 'v'"):
        sweep.run(object_cell, {"a": A}, cache=False)
    with pytest.raises(ValueError, match="non-empty dict"):
        sweep.run(not_a_dict_cell, {"a": A}, cache=False)


def test_canonical_keys():
    key = lambda **p: sweep.cell_key(toy_cell, p, version="v")  # noqa: E731
    assert key(a=0.5) == key(a=np.float64(0.5))                  # floats by repr
    assert key(a=0.1) != key(a=np.nextafter(0.1, 1))
    assert key(a=1) != key(a=1.0) and key(a=1) == key(a=np.int32(1))
    assert key(a=True) != key(a=1)
    assert key(a=(1, 2)) == key(a=[1, 2])
    assert key(a={"x": 1, "y": 2}) == key(a={"y": 2, "x": 1})
    x = np.arange(6.0)
    assert key(a=x) == key(a=x.copy()) != key(a=x.astype(np.float32))
    assert key(a=x.reshape(2, 3)) != key(a=x.reshape(3, 2)) != key(a=x)
    assert key(a=x[::2]) == key(a=np.array([0.0, 2.0, 4.0]))    # bytes of the values
    assert key(a=1, b=2) == key(b=2, a=1)
    assert key(a=torch.float64) != key(a=torch.float32)
    assert sweep.cell_key(toy_cell, {"a": 1}, version="v") != sweep.cell_key(toy_cell, {"a": 1}, version="w")
    assert sweep.cell_key(toy_cell, {"a": 1}) == sweep.cell_key(toy_cell, {"a": 1},
                                                              version=sweep.code_version())


def test_default_cache_dir(monkeypatch, tmp_path):
    assert sweep.cache_dir() == (tmp_path / "cache").resolve()
    monkeypatch.delenv("TRANSFERKIT_CACHE")
    monkeypatch.chdir(tmp_path)                                   # not relative to the cwd
    repo = Path(sweep.__file__).resolve().parents[1]
    assert sweep.cache_dir() == repo / "_build" / "cache"


# ---------------------------------------------------------------------------
# the cache
# ---------------------------------------------------------------------------


def test_cache_hit_and_miss(tmp_path):
    grid = sweep.Grid(a=A, b=B, c=C)
    r1 = sweep.run(toy_cell, grid, vectorize="c")
    assert (r1.computed, r1.cached, len(CALLS)) == (6, 0, 6)
    assert len(entries(tmp_path / "cache")) == 6
    r2 = sweep.run(toy_cell, grid, vectorize="c")
    assert (r2.computed, r2.cached, len(CALLS)) == (0, 6, 6)      # no call at all
    for k in r1.keys():
        np.testing.assert_array_equal(r1[k], r2[k])
        assert r1[k].dtype == r2[k].dtype
    assert np.all(r2.seconds >= 0) and r2.seconds.shape == (2, 3)
    # one more value of b: only its cells are computed
    r3 = sweep.run(toy_cell, sweep.Grid(a=A, b=B + [4.0], c=C), vectorize="c")
    assert (r3.computed, r3.cached, len(CALLS)) == (2, 6, 8)
    # another fixed parameter, or another vectorisation: other cells
    r4 = sweep.run(toy_cell, grid, vectorize="c", fixed={"scale": 3.0})
    assert r4.computed == 6
    np.testing.assert_array_equal(r4["v"], expected_v(3.0))
    assert sweep.run(toy_cell, grid, vectorize=("b", "c")).computed == 2
    # cache=False neither reads nor writes
    n = len(entries(tmp_path / "cache"))
    assert sweep.run(toy_cell, grid, vectorize="c", cache=False).computed == 6
    assert len(entries(tmp_path / "cache")) == n


def test_explicit_directory(tmp_path):
    d = tmp_path / "elsewhere"
    sweep.run(toy_cell, {"a": A, "b": B}, directory=d)
    assert len(entries(d)) == 6 and not (tmp_path / "cache").exists()
    assert sweep.run(toy_cell, {"a": A, "b": B}, directory=d).cached == 6


def test_code_version_invalidates(tmp_path, monkeypatch):
    grid = {"a": A, "b": B}
    assert sweep.run(toy_cell, grid, version="a").computed == 6
    assert sweep.run(toy_cell, grid, version="a").computed == 0
    assert sweep.run(toy_cell, grid, version="b").computed == 6
    # the default version is the hash of the package: any change recomputes
    monkeypatch.setattr(sweep, "_package_version", lambda: "code-1")
    assert sweep.run(toy_cell, grid).computed == 6
    assert sweep.run(toy_cell, grid).computed == 0
    monkeypatch.setattr(sweep, "_package_version", lambda: "code-2")
    assert sweep.run(toy_cell, grid).version == "code-2"
    assert len(CALLS) == 24
    # stale entries (versions a, b, code-1) are removed, current ones kept
    assert sweep.clear_cache(stale=True) == 18
    assert sweep.run(toy_cell, grid).cached == 6
    assert sweep.clear_cache(toy_cell) == 6
    assert sweep.run(toy_cell, grid).computed == 6


def test_code_version_hashes_every_module(tmp_path):
    pkg = tmp_path / "pkg"
    shutil.copytree(Path(sweep.__file__).parent, pkg,
                    ignore=shutil.ignore_patterns("__pycache__", "*.mplstyle"))
    v0 = sweep.code_version(pkg)
    assert v0 == sweep.code_version(pkg) and len(v0) == 64
    (pkg / "__pycache__").mkdir(exist_ok=True)
    (pkg / "__pycache__" / "x.py").write_text("ignored")
    (pkg / "notes.txt").write_text("not python")
    assert sweep.code_version(pkg) == v0
    with open(pkg / "theory.py", "a") as f:
        f.write("\n# a comment is a change\n")
    v1 = sweep.code_version(pkg)
    assert v1 != v0
    (pkg / "sub").mkdir()
    (pkg / "sub" / "new.py").write_text("")
    assert sweep.code_version(pkg) not in (v0, v1)                # ** : subpackages too
    with pytest.raises(ValueError, match="root"):
        sweep.code_version(tmp_path / "missing")


def test_crash_during_write_leaves_a_readable_cache(tmp_path, monkeypatch):
    grid = {"a": A, "b": B}
    sweep.run(toy_cell, {"a": [1], "b": B})                        # 3 good entries
    real_replace = os.replace

    def crash(src, dst):
        raise OSError("disk pulled out")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk pulled out"):
        sweep.run(toy_cell, grid)
    monkeypatch.setattr(os, "replace", real_replace)
    files = list((tmp_path / "cache").rglob("*"))
    assert not [p for p in files if p.name.startswith(".tmp-")]   # temp file removed
    assert len(entries(tmp_path / "cache")) == 3
    CALLS.clear()
    res = sweep.run(toy_cell, grid)                                # readable; cell recomputed
    assert (res.cached, res.computed, len(CALLS)) == (3, 3, 3)
    np.testing.assert_array_equal(res["v"], expected_v()[:, :, 0])


def test_killed_process_leaves_no_half_written_entry(tmp_path, monkeypatch):
    """A process SIGKILLed between writing and renaming its entry: the next run recomputes."""
    mod = tmp_path / "crashcells.py"
    mod.write_text(textwrap.dedent("""
        CALLS = []
        def square(x):
            CALLS.append(x)
            return {"y": x * x}
    """))
    child = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(tmp_path)!r})
        import crashcells
        from transferkit import sweep
        sweep.run(crashcells.square, {{"x": [1.0, 2.0, 3.0]}})   # all cells stored
        os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
        sweep.run(crashcells.square, {{"x": [4.0]}})             # killed mid-write
    """)
    env = dict(os.environ, TRANSFERKIT_CACHE=str(tmp_path / "cache"), TRANSFERKIT_PROGRESS="0")
    proc = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == -9, proc.stderr
    tmp = [p for p in (tmp_path / "cache").rglob(".tmp-*")]
    assert len(tmp) == 1 and tmp[0].stat().st_size > 0          # the interrupted write
    assert len(entries(tmp_path / "cache")) == 3
    monkeypatch.syspath_prepend(str(tmp_path))
    import crashcells
    res = sweep.run(crashcells.square, {"x": [1.0, 2.0, 3.0, 4.0]})
    assert crashcells.CALLS == [4.0] and (res.cached, res.computed) == (3, 1)
    np.testing.assert_array_equal(res["y"], [1.0, 4.0, 9.0, 16.0])
    assert sweep.clear_cache(crashcells.square) == 4
    assert not list((tmp_path / "cache").rglob(".tmp-*"))


def _corrupt_truncate(p):
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


def _corrupt_flip(p):
    data = bytearray(p.read_bytes())
    with zipfile.ZipFile(p) as z:
        info = z.getinfo("v.npy")
    h = info.header_offset                                         # local file header
    start = h + 30 + int.from_bytes(data[h + 26:h + 28], "little") \
        + int.from_bytes(data[h + 28:h + 30], "little")
    pos = start + info.file_size - 3
    data[pos] ^= 0xFF                                              # a byte of the stored values
    p.write_bytes(bytes(data))


def _corrupt_empty(p):
    p.write_bytes(b"")


def _corrupt_garbage(p):
    p.write_bytes(os.urandom(300))


def _corrupt_foreign(p):
    """A valid entry of another cell under this name (e.g. a key collision or a copy)."""
    other = [q for q in p.parent.glob("*.npz") if q != p][0]
    shutil.copy(other, p)


def _corrupt_pickle(p):
    """A valid .npz whose member needs pickle: refused, never unpickled."""
    with zipfile.ZipFile(p) as z:
        meta = z.read("__meta__.npy")
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("__meta__.npy", meta)
        with z.open("v.npy", "w") as m:
            np.lib.format.write_array(m, np.array([{"x": 1}], dtype=object), allow_pickle=True)


@pytest.mark.parametrize("corrupt", [_corrupt_truncate, _corrupt_flip, _corrupt_empty,
                                     _corrupt_garbage, _corrupt_foreign, _corrupt_pickle])
def test_corrupted_entry_is_a_miss_and_is_rewritten(tmp_path, corrupt):
    grid = {"a": [1], "b": B}
    ref = sweep.run(toy_cell, grid)
    key = sweep.cell_key(toy_cell, {"a": 1, "b": 1.0})
    path = [p for p in entries(tmp_path / "cache") if p.stem == key][0]
    corrupt(path)
    CALLS.clear()
    with pytest.warns(sweep.CacheWarning, match="1 unreadable or corrupted"):
        res = sweep.run(toy_cell, grid)
    assert (res.cached, res.computed) == (2, 1) and len(CALLS) == 1
    assert CALLS[0][0] == 1 and float(CALLS[0][1]) == 1.0        # the corrupted cell
    for k in ref.keys():
        np.testing.assert_array_equal(res[k], ref[k])
    assert sweep.run(toy_cell, grid).cached == 3                 # rewritten, valid again
    with np.load(path, allow_pickle=False) as z:
        assert json.loads(str(z["__meta__"][()]))["function"].endswith("toy_cell")


def test_resume_after_interruption(tmp_path):
    grid = {"a": A, "b": B}
    FAIL_AT.append(4)
    with pytest.raises(RuntimeError, match="cell 4 fails"):
        sweep.run(toy_cell, grid)
    assert len(entries(tmp_path / "cache")) == 3                   # cells 1-3 are kept
    FAIL_AT.clear()
    CALLS.clear()
    res = sweep.run(toy_cell, grid)
    assert (res.cached, res.computed, len(CALLS)) == (3, 3, 3)   # only the rest
    done = {(a, float(b)) for a, b, _ in CALLS}
    assert done == {(2, 0.5), (2, 1.0), (2, 2.5)}
    np.testing.assert_array_equal(res["v"], expected_v()[:, :, 0])


def test_progress_bar(capsys, monkeypatch):
    grid = {"a": A, "b": B}
    sweep.run(toy_cell, grid)
    assert "cell" not in capsys.readouterr().err                  # TRANSFERKIT_PROGRESS=0
    monkeypatch.setenv("TRANSFERKIT_PROGRESS", "1")
    assert config.progress()
    sweep.run(toy_cell, grid, fixed={"c": 1.0})
    err = capsys.readouterr().err
    assert "6/6" in err and "computed=6" in err and "cached=0" in err
    sweep.run(toy_cell, grid, fixed={"c": 1.0}, desc="toy")
    err = capsys.readouterr().err
    assert "toy" in err and "cached=6" in err
    sweep.run(toy_cell, grid, fixed={"c": 1.0}, progress=False)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------------------
# the linear-transfer cell: same numbers as simulate_grid, locally and on Dask
# ---------------------------------------------------------------------------

LT = dict(d=30, sigma=0.2, draws=4, seed=3)
GAMMAS, THETAS = [0.5, 1.5], np.linspace(0, np.pi / 2, 3)
LT_KEYS = ("scratch", "linear", "scratch_converged", "scratch_steps", "scratch_minnorm_dist",
           "n", "feature_rank")


def _get(r, key):
    """The array of a GridResult that the flat cell key ``key`` names."""
    m, _, what = key.partition("_")
    if key in r.runs:
        return r.risk(key)
    if what in ("converged", "steps") and m in r.runs:
        return getattr(r.runs[m], what)
    return getattr(r, key)


def test_linear_transfer_grid_equals_simulate_grid(tmp_path):
    ref = experiments.deep_linear.simulate_grid(LT["d"], GAMMAS, THETAS, LT["sigma"], draws=LT["draws"],
                          seed=LT["seed"], methods=("scratch", "linear"), progress=False,
                          device=torch.device("cpu"))
    res = experiments.linear_transfer.linear_transfer_grid(LT["d"], GAMMAS, THETAS, LT["sigma"], draws=LT["draws"],
                                     seed=LT["seed"])
    assert res.sweep.computed == 2 and res.risk("scratch").shape == (2, 3, 4)
    assert res.methods == ("scratch", "linear") and res.runs["linear"].converged is None
    for k in LT_KEYS + ("gammas", "thetas"):
        # scratch_minnorm_dist: the distance between two weight vectors of norm about 1 (unit
        # teachers), about 1e-6 here; on a GPU it carries the weights' rounding (1e-16)
        scale = 1.0 if k == "scratch_minnorm_dist" else None
        assert_same_computation(_get(res, k), _get(ref, k), err_msg=k, scale=scale)
    assert res.sweep.computed == 2
    again = experiments.linear_transfer.linear_transfer_grid(LT["d"], GAMMAS, THETAS, LT["sigma"], draws=LT["draws"],
                                       seed=LT["seed"])
    assert again.sweep.cached == 2
    for k in LT_KEYS:
        np.testing.assert_array_equal(_get(again, k), _get(ref, k), err_msg=k)
    # a scalar theta: no leading angle dimension; equal up to rounding (solving one angle
    # or three at once sums in another order)
    one = experiments.linear_transfer.linear_transfer_cell(gamma=0.5, theta=float(THETAS[1]), **LT)
    assert one["linear"].shape == (4,) and one["n"] == 15
    np.testing.assert_allclose(one["linear"], ref.risk("linear")[0, 1], rtol=1e-12)
    np.testing.assert_array_equal(one["scratch"], ref.risk("scratch")[0, 1])
    with pytest.raises(ValueError, match="gamma"):
        experiments.linear_transfer.linear_transfer_grid(LT["d"], [0.5, -1.0], THETAS, LT["sigma"], draws=4)
    with pytest.raises(ValueError, match="theta"):
        experiments.linear_transfer.linear_transfer_grid(LT["d"], GAMMAS, [4.0], LT["sigma"], draws=4)
    with pytest.raises(ValueError, match="sigma"):
        experiments.linear_transfer.linear_transfer_grid(LT["d"], GAMMAS, THETAS, -0.2, draws=4, cache=False)


def test_dask_backend_gives_the_local_numbers(tmp_path):
    distributed = pytest.importorskip("distributed")
    grid = sweep.Grid(gamma=GAMMAS, theta=THETAS)
    local = sweep.run(experiments.linear_transfer.linear_transfer_cell, grid, fixed=LT, vectorize="theta", cache=False)
    # the cluster that TRANSFERKIT_SCHEDULER=local:2 starts (once per process: the test below
    # and the relu chapter's cluster test reuse it instead of starting worker processes again)
    cluster = sweep._local_cluster(distributed, 2)
    with distributed.Client(cluster) as client:
        remote = sweep.run(experiments.linear_transfer.linear_transfer_cell, grid, fixed=LT, vectorize="theta",
                           scheduler=client)
        assert remote.computed == 2
        for k in LT_KEYS:
            np.testing.assert_array_equal(remote[k], local[k], err_msg=k)
        # an address works too; every cell is now in the cache and nothing is sent
        again = sweep.run(experiments.linear_transfer.linear_transfer_cell, grid, fixed=LT, vectorize="theta",
                          scheduler=cluster.scheduler_address)
        assert (again.computed, again.cached) == (0, 2)
        # the workers ran in other processes
        pids = client.run(os.getpid)
        assert os.getpid() not in pids.values() and len(pids) == 2
        # errors on a worker come back
        with pytest.raises(ValueError, match="sigma"):
            sweep.run(experiments.linear_transfer.linear_transfer_cell, grid, fixed=dict(LT, sigma=-1.0),
                      vectorize="theta", scheduler=client)
    # results computed on the cluster were cached here and are read back locally
    cached = sweep.run(experiments.linear_transfer.linear_transfer_cell, grid, fixed=LT, vectorize="theta")
    assert (cached.computed, cached.cached) == (0, 2)
    for k in LT_KEYS:
        np.testing.assert_array_equal(cached[k], local[k], err_msg=k)


# ---------------------------------------------------------------------------
# the fine-tuning grid (paper 000, Fig. 2)
# ---------------------------------------------------------------------------


def test_finetune_grid_equals_simulate_grid_and_is_cached(tmp_path):
    d, gammas, thetas, sigma, draws = 16, [0.5, 1.5], [0.2, 1.0, 1.5], 0.3, 3
    direct = experiments.deep_linear.simulate_grid(d, gammas, thetas, sigma, draws=draws, seed=4, methods=("finetune",),
                             max_steps=2_000_000, progress=False)
    res = experiments.finetuning.finetune_grid(d, gammas, thetas, sigma, draws=draws, seed=4)
    assert res.sweep.computed == 2 and res.risk("finetune").shape == (2, 3, draws)
    for k in ("finetune", "finetune_steps", "finetune_thm52", "finetune_thm52_k"):
        np.testing.assert_allclose(_get(res, k), _get(direct, k), rtol=1e-12, atol=1e-14, err_msg=k)
    np.testing.assert_array_equal(res.n, direct.n)
    # the scratch side is the Fig. 1 sweep of the same samples: paired transferability
    assert res.risk("scratch").shape == (2, 3, draws)
    assert res.methods == ("finetune", "scratch", "linear") and res.scratch_sweep is not None
    lt = experiments.linear_transfer.linear_transfer_grid(d, gammas, thetas, sigma, draws=draws, seed=4)
    assert lt.sweep.computed == 0
    np.testing.assert_array_equal(res.risk("scratch"), lt.risk("scratch"))
    again = experiments.finetuning.finetune_grid(d, gammas, thetas, sigma, draws=draws, seed=4)
    assert (again.sweep.computed, again.sweep.cached) == (0, 2)
    np.testing.assert_array_equal(again.risk("finetune"), res.risk("finetune"))
    one = experiments.finetuning.finetune_cell(d, 0.5, 1.0, sigma, draws=draws, seed=4)
    np.testing.assert_allclose(one["finetune"], res.risk("finetune")[0, 1], rtol=1e-10)


def test_local_worker_processes_give_the_local_numbers(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    grid = sweep.Grid(gamma=GAMMAS, theta=THETAS)
    local = sweep.run(experiments.linear_transfer.linear_transfer_cell, grid, fixed=LT,
                      vectorize="theta", cache=False)
    monkeypatch.setenv("TRANSFERKIT_CACHE", str(tmp_path))
    monkeypatch.setenv("TRANSFERKIT_SCHEDULER", "local:2")      # from the environment
    try:
        remote = sweep.run(experiments.linear_transfer.linear_transfer_cell, grid, fixed=LT,
                           vectorize="theta")
        assert remote.computed == 2
        for k in LT_KEYS:
            np.testing.assert_array_equal(remote[k], local[k], err_msg=k)
        cluster = sweep._LOCAL_CLUSTERS[2]
        assert sweep._local_cluster(distributed, 2) is cluster      # started once per process
        # every cell cached: nothing to compute, no cluster started
        cached = sweep.run(experiments.linear_transfer.linear_transfer_cell, grid, fixed=LT,
                           vectorize="theta", scheduler="local:3")
        assert (cached.computed, cached.cached) == (0, 2) and 3 not in sweep._LOCAL_CLUSTERS
        # a second sweep on the same cluster, same parameter names, other values: the fixed
        # parameters are sent once per sweep under keys of their values, not of their names
        other = dict(LT, sigma=0.5)
        mine = sweep.run(experiments.linear_transfer.linear_transfer_cell, grid, fixed=other,
                         vectorize="theta", cache=False)
        ref = sweep.run(experiments.linear_transfer.linear_transfer_cell, grid, fixed=other,
                        vectorize="theta", cache=False, scheduler="local")
        for k in LT_KEYS:
            np.testing.assert_array_equal(mine[k], ref[k], err_msg=k)
        with distributed_client(cluster) as client:
            pids = client.run(os.getpid)
            threads = client.run(_worker_torch_threads)
        assert os.getpid() not in pids.values() and len(pids) == 2
        assert set(threads.values()) == {1}                         # TRANSFERKIT_THREADS default
    finally:
        for c in sweep._LOCAL_CLUSTERS.values():
            c.close()
        sweep._LOCAL_CLUSTERS.clear()


def _worker_torch_threads():
    import torch
    return torch.get_num_threads()


def distributed_client(cluster):
    import distributed
    return distributed.Client(cluster)
