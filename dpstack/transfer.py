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

import numbers

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import Bunch
from sklearn.utils.validation import check_is_fitted

from ._validation import (
    ARRAY,
    BOOLEAN,
    CLASSES,
    EPSILON,
    MAX_ITER,
    POSITIVE,
    RANDOM_STATE,
    TOL,
    Number,
    StrOptions,
    check_epsilon,
    check_positive,
    check_random_state,
    spawn_streams,
    validate_params,
)
from .accounting import PrivacyLedger
from .base import (
    DIAGNOSTICS,
    ReleaseFormatError,
    atomic_fit,
    check_class_labels,
    check_diagnostics,
    check_released_block_max,
    record_classes,
    record_diagnostics,
    release_only,
    released_labels,
    require_released,
    resolve_classes,
    signed_labels,
    validate_data,
)
from .linear import FeatureSplitLogisticRegression, PrivateLogisticRegression
from .stacking import (
    HIGH,
    LOW,
    OWN,
    ROW_BOUNDS,
    SIGNED,
    STACKING_CONSTRAINTS,
    StackingMixin,
    block_lambdas,
    block_norm_max,
    bound_blocks,
    check_block_lam,
    note_private_max,
    record_private_max,
    resolve_groups,
)

__all__ = ["PrivateTransferStacking", "SimComb", "transfer_centre"]


def _require_y(estimator, y, name="y"):
    """scikit-learn's wording when the labels are missing (``fit(X, None)``)."""
    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target {name} is None")


def _ensure_source(estimator, X_source, y_source):
    """Fit the source now if it is given, else require an earlier :meth:`fit_source`."""
    if (X_source is None) != (y_source is None):
        raise ValueError("X_source and y_source must be given together")
    if X_source is not None:
        estimator.fit_source(X_source, y_source)
    elif not hasattr(estimator, "source_"):
        raise ValueError("fit the source first: call fit_source(X_source, y_source) or pass X_source, y_source")


def _check_target(estimator, X, y, min_samples):
    """Target (X, y in {-1, +1}) checked against what the source fit fixed; nothing is stored.

    The number of features and the label set are those of the source fit: the target's
    features are checked without resetting ``n_features_in_``, and its labels must lie in
    ``classes_`` (a target holding a single class keeps the output's shape).
    """
    X, y = validate_data(estimator, X, y, reset=False, ensure_min_samples=min_samples)
    y = check_class_labels(y)
    if estimator.classes is not None:
        given = np.asarray(estimator.classes)  # binary: in the order given, as fit_source kept it
        if given.shape != estimator.classes_.shape or not np.array_equal(given, estimator.classes_):
            raise ValueError(
                f"classes={estimator.classes!r} differs from the classes_ fixed at fit_source "
                f"({estimator.classes_!r}): refit the source with the new label set"
            )
    classes, _ = resolve_classes(estimator.classes_, y, binary=True, estimator=type(estimator).__name__)
    return X, signed_labels(y, classes[1])


def _drop(estimator, names):
    for name in names:
        vars(estimator).pop(name, None)


def _source_ledger(estimator, ledger):
    """Label the source-side steps outside the guarantee in the source's ledger."""
    if estimator.row_bound == "private_max":
        note_private_max(ledger, "D_s", stacklevel=5)
    if estimator.diagnostics:
        ledger.add_outside(
            DIAGNOSTICS,
            "D_s",
            "the source model keeps its noise: publish only the release (dpstack.release.save_release)",
        )


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


def _domain_streams(random_state):
    """Independent streams for the source and the target (:func:`~dpstack._validation.spawn_streams`).

    Reusing one seed on both sides would make the target's noise a function of
    the source's: anyone who can recompute b_s could then recompute b_t and
    strip the target's noise. Spawned SeedSequences are independent, and ``None``
    draws fresh OS entropy on each side.
    """
    return spawn_streams(random_state, 2)


