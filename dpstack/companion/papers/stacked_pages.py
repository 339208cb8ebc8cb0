"""Tables and figure helpers shared by the PST and PPTL pages.

Presentation only: nothing here is run by a committed result's cells, so a table can change
without making a result stale. The claims of each paper are judged in
:mod:`dpstack.companion.papers.pst.pages` and :mod:`dpstack.companion.papers.pptl.pages` by the one rule
of :mod:`dpstack.companion.rule`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpstack.companion.plotting import mark_stand_in
from dpstack.companion.stats import mean_interval, t_half_width

__all__ = [
    "eps_axis",
    "set_eps_ticks",
    "chosen_lam",
    "edge_share",
    "factor_effects",
    "source_sentence",
    "falling_auc_sentence",
]


def eps_axis(df, column="epsilon"):
    """Copy of df with ``eps_pos``: ε, and ε = ∞ drawn at twice the largest finite ε (tick "∞")."""
    finite = df.loc[np.isfinite(df[column]), column]
    inf_pos = 2 * finite.max() if len(finite) else 1.0
    return df.assign(eps_pos=np.where(np.isfinite(df[column]), df[column], inf_pos)), inf_pos


def set_eps_ticks(ax, df, inf_pos):
    """Log-x ticks at the ε values, the ∞ position labelled "∞"."""
    vals = sorted(df["eps_pos"].unique())
    has_inf = not np.isfinite(df["epsilon"]).all()
    ax.set_xscale("log")
    ax.set_xticks(vals)
    ax.set_xticklabels(["∞" if v == inf_pos and has_inf else f"{v:g}" for v in vals])
    ax.minorticks_off()
    if has_inf:
        mark_stand_in(ax, inf_pos, "∞")


def chosen_lam(df, index, columns="method"):
    """The λ chosen most often over repeats (ties: the smaller), index × columns.

    With a ``lam_high`` column (the stacked methods' C-hl rows) each entry shows both
    levels as ``"λ_l / λ_h"`` (the most frequent pair); PLR and the low-level combiners
    show their one λ.
    """

    def pick(part):
        if "lam_high" not in part or not np.isfinite(part["lam_high"].astype(float)).any():
            return f"{part['lam'].mode().min():g}"
        pairs = part[["lam", "lam_high"]].astype(float).value_counts()
        top = sorted(pairs[pairs == pairs.max()].index)[0]
        return f"{top[0]:g} / {top[1]:g}"

    keys = [*np.atleast_1d(index), *np.atleast_1d(columns)]
    return df.groupby(keys).apply(pick, include_groups=False).unstack(list(np.atleast_1d(columns)))


def edge_share(df, lam_grid, by=("method", "epsilon"), rtol=1e-6):
    """Share of repeats whose chosen λ lies at an edge of the λ grid's range, per group of ``by``.

    A λ chosen at the smallest or largest value of its grid may be limited by the grid, not by
    the method: a wider grid could have given a better model. Every method of a table tunes
    over the same range (:func:`budget_grid` keeps it), so ``lam_grid`` (the profile's grid)
    tells the edges for all of them.

    Parameters
    ----------
    df : DataFrame
        Tidy results with ``lam`` (the chosen λ, of the low level for the stacked methods) and
        optionally ``lam_high`` (λ_h of C-hl; NaN for one-level methods and rows without one).
    lam_grid : sequence of float
        The grid the rows were tuned over; only its smallest and largest values are used.
    by : str or sequence of str
        The group columns (those absent from ``df`` are skipped).
    rtol : float
        Relative tolerance of "equal to an edge".

    Returns
    -------
    DataFrame, one row per group: ``n`` (rows), ``lam_bottom``, ``lam_top`` and ``lam_edge`` (shares
    of rows with λ at the smallest value, the largest value, either), and ``lam_high_edge`` (share
    of the rows with a λ_h whose λ_h is at an edge; NaN if the group has none).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"method": ["PLR"] * 4, "epsilon": 1.0, "lam": [1.0, 1.0, 0.1, 1e-4]})
    >>> edge_share(df, (1e-4, 1e-2, 1.0))[["n", "lam_bottom", "lam_top", "lam_edge"]].to_numpy().tolist()
    [[4.0, 0.25, 0.5, 0.75]]
    """
    grid = np.asarray([float(v) for v in lam_grid], dtype=float)
    if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid <= 0):
        raise ValueError(f"lam_grid must be a non-empty sequence of positive finite numbers, got {lam_grid!r}")
    if "lam" not in df.columns:
        raise ValueError(f"df has no column 'lam' (columns: {list(df.columns)})")
    lo, hi = grid.min(), grid.max()
    keys = [k for k in np.atleast_1d(by) if k in df.columns]

    def at(values, edge):
        v = values.astype(float)
        return np.isclose(v, edge, rtol=rtol, atol=0.0)

    def one(part):
        lam = part["lam"].astype(float)
        bottom, top = at(lam, lo), at(lam, hi)
        out = dict(
            n=float(len(part)),
            lam_bottom=float(bottom.mean()),
            lam_top=float(top.mean()),
            lam_edge=float((bottom | top).mean()),
            lam_high_edge=np.nan,
        )
        if "lam_high" in part.columns:
            h = part["lam_high"].astype(float)
            h = h[np.isfinite(h)]
            if len(h):
                out["lam_high_edge"] = float((at(h, lo) | at(h, hi)).mean())
        return pd.Series(out)

    if not keys:
        return one(df).to_frame().T
    return df.groupby(keys, sort=True).apply(one, include_groups=False).reset_index()


def factor_effects(df, baseline="old defaults", by="variant", value="auc", pair_on=("repeat",), confidence=0.95):
    """Each variant against ``baseline``, per method: mean, minimum, and the paired mean difference with its CI.

    Rows of one repeat (and of any other ``pair_on`` key) are paired: they share the data
    split and, through common random numbers, the noise. The interval is the paired
    t-interval of the mean difference at ``confidence``.

    Returns
    -------
    DataFrame with one row per (method, variant): ``n``, ``mean``, ``ci_low``, ``ci_high`` (of
    the mean), ``min``, ``diff`` (variant − baseline), ``diff_low``, ``diff_high``.
    """
    out = []
    keys = list(pair_on)
    for m, part in df.groupby("method", sort=False):
        base = part[part[by] == baseline].set_index(keys)[value]
        for v, sub in part.groupby(by, sort=False):
            vals = sub.set_index(keys)[value]
            x = vals.dropna().to_numpy(dtype=float)
            n = x.size
            half = t_half_width(x, confidence)
            joined = pd.concat([vals.rename("a"), base.rename("b")], axis=1, join="inner").dropna()
            d = (joined["a"] - joined["b"]).to_numpy(dtype=float)
            dh = t_half_width(d, confidence)
            out.append(
                dict(
                    method=m,
                    variant=v,
                    n=n,
                    mean=x.mean() if n else np.nan,
                    ci_low=x.mean() - half if n else np.nan,
                    ci_high=x.mean() + half if n else np.nan,
                    min=x.min() if n else np.nan,
                    diff=d.mean() if d.size else np.nan,
                    diff_low=d.mean() - dh if d.size else np.nan,
                    diff_high=d.mean() + dh if d.size else np.nan,
                )
            )
    return pd.DataFrame(out)


def source_sentence(frame, repeats="repeat"):
    """One sentence saying where a page's numbers come from, in a reader's words.

    A committed result (``frame.attrs["provenance"]["source"] == "committed"``, from
    :func:`dpstack.companion.results.load_or_run`) is "the book's stored results" with the date
    they were computed; a live computation is "computed on this page". The file, machine, job
    count, wall time and command belong to the appendix "How this book is built" and the
    reproducing page, not to a reader's sentence. ``repeats`` is the column counting the repeats
    (``None``: not stated).
    """
    prov = frame.attrs.get("provenance") or {}
    count = frame[repeats].nunique() if repeats and repeats in frame else None
    n = "" if count is None else f" {count} repeat{'' if count == 1 else 's'}."
    if prov.get("source") == "committed":
        date = str(prov.get("date", ""))[:10]
        when = f", computed {date}" if date else ""
        return (
            f"Numbers from the book's stored results{when}; the appendix *How this book is built* says "
            f"how to recompute them.{n}"
        )
    return f"Numbers computed on this page, with the parameters above.{n}"


def falling_auc_sentence(df, method, protocol, level=0.95):
    """Why ``method``'s mean AUC under ``protocol`` falls as ε grows, from one row per (ε, repeat); "" if it does not.

    Compares the ε with the best mean and the largest ε, paired on the repeat (mean difference and its
    ``level`` t-interval), names the worst repeat at the largest ε, and how the chosen λ (mean over repeats)
    moves between the two ε.
    """
    part = df[(df["method"] == method) & (df["protocol"] == protocol)]
    auc = part.pivot_table(index="repeat", columns="epsilon", values="auc")
    if auc.shape[1] < 2:
        return ""
    means = auc.mean()
    best, last = means.idxmax(), means.index.max()
    if best == last:
        return ""
    diff, lo, hi = mean_interval((auc[last] - auc[best]).to_numpy(), level=level)
    lam = part.groupby("epsilon")["lam"].mean()
    worst = auc[last].min()
    pct = f"{level * 100:.0f} %"
    verdict = (
        f"its {pct} interval contains 0, so over {len(auc)} repeats the fall is within the repeats' spread"
        if lo <= 0 <= hi
        else f"its {pct} interval excludes 0"
    )
    return (
        f"Why {method}'s {protocol} AUC falls as ε grows (mean {means[best]:.3f} at ε = {best:g}, "
        f"{means[last]:.3f} at ε = {last:g}): paired on the repeat, the difference is {_signed(diff)} "
        f"[{_signed(lo)}, {_signed(hi)}], and {verdict}. The mean is pulled down by single repeats (the worst at "
        f"ε = {last:g}: {worst:.3f}) in which the exponential mechanism, sharper at a larger ε, picks the candidate "
        "with the fewest errors on a small held-out part, which need not be the candidate with the best AUC"
        + (
            f"; the λ it picks falls with ε (mean {lam[best]:g} at ε = {best:g}, {lam[last]:g} at ε = {last:g}), "
            "so the chosen model is less regularised, and it was fitted on its own small part of the data."
            if lam[last] < lam[best]
            else "."
        )
    )


def _signed(x):
    """+0.018 / −0.035: a signed number with the typographic minus."""
    return f"{x:+.3f}".replace("-", "\u2212")
