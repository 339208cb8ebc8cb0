"""The committed verdicts: every claim judged once on the committed results, so that a page renders without judging.

Judging the papers' claims (:func:`dpstack.companion.verdicts.judge`, the sign-flip tests, Holm,
every protocol variant re-judged for the robust column) takes minutes; a page's verdict box
needs a few rows of it. ``results/verdicts.json`` holds the whole judged table, written by
:func:`write` (``python -m dpstack.companion verdicts``, run by ``make reproduce`` after the
results), and :func:`load` reads it back as the frame :func:`dpstack.companion.show.judged`
would compute, float for float.

**Staleness without computing.** The store records what its verdicts were judged from:

* ``code``: the judging code, as ``{file: code hash}`` (:func:`dpstack.provenance.code_hash`) —
  the import closure of the claims, the rule and the verdict modules, less the files any
  committed result's provenance records (the computing code, whose changes make the results
  stale, which their own check catches);
* ``results``: ``{result name: sha256 of its table and of its provenance}`` for every committed
  result a claim or a protocol variant reads.

:func:`load` re-hashes only those files (no import, no table parsed) and returns ``None`` with
the reason (:func:`freshness`) when any differs, a file is gone or a new result has been
committed; the caller then judges anew. ``tests/test_verdict_store.py`` fails when the committed
store is stale or differs from a fresh judgement.

The store is JSON (floats written by Python's ``repr``, so they read back bit for bit; NaN and
infinities as Python's ``json`` writes them); nothing in it executes when loaded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from dpstack.companion import results
from dpstack.companion.registry import papers
from dpstack.companion.rule import Verdict
from dpstack.companion.variants import protocol_results
from dpstack.companion.verdicts import claim, claims, committed_frames, judge, robust_changes, robust_column
from dpstack.provenance import code_hash, module_closure, module_file

__all__ = ["STORE_NAME", "store_path", "judge_with_robust", "build", "write", "freshness", "load", "main"]

#: the store's file name inside the results folder
STORE_NAME = "verdicts.json"
#: the modules whose import closure judges the claims (the claims modules are added per paper)
JUDGING_MODULES = ("dpstack.companion.verdicts", "dpstack.companion.variants", "dpstack.companion.rule")
_FORMAT = 1
_PROFILE = "paper"


def store_path(root=None):
    """``results/verdicts.json`` (in ``root`` when given, else :func:`dpstack.companion.results.results_dir`)."""
    return Path(root if root is not None else results.results_dir()) / STORE_NAME


def _project_root():
    return Path(results.__file__).resolve().parents[2]


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _result_files(name, root):
    folder = Path(root) / name
    return folder / f"{_PROFILE}.csv", folder / f"{_PROFILE}.json"


def _results_key(names, root):
    """``{name: {"csv": sha256, "json": sha256}}`` of the committed results among ``names``."""
    out = {}
    for name in sorted(names):
        csv, prov = _result_files(name, root)
        if csv.exists() and prov.exists():
            out[name] = {"csv": _sha256(csv), "json": _sha256(prov)}
    return out


def _judging_code(root):
    """``{file: code hash}`` of the judging code: the closure of the judging modules less the results' computing code."""
    project = _project_root()
    roots = (*JUDGING_MODULES, *(f"{p.__name__}.claims" for p in papers()))
    computing = set()  # every committed result's recorded code, the ones no claim reads included
    for prov in sorted(Path(root).glob(f"*/{_PROFILE}.json")):
        computing |= set(json.loads(prov.read_text(encoding="utf-8")).get("code", {}))
    files = {module_file(m).resolve().relative_to(project).as_posix() for m in module_closure(*roots)}
    return {f: code_hash(project / f) for f in sorted(files - computing)}


def _read_names():
    """Every result a judged claim or one of its protocol variants reads (committed or not)."""
    names = {c.result for c in claims(judged=True)}
    for name in sorted(names):
        names |= set(protocol_results(name))
    return names


def judge_with_robust(claim_list=None, frames=None):
    """The claims in ``claim_list`` (default: every judged claim) judged on ``frames`` (default: the committed
    tables they read), with the robust column: the frame :func:`load` returns, computed (``None``: every
    claim, those not judged included, as :func:`~dpstack.companion.verdicts.judge` takes it)."""
    if frames is None:
        reading = claims(judged=True) if claim_list is None else claim_list
        frames = committed_frames(tuple(sorted({c.result for c in reading if c.kind != "not judged"})))
    j = judge(frames=frames, claim_list=claim_list)
    j["robust_changes"] = robust_changes(j)
    j["robust"] = robust_column(j, changes=j["robust_changes"])
    return j


# ---------------------------------------------------------------- the frame <-> JSON
def _plain(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, tuple):
        return [_plain(v) for v in x]
    if isinstance(x, list):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    return x