class PrivateTransferStacking(StackingMixin, BaseEstimator):
    """PPTL-FS / PST-H: feature-split private transfer with a stacked target model.

    Call :meth:`fit_source` on the source data, then :meth:`fit` on the target
    (or :meth:`fit` with ``X_source``, ``y_source`` to do both). Variant W
    (``feature_importance``) = PPTL-FS(W) = PST-H(W); variant U (random
    groups, q_k = 1/K) = PPTL-FS(R) = PST-H(U).

    **Privacy.** ε_s (``epsilon_source``) for one source sample (source PLR-FS on D_s); ε_t
    (``epsilon_target``) for one target sample (PLR-FS on D_t0 and PLR on the disjoint D_t1). See
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
        μ_t of the target's level-1 PLR (``None``: ``lam``). Tune it apart from ``lam``, as
        :func:`dpstack.companion.papers.pptl.grids.transfer_cell` does (λ and η first, then μ_t with
        level 0 fixed).
    eta : float or array-like of shape (K,), default=0.5
        η ∈ [0, 1]: 1 ignores the source, 0 shrinks towards it only.
    low_fraction : float, default=0.5
        |D_t0| / |D_t|.
    row_bound, row_scale, meta_features, low_intercept, high_intercept, tol, max_iter
        As in :class:`~dpstack.PrivateStackingClassifier`.
    random_state : None, int, SeedSequence or Generator
        Source and target get independent spawned streams, and within each domain the
        split, each level and the groups get their own (``None``: fresh OS entropy for
        each). The fitted ``source_``, ``low_level_`` and ``high_level_`` keep no seed.
    classes : array-like of shape (2,) or None, default=None
        The public label set of both domains, resolved once at :meth:`fit_source`; the
        target's labels must lie in it (a target holding one class keeps the output's
        shape). ``None`` reads it from the source labels, outside the guarantee (a
        :class:`~dpstack.base.PrivacyLeakWarning` and a ledger entry with ε = ∞ on D_s).
    diagnostics : bool, default=False
        Keep, in ``diagnostics_``, the rows of D_t0 and D_t1 and the inner models'
        diagnostics (noise, iteration counts). Such an object is not private (ledger total
        = ∞); publish its release with :func:`dpstack.release.save_release`.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Fixed at :meth:`fit_source`.
    source_ : FeatureSplitLogisticRegression
        The private source blocks w_s^(k).
    source_privacy_ : PrivacyLedger
        The source fit's ledger (part ``D_s``).
    groups_, importance_, block_bounds_ : as in PrivateStackingClassifier
    low_level_ : FeatureSplitLogisticRegression
        Target level-0 blocks fitted on D_t0.
    high_level_ : PrivateLogisticRegression
        Target level-1 model fitted on D_t1.
    block_max_, source_block_max_ : ndarray or None
        Largest block norms of the target and of the source, only with
        ``row_bound="private_max"`` (outside the guarantee, recorded in the ledgers).
    privacy_ : PrivacyLedger
        Parts ``D_s`` (ε_s), ``D_t/D_t0`` and ``D_t/D_t1`` (ε_t each).
    diagnostics_ : sklearn.utils.Bunch
        Only with ``diagnostics=True``: ``low_index``, ``high_index`` (rows of D_t0 and D_t1),
        ``source``, ``low_level`` and ``high_level`` (the inner models' ``diagnostics_``).

    What the object releases is listed in ``_release_attributes``. A release exported
    after :meth:`fit_source` alone is what the source organisation hands over: loaded
    back, it can be fitted on a target without touching the source data again.

    **Composition hook.** ``fit(X, y, low_level=release)`` fits only the level-1 model,
    on D_t1, with the seeds of a normal fit; D_t0 is not read (see
    :class:`~dpstack.PrivateStackingClassifier`).

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
    >>> m = PrivateTransferStacking(n_groups=2, random_state=0, classes=[0, 1])
    >>> m = m.fit(Xt, yt, X_source=Xs, y_source=ys)
    >>> sorted(m.privacy_.per_part().items())
    [('D_s', 1.0), ('D_t/D_t0', 1.0), ('D_t/D_t1', 1.0)]
    """

    _release_attributes = (
        "classes_",
        "n_features_in_",
        "groups_",
        "importance_",
        "block_bounds_",
        "source_",
        "source_block_max_",
        "source_privacy_",
        "low_level_",
        "high_level_",
        "block_max_",
        "privacy_",
    )
    #: what a release file holds (the rest of ``_release_attributes`` is recomputed on load)
    _release_source = (
        "classes_",
        "n_features_in_",
        "groups_",
        "importance_",
        "source_block_max_",
        "source_",
        "low_level_",
        "high_level_",
        "block_max_",
    )
    #: what a target fit adds; a new source fit drops them (they were fitted on the old source)
    _target_attributes = ("low_level_", "high_level_", "block_max_", "privacy_", "diagnostics_")

    _parameter_constraints = {
        **STACKING_CONSTRAINTS,
        "epsilon_source": EPSILON,
        "epsilon_target": EPSILON,
        "lam_source": [*POSITIVE, ARRAY],
        "eta": [Number(numbers.Real, 0, 1, closed="both", desc="a float in [0, 1]"), ARRAY],
    }

    def __init__(
        self,
        epsilon_source=1.0,
        epsilon_target=1.0,
        n_groups=5,
        feature_importance=None,
        groups=None,
        group_importance=None,
        combiner="stack",
        lam_source=0.01,
        lam=0.01,
        lam_blocks="same",
        lam_high=None,
        eta=0.5,
        low_fraction=0.5,
        row_bound="clip",
        row_scale=1.0,
        meta_features="centred",
        low_intercept=False,
        high_intercept=False,
        tol=1e-10,
        max_iter=100,
        random_state=None,
        classes=None,
        diagnostics=False,
    ):
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

    @atomic_fit
    def fit_source(self, X, y):
        """Fit the private source blocks (PLR-FS(ε_s), g = ½‖w‖²) and fix the groups and classes. Returns self.

        A target fitted on an earlier source is dropped (it was centred at the old source).
        """
        validate_params(self)
        eps_s = check_epsilon(self.epsilon_source, "epsilon_source")
        self._check_common_params()
        X, y_signed, classes, classes_from_data = self._validate_fit_inputs(X, y)
        own, noise = spawn_streams(_domain_streams(self.random_state)[0], 2)
        rng = check_random_state(own)
        groups, importance = resolve_groups(
            X.shape[1], self.n_groups, self.groups, self.feature_importance, self.group_importance, rng
        )
        lam_source = block_lambdas(
            check_block_lam(self.lam_source, len(groups), "lam_source"), importance, self.lam_blocks
        )
        # each domain scales its own data; only "private_max" looks at the data to do so
        block_max = block_norm_max(X / self.row_scale, groups) if self.row_bound == "private_max" else None
        Z = self._design(X, block_max, groups, importance)
        source = FeatureSplitLogisticRegression(
            epsilon=eps_s,
            groups=self._z_groups(groups),
            importance=importance,
            lam=lam_source,
            tol=self.tol,
            max_iter=self.max_iter,
            random_state=noise,
            classes=SIGNED,
            diagnostics=self.diagnostics,
        )._fit_unchecked(Z, y_signed)
        release_only(source)
        ledger = PrivacyLedger()
        ledger.add(f"PLR-FS (source, K={len(groups)})", "D_s", eps_s)
        record_classes(ledger, classes_from_data, "D_s")
        _source_ledger(self, ledger)
        _drop(self, self._target_attributes)
        self.classes_, self.groups_, self.importance_, self.block_bounds_ = classes, groups, importance, importance
        self.source_block_max_, self.source_, self.source_privacy_ = block_max, source, ledger
        return self

    @atomic_fit
    def fit(self, X, y, X_source=None, y_source=None, low_level=None):
        """Fit the target (after :meth:`fit_source`, or fitting the source first). Returns self.

        Parameters
        ----------
        X, y : the target data
        X_source, y_source : the source data, or None to use the source of an earlier
            :meth:`fit_source` (not refitted: ε_s is spent once).
        low_level : FeatureSplitLogisticRegression or None
            A fitted target level-0 release (a ``low_level_``): only the level-1 model is
            fitted, on D_t1, with the seeds of a normal fit; D_t0 is not read.
        """
        validate_params(self)
        eps_t = check_epsilon(self.epsilon_target, "epsilon_target")
        self._check_common_params()
        _require_y(self, y)
        _ensure_source(self, X_source, y_source)
        # --- phase 1: check everything against the source fit and draw the target's randomness
        X, y_signed = _check_target(self, X, y, self._min_samples)
        K = len(self.groups_)
        lam_t = block_lambdas(check_block_lam(self.lam, K), self.importance_, self.lam_blocks)
        self._high_lam()
        eta = np.asarray(self.eta, dtype=float) if np.ndim(self.eta) else self.eta
        if np.ndim(eta) == 0:
            if isinstance(eta, bool) or not isinstance(eta, numbers.Real):
                raise TypeError(f"eta must be a number in [0, 1] or {K} of them, got {self.eta!r}")
            eta = np.full(K, float(eta))
        elif eta.shape != (K,):
            raise ValueError(f"eta has {eta.size} entries but there are K = {K} blocks: give one η or {K}")
        w0 = np.concatenate([transfer_centre(w, e) for w, e in zip(self.source_.block_coefs_, eta)])
        streams = spawn_streams(_domain_streams(self.random_state)[1], 3)
        low, high = self._split(X.shape[0], check_random_state(streams[OWN]))
        parts = Bunch(low=low, high=high, samples=None)
        low_seed, high_seed = streams[LOW], streams[HIGH]
        z_groups = self._z_groups()
        if low_level is not None:
            low_level = self._check_low_level_release(
                low_level, "features", int(sum(g.size for g in z_groups)), z_groups, self.importance_
            )
        block_max = block_norm_max(X / self.row_scale, self.groups_) if self.row_bound == "private_max" else None
        # --- phase 2: fit
        ledger = PrivacyLedger()
        ledger.extend(self.source_privacy_)
        step = f"PLR-FS (target level 0, K={K}, centred at (1-eta) w_s)"
        if low_level is None:
            low_level = FeatureSplitLogisticRegression(
                epsilon=eps_t,
                groups=z_groups,
                importance=self.importance_,
                lam=lam_t,
                w0=w0,
                tol=self.tol,
                max_iter=self.max_iter,
                random_state=low_seed,
                classes=SIGNED,
                diagnostics=self.diagnostics,
            )._fit_unchecked(self._design(X[low], block_max), y_signed[low])
            release_only(low_level)
            ledger.add(step, "D_t/D_t0", eps_t)
        else:
            ledger.add(
                step,
                "D_t/D_t0",
                low_level.privacy_.total(),
                note="release handed in to fit(low_level=...), D_t0 not read",
            )
        high_level = self._fit_high_level(X, y_signed, parts, low_level, eps_t, high_seed, block_max=block_max)
        ledger.add("PLR (target level 1)", "D_t/D_t1", eps_t)
        if self.row_bound == "private_max":
            note_private_max(ledger, "D_t", stacklevel=4)
        self.low_level_, self.high_level_, self.block_max_, self.privacy_ = low_level, high_level, block_max, ledger
        record_diagnostics(
            self,
            ledger,
            "D_t",
            low_index=low,
            high_index=high,
            source=getattr(self.source_, "diagnostics_", None),
            low_level=getattr(low_level, "diagnostics_", None),
            high_level=getattr(high_level, "diagnostics_", None),
        )
        return self

    def _release_source_ledger(self):
        """The source fit's ledger a release's parameters give: ε_s on D_s."""
        ledger = PrivacyLedger()
        ledger.add(f"PLR-FS (source, K={len(self.groups_)})", "D_s", float(self.epsilon_source))
        record_classes(ledger, self.classes is None, "D_s")
        if self.row_bound == "private_max":
            record_private_max(ledger, "D_s")
        return ledger

    def _release_ledger(self):
        """The ledger a release's parameters give: the source's, then ε_t on each target part."""
        ledger = PrivacyLedger()
        ledger.extend(self._release_source_ledger())
        eps_t = float(self.epsilon_target)
        ledger.add(f"PLR-FS (target level 0, K={len(self.groups_)}, centred at (1-eta) w_s)", "D_t/D_t0", eps_t)
        ledger.add("PLR (target level 1)", "D_t/D_t1", eps_t)
        if self.row_bound == "private_max":
            record_private_max(ledger, "D_t")
        return ledger

    def _from_release(self):
        """Check a loaded release's models against its structure and recompute the ledgers (see :mod:`dpstack.release`)."""
        require_released(self, "classes_", "n_features_in_", "groups_", "importance_", "source_")
        released_labels(self)
        self.groups_, self.importance_ = self._check_released_structure(self.groups_, self.importance_)
        self.block_bounds_ = self.importance_
        check_released_block_max(self, "source_block_max_")
        z_groups = self._z_groups()
        n_design = int(sum(g.size for g in z_groups))
        self._check_low_level_release(self.source_, "features", n_design, z_groups, self.importance_)
        self.source_privacy_ = self._release_source_ledger()
        target = [a for a in ("low_level_", "high_level_") if getattr(self, a, None) is not None]
        if target:
            require_released(self, "low_level_", "high_level_")
            check_released_block_max(self, "block_max_")
            self._check_low_level_release(self.low_level_, "features", n_design, z_groups, self.importance_)
            self._check_released_high_level(len(self.importance_))
            self.privacy_ = self._release_ledger()
        elif getattr(self, "block_max_", None) is not None:
            raise ReleaseFormatError("PrivateTransferStacking: block_max_ without a target")

    def decision_function_source(self, X):
        """Sum of the source blocks' margins on X (the PLR-FS source used directly)."""
        check_is_fitted(self, "source_")
        X = validate_data(self, X, reset=False)
        return self.source_._decision_function_unchecked(self._design(X, self.source_block_max_))


