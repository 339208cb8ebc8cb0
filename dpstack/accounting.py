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

import math
import numbers
from dataclasses import dataclass, field

__all__ = ["Spend", "PrivacyLedger", "part_name"]


@dataclass(frozen=True)
class Spend:
    """One mechanism's use of one part of the data."""

    mechanism: str
    part: str
    epsilon: float
    unit: str = "one sample"
    note: str = ""
    #: True for a step outside the ε-DP guarantee (recorded with ε = ∞)
    outside: bool = False


def _checked_spend(mechanism, part, epsilon, unit, note, outside=False):
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) or math.isnan(epsilon) or epsilon < 0:
        raise ValueError(f"epsilon must be a real number >= 0 (np.inf for a non-private step), got {epsilon!r}")
    for name, value in (("mechanism", mechanism), ("part", part), ("unit", unit)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return Spend(mechanism, part, float(epsilon), unit, str(note), outside)


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
        """Record that ``mechanism`` spent ``epsilon`` (a real number ≥ 0) on ``part``."""
        self.entries.append(_checked_spend(mechanism, part, epsilon, unit, note))

    def add_outside(self, step, part, note, unit="one sample"):
        """Record a step outside the guarantee (data-dependent choices, kept noise): ε = ∞."""
        self.entries.append(_checked_spend(step, part, math.inf, unit, note, outside=True))

    def extend(self, other, prefix=""):
        """Append another ledger's entries, their parts renamed ``prefix + part``."""
        for e in other.entries:
            self.entries.append(Spend(e.mechanism, prefix + e.part, e.epsilon, e.unit, e.note, e.outside))

    def per_part(self, include_outside=True):
        """ε spent on each part (sequential composition within a part)."""
        out = {}
        for e in self.entries:
            if include_outside or not e.outside:
                out[e.part] = out.get(e.part, 0.0) + e.epsilon
        return out

    def total(self):
        """ε of the whole object: max over disjoint parts of their sums (∞ if a step is outside)."""
        parts = self.per_part()
        return max(parts.values()) if parts else 0.0

    def mechanism_total(self):
        """ε of the mechanisms alone, leaving out the steps recorded as outside the guarantee."""
        parts = self.per_part(include_outside=False)
        return max(parts.values()) if parts else 0.0

    @property
    def outside_steps(self):
        """The entries recorded as outside the guarantee."""
        return [e for e in self.entries if e.outside]

    @property
    def is_private(self):
        """True when no step is outside the guarantee and the total ε is finite."""
        return math.isfinite(self.total())

    def to_records(self):
        """The entries as a list of plain dicts (JSON-ready; ε = ∞ is written as the string "inf")."""
        return [dict(e.__dict__, epsilon=e.epsilon if math.isfinite(e.epsilon) else "inf") for e in self.entries]

    @classmethod
    def from_records(cls, records):
        """Inverse of :meth:`to_records`.

        Raises
        ------
        ValueError
            Naming the record and the field, for a record that is not a dict, lacks
            ``mechanism``, ``part`` or ``epsilon``, has an unknown field, or whose ``outside`` is
            not a boolean (the string ``"false"`` is not read as true).
        """
        fields = {"mechanism", "part", "epsilon", "unit", "note", "outside"}
        led = cls()
        for i, r in enumerate(records):
            if not isinstance(r, dict):
                raise ValueError(f"ledger record {i} must be a dict, got {type(r).__name__}")
            missing = [k for k in ("mechanism", "part", "epsilon") if k not in r]
            if missing:
                raise ValueError(f"ledger record {i} lacks the field {missing[0]!r}")
            unknown = sorted(set(r) - fields)
            if unknown:
                raise ValueError(f"ledger record {i} has an unknown field {unknown[0]!r}")
            outside = r.get("outside", False)
            if not isinstance(outside, bool):
                raise ValueError(f"ledger record {i}: outside must be true or false, got {outside!r}")
            eps = math.inf if r["epsilon"] == "inf" else r["epsilon"]
            led.entries.append(
                _checked_spend(r["mechanism"], r["part"], eps, r.get("unit", "one sample"), r.get("note", ""), outside)
            )
        return led

    @property
    def units(self):
        return sorted({e.unit for e in self.entries})

    def to_frame(self):
        """The entries as a pandas DataFrame (for the book's tables)."""
        import pandas as pd

        return pd.DataFrame(
            [e.__dict__ for e in self.entries], columns=["mechanism", "part", "epsilon", "unit", "note", "outside"]
        )

    def __repr__(self):
        rows = ", ".join(
            f"{e.mechanism}@{e.part}: ε={e.epsilon:g}{' (outside the guarantee)' if e.outside else ''}"
            for e in self.entries
        )
        return f"PrivacyLedger(total ε={self.total():g}; {rows})"


def part_name(root, g, part):
    """Where candidate ``g``'s ledger part ``part`` lies inside a selection's input ``root``.

    A private selection among G candidates fits candidate g on its own part ``root/T_g``; a
    part of that candidate's ledger is renamed into it (``"D"`` → ``"D/T_2"``,
    ``"D/S_1"`` → ``"D/T_2/S_1"``, ``"D_l"`` → ``"D/T_2/D_l"``).
    """
    if part == root or part.startswith(root + "/"):
        return f"{root}/T_{g}{part[len(root) :]}"
    return f"{root}/T_{g}/{part}"
