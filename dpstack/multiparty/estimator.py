"""The multiparty private classifier of Hamm, Cao & Belkin (2016) and its baselines.

Privacy unit: **one whole party**. Two datasets are neighbours when the
complete private data of one party (all its samples) is replaced; the other
parties and the auxiliary data are the same. With ``protect_aux=True`` (the
extension of Section 4.5) the feature vector of one auxiliary sample may
change as well, and the noise grows accordingly.
"""
from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.validation import check_is_fitted

from .._validation import check_epsilon, check_positive, check_random_state, check_X
from ..accounting import PrivacyLedger
from ..mechanisms import clip_rows, isotropic_noise, output_perturbation_scale
from .logistic import fit_local_logistic, fit_soft_target_logistic

__all__ = ["MultipartyPrivateClassifier", "fit_methods", "mpl_sensitivity", "split_auxiliary_and_parties", "METHODS"]

#: The five methods of the paper's experiments; the first three are private.
METHODS = ("soft", "vote", "avg", "batch", "indiv")


def mpl_sensitivity(method, n_parties, n_classes, lam, protect_aux=False, n_aux=None):
    """L2 sensitivity of the released parameters when one party's data changes.

    ================  =============  =====================
    method            two classes    K ≥ 3 classes (App. B)
    ================  =============  =====================
    vote (Thm 1)      2/λ            √2/λ
    soft (Thm 3)      2/(Mλ)         √2/(Mλ)
    avg (Pathak)      2/(Mλ)         2√2/(Mλ)
    ================  =============  =====================

    With ``protect_aux=True`` one auxiliary feature vector may also change.
    The gradient difference of the risk is then ``[(N−1)·s_label + s_feature]/N``
    with s_label the per-sample bound above (times λ) and s_feature the bound
    for a sample whose features change: 2 for two classes, 2√2 for softmax
    (‖(p − α) ⊗ x‖ ≤ √2 for each of x and x'). For binary soft this is the
    paper's factor (N + M − 1)/N (Section 4.5); binary vote is unchanged. The
    multiclass forms are our derivation (the paper gives none); avg does not
    use the auxiliary data.

    Parameters
    ----------
    method : {"vote", "soft", "avg"}
    n_parties : int
        M.
    n_classes : int
        K ≥ 2.
    lam : float
        λ of the global (vote, soft) or local (avg) logistic regression.
    protect_aux : bool, default=False
    n_aux : int or None
        N, needed when ``protect_aux``.

    Returns
    -------
    float
    """
    lam = check_positive(lam, "lam")
    M = int(n_parties)
    binary = n_classes == 2
    per_label = {"vote": 2.0 if binary else math.sqrt(2.0),
                 "soft": (2.0 if binary else math.sqrt(2.0)) / M,
                 "avg": (2.0 if binary else 2.0 * math.sqrt(2.0)) / M}
    if method not in per_label:
        raise ValueError(f"method must be one of 'vote', 'soft', 'avg' for a sensitivity, got {method!r}")
    s = per_label[method]
    if protect_aux and method != "avg":
        N = int(n_aux)
        s_feature = 2.0 if binary else 2.0 * math.sqrt(2.0)
        s = ((N - 1) * s + s_feature) / N
    return s / lam


def split_auxiliary_and_parties(n_samples, n_parties, party_size, n_aux, random_state=None):
    """Draw the auxiliary rows and M disjoint parties of ``party_size`` rows each.

    Sampling is without replacement (the paper's "Subagging"-like split); the
    rows left over are unused.

    Returns
    -------
    aux_idx : ndarray of shape (n_aux,)
    private_idx : ndarray of shape (n_parties · party_size,)
    parties : ndarray of shape (n_parties · party_size,)
        Party id of each private row.
    """
    n_samples, n_parties, party_size = int(n_samples), int(n_parties), int(party_size)
    n_aux = int(n_aux)
    if n_parties < 1 or party_size < 1:
        raise ValueError(f"n_parties and party_size must be >= 1, got {n_parties} and {party_size}")
    if n_parties > n_samples:
        raise ValueError(f"n_parties (M = {n_parties}) is larger than the number of samples ({n_samples})")
    if n_aux < 0 or n_aux + n_parties * party_size > n_samples:
        raise ValueError(
            f"{n_parties} parties × {party_size} samples + {n_aux} auxiliary samples = "
            f"{n_parties * party_size + n_aux} exceeds the {n_samples} samples available"
        )
    rng = check_random_state(random_state)
    perm = rng.permutation(n_samples)
    aux_idx = perm[:n_aux]
    private_idx = perm[n_aux:n_aux + n_parties * party_size]
    parties = np.repeat(np.arange(n_parties), party_size)
    return aux_idx, private_idx, parties


