"""Transfer experiments: PPTL Table 1 (MNIST), PST Table 2 = PPTL Table 4 and PPTL Table 2 / Figs 3b, 4 (RUIJIN-like).

Protocol (PPTL §4.2; the method is described in :mod:`dpstack.transfer`):

* Source and target each split 80/20 train/test at random per repeat. Methods:
  PPTL-FS(W) / PPTL-FS(R) (= PST-H(W)/(U)), SimComb (= PPHTL), SourceD (the
  private source PLR applied to the target), Direct (= PLR(target)); K = 5;
  D_t0/D_t1 = 50/50 of the target training set.
* λ (shared by source and target, λ_s = λ_t) and η are chosen on a validation
  third of the target training set, then (PPTL-FS, ``lam_high="per_level"``, the default)
  the level-1 λ_h with level 0 fixed. The papers use 3-fold cross-validation; one split
  keeps the runtime down. **Choosing λ, η on private validation data is outside the
  privacy guarantee** (the papers do not say so).
* The model whose validation AUC chose the setting is scored on the test part. With
  ``options["refit"]=True`` the chosen setting is refitted on the whole target training
  part first: a fresh draw of the noise that no validation has seen.
* Every method evaluates the same number of candidates (:func:`transfer_candidates`):
  SimComb a denser λ grid, Direct and SourceD a λ grid as large as the stacked methods'
  λ × η + λ_h budget.
* MNIST (:func:`dpstack.datasets.mnist_transfer`): source 0 vs 8 (2,000), target
  0 vs 9 (1,000), PCA to 100 fitted on source ∪ target (outside both guarantees, as
  in PPTL); importances = PCA variances. RUIJIN-like
  (:func:`dpstack.datasets.make_ruijin_like`): a **synthetic** cohort; main centre =
  source, branches 1-16 = targets, the doctor-style importances; rows divided by the
  public constant ``RUIJIN_ROW_SCALE`` = 10 then clipped (a data-independent map).

The source is one private release per repeat: it is fitted once per (repeat, λ, ε_s,
method) and reused for every branch (cached in-process), as the main centre would.
"""

from __future__ import annotations

import copy
import functools
import warnings

import numpy as np

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
    synthetic_weights,
    tuning_budget,
)
from dpstack.companion.runner import run_cells
from dpstack.linear import PrivateLogisticRegression
from dpstack.stacking import bound_rows
from dpstack.transfer import PrivateTransferStacking, SimComb

__all__ = [
    "TRANSFER_METHODS",
    "PST_NAMES",
    "TRANSFER_PROFILES",
    "OLD_TRANSFER_LAM_GRIDS",
    "RUIJIN_ROW_SCALE",
    "load_transfer_task",
    "require_data",
    "transfer_candidates",
    "transfer_cell",
    "run_transfer",
    "table1_cells",
    "pptl_table1",
    "table1_refit_cells",
    "table1_row_scale_cells",
    "groups_refit_cells",
    "groups_row_scale_cells",
    "table1_redrawn_cells",
    "branches_cells",
    "ruijin_branches",
    "epsilon_cells",
    "ruijin_epsilon",
    "groups_cells",
    "transfer_groups",
    "ablation_cells",
    "transfer_ablation",
    "ablation_cell",
    "grid_comparison_cells",
    "transfer_swing_diagnostics",
]

TRANSFER_METHODS = ("PPTL-FS(W)", "PPTL-FS(R)", "SimComb", "SourceD", "Direct")
#: PST Table 2's names for the same methods.
PST_NAMES = {
    "PPTL-FS(W)": "PST-H(W)",
    "PPTL-FS(R)": "PST-H(U)",
    "SimComb": "PPHTL",
    "Direct": "PLR(target)",
    "SourceD": "SourceD",
    "PLR(main)": "PLR(main)",
}
#: Public constant dividing the RUIJIN-like rows before clipping (most rows have norm 6-10).
RUIJIN_ROW_SCALE = 10.0

