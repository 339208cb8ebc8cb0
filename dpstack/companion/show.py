"""The verdicts as the book shows them: a box on each page, narrow claim tables, the findings.

Every number here is computed from the committed results by :func:`dpstack.companion.verdicts.judge`;
nothing is typed. :func:`verdict_box` opens an experiment page, :func:`verdict_table` is a
page's claim table (claim | verdict | effect [95 % CI] | robust, the detail of each claim in a
collapsible row), :func:`findings_html` the findings page, :func:`summary_markdown` the
landing page's summary (written to ``book/findings_summary.md`` by ``python -m
dpstack.companion.show``; a test checks that the committed file is what the code writes), and
:func:`rule_changes` the table of old tally → new tally with the rule change that moved each
claim.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import math
import re
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpstack.companion import results, verdict_store
from dpstack.companion.live import short_text
from dpstack.companion.plotting import COLORS, FIGURE_WIDTH
from dpstack.companion.registry import DATA_STATUS, paper_module, paper_names, papers
from dpstack.companion.rule import OUTCOMES, WITHIN_RESOLUTION, counts_sentence, interval_label
from dpstack.companion.variants import draw_sentence
from dpstack.companion.verdicts import (
    CHANGES,
    RULE,
    Rule,
    claims,
    committed_frames,
    judge,
    prepare_functions,
    tally,
    variant_order,
)


def _label(paper):
    """How a heading names ``paper`` ("PST (Yao et al.)")."""
    return next(p.LABEL for p in papers() if p.NAME == paper)


__all__ = [
    "result_box_html",
    "result_box",
    "live_box",
    "live_box_html",
    "judged",
    "verdict_table",
    "verdict_box",
    "encoding_markdown",
    "findings_html",
    "summary_markdown",
    "rule_changes",
    "rule_change_table",
    "effect_text",
    "SUMMARY_PATH",
    "summary_files",
]

SUMMARY_PATH = Path(__file__).resolve().parents[2] / "book" / "findings_summary.md"

_DATA_WORDS = {
    "paper": "on the paper's data",
    "stand-in": "on a stand-in data set (orderings on that data, not evidence about the paper's)",
    "synthetic": "on the synthetic RUIJIN-like cohort (orderings on that cohort, not evidence about RUIJIN)",
}


def _frames(claim_list=None):
    """The committed tables the claims in ``claim_list`` (default: every judged claim) are judged on."""
    claim_list = claims(judged=True) if claim_list is None else claim_list
    return _committed(tuple(sorted({c.result for c in claim_list if c.kind != "not judged"})))


@functools.cache
def _committed(names):
    return committed_frames(names)


def _families(page):
    """The (paper, data status) families of ``page``'s claims: what Holm adjusts its verdicts over."""
    return frozenset((c.paper, c.data) for c in claims() if c.page == page)


def _family_claims(families):
    """The claims in ``families`` (a frozenset of (paper, data status)), or None for every claim."""
    return None if families is None else [c for c in claims() if (c.paper, c.data) in families]


@functools.cache
def _stored():
    """The committed verdicts (:mod:`dpstack.companion.verdict_store`), or None when absent or stale."""
    return verdict_store.load()


@functools.cache
def _judged_committed(families=None):
    """The committed verdicts of every claim, or of the claims in ``families``: read from the store when it is
    fresh (each family's Holm runs within the family, so its rows are those of the whole table), else judged."""
    stored = _stored()
    if stored is not None:
        if families is None:
            return stored
        keep = [(p, d) in families for p, d in zip(stored["paper"], stored["data"])]
        return stored[keep].reset_index(drop=True)
    mine = _family_claims(families)
    return verdict_store.judge_with_robust(mine, _frames(mine))


def judged(page=None, frames=None):
    """All claims judged (Holm over each paper's families), with the robust column; optionally one page's rows.

    A page's rows are judged with the families they belong to only (Holm runs within a paper's
    claims on one kind of data, so the other papers' claims do not change them): rendering one
    page reads only its papers' committed results. ``frames`` (result name → table) replaces
    committed tables, e.g. a page's live table at another profile; the families are then judged
    again with those tables.
    """
    families = None if page is None else _families(page)
    if families is not None and not families:  # a page that judges no claim of the papers
        return pd.DataFrame(columns=["page", "claim", "verdict", "robust"])
    if frames:
        mine = _family_claims(families)
        j = verdict_store.judge_with_robust(mine, {**_frames(mine), **frames})
    else:
        j = _judged_committed(families).copy()
    return j if page is None else j[j["page"] == page].reset_index(drop=True)


def _num(x, digits=3):
    return f"{x:+.{digits}f}"


def _end(x, digits):
    return ("+∞" if x > 0 else "−∞") if math.isinf(x) else _num(x, digits)


