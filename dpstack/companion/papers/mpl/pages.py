"""The MPL experiment pages: tables beside the paper, the paper's claims judged, the figure.

Everything here reads the tidy table of :func:`dpstack.companion.papers.mpl.grids.run_mpl` (or
the committed one, :func:`dpstack.companion.results.load_or_run`); nothing here computes a
result, so editing a table or a sentence never makes a committed result stale. The paper's
numbers and claims come from :mod:`dpstack.companion.paper_values` (``MPL_HAR``,
``MPL_CLAIMS``); every claim is judged by :mod:`dpstack.companion.rule` on paired
per-split differences (the unit of repetition is one split of the data into auxiliary rows
and parties; the noise draws of a split are averaged first).
"""

from __future__ import annotations

import logging

import dp_accounting
import numpy as np
import pandas as pd

from dpstack import datasets
from dpstack.alternatives import (
    epsilon_of,
    gaussian_event,
    gaussian_noise_multiplier,
    gnmax_sigma,
    liu_talwar_epsilon,
    repeat_and_select_epsilon,
)
from dpstack.alternatives.voting import VOTE_SENSITIVITY
from dpstack.companion import paper_values as pv
from dpstack.companion import results, show
from dpstack.companion.paper_values import MPL_CLAIMS, MPL_HAR
from dpstack.companion.papers.mpl import alternatives as alt
from dpstack.companion.papers.mpl import grids
from dpstack.companion.papers.mpl.claims import trial_means
from dpstack.companion.papers.mpl.grids import DATASETS, DP_NOISE, PRIVATE, summarize_mpl
from dpstack.companion.plotting import color_for, set_grid_ticks
from dpstack.companion.rule import OUTCOMES, verdict_counts
from dpstack.companion.stats import mean_interval
from dpstack.companion.tables import MISSING, guarantee_frame, paper_vs_ours
from dpstack.companion.try_it import TRY_IT, try_it

__all__ = [
    "PAGES",
    "accuracy",
    "majority_share",
    "majority_sentence",
    "accuracy_table",
    "plot_accuracy",
    "DECIMALS",
    "METHOD_ORDER",
    "absent_data_note",
    "paper_printed",
    "reading",
    "TODAY_PAGE",
    "TODAY_ORDER",
    "TUNING_CANDIDATES",
    "alternatives_frame",
    "guarantee_table",
    "alternatives_accuracy_table",
    "paired_gaps",
    "leaders_table",
    "alternatives_findings",
    "today_sentence",
    "tuning_table",
    "plot_alternatives",
    "gnmax_diagnostic_table",
]

#: The MPL pages: dataset → what the page is about (the stand-in says what it stands in for).
PAGES = {
    "har": dict(
        page="mpl_har",
        title="Activity recognition (UCI HAR, Figure 2)",
        figure="Figure 2",
        section="§6.1",
        claims="har",
        paper_values=True,
    ),
    "kdd": dict(
        page="mpl_kdd",
        title="Network intrusion detection (KDD Cup 99, Figure 3)",
        figure="Figure 3",
        section="§6.2",
        claims="kdd",
        paper_values=False,
    ),
    "url": dict(
        page="mpl_url",
        title="Malicious URL detection (Figure 4)",
        figure="Figure 4",
        section="§6.3",
        claims="kdd",
        paper_values=False,
    ),
    "mnist10": dict(
        page="mpl_mnist10",
        title="Extra experiment: MNIST's 10 digits with the HAR protocol",
        figure="none (stand-in for Figure 2)",
        section="§6.1 protocol",
        claims="har",
        paper_values=False,
        stands_in_for="har",
    ),
}

#: Decimals of the accuracy tables: the paper prints its MPL accuracies with two.
DECIMALS = 2
#: "≈" in the paper's HAR values is judged with this equivalence margin (accuracy points).
METHOD_ORDER = ("batch", "indiv", "soft", "avg", "vote")


def accuracy(trials, method, inv_epsilon, n_parties):
    """Per-split accuracies of one method at one 1/ε and M, indexed by split."""
    t = trials[
        (trials["method"] == method)
        & (trials["n_parties"] == n_parties)
        & np.isclose(trials["inv_epsilon"], inv_epsilon)
    ]
    return t.set_index("repeat")["accuracy"]


def _paper_frame(dataset):
    if not PAGES[dataset]["paper_values"]:
        return pd.DataFrame(columns=["method", "1/ε", "paper_mean"])
    return pd.DataFrame([dict(method=m, **{"1/ε": inv}, paper_mean=v) for (m, inv), v in pv.MPL_HAR["values"].items()])


