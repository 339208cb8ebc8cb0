"""Audits of output perturbation: the multiparty releases (MPL vote, soft, avg; K ≥ 2 classes).

Output perturbation releases w_s(D) + η with density ∝ exp(−‖η‖/scale), so the
privacy loss at a released w is (‖w − w_s(D')‖ − ‖w − w_s(D)‖)/scale, whose
maximum over w is exactly ‖w_s(D) − w_s(D')‖/scale (reached on the ray through
the two minimisers). The audit reads none of this from the estimator:

* w_s(D) and w_s(D') are recomputed by the audit's own solver
  (:func:`~dpstack.audit.laws.mpl_unperturbed`);
* the noise of every one of ``n_runs`` real fits is the released ``coef_`` minus
  w_s(D), and its law is tested against the claim, ‖η‖ ~ Gamma(d·K_out, S/ε) with S
  the sensitivity of Hamm et al.'s theorems for the public M, K and λ;
* the exact maximum loss is ‖w_s(D) − w_s(D')‖ divided by the claimed scale S/ε when
  the law holds (by the measured scale when it does not);
* the statistical bound ε_lo comes from the released ``coef_`` of real fits on D and
  on D', projected on w_s(D) − w_s(D').

The privacy unit is one whole party: D' replaces all of one party's samples.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_random_state
from ..multiparty.estimator import mpl_sensitivity
from .laws import ALPHA, law_pvalues, mpl_unperturbed
from .protocol import fit_clone
from .statistical import epsilon_lower_bound_from_scores

__all__ = ["party_neighbours", "output_perturbation_audit"]


def party_neighbours(n_parties=11, party_size=5, n_aux=40, n_features=3, n_classes=2):
    """Worst-case neighbouring multiparty datasets (one party changed).

    All rows, private and auxiliary, equal one unit vector u. Parties 1 … M−1
    hold one class each, split evenly between classes 0 and 1 ((M−1)/2 of each,
    M odd), so their local classifiers split their votes evenly on every
    auxiliary row; party 0 holds class 0 in D and class 1 in D'. Under majority
    vote every auxiliary label flips (the construction of Hamm et al.'s
    Theorem 1), under soft labels every α moves by 1/M (Theorem 3), and under
    averaging one local model changes class. With ``n_classes = K ≥ 3`` one more
    party per extra class holds that class (so every class occurs in D and D'),
    and the change of party 0 moves the targets between classes 0 and 1 (the
    √2 of the multiclass sensitivities).

    Returns
    -------
    D, D_prime : dicts with keys ``X``, ``y``, ``parties``, ``X_aux`` (``fit(**D)``-ready)
    """
    M = int(n_parties)
    if M < 3 or M % 2 == 0:
        raise ValueError(f"n_parties must be odd and >= 3 (an even split of the others), got {M}")
    K = int(n_classes)
    if K < 2:
        raise ValueError(f"n_classes must be >= 2, got {n_classes!r}")
    u = np.zeros(n_features)
    u[0] = 1.0
    party_label = np.r_[0, np.arange(M - 1) % 2, np.arange(2, K)]
    parties = np.repeat(np.arange(party_label.size), party_size)
    X = np.tile(u, (parties.size, 1))
    y = party_label[parties]
    X_aux = np.tile(u, (n_aux, 1))
    y_prime = y.copy()
    y_prime[parties == 0] = 1
    D = dict(X=X, y=y, parties=parties, X_aux=X_aux)
    return D, dict(D, y=y_prime)


def _fit_kwargs(D):
    return {k: v for k, v in D.items() if k not in ("X", "y")}


def output_perturbation_audit(estimator, D, D_prime, n_runs=1000, confidence=0.95, random_state=None):
    """Law of the noise, sensitivity, exact maximum loss and ε_lo of an MPL release, from real fits.

    Parameters
    ----------
    estimator : MultipartyPrivateClassifier (or a deliberately broken variant of it), unfitted
        Only its parameters, its public ``fit`` and its released ``coef_`` and
        ``classes_`` are used.
    D, D_prime : dicts of ``fit`` keyword arguments (see :func:`party_neighbours`).
    n_runs : int
        Real fits per dataset (fresh seeds).
    confidence : float
    random_state : int or Generator

    Returns
    -------
    dict with ``measured_distance`` ‖w_s(D) − w_s(D')‖ (the audit's solver),
    ``claimed_sensitivity`` S (Hamm et al., public M, K, λ), ``calibrated_sensitivity``
    (the scale measured from the recovered noise × ε), ``scale_ratio`` (measured /
    claimed scale), ``p_norm`` and ``p_direction`` (the law tests), ``law_rejected``,
    ``exact_max_loss``, ``epsilon`` and ``epsilon_lo`` (an
    :class:`~dpstack.audit.statistical.EpsilonLowerBound`).
    """
    rng = check_random_state(random_state)
    params = estimator.get_params(deep=False)
    epsilon = float(params["epsilon"])
    seeds = rng.integers(0, 2**31 - 1, size=2 * int(n_runs))
    fits_D = [fit_clone(estimator, D["X"], D["y"], s, _fit_kwargs(D)) for s in seeds[:n_runs]]
    fits_P = [fit_clone(estimator, D_prime["X"], D_prime["y"], s, _fit_kwargs(D_prime)) for s in seeds[n_runs:]]
    a = mpl_unperturbed(fits_D[0], **D).ravel()
    ap = mpl_unperturbed(fits_P[0], **D_prime).ravel()
    distance = float(np.linalg.norm(a - ap))
    M = int(np.max(D["parties"])) + 1
    lam = params["lam"] if params["method"] != "avg" or params["local_lam"] is None else params["local_lam"]
    S = mpl_sensitivity(
        params["method"],
        M,
        fits_D[0].classes_.size,
        lam,
        params["protect_aux"],
        None if D.get("X_aux") is None else np.asarray(D["X_aux"]).shape[0],
    )
    claimed_scale = S / epsilon
    R, Rp = np.array([f.coef_.ravel() for f in fits_D]), np.array([f.coef_.ravel() for f in fits_P])
    p_norm, p_dir, ratio = law_pvalues(R - a, claimed_scale)
    rejected = min(p_norm, p_dir) * 2 < ALPHA
    measured_scale = ratio * claimed_scale
    direction = (a - ap) / distance if distance > 0 else np.eye(a.size)[0]
    result = epsilon_lower_bound_from_scores(R @ direction, Rp @ direction, confidence, random_state=rng)
    scale = measured_scale if rejected else claimed_scale
    return {
        "measured_distance": distance,
        "claimed_sensitivity": S,
        "calibrated_sensitivity": measured_scale * epsilon,
        "scale_ratio": ratio,
        "p_norm": p_norm,
        "p_direction": p_dir,
        "law_rejected": bool(rejected),
        "exact_max_loss": distance / scale if scale > 0 else np.inf,
        "epsilon": epsilon,
        "epsilon_lo": result,
    }