def effect_text(row, digits=3):
    """ "+0.012 [−0.003, +0.027]": the mean per-repeat difference and the interval the decision used; "–" if not run.

    The interval is the sign-flip interval at the level the verdict was judged at after Holm
    (:mod:`dpstack.companion.rule`); an infinite end means the repeats are too few for a test at that level.
    """
    if row["verdict"] not in OUTCOMES or not math.isfinite(row["effect"]):
        return "–"
    if math.isnan(row["ci_low"]) or math.isnan(row["ci_high"]):
        return _num(row["effect"], digits).replace("-", "−")
    return f"{_num(row['effect'], digits)} [{_end(row['ci_low'], digits)}, {_end(row['ci_high'], digits)}]".replace(
        "-", "−"
    )


def _p(x):
    if not math.isfinite(x):
        return "–"
    return "&lt; 0.0001" if x < 1e-4 else f"{x:.4f}"


def _result_words(name):
    """The stored result ``name`` as a reader reads it: its description, without a function's name in brackets."""
    try:
        words = results.get(name).description or name
    except KeyError:
        return name
    return re.sub(r"\s*\((?:\w+_)+\w+\)$", "", words)


def _detail(row):
    c, v = row["claim_obj"], row["verdict_obj"]
    items = [
        f"<b>The paper</b> ({html.escape(c.location)}): “{html.escape(c.words)}”",
        f"<b>Judged as</b> {html.escape(c.kind)}"
        + (
            f", {'every' if c.quantifier == 'every' else 'some'} one of {len(c.parts)} parts"
            if len(c.parts) > 1
            else ""
        )
        + f"; data: {html.escape(_DATA_WORDS[c.data])}; result: {html.escape(_result_words(c.result))}.",
    ]
    if c.margin is not None:
        items.append(
            f"<b>Margin</b> ±{c.margin.value:g} {html.escape(c.margin.metric)}: {html.escape(c.margin.derivation)}."
            + (f" At the paper's test size: {html.escape(c.margin.at_paper_size)}." if c.margin.at_paper_size else "")
        )
    if c.note:
        items.append(f"<b>Note</b>: {html.escape(c.note)}")
    if c.by_construction:
        items.append(f"<b>True by construction</b>, so not counted in any tally: {html.escape(c.by_construction)}.")
    if v is not None:
        level = row.get("level", float("nan"))
        items.append(
            f"<b>Repeats</b>: {v.n}; <b>p</b> (sign-flip test) raw, inside the claim {_p(row['p_raw'])}, Holm over the "
            f"paper's claims {_p(row['p_adjusted'])}; effect shown: {html.escape(row['at'] or '–')}; its interval is "
            + (
                f"the {html.escape(interval_label(v))}, the level the verdict was judged at."
                if math.isfinite(level)
                else "–."
            )
        )
        res = row.get("resolution", float("nan"))
        if c.kind == "directional" and math.isfinite(res):
            items.append(
                f"<b>Resolution</b> of the data: ±{res:g} (one score's sampling half-width on the test set — the "
                "resolution of a single score, not of a paired difference, which is usually finer); a reversal "
                "smaller than this is reported as “reversed, within resolution”, not as a contradiction."
            )
        if len(v.parts) > 1:
            lines = "".join(
                f"<li>{html.escape(p.claim)}: {p.outcome}"
                + (
                    ""
                    if p.n == 0
                    else ", "
                    + html.escape(
                        effect_text(
                            {"verdict": p.outcome, "effect": p.effect, "ci_low": p.ci_low, "ci_high": p.ci_high}
                        )
                    )
                    + f", p (Holm inside the claim) {_p(p.p_adjusted)}"
                )
                + "</li>"
                for p in v.parts
            )
            items.append(f"<ul>{lines}</ul>")
    return "".join(f"<p>{x}</p>" if not x.startswith("<ul") else x for x in items)


def live_frames(live):
    """The tables of ``live`` (result name → table) that are not the committed ones (those need a new judgement)."""
    out = {}
    for name, frame in (live or {}).items():
        prov = frame.attrs.get("provenance") or {}
        if not (prov.get("source") == "committed" and prov.get("profile") == "paper"):
            out[name] = frame
    return out


