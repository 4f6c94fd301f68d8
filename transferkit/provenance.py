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
import html
import io
import json
import math
import os
import platform
import re
import subprocess
import time
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from ._version import __version__
from .config import scale

__all__ = ["show_plotly", "plotly_html", "plotly_fragment", "fragment_in_html", "SCHEMA", "FigureRecord", "figures_dir", "git_revision", "harvest", "load_records", "make_record", "marker_html", "record", "records_in_html", "save"]


#: plotly.js as the book serves it: ``_assets/plotly.min.js`` is copied to ``_static/``
PLOTLY_JS = "plotly.min.js"


# The figure is plotly's own ``fig.to_html(include_plotlyjs=False, include_mathjax=False,
# full_html=False)``, kept inert in a <template> until ``<content root>_static/plotly.min.js``
# has loaded (once per page; the root comes from the ``data-content_root`` attribute that
# Sphinx writes on <html>); then its scripts run and draw it.  Nothing comes from the web,
# and pages without an interactive figure do not load plotly.js at all.  Where the page
# already has ``window.Plotly`` (Jupyter with plotly's renderer) it draws at once.
_LOADER = """<div class="transferkit-plotly" data-transferkit-figure="{name}" style="width:100%">\
<template>{fragment}</template></div>
<script>
(function () {{
  var host = document.currentScript.previousElementSibling;
  function draw() {{
    var tpl = host.querySelector("template");
    var content = tpl.content.cloneNode(true);
    var scripts = Array.prototype.slice.call(content.querySelectorAll("script"));
    tpl.replaceWith(content);
    scripts.forEach(function (old) {{  // scripts moved out of a template do not run
      var s = document.createElement("script");
      s.text = old.textContent;
      old.replaceWith(s);
    }});
    var t0 = Date.now();
    (function settle() {{
      var gd = host.querySelector(".plotly-graph-div");
      if (gd && gd._fullLayout && host.querySelector(".main-svg")) {{
        host.setAttribute("data-plotted", "true");
      }} else if (Date.now() - t0 < 30000) {{
        setTimeout(settle, 50);
      }} else {{
        console.error("transferkit: interactive figure " + host.dataset.transferkitFigure + " was not drawn");
      }}
    }})();
  }}
  if (window.Plotly) {{ draw(); return; }}
  if (!window.transferkitPlotly) {{
    var root = document.documentElement.getAttribute("data-content_root");
    if (root === null) {{
      host.insertAdjacentText("beforeend",
        "plotly.js is not available on this page: open the book, or call plotly's fig.show().");
      return;
    }}
    window.transferkitPlotly = new Promise(function (resolve, reject) {{
      var s = document.createElement("script");
      s.src = root + "_static/{js}";
      s.onload = resolve;
      s.onerror = function () {{ reject(new Error("could not load " + s.src)); }};
      document.head.appendChild(s);
    }});
  }}
  window.transferkitPlotly.then(draw, function (e) {{ console.error(e.message); }});
}})();
</script>"""


_TEMPLATE = re.compile(r'<div class="transferkit-plotly" data-transferkit-figure="[^"]*" '
                       r'style="width:100%"><template>(.*?)</template></div>', re.DOTALL)


def plotly_fragment(fig) -> str:
    """``fig`` as plotly's own HTML fragment, with neither plotly.js nor MathJax inside."""
    return fig.to_html(include_plotlyjs=False, include_mathjax=False, full_html=False)


def plotly_html(fig, name: str = "figure") -> str:
    """HTML that draws ``fig`` (a plotly figure, or its :func:`plotly_fragment`) offline.

    The fragment waits in a ``<template>`` until the book's ``_static/plotly.min.js`` has
    loaded.  ``name`` goes to the ``data-transferkit-figure`` attribute of the figure's
    ``<div>``, by which the provenance records and the browser test find it; the div
    gets ``data-plotted="true"`` once the figure is drawn.
    """

    fragment = fig if isinstance(fig, str) else plotly_fragment(fig)
    if "</template>" in fragment:
        raise ValueError("fig: a plotly fragment cannot contain </template>")
    return _LOADER.format(name=html.escape(name, quote=True), fragment=fragment, js=PLOTLY_JS)


def fragment_in_html(text: str) -> str | None:
    """The plotly fragment inside HTML made by :func:`plotly_html` (None if there is none)."""
    m = _TEMPLATE.search(text)
    return m.group(1) if m else None


def show_plotly(fig, name: str = "figure", metadata: dict | None = None, extra_html: str = ""):
    """Display a plotly figure that loads nothing from the web.

    The figure is rendered with ``fig.to_html(include_plotlyjs=False,
    include_mathjax=False, full_html=False)`` and wrapped by :func:`plotly_html`, so the
    book draws it with its own ``_static/plotly.min.js`` (shipped in ``_assets/``, loaded
    only on pages with an interactive figure).  ``fig`` may also be a fragment made
    earlier with :func:`plotly_fragment`.  ``metadata`` is attached to the output
    (:func:`transferkit.provenance.record` puts the figure's record there) and
    ``extra_html`` appended.  Outside a book build (``TRANSFERKIT_BOOK_BUILD``, set by
    the :mod:`transferkit.provenance` extension) the output also carries plotly's JSON
    mime type, which Jupyter front ends with plotly's renderer draw.  Returns the
    :class:`IPython.display.HTML` object that was displayed.
    """
    from IPython.display import HTML, display

    shown = HTML(plotly_html(fig, name) + extra_html)
    bundle = {"text/html": shown.data, "text/plain": f"<plotly figure {name}>"}
    if not os.environ.get("TRANSFERKIT_BOOK_BUILD") and hasattr(fig, "to_json"):
        # (myst-nb would warn about a mime type it does not know: not in the book)
        bundle["application/vnd.plotly.v1+json"] = json.loads(fig.to_json())
    display(bundle, raw=True, metadata=metadata or {})
    return shown


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
    ``<build>/figures`` (see :func:`transferkit.sphinxext.setup`).
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
    out = {"python": platform.python_version()}
    for pkg in ("numpy", "scipy", "torch", "matplotlib", "plotly"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def _jsonable(value):
    """``value`` as plain JSON: numpy scalars and arrays, tuples, paths; inf as a string."""

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
    atomic_write(directory / rec["file"], content)
    atomic_write(directory / (rec["name"] + ".json"),
                  (json.dumps(rec, indent=2, allow_nan=False) + "\n").encode("utf-8"))


def atomic_write(path: Path, content: bytes) -> None:
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
    atomic_write(path, content)
    atomic_write(path.with_suffix(".json"),
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
        :func:`transferkit.provenance.show_plotly`.
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

        warnings.warn(f"could not write the record of figure {name!r} to {directory}: {exc}",
                      stacklevel=2)
    if display is None:
        display = _in_kernel()
    if display:
        _display(fig, rec, content)
    if rec["kind"] == "png":
        plt.close(fig)
    return FigureRecord(fig, rec, files)


MARKER_CLASS = "transferkit-provenance"


_MARKER = re.compile(r'<script type="application/json" class="' + MARKER_CLASS
                     + r'">(.*?)</script>', re.DOTALL)


def marker_html(rec: dict) -> str:
    """The record as an invisible ``<script type="application/json">`` element.

    It is an output of its own right after the figure: myst-nb renders it into the page
    (and jupyter-cache keeps it with the other outputs), so the book build reads the
    records from the documents themselves, whether a chapter ran or came from the cache.
    """
    payload = json.dumps(rec, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return f'<script type="application/json" class="{MARKER_CLASS}">{payload}</script>'


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
