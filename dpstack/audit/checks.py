"""One public entry point: :func:`audit_estimator` runs every check on any auditable estimator.

The checks of the other modules of :mod:`dpstack.audit` test the calibration of a mechanism
(the law of its noise, its exact privacy loss) as the estimator states it. The checks here look
at the object a user holds and at what ``fit`` does around the noise:

``fresh_entropy``
    Two fits with ``random_state=None`` draw independent noise: every part of the release that
    changes with the seed also differs between two default fits (a default seed is caught).
``no_seed``
    Nothing in a default fitted object regenerates its noise: no ``Generator``, ``SeedSequence``,
    bit generator, ``RandomState`` or non-``None`` seed anywhere in it, nested objects included.
``streams``
    The noise vectors of one fit — of its levels, domains and (for multiparty estimators) of the
    methods fitted together by ``fit_methods`` — are independent: correlation of their norms and
    directions over repeated fits, Bonferroni-corrected.
``function``
    ``decision_function`` / ``predict_proba`` / ``predict`` equal those of a predictor rebuilt
    from the release alone (on the data and on random inputs at several scales); for a linear
    release, the margin inside every bound is the function of the released ``coef_`` and
    ``intercept_``.
``attributes``
    Replacing one record (several positions, two kinds of replacement) with the seed fixed
    leaves every public attribute unchanged except those that change with the seed (the noisy
    release).
``law`` and ``exact``
    The law of the noise read back from real fits, and the exact privacy loss of every
    objective-perturbation level, against the ε the *ledger* declares for the level's part — not
    the ε a nested estimator carries in its own parameters. The law is tested by
    :func:`law_tests`: per block the exact test of the scale (the likelihood-ratio test within
    the claimed Gamma family), and per dimension, pooled over the blocks, the shape of the norm
    (Kolmogorov–Smirnov and the Gamma likelihood ratio), the direction and the precision. For private
    tuning, whose released candidate is chosen by its noise, the noise of every candidate is read
    from a twin fitted with the same seed and ``diagnostics=True`` (checked against the release and
    the error counts): a tuning fit gives G unselected draws, so it is fitted ⌈m/G⌉ times (at least
    20) where a single mechanism is fitted m times.
``neighbours``
    The same as ``attributes`` over the estimator's privacy unit: many record positions, source
    records of a transfer model, and for a multiparty model a whole party replaced, a party's
    size changed by one record, and an auxiliary row when the unit protects it.
``blackbox``
    A black-box lower bound on ε from the whole release vector (nested releases included):
    fits on D and on D' with a canary record (a far-away record with the other label, or a
    party's data relabelled), a learned distinguisher (logistic regression on the release
    vectors), a projection on the difference of the mean releases and, for PLR and PLR-FS, the
    likelihood ratio of each release under the declared law (the optimal test of the claim),
    Clopper–Pearson intervals on the two error rates (Jagielski et al. 2020; Tramèr et al. 2022;
    Bichsel et al. 2021).
``tuning``
    For :class:`~dpstack.tuning.PrivateParameterTuning`: the parts are disjoint, cover the data
    and do not depend on it, and the selection's exact privacy loss — the largest change of
    log P(index) when one held-out record changes, as the implementation computes P — stays
    within ``epsilon_select``.
``composition``
    The ledger's ε per domain (source and target of a transfer model) within the claimed ε of
    that domain; an object whose ledger records a step outside the guarantee fails.

**Family-wise error.** Every p-value the audit computes for one estimator (``law``, ``streams``,
``blackbox``) joins one weighted Holm procedure at level :data:`ALPHA`: when every claim holds,
the audit fails a genuine estimator with probability at most ``ALPHA`` whatever the number of
levels, blocks and canaries. Each statistical check has an equal share of the weight, split
equally over its tests. The other checks compare exact quantities and have no error rate.
:attr:`AuditReport.tests` lists every test with its raw and adjusted p-value.

What no check here can see is stated in the book's audit chapter.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
import numbers
import sys
import time
import types
import warnings

import numpy as np
import pandas as pd
from scipy import special, stats
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid

from dpstack.audit.exact import exact_privacy_loss, max_privacy_loss, output_vector, sample_outputs
from dpstack.audit.laws import recover_noise
from dpstack.audit.levels import composition_checks, mechanism_levels
from dpstack.audit.neighbours import neighbour_kwargs, worst_case_neighbours
from dpstack.audit.output import output_perturbation_audit, party_neighbours
from dpstack.audit.statistical import epsilon_lower_bound_from_scores, log_ratio_bound
from dpstack.audit.worst_case import adversarial_case
from dpstack.linear import FeatureSplitLogisticRegression, PrivateLogisticRegression
from dpstack.multiparty.estimator import MultipartyPrivateClassifier, fit_methods
from dpstack.release import SCHEMA_ATTRIBUTES, estimator_classes, from_release_dict, release_dict
from dpstack.stacking import PrivateStackingClassifier
from dpstack.theory import domain_guarantees
from dpstack.transfer import PrivateTransferStacking
from dpstack.tuning import selection_probabilities

from .._validation import check_random_state, spawn_streams
from .protocol import (
    NO_MAP,
    all_leaves,
    declares_release,
    is_estimator,
    ledger_view,
    public_fitted,
    public_leaves,
    release_leaves,
    release_of,
    split_of,
)

__all__ = [
    "AuditReport",
    "CHECKS",
    "PROFILES",
    "audit_estimator",
    "rebuild_from_release",
    "release_numbers",
    "seed_findings",
]

#: sizes of a run: the default (CI), ``power`` and ``thorough`` (more real fits for the law of the
#: noise: the sizes at which noise scaled by 0.8 and by 0.9 is caught, see the book's power table)
#: and the book's page
PROFILES = {
    "default": dict(n_runs=200, n_law_fits=60, n_stream_fits=40, n_draws=60, n_positions=3, n_unit_positions=12),
    "power": dict(n_runs=200, n_law_fits=200, n_stream_fits=40, n_draws=60, n_positions=3, n_unit_positions=12),
    "thorough": dict(n_runs=400, n_law_fits=800, n_stream_fits=60, n_draws=100, n_positions=4, n_unit_positions=20),
    "page": dict(n_runs=1000, n_law_fits=300, n_stream_fits=150, n_draws=200, n_positions=6, n_unit_positions=40),
}
#: the audit's family-wise error rate: a test rejects when its Holm-adjusted p-value (over every
#: p-value the audit computes for one estimator) is below this
ALPHA = 1e-3
#: confidence of the black-box lower bounds (Bonferroni over the canaries and distinguishers)
CONFIDENCE = 0.95
COLUMNS = ["check", "name", "statistic", "threshold", "verdict", "detail"]
TEST_COLUMNS = ["check", "test", "p", "adjusted p", "rejected"]
PASS, FAIL, NA = "pass", "FAIL", "not applicable"


# ====================================================================== the report
@dataclasses.dataclass(eq=False)
class AuditReport:
    """The result of :func:`audit_estimator`.

    Attributes
    ----------
    estimator : str
        The audited class.
    checks : pandas.DataFrame
        One row per check: ``check`` (key), ``name``, ``statistic``, ``threshold``,
        ``verdict`` ("pass", "FAIL" or "not applicable") and ``detail``.
    wall_time : float
        Seconds the audit took (elapsed).
    cpu_time : float
        CPU seconds of the process during the audit (on a shared machine, the better measure of
        the work done).
    tests : pandas.DataFrame
        Every p-value the audit computed, one row per test: ``check``, ``test``, ``p`` (raw),
        ``adjusted p`` (Holm over all the rows) and ``rejected`` (adjusted p < ``alpha``). A
        statistical check (``law``, ``streams``, ``blackbox``) fails when one of its tests is
        rejected.
    alpha : float
        The family-wise error rate: when every claim holds, the probability that the audit
        rejects any of its tests is at most ``alpha`` (Holm's weighted procedure, valid under any
        dependence between the tests; each statistical check has an equal share of the weight,
        split equally over its tests).
    """

    estimator: str
    checks: pd.DataFrame
    wall_time: float
    cpu_time: float = np.nan
    tests: pd.DataFrame = dataclasses.field(default_factory=lambda: pd.DataFrame(columns=TEST_COLUMNS))
    alpha: float = np.nan

    @property
    def passed(self):
        """True when no check failed."""
        return not bool((self.checks["verdict"] == FAIL).any())

    @property
    def failures(self):
        """The rows of the checks that failed."""
        return self.checks[self.checks["verdict"] == FAIL].reset_index(drop=True)

    def __repr__(self):
        failed = ", ".join(self.failures["check"]) or "none"
        return (
            f"AuditReport({self.estimator}: {'passed' if self.passed else 'FAILED'}; "
            f"{len(self.checks)} checks, failed: {failed}; {self.wall_time:.1f} s)"
        )


def _row(check, name, statistic, threshold, verdict, detail="", tests=None):
    """One row of the report; ``tests``: the (label, p-value) pairs of a statistical check, whose
    verdict :func:`audit_estimator` then sets from Holm's procedure over every test of the audit."""
    row = {
        "check": check,
        "name": name,
        "statistic": float(statistic) if statistic is not None else np.nan,
        "threshold": float(threshold) if threshold is not None else np.nan,
        "verdict": verdict,
        "detail": detail,
    }
    if tests:
        row["_tests"] = [(str(label), float(p)) for label, p in tests]
    return row


def _found_row(check, name, found, detail):
    """The one row of a check that fails when it finds anything: the statistic is the number found."""
    return [_row(check, name, len(found), 0, FAIL if found else PASS, detail)]


def holm(pvalues, weights=None):
    """Holm's step-down adjusted p-values, weighted (Holm 1979): reject test i at family-wise
    level α when its adjusted p-value is below α. Valid under any dependence between the tests.

    With weights w_i (normalised to sum to 1) the tests are taken in increasing order of p_i/w_i,
    and the j-th gets min(1, max over l ≤ j of (p_l/w_l)·Σ_{i ≥ l} w_i); equal weights give Holm's
    (m − j + 1)·p_(j).

    Parameters
    ----------
    pvalues : array-like of float
    weights : array-like of float > 0 or None
        Equal when ``None``.

    Returns
    -------
    ndarray of float, the adjusted p-values in the order given.
    """
    p = np.asarray(pvalues, dtype=float).ravel()
    m = p.size
    if m == 0:
        return p
    p = np.where(np.isnan(p), 1.0, p)
    w = np.ones(m) if weights is None else np.asarray(weights, dtype=float).ravel()
    if w.shape != (m,) or not np.all(w > 0):
        raise ValueError(f"weights must be {m} numbers > 0, got {weights!r}")
    w = w / w.sum()
    order = np.argsort(p / w, kind="stable")
    remaining = np.cumsum(w[order][::-1])[::-1]
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] / w[order] * remaining))
    out = np.empty(m)
    out[order] = adjusted
    return out