def _verdict_record(v):
    return None if v is None else _plain(dataclasses.asdict(v))


def _verdict(record):
    if record is None:
        return None
    fields = dict(record)
    fields["parts"] = tuple(_verdict(p) for p in fields.get("parts", ()))
    fields["differences"] = tuple(fields.get("differences", ()))
    return Verdict(**fields)


def _missing(x):
    return x is None or (isinstance(x, float) and math.isnan(x))


def _rows(frame):
    rows = []
    for _, r in frame.iterrows():
        row = {}
        for col in frame.columns:
            value = r[col]
            if col == "verdict_obj":
                value = _verdict_record(value if isinstance(value, Verdict) else None)
            elif col == "claim_obj":
                value = value.id
            elif col == "robust_changes":
                value = _plain(value) if isinstance(value, dict) else None
            else:
                value = _plain(value)
            row[col] = value
        rows.append(row)
    return rows


def _frame(stored):
    columns = stored["columns"]
    records = []
    for row in stored["rows"]:
        rec = dict(row)
        rec["verdict_obj"] = _verdict(row["verdict_obj"])
        rec["claim_obj"] = claim(row["claim_obj"])
        rec["robust_changes"] = row["robust_changes"]
        records.append(rec)
    frame = pd.DataFrame.from_records(records, columns=columns)
    for col, dtype in stored["dtypes"].items():
        if dtype != "object":
            frame[col] = frame[col].astype(dtype)
        else:  # missing values as the judged frame holds them (None / NaN kept apart by the record)
            frame[col] = pd.Series([rec[col] for rec in records], dtype=object)
    return frame


# ---------------------------------------------------------------- build, write, check, load
def build(judged=None, root=None):
    """The store's content (a dict) for ``judged`` (default: every claim judged on the committed results)."""
    root = Path(root) if root is not None else results.results_dir()
    if judged is None:
        judged = judge_with_robust()
    names = _read_names()
    result_key = _results_key(names, root)
    return {
        "format": _FORMAT,
        "profile": _PROFILE,
        "key": {"code": _judging_code(root), "results": result_key, "read": sorted(names)},
        "columns": list(judged.columns),
        "dtypes": {c: str(t) for c, t in judged.dtypes.items()},
        "rows": _rows(judged),
    }


def _text(content):
    return json.dumps(content, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def write(root=None, judged=None):
    """Judge every claim on the committed results and write the store; returns its path."""
    path = store_path(root)
    content = build(judged, root)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(_text(content), encoding="utf-8")
    tmp.replace(path)
    return path


def _stored(root=None):
    path = store_path(root)
    if not path.exists():
        return None, f"{path.name} is absent"
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return None, f"{path.name} cannot be read ({err})"
    if not isinstance(content, dict) or content.get("format") != _FORMAT:
        return None, f"{path.name} has another format"
    return content, ""


def freshness(content=None, root=None):
    """``""`` when the store matches the judging code and the committed results, else what differs."""
    root = Path(root) if root is not None else results.results_dir()
    if content is None:
        content, why = _stored(root)
        if content is None:
            return why
    key = content["key"]
    project = _project_root()
    for rel, recorded in key["code"].items():
        path = project / rel
        if not path.exists():
            return f"the judging code changed ({rel} is gone)"
        if code_hash(path) != recorded:
            return f"the judging code changed ({rel})"
    now = _results_key(key["read"], root)
    for name in sorted(set(now) | set(key["results"])):
        if now.get(name) != key["results"].get(name):
            state = "committed since" if name not in key["results"] else "changed or removed"
            return f"the committed result {name} was {state}"
    return ""


def load(root=None, warn=True):
    """The judged frame from the store, or ``None`` (with a warning naming why when ``warn``) if absent or stale."""
    content, why = _stored(root)
    if content is not None:
        why = freshness(content, root)
    if why:
        if warn and store_path(root).exists():
            warnings.warn(
                f"the committed verdicts are stale: {why}; judging anew "
                "(`python -m dpstack.companion verdicts` rewrites them)",
                stacklevel=2,
            )
        return None
    return _frame(content)


def main(argv=()):
    """``python -m dpstack.companion verdicts [--check]``: write the store, or say whether it is fresh."""
    argv = list(argv)
    if argv not in ([], ["--check"]):
        print("usage: python -m dpstack.companion verdicts [--check]")
        return 2
    if argv == ["--check"]:
        why = freshness()
        print(f"{STORE_NAME}: " + (f"stale: {why}" if why else "fresh"))
        return 1 if why else 0
    path = write()
    print(f"wrote {path} ({len(json.loads(path.read_text(encoding='utf-8'))['rows'])} claims)")
    return 0
