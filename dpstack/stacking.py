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
  the largest norm in the training data and is **outside the guarantee** (it
  raises a :class:`~dpstack.base.PrivacyLeakWarning` and the ledger records it
  with ε = ∞).
* ``meta_features`` — ``"centred"`` (2σ − 1)/√K (default) or ``"sigmoid"`` σ/√K
  (the papers' σ(x_(k)ᵀw_k) scaled to the unit ball); both keep ‖m‖ ≤ 1, the bound the high-level PLR assumes.
* ``lam_high`` — λ of the high level, a parameter of its own: the two levels see
  inputs of different scale (the low level the rows, the high level K meta-features), so
  a careful user tunes λ and ``lam_high`` separately (the experiments choose them per
  level on validation data). ``None`` ties it to ``lam``.
* ``low_intercept`` / ``high_intercept`` — a regularised constant feature
  inside the norm bound (half of the bound, as in
  :class:`~dpstack.linear.PrivateLogisticRegression`); none by default.

A fitted model releases its low-level and high-level models, the groups, the
importances and the public label set (``_release_attributes``); which rows fell
in D_l, D_h and each S_k, and the noise of every level, are kept only with
``diagnostics=True`` (see :mod:`dpstack.base`). ``fit(X, y, low_level=...)``
fits the high level alone on a given low-level release: the composition hook
that shows the high level is post-processing of that release and D_h.

Helpers shared with :mod:`dpstack.transfer`: :func:`resolve_groups`,
:func:`bound_blocks`, :func:`meta_features`.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator
from sklearn.utils import Bunch
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
    Number,
    StrOptions,
    check_epsilon,
    check_feature_groups,
    check_positive,
    check_random_state,
    spawn_streams,
    validate_function_params,
    validate_params,
)
from .accounting import PrivacyLedger
from .base import (
    BinaryClassifierMixin,
    PrivacyLeakWarning,
    ReleaseFormatError,
    atomic_fit,
    check_diagnostics,
    check_released_block_max,
    record_classes,
    record_diagnostics,
    release_only,
    released_labels,
    require_released,
    validate_data,
)
from .linear import FeatureSplitLogisticRegression, PrivateLogisticRegression
from .mechanisms import check_importance, clip_rows

__all__ = [
    "PrivateStackingClassifier",
    "resolve_groups",
    "bound_blocks",
    "bound_rows",
    "block_lambdas",
    "meta_features",
    "check_block_lam",
    "ROW_BOUNDS",
    "COMBINERS",
]

ROW_BOUNDS = ("clip", "scale", "normalize", "private_max")
META_FEATURES = ("centred", "sigmoid")
COMBINERS = ("stack", "vote", "weighted_vote")
#: share of a block's bound given to its constant feature (PLR's default s = B/2)
INTERCEPT_SHARE = 0.5


def resolve_groups(
    n_features, n_groups=5, groups=None, feature_importance=None, group_importance=None, random_state=None
):
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
        order = (
            np.argsort(-v, kind="stable") if v is not None else check_random_state(random_state).permutation(n_features)
        )
        groups = [np.sort(g) if v is None else g for g in np.array_split(order, int(n_groups))]
    else:
        groups = check_feature_groups(groups, n_features)
    K = len(groups)
    if group_importance is not None:
        q = check_importance(group_importance, name="group_importance")
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


def block_norm_max(X, groups):
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
    row_scale = check_positive(row_scale, "row_scale")
    if method == "private_max":
        m = None if block_max is None else np.asarray(block_max, dtype=float)
        if m is None or m.shape != (len(groups),) or not np.all(np.isfinite(m) & (m >= 0)):
            raise ValueError(
                f"row_bound='private_max' needs block_max: one finite norm >= 0 per block ({len(groups)}), "
                f"got {block_max!r}"
            )
    X = np.asarray(X, dtype=float)
    if row_scale != 1.0:  # (X / 1 is X: skip the pass)
        X = X / row_scale
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


_BOUND_ROWS_CONSTRAINTS = {
    "method": [StrOptions(set(ROW_BOUNDS))],
    "row_scale": POSITIVE,
    "row_max": [None, *POSITIVE],
}