def accuracy_table(df, dataset, n_parties, noise=DP_NOISE):
    """The page's table for one M: one row per method, one column per 1/ε, cells ``ours ± CI (paper)``.

    batch and indiv (non-private) have one value, in the 1/ε = 0 column. Rounded to the paper's
    two decimals. On pages without numbers in the paper (KDD, URL) and on the MNIST stand-in
    (HAR's numbers are no target for MNIST) the cells are ``ours ± CI`` without brackets: an empty
    bracket in every cell would only repeat what the footnote says once.
    """
    t = trial_means(df, noise)
    t = t[t["n_parties"] == n_parties].rename(columns={"inv_epsilon": "1/ε"})
    with_paper = bool(PAGES[dataset]["paper_values"]) and dataset != "mnist10"
    table = paper_vs_ours(
        t,
        _paper_frame(dataset) if with_paper else None,
        index="method",
        columns="1/ε",
        value="accuracy",
        decimals=DECIMALS,
        quantity=f"test accuracy at M = {n_parties:,} parties",
        paper_only="drop",
    )
    frame = table.frame.reindex([m for m in METHOD_ORDER if m in table.frame.index])
    notes = [
        table.footnote.replace(f" {MISSING}: not run here.", "")
        .replace(f" ({MISSING}): the paper reports no value for this cell.", "")
        .replace(" The paper only plots this result: it prints no number to put beside ours.", "")
    ]
    notes.append(f"batch and indiv add no noise: one value each, under 1/ε = 0 ({MISSING} elsewhere).")
    if dataset == "mnist10":
        notes.append("No paper value: the paper has no MNIST experiment.")
    elif not with_paper:
        notes.append("No paper value: the paper only plots this figure; it prints no number.")
    else:
        notes.append(f"({MISSING}): the paper prints no value for this cell.")
    table.frame, table.footnote = frame, " ".join(notes)
    return table


def majority_share(dataset):
    """``(share, label)``: the share of the test set's most frequent label and that label's name.

    The share is the accuracy of always predicting that label, whatever the features: the floor a
    classifier has to clear. Read from the test labels the experiment scores on.
    """
    y = np.asarray(grids.load_mpl_dataset(dataset)[3])
    labels, counts = np.unique(y, return_counts=True)
    top = labels[counts.argmax()]
    names = {"kdd": lambda: datasets.load_kddcup99("test").target_names}.get(dataset)
    name = names()[int(top)] if names else str(top)
    return float(counts.max() / counts.sum()), name


def majority_sentence(df, dataset, majority, noise=DP_NOISE):
    """Why private accuracies fall below the majority-class line: where they cross it, and where they end.

    ``majority``: :func:`majority_share`'s ``(share, label)``. Names, for the largest M, the first 1/ε
    at which each private method's mean accuracy is below the share, and the mean accuracy at the
    largest 1/ε.
    """
    share, label = majority
    t = trial_means(df, noise)
    big = t["n_parties"].max()
    t = t[t["n_parties"] == big]
    below, ends = [], []
    for method in PRIVATE:
        means = t[t["method"] == method].groupby("inv_epsilon")["accuracy"].mean().sort_index()
        if means.empty:
            continue
        under = means[means < share]
        if len(under):
            below.append(f"{method} from 1/ε = {under.index[0]:g}")
        ends.append(f"{method} {means.iloc[-1]:.2f}")
    if not below:
        return (
            f"The dotted line is the accuracy of always predicting the test set's most frequent label "
            f'("{label}", {share:.3f}); every private mean stays above it.'
        )
    return (
        f'The dotted line is the accuracy of always predicting the test set\'s most frequent label ("{label}"): '
        f"{share:.3f}. At M = {big:,} the private means drop below it ({'; '.join(below)}), so there a released "
        "model is worse than ignoring the features. They end near the accuracy of a random direction "
        f"({'; '.join(ends)} at 1/ε = {t['inv_epsilon'].max():g}), not at this line: once the noise outweighs "
        "the model, the released vector points in a random direction, and the noise is symmetric (a direction "
        "and its opposite are equally likely), so on average it favours no label: its expected accuracy is "
        "that of guessing, whatever the share of the largest class."
    )


