"""PST tuned honestly: λ chosen inside the guarantee (Liu & Talwar's random stopping) against the papers' way.

Same data, splits and repeats as PST Figure 1 (:func:`~dpstack.companion.papers.pst.grids.load_task`:
MNIST 0 vs 8 or NEWS20, PCA to 100, rows in the unit ball; the validation third of the training rows
drawn by the first child of the repeat's seed sequence, as
:func:`~dpstack.companion.papers.pst.grids.select_on_validation` draws it). For PLR and PST-F(W) at a
total ε, two protocols choose λ among the same :data:`N_CANDIDATES` candidates (Figure 1's λ range,
log-even; for PST-F(W) one λ for both levels, λ_h = λ_l, so that both protocols see the same list):

* **the papers' way** — every candidate fitted at ε on the fit part, λ chosen by the *exact*
  validation AUC (the book's selection rule), the chosen model scored on the test set. The fit is
  ε-DP; **the choice is outside the guarantee** (it reads the private validation rows without noise).
* **honest** — :func:`dpstack.selection.random_stopping` with stopping probability
  γ = 1/:data:`N_CANDIDATES`: each run draws a candidate uniformly, fits it at ε/3 on the fit part
  and scores it by :func:`dpstack.selection.private_auc` at ε/3 on the validation part (a run is
  ε/3-DP: a record lies in one part only), and the run with the best noisy score is released. The
  total is 3 · ε/3 = ε, the choice included (Liu & Talwar 2019). The score's noise is calibrated to a
  public floor on the validation set's class counts, :data:`MIN_CLASS_SHARE` of its size (both tasks'
  validation sets are above it; a set below would warn).

Privacy unit: one sample, replace-one, for both. Each cell returns both protocols' test AUC on the same
split, paired. PCA and the importances of PST-F(W) are fitted on the training rows, outside the
guarantee for both protocols alike, as in Figure 1.
"""

from __future__ import annotations

import numpy as np

from dpstack.companion import stats
from dpstack.companion.papers.open_choices import DEFAULT_OPTIONS, budget_grid, select_on_scores
from dpstack.companion.papers.pst.grids import PROFILES, load_task
from dpstack.linear import PrivateLogisticRegression
from dpstack.selection import liu_talwar_epsilon, private_auc, random_stopping
from dpstack.stacking import PrivateStackingClassifier

__all__ = ["HONEST_METHODS", "EPSILONS", "N_CANDIDATES", "MIN_CLASS_SHARE", "honest_cells", "honest_cell"]

HONEST_METHODS = ("PLR", "PST-F(W)")
#: the total ε of both protocols
EPSILONS = (0.1, 1.0, 4.0)
#: candidates of both protocols (λ over Figure 1's range); the random stopping's mean number of runs
N_CANDIDATES = 10
#: the public floor on each class's count in the validation set, as a share of its size
MIN_CLASS_SHARE = 0.4
#: repeats per profile (the random splits of Figure 1's repeats 0, 1, …)
REPEATS = {"quick": 3, "paper": 30}


def honest_cells(profile="quick", datasets=None, methods=HONEST_METHODS, epsilons=None, n_repeats=None):
    """The cells: every (repeat, dataset, method, total ε)."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
    unknown = [m for m in methods if m not in HONEST_METHODS]
    if unknown:
        raise ValueError(f"methods must be taken from {list(HONEST_METHODS)}, got {unknown}")
    p = PROFILES[profile]
    return [
        dict(dataset=d, method=m, epsilon=float(e), repeat=r, lam_grid=list(p["lam_grid"]))
        for r in range(n_repeats or REPEATS[profile])
        for d in datasets or p["datasets"]
        for m in methods
        for e in epsilons or EPSILONS
    ]


def _estimator(method, epsilon, lam, importance, seed):
    opts = DEFAULT_OPTIONS
    if method == "PLR":
        return PrivateLogisticRegression(
            epsilon=epsilon, lam=lam, fit_intercept=opts["low_intercept"], random_state=seed, classes=[0, 1]
        )
    return PrivateStackingClassifier(
        epsilon=epsilon,
        partition="features",
        n_groups=5,
        feature_importance=importance,
        lam=lam,
        lam_blocks=opts["lam_blocks"],
        lam_high=lam,
        row_bound=opts["row_bound"],
        row_scale=opts["row_scale"],
        meta_features=opts["meta_features"],
        low_intercept=opts["low_intercept"],
        high_intercept=opts["high_intercept"],
        random_state=seed,
        classes=[0, 1],
    )


def honest_cell(
    dataset, method, epsilon, repeat=0, lam_grid=(1e-3, 1e-2, 1e-1), val_fraction=1 / 3, data_seed=0, *, seed_sequence
):
    """One (dataset, method, total ε, repeat): the test AUC of λ chosen the papers' way and honestly.

    Returns
    -------
    dict
        ``auc_papers`` and ``lam_papers`` (exact validation AUC, ε per fit: outside the guarantee),
        ``auc_honest``, ``lam_honest``, ``n_runs`` (random stopping at ε/3 per run, 3 · ε/3 in all),
        ``score_scale`` (the Laplace scale of the honest score), ``total_epsilon_honest``.
    """
    if method not in HONEST_METHODS:
        raise ValueError(f"method must be one of {HONEST_METHODS}, got {method!r}")
    X, y, X_test, y_test, variance = load_task(dataset, data_seed)
    importance = variance if method == "PST-F(W)" else None
    split_ss, noise_ss, honest_ss = seed_sequence.spawn(3)
    perm = np.random.default_rng(split_ss).permutation(len(y))
    n_val = int(round(val_fraction * len(y)))
    val, fit = perm[:n_val], perm[n_val:]
    noise_seed = int(np.random.default_rng(noise_ss).integers(2**63 - 1))
    grid = budget_grid(lam_grid, N_CANDIDATES)
    epsilon = float(epsilon)

    # the papers' way: every candidate at ε, the exact validation AUC chooses (outside the guarantee)
    val_aucs, test_aucs = [], []
    for lam in grid:
        est = _estimator(method, epsilon, float(lam), importance, noise_seed).fit(X[fit], y[fit])
        val_aucs.append(stats.auc(y[val], est.decision_function(X[val])))
        test_aucs.append(stats.auc(y_test, est.decision_function(X_test)))
    best, _ = select_on_scores(val_aucs)
    best = 0 if best is None else best

    # honest: random stopping, each run ε/3-DP (fit on the fit part, noisy AUC on the validation part)
    run_epsilon = epsilon / 3.0
    floor = int(MIN_CLASS_SHARE * n_val)
    scales = []

    def run(lam, rng):
        seed = int(rng.integers(2**63 - 1))
        est = _estimator(method, run_epsilon, float(lam), importance, seed).fit(X[fit], y[fit])
        noisy, _, scale = private_auc(y[val], est.decision_function(X[val]), run_epsilon, floor, rng)
        scales.append(scale)
        return noisy, est

    chosen = random_stopping(run, grid, gamma=1.0 / N_CANDIDATES, random_state=np.random.default_rng(honest_ss))
    return dict(
        auc_papers=test_aucs[best],
        lam_papers=float(grid[best]),
        auc_honest=stats.auc(y_test, chosen.output.decision_function(X_test)),
        lam_honest=float(chosen.candidate),
        n_runs=int(chosen.n_runs),
        score_scale=float(scales[0]),
        total_epsilon_honest=liu_talwar_epsilon(run_epsilon),
    )
