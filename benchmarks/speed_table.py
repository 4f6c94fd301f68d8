"""Write the README speed table from the results of ``make bench`` (never typed by hand).

Run by ``make bench`` after the benchmarks::

    python benchmarks/speed_table.py _build/bench README.md [--book-cache _build/.jupyter_cache]

Reads ``fig1_grid.json``, ``fig2_grid.json`` and ``relu_speed.json`` (written by the
benchmarks with ``--json``; required), the rows of the benchmarks in ``OPTIONAL`` whose JSON
is present (``speed_record.json``, ``lenet_speed.json``, ``diagonal_speed.json``,
``ptft_speed.json``), and, when the paper-scale book has been built, the ReLU chapter's
execution time from the book's jupyter-cache records (``benchmarks/book_times.py``) and the
whole book's times from ``book-time.json`` next to that cache (written by ``make book`` when it
executed every chapter, i.e. from empty caches, at paper scale), and replaces everything between the marker lines ``<!-- speed-table:start -->`` and
``<!-- speed-table:end -->`` of the README with the table.  Results at a reduced scale
(``--scale smoke`` or ``--quick``) are refused unless ``--allow-reduced`` is given (then every
row says so): the README reports paper scale only.  No network; nothing is executed.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

START, END = "<!-- speed-table:start -->", "<!-- speed-table:end -->"
BENCHMARKS = ("fig1_grid", "fig2_grid", "relu_speed")
#: benchmarks whose row is written when their JSON file is present
OPTIONAL = ("speed_record", "lenet_speed", "diagonal_speed", "ptft_speed")


def _dur(s: float) -> str:
    return f"{s:.1f} s" if s < 120 else f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"


def _reduced(r: dict) -> str:
    tags = [f"scale {r['scale']}"] if r.get("scale") != "paper" else []
    tags += ["--quick"] if r.get("quick") else []
    return f" **[{', '.join(tags)}: not the paper-scale figure]**" if tags else ""


def _relu_run(rl: dict) -> str:
    """The ReLU row's time of one pretraining run to the horizon, where measured."""
    if "run_s" not in rl:
        return ""
    return (f"; one pretraining run to t = {rl['horizon']:g}: {rl['horizon_iterations']:,} "
            f"iterations, {rl['run_s']:.1f} s CPU per seed")


def _relu_authors(rl: dict) -> str:
    """The ReLU row's authors' column: App. D.2's steps at our cost per step."""
    if "run_s" not in rl:
        return "-"
    return (f"{rl['paper_steps']:,.0f} steps: {_dur(rl['authors_run_s'])} per seed and "
            f"pretraining run, {rl['ratio']:,.0f}x; a scratch run at n = {rl['n']}: "
            f"{_dur(rl['scratch_authors_run_s'])} per seed")


