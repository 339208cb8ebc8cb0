"""Protocol sensitivity: the papers' figures and tables under choices the papers leave open.

The papers fix neither of two choices that move the results, and their tables come from one
draw of the data:

* **Refit.** Whether the setting chosen on the validation part (λ, λ_h, η) is refitted on the
  whole training set before it is scored. The primary results score the validated model; the
  variant "refit on train+validation" refits every method, by the same rule, on fit and
  validation parts together (``refit=True`` of
  :func:`~dpstack.companion.papers.pst.grids.stacking_cell` and
  :func:`~dpstack.companion.papers.pptl.grids.transfer_cell`).
* **The public row scale.** Rows are clipped to the norm bound 1; dividing them first by a
  public constant s (``options["row_scale"]``) changes nothing in the guarantee and shrinks
  the signal the noise is compared with. Variants "rows ÷ s" for s = 2, 4, 8 (the primary
  results are s = 1), every method of the figure or table (PPTL Figure 4's MNIST panel and MPL
  on KDD-99: s = 4 only).
* **Another seed.** Every primary result computed again under another root seed (1 instead of
  0: every split and noise draw of every repeat changes) and another draw of the data where the
  data is drawn (MNIST's images from draw 1000 on; NEWS20's split is the archive's fixed
  "bydate" split; MPL's data set is used whole, its split into parties drawn from the seed):
  what the verdicts would have been had the book been computed once more from scratch.
* **The paper's repeat count.** The primary results have 30 repeats so that the rule can decide
  a claim with several parts (:mod:`dpstack.companion.rule`); the papers report 10 (PPTL Figure
  4: 30). The verdicts on the first 10 repeats of each primary result show what the papers'
  count decides.

The results with variants (:data:`PRIMARY`): PST Figures 1-4 (Figure 2 [IJCAI Fig. 2(a)–(b)] at the K its
claims compare: 1, 5 and 50, for refit and row scale), PPTL Table 1, PPTL Figure 4's MNIST panel and MPL's KDD-99 figure. MPL tunes nothing on a validation
part (λ is fixed), so "refit" does not apply to it (:func:`not_applicable`). What one repeat of
each result draws anew, and what stays one draw, is :func:`draw_sentence`.

:func:`protocol_variants` returns, for a primary result, each variant's table with the
primary's columns (protocol label → frame), read from the committed results; a variant not
committed yet is left out (:func:`missing_results` names them). :func:`collapsed` and
:func:`repeat_summary` give per method and ε the mean, the median and the share of collapsed
repeats; :func:`claim_effects` the paired effect of the two claims under every protocol;
:func:`sensitivity_page` everything the book's page shows.

**Collapsed repeat** (fixed before any of these results were computed): a repeat of a stacked
method has collapsed when its test AUC keeps less than half of the skill above chance that the
best one-level private method reaches in the same repeat, on the same data and at the same ε::

    AUC < 0.5 + COLLAPSE_FRACTION · max(AUC_best one-level − 0.5, 0),   COLLAPSE_FRACTION = 1/2

(one-level methods: PLR for PST; Direct, SourceD and SimComb for PPTL). A fixed threshold (say
0.6) would mean something else on every task and ε: the ceilings run from about 0.65 to 0.999,
so it would call a working model at small ε on a hard task collapsed and miss a model that fell
from 0.99 to 0.7. Measured against the one-level model of the same repeat, the rule isolates
what the papers' collapse is — a failure of the combining step (a high level whose weights are
mostly noise), not of the data or of ε — and a repeat whose one-level models have no skill
(AUC ≤ 0.5) counts as collapsed only below chance.

The page's tables are read from the committed results; nothing here computes a grid unless
asked to (``compute=True``, the quick profile of the page).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpstack.companion import results
from dpstack.companion import results as _results

__all__ = [
    "as_primary",
    "COLLAPSE_FRACTION",
    "REFIT",
    "PRIMARY",
    "ANOTHER_SEED",
    "PAPER_REPEATS",
    "PAPER_COUNT",
    "protocol_results",
    "is_committed_or_computed",
    "row_keys",
    "missing_results",
    "missing_variants",
    "protocol_variants",
    "variant_notes",
    "not_applicable",
    "DRAWS",
    "draw_sentence",
    "collapsed",
    "repeat_summary",
    "repeats_summary",
    "protocol_table",
]

#: Share of the best one-level method's skill above chance below which a stacked repeat has collapsed.
COLLAPSE_FRACTION = 0.5

#: The label of the refit protocol.
REFIT = "refit on train+validation"

#: The label of the protocol "another seed".
ANOTHER_SEED = "another seed and data draw"

#: The repeats the papers report (PPTL's Figure 4: 30), and the label of the verdicts on them.
PAPER_REPEATS = results.PAPER_REPEATS
PAPER_COUNT = f"the papers' {PAPER_REPEATS} repeats"

_MNIST_PST = "MNIST's images and its test set are drawn anew in every repeat; NEWS20's split is fixed"
_PST_EXTRA = ("refit", "row_scale", "data_seed", "auc_fit")  # auc_fit: the validated model under refit

#: The primary results that have protocol variants: their stacked and one-level methods, the
#: registered results of each protocol and the columns a protocol grid adds to the primary's.
PRIMARY = {
    "pst_fig1_epsilon": dict(
        table="PST Figure 1",
        stacked=("PST-S", "PST-F(U)", "PST-F(W)"),
        one_level=("PLR",),
        refit="protocols_pst_fig1_refit",
        row_scale="protocols_pst_fig1_row_scale",
        another_seed="protocols_pst_fig1_another_seed",
        extra=_PST_EXTRA,
        redrawn=_MNIST_PST,
        curves=True,
    ),
    "pptl_table1_mnist": dict(
        table="PPTL Table 1",
        stacked=("PPTL-FS(W)", "PPTL-FS(R)"),
        one_level=("Direct", "SourceD", "SimComb"),
        refit="protocols_pptl_table1_refit",
        row_scale="protocols_pptl_table1_row_scale",
        another_seed="protocols_pptl_table1_another_seed",
        extra=("refit", "row_scale", "data_seed"),
        redrawn="the source and target images are drawn anew in every repeat (and the train/test splits)",
        curves=True,
    ),
    "pst_fig2_groups": dict(
        table="PST Figure 2 [IJCAI Fig. 2(a)–(b)]",
        stacked=("PST-F(U)", "PST-F(W)"),
        one_level=("PLR",),
        refit="protocols_pst_fig2_refit",
        row_scale="protocols_pst_fig2_row_scale",
        another_seed="protocols_pst_fig2_another_seed",
        extra=_PST_EXTRA,
        redrawn=_MNIST_PST,
        subset="at K = 1, 5 and 50, the K its claims compare",
        summarised=True,
    ),
    "pst_fig3_importance": dict(
        table="PST Figure 3 [IJCAI Fig. 2(c)–(d)]",
        stacked=("PST-F(U)", "PST-F(W)"),
        one_level=(),
        refit="protocols_pst_fig3_refit",
        row_scale="protocols_pst_fig3_row_scale",
        another_seed="protocols_pst_fig3_another_seed",
        extra=_PST_EXTRA,
    ),
    "pst_fig4_combiners": dict(
        table="PST Figure 4 [IJCAI Fig. 3]",
        stacked=("PST-F(U)", "PST-F(W)"),
        one_level=(),
        refit="protocols_pst_fig4_refit",
        row_scale="protocols_pst_fig4_row_scale",
        another_seed="protocols_pst_fig4_another_seed",
        extra=_PST_EXTRA,
    ),
    "ruijin_transfer_groups": dict(
        table="PPTL Figure 4 (MNIST panel)",
        stacked=("PPTL-FS(W)", "PPTL-FS(R)"),
        one_level=(),
        refit="protocols_pptl_fig4_refit",
        row_scale="protocols_pptl_fig4_row_scale",
        another_seed="protocols_pptl_fig4_another_seed",
        extra=("refit", "row_scale", "data_seed"),
    ),
    "mpl_kdd": dict(
        table="MPL Figure 3 (KDD-99)",
        stacked=(),
        one_level=(),
        refit=None,
        refit_note="MPL tunes nothing on a validation part (λ is fixed), so there is nothing to refit",
        row_scale="protocols_mpl_kdd_row_scale",
        another_seed="protocols_mpl_kdd_another_seed",
        extra=("row_scale", "diagnostic_noise"),
    ),
}

#: What one repeat of each committed result draws anew and what stays one draw: result → {dataset: kind}
#: (dataset None: every dataset of the result).
DRAWS = {
    **{
        name: {"MNIST": "MNIST-redrawn", "NEWS20": "NEWS20"}
        for name in ("pst_fig1_epsilon", "pst_fig2_groups", "pst_fig3_importance")
    },
    "pst_fig4_combiners": {"NEWS20": "NEWS20"},
    "pst_alternatives": {"MNIST": "MNIST-redrawn", "NEWS20": "NEWS20"},
    "pptl_table1_mnist": {"MNIST": "PPTL-MNIST-redrawn"},
    "ruijin_transfer_branches": {"RUIJIN-like": "RUIJIN"},
    "ruijin_transfer_epsilon": {"RUIJIN-like": "RUIJIN"},
    "ruijin_transfer_groups": {"MNIST": "PPTL-MNIST", "RUIJIN-like": "RUIJIN"},
    **{name: {None: "MPL"} for name in ("mpl_kdd", "mpl_har", "mpl_url", "mpl_mnist10")},
}

_DRAW_WORDS = {
    "MNIST": "one fixed draw of the data: the MNIST images, their train/test split and the PCA are drawn once; a "
    "repeat redraws the fit/validation split of the training set and the noise",
    "MNIST-redrawn": "every repeat draws the MNIST images, their train/test split and the PCA anew, with the "
    "fit/validation split and the noise",
    "NEWS20": "the archive's fixed train/test split; a repeat redraws the fit/validation split of the training set "
    "and the noise",
    "PPTL-MNIST": "one fixed draw of the source and target images (and the PCA); a repeat redraws their 80/20 "
    "train/test splits, the fit/validation split and the noise",
    "PPTL-MNIST-redrawn": "every repeat draws the source and target images (and the PCA) anew, with their 80/20 "
    "train/test splits, the fit/validation split and the noise",
    "RUIJIN": "one draw of the synthetic cohort; a repeat redraws the train/test splits, the fit/validation split "
    "and the noise",
    "MPL": "the data set's own fixed test set; a repeat (a split) redraws the auxiliary rows and the "
    "parties' rows from the training set, and the noise",
}

#: the kinds of draw whose intervals leave out another draw of the data (the variant "another seed" draws it anew)
_FIXED = ("MNIST", "NEWS20", "PPTL-MNIST", "RUIJIN", "MPL")


def _entry(result_name):
    if result_name not in PRIMARY:
        raise KeyError(f"result_name must be one of {sorted(PRIMARY)} to have protocol variants, got {result_name!r}")
    return PRIMARY[result_name]


def protocol_results(result_name):
    """The registered results holding the protocol variants of ``result_name`` (empty if it has none)."""
    if result_name not in PRIMARY:
        return []
    e = PRIMARY[result_name]
    return [n for n in (e["refit"], e["row_scale"], e["another_seed"]) if n]


def is_committed_or_computed(name, profile, seed, compute, **overrides):
    """Whether result ``name`` can be shown: committed at ``profile``, or ``compute`` asks for a live run."""
    return compute or results.is_committed(name, profile, seed=seed, **overrides)


def missing_results(result_name, profile="paper", *, seed=None):
    """The protocol results of ``result_name`` not committed at ``profile`` (what the page cannot show yet)."""
    return [n for n in protocol_results(result_name) if not results.is_committed(n, profile, seed=seed)]


def missing_variants(result_name, profile="paper", *, seed=None):
    """The protocol variants of ``result_name`` not committed at ``profile``, in reader words (labels).

    ``"refit on train+validation"``, ``"rows ÷ s"``, ``"another seed and data draw"``: what the
    robust column names as not computed yet.
    """
    if result_name not in PRIMARY:
        return []
    e = PRIMARY[result_name]
    missing = set(missing_results(result_name, profile, seed=seed))
    words = {e["refit"]: REFIT, e["row_scale"]: "rows ÷ s", e["another_seed"]: ANOTHER_SEED}
    return [words[n] for n in protocol_results(result_name) if n in missing]


def _load(name, profile, seed, n_jobs, compute, **overrides):
    if not is_committed_or_computed(name, profile, seed, compute, **overrides):
        return None
    return results.load_or_run(name, profile=profile, seed=seed, n_jobs=n_jobs, **overrides)


def as_primary(frame, result_name):
    """``frame`` with the columns a protocol grid adds removed: the primary result's columns, in its order."""
    drop = [c for c in _entry(result_name)["extra"] if c in frame.columns]
    out = frame.drop(columns=drop).reset_index(drop=True)
    # a primary that redraws a data set in every repeat has a data_seed column; a variant on one draw has none
    redrawn = [d for d, kind in DRAWS.get(result_name, {}).items() if kind.endswith("-redrawn")]
    if "data_seed" not in out and "dataset" in out and out["dataset"].isin(redrawn).any():
        at = list(out.columns).index("repeat") + 1 if "repeat" in out.columns else len(out.columns)
        out.insert(min(at, len(out.columns)), "data_seed", np.nan)  # one draw: not a draw the primary numbers
    out.attrs = dict(frame.attrs)
    return out


