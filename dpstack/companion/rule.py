"""One rule for every claim of the papers: effect, 95 % interval, three outcomes, multiplicity control.

The unit of replication
-----------------------
**The repeat is the unit.** A repeat draws one split of the training data (and all the noise);
the methods compared in a claim are fitted on that same split. The several (ε, branch, α, …)
rows of one repeat share the split and so are *not* independent observations. Every claim is
therefore judged on **one paired difference per repeat**: the rows of the two sides are
matched within the repeat on the claim's pairing keys (e.g. ε or the branch), their
differences are averaged within the repeat, and the test runs on those per-repeat means
(:func:`repeat_differences`). A linear mixed model (repeat as a random effect, the pairing key
as fixed) would use the same information, but with 10-30 repeats its variance components are
poorly estimated and its degrees of freedom need an approximation (Kenward–Roger); the
per-repeat mean gives the exact t-test on the repeats, needs no distributional assumption on
the within-repeat correlation and is what a reader can recompute from the table. An effect
whose sign may change along an axis (ε, the branch, K) is never averaged along that axis: the
claim is judged at each x separately (see "at every x" below).

Outcomes of one comparison (a *part* of a claim)
------------------------------------------------
* **directional** (``a > b``): the mean per-repeat difference ``a − b`` with its two-sided 95 %
  t-interval; *supported* when the interval lies above 0, *contradicted* when below 0,
  *inconclusive* otherwise. Its p is the two-sided t-test p (pointing in the effect's sign).
* **non-inferiority** (``a`` not worse than ``b`` by the margin or more): the directional rule on
  ``a − b + margin``.
* **equivalence** (``a ≈ b``): two one-sided tests (TOST) at 5 %, i.e. the 90 % interval inside
  ``(−margin, margin)``: *supported*; *contradicted* when the 95 % interval lies entirely outside
  the margin (two-sided test against the nearer margin); *inconclusive* otherwise. Its p is the
  TOST p when the observed |mean| is below the margin, else the p against the nearer margin.

Claims with several parts
-------------------------
A claim "at every x" (every ε, every branch, every method) is judged per x, and the parts are
adjusted for multiplicity **inside the claim** by Holm's step-down method: each part gets its
Holm-adjusted p and its own verdict. The claim is *supported* when every part is supported
(intersection–union: its p is the largest adjusted p), *contradicted* when some part is
contradicted (its p is the smallest adjusted p among the contradicting parts), inconclusive
otherwise. A claim "at some x" (e.g. "PST-S *can* be inferior to PLR") is supported when some
part is supported after Holm, contradicted when every part is contradicted.

Multiplicity across a paper's claims
------------------------------------
Each paper's claims on one kind of data (paper data, a stand-in, a synthetic cohort) form one
family; the claims' p-values are adjusted by **Holm's method** over the family (strong control
of the family-wise error rate at 5 %, no assumption on the dependence between claims). A
claim is decided (supported or contradicted, in the direction its p points) only when its
Holm-adjusted p is below 0.05. Both the raw and the adjusted p are kept and shown.

Margins
-------
The margins of the "≈" and "not worse" claims are derived per metric and data set from the
design, never from the results (:func:`auc_margin`, :func:`accuracy_margin`): the half-width of the
95 % sampling interval of **one** score on that data set's test set (Hanley–McNeil for an AUC,
binomial for an accuracy) at a nominal level stated with the margin, rounded **up** to the
precision the paper prints the metric with. A difference smaller than that cannot be resolved
by the paper's own test set, so the paper's "≈", "not sensitive" or "nearly as well" cannot
mean less. The registry (:mod:`dpstack.companion.verdicts`) writes each margin down with its derivation.

Repeats to decide
-----------------
An inconclusive verdict says how many repeats would decide it (:func:`repeats_to_decide`): the
smallest number of repeats at which the test of that part has 80 % power at 5 % (noncentral t),
if the true mean difference and spread were those observed, and which way it would decide
(supported or contradicted). ``inf`` when no number would (observed effect exactly at the
boundary).

What the intervals leave out
----------------------------
The data draw (which rows form the data set) and the test set are fixed across repeats; a repeat
redraws the fit/validation split and every noise draw. The intervals thus cover the variation
due to the split and the noise, not the variation due to sampling another data set or test
set from the population.

References
----------
S. Holm. A simple sequentially rejective multiple test procedure. Scand. J. Statistics 6(2), 1979.

D. J. Schuirmann. A comparison of the two one-sided tests procedure and the power approach for
assessing the equivalence of average bioavailability. J. Pharmacokinetics and
Biopharmaceutics 15(6), 1987.

J. A. Hanley and B. J. McNeil. The meaning and use of the area under a receiver operating
characteristic (ROC) curve. Radiology 143(1), 1982.

R. L. Berger and J. C. Hsu. Bioequivalence trials, intersection–union tests and equivalence
confidence sets. Statistical Science 11(4), 1996.
"""