def bound_rows(X, method="clip", row_scale=1.0, row_max=None):
    """Rows of X brought under ‖x‖ ≤ 1 for PLR: :func:`bound_blocks` with one block, q = 1.

    ``method="private_max"`` divides by ``row_max``, by default the largest
    row norm of ``X`` itself — **not private** (kept for the ablation only). A given
    ``row_max`` must be a finite number > 0 (``None`` is the only way to ask for the data's
    own maximum, which is 0 only when every row is 0).
    """
    validate_function_params(_BOUND_ROWS_CONSTRAINTS, "bound_rows", method=method, row_scale=row_scale, row_max=row_max)
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bound_rows: X must be a 2-D array of numbers (n_samples, n_features): {exc}") from None
    if X.ndim != 2:
        raise ValueError(
            f"bound_rows: X must be a 2-D array (n_samples, n_features), got {X.ndim} dimension(s) "
            f"of shape {X.shape} (reshape a single row with X.reshape(1, -1))"
        )
    if method == "private_max" and row_max is None:
        row_max = block_norm_max(X / check_positive(row_scale, "row_scale"), [np.arange(X.shape[1])])[0]
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


def check_block_lam(lam, n_blocks, name="lam", per_block=True):
    """λ of the low-level models: one number > 0, or (``per_block``) one per block.

    Returns the float or the array of ``n_blocks`` values; every error names ``name``.
    """
    if np.ndim(lam) == 0:
        return check_positive(lam, name)
    if not per_block:
        raise ValueError(f"{name} must be one number > 0 here (the same λ for every model), got {lam!r}")
    try:
        arr = np.asarray(lam, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number > 0 or {n_blocks} numbers > 0 (one per block), got {lam!r}") from None
    if arr.shape != (n_blocks,):
        raise ValueError(f"{name} has {arr.size} entries but there are K = {n_blocks} blocks: give one λ or {n_blocks}")
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise ValueError(f"{name} must be finite and > 0 for every block, got {lam!r}")
    return arr


#: the label set of the inner models, which are fitted on y in {-1, +1}
SIGNED = np.array([-1.0, 1.0])

#: what the warning and the ledger say about ``row_bound="private_max"``
PRIVATE_MAX_STEP = "row scaling by the private maximum norm (row_bound='private_max')"


def note_private_max(ledger, part, stacklevel=3):
    """Warn (:class:`~dpstack.base.PrivacyLeakWarning`) and record the data-dependent scaling."""
    warnings.warn(
        "row_bound='private_max' divides by the largest norm in the private data: the scale is a "
        "function of one record, so the fitted model is NOT differentially private (ledger total = inf). "
        "Use a public row_scale with row_bound='clip', 'scale' or 'normalize' instead.",
        PrivacyLeakWarning,
        stacklevel=stacklevel,
    )
    record_private_max(ledger, part)


def record_private_max(ledger, part):
    """Record the data-dependent scaling of ``row_bound='private_max'`` on ``part`` (outside the guarantee)."""
    ledger.add_outside(
        PRIVATE_MAX_STEP, part, "the largest norm in the private data scales every row: outside the DP guarantee"
    )


#: positions of a composed fit's streams (:func:`~dpstack._validation.spawn_streams`): the
#: estimator's own draws (groups, splits), the high level, the low level. Fixed positions, so
#: the composition hook ``fit(low_level=...)`` draws the high level's noise of a normal fit.
OWN, HIGH, LOW = 0, 1, 2


def _check_fraction(value, name="low_fraction"):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)


#: the constraints PST-S/PST-F and PPTL-FS share (each class's ``_parameter_constraints`` adds its own)
STACKING_CONSTRAINTS = {
    "n_groups": [Number(numbers.Integral, 1, None, closed="left", desc="an int >= 1")],
    "feature_importance": ARRAY_OR_NONE,
    "groups": [None, NonEmpty("a non-empty list of arrays of feature indices")],
    "group_importance": ARRAY_OR_NONE,
    "combiner": [StrOptions(set(COMBINERS)), Number(numbers.Integral, 0, None, closed="left", desc="an int >= 0")],
    "lam": [*POSITIVE, ARRAY],
    "lam_blocks": [StrOptions(set(LAM_BLOCKS))],
    "lam_high": [None, *POSITIVE],
    "low_fraction": [Number(numbers.Real, 0, 1, closed="neither", desc="a float in (0, 1)")],
    "row_bound": [StrOptions(set(ROW_BOUNDS))],
    "row_scale": POSITIVE,
    "meta_features": [StrOptions(set(META_FEATURES))],
    "low_intercept": BOOLEAN,
    "high_intercept": BOOLEAN,
    "tol": TOL,
    "max_iter": MAX_ITER,
    "random_state": RANDOM_STATE,
    "classes": CLASSES,
    "diagnostics": BOOLEAN,
}


