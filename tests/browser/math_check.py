"""Math a reader can read: typeset formulas only, and display equations that fit their column.

Two probes run in the page (after MathJax has typeset it) and Python judges what they return:

* :data:`TEXT_PROBE` returns the page's visible text nodes outside code, ``<pre>`` and typeset
  formulas — the article, the sidebars and the page title alike (a page title with TeX in it
  shows raw in the navigation and in every link to the page). :func:`text_problems` reports raw
  LaTeX left there (``\\alpha``, ``^{``, ``_{``, ``$...$``) and formulas typed as plain text with
  ``_`` and ``^`` (``r^(k) = log(d/(Kδ))``, ``q_k``, ``ε_s``).
* :data:`EQUATION_PROBE` measures every display equation at the window's width:
  :func:`equation_problems` reports one that runs past the text column, or is cut, without a
  scroll box to reach the rest. The browser test runs it at 1400 and at 400 px.
"""

from __future__ import annotations

import re

#: Raw LaTeX: a command (``\alpha``, ``\frac``), a braced sub- or superscript, or ``$...$`` left over.
RAW_TEX = re.compile(r"\\[A-Za-z]{2,}\b|[\^_]\{|(?<![\w$])\$[^$\s][^$\n]{0,80}?[\\^_][^$\n]{0,80}?\$")

#: Plain-text math: a one-letter symbol with ``_x``, ``_(``, ``^(``, ``^2`` or ``^-1``
#: (``q_k``, ``ε_s``, ``r^(k)``, ``M^-2``). A snake_case name (``n_jobs``) is not matched.
PSEUDO_MATH = re.compile(r"(?<![\w\\/.])[A-Za-zα-ωΑ-Ω](?:_(?:\(|[A-Za-z0-9](?![\w(]))|\^(?:\(|[-−]?\d))")

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
      if (scrolls(a) && a.getBoundingClientRect().right <= column.right + 1) {
        reachable = true;
        break;
      }
    }
    const content = Math.max(el.scrollWidth, ...Array.from(el.children).map(c => c.getBoundingClientRect().width));
    const past = box.right > column.right + 1;
    const cut = content > el.clientWidth + 1;
    if ((past || cut) && !reachable) {
      found.push({text: (el.textContent || '').trim().slice(0, 80), width: Math.round(Math.max(box.width, content)),
                  column: Math.round(column.width)});
    }
  }
  return found;
})()
"""


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
    """Display equations wider than their column at a ``width`` px window (from :data:`EQUATION_PROBE`)."""
    return [
        f"display equation cut at {width} px ({e['width']} px wide in a {e['column']} px column): {e['text']!r}"
        for e in found
    ]
