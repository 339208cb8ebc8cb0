"""Privacy-preserving transfer: PPTL-FS (= PST-H) and SimComb (= PPHTL).

PST Algorithm 4 (PST-H) and PPTL Algorithm 4 (PPTL-FS) are one method, and
PST Table 2 and PPTL Table 4 report one experiment under two sets of names
(:ref:`erratum 12 <erratum-names>`): PST-H(W)/(U) = PPTL-FS(W)/(R), PPHTL = SimComb, PLR(target) = Direct.

* Source: PLR-FS(ε_s) on the source with g = ½‖w‖² → w_s^(k).
* Target: D_t split at random into D_t0, D_t1; PLR-FS(ε_t) on D_t0 with
  g_k(w) = (η/2)‖w‖² + ((1−η)/2)‖w − w_s^(k)‖² = ½‖w − (1−η)w_s^(k)‖² + const
  (1-strongly convex for η ∈ [0, 1]); PLR(ε_t) on the meta-features of D_t1.

**Privacy** (PST Corollary 6, PPTL Theorem 5): the source release is ε_s-DP
for one source sample; everything fitted on the target is ε_t-DP for one
target sample — w_s enters the target only as the fixed centre of a strongly
convex regulariser, and the target releases are post-processing from the
source's point of view. The two guarantees concern different people and do
not add up. Source and target must use the same groups and the same per-block
bounds, so that w_s^(k) means the same thing on both sides.

Baselines of PPTL §4.2 as recipes (``b`` = the row bounding of :func:`~dpstack.stacking.bound_blocks`):

* **Direct**: ``PrivateLogisticRegression(epsilon_t).fit(b(X_t), y_t)``, or
  ``SimComb(eta=1)`` whose target model ignores the source exactly.
* **SourceD**: the private source PLR applied to the target:
  ``SimComb(...).fit(...).decision_function(X_t, model="source")``.
"""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ._validation import check_epsilon, check_random_state
from .accounting import PrivacyLedger
from .base import record_classes, record_diagnostics
from .linear import FeatureSplitLogisticRegression, PrivateLogisticRegression, _validate_data
from .stacking import (
    ROW_BOUNDS,
    SIGNED,
    _block_norm_max,
    _seed,
    _StackingMixin,
    block_lambdas,
    bound_blocks,
    meta_features,
    resolve_groups,
)

__all__ = ["PrivateTransferStacking", "SimComb", "transfer_centre"]


def _ensure_source(estimator, X_source, y_source):
    """Fit the source now if it is given, else require an earlier :meth:`fit_source`."""
    if X_source is not None:
        estimator.fit_source(X_source, y_source)
    elif not hasattr(estimator, "source_"):
        raise ValueError("fit the source first: call fit_source(X_source, y_source) or pass X_source, y_source")


def transfer_centre(w_source, eta):
    """Centre (1 − η)·w_s of the target regulariser, as an array.

    (η/2)‖w‖² + ((1−η)/2)‖w − w_s‖² = ½‖w − (1−η)w_s‖² + η(1−η)‖w_s‖²/2, so the
    target problem is PLR with the regulariser ½‖w − w0‖² centred at
    w0 = (1 − η)w_s — still 1-strongly convex, which is all the proof needs.
    """
    eta = np.asarray(eta, dtype=float)
    if np.any(~np.isfinite(eta)) or np.any(eta < 0) or np.any(eta > 1):
        raise ValueError(f"eta must lie in [0, 1], got {eta!r}")
    return (1.0 - eta) * np.asarray(w_source, dtype=float)


def _domain_seeds(random_state):
    """Independent streams for the source and the target.

    Reusing one seed on both sides would make the target's noise a function of
    the source's: anyone who can recompute b_s could then recompute b_t and
    strip the target's noise. Spawned SeedSequences are independent.
    """
    if isinstance(random_state, np.random.Generator):
        root = np.random.SeedSequence(int(random_state.integers(0, 2**63 - 1)))
    elif isinstance(random_state, np.random.SeedSequence):
        root = random_state
    else:
        check_random_state(random_state)  # type check
        root = np.random.SeedSequence(random_state)
    return root.spawn(2)


