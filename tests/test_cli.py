"""The ``transferkit`` command line, end to end.

The ``subprocess`` tests run the real entry points (``python -m transferkit`` and the
installed console script) and check exit codes, stdout and stderr; the in-process tests
call :func:`transferkit.cli.main` (the same code, without a fresh interpreter per case)
for the many bad arguments and the slower commands.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import transferkit as tk
from transferkit import cli, theory

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TRANSFERKIT_PROGRESS": "0",
       "MPLBACKEND": "Agg"}


def run(*args, script=False, cwd=None):
    cmd = ([str(Path(sys.executable).parent / "transferkit")] if script
           else [sys.executable, "-m", "transferkit"])
    return subprocess.run(cmd + list(args), capture_output=True, text=True, env=ENV,
                          cwd=cwd or REPO, timeout=300)


def assert_one_line_error(proc_or_err, *words):
    err = proc_or_err if isinstance(proc_or_err, str) else proc_or_err.stderr
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got:\n{err}"
    assert lines[0].startswith("transferkit: error: "), lines[0]
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], (w, lines[0])


# ---------------------------------------------------------------- subprocess: end to end

def test_theory_linear_json_matches_the_closed_forms():
    p = run("theory", "linear", "--gamma", "0.5", "--theta", "1.0", "--sigma", "0.2",
            "--d", "500", "--json")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    out = json.loads(p.stdout)
    res = {k: v["value"] for k, v in out["results"].items()}
    assert out["parameters"] == {"gamma": 0.5, "theta": 1.0, "sigma": 0.2, "d": 500}
    assert res["transferability"] == theory.deep_linear.linear_transferability(0.5, 1.0, 0.2)
    assert res["scratch risk"] == theory.deep_linear.scratch_risk(0.5, 0.2)
    # Eq. 11 is Eq. 8 minus the n -> inf limit of Eq. 10
    assert math.isclose(res["scratch risk"] - res["linear-transfer risk"], res["transferability"],
                        rel_tol=1e-12)
    assert res["n"] == 250
    assert res["linear-transfer risk (finite n)"] == theory.deep_linear.linear_transfer_risk(250, 1.0, 0.2)
    assert res["negative-transfer window"] == list(theory.deep_linear.negative_transfer_window(1.0, 0.2))
    assert "Eq. 11" in out["results"]["transferability"]["source"]


def test_theory_human_output_and_console_script():
    script = Path(sys.executable).parent / "transferkit"
    assert script.is_file(), ("the console script is not installed: "
                              "pip install -e . (pyproject.toml [project.scripts])")
    p = run("theory", "finetune", "--gamma", "0.5", "--theta", "pi/3", "--sigma", "0.2",
            script=True)
    assert p.returncode == 0, p.stderr
    assert "Eq. 14" in p.stdout and "Eq. 15" in p.stdout
    line = next(l for l in p.stdout.splitlines() if l.strip().startswith("transferability"))
    # at theta = pi/3 fine-tuning transfers nothing (Eq. 15: 1 - 2 cos theta = 0)
    assert abs(float(line.split()[1])) < 1e-12, line


def test_bad_argument_exits_2_with_one_line_subprocess():
    p = run("theory", "linear", "--gamma", "-1", "--theta", "1", "--sigma", "0.2", script=True)
    assert p.returncode == 2 and p.stdout == ""
    assert_one_line_error(p, "gamma", "> 0")


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"transferkit {tk.__version__}"


def test_simulate_json_matches_simulate_transfer(one_thread):
    args = ["--gamma", "0.5", "--theta", "1.0", "--sigma", "0.2", "--d", "16", "--draws", "4",
            "--seed", "3"]
    p = run("simulate", *args, "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    ref = tk.simulate_transfer(16, 0.5, 1.0, 0.2, draws=4, seed=3)
    n = out["parameters"]["n"]
    assert n == 8
    for row in out["results"]:
        m = row["method"]
        assert row["mean"] == pytest.approx(ref.risk(m).mean(), rel=1e-12), m  # same seed, same numbers
        assert row["se"] == pytest.approx(ref.risk(m).std(ddof=1) / 2, rel=1e-12), m
    finite = {r["method"]: r["theory_finite"] for r in out["results"]}
    assert finite["scratch"] == theory.deep_linear.scratch_risk_finite(8, 16, 0.2)
    assert finite["linear"] == theory.deep_linear.linear_transfer_risk(8, 1.0, 0.2)
    assert finite["finetune"] == theory.deep_linear.finetune_risk_finite(8, 16, 1.0, 0.2)
    assert [r["method"] for r in out["results"]] == ["scratch", "linear", "finetune"]


def test_phase_diagram_theory_writes_figure_and_record(tmp_path, capsys):
    out = tmp_path / "fig.png"
    assert cli.main(["phase-diagram", "--method", "linear", "--sigma", "0.1", "--depth", "3",
                     "--out", str(out)]) == 0
    assert "theory only" in capsys.readouterr().out
    assert out.read_bytes().startswith(b"\x89PNG")
    rec = json.loads(out.with_suffix(".json").read_text())
    assert rec["cli"].startswith("transferkit phase-diagram --method linear --sigma 0.1")
    assert rec["params"] == {"method": "linear", "sigma": 0.1}
    assert rec["transferkit_version"] == tk.__version__
    import hashlib

    assert rec["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()


def test_phase_diagram_theory_finetune(tmp_path, capsys):
    out = tmp_path / "ft.svg"
    assert cli.main(["phase-diagram", "--method", "finetune", "--sigma", "0.2", "--depth", "3",
                     "--out", str(out)]) == 0
    assert "theory only" in capsys.readouterr().out
    text = out.read_text()
    assert "<svg" in text and "Thm 5.2 at L = 3" in text  # the book's Fig. 2 layout
    assert not hasattr(cli, "_phase_figure")  # the figure comes from transferkit.figures.paper000


@pytest.mark.parametrize("gamma,theta", [(0.5, 1.0), (0.25, math.pi / 2), (0.9, 0.0), (1.5, 2.0),
                                         (1.0, 1.0)])
def test_theory_finetune_finite_d_is_eq15_finite(gamma, theta):
    """The finite-d transferability printed by the CLI is the theory function's, bitwise."""
    d = 40
    vals = cli.theory_values("finetune", gamma=gamma, theta=theta, sigma=0.2, d=d)
    n = vals["n"][0]
    value, source = vals["transferability (finite d)"]
    assert value == theory.deep_linear.finetune_transferability_finite(n, d, theta)
    assert "Eq. 15" in source
    if n < d:  # the expected values printed beside it
        assert math.isclose(value, vals["scratch risk (finite d)"][0]
                            - vals["fine-tuning risk (finite d)"][0], rel_tol=1e-12, abs_tol=1e-12)
    else:
        assert value == 0.0 and math.copysign(1.0, value) == 1.0  # printed as 0, not -0


