"""The API pages' generator (book/_ext/api_listing.py): what it documents, on which page, how it escapes."""

import sys
from pathlib import Path

import dpstack

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import api_listing  # noqa: E402


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


def test_every_documented_module_is_on_exactly_one_page_and_every_page_is_in_the_book():
    sections, _ = api_listing.plan()
    pages = api_listing.pages()
    on_pages = [module for modules in pages.values() for module in modules]
    assert sorted(on_pages) == sorted(sections)
    # A subpackage's submodules share its page, except those of a split subpackage.
    assert api_listing.page_of("dpstack.audit.mutants") == "audit"
    assert api_listing.page_of("dpstack.companion.live") == "companion.live"
    assert api_listing.page_of("dpstack.companion") == "companion"
    assert api_listing.page_of("dpstack.companion.papers.pst.grids") == "companion.papers.pst"
    assert api_listing.page_of("dpstack.companion.papers.open_choices") == "companion.papers.open_choices"
    assert api_listing.page_of("dpstack.companion.chapters.plr") == "companion.chapters.plr"
    # The committed page files are exactly what the generator writes (else: python book/_ext/api_listing.py).
    folder = ROOT / api_listing.PAGE_DIR
    files = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.md")}
    assert files == {f"{slug}.md": api_listing.page_source(slug) for slug in pages}
    # ... and the table of contents lists every page, in the reading order, under the API reference.
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8").splitlines()
    listed = [line.split("file:")[1].strip() for line in toc if f"file: {api_listing.PAGE_DIR}/" in line]
    assert listed == [f"{api_listing.PAGE_DIR}/{slug}" for slug in pages]


def test_a_page_expands_to_its_own_modules_only():
    text = api_listing.api_text("audit")
    assert ".. automodule:: dpstack.audit\n" in text and ".. automodule:: dpstack.audit.mutants\n" in text
    assert "## `dpstack.audit`" not in text  # the page title already names it
    assert "## `dpstack.audit.mutants`" in text
    assert ".. automodule:: dpstack.linear\n" not in text
    source = [api_listing.page_source("audit")]
    api_listing.expand_marker(None, "book/api/audit", source)
    assert "{dpstack-api}" not in source[0] and source[0].startswith("# `dpstack.audit`")
    index = [open(ROOT / "book" / "api.md", encoding="utf-8").read()]
    api_listing.expand_marker(None, "book/api", index)
    assert "{doc}`dpstack.audit <api/audit>`" in index[0] and ".. automodule::" not in index[0]
    assert ":func:" not in index[0]  # module summaries' reStructuredText roles are MyST roles in the table
