"""audit_estimator's family-wise error control, and configurations it used to crash on.

Every p-value the audit computes for one estimator joins one weighted Holm procedure at level
``ALPHA``; the configurations the reviewer of issue 39 saw crash (sparse X, a tuner over a transfer
model, a level whose part holds one class) are audited or refused with a message naming why.
"""

import numpy as np
import pytest
from sklearn.base import clone

from dpstack import (
    PrivateLogisticRegression,
    PrivateParameterTuning,
    PrivateStackingClassifier,
    PrivateTransferStacking,
    SimComb,
)
from dpstack.audit import audit_data, audit_estimator, worst_case_neighbours
from dpstack.audit.checks import ALPHA, TEST_COLUMNS, holm, law_tests, ratio_pvalue


# -- Holm ---------------------------------------------------------------------------------------------------
def test_holm_adjusts_step_down_and_weights_shift_the_family():
    p = [0.01, 0.04, 0.03, 0.005]
    assert np.allclose(holm(p), [0.03, 0.06, 0.06, 0.02])  # (m − j + 1)·p_(j), made monotone
    assert np.allclose(holm(p, [1, 1, 1, 1]), holm(p))
    # half the weight on the first test: its p-value is doubled, not quadrupled
    assert np.allclose(holm(p, [3, 1, 1, 1]), [0.02, 0.06, 0.06, 0.02])
    assert holm([]).size == 0
    with pytest.raises(ValueError, match="weights"):
        holm(p, [1, 0, 1, 1])


def test_holm_controls_the_family_wise_error_under_the_null():
    rng = np.random.default_rng(0)
    rejected = sum(bool((holm(rng.uniform(size=50)) < 0.05).any()) for _ in range(2000))
    assert rejected / 2000 < 0.05 + 3 * np.sqrt(0.05 * 0.95 / 2000)


def test_the_report_lists_every_test_with_its_holm_adjusted_p_value():
    X, y = audit_data()
    est = PrivateStackingClassifier(epsilon=1.0, n_groups=2, lam=0.05, classes=[0, 1])
    rep = audit_estimator(est, X, y, checks=["streams", "law", "composition"])
    assert rep.alpha == ALPHA and list(rep.tests.columns) == TEST_COLUMNS
    assert set(rep.tests["check"]) == {"streams", "law"}  # composition is exact: no p-value
    assert (rep.tests["adjusted p"] >= rep.tests["p"] - 1e-15).all()
    law = rep.checks.set_index("check").loc["law"]
    assert law["threshold"] == ALPHA
    assert law["statistic"] == pytest.approx(rep.tests[rep.tests["check"] == "law"]["adjusted p"].min())


# -- the law test's p-values ---------------------------------------------------------------------------------
def _gamma_noise(rng, m, d, scale=1.0, shape=None):
    u = rng.standard_normal((m, d))
    return u / np.linalg.norm(u, axis=1, keepdims=True) * rng.gamma(d if shape is None else shape, scale, (m, 1))


def test_law_tests_have_their_size_and_see_scale_shape_direction_and_precision_errors():
    rng = np.random.default_rng(1)
    blocks = {f"b{k}": _gamma_noise(rng, 300, 3) for k in range(4)}
    tests, _ = law_tests(blocks, dict.fromkeys(blocks, 1.0))
    assert min(p for _, p in tests) * len(tests) > 1e-3  # the claimed law passes
    labels = [label for label, _ in tests]
    assert sum("scale" in t for t in labels) == 5  # one per block and one pooled over the blocks
    assert sum("shape" in t for t in labels) == 2  # pooled per d: KS, likelihood ratio

    def worst(noise, label):
        tests, _ = law_tests({"b": noise}, {"b": 1.0})
        return min(p for t, p in tests if label in t)

    assert worst(_gamma_noise(rng, 300, 3, scale=0.8), "scale") < 1e-6  # noise scaled by 0.8
    # a norm of another law with the claimed mean: Gamma(d + 1) rescaled to mean d
    assert worst(_gamma_noise(rng, 2000, 3, scale=3 / 4, shape=4), "shape") < 1e-6
    laplace = rng.laplace(size=(2000, 3))  # coordinate-wise noise: not uniform in direction
    assert worst(laplace, "direction") < 1e-6
    assert worst(_gamma_noise(rng, 300, 3).astype(np.float32).astype(float), "precision") < 1e-10


def test_the_blackbox_p_value_inverts_the_clopper_pearson_bound():
    from dpstack.audit.statistical import log_ratio_bound

    counts = (90, 100, 5, 100)
    p = ratio_pvalue(counts, 1.0)
    assert 0 < p < 1e-6
    assert float(log_ratio_bound(*counts, p * 1.01)) > 1.0 >= float(log_ratio_bound(*counts, p * 0.99))
    assert ratio_pvalue((50, 100, 50, 100), 1.0) == 1.0


