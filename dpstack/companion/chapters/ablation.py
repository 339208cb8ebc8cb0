"""The tuning-protocol page: what the choices the papers leave open change, in a reader's words.

The stacking and transfer papers (PST, PPTL) leave open how λ is chosen at each level, whether
the high-level model has an intercept, whether the chosen setting is refitted before it is
scored, how many settings each method may try and how rows are brought under the norm bound.
The page compares two protocols over these choices — the *simple protocol* (one λ for both
levels, an intercept at the high level, a refit with fresh noise after tuning, fewer candidate
settings for the one-level methods) and *the book's protocol*, the one every other page of the book
uses (λ chosen per level, no high-level intercept, the validated model scored as it is, the same
tuning budget for every method) — and each choice one at a time.

Everything the page says in prose is generated here from its results (the registered grids
``stacking_ablation_*`` of :mod:`dpstack.companion.results`): :func:`key_finding` (the page's
first statement), :func:`factor_verdicts`, :func:`refit_text`, :func:`swing_text` and
:func:`recommendation`. The tables (:func:`effects_table`, :func:`beside_table`,
:func:`edge_table`, :func:`grid_table`, :func:`swing_table`) and :func:`plot_effects` speak
the same words: :data:`VARIANT_LABELS` turns the grids' variant names into them.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from dpstack.companion.papers.pptl import grids as transfer
from dpstack.companion.papers.pst import grids as stacking
from dpstack.companion.papers.stacked_pages import chosen_lam, edge_share, factor_effects
from dpstack.companion.plotting import color_for
from dpstack.companion.rule import directional_verdict, verdict_frame
from dpstack.companion.stats import t_half_width

__all__ = [
    "SIMPLE",
    "RECOMMENDED",
    "VARIANT_LABELS",
    "label",
    "relabel",
    "factor_verdicts",
    "verdict_table",
    "effects_table",
    "plot_effects",
    "key_finding",
    "refit_text",
    "selection_text",
    "swing_table",
    "swing_text",
    "beside_table",
    "edge_table",
    "grid_table",
    "choices_table",
    "recommendation",
]

#: The two protocols the page compares, by their variant names in the results.
SIMPLE, RECOMMENDED = "old defaults", "new defaults"

#: The results' variant names → the page's words.
VARIANT_LABELS = {
    # the factors, from the simple protocol to the book's
    "old defaults": "simple protocol",
    "old, no high intercept": "simple, without the high-level intercept",
    "old, λ per level": "simple, with λ chosen per level",
    "old, tied λ on a denser grid": "simple, with a denser λ grid",
    "old, equal budget": "simple, with an equal tuning budget",
    "old, no refit": "simple, scored without a refit",
    "new defaults": "the book's protocol",
    "new, high intercept": "the book's, with a high-level intercept",
    "new, meta_features=sigmoid": "the book's, with sigmoid meta-features",
    "new, λ_h fixed at 1e-2": "the book's, with λₕ fixed at 0.01",
    "new, refit": "the book's, with a refit",
    # the other open choices, each changed from the book's protocol
    "default": "the book's protocol",
    "row_bound=normalize": "rows normalised to the bound",
    "row_bound=scale": "rows clipped to 1, block k scaled by q_k",
    "row_bound=private_max (NOT DP)": "rows divided by their private maximum (not private)",
    "rows ÷ 4 (public constant)": "rows divided by 4",
    "meta_features=sigmoid": "sigmoid meta-features",
    "meta_features=sigmoid, high intercept": "sigmoid meta-features and a high-level intercept",
    "lam_blocks=importance": "λ of block k scaled by (K q_k)²",
    "lam_high=1e-3": "λₕ fixed at 0.001",
    "lam_high=1e-1": "λₕ fixed at 0.1",
    "lam_high tied": "λₕ equal to the low level's λ",
    "low_intercept": "an intercept in every low-level block",
    "high intercept": "a high-level intercept",
    # the λ grids
    "old grid": "narrow λ grid",
    "new grid": "wide λ grid",
}


def label(variant):
    """The page's words for a variant name of the results (unknown names are returned as they are)."""
    return VARIANT_LABELS.get(variant, variant)


def relabel(df, column="variant"):
    """``df`` with its variant names replaced by the page's words."""
    return df.assign(**{column: df[column].map(label)})


def _stacked(df):
    return [m for m in dict.fromkeys(df["method"]) if m.startswith(("PST-", "PPTL-"))]


