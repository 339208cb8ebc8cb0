"""PST's page helpers (Yao et al. 2019, §4.1): what the PST figure pages show beside their verdicts.

Figure numbers are the arXiv version's, the IJCAI 2019 number in brackets
(:mod:`dpstack.companion.numbering`). The claims themselves are in
:mod:`dpstack.companion.papers.pst.claims`.
"""

from __future__ import annotations

import inspect

import dp_accounting
import numpy as np
import pandas as pd

from dpstack.alternatives.accounting import epsilon_of, gaussian_event, gaussian_noise_multiplier
from dpstack.companion import results
from dpstack.companion.papers.pst.alternatives import ALTERNATIVE_METHODS, BLOCKS, GUARANTEES
from dpstack.companion.papers.pst.grids import PROFILES, stacking_cell
from dpstack.companion.stats import mean_interval, t_half_width
from dpstack.companion.tables import guarantee_frame
from dpstack.selection import calibrate_repeat_and_select, liu_talwar_epsilon, repeat_and_select_epsilon
from dpstack.stacking import resolve_groups

__all__ = [
    "alpha_label",
    "PAPER_METHODS",
    "alternatives_frame",
    "guarantee_table",
    "auc_table",
    "paired_gaps",
    "alternatives_findings",
    "ahead_behind",
    "blocks_table",
    "grid_sentence",
    "alpha_sentence",
    "below_chance_sentence",
    "TODAY_PAGE",
    "today_sentence",
    "honest_gaps",
    "honest_table",
    "honest_findings",
    "tuning_price",
    "tuning_price_sentence",
]


def alpha_label(row):
    """ "W(α=0.5)" for PST-F(W) rows with an α, else the method name."""
    a = row.get("alpha")
    return f"W(α={a:g})" if row["method"] == "PST-F(W)" and a is not None and np.isfinite(a) else row["method"]


# ------------------------------------------------------------------ today's alternatives
#: The papers' methods set beside today's alternatives (Figure 1's committed rows, combiner C-hl).
PAPER_METHODS = ("PLR", "PST-S", "PST-F(W)")


def alternatives_frame(alternatives, seed=0, fig1=None):
    """One tidy frame: the alternatives' rows and Figure 1's rows of :data:`PAPER_METHODS` on the same
    (dataset, ε, repeat), which share their split and test set when both were computed with the same
    root seed (columns dataset, method, epsilon, repeat, auc, lam).

    ``fig1`` defaults to Figure 1's committed result (``pst_fig1_epsilon``: 30 repeats, MNIST drawn
    anew in each; root seed 0), whose repeat r has the draw of the data, the split and the test set
    of the alternatives' repeat r: with another ``seed`` the repeats are not paired and the frame
    holds the alternatives alone. Only the (dataset, ε, repeat) the alternatives have are joined.
    """
    cols = ["dataset", "method", "epsilon", "repeat", "auc", "lam"]
    if fig1 is None and seed == 0:
        fig1 = results.load("pst_fig1_epsilon", "paper")
    if fig1 is None:
        return alternatives[cols].reset_index(drop=True)
    keys = alternatives[["dataset", "epsilon", "repeat"]].drop_duplicates()
    paper = fig1[fig1["method"].isin(PAPER_METHODS) & (fig1["combiner"] == "C-hl")]
    paper = paper.merge(keys, on=["dataset", "epsilon", "repeat"])
    return pd.concat([paper[cols], alternatives[cols]], ignore_index=True)


def guarantee_table(methods):
    """What each method guarantees: a row per method (guarantee, neighbouring relation, unit, what it assumes)."""
    return guarantee_frame(GUARANTEES, methods)


def _order(methods):
    known = list(PAPER_METHODS) + list(ALTERNATIVE_METHODS)
    return sorted(methods, key=lambda m: known.index(m) if m in known else len(known))


