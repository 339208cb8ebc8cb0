"""PST's experiments (Yao et al.), each declared once: figures numbered as in the arXiv version.

Every committed result of the paper's figures, its knobs, protocol variants, draws and "Try it"
lines (:class:`dpstack.companion.spec.ExperimentSpec`), and the paper's tables and figures
(``ITEMS``). The registries of :mod:`dpstack.companion` derive from these declarations
(:func:`dpstack.companion.spec.declarations`); no computing module imports this one.
"""

from __future__ import annotations

from dpstack.companion.papers.open_choices import plain_table, row_scale_table
from dpstack.companion.papers.pst import alternatives, honest
from dpstack.companion.papers.pst import grids as pst
from dpstack.companion.parameters import RULES, choices, ints, one_of, positive_reals
from dpstack.companion.spec import (
    PAPER_REPEATS,
    PRIMARY_REPEATS,
    ExperimentSpec,
    Knob,
    PaperItem,
    TryIt,
    Variant,
    both,
    const,
    from_profiles,
    needs,
    row_scales,
    transformed,
)

__all__ = ["EXPERIMENTS", "ITEMS"]

P = pst.PROFILES
EPSILONS, EPSILON, REPEATS = RULES["epsilons"], RULES["epsilon"], RULES["n_repeats"]
DATASETS = choices(("MNIST", "NEWS20"))
STATUS = needs(pst.require_data, "MNIST", "NEWS20")
NEWS20_STATUS = needs(pst.require_data, "NEWS20")
PROFILES = both(dict(profile="quick"), dict(profile="paper"))
PRIMARY = both(dict(profile="quick"), dict(profile="paper", n_repeats=PRIMARY_REPEATS))
SCALES = [2.0, 4.0, 8.0]
FIG2_K = [1, 5, 50]  # the K of Figure 2's claims (the default 5 against the two ends)
ANOTHER_DRAW = "Do the verdicts survive another draw of every data split and every noise vector?"
EXTRA = ("refit", "row_scale", "data_seed", "auc_fit")  # auc_fit: the validated model under refit
MNIST_REDRAWN = "MNIST's images and its test set are drawn anew in every repeat; NEWS20's split is fixed"
DRAWS = {"MNIST": "MNIST-redrawn", "NEWS20": "NEWS20"}


def _fig1_knobs(repeats_help):
    return (
        Knob("epsilons", EPSILONS, "the ε grid", from_profiles(P, "epsilons")),
        Knob("n_repeats", REPEATS, repeats_help, from_profiles(P, "n_repeats")),
        Knob("datasets", DATASETS, "datasets", from_profiles(P, "datasets")),
        Knob("methods", choices(pst.STACKING_METHODS), "methods", const(pst.STACKING_METHODS)),
    )


ROW_SCALES = row_scales(const((2.0, 4.0, 8.0)))
MNIST_ONLY_QUICK = dict(profile="quick", datasets=["MNIST"], n_repeats=3)


def _refit(name, order, cells, paper, what, status=STATUS, quick=MNIST_ONLY_QUICK, knobs=None):
    return Variant("refit", name, order, cells, both(quick, paper), plain_table, status, what, knobs)


def _row_scale(name, order, cells, quick, paper, what, status=STATUS, knobs=None, try_it=()):
    return Variant(
        "row_scale", name, order, cells, both(quick, paper), row_scale_table, status, what, knobs, try_it=try_it
    )


