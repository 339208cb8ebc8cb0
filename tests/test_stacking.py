"""PST-S and PST-F (dpstack.stacking): shapes, determinism, errors, bounds, ledger, and a regression check."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import roc_auc_score

from dpstack import PrivateLogisticRegression, PrivateStackingClassifier, bound_rows
from dpstack.base import PrivacyLeakWarning
from dpstack.mechanisms import feature_split_calibration
from dpstack.stacking import PRIVATE_MAX_STEP, block_lambdas, bound_blocks, meta_features, resolve_groups


def _data(n=400, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    beta = np.r_[np.linspace(3, 1, 4), np.zeros(d - 4)]
    y = (X @ beta * np.sqrt(d) + rng.logistic(size=n) > 0).astype(int)
    return X, y


# --- shapes, combiners, determinism --------------------------------------------------------------


@pytest.mark.parametrize("partition", ["features", "samples"])
def test_shapes_and_all_combiners_from_one_fit(partition):
    X, y = _data()
    labels = np.array(["neg", "pos"])[y]
    clf = PrivateStackingClassifier(
        epsilon=1.0, partition=partition, n_groups=3, random_state=0, classes=["neg", "pos"]
    ).fit(X, labels)
    assert list(clf.classes_) == ["neg", "pos"]
    assert clf.decision_function_low(X).shape == (400, 3)
    scores = clf.decision_functions(X)
    assert list(scores) == ["C-0", "C-1", "C-2", "C-mv", "C-wmv", "C-hl"]
    assert all(s.shape == (400,) for s in scores.values())
    proba = clf.predict_proba(X)
    assert proba.shape == (400, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert set(clf.predict(X)) <= {"neg", "pos"}
    # each combiner through the single-combiner API agrees with the dict
    np.testing.assert_allclose(clf.decision_function(X, combiner="vote"), scores["C-mv"])
    np.testing.assert_allclose(clf.decision_function(X, combiner="weighted_vote"), scores["C-wmv"])
    np.testing.assert_allclose(clf.decision_function(X, combiner=1), scores["C-1"])
    np.testing.assert_allclose(clf.decision_function(X), scores["C-hl"])


def test_votes_are_computed_from_low_level_signs():
    X, y = _data()
    clf = PrivateStackingClassifier(
        epsilon=2.0,
        n_groups=4,
        group_importance=None,
        feature_importance=np.arange(12, 0, -1.0),
        random_state=1,
        classes=[0, 1],
    ).fit(X, y)
    Z = clf.decision_function_low(X)
    share = (Z >= 0).mean(axis=1)
    np.testing.assert_allclose(clf.predict_proba(X, combiner="vote")[:, 1], share)
    weighted = (Z >= 0) @ clf.importance_
    np.testing.assert_allclose(clf.predict_proba(X, combiner="weighted_vote")[:, 1], weighted)
    # the weighted vote uses the unequal q_k, so it must differ from the plain vote somewhere
    assert not np.allclose(share, weighted)


@pytest.mark.parametrize("partition", ["features", "samples"])
def test_determinism_for_a_fixed_seed(partition):
    X, y = _data()
    a = PrivateStackingClassifier(partition=partition, random_state=7, classes=[0, 1]).fit(X, y)
    b = clone(a).fit(X, y)
    c = PrivateStackingClassifier(partition=partition, random_state=8, classes=[0, 1]).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert not np.allclose(a.decision_function(X), c.decision_function(X))


# --- splits and calibration --------------------------------------------------------------------


def test_pst_s_parts_are_disjoint_and_cover_the_data():
    X, y = _data(n=403)
    clf = PrivateStackingClassifier(
        partition="samples", n_groups=4, random_state=0, classes=[0, 1], diagnostics=True
    ).fit(X, y)
    low, high = clf.diagnostics_.low_index, clf.diagnostics_.high_index
    assert np.intersect1d(low, high).size == 0 and np.union1d(low, high).size == 403
    assert abs(low.size - high.size) <= 1
    parts = clf.diagnostics_.sample_parts
    assert len(parts) == 4 and np.array_equal(np.sort(np.concatenate(parts)), low)
    assert max(p.size for p in parts) - min(p.size for p in parts) <= 1
    # each S_k model is PLR calibrated for its own n_k
    for part, m in zip(parts, clf.low_level_):
        assert m.calibration_.epsilon == 1.0
        assert m.calibration_.epsilon_noise == pytest.approx(1.0 - 2 * np.log1p(1 / (4 * part.size * 0.01)))


def test_pst_f_low_level_calibration_is_plr_fs_on_d_l():
    X, y = _data()
    v = np.r_[np.full(4, 3.0), np.ones(8)]
    clf = PrivateStackingClassifier(
        epsilon=1.0, n_groups=3, feature_importance=v, lam=0.02, random_state=0, classes=[0, 1]
    ).fit(X, y)
    n_low = int(round(0.5 * len(y)))  # |D_l| is public: low_fraction · n
    cal = feature_split_calibration(1.0, n_low, 0.02, clf.importance_)
    np.testing.assert_allclose(clf.low_level_.epsilon_k_, cal.epsilon_k)
    np.testing.assert_allclose(clf.low_level_.importance_, clf.importance_)
    assert clf.high_level_.calibration_.epsilon == 1.0
    assert clf.high_level_.privacy_.total() == 1.0


def test_non_private_single_block_equals_plr_on_d_l():
    # PST-F with K = 1 and ε = ∞ fits, at the low level, the non-private PLR on the clipped D_l.
    X, y = _data()
    clf = PrivateStackingClassifier(
        epsilon=np.inf, groups=[np.arange(12)], random_state=0, classes=[0, 1], diagnostics=True
    ).fit(X, y)
    low = clf.diagnostics_.low_index
    Zl = bound_rows(X[low])
    plr = PrivateLogisticRegression(epsilon=np.inf, lam=0.01, classes=[0, 1]).fit(Zl, y[low])
    np.testing.assert_allclose(clf.low_coefs_[0], plr.w_, atol=1e-8)


# --- groups and importances ---------------------------------------------------------------------


def test_variant_w_sorts_and_uses_eq_6():
    v = np.array([1.0, 5.0, 0.0, 3.0, 2.0, 4.0])
    groups, q = resolve_groups(6, 3, feature_importance=v)
    assert [list(g) for g in groups] == [[1, 5], [3, 4], [0, 2]]
    np.testing.assert_allclose(q, np.array([9.0, 5.0, 1.0]) / 15.0)


def test_variant_u_is_a_random_equal_partition_with_uniform_q():
    groups, q = resolve_groups(10, 3, random_state=0)
    assert sorted(np.concatenate(groups)) == list(range(10))
    assert sorted(g.size for g in groups) == [3, 3, 4]
    np.testing.assert_allclose(q, 1 / 3)
    other, _ = resolve_groups(10, 3, random_state=1)
    assert any(not np.array_equal(a, b) for a, b in zip(groups, other))


def test_explicit_groups_with_feature_importance_use_eq_6():
    groups, q = resolve_groups(4, groups=[[0, 3], [1]], feature_importance=[1.0, 2.0, 50.0, 1.0])
    np.testing.assert_allclose(q, [0.5, 0.5])  # feature 2 is in no group: ignored


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(groups=[[0, 1], [2]], group_importance=[-0.5, 1.5]), ">= 0"),
        (dict(groups=[[0, 1], [2]], group_importance=[0.5, 0.6]), "sum to 1"),
        (dict(groups=[[0, 1], [2]], group_importance=[1.0]), "entries"),
        (dict(n_groups=13), "cannot exceed"),
        (dict(groups=[[0, 1], []]), "empty"),
        (dict(groups=[[0, 1], [1, 2]]), "disjoint"),
        (dict(groups=[[0, 12]]), "outside"),
        (dict(feature_importance=np.ones(5)), "one value per feature"),
        (dict(feature_importance=-np.ones(12)), ">= 0"),
        (dict(combiner="average"), "combiner"),
        (dict(row_bound="max"), "row_bound"),
        (dict(meta_features="raw"), "meta_features"),
        (dict(partition="rows"), "partition"),
        (dict(partition="samples", feature_importance=np.ones(12)), "partition='features' only"),
        (dict(partition="samples", n_groups=200), "fewer than 2 samples"),
        (dict(epsilon=0.0), "epsilon"),
        (dict(low_fraction=1.0), "low_fraction"),
    ],
)
def test_bad_parameters_raise_clear_errors(kwargs, message):
    X, y = _data()
    with pytest.raises(ValueError, match=message):
        PrivateStackingClassifier(random_state=0, classes=[0, 1], **kwargs).fit(X, y)


def test_one_class_in_training_data_is_rejected_without_a_public_label_set():
    X, _ = _data()
    with pytest.warns(PrivacyLeakWarning), pytest.raises(ValueError, match="two classes"):
        PrivateStackingClassifier(random_state=0).fit(X, np.zeros(400))


# --- norm bounds ------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["clip", "scale", "normalize", "private_max"])
@pytest.mark.parametrize("intercept", [False, True])
def test_every_block_is_under_its_bound(method, intercept):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 7)) * rng.uniform(0.1, 10, size=(50, 1))
    groups, q = [np.array([0, 3]), np.array([1, 2, 4]), np.array([5, 6])], np.array([0.6, 0.3, 0.1])
    bmax = np.array([np.linalg.norm(X[:, g], axis=1).max() for g in groups])
    Z, zg = bound_blocks(X, groups, q, method, row_scale=2.0, intercept=intercept, block_max=bmax / 2.0)
    for k, g in enumerate(zg):
        norms = np.linalg.norm(Z[:, g], axis=1)
        assert np.all(norms <= q[k] * (1 + 1e-12))
        if method == "normalize":
            np.testing.assert_allclose(norms, q[k])
        if intercept:
            np.testing.assert_allclose(Z[:, g[-1]], q[k] / 2)


def test_clip_leaves_rows_inside_the_bound_unchanged():
    X = np.array([[0.1, 0.2, 0.05], [3.0, 4.0, 0.0]])
    Z, _ = bound_blocks(X, [np.array([0, 1]), np.array([2])], np.array([0.5, 0.5]))
    np.testing.assert_allclose(Z[0], X[0])
    np.testing.assert_allclose(Z[1], [0.3, 0.4, 0.0])


def test_meta_features_stay_in_the_unit_ball():
    margins = np.random.default_rng(0).normal(scale=50, size=(100, 5))
    for kind in ("sigmoid", "centred"):
        assert np.all(np.linalg.norm(meta_features(margins, kind), axis=1) <= 1.0)
    np.testing.assert_allclose(meta_features(np.zeros((1, 4)), "centred"), 0.0)


def test_private_max_is_flagged_as_not_private():
    X, y = _data()
    with pytest.warns(PrivacyLeakWarning, match="NOT differentially private"):
        clf = PrivateStackingClassifier(row_bound="private_max", random_state=0, classes=[0, 1]).fit(X, y)
    assert clf.privacy_.total() == np.inf and clf.privacy_.mechanism_total() == 1.0
    assert [e.mechanism for e in clf.privacy_.outside_steps] == [PRIVATE_MAX_STEP]
    # the scale depends on one record: enlarging one row changes every other row's scaled value
    X2 = X.copy()
    X2[0] *= 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf2 = clone(clf).fit(X2, y)
    assert not np.allclose(clf._design(X[1:]), clf2._design(X[1:]))


# --- privacy ledger ---------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.5, 1.0, np.inf])
def test_ledger_pst_f_spends_epsilon_on_each_disjoint_part(eps):
    X, y = _data()
    clf = PrivateStackingClassifier(epsilon=eps, random_state=0, classes=[0, 1]).fit(X, y)
    assert clf.privacy_.per_part() == {"D_l": eps, "D_h": eps}
    assert clf.privacy_.total() == eps


def test_ledger_pst_s_spends_epsilon_on_each_sample_set():
    X, y = _data()
    clf = PrivateStackingClassifier(epsilon=0.7, partition="samples", n_groups=3, random_state=0, classes=[0, 1]).fit(
        X, y
    )
    assert clf.privacy_.per_part() == {"D_l/S_1": 0.7, "D_l/S_2": 0.7, "D_l/S_3": 0.7, "D_h": 0.7}
    assert clf.privacy_.total() == 0.7


# --- regression: feature importance helps at ε = 1 ----------------------------------------------


def test_pst_f_w_beats_plr_at_epsilon_1_when_importance_is_known():
    # 30 features, 6 informative; importance v known (informative features high). Paired over
    # 20 independent data sets and noise draws with fixed seeds: measured mean gain ≈ +0.05 AUC,
    # positive in all 20 pairs, paired t ≈ 8.6. The assertions leave a wide margin.
    d = 30
    beta = np.r_[np.linspace(1.5, 0.5, 6), np.zeros(24)]
    v = np.r_[np.linspace(1.5, 0.5, 6), np.full(24, 0.05)]
    diffs = []
    for r in range(20):
        rng = np.random.default_rng(1000 + r)
        X, Xt = rng.normal(size=(2000, d)), rng.normal(size=(1000, d))
        y = (X @ beta + rng.logistic(size=2000) > 0).astype(int)
        yt = (Xt @ beta + rng.logistic(size=1000) > 0).astype(int)
        pst = PrivateStackingClassifier(
            1.0, feature_importance=v, row_scale=np.sqrt(d), random_state=r, classes=[0, 1]
        ).fit(X, y)
        plr = PrivateLogisticRegression(1.0, random_state=r, classes=[0, 1]).fit(bound_rows(X, row_scale=np.sqrt(d)), y)
        diffs.append(
            roc_auc_score(yt, pst.decision_function(Xt))
            - roc_auc_score(yt, plr.decision_function(bound_rows(Xt, row_scale=np.sqrt(d))))
        )
    diffs = np.array(diffs)
    t = diffs.mean() / diffs.std(ddof=1) * np.sqrt(diffs.size)
    assert diffs.mean() > 0.02 and t > 4.0 and (diffs > 0).sum() >= 17


def test_importance_scaled_lambdas_reach_the_low_level():
    X, y = _data()
    v = np.r_[np.full(4, 3.0), np.ones(8)]
    clf = PrivateStackingClassifier(
        n_groups=2, feature_importance=v, lam=0.01, lam_blocks="importance", random_state=0, classes=[0, 1]
    ).fit(X, y)
    q = clf.importance_
    np.testing.assert_allclose(clf.low_level_.lam, 0.01 * (2 * q) ** 2)
    # the rule keeps the Jacobian cost q_k²/(2nλ_k) equal across blocks
    costs = q**2 / (2 * 200 * np.asarray(clf.low_level_.lam))  # |D_l| = low_fraction · n
    np.testing.assert_allclose(costs, costs[0])
    assert block_lambdas(0.01, np.full(4, 0.25), "importance") == pytest.approx(np.full(4, 0.01))
    with pytest.raises(ValueError, match="lam_blocks"):
        block_lambdas(0.01, q, "quadratic")
    with pytest.raises(ValueError, match="lam_blocks"):
        PrivateStackingClassifier(lam_blocks="per_block", classes=[0, 1]).fit(X, y)


def test_public_design_and_meta_features_feed_the_fitted_models():
    X, y = _data()
    clf = PrivateStackingClassifier(n_groups=3, low_intercept=True, random_state=0, classes=[0, 1]).fit(X, y)
    Z = clf.bounded_design(X)
    assert Z.shape == (400, 12 + 3)  # one constant feature per block
    np.testing.assert_allclose(clf.low_level_.decision_function_blocks(Z), clf.decision_function_low(X))
    M = clf.high_level_inputs(X)
    np.testing.assert_allclose(clf.high_level_.decision_function(M), clf.decision_function(X))


def test_predict_before_fit_raises_not_fitted():
    from sklearn.exceptions import NotFittedError

    from dpstack import PrivateTransferStacking

    for est in (PrivateStackingClassifier(), PrivateTransferStacking()):
        with pytest.raises(NotFittedError):
            est.predict(np.ones((3, 4)))


# --- the privacy boundary: what a fitted object carries -----------------------------------------


def _fitted_names(est):
    return {k for k in vars(est) if k.endswith("_") and not k.startswith("_")}


@pytest.mark.parametrize("partition", ["features", "samples"])
def test_default_object_carries_only_its_release(partition):
    X, y = _data()
    est = PrivateStackingClassifier(partition=partition, n_groups=3, random_state=0, classes=[0, 1]).fit(X, y)
    assert _fitted_names(est) == set(est._release_attributes)
    assert est.block_max_ is None  # only row_bound="private_max" reads a scale from the data
    # the inner models are default objects too: no noise, no iteration counts
    inner = (est.low_level_ if partition == "samples" else [est.low_level_]) + [est.high_level_]
    assert all(not hasattr(m, "diagnostics_") and m.privacy_.is_private for m in inner)
    assert est.privacy_.total() == 1.0
    diag = clone(est).set_params(diagnostics=True).fit(X, y)
    assert _fitted_names(diag) - _fitted_names(est) == {"diagnostics_"}
    np.testing.assert_array_equal(diag.decision_function(X), est.decision_function(X))
    assert diag.privacy_.total() == np.inf and diag.privacy_.mechanism_total() == 1.0
    d = diag.diagnostics_
    assert d.high_level.noise_norm > 0 and np.intersect1d(d.low_index, d.high_index).size == 0
    if partition == "samples":
        assert len(d.sample_parts) == 3 and len(d.low_level) == 3 and all(x.noise_norm > 0 for x in d.low_level)
    else:
        assert d.sample_parts is None and d.low_level.noise_norms.shape == (3,)
    # refitting without diagnostics drops them, here and in the inner models
    diag.set_params(diagnostics=False).fit(X, y)
    assert _fitted_names(diag) == _fitted_names(est) and diag.privacy_.total() == 1.0


@pytest.mark.parametrize("partition", ["features", "samples"])
def test_label_set_is_resolved_once_and_recorded(partition):
    X, y = _data()
    with pytest.warns(PrivacyLeakWarning, match="classes=None") as record:
        est = PrivateStackingClassifier(partition=partition, n_groups=3, random_state=0).fit(X, y)
    assert sum(issubclass(w.category, PrivacyLeakWarning) for w in record) == 1
    assert [(e.mechanism, e.part) for e in est.privacy_.outside_steps] == [
        ("label set read from the data (classes=None)", "D")
    ]
    # the inner models see the signed labels, whatever the public ones are
    inner = est.low_level_ if partition == "samples" else [est.low_level_]
    assert all(np.array_equal(m.classes_, [-1, 1]) for m in inner + [est.high_level_])


def test_a_sample_set_with_one_class_keeps_the_output_shape():
    # 4 positives in 400: with K = 5 sample sets of 40, some S_k hold negatives only
    X, _ = _data()
    y = np.zeros(400, dtype=int)
    y[[3, 150, 222, 390]] = 1
    est = PrivateStackingClassifier(
        partition="samples", n_groups=5, random_state=0, classes=[0, 1], diagnostics=True
    ).fit(X, y)
    assert any(np.unique(y[rows]).size == 1 for rows in est.diagnostics_.sample_parts)
    assert est.decision_function_low(X).shape == (400, 5) and est.predict_proba(X).shape == (400, 2)
    # a public label set with a class absent from y: the output keeps its two columns
    absent = PrivateStackingClassifier(n_groups=2, random_state=0, classes=[0, 1]).fit(X, np.zeros(400, int))
    assert list(absent.classes_) == [0, 1] and absent.predict_proba(X).shape == (400, 2)


# --- the composition hook: the high level is post-processing of the low-level release and D_h -----


class _HighLevelAlsoOnDl(PrivateStackingClassifier):
    """Planted bug: the high level trains on D_l's meta-features too (each D_l record used twice)."""

    def _high_level_rows(self, parts):
        return np.sort(np.concatenate([parts.low, parts.high]))


