"""Sphinx extension: the bibliography labelled and sorted by author and year.

The text cites author–year (``bibtex_reference_style = "author_year"``: "Yao et al., 2019"), so
the bibliography's labels read the same way — "Yao et al. 2019" instead of pybtex's alpha labels
("YGK+19") — and the entries are sorted by first author, then year. Two works with the same label
get "a", "b", … after the year. The entry text is pybtex's ``unsrt`` style, which ends an entry
with its DOI when the BibTeX entry has one.
"""

from __future__ import annotations

from collections import Counter

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle

LABEL_STYLE = "dpstack_author_year"
STYLE = "dpstack"


def _surname(person):
    return " ".join(part.render_as("text") for part in person.rich_prelast_names + person.rich_last_names)


def author_year_label(entry):
    """ "Dwork 2006", "Dwork and Roth 2014", "Yao et al. 2019" (editors when there is no author)."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_surname(p) for p in persons]
    if not names:
        who = entry.fields.get("key", entry.key)
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who} {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabelStyle(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        entries = list(sorted_entries)
        labels = [author_year_label(e) for e in entries]
        counts, seen = Counter(labels), Counter()
        for label in labels:
            if counts[label] > 1:
                seen[label] += 1
                yield label + "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1]
            else:
                yield label


class AuthorYearStyle(UnsrtStyle):
    default_label_style = LABEL_STYLE
    default_sorting_style = "author_year_title"


def setup(app):
    register_plugin("pybtex.style.labels", LABEL_STYLE, AuthorYearLabelStyle)
    register_plugin("pybtex.style.formatting", STYLE, AuthorYearStyle)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["AuthorYearLabelStyle", "AuthorYearStyle", "author_year_label"]
