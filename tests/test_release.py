"""Exporting what an estimator releases (JSON, no pickle) and loading it back as a predictor."""

import json

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from dpstack import FeatureSplitLogisticRegression, PrivacyLedger, PrivateLogisticRegression
from dpstack.release import ReleaseFormatError, load_release, save_release


def _data(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / 3
    return X, np.where(X[:, 0] - X[:, 1] > 0, "spam", "ham")


@pytest.mark.parametrize(
    "est",
    [
        PrivateLogisticRegression(epsilon=1.0, lam=0.01, fit_intercept=True, random_state=0, classes=["ham", "spam"]),
        FeatureSplitLogisticRegression(
            epsilon=0.5,
            groups=[[0, 1], [2, 3]],
            importance=[0.7, 0.3],
            lam=[0.01, 0.02],
            random_state=0,
            classes=["ham", "spam"],
            diagnostics=True,
        ),
    ],
    ids=["PLR", "PLR-FS"],
)
def test_release_round_trip_predicts_identically(est, tmp_path):
    X, y = _data()
    est.fit(X, y)
    path = save_release(est, tmp_path / "model.json")
    text = path.read_text()
    assert "diagnostics_" not in text and "noise_norm" not in text
    model = load_release(path)
    assert type(model) is type(est)
    np.testing.assert_array_equal(model.decision_function(X), est.decision_function(X))
    np.testing.assert_array_equal(model.predict(X), est.predict(X))
    assert list(model.classes_) == ["ham", "spam"]
    # the exported ledger is that of the release: a diagnostics entry is not carried over
    assert model.privacy_.total() == est.privacy_.mechanism_total()
    assert not hasattr(model, "diagnostics_") and model.diagnostics is False and model.random_state is None


def test_release_integrity_and_refusals(tmp_path):
    X, y = _data()
    est = PrivateLogisticRegression(epsilon=1.0, random_state=0, classes=["ham", "spam"]).fit(X, y)
    path = save_release(est, tmp_path / "m.json")
    doc = json.loads(path.read_text())
    doc["release"]["source"]["coef_"]["__array__"][0][0] += 1.0  # an edited coefficient
    path.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFormatError, match="sha256"):
        load_release(path)
    (tmp_path / "bad.json").write_bytes(b"\x80\x03cos\nsystem\n")  # a pickle is not a release
    with pytest.raises(ReleaseFormatError, match="not JSON"):
        load_release(tmp_path / "bad.json")
    with pytest.raises(NotFittedError):
        save_release(PrivateLogisticRegression(), tmp_path / "x.json")
    with pytest.raises(TypeError, match="dpstack's estimators"):
        save_release(object(), tmp_path / "x.json")


def test_release_names_only_dpstack_classes(tmp_path):
    X, y = _data()
    est = PrivateLogisticRegression(epsilon=1.0, random_state=0, classes=["ham", "spam"]).fit(X, y)
    path = save_release(est, tmp_path / "m.json")
    doc = json.loads(path.read_text())
    from dpstack.release import _digest

    doc["release"]["__estimator__"] = "subprocess.Popen"
    doc["sha256"] = _digest(doc["release"])
    path.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFormatError, match="unknown estimator"):
        load_release(path)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), "1", True])
def test_ledger_refuses_impossible_epsilons(bad):
    with pytest.raises(ValueError, match="epsilon must be a real number >= 0"):
        PrivacyLedger().add("PLR", "D", bad)


def test_ledger_records_round_trip_with_infinite_steps():
    led = PrivacyLedger()
    led.add("PLR", "D_l", 1.0)
    led.add_outside("PCA fitted on the private data", "D_l", "outside the guarantee")
    back = PrivacyLedger.from_records(json.loads(json.dumps(led.to_records())))
    assert back.entries == led.entries and back.total() == np.inf and back.mechanism_total() == 1.0


def _frame(n=200, seed=0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)) / 3, columns=["age", "bmi", "glu0", "hdl"])
    return X, (X["age"] - X["bmi"] > 0).astype(int).to_numpy()


