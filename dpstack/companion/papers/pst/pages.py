"""PST's page helpers (Yao et al. 2019, §4.1): what the PST figure pages show beside their verdicts.

Figure numbers are the arXiv version's, the IJCAI 2019 number in brackets
(:mod:`dpstack.companion.numbering`). The claims themselves are in
:mod:`dpstack.companion.papers.pst.claims`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpstack.companion import results
from dpstack.companion.papers.pst.alternatives import ALTERNATIVE_METHODS, GUARANTEES
from dpstack.companion.stats import mean_interval, t_half_width

__all__ = [
    "alpha_label",
    "PAPER_METHODS",
    "alternatives_frame",
    "guarantee_table",
    "auc_table",
    "paired_gaps",
    "alternatives_findings",
]


def alpha_label(row):
    """ "W(α=0.5)" for PST-F(W) rows with an α, else the method name."""
    a = row.get("alpha")
    return f"W(α={a:g})" if row["method"] == "PST-F(W)" and a is not None and np.isfinite(a) else row["method"]


# ------------------------------------------------------------------ today's alternatives
#: The papers' methods set beside today's alternatives (Figure 1's committed rows, combiner C-hl).
PAPER_METHODS = ("PLR", "PST-S", "PST-F(W)")


def alternatives_frame(alternatives, seed=0, fig1=None):
    """One tidy frame: the alternatives' rows and Figure 1's rows of :data:`PAPER_METHODS` on the same
    (dataset, ε, repeat), which share their split and test set when both were computed with the same
    root seed (columns dataset, method, epsilon, repeat, auc, lam).

    ``fig1`` defaults to Figure 1 at the paper's 10 repeats on one draw of the data
    (``pst_fig1_one_draw``, the draw and splits the alternatives were computed on; root seed 0):
    with another ``seed`` the repeats are not paired and the frame holds the alternatives alone.
    """
    cols = ["dataset", "method", "epsilon", "repeat", "auc", "lam"]
    if fig1 is None and seed == 0:
        fig1 = results.load("pst_fig1_one_draw", "paper")
    if fig1 is None:
        return alternatives[cols].reset_index(drop=True)
    keys = alternatives[["dataset", "epsilon", "repeat"]].drop_duplicates()
    paper = fig1[fig1["method"].isin(PAPER_METHODS) & (fig1["combiner"] == "C-hl")]
    paper = paper.merge(keys, on=["dataset", "epsilon", "repeat"])
    return pd.concat([paper[cols], alternatives[cols]], ignore_index=True)


def guarantee_table(methods):
    """What each method guarantees: a row per method (guarantee, neighbouring relation, unit, what it assumes)."""
    rows = [
        dict(zip(("guarantee", "neighbouring", "privacy unit", "assumes"), GUARANTEES[m]), method=m) for m in methods
    ]
    return pd.DataFrame(rows).set_index("method")


def _order(methods):
    known = list(PAPER_METHODS) + list(ALTERNATIVE_METHODS)
    return sorted(methods, key=lambda m: known.index(m) if m in known else len(known))


def auc_table(frame, dataset):
    """Mean test AUC ± the half-width of its 95 % t-interval over repeats: a row per method, a column per ε."""
    part = frame[frame["dataset"] == dataset]
    out = {}
    for method in _order(part["method"].unique()):
        rows = part[part["method"] == method]
        out[method] = {
            _eps_label(e): f"{mean_interval(g['auc'])[0]:.3f} ± {t_half_width(g['auc']):.3f}"
            for e, g in rows.groupby("epsilon")
        }
    table = pd.DataFrame(out).T
    return table[[c for c in map(_eps_label, sorted(part["epsilon"].unique())) if c in table.columns]]


def _eps_label(e):
    return "ε = ∞" if not np.isfinite(e) else f"ε = {e:g}"


def paired_gaps(frame, reference="PST-F(W)"):
    """Each alternative minus ``reference``, paired by repeat (same split, same test set): a row per
    (dataset, method, ε) with the mean difference of test AUC and its 95 % t-interval.

    The unit of replication is the repeat (a random fit / validation split and fresh noise for
    every method); the intervals are per comparison, with no correction across them: they describe,
    they do not judge a claim of the paper.
    """
    ref = frame[frame["method"] == reference].set_index(["dataset", "epsilon", "repeat"])["auc"]
    rows = []
    for (dataset, method, eps), g in frame[frame["method"].isin(ALTERNATIVE_METHODS)].groupby(
        ["dataset", "method", "epsilon"]
    ):
        paired = g.set_index(["dataset", "epsilon", "repeat"])["auc"].sub(ref, fill_value=np.nan).dropna()
        if paired.empty:
            continue
        mean, lo, hi = mean_interval(paired.to_numpy())
        rows.append(
            dict(dataset=dataset, method=method, epsilon=eps, difference=mean, low=lo, high=hi, repeats=len(paired))
        )
    return pd.DataFrame(rows)


def alternatives_findings(frame):
    """The page's findings as Markdown bullets, from the results (one per dataset, then the overall)."""
    bullets = []
    finite = frame[np.isfinite(frame["epsilon"])]
    gaps = paired_gaps(frame) if "PST-F(W)" in set(frame["method"]) else pd.DataFrame()
    for dataset, part in finite.groupby("dataset"):
        eps = part["epsilon"].min()
        at = part[part["epsilon"] == eps].groupby("method")["auc"].mean()
        best = at.idxmax()
        parts = [f"at ε = {eps:g} the best mean test AUC is {best}'s, {at[best]:.3f}"]
        for m in ("PLR", "PST-F(W)"):
            if m in at and m != best:
                parts.append(f"{m} {at[m]:.3f}")
        text = f"- **{dataset}:** " + "; ".join(parts) + "."
        if not gaps.empty:
            g = gaps[
                (gaps["dataset"] == dataset) & (gaps["method"] == "DP-GD (replace-one)") & np.isfinite(gaps["epsilon"])
            ]
            if len(g):
                ahead = g[g["low"] > 0]
                behind = g[g["high"] < 0]
                text += (
                    f" DP-GD under the papers' relation (replace-one) is ahead of PST-F(W) at {len(ahead)} of "
                    f"the {len(g)} finite values of ε (95 % interval above 0) and behind at {len(behind)}"
                    + (
                        f" (largest lead {g['difference'].max():+.3f} AUC, at ε = {g.loc[g['difference'].idxmax(), 'epsilon']:g})"
                        if len(ahead)
                        else ""
                    )
                    + "."
                )
        bullets.append(text)
    return "\n".join(bullets)


