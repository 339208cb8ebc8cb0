"""A release is its own evidence: one minimal source, everything else recomputed, crafted files refused.

Each refusal is checked on a file crafted the way an attacker or a careless user would: a derived
attribute edited apart from the coefficients, a rewritten ledger, NaN coefficients, object or
oversized dtypes, shapes that lie, duplicate keys, deep nesting, an oversized file, and two
processes saving one release at once. The sha256 is recomputed after every edit (anyone can), so
what refuses the file is the check under test, not the checksum.
"""

from __future__ import annotations

import json
import multiprocessing
import warnings

import numpy as np
import pytest
from test_no_seeds import KINDS, _binary, _fitted, _parties

from dpstack import MultipartyPrivateClassifier, PrivateLogisticRegression
from dpstack import release as R
from dpstack.base import DIAGNOSTICS
from dpstack.release import ReleaseFormatError, UnauthenticatedReleaseWarning, load_release, save_release

KEY = b"k" * 32


def _plr(**kw):
    X, y = _binary()
    return PrivateLogisticRegression(classes=[0, 1], **kw).fit(X, y), X


def _edit(path, change, key=None):
    """Apply ``change`` to the parsed document, recompute the sha256 (as any editor can) and write it back."""
    doc = json.loads(path.read_text())
    change(doc)
    doc["sha256"] = R._digest(doc["release"])
    path.write_text(json.dumps(doc))
    return path


def _outputs(est, X):
    out = {"predict": est.predict(X)}
    if getattr(est, "method", None) != "indiv":
        out["decision_function"] = est.decision_function(X)
    if hasattr(est, "predict_proba"):
        out["predict_proba"] = est.predict_proba(X)
    return out


# ---------------------------------------------------------------- round trips
@pytest.mark.parametrize("kind", KINDS)
def test_save_load_predicts_bit_identically_and_recomputes_the_ledger(kind, tmp_path):
    est = _fitted(kind, None)
    if kind.startswith("MPL-"):
        X = _parties()[0]
    else:
        X = _binary(800)[0]
    model = load_release(save_release(est, tmp_path / "m.json"))
    assert type(model) is type(est)
    for name, value in _outputs(est, X).items():
        np.testing.assert_array_equal(_outputs(model, X)[name], value, err_msg=name)
    expected = [r for r in est.privacy_.to_records() if r["mechanism"] != DIAGNOSTICS]
    assert model.privacy_.to_records() == expected


@pytest.mark.parametrize("kind", KINDS)
def test_release_dict_round_trip_predicts_bit_identically(kind):
    est = _fitted(kind, 5)
    X = _parties()[0] if kind.startswith("MPL-") else _binary(800)[0]
    model = R.from_release_dict(json.loads(json.dumps(R.release_dict(est), allow_nan=False)))
    for name, value in _outputs(est, X).items():
        np.testing.assert_array_equal(_outputs(model, X)[name], value, err_msg=name)


def test_the_file_holds_the_minimal_source_only(tmp_path):
    est, _ = _plr(fit_intercept=True)
    text = (save_release(est, tmp_path / "m.json")).read_text()
    source = json.loads(text)["release"]["source"]
    assert set(source) == {"classes_", "coef_", "intercept_", "n_samples"}
    for derived in ("w_", "calibration_", "privacy_", "epsilon_noise_", "delta_"):
        assert f'"{derived}"' not in text


def test_derived_attributes_are_those_of_the_fit(tmp_path):
    est, X = _plr(fit_intercept=True, intercept_scaling=0.3)  # s not a power of two
    model = load_release(save_release(est, tmp_path / "m.json"))
    np.testing.assert_array_equal(model.w_, est.w_)
    assert model.calibration_ == est.calibration_ and model.delta_ == est.delta_


def test_mpl_with_protect_aux_recomputes_its_sensitivity(tmp_path):
    Xp, yp, parties, X_aux = _parties()
    est = MultipartyPrivateClassifier("soft", protect_aux=True, classes=[0, 1]).fit(Xp, yp, parties, X_aux)
    model = load_release(save_release(est, tmp_path / "m.json"))
    assert model.sensitivity_ == est.sensitivity_ and model.noise_scale_ == est.noise_scale_
    assert json.loads((tmp_path / "m.json").read_text())["release"]["source"]["n_aux"] == X_aux.shape[0]


def test_strict_json_with_infinite_epsilon(tmp_path):
    est, X = _plr(epsilon=np.inf)
    path = save_release(est, tmp_path / "m.json")
    json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in a release"))
    model = load_release(path)
    assert model.epsilon == np.inf and model.privacy_.total() == np.inf
    np.testing.assert_array_equal(model.decision_function(X), est.decision_function(X))


