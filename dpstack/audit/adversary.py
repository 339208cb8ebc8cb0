"""The adversary of the privacy review: which of two neighbouring datasets did a fitted object see?

The adversary holds the fitted object and every record but one; the last record is
one of two known candidates, so the training set is D or its neighbour D'. For each
candidate it reads the noise back from the release (:func:`~dpstack.audit.recover_noise`:
stationarity of ``w_`` for objective perturbation, ``coef_`` minus the recomputed
minimiser for output perturbation). Then:

* if the object carries the noise norm (``diagnostics_``, only with ``diagnostics=True``),
  it picks the candidate whose recovered norm matches it — the noise norm pins the
  dataset down exactly;
* otherwise it picks the candidate under which the recovered noise is likelier under
  the claimed density exp(−Σ‖b_k‖/scale_k) (a likelihood-ratio guess).

ε-DP bounds the success rate of *any* such guess with a fair prior by e^ε/(1 + e^ε)
(73.1 % at ε = 1, 52.5 % at ε = 0.1). :func:`adversary_experiment` reports the rate with
a two-sided Clopper–Pearson interval.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpstack.audit.neighbours import worst_case_neighbours
from dpstack.audit.output import party_neighbours
from dpstack.audit.report import audit_data
from dpstack.linear import PrivateLogisticRegression
from dpstack.multiparty import MultipartyPrivateClassifier

from .._validation import check_random_state
from .laws import recover_noise
from .protocol import fit_clone
from .statistical import clopper_pearson

__all__ = ["adversary_guess", "adversary_experiment", "adversary_table"]


def _diagnostic_norms(fitted):
    diag = getattr(fitted, "diagnostics_", None)
    if diag is None:
        return None
    for key in ("noise_norms", "noise_norm"):
        if key in diag:
            return np.atleast_1d(np.asarray(diag[key], dtype=float))
    return None


def adversary_guess(fitted, candidates, fit_params=None):
    """Index of the candidate dataset the adversary believes ``fitted`` was trained on.

    Parameters
    ----------
    fitted : a fitted estimator (the object the adversary holds)
    candidates : list of two (X, y) pairs, the neighbouring datasets
    fit_params : dict or None, the other (known) inputs of ``fit``

    Returns
    -------
    int (0 or 1)
    """
    blocks = [recover_noise(fitted, X, y, fit_params, cache={}) for X, y in candidates]
    norms = [np.array([np.linalg.norm(b.noise) for b in blk]) for blk in blocks]
    known = _diagnostic_norms(fitted)
    if known is not None and known.size == norms[0].size:
        return int(np.argmin([np.abs(n - known).sum() for n in norms]))
    scores = [sum(np.linalg.norm(b.noise) / b.scale for b in blk) for blk in blocks]
    return int(np.argmin(scores))


def adversary_experiment(template, D, D_prime, n_trials=200, fit_params=None, random_state=0, confidence=0.95):
    """Success rate of :func:`adversary_guess` over ``n_trials`` fits with a fair secret bit.

    Parameters
    ----------
    template : unfitted estimator (e.g. ``PrivateLogisticRegression(diagnostics=True)``)
    D, D_prime : (X, y) pairs, the two neighbouring datasets
    n_trials : int
    fit_params : dict or None
    random_state : int or Generator
    confidence : float, level of the two-sided Clopper–Pearson interval

    Returns
    -------
    dict with ``successes``, ``trials``, ``rate``, ``ci_low``, ``ci_high``, ``bound``
    (e^ε/(1 + e^ε) for the template's ε) and ``within_bound`` (the interval's lower end
    does not exceed the bound).
    """
    rng = check_random_state(random_state)
    eps = float(template.get_params(deep=False)["epsilon"])
    candidates = [D, D_prime]
    secrets = rng.integers(0, 2, size=int(n_trials))
    seeds = rng.integers(0, 2**31 - 1, size=int(n_trials))
    wins = 0
    for secret, seed in zip(secrets, seeds):
        X, y = candidates[secret]
        fitted = fit_clone(template, X, y, seed, fit_params)
        wins += adversary_guess(fitted, candidates, fit_params) == secret
    alpha = (1.0 - confidence) / 2
    lo, hi = clopper_pearson(wins, n_trials, alpha)
    bound = float(np.exp(eps) / (1.0 + np.exp(eps))) if np.isfinite(eps) else 1.0
    return {
        "successes": int(wins),
        "trials": int(n_trials),
        "rate": wins / n_trials,
        "ci_low": float(lo),
        "ci_high": float(hi),
        "bound": bound,
        "within_bound": bool(lo <= bound),
    }


def adversary_table(epsilons=(1.0, 0.1), n_trials=200, random_state=0):
    """The adversary experiment, default object vs ``diagnostics=True``, one row per case.

    PLR: D is a small public dataset with its first record at the norm bound, D' flips that
    record's label (the pair of :func:`~dpstack.audit.worst_case_neighbours`). MPL soft
    (when the estimator has a ``diagnostics`` parameter): the pair of
    :func:`~dpstack.audit.party_neighbours`, one whole party changed.

    Returns
    -------
    pandas.DataFrame with columns ``mechanism``, ``ε``, ``object``, ``successes``,
    ``trials``, ``success rate``, ``95% CI``, ``ε-DP bound``, ``verdict``.
    """

    rng = check_random_state(random_state)
    X, y = audit_data(n_samples=60, n_features=5, random_state=0)
    XD, yD, XP, yP = worst_case_neighbours(X, y)["label_flip"]
    rows = []
    for eps in epsilons:
        for diagnostics in (False, True):
            template = PrivateLogisticRegression(epsilon=eps, lam=0.05, classes=[0, 1], diagnostics=diagnostics)
            res = adversary_experiment(template, (XD, yD), (XP, yP), n_trials=n_trials, random_state=rng)
            rows.append(_row("PLR", eps, diagnostics, res))

    if "diagnostics" in MultipartyPrivateClassifier().get_params(deep=False):
        D, Dp = party_neighbours(n_parties=5, party_size=3, n_aux=10)
        fit_params = dict(parties=D["parties"], X_aux=D["X_aux"])
        for eps in epsilons:
            for diagnostics in (False, True):
                template = MultipartyPrivateClassifier(
                    "soft", epsilon=eps, lam=1.0, classes=[0, 1], diagnostics=diagnostics
                )
                res = adversary_experiment(
                    template,
                    (D["X"], D["y"]),
                    (Dp["X"], Dp["y"]),
                    n_trials=n_trials,
                    fit_params=fit_params,
                    random_state=rng,
                )
                rows.append(_row("MPL soft", eps, diagnostics, res))
    return pd.DataFrame(rows)


def _row(name, eps, diagnostics, res):
    return {
        "mechanism": name,
        "ε": eps,
        "object": "diagnostics=True (noise norm kept)" if diagnostics else "default (release only)",
        "successes": res["successes"],
        "trials": res["trials"],
        "success rate": res["rate"],
        "95% CI": f"[{res['ci_low']:.3f}, {res['ci_high']:.3f}]",
        "ε-DP bound": res["bound"],
        "verdict": "within ε's bound" if res["within_bound"] else "exceeds ε's bound (not private)",
    }