FIG1 = ExperimentSpec(
    "pst_fig1_epsilon",
    transformed(pst.fig1_cells, pst.redrawn_cells),
    pst.stacking_cell,
    PRIMARY,
    order=210,
    finish=plain_table,
    status=STATUS,
    description=f"PST Figure 1: test AUC against ε, {PRIMARY_REPEATS} repeats",
    knobs=_fig1_knobs("repeats (random splits)"),
    protocol=dict(
        table="PST Figure 1",
        stacked=("PST-S", "PST-F(U)", "PST-F(W)"),
        one_level=("PLR",),
        extra=EXTRA,
        redrawn=MNIST_REDRAWN,
        curves=True,
    ),
    variants=(
        _refit(
            "protocols_pst_fig1_refit",
            510,
            pst.fig1_refit_cells,
            dict(profile="paper"),
            "PST Figure 1, the chosen setting refitted on the whole training set",
            knobs=_fig1_knobs("repeats"),
        ),
        _row_scale(
            "protocols_pst_fig1_row_scale",
            511,
            pst.fig1_row_scale_cells,
            dict(profile="quick", row_scales=[4.0], datasets=["MNIST"], n_repeats=3),
            dict(profile="paper", row_scales=SCALES),
            "PST Figure 1, every method, rows divided by a public constant",
            knobs=(ROW_SCALES, *_fig1_knobs("repeats")),
            try_it=(
                TryIt(ANOTHER_DRAW, {"seed": 1}),
                TryIt(
                    "A much larger public row scale: how far does dividing the rows by 16 pull every method down?",
                    knobs=dict(row_scales=[2.0, 16.0]),
                ),
            ),
        ),
        Variant("another_seed", "protocols_pst_fig1_another_seed", 610),
    ),
    draws=DRAWS,
    try_it=(
        TryIt(ANOTHER_DRAW, {"seed": 1}),
        TryIt(
            "Below the paper's smallest ε: does PST-F(W) beat PLR at ε = 0.05?",
            knobs=dict(epsilons=[0.05, 0.1], n_repeats=5, datasets=["MNIST"]),
        ),
    ),
)

# Figures 2-4 [IJCAI Figs. 2-3]: every method of the figure under each protocol; Figure 2 at the K its
# claims compare (1, 5, 50), over its 30 repeats (the primary's), which keeps the three grids at a third
# of the figure's cost
FIG2 = ExperimentSpec(
    "pst_fig2_groups",
    transformed(pst.fig2_cells, pst.redrawn_cells),
    pst.stacking_cell,
    PRIMARY,
    order=220,
    finish=plain_table,
    status=STATUS,
    description=f"PST Figure 2 [IJCAI Fig. 2(a)–(b)]: test AUC against K, {PRIMARY_REPEATS} repeats",
    # K is at most the number of features (100 after PCA on MNIST and NEWS20)
    knobs=(
        Knob("k_grid", ints(1, 100, min_len=2), "the K grid (feature groups)", from_profiles(P, "k_grid")),
        Knob("epsilon", EPSILON, "ε", const(1.0)),
        Knob("n_repeats", REPEATS, "repeats", from_profiles(P, "k_repeats")),
        Knob("datasets", DATASETS, "datasets", from_profiles(P, "datasets")),
    ),
    protocol=dict(
        table="PST Figure 2 [IJCAI Fig. 2(a)–(b)]",
        stacked=("PST-F(U)", "PST-F(W)"),
        one_level=("PLR",),
        extra=EXTRA,
        redrawn=MNIST_REDRAWN,
        subset="at K = 1, 5 and 50, the K its claims compare",
        summarised=True,
    ),
    variants=(
        _refit(
            "protocols_pst_fig2_refit",
            530,
            pst.fig2_refit_cells,
            dict(profile="paper", k_grid=FIG2_K),
            "PST Figure 2 [IJCAI Fig. 2(a)–(b)] at K = 1, 5, 50, the chosen setting refitted on the whole training set",
        ),
        _row_scale(
            "protocols_pst_fig2_row_scale",
            531,
            pst.fig2_row_scale_cells,
            dict(profile="quick", row_scales=[4.0], datasets=["MNIST"], n_repeats=3),
            dict(profile="paper", row_scales=SCALES, k_grid=FIG2_K),
            "PST Figure 2 [IJCAI Fig. 2(a)–(b)] at K = 1, 5, 50, every method, rows divided by a public constant",
        ),
        Variant("another_seed", "protocols_pst_fig2_another_seed", 620),
    ),
    draws=DRAWS,
    try_it=(
        TryIt(ANOTHER_DRAW, {"seed": 1}),
        TryIt(
            "With half the budget, does the best number of groups K move?",
            knobs=dict(epsilon=0.5, k_grid=[1, 2, 5, 10, 20], n_repeats=10),
        ),
    ),
)

