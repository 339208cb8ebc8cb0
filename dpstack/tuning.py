"""Private hyper-parameter selection: the whole pipeline inside the ε-DP guarantee.

The papers choose λ (and η for transfer) by the AUC on a private validation set and
release the model fitted with the winner: the choice itself depends on the private data
outside any guarantee. :class:`PrivateParameterTuning` replaces that step with the private
parameter tuning of Chaudhuri, Monteleoni & Sarwate (2011, §6):

1. split the n training records at random, by index only (the labels are not looked at),
   into G + 1 disjoint parts of (nearly) equal size T_1, …, T_G, V;
2. fit candidate g — the estimator with the g-th parameter setting, itself ε_train-DP —
   on T_g alone;
3. count z_g, the errors of candidate g on V, and draw the winner with the exponential
   mechanism: P(g) ∝ exp(−ε_select · z_g / (2Δ)), Δ = 1;
4. release the winner's model and its index; nothing else.

**Privacy unit: one sample** (neighbouring datasets differ in one record, replaced). A
record lies in exactly one part. In T_g it changes candidate g only, which is
ε_train-DP, and everything else (the other candidates, the scores, the draw) is
computed from data that did not change or from candidate g's output: post-processing.
In V it changes each error count z_g by at most 1, the sensitivity Δ = 1 of the
utility u_g = −z_g, so the draw is ε_select-DP (McSherry & Talwar 2007). Parallel
composition over the disjoint parts gives **max(ε_train, ε_select)** for the released
pair (model, index) — the original states it with one ε for both. The ledger records one
entry per part (``D/T_g/…`` for the candidates, ``D/V`` for the selection), so its
:meth:`~dpstack.accounting.PrivacyLedger.total` is exactly that maximum.

The price is data: each candidate is trained on n/(G + 1) records. Liu & Talwar (2019)
trade it differently (every candidate on all the data, a random number of runs, ≈ 3ε);
this module implements the original method exactly.
"""

from __future__ import annotations

import copy
import math
import numbers

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import ParameterGrid
from sklearn.utils.validation import check_is_fitted

from ._validation import (
    BOOLEAN,
    EPSILON,
    RANDOM_STATE,
    HasMethods,
    check_epsilon,
    check_random_state,
    spawn_streams,
    validate_params,
)
from .accounting import PrivacyLedger, part_name
from .base import (
    ReleaseFormatError,
    atomic_fit,
    check_class_labels,
    check_diagnostics,
    record_classes,
    record_diagnostics,
    release_only,
    require_released,
    resolve_classes,
    sklearn_validate_data,
)

__all__ = ["PrivateParameterTuning", "exponential_mechanism", "selection_probabilities"]

#: Parameters a source fit has fixed: a transfer estimator whose source is already fitted
#: cannot vary them per candidate (its source would not be refitted).
SOURCE_PARAMETERS = frozenset(
    {
        "epsilon_source",
        "lam_source",
        "n_groups",
        "groups",
        "feature_importance",
        "group_importance",
        "lam_blocks",
        "row_bound",
        "row_scale",
        "classes",
        "fit_intercept",
        "low_intercept",
        "tol",
        "max_iter",
    }
)


