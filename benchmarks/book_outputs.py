"""The printed outputs of a book build, read from its jupyter-cache records, and their
comparison with another build's.

    python benchmarks/book_outputs.py _build/.jupyter_cache [--out DIR] [--compare OTHER]

For every chapter (``notebooks/*.py`` in the order of ``_toc.yml``, or the notebooks named)
this script takes the newest record of that notebook in the cache (by file name, so that
the caches of two clones compare) and writes what a reader sees printed: each code cell's
stream output, its Markdown and plain-text results, the SHA-256 of each image, and any
error, tagged with the code cell's index (``[3 stdout]``).  Two uses:

* **Reading the prose against the outputs** (``DEVELOPERS.md``, "Reproduce before you
  disagree"): ``--out DIR`` writes one ``<chapter>.txt`` per chapter.
* **Checking that a change kept every printed number** (a refactor, a faster trainer):
  ``--compare OTHER`` compares this build with the build whose cache is ``OTHER`` after
  dropping what differs from run to run or with unrelated edits (durations, the build's own
  path, the line numbers in warnings' locations), and prints per
  chapter ``same`` or the lines that differ; exit status 1 if any chapter differs or is
  missing from either cache.

Nothing is executed; no network.
"""
from __future__ import annotations

import argparse
import base64
import difflib
import hashlib
import re
import sys
from pathlib import Path

from book_times import chapter_notebooks, newest_records

#: A printed duration ("wall time 40 s", "29 s;", "(3.57 s per cell)", "took 1.2 min"): the
#: lines that hold one differ from run to run and are left out of a comparison.
DURATION = re.compile(r"wall time|\d s( |\(|;|,|\)|$)|\d s per|per cell|\d min\b")
#: The header of a stream output: a cell's stream may reach the notebook in one piece or in
#: several, so a comparison leaves the headers out (the lines keep their cell's place).
STREAM = re.compile(r"^\[\d+ (stdout|stderr)\]$")
#: The line number in a warning's location ("diagonal.py:728: UserWarning"): it moves when the
#: code above it changes, so a comparison reads it as ``:N:``.
WARNING_LINE = re.compile(r"\.py:\d+:")


def _merged_streams(outputs) -> list:
    """A cell's outputs with each run of consecutive stream outputs of one name joined into
    one: the kernel may cut a stream anywhere, also inside a line."""
    out = []
    for o in outputs:
        if (o.get("output_type") == "stream" and out and out[-1].get("output_type") == "stream"
                and out[-1].get("name") == o.get("name")):
            out[-1] = {**out[-1], "text": str(out[-1].get("text", "")) + str(o.get("text", ""))}
        else:
            out.append(o)
    return out


def render(nb, root: str | None = None) -> str:
    """The printed outputs of an executed notebook as text (see the module docstring);
    ``root``, the folder the build ran in, is written as ``<root>``."""
    lines = []
    k = -1
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        k += 1
        for o in _merged_streams(cell.get("outputs", [])):
            kind = o.get("output_type")
            if kind == "stream":
                lines.append(f"[{k} {o.get('name', 'stream')}]")
                lines.extend(str(o.get("text", "")).splitlines())
            elif kind in ("execute_result", "display_data"):
                for mime, value in o.get("data", {}).items():
                    if mime in ("text/plain", "text/markdown"):
                        lines.append(f"[{k} {mime}]")
                        lines.extend(str(value).splitlines())
                    elif mime.startswith("image/") and mime != "image/svg+xml":
                        blob = base64.b64decode(value) if isinstance(value, str) else value
                        lines.append(f"[{k} {mime}] sha256 {hashlib.sha256(blob).hexdigest()[:16]}")
            elif kind == "error":
                lines.append(f"[{k} error] {o.get('ename')}: {o.get('evalue')}")
    text = "\n".join(lines) + "\n"
    return text.replace(root, "<root>") if root else text


def chapter_outputs(cache_path: Path, names: list[str]) -> dict:
    """``{name: text}`` for the chapters of ``names`` that have a record in the cache."""
    from jupyter_cache import get_cache

    cache = get_cache(str(cache_path))
    recs = newest_records(cache, key=lambda uri: Path(uri).stem)   # by name: clones compare
    out = {}
    for name in names:
        rec = recs.get(name)
        if rec is not None:
            nb = cache.get_cache_bundle(rec.pk).nb
            out[name] = render(nb, str(Path(rec.uri).resolve().parents[1]))
    return out


def comparable(text: str) -> list[str]:
    """The lines of ``render``'s text that do not change from run to run of the same code, in
    a fixed order: lines with a duration dropped, and the lines of each cell's output sorted
    (two streams of one cell may interleave differently)."""
    cells: dict = {}
    tag = ""
    for line in text.splitlines():
        m = re.match(r"\[(\d+) ", line)
        if m:
            tag = m.group(1)
            if STREAM.match(line):           # a cell's stream may come in one piece or several
                continue
        if not DURATION.search(line):
            cells.setdefault(tag, []).append(WARNING_LINE.sub(".py:N:", line))
    return [line for tag in sorted(cells, key=lambda t: int(t) if t.isdigit() else -1)
            for line in sorted(cells[tag])]


def compare(a: dict, b: dict, names: list[str]) -> tuple[list[str], bool]:
    """Report lines and whether every chapter of ``names`` printed the same in both builds."""
    report, same = [], True
    for name in names:
        if name not in a or name not in b:
            report.append(f"{name}: missing from {'this' if name not in a else 'the other'} build")
            same = False
            continue
        la, lb = comparable(a[name]), comparable(b[name])
        if la == lb:
            report.append(f"{name}: same")
            continue
        same = False
        diff = [d for d in difflib.unified_diff(lb, la, "other", "this", n=0, lineterm="")
                if not d.startswith("@@")]
        report.append(f"{name}: {sum(d[:1] in '+-' for d in diff[2:])} line(s) differ")
        report.extend("    " + d for d in diff[2:])
    return report, same


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache", type=Path, help="the build's .jupyter_cache folder")
    ap.add_argument("--out", type=Path, default=None, help="write <chapter>.txt files here")
    ap.add_argument("--compare", type=Path, default=None,
                    help="another build's .jupyter_cache: report the outputs that differ")
    ap.add_argument("notebooks", nargs="*", type=Path,
                    help="chapters (default: notebooks/*.py in _toc.yml order)")
    args = ap.parse_intermixed_args(argv)
    names = [p.stem for p in (args.notebooks or chapter_notebooks())]
    for c in [args.cache] + ([args.compare] if args.compare else []):
        if not c.is_dir():
            print(f"error: no jupyter-cache at {c}", file=sys.stderr)
            return 1
    outs = chapter_outputs(args.cache, names)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, text in outs.items():
            (args.out / f"{name}.txt").write_text(text)
        print(f"{len(outs)} chapter output(s) written to {args.out}")
    if args.compare is None:
        return 0
    report, same = compare(outs, chapter_outputs(args.compare, names), names)
    print("\n".join(report))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
