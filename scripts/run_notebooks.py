"""Execute the book's notebooks in place with papermill, then strip volatile metadata.

Usage::

    python scripts/run_notebooks.py                      # every notebook in _toc.yml order
    python scripts/run_notebooks.py notebooks/plr.ipynb  # some of them
    python scripts/run_notebooks.py notebooks/plr.ipynb -p n_repeats 30 -p profile paper

Re-running unchanged code on the same machine leaves ``git status`` clean:
papermill's timestamps and durations are removed, and the cell papermill
injects for ``-p`` parameters is tagged ``remove-cell`` so the rendered page
does not show it. A notebook that raises stops the run with a non-zero exit.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import sys
import time
from pathlib import Path

import nbformat
import papermill

ROOT = Path(__file__).resolve().parents[1]


def notebooks_in_toc():
    """Notebook paths listed in _toc.yml, in order (no YAML dependency needed)."""
    text = (ROOT / "_toc.yml").read_text()
    found = []
    for m in re.finditer(r"file:\s*(\S+)", text):
        path = ROOT / (m.group(1) + ("" if m.group(1).endswith(".ipynb") else ".ipynb"))
        if path.exists() and path not in found:
            found.append(path)
    return found


def strip_volatile(nb):
    nb.metadata.pop("papermill", None)
    nb.metadata.get("widgets", None) and nb.metadata.pop("widgets")
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = tags + ["remove-cell"]
    return nb


def parse_value(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def run(path, parameters, kernel):
    path = Path(path).resolve()
    tmp = path.with_suffix(".running.ipynb")
    t0 = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(path), str(tmp), parameters=parameters or None, kernel_name=kernel,
            cwd=str(path.parent), progress_bar=False, log_output=False,
        )
        nb = strip_volatile(nbformat.read(tmp, as_version=4))
        nbformat.write(nb, path)
    finally:
        tmp.unlink(missing_ok=True)
    return time.perf_counter() - t0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="default: every notebook in _toc.yml")
    parser.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                        help="papermill parameter (value parsed as a Python literal)")
    parser.add_argument("--kernel", default="python3")
    args = parser.parse_args(argv)
    os.environ.setdefault("DPSTACK_QUIET", "1")  # no progress bars inside executed notebooks
    paths = [Path(p) for p in args.notebooks] or notebooks_in_toc()
    parameters = {name: parse_value(value) for name, value in args.p}
    total = 0.0
    for path in paths:
        print(f"executing {path.relative_to(ROOT) if path.is_absolute() else path} ...", flush=True)
        seconds = run(path, parameters, args.kernel)
        total += seconds
        print(f"  done in {seconds:.1f} s", flush=True)
    print(f"{len(paths)} notebook(s) in {total:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