# -- the false positive of issue 39 --------------------------------------------------------------------------
def test_pst_f_with_twenty_one_feature_groups_passes_at_the_seeds_that_failed():
    """Genuine PST-F, K = 20 one-feature groups: the old law test (one KS per block, Bonferroni) failed it at
    audit seeds 0 and 1 (p ≈ 6e-7 on one block's 60 norms); the exact scale test per block and the pooled
    shape test pass it, and the whole audit's tests are one Holm family."""
    X, y = audit_data(n_samples=60, n_features=20, random_state=0)
    est = PrivateStackingClassifier(groups=[[k] for k in range(20)], epsilon=1.0, lam=0.05, classes=[0, 1])
    for seed in (0, 1):
        rep = audit_estimator(est, X, y, random_state=seed)
        assert rep.passed, rep.failures[["check", "detail"]].to_string()


# -- configurations audited or refused by name ---------------------------------------------------------------
def test_sparse_or_ragged_data_is_refused_naming_x():
    import scipy.sparse as sp

    X, y = audit_data()
    est = PrivateLogisticRegression(epsilon=1.0, lam=0.05, classes=[0, 1])
    with pytest.raises(TypeError, match=r"X: a scipy sparse matrix.*toarray"):
        audit_estimator(est, sp.csr_matrix(X), y, checks="function")
    with pytest.raises(ValueError, match="X: cannot be read as a 2-D array"):
        audit_estimator(est, [[1.0, 2.0], [3.0]], [0, 1], checks="function")
    with pytest.raises(ValueError, match="y: must be 1-D"):
        audit_estimator(est, X, y[:-1], checks="function")
    with pytest.raises(ValueError, match="X: NaN"):
        audit_estimator(est, np.where(np.eye(*X.shape, dtype=bool), np.nan, X), y, checks="function")


@pytest.mark.parametrize("transfer", ["PPTL-FS", "SimComb"])
def test_a_tuner_over_a_transfer_model_is_audited(transfer):
    X, y = audit_data()
    Xs, ys = audit_data(n_samples=80, random_state=1)
    common = dict(epsilon_source=1.0, epsilon_target=1.0, lam_source=0.05, lam=0.05, classes=[0, 1])
    model = PrivateTransferStacking(n_groups=2, **common) if transfer == "PPTL-FS" else SimComb(**common)
    tuner = PrivateParameterTuning(clone(model).fit_source(Xs, ys), {"lam": [0.01, 0.1]}, epsilon_select=1.0)
    rep = audit_estimator(tuner, X, y)
    assert rep.passed, rep.failures[["check", "detail"]].to_string()
    verdicts = rep.checks.set_index("check")["verdict"]
    assert verdicts[["law", "exact", "tuning"]].eq("pass").all()
    with pytest.raises(ValueError, match="needs its source fitted first"):
        audit_estimator(PrivateParameterTuning(model, {"lam": [0.01, 0.1]}), X, y, checks="function")
    with pytest.raises(ValueError, match="X_source"):
        audit_estimator(tuner, X, y, checks="function", X_source=Xs, y_source=ys)


def test_a_tuner_over_a_transfer_model_with_unequal_budgets_is_held_to_each_domains_claim():
    """ε_s = 4, ε_t = 1: the shared source release spends ε_s on the source (once), the candidates and the
    selection ε_t on the target; the claim is compared domain by domain, not the source's ε with the target's."""
    X, y = audit_data()
    Xs, ys = audit_data(n_samples=80, random_state=1)
    model = SimComb(epsilon_source=4.0, epsilon_target=1.0, lam_source=0.05, lam=0.05, classes=[0, 1])
    tuner = PrivateParameterTuning(model.fit_source(Xs, ys), {"eta": [0.2, 0.8]}, epsilon_select=1.0)
    row = audit_estimator(tuner, X, y, checks="composition").checks.iloc[0]
    assert row["verdict"] == "pass" and row["statistic"] == 1.0, row["detail"]
    assert "source: ledger ε 4 vs claimed 4" in row["detail"] and "target: ledger ε 1 vs claimed 1" in row["detail"]


