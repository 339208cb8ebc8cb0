"""dpstack against recorded outputs of IBM's diffprivlib (no diffprivlib needed).

diffprivlib 0.6.6's ``LogisticRegression`` implements the same objective perturbation as dpstack's
``PrivateLogisticRegression``. ``tests/data/diffprivlib_oracle.json`` holds what it drew and released for
fixed inputs and seeds (recorded by ``ci/diffprivlib/record.py oracle``; the live comparison is the optional
job ``.ci/diffprivlib``). At row bound 1 without an intercept dpstack must reproduce it: the same
calibration, and fed the same noise vector, the same coefficients. For a row bound above 1 and with an
intercept, diffprivlib's mechanism differs by design (the book's audit chapter shows both differences are
privacy violations): there the book's model of diffprivlib (:mod:`dpstack.companion.chapters.diffprivlib_lr`)
must reproduce the recording instead, since the book's exact losses rest on it.
"""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

import dpstack.linear
from dpstack import PrivateLogisticRegression
from dpstack.companion.chapters import diffprivlib_lr as model
from dpstack.mechanisms import objective_perturbation_calibration

RECORD = json.loads((Path(__file__).parent / "data" / "diffprivlib_oracle.json").read_text())
X0, Y = np.array(RECORD["X"]), np.array(RECORD["y"])
N = len(Y)


def _cases(agree):
    """The recorded cases where dpstack and diffprivlib should agree (row bound 1, no intercept) or not."""
    same = [c for c in RECORD["cases"] if c["data_norm"] == 1.0 and not c["fit_intercept"]]
    return same if agree else [c for c in RECORD["cases"] if c not in same]


def _id(case):
    return f"eps{case['epsilon']}-C{case['C']}-q{case['data_norm']}-{'intercept' if case['fit_intercept'] else 'none'}"


def test_the_record_covers_both_branches_and_both_divergences():
    same, other = _cases(True), _cases(False)
    assert {c["delta"] > 0 for c in same} == {True, False}
    assert any(c["data_norm"] > 1 and not c["fit_intercept"] for c in other)
    assert any(c["fit_intercept"] for c in other)


