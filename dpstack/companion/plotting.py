"""Shared figure style and the plots several pages draw."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from dpstack.companion.stats import mean_interval

__all__ = [
    "COLORS",
    "COLUMN_WIDTHS",
    "FIGURE_WIDTH",
    "MIN_TEXT_PX",
    "FigureStyleWarning",
    "alt_text_problem",
    "check_figure",
    "colour_name",
    "figure_layout",
    "mark_stand_in",
    "panels_stacked",
    "shared_colours",
    "COLOUR_WORDS",
    "finish_figure",
    "legend_below",
    "method_of",
    "ours_paper_key",
    "panels",
    "show_figure",
    "SVG_METADATA",
    "SVG_RC",
    "color_for",
    "save_figure",
    "style",
    "notebook_setup",
    "plot_mean_with_spread",
    "set_grid_ticks",
    "plot_privacy_loss_histogram",
]

#: Width (CSS pixels) of the book's text column at a 1400 px and a 400 px wide window, measured in
#: the built HTML; a figure is drawn at its own size, or shrunk to the column when it is wider.
COLUMN_WIDTHS = {1400: 784, 400: 368}
#: The smallest a figure's text may be on screen at any of :data:`COLUMN_WIDTHS` (CSS pixels).
MIN_TEXT_PX = 9.0
#: Every figure is this wide (inches): at 10 pt its text is 9.3 px in the 368 px column of a phone.
FIGURE_WIDTH = 5.4
#: One font size for every text of a figure (points).
FONT_SIZE = 10
#: Colours a figure may use besides the method colours: black, white and greys.
_NEUTRAL_TOLERANCE = 0.02

#: One colour per method, stable across the whole book (every page draws through this table).
COLORS = {
    "PLR": "#1f77b4",
    "PST-S": "#ff7f0e",
    "PST-F(U)": "#2ca02c",
    "PST-F(W)": "#d62728",
    "PPTL-FS(U)": "#2ca02c",
    "PPTL-FS(W)": "#e377c2",  # not PST-F(W)'s red: the two are drawn together on the own-data page
    "PST-H": "#e377c2",
    "PST-F": "#d62728",
    "PPTL-FS": "#bcbd22",
    "SimComb": "#9467bd",
    "PPHTL": "#9467bd",
    "Direct": "#1f77b4",
    "SourceD": "#17becf",
    "PPTL-FS(R)": "#bcbd22",
    # PST Table 2's names for the transfer methods (PPTL-FS(W), PPTL-FS(R), SimComb, Direct): their colours
    "PST-H(W)": "#e377c2",
    "PST-H(U)": "#bcbd22",
    "PLR(target)": "#1f77b4",
    # today's alternatives, drawn beside PLR, PST-S and PST-F(W)
    "output perturbation": "#2ca02c",
    "DP-GD": "#9467bd",
    "DP-GD (replace-one)": "#e377c2",
    "DP-SGD": "#17becf",
    "PST-F(W), DP-GD blocks": "#8c564b",  # not PST-F(W)'s red: drawn beside it
    # PPTL's page of today's alternatives, drawn beside Direct, SourceD, SimComb and PPTL-FS(W)
    "DP-GD (target only)": "#ff7f0e",
    "DP-GD from the source": "#d62728",
    "DP-GD from a public source": "#8c564b",
    "PLR-FS": "#8c564b",
    "PLR(main)": "#7f7f7f",
    "non-private": "#444444",
    "vote": "#9467bd",
    "soft": "#2ca02c",
    "avg": "#ff7f0e",
    "batch": "#444444",
    "indiv": "#7f7f7f",
    # MPL against today's alternatives (drawn beside vote, soft and avg)
    "PATE-GNMax": "#1f77b4",
    "DP-FedAvg": "#d62728",
    "soft + Gaussian noise": "#17becf",
    # the accuracy of always predicting the test set's most frequent label (the MPL accuracy figures)
    "majority class": "#8c564b",
    "C-hl": "#d62728",
    "C-mv": "#bcbd22",
    "C-wmv": "#17becf",
    # the synthetic RUIJIN-like cohort's two kinds of centre and of feature importance
    "main centre": "#d62728",
    "branch centre": "#1f77b4",
    "PST Table 3": "#d62728",
    # the verdicts of the papers' claims (the findings page)
    "supported": "#2ca02c",
    "contradicted": "#d62728",
    "reversed, within resolution": "#ff7f0e",
    "inconclusive": "#7f7f7f",
    # IBM's diffprivlib beside dpstack's PLR (the audit chapter's page on its logistic regression)
    "diffprivlib": "#d62728",
    "diffprivlib, q = 1": "#7f7f7f",
    "diffprivlib, q = 2": "#bcbd22",
    "diffprivlib, q = 4": "#d62728",
    "diffprivlib, q = 10": "#8c564b",
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
    method = method_of(label)  # "PST-S — papers' protocol" is drawn in PST-S's colour
    if method is not None:
        return COLORS[method]
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
            "figure.figsize": (FIGURE_WIDTH, 3.4),
            "figure.dpi": 110,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "legend.frameon": False,
            "font.size": FONT_SIZE,
            "axes.titlesize": FONT_SIZE,
            "axes.labelsize": FONT_SIZE,
            "xtick.labelsize": FONT_SIZE,
            "ytick.labelsize": FONT_SIZE,
            "legend.fontsize": FONT_SIZE,
            "figure.titlesize": FONT_SIZE,
            "figure.constrained_layout.use": True,
            "axes.formatter.useoffset": False,
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
    :data:`PANDAS_DISPLAY` lists the options (tables formatted by :mod:`dpstack.companion.tables` do not
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


# --------------------------------------------------------------------------------------------
# One figure style, enforced: stacked panels, legends outside the data, the colour map, alt text
# --------------------------------------------------------------------------------------------


class FigureStyleWarning(UserWarning):
    """A figure breaks the book's figure style (see :func:`check_figure`)."""


