"""Machinery shared by every private estimator: the privacy boundary of a fitted object.

What a fitted dpstack estimator carries is, by default, exactly its *release*: the
coefficients, intercepts, the public label set ``classes_``, the public calibration and the
:class:`~dpstack.accounting.PrivacyLedger`. Everything else a fit computes from the private
data or the noise (noise norms, unperturbed solutions, local models, vote targets,
iteration counts) is dropped, unless the user asks for it with ``diagnostics=True``: then it
is kept in one place, the ``diagnostics_`` attribute, and the ledger records that the object
is **not private** (ε = ∞ for the object as a whole).

Each estimator lists what it releases in ``_release_attributes``; :mod:`dpstack.release`
exports exactly those (JSON, no pickle) and loads them back as a predictor.

Steps outside the guarantee (a label set read from the private data, for example) raise a
:class:`PrivacyLeakWarning` at run time and are recorded in the ledger with ε = ∞.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.utils import Bunch

__all__ = [
    "PrivacyLeakWarning",
    "DIAGNOSTICS",
    "atomic_fit",
    "check_diagnostics",
    "record_classes",
    "record_diagnostics",
    "released_attributes",
    "resolve_classes",
]

#: mechanism name of the ledger entry that marks an object fitted with ``diagnostics=True``
DIAGNOSTICS = "diagnostics (diagnostics=True)"


class PrivacyLeakWarning(UserWarning):
    """A step whose output depends on the private data outside the ε-DP guarantee.

    Raised, for instance, when an estimator reads its label set from the private labels
    because no public ``classes`` was given (the naming follows IBM's diffprivlib).
    """


def check_diagnostics(value):
    """``diagnostics`` must be a bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"diagnostics must be True or False, got {value!r}")
    return bool(value)


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
        Sorted, unique.
    from_data : bool
        True when ``classes`` was None (the caller must record the step as outside the
        guarantee).
    """
    y = np.asarray(y)
    if classes is None:
        classes = np.unique(y)
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
        classes = np.unique(given)
        if classes.size != given.size:
            raise ValueError(f"classes must not repeat a label, got {classes!r}")
        present = np.unique(y)
        try:
            unknown = present[~np.isin(present, classes)]
        except TypeError:  # labels of incomparable types (e.g. str and int)
            unknown = present
        if unknown.size:
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
