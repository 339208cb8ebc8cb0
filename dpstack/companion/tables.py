"""The book's table style: our numbers beside the paper's, readable on any screen.

One cell reads ``ours ± CI (paper)``: the mean of our repeats, the half-width of its 95 %
t-interval (computed from the repeats, not the standard deviation), and the paper's mean in
brackets, all rounded to the number of decimals the paper prints. Nothing shows as ``NaN``:
a missing value is a dash, explained in the table's footnote. Counts print as integers, a
column of floats uses one fixed-point format (never ``6.9571e-02`` beside ``0.6410``), and no
cell or row is cut to "…".

:func:`paper_vs_ours` builds such a table; :func:`tidy` formats any other table the same
way; :func:`scrollable` wraps either so that, on a narrow screen, the table scrolls
sideways inside the page instead of being cut off.
"""

from __future__ import annotations

import html as _html
from numbers import Integral, Real

import numpy as np
import pandas as pd

from dpstack.companion.stats import t_half_width

__all__ = [
    "decimals_of",
    "fixed_text",
    "paper_vs_ours",
    "tidy",
    "scrollable",
    "as_table",
    "ScrollableTable",
    "MISSING",
]

#: What a missing value shows as (explained in each table's footnote).
MISSING = "–"

#: The class of the element that lets a table scroll sideways (styled in the book's CSS).
SCROLL_CLASS = "dpstack-table-scroll"


def decimals_of(values, max_decimals=6):
    """The number of decimals a column of printed numbers uses (the most any value needs).

    ``values`` are numbers as transcribed (``0.9007`` → 4, ``0.95`` → 2, ``12`` → 0) or strings as
    printed (``"0.950"`` → 3, keeping trailing zeros). NaN and missing entries are ignored.
    """
    found = 0
    for value in values:
        if value is None or (isinstance(value, Real) and not np.isfinite(value)):
            continue
        text = value.strip() if isinstance(value, str) else np.format_float_positional(float(value), trim="-")
        if "." in text:
            found = max(found, len(text.split(".", 1)[1].rstrip("%")))
    return min(found, max_decimals)


def _fmt(value, decimals):
    if value is None or not np.isfinite(value):
        return MISSING
    out = f"{value:.{decimals}f}"
    return out.replace("-", "−") if out.startswith("-") else out


def _column_label(name, value):
    if name in ("epsilon", "eps", "ε"):
        if not isinstance(value, Real):
            return f"ε = {value}"
        return "ε = ∞" if np.isinf(value) else f"ε = {value:g}"
    if not isinstance(value, Real):
        return str(value)  # a method, a dataset: its name is label enough
    if not isinstance(value, Integral) and float(value).is_integer():
        value = int(value)
    return f"{name} = {value}"


