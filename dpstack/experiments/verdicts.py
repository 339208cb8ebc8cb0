"""One rule for every claim of the papers: an effect size, its 95 % interval and three outcomes.

A claim of a paper ("PST-F(W) beats PST-F(U)", "SimComb is about as good as Direct") is
tested on paired repeats: the same split and seeds for both methods, one difference per
repeat. The rule is the same for every page:

* **directional claims** (``better > worse``): the mean paired difference with a two-sided
  95 % t-interval. *Supported* when the interval lies above 0, *contradicted* when it lies
  below 0, *inconclusive* otherwise — never "agrees" or "disagrees" for a test without power.
  An inconclusive verdict says roughly how many repeats would decide it at the observed effect
  and spread (``repeats_to_decide``), or that no number would (no effect observed).
* **"≈" claims** (two methods are about as good): an equivalence test with a stated margin
  (two one-sided tests, TOST, at 5 %, i.e. the 90 % interval inside ``(−margin, margin)``).
  *Supported* when equivalent, *contradicted* when the 95 % interval lies entirely outside the
  margin, *inconclusive* otherwise.

References
----------
D. J. Schuirmann. A comparison of the two one-sided tests procedure and the power approach for
assessing the equivalence of average bioavailability. J. Pharmacokinetics and
Biopharmaceutics 15(6), 1987.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats

__all__ = [
    "Verdict",
    "OUTCOMES",
    "AUC_MARGIN",
    "noninferiority_verdict",
    "all_of",
    "any_of",
    "no_pairs",
    "claims_frame",
    "directional_verdict",
    "equivalence_verdict",
    "verdict_frame",
    "verdict_counts",
    "verdict_sentence",
    "counts_sentence",
    "check_claim",
    "claims_table",
]

#: the three outcomes, in the order tables list them
OUTCOMES = ("supported", "contradicted", "inconclusive")

#: the margin of every "≈" and "not worse" claim on a test AUC, fixed a priori (see the module doc)
AUC_MARGIN = 0.01


@dataclass(frozen=True)
class Verdict:
    """The outcome of one claim on paired differences (``better − worse`` or ``a − b``)."""

    claim: str
    kind: str  # "directional" or "equivalence"
    n: int
    effect: float  # mean paired difference
    ci_low: float  # 95 % interval of the mean difference
    ci_high: float
    p_value: float  # one-sided p for the claimed direction; TOST p for equivalence
    outcome: str  # one of OUTCOMES
    margin: float = float("nan")  # equivalence margin (nan for directional claims)
    repeats_to_decide: float = float("nan")  # for inconclusive verdicts; inf: no number would

    def to_dict(self):
        return asdict(self)


def _paired(diff, name):
    d = np.asarray(diff, dtype=float).ravel()
    if d.size == 0 or not np.all(np.isfinite(d)):
        raise ValueError(f"{name} must be a non-empty array of finite paired differences, got {diff!r}")
    return d


def _interval(d, level):
    n = d.size
    mean = float(d.mean())
    if n < 2:
        return mean, -math.inf, math.inf
    se = float(d.std(ddof=1) / math.sqrt(n))
    if se == 0.0:
        return mean, mean, mean
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * se
    return mean, mean - half, mean + half


def _repeats_needed(d, target):
    """Repeats at which the 95 % half-width would reach ``target`` at the observed spread."""
    if d.size < 2 or target <= 0:
        return math.inf
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        return float(d.size)
    return float(math.ceil((1.96 * sd / target) ** 2))


def directional_verdict(diff, claim="", alpha=0.05):
    """Verdict on the claim ``mean(diff) > 0`` from paired differences (``better − worse``).

    Parameters
    ----------
    diff : array-like of shape (n_repeats,)
        Paired differences, one per repeat.
    claim : str
        Text of the claim, carried into the result.
    alpha : float, default=0.05
        1 − the interval's level.

    Returns
    -------
    Verdict
        ``outcome`` is "supported" if the 95 % interval is above 0, "contradicted" if below,
        else "inconclusive" with ``repeats_to_decide`` (≈ repeats for the interval to exclude
        0 at the observed mean and spread; ``inf`` when the observed mean is 0).

    Examples
    --------
    >>> directional_verdict([0.02, 0.03, 0.01, 0.025, 0.02], "A beats B").outcome
    'supported'
    """
    d = _paired(diff, "diff")
    mean, lo, hi = _interval(d, 1 - alpha)
    if d.size >= 2 and d.std(ddof=1) > 0:
        p = float(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)
    else:
        p = 0.0 if mean > 0 else 1.0 if d.size >= 2 else float("nan")
    outcome = "supported" if lo > 0 else "contradicted" if hi < 0 else "inconclusive"
    need = _repeats_needed(d, abs(mean)) if outcome == "inconclusive" else float("nan")
    return Verdict(claim, "directional", int(d.size), mean, lo, hi, p, outcome, repeats_to_decide=need)


def equivalence_verdict(diff, margin, claim="", alpha=0.05):
    """Verdict on the claim ``|mean(diff)| < margin`` (two methods about as good), by TOST.

    Supported when the (1 − 2α) interval lies inside ``(−margin, margin)``; contradicted when
    the (1 − α) interval lies entirely outside it; inconclusive otherwise, with
    ``repeats_to_decide`` ≈ repeats for the interval to fit inside the margin at the observed
    mean and spread (``inf`` when the observed |mean| is already ≥ margin).
    """
    d = _paired(diff, "diff")
    if not (isinstance(margin, (int, float, np.floating)) and math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a finite number > 0, got {margin!r}")
    mean, lo90, hi90 = _interval(d, 1 - 2 * alpha)
    _, lo, hi = _interval(d, 1 - alpha)
    if d.size >= 2 and d.std(ddof=1) > 0:
        p = max(
            float(stats.ttest_1samp(d, -margin, alternative="greater").pvalue),
            float(stats.ttest_1samp(d, margin, alternative="less").pvalue),
        )
    else:
        p = 0.0 if abs(mean) < margin and d.size >= 2 else 1.0
    if -margin < lo90 and hi90 < margin:
        outcome = "supported"
    elif lo >= margin or hi <= -margin:
        outcome = "contradicted"
    else:
        outcome = "inconclusive"
    need = _repeats_needed(d, margin - abs(mean)) if outcome == "inconclusive" else float("nan")
    return Verdict(
        claim, "equivalence", int(d.size), mean, lo, hi, p, outcome, margin=float(margin), repeats_to_decide=need
    )


def noninferiority_verdict(diff, margin, claim="", alpha=0.05):
    """Verdict on the claim ``mean(diff) > −margin`` (``a`` not worse than ``b`` by ``margin`` or more).

    The directional rule on ``diff + margin``; the result reports the mean of ``diff`` itself
    and its 95 % interval, with ``kind="non-inferiority"`` and the margin.
    """
    if not (isinstance(margin, (int, float, np.floating)) and math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a finite number > 0, got {margin!r}")
    v = directional_verdict(_paired(diff, "diff") + margin, claim=claim, alpha=alpha)
    return replace(
        v,
        kind="non-inferiority",
        effect=v.effect - margin,
        ci_low=v.ci_low - margin,
        ci_high=v.ci_high - margin,
        margin=float(margin),
    )


def no_pairs(claim, kind="directional", margin=float("nan")):
    """The verdict of a claim with no paired observation: inconclusive, nothing measured."""
    nan = float("nan")
    return Verdict(claim, kind, 0, nan, nan, nan, nan, "inconclusive", margin=margin)


def _weakest(verdicts):
    rank = {"contradicted": 0, "inconclusive": 1, "supported": 2}
    return min(verdicts, key=lambda v: (rank[v.outcome], -v.p_value if math.isfinite(v.p_value) else -1.0))


def all_of(verdicts, claim):
    """One verdict for "the claim holds for every test": the weakest test, under ``claim``.

    Supported only if every test is supported, contradicted if any is contradicted,
    inconclusive otherwise (an intersection–union test: each test at its own level).
    """
    verdicts = list(verdicts)
    if not verdicts:
        raise ValueError("verdicts must not be empty")
    return replace(_weakest(verdicts), claim=claim)


def any_of(verdicts, claim):
    """One verdict for "the claim holds for some test": the strongest test, under ``claim``.

    Supported if any test is supported, contradicted if all are, inconclusive otherwise. The
    tests must have been run at level ``alpha / len(verdicts)`` (Bonferroni) for the union to
    keep the level ``alpha``.
    """
    verdicts = list(verdicts)
    if not verdicts:
        raise ValueError("verdicts must not be empty")
    rank = {"supported": 0, "inconclusive": 1, "contradicted": 2}
    best = min(verdicts, key=lambda v: (rank[v.outcome], v.p_value if math.isfinite(v.p_value) else 2.0))
    return replace(best, claim=claim)


def claims_frame(verdicts, context=None, unit="pairs"):
    """The verdicts as the pages show them: claim, verdict, effect and 95 % interval, pairs.

    Parameters
    ----------
    verdicts : list of Verdict
    context : list of dict, optional
        Columns put before the claim, one dict per verdict (e.g. the dataset and method).
    unit : str, default="pairs"
        What one paired observation is ("pairs", "splits"), used in the column names.

    Returns
    -------
    pandas.DataFrame
        Columns ``claim``, ``rule`` (directional, or the test and its margin), ``verdict`` (one
        of :data:`OUTCOMES`), ``mean difference``, ``95 % interval``, ``<unit>`` and
        ``<unit> to decide`` (for inconclusive verdicts: about how many would decide it).
    """
    verdicts = list(verdicts)
    context = list(context) if context is not None else [{} for _ in verdicts]
    if len(context) != len(verdicts):
        raise ValueError(f"context must have one entry per verdict ({len(verdicts)}), got {len(context)}")
    rows = []
    for v, extra in zip(verdicts, context):
        if v.outcome != "inconclusive":
            decide = "–"
        elif v.n == 0:
            decide = f"no {unit}"
        elif math.isinf(v.repeats_to_decide):
            decide = "never at this effect"
        else:
            decide = f"≈ {int(v.repeats_to_decide)}"
        rule = v.kind if v.kind == "directional" else f"{v.kind}, ±{v.margin:g}"
        rows.append(
            {
                **extra,
                "claim": v.claim,
                "rule": rule,
                "verdict": v.outcome,
                "mean difference": "–" if v.n == 0 else f"{v.effect:+.3f}",
                "95 % interval": "–" if v.n < 2 else f"{v.ci_low:+.3f} to {v.ci_high:+.3f}",
                unit: v.n,
                f"{unit} to decide": decide,
            }
        )
    return pd.DataFrame(rows)


def verdict_frame(verdicts):
    """The verdicts as a table, one row per claim."""
    return pd.DataFrame([v.to_dict() for v in verdicts], columns=list(Verdict.__dataclass_fields__))


def verdict_counts(verdicts):
    """How many claims are supported, contradicted and inconclusive (all three keys present).

    ``verdicts`` is a list of :class:`Verdict`, a table with a ``verdict`` column (as
    :func:`claims_frame` returns) or an ``outcome`` column (as :func:`verdict_frame` returns),
    or counts already made: a mapping from each of :data:`OUTCOMES` to a number (as
    :func:`dpstack.experiments.pages.claim_counts` adds them up over pages).
    """
    if isinstance(verdicts, Mapping):
        missing = [o for o in OUTCOMES if o not in verdicts]
        if missing:
            raise ValueError(f"verdicts given as counts must have the keys {OUTCOMES}, missing {missing}")
        return {o: int(verdicts[o]) for o in OUTCOMES}
    if isinstance(verdicts, pd.DataFrame):
        outcomes = list(verdicts["verdict" if "verdict" in verdicts else "outcome"])
    else:
        outcomes = [v.outcome for v in verdicts]
    return {o: outcomes.count(o) for o in OUTCOMES}


def counts_sentence(verdicts, what="claims"):
    """ "k of n claims supported, c contradicted, i inconclusive." from verdicts, a claims table or counts.

    ``verdicts`` is anything :func:`verdict_counts` accepts.
    """
    c = verdict_counts(verdicts)
    n = sum(c.values())
    return (
        f"{c['supported']} of {n} {what} supported, {c['contradicted']} contradicted, {c['inconclusive']} inconclusive."
    )


def verdict_sentence(v, digits=3):
    """One sentence stating a verdict from its numbers (for prose built from results)."""
    ci = f"{v.effect:+.{digits}f} (95 % CI {v.ci_low:+.{digits}f} to {v.ci_high:+.{digits}f}, {v.n} repeats)"
    if v.kind == "non-inferiority":
        head = f"not worse by {v.margin:g} or more" if v.outcome == "supported" else f"worse by {v.margin:g} or more"
    elif v.kind == "equivalence":
        head = f"within ±{v.margin:g}" if v.outcome == "supported" else f"not within ±{v.margin:g}"
    else:
        head = "in the claimed direction" if v.outcome == "supported" else "against the claim"
    if v.outcome == "inconclusive":
        more = (
            "no number of repeats would decide it at the observed effect"
            if math.isinf(v.repeats_to_decide)
            else f"about {int(v.repeats_to_decide)} repeats would decide it"
        )
        return f"{v.claim}: inconclusive, mean difference {ci}; {more}."
    return f"{v.claim}: {v.outcome}, mean difference {ci}, {head}."


# --- claims on a tidy table of repeats -----------------------------------------------------------


def check_claim(
    df,
    better,
    worse,
    by="method",
    value="auc",
    pair_on=("repeat",),
    where=None,
    alternative="greater",
    alpha=0.05,
    claim=None,
    kind="directional",
    margin=None,
):
    """The shared verdict on a claim comparing ``better`` with ``worse`` on paired rows of ``df``.

    Rows of ``df`` with ``df[by] == better`` and ``df[by] == worse`` are matched on
    ``pair_on`` (e.g. repeat and ε: the same data split) after filtering by ``where``
    (a dict column -> value or list of values); the claim is judged on the paired differences
    ``better − worse`` by the rule of :mod:`dpstack.experiments.verdicts`.

    Parameters
    ----------
    kind : {"directional", "equivalence", "non-inferiority"}, default="directional"
        "directional": ``better`` has the larger ``value``; "equivalence": the two are within
        ``margin`` of each other (TOST); "non-inferiority": ``better`` is not below ``worse`` by
        ``margin`` or more.
    margin : float, optional
        The margin of the equivalence and non-inferiority claims (required for them);
        :data:`~dpstack.experiments.verdicts.AUC_MARGIN` on the pages.
    alternative : {"greater", "less"}, default="greater"
        "less" judges the reversed ordering of a directional claim.
    alpha : float, default=0.05
        1 − the level of the interval.

    Returns
    -------
    Verdict
        Supported, contradicted or inconclusive, with the number of pairs, the mean paired
        difference, its 95 % interval and, when inconclusive, about how many pairs would decide
        it. No pairs at all gives an inconclusive verdict with nothing measured.
    """
    if kind not in ("directional", "equivalence", "non-inferiority"):
        raise ValueError(f"kind must be 'directional', 'equivalence' or 'non-inferiority', got {kind!r}")
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative must be 'greater' or 'less', got {alternative!r}")
    if kind != "directional" and margin is None:
        raise ValueError(f"margin is required for a {kind} claim")
    part = df
    for col, val in (where or {}).items():
        vals = val if isinstance(val, (list, tuple, set)) else [val]
        part = part[part[col].isin(vals)]
    keys = list(pair_on)
    a = part[part[by] == better].set_index(keys)[value]
    b = part[part[by] == worse].set_index(keys)[value]
    joined = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
    diff = (joined["a"] - joined["b"]).to_numpy()
    if alternative == "less":
        diff = -diff
    if claim is None:
        rel = ">" if alternative == "greater" else "<"
        claim = {
            "directional": f"{better} {rel} {worse}",
            "equivalence": f"{better} ≈ {worse}",
            "non-inferiority": f"{better} not worse than {worse}",
        }[kind]
    if diff.size == 0:
        return no_pairs(claim, kind, float("nan") if margin is None else float(margin))
    if kind == "equivalence":
        return equivalence_verdict(diff, margin, claim=claim, alpha=alpha)
    if kind == "non-inferiority":
        return noninferiority_verdict(diff, margin, claim=claim, alpha=alpha)
    return directional_verdict(diff, claim=claim, alpha=alpha)


def claims_table(results, context=None):
    """The verdicts of a page's claims as the pages show them (one style for every page).

    ``results`` is a list of :class:`~dpstack.experiments.verdicts.Verdict` (from
    :func:`check_claim`); ``context`` one dict of leading columns per verdict (e.g. the dataset).
    See :func:`dpstack.experiments.verdicts.claims_frame` for the columns.
    """
    return claims_frame(results, context, unit="pairs")
