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
per-repeat mean needs no assumption on the within-repeat correlation and is what a reader can
recompute from the table. An effect
whose sign may change along an axis (ε, the branch, K) is never averaged along that axis: the
claim is judged at each x separately (see "at every x" below).

The test: sign flips, not normal tails
--------------------------------------
Under the null hypothesis of a part (the two sides of a comparison are exchangeable within a
repeat), each per-repeat difference is as likely to carry either sign, whatever the
distribution of the differences: the **sign-flip (permutation) test** compares the observed sum of
the differences with its values under every assignment of signs (:func:`sign_flip_p`). With at
most :data:`EXACT_MAX_REPEATS` repeats all ``2**n`` assignments are enumerated (an exact test);
with more, :data:`SIGN_FLIPS` assignments are drawn once from a fixed generator (a Monte-Carlo
test, p = (1 + hits) / (1 + draws); the draws do not depend on the data). No normal tail is
assumed: with 10 repeats the smallest two-sided p any test of this kind can give is 2/1024 ≈
0.002, so a claim with several parts, Holm-adjusted inside the claim and across its family,
often cannot be decided at the papers' 10 repeats; the primary results have 30.

**Intervals are the ones the decision uses.** The interval of a part is the set of shifts δ that
the same sign-flip test does not reject for ``d − δ`` (:func:`sign_flip_interval`, test
inversion) at the level the part is finally judged at: 5 % for a single test, Holm's level
(``0.05 · p / p_adjusted``) after the adjustments. So a verdict is decided exactly when its
interval excludes the null value, and an inconclusive verdict never shows an interval that
excludes it.

Outcomes of one comparison (a *part* of a claim)
------------------------------------------------
* **directional** (``a > b``): the mean per-repeat difference ``a − b`` and the two-sided
  sign-flip p; *supported* when the difference is positive and p is below the level,
  *contradicted* when it is negative and p is below the level, *inconclusive* otherwise.
* **non-inferiority** (``a`` not worse than ``b`` by the margin or more): the directional rule on
  ``a − b + margin``.
* **equivalence** (``a ≈ b``): two one-sided sign-flip tests (TOST) at the level against
  ``−margin`` and ``+margin``: *supported* when both reject; *contradicted* when the mean lies
  outside the margin and the two-sided test against the nearer margin rejects; *inconclusive*
  otherwise.

**Within resolution.** A directional claim reversed by less than the data's resolution margin
(the sampling half-width of one score on the test set, below) is not a contradiction of the
paper: the test set cannot resolve a difference that small. Such a verdict is reported as
*reversed, within resolution* (:data:`WITHIN_RESOLUTION`) and counted apart from the three outcomes.

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

What the intervals leave out
----------------------------
What one repeat of a result draws anew and what stays one draw is stated per result
(:func:`dpstack.companion.variants.draw_sentence`): the primary results redraw the
fit/validation split and every noise draw in each repeat, and MNIST's images where the loader
draws them; NEWS20's split is the archive's. The protocol variant "another seed" repeats each
primary result under another root seed and data draw.

References
----------
R. A. Fisher. The Design of Experiments, §21. Oliver and Boyd, 1935 (the sign-flip test).

E. J. G. Pitman. Significance tests which may be applied to samples from any populations.
Suppl. J. Royal Statistical Society 4(1), 1937.

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

import functools
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
    "no_pairs",
    "directional_verdict",
    "equivalence_verdict",
    "verdict_frame",
    "verdict_counts",
    "verdict_sentence",
    "interval_label",
    "counts_sentence",
    "EXACT_MAX_REPEATS",
    "SIGN_FLIPS",
    "sign_flip_p",
    "sign_flip_interval",
    "WITHIN_RESOLUTION",
    "within_resolution",
    "holm",
    "repeat_differences",
    "part_verdict",
    "combine_parts",
    "adjust_family",
    "auc_margin",
    "accuracy_margin",
]

