"""Experiment results as data: computed once at the papers' scale, committed, checked when read.

The book's experiment pages would otherwise compute their grids while the notebook runs, at a
quick profile of 2-4 repeats, where the papers use 10-30. Instead, each expensive grid is
registered here once, under the name of its page, run at the ``paper`` profile by
``make reproduce`` (:mod:`dpstack.companion.reproduce`), and committed as two plain files:

``results/<name>/<profile>.csv``
    The tidy table: one row per result row, the cell's parameters as columns. Floats are
    written with :func:`repr` (the shortest text that reads back to the same double), so the
    numbers read back bit for bit; nothing is pickled.
``results/<name>/<profile>.json``
    Its provenance: the parameters and the exact grid of cells, the root seed, the sha256 of
    every dpstack module the result depends on (found by following the imports of the
    experiment's functions, transitively), the versions of dpstack and its numerical
    libraries, the git commit, the date, the machine (CPU model, BLAS, threads), ``n_jobs``,
    the wall time, and the sha256 of the CSV.

:func:`load` refuses a CSV whose sha256 differs from its provenance
(:class:`ResultIntegrityError`) and a result whose code has changed since it was computed
(:class:`StaleResultError`, naming the page, the files that changed and the command that
re-runs it). :func:`load_or_run` is what a page calls: the committed table when it was computed
for exactly the grid and seed asked for, otherwise the live computation. :func:`replay`
recomputes some cells of a committed result and compares them bit for bit.

An experiment is registered with :func:`register`: a function building the list of cells from
keyword parameters, the cell function (run by :func:`dpstack.companion.runner.run_cells`, so
seeds, parallelism and the cache are the runner's), an optional function tidying the table, and
the parameters of each profile.
"""

from __future__ import annotations

import csv
import datetime
import functools
import hashlib
import io
import json
import math
import os
import platform
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from dpstack._files import remove_orphans, temp_suffix
from dpstack.companion.runner import external_code_hashes, run_cells
from dpstack.provenance import (
    closure_hashes,
    code_hash,
    module_closure,
    module_file,
    numerical_platform,
    platform_summary,
)

__all__ = [
    "Experiment",
    "register",
    "experiments",
    "get",
    "ResultError",
    "ResultIntegrityError",
    "StaleResultError",
    "MissingResultError",
    "results_dir",
    "result_paths",
    "code_hashes",
    "write_csv",
    "read_csv",
    "save",
    "load",
    "load_or_run",
    "is_committed",
    "compute",
    "replay",
    "replay_summary",
    "replay_rules",
    "replay_atol",
    "REPLAY_RTOL",
    "REPLAY_ATOL",
    "REPLAY_SOLVER_TOL",
    "REPLAY_MAX_FEATURES",
    "NEAR_TIE_FACTOR",
    "check",
    "reproduce_command",
    "committed_table",
    "committed_sentence",
    "FORMAT",
]

FORMAT = "dpstack-result/1"
_PACKAGE_ROOT = Path(__file__).resolve().parents[1]
_PROJECT_ROOT = _PACKAGE_ROOT.parent


# ------------------------------------------------------------------------------------------ errors
class ResultError(RuntimeError):
    """A committed result that cannot be used as it is."""


class ResultIntegrityError(ResultError):
    """A committed CSV whose content differs from the sha256 of its provenance (or is unreadable)."""


class MissingResultError(ResultError):
    """No committed result for this page and profile."""


class StaleResultError(ResultError):
    """The code a committed result depends on has changed since it was computed.

    Attributes
    ----------
    name, profile : str
        The page and the profile of the result.
    changed : list of str
        The files whose sha256 differs (or that were added to or removed from its dependencies).
    command : str
        The command that recomputes the result.
    """

    def __init__(self, name, profile, changed, command):
        self.name, self.profile, self.changed, self.command = name, profile, list(changed), command
        page_name = _REGISTRY[name].page if name in _REGISTRY else name
        page = _PROJECT_ROOT / "notebooks" / f"{page_name}.ipynb"
        then = (
            f", then re-execute the page: python scripts/run_notebooks.py notebooks/{page_name}.ipynb"
            if page.is_file()
            else ""
        )
        super().__init__(
            f"the committed result of page {name!r} (profile {profile!r}) is stale: the code it was computed "
            f"with has changed ({', '.join(self.changed)}). Re-run it with: {command}{then}"
        )


# ------------------------------------------------------------------------------------------ registry
@dataclass(frozen=True)
class Experiment:
    """One reproducible experiment, registered under the name of its book page.

    Attributes
    ----------
    name : str
        The page's notebook name (``"mpl_kdd"`` for ``notebooks/mpl_kdd.ipynb``).
    cells : callable
        ``cells(**parameters)`` → list of cells (JSON-serialisable dicts).
    cell : callable
        The cell function given to :func:`~dpstack.companion.runner.run_cells`.
    profiles : mapping
        Profile name → keyword parameters of ``cells``.
    finish : callable or None
        ``finish(frame)`` → the tidy table; must keep the rows and their order (it may drop or
        add columns).
    status : callable or None
        ``status(**parameters)`` → ``None`` when the data the experiment needs is present, else a
        message; called with the grid's parameters (see :meth:`data_status`) so that a grid
        asks only for the data it uses, or with none for the profile's defaults.
    description : str
        One line for ``python -m dpstack.companion list``.
    page : str
        The notebook that renders the result (default: ``name``); a page with several grids
        registers one experiment per grid, each naming the page.
    seed : int
        The root seed the result is computed with (default 0; a protocol variant "another seed"
        has its own, see :data:`SECOND_SEED`).
    """

    name: str
    cells: Callable
    cell: Callable
    profiles: Mapping = field(default_factory=dict)
    finish: Callable | None = None
    status: Callable | None = None
    description: str = ""
    page: str = ""
    seed: int = 0

    def __post_init__(self):
        if not self.page:
            object.__setattr__(self, "page", self.name)

    def parameters(self, profile, **overrides):
        """The keyword parameters of ``cells`` for ``profile``, with ``overrides`` on top."""
        if profile not in self.profiles:
            raise ValueError(f"profile must be one of {sorted(self.profiles)} for {self.name!r}, got {profile!r}")
        return {**self.profiles[profile], **overrides}

    def data_status(self, profile, **overrides):
        """``None`` when the data the grid of ``profile`` (with ``overrides``) needs is present, else a message."""
        if self.status is None:
            return None
        return self.status(**self.parameters(profile, **overrides))

    def grid(self, profile, **overrides):
        """The list of cells of ``profile`` (with ``overrides``)."""
        return self.cells(**self.parameters(profile, **overrides))


_REGISTRY: dict = {}
_BUILTINS_LOADED = False


