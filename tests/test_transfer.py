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
    m = PrivateTransferStacking(n_groups=2, eta=0.3, random_state=0, classes=[0, 1]).fit(
        Xt, yt, X_source=Xs, y_source=ys
    )
    w0 = np.concatenate([0.7 * w for w in m.source_.block_coefs_])
    np.testing.assert_allclose(m.low_level_.w0, w0)
    # same groups and bounds on both sides
    assert [list(g) for g in m.source_.groups_] == [list(g) for g in m.low_level_.groups_]
    np.testing.assert_allclose(m.source_.importance_, m.low_level_.importance_)


def test_eta_one_ignores_the_source_and_eta_zero_follows_it():
    Xt, yt = _domain(300, 1)
    sources = [_domain(600, 0), _domain(600, 5, flip=True)]
    fits = [
        PrivateTransferStacking(n_groups=2, eta=1.0, random_state=3, classes=[0, 1]).fit(
            Xt, yt, X_source=Xs, y_source=ys
        )
        for Xs, ys in sources
    ]
    np.testing.assert_allclose(fits[0].low_level_.coef_, fits[1].low_level_.coef_)
    # η = 0 with a large λ_t and no target noise: the target blocks stay at the source blocks
    Xs, ys = sources[1]
    m = PrivateTransferStacking(epsilon_target=np.inf, n_groups=2, eta=0.0, lam=1e4, random_state=3, classes=[0, 1])
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


@pytest.mark.parametrize(
    "kwargs, call, message",
    [
        (dict(), "no_source", "fit the source first"),
        (dict(eta=-0.1), "fit", "eta"),
        (dict(n_groups=11), "fit", "cannot exceed"),
        (dict(groups=[[0, 1], [1, 2]]), "fit", "disjoint"),
        (dict(groups=[[0, 1], [2]], group_importance=[0.2, 0.7]), "fit", "sum to 1"),
        (dict(), "mismatch", "features"),
        (dict(), "no_y_source", "X_source and y_source must be given together"),
    ],
)
def test_transfer_errors(kwargs, call, message):
    Xs, ys = _domain(300, 0)
    Xt, yt = _domain(200, 1)
    m = PrivateTransferStacking(random_state=0, classes=[0, 1], **kwargs)
    with pytest.raises(ValueError, match=message):
        if call == "no_source":
            m.fit(Xt, yt)
        elif call == "fit":
            m.fit(Xt, yt, X_source=Xs, y_source=ys)
        elif call == "no_y_source":
            m.fit(Xt, yt, X_source=Xs)
        else:
            m.fit_source(Xs, ys).fit(Xt[:, :9], yt)


def test_simcomb_ledger_direct_and_sourced():
    Xs, ys = _domain(600, 0)
    Xt, yt = _domain(300, 1)
    sc = SimComb(epsilon_source=1.0, epsilon_target=4.0, eta=0.2, random_state=0, classes=[0, 1]).fit(
        Xt, yt, X_source=Xs, y_source=ys
    )
    assert sc.privacy_.per_part() == {"D_s": 1.0, "D_t": 4.0}
    assert domain_guarantees(sc.privacy_) == {"source": 1.0, "target": 4.0}
    np.testing.assert_allclose(sc.target_.w0, 0.8 * sc.source_.w_)
    # SourceD is the source model on the target rows
    np.testing.assert_allclose(sc.decision_function(Xt, model="source"), sc.source_.decision_function(bound_rows(Xt)))
    # Direct: with η = 1 the target PLR is plain PLR on the target (same problem, its own noise)
    direct = SimComb(epsilon_target=np.inf, eta=1.0, random_state=0, classes=[0, 1]).fit(
        Xt, yt, X_source=Xs, y_source=ys
    )
    plr = PrivateLogisticRegression(epsilon=np.inf, classes=[0, 1]).fit(bound_rows(Xt), yt)
    np.testing.assert_allclose(direct.target_.w_, plr.w_, atol=1e-8)
    with pytest.raises(ValueError, match="model"):
        sc.decision_function(Xt, model="both")