#: The label of a directional claim reversed by less than the data's resolution margin.
WITHIN_RESOLUTION = "reversed, within resolution"

#: the outcomes, in the order tables list them (the rule's tests give the three others; a
#: contradiction smaller than the data's resolution is re-labelled by the claims' judge)
OUTCOMES = ("supported", "contradicted", WITHIN_RESOLUTION, "inconclusive")

#: the margin of every "≈" and "not worse" claim on a test AUC, derived from the design (see the module doc)
AUC_MARGIN = 0.01


@dataclass(frozen=True)
class Verdict:
    """The outcome of one claim (or one part of a claim) on per-repeat differences (``a − b``).

    ``p_value`` is the raw sign-flip p of the decision the data point to (``points``: "supported"
    or "contradicted"; see the module doc), ``p_adjusted`` the Holm-adjusted p the outcome was
    decided on (equal to ``p_value`` for a single test) and ``level`` the level the raw p was
    judged at (``alpha · p_value / p_adjusted``). ``ci_low``/``ci_high``: the sign-flip interval
    at that level, so the outcome is decided exactly when it excludes the null value. ``parts``
    holds the verdicts of a claim's parts (each at its Holm-adjusted p inside the claim), ``at``
    the label of the part whose effect the claim reports, ``differences`` the per-repeat
    differences the verdict was computed from.
    """

    claim: str
    kind: str  # "directional", "equivalence" or "non-inferiority"
    n: int
    effect: float  # mean per-repeat difference
    ci_low: float  # sign-flip interval at `level`
    ci_high: float
    p_value: float  # raw p of the decision the data point to
    outcome: str  # one of OUTCOMES
    margin: float = float("nan")  # equivalence / non-inferiority margin (nan for directional claims)
    p_adjusted: float = float("nan")
    points: str = ""  # "supported" or "contradicted": where p_value points
    level: float = 0.05
    at: str = ""
    parts: tuple = ()
    differences: tuple = ()
    test: str = "sign-flip"  # a key of TESTS: the book's rule always uses "sign-flip"

    def to_dict(self):
        return asdict(self)


def _paired(diff, name):
    d = np.asarray(diff, dtype=float).ravel()
    if d.size == 0 or not np.all(np.isfinite(d)):
        raise ValueError(f"{name} must be a non-empty array of finite paired differences, got {diff!r}")
    return d


#: Up to this many repeats the sign-flip test enumerates all 2**n assignments of signs (exact).
EXACT_MAX_REPEATS = 16

#: With more repeats, the number of assignments drawn (Monte-Carlo test).
SIGN_FLIPS = 20_000

#: The seed of the drawn assignments (fixed: they depend on the number of repeats only).
SIGN_SEED = 20190810


@functools.lru_cache(maxsize=32)
def _signs(n):
    """(assignments of signs, exact?) for ``n`` repeats: a read-only (m, n) array of ±1."""
    if n <= EXACT_MAX_REPEATS:
        codes = np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)
        signs = 1.0 - 2.0 * (codes & 1)
        exact = True
    else:
        signs = 1.0 - 2.0 * np.random.default_rng(SIGN_SEED).integers(0, 2, size=(SIGN_FLIPS, n))
        exact = False
    signs.setflags(write=False)
    return signs, exact


@functools.lru_cache(maxsize=32)
def _row_sums(n):
    sums = _signs(n)[0].sum(axis=1)
    sums.setflags(write=False)
    return sums


