"""PPTL's page helpers (Guo et al.) and PST Table 2's: our numbers beside the paper's.

:func:`beside_paper` puts our means next to a paper table of
:mod:`dpstack.companion.paper_values`; :func:`average_ranks` ranks the methods per branch. The
claims themselves are in :mod:`dpstack.companion.papers.pptl.claims`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpstack.alternatives.accounting import epsilon_of, gaussian_event, liu_talwar_epsilon, repeat_and_select_epsilon
from dpstack.companion import results
from dpstack.companion.paper_values import table_frame
from dpstack.companion.papers.pptl.alternatives import ALTERNATIVE_METHODS, DELTA, GD_STEPS, GUARANTEES, PAPER_METHODS
from dpstack.companion.papers.pptl.grids import TRANSFER_METHODS
from dpstack.companion.stats import mean_interval, t_half_width
from dpstack.companion.tables import guarantee_frame
from dpstack.companion.variants import collapsed

__all__ = [
    "beside_paper",
    "average_ranks",
    "collapse_sentence",
    "PAPER_METHODS",
    "alternatives_frame",
    "guarantee_table",
    "auc_table",
    "paired_gaps",
    "transfer_verdicts",
    "alternatives_findings",
    "tuning_table",
    "TODAY_PAGE",
    "today_sentence",
]


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


# ------------------------------------------------------------------ today's alternatives
#: The page that sets PPTL beside today's private learners (the landing page links it).
TODAY_PAGE = "pptl_alternatives"
#: The paired comparison the page's verdicts and the landing line are about.
TODAY_REFERENCE, TODAY_RIVAL = "PPTL-FS(W)", "DP-GD from the source"


def alternatives_frame(alternatives, seed=0, table1=None):
    """One tidy frame: the alternatives' rows and Table 1's rows of :data:`PAPER_METHODS` on the same
    (ε, repeat), which share their source rows, target split and test set when both were computed with the
    same root seed (columns method, epsilon, repeat, auc, lam).

    ``table1`` defaults to PPTL Table 1's committed result (``pptl_table1_mnist``, root seed 0): with
    another ``seed`` the repeats are not paired and the frame holds the alternatives alone.
    """
    cols = ["method", "epsilon", "repeat", "auc", "lam"]
    if table1 is None and seed == 0:
        table1 = results.load("pptl_table1_mnist", "paper")
    if table1 is None:
        return alternatives[cols].reset_index(drop=True)
    keys = alternatives[["epsilon", "repeat", "data_seed"]].drop_duplicates()
    paper = table1[table1["method"].isin(PAPER_METHODS)].merge(keys, on=["epsilon", "repeat", "data_seed"])
    return pd.concat([paper[cols], alternatives[cols]], ignore_index=True)


def guarantee_table(methods):
    """What each method guarantees: a row per method (guarantee, neighbouring relation, unit, what it assumes)."""
    return guarantee_frame(GUARANTEES, methods)


def _order(methods):
    known = list(PAPER_METHODS) + list(ALTERNATIVE_METHODS)
    return sorted(methods, key=lambda m: known.index(m) if m in known else len(known))


def _eps_label(e):
    return "ε = ∞" if not np.isfinite(e) else f"ε = {e:g}"


def auc_table(frame):
    """Mean test AUC ± the half-width of its 95 % t-interval over repeats: a row per method, a column per ε."""
    out = {}
    for method in _order(frame["method"].unique()):
        rows = frame[frame["method"] == method]
        out[method] = {
            _eps_label(e): f"{mean_interval(g['auc'])[0]:.3f} ± {t_half_width(g['auc']):.3f}"
            for e, g in rows.groupby("epsilon")
        }
    table = pd.DataFrame(out).T
    return table[[c for c in map(_eps_label, sorted(frame["epsilon"].unique())) if c in table.columns]]


def paired_gaps(frame, reference=TODAY_REFERENCE, methods=None):
    """Each of ``methods`` (default: every other method of the frame) minus ``reference``, paired by repeat
    (same source rows, same target split, same test set): a row per (method, ε) with the mean difference of
    test AUC, its 95 % t-interval and the number of repeats.

    The unit of replication is the repeat (a draw of the images, random splits and fresh noise for every
    method); the intervals are per comparison, with no correction across them: they describe, they do
    not judge a claim of the paper.
    """
    ref = frame[frame["method"] == reference].set_index(["epsilon", "repeat"])["auc"]
    methods = [m for m in _order(frame["method"].unique()) if m != reference] if methods is None else methods
    rows = []
    for (method, eps), g in frame[frame["method"].isin(methods)].groupby(["method", "epsilon"]):
        paired = g.set_index(["epsilon", "repeat"])["auc"].sub(ref, fill_value=np.nan).dropna()
        if paired.empty:
            continue
        mean, lo, hi = mean_interval(paired.to_numpy())
        rows.append(dict(method=method, epsilon=eps, difference=mean, low=lo, high=hi, repeats=len(paired)))
    return pd.DataFrame(rows, columns=["method", "epsilon", "difference", "low", "high", "repeats"])


def transfer_verdicts(frame, reference=TODAY_REFERENCE, rival=TODAY_RIVAL):
    """At each ε: does ``reference`` (PPTL-FS(W)) beat ``rival`` (DP-GD from the source)? Paired by repeat.

    A row per ε with the mean paired difference reference − rival, its 95 % t-interval, and the
    answer: "yes" (interval above 0), "no, behind" (below 0) or "not resolved" (contains 0).
    """
    gaps = paired_gaps(frame, reference=rival, methods=[reference])
    out = gaps.drop(columns="method").copy()
    out["answer"] = np.where(out["low"] > 0, "yes", np.where(out["high"] < 0, "no, behind", "not resolved"))
    return out.reset_index(drop=True)


def _signed(x, digits=4):
    """``x`` with its sign, "±0" when it rounds to zero at ``digits`` decimals (no "-0.0000")."""
    text = f"{x:+.{digits}f}"
    return "±" + text[1:] if float(text) == 0 else text


#: The upper line of the page: not a private method (its source records have no guarantee).
PUBLIC_LINE = "DP-GD from a public source"


def alternatives_findings(frame):
    """The page's findings as Markdown bullets, from the results."""
    bullets = []
    means = frame.groupby(["method", "epsilon"])["auc"].mean()
    eps = float(frame["epsilon"].min())
    at = means.xs(eps, level="epsilon")
    private = at.drop(PUBLIC_LINE, errors="ignore")
    best = private.idxmax()
    named = "; ".join(f"{m} {private[m]:.3f}" for m in _order(private.index) if m != best)
    bullets.append(
        f"- **At ε = {eps:g}** the best mean test AUC of a private method is {best}'s, {private[best]:.3f} "
        f"({named})" + (f"; the public-source upper line {at[PUBLIC_LINE]:.3f}." if PUBLIC_LINE in at else ".")
    )
    methods = set(frame["method"])
    if {TODAY_REFERENCE, TODAY_RIVAL} <= methods:
        v = transfer_verdicts(frame)
        ahead, behind = v[v["answer"] == "yes"], v[v["answer"] == "no, behind"]
        largest = v.loc[v["difference"].abs().idxmax()]
        bullets.append(
            f"- **Does {TODAY_REFERENCE} still beat DP-GD from the source?** Paired by repeat "
            f"({int(v['repeats'].max())} repeats, 95 % intervals per comparison): ahead at {len(ahead)} of the "
            f"{len(v)} values of ε, behind at {len(behind)}"
            + (f" (ε = {', '.join(f'{e:g}' for e in behind['epsilon'])})" if len(behind) else "")
            + f"; the largest mean gap is {_signed(largest['difference'], 3)} AUC (at ε = {largest['epsilon']:g})."
        )
    if {"DP-GD (target only)", "DP-GD from the source"} <= methods:
        g = paired_gaps(frame, reference="DP-GD (target only)", methods=["DP-GD from the source"])
        bullets.append(
            f"- **Does the private source help DP-GD?** DP-GD from the source minus DP-GD on the target alone, "
            f"paired: its 95 % interval above 0 at {int((g['low'] > 0).sum())} of {len(g)} values of ε, below 0 at "
            f"{int((g['high'] < 0).sum())}; mean gaps from {_signed(g['difference'].min())} to "
            f"{_signed(g['difference'].max())} AUC."
        )
    if {PUBLIC_LINE, "DP-GD from the source"} <= methods:
        g = paired_gaps(frame, reference="DP-GD from the source", methods=[PUBLIC_LINE])
        bullets.append(
            f"- **What a public source would add** (the upper line, no guarantee for a source record): "
            f"{_signed(g['difference'].min())} to {_signed(g['difference'].max())} mean AUC over DP-GD from the "
            f"private source, its 95 % interval above 0 at {int((g['low'] > 0).sum())} of {len(g)} values of ε."
        )
    return "\n".join(bullets)