# ---------------------------------------------------------------- in process: the same main()

BAD = [
    (["theory", "linear", "--gamma", "0.5", "--theta", "4", "--sigma", "0.2"], ["theta", "[0, pi]"]),
    (["theory", "linear", "--gamma", "nan", "--theta", "1", "--sigma", "0.2"], ["gamma"]),
    (["theory", "linear", "--gamma", "0.5", "--theta", "1", "--sigma", "-0.1"], ["sigma", ">= 0"]),
    (["theory", "linear", "--gamma", "0.5", "--theta", "1"], ["--sigma", "required"]),
    (["theory", "scratch", "--gamma", "0.5", "--sigma", "0.2", "--d", "0"], ["d", ">= 1"]),
    (["theory", "ridge", "--lam", "-1", "--theta", "1"], ["lam", ">= 0"]),
    (["theory", "ridge", "--lam", "1", "--theta", "1", "--gamma", "2"], ["unrecognized", "--gamma"]),
    (["theory", "quadratic"], ["invalid choice", "quadratic"]),
    (["theory"], ["MODEL"]),
    (["theory", "linear", "--gamma", "x", "--theta", "1", "--sigma", "0"], ["--gamma", "'x'"]),
    (["theory", "linear", "--gamma", "1", "--theta", "pi/0", "--sigma", "0"], ["--theta"]),
    (["simulate", "--gamma", "0.5", "--theta", "1", "--sigma", "0.2", "--methods", "ridge"],
     ["--methods", "ridge"]),
    (["simulate", "--gamma", "0.5", "--theta", "1", "--sigma", "0.2", "--draws", "1"], ["--draws"]),
    (["simulate", "--gamma", "0.5", "--theta", "1", "--sigma", "0.2", "--depth", "1"],
     ["depth", ">= 2"]),
    (["simulate", "--gamma", "0.01", "--theta", "1", "--sigma", "0.2", "--d", "10"], ["n >= 1"]),
    (["simulate", "--gamma", "0.5", "--theta", "1", "--sigma", "0.2", "--d", "2.5"], ["--d", "2.5"]),
    (["simulate", "--gamma", "0.5", "--theta", "1", "--sigma", "0.2", "--draws", "many"],
     ["--draws", "'many'"]),
    (["simulate", "--gamma", "0.5", "--theta", "1", "--sigma", "0.2", "--alpha", "0"],
     ["alpha", "> 0"]),
    (["phase-diagram", "--out", "x.gif"], ["--out", ".png"]),
    (["phase-diagram", "--out", "x.png", "--sigma", "-1"], ["sigma"]),
    (["phase-diagram", "--out", "x.png", "--method", "ridge"], ["--method", "ridge"]),
    (["phase-diagram", "--out", "x.png", "--gammas", "1:2"], ["--gammas", "start:stop:count"]),
    (["phase-diagram", "--out", "x.png", "--simulate", "--gammas", "-1,1", "--no-cache"],
     ["gamma"]),
    (["phase-diagram"], ["--out", "required"]),
    (["notebook", "does/not/exist.py"], ["no notebook"]),
    (["frobnicate"], ["invalid choice"]),
]


