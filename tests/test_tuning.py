"""Private parameter tuning (dpstack.tuning): accounting, the exponential mechanism, disjoint parts, release."""

import hashlib
import math
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin

from dpstack import (
    PrivateLogisticRegression,
    PrivateStackingClassifier,
    PrivateTransferStacking,
    SimComb,
)
from dpstack.accounting import PrivacyLedger
from dpstack.base import PrivacyLeakWarning
from dpstack.companion.papers import open_choices as shared
from dpstack.release import load_release, save_release
from dpstack.theory import domain_guarantees
from dpstack.tuning import (
    PrivateParameterTuning,
    exponential_mechanism,
    selection_probabilities,
)


def _data(n=1200, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / 3
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y


class _Planted(ClassifierMixin, BaseEstimator):
    """A test candidate with a planted number of errors: it predicts column 0 (= the label),
    flipped on its first ``flip`` rows; every fit leaves a fingerprint of its training set."""

    fitted_on = []
    _release_attributes = ("classes_", "n_features_in_", "privacy_")

    def __init__(self, flip=0, epsilon=1.0, random_state=None):
        self.flip = flip
        self.epsilon = epsilon
        self.random_state = random_state

    def fit(self, X, y):
        _Planted.fitted_on.append(hashlib.sha256(np.ascontiguousarray(X).tobytes()).hexdigest())
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = X.shape[1]
        self.privacy_ = PrivacyLedger()
        self.privacy_.add("planted", "D", self.epsilon)
        return self

    def predict(self, X):
        p = X[:, 0].astype(int).copy()
        p[: self.flip] = 1 - p[: self.flip]
        return p


def _planted_data(n=700):
    y = np.arange(n) % 2
    return np.column_stack([y, np.arange(n)]).astype(float), y


# ---------------------------------------------------------------- the exponential mechanism
def test_selection_probabilities_are_exp_of_half_epsilon_utility():
    u = np.array([-10.0, -12.0, -15.0, -11.0])
    p = selection_probabilities(u, 0.8, 1.0)
    expected = np.exp(0.4 * u) / np.exp(0.4 * u).sum()
    np.testing.assert_allclose(p, expected, rtol=1e-12)
    # sensitivity divides the exponent
    np.testing.assert_allclose(selection_probabilities(u, 0.8, 2.0), np.exp(0.2 * u) / np.exp(0.2 * u).sum())
    # ε = ∞: uniform over the maximisers
    np.testing.assert_array_equal(selection_probabilities([1.0, 3.0, 3.0], np.inf), [0.0, 0.5, 0.5])


def _chi_square_p(counts, p):
    return stats.chisquare(counts, counts.sum() * p).pvalue


def test_exponential_mechanism_draws_match_exp_epsilon_u_over_2delta():
    u = np.array([-10.0, -12.0, -15.0, -11.0, -10.5])
    eps, n_draws = 0.7, 6000
    rng = np.random.default_rng(1)
    counts = np.bincount([exponential_mechanism(u, eps, 1.0, rng) for _ in range(n_draws)], minlength=u.size)
    right = np.exp(eps * u / 2) / np.exp(eps * u / 2).sum()
    wrong = np.exp(eps * u) / np.exp(eps * u).sum()  # a factor-2 error in the exponent
    assert _chi_square_p(counts, right) > 1e-4
    assert _chi_square_p(counts, wrong) < 1e-10  # the test has the power to see that error


def test_the_tuner_selects_with_the_exponential_mechanism_on_held_out_errors():
    """Whole path: planted error counts on V → the frequency of each winner over many fits."""
    X, y = _planted_data()
    flips = [3, 5, 8, 4]
    eps = 0.6
    tuner = PrivateParameterTuning(_Planted(), {"flip": flips}, epsilon_select=eps)
    n_fits = 1500
    wins = np.zeros(len(flips), int)
    for i in range(n_fits):
        wins[tuner.set_params(random_state=i).fit(X, y).best_index_] += 1
    u = -np.array(flips, float)
    right = np.exp(eps * u / 2) / np.exp(eps * u / 2).sum()
    wrong = np.exp(eps * u) / np.exp(eps * u).sum()
    assert _chi_square_p(wins, right) > 1e-4
    assert _chi_square_p(wins, wrong) < 1e-10


def test_exponential_mechanism_rejects_bad_inputs_by_name():
    with pytest.raises(ValueError, match="utilities"):
        selection_probabilities([np.nan, 1.0], 1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        selection_probabilities([0.0, 1.0], 1.0, 0.0)
    with pytest.raises(ValueError, match="epsilon"):
        selection_probabilities([0.0, 1.0], -1.0)


# ---------------------------------------------------------------- disjoint parts
def test_parts_partition_the_records_and_one_record_changes_at_most_one_candidate():
    X, y = _planted_data(n=503)
    grid = {"flip": [0, 1, 2, 3]}
    tuner = PrivateParameterTuning(_Planted(), grid, random_state=7, diagnostics=True)
    _Planted.fitted_on.clear()
    tuner.fit(X, y)
    base = list(_Planted.fitted_on)
    parts = tuner.diagnostics_.parts
    assert len(parts) == 5
    allidx = np.concatenate(parts)
    np.testing.assert_array_equal(np.sort(allidx), np.arange(len(y)))  # disjoint and covering
    assert max(p.size for p in parts) - min(p.size for p in parts) <= 1  # equal portions
    changed_counts = []
    for i in range(0, len(y), 37):
        X2 = X.copy()
        X2[i, 1] = -1.0  # replace record i
        _Planted.fitted_on.clear()
        tuner.fit(X2, y)
        changed = sum(a != b for a, b in zip(base, _Planted.fitted_on))
        in_candidate_part = any(i in p for p in parts[:4])
        assert changed == (1 if in_candidate_part else 0), i
        changed_counts.append(changed)
    assert 0 in changed_counts and 1 in changed_counts  # both cases were exercised


# ---------------------------------------------------------------- accounting
@pytest.mark.parametrize("eps_train, eps_select", [(0.5, 2.0), (2.0, 0.5), (1.0, 1.0)])
def test_ledger_total_is_max_of_training_and_selection_epsilon(eps_train, eps_select):
    X, y = _data()
    t = PrivateParameterTuning(
        PrivateLogisticRegression(epsilon=eps_train, classes=[0, 1]),
        {"lam": [1e-3, 1e-2, 1e-1]},
        epsilon_select=eps_select,
        random_state=0,
    ).fit(X, y)
    assert t.privacy_.total() == pytest.approx(max(eps_train, eps_select))
    assert t.privacy_.is_private
    parts = t.privacy_.per_part()
    assert sorted(parts) == ["D/T_0", "D/T_1", "D/T_2", "D/V"]
    assert parts["D/V"] == eps_select and parts["D/T_1"] == eps_train


def test_ledger_of_stacking_candidates_keeps_their_inner_parts():
    X, y = _data(n=1500)
    t = PrivateParameterTuning(
        PrivateStackingClassifier(epsilon=0.5, n_groups=2, classes=[0, 1]),
        {"lam": [1e-2, 1e-1]},
        epsilon_select=0.25,
        random_state=0,
    ).fit(X, y)
    assert set(t.privacy_.per_part()) == {"D/T_0/D_l", "D/T_0/D_h", "D/T_1/D_l", "D/T_1/D_h", "D/V"}
    assert t.privacy_.total() == 0.5


def test_transfer_source_is_spent_once_and_domains_keep_their_guarantees():
    X, y = _data(n=900)
    Xs, ys = _data(n=800, seed=1)
    base = PrivateTransferStacking(
        epsilon_source=0.5, epsilon_target=2.0, n_groups=2, classes=[0, 1], random_state=3
    ).fit_source(Xs, ys)
    t = PrivateParameterTuning(base, {"lam": [1e-2, 1e-1], "eta": [0.2, 0.8]}, epsilon_select=1.0, random_state=0).fit(
        X, y
    )
    assert [e.part for e in t.privacy_.entries].count("D_s") == 1
    assert domain_guarantees(t.privacy_) == {"source": 0.5, "target": 2.0}
    # the chosen model keeps the source it was given (not refitted per candidate)
    np.testing.assert_array_equal(t.best_estimator_.source_.coef_, base.source_.coef_)
    assert not hasattr(base, "privacy_")  # the template itself is never fitted on the target


def test_a_step_outside_the_guarantee_makes_the_whole_not_private():
    X, y = _data()
    with pytest.warns(PrivacyLeakWarning):
        t = PrivateParameterTuning(PrivateLogisticRegression(epsilon=1.0), {"lam": [1e-2, 1e-1]}, random_state=0).fit(
            X, y
        )
    assert math.isinf(t.privacy_.total()) and not t.privacy_.is_private
    assert t.privacy_.mechanism_total() == 1.0


def test_epsilon_select_inf_is_recorded_as_not_private_and_takes_the_best():
    X, y = _planted_data()
    t = PrivateParameterTuning(_Planted(), {"flip": [4, 1, 6]}, epsilon_select=np.inf, random_state=0).fit(X, y)
    assert t.best_index_ == 1 and math.isinf(t.privacy_.total())


# ---------------------------------------------------------------- what the object carries
def test_default_object_carries_only_its_release_and_no_scores():
    X, y = _data()
    t = PrivateParameterTuning(
        PrivateLogisticRegression(epsilon=1.0, classes=[0, 1]), {"lam": [1e-3, 1e-2, 1e-1]}, random_state=0
    ).fit(X, y)
    fitted = {a for a in vars(t) if a.endswith("_")}
    assert fitted == set(PrivateParameterTuning._release_attributes)
    assert not hasattr(t, "diagnostics_")
    assert not hasattr(t.best_estimator_, "diagnostics_")
    t.set_params(diagnostics=True).fit(X, y)
    assert t.diagnostics_.errors.shape == (3,) and not t.privacy_.is_private
    np.testing.assert_allclose(t.diagnostics_.probabilities.sum(), 1.0)
    t.set_params(diagnostics=False).fit(X, y)
    assert not hasattr(t, "diagnostics_") and t.privacy_.is_private


@pytest.mark.parametrize("kind", ["plr", "stacking", "transfer", "simcomb"])
def test_release_round_trip_predicts_bit_identically(tmp_path, kind):
    X, y = _data(n=1500)
    Xs, ys = _data(n=800, seed=1)
    if kind == "plr":
        est, grid = PrivateLogisticRegression(epsilon=1.0, classes=[0, 1]), {"lam": [1e-2, 1e-1]}
    elif kind == "stacking":
        est, grid = PrivateStackingClassifier(epsilon=1.0, n_groups=2, classes=[0, 1]), {"lam": [1e-2, 1e-1]}
    elif kind == "transfer":
        est = PrivateTransferStacking(n_groups=2, classes=[0, 1], random_state=1).fit_source(Xs, ys)
        grid = {"lam": [1e-2, 1e-1], "eta": [0.3]}
    else:
        est, grid = SimComb(classes=[0, 1], random_state=1).fit_source(Xs, ys), {"eta": [0.2, 1.0]}
    t = PrivateParameterTuning(est, grid, random_state=0, diagnostics=True).fit(X, y)
    path = save_release(t, tmp_path / "tuned.json")
    text = path.read_text()
    assert '"probabilities"' not in text and '"part_sizes"' not in text  # diagnostics are not exported
    loaded = load_release(path)
    assert isinstance(loaded, PrivateParameterTuning)
    np.testing.assert_array_equal(loaded.decision_function(X), t.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), t.predict(X))
    assert loaded.best_index_ == t.best_index_ and loaded.best_params_ == t.best_params_
    assert loaded.privacy_.is_private  # the diagnostics entry is dropped with the diagnostics
    assert loaded.privacy_.total() == 1.0
    # the template is exported by its parameters only: a fitted source lives in the chosen model alone
    assert not hasattr(loaded.estimator, "source_") and not hasattr(loaded.estimator, "coef_")
    assert loaded.estimator.get_params()["random_state"] is None


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(epsilon_select=-1.0), "epsilon_select"),
        (dict(epsilon_select="1"), "epsilon_select"),
        (dict(param_grid={"lamda": [0.1]}), "'lamda'"),
        (dict(param_grid={"lam": []}), "param_grid"),
        (dict(param_grid={"random_state": [0, 1]}), "random_state"),
        (dict(diagnostics="yes"), "diagnostics"),
        (dict(random_state="seed"), "random_state"),
    ],
)
def test_errors_name_the_parameter(kwargs, match):
    X, y = _data(n=200)
    params = dict(estimator=PrivateLogisticRegression(classes=[0, 1]), param_grid={"lam": [0.1, 1.0]})
    params.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        PrivateParameterTuning(**params).fit(X, y)


