"""PPTL-FS / PST-H and SimComb (dpstack.transfer): transfer centre, streams, ledger, errors."""
import numpy as np
import pytest
from sklearn.base import clone

from dpstack import PrivateLogisticRegression, PrivateTransferStacking, SimComb, bound_rows
from dpstack.base import PrivacyLeakWarning
from dpstack.stacking import PRIVATE_MAX_STEP
from dpstack.theory import domain_guarantees
from dpstack.transfer import transfer_centre


def _domain(n, seed, d=10, flip=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    beta = np.r_[np.linspace(3, 1, 4), np.zeros(d - 4)] * (-1 if flip else 1)
    return X, (X @ beta * np.sqrt(d) + rng.logistic(size=n) > 0).astype(int)


def test_transfer_centre_is_one_minus_eta_times_w_s():
    w = np.array([1.0, -2.0, 4.0])
    np.testing.assert_allclose(transfer_centre(w, 0.25), 0.75 * w)
    with pytest.raises(ValueError, match="eta"):
        transfer_centre(w, 1.5)


def test_pptl_fs_shapes_ledger_and_guarantees():
    Xs, ys = _domain(600, 0)
    Xt, yt = _domain(300, 1)
    m = PrivateTransferStacking(epsilon_source=2.0, epsilon_target=0.5, n_groups=3, random_state=0, classes=[0, 1])
    m.fit(Xt, yt, X_source=Xs, y_source=ys)
    assert m.decision_function_low(Xt).shape == (300, 3)
    assert set(m.decision_functions(Xt)) == {"C-0", "C-1", "C-2", "C-mv", "C-wmv", "C-hl"}
    assert m.predict_proba(Xt).shape == (300, 2)
    assert m.privacy_.per_part() == {"D_s": 2.0, "D_t/D_t0": 0.5, "D_t/D_t1": 0.5}
    assert domain_guarantees(m.privacy_) == {"source": 2.0, "target": 0.5}
    assert m.source_.calibration_.epsilon == 2.0 and m.low_level_.calibration_.epsilon == 0.5
    assert m.high_level_.calibration_.epsilon == 0.5
    # D_t0 and D_t1 split the target (which rows is a diagnostic, not part of the release)
    assert not hasattr(m, "diagnostics_") and not hasattr(m, "low_index_")
    d = clone(m).set_params(diagnostics=True).fit(Xt, yt, X_source=Xs, y_source=ys).diagnostics_
    assert np.intersect1d(d.low_index, d.high_index).size == 0
    assert np.union1d(d.low_index, d.high_index).size == 300


def test_target_blocks_are_centred_at_the_source_blocks():
    Xs, ys = _domain(600, 0)
    Xt, yt = _domain(300, 1)
    m = PrivateTransferStacking(n_groups=2, eta=0.3, random_state=0, classes=[0, 1]).fit(Xt, yt, X_source=Xs, y_source=ys)
    w0 = np.concatenate([0.7 * w for w in m.source_.block_coefs_])
    np.testing.assert_allclose(m.low_level_.w0, w0)
    # same groups and bounds on both sides
    assert [list(g) for g in m.source_.groups_] == [list(g) for g in m.low_level_.groups_]
    np.testing.assert_allclose(m.source_.importance_, m.low_level_.importance_)


def test_eta_one_ignores_the_source_and_eta_zero_follows_it():
    Xt, yt = _domain(300, 1)
    sources = [_domain(600, 0), _domain(600, 5, flip=True)]
    fits = [PrivateTransferStacking(n_groups=2, eta=1.0, random_state=3, classes=[0, 1]).fit(Xt, yt, X_source=Xs, y_source=ys)
            for Xs, ys in sources]
    np.testing.assert_allclose(fits[0].low_level_.coef_, fits[1].low_level_.coef_)
    # η = 0 with a large λ_t and no target noise: the target blocks stay at the source blocks
    Xs, ys = sources[1]
    m = PrivateTransferStacking(epsilon_target=np.inf, n_groups=2, eta=0.0, lam=1e4, random_state=3,
                                classes=[0, 1])
    m.fit(Xt, yt, X_source=Xs, y_source=ys)
    np.testing.assert_allclose(m.low_level_.coef_, m.source_.coef_, atol=1e-4)


def test_fit_source_then_fit_equals_fit_with_source_and_is_deterministic():
    Xs, ys = _domain(600, 0)
    Xt, yt = _domain(300, 1)
    a = PrivateTransferStacking(feature_importance=np.arange(10, 0, -1.0), random_state=4, classes=[0, 1])
    a.fit_source(Xs, ys).fit(Xt, yt)
    b = clone(a).fit(Xt, yt, X_source=Xs, y_source=ys)
    np.testing.assert_array_equal(a.decision_function(Xt), b.decision_function(Xt))
    c = clone(a).set_params(random_state=5).fit(Xt, yt, X_source=Xs, y_source=ys)
    assert not np.allclose(a.decision_function(Xt), c.decision_function(Xt))


def test_source_and_target_noise_streams_are_independent():
    # Same data on both sides, η = 1 and equal λ: the two PLRs solve the same problem,
    # so they can differ only through their noise. Equal outputs would mean the target's
    # noise is a copy of the source's.
    X, y = _domain(400, 0)
    sc = SimComb(eta=1.0, random_state=0, classes=[0, 1]).fit(X, y, X_source=X, y_source=y)
    assert not np.allclose(sc.source_.w_, sc.target_.w_)


@pytest.mark.parametrize("kwargs, call, message", [
    (dict(), "no_source", "fit the source first"),
    (dict(eta=-0.1), "fit", "eta"),
    (dict(n_groups=11), "fit", "cannot exceed"),
    (dict(groups=[[0, 1], [1, 2]]), "fit", "disjoint"),
    (dict(groups=[[0, 1], [2]], group_importance=[0.2, 0.7]), "fit", "sum to 1"),
    (dict(), "mismatch", "features"),
])
def test_transfer_errors(kwargs, call, message):
    Xs, ys = _domain(300, 0)
    Xt, yt = _domain(200, 1)
    m = PrivateTransferStacking(random_state=0, classes=[0, 1], **kwargs)
    with pytest.raises(ValueError, match=message):
        if call == "no_source":
            m.fit(Xt, yt)
        elif call == "fit":
            m.fit(Xt, yt, X_source=Xs, y_source=ys)
        else:
            m.fit_source(Xs, ys).fit(Xt[:, :9], yt)


def test_simcomb_ledger_direct_and_sourced():
    Xs, ys = _domain(600, 0)
    Xt, yt = _domain(300, 1)
    sc = SimComb(epsilon_source=1.0, epsilon_target=4.0, eta=0.2, random_state=0, classes=[0, 1]).fit(Xt, yt, X_source=Xs, y_source=ys)
    assert sc.privacy_.per_part() == {"D_s": 1.0, "D_t": 4.0}
    assert domain_guarantees(sc.privacy_) == {"source": 1.0, "target": 4.0}
    np.testing.assert_allclose(sc.target_.w0, 0.8 * sc.source_.w_)
    # SourceD is the source model on the target rows
    np.testing.assert_allclose(sc.decision_function(Xt, model="source"),
                               sc.source_.decision_function(bound_rows(Xt)))
    # Direct: with η = 1 the target PLR is plain PLR on the target (same problem, its own noise)
    direct = SimComb(epsilon_target=np.inf, eta=1.0, random_state=0, classes=[0, 1]).fit(Xt, yt, X_source=Xs, y_source=ys)
    plr = PrivateLogisticRegression(epsilon=np.inf, classes=[0, 1]).fit(bound_rows(Xt), yt)
    np.testing.assert_allclose(direct.target_.w_, plr.w_, atol=1e-8)
    with pytest.raises(ValueError, match="model"):
        sc.decision_function(Xt, model="both")


def test_private_max_scaling_is_flagged_in_both_transfer_methods():
    Xs, ys = _domain(300, 0)
    Xt, yt = _domain(200, 1)
    for est in (PrivateTransferStacking(row_bound="private_max", random_state=0, classes=[0, 1]),
                SimComb(row_bound="private_max", random_state=0, classes=[0, 1])):
        # one PrivacyLeakWarning per domain (the source's scaling and the target's)
        with pytest.warns(PrivacyLeakWarning, match="NOT differentially private") as record:
            est.fit(Xt, yt, X_source=Xs, y_source=ys)
        assert sum(issubclass(w.category, PrivacyLeakWarning) for w in record) == 2
        assert domain_guarantees(est.privacy_) == {"source": np.inf, "target": np.inf}
        assert {(e.mechanism, e.part) for e in est.privacy_.outside_steps} == {(PRIVATE_MAX_STEP, "D_s"),
                                                                             (PRIVATE_MAX_STEP, "D_t")}
        assert est.privacy_.mechanism_total() == 1.0
    # with a public bound the same fits keep their budgets
    ok = SimComb(row_bound="normalize", random_state=0, classes=[0, 1]).fit(Xt, yt, X_source=Xs, y_source=ys)
    assert domain_guarantees(ok.privacy_) == {"source": 1.0, "target": 1.0}
