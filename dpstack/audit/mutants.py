"""Deliberately broken mechanisms, each with one privacy bug the audit must catch. Never use them.

Each class is the real estimator with exactly one privacy bug injected, the
way such bugs happen in practice (a wrong calibration, a data-dependent
scaling). They live here, not as switches on the real estimators, so the
book's audit chapter and the tests can show the same mutants being caught.

* :class:`TenfoldEpsilonPLR` — noise (and Δ) calibrated for 10ε, ε claimed.
* :class:`MaxNormScaledPLR` — rows divided by the private data's largest norm
  instead of clipped to the public bound (:ref:`erratum 5 <erratum-public-bound>`).
* :class:`SkippedDeltaPLR` — the Δ > 0 branch skipped: when ε' ≤ 0 it keeps
  ε_noise = ε/2 but adds no extra ridge, so the Jacobian is never paid for.
* :class:`PPTLEpsilonFeatureSplit` — PPTL Algorithm 3 step 6 as printed:
  ε^(k) = ε instead of ε' when ε' > 0 (:ref:`erratum 2 <erratum-pptl-epsilon-k>`).
* :class:`VoteWithSoftScale` — MPL majority-vote ERM released with the
  soft-label noise scale 2/(Mλε) instead of 2/(λε).
"""
from __future__ import annotations

import dataclasses
from contextlib import contextmanager

import numpy as np

from .. import linear
from ..linear import FeatureSplitLogisticRegression, PrivateLogisticRegression
from ..mechanisms import clip_rows, feature_split_calibration, objective_perturbation_calibration
from ..multiparty import estimator as mpl_estimator
from ..multiparty.estimator import MultipartyPrivateClassifier, mpl_sensitivity

__all__ = ["TenfoldEpsilonPLR", "MaxNormScaledPLR", "SkippedDeltaPLR", "PPTLEpsilonFeatureSplit",
           "VoteWithSoftScale", "MUTANTS"]


@contextmanager
def _swapped(module, name, replacement):
    original = getattr(module, name)
    setattr(module, name, replacement)
    try:
        yield
    finally:
        setattr(module, name, original)


def _tenfold(epsilon, n, lam, norm_bound=1.0):
    cal = objective_perturbation_calibration(10 * epsilon, n, lam, norm_bound)
    return dataclasses.replace(cal, epsilon=epsilon)


def _skipped_delta(epsilon, n, lam, norm_bound=1.0):
    cal = objective_perturbation_calibration(epsilon, n, lam, norm_bound)
    return dataclasses.replace(cal, delta=0.0) if cal.branch == "delta>0" else cal


def _pptl_epsilon_k(epsilon, n, lam, importance):
    cal = feature_split_calibration(epsilon, n, lam, importance)
    if cal.branch != "delta=0":
        return cal
    eps_k = np.full(cal.epsilon_k.shape, float(epsilon))
    return dataclasses.replace(cal, epsilon_k=eps_k, noise_scale_k=np.where(cal.importance > 0, 2.0 / eps_k, 0.0))


class TenfoldEpsilonPLR(PrivateLogisticRegression):
    """MUTANT: PLR that claims ε but calibrates its noise and Δ for 10ε."""

    def fit(self, X, y):
        with _swapped(linear, "objective_perturbation_calibration", _tenfold):
            return super().fit(X, y)


class SkippedDeltaPLR(PrivateLogisticRegression):
    """MUTANT: PLR whose ε' ≤ 0 branch keeps ε/2 for the noise but adds no Δ."""

    def fit(self, X, y):
        with _swapped(linear, "objective_perturbation_calibration", _skipped_delta):
            return super().fit(X, y)


class MaxNormScaledPLR(PrivateLogisticRegression):
    """MUTANT: PLR that divides the rows by the largest norm in the data it is given."""

    def _design_matrix(self, X):
        X = np.asarray(X, dtype=float)
        largest = np.sqrt(np.einsum("ij,ij->i", X, X)).max()
        return clip_rows(X * (float(self.norm_bound) / largest), float(self.norm_bound))


class PPTLEpsilonFeatureSplit(FeatureSplitLogisticRegression):
    """MUTANT: PLR-FS with PPTL Alg. 3's ε^(k) = ε (instead of ε') when ε' > 0."""

    def fit(self, X, y):
        with _swapped(linear, "feature_split_calibration", _pptl_epsilon_k):
            return super().fit(X, y)


def _soft_sensitivity_for_vote(method, *args, **kwargs):
    return mpl_sensitivity("soft" if method == "vote" else method, *args, **kwargs)


class VoteWithSoftScale(MultipartyPrivateClassifier):
    """MUTANT: majority-vote ERM released with the soft-label sensitivity 2/(Mλ)."""

    def __init__(self, method="vote", epsilon=1.0, lam=1e-4, local_lam=None, protect_aux=False,
                 local_estimator=None, tol=1e-12, max_iter=100, random_state=None, classes=None,
                 diagnostics=False):
        super().__init__(method=method, epsilon=epsilon, lam=lam, local_lam=local_lam, protect_aux=protect_aux,
                         local_estimator=local_estimator, tol=tol, max_iter=max_iter, random_state=random_state,
                         classes=classes, diagnostics=diagnostics)

    def fit(self, X, y, parties, X_aux=None):
        with _swapped(mpl_estimator, "mpl_sensitivity", _soft_sensitivity_for_vote):
            return super().fit(X, y, parties, X_aux)

#: name shown in the audit table -> (mutant class, what it breaks)
MUTANTS = {
    "noise for 10ε": (TenfoldEpsilonPLR, "PLR noise and Δ calibrated for 10ε"),
    "max-norm rescaling": (MaxNormScaledPLR, "rows divided by the private data's largest norm"),
    "Δ > 0 branch skipped": (SkippedDeltaPLR, "ε' ≤ 0 but no extra ridge Δ"),
    "PPTL ε^(k) = ε": (PPTLEpsilonFeatureSplit, "PLR-FS noise at ε instead of ε' (PPTL Alg. 3 step 6)"),
    "vote with soft scale": (VoteWithSoftScale, "majority-vote ERM released with noise for sensitivity 2/(Mλ)"),
}
