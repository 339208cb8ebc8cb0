"""PST-F with DP-GD blocks: the feature-split stacking of PST, its low level fitted by noisy gradient descent.

The structure is PST-F's (:class:`~dpstack.PrivateStackingClassifier` with
``partition="features"``, Yao et al. 2019, Algorithm 3): the training data are split at random
into a low-level part D_l and a disjoint high-level part D_h; the features are cut into K groups
F_1 … F_K (variant W: by decreasing public importance; variant U: at random); the low level is one
linear model w_k per group, fitted on D_l; the high level is PST's PLR (objective perturbation,
pure ε) on the meta-features of D_h, computed with the released low level (post-processing).

What changes is the low level. PST-F fits its K blocks by PLR-FS, objective perturbation on each
block with the block's rows under a norm bound q_k. Here the K blocks are fitted **together by
DP-GD** (:mod:`dpstack.alternatives.gradient`) on their separable loss

    J(w_1, …, w_K) = (1/n_l) Σ_{i∈D_l} Σ_k ℓ(y_i w_kᵀx_i(k)) + Σ_k (λ/2)‖w_k‖²,

ℓ the logistic loss and x_i(k) the features of group k of row i, each row clipped to the unit
ball ‖x_i‖ ≤ 1. Each block is its own logistic model (its own margin): the loss does not couple
them, so without noise block k reaches the minimiser of its own regularised logistic loss.

**One Gaussian mechanism for the K blocks.** The gradient of record i's term with respect to the
concatenated weights (w_1, …, w_K) is g_i = (r_i1 x_i(1), …, r_iK x_i(K)) with
r_ik = −y_i σ(−y_i w_kᵀx_i(k)), so |r_ik| ≤ 1 and, the groups being disjoint,

    ‖g_i‖² = Σ_k r_ik² ‖x_i(k)‖² ≤ Σ_k ‖x_i(k)‖² ≤ ‖x_i‖² ≤ 1.

The per-record contribution to the summed gradient of all K blocks is therefore bounded by C = 1,
exactly as one DP-GD model's on the whole row: one Gaussian noise vector N(0, (z·C)² I) on the
concatenated sum, with DP-GD's multiplier z
(:func:`~dpstack.alternatives.accounting.gaussian_noise_multiplier` for T steps, no
subsampling, replace-one: sensitivity 2C), makes the T steps of the K blocks together
(ε, δ)-DP on D_l. **ε is not split among the blocks**: K separate DP-GD runs on the same rows
would compose sequentially (each paying for a contribution up to 1, ε/K each). The regulariser's
gradient depends on no record and needs no noise.

**Guarantee: (ε, δ)-DP, replace-one neighbours, one record (sample).** The split into D_l and D_h
(and the random groups of variant U) depend on nothing but the random state. Replacing one record
changes either D_l — then the low-level release is (ε, δ)-indistinguishable and the high level,
a function of that release and the unchanged D_h, is post-processing — or D_h — then the low
level is unchanged in law and the high level, PLR on D_h's meta-features (‖m‖ ≤ 1), is pure
ε-DP. So the **budget split between the levels** is parallel composition over disjoint data, as
in PST-F: the low level spends (ε, δ) on D_l, the high level (ε, 0) on D_h, and the whole
release is (ε, δ)-DP. Dividing the noisy sum by n_l treats the size of D_l as public, as DP-GD
does.

References
----------
Q. Yao, X. Guo, J. Kwok, W. Tu, Y. Chen, W. Dai, Q. Yang. Privacy-preserving stacking with
application to cross-organizational diabetes prediction. IJCAI 2019 (PST-F, Algorithm 3).
R. Bassily, A. Smith, A. Thakurta. Private empirical risk minimization: efficient algorithms and
tight error bounds. FOCS 2014 (noisy gradient descent).
K. Chaudhuri, C. Monteleoni, A. D. Sarwate. Differentially private empirical risk minimization.
JMLR 12, 2011 (objective perturbation, the high level's PLR).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import (
    ARRAY_OR_NONE,
    BOOLEAN,
    CLASSES,
    EPSILON,
    MAX_ITER,
    POSITIVE,
    RANDOM_STATE,
    TOL,
    NonEmpty,
    Number,
    StrOptions,
    check_random_state,
    spawn_streams,
    validate_params,
)
from ..accounting import PrivacyLedger
from ..base import (
    BinaryClassifierMixin,
    atomic_fit,
    check_class_labels,
    record_classes,
    release_only,
    resolve_classes,
    signed_labels,
    validate_data,
)
from ..linear import PrivateLogisticRegression
from ..mechanisms import clip_rows
from ..stacking import HIGH, LOW, OWN, SIGNED, meta_features, resolve_groups
from ._model import loss_gradient_weights
from .accounting import ACCOUNTANTS, Guarantee, gaussian_noise_multiplier

__all__ = ["NoisyGradientStackingClassifier", "block_design", "block_logistic_gradient_sum"]

_DELTA = [Number(Real, 0, 1, closed="neither", desc="a float in (0, 1)")]
_NON_NEGATIVE = [Number(Real, 0, np.inf, closed="left", desc="a finite float >= 0")]
_INT_ONE = [Number(Integral, 1, None, closed="left", desc="an int >= 1")]
_FRACTION = [Number(Real, 0, 1, closed="neither", desc="a float in (0, 1)")]

#: the public norm bound of the rows (and so of a record's concatenated block gradient)
ROW_BOUND = 1.0
#: the neighbouring relation of the guarantee (the papers' relation; PLR's, the high level's)
NEIGHBOURING = "replace-one"


def block_design(X, groups):
    """Rows clipped to the unit ball, then their K groups laid out contiguously.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    groups : list of K disjoint index arrays into the p features

    Returns
    -------
    Z : ndarray of shape (n, Σ_k |F_k|)
        ``Z[:, starts[k]:starts[k+1]]`` is x(k), the features of group k; ‖z_i‖ ≤ ‖clip(x_i)‖ ≤ 1.
    starts : ndarray of shape (K + 1,)
        Where each block begins (and the end of the last).
    """
    Z = clip_rows(np.asarray(X, dtype=float), ROW_BOUND)
    order = np.concatenate([np.asarray(g, dtype=int) for g in groups])
    starts = np.concatenate([[0], np.cumsum([len(g) for g in groups])])
    return Z[:, order], starts


def block_margins(Z, starts, w):
    """x_i(k)ᵀw_k for every row and block, shape (n, K)."""
    return np.column_stack([Z[:, a:b] @ w[a:b] for a, b in zip(starts[:-1], starts[1:])])


def block_logistic_gradient_sum(Z, y_signed, w, starts):
    """Σ_i g_i, g_i the gradient of Σ_k ℓ(y_i w_kᵀz_i(k)) with respect to the concatenated w.

    Block k's part of g_i is r_ik z_i(k), r_ik = −y_i σ(−y_i w_kᵀz_i(k)) (each block its own margin),
    so ‖g_i‖ ≤ ‖z_i‖: on the rows of :func:`block_design` every record contributes at most 1 to the
    sum of all K blocks' gradients.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        The design of :func:`block_design`.
    y_signed : ndarray of shape (n,), values in {−1, +1}
    w : ndarray of shape (d,)
        The K blocks' weights, concatenated.
    starts : ndarray of shape (K + 1,)

    Returns
    -------
    ndarray of shape (d,)
    """
    g = np.empty(w.shape)
    for a, b in zip(starts[:-1], starts[1:]):
        Zk = Z[:, a:b]
        g[a:b] = loss_gradient_weights(Zk @ w[a:b], y_signed) @ Zk
    return g


class NoisyGradientStackingClassifier(BinaryClassifierMixin, BaseEstimator):
    """(ε, δ)-DP stacking: PST-F's structure with its K low-level blocks fitted together by DP-GD.

    D_l / D_h split at random (``low_fraction``); K feature groups (variant W from
    ``feature_importance``, U at random, or ``groups``); the K block models fitted on D_l by
    ``n_steps`` steps of noisy full-batch gradient descent on their separable logistic loss, rows
    clipped to the unit ball, **one** Gaussian noise vector per step for all K blocks (a record's
    concatenated block gradient has norm ≤ ‖x‖ ≤ 1; see :mod:`dpstack.alternatives.stacking` for
    the proof); the high level PST's PLR(ε) on the meta-features of D_h. One of today's
    alternatives, not a method of the papers.

    **Privacy.** (ε, δ)-DP for one sample under replace-one neighbours, given hyper-parameters
    and groups chosen without the private data: the low level spends (ε, δ) on D_l (DP-GD's
    calibration, PLD or RDP accounting), the high level ε (pure, objective perturbation) on the
    disjoint D_h; parallel composition gives (ε, δ) for the release.

    Parameters
    ----------
    epsilon : float, default=1.0
        ε > 0 of each level (the release's ε); ``np.inf`` fits both levels without noise.
    delta : float, default=1e-5
        δ in (0, 1), all of it the low level's (the high level is pure ε).
    n_groups : int, default=5
        K, when ``groups`` is None.
    feature_importance : array-like of shape (n_features,) or None, default=None
        Public importances v_i: variant W (features sorted by decreasing v_i, cut into K groups);
        None: variant U (a random permutation cut into K groups).
    groups : list of K arrays of feature indices or None, default=None
        The groups themselves (disjoint); overrides ``n_groups`` and ``feature_importance``.
    lam : float, default=0.01
        λ ≥ 0 of every block's (λ/2)‖w_k‖².
    lam_high : float or None, default=None
        λ > 0 of the high level's PLR; None uses ``lam`` (which must then be > 0).
    low_fraction : float, default=0.5
        Share of the training rows in D_l.
    n_steps : int, default=100
        T, the low level's gradient steps.
    learning_rate : float or None, default=None
        η; None uses 1/L, L = 1/4 + λ the smoothness of each block's loss on rows of norm ≤ 1.
    accountant : {"PLD", "RDP"}, default="PLD"
        dp-accounting's accountant used to calibrate the noise multiplier.
    meta_features : {"centred", "sigmoid"}, default="centred"
        The high level's inputs, as in :func:`dpstack.stacking.meta_features` (‖m‖ ≤ 1).
    high_intercept : bool, default=False
        A constant feature in the high level's PLR.
    tol : float, default=1e-10
    max_iter : int, default=100
        The high level's solver.
    random_state : None, int, SeedSequence or numpy.random.Generator
        Source of the split, the groups of variant U and both levels' noise; not kept by the
        fitted object. Its three streams are laid out as PST's (the split's, the high level's,
        the low level's): with the same ``random_state``, ``n_groups`` and groups this estimator
        and :class:`~dpstack.PrivateStackingClassifier` draw the same D_l and D_h.
    classes : array-like of shape (2,) or None, default=None
        The public label set (``classes[1]`` positive); None reads it from y, outside the
        guarantee (a :class:`~dpstack.base.PrivacyLeakWarning`; recorded in ``privacy_`` and
        ``guarantee_``).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    n_features_in_ : int
    groups_ : list of K index arrays
    importance_ : ndarray of shape (K,)
        q_k of the groups (PST eq. 6; 1/K for variant U): recorded, not used by the low level.
    block_coefs_ : list of K ndarrays
        w_k on the features of group k (of the rows clipped to the unit ball).
    high_level_ : PrivateLogisticRegression
        The high level's release.
    noise_multiplier_ : float
        z = σ/C of the low level, C = 1 (public: a function of ε, δ and T).
    n_iter_ : int
        T.
    guarantee_ : Guarantee
        (ε, δ), replace-one, one sample, the accountant and the assumptions.
    privacy_ : PrivacyLedger
        ε per part: the low level's on ``D_l`` (its δ in the entry's note) and the high level's on
        ``D_h``; a label set read from the data is recorded as a step outside the guarantee.

    References
    ----------
    Q. Yao, X. Guo, J. Kwok, W. Tu, Y. Chen, W. Dai, Q. Yang. Privacy-preserving stacking with
    application to cross-organizational diabetes prediction. IJCAI 2019.
    R. Bassily, A. Smith, A. Thakurta. Private empirical risk minimization: efficient algorithms
    and tight error bounds. FOCS 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from dpstack.alternatives.stacking import NoisyGradientStackingClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 10)) / 4
    >>> y = (X[:, :3].sum(axis=1) > 0).astype(int)
    >>> clf = NoisyGradientStackingClassifier(epsilon=1.0, n_groups=2, random_state=0, classes=[0, 1]).fit(X, y)
    >>> str(clf.guarantee_)
    '(ε = 1, δ = 1e-05)-DP, replace-one, unit: one sample, accountant: PLD'
    >>> clf.privacy_.per_part()
    {'D_l': 1.0, 'D_h': 1.0}
    """

    _min_samples = 4  # D_l and D_h need two samples each

    _parameter_constraints = {
        "epsilon": EPSILON,
        "delta": _DELTA,
        "n_groups": _INT_ONE,
        "feature_importance": ARRAY_OR_NONE,
        "groups": [None, NonEmpty("a non-empty list of arrays of feature indices")],
        "lam": _NON_NEGATIVE,
        "lam_high": [None, *POSITIVE],
        "low_fraction": _FRACTION,
        "n_steps": _INT_ONE,
        "learning_rate": [None, *POSITIVE],
        "accountant": [StrOptions(set(ACCOUNTANTS))],
        "meta_features": [StrOptions({"centred", "sigmoid"})],
        "high_intercept": BOOLEAN,
        "tol": TOL,
        "max_iter": MAX_ITER,
        "random_state": RANDOM_STATE,
        "classes": CLASSES,
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        n_groups=5,
        feature_importance=None,
        groups=None,
        lam=0.01,
        lam_high=None,
        low_fraction=0.5,
        n_steps=100,
        learning_rate=None,
        accountant="PLD",
        meta_features="centred",
        high_intercept=False,
        tol=1e-10,
        max_iter=100,
        random_state=None,
        classes=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.n_groups = n_groups
        self.feature_importance = feature_importance
        self.groups = groups
        self.lam = lam
        self.lam_high = lam_high
        self.low_fraction = low_fraction
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.accountant = accountant
        self.meta_features = meta_features
        self.high_intercept = high_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.classes = classes

    def _high_lam(self):
        lam = self.lam if self.lam_high is None else self.lam_high
        if not float(lam) > 0:
            raise ValueError(f"lam_high must be > 0 (lam_high=None uses lam, which is {self.lam!r} here)")
        return float(lam)

    def _step_size(self):
        """η: ``learning_rate``, or 1/L with L = 1/4 + λ, each block's smoothness on rows of norm ≤ 1."""
        if self.learning_rate is not None:
            return float(self.learning_rate)
        return 1.0 / (ROW_BOUND**2 / 4.0 + float(self.lam))

    def _contribution_bound(self, importance):
        """C: a record's concatenated block gradient has norm ≤ ‖x‖ ≤ 1, whatever the groups and q_k."""
        return ROW_BOUND

    @atomic_fit
    def fit(self, X, y, low_level=None):
        """Split, fit the K blocks on D_l by DP-GD and the high level on D_h. Returns self.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        low_level : list of K ndarrays or None
            A low-level release (the ``block_coefs_`` of an earlier fit with the same parameters
            and data). When given, D_l is not read and only the high level is fitted, on D_h,
            with the seeds of a normal fit: the composition hook of
            :class:`~dpstack.PrivateStackingClassifier`, which shows that the high level is
            post-processing of the low level's release and D_h (and lets a tuning of λ_h reuse
            one low level).
        """
        validate_params(self)
        high_lam = self._high_lam()
        X, y = validate_data(self, X, y, ensure_min_samples=self._min_samples)
        y = check_class_labels(y)
        classes, from_data = resolve_classes(self.classes, y, binary=True, estimator=type(self).__name__)
        y_signed = signed_labels(y, classes[1]).astype(float)
        n, p = X.shape
        streams = spawn_streams(self.random_state, 3)
        rng = check_random_state(streams[OWN])
        # --- every check and every draw of the split before any state changes (PST's order)
        groups, importance = resolve_groups(p, self.n_groups, self.groups, self.feature_importance, None, rng)
        perm = rng.permutation(n)
        n_low = int(round(float(self.low_fraction) * n))
        if n_low < 2 or n - n_low < 2:
            raise ValueError(
                f"low_fraction={self.low_fraction} leaves too few samples: the split needs at least "
                f"2 in D_l and 2 in D_h, got {n_low} and {n - n_low} (n = {n})"
            )
        low, high = np.sort(perm[:n_low]), np.sort(perm[n_low:])
        z = gaussian_noise_multiplier(
            self.epsilon, self.delta, self.n_steps, 1.0, neighbouring=NEIGHBOURING, accountant=self.accountant
        )
        sizes = [len(g) for g in groups]
        if low_level is not None:
            low_level = [np.asarray(w, dtype=float) for w in low_level]
            if [w.shape for w in low_level] != [(k,) for k in sizes] or not all(
                np.isfinite(w).all() for w in low_level
            ):
                raise ValueError(f"low_level must be {len(sizes)} finite 1-D arrays of sizes {sizes} (one per group)")
        # --- the low level: one DP-GD on the K blocks' separable loss
        if low_level is None:
            Zl, starts = block_design(X[low], groups)
            w = self._descend(Zl, y_signed[low], starts, z * self._contribution_bound(importance), streams[LOW])
            blocks = [w[a:b].copy() for a, b in zip(starts[:-1], starts[1:])]
        else:
            blocks = [w.copy() for w in low_level]
            w = np.concatenate(blocks)
        # --- the high level: PLR(ε) on D_h's meta-features (post-processing of the low level's release)
        Zh, starts = block_design(X[high], groups)
        M = meta_features(block_margins(Zh, starts, w), self.meta_features)
        high_level = PrivateLogisticRegression(
            epsilon=self.epsilon,
            lam=high_lam,
            norm_bound=1.0,
            fit_intercept=self.high_intercept,
            tol=self.tol,
            max_iter=self.max_iter,
            random_state=streams[HIGH],
            classes=SIGNED,
        ).fit(M, y_signed[high])
        release_only(high_level)
        ledger = PrivacyLedger()
        K = len(groups)
        infinite = math.isinf(self.epsilon)
        ledger.add(
            f"DP-GD blocks (low level, K={K}, one Gaussian mechanism)",
            "D_l",
            float(self.epsilon),
            note=(
                "non-private (ε = ∞)" if infinite else f"(ε, δ = {float(self.delta):g}), {self.accountant} accounting"
            )
            + ("; release handed in to fit(low_level=...), D_l not read" if low_level is not None else ""),
        )
        ledger.add("PLR (high level)", "D_h", float(self.epsilon))
        record_classes(ledger, from_data)
        if infinite:
            guarantee = Guarantee(math.inf, 0.0, NEIGHBOURING, "one sample", "none", ())
        else:
            assumptions = (
                "the hyper-parameters, the groups and the importances are chosen without the private data",
                "the sizes of D_l and D_h are public (the noisy sum is divided by |D_l|)",
            )
            if from_data:
                assumptions += (
                    "classes=None: the label set classes_ was read from the private labels, outside this guarantee",
                )
            guarantee = Guarantee(
                float(self.epsilon), float(self.delta), NEIGHBOURING, "one sample", self.accountant, assumptions
            )
        self.classes_, self.n_features_in_ = classes, p
        self.groups_, self.importance_ = groups, importance
        self.block_coefs_, self.high_level_ = blocks, high_level
        self.noise_multiplier_, self.n_iter_ = float(z), int(self.n_steps)
        self.guarantee_, self.privacy_ = guarantee, ledger
        return self

    def _descend(self, Z, y, starts, sigma, stream):
        """T steps w ← w − η((Σ_i g_i + N(0, σ² I))/n + λw) from w = 0; the noise from ``stream``."""
        rng = check_random_state(stream)
        n, d = Z.shape
        lam, eta = float(self.lam), self._step_size()
        w = np.zeros(d)
        for _ in range(int(self.n_steps)):
            g = block_logistic_gradient_sum(Z, y, w, starts)
            if sigma > 0:
                g += sigma * rng.standard_normal(d)
            w -= eta * (g / n + lam * w)
        return w

    def _design(self, X):
        check_is_fitted(self, "high_level_")
        X = validate_data(self, X, reset=False)
        return block_design(X, self.groups_)

    def decision_function_low(self, X):
        """The K block margins x(k)ᵀw_k of X (rows clipped to the unit ball), shape (n, K)."""
        Z, starts = self._design(X)
        return block_margins(Z, starts, np.concatenate(self.block_coefs_))

    def high_level_inputs(self, X):
        """Meta-features of X (norm ≤ 1), the inputs of ``high_level_``."""
        return meta_features(self.decision_function_low(X), self.meta_features)

    def decision_function(self, X):
        """The high level's margins on the meta-features of X."""
        return self.high_level_.decision_function(self.high_level_inputs(X))
