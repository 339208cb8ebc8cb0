"""The book's prose never states a result by hand, and its counts sentences agree with its claims tables.

**Typed results.** Every number in the book is computed from data; a number quoted in prose must
come from the computed results (a code cell that builds the sentence, e.g.
``display(Markdown(f"..."))``) or be a paper's value. :func:`prose_offenders` scans the markdown
cells of ``notebooks/*.ipynb`` and ``book/templates/*.ipynb`` and the ``book/*.md`` pages for
numbers that look like results:

* a decimal with digits after the point (``0.916``, ``0.73``, ``± 0.128``, ``14.1``);
* a number in scientific notation (``3e-4``);
* a percentage (``59.5 %``, ``90%``);
* a ratio (``1.58×``, ``50×`` — a number followed by ``×`` or ``\\times`` with no number after it,
  so ``8×8`` images are not ratios);
* a count of outcomes, ``k of n`` or ``k out of n`` ("wins in 12 of 16 branches").

Other integers are not scanned: in this book they are sizes, counts, years and section numbers, and the
results the pages compute are decimals, percentages and ratios. Fractions such as ``2/3`` are
integers over integers and are not scanned either.

A candidate is *not a result* (and is dropped) when its context says so:

* **parameter** — it directly follows ``<symbol> =`` (or ``≤ < ≥ >``), possibly after a chain such as
  ``δ_p = δ_s =``, where the symbol is a Greek letter (Unicode or LaTeX, with sub/superscripts and
  primes: ``ε``, ``λ_s``, ``\\epsilon_g``, ``\\lambda^{(k)}``; not Δ or σ, which this book computes,
  and not an estimate such as ``ε_lo`` or ``\\epsilon_{hat}``), a single Latin letter other than
  ``p``/``P`` (``K``, ``M``, ``d``, ``n``, ``q_1``), ``1/ε``, or an identifier in backticks that is
  not a fitted attribute (```AUC_MARGIN``` but not ```auc_```); all the numbers of a tuple or set right after ``<symbol> =`` or ``∈``
  (``q = (0.4, 0.3, 0.2, 0.1)``) are parameters too, and so are the arguments of a named
  distribution (``N(0, 0.3²)``). ``p = 0.03`` is a p-value and *is* a result;
* **confidence or significance level** — a percentage followed by *confidence*, *interval*, *band*,
  *CI*, *Clopper*, *level* or *power*, or preceded by *level* or *significance*;
* **reference** — a number after ``§``, *Section*, *Table*, *Figure*, *Algorithm*, *Theorem*, *Lemma*,
  *Eq.*, *Appendix*, *step* and the like (lists such as ``Sections 3.3 and 4.5`` included);
* **version** — after *version*, ``v``, *Python* or a licence name (``CC BY 4.0``), or of the
  form ``1.2.3``;
* **markup** — directive options (``:width: 100%``), URLs, link targets, code blocks, the
  content of inline code that is not a bare name, and MyST roles (``{cite}`...```).

A flagged number passes only if

(a) the sentence attributes it to a paper (names PST, PPTL, MPL, *paper*, a table, figure or
    section, or cites) and, read as a float, it equals a numeric literal of
    :mod:`dpstack.companion.paper_values` (a percentage ``x %`` as ``x`` or ``x/100``) — the
    value as the paper prints it, so ``0.90`` may be quoted as ``0.9`` but ``0.7469`` not as
    ``0.747`` (unless the other paper prints that); or
(b) it is on :data:`ALLOWED`, which gives the page, the number as printed, a pattern its sentence
    must match, and the reason. An entry that no longer matches anything fails the test, so the
    list cannot rot.

Pages in :data:`PAGES_PENDING` are being rewritten elsewhere; their offenders are printed (run
pytest with ``-s``) but do not fail the test until the set is emptied.

**Counts sentences.** :func:`counts_offenders` finds every output of the form "k of n claims
supported, c contradicted, i inconclusive" (:func:`dpstack.companion.rule.counts_sentence`)
and checks it against the last HTML table with a ``verdict`` (or ``outcome``) column shown before
it on the same page (:func:`dpstack.companion.tables.as_table`'s rendering, or the verdict table whose HTML the
sentence closes): the counts must agree.

Pure file parsing: nothing is executed.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAPER_VALUES = ROOT / "dpstack" / "companion" / "paper_values.py"

#: Pages whose prose is being rewritten elsewhere: scanned and reported, not failed. Empty it when done.
PAGES_PENDING: set = set()  # pages being rewritten elsewhere (none)

#: Numbers that are not results although they look like one: (page, number as printed, a regular
#: expression the sentence must match, reason). Page "*" means any page.
ALLOWED = [
    (
        "*",
        "0.5",
        r"AUC|below 0\.5",
        "the AUC of a classifier that guesses: the chance level, not a measurement",
    ),
    (
        "*",
        "10%",
        r"10 ?% (training )?file",
        "the name of the KDD Cup 99 subset (kddcup.data_10_percent), not a measurement",
    ),
    (
        "notebooks/mpl_theorem4.ipynb",
        "0.69",
        r"log 2 \\approx 0\.69",
        "log 2, the logistic loss of the zero classifier: a mathematical constant",
    ),
]

# --------------------------------------------------------------------------------------------------
# Reading the pages
# --------------------------------------------------------------------------------------------------


def prose_cells():
    """(page, cell index, text) for every markdown cell and ``.md`` page (whole page, index 0)."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "book" / "templates").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "markdown":
                yield path.relative_to(ROOT).as_posix(), i, cell.source
    for path in sorted((ROOT / "book").glob("*.md")):
        if path.name in GENERATED:
            continue
        yield path.relative_to(ROOT).as_posix(), 0, path.read_text(encoding="utf-8")


