"""The RUIJIN-like cohort generator: sizes, importances, determinism, the assumed structure."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from dpstack.datasets import RUIJIN_SIZES, make_ruijin_like, ruijin_feature_table
from dpstack.datasets.ruijin import DOCTOR_IMPORTANCE

SMALL = {"main": 6000, "branch_1": 3000, "branch_2": 3000}


@pytest.fixture(scope="module")
def cohort():
    return make_ruijin_like(random_state=0)


def test_sizes_are_pst_table_4(cohort):
    sizes = {k: len(c.target) for k, c in cohort.centres.items()}
    assert sizes == RUIJIN_SIZES
    assert sizes["main"] == 12702 and len(sizes) == 17
    assert sizes["branch_4"] == 2327 and sizes["branch_12"] == 2316
    assert sum(RUIJIN_SIZES.values()) - RUIJIN_SIZES["main"] + 7882 + 4820 == sum(
        [7882, 4820, 4334, 4739, 6121, 2327, 5619, 6360, 4966, 5793, 6215, 3659, 5579, 2316, 4285, 6017, 6482, 4493]
    )


def test_fifty_features_with_table_3_importances_summing_to_one(cohort):
    assert len(cohort.feature_names) == 50 == len(set(cohort.feature_names))
    assert all(c.data.shape[1] == 50 for c in cohort.centres.values())
    q = dict(zip(cohort.feature_names, cohort.feature_importance))
    for name, value in DOCTOR_IMPORTANCE.items():
        assert q[name] == value
    assert np.isclose(cohort.feature_importance.sum(), 1.0) and cohort.feature_importance.min() > 0
    table = ruijin_feature_table()
    assert (table["importance source"] == "doctors (PST Table 3)").sum() == 9
    tiers = table[table["importance source"] != "doctors (PST Table 3)"]
    assert np.isclose(tiers.importance.sum(), 1 - sum(DOCTOR_IMPORTANCE.values()))


def test_deterministic_per_seed_and_different_across_seeds():
    a = make_ruijin_like(random_state=3, sizes=SMALL)
    b = make_ruijin_like(random_state=3, sizes=SMALL)
    c = make_ruijin_like(random_state=4, sizes=SMALL)
    for k in SMALL:
        np.testing.assert_array_equal(a.centres[k].data, b.centres[k].data)
        np.testing.assert_array_equal(a.centres[k].target, b.centres[k].target)
    assert not np.array_equal(a.centres["main"].data, c.centres["main"].data)


def test_prevalence_matches_the_set_values(cohort):
    for c in cohort.centres.values():
        se = np.sqrt(c.prevalence * (1 - c.prevalence) / len(c.target))
        assert abs(c.target.mean() - c.prevalence) < 5 * se + 0.002
    assert cohort.centres["main"].prevalence == 0.10
    assert all(0.05 <= c.prevalence <= 0.15 for c in cohort.centres.values())


def test_true_relevance_tracks_importance(cohort):
    rho = spearmanr(np.abs(cohort.coef), cohort.feature_importance).statistic
    assert rho > 0.8
    main = cohort.centres["main"]
    glu0 = cohort.feature_names.index("Glu0")
    hdl = cohort.feature_names.index("HDL")
    cases, controls = main.data[main.target == 1], main.data[main.target == 0]
    assert cases[:, glu0].mean() > controls[:, glu0].mean() + 0.2  # glucose higher in later cases
    assert cases[:, hdl].mean() < controls[:, hdl].mean()  # HDL protective


def test_correlated_clinical_groups(cohort):
    X = cohort.centres["main"].data
    names = cohort.feature_names
    r = np.corrcoef(X, rowvar=False)
    within = r[names.index("Glu0"), names.index("Glu120")]
    across = r[names.index("Glu0"), names.index("tea")]
    assert within > 0.5 and abs(across) < 0.05
    assert r[names.index("HDL"), names.index("TG")] < 0  # loadings carry direction


def test_centres_differ_but_a_small_branch_benefits_from_the_main_centre(cohort):
    main, branch = cohort.centres["main"], cohort.centres["branch_12"]
    assert np.abs(branch.mean_shift).max() > 0.2 and not np.allclose(branch.coef, cohort.coef)
    assert abs(branch.data.mean(0) - main.data.mean(0)).max() > 0.2
    test = slice(1000, None)
    own = LogisticRegression(max_iter=2000).fit(branch.data[:200], branch.target[:200])
    big = LogisticRegression(max_iter=2000).fit(main.data, main.target)
    auc_own = roc_auc_score(branch.target[test], own.decision_function(branch.data[test]))
    auc_main = roc_auc_score(branch.target[test], big.decision_function(branch.data[test]))
    assert auc_main > auc_own + 0.03


def test_pptl_table3_sizes_are_the_cohort_sizes():
    """PPTL Table 3 as printed: centres 3-18 are the branches, centres 1 + 2 the main centre."""
    from dpstack.companion import paper_values as pv

    table = pv.centre_sizes_frame()
    assert table["centre"].tolist() == list(range(1, 19)) and table["source"].str.contains("Table 3").all()
    branches = table[table["branch"] > 0]
    assert {f"branch_{b}": n for b, n in zip(branches["branch"], branches["paper_n"])} == {
        k: v for k, v in RUIJIN_SIZES.items() if k != "main"
    }
    assert table.loc[table["branch"] == 0, "paper_n"].sum() == RUIJIN_SIZES["main"]