def test_transfer_errors_name_the_estimator_and_the_source_parameter():
    X, y = _data(n=300)
    with pytest.raises(ValueError, match="estimator.*fit_source"):
        PrivateParameterTuning(PrivateTransferStacking(classes=[0, 1]), {"lam": [0.1]}).fit(X, y)
    base = SimComb(classes=[0, 1]).fit_source(X, y)
    with pytest.raises(ValueError, match="'lam_source'"):
        PrivateParameterTuning(base, {"lam_source": [0.1, 1.0]}).fit(X, y)


def test_too_few_samples_for_the_parts_is_refused_and_a_failed_fit_keeps_the_earlier_one():
    X, y = _data(n=400)
    t = PrivateParameterTuning(PrivateLogisticRegression(classes=[0, 1]), {"lam": [0.1, 1.0]}, random_state=0).fit(X, y)
    before = t.decision_function(X)
    with pytest.raises(ValueError, match="G \\+ 1 = 3 parts"):
        t.fit(X[:5], y[:5])
    with pytest.raises(ValueError, match="epsilon_select"):
        t.set_params(epsilon_select=0).fit(X, y)
    np.testing.assert_array_equal(t.decision_function(X), before)


def test_the_template_is_not_modified_and_candidates_get_independent_seeds():
    X, y = _data()
    template = PrivateLogisticRegression(epsilon=1.0, lam=0.05, classes=[0, 1], random_state=123)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = PrivateParameterTuning(template, {"lam": [0.01, 0.01]}, random_state=0, diagnostics=True).fit(X, y)
    assert template.get_params()["lam"] == 0.05 and template.random_state == 123
    assert not hasattr(template, "coef_")
    assert t.best_estimator_.random_state != 123


