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
import time
from pathlib import Path

import pandas as pd

from dpstack.companion.live import short_text
from dpstack.companion.registry import DATA_STATUS, paper_names, papers
from dpstack.companion.rule import OUTCOMES, counts_sentence
from dpstack.companion.verdicts import (
    RULE,
    Rule,
    claims,
    committed_frames,
    judge,
    prepare_functions,
    robust_column,
    tally,
)


def _label(paper):
    """How a heading names ``paper`` ("PST (Yao et al.)")."""
    return next(p.LABEL for p in papers() if p.NAME == paper)


__all__ = [
    "live_box",
    "live_box_html",
    "judged",
    "verdict_table",
    "verdict_box",
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


def _judge_with_robust(claim_list, frames):
    j = judge(frames=frames, claim_list=claim_list)
    j["robust"] = robust_column(j)
    return j


@functools.cache
def _judged_committed(families=None):
    """The committed verdicts of every claim, or of the claims in ``families``."""
    mine = _family_claims(families)
    return _judge_with_robust(mine, _frames(mine))


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
        j = _judge_with_robust(mine, {**_frames(mine), **frames})
    else:
        j = _judged_committed(families).copy()
    return j if page is None else j[j["page"] == page].reset_index(drop=True)


def _num(x, digits=3):
    return f"{x:+.{digits}f}"


def effect_text(row, digits=3):
    """ "+0.012 [−0.003, +0.027]" (the mean per-repeat difference and its 95 % interval), "–" if not run."""
    if row["verdict"] not in OUTCOMES or not math.isfinite(row["effect"]):
        return "–"
    if not (math.isfinite(row["ci_low"]) and math.isfinite(row["ci_high"])):
        return _num(row["effect"], digits)
    return f"{_num(row['effect'], digits)} [{_num(row['ci_low'], digits)}, {_num(row['ci_high'], digits)}]".replace(
        "-", "−"
    )


def _p(x):
    if not math.isfinite(x):
        return "–"
    return "&lt; 0.0001" if x < 1e-4 else f"{x:.4f}"


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
        + f"; data: {html.escape(_DATA_WORDS[c.data])}; result: <code>{html.escape(c.result)}</code>.",
    ]
    if c.margin is not None:
        items.append(
            f"<b>Margin</b> ±{c.margin.value:g} {html.escape(c.margin.metric)}: {html.escape(c.margin.derivation)}."
        )
    if c.note:
        items.append(f"<b>Note</b>: {html.escape(c.note)}")
    if v is not None:
        items.append(
            f"<b>Repeats</b>: {v.n}; <b>p</b> raw (inside the claim) {_p(row['p_raw'])}, Holm over the paper's "
            f"claims {_p(row['p_adjusted'])}; effect shown: {html.escape(row['at'] or '–')}."
        )
        if row["verdict"] == "inconclusive":
            need = row["repeats_to_decide"]
            items.append(
                "<b>Repeats to decide</b>: "
                + (
                    "no number at the observed effect"
                    if not math.isfinite(need)
                    else f"about {int(need)} at 80 % power, as {html.escape(row['decides'] or 'decided')}"
                )
                + "."
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
        body.append(
            f'<tr class="dpstack-verdict-{verdict.replace(" ", "-")}"><td>'
            f"<details><summary>{html.escape(row['claim'])}"
            + (f" <small>({html.escape(row['dataset'])})</small>" if row["dataset"] else "")
            + f"</summary>{_detail(row)}</details></td>"
            f"<td>{html.escape(verdict)}</td><td>{html.escape(effect_text(row))}</td>"
            f"<td>{html.escape(str(row['robust']))}</td></tr>"
        )
    run = rows[rows["verdict"].isin(OUTCOMES)]
    counts = f'<p class="dpstack-verdict-counts"><em>{counts_sentence(run)}</em></p>' if len(run) else ""
    text = (
        '<table class="dpstack-verdicts"><thead><tr><th>claim (click for the detail)</th><th>verdict</th>'
        "<th>effect [95 % CI]</th><th>robust</th></tr></thead><tbody>" + "".join(body) + "</tbody></table>" + counts
    )
    return _html(text)


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


def _counts_text(part):
    c = {o: int((part["verdict"] == o).sum()) for o in OUTCOMES}
    n = sum(c.values())
    return f"{c['supported']} of {n} supported, {c['contradicted']} contradicted, {c['inconclusive']} inconclusive"


def verdict_box(page, live=None):
    """The admonition that opens an experiment page: its claims' tally per kind of data, the contradicted named.

    ``live`` as for :func:`verdict_table`.
    """
    rows = judged(page, live_frames(live))
    parts = []
    for data in DATA_STATUS:
        part = rows[(rows["data"] == data) & rows["verdict"].isin(OUTCOMES)]
        if part.empty:
            continue
        decided = part[part["verdict"] == "contradicted"]
        line = f"<p><b>{_counts_text(part)}</b> {html.escape(_DATA_WORDS[data])}."
        if len(decided):
            line += (
                " Contradicted: "
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
    if not parts:
        parts.append("<p>No claim of the papers is judged on this page.</p>")
    robust = rows[rows["verdict"].isin(OUTCOMES)]["robust"]
    if len(robust) and robust.str.startswith("not run").all():
        parts.append("<p>Robustness to the protocol variants: not run.</p>")
    if len(robust):
        parts.append(
            "<p>Each claim is judged on one paired difference per repeat, with Holm's correction inside the claim "
            "and over the paper's claims; the table below gives the effect (mean difference, 95 % interval) and, "
            "on a click, the detail; its robust column says whether the verdict holds under each protocol "
            "variant (refit after tuning, the public row scale, the data redrawn).</p>"
        )
        parts += [f"<p>{html.escape(t)}</p>" for t in draw_sentences(rows)]
    return _html(
        '<div class="admonition note dpstack-verdict-box"><p class="admonition-title">Verdicts on this page</p>'
        + "".join(parts)
        + "</div>"
    )


def draw_sentences(rows):
    """One sentence per result judged in ``rows``: what a repeat draws anew and what stays one draw.

    From :func:`dpstack.companion.variants.draw_sentence` (nothing when that module is absent).
    """
    try:
        from dpstack.companion.variants import draw_sentence
    except ImportError:
        return []
    judged = rows[rows["verdict"].isin(OUTCOMES)]
    by_text = {}
    for c, dataset in zip(judged["claim_obj"], judged["dataset"]):
        text = draw_sentence(c.result, dataset)
        if text:
            by_text.setdefault(text, []).append(dataset)
    return [f"The data ({', '.join(dict.fromkeys(d))}): {text}." for text, d in by_text.items()]


def robust_sentence(rows, detail=True):
    """How many verdicts on the paper's data in ``rows`` hold under every protocol variant, and which change.

    From the robust column (:func:`dpstack.companion.verdicts.robust_column`): "" when no variant was run.
    ``detail=False`` gives the counts only (the landing page's summary).
    """
    part = rows[(rows["data"] == "paper") & rows["verdict"].isin(OUTCOMES)]
    if part.empty:
        return ""
    robust = part["robust"].astype(str)
    holds, changes = robust.str.startswith("yes ("), robust.str.startswith("no: ")
    run = holds | changes
    if not run.any():
        return ""
    text = (
        "Under the protocol variants (refit after tuning, the public row scale, the data redrawn): "
        f"{int(holds.sum())} of {int(run.sum())} verdicts hold under every variant run"
    )
    if changes.any():
        text += f", {int(changes.sum())} change under some"
        if detail:
            text += (
                " ("
                + "; ".join(
                    f"{r['claim']} ({r['dataset']}), {r['verdict']}: {r['robust'][4:].split('; holds')[0]}"
                    for _, r in part[changes].iterrows()
                )
                + ")"
            )
    if (~run).any():
        text += f"; {int((~run).sum())} not run under any variant yet"
    return text + "."


def _link(page, prefix):
    return f"{prefix}{page}.html"


def _headlines(rows):
    """The paper-data claims a reader should see first: the contradicted, then the inconclusive ones."""
    keep = rows[(rows["data"] == "paper") & rows["verdict"].isin(("contradicted", "inconclusive"))]
    order = {"contradicted": 0, "inconclusive": 1}
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
            f"{r['contradicted']} contradicted, {r['inconclusive']} inconclusive.</b>"
        )
        others = t[(t["paper"] == paper) & (t["data"] != "paper")]
        for _, o in others.iterrows():
            words = html.escape(_DATA_WORDS[o["data"]])
            line += (
                f" {words[0].upper() + words[1:]}: {o['supported']} of {o['total']} orderings hold, "
                f"{o['contradicted']} reversed, {o['inconclusive']} undecided."
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
            + (
                f"; about {int(row['repeats_to_decide'])} repeats would decide it"
                if row["verdict"] == "inconclusive" and math.isfinite(row["repeats_to_decide"])
                else ""
            )
            + f"; under the protocol variants: {html.escape(str(row['robust']))}"
            + "</li>"
            for _, row in _headlines(rows).iterrows()
        )
        if items:
            out.append(f"<p>Not supported on the paper's data:</p><ul>{items}</ul>")
    return _html("".join(out))


def summary_markdown(prefix="../notebooks/", papers=None):
    """The landing page's summary (Markdown): per paper the tally on its data and the contradicted claims.

    ``papers`` selects the papers (an overview page shows its own; default: every paper).
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
            f"[{row['claim']} ({row['dataset']})]({prefix}{row['page']}.ipynb): {effect_text(row)}"
            for _, row in rows.iterrows()
        )
        line = (
            f"- **{_label(paper)}**, on the paper's data: {r['supported']} of {r['total']} claims supported, "
            f"{r['contradicted']} contradicted, {r['inconclusive']} inconclusive."
        )
        if bad:
            line += f" Contradicted: {bad}."
        robust = robust_sentence(j[j["paper"] == paper], detail=False)
        if robust:
            line += " " + robust
        lines.append(line)
    return (
        "<!-- Generated by `python -m dpstack.companion summaries` from the committed results; do not edit. -->\n"
        + "\n".join(lines)
        + "\n"
    )


# --- what moved each claim ----------------------------------------------------------------------------

#: the rule's changes, applied one after another (each step adds one to the previous)
OLD_MARGINS = {"auc": 0.01, "accuracy": 0.02}
STEPS = (
    ("new claims, old statistics", Rule(unit=None, holm_within=False, holm_across=False, margins=OLD_MARGINS)),
    ("+ the repeat as the unit", Rule(unit="repeat", holm_within=False, holm_across=False, margins=OLD_MARGINS)),
    ("+ Holm inside each claim", Rule(unit="repeat", holm_within=True, holm_across=False, margins=OLD_MARGINS)),
    ("+ Holm over each paper's claims", Rule(unit="repeat", holm_within=True, holm_across=True, margins=OLD_MARGINS)),
    ("+ margins derived from the test sets (the rule)", RULE),
)


def rule_changes():
    """Per claim, its verdict after each step of :data:`STEPS` and the steps that changed it."""
    frames = _frames()
    outs = {}
    for name, rule in STEPS:
        j = judge(frames=frames, rule=rule)
        outs[name] = j.set_index("id")["verdict"]
    base = judge(frames=frames, rule=STEPS[-1][1]).set_index("id")
    table = pd.DataFrame(outs)
    table.insert(0, "data", base["data"])
    table.insert(0, "paper", base["paper"])
    table = table[table.iloc[:, -1].isin(OUTCOMES)]
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