#: Pages of the book written by code from the results, not by hand (each checked by its own test:
#: ``findings_summary.md`` by ``test_landing_page_summary_is_generated_from_the_results``).
GENERATED = {"findings_summary.md", "findings_pst.md", "findings_pptl.md", "findings_mpl.md"}


_FENCE = re.compile(r"^(`{3,}|~{3,})([^\n]*)\n(.*?)^\1[ \t]*$", re.M | re.S)
_ROLE = re.compile(r"\{[\w:.-]+\}`[^`]*`")
_INLINE_CODE = re.compile(r"`([^`\n]*)`")
_URL = re.compile(r"https?://\S+|\]\([^)]*\)")
_OPTION = re.compile(r"^[ \t]*:[\w-]+:.*$", re.M)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)


def clean(text):
    """The prose of a cell: code, markup and link targets removed; directive bodies (captions) kept."""
    text = _HTML_COMMENT.sub(" ", text)
    text = _FENCE.sub(lambda m: m.group(3) if m.group(2).strip().startswith("{") else "\n", text)
    text = _OPTION.sub("", text)
    text = _ROLE.sub(" CITE ", text)
    text = _INLINE_CODE.sub(
        lambda m: f"`{m.group(1)}`" if re.fullmatch(r"[A-Za-z_][\w.]*", m.group(1)) else " CODE ", text
    )
    return _URL.sub(" ", text)


# --------------------------------------------------------------------------------------------------
# What a result looks like, and what is not one
# --------------------------------------------------------------------------------------------------