def auc_table(frame, dataset):
    """Mean test AUC ± the half-width of its 95 % t-interval over repeats: a row per method, a column per ε."""
    part = frame[frame["dataset"] == dataset]
    out = {}
    for method in _order(part["method"].unique()):
        rows = part[part["method"] == method]
        out[method] = {
            _eps_label(e): f"{mean_interval(g['auc'])[0]:.3f} ± {t_half_width(g['auc']):.3f}"
            for e, g in rows.groupby("epsilon")
        }
    table = pd.DataFrame(out).T
    return table[[c for c in map(_eps_label, sorted(part["epsilon"].unique())) if c in table.columns]]


def _eps_label(e):
    return "ε = ∞" if not np.isfinite(e) else f"ε = {e:g}"


def paired_gaps(frame, reference="PST-F(W)"):
    """Each alternative minus ``reference``, paired by repeat (same split, same test set): a row per
    (dataset, method, ε) with the mean difference of test AUC and its 95 % t-interval.

    The unit of replication is the repeat (a random fit / validation split and fresh noise for
    every method); the intervals are per comparison, with no correction across them: they describe,
    they do not judge a claim of the paper.
    """
    ref = frame[frame["method"] == reference].set_index(["dataset", "epsilon", "repeat"])["auc"]
    rows = []
    for (dataset, method, eps), g in frame[frame["method"].isin(ALTERNATIVE_METHODS)].groupby(
        ["dataset", "method", "epsilon"]
    ):
        paired = g.set_index(["dataset", "epsilon", "repeat"])["auc"].sub(ref, fill_value=np.nan).dropna()
        if paired.empty:
            continue
        mean, lo, hi = mean_interval(paired.to_numpy())
        rows.append(
            dict(dataset=dataset, method=method, epsilon=eps, difference=mean, low=lo, high=hi, repeats=len(paired))
        )
    return pd.DataFrame(rows)


def ahead_behind(frame, method, reference):
    """``method`` against ``reference``, paired by repeat, at the finite ε of ``frame``: per dataset, the
    number of ε where the 95 % interval of the mean difference lies above 0 (ahead) and below 0 (behind).

    Returns
    -------
    DataFrame
        A row per dataset: ``ahead``, ``behind``, ``n_epsilons``, ``largest`` (the largest mean
        difference) and ``at`` (its ε); empty when either method is absent.
    """
    if method not in set(frame["method"]) or reference not in set(frame["method"]):
        return pd.DataFrame(columns=["dataset", "ahead", "behind", "n_epsilons", "largest", "at"])
    part = frame[frame["method"].isin([method, reference])]
    gaps = paired_gaps(part, reference=reference)
    gaps = gaps[(gaps["method"] == method) & np.isfinite(gaps["epsilon"])]
    rows = []
    for dataset, g in gaps.groupby("dataset"):
        top = g.loc[g["difference"].idxmax()]
        rows.append(
            dict(
                dataset=dataset,
                ahead=int((g["low"] > 0).sum()),
                behind=int((g["high"] < 0).sum()),
                n_epsilons=len(g),
                largest=float(top["difference"]),
                at=float(top["epsilon"]),
            )
        )
    return pd.DataFrame(rows)


def blocks_table(frame):
    """PST-F(W) with DP-GD blocks minus DP-GD (replace-one) and minus PST-F(W), paired by repeat: a row per
    (dataset, method compared with, ε) with the mean difference of test AUC, its 95 % t-interval and
    the number of repeats."""
    rows = []
    for reference in ("DP-GD (replace-one)", "PST-F(W)"):
        if BLOCKS not in set(frame["method"]) or reference not in set(frame["method"]):
            continue
        gaps = paired_gaps(frame[frame["method"].isin([BLOCKS, reference])], reference=reference)
        for r in gaps[gaps["method"] == BLOCKS].itertuples():
            rows.append(
                {
                    "dataset": r.dataset,
                    "against": reference,
                    "ε": _eps_label(r.epsilon).removeprefix("ε = "),
                    "difference": f"{r.difference:+.3f}",
                    "95 % interval": f"[{r.low:+.3f}, {r.high:+.3f}]",
                    "repeats": int(r.repeats),
                }
            )
    return pd.DataFrame(rows)