def _verdicts(df, better, worse=SIMPLE, methods=None):
    """Directional verdicts "better > worse" per method (none when the grid has no ``better``)."""
    out = []
    if better not in set(df["variant"]):
        return out
    for m in methods or list(dict.fromkeys(df["method"])):
        part = df[df["method"] == m]
        a = part[part["variant"] == better].set_index("repeat")["auc"]
        b = part[part["variant"] == worse].set_index("repeat")["auc"]
        out.append(directional_verdict((a - b).dropna(), f"{m}: {label(better)} > {label(worse)}"))
    return out


def factor_verdicts(pst, tr):
    """Verdicts on the stacked methods: the book's protocol, and each single change, against the simple one.

    ``pst`` and ``tr`` are the tidy tables of the PST and PPTL factor grids.
    """
    out = []
    for better in (RECOMMENDED, "old, no high intercept", "old, λ per level", "old, no refit"):
        out += _verdicts(pst, better, methods=_stacked(pst)) + _verdicts(tr, better, methods=_stacked(tr))
    return out


def verdict_table(verdicts):
    """The verdicts as a reader's table: comparison, repeats, mean difference with its interval, outcome."""
    f = verdict_frame(verdicts)
    return pd.DataFrame(
        {
            "comparison (test AUC)": f["claim"],
            "repeats": f["n"],
            "mean difference [95 % CI]": [
                f"{e:+.3f} [{lo:+.3f}, {hi:+.3f}]" for e, lo, hi in zip(f["effect"], f["ci_low"], f["ci_high"])
            ],
            "outcome": f["outcome"],
        }
    )


def _sentence_start(text):
    """``text`` with a capital first letter, unless it starts with a symbol (λ stays λ, not Λ)."""
    return text[0].upper() + text[1:] if text[:1].isascii() else text


def effects_table(fx, baseline=SIMPLE):
    """Mean AUC [95 % CI], worst repeat and the paired difference to ``baseline``, per method and variant."""
    fx = fx.assign(ci_low=fx["ci_low"].clip(0, 1), ci_high=fx["ci_high"].clip(0, 1))  # an AUC lies in [0, 1]
    name = label(baseline)
    against = f"difference to {name if name.startswith('the ') else 'the ' + name} [95 % CI]"
    return pd.DataFrame(
        {
            "method": fx["method"],
            "protocol" if baseline == SIMPLE else "choice": fx["variant"].map(label),
            "repeats": fx["n"],
            "mean AUC [95 % CI]": [
                f"{m:.3f} [{lo:.3f}, {hi:.3f}]" for m, lo, hi in zip(fx["mean"], fx["ci_low"], fx["ci_high"])
            ],
            "worst repeat": [f"{x:.3f}" for x in fx["min"]],
            against: [
                "—" if v == baseline else f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                for v, d, lo, hi in zip(fx["variant"], fx["diff"], fx["diff_low"], fx["diff_high"])
            ],
        }
    )


def plot_effects(ax, fx, title):
    """Mean test AUC with its 95 % interval and the worst repeat (×), one row per variant, one colour per method."""

    order = list(dict.fromkeys(fx["variant"]))
    methods = list(dict.fromkeys(fx["method"]))
    for i, m in enumerate(methods):
        part = fx[fx["method"] == m].set_index("variant").loc[order]
        y = np.arange(len(order)) + (i - (len(methods) - 1) / 2) * 0.2
        ax.errorbar(
            part["mean"],
            y,
            xerr=[part["mean"] - part["ci_low"], part["ci_high"] - part["mean"]],
            fmt="o",
            ms=4,
            capsize=2,
            color=color_for(m),
            label=m,
        )
        ax.scatter(part["min"], y, marker="x", s=18, color=color_for(m))
    # long protocol names wrapped, so the labels do not widen the figure past the book's column
    ax.set_yticks(np.arange(len(order)), [textwrap.fill(label(v), 22) for v in order])
    ax.invert_yaxis()
    ax.set(title=title, xlabel="test AUC (dot: mean, bar: 95 % CI, ×: worst repeat)")
    ax.legend()  # the book's figure style moves legends below the panels


def _row(fx, method, variant):
    return fx.set_index(["method", "variant"]).loc[(method, variant)]


def _worst_method(fx, variant=SIMPLE):
    """The stacked method whose worst repeat is lowest under ``variant``."""
    part = fx[(fx["variant"] == variant) & fx["method"].str.startswith(("PST-", "PPTL-"))]
    return part.loc[part["min"].idxmin(), "method"]


def _fmt(v):
    return f"{v.effect:+.3f} [{v.ci_low:+.3f}, {v.ci_high:+.3f}]"


