"""The benchmarks measure what the book runs: the chapter's preset and experiment function.

Each benchmark module (``benchmarks/*.py``, imported here; importing one must run
nothing) names the chapter notebook it times (``CHAPTER``) and the preset dict it uses
(``PRESETS``); the notebook's source says which preset it reads
(``experiments.<module>.<NAME>[SCALE]``), and it must be the very same object.  The
benchmark's ``EXPERIMENT`` must be defined in that chapter's experiments module and, where the
benchmark runs the whole grid, be the function the notebook calls (the ReLU benchmark
times the trainers of ``fig3_experiment`` at the sizes of ``FIG3``).
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
import time
from pathlib import Path

import nbformat
import pytest

import transferkit as tk
from transferkit.experiments.lenet_transfer import (
    LENET_FIG9,
    LENET_FIG9_FULL,
    transfer_cell,
)
from transferkit.experiments.relu_student_teacher import FIG3

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
NOTEBOOKS = ROOT / "notebooks"
TIMING = ["fig1_grid", "fig2_grid", "speed_record", "relu_speed", "lenet_speed",
          "diagonal_speed", "ptft_speed"]
TOOLS = ["book_times", "speed_table", "execute_book", "book_outputs"]


#: The smallest results speed_table.py accepts (its required benchmarks, paper scale).
MINIMAL_RESULTS = {
    "fig1_grid": dict(scale="paper", gammas=21, thetas=19, draws=20, d=500, wall_s=144.0,
                      per_cell_s=0.36, scratch_steps_median=1, scratch_steps_max=2,
                      authors_per_cell_s=380.0, authors_grid_s=1.0, ratio=1055.0,
                      date="2026-01-01", cores=2, threads=1, device="cpu"),
    "fig2_grid": dict(scale="paper", cells=399, draws=20, runs=7980, d=500, wall_s=1.0,
                      cpu_s=1.0, per_cell_s=0.4, steps_median=1, steps_max=2,
                      gamma_at_steps_max=0.9, all_converged=True, authors_per_cell_s=1.0,
                      authors_grid_s=1.0, ratio=2.0),
    "relu_speed": dict(scale="paper", m=1, d=1, m_star=1, seeds=1, n=1, pretrain_it_s=1.0,
                       scratch_it_s=1.0)}


def load(name):
    """Import ``benchmarks/<name>.py`` as a module (without running its ``main``)."""
    key = f"_bench_{name}"
    if key in sys.modules:
        return sys.modules[key]
    if str(BENCH) not in sys.path:                # as when run as a script: its folder first
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(key, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    return mod


def notebook_presets(chapter):
    """(module, name) of each preset the chapter notebook reads as ``experiments.M.NAME[SCALE]``
    (the LeNet chapter reads two: its small protocol and Fig. 9 with SGD at App. A's settings)."""
    src = (NOTEBOOKS / f"{chapter}.py").read_text()
    found = set(re.findall(r"experiments\.(\w+)\.([A-Z][A-Z0-9_]*)\[SCALE\]", src))
    assert found, f"{chapter}: expected a preset read as experiments.M.NAME[SCALE]"
    assert len({m for m, _ in found}) == 1, f"{chapter}: presets of several modules: {found}"
    return found


def test_every_benchmark_is_listed():
    found = [p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("_")]
    assert sorted(found) == sorted(TIMING + TOOLS)


@pytest.mark.parametrize("name", TIMING + TOOLS)
def test_import_runs_nothing(name):
    t0 = time.perf_counter()
    mod = load(name)
    assert time.perf_counter() - t0 < 30
    assert callable(mod.main)
    assert 'if __name__ == "__main__":' in (BENCH / f"{name}.py").read_text()


@pytest.mark.parametrize("name", ["fig1_grid", "fig2_grid", "speed_record", "relu_speed",
                                  "lenet_speed", "diagonal_speed", "ptft_speed"])
def test_benchmark_uses_the_chapters_preset(name):
    mod = load(name)
    read = notebook_presets(mod.CHAPTER)
    (module,) = {m for m, _ in read}
    chapter_module = importlib.import_module(f"transferkit.experiments.{module}")
    assert any(mod.PRESETS is getattr(chapter_module, preset) for _, preset in read)
    assert set(mod.PRESETS) >= {"paper", "smoke"}
    assert mod.EXPERIMENT.__module__ == f"transferkit.experiments.{module}"


@pytest.mark.parametrize("name", ["fig1_grid", "fig2_grid", "ptft_speed"])
def test_benchmark_calls_the_chapters_experiment(name):
    mod = load(name)
    src = (NOTEBOOKS / f"{mod.CHAPTER}.py").read_text()
    called = set(re.findall(r"experiments\.\w+\.(\w+)\(", src))
    assert mod.EXPERIMENT.__name__ in called


def test_speed_record_grid_is_the_chapters():
    mod = load("speed_record")
    paper = mod.PRESETS["paper"]
    assert tuple(mod.BOOK_GAMMAS.tolist()) == paper.gammas
    assert tuple(mod.BOOK_THETAS.tolist()) == paper.thetas
    assert (mod.ALPHA, mod.SIGMA, mod.DEPTH) == (paper.alpha, paper.sigma, paper.depth)


def test_relu_speed_sizes_are_the_papers():
    mod = load("relu_speed")
    assert mod.PRESETS is FIG3
    paper = mod.PRESETS["paper"]
    assert (paper.d, paper.m, paper.m_star) == (100, 1000, 100)   # paper 000, App. D.2
    assert mod.EXPERIMENT.__name__ == "fig3_experiment"


def test_relu_speed_runs_and_reports_the_papers_steps(tmp_path, capsys):
    """The ReLU benchmark runs (smoke sizes, a few steps) and writes the run times beside
    App. D.2's 10^5 steps of h = 0.005 (t = 500)."""
    mod = load("relu_speed")
    assert (mod.PAPER_STEPS, mod.PAPER_STEP, mod.PAPER_HORIZON) == (100_000, 0.005, 500.0)
    out = tmp_path / "relu.json"
    mod.main(["--scale", "smoke", "--steps", "3", "--n", "20", "--seeds", "2",
              "--horizon", "5", "--json", str(out)])
    data = __import__("json").loads(out.read_text())
    assert data["paper_steps"] == 1000 and data["horizon_iterations"] >= 5
    assert data["ratio"] == pytest.approx(data["authors_run_s"] / data["run_s"])
    assert data["ratio"] == pytest.approx(1000 / data["horizon_iterations"])
    assert "one pretraining run per seed" in capsys.readouterr().out


def test_lenet_speed_times_the_chapters_cell_and_schedules():
    """The LeNet benchmark times ``transfer_cell`` (the cell the notebook passes to
    ``sweep.run``) at ``LENET_FIG9``, and estimates the full protocol ``LENET_FIG9_FULL``
    (paper 002, App. A: 100 epochs on the 60,000 MNIST images, 3 seeds) from its images."""
    mod = load("lenet_speed")
    assert mod.PRESETS is LENET_FIG9 and mod.EXPERIMENT is transfer_cell
    src = (NOTEBOOKS / f"{mod.CHAPTER}.py").read_text()
    assert "sweep.run(experiments.lenet_transfer.transfer_cell" in src
    full = mod.images(LENET_FIG9_FULL)
    assert full["fig9_pretrain"] == 100 * 60_000
    assert full["fig9_finetune"] == 8 * 100 * 600
    # Fashion-MNIST pretrained and fine-tuned, upside-down MNIST fine-tuned only (the mirror
    # image of the MNIST snapshot); the authors pretrain it on its own
    assert full["fig8a_extra"] == 100 * 60_000 + 2 * 100 * 600
    authors = mod.images(LENET_FIG9_FULL, mirrored=False)
    assert authors["fig8a_extra"] == 2 * (100 * 60_000 + 100 * 600)
    assert "mirrored=[P9.fig8a_epochs]" in src.replace('"mirrored": [P9.fig8a_epochs]',
                                                       "mirrored=[P9.fig8a_epochs]")
    est = mod.schedule_seconds(LENET_FIG9_FULL, 1000.0)
    assert est["fig9_pretrain"] == pytest.approx(3 * 6000.0)
    paper = mod.images(LENET_FIG9["paper"])
    assert paper["fig9_pretrain"] == max(LENET_FIG9["paper"].snapshots) * 60_000


def test_speed_table_round_trip(tmp_path):
    st = load("speed_table")
    res = {
        "fig1_grid": dict(scale="paper", quick=False, cells=399, gammas=21, thetas=19, draws=20,
                          d=500, wall_s=144.0, per_cell_s=0.36, scratch_steps_median=100,
                          scratch_steps_max=500, authors_per_cell_s=380.0,
                          authors_grid_s=151620.0, ratio=1055.0, date="2026-01-01", cores=2,
                          threads=2, device="cpu"),
        "fig2_grid": dict(scale="paper", quick=False, cells=399, draws=20, runs=7980, d=500,
                          wall_s=180.0, cpu_s=350.0, per_cell_s=0.45, steps_median=1770,
                          steps_max=108450, gamma_at_steps_max=0.95, all_converged=True,
                          authors_per_cell_s=242.0, authors_grid_s=96558.0, ratio=529.0),
        "relu_speed": dict(scale="paper", m=1000, d=100, m_star=100, seeds=6, n=800,
                           pretrain_it_s=7.0, scratch_it_s=13.8),
    }
    for k, v in res.items():
        (tmp_path / f"{k}.json").write_text(__import__("json").dumps(v))
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n{st.START}\nold table\n{st.END}\nafter\n")
    assert st.main([str(tmp_path), str(readme), "--book-cache", str(tmp_path / "none")]) == 0
    text = readme.read_text()
    assert "old table" not in text and text.startswith("# x\n\nbefore\n") and text.endswith("after\n")
    assert "| 2.4 min (0.36 s per cell" in text and "1,055x" in text and "108,450" in text
    assert "| - |" in text                             # relu_speed without run times
    res["relu_speed"].update(horizon=500.0, horizon_iterations=520, paper_steps=100_000.0,
                             run_s=20.0, authors_run_s=4000.0, ratio=200.0,
                             scratch_authors_run_s=9000.0)
    (tmp_path / "relu_speed.json").write_text(__import__("json").dumps(res["relu_speed"]))
    assert st.main([str(tmp_path), str(readme), "--book-cache", str(tmp_path / "none")]) == 0
    text = readme.read_text()
    assert "one pretraining run to t = 500: 520 iterations, 20.0 s CPU per seed" in text
    assert "100,000 steps: 66.7 min per seed and pretraining run, 200x" in text
    assert "a scratch run at n = 800: 2.5 h per seed |" in text
    # reduced-scale results are refused unless asked for
    (tmp_path / "fig1_grid.json").write_text(__import__("json").dumps(dict(res["fig1_grid"], scale="smoke")))
    assert st.main([str(tmp_path), str(readme)]) == 1
    assert st.main([str(tmp_path), str(readme), "--allow-reduced"]) == 0
    assert "not the paper-scale figure" in readme.read_text()


def test_speed_table_optional_rows(tmp_path):
    """The LeNet, diagonal and ptft rows appear when their JSON is there, from the files'
    values."""
    st = load("speed_table")
    json = __import__("json")
    base = MINIMAL_RESULTS
    for k, v in base.items():
        (tmp_path / f"{k}.json").write_text(json.dumps(v))
    readme = tmp_path / "README.md"
    readme.write_text(f"{st.START}\n{st.END}\n")
    assert st.main([str(tmp_path), str(readme)]) == 0
    assert "lenet_speed" not in readme.read_text() and "diagonal_speed" not in readme.read_text()
    assert "speed_record" not in readme.read_text() and "ptft_speed" not in readme.read_text()
    (tmp_path / "speed_record.json").write_text(json.dumps(dict(
        scale="paper", quick=False, d=500, depth=2, draws=20, theta=1.0472, epochs=5000,
        cells=[dict(gamma=0.5, n=250, authors_s=181.0, simulate_s=1.234, simulate_ratio=146.7),
               dict(gamma=1.5, n=750, authors_s=300.0, simulate_s=2.5, simulate_ratio=120.0)])))
    (tmp_path / "lenet_speed.json").write_text(json.dumps(dict(
        scale="paper", images_s={"1": 12345.0}, s_per_epoch_60k=4.9, reduced_estimated_s=700.0,
        full_estimated_s=5200.0)))
    (tmp_path / "diagonal_speed.json").write_text(json.dumps(dict(
        scale="paper", D_large=1000, n_large=1024, n_aux_large=2000,
        chapter={"train_diagonal": {"wall": 1.0, "cpu": 612345.0},
                 "train_diagonal [torch]": {"wall": 1.0, "cpu": 43787.0}},
        large={"train_diagonal": {"wall": 1.0, "cpu": 259.0},
               "gram, grown step": {"wall": 1.0, "cpu": 4450.0}},
        steps_grown=2548, steps_fixed=148492, section_estimate_cpu_s=246.0)))
    (tmp_path / "ptft_speed.json").write_text(json.dumps(dict(
        scale="paper", d=12, width=24, ns=[8, 16, 32, 64], draws=8, n_aux=1024, networks=32,
        rates={"train_units": {"wall": 1.0, "cpu": 512345.0},
               "train_units [torch]": {"wall": 1.0, "cpu": 46890.0},
               "train_units_mtl": {"wall": 1.0, "cpu": 20153.0},
               "train_units_mtl [torch]": {"wall": 1.0, "cpu": 1133.0}},
        grid_cells=8, grid_cpu_s=36.0)))
    assert st.main([str(tmp_path), str(readme)]) == 0
    text = readme.read_text()
    assert "512,345 network-steps" in text and "against 46,890" in text
    assert "MTL 20,153 against 1,133" in text and "grid (8 cells) 36.0 s CPU" in text
    assert "12,345 images/s" in text and "4.9 s per epoch" in text and "86.7 min" in text
    assert "4,450 network-steps" in text and "148,492" in text
    assert "612,345 network-steps" in text and "against 43,787" in text
    assert "gamma = 0.5: 1.23 s; gamma = 1.5: 2.50 s" in text and "3.0 min, 147x" in text
    assert "fine-tuning not counted" in text
    # with the authors' fine-tuning timed (the same work as simulate), both ratios
    (tmp_path / "speed_record.json").write_text(json.dumps(dict(
        scale="paper", quick=False, d=500, depth=2, draws=20, theta=1.0472, epochs=5000,
        cells=[dict(gamma=0.5, n=250, authors_s=181.0, simulate_s=1.234, simulate_ratio=146.7,
                    authors_ft_s=241.0, simulate_ratio_ft=195.3),
               dict(gamma=1.5, n=750, authors_s=300.0, simulate_s=2.5, simulate_ratio=120.0,
                    authors_ft_s=420.0, simulate_ratio_ft=168.0)])))
    assert st.main([str(tmp_path), str(readme)]) == 0
    text = readme.read_text()
    assert "last layer and fine-tuning" in text and "4.0 min, 195x; 7.0 min, 168x" in text
    assert "without their fine-tuning: 3.0 min, 147x; 5.0 min, 120x" in text
    # LeNet since 2026-11-29: the full schedule with the mirror image, and the authors' apart
    (tmp_path / "lenet_speed.json").write_text(json.dumps(dict(
        scale="paper", images_s={"1": 12345.0}, s_per_epoch_60k=4.9, reduced_estimated_s=700.0,
        full_estimated_s=3600.0, authors_estimated_s=5400.0)))
    assert st.main([str(tmp_path), str(readme)]) == 0
    text = readme.read_text()
    assert "App. A's schedule 60.0 min (estimated; upside-down MNIST the mirror image" in text
    assert "upside-down MNIST pretrained on its own) 90.0 min (estimated, the same code)" in text
    (tmp_path / "lenet_speed.json").write_text(json.dumps(dict(
        scale="smoke", images_s={"1": 1.0}, s_per_epoch_60k=1.0, reduced_estimated_s=1.0,
        full_estimated_s=1.0)))
    assert st.main([str(tmp_path), str(readme)]) == 1       # reduced results refused


def test_readme_has_the_speed_table_markers():
    st = load("speed_table")
    text = (ROOT / "README.md").read_text()
    assert text.count(st.START) == 1 and text.count(st.END) == 1
    assert text.index(st.START) < text.index(st.END)


def test_diagonal_speed_times_the_chapters_section():
    """The diagonal benchmark uses ``DIAGONAL`` (whose ``l12_large`` holds the D = 1000
    section's sizes) and times the experiment that section calls."""
    from transferkit.experiments.diagonal_networks import DIAGONAL, DIAGONAL_L12_LARGE
    mod = load("diagonal_speed")
    assert mod.PRESETS is DIAGONAL and mod.EXPERIMENT.__name__ == "mtl_small_init_large"
    src = (NOTEBOOKS / f"{mod.CHAPTER}.py").read_text()
    assert "experiments.diagonal_networks.mtl_small_init_large(" in src
    assert DIAGONAL["paper"].l12_large is DIAGONAL_L12_LARGE["paper"]
    assert DIAGONAL_L12_LARGE["paper"].D == 1000


def _attribute_chains(tree, root):
    """Every dotted chain ``root.a.b...`` in the module's AST, longest first per node."""
    chains = set()
    for node in ast.walk(tree):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id == root and parts:
            chains.add(tuple(reversed(parts)))
    return chains


@pytest.mark.parametrize("name", TIMING + TOOLS)
def test_every_transferkit_name_a_benchmark_uses_exists(name):
    # a renamed or moved function must not stop `make bench` halfway (it did once: a
    # tk.models.default_device left behind by the layering); read from the source, not run
    tree = ast.parse((BENCH / f"{name}.py").read_text())
    missing = []
    for chain in _attribute_chains(tree, "tk"):
        obj = tk
        for i, part in enumerate(chain):
            if not hasattr(obj, part):
                missing.append("tk." + ".".join(chain[:i + 1]))
                break
            obj = getattr(obj, part)
    assert not missing, f"benchmarks/{name}.py uses names transferkit lacks: {sorted(missing)}"


def test_speed_record_profile_stages_name_real_functions():
    """Each stage of the speed record's profile names a function of a transferkit module
    with that file name (stale names after a move would profile as zero seconds)."""
    mods = list((ROOT / "transferkit").rglob("*.py"))
    for label, file, fn, kind in load("speed_record").STAGES:
        assert kind in ("cum", "own"), label
        hits = [p for p in mods if p.name == file
                and re.search(rf"^def {fn}\(|^    def {fn}\(", p.read_text(), re.M)]
        assert hits, f"stage {label!r}: no def {fn} in a transferkit file named {file}"


def test_execute_book_caches_as_the_book_reads(tmp_path):
    """A chapter executed by ``execute_book`` is found by the book's own lookup (myst-nb's
    ``match_cache_notebook`` on the notebook read as the book reads it) with its outputs
    and time; a failing one is not cached, its traceback is on its project record (so
    ``book_times --check`` fails), and a second call executes nothing."""
    from jupyter_cache import get_cache

    eb, bt = load("execute_book"), load("book_times")
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text('# %%\nprint(6 * 7)\n')
    bad.write_text('# %%\nassert 1 == 2, "theory and simulation disagree"\n')
    cache_dir = tmp_path / "jc"
    lines = []
    failed = eb.execute_into(cache_dir, [good, bad], jobs=2, timeout=120, log=lines.append)
    assert failed == ["bad"]
    cache = get_cache(str(cache_dir))
    rec = cache.match_cache_notebook(bt.read_notebook(good))
    nb = cache.get_cache_bundle(rec.pk).nb
    assert nb.cells[0].outputs[0]["text"] == "42\n"
    assert rec.data["execution_seconds"] > 0
    with pytest.raises(KeyError):
        cache.match_cache_notebook(bt.read_notebook(bad))
    rows = {r["name"]: r for r in bt.records(cache_dir, [good, bad])}
    assert rows["good"]["seconds"] > 0 and rows["good"]["traceback"] is None
    assert "theory and simulation disagree" in rows["bad"]["traceback"]
    lines.clear()
    assert eb.execute_into(cache_dir, [good], jobs=2, timeout=120, log=lines.append) == []
    assert lines == ["execute_book: every chapter is in the cache"]


def test_book_outputs_reads_and_compares_builds(tmp_path):
    """``book_outputs.py`` renders what two builds printed (streams, results, images as
    hashes) and compares them: durations and the build's own folder do not count, a changed
    number does, and a chapter missing from one build is reported."""
    eb, bo = load("execute_book"), load("book_outputs")
    code = ('# %%\nimport time\nprint("wall time", time.perf_counter(), "s")\n'
            'print("value", {v})\nimport os\nprint(os.getcwd())\n# %%\n6 * 7\n')
    caches = {}
    for tag, v in (("a", 1), ("b", 1), ("c", 2)):
        folder = tmp_path / tag / "notebooks"
        folder.mkdir(parents=True)
        nb = folder / "chapter.py"
        nb.write_text(code.format(v=v))
        caches[tag] = tmp_path / tag / "jc"
        assert eb.execute_into(caches[tag], [nb], jobs=1, timeout=120, log=lambda s: None) == []
    out = {t: bo.chapter_outputs(c, ["chapter", "absent"]) for t, c in caches.items()}
    text = out["a"]["chapter"]
    assert "[0 stdout]" in text and "value 1" in text and "[1 text/plain]" in text and "42" in text
    assert set(out["a"]) == {"chapter"}
    report, same = bo.compare(out["a"], out["b"], ["chapter"])
    assert same and report == ["chapter: same"]          # only the duration differs
    report, same = bo.compare(out["c"], out["a"], ["chapter"])
    assert not same and report[0] == "chapter: 2 line(s) differ"
    assert "    -value 1" in report and "    +value 2" in report
    cut = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="largest n: observed"),
        nbformat.v4.new_output("stream", name="stdout", text=" [0 1]\nnext\n")])])
    assert bo.render(cut) == "[0 stdout]\nlargest n: observed [0 1]\nnext\n"   # one line
    warned = {"chapter": "[0 stderr]\n/x/mod.py:12: UserWarning: inaccurate\n"}
    moved = {"chapter": "[0 stderr]\n/x/mod.py:15: UserWarning: inaccurate\n"}
    assert bo.compare(warned, moved, ["chapter"])[1]        # only the line number moved
    report, same = bo.compare(out["a"], {}, ["chapter"])
    assert not same and "missing" in report[0]
    assert bo.main([str(caches["a"]), "--compare", str(caches["b"]), "--out",
                    str(tmp_path / "txt"), str(tmp_path / "a" / "notebooks" / "chapter.py")]) == 0
    assert (tmp_path / "txt" / "chapter.txt").read_text() == text
    assert bo.main([str(caches["c"]), "--compare", str(caches["a"]),
                    str(tmp_path / "a" / "notebooks" / "chapter.py")]) == 1