_NUM = r"\d+(?:[.,]\d+)*"
_CANDIDATE = re.compile(
    r"(?<![\w.{^_/])(?:"
    r"(?P<count>\d+ (?:of|out of) \d+)(?![\w.])"
    r"|(?P<sci>\d+(?:\.\d+)?e[-−+]?\d+)(?![\w.])"
    r"|(?P<pct>\d+(?:\.\d+)?)\s*(?:\\?%|percent\b)"
    r"|(?P<ratio>\d+(?:\.\d+)?)\s*(?:×|\\times)(?!\s*[\d{(\\])"
    r"|(?P<dec>\d+\.\d+)(?!\.?\d)"
    r")"
)
_GREEK = "εϵλαβηδγρτμκθνξφψω"  # not Δ, σ: in this book they are computed (the extra ridge, a spread)
_LATEX_GREEK = r"\\(?:epsilon|varepsilon|lambda|alpha|beta|eta|delta|gamma|tau|rho|mu|kappa|omega|theta|nu|xi|phi|psi)"
_ESTIMATE = r"(?![_^]\{?(?:lo|hi|low|high|hat|emp|obs)\b)"  # ε_lo, \\epsilon_{lo}: estimates, i.e. results
_SUB = _ESTIMATE + r"(?:[_^]\{?\(?[\w,]+\)?\}?|[′'])*"
_SYMBOL = (
    rf"(?:1/\s*(?:[{_GREEK}]|{_LATEX_GREEK})|(?:[{_GREEK}]|{_LATEX_GREEK}){_SUB}"
    rf"|(?<![\w\\])[A-OQ-Za-oq-z](?![A-Za-z0-9]){_SUB}|`[A-Za-z_][\w.]*(?<!_)`)"
)
_RELATION = r"\s*\$?\s*(?:=|≤|≥|<|>|\\le|\\ge|\\leq|\\geq)\s*\$?\s*"
_VALUE = rf"[-−]?{_NUM}(?:e[-−]?\d+)?"
_PARAMETER = re.compile(
    rf"{_SYMBOL}{_RELATION}(?:(?:{_SYMBOL}){_RELATION})*"
    rf"(?:{_VALUE}|[({{\[]\s*{_VALUE}(?:\s*,\s*{_VALUE})*\s*[)}}\]]|\\?\{{\s*{_VALUE}(?:\s*,\s*{_VALUE})*\s*\\?\}})"
    rf"|(?:∈|\\in)\s*\\?[{{(\[]\s*{_VALUE}(?:\s*,\s*{_VALUE})*\s*\\?[}})\]]"
    rf"|\b(?:N|Bernoulli|Uniform|U|Gamma|Laplace)\(\s*{_VALUE}\s*(?:,\s*{_VALUE}²?\s*)*\)"
)
_REFERENCE = re.compile(
    r"(?:§|\b(?:Sections?|Sec\.|Tables?|Figures?|Figs?\.|Algorithms?|Theorems?|Lemmas?|Corollar(?:y|ies)"
    r"|Propositions?|Definitions?|Eqs?\.|Equations?|Appendix|Chapters?|Remarks?|Assumptions?|Examples?"
    r"|[Ss]teps?|erratum|item))\s*\(?" + _NUM + r"(?:\s*(?:,|and|or|/|–|-)\s*\(?" + _NUM + r")*"
)
_VERSION = re.compile(r"(?:\b(?:version|Python|CC[ -]BY(?:-[A-Z]+)*|release)\s+|\bv)" + _NUM + r"|\b\d+\.\d+\.\d+")
_LEVEL_AFTER = re.compile(
    r"^\s*(?:\\?%|percent)?\s*(?:[\w-]+\s+){0,2}?(?:confidence|interval|t-interval|band|CI|Clopper|level|power)"
)
_LEVEL_BEFORE = re.compile(r"(?:level|significance|confidence)\s*(?:of\s*)?$")
_ATTRIBUTION = re.compile(r"\b(?:PST|PPTL|MPL|[Pp]apers?|Table|Figure|Fig\.|reports?|says|prints?|printed|CITE)\b|§")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z*(\[$])|\n\s*\n|\n\s*(?:[-*]|\d+\.)\s+|\n#+\s")


def _spans(pattern, text):
    return [m.span() for m in pattern.finditer(text)]


def _inside(pos, spans):
    return any(a <= pos < b for a, b in spans)


def sentence_at(text, pos):
    """The sentence of ``text`` around ``pos`` (for context checks and for the report)."""
    start, end = 0, len(text)
    for m in _SENTENCE_END.finditer(text):
        if m.end() <= pos:
            start = m.end()
        elif m.start() > pos:
            end = m.start()
            break
    return " ".join(text[start:end].split())


