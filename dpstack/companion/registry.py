"""What the companion knows of the papers, found in their folders: the papers and the claim records.

Each folder of :mod:`dpstack.companion.papers` whose ``__init__.py`` declares ``NAME`` is a
paper: :func:`papers` discovers them (no list of papers is written anywhere else), in the order
of their ``ORDER``. A paper's ``claims.py`` holds its claims as :class:`Claim` records built
from :class:`Part` comparisons and :class:`Margin` s (``CLAIMS``), and, where a committed table
must be reshaped before a claim is judged on it, the functions that do it (``PREPARE``, keyed by
the name a claim gives in ``prepare``).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass

from dpstack.companion import papers as folder
from dpstack.companion import rule as V

__all__ = [
    "DATA_STATUS",
    "KINDS",
    "Margin",
    "Part",
    "Claim",
    "sel",
    "papers",
    "paper_names",
    "paper_module",
    "theorem_pages",
]


@functools.cache
def papers():
    """The paper packages under :mod:`dpstack.companion.papers` (those declaring ``NAME``), by ``ORDER``."""

    found = []
    for info in pkgutil.iter_modules(folder.__path__, folder.__name__ + "."):
        if info.ispkg:
            module = importlib.import_module(info.name)
            if hasattr(module, "NAME"):
                found.append(module)
    return tuple(sorted(found, key=lambda m: (m.ORDER, m.NAME)))


def paper_names():
    """The papers' short names (``"PST"``, …), in reading order."""
    return tuple(p.NAME for p in papers())


def theorem_pages():
    """The pages that check the papers' propositions, theorems and lemmas, in reading order (each paper's ``THEOREM_PAGES``)."""
    return tuple(page for p in papers() for page in p.THEOREM_PAGES)


def paper_module(paper, part):
    """Module ``part`` (``"claims"``, ``"grids"``, ``"pages"``) of the paper called ``paper``."""
    for p in papers():
        if p.NAME == paper:
            return importlib.import_module(f"{p.__name__}.{part}")
    raise ValueError(f"paper must be one of {paper_names()}, got {paper!r}")


#: the kinds of data a claim can be judged on, in the order the tallies list them
DATA_STATUS = ("paper", "stand-in", "synthetic")
KINDS = ("directional", "equivalence", "non-inferiority", "not judged")


@dataclass(frozen=True)
class Margin:
    """A margin of "≈" / "not worse" claims, derived from the design (see :mod:`dpstack.companion.rule`)."""

    value: float
    metric: str
    dataset: str
    derivation: str
    #: the same derivation at the paper's test size where the book's differs ("" where they agree)
    at_paper_size: str = ""


@dataclass(frozen=True)
class Part:
    """One comparison of a claim: rows ``a`` against rows ``b`` (or a printed number), at one x.

    ``a``/``b``/``c`` are row selectors as tuples of (column, value) pairs (hashable, so the
    encoding can be pinned); ``pair_on`` the keys matched within a repeat (their differences
    averaged in the repeat); ``c`` makes the part "``a`` between ``c`` and ``b``".
    """

    label: str
    a: tuple
    b: tuple | float
    pair_on: tuple = ()
    c: tuple | None = None

    def differences(self, frame, value, unit="repeat"):
        b = self.b if isinstance(self.b, (int, float)) else dict(self.b)
        return V.repeat_differences(
            frame,
            dict(self.a),
            b,
            value=value,
            pair_on=self.pair_on,
            unit=unit,
            c=None if self.c is None else dict(self.c),
        )


@dataclass(frozen=True)
class Claim:
    """One claim of one paper, with its encoding and the data it is judged on."""

    id: str
    paper: str
    words: str
    location: str
    page: str
    result: str
    data: str
    dataset: str
    kind: str
    label: str  # the claim as judged, in symbols ("PST-F(W) > PST-F(U) at every ε")
    parts: tuple = ()
    quantifier: str = "every"  # "every" or "some" (ignored for one part)
    value: str = "auc"
    margin: Margin | None = None
    prepare: str = ""  # a key of PREPARE: how the committed table becomes the judged frame
    note: str = ""  # why a "not judged" claim is not, or how the encoding reads the words
    by_construction: str = ""  # why the claim holds whatever the data (then judged, shown, never counted)

    def __post_init__(self):
        if self.data not in DATA_STATUS:
            raise ValueError(f"data must be one of {DATA_STATUS}, got {self.data!r} (claim {self.id})")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r} (claim {self.id})")
        if self.quantifier not in ("every", "some"):
            raise ValueError(f"quantifier must be 'every' or 'some', got {self.quantifier!r} (claim {self.id})")
        if self.kind in ("equivalence", "non-inferiority") and self.margin is None:
            raise ValueError(f"claim {self.id}: a {self.kind} claim needs a margin")
        if self.kind != "not judged" and not self.parts:
            raise ValueError(f"claim {self.id}: a judged claim needs at least one part")


def sel(**kw):
    """A row selector as a sorted tuple of (column, value) pairs."""
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in kw.items()))