def _pairs(frames, better, worse, methods=None):
    """[(method, verdict of better > worse)] over the grids in ``frames`` that ran both variants."""
    out = []
    for df in frames:
        if better in set(df["variant"]) and worse in set(df["variant"]):
            ms = methods(df) if callable(methods) else (methods or list(dict.fromkeys(df["method"])))
            ms = [m for m in ms if m in set(df["method"])]
            out += [(v.claim.split(":")[0], v) for v in _verdicts(df, better, worse, methods=ms)]
    return out


def _summary(pairs, better="better", worse="worse"):
    """ "better for A (+0.1 [..]); worse for B (..); no difference the repeats resolve for C"."""
    up = [f"{m} ({_fmt(v)})" for m, v in pairs if v.outcome == "supported"]
    down = [f"{m} ({_fmt(v)})" for m, v in pairs if v.outcome == "contradicted"]
    flat = [m for m, v in pairs if v.outcome == "inconclusive"]
    parts = []
    if up:
        parts.append(f"{better} for {_names(up)}")
    if down:
        parts.append(f"{worse} for {_names(down)}")
    if flat:
        parts.append(f"no difference the repeats resolve for {_names(flat)}")
    return "; ".join(parts)


def _advice(pairs, do, dont):
    up = any(v.outcome == "supported" for _, v in pairs)
    down = any(v.outcome == "contradicted" for _, v in pairs)
    if up and not down:
        return f"**{do}**"
    if down and not up:
        return f"**{dont}**"
    if up and down:
        return f"**It depends on the method** ({do[0].lower() + do[1:]}, or not)"
    return f"**Either way** ({do[0].lower() + do[1:]}, or not: the repeats cannot tell them apart)"


def key_finding(pst, tr, swing):
    """The page's first statement, in Markdown, every number and every direction from the results."""
    fx_pst, fx_tr = factor_effects(pst, baseline=SIMPLE), factor_effects(tr, baseline=SIMPLE)
    eps_pst, eps_tr = float(pst["epsilon"].iloc[0]), float(tr["epsilon"].iloc[0])
    m_tr, m_pst = _worst_method(fx_tr), _worst_method(fx_pst)
    a, b = _row(fx_tr, m_tr, SIMPLE), _row(fx_tr, m_tr, RECOMMENDED)
    c, d = _row(fx_pst, m_pst, SIMPLE), _row(fx_pst, m_pst, RECOMMENDED)
    s = _swing_counts(swing)
    main = _pairs([pst, tr], RECOMMENDED, SIMPLE, _stacked)
    return (
        "**Key finding.** At small ε the stacked methods' high-level model can collapse: when its privacy noise "
        "outweighs the signal it receives from the low level, the sign of its score is a matter of the noise "
        f"draw. In {s['fits']} refits of one configuration with fresh noise, the stacked model fell below AUC 0.5 "
        f"in {s['low_collapsed']} of the {s['low']} fits whose high-level noise exceeded its signal, and in "
        f"{s['high_collapsed']} of the {s['high']} others. How much the tuning protocol matters, measured in test "
        "AUC with paired 95 % intervals, the book's protocol against the simple one: "
        f"{_summary(main)}. The worst repeats: {m_tr} {a['min']:.3f} under the simple protocol and "
        f"{b['min']:.3f} under the book's (mean {a['mean']:.3f} and {b['mean']:.3f}, ε = {eps_tr:g}); {m_pst} "
        f"{c['min']:.3f} and {d['min']:.3f} (mean {c['mean']:.3f} and {d['mean']:.3f}, ε = {eps_pst:g}). Every "
        "other page of this book uses the book's protocol; the recommendation at the end says which of its "
        "choices the measurements support."
    )


def _names(items):
    items = list(dict.fromkeys(items))
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def refit_text(tr):
    """The refit paragraph (PPTL grid): collapses with and without a refit, and the paired effect per method."""
    fx = factor_effects(tr, baseline=SIMPLE)
    n = tr["repeat"].nunique()
    m = _worst_method(fx)

    def below(variant):
        return int((tr[(tr["method"] == m) & (tr["variant"] == variant)]["auc"] < 0.5).sum())

    text = (
        "**The refit.** Refitting the chosen (λ, η) on the whole target training part before scoring draws "
        "fresh noise that no validation has seen, and trains on more data. "
        f"{m} fell below AUC 0.5 in {below(SIMPLE)} of {n} repeats with the refit and in {below('old, no refit')} "
        f"scoring the validated model (worst repeats {_row(fx, m, SIMPLE)['min']:.3f} and "
        f"{_row(fx, m, 'old, no refit')['min']:.3f})."
    )
    pairs = _pairs([tr], "old, no refit", SIMPLE)
    if pairs:
        text += f" Scoring the validated model instead of refitting: {_summary(pairs)}."
    return text