@pytest.mark.parametrize("case", _cases(True), ids=_id)
def test_calibration_equals_diffprivlibs_at_row_bound_one(case):
    cal = objective_perturbation_calibration(case["epsilon"], N, 1.0 / (case["C"] * N), 1.0)
    assert cal.noise_scale == pytest.approx(case["noise_scale"], rel=1e-12)
    assert cal.epsilon_noise == pytest.approx(case["epsilon_noise"], rel=1e-12)
    assert cal.delta == pytest.approx(case["delta"], rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("case", _cases(True), ids=_id)
def test_same_noise_gives_diffprivlibs_release(case):
    """dpstack's PLR, its noise draw replaced by the vector diffprivlib drew, releases diffprivlib's
    coefficients (the rows beyond the bound clipped alike)."""
    noise = np.array(case["b"])

    def given(dim, scale, random_state=None, size=None):
        assert dim == noise.size and scale == pytest.approx(case["noise_scale"], rel=1e-12)
        return noise.copy()

    with mock.patch.object(dpstack.linear, "isotropic_noise", given):
        est = PrivateLogisticRegression(
            epsilon=case["epsilon"], lam=1.0 / (case["C"] * N), norm_bound=1.0, classes=[0, 1], tol=1e-12
        ).fit(X0, Y)
    theta = np.array(case["theta"])
    assert np.abs(est.w_ - theta).max() <= 1e-7 * max(1.0, np.abs(theta).max())


@pytest.mark.parametrize("case", _cases(False), ids=_id)
def test_the_books_model_of_diffprivlib_reproduces_the_record(case):
    """Where diffprivlib differs (row bound > 1, intercept), the book's model reproduces what it drew
    with, and reads back from its release the noise it drew."""
    eps, C, q, fi = case["epsilon"], case["C"], case["data_norm"], case["fit_intercept"]
    cal = model.calibration(eps, C, q, N, fi)
    assert cal["noise_scale"] == pytest.approx(case["noise_scale"], rel=1e-12)
    assert cal["delta"] == pytest.approx(case["delta"], rel=1e-12, abs=1e-14)
    b = np.array(case["b"])
    read = model.noise_from_release(X0 * q, Y, np.array(case["theta"]), eps, C, q, fi)
    assert np.abs(read - b).max() <= 1e-6 * np.linalg.norm(b)


@pytest.mark.parametrize("case", [c for c in _cases(False) if not c["fit_intercept"]], ids=_id)
def test_diffprivlibs_row_bound_calibration_is_not_dpstacks(case):
    """The first divergence, in the record: above row bound 1 diffprivlib's ε' or Δ is not dpstack's."""
    cal = objective_perturbation_calibration(case["epsilon"], N, 1.0 / (case["C"] * N), case["data_norm"])
    assert (cal.epsilon_noise, cal.delta) != pytest.approx((case["epsilon_noise"], case["delta"]), rel=1e-3)


def test_the_intercept_is_outside_diffprivlibs_penalty():
    """The second divergence, in the record: the noise read back matches only with the intercept unpenalised."""
    (case,) = [c for c in _cases(False) if c["fit_intercept"] and c["data_norm"] == 1.0]
    theta, b = np.array(case["theta"]), np.array(case["b"])
    read = model.noise_from_release(X0, Y, theta, case["epsilon"], case["C"], 1.0, True)
    penalised = read - theta[-1] / case["C"] * np.eye(theta.size)[-1]
    assert np.abs(read - b).max() <= 1e-6 * np.linalg.norm(b)
    assert np.abs(penalised - b).max() >= 1e-3 * np.linalg.norm(b)


def _loss_mpmath(D, Dp, theta, epsilon, C, q, fit_intercept, digits=50):
    """The same privacy loss, written out independently in mpmath (50 digits)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = digits
    cal = model.calibration(epsilon, C, q, len(D[1]), fit_intercept)
    th = [mp.mpf(float(t)) for t in theta]
    d = len(th)

    def read_back(X, y):
        Z = [list(map(mp.mpf, row)) + ([mp.mpf(1)] if fit_intercept else []) for row in np.asarray(X, float).tolist()]
        b, A = [mp.mpf(0)] * d, mp.matrix(d, d)
        for z, label in zip(Z, y):
            m = mp.fsum(zk * tk for zk, tk in zip(z, th))
            s = 1 / (1 + mp.exp(-m))
            for k in range(d):
                b[k] -= (s - int(label)) * z[k]
                for j in range(d):
                    A[k, j] += s * (1 - s) * z[k] * z[j]
        for k in range(d):
            reg = (0 if fit_intercept and k == d - 1 else 1 / mp.mpf(C)) + len(y) * mp.mpf(cal["delta"])
            b[k] -= reg * th[k]
            A[k, k] += reg
        return mp.sqrt(mp.fsum(v * v for v in b)), mp.log(mp.det(A))

    (nb, ldA), (nbp, ldAp) = read_back(*D), read_back(*Dp)
    return float((nbp - nb) / mp.mpf(cal["noise_scale"]) + ldA - ldAp)


@pytest.mark.parametrize(
    "which, epsilon, C, q, fit_intercept, theta",
    [
        ("row bound", 1.0, 0.64, 4.0, False, (0.0, 10.0)),
        ("row bound", 0.5, 1.0, 4.0, False, (0.0, 10.0)),
        ("row bound", 1.0, 1.0, 1.0, False, (0.3, -0.7)),
        ("intercept", 1.0, 1.0, 1.0, True, (10.0, -10.0)),
        ("intercept", 1.0, 1.0, 1.0, True, (72.0, -72.0)),
    ],
)
def test_the_books_exact_loss_equals_an_independent_50_digit_computation(which, epsilon, C, q, fit_intercept, theta):
    if which == "row bound":
        D, Dp, _ = model.row_bound_pair(q)
    else:
        D, Dp = model.intercept_pair()
    loss = model.privacy_loss(D, Dp, np.array(theta), epsilon, C, q, fit_intercept)
    assert loss == pytest.approx(_loss_mpmath(D, Dp, theta, epsilon, C, q, fit_intercept), rel=1e-9, abs=1e-12)


def test_the_suprema():
    """The closed-form suprema: diffprivlib's exceeds ε at q = 4 and tends to log(1 + q(e^{ε/2} − 1)) at the
    worst C; at q = 1, and for dpstack at q = 4, they stay below ε."""
    c_star, limit = model.worst_c_limit(1.0, 4.0)
    near = model.supremum_without_intercept(1.0, c_star * (1 - 1e-9), 4.0)[0]
    assert near == pytest.approx(limit, abs=1e-6) and limit > 1.0
    grid = np.exp(np.linspace(np.log(1e-3), np.log(1e3), 200))
    assert max(model.supremum_without_intercept(1.0, C, 1.0)[0] for C in grid) < 1.0
    assert max(model.dpstack_supremum(1.0, C, 4.0)[0] for C in grid) < 1.0
    assert model.supremum_without_intercept(1.0, 1.0, 4.0)[0] > 1.0
