"""Checks that a page reads on any screen and leads the reader on: tables, images, links.

Three rules, each a function of a page's HTML (and, for layout, of what the browser measured),
so each is unit-tested on small HTML strings in the fast suite (``tests/test_legibility.py``)
and applied to every built page by the browser test (``book_check.py``):

* **Tables** (:func:`table_problems`): at a 400 px wide window, a table wider than the room it
  has (it runs past the article, or past a box that clips it) must sit in a box that scrolls
  sideways (CSS ``overflow-x: auto`` or ``scroll``) inside the article; otherwise its right-hand
  columns — often the verdict and the paper's numbers — are cut off. The browser measures
  (:data:`TABLE_PROBE`); this module decides.
* **Images** (:func:`image_problems`): a figure in the article is vector (SVG) or a raster at
  least :data:`MIN_RASTER_WIDTH` pixels wide, so it stays sharp on a high-density phone screen
  and when zoomed.
* **Page names** (:func:`unlinked_page_names`): where a page of the book is named in the text,
  the name is a link to it. A page's names are its title (two words or more, as written, case
  and all) and its file name when that cannot be an ordinary word: a name with an underscore
  (``pst_fig1_epsilon``, ``mpl_har``) or written with its extension (``audit.ipynb``). Searched:
  the article's prose. Not searched: links, headings (h1–h6), the page's own names, code blocks
  and the inputs and outputs of notebook cells, inline code that holds more than a bare file
  name (``scripts/run_notebooks.py notebooks/mpl_har.ipynb`` is a command, not a reference),
  math, and the API reference's object descriptions and module sections (docstrings, also
  read in a terminal where no link can be written). As on the web, the first link is enough:
  a page the article links to anywhere may be named elsewhere in it as plain text.
"""

from __future__ import annotations

import html.parser
import re
from urllib.parse import urljoin, urlsplit

#: Narrowest raster image (in image pixels) that stays sharp at 2-3 device pixels per CSS pixel.
MIN_RASTER_WIDTH = 1600
#: The window width (CSS pixels) at which tables are measured: a phone.
NARROW_WIDTH = 400

# Run in the page at NARROW_WIDTH; one entry per visible table of the article.
TABLE_PROBE = r"""
(() => {
  const article = document.querySelector('article') || document.querySelector('main') || document.body;
  const limit = article.getBoundingClientRect();
  const scrolls = v => v === 'auto' || v === 'scroll';
  const out = [];
  for (const table of article.querySelectorAll('table')) {
    const box = table.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    let room = limit.right, scroller = false;
    for (let el = table.parentElement; el && el !== article; el = el.parentElement) {
      const style = getComputedStyle(el);
      if (scrolls(style.overflowX)) { scroller = el.getBoundingClientRect().right <= limit.right + 1; break; }
      if (style.overflowX === 'hidden' || style.overflowX === 'clip') room = Math.min(room, el.getBoundingClientRect().right);
    }
    const head = table.querySelector('caption, th, td');
    const section = table.closest('section');
    const title = section && section.querySelector('h1, h2, h3, h4');
    out.push({label: ((head ? head.textContent : '') || '').trim().slice(0, 40),
              section: title ? title.textContent.replace(/[#¶]\s*$/, '').trim().slice(0, 60) : '',
              width: Math.round(box.width), room: Math.round(room - box.left), scrolls: scroller});
  }
  return out;
})()
"""


def table_problems(tables, width=NARROW_WIDTH):
    """Tables cut off at ``width``: each measured table wider than its room that does not scroll.

    ``tables`` are dicts from :data:`TABLE_PROBE`: ``width`` (the table's), ``room`` (CSS
    pixels from its left edge to the nearest edge that clips it or the article's right edge),
    ``scrolls`` (a box between it and the article scrolls sideways) and ``label``/``section``
    to name it.
    """
    problems = []
    for table in tables:
        if table["width"] > table["room"] + 1 and not table["scrolls"]:
            where = f" in section “{table['section']}”" if table.get("section") else ""
            problems.append(
                f"table cut off at {width} px{where} (starts “{table.get('label', '')}”): "
                f"{table['width']} px wide, {max(table['room'], 0)} px of room, no sideways scroll"
            )
    return problems


