"""The book's table style: "ours ± CI (paper)" at the paper's precision, no NaN, counts as integers."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpstack.companion.stats import t_half_width as ci_half_width
from dpstack.companion.tables import MISSING, as_table, decimals_of, paper_vs_ours, scrollable, tidy


def repeats(cells):
    return pd.DataFrame([dict(method=m, epsilon=e, auc=a) for (m, e), values in cells.items() for a in values])


def test_ci_half_width_is_scipys_t_interval():
    values = [0.81, 0.84, 0.79, 0.9, 0.86]
    low, high = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
    assert ci_half_width(values) == pytest.approx((high - low) / 2)
    assert ci_half_width(values, level=0.9) < ci_half_width(values)
    assert np.isnan(ci_half_width([0.8])) and np.isnan(ci_half_width([0.8, np.nan]))


def test_decimals_are_those_the_paper_prints():
    assert decimals_of([0.9007, 0.95, 0.1]) == 4
    assert decimals_of([0.95, np.nan, None]) == 2
    assert decimals_of(["0.950", "0.9"]) == 3  # printed strings keep their trailing zeros
    assert decimals_of([12, 3]) == 0


def test_cells_read_ours_ci_and_paper_rounded_to_the_papers_precision():
    ours = repeats({("PLR", 1.0): [0.81234, 0.84, 0.79, 0.9], ("PLR", 2.0): [0.9, 0.92, 0.91, 0.95]})
    paper = pd.DataFrame({"method": ["PLR", "PLR"], "epsilon": [1.0, 2.0], "paper_mean": [0.843, 0.9]})
    table = paper_vs_ours(ours, paper)
    values = ours[ours.epsilon == 1.0].auc
    expected = f"{values.mean():.3f} ± {ci_half_width(values):.3f} (0.843)"
    assert table.frame.loc["PLR", "ε = 1"] == expected
    assert table.frame.loc["PLR", "ε = 2"].endswith("(0.900)")  # the paper's 3 decimals, trailing zero kept
    assert "4 repeats" in table.footnote and "95%" in table.footnote
    assert paper_vs_ours(ours, paper, decimals=1).frame.loc["PLR", "ε = 2"] == "0.9 ± 0.0 (0.9)"


def test_no_nan_is_shown_and_each_dash_is_explained():
    ours = repeats({("PLR", 1.0): [0.8, 0.9], ("PST-S", 1.0): [0.7], ("PST-S", 4.0): [0.7, 0.8]})
    paper = pd.DataFrame(
        {"method": ["PLR", "PLR", "Direct"], "epsilon": [1.0, 4.0, 1.0], "paper_mean": [0.85, 0.95, 0.6]}
    )
    table = paper_vs_ours(ours, paper, paper_only="show")
    text = repr(table) + table._repr_html_()
    assert "NaN" not in text and "nan" not in text and "<NA>" not in text and "…" not in text
    assert table.frame.loc["PLR", "ε = 4"] == MISSING  # the paper has it, we did not run it
    assert table.frame.loc["Direct", "ε = 1"] == MISSING
    assert table.frame.loc["PST-S", "ε = 1"] == f"0.70 ({MISSING})"  # one repeat: no interval; no paper value
    assert "single repeat" in table.footnote and "reports no value" in table.footnote
    assert "not run here" in table.footnote and "1–2 repeats" in table.footnote


def test_missing_key_column_names_the_frame_and_column():
    with pytest.raises(ValueError, match="ours has no column 'auc'"):
        paper_vs_ours(
            pd.DataFrame({"method": [], "epsilon": []}), pd.DataFrame({"method": [], "epsilon": [], "paper_mean": []})
        )
    with pytest.raises(ValueError, match="decimals"):
        paper_vs_ours(
            repeats({("PLR", 1.0): [0.8]}),
            pd.DataFrame({"method": ["PLR"], "epsilon": [1.0], "paper_mean": [0.8]}),
            decimals=-1,
        )


def test_tidy_prints_counts_as_integers_one_float_format_and_dashes():
    frame = pd.DataFrame(
        {
            "n": [3.0, 10.0, np.nan],
            "x": [0.6410, 0.069571, np.nan],
            "holds": [True, False, True],
            "claim": ["a" * 80, None, "c"],
        }
    )
    out = tidy(frame)
    assert list(out["n"]) == ["3", "10", MISSING]
    assert list(out["x"]) == ["0.6410", "0.0696", MISSING]
    assert list(out["holds"]) == ["yes", "no", "yes"]  # booleans as words
    assert out["claim"].iloc[1] == MISSING
    html = scrollable(frame)
    assert "a" * 80 in html and "…" not in html and "..." not in html and "NaN" not in html
    assert 'class="dpstack-table-scroll"' in html and "overflow-x:auto" in html


def test_nothing_is_truncated_in_a_large_table():
    frame = pd.DataFrame(np.arange(80 * 30).reshape(80, 30) / 7)
    html = scrollable(frame)
    tables = html.count("<table")
    assert tables > 1  # 30 columns of numbers do not fit the text column: split, each part with every row
    assert html.count("<tr") == 81 * tables and "…" not in html and "..." not in html
    assert all(f">{tidy(frame).iloc[79, c]}<" in html for c in range(30))


def test_text_is_left_aligned_numbers_right_aligned_and_wide_tables_split():
    from dpstack.companion.tables import COLUMN_PX, column_widths, split_columns

    frame = pd.DataFrame(
        {
            "method": ["PLR", "PST-F(W)"],
            **{f"ε = {e:g}": ["0.944 ± 0.006 (0.95)"] * 2 for e in (0.1, 0.25, 0.5, 1, 2, 4, 8, 16)},
        }
    ).set_index("method")
    html = scrollable(frame)
    assert "<th>method</th>" in html and "<td>PST-F(W)</td>" in html  # text: no class, left-aligned
    assert '<td class="dpstack-num">0.944\u00a0±\u00a00.006 (0.95)</td>' in html  # ± never breaks
    parts = split_columns(_shown := frame.reset_index(), keys=1)
    assert len(parts) == 2 and all(list(p.columns)[0] == "method" for p in parts)
    assert all(sum(column_widths(p)) <= COLUMN_PX for p in parts)
    assert sum(column_widths(_shown)) > COLUMN_PX  # the planted wide table: too wide in one piece
    assert html.count("<table") == 2
    narrow = scrollable(frame.iloc[:, :2])
    assert narrow.count("<table") == 1 and "<details" not in narrow  # fits: one table, not folded
    long = pd.DataFrame({"n": range(40)})
    assert "<details" not in scrollable(long) and "<details" in scrollable(long, fold=True)


def test_cells_the_paper_alone_reports_are_dropped_and_counted():
    ours = repeats({("PLR", 1.0): [0.8, 0.9], ("PST-S", 1.0): [0.7, 0.75]})
    paper = pd.DataFrame(
        {"method": ["PLR", "PLR", "Direct"], "epsilon": [1.0, 4.0, 1.0], "paper_mean": [0.85, 0.95, 0.6]}
    )
    table = paper_vs_ours(ours, paper)
    assert list(table.frame.index) == ["PLR", "PST-S"] and list(table.frame.columns) == ["ε = 1"]
    assert "The paper reports 2 more cells, not run here." in table.footnote
    assert MISSING not in table.frame.to_numpy().ravel().tolist()[0]
    by_method = paper_vs_ours(ours, paper, index="epsilon", columns="method")
    assert list(by_method.frame.columns) == ["PLR", "PST-S"]  # names, not "method = PLR"


def test_as_table_shows_any_frame_tidy_and_scrollable():
    from dpstack.companion.tables import as_table

    shown = as_table(pd.DataFrame({"claim": ["x", "y"], "n_pairs": [12.0, 3.0], "share": [6.9571e-05, 3e-9]}), "a note")
    assert list(shown.frame.iloc[0]) == ["x", "12", "0.0001"]
    assert list(shown.frame.iloc[1]) == ["y", "3", "< 0.0001"]  # not a false 0.0000
    # A p-value column prints as p-values: the audit's 1.6137e-314 reads "< 1e-300".
    p = as_table(pd.DataFrame({"p": [1.6137e-314, 6.9571e-05, 0.25]})).frame["p"].tolist()
    assert p == ["< 1e-300", "7.0e−5", "0.250"]
    assert "a note" in shown._repr_html_() and "dpstack-table-scroll" in shown._repr_html_()


def test_a_result_the_paper_only_plots_shows_ours_with_its_interval_and_says_why():
    ours = pd.DataFrame(
        [
            dict(dataset=d, n_groups=k, method=m, auc=a)
            for d in ("MNIST", "NEWS20")
            for k in (2, 5)
            for m in ("PST-F(U)", "PST-F(W)")
            for a in (0.81234, 0.84, 0.9)
        ]
    )
    table = paper_vs_ours(ours, None, index=["dataset", "n_groups"], columns="method")
    values = ours.auc.iloc[:3]
    assert table.frame.loc[("MNIST", 2), "PST-F(U)"] == f"{values.mean():.3f} ± {ci_half_width(values):.3f}"
    assert table.frame.shape == (4, 2) and "(" not in "".join(table.frame.to_numpy().ravel())
    assert "only plots" in table.footnote and "3 repeats" in table.footnote
    assert paper_vs_ours(ours, None, index="method", columns=None, decimals=2).frame.columns.tolist() == ["ours ± CI"]


def test_two_methods_are_never_pooled_into_one_cell():
    ours = pd.DataFrame(
        [
            dict(method=m, epsilon=1.0, repeat=r, auc=a)
            for m, a0 in (("U", 0.6), ("W", 0.9))
            for r, a in enumerate((a0, a0 + 0.01))
        ]
    )
    with pytest.raises(ValueError, match=r"several rows per repeat.*'method'"):
        paper_vs_ours(ours, None, index="epsilon", columns=None)
    table = paper_vs_ours(ours, None, index="method", columns="epsilon")
    assert table.frame.loc["U", "ε = 1"].startswith("0.605") and table.frame.loc["W", "ε = 1"].startswith("0.905")


def test_plain_text_math_and_booleans_inside_cells_read_as_words():
    from dpstack.companion.tables import math_text, readable_header

    assert math_text("target PLR (centre (1-η)w_s)") == "target PLR (centre (1-η)wₛ)"
    assert math_text("PPTL ε^(k) = ε; r^(d-1); x^2") == "PPTL ε⁽ᵏ⁾ = ε; r⁽ᵈ⁻¹⁾; x²"
    assert math_text("n_jobs and lam_grid stay code names") == "n_jobs and lam_grid stay code names"
    assert readable_header("noise / (n q_k)") == "noise / (n qₖ)"
    table = as_table(pd.DataFrame({"checks": ["parts disjoint: True; ledger ε = 1"], "ok": [False]}))
    assert table.frame.iloc[0].tolist() == ["parts disjoint: yes; ledger ε = 1", "no"]


def test_numbers_inside_text_cells_keep_four_significant_digits():
    from dpstack.companion.tables import _cell_text

    text = "claimed sensitivity 2.0000; measured 1.9848 and 0.8021; numpy 1.26.4; 12345.678; λ 5.29832e-05 / 1000"
    assert _cell_text(text, MISSING) == (
        "claimed sensitivity 2.000; measured 1.985 and 0.8021; numpy 1.26.4; 12350; λ 5.3e−5 / 1000"
    )