def grid_sentence(frame, profile="paper"):
    """What the page's grid holds against Figure 1's (ε values and repeats), "" when it holds all of Figure 1's ε."""
    ours = sorted(frame["epsilon"].unique())
    figure = [float(e) for e in PROFILES[profile]["epsilons"]]
    left = [e for e in figure if e not in ours]
    if not left:
        return ""
    reps = int(frame.groupby(["dataset", "method", "epsilon"])["repeat"].nunique().min())
    return (
        f"The stored grid holds ε = {', '.join(_eps_label(e).removeprefix('ε = ') for e in ours)} at {reps} "
        f"repeats per dataset, Figure 1's repeats; Figure 1's other values of ε "
        f"({', '.join(_eps_label(e).removeprefix('ε = ') for e in left)}) were left out of the stored grid for "
        "the compute budget (its repeats were kept). The page's `epsilons` parameter computes any of them live."
    )


def _blocks_text(frame, dataset):
    """Where PST-F(W) with DP-GD blocks stands against DP-GD and against PST-F(W) on ``dataset``."""
    bits = []
    for reference in ("DP-GD (replace-one)", "PST-F(W)"):
        t = ahead_behind(frame, BLOCKS, reference)
        t = t[t["dataset"] == dataset]
        if len(t):
            r = t.iloc[0]
            bits.append(
                f"against {reference} ahead at {r['ahead']} and behind at {r['behind']} of the {r['n_epsilons']} "
                f"finite values of ε (largest mean difference {r['largest']:+.3f} AUC, at ε = {r['at']:g})"
            )
    return f" PST-F(W) with DP-GD blocks: {'; '.join(bits)}." if bits else ""


def alternatives_findings(frame):
    """The page's findings as Markdown bullets, from the results (one per dataset, then the overall)."""
    bullets = []
    finite = frame[np.isfinite(frame["epsilon"])]
    gaps = paired_gaps(frame) if "PST-F(W)" in set(frame["method"]) else pd.DataFrame()
    for dataset, part in finite.groupby("dataset"):
        eps = part["epsilon"].min()
        at = part[part["epsilon"] == eps].groupby("method")["auc"].mean()
        best = at.idxmax()
        parts = [f"at ε = {eps:g} the best mean test AUC is {best}'s, {at[best]:.3f}"]
        for m in ("PLR", "PST-F(W)"):
            if m in at and m != best:
                parts.append(f"{m} {at[m]:.3f}")
        text = f"- **{dataset}:** " + "; ".join(parts) + "."
        if not gaps.empty:
            g = gaps[
                (gaps["dataset"] == dataset) & (gaps["method"] == "DP-GD (replace-one)") & np.isfinite(gaps["epsilon"])
            ]
            if len(g):
                ahead = g[g["low"] > 0]
                behind = g[g["high"] < 0]
                text += (
                    f" DP-GD under the papers' relation (replace-one) is ahead of PST-F(W) at {len(ahead)} of "
                    f"the {len(g)} finite values of ε (95 % interval above 0) and behind at {len(behind)}"
                    + (
                        f" (largest lead {g['difference'].max():+.3f} AUC, at ε = {g.loc[g['difference'].idxmax(), 'epsilon']:g})"
                        if len(ahead)
                        else ""
                    )
                    + "."
                )
        text += _blocks_text(frame, dataset)
        bullets.append(text)
    return "\n".join(bullets)


#: The page that sets PST beside today's private learners (the landing page links it).
TODAY_PAGE = "pst_alternatives"