class MultipartyPrivateClassifier(ClassifierMixin, BaseEstimator):
    """ε-DP global classifier from M parties' local models (Hamm, Cao & Belkin 2016).

    Each party trains a local classifier on its own rows (default: logistic
    regression with λ = ``local_lam``, fitted for all parties at once by
    :func:`~dpstack.multiparty.logistic.fit_local_logistic`). Then:

    * ``"vote"`` (Algorithm 1): the ensemble's majority vote labels the
      auxiliary data (ties → ``classes_[1]``, eq. 6; multiclass ties → lowest
      class index); a λ-regularised logistic regression is fitted and
      released with output perturbation, sensitivity 2/λ (√2/λ multiclass).
    * ``"soft"`` (Algorithm 2): the fraction of votes α(x) per class is used as
      soft target of the weighted loss (eq. 14; softmax eq. 55); sensitivity
      2/(Mλ) (√2/(Mλ)).
    * ``"avg"`` (Pathak et al. 2010): the average of the M local parameter
      vectors plus output noise, sensitivity 2/(Mλ) (2√2/(Mλ), App. B.4).
    * ``"batch"``: one non-private model on all private rows (reference).
    * ``"indiv"``: the M local models themselves; :meth:`score` is their mean
      accuracy (reference; there is no single model to predict with).

    **Privacy.** Protects **one party** (all of its samples) with ε-DP for
    vote, soft and avg. Rows are clipped to ‖x‖ ≤ 1 inside ``fit`` (a public
    bound; scale features by a public or auxiliary-data constant before).
    The auxiliary data are treated as public unless ``protect_aux=True``
    (Section 4.5), which also protects one auxiliary sample at the same ε
    with the larger sensitivity of :func:`mpl_sensitivity`. ``batch`` and
    ``indiv`` are non-private references (ledger ε = ∞).

    Parameters
    ----------
    method : {"soft", "vote", "avg", "batch", "indiv"}, default="soft"
    epsilon : float, default=1.0
        ε > 0; ``np.inf`` releases the unperturbed model (the 1/ε = 0 points).
    lam : float, default=1e-4
        λ of the global logistic regression (vote, soft, batch).
    local_lam : float or None, default=None
        λ of the local models; ``None`` uses ``lam`` (the paper uses 1e-4 for
        both). avg's sensitivity uses this λ.
    protect_aux : bool, default=False
        Also protect one auxiliary sample (Section 4.5).
    local_estimator : scikit-learn classifier or None, default=None
        Any classifier for the local models of vote/soft/indiv (the paper
        allows mixed types); cloned and fitted per party in a Python loop. A
        party that saw a single class predicts that class. ``None``: the
        batched logistic regression (required by avg).
    tol, max_iter : float, int
        Newton tolerance (‖∇‖ ≤ tol) and iterations of every solver.
    random_state : None, int or numpy.random.Generator
        Source of the output-perturbation noise.

    Attributes
    ----------
    classes_ : ndarray of shape (K,)
    n_parties_ : int
    party_sizes_ : ndarray of shape (M,)
    n_features_in_ : int
    coef_ : ndarray of shape (K_out, d)
        The released parameters (K_out = 1 for two classes, else K). Not set
        for ``"indiv"``.
    unperturbed_coef_ : ndarray of shape (K_out, d)
        w_s before the noise. **Not private**: kept for analysis (excess risk,
        theorem pages); release ``coef_`` only.
    local_coefs_ : ndarray of shape (M, K_out, d) or None
        The local models (default local estimator only).
    targets_ : ndarray
        α(x) (soft) or the 0/1 vote labels (vote) of the auxiliary data.
    sensitivity_ : float
        L2 sensitivity used (0 for batch/indiv).
    noise_scale_ : float
        ‖η‖ ~ Gamma(d·K_out, noise_scale_), ``noise_scale_ = sensitivity_/ε``.
    noise_norm_ : float
    privacy_ : PrivacyLedger
        Unit "one party" (or "one party + one auxiliary sample").

    References
    ----------
    J. Hamm, P. Cao, M. Belkin. Learning privately from multiparty data.
    ICML 2016, Algorithms 1–2, Theorems 1 and 3, Appendix B.
    M. Pathak, S. Rane, B. Raj. Multiparty differential privacy via
    aggregation of locally trained classifiers. NeurIPS 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from dpstack import MultipartyPrivateClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2200, 5)) / 3
    >>> y = (X[:, 0] > 0).astype(int)
    >>> parties = np.repeat(np.arange(100), 20)
    >>> clf = MultipartyPrivateClassifier("soft", epsilon=1.0, lam=1e-2, random_state=0)
    >>> clf = clf.fit(X[:2000], y[:2000], parties, X_aux=X[2000:])
    >>> clf.sensitivity_, clf.privacy_.units
    (2.0, ['one party'])
    """

    def __init__(self, method="soft", epsilon=1.0, lam=1e-4, local_lam=None, protect_aux=False,
                 local_estimator=None, tol=1e-12, max_iter=100, random_state=None):
        self.method = method
        self.epsilon = epsilon
        self.lam = lam
        self.local_lam = local_lam
        self.protect_aux = protect_aux
        self.local_estimator = local_estimator
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, parties, X_aux=None):
        """Fit local models, label the auxiliary data, release the global model.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Private rows of all parties.
        y : array-like of shape (n,)
        parties : array-like of int, shape (n,)
            Party id of each row, in ``0 … M − 1``; every id must own a row.
        X_aux : array-like of shape (N, d) or None
            Unlabelled auxiliary rows (required by vote and soft).
        """
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        epsilon = check_epsilon(self.epsilon)
        lam = check_positive(self.lam, "lam")
        local_lam = lam if self.local_lam is None else check_positive(self.local_lam, "local_lam")
        X = clip_rows(check_X(X), 1.0)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must be 1-D with one label per row of X ({X.shape[0]}), got shape {y.shape}")
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        K = self.classes_.size
        if K < 2:
            raise ValueError("y must contain at least two classes over all parties")
        parties = self._check_parties(parties, X.shape[0])
        M = self.n_parties_
        needs_aux = self.method in ("vote", "soft")
        if needs_aux:
            if X_aux is None:
                raise ValueError(f"method={self.method!r} needs auxiliary unlabelled data X_aux")
            X_aux = np.asarray(X_aux, dtype=float)
            if X_aux.ndim == 2 and X_aux.shape[0] == 0:
                raise ValueError("X_aux (the auxiliary set) is empty: vote and soft need at least one sample")
            X_aux = clip_rows(check_X(X_aux, "X_aux"), 1.0)
            if X_aux.shape[1] != X.shape[1]:
                raise ValueError(f"X_aux has {X_aux.shape[1]} features, X has {X.shape[1]}")
        if self.method == "avg" and self.local_estimator is not None:
            raise ValueError("avg averages logistic-regression parameters: use local_estimator=None")
        self.n_features_in_ = X.shape[1]
        # fit_methods() shares the local models and the vote counts between methods
        cache = self.__dict__.pop("_shared_cache", None)
        cache = {} if cache is None else cache
        self.local_coefs_ = None
        self._local_models = None
        if self.method == "batch":
            W, _ = fit_soft_target_logistic(X, _binary_or_softmax(_one_hot(y_idx, K)), lam, self.tol, self.max_iter)
        else:
            if "local" not in cache:
                if self.local_estimator is None:
                    cache["local"] = (fit_local_logistic(X, y_idx, parties, M, K, local_lam, self.tol, self.max_iter)[0],
                                      None)
                else:
                    cache["local"] = (None, _fit_local_estimators(self.local_estimator, X, y_idx, parties, M))
            self.local_coefs_, self._local_models = cache["local"]
            if self.method == "indiv":
                self._ledger(np.inf, "non-private reference: the local models stay with their parties")
                self.sensitivity_, self.noise_scale_, self.noise_norm_ = 0.0, 0.0, 0.0
                return self
            if self.method == "avg":
                W = self.local_coefs_.mean(axis=0)
            else:
                if "counts" not in cache:
                    cache["counts"] = self.local_vote_counts(X_aux)
                counts = cache["counts"]
                if self.method == "vote":
                    if K == 2:
                        winner = (counts[:, 1] >= counts[:, 0]).astype(int)  # ties → +1 (eq. 6)
                    else:
                        winner = np.argmax(counts, axis=1)
                    self.targets_ = _one_hot(winner, K)
                else:
                    self.targets_ = counts / M
                W, _ = fit_soft_target_logistic(X_aux, _binary_or_softmax(self.targets_), lam, self.tol, self.max_iter)
        self.unperturbed_coef_ = W
        if self.method == "batch":
            self.sensitivity_ = 0.0
            self._ledger(np.inf, "non-private reference trained on all private rows")
        else:
            n_aux = None if X_aux is None else X_aux.shape[0]
            self.sensitivity_ = mpl_sensitivity(
                self.method, M, K, local_lam if self.method == "avg" else lam,
                self.protect_aux, n_aux)
            self._ledger(epsilon, "")
        rng = check_random_state(self.random_state)
        self.coef_ = W + self.release_noise(epsilon, rng)
        self.noise_scale_ = output_perturbation_scale(self.sensitivity_, epsilon)
        self.noise_norm_ = float(np.linalg.norm(self.coef_ - W))
        return self

    def _check_parties(self, parties, n):
        parties = np.asarray(parties)
        if parties.shape != (n,):
            raise ValueError(f"parties must have one id per row of X ({n}), got shape {parties.shape}")
        if parties.dtype.kind not in "iu" or parties.min() < 0:
            raise ValueError("parties must hold integer party ids 0 … M−1")
        sizes = np.bincount(parties)
        if np.any(sizes == 0):
            empty = np.flatnonzero(sizes == 0)
            raise ValueError(
                f"party {int(empty[0])} has no samples ({empty.size} empty parties among ids 0 … {sizes.size - 1}); "
                "every party must hold at least one sample"
            )
        self.n_parties_ = sizes.size
        self.party_sizes_ = sizes
        return parties

    def _ledger(self, epsilon, note):
        unit = "one party + one auxiliary sample" if self.protect_aux and self.method != "avg" else "one party"
        part = "all parties' private data" + (" + X_aux" if unit != "one party" else "")
        self.privacy_ = PrivacyLedger()
        private = self.method in ("vote", "soft", "avg")
        mechanism = f"MPL {self.method} (output perturbation)" if private else f"{self.method} (non-private reference)"
        self.privacy_.add(mechanism, part, epsilon, unit, note)

    # ------------------------------------------------------------ releases
    def release_noise(self, epsilon, random_state=None, size=None):
        """Output-perturbation noise for this fit's sensitivity at another ε.

        The noise is the only ε-dependent step, so a curve over ε can reuse one
        fit: ``unperturbed_coef_ + release_noise(eps, rng)`` has exactly the
        distribution of ``coef_`` from a fit with ``epsilon=eps``.

        Returns
        -------
        ndarray of shape (K_out, d), or (size, K_out, d) when ``size`` is given.
        """
        check_is_fitted(self, "unperturbed_coef_")
        shape = self.unperturbed_coef_.shape
        scale = output_perturbation_scale(self.sensitivity_, check_epsilon(epsilon))
        eta = isotropic_noise(shape[0] * shape[1], scale, check_random_state(random_state),
                              size=1 if size is None else size)
        return eta.reshape((-1,) + shape)[0] if size is None else eta.reshape((size,) + shape)

    # ------------------------------------------------------------ predictions
    def local_predict_index(self, X, parties=None):
        """Class index predicted by each local model, shape (M, n) (or the given parties)."""
        check_is_fitted(self, "n_parties_")
        X = clip_rows(check_X(X), 1.0)
        ids = np.arange(self.n_parties_) if parties is None else np.asarray(parties)
        if self._local_models is not None:
            return np.stack([_predict_index(self._local_models[m], X) for m in ids])
        W = self.local_coefs_[ids]
        Z = (X @ W.reshape(-1, W.shape[-1]).T).reshape(X.shape[0], len(ids), W.shape[1])
        idx = (Z[..., 0] >= 0).astype(int) if W.shape[1] == 1 else np.argmax(Z, axis=-1)
        return idx.T

    def local_vote_counts(self, X_aux, chunk=256):
        """Number of local models voting for each class, shape (N, K).

        Computed in chunks of auxiliary rows so that M × N margins never sit in
        memory at once (M = 20,000 parties × 43,000 rows would need 7 GB).
        """
        X_aux = clip_rows(check_X(X_aux, "X_aux"), 1.0)
        K = self.classes_.size
        counts = np.zeros((X_aux.shape[0], K))
        if self._local_models is not None:
            for m in range(self.n_parties_):
                idx = _predict_index(self._local_models[m], X_aux)
                counts[np.arange(X_aux.shape[0]), idx] += 1
            return counts
        Wflat = self.local_coefs_.reshape(-1, self.local_coefs_.shape[-1])  # (M·K_out, d)
        for start in range(0, X_aux.shape[0], chunk):
            Z = X_aux[start:start + chunk] @ Wflat.T
            if self.local_coefs_.shape[1] == 1:
                pos = (Z >= 0).sum(axis=1)
                counts[start:start + chunk, 1] = pos
                counts[start:start + chunk, 0] = self.n_parties_ - pos
            else:
                idx = np.argmax(Z.reshape(Z.shape[0], self.n_parties_, K), axis=2)
                for k in range(K):
                    counts[start:start + chunk, k] = (idx == k).sum(axis=1)
        return counts

    def decision_function(self, X, coef=None):
        """Margins ``coef · x`` on clipped rows: (n,) for two classes, (n, K) else."""
        if self.method == "indiv":
            raise ValueError("method='indiv' is M separate models: use local_predict_index or score")
        check_is_fitted(self, "coef_")
        X = clip_rows(check_X(X), 1.0)
        coef = self.coef_ if coef is None else coef
        Z = X @ coef.T
        return Z[:, 0] if Z.shape[1] == 1 else Z

    def predict(self, X):
        Z = self.decision_function(X)
        return self.classes_[(Z >= 0).astype(int) if Z.ndim == 1 else np.argmax(Z, axis=1)]

    def score(self, X, y, sample_weight=None):
        """Accuracy; for ``"indiv"`` the mean accuracy of the M local models."""
        if self.method != "indiv":
            return super().score(X, y, sample_weight)
        y_idx = np.searchsorted(self.classes_, np.asarray(y))
        X = clip_rows(check_X(X), 1.0)  # once, not per chunk of parties
        correct = np.zeros(self.n_parties_)
        for start in range(0, self.n_parties_, 256):
            ids = np.arange(start, min(start + 256, self.n_parties_))
            correct[ids] = (self.local_predict_index(X, ids) == y_idx).mean(axis=1)
        return float(correct.mean())


