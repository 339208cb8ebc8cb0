"""The book's table style: our numbers beside the paper's, readable on any screen.

Every table in the book goes through this module (:func:`book_tables` makes it the way a notebook
shows any :class:`pandas.DataFrame`), so every table reads the same: no index column, headers in
words (``λ at the grid's bottom``, not ``lam_bottom``), no ``NaN`` (a dash, explained under the
table), numbers at a stated precision (at most four significant digits; quantities spanning
decades in scientific notation, ``2.0e3``; p-values down to ``< 1e-300``), booleans as words,
plain-text math in Unicode (``wₛ``, ``ε⁽ᵏ⁾``); text left-aligned and wrapping, numbers
right-aligned; a table too wide for the text column split into tables that fit (never scrolled
sideways at a 1400 px window), and nothing folded unless a page asks for it.

One cell of :func:`paper_vs_ours` reads ``ours ± CI (paper)``: the mean of our repeats, the
half-width of its 95 % t-interval (computed from the repeats, not the standard deviation), and the
paper's mean in brackets, all rounded to the number of decimals the paper prints. :func:`tidy`
formats any other table the same way; :func:`scrollable` wraps either so that, on a narrow
screen, the table scrolls sideways inside the page instead of being cut off.

No committed result depends on this module (the grids never import it), so changing the style
never makes a stored result out of date.
"""

from __future__ import annotations

import html as _html
import re
from numbers import Integral, Real

import numpy as np
import pandas as pd

from dpstack.companion.stats import t_half_width

__all__ = [
    "guarantee_frame",
    "decimals_of",
    "fixed_text",
    "paper_vs_ours",
    "tidy",
    "scrollable",
    "as_table",
    "ScrollableTable",
    "MISSING",
    "LONG",
    "book_tables",
    "readable_header",
    "math_text",
    "branch_words",
]

#: What a missing value shows as (explained in each table's footnote).
MISSING = "—"

#: A table of more rows than this is long: a page may fold it (``fold=True``) when its prose does not
#: discuss it.
LONG = 15

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


#: Code names that appear as column headers or cell values, in words.
WORDS = {
    "lam": "λ",
    "lam_h": "λₕ",
    "lam_bottom": "λ at the grid's bottom",
    "lam_top": "λ at the grid's top",
    "lam_edge": "λ at an edge of the grid",
    "lam_high_edge": "high-level λ at an edge of the grid",
    "epsilon": "ε",
    "eps": "ε",
    "epsilon_lo": "lowest ε",
    "epsilon_noise": "ε of the noise",
    "noise_scale": "noise scale",
    "noise_term": "noise term",
    "reg_term": "regularisation term",
    "sample_term": "sample term",
    "n_classes": "classes",
    "n_parties": "parties",
    "n_groups": "groups",
    "n_jobs": "parallel jobs",
    "n_candidates": "candidates",
    "vote_gap": "gap, vote",
    "weighted_gap": "gap, weighted",
    "far_outside": "far outside",
    "label_flip": "one label flipped",
    "feature_flip": "one feature vector flipped",
    "delta>0": "Δ > 0 branch",
    "delta=0": "Δ = 0 branch",
    "ci_low": "95 % CI, low",
    "ci_high": "95 % CI, high",
    "ci95": "± 95 % CI",
    "auc": "AUC",
    "auc_hl": "AUC, C-hl",
    "auc_wmv": "AUC, C-wmv",
    "auc_best_single": "AUC, best single block",
    "q_k": "qₖ",
    "d_k": "dₖ",
    "eps_k": "εₖ",
    "Delta_k": "Δₖ",
    "lambda_k": "λₖ",
}

#: A header or cell that is a code name: ``lam_bottom``, ``n_classes``, ``delta>0``.
CODE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+$|^[a-z]+[<>=]+\d+$")

#: A header naming a p-value: its numbers print as p-values (down to "< 1e-300").
P_VALUE = re.compile(r"(?:^|\b)(?:p|p-value|p value|p_value|pvalue|p adjusted|p_adjusted)(?:\b|$)", re.I)


