"""No code block repeated between notebooks: logic used by two pages lives once, in the package.

Two notebooks fail the check when they share a run of ``MIN_LINES`` identical code lines, compared
after folding white space and dropping what is not logic: blank lines, comments, import lines,
lone brackets, the papermill ``parameters`` cell and the call that checks the parameters (every
page must have those two). Cells are read in order across cell boundaries.

Notebooks generated from one template (the MPL experiment pages) share code by design: a notebook
says so in its metadata, ``{"dpstack": {"template": "<name>"}}``, and two notebooks with the same
template name are not compared with each other (they are still compared with every other page).
"""

import re
from collections import defaultdict
from itertools import combinations
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
MIN_LINES = 6
_IMPORT = re.compile(r"^(import\s|from\s+\S+\s+import\s)")
_PUNCTUATION = re.compile(r"^[\s()\[\]{},:;]*$")


def logic_lines(notebook):
    """The normalised code lines of ``notebook`` that count as logic, in order."""
    lines = []
    for cell in notebook.cells:
        if cell.cell_type != "code" or "parameters" in cell.get("metadata", {}).get("tags", []):
            continue
        in_import = False
        for line in cell.source.splitlines():
            line = " ".join(line.split())
            if in_import:  # the names of a parenthesised import
                in_import = ")" not in line
                continue
            if _IMPORT.match(line):
                in_import = line.endswith("(")
                continue
            if not line or line.startswith("#") or _PUNCTUATION.match(line) or line.startswith("check_parameters("):
                continue  # (the page's parameter check is required on every page)
            lines.append(line)
    return lines


#: Notebooks generated from one template before the template wrote its name into their metadata.
#: The metadata, when present, wins; delete an entry once its notebook carries the field.
UNMARKED_TEMPLATES = {
    "mpl_har": "mpl_experiment",
    "mpl_kdd": "mpl_experiment",
    "mpl_url": "mpl_experiment",
    "mpl_mnist10": "mpl_experiment",
}


def template_of(notebook, name=None):
    return notebook.metadata.get("dpstack", {}).get("template") or UNMARKED_TEMPLATES.get(name)


def shared_blocks(notebooks, min_lines=MIN_LINES):
    """Pairs of notebooks sharing ``min_lines`` identical logic lines: ``{(a, b): first shared block}``.

    ``notebooks`` maps a name to a notebook node. Pairs with the same template are skipped.
    """
    where = defaultdict(dict)  # block -> {name: position}
    for name, notebook in notebooks.items():
        lines = logic_lines(notebook)
        for i in range(len(lines) - min_lines + 1):
            where[tuple(lines[i : i + min_lines])].setdefault(name, i)
    found = {}
    for block, names in where.items():
        for a, b in combinations(sorted(names), 2):
            template = template_of(notebooks[a], a)
            if template is not None and template == template_of(notebooks[b], b):
                continue
            found.setdefault((a, b), block)
    return found


def test_no_two_notebooks_share_a_block_of_code():
    notebooks = {path.stem: nbformat.read(path, as_version=4) for path in sorted((ROOT / "notebooks").glob("*.ipynb"))}
    found = shared_blocks(notebooks)
    report = [f"{a} and {b} share:\n    " + "\n    ".join(block) for (a, b), block in sorted(found.items())]
    assert not report, "code repeated between notebooks; move it into dpstack once:\n" + "\n".join(report)


def notebook(*cells, template=None, parameters=None):
    nb = nbformat.v4.new_notebook()
    if parameters is not None:
        nb.cells.append(nbformat.v4.new_code_cell(parameters, metadata={"tags": ["parameters"]}))
    nb.cells.extend(nbformat.v4.new_code_cell(c) for c in cells)
    if template:
        nb.metadata["dpstack"] = {"template": template}
    return nb


BLOCK = "\n".join(f"x{i} = f(x{i - 1}, {i})" for i in range(1, 7))  # six lines of logic


def test_a_planted_block_is_found_whatever_its_white_space_and_comments():
    spaced = "\n\n".join("    " + line.replace(" = ", "   =   ") + "  " for line in BLOCK.splitlines())
    a = notebook("import numpy as np\nx0 = 1", BLOCK)
    b = notebook("# the same, spread out\n" + spaced.replace("x3 = ", "# a comment\nx3 = "), "print(x6)")
    assert shared_blocks({"a": a, "b": b}) == {("a", "b"): tuple(BLOCK.splitlines())}
    # Split over two cells, the block is still one block.
    lines = BLOCK.splitlines()
    c = notebook("\n".join(lines[:3]), "\n".join(lines[3:]))
    assert ("a", "c") in shared_blocks({"a": a, "c": c})


def test_five_shared_lines_imports_parameters_and_the_check_are_not_duplicates():
    five = "\n".join(BLOCK.splitlines()[:5])
    boiler = (
        "import numpy as np\nimport pandas as pd\nfrom dpstack import tables\nfrom x import (\n    a,\n    b,\n)\n"
        "check_parameters(globals(), 'profile', 'seed')"
    )
    params = 'profile = "quick"\nseed = 0\nn_jobs = 1\nn_repeats = 3\nlevel = 0.95\nverbose = False'
    a = notebook(boiler, five, "y = 1", parameters=params)
    b = notebook(boiler, five, "y = 2", parameters=params)
    assert shared_blocks({"a": a, "b": b}) == {}


def test_notebooks_of_one_template_are_compared_with_the_others_only():
    one, two = notebook(BLOCK, template="mpl_experiment"), notebook(BLOCK, template="mpl_experiment")
    other, third = notebook(BLOCK), notebook(BLOCK, template="another")
    found = shared_blocks({"one": one, "two": two, "other": other, "third": third})
    assert ("one", "two") not in found
    assert {("one", "other"), ("other", "two"), ("one", "third"), ("other", "third"), ("third", "two")} <= set(found)
