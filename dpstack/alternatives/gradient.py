"""Gradient perturbation: noisy full-batch gradient descent (DP-GD) and DP-SGD.

Both minimise the regularised logistic loss

    J(w) = (1/n) Σ_i log(1 + exp(−y_i wᵀz_i)) + (λ/2)‖w‖²

on rows z_i clipped to a public norm bound B, with a fixed number of steps T:

    w ← w − η · ( (Σ_{i∈batch} clip_C(∇ℓ_i(w)) + N(0, σ² I)) / m + λ w ),   σ = z · C,

where clip_C scales a per-example gradient to L2 norm ≤ C, m is n (DP-GD) or the expected
batch size q·n (DP-SGD), and z is the noise multiplier that meets (ε, δ) after T steps
(:func:`~dpstack.alternatives.accounting.gaussian_noise_multiplier`). The regulariser's
gradient λw depends on no record and needs no noise.

**Per-example gradients of the logistic loss** are r_i z_i with |r_i| ≤ 1, so their norm is
at most ‖z_i‖ ≤ B: with ``clip >= norm_bound`` (the default, ``clip=None``) per-example
clipping is the identity and is skipped, and the sum is one product ``Zᵀr``. With a smaller
``clip`` the factors min(1, C/(|r_i|·‖z_i‖)) are applied to r, still without forming the
n per-example gradients. Either way the bound used for the noise is C = min(clip, B).

**Privacy unit: one sample.** The sum of clipped gradients moves by at most 2C when one
record is replaced (``neighbouring="replace-one"``, the relation of the papers' methods and
the default here) and by at most C when one is added or removed (``"add/remove"``, the
relation of the standard DP-SGD analysis); the accounting pays for the factor 2 (see
:mod:`dpstack.alternatives.accounting`). DP-SGD's Poisson subsampling under replace-one is
analysed by dp-accounting's PLD accountant only. Dividing by n (or q·n) treats the number
of records as public, as the standard analyses do.

References
----------
M. Abadi, A. Chu, I. Goodfellow, H. B. McMahan, I. Mironov, K. Talwar, L. Zhang. Deep
learning with differential privacy. CCS 2016 (DP-SGD, per-example clipping, Poisson lots).
R. Bassily, A. Smith, A. Thakurta. Private empirical risk minimization: efficient algorithms
and tight error bounds. FOCS 2014 (noisy gradient descent for convex ERM).
D. Yu, H. Zhang, W. Chen, J. Yin, T.-Y. Liu. Gradient perturbation is underrated for
differentially private convex optimization. IJCAI 2020.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from .._validation import (
    BOOLEAN,
    CLASSES,
    EPSILON,
    POSITIVE,
    RANDOM_STATE,
    Number,
    StrOptions,
    check_random_state,
    validate_params,
)
from ..base import atomic_fit
from ..mechanisms import row_norms_squared
from ._model import ClippedLinearClassifier, loss_gradient_weights
from .accounting import ACCOUNTANTS, NEIGHBOURING, Guarantee, gaussian_noise_multiplier

__all__ = ["NoisyGradientDescentClassifier", "NoisySGDClassifier", "clipped_logistic_gradient_sum"]

_DELTA = [Number(Real, 0, 1, closed="neither", desc="a float in (0, 1)")]
_NON_NEGATIVE = [Number(Real, 0, np.inf, closed="left", desc="a finite float >= 0")]
_STEPS = [Number(Integral, 1, None, closed="left", desc="an int >= 1")]


def clipped_logistic_gradient_sum(Z, y_signed, w, clip=None, row_norms=None):
    """Σ_i clip_C(∇ℓ_i(w)): the sum of per-example logistic-loss gradients, each clipped to norm ``clip``.

    ∇ℓ_i(w) = r_i z_i with r_i = −y_i σ(−y_i wᵀz_i), so clipping example i multiplies r_i by
    min(1, C/(|r_i|·‖z_i‖)) and the sum is ``Zᵀr``: no n × d array of gradients is formed.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
    y_signed : ndarray of shape (n,), values in {−1, +1}
    w : ndarray of shape (d,)
    clip : float or None
        C > 0; ``None`` applies no clipping (right when C ≥ every ‖z_i‖, as |r_i| ≤ 1).
    row_norms : ndarray of shape (n,) or None
        ‖z_i‖ if already known.

    Returns
    -------
    ndarray of shape (d,)
    """
    r = loss_gradient_weights(Z @ w, y_signed)
    if clip is not None:
        norms = np.abs(r) * (np.sqrt(row_norms_squared(Z)) if row_norms is None else row_norms)
        over = norms > clip
        if over.any():
            r[over] *= clip / norms[over]
    return r @ Z


class _NoisyGradientClassifier(ClippedLinearClassifier):
    """The loop both estimators share: fixed steps on the noisy clipped gradient of J."""

    _parameter_constraints = {
        "epsilon": EPSILON,
        "delta": _DELTA,
        "lam": _NON_NEGATIVE,
        "norm_bound": POSITIVE,
        "clip": [None, *POSITIVE],
        "n_steps": _STEPS,
        "learning_rate": [None, *POSITIVE],
        "average": BOOLEAN,
        "neighbouring": [StrOptions(set(NEIGHBOURING))],
        "accountant": [StrOptions(set(ACCOUNTANTS))],
        "fit_intercept": BOOLEAN,
        "intercept_scaling": [None, *POSITIVE],
        "random_state": RANDOM_STATE,
        "classes": CLASSES,
    }

    def _sampling_probability(self):
        """q of one step: every record takes part in DP-GD."""
        return 1.0

    def _step_size(self):
        """η: ``learning_rate``, or 1/L with L = B²/4 + λ the smoothness of J on rows of norm ≤ B."""
        if self.learning_rate is not None:
            return float(self.learning_rate)
        return 1.0 / (float(self.norm_bound) ** 2 / 4.0 + float(self.lam))

    def _contribution_bound(self):
        """C = min(clip, B): no per-example gradient of the logistic loss is longer than B."""
        bound = float(self.norm_bound)
        return bound if self.clip is None else min(float(self.clip), bound)

    @atomic_fit
    def fit(self, X, y):
        """Run the noisy gradient steps on (X, y). Returns self."""
        validate_params(self)
        self._scaling()  # intercept_scaling < norm_bound
        q = self._sampling_probability()
        z = gaussian_noise_multiplier(
            self.epsilon, self.delta, self.n_steps, q, neighbouring=self.neighbouring, accountant=self.accountant
        )
        X, y_signed, classes, from_data = self._checked_data(X, y)
        Z = self._design(X)
        w = self._descend(Z, y_signed, z, q, check_random_state(self.random_state))
        self.n_features_in_ = X.shape[1]
        self._set_release(w, classes)
        self.noise_multiplier_ = z
        self.n_iter_ = int(self.n_steps)
        if math.isinf(self.epsilon):
            self.guarantee_ = Guarantee(math.inf, 0.0, self.neighbouring, "one sample", "none", ())
        else:
            self.guarantee_ = Guarantee(
                float(self.epsilon),
                float(self.delta),
                self.neighbouring,
                "one sample",
                self.accountant,
                self._assumptions(
                    from_data, "the number of records n is public (the noisy sum is divided by n, or by q·n in DP-SGD)"
                ),
            )
        return self

    def _descend(self, Z, y, z, q, rng):
        n, d = Z.shape
        C = self._contribution_bound()
        # clipping is the identity when C >= every row norm (|r_i| <= 1): skip it
        clip = C if C < float(self.norm_bound) else None
        norms = None if clip is None else np.sqrt(row_norms_squared(Z))
        lam, eta, sigma = float(self.lam), self._step_size(), z * C
        scale = 1.0 / (q * n)  # the expected batch size: a public constant, not the drawn one
        w = np.zeros(d)
        total = np.zeros(d) if self.average else None
        for _ in range(int(self.n_steps)):
            if q < 1.0:
                batch = rng.random(n) < q
                g = clipped_logistic_gradient_sum(Z[batch], y[batch], w, clip, None if norms is None else norms[batch])
            else:
                g = clipped_logistic_gradient_sum(Z, y, w, clip, norms)
            if sigma > 0:
                g += sigma * rng.standard_normal(d)
            w -= eta * (g * scale + lam * w)
            if total is not None:
                total += w
        return w if total is None else total / int(self.n_steps)


class NoisyGradientDescentClassifier(_NoisyGradientClassifier):
    """(ε, δ)-DP logistic regression by noisy full-batch gradient descent (DP-GD).

    ``n_steps`` steps of gradient descent on the regularised logistic loss, each on the sum
    of the n per-example gradients (rows clipped to ``norm_bound``, gradients to ``clip``)
    plus Gaussian noise N(0, (z·C)² I), C = min(clip, norm_bound), z calibrated by
    dp-accounting for (ε, δ) after ``n_steps`` compositions. See :mod:`dpstack.alternatives.gradient`.

    **Privacy.** (ε, δ)-DP for one sample under ``neighbouring`` (replace-one: sensitivity
    2C; add/remove: C), given hyper-parameters chosen without the private data. One of
    today's alternatives, not a method of the papers.

    Parameters
    ----------
    epsilon : float, default=1.0
        ε > 0; ``np.inf`` runs the same descent without noise (non-private).
    delta : float, default=1e-5
        δ in (0, 1).
    lam : float, default=0.01
        λ ≥ 0 of (λ/2)‖w‖² (the constant feature's weight included).
    norm_bound : float, default=1.0
        Public bound B: rows are clipped to ‖x‖ ≤ B (the constant feature included).
    clip : float or None, default=None
        Per-example gradient clipping norm; ``None`` (or any value ≥ B) clips nothing, as no
        logistic-loss gradient is longer than B.
    n_steps : int, default=100
        T.
    learning_rate : float or None, default=None
        η; ``None`` uses 1/L, L = B²/4 + λ the smoothness of J.
    average : bool, default=False
        Release the average of the T iterates instead of the last one (post-processing).
    neighbouring : {"replace-one", "add/remove"}, default="replace-one"
    accountant : {"PLD", "RDP"}, default="PLD"
        dp-accounting's accountant used to calibrate z.
    fit_intercept : bool, default=False
        Add a constant feature s (regularised and counted in the bound, as in
        :class:`~dpstack.PrivateLogisticRegression`).
    intercept_scaling : float or None, default=None
        s < B; ``None`` means B/2.
    random_state : None, int, SeedSequence or numpy.random.Generator
        Source of the noise; not kept by the fitted object.
    classes : array-like of shape (2,) or None, default=None
        The public label set (``classes[1]`` positive). ``None`` reads it from y, outside the
        guarantee (a :class:`~dpstack.base.PrivacyLeakWarning`; the guarantee's assumptions say so).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    noise_multiplier_ : float
        z = σ/C (public: a function of ε, δ, T and the relation).
    n_iter_ : int
        T (public: fixed in advance).
    guarantee_ : Guarantee

    References
    ----------
    R. Bassily, A. Smith, A. Thakurta. Private empirical risk minimization: efficient algorithms
    and tight error bounds. FOCS 2014.
    D. Yu, H. Zhang, W. Chen, J. Yin, T.-Y. Liu. Gradient perturbation is underrated for
    differentially private convex optimization. IJCAI 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from dpstack.alternatives import NoisyGradientDescentClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3)) / 3
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = NoisyGradientDescentClassifier(epsilon=1.0, random_state=0, classes=[0, 1]).fit(X, y)
    >>> str(clf.guarantee_)
    '(ε = 1, δ = 1e-05)-DP, replace-one, unit: one sample, accountant: PLD'
    """

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        lam=0.01,
        norm_bound=1.0,
        clip=None,
        n_steps=100,
        learning_rate=None,
        average=False,
        neighbouring="replace-one",
        accountant="PLD",
        fit_intercept=False,
        intercept_scaling=None,
        random_state=None,
        classes=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.lam = lam
        self.norm_bound = norm_bound
        self.clip = clip
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.average = average
        self.neighbouring = neighbouring
        self.accountant = accountant
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.random_state = random_state
        self.classes = classes


class NoisySGDClassifier(_NoisyGradientClassifier):
    """(ε, δ)-DP logistic regression by DP-SGD with Poisson subsampling (Abadi et al. 2016).

    At each of ``n_steps`` steps every record joins the batch independently with probability
    ``batch_fraction`` (a boolean mask), the batch's per-example gradients are clipped to
    C = min(clip, norm_bound), summed, perturbed with N(0, (z·C)² I) and divided by the
    *expected* batch size q·n; z is calibrated by dp-accounting for T Poisson-subsampled
    Gaussian steps.

    **Privacy.** (ε, δ)-DP for one sample. The standard DP-SGD analysis is add/remove
    (sensitivity C); with ``neighbouring="replace-one"`` (the default, the papers' relation)
    the record's contribution may move by 2C, which dp-accounting's PLD accountant analyses
    for Poisson subsampling (its RDP accountant does not: ``accountant="RDP"`` then
    raises). One of today's alternatives, not a method of the papers.

    Parameters
    ----------
    epsilon, delta, lam, norm_bound, clip, learning_rate, average, neighbouring, accountant, fit_intercept, \
intercept_scaling, random_state, classes
        As in :class:`NoisyGradientDescentClassifier`.
    batch_fraction : float, default=0.05
        Poisson sampling probability q in (0, 1].
    n_steps : int, default=200
        T (10 epochs at q = 0.05).

    Attributes
    ----------
    classes_, coef_, intercept_, noise_multiplier_, n_iter_, guarantee_
        As in :class:`NoisyGradientDescentClassifier`.

    References
    ----------
    M. Abadi, A. Chu, I. Goodfellow, H. B. McMahan, I. Mironov, K. Talwar, L. Zhang. Deep
    learning with differential privacy. CCS 2016.
    """

    _parameter_constraints = {
        **_NoisyGradientClassifier._parameter_constraints,
        "batch_fraction": [Number(Real, 0, 1, closed="right", desc="a float in (0, 1]")],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        lam=0.01,
        norm_bound=1.0,
        clip=None,
        batch_fraction=0.05,
        n_steps=200,
        learning_rate=None,
        average=False,
        neighbouring="replace-one",
        accountant="PLD",
        fit_intercept=False,
        intercept_scaling=None,
        random_state=None,
        classes=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.lam = lam
        self.norm_bound = norm_bound
        self.clip = clip
        self.batch_fraction = batch_fraction
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.average = average
        self.neighbouring = neighbouring
        self.accountant = accountant
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.random_state = random_state
        self.classes = classes

    def _sampling_probability(self):
        return float(self.batch_fraction)