#: Run in the page at a given width; one entry per verdict table (``table.dpstack-verdicts``): how much
#: of the table's width is visible without scrolling sideways.
VERDICT_TABLE_PROBE = r"""
(() => {
  const article = document.querySelector('article') || document.querySelector('main') || document.body;
  const limit = article.getBoundingClientRect();
  const out = [];
  for (const table of article.querySelectorAll('table.dpstack-verdicts')) {
    const box = table.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    let right = Math.min(limit.right, window.innerWidth);
    for (let el = table.parentElement; el && el !== article; el = el.parentElement) {
      const style = getComputedStyle(el);
      if (style.overflowX !== 'visible') right = Math.min(right, el.getBoundingClientRect().right);
    }
    const visible = Math.max(0, Math.min(box.right, right) - Math.max(box.left, limit.left));
    const section = table.closest('section');
    const title = section && section.querySelector('h1, h2, h3, h4');
    out.push({section: title ? title.textContent.replace(/[#¶]\s*$/, '').trim().slice(0, 60) : '',
              width: Math.round(box.width), visible: Math.round(visible)});
  }
  return out;
})()
"""


def verdict_table_problems(tables, width):
    """Verdict tables that show less than their full width at ``width`` (a scrolling one included).

    ``tables`` are dicts from :data:`VERDICT_TABLE_PROBE`: ``width`` (the table's) and ``visible``
    (the part of it inside the article and every clipping or scrolling box around it).
    """
    problems = []
    for table in tables:
        if table["visible"] + 1 < table["width"]:
            where = f" in section “{table['section']}”" if table.get("section") else ""
            share = table["visible"] / table["width"] if table["width"] else 0.0
            problems.append(
                f"verdict table{where} shows {share:.0%} of its width at {width} px "
                f"({table['visible']} of {table['width']} px): it must fit the text column"
            )
    return problems