def selection_text(pst, tr):
    """Why selection noise is not the cause: the best candidate's AUC against the chosen one's."""

    def gap(df):
        d = df[df["variant"] == SIMPLE]
        col = "auc_fit" if "auc_fit" in d else "auc"
        return float((d["auc_oracle"] - d[col]).mean())

    return (
        "**Selection noise is not the cause.** The best test AUC among all the candidate settings a method tried "
        f"is on average only {gap(pst):.4f} (PST) and {gap(tr):.4f} (PPTL, models fitted on the fit part) above "
        "the AUC of the candidate the validation data chose, under the simple protocol. When a PST repeat "
        "collapses, every λ collapses: all candidates of a repeat share the noise seed, and the direction of "
        "the high level's noise, which is what sinks them, does not depend on λ."
    )


def _swing_counts(sw):
    ratio = sw["signal"] / sw["noise"]
    low = ratio < 1
    collapsed = sw["auc_hl"] < 0.5
    return {
        "fits": len(sw),
        "low": int(low.sum()),
        "low_collapsed": int((low & collapsed).sum()),
        "high": int((~low).sum()),
        "high_collapsed": int((~low & collapsed).sum()),
    }


def swing_table(sw):
    """Per configuration: mean and worst test AUC of the stacked model, the best single block and the vote."""
    rows = []
    for case, part in sw.groupby("case", sort=False):
        ratio = part["signal"] / part["noise"]
        rows.append(
            {
                "configuration": case,
                "fits": len(part),
                "stacked model (C-hl): mean / worst AUC": f"{part['auc_hl'].mean():.3f} / {part['auc_hl'].min():.3f}",
                "best single block: mean / worst": f"{part['auc_best_single'].mean():.3f} / "
                f"{part['auc_best_single'].min():.3f}",
                "weighted vote: mean / worst": f"{part['auc_wmv'].mean():.3f} / {part['auc_wmv'].min():.3f}",
                "fits with noise > signal": int((ratio < 1).sum()),
            }
        )
    return pd.DataFrame(rows)


def swing_text(sw):
    """One sentence on the swing grid: where the stacked model fell below 0.5."""
    s = _swing_counts(sw)
    return (
        f"Of {s['fits']} fits, {s['low']} had more noise than signal at the high level; the stacked model fell "
        f"below AUC 0.5 in {s['low_collapsed']} of those and in {s['high_collapsed']} of the other {s['high']}."
    )


def beside_table(df, paper=None):
    """Both protocols side by side per method: AUC ± 95 % CI, the λ chosen most often, candidates, (PPTL) η.

    ``paper``: a Series of the paper's printed values by method, shown in a last column.
    """

    rows = []
    for m, part in df.groupby("method", sort=False):
        row = {"method": m}
        for v, name in ((SIMPLE, "simple protocol"), (RECOMMENDED, "book's protocol")):
            sub = part[part["variant"] == v]
            row[f"{name}: AUC ± 95 % CI"] = f"{sub['auc'].mean():.3f} ± {t_half_width(sub['auc']):.3f}"
            row[f"{name}: λ chosen most often"] = chosen_lam(sub.assign(k=0), "k").iloc[0, 0]
            row[f"{name}: settings tried"] = int(sub["n_candidates"].iloc[0])
            if "eta" in sub:
                row[f"{name}: η"] = f"{sub['eta'].mode().min():g}"
        rows.append(row)
    out = pd.DataFrame(rows)
    if paper is not None:
        out["paper"] = out["method"].map(paper)
    return out


def edge_table(pst, tr, pst_grid, tr_grid):
    """Share of repeats whose chosen λ (and λₕ) lies at an edge of the grid, under both protocols."""
    parts = []
    for name, df, grid in (("PST Figure 1", pst, pst_grid), ("PPTL Table 1", tr, tr_grid)):
        e = edge_share(df[df["variant"].isin([SIMPLE, RECOMMENDED])], grid, by=("method", "variant"))
        parts.append(e.assign(table=name))
    e = pd.concat(parts, ignore_index=True)
    return pd.DataFrame(
        {
            "table": e["table"],
            "method": e["method"],
            "protocol": e["variant"].map(label),
            "repeats": e["n"],
            "λ at the bottom": e["lam_bottom"],
            "λ at the top": e["lam_top"],
            "λ at either edge": e["lam_edge"],
            "λₕ at either edge": e["lam_high_edge"],
        }
    )


