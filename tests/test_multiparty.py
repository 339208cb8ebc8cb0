"""Multiparty learning (Hamm, Cao & Belkin 2016): solvers, sensitivities, estimator, bad input."""

import math
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from dpstack import MultipartyPrivateClassifier
from dpstack.base import DIAGNOSTICS
from dpstack.multiparty import (
    excess_risk_simulation,
    fit_local_logistic,
    fit_soft_target_logistic,
    lemma2_simulation,
    make_synthetic_multiparty,
    mpl_sensitivity,
    sensitivity_by_construction,
    split_auxiliary_and_parties,
    theorem4_bound,
)
from dpstack.solvers import minimize_perturbed_logistic

LAM = 1e-4


def _unit_rows(rng, n, d):
    X = rng.normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _sklearn_fit(X, y, lam):
    # Same objective: C Σ ℓ + ½‖w‖² with C = 1/(nλ) ⇔ (1/n) Σ ℓ + (λ/2)‖w‖², no intercept.
    clf = LogisticRegression(
        C=1.0 / (X.shape[0] * lam), fit_intercept=False, tol=1e-12, solver="newton-cholesky", max_iter=1000
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clf.fit(X, y).coef_


def test_batched_binary_local_fits_equal_sklearn_and_exact_solver():
    rng = np.random.default_rng(0)
    sizes = rng.integers(6, 23, size=300)  # unequal sizes exercise the padding
    parties = np.repeat(np.arange(300), sizes)
    X = _unit_rows(rng, parties.size, 20)
    y = (X[:, 0] + 0.3 * rng.normal(size=parties.size) > 0.4).astype(int)
    W, _ = fit_local_logistic(X, y, parties, 300, 2, LAM)
    assert W.shape == (300, 1, 20)
    two_class = one_class = 0
    for m in range(300):
        Xm, ym = X[parties == m], y[parties == m]
        if np.unique(ym).size == 2:
            two_class += 1
            np.testing.assert_allclose(W[m, 0], _sklearn_fit(Xm, ym, LAM)[0], atol=1e-6)
        else:  # scikit-learn refuses one class; the exact Newton solver does not
            one_class += 1
            w, _ = minimize_perturbed_logistic(Xm, 2.0 * ym - 1.0, LAM, tol=1e-13)
            np.testing.assert_allclose(W[m, 0], w, atol=1e-8)
    assert two_class > 40 and one_class > 40


def test_batched_equal_parties_reach_the_exact_minimiser():
    # The usual split (equal sizes, no padding): the parties are never gathered until one
    # converges, and the margins of each accepted point are carried over, not recomputed.
    rng = np.random.default_rng(5)
    M, n, d = 400, 22, 30
    parties = np.repeat(np.arange(M), n)
    X = _unit_rows(rng, M * n, d)
    y = (X[:, 0] + 0.1 * rng.normal(size=M * n) > 0.12).astype(int)
    W, n_iter = fit_local_logistic(X, y, parties, M, 2, LAM)
    assert n_iter > 3
    for m in range(M):
        Xm, ym, w = X[m * n : (m + 1) * n], y[m * n : (m + 1) * n], W[m, 0]
        grad = Xm.T @ (1.0 / (1.0 + np.exp(-Xm @ w)) - ym) / n + LAM * w  # the primal gradient, from scratch
        assert np.linalg.norm(grad) <= 1e-10
        if m < 60 and np.unique(ym).size == 2:
            np.testing.assert_allclose(w, _sklearn_fit(Xm, ym, LAM)[0], atol=1e-6)


def test_batched_backtracking_keeps_the_margins_of_the_accepted_point(monkeypatch):
    # Newton from 0 rarely needs a shorter step on these problems, so force one: the first
    # full step of 50 parties is reported as an increase of J. Their shorter step must carry
    # its own margins G·B (which later steps update), or the solution drifts off w*.
    import dpstack.multiparty.logistic as logistic

    rng = np.random.default_rng(6)
    M, n, d = 120, 22, 30
    parties = np.repeat(np.arange(M), n)
    X = _unit_rows(rng, M * n, d)
    y = (X[:, 0] + 0.1 * rng.normal(size=M * n) > 0.12).astype(int)
    calls, original = [], logistic._loss_terms

    def first_step_rejected(Z, T, mask):
        loss, R, h = original(Z, T, mask)
        calls.append(Z.shape[0])
        if len(calls) == 2:  # the first trial point of every party (call 1 is the start)
            loss[:50] += 1.0
        return loss, R, h

    monkeypatch.setattr(logistic, "_loss_terms", first_step_rejected)
    W, _ = fit_local_logistic(X, y, parties, M, 2, LAM)
    assert calls[2] == 50  # the backtracking evaluated exactly the rejected parties
    for m in range(M):
        Xm, ym, w = X[m * n : (m + 1) * n], y[m * n : (m + 1) * n], W[m, 0]
        grad = Xm.T @ (1.0 / (1.0 + np.exp(-Xm @ w)) - ym) / n + LAM * w
        assert np.linalg.norm(grad) <= 1e-10


@pytest.mark.parametrize("n_classes", [2, 3])
def test_blocks_of_parties_give_the_result_of_one_batch_bit_for_bit(monkeypatch, n_classes):
    # The parties are fitted in blocks that fit the CPU caches. A party's Newton iterates depend
    # on its own rows only, so any blocking must give exactly the one-batch result, including
    # unequal (padded) parties, one-class parties and the slowest party's iteration count.
    rng = np.random.default_rng(7)
    M = 53
    sizes = rng.integers(4, 12, size=M)
    parties = rng.permutation(np.repeat(np.arange(M), sizes))
    X = _unit_rows(rng, parties.size, 8)
    y = rng.integers(0, n_classes, size=parties.size)
    y[parties == 3] = 1  # one class
    import dpstack.multiparty.logistic as logistic

    one_batch, it_one = fit_local_logistic(X, y, parties, M, n_classes, LAM)
    calls = []
    original = logistic._newton_block

    def counting(*args):
        calls.append(args[0].shape[0])
        return original(*args)

    monkeypatch.setattr(logistic, "_newton_block", counting)
    for block_bytes in (1, 40_000):  # one party per block; 4 (three classes) or 41 (two) per block
        monkeypatch.setattr(logistic, "_BLOCK_BYTES", block_bytes)
        calls.clear()
        blocked, it_blocked = fit_local_logistic(X, y, parties, M, n_classes, LAM)
        assert len(calls) > 1 and sum(calls) == M
        np.testing.assert_array_equal(blocked, one_batch)
        assert it_blocked == it_one


def test_batched_multiclass_local_fits_equal_sklearn_multinomial():
    rng = np.random.default_rng(1)
    M, K, n = 40, 3, 9
    parties = np.repeat(np.arange(M), n)
    X = _unit_rows(rng, M * n, 6)
    y = np.tile(np.arange(K), M * n // K)  # every party holds all K classes
    W, _ = fit_local_logistic(X, y, parties, M, K, LAM)
    assert W.shape == (M, K, 6)
    for m in range(M):
        np.testing.assert_allclose(W[m], _sklearn_fit(X[parties == m], y[parties == m], LAM), atol=1e-6)


def test_soft_target_solver_matches_hard_labels_and_is_stationary():
    rng = np.random.default_rng(2)
    X = _unit_rows(rng, 400, 5)
    y = (X[:, 0] > 0).astype(float)
    W, _ = fit_soft_target_logistic(X, y, 1e-2)
    w_ref, _ = minimize_perturbed_logistic(X, 2 * y - 1, 1e-2)
    np.testing.assert_allclose(W[0], w_ref, atol=1e-9)
    alpha = rng.random(400)
    W, _ = fit_soft_target_logistic(X, alpha, 1e-2)
    grad = X.T @ (1 / (1 + np.exp(-X @ W[0])) - alpha) / 400 + 1e-2 * W[0]
    assert np.max(np.abs(grad)) < 1e-9
    T = rng.dirichlet(np.ones(4), size=400)
    W, _ = fit_soft_target_logistic(X, T, 1e-2)
    Z = X @ W.T
    P = np.exp(Z - Z.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    assert np.max(np.abs((P - T).T @ X / 400 + 1e-2 * W)) < 1e-9


def test_sensitivity_formulas_of_the_paper():
    assert mpl_sensitivity("vote", 100, 2, 0.5) == pytest.approx(4.0)
    assert mpl_sensitivity("soft", 100, 2, 0.5) == pytest.approx(0.04)
    assert mpl_sensitivity("avg", 100, 2, 0.5) == pytest.approx(0.04)
    assert mpl_sensitivity("vote", 100, 6, 0.5) == pytest.approx(math.sqrt(2) / 0.5)
    assert mpl_sensitivity("soft", 100, 6, 0.5) == pytest.approx(math.sqrt(2) / 50)
    assert mpl_sensitivity("avg", 100, 6, 0.5) == pytest.approx(2 * math.sqrt(2) / 50)
    # Section 4.5: soft's sensitivity grows by (N + M − 1)/N, vote's does not change
    assert mpl_sensitivity("soft", 100, 2, 0.5, True, 1000) == pytest.approx(0.04 * 1099 / 1000)
    assert mpl_sensitivity("vote", 100, 2, 0.5, True, 1000) == pytest.approx(4.0)


@pytest.mark.parametrize("method", ["vote", "soft", "avg"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_worst_case_neighbour_stays_within_the_claimed_sensitivity(method, n_classes):
    for lam in (0.1, 1.0, 100.0):
        r = sensitivity_by_construction(method, n_parties=11, n_classes=n_classes, lam=lam)
        assert 0 < r["measured"] <= r["claimed"] * (1 + 1e-9)
    # At large λ the construction is near-tight: binary logistic reaches half the paper's
    # bound (ℓ'(z) + ℓ'(−z) = −1), softmax vote/soft the whole √2/λ, √2/(Mλ).
    expected = 0.5 if (n_classes == 2 or method == "avg") else 1.0
    assert r["ratio"] == pytest.approx(expected, abs=0.01)


@pytest.fixture(scope="module")
def synthetic():
    X, y = make_synthetic_multiparty(9000, 5, random_state=0)
    parties = np.repeat(np.arange(300), 20)
    return X[:6000], y[:6000], parties, X[6000:7000], X[7000:], y[7000:]


def test_estimator_releases_noise_of_the_claimed_scale(synthetic):
    X, y, parties, X_aux, X_te, y_te = synthetic
    clf = MultipartyPrivateClassifier(
        "soft", epsilon=0.5, lam=1e-2, random_state=0, classes=[0, 1], diagnostics=True
    ).fit(X, y, parties, X_aux)
    assert clf.sensitivity_ == pytest.approx(2 / (300 * 1e-2))
    assert clf.noise_scale_ == pytest.approx(clf.sensitivity_ / 0.5)
    draws = clf.release_noise(0.5, random_state=1, size=4000)
    norms = np.linalg.norm(draws.reshape(4000, -1), axis=1)
    # ‖η‖ ~ Gamma(d, scale): mean d·scale, s.d. √d·scale; 4000 draws → s.e. 1.1% of the mean
    assert norms.mean() == pytest.approx(5 * clf.noise_scale_, rel=0.05)
    assert clf.diagnostics_.noise_norm == pytest.approx(np.linalg.norm(clf.coef_ - clf.diagnostics_.unperturbed_coef))
    assert clf.privacy_.total() == np.inf and clf.privacy_.mechanism_total() == 0.5  # diagnostics: not private
    again = MultipartyPrivateClassifier("soft", epsilon=0.5, lam=1e-2, random_state=0, classes=[0, 1]).fit(
        X, y, parties, X_aux
    )
    np.testing.assert_array_equal(clf.coef_, again.coef_)
    assert again.privacy_.total() == 0.5 and again.privacy_.units == ["one party"]


def test_methods_targets_and_references(synthetic):
    X, y, parties, X_aux, X_te, y_te = synthetic
    fits = {
        m: MultipartyPrivateClassifier(m, epsilon=np.inf, lam=LAM, classes=[0, 1], diagnostics=True).fit(
            X, y, parties, X_aux
        )
        for m in ("soft", "vote", "avg", "batch", "indiv")
    }
    local = fits["soft"].diagnostics_.local_coefs
    np.testing.assert_array_equal(fits["indiv"].local_coefs_, local)  # indiv's (non-private) release
    alpha = (X_aux @ local[:, 0, :].T >= 0).mean(axis=1)
    np.testing.assert_allclose(fits["soft"].diagnostics_.targets[:, 1], alpha)
    np.testing.assert_array_equal(fits["vote"].diagnostics_.targets[:, 1], (alpha >= 0.5).astype(float))
    np.testing.assert_allclose(fits["avg"].coef_, local.mean(axis=0))
    w_batch, _ = minimize_perturbed_logistic(X, 2.0 * y - 1, LAM, tol=1e-13)
    np.testing.assert_allclose(fits["batch"].coef_[0], w_batch, atol=1e-8)
    acc = np.mean([np.mean((X_te @ local[m, 0] >= 0) == y_te) for m in range(300)])
    assert fits["indiv"].score(X_te, y_te) == pytest.approx(acc)
    with pytest.raises(ValueError, match="indiv"):
        fits["indiv"].predict(X_te)
    # the ensemble helps: soft beats the mean local model on this easy task
    assert fits["soft"].score(X_te, y_te) > acc + 0.02


def test_vote_ties_go_to_the_positive_class():
    rng = np.random.default_rng(3)
    X = _unit_rows(rng, 40, 3)
    X[:, 0] = np.abs(X[:, 0])
    parties = np.repeat(np.arange(2), 20)
    y = np.concatenate([np.ones(20, int), np.zeros(20, int)])  # party 0 all +, party 1 all −
    X[20:] = X[:20]
    clf = MultipartyPrivateClassifier("vote", epsilon=np.inf, classes=[0, 1], diagnostics=True).fit(
        X, y, parties, X[:5]
    )
    np.testing.assert_array_equal(clf.diagnostics_.targets[:, 1], 1.0)


def test_multiclass_shapes_and_noise_dimension(synthetic):
    rng = np.random.default_rng(4)
    X = _unit_rows(rng, 1200, 7)
    y = np.argmax(X[:, :4], axis=1) + 10  # labels 10..13
    parties = np.repeat(np.arange(200), 6)
    for method in ("soft", "vote", "avg", "batch"):
        clf = MultipartyPrivateClassifier(method, epsilon=1.0, lam=1e-2, random_state=0).fit(
            X[:1000], y[:1000], parties[:1000] // 1, X[1000:]
        )
        assert clf.coef_.shape == (4, 7)
        assert set(np.unique(clf.predict(X[1000:]))) <= {10, 11, 12, 13}
    assert clf.release_noise(1.0, 0, size=3).shape == (3, 4, 7)
    soft = MultipartyPrivateClassifier("soft", lam=1e-2, diagnostics=True).fit(
        X[:1000], y[:1000], parties[:1000], X[1000:]
    )
    assert soft.diagnostics_.local_coefs.shape == (167, 4, 7)
    assert soft.sensitivity_ == pytest.approx(math.sqrt(2) / (167 * 1e-2))
    np.testing.assert_allclose(soft.diagnostics_.targets.sum(axis=1), 1.0)


def test_protect_aux_option_uses_the_larger_noise(synthetic):
    X, y, parties, X_aux, _, _ = synthetic
    base = MultipartyPrivateClassifier("soft", lam=1e-2).fit(X, y, parties, X_aux)
    ext = MultipartyPrivateClassifier("soft", lam=1e-2, protect_aux=True).fit(X, y, parties, X_aux)
    assert ext.sensitivity_ / base.sensitivity_ == pytest.approx((1000 + 300 - 1) / 1000)
    assert ext.privacy_.units == ["one party + one auxiliary sample"]


def test_any_local_estimator_and_one_class_parties(synthetic):
    X, y, parties, X_aux, X_te, y_te = synthetic
    y = y.copy()
    y[parties == 0] = 1  # a one-class party must not break the loop
    clf = MultipartyPrivateClassifier(
        "soft", epsilon=np.inf, local_estimator=DecisionTreeClassifier(max_depth=2, random_state=0), diagnostics=True
    ).fit(X, y, parties, X_aux)
    assert np.all(clf.local_predict_index(X_aux, [0]) == 1)
    assert clf.score(X_te, y_te) > 0.6
    with pytest.raises(ValueError, match="avg"):
        MultipartyPrivateClassifier("avg", local_estimator=DecisionTreeClassifier()).fit(X, y, parties)


def test_bad_input(synthetic):
    X, y, parties, X_aux, _, _ = synthetic
    for eps in (0.0, -1.0):
        with pytest.raises(ValueError, match="epsilon"):
            MultipartyPrivateClassifier("soft", epsilon=eps).fit(X, y, parties, X_aux)
    with pytest.raises(ValueError, match="empty"):
        MultipartyPrivateClassifier("soft").fit(X, y, parties, X_aux[:0])
    with pytest.raises(ValueError, match="X_aux"):
        MultipartyPrivateClassifier("vote").fit(X, y, parties, None)
    with pytest.raises(ValueError, match="method"):
        MultipartyPrivateClassifier("median").fit(X, y, parties, X_aux)
    with pytest.raises(ValueError, match="larger than the number of samples"):
        split_auxiliary_and_parties(100, 101, 1, 0)
    with pytest.raises(ValueError, match="exceeds"):
        split_auxiliary_and_parties(100, 10, 9, 20)
    aux, priv, ids = split_auxiliary_and_parties(100, 10, 8, 20, random_state=0)
    assert len(set(aux) | set(priv)) == 100 and np.bincount(ids).tolist() == [8] * 10


def test_theorem4_and_lemma2_helpers():
    b = theorem4_bound(10, 0.01, 100, 1.0, 1000)
    assert b["noise_term"] == pytest.approx(4 * 100 * 0.26 * math.log(200) ** 2 / (1e-4 * 1e4))
    assert theorem4_bound(10, 0.01, 100, 1.0, 1000, method="vote")["noise_term"] == pytest.approx(b["noise_term"] * 1e4)
    df = excess_risk_simulation([50, 200], [4.0, 16.0], methods=("soft",), n_aux=500, n_eval=2000, n_draws=100)
    small = df.set_index(["n_parties", "epsilon"])["excess_risk"]
    assert (df["excess_risk"] > 0).all()
    assert small[(200, 16.0)] < small[(50, 4.0)] / 20  # O(M⁻²ε⁻²): 16× M·ε → far below
    lem = lemma2_simulation([5, 500], n_repeats=20, pool_size=1000, n_eval=1000)
    gaps = lem.groupby("n_parties")["weighted_gap"].mean()
    assert gaps[500] < gaps[5] / 3


def test_fit_methods_shares_local_models_without_changing_results(synthetic):
    from dpstack.multiparty import fit_methods

    X, y, parties, X_aux, _, _ = synthetic
    shared = fit_methods(
        ("soft", "vote", "avg"),
        X,
        y,
        parties,
        X_aux,
        epsilon=2.0,
        lam=1e-3,
        random_state=5,
        classes=[0, 1],
        diagnostics=True,
    )
    for method, est in shared.items():
        alone = MultipartyPrivateClassifier(method, epsilon=2.0, lam=1e-3, random_state=5, classes=[0, 1]).fit(
            X, y, parties, X_aux
        )
        np.testing.assert_array_equal(est.coef_, alone.coef_)
    assert shared["soft"].diagnostics_.local_coefs is shared["vote"].diagnostics_.local_coefs
    plain = fit_methods(("soft", "vote"), X, y, parties, X_aux, epsilon=2.0, lam=1e-3, random_state=5, classes=[0, 1])
    for est in plain.values():  # the shared local models stay inside fit_methods
        assert set(vars(est)) == set(est.get_params()) | set(est._release_attributes) - {"local_coefs_"}


def test_experiment_helpers_accuracy_summary_and_missing_data(tmp_path, monkeypatch):
    import pandas as pd

    from dpstack.companion.papers.mpl import grids as ex

    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    coefs = np.array([[[1.0, 0.0]], [[-1.0, 0.0]]])  # two binary models
    assert ex._accuracies(X, np.array([1, 0, 1]), coefs, np.array([0, 1])) == pytest.approx([1.0, 1 / 3])
    rows = []
    for rep, jitter in enumerate((-0.005, 0.0, 0.005)):
        base = dict(n_parties=10, repeat=rep, noise=ex.DP_NOISE)
        rows += [
            dict(base, method="batch", inv_epsilon=np.nan, accuracy=0.9 + jitter, noise_norm=0.0, ws_norm=1.0),
            dict(base, method="indiv", inv_epsilon=np.nan, accuracy=0.5 + jitter, noise_norm=0.0, ws_norm=np.nan),
        ]
        for m, acc0, acc1 in (("vote", 0.8, 0.2), ("soft", 0.76, 0.6), ("avg", 0.67, 0.4)):
            rows.append(dict(base, method=m, inv_epsilon=0.0, accuracy=acc0 + jitter, noise_norm=0.0, ws_norm=1.0))
            for inv in (0.1, 1.0):
                for acc in (acc1 - 0.01, acc1 + 0.01):
                    rows.append(
                        dict(base, method=m, inv_epsilon=inv, accuracy=acc + jitter, noise_norm=2.0, ws_norm=1.0)
                    )
    summary = ex.summarize_mpl(pd.DataFrame(rows))
    assert ex.noise_to_signal(summary).to_numpy().max() == pytest.approx(2.0)
    monkeypatch.setenv("DPSTACK_DATA", str(tmp_path))
    message = ex.data_status("har")
    assert "HAR" in message and "X_train.txt" in message and "X_test.txt" in message
    assert str(tmp_path) not in message  # no machine-specific path in notebook outputs


# --- the privacy boundary: what a fitted object carries ----------------------------------------------------


def _small_task(seed=0, M=30, size=10, d=3, n_aux=100):
    rng = np.random.default_rng(seed)
    X = _unit_rows(rng, M * size + n_aux, d) * 0.9
    y = (X[:, 0] + 0.3 * rng.normal(size=X.shape[0]) > 0).astype(int)
    parties = np.repeat(np.arange(M), size)
    return X[: M * size], y[: M * size], parties, X[M * size :]


def test_coef_and_noise_norm_tell_neighbouring_datasets_apart_only_with_diagnostics():
    """The attack of the privacy review on "soft": knowing every party but one, compute w_s(D) and w_s(D')
    and keep the one whose distance to the released coef_ equals the noise norm.

    With diagnostics the object tells the two neighbouring datasets apart every time (ε = 1 allows at most
    e/(1 + e) = 73 %); the default object carries no noise norm, no w_s, no local model to compare with.
    """
    X, y, parties, X_aux = _small_task()
    Xp, yp = X.copy(), y.copy()
    yp[parties == 0] = 1 - y[parties == 0]  # replace party 0's data (its labels flip)
    params = dict(lam=1e-2, classes=[0, 1])
    w_s = [
        MultipartyPrivateClassifier("soft", epsilon=np.inf, **params).fit(Xc, yc, parties, X_aux).coef_
        for Xc, yc in ((X, y), (Xp, yp))
    ]
    assert np.linalg.norm(w_s[0] - w_s[1]) > 0
    wins = 0
    for seed in range(20):
        for truth, (Xc, yc) in enumerate(((X, y), (Xp, yp))):
            est = MultipartyPrivateClassifier("soft", epsilon=1.0, random_state=seed, diagnostics=True, **params).fit(
                Xc, yc, parties, X_aux
            )
            guesses = [abs(np.linalg.norm(est.coef_ - w) - est.diagnostics_.noise_norm) for w in w_s]
            wins += int(np.argmin(guesses) == truth)
    assert wins == 40
    default = MultipartyPrivateClassifier("soft", epsilon=1.0, random_state=0, **params).fit(X, y, parties, X_aux)
    leaks = {
        "noise_norm_",
        "unperturbed_coef_",
        "local_coefs_",
        "targets_",
        "n_iter_",
        "party_sizes_",
        "diagnostics_",
        "_local_models",
        "_shared_cache",
    }
    assert not leaks & set(vars(default))


@pytest.mark.parametrize("method", ["soft", "vote", "avg", "batch", "indiv"])
def test_default_object_releases_only_its_release(method):
    X, y, parties, X_aux = _small_task()
    est = MultipartyPrivateClassifier(method, epsilon=1.0, lam=1e-2, random_state=0, classes=[0, 1]).fit(
        X, y, parties, X_aux
    )
    released = set(est._release_attributes) - {"local_estimators_"}
    released -= {"coef_"} if method == "indiv" else {"local_coefs_"}
    assert set(vars(est)) == set(est.get_params()) | released  # no private (underscore) state either
    diag = MultipartyPrivateClassifier(
        method, epsilon=1.0, lam=1e-2, random_state=0, classes=[0, 1], diagnostics=True
    ).fit(X, y, parties, X_aux)
    assert set(vars(diag)) - set(vars(est)) == {"diagnostics_"}
    assert diag.privacy_.total() == np.inf and not diag.privacy_.is_private
    if method != "indiv":
        np.testing.assert_array_equal(diag.coef_, est.coef_)
        assert diag.diagnostics_.noise_norm == pytest.approx(
            np.linalg.norm(diag.coef_ - diag.diagnostics_.unperturbed_coef)
        )
    if method in ("soft", "vote", "avg"):
        assert est.privacy_.total() == 1.0 and est.privacy_.is_private
        assert diag.diagnostics_.local_coefs.shape == (30, 1, 3)
        # the local models are read from the diagnostics only
        assert diag.local_vote_counts(X_aux).sum(axis=1).tolist() == [30.0] * len(X_aux)
        with pytest.raises(ValueError, match="diagnostics=True"):
            est.local_vote_counts(X_aux)
        with pytest.raises(ValueError, match="diagnostics=True"):
            est.local_predict_index(X_aux)
        # release_noise reads only public quantities (the shape of coef_ and the sensitivity)
        assert est.release_noise(0.5, 0, size=3).shape == (3, 1, 3)
    else:  # non-private references are labelled so
        assert est.privacy_.total() == np.inf
        assert [e.mechanism for e in est.privacy_.outside_steps] == [f"{method} (non-private reference)"]
    diag.set_params(diagnostics=False).fit(X, y, parties, X_aux)  # a refit drops stale diagnostics
    assert set(vars(diag)) == set(vars(est))


# --- the label set is public -----------------------------------------------------------------------------


def test_public_classes_fix_the_shape_and_sensitivity_when_the_party_holding_a_class_is_replaced():
    rng = np.random.default_rng(5)
    M, size, d = 21, 6, 4
    X = _unit_rows(rng, M * size + 60, d) * 0.9
    parties = np.repeat(np.arange(M), size)
    y = (X[: M * size, 0] > 0).astype(int)
    y[parties == 0] = 2  # only party 0 holds class 2
    yp = y.copy()
    yp[parties == 0] = rng.integers(0, 2, size=size)  # its replacement holds classes 0 and 1
    X, X_aux = X[: M * size], X[M * size :]
    for method in ("soft", "vote", "avg", "batch"):
        fits = [
            MultipartyPrivateClassifier(method, epsilon=1.0, lam=1e-2, random_state=0, classes=[0, 1, 2]).fit(
                X, labels, parties, X_aux
            )
            for labels in (y, yp)
        ]
        assert fits[0].coef_.shape == fits[1].coef_.shape == (3, d)
        expected = 0.0 if method == "batch" else mpl_sensitivity(method, M, 3, 1e-2)
        assert fits[0].sensitivity_ == fits[1].sensitivity_ == expected
        assert list(fits[1].classes_) == [0, 1, 2]
    # a class no party holds, and parties that saw one class: no error, same shape
    labels = np.where(X[:, 0] > 0, "a", "b")
    labels[parties < 5] = "a"  # five parties saw one class; no party holds "c"
    one = MultipartyPrivateClassifier("soft", epsilon=np.inf, lam=1e-2, classes=["a", "b", "c"]).fit(
        X, labels, parties, X_aux
    )
    assert one.coef_.shape == (3, d) and one.sensitivity_ == mpl_sensitivity("soft", M, 3, 1e-2)
    assert np.mean(one.predict(X_aux) == np.where(X_aux[:, 0] > 0, "a", "b")) > 0.8
    binary = MultipartyPrivateClassifier("vote", lam=1e-2, classes=[0, 1]).fit(X, np.ones(len(X), int), parties, X_aux)
    assert binary.coef_.shape == (1, d) and binary.sensitivity_ == pytest.approx(2 / 1e-2)


def test_classes_from_the_data_warn_and_make_the_ledger_infinite():
    from dpstack.base import PrivacyLeakWarning

    X, y, parties, X_aux = _small_task()
    with pytest.warns(PrivacyLeakWarning, match="classes=None"):
        est = MultipartyPrivateClassifier("soft", epsilon=0.5, lam=1e-2).fit(X, y, parties, X_aux)
    assert est.privacy_.total() == np.inf and est.privacy_.mechanism_total() == 0.5
    assert [e.mechanism for e in est.privacy_.outside_steps] == ["label set read from the data (classes=None)"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        MultipartyPrivateClassifier("soft", epsilon=0.5, lam=1e-2, classes=[0, 1]).fit(X, y, parties, X_aux)
    with pytest.raises(ValueError, match="not in classes"):
        MultipartyPrivateClassifier("soft", classes=[0, 1]).fit(X, y + 1, parties, X_aux)
    with pytest.raises(ValueError, match="at least two labels"):
        MultipartyPrivateClassifier("soft", classes=[1]).fit(X, np.ones_like(y), parties, X_aux)
    with pytest.raises(ValueError, match="one class"):
        MultipartyPrivateClassifier("soft").fit(X, np.ones_like(y), parties, X_aux)


# --- bad input and state ---------------------------------------------------------------------------------


def test_labels_must_be_class_labels():
    X, y, parties, X_aux = _small_task()
    y_nan = y.astype(float)
    y_nan[3] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):
        MultipartyPrivateClassifier("soft").fit(X, y_nan, parties, X_aux)
    with pytest.raises(ValueError, match="y must hold class labels.*continuous"):
        MultipartyPrivateClassifier("soft").fit(X, np.random.default_rng(0).random(len(y)), parties, X_aux)
    with pytest.raises(ValueError, match="y must be 1-D"):
        MultipartyPrivateClassifier("soft").fit(X, y[:-1], parties, X_aux)


@pytest.mark.filterwarnings("ignore::dpstack.base.PrivacyLeakWarning")
def test_sparse_input_is_refused_with_a_clear_message():
    from scipy import sparse

    X, y, parties, X_aux = _small_task()
    with pytest.raises(TypeError, match="X is a sparse matrix.*dense"):
        MultipartyPrivateClassifier("soft").fit(sparse.csr_matrix(X), y, parties, X_aux)
    with pytest.raises(TypeError, match="X_aux is a sparse matrix.*dense"):
        MultipartyPrivateClassifier("soft").fit(X, y, parties, sparse.csr_matrix(X_aux))
    est = MultipartyPrivateClassifier("soft").fit(X, y, parties, X_aux)
    with pytest.raises(TypeError, match="X is a sparse matrix"):
        est.predict(sparse.csr_matrix(X_aux))


@pytest.mark.filterwarnings("ignore::dpstack.base.PrivacyLeakWarning")
def test_predict_with_the_wrong_number_of_features_names_it():
    X, y, parties, X_aux = _small_task()
    for method in ("soft", "indiv"):
        est = MultipartyPrivateClassifier(method).fit(X, y, parties, X_aux)
        with pytest.raises(ValueError, match="X has 2 features, but MultipartyPrivateClassifier is expecting 3"):
            est.score(X_aux[:, :2], np.zeros(len(X_aux), int))


@pytest.mark.filterwarnings("ignore::dpstack.base.PrivacyLeakWarning")
def test_party_ids_are_relabelled_without_a_table_of_the_largest_id():
    import tracemalloc

    X, y, parties, X_aux = _small_task()
    ref = MultipartyPrivateClassifier("soft", random_state=0).fit(X, y, parties, X_aux)
    # any ids, in the same order, give the same fit: large integers and strings
    for ids in (parties * 10**9, np.array([f"hospital-{p:03d}" for p in parties])):
        est = MultipartyPrivateClassifier("soft", random_state=0).fit(X, y, ids, X_aux)
        np.testing.assert_array_equal(est.coef_, ref.coef_)
    lone = parties.copy()
    lone[0] = 10**9  # a single party id of 1e9: a bincount over ids would allocate 8 GB
    tracemalloc.start()
    try:
        est = MultipartyPrivateClassifier("soft").fit(X, y, lone, X_aux)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert est.n_parties_ == 31 and peak < 50e6
    with pytest.raises(ValueError, match="parties must hold integer or string"):
        MultipartyPrivateClassifier("soft").fit(X, y, parties + 0.5, X_aux)


@pytest.mark.filterwarnings("ignore::dpstack.base.PrivacyLeakWarning")
def test_a_failed_refit_leaves_the_earlier_fit_intact():
    X, y, parties, X_aux = _small_task()
    est = MultipartyPrivateClassifier("soft", random_state=0).fit(X, y, parties, X_aux)
    before = dict(vars(est))
    pred = est.predict(X_aux)
    # other labels and other parties, then a bad X_aux: nothing of the new call may stick
    with pytest.raises(ValueError, match="X_aux has 2 features"):
        est.fit(X, y % 3 + parties % 2, parties // 2, X_aux[:, :2])
    assert vars(est) == before
    assert list(est.classes_) == [0, 1] and est.n_parties_ == 30
    np.testing.assert_array_equal(est.predict(X_aux), pred)


# --- the release ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["soft", "vote", "avg", "batch", "indiv"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_release_round_trip(method, n_classes, tmp_path):
    from dpstack.release import load_release, save_release

    X, y, parties, X_aux = _small_task()
    labels = np.array(["ham", "spam", "eggs"])[:n_classes]
    if n_classes == 3:
        y = np.where(X[:, 1] > 0.3, 2, y)
    est = MultipartyPrivateClassifier(
        method, epsilon=2.0, lam=1e-2, random_state=0, classes=labels, diagnostics=True
    ).fit(X, labels[y], parties, X_aux)
    path = save_release(est, tmp_path / "mpl.json")
    text = path.read_text()
    assert "diagnostics_" not in text and "unperturbed" not in text and "noise_norm" not in text
    model = load_release(path)
    assert type(model) is MultipartyPrivateClassifier and model.method == method
    assert not hasattr(model, "diagnostics_") and model.random_state is None
    # the exported ledger is the release's: the diagnostics entry is dropped, a reference stays non-private
    assert [e for e in model.privacy_.entries] == [e for e in est.privacy_.entries if e.mechanism != DIAGNOSTICS]
    assert model.privacy_.is_private == (method in ("soft", "vote", "avg"))
    assert model.score(X_aux, labels[y[: len(X_aux)]]) == est.score(X_aux, labels[y[: len(X_aux)]])
    if method == "indiv":
        np.testing.assert_array_equal(model.local_predict_index(X_aux), est.local_predict_index(X_aux))
        assert "coef_" not in text
    else:
        np.testing.assert_array_equal(model.decision_function(X_aux), est.decision_function(X_aux))
        np.testing.assert_array_equal(model.predict(X_aux), est.predict(X_aux))
        assert set(model.predict(X_aux)) <= set(labels)
        assert "local_coefs_" not in text
    assert model.sensitivity_ == est.sensitivity_ and model.noise_scale_ == est.noise_scale_


def test_indiv_with_local_estimators_cannot_be_exported(tmp_path):
    from dpstack.release import save_release

    X, y, parties, X_aux = _small_task()
    est = MultipartyPrivateClassifier("indiv", classes=[0, 1], local_estimator=DecisionTreeClassifier(max_depth=1))
    est.fit(X, y, parties)
    assert 0.5 < est.score(X_aux, (X_aux[:, 0] > 0).astype(int)) <= 1.0
    with pytest.raises(TypeError, match="cannot export a value of type"):
        save_release(est, tmp_path / "indiv.json")


def test_experiment_trial_analyses_diagnostics_and_its_non_private_points_are_the_release(monkeypatch):
    """mpl_trial reads w_s from diagnostics (an analysis) and passes the task's public label set."""
    import pandas as pd

    from dpstack.base import PrivacyLeakWarning
    from dpstack.companion.papers.mpl import grids as ex

    X, y = make_synthetic_multiparty(2000, 5, random_state=1)
    monkeypatch.setattr(ex, "load_mpl_dataset", lambda name: (X[:1000], y[:1000], X[1000:], y[1000:]))
    monkeypatch.setitem(ex.DATASETS, "toy", dict(n_parties=(30,), party_size=10, n_aux=200, n_components=None))
    monkeypatch.setitem(ex.CLASSES, "toy", (0, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        df = pd.DataFrame(
            ex.mpl_trial("toy", 30, 10, 200, [0.0, 1.0], 4, lam=1e-2, seed_sequence=np.random.SeedSequence(3))
        )
    split_ss = np.random.SeedSequence(3).spawn(3)[0]
    aux, priv, parties = split_auxiliary_and_parties(1000, 30, 10, 200, np.random.default_rng(split_ss))
    for method in ("soft", "vote", "avg"):
        release = MultipartyPrivateClassifier(method, epsilon=np.inf, lam=1e-2, classes=[0, 1]).fit(
            X[priv], y[priv], parties, X[aux]
        )
        row = df[(df["method"] == method) & (df["inv_epsilon"] == 0.0)].iloc[0]
        assert row["accuracy"] == release.score(X[1000:], y[1000:])
        assert row["ws_norm"] == pytest.approx(np.linalg.norm(release.coef_))
    assert (df[df["inv_epsilon"] == 1.0]["noise_norm"] > 0).all()


@pytest.mark.parametrize(
    "check",
    [
        "check_no_attributes_set_in_init",
        "check_parameters_default_constructible",
        "check_get_params_invariance",
        "check_set_params",
    ],
)
def test_scikit_learn_parameter_conventions(check):
    # fit takes the party ids as a third argument, so check_estimator as a whole does not apply
    from sklearn.utils import estimator_checks

    getattr(estimator_checks, check)(
        "MultipartyPrivateClassifier", MultipartyPrivateClassifier(classes=[0, 1], diagnostics=True)
    )