def plot_accuracy(ax, df, n_parties, noise=DP_NOISE, title=None, majority=None):
    """The paper's figure for one M: mean accuracy of each private method against 1/ε with its 95 %
    band over splits, batch (solid) and indiv (dashed) as lines with their bands.

    1/ε = 0 (no noise) sits at the left end of a symmetric-log axis. ``majority``: the share of the
    test set's most frequent label (:func:`majority_share`), drawn as a dotted line, the accuracy of
    always predicting that label.
    """
    t = trial_means(df, noise)
    t = t[t["n_parties"] == n_parties]
    for method in PRIVATE:
        part = t[t["method"] == method]
        rows = [(x, *mean_interval(g["accuracy"])) for x, g in part.groupby("inv_epsilon")]
        xs, mean, lo, hi = (np.array(c, dtype=float) for c in zip(*rows))
        color = color_for(method)
        ax.plot(xs, mean, marker="o", ms=3, color=color, label=method)
        ax.fill_between(xs, np.clip(lo, 0, 1), np.clip(hi, 0, 1), color=color, alpha=0.15, lw=0)
    for method, style in (("batch", "-"), ("indiv", "--")):
        mean, lo, hi = mean_interval(t[t["method"] == method]["accuracy"])
        color = color_for(method)
        ax.axhline(mean, color=color, ls=style, label=method)
        ax.axhspan(max(lo, 0.0), min(hi, 1.0), color=color, alpha=0.1, lw=0)
    if majority is not None:
        ax.axhline(majority, color=color_for("majority class"), ls=":", lw=1.2, label="always the majority class")
    ax.set_xscale("symlog", linthresh=0.01)
    grid = sorted(t["inv_epsilon"].unique())
    ax.set_xlim(-0.003, 1.5 * float(max(grid)))
    set_grid_ticks(ax, grid)
    ax.set(
        xlabel="1/ε (0 = no noise)", ylabel="test accuracy", ylim=(0, 1), title=title or f"M = {n_parties:,} parties"
    )
    ax.legend()
    return ax


def absent_data_note(dataset, status):
    """HTML of the one admonition an MPL page shows when its data is absent.

    Says what is missing (from :func:`dpstack.companion.papers.mpl.grids.data_status`) and what the page
    will show once it is there, in a reader's words: the commands that fetch the files and compute
    the results are in the appendix "How this book is built", linked from the note.
    """
    import html
    import re

    text = re.sub(r";? ?the code below is the one that will run once they are there\.?", ".", status).strip()
    text = re.sub(r"^Data absent: ", "", text)
    # A sentence naming a command belongs to the appendix, not to the page.
    sentences = re.split(r"(?<=\.)\s+(?=\S)", text)
    text = " ".join(sentence for sentence in sentences if "python -m" not in sentence and "make " not in sentence)
    text = text[:1].upper() + text[1:]
    body = html.escape(text)
    body = re.sub(r"`([^`]+)`", r"<code>\1</code>", body)
    Ms = ", ".join(f"{M:,}" for M in DATASETS[dataset]["n_parties"])
    page = PAGES[dataset]
    will = (
        f"Once the files are there and the paper-scale results are computed (10 splits × 10 noise draws, "
        f"M = {Ms} parties), this page shows them: test accuracy against 1/ε beside the paper's "
        f"{html.escape(page['figure'])}, the paper's statements judged with 95 % intervals, and why the "
        "private curves fall where they do. Until then it shows no results. The appendix "
        '<a href="../book/how_built.html">How this book is built</a> says how to fetch the files and compute '
        "the results."
    )

    note = (
        f'<div class="admonition warning dpstack-data-absent"><p class="admonition-title">Data absent: '
        f"no results on this page yet</p><p>{body}</p><p>{will}</p></div>"
    )
    # The cells below the note need the data and do not run: what the paper prints, and what to
    # try once the data are here, are shown with the note.
    box = try_it(page["page"]).data if page["page"] in TRY_IT else ""
    return note + paper_printed(dataset) + box