def panels(n=1, height=3.0, width=FIGURE_WIDTH, **kwargs):
    """A figure of ``n`` panels stacked one above the other, :data:`FIGURE_WIDTH` wide.

    Panels are stacked, never side by side, so every text stays at least :data:`MIN_TEXT_PX`
    on a phone. Returns ``(fig, ax)`` for one panel and ``(fig, axes)`` (a 1-d array) otherwise;
    ``kwargs`` go to :func:`matplotlib.pyplot.subplots` (``sharex`` for example).
    """
    fig, axes = plt.subplots(n, 1, figsize=(width, height * n), squeeze=False, layout="constrained", **kwargs)
    axes = axes[:, 0]
    return (fig, axes[0]) if n == 1 else (fig, axes)


def method_of(label):
    """The method of :data:`COLORS` a legend label names (``"PLR ε = 1"`` → ``"PLR"``), or None."""
    label = str(label)
    best = None
    for key in COLORS:
        if label == key or any(label.startswith(key + sep) for sep in (" —", " (", ", ", " =")):
            if best is None or len(key) > len(best):
                best = key
    return best


def ours_paper_key(ours="ours (solid; band: 95 % CI)", paper="paper (dashed)"):
    """Two black legend entries saying which line style is ours and which the paper's."""
    from matplotlib.lines import Line2D

    return [Line2D([], [], color="k", ls="-", label=ours), Line2D([], [], color="k", ls="--", marker="x", label=paper)]


