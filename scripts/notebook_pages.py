"""The notebooks the book's scripts edit: the pages, with a template standing in for the pages generated from it.

The MPL experiment pages are generated from ``book/templates/mpl_experiment.ipynb``
(``scripts/run_notebooks.py``): a script edits the template, and :func:`sync_generated_pages`
then rewrites the generated pages' cell sources and tags from it, keeping their outputs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import run_notebooks  # noqa: E402

GENERATED = {(ROOT / page).resolve() for page in run_notebooks.PAGES}
TEMPLATES = sorted({(ROOT / template).resolve() for template, _ in run_notebooks.PAGES.values()})


def editable_notebooks():
    """The notebooks a script edits: every page not generated from a template, and the templates."""
    pages = [p for p in sorted((ROOT / "notebooks").glob("*.ipynb")) if p.resolve() not in GENERATED]
    return pages + TEMPLATES


def sync_generated_pages():
    """Rewrite each generated page's cells (source and tags) from its template, keeping the outputs.

    Returns the pages that changed.
    """
    changed = []
    for page, (template, params) in run_notebooks.PAGES.items():
        path = ROOT / page
        committed = nbformat.read(path, as_version=4)
        expected = run_notebooks.generate(ROOT / template, params)
        if committed.metadata.get("dpstack", {}).get("data_absent"):
            expected = run_notebooks.mark_absent_data(expected)
        cells = [c for c in committed.cells if "injected-parameters" not in c.metadata.get("tags", [])]
        if len(cells) != len(expected.cells):
            raise ValueError(f"{page} has other cells than its template: regenerate it with scripts/run_notebooks.py")
        before = [(c.source, list(c.metadata.get("tags", []))) for c in cells]
        for cell, new in zip(cells, expected.cells):
            cell.source = new.source
            if new.metadata.get("tags"):
                cell.metadata["tags"] = list(new.metadata["tags"])
        if before != [(c.source, list(c.metadata.get("tags", []))) for c in cells]:
            nbformat.write(committed, path)
            changed.append(path)
    return changed
