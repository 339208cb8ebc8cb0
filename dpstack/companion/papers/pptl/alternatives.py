"""PPTL against today's alternatives: the grid of the page that sets the papers' transfer methods beside DP-GD.

Same data, same splits, same repeats and the same tuning budget as PPTL Table 1
(:func:`~dpstack.companion.papers.pptl.grids.table1_cells`, registered with the MNIST images drawn
anew in every repeat): the task of :func:`~dpstack.companion.papers.pptl.grids.load_transfer_task`
(source MNIST 0 vs 8, 2,000 images; target 0 vs 9, 1,000 images; PCA to 100 fitted on source ∪
target, as in PPTL; rows in the unit ball), each split 80/20 train/test and the target's training
part split into a validation third and a fit part, all drawn from the repeat's seed sequence exactly
as :func:`~dpstack.companion.papers.pptl.grids.transfer_cell` draws them. A repeat of this grid and
the same repeat of Table 1 (same root seed) therefore share their source rows, their target fit /
validation split and their test set: the comparisons are paired. The papers' methods (Direct,
SourceD, SimComb, PPTL-FS(W)) are read from Table 1's committed result; this grid computes:

* **DP-GD (target only)** — noisy full-batch gradient descent
  (:class:`~dpstack.alternatives.NoisyGradientDescentClassifier`) on the target's fit part: what
  Direct is to PLR;
* **DP-GD from the source** — the source model released by DP-GD at (εₛ, δ) on the source's
  training part, then DP-GD on the target regularised towards it and started from it
  (:class:`~dpstack.alternatives.centred.SourceCentredGradientDescentClassifier`), at (εₜ, δ):
  hypothesis transfer by gradient perturbation, what SimComb and PPTL-FS are to PLR;
* **DP-GD from a public source** — the same, the source model fitted by the same descent
  *without noise*: an upper line that assumes the source data public (no guarantee for a source
  record), not a private method.

Every method's ε is εₛ = εₜ = ε, as in Table 1; δ = :data:`DELTA` (below 1/n for the 800
target and 1,600 source training rows), the papers' replace-one relation, :data:`GD_STEPS` steps of
size 1/L fixed in advance. Tuned: λ (λₛ = λₜ, as for the papers' methods) over Table 1's λ range,
and whether the descent releases its last iterate or the average of its iterates (post-processing
of the same noisy steps; :func:`candidates`), with as many candidates in all as every method of
Table 1 (Direct's equal budget, :func:`~dpstack.companion.papers.pptl.grids.transfer_candidates`),
on the validation AUC by the book's one selection rule
(:func:`~dpstack.companion.papers.open_choices.select_on_scores`). Choosing them on the private
validation rows is outside every method's guarantee alike (the page says so and prices it).

The source model of a (repeat, λ, ε) is one release, cached in-process: the private source
depends on ε, the public one does not (it is fitted once per repeat and λ).
"""

from __future__ import annotations

import numpy as np

from dpstack.alternatives import NoisyGradientDescentClassifier
from dpstack.alternatives.centred import SourceCentredGradientDescentClassifier
from dpstack.companion import stats
from dpstack.companion.papers.open_choices import budget_grid, select_on_scores
from dpstack.companion.papers.pptl.grids import TRANSFER_PROFILES, load_transfer_task, transfer_candidates
from dpstack.stacking import bound_rows

__all__ = [
    "ALTERNATIVE_METHODS",
    "PAPER_METHODS",
    "DELTA",
    "GD_STEPS",
    "GUARANTEES",
    "alternatives_cells",
    "alternative_cell",
    "candidates",
    "source_model",
    "RELEASES",
]

ALTERNATIVE_METHODS = ("DP-GD (target only)", "DP-GD from the source", "DP-GD from a public source")
#: The papers' methods set beside them (Table 1's committed rows).
PAPER_METHODS = ("Direct", "SourceD", "SimComb", "PPTL-FS(W)")
#: δ of the (ε, δ) methods: below 1/n for the target's 800 and the source's 1,600 training rows
DELTA = 1e-5
GD_STEPS = 100
#: The two release rules tuned with λ: the last iterate (False) and the average of the iterates (True).
RELEASES = (False, True)

