"""Which version of each paper the book's figure and table numbers follow.

The stacking paper (PST) exists in two versions that number their experiment figures
differently: the arXiv version has four figures (ε, K, feature importance, combiners); the
IJCAI 2019 version merges the K and importance figures into one Figure 2 with four panels, so
its combiner figure is Figure 3. **The book numbers PST figures as in the arXiv version** (which
is also how the pages, :mod:`dpstack.experiments.stacking`'s functions ``fig1_epsilon`` …
``fig4_combiners`` and the notebooks ``pst_fig1_epsilon`` … ``pst_fig4_combiners`` are named),
and gives the IJCAI number in brackets where it differs, e.g. "Figure 4 [IJCAI Fig. 3]". Both
versions number their tables 1–4 alike.

The transfer paper (PPTL) and the multiparty paper (MPL) have one version each; their numbers
are used as printed.

:data:`PST_FIGURES` is the single mapping every PST page title and caption is checked against
(by the test suite), and :func:`pst_figure` writes a reference in the book's form.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "PaperFigure",
    "PST_VERSION",
    "PST_FIGURES",
    "PPTL_NUMBERS",
    "MPL_FIGURES",
    "pst_figure",
    "ijcai_number",
    "pst_figure_table",
]

#: The version of the stacking paper whose figure numbers the book uses.
PST_VERSION = "arXiv"


class PaperFigure(NamedTuple):
    """One PST experiment figure: its number in each version, what it shows and the book's page."""

    arxiv: str
    ijcai: str
    shows: str
    page: str


#: PST experiment figures by their arXiv number (the book's number).
PST_FIGURES = {
    1: PaperFigure("1", "1", "test AUC against ε", "pst_fig1_epsilon"),
    2: PaperFigure("2", "2(a)–(b)", "test AUC against the number of groups K", "pst_fig2_groups"),
    3: PaperFigure("3", "2(c)–(d)", "test AUC against the feature importances vᵢ = αⁱ", "pst_fig3_importance"),
    4: PaperFigure("4", "3", "the combiners C-0 … C-4, C-mv, C-wmv and C-hl", "pst_fig4_combiners"),
}

#: PPTL's tables and figures as printed (one version), with the page that reproduces each.
PPTL_NUMBERS = {
    "Figure 1": "pptl_overview",
    "Figure 2": "pptl_overview",
    "Table 1": "pptl_table1_mnist",
    "Figure 3(a)": "pptl_table1_mnist",
    "Table 2": "ruijin_transfer",
    "Table 3": "ruijin_like",
    "Table 4": "ruijin_transfer",
    "Figure 3(b)": "ruijin_transfer",
    "Figure 4": "ruijin_transfer",
}

#: MPL's figures as printed (one version), with the page that reproduces each.
MPL_FIGURES = {1: "mpl_overview", 2: "mpl_har", 3: "mpl_kdd", 4: "mpl_url"}


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
