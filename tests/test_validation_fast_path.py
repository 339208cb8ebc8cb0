"""The fast path of ``dpstack.base.validate_data`` / ``check_class_labels`` agrees with scikit-learn.

The composed estimators validate small arrays thousands of times per experiment grid, so plain
inputs skip scikit-learn's general checks; every other input must still meet scikit-learn's
checks, errors and warnings.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import validate_data as sklearn_validate_data

from dpstack import PrivateLogisticRegression
from dpstack.base import check_class_labels, validate_data


def _est():
    return PrivateLogisticRegression(epsilon=1.0, lam=0.1, classes=[0, 1])


def test_plain_arrays_pass_untouched_like_scikit_learn():
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 2
    a, b = _est(), _est()
    Xa, ya = validate_data(a, X, y)
    Xb, yb = sklearn_validate_data(b, X, y, dtype=float)
    assert Xa is X and ya is y and np.shares_memory(Xb, X)
    assert a.n_features_in_ == b.n_features_in_ == 3
    assert validate_data(a, X, reset=False) is X


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda X: np.where(np.arange(3) == 1, np.nan, X), ValueError, "NaN"),
        (lambda X: np.where(np.arange(3) == 1, np.inf, X), ValueError, "infinity"),
        (lambda X: X[:, :2], ValueError, "X has 2 features, but PrivateLogisticRegression is expecting 3"),
        (lambda X: X[:0], ValueError, "minimum of 1 is required"),
        (lambda X: X[:, 0], ValueError, "Expected 2D array, got 1D array"),
    ],
)
def test_bad_inputs_get_scikit_learns_errors(make, error, match):
    X = np.random.default_rng(1).normal(size=(10, 3))
    est = _est()
    validate_data(est, X, np.arange(10) % 2)
    with pytest.raises(error, match=match):
        validate_data(est, make(X), reset=False)


def test_labels_none_nan_or_continuous_are_refused():
    X = np.random.default_rng(2).normal(size=(10, 3))
    with pytest.raises(ValueError, match="requires y to be passed"):
        validate_data(_est(), X, None)
    with pytest.raises(ValueError, match="NaN"):
        validate_data(_est(), X, np.where(np.arange(10) == 3, np.nan, 1.0))
    with pytest.raises(ValueError, match="Unknown label type"):
        check_class_labels(np.linspace(0, 1, 10))
    assert check_class_labels(np.array([0.0, 1.0, 1.0])).tolist() == [0.0, 1.0, 1.0]
    with pytest.warns(DataConversionWarning):
        check_class_labels(np.array([[0], [1], [1]]))


def test_feature_names_still_checked():
    X = pd.DataFrame(np.random.default_rng(3).normal(size=(10, 2)), columns=["a", "b"])
    est = _est()
    validate_data(est, X, np.arange(10) % 2)
    assert list(est.feature_names_in_) == ["a", "b"]
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        validate_data(est, X.to_numpy(), reset=False)
    # refitting on an array forgets the names, as scikit-learn does
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        validate_data(est, X.to_numpy(), np.arange(10) % 2)
    assert not hasattr(est, "feature_names_in_")