#: Repeats and grids. Every λ grid spans :data:`~dpstack.companion.papers.open_choices.LAM_RANGE` (the same
#: range as the PST grids), densest where the chosen λ falls (1e-3 to 10 on MNIST and the
#: RUIJIN-like cohort). With the equal tuning budget SimComb tunes budget / |η grid| values of λ,
#: so |λ grid| must be a multiple of |η grid| (quick: 8 λ, 2 η; paper: 10 λ, 5 η).
TRANSFER_PROFILES = {
    "quick": dict(
        n_repeats=3,
        k_repeats=3,
        epsilons=(0.5, 2.0, 8.0),
        lam_grid=(1e-6, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 1e4),
        eta_grid=(0.2, 0.8),
        k_grid=(1, 3, 5, 10, 25),
        branches=tuple(range(1, 17)),
        ruijin_repeats=2,
    ),
    "paper": dict(
        n_repeats=10,
        k_repeats=30,
        epsilons=(0.5, 1.0, 2.0, 4.0, 8.0),
        lam_grid=(1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1e4),
        eta_grid=(0.1, 0.3, 0.5, 0.7, 0.9),
        k_grid=(1, 2, 3, 5, 7, 10, 15, 25, 50),
        branches=tuple(range(1, 17)),
        ruijin_repeats=10,
    ),
}

#: The grids before the range was widened (kept to measure what the widening changes).
OLD_TRANSFER_LAM_GRIDS = {"quick": (1e-3, 1e-2, 1e-1, 1.0), "paper": (1e-4, 1e-3, 1e-2, 1e-1, 1.0)}


def _profile(profile):
    if profile not in TRANSFER_PROFILES:
        raise ValueError(f"profile must be one of {sorted(TRANSFER_PROFILES)}, got {profile!r}")
    return TRANSFER_PROFILES[profile]


@functools.lru_cache(maxsize=2)
def _ruijin(cohort_seed):
    from dpstack.datasets import make_ruijin_like

    return make_ruijin_like(random_state=cohort_seed)


@functools.lru_cache(maxsize=4)
def _mnist(data_seed):
    """PPTL §4.1's MNIST tasks (:func:`dpstack.datasets.mnist_transfer`), cached per process."""
    from dpstack.datasets import mnist_transfer

    d = mnist_transfer(random_state=data_seed)
    return d.X_source, d.y_source, d.X_target, d.y_target, d.feature_variance


def load_transfer_task(dataset, branch=None, data_seed=0):
    """(X_source, y_source, X_target, y_target, feature_importance, row_scale), cached per process.

    ``dataset="MNIST"`` (branch ignored) or ``"RUIJIN"`` (``branch`` in 1..16; synthetic cohort).
    """
    if dataset == "MNIST":
        return (*_mnist(data_seed), 1.0)
    if dataset == "SYNTH":
        return (*_synthetic_transfer(data_seed), 1.0)
    if dataset == "RUIJIN":
        c = _ruijin(data_seed)
        if branch not in range(1, 17):
            raise ValueError(f"branch must be in 1..16, got {branch!r}")
        s, t = c.centres["main"], c.centres[f"branch_{branch}"]
        return s.data, s.target, t.data, t.target, c.feature_importance, RUIJIN_ROW_SCALE
    raise ValueError(f"dataset must be 'MNIST', 'RUIJIN' or 'SYNTH', got {dataset!r}")


@functools.lru_cache(maxsize=2)
def _synthetic_transfer(data_seed, n_source=1200, n_target=400):
    """Small offline source/target pair (``dataset="SYNTH"``; tests): the target's weights are
    the source's plus a perturbation, features with variance 0.8^i as in
    :func:`~dpstack.companion.papers.open_choices.synthetic_task`."""
    Xs, ys, _, _, v = synthetic_task(data_seed, n_train=n_source, n_test=1)
    rng = np.random.default_rng([data_seed, 1])
    Xt = rng.normal(size=(n_target, v.size)) * np.sqrt(v)
    beta_t = synthetic_weights(data_seed, v.size) * (1 + 0.3 * rng.normal(size=v.size))
    yt = (rng.uniform(size=n_target) < 1 / (1 + np.exp(-Xt @ beta_t))).astype(int)
    return Xs, ys, bound_rows(Xt, "clip", row_scale=2.0), yt, v


