"""The claim registry: every claim's encoding pinned, directions tied to labels, the rule's paths.

``tests/claim_encodings.json`` is the snapshot of every claim's encoding (data status, result,
kind, quantifier, margin and each part's rows, direction and pairing). Changing a claim
makes ``test_claim_encoding_is_pinned`` fail for that claim; a deliberate change rewrites the
snapshot with::

    python -c "import json; from dpstack.companion import verdicts as P; \\
    open('tests/claim_encodings.json','w').write(json.dumps({c.id: P.encoding(c) \\
    for c in P.claims()}, indent=1, ensure_ascii=False, sort_keys=True) + '\\n')"

and the diff of that file is what a reviewer reads.
"""

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpstack.companion import registry
from dpstack.companion import rule as V
from dpstack.companion import verdicts as P

_SNAPSHOT = json.loads((Path(__file__).parent / "claim_encodings.json").read_text(encoding="utf-8"))
_IDS = [c.id for c in P.claims()]


@pytest.mark.parametrize("claim_id", _IDS)
def test_claim_encoding_is_pinned(claim_id):
    assert claim_id in _SNAPSHOT, f"new claim {claim_id}: add it to the snapshot deliberately"
    assert P.encoding(P.claim(claim_id)) == _SNAPSHOT[claim_id]


def test_no_pinned_claim_disappeared():
    assert sorted(_SNAPSHOT) == sorted(_IDS)


def _methods(selector):
    return [v for k, v in selector if k == "method"]


def _claims_with_ordered_labels():
    out = []
    for c in P.claims(judged=True):
        if c.kind != "directional":
            continue
        m = re.match(
            r"^(?P<a>PST-F\(W\)|PST-F\(U\)|PST-H\(U\)|PST-H\(W\)|PPTL-FS\(W\)|PPTL-FS\(R\)|PLR|SimComb|indiv"
            r"|soft|avg)\b.*? > (?P<b>PST-F\(U\)|PST-S|PPHTL|PLR\(target\)|SimComb|SourceD|Direct|vote|indiv"
            r"|PST-F\(W\)|PPTL-FS\(R\))",
            c.label,
        )
        if m:
            out.append((c, m.group("a"), m.group("b")))
    return out


_PST = {"PST-H(W)": "PPTL-FS(W)", "PST-H(U)": "PPTL-FS(R)", "PPHTL": "SimComb", "PLR(target)": "Direct"}


def test_ordered_labels_match_their_parts():
    """A claim labelled "A > B" compares rows of A (minus) rows of B in every part (or A against others)."""
    checked = _claims_with_ordered_labels()
    assert len(checked) >= 7  # the claims whose label starts "A … > B"
    for c, a, b in checked:
        a, b = _PST.get(a, a), _PST.get(b, b)
        left = c.label.split(" > ", 1)[0]
        named = {_PST.get(x, x) for x in left.split(" and ")} if " and " in left else {a}
        for part in c.parts:
            assert len(_methods(part.a)) == 1 and _methods(part.a)[0] in named, (c.id, part.label, "left side")
        if "each" not in c.label and "and" not in c.label.split(" > ", 1)[1]:
            for part in c.parts:
                assert _methods(part.b) == [b], (c.id, part.label, "right side")


def test_part_labels_with_an_ordering_match_their_rows():
    """Part labels "X > Y" (or "> Y") name the rows of their two sides."""
    n = 0
    for c in P.claims(judged=True):
        for part in c.parts:
            m = re.search(r"(?:^|: )(?P<a>[\w\-\(\)]+)? ?> (?P<b>[\w\-\(\)]+)", part.label)
            if not m or isinstance(part.b, float):
                continue
            a, b = m.group("a"), m.group("b")
            sides = [dict(part.a), dict(part.b)]
            for side, name in ((sides[0], a), (sides[1], b)):
                if name is None:
                    continue
                if name.startswith("K="):
                    continue
                key = "combiner" if name.startswith("C-") else "method"
                assert side.get(key) == _PST.get(name, name), (c.id, part.label)
                n += 1
            if m.group("b").startswith("K="):
                assert dict(part.b)["n_groups"] == int(m.group("b")[2:]), (c.id, part.label)
                n += 1
    assert n > 100