def _apply_holm(rows, alpha):
    """Holm over every test of every row; the statistical rows get their verdict from it.

    Returns the table of tests (:data:`TEST_COLUMNS`)."""
    index = [(i, label, p) for i, row in enumerate(rows) for label, p in row.get("_tests", ())]
    # each statistical check gets an equal share of the family's weight, split equally over its
    # tests: a check with many tests (the streams of K² pairs of levels) takes no power from another
    n_tests = {i: sum(1 for j, _, _ in index if j == i) for i, _, _ in index}
    weights = [1.0 / (len(n_tests) * n_tests[i]) for i, _, _ in index]
    adjusted = holm([p for _, _, p in index], weights)
    tests = pd.DataFrame(
        {
            "check": [rows[i]["check"] for i, _, _ in index],
            "test": [label for _, label, _ in index],
            "p": [p for _, _, p in index],
            "adjusted p": adjusted,
            "rejected": adjusted < alpha,
        },
        columns=TEST_COLUMNS,
    )
    for i, row in enumerate(rows):
        mine = [a for (j, _, _), a in zip(index, adjusted) if j == i]
        if not mine or row["verdict"] == NA:
            continue
        k = int(np.argmin(mine))
        label = [lab for j, lab, _ in index if j == i][k]
        row["statistic"], row["threshold"] = float(mine[k]), float(alpha)
        row["verdict"] = FAIL if mine[k] < alpha else PASS
        row["detail"] = (
            f"smallest Holm-adjusted p {mine[k]:.2g} ({label}; {len(mine)} of the audit's {len(index)} tests); "
            + row["detail"]
        )
    return tests


def _numeric(value):
    if isinstance(value, (bool, np.bool_)):
        return np.array([float(value)])
    if isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, (str, bytes)):
        try:
            return np.array([float(value)])
        except (TypeError, ValueError):
            return None
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return value.astype(float).ravel()
    return None


def _is_float(value):
    if isinstance(value, np.ndarray):
        return value.dtype.kind == "f" and value.size > 0
    return isinstance(value, (float, np.floating))


def release_numbers(fitted):
    """Every number of the release (nested releases included) as one vector, in path order."""
    parts = [_numeric(v) for _, v in sorted(release_leaves(fitted).items())]
    parts = [p for p in parts if p is not None]
    return np.concatenate(parts) if parts else np.zeros(0)


def _equal(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if (
            a.shape != b.shape
            or a.dtype.kind != b.dtype.kind
            and not (a.dtype.kind in "biuf" and b.dtype.kind in "biuf")
        ):
            return False
        if a.dtype.kind in "f":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return repr(a) == repr(b)


def _changed(a, b, exempt=()):
    keys = sorted(set(a) | set(b))
    return [k for k in keys if k not in exempt and (k not in a or k not in b or not _equal(a[k], b[k]))]


_RANDOM_TYPES = (np.random.Generator, np.random.SeedSequence, np.random.BitGenerator, np.random.RandomState)


def _seedlike(name):
    name = str(name).lower()
    return name in ("random_state", "rng", "generator", "bit_generator", "entropy") or "seed" in name


def seed_findings(fitted):
    """Where a fitted object holds something that can regenerate its noise.

    Every ``Generator``, ``SeedSequence``, bit generator or ``RandomState`` anywhere in the
    object (private attributes, nested estimators, lists, dicts, dataclasses included), and every
    attribute or parameter whose name says it is a seed (``random_state``, ``*seed*``, ``rng``)
    holding anything but ``None``.

    Returns
    -------
    list of str
        One ``path: what`` per finding (empty: nothing found).
    """
    found, seen = [], set()

    def walk(value, path, depth):
        if depth > 14 or id(value) in seen:
            return
        if isinstance(value, _RANDOM_TYPES):
            found.append(f"{path}: a {type(value).__name__}")
            return
        if value is None or isinstance(value, (str, bytes, numbers.Number, np.generic, np.ndarray, type)):
            return
        seen.add(id(value))
        if depth > 0 and is_estimator(value) and not public_fitted(value):
            return  # an unfitted template given as a parameter (e.g. the tuner's estimator): it drew nothing
        if isinstance(value, dict):
            items = list(value.items())
        elif isinstance(value, (list, tuple, set, frozenset)):
            items = list(enumerate(value))
        elif dataclasses.is_dataclass(value):
            items = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
        elif hasattr(value, "__dict__") and not inspect.ismodule(value) and not callable(value):
            items = list(vars(value).items())
        elif hasattr(value, "__dict__") and is_estimator(value):
            items = list(vars(value).items())
        else:
            return
        for k, v in items:
            where = f"{path}.{k}" if isinstance(k, str) else f"{path}[{k!r}]"
            if isinstance(k, str) and _seedlike(k) and v is not None and not isinstance(v, _RANDOM_TYPES):
                found.append(f"{where} = {v!r:.60}")
            walk(v, where, depth + 1)

    walk(fitted, type(fitted).__name__, 0)
    return found


def rebuild_from_release(fitted):
    """A new object of the same class holding the release alone (nested releases rebuilt the same way).

    Parameters are copied with ``random_state=None`` and ``diagnostics=False``; every released
    attribute is set, nothing else. A predictor that needs anything outside its release fails on
    the rebuilt object or predicts something else.
    """

    def rebuild(value):
        if is_estimator(value) and declares_release(value) and hasattr(value, "get_params"):
            params = dict(value.get_params(deep=False))
            for k in ("random_state", "diagnostics"):
                if k in params:
                    params[k] = None if k == "random_state" else False
            params = {k: clone(v) if is_estimator(v) else copy.deepcopy(v) for k, v in params.items()}
            new = type(value)(**params)
            for name, v in release_of(value).items():
                setattr(new, name, rebuild(v))
            for name in SCHEMA_ATTRIBUTES:
                if hasattr(value, name):
                    setattr(new, name, copy.deepcopy(getattr(value, name)))
            return new
        if isinstance(value, list):
            return [rebuild(v) for v in value]
        if isinstance(value, tuple):
            return tuple(rebuild(v) for v in value)
        return copy.deepcopy(value)

    return rebuild(fitted)


# ====================================================================== the audited setting
#: the most entries of X the audit takes (it refits on many copies of X)
MAX_AUDIT_ELEMENTS = 10**7


def _audit_arrays(X, y):
    """X, y as the dense float and 1-D label arrays the audit builds its neighbours from; a refusal
    naming what is wrong otherwise."""
    if hasattr(X, "toarray") and hasattr(X, "nnz"):
        raise TypeError(
            f"X: a scipy sparse matrix ({type(X).__name__}); the audit replaces whole rows of a dense array to build "
            "its neighbours, and dpstack's estimators take dense X: pass X.toarray()"
        )
    try:
        Xa = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"X: cannot be read as a 2-D array of numbers ({type(exc).__name__}: {exc}); rows of different lengths, "
            "or entries that are not numbers"
        ) from None
    if Xa.ndim != 2 or Xa.shape[0] < 2 or Xa.shape[1] < 1:
        raise ValueError(f"X: the audit needs a 2-D array with at least 2 rows and 1 column, got shape {Xa.shape}")
    if Xa.size > MAX_AUDIT_ELEMENTS:
        raise ValueError(
            f"X: {Xa.size} entries, more than the audit takes ({MAX_AUDIT_ELEMENTS}); audit on a sample of the rows "
            "(the checks need the data's shape, not its size)"
        )
    if not np.all(np.isfinite(Xa)):
        raise ValueError("X: NaN or infinite entries; the audit's neighbours and read-backs need finite data")
    ya = np.asarray(y)
    if ya.ndim != 1 or ya.shape[0] != Xa.shape[0]:
        raise ValueError(f"y: must be 1-D with one label per row of X ({Xa.shape[0]}), got shape {ya.shape}")
    return Xa, ya