class SimComb(ClassifierMixin, BaseEstimator):
    """SimComb (PPTL Algorithm 2) = PPHTL of PST Table 2: PLR on the source, PLR with HTL on the target.

    Source: PLR(ε_s) with g = ½‖w‖². Target: PLR(ε_t) with
    g_t = (η/2)‖w‖² + ((1−η)/2)‖w − w_s‖², i.e. centre (1 − η)w_s.
    ``eta=1`` gives Direct (PLR on the target alone); ``decision_function(X,
    model="source")`` gives SourceD.

    **Privacy.** ε_s (``epsilon_source``) for one source sample, ε_t (``epsilon_target``) for one
    target sample (replace-one neighbours in either domain); the target sees the source only
    through the released w_s.

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
        ``random_state`` spawns independent source and target streams (``None``: fresh OS
        entropy for each); the fitted ``source_`` and ``target_`` keep no seed.

    classes : array-like of shape (2,) or None, default=None
        The public label set of both domains, resolved once at :meth:`fit_source` (the two
        PLRs are fitted on y in {-1, +1}). ``None`` reads it from the source labels, outside
        the guarantee (:class:`~dpstack.base.PrivacyLeakWarning`, ledger entry ε = ∞).
    diagnostics : bool, default=False
        Keep the two PLRs' noise and iteration counts (``diagnostics_``); the object is then
        not private (ledger total = ∞).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Fixed at :meth:`fit_source`.
    source_, target_ : PrivateLogisticRegression
    source_privacy_ : PrivacyLedger
        The source fit's ledger (part ``D_s``).
    block_max_, source_block_max_ : float or None
        Largest row norms, only with ``row_bound="private_max"`` (outside the guarantee).
    privacy_ : PrivacyLedger
        Parts ``D_s`` (ε_s) and ``D_t`` (ε_t).
    diagnostics_ : sklearn.utils.Bunch
        Only with ``diagnostics=True``: ``source`` and ``target``, the PLRs' ``diagnostics_``.

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
    >>> sc = SimComb(random_state=0, classes=[0, 1]).fit(Xt, yt, X_source=Xs, y_source=ys)
    >>> sorted(sc.privacy_.per_part().items())
    [('D_s', 1.0), ('D_t', 1.0)]
    """

    _release_attributes = (
        "classes_",
        "n_features_in_",
        "source_",
        "source_block_max_",
        "source_privacy_",
        "target_",
        "block_max_",
        "privacy_",
    )
    #: what a release file holds (the rest of ``_release_attributes`` is recomputed on load)
    _release_source = ("classes_", "n_features_in_", "source_block_max_", "source_", "target_", "block_max_")
    _target_attributes = ("target_", "block_max_", "privacy_", "diagnostics_")

    _parameter_constraints = {
        "epsilon_source": EPSILON,
        "epsilon_target": EPSILON,
        "lam_source": POSITIVE,
        "lam": POSITIVE,
        "eta": [Number(numbers.Real, 0, 1, closed="both", desc="a float in [0, 1]")],
        "fit_intercept": BOOLEAN,
        "row_bound": [StrOptions(set(ROW_BOUNDS))],
        "row_scale": POSITIVE,
        "tol": TOL,
        "max_iter": MAX_ITER,
        "random_state": RANDOM_STATE,
        "classes": CLASSES,
        "diagnostics": BOOLEAN,
    }

    def __init__(
        self,
        epsilon_source=1.0,
        epsilon_target=1.0,
        lam_source=0.01,
        lam=0.01,
        eta=0.5,
        fit_intercept=False,
        row_bound="clip",
        row_scale=1.0,
        tol=1e-10,
        max_iter=100,
        random_state=None,
        classes=None,
        diagnostics=False,
    ):
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
        return bound_blocks(
            X, [np.arange(X.shape[1])], np.ones(1), self.row_bound, self.row_scale, block_max=block_max
        )[0]

    def _plr(self, epsilon, lam, w0, seed):
        return PrivateLogisticRegression(
            epsilon=epsilon,
            lam=lam,
            norm_bound=1.0,
            w0=w0,
            fit_intercept=self.fit_intercept,
            tol=self.tol,
            max_iter=self.max_iter,
            random_state=seed,
            classes=SIGNED,
            diagnostics=self.diagnostics,
        )

    def _check_params(self):
        check_diagnostics(self.diagnostics)
        if self.row_bound not in ROW_BOUNDS:
            raise ValueError(f"row_bound must be one of {ROW_BOUNDS}, got {self.row_bound!r}")
        check_positive(self.row_scale, "row_scale")
        check_positive(self.lam_source, "lam_source")
        check_positive(self.lam, "lam")
        if isinstance(self.eta, bool) or not isinstance(self.eta, numbers.Real):
            raise TypeError(f"eta must be a number in [0, 1], got {self.eta!r}")
        transfer_centre(0.0, self.eta)

    def _max(self, X):
        """Largest row norm (only for ``row_bound="private_max"``, outside the guarantee)."""
        return block_norm_max(X / self.row_scale, [np.arange(X.shape[1])]) if self.row_bound == "private_max" else None

    @atomic_fit
    def fit_source(self, X, y):
        """Fit the private source PLR and fix the label set. Returns self.

        A target fitted on an earlier source is dropped (it was centred at the old source).
        """
        validate_params(self)
        eps_s = check_epsilon(self.epsilon_source, "epsilon_source")
        self._check_params()
        X, y = validate_data(self, X, y, ensure_min_samples=2)
        y = check_class_labels(y)
        classes, from_data = resolve_classes(self.classes, y, binary=True, estimator="SimComb")
        block_max = self._max(X)
        source = self._plr(eps_s, self.lam_source, None, _domain_streams(self.random_state)[0])._fit_unchecked(
            self._rows(X, block_max), signed_labels(y, classes[1])
        )
        release_only(source)
        ledger = PrivacyLedger()
        ledger.add("PLR (source)", "D_s", eps_s)
        record_classes(ledger, from_data, "D_s")
        _source_ledger(self, ledger)
        _drop(self, self._target_attributes)
        self.classes_, self.source_block_max_, self.source_, self.source_privacy_ = classes, block_max, source, ledger
        return self

    @atomic_fit
    def fit(self, X, y, X_source=None, y_source=None):
        """Fit the target PLR centred at (1 − η)w_s (after or with the source). Returns self."""
        validate_params(self)
        eps_t = check_epsilon(self.epsilon_target, "epsilon_target")
        self._check_params()
        _require_y(self, y)
        _ensure_source(self, X_source, y_source)
        X, y_signed = _check_target(self, X, y, 2)
        w0 = transfer_centre(self.source_.w_, self.eta)
        block_max = self._max(X)
        target = self._plr(eps_t, self.lam, w0, _domain_streams(self.random_state)[1])
        target = release_only(target._fit_unchecked(self._rows(X, block_max), y_signed))
        ledger = PrivacyLedger()
        ledger.extend(self.source_privacy_)
        ledger.add(f"PLR (target, centred at (1-eta) w_s, eta={self.eta:g})", "D_t", eps_t)
        if self.row_bound == "private_max":
            note_private_max(ledger, "D_t", stacklevel=4)
        self.target_, self.block_max_, self.privacy_ = target, block_max, ledger
        record_diagnostics(
            self,
            ledger,
            "D_t",
            source=getattr(self.source_, "diagnostics_", None),
            target=getattr(target, "diagnostics_", None),
        )
        return self

    def _check_released_level(self, level, attr):
        if not isinstance(level, PrivateLogisticRegression) or level.n_features_in_ != int(self.n_features_in_):
            raise ReleaseFormatError(f"SimComb: {attr} must be a PLR on the {self.n_features_in_} features")
        if not np.array_equal(level.classes_, [-1, 1]) or bool(level.fit_intercept) != bool(self.fit_intercept):
            raise ReleaseFormatError(f"SimComb: {attr} does not match the estimator's parameters")

    def _release_source_ledger(self):
        """The source fit's ledger a release's parameters give: ε_s on D_s."""
        ledger = PrivacyLedger()
        ledger.add("PLR (source)", "D_s", float(self.epsilon_source))
        record_classes(ledger, self.classes is None, "D_s")
        if self.row_bound == "private_max":
            record_private_max(ledger, "D_s")
        return ledger

    def _release_ledger(self):
        """The ledger a release's parameters give: the source's, then ε_t on D_t."""
        ledger = PrivacyLedger()
        ledger.extend(self._release_source_ledger())
        ledger.add(f"PLR (target, centred at (1-eta) w_s, eta={self.eta:g})", "D_t", float(self.epsilon_target))
        if self.row_bound == "private_max":
            record_private_max(ledger, "D_t")
        return ledger

    def _from_release(self):
        """Check a loaded release's models and recompute the ledgers (see :mod:`dpstack.release`)."""
        require_released(self, "classes_", "n_features_in_", "source_")
        if released_labels(self).size != 2:
            raise ReleaseFormatError("SimComb: classes_ must hold two labels")
        check_released_block_max(self, "source_block_max_")
        self._check_released_level(self.source_, "source_")
        self.source_privacy_ = self._release_source_ledger()
        if getattr(self, "target_", None) is not None:
            check_released_block_max(self, "block_max_")
            self._check_released_level(self.target_, "target_")
            self.privacy_ = self._release_ledger()
        elif getattr(self, "block_max_", None) is not None:
            raise ReleaseFormatError("SimComb: block_max_ without a target")

    def decision_function(self, X, model="target"):
        """Margins of the target model (SimComb) or of the source model (``model="source"``: SourceD)."""
        if model not in ("target", "source"):
            raise ValueError(f"model must be 'target' or 'source', got {model!r}")
        check_is_fitted(self, "target_" if model == "target" else "source_")
        X = validate_data(self, X, reset=False)
        est, block_max = (
            (self.target_, self.block_max_) if model == "target" else (self.source_, self.source_block_max_)
        )
        return est._decision_function_unchecked(self._rows(X, block_max))

    def predict_proba(self, X, model="target"):
        """(n, 2) probabilities σ(margin) of ``classes_[0]`` and ``classes_[1]``."""
        p = expit(self.decision_function(X, model))
        return np.column_stack([1.0 - p, p])

    def predict(self, X, model="target"):
        """Class labels of the target (or source) model."""
        margins = self.decision_function(X, model)  # checks fitted state before classes_ is read
        return self.classes_[(margins >= 0).astype(int)]

    def __sklearn_tags__(self):
        # binary only (resolve_classes refuses a third class), dense rows only
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = False
        return tags
