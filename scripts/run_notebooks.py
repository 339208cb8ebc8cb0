"""Execute the book's notebooks with papermill (in place unless given parameters), then strip volatile metadata.

Usage::

    python scripts/run_notebooks.py                      # every notebook in _toc.yml order, in place
    python scripts/run_notebooks.py --changed            # only those whose inputs changed (make book)
    python scripts/run_notebooks.py --stale              # list those, run nothing (exit 1 if any)
    python scripts/run_notebooks.py notebooks/plr.ipynb  # some of them, in place
    python scripts/run_notebooks.py notebooks/pst_fig1_epsilon.ipynb -p epsilons "[0.05, 0.1]" -p n_repeats 3
                                                         # -> _build/live/pst_fig1_epsilon.ipynb
    python scripts/run_notebooks.py notebooks/plr.ipynb -p n_repeats 30 --output /tmp/plr.ipynb
    python scripts/run_notebooks.py notebooks/plr.ipynb -p profile paper --in-place
    python scripts/run_notebooks.py notebooks/mpl_kdd.ipynb   # generated from its template (PAGES)

Where the executed notebook goes. Without ``-p`` a notebook is executed in place (what ``make
book`` and ``make reproduce`` do; ``--in-place`` says so explicitly). With ``-p`` the committed
notebook is never overwritten: the executed page goes to ``_build/live/<name>.ipynb`` (or the
``--output`` path, a file for one notebook or a folder), and the script prints where; only
``--in-place`` writes it over the committed notebook.

Re-running unchanged code on the same machine leaves ``git status`` clean:
papermill's timestamps and durations are removed, and the cell papermill
injects for ``-p`` parameters is tagged ``remove-cell`` so the rendered page
does not show it. A notebook that raises makes the run exit non-zero.

A ``-p`` name that a notebook's ``parameters`` cell does not assign stops the run before
any kernel starts (exit code 2), listing the notebook's parameters: papermill itself only
warns ("Passed unknown parameter") and would run the page with its defaults. Inside the
kernel, ``dpstack.companion.parameters.check_parameters`` refuses such a name likewise,
for plain ``papermill`` runs.

The executed notebook is written to a uniquely named temporary file beside the
committed one and renamed onto it only when complete, so a failing kernel, an
interrupted write or a concurrent run never leaves a damaged notebook.

Pages generated from a template. Near-identical pages (the MPL experiments on four datasets)
are one template notebook under ``book/templates/`` run with parameters; :data:`PAGES` maps each
generated page to its template and parameters. Running such a page (by name, or with every
notebook) builds it afresh from the template: cells tagged ``only:NAME=VALUE`` are kept only on
the pages whose parameter NAME has that value, the page's parameters become the defaults of its
``parameters`` cell (so the page re-runs alone, and ``-p`` still overrides them), and it is
executed to ``notebooks/<page>.ipynb`` (same names, so links, ``_toc.yml`` and nbval are
unchanged). If the executed page reports absent data (an output whose metadata holds
``{"dpstack": {"data_absent": true}}``), the cells tagged ``needs-data`` are dropped so nothing
dangles under the note, the remaining outputs are excluded from nbval's comparison
(``nbval-ignore-output``: a machine with the data prints something else), and the notebook's
metadata records ``dpstack.data_absent`` (the book marks such pages in its sidebar).

What a page was executed from. A notebook executed in place without parameters records in its
metadata (``dpstack.inputs``) a digest of each thing its outputs can depend on: ``source`` (its own
cells, for a generated page the page generated from its template), ``code`` (every source file of
the dpstack package, by :func:`dpstack.provenance.code_hash`, and the package's data files),
``results`` (every file under ``results/``), ``book`` (``_toc.yml``, ``_config.yml`` and the
notebooks' titles, which pages quote), ``data`` (the names and sizes of the files in the data home)
and ``libraries`` (the versions of Python and the numerical and plotting libraries). ``--changed``
executes only the notebooks for which one of these differs and says which; ``--stale`` lists them.
The numerical platform (BLAS kernels, the solver's pass) is not an input here: on another platform
the committed outputs are those nbval compares a re-execution with, within its tolerance.

Output: one line per notebook (ok / FAILED, time), a progress bar on a terminal,
then a summary. The kernels' start-up and shut-down chatter on stderr (ipykernel's
"Kernel is running over TCP without encryption" warning, its "KeyboardInterrupt
caught in kernel" when the kernel is stopped) is dropped; anything else a kernel
writes to stdout/stderr is printed under the notebook's line.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import papermill

ROOT = Path(__file__).resolve().parents[1]


#: Generated pages: notebook → (template, parameters). Edit the template, not the generated page.
PAGES = {
    f"notebooks/mpl_{dataset}.ipynb": ("book/templates/mpl_experiment.ipynb", {"dataset": dataset})
    for dataset in ("har", "kdd", "url", "mnist10")
}


def template_of(path):
    """(template path, parameters) if ``path`` is a generated page, else None."""
    path = Path(path).resolve()
    for page, (template, params) in PAGES.items():
        if (ROOT / page).resolve() == path:
            return ROOT / template, dict(params)
    return None


def _only_tags(cell):
    out = []
    for tag in cell.metadata.get("tags", []):
        if tag.startswith("only:") and "=" in tag:
            name, _, value = tag[5:].partition("=")
            out.append((name, value))
    return out


def generate(template, parameters):
    """The page's source notebook: ``template`` with its ``only:`` cells selected and its defaults set.

    A cell tagged ``only:NAME=VALUE`` (several such tags: any of them) is kept when
    ``str(parameters[NAME]) == VALUE``; the assignments of the ``parameters`` cell to a name in
    ``parameters`` get the page's value (the comment after it is kept).
    """
    nb = nbformat.read(template, as_version=4)
    kept = []
    for cell in nb.cells:
        only = _only_tags(cell)
        if only and not any(name in parameters and str(parameters[name]) == value for name, value in only):
            continue
        cell.metadata["tags"] = [t for t in cell.metadata.get("tags", []) if not t.startswith("only:")]
        if not cell.metadata["tags"]:
            cell.metadata.pop("tags")
        kept.append(cell)
    nb.cells = kept
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"{template} must have exactly one cell tagged 'parameters'")
    lines = cells[0].source.splitlines()
    missing = set(parameters)
    for i, line in enumerate(lines):
        m = re.match(r"^(\w+)(\s*=\s*)(.*?)(\s+#.*)?$", line)
        if m and m.group(1) in parameters:
            lines[i] = f"{m.group(1)}{m.group(2)}{parameters[m.group(1)]!r}{m.group(4) or ''}"
            missing.discard(m.group(1))
    if missing:
        raise ValueError(f"{template}: the parameters cell does not assign {sorted(missing)}")
    page = next((Path(p).stem for p, (t, ps) in PAGES.items() if ROOT / t == Path(template) and ps == parameters), None)
    cells[0].source = "\n".join(stored_values(lines, page) if page else lines)
    return nb


def stored_values(lines, page):
    """The parameters cell's ``lines`` with each grid parameter's comment ending in "stored: <value>".

    A template serves several pages whose stored results differ (the MPL pages' grids), so the value
    a parameter left at None stands for is written per page, from the registry of results.
    """
    from dpstack.companion import live

    if page not in live.page_experiments():  # a page without registered grids keeps its comments
        return lines
    mapping = live.page_knobs(page)
    out = []
    for line in lines:
        m = re.match(r"^(\w+\s*=\s*None\s*#\s*)(.*?)(?:; stored: .*)?$", line)
        name = line.split("=")[0].strip()
        if m and name in mapping:
            exp, key = mapping[name]
            value = live.short_text(live.plain(live.knobs(exp)[key].profile_value(live.COMMITTED_PROFILE)), limit=5)
            line = f"{m.group(1)}{m.group(2)}; stored: {value}"
        out.append(line)
    return out


def _data_absent(nb):
    return any(
        out.get("metadata", {}).get("dpstack", {}).get("data_absent")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )


def mark_absent_data(nb):
    """Drop ``needs-data`` cells, exclude the rest from nbval's comparison, record it in the metadata."""
    nb.cells = [c for c in nb.cells if "needs-data" not in c.metadata.get("tags", [])]
    for cell in nb.cells:
        if cell.cell_type == "code":
            tags = cell.metadata.get("tags", [])
            if "nbval-ignore-output" not in tags:
                cell.metadata["tags"] = tags + ["nbval-ignore-output"]
    nb.metadata.setdefault("dpstack", {})["data_absent"] = True
    return nb


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
        if (
            out.get("output_type") == "stream"
            and merged
            and merged[-1].get("output_type") == "stream"
            and merged[-1].get("name") == out.get("name")
        ):
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


def declared_parameters(path):
    """The names the ``parameters`` cell of ``path`` assigns (of its template, for a generated page)."""
    generated = template_of(path)
    nb = generate(*generated) if generated else nbformat.read(path, as_version=4)
    names = []
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.Assign):
                    names += [t.id for t in node.targets if isinstance(t, ast.Name) and t.id not in names]
    return names