from __future__ import annotations

import math
import warnings
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
    "no_pairs",
    "directional_verdict",
    "equivalence_verdict",
    "verdict_frame",
    "verdict_counts",
    "verdict_sentence",
    "counts_sentence",
    "POWER",
    "repeats_to_decide",
    "holm",
    "repeat_differences",
    "part_verdict",
    "combine_parts",
    "adjust_family",
    "auc_margin",
    "accuracy_margin",
]

#: the three outcomes, in the order tables list them
OUTCOMES = ("supported", "contradicted", "inconclusive")

#: the margin of every "≈" and "not worse" claim on a test AUC, fixed a priori (see the module doc)
AUC_MARGIN = 0.01


@dataclass(frozen=True)
class Verdict:
    """The outcome of one claim (or one part of a claim) on per-repeat differences (``a − b``).

    ``p_value`` is the raw p of the decision the data point to (``points``: "supported" or
    "contradicted"; see the module doc), ``p_adjusted`` the Holm-adjusted p the outcome was
    decided on (equal to ``p_value`` for a single test). ``repeats_to_decide`` and ``decides``:
    for an inconclusive verdict, the repeats at which the test would have 80 % power at the
    observed mean and spread, and the outcome it would then reach. ``parts`` holds the verdicts
    of a claim's parts (each at its Holm-adjusted p inside the claim), ``at`` the label of the
    part whose effect the claim reports.
    """

    claim: str
    kind: str  # "directional", "equivalence" or "non-inferiority"
    n: int
    effect: float  # mean per-repeat difference
    ci_low: float  # 95 % interval of the mean difference
    ci_high: float
    p_value: float  # raw p of the decision the data point to
    outcome: str  # one of OUTCOMES
    margin: float = float("nan")  # equivalence / non-inferiority margin (nan for directional claims)
    repeats_to_decide: float = float("nan")  # for inconclusive verdicts; inf: no number would
    p_adjusted: float = float("nan")
    points: str = ""  # "supported" or "contradicted": where p_value points
    decides: str = ""  # for inconclusive verdicts: the outcome repeats_to_decide would reach
    at: str = ""
    parts: tuple = ()

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