def _replace(X, y, i):
    Xp, yp = X.copy(), y.copy()
    Xp[i] = -3.0 * X[i] / np.linalg.norm(X[i])
    yp[i] = 1 - y[i]
    return Xp, yp


def _flip(y, i):
    yp = y.copy()
    yp[i] = 1 - y[i]
    return yp


@pytest.mark.parametrize("partition", ["features", "samples"])
def test_high_level_is_post_processing_of_the_low_level_release(partition):
    X, y = _data()
    params = dict(partition=partition, n_groups=3, random_state=5, classes=[0, 1])
    full = PrivateStackingClassifier(**params, diagnostics=True).fit(X, y)
    in_low, in_high = int(full.diagnostics_.low_index[0]), int(full.diagnostics_.high_index[0])
    release = PrivateStackingClassifier(**params).fit(X, y).low_level_

    def high(cls, data):
        return cls(**params).fit(*data, low_level=release).high_level_.w_

    # same seeds as a normal fit: handing in the fit's own low level reproduces its high level
    np.testing.assert_array_equal(high(PrivateStackingClassifier, (X, y)), full.high_level_.w_)
    # a changed D_l record does not reach the high level ...
    np.testing.assert_array_equal(high(PrivateStackingClassifier, _replace(X, y, in_low)), full.high_level_.w_)
    # ... a changed D_h record does (the check can see a change). Its label is flipped and its row kept:
    # _replace's x -> -x/|x| with the label flipped leaves y*m almost unchanged when no constant feature
    # breaks the symmetry (margins are odd in x, tanh is odd), which would hide the change
    assert not np.allclose(high(PrivateStackingClassifier, (X, _flip(y, in_high))), full.high_level_.w_)
    # the planted mutant whose high level also trains on D_l is caught
    assert not np.allclose(high(_HighLevelAlsoOnDl, (X, _flip(y, in_low))), high(_HighLevelAlsoOnDl, (X, y)))