class PrivateTransferStacking(_StackingMixin, BaseEstimator):
    """PPTL-FS / PST-H: feature-split private transfer with a stacked target model.

    Call :meth:`fit_source` on the source data, then :meth:`fit` on the target
    (or :meth:`fit` with ``X_source``, ``y_source`` to do both). Variant W
    (``feature_importance``) = PPTL-FS(W) = PST-H(W); variant U (random
    groups, q_k = 1/K) = PPTL-FS(R) = PST-H(U).

    **Privacy.** ε_s for one source sample (source PLR-FS on D_s); ε_t for one
    target sample (PLR-FS on D_t0 and PLR on the disjoint D_t1). See
    ``privacy_`` and :func:`dpstack.theory.domain_guarantees`.

    Parameters
    ----------
    epsilon_source, epsilon_target : float, default=1.0
        ε_s, ε_t (``np.inf``: non-private).
    n_groups, feature_importance, groups, group_importance
        As in :class:`~dpstack.PrivateStackingClassifier`; decided once, at the
        source fit, and reused on the target.
    combiner : {"stack", "vote", "weighted_vote"} or int, default="stack"
    lam_source : float or array-like of shape (K,), default=0.01
        λ_s^(k) of the source blocks.
    lam : float or array-like of shape (K,), default=0.01
        λ_t^(k) of the target blocks.
    lam_blocks : {"same", "importance"}, default="same"
        How λ_s^(k) and λ_t^(k) follow q_k: see :func:`~dpstack.stacking.block_lambdas`.
    lam_high : float or None, default=None
        μ_t of the target's level-1 PLR (``None``: ``lam``).
    eta : float or array-like of shape (K,), default=0.5
        η ∈ [0, 1]: 1 ignores the source, 0 shrinks towards it only.
    low_fraction : float, default=0.5
        |D_t0| / |D_t|.
    row_bound, row_scale, meta_features, low_intercept, high_intercept, tol, max_iter
        As in :class:`~dpstack.PrivateStackingClassifier`.
    random_state : None, int, SeedSequence or Generator
        Source and target get independent spawned streams.

    Attributes
    ----------
    source_ : FeatureSplitLogisticRegression
        The private source blocks w_s^(k).
    groups_, importance_, block_bounds_ : as in PrivateStackingClassifier
    low_level_ : FeatureSplitLogisticRegression
        Target level-0 blocks fitted on D_t0.
    high_level_ : PrivateLogisticRegression
        Target level-1 model fitted on D_t1.
    low_index_, high_index_ : ndarray
        Rows of D_t0 and D_t1.
    privacy_ : PrivacyLedger
        Parts ``D_s`` (ε_s), ``D_t/D_t0`` and ``D_t/D_t1`` (ε_t each).

    References
    ----------
    X. Guo, Q. Yao, W. Tu, Y. Chen, W. Dai, Q. Yang. Privacy-preserving transfer
    learning for knowledge sharing. Algorithm 4 (PPTL-FS).
    Q. Yao et al. IJCAI 2019, Algorithm 4 (PST-H) and Corollary 6.

    Examples
    --------
    >>> import numpy as np
    >>> from dpstack import PrivateTransferStacking
    >>> rng = np.random.default_rng(0)
    >>> Xs, Xt = rng.normal(size=(800, 6)) / 3, rng.normal(size=(300, 6)) / 3
    >>> ys, yt = (Xs[:, 0] > 0).astype(int), (Xt[:, 0] > 0).astype(int)
    >>> m = PrivateTransferStacking(n_groups=2, random_state=0).fit(Xt, yt, X_source=Xs, y_source=ys)
    >>> sorted(m.privacy_.per_part().items())
    [('D_s', 1.0), ('D_t/D_t0', 1.0), ('D_t/D_t1', 1.0)]
    """

    def __init__(self, epsilon_source=1.0, epsilon_target=1.0, n_groups=5, feature_importance=None, groups=None,
                 group_importance=None, combiner="stack", lam_source=0.01, lam=0.01, lam_blocks="same",
                 lam_high=None, eta=0.5,
                 low_fraction=0.5, row_bound="clip", row_scale=1.0, meta_features="centred",
                 low_intercept=False, high_intercept=True, tol=1e-10, max_iter=100, random_state=None,
                 classes=None, diagnostics=False):
        self.epsilon_source = epsilon_source
        self.epsilon_target = epsilon_target
        self.n_groups = n_groups
        self.feature_importance = feature_importance
        self.groups = groups
        self.group_importance = group_importance
        self.combiner = combiner
        self.lam_source = lam_source
        self.lam = lam
        self.lam_blocks = lam_blocks
        self.lam_high = lam_high
        self.eta = eta
        self.low_fraction = low_fraction
        self.row_bound = row_bound
        self.row_scale = row_scale
        self.meta_features = meta_features
        self.low_intercept = low_intercept
        self.high_intercept = high_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.classes = classes
        self.diagnostics = diagnostics

    def _blockwise_intercept(self):
        return bool(self.low_intercept)

    def fit_source(self, X, y):
        """Fit the private source blocks (PLR-FS(ε_s), g = ½‖w‖²) and fix the groups. Returns self."""
        eps_s = check_epsilon(self.epsilon_source, "epsilon_source")
        self._check_common_params()
        X, y_signed, classes, classes_from_data = self._validate_fit_inputs(X, y)
        rng = np.random.default_rng(_domain_seeds(self.random_state)[0])
        self.groups_, self.importance_ = resolve_groups(
            X.shape[1], self.n_groups, self.groups, self.feature_importance, self.group_importance, rng)
        self.block_bounds_ = self.importance_
        # each domain scales its own data; only "private_max" looks at the data to do so
        self.block_max_ = _block_norm_max(X / self.row_scale, self.groups_) if self.row_bound == "private_max" else None
        self.source_block_max_ = self.block_max_
        Z = self._design(X)
        self.source_ = FeatureSplitLogisticRegression(
            epsilon=eps_s, groups=self._z_groups(), importance=self.importance_,
            lam=block_lambdas(self.lam_source, self.importance_, self.lam_blocks),
            tol=self.tol, max_iter=self.max_iter, random_state=_seed(rng), classes=SIGNED).fit(Z, y_signed)
        self.source_classes_ = classes
        self.source_privacy_ = PrivacyLedger()
        self.source_privacy_.add(f"PLR-FS (source, K={len(self.groups_)})", "D_s", eps_s)
        record_classes(self.source_privacy_, classes_from_data, "D_s")
        if self.row_bound == "private_max":
            self.source_privacy_.add("row scaling by the private maximum norm", "D_s", np.inf,
                                     note="data-dependent scaling: outside the DP guarantee")
        return self

    def fit(self, X, y, X_source=None, y_source=None):
        """Fit the target (after :meth:`fit_source`, or fitting the source first). Returns self."""
        _ensure_source(self, X_source, y_source)
        eps_t = check_epsilon(self.epsilon_target, "epsilon_target")
        self._check_common_params()
        n_source_features = self.n_features_in_
        X, y_signed, self.classes_, classes_from_data = self._validate_fit_inputs(X, y)
        if X.shape[1] != n_source_features:
            raise ValueError(f"target has {X.shape[1]} features, the source {n_source_features}")
        if not np.array_equal(self.classes_, self.source_classes_):
            raise ValueError(f"target classes {self.classes_!r} differ from the source classes {self.source_classes_!r}")
        rng = np.random.default_rng(_domain_seeds(self.random_state)[1])
        self.block_max_ = _block_norm_max(X / self.row_scale, self.groups_) if self.row_bound == "private_max" else None
        self.low_index_, self.high_index_ = self._split(X.shape[0], rng)
        Z = self._design(X)
        K = len(self.groups_)
        z_groups = self._z_groups()
        eta = np.broadcast_to(np.asarray(self.eta, dtype=float), (K,))
        w0 = np.concatenate([transfer_centre(w, e) for w, e in zip(self.source_.block_coefs_, eta)])
        self.low_level_ = FeatureSplitLogisticRegression(
            epsilon=eps_t, groups=z_groups, importance=self.importance_,
            lam=block_lambdas(self.lam, self.importance_, self.lam_blocks), w0=w0,
            tol=self.tol, max_iter=self.max_iter, random_state=_seed(rng), classes=SIGNED,
        ).fit(Z[self.low_index_], y_signed[self.low_index_])
        Zh = Z[self.high_index_]
        self._fit_high(meta_features(self._low_margins(Zh), self.meta_features),
                       y_signed[self.high_index_], eps_t, rng)
        self.privacy_ = PrivacyLedger()
        self.privacy_.extend(self.source_privacy_)
        self.privacy_.add(f"PLR-FS (target level 0, K={K}, centred at (1-eta) w_s)", "D_t/D_t0", eps_t)
        self.privacy_.add("PLR (target level 1)", "D_t/D_t1", eps_t)
        record_classes(self.privacy_, classes_from_data, "D_t")
        record_diagnostics(self, self.privacy_, "D_t/D_t1", high_level=getattr(self.high_level_, "diagnostics_", None))
        self._note_non_private_scaling("D_t")
        return self

    def _low_margins(self, Z):
        return self.low_level_.decision_function_blocks(Z)

    def decision_function_source(self, X):
        """Sum of the source blocks' margins on X (the PLR-FS source used directly)."""
        check_is_fitted(self, "source_")
        X = _validate_data(self, X, dtype=float, reset=False)
        return self.source_.decision_function(self._design(X))


