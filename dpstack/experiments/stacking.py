"""PST experiments (Yao et al. 2019, §4.1): AUC vs ε, vs K, vs α, the combiners, and the open choices.

Protocol (PST §4.1; errata :ref:`5 <erratum-public-bound>`, :ref:`6 <erratum-pst-split>`,
:ref:`8 <erratum-news20-sizes>` of the book):

* MNIST 0 vs 8 — :func:`dpstack.datasets.mnist_pst`: 5,000 images, 3,000 train /
  2,000 test, PCA to 100, rows clipped to norm 1. NEWS20 sci vs talk —
  :func:`dpstack.datasets.news20_pst`: bydate train (4,325) / test (2,880), TF-IDF,
  PCA to 100. PCA and the importances v_i (PCA variances) are fitted on the
  training data: **outside the guarantee**, as in the paper (same erratum).
  The preprocessing is done once per process (cached); each repeat redraws the
  split of the training set into 2/3 fit / 1/3 validation and all the noise.
* λ is chosen on the validation third by test-free AUC and the model fitted with the
  chosen λ is scored on the test set. **Choosing λ on private validation data is
  outside the privacy guarantee** (the papers do it without saying so, :ref:`erratum 6 <erratum-pst-split>`).
* **λ per level** (default, ``lam_high="per_level"``): the stacked methods choose the
  low level's λ_l first, on the validation AUC of the low level's own predictor (the sum
  of its K margins), then the high level's λ_h on the validation AUC of C-hl with that low
  level fixed (the high level is refitted alone through ``fit(low_level=...)``, with the
  seeds of a normal fit). ``"tied"`` (the old default) uses λ_h = λ_l.
* **Equal tuning budget**: every method of a figure evaluates the same number of
  candidate settings on the validation data (:func:`tuning_budget`). With per-level λ the
  stacked methods evaluate |λ grid| + |λ_h grid| candidates, so PLR gets a λ grid of that
  many points spread log-evenly over the same range (:func:`budget_grid`).
* K = 5, D_l/D_h = 50/50, ε = ∞ is the non-private version of each method.

Every cell returns tidy rows (one per method × combiner) with the test AUC, the
chosen λ of each level (``lam``, ``lam_high``), its validation AUC, the number of
candidates evaluated and the best test AUC among them (``auc_oracle``: the selection's cost); :func:`check_claim` turns the repeats into a
verdict on a claim by the shared rule of :mod:`dpstack.experiments.verdicts`.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from ..base import PrivacyLeakWarning
from ..linear import PrivateLogisticRegression
from ..metrics import roc_auc_score
from ..stacking import PrivateStackingClassifier, bound_rows
from .runner import run_cells
from .verdicts import (
    AUC_MARGIN,
    any_of,
    claims_frame,
    directional_verdict,
    equivalence_verdict,
    no_pairs,
    noninferiority_verdict,
)

__all__ = [
    "PROFILES", "STACKING_METHODS", "DEFAULT_OPTIONS", "load_task", "stacking_cell", "run_stacking",
    "fig1_epsilon", "synthetic_task", "fig2_groups", "fig3_importance", "fig4_combiners", "ablation",
    "check_claim", "claims_table", "summarise", "require_data", "fig1_claims", "fig2_claims", "fig3_claims",
    "fig4_claims", "chosen_lam", "high_level_signal", "swing_diagnostics", "alpha_label", "eps_axis",
    "set_eps_ticks", "ABLATION_VARIANTS", "synthetic_weights", "OLD_DEFAULT_OPTIONS", "FACTOR_VARIANTS",
    "LAM_HIGH_RULES", "PST_FACTOR_VARIANTS", "tuning_budget", "budget_grid", "factor_effects",
]

STACKING_METHODS = ("PLR", "PST-S", "PST-F(U)", "PST-F(W)")

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
DEFAULT_OPTIONS = {"row_bound": "clip", "row_scale": 1.0, "meta_features": "centred", "lam_high": "per_level",
                   "lam_blocks": "same", "low_intercept": False, "high_intercept": False,
                   "lam_grid_points": None, "equal_budget": True, "refit": False}

#: The defaults before the fairness review: λ tied between the levels, an intercept in the high
#: level, (transfer) Direct/SourceD tuned over fewer candidates than the stacked methods, and the
#: chosen setting refitted on the whole training part.
OLD_DEFAULT_OPTIONS = {**DEFAULT_OPTIONS, "lam_high": "tied", "high_intercept": True, "equal_budget": False,
                       "refit": True}

#: Repeats and grids. "paper": the papers' repeats (10; 30 for the K sweeps) and denser grids.
PROFILES = {
    "quick": dict(n_repeats=4, k_repeats=3, epsilons=(0.25, 1.0, 4.0, np.inf), lam_grid=(1e-4, 1e-3, 1e-2, 1e-1, 1.0),
                  k_grid=(1, 3, 5, 10, 20), alphas=(0.5, 0.9, 1.0, 1.1, 2.0), datasets=("MNIST", "NEWS20")),
    "paper": dict(n_repeats=10, k_repeats=30, epsilons=(0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, np.inf),
                  lam_grid=(1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 1.0), k_grid=(1, 2, 3, 5, 7, 10, 15, 20, 30, 50),
                  alphas=(0.3, 0.5, 0.7, 0.9, 1.0, 1.1, 1.5, 2.0), datasets=("MNIST", "NEWS20")),
}


def _profile(profile):
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
    return PROFILES[profile]


@functools.lru_cache(maxsize=4)
def load_task(dataset, data_seed=0):
    """Preprocessed (X_train, y_train, X_test, y_test, feature_variance) of ``"MNIST"`` or ``"NEWS20"``.

    Cached per process: PCA / TF-IDF are the slow part and do not change across repeats.
    Raises :class:`dpstack.datasets.DatasetNotFoundError` if the raw files are absent.
    """
    from ..datasets import mnist_pst, news20_pst

    if dataset == "SYNTH":
        return synthetic_task(data_seed)
    if dataset == "MNIST":
        d = mnist_pst(random_state=data_seed)
    elif dataset == "NEWS20":
        d = news20_pst(random_state=data_seed)
    else:
        raise ValueError(f"dataset must be 'MNIST', 'NEWS20' or 'SYNTH', got {dataset!r}")
    return d.X_train, d.y_train, d.X_test, d.y_test, d.feature_variance


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


def _importance(method, alpha, feature_variance):
    if method != "PST-F(W)":
        return None
    if alpha is None:
        return feature_variance
    # PST §4.1: v_i = α^i, i = rank of the feature in PCA order (1 = largest variance)
    return float(alpha) ** np.arange(1, feature_variance.size + 1)


def _lam_high(opts, lam):
    """λ_h the estimator is built with: λ_l (tied, and the start of the per-level search) or a fixed number."""
    rule = opts["lam_high"]
    return lam if rule in LAM_HIGH_RULES else float(rule)


def _check_rule(rule):
    if isinstance(rule, str) and rule not in LAM_HIGH_RULES:
        raise ValueError(f"options['lam_high'] must be one of {LAM_HIGH_RULES} or a number > 0, got {rule!r}")
    if not isinstance(rule, str) and not float(rule) > 0:
        raise ValueError(f"options['lam_high'] must be one of {LAM_HIGH_RULES} or a number > 0, got {rule!r}")
    return rule


def _estimator(method, epsilon, lam, n_groups, importance, options, seed, diagnostics=False, lam_high=None):
    """The estimator of one grid cell; the tasks' labels are 0/1, a public label set.

    ``lam_high`` (a number) overrides the rule of ``options["lam_high"]``.
    """
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    if lam_high is None:
        lam_high = _lam_high(opts, lam)
    if method == "PLR":
        return PrivateLogisticRegression(epsilon=epsilon, lam=lam, fit_intercept=opts["low_intercept"],
                                         random_state=seed, classes=[0, 1], diagnostics=diagnostics)
    partition = "samples" if method == "PST-S" else "features"
    return PrivateStackingClassifier(
        epsilon=epsilon, partition=partition, n_groups=n_groups, feature_importance=importance, lam=lam,
        lam_blocks=opts["lam_blocks"] if partition == "features" else "same", lam_high=lam_high,
        row_bound=opts["row_bound"], row_scale=opts["row_scale"],
        meta_features=opts["meta_features"],
        low_intercept=opts["low_intercept"], high_intercept=opts["high_intercept"], random_state=seed,
        classes=[0, 1], diagnostics=diagnostics)


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
    n_low = len(_low_grid(lam_grid, opts)) * int(n_eta)
    if _check_rule(opts["lam_high"]) == "per_level":
        return n_low + len(lam_grid if lam_high_grid is None else lam_high_grid)
    return n_low


def _low_grid(lam_grid, opts):
    points = opts.get("lam_grid_points")
    return list(lam_grid) if points is None else budget_grid(lam_grid, points)


def _scores(est, method, X, combiners):
    """{combiner name: scores} for one fitted model (PLR: one entry)."""
    if method == "PLR":
        return {"C-hl": est.decision_function(X)}
    return est.decision_functions(X) if combiners else {"C-hl": est.decision_function(X)}


def _auc(y, s):
    return float(roc_auc_score(y, s)) if np.all(np.isfinite(s)) else np.nan


def _best(val_aucs):
    return int(np.nanargmax(np.where(np.isnan(val_aucs), -np.inf, val_aucs)))


def stacking_cell(dataset, method, epsilon, repeat=0, n_groups=5, alpha=None, lam_grid=(1e-3, 1e-2, 1e-1),
                  options=None, combiners=False, val_fraction=1 / 3, data_seed=0, lam_high_grid=None, *,
                  seed_sequence):
    """One (dataset, method, ε, repeat): tune λ on validation, return the test AUC row(s).

    The split of the training set (fit / validation) depends only on the repeat's
    seed sequence, so every method and ε of a repeat sees the same split (paired
    comparisons). For each λ the model gets the same noise seed (common random numbers
    across the grid). ``combiners=True`` returns one row per combiner
    (C-0 … C-K−1, C-mv, C-wmv, C-hl), each with its own λ chosen on validation.
    ``options`` overrides :data:`DEFAULT_OPTIONS` (the ablation).

    λ of the stacked methods (``options["lam_high"]``):

    * ``"per_level"``: a coordinate search. λ_l is chosen over ``lam_grid`` on the validation
      AUC of C-hl with λ_h = λ_l (each low-level combiner C-k, C-mv, C-wmv on its own AUC),
      then λ_h over ``lam_high_grid`` (default: ``lam_grid``) on the validation AUC of C-hl,
      the chosen low level fixed (only the high level is refitted, through
      ``fit(low_level=...)``): |lam_grid| + |lam_high_grid| candidates in all. The low
      level is not chosen on its own AUC: that AUC does not see the scale of the margins,
      and a large λ_l gives small margins, hence meta-features too small for the high
      level's noise.
    * ``"tied"``: λ_h = λ_l, |lam_grid| candidates; a number: λ_h fixed.

    PLR evaluates :func:`tuning_budget` candidates (:func:`budget_grid`) when
    ``options["equal_budget"]``, so that every method of a figure has the same budget.

    Returns
    -------
    list of dict with keys ``combiner``, ``auc`` (test), ``val_auc``, ``lam`` (λ_l, or PLR's λ),
    ``lam_high`` (λ_h of C-hl; NaN for PLR and the low-level combiners), ``n_candidates``,
    ``auc_oracle`` (the best test AUC among the candidates evaluated) and ``auc_sd_over_lam``.
    """
    if method not in STACKING_METHODS:
        raise ValueError(f"method must be one of {STACKING_METHODS}, got {method!r}")
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    rule = _check_rule(opts["lam_high"])
    X, y, X_test, y_test, variance = load_task(dataset, data_seed)
    split_ss, noise_ss = seed_sequence.spawn(2)
    perm = np.random.default_rng(split_ss).permutation(len(y))
    n_val = int(round(val_fraction * len(y)))
    val, fit = perm[:n_val], perm[n_val:]
    if method == "PLR" and (opts["row_bound"] != "clip" or opts["row_scale"] != 1.0):
        X, X_test = _bound_plr_rows(X, X_test, fit, opts["row_bound"], opts["row_scale"])
    importance = _importance(method, alpha, variance)
    noise_seed = int(np.random.default_rng(noise_ss).integers(2**63 - 1))
    high_grid = [float(v) for v in (lam_grid if lam_high_grid is None else lam_high_grid)]
    grid = _low_grid(lam_grid, opts)
    if method == "PLR" and opts["equal_budget"]:
        grid = budget_grid(lam_grid, tuning_budget(lam_grid, high_grid, opts))

    def fitted(lam, lam_high=None, low_level=None):
        est = _estimator(method, epsilon, lam, n_groups, importance, opts, noise_seed,
                         lam_high=lam_high if lam_high is not None else _lam_high(opts, lam))
        with warnings.catch_warnings():
            # the private_max variant warns at every fit; its row says it is not private. Only that
            # warning is silenced: any other PrivacyLeakWarning still reaches the caller.
            warnings.filterwarnings("ignore", message="row_bound='private_max'", category=PrivacyLeakWarning)
            if low_level is None:
                est.fit(X[fit], y[fit])
            else:  # the high level alone, on D_h, the chosen low level fixed (same seeds)
                est.fit(X[fit], y[fit], low_level=low_level)
        return est

    trials = []
    for lam in grid:
        est = fitted(lam)
        trials.append((lam, est, _scores(est, method, X[val], combiners), _scores(est, method, X_test, combiners)))

    def row(name, cands, lam_of, lam_high_of):
        val_aucs = np.array([_auc(y[val], t[2][name]) for t in cands])
        test_aucs = np.array([_auc(y_test, t[3][name]) for t in cands])
        best = _best(val_aucs)
        return dict(combiner=name, auc=test_aucs[best], val_auc=val_aucs[best], lam=lam_of(best),
                    lam_high=lam_high_of(best), n_candidates=len(cands),
                    auc_oracle=float(np.nanmax(test_aucs)) if np.any(np.isfinite(test_aucs)) else np.nan,
                    auc_sd_over_lam=float(np.nanstd(test_aucs)))

    rows = []
    for name in trials[0][2]:
        if method == "PLR" or name != "C-hl":
            rows.append(row(name, trials, lambda i: trials[i][0], lambda i: np.nan))
        elif rule != "per_level":
            rows.append(row(name, trials, lambda i: trials[i][0],
                            lambda i: float(trials[i][1].lam_high)))
        else:
            first = row(name, trials, lambda i: trials[i][0], lambda i: float(trials[i][1].lam_high))
            chosen = trials[[t[0] for t in trials].index(first["lam"])]
            high = []
            for h in high_grid:
                est = fitted(chosen[0], lam_high=h, low_level=chosen[1].low_level_)
                high.append((h, est, _scores(est, method, X[val], False), _scores(est, method, X_test, False)))
            r = row(name, high, lambda i: chosen[0], lambda i: high[i][0])
            # the candidates of both stages count, and the oracle sees both
            tests = [_auc(y_test, t[3]["C-hl"]) for t in trials + high]
            r.update(n_candidates=len(trials) + len(high), auc_oracle=float(np.nanmax(tests)),
                     auc_sd_over_lam=float(np.nanstd(tests)))
            rows.append(r)
    return rows


def _bound_plr_rows(X, X_test, fit, method, row_scale=1.0):
    """PLR sees whole rows: apply the row-bounding method under study (PLR itself clips to 1)."""
    row_max = None
    if method == "private_max":  # NOT private: the scale is the largest row norm of the private fit set
        row_max = float(np.sqrt((X[fit] ** 2).sum(axis=1)).max()) / row_scale
    return (bound_rows(X, method, row_scale, row_max=row_max),
            bound_rows(X_test, method, row_scale, row_max=row_max))


def run_stacking(cells, seed=0, n_jobs=1, cache=False):
    """Run :func:`stacking_cell` over a list of cells; returns the tidy DataFrame."""
    df = run_cells(stacking_cell, cells, seed=seed, n_jobs=n_jobs, cache=cache, desc="PST")
    return df


def _cells(profile, datasets, methods, epsilons, repeats, **extra):
    p = _profile(profile)
    return [dict(dataset=d, method=m, epsilon=float(e), repeat=r, lam_grid=list(p["lam_grid"]), **extra)
            for r in range(repeats) for d in datasets for m in methods for e in epsilons]


def fig1_epsilon(profile="quick", datasets=None, methods=STACKING_METHODS, epsilons=None, n_repeats=None,
                 seed=0, n_jobs=1, cache=False):
    """PST Figure 1: test AUC against ε for PLR, PST-S, PST-F(U), PST-F(W) on MNIST and NEWS20."""
    p = _profile(profile)
    cells = _cells(profile, datasets or p["datasets"], methods, epsilons or p["epsilons"],
                   n_repeats or p["n_repeats"])
    return run_stacking(cells, seed, n_jobs, cache)


def fig2_groups(profile="quick", datasets=None, k_grid=None, epsilon=1.0, n_repeats=None, seed=0, n_jobs=1,
                cache=False):
    """PST Figure 2 [IJCAI Fig. 2(a)-(b)]: test AUC against K at ε = 1 for PST-F(U) and PST-F(W) (PLR as reference)."""
    p = _profile(profile)
    reps = n_repeats or p["k_repeats"]
    cells = [dict(dataset=d, method=m, epsilon=float(epsilon), repeat=r, n_groups=int(k), lam_grid=list(p["lam_grid"]))
             for r in range(reps) for d in (datasets or p["datasets"]) for k in (k_grid or p["k_grid"])
             for m in ("PST-F(U)", "PST-F(W)")]
    cells += [dict(dataset=d, method="PLR", epsilon=float(epsilon), repeat=r, n_groups=1, lam_grid=list(p["lam_grid"]))
              for r in range(reps) for d in (datasets or p["datasets"])]
    return run_stacking(cells, seed, n_jobs, cache)


def fig3_importance(profile="quick", datasets=None, alphas=None, epsilon=1.0, n_repeats=None, seed=0, n_jobs=1,
                    cache=False):
    """PST Figure 3 [IJCAI Fig. 2(c)-(d)]: PST-F(W) with v_i = α^i against α; PST-F(U) (α-free) as reference."""
    p = _profile(profile)
    reps = n_repeats or p["n_repeats"]
    ds = datasets or p["datasets"]
    cells = [dict(dataset=d, method="PST-F(W)", epsilon=float(epsilon), repeat=r, alpha=float(a),
                  lam_grid=list(p["lam_grid"])) for r in range(reps) for d in ds for a in (alphas or p["alphas"])]
    cells += [dict(dataset=d, method="PST-F(U)", epsilon=float(epsilon), repeat=r, lam_grid=list(p["lam_grid"]))
              for r in range(reps) for d in ds]
    return run_stacking(cells, seed, n_jobs, cache)


def fig4_combiners(profile="quick", dataset="NEWS20", epsilon=1.0, n_repeats=None, seed=0, n_jobs=1, cache=False):
    """PST Figure 4 [IJCAI Fig. 3]: C-0 … C-4, C-mv, C-wmv, C-hl of PST-F(U) and PST-F(W)."""
    p = _profile(profile)
    cells = [dict(dataset=dataset, method=m, epsilon=float(epsilon), repeat=r, combiners=True,
                  lam_grid=list(p["lam_grid"])) for r in range(n_repeats or p["n_repeats"])
             for m in ("PST-F(U)", "PST-F(W)")]
    return run_stacking(cells, seed, n_jobs, cache)


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


def factor_effects(df, baseline="old defaults", by="variant", value="auc", pair_on=("repeat",), confidence=0.95):
    """Each variant against ``baseline``, per method: mean, minimum, and the paired mean difference with its CI.

    Rows of one repeat (and of any other ``pair_on`` key) are paired: they share the data
    split and, through common random numbers, the noise. The interval is the paired
    t-interval of the mean difference at ``confidence``.

    Returns
    -------
    DataFrame with one row per (method, variant): ``n``, ``mean``, ``ci_low``, ``ci_high`` (of
    the mean), ``min``, ``diff`` (variant − baseline), ``diff_low``, ``diff_high``.
    """
    out = []
    keys = list(pair_on)
    for m, part in df.groupby("method", sort=False):
        base = part[part[by] == baseline].set_index(keys)[value]
        for v, sub in part.groupby(by, sort=False):
            vals = sub.set_index(keys)[value]
            x = vals.dropna().to_numpy(dtype=float)
            n = x.size
            half = stats.t.ppf(0.5 + confidence / 2, n - 1) * x.std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
            joined = pd.concat([vals.rename("a"), base.rename("b")], axis=1, join="inner").dropna()
            d = (joined["a"] - joined["b"]).to_numpy(dtype=float)
            dh = (stats.t.ppf(0.5 + confidence / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
                  if d.size > 1 else np.nan)
            out.append(dict(method=m, variant=v, n=n, mean=x.mean() if n else np.nan,
                            ci_low=x.mean() - half if n else np.nan, ci_high=x.mean() + half if n else np.nan,
                            min=x.min() if n else np.nan, diff=d.mean() if d.size else np.nan,
                            diff_low=d.mean() - dh if d.size else np.nan,
                            diff_high=d.mean() + dh if d.size else np.nan))
    return pd.DataFrame(out)


def ablation(profile="quick", dataset="MNIST", methods=("PLR", "PST-F(U)", "PST-F(W)"), epsilons=(1.0,),
             variants=None, n_repeats=None, seed=0, n_jobs=1, cache=False):
    """The open choices (row bounding, meta-features, λ per level, intercepts), one at a time.

    ``variants`` maps a name to options (default :data:`ABLATION_VARIANTS`; :data:`FACTOR_VARIANTS`
    for the collapse's factors). ``"lam_grid_points": "budget"`` in a variant's options means a
    tied λ on a grid as large as the per-level budget (:func:`tuning_budget`).
    """
    p = _profile(profile)
    variants = ABLATION_VARIANTS if variants is None else variants
    cells = [dict(dataset=dataset, method=m, epsilon=float(e), repeat=r, options=_resolve_points(variants[v], p),
                  variant=v, lam_grid=list(p["lam_grid"]))
             for r in range(n_repeats or p["n_repeats"]) for v in variants for m in methods for e in epsilons]
    return run_cells(_ablation_cell, cells, seed=seed, n_jobs=n_jobs, cache=cache, desc="PST ablation")


def _resolve_points(options, p, n_eta=1):
    """``lam_grid_points="budget"``: as many λ as the per-level budget (one grid of the profile per level)."""
    options = dict(options)
    if options.get("lam_grid_points") == "budget":
        per_level = {**options, "lam_high": "per_level", "lam_grid_points": None}
        options["lam_grid_points"] = tuning_budget(p["lam_grid"], None, per_level, n_eta) // int(n_eta)
    return options


def _ablation_cell(variant, **cell):
    return stacking_cell(**cell)


# --- claims ----------------------------------------------------------------------------------------

def check_claim(df, better, worse, by="method", value="auc", pair_on=("repeat",), where=None,
                alternative="greater", alpha=0.05, claim=None, kind="directional", margin=None):
    """The shared verdict on a claim comparing ``better`` with ``worse`` on paired rows of ``df``.

    Rows of ``df`` with ``df[by] == better`` and ``df[by] == worse`` are matched on
    ``pair_on`` (e.g. repeat and ε: the same data split) after filtering by ``where``
    (a dict column -> value or list of values); the claim is judged on the paired differences
    ``better − worse`` by the rule of :mod:`dpstack.experiments.verdicts`.

    Parameters
    ----------
    kind : {"directional", "equivalence", "non-inferiority"}, default="directional"
        "directional": ``better`` has the larger ``value``; "equivalence": the two are within
        ``margin`` of each other (TOST); "non-inferiority": ``better`` is not below ``worse`` by
        ``margin`` or more.
    margin : float, optional
        The margin of the equivalence and non-inferiority claims (required for them);
        :data:`~dpstack.experiments.verdicts.AUC_MARGIN` on the pages.
    alternative : {"greater", "less"}, default="greater"
        "less" judges the reversed ordering of a directional claim.
    alpha : float, default=0.05
        1 − the level of the interval.

    Returns
    -------
    Verdict
        Supported, contradicted or inconclusive, with the number of pairs, the mean paired
        difference, its 95 % interval and, when inconclusive, about how many pairs would decide
        it. No pairs at all gives an inconclusive verdict with nothing measured.
    """
    if kind not in ("directional", "equivalence", "non-inferiority"):
        raise ValueError(f"kind must be 'directional', 'equivalence' or 'non-inferiority', got {kind!r}")
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative must be 'greater' or 'less', got {alternative!r}")
    if kind != "directional" and margin is None:
        raise ValueError(f"margin is required for a {kind} claim")
    part = df
    for col, val in (where or {}).items():
        vals = val if isinstance(val, (list, tuple, set)) else [val]
        part = part[part[col].isin(vals)]
    keys = list(pair_on)
    a = part[part[by] == better].set_index(keys)[value]
    b = part[part[by] == worse].set_index(keys)[value]
    joined = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
    diff = (joined["a"] - joined["b"]).to_numpy()
    if alternative == "less":
        diff = -diff
    if claim is None:
        rel = ">" if alternative == "greater" else "<"
        claim = {"directional": f"{better} {rel} {worse}",
                 "equivalence": f"{better} ≈ {worse}",
                 "non-inferiority": f"{better} not worse than {worse}"}[kind]
    if diff.size == 0:
        return no_pairs(claim, kind, float("nan") if margin is None else float(margin))
    if kind == "equivalence":
        return equivalence_verdict(diff, margin, claim=claim, alpha=alpha)
    if kind == "non-inferiority":
        return noninferiority_verdict(diff, margin, claim=claim, alpha=alpha)
    return directional_verdict(diff, claim=claim, alpha=alpha)


def claims_table(results, context=None):
    """The verdicts of a page's claims as the pages show them (one style for every page).

    ``results`` is a list of :class:`~dpstack.experiments.verdicts.Verdict` (from
    :func:`check_claim`); ``context`` one dict of leading columns per verdict (e.g. the dataset).
    See :func:`dpstack.experiments.verdicts.claims_frame` for the columns.
    """
    return claims_frame(results, context, unit="pairs")

def summarise(df, index, columns="method", value="auc"):
    """mean ± s.d. over repeats as strings, index × columns, for printing."""
    g = df.groupby([*np.atleast_1d(index), *np.atleast_1d(columns)])[value].agg(["mean", "std"])
    txt = g.apply(lambda r: f"{r['mean']:.4f} ± {r['std']:.4f}", axis=1)
    return txt.unstack(list(np.atleast_1d(columns)))


def require_data(*datasets):
    """Load (and cache) each dataset; stop with one clear message if its raw files are absent."""
    from ..datasets import DatasetNotFoundError

    for name in datasets:
        try:
            load_task(name)
        except DatasetNotFoundError as err:
            raise DatasetNotFoundError(f"this page needs {name}: {err}") from None


def _finite(df):
    return df[np.isfinite(df["epsilon"])]


def fig1_claims(df):
    """PST Figure 1's claims, judged per dataset (pairs: repeat × finite ε unless stated).

    "PST-S can be inferior to PLR" is a claim about *some* ε: supported when PLR > PST-S is
    supported at one ε at level 0.05 / (number of ε) (Bonferroni). Every other claim is
    directional.
    """
    out, ctx = [], []
    for d, part in df.groupby("dataset", sort=False):
        fin = _finite(part)
        lo, hi = fin["epsilon"].min(), fin["epsilon"].max()
        for m in STACKING_METHODS:
            out.append(check_claim(fin, hi, lo, by="epsilon", where={"method": m},
                                   claim=f"{m}: AUC at ε={hi:g} > at ε={lo:g}"))
        eps = sorted(fin["epsilon"].unique())
        per_eps = [check_claim(fin, "PLR", "PST-S", where={"epsilon": e}, alpha=0.05 / len(eps),
                               claim=f"PLR > PST-S at ε={e:g}") for e in eps]
        out.append(any_of(per_eps, "PST-S can be inferior to PLR (PLR > PST-S at some ε; Bonferroni over ε)"))
        for better in ("PST-F(W)", "PST-F(U)"):
            for worse in ("PST-S", "PLR"):
                out.append(check_claim(fin, better, worse, pair_on=("repeat", "epsilon")))
        out.append(check_claim(fin, "PST-F(W)", "PST-F(U)", pair_on=("repeat", "epsilon"),
                               claim="PST-F(W) is the best: PST-F(W) > PST-F(U)"))
        ctx += [{"dataset": d}] * (len(out) - len(ctx))
    return claims_table(out, ctx)


def fig2_claims(df):
    """PST Figure 2 [IJCAI Fig. 2(a)-(b)]: a peak at an intermediate K (best interior K beats both ends).

    Directional claims; the interior K is the one with the best mean AUC.
    """
    out, ctx = [], []
    for (d, m), part in df[df["method"] != "PLR"].groupby(["dataset", "method"], sort=False):
        ks = sorted(part["n_groups"].unique())
        means = part.groupby("n_groups")["auc"].mean()
        k_best = int(means.loc[ks[1:-1]].idxmax())
        for end in (ks[0], ks[-1]):
            out.append(check_claim(part, k_best, end, by="n_groups", claim=f"peak: K={k_best} > K={end}"))
            ctx.append({"dataset": d, "method": m})
    return claims_table(out, ctx)

def alpha_label(row):
    """"W(α=0.5)" for PST-F(W) rows with an α, else the method name."""
    a = row.get("alpha")
    return f"W(α={a:g})" if row["method"] == "PST-F(W)" and a is not None and np.isfinite(a) else row["method"]


def fig3_claims(df):
    """PST Figure 3 [IJCAI Fig. 2(c)-(d)]: α < 1 beats U; α > 1 is worse than α < 1; W is flat in α < 1.

    The first two are directional; "flat in α < 1" is an equivalence claim between the
    smallest and the largest α < 1, with margin :data:`~dpstack.experiments.verdicts.AUC_MARGIN`.
    """
    df = df.assign(label=df.apply(alpha_label, axis=1))
    out, ctx = [], []
    for d, part in df.groupby("dataset", sort=False):
        alphas = sorted(part["alpha"].dropna().unique())
        small, large = [a for a in alphas if a < 1], [a for a in alphas if a > 1]
        for a in small:
            out.append(check_claim(part, f"W(α={a:g})", "PST-F(U)", by="label"))
        for a in large:
            out.append(check_claim(part, f"W(α={small[-1]:g})", f"W(α={a:g})", by="label",
                                   claim=f"AUC decreases for α > 1: α={small[-1]:g} > α={a:g}"))
        if len(small) >= 2:
            out.append(check_claim(part, f"W(α={small[0]:g})", f"W(α={small[-1]:g})", by="label",
                                   kind="equivalence", margin=AUC_MARGIN,
                                   claim=f"not sensitive for α < 1: α={small[0]:g} ≈ α={small[-1]:g}"))
        ctx += [{"dataset": d}] * (len(out) - len(ctx))
    return claims_table(out, ctx)


def fig4_claims(df):
    """PST Figure 4 [IJCAI Fig. 3]: C-0 best single model (W); C-hl beats votes and singles (directional)."""
    out, ctx = [], []
    w = df[df["method"] == "PST-F(W)"]
    singles = sorted(c for c in df["combiner"].unique() if c not in ("C-mv", "C-wmv", "C-hl"))
    for c in singles[1:]:
        out.append(check_claim(w, "C-0", c, by="combiner"))
        ctx.append({"method": "PST-F(W)"})
    for m, part in df.groupby("method", sort=False):
        for c in ["C-mv", "C-wmv", *singles]:
            out.append(check_claim(part, "C-hl", c, by="combiner"))
            ctx.append({"method": m})
    return claims_table(out, ctx)

def eps_axis(df, column="epsilon"):
    """Copy of df with ``eps_pos``: ε, and ε = ∞ drawn at twice the largest finite ε (tick "∞")."""
    finite = df.loc[np.isfinite(df[column]), column]
    inf_pos = 2 * finite.max() if len(finite) else 1.0
    return df.assign(eps_pos=np.where(np.isfinite(df[column]), df[column], inf_pos)), inf_pos


def set_eps_ticks(ax, df, inf_pos):
    """Log-x ticks at the ε values, the ∞ position labelled "∞"."""
    vals = sorted(df["eps_pos"].unique())
    ax.set_xscale("log")
    ax.set_xticks(vals)
    ax.set_xticklabels(["∞" if v == inf_pos and not np.isfinite(df["epsilon"]).all() else f"{v:g}" for v in vals])
    ax.minorticks_off()


def chosen_lam(df, index, columns="method"):
    """The λ chosen most often over repeats (ties: the smaller), index × columns.

    With a ``lam_high`` column (the stacked methods' C-hl rows) each entry shows both
    levels as ``"λ_l / λ_h"`` (the most frequent pair); PLR and the low-level combiners
    show their one λ.
    """
    def pick(part):
        if "lam_high" not in part or not np.isfinite(part["lam_high"].astype(float)).any():
            return f"{part['lam'].mode().min():g}"
        pairs = part[["lam", "lam_high"]].astype(float).value_counts()
        top = sorted(pairs[pairs == pairs.max()].index)[0]
        return f"{top[0]:g} / {top[1]:g}"

    keys = [*np.atleast_1d(index), *np.atleast_1d(columns)]
    return df.groupby(keys).apply(pick, include_groups=False).unstack(list(np.atleast_1d(columns)))


def high_level_signal(est, X, y):
    """Signal and noise the high-level PLR of a fitted stacking model saw on its part D_h.

    signal = ‖∇ of the mean logistic loss at w = 0‖ = ‖mean(y·m)‖/2 over the meta-features m of
    D_h (y = ±1); noise = ‖b‖/n_h, the size of the perturbation term's gradient. When
    noise ≳ signal the high level's weights, and with them the sign of C-hl, are mostly noise.

    An analysis, not a release: it needs the rows of D_h and the high level's noise, which
    exist only on an estimator fitted with ``diagnostics=True`` (such an object is not private).
    """
    from ..stacking import meta_features

    diag = getattr(est, "diagnostics_", None)
    if diag is None:
        raise ValueError("high_level_signal needs an estimator fitted with diagnostics=True "
                         "(the rows of D_h and the high level's noise are diagnostics)")
    rows = diag.high_index
    M = meta_features(est.decision_function_low(X[rows]), est.meta_features)
    ys = np.where(y[rows] == est.classes_[1], 1.0, -1.0)
    signal = float(np.linalg.norm((ys[:, None] * M).mean(axis=0)) / 2)
    noise = float(diag.high_level.noise_norm / rows.size)
    return dict(meta_rms=float(np.sqrt((M ** 2).sum(axis=1).mean())), signal=signal, noise=noise,
                high_coef_norm=float(np.linalg.norm(est.high_level_.coef_)))


def swing_diagnostics(dataset="MNIST", method="PST-F(U)", epsilon=0.25, lam=0.1, n_seeds=20, options=None,
                      lam_high=None):
    """Refit one PST-F configuration with ``n_seeds`` noise seeds on the whole training set.

    Returns one row per seed: test AUC of C-hl, of the best single low-level model and
    of C-wmv, and :func:`high_level_signal`. Shows where an AUC that swings across repeats
    comes from. ``lam_high``: λ of the high level (default: ``lam``, as with tied λ).
    """
    X, y, X_test, y_test, variance = load_task(dataset)
    rows = []
    for s in range(n_seeds):
        # an analysis of the noise: diagnostics=True keeps the high level's noise and the rows of D_h
        est = _estimator(method, epsilon, lam, 5, _importance(method, None, variance), options, s,
                         diagnostics=True, lam_high=lam if lam_high is None else lam_high).fit(X, y)
        d = est.decision_functions(X_test)
        singles = [_auc(y_test, v) for k, v in d.items() if k not in ("C-mv", "C-wmv", "C-hl")]
        rows.append(dict(seed=s, auc_hl=_auc(y_test, d["C-hl"]), auc_best_single=max(singles),
                         auc_wmv=_auc(y_test, d["C-wmv"]), **high_level_signal(est, X, y)))
    return pd.DataFrame(rows)
