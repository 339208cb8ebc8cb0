"""One numbering of the papers' figures and tables across the book (dpstack.companion.numbering).

The book numbers PST figures as the arXiv version does and gives the IJCAI number in brackets
where it differs ("Figure 4 [IJCAI Fig. 3]"). These tests read every page's text (Markdown and
code cells) and fail on a PST figure reference that contradicts the mapping: an IJCAI number
used bare, a bracket with the wrong IJCAI number, a missing bracket, a panel the arXiv figure
does not have, or a figure page whose title names another figure. Further down: every table
and figure captioned in the papers' texts is in ``PAPER_ITEMS``, whose pages are the sidebar's.
"""

import dataclasses
import os
import re
from pathlib import Path

import nbformat
import pytest
import yaml

from dpstack.companion.numbering import (
    HOW,
    MPL_FIGURES,
    PAPER_ITEMS,
    PPTL_NUMBERS,
    PST_FIGURES,
    coverage_table,
    ijcai_number,
    item_label,
    pst_figure,
    pst_figure_table,
)
from dpstack.companion.registry import paper_names

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
        ROOT / "dpstack" / "companion" / "papers" / "pst" / "grids.py",
        ROOT / "dpstack" / "companion" / "paper_values.py",
        ROOT / "dpstack" / "companion" / "papers" / "pst" / "pages.py",
        ROOT / "dpstack" / "companion" / "results.py",
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


# --- every table and figure of the papers, mapped to a page (dpstack.companion.numbering.PAPER_ITEMS) ------------


def toc_pages():
    """The book's pages as ``_toc.yml`` lists them (``notebooks/x`` or ``book/x``)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"]] + [chapter["file"] for part in toc["parts"] for chapter in part["chapters"]]


def test_every_item_names_a_page_of_the_sidebar():
    pages = {path.split("/", 1)[1]: path for path in toc_pages()}
    for item in PAPER_ITEMS:
        assert item.page in pages, (item_label(item), item.page)
        path = ROOT / pages[item.page]
        assert path.with_suffix(".ipynb").is_file() or path.with_suffix(".md").is_file(), path
        assert item.how in HOW and item.paper in paper_names() and item.kind in ("Table", "Figure")
        assert (item.ijcai != "") == (item.paper == "PST"), item


def test_the_old_mappings_are_derived_from_the_list():
    assert PPTL_NUMBERS == {f"{i.kind} {i.number}": i.page for i in PAPER_ITEMS if i.paper == "PPTL"}
    assert set(MPL_FIGURES) == {1, 2, 3, 4} and MPL_FIGURES[3] == "mpl_kdd"
    assert [f.page for f in PST_FIGURES.values()] == [
        f"pst_fig{n}_{s}" for n, s in zip(range(1, 5), ("epsilon", "groups", "importance", "combiners"))
    ]


CAPTION = re.compile(r"^[ \t]*(?:#+\s*)?(Table|Figure) (\d+):", re.M)


def captions(text):
    """{(kind, number)} of the table and figure captions of a paper's text ("Figure 3: ...")."""
    return {(kind, number) for kind, number in CAPTION.findall(text)}


def listed(paper, version="arXiv", items=PAPER_ITEMS):
    """{(kind, whole number)} of the items of ``paper`` in ``version`` (PST: "arXiv" or "IJCAI")."""
    out = set()
    for item in items:
        if item.paper == paper:
            number = item.ijcai if version == "IJCAI" else item.number
            out.add((item.kind, re.match(r"\d+", number).group()))
    return out


def papers_folder():
    """The papers' texts (not part of the repository): ``$DPSTACK_PAPERS``, else ``papers/`` beside the data home."""
    if os.environ.get("DPSTACK_PAPERS"):
        return Path(os.environ["DPSTACK_PAPERS"])
    return Path(os.environ.get("DPSTACK_DATA", "/nonexistent")).resolve().parent / "papers"


def which_paper(text):
    """(paper, version) of a paper's text, from its title; None for any other text."""
    head = text.lstrip()[:300]
    if head.lstrip("# ").startswith("Privacy-preserving Stacking"):
        return ("PST", "IJCAI" if head.startswith("#") else "arXiv")
    if head.startswith("Privacy-preserving Transfer Learning"):
        return ("PPTL", "")
    if head.startswith("Learning Privately from Multiparty Data"):
        return ("MPL", "")
    return None


def test_the_caption_check_catches_a_missing_and_an_extra_item():
    text = " Figure 1: the problem.\nSee Figure 2 below.\n## Table 1: AUC\nFigure 2: the framework.\n"
    assert captions(text) == {("Figure", "1"), ("Figure", "2"), ("Table", "1")}
    assert listed("MPL") == {("Figure", str(n)) for n in range(1, 5)}
    assert listed("PST", "IJCAI") == {("Table", str(n)) for n in range(1, 5)} | {("Figure", str(n)) for n in (1, 2, 3)}
    dropped = [i for i in PAPER_ITEMS if not (i.paper == "PPTL" and i.kind == "Table" and i.number == "3")]
    assert ("Table", "3") in listed("PPTL") - listed("PPTL", items=dropped)


def test_every_table_and_figure_captioned_in_the_papers_is_listed():
    folder = papers_folder()
    texts = [p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.txt"))] if folder.is_dir() else []
    found = {}
    for text in texts:
        key = which_paper(text)
        if key is not None:
            found[key] = captions(text)
    if not found:
        pytest.skip(f"the papers' texts are not in {folder} (set DPSTACK_PAPERS)")
    assert set(found) == {("PST", "arXiv"), ("PST", "IJCAI"), ("PPTL", ""), ("MPL", "")}
    for (paper, version), in_paper in found.items():
        assert in_paper == listed(paper, version or "arXiv"), (paper, version)


def test_the_coverage_table_has_one_row_per_item_and_a_status_for_each():
    table = coverage_table()
    assert len(table) == len(PAPER_ITEMS) and list(table.columns) == ["paper", "item", "shows", "page", "status"]
    status = dict(zip(table["page"] + " " + table["item"], table["status"]))
    assert status["pst_fig4_combiners Figure 4 [IJCAI Fig. 3]"].startswith("reproduced")
    assert status["mpl_overview Figure 1"] == "diagram redrawn"
    assert status["ruijin_like Table 4"].startswith("not reproduced: ")
    # A page with a committed paper-profile result is said to render it.
    assert status["mpl_kdd Figure 3"] == "reproduced (paper profile, committed results)"
    assert all(
        s.startswith(("reproduced", "diagram redrawn", "data absent here", "not reproduced: ")) for s in status.values()
    )


def test_a_page_without_data_or_committed_result_is_said_to_be_so(monkeypatch, tmp_path):
    from dpstack.companion import results
    from dpstack.companion.numbering import item_status

    har = next(i for i in PAPER_ITEMS if i.page == "mpl_har")
    kdd = next(i for i in PAPER_ITEMS if i.page == "mpl_kdd")
    monkeypatch.setenv("DPSTACK_RESULTS", str(tmp_path))  # no committed result anywhere
    for page, status in (("mpl_har", lambda: "Data absent: no HAR files"), ("mpl_kdd", lambda: None)):
        monkeypatch.setitem(results._REGISTRY, page, dataclasses.replace(results.get(page), status=status))
    assert item_status(har) == "data absent here (page explains)"
    assert item_status(kdd) == "reproduced (computed when the page runs)"
