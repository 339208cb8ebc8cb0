"""Tests of dpstack.audit: the exact privacy loss, the statistical bound, and the mutants it must catch.

Every test uses fixed seeds; nothing here is timed.
"""

import numpy as np
import pytest
from scipy import stats

from dpstack import FeatureSplitLogisticRegression, PrivateLogisticRegression
from dpstack.audit import (
    adversarial_case,
    audit_level,
    audit_mechanisms,
    audit_mutants,
    clopper_pearson,
    composition_checks,
    epsilon_lower_bound,
    epsilon_lower_bound_from_scores,
    exact_privacy_loss,
    max_privacy_loss,
    mutants,
    output_perturbation_audit,
    party_neighbours,
    sample_outputs,
    worst_case_neighbours,
)
from dpstack.audit.exact import noise_from_output
from dpstack.solvers import logistic_objective

GROUPS = [[0, 1], [2], [3, 4]]
Q = [0.6, 0.3, 0.1]


def _data(n=60, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) / np.sqrt(p)
    y = (X[:, 0] + 0.5 * X[:, -1] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _random_neighbour(X, y, rng):
    Xp, yp = X.copy(), y.copy()
    i = rng.integers(X.shape[0])
    Xp[i] = rng.normal(size=X.shape[1]) * rng.uniform(0.1, 3.0)
    yp[i] = rng.integers(2)
    return Xp, yp


# -- the mechanisms under test, in both branches -------------------------------------------------
# n = 60: λ = 0.05 gives ε' > 0 (Δ = 0); λ = 0.002 gives ε' ≤ 0 (Δ > 0), for PLR and PLR-FS.
PLR_CASES = {
    "plr-delta0": dict(epsilon=1.0, lam=0.05),
    "plr-delta>0": dict(epsilon=1.0, lam=0.002),
    "plr-intercept-w0-delta0": dict(epsilon=0.5, lam=0.05, fit_intercept=True, w0=np.full(6, 0.4)),
    "plr-intercept-w0-delta>0": dict(epsilon=2.0, lam=0.0005, fit_intercept=True, w0=np.full(6, -0.3)),
}
FS_CASES = {
    "fs-delta0": dict(epsilon=1.0, groups=GROUPS, importance=Q, lam=0.05),
    "fs-delta>0": dict(epsilon=1.0, groups=GROUPS, importance=Q, lam=[0.002, 0.001, 0.05]),
    "fs-w0-delta0": dict(epsilon=2.0, groups=GROUPS, importance=Q, lam=[0.05, 0.02, 0.01], w0=np.full(5, 0.2)),
}


def _fitted(kind, params, X, y, seed=0):
    cls = FeatureSplitLogisticRegression if kind.startswith("fs") else PrivateLogisticRegression
    return cls(random_state=seed, **params).fit(X, y)


def test_branches_are_the_intended_ones():
    X, y = _data()
    for name, params in {**PLR_CASES, **FS_CASES}.items():
        est = _fitted(name, params, X, y)
        assert est.calibration_.branch == ("delta>0" if name.endswith("delta>0") else "delta=0"), name


# -- correctness of the loss itself ----------------------------------------------------------------
@pytest.mark.parametrize("name", ["plr-delta0", "plr-intercept-w0-delta>0"])
def test_noise_read_back_from_the_output_is_the_noise_drawn(name):
    X, y = _data()
    est = _fitted(name, {**PLR_CASES[name], "diagnostics": True}, X, y, seed=3)
    Z = est._design_matrix(X)
    w0 = np.zeros(Z.shape[1]) if est.w0 is None else est.w0
    b, _ = noise_from_output(Z, np.where(y == 1, 1.0, -1.0), est.w_[None], est.lam, est.delta_, w0)
    assert np.linalg.norm(b) == pytest.approx(est.diagnostics_.noise_norm, rel=1e-6)


def _reference_loss(est, blocks_D, blocks_Dp, y, yp, w):
    """Independent computation: gradient from the solver, full log-determinants."""
    total = 0.0
    for (Z, lam, delta, w0, scale, cols), (Zp, *_rest) in zip(blocks_D, blocks_Dp):
        wk = w[cols]
        terms = []
        for M, lab in ((Z, y), (Zp, yp)):
            s = np.where(lab == 1, 1.0, -1.0)
            n = M.shape[0]
            _, grad = logistic_objective(wk, M, s, lam, None, delta, w0)
            b = -n * grad
            p = 1 / (1 + np.exp(-s * (M @ wk)))
            H = (M.T * (p * (1 - p))) @ M + n * (lam + delta) * np.eye(M.shape[1])
            terms.append(-np.linalg.norm(b) / scale + np.linalg.slogdet(H)[1])
        total += terms[0] - terms[1]
    return total


def test_exact_loss_matches_an_independent_computation():
    X, y = _data()
    rng = np.random.default_rng(7)
    Xp, yp = X.copy(), y.copy()
    Xp[[3, 10]] = rng.normal(size=(2, 5))
    yp[3] = 1 - yp[3]
    # PLR with an intercept and w0, Δ > 0 branch
    est = _fitted("plr", PLR_CASES["plr-intercept-w0-delta>0"], X, y)
    cal = est.calibration_

    def blk(M):
        return [(est._design_matrix(M), est.lam, cal.delta, est.w0, cal.noise_scale, np.arange(6))]

    W = rng.normal(size=(5, 6)) * 3
    got = exact_privacy_loss(est, X, y, Xp, yp, W)
    want = [_reference_loss(est, blk(X), blk(Xp), y, yp, w) for w in W]
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    # PLR-FS with unequal q_k and per-block λ_k, Δ > 0 branch
    fs = _fitted("fs", FS_CASES["fs-delta>0"], X, y)
    cal = fs.calibration_
    lam = np.asarray(fs.lam)

    def blk(M):
        return [
            (fs.block_design(M, k), lam[k], cal.delta_k[k], np.zeros(len(g)), cal.noise_scale_k[k], np.asarray(g))
            for k, g in enumerate(GROUPS)
        ]

    W = rng.normal(size=(5, 5)) * 3
    got = exact_privacy_loss(fs, X, y, Xp, yp, W)
    want = [_reference_loss(fs, blk(X), blk(Xp), y, yp, w) for w in W]
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


def test_one_dimensional_output_distribution_is_the_change_of_variables():
    # In 1-D, b(w) is decreasing and b is Laplace(0, scale): P(w ≤ t) = P(b ≥ b(t)).
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(40, 1))
    y = (X[:, 0] > 0).astype(int)
    est = PrivateLogisticRegression(epsilon=1.0, lam=0.1, random_state=0).fit(X, y)
    W = sample_outputs(est, X, y, n_draws=2000, random_state=2)
    Z = est._design_matrix(X)
    grid = np.quantile(W[:, 0], [0.1, 0.3, 0.5, 0.7, 0.9])[:, None]
    b, _ = noise_from_output(Z, np.where(y == 1, 1.0, -1.0), grid, est.lam, 0.0, np.zeros(1))
    cdf = stats.laplace.sf(b[:, 0], scale=est.calibration_.noise_scale)
    np.testing.assert_allclose(cdf, [0.1, 0.3, 0.5, 0.7, 0.9], atol=0.04)


