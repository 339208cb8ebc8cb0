"""Every registered experiment's knobs as checked parameters, and what a live run changed.

A book page renders its committed paper-profile results (:func:`.results.load_or_run`). To
re-run it with other grids, a researcher turns the knobs the page's grid function takes: the ε
grid, the repeats, the datasets, the methods, the K grid, M, λ grids, the variants of an
ablation, the public row scales of a protocol variant. This module names those knobs for every
registered experiment (:func:`knobs`), checks them before any work is done, and runs the
experiment through :func:`.results.load_or_run`:

>>> from dpstack.companion import live
>>> sorted(live.knobs("pst_fig1_epsilon"))
['datasets', 'epsilons', 'methods', 'n_repeats']
>>> live.run("pst_fig1_epsilon", epsilons=[0.05, 0.1], n_repeats=2, datasets=["MNIST"])  # doctest: +SKIP

``None`` (the default of every knob) means the profile's value. An unknown knob fails at once,
listing the valid ones; a bad value fails naming the parameter (:class:`ParameterError`). The
returned :class:`LiveResult` holds the table, whether it is the committed result or a live
computation, what differs from the committed profile, the wall time and ``n_jobs``: a page
shows :attr:`LiveResult.description` at its top. One function per experiment, with the knobs as
its keyword arguments, is also defined here under the experiment's name
(``live.pst_fig1_epsilon(epsilons=…)``); ``python -m dpstack.companion run NAME`` is the same
call from a shell.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from dpstack.companion.parameters import RULES, ParameterError

__all__ = [
    "Knob",
    "COMMON",
    "LiveResult",
    "knobs",
    "check_knobs",
    "check_page_parameters",
    "page_knobs",
    "page_protocols",
    "PROTOCOL_PARAMETERS",
    "knobs_table",
    "PageParameters",
    "profile_values",
    "differences",
    "grid_overrides",
    "run",
    "page_experiments",
]

COMMITTED_PROFILE = "paper"

#: Pages rendering registered experiments whose notebook does not expose the knobs: the protocol
#: sensitivity page runs its grids through :func:`.protocols.sensitivity_page`, which takes none.
PAGES_WITHOUT_KNOBS = ("protocol_sensitivity",)


# ------------------------------------------------------------------------------------------ checks
def _real(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and not math.isnan(v)


def _int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _seq(v):
    return isinstance(v, (list, tuple)) and len(v) >= 1


def _distinct(v):
    return len(set(v)) == len(v)


def _choices(allowed):
    allowed = tuple(allowed)

    def ok(v):
        return _seq(v) and _distinct(v) and all(isinstance(x, str) and x in allowed for x in v)

    return ok, f"a non-empty list of distinct names from {list(allowed)}"


def _one_of(allowed):
    allowed = tuple(allowed)
    return (lambda v: isinstance(v, str) and v in allowed), f"one of {list(allowed)}"


def _ints(low, high=None, min_len=1):
    def ok(v):
        return (
            _seq(v)
            and len(v) >= min_len
            and _distinct(v)
            and all(_int(x) and x >= low and (high is None or x <= high) for x in v)
        )

    rng = f">= {low}" if high is None else f"from {low} to {high}"
    return ok, f"a list of at least {min_len} distinct integers {rng}"


def _positive_reals(v):
    return _seq(v) and _distinct(v) and all(_real(x) and math.isfinite(x) and x > 0 for x in v)


def _nonnegative_reals(v):
    return _seq(v) and _distinct(v) and all(_real(x) and math.isfinite(x) and x >= 0 for x in v)


def _count(low):
    return (lambda v: _int(v) and v >= low), f"an integer >= {low}"


@dataclass(frozen=True)
class Knob:
    """One parameter of an experiment's grid.

    Attributes
    ----------
    name : str
        The keyword of the grid function (and of the page, the command line, :func:`run`).
    check : callable
        ``check(value)`` → bool.
    expected : str
        What a valid value is (said when ``check`` fails).
    help : str
        One line for ``--list`` and the docstrings.
    profile_value : callable
        ``profile_value(profile)`` → the value the profile uses (for :func:`differences`).
    to_grid : callable or None
        Maps the knob's value to the grid function's argument (e.g. variant names → their options).
    """

    name: str
    check: Callable
    expected: str
    help: str
    profile_value: Callable
    to_grid: Callable | None = None


def _rule(name):
    return RULES[name]


# ------------------------------------------------------------------------------------------ the knobs
def _build():
    """Knobs of every registered experiment (the modules are imported on first use)."""
    from dpstack.companion.chapters import end_to_end as e2e
    from dpstack.companion.papers.mpl import alternatives as mpl_alt
    from dpstack.companion.papers.mpl import grids as mpl
    from dpstack.companion.papers.open_choices import ABLATION_VARIANTS, FACTOR_VARIANTS, PST_FACTOR_VARIANTS
    from dpstack.companion.papers.pptl import grids as pptl
    from dpstack.companion.papers.pst import alternatives as pst_alternatives
    from dpstack.companion.papers.pst import grids as pst
    from dpstack.companion.results import experiments, get

    def registered(name, key, fallback):
        """The registered profile's value of ``key``, else ``fallback(profile)``."""

        def value(profile):
            params = get(name).profiles.get(profile, {})
            return params[key] if key in params else fallback(profile)

        return value

    def from_profiles(table, key):
        return lambda profile: table[profile][key]

    def const(value):
        return lambda profile: value

    def names(variants):
        return lambda v: {k: variants[k] for k in v}

    pst_datasets = _choices(("MNIST", "NEWS20"))
    eps_list = _rule("epsilons")
    eps_one = _rule("epsilon")
    reps = _rule("n_repeats")
    out = {}

    def knob(exp, name, check_expected, help_, default, to_grid=None):
        check, expected = check_expected
        out.setdefault(exp, {})[name] = Knob(name, check, expected, help_, registered(exp, name, default), to_grid)

    P, T, E = pst.PROFILES, pptl.TRANSFER_PROFILES, e2e.PROFILES
    # PST figures
    exp = "pst_fig1_epsilon"
    knob(exp, "epsilons", eps_list, "the ε grid", from_profiles(P, "epsilons"))
    knob(exp, "n_repeats", reps, "repeats (random splits)", from_profiles(P, "n_repeats"))
    knob(exp, "datasets", pst_datasets, "datasets", from_profiles(P, "datasets"))
    knob(exp, "methods", _choices(pst.STACKING_METHODS), "methods", const(pst.STACKING_METHODS))
    # PST against today's alternatives: Figure 1's grid for the alternatives' methods
    knob("pst_alternatives", "epsilons", eps_list, "the ε grid", from_profiles(P, "epsilons"))
    knob("pst_alternatives", "n_repeats", reps, "repeats (random splits)", from_profiles(P, "n_repeats"))
    knob("pst_alternatives", "datasets", pst_datasets, "datasets", from_profiles(P, "datasets"))
    knob(
        "pst_alternatives",
        "methods",
        _choices(pst_alternatives.ALTERNATIVE_METHODS),
        "today's methods",
        const(pst_alternatives.ALTERNATIVE_METHODS),
    )
    # K is at most the number of features (100 after PCA on MNIST and NEWS20; 50 in the RUIJIN-like cohort)
    knob(
        "pst_fig2_groups", "k_grid", _ints(1, 100, min_len=2), "the K grid (feature groups)", from_profiles(P, "k_grid")
    )
    knob("pst_fig2_groups", "epsilon", eps_one, "ε", const(1.0))
    knob("pst_fig2_groups", "n_repeats", reps, "repeats", from_profiles(P, "k_repeats"))
    knob("pst_fig2_groups", "datasets", pst_datasets, "datasets", from_profiles(P, "datasets"))
    knob(
        "pst_fig3_importance",
        "alphas",
        (_positive_reals, "a non-empty list of distinct finite numbers > 0"),
        "the importance decay grid α (v_i = α^i)",
        from_profiles(P, "alphas"),
    )
    knob("pst_fig3_importance", "epsilon", eps_one, "ε", const(1.0))
    knob("pst_fig3_importance", "n_repeats", reps, "repeats", from_profiles(P, "n_repeats"))
    knob("pst_fig3_importance", "datasets", pst_datasets, "datasets", from_profiles(P, "datasets"))
    knob("pst_fig4_combiners", "dataset", _one_of(("MNIST", "NEWS20")), "dataset", const("NEWS20"))
    knob("pst_fig4_combiners", "epsilon", eps_one, "ε", const(1.0))
    knob("pst_fig4_combiners", "n_repeats", reps, "repeats", from_profiles(P, "n_repeats"))
    # PPTL and PST Table 2
    transfer_methods = _choices(pptl.TRANSFER_METHODS)
    knob("pptl_table1_mnist", "methods", transfer_methods, "methods", const(pptl.TRANSFER_METHODS))
    knob("pptl_table1_mnist", "epsilons", eps_list, "the ε grid (ε_s = ε_t = ε)", from_profiles(T, "epsilons"))
    knob("pptl_table1_mnist", "n_repeats", reps, "repeats", from_profiles(T, "n_repeats"))
    knob("pptl_table1_mnist_nonprivate", "n_repeats", reps, "repeats", from_profiles(T, "n_repeats"))
    # PPTL against today's alternatives: Table 1's grid for the alternatives' methods
    from dpstack.companion.papers.pptl import alternatives as pptl_alternatives

    knob(
        "pptl_alternatives",
        "methods",
        _choices(pptl_alternatives.ALTERNATIVE_METHODS),
        "today's methods",
        const(pptl_alternatives.ALTERNATIVE_METHODS),
    )
    knob("pptl_alternatives", "epsilons", eps_list, "the ε grid (ε_s = ε_t = ε)", from_profiles(T, "epsilons"))
    knob("pptl_alternatives", "n_repeats", reps, "repeats", from_profiles(T, "n_repeats"))
    knob(
        "ruijin_transfer_branches",
        "methods",
        _choices(pptl.TRANSFER_METHODS + ("PLR(main)",)),
        "methods",
        const(pptl.TRANSFER_METHODS + ("PLR(main)",)),
    )
    knob("ruijin_transfer_branches", "branches", _ints(1, 16), "branches (1–16)", from_profiles(T, "branches"))
    knob("ruijin_transfer_branches", "epsilon", eps_one, "ε", const(1.0))
    knob("ruijin_transfer_branches", "n_repeats", reps, "repeats", from_profiles(T, "ruijin_repeats"))
    branch = ((lambda v: _int(v) and 1 <= v <= 16), "an integer from 1 to 16")
    knob("ruijin_transfer_epsilon", "branch", branch, "the branch", const(1))
    knob("ruijin_transfer_epsilon", "methods", transfer_methods, "methods", const(pptl.TRANSFER_METHODS))
    knob("ruijin_transfer_epsilon", "epsilons", eps_list, "the ε grid", from_profiles(T, "epsilons"))
    knob("ruijin_transfer_epsilon", "n_repeats", reps, "repeats", from_profiles(T, "n_repeats"))
    knob(
        "ruijin_transfer_groups",
        "datasets",
        _choices(("RUIJIN", "MNIST")),
        "datasets",
        const(("RUIJIN", "MNIST")),
    )
    knob("ruijin_transfer_groups", "k_grid", _ints(1, 50, min_len=2), "the K grid", from_profiles(T, "k_grid"))
    knob("ruijin_transfer_groups", "branch", branch, "the RUIJIN-like branch", const(1))
    knob("ruijin_transfer_groups", "epsilon", eps_one, "ε", const(1.0))
    knob("ruijin_transfer_groups", "n_repeats", reps, "repeats", from_profiles(T, "k_repeats"))
    # the protocol sensitivity page: PST Figure 1 and PPTL Table 1 under the protocols the papers leave open
    scales = (
        _positive_reals,
        "a non-empty list of distinct finite numbers > 0 (rows are divided by each; 1 is the primary result)",
    )
    for exp, knob_reps in (
        ("protocols_pst_fig1_refit", from_profiles(P, "n_repeats")),
        ("protocols_pst_fig1_row_scale", from_profiles(P, "n_repeats")),
    ):
        if exp.endswith("row_scale"):
            knob(exp, "row_scales", scales, "the public row scales s (rows ÷ s)", const((2.0, 4.0, 8.0)))
        knob(exp, "epsilons", eps_list, "the ε grid", from_profiles(P, "epsilons"))
        knob(exp, "n_repeats", reps, "repeats", knob_reps)
        knob(exp, "datasets", pst_datasets, "datasets", from_profiles(P, "datasets"))
        knob(exp, "methods", _choices(pst.STACKING_METHODS), "methods", const(pst.STACKING_METHODS))
    for exp, knob_reps in (
        ("protocols_pptl_table1_refit", from_profiles(T, "n_repeats")),
        ("protocols_pptl_table1_row_scale", from_profiles(T, "n_repeats")),
    ):
        if exp.endswith("row_scale"):
            knob(exp, "row_scales", scales, "the public row scales s (rows ÷ s)", const((2.0, 4.0, 8.0)))
        knob(exp, "methods", transfer_methods, "methods", const(pptl.TRANSFER_METHODS))
        knob(exp, "epsilons", eps_list, "the ε grid (ε_s = ε_t = ε)", from_profiles(T, "epsilons"))
        knob(exp, "n_repeats", reps, "repeats", knob_reps)
    # the ablation page
    lam_grid = (_rule("lams")[0], _rule("lams")[1])
    for exp, methods, variants, profiles in (
        ("stacking_ablation_pst", pst.STACKING_METHODS, PST_FACTOR_VARIANTS, P),
        ("stacking_ablation_choices", pst.STACKING_METHODS, ABLATION_VARIANTS, P),
    ):
        knob(exp, "methods", _choices(methods), "methods", None)
        knob(exp, "epsilons", eps_list, "the ε grid", None)
        knob(exp, "variants", _choices(variants), "the variants (by name)", None, names(variants))
        knob(exp, "n_repeats", reps, "repeats", None)
        knob(exp, "lam_grid", lam_grid, "the λ grid", from_profiles(profiles, "lam_grid"))
    exp = "stacking_ablation_transfer"
    knob(exp, "methods", transfer_methods, "methods", None)
    knob(exp, "epsilon", eps_one, "ε", None)
    knob(exp, "variants", _choices(FACTOR_VARIANTS), "the variants (by name)", None, names(FACTOR_VARIANTS))
    knob(exp, "n_repeats", reps, "repeats", None)
    knob(exp, "lam_grid", lam_grid, "the λ grid", from_profiles(T, "lam_grid"))
    knob("stacking_ablation_grids", "n_repeats", reps, "repeats", None)
    knob("stacking_ablation_grids_transfer", "n_repeats", reps, "repeats", None)
    knob(
        "stacking_ablation_grids_transfer",
        "methods",
        _choices(("Direct", "SourceD", "SimComb")),
        "methods",
        const(("Direct", "SourceD", "SimComb")),
    )
    knob("stacking_ablation_swing", "n_seeds", _rule("n_draws"), "noise seeds per case", None)
    # the end-to-end page
    knob(
        "end_to_end_private",
        "pst_methods",
        _choices(e2e.PST_METHODS),
        "PST methods",
        from_profiles(E, "pst_methods"),
    )
    knob(
        "end_to_end_private",
        "transfer_methods",
        _choices(e2e.TRANSFER_METHODS),
        "transfer methods",
        from_profiles(E, "transfer_methods"),
    )
    knob("end_to_end_private", "n_repeats", reps, "repeats", from_profiles(E, "n_repeats"))
    # MPL
    for page, dataset in (("mpl_har", "har"), ("mpl_kdd", "kdd"), ("mpl_url", "url"), ("mpl_mnist10", "mnist10")):
        knob(page, "n_parties", _ints(1), "the M grid (parties)", const(mpl.DATASETS[dataset]["n_parties"]))
        knob(
            page,
            "inv_epsilons",
            (_nonnegative_reals, "a non-empty list of distinct finite numbers >= 0 (0 is non-private)"),
            "the 1/ε grid",
            const(mpl.INV_EPSILONS),
        )
        knob(page, "lam", _rule("lam"), "λ of the global model", const(1e-4))
        knob(page, "fit_on", _one_of(("aux", "private")), "rows the PCA is fitted on", const("aux"))
        knob(page, "n_trials", _count(1), "random splits", from_profiles(mpl.PROFILES, "n_trials"))
        knob(page, "n_noise", _count(1), "noise draws per split", from_profiles(mpl.PROFILES, "n_noise"))
    # MPL against today's alternatives: KDD-99's grid for the alternatives' methods
    A = mpl_alt.PROFILES
    knob("mpl_alternatives", "n_parties", _ints(1), "the M grid (parties)", from_profiles(A, "n_parties"))
    knob(
        "mpl_alternatives",
        "inv_epsilons",
        (_nonnegative_reals, "a non-empty list of distinct finite numbers >= 0 (0 is non-private)"),
        "the 1/ε grid",
        from_profiles(A, "inv_epsilons"),
    )
    knob("mpl_alternatives", "n_trials", _count(1), "random splits", from_profiles(A, "n_trials"))
    knob("mpl_alternatives", "n_noise", _count(1), "noise draws per split", from_profiles(A, "n_noise"))
    knob(
        "mpl_alternatives",
        "methods",
        _choices(mpl_alt.ALTERNATIVE_METHODS),
        "today's methods",
        const(mpl_alt.ALTERNATIVE_METHODS),
    )
    # The other results with protocol variants (protocols.PRIMARY: PST Figures 2-4, PPTL Figure 4's MNIST
    # panel, MPL's KDD-99 figure): each variant takes its primary grid's knobs (defaults: the variant's
    # registered values) and, for rows ÷ s, the scales (default: the paper profile's)
    from dpstack.companion.variants import PRIMARY

    for primary, entry in PRIMARY.items():
        for exp in (entry["refit"], entry["row_scale"], entry["another_seed"]):
            if exp is None or exp in out:  # PST Figure 1 and PPTL Table 1: declared above
                continue
            if exp == entry["row_scale"]:
                knob(
                    exp,
                    "row_scales",
                    scales,
                    "the public row scales s (rows ÷ s)",
                    const(get(exp).profiles["paper"]["row_scales"]),
                )
            for name, k in out[primary].items():
                # PPTL Figure 4's variants run its MNIST panel only (the other panel is the synthetic cohort)
                fallback = (
                    const(("MNIST",)) if primary == "ruijin_transfer_groups" and name == "datasets" else k.profile_value
                )
                out.setdefault(exp, {})[name] = Knob(
                    name, k.check, k.expected, k.help, registered(exp, name, fallback), k.to_grid
                )
    missing = sorted(set(experiments()) - set(out))
    if missing:  # every registered experiment has knobs (a new one must be added here)
        raise RuntimeError(f"no knobs declared for the registered experiment(s) {missing}")
    return out


