"""PPTL's claims (Guo et al.) and PST Table 2, judged on the results of the transfer pages.

Each function takes the tidy table of one experiment of :mod:`dpstack.companion.papers.pptl.grids`
(committed as ``results/<name>/paper.csv``) and returns its claims table by the shared rule of
:mod:`dpstack.companion.rule`; :func:`beside_paper` puts our means next to a paper table of
:mod:`dpstack.companion.paper_values`.
"""

from __future__ import annotations

from dpstack.companion.paper_values import PPTL_CLAIMS, PST_CLAIMS
from dpstack.companion.papers.pptl.grids import PST_NAMES, TRANSFER_METHODS
from dpstack.companion.rule import AUC_MARGIN, all_of, check_claim, claims_table

#: the column of the claims tables that quotes the paper (its words live in paper_values)
SAID = "the paper says"


def said(key, index, paper="PPTL"):
    """Claim ``index`` of the paper's claims about ``key`` (:data:`~dpstack.companion.paper_values.PPTL_CLAIMS`
    or, with ``paper="PST"``, :data:`~dpstack.companion.paper_values.PST_CLAIMS`)."""
    return (PPTL_CLAIMS if paper == "PPTL" else PST_CLAIMS)[key]["claims"][index]


__all__ = ["SAID", "said", "beside_paper", "table1_claims", "branches_claims", "average_ranks", "groups_claims"]


def beside_paper(df, table, key="epsilon", names=None):
    """Our mean ± s.d. next to the paper's, one row per (method, key) present in both.

    ``names`` maps our method names to the table's (e.g. :data:`PST_NAMES` for PST Table 2).
    """
    from dpstack.companion.paper_values import table_frame

    paper = table_frame(table, key)
    ours = df.groupby(["method", key])["auc"].agg(ours_mean="mean", ours_sd="std", n="count").reset_index()
    if names:
        ours["method"] = ours["method"].map(lambda m: names.get(m, m))
    out = ours.merge(paper.drop(columns="source"), on=["method", key], how="inner")
    out["ours − paper"] = out["ours_mean"] - out["paper_mean"]
    return out.round(4)


def table1_claims(df, table="table1"):
    """PPTL Table 1's claims (MNIST; pairs repeat × ε unless stated), all directional.

    ``table="table2"`` judges the same claims on PPTL Table 2 (a RUIJIN centre against ε): the
    paper says there only that every AUC decreases with ε and that PPTL-FS(W) is the best; the
    other two rows are Table 1's claims, tested on Table 2's numbers too.
    """
    lo, hi = df["epsilon"].min(), df["epsilon"].max()

    def quote(i):
        if table == "table1":
            return said("table1", i)
        own = {0: 0, 3: 1}  # Table 1's claims that PPTL also makes about Table 2
        return said("table2", own[i]) if i in own else f"(Table 1: {said('table1', i)})"

    out = [
        check_claim(df, hi, lo, by="epsilon", where={"method": m}, claim=f"{m}: AUC at ε={hi:g} > at ε={lo:g}")
        for m in TRANSFER_METHODS
    ]
    ctx = [{SAID: quote(0)} for _ in out]
    pair = ("repeat", "epsilon")
    out += [check_claim(df, "SimComb", m, pair_on=pair) for m in ("SourceD", "Direct")]
    ctx += [{SAID: quote(1)}] * 2
    out.append(
        check_claim(
            df, "PPTL-FS(R)", "SimComb", where={"epsilon": lo}, claim=f"at small ε (={lo:g}) PPTL-FS(R) > SimComb"
        )
    )
    ctx.append({SAID: quote(2)})
    out += [check_claim(df, "PPTL-FS(W)", m, pair_on=pair, claim=f"PPTL-FS(W) > {m}") for m in TRANSFER_METHODS[1:]]
    ctx += [{SAID: quote(3)}] * (len(TRANSFER_METHODS) - 1)
    return claims_table(out, ctx)


