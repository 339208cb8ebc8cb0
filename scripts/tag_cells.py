"""Tag the notebooks' code cells so a reader sees the text and the results, not the machinery.

The rule, applied to every code cell of ``notebooks/*.ipynb`` (for the MPL experiment pages, to
their template, from which the pages are then regenerated):

* **prose cells** → ``remove-input``: a cell whose only displays are Markdown built from the
  results (``display(Markdown(...))``, or ``Markdown(...)`` as its last expression) and that
  draws no figure and shows no table. Its text stays on the page; the code that writes it goes.
  A prose cell that also imports (the cell loading a page's results and saying where they come
  from) is set-up as well: ``hide-input``.
* **set-up cells** → ``hide-input``: a cell with at least one import whose statements only import,
  define functions or constants, and configure (``check_parameters``, ``style``,
  ``notebook_setup``, ``book_tables``, ``pd.set_option`` …), with nothing printed, displayed or
  drawn. The code is folded behind a "Show code" toggle.
* every other cell is left as it is.

A cell that already has one of ``remove-input``, ``remove-cell``, ``hide-input``, ``hide-cell``,
``hide-output``, ``remove-output`` or ``parameters`` keeps its tags, with one exception: a prose
cell tagged only ``hide-input`` becomes ``remove-input``. The script never untags a cell otherwise,
so it is idempotent and can be re-run after other branches merge.

Usage: ``python scripts/tag_cells.py [--check]`` (``--check``: change nothing, exit 1 if a cell
would be tagged).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import notebook_pages

ROOT = Path(__file__).resolve().parents[1]
KEPT = {"remove-input", "remove-cell", "hide-input", "hide-cell", "hide-output", "remove-output", "parameters"}
SETUP_CALLS = {
    "check_parameters",
    "style",
    "notebook_setup",
    "book_tables",
    "set_option",
    "set_printoptions",
    "filterwarnings",
    "simplefilter",
    "use",
    "rcParams",
    "update",
}
SHOWING = {
    "display",
    "print",
    "show",
    "savefig",
    "plot",
    "imshow",
    "bar",
    "scatter",
    "hist",
    "subplots",
    "figure",
    "show_figure",
    "panels",
    "check_figure",
}


def _name(func):
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _parse(source):
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _has_import(source):
    tree = _parse(source)
    return tree is not None and any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body)


def is_prose(source):
    """Only Markdown displays, no figure, no table (see the module's docstring)."""
    tree = _parse(source)
    if tree is None or not tree.body:
        return False
    markdown = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _name(node.func)
            if name == "display":
                if not all(isinstance(a, ast.Call) and _name(a.func) == "Markdown" for a in node.args):
                    return False
                markdown += 1
            elif name in SHOWING - {"display"} or name in {"as_table", "verdict_table", "paper_vs_ours", "HTML"}:
                return False
            elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                if node.func.value.id in {"plt", "ax", "axes", "fig", "sns"}:
                    return False
    last = tree.body[-1]
    if isinstance(last, ast.Expr) and not (isinstance(last.value, ast.Call) and _name(last.value.func) == "display"):
        if isinstance(last.value, ast.Call) and _name(last.value.func) == "Markdown":
            markdown += 1
        else:
            return False  # a last expression shows its value: a table, a number
    return markdown > 0


def is_setup(source):
    """Imports and configuration only, nothing shown (see the module's docstring)."""
    tree = _parse(source)
    if tree is None or not any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body):
        return False
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            if _name(node.value.func) in SETUP_CALLS:
                continue
            return False
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            calls = [n for n in ast.walk(value) if isinstance(n, ast.Call)] if value is not None else []
            if not calls:  # a constant or a lookup, not a computation
                continue
            return False
        return False
    return True


def tag_for(cell):
    if cell.cell_type != "code":
        return None
    tags = set(cell.metadata.get("tags", []))
    if tags == {"hide-input"} or (tags & KEPT) == {"hide-input"}:
        # A prose cell folded behind a toggle: its code goes altogether (the text stays).
        return "remove-input" if is_prose(cell.source) and not _has_import(cell.source) else None
    if tags & KEPT:
        return None
    if is_prose(cell.source):
        # A prose cell that also imports and loads what the page uses is set-up too: folded, not removed.
        return "hide-input" if _has_import(cell.source) else "remove-input"
    if is_setup(cell.source):
        return "hide-input"
    return None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    check = "--check" in argv
    changed = 0
    for path in notebook_pages.editable_notebooks():
        nb = nbformat.read(path, as_version=4)
        added = []
        for i, cell in enumerate(nb.cells):
            tag = tag_for(cell)
            if tag:
                added.append((i, tag))
                if not check:
                    kept = [
                        t for t in cell.metadata.get("tags", []) if not (tag == "remove-input" and t == "hide-input")
                    ]
                    cell.metadata["tags"] = kept + [tag]
        if added:
            changed += len(added)
            print(f"{path.relative_to(ROOT)}: " + ", ".join(f"cell {i} {tag}" for i, tag in added))
            if not check:
                nbformat.write(nb, path)
    if changed and not check:
        for path in notebook_pages.sync_generated_pages():
            print(f"{path.relative_to(ROOT)}: regenerated from its template")
    print(f"{changed} cell{'s' if changed != 1 else ''} {'would be ' if check else ''}tagged")
    return 1 if check and changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
