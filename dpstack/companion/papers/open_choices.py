"""Machinery shared by the PST and PPTL experiments: the open choices, λ grids, tuning budget.

The stacked methods leave choices open that the papers do not fix (how rows are bounded, the
meta-features, how the high level's λ is chosen, intercepts). :data:`DEFAULT_OPTIONS` holds what a
careful user of the papers would choose, :data:`OLD_DEFAULT_OPTIONS` the choices before the
fairness review, and :data:`ABLATION_VARIANTS` / :data:`FACTOR_VARIANTS` the variations the
ablation page measures. Every method of a table evaluates the same number of candidate settings
(:func:`tuning_budget`, :func:`budget_grid`) over λ grids spanning :data:`LAM_RANGE`.
:func:`synthetic_task` is a small offline task with known feature importance (tests and demos);
:func:`high_level_signal` measures the signal and noise a fitted stacked model's high level saw.

Both :mod:`dpstack.companion.papers.pst.grids` (PST) and :mod:`dpstack.companion.papers.pptl.grids` (PPTL)
build their grid cells from this module; the claims and tables the pages show live in
:mod:`dpstack.companion.papers.stacked_pages` and the per-paper report modules, so changing a table does
not change the code a committed result was computed with.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpstack.stacking import bound_rows

__all__ = [
    "LAM_HIGH_RULES",
    "DEFAULT_OPTIONS",
    "OLD_DEFAULT_OPTIONS",
    "LAM_RANGE",
    "SELECTION_RESOLUTION",
    "select_on_scores",
    "synthetic_weights",
    "synthetic_task",
    "lam_high_start",
    "check_lam_high_rule",
    "budget_grid",
    "tuning_budget",
    "low_grid",
    "ABLATION_VARIANTS",
    "FACTOR_VARIANTS",
    "PST_FACTOR_VARIANTS",
    "resolve_grid_points",
    "high_level_signal",
    "plain_table",
    "row_scale_table",
]


#: How the high level's λ is chosen: ``"per_level"`` (λ_l, then λ_h, each on validation data),
#: ``"tied"`` (λ_h = λ_l), or a number (λ_h fixed in advance).
LAM_HIGH_RULES = ("per_level", "tied")


#: The choices the papers leave open (see dpstack.stacking) and their defaults: all DP-correct.
#: ``lam_grid_points``: None uses the profile's λ grid; an int spreads that many points log-evenly over
#: its range. ``equal_budget``: every method evaluates as many candidates as the stacked methods.
#: ``refit`` (transfer only; the PST cells always score the validated model): refit the chosen
#: setting on the whole training part before scoring it. Off by default: a refit draws fresh noise
#: that no validation has seen, and at small ε the stacked methods' high level then flips sign in
#: some repeats (the ablation page measures it).
DEFAULT_OPTIONS = {
    "row_bound": "clip",
    "row_scale": 1.0,
    "meta_features": "centred",
    "lam_high": "per_level",
    "lam_blocks": "same",
    "low_intercept": False,
    "high_intercept": False,
    "lam_grid_points": None,
    "equal_budget": True,
    "refit": False,
}


#: The defaults before the fairness review: λ tied between the levels, an intercept in the high
#: level, (transfer) Direct/SourceD tuned over fewer candidates than the stacked methods, and the
#: chosen setting refitted on the whole training part.
OLD_DEFAULT_OPTIONS = {
    **DEFAULT_OPTIONS,
    "lam_high": "tied",
    "high_intercept": True,
    "equal_budget": False,
    "refit": True,
}


#: The range every λ grid of the experiments spans (PST and PPTL, every method and level).
#: Wide enough that the chosen λ is interior in most repeats: the validation AUC of PLR is flat
#: below about 1e-4 at finite ε (there λ + Δ is the fixed ridge of the ε' ≤ 0 branch of objective
#: perturbation) and all but flat above about 10-100 (the solution's direction tends to that of
#: mean(y·x) plus the noise; it still rises by ~1e-4 up to 1e3 on MNIST at ε = 0.25), and its
#: optimum lies between, except without noise (ε = ∞), where it lies near 1e-5. The grids before
#: this range (1e-4 to 1) left PLR and the one-level transfer methods at their top value in most
#: repeats at small ε; :func:`edge_share` measures it.
LAM_RANGE = (1e-6, 1e4)


#: Validation scores (AUC, accuracy) closer than this to the best are ties: far below what a
#: validation part of a few hundred rows can tell apart (the standard error of its AUC is about
#: 0.01-0.02), far above what the rounding of one BLAS kernel or solver pass against another moves
#: (a handful of swapped pairs of nearly equal scores, about 1e-5 of AUC at the smallest parts).
SELECTION_RESOLUTION = 1e-3


def select_on_scores(scores, resolution=SELECTION_RESOLUTION):
    """The candidate chosen by its validation score, and how far the choice is from changing.

    The rule: the **first** candidate, in the order given (the grid's), whose score is within
    ``resolution`` of the best finite score. Non-finite scores are never chosen. Scores closer
    than ``resolution`` are ties, broken by the order, so a choice does not hang on the last
    bits of the scores: rounding that moves every score by less than ``margin / 2`` cannot
    change it.

    Parameters
    ----------
    scores : sequence of float
        One validation score per candidate (higher is better; NaN or inf: failed).
    resolution : float, default :data:`SELECTION_RESOLUTION`
        Positive.

    Returns
    -------
    index : int or None
        The chosen candidate (None when no score is finite).
    margin : float
        ``min_j |score_j − (best − resolution)|`` over the finite scores: the distance of the
        nearest score to the threshold that decides the choice (NaN when none is finite).
    """
    s = np.asarray(scores, dtype=float).ravel()
    if not resolution > 0:
        raise ValueError(f"resolution must be > 0, got {resolution!r}")
    ok = np.isfinite(s)
    if not ok.any():
        return None, float("nan")
    threshold = np.max(s[ok]) - resolution
    index = int(np.flatnonzero(ok & (s >= threshold))[0])
    margin = float(np.min(np.abs(s[ok] - threshold)))
    return index, margin


def synthetic_weights(data_seed=0, n_features=20):
    """Weights β of :func:`synthetic_task`: random signs, magnitude 1.5·√(d / Σ v)."""
    v = 0.8 ** np.arange(n_features)
    return 1.5 * np.sign(np.random.default_rng([data_seed, 2]).normal(size=n_features)) * np.sqrt(n_features / v.sum())


def synthetic_task(data_seed=0, n_train=900, n_test=600, n_features=20):
    """A small offline task with known importance (``dataset="SYNTH"``; tests and demos).

    Feature i has variance v_i = 0.8^i and weight β_i ∝ √v_i·sign, so the label depends
    more on high-variance features (as with PCA scores); rows are divided by the public
    constant 2 and clipped to norm 1.
    """
    rng = np.random.default_rng(data_seed)
    v = 0.8 ** np.arange(n_features)
    X = rng.normal(size=(n_train + n_test, n_features)) * np.sqrt(v)
    beta = synthetic_weights(data_seed, n_features)
    y = (rng.uniform(size=len(X)) < 1 / (1 + np.exp(-X @ beta))).astype(int)
    X = bound_rows(X, "clip", row_scale=2.0)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:], v


def lam_high_start(opts, lam):
    """λ_h the estimator is built with: λ_l (tied, and the start of the per-level search) or a fixed number."""
    rule = opts["lam_high"]
    return lam if rule in LAM_HIGH_RULES else float(rule)


def check_lam_high_rule(rule):
    if isinstance(rule, str) and rule not in LAM_HIGH_RULES:
        raise ValueError(f"options['lam_high'] must be one of {LAM_HIGH_RULES} or a number > 0, got {rule!r}")
    if not isinstance(rule, str) and not float(rule) > 0:
        raise ValueError(f"options['lam_high'] must be one of {LAM_HIGH_RULES} or a number > 0, got {rule!r}")
    return rule


def budget_grid(grid, n_points):
    """``grid`` itself if it has ``n_points`` values, else ``n_points`` values spread log-evenly over its range.

    A method with one tuned λ gets as many candidates as a method that tunes more
    (:func:`tuning_budget`): the same range, a denser grid.
    """
    grid = [float(v) for v in grid]
    n_points = int(n_points)
    if n_points < 1:
        raise ValueError(f"n_points must be >= 1, got {n_points}")
    if n_points == len(grid):
        return grid
    if n_points == 1:
        return [float(np.sqrt(min(grid) * max(grid)))]
    return [float(v) for v in np.geomspace(min(grid), max(grid), n_points)]


def tuning_budget(lam_grid, lam_high_grid=None, options=None, n_eta=1):
    """Number of candidate settings a stacked method evaluates on the validation data.

    ``"per_level"``: |λ grid|·n_eta (the low level, with η for PPTL) + |λ_h grid| (the high
    level, the low level fixed). ``"tied"`` or a fixed λ_h: |λ grid|·n_eta. With
    ``options["equal_budget"]`` every other method of the table evaluates this many
    candidates too (PLR / Direct / SourceD: a λ grid of this size; SimComb: this size / n_eta
    λ values × the η grid).
    """
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    n_low = len(low_grid(lam_grid, opts)) * int(n_eta)
    if check_lam_high_rule(opts["lam_high"]) == "per_level":
        return n_low + len(lam_grid if lam_high_grid is None else lam_high_grid)
    return n_low


def low_grid(lam_grid, opts):
    points = opts.get("lam_grid_points")
    return list(lam_grid) if points is None else budget_grid(lam_grid, points)


#: The ablation's variations, each a change of one option from the defaults.
ABLATION_VARIANTS = {
    "default": {},
    "row_bound=normalize": {"row_bound": "normalize"},
    "row_bound=scale": {"row_bound": "scale"},
    "row_bound=private_max (NOT DP)": {"row_bound": "private_max"},
    "rows ÷ 4 (public constant)": {"row_scale": 4.0},
    "meta_features=sigmoid": {"meta_features": "sigmoid"},
    "meta_features=sigmoid, high intercept": {"meta_features": "sigmoid", "high_intercept": True},
    "lam_blocks=importance": {"lam_blocks": "importance"},
    "lam_high=1e-3": {"lam_high": 1e-3},
    "lam_high=1e-1": {"lam_high": 1e-1},
    "lam_high tied": {"lam_high": "tied"},
    "low_intercept": {"low_intercept": True},
    "high intercept": {"high_intercept": True},
}


#: The factors behind the stacked methods' high-level collapse, from the old defaults to the new
#: ones: each row changes one option of the old defaults, then the new defaults, then one
#: change of the new defaults (the meta-feature scale, the intercept, a fixed λ_h).
FACTOR_VARIANTS = {
    "old defaults": dict(OLD_DEFAULT_OPTIONS),
    "old, no high intercept": {**OLD_DEFAULT_OPTIONS, "high_intercept": False},
    "old, λ per level": {**OLD_DEFAULT_OPTIONS, "lam_high": "per_level"},
    "old, tied λ on a denser grid": {**OLD_DEFAULT_OPTIONS, "lam_grid_points": "budget"},
    "old, equal budget": {**OLD_DEFAULT_OPTIONS, "equal_budget": True},
    "old, no refit": {**OLD_DEFAULT_OPTIONS, "refit": False},
    "new defaults": dict(DEFAULT_OPTIONS),
    "new, high intercept": {**DEFAULT_OPTIONS, "high_intercept": True},
    "new, meta_features=sigmoid": {**DEFAULT_OPTIONS, "meta_features": "sigmoid"},
    "new, λ_h fixed at 1e-2": {**DEFAULT_OPTIONS, "lam_high": 1e-2},
    "new, refit": {**DEFAULT_OPTIONS, "refit": True},
}


#: The factors that exist in the PST cells (they never refit).
PST_FACTOR_VARIANTS = {k: v for k, v in FACTOR_VARIANTS.items() if "refit" not in k}


def resolve_grid_points(options, p, n_eta=1):
    """``lam_grid_points="budget"``: as many λ as the per-level budget (one grid of the profile per level)."""
    options = dict(options)
    if options.get("lam_grid_points") == "budget":
        per_level = {**options, "lam_high": "per_level", "lam_grid_points": None}
        options["lam_grid_points"] = tuning_budget(p["lam_grid"], None, per_level, n_eta) // int(n_eta)
    return options


def high_level_signal(est, X, y):
    """Signal and noise the high-level PLR of a fitted stacking model saw on its part D_h.

    signal = ‖∇ of the mean logistic loss at w = 0‖ = ‖mean(y·m)‖/2 over the meta-features m of
    D_h (y = ±1); noise = ‖b‖/n_h, the size of the perturbation term's gradient. When
    noise ≳ signal the high level's weights, and with them the sign of C-hl, are mostly noise.

    An analysis, not a release: it needs the rows of D_h and the high level's noise, which
    exist only on an estimator fitted with ``diagnostics=True`` (such an object is not private).
    """
    from dpstack.stacking import meta_features

    diag = getattr(est, "diagnostics_", None)
    if diag is None:
        raise ValueError(
            "high_level_signal needs an estimator fitted with diagnostics=True "
            "(the rows of D_h and the high level's noise are diagnostics)"
        )
    rows = diag.high_index
    M = meta_features(est.decision_function_low(X[rows]), est.meta_features)
    ys = np.where(y[rows] == est.classes_[1], 1.0, -1.0)
    signal = float(np.linalg.norm((ys[:, None] * M).mean(axis=0)) / 2)
    noise = float(diag.high_level.noise_norm / rows.size)
    return dict(
        meta_rms=float(np.sqrt((M**2).sum(axis=1).mean())),
        signal=signal,
        noise=noise,
        high_coef_norm=float(np.linalg.norm(est.high_level_.coef_)),
    )


def plain_table(frame):
    """The runner's table with plain columns only, as committed results store them (same rows, same order).

    Columns holding lists or dicts (the cells' λ grids and options: recorded in the result's
    provenance) are dropped; a column of numbers with missing values (``None``, e.g. the branch of
    an MNIST cell) becomes float with NaN, and so does a column with nothing but missing values; a
    column of strings with missing values gets ``""``.
    """
    out = frame.copy()
    for col in list(out.columns):
        if pd.api.types.is_numeric_dtype(out[col]) or pd.api.types.is_bool_dtype(out[col]):
            continue
        values = out[col].tolist()
        if any(isinstance(v, (list, tuple, dict, np.ndarray)) for v in values):
            out = out.drop(columns=col)
            continue
        present = [v for v in values if v is not None and not (isinstance(v, float) and np.isnan(v))]
        if not present:  # nothing but missing values: a float column of NaN, like a partly missing number
            out[col] = np.full(len(values), np.nan)
        elif all(isinstance(v, str) for v in present):
            out[col] = ["" if (v is None or (isinstance(v, float) and np.isnan(v))) else v for v in values]
        elif all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in present):
            out[col] = np.array([np.nan if v is None else float(v) for v in values], dtype=float)
        elif all(isinstance(v, (bool, np.bool_)) for v in present) and len(present) == len(values):
            out[col] = np.array(values, dtype=bool)
        else:
            raise TypeError(
                f"column {col!r} mixes types that a result table cannot hold: {sorted({type(v).__name__ for v in present})}"
            )
    return out


def row_scale_table(frame):
    """:func:`plain_table` with a column ``row_scale``: the public constant each row's cell divided the rows by.

    The cells of a row-scale sweep carry it inside ``options`` (a dict, which a result table
    cannot hold); a cell without it used the default, :data:`DEFAULT_OPTIONS`'s ``row_scale``.
    """
    default = float(DEFAULT_OPTIONS["row_scale"])
    options = frame["options"] if "options" in frame else [None] * len(frame)
    scales = [float(o.get("row_scale", default)) if isinstance(o, dict) else default for o in options]
    return plain_table(frame.assign(row_scale=np.array(scales, dtype=float)))