def paper_printed(dataset):
    """HTML: what the paper prints for this page's experiment — its numbers (HAR) and its statements.

    Shown on a page whose data is absent, so a reader sees the paper's side of the comparison
    even before ours can be computed. The numbers are those transcribed in
    :data:`dpstack.companion.paper_values.MPL_HAR` (the only numbers MPL prints; its Figures
    2–4 are plots), the statements those of :data:`~dpstack.companion.paper_values.MPL_CLAIMS`.
    """
    import html

    page = PAGES[dataset]
    claims = MPL_CLAIMS[page["claims"] if dataset != "url" else "url"]
    parts = [
        '<div class="admonition note dpstack-paper-printed"><p class="admonition-title">What the paper '
        f"reports ({html.escape(claims['source'])})</p>"
    ]
    if dataset == "har":
        rows = "".join(
            f"<tr><td>{html.escape(m)}</td><td>{v:.{DECIMALS}f}</td><td>{'yes' if m in ('batch', 'indiv') else 'no'}"
            "</td></tr>"
            for (m, inv), v in MPL_HAR["values"].items()
        )
        parts.append(
            f"<p>Test accuracy on UCI HAR with M = 1,000 parties, without noise (1/ε = 0), as printed in the text "
            f"beside {html.escape(page['figure'])} (two decimals):</p>"
            '<div class="dpstack-table-scroll"><table class="dpstack-table"><thead><tr><th>method</th>'
            "<th>accuracy (paper)</th><th>non-private reference</th></tr></thead><tbody>"
            + rows
            + "</tbody></table></div>"
        )
    else:
        parts.append(
            f"<p>The paper prints no numbers for {html.escape(page['figure'])}, only a plot and statements.</p>"
        )
    statements = [w for key, w in claims["claims"].items() if key != "values"]
    parts.append(
        "<p>Its statements about the figure:</p><ul>"
        + "".join(f"<li>{html.escape(w)}</li>" for w in statements)
        + "</ul></div>"
    )
    return "".join(parts)


def _fmt_inv(v):
    return f"{v:g}"


def reading(df, dataset, with_hypothesis=True):
    """The page's reading, in Markdown, every number taken from ``df`` (the tidy MPL table)."""

    t = trial_means(df)
    Ms = sorted(t["n_parties"].unique())
    big = Ms[-1]
    n = t["repeat"].nunique()

    def mean(method, inv, M=big):
        return float(accuracy(t, method, inv, M).mean())

    invs = sorted(v for v in t["inv_epsilon"].unique() if v > 0)
    b, i = mean("batch", 0.0), mean("indiv", 0.0)
    zero = ", ".join(f"{m} {mean(m, 0.0):.2f}" for m in PRIVATE)
    lines = [
        f"- **Without noise** (M = {big:,}, mean of {n} splits): batch {b:.2f}, indiv {i:.2f}; the private "
        f"methods' noise-free releases: {zero}."
    ]
    if dataset == "har" and PAGES[dataset]["paper_values"]:
        paper = ", ".join(f"{m} {v:.2f}" for (m, _), v in pv.MPL_HAR["values"].items())
        lines[-1] += f" The paper reports {paper}."
    above = {}
    for m in PRIVATE:
        ok = [v for v in invs if mean(m, v) > i]
        above[m] = ok
    parts = []
    for m in PRIVATE:
        if not above[m]:
            parts.append(f"{m} is below indiv from the smallest 1/ε = {_fmt_inv(invs[0])} on")
        elif len(above[m]) == len(invs):
            parts.append(f"{m} stays above indiv over the whole grid (to 1/ε = {_fmt_inv(invs[-1])})")
        else:
            parts.append(f"{m} stays above indiv up to 1/ε = {_fmt_inv(max(above[m]))}")
    lines.append(f"- **With ε-DP noise** (Gamma(dK) norm, M = {big:,}): " + "; ".join(parts) + ".")
    s = summarize_mpl(df)
    soft = s[(s["method"] == "soft") & (s["n_parties"] == big) & (s["inv_epsilon"] > 0)].sort_values("inv_epsilon")
    ratio = soft["noise_norm"] / soft["ws_norm"]
    first = soft["inv_epsilon"][ratio > 1.0]
    if len(first):
        lines.append(
            f"- soft's noise norm exceeds ‖wₛ‖ from 1/ε = {_fmt_inv(float(first.iloc[0]))} on; at "
            f"1/ε = {_fmt_inv(float(soft['inv_epsilon'].iloc[-1]))} it is {float(ratio.iloc[-1]):.0f} × "
            "‖wₛ‖."
        )

    page = PAGES[dataset]["page"]
    rows = show.judged(page, show.live_frames({page: df}))
    dp = verdict_counts(rows[rows["verdict"].isin(OUTCOMES)])
    line = (
        f"- **The paper's statements** with ε-DP noise: {dp['supported']} supported, {dp['contradicted']} "
        f"contradicted, {dp['inconclusive']} inconclusive"
    )
    if with_hypothesis:
        ex = verdict_counts(show.variant_rows(page, "mpl-exp", {page: df}))
        line += (
            f"; with the dimension-free sampler (not ε-DP): {ex['supported']} supported, "
            f"{ex['contradicted']} contradicted, {ex['inconclusive']} inconclusive"
        )
    lines.append(line + ".")
    return "\n".join(lines)