# -- the guarantee holds ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(PLR_CASES) + list(FS_CASES))
def test_max_loss_within_epsilon_on_worst_case_and_random_neighbours(name):
    X, y = _data()
    params = {**PLR_CASES, **FS_CASES}[name]
    is_fs = name.startswith("fs")
    pairs = worst_case_neighbours(X, y, index=0, groups=GROUPS if is_fs else None, importance=Q if is_fs else None)
    rng = np.random.default_rng(11)
    XD, yD = pairs["label_flip"][:2]
    for _ in range(3):
        pairs[f"random{_}"] = (XD, yD) + _random_neighbour(XD, yD, rng)
    est = _fitted(name, params, XD, yD)
    W = sample_outputs(est, XD, yD, n_draws=300, random_state=5)
    # outputs from the neighbour's distribution and far-out w's too: pure DP bounds every w
    W = np.vstack([W, sample_outputs(est, pairs["orthogonal"][2], yD, n_draws=100, random_state=6), 3 * W[:50]])
    worst = max(max_privacy_loss(est, *pair, W) for pair in pairs.values())
    assert 0.05 * est.epsilon < worst <= est.epsilon


# -- a broken calibration is caught ------------------------------------------------------------------
class _TenfoldEpsilonPLR(PrivateLogisticRegression):
    """Mutant: claims ε but draws noise (and Δ) calibrated for 10ε."""

    def fit(self, X, y):
        claimed = self.epsilon
        self.epsilon = 10 * claimed
        try:
            return super().fit(X, y)
        finally:
            self.epsilon = claimed


@pytest.mark.parametrize("name", ["plr-delta0", "plr-delta>0"])
def test_exact_loss_catches_noise_calibrated_for_ten_epsilon(name):
    X, y = _data()
    XD, yD, XP, yP = worst_case_neighbours(X, y)["orthogonal"]
    est = _TenfoldEpsilonPLR(random_state=0, **PLR_CASES[name]).fit(XD, yD)
    W = sample_outputs(est, XD, yD, n_draws=300, random_state=5)
    assert max_privacy_loss(est, XD, yD, XP, yP, W) > 2 * est.epsilon


def test_block_with_zero_importance_adds_no_loss():
    X, y = _data()
    Xp, yp = X.copy(), y.copy()
    Xp[0, 3:] = [5.0, -5.0]  # the change lies entirely in the q = 0 block
    fs = FeatureSplitLogisticRegression(
        epsilon=1.0, groups=GROUPS, importance=[0.7, 0.3, 0.0], lam=0.05, random_state=0
    ).fit(X, y)
    W = sample_outputs(fs, X, y, n_draws=50, random_state=0)
    np.testing.assert_allclose(exact_privacy_loss(fs, X, y, Xp, yp, W), 0.0, atol=1e-12)


# -- statistical lower bound ----------------------------------------------------------------------------