def test_private_max_scaling_is_flagged_in_both_transfer_methods():
    Xs, ys = _domain(300, 0)
    Xt, yt = _domain(200, 1)
    for est in (
        PrivateTransferStacking(row_bound="private_max", random_state=0, classes=[0, 1]),
        SimComb(row_bound="private_max", random_state=0, classes=[0, 1]),
    ):
        # one PrivacyLeakWarning per domain (the source's scaling and the target's)
        with pytest.warns(PrivacyLeakWarning, match="NOT differentially private") as record:
            est.fit(Xt, yt, X_source=Xs, y_source=ys)
        assert sum(issubclass(w.category, PrivacyLeakWarning) for w in record) == 2
        assert domain_guarantees(est.privacy_) == {"source": np.inf, "target": np.inf}
        assert {(e.mechanism, e.part) for e in est.privacy_.outside_steps} == {
            (PRIVATE_MAX_STEP, "D_s"),
            (PRIVATE_MAX_STEP, "D_t"),
        }
        assert est.privacy_.mechanism_total() == 1.0
    # with a public bound the same fits keep their budgets
    ok = SimComb(row_bound="normalize", random_state=0, classes=[0, 1]).fit(Xt, yt, X_source=Xs, y_source=ys)
    assert domain_guarantees(ok.privacy_) == {"source": 1.0, "target": 1.0}


# --- the privacy boundary ---------------------------------------------------------------------------


def _fitted_names(est):
    return {k for k in vars(est) if k.endswith("_") and not k.startswith("_")}


@pytest.mark.parametrize("cls", [PrivateTransferStacking, SimComb])
def test_default_object_carries_only_its_release(cls):
    Xs, ys = _domain(600, 0)
    Xt, yt = _domain(300, 1)
    kw = dict(n_groups=3) if cls is PrivateTransferStacking else {}
    est = cls(random_state=0, classes=[0, 1], **kw).fit(Xt, yt, X_source=Xs, y_source=ys)
    assert _fitted_names(est) == set(est._release_attributes)
    assert est.block_max_ is None and est.source_block_max_ is None
    assert est.privacy_.per_part() == (
        {"D_s": 1.0, "D_t/D_t0": 1.0, "D_t/D_t1": 1.0} if kw else {"D_s": 1.0, "D_t": 1.0}
    )
    diag = clone(est).set_params(diagnostics=True).fit(Xt, yt, X_source=Xs, y_source=ys)
    assert _fitted_names(diag) - _fitted_names(est) == {"diagnostics_"}
    np.testing.assert_array_equal(diag.decision_function(Xt), est.decision_function(Xt))
    assert domain_guarantees(diag.privacy_) == {"source": np.inf, "target": np.inf}
    assert diag.privacy_.mechanism_total() == 1.0
    d = diag.diagnostics_
    assert d.source is not None and (d.target.noise_norm if not kw else d.high_level.noise_norm) > 0
    if kw:
        assert np.intersect1d(d.low_index, d.high_index).size == 0 and d.low_level.noise_norms.shape == (3,)


@pytest.mark.parametrize("cls", [PrivateTransferStacking, SimComb])
def test_label_set_is_resolved_once_at_the_source_and_recorded(cls):
    Xs, ys = _domain(600, 0)
    Xt, yt = _domain(300, 1)
    with pytest.warns(PrivacyLeakWarning, match="classes=None") as record:
        est = cls(random_state=0).fit(Xt, yt, X_source=Xs, y_source=ys)
    assert sum(issubclass(w.category, PrivacyLeakWarning) for w in record) == 1
    assert [(e.mechanism, e.part) for e in est.privacy_.outside_steps] == [
        ("label set read from the data (classes=None)", "D_s")
    ]
    assert domain_guarantees(est.privacy_) == {"source": np.inf, "target": 1.0}


@pytest.mark.parametrize("cls", [PrivateTransferStacking, SimComb])
def test_a_target_with_one_class_keeps_the_output_shape(cls):
    Xs, ys = _domain(600, 0)
    Xt, _ = _domain(300, 1)
    labels = np.array(["no", "yes"])
    est = cls(random_state=0, classes=["no", "yes"]).fit(Xt, np.full(300, "yes"), X_source=Xs, y_source=labels[ys])
    assert list(est.classes_) == ["no", "yes"] and est.predict_proba(Xt).shape == (300, 2)
    assert set(est.predict(Xt)) <= {"no", "yes"}


# --- composition hook -----------------------------------------------------------------------------