def rows(res: dict, chapter_seconds: float | None) -> list[str]:
    """The table's markdown lines."""
    f1, f2, rl = res["fig1_grid"], res["fig2_grid"], res["relu_speed"]
    out = ["| what | transferkit | authors' protocol (extrapolated) |", "| --- | --- | --- |"]
    out.append(
        f"| Fig. 1 grid of paper 000 as the linear-transfer chapter runs it ({f1['gammas']} x "
        f"{f1['thetas']} cells, {f1['draws']} draws, d = {f1['d']}; `fig1_grid.py`){_reduced(f1)} "
        f"| {_dur(f1['wall_s'])} ({f1['per_cell_s']:.2f} s per cell; scratch steps per run: median "
        f"{f1['scratch_steps_median']:,}, max {f1['scratch_steps_max']:,}) "
        f"| {_dur(f1['authors_grid_s'])} ({f1['authors_per_cell_s']:.0f} s per cell), "
        f"{f1['ratio']:,.0f}x |")
    out.append(
        f"| Fig. 2 grid of paper 000 as the fine-tuning chapter runs it ({f2['cells']} cells x "
        f"{f2['draws']} draws = {f2['runs']:,} fine-tuning runs of all layers, d = {f2['d']}; "
        f"`fig2_grid.py`){_reduced(f2)} | {_dur(f2['wall_s'])} wall, {_dur(f2['cpu_s'])} CPU "
        f"({f2['per_cell_s']:.2f} s per cell; gradient steps per run: median "
        f"{f2['steps_median']:,}, max {f2['steps_max']:,} at gamma = {f2['gamma_at_steps_max']:g}"
        f"{', all converged' if f2['all_converged'] else ', NOT all converged'}) "
        f"| {_dur(f2['authors_grid_s'])} ({f2['authors_per_cell_s']:.0f} s per cell: 5,000 epochs x "
        f"{f2['draws']} instances), {f2['ratio']:,.0f}x |")
    out.append(
        f"| ReLU student-teacher of paper 000 Fig. 3 (m = {rl['m']}, d = {rl['d']}, m* = "
        f"{rl['m_star']}; `relu_speed.py --seeds {rl['seeds']}`){_reduced(rl)} | population "
        f"pretraining {rl['pretrain_it_s']:.1f} steps/s for {rl['seeds']} seeds batched; scratch "
        f"training on n = {rl['n']} samples {rl['scratch_it_s']:.1f} steps/s for {rl['seeds']} "
        f"seeds{_relu_run(rl)} | {_relu_authors(rl)} |")
    if "speed_record" in res:
        sr = res["speed_record"]
        cells = sr["cells"]
        out.append(
            f"| one cell of Fig. 1 computed alone, as `transferkit simulate` does (pretraining, then "
            f"scratch training, linear transfer and fine-tuning of {sr['draws']} draws at d = "
            f"{sr['d']}, theta = {sr['theta']:.4f}; `speed_record.py`){_reduced(sr)} | "
            + "; ".join(f"gamma = {c['gamma']:g}: {c['simulate_s']:.2f} s" for c in cells)
            + f" | {_record_authors(sr)} |")
    if "lenet_speed" in res:
        ln = res["lenet_speed"]
        one = ln["images_s"].get("1", next(iter(ln["images_s"].values())))
        # since 2026-11-29 the full schedule is ours (upside-down MNIST the mirror image) and
        # the authors' is written apart; before, the full schedule was the authors'
        ours, authors = (
            (f"; App. A's schedule {_dur(ln['full_estimated_s'])} (estimated; upside-down MNIST "
             f"the mirror image of the MNIST network)", ", upside-down MNIST pretrained on its own")
            if "authors_estimated_s" in ln else ("", ""))
        out.append(
            f"| LeNet of paper 002 on the 60,000 MNIST images, SGD at batch 64, one thread "
            f"(`lenet_speed.py`){_reduced(ln)} | {one:,.0f} images/s for forward, backward and "
            f"step ({ln['s_per_epoch_60k']:.1f} s per epoch); the lenet chapter's reduced Fig. 9 "
            f"+ Fig. 8a schedule {_dur(ln['reduced_estimated_s'])} (estimated){ours} | App. A's "
            f"schedule (100 epochs, 3 seeds{authors}) "
            f"{_dur(ln.get('authors_estimated_s', ln['full_estimated_s']))} (estimated, the same "
            f"code) |")
    if "diagonal_speed" in res:
        dg = res["diagonal_speed"]
        lg = dg["large"]
        sec = (f"; the chapter's D = {dg['D_large']} section {_dur(dg['section_estimate_cpu_s'])} "
               f"CPU (estimated from one draw cell)" if "section_estimate_cpu_s" in dg else "")
        sec += (f"; the whole chapter, executed as `make book` executes it from an empty sweep "
                f"cache, {_dur(dg['chapter_s'])} wall" if "chapter_s" in dg else "")
        steps = (f"; steps to converge at the chapter's D = 50: {dg['steps_grown']:,} (grown step) "
                 f"against {dg['steps_fixed']:,} (fixed rule)" if "steps_grown" in dg else "")
        ch = dg.get("chapter", {})
        kern = (f"the chapter's D = 50 batch {ch['train_diagonal']['cpu']:,.0f} network-steps per "
                f"CPU second (`train_diagonal`, compiled kernel) against "
                f"{ch['train_diagonal [torch]']['cpu']:,.0f} (its batched torch loop); "
                if "train_diagonal [torch]" in ch else "")
        out.append(
            f"| diagonal networks of paper 004 at D = {dg['D_large']}, n = {dg['n_large']}, "
            f"n_aux = {dg['n_aux_large']} (`diagonal_speed.py`){_reduced(dg)} | {kern}"
            f"{lg['gram, grown step']['cpu']:,.0f} network-steps per CPU second at D = "
            f"{dg['D_large']} (`train_diagonal_gram`){steps}{sec} | - (paper 004 states neither "
            f"its step nor its stopping rule) |")
    if "ptft_speed" in res:
        pt = res["ptft_speed"]
        rt = pt["rates"]
        grid = (f"; the chapter's Fig. 1c grid ({pt['grid_cells']} cells) "
                f"{_dur(pt['grid_cpu_s'])} CPU" if "grid_cpu_s" in pt else "")
        out.append(
            f"| small ReLU networks of papers 003 and 004 as the ptft_relu chapter trains them "
            f"(d = {pt['d']}, width {pt['width']}, {pt['networks']} networks: n = "
            f"{', '.join(map(str, pt['ns']))} x {pt['draws']} draws; MTL with n_aux = "
            f"{pt['n_aux']}; `ptft_speed.py`){_reduced(pt)} | "
            f"{rt['train_units']['cpu']:,.0f} network-steps per CPU second (`train_units`, "
            f"compiled kernel) against {rt['train_units [torch]']['cpu']:,.0f} (its batched torch "
            f"loop); MTL {rt['train_units_mtl']['cpu']:,.0f} against "
            f"{rt['train_units_mtl [torch]']['cpu']:,.0f}{grid} | - (papers 003 and 004 state "
            f"neither their step nor their stopping rule) |")
    bk = res.get("book_time")
    if bk is not None:
        ch = bk["chapters_s"]
        top = sorted(ch, key=ch.get, reverse=True)[:2]
        out.append(
            f"| the whole book at `paper` scale from empty caches (`make book`, {len(ch)} "
            f"chapters on {bk['jobs']} processes, {bk['cores']} cores; `_build/book-time.json`, "
            f"{bk['date']}) | {_dur(bk['wall_s'])} wall; the chapters {_dur(sum(ch.values()))} "
            f"together, the longest " + ", ".join(f"{n} {_dur(ch[n])}" for n in top) + " | - |")
    if chapter_seconds is not None:
        out.append(f"| the ReLU chapter at `paper` scale, executed as the book does (`make book`; "
                   f"jupyter-cache record) | {_dur(chapter_seconds)} | - |")
    return out


