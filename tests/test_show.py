"""The verdicts as the book shows them: four narrow columns, the detail collapsible, the box, the findings."""

import html
import re

import numpy as np
import pandas as pd

from dpstack.companion import registry, show
from dpstack.companion import verdicts as P


def _frame():
    rng = np.random.default_rng(0)
    rows = []
    for r in range(12):  # enough repeats for the sign-flip test to decide after Holm inside and across claims
        for e in (0.5, 1.0):
            rows += [
                {"repeat": r, "epsilon": e, "method": "a", "auc": 0.9 + rng.normal(0, 0.005)},
                {"repeat": r, "epsilon": e, "method": "b", "auc": 0.8 + rng.normal(0, 0.005)},
                {"repeat": r, "epsilon": e, "method": "c", "auc": 0.9 + rng.normal(0, 0.05)},
            ]
    return pd.DataFrame(rows)


def _claims():
    def claim(i, a, b, data="paper", kind="directional", margin=None):
        parts = tuple(
            registry.Part(f"ε={e:g}", registry.sel(method=a, epsilon=e), registry.sel(method=b, epsilon=e))
            for e in (0.5, 1.0)
        )
        return registry.Claim(
            id=i,
            paper="PST",
            words=f"{a} beats {b}",
            location="§4.1, Figure 1",
            page="p",
            result="r",
            data=data,
            dataset="MNIST",
            kind=kind,
            label=f"{a} > {b} at every ε",
            parts=parts,
            margin=margin,
        )

    m = registry.Margin(0.01, "AUC", "MNIST", "a derivation written down")
    return [
        claim("up", "a", "b"),
        claim("down", "b", "a"),
        claim("noisy", "c", "a"),
        claim("eq", "a", "c", kind="equivalence", margin=m),
        claim("synthetic", "a", "b", data="synthetic"),
    ]


def _rows():
    j = P.judge(frames={"r": _frame()}, claim_list=_claims())
    j["robust"] = P.robust_column(j, variants=lambda name: {})
    return j


def test_the_claim_table_has_four_columns_and_the_detail_in_a_collapsible():
    rows = _rows()
    html = show.verdict_table(rows=rows).data
    assert re.findall(r"<th>(.*?)</th>", html.split("</thead>")[0]) == [
        "claim (click for the detail)",
        "verdict",
        "effect [interval]",
        "robust",
    ]
    body = html.split("<tbody>")[1]
    assert body.count("<tr") == len(rows) and body.count("<details>") == len(rows)
    first = body.split("</tr>")[0]
    assert "“a beats b”" in first and "§4.1, Figure 1" in first  # the paper's words, in the detail only
    assert "Holm over the paper's claims" in first and "Repeats</b>: 12" in first
    assert "ε=0.5: supported" in first and "ε=1: supported" in first  # the verdict at each x
    eq = body.split("</tr>")[3]
    assert "Margin</b> ±0.01 AUC: a derivation written down" in eq
    noisy = body.split("</tr>")[2]
    assert "inconclusive" in noisy and "sign-flip test" in noisy and "% CI (Holm)" in noisy
    # a table mixing the paper's data and the synthetic cohort counts each apart, the paper's data first
    counts = re.search(r'<p class="dpstack-verdict-counts"><em>(.*?)</em></p>', html).group(1)
    assert counts.startswith("This table, counted per kind of data"), counts
    assert re.search(r"on the paper&#x27;s data: \d+ of 4 claims supported, \d+ contradicted", counts), counts
    assert re.search(r"RUIJIN-like cohort .*: \d+ of 1 claims supported", counts), counts
    assert counts.index("paper&#x27;s data") < counts.index("RUIJIN-like")
    one_kind = show.verdict_table(rows=rows[rows["data"] == "paper"])
    one_kind = getattr(one_kind, "data", one_kind)
    assert re.search(r"<em>\d+ of 4 claims supported, \d+ contradicted, \d+ inconclusive\.</em>", one_kind)