def selection_probabilities(utilities, epsilon, sensitivity=1.0):
    """Probabilities of the exponential mechanism: P(g) ∝ exp(ε·u_g / (2Δ)).

    Parameters
    ----------
    utilities : array-like of shape (G,)
        u_g (higher is better); finite.
    epsilon : float
        ε > 0; ``np.inf`` puts the mass uniformly on the maximisers (non-private argmax).
    sensitivity : float, default=1.0
        Δ: the largest change of any u_g when one record of the scored data is replaced.

    Returns
    -------
    ndarray of shape (G,)

    References
    ----------
    F. McSherry, K. Talwar. Mechanism design via differential privacy. FOCS 2007.
    """
    u = np.asarray(utilities, dtype=float)
    if u.ndim != 1 or u.size == 0 or not np.all(np.isfinite(u)):
        raise ValueError(f"utilities must be a non-empty 1-D array of finite numbers, got {utilities!r}")
    epsilon = check_epsilon(epsilon)
    if not (isinstance(sensitivity, numbers.Real) and math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity must be a finite number > 0, got {sensitivity!r}")
    if math.isinf(epsilon):
        best = u == u.max()
        return best / best.sum()
    logits = epsilon * u / (2.0 * float(sensitivity))
    return np.exp(logits - logsumexp(logits))


def exponential_mechanism(utilities, epsilon, sensitivity=1.0, random_state=None):
    """Draw an index g with probability :func:`selection_probabilities` (ε-DP for Δ-sensitive u)."""
    p = selection_probabilities(utilities, epsilon, sensitivity)
    return int(check_random_state(random_state).choice(p.size, p=p))


class PrivateParameterTuning(ClassifierMixin, BaseEstimator):
    """Choose hyper-parameters privately and release only the chosen model (Chaudhuri et al. 2011, §6).

    The training data are split at random into G + 1 disjoint parts, one per parameter
    setting of ``param_grid`` and one held out; candidate g is ``estimator`` with setting g,
    fitted on its own part; the winner is drawn by the exponential mechanism with utility
    −(number of errors on the held-out part), sensitivity 1. The whole is
    max(ε_train, ε_select)-DP for one sample (parallel composition over the disjoint
    parts), where ε_train is the candidates' guarantee.

    Works with any dpstack estimator that has ``get_params`` / ``set_params`` / ``fit`` /
    ``predict`` (PLR, PLR-FS, PST, PPTL-FS, SimComb). A transfer estimator
    (:class:`~dpstack.PrivateTransferStacking`, :class:`~dpstack.SimComb`) must have its
    source fitted first (``fit_source``): the candidates share that one source release
    (ε_s on the source, once) and vary only target-side parameters; the tuned data are
    then the target's (ledger parts ``D_t/…``).

    Parameters
    ----------
    estimator : dpstack estimator
        The template; it is copied, never fitted itself. Its ``random_state`` is replaced by
        an independent seed per candidate. Its label set should be public (``classes=[...]``):
        with ``classes=None`` every candidate records a step outside the guarantee.
    param_grid : dict or list of dicts
        As in :class:`sklearn.model_selection.GridSearchCV`: parameter names → lists of
        values; G = number of settings ≥ 1. The grid must be chosen without the private
        data; ``random_state`` cannot be in it.
    epsilon_select : float, default=1.0
        ε of the exponential mechanism on the held-out part; ``np.inf`` takes the best
        candidate (non-private, the ledger says so).
    random_state : None, int, SeedSequence or Generator
        Source of the split, the candidates' noise and the draw, each an independent spawned
        stream (``None``: fresh OS entropy for each). An int (or a ``SeedSequence``) stays in
        the fitted tuner as this parameter and regenerates every candidate's noise: whoever
        holds the tuner, or its pickle, can strip the noise from the released model. Share
        such an object only with those who may see the training data; publish its release
        (:func:`dpstack.release.save_release` writes ``random_state=None``) or set
        ``random_state=None`` on it once fitted. The template's own ``random_state`` is kept
        in the tuner too: for a transfer template, whose source was fitted with it, it
        regenerates the shared source release's noise, so set it to ``None`` after
        ``fit_source``.
    diagnostics : bool, default=False
        Keep the held-out error counts, the selection probabilities, the split, the part
        sizes and every candidate in ``diagnostics_``. Such an object is not private (ε = ∞ in its ledger);
        publish its release (:func:`dpstack.release.save_release`) instead.

    Attributes
    ----------
    best_estimator_ : estimator
        The chosen candidate, fitted on its part: the released model. It keeps no seed
        (its ``random_state`` is ``None``), and neither do the models nested in it.
    best_index_ : int
        Index of the chosen setting in ``ParameterGrid(param_grid)``: the exponential
        mechanism's output, released.
    best_params_ : dict
        That setting (public: the grid is public).
    classes_ : ndarray of shape (2,)
    n_features_in_ : int
    privacy_ : PrivacyLedger
        One entry per candidate part (``D/T_g/…``, or ``D_t/T_g/…`` for transfer, plus the
        shared source ``D_s``) and one for the selection (``D/V``); ``total()`` =
        max(ε_train, ε_select).
    diagnostics_ : sklearn.utils.Bunch
        Only with ``diagnostics=True``: ``errors`` (G,), ``probabilities`` (G,),
        ``part_sizes`` (G + 1,), ``parts`` (the record indices of T_1…T_G, V) and
        ``candidates`` (the G fitted candidates, each without its seed and fitted with
        ``diagnostics=True`` when it takes that parameter; ``candidates[best_index_]`` is
        ``best_estimator_``).

    References
    ----------
    K. Chaudhuri, C. Monteleoni, A. D. Sarwate. Differentially private empirical risk
    minimization. JMLR 12, 2011, §6 (private parameter tuning).
    F. McSherry, K. Talwar. Mechanism design via differential privacy. FOCS 2007.
    J. Liu, K. Talwar. Private selection from private candidates. STOC 2019 (an
    alternative that trains every candidate on all the data; not implemented here).

    Examples
    --------
    >>> import numpy as np
    >>> from dpstack import PrivateLogisticRegression
    >>> from dpstack.tuning import PrivateParameterTuning
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3)) / 3
    >>> y = (X[:, 0] > 0).astype(int)
    >>> tuner = PrivateParameterTuning(PrivateLogisticRegression(epsilon=1.0, classes=[0, 1]),
    ...                                {"lam": [1e-3, 1e-2, 1e-1]}, epsilon_select=1.0, random_state=0)
    >>> tuner = tuner.fit(X, y)
    >>> sorted(tuner.privacy_.per_part())
    ['D/T_0', 'D/T_1', 'D/T_2', 'D/V']
    >>> tuner.privacy_.total()
    1.0
    """

    _release_attributes = ("best_estimator_", "best_index_", "best_params_", "classes_", "n_features_in_", "privacy_")
    #: what a release file holds (the rest of ``_release_attributes`` is recomputed on load)
    _release_source = ("best_estimator_", "best_index_")

    _parameter_constraints = {
        "estimator": [HasMethods(["get_params", "set_params", "fit", "predict"])],
        "param_grid": [dict, list],
        "epsilon_select": EPSILON,
        "random_state": RANDOM_STATE,
        "diagnostics": BOOLEAN,
    }

    def __init__(self, estimator, param_grid, epsilon_select=1.0, random_state=None, diagnostics=False):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon_select = epsilon_select
        self.random_state = random_state
        self.diagnostics = diagnostics

    # ------------------------------------------------------------------ validation
    def _check_params(self):
        validate_params(self)
        est = self.estimator
        for method in ("get_params", "set_params", "fit", "predict"):
            if not callable(getattr(est, method, None)):
                raise TypeError(f"estimator must have {method}(); got {type(est).__name__}")
        releases = getattr(type(est), "_release_attributes", None) or ()
        if "privacy_" not in releases or "random_state" not in est.get_params(deep=False):
            raise TypeError(
                "estimator must be a private estimator that takes a random_state and releases its privacy "
                "ledger (privacy_), as dpstack's do: each candidate's ledger is composed into the tuning's; "
                f"got {type(est).__module__}.{type(est).__name__}, which declares no privacy ledger"
            )
        try:
            settings = list(ParameterGrid(self.param_grid))
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"param_grid must be a dict (or list of dicts) of parameter name -> non-empty list of values: {exc}"
            ) from None
        if not settings or (len(settings) == 1 and not settings[0]):
            raise ValueError(f"param_grid must hold at least one parameter setting, got {self.param_grid!r}")
        known = set(est.get_params(deep=False))
        transfer_with_source = callable(getattr(est, "fit_source", None))
        if transfer_with_source and not hasattr(est, "source_"):
            raise ValueError(
                f"estimator: {type(est).__name__} needs its source fitted first "
                "(estimator.fit_source(X_source, y_source)); the candidates share that release"
            )
        for setting in settings:
            for name in setting:
                if name not in known:
                    raise ValueError(f"param_grid names {name!r}, which is not a parameter of {type(est).__name__}")
                if name == "random_state":
                    raise ValueError("param_grid must not hold random_state: each candidate gets its own seed")
                if transfer_with_source and name in SOURCE_PARAMETERS:
                    raise ValueError(
                        f"param_grid names {name!r}, which the fitted source has fixed; "
                        "only target-side parameters can vary (refit the source to change it)"
                    )
        eps = check_epsilon(self.epsilon_select, "epsilon_select")
        check_diagnostics(self.diagnostics)
        check_random_state(self.random_state)  # the type and range checks
        return settings, eps, transfer_with_source

    # ------------------------------------------------------------------ fit
    @atomic_fit
    def fit(self, X, y):
        """Split, fit G candidates on disjoint parts, select one privately. Returns self."""
        settings, eps_select, transfer = self._check_params()
        # dense rows, one label per row (scikit-learn's checks and messages); the values are
        # left as they are (no dtype conversion): each candidate validates its part itself
        X, y = sklearn_validate_data(
            self, X, y, dtype=None, ensure_all_finite=False, ensure_min_samples=2, accept_sparse=False
        )
        y = check_class_labels(y)
        n = X.shape[0]
        # classes=None on the estimator: every candidate would read the label set from its own
        # part (a part of tiny data can hold one class); read it once from y (outside the
        # guarantee: PrivacyLeakWarning, ledger entry) and give it to every candidate
        shared_classes = None
        est_params = self.estimator.get_params(deep=False)
        if "classes" in est_params and est_params["classes"] is None:
            shared_classes, _ = resolve_classes(None, y, binary=True, estimator=type(self).__name__)
        elif "classes" in est_params:
            # every label, the held-out part's too, must be in the public label set (a label only
            # the held-out part holds would otherwise be counted as an error, not refused)
            resolve_classes(est_params["classes"], y, binary=True, estimator=type(self).__name__)
        G = len(settings)
        if n < 2 * (G + 1):
            raise ValueError(
                f"param_grid has G = {G} settings, so the data are split into G + 1 = {G + 1} parts; "
                f"n = {n} samples is too few (need at least {2 * (G + 1)})"
            )
        # randomness: the split, one seed per candidate, the draw — all independent streams
        # (None: fresh OS entropy for each; the chosen model keeps no seed, see below)
        split_ss, draw_ss, *cand_ss = spawn_streams(self.random_state, G + 2)
        parts = np.array_split(check_random_state(split_ss).permutation(n), G + 1)
        held_out = parts[G]
        candidates = []
        # with diagnostics=True every candidate keeps its own diagnostics too (the split of a
        # composed candidate, which its release does not hold)
        cand_diagnostics = self.diagnostics and "diagnostics" in est_params
        for g, setting in enumerate(settings):
            cand = copy.deepcopy(self.estimator)
            cand.set_params(**setting, random_state=cand_ss[g])
            if shared_classes is not None:
                cand.set_params(classes=shared_classes)
            if cand_diagnostics:
                cand.set_params(diagnostics=True)
            cand.fit(X[parts[g]], y[parts[g]])
            candidates.append(cand)
        errors = np.array([int(np.sum(c.predict(X[held_out]) != y[held_out])) for c in candidates])
        probs = selection_probabilities(-errors.astype(float), eps_select, 1.0)
        best = int(check_random_state(draw_ss).choice(G, p=probs))

        root_part = "D_t" if transfer else "D"
        ledger = PrivacyLedger()
        external = set()
        if transfer:
            ledger.extend(self.estimator.source_privacy_)
            external = {e.part for e in self.estimator.source_privacy_.entries}
        for g, cand in enumerate(candidates):
            for e in cand.privacy_.entries:
                if e.part in external:
                    continue  # the shared source release, recorded once above
                entry_part = part_name(root_part, g, e.part)
                if e.outside:
                    ledger.add_outside(e.mechanism, entry_part, e.note, unit=e.unit)
                else:
                    ledger.add(e.mechanism, entry_part, e.epsilon, unit=e.unit, note=e.note)
        record_classes(ledger, shared_classes is not None, root_part)
        ledger.add(
            "exponential mechanism (utility = -errors on V, sensitivity 1)",
            f"{root_part}/V",
            eps_select,
            "one sample",
            note=f"G = {G} candidates, each fitted on its own part {root_part}/T_g",
        )
        # the release: the chosen model without the stream its noise came from (with diagnostics,
        # every candidate is kept in that form: the noise of each can then be read back)
        chosen = release_only(candidates[best])
        if self.diagnostics:
            candidates = [release_only(c) for c in candidates]
        self.best_estimator_ = chosen
        self.best_index_ = best
        self.best_params_ = dict(settings[best])
        self.classes_ = chosen.classes_
        self.n_features_in_ = chosen.n_features_in_
        self.privacy_ = ledger
        record_diagnostics(
            self,
            ledger,
            f"{root_part}/V",
            errors=errors,
            probabilities=probs,
            part_sizes=np.array([p.size for p in parts]),
            parts=parts,
            candidates=candidates,
        )
        return self

    def _from_release(self):
        """Check a loaded release's chosen model against the grid and recompute the ledger (see :mod:`dpstack.release`).

        Each candidate's ledger follows from its parameters (``_release_ledger``), the chosen
        one's from its own release; the selection's spend is recomputed from ``epsilon_select``.
        """
        require_released(self, "best_estimator_", "best_index_")
        settings = list(ParameterGrid(self.param_grid))
        if not 0 <= self.best_index_ < len(settings):
            raise ReleaseFormatError(f"PrivateParameterTuning: best_index_ {self.best_index_} is not in the grid")
        best = self.best_estimator_
        setting = settings[self.best_index_]
        params = best.get_params(deep=False)
        template = self.estimator.get_params(deep=False)
        for k, v in template.items():
            expected = setting.get(k, v)
            if k in ("random_state", "diagnostics") or isinstance(v, BaseEstimator):
                continue
            if not _same_param(params.get(k), expected):
                raise ReleaseFormatError(
                    f"PrivateParameterTuning: best_estimator_ has {k}={params.get(k)!r}, the grid gives {expected!r}"
                )
        self.best_params_ = dict(setting)
        self.classes_ = best.classes_
        self.n_features_in_ = best.n_features_in_
        transfer = callable(getattr(best, "fit_source", None))
        root = "D_t" if transfer else "D"
        ledger = PrivacyLedger()
        external = set()
        if transfer:
            ledger.extend(best.source_privacy_)
            external = {e.part for e in best.source_privacy_.entries}
        for g, s in enumerate(settings):
            if g == self.best_index_:
                cand_ledger = best.privacy_
            elif hasattr(best, "_release_ledger"):
                other = copy.copy(best)
                for k, v in s.items():
                    setattr(other, k, v)
                cand_ledger = other._release_ledger()
            else:
                cand_ledger = best.privacy_
            for e in cand_ledger.entries:
                if e.part in external:
                    continue
                part = part_name(root, g, e.part)
                if e.outside:
                    ledger.add_outside(e.mechanism, part, e.note, unit=e.unit)
                else:
                    ledger.add(e.mechanism, part, e.epsilon, unit=e.unit, note=e.note)
        ledger.add(
            "exponential mechanism (utility = -errors on V, sensitivity 1)",
            f"{root}/V",
            float(self.epsilon_select),
            "one sample",
            note=f"G = {len(settings)} candidates, each fitted on its own part {root}/T_g",
        )
        self.privacy_ = ledger

    # ------------------------------------------------------------------ prediction
    def decision_function(self, X, *args, **kwargs):
        """The chosen model's ``decision_function``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X, *args, **kwargs)

    def predict(self, X, *args, **kwargs):
        """The chosen model's ``predict``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X, *args, **kwargs)

    def predict_proba(self, X, *args, **kwargs):
        """The chosen model's ``predict_proba``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_proba(X, *args, **kwargs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = False
        return tags


def _same_param(a, b):
    try:
        return bool(np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))) if a is not b else True
    except (TypeError, ValueError):
        return a == b
