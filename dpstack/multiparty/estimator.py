"""The multiparty private classifier of Hamm, Cao & Belkin (2016) and its baselines.

Privacy unit: **one whole party**. Two datasets are neighbours when the
complete private data of one party (all its samples) is replaced by other,
non-empty data; the other parties and the auxiliary data are the same. The
number of parties M is therefore public, and so is the label set when it is
given as ``classes``. With ``protect_aux=True`` (the
extension of Section 4.5) the feature vector of one auxiliary sample may
change as well, and the noise grows accordingly.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .._validation import (
    BOOLEAN,
    CLASSES,
    EPSILON,
    MAX_ITER,
    POSITIVE,
    RANDOM_STATE,
    TOL,
    HasMethods,
    StrOptions,
    check_epsilon,
    check_positive,
    check_random_state,
    check_X,
    spawn_streams,
    validate_params,
)
from ..accounting import PrivacyLedger
from ..base import (
    ReleaseFormatError,
    atomic_fit,
    check_diagnostics,
    record_classes,
    record_diagnostics,
    released_labels,
    require_released,
    resolve_classes,
)
from ..mechanisms import clip_rows, isotropic_noise, output_perturbation_scale
from .logistic import fit_local_logistic, fit_soft_target_logistic

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:  # pragma: no cover - older scikit-learn

    def _validate_data(est, X, reset=True, skip_check_array=False, **kw):
        return est._validate_data(X, reset=reset, cast_to_ndarray=not skip_check_array, **kw)


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
    per_label = {
        "vote": 2.0 if binary else math.sqrt(2.0),
        "soft": (2.0 if binary else math.sqrt(2.0)) / M,
        "avg": (2.0 if binary else 2.0 * math.sqrt(2.0)) / M,
    }
    if method not in per_label:
        raise ValueError(f"method must be one of 'vote', 'soft', 'avg' for a sensitivity, got {method!r}")
    s = per_label[method]
    if protect_aux and method != "avg":
        N = int(n_aux)
        s_feature = 2.0 if binary else 2.0 * math.sqrt(2.0)
        s = ((N - 1) * s + s_feature) / N
    return s / lam


def _needs_n_aux(method, n_parties, n_classes):
    """Whether the MPL sensitivity with protected auxiliary rows depends on their number N."""
    s = mpl_sensitivity(method, n_parties, n_classes, 1.0)
    s_x = 2.0 if n_classes == 2 else 2.0 * math.sqrt(2.0)
    return not math.isclose(s, s_x, rel_tol=1e-12)


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
    private_idx = perm[n_aux : n_aux + n_parties * party_size]
    parties = np.repeat(np.arange(n_parties), party_size)
    return aux_idx, private_idx, parties


class MultipartyPrivateClassifier(ClassifierMixin, BaseEstimator):
    """ε-DP global classifier from M parties' local models (Hamm, Cao & Belkin 2016).

    Each party trains a local classifier on its own rows (default: logistic
    regression with λ = ``local_lam``, fitted for all parties at once by
    :func:`~dpstack.multiparty.logistic.fit_local_logistic`). Then:

    * ``"vote"`` (Algorithm 1): the ensemble's majority vote labels the
      auxiliary data (ties → ``classes_[1]``, eq. 6; multiclass ties → lowest
      class index, in every local vote as well: a party's classes that it never saw
      have equal weight vectors, and a vote among them goes to the lowest of them
      on every BLAS kernel); a λ-regularised logistic regression is fitted and
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
    ``indiv`` are non-private references: their ledger records them as
    outside the guarantee (ε = ∞).

    What a default fit keeps is the *release* (``_release_attributes``): the
    perturbed model ``coef_``, the public label set ``classes_``, ``n_features_in_``,
    the number of parties ``n_parties_``, the sensitivity and noise scale, and the
    ledger. The sensitivity is computed from public quantities only — the number of
    parties M, the number of classes K = ``len(classes)``, λ, ε and, with
    ``protect_aux``, the number N of auxiliary rows — so it reveals nothing about the
    parties' data: M and N are the same in neighbouring datasets (a party's data is
    replaced by other, non-empty data; an auxiliary row by another row), and K is the
    public ``classes``. The non-private model, the parties' local models (which in
    this setting never leave their parties), the vote targets, the noise and the
    solvers' iteration counts are kept only with ``diagnostics=True``.

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
    tol : float, default=1e-12
        Newton tolerance (‖∇‖ ≤ tol) of every solver.
    max_iter : int, default=100
        Newton iterations of every solver.
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Source of the output-perturbation noise. Each method draws from its own spawned
        stream (``SeedSequence(random_state).spawn``, one child per method), so two methods
        fitted with the same int — alone or by :func:`fit_methods` — get independent noise;
        ``None`` draws fresh OS entropy.
    classes : array-like of shape (K,) or None, default=None
        The public label set, K ≥ 2. The output's shape (one weight vector for
        K = 2, K vectors else) and the sensitivity depend on K only, so a party
        with a single class, or a class that no party holds, changes neither.
        ``None`` reads the label set from the parties' labels, which is outside
        the guarantee: a :class:`~dpstack.base.PrivacyLeakWarning` is raised and
        the ledger records the step (ε = ∞).
    diagnostics : bool, default=False
        Keep the non-private intermediate results in ``diagnostics_`` (for the
        book's analyses and audits). Such an object is not private (its ledger
        says ε = ∞); publish its release with :func:`dpstack.release.save_release`.

    Attributes
    ----------
    classes_ : ndarray of shape (K,)
        The public label set (``classes``, sorted).
    n_parties_ : int
        M, the number of distinct party ids. Public: neighbouring datasets
        replace the data of one party, so they have the same parties.
    n_features_in_ : int
    coef_ : ndarray of shape (K_out, d)
        The released parameters w_s + η (K_out = 1 for two classes, else K).
        Not set for ``"indiv"``.
    local_coefs_ : ndarray of shape (M, K_out, d)
        Only for ``"indiv"`` with the default local estimator: that non-private
        reference *is* the M local models (ledger ε = ∞). ``local_estimators_``
        (a list of M fitted classifiers) replaces it with a ``local_estimator``.
    sensitivity_ : float
        L2 sensitivity of w_s (0 for batch/indiv); public, see above.
    noise_scale_ : float
        ‖η‖ ~ Gamma(d·K_out, noise_scale_), ``noise_scale_ = sensitivity_/ε``.
    privacy_ : PrivacyLedger
        Unit "one party" (or "one party + one auxiliary sample").
    diagnostics_ : sklearn.utils.Bunch
        Only with ``diagnostics=True``: ``unperturbed_coef`` (w_s, the non-private
        model), ``noise`` (η) and ``noise_norm``, ``local_coefs`` (M, K_out, d) or
        ``local_estimators`` (the parties' raw local models), ``targets`` (α(x) for
        soft, the 0/1 vote labels for vote, else None), ``vote_counts``,
        ``party_ids`` (the distinct ids, in the order of the local models),
        ``party_sizes``, ``n_iter`` (global solver) and ``n_iter_local``.

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
    >>> clf = MultipartyPrivateClassifier("soft", epsilon=1.0, lam=1e-2, random_state=0, classes=[0, 1])
    >>> clf = clf.fit(X[:2000], y[:2000], parties, X_aux=X[2000:])
    >>> clf.sensitivity_, clf.privacy_.total(), clf.privacy_.units
    (2.0, 1.0, ['one party'])
    """

    _release_attributes = (
        "classes_",
        "n_features_in_",
        "n_parties_",
        "coef_",
        "local_coefs_",
        "sensitivity_",
        "noise_scale_",
        "privacy_",
    )
    #: what a release file holds (the rest of ``_release_attributes`` is recomputed on load);
    #: ``n_aux``, the public number of auxiliary rows, where the sensitivity depends on it
    _release_source = ("classes_", "n_features_in_", "n_parties_", "coef_", "local_coefs_", "n_aux")

    _parameter_constraints = {
        "method": [StrOptions(set(METHODS))],
        "epsilon": EPSILON,
        "lam": POSITIVE,
        "local_lam": [None, *POSITIVE],
        "protect_aux": BOOLEAN,
        "local_estimator": [None, HasMethods(["fit", "predict"])],
        "tol": TOL,
        "max_iter": MAX_ITER,
        "random_state": RANDOM_STATE,
        "classes": CLASSES,
        "diagnostics": BOOLEAN,
    }

    def __init__(
        self,
        method="soft",
        epsilon=1.0,
        lam=1e-4,
        local_lam=None,
        protect_aux=False,
        local_estimator=None,
        tol=1e-12,
        max_iter=100,
        random_state=None,
        classes=None,
        diagnostics=False,
    ):
        self.method = method
        self.epsilon = epsilon
        self.lam = lam
        self.local_lam = local_lam
        self.protect_aux = protect_aux
        self.local_estimator = local_estimator
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.classes = classes
        self.diagnostics = diagnostics

    # ------------------------------------------------------------------ fit
    @atomic_fit
    def fit(self, X, y, parties, X_aux=None):
        """Fit local models, label the auxiliary data, release the global model.

        Every input is checked before the object changes; a call that raises
        leaves an earlier fit as it was.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Private rows of all parties (dense: see below).
        y : array-like of shape (n,)
            Class labels, each in ``classes``.
        parties : array-like of shape (n,)
            Party id of each row: integers or strings, any values (they are
            relabelled 0 … M − 1 in sorted order). Every party holds at least one
            row by construction.
        X_aux : array-like of shape (N, d) or None
            Unlabelled auxiliary rows (required by vote and soft).

        Returns
        -------
        self

        Raises
        ------
        TypeError
            If ``X`` or ``X_aux`` is a sparse matrix: the local models and the
            votes are computed on dense rows, so project sparse data to a few
            dense features first (PCA or a truncated SVD fitted on public or
            auxiliary rows, as the URL experiment does).
        """
        return self._fit(X, y, parties, X_aux, cache={})

    def _check_params(self):
        validate_params(self)
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        epsilon = check_epsilon(self.epsilon)
        lam = check_positive(self.lam, "lam")
        local_lam = lam if self.local_lam is None else check_positive(self.local_lam, "local_lam")
        if not isinstance(self.protect_aux, (bool, np.bool_)):
            raise TypeError(f"protect_aux must be True or False, got {self.protect_aux!r}")
        check_positive(self.tol, "tol")
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, numbers.Integral) or self.max_iter < 1:
            raise ValueError(f"max_iter must be an integer >= 1, got {self.max_iter!r}")
        check_diagnostics(self.diagnostics)
        if self.method == "avg" and self.local_estimator is not None:
            raise ValueError("avg averages logistic-regression parameters: use local_estimator=None")
        # one stream per method (SeedSequence.spawn): methods fitted with the same random_state,
        # alone or by fit_methods, draw independent noise (publishing two of them costs 2ε, no less)
        rng = check_random_state(spawn_streams(self.random_state, len(METHODS))[METHODS.index(self.method)])
        return epsilon, lam, local_lam, rng

    def _fit(self, X, y, parties, X_aux, cache):
        # ---- validation: nothing below changes the object until every input is checked
        epsilon, lam, local_lam, rng = self._check_params()
        X_input = X
        X = clip_rows(check_X(_dense(X, "X")), 1.0)
        n, d = X.shape
        y = _check_labels(y, n)
        classes, from_data = resolve_classes(self.classes, y, binary=False, estimator=type(self).__name__)
        if classes.size < 2:
            raise ValueError(
                f"y holds one class ({classes!r}) and classes=None: pass the public label set as classes=[...]"
                if from_data
                else f"classes must hold at least two labels, got {self.classes!r}"
            )
        K = classes.size
        y_idx = np.searchsorted(classes, y)
        party_ids, party_idx = _check_parties(parties, n)
        M = party_ids.size
        needs_aux = self.method in ("vote", "soft")
        if needs_aux:
            if X_aux is None:
                raise ValueError(f"method={self.method!r} needs auxiliary unlabelled data X_aux")
            X_aux = np.asarray(_dense(X_aux, "X_aux"), dtype=float)
            if X_aux.ndim == 2 and X_aux.shape[0] == 0:
                raise ValueError("X_aux (the auxiliary set) is empty: vote and soft need at least one sample")
            X_aux = clip_rows(check_X(X_aux, "X_aux"), 1.0)
            if X_aux.shape[1] != d:
                raise ValueError(f"X_aux has {X_aux.shape[1]} features, X has {d}")
        private = self.method in ("vote", "soft", "avg")
        n_aux = None if X_aux is None or not needs_aux else X_aux.shape[0]
        sensitivity = (
            mpl_sensitivity(self.method, M, K, local_lam if self.method == "avg" else lam, self.protect_aux, n_aux)
            if private
            else 0.0
        )

        # ---- computation (fit_methods shares the local models and the votes between methods)
        local_coefs = local_estimators = targets = counts = W = None
        n_iter = n_iter_local = None
        if self.method == "batch":
            W, n_iter = fit_soft_target_logistic(
                X, _binary_or_softmax(_one_hot(y_idx, K)), lam, self.tol, self.max_iter
            )
        else:
            if "local" not in cache:
                if self.local_estimator is None:
                    coefs, it = fit_local_logistic(X, y_idx, party_idx, M, K, local_lam, self.tol, self.max_iter)
                    cache["local"] = (coefs, None, it)
                else:
                    cache["local"] = (None, _fit_local_estimators(self.local_estimator, X, y_idx, party_idx, M), None)
            local_coefs, local_estimators, n_iter_local = cache["local"]
            if self.method == "avg":
                W = local_coefs.mean(axis=0)
            elif needs_aux:
                if "counts" not in cache:
                    cache["counts"] = _vote_counts(local_coefs, local_estimators, X_aux, K)
                counts = cache["counts"]
                if self.method == "vote":
                    if K == 2:
                        winner = (counts[:, 1] >= counts[:, 0]).astype(int)  # ties → +1 (eq. 6)
                    else:
                        winner = np.argmax(counts, axis=1)
                    targets = _one_hot(winner, K)
                else:
                    targets = counts / M
                W, n_iter = fit_soft_target_logistic(X_aux, _binary_or_softmax(targets), lam, self.tol, self.max_iter)
        noise_scale = output_perturbation_scale(sensitivity, epsilon)
        noise = None if W is None else _output_noise(W.shape, noise_scale, rng)

        # ---- the release
        for stale in ("coef_", "local_coefs_", "local_estimators_"):
            vars(self).pop(stale, None)
        self.classes_ = classes
        _validate_data(self, X_input, reset=True, skip_check_array=True)  # n_features_in_, feature names
        self.n_parties_ = int(M)
        if W is not None:
            self.coef_ = W + noise
        if self.method == "indiv":  # the reference is the local models themselves (not private)
            if local_coefs is not None:
                self.local_coefs_ = local_coefs
            else:
                self.local_estimators_ = local_estimators
        self.sensitivity_ = float(sensitivity)
        self.noise_scale_ = float(noise_scale)
        unit = "one party + one auxiliary sample" if self.protect_aux and self.method != "avg" else "one party"
        part = "all parties' private data" + (" + X_aux" if unit != "one party" else "")
        self.privacy_ = PrivacyLedger()
        if private:
            self.privacy_.add(f"MPL {self.method} (output perturbation)", part, epsilon, unit)
        else:
            self.privacy_.add_outside(
                f"{self.method} (non-private reference)",
                part,
                "one model trained on all parties' rows pooled"
                if self.method == "batch"
                else "the parties' local models themselves, which in this setting never leave their parties",
                unit=unit,
            )
        record_classes(self.privacy_, from_data, part, unit)
        record_diagnostics(
            self,
            self.privacy_,
            part,
            unit,
            unperturbed_coef=W,
            noise=noise,
            noise_norm=None if noise is None else float(np.linalg.norm(noise)),
            local_coefs=local_coefs,
            local_estimators=local_estimators,
            targets=targets,
            vote_counts=counts,
            party_ids=party_ids,
            party_sizes=np.bincount(party_idx, minlength=M),
            n_iter=n_iter,
            n_iter_local=n_iter_local,
        )
        return self

    # ------------------------------------------------------------ releases
    def _released_n_aux(self):
        """The public number N of auxiliary rows of a fit with ``protect_aux`` (else None), for a release.

        The fitted object keeps the sensitivity ((N − 1)·s + s_x)/(N·λ), not N; N is solved from it
        and checked by recomputing the sensitivity. Where s = s_x (two-class vote) the sensitivity is
        s/λ whatever N is: N is not needed to rebuild the release, and None is recorded.
        """
        if not (self.protect_aux and self.method in ("vote", "soft")):
            return None
        K, M = np.asarray(self.classes_).size, int(self.n_parties_)
        if not _needs_n_aux(self.method, M, K):
            return None
        s = mpl_sensitivity(self.method, M, K, 1.0)  # the per-label term (λ = 1)
        s_x = 2.0 if K == 2 else 2.0 * math.sqrt(2.0)
        n_aux = int(round((s_x - s) / (self.sensitivity_ * self.lam - s)))
        if n_aux < 1 or not math.isclose(
            mpl_sensitivity(self.method, M, K, self.lam, True, n_aux), self.sensitivity_, rel_tol=1e-9
        ):
            raise TypeError(
                "MultipartyPrivateClassifier: the number of auxiliary rows cannot be read from sensitivity_"
            )
        return n_aux

    def _release_ledger(self):
        """The ledger a release's parameters give (a noisy method, or a reference outside the guarantee)."""
        private = self.method in ("vote", "soft", "avg")
        unit = "one party + one auxiliary sample" if self.protect_aux and self.method != "avg" else "one party"
        part = "all parties' private data" + (" + X_aux" if unit != "one party" else "")
        ledger = PrivacyLedger()
        if private:
            ledger.add(f"MPL {self.method} (output perturbation)", part, float(self.epsilon), unit)
        else:
            ledger.add_outside(
                f"{self.method} (non-private reference)",
                part,
                "one model trained on all parties' rows pooled"
                if self.method == "batch"
                else "the parties' local models themselves, which in this setting never leave their parties",
                unit=unit,
            )
        record_classes(ledger, self.classes is None, part, unit)
        return ledger

    def _from_release(self):
        """Check a loaded release and recompute the sensitivity, noise scale and ledger (see :mod:`dpstack.release`)."""
        require_released(self, "classes_", "n_features_in_", "n_parties_")
        classes = released_labels(self)
        K, d, M = classes.size, int(self.n_features_in_), int(self.n_parties_)
        n_aux = getattr(self, "n_aux", None)
        vars(self).pop("n_aux", None)
        private = self.method in ("vote", "soft", "avg")
        if self.method != "indiv":
            require_released(self, "coef_")
            expected = (1, d) if K == 2 else (K, d)
            if self.coef_.dtype.kind != "f" or self.coef_.shape != expected:
                raise ReleaseFormatError(
                    f"MultipartyPrivateClassifier: coef_ must have shape {expected}, got {self.coef_.shape}"
                )
        if self.protect_aux and self.method in ("vote", "soft") and n_aux is None:
            if _needs_n_aux(self.method, M, K):
                raise ReleaseFormatError(
                    "MultipartyPrivateClassifier: protect_aux needs the public n_aux in the release"
                )
            n_aux = 1  # the sensitivity does not depend on N here (s = s_x): any N gives the same value
        if private:
            lam = self.lam if self.method != "avg" else (self.lam if self.local_lam is None else self.local_lam)
            sensitivity = mpl_sensitivity(self.method, M, K, lam, self.protect_aux, n_aux)
        else:
            sensitivity = 0.0
        self.sensitivity_ = float(sensitivity)
        self.noise_scale_ = float(output_perturbation_scale(sensitivity, self.epsilon))
        self.privacy_ = self._release_ledger()

    def release_noise(self, epsilon, random_state=None, size=None):
        """Output-perturbation noise for this fit's public sensitivity at another ε.

        Reads only public quantities (the shape of ``coef_`` and ``sensitivity_``),
        so it needs no diagnostics. The noise is the only ε-dependent step, so a
        curve over ε can reuse one fit: with ``diagnostics=True``,
        ``diagnostics_.unperturbed_coef + release_noise(eps, rng)`` has exactly the
        distribution of ``coef_`` from a fit with ``epsilon=eps``.

        Returns
        -------
        ndarray of shape (K_out, d), or (size, K_out, d) when ``size`` is given.
        """
        check_is_fitted(self, "sensitivity_")
        if not hasattr(self, "coef_"):
            raise ValueError("method='indiv' releases no global model, so there is no noise to draw")
        scale = output_perturbation_scale(self.sensitivity_, check_epsilon(epsilon))
        return _output_noise(self.coef_.shape, scale, check_random_state(random_state), size)

    def _local_models(self, caller):
        """(local_coefs, local_estimators) from the indiv release or the diagnostics."""
        check_is_fitted(self, "n_parties_")
        if self.method == "indiv":
            return getattr(self, "local_coefs_", None), getattr(self, "local_estimators_", None)
        diag = getattr(self, "diagnostics_", None)
        if diag is None:
            raise ValueError(
                f"{caller} needs the parties' local models, which are not part of the release of "
                f"method={self.method!r} (in the multiparty setting they never leave their parties): "
                "fit with diagnostics=True to keep them (that object is not private)"
            )
        return diag.local_coefs, diag.local_estimators

    # ------------------------------------------------------------ predictions
    def local_predict_index(self, X, parties=None):
        """Class index predicted by each local model, shape (M, n) (or the given parties).

        ``parties`` are positions 0 … M − 1 (``diagnostics_.party_ids`` maps them to
        the ids given to ``fit``). The local models are released only by
        ``"indiv"``; the other methods need ``diagnostics=True``.
        """
        local_coefs, local_estimators = self._local_models("local_predict_index")
        X = clip_rows(check_X(self._check_predict_X(X)), 1.0)
        ids = np.arange(self.n_parties_) if parties is None else np.asarray(parties)
        return _local_predict_index(local_coefs, local_estimators, X, ids)

    def local_vote_counts(self, X_aux, chunk=256):
        """Number of local models voting for each class, shape (N, K).

        Needs the local models: released only by ``"indiv"``; the other methods
        need ``diagnostics=True``.
        """
        local_coefs, local_estimators = self._local_models("local_vote_counts")
        X_aux = clip_rows(check_X(self._check_predict_X(X_aux, "X_aux")), 1.0)
        return _vote_counts(local_coefs, local_estimators, X_aux, self.classes_.size, chunk)

    def _check_predict_X(self, X, name="X"):
        """Dense, finite, with the number of features seen in ``fit`` (scikit-learn's message)."""
        return _validate_data(self, _dense(X, name), reset=False, dtype=float)

    def decision_function(self, X, coef=None):
        """Margins ``coef · x`` on clipped rows: (n,) for two classes, (n, K) else."""
        if self.method == "indiv":
            raise ValueError("method='indiv' is M separate models: use local_predict_index or score")
        check_is_fitted(self, "coef_")
        X = clip_rows(check_X(self._check_predict_X(X)), 1.0)
        coef = self.coef_ if coef is None else coef
        Z = X @ coef.T
        return Z[:, 0] if Z.shape[1] == 1 else Z

    def predict(self, X):
        """The class with the largest margin (two classes: ties go to ``classes_[1]``)."""
        Z = self.decision_function(X)
        return self.classes_[(Z >= 0).astype(int) if Z.ndim == 1 else np.argmax(Z, axis=1)]

    def score(self, X, y, sample_weight=None):
        """Accuracy; for ``"indiv"`` the mean accuracy of the M local models."""
        if self.method != "indiv":
            return super().score(X, y, sample_weight)
        local_coefs, local_estimators = self._local_models("score")
        X = clip_rows(check_X(self._check_predict_X(X)), 1.0)  # once, not per chunk of parties
        y = np.asarray(y)
        known = np.isin(y, self.classes_)
        y_idx = np.where(known, np.searchsorted(self.classes_, np.where(known, y, self.classes_[0])), -1)
        correct = np.zeros(self.n_parties_)
        for start in range(0, self.n_parties_, 256):
            ids = np.arange(start, min(start + 256, self.n_parties_))
            correct[ids] = (_local_predict_index(local_coefs, local_estimators, X, ids) == y_idx).mean(axis=1)
        return float(correct.mean())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