def protocol_variants(result_name, profile="paper", *, seed=None, n_jobs=1, compute=False, **overrides):
    """Each protocol variant of a primary result: protocol label → table with the primary's columns.

    Parameters
    ----------
    result_name : str
        A registered primary result with variants (a key of :data:`PRIMARY`: PST Figures 1-4 [IJCAI Figs. 1-3],
        ``"pptl_table1_mnist"``, ``"mpl_kdd"``); any other name has no variants and gives an
        empty dict.
    profile : str, default="paper"
    seed : int, optional
        The root seed of every variant (default: each result's own: 0, and 1 for "another seed").
    n_jobs : int, default=1
        Workers of a live computation (``compute=True``).
    compute : bool, default=False
        False: only committed variants (a variant not committed yet is left out; see
        :func:`missing_results`). True: a variant not committed is computed live.
    **overrides
        Parameters of the protocol grids on top of the profile's (``n_repeats``, ``epsilons``,
        ``methods``, …), the same for the three grids; a committed result is read only when it
        was computed for exactly the grid they give.

    Returns
    -------
    dict of str → pandas.DataFrame
        ``"refit on train+validation"``: every method, the chosen setting refitted on the whole
        training set (absent where the paper tunes nothing: :func:`not_applicable`). ``"rows ÷ s"``
        (s = 2, 4, 8 at the paper profile; 4 for PPTL Figure 4 and MPL): the rows divided by s before the private
        fits, every method. ``"another seed and data draw"``: the primary grid under root seed 1
        and another draw of the data. ``"the papers' 10 repeats"``: the primary result's first 10
        repeats (where it has more). The columns are the primary result's, in its order.
    """
    if result_name not in PRIMARY:
        return {}
    e = PRIMARY[result_name]
    out = {}
    refit = _load(e["refit"], profile, seed, n_jobs, compute, **overrides) if e["refit"] else None
    if refit is not None:
        out[REFIT] = as_primary(refit, result_name)
    scaled = _load(e["row_scale"], profile, seed, n_jobs, compute, **overrides) if e["row_scale"] else None
    if scaled is not None:
        for s in sorted(scaled["row_scale"].unique()):
            out[f"rows ÷ {s:g}"] = as_primary(scaled[scaled["row_scale"] == s], result_name)
    other = _load(e["another_seed"], profile, seed, n_jobs, compute, **overrides) if e["another_seed"] else None
    if other is not None:
        out[ANOTHER_SEED] = as_primary(other, result_name)
    if not overrides and results.is_committed(result_name, profile):
        primary = results.load(result_name, profile)
        if primary["repeat"].nunique() > PAPER_REPEATS:
            out[PAPER_COUNT] = primary[primary["repeat"] < PAPER_REPEATS].reset_index(drop=True)
    return out


