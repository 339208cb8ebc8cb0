"""What today's alternatives share: the clipped design, the labels, the released linear model.

Each alternative fits a binary logistic model on rows clipped to a public norm bound B (the
constant feature of ``fit_intercept=True`` counted inside the bound, as in
:class:`~dpstack.PrivateLogisticRegression`) and releases ``coef_``, ``intercept_``,
``classes_``, ``n_features_in_`` and its :class:`~dpstack.alternatives.accounting.Guarantee`.
Nothing drawn from a random stream (generator, seed, noise vector) is kept.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..base import BinaryClassifierMixin, check_class_labels, resolve_classes, signed_labels, validate_data
from ..mechanisms import clip_rows

__all__ = ["ClippedLinearClassifier", "LABEL_SET_ASSUMPTION", "design_scaling", "loss_gradient_weights"]

#: the assumption a fit with ``classes=None`` adds to its guarantee
LABEL_SET_ASSUMPTION = "classes=None: the label set classes_ was read from the private labels, outside this guarantee"


def design_scaling(norm_bound, fit_intercept, intercept_scaling):
    """``(bound for the features, s)``: the features are clipped to √(B² − s²), s the constant feature (0 without)."""
    bound = float(norm_bound)
    if not fit_intercept:
        return bound, 0.0
    s = bound / 2.0 if intercept_scaling is None else float(intercept_scaling)
    if not s < bound:
        raise ValueError(f"intercept_scaling must be < norm_bound ({bound:g}), got {s:g}")
    return float(np.sqrt(bound * bound - s * s)), s


def loss_gradient_weights(margins, y_signed):
    """r_i with ∇ℓ(y_i wᵀz_i) = r_i z_i for the logistic loss: r_i = −y_i σ(−y_i wᵀz_i), |r_i| ≤ 1."""
    # σ(−t) = 1/(1 + e^t), evaluated without overflow for large |t|
    t = y_signed * margins
    return -y_signed * np.exp(-np.logaddexp(0.0, t))


class ClippedLinearClassifier(BinaryClassifierMixin, BaseEstimator):
    """Binary linear model on clipped rows: input checks, design matrix, prediction, release."""

    def _scaling(self):
        return design_scaling(self.norm_bound, self.fit_intercept, getattr(self, "intercept_scaling", None))

    def _design(self, X):
        """Rows clipped to the bound, with the constant feature s appended when ``fit_intercept``."""
        bound, s = self._scaling()
        Z = clip_rows(X, bound)
        if not self.fit_intercept:
            return Z
        return np.hstack([Z, np.full((Z.shape[0], 1), s)])

    def _checked_data(self, X, y):
        """(X, y in {−1, +1} as float, classes, whether classes were read from y)."""
        X, y = validate_data(self, X, y, ensure_min_samples=self._min_samples)
        y = check_class_labels(y)
        classes, from_data = resolve_classes(self.classes, y, binary=True, estimator=type(self).__name__)
        return X, signed_labels(y, classes[1]).astype(float), classes, from_data

    def _assumptions(self, from_data, *extra):
        base = ("the hyper-parameters and the norm bound are chosen without the private data", *extra)
        return (*base, LABEL_SET_ASSUMPTION) if from_data else base

    def _set_release(self, w, classes):
        """``coef_`` and ``intercept_`` (``s · w_const``) from the weight vector on the design."""
        p = self.n_features_in_
        self.classes_ = classes
        self.coef_ = np.asarray(w[:p], dtype=float)[None, :].copy()
        self.intercept_ = np.array([w[p] * self._scaling()[1]]) if self.fit_intercept else np.zeros(1)

    def decision_function(self, X):
        """Margins on the clipped rows (the scale the model was trained on): ``coef_ · clip(x) + intercept_``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return clip_rows(X, self._scaling()[0]) @ self.coef_[0] + self.intercept_[0]
