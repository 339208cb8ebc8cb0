"""The objective-perturbation levels inside the composed mechanisms, and their composition checks.

PST-S, PST-F, PST-H/PPTL-FS and SimComb are built from PLR and PLR-FS runs on
*disjoint* parts of the data (PST Proposition 3, Theorem 4; PPTL per domain).
A changed record lies in exactly one part, and the runs on the other parts
see the same data; a later level that consumes an earlier level's release
(the high level's meta-features, the target's centre w0) is, given that
release, a function of its own part only. So the privacy loss of the whole
release on a neighbouring pair equals the loss of the one level whose part
holds the changed record. The audit therefore checks

1. that the split into parts does not depend on the data (refitting on a
   neighbour with the same seed gives the same parts) and that the parts are
   disjoint, and
2. each level exactly and statistically, as a PLR / PLR-FS on its own input.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from dpstack.audit.exact import output_vector

from ..stacking import PrivateStackingClassifier
from ..transfer import PrivateTransferStacking, SimComb
from .protocol import split_of

__all__ = ["mechanism_levels", "composition_checks", "changed_levels"]


def _signed(classes, y):
    return np.where(np.asarray(y) == classes[1], 1, -1)


def _level_labels(level, classes, y):
    """y as the inner model sees it: signed (±1) when it was fitted on y in {-1, +1}."""
    if np.array_equal(np.asarray(level.classes_, dtype=object), np.array([-1.0, 1.0], dtype=object)):
        return _signed(classes, y)
    return np.asarray(y)


def mechanism_levels(fitted, X, y, X_source=None, y_source=None, domain="target"):
    """(name, fitted level estimator, its input X, its labels) for every level of a composed model.

    Parameters
    ----------
    fitted : PrivateStackingClassifier, PrivateTransferStacking or SimComb (fitted)
    X, y : the (target) data the model was fitted on
    X_source, y_source : the source data (transfer models, ``domain="source"``)
    domain : {"target", "source"}
        Which privacy unit: a target sample or a source sample (transfer only).

    Returns
    -------
    list of (str, estimator, ndarray, ndarray)
    """
    if isinstance(fitted, SimComb):
        if domain == "source":
            Xs = np.asarray(X_source, dtype=float)
            return [
                (
                    "source PLR",
                    fitted.source_,
                    fitted._rows(Xs, fitted.source_block_max_),
                    _level_labels(fitted.source_, fitted.classes_, y_source),
                )
            ]
        X = np.asarray(X, dtype=float)
        return [
            (
                "target PLR (centre (1-η)w_s)",
                fitted.target_,
                fitted._rows(X, fitted.block_max_),
                _level_labels(fitted.target_, fitted.classes_, y),
            )
        ]
    if isinstance(fitted, PrivateTransferStacking) and domain == "source":
        Xs = np.asarray(X_source, dtype=float)
        source_classes = getattr(fitted, "source_classes_", fitted.classes_)
        return [("source PLR-FS", fitted.source_, fitted._design(Xs), _signed(source_classes, y_source))]
    if not isinstance(fitted, (PrivateStackingClassifier, PrivateTransferStacking)):
        raise TypeError(f"no level decomposition for {type(fitted).__name__}")
    X = np.asarray(X, dtype=float)
    Z = fitted.bounded_design(X)
    ys = _signed(fitted.classes_, y)
    levels = []
    fit_params = {} if X_source is None else dict(X_source=X_source, y_source=y_source)
    low, high, sample_parts = split_of(fitted, X, y, fit_params)
    if isinstance(fitted.low_level_, list):
        for k, (plr, rows) in enumerate(zip(fitted.low_level_, sample_parts)):
            levels.append((f"low PLR on S_{k + 1}", plr, Z[rows], ys[rows]))
    else:
        name = "low PLR-FS (centre (1-η)w_s)" if isinstance(fitted, PrivateTransferStacking) else "low PLR-FS"
        levels.append((name, fitted.low_level_, Z[low], ys[low]))
    M = fitted.high_level_inputs(X[high])
    levels.append(("high PLR on meta-features", fitted.high_level_, M, ys[high]))
    return levels


def composition_checks(template, X, y, fit_params=None, random_state=0):
    """Are the parts disjoint, and chosen without looking at the data?

    Fits ``template`` with one seed on D and on a neighbour D' (row 0 replaced
    by a far-away record with the other label) and compares the parts.

    Returns
    -------
    dict with booleans ``disjoint`` and ``data_independent_split`` (``None`` for
    SimComb, which does not split a domain), ``ledger_total`` (the composed ε
    of ``privacy_``) and ``fitted`` (the model fitted on D).
    """
    fit_params = {} if fit_params is None else fit_params
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    Xp, yp = X.copy(), y.copy()
    Xp[0] = 100.0 * np.abs(X).max() * np.sign(X[0] + 0.5)
    classes = np.unique(y)
    yp[0] = classes[1] if y[0] == classes[0] else classes[0]
    a = clone(template).set_params(random_state=random_state).fit(X, y, **fit_params)
    b = clone(template).set_params(random_state=random_state).fit(Xp, yp, **fit_params)

    def parts(m, X, y):
        if isinstance(m, SimComb):
            return []
        low, high, samples = split_of(m, X, y, fit_params)
        return [low, high] if samples is None else list(samples) + [high]

    pa, pb = parts(a, X, y), parts(b, Xp, yp)
    if not pa:  # SimComb: one PLR per domain, no split inside a domain
        return {"disjoint": None, "data_independent_split": None, "ledger_total": a.privacy_.total(), "fitted": a}
    flat = np.concatenate(pa)
    disjoint = flat.size == np.unique(flat).size
    same = len(pa) == len(pb) and all(np.array_equal(u, v) for u, v in zip(pa, pb))
    return {
        "disjoint": bool(disjoint),
        "data_independent_split": bool(same),
        "ledger_total": a.privacy_.total(),
        "fitted": a,
    }


def changed_levels(template, X, y, index, fit_params=None, random_state=0):
    """Which levels' releases change when record ``index`` is replaced (same seed on D and D').

    The record is replaced by a far-away record with the other label. With the
    seed fixed, the noise of every level is the same on D and D', so a level
    whose release is unchanged did not see the record at all.

    Returns
    -------
    pandas.DataFrame with columns ``level``, ``trained on the changed record``,
    ``release changed``.
    """
    import pandas as pd

    fit_params = {} if fit_params is None else fit_params
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    Xp, yp = X.copy(), y.copy()
    Xp[index] = 100.0 * np.abs(X).max() * np.sign(X[index] + 0.5)
    classes = np.unique(y)
    yp[index] = classes[1] if y[index] == classes[0] else classes[0]
    a = clone(template).set_params(random_state=random_state).fit(X, y, **fit_params)
    b = clone(template).set_params(random_state=random_state).fit(Xp, yp, **fit_params)
    rows = []
    la, lb = mechanism_levels(a, X, y), mechanism_levels(b, Xp, yp)
    low, high, samples = split_of(a, X, y, fit_params)
    parts = list(samples) if samples is not None else [low]
    parts.append(high)
    for (name, est_a, _, _), (_, est_b, _, _), part in zip(la, lb, parts):
        rows.append(
            {
                "level": name,
                "trained on the changed record": bool(index in part),
                "release changed": not np.array_equal(output_vector(est_a), output_vector(est_b)),
            }
        )
    return pd.DataFrame(rows)