def paper_vs_ours(
    ours,
    paper,
    index="method",
    columns="epsilon",
    value="auc",
    paper_value="paper_mean",
    decimals=None,
    level=0.95,
    quantity=None,
    paper_only="drop",
):
    """Our repeats beside the paper's numbers, one cell ``ours ± CI (paper)`` per (row, column).

    Parameters
    ----------
    ours : DataFrame
        One row per repeat: the key columns ``index`` and ``columns`` and the measured ``value``.
        With a ``repeat`` column, two rows of one repeat in one cell (e.g. two methods pooled
        because ``method`` is not a key) are an error.
    paper : DataFrame or None
        The paper's numbers: the same key columns and ``paper_value`` (e.g. the output of
        :func:`dpstack.companion.paper_values.table_frame`). ``None`` for a result the paper only
        plots: cells are then ``ours ± CI`` without brackets, and the footnote says why.
    index, columns : str or list of str
        Keys spread down the rows and across the columns. ``columns=None`` gives a single
        column of cells.
    value, paper_value : str
        Columns of ``ours`` and ``paper`` holding the numbers.
    decimals : int, optional
        Decimals of every number shown; by default the paper's precision, the most decimals
        any of its values is printed with (:func:`decimals_of`), and 3 when ``paper`` is None.
    level : float, default 0.95
        Confidence level of the t-interval of our mean over repeats.
    quantity : str, optional
        What the numbers are (e.g. ``"test AUC"``), named in the footnote.
    paper_only : {"drop", "show"}, default "drop"
        Cells the paper reports but we did not run (e.g. a quick profile's shorter ε grid):
        left out of the table and counted in the footnote ("drop"), or shown as dashes.

    Returns
    -------
    ScrollableTable
        A table of strings (``.frame``) with its footnote (``.footnote``); it displays in a
        notebook as HTML that scrolls sideways on a narrow screen. A cell with no repeats of
        ours is a dash; a cell with no paper value has ``(–)``; a cell with a single repeat has
        no ``±`` part. Keys present in either frame get a row or column.
    """
    index_keys = [index] if isinstance(index, str) else list(index)
    column_keys = [] if columns is None else [columns] if isinstance(columns, str) else list(columns)
    keys = index_keys + column_keys
    plot_only = paper is None
    if plot_only:
        paper = pd.DataFrame(
            {c: pd.Series(dtype=ours[c].dtype if c in ours.columns else float) for c in keys + [paper_value]}
        )
        decimals = 3 if decimals is None else decimals
    for name, frame, needed in (("ours", ours, keys + [value]), ("paper", paper, keys + [paper_value])):
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            raise ValueError(f"{name} has no column {missing[0]!r} (columns: {list(frame.columns)})")
    if decimals is None:
        decimals = decimals_of(paper[paper_value])
    if not isinstance(decimals, Integral) or decimals < 0:
        raise ValueError(f"decimals must be a non-negative integer, got {decimals!r}")

    if "repeat" in ours.columns:
        repeated = ours.duplicated(keys + ["repeat"], keep=False)
        if repeated.any():
            extra = [
                c
                for c in ours.columns
                if c not in keys + ["repeat", value]
                and ours.loc[repeated].groupby(keys + ["repeat"])[c].nunique().gt(1).any()
            ]
            raise ValueError(
                f"ours has several rows per repeat for the same {keys}: a cell would pool them; "
                f"add the column that tells them apart to index or columns (e.g. {extra[:3]})"
            )
    grouped = ours.groupby(keys, sort=True)[value]
    stats = pd.DataFrame(
        {
            "mean": grouped.apply(lambda v: np.nanmean(v) if np.isfinite(v).any() else np.nan),
            "half": grouped.apply(lambda v: t_half_width(v, level)),
            "n": grouped.apply(lambda v: int(np.isfinite(np.asarray(v, dtype=float)).sum())),
        }
    )
    theirs = paper.groupby(keys, sort=True)[paper_value].first().rename("paper")
    merged = stats.join(theirs, how="outer")
    if paper_only not in ("drop", "show"):
        raise ValueError(f"paper_only must be 'drop' or 'show', got {paper_only!r}")
    dropped = 0
    if paper_only == "drop":
        ran = merged["n"].fillna(0) > 0
        dropped = int((~ran).sum())
        merged = merged[ran]

    notes = set()

    def cell(row):
        if not (row["n"] > 0):
            notes.add("missing")
            return MISSING
        text = _fmt(row["mean"], decimals)
        if row["n"] >= 2:
            text += f" ± {_fmt(row['half'], decimals)}"
        else:
            notes.add("single")
        if plot_only:
            return text
        if np.isfinite(row["paper"]):
            return f"{text} ({_fmt(row['paper'], decimals)})"
        notes.add("no paper")
        return f"{text} ({MISSING})"

    cells = merged.apply(cell, axis=1)
    if column_keys:
        table = cells.unstack(column_keys)
        table.columns = [
            ", ".join(_column_label(k, v) for k, v in zip(column_keys, c if isinstance(c, tuple) else (c,)))
            for c in table.columns
        ]
        for column in table.columns:  # a key present in one frame only: its other cells are dashes
            if table[column].isna().any():
                notes.add("missing")
        table = table.fillna(MISSING)
    else:
        table = cells.to_frame("ours ± CI" if plot_only else "ours ± CI (paper)")

    counts = merged["n"].dropna()
    counts = counts[counts > 0].astype(int)
    if not len(counts):
        repeats = "0"
    elif counts.min() == counts.max():
        repeats = f"{counts.min()}"
    else:
        repeats = f"{counts.min()}–{counts.max()}"
    what = f"{quantity}: " if quantity else ""
    if plot_only:
        footnote = [
            f"{what}ours ± half-width of the {level:.0%} t-interval of our mean over {repeats} repeats, "
            f"rounded to {decimals} decimals. The paper only plots this result: it prints no number "
            f"to put beside ours."
        ]
    else:
        footnote = [
            f"{what}ours ± half-width of the {level:.0%} t-interval of our mean over {repeats} repeats "
            f"(paper's mean in brackets), rounded to {decimals} decimals as the paper prints them."
        ]
    if "single" in notes:
        footnote.append("A cell without ± has a single repeat: no interval.")
    if "no paper" in notes:
        footnote.append(f"({MISSING}): the paper reports no value for this cell.")
    if "missing" in notes:
        footnote.append(f"{MISSING}: not run here.")
    if dropped:
        footnote.append(f"The paper reports {dropped} more cell{'s' if dropped > 1 else ''}, not run here.")
    return ScrollableTable(table, " ".join(footnote))