# ---------------------------------------------------------------- the end-to-end experiment
def _synthetic_experiments(monkeypatch):
    """Route both protocols to the offline SYNTH tasks (the papers' protocol reads them via its loaders)."""
    from dpstack.companion.chapters import end_to_end as EE
    from dpstack.companion.papers.pptl import grids as pptl
    from dpstack.companion.papers.pst import grids as pst

    synth = shared.synthetic_task(0)
    synth_t = pptl.load_transfer_task("SYNTH")[:5]
    monkeypatch.setattr(pst, "load_task", lambda dataset, data_seed=0: synth)
    monkeypatch.setattr(pptl, "load_transfer_task", lambda dataset, branch=None, data_seed=0: (*synth_t, 1.0))
    monkeypatch.setattr(EE, "load_public_task", lambda data_seed=0: synth)
    monkeypatch.setattr(EE, "load_public_transfer_task", lambda data_seed=0: synth_t)
    monkeypatch.setitem(
        EE.PROFILES,
        "quick",
        dict(
            n_repeats=2,
            pst_epsilons=(0.5, 4.0),
            transfer_epsilons=(2.0,),
            lam_grid=(1e-3, 1e-2, 1e-1),
            transfer_lam_grid=(1e-3, 1e-2, 1e-1),
            eta_grid=(0.5,),
            private_lam_grid=(1e-2, 1e-1),
            private_eta_grid=(0.5,),
        ),
    )
    return EE


