"""Write each notebook's code cells to one Python file, to look for code repeated between notebooks.

    python scripts/notebook_code.py OUTDIR [notebooks/*.ipynb]

Each notebook ``notebooks/X.ipynb`` becomes ``OUTDIR/X.py``: its code cells in order, each headed
by a comment ``# cell N``. Point a duplicate finder at OUTDIR; ``tests/test_notebook_duplicates.py``
does the same check itself on every test run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def code_cells(path):
    """The sources of the code cells of notebook ``path``, in order."""
    notebook = nbformat.read(path, as_version=4)
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    paths = [Path(p) for p in argv[1:]] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for path in paths:
        cells = code_cells(path)
        text = "\n\n".join(f"# cell {i}\n{source}" for i, source in enumerate(cells))
        (out / f"{path.stem}.py").write_text(text + "\n", encoding="utf-8")
    print(f"{len(paths)} notebooks written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
