"""PST against today's alternatives: the grid of the page that sets the papers' methods beside modern private learners.

Same data, same splits, same repeats and the same λ grid as PST Figure 1
(:func:`~dpstack.companion.papers.pst.grids.fig1_cells`): the task of
:func:`~dpstack.companion.papers.pst.grids.load_task` (MNIST 0 vs 8 or NEWS20, PCA to 100, rows in
the unit ball), a validation third of the training rows drawn by the first child of the repeat's
seed sequence exactly as :func:`~dpstack.companion.papers.pst.grids.select_on_validation` draws it
(so a repeat of this grid and the same repeat of Figure 1 share their fit / validation split and
their test set), λ chosen on the validation AUC by the book's one selection rule. The papers'
methods are read from Figure 1's committed result; this grid computes the alternatives
(:mod:`dpstack.alternatives`):

* **output perturbation** (Chaudhuri et al. 2011, Algorithm 1): pure ε, replace-one;
* **DP-GD** — full-batch noisy gradient descent, :data:`GD_STEPS` steps of size 1/L — under
  replace-one (the papers' relation) and under add/remove;
* **DP-SGD** — Poisson-subsampled, :data:`SGD_BATCH_FRACTION` of the rows per step,
  :data:`SGD_STEPS` steps — under add/remove (the relation of its usual analysis).

The (ε, δ) methods use δ = :data:`DELTA` (below 1/n for both tasks). Their step counts, step sizes
and batch fraction are fixed in advance (public, the same for every ε and dataset); only λ is
tuned, over Figure 1's range with the same number of candidates as every method there (PLR's
equal budget), as for the papers' methods. Choosing λ on the private validation
rows is outside every method's guarantee alike (the page says so and prices it).
"""

from __future__ import annotations

import numpy as np

from dpstack.alternatives import (
    NoisyGradientDescentClassifier,
    NoisySGDClassifier,
    OutputPerturbationClassifier,
)
from dpstack.companion import stats
from dpstack.companion.papers.open_choices import budget_grid, select_on_scores, tuning_budget
from dpstack.companion.papers.pst.grids import PROFILES, load_task

__all__ = [
    "ALTERNATIVE_METHODS",
    "DELTA",
    "GD_STEPS",
    "SGD_STEPS",
    "SGD_BATCH_FRACTION",
    "GUARANTEES",
    "alternatives_cells",
    "alternative_cell",
]

ALTERNATIVE_METHODS = ("output perturbation", "DP-GD (replace-one)", "DP-GD (add/remove)", "DP-SGD (add/remove)")
#: δ of the (ε, δ) methods: below 1/n on both tasks (3,000 and 4,325 training rows)
DELTA = 1e-5
GD_STEPS = 100
SGD_STEPS = 200
SGD_BATCH_FRACTION = 0.05

#: What each method of the page guarantees, the papers' first: (guarantee, neighbouring relation,
#: privacy unit, what it assumes beyond a public norm bound and public hyper-parameters).
GUARANTEES = {
    "PLR": ("pure ε", "replace-one", "one sample", "—"),
    "PST-S": ("pure ε", "replace-one", "one sample", "—"),
    "PST-F(W)": ("pure ε", "replace-one", "one sample", "public feature importances"),
    "output perturbation": ("pure ε", "replace-one", "one sample", "an exact minimiser"),
    "DP-GD (replace-one)": ("(ε, δ)", "replace-one", "one sample", f"{GD_STEPS} steps, PLD accounting"),
    "DP-GD (add/remove)": ("(ε, δ)", "add/remove", "one sample", f"{GD_STEPS} steps, n public, PLD accounting"),
    "DP-SGD (add/remove)": (
        "(ε, δ)",
        "add/remove",
        "one sample",
        f"{SGD_STEPS} Poisson-sampled steps, n public, PLD accounting",
    ),
}


