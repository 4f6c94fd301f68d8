r"""Sphinx extension of the book: the list of figures, the API reference and the equation index.

Listed in ``_config.yml``. It provides three directives:

- ``{transferkit-figures}`` (``book/figures``): the list of figures with their provenance
  records, filled in the write phase (after every notebook ran); it also writes
  ``<build>/figures/``. The notebook half is :mod:`transferkit.provenance`.
- ``transferkit-api`` (``book/api/*``, inside ``{eval-rst}``): ``automodule`` of a package
  and of every module it lists in ``__all__``, so that a new module is documented at once.
- ``{transferkit-equations}`` (``book/equations``): every equation, theorem, section, ... of
  the five papers that a public function cites in its docstring (:func:`parse_citations`),
  linked to the functions and to the chapters that call them (:func:`equation_index`).
  It is computed from the docstrings and the notebooks at every build, so it cannot go stale.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import os
import pkgutil
import re
from dataclasses import dataclass, field
from pathlib import Path

from .provenance import (
    ENV_VAR,
    MARKER_CLASS,
    atomic_write,
    fragment_in_html,
    records_in_html,
)

__all__ = ["Citation", "parse_citations", "public_objects", "chapter_references",
           "equation_index", "setup"]


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
        if "html" in node.get("format", "").split() and MARKER_CLASS in node.astext():
            text = node.astext()
            for rec in records_in_html(text):
                if rec.get("kind") == "plotly":  # its file is the fragment drawn on the page

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
    """The list of figures and the equation index are rebuilt on every build (their content
    is in other documents and in the package)."""
    keys = ("transferkit_figure_index", "transferkit_equation_index")
    return [d for d in env.found_docs if any(env.metadata.get(d, {}).get(k) for k in keys)]


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
            atomic_write(target / rec["file"], content)
            keep.add(rec["file"])
        else:
            rec["file_missing"] = True
        atomic_write(target / (rec["name"] + ".json"),
                      (json.dumps(rec, indent=2, allow_nan=False) + "\n").encode("utf-8"))
        keep.add(rec["name"] + ".json")
    for path in target.iterdir():
        if path.is_file() and path.name not in keep and path.suffix in (".json", ".png", ".html"):
            path.unlink()
    atomic_write(target / "index.json",
                  (json.dumps([r["name"] for r in records], indent=2) + "\n").encode("utf-8"))


# ---------------------------------------------------------------- equation index
#
# Citations are written in the docstrings as "paper 000, Eq. 14", "paper 001 Thm 5.2",
# "Thm 4.1 (paper 001, Eq. 1)", "Eq. 14 of paper 000", "(paper 000, Sec. 3; Eq. 8)",
# "paper 003, Eqs. 6 and 10", "paper 000, Eqs. 124-125". A citation is a run of loci and
# paper numbers joined only by punctuation and a few filler words; loci that follow a paper
# number in the run belong to it, loci before the first paper number ("Thm 4.1 (paper 001")
# belong to the paper that comes next. A locus with no paper number in its run ("Eq. 8" alone,
# "Bartlett et al. (2020, Thm 4)") is not a citation of the five papers and is left out.

_KINDS = [  # (canonical label, pattern), in the order of the index
    ("Eq.", r"Eqs?\.|Eqns?\.|Equations?"),
    ("Thm", r"Thms?\.?|Theorems?"),
    ("Lemma", r"Lemmas?|Lem\."),
    ("Prop.", r"Props?\.|Propositions?"),
    ("Cor.", r"Cors?\.|Corollary|Corollaries"),
    ("Def.", r"Defs?\.|Definitions?"),
    ("Sec.", r"Secs?\.|Sections?|§"),
    ("App.", r"Apps?\.|Appendix|Appendices"),
    ("Fig.", r"Figs?\.|Figures?"),
    ("Table", r"Tables?|Tab\."),
    ("footnote", r"footnotes?"),
]
_KIND_ORDER = {label: i for i, (label, _) in enumerate(_KINDS)}
_NUM = r"(?:\d+(?:\.\d+)*|[A-Z](?:\.\d+)*)(?![\w])"
_NUMLIST = rf"{_NUM}(?:\s*(?:-|–|—|,|&|\band\b|\bto\b)\s*{_NUM})*"
_TOKEN = re.compile(
    r"(?P<paper>\b[Pp]apers?\s+\d{3}(?:\s*(?:,|/|\band\b)\s*\d{3})*\b)"
    + "|(?P<locus>(?:" + "|".join(f"(?P<k{i}>(?<![\\w.])(?:{pat}))" for i, (_, pat) in enumerate(_KINDS))
    + rf")\s*(?P<nums>{_NUMLIST}))"
    + r"|(?P<sep>(?:[\s,;:()\[\]]|\b(?:and|or|see|cf\.|proof in|proof|in|of|from|also|i\.e\.|e\.g\.)\b)+)"
    + r"|(?P<other>\S)"
)
_FORWARD = re.compile(r"^[\s,]*(?:\(|\bof\b|\bin\b|\bfrom\b)\s*$")


@dataclass(frozen=True)
class Citation:
    """One locus of one paper: ``Citation("000", "Eq.", "14")`` is paper 000, Eq. 14."""

    paper: str
    kind: str
    number: str

    def __str__(self) -> str:
        return f"paper {self.paper}, {self.label}"

    @property
    def label(self) -> str:
        """``"Eq. 14"``, ``"Thm 5.2"``, ``"App. B.5"``."""
        return f"{self.kind} {self.number}"

    def sort_key(self) -> tuple:
        parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p)
                      for p in re.split(r"[.–]", self.number))
        return (self.paper, _KIND_ORDER.get(self.kind, len(_KINDS)), parts)


def _numbers(text: str) -> list[str]:
    """``"6 and 10"`` -> ``["6", "10"]``; ``"124-125"`` -> both; ``"4.1-5.5"`` stays a range."""
    out = []
    for item in re.split(r"\s*(?:,|&|\band\b)\s*", text.strip()):
        ends = re.split(r"\s*(?:-|–|—|\bto\b)\s*", item)
        if len(ends) == 2:
            a, b = ends
            pa, pb = a.rpartition("."), b.rpartition(".")
            if pa[0] == pb[0] and pa[2].isdigit() and pb[2].isdigit() and 0 < int(pb[2]) - int(pa[2]) <= 40:
                pre = pa[0] + pa[1]
                out += [f"{pre}{k}" for k in range(int(pa[2]), int(pb[2]) + 1)]
                continue
            out.append(f"{a}–{b}")
        elif item:
            out.append(item)
    return out


def parse_citations(text: str) -> list[Citation]:
    """The citations of the five papers in ``text``, in order of appearance, without repeats.

    Parameters
    ----------
    text : str
        A docstring (or any text) with citations such as ``"paper 000, Eq. 14"``,
        ``"Thm 4.1 (paper 001, Eq. 1)"``, ``"Eq. 14 of paper 000"`` or
        ``"(paper 000, Sec. 3; Eq. 8)"``.

    Returns
    -------
    list of Citation
        Ranges of integers are expanded (``"Eqs. 124-125"`` gives Eq. 124 and Eq. 125);
        loci without a paper number in their citation are left out.
    """
    tokens = []  # ("paper", [numbers]) / ("locus", (kind, [numbers]), sep_after) / ("break",)
    for m in _TOKEN.finditer(text):
        if m.group("paper"):
            tokens.append(["paper", re.findall(r"\d{3}", m.group("paper")), ""])
        elif m.group("locus"):
            kind = next(_KINDS[i][0] for i in range(len(_KINDS)) if m.group(f"k{i}"))
            tokens.append(["locus", (kind, _numbers(m.group("nums"))), ""])
        elif m.group("sep"):
            if tokens and tokens[-1][0] != "break":
                tokens[-1][2] += m.group("sep")
        elif not tokens or tokens[-1][0] != "break":
            tokens.append(["break", None, ""])
    out: list[Citation] = []
    run: list = []

    def flush():
        papers_at = [i for i, t in enumerate(run) if t[0] == "paper"]
        for i, (kind, value, sep) in enumerate(run):
            if kind != "locus" or not papers_at:
                continue
            before = [j for j in papers_at if j < i]
            after = [j for j in papers_at if j > i]
            nxt = run[i + 1] if i + 1 < len(run) else None
            if after and (not before or (nxt is not None and nxt[0] == "paper" and _FORWARD.match(sep))):
                owner = run[after[0]][1]
            else:
                owner = run[before[-1]][1]
            for paper in owner:
                for number in value[1]:
                    cit = Citation(paper, value[0], number)
                    if cit not in out:
                        out.append(cit)
        run.clear()

    for tok in tokens:
        if tok[0] == "break":
            flush()
        else:
            run.append(tok)
    flush()
    return out


@functools.lru_cache(maxsize=None)
def public_objects(package: str = "transferkit") -> dict[str, object]:
    """Every public function and class of ``package``: ``{"module.name": object}`` (computed
    once per process and package; do not modify the returned dict).

    Public means: in a module whose dotted name has no component starting with ``_``, a name
    without a leading ``_`` that the module defines itself (not one it imports). These are
    the objects the API reference (``book/api``) documents.
    """
    pkg = importlib.import_module(package)
    names = [package] + sorted(m.name for m in pkgutil.walk_packages(pkg.__path__, package + "."))
    out = {}
    for modname in names:
        if any(part.startswith("_") for part in modname.split(".")):
            continue
        mod = importlib.import_module(modname)
        for name, obj in vars(mod).items():
            if (not name.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
                    and getattr(obj, "__module__", None) == modname):
                out[f"{modname}.{name}"] = obj
    return out


def _resolve(dotted: str, cache: dict) -> str | None:
    """Canonical ``module.name`` of the transferkit function or class ``dotted`` names."""
    if dotted in cache:
        return cache[dotted]
    parts, found = dotted.split("."), None
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        except Exception:  # noqa: BLE001 - a module that fails to import is no reference
            break
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                break
            if inspect.isfunction(obj) or inspect.isclass(obj):
                break
        mod = getattr(obj, "__module__", None) if obj is not None else None
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and mod and mod.split(".")[0] == "transferkit":
            found = f"{mod}.{obj.__qualname__.split('.')[0]}"
        break
    cache[dotted] = found
    return found


def _references(tree: ast.AST, modname: str | None, package: str | None, local: set[str],
                cache: dict) -> dict[str, set[str]]:
    """``{top-level name or "": referenced transferkit objects}`` of a module's source."""
    alias = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "transferkit":
                    if a.asname:
                        alias[a.asname] = a.name
                    else:
                        alias["transferkit"] = "transferkit"
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg_parts = (package or "").split(".")
                pkg_parts = pkg_parts[: len(pkg_parts) - node.level + 1]
                base = ".".join(pkg_parts + ([node.module] if node.module else []))
            if base.split(".")[0] == "transferkit":
                for a in node.names:
                    alias[a.asname or a.name] = f"{base}.{a.name}"

    def chain(node):
        attrs = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            return [node.id] + attrs[::-1]
        return None

    def refs_in(body) -> set[str]:
        found = set()
        for node in ast.walk(body):
            if isinstance(node, ast.Attribute | ast.Name) and not isinstance(getattr(node, "ctx", None), ast.Store):
                parts = chain(node)
                if not parts:
                    continue
                head = parts[0]
                if head in alias:
                    target = _resolve(".".join([alias[head]] + parts[1:]), cache)
                elif head in local and modname:
                    target = f"{modname}.{head}"
                else:
                    continue
                if target:
                    found.add(target)
        return found

    if modname is None:
        return {"": refs_in(tree)}
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out[node.name] = refs_in(node) - {f"{modname}.{node.name}"}
    return out