def today_sentence(frame=None, link=""):
    """Where PST's best method stands against today's main alternative, from the committed results.

    DP-GD under the papers' neighbouring relation (replace-one) against PST-F(W), paired by repeat:
    at how many finite ε its 95 % interval lies above 0 and below 0, per dataset. ``frame``
    defaults to :func:`alternatives_frame` of the committed ``pst_alternatives``; ``link`` is the
    page's address for the sentence's link ("" for none). "" when the results are absent.
    """
    if frame is None:
        try:
            frame = alternatives_frame(results.load(TODAY_PAGE, "paper"))
        except results.MissingResultError:
            return ""
    gaps = paired_gaps(frame) if "PST-F(W)" in set(frame["method"]) else pd.DataFrame()
    if gaps.empty:
        return ""
    g = gaps[(gaps["method"] == "DP-GD (replace-one)") & np.isfinite(gaps["epsilon"])]
    bits = []
    for dataset, part in g.groupby("dataset", sort=False):
        bits.append(
            f"ahead at {int((part['low'] > 0).sum())} and behind at {int((part['high'] < 0).sum())} of "
            f"{len(part)} values of ε on {dataset}"
        )
    if not bits:
        return ""
    what = f"[today's alternatives]({link})" if link else "today's alternatives"
    reps = int(g["repeats"].max())
    blocks = []
    for reference in ("PST-F(W)", "DP-GD (replace-one)"):
        t = ahead_behind(frame, BLOCKS, reference)
        if len(t):
            per = "; ".join(
                f"ahead at {r.ahead} and behind at {r.behind} of {r.n_epsilons} on {r.dataset}" for r in t.itertuples()
            )
            blocks.append(f"against {reference} {per}")
    stacked = (
        " PST-F(W) with its blocks fitted by one DP-GD (does stacking still help once the blocks are modern?) is "
        + ", and ".join(blocks)
        + "."
        if blocks
        else ""
    )
    return (
        f"Against {what}: noisy full-batch gradient descent (DP-GD, (ε, δ) under the same replace-one relation) "
        f"against PST-F(W), paired by repeat ({reps} repeats, 95 % intervals per comparison): "
        + "; ".join(bits)
        + "; every method's λ tuned on private validation rows."
        + stacked
    )


def alpha_sentence(df, n_features, n_groups=None, tol=1e-3):
    """Why PST-F(W)'s AUCs at the smallest α are (almost) equal, from the frame of PST Figure 3 [IJCAI Fig. 2(c)–(d)].

    ``n_features``: the number of features the groups are cut from (the page reads it from the data);
    ``n_groups``: K (default: the experiment's). With v_i = α^i, eq. (6) gives the first group a share
    q_1 that is 1 to within ``tol`` for every α below a point; the other blocks are then scaled to almost
    nothing. The sentence names those α, their q_1, and the largest paired AUC difference between them.
    """
    if n_groups is None:
        n_groups = inspect.signature(stacking_cell).parameters["n_groups"].default
    w = df[(df["method"] == "PST-F(W)") & df["alpha"].notna()]
    alphas = sorted(a for a in w["alpha"].unique() if a < 1)
    q1 = {}
    for a in alphas:
        groups, q = resolve_groups(n_features, n_groups, feature_importance=float(a) ** np.arange(1, n_features + 1))
        q1[a] = q[0]
    flat = [a for a in alphas if q1[a] >= 1 - tol]
    if len(flat) < 2:
        return ""
    auc = w[w["alpha"].isin(flat)].pivot_table(index=["dataset", "repeat"], columns="alpha", values="auc")
    spread = float((auc.max(axis=1) - auc.min(axis=1)).max())
    size = len(groups[0])
    shares = ", ".join(f"{q1[a]:.6f} at α = {a:g}" for a in alphas)
    return (
        f"Why the AUCs for α ≤ {flat[-1]:g} are equal: with vᵢ = αⁱ over the {n_features} features "
        f"and K = {n_groups} groups, eq. (6) gives the first group (the {size} features of largest variance) "
        f"the share q₁ = {shares}. The qₖ are the blocks' norm bounds, so for α ≤ {flat[-1]:g} the other "
        f"blocks are scaled to almost nothing and PST-F(W) is in effect one private model on those {size} "
        f"features, the same model at each of these α: their paired AUCs differ by at most {spread:.4f} in any "
        f"repeat. The claim that PST-F(W) is not sensitive to α below 1 is therefore close to true by "
        f"construction on these data."
        + (
            ""
            if alphas[-1] in flat
            else f" α = {alphas[-1]:g} gives the other groups a share (q₁ = {q1[alphas[-1]]:.3f}); its mean AUC "
            f"differs from α = {alphas[0]:g}'s by at most {_largest_mean_gap(w, alphas[0], alphas[-1]):.4f} "
            "on either dataset."
        )
    )