class _Setup:
    """The audited estimator, its data and how to fit it; what it claims."""

    def __init__(self, estimator, X, y, fit_params, rng, profile):
        self.template = clone(estimator)
        params = self.template.get_params(deep=False)
        if "random_state" not in params:
            raise TypeError(f"{type(estimator).__name__} has no random_state parameter: the audit cannot seed its fits")
        if params.get("diagnostics"):
            self.template.set_params(diagnostics=False)
        self.X, self.y = _audit_arrays(X, y)
        self.fit_params = dict(fit_params)
        self.rng = rng
        self.size = profile
        self.name = type(estimator).__name__
        self.params = params
        self.multiparty = "parties" in self.fit_params
        self.transfer = "X_source" in self.fit_params and self.fit_params.get("X_source") is not None
        if "epsilon_source" in params and not self.transfer:
            raise ValueError(
                f"{self.name} is a transfer model: pass X_source=..., y_source=... to audit_estimator "
                "(the audit refits the source on every neighbour, source records included)"
            )
        self.tuning = "param_grid" in params and is_estimator(params.get("estimator"))
        # a tuner over a transfer model: its template carries the fitted source release every
        # candidate shares (a public input of the tuning, audited with the transfer model itself);
        # clone() would drop it, so every fit of the audit gets a copy of the user's
        self._inner = None
        if self.tuning and callable(getattr(params["estimator"], "fit_source", None)):
            inner = estimator.get_params(deep=False)["estimator"]  # the user's, not the clone's
            if not hasattr(inner, "source_"):
                raise ValueError(
                    f"estimator: the {type(inner).__name__} inside {self.name} needs its source fitted first "
                    "(estimator.fit_source(X_source, y_source)), as PrivateParameterTuning.fit does"
                )
            if self.fit_params:
                raise ValueError(
                    f"{self.name} over {type(inner).__name__} takes no {sorted(self.fit_params)}: its source is the "
                    "fitted release inside the estimator; audit the transfer model itself (with X_source, y_source) "
                    "for the source records"
                )
            self._inner = inner
            self.template.set_params(estimator=copy.deepcopy(inner))
        self._fitted = {}

    def clone(self):
        """A fresh unfitted copy of the audited estimator (a tuner keeps its fitted source release)."""
        est = clone(self.template)
        if self._inner is not None:
            est.set_params(estimator=copy.deepcopy(self._inner))
        return est

    # ---------------------------------------------------------------- fits
    def seed(self):
        return int(self.rng.integers(0, 2**31 - 1))

    def fit(self, seed, X=None, y=None, fit_params=None, **params):
        est = self.clone().set_params(random_state=seed, **params)
        return est.fit(
            self.X if X is None else X,
            self.y if y is None else y,
            **(self.fit_params if fit_params is None else fit_params),
        )

    def fitted(self):
        """One fit with a fixed seed, shared by the checks that only read it."""
        if "base" not in self._fitted:
            self._fitted["base"] = self.fit(self.seed())
        return self._fitted["base"]

    # ---------------------------------------------------------------- claims
    def claims(self):
        """Claimed ε per domain: {"target": ε_t, "source": ε_s} for transfer (for a tuner over a transfer model
        ε_t is max(ε_t, ε_select)), else {"D": ε}."""
        p = self.params
        if "epsilon_source" in p and "epsilon_target" in p:
            return {"source": float(p["epsilon_source"]), "target": float(p["epsilon_target"])}
        if self.tuning:
            inner = p["estimator"].get_params(deep=False)
            select = float(p["epsilon_select"])
            if "epsilon_source" in inner:  # over a transfer model: the shared source release keeps its own claim
                return {"source": float(inner["epsilon_source"]), "target": max(float(inner["epsilon_target"]), select)}
            return {"D": max(float(inner.get("epsilon", inner.get("epsilon_target", np.inf))), select)}
        if "epsilon" in p:
            return {"D": float(p["epsilon"])}
        raise TypeError(f"{self.name} has no epsilon parameter")

    def classes(self):
        f = self.fitted()
        classes = getattr(f, "classes_", None)
        return np.unique(self.y) if classes is None else np.asarray(classes)  # the audit's own (public) data

    # ---------------------------------------------------------------- neighbours
    def replaced(self, X, y, i, kind, rng):
        """X, y with record i replaced: ``far`` (far away, other label) or ``random`` (random row and label)."""
        classes = self.classes()
        Xp, yp = X.copy(), y.copy()
        scale = float(np.abs(X).max()) if X.size else 1.0
        if kind == "far":
            Xp[i] = 100.0 * scale * np.sign(X[i] + 0.5)
            yp[i] = classes[1] if y[i] == classes[0] else classes[0]
        else:
            Xp[i] = rng.normal(size=X.shape[1]) * scale
            yp[i] = classes[int(rng.integers(classes.size))]
        return Xp, yp

    def record_neighbours(self, n_positions, kinds=("far", "random")):
        """(label, X', y', fit_params') for one target record replaced at several positions."""
        out = []
        n = self.X.shape[0]
        positions = self.rng.choice(n, size=min(n_positions, n), replace=False)
        for i in positions:
            for kind in kinds:
                Xp, yp = self.replaced(self.X, self.y, int(i), kind, self.rng)
                out.append((f"record {int(i)} ({kind})", Xp, yp, self.fit_params, "target" if self.transfer else "D"))
        return out

    def source_neighbours(self, n_positions, kinds=("far", "random")):
        if not self.transfer:
            return []
        Xs = np.asarray(self.fit_params["X_source"], dtype=float)
        ys = np.asarray(self.fit_params["y_source"])
        out = []
        for i in self.rng.choice(Xs.shape[0], size=min(n_positions, Xs.shape[0]), replace=False):
            for kind in kinds:
                Xp, yp = self.replaced(Xs, ys, int(i), kind, self.rng)
                out.append(
                    (
                        f"source record {int(i)} ({kind})",
                        self.X,
                        self.y,
                        dict(self.fit_params, X_source=Xp, y_source=yp),
                        "source",
                    )
                )
        return out

    def party_neighbours(self, n_parties=2):
        """A whole party replaced, a party's size changed by one record (both ways), an auxiliary row."""
        parties = np.asarray(self.fit_params["parties"])
        labels = np.unique(parties)
        classes = self.classes()
        out = []
        scale = float(np.abs(self.X).max())
        for p in self.rng.choice(labels, size=min(n_parties, labels.size), replace=False):
            rows = np.flatnonzero(parties == p)
            Xp, yp = self.X.copy(), self.y.copy()
            Xp[rows] = self.rng.normal(size=(rows.size, self.X.shape[1])) * scale
            yp[rows] = np.where(self.y[rows] == classes[0], classes[1], classes[0])
            out.append((f"party {p!r} replaced", Xp, yp, self.fit_params, "D"))
            if rows.size > 1:  # one record fewer (the party stays non-empty)
                keep = np.ones(self.y.size, dtype=bool)
                keep[rows[-1]] = False
                out.append(
                    (
                        f"party {p!r} one record fewer",
                        self.X[keep],
                        self.y[keep],
                        dict(self.fit_params, parties=parties[keep]),
                        "D",
                    )
                )
            extra = self.rng.normal(size=(1, self.X.shape[1])) * scale
            out.append(
                (
                    f"party {p!r} one record more",
                    np.vstack([self.X, extra]),
                    np.r_[self.y, classes[int(self.rng.integers(classes.size))]],
                    dict(self.fit_params, parties=np.r_[parties, p]),
                    "D",
                )
            )
        if self.params.get("protect_aux") and self.fit_params.get("X_aux") is not None:
            Xa = np.asarray(self.fit_params["X_aux"], dtype=float).copy()
            Xa[0] = -100.0 * np.sign(Xa[0] + 0.5)
            out.append(("auxiliary row 0 replaced", self.X, self.y, dict(self.fit_params, X_aux=Xa), "D"))
        return out


# ====================================================================== (a) seeding
def check_fresh_entropy(s):
    a, b = s.fit(None), s.fit(None)
    k = 6
    seeded = [release_leaves(s.fit(s.seed())) for _ in range(k)]
    # the floating-point parts that take a new value at every one of k seeds: continuous noise (a
    # selected index or a random feature grouping, and what depends on them, take one of a few
    # values and are left out)
    noisy = [
        key
        for key in seeded[0]
        if _is_float(seeded[0][key])
        and all(key in leaves for leaves in seeded)
        and all(not _equal(seeded[i][key], seeded[j][key]) for i in range(k) for j in range(i + 1, k))
    ]
    la, lb = release_leaves(a), release_leaves(b)
    same = [k for k in noisy if k in la and k in lb and _equal(la[k], lb[k])]
    detail = f"{len(noisy)} released parts change with the seed; identical in two fits with random_state=None: " + (
        ", ".join(same[:6]) if same else "none"
    )
    return _found_row("fresh_entropy", "seeding: two default fits draw independent noise", same, detail)


def check_no_seed(s):
    found = seed_findings(s.fit(None))
    detail = "; ".join(found[:6]) + (f"; … ({len(found)} in all)" if len(found) > 6 else "") if found else "none found"
    return _found_row("no_seed", "seeding: nothing in the fitted object regenerates its noise", found, detail)


def _fit_methods(s, methods, seed):
    """The estimator's multi-method fit with one seed: its own ``fit_methods`` if it has one, else dpstack's."""
    own = getattr(type(s.template), "fit_methods", None)
    params = {k: v for k, v in s.template.get_params(deep=False).items() if k != "method"}
    params["random_state"] = seed
    fp = dict(s.fit_params)
    if callable(own):
        return own(methods, s.X, s.y, **fp, **params)

    if type(s.template) is not MultipartyPrivateClassifier:
        return None
    return fit_methods(methods, s.X, s.y, fp.pop("parties"), fp.pop("X_aux", None), **params)


def _correlation_p(r, m):
    """Two-sided p-value of |correlation| r over m pairs (t-distribution with m − 2 degrees of freedom)."""
    r = min(abs(float(r)), 1.0 - 1e-15)
    t = r * np.sqrt((m - 2) / (1.0 - r * r))
    return float(min(1.0, 2.0 * stats.t.sf(t, m - 2)))


def _critical_r(m, alpha):
    t = stats.t.ppf(1.0 - alpha / 2.0, m - 2)
    return float(t / np.sqrt(m - 2 + t * t))


def check_streams(s):

    m = s.size["n_stream_fits"]
    samples = {}
    if s.tuning:
        return [
            _row(
                "streams",
                "seeding: independent streams across levels, domains, methods",
                None,
                None,
                NA,
                "one released model (the chosen candidate)",
            )
        ]
    for _ in range(m):
        f = s.fit(s.seed())
        try:
            blocks = recover_noise(f, s.X, s.y, s.fit_params, {})
        except TypeError as exc:  # a class the audit cannot read the noise of
            return [
                _row(
                    "streams", "seeding: independent streams across levels, domains, methods", None, None, NA, str(exc)
                )
            ]
        for blk in blocks:
            samples.setdefault(blk.name, []).append(np.asarray(blk.noise, dtype=float))
    what = "levels and domains"
    if s.multiparty:
        methods = [mm for mm in ("vote", "soft", "avg") if mm != "avg" or s.params.get("local_estimator") is None]
        caches = {mm: {} for mm in methods}
        samples = {}
        for _ in range(m):
            fitted = _fit_methods(s, methods, s.seed())
            if fitted is None:
                break
            for mm, f in fitted.items():
                for blk in recover_noise(f, s.X, s.y, s.fit_params, caches[mm]):
                    samples.setdefault(f"method {mm}", []).append(np.asarray(blk.noise, dtype=float))
        what = "methods fitted together (fit_methods, one seed)"
    names = sorted(samples)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    if not pairs:
        return [
            _row(
                "streams",
                "seeding: independent streams across levels, domains, methods",
                None,
                None,
                NA,
                "one noise vector per fit",
            )
        ]
    k = 2 * len(pairs)
    r_crit = _critical_r(m, ALPHA / k)
    worst, where, tests = 0.0, "", []
    for a, b in pairs:
        A, B = np.array(samples[a]), np.array(samples[b])
        na, nb = np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=1)
        ua, ub = A[:, 0] / np.maximum(na, 1e-300), B[:, 0] / np.maximum(nb, 1e-300)
        for stat, label in (
            (stats.spearmanr(na, nb)[0], "norms"),
            (np.corrcoef(ua, ub)[0, 1], "first direction coordinates"),
        ):
            stat = 0.0 if not np.isfinite(stat) else abs(float(stat))
            tests.append((f"{a} vs {b} ({label})", _correlation_p(stat, m)))
            if stat > worst:
                worst, where = stat, f"{a} vs {b} ({label})"
    verdict = FAIL if worst > r_crit else PASS  # alone: Bonferroni; in the audit: Holm
    detail = f"{m} fits, {len(names)} noise vectors per fit ({what}); largest |correlation| {worst:.3f}: {where}"
    return [
        _row(
            "streams",
            "seeding: independent streams across levels, domains, methods",
            worst,
            r_crit,
            verdict,
            detail,
            tests=tests,
        )
    ]


# ====================================================================== (b) the released function
def _outputs(est, Z):
    out = {}
    for method in ("decision_function", "predict_proba", "predict"):
        fn = getattr(est, method, None)
        if callable(fn):
            out[method] = np.asarray(fn(Z))
    return out


