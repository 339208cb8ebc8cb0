"""The bibliography's author–year labels (book/_ext/bibliography_style.py) and its DOIs."""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
pybtex = pytest.importorskip("pybtex.database")

import bibliography_style  # noqa: E402


def entries():
    return pybtex.parse_file(str(ROOT / "book" / "references.bib")).entries


def test_labels_read_like_the_citations_and_are_unique():
    db = entries()
    label = {key: bibliography_style.author_year_label(e) for key, e in db.items()}
    assert label["wolpert1992stacked"] == "Wolpert 1992"
    assert label["dwork2014algorithmic"] == "Dwork and Roth 2014"
    assert label["yao2019privacy"] == "Yao et al. 2019"
    assert label["lecun1998gradient"] == "LeCun et al. 1998"
    styled = list(bibliography_style.AuthorYearLabelStyle().format_labels(list(db.values())))
    assert len(set(styled)) == len(styled)


def test_two_works_with_one_label_get_a_and_b():
    db = pybtex.parse_string(
        "@article{a, author={Roe, R.}, title={One}, year={2001}}\n@article{b, author={Roe, R.}, title={Two}, year={2001}}",
        "bibtex",
    )
    assert list(bibliography_style.AuthorYearLabelStyle().format_labels(list(db.entries.values()))) == [
        "Roe 2001a",
        "Roe 2001b",
    ]


def test_dois_are_well_formed():
    dois = [e.fields["doi"] for e in entries().values() if "doi" in e.fields]
    assert len(dois) >= 8
    assert all(re.fullmatch(r"10\.\d{4,9}/\S+", d) for d in dois)
