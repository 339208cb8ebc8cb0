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
import concurrent.futures
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


def _merge_streams(outputs):
    """Join consecutive stdout (or stderr) chunks: how prints are chunked depends on timing."""
    merged = []
    for out in outputs:
        if (out.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == out.get("name")):
            merged[-1]["text"] = merged[-1]["text"] + out["text"]
        else:
            merged.append(out)
    return merged


def strip_volatile(nb):
    nb.metadata.pop("papermill", None)
    nb.metadata.get("widgets", None) and nb.metadata.pop("widgets")
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = _merge_streams(cell.outputs)
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
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                        help="notebooks executed at once (default: number of CPUs)")
    args = parser.parse_args(argv)
    os.environ.setdefault("DPSTACK_QUIET", "1")  # no progress bars inside executed notebooks
    paths = [Path(p) for p in args.notebooks] or notebooks_in_toc()
    parameters = {name: parse_value(value) for name, value in args.p}
    t0 = time.perf_counter()
    failed = []
    # One kernel per notebook: separate processes, so running several at once is safe.
    jobs = max(1, min(args.jobs, len(paths)))
    pool = concurrent.futures.ProcessPoolExecutor(jobs) if jobs > 1 else _InProcess()
    with pool:
        futures = {pool.submit(run, path, parameters, args.kernel): path for path in paths}
        for future in concurrent.futures.as_completed(futures):
            name = _display(futures[future])
            try:
                print(f"  {name}: {future.result():.1f} s", flush=True)
            except Exception as exc:  # report every failing notebook, then fail
                failed.append(name)
                print(f"  {name}: FAILED ({type(exc).__name__}: {_last_line(exc)})",
                      flush=True)
    print(f"{len(paths)} notebook(s) in {time.perf_counter() - t0:.1f} s wall time")
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


class _InProcess(concurrent.futures.Executor):
    """Runs each submission at once in this process (``-j 1``: no pickling, plain tracebacks)."""

    def submit(self, fn, *args, **kwargs):
        future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


def _last_line(exc):
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _display(path):
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


if __name__ == "__main__":
    sys.exit(main())