def _frame_models():
    from dpstack import MultipartyPrivateClassifier, PrivateStackingClassifier, PrivateTransferStacking, SimComb

    X, y = _frame()
    Xs, ys = _frame(300, seed=1)
    return [
        (PrivateLogisticRegression(random_state=0, classes=[0, 1]), {}),
        (
            FeatureSplitLogisticRegression(
                groups=[[0, 1], [2, 3]], importance=[0.6, 0.4], random_state=0, classes=[0, 1]
            ),
            {},
        ),
        (PrivateStackingClassifier(groups=[[0, 1], [2, 3]], random_state=0, classes=[0, 1]), {}),
        (
            PrivateTransferStacking(groups=[[0, 1], [2, 3]], random_state=0, classes=[0, 1]),
            dict(X_source=Xs, y_source=ys),
        ),
        (SimComb(random_state=0, classes=[0, 1]), dict(X_source=Xs, y_source=ys)),
        (
            MultipartyPrivateClassifier("soft", random_state=0, classes=[0, 1]),
            dict(parties=np.arange(len(y)) % 5, X_aux=X.iloc[:40]),
        ),
    ]


@pytest.mark.parametrize("i", range(6), ids=["PLR", "PLR-FS", "PST", "PPTL-FS", "SimComb", "MPL"])
def test_release_keeps_the_column_names_of_a_dataframe(i, tmp_path):
    """feature_names_in_ (the DataFrame's column names, nothing else) survives the round trip, so the
    loaded predictor checks new data's columns exactly as the fitted one does."""
    import warnings

    X, y = _frame()
    est, fit_params = _frame_models()[i]
    est.fit(X, y, **fit_params)
    path = save_release(est, tmp_path / "model.json")
    doc = json.loads(path.read_text())
    # exported as the column names and nothing derived from the values
    assert doc["release"]["source"]["feature_names_in_"] == {"__feature_names__": ["age", "bmi", "glu0", "hdl"]}
    model = load_release(path)
    assert list(model.feature_names_in_) == list(X.columns) == list(est.feature_names_in_)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "fitted without feature names" warning
        np.testing.assert_array_equal(model.predict(X), est.predict(X))
    with pytest.warns(UserWarning, match="fitted with feature names"):  # the same check as the original's
        model.predict(X.to_numpy())
    renamed = X.rename(columns={"glu0": "glucose"})
    with pytest.raises(ValueError, match="feature names"):
        est.predict(renamed)
    with pytest.raises(ValueError, match="feature names"):
        model.predict(renamed)


def test_release_refuses_feature_names_that_are_not_column_names(tmp_path):
    X, y = _frame()
    est = PrivateLogisticRegression(random_state=0, classes=[0, 1]).fit(X, y)
    est.feature_names_in_ = np.asarray(X.iloc[0].to_numpy(), dtype=object)  # values of a record, not names
    with pytest.raises(TypeError, match="column names"):
        save_release(est, tmp_path / "m.json")
    est.fit(X, y)
    path = save_release(est, tmp_path / "m.json")
    doc = json.loads(path.read_text())
    from dpstack.release import _digest

    doc["release"]["source"]["feature_names_in_"] = {
        "__array__": [0.1, 0.2, 0.3, 0.4],
        "dtype": "<f8",
        "shape": [4],
    }
    doc["sha256"] = _digest(doc["release"])
    path.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFormatError, match="column names"):
        load_release(path)


@pytest.mark.parametrize(
    "record, message",
    [
        ({"mechanism": "m", "part": "D"}, "record 0 lacks the field 'epsilon'"),
        ({"part": "D", "epsilon": 1.0}, "lacks the field 'mechanism'"),
        ({"mechanism": "m", "part": "D", "epsilon": 1.0, "outside": "false"}, "outside must be true or false"),
        ({"mechanism": "m", "part": "D", "epsilon": 1.0, "outisde": True}, "unknown field 'outisde'"),
        (["m", "D", 1.0], "record 0 must be a dict"),
    ],
)
def test_ledger_records_that_do_not_fit_name_the_field(record, message):
    with pytest.raises(ValueError, match=message):
        PrivacyLedger.from_records([record])
