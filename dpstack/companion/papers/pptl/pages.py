"""PPTL's page helpers (Guo et al.) and PST Table 2's: our numbers beside the paper's.

:func:`beside_paper` puts our means next to a paper table of
:mod:`dpstack.companion.paper_values`; :func:`average_ranks` ranks the methods per branch. The
claims themselves are in :mod:`dpstack.companion.papers.pptl.claims`.
"""

from __future__ import annotations

from dpstack.companion.paper_values import table_frame
from dpstack.companion.papers.pptl.grids import TRANSFER_METHODS
from dpstack.companion.variants import collapsed

__all__ = ["beside_paper", "average_ranks", "collapse_sentence"]


def beside_paper(df, table, key="epsilon", names=None):
    """Our mean ± s.d. next to the paper's, one row per (method, key) present in both.

    ``names`` maps our method names to the table's (e.g. :data:`PST_NAMES` for PST Table 2).
    """

    paper = table_frame(table, key)
    ours = df.groupby(["method", key])["auc"].agg(ours_mean="mean", ours_sd="std", n="count").reset_index()
    if names:
        ours["method"] = ours["method"].map(lambda m: names.get(m, m))
    out = ours.merge(paper.drop(columns="source"), on=["method", key], how="inner")
    out["ours − paper"] = out["ours_mean"] - out["paper_mean"]
    return out.round(4)


def average_ranks(df):
    """Mean rank of each method over branches (1 = best mean AUC), as in PPTL Table 4's last column."""
    means = df[df["method"].isin(TRANSFER_METHODS)].groupby(["branch", "method"])["auc"].mean().unstack()
    return means.rank(axis=1, ascending=False).mean().sort_values().round(2)


def collapse_sentence(df, result_name="pptl_table1_mnist"):
    """The stacked methods' repeats at the smallest ε: the worst one, and how many collapsed.

    A collapse is the protocol page's: a stacked method's repeat keeping less than half of the best
    one-level method's skill above chance in the same repeat
    (:func:`dpstack.companion.variants.collapsed`). Computed from ``df``; nothing is typed.
    """
    low = df[df["epsilon"] == df["epsilon"].min()]
    low = low.assign(collapsed=collapsed(low, result_name))
    bits = []
    for method, part in low[low["collapsed"].notna()].groupby("method", sort=False):
        worst = part.loc[part["auc"].idxmin()]
        bits.append(
            f"{method}: {int(part['collapsed'].sum())} of {len(part)} repeats collapsed, the worst at "
            f"{worst['auc']:.3f} (repeat {int(worst['repeat'])})"
        )
    if not bits:
        return ""
    return (
        f"At ε = {low['epsilon'].iloc[0]:g} — " + "; ".join(bits) + ". A repeat *collapses* when it keeps less than "
        "half of the skill above chance (AUC − ½) of the best one-level method in the same repeat, as the protocol "
        "page defines it."
    )
