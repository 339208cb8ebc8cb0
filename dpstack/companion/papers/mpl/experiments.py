"""MPL's experiments (Hamm, Cao & Belkin), each declared once: §6's figures on four data sets and today's alternatives.

Every committed result, its knobs, protocol variants, draws and "Try it" lines
(:class:`dpstack.companion.spec.ExperimentSpec`), and the paper's figures (``ITEMS``). The
registries of :mod:`dpstack.companion` derive from these declarations
(:func:`dpstack.companion.spec.declarations`); no computing module imports this one.
"""

from __future__ import annotations

from dpstack.companion.papers.mpl import alternatives
from dpstack.companion.papers.mpl import grids as mpl
from dpstack.companion.papers.open_choices import plain_table
from dpstack.companion.parameters import RULES, choices, count, ints, nonnegative_reals, one_of
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
    dataset_status,
    from_profiles,
)

__all__ = ["EXPERIMENTS", "ITEMS"]

INV_EPSILONS = nonnegative_reals("0 is non-private")

#: Pages whose data set a reader may not have: their "Try it" lines say first what they need.
DATA_FIRST = {
    "har": "Once the UCI HAR data set is on your machine (the Datasets chapter says where it comes from): ",
    "url": "Once the malicious-URL data set (about 0.5 GB) is on your machine (the Datasets chapter says "
    "where it comes from): ",
}
LAM = (
    "The released model's sensitivity is 2/(Mλ): with a λ a hundred times the paper's, how much further "
    "to the right (smaller ε) do the private curves hold up, and what does the larger λ cost batch?"
)
FIT_ON = (
    "PCA and the norm scale fitted on the private rows instead of the public auxiliary rows: how much "
    "accuracy did keeping them inside the guarantee cost?"
)


def _figure(dataset, order, **protocols):
    """The page of §6's figure on ``dataset`` (accuracy against 1/ε); ``protocols``: its variants and their entry."""
    first = DATA_FIRST.get(dataset, "")
    return ExperimentSpec(
        f"mpl_{dataset}",
        mpl.mpl_cells,
        mpl.mpl_trial,
        both(
            dict(dataset=dataset, profile="quick", **mpl.QUICK_GRID.get(dataset, {})),
            dict(dataset=dataset, profile="paper", n_trials=PRIMARY_REPEATS),
        ),
        order,
        finish=mpl.finish_mpl,
        status=dataset_status(mpl.data_status, dataset),
        description=f"MPL §6 accuracy against 1/ε on {dataset.upper()} (mpl_trial)",
        knobs=(
            Knob("n_parties", ints(1), "the M grid (parties)", const(mpl.DATASETS[dataset]["n_parties"])),
            Knob("inv_epsilons", INV_EPSILONS, "the 1/ε grid", const(mpl.INV_EPSILONS)),
            Knob("lam", RULES["lam"], "λ of the global model", const(1e-4)),
            Knob("fit_on", one_of(("aux", "private")), "rows the PCA is fitted on", const("aux")),
            Knob("n_trials", count(1), "random splits", from_profiles(mpl.PROFILES, "n_trials")),
            Knob("n_noise", count(1), "noise draws per split", from_profiles(mpl.PROFILES, "n_noise")),
        ),
        draws={None: "MPL"},
        try_it=(
            TryIt(first + LAM, {"lam": 0.01}, dict(lam=0.01)),
            TryIt(first + FIT_ON, {"fit_on": "private"}, dict(fit_on="private")),
        ),
        **protocols,
    )


HAR = _figure("har", 110)
KDD = _figure(
    "kdd",
    120,
    protocol=dict(
        table="MPL Figure 3 (KDD-99)",
        stacked=(),
        one_level=(),
        refit_note="MPL tunes nothing on a validation part (λ is fixed), so there is nothing to refit",
        extra=("row_scale", "diagnostic_noise"),
    ),
    variants=(
        Variant(
            "row_scale",
            "protocols_mpl_kdd_row_scale",
            570,
            mpl.mpl_row_scale_cells,
            both(
                dict(dataset="kdd", profile="quick", row_scales=[4.0], **mpl.QUICK_GRID["kdd"]),
                # one scale: a KDD-99 grid costs about 2.5 min (budget)
                dict(dataset="kdd", profile="paper", row_scales=[4.0], n_trials=PAPER_REPEATS),
            ),
            mpl.finish_mpl,
            dataset_status(mpl.data_status, "kdd"),
            "MPL Figure 3 (KDD-99), rows divided by a public constant (the ε-DP release)",
        ),
        Variant("another_seed", "protocols_mpl_kdd_another_seed", 670),
    ),
    page_protocols=False,  # one template for four data sets; only KDD-99 has a variant
)
URL = _figure("url", 130)
MNIST10 = _figure("mnist10", 140)

A = alternatives.PROFILES
ALTERNATIVES = ExperimentSpec(
    "mpl_alternatives",
    alternatives.alternatives_cells,
    alternatives.alternatives_trial,
    both(dict(profile="quick"), dict(profile="paper")),
    150,
    finish=plain_table,
    status=dataset_status(mpl.data_status, "kdd"),
    description="MPL against today's alternatives (PATE-GNMax, DP-FedAvg, soft + Gaussian noise) on KDD-99's parties "
    "and splits",
    knobs=(
        Knob("n_parties", ints(1), "the M grid (parties)", from_profiles(A, "n_parties")),
        Knob("inv_epsilons", INV_EPSILONS, "the 1/ε grid", from_profiles(A, "inv_epsilons")),
        Knob("n_trials", count(1), "random splits", from_profiles(A, "n_trials")),
        Knob("n_noise", count(1), "noise draws per split", from_profiles(A, "n_noise")),
        Knob(
            "methods",
            choices(alternatives.ALTERNATIVE_METHODS),
            "today's methods",
            const(alternatives.ALTERNATIVE_METHODS),
        ),
    ),
    try_it=(
        TryIt(
            "With fewer parties (2,000 of 22 rows each): do PATE's noisy votes and party-level DP-FedAvg "
            "still keep their accuracy at ε = 0.1 (1/ε = 10)?",
            knobs=dict(n_parties=[2000], inv_epsilons=[0.1, 1.0, 10.0], n_trials=1, n_noise=2),
        ),
    ),
)

#: The paper's results, each declared once.
EXPERIMENTS = (HAR, KDD, URL, MNIST10, ALTERNATIVES)

#: Every figure of the paper, in its order.
ITEMS = (
    PaperItem(
        "MPL", "Figure", "1", "the workflow: parties, ensemble, auxiliary data, release", "mpl_overview", "diagram"
    ),
    PaperItem("MPL", "Figure", "2", "activity recognition (UCI HAR): accuracy against 1/ε", HAR.page, "computed"),
    PaperItem("MPL", "Figure", "3", "network intrusion (KDD Cup 99): accuracy against 1/ε", KDD.page, "computed"),
    PaperItem("MPL", "Figure", "4", "malicious URLs: accuracy against 1/ε", URL.page, "computed"),
)
