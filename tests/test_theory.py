"""Theorem functions (dpstack.theory): ratios, sample complexities, spends, guarantees."""

import math

import numpy as np
import pytest

from dpstack.accounting import PrivacyLedger
from dpstack.mechanisms import feature_split_calibration
from dpstack.theory import (
    block_sample_complexity,
    domain_guarantees,
    feature_split_spend,
    logistic_loss,
    plr_sample_complexity,
    pptl_printed_spend,
    sample_complexity_ratio,
)


def test_ratio_by_hand_and_uniform_split_is_below_one():
    assert sample_complexity_ratio(100, 5, 0.2, 0.05) == pytest.approx(math.log(400) / math.log(2000))
    for K in (2, 5, 10, 50):
        assert sample_complexity_ratio(100, K, 1.0 / K, 0.01) < 1.0
    # important blocks (q > 1/K) have a smaller ratio, unimportant ones a larger one
    r = sample_complexity_ratio(100, 5, np.array([0.5, 0.2, 0.05]), 0.01)
    assert r[0] < r[1] < 1.0 < r[2]


def test_ratio_is_the_quotient_of_the_dominant_terms():
    d, K, q, delta, eps, eps_g, norm = 100, 5, 0.3, 0.05, 0.5, 0.1, 2.0
    block, _ = block_sample_complexity(d, K, q, norm, eps, eps_g, delta)
    plr, _ = plr_sample_complexity(d, norm, eps, eps_g, delta)
    assert block[1] / plr[1] == pytest.approx(sample_complexity_ratio(d, K, q, delta))


def test_block_bound_reduces_to_proposition_2_for_one_block():  # PST Remark 2
    a = block_sample_complexity(50, 1, 1.0, 3.0, 1.0, 0.05, 0.01)
    b = plr_sample_complexity(50, 3.0, 1.0, 0.05, 0.01)
    np.testing.assert_allclose(a[0], b[0])
    assert a[1] == b[1]


@pytest.mark.parametrize("bad", [dict(delta=0.0), dict(K=0), dict(K=101), dict(q=0.0)])
def test_ratio_rejects_bad_inputs(bad):
    args = dict(d=100, K=5, q=0.2, delta=0.05) | bad
    with pytest.raises(ValueError):
        sample_complexity_ratio(**args)


@pytest.mark.parametrize("n, lam", [(1000, 0.01), (200, 0.05), (50, 0.001), (30, 1e-4)])
def test_pst_calibration_spends_at_most_epsilon(n, lam):
    q = np.array([0.5, 0.3, 0.15, 0.05])
    cal = feature_split_calibration(1.0, n, lam, q)
    total, _, _ = feature_split_spend(cal.epsilon_k, q, n, lam, cal.delta_k)
    assert total <= 1.0 + 1e-12
    if cal.branch == "delta=0":
        assert total == pytest.approx(1.0, abs=1e-12)


def test_pptl_printed_step_6_overspends_by_the_jacobian_cost():
    n, lam, q = 500, 0.01, np.array([0.4, 0.3, 0.2, 0.1])
    spent, excess = pptl_printed_spend(1.0, n, lam, q)
    cost = sum(math.log(1 + qk**2 / (2 * n * lam) + qk**4 / (16 * n**2 * lam**2)) for qk in q)
    assert excess == pytest.approx(cost, rel=1e-12)
    assert spent > 1.0
    # in the ε' ≤ 0 branch both papers set ε_k = ε/2: no overspend
    assert pptl_printed_spend(1.0, 20, 1e-4, q)[1] <= 1e-12


def test_domain_guarantees_do_not_add_source_and_target():
    led = PrivacyLedger()
    led.add("src", "D_s", 2.0)
    led.add("t0", "D_t/D_t0", 0.5)
    led.add("t1", "D_t/D_t1", 0.5)
    assert domain_guarantees(led) == {"source": 2.0, "target": 0.5}
    led.add("again", "D_t/D_t1", 0.25)  # sequential on one part adds up
    assert domain_guarantees(led)["target"] == 0.75


def test_logistic_loss_by_hand():
    X = np.array([[1.0, 0.0], [0.0, 2.0]])
    w = np.array([1.0, -1.0])
    expected = (math.log1p(math.exp(-1)) + math.log1p(math.exp(2))) / 2  # y = (+1, +1): margins 1, -2
    assert logistic_loss(w, X, [1, 1]) == pytest.approx(expected)
    assert logistic_loss(w, X, [0, 0]) == pytest.approx(logistic_loss(-w, X, [1, 1]))


def test_single_record_loss_matches_the_audit_exact_loss():
    # Closed form (other rows zero) against dpstack.audit's general exact computation.
    from dpstack import PrivateLogisticRegression
    from dpstack.audit import exact_privacy_loss
    from dpstack.theory import single_record_privacy_loss

    n, lam = 8, 0.05
    X = np.zeros((n, 2))
    X[0] = [0.6, 0.8]
    X[1] = [0.0, 0.0]
    y = np.array([1, 0] + [1] * (n - 2))
    Xp, yp = X.copy(), y.copy()
    Xp[0] = [-1.0, 0.0]
    yp[0] = 0
    est = PrivateLogisticRegression(epsilon=1.0, lam=lam, random_state=0, classes=[0, 1]).fit(X, y)
    for w in ([0.3, -2.0], [5.0, 1.0], [-0.2, 0.1]):
        closed = single_record_privacy_loss(w, X[0], 1.0, Xp[0], -1.0, n * lam, est.calibration_.noise_scale)
        assert closed == pytest.approx(exact_privacy_loss(est, X, y, Xp, yp, np.array(w)), abs=1e-9)


def test_search_stays_within_the_proven_bound_for_pst_calibration():
    from dpstack.theory import max_single_record_loss

    n_lam = 0.5
    eps_prime = 1.0 - 2 * math.log1p(1 / (4 * n_lam))
    found, arg = max_single_record_loss(n_lam, 2 / eps_prime, n_starts=4, random_state=0)
    assert 0.0 < found <= 1.0
    assert np.linalg.norm(arg["x"]) == pytest.approx(1.0)