def _scheduler(spec: str) -> str:
    """The sweep backend of a record in words."""
    if spec == "local":
        return "one process (cells in sequence)"
    if spec.startswith("local:"):
        return f"{spec[6:]} local worker processes (`TRANSFERKIT_SCHEDULER={spec}`)"
    return f"a Dask cluster ({spec})"


def block(res: dict, chapter_seconds: float | None) -> str:
    """The text between the markers: how it was measured, then the table."""
    f1 = res["fig1_grid"]
    head = (f"Generated by `make bench` (`benchmarks/speed_table.py`) on {f1['date']}: "
            f"{f1['cores']} cores, torch with {f1['threads']} threads, device {f1['device']}, "
            f"sweeps on {_scheduler(f1.get('scheduler', 'local'))}.")
    return "\n".join([head, ""] + rows(res, chapter_seconds))


def replace_between_markers(text: str, body: str) -> str:
    """``text`` with everything between the marker lines replaced by ``body``."""
    i, j = text.find(START), text.find(END)
    if i < 0 or j < i:
        raise ValueError(f"markers {START} ... {END} not found (in this order)")
    return text[:i + len(START)] + "\n" + body + "\n" + text[j:]


def chapter_time(cache: Path, name: str = "relu_student_teacher") -> float | None:
    """Execution seconds of a chapter from a paper-scale book's jupyter-cache, or None."""
    scale_file = cache.parent / ".exec-scale"
    if not cache.is_dir() or not scale_file.exists() or scale_file.read_text().strip() != "paper":
        return None
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from book_times import ROOT, records

    rec = records(cache, [ROOT / "notebooks" / f"{name}.py"])[0]
    return None if rec["traceback"] else rec["seconds"]


def _record_authors(sr) -> str:
    """The authors' column of the one-cell row: the same work (with their fine-tuning) when
    the JSON has it, and the cell without fine-tuning."""
    cells = sr["cells"]
    head = f"({sr['epochs']:,} epochs x {sr['draws']} instances each"
    without = "; ".join(f"{_dur(c['authors_s'])}, {c['simulate_ratio']:,.0f}x" for c in cells)
    if not all("authors_ft_s" in c for c in cells):
        return f"pretraining, scratch and last layer {head}; fine-tuning not counted): {without}"
    return (f"pretraining, scratch, last layer and fine-tuning {head}): "
            + "; ".join(f"{_dur(c['authors_ft_s'])}, {c['simulate_ratio_ft']:,.0f}x" for c in cells)
            + f"; without their fine-tuning: {without}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="folder of the benchmarks' JSON files")
    ap.add_argument("readme", type=Path, help="the README to update in place")
    ap.add_argument("--book-cache", type=Path, default=Path("_build/.jupyter_cache"),
                    help="jupyter-cache of the paper-scale book (for the chapter-time row)")
    ap.add_argument("--allow-reduced", action="store_true",
                    help="accept smoke-scale or --quick results (each row then says so)")
    args = ap.parse_args(argv)
    res = {}
    for name in BENCHMARKS:
        f = args.results / f"{name}.json"
        if not f.exists():
            print(f"error: {f} missing (run `make bench`); README not changed", file=sys.stderr)
            return 1
        res[name] = json.loads(f.read_text())
    for name in OPTIONAL:
        f = args.results / f"{name}.json"
        if f.exists():
            res[name] = json.loads(f.read_text())
    reduced = [n for n, r in res.items() if r.get("scale") != "paper" or r.get("quick")]
    if reduced and not args.allow_reduced:
        print(f"error: reduced-scale results ({', '.join(reduced)}); README not changed "
              f"(--allow-reduced to write them anyway)", file=sys.stderr)
        return 1
    bk = args.book_cache.parent / "book-time.json"
    if bk.exists():
        rec = json.loads(bk.read_text())
        if rec.get("scale") == "paper":
            res["book_time"] = rec
    body = block(res, chapter_time(args.book_cache))
    args.readme.write_text(replace_between_markers(args.readme.read_text(), body))
    print(f"speed table written to {args.readme}:\n{body}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