def test_low_level_hook_refuses_a_release_of_another_kind():
    X, y = _data()
    fs = PrivateStackingClassifier(n_groups=3, random_state=0, classes=[0, 1]).fit(X, y)
    ss = PrivateStackingClassifier(partition="samples", n_groups=3, random_state=0, classes=[0, 1]).fit(X, y)
    with pytest.raises(TypeError, match="low_level must be"):
        clone(fs).fit(X, y, low_level=ss.low_level_)
    with pytest.raises(ValueError, match="blocks"):
        clone(fs).set_params(n_groups=2).fit(X, y, low_level=fs.low_level_)
    with pytest.raises(TypeError, match="list of 3"):
        clone(ss).fit(X, y, low_level=ss.low_level_[:2])


# --- state that survives a bad call, errors that name the parameter ------------------------------


@pytest.mark.parametrize(
    "kwargs, exc, message",
    [
        (dict(lam="x"), TypeError, "'lam' parameter of .* must be"),
        (dict(lam=[0.01, 0.02]), ValueError, "lam has 2 entries but there are K = 3"),
        (dict(partition="samples", lam=[0.01, 0.01, 0.01]), ValueError, "lam must be one number"),
        (dict(row_bound="private_max", row_scale="a"), TypeError, "row_scale"),
        (dict(low_fraction="half"), ValueError, "low_fraction"),
        (dict(low_fraction=0.999), ValueError, "low_fraction=0.999 leaves too few samples"),
        (dict(diagnostics="yes"), TypeError, "diagnostics"),
    ],
)
def test_errors_name_the_parameter_and_leave_the_fit_intact(kwargs, exc, message):
    X, y = _data(n=200)
    est = PrivateStackingClassifier(n_groups=3, random_state=0, classes=[0, 1]).fit(X, y)
    before = {k: vars(est)[k] for k in _fitted_names(est)}
    with pytest.raises(exc, match=message):
        est.set_params(**kwargs).fit(X[:, :10], y)
    assert _fitted_names(est) == before.keys() and all(vars(est)[k] is v for k, v in before.items())
    assert est.n_features_in_ == 12
    assert est.set_params(**PrivateStackingClassifier(n_groups=3).get_params()).predict(X).shape == (200,)


