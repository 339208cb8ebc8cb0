"""Shared figure style and the plots several pages draw."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

__all__ = [
    "COLORS",
    "SVG_METADATA",
    "SVG_RC",
    "color_for",
    "save_figure",
    "style",
    "notebook_setup",
    "plot_mean_with_spread",
    "mean_interval",
    "set_grid_ticks",
    "plot_privacy_loss_histogram",
]

#: One colour per method, stable across the whole book (every page draws through this table).
COLORS = {
    "PLR": "#1f77b4",
    "PST-S": "#ff7f0e",
    "PST-F(U)": "#2ca02c",
    "PST-F(W)": "#d62728",
    "PPTL-FS(U)": "#2ca02c",
    "PPTL-FS(W)": "#d62728",
    "PST-H": "#d62728",
    "SimComb": "#9467bd",
    "PPHTL": "#9467bd",
    "Direct": "#1f77b4",
    "SourceD": "#17becf",
    "non-private": "#444444",
    "vote": "#9467bd",
    "soft": "#8c564b",
    "avg": "#e377c2",
    "batch": "#444444",
    "indiv": "#7f7f7f",
    "C-hl": "#d62728",
    "C-mv": "#bcbd22",
    "C-wmv": "#17becf",
}
_FALLBACK = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)

#: metrics bounded to [0, 1]: their intervals are clipped to that range
BOUNDED_METRICS = ("auc", "accuracy", "error", "acc")


def color_for(label):
    """The book's colour for a method (a stable fallback for labels not in :data:`COLORS`)."""
    if label in COLORS:
        return COLORS[label]
    import zlib

    return _FALLBACK[zlib.crc32(str(label).encode()) % len(_FALLBACK)]


#: Passed to every SVG the book writes: no creation date, so the same figure gives the same bytes.
SVG_METADATA = {"Date": None}
#: rcParams every SVG is drawn with: ids (clip paths, glyphs) hashed with a fixed salt, not a random one.
SVG_RC = {"svg.hashsalt": "dpstack"}


def save_figure(fig, path, **kwargs):
    """Save ``fig`` to ``path``; an SVG comes out byte-identical from run to run.

    For SVG output (by ``format`` or the file's suffix) the ids are hashed with the fixed salt
    of :data:`SVG_RC` and the metadata carry no date (:data:`SVG_METADATA`), whatever the
    current rcParams; other formats are saved as ``fig.savefig`` would. ``kwargs`` go to
    :meth:`matplotlib.figure.Figure.savefig`.
    """
    from pathlib import Path

    fmt = str(kwargs.get("format") or Path(path).suffix.lstrip(".")).lower()
    if fmt == "svg":
        kwargs["metadata"] = {**SVG_METADATA, **(kwargs.get("metadata") or {})}
    with plt.rc_context(SVG_RC):
        fig.savefig(path, **kwargs)
    return path


def style(vector=True):
    """Apply the book's matplotlib style (call once per notebook, before the first figure).

    In a notebook (IPython), figures are shown as SVG: vector images stay sharp at any
    screen width and zoom. The SVG is deterministic — a fixed ``svg.hashsalt`` for its ids
    and no creation date — so re-executing a notebook gives byte-identical figures; text
    stays text. ``vector=False`` keeps the inline backend's PNG output.
    """
    plt.rcParams.update(
        {
            "figure.figsize": (6.4, 3.8),
            "figure.dpi": 110,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "legend.frameon": False,
            "font.size": 10,
            "svg.hashsalt": "dpstack",
            "svg.fonttype": "none",
            "savefig.dpi": 200,
        }
    )
    if vector and _in_ipython():
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("svg", metadata=SVG_METADATA)


#: pandas display options of every experiment page: whole tables, four decimals, long claims kept.
PANDAS_DISPLAY = {"display.width": 160, "display.max_columns": 30, "display.precision": 4, "display.max_colwidth": 100}


def notebook_setup(vector=True):
    """Prepare a notebook page: the book's figure style (:func:`style`) and pandas display options.

    One call at the top of a page replaces the same half-dozen setup lines on every page;
    :data:`PANDAS_DISPLAY` lists the options (tables formatted by :mod:`dpstack.tables` do not
    depend on them).
    """
    import pandas as pd

    style(vector=vector)
    for option, value in PANDAS_DISPLAY.items():
        pd.set_option(option, value)


def _in_ipython():
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def mean_interval(values, level=0.95):
    """Mean and two-sided t-interval of the mean of ``values`` (the interval is the mean for n < 2)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    mean = float(v.mean()) if v.size else np.nan
    if v.size < 2:
        return mean, mean, mean
    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return mean, mean - half, mean + half


def plot_mean_with_spread(ax, df, x, y, group, label_fmt="{}", logx=False, colors=None, bounds=None, level=0.95):
    """Mean of ``y`` against ``x``, one line per value of ``group``, with a ``level`` confidence band.

    The band is the t-interval of the mean over repeats (not ±1 s.d.), clipped to ``bounds``;
    ``bounds`` defaults to (0, 1) for a metric named like an AUC or an accuracy. With ``logx``
    the x ticks are the grid values themselves.
    """
    if bounds is None and any(k in str(y).lower() for k in BOUNDED_METRICS):
        bounds = (0.0, 1.0)
    for key, part in df.groupby(group, sort=True):
        rows = [(xv, *mean_interval(g[y], level)) for xv, g in part.groupby(x)]
        xs, mean, lo, hi = (np.array(c, dtype=float) for c in zip(*rows))
        if bounds is not None:
            lo, hi = np.clip(lo, *bounds), np.clip(hi, *bounds)
        label = label_fmt.format(key)
        color = (colors or {}).get(label) or color_for(label)
        ax.plot(xs, mean, marker="o", ms=3, label=label, color=color)
        ax.fill_between(xs, lo, hi, alpha=0.15, color=color, lw=0)
    if logx:
        ax.set_xscale("log")
        set_grid_ticks(ax, sorted(df[x].unique()))
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    return ax


def set_grid_ticks(ax, values, axis="x", fmt="{:g}"):
    """Ticks at the grid's own values, labelled plainly (no "6×10⁻¹" or lone minor labels)."""
    from matplotlib.ticker import FixedLocator, NullLocator

    values = [float(v) for v in values]
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(values))
    target.set_minor_locator(NullLocator())
    (ax.set_xticklabels if axis == "x" else ax.set_yticklabels)([fmt.format(v) for v in values])
    return ax


def plot_privacy_loss_histogram(ax, losses, epsilon, label=None):
    """Histogram of privacy losses with the claimed ε as a vertical line."""
    losses = np.asarray(losses)
    ax.hist(losses, bins=60, alpha=0.6, label=label or f"ε = {epsilon:g}")
    ax.axvline(epsilon, color="k", ls="--", lw=1)
    ax.axvline(-epsilon, color="k", ls="--", lw=1)
    ax.set_xlabel("privacy loss  log p(w|D) − log p(w|D')")
    ax.set_ylabel("draws")
    return ax
