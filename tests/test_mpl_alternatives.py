"""MPL against today's alternatives: the grid shares the KDD page's splits, reads the paper's methods from
its committed result, releases GNMax under the data-independent guarantee; the page's helpers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpstack.alternatives import gnmax_epsilon, gnmax_sigma
from dpstack.alternatives import pate_bounds as pb
from dpstack.companion import results
from dpstack.companion.papers.mpl import alternatives as alt
from dpstack.companion.papers.mpl import grids as mpl
from dpstack.companion.papers.mpl import pages
from dpstack.companion.runner import cell_seed

PAPER_ROWS = {*alt.PAPER_METHODS, *alt.REFERENCES}


# ----------------------------------------------------------------------------- the grid
def test_the_grid_is_the_kdd_pages_grid_for_the_alternatives():
    ours = alt.alternatives_cells("paper", n_trials=10)
    assert len(ours) == 3 * 10
    keys = ["n_parties", "party_size", "n_aux", "lam", "repeat"]
    kdd = {tuple(c[k] for k in keys) for c in mpl.mpl_cells("kdd", "paper", n_trials=10)}
    assert {tuple(c[k] for k in keys) for c in ours} == kdd
    assert all(set(c["inv_epsilons"]) <= set(mpl.INV_EPSILONS) for c in ours)
    assert all(c["methods"] == list(alt.ALTERNATIVE_METHODS) for c in ours)
    quick = alt.alternatives_cells("quick")
    assert [c["n_parties"] for c in quick] == list(alt.PROFILES["quick"]["n_parties"])
    with pytest.raises(ValueError, match="methods must be taken from"):
        alt.alternatives_cells("quick", methods=["vote"])  # the paper's methods are read, not computed here


def _synthetic(n_train=1400, n_test=300, d=6, seed=3):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)

    def draw(n):
        X = rng.normal(size=(n, d)) / (2 * math.sqrt(d))
        return X, (X @ w + 0.05 * rng.normal(size=n) > 0).astype(int)

    X, y = draw(n_train)
    Xt, yt = draw(n_test)
    return X, y, Xt, yt


@pytest.fixture
def small_kdd(monkeypatch):
    """KDD's pipeline on a small synthetic data set (same code paths: no PCA, classes 0/1)."""
    data = _synthetic()
    monkeypatch.setattr(mpl, "load_mpl_dataset", lambda dataset: data)
    monkeypatch.setattr(alt, "load_mpl_dataset", lambda dataset: data)
    return dict(dataset="kdd", n_parties=60, party_size=15, n_aux=300, n_noise=3, lam=1e-2)


def test_a_split_is_the_kdd_pages_split_of_the_same_repeat(small_kdd, monkeypatch):
    """The alternatives and the paper's methods of a repeat are fitted on the same parties and auxiliary rows."""
    seen = {}
    real = alt.fit_methods

    def recorder(tag):
        def fit(methods, X, y, parties, X_aux=None, **params):
            seen.setdefault(tag, []).append((X.tobytes(), y.tobytes(), np.asarray(parties).tobytes(), X_aux.tobytes()))
            return real(methods, X, y, parties, X_aux, **params)

        return fit

    monkeypatch.setattr(alt, "fit_methods", recorder("alternatives"))
    monkeypatch.setattr(mpl, "fit_methods", recorder("kdd"))
    for repeat in (0, 4):
        rows = alt.alternatives_trial(
            inv_epsilons=[0.0, 1.0],
            **small_kdd,
            methods=["soft + Gaussian noise"],
            seed_sequence=cell_seed(0, {"repeat": repeat}),
        )
        kdd = mpl.mpl_trial(inv_epsilons=[0.0], **small_kdd, seed_sequence=cell_seed(0, {"repeat": repeat}))
        soft = [r["accuracy"] for r in kdd if r["method"] == "soft"]
        # soft's noiseless model: the same fit, hence the same test accuracy, bit for bit
        assert {r["soft_check"] for r in rows} == set(soft)
    assert seen["alternatives"] == seen["kdd"] and len(set(seen["kdd"])) == 2