#: What each method of the page guarantees: (guarantee, neighbouring relation, privacy unit, what it
#: assumes beyond a public norm bound and public hyper-parameters). εₛ protects a source record, εₜ a
#: target record; on this page εₛ = εₜ = ε.
GUARANTEES = {
    "Direct": ("pure εₜ", "replace-one", "one target sample", "no source"),
    "SourceD": ("pure εₛ", "replace-one", "one source sample", "the source model applied to the target as is"),
    "SimComb": (
        "pure εₛ; pure εₜ",
        "replace-one",
        "one source / one target sample",
        "source and target share the features",
    ),
    "PPTL-FS(W)": (
        "pure εₛ; pure εₜ",
        "replace-one",
        "one source / one target sample",
        "public feature importances; source and target share the features",
    ),
    "DP-GD (target only)": (
        "(εₜ, δ)",
        "replace-one",
        "one target sample",
        f"no source; {GD_STEPS} steps, PLD accounting",
    ),
    "DP-GD from the source": (
        "(εₛ, δ); (εₜ, δ)",
        "replace-one",
        "one source / one target sample",
        f"the source released by DP-GD; {GD_STEPS} steps each, PLD accounting",
    ),
    "DP-GD from a public source": (
        "none for a source record; (εₜ, δ)",
        "replace-one",
        "one target sample",
        "the source data public (fitted without noise): an upper line, not a private method",
    ),
}


def alternatives_cells(profile="quick", methods=ALTERNATIVE_METHODS, epsilons=None, n_repeats=None):
    """The cells of the page: every (repeat, ε, method) of PPTL Table 1's grid, for the alternatives."""
    if profile not in TRANSFER_PROFILES:
        raise ValueError(f"profile must be one of {sorted(TRANSFER_PROFILES)}, got {profile!r}")
    unknown = [m for m in methods if m not in ALTERNATIVE_METHODS]
    if unknown:
        raise ValueError(f"methods must be taken from {list(ALTERNATIVE_METHODS)}, got {unknown}")
    p = TRANSFER_PROFILES[profile]
    return [
        dict(
            dataset="MNIST",
            method=m,
            epsilon=float(e),
            repeat=r,
            lam_grid=list(p["lam_grid"]),
            eta_grid=list(p["eta_grid"]),
        )
        for r in range(n_repeats or p["n_repeats"])
        for e in epsilons or p["epsilons"]
        for m in methods
    ]


_SOURCE_CACHE: dict = {}


def source_model(method, epsilon, lam, X, y, seed, average=False):
    """The source model the transfer alternatives start from: DP-GD on (X, y) at (ε, :data:`DELTA`), or the
    same descent without noise for the public source (``epsilon`` then ignored). Returns its coefficients.

    ``average``: release the average of the iterates instead of the last one. Cached in-process by
    everything the fit depends on (one release per repeat, λ, release rule and ε).
    """
    public = method == "DP-GD from a public source"
    eps = np.inf if public else float(epsilon)
    key = (public, eps, float(lam), bool(average), int(seed), X.shape, hash(X.tobytes()), hash(y.tobytes()))
    if key not in _SOURCE_CACHE:
        if len(_SOURCE_CACHE) > 1024:
            _SOURCE_CACHE.clear()
        est = NoisyGradientDescentClassifier(
            epsilon=eps,
            delta=DELTA,
            lam=float(lam),
            n_steps=GD_STEPS,
            average=bool(average),
            random_state=seed,
            classes=[0, 1],
        ).fit(X, y)
        _SOURCE_CACHE[key] = est.coef_[0].copy()
    return _SOURCE_CACHE[key].copy()


