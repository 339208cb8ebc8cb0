"""The shared claim rule: the sign-flip test, its inverted interval, the outcomes, Holm, resolution."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpstack.companion.rule import (
    AUC_MARGIN,
    EXACT_MAX_REPEATS,
    SIGN_FLIPS,
    WITHIN_RESOLUTION,
    adjust_family,
    combine_parts,
    counts_sentence,
    directional_verdict,
    equivalence_verdict,
    interval_label,
    noninferiority_verdict,
    sign_flip_interval,
    sign_flip_p,
    verdict_counts,
    verdict_frame,
    verdict_sentence,
    within_resolution,
)


def _all_signs_p(d, null=0.0):
    """The exact two-sided sign-flip p by brute force over every assignment (independent of the module's code)."""
    d = np.asarray(d, dtype=float) - null
    n = d.size
    observed = abs(d.sum())
    hits = 0
    for code in range(2**n):
        signs = np.array([-1.0 if code >> i & 1 else 1.0 for i in range(n)])
        hits += abs((signs * d).sum()) >= observed - 1e-12
    return hits / 2**n


@pytest.mark.parametrize("seed", range(6))
def test_the_exact_test_counts_every_assignment_of_signs(seed):
    rng = np.random.default_rng(seed)
    d = rng.normal(0.01 * seed, 0.02, size=int(rng.integers(3, 11)))
    assert sign_flip_p(d) == pytest.approx(_all_signs_p(d), abs=1e-15)
    assert sign_flip_p(d, null=0.01) == pytest.approx(_all_signs_p(d, 0.01), abs=1e-15)


def test_the_smallest_p_of_n_repeats_is_two_in_two_to_the_n():
    """The distribution-free floor: 10 repeats all one way give p = 2/1024, whatever their size."""
    assert sign_flip_p(np.full(10, 0.3) + np.arange(10) * 1e-3) == pytest.approx(2 / 1024)
    assert sign_flip_p(np.arange(1, 11) * 1e-6) == pytest.approx(2 / 1024)
    # one-sided: half of it
    assert sign_flip_p(np.arange(1, 11) * 1e-6, alternative="greater") == pytest.approx(1 / 1024)


def test_the_monte_carlo_test_agrees_with_the_t_test_on_normal_data_and_is_fixed():
    d = np.random.default_rng(0).normal(0.006, 0.02, size=30)
    assert 30 > EXACT_MAX_REPEATS
    p = sign_flip_p(d)
    t = stats.ttest_1samp(d, 0.0).pvalue
    assert abs(p - t) < 4 * math.sqrt(t * (1 - t) / SIGN_FLIPS) + 0.01  # close to the t-test's on normal data
    assert sign_flip_p(d) == p  # the drawn assignments do not change between calls
    # another order pairs other draws with the repeats: the same p up to the Monte-Carlo error
    assert sign_flip_p(d[::-1]) == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / SIGN_FLIPS))


def test_the_test_does_not_lean_on_normality():
    """One huge difference against nine small negative ones: the t-test sees nothing, the signs see 9 of 10."""
    d = np.array([-0.01] * 9 + [0.5])
    assert stats.ttest_1samp(d, 0).pvalue > 0.3
    assert sign_flip_p(d) == pytest.approx(_all_signs_p(d))
    assert directional_verdict(d).outcome == "inconclusive"


def test_the_interval_is_the_inverted_test_so_decisions_and_intervals_agree():
    rng = np.random.default_rng(1)
    for _ in range(20):
        d = rng.normal(rng.normal(0, 0.01), 0.02, size=int(rng.integers(8, 31)))
        v = directional_verdict(d)
        excludes = v.ci_low > 0 or v.ci_high < 0
        assert excludes == (v.outcome != "inconclusive")
        low, high = sign_flip_interval(d, 0.05)
        assert (low, high) == (v.ci_low, v.ci_high) and low <= d.mean() <= high
        # at its ends the test just stops rejecting
        assert sign_flip_p(d, null=low + 1e-6 * (high - low)) > 0.05 and sign_flip_p(d, null=low - 0.01) <= 0.05


def test_an_interval_the_repeats_cannot_bound_is_infinite():
    d = np.arange(1, 6) * 0.01  # 5 repeats: the smallest p is 2/32 > 0.05
    assert sign_flip_interval(d, 0.05) == (-math.inf, math.inf)
    assert directional_verdict(d).outcome == "inconclusive"