def unknown_parameters(paths, parameters):
    """One line per notebook that does not declare every name in ``parameters`` (papermill would only warn)."""
    problems = []
    for path in paths:
        declared = declared_parameters(path)
        unknown = [name for name in parameters if name not in declared]
        if unknown:
            problems.append(
                f"{_display(path)}: unknown parameter{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(map(repr, unknown))}; its parameters are: {', '.join(declared) or '(none)'}"
            )
    return problems


def parse_value(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


# Lines the kernels print on their own stderr/stdout (inherited from this process) that say
# nothing about the notebook: ipykernel's kernelapp.py warns on every start that the default
# TCP transport is unencrypted (the kernel listens on 127.0.0.1 only), and kernelbase.py /
# eventloops.py log "KeyboardInterrupt caught in kernel" when the kernel is interrupted
# while being shut down; pydevd warns about frozen modules when the debugger is loaded.
NOISE = (
    re.compile(r"Kernel is running over TCP without encryption"),
    re.compile(r"KeyboardInterrupt caught in kernel"),
    re.compile(
        r"^\d+\.\d+s - (Debugger warning: It seems that frozen modules|Make sure|Note: Debugging will"
        r"|to python to disable|Set PYDEVD_DISABLE_FILE_VALIDATION)"
    ),
    re.compile(r"^\s*$"),
)


def filter_noise(text):
    """The lines of ``text`` that are not known kernel chatter (see :data:`NOISE`)."""
    return "".join(line for line in text.splitlines(keepends=True) if not any(p.search(line) for p in NOISE))


@contextlib.contextmanager
def _captured_output():
    """Capture file descriptors 1 and 2 (the kernel inherits them) into a temporary file."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        box = {"text": ""}
        try:
            yield box
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            sink.seek(0)
            box["text"] = sink.read().decode("utf-8", "replace")


#: The suffix of this script's temporary files beside a page: not ``.ipynb``, so that a run killed
#: mid-write never leaves a file that ``pytest --nbval notebooks`` would collect as a notebook.
_TEMP_SUFFIX = ".tmp"


def _temp_beside(path):
    """A unique temporary file in ``path``'s folder, named ``.<name>.<host>.<pid>.<random>.tmp`` (the
    project's naming, so :func:`dpstack._files.remove_orphans` can tell a dead writer's)."""
    from dpstack._files import temp_suffix

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}", suffix=temp_suffix())
    os.close(fd)
    return Path(tmp)


#: The libraries whose versions a page's outputs can depend on (numbers, tables, figures).
LIBRARIES = ("numpy", "scipy", "sklearn", "pandas", "matplotlib", "joblib", "dp_accounting")


def _digest(items):
    """sha256 (hex) of a JSON-serialisable value, keys sorted."""
    return hashlib.sha256(json.dumps(items, sort_keys=True, default=str).encode()).hexdigest()


def _file_digests(folder, patterns=("*",)):
    """``{relative path: sha256 of the bytes}`` of the files under ``folder`` matching ``patterns``."""
    folder = Path(folder)
    files = sorted({p for pattern in patterns for p in folder.rglob(pattern) if p.is_file()})
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in files
        if "__pycache__" not in p.parts and not p.name.startswith(".") and p.suffix not in (".pyc", ".so")
    }


def _code_digest():
    """Every dpstack source file by :func:`dpstack.provenance.code_hash`, and the package's data files."""
    from dpstack.provenance import code_hash

    package = ROOT / "dpstack"
    data = _file_digests(package)
    code = {rel: code_hash(package / rel) for rel in data if rel.endswith((".py", ".c"))}
    other = {rel: value for rel, value in data.items() if not rel.endswith((".py", ".c"))}
    return _digest([code, other])