def test_clopper_pearson_matches_the_closed_forms():
    # k = 0: upper = 1 − α^(1/n); k = n: lower = α^(1/n)
    lo, hi = clopper_pearson([0, 20], [20, 20], 0.05)
    assert hi[0] == pytest.approx(1 - 0.05 ** (1 / 20))
    assert lo[1] == pytest.approx(0.05 ** (1 / 20))
    assert lo[0] == 0.0 and hi[1] == 1.0


def test_lower_bound_on_a_known_laplace_mechanism():
    # s = μ + Laplace(1/ε): a threshold test on μ ∈ {0, 1} is exactly ε-DP, with ratio e^ε in the tails
    rng = np.random.default_rng(3)
    eps = 1.0
    s0 = rng.laplace(0.0, 1 / eps, size=20000)
    s1 = rng.laplace(1.0, 1 / eps, size=20000)
    res = epsilon_lower_bound_from_scores(s0, s1, confidence=0.95, random_state=0)
    assert 0.5 * eps < res.epsilon_lo <= eps
    again = epsilon_lower_bound_from_scores(s0, s1, confidence=0.95, random_state=0)
    assert again == res
    # identical mechanisms: nothing to find
    assert epsilon_lower_bound_from_scores(s0[:10000], s0[10000:], random_state=0).epsilon_lo < 0.1


def test_lower_bound_from_refits_and_from_direct_draws():
    X, y = _data(n=40, p=2)
    XD, yD, XP, yP = worst_case_neighbours(X, y)["label_flip"]
    est = PrivateLogisticRegression(epsilon=8.0, lam=0.1)
    refit = epsilon_lower_bound(est, XD, yD, XP, yP, n_runs=150, random_state=1, method="refit")
    direct = epsilon_lower_bound(est, XD, yD, XP, yP, n_runs=150, random_state=1, method="direct")
    # the realised loss of a label flip is about ε'/2 here: both find a clear signal, neither exceeds ε
    assert 0.5 < refit.epsilon_lo <= 8.0 and 0.5 < direct.epsilon_lo <= 8.0


# -- output perturbation (one party) ----------------------------------------------------------------------
@pytest.mark.parametrize("method", ["vote", "soft"])
def test_party_neighbours_reproduce_the_multiparty_worst_case_construction(method):
    # The estimator's own fit on party_neighbours gives the minimiser distance that
    # dpstack.multiparty.sensitivity_by_construction computes from the proofs' construction.
    from dpstack.multiparty import MultipartyPrivateClassifier, sensitivity_by_construction

    D, Dp = party_neighbours(n_parties=7)
    res = output_perturbation_audit(
        MultipartyPrivateClassifier(method, epsilon=1.0, lam=1.0), D, Dp, n_runs=10, random_state=0
    )
    ref = sensitivity_by_construction(method, n_parties=7, lam=1.0)
    assert res["measured_distance"] == pytest.approx(ref["measured"], rel=1e-6)
    assert res["claimed_sensitivity"] == pytest.approx(ref["claimed"])


# -- composition of the stacked mechanisms -----------------------------------------------------------------
def test_stacking_parts_are_disjoint_and_data_independent():
    from dpstack import PrivateStackingClassifier

    X, y = _data(n=80, p=4)
    for partition in ("samples", "features"):
        res = composition_checks(PrivateStackingClassifier(partition=partition, n_groups=2, classes=[0, 1]), X, y)
        assert res["disjoint"] and res["data_independent_split"] and res["ledger_total"] == 1.0


def test_composition_check_catches_a_data_dependent_split():
    from dpstack import PrivateStackingClassifier

    class FeatureSortedSplit(PrivateStackingClassifier):
        """Test double: alternates the rows, sorted by their first feature, between D_l and D_h."""

        def _split(self, n, rng):
            order = np.argsort(self._first_feature, kind="stable")
            return np.sort(order[0::2]), np.sort(order[1::2])

        def fit(self, X, y):
            self._first_feature = np.asarray(X)[:, 0]
            return super().fit(X, y)

    X, y = _data(n=80, p=4)
    res = composition_checks(FeatureSortedSplit(partition="features", n_groups=2), X, y)
    assert res["disjoint"] and not res["data_independent_split"]


# -- every mutant is caught ----------------------------------------------------------------------------------
def _caught(res, eps):
    return res["exact_max_loss"] > eps or res["epsilon_lo"] > eps


@pytest.mark.parametrize(
    "mutant,params",
    [
        (mutants.TenfoldEpsilonPLR, dict(lam=0.05)),
        (mutants.MaxNormScaledPLR, dict(lam=0.05)),
        (mutants.SkippedDeltaPLR, dict(lam=0.002)),
    ],
)
def test_plr_mutants_are_caught_and_the_real_plr_is_not(mutant, params):
    X, y = _data()
    broken = mutant(epsilon=1.0, random_state=0, **params).fit(X, y)
    real = PrivateLogisticRegression(epsilon=1.0, random_state=0, **params).fit(X, y)
    assert _caught(audit_level(broken, X, y, n_draws=100, n_runs=400, random_state=0), 1.0)
    assert not _caught(audit_level(real, X, y, n_draws=100, n_runs=400, random_state=0), 1.0)


