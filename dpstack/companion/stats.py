"""The companion's two statistics of a column of results: ROC AUC and the t-interval of a mean.

One home for each, used by the grids (:func:`auc`) and by the pages' tables and figures
(:func:`t_half_width`, :func:`mean_interval`). The one rule that judges a claim keeps its own
interval (:mod:`dpstack.companion.rule`), which also needs the standard error for its tests.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from dpstack.metrics import roc_auc_score

__all__ = ["auc", "t_half_width", "mean_interval"]


def auc(y, scores):
    """ROC AUC of ``scores`` for the binary labels ``y``; NaN when a score is not finite.

    A diverged fit (a non-finite margin) scores NaN rather than raising, so one cell of a grid
    cannot stop the others; the tables count such cells apart.
    """
    return float(roc_auc_score(y, scores)) if np.all(np.isfinite(scores)) else np.nan


def t_half_width(values, level=0.95):
    """Half-width of the two-sided ``level`` Student-t interval of the mean of ``values``.

    Non-finite values are dropped; with fewer than two values there is no interval and the
    result is NaN.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < 2:
        return float("nan")
    return float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))


def mean_interval(values, level=0.95):
    """``(mean, low, high)``: the mean of the finite ``values`` and its ``level`` t-interval.

    With fewer than two values the interval is the mean itself; with none, all three are NaN.
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    mean = float(v.mean()) if v.size else float("nan")
    if v.size < 2:
        return mean, mean, mean
    half = t_half_width(v, level)
    return mean, mean - half, mean + half