class _SignFlip:
    """The sign-flip test of one sample of differences, at any null value δ (for inversion).

    The flipped sums of ``d − δ`` are ``a − δ·b`` with ``a = S·d`` and ``b = S·1``. ``b`` takes the
    n + 1 values −n, −n + 2, …, n: within each the flipped sums are sorted once, so a p-value is
    two binary searches per value of ``b`` (the bisections of :meth:`bound` call it often).
    Comparisons allow a tolerance of 1e-9 of ``Σ|d| + n·|δ|``, so that ties (e.g. the identity and
    its mirror, or differences equal to δ up to rounding) count whatever the order the sums were
    taken in.
    """

    def __init__(self, d):
        self.d = d
        n = d.size
        signs, self.exact = _signs(n)
        self.m = signs.shape[0]
        a = (signs * d).sum(axis=1)  # not a BLAS product: the same sums whatever the kernel
        groups = np.rint((_row_sums(n) + n) / 2).astype(np.int64)  # b = 2g − n
        order = np.lexsort((a, groups))
        self.b_values = 2.0 * np.arange(n + 1) - n
        self.starts = np.searchsorted(groups[order], np.arange(n + 1), side="left")
        self.ends = np.searchsorted(groups[order], np.arange(n + 1), side="right")
        mean = float(d.mean())
        self.span = float(d.max() - d.min()) + abs(mean) + 1e-12
        # each group's sums shifted into a band of its own, wide enough for every δ the bisections try
        self.scale = float(np.abs(d).sum())
        self.band = 8.0 * (self.scale + n * (abs(mean) + 3 * self.span)) + 1.0
        self.offsets = np.arange(n + 1) * self.band
        self.keyed = a[order] + groups[order] * self.band
        self._bounds = {}

    @classmethod
    def of(cls, d):
        """The test of ``d`` (memoised on its bytes: a verdict is re-judged at several levels)."""
        return _sign_flip_of(d.tobytes())

    def _at_least(self, values):
        """Per group: how many flipped sums ``a − δ·b`` are ≥ the group's value (given as ``a`` ≥ values)."""
        return self.ends - np.searchsorted(self.keyed, values + self.offsets, side="left")

    def _at_most(self, values):
        return np.searchsorted(self.keyed, values + self.offsets, side="right") - self.starts

    def p(self, null=0.0, alternative="two-sided"):
        observed = float((self.d - null).sum())
        tol = 1e-9 * (self.scale + self.d.size * abs(null)) + 1e-300
        shift = null * self.b_values  # a − δ·b ≥ c  ⟺  a ≥ δ·b + c
        if alternative == "two-sided":
            t = abs(observed) - tol
            if t <= 0:
                hits = self.m
            else:
                hits = int(self._at_least(shift + t).sum() + self._at_most(shift - t).sum())
        elif alternative == "greater":
            hits = int(self._at_least(shift + observed - tol).sum())
        elif alternative == "less":
            hits = int(self._at_most(shift + observed + tol).sum())
        else:
            raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
        return float(min(1.0, hits / self.m) if self.exact else min(1.0, (1 + hits) / (1 + self.m)))

    def bound(self, level, side):
        """The end (``side`` = -1: lower, +1: upper) of the interval of δ not rejected at ``level``."""
        key = (float(level), int(side))
        if key not in self._bounds:
            self._bounds[key] = self._bound(*key)
        return self._bounds[key]

    def _bound(self, level, side):
        mean = float(self.d.mean())
        far = mean + side * 2 * self.span
        if self.p(far) > level:  # not even a shift beyond every difference is rejected
            return side * math.inf
        inside, outside = mean, far
        while abs(outside - inside) > 1e-7 * self.span:  # about 25 halvings: far below the printed digits
            mid = (inside + outside) / 2
            inside, outside = (mid, outside) if self.p(mid) > level else (inside, mid)
        return float(inside)


@functools.lru_cache(maxsize=4096)
def _sign_flip_of(raw):
    return _SignFlip(np.frombuffer(raw, dtype=float))