def grid_table(compared, profile="paper"):
    """The one-level methods on a narrow and on a wide λ grid, paired on repeats, per method and ε.

    ``compared``: {table name ("PST Figure 1" or "PPTL Table 1"): tidy frame of the grid comparison
    (variants ``"old grid"``, the narrow grid, and ``"new grid"``, the profile's wide one)}.
    """

    grids = {
        "PST Figure 1": {"old": stacking.OLD_LAM_GRIDS[profile], "new": stacking.PROFILES[profile]["lam_grid"]},
        "PPTL Table 1": {
            "old": transfer.OLD_TRANSFER_LAM_GRIDS[profile],
            "new": transfer.TRANSFER_PROFILES[profile]["lam_grid"],
        },
    }
    rows = []
    for table, frame in compared.items():
        runs = {w: frame[frame["variant"] == f"{w} grid"] for w in ("old", "new")}
        shares = {
            w: edge_share(runs[w], grids[table][w]).set_index(["method", "epsilon"])["lam_edge"] for w in ("old", "new")
        }
        for (m, e), part in runs["new"].groupby(["method", "epsilon"]):
            a = part.set_index("repeat")["auc"]
            old = runs["old"]
            b = old[(old["method"] == m) & (old["epsilon"] == e)].set_index("repeat")["auc"]
            v = directional_verdict((a - b).dropna(), f"{m}: wide grid > narrow grid")
            rows.append(
                {
                    "table": table,
                    "method": m,
                    "ε": e,
                    "λ at an edge (narrow grid)": shares["old"][m, e],
                    "λ at an edge (wide grid)": shares["new"][m, e],
                    "mean AUC, narrow grid": b.mean(),
                    "mean AUC, wide grid": a.mean(),
                    "wide − narrow [95 % CI]": f"{v.effect:+.4f} [{v.ci_low:+.4f}, {v.ci_high:+.4f}]",
                    "outcome": v.outcome,
                }
            )
    return pd.DataFrame(rows)


def choices_table(abl):
    """The other open choices, each changed from the book's protocol (PLR and PST-F(W))."""
    return effects_table(factor_effects(abl, baseline="default"), baseline="default")


def recommendation(pst, tr, abl):
    """The page's recommendation, one line per choice, its direction and its evidence from the results."""
    lines = [
        "For anyone running PST or PPTL. Each line says what the measurements support and why (paired "
        "differences of the test AUC over repeats, with 95 % intervals; stacked methods unless said otherwise):",
        "",
    ]
    items = [
        (
            _pairs([pst, tr], "old, λ per level", SIMPLE, _stacked),
            "Choose λ per level",
            "Use one λ for both levels",
            "λ chosen per level instead of one λ for both",
        ),
        (
            _pairs([pst, tr], "old, no high intercept", SIMPLE, _stacked),
            "Leave the intercept out of the high-level model",
            "Keep an intercept in the high-level model",
            "no high-level intercept instead of one",
        ),
        (
            _pairs([tr], "old, no refit", SIMPLE),
            "Score the validated model, without a refit",
            "Refit the chosen setting before scoring it",
            "scoring the validated model instead of refitting it (every method)",
        ),
        (
            _pairs([pst, tr], "old, equal budget", SIMPLE, lambda df: [m for m in dict.fromkeys(df["method"])]),
            "Give every method the same tuning budget",
            "Give the one-level methods fewer settings to try",
            "the same tuning budget for every method (every method)",
        ),
        (
            _pairs([abl], "default", "rows ÷ 4 (public constant)"),
            "Bring rows under the norm bound by clipping, without shrinking them further",
            "Shrink the rows below the norm bound",
            "clipping instead of dividing the rows by 4 (PLR and PST-F(W); the noise is calibrated to the bound, "
            "not to the rows)",
        ),
    ]
    k = 0
    for pairs, do, dont, what in items:
        if not pairs:
            continue
        k += 1
        line = f"{k}. {_advice(pairs, do, dont)}. {_sentence_start(what)}: {_summary(pairs)}."
        if dont.startswith("Refit"):
            line += " " + REFIT_PROTOCOL
        lines.append(line)
    return "\n".join(lines)


#: How the book uses the refit (the recommendation's refit line ends with it).
REFIT_PROTOCOL = (
    "The book's pages score the validated model as their primary protocol (closer to PST's validation part "
    "than to PPTL's 3-fold cross-validation with a refit) and treat the refit as a co-primary protocol: every method refitted by "
    "the same rule, every claim on the papers' data that tunes on a validation part judged again under it (the "
    "robust column of each claim table; the protocol-sensitivity page shows the numbers)."
)
