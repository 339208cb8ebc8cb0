"""PST's claims, judged on the results of the PST experiment pages (Yao et al. 2019, §4.1).

Figure numbers are the arXiv version's, the IJCAI 2019 number in brackets
(:mod:`dpstack.companion.numbering`). Each function takes the tidy table of one page
(:mod:`dpstack.companion.papers.pst.grids`, committed as ``results/<page>/paper.csv``) and returns its
claims table by the shared rule of :mod:`dpstack.companion.rule`.
"""

from __future__ import annotations

import numpy as np

from dpstack.companion.paper_values import PST_CLAIMS
from dpstack.companion.papers.pst.grids import STACKING_METHODS
from dpstack.companion.rule import AUC_MARGIN, any_of, check_claim, claims_table

#: the column of the claims tables that quotes the paper (its words live in paper_values)
SAID = "the paper says"


def said(key, index):
    """Claim ``index`` of PST's claims about ``key`` (:data:`~dpstack.companion.paper_values.PST_CLAIMS`)."""
    return PST_CLAIMS[key]["claims"][index]


__all__ = ["SAID", "said", "fig1_claims", "fig2_claims", "fig3_claims", "fig4_claims", "alpha_label"]


def _finite(df):
    return df[np.isfinite(df["epsilon"])]


def fig1_claims(df):
    """PST Figure 1's claims, judged per dataset (pairs: repeat × finite ε unless stated).

    "PST-S can be inferior to PLR" is a claim about *some* ε: supported when PLR > PST-S is
    supported at one ε at level 0.05 / (number of ε) (Bonferroni). Every other claim is
    directional.
    """
    out, ctx = [], []
    for d, part in df.groupby("dataset", sort=False):
        fin = _finite(part)
        lo, hi = fin["epsilon"].min(), fin["epsilon"].max()
        for m in STACKING_METHODS:
            out.append(
                check_claim(fin, hi, lo, by="epsilon", where={"method": m}, claim=f"{m}: AUC at ε={hi:g} > at ε={lo:g}")
            )
            ctx.append({"dataset": d, SAID: said("fig1", 0)})
        eps = sorted(fin["epsilon"].unique())
        per_eps = [
            check_claim(
                fin, "PLR", "PST-S", where={"epsilon": e}, alpha=0.05 / len(eps), claim=f"PLR > PST-S at ε={e:g}"
            )
            for e in eps
        ]
        out.append(any_of(per_eps, "PLR > PST-S at some ε (Bonferroni over ε)"))
        ctx.append({"dataset": d, SAID: said("fig1", 1)})
        for better in ("PST-F(W)", "PST-F(U)"):
            for worse in ("PST-S", "PLR"):
                out.append(check_claim(fin, better, worse, pair_on=("repeat", "epsilon")))
                ctx.append({"dataset": d, SAID: said("fig1", 2)})
        out.append(
            check_claim(
                fin,
                "PST-F(W)",
                "PST-F(U)",
                pair_on=("repeat", "epsilon"),
                claim="PST-F(W) > PST-F(U)",
            )
        )
        ctx.append({"dataset": d, SAID: said("fig1", 3)})
    return claims_table(out, ctx)


def fig2_claims(df):
    """PST Figure 2 [IJCAI Fig. 2(a)-(b)]: a peak at an intermediate K (best interior K beats both ends).

    Directional claims; the interior K is the one with the best mean AUC.
    """
    out, ctx = [], []
    for (d, m), part in df[df["method"] != "PLR"].groupby(["dataset", "method"], sort=False):
        ks = sorted(part["n_groups"].unique())
        means = part.groupby("n_groups")["auc"].mean()
        k_best = int(means.loc[ks[1:-1]].idxmax())
        for end in (ks[0], ks[-1]):
            out.append(check_claim(part, k_best, end, by="n_groups", claim=f"peak: K={k_best} > K={end}"))
            ctx.append({"dataset": d, "method": m, SAID: said("fig2", 0)})
    return claims_table(out, ctx)


def alpha_label(row):
    """ "W(α=0.5)" for PST-F(W) rows with an α, else the method name."""
    a = row.get("alpha")
    return f"W(α={a:g})" if row["method"] == "PST-F(W)" and a is not None and np.isfinite(a) else row["method"]


def fig3_claims(df):
    """PST Figure 3 [IJCAI Fig. 2(c)-(d)]: α < 1 beats U; α > 1 is worse than α < 1; W is flat in α < 1.

    The first two are directional; "flat in α < 1" is an equivalence claim between the
    smallest and the largest α < 1, with margin :data:`~dpstack.companion.rule.AUC_MARGIN`.
    """
    df = df.assign(label=df.apply(alpha_label, axis=1))
    out, ctx = [], []
    for d, part in df.groupby("dataset", sort=False):
        alphas = sorted(part["alpha"].dropna().unique())
        small, large = [a for a in alphas if a < 1], [a for a in alphas if a > 1]
        for a in small:
            out.append(check_claim(part, f"W(α={a:g})", "PST-F(U)", by="label"))
            ctx.append({"dataset": d, SAID: said("fig3", 0)})
        for a in large:
            out.append(
                check_claim(
                    part,
                    f"W(α={small[-1]:g})",
                    f"W(α={a:g})",
                    by="label",
                    claim=f"AUC decreases for α > 1: α={small[-1]:g} > α={a:g}",
                )
            )
            ctx.append({"dataset": d, SAID: said("fig3", 1)})
        if len(small) >= 2:
            out.append(
                check_claim(
                    part,
                    f"W(α={small[0]:g})",
                    f"W(α={small[-1]:g})",
                    by="label",
                    kind="equivalence",
                    margin=AUC_MARGIN,
                    claim=f"not sensitive for α < 1: α={small[0]:g} ≈ α={small[-1]:g}",
                )
            )
            ctx.append({"dataset": d, SAID: said("fig3", 2)})
    return claims_table(out, ctx)


def fig4_claims(df):
    """PST Figure 4 [IJCAI Fig. 3]: C-0 best single model (W); C-hl beats votes and singles (directional)."""
    out, ctx = [], []
    w = df[df["method"] == "PST-F(W)"]
    singles = sorted(c for c in df["combiner"].unique() if c not in ("C-mv", "C-wmv", "C-hl"))
    for c in singles[1:]:
        out.append(check_claim(w, "C-0", c, by="combiner"))
        ctx.append({"method": "PST-F(W)", SAID: said("fig4", 0)})
    for m, part in df.groupby("method", sort=False):
        for c in ["C-mv", "C-wmv", *singles]:
            out.append(check_claim(part, "C-hl", c, by="combiner"))
            ctx.append({"method": m, SAID: said("fig4", 1 if c in ("C-mv", "C-wmv") else 2)})
    return claims_table(out, ctx)
