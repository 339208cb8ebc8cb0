"""scikit-learn's check_estimator for every dpstack estimator (issue 26, item 5).

``fit(X, y)`` is what scikit-learn's checks call. The transfer estimators also take the
source data and MultipartyPrivateClassifier the party ids: each is checked through a
subclass whose ``fit(X, y)`` supplies them from (X, y) itself (the source is the target
data; the rows are dealt to three parties and serve as the auxiliary data too). Everything
else — parameters, validation, prediction, tags — is the estimator's own.

Expected failures, each justified:

- ``check_non_transformer_estimators_n_iter``: the solvers' iteration counts depend on the
  private data and the noise, so they are kept in ``diagnostics_`` (``diagnostics=True``)
  and never as a public ``n_iter_``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import check_estimator

from dpstack import (
    FeatureSplitLogisticRegression,
    MultipartyPrivateClassifier,
    PrivateLogisticRegression,
    PrivateParameterTuning,
    PrivateStackingClassifier,
    PrivateTransferStacking,
    SimComb,
)

N_ITER = {
    "check_non_transformer_estimators_n_iter": "n_iter_ is a diagnostic (diagnostics=True): it depends on the noise"
}


class SourceIsTarget(PrivateTransferStacking):
    """PPTL-FS whose ``fit(X, y)`` uses (X, y) as the source too (for scikit-learn's checks)."""

    def fit(self, X, y):
        return super().fit(X, y, X_source=X, y_source=y)


class SimCombSourceIsTarget(SimComb):
    """SimComb whose ``fit(X, y)`` uses (X, y) as the source too (for scikit-learn's checks)."""

    def fit(self, X, y):
        return super().fit(X, y, X_source=X, y_source=y)


class ThreeParties(MultipartyPrivateClassifier):
    """MPL whose ``fit(X, y)`` deals the rows to three parties; the rows are the auxiliary data."""

    def fit(self, X, y):
        n = X.shape[0] if hasattr(X, "shape") else np.asarray(X).shape[0]
        return super().fit(X, y, np.arange(n) % 3, X_aux=X)


ESTIMATORS = {
    "PLR": PrivateLogisticRegression(random_state=0),
    "PLR-FS": FeatureSplitLogisticRegression(random_state=0),
    "PST-F": PrivateStackingClassifier(n_groups=1, epsilon=np.inf, random_state=0),
    "PST-S": PrivateStackingClassifier(partition="samples", n_groups=1, epsilon=np.inf, random_state=0),
    "PPTL-FS": SourceIsTarget(n_groups=1, epsilon_source=np.inf, epsilon_target=np.inf, random_state=0),
    "SimComb": SimCombSourceIsTarget(random_state=0),
    "MPL": ThreeParties(method="avg", epsilon=np.inf, random_state=0),
    "tuner": PrivateParameterTuning(PrivateLogisticRegression(), {"lam": [0.01, 0.1]}, random_state=0),
}


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_check_estimator_passes(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(ESTIMATORS[name], on_fail=None, expected_failed_checks=N_ITER)
    failed = [(r["check_name"], str(r["exception"])[:300]) for r in results if r["status"] == "failed"]
    assert failed == []
    xfailed = {r["check_name"] for r in results if r["status"] == "xfail"}
    assert xfailed <= set(N_ITER)
    assert sum(r["status"] == "passed" for r in results) >= 40