def fit_methods(methods, X, y, parties, X_aux=None, **params):
    """Fit several methods on one split, training the local models only once.

    Equivalent to ``{m: MultipartyPrivateClassifier(m, **params).fit(X, y, parties, X_aux)}``
    (with one ``random_state`` for all, each method still draws its noise from its own
    stream: the methods' noise vectors are independent)
    (the same local models and auxiliary votes are computed once and shared
    during the fits, then dropped unless ``diagnostics=True``), which matters at
    M = 20,000 parties.

    Returns
    -------
    dict mapping each method to its fitted :class:`MultipartyPrivateClassifier`.
    """
    cache, fitted = {}, {}
    for method in methods:
        fitted[method] = MultipartyPrivateClassifier(method, **params)._fit(X, y, parties, X_aux, cache)
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
        rows = order[bounds[m] : bounds[m + 1]]
        ym = y_idx[rows]
        if np.unique(ym).size == 1:
            models.append(_ConstantClassifier(int(ym[0])))
        else:
            models.append(clone(estimator).fit(X[rows], ym))
    return models


def _predict_index(model, X):
    return np.asarray(model.predict(X)).astype(int)


def _dense(X, name):
    """Refuse sparse input with a message that says what to do."""
    if sparse.issparse(X):
        raise TypeError(
            f"{name} is a sparse matrix, but MultipartyPrivateClassifier needs dense rows (the local models "
            "and the votes are computed on dense arrays). Project sparse data to a few dense features first, "
            "e.g. PCA or a truncated SVD fitted on public or auxiliary rows, as the URL experiment does."
        )
    return X


