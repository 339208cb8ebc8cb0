"""The pages that judge the papers' claims, and how many claims of each paper hold.

Every experiment page of the book ends with the paper's claims judged on our numbers
(:mod:`dpstack.experiments.verdicts`: supported, contradicted or inconclusive). This module is
the registry of those pages: :data:`PAGE_CLAIMS` maps a page to its paper and to a function
returning the page's verdicts, computed from the page's committed paper-profile results
(:func:`dpstack.experiments.results.load_or_run` with ``profile="paper"``), so the counts are
those of the papers' scale, whatever profile the book was built with. :func:`claim_counts`
adds them up per paper; :func:`page_counts` gives the per-page breakdown. Both are shown on
the "Reproducing the results" page.

A page registers with one line, :func:`register_page`. A page whose data is absent here (its
``status`` returns a message) contributes no verdicts and is listed as "data absent". Claims a
page judges outside the reproduction proper (MPL: the paper's statements judged again on a
release with noise that is *not* ε-DP, as a hypothesis about the paper's figures) are
registered as ``uncounted``: the breakdown shows them, the per-paper counts leave them out.
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import pandas as pd

from ..numbering import PAPERS
from . import results
from .verdicts import OUTCOMES, Verdict, counts_sentence

__all__ = [
    "ClaimPage",
    "PAGE_CLAIMS",
    "register_page",
    "page_verdicts",
    "page_counts",
    "claim_counts",
    "claims_sentences",
]


class ClaimPage(NamedTuple):
    """One page that judges claims of ``paper``.

    ``verdicts()`` returns the page's list of :class:`~dpstack.experiments.verdicts.Verdict`;
    ``status()`` (optional) returns ``None`` when the page's data is present, else a message;
    ``label`` names what the counted verdicts are; ``uncounted`` holds ``(label, verdicts)``
    pairs of further verdicts shown in the breakdown but not counted for the paper.
    """

    paper: str
    verdicts: Callable[[], list]
    status: Callable[[], str | None] | None = None
    label: str = "the paper's claims"
    uncounted: tuple = ()


#: The registry: page name → :class:`ClaimPage`, in registration order (the papers' order).
PAGE_CLAIMS: dict[str, ClaimPage] = {}


def register_page(page, paper, verdicts, *, status=None, label="the paper's claims", uncounted=()):
    """Register ``page`` as judging claims of ``paper`` (a key of :data:`dpstack.numbering.PAPERS`).

    Parameters
    ----------
    page : str
        The page's name (a notebook or Markdown page of the book, without suffix).
    paper : str
        ``"PST"``, ``"PPTL"`` or ``"MPL"``.
    verdicts : callable
        ``verdicts()`` → list of :class:`~dpstack.experiments.verdicts.Verdict` (or the page's
        claims table, :func:`~dpstack.experiments.verdicts.claims_frame`), judged on the
        page's paper-profile results (use :func:`dpstack.experiments.results.load_or_run` with
        ``profile="paper"`` so that committed results are read, not recomputed).
    status : callable, optional
        ``status()`` → ``None`` when the data the page needs is present, else a message; a page
        without its data contributes no verdicts.
    label : str, default="the paper's claims"
        What the counted verdicts are, as the breakdown names them.
    uncounted : sequence of (str, callable), default=()
        Further verdicts the page judges that are not the reproduction's (shown, not counted).

    Returns
    -------
    ClaimPage
        Registering a page twice replaces the first entry.
    """
    if not isinstance(page, str) or not page or "/" in page or "." in page:
        raise ValueError(f"page must be a page name without folder or suffix, got {page!r}")
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {list(PAPERS)}, got {paper!r}")
    if not callable(verdicts):
        raise TypeError(f"verdicts must be callable (returning a list of Verdict) for page {page!r}")
    if status is not None and not callable(status):
        raise TypeError(f"status must be callable or None for page {page!r}")
    uncounted = tuple((str(name), fn) for name, fn in uncounted)
    if not all(callable(fn) for _, fn in uncounted):
        raise TypeError(f"uncounted must hold (label, callable) pairs for page {page!r}")
    entry = ClaimPage(paper, verdicts, status, label, uncounted)
    PAGE_CLAIMS[page] = entry
    return entry


class _Outcome(NamedTuple):
    """The outcome of one row of a claims table (all that counting needs)."""

    outcome: str


def _entry(page):
    try:
        return PAGE_CLAIMS[page]
    except KeyError:
        raise KeyError(f"page must be a registered page ({', '.join(PAGE_CLAIMS)}), got {page!r}") from None


def _checked(verdicts, page):
    if isinstance(verdicts, pd.DataFrame):  # a page's claims table (verdicts.claims_frame): its verdict column
        if "verdict" not in verdicts:
            raise TypeError(f"the claims table of page {page!r} has no 'verdict' column")
        verdicts = [_Outcome(o) for o in verdicts["verdict"]]
        if any(v.outcome not in OUTCOMES for v in verdicts):
            raise TypeError(f"the verdicts of page {page!r} must have an outcome in {OUTCOMES}")
        return verdicts
    verdicts = list(verdicts)
    wrong = [v for v in verdicts if not isinstance(v, (Verdict, _Outcome)) or v.outcome not in OUTCOMES]
    if wrong:
        raise TypeError(f"the verdicts of page {page!r} must be Verdict objects with an outcome in {OUTCOMES}")
    return verdicts


def page_verdicts(page):
    """The counted verdicts of ``page``, or ``None`` when its data is absent here."""
    entry = _entry(page)
    if entry.status is not None and entry.status() is not None:
        return None
    return _checked(entry.verdicts(), page)


def _row(paper, page, claims, counted, verdicts):
    row = {"paper": paper, "page": page, "claims": claims, "counted": counted}
    if verdicts is None:
        row.update({o: pd.NA for o in OUTCOMES}, total=pd.NA, data="absent")
        return row
    counts = {o: sum(v.outcome == o for v in verdicts) for o in OUTCOMES}
    row.update(counts, total=len(verdicts), data="present")
    return row


def page_counts(pages=None):
    """The breakdown: one row per registered page, and one per set of uncounted verdicts of a page with data.

    Parameters
    ----------
    pages : sequence of str, optional
        Registered pages to count (default: all, in registration order).

    Returns
    -------
    pandas.DataFrame
        Columns ``paper``, ``page``, ``claims`` (the verdicts' label), ``counted`` (whether the
        row counts for the paper), ``supported``, ``contradicted``, ``inconclusive``, ``total``
        (missing where the data is absent) and ``data`` (``"present"`` or ``"absent"``).
    """
    rows = []
    for page in PAGE_CLAIMS if pages is None else pages:
        entry = _entry(page)
        verdicts = page_verdicts(page)
        rows.append(_row(entry.paper, page, entry.label, True, verdicts))
        if verdicts is not None:  # a page without its data has one row, "absent"
            rows.extend(_row(entry.paper, page, label, False, _checked(fn(), page)) for label, fn in entry.uncounted)
    columns = ["paper", "page", "claims", "counted", *OUTCOMES, "total", "data"]
    frame = pd.DataFrame(rows, columns=columns)
    for column in (*OUTCOMES, "total"):
        frame[column] = frame[column].astype("Int64")
    return frame


def claim_counts(breakdown=None):
    """How many claims of each paper are supported, contradicted and inconclusive.

    Parameters
    ----------
    breakdown : pandas.DataFrame, optional
        The output of :func:`page_counts` (computed when not given).

    Returns
    -------
    pandas.DataFrame
        One row per paper with a registered page, in the order of
        :data:`dpstack.numbering.PAPERS`: ``paper``, ``pages`` (pages judged), ``data absent``
        (the pages without their data, comma-separated), ``supported``, ``contradicted``,
        ``inconclusive`` and ``total``, summed over the counted verdicts only.
    """
    if breakdown is None:
        breakdown = page_counts()
    counted = breakdown[breakdown["counted"]]
    rows = []
    for paper in PAPERS:
        part = counted[counted["paper"] == paper]
        if part.empty:
            continue
        present = part[part["data"] == "present"]
        row = {
            "paper": paper,
            "pages": int(present["page"].nunique()),
            "data absent": ", ".join(part.loc[part["data"] == "absent", "page"]),
        }
        row.update({column: int(present[column].sum()) for column in (*OUTCOMES, "total")})
        rows.append(row)
    return pd.DataFrame(rows, columns=["paper", "pages", "data absent", *OUTCOMES, "total"])


def claims_sentences(counts=None):
    """One sentence per paper built from :func:`claim_counts`, e.g. "MPL: 9 of 15 claims supported, …"."""
    if counts is None:
        counts = claim_counts()
    sentences = []
    for row in counts.to_dict("records"):
        sentence = f"{row['paper']}: " + counts_sentence({o: row[o] for o in OUTCOMES})
        pages = "page" if row["pages"] == 1 else "pages"
        sentence = sentence.removesuffix(".") + f", on {row['pages']} {pages}"
        if row["data absent"]:
            sentence += f" ({row['data absent']}: data absent here)"
        sentences.append(sentence + ".")
    return sentences


# ------------------------------------------------------------------------------------- the pages
def _committed(name):
    """The committed paper-profile table of ``name`` (read, not computed, when it is committed)."""
    return results.load_or_run(name, profile="paper")


def _mpl_verdicts(dataset, noise):
    """The MPL page's claims judged on its paper-profile results (committed, so read not computed)."""
    from .mpl_report import PAGES, judge_claims

    return judge_claims(_committed(PAGES[dataset]["page"]), dataset, noise)