def _largest_mean_gap(w, a, b):
    """The largest |mean AUC at α = a − mean AUC at α = b| over the datasets of ``w``."""
    means = w.groupby(["dataset", "alpha"])["auc"].mean().unstack("alpha")
    return float((means[a] - means[b]).abs().max())


def below_chance_sentence(auc, by=("method", "combiner"), level=0.95):
    """Why some mean AUCs of the worked example are below 0.5: one row per repeat in ``auc`` (columns ``by``,
    ``epsilon``, ``auc``).

    Names each (``by``, ε) whose mean is below 0.5 with its interval over repeats, and says whether every
    such interval contains 0.5 (chance) or not.
    """
    low = []
    for key, part in auc.groupby([*by, "epsilon"], sort=False):
        mean, lo, hi = mean_interval(part["auc"].dropna().to_numpy(), level=level)
        if mean < 0.5:
            low.append((key, mean, lo, hi))
    if not low:
        return ""
    pct = f"{level * 100:.0f} %"
    named = "; ".join(
        f"{' '.join(map(str, k[:-1]))} at ε = {k[-1]:g}: {m:.3f}, {pct} interval [{lo:.3f}, {hi:.3f}]"
        for k, m, lo, hi in low
    )
    chance = all(lo <= 0.5 <= hi for _, _, lo, hi in low)
    n = auc.groupby([*by, "epsilon"]).size().min()
    return (
        f"Mean AUCs below 0.5 ({named}) are no model that learned the labels backwards: a low-level model sees "
        "only its part of the data, so its noise outweighs its signal and its direction is close to the noise's, "
        "whose AUC is 0.5 on average with a wide spread; "
        + (
            f"the mean of {n} repeats of such a model falls below 0.5 about as often as above, and "
            f"{'its' if len(low) == 1 else 'every such'} {pct} interval contains 0.5."
            if chance
            else f"not every such {pct} interval contains 0.5."
        )
    )


# ------------------------------------------------------------------ honest tuning
def honest_gaps(frame):
    """Honest minus the papers' way, paired by repeat: a row per (dataset, method, total ε).

    ``frame`` holds the committed cells of the honest-tuning grid (one row per repeat, both
    protocols' test AUC on the same split). Each row gives both means, the mean paired difference
    (honest − papers') with its 95 % t-interval (:func:`dpstack.companion.stats.mean_interval`,
    the repeat the unit; per comparison, no correction across rows: they describe, they judge no
    claim of the paper) and the mean number of honest runs.
    """
    rows = []
    for (dataset, method, eps), g in frame.groupby(["dataset", "method", "epsilon"]):
        diff = (g["auc_honest"] - g["auc_papers"]).to_numpy()
        mean, lo, hi = mean_interval(diff)
        rows.append(
            dict(
                dataset=dataset,
                method=method,
                epsilon=float(eps),
                papers=float(g["auc_papers"].mean()),
                honest=float(g["auc_honest"].mean()),
                difference=mean,
                low=lo,
                high=hi,
                repeats=int(np.isfinite(diff).sum()),
                runs=float(g["n_runs"].mean()),
            )
        )
    return pd.DataFrame(rows)


def honest_table(gaps):
    """The page's table: a row per (dataset, method, ε), the two protocols' mean test AUC and the paired cost."""
    return pd.DataFrame(
        {
            "dataset": gaps["dataset"],
            "method": gaps["method"],
            "total ε": gaps["epsilon"].map(lambda e: f"{e:g}"),
            "papers' way (outside the guarantee)": gaps["papers"].map(lambda v: f"{v:.3f}"),
            "honest (choice inside ε)": gaps["honest"].map(lambda v: f"{v:.3f}"),
            "honest − papers' [95 % interval]": [
                f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]" for d, lo, hi in zip(gaps["difference"], gaps["low"], gaps["high"])
            ],
            "runs (mean)": gaps["runs"].map(lambda v: f"{v:.1f}"),
        }
    )


