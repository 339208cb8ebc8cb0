"""The tuning-protocol page's prose and tables (dpstack.companion.chapters.ablation): generated, in a reader's words."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpstack.companion.chapters import ablation as A
from dpstack.companion.papers import open_choices as shared

ROOT = Path(__file__).resolve().parents[1]
# Words of the project's history, not of the reader's question.
CHANGELOG_WORDS = (
    "old defaults",
    "new defaults",
    "default now",
    "grids before",
    "OLD_",
    "old grid",
    "new grid",
    "old, ",
)


def frame(methods, variants, n=10, epsilon=0.5, collapse=None, seed=0, transfer=False):
    """A tidy factor grid: AUC 0.8 + noise; the book's protocol +0.1; ``collapse`` = (method, variant, repeat)."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in methods:
        for v in variants:
            for r in range(n):
                auc = 0.8 + rng.normal(0, 0.01) + (0.1 if v == A.RECOMMENDED else 0.0)
                if collapse == (m, v, r):
                    auc = 0.01
                row = dict(
                    method=m,
                    variant=v,
                    repeat=r,
                    epsilon=epsilon,
                    auc=auc,
                    auc_oracle=auc + 0.001,
                    lam=1e-2,
                    lam_high=1e-1,
                    n_candidates=30,
                )
                if transfer:
                    row.update(auc_fit=auc, eta=0.1)
                rows.append(row)
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def grids():
    pst = frame(["PLR", "PST-F(U)"], list(shared.PST_FACTOR_VARIANTS), epsilon=0.1, collapse=("PST-F(U)", A.SIMPLE, 3))
    tr = frame(
        ["PPTL-FS(W)", "Direct"], list(shared.FACTOR_VARIANTS), transfer=True, collapse=("PPTL-FS(W)", A.SIMPLE, 5)
    )
    sw = pd.DataFrame(
        {
            "case": ["a"] * 6 + ["b"] * 4,
            "signal": [0.1] * 6 + [2.0] * 4,
            "noise": [1.0] * 10,
            "auc_hl": [0.3, 0.4, 0.9, 0.9, 0.9, 0.9, 0.95, 0.95, 0.95, 0.95],
            "auc_best_single": [0.97] * 10,
            "auc_wmv": [0.7] * 10,
        }
    )
    abl = frame(["PLR", "PST-F(W)"], list(shared.ABLATION_VARIANTS))
    return pst, tr, sw, abl


def test_the_key_finding_states_the_results_numbers(grids):
    pst, tr, sw, _ = grids
    text = A.key_finding(pst, tr, sw)
    simple = tr[(tr["method"] == "PPTL-FS(W)") & (tr["variant"] == A.SIMPLE)]["auc"]
    book = tr[(tr["method"] == "PPTL-FS(W)") & (tr["variant"] == A.RECOMMENDED)]["auc"]
    assert f"PPTL-FS(W) 0.010 under the simple protocol and {book.min():.3f} under the book's" in text
    assert f"(mean {simple.mean():.3f} and {book.mean():.3f}, ε = 0.5)" in text
    rec = pst[(pst["method"] == "PST-F(U)") & (pst["variant"] == A.RECOMMENDED)]["auc"]
    assert f"and {rec.min():.3f} (mean" in text and f"and {rec.mean():.3f}, ε = 0.1)" in text
    assert "the book's protocol against the simple one: better for PST-F(U) (+0.1" in text  # +0.1 on every repeat
    assert "and PPTL-FS(W) (+0.1" in text
    assert "below AUC 0.5 in 2 of the 6 fits whose high-level noise exceeded its signal, and in 0 of the 4" in text


def test_no_project_history_in_the_pages_words(grids):
    pst, tr, sw, abl = grids
    texts = [
        A.key_finding(pst, tr, sw),
        A.refit_text(tr),
        A.selection_text(pst, tr),
        A.swing_text(sw),
        A.recommendation(pst, tr, abl),
    ]
    tables = [
        A.effects_table(A.factor_effects(pst)),
        A.verdict_table(A.factor_verdicts(pst, tr)),
        A.choices_table(abl),
        A.beside_table(tr),
        A.swing_table(sw),
    ]
    texts += [t.to_csv() for t in tables]
    for text in texts:
        for word in CHANGELOG_WORDS:
            assert word not in text, f"{word!r} in {text[:200]!r}"
    nb = json.loads((ROOT / "notebooks" / "stacking_ablation.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        hidden = "remove-input" in cell["metadata"].get("tags", []) or "remove-cell" in cell["metadata"].get("tags", [])
        if cell["cell_type"] == "markdown" or not hidden:
            for word in CHANGELOG_WORDS[:5] + ("OLD_LAM_GRIDS",):
                assert word not in source, f"{word!r} in a visible cell: {source[:200]!r}"


def test_every_variant_of_the_grids_has_a_readers_label_and_the_protocols_are_the_experiments():
    for name in [*shared.FACTOR_VARIANTS, *shared.ABLATION_VARIANTS, "old grid", "new grid"]:
        assert name in A.VARIANT_LABELS, name
    # "every other page uses the book's protocol": the experiments' defaults are its options
    assert shared.FACTOR_VARIANTS[A.RECOMMENDED] == shared.DEFAULT_OPTIONS
    assert shared.FACTOR_VARIANTS[A.SIMPLE] == shared.OLD_DEFAULT_OPTIONS


def test_the_page_opens_with_the_key_finding_then_question_order():
    nb = json.loads((ROOT / "notebooks" / "stacking_ablation.ipynb").read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in nb["cells"]]

    def where(text):
        return next(i for i, s in enumerate(sources) if text in s)

    steps = [
        "**The question.**",
        "A.key_finding(",
        "## What we varied",
        "## What it changes",
        "## Recommendation",
        "A.recommendation(",
    ]
    assert [where(t) for t in steps] == sorted(where(t) for t in steps)
    assert where("A.key_finding(") <= 4  # in the first screen: title, parameters, set-up, then the finding


def test_the_refit_advice_says_the_refit_is_the_books_co_primary_protocol(grids):
    """The recommendation's refit line ends by saying how the book uses the refit (planted: the sentence left out)."""
    pst, tr, _, abl = grids
    text = A.recommendation(pst, tr, abl)
    (line,) = [x for x in text.splitlines() if "refitting it (every method)" in x]
    assert line.endswith(A.REFIT_PROTOCOL)
    assert "co-primary" in A.REFIT_PROTOCOL and "validated model as their primary protocol" in A.REFIT_PROTOCOL
    assert sum(A.REFIT_PROTOCOL in x for x in text.splitlines()) == 1  # on the refit line only
