"""Run one experiment grid of the book from a shell, with its knobs: ``python -m dpstack.companion run``.

Usage::

    python -m dpstack.companion run --list                       # experiments, their pages and knobs
    python -m dpstack.companion run pst_fig1_epsilon --epsilons 0.05 0.1 --repeats 5 --out fig1.csv
    python -m dpstack.companion run mpl_kdd --n-parties 5000 --inv-epsilons 0 1 10 --n-jobs 2

The knobs are those of :mod:`dpstack.companion.live` (the same names as the pages' parameters,
``-`` for ``_``; ``--repeats`` for ``n_repeats``); a knob not given takes the profile's value
(``--profile paper`` by default, the committed one). The table is written as a tidy CSV (floats
as the shortest text that reads back bit for bit) and its provenance as JSON beside it
(``fig1.csv`` → ``fig1.json``: parameters, what differs from the committed profile, the grid, the
seed, code hashes, versions, machine, ``n_jobs``, wall time, the CSV's sha256). Cells are cached
(``$DPSTACK_CACHE``), so an interrupted run resumes where it stopped; ``--no-cache`` computes
everything again. A progress bar shows on a terminal. Unknown options or bad values stop the run
before any work, naming the parameter.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import math
import os
import sys
from pathlib import Path

from dpstack.companion import live, results
from dpstack.companion.parameters import ParameterError

__all__ = ["main", "run_command", "output_paths", "OutputPathError"]

ALIASES = {"n_repeats": "--repeats"}


def _flag(knob):
    return ALIASES.get(knob, "--" + knob.replace("_", "-"))


def _token(text):
    """A command-line value: a number when it reads as one (``inf`` too), else the text."""
    if text.lower() in ("inf", "+inf", "infinity"):
        return math.inf
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return value if isinstance(value, (int, float, bool)) else text


def _parser(name=None):
    parser = argparse.ArgumentParser(
        prog="python -m dpstack.companion run",
        allow_abbrev=False,  # --epsilon must not be read as --epsilons
        description="Run one registered experiment grid with its knobs; write a tidy CSV and its provenance.",
    )
    parser.add_argument("name", nargs="?", help="the experiment (--list names them)")
    parser.add_argument("--list", action="store_true", help="name the experiments, their pages and knobs")
    parser.add_argument("--profile", default="paper", help="grids of the knobs not given (default: paper)")
    parser.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    parser.add_argument("--n-jobs", type=int, default=1, help="cells in parallel (-1: every core; default 1)")
    parser.add_argument("--out", type=Path, help="the CSV to write (default: NAME.csv); the JSON goes beside it")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the cell cache")
    parser.add_argument(
        "--max-cells",
        type=int,
        default=results.MAX_CELLS,
        help=f"refuse a grid of more cells than this, before any runs (default {results.MAX_CELLS:,})",
    )
    if name is not None:
        values = live.profile_values(name)
        for key, knob in live.knobs(name).items():
            many = isinstance(values.get(key), list)
            flags = [_flag(key)] + (["--" + key.replace("_", "-")] if key in ALIASES else [])
            parser.add_argument(
                *flags,
                dest=key,
                nargs="+" if many else None,
                type=_token,
                default=None,
                metavar=key.upper(),
                help=f"{knob.help} (paper profile: {values[key]!r})",
            )
    return parser


def _list():
    pages = live.page_experiments()
    for page, names in pages.items():
        print(f"page {page}:")
        for name in names:
            exp = results.get(name)
            print(f"  {name}: {exp.description}")
            for key, value in live.profile_values(name).items():
                print(f"      {_flag(key):<20} {live.knobs(name)[key].help}; paper profile: {value!r}")
    print("every experiment also takes --profile, --seed, --n-jobs, --out, --no-cache")


def _summary(frame, cells):
    """Mean of the test metrics over repeats, by the grid's varying keys (a glance, not the page's table)."""
    keys = [
        k
        for k in dict.fromkeys(k for c in cells for k in c)
        if k in frame.columns
        and k not in ("repeat", "lam_grid", "eta_grid", "options", "inv_epsilons")
        and frame[k].nunique(dropna=False) > 1
    ]
    metrics = [
        c for c in frame.columns if c.startswith(("auc_test", "test_auc", "accuracy", "test_accuracy", "auc_hl"))
    ]
    if not metrics:
        metrics = [c for c in frame.columns if c.startswith(("auc", "acc"))][:1]
    if not metrics or not keys:
        return None
    return frame.groupby(keys, sort=False, dropna=False)[metrics[:2]].mean()


class OutputPathError(ValueError):
    """``--out`` names a file the run cannot write, or one it must not write over."""


def output_paths(out):
    """The (CSV, JSON) pair ``--out`` names, checked before any work.

    The CSV must end in ``.csv`` (its provenance goes beside it, with ``.json``: a ``.json`` CSV
    would be overwritten by its own provenance), neither may be a folder, and the folder must
    exist or be creatable and be writable.

    Raises
    ------
    OutputPathError
        Naming the path and what is wrong with it.
    """
    out = Path(out)
    if out.suffix.lower() != ".csv":
        raise OutputPathError(
            f"--out {out}: the table is written as CSV and its provenance beside it as "
            f"{out.with_suffix('.json').name}; name a file ending in .csv"
        )
    json_path = out.with_suffix(".json")
    for path in (out, json_path):
        if path.is_dir():
            raise OutputPathError(f"--out {out}: {path} is a folder")
    folder = out.parent if str(out.parent) else Path(".")
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(f"--out {out}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputPathError(f"--out {out}: the folder {existing} is not writable")
    return out, json_path


def run_command(args):
    """``run NAME …``: check, compute (cache on), write CSV + JSON; returns the exit code."""
    name = args.name
    values = {k: v for k, v in vars(args).items() if k in live.knobs(name)}
    values = {k: v for k, v in values.items() if v is not None}
    live.check_knobs(name, {"profile": args.profile, "seed": args.seed, "n_jobs": args.n_jobs, **values})
    out, json_path = output_paths(args.out or Path(f"{name}.csv"))  # before any work
    exp = results.get(name)
    diff = live.differences(name, args.profile, args.seed, **values)
    overrides = live.grid_overrides(name, values)
    n_cells = len(exp.grid(args.profile, **overrides))
    if n_cells > args.max_cells:
        print(
            f"{name}: the grid has {n_cells:,} cells, more than the ceiling of {args.max_cells:,}; "
            f"pass --max-cells {n_cells} to run it anyway",
            file=sys.stderr,
        )
        return 2
    if message := exp.data_status(args.profile, **overrides):  # only the data this grid uses
        print(f"{name}: its data is absent here: {message}", file=sys.stderr)
        return 1
    frame = results.compute(
        name,
        args.profile,
        seed=args.seed,
        n_jobs=args.n_jobs,
        cache=not args.no_cache,
        max_cells=args.max_cells,
        **overrides,
    )
    prov = dict(frame.attrs["provenance"])
    text, dtypes = results.write_csv(frame)
    data = text.encode("utf-8")
    prov.update(
        command="python -m dpstack.companion run " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["run"] else []),
        knobs={k: live.plain(v) for k, v in values.items()},
        differs_from_committed={k: {"this run": a, "committed": b} for k, (a, b) in diff.items()},
        columns=dtypes,
        n_rows=int(len(frame)),
        csv_sha256=hashlib.sha256(data).hexdigest(),
    )
    doc = results.provenance_json(prov)
    try:
        results.write_files([(json_path, doc), (out, data)])
    except OSError as err:
        print(
            f"error: could not write {out} and {json_path} ({err.strerror or err}); "
            "any earlier pair there is unchanged (the cells are cached: the same command resumes)",
            file=sys.stderr,
        )
        return 1
    result = live.LiveResult(frame, name, "live", values, diff, prov["wall_time_s"], args.n_jobs)
    print(result.description.replace("**", "").split(" The verdicts")[0])
    summary = _summary(frame, prov["cells"])
    if summary is not None:
        print(summary.to_string(float_format=lambda v: f"{v:.4f}"))
    print(f"wrote {out} ({len(frame)} rows, {len(prov['cells'])} cells) and {json_path}")
    return 0


def main(argv=None):
    """``python -m dpstack.companion run NAME [knobs …]`` or ``run --list`` (``argv``: what follows ``run``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print("usage: python -m dpstack.companion run NAME [knobs …] | run --list", file=sys.stderr)
        return 2
    first, _ = _parser().parse_known_args(argv)
    if first.list:
        _list()
        return 0
    if first.name is None:
        print("name an experiment (python -m dpstack.companion run --list names them)", file=sys.stderr)
        return 2
    if first.name not in results.experiments():
        print(f"no experiment called {first.name!r}; registered: {', '.join(results.experiments())}", file=sys.stderr)
        return 2
    parser = _parser(first.name)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        valid = [_flag(k) for k in live.knobs(first.name)] + ["--profile", "--seed", "--n-jobs", "--out", "--no-cache"]
        print(
            f"unknown option(s) {' '.join(unknown)} for {first.name}; its options are: {', '.join(valid)}",
            file=sys.stderr,
        )
        return 2
    try:
        return run_command(args)
    except (ParameterError, OutputPathError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