class StackingMixin(BinaryClassifierMixin):
    """Combiners, prediction, input checks and the high level shared by PST and PPTL-FS.

    Subclasses fit in two phases: every parameter and input is checked and every random
    draw is made first (nothing is stored), then the levels are fitted and the fitted
    attributes are set together. ``fit`` is also wrapped in
    :func:`~dpstack.base.atomic_fit`, so a call that raises leaves an earlier fit intact.
    """

    _min_samples = 4  # D_l and D_h need two samples each

    def _check_common_params(self):
        check_diagnostics(self.diagnostics)
        if self.lam_high is not None:
            check_positive(self.lam_high, "lam_high")
        if self.row_bound not in ROW_BOUNDS:
            raise ValueError(f"row_bound must be one of {ROW_BOUNDS}, got {self.row_bound!r}")
        check_positive(self.row_scale, "row_scale")
        if self.meta_features not in META_FEATURES:
            raise ValueError(f"meta_features must be one of {META_FEATURES}, got {self.meta_features!r}")
        self._check_combiner(self.combiner)
        if self.lam_blocks not in LAM_BLOCKS:
            raise ValueError(f"lam_blocks must be one of {LAM_BLOCKS}, got {self.lam_blocks!r}")
        _check_fraction(self.low_fraction)

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
            raise ValueError(
                f"low_fraction={self.low_fraction} leaves too few samples: the split needs at least "
                f"2 in D_l and 2 in D_h, got {n_low} and {n - n_low} (n = {n})"
            )
        return np.sort(perm[:n_low]), np.sort(perm[n_low:])

    def _high_lam(self):
        if self.lam_high is not None:
            return check_positive(self.lam_high, "lam_high")
        if np.ndim(self.lam) != 0:
            raise ValueError("lam is given per block, so lam_high must be given explicitly")
        return check_positive(self.lam, "lam")

    def _high_level_rows(self, parts):
        """Rows of the training data the high level is fitted on: D_h, and nothing else.

        The high level may read the low level only through its release; fitting it on any
        row of D_l would use those records twice (the composition would cost 2ε).
        """
        return parts.high

    def _fit_high_level(self, X, y_signed, parts, low_level, epsilon, seed, **design):
        """PLR(ε) on the meta-features of D_h, computed with the fitted low level (post-processing).

        ``design`` holds the keyword arguments of :meth:`_design` (block_max, groups, bounds).
        """
        rows = self._high_level_rows(parts)
        Zh = self._design(X[rows], **design)
        M = meta_features(self._low_margins(Zh, low_level), self.meta_features)
        high = PrivateLogisticRegression(
            epsilon=epsilon,
            lam=self._high_lam(),
            norm_bound=1.0,
            fit_intercept=self.high_intercept,
            tol=self.tol,
            max_iter=self.max_iter,
            random_state=seed,
            classes=SIGNED,
            diagnostics=self.diagnostics,
        )
        return release_only(high._fit_unchecked(M, y_signed[rows]))

    def _blockwise_intercept(self):
        # PST-S's PLR appends its own constant feature; PLR-FS needs one per block.
        return self.low_intercept and getattr(self, "partition", "features") == "features"

    def _design(self, X, block_max=None, groups=None, bounds=None):
        """X laid out in blocks under their bounds (the fitted groups and bounds by default)."""
        groups = self.groups_ if groups is None else groups
        bounds = self.block_bounds_ if bounds is None else bounds
        if block_max is None and self.row_bound == "private_max":
            block_max = self.block_max_
        return bound_blocks(X, groups, bounds, self.row_bound, self.row_scale, self._blockwise_intercept(), block_max)[
            0
        ]

    def _z_groups(self, groups=None):
        groups = self.groups_ if groups is None else groups
        sizes = [g.size + self._blockwise_intercept() for g in groups]
        ends = np.cumsum(sizes)
        return [np.arange(e - s, e) for s, e in zip(sizes, ends)]

    def _low_margins(self, Z, low_level=None):
        """Margins of the fitted low level on a design Z the caller has validated, shape (n, K)."""
        low_level = self.low_level_ if low_level is None else low_level
        if isinstance(low_level, list):
            return np.column_stack([m._decision_function_unchecked(Z) for m in low_level])
        return low_level._decision_function_blocks_unchecked(Z, bounded=True)

    def _checked_input(self, X):
        check_is_fitted(self, "high_level_")
        return validate_data(self, X, reset=False)

    def bounded_design(self, X):
        """X as the low level sees it: blocks laid out contiguously, block k under norm q_k.

        The fitted low-level models (``low_level_``) take this matrix as input; the
        privacy audit uses it to build neighbouring datasets at the bounds.
        """
        check_is_fitted(self, "groups_")
        X = validate_data(self, X, reset=False)
        return self._design(X)

    def high_level_inputs(self, X):
        """Meta-features of X (norm ≤ 1), the inputs of ``high_level_``."""
        return meta_features(self.decision_function_low(X), self.meta_features)

    def decision_function_low(self, X):
        """Margins of the K low-level models, shape (n_samples, K) (C-0 … C-K−1)."""
        return self._low_margins(self._design(self._checked_input(X)))

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
            return self.high_level_._decision_function_unchecked(meta_features(Z, self.meta_features))
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
        out["C-hl"] = self.high_level_._decision_function_unchecked(meta_features(Z, self.meta_features))
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

    def _check_low_level_release(self, low_level, kind, n_design, z_groups=None, importance=None, n_models=None):
        """A low-level release handed in to ``fit(low_level=...)`` must fit the design it will read."""
        what = (
            "a fitted FeatureSplitLogisticRegression"
            if kind == "features"
            else f"a list of {n_models} fitted PrivateLogisticRegression"
        )
        models = low_level if kind == "samples" else [low_level]
        ok = (
            kind == "samples"
            and isinstance(low_level, (list, tuple))
            and len(low_level) == n_models
            and all(isinstance(m, PrivateLogisticRegression) for m in low_level)
        ) or (kind == "features" and isinstance(low_level, FeatureSplitLogisticRegression))
        if not ok:
            raise TypeError(f"low_level must be {what} (a low_level_ of the same kind), got {type(low_level).__name__}")
        for m in models:
            check_is_fitted(m)
            if not np.array_equal(m.classes_, SIGNED):
                raise ValueError("low_level must have been fitted on the signed labels (classes_ = [-1, 1])")
            if m.n_features_in_ != n_design:
                raise ValueError(
                    f"low_level reads {m.n_features_in_} design columns, this model's design has {n_design}"
                )
            if kind == "samples" and bool(m.fit_intercept) != bool(self.low_intercept):
                raise ValueError("low_level's fit_intercept differs from low_intercept")
        if kind == "features" and (
            len(low_level.groups_) != len(z_groups)
            or any(not np.array_equal(a, b) for a, b in zip(low_level.groups_, z_groups))
            or not np.allclose(low_level.importance_, importance)
        ):
            raise ValueError("low_level's blocks (groups_, importance_) differ from this model's")
        return list(low_level) if kind == "samples" else low_level

    def _check_released_structure(self, groups, importance):
        """The feature groups and importances of a loaded release, checked against each other."""
        groups = check_feature_groups(groups, int(self.n_features_in_))
        importance = check_importance(importance)
        if importance.size != len(groups):
            raise ReleaseFormatError(
                f"{type(self).__name__}: importance_ has {importance.size} entries, groups_ {len(groups)}"
            )
        return groups, importance

    def _check_released_high_level(self, K):
        """The released high level is a PLR on the K meta-features, fitted on the signed labels."""
        high = self.high_level_
        if not isinstance(high, PrivateLogisticRegression) or high.n_features_in_ != K:
            raise ReleaseFormatError(f"{type(self).__name__}: high_level_ must be a PLR on the K = {K} meta-features")
        if not np.array_equal(high.classes_, [-1, 1]):
            raise ReleaseFormatError(f"{type(self).__name__}: high_level_ must have been fitted on the signed labels")