class _TTest:
    """Student's one-sample t test of ``d`` at any null value, with the interface of :class:`_SignFlip`.

    Not the book's test: the rule's history (:data:`TESTS`) uses it to show what the sign-flip test
    changed against the normal-tail test the previous rule decided with.
    """

    def __init__(self, d):
        self.d = d
        self.n = d.size
        self.mean = float(d.mean())
        self.se = float(d.std(ddof=1) / math.sqrt(self.n)) if self.n > 1 else math.nan

    @classmethod
    def of(cls, d):
        return cls(np.asarray(d, dtype=float))

    def p(self, null=0.0, alternative="two-sided"):
        if not (self.se > 0):
            return math.nan if not math.isfinite(self.se) else (0.0 if self.mean != null else 1.0)
        t = (self.mean - null) / self.se
        df = self.n - 1
        if alternative == "two-sided":
            return float(2 * stats.t.sf(abs(t), df))
        if alternative == "greater":
            return float(stats.t.sf(t, df))
        if alternative == "less":
            return float(stats.t.cdf(t, df))
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")

    def bound(self, level, side):
        if not (self.se > 0):
            return self.mean if self.se == 0 else side * math.inf
        return float(self.mean + side * stats.t.ppf(1 - level / 2, self.n - 1) * self.se)


#: The tests a part can be decided with: the book's (sign-flip) and, for the rule's history only, Student's t.
TESTS = {"sign-flip": _SignFlip, "t": _TTest}


def sign_flip_p(diff, null=0.0, alternative="two-sided"):
    """The sign-flip test's p of ``mean(diff) == null`` (exact up to :data:`EXACT_MAX_REPEATS` repeats).

    Parameters
    ----------
    diff : array-like of shape (n_repeats,)
        Paired differences, one per repeat.
    null : float, default=0.0
    alternative : {"two-sided", "greater", "less"}

    Examples
    --------
    >>> round(sign_flip_p([0.02, 0.03, 0.01, 0.025, 0.02]), 4)  # 2 of the 32 assignments are as extreme
    0.0625
    """
    d = _paired(diff, "diff")
    return _SignFlip.of(d).p(float(null), alternative)


def sign_flip_interval(diff, level=0.05):
    """The shifts δ the two-sided sign-flip test does not reject at ``level`` (test inversion).

    Returns ``(low, high)``; an end is infinite when no shift is rejected on that side (too few
    repeats for the level: with n repeats the smallest p is ``2 / 2**n``).

    Examples
    --------
    >>> low, high = sign_flip_interval([0.02, 0.03, 0.01, 0.025, 0.02, 0.015, 0.03, 0.02], 0.05)
    >>> 0.01 < low < 0.02 < high < 0.03
    True
    """
    d = _paired(diff, "diff")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    test = _SignFlip.of(d)
    return test.bound(level, -1), test.bound(level, +1)


def _pointed(t, mean, kind, margin):
    """Where the data point (``"supported"`` or ``"contradicted"``) and the raw p of that decision, from test ``t``."""
    if kind == "equivalence":
        if abs(mean) < margin:
            return "supported", max(t.p(-margin, "greater"), t.p(margin, "less"))
        return "contradicted", t.p(math.copysign(margin, mean))
    shift = margin if kind == "non-inferiority" else 0.0
    return ("supported" if mean + shift > 0 else "contradicted"), t.p(-shift)


def _decide(d, kind, margin, level, claim, alpha=0.05, test="sign-flip", prepared=None):
    """The verdict of one part on differences ``d`` with its raw p judged at ``level`` (by ``test``, a key of :data:`TESTS`).

    ``prepared``: ``TESTS[test].of(d)`` when the caller has it already.
    """
    name = test
    if name not in TESTS:
        raise ValueError(f"test must be one of {sorted(TESTS)}, got {test!r}")
    test = prepared if prepared is not None else TESTS[name].of(np.ascontiguousarray(d, dtype=float))
    mean = float(d.mean())
    points, p = _pointed(test, mean, kind, margin)
    # equivalence supported: both one-sided tests reject, i.e. the interval of level 2·level lies inside the margin
    shown = min(2 * level, 0.999) if kind == "equivalence" and points == "supported" else level
    decided = math.isfinite(p) and p < level and (mean != 0 or kind != "directional")
    outcome = points if decided else "inconclusive"
    lo, hi = test.bound(shown, -1), test.bound(shown, +1)
    return Verdict(
        claim,
        kind,
        int(d.size),
        mean,
        lo,
        hi,
        p,
        outcome,
        margin=float("nan") if margin is None else float(margin),
        p_adjusted=p,
        points=points,
        level=float(level),
        differences=tuple(float(x) for x in d),
        test=name,
    )


