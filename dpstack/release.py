"""Export what a private estimator releases, and load it back as a predictor — without pickle.

A fitted dpstack estimator is a Python object; what an organisation hands to another is its
*release*: the coefficients, intercepts, the public label set, the public parameters needed to
predict and the public number of training samples. :func:`save_release` writes that minimal
source, for the estimator and every model nested in it, to a strict JSON file (no NaN, no
Infinity); :func:`load_release` checks the file and rebuilds the predictor, ready for
``predict``, ``predict_proba`` and ``decision_function``. Only dpstack's own estimator classes
can be named in a file: loading never imports or runs anything else.

Publishing a model safely::

    clf = PrivateLogisticRegression(epsilon=1.0, classes=[0, 1]).fit(X, y)   # diagnostics off
    save_release(clf, "model.json", key=key)   # the release only, with an HMAC under your key
    model = load_release("model.json", key=key)  # a predictor on the other side
    model.predict(X_new)

**One source, everything else recomputed.** The file holds the coefficients (``coef_``, or
``coef_`` and ``intercept_``), the label set, the fitted structure that is itself released
(groups, importances, nested models, the chosen candidate of a tuning) and the public parameters.
Every other attribute is rebuilt from them by the same code that ``fit`` uses: ``w_`` from
``coef_`` and ``intercept_``, the calibration (ε′, Δ, the noise scale) from ε, λ, the bound and
the public n, the sensitivity of MPL from its parameters, and the privacy ledger ``privacy_``
from the parameters (a ledger in the file is never read). An edited file can therefore not
show one set of coefficients and predict with another, nor claim an ε its parameters do not
give. A ledger entry recorded for ``diagnostics=True`` is not part of the release (the
diagnostics are not exported); any other step outside the guarantee (a label set read from
the data, ``row_bound="private_max"``) follows from the parameters and stays in it.

**What the file is checked for.** The loader refuses, with a :class:`ReleaseFormatError`
naming what is wrong: a file larger than :data:`MAX_FILE_BYTES`; a tuning ``param_grid`` that
expands to more than :data:`MAX_GRID_SETTINGS` settings and a count (``n_features_in_``,
``n_parties_``) above :data:`MAX_COUNT`, both before anything is expanded or allocated;
anything but strict JSON (``NaN``, ``Infinity``); a repeated key in any JSON object; nesting deeper than
:data:`MAX_DEPTH`; an array whose dtype is not a plain bool, integer, float or short string
(object, structured, sub-array and oversized dtypes are refused before any memory is
allocated), whose declared shape does not match its data or whose size exceeds
:data:`MAX_ARRAY_ELEMENTS`; NaN or infinite coefficients; attributes a class does not
release; shapes that do not fit together (checked by predicting one row).

**What the sha256 protects against: accidental corruption only.** The checksum is computed
over the content and stored beside it, so anyone who edits the file can recompute it; it
catches a truncated download or a flipped bit, not an edit. For a file that passes through
other hands, use **authentication**: ``save_release(est, path, key=key)`` adds an
HMAC-SHA256 of the canonical content under a secret key (at least 16 bytes, e.g.
``secrets.token_bytes(32)``) that only the publisher and the intended readers hold, and
``load_release(path, key=key)`` refuses a file whose MAC does not match (edited, or saved
under another key) or that has none. Without a key, a file that claims a MAC loads with an
:class:`UnauthenticatedReleaseWarning` (its MAC cannot be checked). HMAC-SHA256 (RFC 2104,
FIPS 198-1) is in Python's standard library (``hmac``, ``hashlib``), maintained with Python
itself, so no third-party dependency is needed. A shared secret proves the file came from
someone holding the key; when readers must not be able to produce releases themselves, sign
the file with a public-key signature tool outside dpstack (e.g. ``ssh-keygen -Y sign`` or GPG).

**Saving is atomic.** The file is written to a temporary file with a unique name in the
target directory and moved over the target with :func:`os.replace`, so two processes saving
the same release never collide and a reader sees the old file or the new one, never a
partial one.

**Column names.** When ``fit`` is given a pandas DataFrame, scikit-learn's input validation
stores its column names in ``feature_names_in_``, and ``predict`` then checks that new data
has the same columns. The names are exported with the release (:data:`SCHEMA_ATTRIBUTES`)
so that the loaded predictor performs the same check. They are the *schema* of the data —
which features exist, chosen before any record is seen — and are public: nothing in them
is computed from the values of a record. The export checks that they are exactly that, a
1-D list of ``n_features_in_`` strings, and refuses anything else.
"""

