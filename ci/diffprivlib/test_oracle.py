"""diffprivlib as an oracle for dpstack's private logistic regression (the optional CI job, ``.ci/diffprivlib``).

IBM's diffprivlib implements the same objective perturbation (Chaudhuri et al. 2011) as dpstack's
``PrivateLogisticRegression``. At row bound 1 without an intercept the two must agree:

* the calibration (ε', Δ, noise scale) is the same to rounding;
* fed the noise vector diffprivlib drew, dpstack's release equals diffprivlib's to the solvers' tolerance;
* over seeds, the two releases have the same law (and a dpstack with doubled noise is told apart: the
  test has power).

Where they differ by design, the difference is pinned, so that an upstream change is noticed: diffprivlib
0.6.6 calibrates a row bound q > 1 with q where the proof needs q², and leaves the intercept unregularised
(both privacy violations; see FINDINGS.md and the book's audit chapter).

Run in a virtualenv with diffprivlib 0.6.6 and scikit-learn 1.7 (README.md), with the repository on
PYTHONPATH:  PYTHONPATH=. python -m pytest ci/diffprivlib/test_oracle.py -s
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # oracle.py, beside this file

import oracle

import dpstack.linear
from dpstack import PrivateLogisticRegression
from dpstack.companion.chapters import diffprivlib_lr as model
from dpstack.mechanisms import objective_perturbation_calibration

TIGHT = {"tol": 1e-12, "max_iter": 10000}  # diffprivlib's L-BFGS-B run to convergence


def test_versions():
    v = oracle.versions()
    print(f"\n  versions: {v}; dpstack from {Path(dpstack.__file__).parent}")
    assert v["diffprivlib"] == model.VERSION, "another diffprivlib: the pinned divergences below may have changed"


@pytest.mark.parametrize(
    "epsilon, C, n",
    [(1.0, 1.0, 200), (1.0, 10.0, 200), (0.1, 1.0, 200), (5.0, 0.01, 200), (0.5, 100.0, 50), (2.0, 0.5, 1000)],
)
def test_calibration_identity_at_row_bound_one(epsilon, C, n):
    """ε', Δ and the noise scale diffprivlib draws with equal dpstack's objective_perturbation_calibration."""
    X, y = oracle.oracle_data(n=n)
    _, seen = oracle.fit_observed(X, y, 1, epsilon=epsilon, C=C, data_norm=1.0, fit_intercept=False)
    cal = objective_perturbation_calibration(epsilon, n, 1.0 / (C * n), 1.0)
    print(
        f"\n  ε={epsilon} C={C} n={n} ({cal.branch}): noise scale {seen['noise_scale']:.15g} vs {cal.noise_scale:.15g}, "
        f"Δ {seen['delta']:.15g} vs {cal.delta:.15g}"
    )
    assert seen["noise_scale"] == pytest.approx(cal.noise_scale, rel=1e-12)
    assert seen["epsilon_noise"] == pytest.approx(cal.epsilon_noise, rel=1e-12)
    assert seen["delta"] == pytest.approx(cal.delta, rel=1e-12, abs=1e-14)


def _dpstack_release(X, y, epsilon, C, noise):
    """dpstack's PrivateLogisticRegression fitted with ``noise`` as its noise vector (its own draw replaced)."""
    calls = []

    def given(dim, scale, random_state=None, size=None):
        calls.append((dim, scale))
        return np.array(noise, dtype=float)

    with mock.patch.object(dpstack.linear, "isotropic_noise", given):
        est = PrivateLogisticRegression(
            epsilon=epsilon, lam=1.0 / (C * len(y)), norm_bound=1.0, classes=[0, 1], tol=1e-12, random_state=0
        ).fit(X, y)
    assert len(calls) == 1
    return est, calls[0]