def _ttest_1samp(d, popmean, alternative="two-sided"):
    """scipy's one-sample t-test without its "precision loss" warning.

    The warning fires when the differences are nearly identical (e.g. two methods with equal AUCs in
    all but one repeat); the statistic is then large and its p near 0 or 1, which is the right
    reading, and the warning would only reach the reader as noise on the page.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Precision loss occurred", category=RuntimeWarning)
        return stats.ttest_1samp(d, popmean, alternative=alternative)


def _two_sided_p(d, null=0.0):
    """Two-sided one-sample t-test p of ``mean(d) == null`` (0 or 1 when the spread is 0)."""
    if d.size < 2:
        return 1.0
    if d.std(ddof=1) == 0.0:
        return 0.0 if d.mean() != null else 1.0
    return float(_ttest_1samp(d, null).pvalue)


def _power_two_sided(delta, n, alpha):
    """Power of the two-sided one-sample t-test at standardized effect ``delta`` with ``n`` repeats."""
    df = n - 1
    crit = float(stats.t.ppf(1 - alpha / 2, df))
    nc = delta * math.sqrt(n)
    return float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))


def _power_tost(gap_low, gap_high, n, alpha):
    """Power of TOST (both one-sided tests at ``alpha``) at standardized distances to the two margins."""
    df = n - 1
    crit = float(stats.t.ppf(1 - alpha, df))
    miss = stats.nct.cdf(crit, df, gap_low * math.sqrt(n)) + stats.nct.cdf(crit, df, gap_high * math.sqrt(n))
    return float(max(0.0, 1.0 - miss))


def _smallest_n(power, target, n_max):
    if power(n_max) < target:
        return math.inf
    lo, hi = 2, n_max
    if power(lo) >= target:
        return float(lo)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if power(mid) < target else (lo, mid)
    return float(hi)


#: the power at which :func:`repeats_to_decide` counts repeats
POWER = 0.80


def repeats_to_decide(diff, kind="directional", margin=None, alpha=0.05, power=POWER, n_max=100_000):
    """Repeats at which a part's test would have ``power`` at the observed mean and spread.

    Parameters
    ----------
    diff : array-like
        The per-repeat differences observed.
    kind : {"directional", "non-inferiority", "equivalence"}
    margin : float, optional
        The margin (required unless ``kind="directional"``).
    alpha : float, default=0.05
        The level of the test (two-sided; TOST: each one-sided test).
    power : float, default=0.8
    n_max : int, default=100000
        Larger counts are reported as ``inf``.

    Returns
    -------
    (float, str)
        The number of repeats (``inf``: none up to ``n_max``, e.g. no effect observed) and the
        outcome the test would then reach ("supported" or "contradicted").

    Examples
    --------
    >>> n, way = repeats_to_decide([0.01, 0.03, -0.01, 0.02, 0.0])
    >>> int(n), way
    (22, 'supported')
    """
    d = _paired(diff, "diff")
    if d.size < 2:
        return math.inf, ""
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if kind == "non-inferiority":
        mean += margin
    if kind in ("directional", "non-inferiority"):
        way = "supported" if mean > 0 else "contradicted"
        if sd == 0.0:
            return (float(d.size) if mean != 0 else math.inf), way
        delta = abs(mean) / sd
        if delta == 0.0:
            return math.inf, ""
        return _smallest_n(lambda n: _power_two_sided(delta, n, alpha), power, n_max), way
    if abs(mean) < margin:
        if sd == 0.0:
            return float(d.size), "supported"
        lo, hi = (mean + margin) / sd, (margin - mean) / sd
        return _smallest_n(lambda n: _power_tost(lo, hi, n, alpha), power, n_max), "supported"
    gap = (abs(mean) - margin) / sd if sd > 0 else math.inf
    if gap == 0.0:
        return math.inf, ""
    if math.isinf(gap):
        return float(d.size), "contradicted"
    return _smallest_n(lambda n: _power_two_sided(gap, n, alpha), power, n_max), "contradicted"


def _undecided(d, kind, margin, alpha):
    n, way = repeats_to_decide(d, kind, margin, alpha)
    return n, way


def directional_verdict(diff, claim="", alpha=0.05):
    """Verdict on the claim ``mean(diff) > 0`` from per-repeat differences (``a − b``).

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
        ``outcome`` is "supported" if the (1 − α) interval is above 0, "contradicted" if below,
        else "inconclusive" with ``repeats_to_decide`` (repeats for 80 % power at the observed
        mean and spread, :func:`repeats_to_decide`) and ``decides``.

    Examples
    --------
    >>> directional_verdict([0.02, 0.03, 0.01, 0.025, 0.02], "A beats B").outcome
    'supported'
    """
    d = _paired(diff, "diff")
    mean, lo, hi = _interval(d, 1 - alpha)
    p = _two_sided_p(d)
    points = "supported" if mean > 0 else "contradicted"
    outcome = "supported" if lo > 0 else "contradicted" if hi < 0 else "inconclusive"
    need, way = _undecided(d, "directional", None, alpha) if outcome == "inconclusive" else (float("nan"), "")
    return Verdict(
        claim,
        "directional",
        int(d.size),
        mean,
        lo,
        hi,
        p,
        outcome,
        repeats_to_decide=need,
        p_adjusted=p,
        points=points,
        decides=way,
    )


def _check_margin(margin):
    if not (isinstance(margin, (int, float, np.floating)) and math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a finite number > 0, got {margin!r}")


def equivalence_verdict(diff, margin, claim="", alpha=0.05):
    """Verdict on the claim ``|mean(diff)| < margin`` (two methods about as good), by TOST.

    Supported when the (1 − 2α) interval lies inside ``(−margin, margin)``; contradicted when
    the (1 − α) interval lies entirely outside it; inconclusive otherwise, with
    ``repeats_to_decide`` (80 % power at the observed mean and spread) and ``decides``.
    """
    d = _paired(diff, "diff")
    _check_margin(margin)
    mean, lo90, hi90 = _interval(d, 1 - 2 * alpha)
    _, lo, hi = _interval(d, 1 - alpha)
    if abs(mean) < margin:
        points = "supported"
        if d.size >= 2 and d.std(ddof=1) > 0:
            p = max(
                float(_ttest_1samp(d, -margin, alternative="greater").pvalue),
                float(_ttest_1samp(d, margin, alternative="less").pvalue),
            )
        else:
            p = 0.0 if d.size >= 2 else 1.0
    else:
        points = "contradicted"
        p = _two_sided_p(d, math.copysign(margin, mean))
    if -margin < lo90 and hi90 < margin:
        outcome = "supported"
    elif lo >= margin or hi <= -margin:
        outcome = "contradicted"
    else:
        outcome = "inconclusive"
    need, way = _undecided(d, "equivalence", margin, alpha) if outcome == "inconclusive" else (float("nan"), "")
    return Verdict(
        claim,
        "equivalence",
        int(d.size),
        mean,
        lo,
        hi,
        p,
        outcome,
        margin=float(margin),
        repeats_to_decide=need,
        p_adjusted=p,
        points=points,
        decides=way,
    )


def noninferiority_verdict(diff, margin, claim="", alpha=0.05):
    """Verdict on the claim ``mean(diff) > −margin`` (``a`` not worse than ``b`` by ``margin`` or more).

    The directional rule on ``diff + margin``; the result reports the mean of ``diff`` itself
    and its 95 % interval, with ``kind="non-inferiority"`` and the margin.
    """
    _check_margin(margin)
    d = _paired(diff, "diff")
    v = directional_verdict(d + margin, claim=claim, alpha=alpha)
    need, way = _undecided(d, "non-inferiority", margin, alpha) if v.outcome == "inconclusive" else (float("nan"), "")
    return replace(
        v,
        kind="non-inferiority",
        effect=v.effect - margin,
        ci_low=v.ci_low - margin,
        ci_high=v.ci_high - margin,
        margin=float(margin),
        repeats_to_decide=need,
        decides=way,
    )


def no_pairs(claim, kind="directional", margin=float("nan")):
    """The verdict of a claim with no paired observation: inconclusive, nothing measured."""
    nan = float("nan")
    return Verdict(claim, kind, 0, nan, nan, nan, nan, "inconclusive", margin=margin)


def verdict_frame(verdicts):
    """The verdicts as a table, one row per claim."""
    return pd.DataFrame([v.to_dict() for v in verdicts], columns=list(Verdict.__dataclass_fields__))


def verdict_counts(verdicts):
    """How many claims are supported, contradicted and inconclusive (all three keys present).

    ``verdicts`` is a list of :class:`Verdict`, a table with a ``verdict`` column (as
    :func:`claims_frame` returns) or an ``outcome`` column (as :func:`verdict_frame` returns),
    or counts already made: a mapping from each of :data:`OUTCOMES` to a number (as
    :func:`dpstack.companion.pages.claim_counts` adds them up over pages).
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
            else f"about {int(v.repeats_to_decide)} repeats would decide it (80 % power), as {v.decides or 'decided'}"
        )
        return f"{v.claim}: inconclusive, mean difference {ci}; {more}."
    return f"{v.claim}: {v.outcome}, mean difference {ci}, {head}."