_KNOBS: dict = {}


def _knobs_table():
    if not _KNOBS:
        _KNOBS.update(_build())
    return _KNOBS


#: parameters every experiment takes besides its knobs: name → (check, expected, help)
COMMON = {
    "profile": (
        lambda v: isinstance(v, str) and v in ("quick", "paper"),
        "'quick' or 'paper'",
        "the grids and repeats every knob left at None takes ('paper': the committed results)",
    ),
    "seed": (RULES["seed"][0], RULES["seed"][1], "root seed (never tuned)"),
    "n_jobs": (RULES["n_jobs"][0], RULES["n_jobs"][1], "cells in parallel (results do not depend on it)"),
    "cache": (
        lambda v: isinstance(v, bool) or isinstance(v, str),
        "True, False or a folder",
        "the runner's cell cache (resumes an interrupted run)",
    ),
}


def knobs(name):
    """The knobs of experiment ``name`` (``{name: Knob}``, in the order they are listed)."""
    table = _knobs_table()
    if name not in table:
        raise KeyError(f"no experiment called {name!r}; registered: {', '.join(table)}")
    return dict(table[name])


def page_experiments():
    """Page → the registered experiments it renders (a page with several grids has several)."""
    from dpstack.companion.results import experiments, get

    out = {}
    for name in experiments():
        out.setdefault(get(name).page, []).append(name)
    return out


