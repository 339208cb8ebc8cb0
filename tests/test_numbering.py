"""One numbering of the PST figures across the book (dpstack.numbering.PST_FIGURES).

The book numbers PST figures as the arXiv version does and gives the IJCAI number in brackets
where it differs ("Figure 4 [IJCAI Fig. 3]"). These tests read every page's text (Markdown and
code cells) and fail on a PST figure reference that contradicts the mapping: an IJCAI number
used bare, a bracket with the wrong IJCAI number, a missing bracket, a panel the arXiv figure
does not have, or a figure page whose title names another figure.
"""

import re
from pathlib import Path

import nbformat
import pytest

from dpstack.numbering import MPL_FIGURES, PST_FIGURES, ijcai_number, pst_figure, pst_figure_table

ROOT = Path(__file__).resolve().parents[1]

REFERENCE = re.compile(
    r"(?P<paper>\b(?:PST|PPTL|MPL)(?:'s)?\s+)?\bFig(?:ure|s)?\.?\s*(?P<num>\d)"
    r"(?P<panel>\(?[a-z]\)?(?:\s*[-–]\s*\(?[a-z]\)?)?)?"
    r"(?P<bracket>\s*\[IJCAI Fig\.\s*(?P<ijcai>[^\]]+)\])?"
)


def pst_reference_problems(text, pst_page):
    """The PST figure references in ``text`` that contradict the mapping, one message each.

    On a PST page (``pst_page``) a bare "Figure N" is a PST figure; elsewhere only "PST Figure N"
    is. References named "PPTL …" or "MPL …" are those papers' own figures.
    """
    problems = []
    for match in REFERENCE.finditer(text):
        paper = (match["paper"] or "").strip().removesuffix("'s")
        if paper in ("PPTL", "MPL") or (not paper and not pst_page):
            continue
        where = text[max(0, match.start() - 40) : match.end() + 10].replace("\n", " ")
        number, panel = int(match["num"]), (match["panel"] or "").strip("()")
        if number not in PST_FIGURES:
            problems.append(f"PST has no Figure {number} in the arXiv numbering: …{where}…")
            continue
        if panel not in ("", "a", "b"):
            problems.append(
                f"Figure {number}({panel}) is not a panel of the arXiv figure (a or b; for a whole "
                f"figure write {pst_figure(number)!r}): …{where}…"
            )
            continue
        expected = ijcai_number(number, panel)
        ours = f"{number}({panel})" if panel else f"{number}"
        given = match["ijcai"].strip().replace("-", "–") if match["bracket"] else None
        if expected != ours and given is None:
            problems.append(f"no IJCAI number in brackets; write {pst_figure(number, panel)!r}: …{where}…")
        elif given is not None and given != expected:
            problems.append(
                f"IJCAI Fig. {given} is not arXiv Figure {ours}; write {pst_figure(number, panel)!r}: …{where}…"
            )
    return problems


def page_texts():
    """(page, text, is a PST page) for every notebook and Markdown page of the book."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        text = "\n\n".join(cell.source for cell in notebook.cells)
        yield path.name, text, path.stem.startswith("pst_")
    for path in sorted((ROOT / "book").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        if path.stem == "pst_overview":  # the mapping table itself is checked below, not as prose
            text = text.replace(pst_figure_table(), "")
        yield path.name, text, path.stem.startswith("pst_")
    for path in (
        ROOT / "dpstack" / "experiments" / "stacking.py",
        ROOT / "dpstack" / "experiments" / "paper_values.py",
        ROOT / "dpstack" / "experiments" / "pst_report.py",
        ROOT / "dpstack" / "experiments" / "results.py",
    ):
        yield path.name, path.read_text(encoding="utf-8"), False  # docstrings say "PST Figure N"


def title(stem):
    notebook = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    return notebook.cells[0].source.splitlines()[0]


def test_the_mapping_matches_both_versions_of_the_paper():
    # arXiv: four figures; IJCAI: K (a-b) and importance (c-d) merged into Figure 2, combiners Figure 3.
    assert [pst_figure(n) for n in PST_FIGURES] == [
        "Figure 1",
        "Figure 2 [IJCAI Fig. 2(a)–(b)]",
        "Figure 3 [IJCAI Fig. 2(c)–(d)]",
        "Figure 4 [IJCAI Fig. 3]",
    ]
    assert pst_figure(3, "b") == "Figure 3(b) [IJCAI Fig. 2(d)]" and pst_figure(1, "a") == "Figure 1(a)"
    with pytest.raises(ValueError, match="number"):
        pst_figure(5)
    with pytest.raises(ValueError, match="panel"):
        pst_figure(2, "c")


def test_the_scanner_catches_each_kind_of_contradiction():
    good = (
        "PST Figure 4 [IJCAI Fig. 3] and Figure 3(a) [IJCAI Fig. 2(c)], Fig. 1, PPTL Figure 3(b), "
        "MPL Figure 2, Figure 2 [IJCAI Fig. 2(a)-(b)]"
    )
    assert pst_reference_problems(good, pst_page=True) == []
    assert len(pst_reference_problems("the combiners (Figure 3)", pst_page=True)) == 1  # IJCAI number used bare
    assert "no IJCAI number" in pst_reference_problems("PST Fig. 4", pst_page=False)[0]
    assert "not arXiv Figure 4" in pst_reference_problems("Figure 4 [IJCAI Fig. 2(c)–(d)]", pst_page=True)[0]
    assert "not a panel" in pst_reference_problems("PST Figure 2(c)-(d)", pst_page=False)[0]
    assert "no Figure 5" in pst_reference_problems("Figure 5", pst_page=True)[0]
    assert pst_reference_problems("Figure 3 of the MPL paper", pst_page=False) == []  # not a PST page


def test_every_page_numbers_pst_figures_as_the_mapping_says():
    problems = [
        f"{page}: {problem}"
        for page, text, pst_page in page_texts()
        for problem in pst_reference_problems(text, pst_page)
    ]
    assert problems == []


def test_each_pst_figure_page_title_names_its_figure_in_both_versions():
    for number, figure in PST_FIGURES.items():
        assert title(figure.page).startswith(f"# PST {pst_figure(number)}:"), (figure.page, title(figure.page))


def test_the_pst_overview_shows_the_mapping_and_says_which_version():
    text = (ROOT / "book" / "pst_overview.md").read_text(encoding="utf-8")
    assert pst_figure_table() in text
    assert "numbered as in the arXiv version" in " ".join(text.split())


def test_mpl_page_titles_name_the_papers_figure():
    for number, stem in MPL_FIGURES.items():
        if not (ROOT / "notebooks" / f"{stem}.ipynb").exists():
            continue  # the overview is a Markdown page
        named = re.findall(r"Figure (\d)", title(stem))
        assert named in ([], [str(number)]), (stem, title(stem))