@pytest.mark.parametrize("epsilon, C, seed", [(1.0, 1.0, 11), (1.0, 10.0, 12), (0.3, 1.0, 13), (4.0, 0.1, 14)])
def test_same_noise_same_release(epsilon, C, seed):
    """dpstack fed the noise vector diffprivlib drew releases diffprivlib's coefficients (rows clipped alike)."""
    X, y = oracle.oracle_data()
    theta, seen = oracle.fit_observed(X, y, seed, epsilon=epsilon, C=C, data_norm=1.0, fit_intercept=False, **TIGHT)
    est, (dim, scale) = _dpstack_release(X, y, epsilon, C, seen["b"])
    gap = np.abs(est.w_ - theta).max()
    print(
        f"\n  ε={epsilon} C={C}: ‖b‖ = {np.linalg.norm(seen['b']):.4g}, max |w_dpstack − coef_diffprivlib| = {gap:.2e}"
    )
    assert dim == len(theta) and scale == pytest.approx(seen["noise_scale"], rel=1e-12)
    assert gap <= 1e-7 * max(1.0, np.abs(theta).max())


@pytest.fixture(scope="module")
def law():
    """diffprivlib's releases, dpstack's, and a dpstack whose noise is doubled (400 seeds each)."""
    dpl, dps = oracle.law_samples(1.0)
    _, doubled = oracle.law_samples(2.0)
    return dpl, dps, doubled


def _same_law(a, b):
    """The same-law decision: two-sample KS on the first coefficient and on ‖θ‖, each at 0.01 / 2."""
    p = oracle.ks_pvalues(a, b)
    return min(p) > 0.01 / 2, p


def test_same_law_over_seeds(law):
    """Over 400 seeds each, KS does not separate diffprivlib's releases from dpstack's."""
    dpl, dps, _ = law
    same, p = _same_law(dpl, dps)
    print(
        f"\n  KS over {len(dpl)} seeds each, dpstack vs diffprivlib: p = ({p[0]:.3g}, {p[1]:.3g}) -> "
        f"{'same law' if same else 'REJECTED'}"
    )
    assert same, "dpstack's and diffprivlib's releases have different laws"


def test_the_same_law_test_rejects_doubled_noise(law):
    """The power check: the same decision, on a dpstack whose noise scale is doubled, must reject."""
    dpl, _, doubled = law
    same, p = _same_law(dpl, doubled)
    print(
        f"\n  KS over {len(dpl)} seeds each, dpstack with doubled noise vs diffprivlib: p = ({p[0]:.3g}, {p[1]:.3g}) "
        f"-> {'not rejected' if same else 'REJECTED, as it must be'}"
    )
    assert not same and min(p) < 1e-6, "the test has no power: doubled noise was not rejected"


# ------------------------------------------------------------------------------------------ the divergences


@pytest.mark.parametrize("q, epsilon, C", [(4.0, 1.0, 0.64), (4.0, 1.0, 1.0), (10.0, 1.0, 0.2), (4.0, 0.5, 1.0)])
def test_row_bound_above_one_is_calibrated_with_q_not_q_squared(q, epsilon, C):
    """Pinned divergence 1: with data_norm = q > 1 diffprivlib's Jacobian term uses q (dpstack: q²)."""
    X, y = oracle.oracle_data()
    n = len(y)
    _, seen = oracle.fit_observed(X * q, y, 2, epsilon=epsilon, C=C, data_norm=q, fit_intercept=False)
    with_q = model.calibration(epsilon, C, q, n)
    with_q2 = objective_perturbation_calibration(epsilon, n, 1.0 / (C * n), q)
    print(
        f"\n  q={q} ε={epsilon} C={C}: diffprivlib ε' = {seen['epsilon_noise']:.6f}, Δ = {seen['delta']:.4g} "
        f"(with q: {with_q['epsilon_noise']:.6f}, {with_q['delta']:.4g}; dpstack, with q²: "
        f"{with_q2.epsilon_noise:.6f}, {with_q2.delta:.4g})"
    )
    assert seen["epsilon_noise"] == pytest.approx(with_q["epsilon_noise"], rel=1e-12)
    assert seen["delta"] == pytest.approx(with_q["delta"], rel=1e-12, abs=1e-14)
    assert seen["noise_scale"] == pytest.approx(with_q["noise_scale"], rel=1e-12)
    assert (seen["epsilon_noise"], seen["delta"]) != pytest.approx((with_q2.epsilon_noise, with_q2.delta), rel=1e-3)