def check_knobs(name, values):
    """Check the parameters ``values`` (a mapping) of experiment ``name``; ``None`` means the profile's value.

    Raises
    ------
    ParameterError
        For a name that is neither a knob of ``name`` nor a common parameter (the message lists the
        valid ones), and for a value a knob cannot use (naming the parameter, what it got and what
        is expected). Every problem is listed when there are several.
    """
    table = knobs(name)
    valid = list(table) + list(COMMON)
    unknown = [k for k in values if k not in valid]
    if unknown:
        raise ParameterError(
            f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} for "
            f"{name!r}; its parameters are: {', '.join(valid)}"
        )
    problems = []
    for key, value in values.items():
        if value is None and key in table:
            continue
        check, expected = (table[key].check, table[key].expected) if key in table else COMMON[key][:2]
        if not check(value):
            problems.append(f"parameter {key} = {value!r}: expected {expected}")
    if problems:
        raise ParameterError(f"{name}: " + "; ".join(problems))


def _grid_prefix(page, experiment):
    """The prefix of a grid's knobs on a page with several grids (``ruijin_transfer_epsilon`` → ``epsilon_``)."""
    for start in (page + "_", "protocols_"):
        if experiment.startswith(start):
            return experiment[len(start) :] + "_"
    return experiment + "_"


