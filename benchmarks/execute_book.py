"""Execute the book's chapter notebooks in parallel into its jupyter-cache, as the book would.

Run by ``make book`` and ``make test`` before ``jupyter-book build``::

    python benchmarks/execute_book.py _build/.jupyter_cache [--jobs N]

Why: ``jupyter-book build`` (myst-nb, ``execute_notebooks: cache``) executes the notebooks
one after another, and every chapter runs with one thread
(:func:`transferkit.config.threads`), so a build used one core of two.  This script
executes the chapters of ``_toc.yml`` on ``--jobs`` worker processes (default: the number
of cores) and stores each executed notebook in the jupyter-cache exactly as myst-nb does
(``myst_nb.core.execute.cache``: the notebook read with jupytext, ``py:percent``; executed
by ``jupyter_cache``'s ``single_nb_execution`` in the notebook's folder with the book's
``timeout`` and ``allow_errors`` from ``_config.yml``; cached with ``execution_seconds``,
the traceback of a failure set on its project record).  The build then finds every
chapter in the cache and executes nothing; a chapter that failed here is not cached, so
the build executes it again and reports the failure as it always did.

Chapters already in the cache (same code cells) are skipped, as the build would.  The
longest chapters start first (their time in the cache's newest record of the same
notebook, else the order of ``HEAVY_FIRST``): with two workers the book takes about the
longest chapter or half the total, whichever is larger.  Exit status 1 if a chapter failed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from book_times import ROOT, chapter_notebooks, newest_records, read_notebook, toc_files  # noqa: E402

#: Scheduling order when the cache holds no earlier time of a chapter (paper scale, heaviest
#: first, from the chapter times of earlier builds); it changes no result, only the order.
#: The paper-scale build of 2026-11-28 (seconds): relu_student_teacher 3,987, lenet_transfer
#: 2,011, ptft_relu 1,612, ntk_similarity 852, diagonal_networks 657, regularisation 516,
#: predictors 351, finetuning 269, mnist_table 230, linear_teachers 141, the other three
#: under 75 each.  In the order before it, ptft_relu came sixth and ended the build 66 s after
#: the order below would have (5,483 s against 5,417 s, replaying the times).
HEAVY_FIRST = ("relu_student_teacher", "lenet_transfer", "ptft_relu", "ntk_similarity",
               "diagonal_networks", "regularisation", "predictors", "finetuning", "mnist_table",
               "linear_teachers", "linear_transfer", "lazy_rich", "dataset_distances")


def toc_notebooks(root: Path = ROOT) -> list[Path]:
    """The chapter notebooks that ``_toc.yml`` lists (the book builds no other)."""
    files = set(toc_files(root))
    return [p for p in chapter_notebooks(root) if f"notebooks/{p.stem}" in files]


def execution_settings(root: Path = ROOT) -> dict:
    """``timeout`` and ``allow_errors`` of ``_config.yml``'s ``execute`` block (myst-nb's defaults
    of 30 s and False where absent)."""
    import yaml

    ex = (yaml.safe_load((root / "_config.yml").read_text()) or {}).get("execute", {}) or {}
    return {"timeout": ex.get("timeout", 30), "allow_errors": bool(ex.get("allow_errors", False))}


def _book_environment(figures: str) -> None:
    """Worker initializer: what ``transferkit.sphinxext`` sets for the build's kernels (they
    inherit it): ``TRANSFERKIT_BOOK_BUILD=1`` and, unless set, ``TRANSFERKIT_FIGURES``, the
    build's ``figures`` folder next to its jupyter-cache."""
    os.environ["TRANSFERKIT_BOOK_BUILD"] = "1"
    if not os.environ.get("TRANSFERKIT_FIGURES", "").strip():
        os.environ["TRANSFERKIT_FIGURES"] = figures


def _execute(path: str, timeout, allow_errors: bool):
    """Worker: read and execute one notebook as myst-nb does; the executed notebook, seconds
    and the traceback text (None on success)."""
    from jupyter_cache.executors.utils import single_nb_execution

    nb = read_notebook(Path(path))
    start = time.perf_counter()
    try:
        result = single_nb_execution(nb, cwd=str(Path(path).parent), allow_errors=allow_errors,
                                     timeout=timeout, meta_override=True)
    except Exception:                 # a dead kernel, say: reported, and the build retries
        return path, nb, time.perf_counter() - start, traceback.format_exc()
    err = None if result.err is None else (result.exc_string or repr(result.err))
    return path, nb, result.time, err


def execute_into(cache_path: Path, notebooks: list[Path], jobs: int, timeout,
                 allow_errors: bool = False, log=print) -> list[str]:
    """Execute the ``notebooks`` not yet in the jupyter-cache at ``cache_path`` on ``jobs``
    processes, longest first, and cache each as myst-nb does; the names of those that failed."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from jupyter_cache.cache.db import NbProjectRecord

    cache = get_cache(str(cache_path))
    past = newest_records(cache)
    todo = []
    for nb in notebooks:
        try:
            cache.match_cache_notebook(read_notebook(nb))
            continue                          # the build will use this record
        except KeyError:
            pass
        rec = past.get(nb.resolve())
        seconds = rec.data.get("execution_seconds") if rec is not None else None
        rank = HEAVY_FIRST.index(nb.stem) if nb.stem in HEAVY_FIRST else len(HEAVY_FIRST)
        todo.append((-(seconds or 0.0), rank, nb))
    todo.sort(key=lambda t: (t[0], t[1]))
    if not todo:
        log("execute_book: every chapter is in the cache")
        return []
    workers = min(jobs, len(todo))
    log(f"execute_book: {len(todo)} chapter(s) on {workers} process(es), "
        f"timeout {timeout} s per cell")
    failed = []
    start = time.time()
    figures = str((Path(cache_path).absolute().parent / "figures").resolve())
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_book_environment,
                               initargs=(figures,))
    try:
        # as myst-nb: the notebook's absolute path (symbolic links kept) names its records
        futures = {pool.submit(_execute, str(nb.absolute()), timeout, allow_errors): nb
                   for _, _, nb in todo}
        for fut in as_completed(futures):
            name = futures[fut].stem
            try:
                path, nb, seconds, err = fut.result()
                stage = cache.add_nb_to_project(path)      # as myst-nb: no read_data for .py
                NbProjectRecord.remove_tracebacks([stage.pk], cache.db)
                if err is not None:
                    NbProjectRecord.set_traceback(stage.uri, err, cache.db)
                else:
                    cache.cache_notebook_bundle(
                        CacheBundleIn(nb, stage.uri, data={"execution_seconds": seconds}),
                        check_validity=False, overwrite=True)
            except Exception as exc:       # a worker died (the pool is then broken), a
                failed.append(name)         # cache error: the build executes the chapter
                log(f"  {name}: not executed here ({type(exc).__name__}: {exc}); the build "
                    f"executes it")
                continue
            if err is not None:
                failed.append(name)
                log(f"  {name}: FAILED after {seconds:.1f} s (the build executes it again "
                    f"and reports it)\n{err}")
            else:
                log(f"  {name}: {seconds:.1f} s ({time.time() - start:.0f} s since start)")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return failed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache", type=Path, help="the build's .jupyter_cache folder")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="notebooks executed at once (default: the number of cores)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, got {args.jobs}")
    failed = execute_into(args.cache, toc_notebooks(), args.jobs,
                          log=lambda s: print(s, flush=True), **execution_settings())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