def test_planted_direction_flip_is_caught():
    """Reversing "PPTL-FS(R) > SourceD" while keeping its label changes the pinned encoding and the verdict."""
    c = P.claim("pptl.table4.r_consistent")
    flipped = dataclasses.replace(c, parts=tuple(dataclasses.replace(p, a=p.b, b=p.a) for p in c.parts))
    assert flipped.label == c.label
    assert P.encoding(flipped) != _SNAPSHOT[c.id]
    rows = []
    for r in range(10):  # 10 repeats: the sign-flip test's smallest p (2/1024) survives Holm over the two parts
        for b in (1, 2):
            rows.append({"repeat": r, "branch": b, "method": "PPTL-FS(R)", "auc": 0.8 + 0.01 * r})
            rows += [
                {"repeat": r, "branch": b, "method": m, "auc": 0.7 + 0.005 * r * (1 + (m == "SimComb"))}
                for m in ("SourceD", "Direct", "SimComb")
            ]
    frame = pd.DataFrame(rows)
    small = dataclasses.replace(c, parts=tuple(p for p in c.parts if dict(p.a).get("branch") in (1, 2)))
    small_flipped = dataclasses.replace(small, parts=tuple(dataclasses.replace(p, a=p.b, b=p.a) for p in small.parts))
    assert P.judge_claim(small, frame).outcome == "supported"
    assert P.judge_claim(small_flipped, frame).outcome == "contradicted"


def test_only_paper_data_enters_a_papers_tally_and_families_are_separate():
    c = P.claims()
    assert {x.data for x in c} == set(registry.DATA_STATUS)
    assert all(x.data == "synthetic" for x in c if x.dataset == "RUIJIN-like")
    assert all(x.data == "stand-in" for x in c if x.dataset == "MNIST-10")
    assert all(x.paper == "PST" for x in c if x.location.startswith("§4.2, Table 2"))
    frame = pd.DataFrame(
        {"repeat": np.repeat(np.arange(8), 2), "method": ["a", "b"] * 8, "auc": np.r_[[0.9, 0.8] * 8] + 0.0}
    )
    frame.loc[frame["method"] == "a", "auc"] += np.linspace(0, 0.01, 8)
    part = registry.Part("x", registry.sel(method="a"), registry.sel(method="b"))
    mk = lambda i, data: registry.Claim(  # noqa: E731
        id=i,
        paper="PST",
        words="w",
        location="l",
        page="p",
        result="r",
        data=data,
        dataset="d",
        kind="directional",
        label="a > b",
        parts=(part,),
    )
    judged = P.judge(frames={"r": frame}, claim_list=[mk("1", "paper"), mk("2", "synthetic"), mk("3", "stand-in")])
    t = P.tally(judged)
    assert list(t["data"]) == ["paper", "stand-in", "synthetic"] and list(t["total"]) == [1, 1, 1]


def test_repeat_is_the_unit_not_the_pair():
    rng = np.random.default_rng(0)
    rows = []
    for r in range(5):
        shared = rng.normal(0, 0.05)  # one split: every ε of the repeat moves together
        for e in (0.5, 1, 2, 4):
            rows += [
                {"repeat": r, "epsilon": e, "method": "A", "auc": 0.8 + 0.01 + shared + rng.normal(0, 0.001)},
                {"repeat": r, "epsilon": e, "method": "B", "auc": 0.8},
            ]
    f = pd.DataFrame(rows)
    per_repeat = V.repeat_differences(f, {"method": "A"}, {"method": "B"}, pair_on=("epsilon",))
    pairs = V.repeat_differences(f, {"method": "A"}, {"method": "B"}, pair_on=("epsilon",), unit=None)
    assert len(per_repeat) == 5 and len(pairs) == 20
    assert per_repeat.mean() == pytest.approx(pairs.mean())
    # twenty pseudo-replicates give a much narrower interval than the five repeats
    a, b = V.directional_verdict(per_repeat), V.directional_verdict(pairs)
    assert (b.ci_high - b.ci_low) < 0.6 * (a.ci_high - a.ci_low)