def test_target_level_1_is_post_processing_of_the_level_0_release():
    Xs, ys = _domain(600, 0)
    Xt, yt = _domain(300, 1)
    params = dict(n_groups=3, random_state=2, classes=[0, 1])
    full = PrivateTransferStacking(**params, diagnostics=True).fit(Xt, yt, X_source=Xs, y_source=ys)
    base = PrivateTransferStacking(**params).fit_source(Xs, ys)
    release = clone(base).fit(Xt, yt, X_source=Xs, y_source=ys).low_level_
    in_low, in_high = int(full.diagnostics_.low_index[0]), int(full.diagnostics_.high_index[0])

    def high(Xc, yc):
        m = PrivateTransferStacking(**params).fit_source(Xs, ys)
        return m.fit(Xc, yc, low_level=release).high_level_.w_

    np.testing.assert_array_equal(high(Xt, yt), full.high_level_.w_)
    Xp, yp = Xt.copy(), yt.copy()
    Xp[in_low], yp[in_low] = -Xt[in_low] * 5, 1 - yt[in_low]
    np.testing.assert_array_equal(high(Xp, yp), full.high_level_.w_)
    Xq, yq = Xt.copy(), yt.copy()
    Xq[in_high], yq[in_high] = -Xt[in_high] * 5, 1 - yt[in_high]
    assert not np.allclose(high(Xq, yq), full.high_level_.w_)


# --- state that survives a bad call ---------------------------------------------------------------


def test_wrong_target_features_keep_the_source_and_the_refit_works():
    Xs, ys = _domain(600, 0)
    Xt, yt = _domain(300, 1)
    m = PrivateTransferStacking(n_groups=2, random_state=0, classes=[0, 1]).fit_source(Xs, ys)
    source, ledger = m.source_, m.source_privacy_
    with pytest.raises(ValueError, match="9 features"):
        m.fit(Xt[:, :9], yt)
    assert m.n_features_in_ == 10 and m.source_ is source and not hasattr(m, "high_level_")
    m.fit(Xt, yt)  # no second fit_source: ε_s is spent once
    assert m.source_ is source and m.source_privacy_ is ledger
    fresh = clone(m).fit(Xt, yt, X_source=Xs, y_source=ys)
    np.testing.assert_array_equal(m.decision_function(Xt), fresh.decision_function(Xt))


@pytest.mark.parametrize("cls", [PrivateTransferStacking, SimComb])
def test_refit_with_other_labels_leaves_the_fit_consistent(cls):
    Xs, ys = _domain(600, 0)
    Xt, yt = _domain(300, 1)
    est = cls(random_state=0, classes=[0, 1]).fit(Xt, yt, X_source=Xs, y_source=ys)
    before = {k: vars(est)[k] for k in _fitted_names(est)}
    with pytest.raises(ValueError, match="not in classes"):
        est.fit(Xt, yt + 1)
    assert all(vars(est)[k] is v for k, v in before.items()) and _fitted_names(est) == before.keys()
    assert list(est.classes_) == [0, 1] and set(est.predict(Xt)) <= {0, 1}
    with pytest.raises(ValueError, match="differs from the classes_ fixed at fit_source"):
        est.set_params(classes=["a", "b"]).fit(Xt, yt)
    assert all(vars(est)[k] is v for k, v in before.items())


def test_simcomb_before_fit_raises_not_fitted():
    from sklearn.exceptions import NotFittedError

    X, _ = _domain(20, 0)
    for call in ("predict", "predict_proba", "decision_function"):
        with pytest.raises(NotFittedError):
            getattr(SimComb(), call)(X)
    Xs, ys = _domain(300, 0)
    source_only = SimComb(classes=[0, 1], random_state=0).fit_source(Xs, ys)
    with pytest.raises(NotFittedError):
        source_only.predict(X)
    assert source_only.predict(X, model="source").shape == (20,)