def fit_methods(methods, X, y, parties, X_aux=None, **params):
    """Fit several methods on one split, training the local models only once.

    Equivalent to ``{m: MultipartyPrivateClassifier(m, **params).fit(X, y, parties, X_aux)}``
    (the same local models and auxiliary votes are computed once and shared),
    which matters at M = 20,000 parties.

    Returns
    -------
    dict mapping each method to its fitted :class:`MultipartyPrivateClassifier`.
    """
    cache, fitted = {}, {}
    for method in methods:
        est = MultipartyPrivateClassifier(method, **params)
        est._shared_cache = cache
        fitted[method] = est.fit(X, y, parties, X_aux)
    return fitted


def _one_hot(idx, K):
    return (np.asarray(idx)[:, None] == np.arange(K)).astype(float)


def _binary_or_softmax(T):
    # Two classes: one weight vector with target α = P(classes_[1]) (sigmoid), as in
    # the paper's binary algorithms; K ≥ 3: the full (N, K) targets (softmax).
    return T[:, 1] if T.shape[1] == 2 else T


class _ConstantClassifier:
    """What a party that saw one class predicts: that class."""

    def __init__(self, k):
        self.k = k

    def predict(self, X):
        return np.full(X.shape[0], self.k)


def _fit_local_estimators(estimator, X, y_idx, parties, M):
    order = np.argsort(parties, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(parties, minlength=M))])
    models = []
    for m in range(M):
        rows = order[bounds[m]:bounds[m + 1]]
        ym = y_idx[rows]
        if np.unique(ym).size == 1:
            models.append(_ConstantClassifier(int(ym[0])))
        else:
            models.append(clone(estimator).fit(X[rows], ym))
    return models


def _predict_index(model, X):
    return np.asarray(model.predict(X)).astype(int)