def verdict_table(page=None, rows=None, live=None, result=None, prepare=None):
    """The claim table of ``page`` (or of ``rows`` of :func:`judged`): four narrow columns, detail collapsible.

    Parameters
    ----------
    page : str, optional
        The page whose claims are shown.
    rows : pandas.DataFrame, optional
        Rows of :func:`judged` to show instead.
    live : dict, optional
        Result name → the table the page computed; used (and the paper's families judged
        again) when it is not the committed paper-profile table.
    result : str, optional
        Only the claims judged on this result.
    prepare : str, optional
        Judge the page's claims again with another preparation of their tables (``"mpl-exp"``:
        MPL's claims on the release with noise that is not ε-DP, a hypothesis, never counted).

    Returns an object that Jupyter renders as HTML (``IPython.display.HTML`` when available).
    """
    if rows is None and prepare is not None:
        rows = variant_rows(page, prepare, live)
    elif rows is None:
        rows = judged(page, live_frames(live))
    if result is not None:
        rows = rows[[c.result == result for c in rows["claim_obj"]]]
    body = []
    for _, row in rows.iterrows():
        verdict = row["verdict"]
        shown = verdict + (" (by construction, not counted)" if _by_construction(row) else "")
        body.append(
            f'<tr class="dpstack-verdict-{verdict.replace(" ", "-")}"><td>'
            f"<details><summary>{html.escape(row['claim'])}"
            + (f" <small>({html.escape(row['dataset'])})</small>" if row["dataset"] else "")
            + f"</summary>{_detail(row)}</details></td>"
            f"<td>{html.escape(shown)}</td><td>{html.escape(effect_text(row))}</td>"
            f"<td>{html.escape(str(row['robust']))}</td></tr>"
        )
    counts = _table_counts(rows)
    text = (
        '<table class="dpstack-verdicts"><thead><tr><th>claim (click for the detail)</th><th>verdict</th>'
        "<th>effect [interval]</th><th>robust</th></tr></thead><tbody>" + "".join(body) + "</tbody></table>" + counts
    )
    return _html(text)


def _table_counts(rows):
    """The count line under a claim table: when the table mixes kinds of data, the paper's data first and apart.

    A pooled count over the paper's data, the synthetic cohort and stand-in data would contradict the
    tallies, which count only the paper's own data; so a mixed table gets one sentence per kind of data.
    """
    run = _counted(rows)
    if not len(run):
        return ""
    kinds = list(dict.fromkeys(run["data"])) if "data" in run else []
    if len(kinds) <= 1:
        return f'<p class="dpstack-verdict-counts"><em>{counts_sentence(run)}</em></p>'
    order = [k for k in _DATA_WORDS if k in kinds] + [k for k in kinds if k not in _DATA_WORDS]
    parts = [
        f"{html.escape(_DATA_WORDS.get(kind, kind))}: {counts_sentence(run[run['data'] == kind]).rstrip('.')}"
        for kind in order
    ]
    return (
        '<p class="dpstack-verdict-counts"><em>This table, counted per kind of data (only the paper\'s own data '
        "counts for a paper): " + "; ".join(parts) + ".</em></p>"
    )


def variant_rows(page, prepare, live=None):
    """``page``'s judged claims with every table prepared by ``prepare`` (a name of :func:`prepare_functions`)."""
    known = prepare_functions()
    if prepare not in known:
        raise ValueError(f"prepare must be one of {sorted(known)}, got {prepare!r}")
    mine = [dataclasses.replace(c, prepare=prepare) for c in claims() if c.page == page and c.kind != "not judged"]
    frames = {**_frames(), **(live or {})}
    j = judge(frames=frames, claim_list=mine)
    j["robust"] = "–"
    return j


def _html(text):
    try:
        from IPython.display import HTML
    except ImportError:  # pragma: no cover - IPython is installed with the book
        return text
    return HTML(text)


def _by_construction(row):
    return bool(row.get("by_construction", "") or "")


def _counted(rows):
    """The rows of judged claims that count: run, and not true by construction."""
    run = rows[rows["verdict"].isin(OUTCOMES)]
    if "by_construction" in run:
        run = run[run["by_construction"].fillna("") == ""]
    return run


def _counts_text(part):
    c = {o: int((part["verdict"] == o).sum()) for o in OUTCOMES}
    n = sum(c.values())
    within = f", {c[WITHIN_RESOLUTION]} reversed within resolution" if c[WITHIN_RESOLUTION] else ""
    return (
        f"{c['supported']} of {n} supported, {c['contradicted']} contradicted{within}, {c['inconclusive']} inconclusive"
    )


