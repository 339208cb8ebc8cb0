"""The papers' methods on your own data: PLR, PST-S, PST-F and, given a source, PPTL-FS and SimComb.

:func:`run_own_data` reads a table (CSV with a label column, or a NumPy ``.npy`` array with the
label in one column), splits it at random into a training and a test part in each repeat, fits
every method at every ε of a grid on the training part, and scores it by test AUC. It returns
the per-repeat rows, a summary with 95 % t-intervals (:func:`dpstack.companion.tables.paper_vs_ours` and
:func:`dpstack.companion.plotting.plot_mean_with_spread` show them as the book's pages do) and the privacy
ledger of one fitted model.

What the guarantee needs from you, and what this function does with it:

* **The label set is public** (``classes``): the models never read it from the data.
* **The row-norm bound is public** (``norm_bound``): rows are divided by it, then clipped to norm
  1 inside each fit (a public constant, so inside the guarantee).
* **Feature groups or importances are public** (``groups`` / ``feature_importance``: e.g. from
  domain knowledge or another data set). ``feature_importance="variance"`` computes them from
  the private training rows instead: outside the guarantee, warned and listed.
* **λ is public** (``lam``, fixed in advance). ``lam_grid`` chooses λ by validation AUC on a third
  of the private training rows, as the papers do: outside the guarantee, warned and listed
  (:class:`dpstack.tuning.PrivateParameterTuning` is the private alternative).
* The test AUCs are statistics of held-out private rows; they are not private either (they are
  what you look at, not what you publish).

Every step outside the guarantee raises a :class:`dpstack.base.PrivacyLeakWarning` and is listed
in :attr:`OwnDataResult.outside_guarantee`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpstack import PrivateLogisticRegression, PrivateStackingClassifier, PrivateTransferStacking, SimComb
from dpstack.base import PrivacyLeakWarning
from dpstack.companion.papers.open_choices import select_on_scores
from dpstack.companion.plotting import color_for, panels, plot_mean_with_spread
from dpstack.companion.stats import mean_interval
from dpstack.mechanisms import SMALLEST_EPSILON
from dpstack.metrics import roc_auc_score

__all__ = ["OwnDataResult", "load_table", "run_own_data", "summarize", "method_label", "plot_own_data", "METHODS"]

#: The methods, in the order of the table; the transfer methods need a source.
METHODS = ("PLR", "PST-S", "PST-F", "PPTL-FS", "SimComb")
TRANSFER = ("PPTL-FS", "SimComb")


def load_table(path, label, feature_names=None):
    """``(X, y, feature_names)`` from a CSV (``label``: a column name) or a ``.npy`` array (``label``: a column index).

    Every feature column must be numeric; the label column may hold any values (the public
    label set decides which is positive). Rows with a missing value are refused (say how to
    fill them before: imputing from the private data is a step outside the guarantee).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file {str(path)!r} does not exist")
    if path.suffix == ".npy":
        arr = np.load(path, allow_pickle=False)
        if arr.ndim != 2:
            raise ValueError(f"{path.name}: a .npy table must be 2-D, got shape {arr.shape}")
        if not isinstance(label, numbers.Integral) or not -arr.shape[1] <= label < arr.shape[1]:
            raise ValueError(
                f"label must be a column index of the {arr.shape[1]} columns of {path.name}, got {label!r}"
            )
        label = int(label) % arr.shape[1]
        X = np.delete(arr, label, axis=1).astype(float)
        y = arr[:, label]
        names = list(feature_names) if feature_names is not None else [f"x{i}" for i in range(X.shape[1])]
    elif path.suffix == ".csv":
        frame = pd.read_csv(path)
        if label not in frame.columns:
            raise ValueError(f"label column {label!r} is not in {path.name} (columns: {', '.join(frame.columns)})")
        features = frame.drop(columns=[label])
        bad = [c for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
        if bad:
            raise ValueError(f"{path.name}: feature column(s) {bad} are not numeric; encode them before")
        X = features.to_numpy(dtype=float)
        y = frame[label].to_numpy()
        names = [str(c) for c in features.columns]
    else:
        raise ValueError(f"data must be a .csv or .npy file, got {path.name!r}")
    if not np.isfinite(X).all():
        raise ValueError(f"{path.name} holds missing or infinite feature values; fill them before (publicly)")
    if len(names) != X.shape[1]:
        raise ValueError(f"feature_names has {len(names)} names for {X.shape[1]} feature columns")
    return X, y, names


@dataclass
class OwnDataResult:
    """What :func:`run_own_data` returns.

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per (repeat, method, ε): ``auc`` on the test part, the ``lam`` used.
    summary : pandas.DataFrame
        Per (method, ε): mean AUC, its 95 % t-interval (``ci_low``, ``ci_high``) and the repeats.
    ledger : pandas.DataFrame
        The privacy ledger of :attr:`model` (one row per mechanism and part of the data).
    model : estimator
        One fitted model (PST-F, or PPTL-FS given a source) on all rows at :attr:`ledger_epsilon`.
    ledger_epsilon : float
    outside_guarantee : list of str
        Every step outside the guarantee (each also raised a ``PrivacyLeakWarning``).
    settings : dict
        The parameters of the run.
    """

    frame: pd.DataFrame
    summary: pd.DataFrame
    ledger: pd.DataFrame
    model: object
    ledger_epsilon: float
    outside_guarantee: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)