def test_pptl_epsilon_k_mutant_is_caught_by_the_exact_loss():
    from scipy.optimize import brentq

    from dpstack.mechanisms import feature_split_calibration

    q = np.array([0.7, 0.3])
    groups = [[0, 1], [2, 3]]
    n = 40
    lam = brentq(lambda lam_: feature_split_calibration(1.0, n, lam_, q).epsilon_prime - 0.1, 1e-5, 10.0)
    broken = adversarial_case(
        mutants.PPTLEpsilonFeatureSplit(epsilon=1.0, groups=groups, importance=q, lam=lam), n_samples=n
    )
    real = adversarial_case(
        FeatureSplitLogisticRegression(epsilon=1.0, groups=groups, importance=q, lam=lam), n_samples=n
    )
    assert broken.estimator.calibration_.branch == "delta=0"
    assert np.all(broken.estimator.calibration_.epsilon_k == 1.0)
    assert broken.loss_at_w_star > 1.1
    assert 0.3 < real.max_loss(n_draws=200) <= 1.0


# -- the book's table --------------------------------------------------------------------------------------
@pytest.mark.slow
def test_audit_table_every_mechanism_passes_and_every_mutant_is_caught():
    table = audit_mechanisms(profile="smoke", random_state=0)
    assert len(table) == 16 and (table["verdict"] == "pass").all(), table[["mechanism", "verdict"]]
    assert (table["exact max loss"] <= table["claimed ε"]).all()
    assert (table["exact max loss"] > 0.3 * table["claimed ε"]).all()  # the checks have teeth
    caught = audit_mutants(profile="smoke", random_state=0)
    assert caught["verdict"].str.startswith("caught").all(), caught[["mechanism", "verdict"]]


@pytest.mark.parametrize("lam,branch", [([0.05, 0.02, 0.1], "delta=0"), ([0.002, 0.001, 0.05], "delta>0")])
def test_lemma8_bounds_add_up_to_epsilon_and_bound_each_block(lam, branch):
    from dpstack.audit import block_loss_table

    fs = FeatureSplitLogisticRegression(epsilon=1.0, groups=[[0, 1, 2], [3, 4], [5, 6]], importance=Q, lam=lam)
    case = adversarial_case(fs, n_samples=100)
    assert case.estimator.calibration_.branch == branch
    table = block_loss_table(case)
    blocks, total = table.iloc[:-1], table.iloc[-1]
    bound_total = total["noise bound"] + total["Jacobian bound"]
    # Δ = 0: exactly ε; Δ > 0: ε with block 3's Δ clamped at 0, so a little less
    assert bound_total == pytest.approx(1.0) if branch == "delta=0" else 0.8 < bound_total < 1.0
    assert (blocks["noise part at w*"] <= blocks["noise bound"] + 1e-12).all()
    assert (blocks["Jacobian part at w*"] <= blocks["Jacobian bound"] + 1e-12).all()
    realised = total["noise part at w*"] + total["Jacobian part at w*"]
    assert realised == pytest.approx(case.loss_at_w_star) and 0.5 < realised <= 1.0


def test_a_record_reaches_only_the_level_of_its_part():
    from dpstack import PrivateStackingClassifier
    from dpstack.audit import changed_levels

    X, y = _data(n=90, p=4)
    pst = PrivateStackingClassifier(partition="samples", n_groups=3, lam=0.05, random_state=4)
    from dpstack.audit import split_of

    fitted = pst.fit(X, y)
    in_s2 = int(split_of(fitted, X, y)[2][1][0])
    table = changed_levels(pst, X, y, in_s2, random_state=4)
    assert table["trained on the changed record"].tolist() == [False, True, False, False]
    # S_1 and S_3 are bit-identical; S_2 and (through its input) the high level change
    assert table["release changed"].tolist() == [False, True, False, True]


# -- the law of the noise, read back from real fits through the public fit ----------------------------------
from dpstack.audit import law_data, noise_law_test, recover_noise  # noqa: E402
from dpstack.audit.report import composition_noise_identity  # noqa: E402

LAW_FITS = 200  # real fits per case in the unit suite (the book's quick profile uses 1,000)


def _law_data():
    return law_data(n_samples=30, n_features=5, random_state=0)


def test_noise_read_back_from_the_release_is_the_noise_drawn():
    X, y = _law_data()
    for est in (
        PrivateLogisticRegression(
            epsilon=1.0, lam=0.002, fit_intercept=True, classes=[0, 1], random_state=3, diagnostics=True
        ),
        FeatureSplitLogisticRegression(
            epsilon=1.0, groups=GROUPS, importance=Q, lam=0.05, classes=[0, 1], random_state=3, diagnostics=True
        ),
    ):
        fitted = est.fit(X, y)
        drawn = fitted.diagnostics_.get("noises", [fitted.diagnostics_.get("noise")])
        read = [blk.noise for blk in recover_noise(fitted, X, y)]
        assert len(read) == len(drawn)
        for a, b in zip(read, drawn):
            np.testing.assert_allclose(a, b, atol=1e-6 * np.linalg.norm(b))