def test_a_tiny_d_h_is_a_valid_split_not_a_label_error():
    # low_fraction = 0.99 on n = 200 leaves 2 rows in D_h, possibly of one class: that is legal
    X, y = _data(n=200)
    est = PrivateStackingClassifier(low_fraction=0.99, n_groups=3, random_state=0, classes=[0, 1]).fit(X, y)
    assert est.predict_proba(X).shape == (200, 2) and est.privacy_.total() == 1.0


# --- internal calls do not validate again ----------------------------------------------------------


@pytest.mark.parametrize("partition", ["features", "samples"])
def test_inputs_are_validated_once_per_public_call(partition, monkeypatch):
    import dpstack.base
    import dpstack.linear
    import dpstack.stacking

    X, y = _data()
    est = PrivateStackingClassifier(partition=partition, n_groups=4, random_state=0, classes=[0, 1])
    calls = []
    original = dpstack.linear.validate_data

    def counting(*args, **kwargs):
        calls.append(type(args[0]).__name__)
        return original(*args, **kwargs)

    monkeypatch.setattr(dpstack.base, "validate_data", counting)
    monkeypatch.setattr(dpstack.linear, "validate_data", counting)
    monkeypatch.setattr(dpstack.stacking, "validate_data", counting)
    est.fit(X, y)
    assert calls == ["PrivateStackingClassifier"]
    calls.clear()
    scores = est.decision_functions(X)
    assert calls == ["PrivateStackingClassifier"]
    # and the fast paths give what the public, checked calls give
    Z = est.bounded_design(X)
    low = est.low_level_ if partition == "samples" else [est.low_level_]
    checked = (
        np.column_stack([m.decision_function(Z) for m in low])
        if partition == "samples"
        else est.low_level_.decision_function_blocks(Z)
    )
    # the public call clips the (already bounded) blocks again: a row at its bound may move by a rounding error
    np.testing.assert_allclose(checked, est.decision_function_low(X), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(est.high_level_.decision_function(est.high_level_inputs(X)), scores["C-hl"])


# --- export of the release ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(partition="features", feature_importance=np.arange(12, 0, -1.0), low_intercept=True),
        dict(partition="samples", n_groups=4, low_intercept=True, combiner="weighted_vote"),
        dict(
            partition="features",
            groups=[[0, 1, 2], [3, 4, 5, 6, 7, 8, 9, 10, 11]],
            group_importance=[0.6, 0.4],
            lam=[0.01, 0.05],
            lam_high=0.02,
            combiner=1,
        ),
    ],
    ids=["PST-F(W)", "PST-S", "PST-F groups"],
)
def test_release_round_trip_predicts_identically(kwargs, tmp_path):
    from dpstack.release import load_release, save_release

    X, y = _data()
    labels = np.array(["ham", "spam"])[y]
    est = PrivateStackingClassifier(random_state=0, classes=["ham", "spam"], diagnostics=True, **kwargs).fit(X, labels)
    path = save_release(est, tmp_path / "pst.json")
    assert "low_index" not in path.read_text() and "noise_norm" not in path.read_text()
    model = load_release(path)
    assert type(model) is PrivateStackingClassifier and not hasattr(model, "diagnostics_")
    np.testing.assert_array_equal(model.predict(X), est.predict(X))
    np.testing.assert_array_equal(model.decision_function(X), est.decision_function(X))
    for name, scores in est.decision_functions(X).items():
        np.testing.assert_array_equal(model.decision_functions(X)[name], scores)
    for combiner in ("stack", "vote", "weighted_vote", 0):
        np.testing.assert_array_equal(
            model.predict_proba(X, combiner=combiner), est.predict_proba(X, combiner=combiner)
        )
    assert model.privacy_.total() == est.privacy_.mechanism_total() == 1.0


