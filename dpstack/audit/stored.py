"""The audit chapter's tables, computed once and stored as plain data with their provenance.

The audit's law test needs at least 1,000 real fits per case; the tables of
:func:`~dpstack.audit.audit_mechanisms`, :func:`~dpstack.audit.audit_mutants`,
:func:`~dpstack.audit.power_table` and :func:`scale_power_table` (how often ``audit_estimator``
catches noise scaled by c at each profile) take minutes, too long for a chapter that is
re-executed with the book. They are computed once (``python -m dpstack.companion audit-tables``) and
written as CSV files next to a JSON provenance record: the parameters and seed, the code hash of
every source file the numbers depend on (:func:`dpstack.provenance.code_hash`: a Python file's
syntax tree without docstrings, so an edit of the documentation does not make the numbers stale;
the compiled pass's C source whole), the date, the machine and its numerical platform, the wall time, and a sha256 of
each CSV. Nothing stored can execute when read (CSV and JSON only, no pickle).

:func:`load_tables` refuses a CSV whose sha256 differs from the record (:class:`StoredTablesError`)
or parameters other than the ones asked for, and reports the tables as *stale* (a
:class:`StaleTablesWarning` naming the files) when any source file changed since they were
computed — then they must be recomputed before they are shown as the current code's results.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import io
import json
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from dpstack import __version__, solvers
from dpstack.audit.report import PROFILES, audit_mechanisms, audit_mutants, power_table
from dpstack.audit.suite import audit_cases, scale_power
from dpstack.provenance import code_hashes as code_hashes_of
from dpstack.provenance import numerical_platform

__all__ = [
    "TABLES",
    "DEFAULT_DIR",
    "StoredTablesError",
    "StaleTablesWarning",
    "code_files",
    "code_hashes",
    "scale_power_table",
    "compute_tables",
    "save_tables",
    "has_tables",
    "load_tables",
    "main",
]

#: the stored tables, in the order the chapter shows them
TABLES = ("mechanisms", "mutants", "power", "scale_power")
#: where the chapter's tables are kept
DEFAULT_DIR = Path(__file__).resolve().parent / "results"
_RECORD = "provenance.json"
_PACKAGE = Path(__file__).resolve().parent.parent
#: the modules (relative to the package) whose code produces the numbers
_CODE = (
    "audit/*.py",
    "linear.py",
    "mechanisms.py",
    "solvers.py",
    "_fused.c",
    "stacking.py",
    "transfer.py",
    "base.py",
    "accounting.py",
    "_validation.py",
    "multiparty/*.py",
)


class StoredTablesError(ValueError):
    """A stored table is missing, fails its sha256, or was computed with other parameters."""


class StaleTablesWarning(UserWarning):
    """The code that computed a stored table has changed since."""


def code_files():
    """The source files the stored numbers depend on, relative to the package root (sorted)."""
    files = set()
    for pattern in _CODE:
        files.update(p.relative_to(_PACKAGE).as_posix() for p in _PACKAGE.glob(pattern))
    return sorted(files)


def code_hashes():
    """The code hash (:func:`dpstack.provenance.code_hash`) of every file of :func:`code_files`."""
    return code_hashes_of([_PACKAGE / name for name in code_files()], _PACKAGE)


def _csv(table):
    buf = io.StringIO()
    table.to_csv(buf, index=False, float_format="%.17g")
    return buf.getvalue()


#: the power of audit_estimator against noise scaled by c: (profile of audit_estimator, factors);
#: "power" is stated for c = 0.8 and "thorough" for c = 0.9, "default" is the baseline
SCALE_POWER_RUNS = (("default", (0.8, 0.9)), ("power", (0.8,)), ("thorough", (0.9,)))


def scale_power_table(epsilon=1.0, n_repeats=10, runs=SCALE_POWER_RUNS):
    """:func:`~dpstack.audit.suite.scale_power` at each (profile, factors) of ``runs``, one table.

    The audits' seeds are 0 … ``n_repeats`` − 1 (the seed of the stored tables does not enter)."""
    cases = audit_cases(epsilon=epsilon)
    return pd.concat([scale_power(factors, profile, n_repeats, cases) for profile, factors in runs], ignore_index=True)


