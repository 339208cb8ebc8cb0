"""The experiments of the pages beyond the papers' figures, each declared once.

The ablation of the stacked methods' open choices (one page, six grids) and the end-to-end private
protocol beside the papers' (:class:`dpstack.companion.spec.ExperimentSpec`). The registries of
:mod:`dpstack.companion` derive from these declarations
(:func:`dpstack.companion.spec.declarations`); no computing module imports this one.
"""

from __future__ import annotations

from dpstack.companion.chapters import end_to_end as e2e
from dpstack.companion.papers.open_choices import (
    ABLATION_VARIANTS,
    FACTOR_VARIANTS,
    PST_FACTOR_VARIANTS,
    plain_table,
)
from dpstack.companion.papers.pptl import grids as pptl
from dpstack.companion.papers.pst import grids as pst
from dpstack.companion.parameters import RULES, choices
from dpstack.companion.spec import ExperimentSpec, Knob, TryIt, both, by_name, const, from_profiles, needs

__all__ = ["EXPERIMENTS"]

P, T, E = pst.PROFILES, pptl.TRANSFER_PROFILES, e2e.PROFILES
EPSILONS, EPSILON, REPEATS = RULES["epsilons"], RULES["epsilon"], RULES["n_repeats"]
LAM_GRID = (RULES["lams"][0], RULES["lams"][1])
MNIST_STATUS = needs(pst.require_data, "MNIST")
TRANSFER_STATUS = needs(lambda *datasets: pptl.require_data(), "MNIST")
ABLATION = "stacking_ablation"


def _pick(variants, names):
    return {k: variants[k] for k in names}


def _ablation_knobs(methods, variants, lam_profiles, epsilon=None):
    """The knobs of an ablation grid (every profile names them, but the λ grid)."""
    eps = Knob("epsilons", EPSILONS, "the ε grid") if epsilon is None else Knob("epsilon", EPSILON, "ε")
    return (
        Knob("methods", choices(methods), "methods"),
        eps,
        Knob("variants", choices(variants), "the variants (by name)", to_grid=by_name(variants)),
        Knob("n_repeats", REPEATS, "repeats"),
        Knob("lam_grid", LAM_GRID, "the λ grid", from_profiles(lam_profiles, "lam_grid")),
    )