def test_release_round_trip_with_private_max_keeps_the_label(tmp_path):
    from dpstack.release import load_release, save_release

    X, y = _data()
    with pytest.warns(PrivacyLeakWarning):
        est = PrivateStackingClassifier(row_bound="private_max", row_scale=2.0, random_state=0, classes=[0, 1]).fit(
            10 * X, y
        )
    model = load_release(save_release(est, tmp_path / "m.json"))
    np.testing.assert_array_equal(model.decision_function(10 * X), est.decision_function(10 * X))
    assert model.privacy_.total() == np.inf and [e.mechanism for e in model.privacy_.outside_steps] == [
        PRIVATE_MAX_STEP
    ]


def test_the_hook_accepts_an_exported_low_level_release(tmp_path):
    # what an auditor holds: the published release, loaded back; the high level refitted on D_h
    # from it equals the one published
    from dpstack.release import load_release, save_release

    X, y = _data()
    est = PrivateStackingClassifier(partition="samples", n_groups=3, random_state=4, classes=[0, 1]).fit(X, y)
    published = load_release(save_release(est, tmp_path / "pst.json"))
    again = clone(est).fit(X, y, low_level=published.low_level_)
    np.testing.assert_array_equal(again.high_level_.w_, est.high_level_.w_)
    assert again.privacy_.per_part() == est.privacy_.per_part()


@pytest.mark.parametrize("X", [np.ones(3), None, [], [[1.0, "a"]], np.ones((2, 2, 2))])
def test_bound_rows_refuses_what_is_not_a_matrix_naming_x(X):
    from dpstack import bound_rows

    with pytest.raises(ValueError, match="bound_rows: X must be a 2-D array"):
        bound_rows(X)
