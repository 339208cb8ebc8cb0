"""Machinery shared by every private estimator: the privacy boundary of a fitted object.

What a fitted dpstack estimator carries is, by default, exactly its *release*: the
coefficients, intercepts, the public label set ``classes_``, the public calibration and the
:class:`~dpstack.accounting.PrivacyLedger`. Everything else a fit computes from the private
data or the noise (noise norms, unperturbed solutions, local models, vote targets,
iteration counts) is dropped, unless the user asks for it with ``diagnostics=True``: then it
is kept in one place, the ``diagnostics_`` attribute, and the ledger records that the object
is **not private** (ε = ∞ for the object as a whole).

Each estimator lists what it releases in ``_release_attributes``; :mod:`dpstack.release`
exports their minimal source (JSON, no pickle) and loads them back as a predictor.

Nothing in a fitted object regenerates its noise: a composed estimator's inner models are
turned into their releases once fitted (:func:`release_only`: no seed, no generator), and the
randomness of a fit comes from independent spawned streams
(:func:`dpstack._validation.spawn_streams`).

Steps outside the guarantee (a label set read from the private data, for example) raise a
:class:`PrivacyLeakWarning` at run time and are recorded in the ledger with ε = ∞.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import expit
from sklearn.base import ClassifierMixin
from sklearn.utils import Bunch
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as sklearn_validate_data
except ImportError:  # pragma: no cover - older scikit-learn

    def sklearn_validate_data(est, X, y="no_validation", reset=True, **kw):
        return est._validate_data(X, y, reset=reset, **kw)


__all__ = [
    "PrivacyLeakWarning",
    "DIAGNOSTICS",
    "atomic_fit",
    "check_diagnostics",
    "record_classes",
    "record_diagnostics",
    "released_attributes",
    "ReleaseFormatError",
    "released_labels",
    "require_released",
    "check_released_block_max",
    "release_only",
    "resolve_classes",
    "signed_labels",
    "validate_data",
    "check_class_labels",
    "BinaryClassifierMixin",
]

#: mechanism name of the ledger entry that marks an object fitted with ``diagnostics=True``
DIAGNOSTICS = "diagnostics (diagnostics=True)"


def _plain_features(X, min_samples):
    """Whether X is a 2-D float64 ndarray with finite values that scikit-learn would return as is."""
    return (
        type(X) is np.ndarray
        and X.dtype == np.float64
        and X.ndim == 2
        and X.shape[0] >= min_samples
        and X.shape[1] >= 1
        and bool(np.isfinite(X.sum()))  # a finite sum means finite entries (an overflow falls through)
    )


def _plain_labels(y, n):
    """Whether y is a 1-D integer, bool or integral-float ndarray of length n (a classification target)."""
    if type(y) is not np.ndarray or y.ndim != 1 or y.shape[0] != n:
        return False
    if y.dtype.kind in "iub":
        return True
    return y.dtype == np.float64 and bool(np.isfinite(y.sum())) and bool(np.all(y == np.round(y)))


def validate_data(estimator, X, y="no_validation", reset=True, ensure_min_samples=1):
    """scikit-learn's ``validate_data(estimator, X, y, dtype=float, ...)``, with a fast path.

    For the common input — a 2-D float64 array with finite values (and integer labels) and
    no feature names anywhere — the checks scikit-learn makes are made here directly and the
    arrays are returned as they are (scikit-learn would return them uncopied too); the
    composed estimators and the experiment grids call this thousands of times on small
    arrays, where scikit-learn's general checks cost more than the fit. Every other input,
    and every input that fails a check, goes through scikit-learn, with its errors and
    warnings.
    """
    names = hasattr(estimator, "feature_names_in_")
    if not names and _plain_features(X, ensure_min_samples):
        expected = getattr(estimator, "n_features_in_", None)
        if reset or expected == X.shape[1]:
            if isinstance(y, str) and y == "no_validation":
                if reset:
                    estimator.n_features_in_ = X.shape[1]
                return X
            if _plain_labels(y, X.shape[0]):
                if reset:
                    estimator.n_features_in_ = X.shape[1]
                return X, y
    return sklearn_validate_data(estimator, X, y, reset=reset, dtype=float, ensure_min_samples=ensure_min_samples)


def check_class_labels(y):
    """``y`` as a 1-D array of class labels (scikit-learn's ``column_or_1d`` and
    ``check_classification_targets``), with a fast path for integer labels."""
    if type(y) is np.ndarray and y.ndim == 1 and _plain_labels(y, y.shape[0]):
        return y
    y = column_or_1d(y, warn=True)
    check_classification_targets(y)
    return y


class PrivacyLeakWarning(UserWarning):
    """A step whose output depends on the private data outside the ε-DP guarantee.

    Raised, for instance, when an estimator reads its label set from the private labels
    because no public ``classes`` was given (the naming follows IBM's diffprivlib).
    """


def signed_labels(y, positive):
    """``+1`` where ``y == positive``, else ``-1``, as an int8 vector.

    The solvers' label encoding. int8 holds ±1 exactly and every product with it is computed
    in float64, so the fits are bit for bit those of a float64 encoding, for n bytes instead
    of 8n (a tenth of X when it has 10 features).

    >>> signed_labels(np.array(["a", "b", "b"]), "b")
    array([-1,  1,  1], dtype=int8)
    """
    out = np.asarray(np.asarray(y) == positive, dtype=bool).view(np.int8)
    out *= 2
    out -= 1
    return out


def check_diagnostics(value):
    """``diagnostics`` must be a bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"diagnostics must be True or False, got {value!r}")
    return bool(value)