def paper_numbers():
    """Every numeric literal of ``paper_values.py`` (the papers' printed values and settings), as floats."""
    tree = ast.parse(PAPER_VALUES.read_text(encoding="utf-8"))
    return {
        float(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    }


def is_paper_value(token, kind, paper):
    """Whether ``token`` read as a float is one of ``paper`` (a percentage also divided by 100).

    Exact equality: the prose quotes a paper's value as the paper prints it (``0.90`` may be written
    ``0.9``). Rounding the paper's values to the prose's precision instead would let almost any
    two-decimal AUC through, since some paper value rounds to it.
    """
    if kind == "count":
        return all(float(v) in paper for v in re.findall(r"\d+", token))
    value = float(token)
    return value in paper or (kind == "pct" and round(value / 100, 12) in {round(p, 12) for p in paper})


@dataclass
class Offender:
    page: str
    cell: int
    number: str
    sentence: str

    def __str__(self):
        where = f"{self.page} cell {self.cell}" if self.page.endswith(".ipynb") else self.page
        return f"{where}: {self.number!r} in: {self.sentence}"


def candidates(text):
    """(number as printed, kind, position) of every result-like number of cleaned ``text``."""
    skip = _spans(_PARAMETER, text) + _spans(_REFERENCE, text) + _spans(_VERSION, text)
    for m in _CANDIDATE.finditer(text):
        kind = m.lastgroup
        token = m.group(kind)
        pos = m.start(kind)
        if _inside(pos, skip):
            continue
        if kind == "pct" and (_LEVEL_AFTER.match(text[m.end(kind) :]) or _LEVEL_BEFORE.search(text[:pos])):
            continue
        printed = token + ("%" if kind == "pct" else "×" if kind == "ratio" else "")
        yield printed, token, kind, pos


def prose_offenders(cells=None, allowed=None, used=None):
    """Every result-like number of the prose that is neither a paper's value nor allowed."""
    paper = paper_numbers()
    allowed = ALLOWED if allowed is None else allowed
    out = []
    for page, index, raw in prose_cells() if cells is None else cells:
        text = clean(raw)
        for printed, token, kind, pos in candidates(text):
            sentence = sentence_at(text, pos)
            if _ATTRIBUTION.search(sentence) and is_paper_value(token, kind, paper):
                continue
            hit = [
                i
                for i, (p, number, pattern, _) in enumerate(allowed)
                if p in ("*", page) and number == printed and re.search(pattern, sentence)
            ]
            if hit:
                if used is not None:
                    used.update(hit)
                continue
            out.append(Offender(page, index, printed, sentence))
    return out


# --------------------------------------------------------------------------------------------------
# Counts sentences against claims tables
# --------------------------------------------------------------------------------------------------

_COUNTS = re.compile(r"(\d+) of (\d+) [\w ]+? supported, (\d+) contradicted, (\d+) inconclusive")
#: a claim table's count line per kind of data (:func:`dpstack.companion.show.verdict_table` on a mixed table)
_PER_KIND = "counted per kind of data"
_KIND_COUNTS = re.compile(
    r"(\d+) of \d+ [\w ]+? supported, (\d+) contradicted, (?:\d+ reversed within resolution, )?(\d+) inconclusive"
)
#: "PST: k of n claims …" on the reproducing page: a paper's sum over its pages, not one page's table
_PAPER_TOTAL = re.compile(r"(?:^|\s|\*)(?:PST|PPTL|MPL)(?: \([^)]*\))?(?:\*\*,? on the paper's data)?: $")


class _Tables(HTMLParser):
    """The tables of an HTML fragment: header texts and body rows of cell texts."""

    def __init__(self):
        super().__init__()
        self.tables, self._row, self._cell, self._in_head = [], None, None, False

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"header": [], "rows": []})
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "thead":
            self._in_head = False
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self.tables:
            (self.tables[-1]["header"] if self._in_head else self.tables[-1]["rows"]).append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def html_tables(html):
    parser = _Tables()
    parser.feed(html)
    return parser.tables


def verdict_column(table):
    """The outcomes of a claims table (``verdict`` or ``outcome`` column), or None."""
    for header in table["header"]:
        for name in ("verdict", "outcome"):
            if name in header:
                j = header.index(name)
                return [row[j] for row in table["rows"] if len(row) == len(header)]
    return None


def output_texts(output):
    """(kind, text) parts of one notebook output: its HTML, and its markdown or plain text."""
    if "text" in output:  # a stream
        yield "text", output["text"]
    data = output.get("data", {})
    if "text/html" in data:
        yield "html", data["text/html"]
    if "text/markdown" in data:
        yield "text", data["text/markdown"]
    elif "text/plain" in data and "text/html" not in data:
        yield "text", data["text/plain"]