# ------------------------------------------------------------------ today's alternatives
#: The page that sets MPL beside today's multiparty learners (the landing page links it).
TODAY_PAGE = "mpl_alternatives"
#: The methods of the page in the order of its tables: the paper's references, its methods, the alternatives.
TODAY_ORDER = (*alt.REFERENCES, *alt.PAPER_METHODS, *alt.ALTERNATIVE_METHODS)
#: The mean number of candidates an honest tuning is priced at (Papernot & Steinke's random K).
TUNING_CANDIDATES = 10


def alternatives_frame(alternatives, seed=0, kdd=None):
    """One tidy frame, one row per (M, method, 1/ε, split): the accuracy averaged over the split's noise draws.

    The alternatives' rows, and from the KDD page's result (``kdd``; default: its committed paper
    profile when ``seed`` is 0) the paper's methods (vote, soft, avg: the ε-DP release) and the
    non-private references batch and indiv (1/ε NaN) on the same (M, split) — they share their
    parties, auxiliary rows and test file when both were computed with the same root seed. With
    another ``seed`` the splits are not the KDD page's and the frame holds the alternatives alone.
    """
    cols = ["n_parties", "method", "inv_epsilon", "repeat", "accuracy"]
    ours = alternatives.groupby(["n_parties", "method", "inv_epsilon", "repeat"], as_index=False)["accuracy"].mean()
    if kdd is None and seed == 0:
        kdd = results.load("mpl_kdd", "paper")
    if kdd is None:
        return ours[cols]
    paper = trial_means(kdd, DP_NOISE)
    paper = paper[paper["method"].isin((*alt.PAPER_METHODS, *alt.REFERENCES))]
    # the references add no noise: no 1/ε (trial_means puts them at 1/ε = 0)
    paper = paper.assign(inv_epsilon=paper["inv_epsilon"].where(~paper["method"].isin(alt.REFERENCES)))
    splits = ours[["n_parties", "repeat"]].drop_duplicates()
    paper = paper.merge(splits, on=["n_parties", "repeat"])
    grid = ours["inv_epsilon"].unique()
    paper = paper[paper["inv_epsilon"].isna() | paper["inv_epsilon"].isin(grid)]
    return pd.concat([paper[cols], ours[cols]], ignore_index=True)


def guarantee_table(methods):
    """What each method guarantees: a row per method (guarantee, neighbouring relation, unit, what it assumes)."""
    return guarantee_frame(alt.GUARANTEES, methods, strict=False)


def _today_order(methods):
    return sorted(methods, key=lambda m: TODAY_ORDER.index(m) if m in TODAY_ORDER else len(TODAY_ORDER))


def _inv_label(v):
    return "1/ε = 0" if v == 0 else f"1/ε = {v:g}"


def alternatives_accuracy_table(frame, n_parties):
    """Mean test accuracy ± the half-width of its 95 % t-interval over splits, a row per method, a column per 1/ε.

    batch and indiv (non-private) have one value, in the 1/ε = 0 column.
    """
    part = frame[frame["n_parties"] == n_parties]
    grid = sorted(part["inv_epsilon"].dropna().unique())
    out = {}
    for method in _today_order(part["method"].unique()):
        rows = part[part["method"] == method]
        if rows["inv_epsilon"].isna().all():
            m, lo, hi = mean_interval(rows["accuracy"])
            out[method] = {_inv_label(0.0): f"{m:.3f} ± {(hi - lo) / 2:.3f}"}
            continue
        out[method] = {}
        for v, g in rows.groupby("inv_epsilon"):
            m, lo, hi = mean_interval(g["accuracy"])
            out[method][_inv_label(v)] = f"{m:.3f} ± {(hi - lo) / 2:.3f}" if len(g) > 1 else f"{m:.3f}"
    table = pd.DataFrame(out).T
    return table[[c for c in map(_inv_label, grid) if c in table.columns]]


