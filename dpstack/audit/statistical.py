"""A statistical lower bound on ε from a distinguishing test.

If a mechanism M is ε-DP then for every event E and neighbours D, D'
P(M(D) ∈ E) ≤ e^ε P(M(D') ∈ E). Running M many times on D and on D' and
counting how often a threshold event E = {s > t} (or its complement) happens
gives Clopper–Pearson confidence bounds on both probabilities, hence a bound

    ε_lo = log( P̲(M(D) ∈ E) / P̄(M(D') ∈ E) )

that the true ε exceeds with the stated confidence. The threshold and the
event are chosen on one half of the runs and the counts are taken on the
other half, so choosing the best-looking threshold does not bias ε_lo.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import beta
from sklearn.base import clone

from dpstack.audit.exact import mechanism_blocks, sample_outputs
from dpstack.audit.neighbours import changed_rows

from .._validation import check_random_state

__all__ = [
    "EpsilonLowerBound",
    "clopper_pearson",
    "epsilon_lower_bound",
    "epsilon_lower_bound_from_scores",
    "run_mechanism",
]


def clopper_pearson(k, n, alpha):
    """One-sided Clopper–Pearson bounds (lower, upper), each at level 1 − alpha."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        lower = np.where(k > 0, beta.ppf(alpha, k, n - k + 1), 0.0)
        upper = np.where(k < n, beta.ppf(1 - alpha, k + 1, n - k), 1.0)
    return lower, upper


@dataclass(frozen=True)
class EpsilonLowerBound:
    """Result of :func:`epsilon_lower_bound`.

    Attributes
    ----------
    epsilon_lo : float
        Lower bound on the mechanism's ε, valid with probability ``confidence``
        (0 when the test finds nothing).
    confidence : float
    threshold : float
        Threshold t of the chosen event, picked on the first half of the runs.
    event : str
        ``"s > t"`` or ``"s <= t"``.
    direction : str
        ``"D/D'"`` (the event is likelier under D) or ``"D'/D"``.
    counts : tuple of int
        (hits under the numerator's dataset, runs, hits under the denominator's, runs) on the second half.
    """

    epsilon_lo: float
    confidence: float
    threshold: float
    event: str
    direction: str
    counts: tuple


def log_ratio_bound(k_num, n_num, k_den, n_den, alpha):
    """A lower confidence bound on log(p_num / p_den) from two binomial counts (Clopper–Pearson at alpha/2 each)."""
    lo, _ = clopper_pearson(k_num, n_num, alpha / 2)
    _, hi = clopper_pearson(k_den, n_den, alpha / 2)
    with np.errstate(divide="ignore"):
        return np.log(np.maximum(lo, 0.0)) - np.log(hi)


def _events(scores, t):
    above = (scores[:, None] > t[None, :]).sum(axis=0)
    return {"s > t": above, "s <= t": scores.size - above}


def epsilon_lower_bound_from_scores(scores_D, scores_D_prime, confidence=0.95, n_thresholds=64, random_state=None):
    """ε lower bound from scalar summaries of runs on D and on D'.

    Parameters
    ----------
    scores_D, scores_D_prime : 1-D arrays
        One scalar per run of the mechanism (e.g. wᵀx of the changed record).
    confidence : float, default=0.95
        The returned bound holds with at least this probability (Bonferroni
        over the two Clopper–Pearson bounds).
    n_thresholds : int
        Candidate thresholds (quantiles of the first half's pooled scores).
    random_state : int or Generator
        Fixes the split into halves.

    Returns
    -------
    EpsilonLowerBound
    """
    rng = check_random_state(random_state)
    s0 = rng.permutation(np.asarray(scores_D, dtype=float))
    s1 = rng.permutation(np.asarray(scores_D_prime, dtype=float))
    alpha = 1.0 - confidence
    h0, h1 = s0.size // 2, s1.size // 2
    pick0, test0, pick1, test1 = s0[:h0], s0[h0:], s1[:h1], s1[h1:]
    t = np.unique(np.quantile(np.concatenate([pick0, pick1]), np.linspace(0, 1, n_thresholds + 2)[1:-1]))
    best = (-np.inf, None, None, None)
    e0, e1 = _events(pick0, t), _events(pick1, t)
    for event in e0:
        for direction, (k_num, n_num, k_den, n_den) in {
            "D/D'": (e0[event], h0, e1[event], h1),
            "D'/D": (e1[event], h1, e0[event], h0),
        }.items():
            vals = log_ratio_bound(k_num, n_num, k_den, n_den, alpha)
            i = int(np.argmax(vals))
            if vals[i] > best[0]:
                best = (vals[i], t[i], event, direction)
    _, thr, event, direction = best
    k0 = int(_events(test0, np.array([thr]))[event][0])
    k1 = int(_events(test1, np.array([thr]))[event][0])
    if direction == "D/D'":
        counts = (k0, test0.size, k1, test1.size)
    else:
        counts = (k1, test1.size, k0, test0.size)
    eps_lo = float(max(0.0, log_ratio_bound(*counts, alpha)))
    return EpsilonLowerBound(eps_lo, confidence, float(thr), event, direction, counts)