def counts_offenders(notebooks=None):
    """(offenders, number of sentences checked): counts sentences against the claims table before them."""
    paths = sorted((ROOT / "notebooks").glob("*.ipynb")) if notebooks is None else notebooks
    out, checked = [], 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        last = None
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            for output in cell.get("outputs", []):
                for kind, text in output_texts(output):
                    if kind == "html":
                        for table in html_tables(text):
                            outcomes = verdict_column(table)
                            if outcomes is not None:
                                last = outcomes
                        if "</table>" not in text:
                            continue
                        text = re.sub(r"<[^>]+>", "", text.rsplit("</table>", 1)[1])  # a sentence under the table
                    if _PER_KIND in text:  # one sentence per kind of data under one table: they add up to it
                        checked += 1
                        parts = [tuple(map(int, m.groups())) for m in _KIND_COUNTS.finditer(text)]
                        sums = tuple(sum(p[j] for p in parts) for j in range(3))
                        table = last and (
                            last.count("supported"),
                            last.count("contradicted"),
                            last.count("inconclusive"),
                        )
                        if not parts or sums != table:
                            out.append(f"{Path(path).name} cell {i}: per-kind counts {sums} but the table has {table}")
                        continue
                    for m in _COUNTS.finditer(text):
                        if _PAPER_TOTAL.search(text[: m.start()]):
                            continue  # a paper's total over its pages (test_pages checks those sums)
                        checked += 1
                        k, n, c, inc = map(int, m.groups())
                        page = Path(path).name
                        if last is None:
                            out.append(f"{page} cell {i}: {m.group()!r} with no claims table before it")
                            continue
                        table = (
                            last.count("supported"),
                            sum(last.count(o) for o in ("supported", "contradicted", "inconclusive")),  # not "not run"
                            last.count("contradicted"),
                            last.count("inconclusive"),
                        )
                        if (k, n, c, inc) != table or k + c + inc != n:
                            out.append(
                                f"{page} cell {i}: {m.group()!r} but the claims table before it has "
                                f"{table[0]} supported, {table[2]} contradicted, {table[3]} inconclusive "
                                f"of {table[1]}"
                            )
    return out, checked


# --------------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------------


def test_prose_states_no_typed_result():
    used = set()
    offenders = prose_offenders(used=used)
    pending = [o for o in offenders if o.page in PAGES_PENDING]
    if pending:
        print(f"\n{len(pending)} typed numbers on pages pending a rewrite (PAGES_PENDING):")
        print("\n".join(f"  {o}" for o in pending))
    failing = [o for o in offenders if o.page not in PAGES_PENDING]
    assert not failing, "numbers typed into prose (build the sentence from results, or allow-list with a reason):\n" + (
        "\n".join(f"  {o}" for o in failing)
    )
    unused = [ALLOWED[i][:2] for i in range(len(ALLOWED)) if i not in used]
    assert not unused, f"allow-list entries that match nothing any more (remove them): {unused}"


def test_pending_pages_exist():
    missing = sorted(p for p in PAGES_PENDING if not (ROOT / p).is_file())
    assert not missing, f"PAGES_PENDING names pages that do not exist: {missing}"


@pytest.mark.parametrize(
    "sentence, flagged",
    [
        ("Our PST-F(W) reaches 0.916 at ε = 1.", ["0.916"]),
        ("The gap is 0.128 ± 0.041 over repeats.", ["0.128", "0.041"]),
        ("The mean AUC is 0.73 (p = 0.03).", ["0.73", "0.03"]),
        ("It wins in 59.5 % of the repeats and is 1.58× faster, 50× at best.", ["59.5%", "1.58×", "50×"]),
        ("The estimate was 3e-4 lower.", ["3e-4"]),
        ("PST-H(W) wins in 12 of 16 branches.", ["12 of 16"]),
        ("The lower bound is ε_lo = 3.42, $\\epsilon_{lo}=3.4$, and Δ = 0.0046.", ["3.42", "3.4", "0.0046"]),
        ("The fitted `auc_` = 0.81 and $\\Delta=0.02$.", ["0.81", "0.02"]),
        ("With ε = 0.25, λ = 1e-4, $\\lambda_k=0.01$, K = 5 and δ_p = δ_s = 0.05.", []),
        ("Blocks with q = (0.4, 0.3, 0.2, 0.1) and noise N(0, 0.3²); 1/ε = 0.1 and `AUC_MARGIN` = 0.01.", []),
        ("Section 6.1, Sections 3.3 and 4.5, §4.2, Table 2.1, jupyter v1.0.2, CC BY 4.0.", []),
        ("Bands are 95 % confidence intervals; the test is at level 5 %; 8×8 digits.", []),
        ("PST Table 2's caption gives 0.668 ± 0.026.", []),  # a paper's value, attributed
        ("We measured 0.668 here.", ["0.668"]),  # the same digits, not attributed to a paper: a result
    ],
)
def test_result_pattern(sentence, flagged):
    found = [o.number for o in prose_offenders(cells=[("x.ipynb", 0, sentence)], allowed=[])]
    assert found == flagged