def test_execute_book_runs_what_the_book_builds():
    """Only the chapters of ``_toc.yml`` (the book builds no other), with ``_config.yml``'s
    timeout and error setting."""
    import yaml

    eb = load("execute_book")
    names = [p.stem for p in eb.toc_notebooks()]
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    assert set(names) == {Path(f).name for f in re.findall(r"notebooks/(\w+)", str(toc))}
    ex = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]
    assert eb.execution_settings() == {"timeout": ex["timeout"],
                                       "allow_errors": ex["allow_errors"]}


def test_execute_book_kernels_see_the_builds_environment(tmp_path, monkeypatch):
    """As under ``jupyter-book build`` (``transferkit.sphinxext``): the kernels see
    ``TRANSFERKIT_BOOK_BUILD=1`` and the build's own figures folder."""
    from jupyter_cache import get_cache

    monkeypatch.delenv("TRANSFERKIT_FIGURES", raising=False)
    monkeypatch.delenv("TRANSFERKIT_BOOK_BUILD", raising=False)
    eb, bt = load("execute_book"), load("book_times")
    nb = tmp_path / "env.py"
    nb.write_text('# %%\nimport os\nprint(os.environ["TRANSFERKIT_BOOK_BUILD"], '
                  'os.environ["TRANSFERKIT_FIGURES"])\n')
    cache_dir = tmp_path / "out" / "_build" / ".jupyter_cache"
    assert eb.execute_into(cache_dir, [nb], jobs=1, timeout=120, log=lambda s: None) == []
    cache = get_cache(str(cache_dir))
    out = cache.get_cache_bundle(cache.match_cache_notebook(bt.read_notebook(nb)).pk).nb
    assert out.cells[0].outputs[0]["text"].split() == [
        "1", str((tmp_path / "out" / "_build" / "figures").resolve())]