def verdict_box(page, live=None):
    """The admonition that opens an experiment page: its claims' tally per kind of data, the contradicted named.

    ``live`` as for :func:`verdict_table`.
    """
    rows = judged(page, live_frames(live))
    parts = []
    for data in DATA_STATUS:
        part = _counted(rows[rows["data"] == data])
        if part.empty:
            continue
        line = f"<p><b>{_counts_text(part)}</b> {html.escape(_DATA_WORDS[data])}."
        for outcome, head in (("contradicted", "Contradicted"), (WITHIN_RESOLUTION, "Reversed within resolution")):
            decided = part[part["verdict"] == outcome]
            if len(decided):
                line += (
                    f" {head}: "
                    + "; ".join(
                        f"{html.escape(r['claim'])} ({html.escape(r['dataset'])}, {html.escape(effect_text(r))})"
                        for _, r in decided.iterrows()
                    )
                    + "."
                )
        parts.append(line + "</p>")
    not_run = rows[rows["verdict"] == "not run"]
    if len(not_run):
        parts.append(f"<p>{len(not_run)} claims not run here: their data or committed results are absent.</p>")
    trivial = rows[[_by_construction(r) for _, r in rows.iterrows()]] if len(rows) else rows
    if len(trivial):
        parts.append(
            f"<p>{len(trivial)} claim{'s' if len(trivial) > 1 else ''} true by construction (shown in the table, "
            "not counted): "
            + "; ".join(f"{html.escape(r['claim'])} ({html.escape(r['dataset'])})" for _, r in trivial.iterrows())
            + ".</p>"
        )
    if not parts:
        parts.append("<p>No claim of the papers is judged on this page.</p>")
    robust = rows[rows["verdict"].isin(OUTCOMES)]["robust"]
    variants_run = not (len(robust) and robust.str.startswith("not run").all())
    if not variants_run:
        parts.append("<p>Robustness to the protocol variants: not run.</p>")
    if len(robust):
        parts.append(
            "<p>Each claim is judged on one paired difference per repeat by a sign-flip test (no normal "
            "distribution assumed), with Holm's correction inside the claim and over the paper's claims; the "
            "table below gives the effect (mean difference, and the interval at the level the verdict was judged "
            "at) and, on a click, the detail"
            + (
                "; its robust column says whether the verdict holds under each protocol variant (refit after "
                "tuning, the public row scale, another seed and data draw, the papers' 10 repeats), and whether a "
                "change is a reversal or a decision lost or gained.</p>"
                if variants_run
                else ".</p>"
            )
        )
        parts += [f"<p>{html.escape(t)}</p>" for t in draw_sentences(rows)]
    return _html(
        '<div class="admonition note dpstack-verdict-box"><p class="admonition-title">Verdicts on this page</p>'
        + "".join(parts)
        + "</div>"
    )


_KIND_WORDS = {
    "directional": "a difference in the stated direction",
    "non-inferiority": "not worse by the margin (±{m:g}) or more",
    "equivalence": "equal within the margin (±{m:g})",
}


def encoding_markdown(page, result=None):
    """How the claims of ``page`` are tested, one bullet per encoding, generated from the registry.

    Each bullet is the claim as judged (its label), the kind of test, and how many parts must hold;
    the datasets it is judged on follow. ``result`` keeps only the claims judged on that result.
    The rule itself (pairing, the test, Holm, outcomes) is stated once, in the page's verdict box
    and in :mod:`dpstack.companion.rule`; nothing here is typed by hand, so it follows the registry.
    """
    mine = [c for c in claims() if c.page == page and c.kind != "not judged"]
    if result is not None:
        mine = [c for c in mine if c.result == result]
    if not mine:
        return ""
    grouped = {}
    for c in mine:
        key = (c.label, c.kind, c.quantifier, len(c.parts), None if c.margin is None else c.margin.value)
        grouped.setdefault(key, []).append(c)
    lines = []
    for (label, kind, quantifier, n_parts, margin), group in grouped.items():
        how = _KIND_WORDS[kind].format(m=margin if margin is not None else float("nan"))
        if n_parts > 1:
            need = "every one" if quantifier == "every" else "at least one"
            how += f"; {n_parts} parts, {need} must hold"
        datasets = ", ".join(dict.fromkeys(c.dataset for c in group if c.dataset))
        extra = " (true by construction, not counted)" if any(c.by_construction for c in group) else ""
        lines.append(f"- {label}: {how}" + (f" — {datasets}" if datasets else "") + extra)
    return (
        "How each claim below is tested, as the registry of claims encodes it (one paired difference per "
        "repeat for each part, judged by the rule stated in the box at the top of the page):\n\n" + "\n".join(lines)
    )


def draw_sentences(rows):
    """One sentence per result judged in ``rows``: what a repeat draws anew and what stays one draw.

    From :func:`dpstack.companion.variants.draw_sentence`.
    """
    judged = rows[rows["verdict"].isin(OUTCOMES)]
    by_text = {}
    for c, dataset in zip(judged["claim_obj"], judged["dataset"]):
        text = draw_sentence(c.result, dataset)
        if text:
            by_text.setdefault(text, []).append(dataset)
    return [f"The data ({', '.join(dict.fromkeys(d))}): {text}." for text, d in by_text.items()]