#: Unicode subscripts, for a one-letter index written as code (``w_s`` → "wₛ", ``q_k`` → "qₖ").
SUBSCRIPTS = dict(zip("0123456789aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))
SUBSCRIPTED = re.compile(r"(?<![a-z0-9])([A-Za-zα-ωΑ-Ω])_([0-9aehijklmnoprstuvx])(?![A-Za-z0-9])")


#: Unicode superscripts, for an exponent written as code (``ε^(k)`` → "ε⁽ᵏ⁾", ``r^(d-1)`` → "r⁽ᵈ⁻¹⁾").
SUPERSCRIPTS = dict(zip("0123456789+-−=()abcdefghijklmnoprstuvwxyz", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ"))
SUPERSCRIPTED = re.compile(r"(?<![\w\\])([A-Za-zα-ωΑ-Ω])\^(\([^()\s]{1,8}\)|[-−]?\d+)")


def math_text(text):
    """Plain-text math in a table typeset with Unicode: ``w_s`` → "wₛ", ``ε^(k)`` → "ε⁽ᵏ⁾", ``q_k`` → "qₖ".

    Only one-letter subscripts and short exponents are rewritten (a code name such as ``n_jobs``
    is left alone); an exponent with a character that has no superscript form is kept as it is.
    """
    text = SUBSCRIPTED.sub(lambda m: m.group(1) + SUBSCRIPTS[m.group(2)], text)

    def sup(m):
        power = m.group(2)
        if all(ch in SUPERSCRIPTS for ch in power):
            return m.group(1) + "".join(SUPERSCRIPTS[ch] for ch in power)
        return m.group()

    return SUPERSCRIPTED.sub(sup, text)


def readable_header(name):
    """A column header in words: ``lam_bottom`` → "λ at the grid's bottom", ``q_k`` → "qₖ".

    Known code names come from :data:`WORDS`; any other ``snake_case`` name has its underscores
    read as spaces (``n_parties`` → "parties": a leading ``n_`` is "the number of"). Headers
    already in words are kept.
    """
    if isinstance(name, tuple):
        return ", ".join(readable_header(part) for part in name if str(part) != "")
    text = str(name)
    if text in WORDS:
        return WORDS[text]
    words = re.sub(r"\b(q|d|eps|Delta|lambda)_k\b", lambda m: WORDS[m.group(0)], text)
    words = math_text(words)
    words = re.sub(r"\w+(?:_\w+)+|\w+[<>=]+\d+", lambda m: _code_to_words(m.group(0)), words)
    return words


def _code_to_words(token):
    if token in WORDS:
        return WORDS[token]
    if token.startswith("n_"):
        return token[2:].replace("_", " ")
    parts = [WORDS.get(part, part) for part in token.split("_")]
    return " ".join(parts)


def _sci(value, significant=2):
    """``2043.36`` → "2.0e3", ``5.29832e-05`` → "5.3e−5" (a minus sign, no "+", no padding)."""
    mantissa, exponent = f"{value:.{significant - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}".replace("-", "−")


def _p_value(value):
    if not np.isfinite(value):
        return MISSING
    if value < 1e-300:
        return "< 1e-300"
    if value < 1e-3:
        return _sci(value, 2)
    return f"{value:.3f}"


#: The branch of objective perturbation as the code names it ("delta=0"): the extra ridge Δ, not a δ.
BRANCH_CODE = re.compile(r"\b(?:branch )?delta\s*([<>=])\s*0\b")


def branch_words(branch):
    """The branch of objective perturbation in the papers' terms: ``"delta>0"`` → "Δ > 0 branch".

    Chaudhuri et al.'s Algorithm 2 adds an extra ridge Δ when ε′ ≤ 0 (the "Δ > 0" branch, noise at
    ε/2) and none otherwise ("Δ = 0"); the mechanisms are pure ε-DP, so no δ is involved.
    """
    return BRANCH_CODE.sub(lambda m: f"Δ {m.group(1)} 0 branch", str(branch))


BOOLEAN_IN_TEXT = re.compile(r"([:=]\s*)(True|False)\b")
LONG_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[-+]?\d+(?![\w.])|(?<![\w.])\d+\.\d{2,}(?![\w.])")


def _four_digits(number):
    """A printed number cut to four significant digits, trailing zeros kept (``1.9848`` → "1.985")."""
    if "e" in number:  # 5.29832e-05 → "5.3e−5", as a column of such numbers prints
        return _sci(float(number), 2)
    digits = number.replace(".", "").lstrip("0")
    if len(digits) <= 4:
        return number
    return np.format_float_positional(float(number), precision=4, unique=False, fractional=False, trim="k").rstrip(".")


def _cell_text(value, missing):
    """A non-numeric cell as text: booleans as words, dicts as "key: value" lists, no NaN."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return missing
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return "; ".join(
            f"{k}: {v:.3g}" if isinstance(v, float) else f"{k}: {_cell_text(v, missing)}" for k, v in value.items()
        )
    if isinstance(value, Real) and not isinstance(value, Integral):
        v = float(value)
        if not np.isfinite(v):
            return missing if np.isnan(v) else ("∞" if v > 0 else "−∞")
        if v == 0:
            return "0"
        if 1e-3 <= abs(v) < 1e4:  # four significant digits, no trailing zeros: 44.9, 0.1235, 2
            return np.format_float_positional(v, precision=4, unique=True, fractional=False, trim="-").replace("-", "−")
        return _sci(v, 3)
    text = str(value)
    if text in ("nan", "NaN", "<NA>", "None"):
        return missing
    if CODE_NAME.match(text) and text in WORDS:
        return WORDS[text]
    if text in ("True", "False"):
        return "yes" if text == "True" else "no"
    # A check printed inside a sentence ("parts disjoint: True"): the boolean in words too.
    text = BOOLEAN_IN_TEXT.sub(lambda m: m.group(1) + ("yes" if m.group(2) == "True" else "no"), text)
    text = branch_words(text)
    # A number inside a sentence at four significant digits too ("sensitivity 2.0000" → "2.000").
    text = LONG_NUMBER.sub(lambda m: _four_digits(m.group()), text)
    return math_text(text)


def _number_column(values, header, decimals, missing):
    finite = values[np.isfinite(values)]
    if P_VALUE.search(str(header)):
        return values.map(_p_value)
    if len(finite) and np.all(finite == np.round(finite)) and np.all(np.abs(finite) < 1e15):
        if np.abs(finite).max() < 1e6:
            return values.map(lambda v: f"{int(v)}" if np.isfinite(v) else missing)
    nonzero = np.abs(finite[finite != 0])
    if (
        decimals is None
        and len(nonzero)
        and (nonzero.max() >= 1e4 or (nonzero.max() >= 1 and nonzero.max() / nonzero.min() > 1e4))
    ):
        # A quantity spanning decades (a λ chosen from a grid, a noise-to-signal ratio):
        # two significant digits in scientific notation, the same for every row.
        return values.map(lambda v: missing if not np.isfinite(v) else ("0" if v == 0 else _sci(v, 2)))
    if decimals is not None:
        places = decimals
    else:
        places = min(decimals_of(finite.round(4)), 4)
        if len(nonzero):  # at most four significant digits: 123.4567 → 123.5
            places = min(places, max(0, 4 - int(np.floor(np.log10(nonzero.max()))) - 1))
    return values.map(lambda v, places=places: fixed_text(v, places, missing))


def tidy(frame, decimals=None, missing=MISSING):
    """Any table formatted for reading: strings, nothing cut, no NaN, counts as integers.

    A column whose values are all whole numbers (``3.0``) prints as integers; a column of
    p-values (its header says "p") prints down to ``< 1e-300``; a column spanning decades (a
    chosen λ) prints with two significant digits in scientific notation (``2.0e3``); any other
    numeric column prints in one fixed-point format with ``decimals`` decimals (by default the
    most any of its values needs, at most 4 and at most four significant digits), so ``0.0696``
    never shows as ``6.9571e-02``; a non-zero value too small for them reads ``< 0.0001`` (never
    a false ``0.0000``). Booleans read "yes" / "no", a dict reads "key: value; …", and NaN, None
    and ``<NA>`` show as ``missing``.
    """
    out = pd.DataFrame(index=frame.index)
    for position, column in enumerate(frame.columns):
        series = frame.iloc[:, position]
        if pd.api.types.is_bool_dtype(series) or not pd.api.types.is_numeric_dtype(series):
            out[column] = series.map(lambda v: _cell_text(v, missing))
            continue
        out[column] = _number_column(series.astype(float), column, decimals, missing)
    return out


def _without_index(frame):
    """The index as ordinary columns (a default 0..n-1 index is dropped), headers in words."""
    frame = frame.copy()
    if isinstance(frame.columns, pd.MultiIndex):
        frame.columns = [tuple(str(part) for part in c) for c in frame.columns]
    index = frame.index
    default = isinstance(index, pd.RangeIndex) or (
        index.nlevels == 1 and index.name is None and pd.api.types.is_integer_dtype(index)
    )
    if default:
        frame = frame.reset_index(drop=True)
    else:
        names = [n if n is not None else "" for n in index.names]
        if index.nlevels == 1 and not names[0]:
            names = [""]
        frame.index = index.set_names([n or f"level {i}" for i, n in enumerate(names)])
        frame = frame.reset_index()
        if index.nlevels == 1 and not names[0]:
            frame = frame.rename(columns={frame.columns[0]: ""})
    frame.columns = [readable_header(c) for c in frame.columns]
    return frame


class ScrollableTable:
    """A table of strings and its footnote, shown as HTML that scrolls sideways when too wide.

    ``frame`` is a plain :class:`pandas.DataFrame`; the text form (``repr``) prints every row
    and column in full. With ``fold`` the table is shown folded under ``summary``.
    """

    def __init__(self, frame, footnote="", summary=None, fold=False):
        self.frame = frame
        self.footnote = footnote
        self.summary = summary
        self.fold = fold

    def _repr_html_(self):
        return scrollable(self.frame, self.footnote, summary=self.summary, fold=self.fold)

    def __repr__(self):
        with pd.option_context(
            "display.max_rows", None, "display.max_columns", None, "display.width", 10_000, "display.max_colwidth", None
        ):
            text = self.frame.to_string()
        return text + (f"\n{self.footnote}" if self.footnote else "")


#: Width (CSS pixels) a table may take: the text column of the book at a 1400 px window (784 px), with a margin.
COLUMN_PX = 776
#: Estimated width (CSS pixels) of a digit (and of ±, −, the point), of any other character and of a
#: cell's padding in the book's table font (0.9 of the body's 16 px, set in book/_static/dpstack.css),
#: calibrated on the tables of the built book: a table's narrowest width measured in Chromium.
DIGIT_PX, CHAR_PX, PAD_PX = 9.6, 8.4, 17
DIGITS = set("0123456789±−-.,%()[]<>")
#: A word longer than this (a file path, a parameter list) may break anywhere in its cell, so one name
#: does not widen its column past a phone's screen.
LONG_WORD = 18

#: A cell that is a number (or numbers: "0.944 ± 0.006 (0.95)", "[−0.02, +0.11]", "< 1e-300", "12 %").
NUMERIC_CELL = re.compile(r"^(?=.*[\d∞])[\s\d.,:−+\-±()\[\]%e<>≤≥≈~∞—/×⁻⁰¹²³⁴⁵⁶⁷⁸⁹·]+$")


def _numeric_columns(shown):
    """Which columns hold numbers only (a dash for a missing value allowed): right-aligned."""
    out = []
    for i in range(shown.shape[1]):
        cells = [str(v) for v in shown.iloc[:, i] if str(v) != MISSING]
        out.append(bool(cells) and all(NUMERIC_CELL.match(c) for c in cells))
    return out


def _cell_html(text, numeric):
    """A cell's HTML: a number's "mean ± CI" never breaks inside; it may break before "(paper)"."""
    escaped = _html.escape(text)
    if numeric:
        escaped = escaped.replace(" ± ", "\u00a0±\u00a0").replace("&lt; ", "&lt;\u00a0").replace("&gt; ", "&gt;\u00a0")
    return escaped


def _min_width(text, numeric):
    """The narrowest a cell can be (CSS pixels, estimated): its longest unbreakable run."""
    if numeric:
        text = text.replace(" ± ", "±").replace("< ", "<").replace("> ", ">")
    runs = [run[:LONG_WORD] for run in text.split()] or [""]  # a longer word breaks (class dpstack-long)
    return max(sum(DIGIT_PX if ch in DIGITS else CHAR_PX for ch in run) for run in runs) + PAD_PX


def column_widths(shown):
    """The estimated narrowest width (CSS pixels) of each column of a table of strings."""
    numeric = _numeric_columns(shown)
    widths = []
    for i, column in enumerate(shown.columns):
        cells = [str(v) for v in shown.iloc[:, i]]
        widths.append(max([_min_width(str(column), False)] + [_min_width(c, numeric[i]) for c in cells]))
    return widths


def split_columns(shown, keys=1, room=COLUMN_PX):
    """``shown`` cut into tables that each fit ``room`` pixels: the first ``keys`` columns (what a
    row is) repeated in each, the other columns shared out in their order. One table if it fits."""
    widths = column_widths(shown)
    keys = min(keys, shown.shape[1] - 1) if shown.shape[1] > 1 else 0
    if sum(widths) <= room or shown.shape[1] <= keys + 1:
        return [shown]
    base = sum(widths[:keys])
    groups, current, used = [], [], base
    for i in range(keys, shown.shape[1]):
        if current and used + widths[i] > room:
            groups.append(current)
            current, used = [], base
        current.append(i)
        used += widths[i]
    groups.append(current)
    if len(groups) > 1 and len(groups[-1]) == 1 and len(groups[-2]) > 2:  # no lone last column
        groups[-1].insert(0, groups[-2].pop())
    return [shown.iloc[:, list(range(keys)) + group] for group in groups]


def table_html(shown):
    """HTML of one table of strings in the book's style: text left-aligned and wrapping, numbers
    right-aligned (class ``dpstack-num``), no index column."""
    numeric = _numeric_columns(shown)
    cls = [' class="dpstack-num"' if n else "" for n in numeric]

    def cell_class(value, c, n):
        long = not n and any(len(word) > LONG_WORD for word in str(value).split())
        return ' class="dpstack-long"' if long else c

    head = "".join(f"<th{c}>{_html.escape(str(name))}</th>" for name, c in zip(shown.columns, cls))
    body = "".join(
        "<tr>"
        + "".join(f"<td{cell_class(v, c, n)}>{_cell_html(str(v), n)}</td>" for v, c, n in zip(row, cls, numeric))
        + "</tr>\n"
        for row in shown.itertuples(index=False, name=None)
    )
    return f'<table class="dataframe dpstack-table">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>'


def scrollable(frame, footnote="", formatted=False, summary=None, fold=False, keys=None):
    """HTML of ``frame`` in the book's table style, fitting the text column.

    Every row, column and character is shown (no "…"), without an index column: a meaningful
    index becomes the first columns, a default 0..n-1 index is dropped. Headers are put in words
    (:func:`readable_header`). Unless ``formatted``, numbers are first formatted by :func:`tidy`.
    Text is left-aligned and wraps; a column of numbers is right-aligned. A table too wide for the
    text column even with its text wrapped is split (:func:`split_columns`) into tables that fit,
    each repeating the ``keys`` first columns (by default the columns the index became, or the
    first). ``footnote`` is printed under the table, with a line saying what a dash means when the
    table has one and the footnote does not. Only with ``fold`` is the table folded under
    ``summary`` (by default its size), opened with a click: for a reference list the page's prose
    does not discuss.
    """
    if isinstance(frame, ScrollableTable):
        fold = fold or frame.fold
        frame, footnote, summary = frame.frame, footnote or frame.footnote, summary or frame.summary
    if isinstance(frame, pd.Series):
        frame = frame.to_frame()
    if keys is None:
        index = frame.index
        default = isinstance(index, pd.RangeIndex) or (
            index.nlevels == 1 and index.name is None and pd.api.types.is_integer_dtype(index)
        )
        keys = 1 if default else index.nlevels
    frame = _without_index(frame)
    all_text = all(frame.iloc[:, i].map(lambda v: isinstance(v, str)).all() for i in range(frame.shape[1]))
    shown = frame if formatted or all_text else tidy(frame)
    shown = shown.apply(lambda col: col.map(lambda v: _cell_text(v, MISSING)))
    has_dash = bool(shown.isin([MISSING]).to_numpy().any())
    if has_dash and MISSING not in (footnote or ""):
        footnote = (
            footnote + " " if footnote else ""
        ) + f"{MISSING}: no value in this cell (not applicable or not computed)."
    note = f'<p class="dpstack-table-note">{_html.escape(math_text(footnote))}</p>' if footnote else ""
    box = "".join(
        f'<div class="{SCROLL_CLASS}" style="overflow-x:auto;max-width:100%">{table_html(part)}</div>'
        for part in split_columns(shown, keys=keys)
    )
    if fold:
        line = summary or f"{len(shown)} rows × {shown.shape[1]} columns"
        box = (
            f'<details class="dpstack-table-long"><summary>{_html.escape(line)} '
            f"(click to show the table)</summary>{box}</details>"
        )
    return box + note


def as_table(frame, footnote="", decimals=None, summary=None, fold=False):
    """Any table for a notebook page: formatted by :func:`tidy`, scrolling sideways when too wide.

    ``display(as_table(claims))`` shows every row, column and character, no index column, no
    NaN, headers in words, counts as integers, and ``footnote`` under the table; with ``fold`` it
    is folded under ``summary`` (for a reference list the page's prose does not discuss).
    """
    if isinstance(frame, pd.Series):
        frame = frame.to_frame()
    return ScrollableTable(tidy(frame, decimals=decimals), footnote, summary=summary, fold=fold)


def book_tables():
    """Show every :class:`pandas.DataFrame` and :class:`~pandas.Series` of a notebook in the book's style.

    Registers :func:`scrollable` as the notebook's HTML form of both, so a table a page displays
    without calling :func:`as_table` still has no index column, no NaN and headers in words.
    Outside IPython this does nothing.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with every notebook kernel
        return
    shell = get_ipython()
    if shell is None:
        return
    formatter = shell.display_formatter.formatters["text/html"]
    formatter.for_type(pd.DataFrame, lambda frame: scrollable(frame))
    formatter.for_type(pd.Series, lambda series: scrollable(series.to_frame()))


#: The columns of a guarantees table (each method's entry in a page's ``GUARANTEES``, in this order).
GUARANTEE_COLUMNS = ("guarantee", "neighbouring", "privacy unit", "assumes")


def guarantee_frame(guarantees, methods, strict=True):
    """What each method guarantees: a row per method of ``methods`` from ``guarantees`` (method → the four
    :data:`GUARANTEE_COLUMNS`), indexed by method; ``strict=False`` leaves out methods without an entry."""
    rows = [dict(zip(GUARANTEE_COLUMNS, guarantees[m]), method=m) for m in methods if strict or m in guarantees]
    return pd.DataFrame(rows).set_index("method")