@pytest.mark.parametrize("argv,words", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_arguments_one_line_exit_2(argv, words, capsys, tmp_path, monkeypatch, one_thread):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert_one_line_error(cap.err, *words)
    assert not list(tmp_path.iterdir())  # nothing written


def test_no_command_prints_help_and_exits_2(capsys):
    assert cli.main([]) == 2
    assert "phase-diagram" in capsys.readouterr().out


def test_pi_expressions_and_grids():
    assert cli._real("pi/3") == math.pi / 3 and cli._real("2*pi/5") == 2 * math.pi / 5
    assert cli._real("0.5pi") == math.pi / 2 and cli._real("1e-3") == 1e-3
    assert cli._grid("0:pi/2:3") == [0.0, math.pi / 4, math.pi / 2]
    assert cli._grid("0.5,1.5") == [0.5, 1.5]


def test_simulate_human_output(capsys, one_thread):
    assert cli.main(["simulate", "--gamma", "1.5", "--theta", "pi/2", "--sigma", "0.3",
                     "--d", "12", "--draws", "6", "--methods", "linear,scratch",
                     "--no-progress"]) == 0
    out = capsys.readouterr().out
    rows = {l.split()[0]: l for l in out.splitlines()[2:4]}
    assert set(rows) == {"linear", "scratch"}
    assert f"{theory.deep_linear.scratch_risk(1.5, 0.3):.6g}" in rows["scratch"]  # Eq. 8 beside it
    assert f"{theory.deep_linear.linear_transfer_risk(18, math.pi / 2, 0.3):.6g}" in rows["linear"]


@pytest.mark.parametrize("method", ["linear", "finetune"])
def test_phase_diagram_simulated(method, tmp_path, capsys, one_thread):
    out = tmp_path / f"{method}.png"
    argv = ["phase-diagram", "--method", method, "--sigma", "0.1", "--simulate", "--d", "10",
            "--depth", "2", "--draws", "3", "--gammas", "0.5,1.5", "--thetas", "0,pi/2",
            "--seed", "2", "--out", str(out), "--no-progress"]
    if method == "linear":
        argv.append("--no-cache")
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert "cells compared" in text  # the agreement with theory is reported
    rec = json.loads(out.with_suffix(".json").read_text())
    assert rec["seeds"] == 2 and rec["params"]["d"] == 10 and rec["params"]["draws"] == 3
    assert rec["params"]["gammas"] == [0.5, 1.5]
    assert rec["cli"] == "transferkit " + " ".join(argv)
    assert out.stat().st_size > 10_000


def test_phase_diagram_command_round_trips():
    """The command line written into a record parses back to exactly the same grid."""
    gammas = np.round(np.r_[np.arange(1, 10) / 10, 0.95, 1.05], 3)
    thetas = np.linspace(0, np.pi / 2, 19)
    cmd = cli.phase_diagram_command("f.png", sigma=0.2, simulate=True, d=50, depth=3,
                                    draws=5, seed=1, alpha=1e-5, gammas=gammas, thetas=thetas,
                                    title="Fig. 1")
    import shlex

    argv = shlex.split(cmd)
    assert argv[0] == "transferkit"
    args = cli.build_parser().parse_args(argv[1:])
    assert args.gammas == list(gammas) and args.thetas == list(thetas)
    assert (args.d, args.depth, args.draws, args.seed, args.alpha) == (50, 3, 5, 1, 1e-5)
    assert args.title == "Fig. 1" and args.simulate


NOTEBOOK = '''# %%
import matplotlib.pyplot as plt
from transferkit import provenance
fig, ax = plt.subplots()
ax.plot([0, 1], [1, 0])
provenance.record(fig, "tiny", params={"k": 1}, seeds=[7])
'''


def test_notebook_runs_a_chapter_and_saves_its_records(tmp_path, capsys):
    pytest.importorskip("nbclient")
    pytest.importorskip("jupytext")
    nb = tmp_path / "tiny.py"
    nb.write_text(NOTEBOOK)
    out = tmp_path / "figs"
    assert cli.main(["notebook", str(nb), "--scale", "smoke", "--figures", str(out)]) == 0
    assert "1 figure(s)" in capsys.readouterr().out
    rec = json.loads((out / "tiny.json").read_text())
    assert rec["scale"] == "smoke" and rec["seeds"] == [7] and rec["params"] == {"k": 1}
    assert (out / "tiny.png").read_bytes().startswith(b"\x89PNG")