@pytest.mark.parametrize("mean,outcome", [(0.05, "supported"), (-0.05, "contradicted"), (0.0, "inconclusive")])
def test_three_outcomes(mean, outcome):
    d = mean + np.random.default_rng(1).normal(0, 0.01, size=30)
    d -= d.mean() - mean
    assert directional_verdict(d).outcome == outcome


def test_one_repeat_is_never_decided():
    assert directional_verdict([0.5]).outcome == "inconclusive"
    assert equivalence_verdict([0.0], margin=0.01).outcome == "inconclusive"


def test_equivalence_by_tost():
    rng = np.random.default_rng(3)
    close = rng.normal(0.0, 0.005, size=30)
    assert equivalence_verdict(close, margin=0.01).outcome == "supported"
    far = rng.normal(0.05, 0.005, size=30)
    assert equivalence_verdict(far, margin=0.01).outcome == "contradicted"
    few = rng.normal(0.0, 0.02, size=3)
    v = equivalence_verdict(few, margin=0.01)
    assert v.outcome == "inconclusive" and v.margin == 0.01
    # a non-significant difference is never evidence of equivalence
    assert directional_verdict(few).outcome == "inconclusive"
    with pytest.raises(ValueError, match="margin"):
        equivalence_verdict(close, margin=0)


def test_holm_judges_the_intervals_at_its_own_level():
    """After Holm the interval shown is the one at the level the verdict was decided at: never a 95 % one that excludes 0."""
    rng = np.random.default_rng(4)

    def weak():  # t = 2.3 on 30 repeats: raw p about 0.03, decided alone but not after Holm over 4 such
        z = rng.normal(size=30)
        return (z - z.mean()) / z.std(ddof=1) * 0.01 + 2.3 * 0.01 / math.sqrt(30)

    weak_ones = [directional_verdict(weak(), f"w{i}") for i in range(4)]
    alone = weak_ones[0]
    assert alone.outcome == "supported" and alone.ci_low > 0 and interval_label(alone) == "95 % CI"
    strong = rng.normal(0.05, 0.01, size=30)
    family = adjust_family(weak_ones + [directional_verdict(strong, "s")])
    for v in family[:4]:
        assert v.outcome == "inconclusive" and v.level < 0.05 and v.p_adjusted > 0.05
        assert v.ci_low < 0 < v.ci_high  # the wider interval at Holm's level includes 0
        assert "Holm" in interval_label(v)
    assert family[4].outcome == "supported" and family[4].ci_low > 0
    claim = combine_parts([alone, directional_verdict(strong, "b")], "both", "every")
    assert claim.level <= 0.05 and (claim.ci_low > 0) == (claim.outcome == "supported")


def test_a_reversal_below_the_resolution_is_not_a_contradiction():
    d = np.random.default_rng(5).normal(-0.004, 0.002, size=30)
    v = directional_verdict(d)
    assert v.outcome == "contradicted"
    assert within_resolution(v, 0.014) and not within_resolution(v, 0.003)
    assert not within_resolution(directional_verdict(-d), 0.014)  # a supported claim stays supported
    assert not within_resolution(v, float("nan"))
    counts = verdict_counts({"supported": 1, "contradicted": 0, WITHIN_RESOLUTION: 2, "inconclusive": 1})
    assert counts[WITHIN_RESOLUTION] == 2 and "2 reversed within resolution" in counts_sentence(counts)
    assert "within resolution" not in counts_sentence({"supported": 1, "contradicted": 0, "inconclusive": 0})


def test_tables_and_counts():
    vs = [
        directional_verdict([0.1, 0.12, 0.11, 0.1, 0.13, 0.1, 0.12], "a"),
        directional_verdict([-0.1, -0.12, -0.11, -0.1, -0.13, -0.1, -0.12], "b"),
        directional_verdict([0.1, -0.1], "c"),
    ]
    assert verdict_counts(vs) == {"supported": 1, "contradicted": 1, WITHIN_RESOLUTION: 0, "inconclusive": 1}
    f = verdict_frame(vs)
    assert list(f["claim"]) == ["a", "b", "c"] and list(f["outcome"]) == ["supported", "contradicted", "inconclusive"]
    assert "inconclusive" in verdict_sentence(vs[2]) and "95 % CI" in verdict_sentence(vs[0])
    with pytest.raises(ValueError, match="finite paired differences"):
        directional_verdict([np.nan, 1.0])