def not_applicable(result_name):
    """Protocol label → why that protocol does not apply to ``result_name`` (e.g. MPL has nothing to refit)."""
    e = PRIMARY.get(result_name)
    if e is None:
        return {}
    return {REFIT: e["refit_note"]} if e.get("refit_note") else {}


def draw_sentence(result_name, dataset=None):
    """What one repeat of a committed result draws anew and what stays one draw ("" for an unknown result).

    ``dataset`` (as the claims name it: "MNIST", "NEWS20", "RUIJIN-like", …) selects one data set;
    None joins the sentences of every data set of the result. Where a result keeps one draw of the
    data, its intervals leave out the variation of drawing another data set; the sentence says so,
    and that the variant "another seed" (:data:`PRIMARY`) draws it anew where one exists.
    """
    kinds = DRAWS.get(result_name)
    if not kinds:
        return ""
    if dataset is not None:
        kinds = {dataset: kinds[dataset]} if dataset in kinds else {k: v for k, v in kinds.items() if k is None}
    e = PRIMARY.get(result_name) or {}
    out = []
    for d, kind in kinds.items():
        text = _DRAW_WORDS[kind]
        if kind in _FIXED:
            text += "; the intervals leave out the variation of drawing another data set"
            if e.get("another_seed") and kind not in ("NEWS20", "MPL"):
                text += " (the variant with another seed and data draw is in the robust column)"
        out.append(text if dataset is not None or d is None or len(kinds) == 1 else f"{d}: {text}")
    return "; ".join(out) if len(out) == 1 else " ".join(f"{t}." for t in out)[:-1]


