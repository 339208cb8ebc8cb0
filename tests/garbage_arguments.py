"""Garbage-argument sweep over dpstack's public API: how many errors name the parameter.

For every estimator in ``dpstack.__all__`` and every parameter of it, the estimator is fitted
(on a small valid problem, with its other parameters at valid values) after that parameter is
set to each of a fixed list of garbage values; for the public functions (``bound_rows`` and
the mechanisms' calibrations and noise) each argument is replaced in the same way. A call
that raises is counted as *named* when the message names the argument (as a whole word).

    python tests/garbage_arguments.py          # prints the counts and the unnamed cases

Run it on two checkouts (``PYTHONPATH=<tree>``) to compare before and after.
"""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np

import dpstack
from dpstack import mechanisms
from dpstack.stacking import bound_rows

GARBAGE = [-1, -0.5, 0, 0.0, float("nan"), float("-inf"), 1e400, "x", "", True, None, [], [[]], {"a": 1}, 2.5]

rng = np.random.default_rng(0)
X = rng.normal(size=(40, 4)) / 2
y = (X[:, 0] > 0).astype(int)


def fit(est):
    name = type(est).__name__
    if name in ("PrivateTransferStacking", "SimComb"):
        return est.fit(X, y, X_source=X[::-1], y_source=y[::-1])
    if name == "MultipartyPrivateClassifier":
        return est.fit(X, y, np.arange(len(y)) % 3, X_aux=X)
    return est.fit(X, y)


BASE = {
    "PrivateLogisticRegression": dict(classes=[0, 1], random_state=0),
    "FeatureSplitLogisticRegression": dict(classes=[0, 1], random_state=0),
    "PrivateStackingClassifier": dict(n_groups=2, classes=[0, 1], random_state=0),
    "PrivateTransferStacking": dict(n_groups=2, classes=[0, 1], random_state=0),
    "SimComb": dict(classes=[0, 1], random_state=0),
    "MultipartyPrivateClassifier": dict(method="avg", classes=[0, 1], random_state=0),
    "PrivateParameterTuning": dict(
        estimator=dpstack.PrivateLogisticRegression(classes=[0, 1]), param_grid={"lam": [0.01, 0.1]}, random_state=0
    ),
}

FUNCTIONS = {
    "bound_rows": (bound_rows, dict(X=X, method="private_max", row_scale=1.0, row_max=2.0)),
    "clip_rows": (mechanisms.clip_rows, dict(X=X, bound=1.0)),
    "isotropic_noise": (mechanisms.isotropic_noise, dict(dim=3, scale=1.0, random_state=0, size=2)),
    "objective_perturbation_calibration": (
        mechanisms.objective_perturbation_calibration,
        dict(epsilon=1.0, n=100, lam=0.01, norm_bound=1.0),
    ),
    "feature_split_calibration": (
        mechanisms.feature_split_calibration,
        dict(epsilon=1.0, n=100, lam=0.01, importance=[0.5, 0.5]),
    ),
    "output_perturbation_scale": (mechanisms.output_perturbation_scale, dict(sensitivity=1.0, epsilon=1.0)),
}


def names(message, param):
    return re.search(rf"(?<!\w){re.escape(param)}(?!\w)", message) is not None


def sweep():
    rows = []  # (callable, parameter, value, outcome, message)
    for cls_name in dpstack.__all__:
        obj = getattr(dpstack, cls_name)
        if cls_name in BASE:
            params = inspect.signature(obj).parameters
            for param in params:
                for value in GARBAGE:
                    est = obj(**BASE[cls_name])
                    est.set_params(**{param: value})
                    rows.append((cls_name, param, value, *call(lambda est=est: fit(est), param)))
    for fname, (f, kwargs) in FUNCTIONS.items():
        for param in kwargs:
            if param == "X":
                continue
            for value in GARBAGE:
                rows.append((fname, param, value, *call(lambda f=f, kw=kwargs | {param: value}: f(**kw), param)))
    return rows


def call(thunk, param):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            thunk()
        except Exception as exc:  # noqa: BLE001 - every error is what is measured
            msg = f"{type(exc).__name__}: {exc}"
            return ("named" if names(str(exc), param) else "unnamed"), msg[:160]
    return "accepted", ""


def main():
    rows = sweep()
    counts = {k: sum(r[3] == k for r in rows) for k in ("named", "unnamed", "accepted")}
    print(
        f"{len(rows)} calls: {counts['named']} raise naming the argument, {counts['unnamed']} raise without "
        f"naming it, {counts['accepted']} accepted"
    )
    for r in rows:
        if r[3] == "unnamed":
            print(f"  {r[0]}({r[1]}={r[2]!r}) -> {r[4]}")
    return counts


if __name__ == "__main__":
    main()
