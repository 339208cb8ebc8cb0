"""Private logistic regression by objective perturbation: PLR and PLR-FS.

:class:`PrivateLogisticRegression` is Algorithm 1 of Yao et al. (2019) (= Alg. 2
of Chaudhuri et al. 2011). :class:`FeatureSplitLogisticRegression` is its
feature-split variant PLR-FS, the low level of PST-F (Alg. 3) and of PPTL-FS.
Both protect **one sample** (neighbouring datasets differ in one record) with
pure ε-differential privacy, provided the hyper-parameters are chosen without
looking at the private data.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ._validation import (
    ARRAY,
    ARRAY_OR_NONE,
    BOOLEAN,
    CLASSES,
    EPSILON,
    MAX_ITER,
    POSITIVE,
    RANDOM_STATE,
    TOL,
    NonEmpty,
    check_epsilon,
    check_feature_groups,
    check_positive,
    check_random_state,
    validate_params,
)
from .accounting import PrivacyLedger
from .base import (
    BinaryClassifierMixin,
    ReleaseFormatError,
    atomic_fit,
    record_classes,
    record_diagnostics,
    released_labels,
    require_released,
    validate_data,
)
from .mechanisms import (
    NORM_OVERFLOW,
    check_importance,
    clip_rows,
    clipped_rows,
    feature_split_calibration,
    isotropic_noise,
    objective_perturbation_calibration,
)
from .solvers import minimize_perturbed_logistic

__all__ = ["PrivateLogisticRegression", "FeatureSplitLogisticRegression"]


class PrivateLogisticRegression(BinaryClassifierMixin, BaseEstimator):
    """ε-differentially private logistic regression by objective perturbation (PLR).

    Minimises ``(1/n) Σ log(1 + exp(−y_i wᵀx_i)) + bᵀw/n + (Δ/2)‖w‖² + (λ/2)‖w − w0‖²``
    exactly, with ``b`` drawn from a density ∝ exp(−‖b‖/scale) (Algorithm 1 of
    Yao et al. 2019; Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2).

    **Privacy.** Protects one sample (replace-one neighbours) at ``epsilon``,
    given that ``lam``, ``norm_bound`` and ``w0`` do not depend on the
    private data. Rows are clipped to ``norm_bound`` inside ``fit``; no
    data-dependent rescaling is done.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget ε > 0; ``np.inf`` fits the non-private model.
    lam : float, default=0.01
        Regularisation strength λ > 0 (λ = 1/(C·n) in scikit-learn's terms).
    norm_bound : float, default=1.0
        Public bound B: every row is clipped to ‖x‖ ≤ B (including the
        constant feature when ``fit_intercept=True``).
    w0 : array-like of shape (n_features + fit_intercept,) or None
        Centre of the regulariser (λ/2)‖w − w0‖²; used by transfer learning.
        With ``fit_intercept=True`` its last entry centres the weight of the
        constant feature.
    fit_intercept : bool, default=False
        Add a constant feature of value ``intercept_scaling``. Unlike
        scikit-learn's intercept it is regularised (the proof needs a strongly
        convex objective in every coordinate) and counted inside the norm
        bound: the other features are clipped to √(B² − s²).
    intercept_scaling : float or None, default=None
        Value s of the constant feature, 0 < s < B; ``None`` means B/2.
    tol : float, default=1e-10
        The solver stops when ‖∇J‖∞ ≤ tol; otherwise ``fit`` raises
        :class:`~dpstack.solvers.ConvergenceError`.
    max_iter : int, default=100
        Newton iterations.
    random_state : None, int or numpy.random.Generator
        Source of the noise ``b``.
    classes : array-like of shape (2,) or None, default=None
        The public label set; ``classes[1]`` is the positive class. ``None`` reads it from
        ``y``, which is outside the guarantee: a
        :class:`~dpstack.base.PrivacyLeakWarning` is raised and the ledger records the step.
    diagnostics : bool, default=False
        Keep the noise and the solver's iteration count in ``diagnostics_`` (for audits and
        teaching). Such an object is not private (its ledger says ε = ∞); publish its
        release with :func:`dpstack.release.save_release` instead.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class (y = +1).
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
        ``s · w_const`` (0 when ``fit_intercept=False``).
    w_ : ndarray of shape (n_features + fit_intercept,)
        The released parameter vector on the clipped, augmented rows.
    calibration_ : ObjectivePerturbationCalibration
        Public: computed from ε, λ, the bound and n. The number of samples n is public in the
        "replace one record" unit of privacy (neighbouring datasets have the same size).
    epsilon_noise_ : float
        ε' actually used for the noise.
    delta_ : float
        Δ actually added to the ridge.
    privacy_ : PrivacyLedger
        ε spent on the training data and the privacy unit.
    diagnostics_ : sklearn.utils.Bunch
        Only with ``diagnostics=True``: ``noise`` (the vector b), ``noise_norm`` (‖b‖) and
        ``n_iter``.

    The fitted object holds nothing else derived from the data or the noise: what it
    releases is listed in ``_release_attributes``.

    References
    ----------
    K. Chaudhuri, C. Monteleoni, A. D. Sarwate. Differentially private
    empirical risk minimization. JMLR 12, 2011.
    Q. Yao et al. Privacy-preserving stacking with application to
    cross-organizational diabetes prediction. IJCAI 2019, Algorithm 1.

    Examples
    --------
    >>> import numpy as np
    >>> from dpstack import PrivateLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3)) / 3
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = PrivateLogisticRegression(epsilon=1.0, lam=0.01, random_state=0, classes=[0, 1]).fit(X, y)
    >>> clf.delta_, clf.privacy_.total()
    (0.0, 1.0)
    """

    _release_attributes = (
        "classes_",
        "n_features_in_",
        "coef_",
        "intercept_",
        "w_",
        "calibration_",
        "epsilon_noise_",
        "delta_",
        "privacy_",
    )
    #: what a release file holds (the rest of ``_release_attributes`` is recomputed on load)
    _release_source = ("classes_", "coef_", "intercept_", "n_samples")

    _parameter_constraints = {
        "epsilon": EPSILON,
        "lam": POSITIVE,
        "norm_bound": POSITIVE,
        "w0": ARRAY_OR_NONE,
        "fit_intercept": BOOLEAN,
        "intercept_scaling": [None, *POSITIVE],
        "tol": TOL,
        "max_iter": MAX_ITER,
        "random_state": RANDOM_STATE,
        "classes": CLASSES,
        "diagnostics": BOOLEAN,
    }

    def __init__(
        self,
        epsilon=1.0,
        lam=0.01,
        norm_bound=1.0,
        w0=None,
        fit_intercept=False,
        intercept_scaling=None,
        tol=1e-10,
        max_iter=100,
        random_state=None,
        classes=None,
        diagnostics=False,
    ):
        self.epsilon = epsilon
        self.lam = lam
        self.norm_bound = norm_bound
        self.w0 = w0
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.classes = classes
        self.diagnostics = diagnostics

    def _scaling(self):
        bound = check_positive(self.norm_bound, "norm_bound")
        if not self.fit_intercept:
            return bound, 0.0
        s = (
            bound / 2.0
            if self.intercept_scaling is None
            else check_positive(self.intercept_scaling, "intercept_scaling")
        )
        if s >= bound:
            raise ValueError(f"intercept_scaling must be < norm_bound ({bound:g}), got {s:g}")
        return bound, s

    def _design_matrix(self, X):
        """Rows clipped to the bound, with the constant feature appended if any."""
        bound, s = self._scaling()
        if not self.fit_intercept:
            return clip_rows(X, bound)
        Xc = clip_rows(X, np.sqrt(bound**2 - s**2))
        return np.hstack([Xc, np.full((Xc.shape[0], 1), s)])

    def _fit_design(self, X):
        """``(Z, row_scale, intercept)`` for the solver, which solves on ``_design_matrix(X)``.

        Z is X itself, ``row_scale`` the rows beyond the clipping bound with their factors
        (:func:`~dpstack.mechanisms.clipped_rows`) and ``intercept`` the constant feature s
        (``None`` without ``fit_intercept``): the solver scales the margins of the clipped
        rows and adds the constant column's products itself, so X is neither copied nor
        extended. In a subclass that redefines ``_design_matrix``, or when a squared row
        norm is beyond float64 (``clip_rows`` measures such rows again), Z is
        ``_design_matrix(X)`` with no ``row_scale`` or ``intercept``.
        """
        if type(self)._design_matrix is not PrivateLogisticRegression._design_matrix:
            return self._design_matrix(X), None, None
        X = np.asarray(X, dtype=float)
        found = self._clipped(X)
        if found is NORM_OVERFLOW:
            return self._design_matrix(X), None, None
        return X, found, (self._scaling()[1] if self.fit_intercept else None)

    def _clipped(self, X):
        """``clipped_rows`` of X at the bound its rows are clipped to (the constant feature's share removed)."""
        bound, s = self._scaling()
        bound = np.sqrt(bound**2 - s**2) if self.fit_intercept else bound
        if X.ndim != 2 or bound < 1e-150:
            return NORM_OVERFLOW
        return clipped_rows(X, bound)

    @atomic_fit
    def fit(self, X, y):
        """Fit the private model on (X, y). Returns self."""
        validate_params(self)
        check_epsilon(self.epsilon)
        check_positive(self.lam, "lam")
        self._scaling()
        X, y_signed, classes, from_data = self._validate_fit_inputs(X, y)
        return self._fit_validated(X, y_signed, classes, from_data)

    def _fit_validated(self, X, y_signed, classes, from_data):
        epsilon = check_epsilon(self.epsilon)
        lam = check_positive(self.lam, "lam")
        Z, row_scale, intercept = self._fit_design(X)
        n, d = Z.shape[0], Z.shape[1] + (intercept is not None)
        w0 = None
        if self.w0 is not None:
            w0 = np.asarray(self.w0, dtype=float).ravel()
            if w0.shape != (d,):
                raise ValueError(
                    f"w0 must have length {d} (n_features{' + 1 for the intercept' if self.fit_intercept else ''}), "
                    f"got {w0.shape[0]}"
                )
            if not np.all(np.isfinite(w0)):
                raise ValueError("w0 contains NaN or infinity")
        cal = objective_perturbation_calibration(epsilon, n, lam, self._scaling()[0])
        b = isotropic_noise(d, cal.noise_scale, check_random_state(self.random_state))
        w, n_iter = minimize_perturbed_logistic(
            Z,
            y_signed,
            lam,
            b=b,
            delta=cal.delta,
            w0=w0,
            tol=self.tol,
            max_iter=self.max_iter,
            row_scale=row_scale,
            intercept=intercept,
        )
        self.classes_ = classes
        p = X.shape[1]
        self.coef_ = w[None, :p].copy()
        self.intercept_ = np.array([w[p] * self._scaling()[1]]) if self.fit_intercept else np.zeros(1)
        # w_ is derived from the release (coef_, intercept_) exactly as a loaded release derives it
        self.w_ = self._weights(self.coef_, self.intercept_)
        self.calibration_ = cal
        self.epsilon_noise_ = cal.epsilon_noise
        self.delta_ = cal.delta
        self.privacy_ = self._release_ledger()
        record_diagnostics(self, self.privacy_, noise=b, noise_norm=float(np.linalg.norm(b)), n_iter=n_iter)
        return self

    def _release_ledger(self):
        """The ledger of a fit: ε on the whole training set D, per sample (and the label set's source)."""
        ledger = PrivacyLedger()
        ledger.add("PLR (objective perturbation)", "D", float(self.epsilon), "one sample")
        record_classes(ledger, self.classes is None)
        return ledger

    def _from_release(self):
        """Recompute ``w_``, the calibration and the ledger from a loaded release (see :mod:`dpstack.release`)."""
        require_released(self, "classes_", "coef_", "intercept_", "n_samples")
        if released_labels(self).size != 2:
            raise ReleaseFormatError("PrivateLogisticRegression: classes_ must hold two labels")
        coef, intercept = self.coef_, self.intercept_
        if coef.dtype.kind != "f" or coef.ndim != 2 or coef.shape[0] != 1 or coef.shape[1] < 1:
            raise ReleaseFormatError(
                f"PrivateLogisticRegression: coef_ must be a float array of shape (1, p), got {coef.shape}"
            )
        if intercept.dtype.kind != "f" or intercept.shape != (1,):
            raise ReleaseFormatError(
                f"PrivateLogisticRegression: intercept_ must have shape (1,), got {intercept.shape}"
            )
        if not self.fit_intercept and intercept[0] != 0.0:
            raise ReleaseFormatError("PrivateLogisticRegression: intercept_ must be 0 when fit_intercept=False")
        self.n_features_in_ = coef.shape[1]
        self.w_ = self._weights(coef, intercept)
        if self.w0 is not None and np.ravel(self.w0).shape != self.w_.shape:
            raise ReleaseFormatError("PrivateLogisticRegression: w0 does not match the coefficients")
        n = self.n_samples
        del self.n_samples
        cal = objective_perturbation_calibration(self.epsilon, n, self.lam, self._scaling()[0])
        self.calibration_, self.epsilon_noise_, self.delta_ = cal, cal.epsilon_noise, cal.delta
        self.privacy_ = self._release_ledger()

    def _weights(self, coef, intercept):
        """``w_`` from ``coef_`` and ``intercept_``: one definition for ``fit`` and a loaded release.

        The weight of the constant feature s is ``intercept_ / s`` (differing from the
        solver's value by at most one rounding step when s is not a power of two).
        """
        w = np.asarray(coef, dtype=float)[0]
        if not self.fit_intercept:
            return w.copy()
        return np.append(w, np.asarray(intercept, dtype=float)[0] / self._scaling()[1])

    def decision_function(self, X):
        """Margins ``wᵀx`` on the clipped rows (the scale the model was trained on)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return self._decision_function_unchecked(X)

    def _decision_function_unchecked(self, X):
        """``decision_function`` on an X the caller has already validated (internal fast path).

        ``X @ w`` with the margins of the rows beyond the bound scaled by their clipping
        factors and the constant feature's term added: the margins on ``_design_matrix(X)``
        up to rounding, without its copy of X.
        """
        Z, row_scale, intercept = self._fit_design(X)
        if row_scale is None and intercept is None:
            return Z @ self.w_
        p = Z.shape[1]
        margins = Z @ self.w_[:p]
        if row_scale is not None:
            margins[row_scale[0]] *= row_scale[1]
        if intercept is not None:
            margins += intercept * self.w_[p]
        return margins


class FeatureSplitLogisticRegression(BinaryClassifierMixin, BaseEstimator):
    """PLR-FS: one private logistic model per feature block with importances q_k.

    The features are split into K disjoint groups F_k with importance q_k ≥ 0,
    Σ q_k = 1. Block k is clipped to ‖x_(k)‖ ≤ q_k and gets its own perturbed
    problem with noise calibrated by
    :func:`~dpstack.mechanisms.feature_split_calibration`: less noise *relative to
    the signal* on the more important blocks, at a total of ε (Yao et al.
    2019, Algorithm 3 steps 2–12, Theorem 4).

    **Privacy.** One sample, ε in total over all K blocks (the blocks share
    the samples, so the proof pays for all of them together). ``groups`` and
    ``importance`` must come from side information, not the private data.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total budget ε > 0 (``np.inf``: non-private).
    groups : sequence of K arrays of feature indices
        Disjoint, non-empty. Features in no group are ignored.
    importance : array-like of shape (K,) or None
        q_k; ``None`` means 1/K each (variant U).
    lam : float or array-like of shape (K,), default=0.01
        λ_k per block.
    w0 : array-like of shape (n_features,) or None
        Regulariser centre; block k uses ``w0[groups[k]]`` (PPTL-FS target).
    tol, max_iter, random_state, classes, diagnostics
        As in :class:`PrivateLogisticRegression`.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_features)
        Block weights put back in place (0 for ungrouped features).
    block_coefs_ : list of K ndarrays
    groups_ : list of K ndarrays
    importance_ : ndarray of shape (K,)
    calibration_ : FeatureSplitCalibration
        Public (from ε, λ_k, q_k and the public n).
    epsilon_k_ : ndarray of shape (K,)
    delta_k_ : ndarray of shape (K,)
    privacy_ : PrivacyLedger
    diagnostics_ : sklearn.utils.Bunch
        Only with ``diagnostics=True``: ``noises`` (the K vectors b_k), ``noise_norms`` (K,)
        and ``n_iter`` (K,).

    References
    ----------
    Q. Yao et al. IJCAI 2019, Algorithm 3 and Theorem 4.
    X. Guo et al. Privacy-preserving transfer learning for knowledge sharing, Algorithm 3.

    Examples
    --------
    >>> import numpy as np
    >>> from dpstack import FeatureSplitLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 4)) / 4
    >>> y = (X[:, 0] + X[:, 2] > 0).astype(int)
    >>> fs = FeatureSplitLogisticRegression(epsilon=1.0, groups=[[0, 1], [2, 3]], importance=[0.7, 0.3],
    ...                                     random_state=0, classes=[0, 1]).fit(X, y)
    >>> fs.decision_function_blocks(X).shape
    (400, 2)
    """

    _release_attributes = (
        "classes_",
        "n_features_in_",
        "coef_",
        "block_coefs_",
        "groups_",
        "importance_",
        "calibration_",
        "epsilon_k_",
        "delta_k_",
        "privacy_",
    )
    #: what a release file holds (the rest of ``_release_attributes`` is recomputed on load)
    _release_source = ("classes_", "coef_", "n_samples")

    _parameter_constraints = {
        "epsilon": EPSILON,
        "groups": [None, NonEmpty("a non-empty list of arrays of feature indices")],
        "importance": ARRAY_OR_NONE,
        "lam": [*POSITIVE, ARRAY],
        "w0": ARRAY_OR_NONE,
        "tol": TOL,
        "max_iter": MAX_ITER,
        "random_state": RANDOM_STATE,
        "classes": CLASSES,
        "diagnostics": BOOLEAN,
    }

    def __init__(
        self,
        epsilon=1.0,
        groups=None,
        importance=None,
        lam=0.01,
        w0=None,
        tol=1e-10,
        max_iter=100,
        random_state=None,
        classes=None,
        diagnostics=False,
    ):
        self.epsilon = epsilon
        self.groups = groups
        self.importance = importance
        self.lam = lam
        self.w0 = w0
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.classes = classes
        self.diagnostics = diagnostics

    def _check_groups(self, n_features):
        groups = check_feature_groups(self.groups if self.groups is not None else [np.arange(n_features)], n_features)
        K = len(groups)
        q = np.full(K, 1.0 / K) if self.importance is None else check_importance(self.importance)
        if q.size != K:
            raise ValueError(f"importance has {q.size} entries but there are {K} groups")
        if np.ndim(self.lam) != 0 and np.shape(self.lam) != (K,):
            raise ValueError(f"lam has shape {np.shape(self.lam)} but there are K = {K} groups: give one λ or {K}")
        return groups, q

    def block_design(self, X, k):
        """Block k of X, rows clipped to ‖x_(k)‖ ≤ q_k."""
        return clip_rows(X[:, self.groups_[k]], self.importance_[k])

    @atomic_fit
    def fit(self, X, y):
        """Fit the K private block models. Returns self."""
        validate_params(self)
        check_epsilon(self.epsilon)
        X, y_signed, classes, from_data = self._validate_fit_inputs(X, y)
        return self._fit_validated(X, y_signed, classes, from_data)

    def _fit_validated(self, X, y_signed, classes, from_data):
        epsilon = check_epsilon(self.epsilon)
        n, p = X.shape
        groups, importance = self._check_groups(p)
        K = len(groups)
        w0 = None
        if self.w0 is not None:
            w0 = np.asarray(self.w0, dtype=float).ravel()
            if w0.shape != (p,):
                raise ValueError(f"w0 must have length n_features = {p}, got {w0.shape[0]}")
            if not np.all(np.isfinite(w0)):
                raise ValueError("w0 contains NaN or infinity: the regulariser's centre must be finite")
        cal = feature_split_calibration(epsilon, n, self.lam, importance)
        lam_k = np.broadcast_to(np.asarray(self.lam, dtype=float), (K,))
        rng = check_random_state(self.random_state)
        block_coefs, noises, n_iter = [], [], []
        for k, g in enumerate(groups):
            Zk = clip_rows(X[:, g], importance[k])
            b = isotropic_noise(g.size, cal.noise_scale_k[k], rng)
            wk, it = minimize_perturbed_logistic(
                Zk,
                y_signed,
                lam_k[k],
                b=b,
                delta=cal.delta_k[k],
                w0=None if w0 is None else w0[g],
                tol=self.tol,
                max_iter=self.max_iter,
            )
            block_coefs.append(wk)
            noises.append(b)
            n_iter.append(it)
        self.classes_, self.groups_, self.importance_ = classes, groups, importance
        self.block_coefs_ = block_coefs
        self.coef_ = np.zeros((1, p))
        for g, wk in zip(groups, block_coefs):
            self.coef_[0, g] = wk
        self.calibration_ = cal
        self.epsilon_k_ = cal.epsilon_k
        self.delta_k_ = cal.delta_k
        self.privacy_ = self._release_ledger()
        record_diagnostics(
            self,
            self.privacy_,
            noises=noises,
            noise_norms=np.array([np.linalg.norm(b) for b in noises]),
            n_iter=np.array(n_iter),
        )
        return self

    def _release_ledger(self):
        """The ledger of a fit: ε on the whole training set D (each block's model on its own features)."""
        ledger = PrivacyLedger()
        ledger.add(f"PLR-FS (K={len(self.groups_)})", "D", float(self.epsilon), "one sample")
        record_classes(ledger, self.classes is None)
        return ledger

    def _from_release(self):
        """Recompute the blocks, the calibration and the ledger from a loaded release (see :mod:`dpstack.release`)."""
        require_released(self, "classes_", "coef_", "n_samples")
        if released_labels(self).size != 2:
            raise ReleaseFormatError("FeatureSplitLogisticRegression: classes_ must hold two labels")
        coef = self.coef_
        if coef.dtype.kind != "f" or coef.ndim != 2 or coef.shape[0] != 1 or coef.shape[1] < 1:
            raise ReleaseFormatError(f"FeatureSplitLogisticRegression: coef_ must have shape (1, p), got {coef.shape}")
        p = coef.shape[1]
        self.n_features_in_ = p
        groups, importance = self._check_groups(p)
        grouped = np.zeros(p, dtype=bool)
        for g in groups:
            grouped[g] = True
        if np.any(coef[0, ~grouped] != 0.0):
            raise ReleaseFormatError("FeatureSplitLogisticRegression: coef_ is not 0 on features outside the groups")
        self.groups_, self.importance_ = groups, importance
        self.block_coefs_ = [coef[0, g].copy() for g in groups]
        n = self.n_samples
        del self.n_samples
        cal = feature_split_calibration(self.epsilon, n, self.lam, importance)
        self.calibration_, self.epsilon_k_, self.delta_k_ = cal, cal.epsilon_k, cal.delta_k
        self.privacy_ = self._release_ledger()

    def decision_function_blocks(self, X):
        """Per-block margins x_(k)ᵀ w_k on clipped blocks, shape (n, K)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return self._decision_function_blocks_unchecked(X)

    def _decision_function_blocks_unchecked(self, X, bounded=False):
        """``decision_function_blocks`` on an X the caller has already validated (internal fast path).

        ``bounded=True``: the caller has already brought every block under its bound (a
        stacking design), so the blocks are not clipped again.
        """
        if bounded:
            return np.column_stack([X[:, g] @ w for g, w in zip(self.groups_, self.block_coefs_)])
        return np.column_stack([self.block_design(X, k) @ w for k, w in enumerate(self.block_coefs_)])

    def decision_function(self, X):
        """Sum of the block margins (the full linear model on clipped blocks)."""
        return self.decision_function_blocks(X).sum(axis=1)

    def _decision_function_unchecked(self, X):
        """``decision_function`` on an X the caller has already validated (internal fast path)."""
        return self._decision_function_blocks_unchecked(X).sum(axis=1)