def _label_set(y, binary):
    """``np.unique(y)``; for two classes or fewer without sorting a copy of y (bool n-vectors only)."""
    if not binary or y.ndim != 1 or y.size == 0:
        return np.unique(y)
    first = y[:1]
    other = y != first[0]
    if not other.any():
        return np.unique(first)
    at = int(np.argmax(other))  # the first label unlike the first
    second = y[at : at + 1]
    other &= y != second[0]
    if other.any():  # more than two classes: the caller's error lists them
        return np.unique(y)
    return np.unique(np.concatenate([first, second]))


def resolve_classes(classes, y, binary=True, estimator="this estimator"):
    """The public label set, and the labels of ``y`` checked against it.

    Parameters
    ----------
    classes : array-like or None
        The public label set. ``None`` reads it from ``y`` (``np.unique(y)``), which makes the
        label set — and with it the output's shape — a function of the private data: a
        :class:`PrivacyLeakWarning` is raised and the caller records the step in its ledger.
    y : array-like of shape (n_samples,)
        Private labels; every label must be in ``classes``. ``y`` may hold fewer classes than
        ``classes`` (a party or a sample part with a single class): the output keeps its shape.
    binary : bool, default=True
        Whether exactly two classes are required.
    estimator : str
        Name used in messages.

    Returns
    -------
    classes : ndarray
        Unique. With ``binary=True`` in the order given (``classes[1]`` is the positive class;
        sorted when read from ``y``); otherwise sorted.
    from_data : bool
        True when ``classes`` was None (the caller must record the step as outside the
        guarantee).
    """
    y = np.asarray(y)
    if classes is None:
        classes = _label_set(y, binary)
        warnings.warn(
            f"{estimator}: classes=None, so the label set is read from the private labels "
            f"(np.unique(y) = {classes[:10]!r}); the set of labels, and the shape of the output, "
            "then depend on the private data outside the ε-DP guarantee. Pass the public label "
            "set as classes=[...] to keep the whole release private.",
            PrivacyLeakWarning,
            stacklevel=3,
        )
        from_data = True
    else:
        given = np.asarray(classes)
        if given.ndim != 1 or given.size == 0:
            raise ValueError(f"classes must be a non-empty 1-D sequence of labels, got {classes!r}")
        try:
            sorted_classes = np.unique(given)
        except TypeError:  # labels of incomparable types (e.g. str and int)
            raise ValueError(
                f"classes must hold labels of one kind (all numbers or all strings), got {classes!r}"
            ) from None
        if sorted_classes.size != given.size:
            raise ValueError(f"classes must not repeat a label, got {classes!r}")
        # binary: the order given is the order documented (classes[1] is the positive class);
        # multiclass: sorted, as scikit-learn's classes_ (the index of a class is its position)
        classes = given.copy() if binary else sorted_classes
        # Membership by one comparison per class (bool n-vectors): np.unique(y) would sort a copy
        # of y, and np.isin builds integer index arrays of y's size.
        try:
            if classes.size <= 64:
                known = np.zeros(y.shape, dtype=bool)
                for c in classes:
                    known |= y == c
            else:
                known = np.isin(y, classes)
        except TypeError:  # labels of incomparable types (e.g. str and int)
            known = np.zeros(y.shape, dtype=bool)
        if not known.all():
            unknown = np.unique(y[~known])
            raise ValueError(f"y has labels that are not in classes={given!r}: {unknown[:10]!r}")
        from_data = False
    if binary and classes.size != 2:
        how = "given" if not from_data else "in y"
        raise ValueError(
            "Only binary classification is supported: this estimator needs exactly two classes "
            f"({how}), got {classes.size}: {classes[:10]!r}"
        )
    return classes, from_data


