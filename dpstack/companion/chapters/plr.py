"""The PLR chapter: calibration curves and test AUC against n and ε (Proposition 2).

Data: scikit-learn's bundled 8×8 digits (offline), two digits. Pixels are in
[0, 16]; dividing by 16·8 = 128 puts every row inside the unit ball *by
construction* (64 pixels in [0, 1] have norm at most 8), a data-independent
scaling, so the clipping inside PLR never triggers and nothing about the
scaling depends on the private data.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits

from dpstack.companion.runner import run_cells
from dpstack.companion.stats import mean_interval
from dpstack.linear import PrivateLogisticRegression
from dpstack.mechanisms import objective_perturbation_calibration
from dpstack.metrics import roc_auc_score

__all__ = [
    "load_digits_pair",
    "calibration_grid",
    "auc_vs_n",
    "auc_vs_n_cell",
    "privacy_loss_draws",
    "switch_sentence",
    "below_chance_sentence",
]


@functools.lru_cache(maxsize=8)
def _digits():
    data = load_digits()
    return data.data, data.target


def load_digits_pair(digits=(0, 8)):
    """Two digits of scikit-learn's bundled digits, scaled by the public constant 1/128.

    Returns
    -------
    X : ndarray of shape (n, 64), every row with ‖x‖ ≤ 1
    y : ndarray of shape (n,), 1 for ``digits[1]`` and 0 for ``digits[0]``
    """
    a, b = digits
    if a == b or not {a, b} <= set(range(10)):
        raise ValueError(f"digits must be two different digits in 0..9, got {digits!r}")
    pixels, target = _digits()
    keep = np.isin(target, digits)
    return pixels[keep] / 128.0, (target[keep] == b).astype(int)


def calibration_grid(epsilons, ns, lams):
    """ε', Δ and the noise scale of Algorithm 1 for every (ε, n, λ).

    Returns a DataFrame with columns epsilon, n, lam, epsilon_noise, delta,
    noise_scale, branch and ``expected_noise_norm`` (= d·scale per unit d).
    """
    rows = []
    for eps in epsilons:
        for n in ns:
            for lam in lams:
                cal = objective_perturbation_calibration(eps, int(n), lam)
                rows.append(
                    dict(
                        epsilon=eps,
                        n=int(n),
                        lam=lam,
                        epsilon_noise=cal.epsilon_noise,
                        delta=cal.delta,
                        noise_scale=cal.noise_scale,
                        branch=cal.branch,
                    )
                )
    return pd.DataFrame(rows)


def auc_vs_n_cell(n, epsilon, repeat, lam, digits, n_test, seed_sequence):
    """One cell: draw a train set of size n and a disjoint test set, fit PLR, return the test AUC.

    The split and the noise stream depend only on (seed, repeat): every (n, ε)
    of a repeat is evaluated on the same test set (paired comparisons), and
    its noise vector has the same direction, scaled for its own ε.
    """
    X, y = load_digits_pair(tuple(digits))
    split_ss, noise_ss = seed_sequence.spawn(2)
    order = np.random.default_rng(split_ss).permutation(len(y))
    test, pool = order[:n_test], order[n_test:]
    if n > pool.size:
        raise ValueError(f"n = {n} exceeds the {pool.size} samples left after the test split")
    train = pool[:n]
    if np.unique(y[train]).size < 2:
        return dict(auc=np.nan)
    clf = PrivateLogisticRegression(
        epsilon=epsilon, lam=lam, random_state=np.random.default_rng(noise_ss), classes=[0, 1]
    )
    clf.fit(X[train], y[train])
    return dict(
        auc=roc_auc_score(y[test], clf.decision_function(X[test])), delta=clf.delta_, epsilon_noise=clf.epsilon_noise_
    )


def auc_vs_n(n_grid, epsilons, n_repeats=10, lam=0.01, digits=(0, 8), n_test=100, seed=0, n_jobs=1, cache=False):
    """Test AUC of PLR against the training-set size n for several ε (ε = inf: non-private).

    Returns one row per (repeat, n, ε) with the AUC, Δ and ε' used.
    """
    cells = [
        dict(n=int(n), epsilon=float(eps), repeat=r, lam=lam, digits=list(digits), n_test=n_test)
        for r in range(n_repeats)
        for n in n_grid
        for eps in epsilons
    ]
    return run_cells(auc_vs_n_cell, cells, seed=seed, n_jobs=n_jobs, cache=cache, desc="PLR AUC vs n")


def privacy_loss_draws(epsilon, n, lam=0.01, n_draws=300, digits=(0, 8), seed=0):
    """Exact privacy loss of PLR at outputs drawn from the mechanism (Proposition 1, checked).

    ``n`` digits are drawn; :func:`dpstack.audit.worst_case_neighbours` turns them
    into neighbouring pairs (D, D') that differ in one record placed at the norm
    bound (label flipped, mirrored, orthogonal, zero, far outside the bound).
    For each pair, PLR's output is drawn ``n_draws`` times on D and the exact
    loss log p(w|D) − log p(w|D') is evaluated at each draw.

    Returns
    -------
    DataFrame with columns pair, draw, loss, epsilon, n, branch.
    """
    from dpstack.audit import exact_privacy_loss, sample_outputs, worst_case_neighbours

    X, y = load_digits_pair(tuple(digits))
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(y), size=n, replace=False)
    frames = []
    for name, (XD, yD, XDp, yDp) in worst_case_neighbours(X[idx], y[idx]).items():
        est = PrivateLogisticRegression(epsilon=epsilon, lam=lam, random_state=rng, classes=[0, 1]).fit(XD, yD)
        W = sample_outputs(est, XD, yD, n_draws, random_state=rng)
        loss = exact_privacy_loss(est, XD, yD, XDp, yDp, W)
        frames.append(
            pd.DataFrame(
                dict(
                    pair=name, draw=np.arange(n_draws), loss=loss, epsilon=epsilon, n=n, branch=est.calibration_.branch
                )
            )
        )
    return pd.concat(frames, ignore_index=True)


def switch_sentence(cal):
    """Why ε′/ε drops to about 0 just past the switch point, from a :func:`calibration_grid` frame.

    Names the ε of the grid whose Δ = 0 branch starts lowest, the first n of that branch, its ε′/ε,
    and the noise scale 2/ε′ there against the Δ branch's 4/ε just before the switch.
    """
    rows = []
    for eps, part in cal.sort_values("n").groupby("epsilon"):
        free = part[part["delta"] == 0]
        ridge = part[part["delta"] > 0]
        if free.empty or ridge.empty:
            continue
        first = free.iloc[0]
        rows.append((first["epsilon_noise"] / eps, eps, first, ridge.iloc[-1]))
    if not rows:
        return ""
    share, eps, first, last = min(rows, key=lambda r: r[0])
    lam = first["lam"]
    return (
        f"Why ε′/ε falls to almost 0 just past the switch: once ε′ = ε − 2 log(1 + 1/(4nλ)) is positive, "
        f"Algorithm 1 drops Δ and gives the noise all of that ε′, however small. At ε = {eps:g} and λ = {lam:g}, "
        f"the first n of this grid in the Δ = 0 branch is n = {int(first['n']):,}, where ε′/ε = {share:.3f}: "
        f"the noise scale 2/ε′ is {first['noise_scale']:,.0f}, against {last['noise_scale']:,.0f} "
        f"(4/ε) at n = {int(last['n']):,}, just before the switch. The switch rule is the one Chaudhuri et al. "
        "print (switch when ε′ ≤ 0, not when the Δ branch would add less noise); it is private either way, "
        "but a model fitted just past the switch is noisier than one just before it."
    )


def below_chance_sentence(auc, level=0.95):
    """Why some private mean AUCs are below 0.5, from an :func:`auc_vs_n` frame (with a ``method`` column).

    Names the rows whose mean is below 0.5 and says whether each mean's interval over repeats contains 0.5.
    """
    low = []
    covered = True
    for (method, n), part in auc.groupby(["method", "n"]):
        mean, lo, hi = mean_interval(part["auc"].dropna().to_numpy(), level=level)
        if mean < 0.5:
            low.append((method, n, mean, lo, hi))
            covered &= lo <= 0.5 <= hi
    if not low:
        return ""
    methods = list(dict.fromkeys(m for m, *_ in low))
    worst = min(low, key=lambda r: r[2])
    n_repeats = auc["repeat"].nunique()
    return (
        f"Mean AUCs below 0.5 ({len(low)} of the table's means, for {', '.join(methods)}; lowest "
        f"{worst[2]:.3f} at n = {worst[1]}, {level * 100:.0f} % interval [{worst[3]:.3f}, {worst[4]:.3f}]) are chance, "
        "not a model that learned the labels backwards: at these ε and n the noise vector outweighs the data, so "
        "the fitted direction is close to the noise's. A repeat draws one noise direction and keeps it for every "
        f"n and ε (paired comparisons), so the row is one draw of {n_repeats} nearly random directions, the same "
        "at every n; "
        + (
            f"the {level * 100:.0f} % interval of every such mean over the {n_repeats} repeats contains 0.5."
            if covered
            else f"not every such mean's {level * 100:.0f} % interval contains 0.5."
        )
    )