def check_function(s):
    f = s.fitted()
    p = s.X.shape[1]
    base = float(np.linalg.norm(s.X, axis=1).mean()) or 1.0
    inputs = [("the data", s.X)] + [
        (f"random rows, norm ≈ {c:g}×", s.rng.normal(size=(40, p)) * (c * base / np.sqrt(p)))
        for c in (0.01, 0.3, 3.0, 30.0)
    ]
    worst, where = 0.0, ""
    rebuilt = {"release attributes": None}
    try:
        rebuilt["release attributes"] = rebuild_from_release(f)
    except Exception as exc:  # noqa: BLE001 - a release that cannot be rebuilt is the finding
        return [
            _row(
                "function",
                "released function: predictions = function of the release",
                np.inf,
                0,
                FAIL,
                f"cannot rebuild from the release: {type(exc).__name__}: {exc}",
            )
        ]

    if type(f) is estimator_classes().get(type(f).__name__):
        try:
            rebuilt["JSON release"] = from_release_dict(release_dict(f))
        except Exception as exc:  # noqa: BLE001 - a release that cannot be exported is the finding
            return [
                _row(
                    "function",
                    "released function: predictions = function of the release",
                    np.inf,
                    0,
                    FAIL,
                    f"the JSON release cannot be written or read back: {type(exc).__name__}: {exc}",
                )
            ]
    for label, other in rebuilt.items():
        for in_name, Z in inputs:
            want = _outputs(f, Z)
            try:
                got = _outputs(other, Z)
            except Exception as exc:  # noqa: BLE001
                return [
                    _row(
                        "function",
                        "released function: predictions = function of the release",
                        np.inf,
                        0,
                        FAIL,
                        f"the predictor rebuilt from the {label} fails: {type(exc).__name__}: {exc}",
                    )
                ]
            for method, v in want.items():
                g = got.get(method)
                if g is None or g.shape != v.shape:
                    diff = np.inf
                elif v.dtype.kind in "fc":
                    diff = float(np.max(np.abs(v - g) / (1.0 + np.abs(v)))) if v.size else 0.0
                else:
                    diff = 0.0 if np.array_equal(v, g) else np.inf
                if diff > worst:
                    worst, where = diff, f"{method} on {in_name} vs the {label}"
    # a linear release: inside every bound the margin is x·coef_ + intercept_
    coef = getattr(f, "coef_", None)
    lin = ""
    if (
        isinstance(coef, np.ndarray)
        and coef.ndim == 2
        and coef.shape == (1, p)
        and callable(getattr(f, "decision_function", None))
    ):
        t = 1e-3 * min(1.0, float(np.min(np.abs(np.r_[getattr(f, "importance_", [1.0])]))))
        E = np.vstack([np.zeros(p), t * np.eye(p)])
        m = np.asarray(f.decision_function(E), dtype=float).ravel()
        intercept = float(np.ravel(getattr(f, "intercept_", [0.0]))[0])
        slopes = (m[1:] - m[0]) / t
        scale = 1.0 + float(np.abs(coef).max()) + abs(intercept)
        err = max(float(np.max(np.abs(slopes - coef[0]))), abs(m[0] - intercept)) / scale
        lin = f"; margin inside the bounds vs x·coef_ + intercept_: {err:.1e}"
        if err > 1e-6 and err > worst:
            worst, where = err, "decision_function vs the released coef_ and intercept_"
    verdict = FAIL if worst > 1e-9 else PASS
    detail = (f"largest relative difference {worst:.2e} ({where})" if worst > 0 else "identical on every input") + lin
    return [_row("function", "released function: predictions = function of the release", worst, 1e-9, verdict, detail)]


# ====================================================================== (c), (e) public attributes
def _selection_leaves(leaves):
    return [k for k in leaves if k.split(".")[0].split("[")[0] in ("best_index_", "best_params_")]


def _deterministic_changes(s, neighbours, n_seeds=2, leaves=public_leaves, keep=lambda key: True):
    """For each neighbour: which attributes that do not change with the seed changed with the data.

    The neighbours are fitted with ``n_seeds`` base seeds in turn (each compared with the fit on D
    with the same seed); an attribute that differs between any two of the base fits and three more
    seeded fits on D changes with the seed and is exempt. ``leaves``: which attributes
    (:func:`~dpstack.audit.protocol.public_leaves` or ``all_leaves``); ``keep``: which changed
    paths to report.
    """
    seeds = [s.seed() for _ in range(n_seeds)]
    bases = [leaves(s.fit(seed)) for seed in seeds]
    noisy = set()
    for other in bases[1:] + [leaves(s.fit(s.seed())) for _ in range(3)]:
        noisy |= set(_changed(bases[0], other))
    findings, skipped = [], 0
    for i, (label, Xp, yp, fp, _domain) in enumerate(neighbours):
        seed, base = seeds[i % n_seeds], bases[i % n_seeds]
        other = leaves(s.fit(seed, Xp, yp, fp))
        sel = _selection_leaves(base)
        if sel and _changed({k: base[k] for k in sel}, {k: other.get(k) for k in sel}):
            skipped += 1  # another candidate selected: the rest is a function of that random output
            continue
        changed = [k for k in _changed(base, other, exempt=noisy) if keep(k)]
        if changed:
            findings.append(f"{label}: {', '.join(changed[:4])}")
    return findings, len(noisy), skipped


def _private_path(key):
    """Whether a leaf path goes through a private attribute (a segment named ``_…``)."""
    return any(part.startswith("_") for part in key.replace("[", ".").split("."))


def check_private(s):
    """Private attributes: what the object holds beyond its public attributes must not change with the data."""
    n_pos = s.size["n_positions"]
    neighbours = s.record_neighbours(n_pos) + s.source_neighbours(max(1, n_pos - 1))
    findings, n_noisy, skipped = _deterministic_changes(s, neighbours, leaves=all_leaves, keep=_private_path)
    detail = (
        f"{len(neighbours)} neighbours (one record replaced, two base seeds), every attribute of the object and "
        f"its nested objects, private ones included; {n_noisy} change with the seed and are exempt; private ones "
        "changed with the data: " + ("; ".join(findings[:4]) if findings else "none")
    )
    if skipped:
        detail += f"; {skipped} neighbours where another candidate was selected not compared"
    return _found_row("private", "private attributes: unchanged when one record changes", findings, detail)


def check_split(s):
    """A composed model's parts: disjoint (no record used twice) and chosen without looking at the data."""

    name = "composition: disjoint parts, split independent of the data"
    if s.tuning or s.multiparty or not isinstance(s.template, (PrivateStackingClassifier, PrivateTransferStacking)):
        return [_row("split", name, None, None, NA, "no split of the data into parts (one mechanism per domain)")]
    seed = s.seed()
    first = composition_checks(s.clone(), s.X, s.y, s.fit_params, random_state=seed)  # row 0 far, other label
    problems = []
    if not first["disjoint"]:
        problems.append("a record is in two parts (or twice in one)")
    if not first["data_independent_split"]:
        problems.append("row 0 replaced: the parts changed")

    def parts(X, y, fp):
        low, high, samples = split_of(s.fit(seed, X, y, fp, diagnostics=True), X, y, fp)
        return [np.asarray(p) for p in ([low] if samples is None else list(samples)) + [high]]

    base = parts(s.X, s.y, s.fit_params)
    classes = s.classes()
    neighbours = s.record_neighbours(s.size["n_positions"])
    for i in s.rng.choice(s.X.shape[0], size=min(s.size["n_positions"], s.X.shape[0]), replace=False):
        yp = s.y.copy()
        yp[i] = classes[1] if s.y[i] == classes[0] else classes[0]
        neighbours.append((f"label of record {int(i)} flipped", s.X, yp, s.fit_params, "D"))
    for label, Xp, yp, fp, _domain in neighbours:
        other = parts(Xp, yp, fp)
        if len(other) != len(base) or not all(np.array_equal(a, b) for a, b in zip(base, other)):
            problems.append(f"{label}: the parts changed")
    detail = (
        f"composition_checks and {len(neighbours)} more neighbours (records replaced, labels flipped), one seed; "
        f"{len(base)} parts of sizes {[int(p.size) for p in base]}; "
        + ("; ".join(problems[:4]) if problems else "disjoint, and the same on every neighbour")
    )
    return [_row("split", name, len(problems), 0, FAIL if problems else PASS, detail)]


#: the public canary datasets of the ``canaries`` check: rows of norm ``factor`` × the public bound
CANARIES = {
    "rows far inside the bound (norm 0.02 B)": "tiny",
    "rows at the corners of the cube, 20 B outside": "corners",
}


def canary_data(n_samples, n_features, bound=1.0, kind="tiny", random_state=0):
    """A public canary dataset of the user's shape, independent of the user's data.

    ``"tiny"``: every row of norm 0.02·B in a uniform direction (a mechanism that calibrates its
    noise from the data's largest norm adds 50 times too little noise here); ``"corners"``: every
    row ±20·B in each coordinate (norm 20·B·√p: clipping each coordinate instead of the row's norm
    leaves rows of norm B·√p). Labels alternate.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), in {0, 1}
    """
    rng = check_random_state(random_state)
    if kind == "tiny":
        u = rng.standard_normal((n_samples, n_features))
        X = 0.02 * bound * u / np.linalg.norm(u, axis=1, keepdims=True)
    elif kind == "corners":
        X = 20.0 * bound * rng.choice([-1.0, 1.0], size=(n_samples, n_features))
    else:
        raise ValueError(f"kind must be 'tiny' or 'corners', got {kind!r}")
    return X, np.arange(n_samples) % 2


#: the recovered noise of one seed may differ between datasets by the solvers' precision only
IDENTITY_TOL = 1e-5


def _noise_identity(s, datasets):
    """Largest relative difference between the noise vectors recovered, with one seed, on several
    datasets: the noise is drawn from the seed alone, so it may not change with the data. A noise
    scale (or a minimiser) that depends on the data shows as a difference far above the solvers'
    precision. Returns (difference, where)."""
    seed = s.seed()
    recovered = []
    for X, y, fp in datasets:
        view, _ = ledger_view(s.fit(seed, X, y, fp))
        try:
            recovered.append(
                {b.name: (np.asarray(b.noise, dtype=float), b.scale) for b in recover_noise(view, X, y, fp, {})}
            )
        except TypeError:
            return 0.0, "the noise cannot be read back"
    gap, where = 0.0, "identical"
    for other in recovered[1:]:
        for name, (b0, scale) in recovered[0].items():
            if name not in other or other[name][0].shape != b0.shape:
                return np.inf, f"{name}: another noise block"
            diff = float(np.linalg.norm(other[name][0] - b0)) / (float(scale) * np.sqrt(b0.size) + 1e-300)
            if diff > gap:
                gap, where = diff, name
    return gap, where


def _identity_p(gap):
    """The noise identity as a test of the family: p = 0 when it fails (a deterministic finding)."""
    return 0.0 if not gap <= IDENTITY_TOL else 1.0


