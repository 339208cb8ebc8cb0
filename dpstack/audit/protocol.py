"""The audit protocol: what an estimator must offer to be audited, and a black-box check.

The audit never reads a mechanism's internals. It needs four things, which any
estimator — dpstack's or a user's — can provide:

1. **Parameters and a public ``fit``.** ``get_params`` / ``set_params`` (so the
   audit can clone it with a fresh ``random_state``), the claimed ``epsilon``, and
   ``fit(X, y, **fit_params)``, which the audit calls on every dataset it builds.
2. **A release.** The fitted attributes it publishes: the class attribute
   ``_release_attributes`` (a tuple of names) or a method ``release()`` returning
   a dict. The audit reads only those (:func:`release_of`).
3. **A privacy unit.** ``privacy_unit`` (a string) or the units of its ledger
   ``privacy_`` (:func:`privacy_unit`).
4. **Neighbours and noise.** How to build neighbouring datasets in that unit (by
   default :func:`~dpstack.audit.worst_case_neighbours`, replace one record), and,
   optionally, how the noise is read back from a release and the data:
   ``recover_noise(X, y, **fit_params)`` on the fitted object, returning
   a list of :class:`NoiseBlock` — one per independently drawn noise vector with
   its claimed scale. dpstack's own estimators get theirs from
   :mod:`dpstack.audit.laws`, which re-derives each noise from the claim (the public
   parameters and the papers' calibration), never from what the estimator says
   about itself.

5. **Optional, for estimators that fit several methods at once** (the multiparty classifier's
   vote, soft and avg): a class method ``fit_methods(methods, X, y, **fit_params, **params)``
   returning ``{method: fitted}``; the audit checks that the methods' noise vectors are
   independent when they are fitted together with one seed.

:func:`dpstack.audit.audit_estimator` runs every check on such an estimator and returns one report.
:class:`PrivateMechanism` states the required part as a :class:`typing.Protocol`.
With it, :func:`audit_release` runs a black-box statistical test on any mechanism
(fits on D and D', a distinguishing test on the releases, a lower bound on ε), and
:func:`dpstack.audit.noise_law_test` checks the law of the recovered noise.
"""

from __future__ import annotations

import copy
import dataclasses
import numbers
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from sklearn.base import clone

from dpstack.accounting import part_name as candidate_part
from dpstack.linear import FeatureSplitLogisticRegression, PrivateLogisticRegression
from dpstack.multiparty.estimator import MultipartyPrivateClassifier
from dpstack.stacking import PrivateStackingClassifier
from dpstack.transfer import PrivateTransferStacking, SimComb
from dpstack.tuning import PrivateParameterTuning

from .._validation import check_random_state
from ..accounting import PrivacyLedger
from .neighbours import worst_case_neighbours
from .statistical import epsilon_lower_bound_from_scores

__all__ = [
    "PrivateMechanism",
    "NoiseBlock",
    "release_of",
    "release_vector",
    "privacy_unit",
    "claimed_epsilon",
    "fit_clone",
    "audit_release",
    "split_of",
    "is_estimator",
    "declares_release",
    "public_fitted",
    "release_leaves",
    "public_leaves",
    "NO_MAP",
    "ledger_view",
]


@runtime_checkable
class PrivateMechanism(Protocol):
    """The part of the audit protocol every audited estimator implements.

    Attributes
    ----------
    epsilon : float
        The claimed ε (a constructor parameter).

    Methods
    -------
    get_params(deep=True), set_params(**params)
        scikit-learn's parameter interface; ``random_state`` must be a parameter.
    fit(X, y, **fit_params)
        The public fit; returns the fitted object.

    A fitted object also has either ``_release_attributes`` (class attribute, tuple of
    names) or ``release()`` (dict), and either ``privacy_unit`` or a ledger
    ``privacy_``. Optional: ``recover_noise(X, y, **fit_params)`` → list of
    :class:`NoiseBlock`.
    """

    epsilon: Any

    def get_params(self, deep: bool = True) -> dict: ...

    def set_params(self, **params): ...

    def fit(self, X, y, **fit_params): ...


@dataclass(frozen=True)
class NoiseBlock:
    """One independently drawn noise vector, recovered from a release.

    Attributes
    ----------
    name : str
        Which part of the mechanism drew it (e.g. ``"high PLR"``).
    noise : ndarray of shape (d,)
        The vector, recovered from the released parameters and the data.
    scale : float
        The claimed scale: the density is ∝ exp(−‖b‖/scale), so ‖b‖ ~ Gamma(d, scale)
        and b/‖b‖ is uniform on the sphere.
    """

    name: str
    noise: np.ndarray
    scale: float