def _titles():
    """Every notebook's title line (pages quote each other's titles)."""
    out = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        lines = (
            line for c in nb["cells"] if c["cell_type"] == "markdown" for line in "".join(c["source"]).splitlines()
        )
        out[path.name] = next((line for line in lines if line.startswith("# ")), "")
    return out


def _data_listing():
    """(name, size) of every file in the data home (what a page can load, or finds absent)."""
    from dpstack.datasets import data_home

    home = Path(data_home())
    if not home.is_dir():
        return []
    return sorted(
        (p.relative_to(home).as_posix(), p.stat().st_size)
        for p in home.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(home).parts)
    )


def _library_versions():
    import importlib
    import platform

    out = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            out[name] = importlib.import_module(name).__version__
        except (ImportError, AttributeError):
            out[name] = None
    return out


@functools.lru_cache(maxsize=1)
def _shared_inputs(stamp):
    """The inputs every page shares, memoised on ``stamp`` (a listing of the project's files' mtimes)."""
    return {
        "code": _code_digest(),
        "results": _digest(_file_digests(ROOT / "results")),
        "book": _digest([_file_digests(ROOT, ("_toc.yml", "_config.yml")), _titles()]),
        "data": _digest(_data_listing()),
        "libraries": _digest(_library_versions()),
    }


