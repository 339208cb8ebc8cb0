"""The privacy-audit chapter's pages: the stored tables they read and the bottom line each opens with.

Presentation only: the checks are :mod:`dpstack.audit`'s; this module loads the chapter's stored
tables (or computes them for other parameters) and turns each page's tables into the sentences of
the box atop it (:func:`dpstack.companion.show.result_box`). Nothing here runs a committed result's
cells, so a sentence can change without making a stored table stale.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpstack.audit import stored
from dpstack.audit.report import PROFILES
from dpstack.companion.plotting import style

__all__ = [
    "PAGES",
    "page_setup",
    "load_tables",
    "chapter_lines",
    "law_lines",
    "exact_lines",
    "mutant_lines",
    "adversary_lines",
    "estimator_lines",
]

#: The chapter's pages in reading order: (notebook stem, title). The first is the chapter's page.
PAGES = (
    ("audit", "Auditing the privacy claims"),
    ("audit_law", "The law of the noise"),
    ("audit_exact", "The exact check, the statistical lower bound and composition"),
    ("audit_mutants", "Every mutant is caught"),
    ("audit_adversary", "What an adversary learns from a fitted object"),
    ("audit_estimator", "One entry point: audit_estimator"),
    ("audit_diffprivlib", "diffprivlib's logistic regression, checked"),
)


def load_tables(profile, epsilon, seed):
    """``(tables, provenance, note)``: the chapter's stored tables for these parameters, else computed now.

    ``note`` is "" or the sentence that says the library changed since the tables were computed.
    """
    if profile != "smoke" and stored.has_tables(profile, epsilon, seed):
        tables, record, stale = stored.load_tables(profile, epsilon, seed)  # sha256 of every CSV checked
        provenance = {
            "computed": str(record["date"])[:10],
            "wall time (s)": record["wall_time_seconds"],
            "real fits per case": record["parameters"]["profile settings"]["n_fits"],
            "computed with the current code": not stale,
        }
    else:  # other parameters: compute the tables here
        tables = stored.compute_tables(profile, epsilon, seed)
        stale, provenance = [], {"computed": "now, in this run", "real fits per case": PROFILES[profile]["n_fits"]}
    note = ""
    if stale:
        note = (
            f"Note: {len(stale)} part{'s' if len(stale) > 1 else ''} of the library changed since these tables "
            "were computed; the appendix 'How this book is built' says how to recompute them."
        )
    return tables, provenance, note


def page_setup(profile, epsilon, seed, load=True):
    """The set-up of an audit page: the book's figure style and table display, then the chapter's tables.

    Returns ``(tables, provenance)`` of :func:`load_tables` (printing its note when the library changed
    since the tables were computed), or ``(None, None)`` with ``load=False``.
    """
    style()
    pd.set_option("display.precision", 4)
    pd.set_option("display.max_colwidth", 200)
    if not load:
        return None, None
    tables, provenance, note = load_tables(profile, epsilon, seed)  # stored, else computed here
    if note:
        print(note)
    return tables, provenance


def _all(flags):
    return bool(np.all(np.asarray(flags, dtype=bool)))


def law_lines(power):
    """The law page's bottom line, from the stored ``power`` table."""
    real = power[power["source"].str.startswith("real fits")]
    genuine = real[real["case"].str.startswith("genuine")]
    broken = real[~real["case"].str.startswith("genuine")]
    fits = int(real["fits"].max())
    ok = _all(genuine["rejection rate"] == 0) and _all(broken["rejection rate"] == 1)
    return [
        f"{'Passed' if ok else 'Not passed'}: the noise read back from {fits:,} real fits per case follows the "
        f"claimed law for the {len(genuine)} genuine mechanisms tested (smallest p-value "
        f"{genuine['p-value'].min():.2f}), and the test rejects all {len(broken)} noise errors planted in fit "
        f"(largest p-value {broken['p-value'].max():.1e}).",
        "The test trusts nothing the estimator says about its own noise: it recomputes the noise from the "
        "released weights and the data.",
    ]