def _call_graph(package: str = "transferkit") -> dict[str, set[str]]:
    """``{"module.name": transferkit objects its body names}`` for every top-level def."""
    pkg = importlib.import_module(package)
    root = Path(pkg.__file__).parent
    cache: dict = {}
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = list(rel.parts)
        is_init = parts[-1] == "__init__"
        if is_init:
            parts = parts[:-1]
        modname = ".".join(parts)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        local = {n.name for n in tree.body
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
        pkgname = modname if is_init else modname.rpartition(".")[0]
        for name, refs in _references(tree, modname, pkgname, local, cache).items():
            graph[f"{modname}.{name}"] = refs
    return graph


def default_notebooks() -> Path:
    """The book's chapters: ``notebooks/`` next to the package."""
    return Path(__file__).resolve().parents[1] / "notebooks"


def chapter_references(notebooks: Path | str | None = None) -> dict[str, dict[str, bool]]:
    """The transferkit objects each chapter calls, directly or through other transferkit code.

    Returns
    -------
    dict
        ``{chapter stem: {"module.name": True if the chapter names it itself, False if only
        a transferkit function it calls does}}``, for every ``notebooks/*.py``.
    """
    folder = Path(notebooks) if notebooks is not None else default_notebooks()
    graph = _call_graph()
    cache: dict = {}
    out = {}
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        direct = _references(tree, None, None, set(), cache)[""]
        reached = {name: True for name in direct}
        todo = list(direct)
        while todo:
            for ref in graph.get(todo.pop(), ()):
                if ref not in reached:
                    reached[ref] = False
                    todo.append(ref)
        out[path.stem] = reached
    return out


@dataclass
class IndexEntry:
    """One row of the equation index: a citation, the functions citing it, their chapters."""

    citation: Citation
    functions: list[str] = field(default_factory=list)
    chapters: list[str] = field(default_factory=list)


def equation_index(notebooks: Path | str | None = None) -> list[IndexEntry]:
    """The equation index: every paper locus a public docstring cites, sorted by paper and locus.

    Built from :func:`public_objects` (their docstrings, through :func:`parse_citations`) and
    :func:`chapter_references` (the chapters, ``notebooks/*.py``, that call each function).
    """
    chapters = chapter_references(notebooks)
    entries: dict[Citation, IndexEntry] = {}
    for name, obj in public_objects().items():
        if name.startswith("transferkit.sphinxext."):  # its docstrings quote examples
            continue
        doc = re.sub(r"``.*?``", " ", inspect.getdoc(obj) or "", flags=re.DOTALL)  # quoted text
        for cit in parse_citations(doc):
            entry = entries.setdefault(cit, IndexEntry(cit))
            entry.functions.append(name)
    for entry in entries.values():
        entry.chapters = sorted({stem for stem, refs in chapters.items()
                                 if any(f in refs for f in entry.functions)})
    return sorted(entries.values(), key=lambda e: e.citation.sort_key())


def _equation_nodes(env, docname: str) -> list:
    from docutils import nodes
    from sphinx import addnodes

    def xref(domain, reftype, target, text, explicit=False):
        node = addnodes.pending_xref("", refdomain=domain, reftype=reftype, reftarget=target,
                                     refexplicit=explicit, refwarn=True, refdoc=docname)
        node += nodes.literal(text, text) if domain == "py" else nodes.inline(text, text)
        return node

    root = Path(env.srcdir)
    notebooks = root / "notebooks"
    entries = equation_index(notebooks if notebooks.is_dir() else None)
    env.note_dependency(str(Path(__file__).resolve()))
    out = []
    for paper in sorted({e.citation.paper for e in entries}):
        out.append(nodes.rubric(text=f"Paper {paper}"))
        table = nodes.table(classes=["transferkit-equations"])
        group = nodes.tgroup(cols=3)
        table += group
        for width in (15, 50, 35):
            group += nodes.colspec(colwidth=width)
        head, body = nodes.thead(), nodes.tbody()
        group += head
        group += body
        row = nodes.row()
        for label in ("result", "cited by", "chapters calling it"):
            row += nodes.entry("", nodes.paragraph(text=label))
        head += row
        for entry in (e for e in entries if e.citation.paper == paper):
            row = nodes.row()
            row += nodes.entry("", nodes.paragraph(text=entry.citation.label))
            funcs = nodes.paragraph()
            for i, name in enumerate(entry.functions):
                if i:
                    funcs += nodes.Text(", ")
                kind = "class" if inspect.isclass(public_objects().get(name)) else "func"
                funcs += xref("py", kind, name, name.rpartition(".")[2] + ("" if kind == "class" else "()"))
            row += nodes.entry("", funcs)
            chaps = nodes.paragraph()
            docs = [c for c in entry.chapters if f"notebooks/{c}" in env.found_docs]
            for i, stem in enumerate(docs):
                if i:
                    chaps += nodes.Text(", ")
                chaps += xref("std", "doc", f"/notebooks/{stem}", stem)
            if not docs:
                chaps += nodes.Text("none")
            row += nodes.entry("", chaps)
            body += row
        out.append(table)
    if not out:
        out.append(nodes.paragraph(text="No docstring of transferkit cites a paper."))
    return out


def _equations_directive():
    from sphinx.util.docutils import SphinxDirective

    class EquationIndexDirective(SphinxDirective):
        """``{transferkit-equations}``: the equation index, computed from the docstrings."""

        has_content = False

        def run(self):
            self.env.metadata.setdefault(self.env.docname, {})["transferkit_equation_index"] = True
            return _equation_nodes(self.env, self.env.docname)

    return EquationIndexDirective


def _api_directive():
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective
    from sphinx.util.nodes import nested_parse_with_titles

    class ApiDirective(SphinxDirective):
        """``.. transferkit-api:: package [module ...]`` (reStructuredText, in ``{eval-rst}``).

        ``automodule`` of the package (its docstring) and, with a section each, of every
        module the package lists in ``__all__`` (or of the modules given after it), with
        every public function and class the module defines.
        """

        required_arguments = 1
        optional_arguments = 50

        def run(self):
            package = self.arguments[0]
            mods = list(self.arguments[1:])
            lines = []
            if not mods:
                pkg = importlib.import_module(package)
                mods = [f"{package}.{m}" for m in getattr(pkg, "__all__", [])
                        if inspect.ismodule(getattr(pkg, m, None))]
                lines += [f".. automodule:: {package}", ""]
            for mod in mods:
                lines += [mod, "-" * len(mod), "", f".. automodule:: {mod}", "   :members:",
                          "   :ignore-module-all:", "   :show-inheritance:", ""]
            node = nodes.section()
            node.document = self.state.document
            nested_parse_with_titles(self.state, StringList(lines, source=self.env.docname), node)
            return node.children

    return ApiDirective


def setup(app):
    """Sphinx extension: the ``{transferkit-figures}``, ``{transferkit-equations}`` and
    ``transferkit-api`` directives and the records folder."""
    app.add_node(_placeholder_class())
    app.add_directive("transferkit-figures", _directive())
    app.add_directive("transferkit-equations", _equations_directive())
    app.add_directive("transferkit-api", _api_directive())
    app.connect("config-inited", _set_figures_env)
    app.connect("doctree-read", _collect)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-get-outdated", _always_outdated)
    app.connect("doctree-resolved", _fill)
    app.connect("build-finished", _export)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