def tidy(frame, decimals=None, missing=MISSING):
    """Any table formatted for reading: strings, nothing cut, no NaN, counts as integers.

    A column whose values are all whole numbers (``3.0``) prints as integers; any other
    numeric column prints in one fixed-point format with ``decimals`` decimals (by default
    the most any of its values needs, at most 4), so ``0.0696`` never shows as
    ``6.9571e-02``; a non-zero value too small for them reads ``< 0.0001`` (never a false
    ``0.0000``). Booleans and text are kept. NaN and None show as ``missing``.
    """
    out = pd.DataFrame(index=frame.index)
    for column in frame.columns:
        series = frame[column]
        if pd.api.types.is_bool_dtype(series) or not pd.api.types.is_numeric_dtype(series):
            out[column] = series.map(
                lambda v: missing if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)
            )
            continue
        values = series.astype(float)
        finite = values[np.isfinite(values)]
        if len(finite) and np.all(finite == np.round(finite)) and np.all(np.abs(finite) < 1e15):
            out[column] = values.map(lambda v: f"{int(v)}" if np.isfinite(v) else missing)
            continue
        places = decimals if decimals is not None else min(decimals_of(finite.round(4)), 4)
        out[column] = values.map(lambda v, places=places: fixed_text(v, places, missing))
    return out


def fixed_text(value, places, missing=MISSING):
    """``value`` as fixed-point text with ``places`` decimals; never a false zero.

    A non-finite value reads ``missing``; a non-zero value that would print as zero reads
    ``< 0.0001`` (``> −0.0001`` when negative, for ``places=4``); a negative value starts
    with the minus sign "−".

    >>> fixed_text(0.00003, 4), fixed_text(-1.25, 1), fixed_text(float("nan"), 2, "missing")
    ('< 0.0001', '−1.2', 'missing')
    """
    if not np.isfinite(value):
        return missing
    if value != 0 and abs(value) < 0.5 * 10.0**-places:
        return f"{'> −' if value < 0 else '< '}{10.0**-places:.{places}f}"
    return _fmt(value, places)


class ScrollableTable:
    """A table of strings and its footnote, shown as HTML that scrolls sideways when too wide.

    ``frame`` is a plain :class:`pandas.DataFrame`; the text form (``repr``) prints every row
    and column in full.
    """

    def __init__(self, frame, footnote=""):
        self.frame = frame
        self.footnote = footnote

    def _repr_html_(self):
        return scrollable(self.frame, self.footnote)

    def __repr__(self):
        with pd.option_context(
            "display.max_rows", None, "display.max_columns", None, "display.width", 10_000, "display.max_colwidth", None
        ):
            text = self.frame.to_string()
        return text + (f"\n{self.footnote}" if self.footnote else "")


def scrollable(frame, footnote="", formatted=False):
    """HTML of ``frame`` inside an element that scrolls sideways on a narrow screen.

    Every row, column and character is shown (no "…"). Unless ``formatted``, numbers are first
    formatted by :func:`tidy`. ``footnote`` is printed under the table.
    """
    if isinstance(frame, ScrollableTable):
        frame, footnote = frame.frame, footnote or frame.footnote
    all_text = all(frame[c].map(lambda v: isinstance(v, str)).all() for c in frame.columns)
    shown = frame if formatted or all_text else tidy(frame)
    with pd.option_context("display.max_colwidth", None):
        table = shown.to_html(
            max_rows=None, max_cols=None, na_rep=MISSING, border=0, classes=["dataframe", "dpstack-table"]
        )
    note = f'<p class="dpstack-table-note">{_html.escape(footnote)}</p>' if footnote else ""
    return f'<div class="{SCROLL_CLASS}" style="overflow-x:auto;max-width:100%">{table}</div>{note}'


def as_table(frame, footnote="", decimals=None):
    """Any table for a notebook page: formatted by :func:`tidy`, scrolling sideways when too wide.

    ``display(as_table(claims))`` shows every row, column and character, no NaN, counts as
    integers, and ``footnote`` under the table.
    """
    return ScrollableTable(tidy(frame, decimals=decimals), footnote)