def _stamp():
    """(path, size, mtime) of every file the shared inputs read: what invalidates their memo."""
    out = [os.environ.get("DPSTACK_DATA", "")]
    for folder in (ROOT / "dpstack", ROOT / "results", ROOT / "notebooks"):
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                st = p.stat()
                out.append((str(p), st.st_size, st.st_mtime_ns))
    for name in ("_toc.yml", "_config.yml"):
        p = ROOT / name
        out.append((name, p.stat().st_mtime_ns) if p.exists() else (name, None))
    return tuple(out)


def source_digest(path):
    """Digest of the notebook's cells (type, source, tags) — of the page generated from its template."""
    generated = template_of(path)
    nb = generate(*generated) if generated else nbformat.read(path, as_version=4)
    cells = [(c.cell_type, c.source, sorted(c.metadata.get("tags", []))) for c in nb.cells]
    return _digest(cells)


def inputs(path):
    """``{component: digest}`` of everything the outputs of notebook ``path`` can depend on (see the module)."""
    return {"source": source_digest(path), **_shared_inputs(_stamp())}


def recorded_inputs(path):
    """The inputs recorded when ``path`` was last executed in place (empty if none)."""
    nb = json.loads(Path(path).read_text())
    return nb.get("metadata", {}).get("dpstack", {}).get("inputs", {})


def changed_inputs(path, components=None):
    """The components (``source``, ``code``, …) whose digest differs from the one ``path`` recorded.

    ``components`` limits the comparison (e.g. to those that do not depend on the machine).
    """
    now, then = inputs(path), recorded_inputs(path)
    keys = components or sorted(now)
    return [k for k in keys if now.get(k) != then.get(k)]