def page_knobs(page):
    """The knob parameters of book page ``page``: ``{parameter: (experiment, knob)}``, in order.

    A page rendering one grid (or one main grid named like the page) takes the knobs by their own
    names; the knobs of each further grid are prefixed with what the grid's name adds to the page's
    (``pptl_table1_mnist_nonprivate`` → ``nonprivate_n_repeats``; on ``ruijin_transfer``,
    ``epsilon_epsilons``, ``groups_k_grid`` …). ``page`` may also be an experiment's name.
    """
    grids = page_experiments().get(page)
    if grids is None:
        if page not in _knobs_table():
            raise KeyError(f"no page or experiment called {page!r}; pages: {', '.join(page_experiments())}")
        grids = [page]
    out = {}
    for exp in grids:
        prefix = "" if exp == page or len(grids) == 1 else _grid_prefix(page, exp)
        for key in knobs(exp):
            out[prefix + key] = (exp, key)
    return out


#: The page parameters that choose a protocol the papers leave open, on the pages whose results have
#: registered protocol variants (:data:`dpstack.companion.variants.PRIMARY`): name → (help, default).
PROTOCOL_PARAMETERS = {
    "refit": "True: every method's chosen setting refitted on the whole training set (None: the papers' protocol)",
    "row_scale": "s > 0: every row divided by the public constant s before the private fits (None: s = 1, the papers')",
}