class _Page(html.parser.HTMLParser):
    """Walks the article of a page: images, its first heading, and prose text outside links."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
    HIDDEN = {"script", "style", "template", "noscript", "math", "svg", "mjx-container", "title"}
    NOT_PROSE = {"a", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "nav"}
    NOT_PROSE_CLASSES = {
        "highlight",
        "cell_input",
        "cell_output",
        "math",
        "headerlink",
        "toctree-wrapper",
        "prev-next-area",
        "bd-sidebar-secondary",
        "bd-toc",
        "sig",
        "py",
    }

    def __init__(self, root="article"):
        super().__init__(convert_charrefs=True)
        self.root = root  # the element holding the article: article, else main, else body
        self.stack = []  # (tag, in_article, hidden, not_prose, code)
        self.seen_article = False
        self.images = []
        self.heading = None
        self._heading_parts = None
        self.prose = []  # text runs of the article's prose; None separates runs
        self.codes = []  # inline code texts in prose
        self.links = []  # href of every link in the article

    def _state(self):
        return self.stack[-1][1:] if self.stack else (False, False, False, False)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        article, hidden, not_prose, code = self._state()
        if tag == "img":
            self.images.append((attrs.get("src") or "", article))
            return
        if tag in self.VOID:
            return
        classes = set((attrs.get("class") or "").split())
        if tag == "a" and attrs.get("href") and article and not hidden:
            self.links.append(attrs["href"])
        if tag == self.root:
            article = self.seen_article = True
        hidden = hidden or tag in self.HIDDEN
        not_prose = (
            not_prose
            or tag in self.NOT_PROSE
            or bool(classes & self.NOT_PROSE_CLASSES)
            or (attrs.get("id") or "").startswith("module-")
        )
        code = code or tag in ("code", "kbd", "samp", "tt")
        if tag == "h1" and article and self.heading is None and self._heading_parts is None:
            self._heading_parts = []
        self.stack.append((tag, article, hidden, not_prose, code))
        if not_prose or code:
            self.prose.append(None)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        boundary = False
        for depth in range(len(self.stack) - 1, -1, -1):
            if self.stack[depth][0] == tag:
                outer = self.stack[depth - 1][1:] if depth else (False, False, False, False)
                boundary = self.stack[depth][3:] != outer[2:]  # a link, heading, code… ends here
                del self.stack[depth:]
                break
        if tag == "h1" and self._heading_parts is not None:
            text = " ".join("".join(self._heading_parts).split())
            self.heading = re.sub(r"\s*[#¶]$", "", text)
            self._heading_parts = None
        self.prose.append(None if boundary else " ")

    def handle_data(self, data):
        article, hidden, not_prose, code = self._state()
        if self._heading_parts is not None and not hidden and not any(t == "a" for t, *_ in self.stack[-1:]):
            self._heading_parts.append(data)
        if not article or hidden or not_prose:
            return
        if code:
            self.codes.append(data)
        else:
            self.prose.append(data)


def parse(page_html):
    root = "article" if re.search(r"<article\b", page_html) else "main" if re.search(r"<main\b", page_html) else "body"
    page = _Page(root)
    page.feed(page_html)
    page.close()
    return page


def page_title(page_html):
    """The title a reader sees on a page: the text of its first ``<h1>``, permalink sign removed."""
    return parse(page_html).heading


def image_problems(page_html, widths, min_width=MIN_RASTER_WIDTH):
    """Images of the article that are raster and narrower than ``min_width`` pixels.

    ``widths`` maps an image's ``src`` (as written in the HTML) to its width in image pixels
    (the browser's ``naturalWidth``); an SVG file or ``data:image/svg+xml`` is vector and passes.
    """
    problems = []
    page = parse(page_html)
    for src in dict.fromkeys(src for src, article in page.images if article):
        if "_static/" in src:  # the theme's own icons (e.g. the index's toggles), not figures
            continue
        if re.search(r"\.svgz?(?:[?#].*)?$", src, re.I) or src.lower().startswith("data:image/svg+xml"):
            continue
        width = widths.get(src)
        if width is None:
            problems.append(f"image not measured (not vector): {src[:80]}")
        elif width < min_width:
            problems.append(f"raster image {width} px wide (< {min_width} px, not SVG): {src[:80]}")
    return problems


def page_names(title, file_name):
    """The names a page is known by in the text (see the module's rules)."""
    names = []
    if title and len(title.split()) >= 2:
        names.append(title)
    stem = re.sub(r"\.(ipynb|md|html)$", "", file_name.rsplit("/", 1)[-1])
    ext = file_name.rsplit(".", 1)[-1] if "." in file_name else ""
    if "_" in stem:
        names.append(stem)
    names += [f"{stem}.{e}" for e in dict.fromkeys(["ipynb", "md", ext]) if e]
    return names


def _pattern(name):
    words = r"\s+".join(re.escape(w) for w in name.split())
    return re.compile(rf"(?<![\w/.-]){words}(?![\w-])")


def unlinked_page_names(page_html, pages, own=None):
    """Other pages of the book named in the article's prose without a link.

    ``pages`` maps a page (its path in the build, e.g. ``notebooks/mpl_har.html``) to the
    names it goes by (:func:`page_names`); ``own`` is the page being checked (its path in the
    build), whose names are not searched. As on the web, one link is enough: a page the
    article links to anywhere may be named elsewhere in it as text.
    """
    page = parse(page_html)
    base = "http://book/" + (own or "")
    linked = {urlsplit(urljoin(base, href)).path.lstrip("/") for href in page.links}
    runs, current = [], []
    for part in page.prose:
        if part is None:
            if current:
                runs.append("".join(current))
            current = []
        else:
            current.append(part)
    if current:
        runs.append("".join(current))
    text = "\n".join(" ".join(run.split()) for run in runs)
    codes = [" ".join(c.split()) for c in page.codes]
    problems = []
    for target, names in pages.items():
        if target == own or target in linked:
            continue
        for name in names:
            found = _pattern(name).search(text)
            if found:
                start, end = max(0, found.start() - 30), min(len(text), found.end() + 30)
                problems.append(f"names page {target} without a link: …{text[start:end]}…")
                break
            if any(c == name for c in codes):
                problems.append(f"names page {target} without a link: `{name}`")
                break
    return problems