def run(path, parameters, kernel, capture=False, output=None):
    """Execute ``path`` and write the cleaned result atomically; returns (seconds, kernel output).

    The result replaces ``path`` itself, or goes to ``output`` when given (its folder is created).
    papermill reads and writes in a private temporary folder; the cleaned notebook goes to a
    temporary file beside the destination (named ``….tmp``, never ``….ipynb``), renamed onto the
    destination (``os.replace``) only once fully written. On any failure the destination is
    untouched and the temporary files are removed; those of a killed run are removed by the next.
    """
    from dpstack._files import remove_orphans

    path = Path(path).resolve()
    destination = Path(output).resolve() if output is not None else path
    destination.parent.mkdir(parents=True, exist_ok=True)
    remove_orphans(destination.parent, f".{destination.name}*{_TEMP_SUFFIX}")
    generated = template_of(path)
    private = Path(tempfile.mkdtemp(prefix="dpstack-run-notebooks-"))
    executed = private / f"{path.stem}.running.ipynb"
    cleaned = _temp_beside(destination)
    source = private / f"{path.stem}.source.ipynb" if generated else path
    t0 = time.perf_counter()
    box = {"text": ""}
    # What the page is executed from (recorded only for a page executed in place without parameters).
    record = inputs(path) if destination == path and not parameters else None
    try:
        if generated:
            nbformat.write(generate(*generated), source)
        with _captured_output() if capture else contextlib.nullcontext(box) as box:
            papermill.execute_notebook(
                str(source),
                str(executed),
                parameters=parameters or None,
                kernel_name=kernel,
                cwd=str(path.parent),
                progress_bar=False,
                log_output=False,
            )
        nb = strip_volatile(nbformat.read(executed, as_version=4))
        if generated and _data_absent(nb):
            nb = mark_absent_data(nb)
        if record is not None:
            nb.metadata.setdefault("dpstack", {})["inputs"] = record
        elif "inputs" in nb.metadata.get("dpstack", {}):  # the source's record does not describe this run
            del nb.metadata["dpstack"]["inputs"]
        nbformat.write(nb, cleaned)
        os.replace(cleaned, destination)
    except BaseException as exc:
        exc.kernel_output = filter_noise(box["text"])
        raise
    finally:
        cleaned.unlink(missing_ok=True)
        shutil.rmtree(private, ignore_errors=True)
    return time.perf_counter() - t0, filter_noise(box["text"])


def _run_in_worker(path, parameters, kernel, output=None):
    return run(path, parameters, kernel, capture=True, output=output)


LIVE_DIR = ROOT / "_build" / "live"