def test_counts_sentences_match_claims_tables():
    offenders, checked = counts_offenders()
    assert checked > 0, "no counts sentence found in any output: has counts_sentence's wording changed?"
    assert not offenders, "counts sentences that disagree with their claims table:\n" + "\n".join(offenders)


# --------------------------------------------------------------------------------------------------
# Prose against the results, by class: error-bar words, extreme values, errata vs the audit,
# the coverage table vs the claim registry, the landing page's summary
# --------------------------------------------------------------------------------------------------

_BAND_DRAWERS = re.compile(r"\b(plot_mean_with_spread|mean_interval|plot_accuracy)\(")
_TITLE = re.compile(r"""(?:title\s*=\s*|set_title\(\s*|suptitle\(\s*)f?(["'])(.*?)\1""")
_SD_WORDS = re.compile(r"±\s*s\.?d\b|\bs\.d\.|\bstandard deviation|\bstd\b", re.IGNORECASE)


def _code_cells():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "book" / "templates").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                yield path, i, cell.source


def error_bar_offenders(cells=None):
    """Titles that name a standard deviation on a figure whose bands are confidence intervals."""
    out = []
    for path, i, src in _code_cells() if cells is None else cells:
        if not _BAND_DRAWERS.search(src):
            continue
        for m in _TITLE.finditer(src):
            if _SD_WORDS.search(m.group(2)):
                out.append(f"{Path(path).name} cell {i}: title {m.group(2)!r} over 95 % confidence bands")
    return out


def test_figure_titles_name_the_bands_they_draw():
    assert error_bar_offenders() == []
    planted = [("x.ipynb", 0, 'plot_mean_with_spread(ax, df, "n", "auc", "m")\nax.set(title="AUC (mean ± s.d.)")')]
    assert len(error_bar_offenders(planted)) == 1


_EXTREME = re.compile(r"AUC\s*(?:≪|<<|<|\\ll)\s*0\.5|AUC (?:well |far )?below 0\.5", re.IGNORECASE)


def _page_results(page):
    from dpstack.companion import results

    out = []
    for name in results.experiments():
        if (results.get(name).page or name) == page:
            try:
                out.append(results.load(name, "paper"))
            except results.MissingResultError:
                pass
    return out


def extreme_value_offenders(cells=None):
    """Phrases saying an AUC fell below 0.5 on pages whose committed results have no AUC below 0.5."""
    out = []
    for page, i, text in prose_cells() if cells is None else cells:
        for m in _EXTREME.finditer(text):
            frames = _page_results(Path(page).stem)
            lows = [float(f["auc"].min()) for f in frames if "auc" in f]
            if not lows or min(lows) >= 0.5:
                low = "no committed AUC" if not lows else f"lowest committed AUC {min(lows):.3f}"
                out.append(f"{page} cell {i}: {m.group()!r} but {low}")
    return out


def test_extreme_value_phrases_hold_in_the_results():
    assert extreme_value_offenders() == []
    planted = [("notebooks/pptl_table1_mnist.ipynb", 0, "the sign of the stacked score can flip (AUC ≪ 0.5).")]
    assert len(extreme_value_offenders(planted)) == 1