def alternatives_cells(profile="quick", datasets=None, methods=ALTERNATIVE_METHODS, epsilons=None, n_repeats=None):
    """The cells of the page: every (repeat, dataset, method, ε) of PST Figure 1's grid, for the alternatives."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
    unknown = [m for m in methods if m not in ALTERNATIVE_METHODS]
    if unknown:
        raise ValueError(f"methods must be taken from {list(ALTERNATIVE_METHODS)}, got {unknown}")
    p = PROFILES[profile]
    return [
        dict(dataset=d, method=m, epsilon=float(e), repeat=r, lam_grid=list(p["lam_grid"]))
        for r in range(n_repeats or p["n_repeats"])
        for d in datasets or p["datasets"]
        for m in methods
        for e in epsilons or p["epsilons"]
    ]


def _estimator(method, epsilon, lam, seed):
    if method == "output perturbation":
        return OutputPerturbationClassifier(epsilon=epsilon, lam=lam, random_state=seed, classes=[0, 1])
    if method.startswith("DP-GD"):
        relation = "replace-one" if "replace-one" in method else "add/remove"
        return NoisyGradientDescentClassifier(
            epsilon=epsilon,
            delta=DELTA,
            lam=lam,
            n_steps=GD_STEPS,
            neighbouring=relation,
            random_state=seed,
            classes=[0, 1],
        )
    if method == "DP-SGD (add/remove)":
        return NoisySGDClassifier(
            epsilon=epsilon,
            delta=DELTA,
            lam=lam,
            batch_fraction=SGD_BATCH_FRACTION,
            n_steps=SGD_STEPS,
            neighbouring="add/remove",
            random_state=seed,
            classes=[0, 1],
        )
    raise ValueError(f"method must be one of {ALTERNATIVE_METHODS}, got {method!r}")


def alternative_cell(
    dataset, method, epsilon, repeat=0, lam_grid=(1e-3, 1e-2, 1e-1), val_fraction=1 / 3, data_seed=0, *, seed_sequence
):
    """One (dataset, method, ε, repeat): λ chosen on validation AUC, the chosen model's test AUC.

    λ ranges over ``lam_grid``'s range with :func:`~dpstack.companion.papers.open_choices.tuning_budget`
    candidates (:func:`~dpstack.companion.papers.open_choices.budget_grid`), as PLR's in Figure 1.

    The fit / validation split is Figure 1's for the same repeat (the first child of
    ``seed_sequence``); every λ gets the same noise seed (the second child), as there.

    Returns
    -------
    dict
        ``auc`` (test), ``val_auc``, ``lam``, ``choice_margin``, ``n_candidates``, ``auc_oracle``
        (the best test AUC among the candidates) and ``noise_multiplier`` (σ/C of the (ε, δ)
        methods; NaN for output perturbation).
    """
    X, y, X_test, y_test, _ = load_task(dataset, data_seed)
    split_ss, noise_ss = seed_sequence.spawn(2)
    perm = np.random.default_rng(split_ss).permutation(len(y))
    n_val = int(round(val_fraction * len(y)))
    val, fit = perm[:n_val], perm[n_val:]
    noise_seed = int(np.random.default_rng(noise_ss).integers(2**63 - 1))
    # the same number of candidates as every method of Figure 1 (PLR's equal budget)
    grid = budget_grid(lam_grid, tuning_budget(lam_grid))
    val_aucs, test_aucs, multipliers = [], [], []
    for lam in grid:
        est = _estimator(method, float(epsilon), float(lam), noise_seed).fit(X[fit], y[fit])
        val_aucs.append(stats.auc(y[val], est.decision_function(X[val])))
        test_aucs.append(stats.auc(y_test, est.decision_function(X_test)))
        multipliers.append(float(getattr(est, "noise_multiplier_", np.nan)))
    best, margin = select_on_scores(val_aucs)
    best = 0 if best is None else best
    return dict(
        auc=test_aucs[best],
        val_auc=val_aucs[best],
        lam=float(grid[best]),
        choice_margin=margin,
        n_candidates=len(grid),
        auc_oracle=float(np.nanmax(test_aucs)),
        noise_multiplier=multipliers[best],
    )
