"""The built book must work offline: no page may load anything from the web.

Scans every HTML page of a built book (folder from ``TRANSFERKIT_BOOK_HTML``,
default ``_build/html``) plus the CSS files it ships, and fails on any
reference to a remote resource: ``<script src>``, ``<link rel=stylesheet>``
(and icons, preloads, ...), ``<img>``, ``<iframe>``, media sources,
``url()`` / ``@import`` in CSS, and ``fetch()`` / ``import()`` /
``src=...`` of remote URLs in inline scripts. "Remote" means ``http://``,
``https://`` or protocol-relative ``//host`` URLs. Plain ``<a href>``
hyperlinks to external sites are fine: following them is the reader's choice.

It also checks that pages with math load MathJax from the book's own
``_static/mathjax/`` and that every local asset a page references exists.

Only the standard library is used (html.parser), so the test runs anywhere.
``make test`` builds the book at smoke scale and points
``TRANSFERKIT_BOOK_HTML`` at it; when the variable is unset and no book has
been built, the scan is skipped (the scanner's own unit tests still run).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from _helpers import built_book_dir

# <link rel=...> values that do not make the browser load anything.
_PASSIVE_LINK_RELS = {
    "alternate", "author", "bookmark", "canonical", "external", "help", "index",
    "license", "me", "next", "nofollow", "noopener", "noreferrer", "prev",
    "search", "tag", "top", "up", "first", "last", "contents", "start",
}
# attributes that make the browser fetch a URL, per tag ("*": any tag)
_LOADING_ATTRS = {
    "script": ("src",),
    "img": ("src", "srcset", "data-src"),
    "source": ("src", "srcset"),
    "iframe": ("src",),
    "frame": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "video": ("src", "poster"),
    "audio": ("src",),
    "track": ("src",),
    "input": ("src",),
    "image": ("href", "xlink:href"),  # SVG
    "use": ("href", "xlink:href"),  # SVG
    "feimage": ("href", "xlink:href"),  # SVG
    "body": ("background",),
    "table": ("background",),
    "td": ("background",),
}

_REMOTE = re.compile(r"^\s*(?:https?:)?//", re.IGNORECASE)
_CSS_URL = re.compile(r"""url\(\s*(['"]?)(.*?)\1\s*\)""", re.IGNORECASE | re.DOTALL)
_CSS_IMPORT = re.compile(r"""@import\s+(?:url\(\s*)?(['"]?)([^'")\s;]+)""", re.IGNORECASE)
_URL_LITERAL = r"""(['"`])((?:https?:)?//[^'"`\s]+)\1"""
# remote URLs in script code that are clearly being loaded
_JS_LOADS = [
    re.compile(r"\b(?:fetch|import|importScripts|require|loadScript|getScript)\s*\(\s*\[?\s*" + _URL_LITERAL),
    re.compile(r"\.open\s*\(\s*(['\"])[A-Z]+\1\s*,\s*" + _URL_LITERAL),  # XMLHttpRequest
    re.compile(r"""\b(?:src|href)\s*[:=]\s*""" + _URL_LITERAL),  # el.src = "..." / {src: "..."}
    # any quoted remote URL of a script, style sheet, font or data file
    re.compile(r"""(['"`])((?:https?:)?//[^'"`\s]+?\.(?:m?js|css|woff2?|ttf|otf|json|wasm)(?:\?[^'"`\s]*)?)\1"""),
]


def is_remote(url: str) -> bool:
    """True for http(s):// and protocol-relative //host URLs."""
    return bool(_REMOTE.match(url or ""))


def css_remote_refs(css: str) -> list[str]:
    """Remote URLs loaded by CSS text: url(...) and @import."""
    found = [m.group(2) for m in _CSS_URL.finditer(css)]
    found += [m.group(2) for m in _CSS_IMPORT.finditer(css)]
    return list(dict.fromkeys(u.strip() for u in found if is_remote(u.strip())))


def js_remote_refs(code: str) -> list[str]:
    """Remote URLs that script code fetches, imports or injects."""
    hits = []
    for pattern in _JS_LOADS:
        for m in pattern.finditer(code):
            hits.append(m.group(m.lastindex))
    return sorted(set(hits))


def _srcset_urls(value: str) -> list[str]:
    return [part.strip().split()[0] for part in value.split(",") if part.strip()]


class _Scanner(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.remote: list[str] = []  # human-readable findings
        self.local_assets: list[str] = []  # local URLs the page loads
        self.scripts_src: list[str] = []
        self._in: str | None = None  # "script" / "style" while inside one
        self._buffer: list[str] = []

    # -- tags
    def handle_starttag(self, tag, attrs):
        self._element(tag, attrs)
        if tag in ("script", "style"):
            attr = dict(attrs)
            # <script type="text/x-thebe-config"> etc. are still scanned.
            if tag == "style" or not attr.get("src"):
                self._in, self._buffer = tag, []

    def handle_startendtag(self, tag, attrs):
        self._element(tag, attrs)

    def handle_endtag(self, tag):
        if self._in == tag:
            text = "".join(self._buffer)
            if tag == "style":
                self.remote += [f"<style> loads {u}" for u in css_remote_refs(text)]
            else:
                self.remote += [f"inline <script> loads {u}" for u in js_remote_refs(text)]
            self._in, self._buffer = None, []

    def handle_data(self, data):
        if self._in:
            self._buffer.append(data)

    # -- one element's attributes
    def _element(self, tag, attrs):
        attr = {k.lower(): (v or "") for k, v in attrs}
        urls: list[tuple[str, str]] = []
        for name in _LOADING_ATTRS.get(tag, ()):
            if name in attr:
                values = _srcset_urls(attr[name]) if name == "srcset" else [attr[name]]
                urls += [(name, v) for v in values]
        if tag == "link" and "href" in attr:
            rels = set(attr.get("rel", "").lower().split())
            if not rels or not rels <= _PASSIVE_LINK_RELS:
                urls.append(("href", attr["href"]))
        if tag == "meta" and attr.get("http-equiv", "").lower() == "refresh":
            m = re.search(r"url\s*=\s*(\S+)", attr.get("content", ""), re.IGNORECASE)
            if m:
                urls.append(("http-equiv=refresh", m.group(1)))
        for name, url in urls:
            if is_remote(url):
                self.remote.append(f"<{tag} {name}={url!r}>")
            elif url and not url.startswith(("data:", "blob:", "#", "javascript:", "mailto:")):
                self.local_assets.append(url)
                if tag == "script":
                    self.scripts_src.append(url)
        if "style" in attr:
            self.remote += [f"<{tag} style=...> loads {u}" for u in css_remote_refs(attr["style"])]
        for name, value in attr.items():  # onload="fetch('https://...')" and friends
            if name.startswith("on"):
                self.remote += [f"<{tag} {name}=...> loads {u}" for u in js_remote_refs(value)]


def scan_html(html: str) -> _Scanner:
    """Parse one page; ``.remote`` lists the remote loads found."""
    scanner = _Scanner()
    scanner.feed(html)
    scanner.close()
    return scanner


def find_remote_refs(html: str) -> list[str]:
    """Remote resources that the page would load (hyperlinks excluded)."""
    return scan_html(html).remote


def page_has_math(html: str) -> bool:
    return 'class="math' in html or "class='math" in html


def _resolve_local(page: Path, url: str, root: Path) -> Path:
    path = unquote(urlsplit(url).path)
    return (root / path.lstrip("/")) if path.startswith("/") else (page.parent / path)


# --------------------------------------------------------------------------
# unit tests of the scanner: the book test must not be able to pass vacuously
# --------------------------------------------------------------------------

SYNTHETIC = """<!DOCTYPE html>
<html><head>
  <link rel="stylesheet" href="_static/local.css">
  <link rel="canonical" href="https://example.org/book/page.html">
  <link rel="stylesheet" href="//fonts.example.com/css?family=Lato">
  <script src="_static/mathjax/tex-mml-chtml.js"></script>
  <script src="https://cdn.example.com/require.min.js"></script>
  <style>@import url("https://fonts.example.com/x.css"); body { background: url(img/ok.png); }</style>
  <script>fetch("https://api.example.com/data.json").then(r => r.json());</script>
</head><body>
  <p>See <a href="https://arxiv.org/abs/1909.12031">the paper</a>.</p>
  <img src="_images/fig.png" srcset="_images/fig.png 1x, http://img.example.com/fig@2x.png 2x">
  <iframe src="https://www.youtube.com/embed/xyz"></iframe>
  <div style="background-image: url('//cdn.example.com/bg.png')"></div>
</body></html>
"""


def test_scanner_catches_remote_loads():
    remote = find_remote_refs(SYNTHETIC)
    text = "\n".join(remote)
    assert "https://cdn.example.com/require.min.js" in text
    assert "//fonts.example.com/css?family=Lato" in text
    assert "https://fonts.example.com/x.css" in text
    assert "https://api.example.com/data.json" in text
    assert "http://img.example.com/fig@2x.png" in text
    assert "https://www.youtube.com/embed/xyz" in text
    assert "//cdn.example.com/bg.png" in text
    assert len(remote) == 7, remote


def test_scanner_allows_hyperlinks_and_local_assets():
    remote = "\n".join(find_remote_refs(SYNTHETIC))
    assert "arxiv.org" not in remote  # <a href> to an external site is fine
    assert "example.org/book/page.html" not in remote  # rel=canonical loads nothing
    assert "local.css" not in remote and "ok.png" not in remote
    scanner = scan_html(SYNTHETIC)
    assert "_static/mathjax/tex-mml-chtml.js" in scanner.scripts_src
    assert find_remote_refs('<a href="https://example.com">x</a><a href="//example.com">y</a>') == []


def test_scanner_on_a_clean_page():
    page = '<html><head><script src="../_static/mathjax/tex-mml-chtml.js"></script></head>' \
           '<body><span class="math notranslate nohighlight">\\(x\\)</span></body></html>'
    assert find_remote_refs(page) == []
    assert page_has_math(page)


def test_css_and_js_helpers():
    assert css_remote_refs("@import 'https://a.example/x.css';") == ["https://a.example/x.css"]
    assert css_remote_refs("src: url(fonts/a.woff2) format('woff2')") == []
    assert js_remote_refs("s.src = 'https://cdn.example/x.js'") == ["https://cdn.example/x.js"]
    assert js_remote_refs("var home = 'see https://example.org for docs'") == []


# --------------------------------------------------------------------------
# the built book
# --------------------------------------------------------------------------




@pytest.fixture(scope="module")
def book() -> Path:
    return built_book_dir()


@pytest.fixture(scope="module")
def pages(book) -> dict[Path, str]:
    found = {p: p.read_text(encoding="utf-8", errors="replace") for p in sorted(book.rglob("*.html"))
             if "_static" not in p.relative_to(book).parts}
    assert found, f"no HTML pages under {book}"
    return found


def test_pages_load_nothing_remote(pages, book):
    problems = []
    for page, html in pages.items():
        problems += [f"{page.relative_to(book)}: {r}" for r in find_remote_refs(html)]
    assert not problems, "pages load remote resources:\n" + "\n".join(problems)


def test_shipped_css_and_js_load_nothing_remote(book):
    problems = []
    for path in sorted(book.rglob("*.css")):
        problems += [f"{path.relative_to(book)}: loads {u}"
                     for u in css_remote_refs(path.read_text(encoding="utf-8", errors="replace"))]
    for path in sorted(book.rglob("*.js")):
        code = path.read_text(encoding="utf-8", errors="replace")
        # Only explicit fetch()/import()/importScripts() of a remote URL: bundled
        # libraries mention URLs in comments and error messages all the time.
        problems += [f"{path.relative_to(book)}: loads {m.group(m.lastindex)}"
                     for m in _JS_LOADS[0].finditer(code)]
    assert not problems, "shipped assets load remote resources:\n" + "\n".join(problems)


def test_local_assets_exist(pages, book):
    missing = []
    for page, html in pages.items():
        for url in scan_html(html).local_assets:
            if not _resolve_local(page, url, book).exists():
                missing.append(f"{page.relative_to(book)}: {url}")
    assert not missing, "pages reference local assets that are not in the build:\n" + "\n".join(missing)


def test_mathjax_is_local_on_pages_with_math(pages, book):
    with_math = {p: h for p, h in pages.items() if page_has_math(h)}
    assert with_math, "no page contains math: the book's introduction does, so the build is broken"
    problems = []
    for page, html in with_math.items():
        scripts = [s for s in scan_html(html).scripts_src if "mathjax" in s.lower()]
        local = [s for s in scripts if re.search(r"(^|/)_static/mathjax/[^?#]*\.js", s)]
        if not local:
            problems.append(f"{page.relative_to(book)}: MathJax not loaded from _static/mathjax/ ({scripts})")
            continue
        script = _resolve_local(page, local[0], book)
        if not script.is_file():
            problems.append(f"{page.relative_to(book)}: {local[0]} does not exist")
    assert not problems, "\n".join(problems)
    fonts = book / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    assert (fonts / "MathJax_Main-Regular.woff").is_file(), f"MathJax CHTML fonts missing in {fonts}"


def test_markdown_output_tables_are_rendered(pages, book):
    """The predictor chapter displays its score tables as text/markdown outputs: they must
    come out as HTML tables (myst-nb parses them with nb_render_markdown_format: myst),
    not as a paragraph of pipes."""
    page = book / "notebooks" / "predictors.html"
    assert page in pages, "the predictor chapter is missing from the build"
    html = pages[page]
    assert html.count("<table") >= 4, "the predictor score tables are not rendered as tables"
    assert "| predictor |" not in html
