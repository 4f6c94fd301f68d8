"""``#:`` doc comments that Sphinx reads as a type.

Napoleon takes the first line of a documented attribute's ``#:`` comment up to a colon
outside literals as the attribute's *type* (``#: int: the count``); prose such as ``#: the
mean (NaN: no spread)`` then becomes a cross-reference to a class named "the mean (NaN",
which the book's build under ``-W -n`` refuses.  The smoke book of ``make test`` failed
this way three times (2026-11-28/29); this test finds it in a second.  Only what the API
reference shows is checked: module constants named in ``__all__`` and the attributes of
classes named there.
"""

from __future__ import annotations

import importlib
import pathlib
import re

from sphinx.ext.napoleon.docstring import _single_colon_regex, _xref_or_code_regex

import transferkit

PACKAGE = pathlib.Path(transferkit.__file__).parent
TARGET = re.compile(r"^(\s*)([A-Za-z_]\w*)\s*(:[^=#]*)?(=|#:|$)")


def reads_as_type(text: str) -> bool:
    """Whether napoleon splits ``text`` at a single colon outside roles and literals (its own
    rule, ``_partition_field_on_colon``) into a type that Sphinx then cross-references: one
    without inline markup (a type holding a literal or a role is shown as it is)."""
    before = []
    for i, piece in enumerate(_xref_or_code_regex.split(text)):
        m = _single_colon_regex.search(piece) if i % 2 == 0 else None
        if m:
            before.append(piece[:m.start()])
            typ = "".join(before).strip()
            return bool(typ) and "`" not in typ
        before.append(piece)
    return False


def documented_first_lines():
    """``(file:line, text)`` of the first line of each ``#:`` comment of a public constant
    or of an attribute of a public class."""
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if module.endswith(("__init__", "__main__")):
            continue
        public = set(getattr(importlib.import_module(module), "__all__", ()))
        lines = path.read_text().splitlines()
        cls, pending = None, None                     # enclosing class; (line, text) waiting
        for number, line in enumerate(lines, 1):
            stripped = line.strip()
            if line.startswith("class "):
                cls = re.match(r"class (\w+)", line).group(1)
            elif line and not line[0].isspace() and not line.startswith("#"):
                cls = None
            if stripped.startswith("#:"):             # a block above its target
                pending = pending or (number, stripped[2:])
                continue
            m = TARGET.match(line)
            inline = line.find("#:") if m else -1
            if m and (pending or inline >= 0):
                first = pending if pending else (number, line[inline + 2:])
                owner = m.group(2) if not m.group(1) else cls
                if owner in public:
                    yield f"{path.relative_to(PACKAGE.parent)}:{first[0]}", first[1]
            pending = None


def test_no_documented_doc_comment_reads_as_a_type():
    bad = [f"{where}:{text}" for where, text in documented_first_lines() if reads_as_type(text)]
    assert not bad, ("doc comments whose first line holds 'X: Y' (Sphinx reads X as a type):\n"
                     + "\n".join(bad))


def test_the_scan_sees_the_doc_comments_and_the_pattern():
    assert reads_as_type(" mean / se (NaN: no spread)")          # the CI failure of 6580e60
    assert reads_as_type(" Largest label-noise sd of the simulations: sigma")
    assert not reads_as_type(" :math:`x: y` of ``a: b`` and :func:`f`")
    assert not reads_as_type(" the wheel (``a/b.gz``): shown as text")
    found = dict(documented_first_lines())
    assert len(found) > 50
    assert any(where.startswith("transferkit/stats.py") for where in found)    # Paired's fields