def register(name, cells, cell, profiles, finish=None, status=None, description="", page=None, seed=0):
    """Register an experiment under the name of its page, or of one grid of it (see :class:`Experiment`).

    Registering a name twice replaces the first entry.

    Returns
    -------
    Experiment
    """
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise ValueError(f"name must be a page name without '/', got {name!r}")
    if not callable(cells) or not callable(cell):
        raise TypeError(f"cells and cell must be callable for {name!r}")
    if not profiles:
        raise ValueError(f"profiles must name at least one profile for {name!r}")
    if page is not None and (not isinstance(page, str) or not page or "/" in page):
        raise ValueError(f"page must be a notebook name without '/', got {page!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    exp = Experiment(name, cells, cell, dict(profiles), finish, status, description, page or name, seed)
    _REGISTRY[name] = exp
    return exp


def _data_status(require, *datasets):
    """``None`` when ``require(*datasets)`` loads, else its message (the page says the data is absent)."""
    from dpstack.datasets import DatasetNotFoundError

    try:
        require(*datasets)
    except DatasetNotFoundError as err:
        return str(err)
    return None


def _needs(require, *default):
    """The status of a grid that reads ``default`` (or the ``datasets`` / ``dataset`` it is given).

    Only the data the grid uses is required: a grid over the RUIJIN-like cohort alone does not
    ask for MNIST. Datasets outside ``default`` (synthetic ones) need no files.
    """

    def status(datasets=None, dataset=None, **grid):
        chosen = tuple(datasets) if datasets is not None else (dataset,) if dataset is not None else default
        chosen = tuple(d for d in chosen if d in default)
        return _data_status(require, *chosen) if chosen else None

    return status


def _status_of(data_status, dataset, **grid):
    return data_status(dataset)


def _both(quick, paper):
    return {"quick": quick, "paper": paper}


#: The repeats of every primary result of the papers' figures and tables (paper profile).
PRIMARY_REPEATS = 30

#: The repeats the papers report, and those of the refit and row-scale variants (registered explicitly:
#: their knobs then say so, not the primary results' count).
PAPER_REPEATS = 10

#: The root seed of the protocol variant "another seed" (every primary result uses 0).
SECOND_SEED = 1

#: The variant "another seed" draws the data anew too: a cell of a drawn data set (MNIST's images,
#: the RUIJIN-like cohort) with data draw ``d`` (``data_seed``, 0 when absent) draws ``d + SECOND_DATA_DRAW``.
SECOND_DATA_DRAW = 1000

#: The data sets whose draw a seed selects (NEWS20's split is the archive's; MPL's data is the
#: whole data set, its split into parties is drawn from the root seed).
DRAWN_DATASETS = ("MNIST", "RUIJIN")


def _transformed(cells_fn, transform):
    """``cells_fn`` whose cells pass through ``transform`` (e.g. the PST grids' ``redrawn_cells``)."""

    @functools.wraps(cells_fn)
    def cells(*args, **kwargs):
        return transform(cells_fn(*args, **kwargs))

    return cells


def _another_draw(cells_fn):
    """``cells_fn`` with every drawn data set's draw moved by :data:`SECOND_DATA_DRAW`."""

    @functools.wraps(cells_fn)
    def cells(*args, **kwargs):
        return [
            dict(c, data_seed=SECOND_DATA_DRAW + int(c.get("data_seed", 0)))
            if c.get("dataset") in DRAWN_DATASETS
            else c
            for c in cells_fn(*args, **kwargs)
        ]

    return cells


def _load_builtins():
    """The book's experiments: one :func:`register` call per grid of a page (modules imported on first use)."""
    global _BUILTINS_LOADED
    if _BUILTINS_LOADED:
        return
    _BUILTINS_LOADED = True
    import functools

    from dpstack.companion.chapters import end_to_end as e2e
    from dpstack.companion.papers.mpl import alternatives as mpl_alternatives
    from dpstack.companion.papers.mpl import grids as mpl
    from dpstack.companion.papers.open_choices import (
        ABLATION_VARIANTS,
        FACTOR_VARIANTS,
        PST_FACTOR_VARIANTS,
        plain_table,
    )
    from dpstack.companion.papers.pptl import grids as pptl
    from dpstack.companion.papers.pst import alternatives as pst_alternatives
    from dpstack.companion.papers.pst import grids as pst

    pages = {"mpl_har": "har", "mpl_kdd": "kdd", "mpl_url": "url", "mpl_mnist10": "mnist10"}
    for page, dataset in pages.items():
        quick = dict(dataset=dataset, profile="quick", **mpl.QUICK_GRID.get(dataset, {}))
        register(
            page,
            mpl.mpl_cells,
            mpl.mpl_trial,
            finish=mpl.finish_mpl,
            profiles={"quick": quick, "paper": dict(dataset=dataset, profile="paper", n_trials=PRIMARY_REPEATS)},
            status=functools.partial(_status_of, mpl.data_status, dataset),
            description=f"MPL §6 accuracy against 1/ε on {dataset.upper()} (mpl_trial)",
        )
    register(
        "mpl_alternatives",
        mpl_alternatives.alternatives_cells,
        mpl_alternatives.alternatives_trial,
        _both(dict(profile="quick"), dict(profile="paper")),
        plain_table,
        functools.partial(_status_of, mpl.data_status, "kdd"),
        "MPL against today's alternatives (PATE-GNMax, DP-FedAvg, soft + Gaussian noise) on KDD-99's parties and splits",
    )

    # --- PST (Yao et al.), figures numbered as in the arXiv version
    pst_status = _needs(pst.require_data, "MNIST", "NEWS20")
    mnist_status = _needs(pst.require_data, "MNIST")
    profiles = _both(dict(profile="quick"), dict(profile="paper"))
    primary = _both(dict(profile="quick"), dict(profile="paper", n_repeats=PRIMARY_REPEATS))
    for page, cells, what in [
        ("pst_fig1_epsilon", _transformed(pst.fig1_cells, pst.redrawn_cells), "PST Figure 1: test AUC against ε"),
        (
            "pst_fig2_groups",
            _transformed(pst.fig2_cells, pst.redrawn_cells),
            "PST Figure 2 [IJCAI Fig. 2(a)–(b)]: test AUC against K",
        ),
        (
            "pst_fig3_importance",
            _transformed(pst.fig3_cells, pst.redrawn_cells),
            "PST Figure 3 [IJCAI Fig. 2(c)–(d)]: test AUC against the importances α",
        ),
    ]:
        register(
            page, cells, pst.stacking_cell, primary, plain_table, pst_status, what + f", {PRIMARY_REPEATS} repeats"
        )
    register(
        "pst_alternatives",
        _transformed(pst_alternatives.alternatives_cells, pst.redrawn_cells),  # Figure 1's draws, repeat by repeat
        pst_alternatives.alternative_cell,
        _both(
            dict(profile="quick"),
            dict(profile="paper", n_repeats=PRIMARY_REPEATS, epsilons=list(pst_alternatives.PAPER_EPSILONS)),
        ),
        plain_table,
        pst_status,
        "PST against today's alternatives (output perturbation, DP-GD, DP-SGD, PST-F(W) with DP-GD blocks) on "
        f"PST Figure 1's data, splits and {PRIMARY_REPEATS} repeats",
    )
    register(
        "pst_fig4_combiners",
        pst.fig4_cells,
        pst.stacking_cell,
        primary,
        plain_table,
        _needs(pst.require_data, "NEWS20"),
        f"PST Figure 4 [IJCAI Fig. 3]: the combiners, {PRIMARY_REPEATS} repeats",
    )

    # --- PPTL (Guo et al.) and PST Table 2 on the RUIJIN-like cohort
    mnist_t = _needs(lambda *datasets: pptl.require_data(), "MNIST")
    register(
        "pptl_table1_mnist",
        _transformed(pptl.table1_cells, pst.redrawn_cells),  # MNIST redrawn as in PST's figures
        pptl.transfer_cell,
        primary,
        plain_table,
        mnist_t,
        f"PPTL Table 1: MNIST 0/8 → 0/9 against ε, {PRIMARY_REPEATS} repeats, the images redrawn in each",
    )
    register(
        "pptl_table1_mnist_nonprivate",
        _transformed(pptl.table1_cells, pst.redrawn_cells),  # MNIST redrawn as in PST's figures
        pptl.transfer_cell,
        _both(
            dict(profile="quick", methods=["Direct"], epsilons=[float("inf")]),
            dict(profile="paper", methods=["Direct"], epsilons=[float("inf")], n_repeats=PRIMARY_REPEATS),
        ),
        plain_table,
        mnist_t,
        "PPTL Figure 3(a)'s black line: non-private LR on the target",
        page="pptl_table1_mnist",
    )
    from dpstack.companion.papers.pptl import alternatives as pptl_alternatives

    register(
        "pptl_alternatives",
        _transformed(pptl_alternatives.alternatives_cells, pst.redrawn_cells),  # MNIST redrawn as in Table 1
        pptl_alternatives.alternative_cell,
        primary,
        plain_table,
        mnist_t,
        f"PPTL against today's alternatives (DP-GD on the target, from a private or a public source) on "
        f"PPTL Table 1's data, splits and {PRIMARY_REPEATS} repeats",
    )
    for name, cells, what in [
        ("ruijin_transfer_branches", pptl.branches_cells, "PST Table 2 = PPTL Table 4: every RUIJIN-like branch"),
        ("ruijin_transfer_epsilon", pptl.epsilon_cells, "PPTL Table 2: RUIJIN-like branch 1 against ε"),
        ("ruijin_transfer_groups", pptl.groups_cells, "PPTL Figure 4: PPTL-FS against K"),
    ]:
        status = mnist_t if name.endswith("groups") else None
        # the claims on the synthetic cohort are judged at the primary results' repeat count too (the
        # cohort is one draw; each repeat draws the split and the noise); Figure 4 keeps PPTL's 30
        shown = profiles if name.endswith("groups") else primary
        register(name, cells, pptl.transfer_cell, shown, plain_table, status, what, page="ruijin_transfer")

    # --- the ablation of the stacked methods' open choices (one page, five grids)
    def pick(variants, names):
        return {k: variants[k] for k in names}

    pst_quick = ["old defaults", "old, no high intercept", "old, λ per level", "new defaults"]
    tr_quick = ["old defaults", "old, no refit", "new defaults", "new, refit"]
    pst_eps = {p: min(pst.PROFILES[p]["epsilons"]) for p in ("quick", "paper")}  # PST Figure 1's smallest ε
    register(
        "stacking_ablation_pst",
        pst.ablation_cells,
        pst.ablation_cell,
        _both(
            dict(
                profile="quick",
                methods=["PLR", "PST-F(U)", "PST-F(W)"],
                epsilons=[pst_eps["quick"]],
                variants=pick(FACTOR_VARIANTS, pst_quick),
                n_repeats=4,
            ),
            dict(
                profile="paper",
                methods=list(pst.STACKING_METHODS),
                epsilons=[pst_eps["paper"]],
                variants=dict(PST_FACTOR_VARIANTS),
                n_repeats=30,
            ),
        ),
        plain_table,
        mnist_status,
        "the factors of the high level's collapse, PST Figure 1 at its smallest ε",
        page="stacking_ablation",
    )
    register(
        "stacking_ablation_transfer",
        pptl.ablation_cells,
        pptl.ablation_cell,
        _both(
            dict(
                profile="quick",
                methods=["PPTL-FS(W)", "Direct"],
                epsilon=0.5,
                variants=pick(FACTOR_VARIANTS, tr_quick),
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
        plain_table,
        mnist_t,
        "the factors of the high level's collapse, PPTL Table 1 at ε = 0.5",
        page="stacking_ablation",
    )
    for name, module, status, what in [
        ("stacking_ablation_grids", pst, mnist_status, "PLR on the old and the widened λ grids"),
        (
            "stacking_ablation_grids_transfer",
            pptl,
            mnist_t,
            "Direct, SourceD and SimComb on the old and the widened λ grids",
        ),
    ]:
        repeats = _both(dict(profile="quick", n_repeats=6), dict(profile="paper", n_repeats=10))
        register(
            name,
            module.grid_comparison_cells,
            module.ablation_cell,
            repeats,
            plain_table,
            status,
            what,
            page="stacking_ablation",
        )
    choices_quick = [
        "default",
        "row_bound=normalize",
        "rows ÷ 4 (public constant)",
        "meta_features=sigmoid",
        "lam_blocks=importance",
        "low_intercept",
    ]
    register(
        "stacking_ablation_choices",
        pst.ablation_cells,
        pst.ablation_cell,
        _both(
            dict(
                profile="quick",
                methods=["PLR", "PST-F(W)"],
                epsilons=[0.5],
                variants=pick(ABLATION_VARIANTS, choices_quick),
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
        plain_table,
        mnist_status,
        "the open choices one at a time, PST-F(W) at ε = 0.5",
        page="stacking_ablation",
    )
    swing = [
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
    register(
        "stacking_ablation_swing",
        pst.swing_cells,
        pst.swing_cell,
        _both(dict(cases=swing, n_seeds=6), dict(cases=swing, n_seeds=50)),
        plain_table,
        mnist_status,
        "the high level's signal and noise over noise seeds",
        page="stacking_ablation",
    )

    # --- beyond the papers: the end-to-end private protocol beside the papers'
    register(
        "end_to_end_private",
        e2e.end_to_end_cells,
        e2e.end_to_end_cell,
        profiles,
        e2e.finish_end_to_end,
        mnist_status,
        "PST Figure 1 and PPTL Table 1 under the papers' protocol and end to end",
    )

    # --- protocol sensitivity: PST Figure 1 and PPTL Table 1 under choices the papers leave open.
    # Registered after the primary results: the redrawn grids' NEWS20 cells of repeats 0-9 are the
    # primary's own cells, which make reproduce's cache then returns instead of recomputing.
    from dpstack.companion.papers.open_choices import row_scale_table

    scales = [2.0, 4.0, 8.0]
    fig2_k = [1, 5, 50]  # the K of Figure 2's claims (the default 5 against the two ends)
    mpl_scales = [4.0]  # one scale: a KDD-99 grid costs about 2.5 min (budget)
    for name, cells, prof, finish, status, what in [
        (
            "protocols_pst_fig1_refit",
            pst.fig1_refit_cells,
            _both(dict(profile="quick", datasets=["MNIST"], n_repeats=3), dict(profile="paper")),
            plain_table,
            pst_status,
            "PST Figure 1, the chosen setting refitted on the whole training set",
        ),
        (
            "protocols_pst_fig1_row_scale",
            pst.fig1_row_scale_cells,
            _both(
                dict(profile="quick", row_scales=[4.0], datasets=["MNIST"], n_repeats=3),
                dict(profile="paper", row_scales=scales),
            ),
            row_scale_table,
            pst_status,
            "PST Figure 1, every method, rows divided by a public constant",
        ),
        (
            "protocols_pptl_table1_refit",
            pptl.table1_refit_cells,
            _both(dict(profile="quick", n_repeats=2), dict(profile="paper")),
            plain_table,
            mnist_t,
            "PPTL Table 1, the chosen setting refitted on the whole target training part",
        ),
        (
            "protocols_pptl_table1_row_scale",
            pptl.table1_row_scale_cells,
            _both(dict(profile="quick", row_scales=[4.0], n_repeats=2), dict(profile="paper", row_scales=scales)),
            row_scale_table,
            mnist_t,
            "PPTL Table 1, every method, rows divided by a public constant",
        ),
        # PST Figures 2-4 [IJCAI Figs. 2-3]: every method of the figure; Figure 2 at the K its claims compare (1, 5, 50),
        # over its 30 repeats (the primary's), which keeps the three grids at a third of the figure's cost
        (
            "protocols_pst_fig2_refit",
            pst.fig2_refit_cells,
            _both(dict(profile="quick", datasets=["MNIST"], n_repeats=3), dict(profile="paper", k_grid=fig2_k)),
            plain_table,
            pst_status,
            "PST Figure 2 [IJCAI Fig. 2(a)–(b)] at K = 1, 5, 50, the chosen setting refitted on the whole training set",
        ),
        (
            "protocols_pst_fig2_row_scale",
            pst.fig2_row_scale_cells,
            _both(
                dict(profile="quick", row_scales=[4.0], datasets=["MNIST"], n_repeats=3),
                dict(profile="paper", row_scales=scales, k_grid=fig2_k),
            ),
            row_scale_table,
            pst_status,
            "PST Figure 2 [IJCAI Fig. 2(a)–(b)] at K = 1, 5, 50, every method, rows divided by a public constant",
        ),
        (
            "protocols_pst_fig3_refit",
            pst.fig3_refit_cells,
            _both(
                dict(profile="quick", datasets=["MNIST"], n_repeats=3), dict(profile="paper", n_repeats=PAPER_REPEATS)
            ),
            plain_table,
            pst_status,
            "PST Figure 3 [IJCAI Fig. 2(c)–(d)], the chosen setting refitted on the whole training set",
        ),
        (
            "protocols_pst_fig3_row_scale",
            pst.fig3_row_scale_cells,
            _both(
                dict(profile="quick", row_scales=[4.0], datasets=["MNIST"], n_repeats=3),
                dict(profile="paper", row_scales=scales, n_repeats=PAPER_REPEATS),
            ),
            row_scale_table,
            pst_status,
            "PST Figure 3 [IJCAI Fig. 2(c)–(d)], every method, rows divided by a public constant",
        ),
        (
            "protocols_pst_fig4_refit",
            pst.fig4_refit_cells,
            _both(dict(profile="quick", n_repeats=3), dict(profile="paper", n_repeats=PAPER_REPEATS)),
            plain_table,
            _needs(pst.require_data, "NEWS20"),
            "PST Figure 4 [IJCAI Fig. 3], each combiner's chosen setting refitted on the whole training set",
        ),
        (
            "protocols_pst_fig4_row_scale",
            pst.fig4_row_scale_cells,
            _both(
                dict(profile="quick", row_scales=[4.0], n_repeats=3),
                dict(profile="paper", row_scales=scales, n_repeats=PAPER_REPEATS),
            ),
            row_scale_table,
            _needs(pst.require_data, "NEWS20"),
            "PST Figure 4 [IJCAI Fig. 3], every combiner, rows divided by a public constant",
        ),
        # PPTL Figure 4's MNIST panel (the paper's data; the RUIJIN-like panel is synthetic): refit and rows ÷ 4
        # over its 30 repeats and every K (one scale: the panel's grid costs about 1.7 min a variant)
        (
            "protocols_pptl_fig4_refit",
            pptl.groups_refit_cells,
            _both(dict(profile="quick", n_repeats=2), dict(profile="paper")),
            plain_table,
            mnist_t,
            "PPTL Figure 4's MNIST panel, the chosen setting refitted on the whole target training part",
        ),
        (
            "protocols_pptl_fig4_row_scale",
            pptl.groups_row_scale_cells,
            _both(dict(profile="quick", n_repeats=2), dict(profile="paper", row_scales=[4.0])),
            row_scale_table,
            mnist_t,
            "PPTL Figure 4's MNIST panel, rows divided by a public constant",
        ),
        (
            "protocols_mpl_kdd_row_scale",
            mpl.mpl_row_scale_cells,
            _both(
                dict(dataset="kdd", profile="quick", row_scales=[4.0], **mpl.QUICK_GRID["kdd"]),
                dict(dataset="kdd", profile="paper", row_scales=mpl_scales, n_trials=PAPER_REPEATS),
            ),
            mpl.finish_mpl,
            functools.partial(_status_of, mpl.data_status, "kdd"),
            "MPL Figure 3 (KDD-99), rows divided by a public constant (the ε-DP release)",
        ),
    ]:
        register(
            name,
            cells,
            pst.stacking_cell if "pst" in name else mpl.mpl_trial if "mpl" in name else pptl.transfer_cell,
            prof,
            finish,
            status,
            what,
            page="protocol_sensitivity",
        )
    # --- another seed: every primary result with variants, under another root seed and data draw
    for primary_name, variant, extra in [
        ("pst_fig1_epsilon", "protocols_pst_fig1_another_seed", {}),
        ("pst_fig2_groups", "protocols_pst_fig2_another_seed", {}),
        ("pst_fig3_importance", "protocols_pst_fig3_another_seed", {}),
        ("pst_fig4_combiners", "protocols_pst_fig4_another_seed", {}),
        ("pptl_table1_mnist", "protocols_pptl_table1_another_seed", {}),
        ("ruijin_transfer_groups", "protocols_pptl_fig4_another_seed", {"datasets": ["MNIST"]}),
        ("mpl_kdd", "protocols_mpl_kdd_another_seed", {}),
    ]:
        exp = _REGISTRY[primary_name]
        register(
            variant,
            _another_draw(exp.cells),
            exp.cell,
            {k: dict(v, **extra) for k, v in exp.profiles.items()},
            exp.finish,
            exp.status,
            f"{exp.description}; root seed {SECOND_SEED}, data draws from {SECOND_DATA_DRAW}",
            page="protocol_sensitivity",
            seed=SECOND_SEED,
        )


def experiments():
    """Names of every registered experiment, in registration order."""
    _load_builtins()
    return list(_REGISTRY)


def get(name):
    """The registered :class:`Experiment` called ``name``."""
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no experiment called {name!r}; registered: {', '.join(_REGISTRY)}") from None


def reproduce_command(name, profile="paper"):
    """The shell command that recomputes and commits the result of ``name`` at ``profile``."""
    return f"python -m dpstack.companion reproduce {name} --profile {profile}"


# ------------------------------------------------------------------------------------------ locations
def results_dir():
    """Folder of the committed results: ``$DPSTACK_RESULTS`` if set, else ``results/`` beside the package."""
    env = os.environ.get("DPSTACK_RESULTS", "").strip()
    return Path(env) if env else _PROJECT_ROOT / "results"


def result_paths(name, profile, root=None):
    """(csv, json) paths of one committed result."""
    folder = Path(root) if root is not None else results_dir()
    return folder / name / f"{profile}.csv", folder / name / f"{profile}.json"


# ------------------------------------------------------------------------------------------ code hashes
def code_hashes(exp):
    """The code hash (:func:`dpstack.provenance.code_hash`) of every source file the result of ``exp`` depends on.

    Keys are paths relative to the project (``dpstack/companion/papers/mpl/grids.py``) for the
    dpstack modules of :func:`dpstack.provenance.module_closure` of the experiment's functions; functions
    defined outside dpstack (a notebook, a user module) add the runner's hashes of their
    source and helpers (keys ``external:…``).
    """
    funcs = [f for f in (exp.cells, exp.cell, exp.finish) if f is not None]
    funcs = [getattr(f, "func", f) for f in funcs]  # functools.partial
    modules = {getattr(f, "__module__", "") or "" for f in funcs}
    out = closure_hashes(*modules, package_root=_PACKAGE_ROOT)
    for f in funcs:
        for key, value in sorted(external_code_hashes(f).items()):
            out[f"external:{key}"] = value
    return dict(sorted(out.items()))


def _module_of(path):
    """``dpstack/a/b.py`` → ``dpstack.a.b`` (``__init__.py`` → its package, ``_fused.c`` → ``dpstack._fused``)."""
    parts = path.rsplit(".", 1)[0].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _current_code(prov, name):
    """The code hashes, now, of what a committed result recorded, read from the source (nothing imported).

    The files a result recorded are closed under imports when it was computed; their closure now
    holds every file they import today, so an edited, removed or newly imported file shows. A
    result that recorded code defined outside dpstack (a user's cell function) needs the function
    itself: the experiment is then looked up (and its modules imported).
    """
    recorded = prov.get("code", {})
    if any(k.startswith("external:") for k in recorded):
        return code_hashes(get(name))
    root = Path(_PACKAGE_ROOT)
    fingerprint = _source_fingerprint(root)
    files = _closure_files(tuple(sorted({_module_of(k) for k in recorded})), root, fingerprint)
    return {rel: _file_hash(root.parent / rel, stamp) for rel, stamp in files}


def _source_fingerprint(root):
    """(file, size, mtime) of every source file under ``root``: what invalidates the memos below."""
    out = []
    for path in sorted(p for pattern in ("*.py", "*.c") for p in root.rglob(pattern)):
        st = path.stat()
        out.append((path.relative_to(root.parent).as_posix(), st.st_size, st.st_mtime_ns))
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _closure_files(modules, root, fingerprint):
    """((file, its (size, mtime)), …) of the import closure of ``modules`` (memoised while no file changes)."""
    stamps = {rel: (size, mtime) for rel, size, mtime in fingerprint}
    rels = [
        module_file(m, root).relative_to(root.parent).as_posix() for m in module_closure(*modules, package_root=root)
    ]
    return tuple((rel, stamps.get(rel)) for rel in rels)


@functools.lru_cache(maxsize=1024)
def _file_hash(path, stamp):
    """:func:`dpstack.provenance.code_hash` of ``path``, memoised on its (size, mtime): a page checks
    many results that share their files."""
    return code_hash(path)


def _changed(recorded, current):
    keys = sorted(set(recorded) | set(current))
    return [
        k + ("" if k in recorded and k in current else " (added)" if k in current else " (removed)")
        for k in keys
        if recorded.get(k) != current.get(k)
    ]


# ------------------------------------------------------------------------------------------ CSV
def _dtype_name(series):
    if pd.api.types.is_bool_dtype(series):
        return "bool"
    if pd.api.types.is_integer_dtype(series):
        return "int64"
    if pd.api.types.is_float_dtype(series):
        return "float64"
    if all(isinstance(v, str) for v in series):
        return "str"
    bad = next(v for v in series if not isinstance(v, str))
    raise TypeError(
        f"column {series.name!r} holds a {type(bad).__name__} ({bad!r}); a result table holds "
        "numbers, booleans and strings only"
    )


def _text(value, dtype):
    if dtype == "float64":
        return repr(float(value))  # shortest text that reads back to the same double (nan, inf too)
    if dtype == "int64":
        return str(int(value))
    if dtype == "bool":
        return "True" if bool(value) else "False"
    return value


def write_csv(frame):
    """``(text, dtypes)``: ``frame`` as CSV text whose floats read back bit for bit, and its column types.

    Floats are written with :func:`repr`; integers, booleans and strings as they are. Columns of
    other types (lists, objects) are refused.
    """
    if not all(isinstance(c, str) for c in frame.columns):
        raise TypeError("column names must be strings")
    dtypes = {c: _dtype_name(frame[c]) for c in frame.columns}
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(frame.columns)
    columns = [[_text(v, dtypes[c]) for v in frame[c].tolist()] for c in frame.columns]
    writer.writerows(zip(*columns))
    return buf.getvalue(), dtypes


def read_csv(text, dtypes):
    """The DataFrame written by :func:`write_csv` (``dtypes``: column → type name)."""
    if not isinstance(dtypes, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in dtypes.items()):
        raise ResultIntegrityError(f"the recorded columns are not a mapping of column name to type: {dtypes!r:.200}")
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or rows[0] != list(dtypes):
        raise ResultIntegrityError(f"the CSV's header {rows[:1]} does not list the recorded columns {list(dtypes)}")
    body = rows[1:]
    if any(len(r) != len(dtypes) for r in body):
        raise ResultIntegrityError("a row of the CSV does not have one value per column")
    data = {}
    for j, (name, dtype) in enumerate(dtypes.items()):
        values = [r[j] for r in body]
        if dtype in ("float64", "int64"):
            kind = float if dtype == "float64" else int
            try:
                data[name] = np.array([kind(v) for v in values], dtype=dtype)
            except (ValueError, OverflowError) as err:
                raise ResultIntegrityError(
                    f"column {name!r} is recorded as {dtype} but holds a value that is not one ({err})"
                ) from None
        elif dtype == "bool":
            if set(values) - {"True", "False"}:
                raise ResultIntegrityError(f"column {name!r} holds a value that is not True/False")
            data[name] = np.array([v == "True" for v in values], dtype=bool)
        elif dtype == "str":
            data[name] = pd.Series(values, dtype=object)
        else:
            raise ResultIntegrityError(f"unknown column type {dtype!r} for {name!r}")
    return pd.DataFrame(data, columns=list(dtypes))


# ------------------------------------------------------------------------------------------ provenance
def _git():
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=_PROJECT_ROOT, check=False, capture_output=True, text=True, timeout=10
        )
        if commit.returncode != 0:
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "dpstack"],
            cwd=_PROJECT_ROOT,
            check=False,
            capture_output=True,
            text=True,
            timeout=10,
        )
        return {"commit": commit.stdout.strip(), "dpstack_modified": bool(status.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return None


def _cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _machine():
    try:
        from threadpoolctl import threadpool_info

        blas = [
            {k: info.get(k) for k in ("internal_api", "version", "num_threads", "threading_layer")}
            for info in threadpool_info()
        ]
    except Exception:  # noqa: BLE001 - provenance is best effort, never a reason to fail
        blas = []
    try:
        load = [round(v, 2) for v in os.getloadavg()]
    except OSError:
        load = None
    return {
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "blas": blas,
        "load_average_at_start": load,
        "threads_env": {
            k: os.environ.get(k)
            for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE")
        },
        # the solver's value-and-gradient pass: the compiled one (dpstack/_fused.c) or numpy's
        "fused_pass": _fused_pass(),
        # what decides the bits besides code and inputs: a replay on the same platform is bit for bit
        "numerical_platform": numerical_platform(),
    }


def _fused_pass():
    from dpstack import solvers

    return bool(solvers.FUSED)


def _versions():
    import scipy
    import sklearn

    import dpstack

    return {
        "dpstack": dpstack.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "pandas": pd.__version__,
        "python": platform.python_version(),
    }


def _canonical(value):
    """JSON text of a parameter or grid, identical for equal values however they were spelled."""

    def default(obj):
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return obj.tolist()
        raise TypeError(f"{obj!r} is not JSON-serialisable")

    return json.dumps(value, sort_keys=True, default=default, allow_nan=True)


def _jsonable(value):
    return json.loads(_canonical(value))


def _tag_nonfinite(value):
    """``value`` with every infinite or NaN float written ``{"__float__": "inf" | "-inf" | "nan"}``.

    Provenance files are strict JSON (RFC 8259 has no Infinity or NaN), and a tagged float cannot
    be mistaken for a string; :func:`_untag_nonfinite` reads it back.
    """
    if isinstance(value, dict):
        return {k: _tag_nonfinite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_tag_nonfinite(v) for v in value]
    if isinstance(value, (float, np.floating)) and not math.isfinite(value):
        return {"__float__": "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"}
    return value


def _untag_nonfinite(obj):
    if len(obj) == 1 and obj.get("__float__") in ("inf", "-inf", "nan"):
        return float(obj["__float__"])
    return obj


def _refuse_constant(name):
    raise ValueError(f"not strict JSON: {name} (non-finite numbers are written as {{'__float__': ...}})")


def provenance_json(prov):
    """The bytes of a provenance file: strict JSON, non-finite floats tagged, one trailing newline."""
    return (json.dumps(_tag_nonfinite(prov), indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def read_provenance_json(text):
    """The dict of a provenance file written by :func:`provenance_json` (strict JSON; raises ValueError)."""
    return json.loads(text, object_hook=_untag_nonfinite, parse_constant=_refuse_constant)


# ------------------------------------------------------------------------------------------ compute / save / load
def _missing(v):
    return v is None or (isinstance(v, float) and math.isnan(v))


def _same_value(a, b):
    if _missing(a) and _missing(b):  # a cell's None is a NaN in the runner's table
        return True
    try:
        return bool(np.all(np.asarray(a, dtype=object) == np.asarray(b, dtype=object))) and np.shape(a) == np.shape(b)
    except Exception:  # noqa: BLE001
        return False


def _rows_per_cell(frame, cells):
    """How many consecutive rows of ``frame`` (in cell order) belong to each cell."""
    counts, offset = [], 0
    records = frame.to_dict("records")
    for i, cell in enumerate(cells):
        if i + 1 < len(cells) and _canonical(cells[i + 1]) == _canonical(cell):
            raise ValueError(f"cells {i} and {i + 1} are identical; a grid must not repeat a cell")
        n = 0
        while offset + n < len(records) and all(_same_value(records[offset + n][k], v) for k, v in cell.items()):
            n += 1
        counts.append(n)
        offset += n
    if offset != len(records):
        raise ValueError("the result rows do not follow the order of the cells")
    return counts


#: the most cells one computation runs unless asked for more (``max_cells=``, ``--max-cells``)
MAX_CELLS = 50_000


class GridTooLargeError(ValueError):
    """A grid has more cells than the stated ceiling (:data:`MAX_CELLS`, or the ``max_cells`` given)."""


def compute(name, profile="quick", *, seed=None, n_jobs=1, cache=False, max_cells=MAX_CELLS, **overrides):
    """Compute the table of ``name`` live (the runner's progress bar on a terminal).

    ``seed`` is the root seed (default: the experiment's own, 0 unless it is a protocol variant
    "another seed"). A grid of more than ``max_cells`` cells is refused before any of them runs
    (:class:`GridTooLargeError`, naming the count); pass a larger ``max_cells`` to run it.

    Returns
    -------
    pandas.DataFrame
        With ``frame.attrs["provenance"]`` holding the parameters, grid, seed, code hashes,
        versions, machine, ``n_jobs``, wall time and how many cells were computed or read from
        the runner's cache (``cells_computed``, ``cells_from_cache``; the wall time covers the
        computed ones: see :func:`wall_time_text`), everything :func:`save` writes except the
        CSV's sha256. Provenance files written before these counts existed lack them and still load.
    """
    exp = get(name)
    seed = exp.seed if seed is None else seed
    params = exp.parameters(profile, **overrides)
    cells = exp.cells(**params)
    if len(cells) > max_cells:
        raise GridTooLargeError(
            f"{name}: the grid has {len(cells):,} cells, more than the ceiling of {max_cells:,}; "
            f"pass max_cells={len(cells)} (--max-cells {len(cells)} on the command line) to run it anyway"
        )
    started = datetime.datetime.now(datetime.timezone.utc)
    machine = _machine()
    t0 = time.perf_counter()
    raw = run_cells(exp.cell, cells, seed=seed, n_jobs=n_jobs, cache=cache, desc=name)
    wall = time.perf_counter() - t0
    counted = raw.attrs.get("cells") or {}
    counts = _rows_per_cell(raw, cells)
    frame = exp.finish(raw) if exp.finish is not None else raw
    if len(frame) != len(raw):
        raise ValueError(f"finish of {name!r} changed the number of rows ({len(raw)} → {len(frame)})")
    frame = frame.reset_index(drop=True)
    frame.attrs["provenance"] = {
        "format": FORMAT,
        "name": name,
        "profile": profile,
        "command": reproduce_command(name, profile),
        "parameters": _jsonable(params),
        "seed": int(seed),
        "cells": _jsonable(cells),
        "rows_per_cell": counts,
        "code": code_hashes(exp),
        "versions": _versions(),
        "git": _git(),
        "date": started.isoformat(timespec="seconds"),
        "machine": machine,
        "n_jobs": int(n_jobs),
        "wall_time_s": round(wall, 1),
        # the wall time covers the computed cells only: those read from the runner's cache took none
        "cells_computed": int(counted.get("computed", len(cells))),
        "cells_from_cache": int(counted.get("from_cache", 0)),
    }
    return frame


def wall_time_text(prov, digits=1):
    """The wall time of a result as a phrase, saying when cells were read from the runner's cache.

    ``"93.2 s"`` when every cell was computed (and for provenance written before the counts
    were recorded); ``"0.0 s (all 40 cells read from the cache, not computed in this run)"`` or
    ``"12.5 s (10 of 40 cells read from the cache)"`` otherwise, so a cached run's time is never
    taken for the cost of the computation.
    """
    wall = f"{float(prov['wall_time_s']):.{digits}f} s"
    cached = prov.get("cells_from_cache")
    if not cached:
        return wall
    total = int(cached) + int(prov.get("cells_computed", 0))
    if cached >= total:
        return f"{wall} (all {total:,} cells read from the cache, not computed in this run)"
    return f"{wall} ({int(cached):,} of {total:,} cells read from the cache)"


def write_files(pairs):
    """Write several files so that each is either wholly old or wholly new.

    Every file is first written in full to a temporary file in its own folder (the project's
    naming: host, pid, random), flushed to disk; only when all are written are they renamed into
    place, in the order given. A failure while writing (a full disk, a kill) leaves the earlier
    files untouched and no temporary file behind; a killed writer's are removed here by the next
    write of the same name (that naming only, nothing else).

    Parameters
    ----------
    pairs : list of (Path, bytes)
    """
    temps = []
    for path, _ in pairs:
        remove_orphans(path.parent, f".{path.name}.*.tmp")
    try:
        for path, data in pairs:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=temp_suffix())
            temps.append(tmp)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)  # mkstemp's 0600 would make committed results private to one user
        for (path, _), tmp in zip(pairs, temps):
            os.replace(tmp, path)
    except BaseException:
        for tmp in temps:
            Path(tmp).unlink(missing_ok=True)
        raise


def save(frame, root=None):
    """Write ``frame`` (from :func:`compute`) as ``<name>/<profile>.csv`` + ``.json``; returns the two paths.

    Each file is written to a temporary name and renamed into place; the JSON, which holds the
    CSV's sha256, is renamed last, so an interrupted run leaves a pair that :func:`load` rejects
    rather than a wrong pair it would accept.
    """
    prov = dict(frame.attrs.get("provenance") or {})
    if prov.get("format") != FORMAT:
        raise ValueError("frame has no provenance: save the output of compute()")
    text, dtypes = write_csv(frame)
    data = text.encode("utf-8")
    prov.update(columns=dtypes, n_rows=int(len(frame)), csv_sha256=hashlib.sha256(data).hexdigest())
    csv_path, json_path = result_paths(prov["name"], prov["profile"], root)
    write_files([(csv_path, data), (json_path, provenance_json(prov))])
    return csv_path, json_path


def provenance(name, profile, root=None):
    """The provenance dict of a committed result (raises :class:`MissingResultError` if absent)."""
    _, json_path = result_paths(name, profile, root)
    try:
        prov = read_provenance_json(json_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MissingResultError(
            f"no committed result for page {name!r} at profile {profile!r} "
            f"({json_path.name} absent); compute it with: {reproduce_command(name, profile)}"
        ) from None
    except (OSError, ValueError) as err:
        raise ResultIntegrityError(f"the provenance of {name!r} ({profile}) cannot be read: {err}") from None
    if (
        not isinstance(prov, dict)
        or prov.get("format") != FORMAT
        or prov.get("name") != name
        or prov.get("profile") != profile
    ):
        raise ResultIntegrityError(f"{json_path} is not the provenance of {name!r} at profile {profile!r}")
    return prov


def check(name, profile, root=None):
    """Verify one committed result without reading its table into a frame.

    Raises :class:`ResultIntegrityError` if the CSV's sha256 differs from its provenance and
    :class:`StaleResultError` if any file its code hashes cover has changed. Returns the
    provenance.
    """
    prov = provenance(name, profile, root)
    csv_path, _ = result_paths(name, profile, root)
    try:
        data = csv_path.read_bytes()
    except FileNotFoundError:
        raise ResultIntegrityError(
            f"{csv_path.name} of page {name!r} is missing beside its provenance; "
            f"re-run: {reproduce_command(name, profile)}"
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != prov.get("csv_sha256"):
        raise ResultIntegrityError(
            f"results/{name}/{profile}.csv does not match its provenance (sha256 {digest[:12]}… ≠ recorded "
            f"{str(prov.get('csv_sha256'))[:12]}…): the file was changed after it was computed. Restore it "
            f"(git checkout) or recompute it with: {reproduce_command(name, profile)}"
        )
    changed = _changed(prov.get("code", {}), _current_code(prov, name))
    if changed:
        raise StaleResultError(name, profile, changed, reproduce_command(name, profile))
    return prov


def load(name, profile="paper", root=None):
    """The committed table of ``name`` at ``profile``, verified (see :func:`check`).

    Returns
    -------
    pandas.DataFrame
        With the provenance in ``frame.attrs["provenance"]``.
    """
    prov = check(name, profile, root)
    csv_path, _ = result_paths(name, profile, root)
    frame = read_csv(csv_path.read_text(encoding="utf-8"), prov["columns"])
    if len(frame) != prov.get("n_rows"):
        raise ResultIntegrityError(
            f"results/{name}/{profile}.csv has {len(frame)} rows, provenance says {prov.get('n_rows')}"
        )
    frame.attrs["provenance"] = prov
    return frame


#: provenance entries a page does not need; pandas deep-copies ``attrs`` on every operation, so a
#: frame carrying its whole grid of cells makes each groupby on it seconds slower
_BULKY = ("cells", "rows_per_cell", "code", "columns", "parameters")


def _summary(prov, source):
    """The provenance a page shows (source, date, machine, n_jobs, wall time …), without the bulky parts.

    The whole record stays in ``results/<name>/<profile>.json`` (:func:`provenance`).
    """
    out = {k: v for k, v in prov.items() if k not in _BULKY}
    out.update(source=source, n_cells=len(prov.get("cells", ())))
    return out


def load_or_run(name, profile="paper", *, seed=None, n_jobs=1, cache=False, root=None, **overrides):
    """What a page calls: the committed table when it matches, else the live computation.

    The committed ``results/<name>/<profile>.csv`` is used when it was computed for exactly
    the grid of cells these parameters give and the same root seed (``n_jobs`` does not change
    results); it is verified first, so a damaged or stale result raises rather than renders.
    Any other parameters (another profile, seed, λ …) compute the table live.

    Parameters
    ----------
    name : str
        The page (a registered experiment).
    profile : str, default="paper"
    seed : int, optional
        The root seed (default: the experiment's own, see :class:`Experiment`).
    n_jobs : int, default=1
        Workers of a live computation.
    cache : bool or path-like, default=False
        The runner's cell cache for a live computation.
    root : path-like, optional
        Folder of committed results (default :func:`results_dir`).
    **overrides
        Parameters of the experiment's ``cells`` function on top of the profile's.

    Returns
    -------
    pandas.DataFrame
        ``frame.attrs["provenance"]`` summarises the provenance (source ``"committed"`` or
        ``"live"``, date, machine, ``n_jobs``, wall time, ``n_cells``; the grid, code hashes and
        parameters are in the provenance file).
    """
    exp = get(name)
    seed = exp.seed if seed is None else seed
    cells = exp.grid(profile, **overrides)
    try:
        prov = provenance(name, profile, root)
    except MissingResultError:
        prov = None
    if prov is not None and prov.get("seed") == seed and _canonical(prov.get("cells")) == _canonical(cells):
        frame = load(name, profile, root)
        frame.attrs["provenance"] = _summary(frame.attrs["provenance"], "committed")
        return frame
    frame = compute(name, profile, seed=seed, n_jobs=n_jobs, cache=cache, **overrides)
    frame.attrs["provenance"] = _summary(frame.attrs["provenance"], "live")
    return frame


def is_committed(name, profile="paper", *, seed=None, root=None, **overrides):
    """Whether :func:`load_or_run` with these arguments would read a committed table (not compute one).

    True when ``results/<name>/<profile>.json`` exists and was computed for exactly the grid of
    cells these parameters give and the same root seed. The table itself is not verified here:
    :func:`load` does that (and raises on a damaged or stale result).
    """
    exp = get(name)
    seed = exp.seed if seed is None else seed
    cells = exp.grid(profile, **overrides)
    try:
        prov = provenance(name, profile, root)
    except MissingResultError:
        return False
    return prov.get("seed") == seed and _canonical(prov.get("cells")) == _canonical(cells)


def _missing_alike(stored, again):
    """``again`` with the columns that are absent or wholly missing in it typed as in ``stored``.

    A few cells recomputed alone can hold only missing values in a column the whole grid fills
    (e.g. the branch of MNIST cells); ``finish`` then cannot tell a number column from a string
    one. A missing value is NaN in a float column and ``""`` in a string column.
    """
    again = again.copy()
    for c in stored.columns:
        if c not in again:  # no recomputed cell has the key (e.g. alpha of PST-F(U) cells)
            again[c] = [None] * len(again)
        values = again[c].tolist()
        if not all(v is None or v == "" or (isinstance(v, float) and math.isnan(v)) for v in values):
            continue
        if stored[c].dtype == np.float64:
            again[c] = np.full(len(again), np.nan)
        elif not pd.api.types.is_numeric_dtype(stored[c]) and not pd.api.types.is_bool_dtype(stored[c]):
            again[c] = [""] * len(again)
    return again


#: Replay on another numerical platform (:mod:`dpstack.provenance`). Every private fit stops at
#: ‖∇J‖∞ ≤ :data:`REPLAY_SOLVER_TOL` (the solver's tolerance), so by (λ + Δ)-strong convexity the
#: solutions two platforms return lie within B = 2·√d·tol / λ of each other (d ≤
#: :data:`REPLAY_MAX_FEATURES` in every task), and with rows in the unit ball so does every score.
#: A rank statistic (an AUC, an accuracy) moves only through the pairs or rows whose scores lie
#: within 2B of each other or of zero; a float of a row may therefore differ by
#: ``max(REPLAY_ATOL, B) + REPLAY_RTOL · |value|``, B taken at the row's smallest λ (its ``lam`` and
#: ``lam_high`` columns; without them, the floor alone). The floor :data:`REPLAY_ATOL` allows a
#: handful of swapped pairs or rows at the smallest test parts (a few hundred rows); the relative
#: part covers continuous quantities (norms, noise draws scaled by the data), which rounding moves
#: by far less.
REPLAY_SOLVER_TOL = 1e-10
REPLAY_MAX_FEATURES = 1000
REPLAY_ATOL = 1e-4
REPLAY_RTOL = 1e-6


def replay_atol(row):
    """The absolute tolerance of one committed row on another platform (see :data:`REPLAY_ATOL`)."""
    lams = [float(row[c]) for c in ("lam", "lam_high") if c in row and isinstance(row[c], (int, float, np.number))]
    lams = [v for v in lams if math.isfinite(v) and v > 0]
    if not lams:
        return REPLAY_ATOL
    bound = 2 * math.sqrt(REPLAY_MAX_FEATURES) * REPLAY_SOLVER_TOL / min(lams)
    return max(REPLAY_ATOL, bound)


#: A row whose choice (λ, η, λ_h, chosen on validation by
#: :func:`dpstack.companion.papers.open_choices.select_on_scores`) was nearer than twice its tolerance
#: (:func:`replay_atol`) to changing (its ``choice_margin``) may pick another candidate on another
#: platform: the largest change of a validation AUC that rounding can cause, on either side. Such a
#: row is a *near tie*: counted and reported, its other columns (they follow from the other choice)
#: not compared.
NEAR_TIE_FACTOR = 2

#: Columns that are the difference of two scores each held to the row's tolerance (``choice_margin``
#: is ``|s_j − (s_best − resolution)|``): by the triangle inequality they may move by twice it.
REPLAY_DIFFERENCES = frozenset({"choice_margin"})


def replay_rules():
    """The replay's rules as a table for a reader: what is compared, how, and why (one row each)."""
    from dpstack.companion.papers.open_choices import SELECTION_RESOLUTION

    return pd.DataFrame(
        [
            ("same numerical platform", "bit for bit", "the same code, inputs, seed and platform give the same bytes"),
            (
                "same platform, different bits",
                "computed again in a fresh process, then bit for bit",
                "OpenBLAS may take another path for data at another address; a committed cell was computed "
                "in a fresh worker process",
            ),
            (
                "another platform: any float",
                f"|a − b| ≤ max({REPLAY_ATOL:g}, B) + {REPLAY_RTOL:g}·max(|a|, |b|)",
                "B = 2·√d·tol/λ: how far two solutions exact to the solver's tolerance can lie apart",
            ),
            (
                "B",
                f"tol = {REPLAY_SOLVER_TOL:g}, d ≤ {REPLAY_MAX_FEATURES:,}, λ: the row's smallest",
                "the solver stops at ‖∇J‖∞ ≤ tol and J is λ-strongly convex; rows lie in the unit ball",
            ),
            (
                "another platform: a difference of two scores (choice_margin)",
                "twice the tolerance of a float",
                "each of the two scores may move by the tolerance, in opposite directions",
            ),
            (
                "another platform: text, counts",
                "equal",
                "a method, a dataset or a number of candidates does not round",
            ),
            (
                "choice of λ, η, λ_h on validation",
                f"the first candidate within {SELECTION_RESOLUTION:g} of the best validation AUC",
                "far below what a validation part can tell apart, far above what rounding moves",
            ),
            (
                "a different choice on another platform",
                f"accepted when the row's choice_margin < {NEAR_TIE_FACTOR} × its tolerance (a near tie, counted)",
                "only a score that close to the rule's threshold can cross it",
            ),
        ],
        columns=["what", "rule", "why"],
    )


def _replay_platform(prov):
    """The numerical platform a result was computed on (None: not recorded, i.e. unknown)."""
    return (prov.get("machine") or {}).get("numerical_platform")


def _compare_cell(stored, again, same_platform):
    """Compare one cell's committed rows with its recomputed rows.

    Returns a dict: ``status`` (``"bit-identical"``, ``"within tolerance"``, ``"near tie"`` or
    ``"differs"``), ``max_rel_diff`` (largest |a − b| / max(|a|, |b|) over the float columns),
    ``near_ties`` (rows whose choice changed at a near tie) and ``first_difference``.
    """
    out = dict(status="differs", max_rel_diff=0.0, near_ties=0, first_difference=None)
    try:
        again = _missing_alike(stored, again)[list(stored.columns)]
        again = again.astype({c: stored[c].dtype for c in stored.columns if stored[c].dtype != object})
        text_stored, dtypes = write_csv(stored)
        text_again, _ = write_csv(again)
    except (KeyError, TypeError, ValueError) as err:
        out["first_difference"] = f"columns differ: {err}"
        return out
    if len(stored) != len(again):
        out["first_difference"] = f"{len(stored)} committed rows, {len(again)} recomputed"
        return out
    if text_stored == text_again:
        out["status"] = "bit-identical"
        return out
    a_lines, b_lines = text_stored.splitlines(), text_again.splitlines()
    if same_platform:
        line = next((k for k, (x, y) in enumerate(zip(a_lines, b_lines)) if x != y), min(len(a_lines), len(b_lines)))
        out["first_difference"] = (
            f"row {line - 1} of the cell, same numerical platform: committed {a_lines[line]!r}, "
            f"recomputed {b_lines[line]!r}"
        )
        return out
    worst, ties = 0.0, 0
    for i in range(len(stored)):
        bad = []
        atol = replay_atol(stored.iloc[i].to_dict())
        for c, dtype in dtypes.items():
            a, b = stored[c].iloc[i], again[c].iloc[i]
            if dtype == "float64":
                a, b = float(a), float(b)
                if math.isnan(a) or math.isnan(b):
                    if not (math.isnan(a) and math.isnan(b)):
                        bad.append(f"{c}: committed {a!r}, recomputed {b!r}")
                    continue
                if a == b:
                    continue
                diff = abs(a - b)
                scale = max(abs(a), abs(b))
                worst = max(worst, diff / scale if scale > 0 else math.inf)
                factor = 2 if c in REPLAY_DIFFERENCES else 1
                if not diff <= factor * (atol + REPLAY_RTOL * scale):
                    bad.append(f"{c}: committed {a!r}, recomputed {b!r}")
            elif a != b:
                bad.append(f"{c}: committed {a!r}, recomputed {b!r}")
        if not bad:
            continue
        margin = float(stored["choice_margin"].iloc[i]) if "choice_margin" in stored else math.nan
        if margin < NEAR_TIE_FACTOR * atol:
            ties += 1
            continue
        out["first_difference"] = f"row {i} of the cell: " + "; ".join(bad[:3])
        out["max_rel_diff"] = worst
        return out
    out.update(status="near tie" if ties else "within tolerance", max_rel_diff=worst, near_ties=ties)
    return out


def replay(name, profile="paper", n_cells=2, rng=None, n_jobs=1, root=None, cells=None):
    """Recompute ``n_cells`` cells of a committed result, drawn at random, and compare them.

    On the numerical platform the result was computed on (:func:`dpstack.provenance.numerical_platform`,
    recorded in its provenance) every value must be bit-identical. On another platform (other BLAS
    kernels, the other solver pass, other library versions), or when the provenance does not
    record one, every float must lie within :func:`replay_atol` + :data:`REPLAY_RTOL` · |value|,
    every other value must be equal, and a row whose validation choice was nearer than
    :data:`NEAR_TIE_FACTOR` times that tolerance to changing may differ (a *near tie*, counted).

    ``cells`` (indices into the committed grid) replays those cells instead of a random draw.

    Returns
    -------
    list of dict
        One per replayed cell: ``index``, ``cell``, ``same_platform`` (bool), ``status``
        (``"bit-identical"``, ``"within tolerance"``, ``"near tie"`` or ``"differs"``),
        ``identical`` (bool: bit-identical), ``ok`` (bool: the status is acceptable on this
        platform), ``max_rel_diff``, ``near_ties`` and ``first_difference`` (``None`` or a
        description of the first value outside the rule).
    """
    frame = load(name, profile, root)
    prov = frame.attrs["provenance"]
    exp = get(name)
    counts = prov["rows_per_cell"]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    rng = np.random.default_rng(rng)
    if cells is not None:
        chosen = sorted(int(i) for i in cells)
        if any(not 0 <= i < len(prov["cells"]) for i in chosen):
            raise ValueError(f"cells must be indices into the {len(prov['cells'])} cells of {name!r}, got {cells!r}")
    else:
        chosen = sorted(rng.choice(len(prov["cells"]), size=min(n_cells, len(prov["cells"])), replace=False).tolist())
    recorded = _replay_platform(prov)
    same_platform = recorded is not None and _canonical(recorded) == _canonical(numerical_platform())
    out = []
    grid = prov["cells"]
    raw = run_cells(exp.cell, [grid[i] for i in chosen], seed=prov["seed"], n_jobs=n_jobs, desc=f"replay {name}")
    fresh = exp.finish(raw) if exp.finish is not None else raw
    fresh = fresh.reset_index(drop=True)
    start = 0
    for i in chosen:
        stored = frame.iloc[offsets[i] : offsets[i + 1]].reset_index(drop=True)
        again = fresh.iloc[start : start + counts[i]].reset_index(drop=True)
        start += counts[i]
        verdict = _compare_cell(stored, again, same_platform)
        if same_platform and verdict["status"] != "bit-identical":
            # OpenBLAS's kernels may take another path for data at another address (a long-lived
            # process's heap): the committed cell was computed in a fresh worker, so compute it in
            # one again before calling it different
            again = _in_fresh_process(name, profile, i, root)
            if again is not None:
                verdict = {**_compare_cell(stored, again, same_platform), "fresh_process": True}
        out.append(
            dict(
                index=i,
                cell=grid[i],
                same_platform=same_platform,
                identical=verdict["status"] == "bit-identical",
                ok=verdict["status"] != "differs",
                **verdict,
            )
        )
    return out


def _cell_rows(name, profile, index, root):
    """The rows of cell ``index`` of a committed result, recomputed in this process (top level: a worker runs it)."""
    prov = provenance(name, profile, root)
    exp = get(name)
    raw = run_cells(exp.cell, [prov["cells"][index]], seed=prov["seed"], n_jobs=1, desc=f"replay {name}")
    return (exp.finish(raw) if exp.finish is not None else raw).reset_index(drop=True)


def _in_fresh_process(name, profile, index, root):
    """:func:`_cell_rows` in a newly started process, or None when it cannot run there (an
    experiment registered only in this process, e.g. by a test)."""
    import concurrent.futures
    import multiprocessing

    try:
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            return pool.submit(_cell_rows, name, profile, index, root).result()
    except (KeyError, OSError, RuntimeError, concurrent.futures.process.BrokenProcessPool):
        return None


def replay_summary(name, profile, out):
    """One line per result for a test or a log: what a replay proved.

    E.g. ``pst_fig1_epsilon/paper, other platform: 3 cells: 1 bit-identical, 2 within tolerance
    (max relative difference 3.1e-12), 0 near-tie choices``.
    """
    if not out:
        return f"{name}/{profile}: no cell replayed"
    where = "same platform" if out[0]["same_platform"] else "other platform"
    n = {s: sum(r["status"] == s for r in out) for s in ("bit-identical", "within tolerance", "near tie", "differs")}
    worst = max(r["max_rel_diff"] for r in out)
    ties = sum(r["near_ties"] for r in out)
    return (
        f"{name}/{profile}, {where}: {len(out)} cell{'s' if len(out) != 1 else ''}: "
        f"{n['bit-identical']} bit-identical, {n['within tolerance'] + n['near tie']} within tolerance "
        f"(max relative difference {worst:.2g}), {ties} near-tie choice{'s' if ties != 1 else ''}"
        + (f", {n['differs']} DIFFER" if n["differs"] else "")
        + (
            f" ({fresh} recomputed in a fresh process)"
            if (fresh := sum(bool(r.get("fresh_process")) for r in out))
            else ""
        )
    )


def committed_table(profile="paper", root=None):
    """One row per committed result at ``profile``: its page, size, ``n_jobs``, wall time, date, machine
    and numerical platform (:func:`dpstack.provenance.platform_summary`; "not recorded" before it was).

    Read from the provenance files (nothing is computed); a registered result without a committed
    file is listed with ``committed`` False.
    """
    rows = []
    for name in experiments():
        exp = get(name)
        try:
            prov = provenance(name, profile, root)
        except MissingResultError:
            rows.append(dict(result=name, page=exp.page, committed=False))
            continue
        rows.append(
            dict(
                result=name,
                page=exp.page,
                committed=True,
                cells=len(prov["cells"]),
                rows=int(prov["n_rows"]),
                n_jobs=int(prov["n_jobs"]),
                **{"wall time (s)": float(prov["wall_time_s"])},
                **{"cells from cache": prov.get("cells_from_cache")},
                date=prov["date"][:10],
                machine=prov["machine"].get("cpu", ""),
                **{"numerical platform": platform_summary(_replay_platform(prov))},
            )
        )
    table = pd.DataFrame(rows)
    cached = pd.to_numeric(table.get("cells from cache"), errors="coerce") if len(table) else None
    if cached is None or not (cached.fillna(0) > 0).any():
        # no result read cells from the cache (or none recorded it): the wall times are whole computations
        return table.drop(columns=["cells from cache"], errors="ignore")
    table["cells from cache"] = cached.astype("Int64")
    return table


def committed_sentence(table):
    """The sentence under :func:`committed_table`: how many results, their total wall time, what is missing."""
    done = table[table["committed"]]
    missing = table.loc[~table["committed"], "result"].tolist()
    total = float(done["wall time (s)"].sum()) if len(done) else 0.0
    text = (
        f"{len(done)} committed results on {done['page'].nunique()} pages; computing them all took "
        f"{total / 60:.0f} min of wall time in the runs recorded (each with the n_jobs shown)."
    )
    if "cells from cache" in done:
        partial = done[done["cells from cache"].fillna(0) > 0]
        text += (
            f" {len(partial)} of them read cells from the runner's cache ({', '.join(partial['result'])}): their "
            "wall time covers only the cells computed in that run."
        )
    if missing:
        text += f" Not committed (the page computes them when it runs): {', '.join(missing)}."
    return text
