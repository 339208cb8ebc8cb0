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
candidates evaluated and the best test AUC among them (``auc_oracle``: the selection's cost).
Each figure has a ``figN_cells`` function (its grid, registered in :mod:`dpstack.companion.results`
so the page renders from the committed paper-profile table) and a ``figN_…`` function running it.
The claims are judged in :mod:`dpstack.companion.papers.pst.pages`; the open choices and the tuning
budget shared with the PPTL experiments live in :mod:`dpstack.companion.papers.open_choices`.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd

from dpstack.base import PrivacyLeakWarning
from dpstack.companion import stats
from dpstack.companion.papers.open_choices import (
    ABLATION_VARIANTS,
    DEFAULT_OPTIONS,
    budget_grid,
    check_lam_high_rule,
    high_level_signal,
    lam_high_start,
    low_grid,
    resolve_grid_points,
    select_on_scores,
    synthetic_task,
    tuning_budget,
)
from dpstack.companion.runner import run_cells
from dpstack.linear import PrivateLogisticRegression
from dpstack.stacking import PrivateStackingClassifier, bound_rows

__all__ = [
    "PROFILES",
    "STACKING_METHODS",
    "OLD_LAM_GRIDS",
    "load_task",
    "require_data",
    "stacking_cell",
    "select_on_validation",
    "run_stacking",
    "fig1_cells",
    "fig1_epsilon",
    "fig1_refit_cells",
    "fig1_row_scale_cells",
    "fig1_redrawn_cells",
    "fig2_cells",
    "fig2_groups",
    "fig3_cells",
    "fig3_importance",
    "fig4_cells",
    "fig4_combiners",
    "refit_cells",
    "row_scale_cells",
    "redrawn_cells",
    "fig2_refit_cells",
    "fig2_row_scale_cells",
    "fig2_redrawn_cells",
    "fig3_refit_cells",
    "fig3_row_scale_cells",
    "fig4_refit_cells",
    "fig4_row_scale_cells",
    "ablation_cells",
    "ablation",
    "ablation_cell",
    "grid_comparison_cells",
    "swing_cell",
    "swing_cells",
    "swing_diagnostics",
]

STACKING_METHODS = ("PLR", "PST-S", "PST-F(U)", "PST-F(W)")


#: Repeats and grids. "paper": the papers' repeats (10; 30 for the K sweeps) and denser grids.
PROFILES = {
    "quick": dict(
        n_repeats=4,
        k_repeats=3,
        epsilons=(0.25, 1.0, 4.0, np.inf),
        lam_grid=(1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1e4),
        k_grid=(1, 3, 5, 10, 20),
        alphas=(0.5, 0.9, 1.0, 1.1, 2.0),
        datasets=("MNIST", "NEWS20"),
    ),
    "paper": dict(
        n_repeats=10,
        k_repeats=30,
        epsilons=(0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, np.inf),
        lam_grid=(1e-6, 1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0, 10.0, 100.0, 1e3, 1e4),
        k_grid=(1, 2, 3, 5, 7, 10, 15, 20, 30, 50),
        alphas=(0.3, 0.5, 0.7, 0.9, 1.0, 1.1, 1.5, 2.0),
        datasets=("MNIST", "NEWS20"),
    ),
}

#: The grids before the range was widened (kept to measure what the widening changes).
OLD_LAM_GRIDS = {"quick": (1e-4, 1e-3, 1e-2, 1e-1, 1.0), "paper": (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 1.0)}


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
    from dpstack.datasets import mnist_pst, news20_pst

    if dataset == "SYNTH":
        return synthetic_task(data_seed)
    if dataset == "MNIST":
        d = mnist_pst(random_state=data_seed)
    elif dataset == "NEWS20":
        d = news20_pst(random_state=data_seed)
    else:
        raise ValueError(f"dataset must be 'MNIST', 'NEWS20' or 'SYNTH', got {dataset!r}")
    return d.X_train, d.y_train, d.X_test, d.y_test, d.feature_variance


def _importance(method, alpha, feature_variance):
    if method != "PST-F(W)":
        return None
    if alpha is None:
        return feature_variance
    # PST §4.1: v_i = α^i, i = rank of the feature in PCA order (1 = largest variance)
    return float(alpha) ** np.arange(1, feature_variance.size + 1)


def _estimator(method, epsilon, lam, n_groups, importance, options, seed, diagnostics=False, lam_high=None):
    """The estimator of one grid cell; the tasks' labels are 0/1, a public label set.

    ``lam_high`` (a number) overrides the rule of ``options["lam_high"]``.
    """
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    if lam_high is None:
        lam_high = lam_high_start(opts, lam)
    if method == "PLR":
        return PrivateLogisticRegression(
            epsilon=epsilon,
            lam=lam,
            fit_intercept=opts["low_intercept"],
            random_state=seed,
            classes=[0, 1],
            diagnostics=diagnostics,
        )
    partition = "samples" if method == "PST-S" else "features"
    return PrivateStackingClassifier(
        epsilon=epsilon,
        partition=partition,
        n_groups=n_groups,
        feature_importance=importance,
        lam=lam,
        lam_blocks=opts["lam_blocks"] if partition == "features" else "same",
        lam_high=lam_high,
        row_bound=opts["row_bound"],
        row_scale=opts["row_scale"],
        meta_features=opts["meta_features"],
        low_intercept=opts["low_intercept"],
        high_intercept=opts["high_intercept"],
        random_state=seed,
        classes=[0, 1],
        diagnostics=diagnostics,
    )


def _scores(est, method, X, combiners):
    """{combiner name: scores} for one fitted model (PLR: one entry)."""
    if method == "PLR":
        return {"C-hl": est.decision_function(X)}
    return est.decision_functions(X) if combiners else {"C-hl": est.decision_function(X)}


def _best(val_aucs):
    """(index, margin) of the candidate chosen on validation AUC (:func:`~.shared.select_on_scores`).

    No finite AUC (every candidate failed): the first candidate, margin NaN.
    """
    index, margin = select_on_scores(val_aucs)
    return (0 if index is None else index), margin


def stacking_cell(
    dataset,
    method,
    epsilon,
    repeat=0,
    n_groups=5,
    alpha=None,
    lam_grid=(1e-3, 1e-2, 1e-1),
    options=None,
    combiners=False,
    val_fraction=1 / 3,
    data_seed=0,
    lam_high_grid=None,
    refit=False,
    *,
    seed_sequence,
):
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

    ``refit`` (a protocol the papers leave open; default False): False scores
    the model fitted on the fit part, the one whose validation AUC chose λ; True refits the chosen
    setting (λ, and λ_h of C-hl) on the whole training set, fit and validation parts together, with
    the same noise seed, and scores that model. ``options["refit"]`` is not read here: the PST
    ablation's variants carry it for the transfer cells only, so their PST rows keep their meaning.
    ``data_seed`` selects the draw of the data (:func:`load_task`; NEWS20's split is fixed).

    Returns
    -------
    list of dict with keys ``combiner``, ``auc`` (test), ``val_auc``, ``lam`` (λ_l, or PLR's λ),
    ``lam_high`` (λ_h of C-hl; NaN for PLR and the low-level combiners), ``n_candidates``,
    ``auc_oracle`` (the best test AUC among the candidates evaluated) and ``auc_sd_over_lam``;
    with ``refit=True`` also ``auc_fit``, the test AUC of the validated model before the refit.
    """
    if method not in STACKING_METHODS:
        raise ValueError(f"method must be one of {STACKING_METHODS}, got {method!r}")
    check_lam_high_rule({**DEFAULT_OPTIONS, **(options or {})}["lam_high"])
    X, y, X_test, y_test, variance = load_task(dataset, data_seed)
    return select_on_validation(
        method,
        epsilon,
        X,
        y,
        X_test,
        y_test,
        _importance(method, alpha, variance),
        n_groups=n_groups,
        lam_grid=lam_grid,
        options=options,
        combiners=combiners,
        val_fraction=val_fraction,
        lam_high_grid=lam_high_grid,
        refit=refit,
        seed_sequence=seed_sequence,
    )


def select_on_validation(
    method,
    epsilon,
    X,
    y,
    X_test,
    y_test,
    importance=None,
    *,
    n_groups=5,
    lam_grid=(1e-3, 1e-2, 1e-1),
    options=None,
    combiners=False,
    val_fraction=1 / 3,
    lam_high_grid=None,
    refit=False,
    seed_sequence,
):
    """The papers' protocol on given arrays: split, fit every candidate, choose λ on validation, score.

    The selection and scoring of :func:`stacking_cell` (which calls it on the task it loads):
    the training set (``X``, ``y``) is split into a fit part and a validation part
    (``val_fraction``) by the first child of ``seed_sequence``, every candidate gets the noise
    seed drawn from the second, λ is chosen per level (``options["lam_high"]``) or tied, PLR gets
    the equal budget, and the model fitted on the fit part is scored on (``X_test``, ``y_test``).
    ``importance`` is the feature importance of PST-F(W) (None for the other methods). The
    choice of λ reads the validation AUC without noise: outside the ε-DP guarantee. ``refit=True``
    refits each row's chosen setting on all of (``X``, ``y``) before scoring (see
    :func:`stacking_cell`).

    Returns
    -------
    list of dict, the rows of :func:`stacking_cell`.
    """
    if method not in STACKING_METHODS:
        raise ValueError(f"method must be one of {STACKING_METHODS}, got {method!r}")
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    rule = check_lam_high_rule(opts["lam_high"])
    split_ss, noise_ss = seed_sequence.spawn(2)
    perm = np.random.default_rng(split_ss).permutation(len(y))
    n_val = int(round(val_fraction * len(y)))
    val, fit = perm[:n_val], perm[n_val:]
    if method == "PLR" and (opts["row_bound"] != "clip" or opts["row_scale"] != 1.0):
        X, X_test = _bound_plr_rows(X, X_test, fit, opts["row_bound"], opts["row_scale"])
    noise_seed = int(np.random.default_rng(noise_ss).integers(2**63 - 1))
    high_grid = [float(v) for v in (lam_grid if lam_high_grid is None else lam_high_grid)]
    grid = low_grid(lam_grid, opts)
    if method == "PLR" and opts["equal_budget"]:
        grid = budget_grid(lam_grid, tuning_budget(lam_grid, high_grid, opts))

    def fitted(lam, lam_high=None, low_level=None, rows=fit):
        est = _estimator(
            method,
            epsilon,
            lam,
            n_groups,
            importance,
            opts,
            noise_seed,
            lam_high=lam_high if lam_high is not None else lam_high_start(opts, lam),
        )
        with warnings.catch_warnings():
            # the private_max variant warns at every fit; its row says it is not private. Only that
            # warning is silenced: any other PrivacyLeakWarning still reaches the caller.
            warnings.filterwarnings("ignore", message="row_bound='private_max'", category=PrivacyLeakWarning)
            if low_level is None:
                est.fit(X[rows], y[rows])
            else:  # the high level alone, on D_h, the chosen low level fixed (same seeds)
                est.fit(X[rows], y[rows], low_level=low_level)
        return est

    trials = []
    for lam in grid:
        est = fitted(lam)
        trials.append((lam, est, _scores(est, method, X[val], combiners), _scores(est, method, X_test, combiners)))

    def row(name, cands, lam_of, lam_high_of):
        val_aucs = np.array([stats.auc(y[val], t[2][name]) for t in cands])
        test_aucs = np.array([stats.auc(y_test, t[3][name]) for t in cands])
        best, margin = _best(val_aucs)
        return dict(
            combiner=name,
            auc=test_aucs[best],
            val_auc=val_aucs[best],
            lam=lam_of(best),
            lam_high=lam_high_of(best),
            n_candidates=len(cands),
            auc_oracle=float(np.nanmax(test_aucs)) if np.any(np.isfinite(test_aucs)) else np.nan,
            auc_sd_over_lam=float(np.nanstd(test_aucs)),
            choice_margin=margin,
        )

    rows = []
    for name in trials[0][2]:
        if method == "PLR" or name != "C-hl":
            rows.append(row(name, trials, lambda i: trials[i][0], lambda i: np.nan))
        elif rule != "per_level":
            rows.append(row(name, trials, lambda i: trials[i][0], lambda i: float(trials[i][1].lam_high)))
        else:
            first = row(name, trials, lambda i: trials[i][0], lambda i: float(trials[i][1].lam_high))
            chosen = trials[[t[0] for t in trials].index(first["lam"])]
            high = []
            for h in high_grid:
                est = fitted(chosen[0], lam_high=h, low_level=chosen[1].low_level_)
                high.append((h, est, _scores(est, method, X[val], False), _scores(est, method, X_test, False)))
            r = row(name, high, lambda i, chosen=chosen: chosen[0], lambda i, high=high: high[i][0])
            # the candidates of both stages count, and the oracle sees both
            tests = [stats.auc(y_test, t[3]["C-hl"]) for t in trials + high]
            r.update(
                n_candidates=len(trials) + len(high),
                auc_oracle=float(np.nanmax(tests)),
                auc_sd_over_lam=float(np.nanstd(tests)),
                # the two stages' choices: the nearer of them to changing
                choice_margin=float(np.fmin(first["choice_margin"], r["choice_margin"])),
            )
            rows.append(r)
    if refit:  # the chosen setting of each row, refitted on fit + validation (same noise seed), scored
        every = np.arange(len(y))
        for r in rows:
            est = fitted(r["lam"], None if np.isnan(r["lam_high"]) else r["lam_high"], rows=every)
            r["auc_fit"] = r["auc"]
            r["auc"] = stats.auc(y_test, _scores(est, method, X_test, combiners)[r["combiner"]])
    return rows


def _bound_plr_rows(X, X_test, fit, method, row_scale=1.0):
    """PLR sees whole rows: apply the row-bounding method under study (PLR itself clips to 1)."""
    row_max = None
    if method == "private_max":  # NOT private: the scale is the largest row norm of the private fit set
        row_max = float(np.sqrt((X[fit] ** 2).sum(axis=1)).max()) / row_scale
    return (bound_rows(X, method, row_scale, row_max=row_max), bound_rows(X_test, method, row_scale, row_max=row_max))


def run_stacking(cells, seed=0, n_jobs=1, cache=False):
    """Run :func:`stacking_cell` over a list of cells; returns the tidy DataFrame."""
    return run_cells(stacking_cell, cells, seed=seed, n_jobs=n_jobs, cache=cache, desc="PST")


def fig1_cells(profile="quick", datasets=None, methods=STACKING_METHODS, epsilons=None, n_repeats=None):
    """The cells of PST Figure 1: every (repeat, dataset, method, ε)."""
    p = _profile(profile)
    return [
        dict(dataset=d, method=m, epsilon=float(e), repeat=r, lam_grid=list(p["lam_grid"]))
        for r in range(n_repeats or p["n_repeats"])
        for d in datasets or p["datasets"]
        for m in methods
        for e in epsilons or p["epsilons"]
    ]


def fig1_epsilon(
    profile="quick",
    datasets=None,
    methods=STACKING_METHODS,
    epsilons=None,
    n_repeats=None,
    seed=0,
    n_jobs=1,
    cache=False,
):
    """PST Figure 1: test AUC against ε for PLR, PST-S, PST-F(U), PST-F(W) on MNIST and NEWS20."""
    return run_stacking(fig1_cells(profile, datasets, methods, epsilons, n_repeats), seed, n_jobs, cache)


def fig1_refit_cells(profile="quick", datasets=None, methods=STACKING_METHODS, epsilons=None, n_repeats=None):
    """PST Figure 1's cells with the chosen setting refitted on the whole training set (``refit=True``).

    Every method follows the same rule: λ (and λ_h) chosen on the validation part as in
    :func:`fig1_cells`, then the chosen setting refitted on fit + validation and scored.
    """
    return refit_cells(fig1_cells(profile, datasets, methods, epsilons, n_repeats))


def fig1_row_scale_cells(
    profile="quick", row_scales=(2.0, 4.0, 8.0), datasets=None, methods=STACKING_METHODS, epsilons=None, n_repeats=None
):
    """PST Figure 1's cells with every row divided by a public constant before the private fit.

    One copy of the grid per value of ``row_scales`` (``options={"row_scale": s}``: rows divided
    by s, then clipped to the norm bound 1); the constant does not look at the data, so the
    guarantee is unchanged. Scale 1 is :func:`fig1_cells` itself.
    """
    return row_scale_cells(fig1_cells(profile, datasets, methods, epsilons, n_repeats), row_scales)


def fig1_redrawn_cells(
    profile="quick", n_repeats=30, datasets=None, methods=STACKING_METHODS, epsilons=None, redraw=("MNIST",)
):
    """PST Figure 1's cells over ``n_repeats`` repeats, the data drawn anew in each repeat where it can be.

    A dataset in ``redraw`` gets ``data_seed=repeat``: MNIST's 5,000 images and their
    3,000/2,000 train/test split are drawn again (and the PCA refitted) in every repeat, so the
    spread over repeats includes the data's sampling variation. NEWS20's split is the archive's
    fixed "bydate" split: its cells keep the one draw.
    """
    return redrawn_cells(fig1_cells(profile, datasets, methods, epsilons, n_repeats), redraw)


def fig2_cells(profile="quick", datasets=None, k_grid=None, epsilon=1.0, n_repeats=None):
    """The cells of PST Figure 2 [IJCAI Fig. 2(a)–(b)]: PST-F(U) and PST-F(W) at every K, PLR (K = 1) as reference."""
    p = _profile(profile)
    reps = n_repeats or p["k_repeats"]
    cells = [
        dict(dataset=d, method=m, epsilon=float(epsilon), repeat=r, n_groups=int(k), lam_grid=list(p["lam_grid"]))
        for r in range(reps)
        for d in datasets or p["datasets"]
        for k in k_grid or p["k_grid"]
        for m in ("PST-F(U)", "PST-F(W)")
    ]
    cells += [
        dict(dataset=d, method="PLR", epsilon=float(epsilon), repeat=r, n_groups=1, lam_grid=list(p["lam_grid"]))
        for r in range(reps)
        for d in datasets or p["datasets"]
    ]
    return cells


def fig2_groups(
    profile="quick", datasets=None, k_grid=None, epsilon=1.0, n_repeats=None, seed=0, n_jobs=1, cache=False
):
    """PST Figure 2 [IJCAI Fig. 2(a)-(b)]: test AUC against K at ε = 1 for PST-F(U) and PST-F(W) (PLR as reference)."""
    return run_stacking(fig2_cells(profile, datasets, k_grid, epsilon, n_repeats), seed, n_jobs, cache)


def fig3_cells(profile="quick", datasets=None, alphas=None, epsilon=1.0, n_repeats=None):
    """The cells of PST Figure 3 [IJCAI Fig. 2(c)–(d)]: PST-F(W) with v_i = α^i at every α, PST-F(U) as reference."""
    p = _profile(profile)
    reps = n_repeats or p["n_repeats"]
    ds = datasets or p["datasets"]
    cells = [
        dict(
            dataset=d, method="PST-F(W)", epsilon=float(epsilon), repeat=r, alpha=float(a), lam_grid=list(p["lam_grid"])
        )
        for r in range(reps)
        for d in ds
        for a in alphas or p["alphas"]
    ]
    cells += [
        dict(dataset=d, method="PST-F(U)", epsilon=float(epsilon), repeat=r, lam_grid=list(p["lam_grid"]))
        for r in range(reps)
        for d in ds
    ]
    return cells


def fig3_importance(
    profile="quick", datasets=None, alphas=None, epsilon=1.0, n_repeats=None, seed=0, n_jobs=1, cache=False
):
    """PST Figure 3 [IJCAI Fig. 2(c)-(d)]: PST-F(W) with v_i = α^i against α; PST-F(U) (α-free) as reference."""
    return run_stacking(fig3_cells(profile, datasets, alphas, epsilon, n_repeats), seed, n_jobs, cache)


def fig4_cells(profile="quick", dataset="NEWS20", epsilon=1.0, n_repeats=None):
    """The cells of PST Figure 4 [IJCAI Fig. 3]: PST-F(U) and PST-F(W), every combiner scored."""
    p = _profile(profile)
    return [
        dict(dataset=dataset, method=m, epsilon=float(epsilon), repeat=r, combiners=True, lam_grid=list(p["lam_grid"]))
        for r in range(n_repeats or p["n_repeats"])
        for m in ("PST-F(U)", "PST-F(W)")
    ]


def fig4_combiners(profile="quick", dataset="NEWS20", epsilon=1.0, n_repeats=None, seed=0, n_jobs=1, cache=False):
    """PST Figure 4 [IJCAI Fig. 3]: C-0 … C-4, C-mv, C-wmv, C-hl of PST-F(U) and PST-F(W)."""
    return run_stacking(fig4_cells(profile, dataset, epsilon, n_repeats), seed, n_jobs, cache)


# ------------------------------------------------------------------ protocol variants of a figure's grid
def refit_cells(cells):
    """``cells`` with the chosen setting refitted on the whole training set (``refit=True`` in every cell).

    Every method follows the same rule: λ (and λ_h) chosen on the validation part as in the
    primary grid, then the chosen setting refitted on fit + validation and scored.
    """
    return [dict(c, refit=True) for c in cells]


def row_scale_cells(cells, row_scales=(2.0, 4.0, 8.0)):
    """One copy of ``cells`` per public row scale s (``options={"row_scale": s}``: rows ÷ s, then clipped to 1).

    The constant does not look at the data, so the guarantee is unchanged; scale 1 is the primary grid.
    The cells must not carry other options (the primary figures' cells carry none).
    """
    if any(c.get("options") for c in cells):
        raise ValueError("cells must not carry options: a row-scale variant changes the row scale only")
    return [dict(c, options={"row_scale": float(s)}) for s in row_scales for c in cells]


def redrawn_cells(cells, redraw=("MNIST",)):
    """``cells`` with the data drawn anew in each repeat (``data_seed=repeat``) for the datasets in ``redraw``.

    MNIST's images and its train/test split (and the PCA) are drawn from the seed; NEWS20's split
    is the archive's fixed "bydate" split, so its cells keep the one draw (and are the primary's own).
    """
    return [dict(c, data_seed=int(c["repeat"])) if c["dataset"] in redraw else c for c in cells]


def fig2_refit_cells(profile="quick", datasets=None, k_grid=None, epsilon=1.0, n_repeats=None):
    """PST Figure 2 [IJCAI Fig. 2(a)–(b)]'s cells (:func:`fig2_cells`), every method refitted on the whole training set."""
    return refit_cells(fig2_cells(profile, datasets, k_grid, epsilon, n_repeats))


def fig2_row_scale_cells(
    profile="quick", row_scales=(2.0, 4.0, 8.0), datasets=None, k_grid=None, epsilon=1.0, n_repeats=None
):
    """PST Figure 2 [IJCAI Fig. 2(a)–(b)]'s cells (:func:`fig2_cells`), one copy per public row scale (:func:`row_scale_cells`)."""
    return row_scale_cells(fig2_cells(profile, datasets, k_grid, epsilon, n_repeats), row_scales)


def fig2_redrawn_cells(profile="quick", datasets=None, k_grid=None, epsilon=1.0, n_repeats=None):
    """PST Figure 2 [IJCAI Fig. 2(a)–(b)]'s cells (:func:`fig2_cells`) with MNIST drawn anew in every repeat (:func:`redrawn_cells`)."""
    return redrawn_cells(fig2_cells(profile, datasets, k_grid, epsilon, n_repeats))


def fig3_refit_cells(profile="quick", datasets=None, alphas=None, epsilon=1.0, n_repeats=None):
    """PST Figure 3 [IJCAI Fig. 2(c)–(d)]'s cells (:func:`fig3_cells`), every method refitted on the whole training set."""
    return refit_cells(fig3_cells(profile, datasets, alphas, epsilon, n_repeats))


def fig3_row_scale_cells(
    profile="quick", row_scales=(2.0, 4.0, 8.0), datasets=None, alphas=None, epsilon=1.0, n_repeats=None
):
    """PST Figure 3 [IJCAI Fig. 2(c)–(d)]'s cells (:func:`fig3_cells`), one copy per public row scale (:func:`row_scale_cells`)."""
    return row_scale_cells(fig3_cells(profile, datasets, alphas, epsilon, n_repeats), row_scales)


def fig4_refit_cells(profile="quick", dataset="NEWS20", epsilon=1.0, n_repeats=None):
    """PST Figure 4 [IJCAI Fig. 3]'s cells (:func:`fig4_cells`), each combiner's chosen setting refitted on the whole training set."""
    return refit_cells(fig4_cells(profile, dataset, epsilon, n_repeats))


def fig4_row_scale_cells(profile="quick", row_scales=(2.0, 4.0, 8.0), dataset="NEWS20", epsilon=1.0, n_repeats=None):
    """PST Figure 4 [IJCAI Fig. 3]'s cells (:func:`fig4_cells`), one copy per public row scale (:func:`row_scale_cells`)."""
    return row_scale_cells(fig4_cells(profile, dataset, epsilon, n_repeats), row_scales)


def ablation_cells(
    profile="quick",
    dataset="MNIST",
    methods=("PLR", "PST-F(U)", "PST-F(W)"),
    epsilons=(1.0,),
    variants=None,
    n_repeats=None,
    lam_grid=None,
):
    """The cells of :func:`ablation`: every (repeat, variant, method, ε).

    ``variants`` maps a name to options (default :data:`~dpstack.companion.papers.open_choices.ABLATION_VARIANTS`).
    ``lam_grid`` replaces the profile's λ grid (the ablation page compares grids).
    """
    p = _profile(profile)
    variants = ABLATION_VARIANTS if variants is None else variants
    grid = list(p["lam_grid"] if lam_grid is None else lam_grid)
    return [
        dict(
            dataset=dataset,
            method=m,
            epsilon=float(e),
            repeat=r,
            options=resolve_grid_points(variants[v], {**p, "lam_grid": grid}),
            variant=v,
            lam_grid=grid,
        )
        for r in range(n_repeats or p["n_repeats"])
        for v in variants
        for m in methods
        for e in epsilons
    ]


def ablation(
    profile="quick",
    dataset="MNIST",
    methods=("PLR", "PST-F(U)", "PST-F(W)"),
    epsilons=(1.0,),
    variants=None,
    n_repeats=None,
    seed=0,
    n_jobs=1,
    cache=False,
):
    """The open choices (row bounding, meta-features, λ per level, intercepts), one at a time.

    ``variants`` maps a name to options (default :data:`~dpstack.companion.papers.open_choices.ABLATION_VARIANTS`;
    :data:`~dpstack.companion.papers.open_choices.FACTOR_VARIANTS` for the collapse's factors).
    ``"lam_grid_points": "budget"`` in a variant's options means a tied λ on a grid as large as the
    per-level budget (:func:`~dpstack.companion.papers.open_choices.tuning_budget`).
    """
    cells = ablation_cells(profile, dataset, methods, epsilons, variants, n_repeats)
    return run_cells(ablation_cell, cells, seed=seed, n_jobs=n_jobs, cache=cache, desc="PST ablation")


def grid_comparison_cells(profile="quick", n_repeats=10, dataset="MNIST"):
    """PLR on the λ grid before the widening (:data:`OLD_LAM_GRIDS`) and on the profile's grid.

    Variants ``"old grid"`` and ``"new grid"``, each at PST Figure 1's smallest and largest finite
    ε, paired on the repeat (same split, same noise seeds); every grid spends the same tuning budget.
    """
    p = _profile(profile)
    finite = [e for e in p["epsilons"] if np.isfinite(e)]
    epsilons = [min(finite), max(finite)]
    cells = []
    for which, grid in (("old grid", OLD_LAM_GRIDS[profile]), ("new grid", p["lam_grid"])):
        cells += ablation_cells(profile, dataset, ("PLR",), epsilons, {which: {}}, n_repeats, lam_grid=grid)
    return cells


def ablation_cell(variant, **cell):
    """:func:`stacking_cell` of one ablation cell (``variant`` names the options, kept as a column)."""
    return stacking_cell(**cell)


def require_data(*datasets):
    """Load (and cache) each dataset; stop with one clear message if its raw files are absent."""
    from dpstack.datasets import DatasetNotFoundError

    for name in datasets:
        try:
            load_task(name)
        except DatasetNotFoundError as err:
            raise DatasetNotFoundError(f"this page needs {name}: {err}") from None


def swing_cell(dataset, method, epsilon, lam, noise_seed, options=None, lam_high=None, case=None, seed_sequence=None):
    """One row of :func:`swing_diagnostics`: the configuration refitted with noise seed ``noise_seed``.

    ``case`` is a label kept as a column; ``seed_sequence`` (the runner's) is not used: the noise
    seed is ``noise_seed`` itself, so a row does not depend on the grid it is computed in.
    """
    X, y, X_test, y_test, variance = load_task(dataset)
    # an analysis of the noise: diagnostics=True keeps the high level's noise and the rows of D_h
    est = _estimator(
        method,
        epsilon,
        lam,
        5,
        _importance(method, None, variance),
        options,
        int(noise_seed),
        diagnostics=True,
        lam_high=lam if lam_high is None else lam_high,
    ).fit(X, y)
    d = est.decision_functions(X_test)
    singles = [stats.auc(y_test, v) for k, v in d.items() if k not in ("C-mv", "C-wmv", "C-hl")]
    return dict(
        seed=int(noise_seed),
        auc_hl=stats.auc(y_test, d["C-hl"]),
        auc_best_single=max(singles),
        auc_wmv=stats.auc(y_test, d["C-wmv"]),
        **high_level_signal(est, X, y),
    )


def swing_cells(cases, n_seeds=20):
    """Cells of :func:`swing_cell`: every case (a dict of its keyword arguments, with ``case``) × noise seed."""
    return [dict(case, noise_seed=s) for case in cases for s in range(int(n_seeds))]


def swing_diagnostics(
    dataset="MNIST", method="PST-F(U)", epsilon=0.25, lam=0.1, n_seeds=20, options=None, lam_high=None
):
    """Refit one PST-F configuration with ``n_seeds`` noise seeds on the whole training set.

    Returns one row per seed: test AUC of C-hl, of the best single low-level model and
    of C-wmv, and :func:`~dpstack.companion.papers.open_choices.high_level_signal`. Shows where an AUC that
    swings across repeats comes from. ``lam_high``: λ of the high level (default: ``lam``, as with
    tied λ).
    """
    rows = [swing_cell(dataset, method, epsilon, lam, s, options=options, lam_high=lam_high) for s in range(n_seeds)]
    return pd.DataFrame(rows)