# --- claims on a tidy table of repeats -----------------------------------------------------------


# --- the repeat as the unit, claims with parts, Holm -----------------------------------------------


def holm(p_values):
    """Holm's step-down adjusted p-values (same order as given; NaN stays NaN).

    Examples
    --------
    >>> [round(float(p), 3) for p in holm([0.01, 0.04, 0.03])]
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    m = order.size
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def _select(df, selector):
    part = df
    for col, val in selector.items():
        vals = list(val) if isinstance(val, (list, tuple, set, frozenset)) else [val]
        column = part[col]
        if pd.api.types.is_float_dtype(column) and all(isinstance(v, (int, float)) for v in vals):
            mask = np.zeros(len(part), dtype=bool)
            for v in vals:
                mask |= np.isclose(column.to_numpy(dtype=float), float(v), rtol=1e-9, atol=0.0) | (
                    np.isinf(v) & (column.to_numpy(dtype=float) == v)
                )
            part = part[mask]
        else:
            part = part[column.isin(vals)]
    return part


def repeat_differences(df, a, b, value="auc", pair_on=(), unit="repeat", c=None):
    """One difference ``a − b`` per repeat (the unit of replication; see the module doc).

    Parameters
    ----------
    df : pandas.DataFrame
        Tidy results with a ``unit`` column (the repeat) and ``value``.
    a, b : dict or float
        Row selectors (column → value or list of values) of the two sides; ``b`` may be a
        number (a value printed by the paper: the difference is then ``a − b``).
    value : str, default="auc"
        The score column.
    pair_on : sequence of str, default=()
        Keys matched *within* a repeat (e.g. ``("epsilon",)`` or ``("branch",)``); the matched
        differences are averaged within the repeat. Rows of a side not matched by these keys
        (e.g. several α on one side) are averaged within the repeat first.
    unit : str, default="repeat"
        The unit column. ``unit=None`` keeps every matched pair as an observation (the old,
        pseudo-replicated rule; only for the comparison of rules).
    c : dict, optional
        A third selector: the difference is then ``min(b − a, a − c)`` per pair (``a`` lies
        between ``c`` below and ``b`` above), e.g. a private method between indiv and batch.

    Returns
    -------
    pandas.Series
        Indexed by repeat (or by ``(repeat, *pair_on)`` with ``unit=None``); empty when nothing pairs.
    """
    keys = ["repeat" if unit is None else unit, *pair_on]

    def side(selector):
        rows = _select(df, selector)
        return rows.groupby(keys, sort=True)[value].mean()

    sa = side(a)
    if isinstance(b, (int, float, np.floating)):
        diff = sa - float(b)
    else:
        sides = [sa.rename("a"), side(b).rename("b")]
        if c is not None:
            sides.append(side(c).rename("c"))
        joined = pd.concat(sides, axis=1, join="inner").dropna()
        if c is None:
            diff = joined["a"] - joined["b"]
        else:
            diff = np.minimum(joined["b"] - joined["a"], joined["a"] - joined["c"])
    diff = diff.dropna()
    if unit is None or not pair_on or diff.empty:
        return diff
    return diff.groupby(level=0, sort=True).mean()


def part_verdict(diff, kind="directional", margin=None, label="", alpha=0.05):
    """The verdict of one part of a claim on its per-repeat differences (no pairs: inconclusive)."""
    d = np.asarray(diff, dtype=float).ravel()
    if d.size == 0:
        return no_pairs(label, kind, float("nan") if margin is None else float(margin))
    if kind == "equivalence":
        return equivalence_verdict(d, margin, claim=label, alpha=alpha)
    if kind == "non-inferiority":
        return noninferiority_verdict(d, margin, claim=label, alpha=alpha)
    if kind != "directional":
        raise ValueError(f"kind must be 'directional', 'equivalence' or 'non-inferiority', got {kind!r}")
    return directional_verdict(d, claim=label, alpha=alpha)


def _sd_of(v, alpha):
    """The per-repeat standard deviation behind ``v``'s (1 − alpha) interval."""
    if v.n < 2 or not (math.isfinite(v.ci_low) and math.isfinite(v.ci_high)):
        return float("nan")
    half = (v.ci_high - v.ci_low) / 2
    return half / float(stats.t.ppf(1 - alpha / 2, v.n - 1)) * math.sqrt(v.n)


