"""PPTL's experiments (Guo et al.), each declared once: Table 1 on MNIST and the RUIJIN-like cohort's page.

Every committed result, its knobs, protocol variants, draws and "Try it" lines
(:class:`dpstack.companion.spec.ExperimentSpec`), and the paper's tables and figures (``ITEMS``).
The RUIJIN-like page also reproduces PST Table 2 (= PPTL Table 4). The registries of
:mod:`dpstack.companion` derive from these declarations
(:func:`dpstack.companion.spec.declarations`); no computing module imports this one.
"""

from __future__ import annotations

from dpstack.companion.papers.open_choices import plain_table, row_scale_table
from dpstack.companion.papers.pptl import alternatives
from dpstack.companion.papers.pptl import grids as pptl
from dpstack.companion.papers.pst import grids as pst
from dpstack.companion.parameters import RULES, choices, ints, is_int
from dpstack.companion.spec import (
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

T = pptl.TRANSFER_PROFILES
EPSILONS, EPSILON, REPEATS = RULES["epsilons"], RULES["epsilon"], RULES["n_repeats"]
METHODS = choices(pptl.TRANSFER_METHODS)
MNIST_STATUS = needs(lambda *datasets: pptl.require_data(), "MNIST")
PROFILES = both(dict(profile="quick"), dict(profile="paper"))
PRIMARY = both(dict(profile="quick"), dict(profile="paper", n_repeats=PRIMARY_REPEATS))
BRANCH = ((lambda v: is_int(v) and 1 <= v <= 16), "an integer from 1 to 16")
ANOTHER_DRAW = "Do the verdicts survive another draw of every data split and every noise vector?"
TABLE1_KNOBS = (
    Knob("methods", METHODS, "methods", const(pptl.TRANSFER_METHODS)),
    Knob("epsilons", EPSILONS, "the ε grid (ε_s = ε_t = ε)", from_profiles(T, "epsilons")),
    Knob("n_repeats", REPEATS, "repeats", from_profiles(T, "n_repeats")),
)
ROW_SCALES = row_scales(const((2.0, 4.0, 8.0)))

TABLE1 = ExperimentSpec(
    "pptl_table1_mnist",
    transformed(pptl.table1_cells, pst.redrawn_cells),  # MNIST redrawn as in PST's figures
    pptl.transfer_cell,
    PRIMARY,
    310,
    finish=plain_table,
    status=MNIST_STATUS,
    description=f"PPTL Table 1: MNIST 0/8 → 0/9 against ε, {PRIMARY_REPEATS} repeats, the images redrawn in each",
    knobs=TABLE1_KNOBS,
    protocol=dict(
        table="PPTL Table 1",
        stacked=("PPTL-FS(W)", "PPTL-FS(R)"),
        one_level=("Direct", "SourceD", "SimComb"),
        extra=("refit", "row_scale", "data_seed"),
        redrawn="the source and target images are drawn anew in every repeat (and the train/test splits)",
        curves=True,
    ),
    variants=(
        Variant(
            "refit",
            "protocols_pptl_table1_refit",
            520,
            pptl.table1_refit_cells,
            both(dict(profile="quick", n_repeats=2), dict(profile="paper")),
            plain_table,
            MNIST_STATUS,
            "PPTL Table 1, the chosen setting refitted on the whole target training part",
            knobs=TABLE1_KNOBS,
        ),
        Variant(
            "row_scale",
            "protocols_pptl_table1_row_scale",
            521,
            pptl.table1_row_scale_cells,
            both(
                dict(profile="quick", row_scales=[4.0], n_repeats=2), dict(profile="paper", row_scales=[2.0, 4.0, 8.0])
            ),
            row_scale_table,
            MNIST_STATUS,
            "PPTL Table 1, every method, rows divided by a public constant",
            knobs=(ROW_SCALES, *TABLE1_KNOBS),
        ),
        Variant("another_seed", "protocols_pptl_table1_another_seed", 650),
    ),
    draws={"MNIST": "PPTL-MNIST-redrawn"},
    try_it=(
        TryIt(ANOTHER_DRAW, {"seed": 1}),
        TryIt(
            "Below the paper's smallest ε: where does transfer stop paying off against the target alone (Direct)?",
            knobs=dict(epsilons=[0.1, 0.25, 0.5], n_repeats=5),
        ),
    ),
)

NONPRIVATE = ExperimentSpec(
    "pptl_table1_mnist_nonprivate",
    transformed(pptl.table1_cells, pst.redrawn_cells),  # MNIST redrawn as in PST's figures
    pptl.transfer_cell,
    both(
        dict(profile="quick", methods=["Direct"], epsilons=[float("inf")]),
        dict(profile="paper", methods=["Direct"], epsilons=[float("inf")], n_repeats=PRIMARY_REPEATS),
    ),
    320,
    finish=plain_table,
    status=MNIST_STATUS,
    description="PPTL Figure 3(a)'s black line: non-private LR on the target",
    page="pptl_table1_mnist",
    knobs=(Knob("n_repeats", REPEATS, "repeats", from_profiles(T, "n_repeats")),),
)

ALTERNATIVES = ExperimentSpec(
    "pptl_alternatives",
    transformed(alternatives.alternatives_cells, pst.redrawn_cells),  # MNIST redrawn as in Table 1
    alternatives.alternative_cell,
    PRIMARY,
    330,
    finish=plain_table,
    status=MNIST_STATUS,
    description="PPTL against today's alternatives (DP-GD on the target, from a private or a public source) on "
    f"PPTL Table 1's data, splits and {PRIMARY_REPEATS} repeats",
    knobs=(
        Knob(
            "methods",
            choices(alternatives.ALTERNATIVE_METHODS),
            "today's methods",
            const(alternatives.ALTERNATIVE_METHODS),
        ),
        Knob("epsilons", EPSILONS, "the ε grid (ε_s = ε_t = ε)", from_profiles(T, "epsilons")),
        Knob("n_repeats", REPEATS, "repeats", from_profiles(T, "n_repeats")),
    ),
    try_it=(
        TryIt(
            "Below the paper's smallest ε: does DP-GD from the private source still beat DP-GD on the target "
            "alone at ε = 0.25?",
            knobs=dict(epsilons=[0.25, 0.5], n_repeats=5),
        ),
    ),
)

# the RUIJIN-like page: the claims on the synthetic cohort are judged at the primary results' repeat count
# too (the cohort is one draw; each repeat draws the split and the noise); Figure 4 keeps PPTL's 30
BRANCHES = ExperimentSpec(
    "ruijin_transfer_branches",
    pptl.branches_cells,
    pptl.transfer_cell,
    PRIMARY,
    340,
    finish=plain_table,
    description="PST Table 2 = PPTL Table 4: every RUIJIN-like branch",
    page="ruijin_transfer",
    knobs=(
        Knob(
            "methods",
            choices(pptl.TRANSFER_METHODS + ("PLR(main)",)),
            "methods",
            const(pptl.TRANSFER_METHODS + ("PLR(main)",)),
        ),
        Knob("branches", ints(1, 16), "branches (1–16)", from_profiles(T, "branches")),
        Knob("epsilon", EPSILON, "ε", const(1.0)),
        Knob("n_repeats", REPEATS, "repeats", from_profiles(T, "ruijin_repeats")),
    ),
    draws={"RUIJIN-like": "RUIJIN"},
)

EPSILON_GRID = ExperimentSpec(
    "ruijin_transfer_epsilon",
    pptl.epsilon_cells,
    pptl.transfer_cell,
    PRIMARY,
    350,
    finish=plain_table,
    description="PPTL Table 2: RUIJIN-like branch 1 against ε",
    page="ruijin_transfer",
    knobs=(
        Knob("branch", BRANCH, "the branch", const(1)),
        Knob("methods", METHODS, "methods", const(pptl.TRANSFER_METHODS)),
        Knob("epsilons", EPSILONS, "the ε grid", from_profiles(T, "epsilons")),
        Knob("n_repeats", REPEATS, "repeats", from_profiles(T, "n_repeats")),
    ),
    draws={"RUIJIN-like": "RUIJIN"},
    try_it=(
        TryIt(ANOTHER_DRAW, {"seed": 1}),
        TryIt("Another target hospital: branch 12, the smallest of the cohort, against ε.", knobs=dict(branch=12)),
    ),
)

# PPTL Figure 4's MNIST panel (the paper's data; the RUIJIN-like panel is synthetic): refit and rows ÷ 4 over
# its 30 repeats and every K (one scale: the panel's grid costs about 1.7 min a variant); its variants run
# the MNIST panel only
MNIST_PANEL = {"datasets": const(("MNIST",))}
GROUPS = ExperimentSpec(
    "ruijin_transfer_groups",
    pptl.groups_cells,
    pptl.transfer_cell,
    PROFILES,
    360,
    finish=plain_table,
    status=MNIST_STATUS,
    description="PPTL Figure 4: PPTL-FS against K",
    page="ruijin_transfer",
    knobs=(
        Knob("datasets", choices(("RUIJIN", "MNIST")), "datasets", const(("RUIJIN", "MNIST"))),
        Knob("k_grid", ints(1, 50, min_len=2), "the K grid", from_profiles(T, "k_grid")),
        Knob("branch", BRANCH, "the RUIJIN-like branch", const(1)),
        Knob("epsilon", EPSILON, "ε", const(1.0)),
        Knob("n_repeats", REPEATS, "repeats", from_profiles(T, "k_repeats")),
    ),
    protocol=dict(
        table="PPTL Figure 4 (MNIST panel)",
        stacked=("PPTL-FS(W)", "PPTL-FS(R)"),
        one_level=(),
        extra=("refit", "row_scale", "data_seed"),
    ),
    variants=(
        Variant(
            "refit",
            "protocols_pptl_fig4_refit",
            560,
            pptl.groups_refit_cells,
            both(dict(profile="quick", n_repeats=2), dict(profile="paper")),
            plain_table,
            MNIST_STATUS,
            "PPTL Figure 4's MNIST panel, the chosen setting refitted on the whole target training part",
            defaults=MNIST_PANEL,
        ),
        Variant(
            "row_scale",
            "protocols_pptl_fig4_row_scale",
            561,
            pptl.groups_row_scale_cells,
            both(dict(profile="quick", n_repeats=2), dict(profile="paper", row_scales=[4.0])),
            row_scale_table,
            MNIST_STATUS,
            "PPTL Figure 4's MNIST panel, rows divided by a public constant",
            defaults=MNIST_PANEL,
        ),
        Variant(
            "another_seed", "protocols_pptl_fig4_another_seed", 660, defaults=MNIST_PANEL, extra={"datasets": ["MNIST"]}
        ),
    ),
    draws={"MNIST": "PPTL-MNIST", "RUIJIN-like": "RUIJIN"},
    page_protocols=False,  # the variants cover the MNIST panel of one of the page's three grids
)

#: The paper's results, each declared once.
EXPERIMENTS = (TABLE1, NONPRIVATE, ALTERNATIVES, BRANCHES, EPSILON_GRID, GROUPS)

RUIJIN = BRANCHES.page
#: Every table and figure of the paper, in its order.
ITEMS = (
    PaperItem("PPTL", "Figure", "1", "the knowledge-sharing problem between hospitals", "pptl_overview", "diagram"),
    PaperItem("PPTL", "Figure", "2", "the framework of PPTL-FS", "pptl_overview", "diagram"),
    PaperItem("PPTL", "Table", "1", "MNIST transfer: test AUC against ε", TABLE1.page, "computed"),
    PaperItem("PPTL", "Table", "2", "RUIJIN centre 3: test AUC against ε", RUIJIN, "synthetic"),
    PaperItem("PPTL", "Table", "3", "RUIJIN sample sizes of the 18 centres", RUIJIN, "copied"),
    PaperItem("PPTL", "Table", "4", "test AUC on RUIJIN centres 3–18 (= PST Table 2)", RUIJIN, "synthetic"),
    PaperItem("PPTL", "Figure", "3(a)", "MNIST: test AUC against ε (Table 1 drawn)", TABLE1.page, "computed"),
    PaperItem("PPTL", "Figure", "3(b)", "RUIJIN: test AUC against ε (Table 2 drawn)", RUIJIN, "synthetic"),
    PaperItem(
        "PPTL", "Figure", "4", "test AUC against the number of groups K (RUIJIN, MNIST)", RUIJIN, "partly synthetic"
    ),
)