def paired_gaps(frame):
    """Each alternative minus the paper's best method at the same (M, 1/ε), paired by split.

    "The paper's best" is, at each (M, 1/ε), the one of vote, soft and avg with the highest mean
    accuracy (chosen after the fact, in the paper's favour). One row per (M, alternative, 1/ε) with
    the mean paired difference of test accuracy, its 95 % t-interval and the number of splits. The
    intervals are per comparison, with no correction across the table: they describe; none of these
    comparisons is a claim of the paper, so none is judged by the book's rule.
    """
    keyed = frame.dropna(subset=["inv_epsilon"])
    paper = keyed[keyed["method"].isin(alt.PAPER_METHODS)]
    if paper.empty:
        return pd.DataFrame(
            columns=["n_parties", "method", "inv_epsilon", "reference", "difference", "low", "high", "repeats"]
        )
    means = paper.groupby(["n_parties", "inv_epsilon", "method"])["accuracy"].mean()
    rows = []
    for (M, inv), g in keyed[keyed["method"].isin(alt.ALTERNATIVE_METHODS)].groupby(["n_parties", "inv_epsilon"]):
        if (M, inv) not in means.index.droplevel("method"):
            continue
        best = means.loc[(M, inv)].idxmax()
        ref = paper[(paper["n_parties"] == M) & (paper["inv_epsilon"] == inv) & (paper["method"] == best)]
        ref = ref.set_index("repeat")["accuracy"]
        for method, m in g.groupby("method"):
            paired = m.set_index("repeat")["accuracy"].sub(ref).dropna()
            if paired.empty:
                continue
            mean, lo, hi = mean_interval(paired.to_numpy())
            rows.append(
                dict(
                    n_parties=M,
                    method=method,
                    inv_epsilon=inv,
                    reference=best,
                    difference=mean,
                    low=lo,
                    high=hi,
                    repeats=len(paired),
                )
            )
    return pd.DataFrame(rows)


def leaders_table(frame):
    """At each (M, 1/ε): the method with the highest mean accuracy, and how it stands against the paper's best.

    A row per M, a column per 1/ε; a cell names the leader and its mean accuracy, and when the
    leader is an alternative, its paired lead over the paper's best method with the 95 % interval.
    """
    gaps = paired_gaps(frame)
    out = {}
    keyed = frame.dropna(subset=["inv_epsilon"])
    for (M, inv), g in keyed.groupby(["n_parties", "inv_epsilon"]):
        means = g.groupby("method")["accuracy"].mean()
        best = means.idxmax()
        text = f"{best} {means[best]:.3f}"
        hit = gaps[(gaps["n_parties"] == M) & (gaps["inv_epsilon"] == inv) & (gaps["method"] == best)]
        if len(hit):
            r = hit.iloc[0]
            text += f" ({r['difference']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}] vs {r['reference']})"
        out.setdefault(f"M = {M:,}", {})[_inv_label(inv)] = text
    table = pd.DataFrame(out).T
    grid = sorted(keyed["inv_epsilon"].unique())
    return table[[c for c in map(_inv_label, grid) if c in table.columns]]


def _counts(gaps, method, M):
    g = gaps[(gaps["method"] == method) & (gaps["n_parties"] == M) & (gaps["inv_epsilon"] > 0)]
    return int((g["low"] > 0).sum()), int((g["high"] < 0).sum()), len(g)


def alternatives_findings(frame, majority=None):
    """The page's findings as Markdown bullets, from the results: one per M, at the smallest ε of the grid.

    ``majority``: the share of the test set's most frequent label (the accuracy of always predicting it).
    """
    gaps = paired_gaps(frame)
    bullets = []
    keyed = frame.dropna(subset=["inv_epsilon"])
    for M, part in keyed.groupby("n_parties"):
        inv = part["inv_epsilon"].max()
        at = part[part["inv_epsilon"] == inv].groupby("method")["accuracy"].mean()
        best = at.idxmax()
        paper = [m for m in alt.PAPER_METHODS if m in at]
        text = f"- **M = {M:,} parties, ε = {1 / inv:g}:** the best mean test accuracy is {best}'s, {at[best]:.3f}"
        if paper:
            top = max(paper, key=lambda m: at[m])
            text += f"; the paper's best, {top}, {at[top]:.3f}"
            if majority is not None:
                text += f" (always predicting the majority class: {majority:.3f})"
        text += "."
        if not gaps.empty:
            bits = []
            for method in alt.ALTERNATIVE_METHODS:
                ahead, behind, n = _counts(gaps, method, M)
                if n:
                    bits.append(f"{method} ahead at {ahead} and behind at {behind}")
            if bits:
                n = len(part.loc[part["inv_epsilon"] > 0, "inv_epsilon"].unique())
                text += (
                    f" Against the paper's best method at each ε, paired by split, of the {n} finite values of ε: "
                    + "; ".join(bits)
                    + "."
                )
        bullets.append(text)
    return "\n".join(bullets)


