"""load_release bounds everything it expands (issue 39, item 5).

A 1.7 kB tuning release whose param_grid has 10^7 settings made the loader list them all (gigabytes,
then MemoryError); a count such as ``n_features_in_ = 10^9`` made a stacking release allocate an
array that size. Each is now a :class:`~dpstack.release.ReleaseFormatError` naming the field and the
limit, raised before anything is expanded: the tests measure the memory the refusal takes.
"""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

from dpstack import (
    MultipartyPrivateClassifier,
    PrivateLogisticRegression,
    PrivateParameterTuning,
    PrivateStackingClassifier,
)
from dpstack import release as R
from dpstack.audit import audit_data
from dpstack.release import ReleaseFormatError, load_release, save_release


def _edit(path, change):
    """Change the parsed document, recompute the sha256 (anyone can) and write it back."""
    doc = json.loads(path.read_text())
    change(doc)
    doc["sha256"] = R._digest(doc["release"])
    path.write_text(json.dumps(doc))
    return path


def _peak_bytes(fn):
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def _tuning_release(tmp_path):
    X, y = audit_data()
    tuner = PrivateParameterTuning(PrivateLogisticRegression(classes=[0, 1]), {"lam": [0.01, 0.1]}, epsilon_select=1.0)
    return save_release(tuner.fit(X, y), tmp_path / "tuning.json")


#: seven lists of ten values: 10^7 settings in a file of under 2 kB
_HUGE_GRID = {
    "lam": [0.1] * 10,
    "tol": [1e-6] * 10,
    "max_iter": [100] * 10,
    "epsilon": [1.0] * 10,
    "norm_bound": [1.0] * 10,
    "intercept_scaling": [0.5] * 10,
    "fit_intercept": [False] * 10,
}


@pytest.mark.parametrize("grid", [_HUGE_GRID, [{"lam": [0.1] * 10}, _HUGE_GRID]], ids=["dict", "list-of-dicts"])
def test_a_param_grid_of_ten_million_settings_is_refused_without_expanding_it(grid, tmp_path):
    path = _edit(_tuning_release(tmp_path), lambda d: d["release"]["params"].__setitem__("param_grid", grid))
    assert path.stat().st_size < 4000

    def load():
        with pytest.raises(ReleaseFormatError, match=r"param_grid: expands to more than 10000 .*MAX_GRID_SETTINGS"):
            load_release(path)

    assert _peak_bytes(load) < 256 * 2**20  # the file buffer; the old loader listed the 10^7 settings (gigabytes)


def test_a_grid_at_the_limit_still_loads(tmp_path, monkeypatch):
    path = _tuning_release(tmp_path)
    assert load_release(path).best_params_  # the genuine release round-trips
    monkeypatch.setattr(R, "MAX_GRID_SETTINGS", 1)
    with pytest.raises(ReleaseFormatError, match="param_grid"):
        load_release(path)


@pytest.mark.parametrize("partition", ["samples", "features"])
def test_a_huge_feature_count_is_refused_before_any_allocation(partition, tmp_path):
    X, y = audit_data()
    est = PrivateStackingClassifier(partition=partition, n_groups=2, lam=0.05, classes=[0, 1]).fit(X, y)
    path = _edit(
        save_release(est, tmp_path / "pst.json"),
        lambda d: d["release"]["source"].__setitem__("n_features_in_", 10**9),
    )

    def load():
        with pytest.raises(ReleaseFormatError, match=r"n_features_in_ = 1000000000 .*limit 10000000"):
            load_release(path)

    assert _peak_bytes(load) < 256 * 2**20  # np.arange(10^9) before: 7.45 GiB


def test_a_huge_party_count_is_refused(tmp_path):
    X, y = audit_data()
    parties = np.repeat(np.arange(6), 10)
    est = MultipartyPrivateClassifier("soft", lam=1.0, classes=[0, 1]).fit(X, y, parties=parties, X_aux=X[:20])
    path = _edit(
        save_release(est, tmp_path / "mpl.json"),
        lambda d: d["release"]["source"].__setitem__("n_parties_", 10**15),
    )
    with pytest.raises(ReleaseFormatError, match=r"n_parties_ = 10{15} is larger .*limit"):
        load_release(path)