# --- the ablation of the stacked methods' open choices (one page, six grids)
PST_EPS = {p: min(pst.PROFILES[p]["epsilons"]) for p in ("quick", "paper")}  # PST Figure 1's smallest ε
FACTORS_PST = ExperimentSpec(
    "stacking_ablation_pst",
    pst.ablation_cells,
    pst.ablation_cell,
    both(
        dict(
            profile="quick",
            methods=["PLR", "PST-F(U)", "PST-F(W)"],
            epsilons=[PST_EPS["quick"]],
            variants=_pick(
                FACTOR_VARIANTS, ["old defaults", "old, no high intercept", "old, λ per level", "new defaults"]
            ),
            n_repeats=4,
        ),
        dict(
            profile="paper",
            methods=list(pst.STACKING_METHODS),
            epsilons=[PST_EPS["paper"]],
            variants=dict(PST_FACTOR_VARIANTS),
            n_repeats=30,
        ),
    ),
    410,
    finish=plain_table,
    status=MNIST_STATUS,
    description="the factors of the high level's collapse, PST Figure 1 at its smallest ε",
    page=ABLATION,
    knobs=_ablation_knobs(pst.STACKING_METHODS, PST_FACTOR_VARIANTS, P),
)
FACTORS_TRANSFER = ExperimentSpec(
    "stacking_ablation_transfer",
    pptl.ablation_cells,
    pptl.ablation_cell,
    both(
        dict(
            profile="quick",
            methods=["PPTL-FS(W)", "Direct"],
            epsilon=0.5,
            variants=_pick(FACTOR_VARIANTS, ["old defaults", "old, no refit", "new defaults", "new, refit"]),
            n_repeats=4,
        ),
        dict(
            profile="paper",
            methods=list(pptl.TRANSFER_METHODS),
            epsilon=0.5,
            variants=dict(FACTOR_VARIANTS),
            n_repeats=20,
        ),
    ),
    420,
    finish=plain_table,
    status=TRANSFER_STATUS,
    description="the factors of the high level's collapse, PPTL Table 1 at ε = 0.5",
    page=ABLATION,
    knobs=_ablation_knobs(pptl.TRANSFER_METHODS, FACTOR_VARIANTS, T, epsilon=0.5),
)
GRID_REPEATS = both(dict(profile="quick", n_repeats=6), dict(profile="paper", n_repeats=10))
GRIDS = ExperimentSpec(
    "stacking_ablation_grids",
    pst.grid_comparison_cells,
    pst.ablation_cell,
    GRID_REPEATS,
    430,
    finish=plain_table,
    status=MNIST_STATUS,
    description="PLR on the old and the widened λ grids",
    page=ABLATION,
    knobs=(Knob("n_repeats", REPEATS, "repeats"),),
)
GRIDS_TRANSFER = ExperimentSpec(
    "stacking_ablation_grids_transfer",
    pptl.grid_comparison_cells,
    pptl.ablation_cell,
    GRID_REPEATS,
    440,
    finish=plain_table,
    status=TRANSFER_STATUS,
    description="Direct, SourceD and SimComb on the old and the widened λ grids",
    page=ABLATION,
    knobs=(
        Knob("n_repeats", REPEATS, "repeats"),
        Knob("methods", choices(("Direct", "SourceD", "SimComb")), "methods", const(("Direct", "SourceD", "SimComb"))),
    ),
)
CHOICES_QUICK = [
    "default",
    "row_bound=normalize",
    "rows ÷ 4 (public constant)",
    "meta_features=sigmoid",
    "lam_blocks=importance",
    "low_intercept",
]
CHOICES = ExperimentSpec(
    "stacking_ablation_choices",
    pst.ablation_cells,
    pst.ablation_cell,
    both(
        dict(
            profile="quick",
            methods=["PLR", "PST-F(W)"],
            epsilons=[0.5],
            variants=_pick(ABLATION_VARIANTS, CHOICES_QUICK),
            n_repeats=3,
        ),
        dict(
            profile="paper",
            methods=["PLR", "PST-F(W)"],
            epsilons=[0.5],
            variants=dict(ABLATION_VARIANTS),
            n_repeats=10,
        ),
    ),
    450,
    finish=plain_table,
    status=MNIST_STATUS,
    description="the open choices one at a time, PST-F(W) at ε = 0.5",
    page=ABLATION,
    knobs=_ablation_knobs(pst.STACKING_METHODS, ABLATION_VARIANTS, P),
)
SWING_CASES = [
    dict(
        case="PST-F(U), ε=0.25, λ=0.1, high intercept",
        dataset="MNIST",
        method="PST-F(U)",
        epsilon=0.25,
        lam=0.1,
        options={"high_intercept": True},
    ),
    dict(
        case="PST-F(U), ε=0.25, λ=0.1, no high intercept",
        dataset="MNIST",
        method="PST-F(U)",
        epsilon=0.25,
        lam=0.1,
        options={"high_intercept": False},
    ),
]
SWING = ExperimentSpec(
    "stacking_ablation_swing",
    pst.swing_cells,
    pst.swing_cell,
    both(dict(cases=SWING_CASES, n_seeds=6), dict(cases=SWING_CASES, n_seeds=50)),
    460,
    finish=plain_table,
    status=MNIST_STATUS,
    description="the high level's signal and noise over noise seeds",
    page=ABLATION,
    knobs=(Knob("n_seeds", RULES["n_draws"], "noise seeds per case"),),
    try_it=(
        TryIt(
            "Does the share of high-level models that fall below AUC 0.5 stay the same under another draw of "
            "every data split and every noise vector?",
            {"seed": 1},
        ),
        TryIt(
            "Four times as many noise seeds: how often does the high-level model fall below AUC 0.5?",
            knobs=dict(n_seeds=200),
        ),
    ),
)

# --- beyond the papers: the end-to-end private protocol beside the papers'
END_TO_END = ExperimentSpec(
    "end_to_end_private",
    e2e.end_to_end_cells,
    e2e.end_to_end_cell,
    both(dict(profile="quick"), dict(profile="paper")),
    470,
    finish=e2e.finish_end_to_end,
    status=MNIST_STATUS,
    description="PST Figure 1 and PPTL Table 1 under the papers' protocol and end to end",
    knobs=(
        Knob("pst_methods", choices(e2e.PST_METHODS), "PST methods", from_profiles(E, "pst_methods")),
        Knob(
            "transfer_methods",
            choices(e2e.TRANSFER_METHODS),
            "transfer methods",
            from_profiles(E, "transfer_methods"),
        ),
        Knob("n_repeats", REPEATS, "repeats", from_profiles(E, "n_repeats")),
    ),
    try_it=(
        TryIt(
            "Does the cost of the whole-pipeline guarantee stay the same under another draw of every data "
            "split and every noise vector?",
            {"seed": 1},
        ),
        TryIt(
            "Transfer only: what does the whole-pipeline guarantee cost PPTL-FS(W) against Direct, with more repeats?",
            knobs=dict(transfer_methods=["PPTL-FS(W)", "Direct"], n_repeats=20),
        ),
    ),
)

#: The chapters' results, each declared once.
EXPERIMENTS = (FACTORS_PST, FACTORS_TRANSFER, GRIDS, GRIDS_TRANSFER, CHOICES, SWING, END_TO_END)