def _repeats_at(v, level, alpha):
    """:func:`repeats_to_decide` from ``v``'s summary (mean, interval, n), the test run at ``level``."""
    sd = _sd_of(v, alpha)
    if not math.isfinite(sd) or v.n < 2:
        return math.inf, ""
    if sd == 0.0:
        return float(v.n), v.points
    # a sample with exactly the observed mean and spread stands for the observed differences
    z = np.linspace(-1.0, 1.0, 2 * v.n + 1)
    sample = v.effect + (z - z.mean()) / z.std(ddof=1) * sd
    return repeats_to_decide(sample, v.kind, None if v.kind == "directional" else v.margin, alpha=level)


def _decided(v, p_adj, alpha):
    """``v`` re-decided at the adjusted p: its pointed outcome when ``p_adj < alpha``, else inconclusive.

    An undecided verdict says how many repeats would decide it at the level it faces after the
    adjustment (``alpha · p / p_adjusted``, Holm's step for it).
    """
    if v.n == 0 or not math.isfinite(p_adj):
        return replace(v, p_adjusted=p_adj, outcome="inconclusive")
    if p_adj < alpha:
        return replace(v, p_adjusted=p_adj, outcome=v.points, repeats_to_decide=float("nan"), decides="")
    level = alpha * v.p_value / p_adj if p_adj > 0 and math.isfinite(v.p_value) else alpha
    level = min(alpha, max(level, 1e-12))
    need, way = _repeats_at(v, level, alpha)
    return replace(v, p_adjusted=p_adj, outcome="inconclusive", repeats_to_decide=need, decides=way)


