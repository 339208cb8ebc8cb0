"""Shared figure style and the plots several pages draw."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

__all__ = ["style", "plot_mean_with_spread", "plot_privacy_loss_histogram"]

#: One colour per method, stable across pages.
COLORS = {
    "PLR": "#1f77b4", "PST-S": "#ff7f0e", "PST-F(U)": "#2ca02c", "PST-F(W)": "#d62728",
    "non-private": "#444444", "vote": "#9467bd", "soft": "#8c564b", "avg": "#e377c2",
    "batch": "#444444", "indiv": "#7f7f7f",
}


def style():
    """Apply the book's matplotlib style (call once per notebook)."""
    plt.rcParams.update({
        "figure.figsize": (6.4, 3.8), "figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3,
        "axes.spines.top": False, "axes.spines.right": False, "legend.frameon": False,
        "font.size": 10,
    })


def plot_mean_with_spread(ax, df, x, y, group, label_fmt="{}", logx=False, colors=None):
    """Mean of ``y`` against ``x``, one line per value of ``group``, ±1 s.d. band across repeats."""
    for key, part in df.groupby(group, sort=True):
        stats = part.groupby(x)[y].agg(["mean", "std"]).reset_index()
        label = label_fmt.format(key)
        color = (colors or COLORS).get(label)
        ax.plot(stats[x], stats["mean"], marker="o", ms=3, label=label, color=color)
        ax.fill_between(stats[x], stats["mean"] - stats["std"], stats["mean"] + stats["std"],
                        alpha=0.15, color=ax.lines[-1].get_color())
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
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