class PrivateStackingClassifier(StackingMixin, BaseEstimator):
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
        λ of the high-level PLR; ``None``: same as ``lam``. Tune it apart from ``lam``: the high
        level is a K-feature problem on meta-features, not the low level's problem, and on MNIST
        0 vs 8 choosing λ per level on validation data (λ_l, then λ_h with the low level fixed)
        beats one tied λ (the book's ablation page; :func:`dpstack.companion.papers.pst.grids.stacking_cell`
        does it).
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
    high_intercept : bool, default=False
        A constant feature in the high-level PLR. Off by default: the centred meta-features
        need no offset, and the AUC of C-hl ignores one, while the constant takes half of the
        norm bound and one more noise coordinate — on MNIST 0 vs 8 at small ε it makes the
        high level collapse in some repeats (the book's ablation page measures it).
    tol, max_iter
        Passed to the solvers.
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Drives the D_l/D_h split, the U groups, the S_k split and all noise, through
        independent streams (``SeedSequence.spawn``): one for the splits and groups, one for
        the high level, one per low-level model; ``None`` draws fresh OS entropy for each.
        The fitted levels keep no seed (their ``random_state`` is ``None``).
    classes : array-like of shape (2,) or None, default=None
        The public label set; ``classes[1]`` is the positive class. Resolved once, here:
        the inner models are fitted on y in {-1, +1}, so a sample set S_k (or D_h) holding a
        single class changes neither the shapes nor the calibration. ``None`` reads the
        label set from ``y``, outside the guarantee (a
        :class:`~dpstack.base.PrivacyLeakWarning`, and a ledger entry with ε = ∞).
    diagnostics : bool, default=False
        Keep, in ``diagnostics_``, what a fit computes from the private data or the noise
        beyond the release: the rows of D_l, D_h and each S_k and the inner models'
        diagnostics (noise, iteration counts). Such an object is not private (ledger
        total = ∞); publish its release with :func:`dpstack.release.save_release`.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    groups_ : list of K index arrays
        Feature groups (one group of all features for PST-S).
    importance_ : ndarray of shape (K,)
        q_k (1/K for PST-S, used by C-wmv).
    block_bounds_ : ndarray
        Norm bound of each block of :meth:`bounded_design` (q_k; 1 for PST-S).
    low_level_ : FeatureSplitLogisticRegression or list of K PrivateLogisticRegression
        The low-level models (inspect ``block_coefs_`` / ``coef_``), themselves default
        (diagnostics-free) objects unless ``diagnostics=True``.
    high_level_ : PrivateLogisticRegression
    block_max_ : ndarray or None
        Largest block norms, only with ``row_bound="private_max"`` (a step outside the
        guarantee, recorded as such in ``privacy_``); None otherwise.
    privacy_ : PrivacyLedger
        ε per part: ``D_l`` (or ``D_l/S_k``) and ``D_h``.
    diagnostics_ : sklearn.utils.Bunch
        Only with ``diagnostics=True``: ``low_index``, ``high_index`` (rows of D_l and D_h),
        ``sample_parts`` (rows of each S_k, PST-S; None for PST-F), ``low_level`` (the
        low-level model's ``diagnostics_``, a list for PST-S) and ``high_level``.

    The fitted object holds nothing else derived from the data or the noise: what it
    releases is listed in ``_release_attributes``. The split of the data into D_l, D_h
    and the S_k is random and depends on nothing but ``random_state``; which rows fell
    where is not released.

    **Composition hook.** ``fit(X, y, low_level=release)`` fits the high level only: the
    low level is the given release (a ``low_level_`` of the same kind), D_l is not read,
    and the high level is fitted on D_h with the seeds of a normal fit. It shows that the
    high level is post-processing of the low-level release and D_h — the property the
    parallel composition of Proposition 3 needs — and lets an audit check it: change a
    record of D_l, hand in the same release, and the high level must not change.

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
    >>> clf = PrivateStackingClassifier(epsilon=1.0, n_groups=2, random_state=0, classes=[0, 1]).fit(X, y)
    >>> clf.decision_function_low(X).shape, clf.privacy_.total()
    ((600, 2), 1.0)
    """

    _release_attributes = (
        "classes_",
        "n_features_in_",
        "groups_",
        "importance_",
        "block_bounds_",
        "block_max_",
        "low_level_",
        "high_level_",
        "privacy_",
    )
    #: what a release file holds (the rest of ``_release_attributes`` is recomputed on load)
    _release_source = (
        "classes_",
        "n_features_in_",
        "groups_",
        "importance_",
        "block_max_",
        "low_level_",
        "high_level_",
    )

    _parameter_constraints = {
        **STACKING_CONSTRAINTS,
        "epsilon": EPSILON,
        "partition": [StrOptions({"features", "samples"})],
    }

    def __init__(
        self,
        epsilon=1.0,
        partition="features",
        n_groups=5,
        feature_importance=None,
        groups=None,
        group_importance=None,
        combiner="stack",
        lam=0.01,
        lam_blocks="same",
        lam_high=None,
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

    @atomic_fit
    def fit(self, X, y, low_level=None):
        """Fit the low level on D_l and the high level on D_h. Returns self.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        low_level : FeatureSplitLogisticRegression, list of PrivateLogisticRegression or None
            A fitted low-level release (the ``low_level_`` of an earlier fit with the same
            parameters, or its export). When given, the low level is not fitted and D_l is
            not read: only the high level is fitted, on D_h, with the seeds of a normal fit
            (the composition hook, see the class docstring). The ledger records the given
            release's ε on D_l.
        """
        validate_params(self)
        epsilon = check_epsilon(self.epsilon)
        self._check_common_params()
        if self.partition not in ("features", "samples"):
            raise ValueError(f"partition must be 'features' or 'samples', got {self.partition!r}")
        X, y_signed, classes, classes_from_data = self._validate_fit_inputs(X, y)
        n, p = X.shape
        streams = spawn_streams(self.random_state, 3)
        rng = check_random_state(streams[OWN])
        # --- phase 1: check everything and make every random draw (nothing is stored yet)
        if self.partition == "features":
            groups, importance = resolve_groups(
                p, self.n_groups, self.groups, self.feature_importance, self.group_importance, rng
            )
            block_bounds = importance  # the design's blocks have norm bounds q_k
            low_lam = check_block_lam(self.lam, len(groups))
            low_lam = block_lambdas(low_lam, importance, self.lam_blocks)
        else:
            if any(v is not None for v in (self.feature_importance, self.groups, self.group_importance)):
                raise ValueError("feature_importance, groups and group_importance apply to partition='features' only")
            K = self.n_groups
            if isinstance(K, bool) or not isinstance(K, numbers.Integral) or K < 1:
                raise ValueError(f"n_groups must be a positive integer, got {K!r}")
            groups, importance, block_bounds = [np.arange(p)], np.full(int(K), 1.0 / int(K)), np.ones(1)
            low_lam = check_block_lam(self.lam, int(K), per_block=False)
        self._high_lam()
        low, high = self._split(n, rng)
        parts = Bunch(low=low, high=high, samples=None)
        if self.partition == "features":
            low_seeds = [streams[LOW]]
        else:
            K = int(self.n_groups)
            if K > low.size // 2:
                raise ValueError(
                    f"n_groups (K = {K}) leaves fewer than 2 samples per sample set S_k (D_l has {low.size} samples)"
                )
            positions = [np.sort(s) for s in np.array_split(rng.permutation(low.size), K)]
            parts.samples = [low[rows] for rows in positions]
            low_seeds = spawn_streams(streams[LOW], K)
        high_seed = streams[HIGH]
        z_groups = self._z_groups(groups)
        n_design = int(sum(g.size for g in z_groups))
        if low_level is not None:
            low_level = self._check_low_level_release(
                low_level, self.partition, n_design, z_groups, importance, len(importance)
            )
        block_max = block_norm_max(X / self.row_scale, groups) if self.row_bound == "private_max" else None
        # --- phase 2: fit the levels
        ledger = PrivacyLedger()
        handed_in = "release handed in to fit(low_level=...), D_l not read"
        if self.partition == "features":
            if low_level is None:
                Zl = self._design(X[low], block_max, groups, block_bounds)
                low_level = FeatureSplitLogisticRegression(
                    epsilon=epsilon,
                    groups=z_groups,
                    importance=importance,
                    lam=low_lam,
                    tol=self.tol,
                    max_iter=self.max_iter,
                    random_state=low_seeds[0],
                    classes=SIGNED,
                    diagnostics=self.diagnostics,
                )._fit_unchecked(Zl, y_signed[low])
                release_only(low_level)
                ledger.add(f"PLR-FS (low level, K={len(groups)})", "D_l", epsilon)
            else:
                ledger.add(f"PLR-FS (low level, K={len(groups)})", "D_l", low_level.privacy_.total(), note=handed_in)
        elif low_level is None:
            low_level = []
            for k, rows in enumerate(parts.samples):
                plr = PrivateLogisticRegression(
                    epsilon=epsilon,
                    lam=low_lam,
                    norm_bound=1.0,
                    fit_intercept=self.low_intercept,
                    tol=self.tol,
                    max_iter=self.max_iter,
                    random_state=low_seeds[k],
                    classes=SIGNED,
                    diagnostics=self.diagnostics,
                )
                low_level.append(
                    release_only(
                        plr._fit_unchecked(self._design(X[rows], block_max, groups, block_bounds), y_signed[rows])
                    )
                )
                ledger.add("PLR (low level)", f"D_l/S_{k + 1}", epsilon)
        else:
            for k, plr in enumerate(low_level):
                ledger.add("PLR (low level)", f"D_l/S_{k + 1}", plr.privacy_.total(), note=handed_in)
        high_level = self._fit_high_level(
            X, y_signed, parts, low_level, epsilon, high_seed, block_max=block_max, groups=groups, bounds=block_bounds
        )
        ledger.add("PLR (high level)", "D_h", epsilon)
        record_classes(ledger, classes_from_data)
        if self.row_bound == "private_max":
            note_private_max(ledger, "D", stacklevel=4)
        self.classes_, self.groups_, self.importance_ = classes, groups, importance
        self.block_bounds_, self.block_max_ = block_bounds, block_max
        self.low_level_, self.high_level_, self.privacy_ = low_level, high_level, ledger
        low_diag = (
            [getattr(m, "diagnostics_", None) for m in low_level]
            if isinstance(low_level, list)
            else getattr(low_level, "diagnostics_", None)
        )
        record_diagnostics(
            self,
            ledger,
            "D",
            low_index=parts.low,
            high_index=parts.high,
            sample_parts=parts.samples,
            low_level=low_diag,
            high_level=getattr(high_level, "diagnostics_", None),
        )
        return self

    def _release_ledger(self):
        """The ledger a release's parameters give: ε on D_l (per sample set for PST-S), ε on D_h."""
        eps = float(self.epsilon)
        ledger = PrivacyLedger()
        if self.partition == "features":
            ledger.add(f"PLR-FS (low level, K={len(self.groups_)})", "D_l", eps)
        else:
            for k in range(len(self.importance_)):
                ledger.add("PLR (low level)", f"D_l/S_{k + 1}", eps)
        ledger.add("PLR (high level)", "D_h", eps)
        record_classes(ledger, self.classes is None)
        if self.row_bound == "private_max":
            record_private_max(ledger, "D")
        return ledger

    def _from_release(self):
        """Check a loaded release's levels against its structure and recompute the ledger (see :mod:`dpstack.release`)."""
        require_released(self, "classes_", "n_features_in_", "groups_", "importance_", "low_level_", "high_level_")
        released_labels(self)
        if self.partition == "features":
            self.groups_, self.importance_ = self._check_released_structure(self.groups_, self.importance_)
        else:  # PST-S: one group of all features, K sample sets of weight 1/K
            K = np.asarray(self.importance_).size
            if len(self.groups_) != 1 or not np.array_equal(self.groups_[0], np.arange(int(self.n_features_in_))):
                raise ReleaseFormatError("PrivateStackingClassifier: PST-S has one group of all features")
            if K < 1 or not np.array_equal(self.importance_, np.full(K, 1.0 / K)):
                raise ReleaseFormatError("PrivateStackingClassifier: PST-S has importance_ 1/K for each of K sets")
            self.groups_ = [np.asarray(self.groups_[0], dtype=int)]
        check_released_block_max(self, "block_max_")
        K = len(self.importance_)
        if self.partition == "features":
            self.block_bounds_ = self.importance_
            n_design = int(sum(g.size for g in self._z_groups()))
            self._check_low_level_release(self.low_level_, "features", n_design, self._z_groups(), self.importance_)
        else:
            self.block_bounds_ = np.ones(1)
            n_design = int(self.n_features_in_) + bool(self._blockwise_intercept())
            self.low_level_ = self._check_low_level_release(self.low_level_, "samples", n_design, n_models=K)
        self._check_released_high_level(K)
        self.privacy_ = self._release_ledger()

    @property
    def low_coefs_(self):
        """Weights of the K low-level models on their (bounded) inputs."""
        check_is_fitted(self, "low_level_")
        if isinstance(self.low_level_, list):
            return [m.w_ for m in self.low_level_]
        return list(self.low_level_.block_coefs_)
