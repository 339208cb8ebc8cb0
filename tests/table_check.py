"""What a reader of a rendered table must never see: the checks behind ``tests/test_rendered_tables.py``.

:func:`table_problems` reads the HTML a notebook cell shows (or a built page) and returns one line
per problem, naming the table by its first header:

* an index column (a ``<th>`` in the table's body: pandas' row labels 0, 1, 2 …);
* ``NaN``, ``nan``, ``<NA>`` or ``None`` in a cell;
* a cell cut to "…" or "...";
* a header that is a code name (``lam_bottom``, ``n_classes``, ``delta>0``);
* a number with more than four significant digits, unless the note under the table declares the
  precision ("rounded to 4 decimals": then up to that many decimals);
* a printed Python dict (``{'own 200 samples': 0.655}``);
* a boolean printed as ``True`` / ``False``.

A long table is not folded for its length: whether a fold hides what the prose points to is the
browser test's to judge (``tests/browser/legibility.py``: :func:`folded_table_problems`).

The verdict tables' detail (the text that opens under a claim) is prose, not table cells: only
the claim's summary line is checked there.
"""

from __future__ import annotations

import html
import re

TABLE = re.compile(r"<table\b[^>]*>.*?</table>", re.S | re.I)
ROW = re.compile(r"<tr\b[^>]*>(.*?)</tr>", re.S | re.I)
CELL = re.compile(r"<(t[hd])\b[^>]*>(.*?)</t[hd]>", re.S | re.I)
DETAIL_BODY = re.compile(r"(</summary>).*?(</details>)", re.S | re.I)
TAG = re.compile(r"<[^>]+>")

CODE_HEADER = re.compile(r"\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+\b|\b[a-z]+[<>]=?\d+\b")
MISSING_WORD = re.compile(r"^(?:NaN|nan|<NA>|None|NaT)$|\bNaN\b|<NA>")
TRUNCATED = re.compile(r"(?:…|\.\.\.)\s*$")
DICT = re.compile(r"\{\s*['\"][^'\"]*['\"]\s*:")
BOOLEAN = re.compile(r"\b(?:True|False)\b")
NUMBER = re.compile(r"(?<![\w.])[-−+]?\d+\.\d+(?:[eE][-−+]?\d+)?(?![\w.])")
DECLARED = re.compile(r"rounded to (\d+) decimals?", re.I)


def _text(fragment):
    return " ".join(html.unescape(TAG.sub(" ", fragment)).split())


def significant_digits(number):
    """Significant digits of a printed number: ``0.06723`` → 4, ``2043.36`` → 6, ``1.0e3`` → 2."""
    mantissa = re.split(r"[eE]", number.replace("−", "-").lstrip("+-"))[0]
    digits = mantissa.replace(".", "").lstrip("0")
    return len(digits)


def _decimals(number):
    mantissa = re.split(r"[eE]", number)[0]
    return len(mantissa.split(".", 1)[1]) if "." in mantissa else 0


def tables_in(page_html):
    """Each table of ``page_html`` as (table HTML, folded?, the text after it up to the next table)."""
    found = []
    matches = list(TABLE.finditer(page_html))
    for i, match in enumerate(matches):
        before = page_html[: match.start()]
        folded = before.lower().count("<details") > before.lower().count("</details>")
        # the text after it up to the next table, past the other parts of a table split to fit the
        # column (no text between them): the note under the last part is the whole table's
        j = i + 1
        while j < len(matches) and not _text(page_html[matches[j - 1].end() : matches[j].start()]):
            j += 1
        after_end = matches[j].start() if j < len(matches) else len(page_html)
        found.append((match.group(), folded, _text(TABLE.sub(" ", page_html[match.end() : after_end]))[:600]))
    return found


def table_problems(page_html, where=""):
    """One line per problem in every table of ``page_html`` (see the module's docstring)."""
    problems = []
    for table, _folded, after in tables_in(page_html):
        verdicts = "dpstack-verdicts" in table
        if verdicts:
            table = DETAIL_BODY.sub(r"\1\2", table)
        rows = [CELL.findall(row) for row in ROW.findall(table)]
        head, body = [], []
        in_body = False
        for cells in rows:
            in_body = in_body or any(tag.lower() == "td" for tag, _ in cells)
            (body if in_body else head).append(cells)
        headers = [_text(text) for row in head for _, text in row]
        name = f"{where}table '{next((h for h in headers if h), '?')[:40]}'"
        declared = DECLARED.search(after)
        places = int(declared.group(1)) if declared else None

        def say(what, example, name=name):
            problems.append(f"{name}: {what}: {example!r}")

        for header in headers:
            if CODE_HEADER.search(header):
                say("code-name header", header)
        if any(tag.lower() == "th" for row in body for tag, _ in row):
            say("index column", _text(next(text for row in body for tag, text in row if tag.lower() == "th")))
        seen = set()
        for row in body:
            for _, cell_html in row:
                cell = _text(cell_html)
                checks = (
                    ("missing value", MISSING_WORD.search(cell)),
                    ("cut cell", TRUNCATED.search(cell)),
                    ("printed dict", DICT.search(cell)),
                    ("boolean", BOOLEAN.search(cell)),
                )
                for what, hit in checks:
                    if hit and what not in seen:
                        seen.add(what)
                        say(what, cell[:60])
                for number in NUMBER.findall(cell):
                    too_many = significant_digits(number) > 4
                    if places is not None:
                        too_many = _decimals(number) > places
                    if too_many and "unrounded number" not in seen:
                        seen.add("unrounded number")
                        say("unrounded number", number)
    return problems
