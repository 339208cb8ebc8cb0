"""Math a reader can read: typeset formulas only, and display equations that fit their column.

Two probes run in the page (after MathJax has typeset it) and Python judges what they return:

* :data:`TEXT_PROBE` returns the page's visible text nodes outside code, ``<pre>`` and typeset
  formulas — the article, the sidebars and the page title alike (a page title with TeX in it
  shows raw in the navigation and in every link to the page). :func:`text_problems` reports raw
  LaTeX left there (``\\alpha``, ``^{``, ``_{``, ``$...$``) and formulas typed as plain text with
  ``_`` and ``^`` (``r^(k) = log(d/(Kδ))``, ``q_k``, ``ε_s``).
* :data:`EQUATION_PROBE` measures every display equation at the window's width:
  :func:`equation_problems` reports, at 1400 px, one wider than the text column (it looks cut:
  overlay scroll bars hide the rest) and, at 400 px, one cut off without a scroll box to reach
  the rest.
"""

from __future__ import annotations

import re

#: Raw LaTeX: a command (``\alpha``, ``\frac``), a braced sub- or superscript, or ``$...$`` left over.
RAW_TEX = re.compile(r"\\[A-Za-z]{2,}\b|[\^_]\{|(?<![\w$])\$[^$\s][^$\n]{0,80}?[\\^_][^$\n]{0,80}?\$")

#: Plain-text math: a one-letter symbol with ``_x``, ``_(``, ``^(``, ``^2`` or ``^-1``
#: (``q_k``, ``ε_s``, ``r^(k)``, ``M^-2``). A snake_case name (``n_jobs``) is not matched.
PSEUDO_MATH = re.compile(r"(?<![\w\\/.])[A-Za-zα-ωΑ-Ω](?:_(?:\(|[A-Za-z0-9](?![\w(]))|\^(?:\(|[-−]?\d))")

#: The API reference renders the package's docstrings, which are also read as plain text
#: (``help()``): their formulas are plain text by convention and are not checked.
DOCSTRING_PAGES = ("book/api", "api")

TEXT_PROBE = r"""
(() => {
  const skip = 'pre, code, script, style, textarea, kbd, samp, mjx-container, .highlight, .MathJax, math, svg';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {acceptNode: node =>
    !node.parentElement || node.parentElement.closest(skip) || !node.textContent.trim()
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  const texts = [document.title];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) texts.push(node.textContent);
  return texts;
})()
"""

EQUATION_PROBE = r"""
(() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const column = article.getBoundingClientRect();
  const scrolls = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const found = [];
  const equations = Array.from(document.querySelectorAll('mjx-container[display="true"], div.math'))
    .filter(el => !(el.matches('div.math') && el.querySelector('mjx-container')));
  for (const el of equations) {
    const box = el.getBoundingClientRect();
    if (box.width === 0) continue;
    // A scroll box (the equation itself or an ancestor inside the column) makes all of it reachable.
    let reachable = false;
    for (let a = el; a && a !== article.parentElement; a = a.parentElement) {
      if (scrolls(a) && a.getBoundingClientRect().right <= column.right + 1) { reachable = true; break; }
    }
    const content = Math.max(box.width, el.scrollWidth,
                             ...Array.from(el.children).map(c => c.getBoundingClientRect().width));
    found.push({text: (el.textContent || '').trim().slice(0, 80), width: Math.round(content),
                column: Math.round(column.width), reachable: reachable});
  }
  return found;
})()
"""

#: At or above this window width a display equation must fit its column outright: a reader on
#: a laptop does not expect to scroll a formula (overlay scroll bars hide that there is more).
#: Below it (a phone) a formula may scroll sideways inside its own box.
FIT_WIDTH = 1000


def text_problems(texts):
    """Raw TeX and plain-text math in the page's visible text (the output of :data:`TEXT_PROBE`)."""
    problems = []
    for text in texts:
        for name, pattern in (("raw TeX in the text", RAW_TEX), ("math typed as plain text", PSEUDO_MATH)):
            match = pattern.search(text)
            if match:
                start = max(0, match.start() - 30)
                problems.append(f"{name}: {' '.join(text[start : match.end() + 40].split())!r}")
    return problems


def equation_problems(found, width):
    """Display equations wider than their column at a ``width`` px window (from :data:`EQUATION_PROBE`).

    At :data:`FIT_WIDTH` px and more an equation must fit its column; on a narrower window it may
    scroll inside a box, but must not be cut off where no scroll box reaches it.
    """
    problems = []
    for e in found:
        wider = e["width"] > e["column"] + 1
        if wider and (width >= FIT_WIDTH or not e.get("reachable", False)):
            problems.append(
                f"display equation cut at {width} px ({e['width']} px wide in a {e['column']} px column): {e['text']!r}"
            )
    return problems