def _register_mpl_pages():
    from .mpl_report import PAGES
    from .multiparty import DP_NOISE, EXP_NOISE, data_status

    for dataset, info in PAGES.items():
        register_page(
            info["page"],
            "MPL",
            functools.partial(_mpl_verdicts, dataset, DP_NOISE),
            status=functools.partial(data_status, dataset),
            label="ε-DP release",
            uncounted=(("not-DP noise (hypothesis)", functools.partial(_mpl_verdicts, dataset, EXP_NOISE)),),
        )


_register_mpl_pages()


def _claims_of(page, claims):
    return claims(_committed(page))


def _ruijin_verdicts():
    from .pptl_report import branches_claims, groups_claims, table1_claims

    return pd.concat(
        [
            branches_claims(_committed("ruijin_transfer_branches")),
            table1_claims(_committed("ruijin_transfer_epsilon"), table="table2"),
            groups_claims(_committed("ruijin_transfer_groups")),
        ],
        ignore_index=True,
    )


def _register_pst_pptl_pages():
    from . import pptl_report, pst_report

    for page, claims in [
        ("pst_fig1_epsilon", pst_report.fig1_claims),
        ("pst_fig2_groups", pst_report.fig2_claims),
        ("pst_fig3_importance", pst_report.fig3_claims),
        ("pst_fig4_combiners", pst_report.fig4_claims),
    ]:
        register_page(page, "PST", functools.partial(_claims_of, page, claims), status=results.get(page).status)
    register_page(
        "pptl_table1_mnist",
        "PPTL",
        functools.partial(_claims_of, "pptl_table1_mnist", pptl_report.table1_claims),
        status=results.get("pptl_table1_mnist").status,
    )
    register_page(
        "ruijin_transfer",
        "PPTL",
        _ruijin_verdicts,
        label="PPTL Tables 2 and 4, Figure 4, PST Table 2 (synthetic cohort)",
    )


_register_pst_pptl_pages()