#: Pages that render results with protocol variants but do not take the protocol parameters: the MPL
#: pages are one template for four data sets, and only KDD-99 has a variant (rows ÷ 4); the RUIJIN
#: page's variants cover only the MNIST panel of one of its three grids. Both run from the command
#: line or their functions here (:func:`protocols_mpl_kdd_row_scale`, :func:`protocols_pptl_fig4_refit`, …).
PAGES_WITHOUT_PROTOCOLS = ("mpl_kdd", "ruijin_transfer")


def page_protocols(page):
    """The protocol parameters of book page ``page``: ``{parameter: {grid: its variant experiment}}``.

    ``"refit"`` when some grid of the page has a refit variant, ``"row_scale"`` when some grid has
    a row-scale variant; ``{}`` for a page without variants (or one of :data:`PAGES_WITHOUT_PROTOCOLS`).
    """
    from dpstack.companion.variants import PRIMARY

    if page in PAGES_WITHOUT_PROTOCOLS:
        return {}
    grids = page_experiments().get(page, [page] if page in PRIMARY else [])
    out = {}
    for param, key in (("refit", "refit"), ("row_scale", "row_scale")):
        variants = {g: PRIMARY[g][key] for g in grids if g in PRIMARY and PRIMARY[g][key]}
        if variants:
            out[param] = variants
    return out


def _check_protocol(page, refit, row_scale):
    """Check a page's protocol parameters; ``(label, parameter)`` of the chosen protocol, or ``(None, None)``."""
    available = page_protocols(page)
    if refit is not None and not isinstance(refit, bool):
        raise ParameterError(f"refit must be None or a bool, got {refit!r}")
    if row_scale is not None and not (_real(row_scale) and math.isfinite(row_scale) and row_scale > 0):
        raise ParameterError(f"row_scale must be None or a finite number > 0, got {row_scale!r}")
    use_refit = bool(refit)
    use_scale = row_scale is not None and float(row_scale) != 1.0
    if use_refit and use_scale:
        raise ParameterError(
            f"refit={refit!r} and row_scale={row_scale!r}: one protocol at a time (no variant combines them)"
        )
    for param, used in (("refit", use_refit), ("row_scale", use_scale)):
        if used and param not in available:
            raise ParameterError(f"{param}: page {page!r} has no {param.replace('_', ' ')} variant")
    if use_refit:
        return "refit on train+validation", "refit"
    if use_scale:
        return f"rows ÷ {float(row_scale):g}", "row_scale"
    return None, None


