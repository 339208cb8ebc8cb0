"""The shared claim rule: effect, 95 % interval, supported / contradicted / inconclusive."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dpstack.companion.rule import (
    AUC_MARGIN,
    directional_verdict,
    equivalence_verdict,
    noninferiority_verdict,
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


def test_inconclusive_says_how_many_repeats_would_decide_at_80_percent_power():
    rng = np.random.default_rng(2)
    d = 0.01 + rng.normal(0, 0.05, size=4)
    d += 0.01 - d.mean()
    v = directional_verdict(d, "C-hl beats C-mv")
    assert v.outcome == "inconclusive" and v.decides == "supported"
    n = int(v.repeats_to_decide)
    delta = 0.01 / d.std(ddof=1)

    def power(k):  # the two-sided t-test's power, from scipy's noncentral t directly
        crit = stats.t.ppf(0.975, k - 1)
        return stats.nct.sf(crit, k - 1, delta * np.sqrt(k)) + stats.nct.cdf(-crit, k - 1, delta * np.sqrt(k))

    assert power(n) >= 0.8 > power(n - 1)
    # about the normal-approximation count ((z_.975 + z_.8) sd / mean)^2, never the 50 %-power one
    z = ((stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) / delta) ** 2
    assert z <= n <= z + 3 and n > math.ceil((1.96 / delta) ** 2) * 1.8
    against = directional_verdict(-d, "reversed")
    assert against.decides == "contradicted" and against.repeats_to_decide == n
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


def test_noninferiority_reports_the_raw_difference_and_uses_the_margin():
    slightly_worse = [-0.002, -0.003, -0.001, -0.002, -0.0025]
    v = noninferiority_verdict(slightly_worse, margin=AUC_MARGIN, claim="A not worse than B")
    assert v.outcome == "supported" and v.kind == "non-inferiority" and v.margin == AUC_MARGIN
    assert v.effect == pytest.approx(np.mean(slightly_worse)) and v.ci_high < 0  # below 0, above −margin
    assert directional_verdict(slightly_worse).outcome == "contradicted"  # the directional claim would fail
    much_worse = [-0.05, -0.051, -0.049, -0.05]
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