from __future__ import annotations

import glob
import hashlib
import hmac
import json
import math
import os
import re
import stat
import tempfile
import warnings
from pathlib import Path

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._files import remove_orphans, temp_suffix
from .base import ReleaseFormatError, released_attributes

__all__ = [
    "release_dict",
    "from_release_dict",
    "save_release",
    "load_release",
    "ReleaseFormatError",
    "UnauthenticatedReleaseWarning",
    "SCHEMA_ATTRIBUTES",
    "MAX_FILE_BYTES",
    "MAX_ARRAY_ELEMENTS",
    "MAX_DEPTH",
    "MAX_GRID_SETTINGS",
    "MAX_COUNT",
]

FORMAT = "dpstack-release"
#: version 2: the minimal source only (derived attributes and the ledger are recomputed), strict JSON
FORMAT_VERSION = 2
#: fitted attributes exported with every release although no estimator lists them in
#: ``_release_attributes``: they describe the schema of the data (its column names), not its values
SCHEMA_ATTRIBUTES = ("feature_names_in_",)
#: largest release file the loader reads (bytes)
MAX_FILE_BYTES = 64 * 2**20
#: largest number of elements of one array in a release
MAX_ARRAY_ELEMENTS = 10**7
#: most digits of one JSON integer in a release (an int64 has at most 19)
MAX_INT_DIGITS = 18
#: deepest nesting of JSON objects and lists in a release
MAX_DEPTH = 64
#: most parameter settings a tuning release's param_grid may expand to (the loader lists them)
MAX_GRID_SETTINGS = 10**4
#: largest count a release may state (n_features_in_, n_parties_): the loader and the predictor
#: size arrays by them
MAX_COUNT = MAX_ARRAY_ELEMENTS
#: largest item size of a string array (bytes), and of a numeric one
_MAX_STR_ITEMSIZE = 4 * 1024
_MAX_NUM_ITEMSIZE = 8
#: the dtype strings an array may declare: plain bool, integer, float, string (no object,
#: structured or sub-array dtypes, which could hide an allocation of any size)
_DTYPE = re.compile(r"[<>|=]?(b1|[iu][1248]|f[48]|U[0-9]{1,4})")
#: the shortest HMAC key accepted (bytes)
MIN_KEY_BYTES = 16


class UnauthenticatedReleaseWarning(UserWarning):
    """A release claims an HMAC, but no key was given to check it: the file is unauthenticated."""


def estimator_classes():
    """The classes a release may name: dpstack's estimators, by class name."""
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


# ---------------------------------------------------------------- what a release holds
#: per class: the fitted attributes written to the file (the minimal source, the class's
#: ``_release_source``); every other released attribute is recomputed on load by the class's
#: ``_from_release``
SOURCE = {name: tuple(cls._release_source) for name, cls in estimator_classes().items()}
#: the classes a nested release may name, per attribute
NESTED = {
    "low_level_": ("FeatureSplitLogisticRegression", "PrivateLogisticRegression"),
    "high_level_": ("PrivateLogisticRegression",),
    "source_": ("FeatureSplitLogisticRegression", "PrivateLogisticRegression"),
    "target_": ("PrivateLogisticRegression",),
    "best_estimator_": (
        "PrivateLogisticRegression",
        "FeatureSplitLogisticRegression",
        "PrivateStackingClassifier",
        "PrivateTransferStacking",
        "SimComb",
        "MultipartyPrivateClassifier",
    ),
}
#: attributes that hold coefficients: they must be finite
_COEFFICIENTS = ("coef_", "intercept_", "local_coefs_")


