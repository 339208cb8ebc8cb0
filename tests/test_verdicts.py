"""The shared claim rule: effect, 95 % interval, supported / contradicted / inconclusive."""

import math

import numpy as np
import pytest
from scipy import stats

from dpstack.experiments.verdicts import (
    directional_verdict,
    equivalence_verdict,
    verdict_counts,
    verdict_frame,
    verdict_sentence,
)


def test_interval_is_the_t_interval_of_the_mean():
    d = np.random.default_rng(0).normal(0.03, 0.02, size=12)
    v = directional_verdict(d, "A beats B")
    ref = stats.t.interval(0.95, 11, loc=d.mean(), scale=stats.sem(d))
    assert (v.ci_low, v.ci_high) == pytest.approx(ref)
    assert v.outcome == "supported" and v.n == 12 and v.p_value < 0.05


@pytest.mark.parametrize("mean,outcome", [(0.05, "supported"), (-0.05, "contradicted"), (0.0, "inconclusive")])
def test_three_outcomes(mean, outcome):
    d = mean + np.random.default_rng(1).normal(0, 0.01, size=30)
    d -= d.mean() - mean
    assert directional_verdict(d).outcome == outcome


def test_inconclusive_says_how_many_repeats_would_decide():
    rng = np.random.default_rng(2)
    d = 0.01 + rng.normal(0, 0.05, size=4)
    d += 0.01 - d.mean()
    v = directional_verdict(d, "C-hl beats C-mv")
    assert v.outcome == "inconclusive"
    need = math.ceil((1.96 * d.std(ddof=1) / 0.01) ** 2)
    assert v.repeats_to_decide == need and need > 4
    # with that many repeats at the same mean and spread the interval excludes 0
    big = 0.01 + rng.normal(0, 1, size=need)
    big = (big - big.mean()) / big.std(ddof=1) * d.std(ddof=1) + 0.01
    assert directional_verdict(np.r_[big, big]).outcome == "supported"
    assert "about" in verdict_sentence(v) and "inconclusive" in verdict_sentence(v)
    assert math.isinf(directional_verdict([0.1, -0.1, 0.0]).repeats_to_decide)


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


def test_tables_and_counts():
    vs = [
        directional_verdict([0.1, 0.12, 0.11], "a"),
        directional_verdict([-0.1, -0.12, -0.11], "b"),
        directional_verdict([0.1, -0.1], "c"),
    ]
    assert verdict_counts(vs) == {"supported": 1, "contradicted": 1, "inconclusive": 1}
    f = verdict_frame(vs)
    assert list(f["claim"]) == ["a", "b", "c"] and list(f["outcome"]) == ["supported", "contradicted", "inconclusive"]
    with pytest.raises(ValueError, match="finite paired differences"):
        directional_verdict([np.nan, 1.0])