class PageParameters(dict):
    """A page's knob values (``{parameter: value}``, ``None``: the profile's value) and its runs.

    What :func:`check_page_parameters` returns; a page gets its tables from :meth:`frame` (the
    committed results when nothing differs from them, else computed live, once per grid) and
    has :func:`dpstack.companion.show.live_box` at its top: nothing for the committed results, a box saying what this
    live run changed otherwise.
    """

    def __init__(self, values, page, mapping, profile=COMMITTED_PROFILE, seed=0, n_jobs=1, refit=None, row_scale=None):
        super().__init__(values)
        self.page = page
        self.mapping = mapping
        self.profile = profile
        self.seed = seed
        self.n_jobs = n_jobs
        self.refit = refit
        self.row_scale = row_scale
        self.protocol, self._protocol_param = _check_protocol(page, refit, row_scale)
        self.runs = {}

    def variant(self, experiment=None):
        """The registered variant experiment one grid runs under the chosen protocol (None: the grid itself)."""
        exp = self._experiment(experiment)
        if self.protocol is None:
            return None
        return page_protocols(self.page)[self._protocol_param].get(exp)

    @property
    def experiments(self):
        """The page's grids, in order."""
        return list(dict.fromkeys(exp for exp, _ in self.mapping.values()))

    def knobs_of(self, experiment):
        """Knob values of one grid of the page (by the grid's own knob names)."""
        return {key: self[param] for param, (exp, key) in self.mapping.items() if exp == experiment and param in self}

    def _experiment(self, experiment):
        if experiment is None:
            if len(self.experiments) != 1:
                raise ValueError(f"page {self.page!r} has several grids: name one of {self.experiments}")
            return self.experiments[0]
        if experiment not in self.experiments:
            raise KeyError(f"{experiment!r} is not a grid of page {self.page!r}; its grids: {self.experiments}")
        return experiment

    def differences(self, experiment=None):
        """What the grid's run differs in from the committed profile (see :func:`differences`).

        Under a protocol parameter, a grid with that variant also differs in ``"protocol"``.
        """
        exp = self._experiment(experiment)
        out = differences(exp, self.profile, self.seed, **self.knobs_of(exp))
        if self.variant(exp) is not None:
            out = {"protocol": (self.protocol, "the papers' protocol"), **out}
        return out

    @property
    def live(self):
        """Whether any grid of the page differs from the committed profile (the page is computed live)."""
        return any(self.differences(exp) for exp in self.experiments)

    def run(self, experiment=None):
        """The :class:`LiveResult` of one grid (computed once; the committed result when nothing differs)."""
        exp = self._experiment(experiment)
        if exp not in self.runs:
            variant = self.variant(exp)
            if variant is None:
                self.runs[exp] = run(
                    exp, profile=self.profile, seed=self.seed, n_jobs=self.n_jobs, **self.knobs_of(exp)
                )
            else:
                self.runs[exp] = self._run_variant(exp, variant)
        return self.runs[exp]

    def _run_variant(self, exp, variant):
        """The grid's variant run, as a :class:`LiveResult` with the grid's own columns (rows of this scale)."""
        from dpstack.companion.variants import as_primary

        values = self.knobs_of(exp)
        if self._protocol_param == "row_scale":
            s = float(self.row_scale)
            stored = knobs(variant)["row_scales"].profile_value(self.profile)
            if s not in [float(v) for v in stored]:  # a scale the stored variant lacks: computed for s alone
                values["row_scales"] = [s]
        result = run(variant, profile=self.profile, seed=self.seed, n_jobs=self.n_jobs, **values)
        frame = result.frame
        if self._protocol_param == "row_scale":
            frame = frame[frame["row_scale"] == float(self.row_scale)]
        frame = as_primary(frame, exp)
        frame.attrs = dict(result.frame.attrs)
        return LiveResult(
            frame=frame,
            name=variant,
            source=result.source,
            parameters=dict(result.parameters, protocol=self.protocol),
            differences={"protocol": (self.protocol, "the papers' protocol"), **result.differences},
            wall_time_s=result.wall_time_s,
            n_jobs=result.n_jobs,
        )

    def frame(self, experiment=None):
        """The table of one grid (``experiment``: needed on a page with several grids)."""
        return self.run(experiment).frame


def knobs_table(pages=None):
    """Every experiment page's knob parameters, one row each, for the page on re-running the book.

    Columns: ``page`` (the notebook's name), ``parameter``, ``grid`` (the registered experiment it
    reaches; empty on a page with one grid), ``what`` and ``paper`` (the committed profile's value;
    a ``None`` on the page means it).
    """
    rows = []
    for page in pages or [p for p in page_experiments() if p not in PAGES_WITHOUT_KNOBS]:
        mapping = page_knobs(page)
        several = len(set(exp for exp, _ in mapping.values())) > 1
        for param, (exp, key) in mapping.items():
            knob = knobs(exp)[key]
            rows.append(
                {
                    "page": page,
                    "parameter": param,
                    "grid": exp if several else "",
                    "what": knob.help,
                    "paper": short_text(plain(knob.profile_value(COMMITTED_PROFILE)), limit=5),
                }
            )
    return pd.DataFrame(rows, columns=["page", "parameter", "grid", "what", "paper"])