def record_classes(ledger, from_data, part="D", unit="one sample"):
    """Record a label set read from the private data in ``ledger`` (ε = ∞ for that step)."""
    if from_data:
        ledger.add_outside(
            "label set read from the data (classes=None)",
            part,
            "np.unique(y) of the private labels fixes classes_ and the output's shape",
            unit=unit,
        )


def record_diagnostics(estimator, ledger, part="D", unit="one sample", **values):
    """Keep ``values`` in ``estimator.diagnostics_`` when diagnostics were asked for.

    With ``diagnostics=False`` nothing is kept and any stale ``diagnostics_`` from an earlier
    fit is removed; with ``diagnostics=True`` the values are stored in one
    :class:`sklearn.utils.Bunch` and the ledger gets an entry with ε = ∞: the object as a whole
    is not private and must not be published (export its release instead, see
    :func:`dpstack.release.save_release`).
    """
    if getattr(estimator, "diagnostics", False):
        estimator.diagnostics_ = Bunch(**values)
        ledger.add_outside(
            DIAGNOSTICS,
            part,
            "the object keeps the noise and non-private intermediate results: "
            "publish only its release (dpstack.release.save_release)",
            unit=unit,
        )
    elif hasattr(estimator, "diagnostics_"):
        del estimator.diagnostics_


def released_attributes(estimator):
    """The names of the fitted attributes ``estimator`` releases (its ``_release_attributes``)."""
    names = getattr(type(estimator), "_release_attributes", None)
    if names is None:
        raise TypeError(f"{type(estimator).__name__} does not declare _release_attributes")
    return tuple(names)


class ReleaseFormatError(ValueError):
    """A release file is not a dpstack release, is of another version, is malformed, fails its
    checksum or its authentication."""


# The release protocol (dpstack.release writes and reads the files; each estimator class says
# what it releases and rebuilds itself): ``_release_attributes`` (the fitted attributes a
# release holds), ``_release_source`` (those written to the file; the others are recomputed),
# ``_from_release(self)`` (recompute them, and the ledger, from the source, raising
# ReleaseFormatError when the parts do not fit together) and, for the classes whose ledger
# follows from their parameters alone, ``_release_ledger(self)``. The checks below are shared.


def released_labels(estimator):
    """The label set ``classes_`` of a loaded release, checked against the ``classes`` parameter."""
    classes = np.asarray(estimator.classes_)
    name = type(estimator).__name__
    if classes.ndim != 1 or classes.size < 2 or np.unique(classes).size != classes.size:
        raise ReleaseFormatError(f"{name}: classes_ must be distinct labels, got {classes!r}")
    if estimator.get_params().get("classes") is not None:
        # the binary estimators keep the order given (classes[1] is the positive class), the
        # multiclass one sorts it; a release written before the order was kept has it sorted
        given = np.asarray(estimator.get_params()["classes"])
        if given.shape != classes.shape or not (
            np.array_equal(given, classes) or np.array_equal(np.unique(given), classes)
        ):
            raise ReleaseFormatError(f"{name}: classes_ differs from the classes parameter")
    return classes


