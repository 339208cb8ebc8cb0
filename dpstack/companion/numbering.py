"""Every table and figure of the three papers, how the book numbers it and which page reproduces it.

The stacking paper (PST) exists in two versions that number their experiment figures
differently: the arXiv version has four figures (ε, K, feature importance, combiners); the
IJCAI 2019 version merges the K and importance figures into one Figure 2 with four panels, so
its combiner figure is Figure 3. **The book numbers PST figures as in the arXiv version** (which
is also how the pages, :mod:`dpstack.companion.papers.pst.grids`'s functions ``fig1_epsilon`` …
``fig4_combiners`` and the notebooks ``pst_fig1_epsilon`` … ``pst_fig4_combiners`` are named),
and gives the IJCAI number in brackets where it differs, e.g. "Figure 4 [IJCAI Fig. 3]". Both
versions number their tables 1–4 alike.

The transfer paper (PPTL) and the multiparty paper (MPL) have one version each; their numbers
are used as printed.

:data:`PAPER_ITEMS` is the one list of the papers' tables and figures: for each, what it shows,
the book page that reproduces it and how (:data:`HOW`). Each paper declares its own items
(``ITEMS``, :class:`dpstack.companion.spec.PaperItem`) beside its experiments. Everything else here is derived from it:
:data:`PST_FIGURES` (the mapping every PST page title and caption is checked against by the
test suite), :data:`PPTL_NUMBERS`, :data:`MPL_FIGURES`, :func:`pst_figure` (a reference in the
book's form) and :func:`coverage_table` (the table of the "Reproducing the results" page, whose
status column is worked out from the committed results and the data present when it is called).
"""

from __future__ import annotations

from typing import NamedTuple

from dpstack.companion import results
from dpstack.companion.spec import PaperItem, paper_items

__all__ = [
    "HOW",
    "PaperItem",
    "PAPER_ITEMS",
    "PaperFigure",
    "PST_VERSION",
    "PST_FIGURES",
    "PPTL_NUMBERS",
    "MPL_FIGURES",
    "item_label",
    "item_status",
    "coverage_table",
    "pst_figure",
    "ijcai_number",
    "pst_figure_table",
]

#: The version of the stacking paper whose figure numbers the book uses.
PST_VERSION = "arXiv"


#: How a page reproduces a paper's item. ``"computed"`` and ``"synthetic"`` items are computed by
#: the page; their status (committed paper-profile results, computed when the page runs, or data
#: absent) is read from :mod:`dpstack.companion.results` by :func:`item_status`.
HOW = {
    "computed": "the page computes it from the paper's data",
    "synthetic": "the page computes it on the synthetic RUIJIN-like cohort (RUIJIN is private)",
    "partly synthetic": "the page computes its RUIJIN panel on the synthetic RUIJIN-like cohort and its MNIST "
    "panel on the paper's data",
    "diagram": "the page redraws the diagram",
    "copied": "a description of the private RUIJIN data, copied into the synthetic cohort",
}


#: Every table and figure of the three papers, in each paper's order of appearance: each paper's
#: ``ITEMS``, declared beside its experiments (``papers/<paper>/experiments.py``), papers in their order.
PAPER_ITEMS = paper_items()


class PaperFigure(NamedTuple):
    """One PST experiment figure: its number in each version, what it shows and the book's page."""

    arxiv: str
    ijcai: str
    shows: str
    page: str


#: PST experiment figures by their arXiv number (the book's number), from :data:`PAPER_ITEMS`.
PST_FIGURES = {
    int(item.number): PaperFigure(item.number, item.ijcai, item.shows, item.page)
    for item in PAPER_ITEMS
    if item.paper == "PST" and item.kind == "Figure"
}

#: PPTL's tables and figures as printed (one version), with the page that reproduces each.
PPTL_NUMBERS = {f"{item.kind} {item.number}": item.page for item in PAPER_ITEMS if item.paper == "PPTL"}

#: MPL's figures as printed (one version), with the page that reproduces each.
MPL_FIGURES = {int(item.number): item.page for item in PAPER_ITEMS if item.paper == "MPL" and item.kind == "Figure"}