def robust_sentence(rows, detail=True):
    """How the verdicts on the paper's data in ``rows`` fare under the protocol variants: reversals, decisions lost or gained.

    Counted from the structured changes (:func:`dpstack.companion.verdicts.robust_changes`, the
    ``robust_changes`` column of :func:`judged`), claims true by construction left out as from the
    tallies; the variants named are those actually run for these claims. "" when none was run.
    ``detail=False`` gives the counts only (the landing page's summary).
    """
    part = _counted(rows[(rows["data"] == "paper")]) if len(rows) else rows
    if part.empty or "robust_changes" not in part:
        return ""
    changes = [ch for ch in part["robust_changes"] if isinstance(ch, dict) and ch["run"]]
    if not changes:
        return ""
    labels = sorted({lab for ch in changes for lab in ch["run"]}, key=variant_order)
    holds = [ch for ch in changes if len(ch["kinds"]["holds"]) == len(ch["run"])]
    n = {k: sum(bool(ch["kinds"][k]) for ch in changes) for k in CHANGES}

    def verdicts(k):
        return f"{k} verdict{'s' if k != 1 else ''}"

    text = (
        f"Under the protocol variants run ({', '.join(labels)}): {len(holds)} of {verdicts(len(changes))} hold "
        f"under every one; {n['reversed']} reverse under some"
    )
    if detail and n["reversed"]:
        rev = part[[isinstance(ch, dict) and bool(ch["kinds"]["reversed"]) for ch in part["robust_changes"]]]
        text += (
            " ("
            + "; ".join(
                f"{r['claim']} ({r['dataset']}, under {', '.join(r['robust_changes']['kinds']['reversed'])})"
                for _, r in rev.iterrows()
            )
            + ")"
        )
    text += (
        f"; {n['decided → inconclusive']} lose their decision under some (fewer repeats or less signal: power, "
        f"not a reversal); {n['inconclusive → decided']} of the inconclusive are decided under some"
    )
    not_run = len(part) - len(changes)
    if not_run:
        text += f"; {not_run} not run under any variant yet"
    return text + "."


def _link(page, prefix):
    return f"{prefix}{page}.html"


def _headlines(rows):
    """The paper-data claims a reader should see first: the contradicted, then the inconclusive ones."""
    keep = rows[(rows["data"] == "paper") & rows["verdict"].isin(("contradicted", WITHIN_RESOLUTION, "inconclusive"))]
    order = {"contradicted": 0, WITHIN_RESOLUTION: 1, "inconclusive": 2}
    return keep.assign(_o=keep["verdict"].map(order)).sort_values(["_o"], kind="stable").drop(columns="_o")


def findings_html(prefix=""):
    """The findings page's body: per paper the tally on its data, the headline findings, the other tallies."""
    j = judged()
    t = tally(j)
    out = []
    for paper in paper_names():
        rows = j[j["paper"] == paper]
        own = t[(t["paper"] == paper) & (t["data"] == "paper")]
        head = f"<h3>{html.escape(_label(paper))}</h3>"
        if own.empty:
            out.append(head + "<p>No claim judged on the paper's data here.</p>")
            continue
        r = own.iloc[0]
        line = (
            f"<p><b>On the paper's data: {r['supported']} of {r['total']} claims supported, "
            f"{r['contradicted']} contradicted, "
            + (f"{r[WITHIN_RESOLUTION]} reversed within resolution, " if r[WITHIN_RESOLUTION] else "")
            + f"{r['inconclusive']} inconclusive.</b>"
        )
        others = t[(t["paper"] == paper) & (t["data"] != "paper")]
        for _, o in others.iterrows():
            words = html.escape(_DATA_WORDS[o["data"]])
            line += (
                f" {words[0].upper() + words[1:]}: {o['supported']} of {o['total']} orderings hold, "
                f"{o['contradicted'] + o[WITHIN_RESOLUTION]} reversed"
                + (f" ({o[WITHIN_RESOLUTION]} within resolution)" if o[WITHIN_RESOLUTION] else "")
                + f", {o['inconclusive']} undecided."
            )
        not_run = rows[rows["verdict"] == "not run"]
        if len(not_run):
            line += f" {len(not_run)} claims not run (data absent here)."
        robust = robust_sentence(rows)
        if robust:
            line += " " + html.escape(robust)
        out.append(head + line + "</p>")
        items = "".join(
            f'<li><b>{html.escape(row["verdict"])}</b>: <a href="{_link(row["page"], prefix)}">'
            f"{html.escape(row['claim'])}</a> ({html.escape(row['dataset'])}): {html.escape(effect_text(row))}"
            + (f" (part: {html.escape(row['at'])})" if row["at"] and row["at"] not in row["claim"] else "")
            + f"; under the protocol variants: {html.escape(str(row['robust']))}"
            + "</li>"
            for _, row in _headlines(rows).iterrows()
        )
        if items:
            out.append(f"<p>Not supported on the paper's data:</p><ul>{items}</ul>")
    return _html("".join(out))


#: the colour of each verdict in the findings' figure (the book's colour table)
VERDICT_COLOURS = {o: COLORS[o] for o in OUTCOMES}

#: how many claims of a paper the findings' bullets name at most (the rest are summed up in one bullet)
MAX_BULLETS = 5


def _reasons():
    out = {}
    for paper in paper_names():
        out.update(getattr(paper_module(paper, "claims"), "REASONS", {}))
    return out


def _because(row, reasons):
    """The reason of a verdict: the registered one (with its page), else what the numbers say."""
    if row["id"] in reasons:
        text, page = reasons[row["id"]]
        return text, page
    verdict = row["verdict"]
    if verdict == WITHIN_RESOLUTION:
        return (
            f"the reversal is smaller than one score's sampling half-width on the test set (±{row['resolution']:g})",
            None,
        )
    if verdict == "inconclusive":
        return (
            "the interval at the level of the decision includes no difference: the repeats cannot separate the sides",
            None,
        )
    if verdict == "supported":
        return ("the per-repeat differences agree at the level of the paper's family of claims", None)
    return ("the per-repeat differences point the other way at the level of the paper's family of claims", None)


