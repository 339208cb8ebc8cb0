"""PPTL against today's alternatives: the grid, the source-centred DP-GD, and the page's helpers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpstack.alternatives import NoisyGradientDescentClassifier, clipped_logistic_gradient_sum
from dpstack.alternatives.centred import SourceCentredGradientDescentClassifier
from dpstack.companion import results
from dpstack.companion.papers.pptl import alternatives as alt
from dpstack.companion.papers.pptl import grids as pptl
from dpstack.companion.papers.pptl import pages
from dpstack.companion.runner import cell_seed
from dpstack.mechanisms import clip_rows


def _data(n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / 3
    return X, (X[:, 0] + 0.2 * rng.normal(size=n) > 0).astype(int)


# ----------------------------------------------------------------------------- the source-centred DP-GD
def test_a_zero_centre_is_plain_dp_gd_and_the_guarantee_is_dp_gds():
    X, y = _data()
    kw = dict(epsilon=1.0, lam=0.05, n_steps=30, random_state=7, classes=[0, 1])
    plain = NoisyGradientDescentClassifier(**kw).fit(X, y)
    centred = SourceCentredGradientDescentClassifier(centre=np.zeros(X.shape[1]), **kw).fit(X, y)
    np.testing.assert_allclose(centred.coef_, plain.coef_, rtol=1e-12, atol=1e-14)
    assert centred.noise_multiplier_ == plain.noise_multiplier_
    assert str(centred.guarantee_) == str(plain.guarantee_)


def test_the_pull_keeps_the_source_model_and_no_pull_leaves_it():
    X, y = _data()
    w0 = np.array([0.0, 3.0, 0.0, 0.0, 0.0])  # a source model orthogonal to the target's signal
    kw = dict(epsilon=np.inf, n_steps=50, classes=[0, 1])
    held = SourceCentredGradientDescentClassifier(centre=w0, lam=1e6, **kw).fit(X, y)
    free = SourceCentredGradientDescentClassifier(centre=w0, lam=0.0, **kw).fit(X, y)
    np.testing.assert_allclose(held.coef_[0], w0, atol=1e-4)
    assert free.coef_[0, 0] > 1.0  # moved towards the target's signal
    # the descent starts from w₀: one noiseless step without pull is one gradient step away from it
    one = SourceCentredGradientDescentClassifier(centre=w0, lam=0.0, **dict(kw, n_steps=1)).fit(X, y)
    y_signed = 2.0 * y - 1
    step = (
        clipped_logistic_gradient_sum(clip_rows(X, 1.0), y_signed, w0) / len(y) / 0.25
    )  # η = 1/L, L = B²/4 with λ = 0
    np.testing.assert_allclose(one.coef_[0], w0 - step, rtol=1e-12)
    with pytest.raises(ValueError, match="centre must hold 5 coefficients"):
        SourceCentredGradientDescentClassifier(centre=np.zeros(4), classes=[0, 1]).fit(X, y)


# ----------------------------------------------------------------------------- the grid
def test_the_grid_is_table_1s_grid_for_the_alternatives():
    keys = ["dataset", "epsilon", "repeat", "lam_grid", "eta_grid"]
    table1 = {tuple(str(c[k]) for k in keys) for c in pptl.table1_cells("paper")}
    ours = alt.alternatives_cells("paper")
    assert {tuple(str(c[k]) for k in keys) for c in ours} == table1
    assert {c["method"] for c in ours} == set(alt.ALTERNATIVE_METHODS)
    assert len(ours) == len(pptl.table1_cells("paper")) // len(pptl.TRANSFER_METHODS) * len(alt.ALTERNATIVE_METHODS)
    with pytest.raises(ValueError, match="methods must be taken from"):
        alt.alternatives_cells("quick", methods=["PPTL-FS(W)"])


def test_every_method_evaluates_as_many_candidates_as_table_1s():
    p = pptl.TRANSFER_PROFILES["paper"]
    k = len(pptl.transfer_candidates("PPTL-FS(W)", p["lam_grid"], p["eta_grid"])) + len(p["lam_grid"])
    cands = alt.candidates(p["lam_grid"], p["eta_grid"])
    assert len(cands) == k == len(pptl.transfer_candidates("Direct", p["lam_grid"], p["eta_grid"]))
    lams = [lam for lam, _ in cands]
    assert min(lams) == min(p["lam_grid"]) and max(lams) == pytest.approx(max(p["lam_grid"]))


def test_the_registered_result_computes_only_the_alternatives_on_table_1s_draws():
    e = results.get("pptl_alternatives")
    t1 = results.get("pptl_table1_mnist")
    ours = e.cells(**e.profiles["paper"])
    assert {c["method"] for c in ours} == set(alt.ALTERNATIVE_METHODS)  # the papers' methods are read, not run
    draws = {(c["repeat"], c["data_seed"]) for c in t1.cells(**t1.profiles["paper"])}
    assert {(c["repeat"], c["data_seed"]) for c in ours} == draws


def test_a_repeat_shares_table_1s_source_rows_target_split_and_test_set(monkeypatch):
    """DP-GD and Direct (and the sources of SimComb and of DP-GD from the source) see the same rows."""
    from dpstack.transfer import SimComb

    seen = {}

    def record(name, real):
        def fit(self, X, y, *args, **kwargs):
            seen.setdefault(name, []).append(np.asarray(X).copy())
            return real(self, X, y, *args, **kwargs)

        return fit

    monkeypatch.setattr(SimComb, "fit", record("direct", SimComb.fit))
    monkeypatch.setattr(SimComb, "fit_source", record("simcomb source", SimComb.fit_source))
    monkeypatch.setattr(NoisyGradientDescentClassifier, "fit", record("gd", NoisyGradientDescentClassifier.fit))
    alt._SOURCE_CACHE.clear()
    pptl._SOURCE_CACHE.clear()
    cell = dict(dataset="SYNTH", epsilon=1.0, repeat=2, lam_grid=[0.1, 1.0], eta_grid=[0.5])
    pptl.transfer_cell(method="Direct", **cell, seed_sequence=cell_seed(0, cell))
    pptl.transfer_cell(method="SimComb", **cell, seed_sequence=cell_seed(0, cell))
    n_gd = len(alt.candidates(cell["lam_grid"], cell["eta_grid"]))
    alt.alternative_cell(method="DP-GD (target only)", **cell, seed_sequence=cell_seed(0, cell))
    target_rows = {a.round(12).tobytes() for a in seen["gd"][:n_gd]}
    assert target_rows == {seen["direct"][0].round(12).tobytes()}
    seen["gd"].clear()
    alt.alternative_cell(method="DP-GD from the source", **cell, seed_sequence=cell_seed(0, cell))
    source_rows = {a.round(12).tobytes() for a in seen["gd"] if len(a) != len(seen["direct"][0])}
    assert source_rows == {seen["simcomb source"][0].round(12).tobytes()}


def test_the_public_source_is_fitted_without_noise_and_the_private_one_with():
    X, y = _data(600)
    public = [alt.source_model("DP-GD from a public source", e, 0.1, X, y, seed=3) for e in (0.5, 8.0)]
    private = [alt.source_model("DP-GD from the source", e, 0.1, X, y, seed=3) for e in (0.5, 8.0)]
    np.testing.assert_array_equal(public[0], public[1])
    noiseless = NoisyGradientDescentClassifier(
        epsilon=np.inf, lam=0.1, n_steps=alt.GD_STEPS, random_state=3, classes=[0, 1]
    ).fit(X, y)
    np.testing.assert_array_equal(public[0], noiseless.coef_[0])
    assert not np.allclose(private[0], private[1])


def test_the_cell_returns_the_chosen_models_scores():
    cell = dict(dataset="SYNTH", epsilon=2.0, repeat=0, lam_grid=[1e-2, 1.0], eta_grid=[0.5])
    for method in alt.ALTERNATIVE_METHODS:
        row = alt.alternative_cell(method=method, **cell, seed_sequence=cell_seed(0, cell))
        assert 0.5 < row["auc"] <= row["auc_oracle"] + 1e-12 <= 1 + 1e-12
        assert row["n_candidates"] == len(alt.candidates(cell["lam_grid"], cell["eta_grid"]))
        assert row["noise_multiplier"] > 0 and 1e-2 <= row["lam"] <= 1.0
        assert np.isnan(row["auc_source"]) == (method == "DP-GD (target only)")


# ----------------------------------------------------------------------------- the page's helpers
def _frame():
    rows = []
    for r in range(5):
        for eps in (0.5, 1.0, 2.0, 8.0):
            gap = {0.5: 0.05, 1.0: 0.0, 2.0: -0.01, 8.0: -0.02}[eps]
            jitter = 0.01 * ((r % 2) - 0.5) if eps == 1.0 else 0.001 * r
            for method, auc in (
                ("PPTL-FS(W)", 0.90 + gap + jitter),
                ("DP-GD from the source", 0.90 + 0.002 * r),
                ("DP-GD (target only)", 0.88 + 0.002 * r),
                ("Direct", 0.85),
            ):
                rows.append(dict(method=method, epsilon=eps, repeat=r, auc=auc, lam=1.0))
    return pd.DataFrame(rows)


def test_the_verdicts_pair_by_repeat_and_answer_per_epsilon():
    v = pages.transfer_verdicts(_frame()).set_index("epsilon")
    assert v.loc[0.5, "answer"] == "yes" and v.loc[8.0, "answer"] == v.loc[2.0, "answer"] == "no, behind"
    assert v.loc[1.0, "answer"] == "not resolved"
    assert v.loc[0.5, "difference"] == pytest.approx(0.05 + 0.001 * 2 - 0.002 * 2)
    assert (v["repeats"] == 5).all()
    # shuffling the rows changes nothing: the pairing is by repeat, not by position
    shuffled = _frame().sample(frac=1.0, random_state=0)
    pd.testing.assert_frame_equal(pages.transfer_verdicts(shuffled), pages.transfer_verdicts(_frame()))


def test_the_landing_sentence_counts_the_verdicts():
    text = pages.today_sentence(_frame(), link="x.html")
    # said from DP-GD's side, as PST's line: DP-GD ahead where PPTL-FS(W) is behind
    assert "ahead at 2 and behind at 1 of 4 values of ε" in text and "[today's alternatives](x.html)" in text
    assert pages.today_sentence(_frame()[_frame()["method"] != "PPTL-FS(W)"]) == ""


def test_the_papers_rows_are_read_from_table_1_on_shared_draws_only():
    alts = pd.DataFrame(
        [dict(method="DP-GD (target only)", epsilon=1.0, repeat=r, data_seed=r, auc=0.9, lam=1.0) for r in range(2)]
    )
    table1 = pd.DataFrame(
        [
            dict(method=m, epsilon=e, repeat=r, data_seed=r, auc=0.5 + r / 10, lam=0.1)
            for m in ("Direct", "PPTL-FS(R)")
            for e in (1.0, 2.0)
            for r in range(3)
        ]
    )
    frame = pages.alternatives_frame(alts, table1=table1)
    direct = frame[frame["method"] == "Direct"]
    assert sorted(direct["repeat"]) == [0, 1] and set(direct["epsilon"]) == {1.0}
    assert direct.sort_values("repeat")["auc"].tolist() == [0.5, 0.6]
    assert "PPTL-FS(R)" not in set(frame["method"])  # only the page's papers' methods
    assert len(pages.alternatives_frame(alts, seed=1)) == 2  # another seed: not paired, alternatives alone


def test_the_tuning_table_prices_the_search():
    alts = pd.DataFrame(
        [
            dict(epsilon=e, n_candidates=10, noise_multiplier=z)
            for e, z in (
                (1.0, NoisyGradientDescentClassifier(epsilon=1.0, classes=[0, 1]).fit(*_data()).noise_multiplier_),
            )
        ]
    )
    t = pages.tuning_table(alts)
    pure, gd = t.iloc[0], t.iloc[1]
    assert "pure ε" in pure["methods"] and "DP-GD" in gd["methods"] and (t["K"] == 10).all()
    assert pure["K candidates composed"] == 10.0 and pure["private selection (mean K runs)"] == 3.0
    assert gd["the papers' way (outside the guarantee)"] == pytest.approx(1.0, abs=2e-3)
    assert (
        gd["K candidates composed"]
        > gd["private selection (mean K runs)"]
        > gd["the papers' way (outside the guarantee)"]
    )


def test_the_findings_answer_the_pages_question():
    text = pages.alternatives_findings(_frame())
    assert "Does PPTL-FS(W) still beat DP-GD from the source?" in text
    assert "ahead at 1 of the 4 values of ε, behind at 2 (ε = 2, 8)" in text
    assert "At ε = 0.5** the best mean test AUC of a private method is PPTL-FS(W)'s" in text
    assert "-0.0000" not in pages.alternatives_findings(_frame().assign(auc=0.9))
