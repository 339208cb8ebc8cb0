"""The errata page's items as data: number, anchor, title, paper, and what each does to the paper's claims.

The errata page (``notebooks/errata.ipynb``) opens with :func:`summary_table`, built from
:data:`ERRATA`; each item's section on that page carries the anchor and the title given here
(``tests/test_errata.py`` checks that they agree).
"""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

__all__ = ["IMPACTS", "Erratum", "ERRATA", "summary_table", "summary_sentence"]

#: What an item does, most severe first.
IMPACTS = {
    "breaks privacy": "the algorithm as printed, or as its words can be read, releases more than ε allows",
    "breaks a proof": "a step of a proof does not hold as printed; the algorithm as implemented here is covered",
    "changes results": "the guarantee is intact, but the choice or the reading moves the experiments' numbers",
    "cosmetic": "a slip in numbers, sizes or names; nothing computed depends on it",
}


class Erratum(NamedTuple):
    number: int
    anchor: str
    title: str
    papers: str
    impact: str
    consequence: str


ERRATA = (
    Erratum(
        1,
        "erratum-noise-sign",
        "The noise density's sign",
        "PST, PPTL",
        "breaks privacy",
        "as printed the density cannot be normalised; PPTL's Gamma(d, ε/2) read as shape and scale gives noise "
        "far too small",
    ),
    Erratum(
        2,
        "erratum-pptl-epsilon-k",
        "PPTL Algorithm 3, step 6: ε⁽ᵏ⁾ = ε instead of ε′",
        "PPTL",
        "breaks privacy",
        "the audit measures an exact privacy loss above ε for the printed rule",
    ),
    Erratum(
        3,
        "erratum-pptl-lambda-k",
        "PPTL Algorithm 3, step 11: λg⁽ᵏ⁾ instead of λ⁽ᵏ⁾g⁽ᵏ⁾",
        "PPTL",
        "breaks a proof",
        "solving with a smaller λ than calibrated certifies more than ε",
    ),
    Erratum(
        4,
        "erratum-negative-delta",
        "PST Algorithm 3, step 9: Δₖ can be negative",
        "PST",
        "breaks a proof",
        "Lemma 7 assumes Δ ≥ 0; clamped at 0 here",
    ),
    Erratum(
        5,
        "erratum-public-bound",
        '"Scale ‖x‖ ≤ 1": a public bound, not the data\'s maximum',
        "PST, PPTL",
        "breaks privacy",
        "rows divided by the private maximum: the exact loss is far above ε",
    ),
    Erratum(
        6,
        "erratum-pst-split",
        "PST §4.1's split does not add up",
        "PST",
        "cosmetic",
        "the shares printed do not give Table 1's sizes",
    ),
    Erratum(
        7,
        "erratum-vote-sensitivity",
        "MPL: the vote's sensitivity does not shrink with the number of parties",
        "MPL",
        "changes results",
        "the proof is right; the vote's noise stays the same at every M, so its accuracy falls first",
    ),
    Erratum(
        8,
        "erratum-news20-sizes",
        "PST Table 1's NEWS20 sizes",
        "PST",
        "cosmetic",
        "no split of the archive gives the printed test size",
    ),
    Erratum(
        9,
        "erratum-theorem5-proof",
        "PST Theorem 5's proof: a product for a sum, and qₖ² for 1/K²",
        "PST",
        "breaks a proof",
        "the proof's constants; the statement evaluated in the book is unaffected",
    ),
    Erratum(
        10,
        "erratum-lambda-per-block",
        "Which λ for which block — a choice that decides whether importance helps",
        "PST, PPTL",
        "changes results",
        "one λ for every block, or one per block, decides whether the important block gains",
    ),
    Erratum(
        11,
        "erratum-label-free-split",
        "The stacking split must not look at the labels",
        "PST, PPTL",
        "breaks a proof",
        "a label-stratified split would void the composition over disjoint parts",
    ),
    Erratum(
        12,
        "erratum-names",
        "Names",
        "PST, PPTL",
        "cosmetic",
        "one method under several names",
    ),
    Erratum(
        13,
        "erratum-mpl-noise-dimension",
        "MPL: the private curves and the dimension of the noise",
        "MPL",
        "changes results",
        "with ε-DP noise the curves fall two decades of 1/ε earlier than the paper's figures",
    ),
)


def summary_table(errata=ERRATA):
    """One row per item: its number, title, paper, impact and consequence; the count per impact in ``attrs``."""
    unknown = sorted({e.impact for e in errata} - set(IMPACTS))
    if unknown:
        raise ValueError(f"unknown impact {unknown}: the impacts are {list(IMPACTS)}")
    frame = pd.DataFrame(
        [
            {"item": e.number, "title": e.title, "paper": e.papers, "impact": e.impact, "consequence": e.consequence}
            for e in errata
        ]
    )
    frame.attrs["counts"] = {impact: int((frame["impact"] == impact).sum()) for impact in IMPACTS}
    return frame


def summary_sentence(errata=ERRATA):
    """The counts per impact, in words, with what each impact means."""
    counts = summary_table(errata).attrs["counts"]
    return f"{len(errata)} items. " + " ".join(
        f"{impact.capitalize()}, {n} item{'s' if n != 1 else ''}: {IMPACTS[impact]}."
        for impact, n in counts.items()
        if n
    )
