"""Provenance records of figures (transferkit.provenance) and of the built book.

The unit tests check ``record`` (files, fields, the image shown is the image saved,
nothing fails outside git) and ``harvest``.  The book tests read a built book
(``TRANSFERKIT_BOOK_HTML``, as ``make test`` sets it for the smoke build; else
``_build/html``) and require that every figure image on every page, and every
interactive figure, has a record in the build's ``figures`` folder (next to ``html``),
and that the list of figures shows them all with a command line that redraws them.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from _helpers import REPO, built_book_dir  # noqa: E402

import transferkit  # noqa: E402
from transferkit import (
    cli,
    provenance,  # noqa: E402
)

FIELDS = {"schema", "name", "params", "seeds", "scale", "cli", "transferkit_version",
          "git_commit", "git_dirty", "wall_time_s", "wall_time_basis", "created_utc",
          "versions", "kind", "file", "sha256"}


def _figure():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [1, 0, 1])
    return fig


# ---------------------------------------------------------------- record

def test_record_writes_image_and_sidecar(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFERKIT_SCALE", "smoke")
    fig = _figure()
    out = provenance.record(fig, "demo-1", params={"sigma": np.float64(0.2), "grid": np.arange(3),
                                                  "bound": float("inf")},
                            seeds=[np.int64(0), 1], cli="transferkit theory linear",
                            directory=tmp_path, display=False)
    png = (tmp_path / "demo-1.png").read_bytes()
    rec = json.loads((tmp_path / "demo-1.json").read_text())
    assert FIELDS <= set(rec)
    assert rec == out.record
    assert rec["schema"] == provenance.SCHEMA and rec["kind"] == "png"
    assert rec["sha256"] == hashlib.sha256(png).hexdigest() and png.startswith(b"\x89PNG")
    assert rec["params"] == {"sigma": 0.2, "grid": [0, 1, 2], "bound": "inf"}  # plain JSON
    assert rec["seeds"] == [0, 1] and rec["scale"] == "smoke"
    assert rec["transferkit_version"] == transferkit.__version__
    assert rec["wall_time_basis"] == "since the notebook started" and rec["wall_time_s"] >= 0
    assert rec["size_px"] == [int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")]
    assert not plt.fignum_exists(fig.number)  # closed: the inline backend shows it once
    assert out.files == [tmp_path / "demo-1.png", tmp_path / "demo-1.json"]


def test_record_git_commit_is_this_checkout():
    rev = provenance.git_revision()
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    if head.returncode != 0:
        assert rev is None
    else:
        assert rev["commit"] == head.stdout.strip()


def test_no_git_is_not_an_error(tmp_path, monkeypatch):
    assert provenance.git_revision(tmp_path) is None  # not a checkout
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all
    assert provenance.git_revision() is None
    rec = provenance.make_record("x", wall_time=1.5)
    assert rec["git_commit"] is None and rec["git_dirty"] is None
    assert rec["wall_time_s"] == 1.5 and rec["wall_time_basis"] == "as passed"


def test_plotly_figure_is_recorded_as_its_spec(tmp_path):
    go = pytest.importorskip("plotly.graph_objects")
    fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]]))
    out = provenance.record(fig, "heat", directory=tmp_path, display=False)
    html = (tmp_path / "heat.plotly.html").read_bytes()
    assert out.record["kind"] == "plotly" and out.record["file"] == "heat.plotly.html"
    assert out.record["sha256"] == hashlib.sha256(html).hexdigest()
    assert b'"type":"heatmap"' in html and b"plotly.min.js" not in html  # no plotly.js inside

    page = provenance.plotly_html(html.decode(), "heat") + provenance.marker_html(out.record)
    assert provenance.fragment_in_html(page) == html.decode()  # what the book build reads back
    assert provenance.records_in_html(page) == [out.record]


@pytest.mark.parametrize("kwargs,word", [
    (dict(name="no spaces"), "name"), (dict(name=""), "name"), (dict(name="../up"), "name"),
    (dict(name="ok", wall_time=-1.0), "wall_time"), (dict(name="ok", cli=["a"]), "cli"),
])
def test_bad_arguments_name_the_parameter(kwargs, word, tmp_path):
    fig = _figure()
    name = kwargs.pop("name")
    with pytest.raises(ValueError, match=word):
        provenance.record(fig, name, directory=tmp_path, display=False, **kwargs)
    plt.close(fig)
    with pytest.raises(ValueError, match="fig must be"):
        provenance.record(object(), "ok", directory=tmp_path, display=False)


def test_figures_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("TRANSFERKIT_FIGURES", raising=False)
    assert provenance.figures_dir() == (REPO / "_build" / "figures").resolve()
    monkeypatch.setenv("TRANSFERKIT_FIGURES", "rel/figs")  # relative to the repository
    assert provenance.figures_dir() == (REPO / "rel" / "figs").resolve()
    monkeypatch.setenv("TRANSFERKIT_FIGURES", str(tmp_path))
    assert provenance.figures_dir() == tmp_path.resolve()


def test_displayed_output_carries_the_record_and_the_same_bytes(tmp_path, monkeypatch):
    """What the notebook shows is the saved PNG, with the record in the output metadata."""
    shown = []
    import IPython.display

    monkeypatch.setattr(IPython.display, "display",
                        lambda data, raw=False, metadata=None: shown.append((data, metadata)))
    out = provenance.record(_figure(), "shown", directory=tmp_path, display=True)
    (image, meta_image), (marker, meta_marker) = shown
    png = base64.b64decode(image["image/png"])
    assert png == (tmp_path / "shown.png").read_bytes()
    # the record also rides along as an invisible HTML output: what the book build reads
    assert provenance.records_in_html(marker["text/html"]) == [out.record]
    notebook = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": "x"},
        {"output_type": "display_data", "data": image, "metadata": meta_image},
        {"output_type": "display_data", "data": marker, "metadata": meta_marker}]}]}
    assert provenance.harvest(notebook) == [out.record]
    assert provenance.load_records(tmp_path) == [out.record]


def test_marker_survives_html_special_characters():
    rec = provenance.make_record("m", params={"s": "</script><b>"}, cli="transferkit x")
    html = provenance.marker_html(rec)
    assert html.count("</script>") == 1
    assert provenance.records_in_html("<p>a</p>" + html + html) == [rec, rec]


# ---------------------------------------------------------------- the built book

class _Figures(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.plotly = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img" and a.get("src"):
            self.images.append(a["src"])
        if "data-transferkit-figure" in a:
            self.plotly.append(a["data-transferkit-figure"])


@pytest.fixture(scope="module")
def book():
    return built_book_dir()


@pytest.fixture(scope="module")
def records(book):
    folder = book.parent / "figures"
    assert folder.is_dir(), (f"no records folder {folder}: is transferkit.provenance in the "
                             "extensions of _config.yml?")
    recs = {r["name"]: r for r in provenance.load_records(folder)}
    assert recs, f"no provenance records in {folder}"
    index = json.loads((folder / "index.json").read_text())
    assert sorted(index) == sorted(recs), "index.json and the records disagree"
    return folder, recs


def _pages(book):
    return sorted(p for p in book.rglob("*.html") if "_static" not in p.relative_to(book).parts)


def test_every_figure_of_the_book_has_a_record(book, records):
    folder, recs = records
    by_sha = {r["sha256"]: r for r in recs.values() if r["kind"] == "png"}
    missing, n_images, n_plotly, seen = [], 0, 0, set()
    for page in _pages(book):
        parser = _Figures()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        for src in parser.images:
            path = (page.parent / unquote(urlsplit(src).path)).resolve()
            if "_images" not in path.parts:  # theme pictures are not figures
                continue
            n_images += 1
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            if sha not in by_sha:
                missing.append(f"{page.relative_to(book)}: {src} (sha256 {sha[:12]}) has no record")
            else:
                seen.add(by_sha[sha]["name"])
        for name in parser.plotly:
            n_plotly += 1
            if name not in recs or recs[name]["kind"] != "plotly":
                missing.append(f"{page.relative_to(book)}: interactive figure {name!r} has no record")
            else:
                seen.add(name)
    assert n_images, "no figure image in the book: the chapters' figures are missing"
    assert not missing, "figures without a provenance record:\n" + "\n".join(missing)
    assert seen == set(recs), f"records of figures the book does not show: {set(recs) - seen}"


def test_records_are_complete_and_match_their_files(records):
    folder, recs = records
    scales = set()
    for name, rec in recs.items():
        assert FIELDS | {"docname", "chapter"} <= set(rec), (name, FIELDS - set(rec))
        content = (folder / rec["file"]).read_bytes()
        assert hashlib.sha256(content).hexdigest() == rec["sha256"], name
        assert rec["transferkit_version"] == transferkit.__version__
        assert rec["git_commit"] is None or re.fullmatch(r"[0-9a-f]{40}", rec["git_commit"])
        assert rec["cli"] and rec["cli"].startswith("transferkit "), name
        assert isinstance(rec["wall_time_s"], (int, float)) and rec["wall_time_s"] >= 0
        scales.add(rec["scale"])
    assert len(scales) == 1 and scales <= {"paper", "smoke"}, scales  # one build, one scale


def test_the_list_of_figures_shows_every_record(book, records):
    _, recs = records
    pages = [p for p in _pages(book) if 'id="figure-' in p.read_text(encoding="utf-8")]
    assert len(pages) == 1, f"expected one list of figures, found {pages}"
    html = pages[0].read_text(encoding="utf-8")
    import html as _html

    text = _html.unescape(re.sub(r"<[^>]+>", "", html))  # code is highlighted in spans
    for name, rec in recs.items():
        assert f'id="figure-{name}"' in html, name
        assert rec["cli"] in text, (name, rec["cli"])
        assert rec["git_commit"] is None or rec["git_commit"][:12] in text


def test_a_recorded_command_line_redraws_its_figure_byte_for_byte(records, tmp_path,
                                                                   monkeypatch, one_thread):
    """The reader's promise: the command in a record redraws that very figure.

    The first phase-diagram record of the build is rerun from scratch (a fresh sweep
    cache), in process, and must give the same PNG, byte for byte.
    """
    import shlex


    folder, recs = records
    rec = next((r for r in recs.values() if r["kind"] == "png"
                and (r["cli"] or "").startswith("transferkit phase-diagram")), None)
    if rec is None:
        pytest.skip("no figure of this build is drawn by `transferkit phase-diagram`")
    argv = shlex.split(rec["cli"])[1:]
    i = argv.index("--out")
    argv[i + 1] = str(tmp_path / "again.png")
    monkeypatch.setenv("TRANSFERKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TRANSFERKIT_PROGRESS", "0")
    assert cli.main(argv) == 0
    again = (tmp_path / "again.png").read_bytes()
    assert hashlib.sha256(again).hexdigest() == rec["sha256"], (
        f"{rec['cli']} did not redraw {rec['name']} exactly")
