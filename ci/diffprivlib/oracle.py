"""What diffprivlib's LogisticRegression draws and releases, observed from diffprivlib itself.

Shared by ``test_oracle.py`` (the optional CI job) and ``record.py`` (the recorded oracle the offline unit
tests read). Needs diffprivlib 0.6.6 with scikit-learn 1.7 (1.8 removed the ``multi_class`` argument that
diffprivlib passes) and dpstack on the path.

The noise is *observed*, not recomputed from diffprivlib's formulas: ``fit_observed`` wraps diffprivlib's
``Vector`` mechanism so that, with the random state the fit gives it, the same draw is also applied to a
zero function, whose perturbed gradient at v is b/n + Δv. That yields the noise vector b and Δ;
the noise scale s is ‖b‖ divided by the same Gamma draw at scale 1 (the norm is Gamma(d, s)), and
ε' = 2q̃/s.
"""

from __future__ import annotations

import copy
import warnings
from unittest import mock

import diffprivlib
import numpy as np
from diffprivlib.mechanisms import Vector
from diffprivlib.models import LogisticRegression
from diffprivlib.models import logistic_regression as _lr_module


class _Observed(Vector):
    """diffprivlib's Vector, which also records the noise it draws (b, Δ, s) in ``log``."""

    log: list = []

    def randomise(self, value):
        d, n, rng = self.dimension, self.n, self._rng
        replay = copy.deepcopy(rng)
        self._rng = copy.deepcopy(rng)  # the same draw, applied to a zero function
        probe = super().randomise(lambda v: (0.0, np.zeros(d)))
        self._rng = rng
        _, g0 = probe(np.zeros(d))
        t = 1e6
        _, g1 = probe(np.eye(d)[0] * t)
        b = n * g0
        delta = (g1 - g0)[0] / t
        replay.standard_normal((d, 4))  # the norm is Gamma(d, s) = s · Gamma(d, 1) on the same stream
        gamma_1 = replay.gamma(d / 4, 1.0, 4).sum()
        scale = float(np.linalg.norm(b) / gamma_1)
        released = super().randomise(value)
        type(self).log.append(
            {"b": b, "delta": float(delta), "noise_scale": scale, "epsilon_noise": 2 * self.data_sensitivity / scale}
        )
        return released


def fit_observed(X, y, seed, **kwargs):
    """Fit diffprivlib's LogisticRegression; returns (output θ = coef_ then intercept_, observed noise dict)."""
    _Observed.log = []
    with mock.patch.object(_lr_module, "Vector", _Observed), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(random_state=seed, **kwargs).fit(X, y)
    (noise,) = _Observed.log
    theta = clf.coef_[0].copy()
    if kwargs.get("fit_intercept", True):
        theta = np.append(theta, clf.intercept_[0])
    return theta, noise


def fit(X, y, seed, **kwargs):
    """diffprivlib's output θ (coef_ then intercept_ when fitted), unobserved."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(random_state=seed, **kwargs).fit(X, y)
    theta = clf.coef_[0].copy()
    return np.append(theta, clf.intercept_[0]) if kwargs.get("fit_intercept", True) else theta


def versions():
    import scipy
    import sklearn

    return {
        "diffprivlib": diffprivlib.__version__,
        "scikit-learn": sklearn.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
    }


def oracle_data(n=200, p=3, seed=0):
    """Fixed inputs: n rows, p features, a fifth of the rows beyond norm 1 (so clipping matters), labels
    not separable."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X *= rng.uniform(0.2, 0.95, size=(n, 1))
    X[: n // 5] *= 1.6  # beyond the bound 1: clipped by both libraries
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


#: seeds per library in the same-law test
LAW_SEEDS = 400


def law_samples(scale_factor=1.0, seeds=LAW_SEEDS):
    """Releases of diffprivlib and of dpstack (its noise scale multiplied by ``scale_factor``) over ``seeds``
    seeds each: ε = 1, C = 1, row bound 1, no intercept, 100 rows and 2 features."""
    import dpstack.linear
    from dpstack import PrivateLogisticRegression
    from dpstack.mechanisms import isotropic_noise

    X, y = oracle_data(n=100, p=2, seed=5)
    kw = {"epsilon": 1.0, "C": 1.0, "data_norm": 1.0, "fit_intercept": False}
    dpl = np.array([fit(X, y, 10_000 + s, **kw) for s in range(seeds)])

    def scaled(dim, scale, random_state=None, size=None):
        return isotropic_noise(dim, scale_factor * scale, random_state, size)

    with mock.patch.object(dpstack.linear, "isotropic_noise", scaled):
        dps = np.array(
            [
                PrivateLogisticRegression(epsilon=1.0, lam=1.0 / len(y), norm_bound=1.0, classes=[0, 1], random_state=s)
                .fit(X, y)
                .w_
                for s in range(seeds)
            ]
        )
    return dpl, dps


def ks_pvalues(a, b):
    """Two-sample KS p-values of the first coefficient and of ‖θ‖ (two statistics: each compared at α/2)."""
    from scipy.stats import ks_2samp

    return (
        float(ks_2samp(a[:, 0], b[:, 0]).pvalue),
        float(ks_2samp(np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)).pvalue),
    )
