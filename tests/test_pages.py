"""The registry of pages that judge the papers' claims, and the counts per paper (dpstack.companion.pages)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from test_prose_numbers import _COUNTS as COUNTS  # the one pattern of a counts sentence

from dpstack.companion import pages, results
from dpstack.companion.papers.mpl import pages as mpl_report
from dpstack.companion.papers.mpl.grids import DP_NOISE, EXP_NOISE, data_status
from dpstack.companion.papers.stacked_pages import source_sentence
from dpstack.companion.rule import counts_sentence, directional_verdict, verdict_counts

ROOT = Path(__file__).resolve().parents[1]

UP = np.array([0.9, 1.1, 1.0, 1.2, 0.8])  # clearly above 0: supported
SUPPORTED = directional_verdict(UP, claim="up")
CONTRADICTED = directional_verdict(-UP, claim="down")
INCONCLUSIVE = directional_verdict(np.array([1.0, -1.0, 0.5, -0.5, 0.1]), claim="either")


def test_the_three_kinds_of_verdict_used_below_are_what_they_say():
    assert [v.outcome for v in (SUPPORTED, CONTRADICTED, INCONCLUSIVE)] == ["supported", "contradicted", "inconclusive"]


@pytest.fixture
def registry(monkeypatch):
    """An empty registry for the test; the book's is restored afterwards."""
    monkeypatch.setattr(pages, "PAGE_CLAIMS", {})
    return pages


def test_register_page_checks_its_arguments(registry):
    with pytest.raises(ValueError, match="paper"):
        registry.register_page("x", "PSTX", list)
    with pytest.raises(ValueError, match="page"):
        registry.register_page("notebooks/x", "PST", list)
    with pytest.raises(TypeError, match="verdicts"):
        registry.register_page("x", "PST", [SUPPORTED])
    with pytest.raises(TypeError, match="uncounted"):
        registry.register_page("x", "PST", list, uncounted=[("label", [SUPPORTED])])
    with pytest.raises(KeyError, match="page"):
        registry.page_verdicts("never_registered")
    registry.register_page("x", "PST", lambda: ["supported"])
    with pytest.raises(TypeError, match="Verdict"):
        registry.page_verdicts("x")


def test_counts_add_up_per_paper_leaving_out_uncounted_verdicts_and_pages_without_data(registry):
    def never():
        raise AssertionError("a page without its data must not be judged")

    registry.register_page(
        "a", "PST", lambda: [SUPPORTED, SUPPORTED, CONTRADICTED], uncounted=[("other noise", lambda: [INCONCLUSIVE])]
    )
    registry.register_page("b", "PST", never, status=lambda: "Data absent: no files", uncounted=[("x", never)])
    registry.register_page("c", "PPTL", lambda: [INCONCLUSIVE, SUPPORTED])
    assert registry.page_verdicts("b") is None

    breakdown = registry.page_counts()
    assert list(breakdown["page"]) == ["a", "a", "b", "c"]
    assert list(breakdown["counted"]) == [True, False, True, True]
    assert list(breakdown["data"]) == ["present", "present", "absent", "present"]
    assert breakdown.loc[1, ["supported", "contradicted", "inconclusive", "total"]].tolist() == [0, 0, 1, 1]
    assert breakdown.loc[2, ["supported", "total"]].isna().all()

    counts = registry.claim_counts(breakdown).set_index("paper")
    assert list(counts.index) == ["PST", "PPTL"]  # the papers' order; MPL has no page here
    assert counts.loc["PST", ["pages", "supported", "contradicted", "inconclusive", "total"]].tolist() == [
        1,
        2,
        1,
        0,
        3,
    ]
    assert counts.loc["PST", "data absent"] == "b"
    assert counts.loc["PPTL", ["pages", "supported", "contradicted", "inconclusive", "total"]].tolist() == [
        1,
        1,
        0,
        1,
        2,
    ]
    assert counts.loc["PPTL", "data absent"] == ""
    assert registry.claims_sentences(counts.reset_index()) == [
        "PST: 2 of 3 claims supported, 1 contradicted, 0 inconclusive, on 1 page (b: data absent here).",
        "PPTL: 1 of 2 claims supported, 0 contradicted, 1 inconclusive, on 1 page.",
    ]


def test_counts_sentence_takes_counts_already_made():
    counts = {"supported": 3, "contradicted": 1, "inconclusive": 2}
    assert verdict_counts(counts) == counts
    assert counts_sentence(counts) == "3 of 6 claims supported, 1 contradicted, 2 inconclusive."
    with pytest.raises(ValueError, match="inconclusive"):
        verdict_counts({"supported": 1, "contradicted": 0})


def test_every_mpl_page_is_registered_and_every_registered_page_is_in_the_sidebar():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    sidebar = {chapter["file"].split("/", 1)[1] for part in toc["parts"] for chapter in part["chapters"]}
    assert {info["page"] for info in mpl_report.PAGES.values()} <= set(pages.PAGE_CLAIMS)
    assert set(pages.PAGE_CLAIMS) <= sidebar
    assert all(entry.paper == "MPL" for page, entry in pages.PAGE_CLAIMS.items() if page.startswith("mpl_"))