def _source_value(estimator, name):
    """The value of source item ``name`` of a fitted estimator (``_MISSING`` when it has none)."""
    if name == "n_samples":
        return int(estimator.calibration_.n_samples)
    if name == "n_aux":
        return estimator._released_n_aux()
    return getattr(estimator, name, _MISSING)


_MISSING = object()


# ---------------------------------------------------------------- encoding
def _encode_float(value):
    value = float(value)
    if math.isfinite(value):
        return value
    return {"__float__": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}


def _encode(value, where):
    """Strict JSON for the value types a release holds; anything else is refused by name."""
    if value is None or isinstance(value, (bool, str, np.bool_)):
        return bool(value) if isinstance(value, np.bool_) else value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _encode_float(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufU" or value.dtype.shape != ():
            raise TypeError(f"{where}: cannot export an array of dtype {value.dtype}")
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise TypeError(f"{where}: cannot export an array with NaN or infinite values")
        return {"__array__": value.tolist(), "dtype": value.dtype.str, "shape": list(value.shape)}
    if isinstance(value, (list, tuple)):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {str(k): _encode(v, f"{where}[{k!r}]") for k, v in value.items()}
    if type(value).__name__ in estimator_classes():
        return release_dict(value)
    raise TypeError(f"{where}: cannot export a value of type {type(value).__name__}")


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
        elif type(value).__name__ in estimator_classes():
            # an estimator given as a parameter (the template of PrivateParameterTuning): its
            # parameters only, never its fitted state (a fitted model is released as an attribute)
            value = {"__estimator__": type(value).__name__, "params": _public_params(value), "source": {}}
        params[name] = value
    return params


def release_dict(estimator):
    """The release of a fitted estimator as a JSON-ready dict: its public parameters and its
    minimal source (:data:`SOURCE`), nested releases included.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    TypeError
        If it is not a dpstack estimator or holds a value that has no safe encoding.
    """
    name = type(estimator).__name__
    classes = estimator_classes()
    if name not in classes or type(estimator) is not classes[name]:
        raise TypeError(f"save_release exports dpstack's estimators, not {type(estimator).__qualname__}")
    check_is_fitted(estimator)
    source = {}
    for item in SOURCE[name]:
        value = _source_value(estimator, item)
        if value is not _MISSING:
            source[item] = _encode(value, f"{name}.{item}")
    for a in SCHEMA_ATTRIBUTES:
        if hasattr(estimator, a):
            source[a] = _feature_names(estimator, f"{name}.{a}")
    return {
        "__estimator__": name,
        "params": _encode(_public_params(estimator), f"{name}.params"),
        "source": source,
    }


# ---------------------------------------------------------------- decoding (strict)
def _decode_array(value, where):
    if set(value) != {"__array__", "dtype", "shape"}:
        raise ReleaseFormatError(f"{where}: an array holds exactly __array__, dtype and shape, got {sorted(value)}")
    dtype_str, shape = value["dtype"], value["shape"]
    if not isinstance(dtype_str, str) or not _DTYPE.fullmatch(dtype_str):
        raise ReleaseFormatError(
            f"{where}: dtype {str(dtype_str)[:40]!r} is not a plain bool, integer, float or string dtype "
            "(e.g. '<f8', '<i8', '|b1', '<U12')"
        )
    try:
        dtype = np.dtype(dtype_str)
    except (TypeError, ValueError):
        raise ReleaseFormatError(f"{where}: unknown dtype {dtype_str!r}") from None
    if dtype.shape != () or dtype.fields is not None or dtype.kind not in "biufU":
        raise ReleaseFormatError(f"{where}: dtype {dtype_str!r} is not a plain bool, integer, float or string dtype")
    limit = _MAX_STR_ITEMSIZE if dtype.kind == "U" else _MAX_NUM_ITEMSIZE
    if dtype.itemsize > limit:
        raise ReleaseFormatError(f"{where}: dtype {dtype_str!r} has items of {dtype.itemsize} bytes (limit {limit})")
    if (
        not isinstance(shape, list)
        or len(shape) > 4
        or not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= MAX_ARRAY_ELEMENTS for k in shape)
    ):
        raise ReleaseFormatError(f"{where}: shape must be a list of at most 4 sizes >= 0, got {shape!r}")
    size = math.prod(shape)
    if size > MAX_ARRAY_ELEMENTS:
        raise ReleaseFormatError(f"{where}: shape {shape} has {size} elements (limit {MAX_ARRAY_ELEMENTS})")
    data = value["__array__"]
    # the data must be nested lists of exactly the declared shape, checked before numpy sees them
    level = [data]
    for k in shape:
        nxt = []
        for item in level:
            if not isinstance(item, list) or len(item) != k:
                raise ReleaseFormatError(f"{where}: the data do not have the declared shape {shape}")
            nxt.extend(item)
        level = nxt
    kinds = {"b": (bool,), "i": (int,), "u": (int,), "f": (int, float), "U": (str,)}[dtype.kind]
    for item in level:
        if not isinstance(item, kinds) or (dtype.kind in "iuf" and isinstance(item, bool)):
            raise ReleaseFormatError(f"{where}: an element {item!r} does not fit dtype {dtype_str!r}")
    try:
        arr = np.array(data, dtype=dtype)
    except (OverflowError, ValueError) as exc:
        raise ReleaseFormatError(f"{where}: {exc}") from None
    if arr.shape != tuple(shape):
        raise ReleaseFormatError(f"{where}: the data have shape {arr.shape}, the file declares {tuple(shape)}")
    if dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ReleaseFormatError(f"{where}: NaN or infinite values")
    return arr


