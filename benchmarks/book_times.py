"""Chapter execution times of a book build, read from its jupyter-cache records.

Run by ``make book`` (prints the table at the end) and ``make test`` (with ``--check``)::

    python benchmarks/book_times.py _build/.jupyter_cache [--since EPOCH] [--check]

``jupyter-book build`` with ``execute_notebooks: cache`` stores every successfully executed
notebook in ``<build>/_build/.jupyter_cache`` together with its execution time
(``execution_seconds``); a failed execution leaves a traceback on the notebook's project
record instead.  For every chapter notebook (``notebooks/*.py``, in the order of
``_toc.yml``) this script reads the notebook as the book does (jupytext, ``py:percent``),
finds the cache record that matches its current code cells and prints its execution time
and whether it was executed by this build (record created after ``--since``, the build's
start in seconds since the epoch) or taken from the cache of an earlier one.

With ``--check`` it fails (exit 1) unless every notebook has a matching record created
by this build and no traceback: the check that ``make test`` executed every notebook once,
including a notebook that ``_toc.yml`` forgot (the book silently skips files outside the
table of contents).  Nothing here executes a notebook; no network.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def toc_files(root: Path = ROOT) -> list[str]:
    """The ``file:`` entries of ``_toc.yml``, in order (``notebooks/relu_student_teacher``...)."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    order: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                order.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc)
    return order


def chapter_notebooks(root: Path = ROOT) -> list[Path]:
    """``notebooks/*.py`` in the order of ``_toc.yml``; notebooks missing from it come last."""
    order = toc_files(root)
    nbs = sorted((root / "notebooks").glob("*.py"))
    rank = {f: i for i, f in enumerate(order)}
    return sorted(nbs, key=lambda p: rank.get(f"notebooks/{p.stem}", len(rank)))


def read_notebook(path: Path):
    """The notebook as the book reads it (``nb_custom_formats``: jupytext, ``py:percent``)."""
    import jupytext

    return jupytext.reads(path.read_text(), fmt="py:percent")


def newest_records(cache, key=lambda uri: Path(uri).resolve()) -> dict:
    """The newest cache record of every notebook in a jupyter-cache, keyed by ``key`` of its
    path (default: the resolved path; ``book_outputs.py`` keys by name, to compare clones)."""
    by_uri = {}
    for rec in cache.list_cache_records():
        k = key(rec.uri)
        if k not in by_uri or rec.created > by_uri[k].created:
            by_uri[k] = rec
    return by_uri


def records(cache_path: Path, notebooks: list[Path]) -> list[dict]:
    """One dict per notebook: ``name``, ``seconds`` (None if no record), ``created``, ``traceback``."""
    from jupyter_cache import get_cache

    cache = get_cache(str(cache_path))
    tracebacks = {}
    for rec in cache.list_project_records():
        if rec.traceback:  # set by a failed execution, removed by a successful one
            tracebacks[Path(rec.uri).resolve()] = rec.traceback
    by_uri = newest_records(cache)
    out = []
    for nb in notebooks:
        edited = False
        try:
            rec = cache.match_cache_notebook(read_notebook(nb))
        except KeyError:  # no record of the current code: of an earlier version, if any
            rec = by_uri.get(nb.resolve())
            edited = rec is not None
        out.append({"name": nb.stem,
                    "seconds": None if rec is None else rec.data.get("execution_seconds"),
                    "created": None if rec is None else rec.created.timestamp(),
                    "edited": edited,
                    "traceback": tracebacks.get(nb.resolve())})
    return out


def table(rows: list[dict], since: float | None = None) -> str:
    """The chapter-time table as text."""
    lines = [f"{'chapter':24s} {'seconds':>9s}  source", f"{'-' * 24} {'-' * 9}  {'-' * 30}"]
    total = fresh = 0.0
    for r in rows:
        if r["traceback"]:
            how = "FAILED (traceback in the cache's project record)"
        elif r["seconds"] is None:
            how = "no record (not executed?)"
        elif since is not None and r["created"] < since:
            how = "cached (executed by an earlier build)"
        else:
            how = "executed by this build"
            fresh += r["seconds"] or 0.0
        if r["edited"] and not r["traceback"]:
            how += " (the notebook's code changed since)"
        sec = "-" if r["seconds"] is None else f"{r['seconds']:9.1f}"
        total += r["seconds"] or 0.0
        lines.append(f"{r['name']:24s} {sec:>9s}  {how}")
    lines.append(f"{'total':24s} {total:9.1f}  ({fresh:.1f} s executed by this build)"
                 if since is not None else f"{'total':24s} {total:9.1f}")
    return "\n".join(lines)


def write_record(path: Path, rows: list[dict], since, wall, jobs, scale) -> str:
    """Write ``book-time.json`` (what ``benchmarks/speed_table.py`` reads for its whole-book
    row) when every chapter was executed, successfully, by this build (``since``): the date,
    scale, cores, processes, wall seconds and each chapter's seconds.  Returns what it did,
    in words; a partial build (some chapters from the cache) writes nothing."""
    import datetime
    import json
    import os

    if since is None or wall is None or jobs is None or scale is None:
        raise ValueError("--record needs --since, --wall, --jobs and --scale")
    fresh = [r for r in rows if not r["traceback"] and r["seconds"] is not None
             and r["created"] >= since]
    if len(fresh) != len(rows):
        return (f"{path} not written: {len(rows) - len(fresh)} of {len(rows)} chapters were not "
                f"executed by this build (the record is of builds from empty caches)")
    rec = {"date": datetime.date.today().isoformat(), "scale": scale, "cores": os.cpu_count(),
           "jobs": int(jobs), "wall_s": float(wall),
           "chapters_s": {r["name"]: float(r["seconds"]) for r in rows}}
    path.write_text(json.dumps(rec, indent=1) + "\n")
    return f"book times written to {path}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache", type=Path, help="the build's .jupyter_cache folder")
    ap.add_argument("--since", type=float, default=None,
                    help="start of the build (seconds since the epoch): older records are 'cached'")
    ap.add_argument("--check", action="store_true",
                    help="fail unless every notebook was executed, successfully, by this build")
    ap.add_argument("--record", type=Path, default=None,
                    help="write the build's times to this JSON file (book-time.json) if this "
                         "build executed every chapter (a build from empty caches)")
    ap.add_argument("--wall", type=float, default=None, help="the build's wall seconds (--record)")
    ap.add_argument("--jobs", type=int, default=None, help="chapters executed at once (--record)")
    ap.add_argument("--scale", default=None, help="TRANSFERKIT_SCALE of the build (--record)")
    ap.add_argument("notebooks", nargs="*", type=Path,
                    help="notebooks to report (default: notebooks/*.py in _toc.yml order)")
    args = ap.parse_intermixed_args(argv)
    nbs = args.notebooks or chapter_notebooks()
    if not args.cache.is_dir():
        print(f"no jupyter-cache at {args.cache}", file=sys.stderr)
        return 1 if args.check else 0
    rows = records(args.cache, nbs)
    print(f"Chapter execution times (jupyter-cache records in {args.cache}):")
    print(table(rows, args.since))
    if args.record is not None:
        print(write_record(args.record, rows, args.since, args.wall, args.jobs, args.scale))
    if args.check:
        bad = [r["name"] for r in rows
               if r["traceback"] or r["seconds"] is None
               or (args.since is not None and r["created"] < args.since)]
        if bad:
            print(f"error: not executed successfully by this build: {', '.join(bad)}",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