def _legend_columns(fig, labels):
    longest = max((len(str(t)) for t in labels), default=1)
    per_entry = 0.55 * FONT_SIZE * longest + 30.0  # points: text plus the handle and the gap
    return int(max(1, min(len(labels), (fig.get_figwidth() * 72.0) // per_entry)))


def legend_below(fig, extra=(), ncol=None):
    """Replace every panel's legend by one legend below the panels, outside the data.

    Entries are gathered from the panels' legends (one per label) followed by the handles in ``extra``
    (for example :func:`ours_paper_key`). Returns the legend, or None when nothing is labelled.
    """
    handles, labels = [], []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:  # a panel without a legend adds no entries
            continue
        # the entries the panel's legend shows, its own handles included
        for h, lab in zip(legend.legend_handles, [t.get_text() for t in legend.get_texts()]):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
        legend.remove()
    for h in extra:
        if h.get_label() not in labels:
            handles.append(h)
            labels.append(h.get_label())
    for old in list(fig.legends):
        old.remove()
    if not handles:
        return None
    if fig.get_layout_engine() is None or type(fig.get_layout_engine()).__name__ != "ConstrainedLayoutEngine":
        fig.set_layout_engine("constrained")
    ncol = ncol or _legend_columns(fig, labels)
    while True:  # as many columns as fit in the figure's width
        legend = fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False)
        if ncol == 1 or not hasattr(fig.canvas, "get_renderer"):
            return legend
        box = legend.get_window_extent(fig.canvas.get_renderer())
        if box.width <= fig.bbox.width * 0.98:
            # the panels keep their height: the figure grows by the legend's
            fig.set_figheight(fig.get_figheight() + box.height / fig.dpi)
            return legend
        legend.remove()
        ncol -= 1


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _plain_ticks(ax):
    """Tick labels as plain numbers: no "1.02643×10⁰", no offset, no lone minor labels."""
    from matplotlib.ticker import FixedFormatter, FuncFormatter, MaxNLocator, NullFormatter, ScalarFormatter

    def plain(value, _pos=None):
        if value != 0 and not 1e-3 <= abs(value) < 1e4:
            power = np.log10(abs(value))
            if np.isclose(power, round(power)):  # 10⁻⁶ rather than 1e-06
                sign = "−" if value < 0 else ""
                return f"{sign}10{str(int(round(power))).translate(_SUPERSCRIPT)}"
        if abs(value) >= 1000 and float(value).is_integer():
            return f"{value:,.0f}".replace("-", "−")  # 1,000 rather than 1e+03
        return f"{value:.3g}".replace("-", "−")

    for axis in (ax.xaxis, ax.yaxis):
        scale = axis.get_scale()
        if isinstance(axis.get_major_formatter(), (FixedFormatter, FuncFormatter)):
            # labels written by hand (set_ticklabels: "∞" at its stand-in position) or already plain
            continue
        if scale == "log":
            lo, hi = sorted(abs(v) for v in axis.get_view_interval())
            if lo > 0 and hi / lo < 10:  # less than one decade: a few plain ticks
                axis.set_major_locator(MaxNLocator(4))
            axis.set_major_formatter(FuncFormatter(plain))
            axis.set_minor_formatter(NullFormatter())
        elif scale == "symlog":
            lo, hi = sorted(axis.get_view_interval())
            if sum(lo <= v <= hi for v in axis.get_majorticklocs()) < 3:  # a lone "1.02643×10⁰": a few plain ticks
                axis.set_major_locator(MaxNLocator(4))
            axis.set_major_formatter(FuncFormatter(plain))
            axis.set_minor_formatter(NullFormatter())
        elif scale == "linear" and isinstance(axis.get_major_formatter(), ScalarFormatter):
            axis.get_major_formatter().set_useOffset(False)


def finish_figure(fig, alt=None, extra=()):
    """Apply the book's figure style to a drawn figure; returns the figure.

    Legends move below the panels (:func:`legend_below`, with the handles in ``extra``) unless
    the figure already has a legend of its own outside the panels, tick labels become plain
    numbers, and ``alt`` — the figure's description for readers who cannot see it — is attached.
    """
    if alt is not None:
        fig.dpstack_alt = str(alt)
    for ax in fig.axes:
        _plain_ticks(ax)
    if any(ax.get_legend() is not None for ax in fig.axes) or extra:
        legend_below(fig, extra=extra)
    return fig


def alt_text_problem(alt):
    """Why ``alt`` is not a usable description of a figure (None when it is)."""
    import re

    if alt is None or not str(alt).strip():
        return "no alt text"
    text = str(alt).strip()
    if re.search(r"\.(png|svg|jpe?g|gif|pdf)\b", text, re.I) or re.fullmatch(r"[0-9a-f]{16,}", text):
        return f"alt text is a file name: {text[:60]!r}"
    if len(text.split()) < 6:
        return f"alt text too short to describe the figure: {text!r}"
    return None


def _is_neutral(rgb):
    return max(rgb) - min(rgb) <= _NEUTRAL_TOLERANCE


def _allowed_colours():
    from matplotlib.colors import to_rgb

    return {tuple(round(c, 3) for c in to_rgb(v)) for v in (*COLORS.values(), *_FALLBACK)}


def _rgb_list(colors):
    from matplotlib.colors import to_rgba_array

    try:
        return [tuple(round(float(c), 3) for c in row[:3]) for row in to_rgba_array(colors) if row[3] > 0]
    except (ValueError, TypeError):
        return []


def _data_points(artist, renderer, per_segment=12):
    """Display coordinates of the data an artist draws (lines sampled along their segments)."""
    from matplotlib.collections import LineCollection, PathCollection, PolyCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    pts = []
    if isinstance(artist, Line2D):
        xy = artist.get_transform().transform(np.asarray(artist.get_xydata(), dtype=float))
        segments = [xy]
    elif isinstance(artist, LineCollection):
        segments = [artist.get_transform().transform(np.asarray(s, float)) for s in artist.get_segments()]
    elif isinstance(artist, PathCollection):
        offsets = np.asarray(artist.get_offsets(), dtype=float)
        pts.append(artist.get_offset_transform().transform(offsets))
        segments = []
    elif isinstance(artist, PolyCollection):
        segments = [artist.get_transform().transform(p.vertices) for p in artist.get_paths()]
    elif isinstance(artist, Rectangle):
        box = artist.get_window_extent(renderer)
        xs, ys = np.linspace(box.x0, box.x1, 8), np.linspace(box.y0, box.y1, 8)
        pts.append(np.array([(x, y) for x in xs for y in ys]))
        segments = []
    else:
        segments = []
    for seg in segments:
        seg = seg[np.all(np.isfinite(seg), axis=1)]
        if len(seg) == 0:
            continue
        pts.append(seg)
        if len(seg) > 1:
            t = np.linspace(0.0, 1.0, per_segment)[:, None, None]
            pts.append((seg[:-1][None] * (1 - t) + seg[1:][None] * t).reshape(-1, 2))
    return np.concatenate(pts) if pts else np.empty((0, 2))


def _is_colour_key(ax):
    return hasattr(ax, "_colorbar")


def _data_artists(ax):
    if _is_colour_key(ax):
        return []
    return [a for a in (*ax.lines, *ax.collections, *ax.patches) if a.get_visible()]


def _text_width_scale(fig, renderer, widths):
    """(page width, CSS pixels per point) for each column width, for the figure as saved (tight box)."""
    box = fig.get_tightbbox(renderer)
    width_pt = (box.width + 0.2) * 72.0  # saved with bbox_inches="tight", pad 0.1 in on each side
    natural_px = width_pt * 96.0 / 72.0
    return [(w, min(w, natural_px) / width_pt) for w in widths]


def _labels_collide(ax, axis, labels, renderer):
    """Whether neighbouring tick labels of ``axis`` overlap (rotated labels: their text lines)."""
    span = ax.get_window_extent(renderer)
    horizontal = axis is ax.xaxis
    shown = []
    for t in labels:
        box = t.get_window_extent(renderer)
        anchor = t.get_transform().transform(t.get_position())  # the tick's own place, whatever the alignment
        middle = anchor[0] if horizontal else anchor[1]
        low, high = (span.x0, span.x1) if horizontal else (span.y0, span.y1)
        if low - 2 <= middle <= high + 2:
            shown.append((middle, t, box))
    shown.sort(key=lambda item: item[0])
    for (m0, t0, b0), (m1, _t1, b1) in zip(shown, shown[1:]):
        angle = np.deg2rad(t0.get_rotation() % 180)
        if horizontal and 0.1 < angle < np.pi - 0.1:  # rotated: the gap between the parallel text lines
            line = renderer.points_to_pixels(t0.get_fontsize())
            if (m1 - m0) * abs(np.sin(angle)) < 0.9 * line:
                return True
        elif b0.overlaps(b1):
            return True
    return False


def mark_stand_in(ax, position, label, axis="x"):
    """Record that ``position`` on ``axis`` stands for a value not on the axis (ε = ∞ drawn at twice
    the largest finite ε): its tick must read ``label``, never the stand-in number
    (:func:`check_figure`)."""
    stand_ins = ax.__dict__.setdefault("dpstack_stand_ins", {})
    stand_ins[(axis, float(position))] = str(label)
    return ax


#: Hue ranges (degrees) of the colour words a caption may use.
_HUES = (
    (15, "red"),
    (40, "orange"),
    (72, "yellow"),
    (160, "green"),
    (200, "cyan"),
    (255, "blue"),
    (300, "purple"),
    (345, "pink"),
    (360, "red"),
)
#: Caption words for colours, and the names (:func:`colour_name`) a drawn colour may have to match.
COLOUR_WORDS = {
    "black": {"black"},
    "grey": {"grey", "black"},
    "gray": {"grey", "black"},
    "red": {"red"},
    "orange": {"orange", "brown"},
    "yellow": {"yellow"},
    "olive": {"yellow"},
    "green": {"green", "yellow"},
    "cyan": {"cyan"},
    "teal": {"cyan"},
    "turquoise": {"cyan"},
    "blue": {"blue", "cyan"},
    "purple": {"purple"},
    "violet": {"purple"},
    "lavender": {"purple"},
    "lilac": {"purple"},
    "pink": {"pink", "purple"},
    "magenta": {"pink", "purple"},
    "brown": {"brown", "orange"},
}


def colour_name(colour):
    """The word a reader would use for ``colour``: black, grey, white, red, orange, brown, yellow,
    green, cyan, blue, purple or pink (``"#9467bd"`` → "purple", ``"#7f7f7f"`` → "grey")."""
    import colorsys

    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(colour)
    h, s, v = colorsys.rgb_to_hsv(r, g, b)
    if s < 0.15 or v < 0.15:
        return "black" if v < 0.3 else "white" if v > 0.95 else "grey"
    hue = h * 360
    name = next(word for limit, word in _HUES if hue < limit)
    if name in ("red", "orange") and v < 0.6:
        return "brown"
    return name


def _series(ax):
    """The labelled data series of a panel: (label, colour as hex, line style, marker)."""
    import zlib

    from matplotlib.colors import to_hex

    out = []
    for artist in _data_artists(ax):
        label = str(artist.get_label())
        if label.startswith("_") or not label.strip():  # not in the legend: a band, a reference line
            continue
        if hasattr(artist, "get_color") and not hasattr(artist, "get_facecolor"):
            colours = _rgb_list([artist.get_color()])
            style = (str(artist.get_linestyle()), str(artist.get_marker()))
        else:
            faces = _rgb_list(artist.get_facecolor())
            colours = faces or (_rgb_list(artist.get_edgecolor()) if hasattr(artist, "get_edgecolor") else [])
            paths = artist.get_paths() if hasattr(artist, "get_paths") else []
            shape = str(np.round(paths[0].vertices, 2).tolist()) if len(paths) else ""
            # markers told apart by fill (filled or hollow) and by shape (circle, triangle)
            style = ("filled" if faces else "hollow", f"{type(artist).__name__} {zlib.crc32(shape.encode())}")
        if colours:
            out.append((label, to_hex(colours[0]), *style))
    # a bar chart's bars share the label of their container
    for container in getattr(ax, "containers", []):
        label = str(container.get_label())
        patches = [p for p in container if hasattr(p, "get_facecolor")]
        if not label.startswith("_") and label.strip() and patches:
            out.append((label, to_hex(patches[0].get_facecolor()[:3]), "patch", "bar"))
    return list(dict.fromkeys(out))


def figure_layout(fig):
    """What a caption may say about ``fig``: its panels (position in the figure, title, labelled
    series with their colours) and the tick labels of each axis. Colour bars are not panels."""
    fig.canvas.draw()
    panels_ = []
    for ax in fig.axes:
        if _is_colour_key(ax) or not ax.get_visible():
            continue
        box = ax.get_position()
        ticks = {}
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            ticks[name] = [
                [float(loc), t.get_text()]
                for loc, t in zip(axis.get_majorticklocs(), axis.get_ticklabels())
                if t.get_visible() and t.get_text().strip()
            ]
        panels_.append(
            {
                "box": [round(float(v), 4) for v in (box.x0, box.y0, box.x1, box.y1)],
                "title": ax.get_title(),
                "series": [
                    {"label": label, "color": colour, "linestyle": ls, "marker": marker}
                    for label, colour, ls, marker in _series(ax)
                ],
                "ticks": ticks,
            }
        )
    colours = set()
    for ax in fig.axes:
        for artist in _data_artists(ax):
            if hasattr(artist, "get_color") and not hasattr(artist, "get_facecolor"):
                found = _rgb_list([artist.get_color()])
            else:
                found = _rgb_list(artist.get_facecolor()) + (
                    _rgb_list(artist.get_edgecolor()) if hasattr(artist, "get_edgecolor") else []
                )
            colours.update(colour_name(c) for c in found)
    for legend in [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends):
        for handle in legend.legend_handles:
            colour = (
                handle.get_color()
                if hasattr(handle, "get_color") and not hasattr(handle, "get_facecolor")
                else (handle.get_facecolor() if hasattr(handle, "get_facecolor") else None)
            )
            colours.update(colour_name(c) for c in _rgb_list([colour] if isinstance(colour, str) else colour))
    # a colour-coded panel (a heat map, a scatter coloured by ε) draws its colour map's colours
    from matplotlib.cm import ScalarMappable

    coded = False
    for ax in fig.axes:
        if _is_colour_key(ax):
            continue
        for artist in (*ax.images, *ax.collections):
            if isinstance(artist, ScalarMappable) and artist.get_array() is not None:
                coded = True
                colours.update(colour_name(c) for c in artist.get_cmap()(np.linspace(0, 1, 9))[:, :3])
    return {"panels": panels_, "colours": sorted(colours), "colour_coded": bool(coded)}


def panels_stacked(layout):
    """Whether a layout's panels (two or more) sit one above another, none side by side."""
    boxes = [p["box"] for p in layout["panels"]]
    if len(boxes) < 2:
        return False
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if min(a[2], b[2]) - max(a[0], b[0]) < 0.5 * min(a[2] - a[0], b[2] - b[0]):
                return False  # not in one column: side by side
    return True


def shared_colours(series):
    """Pairs of a panel's series a reader cannot tell apart by colour: two labels in one colour that
    are not one method drawn two ways (ours solid, the paper's dashed); for black and grey
    reference lines, only when their line style and marker are the same too."""
    found = []
    for i, a in enumerate(series):
        for b in series[i + 1 :]:
            if a["color"] != b["color"] or a["label"] == b["label"]:
                continue
            neutral = colour_name(a["color"]) in ("black", "grey", "white")
            if neutral and (a["linestyle"], a["marker"]) != (b["linestyle"], b["marker"]):
                continue
            one_method = method_of(a["label"]) is not None and method_of(a["label"]) == method_of(b["label"])
            if one_method and (a["linestyle"], a["marker"]) != (b["linestyle"], b["marker"]):
                continue
            found.append((a["label"], b["label"], a["color"]))
    return found


def check_figure(fig, widths=None, min_px=MIN_TEXT_PX):
    """Every way ``fig`` breaks the book's figure style, as a list of sentences (empty: none).

    * text: every visible text at least ``min_px`` CSS pixels at each column width of ``widths``
      (default :data:`COLUMN_WIDTHS`); the figure is shown at its own size or shrunk to the column;
    * legends: no data point or line of any panel under a legend;
    * colours: a line, marker or bar labelled with a method of :data:`COLORS` has that method's
      colour, and every colour drawn is one of the map's, a grey or from a colour-coded panel;
    * colour keys: every colour-coded panel (a scatter or image coloured by a value) has a colour bar;
    * ticks: no scientific "×10" tick labels, no offset text, no colliding tick labels;
    * alt text: the figure carries a description (:func:`finish_figure`, :func:`show_figure`).
    """
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import to_rgb
    from matplotlib.text import Text

    widths = COLUMN_WIDTHS if widths is None else widths
    widths = tuple(widths.values() if isinstance(widths, dict) else widths)
    if not hasattr(fig.canvas, "get_renderer"):  # a closed figure: draw it off screen
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems = []
    # text size at the rendered widths
    scales = _text_width_scale(fig, renderer, widths)
    small = {}
    for text in fig.findobj(Text):
        content = text.get_text().strip()
        if not content or not text.get_visible():
            continue
        size = text.get_fontsize()
        for column, scale in scales:
            if size * scale < min_px - 1e-9:
                small.setdefault(column, []).append((size * scale, size, content))
    for column, found in small.items():
        px, pt, content = min(found)
        problems.append(
            f"{len(found)} texts under {min_px:g} px in the {column} px column, the smallest {content[:40]!r} "
            f"at {px:.1f} px ({pt:g} pt)"
        )
    # legends over data
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            clip = ax.bbox
            for artist in _data_artists(ax):
                pts = _data_points(artist, renderer)
                if len(pts) and artist.get_clip_on():  # what the panel clips away is not drawn
                    pts = pts[
                        (pts[:, 0] >= clip.x0)
                        & (pts[:, 0] <= clip.x1)
                        & (pts[:, 1] >= clip.y0)
                        & (pts[:, 1] <= clip.y1)
                    ]
                if len(pts) == 0:
                    continue
                inside = (pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1)
                if inside.any():
                    name = artist.get_label() if not str(artist.get_label()).startswith("_") else type(artist).__name__
                    problems.append(f"legend drawn over the data ({name!r})")
                    break
            else:
                continue
            break
    # colours
    allowed = _allowed_colours()
    for ax in fig.axes:
        for artist in _data_artists(ax):
            coded = isinstance(artist, ScalarMappable) and artist.get_array() is not None
            if coded:
                values = np.asarray(artist.get_array(), dtype=float).ravel()
                values = values[np.isfinite(values)]
                if values.size > 1 and np.ptp(values) > 0 and artist.colorbar is None:
                    problems.append(f"colour-coded panel {ax.get_title()!r} has no colour key")
                continue
            if hasattr(artist, "get_color") and not hasattr(artist, "get_facecolor"):
                colours = _rgb_list([artist.get_color()])
            else:
                colours = _rgb_list(artist.get_facecolor()) + (
                    _rgb_list(artist.get_edgecolor()) if hasattr(artist, "get_edgecolor") else []
                )
            label = str(artist.get_label())
            method = method_of(label) if not label.startswith("_") else None
            if method is not None:
                want = tuple(round(c, 3) for c in to_rgb(COLORS[method]))
                if colours and want not in colours:
                    problems.append(f"{label!r} is drawn in {colours[0]} not the book's {COLORS[method]} for {method}")
            for rgb in colours:
                if rgb not in allowed and not _is_neutral(rgb):
                    problems.append(f"colour {rgb} of {label!r} is not from the book's colour map")
                    break
        for image in [] if _is_colour_key(ax) else ax.images:
            if image.colorbar is None:
                problems.append(f"colour-coded panel {ax.get_title()!r} has no colour key")
    # ticks
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_offset_text().get_text().strip():
                problems.append(f"offset tick text {axis.get_offset_text().get_text()!r} on {ax.get_title()!r}")
            labels = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text().strip()]
            for t in labels:
                if "10^" in t.get_text() or "\\times" in t.get_text() or "×10" in t.get_text():
                    problems.append(f"scientific tick label {t.get_text()!r} on {ax.get_title()!r}")
                    break
            if _labels_collide(ax, axis, labels, renderer):
                problems.append(f"tick labels collide on {ax.get_title()!r}")
    # a stand-in position (ε = ∞ drawn at 16) labelled as the number it is drawn at
    for ax in fig.axes:
        for (name, position), label in getattr(ax, "dpstack_stand_ins", {}).items():
            axis = ax.xaxis if name == "x" else ax.yaxis
            for loc, t in zip(axis.get_majorticklocs(), axis.get_ticklabels()):
                if np.isclose(loc, position) and t.get_text().strip() and t.get_text().strip() != label:
                    problems.append(
                        f"tick at {position:g} on {ax.get_title()!r} reads {t.get_text()!r}: it stands for {label}, "
                        "a value not drawn at that number"
                    )
    # two series in one colour in one panel
    for panel in figure_layout(fig)["panels"]:
        for a, b, colour in shared_colours(panel["series"]):
            problems.append(f"{a!r} and {b!r} share one colour ({colour}) in panel {panel['title']!r}")
    problem = alt_text_problem(getattr(fig, "dpstack_alt", None))
    if problem:
        problems.append(problem)
    return problems


def _svg_text(fig):
    import io

    buffer = io.BytesIO()
    save_figure(fig, buffer, format="svg", bbox_inches="tight")
    return buffer.getvalue().decode("utf-8")


def show_figure(fig, alt, extra=(), check=True):
    """Show ``fig`` on a page in the book's style, with ``alt`` as its description.

    :func:`finish_figure` is applied (legends below the panels, plain ticks, the alt text), then
    :func:`check_figure`; each problem found is a :class:`FigureStyleWarning`. In a notebook the
    figure is displayed as an SVG image whose ``alt`` attribute is ``alt`` (the problems found
    are recorded in the output's metadata) and closed. Returns the list of problems.
    """
    import base64
    import html
    import warnings

    finish_figure(fig, alt=alt, extra=extra)
    problems = check_figure(fig) if check else []
    for problem in problems:
        warnings.warn(f"figure style: {problem}", FigureStyleWarning, stacklevel=2)
    if _in_ipython():
        from IPython.display import display

        svg = _svg_text(fig)
        src = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
        tag = (
            f'<img class="dpstack-figure" style="max-width: 100%; height: auto" src="{src}" '
            f'alt="{html.escape(str(alt), quote=True)}">'
        )
        layout = figure_layout(fig)
        display(
            {"image/svg+xml": svg, "text/html": tag},
            raw=True,
            metadata={"dpstack": {"alt": str(alt), "problems": problems, "layout": layout}},
        )
        plt.close(fig)
    return FigureProblems(problems)


class FigureProblems(list):
    """The problems :func:`show_figure` found: a list that a notebook does not echo (no stray ``[]``
    box under the figure when ``show_figure`` ends a cell)."""

    def _ipython_display_(self):
        if self:
            print("\n".join(f"figure style: {p}" for p in self))