def _decode(value, where, depth=0):
    if depth > MAX_DEPTH:
        raise ReleaseFormatError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, list):
        return [_decode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    if "__float__" in value:
        if set(value) != {"__float__"} or value["__float__"] not in ("inf", "-inf", "nan"):
            raise ReleaseFormatError(f"{where}: a special float is one of 'inf', '-inf', 'nan'")
        return float(value["__float__"])
    if "__feature_names__" in value:
        names = value["__feature_names__"]
        if (
            set(value) != {"__feature_names__"}
            or not isinstance(names, list)
            or not all(isinstance(v, str) for v in names)
        ):
            raise ReleaseFormatError(f"{where}: feature_names_in_ must be a list of column names (str)")
        return np.asarray(names, dtype=object)
    if "__array__" in value:
        return _decode_array(value, where)
    if "__estimator__" in value:
        return _from_release_dict(value, where, depth + 1)
    return {k: _decode(v, f"{where}[{k!r}]", depth + 1) for k, v in value.items()}


def _check_grid_size(grid, where):
    """Refuse a param_grid that expands to more than :data:`MAX_GRID_SETTINGS` settings, counted
    without expanding it (the product of the value lists' lengths, summed over a list of grids)."""
    grids = grid if isinstance(grid, list) else [grid]
    total = 0
    for g in grids:
        if not isinstance(g, dict):
            return  # not a grid: the estimator's own check names it
        count = 1
        for values in g.values():
            count *= len(values) if isinstance(values, (list, tuple, np.ndarray)) else 1
            if count > MAX_GRID_SETTINGS:
                break
        total += count
        if total > MAX_GRID_SETTINGS:
            raise ReleaseFormatError(
                f"{where}: expands to more than {MAX_GRID_SETTINGS} parameter settings (limit MAX_GRID_SETTINGS)"
            )


def from_release_dict(payload):
    """Rebuild the predictor described by :func:`release_dict`'s output (every derived attribute
    and the ledger recomputed, see the module doc).

    Raises
    ------
    ReleaseFormatError
        If the payload is malformed, names an unknown class or attribute, or does not fit together.
    """
    return _from_release_dict(payload, "release", 0)


def _from_release_dict(payload, where, depth):
    classes = estimator_classes()
    if not isinstance(payload, dict):
        raise ReleaseFormatError(f"{where}: a release is a JSON object")
    name = payload.get("__estimator__")
    if name not in classes:
        raise ReleaseFormatError(f"{where}: unknown estimator {name!r}; a release names one of {sorted(classes)}")
    extra = set(payload) - {"__estimator__", "params", "source"}
    if extra or not isinstance(payload.get("params"), dict) or not isinstance(payload.get("source"), dict):
        raise ReleaseFormatError(f"{where}: a release holds __estimator__, params and source (got {sorted(payload)})")
    cls = classes[name]
    params = _decode(payload["params"], f"{where}.params", depth + 1)
    known = (
        set(cls().get_params(deep=False))
        if name != "PrivateParameterTuning"
        else {
            "estimator",
            "param_grid",
            "epsilon_select",
            "random_state",
            "diagnostics",
        }
    )
    if set(params) - known:
        raise ReleaseFormatError(f"{where}: {name} has no parameter {sorted(set(params) - known)[0]!r}")
    if params.get("random_state") is not None or params.get("diagnostics", False) is not False:
        raise ReleaseFormatError(f"{where}: a release carries random_state=None and diagnostics=False")
    if "param_grid" in params:
        _check_grid_size(params["param_grid"], f"{where}.params.param_grid")
    est = cls(**params)
    if not payload["source"]:
        return est  # an estimator given as a parameter (a tuning template): parameters only, not fitted
    allowed = set(SOURCE[name]) | set(SCHEMA_ATTRIBUTES)
    for attr, value in payload["source"].items():
        if attr not in allowed:
            derived = attr in released_attributes(est)
            raise ReleaseFormatError(
                f"{where}: {name} does not take {attr!r} from a file"
                + (" (it is recomputed from the source, never read)" if derived else "")
            )
        if attr in SCHEMA_ATTRIBUTES and not (isinstance(value, dict) and "__feature_names__" in value):
            raise ReleaseFormatError(f"{where}: {name}.{attr} must be a list of column names")
        decoded = _decode(value, f"{where}.{attr}", depth + 1)
        if attr in NESTED:
            models = decoded if isinstance(decoded, list) else [decoded]
            if not all(type(m).__name__ in NESTED[attr] for m in models):
                raise ReleaseFormatError(f"{where}: {name}.{attr} must be one of {NESTED[attr]}")
            if not all(hasattr(m, "classes_") for m in models):
                raise ReleaseFormatError(f"{where}: {name}.{attr} must be a fitted release")
        if attr in _COEFFICIENTS and decoded is not None and not isinstance(decoded, np.ndarray):
            raise ReleaseFormatError(f"{where}: {name}.{attr} must be an array")
        if attr in ("n_samples", "n_aux", "n_features_in_", "n_parties_", "best_index_") and decoded is not None:
            if (
                isinstance(decoded, bool)
                or not isinstance(decoded, int)
                or decoded < (0 if attr == "best_index_" else 1)
            ):
                raise ReleaseFormatError(f"{where}: {name}.{attr} must be a positive integer, got {decoded!r}")
            if attr in ("n_features_in_", "n_parties_") and decoded > MAX_COUNT:
                raise ReleaseFormatError(
                    f"{where}: {name}.{attr} = {decoded} is larger than a release may state (limit {MAX_COUNT})"
                )
        setattr(est, attr, decoded)
    try:
        est._from_release()
        _check_predicts(est)
    except ReleaseFormatError:
        raise
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
        raise ReleaseFormatError(f"{where}: {name} does not fit together ({type(exc).__name__}: {exc})") from None
    return est


def _check_predicts(est):
    """The shapes fit together: one row of zeros goes through ``predict`` to a finite margin."""
    if not hasattr(est, "n_features_in_"):
        return
    if (hasattr(est, "fit_source") and not hasattr(est, "privacy_")) or (getattr(est, "method", None) == "indiv"):
        return  # a source release alone (fitted on a target later), or MPL's non-private reference
    X = np.zeros((1, int(est.n_features_in_)))
    if hasattr(est, "feature_names_in_"):
        import pandas as pd

        X = pd.DataFrame(X, columns=list(est.feature_names_in_))
    est.predict(X)
    if (
        hasattr(est, "coef_")
        or hasattr(est, "high_level_")
        or hasattr(est, "target_")
        or hasattr(est, "best_estimator_")
    ):
        try:
            margins = np.asarray(est.decision_function(X), dtype=float)
        except (AttributeError, NotImplementedError):
            return
        if not np.all(np.isfinite(margins)):
            raise ReleaseFormatError(f"{type(est).__name__}: the coefficients give a non-finite margin")


def _require(est, *names):
    for n in names:
        if getattr(est, n, None) is None:
            raise ReleaseFormatError(f"{type(est).__name__}: the release lacks {n!r}")


# ---------------------------------------------------------------- the file
def _canonical(payload):
    """The bytes the checksum and the MAC are computed over (strict JSON, sorted keys)."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=True).encode()


def _digest(payload):
    return hashlib.sha256(_canonical(payload)).hexdigest()


def _key_bytes(key):
    if isinstance(key, str):
        key = key.encode()
    if not isinstance(key, (bytes, bytearray)):
        raise TypeError(f"key must be bytes or str, got {type(key).__name__}")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"key must be at least {MIN_KEY_BYTES} bytes (e.g. secrets.token_bytes(32)), got {len(key)}")
    return bytes(key)


def _mac(key, payload):
    return hmac.new(key, b"dpstack-release-v2\x00" + _canonical(payload), hashlib.sha256).hexdigest()


def save_release(estimator, path, key=None):
    """Write the release of a fitted estimator to ``path`` (strict JSON). Returns the path.

    Only the minimal source of the release is written (see the module doc; never
    ``diagnostics_`` or a seed), with the parameters needed to predict, the column names of a
    DataFrame the estimator was fitted on (``feature_names_in_``: public schema) and a sha256
    of the content (protects against accidental corruption only).

    Parameters
    ----------
    estimator : fitted dpstack estimator
    path : str or path-like
    key : bytes or str or None, default=None
        A secret of at least 16 bytes: adds an HMAC-SHA256 of the content, which
        :func:`load_release` checks when given the same key.
    """
    from . import __version__

    mac_key = None if key is None else _key_bytes(key)
    payload = release_dict(estimator)
    doc = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "dpstack_version": __version__,
        "sha256": _digest(payload),
        "release": payload,
    }
    if mac_key is not None:
        doc["hmac_sha256"] = _mac(mac_key, payload)
    text = json.dumps(doc, indent=1, sort_keys=True, allow_nan=False)
    path = Path(path)
    remove_orphans(path.parent, f".{glob.escape(path.name)}.*.tmp")  # left by a writer killed mid-write
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=temp_suffix(), dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _refuse_constant(name):
    raise ReleaseFormatError(f"not strict JSON: {name} is not a JSON number")


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise ReleaseFormatError(f"the JSON number {text[:20]} is not a finite number (double)")
    return value


def _bounded_int(text):
    digits = text.lstrip("-")
    if len(digits) > MAX_INT_DIGITS:
        raise ReleaseFormatError(
            f"the JSON integer {text[:20]}… has {len(digits)} digits; a release holds none over {MAX_INT_DIGITS}"
        )
    return int(text)


def _read_regular_file(path, limit):
    """Up to ``limit + 1`` bytes of ``path``, refusing anything but a regular file before reading.

    The file is opened without blocking (a named pipe with no writer would otherwise wait
    forever) and checked on the open descriptor, so it cannot be swapped in between.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ReleaseFormatError(f"{path}: not a regular file (a folder, a pipe or a device), so not a release")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as f:
            fd = None
            return f.read(limit + 1)
    finally:
        if fd is not None:
            os.close(fd)


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ReleaseFormatError(f"duplicate key {k!r} in a JSON object")
        out[k] = v
    return out


def _depth(value):
    """Nesting depth of parsed JSON, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            deepest = max(deepest, d)
            if deepest > MAX_DEPTH + 8:
                break
            stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return deepest


def load_release(path, key=None):
    """Load a release written by :func:`save_release` as a fitted predictor.

    Parameters
    ----------
    path : str or path-like
    key : bytes or str or None, default=None
        The key the release was saved with: the file must carry a valid HMAC under it.
        Without a key, a file that claims an HMAC loads with an
        :class:`UnauthenticatedReleaseWarning`.

    Raises
    ------
    ReleaseFormatError
        If the file is not a dpstack release of a known version, is not strict JSON, is too
        large or too deeply nested, repeats a key, holds a refused array (dtype, shape, size,
        NaN or infinite coefficients), does not fit together, does not match its sha256, or
        (with a key) has no HMAC or a wrong one.
    """
    mac_key = None if key is None else _key_bytes(key)
    raw = _read_regular_file(path, MAX_FILE_BYTES)
    if len(raw) > MAX_FILE_BYTES:
        raise ReleaseFormatError(f"{path}: larger than {MAX_FILE_BYTES} bytes, the limit of a release")
    try:
        doc = json.loads(
            raw.decode("utf-8"),
            object_pairs_hook=_no_duplicates,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
        )
    except ReleaseFormatError as exc:
        raise ReleaseFormatError(f"{path}: {exc}") from None
    except RecursionError:
        raise ReleaseFormatError(f"{path}: nested deeper than {MAX_DEPTH} levels") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReleaseFormatError(f"{path}: not a dpstack release (not JSON: {exc})") from None
    if _depth(doc) > MAX_DEPTH:
        raise ReleaseFormatError(f"{path}: nested deeper than {MAX_DEPTH} levels")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ReleaseFormatError(f"{path}: not a dpstack release (format field missing or different)")
    if doc.get("format_version") != FORMAT_VERSION:
        raise ReleaseFormatError(
            f"{path}: release format version {doc.get('format_version')!r}, this dpstack reads version "
            f"{FORMAT_VERSION} (re-export the model with save_release)"
        )
    extra = set(doc) - {"format", "format_version", "dpstack_version", "sha256", "release", "hmac_sha256"}
    if extra:
        raise ReleaseFormatError(f"{path}: unknown top-level field {sorted(extra)[0]!r}")
    payload = doc.get("release")
    if _digest(payload) != doc.get("sha256"):
        raise ReleaseFormatError(
            f"{path}: the content does not match its sha256 (corrupted; the checksum does not detect a deliberate edit)"
        )
    claimed = doc.get("hmac_sha256")
    if mac_key is not None:
        if claimed is None:
            raise ReleaseFormatError(f"{path}: a key was given but the file carries no HMAC: it is not authenticated")
        if not isinstance(claimed, str) or not hmac.compare_digest(claimed, _mac(mac_key, payload)):
            raise ReleaseFormatError(
                f"{path}: the HMAC does not match under this key (the file was edited, or saved with another key)"
            )
    elif claimed is not None:
        warnings.warn(
            f"{path}: the file carries an HMAC but no key was given, so it is unauthenticated: "
            "only its sha256 was checked, which anyone editing the file can recompute. Pass key=... to check it.",
            UnauthenticatedReleaseWarning,
            stacklevel=2,
        )
    try:
        return from_release_dict(payload)
    except ReleaseFormatError as exc:
        raise ReleaseFormatError(f"{path}: {exc}") from None