def variant_notes(result_name):
    """Protocol label pattern → one sentence saying what the variant changes (reader words)."""
    if result_name not in PRIMARY:
        return {}
    e = PRIMARY[result_name]
    out = {}
    if e["refit"]:
        out[REFIT] = (
            "every method's chosen setting refitted on the whole training set (fit and validation parts) "
            "before it is scored"
        )
    if e["row_scale"]:
        out["rows ÷ s"] = "every row divided by the public constant s before the private fits, then clipped to norm 1"
    if e["another_seed"]:
        out[ANOTHER_SEED] = _ANOTHER_SEED_WORDS
    out[PAPER_COUNT] = _PAPER_COUNT_WORDS
    return {**out, **not_applicable(result_name)}


_ANOTHER_SEED_WORDS = (
    "the whole grid again under root seed 1 instead of 0 (every split and noise draw of every repeat changes) and "
    "another draw of the data where the data is drawn (MNIST's images and PCA, the RUIJIN-like cohort); NEWS20's "
    "split is the archive's and MPL's data set is used whole"
)
_PAPER_COUNT_WORDS = (
    f"the verdicts on the first {PAPER_REPEATS} repeats of the result (the count the papers report), where the "
    "result has more"
)


def protocol_table():
    """The protocols the page compares, what each changes and the results it covers (reader words, a frame).

    Generated from :data:`PRIMARY`, :func:`variant_notes` and :func:`not_applicable`, so a variant
    registered here is described on the page without typing it there.
    """

    def scales(name):
        grid = _results.get(name).parameters("paper")
        return grid.get("row_scales", [])

    covers = {REFIT: [], "rows ÷ s": [], ANOTHER_SEED: [], PAPER_COUNT: []}
    na = []
    for name, e in PRIMARY.items():
        where = e["table"]
        if e["refit"]:
            covers[REFIT].append(where + (f" ({e['subset']})" if e.get("subset") else ""))
        if e["row_scale"]:
            s = ", ".join(f"÷ {v:g}" for v in scales(e["row_scale"]))
            covers["rows ÷ s"].append(where + (f" ({e['subset']})" if e.get("subset") else "") + f": {s}")
        if e["another_seed"]:
            covers[ANOTHER_SEED].append(where)
        n = len({c["repeat"] for c in _results.get(name).grid("paper")})
        if n > PAPER_REPEATS:
            covers[PAPER_COUNT].append(f"{where} (of {n})")
        na += [f"{e['table']} ({why.removeprefix('not applicable: ')})" for why in not_applicable(name).values()]
    notes = {}
    for name in PRIMARY:
        na_labels = not_applicable(name)
        notes.update({k: v for k, v in variant_notes(name).items() if k not in na_labels})
    rows = [
        {
            "protocol": "as in the book",
            "what changes": "the setting chosen on the validation part (λ, the high level's λ, η) is scored as it was "
            "fitted, on the fit part; rows clipped to norm 1; root seed 0; 30 repeats",
            "results": "every result",
        }
    ]
    for label, where in covers.items():
        text = "; ".join(where)
        if label == REFIT and na:
            text += "; not applicable to " + "; ".join(na)
        rows.append({"protocol": label, "what changes": notes[label], "results": text})
    return pd.DataFrame(rows).set_index("protocol")