#: The page that sets PST beside today's private learners (the landing page links it).
TODAY_PAGE = "pst_alternatives"


def today_sentence(frame=None, link=""):
    """Where PST's best method stands against today's main alternative, from the committed results.

    DP-GD under the papers' neighbouring relation (replace-one) against PST-F(W), paired by repeat:
    at how many finite ε its 95 % interval lies above 0 and below 0, per dataset. ``frame``
    defaults to :func:`alternatives_frame` of the committed ``pst_alternatives``; ``link`` is the
    page's address for the sentence's link ("" for none). "" when the results are absent.
    """
    if frame is None:
        try:
            frame = alternatives_frame(results.load(TODAY_PAGE, "paper"))
        except results.MissingResultError:
            return ""
    gaps = paired_gaps(frame) if "PST-F(W)" in set(frame["method"]) else pd.DataFrame()
    if gaps.empty:
        return ""
    g = gaps[(gaps["method"] == "DP-GD (replace-one)") & np.isfinite(gaps["epsilon"])]
    bits = []
    for dataset, part in g.groupby("dataset", sort=False):
        bits.append(
            f"ahead at {int((part['low'] > 0).sum())} and behind at {int((part['high'] < 0).sum())} of "
            f"{len(part)} values of ε on {dataset}"
        )
    if not bits:
        return ""
    what = f"[today's alternatives]({link})" if link else "today's alternatives"
    reps = int(g["repeats"].max())
    return (
        f"Against {what}: noisy full-batch gradient descent (DP-GD, (ε, δ) under the same replace-one relation) "
        f"against PST-F(W), paired by repeat ({reps} repeats, 95 % intervals per comparison): "
        + "; ".join(bits)
        + "; every method's λ tuned on private validation rows."
    )
