"""Audits of output perturbation: the multiparty releases (MPL vote, soft, avg).

Output perturbation releases w_s(D) + η with density ∝ exp(−‖η‖/scale), so the
privacy loss at a released w is (‖w − w_s(D')‖ − ‖w − w_s(D)‖)/scale, whose
maximum over w is exactly ‖w_s(D) − w_s(D')‖/scale (reached on the ray through
the two minimisers). The exact check is therefore a *sensitivity* check: on a
worst-case pair of neighbours, the measured minimiser distance must not exceed
the sensitivity the noise was calibrated to (scale · ε).

The privacy unit is one whole party: D' replaces all of one party's samples.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import clone

from .._validation import check_random_state
from .statistical import epsilon_lower_bound_from_scores

__all__ = ["party_neighbours", "output_perturbation_audit"]


def party_neighbours(n_parties=11, party_size=5, n_aux=40, n_features=3):
    """Worst-case neighbouring multiparty datasets (binary labels, one party changed).

    All rows, private and auxiliary, equal one unit vector u. Parties 1 … M−1
    hold one class each, split evenly ((M−1)/2 of each, M odd), so their local
    classifiers split their votes evenly on every auxiliary row; party 0 holds
    class 0 in D and class 1 in D'. Under majority vote every auxiliary label
    flips (the construction of Hamm et al.'s Theorem 1), under soft labels every
    α moves by 1/M (Theorem 3), and under averaging one local model flips sign.

    Returns
    -------
    D, D_prime : dicts with keys ``X``, ``y``, ``parties``, ``X_aux`` (``fit(**D)``-ready)
    """
    M = int(n_parties)
    if M < 3 or M % 2 == 0:
        raise ValueError(f"n_parties must be odd and >= 3 (an even split of the others), got {M}")
    u = np.zeros(n_features)
    u[0] = 1.0
    parties = np.repeat(np.arange(M), party_size)
    X = np.tile(u, (M * party_size, 1))
    party_label = np.r_[0, np.arange(M - 1) % 2]
    y = party_label[parties]
    X_aux = np.tile(u, (n_aux, 1))
    y_prime = y.copy()
    y_prime[parties == 0] = 1
    D = dict(X=X, y=y, parties=parties, X_aux=X_aux)
    return D, dict(D, y=y_prime)


def output_perturbation_audit(estimator, D, D_prime, n_runs=2000, confidence=0.95, random_state=None):
    """Sensitivity, exact maximum loss and statistical ε_lo of an output-perturbation release.

    Parameters
    ----------
    estimator : MultipartyPrivateClassifier (or a deliberately broken variant of it)
        Must accept ``diagnostics=True`` and then expose ``diagnostics_.unperturbed_coef``,
        ``noise_scale_``, ``sensitivity_`` and ``release_noise(epsilon, random_state, size)``
        after ``fit``.
    D, D_prime : dicts of ``fit`` keyword arguments (see :func:`party_neighbours`).
    n_runs : int
        Releases drawn per dataset for the statistical bound (the noise is
        redrawn around the fitted minimiser: the same distribution as refitting).
    confidence : float
    random_state : int or Generator

    Returns
    -------
    dict with ``measured_distance`` ‖w_s(D) − w_s(D')‖, ``calibrated_sensitivity``
    (noise scale × ε), ``claimed_sensitivity`` (``sensitivity_``),
    ``exact_max_loss`` (= measured distance / noise scale), ``epsilon_lo``
    (an :class:`~dpstack.audit.statistical.EpsilonLowerBound`).
    """
    rng = check_random_state(random_state)
    fit_D = clone(estimator).set_params(random_state=int(rng.integers(2**31 - 1)), diagnostics=True).fit(**D)
    fit_Dp = clone(estimator).set_params(random_state=int(rng.integers(2**31 - 1)), diagnostics=True).fit(**D_prime)
    a, ap = fit_D.diagnostics_.unperturbed_coef.ravel(), fit_Dp.diagnostics_.unperturbed_coef.ravel()
    distance = float(np.linalg.norm(a - ap))
    epsilon = float(fit_D.epsilon)
    scale = float(fit_D.noise_scale_)
    direction = (a - ap) / distance if distance > 0 else np.eye(a.size)[0]
    draws = fit_D.release_noise(epsilon, rng, size=n_runs).reshape(n_runs, -1) + a
    draws_p = fit_Dp.release_noise(epsilon, rng, size=n_runs).reshape(n_runs, -1) + ap
    result = epsilon_lower_bound_from_scores(draws @ direction, draws_p @ direction, confidence, random_state=rng)
    return {
        "measured_distance": distance,
        "claimed_sensitivity": float(fit_D.sensitivity_),
        "calibrated_sensitivity": scale * epsilon,
        "exact_max_loss": distance / scale if scale > 0 else np.inf,
        "epsilon": epsilon,
        "epsilon_lo": result,
    }
