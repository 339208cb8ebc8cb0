"""Output perturbation: the exact regularised minimiser plus Gamma-norm noise (pure ε-DP).

Chaudhuri, Monteleoni & Sarwate (2011), Algorithm 1: compute the exact minimiser w* of

    J(w) = (1/n) Σ_i log(1 + exp(−y_i wᵀz_i)) + (λ/2)‖w‖²

on rows with ‖z_i‖ ≤ B, and release w* + b with b drawn from the density ∝ exp(−ε‖b‖/Δ):
a uniform direction and ‖b‖ ~ Gamma(d, Δ/ε) (:func:`dpstack.mechanisms.output_perturbation_noise`).

**Sensitivity.** J is λ-strongly convex and every per-example loss is B-Lipschitz in w (the
logistic loss is 1-Lipschitz in the margin, and ‖z_i‖ ≤ B), so replacing one of the n
records moves w* by at most Δ = 2B/(nλ) (Chaudhuri et al. 2011, Corollary 8 with B = 1).
The release is then ε-DP for **one sample under replace-one** (n is fixed, hence public).
Unlike objective perturbation (:class:`~dpstack.PrivateLogisticRegression`) it needs no
condition on λ beyond λ > 0, and the noise grows as 1/(nλε).

References
----------
K. Chaudhuri, C. Monteleoni, A. D. Sarwate. Differentially private empirical risk
minimization. JMLR 12, 2011, Algorithm 1 and Theorem 6.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import (
    BOOLEAN,
    CLASSES,
    EPSILON,
    MAX_ITER,
    POSITIVE,
    RANDOM_STATE,
    TOL,
    check_random_state,
    validate_params,
)
from ..base import atomic_fit
from ..mechanisms import output_perturbation_noise
from ..solvers import minimize_perturbed_logistic
from ._model import ClippedLinearClassifier
from .accounting import Guarantee

__all__ = ["OutputPerturbationClassifier", "output_perturbation_sensitivity"]


def output_perturbation_sensitivity(n, lam, norm_bound=1.0):
    """Δ = 2B/(nλ): how far the regularised logistic minimiser moves when one of n records is replaced."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    for name, value in (("lam", lam), ("norm_bound", norm_bound)):
        if isinstance(value, bool) or not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return 2.0 * float(norm_bound) / (int(n) * float(lam))


class OutputPerturbationClassifier(ClippedLinearClassifier):
    """ε-DP logistic regression by output perturbation (Chaudhuri et al. 2011, Algorithm 1).

    The exact minimiser of the λ-regularised logistic loss on rows clipped to ``norm_bound``
    (dpstack's exact solver, held to ``tol``) plus a noise vector of density
    ∝ exp(−ε‖b‖/Δ), Δ = 2B/(nλ). See :mod:`dpstack.alternatives.output`.

    **Privacy.** Pure ε-DP for one sample, replace-one (n public), given λ and the bound
    chosen without the private data. One of today's alternatives, not a method of the papers.

    Parameters
    ----------
    epsilon : float, default=1.0
        ε > 0; ``np.inf`` releases the exact minimiser (non-private).
    lam : float, default=0.01
        λ > 0.
    norm_bound : float, default=1.0
        Public bound B (the constant feature included).
    fit_intercept : bool, default=False
        Add a regularised constant feature s, counted in the bound.
    intercept_scaling : float or None, default=None
        s < B; ``None`` means B/2.
    tol : float, default=1e-10
        The solver's tolerance on ‖∇J‖∞ (the sensitivity assumes the exact minimiser).
    max_iter : int, default=100
    random_state : None, int, SeedSequence or numpy.random.Generator
        Source of the noise; not kept by the fitted object.
    classes : array-like of shape (2,) or None, default=None
        The public label set; ``None`` reads it from y, outside the guarantee.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    sensitivity_ : float
        Δ = 2B/(nλ) (public: n, λ and B are).
    guarantee_ : Guarantee
        Pure ε (δ = 0), replace-one, one sample.

    References
    ----------
    K. Chaudhuri, C. Monteleoni, A. D. Sarwate. Differentially private empirical risk
    minimization. JMLR 12, 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from dpstack.alternatives import OutputPerturbationClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(1000, 3)) / 3
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = OutputPerturbationClassifier(epsilon=1.0, lam=0.01, random_state=0, classes=[0, 1]).fit(X, y)
    >>> clf.sensitivity_, clf.guarantee_.pure
    (0.2, True)
    """

    _parameter_constraints = {
        "epsilon": EPSILON,
        "lam": POSITIVE,
        "norm_bound": POSITIVE,
        "fit_intercept": BOOLEAN,
        "intercept_scaling": [None, *POSITIVE],
        "tol": TOL,
        "max_iter": MAX_ITER,
        "random_state": RANDOM_STATE,
        "classes": CLASSES,
    }

    def __init__(
        self,
        epsilon=1.0,
        lam=0.01,
        norm_bound=1.0,
        fit_intercept=False,
        intercept_scaling=None,
        tol=1e-10,
        max_iter=100,
        random_state=None,
        classes=None,
    ):
        self.epsilon = epsilon
        self.lam = lam
        self.norm_bound = norm_bound
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.classes = classes

    @atomic_fit
    def fit(self, X, y):
        """Fit the exact minimiser and release it with output noise. Returns self."""
        validate_params(self)
        self._scaling()
        X, y_signed, classes, from_data = self._checked_data(X, y)
        Z = self._design(X)
        n, d = Z.shape
        w, _ = minimize_perturbed_logistic(Z, y_signed, float(self.lam), tol=self.tol, max_iter=self.max_iter)
        sensitivity = output_perturbation_sensitivity(n, self.lam, self.norm_bound)
        w = w + output_perturbation_noise(sensitivity, self.epsilon, d, check_random_state(self.random_state))
        self.n_features_in_ = X.shape[1]
        self._set_release(w, classes)
        self.sensitivity_ = sensitivity
        if math.isinf(self.epsilon):
            self.guarantee_ = Guarantee(math.inf, 0.0, "replace-one", "one sample", "none", ())
        else:
            self.guarantee_ = Guarantee(
                float(self.epsilon), 0.0, "replace-one", "one sample", "pure", self._assumptions(from_data)
            )
        return self