@pytest.mark.parametrize(
    "cls, kwargs, exc, message",
    [
        (PrivateTransferStacking, dict(lam="x"), TypeError, "'lam' parameter of .* must be"),
        (PrivateTransferStacking, dict(lam=[0.1, 0.1]), ValueError, "lam has 2 entries but there are K = 5"),
        (PrivateTransferStacking, dict(lam_source=[0.1, 0.1]), ValueError, "lam_source has 2 entries"),
        (PrivateTransferStacking, dict(eta=[0.1, 0.1]), ValueError, "eta has 2 entries"),
        (PrivateTransferStacking, dict(row_bound="private_max", row_scale="a"), TypeError, "row_scale"),
        (PrivateTransferStacking, dict(low_fraction=0.995), ValueError, "low_fraction=0.995 leaves too few"),
        (SimComb, dict(lam="x"), TypeError, "'lam' parameter of .* must be"),
        (SimComb, dict(row_bound="private_max", row_scale="a"), TypeError, "row_scale"),
        (SimComb, dict(eta="half"), TypeError, "eta"),
    ],
)
def test_errors_name_the_parameter(cls, kwargs, exc, message):
    Xs, ys = _domain(300, 0)
    Xt, yt = _domain(200, 1)
    with pytest.raises(exc, match=message):
        cls(random_state=0, classes=[0, 1], **kwargs).fit(Xt, yt, X_source=Xs, y_source=ys)


def test_a_new_source_drops_the_target_fitted_on_the_old_one():
    Xs, ys = _domain(300, 0)
    Xt, yt = _domain(200, 1)
    for est in (
        PrivateTransferStacking(n_groups=2, random_state=0, classes=[0, 1]),
        SimComb(random_state=0, classes=[0, 1]),
    ):
        est.fit(Xt, yt, X_source=Xs, y_source=ys).fit_source(Xs[::-1], ys[::-1])
        assert not {"privacy_", "high_level_", "low_level_", "target_"} & _fitted_names(est)


# --- export of the release ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "est",
    [
        PrivateTransferStacking(
            n_groups=3, eta=[0.2, 0.5, 0.9], low_intercept=True, random_state=0, classes=["no", "yes"], diagnostics=True
        ),
        PrivateTransferStacking(
            feature_importance=np.arange(10, 0, -1.0), combiner="vote", random_state=1, classes=["no", "yes"]
        ),
        SimComb(
            eta=0.3, fit_intercept=True, row_bound="normalize", random_state=0, classes=["no", "yes"], diagnostics=True
        ),
    ],
    ids=["PPTL-FS(U)", "PPTL-FS(W) vote", "SimComb"],
)
def test_release_round_trip_predicts_identically(est, tmp_path):
    from dpstack.release import load_release, save_release

    Xs, ys = _domain(600, 0)
    Xt, yt = _domain(300, 1)
    labels = np.array(["no", "yes"])
    est.fit(Xt, labels[yt], X_source=Xs, y_source=labels[ys])
    model = load_release(save_release(est, tmp_path / "t.json"))
    assert type(model) is type(est) and not hasattr(model, "diagnostics_")
    np.testing.assert_array_equal(model.predict(Xt), est.predict(Xt))
    np.testing.assert_array_equal(model.decision_function(Xt), est.decision_function(Xt))
    if isinstance(est, SimComb):
        np.testing.assert_array_equal(
            model.decision_function(Xt, model="source"), est.decision_function(Xt, model="source")
        )
    else:
        np.testing.assert_array_equal(model.decision_function_source(Xt), est.decision_function_source(Xt))
        for name, scores in est.decision_functions(Xt).items():
            np.testing.assert_array_equal(model.decision_functions(Xt)[name], scores)
        for combiner in ("stack", "vote", "weighted_vote", 1):
            np.testing.assert_array_equal(
                model.predict_proba(Xt, combiner=combiner), est.predict_proba(Xt, combiner=combiner)
            )
    assert domain_guarantees(model.privacy_) == {"source": 1.0, "target": 1.0}


@pytest.mark.parametrize("cls", [PrivateTransferStacking, SimComb])
def test_an_exported_source_is_fitted_on_a_target_without_the_source_data(cls, tmp_path):
    # what the source organisation hands over: its release after fit_source alone
    from dpstack.release import load_release, save_release

    Xs, ys = _domain(600, 0)
    Xt, yt = _domain(300, 1)
    source = cls(random_state=0, classes=[0, 1]).fit_source(Xs, ys)
    loaded = load_release(save_release(source, tmp_path / "source.json")).set_params(random_state=0)
    loaded.fit(Xt, yt)
    here = clone(source).fit(Xt, yt, X_source=Xs, y_source=ys)
    np.testing.assert_array_equal(loaded.decision_function(Xt), here.decision_function(Xt))
    assert domain_guarantees(loaded.privacy_) == {"source": 1.0, "target": 1.0}
