"""diffprivlib 0.6.6's ``LogisticRegression``, modelled for dpstack's exact privacy loss.

IBM's diffprivlib implements the same objective perturbation as :class:`dpstack.PrivateLogisticRegression`
(Chaudhuri, Monteleoni & Sarwate 2011). This module writes down what its version 0.6.6 computes for a
binary problem (``models/logistic_regression.py`` and ``mechanisms/vector.py``), *without importing
diffprivlib*, so that the book can evaluate the exact privacy loss of its output density with
:mod:`dpstack.audit.exact`'s own formula (the same noise read-back and Jacobian as for dpstack's
mechanisms). The model is checked against diffprivlib itself by ``ci/diffprivlib/test_oracle.py`` (run in
a virtualenv with diffprivlib) and against recorded diffprivlib outputs by ``tests/test_diffprivlib_oracle.py``.

What diffprivlib 0.6.6 computes, with ``data_norm = q``, ``C``, ``ε`` and n rows:

* rows are clipped to ‖x‖ ≤ q; with ``fit_intercept=True`` a constant 1 is appended, x̃ = (x, 1), and the
  bound becomes q̃ = √(q² + 1) (otherwise q̃ = q);
* ε' = ε − 2 log(1 + q̃C/4); if ε' ≤ 0, Δ = (q̃/(4(e^{ε/4} − 1)) − 1/C)/n and ε' = ε/2, else Δ = 0;
* noise b with density ∝ exp(−‖b‖/s), s = 2q̃/ε', in d = p + ``fit_intercept`` dimensions;
* the released θ = (w, w₀) minimises (1/n)Σℓ + ‖w‖²/(2Cn) + bᵀθ/n + (Δ/2)‖θ‖²: the intercept is left
  out of the ‖w‖² term (scikit-learn's ``LinearModelLoss`` does not penalise it).

dpstack's calibration (:func:`dpstack.mechanisms.objective_perturbation_calibration`) has q² where
diffprivlib has q̃ in the two Jacobian terms (the curvature of one row is at most ‖x‖²/4), and regularises
every coordinate. At q = 1 without an intercept the two coincide, with λ = 1/(Cn).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit

from dpstack.audit.exact import noise_from_output
from dpstack.audit.statistical import clopper_pearson
from dpstack.mechanisms import clip_rows, objective_perturbation_calibration

__all__ = [
    "VERSION",
    "calibration",
    "design",
    "regularisation",
    "noise_from_release",
    "privacy_loss",
    "supremum_without_intercept",
    "worst_c_limit",
    "dpstack_supremum",
    "epsilon_lower_bound",
    "blackbox_record",
    "issue1_pair",
    "issue2_pair",
    "blackbox_pair_issue1",
]

#: the diffprivlib version this module models
VERSION = "0.6.6"

#: diffprivlib's bound on the curvature of the logistic loss (its ``function_sensitivity``)
CURVATURE = 0.25

#: the recorded black-box runs of diffprivlib (counts of a fixed event over many fits on D and on D')
BLACKBOX_FILE = Path(__file__).resolve().parents[1] / "data" / "diffprivlib_blackbox.json"


def calibration(epsilon, C, data_norm, n, fit_intercept=False):
    """diffprivlib 0.6.6's calibration: a dict with ``bound`` (q̃), ``epsilon_noise`` (ε'), ``delta`` (Δ),
    ``noise_scale`` (s = 2q̃/ε') and ``branch`` ("delta=0" or "delta>0")."""
    q = math.sqrt(data_norm**2 + 1.0) if fit_intercept else float(data_norm)
    eps_noise = epsilon - 2.0 * math.log(1.0 + CURVATURE * q * C)  # q̃ where the proof needs q̃²
    delta, branch = 0.0, "delta=0"
    if eps_noise <= 0:
        delta = (CURVATURE * q / math.expm1(epsilon / 4.0) - 1.0 / C) / n
        eps_noise, branch = epsilon / 2.0, "delta>0"
    return {
        "bound": q,
        "epsilon_noise": eps_noise,
        "delta": delta,
        "noise_scale": 2.0 * q / eps_noise,
        "branch": branch,
    }


def dpstack_calibration(epsilon, C, data_norm, n):
    """dpstack's calibration of the same problem (λ = 1/(Cn), rows bounded by ``data_norm``), as the same dict."""
    cal = objective_perturbation_calibration(epsilon, n, 1.0 / (C * n), data_norm)
    return {
        "bound": float(data_norm),
        "epsilon_noise": cal.epsilon_noise,
        "delta": cal.delta,
        "noise_scale": cal.noise_scale,
        "branch": cal.branch,
    }


def design(X, data_norm, fit_intercept=False):
    """The matrix diffprivlib trains on: rows clipped to ``data_norm``, then a constant 1 column with an intercept."""
    Z = clip_rows(np.asarray(X, dtype=float), data_norm)
    return np.hstack([Z, np.ones((Z.shape[0], 1))]) if fit_intercept else np.array(Z, dtype=float)


def regularisation(C, n, d, fit_intercept=False):
    """λ per coordinate, in dpstack's scaling (the objective's ½λ‖θ‖²): 1/(Cn), and 0 for the intercept."""
    lam = np.full(d, 1.0 / (C * n))
    if fit_intercept:
        lam[-1] = 0.0
    return lam


def _signed(y):
    y = np.asarray(y).ravel()
    classes = np.unique(y)
    return np.where(y == classes[-1], 1.0, -1.0)  # diffprivlib's positive class: the larger label


def noise_from_release(X, y, theta, epsilon, C, data_norm, fit_intercept=False):
    """The noise vector b that makes ``theta`` (coef_ then intercept_) diffprivlib's minimiser on (X, y).

    Read back from the first-order condition with :func:`dpstack.audit.exact.noise_from_output`."""
    Z = design(X, data_norm, fit_intercept)
    n, d = Z.shape
    cal = calibration(epsilon, C, data_norm, n, fit_intercept)
    W = np.atleast_2d(np.asarray(theta, dtype=float))
    b, _ = noise_from_output(Z, _signed(y), W, regularisation(C, n, d, fit_intercept), cal["delta"], np.zeros(d))
    return b[0] if np.ndim(theta) == 1 else b


def _log_det(Z, W, lam, delta):
    """log det(Σ σ'(z_i) z_i z_iᵀ + n diag(λ + Δ)) at each row of W, with σ'(z) = σ(z)σ(−z): this keeps the
    tiny curvature of a saturated row, on which an unregularised direction (the intercept) depends."""
    n = Z.shape[0]
    margins = W @ Z.T  # (m, n)
    curv = expit(margins) * expit(-margins)
    H = np.einsum("mi,ij,ik->mjk", curv, Z, Z, optimize=True)
    H[:, np.arange(Z.shape[1]), np.arange(Z.shape[1])] += n * (lam + delta)
    sign, logdet = np.linalg.slogdet(H)
    return np.where(sign > 0, logdet, -np.inf)


def privacy_loss(D, D_prime, theta, epsilon, C, data_norm, fit_intercept=False, terms=False):
    """Exact privacy loss log p(θ | D) − log p(θ | D') of diffprivlib's output density.

    ``D`` and ``D_prime`` are ``(X, y)`` pairs of the same size; ``theta`` is one output (coef_ then
    intercept_) or a stack of them. The noise b(θ; D) is read back from the output by dpstack's exact check
    (:func:`dpstack.audit.exact.noise_from_output`) with diffprivlib's design, calibration and
    per-coordinate regularisation; the Jacobian term is the log-ratio of the two Hessians' determinants.
    With ``terms=True`` returns ``(noise term, Jacobian term)``.
    """
    (X, y), (Xp, yp) = D, D_prime
    Z, Zp = design(X, data_norm, fit_intercept), design(Xp, data_norm, fit_intercept)
    n, d = Z.shape
    cal = calibration(epsilon, C, data_norm, n, fit_intercept)
    lam, W, w0 = regularisation(C, n, d, fit_intercept), np.atleast_2d(np.asarray(theta, dtype=float)), np.zeros(d)
    b, _ = noise_from_output(Z, _signed(y), W, lam, cal["delta"], w0)
    bp, _ = noise_from_output(Zp, _signed(yp), W, lam, cal["delta"], w0)
    noise = (np.linalg.norm(bp, axis=1) - np.linalg.norm(b, axis=1)) / cal["noise_scale"]
    jac = _log_det(Z, W, lam, cal["delta"]) - _log_det(Zp, W, lam, cal["delta"])
    if np.ndim(theta) == 1:
        noise, jac = float(noise[0]), float(jac[0])
    return (noise, jac) if terms else noise + jac


def _supremum(bound, noise_scale, ridge):
    """sup over s in (0, 1) of (q/s_noise)(1 + s) + log(1 + q² s(1 − s)/ridge), and the maximising s."""
    r = minimize_scalar(
        lambda s: -(bound / noise_scale * (1 + s) + math.log1p(bound**2 * s * (1 - s) / ridge)),
        bounds=(1e-12, 1 - 1e-12),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return -float(r.fun), float(r.x)


def supremum_without_intercept(epsilon, C, data_norm):
    """The exact supremum of diffprivlib's privacy loss over all neighbours and outputs (no intercept).

    With s = |σ(z) − y| of the replaced row, the noise term is at most q(1 + s)/s_noise and the Jacobian
    term at most log(1 + σ'(z)q²/(1/C + nΔ)) with σ'(z) = s(1 − s); a replacement row with a saturated
    margin approaches both (two or more features; nΔ does not depend on n). Returns ``(L*, s*)``."""
    cal = calibration(epsilon, C, data_norm, 1, False)
    return _supremum(float(data_norm), cal["noise_scale"], 1.0 / C + cal["delta"])


def dpstack_supremum(epsilon, C, data_norm):
    """The same supremum for dpstack's calibration of the same problem (λ = 1/(Cn)): at most ε."""
    cal = dpstack_calibration(epsilon, C, data_norm, 1)
    return _supremum(float(data_norm), cal["noise_scale"], 1.0 / C + cal["delta"])


def worst_c_limit(epsilon, data_norm):
    """``(C*, L)``: as C rises to C* = 4(e^{ε/2} − 1)/q (where ε' → 0⁺), the supremum tends to
    L = log(1 + q(e^{ε/2} − 1)), which exceeds ε once q is large enough (at q = 1 it is ε/2)."""
    return 4.0 * math.expm1(epsilon / 2.0) / data_norm, math.log1p(data_norm * math.expm1(epsilon / 2.0))


def epsilon_lower_bound(hits, hits_prime, runs, confidence=0.95):
    """Clopper–Pearson lower bound on ε from an event seen ``hits`` times on D and ``hits_prime`` on D'
    in ``runs`` fits each (Bonferroni: (1 − confidence)/2 on each side)."""
    alpha = (1.0 - confidence) / 2.0
    low, _ = clopper_pearson(hits, runs, alpha)
    _, high = clopper_pearson(hits_prime, runs, alpha)
    return float(np.log(low / high)) if low > 0 else -math.inf


def blackbox_record(path=BLACKBOX_FILE):
    """The recorded black-box runs of diffprivlib (a dict; see the file's ``how`` entry)."""
    return json.loads(Path(path).read_text())


def issue1_pair(data_norm=4.0):
    """Neighbours for the row-bound issue: two rows of norm q, the second replaced (n = 2, two features).

    At the output w = (0, 10) the replaced row lies on the decision boundary and its replacement has
    margin 10q (saturated)."""
    q = float(data_norm)
    D = (np.array([[0.0, q], [q, 0.0]]), np.array([1, 0]))
    Dp = (np.array([[0.0, q], [0.0, q]]), np.array([1, 0]))
    return D, Dp, np.array([0.0, 10.0])


def issue2_pair():
    """Neighbours for the intercept issue (row bound 1, one feature): the first row 1 is replaced by 0.

    At the output (coef_, intercept_) = (T, −T) the replaced row lies on the boundary, while both rows of
    D' are saturated, so nothing curves the intercept direction on D'."""
    D = (np.array([[1.0], [-1.0]]), np.array([1, 0]))
    Dp = (np.array([[0.0], [-1.0]]), np.array([1, 0]))
    return D, Dp


def blackbox_pair_issue1():
    """The black-box pair of the row-bound issue (q = 10, one feature, no intercept): a row 10 replaced by 0."""
    D = (np.array([[10.0], [0.0]]), np.array([0, 1]))
    Dp = (np.array([[0.0], [0.0]]), np.array([0, 1]))
    return D, Dp