# ---------------------------------------------------------------- crafted files
def test_an_edited_w_is_refused_never_read(tmp_path):
    est, _ = _plr()
    path = save_release(est, tmp_path / "m.json")
    w = {"__array__": (-est.w_).tolist(), "dtype": "<f8", "shape": [est.w_.size]}
    _edit(path, lambda d: d["release"]["source"].__setitem__("w_", w))
    with pytest.raises(ReleaseFormatError, match="'w_'.*recomputed from the source, never read"):
        load_release(path)


def test_edited_coefficients_cannot_disagree_with_the_prediction(tmp_path):
    est, X = _plr()
    path = save_release(est, tmp_path / "m.json")
    _edit(path, lambda d: d["release"]["source"]["coef_"].__setitem__("__array__", (-est.coef_).tolist()))
    model = load_release(path)  # without a key an edit is possible, but it is one edit, seen everywhere
    np.testing.assert_array_equal(model.w_, model.coef_[0])
    np.testing.assert_array_equal(model.decision_function(X), -est.decision_function(X))


def test_a_rewritten_ledger_is_refused_and_a_ledger_follows_the_parameters(tmp_path):
    est, _ = _plr(epsilon=4.0)
    path = save_release(est, tmp_path / "m.json")
    ledger = {"__ledger__": [dict(r, epsilon=0.01) for r in est.privacy_.to_records()]}
    _edit(path, lambda d: d["release"]["source"].__setitem__("privacy_", ledger))
    with pytest.raises(ReleaseFormatError, match="'privacy_'.*recomputed"):
        load_release(path)
    # the ledger and the calibration are one function of the parameters
    path = save_release(est, tmp_path / "m2.json")
    model = load_release(path)
    assert model.privacy_.total() == 4.0 and model.calibration_.epsilon == 4.0


@pytest.mark.parametrize(
    "value, message",
    [
        ("NaN", "not strict JSON"),
        ("Infinity", "not strict JSON"),
        ("1e999", "not a finite number"),
        ('{"__float__": "nan"}', "does not fit dtype"),
    ],
)
def test_non_finite_coefficients_are_refused(value, message, tmp_path):
    est, _ = _plr()
    path = save_release(est, tmp_path / "m.json")
    doc = json.loads(path.read_text())
    doc["release"]["source"]["coef_"]["__array__"][0][0] = "@@"
    doc["sha256"] = "@@sha"
    text = json.dumps(doc).replace('"@@"', value)
    # recompute the checksum over what the loader parses, where it can parse at all
    try:
        parsed = json.loads(text)
        text = text.replace('"@@sha"', json.dumps(R._digest(parsed["release"])))
    except ValueError:
        pass
    path.write_text(text)
    with pytest.raises(ReleaseFormatError, match=message):
        load_release(path)


@pytest.mark.parametrize(
    "array, message",
    [
        ({"__array__": [[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]], "dtype": "|O", "shape": [1, 6]}, "not a plain"),
        ({"__array__": [[0.1]], "dtype": "(1073741824,)<f8", "shape": [1, 1]}, "not a plain"),
        ({"__array__": [[0.1]], "dtype": "(1000000000,)f8", "shape": [1, 1]}, "not a plain"),
        ({"__array__": [["a"]], "dtype": "<U1000000000", "shape": [1, 1]}, "bytes \\(limit|not a plain"),
        ({"__array__": [[0.1]], "dtype": "V8", "shape": [1, 1]}, "not a plain"),
        ({"__array__": [], "dtype": "<f8", "shape": [100000, 100000]}, "elements \\(limit"),
        ({"__array__": [[0.1, 0.2]], "dtype": "<f8", "shape": [1, 6]}, "declared shape"),
        ({"__array__": [[0.1] * 6] * 2, "dtype": "<f8", "shape": [2, 6]}, "shape \\(1, p\\)"),
        ({"__array__": [[0.1, "x", 0.3, 0.4, 0.5, 0.6]], "dtype": "<f8", "shape": [1, 6]}, "does not fit dtype"),
        ({"__array__": [[0.1] * 6], "dtype": "<f8", "shape": [1, 6], "extra": 1}, "exactly __array__"),
    ],
    ids=[
        "object",
        "huge-subarray",
        "8GiB-subarray",
        "huge-str",
        "void",
        "huge-shape",
        "shape-lie",
        "mismatch",
        "mixed",
        "extra-key",
    ],
)
def test_crafted_arrays_are_refused_before_any_allocation(array, message, tmp_path):
    est, _ = _plr()
    path = save_release(est, tmp_path / "m.json")
    _edit(path, lambda d: d["release"]["source"].__setitem__("coef_", array))
    with pytest.raises(ReleaseFormatError, match=message):
        load_release(path)


