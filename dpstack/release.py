"""Export what a private estimator releases, and load it back as a predictor — without pickle.

A fitted dpstack estimator is a Python object; what an organisation hands to another is its
*release*: the coefficients, intercepts, the public label set, the public calibration, the
parameters needed to predict and the privacy ledger. :func:`save_release` writes exactly
the attributes the estimator declares in ``_release_attributes`` (never ``diagnostics_``) to
a JSON file with a sha256 of its content; :func:`load_release` checks the format and the
checksum and rebuilds the estimator, ready for ``predict``, ``predict_proba`` and
``decision_function``. Only dpstack's own estimator and calibration classes can be named in
a file: loading never imports or runs anything else.

Publishing a model safely::

    clf = PrivateLogisticRegression(epsilon=1.0, classes=[0, 1]).fit(X, y)   # diagnostics off
    save_release(clf, "model.json")       # the release only: coef_, intercept_, classes_, ledger, …
    model = load_release("model.json")    # a predictor on the other side
    model.predict(X_new)

A ledger entry recorded for ``diagnostics=True`` is dropped from the exported ledger, since
the diagnostics themselves are not exported; any other step outside the guarantee (a label
set read from the data, for instance) stays in it.

**Column names.** When ``fit`` is given a pandas DataFrame, scikit-learn's input validation
stores its column names in ``feature_names_in_``, and ``predict`` then checks that new data
has the same columns. The names are exported with the release (:data:`SCHEMA_ATTRIBUTES`)
so that the loaded predictor performs the same check. They are the *schema* of the data —
which features exist, chosen before any record is seen — and are public: nothing in them
is computed from the values of a record. The export checks that they are exactly that, a
1-D list of ``n_features_in_`` strings, and refuses anything else.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .accounting import PrivacyLedger
from .base import DIAGNOSTICS, released_attributes

__all__ = [
    "release_dict",
    "from_release_dict",
    "save_release",
    "load_release",
    "ReleaseFormatError",
    "SCHEMA_ATTRIBUTES",
]

FORMAT = "dpstack-release"
FORMAT_VERSION = 1
#: fitted attributes exported with every release although no estimator lists them in
#: ``_release_attributes``: they describe the schema of the data (its column names), not its values
SCHEMA_ATTRIBUTES = ("feature_names_in_",)


class ReleaseFormatError(ValueError):
    """A release file is not a dpstack release, is of another version, or fails its checksum."""


def _estimator_classes():
    from .linear import FeatureSplitLogisticRegression, PrivateLogisticRegression
    from .multiparty import MultipartyPrivateClassifier
    from .stacking import PrivateStackingClassifier
    from .transfer import PrivateTransferStacking, SimComb
    from .tuning import PrivateParameterTuning

    return {
        c.__name__: c
        for c in (
            PrivateLogisticRegression,
            FeatureSplitLogisticRegression,
            PrivateStackingClassifier,
            PrivateTransferStacking,
            SimComb,
            MultipartyPrivateClassifier,
            PrivateParameterTuning,
        )
    }


def _dataclass_types():
    from .mechanisms import FeatureSplitCalibration, ObjectivePerturbationCalibration

    return {c.__name__: c for c in (ObjectivePerturbationCalibration, FeatureSplitCalibration)}


def _encode(value, where):
    """Plain JSON for the value types a release holds; anything else is refused by name."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float, np.integer, np.floating, np.bool_)):
        return value.item() if isinstance(value, np.generic) else value
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufU":
            raise TypeError(f"{where}: cannot export an array of dtype {value.dtype}")
        return {"__array__": value.tolist(), "dtype": value.dtype.str, "shape": list(value.shape)}
    if isinstance(value, (list, tuple)):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {str(k): _encode(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, PrivacyLedger):
        return {"__ledger__": [r for r in value.to_records() if r["mechanism"] != DIAGNOSTICS]}
    if dataclasses.is_dataclass(value) and type(value).__name__ in _dataclass_types():
        return {
            "__dataclass__": type(value).__name__,
            "fields": {f.name: _encode(getattr(value, f.name), f"{where}.{f.name}") for f in dataclasses.fields(value)},
        }
    if type(value).__name__ in _estimator_classes():
        return release_dict(value)
    raise TypeError(f"{where}: cannot export a value of type {type(value).__name__}")


def _decode(value):
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__feature_names__" in value:
        names = value["__feature_names__"]
        if not isinstance(names, list) or not all(isinstance(v, str) for v in names):
            raise ReleaseFormatError("feature_names_in_ must be a list of column names (str)")
        return np.asarray(names, dtype=object)
    if "__array__" in value:
        arr = np.array(value["__array__"], dtype=np.dtype(value["dtype"]))
        return arr.reshape(value["shape"])
    if "__ledger__" in value:
        return PrivacyLedger.from_records(value["__ledger__"])
    if "__dataclass__" in value:
        types = _dataclass_types()
        if value["__dataclass__"] not in types:
            raise ReleaseFormatError(f"unknown calibration type {value['__dataclass__']!r}")
        return types[value["__dataclass__"]](**{k: _decode(v) for k, v in value["fields"].items()})
    if "__estimator__" in value:
        return from_release_dict(value)
    return {k: _decode(v) for k, v in value.items()}


def _feature_names(estimator, where):
    """``feature_names_in_`` as a list of str, checked to be column names and nothing else."""
    names = estimator.feature_names_in_
    arr = np.asarray(names, dtype=object)
    n_features = getattr(estimator, "n_features_in_", None)
    if arr.ndim != 1 or not all(isinstance(v, str) for v in arr) or (n_features is not None and arr.size != n_features):
        raise TypeError(
            f"{where}: feature_names_in_ must be the {n_features} column names (str) of the "
            f"training DataFrame, got {names!r}"
        )
    return {"__feature_names__": [str(v) for v in arr]}


def _public_params(estimator):
    params = {}
    for name, value in estimator.get_params(deep=False).items():
        if name == "random_state":
            value = None  # the seed of the noise is not part of the release
        elif name == "diagnostics":
            value = False
        elif type(value).__name__ in _estimator_classes():
            # an estimator given as a parameter (the template of PrivateParameterTuning): its
            # parameters only, never its fitted state (a fitted model is released as an attribute)
            value = {
                "__estimator__": type(value).__name__,
                "params": _encode(_public_params(value), f"{name}.params"),
                "attributes": {},
            }
        params[name] = value
    return params


def release_dict(estimator):
    """The release of a fitted estimator as a JSON-ready dict (parameters + released attributes).

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    TypeError
        If it is not a dpstack estimator or holds a value that has no safe encoding.
    """
    name = type(estimator).__name__
    if name not in _estimator_classes():
        raise TypeError(f"save_release exports dpstack's estimators, not {name}")
    check_is_fitted(estimator)
    attributes = {
        a: _encode(getattr(estimator, a), f"{name}.{a}")
        for a in released_attributes(estimator)
        if hasattr(estimator, a)
    }
    for a in SCHEMA_ATTRIBUTES:
        if hasattr(estimator, a):
            attributes[a] = _feature_names(estimator, f"{name}.{a}")
    return {
        "__estimator__": name,
        "params": _encode(_public_params(estimator), f"{name}.params"),
        "attributes": attributes,
    }


def from_release_dict(payload):
    """Rebuild the predictor described by :func:`release_dict`'s output."""
    classes = _estimator_classes()
    name = payload.get("__estimator__")
    if name not in classes:
        raise ReleaseFormatError(f"unknown estimator {name!r}; a release names one of {sorted(classes)}")
    cls = classes[name]
    est = cls(**_decode(payload["params"]))
    allowed = set(released_attributes(est)) | set(SCHEMA_ATTRIBUTES)
    for attr, value in payload["attributes"].items():
        if attr not in allowed:
            raise ReleaseFormatError(f"{name} does not release an attribute {attr!r}")
        if attr in SCHEMA_ATTRIBUTES and not (isinstance(value, dict) and "__feature_names__" in value):
            raise ReleaseFormatError(f"{name}.{attr} must be a list of column names")
        setattr(est, attr, _decode(value))
    return est


def _digest(payload):
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def save_release(estimator, path):
    """Write the release of a fitted estimator to ``path`` (JSON). Returns the path.

    Only the attributes in the estimator's ``_release_attributes`` are written (never
    ``diagnostics_``), with the parameters needed to predict, the column names of a DataFrame
    the estimator was fitted on (``feature_names_in_``: public schema, see the module doc) and
    a sha256 of the content.
    """
    from . import __version__

    payload = release_dict(estimator)
    doc = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "dpstack_version": __version__,
        "sha256": _digest(payload),
        "release": payload,
    }
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{id(doc):x}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True))
    tmp.replace(path)
    return path


def load_release(path):
    """Load a release written by :func:`save_release` as a fitted predictor.

    Raises
    ------
    ReleaseFormatError
        If the file is not a dpstack release of a known version, or its content does not
        match its sha256 (corrupted or edited).
    """
    try:
        doc = json.loads(Path(path).read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReleaseFormatError(f"{path}: not a dpstack release (not JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ReleaseFormatError(f"{path}: not a dpstack release (format field missing or different)")
    if doc.get("format_version") != FORMAT_VERSION:
        raise ReleaseFormatError(
            f"{path}: release format version {doc.get('format_version')!r}, this dpstack reads version {FORMAT_VERSION}"
        )
    if _digest(doc.get("release")) != doc.get("sha256"):
        raise ReleaseFormatError(f"{path}: the content does not match its sha256 (corrupted or edited)")
    try:
        return from_release_dict(doc["release"])
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ReleaseFormatError):
            raise
        raise ReleaseFormatError(f"{path}: malformed release ({type(exc).__name__}: {exc})") from None