FIG3 = ExperimentSpec(
    "pst_fig3_importance",
    transformed(pst.fig3_cells, pst.redrawn_cells),
    pst.stacking_cell,
    PRIMARY,
    order=230,
    finish=plain_table,
    status=STATUS,
    description=f"PST Figure 3 [IJCAI Fig. 2(c)–(d)]: test AUC against the importances α, {PRIMARY_REPEATS} repeats",
    knobs=(
        Knob("alphas", positive_reals(), "the importance decay grid α (v_i = α^i)", from_profiles(P, "alphas")),
        Knob("epsilon", EPSILON, "ε", const(1.0)),
        Knob("n_repeats", REPEATS, "repeats", from_profiles(P, "n_repeats")),
        Knob("datasets", DATASETS, "datasets", from_profiles(P, "datasets")),
    ),
    protocol=dict(
        table="PST Figure 3 [IJCAI Fig. 2(c)–(d)]", stacked=("PST-F(U)", "PST-F(W)"), one_level=(), extra=EXTRA
    ),
    variants=(
        _refit(
            "protocols_pst_fig3_refit",
            540,
            pst.fig3_refit_cells,
            dict(profile="paper", n_repeats=PAPER_REPEATS),
            "PST Figure 3 [IJCAI Fig. 2(c)–(d)], the chosen setting refitted on the whole training set",
        ),
        _row_scale(
            "protocols_pst_fig3_row_scale",
            541,
            pst.fig3_row_scale_cells,
            dict(profile="quick", row_scales=[4.0], datasets=["MNIST"], n_repeats=3),
            dict(profile="paper", row_scales=SCALES, n_repeats=PAPER_REPEATS),
            "PST Figure 3 [IJCAI Fig. 2(c)–(d)], every method, rows divided by a public constant",
        ),
        Variant("another_seed", "protocols_pst_fig3_another_seed", 630),
    ),
    draws=DRAWS,
    try_it=(
        TryIt(ANOTHER_DRAW, {"seed": 1}),
        TryIt(
            "Do importances help more when the budget is four times smaller?",
            knobs=dict(epsilon=0.25, n_repeats=10),
        ),
    ),
)

ALTERNATIVES = ExperimentSpec(
    "pst_alternatives",
    transformed(alternatives.alternatives_cells, pst.redrawn_cells),  # Figure 1's draws, repeat by repeat
    alternatives.alternative_cell,
    both(
        dict(profile="quick"),
        dict(profile="paper", n_repeats=PRIMARY_REPEATS, epsilons=list(alternatives.PAPER_EPSILONS)),
    ),
    order=250,
    finish=plain_table,
    status=STATUS,
    description="PST against today's alternatives (output perturbation, DP-GD, DP-SGD, PST-F(W) with DP-GD blocks) "
    f"on PST Figure 1's data, splits and {PRIMARY_REPEATS} repeats",
    draws=DRAWS,
    knobs=(
        Knob("epsilons", EPSILONS, "the ε grid", from_profiles(P, "epsilons")),
        Knob("n_repeats", REPEATS, "repeats (random splits)", from_profiles(P, "n_repeats")),
        Knob("datasets", DATASETS, "datasets", from_profiles(P, "datasets")),
        Knob(
            "methods",
            choices(alternatives.ALTERNATIVE_METHODS),
            "today's methods",
            const(alternatives.ALTERNATIVE_METHODS),
        ),
    ),
    try_it=(
        TryIt(
            "Below the paper's smallest ε: do output perturbation and DP-GD keep their AUC at ε = 0.05 "
            "(the papers' methods are committed at ε = 0.1 only)?",
            knobs=dict(epsilons=[0.05, 0.1], n_repeats=5, datasets=["MNIST"]),
        ),
    ),
)