def test_every_x_is_judged_per_x_with_holm_inside():
    steady = np.array([0.02, 0.021, 0.019, 0.022, 0.018, 0.02, 0.023, 0.017, 0.021, 0.019])  # 10 repeats, one sign
    up = V.directional_verdict(steady, "ε=1")
    down = V.directional_verdict(-steady, "ε=8")
    weak = V.directional_verdict([0.02, 0.0, 0.03, -0.005, 0.025, -0.01, 0.01, 0.0, -0.02, 0.015], "ε=2")
    assert V.combine_parts([up, up], "c").outcome == "supported"
    mixed = V.combine_parts([up, down], "c")
    assert mixed.outcome == "contradicted" and mixed.at == "ε=8"  # a sign change is never pooled away
    assert V.combine_parts([up, weak], "c").outcome == "inconclusive"
    assert V.combine_parts([down, up], "c", quantifier="some").outcome == "supported"
    # Holm inside: p-values are multiplied by the number of parts at the first step
    parts = V.combine_parts([up, weak, down], "c").parts
    assert parts[2].p_adjusted == pytest.approx(3 * down.p_value) and parts[0].p_adjusted == pytest.approx(
        3 * up.p_value
    )


def test_holm_across_a_family_keeps_raw_and_adjusted():
    base = np.r_[0.01, 0.03, 0.02, 0.025, 0.0, 0.015, 0.02, 0.01, 0.03, -0.002]
    vs = [V.directional_verdict(base + s, str(s)) for s in (0.0, -0.006, -0.015)]  # p = 0.008, 0.033, 0.89
    out = V.adjust_family(vs)
    assert [v.p_value for v in out] == [v.p_value for v in vs]
    assert all(o.p_adjusted >= v.p_value for o, v in zip(out, vs))
    assert np.allclose(V.holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    decided_alone = [v for v in vs if v.outcome != "inconclusive"]
    undone = [o for o, v in zip(out, vs) if v.outcome != "inconclusive" and o.outcome == "inconclusive"]
    assert decided_alone and undone  # Holm takes a decision away …
    for o in undone:  # … and the interval shown is the one at Holm's level: it then covers 0
        assert o.level < 0.05 and o.ci_low <= 0 <= o.ci_high


def test_margins_are_derived_and_written_down():
    for c in P.claims(judged=True):
        if c.margin is not None:
            assert c.margin.value > 0 and "Hanley" in c.margin.derivation or "accuracy" in c.margin.derivation
    assert V.auc_margin(1000, 1000, 0.95) == 0.01
    assert V.auc_margin(100, 100, 0.95) > V.auc_margin(1000, 1000, 0.95)  # a smaller test set, a wider margin
    with pytest.raises(ValueError, match="level"):
        V.auc_margin(10, 10, 1.2)


def _variant_frames():
    rows = []
    for r in range(6):
        rows += [{"repeat": r, "method": "a", "auc": 0.9 + 0.002 * r}, {"repeat": r, "method": "b", "auc": 0.85}]
    good = pd.DataFrame(rows)
    flipped = good.assign(auc=np.where(good["method"] == "a", 0.8 + 0.001 * good["repeat"], 0.85))
    return good, flipped


def _toy_claims():
    part = registry.Part("x", registry.sel(method="a"), registry.sel(method="b"))
    return [
        registry.Claim(
            id="toy",
            paper="PST",
            words="a is better",
            location="l",
            page="p",
            result="toy_result",
            data="paper",
            dataset="d",
            kind="directional",
            label="a > b",
            parts=(part,),
        )
    ]


def test_robust_column_from_variant_frames():
    good, flipped = _variant_frames()
    judged = P.judge(frames={"toy_result": good}, claim_list=_toy_claims())
    assert list(judged["verdict"]) == ["supported"]
    same = P.robust_column(judged, variants=lambda name: {"refit": good, "rows ÷ 4": good})
    assert same.iloc[0] == "yes (refit, rows ÷ 4)"
    differ = P.robust_column(judged, variants=lambda name: {"refit": good, "rows ÷ 4": flipped})
    assert differ.iloc[0] == "holds: refit; reversed: rows ÷ 4 → contradicted"
    weak = good.assign(auc=np.where(good["method"] == "a", 0.85 + 0.01 * (good["repeat"] % 2 - 0.4), 0.85))
    lost = P.robust_column(judged, variants=lambda name: {"refit": good, "10 repeats": weak})
    assert lost.iloc[0] == "holds: refit; decided → inconclusive: 10 repeats"  # lost power is not a reversal
    none = P.robust_column(judged, variants=lambda name: {})
    assert none.iloc[0] == "not run"
    partial = good[good["method"] == "a"]  # a variant without the other side's rows judges nothing, visibly
    assert P.robust_column(judged, variants=lambda name: {"rows ÷ 4": partial}).iloc[0] == (
        "not run; not measured: rows ÷ 4"
    )


def test_the_robust_column_names_every_variant_of_the_claims_result():
    """Planted: a variant dropped from the text (the "holds", "not measured" or "not applicable" part) fails here."""
    good, flipped = _variant_frames()
    partial = good[good["method"] == "a"]
    judged = P.judge(frames={"toy_result": good}, claim_list=_toy_claims())
    variants = {"refit": good, "rows ÷ 2": good, "rows ÷ 4": flipped, "rows ÷ 8": partial, "30 repeats": good}
    notes = {"redrawn": "not applicable: one data set", "rows ÷ 16": "not computed yet: rows ÷ 16"}
    text = P.robust_column(judged, variants=lambda name: variants, notes=lambda name: notes).iloc[0]
    assert text == (
        "holds: refit, rows ÷ 2, 30 repeats; reversed: rows ÷ 4 → contradicted; not measured: rows ÷ 8; "
        "not computed yet: rows ÷ 16; redrawn: not applicable (one data set)"
    )
    for label in [*variants, *notes]:
        assert label in text, label  # every protocol of the result is named, whatever its outcome
    table = P.robust_table(judged, variants=lambda name: variants, notes=lambda name: notes)
    order = ["refit", "rows ÷ 2", "rows ÷ 4", "rows ÷ 8", "rows ÷ 16", "30 repeats", "redrawn"]  # refit, scales, rest
    assert list(table.columns) == ["claim", "page", "as in the book", *order, "robust"]
    row = table.iloc[0]
    assert row["as in the book"] == "supported" and row["rows ÷ 4"] == "contradicted" and row["refit"] == "supported"
    assert row["rows ÷ 8"] == "not measured" and row["redrawn"].startswith("not applicable") and row["robust"] == text
    other = P.judge(frames={"toy_result": good}, claim_list=[*_toy_claims()])
    other["data"] = "synthetic"
    assert (
        P.robust_column(other, variants=lambda name: {}).iloc[0] == "not run (synthetic data, not in the paper's tally)"
    )


def test_the_robust_column_judges_each_variant_on_the_variant_not_the_primary():
    """Planted: re-judging the primary frame instead of each variant's (a column blind to the variant) fails here."""
    good, flipped = _variant_frames()
    judged = P.judge(frames={"toy_result": good}, claim_list=_toy_claims())
    seen = []

    def variants(name):
        seen.append(name)
        return {"rows ÷ 4": flipped}

    assert P.robust_column(judged, variants=variants).iloc[0] == "reversed: rows ÷ 4 → contradicted"
    assert seen == ["toy_result"]


def test_robust_column_says_not_run_without_the_protocols_module(monkeypatch):
    good, _ = _variant_frames()
    judged = P.judge(frames={"toy_result": good}, claim_list=_toy_claims())
    monkeypatch.setattr(P, "_variants_provider", lambda: None)
    assert P.robust_column(judged).iloc[0] == "not run"