def today_sentence(frame=None, link=""):
    """Where MPL's methods stand against today's alternatives, from the committed results.

    PATE-GNMax and DP-FedAvg against the paper's best method at each ε, paired by split: at how many
    finite ε the 95 % interval lies above 0 and below 0, at the largest M, and the accuracies at the
    smallest ε. ``frame`` defaults to :func:`alternatives_frame` of the committed ``mpl_alternatives``;
    ``link`` is the page's address ("" for none). "" when the results are absent.
    """
    if frame is None:
        try:
            frame = alternatives_frame(results.load(TODAY_PAGE, "paper"))
        except results.MissingResultError:
            return ""
    gaps = paired_gaps(frame)
    if gaps.empty:
        return ""
    M = int(gaps["n_parties"].max())
    bits = []
    for method in ("PATE-GNMax", "DP-FedAvg"):
        ahead, behind, n = _counts(gaps, method, M)
        if n:
            bits.append(f"{method} ahead at {ahead} and behind at {behind} of {n} values of ε")
    if not bits:
        return ""
    part = frame[(frame["n_parties"] == M) & (frame["inv_epsilon"] == frame["inv_epsilon"].max())]
    at = part.groupby("method")["accuracy"].mean()
    inv = float(frame["inv_epsilon"].max())
    paper = max((m for m in alt.PAPER_METHODS if m in at), key=lambda m: at[m], default=None)
    what = f"[today's alternatives]({link})" if link else "today's alternatives"
    reps = int(gaps["repeats"].max())
    tail = ""
    if paper is not None and "PATE-GNMax" in at and "DP-FedAvg" in at:
        tail = (
            f"; at ε = {1 / inv:g}, mean accuracy {at['PATE-GNMax']:.3f} (PATE-GNMax) and {at['DP-FedAvg']:.3f} "
            f"(DP-FedAvg) against {at[paper]:.3f} ({paper}, the paper's best there)"
        )
    return (
        f"Against {what}, on KDD-99 with M = {M:,} parties ((ε, δ) under the same replace-one relation, one "
        f"party the unit), each against the paper's best method at that ε, paired by split ({reps} splits, "
        f"95 % intervals per comparison): " + "; ".join(bits) + tail + "."
    )


#: the laws of the random number of runs K of an honest tuning, with the names of the table's columns
_LAWS = (("geometric", "geometric K"), ("poisson", "Poisson K"), ("logarithmic", "logarithmic K"))


def tuning_table(epsilons=(0.1, 1.0, 10.0), delta=alt.DELTA, candidates=TUNING_CANDIDATES):
    """What tuning a hyper-parameter on the private data would cost each method, in ε.

    A row per (method, ε of one run); the columns: the ε of one run by the RDP accountant (the one
    that analyses repeat-and-select), K runs composed (K = ``candidates``), and the best of a random
    number of runs of mean K released, for three laws of K. The paper's methods are pure ε-DP: K runs
    compose to Kε, and Liu & Talwar's random stopping (a geometric K, the best run and its score
    released) costs 3ε whatever K's mean; the other laws are not analysed for pure ε. The (ε, δ)
    methods: dp-accounting's RDP accountant, for K runs composed and for Papernot & Steinke's
    repeat-and-select, at the same δ. DP-FedAvg is priced under add/remove of a party (calibrated
    to the same ε there): dp-accounting's RDP accountant has no replace-one analysis of
    Poisson-sampled parties.
    """
    K = int(candidates)
    rows = []
    absl = logging.getLogger("absl")
    level = absl.level
    absl.setLevel(logging.ERROR)  # the RDP accountant logs the orders it skips (the bound stays valid)
    try:
        for eps in epsilons:
            for method in alt.PAPER_METHODS:
                rows.append(
                    {
                        "method": method,
                        "relation": "replace-one",
                        "ε of one run": eps,
                        "one run, by RDP": np.nan,
                        f"{K} runs composed": K * eps,
                        "geometric K": liu_talwar_epsilon(eps),
                        "Poisson K": np.nan,
                        "logarithmic K": np.nan,
                    }
                )
            q, T = alt.FEDAVG["party_fraction"], alt.FEDAVG["n_rounds"]
            events = {
                # each event carries its relation's sensitivity (GNMax's √2, soft's 2/(Mλ)) or is
                # add/remove (DP-FedAvg): each is accounted as a plain shift by it
                "PATE-GNMax": (
                    "replace-one",
                    gaussian_event(gnmax_sigma(eps, delta, alt.GNMAX_QUERIES) / VOTE_SENSITIVITY, alt.GNMAX_QUERIES),
                ),
                "DP-FedAvg": (
                    "add/remove",
                    gaussian_event(gaussian_noise_multiplier(eps, delta, T, q, neighbouring="add/remove"), T, q),
                ),
                "soft + Gaussian noise": (
                    "replace-one",
                    gaussian_event(gaussian_noise_multiplier(eps, delta, 1, neighbouring="add/remove"), 1),
                ),
            }
            for method, (relation, event) in events.items():
                row = {
                    "method": method,
                    "relation": relation,
                    "ε of one run": eps,
                    "one run, by RDP": epsilon_of(event, delta, accountant="RDP"),
                    f"{K} runs composed": epsilon_of(
                        dp_accounting.SelfComposedDpEvent(event, K), delta, accountant="RDP"
                    ),
                }
                for law, column in _LAWS:
                    row[column] = repeat_and_select_epsilon(event, delta, K, law)
                rows.append(row)
    finally:
        absl.setLevel(level)
    return pd.DataFrame(rows)