def candidates(lam_grid, eta_grid):
    """The (λ, average) candidates of every alternative: as many as Direct's in Table 1 (the stacked
    methods' budget, :func:`~dpstack.companion.papers.pptl.grids.transfer_candidates`), half of them
    λ values over ``lam_grid``'s range (λₛ = λₜ) releasing the last iterate, half the same λ values
    releasing the average of the iterates (:data:`RELEASES`).
    """
    budget = len(transfer_candidates("Direct", lam_grid, eta_grid))
    if budget % len(RELEASES):
        raise ValueError(f"the tuning budget ({budget}) must be a multiple of {len(RELEASES)} (the release rules)")
    lams = budget_grid(lam_grid, budget // len(RELEASES))
    return [(float(lam), average) for average in RELEASES for lam in lams]


def _split(n, rng, test_fraction):
    perm = rng.permutation(n)
    n_test = int(round(test_fraction * n))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def alternative_cell(
    dataset,
    method,
    epsilon,
    repeat=0,
    lam_grid=(1e-3, 1e-2, 1e-1),
    eta_grid=(0.2, 0.8),
    test_fraction=0.2,
    val_fraction=1 / 3,
    data_seed=0,
    *,
    seed_sequence,
):
    """One (method, εₛ = εₜ = ε, repeat): λ chosen on the target's validation AUC, the chosen model's test AUC.

    The splits and seeds are Table 1's (:func:`~dpstack.companion.papers.pptl.grids.transfer_cell`):
    the source and target train/test splits from the first child of ``seed_sequence``, the
    target's fit / validation split from the third; the source's noise from the second child (as
    PPTL's source release), the target's from the third. λ (λₛ = λₜ) ranges over Direct's
    candidates (:func:`~dpstack.companion.papers.pptl.grids.transfer_candidates`: ``lam_grid``'s
    range, the stacked methods' budget); every λ gets the same noise seeds.

    Returns
    -------
    dict
        ``auc`` (test), ``val_auc``, ``lam``, ``choice_margin``, ``n_candidates``, ``auc_oracle``
        (the best test AUC among the candidates), ``auc_source`` (test AUC on the target of the
        chosen λ's source model alone; NaN for DP-GD (target only)) and ``noise_multiplier``
        (σ/C of the target's descent).
    """
    if method not in ALTERNATIVE_METHODS:
        raise ValueError(f"method must be one of {ALTERNATIVE_METHODS}, got {method!r}")
    Xs, ys, Xt, yt, _, row_scale = load_transfer_task(dataset, None, data_seed)
    split_ss, source_ss, target_ss = seed_sequence.spawn(3)
    s_train, _ = _split(len(ys), np.random.default_rng(split_ss), test_fraction)
    t_train, t_test = _split(len(yt), np.random.default_rng([*split_ss.generate_state(2), 0]), test_fraction)
    perm = np.random.default_rng(target_ss.spawn(1)[0]).permutation(t_train)
    n_val = int(round(val_fraction * t_train.size))
    t_val, t_fit = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    source_seed = int(np.random.default_rng(source_ss).integers(2**63 - 1))
    target_seed = int(np.random.default_rng([*target_ss.generate_state(2), 0]).integers(2**63 - 1))
    # rows in the unit ball exactly as Table 1's fits see them (the estimators clip to 1 again: a no-op)
    Zs = bound_rows(Xs[s_train], "clip", row_scale)
    Zt = bound_rows(Xt, "clip", row_scale)
    grid = candidates(lam_grid, eta_grid)
    val_aucs, test_aucs, source_aucs, multipliers = [], [], [], []
    for lam, average in grid:
        common = dict(
            epsilon=float(epsilon), delta=DELTA, lam=float(lam), n_steps=GD_STEPS, average=average, classes=[0, 1]
        )
        if method == "DP-GD (target only)":
            est = NoisyGradientDescentClassifier(random_state=target_seed, **common)
            source_aucs.append(np.nan)
        else:
            w0 = source_model(method, epsilon, lam, Zs, ys[s_train], source_seed, average)
            est = SourceCentredGradientDescentClassifier(centre=w0, random_state=target_seed, **common)
            source_aucs.append(stats.auc(yt[t_test], Zt[t_test] @ w0))
        est.fit(Zt[t_fit], yt[t_fit])
        val_aucs.append(stats.auc(yt[t_val], est.decision_function(Zt[t_val])))
        test_aucs.append(stats.auc(yt[t_test], est.decision_function(Zt[t_test])))
        multipliers.append(float(est.noise_multiplier_))
    best, margin = select_on_scores(val_aucs)
    best = 0 if best is None else best
    return dict(
        auc=test_aucs[best],
        val_auc=val_aucs[best],
        lam=float(grid[best][0]),
        average=bool(grid[best][1]),
        choice_margin=margin,
        n_candidates=len(grid),
        auc_oracle=float(np.nanmax(test_aucs)),
        auc_source=source_aucs[best],
        noise_multiplier=multipliers[best],
    )
