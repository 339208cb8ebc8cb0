"""Every experiment page, theorem page and audit page opens with its summary, before any parameter cell.

The summary is the verdict box (:func:`dpstack.companion.show.verdict_box`) on a page that judges
the papers' claims, or the result box (:func:`dpstack.companion.show.result_box`) on a page whose
result is not a tally of verdicts. Read from the committed notebooks' outputs: the box must be an
output of a code cell placed before the papermill ``parameters`` cell and before any code cell whose
input the reader sees.
"""

import re
from pathlib import Path

import nbformat
import pytest
import yaml

from dpstack.companion.chapters import audit_pages
from dpstack.companion.errata import ERRATA, IMPACTS, summary_table
from dpstack.companion.registry import theorem_pages

ROOT = Path(__file__).resolve().parents[1]
SUMMARY_CLASSES = ("dpstack-verdict-box", "dpstack-result-box")
#: Pages that must open with their summary: the experiment pages that judge the papers' claims, the
#: protocol-sensitivity page and every page of the privacy-audit chapter.
EXPERIMENT_PAGES = (
    "pst_fig1_epsilon",
    "pst_fig2_groups",
    "pst_fig3_importance",
    "pst_fig4_combiners",
    "pptl_table1_mnist",
    "ruijin_transfer",
    "mpl_har",
    "mpl_kdd",
    "mpl_url",
    "mpl_mnist10",
    "protocol_sensitivity",
)
#: The theorem pages, and PLR's page (the algorithm PST builds on): each opens with a result box.
THEOREM_PAGES = ("plr", *theorem_pages())
REQUIRED = EXPERIMENT_PAGES + THEOREM_PAGES + tuple(name for name, _ in audit_pages.PAGES)


def _hidden_input(cell):
    tags = cell.get("metadata", {}).get("tags", [])
    return any(t in tags for t in ("remove-input", "remove-cell", "hide-input"))


def _has_summary(cell):
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        text = str(data.get("text/html", "")) + str(data.get("text/markdown", ""))
        if any(c in text for c in SUMMARY_CLASSES):
            return True
    return False


def opening_problem(nb):
    """The empty string when the notebook's summary box comes before its parameters cell and before any code the reader
    sees; else what is wrong."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if _has_summary(cell):
            return ""
        if "verdict_box(" in cell.source or "result_box(" in cell.source:
            return "the cell that should show the page's summary box shows nothing"
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            return "the parameters cell comes before the page's summary box"
        if not _hidden_input(cell):
            return "a code cell the reader sees comes before the page's summary box"
    return "no summary box (verdict box or result box) in the page's outputs"


@pytest.mark.parametrize("page", REQUIRED)
def test_the_page_opens_with_its_summary(page):
    nb = nbformat.read(ROOT / "notebooks" / f"{page}.ipynb", as_version=4)
    assert opening_problem(nb) == "", page


def test_a_box_after_the_parameters_or_a_missing_box_is_found():
    box = nbformat.v4.new_code_cell("verdict_box('x')", metadata={"tags": ["remove-input"]})
    box.outputs = [nbformat.v4.new_output("display_data", data={"text/html": '<div class="dpstack-verdict-box">'})]
    params = nbformat.v4.new_code_cell("profile = 'paper'", metadata={"tags": ["parameters"]})
    shown = nbformat.v4.new_code_cell("import numpy")
    good = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T"), box, params])
    assert opening_problem(good) == ""
    assert "parameters cell comes before" in opening_problem(nbformat.v4.new_notebook(cells=[params, box]))
    assert "code cell the reader sees" in opening_problem(nbformat.v4.new_notebook(cells=[shown, box]))
    box.outputs = []  # the box's output dropped (e.g. hidden behind a later expression)
    assert "shows nothing" in opening_problem(nbformat.v4.new_notebook(cells=[box, params]))
    assert "no summary box" in opening_problem(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T")]))


def test_the_audit_chapters_pages_are_in_the_toc_in_order_under_the_chapter():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    chapter = next(c for part in toc["parts"] for c in part.get("chapters", []) if c.get("file") == "notebooks/audit")
    assert [s["file"] for s in chapter["sections"]] == [f"notebooks/{n}" for n, _ in audit_pages.PAGES[1:]]
    for name, title in audit_pages.PAGES:
        nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        heading = next(line for line in nb.cells[0].source.splitlines() if line.startswith("# "))
        assert heading[2:].replace("`", "") == title, name


def test_the_errata_table_lists_every_item_of_the_page_with_its_anchor_and_title():
    nb = nbformat.read(ROOT / "notebooks" / "errata.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    found = re.findall(r"\((erratum-[\w-]+)\)=\n## (\d+)\. (.+)", text)
    assert [(a, int(n)) for a, n, _ in found] == [(e.anchor, e.number) for e in ERRATA]
    for (_, _, printed), e in zip(found, ERRATA):
        plain = re.sub(r"\$|\\|\{|\}|\^|\(|\)|_", "", printed)
        words = [w for w in re.findall(r"[A-Za-z]{4,}", e.title)]
        assert all(w in plain for w in words), (e.number, printed, e.title)
    table = summary_table()
    assert set(table["impact"]) <= set(IMPACTS) and sum(table.attrs["counts"].values()) == len(ERRATA)
    # the table is shown first, before the page's parameters
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert "errata.summary_table()" in first.source and first.outputs
    with pytest.raises(ValueError, match="unknown impact"):
        summary_table([ERRATA[0]._replace(impact="harmless")])