def run_mechanism(estimator, X, y, n_runs, statistic, random_state=None, fit_params=None):
    """Fit ``clone(estimator)`` ``n_runs`` times with fresh seeds; one scalar per run.

    ``statistic(fitted) -> float`` reduces each release to a number. Seeds are
    drawn from ``random_state``, so the runs are reproducible.
    """
    rng = check_random_state(random_state)
    seeds = rng.integers(0, 2**31 - 1, size=n_runs)
    fit_params = {} if fit_params is None else fit_params
    return np.array(
        [float(statistic(clone(estimator).set_params(random_state=int(s)).fit(X, y, **fit_params))) for s in seeds]
    )


def _default_statistic(estimator, X, y, X_prime, y_prime, method):

    rows = changed_rows(X, y, X_prime, y_prime)
    if rows.size == 0:
        raise ValueError("D and D' are identical; nothing to distinguish")
    x = np.asarray(X, dtype=float)[rows[:1]]
    if method == "refit":
        return lambda est: est.decision_function(x)[0]
    # wᵀx on the estimator's own (clipped) design of that row, for every draw at once
    v = np.zeros(estimator.coef_.shape[1] if not hasattr(estimator, "w_") else estimator.w_.size)
    for blk in mechanism_blocks(estimator, x):
        v[blk["cols"]] = blk["Z"][0]
    return lambda W: W @ v


def epsilon_lower_bound(
    estimator,
    X,
    y,
    X_prime,
    y_prime,
    n_runs=400,
    statistic=None,
    confidence=0.95,
    random_state=None,
    method="refit",
    fit_params=None,
    fit_params_prime=None,
):
    """Statistical lower bound on the ε of ``estimator``'s mechanism on one neighbouring pair.

    Runs the mechanism ``n_runs`` times on D and on D', reduces each release
    to a scalar, picks a threshold test on one half of the runs and turns the
    other half's counts into Clopper–Pearson bounds (see the module docstring).

    Parameters
    ----------
    estimator : estimator with a ``random_state`` parameter
        Any private estimator of dpstack (or a deliberately broken variant from :mod:`dpstack.audit.mutants`).
    X, y, X_prime, y_prime : the neighbouring datasets D and D'.
    n_runs : int, default=400
        Runs per dataset.
    statistic : callable, optional
        ``method="refit"``: ``statistic(fitted) -> float``; ``method="direct"``:
        ``statistic(W) -> (n_runs,)`` on the outputs of :func:`~dpstack.audit.sample_outputs`.
        Default: the margin wᵀx at the first row where D and D' differ, taken
        on D's version of that row (the changed record).
    confidence : float, default=0.95
    random_state : int or Generator
        Everything (mechanism seeds, split into halves) derives from it.
    method : {"refit", "direct"}, default="refit"
        ``"refit"`` calls the estimator's own ``fit`` once per run (any
        estimator). ``"direct"`` (PLR and PLR-FS only) fits once per dataset,
        then draws the noise with that fit's calibration and design and solves
        all runs at once — the same distribution, ~50× faster.
    fit_params, fit_params_prime : dict, optional
        Extra keyword arguments of ``fit`` on D and D' (e.g. ``parties``).

    Returns
    -------
    EpsilonLowerBound

    Examples
    --------
    >>> import numpy as np
    >>> from dpstack import PrivateLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(50, 2)) / 2; y = (X[:, 0] > 0).astype(int)
    >>> Xp, yp = X.copy(), y.copy(); yp[0] = 1 - yp[0]
    >>> res = epsilon_lower_bound(PrivateLogisticRegression(epsilon=1.0, lam=0.1), X, y, Xp, yp,
    ...                           n_runs=100, random_state=0)
    >>> bool(res.epsilon_lo <= 1.0)
    True
    """
    rng = check_random_state(random_state)
    if method == "direct":
        fitted = clone(estimator).set_params(random_state=int(rng.integers(2**31 - 1))).fit(X, y)
        fitted_p = clone(estimator).set_params(random_state=int(rng.integers(2**31 - 1))).fit(X_prime, y_prime)
        if statistic is None:
            statistic = _default_statistic(fitted, X, y, X_prime, y_prime, method)
        s0 = statistic(sample_outputs(fitted, X, y, n_runs, rng))
        s1 = statistic(sample_outputs(fitted_p, X_prime, y_prime, n_runs, rng))
    elif method == "refit":
        if statistic is None:
            statistic = _default_statistic(estimator, X, y, X_prime, y_prime, method)
        s0 = run_mechanism(estimator, X, y, n_runs, statistic, rng, fit_params)
        s1 = run_mechanism(estimator, X_prime, y_prime, n_runs, statistic, rng, fit_params_prime or fit_params)
    else:
        raise ValueError(f"method must be 'refit' or 'direct', got {method!r}")
    return epsilon_lower_bound_from_scores(s0, s1, confidence, random_state=rng)