def unequal_parties(parties):
    """The same number of parties, of very unequal sizes: party 0 takes half of the rows, the others
    share the rest (each keeps at least one row). A public canary assignment: a mechanism that
    weighs parties by their size behaves as claimed only when the sizes are equal."""
    labels = np.unique(np.asarray(parties))
    n, M = np.asarray(parties).size, labels.size
    if n < 2 * M:
        return None
    first = max(1, n - 2 * (M - 1), n // 2) if M > 1 else n
    first = min(first, n - (M - 1))
    rest = np.array_split(np.arange(n - first), M - 1) if M > 1 else []
    out = np.empty(n, dtype=labels.dtype)
    out[:first] = labels[0]
    for k, rows in enumerate(rest, start=1):
        out[first + rows] = labels[k]
    return out


def _party_canaries(s, name):
    """MPL: the law of the noise with the parties of very unequal sizes (:func:`unequal_parties`)."""
    parties = unequal_parties(s.fit_params["parties"])
    if parties is None:
        return [_row("canaries", name, None, None, NA, "too few rows to make the parties' sizes unequal")]
    fp = dict(s.fit_params, parties=parties)
    m = max(20, s.size["n_law_fits"])
    samples, scales, cache = {}, {}, {}
    for _ in range(m):
        f = s.fit(s.seed(), s.X, s.y, fp)
        view, missing = ledger_view(f)
        if missing:
            return [_row("canaries", name, None, None, NA, f"the ledger does not map onto the release: {missing}")]
        for blk in recover_noise(view, s.X, s.y, fp, cache):
            samples.setdefault(blk.name, []).append(blk.noise)
            scales[blk.name] = blk.scale
    tests, ratios = law_tests({k: np.array(v, dtype=float) for k, v in samples.items()}, scales)
    tests = [(f"unequal parties: {lab}", pv) for lab, pv in tests]
    gap, where = _noise_identity(s, [(s.X, s.y, s.fit_params), (s.X, s.y, fp)])
    tests.append((f"unequal parties: the same noise as on the user's parties, one seed ({where})", _identity_p(gap)))
    p_min = min((pv for _, pv in tests), default=1.0)
    verdict = FAIL if p_min * max(1, len(tests)) < ALPHA else PASS  # alone: Bonferroni; in the audit: Holm
    sizes = np.unique(parties, return_counts=True)[1]
    detail = f"{m} fits, parties of sizes {sizes.tolist()}; scale ratio {'; '.join(ratios[:2])}"
    return [_row("canaries", name, p_min, ALPHA, verdict, detail, tests=tests)]


def check_canaries(s):
    """The law of the noise on public canary datasets at the extremes of the norm bound."""
    name = "worst-case canaries: law of the noise on public data at the bound"
    if s.tuning:
        return [_row("canaries", name, None, None, NA, "the candidates' law is tested by the law check")]
    if s.multiparty:
        return _party_canaries(s, name)
    bound = _public_bound(s)
    m = max(20, s.size["n_law_fits"] // 2)
    tests, ratios = [], []
    classes = s.classes()
    used = []
    for label, kind in CANARIES.items():
        Xc, yc = canary_data(s.X.shape[0], s.X.shape[1], bound, kind, random_state=s.seed())
        yc = classes[yc]
        used.append((Xc, yc))
        samples, scales = {}, {}
        for _ in range(m):
            f = s.fit(s.seed(), Xc, yc)
            view, missing = ledger_view(f)
            if missing:
                return [_row("canaries", name, None, None, NA, f"the ledger does not map onto the levels: {missing}")]
            try:
                blocks = recover_noise(view, Xc, yc, s.fit_params, {})
            except TypeError as exc:
                return [_row("canaries", name, None, None, NA, str(exc))]
            for blk in blocks:
                samples.setdefault(blk.name, []).append(blk.noise)
                scales[blk.name] = blk.scale
        t, r = law_tests({k: np.array(v, dtype=float) for k, v in samples.items()}, scales)
        tests += [(f"{label}: {lab}", pv) for lab, pv in t]
        ratios += [f"{label}: {x}" for x in r[:2]]
    gap, where = _noise_identity(s, [(s.X, s.y, s.fit_params)] + [(Xc, yc, s.fit_params) for Xc, yc in used])
    tests.append((f"every canary: the same noise as on the user's data, one seed ({where})", _identity_p(gap)))
    p_min = min((pv for _, pv in tests), default=1.0)
    verdict = FAIL if p_min * max(1, len(tests)) < ALPHA else PASS  # alone: Bonferroni; in the audit: Holm
    detail = (
        f"{m} fits per canary dataset, bound B = {bound:g}; noise recovered with one seed on the user's data and "
        f"on each canary: largest relative difference {gap:.1e}; scale ratio {'; '.join(ratios[:4])}"
    )
    return [_row("canaries", name, p_min, ALPHA, verdict, detail, tests=tests)]


def check_attributes(s):
    n_pos = s.size["n_positions"]
    neighbours = s.record_neighbours(n_pos) + s.source_neighbours(max(1, n_pos - 1))
    findings, n_noisy, skipped = _deterministic_changes(s, neighbours)
    detail = (
        f"{len(neighbours)} neighbours (one record replaced, two base seeds); {n_noisy} attributes change with the "
        "seed and are exempt; changed with the data: " + ("; ".join(findings[:4]) if findings else "none")
    )
    if skipped:
        detail += f"; {skipped} neighbours where another candidate was selected not compared"
    return _found_row("attributes", "public attributes: unchanged when one record changes", findings, detail)


def check_neighbours(s):
    if s.multiparty:
        neighbours = s.party_neighbours()
        unit = "one party (all its records, its size)" + (", one auxiliary row" if s.params.get("protect_aux") else "")
    else:
        neighbours = s.record_neighbours(s.size["n_unit_positions"], kinds=("far",)) + s.source_neighbours(
            s.size["n_unit_positions"] // 2, kinds=("far",)
        )
        unit = "one sample at many positions" + (" (target and source)" if s.transfer else "")
    findings, _n_noisy, _ = _deterministic_changes(s, neighbours)
    detail = f"unit: {unit}; {len(neighbours)} neighbours; changed: " + (
        "; ".join(findings[:4]) if findings else "none"
    )
    return _found_row("neighbours", "neighbours over the privacy unit: public attributes unchanged", findings, detail)


# ====================================================================== (d) the ledger's ε
def _tuning_twin(s, f, seed):
    """Every candidate of one tuning fit as the tuner fitted it, with the rows it was fitted on.

    A tuner releases one candidate, chosen by the candidates' errors, which depend on their noise:
    the released noise is not a sample of the claimed law. The audit knows the seed it fitted
    with; a twin fitted with that seed and ``diagnostics=True`` keeps every candidate (each with
    its own diagnostics: the split of a composed candidate is not in its release). The twin must
    be the fit: the same released numbers, and error counts on the held-out part that the audit
    recounts from the twin's candidates. Every candidate's noise is then an unselected draw of
    its mechanism, read back like any level's.

    Returns
    -------
    list of (g, candidate, rows)

    Raises
    ------
    TypeError
        Naming what cannot be read (a tuner that keeps no candidates, or a twin that differs).
    """
    twin = s.fit(seed, diagnostics=True)
    diag = getattr(twin, "diagnostics_", None)
    candidates = None if diag is None else diag.get("candidates")
    if candidates is None:
        raise TypeError(
            f"{s.name} keeps no candidates in diagnostics_ with diagnostics=True: the noise of its candidates "
            "cannot be read back (the released one alone is a sample chosen by its noise)"
        )
    held_out = diag.parts[len(candidates)]
    errors = [int(np.sum(c.predict(s.X[held_out]) != s.y[held_out])) for c in candidates]
    if not np.array_equal(release_numbers(twin), release_numbers(f)) or not np.array_equal(errors, diag.errors):
        raise TypeError(
            f"{s.name} fitted again with the same seed and diagnostics=True releases something else, or its "
            "candidates do not make its error counts: its candidates cannot be read back"
        )
    return [(g, c, diag.parts[g]) for g, c in enumerate(candidates)]


def _candidate_view(f, g, candidate):
    """Candidate ``g`` of the tuning fit ``f`` carrying the ε the ledger declares for its part."""
    other = copy.copy(f)
    other.best_index_, other.best_estimator_ = g, candidate
    view, missing = ledger_view(other)
    return view.best_estimator_, missing


def check_law(s):

    m = s.size["n_law_fits"]
    if s.tuning:  # each fit gives G unselected draws: as many noise vectors as a single mechanism's m fits
        m = max(20, -(-m // len(ParameterGrid(s.params["param_grid"]))))
    samples, scales, missing = {}, {}, set()
    for _ in range(m):
        seed = s.seed()
        f = s.fit(seed)
        view, miss = ledger_view(f)
        missing |= set(miss)
        try:
            if s.tuning:  # every candidate, not only the released one
                blocks = []
                for g, cand, rows in _tuning_twin(s, f, seed):
                    cand, miss = _candidate_view(f, g, cand)
                    missing |= set(miss)
                    blocks += [
                        dataclasses.replace(b, name=f"candidate {g}: {b.name}")
                        for b in recover_noise(cand, s.X[rows], s.y[rows], {}, None)
                    ]
            else:
                blocks = recover_noise(view, s.X, s.y, s.fit_params, {})
        except TypeError as exc:  # a class the audit cannot read the noise of
            return [_row("law", "ledger ε: law of the noise", None, None, NA, str(exc))]
        for blk in blocks:
            samples.setdefault(blk.name, []).append(blk.noise)
            scales[blk.name] = blk.scale
    if NO_MAP in missing:
        return [_row("law", "ledger ε: law of the noise", None, None, NA, NO_MAP)]
    if missing:
        return [
            _row(
                "law",
                "ledger ε: law of the noise",
                np.inf,
                ALPHA,
                FAIL,
                f"the ledger declares no ε for: {', '.join(sorted(missing))}",
            )
        ]
    samples = {k: np.array(v, dtype=float) for k, v in samples.items() if len(v) >= 10}
    tests, ratios = law_tests(samples, scales)
    p_min = min((p for _, p in tests), default=1.0)
    verdict = FAIL if p_min * max(1, len(tests)) < ALPHA else PASS  # alone: Bonferroni; in the audit: Holm
    detail = f"{m} fits; scale ratio (measured/claimed) {'; '.join(ratios[:6])}"
    return [_row("law", "ledger ε: law of the noise", p_min, ALPHA, verdict, detail, tests=tests)]


def law_tests(samples, scales):
    """The tests of the law of the noise on real fits: (label, p-value) pairs, and the scale ratios.

    For every noise block (a level, a block of PLR-FS, a domain, a method):

    * **scale** — the exact test of the claimed scale: with ‖b_i‖ ~ Gamma(d, s) independent over
      the m fits, Σ_i ‖b_i‖/s ~ Gamma(m·d, 1), and the two-sided p-value of that sum. This is the
      likelihood-ratio test of the scale within the Gamma family (uniformly most powerful on
      each side), so it sees a noise scaled by c ≠ 1 with the most power a law test can have.

    Over every block (when there are several): the same exact test on the sum over all blocks,
    Σ_k Σ_i ‖b_ik‖/s_k ~ Gamma(m·Σ_k d_k, 1) — the most powerful test of a scale error shared by the
    blocks (one code path draws them all).

    Over the blocks of the same dimension d, pooled (each block's norms divided by its own claimed
    scale, so the pooled sample has one law):

    * **shape** — Kolmogorov–Smirnov of ‖b‖/s against Gamma(d, 1): a norm of another law with
      the right mean (Gaussian noise, a Gamma shape off by one) fails it;
    * **direction** — the direction uniform on the sphere: for d = 1 a binomial test of the sign,
      for d ≥ 2 Kolmogorov–Smirnov of the coordinates along e₁ and (1, …, 1)/√d against the law
      of a coordinate of a uniform unit vector (coordinate-wise noise fails it);
    * **precision** — the noise is drawn in double precision: a float32 draw leaves recovered
      noise within float32's rounding of a float32 number far more often than the 1 in ~60 of
      double-precision noise (binomial test, only when the read-back is accurate enough to tell).

    Pooling the shape and direction tests gives one test per dimension instead of one per block:
    more power for a law error shared by the blocks (they share the code that draws them), and a
    smaller family. Every p-value joins the audit's Holm procedure.

    Parameters
    ----------
    samples : dict of str -> ndarray of shape (m, d)
        The recovered noise vectors of each block.
    scales : dict of str -> float
        The claimed scale of each block.

    Returns
    -------
    tests : list of (str, float)
    ratios : list of str
        ``"block: mean ‖b‖ / (d·s)"``, 1 when the scale is right.
    """
    tests, ratios, pooled = [], [], {}
    total_all, dims_all = 0.0, 0
    for name, noise in samples.items():
        noise = np.atleast_2d(noise)
        m, d = noise.shape
        scale = float(scales[name])
        if not scale > 0:
            continue
        r = np.linalg.norm(noise, axis=1) / scale
        total = float(r.sum())
        law = stats.gamma(m * d)
        tests.append((f"{name}: scale (Σ‖b‖/s ~ Gamma(m·d))", min(1.0, 2.0 * min(law.cdf(total), law.sf(total)))))
        ratios.append(f"{name}: {total / (m * d):.2f}")
        pooled.setdefault(d, []).append((noise, r))
        total_all, dims_all = total_all + total, dims_all + m * d
    if len(ratios) > 1:  # one scale shared by every block: the most powerful test of a common scale error
        law = stats.gamma(dims_all)
        tests.append(("every block: scale (pooled)", min(1.0, 2.0 * min(law.cdf(total_all), law.sf(total_all)))))
    for d, parts in sorted(pooled.items()):
        noise = np.vstack([n for n, _ in parts])
        r = np.concatenate([rr for _, rr in parts])
        where = f"{len(parts)} block(s) of d = {d}"
        tests.append((f"{where}: shape of ‖b‖ (KS)", float(stats.kstest(r, stats.gamma(d).cdf).pvalue)))
        tests.append((f"{where}: shape of ‖b‖ (Gamma likelihood ratio)", _gamma_shape_p(r, d)))
        if d == 1:
            p_dir = float(stats.binomtest(int((noise[:, 0] > 0).sum()), noise.shape[0]).pvalue)
        else:
            u = noise / np.maximum(np.linalg.norm(noise, axis=1), 1e-300)[:, None]
            coord = stats.beta((d - 1) / 2, (d - 1) / 2)
            axes = [np.eye(d)[0], np.ones(d) / np.sqrt(d)]
            p_axes = [stats.kstest((u @ a + 1) / 2, coord.cdf).pvalue for a in axes]
            p_dir = min(1.0, 3 * min(p_axes + [_axis_concentration_p(u)]))
        tests.append((f"{where}: direction", p_dir))
        p_single = _single_precision_p(noise)
        if p_single is not None:
            tests.append((f"{where}: drawn in double precision", p_single))
    return tests, ratios


def _axis_concentration_p(u, n_reference=20000):
    """Two-sample Kolmogorov–Smirnov p-value of Σ_j u_j⁴ of unit vectors u against the same statistic
    of ``n_reference`` uniform directions (a fixed reference sample): noise drawn coordinate by
    coordinate (Laplace per coordinate) points along the axes more often than a uniform direction."""
    m, d = u.shape
    ref = np.random.default_rng(d).standard_normal((n_reference, d))  # the reference law, not a secret
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    return float(stats.ks_2samp((u**4).sum(axis=1), (ref**4).sum(axis=1)).pvalue)


def _gamma_shape_p(r, d):
    """p-value of "shape = d" for a sample r of norms, the scale left free: the likelihood-ratio
    test within the Gamma family (2·Δ log-likelihood ~ χ²(1)). A norm law with the claimed mean but
    another spread (a shape off by one, Gaussian noise) fails it long before Kolmogorov–Smirnov."""
    r = np.asarray(r, dtype=float)
    r = r[r > 0]
    if r.size < 10:
        return 1.0
    mean, mean_log = float(r.mean()), float(np.log(r).mean())

    def loglik(k):  # the Gamma log-likelihood per point at shape k, the scale at its MLE mean / k
        theta = mean / k
        return (k - 1) * mean_log - k - special.gammaln(k) - k * np.log(theta)

    s_stat = np.log(mean) - mean_log  # ≥ 0; the MLE solves log k − ψ(k) = s (Minka's fixed point)
    if not s_stat > 0:
        return 0.0
    k = (3 - s_stat + np.sqrt((s_stat - 3) ** 2 + 24 * s_stat)) / (12 * s_stat)
    for _ in range(50):
        step = (mean_log - np.log(mean) + np.log(k) - special.digamma(k)) / (
            k * k * (1.0 / k - special.polygamma(1, k))
        )
        k_new = 1.0 / (1.0 / k + step)
        if not np.isfinite(k_new) or k_new <= 0:
            break
        converged = abs(k_new - k) < 1e-12 * k
        k = k_new
        if converged:
            break
    lr = 2.0 * r.size * max(0.0, loglik(k) - loglik(float(d)))
    # Bartlett's correction: E[LR] ≈ 1 + 2/m under the null (measured for m = 10 … 60, d = 1 … 10)
    return float(stats.chi2.sf(lr / (1.0 + 2.0 / r.size), 1))


#: a recovered noise coordinate this close (relative) to a float32 number counts as one
_F32_TOL = 1e-10
#: the most a double-precision coordinate sits that close to a float32 number by chance: float32's
#: spacing is at least 2^-24 of the number, so ±tol falls in it with probability at most 2·tol·2^24
_F32_CHANCE = 2 * _F32_TOL * 2.0**24


def _single_precision_p(noise):
    """p-value of "drawn in double precision" from how many coordinates sit on float32 numbers."""
    x = np.asarray(noise, dtype=float).ravel()
    x = x[np.isfinite(x) & (np.abs(x) > 1e-30) & (np.abs(x) < 1e30)]
    if x.size < 20:
        return None
    near = np.abs(x.astype(np.float32).astype(float) - x) <= _F32_TOL * np.abs(x)
    return float(stats.binomtest(int(near.sum()), x.size, _F32_CHANCE, alternative="greater").pvalue)


def _exact_levels(s, view, f, seed):

    if s.tuning:
        # the released candidate on its own part; a transfer candidate's target levels only (its
        # source is the shared release inside the tuner's template, a public input here)
        try:
            g = int(f.best_index_)
            _, cand, rows = _tuning_twin(s, f, seed)[g]
        except TypeError:
            return None
        cand, _ = _candidate_view(f, g, cand)
        inner = types.SimpleNamespace(tuning=False, transfer=False, fit_params={}, X=s.X[rows], y=s.y[rows])
        return _exact_levels(inner, cand, cand, None)
    if isinstance(view, (PrivateLogisticRegression, FeatureSplitLogisticRegression)):
        return [("PLR" if isinstance(view, PrivateLogisticRegression) else "PLR-FS", view, s.X, s.y)]
    try:
        Xs, ys = (s.fit_params["X_source"], s.fit_params["y_source"]) if s.transfer else (None, None)
        levels = mechanism_levels(view, s.X, s.y, Xs, ys, "target")
        if s.transfer:
            levels += mechanism_levels(view, s.X, s.y, Xs, ys, "source")
    except TypeError:
        return None
    return levels


def _level_exact_loss(level, Xl, yl, n_draws, rng):
    """Largest exact loss of one objective-perturbation level as implemented (its calibration)."""

    worst = 0.0
    classes = getattr(level, "classes_", None)  # a level whose part drew one class still knows both
    classes = classes if classes is not None and np.size(classes) == 2 else None
    pairs = worst_case_neighbours(Xl, yl, index=0, classes=classes, **neighbour_kwargs(level))
    for XD, yD, XP, yP in pairs.values():
        est = _refit_like(level, XD, yD, rng)
        W = np.vstack([sample_outputs(est, XD, yD, n_draws, rng), sample_outputs(est, XP, yP, n_draws, rng)])
        worst = max(worst, max_privacy_loss(est, XD, yD, XP, yP, W))
    for kw in ({}, {"record_margin": -12.0}):
        case = adversarial_case(_unfitted_like(level), n_samples=np.asarray(Xl).shape[0], **kw)
        worst = max(worst, case.max_loss(n_draws, rng))
    return worst


def _actual_epsilon(level):
    """The ε the level's mechanism was calibrated with (its calibration), not what the ledger says."""
    cal = getattr(level, "calibration_", None)
    eps = getattr(cal, "epsilon", None)
    return float(level.get_params(deep=False)["epsilon"]) if eps is None else float(eps)


def _unfitted_like(level):
    est = clone(level)
    return est.set_params(epsilon=_actual_epsilon(level))


def _refit_like(level, X, y, rng):
    return _unfitted_like(level).set_params(random_state=int(rng.integers(2**31 - 1))).fit(X, y)


def check_exact(s):
    seed = s.seed()
    f = s.fit(seed)
    if s.multiparty:
        return [_exact_output(s, f)]
    view, missing = ledger_view(f)
    if NO_MAP in missing:
        return [_row("exact", "ledger ε: exact privacy loss per level", None, None, NA, NO_MAP)]
    if missing:
        return [
            _row(
                "exact",
                "ledger ε: exact privacy loss per level",
                np.inf,
                0,
                FAIL,
                f"the ledger declares no ε for: {', '.join(missing)}",
            )
        ]
    levels = _exact_levels(s, view, f, seed)
    if levels is None:
        return [
            _row(
                "exact",
                "ledger ε: exact privacy loss per level",
                None,
                None,
                NA,
                "no objective-perturbation levels known for this class",
            )
        ]
    worst, where, parts = -np.inf, "", []
    for name, level, Xl, yl in levels:
        loss = _level_exact_loss(level, Xl, yl, s.size["n_draws"], s.rng)
        claimed = float(level.epsilon)  # the ledger's, set by ledger_view
        parts.append(f"{name}: {loss:.3f} / ε {claimed:g}")
        if loss / claimed > worst:
            worst, where = loss / claimed, name
    verdict = FAIL if worst > 1 + 1e-9 else PASS
    return [
        _row(
            "exact",
            "ledger ε: exact privacy loss per level",
            worst,
            1.0,
            verdict,
            f"max loss / ledger ε, worst at {where}; " + "; ".join(parts),
        )
    ]


def _exact_output(s, f):
    """MPL: the exact maximum loss of the release on the worst-case party neighbours, against the ledger's ε."""

    view, missing = ledger_view(f)
    if missing:
        return _row(
            "exact",
            "ledger ε: exact privacy loss per level",
            np.inf,
            0,
            FAIL,
            f"the ledger declares no ε for: {', '.join(missing)}",
        )
    K = f.classes_.size
    D, Dp = party_neighbours(n_parties=7, party_size=3, n_aux=20, n_classes=K)
    template = clone(s.template)
    if "classes" in template.get_params(deep=False):
        template.set_params(classes=list(range(K)))
    res = output_perturbation_audit(template, D, Dp, n_runs=s.size["n_law_fits"], random_state=s.rng)
    loss = res["exact_max_loss"]
    ratio = loss / float(view.epsilon)
    verdict = FAIL if ratio > 1 + 1e-6 else PASS
    return _row(
        "exact",
        "ledger ε: exact privacy loss per level",
        ratio,
        1.0,
        verdict,
        f"worst-case party neighbours: loss {loss:.3f}, ledger ε {float(view.epsilon):g}",
    )


# ====================================================================== (f) black box
def _public_worst_case(s):
    """A neighbouring pair on public data where the release moves the most: every row far inside the
    bound (:func:`canary_data` "tiny": the data's curvature adds almost nothing to the ridge), and one
    record at the bound whose label is flipped (:func:`~dpstack.audit.worst_case_neighbours`). On the
    user's data the other rows' curvature shrinks what one record can move, and a black-box test sees
    a fraction of the claimed ε only. ``None`` where the audit does not know the bound."""
    if not isinstance(s.template, (PrivateLogisticRegression, FeatureSplitLogisticRegression)):
        return None
    Xc, yc = canary_data(s.X.shape[0], s.X.shape[1], _public_bound(s), "tiny", random_state=s.seed())
    classes = s.classes()
    if classes.size != 2:
        return None
    return worst_case_neighbours(Xc, classes[yc], index=0, **neighbour_kwargs(s.template))["label_flip"]


def _public_bound(s):
    """The public row bound the estimator states (norm_bound × row_scale; 1 when it states none)."""
    p = s.params
    return float(p.get("norm_bound", 1.0) or 1.0) * float(p.get("row_scale", 1.0) or 1.0)


def _canaries(s):
    """(label, (X, y, fit_params) of D, of D', claimed-ε domain) for the black-box test."""
    out = []
    if s.multiparty:
        for label, Xp, yp, fp, dom in s.party_neighbours(n_parties=1)[:1]:
            out.append((label, (s.X, s.y, s.fit_params), (Xp, yp, fp), dom))
        return out
    Xp, yp = s.replaced(s.X, s.y, 0, "far", s.rng)
    out.append(
        (
            "canary: record 0 far away, other label",
            (s.X, s.y, s.fit_params),
            (Xp, yp, s.fit_params),
            "target" if s.transfer else "D",
        )
    )
    worst = _public_worst_case(s)
    if worst is not None:
        out.append(
            (
                "canary: public rows far inside the bound, one record at the bound with its label flipped",
                (worst[0], worst[1], s.fit_params),
                (worst[2], worst[3], s.fit_params),
                "target" if s.transfer else "D",
            )
        )
    if s.transfer:
        Xs, ys = np.asarray(s.fit_params["X_source"], dtype=float), np.asarray(s.fit_params["y_source"])
        Xsp, ysp = s.replaced(Xs, ys, 0, "far", s.rng)
        out.append(
            (
                "canary: source record 0",
                (s.X, s.y, s.fit_params),
                (s.X, s.y, dict(s.fit_params, X_source=Xsp, y_source=ysp)),
                "source",
            )
        )
    return out


def _distinguish(RD, RP, conf, rng):
    """ε_lo of the learned distinguisher and of the mean-difference projection; the larger, with its name."""
    from sklearn.linear_model import LogisticRegression

    n = min(len(RD), len(RP))
    h = n // 2
    # non-finite entries (an ε = ∞ part) as indicators, finite values as they are
    bad = ~np.isfinite(np.vstack([RD, RP]))
    if bad.any():
        cols = bad.any(axis=0)
        RD = np.hstack([np.where(np.isfinite(RD), RD, 0.0), ~np.isfinite(RD[:, cols])])
        RP = np.hstack([np.where(np.isfinite(RP), RP, 0.0), ~np.isfinite(RP[:, cols])])
    train = np.vstack([RD[:h], RP[:h]])
    with np.errstate(over="ignore", invalid="ignore"):
        sd_all = train.std(axis=0)
        mu_all = train.mean(axis=0)
    keep = np.isfinite(sd_all) & np.isfinite(mu_all) & (sd_all > 1e-9 * (1.0 + np.abs(mu_all)))
    results = []
    if keep.any():
        mu, sd = mu_all[keep], sd_all[keep]
        Zt = (train[:, keep] - mu) / sd
        labels = np.r_[np.ones(h), np.zeros(h)]
        clf = LogisticRegression(C=1.0, max_iter=2000).fit(Zt, labels)
        sD = clf.decision_function((RD[h:n, keep] - mu) / sd)
        sP = clf.decision_function((RP[h:n, keep] - mu) / sd)
        results.append(
            (
                "logistic regression on the release vectors",
                epsilon_lower_bound_from_scores(sD, sP, conf, random_state=rng),
            )
        )
        direction = Zt[:h].mean(axis=0) - Zt[h:].mean(axis=0)
        nrm = np.linalg.norm(direction)
        if nrm > 0:
            pD = ((RD[h:n, keep] - mu) / sd) @ (direction / nrm)
            pP = ((RP[h:n, keep] - mu) / sd) @ (direction / nrm)
            results.append(
                ("mean-difference projection", epsilon_lower_bound_from_scores(pD, pP, conf, random_state=rng))
            )
    if not results:
        return 0.0, "no coordinate of the release varies", None, []
    name, best = max(results, key=lambda r: r[1].epsilon_lo)
    return best.epsilon_lo, name, best, results


def ratio_pvalue(counts, epsilon):
    """p-value of "ε ≤ ``epsilon``" from the counts of a threshold test on held-out runs.

    The smallest α at which the Clopper–Pearson lower bound on log(p_num / p_den) (the bound of
    :func:`~dpstack.audit.statistical.log_ratio_bound` at level 1 − α) exceeds ``epsilon``: the
    black-box test as a p-value, so it can join the audit's Holm procedure.

    Parameters
    ----------
    counts : tuple (k_num, n_num, k_den, n_den)
    epsilon : float

    Returns
    -------
    float in (0, 1]
    """
    k_num, n_num, k_den, n_den = counts

    def bound(log_alpha):
        return float(log_ratio_bound(k_num, n_num, k_den, n_den, math.exp(log_alpha)))

    if not bound(math.log(1.0 - 1e-12)) > epsilon:
        return 1.0
    lo, hi = math.log(1e-30), math.log(1.0 - 1e-12)  # below 1e-30 every family rejects alike
    if bound(lo) > epsilon:
        return math.exp(lo)
    for _ in range(60):  # the bound grows with α: bisect on log α
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if bound(mid) > epsilon else (mid, hi)
    return float(min(1.0, math.exp(hi)))


def _declared_density(s):
    """Whether the audit knows the density the estimator declares for its release (PLR, PLR-FS)."""
    return not (s.transfer or s.multiparty or s.tuning) and isinstance(
        s.template, (PrivateLogisticRegression, FeatureSplitLogisticRegression)
    )


def _likelihood_ratio_bound(s, D, Dp, WD, WP, conf):
    """The threshold test on the most powerful score there is when the declared law holds: the
    privacy loss log p(w | D) − log p(w | D') of each released w under the declared mechanism
    (:func:`~dpstack.audit.exact_privacy_loss`, the Neyman–Pearson statistic). Any score gives a
    valid lower bound; this one is optimal for the claim, so it reaches the largest ε_lo."""

    (X, y, _), (Xp, yp, _) = D, Dp
    reference = s.fit(s.seed(), X, y)
    sD = exact_privacy_loss(reference, X, y, Xp, yp, WD)
    sP = exact_privacy_loss(reference, X, y, Xp, yp, WP)
    return epsilon_lower_bound_from_scores(sD, sP, conf, random_state=s.rng)


def check_blackbox(s, progress=False):
    n = s.size["n_runs"]
    claims = s.claims()
    canaries = _canaries(s)
    conf = 1.0 - (1.0 - CONFIDENCE) / (2 * len(canaries))
    worst, rows_detail, verdict, tests = 0.0, [], PASS, []
    ratio_worst, worst_claim = -1.0, None
    for label, D, Dp, domain in canaries:
        it = range(n)
        if progress:
            from tqdm.auto import tqdm

            it = tqdm(it, desc=f"black box: {label}", leave=False)
        RD, RP, WD, WP = [], [], [], []
        declared = _declared_density(s)
        for _ in it:
            fD, fP = s.fit(s.seed(), *D), s.fit(s.seed(), *Dp)
            RD.append(release_numbers(fD))
            RP.append(release_numbers(fP))
            if declared:
                WD.append(output_vector(fD))
                WP.append(output_vector(fP))
        lens = {v.size for v in RD + RP}
        claim = claims.get(domain, claims.get("target", max(claims.values())))  # a tuned record: a target one
        if len(lens) > 1:  # the shape of the release depends on the data
            eps_lo, name, res = np.inf, "release length differs between D and D'", None
            tests.append((f"{label}: release length", 0.0))
        else:
            eps_lo, name, res, results = _distinguish(np.array(RD), np.array(RP), conf, s.rng)
            if declared:
                lr = _likelihood_ratio_bound(s, D, Dp, np.array(WD), np.array(WP), conf)
                results.append(("likelihood ratio under the declared law", lr))
                if lr.epsilon_lo > eps_lo:
                    eps_lo, name, res = lr.epsilon_lo, "likelihood ratio under the declared law", lr
            tests += [(f"{label}: {how}", ratio_pvalue(r.counts, claim)) for how, r in results]
        counts = "" if res is None else f", counts {res.counts}"
        rows_detail.append(f"{label}: ε_lo {eps_lo:.2f} vs ε {claim:g} ({name}{counts})")
        if eps_lo > claim:
            verdict = FAIL
        if eps_lo / claim > ratio_worst:  # the canary closest to (or furthest above) its own claim
            ratio_worst, worst, worst_claim = eps_lo / claim, eps_lo, claim
    # the largest ε_lo this many runs can show (every test-half run separated)
    half = n // 4

    reach = float(log_ratio_bound(half, half, 0, half, 1.0 - conf))
    detail = (
        f"{n} fits per side per canary, confidence {CONFIDENCE} (Bonferroni); largest ε_lo reachable {reach:.2f}; "
        + "; ".join(rows_detail)
    )
    return [
        _row(
            "blackbox",
            "black box: ε lower bound from the whole release",
            worst,
            worst_claim,
            verdict,
            detail,
            tests=tests,
        )
    ]


# ====================================================================== (g) tuning
def check_tuning(s):
    if not s.tuning:
        return [
            _row(
                "tuning",
                "tuning: disjoint parts, exact loss of the selection",
                None,
                None,
                NA,
                "not a parameter-tuning estimator",
            )
        ]
    eps = float(s.params["epsilon_select"])
    seed = s.seed()
    twin = s.fit(seed, diagnostics=True)
    parts = [np.asarray(p) for p in twin.diagnostics_.parts]
    flat = np.concatenate(parts)
    n = s.X.shape[0]
    disjoint = flat.size == np.unique(flat).size and np.array_equal(np.sort(flat), np.arange(n))
    p0 = np.asarray(twin.diagnostics_.probabilities, dtype=float)
    worst, where, same_parts = 0.0, "", True
    classes = s.classes()
    held_out = parts[-1]
    for i in held_out[:30]:
        for kind in ("label", "far"):
            if kind == "label":
                Xp, yp = s.X, s.y.copy()
                yp[i] = classes[1] if s.y[i] == classes[0] else classes[0]
            else:
                Xp, yp = s.replaced(s.X, s.y, int(i), "far", s.rng)
            other = s.fit(seed, Xp, yp, diagnostics=True)
            q = np.asarray(other.diagnostics_.probabilities, dtype=float)
            same_parts &= all(np.array_equal(a, b) for a, b in zip(parts, other.diagnostics_.parts))
            with np.errstate(divide="ignore", invalid="ignore"):
                loss = np.where((p0 > 0) | (q > 0), np.abs(np.log(p0) - np.log(q)), 0.0)
            loss = float(np.nan_to_num(loss, nan=np.inf).max())
            if loss > worst:
                worst, where = loss, f"held-out record {int(i)} ({kind})"
    # training records too: the selection must read them only through the candidates' releases
    # (post-processing); the audit recomputes P from its own refits of the candidates and the held-out part
    training = np.concatenate(parts[:-1]) if len(parts) > 1 else np.zeros(0, dtype=int)
    cases = [("D", s.X, s.y)]
    for i in s.rng.choice(training, size=min(s.size["n_positions"], training.size), replace=False):
        yp = s.y.copy()
        yp[i] = classes[1] if s.y[i] == classes[0] else classes[0]
        cases.append((f"training record {int(i)} (label)", s.X, yp))
        Xp, yp = s.replaced(s.X, s.y, int(i), "far", s.rng)
        cases.append((f"training record {int(i)} (far)", Xp, yp))
    utility_gap, utility_where = 0.0, ""
    for label, Xc, yc in cases:
        try:
            gap = _utility_gap(s, Xc, yc, seed, eps)
        except TypeError as exc:
            utility_gap, utility_where = np.nan, str(exc)
            break
        if gap > utility_gap:
            utility_gap, utility_where = gap, label
    utility_ok = not utility_gap > 1e-6  # nan (not recomputable) is not a failure
    ok = disjoint and same_parts and worst <= eps * (1 + 1e-9) and utility_ok
    detail = (
        f"{len(parts)} parts, disjoint and covering: {disjoint}; the same on every neighbour: {same_parts}; "
        f"largest |log P(g | D) − log P(g | D')| {worst:.3f} at {where} vs ε_select {eps:g}; "
        f"P recomputed from the candidates' releases and the held-out errors on D and {len(cases) - 1} neighbours "
        f"with a training record changed: largest |log P − log P_audit| {utility_gap:.2g}"
        + (f" ({utility_where})" if utility_where else "")
    )
    return [
        _row("tuning", "tuning: disjoint parts, exact loss of the selection", worst, eps, PASS if ok else FAIL, detail)
    ]


def _utility_gap(s, X, y, seed, eps):
    """Largest |log P(g) − log P_audit(g)|: the tuner's selection probabilities (read from a twin with
    ``diagnostics=True``) against those the audit computes itself from the exponential mechanism on
    the held-out errors of the candidates it refits with the tuner's seeds (candidate g gets stream
    g + 2 of ``spawn_streams(random_state, G + 2)``)."""

    twin = s.fit(seed, X, y, diagnostics=True)
    parts = [np.asarray(p) for p in twin.diagnostics_.parts]
    settings = list(ParameterGrid(s.params["param_grid"]))
    streams = spawn_streams(seed, len(settings) + 2)
    held_out = parts[-1]
    inner = s.clone().get_params(deep=False)["estimator"]
    errors = []
    for g, setting in enumerate(settings):
        cand = copy.deepcopy(inner).set_params(**setting, random_state=streams[2 + g])
        if "classes" in cand.get_params(deep=False) and cand.get_params(deep=False)["classes"] is None:
            cand.set_params(classes=list(twin.classes_))
        cand.fit(X[parts[g]], y[parts[g]])
        errors.append(int(np.sum(cand.predict(X[held_out]) != y[held_out])))
    mine = selection_probabilities(-np.asarray(errors, dtype=float), eps, 1.0)
    theirs = np.asarray(twin.diagnostics_.probabilities, dtype=float)
    if theirs.shape != mine.shape:
        raise TypeError("the tuner's selection probabilities do not have one entry per setting")
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where((mine > 0) | (theirs > 0), np.abs(np.log(mine) - np.log(theirs)), 0.0)
    return float(np.nan_to_num(gap, nan=np.inf).max())


# ====================================================================== (h) composition
def check_composition(s):

    f = s.fitted()
    ledger = getattr(f, "privacy_", None)
    if ledger is None:
        return [
            _row("composition", "composition: the ledger's ε per domain within the claim", None, None, NA, "no ledger")
        ]
    claims = s.claims()
    if "source" in claims:
        spent = domain_guarantees(ledger)
        outside = [e for e in ledger.entries if e.outside]
        if outside:
            spent = {k: math.inf for k in spent}
    else:
        spent = {"D": ledger.total()}
    ratios = {k: spent[k] / claims[k] for k in claims}
    worst = max(ratios.values())
    detail = "; ".join(f"{k}: ledger ε {spent[k]:g} vs claimed {claims[k]:g}" for k in claims)
    return [
        _row(
            "composition",
            "composition: the ledger's ε per domain within the claim",
            worst,
            1.0,
            FAIL if worst > 1 + 1e-12 else PASS,
            detail,
        )
    ]


#: key → (function, what it looks at); the order of the report
CHECKS = {
    "fresh_entropy": check_fresh_entropy,
    "no_seed": check_no_seed,
    "streams": check_streams,
    "function": check_function,
    "attributes": check_attributes,
    "private": check_private,
    "neighbours": check_neighbours,
    "split": check_split,
    "law": check_law,
    "canaries": check_canaries,
    "exact": check_exact,
    "blackbox": check_blackbox,
    "tuning": check_tuning,
    "composition": check_composition,
}


def audit_estimator(estimator, X, y, checks=None, random_state=0, profile="default", progress=None, **fit_params):
    """Audit any estimator that implements the audit protocol; one row per check.

    Parameters
    ----------
    estimator : estimator
        Fitted or not (it is cloned; it is never modified). Any dpstack estimator — PLR,
        PLR-FS, :class:`~dpstack.PrivateStackingClassifier`, :class:`~dpstack.PrivateTransferStacking`,
        :class:`~dpstack.SimComb`, :class:`~dpstack.MultipartyPrivateClassifier`,
        :class:`~dpstack.tuning.PrivateParameterTuning` — or a subclass of one; see
        :mod:`dpstack.audit.protocol` for what a user's own class must offer.
    X, y : array-like
        A dataset the checks build their neighbours around (public or synthetic data of the
        shape the estimator is used on; :func:`~dpstack.audit.audit_cases` gives small ones).
    checks : None, str or list of str
        Keys of :data:`CHECKS` to run (default: all).
    random_state : int or Generator
        Seeds every fit and draw of the audit.
    profile : {"default", "power", "thorough", "page"} or dict
        Sizes of the run (:data:`PROFILES`): "default" is small enough for CI; "power" and
        "thorough" fit the law of the noise on 200 and 800 real fits (the sizes at which noise
        scaled by 0.8 and by 0.9 is caught, see the book's power table); "page" is the book's.
    progress : bool or None
        A progress bar (tqdm) over the checks and the black-box fits; ``None`` shows it in a
        terminal when the black-box test makes at least 1,000 fits per side.
    **fit_params
        Passed to ``fit`` (``X_source``, ``y_source`` for transfer; ``parties``, ``X_aux`` for MPL).

    Returns
    -------
    AuditReport
        ``.passed``, ``.checks`` (DataFrame: check, name, statistic, threshold, verdict, detail),
        ``.failures``, ``.wall_time``, ``.tests`` (every p-value, Holm-adjusted) and ``.alpha``.
        A statistical check's statistic is its smallest Holm-adjusted p-value and its threshold
        ``alpha``: over every p-value of the audit the family-wise error rate is at most
        ``alpha`` (:data:`ALPHA`).

    Raises
    ------
    TypeError
        X is a scipy sparse matrix (pass ``X.toarray()``), or the estimator has no
        ``random_state``.
    ValueError
        X is not a finite 2-D array of numbers, y is not one label per row, a transfer model
        comes without ``X_source``, a tuner over a transfer model without its fitted source.

    Examples
    --------
    >>> from dpstack import PrivateLogisticRegression
    >>> from dpstack.audit import audit_data, audit_estimator
    >>> X, y = audit_data()
    >>> report = audit_estimator(PrivateLogisticRegression(epsilon=1.0, lam=0.05, classes=[0, 1]), X, y)
    >>> report.passed, len(report.checks)
    (True, 14)

    A transfer model takes its source data, a multiparty model its parties, as ``fit`` does:
    ``audit_estimator(SimComb(classes=[0, 1]), X, y, X_source=Xs, y_source=ys)``.

    References
    ----------
    M. Jagielski, J. Ullman, A. Oprea. Auditing differentially private machine learning: how
    private is private SGD? NeurIPS 2020.
    F. Tramèr, A. Terzis, T. Steinke, S. Song, M. Jagielski, N. Carlini. Debugging differential
    privacy: a case study for privacy auditing. arXiv:2202.12219, 2022.
    B. Bichsel, S. Steffen, I. Bogunovic, M. Vechev. DP-Sniper: black-box discovery of
    differential privacy violations using classifiers. IEEE S&P 2021.
    """
    start, cpu = time.perf_counter(), time.process_time()
    size = dict(PROFILES[profile]) if isinstance(profile, str) else dict(PROFILES["default"], **profile)
    if isinstance(checks, str):
        checks = [checks]
    keys = list(CHECKS) if checks is None else list(checks)
    unknown = [k for k in keys if k not in CHECKS]
    if unknown:
        raise ValueError(f"checks: unknown check(s) {unknown}; choose from {list(CHECKS)}")
    rng = check_random_state(random_state)
    setup = _Setup(estimator, X, y, fit_params, rng, size)
    show = (size["n_runs"] >= 1000 and sys.stderr.isatty()) if progress is None else bool(progress)
    iterator = keys
    if show:
        from tqdm.auto import tqdm

        iterator = tqdm(keys, desc=f"audit {setup.name}")
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key in iterator:
            fn = CHECKS[key]
            rows += fn(setup, progress=show) if key == "blackbox" else fn(setup)
    tests = _apply_holm(rows, ALPHA)
    table = pd.DataFrame(rows, columns=COLUMNS)
    return AuditReport(
        setup.name, table, time.perf_counter() - start, time.process_time() - cpu, tests=tests, alpha=ALPHA
    )