def test_the_mpl_counts_are_the_committed_paper_profile_verdicts(monkeypatch):
    def no_live_run(*args, **kwargs):
        raise AssertionError("the counts must read the committed results, not compute them")

    monkeypatch.setattr(results, "compute", no_live_run)
    breakdown = pages.page_counts().set_index(["page", "counted"])
    judged = 0
    for dataset, info in mpl_report.PAGES.items():
        page = info["page"]
        if data_status(dataset) is not None:
            assert pages.page_verdicts(page) is None and breakdown.loc[(page, True), "data"] == "absent"
            continue
        frame = results.load(page, "paper")
        for counted, noise in ((True, DP_NOISE), (False, EXP_NOISE)):
            expected = verdict_counts(mpl_report.judge_claims(frame, dataset, noise))
            row = breakdown.loc[(page, counted)]
            assert {o: int(row[o]) for o in expected} == expected, (page, noise)
        judged += 1
    if judged == 0:
        pytest.skip("no MPL data here")
    counts = pages.claim_counts().set_index("paper")
    present = breakdown.xs(True, level="counted")
    present = present[present["paper"] == "MPL"]
    assert counts.loc["MPL", "total"] == present["total"].sum() > 0
    assert counts.loc["MPL", "pages"] == judged


def shown_counts(notebook):
    """Sum of the counts sentences ("k of n claims supported, c contradicted, i inconclusive") a page shows."""
    import re

    import nbformat

    total = {"supported": 0, "total": 0, "contradicted": 0, "inconclusive": 0}
    for cell in nbformat.read(notebook, as_version=4).cells:
        for output in cell.get("outputs", []):
            text = output.get("data", {}).get("text/markdown", "") or output.get("text", "")
            html = output.get("data", {}).get("text/html", "")
            if "</table>" in html:  # the counts sentence under a verdict table
                text += re.sub(r"<[^>]+>", "", html.rsplit("</table>", 1)[1])
            for m in COUNTS.finditer(text):
                for key, value in zip(("supported", "total", "contradicted", "inconclusive"), map(int, m.groups())):
                    total[key] += value
    return total


@pytest.mark.parametrize(
    "page",
    [
        "pst_fig1_epsilon",
        "pst_fig2_groups",
        "pst_fig3_importance",
        "pst_fig4_combiners",
        "pptl_table1_mnist",
        "ruijin_transfer",
    ],
)
def test_each_page_states_the_verdicts_of_its_committed_results(page, monkeypatch):
    """The verdict counts a page shows are those its committed paper-profile results give today."""
    from dpstack.companion import show

    monkeypatch.setattr(results, "compute", lambda *a, **k: pytest.fail("a committed result is missing"))
    rows = show.judged(page)
    run = rows[rows["verdict"].isin(("supported", "contradicted", "inconclusive"))]
    if run.empty:
        pytest.skip(f"{page}: data absent here")
    expected = {key: int((run["verdict"] == key).sum()) for key in ("supported", "contradicted", "inconclusive")}
    expected["total"] = len(run)
    assert shown_counts(ROOT / "notebooks" / f"{page}.ipynb") == expected, (
        f"{page} shows other verdicts than its committed results give: re-execute the page "
        f"(python scripts/run_notebooks.py notebooks/{page}.ipynb)"
    )


def test_a_page_showing_other_verdicts_is_caught(tmp_path, monkeypatch):
    """Planted: one counts sentence of a page changed by one claim."""
    import nbformat

    page = "pst_fig4_combiners"
    monkeypatch.setattr(results, "compute", lambda *a, **k: pytest.fail("a committed result is missing"))
    if pages.page_verdicts(page) is None:
        pytest.skip("data absent here")
    nb = nbformat.read(ROOT / "notebooks" / f"{page}.ipynb", as_version=4)
    before = shown_counts(ROOT / "notebooks" / f"{page}.ipynb")
    planted = False
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            text = output.get("data", {}).get("text/html", "")
            m = COUNTS.search(text.rsplit("</table>", 1)[-1])
            if m and not planted:
                k, n, c, i = map(int, m.groups())
                output["data"]["text/html"] = text.replace(
                    m.group(), f"{k - 1} of {n} claims supported, {c + 1} contradicted, {i} inconclusive"
                )
                planted = True
    assert planted
    nbformat.write(nb, tmp_path / "planted.ipynb")
    assert shown_counts(tmp_path / "planted.ipynb")["supported"] == before["supported"] - 1


@pytest.mark.parametrize(("repeats", "said"), [(1, " 1 repeat."), (3, " 3 repeats.")])
def test_source_sentence_counts_the_repeats_in_the_right_number(repeats, said):
    frame = pd.DataFrame({"repeat": np.repeat(np.arange(repeats), 2), "auc": 0.5})
    frame.attrs["provenance"] = {"source": "live", "profile": "quick"}
    assert source_sentence(frame) == f"Numbers computed on this page, with the parameters above.{said}"
    assert source_sentence(frame, repeats=None).endswith("with the parameters above.")
    # A reader's sentence: no file, machine, job count, profile name or command.
    frame.attrs["provenance"] = {
        "source": "committed",
        "name": "x",
        "profile": "paper",
        "date": "2026-11-25T10:00",
        "machine": {"cpu": "AMD EPYC"},
        "n_jobs": 2,
        "wall_time_s": 3.0,
    }
    said = source_sentence(frame)
    assert "computed 2026-11-25" in said and "How this book is built" in said
    assert not any(w in said for w in ("results/", "EPYC", "n_jobs", "profile", "make ", "python -m"))