def _audit_loss(mutant):
    """(exact max loss, claimed ε) of ``mutant`` in the audit chapter's committed mutant table.

    The table's plain text wraps its columns in blocks; a row is found by its index in each block.
    """
    nb = nbformat.read(ROOT / "notebooks" / "audit_mutants.ipynb", as_version=4)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            text = output.get("data", {}).get("text/plain", "")
            if "exact max loss" not in text or mutant not in text:
                continue
            lines = text.splitlines()
            row = next(ln for ln in lines if mutant in ln)
            index = row.split()[0]
            claimed = float(row.split(mutant, 1)[1].split()[-1])
            header = next(i for i, ln in enumerate(lines) if "exact max loss" in ln)
            names = lines[header].split()
            values = next(ln for ln in lines[header + 1 :] if ln.split() and ln.split()[0] == index).split()
            # columns of that block: privacy unit (two words), exact max loss, ...
            loss = float(values[values.index("sample") + 1] if "sample" in values else values[names.index("exact") + 1])
            return loss, claimed
    raise AssertionError(f"mutant {mutant!r} not found in the audit chapter's outputs")


def erratum_offenders(section_text, loss, claimed):
    section_text = " ".join(section_text.replace("*", "").split())
    if loss <= claimed:
        return []
    out = []
    if "above ε" not in section_text and "more than ε" not in section_text:
        out.append(f"the audit measures {loss:.2f} > ε = {claimed:g} but the erratum does not say it leaks")
    for phrase in ("rather than demonstrably leaking", "not shown to leak", "does not leak"):
        if phrase in section_text:
            out.append(f"the erratum says {phrase!r} while the audit measures {loss:.2f} > ε = {claimed:g}")
    return out


def _erratum_section(anchor, next_anchor):
    nb = nbformat.read(ROOT / "notebooks" / "errata.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return text.split(f"({anchor})=", 1)[1].split(f"({next_anchor})=", 1)[0]


def test_errata_agree_with_the_audits_numbers():
    loss, claimed = _audit_loss("PPTL ε^(k) = ε")
    section = _erratum_section("erratum-pptl-epsilon-k", "erratum-pptl-lambda-k")
    assert erratum_offenders(section, loss, claimed) == []
    planted = "So on this evidence step 6 breaks the guarantee's proof rather than demonstrably leaking more than ε"
    assert erratum_offenders(planted, 1.19, 1.0)


def coverage_offenders(items=None):
    """Coverage rows whose "how" disagrees with the data status of the registry's claims on that item."""
    from dpstack.companion import verdicts as papers
    from dpstack.companion.numbering import PAPER_ITEMS

    expected = {"computed": {"paper"}, "synthetic": {"synthetic"}, "partly synthetic": {"paper", "synthetic"}}
    out = []
    for item in PAPER_ITEMS if items is None else items:
        if item.how not in expected:
            continue
        label = re.compile(rf"\b{item.kind} {re.escape(item.number)}(?![\w(])")
        found = {
            c.data
            for c in papers.claims(paper=item.paper)
            if c.page == item.page and label.search(c.location) and c.data != "stand-in"
        }
        if found and found != expected[item.how]:
            out.append(f"{item.paper} {item.kind} {item.number}: coverage says {item.how!r}, claims on {sorted(found)}")
    return out


def test_coverage_rows_agree_with_the_claim_registry():
    from dpstack.companion.numbering import PAPER_ITEMS

    assert coverage_offenders() == []
    fig4 = next(i for i in PAPER_ITEMS if i.paper == "PPTL" and i.kind == "Figure" and i.number == "4")
    assert coverage_offenders([fig4._replace(how="synthetic")])


def test_coverage_status_of_a_page_with_several_results():
    from dpstack.companion.numbering import PAPER_ITEMS, item_status

    fig4 = next(i for i in PAPER_ITEMS if i.paper == "PPTL" and i.kind == "Figure" and i.number == "4")
    assert "computed when the page runs" not in item_status(fig4)  # ruijin_transfer renders committed results


def test_landing_page_summary_is_generated_from_the_results():
    from dpstack.companion import show

    for path, text in show.summary_files().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.name} is stale: run python -m dpstack.companion summaries"
        )


# --------------------------------------------------------------------------------------------------
# Counts of repeats and restatements of the rule: prose that cannot drift from the results
# --------------------------------------------------------------------------------------------------

_REPEATS = re.compile(r"\b(\d+)(?:\s+|-)(?:repeats?|trials|random splits)\b|\brepeat\w*\b[^.;]{0,60}?\b(\d+) times\b")
_PAPER_NAMES = ("PST", "PPTL", "MPL")