def combine_parts(parts, claim, quantifier="every", alpha=0.05, adjust=True):
    """One claim's verdict from its parts, Holm inside the claim (see the module doc).

    Parameters
    ----------
    parts : list of Verdict
        One verdict per x (its ``claim`` is the part's label, e.g. "ε=0.1").
    claim : str
    quantifier : {"every", "some"}
        "every": supported when every part is; "some": supported when some part is.
    alpha : float, default=0.05
    adjust : bool, default=True
        Holm inside the claim (False: each part at its raw p; only for the comparison of rules).

    Returns
    -------
    Verdict
        The claim's outcome, ``p_value`` its p (see the module doc), the effect and interval of
        the deciding part (its label in ``at``) and the adjusted parts in ``parts``.
    """
    parts = list(parts)
    if not parts:
        raise ValueError("parts must not be empty")
    if quantifier not in ("every", "some"):
        raise ValueError(f"quantifier must be 'every' or 'some', got {quantifier!r}")
    adj = holm([v.p_value if v.n > 0 else np.nan for v in parts]) if adjust else [v.p_value for v in parts]
    parts = [_decided(v, p, alpha) for v, p in zip(parts, adj)]
    if len(parts) == 1:
        v = parts[0]
        return replace(v, claim=claim, at=v.claim, parts=tuple(parts))
    measured = [v for v in parts if v.n > 0]
    pro = [v for v in measured if v.points == "supported"]
    con = [v for v in measured if v.points == "contradicted"]
    if quantifier == "every":
        if con:  # the claim fails if any part is against it: the strongest such part
            key = min(con, key=lambda v: v.p_adjusted)
            p, points = key.p_adjusted, "contradicted"
        elif len(pro) == len(parts):  # every part must hold: the weakest
            key = max(pro, key=lambda v: v.p_adjusted)
            p, points = key.p_adjusted, "supported"
        else:
            key = parts[[v.n for v in parts].index(0)]
            p, points = float("nan"), "supported"
    else:
        if pro:
            key = min(pro, key=lambda v: v.p_adjusted)
            p, points = key.p_adjusted, "supported"
        elif len(con) == len(parts):
            key = max(con, key=lambda v: v.p_adjusted)
            p, points = key.p_adjusted, "contradicted"
        else:
            key = parts[[v.n for v in parts].index(0)]
            p, points = float("nan"), "contradicted"
    outcome = points if math.isfinite(p) and p < alpha else "inconclusive"
    if outcome != "inconclusive":
        need, way = float("nan"), ""
    else:
        need, way = key.repeats_to_decide, key.decides
        if not math.isfinite(need) and key.n > 0 and not key.decides:
            need, way = (math.inf, "")
    return replace(
        key,
        claim=claim,
        p_value=p,
        p_adjusted=p,
        points=points,
        outcome=outcome,
        repeats_to_decide=need,
        decides=way,
        at=key.claim,
        parts=tuple(parts),
    )