def _real(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and not math.isnan(v)


def _check(classes, norm_bound, epsilons, n_repeats, test_fraction, lam, lam_grid, eta, n_groups, methods, source, d):
    if not isinstance(classes, (list, tuple, np.ndarray)) or len(classes) != 2 or len(set(list(classes))) != 2:
        raise ValueError(f"classes must list the two public labels, negative first, got {classes!r}")
    if not (_real(norm_bound) and math.isfinite(norm_bound) and norm_bound > 0):
        raise ValueError(
            f"norm_bound must be a finite number > 0 (a public bound on the rows' norms), got {norm_bound!r}"
        )
    if not (
        isinstance(epsilons, (list, tuple)) and epsilons and all(_real(e) and e >= SMALLEST_EPSILON for e in epsilons)
    ):
        raise ValueError(
            f"epsilons must be a non-empty list of numbers >= {SMALLEST_EPSILON:g} (inf: non-private), got {epsilons!r}"
        )
    if not (isinstance(n_repeats, numbers.Integral) and n_repeats >= 2):
        raise ValueError(f"n_repeats must be an integer >= 2 (an interval needs two repeats), got {n_repeats!r}")
    if not (_real(test_fraction) and 0 < test_fraction < 1):
        raise ValueError(f"test_fraction must lie strictly between 0 and 1, got {test_fraction!r}")
    if not (_real(lam) and math.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a finite number > 0, got {lam!r}")
    if lam_grid is not None and not (
        isinstance(lam_grid, (list, tuple))
        and lam_grid
        and all(_real(v) and math.isfinite(v) and v > 0 for v in lam_grid)
    ):
        raise ValueError(f"lam_grid must be None or a non-empty list of finite numbers > 0, got {lam_grid!r}")
    if not (_real(eta) and 0 <= eta <= 1):
        raise ValueError(f"eta must lie in [0, 1], got {eta!r}")
    if not (isinstance(n_groups, numbers.Integral) and 1 <= n_groups <= d):
        raise ValueError(f"n_groups must be an integer from 1 to the number of features ({d}), got {n_groups!r}")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"methods must be taken from {list(METHODS)}, got {unknown}")
    if source is None and any(m in TRANSFER for m in methods):
        raise ValueError(f"methods {[m for m in methods if m in TRANSFER]} need a source (source=path)")


def _importance(feature_importance, X_fit, d, outside):
    if feature_importance is None:
        return None
    if isinstance(feature_importance, str):
        if feature_importance != "variance":
            raise ValueError(f"feature_importance must be a list, None or 'variance', got {feature_importance!r}")
        outside.add("feature importances = variances of the private training rows")
        v = X_fit.var(axis=0)
        return v / v.sum() if v.sum() > 0 else None
    v = np.asarray(feature_importance, dtype=float)
    if v.shape != (d,) or not np.isfinite(v).all() or (v < 0).any() or v.sum() <= 0:
        raise ValueError(f"feature_importance must hold {d} finite numbers >= 0, not all 0, got {feature_importance!r}")
    return v / v.sum()


def _model(method, epsilon, lam, seed, classes, n_groups, importance, groups, eta):

    common = dict(random_state=seed, classes=list(classes))
    if method == "PLR":
        return PrivateLogisticRegression(epsilon=epsilon, lam=lam, **common)
    if method == "PST-S":
        return PrivateStackingClassifier(epsilon=epsilon, partition="samples", n_groups=n_groups, lam=lam, **common)
    blocks = dict(n_groups=n_groups, feature_importance=importance, groups=groups)
    if method == "PST-F":
        return PrivateStackingClassifier(epsilon=epsilon, partition="features", lam=lam, **blocks, **common)
    if method == "PPTL-FS":
        return PrivateTransferStacking(
            epsilon_source=epsilon, epsilon_target=epsilon, lam_source=lam, lam=lam, eta=eta, **blocks, **common
        )
    return SimComb(epsilon_source=epsilon, epsilon_target=epsilon, lam_source=lam, lam=lam, eta=eta, **common)


def _fit(model, method, X, y, source):
    if method in TRANSFER:
        return model.fit(X, y, X_source=source[0], y_source=source[1])
    return model.fit(X, y)


def _auc(model, X, positive):
    return roc_auc_score(positive, model.decision_function(X))


def _one_repeat(repeat, X, y, source, settings, importance_spec):
    """Every (method, ε) of one repeat: the same split and seeds for all of them (paired comparisons)."""
    ss = np.random.SeedSequence(settings["seed"], spawn_key=(repeat,))
    split_ss, fit_ss = ss.spawn(2)
    rng = np.random.default_rng(split_ss)
    n = X.shape[0]
    order = rng.permutation(n)
    n_test = max(2, int(round(settings["test_fraction"] * n)))
    test, train = order[:n_test], order[n_test:]
    lam_grid = settings["lam_grid"]
    if lam_grid is not None:  # a validation third of the training rows (outside the guarantee)
        n_val = max(2, len(train) // 3)
        val, fit_rows = train[:n_val], train[n_val:]
    else:
        val, fit_rows = None, train
    classes = settings["classes"]
    positive_test = (y[test] == classes[1]).astype(int)
    outside = set()
    importance = _importance(importance_spec, X[fit_rows], X.shape[1], outside)
    seeds = fit_ss.generate_state(len(settings["methods"]) * len(settings["epsilons"]) * len(lam_grid or [0]))
    rows, k = [], 0
    for method in settings["methods"]:
        for eps in settings["epsilons"]:
            candidates = []
            for lam in lam_grid or [settings["lam"]]:
                args = (method, float(eps), float(lam), int(seeds[k]), classes, settings["n_groups"], importance)
                k += 1
                model = _fit(
                    _model(*args, settings["groups"], settings["eta"]), method, X[fit_rows], y[fit_rows], source
                )
                score = _auc(model, X[val], (y[val] == classes[1]).astype(int)) if val is not None else 0.0
                candidates.append((score, lam, model))
            # the first candidate within the stated resolution of the best validation AUC
            best = select_on_scores([c[0] for c in candidates])[0] or 0
            _, lam, model = candidates[best]
            rows.append(
                dict(
                    repeat=repeat,
                    method=method,
                    epsilon=float(eps),
                    lam=float(lam),
                    auc=_auc(model, X[test], positive_test),
                )
            )
    return rows, sorted(outside)


def run_own_data(
    data,
    label,
    classes,
    norm_bound,
    *,
    feature_importance=None,
    groups=None,
    n_groups=5,
    epsilons=(0.5, 1.0, 2.0, 4.0, float("inf")),
    n_repeats=10,
    test_fraction=0.3,
    lam=0.01,
    lam_grid=None,
    source=None,
    eta=0.5,
    methods=None,
    seed=0,
    n_jobs=1,
):
    """Run PLR, PST-S, PST-F and, given a source, PPTL-FS and SimComb on your data, over repeats and an ε grid.

    Parameters
    ----------
    data : path-like or tuple (X, y)
        A ``.csv`` (``label`` names the label column, the other columns are the features) or a
        ``.npy`` 2-D array (``label`` is the label column's index); or the arrays themselves.
    label : str or int
        The label column.
    classes : sequence of two labels
        The public label set, negative first (the AUC scores the second as positive).
    norm_bound : float
        A public bound on the rows' Euclidean norms: rows are divided by it and clipped to 1.
    feature_importance : sequence of float, "variance" or None, default=None
        Public per-feature importances (PST-F(W), PPTL-FS(W)); ``None``: random equal groups
        (PST-F(U), PPTL-FS(R)); ``"variance"``: the private training rows' variances (outside
        the guarantee).
    groups : sequence of index lists or None, default=None
        Explicit public feature groups (instead of ``n_groups``).
    n_groups : int, default=5
        K, the feature groups of PST-F / PPTL-FS and the sample sets of PST-S.
    epsilons : sequence of float, default=(0.5, 1, 2, 4, inf)
        The ε grid (``inf``: the non-private version). Transfer spends ε on the source and ε on
        the target (ε_s = ε_t = ε).
    n_repeats : int, default=10
        Random train/test splits (the interval is over them).
    test_fraction : float, default=0.3
    lam : float, default=0.01
        The public λ of every model (used when ``lam_grid`` is None).
    lam_grid : sequence of float or None, default=None
        Choose λ per (repeat, method, ε) by validation AUC on a third of the training rows
        (outside the guarantee; warned).
    source : path-like, tuple (X, y) or None, default=None
        The source domain for PPTL-FS and SimComb: the same columns as ``data``.
    eta : float, default=0.5
        η of the transfer methods (1 ignores the source).
    methods : sequence of str or None, default=None
        A subset of :data:`METHODS` (default: all that apply).
    seed : int, default=0
        Root seed (splits and noise; every method and ε of a repeat share the split).
    n_jobs : int, default=1
        Repeats in parallel (joblib).

    Returns
    -------
    OwnDataResult
    """
    X, y, names = load_table(data, label) if not isinstance(data, tuple) else (*data, None)
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if X.ndim != 2 or len(y) != len(X):
        raise ValueError(f"X must be 2-D with one label per row, got X {X.shape} and y {y.shape}")
    src = None
    if source is not None:
        Xs, ys, src_names = load_table(source, label) if not isinstance(source, tuple) else (*source, None)
        Xs = np.asarray(Xs, dtype=float)
        if Xs.ndim != 2 or Xs.shape[1] != X.shape[1]:
            raise ValueError(f"source must have the {X.shape[1]} feature columns of data, got shape {Xs.shape}")
        if names is not None and src_names is not None and names != src_names:
            raise ValueError(f"source's feature columns {src_names} differ from data's {names}")
        src = (Xs / norm_bound if _real(norm_bound) and norm_bound > 0 else Xs, np.asarray(ys))
    methods = list(methods) if methods is not None else [m for m in METHODS if source is not None or m not in TRANSFER]
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if not (isinstance(n_jobs, numbers.Integral) and not isinstance(n_jobs, bool) and (n_jobs >= 1 or n_jobs == -1)):
        raise ValueError(f"n_jobs must be an integer >= 1, or -1 for every core, got {n_jobs!r}")
    _check(
        classes,
        norm_bound,
        list(epsilons) if isinstance(epsilons, (list, tuple, np.ndarray)) else epsilons,
        n_repeats,
        test_fraction,
        lam,
        lam_grid,
        eta,
        n_groups,
        methods,
        source,
        X.shape[1],
    )
    epsilons = [float(e) for e in epsilons]
    n_test = max(2, int(round(float(test_fraction) * len(X))))
    n_fit = (len(X) - n_test) - (max(2, (len(X) - n_test) // 3) if lam_grid is not None else 0)
    if n_test >= len(X) or n_fit < 2 * (int(n_groups) + 1):
        raise ValueError(
            f"test_fraction={test_fraction!r} leaves {max(len(X) - n_test, 0)} of the {len(X)} rows for training "
            f"({max(n_fit, 0)} to fit after validation); n_groups={n_groups} needs at least {2 * (int(n_groups) + 1)} "
            "to fit: use a smaller test_fraction (or fewer groups)"
        )
    for part, labels in (("data", y), ("source", None if src is None else src[1])):
        if labels is not None and not set(np.unique(labels).tolist()) <= set(list(classes)):
            raise ValueError(f"the labels of {part} must lie in classes {list(classes)}")
    X = X / float(norm_bound)  # the public bound; each fit clips the rows to norm 1
    settings = dict(
        classes=list(classes),
        norm_bound=float(norm_bound),
        epsilons=epsilons,
        n_repeats=int(n_repeats),
        test_fraction=float(test_fraction),
        lam=float(lam),
        lam_grid=None if lam_grid is None else [float(v) for v in lam_grid],
        eta=float(eta),
        n_groups=int(n_groups),
        groups=groups,
        methods=methods,
        seed=int(seed),
        feature_names=names,
    )
    from joblib import Parallel, delayed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # the steps are collected and warned once below
        out = Parallel(n_jobs=n_jobs)(
            delayed(_one_repeat)(r, X, y, src, settings, feature_importance) for r in range(int(n_repeats))
        )
    outside = sorted({s for _, steps in out for s in steps})
    if lam_grid is not None:
        outside.append("λ chosen by validation AUC on a third of the private training rows")
    outside.append("the test AUCs are computed on held-out private rows (what you read, not what you publish)")
    for step in outside:
        warnings.warn(f"outside the privacy guarantee: {step}", PrivacyLeakWarning, stacklevel=2)
    frame = pd.DataFrame([row for rows, _ in out for row in rows])
    frame["method"] = frame["method"].map(lambda m: method_label(m, feature_importance, groups))
    summary = summarize(frame)
    # one model on all rows, at the smallest finite ε, and its ledger
    ledger_eps = min((e for e in epsilons if math.isfinite(e)), default=epsilons[0])
    kind = "PPTL-FS" if src is not None else "PST-F"
    importance = _importance(feature_importance, X, X.shape[1], set())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        model = _fit(
            _model(
                kind, ledger_eps, settings["lam"], int(seed), classes, int(n_groups), importance, groups, float(eta)
            ),
            kind,
            X,
            y,
            src,
        )
    return OwnDataResult(frame, summary, model.privacy_.to_frame(), model, ledger_eps, outside, settings)


def method_label(method, feature_importance=None, groups=None):
    """The papers' name of a method with its variant: PST-F(W) / PPTL-FS(W) with importances, (U) / (R) without."""
    if method not in ("PST-F", "PPTL-FS") or (groups is not None and feature_importance is None):
        return method
    if feature_importance is not None:
        return f"{method}(W)"
    return "PST-F(U)" if method == "PST-F" else "PPTL-FS(R)"


def plot_own_data(result, ax=None):
    """Mean test AUC against ε with 95 % bands; the non-private version (ε = ∞) as a dashed line per method."""

    if ax is None:
        _, ax = panels(1, height=3.6)
    frame = result.frame
    colors = {method: color_for(method) for method in frame["method"].unique()}  # the book's colour per method
    finite = frame[np.isfinite(frame["epsilon"])]
    if finite["epsilon"].nunique() >= 1:
        plot_mean_with_spread(
            ax, finite, "epsilon", "auc", "method", logx=finite["epsilon"].nunique() > 1, colors=colors
        )
    for method, part in frame[~np.isfinite(frame["epsilon"])].groupby("method", sort=False):
        ax.axhline(part["auc"].mean(), color=colors[method], ls="--", lw=1)
    ax.set_xlabel("ε (dashed: non-private, ε = ∞)")
    ax.set_ylabel("test AUC")
    ax.legend()
    return ax


def summarize(frame, level=0.95):
    """Mean test AUC per (method, ε) with its ``level`` t-interval over repeats."""
    rows = []
    for (method, eps), part in frame.groupby(["method", "epsilon"], sort=False):
        mean, low, high = mean_interval(part["auc"], level)
        rows.append(dict(method=method, epsilon=eps, mean=mean, ci_low=low, ci_high=high, repeats=len(part)))
    return pd.DataFrame(rows)