def test_execute_book_survives_a_dead_worker(tmp_path):
    """A worker that dies breaks the pool: every chapter not yet done is reported as not
    executed (the build executes it), nothing is cached, no exception escapes."""
    eb = load("execute_book")
    killer, other = tmp_path / "killer.py", tmp_path / "other.py"
    killer.write_text("# %%\nimport os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n")
    other.write_text("# %%\nprint(1)\n")
    lines = []
    failed = eb.execute_into(tmp_path / "jc", [killer, other], jobs=1, timeout=60,
                             log=lines.append)
    assert sorted(failed) == ["killer", "other"]
    assert sum("not executed here (BrokenProcessPool" in s for s in lines) == 2


def test_book_time_record_and_its_row(tmp_path):
    """book_times writes book-time.json only for a build that executed every chapter, and
    speed_table turns a paper-scale record into the whole-book row."""
    import json

    bt, st = load("book_times"), load("speed_table")
    rows = [dict(name="a", seconds=60.0, created=10.0, edited=False, traceback=None),
            dict(name="b", seconds=600.0, created=12.0, edited=False, traceback=None)]
    rec = tmp_path / "book-time.json"
    assert "not written: 1 of 2" in bt.write_record(rec, rows, 11.0, 700.0, 2, "paper")
    assert not rec.exists()
    assert "written" in bt.write_record(rec, rows, 5.0, 700.0, 2, "paper")
    data = json.loads(rec.read_text())
    assert data["wall_s"] == 700.0 and data["jobs"] == 2 and data["chapters_s"] == {"a": 60.0,
                                                                                    "b": 600.0}
    with pytest.raises(ValueError, match="--record needs"):
        bt.write_record(rec, rows, None, 700.0, 2, "paper")
    base = MINIMAL_RESULTS
    bench = tmp_path / "bench"
    bench.mkdir()
    for k, v in base.items():
        (bench / f"{k}.json").write_text(json.dumps(v))
    readme = tmp_path / "README.md"
    readme.write_text(f"{st.START}\n{st.END}\n")
    cache = tmp_path / ".jupyter_cache"              # book-time.json lies next to it
    assert st.main([str(bench), str(readme), "--book-cache", str(cache)]) == 0
    assert "the whole book at `paper` scale from empty caches (`make book`, 2 chapters on 2 " \
           "processes" in readme.read_text()
    assert "| 11.7 min wall; the chapters 11.0 min together, the longest b 10.0 min, a 60.0 s |" \
           in readme.read_text()
    rec.write_text(json.dumps(dict(data, scale="smoke")))
    assert st.main([str(bench), str(readme), "--book-cache", str(cache)]) == 0
    assert "the whole book" not in readme.read_text()


def test_ptft_speed_times_both_engines_and_the_chapters_grid(tmp_path):
    """The ptft benchmark at smoke scale: a rate for each trainer on each engine, the Fig. 1c
    grid of the chapter's preset timed (one cell at smoke scale), the JSON written."""
    mod = load("ptft_speed")
    res = mod.main(["--scale", "smoke", "--steps", "5", "--json", str(tmp_path / "p.json")])
    assert set(res["rates"]) == set(mod.KINDS)
    assert all(r["wall"] > 0 and r["cpu"] > 0 for r in res["rates"].values())
    p = mod.PRESETS["smoke"]
    assert res["grid_cells"] == len(p.rhos) * len(p.magnitudes)
    assert res["networks"] == len(p.ns) * p.draws
    assert __import__("json").loads((tmp_path / "p.json").read_text())["benchmark"] == "ptft_speed"