def plot_alternatives(ax, frame, n_parties, majority=None, methods=None):
    """Mean test accuracy against 1/ε for the paper's methods and the alternatives, with 95 % bands over
    splits; batch and indiv as horizontal lines; the majority-class accuracy dotted (``majority``)."""
    part = frame[frame["n_parties"] == n_parties]
    keyed = part.dropna(subset=["inv_epsilon"])
    for method in _today_order(keyed["method"].unique()):
        if methods is not None and method not in methods:
            continue
        g = keyed[keyed["method"] == method]
        rows = [(x, *mean_interval(v["accuracy"])) for x, v in g.groupby("inv_epsilon")]
        xs, mean, lo, hi = (np.array(c, dtype=float) for c in zip(*rows))
        color = color_for(method)
        dashed = method in alt.PAPER_METHODS
        ax.plot(xs, mean, marker="o", ms=3, color=color, ls="--" if dashed else "-", label=method)
        ax.fill_between(xs, np.clip(lo, 0, 1), np.clip(hi, 0, 1), color=color, alpha=0.15, lw=0)
    for method, style in (("batch", "-"), ("indiv", "--")):
        g = part[(part["method"] == method)]
        if g.empty:
            continue
        mean, lo, hi = mean_interval(g["accuracy"])
        ax.axhline(mean, color=color_for(method), ls=style, lw=1, label=method)
    if majority is not None:
        ax.axhline(majority, color=color_for("majority class"), ls=":", lw=1.2, label="always the majority class")
    ax.set_xscale("symlog", linthresh=0.01)
    grid = sorted(keyed["inv_epsilon"].unique())
    ax.set_xlim(-0.003, 1.5 * float(max(grid)))
    set_grid_ticks(ax, grid)
    ax.set(xlabel="1/ε (0 = no noise)", ylabel="test accuracy", ylim=(0, 1), title=f"M = {n_parties:,} parties")
    ax.legend()
    return ax


def gnmax_diagnostic_table(alternatives):
    """GNMax's data-dependent ε beside its released (data-independent) one: mean over splits, per M and 1/ε.

    The data-dependent bound is a function of the private votes: a diagnostic, not a guarantee.
    """
    g = alternatives[(alternatives["method"] == "PATE-GNMax") & (alternatives["inv_epsilon"] > 0)]
    out = g.groupby(["n_parties", "inv_epsilon"], as_index=False).agg(
        epsilon_rdp=("epsilon_rdp", "mean"),
        epsilon_data_dependent=("epsilon_data_dependent", "mean"),
        agreement=("agreement", "mean"),
    )
    out.insert(2, "ε released (PLD)", 1.0 / out["inv_epsilon"])
    return out.rename(
        columns={
            "n_parties": "M",
            "inv_epsilon": "1/ε",
            "epsilon_rdp": "ε by RDP, data-independent",
            "epsilon_data_dependent": "ε by the data-dependent bound (diagnostic, NOT a guarantee)",
            "agreement": "answers equal to the noiseless plurality",
        }
    )