@pytest.mark.parametrize(
    "template",
    [
        PrivateLogisticRegression(epsilon=1.0, lam=0.05, classes=[0, 1]),
        PrivateLogisticRegression(epsilon=1.0, lam=0.002, fit_intercept=True, classes=[0, 1]),
        FeatureSplitLogisticRegression(
            epsilon=1.0, groups=GROUPS, importance=Q, lam=[0.002, 0.001, 0.05], classes=[0, 1]
        ),
    ],
    ids=["plr", "plr-intercept-delta>0", "plr-fs-delta>0"],
)
def test_genuine_mechanisms_pass_the_noise_law(template):
    X, y = _law_data()
    table = noise_law_test(template, X, y, n_fits=LAW_FITS, random_state=0)
    assert table.attrs["pass"], table
    assert np.allclose(table["scale ratio"], 1.0, atol=0.1)


@pytest.mark.parametrize(
    "mutant,params",
    [
        (mutants.SqrtDNoisePLR, dict(lam=0.05)),
        (mutants.DoubleEpsilonNoisePLR, dict(lam=0.05)),
        (mutants.UnusedDeltaPLR, dict(lam=0.002)),
        (mutants.TenfoldEpsilonPLR, dict(lam=0.05)),
        (mutants.MaxNormScaledPLR, dict(lam=0.05)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_mutants_with_truthful_attributes_fail_the_noise_law(mutant, params):
    X, y = _law_data()
    fitted = mutant(epsilon=1.0, classes=[0, 1], random_state=0, **params).fit(X, y)
    real = PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0, **params).fit(X, y)
    if mutant is not mutants.TenfoldEpsilonPLR:  # the others tell the truth in every attribute
        assert fitted.calibration_ == real.calibration_
    assert not noise_law_test(
        mutant(epsilon=1.0, classes=[0, 1], **params), X, y, n_fits=LAW_FITS, random_state=0
    ).attrs["pass"]


def test_power_the_law_test_rejects_sqrt_d_and_2x_scale_errors_and_sizes_correctly():
    from dpstack.audit.laws import ALPHA, law_pvalues

    rng = np.random.default_rng(0)
    d, m = 5, LAW_FITS

    def rejections(factor, reps=100):
        out = 0
        for _ in range(reps):
            u = rng.standard_normal((m, d))
            b = u / np.linalg.norm(u, axis=1, keepdims=True) * rng.gamma(d, 1.0, size=(m, 1)) * factor
            out += min(law_pvalues(b, 1.0)[:2]) * 2 < ALPHA
        return out / reps

    assert rejections(1.0) <= 0.03
    assert rejections(0.5) >= 0.99
    assert rejections(1 / np.sqrt(d)) >= 0.99


def test_intercept_after_clipping_is_caught_by_the_augmented_worst_case():
    params = dict(epsilon=1.0, lam=0.5, fit_intercept=True, classes=[0, 1])
    broken = adversarial_case(mutants.ClippedThenInterceptPLR(**params), n_samples=60, record_margin=-12.0)
    real = adversarial_case(PrivateLogisticRegression(**params), n_samples=60, record_margin=-12.0)
    assert broken.loss_at_w_star > 1.05
    assert 0.9 < real.max_loss(n_draws=100) <= 1.0


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("method", ["vote", "soft", "avg"])
def test_mpl_noise_is_coef_minus_the_audits_own_minimiser_and_follows_the_claim(method, n_classes):
    from dpstack import MultipartyPrivateClassifier

    D, Dp = party_neighbours(n_parties=5, party_size=3, n_aux=10, n_classes=n_classes)
    res = output_perturbation_audit(
        MultipartyPrivateClassifier(method, epsilon=1.0, lam=1.0), D, Dp, n_runs=150, random_state=0
    )
    assert not res["law_rejected"] and abs(res["scale_ratio"] - 1) < 0.15
    assert 0 < res["measured_distance"] <= res["claimed_sensitivity"]
    assert res["exact_max_loss"] <= 1.0 and res["epsilon_lo"].epsilon_lo <= 1.0


@pytest.mark.parametrize(
    "mutant,kw",
    [(mutants.TenfoldEpsilonNoiseMPL, dict(method="soft")), (mutants.VoteWithSoftScale, dict(method="vote"))],
)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_mpl_mutants_are_caught_from_the_released_coef(mutant, kw, n_classes):
    D, Dp = party_neighbours(n_parties=5, party_size=3, n_aux=10, n_classes=n_classes)
    res = output_perturbation_audit(mutant(epsilon=1.0, lam=1.0, **kw), D, Dp, n_runs=150, random_state=0)
    assert res["law_rejected"] and res["exact_max_loss"] > 1.0


def test_high_level_on_low_data_is_caught_and_genuine_stacking_is_not():
    from dpstack import PrivateStackingClassifier, PrivateTransferStacking

    X, y = _data(n=60, p=6)
    params = dict(epsilon=1.0, n_groups=2, lam=0.05, classes=[0, 1])
    assert not composition_noise_identity(mutants.HighLevelOnLowDataPST(**params), X, y)["identical"]
    assert composition_noise_identity(PrivateStackingClassifier(**params), X, y)["identical"]
    assert composition_noise_identity(PrivateStackingClassifier(partition="samples", **params), X, y)["identical"]
    Xs, ys = _data(n=80, p=6, seed=1)
    transfer = PrivateTransferStacking(
        epsilon_source=1.0,
        epsilon_target=1.0,
        groups=[[0, 1, 2], [3, 4, 5]],
        group_importance=[0.7, 0.3],
        lam_source=0.05,
        lam=0.05,
        classes=[0, 1],
    )
    assert composition_noise_identity(transfer, X, y, dict(X_source=Xs, y_source=ys))["identical"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "template",
    [
        PrivateLogisticRegression(epsilon=1.0, lam=0.05, classes=[0, 1]),
        FeatureSplitLogisticRegression(
            epsilon=1.0, groups=GROUPS, importance=Q, lam=[0.002, 0.001, 0.05], classes=[0, 1]
        ),
    ],
    ids=["plr", "plr-fs-delta>0"],
)
def test_paper_profile_a_thousand_real_fits_pass_the_law_and_the_mutants_fail(template):
    X, y = _law_data()
    table = noise_law_test(template, X, y, n_fits=1000, random_state=1)
    assert table.attrs["pass"] and np.allclose(table["scale ratio"], 1.0, atol=0.05), table
    params = dict(epsilon=1.0, lam=0.05, classes=[0, 1])
    for mutant in (mutants.SqrtDNoisePLR, mutants.DoubleEpsilonNoisePLR):
        assert not noise_law_test(mutant(**params), X, y, n_fits=1000, random_state=1).attrs["pass"]


def test_stacking_levels_pass_the_noise_law():
    from dpstack import PrivateStackingClassifier

    X, y = _data(n=40, p=4)
    table = noise_law_test(
        PrivateStackingClassifier(epsilon=1.0, n_groups=2, lam=0.05, classes=[0, 1]), X, y, n_fits=100, random_state=0
    )
    assert table.attrs["pass"], table
    assert set(table["block"]) == {"low PLR-FS block 1", "low PLR-FS block 2", "high PLR"}


# -- the protocol on a mechanism written by a user -------------------------------------------------------
from sklearn.base import BaseEstimator  # noqa: E402

from dpstack.audit import NoiseBlock, PrivateMechanism, audit_release, release_vector  # noqa: E402
from dpstack.mechanisms import clip_rows, isotropic_noise  # noqa: E402


class NoisyMean(BaseEstimator):
    """A user's mechanism: the mean of rows clipped to ``bound``, plus noise for sensitivity 2·bound/n."""

    _release_attributes = ("mean_",)
    privacy_unit = "one sample"

    def __init__(self, epsilon=1.0, bound=1.0, random_state=None, _noise_factor=1.0):
        self.epsilon = epsilon
        self.bound = bound
        self.random_state = random_state
        self._noise_factor = _noise_factor

    def _scale(self, n):
        return 2.0 * self.bound / (n * self.epsilon)

    def fit(self, X, y=None):
        Z = clip_rows(X, self.bound)
        noise = isotropic_noise(Z.shape[1], self._scale(Z.shape[0]) * self._noise_factor, self.random_state)
        self.mean_ = Z.mean(axis=0) + noise
        return self

    def recover_noise(self, X, y=None):
        Z = clip_rows(X, self.bound)
        return [NoiseBlock("noisy mean", self.mean_ - Z.mean(axis=0), self._scale(Z.shape[0]))]


def _mean_neighbours(X, y):
    Xp = X.copy()
    Xp[0] = -X[0]
    return {"mirrored record": (X, y, Xp, y)}


def test_the_protocol_audits_a_users_mechanism_and_catches_its_bug():
    X = np.zeros((5, 1))
    X[0, 0] = 1.0
    y = np.zeros(5, dtype=int)
    good, bad = NoisyMean(epsilon=1.0), NoisyMean(epsilon=1.0, _noise_factor=0.1)
    assert isinstance(good, PrivateMechanism)
    assert release_vector(good.fit(X)).shape == (1,)
    assert audit_release(good, X, y, neighbours=_mean_neighbours, n_runs=600)["verdict"] == "pass"
    assert audit_release(bad, X, y, neighbours=_mean_neighbours, n_runs=600)["verdict"].startswith("FAIL")
    assert noise_law_test(good, X, y, n_fits=300).attrs["pass"]
    assert not noise_law_test(bad, X, y, n_fits=300).attrs["pass"]


def test_adversary_with_the_noise_norm_always_wins_and_without_it_stays_within_the_bound():
    from dpstack.audit import adversary_experiment

    X, y = _data(n=40, p=4)
    XD, yD, XP, yP = worst_case_neighbours(X, y)["label_flip"]
    rates = {}
    for diagnostics in (False, True):
        template = PrivateLogisticRegression(epsilon=1.0, lam=0.05, classes=[0, 1], diagnostics=diagnostics)
        rates[diagnostics] = adversary_experiment(template, (XD, yD), (XP, yP), n_trials=120, random_state=0)
    assert rates[True]["successes"] == 120 and not rates[True]["within_bound"]
    assert rates[False]["within_bound"] and rates[False]["rate"] < rates[False]["bound"] + 0.05


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("method", ["vote", "soft", "avg"])
def test_the_audits_own_mpl_solver_reproduces_the_release_at_infinite_epsilon(method, n_classes):
    # at ε = ∞ the release is the unperturbed minimiser itself: the audit's independent solver
    # (scipy's L-BFGS on the same objective) must find the same point
    from dpstack import MultipartyPrivateClassifier
    from dpstack.audit import mpl_unperturbed

    rng = np.random.default_rng(n_classes)
    X = rng.normal(size=(60, 4)) / 2
    y = np.argmax(X[:, :n_classes] + 0.5 * rng.normal(size=(60, n_classes)), axis=1)
    parties = np.repeat(np.arange(6), 10)
    X_aux = rng.normal(size=(25, 4)) / 2
    est = MultipartyPrivateClassifier(method, epsilon=np.inf, lam=0.1, local_lam=0.2)
    if "classes" in est.get_params():
        est.set_params(classes=list(range(n_classes)))
    est.fit(X, y, parties, X_aux)
    np.testing.assert_allclose(mpl_unperturbed(est, X, y, parties, X_aux), est.coef_, atol=1e-6)


def test_post_processing_check_uses_the_low_level_hook_when_the_estimator_has_one():
    import inspect

    from dpstack import PrivateStackingClassifier
    from dpstack.audit import composition_post_processing

    X, y = _data(n=60, p=6)
    params = dict(epsilon=1.0, n_groups=2, lam=0.05, classes=[0, 1])
    genuine = composition_post_processing(PrivateStackingClassifier(**params), X, y)
    if "low_level" not in inspect.signature(PrivateStackingClassifier.fit).parameters:
        assert genuine is None  # reported as "not available", never as a pass
    else:
        assert genuine["identical"]
        assert not composition_post_processing(mutants.HighLevelOnLowDataPST(**params), X, y)["identical"]


def test_transfer_levels_and_source_blocks_pass_the_noise_law():
    from dpstack import PrivateTransferStacking

    X, y = _data(n=40, p=4)
    Xs, ys = _data(n=50, p=4, seed=1)
    transfer = PrivateTransferStacking(
        epsilon_source=1.0,
        epsilon_target=1.0,
        groups=[[0, 1], [2, 3]],
        group_importance=[0.7, 0.3],
        lam_source=0.05,
        lam=0.05,
        classes=[0, 1],
    )
    table = noise_law_test(transfer, X, y, n_fits=80, fit_params=dict(X_source=Xs, y_source=ys), random_state=0)
    assert table.attrs["pass"], table
    assert {"source PLR-FS block 1", "source PLR-FS block 2", "high PLR"} <= set(table["block"])


# -- SimComb: both PLRs' noise read back from the release, the target's centre from the released w_s ---------
def _simcomb_data():
    X, y = _law_data()
    Xs, ys = law_data(n_samples=50, n_features=5, random_state=1)
    return X, y, dict(X_source=Xs, y_source=ys)


@pytest.mark.parametrize(
    "params",
    [
        dict(lam_source=0.05, lam=0.05),
        dict(lam_source=0.05, lam=0.001, eta=0.2),  # the target in the Δ > 0 branch
        dict(lam_source=0.05, lam=0.05, fit_intercept=True),
        dict(lam_source=0.05, lam=0.05, row_bound="normalize", row_scale=2.0),
    ],
    ids=["clip", "delta>0", "intercept", "normalize"],
)
def test_simcomb_noise_read_back_from_the_release_is_the_noise_drawn(params):
    from dpstack import SimComb

    X, y, src = _simcomb_data()
    fitted = SimComb(classes=[0, 1], random_state=3, diagnostics=True, **params).fit(X, y, **src)
    blocks = {blk.name: blk.noise for blk in recover_noise(fitted, X, y, src)}
    assert set(blocks) == {"source PLR", "target PLR"}
    for name, part in (("source PLR", "source"), ("target PLR", "target")):
        drawn = fitted.diagnostics_[part]["noise"]
        np.testing.assert_allclose(blocks[name], drawn, atol=1e-6 * np.linalg.norm(drawn))


def test_simcomb_passes_the_noise_law_and_its_scale_mutants_fail():
    from dpstack import SimComb

    X, y, src = _simcomb_data()
    params = dict(classes=[0, 1], lam_source=0.05, lam=0.05)
    table = noise_law_test(SimComb(**params), X, y, n_fits=LAW_FITS, fit_params=src, random_state=0)
    assert table.attrs["pass"], table
    assert np.allclose(table["scale ratio"], 1.0, atol=0.1)
    for mutant in (mutants.SqrtDNoiseSimComb, mutants.DoubleEpsilonNoiseSimComb):
        bad = noise_law_test(mutant(**params), X, y, n_fits=LAW_FITS, fit_params=src, random_state=0)
        rejected = dict(zip(bad["block"], bad["reject"]))
        assert rejected == {"source PLR": False, "target PLR": True}, bad  # only the target is broken


def test_simcomb_target_centred_at_the_unperturbed_source_is_caught_by_the_noise_identity():
    from dpstack import SimComb

    X, y, src = _simcomb_data()
    params = dict(classes=[0, 1], lam_source=0.05, lam=0.05)
    genuine = composition_noise_identity(SimComb(**params), X, y, src, random_state=2)
    assert genuine["identical"] and genuine["max_difference"] < 1e-9
    broken = composition_noise_identity(mutants.UnperturbedCentreSimComb(**params), X, y, src, random_state=2)
    assert not broken["identical"] and broken["max_difference"] > 1e-3
    # the mutant's release looks like the genuine one: same attributes, same source model
    a = SimComb(random_state=2, **params).fit(X, y, **src)
    b = mutants.UnperturbedCentreSimComb(random_state=2, **params).fit(X, y, **src)
    np.testing.assert_array_equal(a.source_.w_, b.source_.w_)
    assert set(vars(a)) == set(vars(b))


# -- the chapter's tables, stored as data -----------------------------------------------------------------
def _small_tables():
    import pandas as pd

    return {
        "mechanisms": pd.DataFrame(
            {
                "mechanism": ["PLR", "SimComb (target)"],
                "noise law p": [0.5, np.nan],
                "checks": ["a; b, c", "x"],
                "verdict": ["pass", "pass"],
            }
        ),
        "mutants": pd.DataFrame({"mechanism": ["noise / 2"], "verdict": ["caught (noise law)"]}),
        "power": pd.DataFrame({"case": ["genuine PLR"], "fits": [1000], "p-value": [1.2345678901234567e-80]}),
        "scale_power": pd.DataFrame({"estimator": ["PLR"], "factor": [0.8], "profile": ["power"], "caught": [10]}),
    }


def test_stored_tables_round_trip_and_refuse_edits_and_other_parameters(tmp_path):
    import json

    from dpstack.audit import stored

    tables = _small_tables()
    params = {"profile": "quick", "epsilon": 1.0, "seed": 0}
    assert not stored.has_tables(directory=tmp_path)
    record = stored.save_tables(tables, params, 12.3, tmp_path)
    assert stored.has_tables(directory=tmp_path) and not stored.has_tables(seed=1, directory=tmp_path)
    assert record["parameters"]["profile settings"]["n_fits"] >= 1000 and record["wall_time_seconds"] == 12.3
    back, rec, stale = stored.load_tables(directory=tmp_path)
    assert stale == [] and rec == record
    for name in tables:
        assert back[name].equals(tables[name]), name  # floats bit-identical, strings with separators intact
    with pytest.raises(stored.StoredTablesError, match="computed with"):
        stored.load_tables(epsilon=2.0, directory=tmp_path)
    text = (tmp_path / "power.csv").read_text()
    (tmp_path / "power.csv").write_text(text.replace("1000", "2000"))
    with pytest.raises(stored.StoredTablesError, match="sha256"):
        stored.load_tables(directory=tmp_path)
    (tmp_path / "power.csv").write_text(text)
    rec = json.loads((tmp_path / "provenance.json").read_text())
    rec["code_sha256"]["transfer.py"] = "0" * 64  # the code changed since
    (tmp_path / "provenance.json").write_text(json.dumps(rec))
    with pytest.warns(stored.StaleTablesWarning, match="transfer.py"):
        _, _, stale = stored.load_tables(directory=tmp_path)
    assert stale == ["transfer.py"]


def test_stored_code_hash_ignores_docstrings_but_not_code(tmp_path):
    from dpstack.provenance import code_hash

    def hashed(name, text):
        (tmp_path / name).write_text(text)
        return code_hash(tmp_path / name)

    src = 'def f(x):\n    """Doc."""\n    return x + 1\n'
    assert hashed("a.py", src) == hashed(
        "b.py", 'def f(x):\n    """Other doc, longer."""\n    # a comment\n    return x + 1\n'
    )
    assert hashed("a.py", src) != hashed("c.py", 'def f(x):\n    """Doc."""\n    return x + 2\n')
    # a C file counts whole: a comment in the compiled pass is a change of its source
    assert hashed("a.c", "int f(void) { return 1; }\n") != hashed("b.c", "int f(void) { return 1; } /* */\n")
    assert {"transfer.py", "_fused.c"} <= set(__import__("dpstack.audit.stored", fromlist=["code_files"]).code_files())


def test_the_chapters_stored_tables_are_intact_and_from_a_thousand_fits():
    import warnings

    from dpstack.audit import stored

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stored.StaleTablesWarning)  # freshness is reported by the chapter
        tables, record, _ = stored.load_tables("quick", 1.0, 0)
    assert record["parameters"]["profile settings"]["n_fits"] >= 1000
    mech, mut, power = tables["mechanisms"], tables["mutants"], tables["power"]
    assert (mech["verdict"] == "pass").all(), mech
    assert mut["verdict"].str.startswith("caught").all(), mut
    simcomb = mech[mech["mechanism"].str.startswith("SimComb")]
    assert len(simcomb) == 2 and simcomb["noise law p"].notna().all()  # SimComb's noise is read back
    assert (power["fits"] >= 1000).all()
    assert set(power.loc[power["case"].str.contains("inside fit"), "rejection rate"]) == {1.0}
    # the law test runs in the mutant's configured regime (Δ = 0 branch), where ε^(k) = ε shows in the noise
    assert "noise law" in mut.loc[mut["mechanism"].str.startswith("PPTL"), "verdict"].iloc[0]
