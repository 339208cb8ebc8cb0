"""Checks that a page reads on any screen and leads the reader on: tables, images, links.

Several rules, each a function of a page's HTML (and, for layout, of what the browser measured),
so each is unit-tested on small HTML strings in the fast suite (``tests/test_legibility.py``)
and applied to every built page by the browser test (``book_check.py``):

* **Tables** (:func:`table_problems`): at a 400 px wide window, a table wider than the room it
  has (it runs past the article, or past a box that clips it) must sit in a box that scrolls
  sideways (CSS ``overflow-x: auto`` or ``scroll``) inside the article; otherwise its right-hand
  columns — often the verdict and the paper's numbers — are cut off. The browser measures
  (:data:`TABLE_PROBE`); this module decides.
* **Tables that read** (:func:`wide_table_problems`, :func:`folded_table_problems`): at 1400 px
  every table shows its full width, and at 400 px at least its first two columns (a box that
  scrolls sideways does not count: the reader does not see what is off screen); a table folded
  behind "click to show" may not be one the prose next to it points to.
* **Contrast** (:func:`contrast_problems`): captions and the notes under tables at 4.5:1 or more
  against their background (WCAG AA).
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


#: Run in the page at a given width; one entry per table of the article (folded ones opened for the
#: measure, then folded again): its width, how much of it is visible without scrolling sideways, how
#: far its first two columns reach, and whether a reader has to click to see it.
WIDE_TABLE_PROBE = r"""
(() => {
  const article = document.querySelector('article') || document.querySelector('main') || document.body;
  const folds = Array.from(article.querySelectorAll('details')).filter(d => !d.open && d.querySelector('table'));
  folds.forEach(d => { d.open = true; });
  const limit = article.getBoundingClientRect();
  const out = [];
  for (const table of article.querySelectorAll('table')) {
    const box = table.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (table.closest('dl.py, .sig, .indextable, .modindextable, .toctree-wrapper')) continue;
    let right = Math.min(limit.right, window.innerWidth);
    for (let el = table.parentElement; el && el !== article; el = el.parentElement) {
      if (getComputedStyle(el).overflowX !== 'visible') right = Math.min(right, el.getBoundingClientRect().right);
    }
    const visible = Math.max(0, Math.min(box.right, right) - Math.max(box.left, limit.left));
    // the right edge of the second column (the first when there is one), read from the widest row
    let twoRight = box.left;
    for (const row of table.rows) {
      let col = 0;
      for (const cell of row.cells) {
        if (col >= 2) break;
        twoRight = Math.max(twoRight, cell.getBoundingClientRect().right);
        col += cell.colSpan || 1;
      }
    }
    const head = table.querySelector('caption, th, td');
    const section = table.closest('section');
    const title = section && section.querySelector('h1, h2, h3, h4');
    out.push({label: ((head ? head.textContent : '') || '').trim().slice(0, 40),
              section: title ? title.textContent.replace(/[#¶]\s*$/, '').trim().slice(0, 60) : '',
              width: Math.round(box.width), visible: Math.round(visible),
              firstTwo: Math.round(twoRight - box.left), firstTwoVisible: Math.round(Math.min(twoRight, right) - box.left),
              folded: folds.some(d => d.contains(table))});
  }
  folds.forEach(d => { d.open = false; });
  return out;
})()
"""


def wide_table_problems(tables, width, full=True):
    """Tables a reader cannot read without scrolling sideways at ``width``.

    ``tables`` are dicts from :data:`WIDE_TABLE_PROBE`. With ``full`` (the 1400 px window) a table
    must show its whole width; otherwise (a phone) at least its first two columns, the row's name and
    its first value. A table that scrolls inside its box counts as cut: the reader does not see it.
    """
    problems = []
    for table in tables:
        where = f" in section “{table['section']}”" if table.get("section") else ""
        name = f" (starts “{table.get('label', '')}”)"
        if full and table["visible"] + 1 < table["width"]:
            share = table["visible"] / table["width"] if table["width"] else 0.0
            problems.append(
                f"table{where}{name} shows {share:.0%} of its width at {width} px "
                f"({table['visible']} of {table['width']} px): split, transpose or shorten it"
            )
        elif not full and table["firstTwoVisible"] + 1 < table["firstTwo"]:
            problems.append(
                f"table{where}{name} shows less than its first two columns at {width} px "
                f"({max(table['firstTwoVisible'], 0)} of {table['firstTwo']} px)"
            )
    return problems


#: Run in the page: one entry per folded table (a table inside a closed ``<details>``), with the prose
#: next to it: the text just before the fold and just after it (paragraphs of the page, or other
#: outputs of the same cell: a caption the code printed).
FOLDED_TABLE_PROBE = r"""
(() => {
  const article = document.querySelector('article') || document.querySelector('main') || document.body;
  const skip = '.cell_input, .highlight, pre, script, style, mjx-container';
  const textOf = el => {
    if (!el || el.matches(skip)) return '';
    const clone = el.cloneNode(true);
    clone.querySelectorAll(skip + ', table, details').forEach(x => x.remove());
    return clone.textContent.replace(/\s+/g, ' ').trim();
  };
  // the nearest text before (step = 'previousElementSibling') or after a node, walking up the tree
  const near = (node, step) => {
    for (let el = node; el && el !== article; el = el.parentElement) {
      for (let sib = el[step]; sib; sib = sib[step]) {
        if (sib.querySelector('table')) return '';  // another table lies between: the prose there is its own
        const text = textOf(sib);
        if (text) return step === 'previousElementSibling' ? text.slice(-300) : text.slice(0, 300);
      }
    }
    return '';
  };
  const out = [];
  for (const fold of article.querySelectorAll('details')) {
    const table = fold.querySelector('table');
    if (!table || fold.open) continue;
    const summary = fold.querySelector('summary');
    const section = fold.closest('section');
    const title = section && section.querySelector('h1, h2, h3, h4');
    out.push({summary: summary ? summary.textContent.trim().slice(0, 80) : '',
              section: title ? title.textContent.replace(/[#¶]\s*$/, '').trim().slice(0, 60) : '',
              before: near(fold, 'previousElementSibling'), after: near(fold, 'nextElementSibling')});
  }
  return out;
})()
"""

#: Prose that points the reader to a table: "the table below", "read the exact column", "this row".
POINTS_TO_TABLE = re.compile(
    r"\b(?:tables?|columns?|rows?)\b(?!\s+(?:of|in) (?:the|this) (?:figure|panel))|\bbelow:?\s*$|:\s*$",
    re.I,
)


def folded_table_problems(folds):
    """Folded tables the prose next to them points to (``folds`` from :data:`FOLDED_TABLE_PROBE`).

    A reader told to "read the exact column" must not first find a "click to show" line: a table the
    prose just before it (ending on a colon or naming a table, column or row) or just after it (naming
    a table, column or row) refers to is shown open. A folded table with no prose pointing to it (a
    reference list the page does not discuss) may stay folded.
    """
    problems = []
    for fold in folds:
        before, after = fold.get("before", ""), fold.get("after", "")
        said = [t for t in (before[-160:], after[:160]) if POINTS_TO_TABLE.search(t)]
        if said:
            where = f" in section “{fold['section']}”" if fold.get("section") else ""
            problems.append(
                f"folded table{where} (“{fold.get('summary', '')}”) that the prose refers to: …{said[0][-100:]}…"
            )
    return problems


#: Run in the page: the text colour and the colour behind it of each caption and note (figure
#: captions, the notes under tables, footnotes), with the first words to name it.
CONTRAST_PROBE = r"""
(() => {
  const article = document.querySelector('article') || document.querySelector('main') || document.body;
  const rgba = s => (s.match(/[\d.]+/g) || []).map(Number);
  const behind = el => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const out = [];
  for (const el of article.querySelectorAll('.dpstack-table-note, figcaption, .caption-text, aside.footnote, .footnote')) {
    const text = el.textContent.trim();
    if (!text || el.getBoundingClientRect().height === 0) continue;
    out.push({text: text.slice(0, 50), color: rgba(getComputedStyle(el).color).slice(0, 3), background: behind(el)});
  }
  return out;
})()
"""

#: WCAG AA: the least contrast between normal-size text and its background.
MIN_CONTRAST = 4.5


def contrast_ratio(a, b):
    """WCAG contrast ratio of two sRGB colours given as 0–255 triples."""

    def luminance(rgb):
        linear = [c / 255 / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def contrast_problems(items, minimum=MIN_CONTRAST):
    """Captions and notes (from :data:`CONTRAST_PROBE`) fainter than ``minimum`` against their background."""
    problems = []
    for item in items:
        ratio = contrast_ratio(item["color"], item["background"])
        if ratio < minimum:
            problems.append(f"caption or note at {ratio:.1f}:1 contrast (under {minimum}:1): “{item['text']}”")
    return problems