def ijcai_number(number, panel=""):
    """The IJCAI version's number of PST figure ``number`` (arXiv numbering), or of its ``panel``.

    ``ijcai_number(4)`` → ``"3"``; ``ijcai_number(3, "a")`` → ``"2(c)"`` (the importance figure is
    the second row of the IJCAI version's merged Figure 2).
    """
    if number not in PST_FIGURES:
        raise ValueError(f"number must be one of {sorted(PST_FIGURES)} (PST's arXiv figures), got {number!r}")
    if panel not in ("", "a", "b"):
        raise ValueError(f"panel must be '', 'a' or 'b' (each PST figure has two panels), got {panel!r}")
    ijcai = PST_FIGURES[number].ijcai
    if not panel:
        return ijcai
    if "(" in ijcai:  # a merged figure: panel a/b of ours is the first/second panel of its pair
        base, first, second = ijcai[: ijcai.index("(")], ijcai[ijcai.index("(") + 1], ijcai[ijcai.rindex("(") + 1]
        return f"{base}({first if panel == 'a' else second})"
    return f"{ijcai}({panel})"


def pst_figure(number, panel=""):
    """The book's reference to PST figure ``number`` (arXiv numbering), IJCAI number in brackets.

    The bracket is added where the two versions differ: ``pst_figure(4)`` →
    ``"Figure 4 [IJCAI Fig. 3]"``.

    ``panel`` (``"a"`` or ``"b"``) names one panel of the arXiv figure; its IJCAI panel is
    given too (``pst_figure(3, "a")`` → ``"Figure 3(a) [IJCAI Fig. 2(c)]"``).
    """
    ijcai = ijcai_number(number, panel)
    ours = f"{PST_FIGURES[number].arxiv}" + (f"({panel})" if panel else "")
    return f"Figure {ours}" if ijcai == ours else f"Figure {ours} [IJCAI Fig. {ijcai}]"


def pst_figure_table():
    """The mapping as a Markdown table (shown on the PST overview page)."""
    rows = ["| this book (arXiv) | IJCAI 2019 version | what it shows | our page |", "|---|---|---|---|"]
    for figure in PST_FIGURES.values():
        rows.append(
            f"| Figure {figure.arxiv} | Figure {figure.ijcai} | {figure.shows} | {{doc}}`../notebooks/{figure.page}` |"
        )
    return "\n".join(rows)


def item_label(item):
    """The book's name of ``item``: "Table 2", "Figure 3(b)", or "Figure 4 [IJCAI Fig. 3]" for PST."""
    if item.paper == "PST" and item.kind == "Figure":
        return pst_figure(int(item.number))
    return f"{item.kind} {item.number}"


def _computed_status(page):
    """How the numbers of ``page`` come about: committed paper-profile results, live, or no data.

    A page may render several registered results (e.g. one per grid); it renders committed
    results when any of them is committed at the paper profile.
    """

    names = [name for name in results.experiments() if (results.get(name).page or name) == page]
    if not names:
        return "computed when the page runs"
    committed, absent = False, True
    for name in names:
        try:
            results.provenance(name, "paper")
            committed = True
        except results.MissingResultError:
            experiment = results.get(name)
            if experiment.status is None or experiment.status() is None:
                absent = False
    if committed:
        return "paper profile, committed results"
    return None if absent else "computed when the page runs"


def item_status(item):
    """The status of ``item`` in the book, as the coverage table states it.

    Computed items read the results registry (:mod:`dpstack.companion.results`): a page with a
    committed paper-profile result renders it; a registered page whose data is absent says so and
    shows no numbers; any other page computes its numbers when it runs.
    """
    if item.how not in HOW:
        raise ValueError(f"how must be one of {sorted(HOW)}, got {item.how!r} for {item_label(item)}")
    if item.how == "diagram":
        return "diagram redrawn"
    if item.how == "copied":
        return "not reproduced: it describes the private RUIJIN data; the synthetic cohort copies it"
    how = _computed_status(item.page)
    if how is None:
        return "data absent here (page explains)"
    if item.how == "synthetic":
        return f"reproduced on the synthetic RUIJIN-like cohort ({how})"
    if item.how == "partly synthetic":
        return f"reproduced: the RUIJIN panel on the synthetic cohort, the MNIST panel on the paper's data ({how})"
    return f"reproduced ({how})"


def coverage_table(items=PAPER_ITEMS):
    """Every table and figure of the three papers, the book page that reproduces it, and its status.

    Returns
    -------
    pandas.DataFrame
        Columns ``paper``, ``item`` (numbered as the book numbers it, see :func:`item_label`),
        ``shows``, ``page`` (a notebook or Markdown page of the book) and ``status``
        (:func:`item_status`), one row per item in the papers' order.
    """
    import pandas as pd

    rows = [
        {
            "paper": item.paper,
            "item": item_label(item),
            "shows": item.shows,
            "page": item.page,
            "status": item_status(item),
        }
        for item in items
    ]
    return pd.DataFrame(rows, columns=["paper", "item", "shows", "page", "status"])