def test_the_verdict_box_counts_each_kind_of_data_apart(monkeypatch):
    rows = _rows()
    monkeypatch.setattr(show, "judged", lambda page=None, frames=None: rows)
    box = html.unescape(re.sub(r"<[^>]+>", "", show.verdict_box("p").data))
    paper = rows[rows["data"] == "paper"]
    n_sup = int((paper["verdict"] == "supported").sum())
    assert f"{n_sup} of {len(paper)} supported" in box and "on the paper's data" in box
    assert "1 of 1 supported" in box and "synthetic RUIJIN-like cohort" in box
    assert "Contradicted: b > a at every ε (MNIST, −0.099 [" in box
    assert "protocol variants: not run" in box


def test_effect_text_and_missing_values():
    row = {"verdict": "supported", "effect": 0.0123, "ci_low": -0.001, "ci_high": 0.0256}
    assert show.effect_text(row) == "+0.012 [−0.001, +0.026]"
    assert show.effect_text({**row, "verdict": "not run"}) == "–"
    assert show.effect_text({**row, "ci_low": float("nan")}) == "+0.012"


def _changes(run, **kinds):
    every = {k: list(kinds.get(k.replace(" → ", "_to_").replace(" ", "_"), [])) for k in P.CHANGES}
    return {"run": run, "verdicts": {}, "kinds": every, "not measured": [], "pending": [], "not applicable": []}


def test_the_robust_sentence_counts_the_verdicts_that_hold_under_every_variant():
    """Counted from the structured changes, not the column's text.

    Planted: a claim not judged under any variant counted as one, a lost decision counted as a
    reversal, or a claim true by construction counted, fails here."""
    j = _rows()
    paper = j.index[j["data"] == "paper"]
    assert len(paper) >= 4
    plan = [
        _changes(["refit", "rows ÷ 4"], holds=["refit", "rows ÷ 4"]),
        _changes(["refit", "rows ÷ 4"], holds=["refit"], decided_to_inconclusive=["rows ÷ 4"]),
        None,  # not judged under any variant
        _changes(["refit", "rows ÷ 4"], holds=["refit"], reversed=["rows ÷ 4"]),
    ]
    j["robust_changes"] = None
    j["robust_changes"] = j["robust_changes"].astype(object)
    for i, ch in zip(paper, plan):
        j.at[i, "robust_changes"] = ch
    j["by_construction"] = ""
    text = show.robust_sentence(j)
    assert text.startswith("Under the protocol variants run (refit, rows ÷ 4): ")
    assert "1 of 3 verdicts hold under every one; 1 reverse under some (" in text and "under rows ÷ 4)" in text
    assert "1 lose their decision under some" in text and "; 1 not run under any variant yet." in text
    assert show.robust_sentence(j, detail=False).endswith(
        "0 of the inconclusive are decided under some; 1 not run under any variant yet."
    )
    # a claim true by construction is left out, as from the tallies
    j.at[paper[3], "by_construction"] = "the grid makes both sides one model"
    assert "1 of 2 verdicts hold under every one; 0 reverse under some" in show.robust_sentence(j)
    j["robust_changes"] = None
    assert show.robust_sentence(j) == ""


def test_the_claim_detail_names_its_result_in_words_not_by_its_registry_name():
    html = show.verdict_table("mpl_kdd").data
    assert "result: MPL §6 accuracy against 1/ε on KDD." in html
    assert "mpl_kdd" not in html and "mpl_trial" not in html


def test_a_verdict_box_without_protocol_variants_does_not_point_to_their_column():
    stand_in = show.verdict_box("mpl_mnist10").data
    assert "Robustness to the protocol variants: not run." in stand_in
    assert "its robust column says" not in stand_in  # the column holds only "not run" there
    assert "its robust column says" in show.verdict_box("mpl_kdd").data
