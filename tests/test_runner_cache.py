"""The results cache of the experiment runner under attack and faults.

Planted files, random one-byte corruptions, edited helpers, writers killed mid-write: the
cache must never run code, never return a wrong result and never crash ``run_cells``.
"""

import importlib
import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpstack
from dpstack import _files
from dpstack.companion import runner
from dpstack.companion.runner import code_version, run_cells

ROOT = Path(__file__).resolve().parents[1]
CALLS = []


def mixed_cell(scale, repeat, seed_sequence):
    """Rows with every value type the experiments return (and a few more)."""
    rng = np.random.default_rng(seed_sequence)
    CALLS.append((scale, repeat))
    x = rng.standard_normal(3) * scale
    return [
        {
            "method": "PST-S",
            "auc": float(x[0]),
            "n": 12,
            "ok": True,
            "note": None,
            "f32": np.float32(x[1]),
            "i64": np.int64(7),
            "flag": np.bool_(False),
            "nan": float("nan"),
            "inf": -np.inf,
            "pair": (1, "a"),
            "vec": x.copy(),
            "label": "ε = 1 — naïve",
        },
        {
            "method": "PLR",
            "auc": float(x[2]),
            "n": 13,
            "ok": False,
            "note": "second row",
            "f32": np.float32(0.5),
            "i64": np.int64(-1),
            "flag": np.bool_(True),
            "nan": 0.0,
            "inf": 1e308,
            "pair": (2, "b"),
            "vec": np.arange(3.0),
            "label": "",
        },
    ]


