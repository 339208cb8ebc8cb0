"""Open every page of a built book in Chromium and list what a reader would find broken.

:func:`check_book` visits each HTML page, waits for MathJax, and records: pages that do not
load, JavaScript errors and console errors, failed or remote requests, broken images, error
and stderr outputs of notebook cells, math MathJax did not render (or raw ``$...$``/``\\(``
left in the text), words that send the reader outside the book (:mod:`outside_words`: a
design-notes file, a folder of the build machine, a tracker issue; and our workflow's words), raw
TeX and plain-text math anywhere on the page and display equations wider than their column at
1400 and 400 px (:mod:`math_check`), the legibility rules
(:mod:`legibility`: a table wider than the text column at 1400 px or showing less than its first
two columns at 400 px, a folded table the prose points to, a caption or note under 4.5:1
contrast, at a 400 px window a wide table that does not scroll sideways, a raster
image narrower than 1,600 px, another page of the book named in the text without a link), and
finally links to pages or anchors that do not exist. Run by hand on
an existing build: ``python tests/browser/book_check.py _build/html``.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import re
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import legibility
import math_check
import outside_words
from chromium_cdp import Chromium, ProtocolError, find_chromium

ROOT = Path(__file__).resolve().parents[2]
# jupyter_book has no __main__ module: call its command-line entry point with this interpreter.
JUPYTER_BOOK = [sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())"]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@contextlib.contextmanager
def serve(directory):
    """Serve ``directory`` on 127.0.0.1 at a free port; yields the base URL (ends with /)."""
    handler = functools.partial(QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


SKIPPED_FOLDERS = ("_static", "_sources", "_images", "_downloads")
REDIRECT = re.compile(r'<meta http-equiv="refresh" content="\d+;\s*url=([^"]+)"', re.I)
ID_ATTRIBUTE = re.compile(r'\s(?:id|name)="([^"]+)"')

# Run in the page once it has loaded; returns what the Python side checks.
PAGE_PROBE = r"""
(async () => {
  const withTimeout = (promise, ms) => Promise.race([promise, new Promise(r => setTimeout(r, ms))]);
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    try { await withTimeout(MathJax.startup.promise, 20000); } catch (e) {}
  }
  // Images below the fold may be lazy: ask for all of them, and wait until each has settled.
  await withTimeout(Promise.all(Array.from(document.images).map(img => {
    if (img.complete) return null;
    img.loading = 'eager';
    return new Promise(done => { img.addEventListener('load', done); img.addEventListener('error', done); });
  })), 20000);
  const mathNodes = Array.from(document.querySelectorAll('span.math, div.math'));
  const skip = 'pre, code, script, style, textarea, kbd, samp, mjx-container, .highlight';
  const root = document.querySelector('main') || document.body;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {acceptNode: node =>
    node.parentElement && node.parentElement.closest(skip) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  const rawDelimiters = /\\\(|\\\)|\\\[|\\\]|\\begin\{|\$\$|\$[^$\s][^$]*?[\\^_{}][^$]*?\$/;
  const rawMath = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const match = node.textContent.match(rawDelimiters);
    if (match) rawMath.push(node.textContent.slice(Math.max(0, match.index - 30), match.index + 70).trim());
  }
  const errorOutputs = Array.from(document.querySelectorAll(
      '.cell_output .traceback, .cell_output .error, .output.traceback, .output.error'));
  for (const pre of document.querySelectorAll('.cell_output pre')) {
    if (pre.textContent.includes('Traceback (most recent call last)') && !errorOutputs.includes(pre)) errorOutputs.push(pre);
  }
  return {
    title: document.title,
    mathjax: !!(window.MathJax && window.MathJax.startup),
    mathCount: mathNodes.length,
    unrendered: mathNodes.filter(el => !el.querySelector('mjx-container')).map(el => el.textContent.trim().slice(0, 120)),
    mathErrors: Array.from(document.querySelectorAll('mjx-merror')).map(e => e.getAttribute('data-mjx-error') || e.textContent),
    rawMath: rawMath,
    brokenImages: Array.from(document.images).filter(img => !(img.complete && img.naturalWidth > 0)).map(img => img.getAttribute('src')),
    stderr: Array.from(document.querySelectorAll('.cell_output .stderr')).map(e => e.textContent.trim().split('\n')[0].slice(0, 200)),
    cellErrors: errorOutputs.map(e => e.textContent.trim().split('\n').slice(-1)[0].slice(0, 200)),
    images: Array.from((document.querySelector('article') || root).querySelectorAll('img')).map(img =>
        ({src: img.getAttribute('src') || '', naturalWidth: img.naturalWidth})),
    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
    ids: Array.from(document.querySelectorAll('[id], a[name]')).map(e => e.id || e.getAttribute('name')),
  };
})()
"""


def book_pages(html_dir):
    """Every HTML page of the build, as paths relative to ``html_dir`` (posix), sorted."""
    html_dir = Path(html_dir)
    pages = []
    for path in sorted(html_dir.rglob("*.html")):
        rel = path.relative_to(html_dir).as_posix()
        if not rel.startswith(SKIPPED_FOLDERS):
            pages.append(rel)
    return pages


def redirect_target(html_dir, page):
    """Where a meta-refresh page (Jupyter Book's index.html) points, or None."""
    text = (Path(html_dir) / page).read_text(errors="replace")[:4000]
    found = REDIRECT.search(text)
    return urljoin(page, found.group(1)) if found else None


def _is_local(url, host):
    parts = urlsplit(url)
    return parts.scheme not in ("http", "https", "ws", "wss") or parts.netloc == host


def _network_problems(events, host):
    """Failed, erroring or remote requests among one page's events."""
    urls, problems = {}, []
    for event in events:
        params = event["params"]
        if event["method"] == "Network.requestWillBeSent":
            url = params["request"]["url"]
            urls[params["requestId"]] = url
            if not _is_local(url, host):
                problems.append(f"loads a remote resource: {url}")
        elif event["method"] == "Network.responseReceived":
            response = params["response"]
            if response["status"] >= 400 and not response["url"].endswith("/favicon.ico"):
                problems.append(f"HTTP {response['status']} for {response['url']}")
        elif event["method"] == "Network.loadingFailed":
            url = urls.get(params["requestId"], "?")
            if not params.get("canceled") and _is_local(url, host) and not url.endswith("/favicon.ico"):
                problems.append(f"request failed ({params['errorText']}): {url}")
    return problems


def _console_problems(events):
    problems = []
    for event in events:
        params = event["params"]
        if event["method"] == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            problems.append(f"JavaScript error: {text.splitlines()[0]}")
        elif event["method"] == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            problems.append(f"console error: {text[:200]}")
        elif (
            event["method"] == "Log.entryAdded"
            and params["entry"]["level"] == "error"
            and params["entry"].get("source") != "network"
        ):  # network: reported above
            problems.append(f"console error: {params['entry']['text'][:200]}")
    return problems


def _wait_for_quiet_network(browser, since, quiet=0.3, limit=10.0):
    """Wait until no request of the page is in flight (fonts and images load after 'load')."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        pending = set()
        for event in browser.events_since(since):
            if event["method"] == "Network.requestWillBeSent":
                pending.add(event["params"]["requestId"])
            elif event["method"] in ("Network.loadingFinished", "Network.loadingFailed"):
                pending.discard(event["params"]["requestId"])
        if not pending:
            count = len(browser.events_since(since))
            time.sleep(quiet)
            if len(browser.events_since(since)) == count:
                return
        else:
            time.sleep(0.05)


def visit(browser, base_url, page):
    """Load one page; returns (probe result or None, list of problems)."""
    since = browser.mark()
    error = browser.navigate(base_url + page)
    if error:
        return None, [f"does not load: {error}"]
    probe = browser.evaluate(PAGE_PROBE)
    _wait_for_quiet_network(browser, since)
    events = browser.events_since(since)
    host = urlsplit(base_url).netloc
    problems = _network_problems(events, host) + _console_problems(events)
    if probe["mathCount"] and not probe["mathjax"]:
        problems.append(f"MathJax not loaded, {probe['mathCount']} formulas shown as TeX")
    problems += [f"formula not rendered: {t}" for t in probe["unrendered"] if probe["mathjax"]]
    problems += [f"MathJax error: {t}" for t in probe["mathErrors"]]
    problems += [f"raw TeX in the text: {t!r}" for t in probe["rawMath"]]
    problems += [f"broken image: {src}" for src in probe["brokenImages"]]
    problems += [f"a notebook cell raised: {t}" for t in probe["cellErrors"]]
    # A warning on stderr is shown to every reader (often with a path of the machine that ran it).
    problems += [f"a notebook cell wrote to stderr: {t}" for t in probe["stderr"]]
    return probe, problems


def _ids_in_file(path):
    return set(ID_ATTRIBUTE.findall(path.read_text(errors="replace")))


def link_problems(html_dir, base_url, probes):
    """Internal links whose page or anchor does not exist, each with the pages linking to it."""
    html_dir = Path(html_dir)
    host = urlsplit(base_url).netloc
    broken = defaultdict(set)
    for page, probe in probes.items():
        for href in probe["links"]:
            parts = urlsplit(href)
            if parts.scheme not in ("http", "https") or parts.netloc != host:
                continue  # external links are allowed; the book must not *load* anything remote
            rel = unquote(parts.path).lstrip("/")
            if rel == "" or rel.endswith("/"):
                rel += "index.html"
            target = html_dir / rel
            if not target.is_file():
                broken[f"link to missing {rel}"].add(page)
                continue
            fragment = unquote(parts.fragment)
            if fragment and rel.endswith(".html"):
                ids = set(probes[rel]["ids"]) if rel in probes else _ids_in_file(target)
                if fragment not in ids:
                    broken[f"link to missing anchor {rel}#{fragment}"].add(page)
    return {problem: sorted(pages) for problem, pages in broken.items()}


#: Widths (CSS pixels) of the two windows a page is read in: a laptop and a phone.
WIDE, NARROW = 1400, legibility.NARROW_WIDTH


def screenshot_path(stem, width):
    """Where the screenshot of a page at ``width`` goes: ``<stem>-<width>.png``."""
    stem = Path(stem)
    return stem.with_name(f"{stem.name}-{width}.png")


def book_page_names(html_dir, pages):
    """{page: the names it goes by in the text} for the book's pages with a title."""
    names = {}
    for page in pages:
        if redirect_target(html_dir, page) is not None or page in ("genindex.html", "search.html", "py-modindex.html"):
            continue
        title = legibility.page_title((Path(html_dir) / page).read_text(errors="replace"))
        names[page] = legibility.page_names(title, page)
    return names


def check_book(browser, base_url, html_dir, screenshots=None):
    """Visit every page; returns (problems: {page: [text]}, probes: {page: probe}).

    Each page is read at :data:`WIDE` pixels, then its tables are measured at :data:`NARROW`.
    ``screenshots`` maps a page to a path stem: full-page screenshots are written to
    ``<stem>-1400.png`` and ``<stem>-400.png`` (:func:`screenshot_path`).
    """
    screenshots = screenshots or {}
    problems, probes = {}, {}
    pages = book_pages(html_dir)
    names = book_page_names(html_dir, pages)
    for page in pages:
        target = redirect_target(html_dir, page)
        if target is not None:  # checked as a link; opening it would just show the target
            probes[page] = {"links": [urljoin(base_url + page, target)], "ids": []}
            continue
        page_html = (Path(html_dir) / page).read_text(errors="replace")
        browser.set_width(WIDE)
        try:
            probe, found = visit(browser, base_url, page)
            if probe is not None:
                found += legibility.verdict_table_problems(browser.evaluate(legibility.VERDICT_TABLE_PROBE), WIDE)
                if not page.startswith(math_check.DOCSTRING_PAGES):
                    found += math_check.text_problems(browser.evaluate(math_check.TEXT_PROBE))
                found += math_check.equation_problems(browser.evaluate(math_check.EQUATION_PROBE), WIDE)
                reader_page = not page.startswith(math_check.DOCSTRING_PAGES)
                if reader_page:  # the API reference is a developer's: its tables are Sphinx's own
                    found += legibility.wide_table_problems(browser.evaluate(legibility.WIDE_TABLE_PROBE), WIDE)
                    found += legibility.folded_table_problems(browser.evaluate(legibility.FOLDED_TABLE_PROBE))
                    found += legibility.contrast_problems(browser.evaluate(legibility.CONTRAST_PROBE))
                if page in screenshots:
                    Path(screenshots[page]).parent.mkdir(parents=True, exist_ok=True)
                    browser.screenshot(screenshot_path(screenshots[page], WIDE))
                browser.set_width(NARROW)
                found += legibility.table_problems(browser.evaluate(legibility.TABLE_PROBE), NARROW)
                if reader_page:
                    found += legibility.wide_table_problems(
                        browser.evaluate(legibility.WIDE_TABLE_PROBE), NARROW, full=False
                    )
                found += legibility.verdict_table_problems(browser.evaluate(legibility.VERDICT_TABLE_PROBE), NARROW)
                found += math_check.equation_problems(browser.evaluate(math_check.EQUATION_PROBE), NARROW)
                if page in screenshots:
                    browser.screenshot(screenshot_path(screenshots[page], NARROW))
        except ProtocolError as exc:  # e.g. the page navigated away while being inspected
            probe, found = None, [f"could not be inspected: {exc}"]
        words = outside_words.page_problems(
            page_html, operations=any(name in page for name in outside_words.OPERATIONS_PAGES)
        )
        if page.startswith(math_check.DOCSTRING_PAGES):
            # the API reference documents, in docstrings, the commands and internals a developer uses:
            # only the words that point outside the book count there
            words = [w for w in words if not w.startswith("uses our workflow's words")]
        found += words
        if probe is not None:
            probes[page] = probe
            widths = {image["src"]: image["naturalWidth"] for image in probe.get("images", [])}
            found += legibility.image_problems(page_html, widths)
        if not page.startswith(math_check.DOCSTRING_PAGES):  # module docstrings quote chapter titles
            found += legibility.unlinked_page_names(page_html, names, own=page)
        if found:
            problems[page] = found
    for problem, pages in link_problems(html_dir, base_url, probes).items():
        shown = ", ".join(pages[:3]) + (f" and {len(pages) - 3} more" if len(pages) > 3 else "")
        problems.setdefault(pages[0], []).append(f"{problem} (from {shown})")
    return problems, probes


def format_problems(problems):
    lines = []
    for page in sorted(problems):
        lines.append(f"{page}:")
        lines += [f"    {text}" for text in dict.fromkeys(problems[page])]
    return "\n".join(lines)


def main(argv=None):
    """``python tests/browser/book_check.py _build/html``: check an existing build by hand."""
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("html_dir", type=Path)
    parser.add_argument("--screenshots", type=Path, help="folder for one PNG per page")
    args = parser.parse_args(argv)
    shots = {}
    if args.screenshots:
        shots = {p: args.screenshots / p.replace("/", "__")[:-5] for p in book_pages(args.html_dir)}
    with (
        tempfile.TemporaryDirectory() as profile,
        Chromium(find_chromium(), profile) as browser,
        serve(args.html_dir) as base_url,
    ):
        problems, probes = check_book(browser, base_url, args.html_dir, screenshots=shots)
    print(f"{len(probes)} pages checked")
    if problems:
        print(format_problems(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