def test_the_trial_computes_only_the_alternatives_and_gnmax_releases_the_data_independent_guarantee(small_kdd):
    rows = pd.DataFrame(
        alt.alternatives_trial(inv_epsilons=[0.0, 1.0, 10.0], **small_kdd, seed_sequence=cell_seed(0, {}))
    )
    assert set(rows["method"]) == set(alt.ALTERNATIVE_METHODS)  # no row of vote / soft / avg / batch / indiv
    g = rows[(rows["method"] == "PATE-GNMax") & (rows["inv_epsilon"] > 0)]
    assert len(g) == 2 * small_kdd["n_noise"]
    Q = min(alt.GNMAX_QUERIES, small_kdd["n_aux"])
    for inv, part in g.groupby("inv_epsilon"):
        # σ is the data-independent calibration: a function of ε, δ and Q only, and it meets ε
        assert (part["noise_multiplier"] == gnmax_sigma(1.0 / inv, alt.DELTA, Q)).all()
        assert gnmax_epsilon(part["noise_multiplier"].iloc[0], Q, alt.DELTA) <= 1.0 / inv + 1e-9
        # the data-dependent diagnostic never exceeds the data-independent ε of the same accounting
        assert (part["epsilon_data_dependent"] <= part["epsilon_rdp"] + 1e-12).all()
    other = rows[rows["method"] != "PATE-GNMax"]
    assert other["epsilon_data_dependent"].isna().all()
    fed = rows[(rows["method"] == "DP-FedAvg")]
    assert (fed.groupby("inv_epsilon").size() == 1).all()  # one run per ε
    assert fed.loc[fed["inv_epsilon"] > 0, "noise_multiplier"].is_monotonic_increasing


def test_gnmax_noise_does_not_depend_on_the_votes(small_kdd, monkeypatch):
    """Two data sets with different votes get the same σ (the released guarantee) and different diagnostics."""
    out = []
    for seed in (3, 11):
        data = _synthetic(seed=seed)
        monkeypatch.setattr(alt, "load_mpl_dataset", lambda dataset, data=data: data)
        rows = pd.DataFrame(
            alt.alternatives_trial(
                inv_epsilons=[0.1], **small_kdd, methods=["PATE-GNMax"], seed_sequence=cell_seed(0, {})
            )
        )
        out.append(rows)
    assert out[0]["noise_multiplier"].tolist() == out[1]["noise_multiplier"].tolist()
    assert out[0]["epsilon_data_dependent"].iloc[0] != out[1]["epsilon_data_dependent"].iloc[0]


# ----------------------------------------------------------------------------- the data-dependent bound
def test_the_data_dependent_bound_is_small_for_clear_votes_and_the_data_independent_one_for_ties():
    sigma = gnmax_sigma(1.0, 1e-5, 200)
    clear = np.tile([[9000, 1000]], (200, 1))
    tie = np.tile([[5000, 5000]], (200, 1))
    dd_clear, di = pb.gnmax_epsilon_data_dependent(clear, sigma, 1e-5)
    dd_tie, di_tie = pb.gnmax_epsilon_data_dependent(tie, sigma, 1e-5)
    assert di == di_tie and dd_tie == pytest.approx(di, rel=1e-9)
    assert dd_clear < 0.2 * di
    # the data-independent RDP ε agrees with dp-accounting's RDP accountant on the same orders' scale
    assert di == pytest.approx(gnmax_epsilon(sigma, 200, 1e-5, accountant="RDP"), rel=2e-3)


def test_log_q_is_propositions_7_bound():
    votes = np.array([[10.0, 4.0, 1.0]])
    sigma = 3.0
    from scipy.stats import norm

    q = norm.sf(6 / (math.sqrt(2) * sigma)) + norm.sf(9 / (math.sqrt(2) * sigma))
    assert pb.gnmax_log_q(votes, sigma)[0] == pytest.approx(math.log(q), rel=1e-12)


# ----------------------------------------------------------------------------- the page's helpers
def _frame():
    rows = []
    for r in range(5):
        for inv in (0.0, 1.0):
            rows.append(
                dict(n_parties=10, method="soft", inv_epsilon=inv, repeat=r, accuracy=0.90 - 0.3 * inv + 0.01 * r)
            )
            rows.append(dict(n_parties=10, method="avg", inv_epsilon=inv, repeat=r, accuracy=0.80 + 0.01 * r))
            rows.append(dict(n_parties=10, method="PATE-GNMax", inv_epsilon=inv, repeat=r, accuracy=0.91 + 0.01 * r))
        rows.append(dict(n_parties=10, method="batch", inv_epsilon=np.nan, repeat=r, accuracy=0.95))
    return pd.DataFrame(rows)