def findings_bullets(prefix=""):
    """Per paper, at most :data:`MAX_BULLETS` bullets "claim → verdict → because …" (HTML), the paper's data only.

    The claims that are not supported come first (contradicted, reversed within resolution,
    inconclusive), each with its effect and interval, the reason (registered in the paper's
    ``claims.REASONS`` with the page that shows it, else what the numbers say) and a link to
    the claim's page; the supported ones are summed up in the last bullet.
    """
    j = judged()
    reasons = _reasons()
    order = {"contradicted": 0, WITHIN_RESOLUTION: 1, "inconclusive": 2, "supported": 3}
    out = []
    for paper in paper_names():
        rows = _counted(j[(j["paper"] == paper) & (j["data"] == "paper")])
        if rows.empty:
            continue
        rows = rows.assign(_o=rows["verdict"].map(order)).sort_values("_o", kind="stable")
        shown = rows[rows["verdict"] != "supported"].head(MAX_BULLETS - 1)
        items = []
        for _, row in shown.iterrows():
            because, page = _because(row, reasons)
            link = f' (<a href="{_link(page.split("#")[0], prefix)}">why</a>)' if page else ""
            items.append(
                f'<li><a href="{_link(row["page"], prefix)}">{html.escape(row["claim"])}</a> '
                f"({html.escape(row['dataset'])}) → <b>{html.escape(row['verdict'])}</b>, "
                f"{html.escape(effect_text(row))} → because {html.escape(because)}{link}.</li>"
            )
        supported = rows[rows["verdict"] == "supported"]
        if len(supported):
            names = ", ".join(f"{r['claim']} ({r['dataset']})" for _, r in supported.iterrows())
            items.append(f"<li><b>{len(supported)} supported</b>: {html.escape(names)}.</li>")
        out.append(f"<h3>{html.escape(_label(paper))}</h3><ul>{''.join(items)}</ul>")
    return _html("".join(out))