def directional_verdict(diff, claim="", alpha=0.05, test="sign-flip"):
    """Verdict on the claim ``mean(diff) > 0`` from per-repeat differences (``a − b``).

    Parameters
    ----------
    diff : array-like of shape (n_repeats,)
        Paired differences, one per repeat.
    claim : str
        Text of the claim, carried into the result.
    alpha : float, default=0.05
        The level of the two-sided sign-flip test.

    Returns
    -------
    Verdict
        ``outcome`` is "supported" when the mean is positive and the sign-flip p is below
        ``alpha``, "contradicted" when it is negative and p below ``alpha``, else
        "inconclusive"; the interval is the sign-flip interval at ``alpha``.

    Examples
    --------
    >>> directional_verdict([0.02, 0.03, 0.01, 0.025, 0.02, 0.015, 0.03], "A beats B").outcome
    'supported'
    >>> directional_verdict([0.02, 0.03, 0.01, 0.025, 0.02], "A beats B").outcome  # 5 repeats: p ≥ 1/16
    'inconclusive'
    """
    d = _paired(diff, "diff")
    return _decide(d, "directional", None, alpha, claim, test=test)


def _check_margin(margin):
    if not (isinstance(margin, (int, float, np.floating)) and math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a finite number > 0, got {margin!r}")


def equivalence_verdict(diff, margin, claim="", alpha=0.05, test="sign-flip"):
    """Verdict on the claim ``|mean(diff)| < margin`` (two methods about as good), by TOST with sign flips.

    Supported when both one-sided sign-flip tests (against ``−margin`` and ``+margin``) reject at
    ``alpha``; contradicted when the mean lies outside the margin and the two-sided test against
    the nearer margin rejects; inconclusive otherwise.
    """
    d = _paired(diff, "diff")
    _check_margin(margin)
    return _decide(d, "equivalence", float(margin), alpha, claim, test=test)


def noninferiority_verdict(diff, margin, claim="", alpha=0.05, test="sign-flip"):
    """Verdict on the claim ``mean(diff) > −margin`` (``a`` not worse than ``b`` by ``margin`` or more).

    The directional rule on ``diff + margin``; the result reports the mean of ``diff`` itself
    and its interval, with ``kind="non-inferiority"`` and the margin.
    """
    _check_margin(margin)
    d = _paired(diff, "diff")
    return _decide(d, "non-inferiority", float(margin), alpha, claim, test=test)


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
        verdicts = {WITHIN_RESOLUTION: 0, **verdicts}  # counts made before the label existed
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

    ``verdicts`` is anything :func:`verdict_counts` accepts; reversals within resolution are
    named only when there are some.
    """
    c = verdict_counts(verdicts)
    n = sum(c.values())
    within = f", {c[WITHIN_RESOLUTION]} reversed within resolution" if c[WITHIN_RESOLUTION] else ""
    return (
        f"{c['supported']} of {n} {what} supported, {c['contradicted']} contradicted{within}, "
        f"{c['inconclusive']} inconclusive."
    )


def verdict_sentence(v, digits=3):
    """One sentence stating a verdict from its numbers (for prose built from results)."""
    ci = (
        f"{v.effect:+.{digits}f} ({interval_label(v)} {v.ci_low:+.{digits}f} to {v.ci_high:+.{digits}f}, {v.n} repeats)"
    )
    if v.kind == "non-inferiority":
        head = f"not worse by {v.margin:g} or more" if v.outcome == "supported" else f"worse by {v.margin:g} or more"
    elif v.kind == "equivalence":
        head = f"within ±{v.margin:g}" if v.outcome == "supported" else f"not within ±{v.margin:g}"
    else:
        head = "in the claimed direction" if v.outcome == "supported" else "against the claim"
    if v.outcome == "inconclusive":
        return f"{v.claim}: inconclusive, mean difference {ci}."
    return f"{v.claim}: {v.outcome}, mean difference {ci}, {head}."


def interval_label(v):
    """What a verdict's interval is: "95 % CI" for a single test, else the level Holm gives it."""
    level = getattr(v, "level", 0.05)
    if v.kind == "equivalence" and v.points == "supported":
        level = 2 * level
    conf = 100 * (1 - level)
    if abs(level - 0.05) < 1e-12:
        return "95 % CI"
    return f"{conf:.{_digits_for(conf)}f} % CI (Holm)"


def _digits_for(conf):
    for digits in range(0, 4):
        if round(conf, digits) < 100:
            return digits
    return 4


def within_resolution(v, resolution):
    """Whether ``v`` is a contradiction of a directional claim by less than ``resolution`` (then not one).

    A "contradicted" verdict of a directional claim whose mean difference is smaller in size
    than the resolution margin of the data (the sampling half-width of one score on its test set,
    :func:`auc_margin`, :func:`accuracy_margin`) is a reversal the test set cannot resolve.
    """
    return (
        v.outcome == "contradicted"
        and v.kind == "directional"
        and math.isfinite(resolution)
        and abs(v.effect) < resolution
    )


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


def part_verdict(diff, kind="directional", margin=None, label="", alpha=0.05, test="sign-flip"):
    """The verdict of one part of a claim on its per-repeat differences (no pairs: inconclusive).

    ``test``: a key of :data:`TESTS` (the book's rule: "sign-flip").
    """
    d = np.asarray(diff, dtype=float).ravel()
    if d.size == 0:
        return no_pairs(label, kind, float("nan") if margin is None else float(margin))
    if kind == "equivalence":
        return equivalence_verdict(d, margin, claim=label, alpha=alpha, test=test)
    if kind == "non-inferiority":
        return noninferiority_verdict(d, margin, claim=label, alpha=alpha, test=test)
    if kind != "directional":
        raise ValueError(f"kind must be 'directional', 'equivalence' or 'non-inferiority', got {kind!r}")
    return directional_verdict(d, claim=label, alpha=alpha, test=test)


def _decided(v, p_adj, alpha):
    """``v`` re-decided at the adjusted p: its pointed outcome when ``p_adj < alpha``, else inconclusive.

    The raw p is then judged at ``alpha · p / p_adjusted`` (Holm's step for it), and the interval
    shown is the sign-flip interval at that level.
    """
    if v.n == 0 or not math.isfinite(p_adj):
        return replace(v, p_adjusted=p_adj, outcome="inconclusive")
    d = np.ascontiguousarray(v.differences, dtype=float)
    margin = None if v.kind == "directional" else v.margin
    t = TESTS[v.test].of(d)
    raw = _pointed(t, float(d.mean()), v.kind, margin)[1]  # a claim's verdict carries its part's adjusted p
    level = alpha * raw / p_adj if p_adj > 0 else alpha
    level = min(alpha, max(level, 1e-12))
    again = _decide(d, v.kind, margin, level, v.claim, test=v.test, prepared=t)
    outcome = v.points if p_adj < alpha else "inconclusive"
    return replace(v, p_adjusted=p_adj, outcome=outcome, level=level, ci_low=again.ci_low, ci_high=again.ci_high)


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
    return replace(
        key,
        claim=claim,
        p_value=p,
        p_adjusted=p,
        points=points,
        outcome=outcome,
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
