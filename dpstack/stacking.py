"""Privacy-preserving stacking: PST-S (Algorithm 2) and PST-F (Algorithm 3) of Yao et al. (2019).

Both split the training data at random into a low-level part D_l and a
high-level part D_h. PST-S splits D_l again into K disjoint sample sets and
fits PLR(ε) on each; PST-F fits PLR-FS(ε) on K feature blocks of D_l. The
high level is PLR(ε) on the meta-features σ(x_(k)ᵀw_k) of D_h. Because D_l,
its sample sets and D_h are disjoint, parallel composition gives ε overall
(PST Proposition 3, Theorem 4).

The papers leave four choices open; each is a parameter here (the PST overview
of the book, :ref:`pst-open-choices`, lists them with their defaults):

* ``row_bound`` — how rows are brought under the norm bounds the proofs need.
  ``"clip"`` (default), ``"scale"`` and ``"normalize"`` are per-row maps fixed
  before seeing the data, so the guarantee holds; ``"private_max"`` divides by
  the largest norm in the training data and is **outside the guarantee**.
* ``meta_features`` — ``"centred"`` (2σ − 1)/√K (default) or ``"sigmoid"`` σ/√K
  (the papers' σ(x_(k)ᵀw_k) scaled to the unit ball); both keep ‖m‖ ≤ 1, the bound the high-level PLR assumes.
* ``lam_high`` — λ of the high level (default: the low level's λ).
* ``low_intercept`` / ``high_intercept`` — a regularised constant feature
  inside the norm bound (half of the bound, as in
  :class:`~dpstack.linear.PrivateLogisticRegression`).

Helpers shared with :mod:`dpstack.transfer`: :func:`resolve_groups`,
:func:`bound_blocks`, :func:`meta_features`.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ._validation import check_epsilon, check_feature_groups, check_positive, check_random_state
from .accounting import PrivacyLedger
from .base import record_classes, record_diagnostics
from .linear import FeatureSplitLogisticRegression, PrivateLogisticRegression, _BinaryLinearMixin, _validate_data
from .mechanisms import check_importance, clip_rows

__all__ = [
    "PrivateStackingClassifier",
    "resolve_groups",
    "bound_blocks",
    "bound_rows",
    "block_lambdas",
    "meta_features",
    "ROW_BOUNDS",
    "COMBINERS",
]

ROW_BOUNDS = ("clip", "scale", "normalize", "private_max")
META_FEATURES = ("centred", "sigmoid")
COMBINERS = ("stack", "vote", "weighted_vote")
#: share of a block's bound given to its constant feature (PLR's default s = B/2)
INTERCEPT_SHARE = 0.5


def resolve_groups(n_features, n_groups=5, groups=None, feature_importance=None,
                   group_importance=None, random_state=None):
    """Feature groups F_k and importances q_k of PST-F / PPTL-FS.

    * ``groups`` given: used as is (validated: disjoint, non-empty, in range).
    * else ``feature_importance`` given — variant **W**: features sorted by
      decreasing importance and cut into ``n_groups`` contiguous groups of
      (almost) equal size (PST §4.1, "the top 10 features in the first group").
    * else — variant **U**: a random permutation cut into equal groups.

    q_k: ``group_importance`` if given; else PST eq. (6),
    q_k = Σ_{i∈F_k} v_i / Σ_{grouped j} v_j, from ``feature_importance``; else 1/K.
    Importances must be public side information for the guarantee to hold.

    Returns
    -------
    groups : list of K int arrays
    importance : ndarray of shape (K,)
    """
    v = None
    if feature_importance is not None:
        v = np.asarray(feature_importance, dtype=float)
        if v.shape != (n_features,):
            raise ValueError(f"feature_importance must have one value per feature ({n_features}), got shape {v.shape}")
        if not np.all(np.isfinite(v)) or np.any(v < 0) or v.sum() <= 0:
            raise ValueError("feature_importance must be finite, >= 0 and not all 0")
    if groups is None:
        if isinstance(n_groups, bool) or int(n_groups) != n_groups or n_groups < 1:
            raise ValueError(f"n_groups must be a positive integer, got {n_groups!r}")
        if n_groups > n_features:
            raise ValueError(f"n_groups (K = {n_groups}) cannot exceed the number of features ({n_features})")
        order = (np.argsort(-v, kind="stable") if v is not None
                 else check_random_state(random_state).permutation(n_features))
        groups = [np.sort(g) if v is None else g for g in np.array_split(order, int(n_groups))]
    else:
        groups = check_feature_groups(groups, n_features)
    K = len(groups)
    if group_importance is not None:
        q = check_importance(group_importance)
        if q.size != K:
            raise ValueError(f"group_importance has {q.size} entries but there are {K} groups")
    elif v is not None:
        sums = np.array([v[g].sum() for g in groups])
        if sums.sum() <= 0:
            raise ValueError("the grouped features have zero total importance")
        q = sums / sums.sum()
    else:
        q = np.full(K, 1.0 / K)
    return groups, q


def _block_norm_max(X, groups):
    return np.array([np.sqrt(np.einsum("ij,ij->i", X[:, g], X[:, g])).max() for g in groups])


def bound_blocks(X, groups, importance, method="clip", row_scale=1.0, intercept=False, block_max=None):
    """Lay the blocks out contiguously with ‖z_(k)‖ ≤ q_k for every row.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    groups : list of K index arrays
    importance : ndarray of shape (K,)
        The q_k, which are the blocks' norm bounds (PLR: one block, q = 1).
    method : {"clip", "scale", "normalize", "private_max"}
        With ``x ← x / row_scale`` first:

        - ``"clip"``: each block clipped to norm q_k (rows already inside are unchanged);
        - ``"scale"``: the whole row clipped to norm 1, then block k multiplied by
          q_k (the papers' "scale ‖x‖ ≤ q_k" read literally: ‖x_(k)‖ ≤ ‖x‖ ≤ 1);
        - ``"normalize"``: each block rescaled to norm exactly q_k (0 stays 0);
        - ``"private_max"``: block k divided by ``block_max[k]`` (its largest
          norm in the training data) and multiplied by q_k, then clipped.
          **Not differentially private**: the scale depends on one record.

        The first three are per-row maps fixed in advance, so they keep the guarantee.
    row_scale : float
        Public constant dividing X first (e.g. a known range of the features).
    intercept : bool
        Append one constant feature per block of value q_k/2; the block's
        features then get the bound q_k·√(3/4), so ‖z_(k)‖ ≤ q_k still holds.
    block_max : ndarray of shape (K,) or None
        Only for ``"private_max"``.

    Returns
    -------
    Z : ndarray of shape (n, Σ_k (d_k + intercept))
    z_groups : list of K contiguous index arrays into Z
    """
    if method not in ROW_BOUNDS:
        raise ValueError(f"row_bound must be one of {ROW_BOUNDS}, got {method!r}")
    X = np.asarray(X, dtype=float) / check_positive(row_scale, "row_scale")
    q = np.asarray(importance, dtype=float)
    s = INTERCEPT_SHARE if intercept else 0.0
    feat_share = np.sqrt(1.0 - s * s)
    if method == "scale":
        X = clip_rows(X, 1.0)
    blocks, z_groups, start = [], [], 0
    for k, g in enumerate(groups):
        B = q[k] * feat_share
        Xk = X[:, g]
        if method == "clip":
            Zk = clip_rows(Xk, B)
        elif method == "scale":
            Zk = Xk * B
        elif method == "normalize":
            norms = np.sqrt(np.einsum("ij,ij->i", Xk, Xk))
            Zk = Xk * np.divide(B, norms, out=np.zeros_like(norms), where=norms > 0)[:, None]
        else:
            m = block_max[k]
            Zk = clip_rows(Xk * (B / m if m > 0 else 0.0), B)
        if intercept:
            Zk = np.hstack([Zk, np.full((Zk.shape[0], 1), q[k] * s)])
        blocks.append(Zk)
        z_groups.append(np.arange(start, start + Zk.shape[1]))
        start += Zk.shape[1]
    return np.hstack(blocks), z_groups


def bound_rows(X, method="clip", row_scale=1.0, row_max=None):
    """Rows of X brought under ‖x‖ ≤ 1 for PLR: :func:`bound_blocks` with one block, q = 1.

    ``method="private_max"`` divides by ``row_max``, by default the largest
    row norm of ``X`` itself — **not private** (kept for the ablation only).
    """
    X = np.asarray(X, dtype=float)
    if method == "private_max" and row_max is None:
        row_max = _block_norm_max(X / check_positive(row_scale, "row_scale"), [np.arange(X.shape[1])])[0]
    return bound_blocks(X, [np.arange(X.shape[1])], np.ones(1), method, row_scale, block_max=[row_max])[0]


LAM_BLOCKS = ("same", "importance")


def block_lambdas(lam, importance, rule="same"):
    """λ_k of the low-level blocks from ``lam`` and the rule.

    ``"same"``: λ_k = lam (or ``lam`` itself when it is given per block).
    ``"importance"``: λ_k = lam·(K q_k)². Block k's rows have norm ≤ q_k; on the
    rescaled rows x/q_k (norm ≤ 1) the same problem has regulariser λ_k/q_k², so
    this rule gives every block the *same* effective λ as a 1/K block — the
    scale-equivariant reading of PST Theorem 5, under which a block with larger
    q_k sees noise 2d_k/(ε' q_k) relative to its signal. With one λ for all
    blocks the opposite happens: the important block's margins get *more* noise
    (q_k‖b_k‖/(nλ)). For variant U (q_k = 1/K) both rules agree. Blocks with
    q_k = 0 keep ``lam`` (they carry no data).
    """
    q = np.asarray(importance, dtype=float)
    lam_arr = np.asarray(lam, dtype=float)
    if rule == "same":
        return lam
    if rule != "importance":
        raise ValueError(f"lam_blocks must be one of {LAM_BLOCKS}, got {rule!r}")
    if lam_arr.ndim != 0:
        raise ValueError("lam_blocks='importance' scales a scalar lam; got lam per block")
    K = q.size
    return np.where(q > 0, float(lam_arr) * (K * q) ** 2, float(lam_arr))


def meta_features(margins, kind="centred"):
    """High-level inputs from the K low-level margins x_(k)ᵀw_k, with ‖m‖ ≤ 1.

    ``"sigmoid"``: σ(z)/√K, the papers' σ(x_(k)ᵀw_k) scaled to the unit ball
    by 1/√K; every entry lies in (0, 1/√K), so the high level sees
    inputs centred near 1/(2√K) and has no intercept to absorb that offset.
    ``"centred"``: (2σ(z) − 1)/√K = tanh(z/2)/√K, the same information centred
    at 0 and using the whole unit ball.
    """
    margins = np.asarray(margins, dtype=float)
    K = margins.shape[1]
    if kind == "sigmoid":
        return expit(margins) / np.sqrt(K)
    if kind == "centred":
        return np.tanh(margins / 2.0) / np.sqrt(K)
    raise ValueError(f"meta_features must be one of {META_FEATURES}, got {kind!r}")


#: the label set of the inner models, which are fitted on y in {-1, +1}
SIGNED = np.array([-1.0, 1.0])


def _seed(rng):
    return int(rng.integers(0, 2**63 - 1))


class _StackingMixin(_BinaryLinearMixin):
    """Combiners, prediction and input checks shared by PST and PPTL-FS."""

    _min_samples = 4  # D_l and D_h need two samples each

    def _check_common_params(self):
        check_positive(self.lam_high if self.lam_high is not None else 1.0, "lam_high")
        if self.row_bound not in ROW_BOUNDS:
            raise ValueError(f"row_bound must be one of {ROW_BOUNDS}, got {self.row_bound!r}")
        if self.meta_features not in META_FEATURES:
            raise ValueError(f"meta_features must be one of {META_FEATURES}, got {self.meta_features!r}")
        self._check_combiner(self.combiner)
        if self.lam_blocks not in LAM_BLOCKS:
            raise ValueError(f"lam_blocks must be one of {LAM_BLOCKS}, got {self.lam_blocks!r}")
        if not 0.0 < self.low_fraction < 1.0:
            raise ValueError(f"low_fraction must be in (0, 1), got {self.low_fraction!r}")

    def _check_combiner(self, combiner):
        if combiner in COMBINERS:
            return combiner
        if isinstance(combiner, (int, np.integer)) and not isinstance(combiner, bool):
            K = len(getattr(self, "importance_", [])) or None
            if combiner < 0 or (K is not None and combiner >= K):
                raise ValueError(f"combiner index must be in [0, K), got {combiner}")
            return int(combiner)
        raise ValueError(f"combiner must be one of {COMBINERS} or a low-level model index, got {combiner!r}")

    def _split(self, n, rng):
        # A random split by index only: it must not depend on the data (not even on y),
        # or the disjoint-parts argument of Proposition 3 / Theorem 4 fails.
        perm = rng.permutation(n)
        n_low = int(round(self.low_fraction * n))
        if n_low < 2 or n - n_low < 2:
            raise ValueError(f"low_fraction={self.low_fraction} leaves fewer than 2 samples in D_l or D_h (n = {n})")
        return np.sort(perm[:n_low]), np.sort(perm[n_low:])

    def _high_lam(self):
        if self.lam_high is not None:
            return self.lam_high
        lam = np.asarray(self.lam, dtype=float)
        if lam.ndim != 0:
            raise ValueError("lam is given per block, so lam_high must be given explicitly")
        return float(lam)

    def _fit_high(self, M, y_signed, epsilon, rng):
        self.high_level_ = PrivateLogisticRegression(
            epsilon=epsilon, lam=self._high_lam(), norm_bound=1.0, fit_intercept=self.high_intercept,
            tol=self.tol, max_iter=self.max_iter, random_state=_seed(rng), classes=SIGNED,
            diagnostics=self.diagnostics,
        ).fit(M, y_signed)

    def _blockwise_intercept(self):
        # PST-S's PLR appends its own constant feature; PLR-FS needs one per block.
        return self.low_intercept and getattr(self, "partition", "features") == "features"

    def _design(self, X):
        return bound_blocks(X, self.groups_, self.block_bounds_, self.row_bound, self.row_scale,
                            self._blockwise_intercept(), self.block_max_)[0]

    def _z_groups(self):
        sizes = [g.size + self._blockwise_intercept() for g in self.groups_]
        ends = np.cumsum(sizes)
        return [np.arange(e - s, e) for s, e in zip(sizes, ends)]

    def _note_non_private_scaling(self, part):
        if self.row_bound == "private_max":
            warnings.warn(
                "row_bound='private_max' divides by the largest norm in the private data: "
                "the fitted model is NOT differentially private (ledger total = inf)",
                UserWarning, stacklevel=3,
            )
            self.privacy_.add("row scaling by the private maximum norm", part, np.inf,
                              note="data-dependent scaling: outside the DP guarantee")

    def bounded_design(self, X):
        """X as the low level sees it: blocks laid out contiguously, block k under norm q_k.

        The fitted low-level models (``low_level_``) take this matrix as input; the
        privacy audit uses it to build neighbouring datasets at the bounds.
        """
        check_is_fitted(self)
        X = _validate_data(self, X, dtype=float, reset=False)
        return self._design(X)

    def high_level_inputs(self, X):
        """Meta-features of X (norm ≤ 1), the inputs of ``high_level_``."""
        return meta_features(self.decision_function_low(X), self.meta_features)

    def decision_function_low(self, X):
        """Margins of the K low-level models, shape (n_samples, K) (C-0 … C-K−1)."""
        check_is_fitted(self)
        X = _validate_data(self, X, dtype=float, reset=False)
        return self._low_margins(self._design(X))

    def decision_function(self, X, combiner=None):
        """Score of a combiner (default ``self.combiner``); larger means ``classes_[1]``.

        ``"stack"``: the high-level margin (C-hl); ``"vote"``: 2·(share of
        positive low-level votes) − 1 (C-mv); ``"weighted_vote"``: the same with
        weights q_k (C-wmv); an int k: the margin of low-level model k (C-k).
        """
        combiner = self._check_combiner(self.combiner if combiner is None else combiner)
        Z = self.decision_function_low(X)
        if isinstance(combiner, int):
            return Z[:, combiner]
        if combiner == "stack":
            return self.high_level_.decision_function(meta_features(Z, self.meta_features))
        weights = self.importance_ if combiner == "weighted_vote" else np.full(Z.shape[1], 1.0 / Z.shape[1])
        return (Z >= 0).astype(float) @ weights * 2.0 - 1.0

    def decision_functions(self, X):
        """All combiners at once: a dict ``{"C-0": …, "C-K-1": …, "C-mv", "C-wmv", "C-hl"}``."""
        Z = self.decision_function_low(X)
        K = Z.shape[1]
        out = {f"C-{k}": Z[:, k] for k in range(K)}
        votes = (Z >= 0).astype(float)
        out["C-mv"] = votes.mean(axis=1) * 2.0 - 1.0
        out["C-wmv"] = votes @ self.importance_ * 2.0 - 1.0
        out["C-hl"] = self.high_level_.decision_function(meta_features(Z, self.meta_features))
        return out

    def predict_proba(self, X, combiner=None):
        """(n, 2) probabilities: σ(margin) for stack / single models, vote shares for votes."""
        combiner = self._check_combiner(self.combiner if combiner is None else combiner)
        s = self.decision_function(X, combiner)
        p = (s + 1.0) / 2.0 if combiner in ("vote", "weighted_vote") else expit(s)
        return np.column_stack([1.0 - p, p])

    def predict(self, X, combiner=None):
        """Class labels; ties of a vote go to ``classes_[1]``."""
        margins = self.decision_function(X, combiner)  # checks fitted state before classes_ is read
        return self.classes_[(margins >= 0).astype(int)]


class PrivateStackingClassifier(_StackingMixin, BaseEstimator):
    """Privacy-preserving stacking: PST-S (``partition="samples"``) or PST-F (``"features"``).

    PST-F variants: **U** (default) random equal feature groups with q_k = 1/K;
    **W** (``feature_importance`` given) features sorted by importance, cut into
    K contiguous groups, q_k from PST eq. (6); or explicit ``groups`` /
    ``group_importance``. One fit gives every combiner of PST Fig. 4: the
    high-level PLR (C-hl), majority vote (C-mv), q-weighted vote (C-wmv) and
    each low-level model alone (C-0 … C-K−1); see :meth:`decision_functions`.

    **Privacy.** One sample, ε in total: the low level spends ε on D_l (PLR-FS
    over all blocks, or PLR on each disjoint S_k), the high level ε on the
    disjoint D_h (PST Proposition 3, Theorem 4). Holds when ``groups``,
    importances, ``lam``/``lam_high`` and ``row_scale`` are public, and
    ``row_bound != "private_max"``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Budget ε (``np.inf``: non-private).
    partition : {"features", "samples"}, default="features"
    n_groups : int, default=5
        K: feature groups (PST-F) or sample sets (PST-S); ignored when ``groups`` is given.
    feature_importance : array-like of shape (n_features,) or None
        Per-feature importance v_i (variant W); PST-F only.
    groups : sequence of K index arrays or None
        Explicit feature groups (PST-F only).
    group_importance : array-like of shape (K,) or None
        Explicit q_k (PST-F only), ≥ 0, summing to 1.
    combiner : {"stack", "vote", "weighted_vote"} or int, default="stack"
        Used by ``predict``/``decision_function``; the others stay available.
    lam : float or array-like of shape (K,), default=0.01
        λ_k of the low-level models.
    lam_blocks : {"same", "importance"}, default="same"
        How λ_k follows q_k in PST-F: see :func:`block_lambdas`.
    lam_high : float or None, default=None
        λ of the high-level PLR; ``None``: same as ``lam``.
    low_fraction : float, default=0.5
        |D_l| / |D| (the papers use 50/50).
    row_bound : {"clip", "scale", "normalize", "private_max"}, default="clip"
        How rows are brought under the norm bounds; see :func:`bound_blocks`.
        ``"private_max"`` is not private and says so in ``privacy_``.
    row_scale : float, default=1.0
        Public constant dividing X before ``row_bound``.
    meta_features : {"centred", "sigmoid"}, default="centred"
        See :func:`meta_features`.
    low_intercept : bool, default=False
        A constant feature in each low-level model (per block for PST-F).
    high_intercept : bool, default=True
        A constant feature in the high-level PLR.
    tol, max_iter
        Passed to the solvers.
    random_state : None, int or numpy.random.Generator
        Drives the D_l/D_h split, the U groups, the S_k split and all noise.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    groups_ : list of K index arrays
        Feature groups (one group of all features for PST-S).
    importance_ : ndarray of shape (K,)
        q_k (1/K for PST-S, used by C-wmv).
    block_bounds_ : ndarray
        Norm bound of each block of :meth:`bounded_design` (q_k; 1 for PST-S).
    low_index_, high_index_ : ndarray
        Rows of the training data in D_l and D_h.
    sample_parts_ : list of K ndarrays or None
        Rows of each S_k (PST-S).
    low_level_ : FeatureSplitLogisticRegression or list of K PrivateLogisticRegression
        The low-level models (inspect ``block_coefs_`` / ``coef_``).
    high_level_ : PrivateLogisticRegression
    block_max_ : ndarray or None
        Largest block norms (only with ``row_bound="private_max"``).
    privacy_ : PrivacyLedger
        ε per part: ``D_l`` (or ``D_l/S_k``) and ``D_h``.

    References
    ----------
    Q. Yao, X. Guo, J. Kwok, W. Tu, Y. Chen, W. Dai, Q. Yang. Privacy-preserving
    stacking with application to cross-organizational diabetes prediction.
    IJCAI 2019, Algorithms 2 and 3.

    Examples
    --------
    >>> import numpy as np
    >>> from dpstack import PrivateStackingClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 10)) / 3
    >>> y = (X[:, :3].sum(axis=1) > 0).astype(int)
    >>> clf = PrivateStackingClassifier(epsilon=1.0, n_groups=2, random_state=0).fit(X, y)
    >>> clf.decision_function_low(X).shape, clf.privacy_.total()
    ((600, 2), 1.0)
    """

    def __init__(self, epsilon=1.0, partition="features", n_groups=5, feature_importance=None, groups=None,
                 group_importance=None, combiner="stack", lam=0.01, lam_blocks="same", lam_high=None, low_fraction=0.5,
                 row_bound="clip", row_scale=1.0, meta_features="centred", low_intercept=False,
                 high_intercept=True, tol=1e-10, max_iter=100, random_state=None, classes=None,
                 diagnostics=False):
        self.epsilon = epsilon
        self.partition = partition
        self.n_groups = n_groups
        self.feature_importance = feature_importance
        self.groups = groups
        self.group_importance = group_importance
        self.combiner = combiner
        self.lam = lam
        self.lam_blocks = lam_blocks
        self.lam_high = lam_high
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

    def fit(self, X, y):
        """Fit the low level on D_l and the high level on D_h. Returns self."""
        epsilon = check_epsilon(self.epsilon)
        self._check_common_params()
        if self.partition not in ("features", "samples"):
            raise ValueError(f"partition must be 'features' or 'samples', got {self.partition!r}")
        X, y_signed, self.classes_, classes_from_data = self._validate_fit_inputs(X, y)
        n, p = X.shape
        rng = check_random_state(self.random_state)
        if self.partition == "features":
            self.groups_, self.importance_ = resolve_groups(
                p, self.n_groups, self.groups, self.feature_importance, self.group_importance, rng)
        else:
            if any(v is not None for v in (self.feature_importance, self.groups, self.group_importance)):
                raise ValueError("feature_importance, groups and group_importance apply to partition='features' only")
            K = self.n_groups
            if isinstance(K, bool) or int(K) != K or K < 1:
                raise ValueError(f"n_groups must be a positive integer, got {K!r}")
            self.groups_, self.importance_ = [np.arange(p)], np.full(int(K), 1.0 / int(K))
        # norm bounds of the design's blocks: q_k for PST-F, 1 for the rows of PST-S
        self.block_bounds_ = self.importance_ if self.partition == "features" else np.ones(1)
        self.block_max_ = _block_norm_max(X / self.row_scale, self.groups_) if self.row_bound == "private_max" else None
        self.low_index_, self.high_index_ = self._split(n, rng)
        Z = self._design(X)
        Zl, yl = Z[self.low_index_], y_signed[self.low_index_]
        self.privacy_ = PrivacyLedger()
        if self.partition == "features":
            self.sample_parts_ = None
            self.low_level_ = FeatureSplitLogisticRegression(
                epsilon=epsilon, groups=self._z_groups(), importance=self.importance_,
                lam=block_lambdas(self.lam, self.importance_, self.lam_blocks),
                tol=self.tol, max_iter=self.max_iter, random_state=_seed(rng), classes=SIGNED).fit(Zl, yl)
            self.privacy_.add(f"PLR-FS (low level, K={len(self.groups_)})", "D_l", epsilon)
        else:
            K = int(self.n_groups)
            if K > Zl.shape[0] // 2:
                raise ValueError(f"n_groups (K = {K}) leaves fewer than 2 samples per sample set S_k")
            positions = [np.sort(s) for s in np.array_split(rng.permutation(self.low_index_.size), K)]
            self.sample_parts_ = [self.low_index_[rows] for rows in positions]
            self.low_level_ = []
            for k, rows in enumerate(positions):
                plr = PrivateLogisticRegression(
                    epsilon=epsilon, lam=self.lam, norm_bound=1.0, fit_intercept=self.low_intercept,
                    tol=self.tol, max_iter=self.max_iter, random_state=_seed(rng), classes=SIGNED)
                try:
                    plr.fit(Zl[rows], yl[rows])
                except ValueError as err:
                    raise ValueError(f"sample set S_{k + 1} cannot be fitted: {err}") from err
                self.low_level_.append(plr)
                self.privacy_.add("PLR (low level)", f"D_l/S_{k + 1}", epsilon)
        Zh, yh = Z[self.high_index_], y_signed[self.high_index_]
        self._fit_high(meta_features(self._low_margins(Zh), self.meta_features), yh, epsilon, rng)
        self.privacy_.add("PLR (high level)", "D_h", epsilon)
        record_classes(self.privacy_, classes_from_data)
        record_diagnostics(self, self.privacy_, "D_h", high_level=getattr(self.high_level_, "diagnostics_", None))
        self._note_non_private_scaling("D")
        return self

    def _low_margins(self, Z):
        if isinstance(self.low_level_, list):
            return np.column_stack([m.decision_function(Z) for m in self.low_level_])
        return self.low_level_.decision_function_blocks(Z)

    @property
    def low_coefs_(self):
        """Weights of the K low-level models on their (bounded) inputs."""
        check_is_fitted(self)
        if isinstance(self.low_level_, list):
            return [m.w_ for m in self.low_level_]
        return list(self.low_level_.block_coefs_)
