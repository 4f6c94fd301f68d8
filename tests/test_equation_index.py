"""The equation index of the book (transferkit.sphinxext): citation parser and index contents."""
from __future__ import annotations

import inspect

import pytest

from transferkit import sphinxext
from transferkit.sphinxext import Citation, parse_citations


def cites(text):
    return [str(c) for c in parse_citations(text)]


@pytest.mark.parametrize("text, expected", [
    ("paper 000, Eq. 14", ["paper 000, Eq. 14"]),
    ("paper 001 Thm 5.2", ["paper 001, Thm 5.2"]),
    ("(paper 000, Sec. 3; Eq. 8)", ["paper 000, Sec. 3", "paper 000, Eq. 8"]),
    ("Thm 4.1 (paper 001, Eq. 1): gradient descent", ["paper 001, Thm 4.1", "paper 001, Eq. 1"]),
    ("Eq. 14 of paper 000 with the null-space", ["paper 000, Eq. 14"]),
    ("Paper 000, Eq. 8 (Theorem 3.6, proof in App. B.5):",
     ["paper 000, Eq. 8", "paper 000, Thm 3.6", "paper 000, App. B.5"]),
    ("ridge transfer (paper 000, Eqs. 124-125).", ["paper 000, Eq. 124", "paper 000, Eq. 125"]),
    ("(paper 004, Eqs. 30 and 35)", ["paper 004, Eq. 30", "paper 004, Eq. 35"]),
    ("Infinite-width Gram matrix of Sec. 6.1 (paper 002), shape", ["paper 002, Sec. 6.1"]),
    ("The cost p(u) of Eq. 8 (paper 003):", ["paper 003, Eq. 8"]),
    ("paper 001 (Eqs. 2-3, Thms 4.1-5.5);", ["paper 001, Eq. 2", "paper 001, Eq. 3", "paper 001, Thm 4.1–5.5"]),
    ("paper 001 Thm 5.2; the finite-size Eq. 14 of paper 000", ["paper 001, Thm 5.2", "paper 000, Eq. 14"]),
    # other authors' results and loci without a paper number are not citations of the papers
    ("Bartlett et al. (2020, Thm 4) adapted to fine-tuning (paper 001, footnote 1).",
     ["paper 001, footnote 1"]),
    ("Dobriban and Wager 2018, Thm 2.1; Hastie et al. 2022, Thm 5", []),
    ("which is Eq. 14 at k = 1.", []),
    ("", []),
])
def test_parse_citations(text, expected):
    assert cites(text) == expected


def test_citation_label_and_order():
    c = Citation("000", "Eq.", "14")
    assert str(c) == "paper 000, Eq. 14" and c.label == "Eq. 14"
    ordered = sorted([Citation("000", "Eq.", "124"), Citation("000", "Thm", "3.6"),
                      Citation("000", "Eq.", "8"), Citation("001", "Eq.", "1")],
                     key=Citation.sort_key)
    assert [str(c) for c in ordered] == ["paper 000, Eq. 8", "paper 000, Eq. 124",
                                         "paper 000, Thm 3.6", "paper 001, Eq. 1"]


@pytest.fixture(scope="module")
def index():
    return sphinxext.equation_index()


def test_index_not_empty_and_covers_all_papers(index):
    assert index
    assert {e.citation.paper for e in index} >= {"000", "001", "002", "003", "004"}
    assert any(e.citation.kind == "Eq." for e in index)
    assert any(e.citation.kind == "Thm" for e in index)


def test_every_cited_theory_function_is_indexed(index):
    indexed = {f for e in index for f in e.functions}
    cited = [name for name, obj in sphinxext.public_objects().items()
             if name.startswith("transferkit.theory.") and parse_citations(inspect.getdoc(obj) or "")]
    assert cited, "no function of transferkit.theory cites a paper"
    missing = [name for name in cited if name not in indexed]
    assert not missing, f"cited but not in the equation index: {missing}"


def test_index_links_to_existing_chapters(index):
    folder = sphinxext.default_notebooks()
    chapters = {c for e in index for c in e.chapters}
    assert chapters, "no chapter calls a function that cites a paper"
    for stem in chapters:
        assert (folder / f"{stem}.py").is_file(), stem
    # the chapters are the ones that call the function, directly or through the package
    refs = sphinxext.chapter_references()
    for e in index:
        for stem in e.chapters:
            assert any(f in refs[stem] for f in e.functions)


def test_known_rows(index):
    rows = {str(e.citation): e for e in index}
    eq8 = rows["paper 000, Eq. 8"]
    assert "transferkit.theory.deep_linear.scratch_risk" in eq8.functions
    assert "linear_transfer" in eq8.chapters
    assert "transferkit.theory.penalties.diagonal_ptft_penalty" in rows["paper 004, Eq. 22"].functions
    assert "diagonal_networks" in rows["paper 004, Eq. 22"].chapters
    # the extension's own docstrings quote citations as examples: they are not in the index
    assert not any(f.startswith("transferkit.sphinxext.") for e in index for f in e.functions)