def test_noninferiority_reports_the_raw_difference_and_uses_the_margin():
    slightly_worse = [-0.002, -0.003, -0.001, -0.002, -0.0025, -0.002, -0.0015]
    v = noninferiority_verdict(slightly_worse, margin=AUC_MARGIN, claim="A not worse than B")
    assert v.outcome == "supported" and v.kind == "non-inferiority" and v.margin == AUC_MARGIN
    assert v.effect == pytest.approx(np.mean(slightly_worse)) and v.ci_high < 0  # below 0, above −margin
    assert v.ci_low > -AUC_MARGIN
    assert directional_verdict(slightly_worse).outcome == "contradicted"  # the directional claim would fail
    much_worse = [-0.05, -0.051, -0.049, -0.05, -0.052, -0.05, -0.048]
    assert noninferiority_verdict(much_worse, margin=AUC_MARGIN).outcome == "contradicted"
    assert noninferiority_verdict([-0.02, 0.03, -0.01], margin=AUC_MARGIN).outcome == "inconclusive"
    with pytest.raises(ValueError, match="margin"):
        noninferiority_verdict(slightly_worse, margin=-1)


# --- no page states the old two-way verdict --------------------------------------------------------

_ROOT = Path(__file__).resolve().parents[1]
_OLD_VERDICT = re.compile(
    r"\*\*(dis)?agrees?\*\*|[\"'](dis)?agrees|\bdisagrees\b|claims? (that )?(dis)?agree|where they (dis)?agree",
    re.IGNORECASE,
)


def _page_sources():
    for path in sorted((_ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for i, cell in enumerate(nb["cells"]):
            src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            yield f"{path.name} cell {i}", src
    for path in sorted((_ROOT / "book").glob("*.md")):
        yield path.name, path.read_text(encoding="utf-8")


def test_no_page_states_agrees_or_disagrees_as_a_verdict():
    pages = list(_page_sources())
    assert len(pages) > 20  # the notebooks and the book were found
    bad = [(where, m.group(0)) for where, src in pages for m in _OLD_VERDICT.finditer(src)]
    assert bad == []


def test_the_histories_t_test_is_students_and_only_for_the_history():
    """The rule's history decides its earlier steps with Student's t (``test="t"``); the book never does."""
    d = np.random.default_rng(11).normal(0.01, 0.02, size=12)
    v = directional_verdict(d, test="t")
    assert v.test == "t" and v.p_value == pytest.approx(stats.ttest_1samp(d, 0).pvalue, rel=1e-12)
    half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    assert (v.ci_low, v.ci_high) == pytest.approx((d.mean() - half, d.mean() + half), rel=1e-12)
    assert directional_verdict(d).test == "sign-flip"  # the default is the book's test
    # Holm's re-decision keeps a part's test (planted: _decided re-judging with the sign flips fails here)
    (again,) = adjust_family([v])
    assert again.test == "t" and (again.ci_low, again.ci_high) == pytest.approx((v.ci_low, v.ci_high))
    with pytest.raises(ValueError, match="test must be one of"):
        directional_verdict(d, test="z")


def test_the_rule_switches_of_the_history_change_what_they_say():
    from dpstack.companion import verdicts
    from dpstack.companion.registry import Claim, Part, sel

    # a claim reversed by less than its data's resolution: the rule says so, the previous rule called it contradicted
    rng = np.random.default_rng(5)
    rows = [
        {"method": m, "repeat": r, "auc": 0.9 + (0 if m == "a" else 0.004) + rng.normal(0, 0.002)}
        for r in range(30)
        for m in ("a", "b")
    ]
    frame = pd.DataFrame(rows)
    c = Claim(
        id="x.claim",
        paper="PST",
        words="a beats b",
        location="§0",
        page="p",
        result="r",
        data="paper",
        dataset="MNIST",
        kind="directional",
        label="a > b",
        parts=(Part("a > b", sel(method="a"), sel(method="b")),),
    )
    now = verdicts.judge(frames={"r": frame}, claim_list=[c])["verdict"].iloc[0]
    before = verdicts.judge(frames={"r": frame}, claim_list=[c], rule=verdicts.Rule(resolution=False))
    assert now == WITHIN_RESOLUTION and before["verdict"].iloc[0] == "contradicted"