def test_a_level_whose_part_holds_one_class_is_audited():
    X, y = audit_data()
    y = np.zeros_like(y)
    y[:3] = 1  # PST-S with 4 sample sets: most sets hold one class
    est = PrivateStackingClassifier(partition="samples", n_groups=4, epsilon=1.0, lam=0.05, classes=[0, 1])
    row = audit_estimator(est, X, y, checks="exact").checks.iloc[0]
    assert row["verdict"] == "pass", row["detail"]
    pairs = worst_case_neighbours(X[:5], np.zeros(5), classes=[-1, 0])
    assert pairs["label_flip"][3][0] == -1
    with pytest.raises(ValueError, match="pass classes="):
        worst_case_neighbours(X[:5], np.zeros(5))


# -- the blind spots of issue 39 and the power profiles ------------------------------------------------------
def test_canary_data_is_public_and_at_the_extremes_of_the_bound():
    from dpstack.audit.checks import canary_data

    X, y = canary_data(40, 5, bound=2.0, kind="tiny", random_state=0)
    assert np.allclose(np.linalg.norm(X, axis=1), 0.04) and set(y) == {0, 1}
    X, _ = canary_data(40, 5, bound=2.0, kind="corners", random_state=0)
    assert np.all(np.abs(X) == 40.0)
    with pytest.raises(ValueError, match="kind"):
        canary_data(4, 2, kind="nonsense")


def test_scaled_noise_is_the_estimator_with_its_noise_scaled():
    from dpstack.audit.mutants import scaled_noise

    X, y = audit_data()
    est = PrivateLogisticRegression(epsilon=1.0, lam=0.05, classes=[0, 1])
    half = scaled_noise(est, 0.5)
    assert isinstance(half, PrivateLogisticRegression) and half.get_params() == est.get_params()
    assert type(clone(half)) is type(half) and type(scaled_noise(est, 0.5)) is type(half)
    a = clone(est).set_params(random_state=3, diagnostics=True).fit(X, y)
    b = clone(half).set_params(random_state=3, diagnostics=True).fit(X, y)
    assert np.allclose(b.diagnostics_.noise, 0.5 * a.diagnostics_.noise)
    with pytest.raises(ValueError, match="factor"):
        scaled_noise(est, 0.0)


@pytest.mark.parametrize("name", ["PLR", "PST-F"])
def test_the_power_profile_catches_noise_scaled_by_0_8(name):
    """Noise × 0.8 (ε_eff = 1.25 ε) is caught by the "power" profile; the genuine estimator passes it."""
    from dpstack.audit.mutants import scaled_noise
    from dpstack.audit.suite import audit_cases

    est, X, y, fit_params = audit_cases()[name]
    checks = ["law", "canaries"]
    rep = audit_estimator(scaled_noise(est, 0.8), X, y, checks=checks, profile="power", **fit_params)
    assert not rep.passed and "law" in set(rep.failures["check"])
    assert audit_estimator(est, X, y, checks=checks, profile="power", **fit_params).passed


def test_the_blackbox_likelihood_ratio_sees_what_the_learned_distinguishers_miss():
    """Noise × 0.05 (ε_eff ≈ 20 ε): the likelihood ratio under the declared law, on the public worst-case
    canary, rejects the claim (the old black box, learned distinguishers on the user's data, never did)."""
    from dpstack.audit.mutants import scaled_noise

    X, y = audit_data()
    est = PrivateLogisticRegression(epsilon=1.0, lam=0.05, classes=[0, 1])
    rep = audit_estimator(scaled_noise(est, 0.05), X, y, checks="blackbox")
    tests = rep.tests.set_index("test")
    lr = [t for t in tests.index if "label flipped: likelihood ratio under the declared law" in t]
    assert lr and tests.loc[lr[0], "rejected"], tests.to_string()
    assert rep.checks.iloc[0]["verdict"] == "FAIL"
    assert audit_estimator(est, X, y, checks="blackbox").passed


def test_unequal_parties_keeps_the_parties_and_unbalances_their_sizes():
    from dpstack.audit.checks import unequal_parties

    parties = np.repeat(np.arange(7), 4)
    canary = unequal_parties(parties)
    sizes = np.unique(canary, return_counts=True)[1]
    assert sizes.size == 7 and sizes[0] == 16 and sizes[1:].min() >= 1 and sizes.sum() == 28
    assert unequal_parties(np.arange(3)) is None  # one row per party: nothing to make unequal


def test_scale_power_counts_the_audits_that_catch_a_scaled_noise():
    from dpstack.audit.suite import audit_cases, scale_power

    cases = {"PLR": audit_cases()["PLR"]}
    table = scale_power(factors=(0.5,), profile="default", n_repeats=2, cases=cases, checks=["law"])
    row = table.iloc[0]
    assert row["caught"] == 2 and row["runs"] == 2 and row["ε_eff"] == 2.0 and "law 2" in row["caught by"]