FIG4 = ExperimentSpec(
    "pst_fig4_combiners",
    pst.fig4_cells,
    pst.stacking_cell,
    PRIMARY,
    order=260,
    finish=plain_table,
    status=NEWS20_STATUS,
    description=f"PST Figure 4 [IJCAI Fig. 3]: the combiners, {PRIMARY_REPEATS} repeats",
    knobs=(
        Knob("dataset", one_of(("MNIST", "NEWS20")), "dataset", const("NEWS20")),
        Knob("epsilon", EPSILON, "ε", const(1.0)),
        Knob("n_repeats", REPEATS, "repeats", from_profiles(P, "n_repeats")),
    ),
    protocol=dict(table="PST Figure 4 [IJCAI Fig. 3]", stacked=("PST-F(U)", "PST-F(W)"), one_level=(), extra=EXTRA),
    variants=(
        _refit(
            "protocols_pst_fig4_refit",
            550,
            pst.fig4_refit_cells,
            dict(profile="paper", n_repeats=PAPER_REPEATS),
            "PST Figure 4 [IJCAI Fig. 3], each combiner's chosen setting refitted on the whole training set",
            status=NEWS20_STATUS,
            quick=dict(profile="quick", n_repeats=3),
        ),
        _row_scale(
            "protocols_pst_fig4_row_scale",
            551,
            pst.fig4_row_scale_cells,
            dict(profile="quick", row_scales=[4.0], n_repeats=3),
            dict(profile="paper", row_scales=SCALES, n_repeats=PAPER_REPEATS),
            "PST Figure 4 [IJCAI Fig. 3], every combiner, rows divided by a public constant",
            status=NEWS20_STATUS,
        ),
        Variant("another_seed", "protocols_pst_fig4_another_seed", 640),
    ),
    draws={"NEWS20": "NEWS20"},
    try_it=(
        TryIt(ANOTHER_DRAW, {"seed": 1}),
        TryIt(
            "On MNIST instead of NEWS20, does the stacked model (C-hl) still beat every single block and the votes?",
            knobs=dict(dataset="MNIST"),
        ),
    ),
)

HONEST = ExperimentSpec(
    "pst_honest_tuning",
    honest.honest_cells,
    honest.honest_cell,
    PROFILES,
    order=255,
    finish=plain_table,
    status=STATUS,
    description="PST Figure 1's λ chosen the papers' way against honestly (Liu & Talwar's random stopping) "
    "at the same total ε",
    page="honest_tuning",
    knobs=(
        Knob("epsilons", EPSILONS, "the total ε grid", const(honest.EPSILONS)),
        Knob("n_repeats", REPEATS, "repeats (random splits)", lambda p: honest.REPEATS[p]),
        Knob("datasets", DATASETS, "datasets", from_profiles(P, "datasets")),
        Knob("methods", choices(honest.HONEST_METHODS), "methods", const(honest.HONEST_METHODS)),
    ),
    try_it=(
        TryIt(
            "At a larger total budget (ε = 8): does honest tuning still cost AUC, or does the noise of the "
            "selection stop mattering?",
            knobs=dict(epsilons=[4.0, 8.0], n_repeats=3, datasets=["MNIST"]),
        ),
    ),
)

#: The paper's results, each declared once.
EXPERIMENTS = (FIG1, FIG2, FIG3, ALTERNATIVES, HONEST, FIG4)

#: Every table and figure of the paper, in its order (PST numbered as in the arXiv version).
ITEMS = (
    PaperItem("PST", "Table", "1", "sizes of the MNIST and NEWS20 tasks", "datasets", "computed", "1"),
    PaperItem("PST", "Figure", "1", "test AUC against ε", FIG1.page, "computed", "1"),
    PaperItem("PST", "Figure", "2", "test AUC against the number of groups K", FIG2.page, "computed", "2(a)–(b)"),
    PaperItem(
        "PST", "Figure", "3", "test AUC against the feature importances vᵢ = αⁱ", FIG3.page, "computed", "2(c)–(d)"
    ),
    PaperItem("PST", "Figure", "4", "the combiners C-0 … C-4, C-mv, C-wmv and C-hl", FIG4.page, "computed", "3"),
    PaperItem(
        "PST", "Table", "2", "test AUC on the 16 RUIJIN branches (= PPTL Table 4)", "ruijin_transfer", "synthetic", "2"
    ),
    PaperItem("PST", "Table", "3", "RUIJIN features with the doctors' importances", "ruijin_like", "copied", "3"),
    PaperItem(
        "PST", "Table", "4", "RUIJIN sample sizes of the main centre and 16 branches", "ruijin_like", "copied", "4"
    ),
)
