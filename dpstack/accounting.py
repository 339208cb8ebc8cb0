"""Who spends what: a record of ε per part of the data.

Every private estimator in dpstack carries a :class:`PrivacyLedger` in its
``privacy_`` attribute. Each entry says which mechanism touched which part of
the data, with what ε, and what a neighbouring dataset differs in (the
*privacy unit*: one sample, or one whole party). Composition follows the two
basic theorems: mechanisms on the **same** part add up (sequential
composition); mechanisms on **disjoint** parts cost the maximum (parallel
composition). Distinct part names must therefore denote disjoint sets of
records; a part split further is written ``"D_l/S_1"``, ``"D_l/S_2"``, ….
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Spend", "PrivacyLedger"]


@dataclass(frozen=True)
class Spend:
    """One mechanism's use of one part of the data."""

    mechanism: str
    part: str
    epsilon: float
    unit: str = "one sample"
    note: str = ""


@dataclass
class PrivacyLedger:
    """An append-only list of :class:`Spend` entries with composition rules.

    Examples
    --------
    >>> led = PrivacyLedger()
    >>> led.add("PLR", "D_l/S_1", 1.0); led.add("PLR", "D_l/S_2", 1.0); led.add("PLR", "D_h", 1.0)
    >>> led.total()
    1.0
    """

    entries: list = field(default_factory=list)

    def add(self, mechanism, part, epsilon, unit="one sample", note=""):
        self.entries.append(Spend(mechanism, part, float(epsilon), unit, note))

    def extend(self, other, prefix=""):
        """Append another ledger's entries, their parts renamed ``prefix + part``."""
        for e in other.entries:
            self.entries.append(Spend(e.mechanism, prefix + e.part, e.epsilon, e.unit, e.note))

    def per_part(self):
        """ε spent on each part (sequential composition within a part)."""
        out = {}
        for e in self.entries:
            out[e.part] = out.get(e.part, 0.0) + e.epsilon
        return out

    def total(self):
        """ε of the whole release: max over disjoint parts of their sums."""
        parts = self.per_part()
        return max(parts.values()) if parts else 0.0

    @property
    def units(self):
        return sorted({e.unit for e in self.entries})

    def to_frame(self):
        """The entries as a pandas DataFrame (for the book's tables)."""
        import pandas as pd

        return pd.DataFrame([e.__dict__ for e in self.entries], columns=["mechanism", "part", "epsilon", "unit", "note"])

    def __repr__(self):
        rows = ", ".join(f"{e.mechanism}@{e.part}: ε={e.epsilon:g}" for e in self.entries)
        return f"PrivacyLedger(total ε={self.total():g}; {rows})"
