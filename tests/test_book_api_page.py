"""The API page's generator (book/_ext/api_listing.py): what it documents, and how it escapes."""

import sys
from pathlib import Path

import dpstack

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
import api_listing


def test_every_public_name_is_documented_exactly_once_and_reachable_by_its_top_level_path():
    sections, aliases = api_listing.plan()
    documented = [f"{module}.{name}" for module, entries in sections.items() for name, _ in entries]
    assert len(documented) == len(set(documented))
    objects = [id(obj) for entries in sections.values() for _, obj in entries]
    assert len(objects) == len(set(objects)), "an object is documented twice"
    for name in dpstack.__all__:
        path = f"dpstack.{name}"
        assert path in documented or aliases.get(path) in documented, path
    # An estimator is documented in the module that says what it is, not at the top level.
    assert aliases["dpstack.PrivateLogisticRegression"] == "dpstack.linear.PrivateLogisticRegression"
    assert all(not part.startswith("_") for path in documented for part in path.split("."))


def test_plain_text_habits_are_escaped_only_in_prose():
    lines = [
        "Fit on |D_l| rows; the fitted coef_ and noise_scale_ are kept.",
        "``coef_`` and :math:`|w|` stay literal.",
        "coef_ : ndarray of shape (1, n_features)",
        ".. math::",
        "",
        "    |w|_2 \\le 1",
        "",
        ">>> clf.coef_",
        "| a | b |",
    ]
    api_listing.escape_plain_text(None, "class", "x", None, {}, lines)
    assert lines[0] == "Fit on \\|D_l\\| rows; the fitted coef\\_ and noise_scale\\_ are kept."
    assert lines[1] == "``coef_`` and :math:`|w|` stay literal."
    assert lines[2] == "coef_ : ndarray of shape (1, n_features)"  # napoleon reads this line
    assert lines[5] == "    |w|_2 \\le 1"  # math keeps its bars
    assert lines[7:] == [">>> clf.coef_", "| a | b |"]
