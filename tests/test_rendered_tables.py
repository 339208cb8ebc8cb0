"""Every table a page shows reads like a book's table (the checks are in ``tests/table_check.py``).

Scanned: the HTML outputs of every executed notebook (what the book renders), and the notebooks'
code for tables printed as text blocks (``to_string``). Each check is planted below and seen to
fail, and a table made by :func:`dpstack.companion.tables.scrollable` from the same raw frame passes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import table_check  # noqa: E402

from dpstack.companion.tables import as_table, scrollable  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def html_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            text = output.get("data", {}).get("text/html")
            if text:
                yield i, text if isinstance(text, str) else "".join(text)


def test_notebooks_are_there():
    assert len(NOTEBOOKS) >= 20
    assert sum(1 for path in NOTEBOOKS for _ in html_outputs(path)) > 20


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_rendered_table_reads_well(path):
    problems = [p for i, text in html_outputs(path) for p in table_check.table_problems(text, f"cell {i} ")]
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_table_is_printed_as_a_text_block(path):
    nb = nbformat.read(path, as_version=4)
    blocks = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and re.search(r"\.to_string\(", c.source)]
    assert not blocks, (
        f"{path.name}: cells {blocks} print a table with to_string (use dpstack.companion.tables.as_table)"
    )


RAW = pd.DataFrame(
    {
        "lam_bottom": [True, False, True],
        "epsilon": [0.5, np.nan, 2.0],
        "lam": [2043.36, 0.0672336, 5.29832e-05],
        "p": [1.6137e-314, 0.04, 0.5],
        "mean AUC": [{"own 200 samples": 0.655}, {"pooled": 0.7}, None],
    }
)

PLANTED = {
    "index column": RAW[["epsilon"]].fillna(0).to_html(),
    "missing value": RAW[["epsilon"]].to_html(index=False),
    "cut cell": pd.DataFrame({"checks": ["low PLR-FS (centre (1-η)w_s): 0..."]}).to_html(index=False),
    "code-name header": pd.DataFrame({"lam_bottom": ["yes"]}).to_html(index=False),
    "unrounded number": pd.DataFrame({"λ": [2043.36]}).to_html(index=False),
    "printed dict": pd.DataFrame({"mean AUC": [str({"own 200 samples": 0.655})]}).to_html(index=False),
    "boolean": pd.DataFrame({"within": [True]}).to_html(index=False),
}


@pytest.mark.parametrize("what", sorted(PLANTED))
def test_each_planted_problem_is_caught(what):
    problems = table_check.table_problems(PLANTED[what])
    assert any(what in p for p in problems), problems


def test_the_book_style_of_the_same_raw_table_passes():
    assert table_check.table_problems(RAW.to_html())  # raw pandas: several problems
    assert table_check.table_problems(scrollable(RAW)) == []
    assert table_check.table_problems(as_table(RAW.set_index("epsilon"))._repr_html_()) == []
    long = pd.DataFrame({"n": range(40), "AUC": np.linspace(0.5, 0.9, 40)})
    assert table_check.table_problems(scrollable(long)) == []
    assert "40 sample sizes" in scrollable(long, summary="40 sample sizes", fold=True)


def test_a_declared_precision_allows_more_digits():
    table = pd.DataFrame({"exact max loss": ["1.1918"]}).to_html(index=False)
    assert table_check.table_problems(table)
    assert table_check.table_problems(table + "<p>rounded to 4 decimals</p>") == []
    assert table_check.table_problems(table + "<p>rounded to 3 decimals</p>")


def test_verdict_details_are_prose_not_cells():
    verdicts = (
        '<table class="dpstack-verdicts"><thead><tr><th>claim</th></tr></thead><tbody><tr><td><details>'
        "<summary>PLR &gt; PST-S</summary><p>p raw 0.014913, True…</p></details></td></tr></tbody></table>"
    )
    assert table_check.table_problems(verdicts) == []
    assert table_check.table_problems(verdicts.replace("PLR &gt; PST-S", "PLR lam_top True"))
    many = verdicts.replace("<tbody>", "<tbody>" + "<tr><td>a claim</td></tr>" * 30)
    assert table_check.table_problems(many) == []
    assert table_check.table_problems(many.replace("PLR &gt; PST-S", "PLR lam_top True"))
