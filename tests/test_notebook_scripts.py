"""The two notebook scripts' rules, on planted cells: what is tagged or linked, and idempotence."""

import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import link_terms
import tag_cells


def code(source, tags=()):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = list(tags)
    return cell


def test_prose_cells_lose_their_code_and_set_up_cells_fold():
    prose = code('n = df.repeat.nunique()\ndisplay(Markdown(f"With {n} repeats the gap is {gap:.3f}."))')
    setup = code(
        "import numpy as np\nfrom dpstack.companion.tables import book_tables\n\nP = E.PROFILES[profile]\nbook_tables()"
    )
    assert tag_cells.tag_for(prose) == "remove-input"
    assert tag_cells.tag_for(setup) == "hide-input"
    # A table, a figure or a computation stays visible.
    assert tag_cells.tag_for(code('display(Markdown("x"))\ndisplay(as_table(t))')) is None
    assert tag_cells.tag_for(code('fig, ax = plt.subplots()\ndisplay(Markdown("x"))')) is None
    assert tag_cells.tag_for(code("import numpy as np\ndf = results.load_or_run('x')")) is None
    assert tag_cells.tag_for(code("table")) is None
    # Tags already there are kept; a prose cell folded behind a toggle loses its code instead.
    assert tag_cells.tag_for(code('display(Markdown("x"))', ["remove-cell"])) is None
    assert tag_cells.tag_for(code('display(Markdown("x"))', ["hide-input"])) == "remove-input"
    assert tag_cells.tag_for(code("import numpy as np", ["parameters"])) is None


def test_the_first_use_of_a_term_on_a_page_is_linked_once():
    terms = ["PLR-FS", "PST-F(W)", "PST-F", "PLR", "vote"]
    page = [
        "# PLR in a title\n\nPLR-FS and PST-F(W) beat PLR; `PLR` in code and $PLR$ in math stay.",
        "PLR again, PST-F alone, and a vote.",
    ]
    once = link_terms.link_first_uses(page, terms, mpl_page=False)
    assert once[0] == (
        "# PLR in a title\n\n{term}`PLR-FS` and {term}`PST-F(W)` beat {term}`PLR`; `PLR` in code and $PLR$ in math stay."
    )
    assert once[1] == "PLR again, {term}`PST-F` alone, and a vote."  # vote: only on MPL pages
    assert link_terms.link_first_uses(once, terms, mpl_page=False) == once  # idempotent
    assert "{term}`vote`" in link_terms.link_first_uses(page, terms, mpl_page=True)[1]


def test_the_glossary_lists_the_papers_methods():
    terms = set(link_terms.glossary_terms())
    assert {"PLR", "PLR-FS", "PST-S", "PST-F(U)", "PST-F(W)", "PST-H", "PPTL-FS(W)", "PPTL-FS(R)"} <= terms
    assert {"SimComb", "PPHTL", "Direct", "SourceD", "C-hl", "C-mv", "C-wmv", "C-k"} <= terms
    assert {"vote", "soft", "avg", "batch", "indiv"} <= terms


def test_a_figure_shown_with_show_figure_keeps_its_code():
    cell = code('show_figure(page.figure, "alt text")\ndisplay(Markdown("*Figure: what to look at.*"))')
    assert tag_cells.tag_for(cell) is None


def test_a_prose_cell_that_imports_and_loads_is_folded_not_removed():
    cell = code("from dpstack.companion import report\n\ndf = load()\ndisplay(Markdown(report.source_sentence(df)))")
    assert tag_cells.tag_for(cell) == "hide-input"
    assert tag_cells.tag_for(code(cell.source, ["hide-input"])) is None