class SimComb(ClassifierMixin, BaseEstimator):
    """SimComb (PPTL Algorithm 2) = PPHTL of PST Table 2: PLR on the source, PLR with HTL on the target.

    Source: PLR(ε_s) with g = ½‖w‖². Target: PLR(ε_t) with
    g_t = (η/2)‖w‖² + ((1−η)/2)‖w − w_s‖², i.e. centre (1 − η)w_s.
    ``eta=1`` gives Direct (PLR on the target alone); ``decision_function(X,
    model="source")`` gives SourceD.

    **Privacy.** ε_s for one source sample, ε_t for one target sample.

    Parameters
    ----------
    epsilon_source, epsilon_target : float, default=1.0
    lam_source, lam : float, default=0.01
        λ_s and λ_t.
    eta : float, default=0.5
    fit_intercept : bool, default=False
        Constant feature in both PLRs (its weight is transferred too).
    row_bound : {"clip", "scale", "normalize", "private_max"}, default="clip"
    row_scale : float, default=1.0
    tol, max_iter, random_state
        ``random_state`` spawns independent source and target streams.

    Attributes
    ----------
    source_, target_ : PrivateLogisticRegression
    classes_ : ndarray of shape (2,)
    privacy_ : PrivacyLedger
        Parts ``D_s`` (ε_s) and ``D_t`` (ε_t).

    References
    ----------
    X. Guo et al. Privacy-preserving transfer learning for knowledge sharing, Algorithm 2.
    Y. Wang, Q. Gu, D. Brown. Differentially private hypothesis transfer learning. ECML 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from dpstack import SimComb
    >>> rng = np.random.default_rng(0)
    >>> Xs, Xt = rng.normal(size=(800, 4)) / 2, rng.normal(size=(200, 4)) / 2
    >>> ys, yt = (Xs[:, 0] > 0).astype(int), (Xt[:, 0] > 0).astype(int)
    >>> sc = SimComb(random_state=0).fit(Xt, yt, X_source=Xs, y_source=ys)
    >>> sorted(sc.privacy_.per_part().items())
    [('D_s', 1.0), ('D_t', 1.0)]
    """

    def __init__(self, epsilon_source=1.0, epsilon_target=1.0, lam_source=0.01, lam=0.01, eta=0.5,
                 fit_intercept=False, row_bound="clip", row_scale=1.0, tol=1e-10, max_iter=100, random_state=None,
                 classes=None, diagnostics=False):
        self.epsilon_source = epsilon_source
        self.epsilon_target = epsilon_target
        self.lam_source = lam_source
        self.lam = lam
        self.eta = eta
        self.fit_intercept = fit_intercept
        self.row_bound = row_bound
        self.row_scale = row_scale
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.classes = classes
        self.diagnostics = diagnostics

    def _rows(self, X, block_max):
        return bound_blocks(X, [np.arange(X.shape[1])], np.ones(1), self.row_bound, self.row_scale,
                            block_max=block_max)[0]

    def _plr(self, epsilon, lam, w0, seed):
        return PrivateLogisticRegression(epsilon=epsilon, lam=lam, norm_bound=1.0, w0=w0,
                                         fit_intercept=self.fit_intercept, tol=self.tol,
                                         max_iter=self.max_iter, random_state=seed, classes=self.classes)

    def _max(self, X):
        if self.row_bound not in ROW_BOUNDS:
            raise ValueError(f"row_bound must be one of {ROW_BOUNDS}, got {self.row_bound!r}")
        return _block_norm_max(np.asarray(X, float) / self.row_scale, [np.arange(np.shape(X)[1])]) \
            if self.row_bound == "private_max" else None

    def fit_source(self, X, y):
        """Fit the private source PLR. Returns self."""
        X, y = _validate_data(self, X, y, dtype=float, ensure_min_samples=2)
        rng = np.random.default_rng(_domain_seeds(self.random_state)[0])
        self.source_block_max_ = self._max(X)
        self.source_ = self._plr(check_epsilon(self.epsilon_source, "epsilon_source"), self.lam_source, None,
                                 _seed(rng)).fit(self._rows(X, self.source_block_max_), y)
        return self

    def fit(self, X, y, X_source=None, y_source=None):
        """Fit the target PLR centred at (1 − η)w_s (after or with the source). Returns self."""
        _ensure_source(self, X_source, y_source)
        X, y = _validate_data(self, X, y, dtype=float, ensure_min_samples=2, reset=False)
        rng = np.random.default_rng(_domain_seeds(self.random_state)[1])
        self.block_max_ = self._max(X)
        w0 = transfer_centre(self.source_.w_, self.eta)
        self.target_ = self._plr(check_epsilon(self.epsilon_target, "epsilon_target"), self.lam, w0,
                                 _seed(rng)).fit(self._rows(X, self.block_max_), y)
        if not np.array_equal(self.target_.classes_, self.source_.classes_):
            raise ValueError("target and source have different classes")
        self.classes_ = self.target_.classes_
        self.privacy_ = PrivacyLedger()
        self.privacy_.add("PLR (source)", "D_s", self.epsilon_source)
        self.privacy_.add(f"PLR (target, centred at (1-eta) w_s, eta={self.eta:g})", "D_t", self.epsilon_target)
        if self.row_bound == "private_max":
            warnings.warn("row_bound='private_max' divides by the largest norm in the private data: "
                          "the fitted model is NOT differentially private (ledger total = inf)",
                          UserWarning, stacklevel=2)
            self.privacy_.add("row scaling by the private maximum norm", "D_s", np.inf, note="outside the DP guarantee")
            self.privacy_.add("row scaling by the private maximum norm", "D_t", np.inf, note="outside the DP guarantee")
        return self

    def decision_function(self, X, model="target"):
        """Margins of the target model (SimComb) or of the source model (``model="source"``: SourceD)."""
        check_is_fitted(self, "target_" if model == "target" else "source_")
        if model not in ("target", "source"):
            raise ValueError(f"model must be 'target' or 'source', got {model!r}")
        X = _validate_data(self, X, dtype=float, reset=False)
        est = self.target_ if model == "target" else self.source_
        return est.decision_function(self._rows(X, self.block_max_ if model == "target" else self.source_block_max_))

    def predict_proba(self, X, model="target"):
        from scipy.special import expit

        p = expit(self.decision_function(X, model))
        return np.column_stack([1.0 - p, p])

    def predict(self, X, model="target"):
        return self.classes_[(self.decision_function(X, model) >= 0).astype(int)]