def _check_labels(y, n):
    """Class labels, one per row: no NaN, no real-valued targets."""
    if y is None:
        raise ValueError("MultipartyPrivateClassifier requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = column_or_1d(y, warn=True)  # a column vector: DataConversionWarning, as scikit-learn does
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must be 1-D with one label per row of X ({n}), got shape {y.shape}")
    if y.dtype.kind in "fc" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity: every row needs a class label")
    try:
        kind = type_of_target(y, input_name="y")
    except ValueError as exc:
        raise ValueError(f"y must hold class labels: {exc}") from None
    if kind == "unknown":
        raise ValueError(f"Unknown label type: y must hold class labels (numbers or strings), got dtype {y.dtype}")
    if kind not in ("binary", "multiclass"):
        raise ValueError(
            f"y must hold class labels (binary or multiclass), got a target of type {kind!r}"
            + (" (real values, as for regression)" if kind == "continuous" else "")
        )
    return y


def _check_parties(parties, n):
    """The distinct party ids (sorted) and each row's position among them (0 … M − 1).

    Relabelling with ``np.unique`` costs O(n log n) whatever the ids are (an id of
    10⁹ does not allocate a table of 10⁹ counts), and every party holds a row.
    """
    parties = np.asarray(parties)
    if parties.shape != (n,):
        raise ValueError(f"parties must have one id per row of X ({n}), got shape {parties.shape}")
    if parties.dtype.kind == "f":
        if not np.all(np.isfinite(parties)) or np.any(parties != np.round(parties)):
            raise ValueError("parties must hold integer or string party ids, got non-integer numbers")
    elif parties.dtype.kind not in "iuUS":
        raise ValueError(f"parties must hold integer or string party ids, got dtype {parties.dtype}")
    ids, index = np.unique(parties, return_inverse=True)
    return ids, index.reshape(-1)


def _output_noise(shape, scale, rng, size=None):
    """Noise with density ∝ exp(−‖η‖/scale) of shape ``shape`` (or (size,) + shape)."""
    eta = isotropic_noise(shape[0] * shape[1], scale, rng, size=1 if size is None else size)
    return eta.reshape((-1,) + tuple(shape))[0] if size is None else eta.reshape((size,) + tuple(shape))


def _local_predict_index(local_coefs, local_estimators, X, ids):
    """Class index predicted by local models ``ids`` on clipped rows X, shape (len(ids), n)."""
    if local_estimators is not None:
        return np.stack([_predict_index(local_estimators[m], X) for m in ids])
    W = local_coefs[ids]
    Z = (X @ W.reshape(-1, W.shape[-1]).T).reshape(X.shape[0], len(ids), W.shape[1])
    idx = (Z[..., 0] >= 0).astype(int) if W.shape[1] == 1 else _tied_argmax(Z, _tie_representatives(W))
    return idx.T


def _tie_representatives(local_coefs):
    """For each party m and class k, the lowest class j whose weight vector equals w_mk bit for bit.

    Equal weight vectors within a party are the classes it did not see (made equal by
    :func:`~dpstack.multiparty.logistic.fit_local_logistic`, as they are in the exact
    minimiser). ``None`` when no party has two equal vectors (K_out = 1 always).

    Parameters
    ----------
    local_coefs : ndarray of shape (M, K_out, d)

    Returns
    -------
    ndarray of int, shape (M, K_out), or None
    """
    M, K, _ = local_coefs.shape
    rep = np.broadcast_to(np.arange(K), (M, K)).copy()
    for k in range(1, K):
        for j in range(k - 1, -1, -1):  # the lowest equal j wins: it is visited last
            same = np.all(local_coefs[:, j] == local_coefs[:, k], axis=1)
            rep[same, k] = rep[same, j]
    return None if np.all(rep == np.arange(K)) else rep


def _tied_argmax(Z, rep):
    """Class index of the largest margin, shape Z.shape[:-1], ties to the lowest index.

    ``Z`` has shape (n, M, K) (margins of M local models); ``rep`` is
    :func:`_tie_representatives` of the models. Why: two bitwise-equal weight vectors
    need not get bitwise-equal margins from a matrix product (a BLAS kernel may sum the
    columns of a tile edge in another order), and on a tie of that kind the vote would go
    to whichever class the rounding favoured, a different one under each kernel. Every
    class therefore takes the margin of its representative, so that exact ties stay exact
    and ``argmax`` gives them to the lowest class index (the documented rule).
    """
    if rep is not None:
        Z = np.take_along_axis(Z, np.broadcast_to(rep, Z.shape), axis=-1)
    return np.argmax(Z, axis=-1)


def _vote_counts(local_coefs, local_estimators, X_aux, K, chunk=256):
    """Number of local models voting for each class on clipped rows, shape (N, K).

    Computed in chunks of auxiliary rows so that M × N margins never sit in
    memory at once (M = 20,000 parties × 43,000 rows would need 7 GB).
    """
    counts = np.zeros((X_aux.shape[0], K))
    if local_estimators is not None:
        for model in local_estimators:
            idx = _predict_index(model, X_aux)
            counts[np.arange(X_aux.shape[0]), idx] += 1
        return counts
    M = local_coefs.shape[0]
    Wflat = local_coefs.reshape(-1, local_coefs.shape[-1])  # (M·K_out, d)
    rep = None if local_coefs.shape[1] == 1 else _tie_representatives(local_coefs)
    for start in range(0, X_aux.shape[0], chunk):
        Z = X_aux[start : start + chunk] @ Wflat.T
        if local_coefs.shape[1] == 1:
            pos = (Z >= 0).sum(axis=1)
            counts[start : start + chunk, 1] = pos
            counts[start : start + chunk, 0] = M - pos
        else:
            idx = _tied_argmax(Z.reshape(Z.shape[0], M, K), rep)  # exact ties → lowest class
            for k in range(K):
                counts[start : start + chunk, k] = (idx == k).sum(axis=1)
    return counts