def release_of(fitted):
    """The release of a fitted estimator: ``release()`` or its ``_release_attributes``."""
    if callable(getattr(fitted, "release", None)):
        return dict(fitted.release())
    names = getattr(type(fitted), "_release_attributes", None)
    if names is None:
        raise TypeError(f"{type(fitted).__name__} declares no release: give it _release_attributes or release()")
    return {name: getattr(fitted, name) for name in names if hasattr(fitted, name)}


def release_vector(fitted):
    """The floating-point numbers of the release, nested releases included, as one vector (in path order).

    A composed estimator's levels (``low_level_``, ``high_level_``, ``source_``, the tuner's
    ``best_estimator_``) contribute their own releases (:func:`release_leaves`).
    """
    parts = []
    for _path, value in sorted(release_leaves(fitted).items()):
        arr = np.asarray(value) if isinstance(value, (np.ndarray, float, np.floating)) else None
        if arr is not None and arr.dtype.kind == "f":
            parts.append(np.ravel(arr))
    return np.concatenate(parts) if parts else np.zeros(0)


def privacy_unit(fitted):
    """``privacy_unit`` of the estimator, else the units of its ledger ``privacy_``."""
    unit = getattr(fitted, "privacy_unit", None)
    if isinstance(unit, str):
        return unit
    ledger = getattr(fitted, "privacy_", None)
    if ledger is not None:
        return ", ".join(ledger.units)
    raise TypeError(f"{type(fitted).__name__} states no privacy unit (privacy_unit or a ledger privacy_)")


def claimed_epsilon(estimator):
    """The ε an (unfitted) estimator claims: its ``epsilon`` parameter (a transfer model's
    ``epsilon_target``; private tuning's max(ε of its candidates, ``epsilon_select``))."""
    params = estimator.get_params(deep=False)
    if "epsilon" in params:
        return float(params["epsilon"])
    if "epsilon_target" in params:  # transfer: the target's claim (a target record is what changes)
        return float(params["epsilon_target"])
    if "epsilon_select" in params and hasattr(params.get("estimator"), "get_params"):  # private tuning
        return max(claimed_epsilon(params["estimator"]), float(params["epsilon_select"]))
    raise TypeError(f"{type(estimator).__name__} has no epsilon parameter")


def fit_clone(template, X, y, seed, fit_params=None):
    """``clone(template)`` with ``random_state=seed``, fitted by its public ``fit``."""
    return clone(template).set_params(random_state=int(seed)).fit(X, y, **(fit_params or {}))


def split_of(fitted, X, y, fit_params=None):
    """Which rows a fitted stacking/transfer model put in D_l, D_h and the S_k.

    The split is drawn from ``random_state`` alone, before any data is read, so it is public
    given the seed — but a default object does not carry it. It is read from the object when
    the object has it (``low_index_`` … or ``diagnostics_``); otherwise from a twin fitted with
    the same parameters and seed and ``diagnostics=True`` (only its split is read).

    Returns
    -------
    low_index, high_index : ndarray
    sample_parts : list of ndarray or None (PST-S's S_k)
    """
    if hasattr(fitted, "low_index_"):
        return fitted.low_index_, fitted.high_index_, getattr(fitted, "sample_parts_", None)
    diag = getattr(fitted, "diagnostics_", None)
    if diag is None or "low_index" not in diag:
        diag = clone(fitted).set_params(diagnostics=True).fit(X, y, **(fit_params or {})).diagnostics_
    return diag["low_index"], diag["high_index"], diag.get("sample_parts")


