"""The sentences that answer what a DP reader asks (issue 37): generated from the data, and right about it."""

import numpy as np
import pandas as pd

from dpstack.companion.chapters.plr import below_chance_sentence as plr_below_chance
from dpstack.companion.chapters.plr import calibration_grid, switch_sentence
from dpstack.companion.papers.pst.pages import alpha_sentence, below_chance_sentence
from dpstack.companion.papers.stacked_pages import falling_auc_sentence


def test_the_switch_sentence_names_the_first_n_of_the_delta_free_branch_and_its_noise_scale():
    ns = np.unique(np.round(np.logspace(1, 4.5, 60)).astype(int))
    cal = calibration_grid([0.1, 1.0], ns, [0.01])
    text = switch_sentence(cal)
    free = cal[(cal.epsilon == 1.0) & (cal.delta == 0)].sort_values("n").iloc[0]
    assert f"n = {int(free.n):,}, where ε′/ε = {free.epsilon_noise:.3f}" in text
    assert f"the noise scale 2/ε′ is {free.noise_scale:,.0f}" in text
    assert switch_sentence(cal[cal.delta == 0]) == ""  # no switch in the grid: nothing to explain


def _auc(means, n_repeats=10, spread=0.2, by=None):
    rng = np.random.default_rng(0)
    rows = []
    for key, mean in means.items():
        values = mean + spread * rng.standard_normal(n_repeats)
        values += mean - values.mean()  # exactly this mean
        for r, v in enumerate(values):
            rows.append({**by(key), "repeat": r, "auc": v})
    return pd.DataFrame(rows)


def test_means_below_chance_are_named_with_their_intervals_and_called_chance_only_when_they_contain_half():
    plr = lambda key: {"method": key[0], "n": key[1], "epsilon": 0.1}  # noqa: E731
    wide = _auc({("ε = 0.1", 25): 0.46, ("ε = 5", 25): 0.9}, by=plr)
    text = plr_below_chance(wide)
    assert "1 of the table's means, for ε = 0.1; lowest 0.460 at n = 25" in text
    assert "every such mean over the 10 repeats contains 0.5" in text
    narrow = _auc({("ε = 0.1", 25): 0.3, ("ε = 5", 25): 0.9}, spread=0.01, by=plr)
    assert "not every such mean's" in plr_below_chance(narrow)
    assert plr_below_chance(_auc({("ε = 5", 25): 0.9}, by=plr)) == ""
    pst = lambda key: {"method": "PST-S", "combiner": key, "epsilon": 1.0}  # noqa: E731
    text = below_chance_sentence(_auc({"C-2": 0.39, "C-hl": 0.8}, by=pst))
    assert text.startswith("Mean AUCs below 0.5 (PST-S C-2 at ε = 1: 0.390") and "contains 0.5" in text
    assert below_chance_sentence(_auc({"C-hl": 0.8}, by=pst)) == ""


def test_the_alpha_sentence_finds_the_alphas_whose_first_group_takes_the_whole_budget():
    rows = [
        {"dataset": "D", "method": "PST-F(W)", "alpha": a, "repeat": r, "auc": 0.9 + (a == 0.9) * 0.01 * r}
        for a in (0.3, 0.5, 0.7, 0.9, 2.0)
        for r in range(3)
    ]
    text = alpha_sentence(pd.DataFrame(rows), n_features=100, n_groups=5)
    assert text.startswith("Why the AUCs for α ≤ 0.7 are equal") and "the 20 features of largest variance" in text
    assert "differ by at most 0.0000 in any repeat" in text and "α = 0.9 gives the other groups a share" in text
    # with 5 features in 5 groups no α below 1 gives the first group the whole budget: nothing to explain
    assert alpha_sentence(pd.DataFrame(rows), n_features=5, n_groups=5) == ""


def test_a_falling_auc_is_explained_only_when_it_falls_and_its_interval_is_reported():
    rows = []
    for r in range(10):
        for eps, auc, lam in ((1.0, 0.98, 10.0), (8.0, 0.97 - 0.05 * (r == 0), 0.1)):
            rows.append(
                {"method": "M", "protocol": "p", "epsilon": eps, "repeat": r, "auc": auc + 0.001 * r, "lam": lam}
            )
    df = pd.DataFrame(rows)
    text = falling_auc_sentence(df, "M", "p")
    assert "(mean 0.985 at ε = 1, 0.969 at ε = 8)" in text and "the worst at ε = 8: 0.920" in text
    assert "the λ it picks falls with ε (mean 10 at ε = 1, 0.1 at ε = 8)" in text
    same_lam = falling_auc_sentence(df.assign(lam=1.0), "M", "p")
    assert same_lam and "the λ it picks" not in same_lam  # λ does not fall: no sentence about it
    rising = df.assign(auc=np.where(df.epsilon == 8.0, 0.99, 0.98))
    assert falling_auc_sentence(rising, "M", "p") == ""


def test_the_audit_pages_bottom_lines_follow_the_stored_tables_and_name_a_failure():
    from dpstack.audit import stored
    from dpstack.companion.chapters import audit_pages

    tables, _, _ = stored.load_tables("quick", 1.0, 0)
    mech, mut = tables["mechanisms"], tables["mutants"]
    assert audit_pages.exact_lines(mech, 1.0)[0].startswith(f"{len(mech)} of {len(mech)} mechanism configurations")
    broken = mech.assign(verdict=["fail"] + ["pass"] * (len(mech) - 1))
    assert audit_pages.exact_lines(broken, 1.0) == [
        f"{len(mech) - 1} of {len(mech)} mechanism configurations pass at ε = 1. Not passed: {mech['mechanism'][0]}."
    ]
    assert audit_pages.chapter_lines({**tables, "mechanisms": broken}, 1.0)[0].startswith("Not every mechanism")
    missed = mut.assign(verdict=["not caught"] + list(mut["verdict"][1:]))
    assert audit_pages.mutant_lines(missed)[0].startswith(f"{len(mut) - 1} of {len(mut)} mutants caught")
    assert audit_pages.law_lines(tables["power"])[0].startswith("Passed")
    weak = tables["power"].assign(**{"rejection rate": 0})  # the test rejects none of the planted errors
    assert audit_pages.law_lines(weak)[0].startswith("Not passed")