def exact_lines(mechanisms, claimed):
    """The exact-check page's bottom line, from the stored ``mechanisms`` table at the claimed ε."""
    passed = mechanisms["verdict"] == "pass"
    worst = mechanisms.loc[mechanisms["exact max loss"].idxmax()]
    head = f"{int(passed.sum())} of {len(mechanisms)} mechanism configurations pass at ε = {claimed:g}"
    if not passed.all():
        return [head + ". Not passed: " + "; ".join(mechanisms.loc[~passed, "mechanism"]) + "."]
    return [
        f"{head}: the exact privacy loss stays below ε on every neighbour tried (largest "
        f"{worst['exact max loss']:.3f}, {worst['mechanism']}), the statistical lower bound ε_lo stays below ε "
        f"(largest {mechanisms['ε_lo'].max():.3f}), and the noise's scale matches the claim (ratios "
        f"{mechanisms['scale ratio'].min():.2f} to {mechanisms['scale ratio'].max():.2f}).",
    ]


def mutant_lines(mutants):
    """The mutant page's bottom line, from the stored ``mutants`` table."""
    caught = mutants["verdict"].str.startswith("caught")
    by = {}
    for verdict in mutants.loc[caught, "verdict"]:
        for check in verdict.split("(", 1)[1].rstrip(")").split(", "):
            by[check] = by.get(check, 0) + 1
    return [
        f"{int(caught.sum())} of {len(mutants)} mutants caught. Each is the real estimator with one bug; the "
        "checks that caught them: " + "; ".join(f"{check}: {n}" for check, n in by.items()) + ".",
    ]


def adversary_lines(adversary, losses):
    """The adversary page's bottom line, from the adversary table and the drawn privacy losses."""
    default = adversary[adversary["object"].str.startswith("default")]
    leaky = adversary[~adversary["object"].str.startswith("default")]
    within = default["verdict"].str.startswith("within")
    exceeds = leaky["verdict"].str.startswith("exceeds")
    inside = losses["loss"].abs() <= losses["epsilon"]
    rates = leaky["success rate"]
    rate = f"{rates.min():.2f}" if rates.min() == rates.max() else f"{rates.min():.2f} to {rates.max():.2f}"
    return [
        f"The object that carries only its release stays within ε's bound on the adversary's success in "
        f"{int(within.sum())} of {len(default)} cases; the object fitted with diagnostics=True exceeds it in "
        f"{int(exceeds.sum())} of {len(leaky)} (success rate {rate}), which is why only the release may be published.",
        (
            f"Every one of the {len(losses):,} privacy losses drawn lies within ±ε."
            if _all(inside)
            else f"{int((~inside).sum())} of the {len(losses):,} privacy losses drawn lie outside ±ε."
        ),
    ]


def estimator_lines(genuine, found, scale):
    """The audit_estimator page's bottom line: the genuine estimators, the mutants, and the power against c."""
    lines = [
        f"{int(genuine['passed'].sum())} of {len(genuine)} estimators pass every check that applies to them; "
        f"{int(found['caught'].sum())} of {len(found)} mutants are caught by the check planted for them."
    ]
    for profile, factor in (("power", 0.8), ("thorough", 0.9)):
        part = scale[(scale["profile"] == profile) & (scale["factor"] == factor)]
        if len(part):
            lines.append(
                f"Noise scaled by c = {factor:g}: the '{profile}' audit catches it in at least "
                f"{int(part['caught'].min())} of {int(part['runs'].max())} audits for every estimator, private "
                "tuning included."
            )
    return lines


def chapter_lines(tables, claimed):
    """The chapter page's bottom line, from the stored tables: mechanisms and mutants, then the pages."""
    mech, mut = tables["mechanisms"], tables["mutants"]
    passed, caught = int((mech["verdict"] == "pass").sum()), int(mut["verdict"].str.startswith("caught").sum())
    return [
        f"{'Every mechanism keeps its promise' if passed == len(mech) else 'Not every mechanism keeps its promise'}: "
        f"{passed} of {len(mech)} configurations pass the exact check, the law of the noise and the statistical "
        f"lower bound at ε = {claimed:g}.",
        f"{'Every' if caught == len(mut) else 'Not every'} deliberately broken variant is caught: {caught} of "
        f"{len(mut)} mutants, including those whose attributes tell the truth.",
        "Each page below opens with its own bottom line.",
    ]