def honest_findings(gaps):
    """The page's findings as Markdown bullets: a bullet per dataset, the cost of honest tuning at each ε."""
    bullets = []
    for dataset, part in gaps.groupby("dataset"):
        parts = []
        for eps, g in part.groupby("epsilon"):
            items = [
                f"{r.method} {r.difference:+.3f} [{r.low:+.3f}, {r.high:+.3f}]"
                for r in g.sort_values("method").itertuples()
            ]
            parts.append(f"at ε = {eps:g}: " + ", ".join(items))
        below = part[part["high"] < 0]
        above = part[part["low"] > 0]
        bullets.append(
            f"- **{dataset}** (test AUC, honest minus the papers' way, paired over {int(part['repeats'].min())} "
            f"repeats, 95 % interval): "
            + "; ".join(parts)
            + f". Honest tuning is behind in {len(below)} and ahead in {len(above)} of these {len(part)} comparisons "
            "(interval excluding 0)."
        )
    return "\n".join(bullets)


def tuning_price(epsilons=(0.1, 1.0, 4.0), n_candidates=10, delta=1e-5, steps=100):
    """What one run at ε becomes when ``n_candidates`` candidates are tuned, by protocol: a row per ε.

    Pure ε (the papers' methods): running every candidate and releasing the best composes to
    n·ε; Liu & Talwar's random stopping (mean n runs) costs 3ε
    (:func:`dpstack.selection.liu_talwar_epsilon`). (ε, δ) (DP-GD with ``steps`` full-batch steps,
    replace-one, δ = ``delta``, Rényi accounting): the run's noise multiplier for ε, then n runs
    composed and Papernot & Steinke's repeat-and-select with a Poisson or geometric number of runs
    of mean n (:func:`dpstack.selection.repeat_and_select_epsilon`); and the other way round, the
    ε one run may have so that repeat-and-select (Poisson) totals ε
    (:func:`dpstack.selection.calibrate_repeat_and_select`).
    """
    rows = []
    for eps in epsilons:
        z = gaussian_noise_multiplier(eps, delta, steps, neighbouring="replace-one", accountant="RDP")
        event = gaussian_event(z, steps)
        composed = epsilon_of(
            dp_accounting.SelfComposedDpEvent(event, n_candidates), delta, accountant="RDP", neighbouring="replace-one"
        )
        rows.append(
            {
                "one run's ε": f"{eps:g}",
                f"pure ε: {n_candidates} runs composed": f"{n_candidates * eps:.3g}",
                "pure ε: Liu–Talwar": f"{liu_talwar_epsilon(eps):.3g}",
                f"(ε, δ): {n_candidates} runs composed": f"{composed:.3g}",
                "(ε, δ): repeat-and-select, Poisson": f"{repeat_and_select_epsilon(event, delta, n_candidates):.3g}",
                "(ε, δ): repeat-and-select, geometric": (
                    f"{repeat_and_select_epsilon(event, delta, n_candidates, distribution='geometric'):.3g}"
                ),
                "(ε, δ): one run's ε for a Poisson total of ε": (
                    f"{calibrate_repeat_and_select(eps, delta, n_candidates, steps=steps)['run_epsilon']:.3g}"
                ),
            }
        )
    return pd.DataFrame(rows)


def tuning_price_sentence(epsilon=1.0, n_candidates=10, delta=1e-5, steps=100):
    """One sentence of :func:`tuning_price` at one ε: what a single run becomes when tuned honestly."""
    row = tuning_price([epsilon], n_candidates, delta, steps).iloc[0].tolist()
    _, _, liu_talwar, _, poisson, geometric, run = row
    return (
        f"A single run at ε = {epsilon:g} tuned over {n_candidates} candidates becomes ε = {liu_talwar} for a pure ε "
        f"method (random stopping) and ε = {poisson} for DP-GD (repeat-and-select, Poisson; {geometric} with a "
        f"geometric number of runs); to keep a total of ε = {epsilon:g}, each DP-GD run may spend only ε = {run}."
    )