def test_intercept_is_not_regularised():
    """Pinned divergence 2: with fit_intercept=True (the default) the intercept is outside the penalty.

    The noise read back from diffprivlib's output is the noise it drew only when the intercept is left
    unpenalised (and the row bound is √(q² + 1)); with a penalised intercept it is not."""
    X, y = oracle.oracle_data()
    n = len(y)
    eps, C = 1.0, 1.0
    theta, seen = oracle.fit_observed(X, y, 3, epsilon=eps, C=C, data_norm=1.0, fit_intercept=True, **TIGHT)
    assert seen["epsilon_noise"] == pytest.approx(model.calibration(eps, C, 1.0, n, True)["epsilon_noise"], rel=1e-12)
    unpenalised = model.noise_from_release(X, y, theta, eps, C, 1.0, fit_intercept=True)
    penalised = unpenalised - theta[-1] / C * np.eye(len(theta))[-1]  # b with the intercept in the penalty
    norm = np.linalg.norm(seen["b"])
    err_un, err_pen = np.abs(unpenalised - seen["b"]).max() / norm, np.abs(penalised - seen["b"]).max() / norm
    print(
        f"\n  intercept_ = {theta[-1]:.4g}: noise read back / drawn, max relative error {err_un:.1e} with the "
        f"intercept unpenalised, {err_pen:.1e} with it penalised"
    )
    assert err_un < 1e-6
    assert err_pen > 1e-3


def test_intercept_release_without_a_minimiser():
    """With the intercept unpenalised the perturbed objective has no minimiser when the intercept's noise
    b₀ is outside (−n₀, n₁); diffprivlib then returns an intercept of order 10¹⁶ without a warning."""
    D, _ = model.intercept_pair()
    theta, seen = oracle.fit_observed(*D, 3_000_000, epsilon=1.0, C=1.0, data_norm=1.0, fit_intercept=True)
    n1 = int(D[1].sum())
    n0 = len(D[1]) - n1
    print(f"\n  b₀ = {seen['b'][-1]:.4g} outside ({-n0}, {n1}); released intercept_ = {theta[-1]:.3g}")
    assert not (-n0 < seen["b"][-1] < n1)
    assert abs(theta[-1]) > 1e10


@pytest.mark.parametrize(
    "q, fit_intercept, C",
    [(1.0, False, 1.0), (4.0, False, 0.64), (4.0, False, 5.0), (1.0, True, 1.0), (4.0, True, 5.0)],
)
def test_the_books_model_reads_back_diffprivlibs_noise(q, fit_intercept, C):
    """The model the book's exact losses use (dpstack.companion.chapters.diffprivlib_lr) is diffprivlib's
    mechanism: its calibration is the one diffprivlib draws with, and the noise it reads back from
    diffprivlib's output is the noise diffprivlib drew (clipped rows included)."""
    X, y = oracle.oracle_data()
    X = X * q
    eps = 1.0
    theta, seen = oracle.fit_observed(X, y, 4, epsilon=eps, C=C, data_norm=q, fit_intercept=fit_intercept, **TIGHT)
    cal = model.calibration(eps, C, q, len(y), fit_intercept)
    assert seen["noise_scale"] == pytest.approx(cal["noise_scale"], rel=1e-12)
    assert seen["delta"] == pytest.approx(cal["delta"], rel=1e-12, abs=1e-14)
    read = model.noise_from_release(X, y, theta, eps, C, q, fit_intercept)
    err = np.abs(read - seen["b"]).max() / np.linalg.norm(seen["b"])
    print(f"\n  q={q} intercept={fit_intercept} C={C} ({cal['branch']}): max relative error {err:.1e}")
    assert err < 1e-6


def test_the_violations_at_diffprivlibs_own_outputs():
    """The exact loss exceeds ε at outputs diffprivlib can release (computed with the checked model)."""
    D, Dp, w = model.row_bound_pair(4.0)
    loss = model.privacy_loss(D, Dp, w, 1.0, 0.64, 4.0)
    D2, Dp2 = model.intercept_pair()
    loss2 = model.privacy_loss(D2, Dp2, np.array([72.0, -72.0]), 1.0, 1.0, 1.0, fit_intercept=True)
    print(f"\n  exact loss, row bound 4 at w=(0, 10): {loss:.4f}; intercept at (72, −72): {loss2:.2f} (claimed ε = 1)")
    assert loss > 1.0 and loss2 > 1.0
    assert math.isclose(loss, 1.2748952723, rel_tol=1e-9)