def audit_release(estimator, X, y, neighbours=None, fit_params=None, n_runs=1000, confidence=0.95, random_state=0):
    """Black-box audit of any :class:`PrivateMechanism`: a lower bound on ε from its releases.

    For every neighbouring pair (D, D'), the estimator is fitted ``n_runs`` times on
    each with fresh seeds through its public ``fit``; each release is flattened
    (:func:`release_vector`) and projected on the direction in which the mean
    releases differ, estimated on a separate pilot of ``n_runs // 4`` fits per side.
    The threshold test of :func:`~dpstack.audit.epsilon_lower_bound_from_scores` turns
    the projections into ε_lo, which a mechanism that is ε-DP exceeds with
    probability at most 1 − confidence (Bonferroni over the pairs).

    Parameters
    ----------
    estimator : PrivateMechanism
    X, y : the dataset D the neighbours are built around.
    neighbours : callable or None
        ``neighbours(X, y)`` → dict name → (X_D, y_D, X_D', y_D'). ``None``: the
        replace-one pairs of :func:`~dpstack.audit.worst_case_neighbours` with the
        estimator's ``norm_bound`` (1 if it has none).
    fit_params : dict or None
        Extra arguments of ``fit``.
    n_runs : int
    confidence : float
    random_state : int or Generator

    Returns
    -------
    dict with ``epsilon`` (claimed), ``epsilon_lo`` (max over pairs), ``pair`` (where it
    was found), ``unit``, ``confidence`` and ``verdict`` ("pass" or "FAIL: ε_lo > ε").
    """
    rng = check_random_state(random_state)
    eps = claimed_epsilon(estimator)
    if neighbours is None:
        bound = float(estimator.get_params(deep=False).get("norm_bound", 1.0))

        def neighbours(X, y):
            return worst_case_neighbours(X, y, norm_bound=bound)

    pairs = neighbours(X, y)
    conf = 1.0 - (1.0 - confidence) / len(pairs)
    best, where, unit = 0.0, None, None
    pilot = max(n_runs // 4, 20)
    for name, (XD, yD, XP, yP) in pairs.items():
        seeds = rng.integers(0, 2**31 - 1, size=2 * (n_runs + pilot))
        fits_D = [fit_clone(estimator, XD, yD, s, fit_params) for s in seeds[: n_runs + pilot]]
        fits_P = [fit_clone(estimator, XP, yP, s, fit_params) for s in seeds[n_runs + pilot :]]
        unit = privacy_unit(fits_D[0])
        RD = np.array([release_vector(f) for f in fits_D])
        RP = np.array([release_vector(f) for f in fits_P])
        direction = RD[:pilot].mean(axis=0) - RP[:pilot].mean(axis=0)
        norm = np.linalg.norm(direction)
        direction = direction / norm if norm > 0 else np.eye(RD.shape[1])[0]
        res = epsilon_lower_bound_from_scores(RD[pilot:] @ direction, RP[pilot:] @ direction, conf, random_state=rng)
        if res.epsilon_lo >= best:
            best, where = res.epsilon_lo, name
    return {
        "epsilon": eps,
        "epsilon_lo": best,
        "pair": where,
        "unit": unit,
        "confidence": confidence,
        "verdict": "pass" if best <= eps else "FAIL: ε_lo > ε",
    }


# ====================================================================== walking a fitted object
def is_estimator(value):
    """Whether ``value`` looks like an estimator (it has ``get_params`` and ``fit``)."""
    return hasattr(value, "get_params") and hasattr(value, "fit")


def declares_release(value):
    """Whether ``value`` says what it releases (a ``release()`` method or ``_release_attributes``)."""
    return callable(getattr(value, "release", None)) or getattr(type(value), "_release_attributes", None) is not None


def public_fitted(value):
    """The public fitted attributes of ``value`` (names ending in ``_``) as a dict."""
    return {k: v for k, v in vars(value).items() if k.endswith("_") and not k.startswith("_")}


def _walk(value, path, out, mode, depth=0):
    if depth > 12:
        out[path] = f"<nested deeper than 12: {type(value).__name__}>"
        return
    if value is None or isinstance(value, (str, bool, numbers.Number, np.generic)):
        out[path] = value
    elif isinstance(value, np.ndarray):
        if value.dtype == object:
            for i, v in enumerate(value.ravel()):
                _walk(v, f"{path}[{i}]", out, mode, depth + 1)
        else:
            out[path] = value
    elif isinstance(value, PrivacyLedger):
        out[path] = tuple(tuple(sorted((k, str(v)) for k, v in r.items())) for r in value.to_records())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _walk(getattr(value, f.name), f"{path}.{f.name}", out, mode, depth + 1)
    elif isinstance(value, dict):
        for k in sorted(value, key=str):
            _walk(value[k], f"{path}[{k!r}]", out, mode, depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _walk(v, f"{path}[{i}]", out, mode, depth + 1)
    elif mode == "release" and declares_release(value):
        for k, v in sorted(release_of(value).items()):
            _walk(v, f"{path}.{k}", out, mode, depth + 1)
    elif mode == "all" and hasattr(value, "__dict__") and not callable(value):
        for k, v in sorted(vars(value).items()):
            _walk(v, f"{path}.{k}", out, mode, depth + 1)
    elif hasattr(value, "__dict__"):
        items = public_fitted(value) if is_estimator(value) else {k: v for k, v in vars(value).items() if k[:1] != "_"}
        for k, v in sorted(items.items()):
            _walk(v, f"{path}.{k}", out, mode, depth + 1)
    else:
        out[path] = f"<{type(value).__name__}>"


def release_leaves(fitted):
    """The release of a fitted estimator as a flat dict path → value, nested releases included."""
    out = {}
    for k, v in sorted(release_of(fitted).items()):
        _walk(v, k, out, "release")
    return out


def all_leaves(fitted):
    """Every attribute of a fitted estimator, private ones (``_name``) and those of nested objects
    included, as a flat dict path → value: what a user holding the object can read."""
    out = {}
    for k, v in sorted(vars(fitted).items()):
        _walk(v, k, out, "all")
    return out


def public_leaves(fitted):
    """Every public fitted attribute (name ending in ``_``) as a flat dict path → value, recursively."""
    out = {}
    for k, v in sorted(public_fitted(fitted).items()):
        _walk(v, k, out, "public")
    return out


# ====================================================================== the ledger's ε, level by level
#: what :func:`ledger_view` reports for a class whose ledger parts it cannot map to its levels
NO_MAP = "<no map from the ledger's parts to the levels of this class>"


def _part_eps(ledger):
    return {p: e for p, e in ledger.per_part(include_outside=False).items()}


def _with_eps(obj, eps, missing, part, **names):
    if eps is None:
        missing.append(part)
        return obj
    view = copy.copy(obj)
    for name in names or {"epsilon": None}:
        setattr(view, name, float(eps))
    return view


def ledger_view(fitted, part_name=lambda part: part, ledger=None):
    """A shallow copy of ``fitted`` whose levels carry the ε the ledger declares for their parts.

    Returns
    -------
    view, missing : the copy, and the parts the ledger has no entry for.
    """

    ledger = getattr(fitted, "privacy_", None) if ledger is None else ledger
    if ledger is None:
        return fitted, [NO_MAP]
    per = _part_eps(ledger)
    missing = []

    def eps(part):
        return per.get(part_name(part))

    if isinstance(fitted, PrivateParameterTuning):
        g = int(fitted.best_index_)
        root = "D_t" if any(p.startswith("D_t") for p in per) else "D"
        view = copy.copy(fitted)

        def inside(part):  # the candidate's parts lie in root/T_g; a shared source release keeps its own part
            name = candidate_part(root, g, part)
            return part if name not in per and part in per and not part.startswith(root) else name

        view.best_estimator_, miss = ledger_view(fitted.best_estimator_, inside, ledger)
        return view, miss
    if isinstance(fitted, (PrivateLogisticRegression, FeatureSplitLogisticRegression, MultipartyPrivateClassifier)):
        parts = [p for p in per] if isinstance(fitted, MultipartyPrivateClassifier) else ["D"]
        return _with_eps(fitted, eps(parts[0]) if parts else None, missing, parts[0] if parts else "D"), missing
    view = copy.copy(fitted)
    if isinstance(fitted, SimComb):
        es, et = eps("D_s"), eps("D_t")
        view = _with_eps(view, es, missing, "D_s", epsilon_source=None)
        view = _with_eps(view, et, missing, "D_t", epsilon_target=None)
        view.source_ = _with_eps(fitted.source_, es, [], "D_s")
        view.target_ = _with_eps(fitted.target_, et, [], "D_t")
        return view, missing
    if isinstance(fitted, PrivateTransferStacking):
        view.source_ = _with_eps(fitted.source_, eps("D_s"), missing, "D_s")
        view.low_level_ = _with_eps(fitted.low_level_, eps("D_t/D_t0"), missing, "D_t/D_t0")
        view.high_level_ = _with_eps(fitted.high_level_, eps("D_t/D_t1"), missing, "D_t/D_t1")
        return view, missing
    if isinstance(fitted, PrivateStackingClassifier):
        if isinstance(fitted.low_level_, list):
            view.low_level_ = [
                _with_eps(m, eps(f"D_l/S_{k + 1}"), missing, f"D_l/S_{k + 1}") for k, m in enumerate(fitted.low_level_)
            ]
        else:
            view.low_level_ = _with_eps(fitted.low_level_, eps("D_l"), missing, "D_l")
        view.high_level_ = _with_eps(fitted.high_level_, eps("D_h"), missing, "D_h")
        return view, missing
    if len(per) == 1 and "epsilon" in vars(fitted):  # a user's single mechanism: its one part
        part = next(iter(per))
        return _with_eps(fitted, per[part], missing, part), missing
    return fitted, [NO_MAP]