def destinations(paths, parameters, output=None, in_place=False):
    """Where each executed notebook goes: ``{path: destination or None (in place)}``.

    In place without parameters, or with ``in_place``; else ``output`` (a file for one notebook,
    otherwise a folder) or ``_build/live/<name>.ipynb``: a run with parameters never overwrites
    the committed notebook unless asked.
    """
    if in_place and output is not None:
        raise ValueError("--in-place and --output exclude each other")
    if in_place or (not parameters and output is None):
        return {path: None for path in paths}
    if output is not None:
        output = Path(output)
        if output.suffix == ".ipynb":
            if len(paths) != 1:
                raise ValueError(
                    f"--output {output} is one notebook, but {len(paths)} notebooks are run: give a folder"
                )
            where = {paths[0]: output}
        else:
            where = {path: output / Path(path).name for path in paths}
        for path, dest in where.items():
            if Path(dest).resolve() == Path(path).resolve():
                raise ValueError(
                    f"--output {output} would write over the committed notebook {path}; "
                    "use --in-place to do that on purpose, or name another file or folder"
                )
        return where
    return {path: LIVE_DIR / Path(path).name for path in paths}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="default: every notebook in _toc.yml")
    parser.add_argument(
        "-p",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="papermill parameter (value parsed as a Python literal)",
    )
    parser.add_argument(
        "--output",
        help="where the executed notebook goes (a .ipynb file for one notebook, else a folder); "
        "default with -p: _build/live/<name>.ipynb",
    )
    parser.add_argument(
        "--in-place",
        action="store_true",
        help="write the executed notebook over the committed one (the default only without -p)",
    )
    parser.add_argument(
        "--changed",
        action="store_true",
        help="execute only the notebooks whose inputs (source, dpstack code, results, book, data, libraries) "
        "differ from those recorded when they were last executed in place",
    )
    parser.add_argument(
        "--stale",
        action="store_true",
        help="list the notebooks --changed would execute and why; execute nothing (exit 1 if any)",
    )
    parser.add_argument("--kernel", default="python3")
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="notebooks executed at once (default: number of CPUs)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("DPSTACK_QUIET", "1")  # no progress bars inside executed notebooks
    paths = [Path(p) for p in args.notebooks] or notebooks_in_toc()
    parameters = {name: parse_value(value) for name, value in args.p}
    problems = unknown_parameters(paths, parameters) if parameters else []
    if problems:  # before any kernel starts: papermill would warn and run the page with its defaults
        print("\n".join(problems), file=sys.stderr)
        return 2
    try:
        where = destinations(paths, parameters, args.output, args.in_place)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if args.changed or args.stale:
        if parameters or args.output is not None:
            print("--changed and --stale compare the committed notebooks: give no -p or --output", file=sys.stderr)
            return 2
        why = {path: changed_inputs(path) for path in paths}
        stale = [path for path in paths if why[path]]
        for path in stale:
            print(f"stale   {_display(path)}: {', '.join(why[path])} changed", flush=True)
        print(f"{len(paths) - len(stale)} of {len(paths)} notebook(s) up to date with their inputs", flush=True)
        if args.stale:
            return 1 if stale else 0
        paths = stale
        if not paths:
            return 0
    t0 = time.perf_counter()
    failed = []
    # One kernel per notebook: separate processes, so running several at once is safe.
    jobs = max(1, min(args.jobs, len(paths)))
    pool = concurrent.futures.ProcessPoolExecutor(jobs) if jobs > 1 else _InProcess()
    width = max((len(_display(p)) for p in paths), default=0)
    bar = _progress(len(paths))
    with pool, bar:
        futures = {pool.submit(_run_in_worker, path, parameters, args.kernel, where[path]): path for path in paths}
        for i, future in enumerate(concurrent.futures.as_completed(futures), 1):
            name = _display(futures[future])
            try:
                seconds, extra = future.result()
                _emit(bar, f"[{i:>{len(str(len(paths)))}}/{len(paths)}] ok      {name:<{width}}  {seconds:6.1f} s")
                if where[futures[future]] is not None:
                    _emit(
                        bar, f"    written to {_display(where[futures[future]])} (the committed notebook is unchanged)"
                    )
            except Exception as exc:  # noqa: BLE001 - report every failing notebook, then fail
                failed.append((name, exc))
                extra = getattr(exc, "kernel_output", "")
                _emit(
                    bar,
                    f"[{i:>{len(str(len(paths)))}}/{len(paths)}] FAILED  {name:<{width}}  "
                    f"({type(exc).__name__}: {_last_line(exc)})",
                )
            if extra.strip():
                _emit(
                    bar, "    kernel output:\n" + "".join("    | " + line for line in extra.splitlines(True)).rstrip()
                )
            bar.update(1)
    elapsed = time.perf_counter() - t0
    print(
        f"{len(paths) - len(failed)} of {len(paths)} notebook(s) executed in {elapsed:.0f} s wall time"
        + (f"; {len(failed)} FAILED" if failed else ""),
        flush=True,
    )
    if failed:
        for name, exc in failed:
            print(f"\n--- {name} failed:\n{_error_tail(exc)}", file=sys.stderr)
        print("failed: " + ", ".join(name for name, _ in failed), file=sys.stderr)
        return 1
    return 0


def _progress(total):
    """A tqdm bar over the notebooks on a terminal; nothing otherwise (logs, CI)."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc="notebooks",
        unit="nb",
        leave=False,
        file=sys.stderr,
        disable=not (sys.stderr.isatty() and not os.environ.get("CI")),
        bar_format="{desc}: {n}/{total} |{bar}| {elapsed}",
    )


def _emit(bar, line):
    bar.write(line, file=sys.stdout) if not bar.disable else print(line, flush=True)


def _error_tail(exc, lines=25):
    """The end of the error: for a failing cell, papermill's message holds the cell's traceback."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).rstrip()
    kept = text.splitlines()[-lines:]
    return "\n".join(kept)


class _InProcess(concurrent.futures.Executor):
    """Runs each submission at once in this process (``-j 1``: no pickling, plain tracebacks)."""

    def submit(self, fn, *args, **kwargs):
        future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - a Future carries any exception to its caller
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
