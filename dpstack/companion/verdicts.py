"""The claims of the three papers, one home per paper, judged by one rule.

Each paper has a module (:mod:`dpstack.companion.papers.pst.claims`, :mod:`dpstack.companion.papers.pptl.claims`,
:mod:`dpstack.companion.papers.mpl.claims`) holding its claims as :class:`Claim` records: the paper's words and
where they are printed, the encoding (kind, direction, the rows compared, the pairing, the x
range and whether the claim must hold at every x or at some x), the committed result it is
judged on and the status of the data (``"paper"``: the paper's own data set; ``"stand-in"``:
another data set run with the paper's protocol; ``"synthetic"``: a generated cohort standing
for private data). One fact of a paper (one sentence, on one data set) is one claim.

:func:`judge` applies the rule of :mod:`dpstack.companion.rule` (the repeat as the unit,
Holm inside a claim over its x, Holm over each paper's family of claims on one kind of data);
:func:`tally` counts the outcomes per paper and data status (only ``"paper"`` enters a paper's
tally); :func:`robust_column` re-judges the claims under the protocol variants of
:func:`dpstack.companion.variants.protocol_variants`.

Presentation only: nothing here is imported by the code that computes a committed result, so
editing a claim never makes a result stale.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import pandas as pd

from dpstack.companion import results
from dpstack.companion import rule as V
from dpstack.companion.registry import DATA_STATUS, paper_module, paper_names, papers
from dpstack.companion.variants import missing_variants, not_applicable, protocol_variants

__all__ = [
    "Rule",
    "RULE",
    "prepare_functions",
    "claims",
    "claim",
    "encoding",
    "describe",
    "judge_claim",
    "judge",
    "tally",
    "robust_column",
    "robust_changes",
    "variant_order",
    "CHANGES",
    "change",
    "robust_counts",
    "robust_table",
    "resolution",
    "committed_frames",
]


@dataclass(frozen=True)
class Rule:
    """The switches of the rule (all on: the book's rule; the others exist to show what each changes).

    ``unit="repeat"``: one difference per repeat; ``None``: every matched pair an observation.
    ``holm_within``/``holm_across``: Holm inside a claim / over a paper's family.
    ``margins="derived"``: the registry's margins; a number: that margin for every claim; a dict:
    a margin per score column (``{"auc": 0.01, "accuracy": 0.02}``, the previous rule's).
    ``test``: the test of a part (:data:`dpstack.companion.rule.TESTS`; ``"t"`` only for the
    rule's history). ``resolution``: a reversal within the data's resolution is reported as such
    (False: as a contradiction, as the previous rule did).
    """

    unit: str | None = "repeat"
    holm_within: bool = True
    holm_across: bool = True
    margins: str | float | dict = "derived"
    alpha: float = 0.05
    test: str = "sign-flip"
    resolution: bool = True


RULE = Rule()


@functools.cache
def _registry():
    out = {}
    for paper in papers():
        for c in paper_module(paper.NAME, "claims").CLAIMS:
            if c.id in out:
                raise ValueError(f"duplicate claim id {c.id!r}")
            out[c.id] = c
    return out


@functools.cache
def prepare_functions():
    """How a committed table becomes the frame a claim is judged on: name (a claim's ``prepare``) → function.

    ``""`` is the table itself; the papers' ``claims`` modules add theirs (``PREPARE``).
    """
    out = {"": lambda frame: frame}
    for paper in papers():
        out.update(getattr(paper_module(paper.NAME, "claims"), "PREPARE", {}))
    return out


def claims(paper=None, data=None, judged=None):
    """The registered claims (optionally of one paper, one data status, judged or not), in order."""
    out = list(_registry().values())
    if paper is not None:
        out = [c for c in out if c.paper == paper]
    if data is not None:
        out = [c for c in out if c.data == data]
    if judged is not None:
        out = [c for c in out if (c.kind != "not judged") == judged]
    return out


def claim(claim_id):
    """The claim with id ``claim_id``."""
    try:
        return _registry()[claim_id]
    except KeyError:
        raise KeyError(f"claim_id must be a registered claim id, got {claim_id!r}") from None


def _rows(selector):
    if isinstance(selector, (int, float)):
        return f"the printed {selector:g}"
    return ", ".join(
        f"{k}={'|'.join(f'{x:g}' if isinstance(x, float) else str(x) for x in v) if isinstance(v, tuple) else (f'{v:g}' if isinstance(v, float) else v)}"
        for k, v in selector
    )


def describe(part):
    """One line for a part: "label: [a rows] − [b rows]" (with "between" parts and the pairing keys)."""
    text = f"{part.label}: [{_rows(part.a)}] − [{_rows(part.b)}]"
    if part.c is not None:
        text = f"{part.label}: [{_rows(part.a)}] between [{_rows(part.c)}] and [{_rows(part.b)}]"
    if part.pair_on:
        text += f" paired on {', '.join(part.pair_on)} within the repeat"
    return text


def encoding(c):
    """A claim's encoding as plain data (what the tests pin): kind, quantifier, parts, margin, data."""
    return {
        "paper": c.paper,
        "data": c.data,
        "result": c.result,
        "kind": c.kind,
        "quantifier": c.quantifier,
        "value": c.value,
        "margin": None if c.margin is None else c.margin.value,
        "parts": [describe(p) for p in c.parts],
        "prepare": c.prepare,
        "by_construction": bool(c.by_construction),
    }


def _margin(c, rule):
    if c.margin is None:
        return None
    if isinstance(rule.margins, dict):
        return float(rule.margins[c.value])
    return c.margin.value if rule.margins == "derived" else float(rule.margins)


def judge_claim(c, frame, rule=RULE):
    """The verdict of claim ``c`` on ``frame`` (the committed table of ``c.result``), before Holm across claims."""
    if c.kind == "not judged":
        raise ValueError(f"claim {c.id} is not judged: {c.note}")
    f = prepare_functions()[c.prepare](frame)
    margin = _margin(c, rule)
    parts = [
        V.part_verdict(p.differences(f, c.value, unit=rule.unit), c.kind, margin, p.label, rule.alpha, rule.test)
        for p in c.parts
    ]
    return V.combine_parts(parts, c.label, c.quantifier, rule.alpha, adjust=rule.holm_within)


def committed_frames(names):
    """The committed paper-profile tables of ``names`` (name → frame); those not committed here are left out.

    A committed table that is stale or damaged raises (:func:`dpstack.companion.results.load`).
    """

    out = {}
    for name in names:
        try:
            frame = results.load(name, profile="paper")
        except results.MissingResultError:
            continue
        frame.attrs = {}  # the provenance is not needed here, and pandas copies it on every operation
        out[name] = frame
    return out


def judge(paper=None, frames=None, rule=RULE, claim_list=None):
    """Judge the claims (of ``paper``, or all) and return one row per claim.

    Parameters
    ----------
    paper : str, optional
    frames : dict, optional
        Result name → its table (default: the committed paper-profile tables,
        :func:`committed_frames`). A claim whose result is missing is "not run".
    rule : Rule, default=RULE
    claim_list : list of Claim, optional
        The claims to judge (default: :func:`claims` of ``paper``).

    Returns
    -------
    pandas.DataFrame
        Columns ``id``, ``paper``, ``data``, ``dataset``, ``page``, ``location``, ``words``,
        ``claim`` (as judged), ``kind``, ``verdict`` (an outcome, "not run" or "not judged"),
        ``effect``, ``ci_low``, ``ci_high``, ``at`` (the part the effect is of), ``p_raw``,
        ``p_adjusted``, ``n`` (repeats), ``margin``, ``resolution`` (:func:`resolution`),
        ``level`` (the level the raw p was judged at after Holm; the interval's), ``by_construction``
        (why a claim holds whatever the data; such claims are judged alone, outside Holm's family,
        and never counted by :func:`tally`) and
        ``verdict_obj`` (the :class:`~dpstack.companion.rule.Verdict`, with its parts) and
        ``claim_obj`` (the :class:`Claim`).
        Holm runs over each (paper, data status) family of judged claims.
    """
    cs = claims(paper) if claim_list is None else list(claim_list)
    if frames is None:
        frames = committed_frames(sorted({c.result for c in cs if c.kind != "not judged"}))
    rows, judged = [], {}
    for c in cs:
        if c.kind != "not judged" and c.result in frames:
            judged[c.id] = judge_claim(c, frames[c.result], rule)
    for fam in {(c.paper, c.data) for c in cs if c.id in judged}:
        # a claim true by construction is judged and shown, but it is no test of the paper: not in the family
        ids = [c.id for c in cs if (c.paper, c.data) == fam and c.id in judged and not c.by_construction]
        for i, v in zip(ids, V.adjust_family([judged[i] for i in ids], rule.alpha, adjust=rule.holm_across)):
            judged[i] = v
    nan = float("nan")
    for c in cs:
        v = judged.get(c.id)
        row = {
            "id": c.id,
            "paper": c.paper,
            "data": c.data,
            "dataset": c.dataset,
            "page": c.page,
            "location": c.location,
            "words": c.words,
            "claim": c.label,
            "kind": c.kind,
            "verdict": "not judged" if c.kind == "not judged" else ("not run" if v is None else _outcome(v, c, rule)),
            "effect": nan if v is None else v.effect,
            "ci_low": nan if v is None else v.ci_low,
            "ci_high": nan if v is None else v.ci_high,
            "at": "" if v is None else v.at,
            "p_raw": nan if v is None else v.p_value,
            "p_adjusted": nan if v is None else v.p_adjusted,
            "n": 0 if v is None else v.n,
            "margin": nan if c.margin is None else _margin(c, rule),
            "resolution": resolution(c),
            "level": nan if v is None else v.level,
            "note": c.note,
            "by_construction": c.by_construction,
            "verdict_obj": v,
            "claim_obj": c,
        }
        rows.append(row)
    return pd.DataFrame(rows)


def resolution(c):
    """The resolution margin of claim ``c``'s data: the sampling half-width of one score on its test set.

    The margin the paper's module derives for the claim's data set (``MARGINS``; NaN where it
    derives none). A reversal smaller than this is not a contradiction
    (:func:`dpstack.companion.rule.within_resolution`).
    """
    if c.value not in ("auc", "accuracy"):  # e.g. the location of a peak: no sampling half-width of one score
        return float("nan")
    margins = getattr(paper_module(c.paper, "claims"), "MARGINS", {})
    key = c.dataset.split("-like")[0]
    return float(margins[key].value) if key in margins else float("nan")


def _outcome(v, c, rule=RULE):
    if rule.resolution and V.within_resolution(v, resolution(c)):
        return V.WITHIN_RESOLUTION
    return v.outcome


def tally(judged):
    """Counts per (paper, data status): supported, contradicted, inconclusive, total (judged claims run).

    Claims true by construction (``by_construction``) are left out: they test nothing of the paper.
    """
    run = judged[judged["verdict"].isin(V.OUTCOMES)]
    if "by_construction" in run:
        run = run[run["by_construction"].fillna("") == ""]
    rows = []
    for (paper, data), part in run.groupby(["paper", "data"], sort=False):
        counts = {o: int((part["verdict"] == o).sum()) for o in V.OUTCOMES}
        rows.append({"paper": paper, "data": data, **counts, "total": int(len(part))})
    out = pd.DataFrame(rows, columns=["paper", "data", *V.OUTCOMES, "total"])
    order = {p: i for i, p in enumerate(paper_names())}
    return out.sort_values(
        ["paper", "data"], key=lambda s: s.map(order) if s.name == "paper" else s.map(DATA_STATUS.index)
    ).reset_index(drop=True)


def _variants_provider():
    return protocol_variants


def _notes_provider():
    def notes(result_name):
        out = {label: f"not computed yet: {label}" for label in missing_variants(result_name)}
        out.update({label: f"not applicable: {why}" for label, why in not_applicable(result_name).items()})
        return out

    return notes


#: the robust column of a claim judged on data that is not the paper's and has no protocol variant
NOT_RUN_FOR = {
    "synthetic": "not run (synthetic data, not in the paper's tally)",
    "stand-in": "not run (stand-in data, not in the paper's tally)",
}

NOT_MEASURED = "not measured"


def _under_protocols(judged, variants, rule, notes):
    """Per claim (index of ``judged``): [(label, verdict or NOT_MEASURED or "not applicable: why")], in label order."""
    cs = list(judged["claim_obj"])
    by_label, labels_of = {}, {}
    for name in sorted({c.result for c in cs}):
        try:
            found = variants(name) or {}
        except (KeyError, FileNotFoundError, ValueError, LookupError):
            found = {}
        labels_of[name] = list(found)
        for label, frame in found.items():
            frame = frame.copy(deep=False)
            frame.attrs = {}  # the provenance is not needed here, and pandas copies it on every operation
            by_label.setdefault(label, {})[name] = frame
    out = {i: [] for i in judged.index}
    for label, frames in by_label.items():
        again = judge(frames=frames, rule=rule, claim_list=[c for c in cs if c.result in frames])
        # a variant that lacks some rows of a claim does not judge it: "not measured", shown, never dropped
        complete = {
            cid: v is not None and all(p.n > 0 for p in (v.parts or (v,)))
            for cid, v in zip(again["id"], again["verdict_obj"])
        }
        now = dict(zip(again["id"], again["verdict"]))
        for i, c in zip(judged.index, cs):
            if c.result not in frames:
                continue
            v = now.get(c.id)
            ok = v in V.OUTCOMES and complete.get(c.id, False)
            out[i].append((label, v if ok else NOT_MEASURED))
    for i, c in zip(judged.index, cs):
        out[i] += list((notes(c.result) if notes is not None else {}).items())
        out[i].sort(key=lambda item: variant_order(item[0]))
    return out


def variant_order(label):
    """Refit first, then the row scales by their constant, then another seed, then the papers' repeat count."""
    if label.startswith("refit"):
        return (0, 0.0, label)
    m = re.match(r"rows ÷ ([0-9.]+)$", label)
    if m:
        return (1, float(m.group(1)), label)
    if label.startswith("another seed"):
        return (2, 0.0, label)
    return (3, 0.0, label)


def _direction(outcome):
    """+1 supported, −1 contradicted (within resolution too), 0 inconclusive."""
    return {"supported": 1, "contradicted": -1, V.WITHIN_RESOLUTION: -1}.get(outcome, 0)


#: How a verdict under a variant relates to the primary verdict (the robust column's categories).
CHANGES = ("holds", "reversed", "decided → inconclusive", "inconclusive → decided")


def change(primary, again):
    """The category of :data:`CHANGES` of verdict ``again`` (under a variant) against ``primary``.

    A verdict that keeps its direction holds (a contradiction within resolution and one beyond it
    are one direction); a reversal decides the other way; the last two are decisions lost or
    gained (power: fewer or more repeats, a weaker or stronger signal), not reversals.
    """
    a, b = _direction(primary), _direction(again)
    if a == b:
        return "holds"
    if a and b:
        return "reversed"
    return "decided → inconclusive" if a else "inconclusive → decided"


def robust_column(judged, variants=None, rule=RULE, notes=None, changes=None):
    """Per claim: does its verdict hold under each protocol variant?

    Parameters
    ----------
    judged : pandas.DataFrame
        The output of :func:`judge` (its claims are re-judged).
    variants : callable, optional
        ``variants(result_name) -> {protocol label: frame}`` (default:
        :func:`dpstack.companion.variants.protocol_variants`).
        Each variant is judged as a family of the claims it covers (Holm as for the primary
        results); a variant lacking some of a claim's rows does not judge that claim, and the
        column says so ("not measured: <label>").
    rule : Rule, default=RULE
    notes : callable, optional
        ``notes(result_name) -> {protocol label: "not applicable: why" or "not computed yet: …"}``
        (default: from :func:`dpstack.companion.variants.not_applicable` and
        :func:`~dpstack.companion.variants.missing_variants`), e.g. no refit where the paper
        tunes nothing, a registered variant not committed yet.

    Returns
    -------
    pandas.Series
        Indexed like ``judged``. Every variant of the claim's result is named, by its category of
        :func:`change`: "yes (<labels>)" when the verdict holds under each; otherwise
        "holds: <labels>", "reversed: <label> → <verdict>", "decided → inconclusive: <labels>",
        "inconclusive → <verdict>: <labels>" (those that apply, in that order); then
        "; not measured: <labels>", "; not computed yet: <labels>" and "; <label>: not applicable
        (<why>)" where they apply. "not run" when no variant exists for the claim's result (on
        synthetic or stand-in data the reason is added), "–" for claims not judged or not run on
        the primary results.

    ``changes`` (the output of :func:`robust_changes` for ``judged``) is used instead of judging
    the variants again.
    """
    if changes is None:
        changes = robust_changes(judged, variants, rule, notes)
    out = pd.Series("not run", index=judged.index, dtype=object)
    skip = ~judged["verdict"].isin(V.OUTCOMES)
    for i, data in zip(judged.index, judged["data"]):
        if data in NOT_RUN_FOR:
            out[i] = NOT_RUN_FOR[data]
    out[skip] = "–"
    for i in judged.index:
        ch = changes[i]
        if not isinstance(ch, dict):  # None (NaN once stored in a frame): not judged under any variant
            continue
        kinds, judged_here = ch["kinds"], ch["run"]
        if judged_here and len(kinds["holds"]) == len(judged_here):
            text = "yes (" + ", ".join(kinds["holds"]) + ")"
        elif judged_here:
            pieces = []
            if kinds["holds"]:
                pieces.append("holds: " + ", ".join(kinds["holds"]))
            if kinds["reversed"]:
                pieces.append("reversed: " + ", ".join(f"{lab} → {ch['verdicts'][lab]}" for lab in kinds["reversed"]))
            if kinds["decided → inconclusive"]:
                pieces.append("decided → inconclusive: " + ", ".join(kinds["decided → inconclusive"]))
            gained = kinds["inconclusive → decided"]
            for outcome in dict.fromkeys(ch["verdicts"][lab] for lab in gained):
                labs = [lab for lab in gained if ch["verdicts"][lab] == outcome]
                pieces.append(f"inconclusive → {outcome}: " + ", ".join(labs))
            text = "; ".join(pieces)
        else:
            text = "not run"  # followed by what was not measured, not computed or does not apply
        if ch["not measured"]:
            text += "; not measured: " + ", ".join(ch["not measured"])
        if ch["pending"]:
            text += "; not computed yet: " + ", ".join(ch["pending"])
        for lab, why in ch["not applicable"]:
            text += f"; {lab}: not applicable ({why})"
        out[i] = text
    return out


def robust_changes(judged, variants=None, rule=RULE, notes=None):
    """Per claim, the structured content of :func:`robust_column`: what each variant did to its verdict.

    Returns
    -------
    pandas.Series
        Indexed like ``judged``; ``None`` where the claim is not judged under any variant (not run on
        the primary results, no variant of its result, or a synthetic panel the variants do not
        cover), else a dict: ``run`` (the labels of the variants that judged it, in label order),
        ``verdicts`` (label → verdict), ``kinds`` (each category of :data:`CHANGES` → its labels),
        ``not measured``, ``pending`` (registered, not computed yet) and ``not applicable``
        ((label, why) pairs).
    """
    if variants is None:
        variants = _variants_provider()
        if notes is None:
            notes = _notes_provider()
    out = pd.Series(None, index=judged.index, dtype=object)
    if variants is None:
        return out
    skip = ~judged["verdict"].isin(V.OUTCOMES)
    found = _under_protocols(judged, variants, rule, notes)
    for i, primary, data in zip(judged.index, judged["verdict"], judged["data"]):
        if skip[i] or not found[i]:
            continue
        judged_here = [(lab, v) for lab, v in found[i] if v in V.OUTCOMES]
        if data in NOT_RUN_FOR and not judged_here:
            continue  # e.g. the synthetic panel of a figure whose variants cover the paper's data only
        out[i] = {
            "run": [lab for lab, _ in judged_here],
            "verdicts": dict(judged_here),
            "kinds": {k: [lab for lab, v in judged_here if change(primary, v) == k] for k in CHANGES},
            "not measured": [lab for lab, v in found[i] if v == NOT_MEASURED],
            "pending": [lab for lab, v in found[i] if v.startswith("not computed yet: ")],
            "not applicable": [(lab, v.split(": ", 1)[1]) for lab, v in found[i] if v.startswith("not applicable: ")],
        }
    return out


def robust_counts(judged=None, variants=None, rule=RULE, data="paper"):
    """Per paper and protocol variant: how many verdicts on ``data`` hold, reverse, lose or gain a decision.

    Only the variants actually run for some claim of the paper are listed (a row per paper and
    variant label); ``not measured`` counts claims whose result has the variant but not their rows.
    Claims true by construction are left out, as from the tallies.

    Returns
    -------
    pandas.DataFrame
        Columns ``paper``, ``protocol``, ``claims`` (judged under it), the categories of
        :data:`CHANGES` and ``not measured``.
    """
    if judged is None:
        judged = judge()
    if variants is None:
        variants = _variants_provider()
    part = judged[(judged["data"] == data) & judged["verdict"].isin(V.OUTCOMES)]
    if "by_construction" in part:  # shown, never counted
        part = part[part["by_construction"].fillna("") == ""]
    found = _under_protocols(part, variants, rule, None) if len(part) else {}
    counts = {}
    for i, paper, primary in zip(part.index, part["paper"], part["verdict"]):
        for lab, v in found.get(i, []):
            row = counts.setdefault((paper, lab), {k: 0 for k in (*CHANGES, "not measured")})
            if v in V.OUTCOMES:
                row[change(primary, v)] += 1
            elif v == NOT_MEASURED:
                row["not measured"] += 1
    rows = [
        {"paper": paper, "protocol": lab, "claims": sum(c[k] for k in CHANGES), **c}
        for (paper, lab), c in counts.items()
    ]
    order = {p: k for k, p in enumerate(paper_names())}
    out = pd.DataFrame(rows, columns=["paper", "protocol", "claims", *CHANGES, "not measured"])
    return out.sort_values(
        ["paper", "protocol"], key=lambda c: c.map(order) if c.name == "paper" else c.map(variant_order)
    ).reset_index(drop=True)


def robust_table(judged=None, variants=None, rule=RULE, notes=None, data="paper"):
    """Each judged claim on ``data`` (the paper's, by default): the verdict as judged and under each protocol.

    Returns
    -------
    pandas.DataFrame
        ``claim`` ("label (data set)"), ``page``, ``as in the book``, one column per protocol
        label in the order met (a verdict, "not measured", "not applicable: why", "–" when the
        claim's result has no such variant) and ``robust`` (:func:`robust_column`).
    """
    if judged is None:
        judged = judge()
    if variants is None:
        variants = _variants_provider()
        if notes is None:
            notes = _notes_provider()
    part = judged[(judged["data"] == data) & judged["verdict"].isin(V.OUTCOMES)]
    found = _under_protocols(part, variants, rule, notes) if variants is not None else {i: [] for i in part.index}
    labels = sorted(dict.fromkeys(lab for i in part.index for lab, _ in found[i]), key=variant_order)
    rows = []
    for i, r in part.iterrows():
        got = dict(found[i])
        rows.append(
            {
                "claim": f"{r['claim']} ({r['dataset']})",
                "page": r["page"],
                "as in the book": r["verdict"],
                **{lab: got.get(lab, "–") for lab in labels},
            }
        )
    out = pd.DataFrame(rows, columns=["claim", "page", "as in the book", *labels])
    out["robust"] = list(robust_column(part, variants, rule, notes)) if len(part) else []
    return out