def _page_paper(page):
    """The papers whose claims or results a page shows (from the claim registry; by its name otherwise)."""
    from dpstack.companion import verdicts

    stem = Path(page).stem
    found = {c.paper for c in verdicts.claims() if c.page == stem}
    if not found:
        found = {p for p in _PAPER_NAMES if stem.lower().startswith(p.lower())}
    return found


def _result_repeats(page):
    """The numbers of repeats of the committed results a page shows (from their ``repeat`` columns)."""
    counts = set()
    for frame in _page_results(Path(page).stem):
        for col in ("repeat", "trial", "split"):
            if col in frame:
                counts.add(int(frame[col].nunique()))
    return counts


def repeat_count_offenders(cells=None):
    """Counts of repeats typed in prose that neither the paper named nor the page's results have.

    A count attributed to a paper (the sentence names PST, PPTL, MPL or "the paper(s)") must be one
    the paper states (:data:`dpstack.companion.paper_values.PAPER_REPEATS`; "the paper" is the
    page's own paper); any other count must be the number of repeats of a committed result the
    page shows. A typed count that is neither can only drift: generate it in a code cell.
    """
    from dpstack.companion.paper_values import PAPER_REPEATS

    out = []
    for page, i, raw in prose_cells() if cells is None else cells:
        text = clean(raw)
        for m in _REPEATS.finditer(text):
            n = int(m.group(1) or m.group(2))
            sentence = sentence_at(text, m.start())
            # attributed: a paper named just before the count ("the paper's 10 repeats", "PST repeats … 10 times")
            before = text[max(0, m.start() - 40) : m.start()].split(".")[-1].split(";")[-1]
            named = {p for p in _PAPER_NAMES if re.search(rf"\b{p}\b", before)}
            if re.search(r"\b(?:the )?papers?'?s?\b", before, re.I):
                named |= _page_paper(page) or set(_PAPER_NAMES)
            if named:
                if any(n in PAPER_REPEATS[p] for p in named):
                    continue
                why = f"attributed to {'/'.join(sorted(named))}, which state(s) {sorted({k for p in named for k in PAPER_REPEATS[p]})}"
            else:
                have = _result_repeats(page)
                if n in have:
                    continue
                why = f"the page's committed results have {sorted(have) or 'no repeats'}"
            out.append(f"{page} cell {i}: {m.group(0)!r} ({why}): {sentence[:160]}")
    return out


def test_typed_repeat_counts_are_the_papers_or_the_results():
    assert repeat_count_offenders() == []
    # planted: the sentence the review found (PST states 10 repeats; 30 is PPTL Figure 4's count)
    planted = [
        ("notebooks/pst_fig2_groups.ipynb", 0, "Protocol as on the Figure 1 page; the paper repeats K sweeps 30 times.")
    ]
    assert len(repeat_count_offenders(planted)) == 1
    planted = [("notebooks/end_to_end_private.ipynb", 0, "The page shows the book's stored results (7 repeats).")]
    assert len(repeat_count_offenders(planted)) == 1


#: How the book's rule judges a claim is stated in code (the rule module, the verdict box, the
#: claims' encodings); prose that restates it by hand drifts when the rule changes (it did: "pairs =
#: repeats × ε", "the best interior K", "repeats to decide at 80 % power" outlived their rule).
RULE_RESTATEMENTS = re.compile(
    r"pairs\s*=\s*repeats|repeats\s*×\s*(?:finite\s*)?ε|branches\s*×\s*repeats|best interior K|interior grid points"
    r"|repeats? (?:would|to) decide|\d+\s*%\s*power|t-interval;\s*a claim",
    re.I,
)


def rule_restatement_offenders(cells=None):
    """Markdown that restates how a claim is judged (see :data:`RULE_RESTATEMENTS`)."""
    out = []
    for page, i, raw in prose_cells() if cells is None else cells:
        for m in RULE_RESTATEMENTS.finditer(clean(raw)):
            out.append(f"{page} cell {i}: {m.group(0)!r}")
    return out


def test_no_page_restates_the_rule_by_hand():
    assert rule_restatement_offenders() == []
    planted = [("notebooks/pst_fig1_epsilon.ipynb", 0, "its claims are tested over repeats × finite ε.")]
    assert len(rule_restatement_offenders(planted)) == 1