class Planted:
    """Unpickling this object creates a file: proof that a cache entry ran code."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _entries(folder):
    return sorted(p for p in (Path(folder) / "cells").rglob("*") if p.is_file())


def _same_frames(a, b):
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    for col in ("vec", "pair"):
        for u, v in zip(a[col], b[col]):
            assert type(u) is type(v) and np.array_equal(u, v)
            if isinstance(u, np.ndarray):
                assert u.dtype == v.dtype


def test_values_of_every_supported_type_come_back_exactly(tmp_path):
    cells = [{"scale": 1.0, "repeat": 0}, {"scale": 2.0, "repeat": 1}]
    first = run_cells(mixed_cell, cells, seed=4, cache=tmp_path)
    CALLS.clear()
    again = run_cells(mixed_cell, cells, seed=4, cache=tmp_path)
    assert CALLS == []
    _same_frames(first, again)
    for col in ("f32", "i64", "flag"):
        assert [type(v) for v in first[col]] == [type(v) for v in again[col]]


def test_a_planted_pickle_never_runs(tmp_path):
    cells = [{"scale": 1.0, "repeat": 0}, {"scale": 2.0, "repeat": 0}]
    reference = run_cells(mixed_cell, cells, seed=0)
    run_cells(mixed_cell, cells, seed=0, cache=tmp_path)
    marker = tmp_path / "code-ran"
    entries = _entries(tmp_path)
    assert len(entries) == 2
    for path in entries:  # an attacker who can write the shared cache folder overwrites every entry
        path.write_bytes(pickle.dumps(Planted(marker)))
    CALLS.clear()
    out = run_cells(mixed_cell, cells, seed=0, cache=tmp_path)
    assert not marker.exists(), "a cache entry executed code on load"
    assert len(CALLS) == 2  # both planted entries were discarded and recomputed
    _same_frames(out, reference)


def test_entries_are_json_with_a_mac_and_the_full_key(tmp_path):
    run_cells(mixed_cell, [{"scale": 1.0, "repeat": 0}], seed=0, cache=tmp_path)
    (entry,) = _entries(tmp_path)
    head, body = entry.read_bytes().split(b"\n", 1)
    import hmac
    import json

    assert hmac.new(_files.cache_key(), body, "sha256").hexdigest().encode() == head
    doc = json.loads(body)
    key = json.loads(doc["key"])
    assert key["versions"]["dpstack"] == dpstack.__version__ and key["code"] == code_version()
    assert key["cell"] == {"scale": 1.0, "repeat": 0} and key["seed"] == 0


def test_random_one_byte_corruptions_are_detected_and_recomputed(tmp_path, capsys):
    """>= 300 corruptions of one entry: no silent wrong result, no crash, every one recomputed."""
    seed = int(os.environ.get("DPSTACK_CORRUPTION_SEED") or random.SystemRandom().randrange(2**32))
    with capsys.disabled():
        print(f"\ncache corruption test: seed {seed} (rerun with DPSTACK_CORRUPTION_SEED={seed})")
    rng = random.Random(seed)
    cells = [{"scale": 3.0, "repeat": 2}]
    reference = run_cells(mixed_cell, cells, seed=9)
    run_cells(mixed_cell, cells, seed=9, cache=tmp_path)
    (entry,) = _entries(tmp_path)
    good = entry.read_bytes()
    n_trials, wrong, crashed, not_recomputed, not_rewritten = 320, [], [], [], []
    for _ in range(n_trials):
        pos = rng.randrange(len(good))
        new = rng.choice([b for b in range(256) if b != good[pos]])
        entry.write_bytes(good[:pos] + bytes([new]) + good[pos + 1 :])
        CALLS.clear()
        try:
            out = run_cells(mixed_cell, cells, seed=9, cache=tmp_path)
        except Exception as exc:  # noqa: BLE001 - counting crashes is the point
            crashed.append((pos, new, repr(exc)))
            continue
        try:
            _same_frames(out, reference)
        except AssertionError:
            wrong.append((pos, new))
        if len(CALLS) != 1:
            not_recomputed.append((pos, new))
        if entry.read_bytes() != good:  # the entry is rewritten whole after a recomputation
            not_rewritten.append((pos, new))
    assert not crashed, f"seed {seed}: {len(crashed)} crashes, e.g. {crashed[:3]}"
    assert not wrong, f"seed {seed}: {len(wrong)} silently wrong results, e.g. {wrong[:3]}"
    assert not not_recomputed, f"seed {seed}: {len(not_recomputed)} corruptions undetected, e.g. {not_recomputed[:3]}"
    assert not not_rewritten, f"seed {seed}: {len(not_rewritten)} entries left corrupt, e.g. {not_rewritten[:3]}"


def test_truncated_empty_and_foreign_entries_are_recomputed(tmp_path):
    cells = [{"scale": 1.0, "repeat": 0}]
    reference = run_cells(mixed_cell, cells, seed=2)
    run_cells(mixed_cell, cells, seed=2, cache=tmp_path)
    (entry,) = _entries(tmp_path)
    good = entry.read_bytes()
    other = tmp_path / "other"
    run_cells(mixed_cell, [{"scale": 5.0, "repeat": 0}], seed=2, cache=other)
    (foreign,) = _entries(other)  # a valid entry of another cell, copied over this one
    for bad in (b"", good[: len(good) // 2], good[:-1], good + b"x", foreign.read_bytes(), b"\x80" * 100):
        entry.write_bytes(bad)
        CALLS.clear()
        _same_frames(run_cells(mixed_cell, cells, seed=2, cache=tmp_path), reference)
        assert len(CALLS) == 1


def test_editing_a_helper_the_cell_calls_invalidates_the_entry(tmp_path, monkeypatch):
    pkg = tmp_path / "src"
    pkg.mkdir()
    module = pkg / "my_cells.py"
    helper = "def helper(x):\n    return {factor} * x\n\n\n"
    cell = "def cell(x, seed_sequence):\n    return {{'y': helper(x)}}\n"
    module.write_text(helper.format(factor="2.0") + cell.format())
    monkeypatch.syspath_prepend(str(pkg))
    import my_cells

    assert run_cells(my_cells.cell, [{"x": 1.0}], cache=tmp_path / "c").y.tolist() == [2.0]
    module.write_text(helper.format(factor="20.0") + cell.format())  # only the helper changes
    os.utime(module, ns=(0, 10**18))
    importlib.reload(my_cells)
    assert run_cells(my_cells.cell, [{"x": 1.0}], cache=tmp_path / "c").y.tolist() == [20.0]
    sys.modules.pop("my_cells", None)


def test_editing_a_notebook_helper_or_constant_invalidates_the_entry(tmp_path):
    """Functions without a source file (a notebook's) are keyed on the helpers and constants they use."""
    ns = {}
    exec(
        "FACTOR = 2.0\ndef helper(x):\n    return FACTOR * x\n"
        "def cell(x, seed_sequence):\n    return {'y': helper(x)}\n",
        ns,
    )
    keys = set()
    for factor in (2.0, 20.0):
        ns["FACTOR"] = factor
        keys.add(runner._CellStore(tmp_path, ns["cell"], 0)._key({"x": 1.0}))
    assert len(keys) == 2
    # a global data array the cell reads is part of the key too
    exec(
        "DATA = np.arange(3.0)\ndef data_cell(i, seed_sequence):\n    return {'y': float(DATA[i])}\n", ns2 := {"np": np}
    )
    before = runner._CellStore(tmp_path, ns2["data_cell"], 0)._key({"i": 1})
    ns2["DATA"] = np.arange(3.0) * 10
    assert runner._CellStore(tmp_path, ns2["data_cell"], 0)._key({"i": 1}) != before


def test_the_key_covers_the_package_version_and_every_source_file(tmp_path, monkeypatch):
    cells = [{"scale": 1.0, "repeat": 0}]
    run_cells(mixed_cell, cells, seed=0, cache=tmp_path)
    CALLS.clear()
    monkeypatch.setattr(dpstack, "__version__", "99.0")
    run_cells(mixed_cell, cells, seed=0, cache=tmp_path)
    assert len(CALLS) == 1
    # code_version follows an edit of any dpstack file in a running process
    copy = tmp_path / "pkg" / "dpstack"
    shutil.copytree(runner._PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(runner, "_PACKAGE_ROOT", copy)
    before = code_version()
    helper = copy / "datasets" / "preprocessing.py"
    helper.write_text(helper.read_text() + "\n# a comment: not code\n")
    assert code_version() == before  # comments, docstrings and layout do not change what is computed
    helper.write_text(helper.read_text() + "\nEDITED = 1\n")
    assert code_version() != before


def test_a_dpstack_cell_keys_on_its_import_closure_and_nothing_else(tmp_path, monkeypatch):
    """The key of a cell defined in dpstack covers the files its module imports, transitively
    (the files a committed result's staleness check compares): an edit of the estimator it fits
    invalidates it, an edit of a page's presentation module does not."""
    from dpstack.companion.papers.pst.grids import stacking_cell

    copy = tmp_path / "pkg" / "dpstack"
    shutil.copytree(runner._PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(runner, "_PACKAGE_ROOT", copy)
    before = code_version(stacking_cell)
    assert before != code_version()  # not the whole package
    show = copy / "companion" / "show.py"
    show.write_text(show.read_text() + "\nEDITED = 1\n")
    assert code_version(stacking_cell) == before
    assert code_version() != code_version(stacking_cell)
    for edited in (copy / "linear.py", copy / "_fused.c"):
        edited.write_text(
            edited.read_text() + "\n/* edited */\n" if edited.suffix == ".c" else edited.read_text() + "\nEDITED = 1\n"
        )
        assert code_version(stacking_cell) != before, edited.name
        before = code_version(stacking_cell)


def test_cells_of_another_solver_pass_or_another_compiled_source_do_not_share_an_entry(tmp_path, monkeypatch):
    """The numerical platform and the compiled pass's C source are part of the key (else a
    ``DPSTACK_FUSED=0`` run would return the compiled pass's cached numbers, and editing
    ``_fused.c`` would not invalidate them)."""
    from dpstack import solvers

    cells = [{"scale": 1.0, "repeat": 0}]
    CALLS.clear()
    run_cells(mixed_cell, cells, seed=0, cache=tmp_path)
    run_cells(mixed_cell, cells, seed=0, cache=tmp_path)
    assert len(CALLS) == 1  # the second run read the entry
    monkeypatch.setattr(solvers, "FUSED", not solvers.FUSED)  # the other solver pass
    run_cells(mixed_cell, cells, seed=0, cache=tmp_path)
    assert len(CALLS) == 2
    monkeypatch.setattr(solvers, "FUSED", not solvers.FUSED)  # back: the first entry is still there
    run_cells(mixed_cell, cells, seed=0, cache=tmp_path)
    assert len(CALLS) == 2
    # an edit of the C source of the compiled pass (a copy of the package, so the tree is untouched)
    copy = tmp_path / "pkg" / "dpstack"
    shutil.copytree(runner._PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    monkeypatch.setattr(runner, "_PACKAGE_ROOT", copy)
    run_cells(mixed_cell, cells, seed=0, cache=tmp_path)
    assert len(CALLS) == 2  # the same code: the same entry
    c_file = copy / "_fused.c"
    c_file.write_text(c_file.read_text() + "\n/* edited */\n")
    run_cells(mixed_cell, cells, seed=0, cache=tmp_path)
    assert len(CALLS) == 3


def test_a_writer_killed_mid_write_leaves_no_temp_file_after_the_next_run(tmp_path):
    cache = tmp_path / "cache"
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests")!r}]
        from dpstack.companion import runner
        import test_runner_cache as t
        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)  # killed after writing the temp file, before the rename
        runner.os.replace = die
        runner.run_cells(t.mixed_cell, [{{"scale": 1.0, "repeat": 0}}], seed=0, cache={str(cache)!r})
    """)
    proc = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert [p.suffix for p in _entries(cache)] == [".tmp"]  # the orphan
    # a temp file of a live writer (this process) must survive the clean-up
    live = next(iter(_entries(cache))).parent / f"x.abc.{_files.HOST}.{os.getpid()}.0000abcd.tmp"
    live.write_bytes(b"in progress")
    CALLS.clear()
    run_cells(mixed_cell, [{"scale": 1.0, "repeat": 0}], seed=0, cache=cache)
    names = [p.name for p in _entries(cache)]
    assert len(CALLS) == 1
    assert live.name in names and sum(n.endswith(".json") for n in names) == 1 and len(names) == 2


def test_an_unwritable_cache_warns_and_still_returns_the_results(tmp_path):
    cache = tmp_path / "not-a-folder"
    cache.write_text("a file where the cache folder should be")  # fails for root too, unlike chmod
    with pytest.warns(RuntimeWarning, match="not writable"):
        df = run_cells(mixed_cell, [{"scale": 1.0, "repeat": 0}], seed=0, cache=cache)
    assert len(df) == 2


def test_values_the_cache_cannot_store_are_computed_not_cached(tmp_path):
    def object_cell(seed_sequence):
        return {"model": object()}

    with pytest.warns(RuntimeWarning, match="not cached"):
        df = run_cells(object_cell, [{}], cache=tmp_path)
    assert len(df) == 1 and not any(p.suffix == ".json" for p in _entries(tmp_path))


# ----------------------------------------------------------------------------- forgery and size limits
def _seal(body):
    """What a writer of the cache folder puts on line 1: the MAC when it holds the key (here: the test's key)."""
    if hasattr(_files, "cache_key"):
        import hmac

        return hmac.new(_files.cache_key(), body, "sha256").hexdigest().encode()
    import hashlib

    return hashlib.sha256(body).hexdigest().encode()  # the checksum of the code before MACs


def _rewrite(entry, edit, reseal):
    """Edit the JSON document of an entry; reseal with a fresh sha256 (anyone can) or the key holder's MAC."""
    import hashlib
    import json

    head, body = entry.read_bytes().split(b"\n", 1)
    doc = edit(json.loads(body))
    body = json.dumps(doc, separators=(",", ":")).encode()
    head = _seal(body) if reseal == "mac" else hashlib.sha256(body).hexdigest().encode()
    entry.write_bytes(head + b"\n" + body)


def test_a_forged_cell_value_with_a_recomputed_checksum_is_discarded(tmp_path):
    """Someone who can write the cache but not read the key edits a value and recomputes the sha256."""
    cells = [{"scale": 1.0, "repeat": 0}]
    reference = run_cells(mixed_cell, cells, seed=3)
    run_cells(mixed_cell, cells, seed=3, cache=tmp_path)
    (entry,) = _entries(tmp_path)

    def forge(doc):
        doc["rows"][0]["__dict__"][1][1] = 0.999  # the first row's "auc"
        return doc

    _rewrite(entry, forge, reseal="sha256")
    CALLS.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run_cells(mixed_cell, cells, seed=3, cache=tmp_path)
    assert out.auc[0] != 0.999 and len(CALLS) == 1, "the forged value came back"  # recomputed instead
    _same_frames(out, reference)
    assert any(str(entry) in str(w.message) for w in caught), [str(w.message) for w in caught]


@pytest.mark.parametrize("kind", ["huge file", "huge str dtype", "huge shape", "object dtype"])
def test_entries_past_the_size_and_dtype_limits_are_refused_before_loading(tmp_path, kind):
    """Entries with a valid MAC (as if written by the key's holder) that would exhaust memory: refused, recomputed."""
    cells = [{"scale": 1.0, "repeat": 0}]
    reference = run_cells(mixed_cell, cells, seed=5)
    run_cells(mixed_cell, cells, seed=5, cache=tmp_path)
    (entry,) = _entries(tmp_path)

    def edit(doc):
        row = doc["rows"][0]["__dict__"]
        if kind == "huge file":
            row.append(["padding", "x" * (24 << 20)])  # a 24 MiB string
        elif kind == "huge str dtype":
            row.append(["s", {"__nd__": "<U2000000000", "shape": [64], "data": ["a"] * 64}])  # 512 GB if allocated
        elif kind == "huge shape":
            row.append(["s", {"__nd__": "<f8", "shape": [2**36], "data": [0.0]}])
        else:
            row.append(["s", {"__nd__": "|O", "shape": [1], "data": [0]}])
        return doc

    _rewrite(entry, edit, reseal="mac")
    CALLS.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run_cells(mixed_cell, cells, seed=5, cache=tmp_path)  # no MemoryError, no object array
    assert len(CALLS) == 1
    _same_frames(out, reference)
    assert any(str(entry) in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_the_key_is_private_outside_the_cache_and_refused_inside_it(tmp_path, monkeypatch):
    key_path = tmp_path / "config" / "dpstack" / "cache.key"
    monkeypatch.setenv("DPSTACK_CACHE_KEY", str(key_path))
    key = _files.cache_key()
    assert len(key) == 32 and key_path.stat().st_mode & 0o777 == 0o600
    assert key_path.parent.stat().st_mode & 0o077 == 0 and _files.cache_key() == key
    # a key inside the cache folder could be replaced by whoever writes the cache: refused, cells not cached
    monkeypatch.setenv("DPSTACK_CACHE_KEY", str(tmp_path / "cache" / "cache.key"))
    with pytest.raises(_files.CacheKeyError, match="inside the cache folder"):
        _files.cache_key(tmp_path / "cache")
    CALLS.clear()
    with pytest.warns(RuntimeWarning, match="not cached.*inside the cache folder"):
        run_cells(mixed_cell, [{"scale": 1.0, "repeat": 0}], seed=0, cache=tmp_path / "cache")
    assert not _entries(tmp_path / "cache") and not (tmp_path / "cache" / "cache.key").exists()
    # a key readable by others is refused
    monkeypatch.setenv("DPSTACK_CACHE_KEY", str(key_path))
    key_path.chmod(0o644)
    with pytest.raises(_files.CacheKeyError, match="readable or writable by others"):
        _files.cache_key()


def test_a_damaged_entry_in_a_read_only_cache_is_ignored_not_a_crash(tmp_path, monkeypatch):
    """A shared read-only cache (a real read-only mount refuses root too; simulated here, since
    chmod does not stop root): the damaged entry cannot be removed; the cell is recomputed, with a warning."""
    import errno

    cache = tmp_path / "cache"
    run_cells(mixed_cell, [{"scale": 1.0, "repeat": 0}], seed=0, cache=cache)
    (entry,) = [p for p in _entries(cache) if p.suffix == ".json"]
    entry.write_bytes(entry.read_bytes()[:-5] + b"XXXXX")

    def read_only(self, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(Path, "unlink", read_only)
    monkeypatch.setattr(runner.tempfile, "mkstemp", lambda *a, **k: read_only(Path(k.get("dir", "."))))
    CALLS.clear()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        df = run_cells(mixed_cell, [{"scale": 1.0, "repeat": 0}], seed=0, cache=cache)
    assert len(df) == 2 and len(CALLS) == 1 and entry.exists()
    messages = " | ".join(str(w.message) for w in record)
    assert "discarded the cache entry" in messages and "could not remove" in messages
