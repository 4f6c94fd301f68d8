"""The built book in a real browser: every page loads cleanly and its math renders.

``tests/test_book_offline.py`` reads the HTML; this test *runs* it.  The built book
(folder from ``TRANSFERKIT_BOOK_HTML``, default ``_build/html``) is served on
``127.0.0.1`` and every HTML page (``_static/`` template fragments excepted; the
search page and the index included, they need no special handling) is opened in
headless Chromium, driven by Selenium through Debian's ``chromedriver``, as a
first-time visitor would see it (storage cleared, cache disabled).  A page fails on

* a console message of level SEVERE (JS exception, ``console.error``, resource error);
* a failed request (network error, or an HTTP status >= 400);
* any request that leaves localhost (every request URL is read from the DevTools
  performance log; Chromium's resolver also refuses every other host, so the test
  never touches the network even where there is one);
* an ``<img>`` that did not load (``naturalWidth == 0``);
* math that MathJax did not render: after ``MathJax.startup.promise`` (and the web
  fonts) settle, a page with math must contain ``mjx-container`` elements, every
  ``.math`` element must hold one, no ``mjx-merror`` (TeX error) may be shown, and the
  visible text of the article (code excluded) may contain no raw ``$...$``, ``\\(``,
  ``\\[`` or ``\\begin{`` delimiters.

A full-page screenshot of every page is written to ``_build/screenshots/<page>.png``
(``TRANSFERKIT_SCREENSHOTS`` overrides the folder): the CI artifact.

The checker's own tests serve synthetic pages from ``tmp_path`` (a broken image, a
remote script and style sheet, a console error, unrendered math; and clean pages with
and without MathJax) so the book test cannot pass vacuously.

Needs ``selenium`` (the ``test`` extra) and the Debian packages ``chromium`` and
``chromium-driver`` (``make test`` installs them when run as root); without them the
tests are skipped with a message saying what to install.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import json
import os
import re
import struct
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from _helpers import built_book_dir

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get("TRANSFERKIT_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("TRANSFERKIT_CHROMEDRIVER", "/usr/bin/chromedriver"))
SCREENSHOTS = Path(os.environ.get("TRANSFERKIT_SCREENSHOTS", REPO / "_build" / "screenshots"))

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    # hermetic and reproducible: no host but localhost resolves, fixed viewport
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
    "--force-device-scale-factor=1",
    "--hide-scrollbars",
    "--lang=en-US",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
TIMEOUT_S = 30  # page load / script; a page of the smoke book takes about a second
MAX_SHOT_HEIGHT = 15000  # px; Chromium cannot capture much taller surfaces


# --------------------------------------------------------------------------
# availability
# --------------------------------------------------------------------------


def _missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -e '.[test]'"
    for path, pkg in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (path.is_file() and os.access(path, os.X_OK)):
            return (f"{path} not found: install the Debian packages chromium and chromium-driver "
                    f"(sudo apt-get install chromium chromium-driver; `make test` does it when run "
                    f"as root), or point TRANSFERKIT_CHROMIUM / TRANSFERKIT_CHROMEDRIVER at them "
                    f"(missing: {pkg})")
    return None


# --------------------------------------------------------------------------
# a static server on localhost
# --------------------------------------------------------------------------


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".js": "text/javascript", ".mjs": "text/javascript",
                      ".woff": "font/woff", ".woff2": "font/woff2", ".svg": "image/svg+xml"}

    def log_message(self, format, *args):  # quiet
        pass


@contextlib.contextmanager
def serve(folder: Path):
    """Serve ``folder`` on ``http://127.0.0.1:<free port>/``; yields its base URL."""
    handler = functools.partial(_Handler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


# --------------------------------------------------------------------------
# the checker
# --------------------------------------------------------------------------

# Runs in the page after the load event.  Waits for MathJax (if the page loads it),
# the web fonts and the images, then reports what the Python side checks.
_SETTLE_AND_INSPECT = r"""
const done = arguments[arguments.length - 1];
const timeoutMs = arguments[0];
const sleep = ms => new Promise(r => setTimeout(r, ms));
(async () => {
  const t0 = Date.now();
  const out = {mathjax: "absent"};
  while (document.readyState !== "complete" && Date.now() - t0 < timeoutMs) await sleep(25);
  try {
    const mjScript = !!document.querySelector('script[src*="mathjax" i]');
    if (mjScript || window.MathJax) {
      out.mathjax = "timeout";
      while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)
             && Date.now() - t0 < timeoutMs) await sleep(25);
      if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
        await Promise.race([MathJax.startup.promise.then(() => { out.mathjax = "ready"; }),
                            sleep(Math.max(0, timeoutMs - (Date.now() - t0)))]);
      }
    }
  } catch (e) { out.mathjax = "error: " + e; }
  if (document.fonts) await Promise.race([document.fonts.ready, sleep(5000)]);
  while ([...document.images].some(i => !i.complete) && Date.now() - t0 < timeoutMs) await sleep(25);
  out.images = [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))
                                   .map(i => i.currentSrc || i.getAttribute("src") || "(no src)");
  out.n_images = document.images.length;
  out.mjx = document.querySelectorAll("mjx-container").length;
  out.merror = [...document.querySelectorAll("mjx-merror")]
                 .map(e => (e.getAttribute("data-mjx-error") || e.textContent).slice(0, 120));
  // MathJax's noundefined extension typesets an unknown macro \foo as a red mtext "\foo"
  try {
    if (out.mathjax === "ready" && MathJax.startup.document) {
      for (const item of MathJax.startup.document.math) {
        item.root.walkTree(node => {
          if (!node.isKind("mtext")) return;
          const t = node.childNodes.map(c => (c.getText ? c.getText() : "")).join("");
          if (/^\\[A-Za-z]+$/.test(t)) out.merror.push("undefined macro " + t + " in " +
                                                         String(item.math).slice(0, 80));
        });
      }
    }
  } catch (e) { out.merror.push("could not inspect the typeset math: " + e); }
  out.unrendered = [...document.querySelectorAll(".math")]
                     .filter(e => !e.querySelector("mjx-container"))
                     .map(e => e.textContent.trim().slice(0, 80));
  // visible prose of the article, code and rendered math excluded
  const root = document.querySelector("article") || document.querySelector("main") || document.body;
  const skip = "pre, code, kbd, samp, script, style, textarea, mjx-container, .highlight";
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const chunks = [];
  while (walker.nextNode()) {
    const el = walker.currentNode.parentElement;
    if (!el || el.closest(skip)) continue;
    if (el.checkVisibility && !el.checkVisibility({visibilityProperty: true})) continue;
    chunks.push(walker.currentNode.nodeValue);
  }
  out.text = chunks.join("\n");
  done(out);
})();
"""

# raw TeX left in the visible text: $...$ / $$...$$, \( \), \[ \], \begin{...}
# (pandoc's rule for $: no space inside either dollar, no digit right after the closing one)
_RAW_MATH = re.compile(r"\$\$?(?=[^\s$])[^$\n]{0,300}?(?<=[^\s$])\$(?!\d)|\\[()\[\]]|\\begin\{")


@dataclass
class PageReport:
    url: str
    problems: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    n_images: int = 0
    mjx: int = 0
    mathjax: str = "absent"
    height: int = 0
    final_url: str = ""

    def __str__(self) -> str:
        return "\n".join(f"{self.url}: {p}" for p in self.problems)


def raw_math_snippets(text: str) -> list[str]:
    """Raw TeX delimiters left in visible text, each with a little context."""
    return [text[max(0, m.start() - 30): m.end() + 30].replace("\n", " ")
            for m in _RAW_MATH.finditer(text)]


def is_local(url: str) -> bool:
    """True for URLs that stay on this machine (localhost, data:, blob:, about:)."""
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return True
    return parts.scheme in ("http", "https", "ws", "wss") and (parts.hostname or "") in LOCAL_HOSTS


class Browser:
    """One headless Chromium (fresh profile) that checks pages and takes screenshots."""

    def __init__(self, profile: Path):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        opts = webdriver.ChromeOptions()
        opts.binary_location = str(CHROMIUM)
        for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]:
            opts.add_argument(flag)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        opts.add_experimental_option("perfLoggingPrefs", {"enableNetwork": True, "enablePage": False})
        self.driver = webdriver.Chrome(options=opts, service=Service(str(CHROMEDRIVER)))
        self.driver.set_page_load_timeout(TIMEOUT_S)
        self.driver.set_script_timeout(TIMEOUT_S + 10)
        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})

    def quit(self) -> None:
        self.driver.quit()

    def _drain(self) -> tuple[list[dict], list[dict]]:
        return self.driver.get_log("browser"), self.driver.get_log("performance")

    def check(self, url: str, *, expect_math: bool | None = None,
              screenshot: Path | None = None) -> PageReport:
        """Open ``url`` as a first-time visitor and report every problem found.

        ``expect_math``: the page has math, so rendered ``mjx-container`` elements are
        required (``None``: decide from the page, i.e. whether it has ``.math`` elements).
        """
        d = self.driver
        d.get("about:blank")
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
        d.execute_cdp_cmd("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
        self._drain()
        report = PageReport(url)
        d.get(url)
        self._follow_meta_refresh(url)
        report.final_url = d.current_url
        info = d.execute_async_script(_SETTLE_AND_INSPECT, TIMEOUT_S * 1000)
        if screenshot is not None:
            report.height = self._screenshot(screenshot)
        console, perf = self._drain()

        # Chromium asks for /favicon.ico at the server root by itself when a page declares
        # no icon; that request is not the book's (a project site does not own the root).
        implicit_icon = origin + "/favicon.ico"

        # console
        for entry in console:
            if entry.get("level") == "SEVERE" and not (
                    entry.get("source") == "network" and entry.get("message", "").startswith(implicit_icon + " ")):
                report.problems.append(f"console {entry.get('source', '')}: {entry.get('message')}")
        # network: every request, failures, anything leaving localhost
        urls: dict[str, str] = {}
        for entry in perf:
            msg = json.loads(entry["message"])["message"]
            method, params = msg.get("method"), msg.get("params", {})
            if method == "Network.requestWillBeSent":
                req_url = params["request"]["url"]
                urls[params["requestId"]] = req_url
                report.requests.append(req_url)
                if not is_local(req_url):
                    report.problems.append(f"request leaves localhost: {req_url}")
            elif method == "Network.responseReceived":
                status = int(params["response"].get("status", 0))
                if status >= 400 and params["response"]["url"] != implicit_icon:
                    report.problems.append(f"failed request: HTTP {status} {params['response']['url']}")
            elif method == "Network.loadingFailed":
                req_url = urls.get(params.get("requestId"), "?")
                if req_url == implicit_icon:
                    continue
                report.problems.append(f"failed request: {params.get('errorText')} {req_url}")
        # images
        report.n_images = info["n_images"]
        report.problems += [f"image not loaded (naturalWidth 0): {src}" for src in info["images"]]
        # math
        report.mathjax, report.mjx = info["mathjax"], info["mjx"]
        has_math = (bool(info["unrendered"]) or report.mjx > 0) if expect_math is None else expect_math
        if info["mathjax"] not in ("absent", "ready"):
            report.problems.append(f"MathJax did not finish: {info['mathjax']}")
        if has_math and report.mjx == 0:
            report.problems.append("page has math but no mjx-container: MathJax rendered nothing")
        report.problems += [f"math not rendered: {t!r}" for t in info["unrendered"][:5]]
        report.problems += [f"MathJax error: {t!r}" for t in info["merror"][:5]]
        report.problems += [f"raw TeX in visible text: ...{s}..." for s in raw_math_snippets(info["text"])[:5]]
        return report

    def _follow_meta_refresh(self, url: str) -> None:
        """If ``url`` is a <meta http-equiv=refresh> redirect (the book's index.html),
        wait until the browser has left it and loaded the target."""
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.support.wait import WebDriverWait

        d = self.driver
        try:
            redirect = d.execute_script(
                "return !!document.querySelector('meta[http-equiv=\"refresh\" i]')")
        except WebDriverException:  # the document went away under the script: a redirect
            redirect = True
        if redirect:
            WebDriverWait(d, TIMEOUT_S, ignored_exceptions=(WebDriverException,)).until(
                lambda drv: drv.current_url != url
                and drv.execute_script("return document.readyState") == "complete")

    def _screenshot(self, path: Path) -> int:
        """Full-page PNG of the current page; returns the captured height in px."""
        metrics = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        width = max(1, int(size["width"]))
        height = max(1, min(int(size["height"]), MAX_SHOT_HEIGHT))
        shot = self.driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True, "fromSurface": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        })
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return height


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    reason = _missing_browser()
    if reason:
        pytest.skip(reason)
    b = Browser(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield b
    finally:
        b.quit()


# --------------------------------------------------------------------------
# the checker's own tests: it must flag what is broken and pass what is not
# --------------------------------------------------------------------------


def _png(path: Path, w: int = 3, h: int = 2) -> None:
    """Write a tiny valid RGB PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + b"\x80\x20\x20" * w for _ in range(h))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


BROKEN_PAGE = r"""<!DOCTYPE html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="//fonts.example.invalid/lato.css">
<script src="https://cdn.example.invalid/lib.js"></script>
</head><body><main><article>
<p>A fine image: <img src="ok.png" alt="ok"></p>
<p>A broken one: <img src="missing.png" alt="missing"></p>
<p>Math without MathJax: <span class="math">\(x^2\)</span> and prose with $\beta_t$.</p>
<pre>code may contain $x$ and \(y\)</pre>
<script>console.error("boom from the page");</script>
</article></main></body></html>
"""

CLEAN_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
</head><body><main><article><p>Hello <img src="ok.png" alt="ok"></p>
<pre>prices in code: $5 and $6, a regex \\(a\\)</pre></article></main></body></html>
"""

MATH_PAGE = r"""<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<script>window.MathJax = {"options": {"processHtmlClass": "math"}}</script>
<script defer src="mathjax/tex-mml-chtml.js"></script>
</head><body><main><article class="mathjax_ignore">
<p>Inline <span class="math">\(\mathcal{T} = \sin^2\theta\)</span> and display</p>
<div class="math">\[\mathbb{E}\mathcal{R}_{sc} = \frac{\sigma^2}{\gamma - 1}\]</div>
</article></main></body></html>
"""


@pytest.fixture(scope="module")
def synthetic_site(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    _png(site / "ok.png")
    (site / "broken.html").write_text(BROKEN_PAGE, encoding="utf-8")
    (site / "clean.html").write_text(CLEAN_PAGE, encoding="utf-8")
    (site / "math.html").write_text(MATH_PAGE, encoding="utf-8")
    (site / "badmacro.html").write_text(MATH_PAGE.replace(r"\sin^2", r"\sinn^2"), encoding="utf-8")
    (site / "doubleexp.html").write_text(MATH_PAGE.replace(r"\sigma^2", r"\sigma^2^3"),
                                         encoding="utf-8")
    (site / "badbrace.html").write_text(MATH_PAGE.replace(r"{\gamma - 1}", r"{\gamma - 1"),
                                        encoding="utf-8")
    mathjax = REPO / "_assets" / "mathjax"
    if mathjax.is_dir():
        (site / "mathjax").symlink_to(mathjax, target_is_directory=True)
    with serve(site) as base:
        yield base, mathjax.is_dir()


def test_checker_flags_a_broken_page(browser, synthetic_site, tmp_path):
    base, _ = synthetic_site
    report = browser.check(base + "broken.html", screenshot=tmp_path / "broken.png")
    text = str(report)
    assert "request leaves localhost: https://cdn.example.invalid/lib.js" in text
    assert "request leaves localhost: http://fonts.example.invalid/lato.css" in text
    assert re.search(r"failed request: HTTP 404 \S+/missing\.png", text), text
    assert re.search(r"image not loaded \(naturalWidth 0\): \S+/missing\.png", text), text
    assert "boom from the page" in text  # console.error is SEVERE
    assert "page has math but no mjx-container" in text
    assert "math not rendered: '\\\\(x^2\\\\)'" in text
    assert "raw TeX in visible text" in text and "$\\beta_t$" in text
    assert "ok.png" not in text  # the good image is fine
    assert "code may contain" not in text  # code is not prose
    assert (tmp_path / "broken.png").stat().st_size > 0


def test_checker_passes_a_clean_page(browser, synthetic_site, tmp_path):
    base, _ = synthetic_site
    report = browser.check(base + "clean.html", screenshot=tmp_path / "clean.png")
    assert report.problems == [], str(report)
    assert report.n_images == 1 and report.mathjax == "absent"
    assert report.requests and all(is_local(u) for u in report.requests)
    png = (tmp_path / "clean.png").read_bytes()
    assert png.startswith(b"\x89PNG") and struct.unpack(">I", png[16:20])[0] == 1280


def test_checker_waits_for_mathjax_and_flags_tex_errors(browser, synthetic_site):
    base, have_mathjax = synthetic_site
    if not have_mathjax:
        pytest.skip("no _assets/mathjax in this checkout")
    good = browser.check(base + "math.html")
    assert good.problems == [], str(good)
    assert good.mathjax == "ready" and good.mjx == 2
    bad = browser.check(base + "badmacro.html")
    assert any("MathJax error: 'undefined macro" in p and "sinn" in p for p in bad.problems), str(bad)
    bad = browser.check(base + "doubleexp.html")  # a TeX error: MathJax shows an merror
    assert any("MathJax error" in p and "Double exponent" in p for p in bad.problems), str(bad)
    bad = browser.check(base + "badbrace.html")  # unbalanced: MathJax does not see math at all
    assert any(p.startswith("math not rendered") for p in bad.problems), str(bad)
    assert any("raw TeX in visible text" in p for p in bad.problems), str(bad)


def test_raw_math_patterns():
    assert raw_math_snippets("the risk $R$ grows") and raw_math_snippets(r"see \(x\)")
    assert raw_math_snippets(r"\[ x \]") and raw_math_snippets(r"\begin{align} x")
    assert raw_math_snippets("$$x = 1$$")
    assert raw_math_snippets("$x$") and raw_math_snippets("with $\\beta_t$.")
    assert not raw_math_snippets("costs $5 and $ 6; a 100 $ bill; $5-$6")
    assert is_local("http://127.0.0.1:8000/x.js") and is_local("data:image/png;base64,AA")
    assert not is_local("https://cdn.jsdelivr.net/npm/mathjax@3") and not is_local("//x.org/a.css")


# --------------------------------------------------------------------------
# the built book
# --------------------------------------------------------------------------




def book_pages(book: Path) -> list[Path]:
    """Every HTML page of the build, relative to it (``_static`` holds template fragments)."""
    return sorted(p.relative_to(book) for p in book.rglob("*.html")
                  if "_static" not in p.relative_to(book).parts)


def test_every_page_of_the_book_in_chromium(browser):
    """Every page as a first-time visitor sees it (console, requests, images, math; a
    screenshot each), and on the pages with interactive figures, every figure drawn by the
    book's own plotly.js (checked on the same visit: those are the slowest pages to load)."""
    book = built_book_dir()
    pages = book_pages(book)
    assert pages, f"no HTML pages under {book}"
    for old in SCREENSHOTS.rglob("*.png"):  # stale pages of an earlier build
        old.unlink()
    problems, with_math, n_images, with_plotly = [], 0, 0, 0
    with serve(book) as base:
        for rel in pages:
            html = (book / rel).read_text(encoding="utf-8", errors="replace")
            has_math = 'class="math' in html
            report = browser.check(base + rel.as_posix(), expect_math=has_math,
                                   screenshot=SCREENSHOTS / rel.with_suffix(".png"))
            problems += [f"{rel}: {p}" for p in report.problems]
            if not report.requests:  # at least the page itself: else the log is not working
                problems.append(f"{rel}: no request seen in the DevTools performance log")
            with_math += has_math
            n_images += report.n_images
            if 'class="transferkit-plotly"' in html:
                with_plotly += 1
                problems += [f"{rel}: {p}" for p in _plotly_problems(browser)]
    assert not problems, (f"{len(problems)} problem(s) on {len(pages)} page(s) in Chromium:\n"
                          + "\n".join(problems))
    assert with_math, "no page of the book has math: the introduction does, so the build is broken"
    assert n_images, "no page of the book shows an image: the chapters' figures are missing"
    assert with_plotly, "no page of the book has an interactive figure (Fig. 1a of the linear chapter does)"
    shots = sorted(SCREENSHOTS.rglob("*.png"))
    assert len(shots) == len(pages), (shots, pages)


# --------------------------------------------------------------------------
# interactive (plotly) figures: drawn offline by the book's own plotly.js
# --------------------------------------------------------------------------

# Waits until every plotly figure of the page is drawn (the loader in
# transferkit.figures.plotting sets data-plotted="true"), then reports what each one holds.
_PLOTLY_STATE = r"""
const done = arguments[arguments.length - 1];
const timeoutMs = arguments[0];
const sleep = ms => new Promise(r => setTimeout(r, ms));
(async () => {
  const t0 = Date.now();
  const divs = () => [...document.querySelectorAll(".transferkit-plotly")];
  while (divs().some(d => d.getAttribute("data-plotted") !== "true") && Date.now() - t0 < timeoutMs)
    await sleep(50);
  done({plotly: !!window.Plotly, version: window.Plotly ? Plotly.version : null,
        figures: divs().map(d => ({name: d.getAttribute("data-transferkit-figure"),
                                   plotted: d.getAttribute("data-plotted") === "true",
                                   svg: d.querySelectorAll(".main-svg").length,
                                   gl: d.querySelectorAll("canvas").length,
                                   traces: ((d.querySelector(".plotly-graph-div") || {}).data || []).length,
                                   text: d.textContent.slice(0, 200)}))});
})();
"""


def _plotly_report(browser, url: str) -> tuple[PageReport, dict]:
    report = browser.check(url)
    state = browser.driver.execute_async_script(_PLOTLY_STATE, TIMEOUT_S * 1000)
    return report, state


def _plotly_problems(browser) -> list[str]:
    """What is wrong with the interactive figures of the page open in ``browser``."""
    state = browser.driver.execute_async_script(_PLOTLY_STATE, TIMEOUT_S * 1000)
    problems = [] if state["plotly"] else ["plotly.js did not load"]
    for f in state["figures"]:
        if not (f["plotted"] and f["traces"] >= 1 and (f["svg"] or f["gl"])):
            problems.append(f"interactive figure {f['name']!r} not drawn: {f}")
    return problems


def test_plotly_js_in_assets_matches_the_installed_plotly():
    """``_assets/plotly.min.js`` must be the plotly.js that the installed plotly writes for."""
    plotly_offline = pytest.importorskip("plotly.offline")
    shipped = REPO / "_assets" / "plotly.min.js"
    assert shipped.is_file(), "missing _assets/plotly.min.js: copy plotly/package_data/plotly.min.js"
    head = shipped.read_text(encoding="utf-8", errors="replace")[:400]
    m = re.search(r"plotly\.js v(\d+\.\d+\.\d+)", head)
    assert m, f"no version banner in {shipped}"
    assert m.group(1) == plotly_offline.get_plotlyjs_version(), (
        f"_assets/plotly.min.js is v{m.group(1)}, the installed plotly needs "
        f"v{plotly_offline.get_plotlyjs_version()}: copy plotly/package_data/plotly.min.js")


def test_checker_sees_a_plotly_figure_drawn_offline(browser, tmp_path):
    """The loader of transferkit.figures.plotting draws a 3-d surface and a heat map from _static/."""
    pytest.importorskip("plotly")
    import numpy as np

    from transferkit import figures, provenance

    site = tmp_path / "site"
    (site / "_static").mkdir(parents=True)
    (site / "_static" / "plotly.min.js").symlink_to(REPO / "_assets" / "plotly.min.js")
    g, t = np.linspace(0.1, 2, 12), np.linspace(0, 1.5, 7)
    surface = provenance.plotly_html(figures.plotting.plotly_surface(g, t, np.outer(1 - g, np.cos(t))), "surf")
    heat = provenance.plotly_html(figures.plotting.plotly_heatmap([[1, -1], [0.5, 2]], ["a", "b"], ["c", "d"]),
                                "heat")
    (site / "sub").mkdir()
    (site / "sub" / "page.html").write_text(
        '<!DOCTYPE html><html data-content_root="../"><head><meta charset="utf-8">'
        '<link rel="icon" href="data:,"></head><body><main><article>'
        + surface + heat + "</article></main></body></html>", encoding="utf-8")
    with serve(site) as base:
        report, state = _plotly_report(browser, base + "sub/page.html")
    assert report.problems == [], str(report)
    assert state["plotly"] and state["version"], state
    figs = {f["name"]: f for f in state["figures"]}
    assert figs["surf"]["plotted"] and figs["surf"]["gl"] >= 1, figs  # WebGL surface
    assert figs["heat"]["plotted"] and figs["heat"]["svg"] >= 1 and figs["heat"]["traces"] == 1
    assert sum(u.endswith("/_static/plotly.min.js") for u in report.requests) == 1  # once a page
