"""The committed verdicts (results/verdicts.json): fresh, equal to a fresh judgement, and rendered alike."""

import json
import shutil

import pandas as pd
import pytest

from dpstack.companion import show, verdict_store
from dpstack.companion.verdicts import claims


@pytest.fixture(scope="module")
def judged_now():
    """Every claim judged anew on the committed results (minutes: done once)."""
    return verdict_store.judge_with_robust()


def test_the_committed_store_is_fresh():
    why = verdict_store.freshness()
    assert why == "", f"{why}: run `python -m dpstack.companion verdicts` and commit results/verdicts.json"


def test_the_committed_store_equals_a_fresh_judgement(judged_now):
    committed = json.loads(verdict_store.store_path().read_text(encoding="utf-8"))
    again = verdict_store.build(judged_now)
    assert again["key"] == committed["key"]
    assert again["columns"] == committed["columns"] and again["dtypes"] == committed["dtypes"]
    for mine, stored in zip(again["rows"], committed["rows"], strict=True):
        assert json.dumps(mine, sort_keys=True) == json.dumps(stored, sort_keys=True), mine["id"]


def test_the_loaded_frame_renders_every_page_as_the_judged_one(judged_now, monkeypatch):
    """Verdict boxes and claim tables of every page, from the store and from the fresh judgement: the same HTML."""
    loaded = verdict_store.load()
    assert loaded is not None
    pd.testing.assert_frame_equal(
        loaded.drop(columns=["verdict_obj", "claim_obj", "robust_changes"]),
        judged_now.drop(columns=["verdict_obj", "claim_obj", "robust_changes"]),
    )
    assert list(loaded["claim_obj"]) == list(judged_now["claim_obj"])
    as_text = lambda frame: json.dumps(verdict_store._rows(frame), sort_keys=True)  # noqa: E731 (NaN equal to NaN)
    assert as_text(loaded) == as_text(judged_now)  # the verdicts with their parts, the robust changes
    pages = sorted({c.page for c in claims()})

    def rendered(frame):
        monkeypatch.setattr(show, "_stored", lambda: frame)
        show._judged_committed.cache_clear()
        try:
            return {p: (show.verdict_box(p).data, show.verdict_table(p).data) for p in pages}
        finally:
            show._judged_committed.cache_clear()

    assert rendered(loaded) == rendered(judged_now)


def test_a_family_read_from_the_store_equals_the_family_judged_alone(judged_now):
    """Holm runs within a paper's claims on one kind of data: a page's families judged alone give the same rows."""
    families = frozenset({("MPL", "paper")})
    alone = verdict_store.judge_with_robust(show._family_claims(families))
    part = judged_now[(judged_now["paper"] == "MPL") & (judged_now["data"] == "paper")].reset_index(drop=True)
    pd.testing.assert_frame_equal(
        alone.drop(columns=["verdict_obj", "claim_obj", "robust_changes"]),
        part.drop(columns=["verdict_obj", "claim_obj", "robust_changes"]),
    )


def test_staleness_names_the_changed_code_or_result(tmp_path):
    """Planted: a recorded code hash that differs, a result table edited, a result committed since; each named."""
    root = tmp_path / "results"
    content = json.loads(verdict_store.store_path().read_text(encoding="utf-8"))
    read = content["key"]["results"]
    root.mkdir()
    for name in read:
        shutil.copytree(verdict_store.store_path().parent / name, root / name)
    assert verdict_store.freshness(content, root) == ""

    code = dict(content, key=dict(content["key"], code=dict(content["key"]["code"])))
    first = next(iter(code["key"]["code"]))
    code["key"]["code"][first] = "0" * 64
    assert verdict_store.freshness(code, root) == f"the judging code changed ({first})"

    name = sorted(read)[0]
    csv = root / name / "paper.csv"
    csv.write_bytes(csv.read_bytes() + b"\n")
    assert verdict_store.freshness(content, root) == f"the committed result {name} was changed or removed"
    csv.unlink()
    assert verdict_store.freshness(content, root) == f"the committed result {name} was changed or removed"
    shutil.copytree(verdict_store.store_path().parent / name, root / name, dirs_exist_ok=True)

    unread = [n for n in content["key"]["read"] if n not in read]
    if unread:  # a variant registered but not committed when the store was written
        (root / unread[0]).mkdir()
        (root / unread[0] / "paper.csv").write_text("a\n1\n")
        (root / unread[0] / "paper.json").write_text("{}")
        assert verdict_store.freshness(content, root) == f"the committed result {unread[0]} was committed since"


def test_a_stale_store_is_not_read_and_says_why(tmp_path):
    """load() returns None with a warning naming the reason; the pages then judge anew."""
    root = tmp_path / "results"
    root.mkdir()
    content = json.loads(verdict_store.store_path().read_text(encoding="utf-8"))
    (root / verdict_store.STORE_NAME).write_text(json.dumps(content))
    with pytest.warns(UserWarning, match=r"the committed verdicts are stale: the committed result .* was changed"):
        assert verdict_store.load(root) is None
    assert verdict_store.load(tmp_path / "nowhere", warn=True) is None  # absent: no store, no warning