def test_end_to_end_rows_certify_epsilon_and_the_papers_protocol_does_not(monkeypatch):
    EE = _synthetic_experiments(monkeypatch)
    df = EE.end_to_end("quick", pst_methods=("PLR", "PST-F(W)"), transfer_methods=("PPTL-FS(W)", "Direct"))
    ours = df[df.protocol == "end-to-end"]
    papers = df[df.protocol == "papers' protocol"]
    assert len(ours) == len(papers) == 2 * (2 * 2 + 2 * 1)
    np.testing.assert_array_equal(ours.epsilon_total, ours.epsilon)  # max(ε_train, ε_select) = ε
    assert np.isinf(papers.epsilon_total).all()
    assert ours.lam.isin([1e-2, 1e-1]).all() and ours.auc.between(0, 1).all()
    # the papers' protocol and the middle one search the experiments' grid, per level, with equal budget

    grid = [1e-3, 1e-2, 1e-1]
    for name in ("papers' protocol", "public PCA, λ on validation"):
        rows = df[(df.protocol == name) & (df.experiment == "PST Fig. 1")]
        assert rows[rows.method == "PLR"].lam.isin(shared.budget_grid(grid, 2 * len(grid))).all()
        stacked = rows[rows.method == "PST-F(W)"]
        assert stacked.lam.isin(grid).all() and stacked.lam_high.isin(grid).all()
        assert (rows.n_candidates == 2 * len(grid)).all()
    # the end-to-end protocol searches its own candidates: PST 2 λ; PPTL-FS(W) 2 λ × 1 η; Direct 2 λ
    assert (ours.n_candidates == 2).all()
    assert (df[(df.protocol == "papers' protocol") & (df.experiment == "PPTL Table 1")].n_candidates == 6).all()
    assert (ours.pca_fitted_on == "public held-out images").all()
    table = EE.compare(df)
    assert len(table) == 2 * 2 + 2 * 1
    row = table.iloc[0]
    assert row["difference"] == pytest.approx(row["end-to-end"] - row["papers' protocol"])