def check_page_parameters(namespace, name, *common):
    """What a page's check cell calls when its parameters cell holds the knobs of page (or experiment) ``name``.

    ``namespace`` is the notebook's ``globals()``; ``common`` names the page's other parameters
    (``"profile"``, ``"n_jobs"``, ``"seed"``), checked by
    :func:`dpstack.companion.parameters.check_parameters`. A name papermill injected that the
    page does not declare is refused at once, listing the page's parameters. Each knob found in
    ``namespace`` is checked by :func:`check_knobs` (``None``: the profile's value). The knob
    parameters are those of :func:`page_knobs` (prefixed per grid on a page with several).

    Returns
    -------
    PageParameters
        The knob values (a dict), with :meth:`PageParameters.frame` and
        :func:`dpstack.companion.show.live_box` for the page.
    """
    from dpstack.companion.parameters import check_parameters, injected_parameters

    mapping = page_knobs(name)
    protocol_params = list(page_protocols(name))
    declared = list(common) + list(mapping) + protocol_params
    unknown = [n for n in injected_parameters(namespace) if n not in declared]
    if unknown:
        raise ParameterError(
            f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: this page's "
            f"parameters are {', '.join(declared)}"
        )
    check_parameters({k: v for k, v in namespace.items() if k != "In"}, *common)
    values = {p: namespace[p] for p in mapping if p in namespace}
    for exp in dict.fromkeys(e for e, _ in mapping.values()):
        try:
            check_knobs(exp, {key: values[p] for p, (e, key) in mapping.items() if e == exp and p in values})
        except ParameterError as exc:
            if len(set(e for e, _ in mapping.values())) == 1:
                raise
            prefix = _grid_prefix(name, exp) if exp != name else ""
            raise ParameterError(f"{exc} (on this page the knobs of {exp} are prefixed {prefix!r})") from None
    return PageParameters(
        values,
        name,
        mapping,
        profile=namespace.get("profile", COMMITTED_PROFILE),
        seed=namespace.get("seed", 0),
        n_jobs=namespace.get("n_jobs", 1),
        refit=namespace.get("refit") if "refit" in protocol_params else None,
        row_scale=namespace.get("row_scale") if "row_scale" in protocol_params else None,
    )