def test_the_8_gib_intercept_of_the_report_is_refused(tmp_path):
    est, _ = _plr()
    path = save_release(est, tmp_path / "m.json")
    crafted = {"__array__": [0.0], "dtype": "(1073741824,)f8", "shape": [1]}
    _edit(path, lambda d: d["release"]["source"].__setitem__("intercept_", crafted))
    with pytest.raises(ReleaseFormatError, match="not a plain"):
        load_release(path)


def test_duplicate_keys_are_refused(tmp_path):
    est, _ = _plr()
    path = save_release(est, tmp_path / "m.json")
    text = path.read_text()
    # a second "coef_" in the same object: a JSON reader would silently keep the last one
    crafted = text.replace(
        '"coef_": {', '"coef_": {"__array__": [[9, 9, 9, 9, 9, 9]], "dtype": "<f8", "shape": [1, 6]}, "coef_": {', 1
    )
    assert crafted != text
    path.write_text(crafted)
    with pytest.raises(ReleaseFormatError, match="duplicate key 'coef_'"):
        load_release(path)


@pytest.mark.parametrize("depth", [R.MAX_DEPTH + 5, 100_000])
def test_deep_nesting_is_refused(depth, tmp_path):
    est, _ = _plr()
    path = save_release(est, tmp_path / "m.json")
    doc = json.loads(path.read_text())
    doc["release"]["params"]["w0"] = "@@"
    path.write_text(json.dumps(doc).replace('"@@"', "[" * depth + "]" * depth))
    with pytest.raises(ReleaseFormatError, match="nested deeper"):
        load_release(path)


def test_an_oversized_file_is_refused(tmp_path, monkeypatch):
    est, _ = _plr()
    path = save_release(est, tmp_path / "m.json")
    monkeypatch.setattr(R, "MAX_FILE_BYTES", path.stat().st_size - 1)
    with pytest.raises(ReleaseFormatError, match="larger than"):
        load_release(path)


def test_unknown_fields_and_the_old_version_are_refused(tmp_path):
    est, _ = _plr()
    path = save_release(est, tmp_path / "m.json")
    doc = json.loads(path.read_text())
    path.write_text(json.dumps(dict(doc, signature="trust me")))
    with pytest.raises(ReleaseFormatError, match="unknown top-level field 'signature'"):
        load_release(path)
    path.write_text(json.dumps(dict(doc, format_version=1)))
    with pytest.raises(ReleaseFormatError, match="version 1.*re-export"):
        load_release(path)


def test_a_seed_in_a_file_is_refused(tmp_path):
    est, _ = _plr()
    path = _edit(
        save_release(est, tmp_path / "m.json"), lambda d: d["release"]["params"].__setitem__("random_state", 3)
    )
    with pytest.raises(ReleaseFormatError, match="random_state=None"):
        load_release(path)


def test_a_nested_release_of_the_wrong_class_is_refused(tmp_path):
    est = _fitted("PST-F", None)
    path = save_release(est, tmp_path / "m.json")

    def swap(d):
        d["release"]["source"]["high_level_"] = d["release"]["source"]["low_level_"]

    _edit(path, swap)
    with pytest.raises(ReleaseFormatError, match="high_level_ must be one of"):
        load_release(path)


# ---------------------------------------------------------------- authentication
def test_hmac_detects_an_edit_and_a_wrong_key(tmp_path):
    est, X = _plr()
    path = save_release(est, tmp_path / "m.json", key=KEY)
    np.testing.assert_array_equal(load_release(path, key=KEY).decision_function(X), est.decision_function(X))
    with pytest.raises(ReleaseFormatError, match="HMAC does not match"):
        load_release(path, key=b"x" * 32)
    _edit(path, lambda d: d["release"]["source"]["coef_"].__setitem__("__array__", (-est.coef_).tolist()))
    with pytest.raises(ReleaseFormatError, match="HMAC does not match"):
        load_release(path, key=KEY)
    # an editor who drops the MAC: with the key, an unauthenticated file is refused
    _edit(path, lambda d: d.pop("hmac_sha256"))
    with pytest.raises(ReleaseFormatError, match="carries no HMAC"):
        load_release(path, key=KEY)