#: The methods whose guarantee is pure ε (PLR inside), priced by Liu & Talwar's random stopping.
PURE_METHODS = PAPER_METHODS


def tuning_table(alternatives, n_candidates=None):
    """What choosing among the candidates on the private validation rows costs, per method and ε.

    For each ε of ``alternatives`` (the committed rows give each DP-GD method's noise multiplier and
    the number of candidates K every method evaluated):

    * **the papers' way** — the chosen model alone is released at ε, the choice made on private
      validation rows: *outside the guarantee*, whatever ε says;
    * **K candidates composed** — every candidate counted: K·ε for a pure-ε method, the K-fold
      composition of the DP-GD run by PLD for the (ε, δ) methods;
    * **private selection** — a random number of runs with mean K (geometric, the same law for both
      families), only the best released: 3ε for a pure-ε method (Liu & Talwar 2019, random stopping),
      dp-accounting's repeat-and-select RDP bound for a DP-GD run (Papernot & Steinke 2022), both
      under the replace-one relation, δ = :data:`~dpstack.companion.papers.pptl.alternatives.DELTA`.

    Each ε is per party (a source record and a target record each pay it; the public source's
    records have no guarantee). Returns a frame with a row per (family, ε): ``methods`` names the
    family (the papers' :data:`PURE_METHODS`, or every DP-GD method of the page), ``K`` the number of
    candidates.
    """
    k = int(alternatives["n_candidates"].max()) if n_candidates is None else int(n_candidates)
    rows = []
    for eps, part in alternatives.groupby("epsilon"):
        if not np.isfinite(eps):
            continue
        rows.append(
            {
                "methods": "the papers', pure ε",
                "ε": eps,
                "K": k,
                "the papers' way (outside the guarantee)": eps,
                "K candidates composed": k * eps,
                "private selection (mean K runs)": liu_talwar_epsilon(eps, k),
            }
        )
        z = float(part["noise_multiplier"].iloc[0])
        run = gaussian_event(z, GD_STEPS)
        rows.append(
            {
                "methods": f"DP-GD, (ε, δ) with δ = {DELTA:g}",
                "ε": eps,
                "K": k,
                "the papers' way (outside the guarantee)": epsilon_of(run, DELTA, "PLD", "replace-one"),
                "K candidates composed": epsilon_of(gaussian_event(z, GD_STEPS * k), DELTA, "PLD", "replace-one"),
                "private selection (mean K runs)": repeat_and_select_epsilon(
                    run, DELTA, k, "geometric", neighbouring="replace-one"
                ),
            }
        )
    return pd.DataFrame(rows)