def require_released(estimator, *names):
    """Raise :class:`ReleaseFormatError` unless the loaded release holds every attribute in ``names``."""
    for n in names:
        if getattr(estimator, n, None) is None:
            raise ReleaseFormatError(f"{type(estimator).__name__}: the release lacks {n!r}")


def check_released_block_max(estimator, attr):
    """A private maximum norm ``attr`` is in the release exactly when ``row_bound='private_max'``."""
    value = getattr(estimator, attr, None)
    if (estimator.row_bound == "private_max") != (value is not None):
        raise ReleaseFormatError(f"{type(estimator).__name__}: {attr} is given exactly when row_bound='private_max'")


def release_only(estimator):
    """Turn a fitted inner model of a composed estimator into its release, in place; returns it.

    A composed estimator (stacking, transfer, tuning) fits inner models, each with its own
    random stream. Once fitted, an inner model must not keep what regenerates its noise:
    anyone holding the outer object could otherwise redraw the noise and strip it from the
    released coefficients. So its ``random_state`` is set to ``None`` and every fitted
    attribute it does not release (other than ``diagnostics_``, kept only with
    ``diagnostics=True``) is dropped: what remains is exactly what
    :func:`dpstack.release.from_release_dict` rebuilds from the exported release.
    """
    if "random_state" in vars(estimator):
        estimator.random_state = None
    if getattr(type(estimator), "_release_attributes", None) is None:
        return estimator  # a user's estimator that declares no release: only its seed is dropped
    keep = set(released_attributes(estimator)) | {"diagnostics_", "feature_names_in_"}
    for name in [a for a in vars(estimator) if a.endswith("_") and not a.startswith("_") and a not in keep]:
        delattr(estimator, name)
    return estimator


def atomic_fit(fit):
    """Decorate a ``fit``-like method so that a call that raises leaves the object as it was.

    Estimators validate everything before they change state; this is the second line of
    defence: whatever a failing call had already set (``n_features_in_`` by scikit-learn's
    input validation, a half-built model, …) is rolled back, so an earlier fit — and the
    privacy budget it spent — stays usable.
    """
    import functools

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        before = dict(vars(self))
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            vars(self).clear()
            vars(self).update(before)
            raise

    return wrapper


class BinaryClassifierMixin(ClassifierMixin):
    """predict / predict_proba / tags / input checks shared by the binary models."""

    #: fewest training samples ``fit`` accepts (stacking needs more: it splits the data)
    _min_samples = 2

    def predict_proba(self, X):
        """Probabilities of ``classes_[0]`` and ``classes_[1]``, shape (n, 2)."""
        p = expit(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """The class with the larger probability (ties go to ``classes_[1]``)."""
        margins = self.decision_function(X)  # checks fitted state before classes_ is read
        return self.classes_[(margins >= 0).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = False
        return tags

    def _fit_unchecked(self, X, y_signed):
        """Internal fast path of ``fit`` for composed estimators (stacking, transfer).

        The caller has validated ``X`` (finite 2-D float array, rows already under their
        bounds) and gives ``y_signed`` in {-1, +1}; ``classes`` must be the signed label set
        (:data:`dpstack.stacking.SIGNED`). The parameters are still checked; the data are not
        validated a second time.
        """
        classes = np.asarray(self.classes, dtype=float)
        if classes.shape != (2,) or not np.array_equal(classes, [-1.0, 1.0]):
            raise ValueError(f"the internal fit path needs classes=[-1, 1], got {self.classes!r}")
        check_diagnostics(self.diagnostics)
        self.n_features_in_ = X.shape[1]
        return self._fit_validated(X, y_signed, classes, False)

    def _validate_fit_inputs(self, X, y):
        """Checked (X, y in {-1, +1}, classes, whether classes were read from the data)."""
        check_diagnostics(self.diagnostics)
        X, y = validate_data(self, X, y, ensure_min_samples=self._min_samples)
        y = check_class_labels(y)
        classes, from_data = resolve_classes(self.classes, y, binary=True, estimator=type(self).__name__)
        return X, signed_labels(y, classes[1]), classes, from_data