def test_without_a_key_a_file_claiming_a_mac_says_it_is_unauthenticated(tmp_path):
    est, _ = _plr()
    with pytest.warns(UnauthenticatedReleaseWarning, match="unauthenticated"):
        load_release(save_release(est, tmp_path / "m.json", key=KEY))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a file that claims nothing loads silently
        load_release(save_release(est, tmp_path / "plain.json"))


@pytest.mark.parametrize("key, error", [(b"short", ValueError), (12345, TypeError)])
def test_weak_or_wrong_keys_are_refused(key, error, tmp_path):
    est, _ = _plr()
    with pytest.raises(error, match="key"):
        save_release(est, tmp_path / "m.json", key=key)


# ---------------------------------------------------------------- concurrent saves
def _save_many(path, n, errors):
    est, _ = _plr(random_state=1)
    try:
        for _ in range(n):
            save_release(est, path)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        errors.put(repr(exc))


def test_two_processes_saving_one_release_never_collide(tmp_path):
    ctx = multiprocessing.get_context("fork")
    errors = ctx.Queue()
    path = tmp_path / "m.json"
    save_release(_plr(random_state=1)[0], path)
    procs = [ctx.Process(target=_save_many, args=(path, 300, errors)) for _ in range(2)]
    for p in procs:
        p.start()
    loads = 0
    while any(p.is_alive() for p in procs):
        load_release(path)  # never a partial or empty file
        loads += 1
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert errors.empty(), errors.get()
    assert loads > 0
    assert [f.name for f in tmp_path.iterdir()] == ["m.json"]  # no temporary file left behind


def test_mpl_vote_with_protected_auxiliary_rows_round_trips_where_n_is_not_needed(tmp_path):
    """Two-class vote: the sensitivity is 2/λ whatever the number N of auxiliary rows, so N cannot be
    read back from it (this raised ZeroDivisionError); the release records none and rebuilds the same
    sensitivity, ledger and predictions."""
    from dpstack.audit.suite import audit_cases
    from dpstack.release import from_release_dict, load_release, release_dict, save_release

    est, X, y, fit_params = audit_cases()["MPL vote (auxiliary rows protected)"]
    est = est.set_params(random_state=0).fit(X, y, **fit_params)
    payload = release_dict(est)
    back = from_release_dict(payload)
    assert back.sensitivity_ == est.sensitivity_
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    save_release(est, tmp_path / "vote.json")
    loaded = load_release(tmp_path / "vote.json")
    assert loaded.noise_scale_ == est.noise_scale_
    assert loaded.privacy_.total() == est.privacy_.total()


# ---------------------------------------------------------------- round four: integers, special files, killed writers
@pytest.mark.parametrize(
    "where, value",
    [
        ("epsilon", "1" + "0" * 400),  # an integer of 401 digits where a float belongs
        ("epsilon", "1" + "0" * 5000),  # past Python's own int-string limit
        ("max_iter", "9" * 40),
    ],
)
def test_huge_json_integers_are_a_format_error_naming_the_integer(where, value, tmp_path):
    est, _ = _plr()
    path = save_release(est, tmp_path / "m.json")
    doc = json.loads(path.read_text())
    doc["release"]["params"][where] = "@@"
    doc["sha256"] = "@@sha"
    text = json.dumps(doc).replace('"@@"', value)
    path.write_text(text)
    with pytest.raises(ReleaseFormatError, match="JSON integer .* digits"):
        load_release(path)


def test_a_named_pipe_is_refused_without_blocking(tmp_path):
    """A FIFO with no writer: a plain open() would wait forever; the loader refuses it at once."""
    import os
    import threading

    fifo = tmp_path / "release.json"
    os.mkfifo(fifo)
    outcome = []

    def load():
        try:
            load_release(fifo)
        except ReleaseFormatError as exc:
            outcome.append(str(exc))

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "load_release blocked on a named pipe"
    assert outcome and "not a regular file" in outcome[0]
    with pytest.raises(ReleaseFormatError, match="not a regular file"):
        load_release(tmp_path)  # a folder


def test_a_killed_writers_temporary_file_is_removed_by_the_next_save(tmp_path):
    """save_release names its temporary file after its host and process; the next save removes a
    dead writer's file and never one of another naming."""
    import subprocess
    import sys

    est, _ = _plr()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True, text=True
    )
    pid = int(dead.stdout)
    from dpstack._files import HOST

    orphan = tmp_path / f".m.json.abc123.{HOST}.{pid}.0a1b2c3d.tmp"
    orphan.write_text("half a release")
    mine = tmp_path / ".m.json.notes.tmp"  # not of the project's naming
    mine.write_text("keep me")
    save_release(est, tmp_path / "m.json")
    assert not orphan.exists() and mine.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".m.json.notes.tmp", "m.json"]