def adjust_family(verdicts, alpha=0.05, adjust=True):
    """The claims of one family (a paper's claims on one kind of data) re-decided after Holm over the family.

    Each claim keeps its raw p (``p_value``) and gets ``p_adjusted``; its outcome is the
    direction its p points to when the adjusted p is below ``alpha``, else inconclusive.
    """
    verdicts = list(verdicts)
    ps = [v.p_value for v in verdicts]
    adj = holm(ps) if adjust else np.asarray(ps, dtype=float)
    return [_decided(v, p, alpha) for v, p in zip(verdicts, adj)]


# --- margins derived from the design ---------------------------------------------------------------


def _round_up(x, precision):
    return float(round(math.ceil(x / precision - 1e-9) * precision, 10))


def auc_margin(n_pos, n_neg, level, precision=0.001):
    """Half-width of the 95 % sampling interval of one AUC (Hanley–McNeil), rounded up to ``precision``.

    Parameters
    ----------
    n_pos, n_neg : int
        Positives and negatives of the test set.
    level : float
        The nominal AUC at which the standard error is taken (in (0.5, 1)).
    precision : float, default=0.001
        The precision the paper prints the AUC with; the margin is rounded up to it.

    Examples
    --------
    >>> auc_margin(1000, 1000, 0.95)
    0.01
    """
    if not (0.5 <= level < 1):
        raise ValueError(f"level must be in [0.5, 1), got {level!r}")
    if n_pos < 1 or n_neg < 1:
        raise ValueError(f"n_pos and n_neg must be >= 1, got {n_pos!r}, {n_neg!r}")
    q1, q2 = level / (2 - level), 2 * level**2 / (1 + level)
    var = (level * (1 - level) + (n_pos - 1) * (q1 - level**2) + (n_neg - 1) * (q2 - level**2)) / (n_pos * n_neg)
    return _round_up(float(stats.norm.ppf(0.975)) * math.sqrt(var), precision)


def accuracy_margin(n, level, precision=0.01):
    """Half-width of the 95 % binomial sampling interval of one accuracy, rounded up to ``precision``.

    Examples
    --------
    >>> accuracy_margin(2947, 0.90)
    0.02
    """
    if not (0 < level < 1):
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n!r}")
    return _round_up(float(stats.norm.ppf(0.975)) * math.sqrt(level * (1 - level) / n), precision)
