"""PATE's GNMax aggregator and its data-independent (ε, δ) accounting.

In PATE (Papernot et al. 2017, 2018) teachers trained on disjoint parts of the private data
vote on public queries; GNMax releases, for each query, the class with the most votes
after adding N(0, σ²) to every count. When one teacher changes its vote, one count drops by
1 and another rises by 1: the vote histogram moves by √2 in L2. Each answer is therefore a
Gaussian mechanism of sensitivity √2 (noise multiplier σ/√2) followed by an argmax
(post-processing), and T answers compose as T Gaussian mechanisms, accounted here by
dp-accounting. The unit is **one teacher, replaced** (its vote changes, the number of
teachers is fixed); as the teachers' data are disjoint, one replaced training record changes
at most one teacher, so the same (ε, δ) holds for one record.

This is the *data-independent* guarantee. The papers' smaller, data-dependent ε (smooth
sensitivity of the vote margins, Confident-GNMax) depends on the votes and needs its own
privacy analysis before it can be released; it is not offered here.

References
----------
N. Papernot, M. Abadi, Ú. Erlingsson, I. Goodfellow, K. Talwar. Semi-supervised knowledge
transfer for deep learning from private training data. ICLR 2017.
N. Papernot, S. Song, I. Mironov, A. Raghunathan, K. Talwar, Ú. Erlingsson. Scalable private
learning with PATE. ICLR 2018 (GNMax).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from .._validation import RANDOM_STATE, Number, StrOptions, check_random_state, validate_function_params
from .accounting import ACCOUNTANTS, Guarantee, epsilon_of, gaussian_event, gaussian_noise_multiplier

__all__ = ["VOTE_SENSITIVITY", "vote_counts", "gnmax_aggregate", "gnmax_epsilon", "gnmax_sigma", "gnmax_guarantee"]

#: L2 sensitivity of one query's vote histogram when one teacher changes its vote
VOTE_SENSITIVITY = math.sqrt(2.0)

_SIGMA = Number(Real, 0, np.inf, closed="left", desc="a finite float >= 0")
_QUERIES = Number(Integral, 1, None, closed="left", desc="an int >= 1")
_DELTA = Number(Real, 0, 1, closed="neither", desc="a float in (0, 1)")


def vote_counts(predictions, n_classes):
    """Per-query vote histograms from the teachers' predicted class indices.

    Parameters
    ----------
    predictions : array-like of int, shape (n_teachers, n_queries)
        Teacher t's class index (0 … n_classes − 1) on query j.
    n_classes : int

    Returns
    -------
    ndarray of shape (n_queries, n_classes)
        Counts; each row sums to n_teachers.
    """
    validate_function_params(
        {"n_classes": [Number(Integral, 1, None, closed="left", desc="an int >= 1")]},
        "vote_counts",
        n_classes=n_classes,
    )
    P = np.asarray(predictions)
    if P.ndim != 2 or P.size == 0:
        raise ValueError(f"predictions must be a non-empty 2-D array (n_teachers, n_queries), got shape {P.shape}")
    if P.dtype.kind not in "iu" or P.min() < 0 or P.max() >= n_classes:
        raise ValueError(
            f"predictions must hold class indices in [0, {n_classes}), got {P.dtype} in [{P.min()}, {P.max()}]"
        )
    counts = np.zeros((P.shape[1], n_classes), dtype=np.int64)
    np.add.at(counts, (np.broadcast_to(np.arange(P.shape[1]), P.shape), P), 1)
    return counts


def gnmax_aggregate(votes, sigma, random_state=None):
    """GNMax: for each query, the argmax of its vote counts plus independent N(0, σ²) noise.

    Parameters
    ----------
    votes : array-like of shape (n_queries, n_classes) or (n_classes,)
        Vote counts (:func:`vote_counts`).
    sigma : float
        σ ≥ 0; 0 returns the plain argmax (ties to the lowest class index).
    random_state : None, int, SeedSequence or numpy.random.Generator

    Returns
    -------
    ndarray of int, shape (n_queries,) (a scalar int for one query)

    Examples
    --------
    >>> gnmax_aggregate([[3, 7], [6, 4]], sigma=0.0)
    array([1, 0])
    """
    validate_function_params(
        {"sigma": [_SIGMA], "random_state": RANDOM_STATE},
        "gnmax_aggregate",
        sigma=sigma,
        random_state=random_state,
    )
    V = np.asarray(votes, dtype=float)
    single = V.ndim == 1
    V = np.atleast_2d(V)
    if V.ndim != 2 or V.size == 0 or not np.all(np.isfinite(V)):
        raise ValueError(f"votes must be a finite, non-empty (n_queries, n_classes) array, got shape {np.shape(votes)}")
    if sigma > 0:
        V = V + float(sigma) * check_random_state(random_state).standard_normal(V.shape)
    winners = np.argmax(V, axis=1)
    return int(winners[0]) if single else winners


def gnmax_epsilon(sigma, n_queries, delta, accountant="PLD"):
    """ε at ``delta`` of ``n_queries`` GNMax answers with noise σ, independent of the votes.

    Each answer is the Gaussian mechanism with multiplier σ/√2 (sensitivity √2 of the vote
    histogram); the event ``SelfComposedDpEvent(GaussianDpEvent(σ/√2), T)`` is accounted by
    dp-accounting as a plain shift by the sensitivity (its add/remove relation, which for an
    un-subsampled Gaussian is exactly that): the replace-one factor is already in the √2.
    """
    validate_function_params(
        {"sigma": [_SIGMA], "n_queries": [_QUERIES], "delta": [_DELTA], "accountant": [StrOptions(set(ACCOUNTANTS))]},
        "gnmax_epsilon",
        sigma=sigma,
        n_queries=n_queries,
        delta=delta,
        accountant=accountant,
    )
    if sigma == 0:
        return math.inf
    event = gaussian_event(float(sigma) / VOTE_SENSITIVITY, int(n_queries))
    return epsilon_of(event, delta, accountant=accountant, neighbouring="add/remove")


def gnmax_sigma(epsilon, delta, n_queries, accountant="PLD"):
    """The smallest σ for which ``n_queries`` GNMax answers are (ε, δ)-DP (data-independent).

    √2 times the smallest multiplier of ``n_queries`` Gaussian steps of sensitivity 1
    (:func:`~dpstack.alternatives.accounting.gaussian_noise_multiplier` with
    ``neighbouring="add/remove"``, i.e. a plain shift by the sensitivity). ``np.inf`` gives 0.
    """
    validate_function_params({"n_queries": [_QUERIES]}, "gnmax_sigma", n_queries=n_queries)
    z = gaussian_noise_multiplier(epsilon, delta, n_queries, 1.0, neighbouring="add/remove", accountant=accountant)
    return VOTE_SENSITIVITY * z


def gnmax_guarantee(sigma, n_queries, delta, accountant="PLD"):
    """The :class:`~dpstack.alternatives.accounting.Guarantee` of ``n_queries`` GNMax answers."""
    epsilon = gnmax_epsilon(sigma, n_queries, delta, accountant)
    return Guarantee(
        epsilon,
        float(delta) if math.isfinite(epsilon) else 0.0,
        "replace-one",
        "one teacher",
        accountant if math.isfinite(epsilon) else "none",
        ("the teachers are trained on disjoint parts of the data", "the queries are public"),
    )
