r"""Provenance of the book's figures: every figure is saved with a record of how it was made.

A notebook shows a figure with one call::

    provenance.record(fig, "fig1", params={"sigma": 0.2, "d": 500}, seeds=0,
                      cli="transferkit phase-diagram --method linear --sigma 0.2 --simulate")

``record`` renders the figure once (PNG for matplotlib, the HTML fragment for plotly), writes
the file and a JSON *sidecar* (the parameters, seeds, scale, package version, git commit,
wall time and the command line that redraws it) into the records folder
(:func:`figures_dir`), and displays exactly the rendered image in the notebook, with the
record attached to the output's metadata (key ``"transferkit"``).  Because the record
travels with the output, it survives jupyter-cache: a chapter that is not re-executed
still carries the record of the run that drew its figures.

This module is also a Sphinx extension (``transferkit.provenance`` in the ``extensions``
of ``_config.yml``).  It

* sets ``TRANSFERKIT_FIGURES`` to ``<build>/figures`` (next to ``<build>/html``, unless the
  variable is set) before any notebook runs, so the kernels write there;
* replaces the ``{transferkit-figures}`` directive with the list of every figure of the
  book and its record.  The list is made in the *write* phase (``doctree-resolved``),
  after every document has been read and therefore every notebook executed, whatever
  the order in which Sphinx reads the documents.  The records come from the documents
  themselves: next to each figure, ``record`` outputs the record as an invisible
  ``<script type="application/json">`` (:func:`marker_html`), which myst-nb renders into
  the page and jupyter-cache keeps with the other outputs, so a chapter taken from the
  cache brings the records of the run that drew it;
* at the end of the build makes ``<build>/figures`` hold exactly the book's figures:
  ``<name>.png`` (byte for byte the image on the page) or ``<name>.plotly.html`` (the
  plotly fragment the page draws), and
  ``<name>.json``, plus ``index.json``; stale files of earlier builds are removed.
"""
from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import json
import math
import os
import platform
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SCHEMA", "FigureRecord", "figures_dir", "git_revision", "harvest", "load_records",
           "make_record", "marker_html", "record", "records_in_html", "save", "setup"]

SCHEMA = "transferkit-figure-record/1"
METADATA_KEY = "transferkit"
ENV_VAR = "TRANSFERKIT_FIGURES"
_PACKAGE = Path(__file__).resolve().parent
_T0 = time.time()  # the kernel imports transferkit at the start of a notebook
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


# ---------------------------------------------------------------- where

def _project_root() -> Path | None:
    """The repository holding the package (recognised by its pyproject.toml), or None."""
    root = _PACKAGE.parent
    return root if (root / "pyproject.toml").is_file() else None


def figures_dir() -> Path:
    """The records folder: ``$TRANSFERKIT_FIGURES``, else ``<repo>/_build/figures``.

    A relative ``$TRANSFERKIT_FIGURES`` is taken relative to the repository (notebooks run
    with their own folder as the working directory); outside a repository, relative to
    the working directory.  The book build sets the variable to its own
    ``<build>/figures`` (see :func:`setup`).
    """
    root = _project_root()
    value = os.environ.get(ENV_VAR, "").strip()
    if value:
        path = Path(value).expanduser()
        if not path.is_absolute():
            path = (root or Path.cwd()) / path
        return path.resolve()
    return ((root or Path.cwd()) / "_build" / "figures").resolve()


# ---------------------------------------------------------------- what