def plain(value):
    """A knob's value as plain JSON data (a mapping's keys, a tuple as a list)."""
    if isinstance(value, dict):
        return list(value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        return value
    return value


def profile_values(name, profile=COMMITTED_PROFILE):
    """Each knob's value in ``profile`` (variants by name), for :func:`differences`."""
    return {k: plain(knob.profile_value(profile)) for k, knob in knobs(name).items()}


def _same(a, b):
    a, b = plain(a), plain(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if _real(a) and _real(b):
        return float(a) == float(b)
    return a == b


def differences(name, profile="paper", seed=None, **values):
    """What a run differs in from the committed ``paper`` profile: ``{parameter: (requested, committed)}``.

    The profile itself counts (``"profile": ("quick", "paper")``), the seed likewise (``None``:
    the experiment's own root seed); a knob set to the profile's own value does not.
    """
    from dpstack.companion.results import get

    committed = profile_values(name, COMMITTED_PROFILE)
    resolved = profile_values(name, profile)
    out = {}
    if profile != COMMITTED_PROFILE:
        out["profile"] = (profile, COMMITTED_PROFILE)
    own = get(name).seed
    if seed is not None and seed != own:
        out["seed"] = (seed, own)
    for key in knobs(name):
        value = values.get(key)
        requested = resolved[key] if value is None else plain(value)
        if not _same(requested, committed[key]):
            out[key] = (requested, committed[key])
    return out


def short_text(value, limit=6):
    """``repr(value)``, a long list cut to its first values and its length."""
    if isinstance(value, list) and len(value) > limit:
        return "[" + ", ".join(map(repr, value[: limit - 1])) + f", … ({len(value)} values)]"
    return repr(value)


@dataclass
class LiveResult:
    """What :func:`run` returns.

    Attributes
    ----------
    frame : pandas.DataFrame
        The tidy table (as the page's ``load_or_run`` would give it, with its provenance summary
        in ``frame.attrs["provenance"]``).
    name : str
        The experiment.
    source : str
        ``"committed"`` (the committed paper-profile result) or ``"live"`` (computed now).
    parameters : dict
        The knobs and common parameters as given (``None``: the profile's value).
    differences : dict
        ``{parameter: (this run's value, the committed profile's value)}``; empty for the
        committed result.
    wall_time_s : float
        Wall time of this call (a committed result is read in well under a second; its own
        computation's wall time is in the provenance).
    n_jobs : int
        Workers of a live computation.
    """

    frame: pd.DataFrame
    name: str
    source: str
    parameters: dict = field(default_factory=dict)
    differences: dict = field(default_factory=dict)
    wall_time_s: float = 0.0
    n_jobs: int = 1

    @property
    def description(self):
        """One paragraph for the top of a page: committed or live, what differs, wall time, ``n_jobs``."""
        if self.source == "committed":
            prov = self.frame.attrs.get("provenance") or {}
            return (
                f"Committed results of the {COMMITTED_PROFILE} profile (`results/{self.name}/{COMMITTED_PROFILE}.csv`, "
                f"computed {str(prov.get('date', '?'))[:10]} with n_jobs = {prov.get('n_jobs', '?')} in "
                f"{float(prov.get('wall_time_s', float('nan'))):.0f} s)."
            )
        changed = "; ".join(
            f"{k} = {short_text(new)} (committed: {short_text(old)})" for k, (new, old) in self.differences.items()
        )
        return (
            f"**Computed live**, not the committed results: {changed or 'the committed parameters'}. "
            f"Wall time {self.wall_time_s:.1f} s with n_jobs = {self.n_jobs}. The verdicts below are those "
            "of this run, not of the papers' scale."
        )


def grid_overrides(name, values):
    """The keyword arguments of the experiment's grid function for checked knob ``values`` (``None`` dropped)."""
    table = knobs(name)
    out = {}
    for key, value in values.items():
        if value is None:
            continue
        to_grid = table[key].to_grid
        out[key] = to_grid(value) if to_grid is not None else (list(value) if isinstance(value, tuple) else value)
    return out


def run(name, *, profile=COMMITTED_PROFILE, seed=None, n_jobs=1, cache=False, **values):
    """Run experiment ``name`` with its knobs; the committed result when nothing differs from it.

    Parameters
    ----------
    name : str
        A registered experiment (:func:`dpstack.companion.results.experiments`).
    profile : {"paper", "quick"}, default="paper"
        The grids and repeats of every knob left at ``None``.
    seed : int, optional
        Root seed (default: the experiment's own, 0 unless it is the variant "another seed").
    n_jobs : int, default=1
        Workers of a live computation (``-1``: every core).
    cache : bool or path-like, default=False
        The runner's cell cache (a re-run resumes where an interrupted one stopped).
    **values
        The experiment's knobs (:func:`knobs`); ``None`` means the profile's value.

    Returns
    -------
    LiveResult

    Raises
    ------
    ParameterError
        Before any work, for an unknown parameter (listing the valid ones) or an unusable value.
    """
    from dpstack.companion.results import get, load_or_run

    seed = get(name).seed if seed is None else seed
    check_knobs(name, {"profile": profile, "seed": seed, "n_jobs": n_jobs, "cache": cache, **values})

    overrides = grid_overrides(name, values)
    t0 = time.perf_counter()
    frame = load_or_run(name, profile=profile, seed=seed, n_jobs=n_jobs, cache=cache, **overrides)
    wall = time.perf_counter() - t0
    source = (frame.attrs.get("provenance") or {}).get("source", "live")
    diff = {} if source == "committed" else differences(name, profile, seed, **values)
    return LiveResult(
        frame=frame,
        name=name,
        source=source,
        parameters=dict(values, profile=profile, seed=seed, n_jobs=n_jobs),
        differences=diff,
        wall_time_s=wall,
        n_jobs=n_jobs,
    )


# ------------------------------------------------------------------------------------------ one function per experiment
_EXPERIMENT_NAMES = (
    "mpl_har",
    "mpl_kdd",
    "mpl_url",
    "mpl_mnist10",
    "pst_fig1_epsilon",
    "pst_fig2_groups",
    "pst_fig3_importance",
    "pst_fig4_combiners",
    "pst_alternatives",
    "mpl_alternatives",
    "pptl_table1_mnist",
    "pptl_table1_mnist_nonprivate",
    "pptl_alternatives",
    "ruijin_transfer_branches",
    "ruijin_transfer_epsilon",
    "ruijin_transfer_groups",
    "stacking_ablation_pst",
    "stacking_ablation_transfer",
    "stacking_ablation_grids",
    "stacking_ablation_grids_transfer",
    "stacking_ablation_choices",
    "stacking_ablation_swing",
    "end_to_end_private",
    "protocols_pst_fig1_refit",
    "protocols_pst_fig1_row_scale",
    "protocols_pptl_table1_refit",
    "protocols_pptl_table1_row_scale",
    "protocols_pst_fig2_refit",
    "protocols_pst_fig2_row_scale",
    "protocols_pst_fig3_refit",
    "protocols_pst_fig3_row_scale",
    "protocols_pst_fig4_refit",
    "protocols_pst_fig4_row_scale",
    "protocols_pptl_fig4_refit",
    "protocols_pptl_fig4_row_scale",
    "protocols_mpl_kdd_row_scale",
    "protocols_pst_fig1_another_seed",
    "protocols_pst_fig2_another_seed",
    "protocols_pst_fig3_another_seed",
    "protocols_pst_fig4_another_seed",
    "protocols_pptl_table1_another_seed",
    "protocols_pptl_fig4_another_seed",
    "protocols_mpl_kdd_another_seed",
)


def _page_function(name):
    def call(*, profile=COMMITTED_PROFILE, seed=None, n_jobs=1, cache=False, **values):
        return run(name, profile=profile, seed=seed, n_jobs=n_jobs, cache=cache, **values)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = (
        f"Run the registered experiment ``{name!r}`` with its knobs (see :func:`run`; ``None``: the profile's value).\n\n"
        f"The knobs are listed by ``dpstack.companion.live.knobs({name!r})``.\n\n"
        "Returns\n-------\nLiveResult\n"
    )

    return call


for _name in _EXPERIMENT_NAMES:
    globals()[_name] = _page_function(_name)
    __all__.append(_name)
del _name