def _split(n, rng, test_fraction):
    perm = rng.permutation(n)
    n_test = int(round(test_fraction * n))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


_SOURCE_CACHE: dict = {}


def _fitted_source(key, estimator, X, y, rows):
    """``estimator.fit_source(X[rows], y[rows])``, once per key in this process (one private release per repeat).

    The key holds everything the source fit depends on (its seed included), so a hit
    returns exactly what a fresh fit would: results do not depend on cell order. The rows are
    gathered only when the source is fitted. A hit is a shallow copy: ``set_params``, the
    target's ``fit`` and the predictions assign attributes of the copy and only read the
    source release they share (its coefficients, bounds and ledger are never changed in
    place), so the cached release stays as it was fitted.
    """
    if key not in _SOURCE_CACHE:
        if len(_SOURCE_CACHE) > 256:
            _SOURCE_CACHE.clear()
        _SOURCE_CACHE[key] = estimator.fit_source(X[rows], y[rows])
    return copy.copy(_SOURCE_CACHE[key])


def transfer_candidates(method, lam_grid, eta_grid, lam_high_grid=None, options=None):
    """The (λ, η) candidates of one method's first stage, and the per-level budget they fill.

    The stacked methods (PPTL-FS) evaluate λ grid × η grid, plus, with ``lam_high="per_level"``,
    the λ_h grid (:func:`~dpstack.companion.papers.open_choices.tuning_budget`). With
    ``options["equal_budget"]`` every other method evaluates as many candidates: SimComb a
    denser λ grid × the η grid, Direct, SourceD and PLR(main) (no η) a λ grid of the whole
    budget (:func:`~dpstack.companion.papers.open_choices.budget_grid`: the same range).

    Returns
    -------
    list of (λ, η) pairs
    """
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    eta_grid = [float(e) for e in eta_grid]
    low = low_grid(lam_grid, opts)
    budget = tuning_budget(lam_grid, lam_high_grid, opts, len(eta_grid))
    if method in ("PPTL-FS(W)", "PPTL-FS(R)"):
        return [(lam, eta) for lam in low for eta in eta_grid]
    if method == "SimComb":
        if not opts["equal_budget"]:
            return [(lam, eta) for lam in low for eta in eta_grid]
        if budget % len(eta_grid):
            raise ValueError(
                f"equal tuning budget: SimComb tunes λ × η, so the stacked methods' budget ({budget}) "
                f"must be a multiple of the size of eta_grid ({len(eta_grid)}); give lam_high_grid "
                f"a size that is a multiple of {len(eta_grid)}"
            )
        return [(lam, eta) for lam in budget_grid(lam_grid, budget // len(eta_grid)) for eta in eta_grid]
    grid = budget_grid(lam_grid, budget) if opts["equal_budget"] else low
    return [(lam, 1.0) for lam in grid]


def transfer_cell(
    dataset,
    method,
    epsilon,
    repeat=0,
    branch=None,
    n_groups=5,
    lam_grid=(1e-3, 1e-2, 1e-1),
    eta_grid=(0.2, 0.8),
    options=None,
    test_fraction=0.2,
    val_fraction=1 / 3,
    data_seed=0,
    refit=None,
    lam_high_grid=None,
    *,
    seed_sequence,
):
    """One (dataset, branch, method, ε_s = ε_t = ε, repeat): tune (λ, η, λ_h), refit, return the target test AUC.

    Seeds: the source/target train-test splits and the source's noise depend only on
    the repeat (shared by all methods, ε and branches of a repeat); the target's noise
    additionally on the branch. ``refit`` (default ``options["refit"]``, False): False scores the
    model fitted on the fit part, the one whose validation AUC chose the setting; True refits the
    chosen setting on the whole training part, a fresh draw of the noise that no validation has
    seen (at small ε the stacked methods' high level then flips sign in some repeats).
    ``method="PLR(main)"`` is PLR on the source scored on the source's test part (PST Table 2's caption).

    Tuning (:func:`transfer_candidates`): λ (λ_s = λ_t of the low level) and η on the
    validation AUC; for PPTL-FS with ``options["lam_high"] == "per_level"`` (default) the
    level-1 λ_h is then chosen over ``lam_high_grid`` (default ``lam_grid``) on the
    validation AUC, the chosen level 0 fixed (only level 1 is refitted, through
    ``fit(low_level=...)``). Every method evaluates the same number of candidates when
    ``options["equal_budget"]`` (default).

    Returns
    -------
    dict with ``auc``, ``val_auc``, ``lam``, ``lam_high`` (λ_h of PPTL-FS; NaN for the one-level
    methods), ``eta``, ``n_candidates``, ``auc_fit`` (test AUC of the selected model fitted on the
    fit part) and ``auc_oracle`` (the best test AUC among all candidates fitted on the fit part:
    ``auc_oracle − auc_fit`` is what selecting on the validation part costs).
    """
    if method not in TRANSFER_METHODS + ("PLR(main)",):
        raise ValueError(f"method must be one of {TRANSFER_METHODS + ('PLR(main)',)}, got {method!r}")
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    refit = bool(opts["refit"]) if refit is None else bool(refit)
    rule = check_lam_high_rule(opts["lam_high"])
    high_grid = [float(v) for v in (lam_grid if lam_high_grid is None else lam_high_grid)]
    candidates = transfer_candidates(method, lam_grid, eta_grid, high_grid, opts)
    stacked = method in ("PPTL-FS(W)", "PPTL-FS(R)")
    Xs, ys, Xt, yt, importance, row_scale = load_transfer_task(dataset, branch, data_seed)
    split_ss, source_ss, target_ss = seed_sequence.spawn(3)
    rng = np.random.default_rng(split_ss)
    s_train, s_test = _split(len(ys), rng, test_fraction)
    t_train, t_test = _split(len(yt), np.random.default_rng([*split_ss.generate_state(2), branch or 0]), test_fraction)
    perm = np.random.default_rng(target_ss.spawn(1)[0]).permutation(t_train)
    n_val = int(round(val_fraction * t_train.size))
    t_val, t_fit = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    row_scale = row_scale * opts["row_scale"]
    source_seed = int(np.random.default_rng(source_ss).integers(2**63 - 1))
    target_seed = int(np.random.default_rng([*target_ss.generate_state(2), branch or 0]).integers(2**63 - 1))
    n_s_val = int(round(val_fraction * s_train.size))

    def fit_model(lam, eta, lam_high, final, low_level=None):
        """The model with (λ, η, λ_h) fitted on the fit part (``final``: on the whole training part)."""
        fit_rows = t_train if final else t_fit
        if method == "PLR(main)":  # the source's own PLR, tuned and scored on the source
            fit_s = s_train if final else s_train[n_s_val:]
            plr = PrivateLogisticRegression(
                epsilon=epsilon, lam=lam, fit_intercept=opts["low_intercept"], random_state=source_seed, classes=[0, 1]
            )
            return plr.fit(bound_rows(Xs[fit_s], opts["row_bound"], row_scale), ys[fit_s])
        if method in ("SimComb", "SourceD", "Direct"):
            # random_state = source_seed at the source fit, target_seed at the target fit: the
            # source release is the same for every branch of a repeat, the target noise is the branch's own
            est = SimComb(
                epsilon_source=epsilon,
                epsilon_target=epsilon,
                lam_source=lam,
                lam=lam,
                eta=1.0 if method == "Direct" else eta,
                fit_intercept=opts["low_intercept"],
                row_bound=opts["row_bound"],
                row_scale=row_scale,
                random_state=source_seed,
                classes=[0, 1],
            )
            key = (
                "simcomb",
                dataset,
                data_seed,
                epsilon,
                lam,
                opts["row_bound"],
                row_scale,
                opts["low_intercept"],
                source_seed,
                s_train.size,
            )
            model = _fitted_source(key, est, Xs, ys, s_train)
            if method == "SourceD":
                return model
            return model.set_params(eta=est.eta, random_state=target_seed).fit(Xt[fit_rows], yt[fit_rows])
        est = PrivateTransferStacking(
            epsilon_source=epsilon,
            epsilon_target=epsilon,
            n_groups=n_groups,
            feature_importance=importance if method == "PPTL-FS(W)" else None,
            lam_source=lam,
            lam=lam,
            lam_blocks=opts["lam_blocks"],
            lam_high=lam_high,
            eta=eta,
            row_bound=opts["row_bound"],
            row_scale=row_scale,
            meta_features=opts["meta_features"],
            low_intercept=opts["low_intercept"],
            high_intercept=opts["high_intercept"],
            random_state=source_seed,
            classes=[0, 1],
        )
        key = (
            "pptl",
            method,
            dataset,
            data_seed,
            epsilon,
            lam,
            n_groups,
            opts["row_bound"],
            row_scale,
            opts["low_intercept"],
            opts["lam_blocks"],
            source_seed,
            s_train.size,
        )
        model = _fitted_source(key, est, Xs, ys, s_train)
        model.set_params(
            eta=eta,
            lam_high=lam_high,
            meta_features=opts["meta_features"],
            high_intercept=opts["high_intercept"],
            random_state=target_seed,
        )
        return model.fit(Xt[fit_rows], yt[fit_rows], low_level=low_level)

    def auc_on(model, part):
        """AUC of a fitted model on the validation part or the test part (of the source for PLR(main))."""
        if method == "PLR(main)":
            rows = s_train[:n_s_val] if part == "val" else s_test
            return stats.auc(ys[rows], model.decision_function(bound_rows(Xs[rows], opts["row_bound"], row_scale)))
        rows = t_val if part == "val" else t_test
        kind = {"model": "source"} if method == "SourceD" else {}
        return stats.auc(yt[rows], model.decision_function(Xt[rows], **kind))

    margins = []  # of every choice made (one, or two for the per-level rule): the row keeps the nearest to changing

    def best_of(trials):
        index, margin = select_on_scores([t["val"] for t in trials])
        if index is None:
            return None
        margins.append(margin)
        return trials[index]

    with warnings.catch_warnings():
        # the private_max variant warns at every fit; its name says it is not private. Only that
        # warning is silenced: any other PrivacyLeakWarning still reaches the caller.
        warnings.filterwarnings("ignore", message="row_bound='private_max'", category=PrivacyLeakWarning)
        trials = []
        for lam, eta in candidates:
            lam_high = lam_high_start(opts, lam) if stacked else np.nan
            model = fit_model(lam, eta, lam_high, final=False)
            trials.append(
                dict(
                    lam=lam,
                    eta=eta,
                    lam_high=lam_high,
                    model=model,
                    val=auc_on(model, "val"),
                    test=auc_on(model, "test"),
                )
            )
        chosen = best_of(trials)
        if chosen is None:
            return dict(
                auc=np.nan,
                val_auc=np.nan,
                lam=np.nan,
                lam_high=np.nan,
                eta=np.nan,
                n_candidates=len(trials),
                auc_fit=np.nan,
                auc_oracle=np.nan,
                choice_margin=np.nan,
            )
        if stacked and rule == "per_level":
            second = []
            for h in high_grid:
                model = fit_model(chosen["lam"], chosen["eta"], h, final=False, low_level=chosen["model"].low_level_)
                second.append(
                    dict(chosen, lam_high=h, model=model, val=auc_on(model, "val"), test=auc_on(model, "test"))
                )
            chosen = best_of(second) or chosen
            trials += second
        auc = (
            auc_on(fit_model(chosen["lam"], chosen["eta"], chosen["lam_high"], final=True), "test")
            if refit
            else chosen["test"]
        )
    tests = np.array([t["test"] for t in trials])
    return dict(
        auc=auc,
        val_auc=chosen["val"],
        lam=chosen["lam"],
        lam_high=float(chosen["lam_high"]),
        eta=chosen["eta"],
        n_candidates=len(trials),
        auc_fit=chosen["test"],
        auc_oracle=float(np.nanmax(tests)) if np.any(np.isfinite(tests)) else np.nan,
        choice_margin=float(min(margins)) if margins else np.nan,
    )


def run_transfer(cells, seed=0, n_jobs=1, cache=False):
    """Run :func:`transfer_cell` over cells; returns the tidy DataFrame."""
    return run_cells(transfer_cell, cells, seed=seed, n_jobs=n_jobs, cache=cache, desc="transfer")


def _grid(p):
    return dict(lam_grid=list(p["lam_grid"]), eta_grid=list(p["eta_grid"]))


def _epsilon_sweep_cells(profile, dataset, branch, methods, epsilons, n_repeats):
    """Every (repeat, ε, method) of one task (``branch`` None: no branch column), the profile's grids."""
    p = _profile(profile)
    where = {} if branch is None else {"branch": int(branch)}
    return [
        dict(dataset=dataset, **where, method=m, epsilon=float(e), repeat=r, **_grid(p))
        for r in range(n_repeats or p["n_repeats"])
        for e in epsilons or p["epsilons"]
        for m in methods
    ]


def table1_cells(profile="quick", methods=TRANSFER_METHODS, epsilons=None, n_repeats=None):
    """The cells of PPTL Table 1: every (repeat, ε, method) on the MNIST transfer task."""
    return _epsilon_sweep_cells(profile, "MNIST", None, methods, epsilons, n_repeats)


def pptl_table1(
    profile="quick", methods=TRANSFER_METHODS, epsilons=None, n_repeats=None, seed=0, n_jobs=1, cache=False
):
    """PPTL Table 1 / Figure 3a: MNIST transfer 0/8 → 0/9 at ε_s = ε_t = ε."""
    return run_transfer(table1_cells(profile, methods, epsilons, n_repeats), seed, n_jobs, cache)


def table1_refit_cells(profile="quick", methods=TRANSFER_METHODS, epsilons=None, n_repeats=None):
    """PPTL Table 1's cells with the chosen setting refitted on the whole target training part (``refit=True``)."""
    return [dict(c, refit=True) for c in table1_cells(profile, methods, epsilons, n_repeats)]


def table1_row_scale_cells(
    profile="quick", row_scales=(2.0, 4.0, 8.0), methods=TRANSFER_METHODS, epsilons=None, n_repeats=None
):
    """PPTL Table 1's cells with every row (source and target) divided by a public constant before the private fits.

    One copy of the grid per value of ``row_scales`` (``options={"row_scale": s}``); scale 1 is
    :func:`table1_cells` itself.
    """
    cells = table1_cells(profile, methods, epsilons, n_repeats)
    return [dict(c, options={"row_scale": float(s)}) for s in row_scales for c in cells]


def table1_redrawn_cells(profile="quick", methods=TRANSFER_METHODS, epsilons=None, n_repeats=30):
    """PPTL Table 1's cells over ``n_repeats`` repeats, the images drawn anew in each (``data_seed=repeat``).

    :func:`dpstack.datasets.mnist_transfer` draws the 2,000 source and 1,000 target images (and
    refits the PCA) from its seed; the 80/20 train/test splits are redrawn in every repeat anyway.
    """
    return [dict(c, data_seed=int(c["repeat"])) for c in table1_cells(profile, methods, epsilons, n_repeats)]


def branches_cells(
    profile="quick", methods=TRANSFER_METHODS + ("PLR(main)",), branches=None, epsilon=1.0, n_repeats=None
):
    """The cells of PST Table 2 = PPTL Table 4: every (repeat, branch, method); PLR(main) once per repeat."""
    p = _profile(profile)
    branches = branches or p["branches"]
    cells = []
    for r in range(n_repeats or p["ruijin_repeats"]):
        for b in branches:
            for m in methods:
                if m == "PLR(main)" and b != branches[0]:
                    continue  # the main centre's own PLR does not depend on the branch
                cells.append(
                    dict(dataset="RUIJIN", branch=int(b), method=m, epsilon=float(epsilon), repeat=r, **_grid(p))
                )
    return cells


def ruijin_branches(
    profile="quick",
    methods=TRANSFER_METHODS + ("PLR(main)",),
    branches=None,
    epsilon=1.0,
    n_repeats=None,
    seed=0,
    n_jobs=1,
    cache=False,
):
    """PST Table 2 = PPTL Table 4 on the synthetic RUIJIN-like cohort: every branch at ε = 1."""
    return run_transfer(branches_cells(profile, methods, branches, epsilon, n_repeats), seed, n_jobs, cache)


def epsilon_cells(profile="quick", branch=1, methods=TRANSFER_METHODS, epsilons=None, n_repeats=None):
    """The cells of PPTL Table 2: one RUIJIN-like branch, every (repeat, ε, method)."""
    return _epsilon_sweep_cells(profile, "RUIJIN", branch, methods, epsilons, n_repeats)


def ruijin_epsilon(
    profile="quick", branch=1, methods=TRANSFER_METHODS, epsilons=None, n_repeats=None, seed=0, n_jobs=1, cache=False
):
    """PPTL Table 2 / Figure 3b: one branch (PST #1 = PPTL centre 3) against ε."""
    return run_transfer(epsilon_cells(profile, branch, methods, epsilons, n_repeats), seed, n_jobs, cache)


def groups_cells(profile="quick", datasets=("RUIJIN", "MNIST"), k_grid=None, branch=1, epsilon=1.0, n_repeats=None):
    """The cells of PPTL Figure 4: PPTL-FS(W) and PPTL-FS(R) at every K, on each dataset."""
    p = _profile(profile)
    return [
        dict(
            dataset=d,
            branch=int(branch) if d == "RUIJIN" else None,
            method=m,
            epsilon=float(epsilon),
            repeat=r,
            n_groups=int(k),
            **_grid(p),
        )
        for r in range(n_repeats or p["k_repeats"])
        for d in datasets
        for k in k_grid or p["k_grid"]
        for m in ("PPTL-FS(W)", "PPTL-FS(R)")
    ]


def groups_refit_cells(profile="quick", datasets=("MNIST",), k_grid=None, branch=1, epsilon=1.0, n_repeats=None):
    """PPTL Figure 4's cells (:func:`groups_cells`; the MNIST panel by default), refitted on the whole target training part."""
    return [dict(c, refit=True) for c in groups_cells(profile, datasets, k_grid, branch, epsilon, n_repeats)]


def groups_row_scale_cells(
    profile="quick", row_scales=(4.0,), datasets=("MNIST",), k_grid=None, branch=1, epsilon=1.0, n_repeats=None
):
    """PPTL Figure 4's cells (:func:`groups_cells`; the MNIST panel by default), one copy per public row scale.

    ``options={"row_scale": s}``: every row (source and target) divided by s before the private fits.
    """
    cells = groups_cells(profile, datasets, k_grid, branch, epsilon, n_repeats)
    return [dict(c, options={"row_scale": float(s)}) for s in row_scales for c in cells]


def transfer_groups(
    profile="quick",
    datasets=("RUIJIN", "MNIST"),
    k_grid=None,
    branch=1,
    epsilon=1.0,
    n_repeats=None,
    seed=0,
    n_jobs=1,
    cache=False,
):
    """PPTL Figure 4: PPTL-FS(W) and PPTL-FS(R) against K at ε = 1 (30 repeats in the paper)."""
    return run_transfer(groups_cells(profile, datasets, k_grid, branch, epsilon, n_repeats), seed, n_jobs, cache)


def ablation_cells(
    profile="quick",
    dataset="MNIST",
    variants=None,
    methods=TRANSFER_METHODS,
    epsilon=1.0,
    n_repeats=None,
    lam_grid=None,
):
    """The cells of :func:`transfer_ablation`: every (repeat, variant, method).

    ``lam_grid`` replaces the profile's λ grid (the ablation page compares grids).
    """
    p = _profile(profile)
    p = {**p, "lam_grid": tuple(p["lam_grid"] if lam_grid is None else lam_grid)}
    variants = ABLATION_VARIANTS if variants is None else variants
    return [
        dict(
            dataset=dataset,
            branch=1 if dataset == "RUIJIN" else None,
            method=m,
            epsilon=float(epsilon),
            repeat=r,
            options=resolve_grid_points(variants[v], p, len(p["eta_grid"])),
            variant=v,
            **_grid(p),
        )
        for r in range(n_repeats or p["n_repeats"])
        for v in variants
        for m in methods
    ]


def transfer_ablation(
    profile="quick",
    dataset="MNIST",
    variants=None,
    methods=TRANSFER_METHODS,
    epsilon=1.0,
    n_repeats=None,
    seed=0,
    n_jobs=1,
    cache=False,
):
    """The open choices for the transfer methods, one at a time (see
    :data:`~dpstack.companion.papers.open_choices.ABLATION_VARIANTS`; :data:`~dpstack.companion.papers.open_choices.FACTOR_VARIANTS`
    for the factors of the high level's collapse)."""
    cells = ablation_cells(profile, dataset, variants, methods, epsilon, n_repeats)
    return run_cells(ablation_cell, cells, seed=seed, n_jobs=n_jobs, cache=cache, desc="transfer ablation")


def grid_comparison_cells(profile="quick", n_repeats=10, methods=("Direct", "SourceD", "SimComb")):
    """The one-level methods on the λ grid before the widening (:data:`OLD_TRANSFER_LAM_GRIDS`) and on the profile's.

    Variants ``"old grid"`` and ``"new grid"``, each at PPTL Table 1's smallest and largest ε,
    paired on the repeat; every grid spends the same tuning budget.
    """
    p = _profile(profile)
    cells = []
    for eps in (min(p["epsilons"]), max(p["epsilons"])):
        for which, grid in (("old grid", OLD_TRANSFER_LAM_GRIDS[profile]), ("new grid", p["lam_grid"])):
            cells += ablation_cells(profile, "MNIST", {which: {}}, methods, eps, n_repeats, lam_grid=grid)
    return cells


def ablation_cell(variant, **cell):
    """:func:`transfer_cell` of one ablation cell (``variant`` names the options, kept as a column)."""
    return transfer_cell(**cell)


# --- data ------------------------------------------------------------------------------------------


def require_data():
    """Load (and cache) the MNIST transfer tasks; stop with one clear message if MNIST is absent."""
    from dpstack.datasets import DatasetNotFoundError

    try:
        load_transfer_task("MNIST")
    except DatasetNotFoundError as err:
        raise DatasetNotFoundError(f"this page needs MNIST: {err}") from None


def transfer_swing_diagnostics(
    method="PPTL-FS(W)", epsilon=1.0, lam=1.0, eta=0.1, n_seeds=20, options=None, data_seed=0, lam_high=None
):
    """PPTL-FS on the MNIST transfer task (80 % of the target for training), refitted with ``n_seeds`` seeds.

    ``lam_high``: λ of the level-1 model (default: ``lam``, as with tied λ).

    One row per seed: test AUC of C-hl, best single block, C-wmv, and the high level's
    signal and noise (:func:`dpstack.companion.papers.open_choices.high_level_signal`).
    """
    Xs, ys, Xt, yt, importance, row_scale = load_transfer_task("MNIST", None, data_seed)
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    rng = np.random.default_rng(data_seed)
    train, test = _split(len(yt), rng, 0.2)
    rows = []
    for s in range(n_seeds):
        # an analysis of the noise: diagnostics=True keeps the high level's noise and the rows of D_t1
        est = PrivateTransferStacking(
            epsilon_source=epsilon,
            epsilon_target=epsilon,
            feature_importance=importance if method == "PPTL-FS(W)" else None,
            lam_source=lam,
            lam=lam,
            lam_high=lam if lam_high is None else lam_high,
            eta=eta,
            meta_features=opts["meta_features"],
            row_bound=opts["row_bound"],
            high_intercept=opts["high_intercept"],
            random_state=s,
            classes=[0, 1],
            diagnostics=True,
        )
        est.fit(Xt[train], yt[train], X_source=Xs, y_source=ys)
        d = est.decision_functions(Xt[test])
        singles = [stats.auc(yt[test], v) for k, v in d.items() if k not in ("C-mv", "C-wmv", "C-hl")]
        rows.append(
            dict(
                seed=s,
                auc_hl=stats.auc(yt[test], d["C-hl"]),
                auc_best_single=max(singles),
                auc_wmv=stats.auc(yt[test], d["C-wmv"]),
                **high_level_signal(est, Xt[train], yt[train]),
            )
        )
    import pandas as pd

    return pd.DataFrame(rows)