def today_sentence(frame=None, link=""):
    """Where PPTL's best method stands against today's transfer alternative, from the committed results.

    DP-GD from a private source model against PPTL-FS(W), paired by repeat: at how many ε the
    difference's 95 % interval lies above 0 (DP-GD ahead) and below 0. ``frame`` defaults to :func:`alternatives_frame` of the committed
    ``pptl_alternatives``; ``link`` is the page's address ("" for none). "" when the results are absent.
    """
    if frame is None:
        try:
            frame = alternatives_frame(results.load(TODAY_PAGE, "paper"))
        except results.MissingResultError:
            return ""
    if not {TODAY_REFERENCE, TODAY_RIVAL} <= set(frame["method"]):
        return ""
    v = transfer_verdicts(frame)
    if v.empty:
        return ""
    what = f"[today's alternatives]({link})" if link else "today's alternatives"
    # said as on PST's line: the alternative ahead of / behind the paper's best method
    return (
        f"Against {what}: noisy gradient descent fine-tuned from a private source model (DP-GD, (ε, δ) under the "
        f"same replace-one relation) against {TODAY_REFERENCE}, paired by repeat ({int(v['repeats'].max())} repeats, "
        f"95 % intervals per comparison): ahead at {int((v['answer'] == 'no, behind').sum())} and behind at "
        f"{int((v['answer'] == 'yes').sum())} of {len(v)} values of ε on MNIST; every method's λ tuned on "
        "private validation rows."
    )