def git_revision(path=None) -> dict | None:
    """``{"commit": sha, "dirty": bool}`` of the git checkout holding ``path``, else None.

    ``path`` defaults to the package's folder.  Never raises: without git, outside a
    checkout or on any error the answer is ``None``.
    """
    where = str(path or _PACKAGE)
    try:
        sha = subprocess.run(["git", "-C", where, "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        if sha.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40}", sha.stdout.strip()):
            return None
        status = subprocess.run(["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        return {"commit": sha.stdout.strip(), "dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return None


def _versions() -> dict:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for pkg in ("numpy", "scipy", "torch", "matplotlib", "plotly"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def _jsonable(value):
    """``value`` as plain JSON: numpy scalars and arrays, tuples, paths; inf as a string."""
    import numpy as np

    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "inf", "-inf", "nan": JSON has no such numbers
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _check_name(name) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError("name must be 1-100 characters of letters, digits, '_', '.' or '-', "
                         f"starting with a letter or digit (got {name!r})")
    return name


def make_record(name: str, *, params=None, seeds=None, cli=None, wall_time=None,
                caption=None) -> dict:
    """The provenance record of figure ``name`` (a JSON-ready dict).

    ``wall_time`` (seconds) defaults to the time since ``transferkit`` was imported, i.e.
    since the start of the notebook; ``wall_time_basis`` says which.
    """
    from . import __version__
    from .config import scale

    _check_name(name)
    if wall_time is not None and not (isinstance(wall_time, (int, float)) and wall_time >= 0
                                      and math.isfinite(wall_time)):
        raise ValueError(f"wall_time must be a finite number of seconds >= 0 (got {wall_time!r})")
    if cli is not None and not isinstance(cli, str):
        raise ValueError(f"cli must be a command line (str) or None (got {cli!r})")
    rev = git_revision()
    return {
        "schema": SCHEMA,
        "name": name,
        "caption": caption,
        "params": _jsonable(params or {}),
        "seeds": _jsonable(seeds),
        "scale": scale(),
        "cli": cli,
        "transferkit_version": __version__,
        "git_commit": rev["commit"] if rev else None,
        "git_dirty": rev["dirty"] if rev else None,
        "wall_time_s": round(float(time.time() - _T0 if wall_time is None else wall_time), 3),
        "wall_time_basis": "since the notebook started" if wall_time is None else "as passed",
        "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "versions": _versions(),
    }


# ---------------------------------------------------------------- render and save

def _is_plotly(fig) -> bool:
    return hasattr(fig, "to_plotly_json") and hasattr(fig, "to_json")


def _png_bytes(fig) -> tuple[bytes, int]:
    """PNG of a matplotlib figure at the style's ``savefig.dpi``; returns (bytes, dpi)."""
    import io

    import matplotlib as mpl

    dpi = mpl.rcParams["savefig.dpi"]
    dpi = fig.dpi if dpi == "figure" else float(dpi)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight",
                metadata={"Software": None})  # no matplotlib version stamp: same bytes
    return buf.getvalue(), dpi


def _png_size(png: bytes) -> tuple[int, int]:
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _render(fig, rec: dict) -> tuple[str, bytes]:
    """(file suffix, content) of the figure; fills ``rec["file"]`` details."""
    if _is_plotly(fig):
        from .plotting import plotly_fragment

        content = plotly_fragment(fig).encode("utf-8")  # drawn as is on the page
        rec["kind"] = "plotly"
        suffix = ".plotly.html"
    elif hasattr(fig, "savefig"):
        content, dpi = _png_bytes(fig)
        w, h = _png_size(content)
        rec["kind"] = "png"
        rec["dpi"] = dpi
        rec["size_px"] = [w, h]
        rec["display_width_px"] = round(w * fig.dpi / dpi)
        suffix = ".png"
    else:
        raise ValueError(f"fig must be a matplotlib or plotly figure (got {type(fig).__name__})")
    rec["file"] = rec["name"] + suffix
    rec["sha256"] = hashlib.sha256(content).hexdigest()
    return suffix, content


def _write(directory: Path, rec: dict, content: bytes) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    _atomic_write(directory / rec["file"], content)
    _atomic_write(directory / (rec["name"] + ".json"),
                  (json.dumps(rec, indent=2, allow_nan=False) + "\n").encode("utf-8"))


def _atomic_write(path: Path, content: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(content)
    os.replace(tmp, path)


def save(fig, path, *, params=None, seeds=None, cli=None, wall_time=None, caption=None) -> dict:
    """Save ``fig`` to ``path`` (``.png`` etc.) with a sidecar ``<path minus suffix>.json``.

    For the command line: the image goes exactly where asked, in any format matplotlib
    writes (``.png``, ``.pdf``, ``.svg``); the record says which command made it.
    Returns the record.
    """
    path = Path(path)
    stem = re.sub(r"[^A-Za-z0-9_.-]", "-", path.stem) or "figure"
    rec = make_record(stem if _NAME.match(stem) else "figure", params=params, seeds=seeds,
                      cli=cli, wall_time=wall_time, caption=caption)
    path.parent.mkdir(parents=True, exist_ok=True)
    if _is_plotly(fig):
        content = (fig.to_html(include_plotlyjs=True, full_html=True).encode("utf-8")
                   if path.suffix.lower() in (".html", ".htm") else fig.to_json().encode("utf-8"))
        rec["kind"] = "plotly"
    else:
        import io

        fmt = path.suffix.lstrip(".").lower() or "png"
        if fmt == "png":  # exactly as record() renders it: the same figure, the same bytes
            content, _ = _png_bytes(fig)
        else:
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, bbox_inches="tight")
            content = buf.getvalue()
        rec["kind"] = path.suffix.lstrip(".").lower() or "png"
    rec["scale"] = None  # the command line states every parameter itself
    rec["file"] = path.name
    rec["sha256"] = hashlib.sha256(content).hexdigest()
    _atomic_write(path, content)
    _atomic_write(path.with_suffix(".json"),
                  (json.dumps(rec, indent=2, allow_nan=False) + "\n").encode("utf-8"))
    return rec


# ---------------------------------------------------------------- the notebook API

@dataclass
class FigureRecord:
    """What :func:`record` saved: the figure, its record and the files written.

    Displaying it shows nothing more (``record`` has displayed the figure already), so a
    notebook cell may end with ``provenance.record(...)``.
    """

    figure: object = field(repr=False)
    record: dict
    files: list

    def _ipython_display_(self):  # the figure is on the page already
        pass


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def record(fig, name: str, *, params=None, seeds=None, cli=None, wall_time=None,
           caption=None, directory=None, display=None) -> FigureRecord:
    """Save ``fig`` with its provenance record, display it, and return a :class:`FigureRecord`.

    Parameters
    ----------
    fig : matplotlib Figure or plotly Figure
    name : str
        Unique name of the figure in the book (``"fig1"``, ``"fig1a-interactive"``): the
        file names in the records folder.
    params : dict
        The parameters that determine the figure (JSON-able; numpy values are converted).
    seeds : int, list or dict
        The seeds of every random draw behind the figure.
    cli : str
        A ``transferkit`` command line that redraws the figure (see ``transferkit --help``).
    wall_time : float, optional
        Seconds the figure took; default: seconds since the notebook imported transferkit.
    caption : str, optional
        A one-line description for the list of figures.
    directory : path, optional
        Records folder (default :func:`figures_dir`).
    display : bool, optional
        Show the figure (default: when running in a Jupyter kernel).  A matplotlib figure
        is shown as the very PNG that was saved and then closed, so that the inline
        backend does not show it a second time; a plotly figure is shown with
        :func:`transferkit.plotting.show_plotly`.
    """
    rec = make_record(name, params=params, seeds=seeds, cli=cli, wall_time=wall_time,
                      caption=caption)
    suffix, content = _render(fig, rec)
    directory = Path(directory) if directory is not None else figures_dir()
    files = []
    try:
        _write(directory, rec, content)
        files = [directory / rec["file"], directory / (name + ".json")]
    except OSError as exc:  # a read-only checkout must not stop a notebook: say so
        import warnings

        warnings.warn(f"could not write the record of figure {name!r} to {directory}: {exc}",
                      stacklevel=2)
    if display is None:
        display = _in_kernel()
    if display:
        _display(fig, rec, content)
    if rec["kind"] == "png":
        import matplotlib.pyplot as plt

        plt.close(fig)
    return FigureRecord(fig, rec, files)


_MARKER_CLASS = "transferkit-provenance"
_MARKER = re.compile(r'<script type="application/json" class="' + _MARKER_CLASS
                     + r'">(.*?)</script>', re.DOTALL)


def marker_html(rec: dict) -> str:
    """The record as an invisible ``<script type="application/json">`` element.

    It is an output of its own right after the figure: myst-nb renders it into the page
    (and jupyter-cache keeps it with the other outputs), so the book build reads the
    records from the documents themselves, whether a chapter ran or came from the cache.
    """
    payload = json.dumps(rec, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return f'<script type="application/json" class="{_MARKER_CLASS}">{payload}</script>'


def records_in_html(html: str) -> list[dict]:
    """The records embedded by :func:`marker_html` in a piece of HTML, in order."""
    out = []
    for m in _MARKER.finditer(html):
        try:
            rec = json.loads(m.group(1))
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("schema") == SCHEMA:
            out.append(rec)
    return out


def _display(fig, rec: dict, content: bytes) -> None:
    from IPython.display import display

    meta = {METADATA_KEY: {"figure": rec}}
    marker = marker_html(rec)
    if rec["kind"] == "plotly":
        from .plotting import show_plotly

        show_plotly(content.decode("utf-8"), name=rec["name"], metadata=meta, extra_html=marker)
        return
    w, h = rec["size_px"]
    width = rec["display_width_px"]
    display({"image/png": base64.b64encode(content).decode("ascii"),
             "text/plain": f"<Figure {rec['name']}: {w}x{h} px, record {rec['name']}.json>"},
            raw=True, metadata={**meta, "image/png": {"width": width}})  # no height: CSS
    # may narrow the image to the page, and a fixed height would then distort it
    display({"text/html": marker, "text/plain": ""}, raw=True, metadata=meta)


# ---------------------------------------------------------------- reading records back

def harvest(notebook) -> list[dict]:
    """The records attached to the outputs of an executed notebook, in page order.

    ``notebook`` is an ``nbformat`` notebook (or a path to an ``.ipynb``); each record is
    read from output metadata (key ``"transferkit"``), once per figure.
    """
    if isinstance(notebook, (str, Path)):
        notebook = json.loads(Path(notebook).read_text(encoding="utf-8"))
    out = []
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []) or []:
            rec = (output.get("metadata") or {}).get(METADATA_KEY, {}).get("figure")
            if (isinstance(rec, dict) and rec.get("schema") == SCHEMA
                    and not (out and out[-1] == rec)):  # the figure and its marker output
                out.append(dict(rec))
    return out


def load_records(directory=None) -> list[dict]:
    """Every record (``<name>.json`` with this module's schema) in a records folder."""
    directory = Path(directory) if directory is not None else figures_dir()
    out = []
    for path in sorted(directory.glob("*.json")):
        if path.name == "index.json":
            continue
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict) and rec.get("schema") == SCHEMA:
            out.append(rec)
    return out


# ---------------------------------------------------------------- Sphinx extension

try:  # docutils comes with Sphinx (the book extra); the notebook API does not need it
    from docutils import nodes as _nodes

    class figure_index(_nodes.General, _nodes.Element):  # noqa: N801 (docutils style)
        """Placeholder of the list of figures, filled in the write phase."""
except ImportError:  # pragma: no cover
    figure_index = None

def _doc_order(env) -> list[str]:
    """Documents in table-of-contents order (then any others, sorted)."""
    seen, order = set(), []

    def walk(doc):
        if doc in seen:
            return
        seen.add(doc)
        order.append(doc)
        for child in env.toctree_includes.get(doc, []):
            walk(child)

    walk(env.config.root_doc)
    return order + sorted(set(env.found_docs) - seen)


def _collect(app, doctree) -> None:
    """``doctree-read``: keep the records that the document's outputs carry."""
    from docutils import nodes

    env = app.env
    found = []
    for node in doctree.findall(nodes.raw):
        if "html" in node.get("format", "").split() and _MARKER_CLASS in node.astext():
            text = node.astext()
            for rec in records_in_html(text):
                if rec.get("kind") == "plotly":  # its file is the fragment drawn on the page
                    from .plotting import fragment_in_html

                    spec = fragment_in_html(text)
                    if spec is not None:
                        rec["_content"] = spec
                found.append(rec)
    store = _store(env)
    store.pop(env.docname, None)
    if found:
        store[env.docname] = found


def _store(env) -> dict:
    if not hasattr(env, "transferkit_figures"):
        env.transferkit_figures = {}
    return env.transferkit_figures


def _purge(app, env, docname) -> None:
    _store(env).pop(docname, None)


def _merge(app, env, docnames, other) -> None:
    theirs = getattr(other, "transferkit_figures", {})
    _store(env).update({d: theirs[d] for d in docnames if d in theirs})


def _book_records(app) -> list[dict]:
    """Every record of the book, in book order (collected from the documents' outputs)."""
    env = app.env
    store = _store(env)
    out, names = [], {}
    for doc in _doc_order(env):
        if doc not in env.found_docs:
            continue
        for rec in store.get(doc, []):
            rec = dict(rec)
            rec["docname"] = doc
            if not rec.get("cli"):  # the chapter itself redraws every figure it shows
                src = Path(env.doc2path(doc, False))
                rec["cli"] = f"transferkit notebook {src.as_posix()} --scale {rec.get('scale')}"
            rec["chapter"] = env.titles[doc].astext() if doc in env.titles else doc
            if rec["name"] in names:
                from sphinx.util import logging

                logging.getLogger(__name__).warning(
                    f"figure name {rec['name']!r} is used in {names[rec['name']]} and {doc}: "
                    "records would overwrite each other", type="transferkit", subtype="figures")
            names[rec["name"]] = doc
            out.append(rec)
    return out


def _short(value) -> str:
    """A parameter for reading: floats to 6 significant digits (the record keeps them all)."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return str(value)


def _describe(rec: dict) -> list[tuple[str, str]]:
    commit = rec.get("git_commit")
    if commit:
        commit = commit[:12] + (" (with uncommitted changes)" if rec.get("git_dirty") else "")
    params = ", ".join(f"{k} = {_short(v)}" for k, v in (rec.get("params") or {}).items())
    return [
        ("parameters", params or "none recorded"),
        ("seeds", json.dumps(rec.get("seeds"))),
        ("scale", str(rec.get("scale"))),
        ("package version", f"transferkit {rec.get('transferkit_version')}"),
        ("git commit", commit or "not in a git checkout"),
        ("wall time", f"{rec.get('wall_time_s')} s ({rec.get('wall_time_basis')})"),
        ("made", str(rec.get("created_utc"))),
    ]


def _index_nodes(app, docname: str) -> list:
    from docutils import nodes

    records = _book_records(app)
    if not records:
        return [nodes.paragraph(text="No figure of this build carries a provenance record.")]
    builder = app.builder
    out = []
    # overview table: figure, chapter, scale, wall time
    table = nodes.table(classes=["transferkit-figures"])
    group = nodes.tgroup(cols=4)
    table += group
    for width in (25, 40, 10, 15):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    body = nodes.tbody()
    group += head
    group += body
    row = nodes.row()
    for label in ("figure", "chapter", "scale", "wall time (s)"):
        row += nodes.entry("", nodes.paragraph(text=label))
    head += row
    for rec in records:
        row = nodes.row()
        link = nodes.reference("", rec["name"], internal=True, refuri="#figure-" + rec["name"])
        chap = nodes.reference("", rec["chapter"], internal=True,
                               refuri=builder.get_relative_uri(docname, rec["docname"]))
        for cell in (nodes.paragraph("", "", link), nodes.paragraph("", "", chap),
                     nodes.paragraph(text=str(rec.get("scale"))),
                     nodes.paragraph(text=str(rec.get("wall_time_s")))):
            row += nodes.entry("", cell)
        body += row
    out.append(table)
    for rec in records:
        sec = nodes.section(ids=["figure-" + rec["name"]], names=[rec["name"]])
        sec += nodes.title(text=f"{rec['name']}" + (f": {rec['caption']}" if rec.get("caption") else ""))
        chap = nodes.reference("", rec["chapter"], internal=True,
                               refuri=builder.get_relative_uri(docname, rec["docname"]))
        kind = "interactive (plotly)" if rec.get("kind") == "plotly" else "image"
        sec += nodes.paragraph("", "", nodes.Text(f"{kind.capitalize()} in "), chap, nodes.Text("."))
        if rec.get("kind") == "png" and app.builder.format == "html":
            # the chapter's own image file (myst-nb names output images by their sha256)
            src = "../" * docname.count("/") + f"_images/{rec['sha256']}.png"
            sec += nodes.raw("", f'<p><a href="{src}"><img src="{src}" alt="{rec["name"]}" '
                                 f'style="max-width: 22em"></a></p>', format="html")
        fields = nodes.field_list()
        for key, value in _describe(rec):
            fields += nodes.field("", nodes.field_name(text=key),
                                  nodes.field_body("", nodes.paragraph(text=value)))
        sec += fields
        cmd = rec["cli"]
        sec += nodes.paragraph(text="Redraw it with:")
        sec += nodes.literal_block(cmd, cmd, language="bash")
        out.append(sec)
    return out


def _placeholder_class():
    if figure_index is None:  # pragma: no cover - Sphinx (and docutils) always have it
        raise ImportError("the transferkit.provenance Sphinx extension needs docutils")
    return figure_index


def _directive():
    from sphinx.util.docutils import SphinxDirective

    class FigureIndexDirective(SphinxDirective):
        """``{transferkit-figures}``: the list of the book's figures and their records."""

        has_content = False

        def run(self):
            self.env.metadata.setdefault(self.env.docname, {})["transferkit_figure_index"] = True
            return [_placeholder_class()()]

    return FigureIndexDirective


def _set_figures_env(app, config) -> None:
    os.environ["TRANSFERKIT_BOOK_BUILD"] = "1"  # the notebooks' kernels inherit it
    if not os.environ.get(ENV_VAR, "").strip():
        os.environ[ENV_VAR] = str((Path(app.outdir).parent / "figures").resolve())


def _always_outdated(app, env, added, changed, removed):
    """The list of figures is rebuilt on every build (its content is in other documents)."""
    return [d for d in env.found_docs if env.metadata.get(d, {}).get("transferkit_figure_index")]


def _fill(app, doctree, docname) -> None:
    cls = _placeholder_class()
    for node in list(doctree.findall(cls)):
        node.replace_self(_index_nodes(app, docname))


def _export(app, exception) -> None:
    """Make ``<build>/figures`` hold exactly the figures of the book and their records."""
    if exception is not None or app.builder.format != "html":
        return
    records = _book_records(app)
    target = Path(app.outdir).parent / "figures"
    target.mkdir(parents=True, exist_ok=True)
    execute = Path(app.outdir).parent / "jupyter_execute"
    keep = {"index.json"}
    for rec in records:
        content = None
        if rec.get("kind") == "png":
            src = execute / f"{rec['sha256']}.png"
            if not src.is_file():
                src = Path(app.outdir) / "_images" / f"{rec['sha256']}.png"
            content = src.read_bytes() if src.is_file() else None
        elif rec.get("_content") is not None:
            content = rec["_content"].encode("utf-8")
        rec.pop("_content", None)
        if content is not None:
            _atomic_write(target / rec["file"], content)
            keep.add(rec["file"])
        else:
            rec["file_missing"] = True
        _atomic_write(target / (rec["name"] + ".json"),
                      (json.dumps(rec, indent=2, allow_nan=False) + "\n").encode("utf-8"))
        keep.add(rec["name"] + ".json")
    for path in target.iterdir():
        if path.is_file() and path.name not in keep and path.suffix in (".json", ".png", ".html"):
            path.unlink()
    _atomic_write(target / "index.json",
                  (json.dumps([r["name"] for r in records], indent=2) + "\n").encode("utf-8"))


def setup(app):
    """Sphinx extension: the ``{transferkit-figures}`` directive and the records folder."""
    app.add_node(_placeholder_class())
    app.add_directive("transferkit-figures", _directive())
    app.connect("config-inited", _set_figures_env)
    app.connect("doctree-read", _collect)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-get-outdated", _always_outdated)
    app.connect("doctree-resolved", _fill)
    app.connect("build-finished", _export)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
