"""Honest hyper-parameter selection: choosing among private candidates with the choice inside ε.

The papers choose λ by the validation AUC of models fitted on private data and release the
winner: the choice reads the private validation rows without noise, outside every guarantee.
This module prices the choice instead, with two protocols that run each candidate on all the
data (unlike :class:`dpstack.tuning.PrivateParameterTuning`, which splits the data between them):

* **Random stopping** (Liu & Talwar 2019), for pure-ε candidates, :func:`random_stopping`.
  One *run* draws a candidate setting uniformly from a public list, trains it with an ε-DP
  mechanism and scores it with a private score (e.g. :func:`private_auc`), and returns the
  pair (model, noisy score); the run as a whole must be ε-DP. After each run the procedure
  stops with probability γ and releases the run with the best noisy score. The total is
  **3ε** (:func:`liu_talwar_epsilon`), whatever γ.
* **Repeat and select** (Papernot & Steinke 2022), for (ε, δ) candidates given as
  dp-accounting events, :func:`repeat_and_select`: the number of runs K is random (Poisson or
  truncated negative binomial with a public mean), the best run is released, and the total is
  computed by Google's dp-accounting (``RepeatAndSelectDpEvent`` around the run's event, Rényi
  accountant) in :func:`repeat_and_select_epsilon`; :func:`calibrate_repeat_and_select` finds
  the per-run noise (and per-run ε) that gives a target total.

**Privacy unit: one sample** (neighbouring data sets differ in one record, replaced: the
relation of the papers' methods). A run that trains on one part of the rows and scores on a
disjoint validation part, both fixed by index before any label is read, is ε-DP as a whole
when the training mechanism and the score are each ε-DP: a record lies in exactly one part,
and the other part's output is post-processing (parallel composition).

**The score.** The validation AUC of a fixed scoring function, on a set of n₊ positives and
n₋ negatives, moves by at most 1/min(n₊, n₋) when one validation record is replaced, whether
or not its label changes (:func:`auc_sensitivity`). The counts are private: the noise is
calibrated to a *public* floor m on both counts (a stated assumption about the data, as the
row norm bound is), Δ = 1/m; a validation set below the floor is outside the guarantee and
:func:`private_auc` warns. The Laplace noise of scale Δ/ε is drawn by
:func:`dpstack.mechanisms.output_perturbation_noise` in one dimension.

References
----------
J. Liu, K. Talwar. Private selection from private candidates. STOC 2019 (arXiv:1811.07971).
N. Papernot, T. Steinke. Hyperparameter tuning with Renyi differential privacy. ICLR 2022.
Google's dp-accounting library (``dp_accounting``): ``RepeatAndSelectDpEvent``,
``RdpAccountant``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import dp_accounting
import numpy as np
from dp_accounting.dp_event import RepeatAndSelectDpEvent
from scipy import optimize

from ._validation import Number, StrOptions, check_random_state, validate_function_params
from .alternatives.accounting import epsilon_of, gaussian_event
from .base import PrivacyLeakWarning
from .mechanisms import output_perturbation_noise
from .metrics import roc_auc_score

__all__ = [
    "DISTRIBUTIONS",
    "Selection",
    "auc_sensitivity",
    "private_auc",
    "liu_talwar_epsilon",
    "random_stopping",
    "repeat_and_select_event",
    "repeat_and_select_epsilon",
    "calibrate_repeat_and_select",
    "repeat_and_select",
]

#: The laws of the number of runs K in repeat-and-select, as dp-accounting's ``shape``
#: (η of the truncated negative binomial; ``inf``: Poisson). Geometric is η = 1.
DISTRIBUTIONS = {"poisson": math.inf, "geometric": 1.0}

_COUNT = Number(Integral, 1, None, closed="left", desc="an int >= 1")
_EPS = Number(Real, 0, np.inf, closed="neither", desc="a finite float > 0")
_DELTA = Number(Real, 0, 1, closed="neither", desc="a float in (0, 1)")
_GAMMA = Number(Real, 0, 1, closed="right", desc="a float in (0, 1]")
_MEAN = Number(Real, 1, None, closed="left", desc="a float >= 1")
_RELATION = StrOptions({"replace-one", "add/remove"})
_DISTRIBUTION = [StrOptions(set(DISTRIBUTIONS)), Number(Real, 0, None, closed="neither", desc="a shape > 0")]
_RANDOM_STATE = [None, Number(Integral, 0, None, closed="left"), np.random.Generator, np.random.SeedSequence]


@dataclass(frozen=True)
class Selection:
    """What a selection protocol releases, and what it spent.

    Attributes
    ----------
    index : int or None
        Position in the candidate list of the released run (None: no run, K = 0).
    candidate : object
        The released run's candidate setting (None when no run).
    score : float
        Its private (noisy) score (NaN when no run).
    output : object
        Its model, as returned by the run (None when no run).
    n_runs : int
        How many runs were made. Not part of the release in the theorems' statement: the
        random stopping and repeat-and-select guarantees cover (output, score) only.
    """

    index: Any
    candidate: Any
    score: float
    output: Any
    n_runs: int


# ------------------------------------------------------------------------------ the private score
def auc_sensitivity(n_pos, n_neg):
    """Largest change of a validation AUC when one validation record is replaced: 1/min(n₊, n₋).

    For a fixed scoring function s, AUC = (1/(n₊n₋)) Σ_{i positive, j negative} 1[s_i > s_j]
    (+ ½ for ties). Replace one record of a set with n₊ positives and n₋ negatives:

    * same label (a positive by a positive): the n₋ pairs of that positive change, by at most
      n₋/(n₊n₋) = 1/n₊ (1/n₋ for a negative);
    * label changed (a positive by a negative): removing the positive moves the mean of the
      n₊ per-positive ranks r_i ∈ [0, 1] by (r_p − A₀)/n₊, and adding the negative moves the
      mean of the n₋ + 1 per-negative ranks by (c_q − A₀)/(n₋ + 1), with A₀ the AUC in
      between; the two terms have opposite worst cases, so the change is at most
      (1 − A₀)/n₊ + A₀/(n₋ + 1) ≤ max(1/n₊, 1/(n₋ + 1)); symmetrically for a negative.

    Either way the change is at most 1/min(n₊, n₋). Read with the other set's counts
    (n₊ − 1, n₋ + 1), the label-change bound max(1/n₊, 1/(n₋ + 1)) is max(1/(n₊' + 1), 1/n₋'),
    again at most 1/min(n₊', n₋'): the bound holds with the counts of either set.

    Parameters
    ----------
    n_pos, n_neg : int
        The validation set's numbers of positives and negatives, each >= 1 (or public lower
        bounds on them: the bound decreases in both).

    Returns
    -------
    float
    """
    validate_function_params({"n_pos": [_COUNT], "n_neg": [_COUNT]}, "auc_sensitivity", n_pos=n_pos, n_neg=n_neg)
    return 1.0 / min(int(n_pos), int(n_neg))


def private_auc(y, scores, epsilon, min_class_count, random_state=None):
    """The validation AUC plus Laplace noise of scale Δ/ε, Δ = :func:`auc_sensitivity` (m, m).

    ε-DP for one validation record replaced, over validation sets with at least
    ``min_class_count`` = m records of each class (a public floor: the counts themselves are
    private and are not used to calibrate). A set below the floor is outside the guarantee:
    a :class:`~dpstack.base.PrivacyLeakWarning` says so (the noise is still that of the floor).

    Parameters
    ----------
    y : array of shape (n,)
        Validation labels in {0, 1} (1: positive).
    scores : array of shape (n,)
        The fixed model's scores of the validation rows.
    epsilon : float
        ε of the score, > 0 and finite.
    min_class_count : int
        m >= 1, the public floor on n₊ and n₋.
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    (noisy_auc, auc, scale) : tuple of float
        ``auc`` is the exact validation AUC, for diagnostics only (not private).
    """
    validate_function_params(
        {"epsilon": [_EPS], "min_class_count": [_COUNT], "random_state": _RANDOM_STATE},
        "private_auc",
        epsilon=epsilon,
        min_class_count=min_class_count,
        random_state=random_state,
    )
    y = np.asarray(y)
    scores = np.asarray(scores, dtype=float)
    if y.ndim != 1 or scores.shape != y.shape:
        raise ValueError(f"y and scores must be 1-D of the same length, got {y.shape} and {scores.shape}")
    if not np.all(np.isin(y, (0, 1))):
        raise ValueError("y must hold labels 0 and 1 only")
    n_pos = int(np.sum(y == 1))
    if min(n_pos, y.size - n_pos) < min_class_count:
        warnings.warn(
            f"the validation set has fewer than min_class_count={min_class_count} records of a class: "
            "its noisy AUC is outside the guarantee",
            PrivacyLeakWarning,
            stacklevel=2,
        )
    scale = auc_sensitivity(min_class_count, min_class_count) / float(epsilon)
    exact = float(roc_auc_score(y, scores)) if n_pos and n_pos < y.size and np.all(np.isfinite(scores)) else 0.5
    noise = float(output_perturbation_noise(scale, 1.0, 1, check_random_state(random_state))[0])
    return exact + noise, exact, scale


# ------------------------------------------------------------------------------ Liu & Talwar
def liu_talwar_epsilon(epsilon):
    """Total ε of :func:`random_stopping` with ε-DP runs: 3ε.

    **Theorem (Liu & Talwar 2019, §3, random stopping).** Let Q be an ε-DP mechanism
    whose output is a pair (x, q) of a candidate and a real score. Fix γ ∈ (0, 1]. Run Q
    independently on the same data; after each run, stop with probability γ (so the number
    of runs is geometric with mean 1/γ, unbounded); release the pair with the highest score
    among those seen. The procedure is 3ε-DP, for every γ. A cap on the number of runs, or an
    (ε, δ)-DP Q, needs the paper's other statements (each with a δ); neither is used here.
    """
    validate_function_params({"epsilon": [_EPS]}, "liu_talwar_epsilon", epsilon=epsilon)
    return 3.0 * float(epsilon)


def random_stopping(run, candidates, gamma, random_state=None):
    """Liu & Talwar's random stopping: uniform candidates, geometric number of runs, best released.

    Parameters
    ----------
    run : callable
        ``run(candidate, rng) -> (score, output)``; the pair must be ε-DP as a whole (the
        training mechanism and the noisy score, e.g. :func:`private_auc`), and its randomness
        must come from ``rng`` (a fresh stream per run: the runs are independent).
    candidates : sequence
        The public candidate settings; each run draws one uniformly at random.
    gamma : float
        γ ∈ (0, 1], the stopping probability after each run; E[runs] = 1/γ.
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    Selection
        The run with the highest score (the first of equal ones). Total privacy:
        :func:`liu_talwar_epsilon` of the run's ε.

    References
    ----------
    J. Liu, K. Talwar. Private selection from private candidates. STOC 2019.
    """
    validate_function_params(
        {"gamma": [_GAMMA], "random_state": _RANDOM_STATE}, "random_stopping", gamma=gamma, random_state=random_state
    )
    if not callable(run):
        raise TypeError(f"run must be callable, got {type(run).__name__}")
    candidates = list(candidates)
    if not candidates:
        raise ValueError("candidates must be a non-empty sequence")
    rng = check_random_state(random_state)
    best = Selection(None, None, float("nan"), None, 0)
    n_runs = 0
    while True:
        index = int(rng.integers(len(candidates)))
        stream = np.random.default_rng(int(rng.integers(2**63 - 1)))
        score, output = run(candidates[index], stream)
        n_runs += 1
        if best.index is None or float(score) > best.score:
            best = Selection(index, candidates[index], float(score), output, n_runs)
        if rng.random() < gamma:
            break
    return Selection(best.index, best.candidate, best.score, best.output, n_runs)


# ------------------------------------------------------------------------------ Papernot & Steinke
def _shape(distribution):
    return DISTRIBUTIONS[distribution] if isinstance(distribution, str) else float(distribution)


def repeat_and_select_event(event, mean_candidates, distribution="poisson"):
    """dp-accounting's ``RepeatAndSelectDpEvent`` of ``event`` run K times, best released.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        One run (training and scoring), e.g. :func:`dpstack.alternatives.accounting.gaussian_event`.
    mean_candidates : float
        E[K] >= 1.
    distribution : {"poisson", "geometric"} or float, default="poisson"
        The law of K: Poisson, or a truncated negative binomial of the given shape η > 0
        (η = 1: geometric).
    """
    validate_function_params(
        {"mean_candidates": [_MEAN], "distribution": _DISTRIBUTION},
        "repeat_and_select_event",
        mean_candidates=mean_candidates,
        distribution=distribution,
    )
    if not isinstance(event, dp_accounting.DpEvent):
        raise TypeError(f"event must be a dp_accounting.DpEvent, got {type(event).__name__}")
    return RepeatAndSelectDpEvent(event, float(mean_candidates), _shape(distribution))


def repeat_and_select_epsilon(event, delta, mean_candidates, distribution="poisson", neighbouring="replace-one"):
    """Total ε at ``delta`` of repeat-and-select (Papernot & Steinke 2022), by dp-accounting's RDP accountant.

    **Theorem (Papernot & Steinke 2022, Theorems 2 and 6).** If one run is (λ, ε(λ))-Rényi-DP
    for every order λ and the number of runs K is Poisson with mean μ (Theorem 6) or truncated
    negative binomial of shape η and mean μ (Theorem 2), releasing the best run is
    (λ, ε'(λ))-RDP with ε' computed from ε(·) at λ and at a second order; dp-accounting's
    ``RdpAccountant`` evaluates it for ``RepeatAndSelectDpEvent`` and converts to (ε, δ). The
    run's ε and δ are not added: the total replaces them.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        One run, noise multipliers relative to the add/remove sensitivity
        (:mod:`dpstack.alternatives.accounting`).
    delta : float
        δ in (0, 1) of the total.
    mean_candidates : float
        E[K] >= 1.
    distribution : {"poisson", "geometric"} or float, default="poisson"
    neighbouring : {"replace-one", "add/remove"}, default="replace-one"

    Returns
    -------
    float
    """
    validate_function_params(
        {"delta": [_DELTA], "neighbouring": [_RELATION]},
        "repeat_and_select_epsilon",
        delta=delta,
        neighbouring=neighbouring,
    )
    repeated = repeat_and_select_event(event, mean_candidates, distribution)
    return epsilon_of(repeated, delta, accountant="RDP", neighbouring=neighbouring)


def calibrate_repeat_and_select(
    target_epsilon, delta, mean_candidates, steps=1, distribution="poisson", neighbouring="replace-one"
):
    """The per-run Gaussian noise (and the per-run ε) whose repeat-and-select total is ``target_epsilon``.

    One run is ``steps`` full-batch Gaussian steps of noise multiplier z
    (:func:`dpstack.alternatives.accounting.gaussian_event`); z is found by bisection on
    log z so that :func:`repeat_and_select_epsilon` equals the target at ``delta`` (to a
    relative 1e-6, from above: the returned z gives a total ≤ the target).

    Returns
    -------
    dict
        ``noise_multiplier`` (z), ``run_epsilon`` (ε of one run at ``delta``, same RDP
        accountant and relation), ``total_epsilon`` (of the whole procedure).
    """
    validate_function_params(
        {
            "target_epsilon": [_EPS],
            "delta": [_DELTA],
            "mean_candidates": [_MEAN],
            "steps": [_COUNT],
            "distribution": _DISTRIBUTION,
            "neighbouring": [_RELATION],
        },
        "calibrate_repeat_and_select",
        target_epsilon=target_epsilon,
        delta=delta,
        mean_candidates=mean_candidates,
        steps=steps,
        distribution=distribution,
        neighbouring=neighbouring,
    )

    def total(log_z):
        event = gaussian_event(math.exp(log_z), int(steps))
        return repeat_and_select_epsilon(event, delta, mean_candidates, distribution, neighbouring)

    lo, hi = math.log(1e-2), math.log(1e4)
    if total(hi) > target_epsilon:
        raise ValueError(f"target_epsilon={target_epsilon} is below what noise multiplier 1e4 reaches")
    if total(lo) <= target_epsilon:
        lo_z = lo
    else:
        lo_z = optimize.brentq(lambda v: total(v) - target_epsilon, lo, hi, xtol=1e-7, rtol=1e-7)
        while total(lo_z) > target_epsilon:  # land on the safe side of the target
            lo_z += 1e-7
    z = math.exp(lo_z)
    run = epsilon_of(gaussian_event(z, int(steps)), delta, accountant="RDP", neighbouring=neighbouring)
    return dict(noise_multiplier=z, run_epsilon=float(run), total_epsilon=float(total(lo_z)))


def repeat_and_select(run, candidates, mean_candidates, distribution="poisson", random_state=None):
    """Papernot & Steinke's procedure: K random runs (uniform candidates), the best released.

    K is Poisson(μ) (K = 0 releases nothing) or geometric of mean μ (``"geometric"``, K >= 1).
    ``run(candidate, rng) -> (score, output)`` is one run, with its own fresh stream. The total
    guarantee is :func:`repeat_and_select_epsilon` of the run's event.

    Returns
    -------
    Selection
    """
    validate_function_params(
        {
            "mean_candidates": [_MEAN],
            "distribution": [StrOptions(set(DISTRIBUTIONS))],
            "random_state": _RANDOM_STATE,
        },
        "repeat_and_select",
        mean_candidates=mean_candidates,
        distribution=distribution,
        random_state=random_state,
    )
    if not callable(run):
        raise TypeError(f"run must be callable, got {type(run).__name__}")
    candidates = list(candidates)
    if not candidates:
        raise ValueError("candidates must be a non-empty sequence")
    rng = check_random_state(random_state)
    if distribution == "poisson":
        k = int(rng.poisson(mean_candidates))
    else:
        k = int(rng.geometric(1.0 / mean_candidates))
    best = Selection(None, None, float("nan"), None, 0)
    for _ in range(k):
        index = int(rng.integers(len(candidates)))
        stream = np.random.default_rng(int(rng.integers(2**63 - 1)))
        score, output = run(candidates[index], stream)
        if best.index is None or float(score) > best.score:
            best = Selection(index, candidates[index], float(score), output, 0)
    return Selection(best.index, best.candidate, best.score, best.output, k)