def compute_tables(profile="quick", epsilon=1.0, seed=0):
    """The four tables of the chapter, freshly computed. Returns a dict name → DataFrame.

    ``scale_power`` (about a quarter of an hour on two cores) is computed with one audit per case at
    the default size only for ``profile="smoke"``."""

    smoke = profile == "smoke"
    return {
        "mechanisms": audit_mechanisms(profile=profile, epsilon=epsilon, random_state=seed),
        "mutants": audit_mutants(profile=profile, epsilon=epsilon, random_state=seed),
        "power": power_table(profile=profile, epsilon=epsilon, random_state=seed),
        "scale_power": scale_power_table(
            epsilon, n_repeats=1 if smoke else 10, runs=(("default", (0.8,)),) if smoke else SCALE_POWER_RUNS
        ),
    }


def save_tables(tables, parameters, wall_time, directory=DEFAULT_DIR):
    """Write each table as ``<name>.csv`` and the provenance record. Returns the record."""

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, table in tables.items():
        text = _csv(table)
        (directory / f"{name}.csv").write_text(text)
        files[name] = {
            "file": f"{name}.csv",
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "rows": int(len(table)),
        }
    record = {
        "what": "tables of the audit chapter (dpstack.audit.stored)",
        "parameters": dict(parameters, **{"profile settings": PROFILES[parameters["profile"]]}),
        "seed": parameters["seed"],
        "code_sha256": code_hashes(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "pandas": pd.__version__,
            "fused_pass": bool(solvers.FUSED),
            "numerical_platform": numerical_platform(),
        },
        "dpstack_version": __version__,
        "wall_time_seconds": round(float(wall_time), 1),
        "tables": files,
    }
    (directory / _RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def has_tables(profile="quick", epsilon=1.0, seed=0, directory=DEFAULT_DIR):
    """Are tables stored for these parameters? (Their integrity is checked by :func:`load_tables`.)"""
    try:
        record = json.loads((Path(directory) / _RECORD).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return False
    params = record.get("parameters", {}) if isinstance(record, dict) else {}
    return (params.get("profile"), params.get("epsilon"), params.get("seed")) == (profile, float(epsilon), int(seed))


def load_tables(profile="quick", epsilon=1.0, seed=0, directory=DEFAULT_DIR):
    """The stored tables, checked.

    Returns
    -------
    tables : dict name → DataFrame
    record : dict, the provenance record
    stale : list of str — the source files changed (or added, or removed) since the tables were
        computed; empty when they are current. A non-empty list also raises a
        :class:`StaleTablesWarning`.

    Raises
    ------
    StoredTablesError
        No record, a CSV missing or not matching its sha256, or parameters other than
        (``profile``, ``epsilon``, ``seed``).
    """
    directory = Path(directory)
    try:
        record = json.loads((directory / _RECORD).read_text())
    except FileNotFoundError:
        raise StoredTablesError(f"{directory}: no stored tables ({_RECORD} missing)") from None
    except json.JSONDecodeError as exc:
        raise StoredTablesError(f"{directory / _RECORD}: not JSON ({exc})") from None
    asked = {"profile": profile, "epsilon": float(epsilon), "seed": int(seed)}
    stored = {k: record.get("parameters", {}).get(k) for k in asked}
    if stored != asked:
        raise StoredTablesError(f"{directory}: the stored tables were computed with {stored}, not {asked}")
    tables = {}
    for name in TABLES:
        entry = record.get("tables", {}).get(name)
        if entry is None:
            raise StoredTablesError(f"{directory}: no table {name!r} in the record")
        path = directory / entry["file"]
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise StoredTablesError(f"{path}: missing") from None
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise StoredTablesError(f"{path}: the content does not match its sha256 (corrupted or edited)")
        tables[name] = pd.read_csv(io.StringIO(data.decode()))
    now, then = code_hashes(), record.get("code_sha256", {})
    stale = sorted(name for name in set(now) | set(then) if now.get(name) != then.get(name))
    if stale:
        warnings.warn(
            f"the stored audit tables were computed on {record.get('date')} with other code: "
            f"{', '.join(stale)} changed since; recompute them with python -m dpstack.companion audit-tables",
            StaleTablesWarning,
            stacklevel=2,
        )
    return tables, record, stale


def main(argv=None):
    """``python -m dpstack.companion audit-tables [--profile quick] [--epsilon 1] [--seed 0] [--out DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m dpstack.companion audit-tables", description=main.__doc__)
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(DEFAULT_DIR))
    args = parser.parse_args(argv)
    start = time.perf_counter()
    tables = compute_tables(args.profile, args.epsilon, args.seed)
    wall = time.perf_counter() - start
    record = save_tables(tables, {"profile": args.profile, "epsilon": args.epsilon, "seed": args.seed}, wall, args.out)
    print(f"wrote {', '.join(sorted(record['tables']))} to {args.out} in {wall:.0f} s")
    return record
