"""The MPL pages' tables: paper beside ours, batch and indiv shown, no NaN, no HAR numbers on MNIST."""

import numpy as np
import pandas as pd

from dpstack.companion.papers.mpl import pages as mpl_report
from dpstack.companion.papers.mpl.grids import DP_NOISE, EXP_NOISE
from dpstack.companion.tables import MISSING


def _rows(n_repeats=3, Ms=(10,)):
    rows = []
    for M in Ms:
        for rep in range(n_repeats):
            base = dict(n_parties=M, repeat=rep)
            rows += [
                dict(base, method="batch", noise=DP_NOISE, inv_epsilon=np.nan, draw=0, accuracy=0.9 + rep / 100),
                dict(base, method="indiv", noise=DP_NOISE, inv_epsilon=np.nan, draw=0, accuracy=0.47),
            ]
            for m in ("soft", "avg", "vote"):
                rows.append(dict(base, method=m, noise=DP_NOISE, inv_epsilon=0.0, draw=0, accuracy=0.75))
                for noise, acc in ((DP_NOISE, 0.2), (EXP_NOISE, 0.7)):
                    for draw in range(2):
                        rows.append(dict(base, method=m, noise=noise, inv_epsilon=0.1, draw=draw, accuracy=acc))
    return pd.DataFrame(rows)


def test_table_shows_references_paper_values_and_no_nan():
    table = mpl_report.accuracy_table(_rows(), "har", 10)
    assert list(table.frame.index) == ["batch", "indiv", "soft", "avg", "vote"]
    assert list(table.frame.columns) == ["1/ε = 0", "1/ε = 0.1"]
    cells = table.frame.to_numpy().ravel().tolist()
    assert not any("nan" in c.lower() for c in cells)
    assert table.frame.loc["batch", "1/ε = 0"] == "0.91 ± 0.02 (0.90)"  # mean of 0.90, 0.91, 0.92
    assert table.frame.loc["vote", "1/ε = 0"].endswith("(0.79)")
    assert table.frame.loc["batch", "1/ε = 0.1"] == MISSING
    assert "3 repeats" in table.footnote


def test_stand_in_table_has_no_har_numbers_and_noise_kind_is_selected():
    table = mpl_report.accuracy_table(_rows(), "mnist10", 10)
    assert not any("(0." in c for c in table.frame.to_numpy().ravel())
    assert "no MNIST experiment" in table.footnote and f"({MISSING})" not in table.footnote
    assert not any("(" in c for c in table.frame.to_numpy().ravel())  # no empty bracket in every cell
    assert table.frame.loc["soft", "1/ε = 0.1"].startswith("0.20")
    exp = mpl_report.accuracy_table(_rows(), "mnist10", 10, noise=EXP_NOISE)
    assert exp.frame.loc["soft", "1/ε = 0.1"].startswith("0.70")


def test_the_accuracy_figure_draws_the_majority_line_and_the_sentence_says_where_the_curves_cross_it():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpstack.companion.plotting import color_for

    df = _rows()
    fig, ax = plt.subplots()
    mpl_report.plot_accuracy(ax, df, 10, majority=0.6)
    dotted = [ln for ln in ax.get_lines() if ln.get_label() == "always the majority class"]
    assert len(dotted) == 1 and set(dotted[0].get_ydata()) == {0.6}
    assert dotted[0].get_color() == color_for("majority class") and dotted[0].get_linestyle() == ":"
    fig, ax = plt.subplots()
    mpl_report.plot_accuracy(ax, df, 10)  # no share given: no line
    assert not [ln for ln in ax.get_lines() if ln.get_label() == "always the majority class"]
    plt.close("all")
    # the private means are 0.75 without noise and 0.2 at 1/ε = 0.1: below a 0.6 floor from 1/ε = 0.1 on
    text = mpl_report.majority_sentence(df, "har", (0.6, "walking"))
    assert '("walking"): 0.600' in text and "soft from 1/ε = 0.1" in text and "vote 0.20" in text
    assert "stays above it" in mpl_report.majority_sentence(df, "har", (0.1, "walking"))


def test_the_majority_share_is_read_from_the_test_labels(monkeypatch):
    from dpstack.companion.papers.mpl import grids

    labels = np.array([0, 1, 1, 1])
    monkeypatch.setattr(grids, "load_mpl_dataset", lambda dataset: (None, None, None, labels))
    assert mpl_report.majority_share("mnist10") == (0.75, "1")