def forest_figure(rows=None):
    """Every counted claim on the papers' data: its effect and interval in units of the data's resolution.

    One row per claim (grouped by paper), a dot at the effect and a bar over the interval the
    decision used, both divided by the claim's resolution margin (the sampling half-width of one
    score on its test set), so claims on AUC and on accuracy share one axis; the band marks ±1
    resolution. Colours are the verdicts (:data:`VERDICT_COLOURS`). Claims without a resolution
    (the location of a peak) are left out and listed in the returned figure's ``omitted``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    j = judged() if rows is None else rows
    part = _counted(j[j["data"] == "paper"])
    part = part[part["resolution"].notna() & part["effect"].notna()]
    omitted = [c for c in _counted(j[j["data"] == "paper"])["claim"] if c not in set(part["claim"])]
    limit = 12.0
    height = 0.5 * len(part) + 1.6
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, height))
    ax.axvspan(-1, 1, color="0.9", zorder=0, label="± one score's sampling half-width")
    ax.axvline(0, color="0.4", lw=0.8)
    labels = []
    for y, (_, r) in enumerate(part.iloc[::-1].iterrows()):
        res = r["resolution"]
        lo, hi, mid = (np.clip(v / res, -limit, limit) for v in (r["ci_low"], r["ci_high"], r["effect"]))
        colour = VERDICT_COLOURS[r["verdict"]]
        ax.plot([lo, hi], [y, y], color=colour, lw=2)
        ax.plot([mid], [y], "o", color=colour, ms=5)
        lines = textwrap.wrap(f"{r['paper']} {r['dataset']}: {r['claim']}", 32)
        labels.append("\n".join(lines[:2]) + ("…" if len(lines) > 2 else ""))
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlim(-limit, limit)
    ax.set_xlabel(f"effect / resolution (clipped at ±{limit:g})")
    for verdict, colour in VERDICT_COLOURS.items():
        ax.plot([], [], "o-", color=colour, label=verdict)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    ax.set_ylim(-0.7, len(labels) - 0.3)
    fig.omitted = omitted
    return fig


def _today(paper, prefix, suffix):
    """The paper's line on today's alternatives (its pages module's ``today_sentence``), or says there is none yet."""
    pages = paper_module(paper, "pages")
    if hasattr(pages, "today_sentence"):
        text = pages.today_sentence(link=f"{prefix}{pages.TODAY_PAGE}{suffix}")
        if text:
            return text
    return "Against today's alternatives: not compared yet."


def summary_markdown(prefix="../notebooks/", papers=None, suffix=".ipynb"):
    """The landing page's summary (Markdown): per paper the tally on its data and the contradicted claims.

    ``papers`` selects the papers (an overview page shows its own; default: every paper). ``suffix``:
    ``".ipynb"`` for a Markdown page (the book's build resolves it), ``".html"`` for a notebook's
    output, which the build does not resolve.
    """
    papers = paper_names() if papers is None else papers
    j = judged()
    t = tally(j)
    lines = []
    for paper in papers:
        own = t[(t["paper"] == paper) & (t["data"] == "paper")]
        if own.empty:
            continue
        r = own.iloc[0]
        rows = j[(j["paper"] == paper) & (j["data"] == "paper") & (j["verdict"] == "contradicted")]
        bad = "; ".join(
            f"[{row['claim']} ({row['dataset']})]({prefix}{row['page']}{suffix}): {effect_text(row)}"
            for _, row in rows.iterrows()
        )
        line = (
            f"- **{_label(paper)}**, on the paper's data: {r['supported']} of {r['total']} claims supported, "
            f"{r['contradicted']} contradicted, "
            + (f"{r[WITHIN_RESOLUTION]} reversed within resolution, " if r[WITHIN_RESOLUTION] else "")
            + f"{r['inconclusive']} inconclusive."
        )
        if bad:
            line += f" Contradicted: {bad}."
        robust = robust_sentence(j[j["paper"] == paper], detail=False)
        if robust:
            line += " " + robust
        line += " " + _today(paper, prefix, suffix)
        lines.append(line)
    return (
        "<!-- Generated by `python -m dpstack.companion summaries` from the committed results; do not edit. -->\n"
        + "\n".join(lines)
        + "\n"
    )


# --- what moved each claim ----------------------------------------------------------------------------

#: the rule's changes, applied one after another (each step adds one to the previous)
OLD_MARGINS = {"auc": 0.01, "accuracy": 0.02}
_OLD = dict(test="t", resolution=False)
STEPS = (
    ("new claims, old statistics", Rule(unit=None, holm_within=False, holm_across=False, margins=OLD_MARGINS, **_OLD)),
    (
        "+ the repeat as the unit",
        Rule(unit="repeat", holm_within=False, holm_across=False, margins=OLD_MARGINS, **_OLD),
    ),
    ("+ Holm inside each claim", Rule(unit="repeat", holm_within=True, holm_across=False, margins=OLD_MARGINS, **_OLD)),
    (
        "+ Holm over each paper's claims",
        Rule(unit="repeat", holm_within=True, holm_across=True, margins=OLD_MARGINS, **_OLD),
    ),
    ("+ margins derived from the test sets", Rule(**_OLD)),
    ("+ the sign-flip test (no normal tails)", Rule(resolution=False)),
    ("+ reversals within resolution apart (the rule)", RULE),
)


def rule_changes():
    """Per claim, its verdict after each step of :data:`STEPS` and the steps that changed it.

    Claims true by construction are left out, as from the tallies (they test nothing of the paper).
    """
    frames = _frames()
    outs = {}
    for name, rule in STEPS:
        j = judge(frames=frames, rule=rule)
        outs[name] = j.set_index("id")["verdict"]
    base = judge(frames=frames, rule=STEPS[-1][1]).set_index("id")
    table = pd.DataFrame(outs)
    table.insert(0, "data", base["data"])
    table.insert(0, "paper", base["paper"])
    table = table[table.iloc[:, -1].isin(OUTCOMES) & (base["by_construction"].fillna("") == "").to_numpy()]
    names = [n for n, _ in STEPS]
    table["moved by"] = [
        "; ".join(
            f"{names[k]} ({row[names[k - 1]]} → {row[names[k]]})"
            for k in range(1, len(names))
            if row[names[k]] != row[names[k - 1]]
        )
        or "–"
        for _, row in table.iterrows()
    ]
    return table.reset_index()


#: The tallies of the rule the book used before the present one (per-page claims, every kind of
#: data pooled), per paper. That rule's code is gone; its tallies were computed once, from the
#: committed results this rule judges, and are kept as data for the findings page's comparison.
PREVIOUS_RULE_TALLIES = Path(__file__).resolve().parent / "data" / "previous_rule_tallies.csv"


def _old_tally():
    """The previous rule's tallies, per paper, as "supported/contradicted/inconclusive"."""
    old = pd.read_csv(PREVIOUS_RULE_TALLIES)
    return {r["paper"]: f"{r['supported']}/{r['contradicted']}/{r['inconclusive']}" for r in old.to_dict("records")}


def rule_change_table():
    """Per paper and kind of data: the old tally, then the tally after each step (supported/contradicted/inconclusive)."""
    changes = rule_changes()
    names = [n for n, _ in STEPS]
    old = _old_tally()
    rows = []
    for (paper, data), part in changes.groupby(["paper", "data"], sort=False):
        row = {
            "paper": paper,
            "data": data,
            "previous rule (all data pooled)": old.get(paper, "–") if data == "paper" else "(in the row above)",
        }
        for n in names:
            row[n] = "/".join(str(int((part[n] == o).sum())) for o in OUTCOMES)
        rows.append(row)
    return pd.DataFrame(rows)


def summary_files():
    """{path: text} of the generated summaries: the landing page's and one per paper's overview."""
    out = {SUMMARY_PATH: summary_markdown()}
    for paper in paper_names():
        out[SUMMARY_PATH.with_name(f"findings_{paper.lower()}.md")] = summary_markdown(papers=(paper,))
    return out


def main(argv=None):
    """Write the generated summaries (``book/findings_summary.md``, ``book/findings_<paper>.md``) from the results."""
    for path, text in summary_files().items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")


def live_box_html(params):
    """The box atop a live page (HTML) for a page's :class:`~dpstack.companion.live.PageParameters`, or ``None``.

    It computes every grid of the page that differs from the committed profile, then says
    what differs (per grid), the wall time and ``n_jobs``, that the verdicts, tables and
    figures below come from this run, and that the committed verdict box and the prose do not
    apply; it adds the verdicts of this run when the page judges claims of the papers.
    """
    if not params.live:
        return None
    changed = [exp for exp in params.experiments if params.differences(exp)]
    t0 = time.perf_counter()
    for exp in changed:
        params.run(exp)
    wall = time.perf_counter() - t0
    several = len(params.experiments) > 1
    items = []
    for exp in changed:
        diff = "; ".join(
            f"protocol: {new} (committed: {old})"
            if k == "protocol"
            else f"{k} = {short_text(new)} (committed: {short_text(old)})"
            for k, (new, old) in params.differences(exp).items()
        )
        items.append(f"<li>{html.escape((exp + ': ') if several else '')}{html.escape(diff)}</li>")
    same = [exp for exp in params.experiments if exp not in changed]
    if same:
        items.append(f"<li>unchanged, the committed results: {html.escape(', '.join(same))}</li>")
    stored = all(params.run(exp).source == "committed" for exp in changed)
    if stored:  # a protocol variant read from the committed results: nothing was computed
        head = (
            f"<p><b>Another protocol</b>: {html.escape(params.protocol)}, read from the committed results of "
            "this variant (computed at the paper profile with the book's other results), not the papers' "
            "protocol. This page differs in:</p>"
        )
    else:
        head = "<p><b>Computed live</b>, not the committed results of the paper profile. This run differs in:</p>"
    parts = [
        head,
        "<ul>" + "".join(items) + "</ul>",
        f"<p>Wall time {wall:.1f} s with n_jobs = {params.n_jobs}.</p>",
        "<p>The tables, figures and verdict tables below are computed from this run (the verdict tables' "
        "robustness column excepted: it reads the stored runs of the protocol variants). The verdict box at "
        "the top of the page and the prose between the tables describe the committed paper-profile results "
        "and do not apply to this run.</p>",
    ]
    verdicts = ""
    if len(judged(params.page)):  # the page judges claims of the papers: judge them on this run
        box = verdict_box(params.page, live={exp: params.frame(exp) for exp in params.experiments})
        verdicts = getattr(box, "data", str(box)).replace(
            "Verdicts on this page", "Verdicts under this protocol" if stored else "Verdicts of this live run"
        )
    title = "Another protocol" if stored else "Computed live"
    return (
        f'<div class="admonition warning dpstack-live-box"><p class="admonition-title">{title}</p>'
        + "".join(parts)
        + "</div>"
        + verdicts
    )


def live_box(params):
    """Display :func:`live_box_html` in a notebook (nothing for the committed results)."""
    box = live_box_html(params)
    if box is not None:
        from IPython.display import HTML, display

        display(HTML(box))


#: The title of the box that opens a page whose summary is not a tally of verdicts (a result box).
RESULT_BOX_TITLE = "The bottom line"
_RESULT_BOX_ID = "dpstack-result-box-{}"


def result_box_html(lines, title=RESULT_BOX_TITLE):
    """The admonition that opens a page with its result: one paragraph per line of ``lines``.

    The lines are Markdown-free text (HTML-escaped here); the box carries the class
    ``dpstack-result-box``, as the verdict box carries ``dpstack-verdict-box``.
    """
    body = "".join(f"<p>{html.escape(str(line))}</p>" for line in lines)
    return (
        f'<div class="admonition note dpstack-result-box"><p class="admonition-title">{html.escape(title)}</p>'
        f"{body}</div>"
    )


def result_box(key, lines=None, title=RESULT_BOX_TITLE):
    """Open a page with its result box, then fill it once the page has computed its result.

    Called at the top of a page with ``lines=None``, it shows a box that says the result follows;
    called again with the page's ``lines`` once they are computed (with the page's own parameters,
    papermill's included), it replaces that box in place, so the executed page opens with its result
    before its parameter cell. ``key`` ties the two calls (one box per key and page).
    """
    from IPython.display import HTML, display, update_display

    if lines is None:
        display(
            HTML(result_box_html(["The result of this page is computed below and shown here when it is."], title)),
            display_id=_RESULT_BOX_ID.format(key),
        )
    else:
        update_display(HTML(result_box_html(lines, title)), display_id=_RESULT_BOX_ID.format(key))