def test_paired_gaps_are_against_the_papers_best_method_at_each_point():
    gaps = pages.paired_gaps(_frame()).set_index("inv_epsilon")
    assert gaps.loc[0.0, "reference"] == "soft" and gaps.loc[1.0, "reference"] == "avg"
    assert gaps.loc[0.0, "difference"] == pytest.approx(0.01)
    assert gaps.loc[1.0, "difference"] == pytest.approx(0.11)
    assert gaps.loc[1.0, "low"] == pytest.approx(0.11)  # a constant paired difference has no spread
    assert (gaps["repeats"] == 5).all()


def test_findings_and_landing_sentence_count_finite_epsilons_only():
    frame = _frame()
    text = pages.alternatives_findings(frame, majority=0.8)
    assert "ε = 1:** the best mean test accuracy is PATE-GNMax's, 0.930; the paper's best, avg, 0.820" in text
    assert "of the 1 finite values of ε: PATE-GNMax ahead at 1 and behind at 0" in text
    sentence = pages.today_sentence(frame, link="mpl_alternatives.html")
    assert "[today's alternatives](mpl_alternatives.html)" in sentence
    assert "PATE-GNMax ahead at 1 and behind at 0 of 1 values of ε" in sentence


def test_the_papers_rows_are_read_from_the_kdd_result_on_the_same_splits():
    frame = _frame()
    ours = pd.DataFrame(
        [
            dict(n_parties=10, method="PATE-GNMax", inv_epsilon=1.0, repeat=r, draw=k, accuracy=0.9)
            for r in (0, 1)
            for k in (0, 1)
        ]
    )
    kdd = frame[frame["method"] != "PATE-GNMax"].assign(noise=mpl.DP_NOISE, draw=0)
    joined = pages.alternatives_frame(ours, kdd=kdd)
    assert sorted(joined.loc[joined["method"] == "soft", "repeat"].unique()) == [0, 1]
    assert set(joined.loc[joined["method"] == "soft", "inv_epsilon"]) == {1.0}  # only the alternatives' grid
    assert joined.loc[joined["method"] == "batch", "accuracy"].tolist() == [0.95, 0.95]
    # another root seed: the KDD page's splits are not this run's, so nothing is joined
    assert set(pages.alternatives_frame(ours, seed=1)["method"]) == {"PATE-GNMax"}


def test_the_guarantee_table_covers_every_method_and_says_the_unit():
    table = pages.guarantee_table(pages.TODAY_ORDER)
    assert set(table.index) == {*alt.PAPER_METHODS, *alt.ALTERNATIVE_METHODS}
    assert table["privacy unit"].str.startswith("one party").all()
    assert (table.loc[list(alt.PAPER_METHODS), "guarantee"] == "pure ε").all()
    assert "rounds of interaction" in table.loc["DP-FedAvg", "assumes"]


def test_honest_tuning_costs_more_than_one_run_and_random_stopping_is_three_epsilon():
    table = pages.tuning_table(epsilons=(1.0,), candidates=5).set_index("method")
    assert (table.loc[list(alt.PAPER_METHODS), "geometric K"] == 3.0).all()
    assert (table.loc[list(alt.PAPER_METHODS), "5 runs composed"] == 5.0).all()
    today = table.loc[list(alt.ALTERNATIVE_METHODS)]
    for column in ("geometric K", "Poisson K", "logarithmic K"):
        assert (today[column] > today["one run, by RDP"]).all(), column
        assert (today[column] < today["5 runs composed"]).all(), column


# ----------------------------------------------------------------------------- the committed result
@pytest.fixture(scope="module")
def committed():
    try:
        return results.load("mpl_alternatives", "paper"), results.load("mpl_kdd", "paper")
    except results.MissingResultError:
        pytest.skip("no committed result")


def test_the_committed_result_holds_only_the_alternatives_on_the_kdd_pages_splits(committed):
    ours, kdd = committed
    assert set(ours["method"]) == set(alt.ALTERNATIVE_METHODS)
    # soft's noiseless accuracy, recomputed in each cell from the same split, equals the KDD page's
    check = ours.groupby(["n_parties", "repeat"])["soft_check"].first()
    soft = kdd[(kdd["method"] == "soft") & (kdd["inv_epsilon"] == 0)].set_index(["n_parties", "repeat"])["accuracy"]
    assert (check == soft.reindex(check.index)).all()
    frame = pages.alternatives_frame(ours)
    assert set(frame["method"]) == set(pages.TODAY_ORDER)
    assert (
        frame.groupby(["n_parties", "method", "inv_epsilon"], dropna=False)["repeat"]
        .nunique()
        .eq(ours["repeat"].nunique())
        .all()
    )
