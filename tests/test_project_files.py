"""The repository's own files agree with the code and with each other.

LICENSE and CITATION.cff match pyproject.toml and the bibliography; ARCHITECTURE.md names every
module of the package and every erratum of the book; every MyST cross-reference written in the book,
the notebooks' prose and dpstack's docstrings points at a label or a page that exists (the book build
would fail on a dangling one, and this runs in seconds).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
_PYPROJECT_TEXT = (ROOT / "pyproject.toml").read_text()
PYPROJECT = {
    "version": re.search(r'^version = "([^"]+)"', _PYPROJECT_TEXT, re.M).group(1),
    "license": {"text": re.search(r'^license = \{text = "([^"]+)"\}', _PYPROJECT_TEXT, re.M).group(1)},
}


def bib_entries():
    """{key: {"title": ..., "author": ...}} of book/references.bib (one field per line)."""
    entries, key = {}, None
    for line in (ROOT / "book" / "references.bib").read_text().splitlines():
        start = re.match(r"\s*@\w+\{([^,]+),", line)
        if start:
            key = start.group(1)
            entries[key] = {}
        field = re.match(r"\s*(\w+)\s*=\s*\{(.*)\},?\s*$", line)
        if key and field:
            entries[key][field.group(1)] = field.group(2)
    return entries


def test_license_is_the_bsd_3_clause_text_pyproject_declares():
    text = (ROOT / "LICENSE").read_text()
    assert PYPROJECT["license"]["text"] == "BSD-3-Clause"
    assert text.startswith("BSD 3-Clause License") and "the dpstack authors" in text
    assert "Neither the name of the copyright holder nor the names of its" in text


def test_citation_cff_describes_this_version_and_cites_the_three_papers():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert str(cff["version"]) == PYPROJECT["version"]
    assert cff["license"] == PYPROJECT["license"]["text"]
    assert cff["message"] and cff["title"] and cff["authors"]
    bib = bib_entries()
    cited = {ref["title"]: [a["family-names"] for a in ref["authors"]] for ref in cff["references"]}
    for key in ("yao2019privacy", "guo2018pptl", "hamm2016learning"):
        entry = bib[key]
        assert entry["title"] in cited, f"{key}: title differs between CITATION.cff and references.bib"
        families = [name.split(",")[0].strip() for name in entry["author"].split(" and ")]
        assert cited[entry["title"]] == families, key
        assert str(cff["references"][list(cited).index(entry["title"])]["year"]) == entry["year"]


def test_the_mpl_second_author_is_named_as_the_paper_prints_him():
    assert "Cao, Paul" in bib_entries()["hamm2016learning"]["author"]
    for path in [ROOT / "README.md", ROOT / "CITATION.cff", *sorted((ROOT / "book").glob("*.md"))]:
        assert "Y. Cao" not in path.read_text() and "Yingjun" not in path.read_text(), path.name


def test_changelog_follows_keep_a_changelog():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog") and "keepachangelog.com" in text
    assert "## [Unreleased]" in text and "### Added" in text


def public_modules():
    package = ROOT / "dpstack"
    names = {p.stem for p in package.glob("*.py") if not p.stem.startswith("_")}
    names |= {p.name + "/" for p in package.iterdir() if (p / "__init__.py").is_file() and not p.name.startswith("_")}
    return names


def test_architecture_names_every_module_of_the_package():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    assert len(public_modules()) >= 12
    missing = [m for m in sorted(public_modules()) if f"dpstack/{m}" not in text]
    assert not missing, f"ARCHITECTURE.md does not describe: {missing}"


# --- MyST cross-references ---------------------------------------------------------------------

ERRATA = ROOT / "notebooks" / "errata.ipynb"
LABEL = re.compile(r"^\(([A-Za-z0-9_-]+)\)=\s*$", re.M)
REF = re.compile(r"(?:\{ref\}|:ref:)`(?:[^`<]*<)?([A-Za-z0-9_-]+)>?`")
DOC = re.compile(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`")


def markdown_sources():
    """(path, text) of every book page and every notebook markdown cell."""
    out = [(p, p.read_text()) for p in sorted((ROOT / "book").glob("*.md"))]
    for p in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(p, as_version=4)
        out += [(p, c.source) for c in nb.cells if c.cell_type == "markdown"]
    return out


def labels():
    return {m for _, text in markdown_sources() for m in LABEL.findall(text)}


def test_every_erratum_has_a_label_and_architecture_lists_them_all():
    nb = nbformat.read(ERRATA, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    items = re.findall(r"^\(erratum-([a-z0-9-]+)\)=\n## (\d+)\. ", text, re.M)
    numbers = [int(n) for _, n in items]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 13
    headings = re.findall(r"^## \d+\. ", text, re.M)
    assert len(headings) == len(items), "an erratum heading has no label"
    architecture = (ROOT / "ARCHITECTURE.md").read_text()
    assert [f"erratum-{slug}" for slug, _ in items] == re.findall(r"`(erratum-[a-z0-9-]+)`", architecture)


def test_every_ref_points_at_a_label_that_exists():
    known = labels()
    cited = [(path.name, ref) for path, text in markdown_sources() for ref in REF.findall(text)]
    for path in sorted((ROOT / "dpstack").rglob("*.py")):
        cited += [(str(path.relative_to(ROOT)), ref) for ref in REF.findall(path.read_text())]
    assert len(cited) >= 20
    dangling = [(where, ref) for where, ref in cited if ref not in known]
    assert not dangling, f"references to labels that do not exist: {dangling}"


def test_every_doc_link_points_at_a_page_that_exists():
    links = []
    for path, text in markdown_sources():
        for target in DOC.findall(text):
            resolved = (path.parent / target.strip()).resolve()
            links.append((path.name, target))
            assert resolved.with_suffix(".md").is_file() or resolved.with_suffix(".ipynb").is_file(), (
                f"{path.name}: {{doc}} link to a missing page {target!r}"
            )
    assert len(links) >= 30


@pytest.mark.parametrize(
    "page, pattern",
    [
        ("pst_overview.md", r"\{doc\}`[^`]*pst_algorithms"),
        ("pst_overview.md", r"\{doc\}`[^`]*pst_sample_complexity"),
        ("pst_overview.md", r"\{doc\}`[^`]*pst_guarantees"),
        ("pst_overview.md", r"\{doc\}`[^`]*errata"),
        ("mpl_overview.md", r"\{doc\}`[^`]*mpl_kdd"),
        ("intro.md", r"\{doc\}`[^`]*ruijin_like"),
    ],
)
def test_overview_pages_link_the_pages_they_name(page, pattern):
    assert re.search(pattern, (ROOT / "book" / page).read_text())


@pytest.mark.skipif(
    not (ROOT.parent / "shared" / "data" / "MANIFEST.md").is_file() or shutil.which("make") is None,
    reason="no shared data folder beside the repository",
)
def test_make_book_never_fetches_into_the_shared_data_folder():
    """The shared folder is read-only input: `make data` (run by `make book`) leaves it alone."""
    env = {k: v for k, v in os.environ.items() if k != "DPSTACK_DATA"}
    # top level (the Makefile finds the folder itself), and as `make book`'s sub-make, which inherits
    # DPSTACK_DATA exported
    for extra in ({}, {"DPSTACK_DATA": os.path.abspath(ROOT.parent / "shared" / "data")}):
        out = subprocess.run(
            ["make", "-n", "--no-print-directory", "data"],
            cwd=ROOT,
            env={**env, **extra},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "dpstack.datasets fetch" not in out and "nothing is fetched into it" in out, (extra, out)
    elsewhere = subprocess.run(
        ["make", "-n", "--no-print-directory", "data", "DPSTACK_DATA=/tmp/elsewhere"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "dpstack.datasets fetch" in elsewhere