# --------------------------------------------------------------------------------------- collapses
def row_keys(frame):
    """The columns that identify a row of a protocol table: data set, ε and repeat (those present)."""
    return [k for k in ("dataset", "epsilon", "repeat") if k in frame.columns]


def collapsed(frame, result_name):
    """Per row: whether a stacked method's repeat has collapsed (module docstring); NaN elsewhere.

    A stacked row is compared with the best one-level method of the same dataset, ε and repeat
    in ``frame``; where none is in ``frame`` the row is NaN, and so is every one-level row.
    """
    e = _entry(result_name)
    frame = frame[frame["combiner"] == "C-hl"] if "combiner" in frame.columns else frame
    keys = row_keys(frame)
    base = frame[frame["method"].isin(e["one_level"])].groupby(keys)["auc"].max().rename("_best")
    merged = frame.join(base, on=keys)
    skill = np.maximum(merged["_best"] - 0.5, 0.0)
    out = (merged["auc"] < 0.5 + COLLAPSE_FRACTION * skill).astype(float)
    out[merged["_best"].isna() | ~merged["method"].isin(e["stacked"])] = np.nan
    return out


def repeat_summary(frame, result_name):
    """Per (dataset,) method and ε: repeats, mean, median, min of the test AUC and the share of collapsed repeats.

    ``collapsed`` is the share of repeats that collapsed (:func:`collapsed`; NaN for the one-level
    methods), ``mean − median`` shows a skewed spread (a few repeats far below the rest).
    """
    frame = frame[frame["combiner"] == "C-hl"] if "combiner" in frame.columns else frame
    frame = frame.assign(collapsed=collapsed(frame, result_name))
    by = [k for k in ("dataset", "method", "n_groups", "epsilon") if k in frame.columns]
    g = frame.groupby(by, sort=False)
    out = g["auc"].agg(repeats="count", mean="mean", median="median", min="min").reset_index()
    out["mean − median"] = out["mean"] - out["median"]
    out["collapsed"] = g["collapsed"].mean().to_numpy()  # NaN where every row is NaN (one-level methods)
    return out


def repeats_summary(result_name, profile="paper", *, seed=None, n_jobs=1, compute=False):
    """:func:`repeat_summary` of the primary result ``result_name`` (None when it is not committed)."""
    _entry(result_name)
    frame = _load(result_name, profile, seed, n_jobs, compute)
    return None if frame is None else repeat_summary(frame, result_name)


# --------------------------------------------------------------------------------------- claims