def test_transfer_end_to_end_cell_reports_each_domains_guarantee(monkeypatch):
    EE = _synthetic_experiments(monkeypatch)
    row = EE.transfer_end_to_end_cell(
        "SimComb", 2.0, lam_grid=(1e-2, 1e-1), eta_grid=(0.2, 0.8), seed_sequence=np.random.SeedSequence(0)
    )
    assert row["epsilon_source"] == row["epsilon_target"] == row["epsilon_total"] == 2.0
    with pytest.raises(ValueError, match="method"):
        EE.transfer_end_to_end_cell("PPTL", 1.0, seed_sequence=np.random.SeedSequence(0))
    with pytest.raises(ValueError, match="profile"):
        EE.end_to_end("fast")


def test_validation_tuning_reproduces_the_papers_protocol_on_the_same_features(monkeypatch):
    """tuning="validation" on the papers' own features gives the papers' protocol's numbers exactly
    (same split, same noise seeds): the middle curve differs from it by the PCA alone."""
    EE = _synthetic_experiments(monkeypatch)
    from dpstack.companion.papers.pst import grids as pst

    for method in ("PLR", "PST-F(W)"):

        def ss():  # a fresh SeedSequence per cell, as the runner gives (spawn() is stateful)
            return np.random.SeedSequence(5, spawn_key=(1,))

        ours = EE.pst_end_to_end_cell(method, 1.0, lam_grid=(1e-2, 1e-1, 1.0), tuning="validation", seed_sequence=ss())
        papers = pst.stacking_cell("SYNTH", method, 1.0, lam_grid=(1e-2, 1e-1, 1.0), seed_sequence=ss())[0]
        assert ours["auc"] == papers["auc"] and ours["lam"] == papers["lam"]
        np.testing.assert_equal(ours["lam_high"], papers["lam_high"])
        assert ours["n_candidates"] == papers["n_candidates"]
        assert math.isinf(ours["epsilon_total"])
    with pytest.raises(ValueError, match="tuning"):
        EE.pst_end_to_end_cell("PLR", 1.0, tuning="grid", seed_sequence=ss())


def test_a_template_that_is_not_a_private_estimator_is_refused_before_any_fit():
    from sklearn.linear_model import LogisticRegression

    tuner = PrivateParameterTuning(LogisticRegression(), {"C": [0.1, 1.0]}, random_state=0)
    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(
        TypeError, match="estimator must be a private estimator .*LogisticRegression, which declares no privacy ledger"
    ):
        tuner.fit(X, (X[:, 0] > 0).astype(int))
    assert not hasattr(tuner, "best_estimator_")


def test_the_end_to_end_tuners_keep_no_seed(monkeypatch):
    """The transfer tuner the end-to-end chapter hands out (its ledger example) holds no seed: neither the
    tuner's, which regenerates every candidate's noise, nor the transfer template's, which regenerates the
    shared source release's noise (a source record could then be identified from the held tuner)."""
    from dpstack.audit import seed_findings

    EE = _synthetic_experiments(monkeypatch)
    for method in ("PPTL-FS(W)", "SimComb"):
        tuner, _, _ = EE._transfer_tuner(method, 1.0, 2, [1e-2, 1e-1], [0.5], 0.2, 0, np.random.SeedSequence(0))
        assert seed_findings(tuner) == [], method
        assert tuner.random_state is None and tuner.estimator.random_state is None
        assert tuner.estimator.source_privacy_.total() == 1.0  # the source release is kept, only its seed dropped
