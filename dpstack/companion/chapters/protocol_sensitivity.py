"""The protocol-sensitivity page: every result a claim on the papers' data is judged on, under each protocol.

The protocols the papers leave open (:mod:`dpstack.companion.variants`: refit on
train+validation, rows divided by a public constant, another seed and data draw, the papers' 10
repeats) are run on the primary results; this page compares them: the two claims the row scale
was found to move, the refit's effect on the means, what the 30 repeats show with the data
redrawn in each, and every claim judged again under each protocol (:func:`dpstack.companion.verdicts.robust_table`).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from dpstack.companion import results, show
from dpstack.companion.plotting import FIGURE_WIDTH, color_for, legend_below, ours_paper_key, set_grid_ticks
from dpstack.companion.stats import t_half_width
from dpstack.companion.variants import (
    PRIMARY,
    REFIT,
    is_committed_or_computed,
    protocol_results,
    protocol_variants,
    repeat_summary,
)
from dpstack.companion.verdicts import robust_counts, robust_table

__all__ = ["claim_effects", "SensitivityPage", "sensitivity_page", "claims_under_protocols", "summary_lines"]


class _Claim(NamedTuple):
    primary: str
    better: str
    worse: str
    at: str  # "ends": the smallest and the largest finite ε, each on its own; "smallest": the smallest ε


#: The two claims the row scale was found to move (judged elsewhere; here: their effect per protocol).
_CLAIMS = (
    _Claim("pst_fig1_epsilon", "PST-F(U)", "PLR", "ends"),
    _Claim("pptl_table1_mnist", "PPTL-FS(R)", "SimComb", "smallest"),
)


def _t_interval(values):
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    n = values.size
    mean = float(values.mean()) if n else np.nan
    half = t_half_width(values, 0.95)  # NaN for n < 2
    return n, mean, mean - half, mean + half


def _claim_rows(frame, claim, protocol):
    """One row per (dataset, ε judged): the effect of ``claim`` at each ε on its own, never pooled over ε.

    An effect whose sign may change along ε is not averaged along it (the rule's own requirement):
    "ends" judges the smallest and the largest finite ε separately, "smallest" the smallest only.
    """
    frame = frame[frame["combiner"] == "C-hl"] if "combiner" in frame.columns else frame
    rows = []
    for d, part in frame.groupby("dataset", sort=False) if "dataset" in frame.columns else [("", frame)]:
        part = part[np.isfinite(part["epsilon"])]
        eps = sorted(part["epsilon"].unique())
        if not eps:
            continue
        chosen = [eps[0]] if claim.at == "smallest" or len(eps) == 1 else [eps[0], eps[-1]]
        for e in chosen:
            at = part[part["epsilon"] == e]
            wide = at.pivot_table(index="repeat", columns="method", values="auc")
            if claim.better not in wide or claim.worse not in wide:
                continue
            n, mean, lo, hi = _t_interval(wide[claim.better] - wide[claim.worse])
            rows.append(
                {
                    "claim": f"{claim.better} > {claim.worse}",
                    "dataset": d,
                    "where": f"ε = {e:g}",
                    "protocol": protocol,
                    "repeats": n,
                    "effect": mean,
                    "ci_low": lo,
                    "ci_high": hi,
                }
            )
    return rows


def claim_effects(primary_frames, variants):
    """The paired effect of the two claims the row scale moves, under every protocol.

    Parameters
    ----------
    primary_frames : dict of str → DataFrame
        Primary result name → its table (the protocol "as in the book").
    variants : dict of str → dict of str → DataFrame
        Primary result name → :func:`protocol_variants`.

    Returns
    -------
    pandas.DataFrame
        ``claim``, ``dataset``, ``where`` (one ε: the effect is never pooled over ε), ``protocol``,
        ``repeats``, ``effect`` (mean over repeats of the difference of test AUC at that ε) and its 95 %
        t-interval ``ci_low``, ``ci_high`` (a description of the spread; verdicts use the rule's test).
    """
    rows = []
    for claim in _CLAIMS:
        frames = {"as in the book": primary_frames.get(claim.primary)}
        frames.update(variants.get(claim.primary, {}))
        for protocol, frame in frames.items():
            if frame is not None:
                rows += _claim_rows(frame, claim, protocol)
    return pd.DataFrame(
        rows, columns=["claim", "dataset", "where", "protocol", "repeats", "effect", "ci_low", "ci_high"]
    )


# --------------------------------------------------------------------------------------- the page
class SensitivityPage(NamedTuple):
    """What the protocol-sensitivity page shows: a note, tables for the reader, a figure, prose, and the data.

    ``tables`` holds the reader's tables (formatted, reader words): ``"claims"``, ``"repeats"``
    (the stacked methods at each table's smallest ε), ``"repeats, every ε"`` and ``"means"``;
    ``data`` the numbers behind them (:func:`claim_effects`, the mean AUC per protocol and
    :func:`repeat_summary` of the stacked methods).
    """

    note: str
    tables: dict
    figure: object
    prose: str
    data: dict | None = None


def _ci(effect, lo, hi):
    return f"{effect:+.3f} [{lo:+.3f}, {hi:+.3f}]" if np.isfinite(lo) else f"{effect:+.3f}"


def _reader_tables(effects, means, stacked):
    claims = pd.DataFrame(
        {
            "claim": effects["claim"],
            "data": [f"{d}, {w}" if d else w for d, w in zip(effects["dataset"], effects["where"])],
            "protocol": effects["protocol"],
            "repeats": effects["repeats"],
            "difference of test AUC [95 % CI]": [
                _ci(e, lo, hi) for e, lo, hi in zip(effects["effect"], effects["ci_low"], effects["ci_high"])
            ],
        }
    )
    shown = stacked.rename(
        columns={
            "epsilon": "ε",
            "mean": "mean AUC",
            "median": "median AUC",
            "min": "worst repeat",
            "collapsed": "collapsed repeats (share)",
        }
    )
    smallest = shown[shown["ε"] == shown.groupby("table")["ε"].transform("min")]
    return {  # the first column as the row labels: no running row number
        "claims": claims.set_index("claim"),
        "repeats": smallest.set_index("table"),
        "repeats, every ε": shown.set_index("table"),
        "means": means.rename(columns={"epsilon": "ε"}).set_index("table"),
    }


def _mean_table(primary_frames, variants):
    """Mean test AUC per table, dataset, method and ε: one column per protocol (the book's protocol first)."""
    long = []
    for name, frame in primary_frames.items():
        if not PRIMARY[name].get("curves"):
            continue  # the curves against ε (PST Figure 1, PPTL Table 1); the others are judged in the claims table
        for protocol, f in {"as in the book": frame, **variants.get(name, {})}.items():
            f = f[f["combiner"] == "C-hl"] if "combiner" in f.columns else f
            g = f.groupby(["dataset", "method", "epsilon"], sort=False)["auc"].mean().reset_index()
            long.append(g.assign(table=PRIMARY[name]["table"], protocol=protocol))
    long = pd.concat(long, ignore_index=True)
    keys = ["table", "dataset", "method", "epsilon"]
    wide = long.pivot_table(index=keys, columns="protocol", values="auc", sort=False)
    return wide[list(dict.fromkeys(long["protocol"]))].reset_index().rename_axis(columns=None)


def _claim_sentence(effects):
    out = []
    for (claim, dataset, where), part in effects.groupby(["claim", "dataset", "where"], sort=False):
        bits = []
        for r in part.to_dict("records"):
            side = "above 0" if r["ci_low"] > 0 else "below 0" if r["ci_high"] < 0 else "includes 0"
            bits.append(f"{r['protocol']}: {r['effect']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}], {side}")
        on = f" on {dataset}" if dataset else ""
        out.append(f"* **{claim}**{on} ({where}): " + "; ".join(bits) + ".")
    return "\n".join(out)


def _refit_sentence(means):
    if REFIT not in means:
        return ""
    d = means.assign(change=means[REFIT] - means["as in the book"]).dropna(subset=["change"])
    if d.empty:
        return ""
    big = d.loc[d["change"].abs().idxmax()]
    up = int((d["change"] > 0).sum())
    return (
        f"Refitting the chosen setting on the whole training set raises the mean test AUC in {up} of "
        f"{len(d)} (table, dataset, method, ε) entries; the largest change is {big['method']} on "
        f"{big['dataset']} at ε = {big['epsilon']:g} in {big['table']}, from {big['as in the book']:.3f} to "
        f"{big[REFIT]:.3f}."
    )


def _repeats_sentence(summaries):
    out = []
    for name, s in summaries.items():
        stacked = s[s["collapsed"].notna()]
        if stacked.empty:
            continue
        worst = stacked.loc[stacked["collapsed"].idxmax()]
        skew = stacked.loc[stacked["mean − median"].idxmin()]
        where = f" on {worst['dataset']}" if "dataset" in s else ""
        skew_where = f" on {skew['dataset']}" if "dataset" in s else ""
        out.append(
            f"{PRIMARY[name]['table']}, {int(worst['repeats'])} repeats: the largest share of collapsed repeats is "
            f"{worst['collapsed']:.0%} ({worst['method']}{where} at ε = {worst['epsilon']:g}); the mean lies "
            f"furthest below the median for {skew['method']}{skew_where} at ε = {skew['epsilon']:g} "
            f"(mean {skew['mean']:.3f}, median {skew['median']:.3f}, worst repeat {skew['min']:.3f})."
        )
    return " ".join(out)


def _figure(effects, means):
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys(zip(effects["claim"], effects["dataset"], effects["where"])))
    one = {p: effects[[k == p for k in zip(effects["claim"], effects["dataset"], effects["where"])]] for p in panels}
    heights = [0.9 + 0.3 * len(one[p]) for p in panels]
    fig, axes = plt.subplots(
        len(panels) + 1,
        1,
        figsize=(FIGURE_WIDTH, sum(heights) + 3.0),
        squeeze=False,
        layout="constrained",
        gridspec_kw={"height_ratios": [*heights, 3.0]},
    )
    axes = axes[:, 0]
    for ax, (claim, dataset, where) in zip(axes, panels):
        part = one[(claim, dataset, where)].reset_index(drop=True)
        y = np.arange(len(part))[::-1]
        ax.errorbar(
            part["effect"],
            y,
            xerr=[part["effect"] - part["ci_low"], part["ci_high"] - part["effect"]],
            fmt="o",
            color=color_for(claim.split(" > ")[0]),
            capsize=3,
        )
        ax.axvline(0, color="k", lw=0.6)
        ax.set_yticks(y, part["protocol"])
        ax.set(
            title=f"{claim}{' on ' + dataset if dataset else ''}, {where}", xlabel="difference of test AUC [95 % CI]"
        )
    ax = axes[-1]
    if REFIT in means:
        part = means[(means["table"] == "PST Figure 1") & (means["dataset"] == "MNIST")]
        part = part[np.isfinite(part["epsilon"])]
        for m, sub in part.groupby("method", sort=False):
            ax.plot(sub["epsilon"], sub["as in the book"], "-o", color=color_for(m), label=f"{m}", ms=4)
            ax.plot(sub["epsilon"], sub[REFIT], "--s", color=color_for(m), ms=4, mfc="none")
        ax.set_xscale("log")
        set_grid_ticks(ax, sorted(part["epsilon"].unique()))
        ax.set(title="PST Figure 1, MNIST: validated and refit", xlabel="ε", ylabel="mean test AUC")
        ax.legend()
        legend_below(fig, extra=ours_paper_key(ours="validated model (solid)", paper="refit on all (dashed)"))
    else:
        ax.set_axis_off()
    plt.close(fig)  # shown where the page displays it, not where it is built
    return fig


def sensitivity_page(profile="paper", *, seed=0, n_jobs=1):
    """Everything the protocol-sensitivity page shows, from the committed results (``profile="paper"``).

    At ``profile="paper"`` only committed results are read: while any protocol result is not
    committed, the page shows a note saying so and no numbers. Another profile computes the
    grids live (the quick profile: a few repeats, MNIST only for PST).

    Returns
    -------
    SensitivityPage
        ``note`` (where the numbers come from, or that they are not computed yet), ``tables``
        (``"claims"``: :func:`claim_effects`; ``"means"``: mean test AUC per protocol; ``"repeats"``:
        :func:`repeat_summary` of the stacked methods per primary result), ``figure`` (or None) and
        ``prose`` (Markdown built from the results).
    """
    compute = profile != "paper"
    missing = [n for name in PRIMARY for n in protocol_results(name)]
    # the book's seed (0) reads every result at its own root seed (the variant "another seed" has 1)
    own = None if seed == 0 else seed
    missing = [n for n in missing if not is_committed_or_computed(n, profile, own, compute)]
    if missing:
        note = (
            "**Not yet computed.** The protocol-sensitivity results have not been computed at the papers' "
            f"scale yet ({len(missing)} of {sum(len(protocol_results(n)) for n in PRIMARY)} grids missing); "
            "they are computed together with the book's other results, and this page then shows them. "
            "Until then it shows no numbers."
        )
        return SensitivityPage(note, {}, None, "")
    shown = [name for name in PRIMARY if PRIMARY[name].get("curves") or PRIMARY[name].get("summarised")]
    primary = {name: results.load_or_run(name, profile=profile, seed=seed, n_jobs=n_jobs) for name in shown}
    variants = {name: protocol_variants(name, profile, seed=own, n_jobs=n_jobs, compute=compute) for name in shown}
    effects = claim_effects(primary, variants)
    means = _mean_table(primary, variants)
    summaries = {}
    for name in shown:
        summary = repeat_summary(primary[name], name)
        if "n_groups" in summary:  # PST Figure 2 [IJCAI Fig. 2(a)–(b)]: its default K, the K of every other figure
            summary = summary[summary["n_groups"] == 5].drop(columns="n_groups")
        summaries[name] = summary
    stacked = pd.concat(
        [s[s["collapsed"].notna()].assign(table=PRIMARY[n]["table"]) for n, s in summaries.items()],
        ignore_index=True,
    )
    stacked = stacked[["table", "dataset", "method", "epsilon", "repeats", "mean", "median", "min", "collapsed"]]
    source = (
        "committed results computed at the papers' scale" if not compute else f"a live run at the {profile} profile"
    )
    note = f"From {source}: {', '.join(PRIMARY[n]['table'] for n in PRIMARY)}, each under every protocol."
    robust = claims_under_protocols(profile)
    if robust is not None:
        note += (
            " Every claim on the papers' data is judged again under each protocol in the last table; the claim "
            "tables of the experiment pages summarise it in their robust column."
        )
    prose = "\n\n".join(
        p
        for p in (
            "**The two claims the row scale moves**, under every protocol (the difference of test AUC, "
            "paired on the repeat):\n\n" + _claim_sentence(effects),
            _refit_sentence(means),
            _repeats_sentence(summaries),
        )
        if p
    )
    data = {"claims": effects, "means": means, "repeats": stacked}
    tables = _reader_tables(effects, means, stacked)
    if robust is not None:
        data["every claim"] = robust
        shown = robust.assign(page=robust["page"].map(page_title)) if "page" in robust else robust
        tables["every claim"] = shown.set_index("claim")
        counts = robust_counts()
        data["changes"] = counts
        tables["changes"] = counts.set_index(["paper", "protocol"])
        prose = "\n\n".join(p for p in (prose, _changes_sentence(counts)) if p)
    return SensitivityPage(note, tables, _figure(effects, means), prose, data)


def _by_construction():
    """The claims on the papers' data that are true by construction, labelled as in the robust table."""
    j = show.judged()
    keep = (j["data"] == "paper") & (j["by_construction"].fillna("") != "")
    return {f"{c} ({d})" for c, d in zip(j.loc[keep, "claim"], j.loc[keep, "dataset"])}


def page_title(page):
    """A notebook page's title as the sidebar shows it, cut at its first colon ("PST Figure 1"); else the name."""
    import json

    path = Path(__file__).resolve().parents[3] / "notebooks" / f"{page}.ipynb"
    try:
        cells = json.loads(path.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return page
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].split(":")[0].strip()
    return page


def _changes_sentence(counts):
    """What the variants do to the verdicts on the papers' data, from :func:`~dpstack.companion.verdicts.robust_counts`."""
    if counts.empty:
        return ""
    rev = int(counts["reversed"].sum())
    lost = counts.groupby("protocol", sort=False)["decided → inconclusive"].sum()
    gained = int(counts["inconclusive → decided"].sum())
    worst = lost.idxmax()
    text = (
        f"**What the variants do to the verdicts.** Over the {counts['protocol'].nunique()} variants run and the "
        f"three papers, {rev} verdict{'s' if rev != 1 else ''} reverse{'s' if rev == 1 else ''} (decided the other way). "
        f"A decision lost under a variant is power, not a reversal: most under {worst} "
        f"({int(lost[worst])} of the verdicts judged under it); {gained} inconclusive verdict"
        f"{'s are' if gained != 1 else ' is'} decided under some variant."
    )
    seed = counts[counts["protocol"].str.startswith("another seed")]
    if len(seed):
        lose, gain = int(seed["decided → inconclusive"].sum()), int(seed["inconclusive → decided"].sum())
        text += (
            f" Under another seed and data draw: {int(seed['holds'].sum())} of {int(seed['claims'].sum())} verdicts "
            f"hold, {int(seed['reversed'].sum())} reverse, {lose} lose{'s' if lose == 1 else ''} "
            f"{'its' if lose == 1 else 'their'} decision and {gain} gain{'s' if gain == 1 else ''} one."
        )
    return text


def claims_under_protocols(profile="paper"):
    """Every judged claim on the papers' data: its verdict as in the book and under each protocol (a frame).

    Columns ``claim`` (its label and data set), ``page``, ``as in the book``, one column per
    protocol label (a verdict; "not measured" where the variant lacks the claim's rows; "not
    applicable" with the reason where the protocol does not apply; "–" where the result has no
    such variant) and ``robust`` (the claim tables' column). Read from the committed results
    (None at another profile: the registry judges committed results only).
    """
    if profile != "paper":
        return None

    return robust_table()


_DECIDED = ("supported", "contradicted")


def summary_lines(page):
    """The page's bottom line (the box atop it), from a :func:`sensitivity_page`'s tables.

    Counts, over the claims on the papers' data, those whose verdict holds under every variant
    run, those reversed (supported ↔ contradicted) under some variant, and those that lose or gain
    a decision; names the variant that moves most claims and the largest share of collapsed repeats.
    """
    tables = page.tables or {}
    if "every claim" not in tables:
        return ["No claim is judged under the protocol variants here: their results are absent."]
    claims = tables["every claim"]
    trivial = [c for c in claims.index if c in _by_construction()]  # shown, never counted (as in the tallies)
    claims = claims.drop(index=trivial)
    variants = [c for c in claims.columns if c not in ("page", "as in the book", "robust")]
    reversed_, lost, gained, steady = 0, 0, 0, 0
    for _, row in claims.iterrows():
        base = str(row["as in the book"])
        run = [str(row[v]) for v in variants if str(row[v]) in (*_DECIDED, "inconclusive")]
        flips = [v for v in run if base in _DECIDED and v in _DECIDED and v != base]
        losses = [v for v in run if base in _DECIDED and v == "inconclusive"]
        gains = [v for v in run if base == "inconclusive" and v in _DECIDED]
        reversed_ += bool(flips)
        lost += bool(losses) and not flips
        gained += bool(gains)
        steady += not (flips or losses or gains)
    lines = [
        f"Of the {len(claims)} claims on the papers' data"
        + (f" (the {len(trivial)} true by construction left out, as from the tallies)" if trivial else "")
        + f", {steady} keep their verdict under every protocol variant "
        f"run, {reversed_} {'is' if reversed_ == 1 else 'are'} reversed (supported ↔ contradicted) under at "
        f"least one, {lost} lose their decision (become inconclusive) under at least one without being reversed, "
        f"and {gained} inconclusive claim{'s' if gained != 1 else ''} become{'' if gained != 1 else 's'} "
        "decided under some variant."
    ]
    changes = tables.get("changes")
    if changes is not None and len(changes):
        moved = changes["decided → inconclusive"] + changes["reversed"]
        paper, protocol = moved.idxmax()
        lines.append(
            f"The variant that moves most verdicts: {protocol} ({paper}: {int(moved.max())} of "
            f"{int(changes.loc[(paper, protocol), 'claims'])} claims reversed or undecided). Most changes are "
            "decisions lost, not reversals: the variants change the noise or the number of repeats, and with them "
            "the power of the test."
        )
    repeats = tables.get("repeats")
    if repeats is not None and len(repeats):
        flat = repeats.reset_index()
        worst = flat.loc[flat["collapsed repeats (share)"].idxmax()]
        lines.append(
            f"Collapsed repeats of the stacked methods, at each table's smallest ε: at most "
            f"{100 * worst['collapsed repeats (share)']:.0f} % ({worst['method']} on {worst['dataset']} at ε = "
            f"{worst['ε']:g}, {worst['table']}, {int(worst['repeats'])} repeats)."
        )
    return lines