def branches_claims(df):
    """PST Table 2 / PPTL Table 4 claims over the branches (pairs: repeat × branch), in PST names.

    "PPHTL may not beat PLR(target)" is a non-inferiority claim (PLR(target) not worse than
    PPHTL by :data:`~dpstack.companion.rule.AUC_MARGIN` or more); the others are
    directional, "consistently" judged on the pooled pairs with the per-branch verdicts counted
    in the claim's text.
    """
    df = df[df["method"] != "PLR(main)"]
    pair = ("repeat", "branch")
    out = []
    means = df.groupby(["branch", "method"])["auc"].mean().unstack()
    n_not = int((means["SimComb"] <= means["Direct"]).sum())
    out.append(
        check_claim(
            df,
            "Direct",
            "SimComb",
            pair_on=pair,
            kind="non-inferiority",
            margin=AUC_MARGIN,
            claim=f"PLR(target) not worse than PPHTL by {AUC_MARGIN:g} "
            f"(mean PPHTL ≤ PLR(target) in {n_not} of {len(means)} branches)",
        )
    )
    ctx = [{SAID: "PST: " + said("table2", 0, "PST")}]
    out.append(check_claim(df, "PPTL-FS(R)", "SimComb", pair_on=pair, claim="PST-H(U) > PPHTL"))
    ctx.append({SAID: "PST: " + said("table2", 1, "PST")})
    per_branch = [check_claim(df, "PPTL-FS(R)", "Direct", where={"branch": b}) for b in sorted(df["branch"].unique())]
    n_ok = sum(r.outcome == "supported" for r in per_branch)
    out.append(
        check_claim(
            df,
            "PPTL-FS(R)",
            "Direct",
            pair_on=pair,
            claim=f"PST-H(U) > PLR(target) (pooled; supported in {n_ok} of {len(per_branch)} branches alone)",
        )
    )
    ctx.append({SAID: "PST: " + said("table2", 2, "PST")})
    out.append(check_claim(df, "PPTL-FS(R)", "SourceD", pair_on=pair, claim="PPTL-FS(R) > SourceD"))
    ctx.append({SAID: "PPTL Table 4: " + said("table4", 1)})
    out += [
        check_claim(df, "PPTL-FS(W)", m, pair_on=pair, claim=f"PST-H(W) > {PST_NAMES[m]}") for m in TRANSFER_METHODS[1:]
    ]
    ctx += [{SAID: "PST and PPTL Table 4: " + said("table2", 3, "PST")}] * (len(TRANSFER_METHODS) - 1)
    return claims_table(out, ctx)


def average_ranks(df):
    """Mean rank of each method over branches (1 = best mean AUC), as in PPTL Table 4's last column."""
    means = df[df["method"].isin(TRANSFER_METHODS)].groupby(["branch", "method"])["auc"].mean().unstack()
    return means.rank(axis=1, ascending=False).mean().sort_values().round(2)


def groups_claims(df):
    """PPTL Figure 4: a peak in K per variant; W not worse than R at any K.

    The peak is directional (the best interior K beats both ends: both must hold). "W not worse
    than R at any K" is a non-inferiority claim at every K with margin
    :data:`~dpstack.companion.rule.AUC_MARGIN` (all must hold). Where the peaks lie (the
    paper's "W peaks at a smaller K than R") is a location of a maximum, not a paired
    comparison: the claims' text gives each peak's K and the figure shows it.
    """
    out, ctx = [], []
    for (d, m), part in df.groupby(["dataset", "method"], sort=False):
        ks = sorted(part["n_groups"].unique())
        means = part.groupby("n_groups")["auc"].mean()
        k_best = int(means.loc[ks[1:-1]].idxmax())
        tests = [check_claim(part, k_best, end, by="n_groups") for end in (ks[0], ks[-1])]
        out.append(all_of(tests, f"{m}: peak at K={k_best} beats K={ks[0]} and K={ks[-1]}"))
        ctx.append({"dataset": d, SAID: said("fig4", 0)})
    for d, part in df.groupby("dataset", sort=False):
        tests = [
            check_claim(
                part, "PPTL-FS(W)", "PPTL-FS(R)", where={"n_groups": k}, kind="non-inferiority", margin=AUC_MARGIN
            )
            for k in sorted(part["n_groups"].unique())
        ]
        n_ok = sum(t.outcome == "supported" for t in tests)
        out.append(
            all_of(
                tests,
                f"PPTL-FS(W) not worse than PPTL-FS(R) by {AUC_MARGIN:g} at any K "
                f"(supported at {n_ok} of {len(tests)} K)",
            )
        )
        ctx.append({"dataset": d, SAID: said("fig4", 2)})
    return claims_table(out, ctx)
