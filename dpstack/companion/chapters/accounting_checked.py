"""Accounting and tuning, checked: the page that puts numbers on the (ε, δ) of today's alternatives.

The papers' methods are pure ε-DP under replace-one neighbours and need no accountant: their ε
is composed by addition (:class:`dpstack.PrivacyLedger`). Today's alternatives
(:mod:`dpstack.alternatives`) add Gaussian noise over many steps, and their ε depends on how
the steps are accounted for. This module computes, for the page and for anyone who wants the
same numbers for other settings:

* :func:`accountant_table` — one run's ε by the RDP accountant, the PLD accountant and, for
  full-batch runs, Gaussian DP (exact), under both neighbouring relations;
* :func:`noise_table` — the noise multiplier each target ε needs, by relation and accountant;
* :func:`epsilon_against_steps` — ε against the number of steps at a fixed noise multiplier
  (the page's figure);
* :func:`tuning_cost_table` — what choosing among K hyper-parameter candidates on the private
  data costs: K runs composed, Papernot & Steinke's repeat-and-select with a random number of
  candidates (Poisson or geometric), and for a pure ε run Liu & Talwar's random stopping (3ε).

Everything here is computed from public numbers (ε, δ, T, q, z, K): no data is read.
"""

from __future__ import annotations

import math

import pandas as pd

from dpstack.alternatives import (
    epsilon_of,
    gaussian_event,
    gaussian_noise_multiplier,
    gdp_epsilon,
    gdp_mu,
    liu_talwar_epsilon,
    repeat_and_select_epsilon,
)

__all__ = [
    "RELATIONS",
    "DEFAULT_RUNS",
    "accountant_table",
    "noise_table",
    "epsilon_against_steps",
    "tuning_cost_table",
]

RELATIONS = ("replace-one", "add/remove")

#: The runs of the page: (what, steps T, sampling probability q). Full-batch DP-GD with the
#: step counts of the PST comparison, and DP-SGD at a batch of 5 % of the rows.
DEFAULT_RUNS = (
    ("DP-GD, T = 100", 100, 1.0),
    ("DP-GD, T = 500", 500, 1.0),
    ("DP-SGD, q = 0.05, T = 200", 200, 0.05),
    ("DP-SGD, q = 0.01, T = 1000", 1000, 0.01),
)


def accountant_table(epsilon=1.0, delta=1e-5, runs=DEFAULT_RUNS):
    """ε of runs calibrated to (ε, δ) by PLD, as the RDP and PLD accountants and Gaussian DP see them.

    Each run's noise multiplier z is the smallest that the PLD accountant certifies for
    ``epsilon`` at ``delta`` under the run's relation; the table then asks each accountant
    what that z gives. Gaussian DP (μ = √T·Δ/σ, converted exactly) applies to full-batch runs
    only (its subsampled form is a central-limit approximation, not a bound).

    Returns
    -------
    pandas.DataFrame
        One row per (run, relation): ``run``, ``relation``, ``noise multiplier``, ``ε (RDP)`` (NaN
        for a subsampled run under replace-one, which dp-accounting's RDP accountant does not
        analyse), ``ε (PLD)``, ``ε (GDP)`` (NaN for subsampled runs), ``RDP / PLD``.
    """
    rows = []
    for what, steps, q in runs:
        for relation in RELATIONS:
            z = gaussian_noise_multiplier(epsilon, delta, steps, q, neighbouring=relation)
            event = gaussian_event(z, steps, q)
            # dp-accounting's RDP accountant analyses Poisson subsampling under add/remove only
            subsampled_replace = q < 1.0 and relation == "replace-one"
            rdp = math.nan if subsampled_replace else epsilon_of(event, delta, accountant="RDP", neighbouring=relation)
            pld = epsilon_of(event, delta, accountant="PLD", neighbouring=relation)
            gdp = gdp_epsilon(gdp_mu(z, steps, neighbouring=relation), delta) if q == 1.0 else math.nan
            rows.append(
                {
                    "run": what,
                    "relation": relation,
                    "noise multiplier": z,
                    "ε (RDP)": rdp,
                    "ε (PLD)": pld,
                    "ε (GDP)": gdp,
                    "RDP / PLD": rdp / pld,
                }
            )
    return pd.DataFrame(rows)


def noise_table(epsilons=(0.1, 0.5, 1.0, 2.0, 4.0), delta=1e-5, steps=100, sampling_probability=1.0):
    """The noise multiplier z = σ/C that each ε needs, by relation and accountant.

    Returns
    -------
    pandas.DataFrame
        One row per ε: ``ε`` and ``z (<relation>, <accountant>)`` for both relations and the
        PLD and RDP accountants.
    """
    rows = []
    for eps in epsilons:
        row = {"ε": float(eps)}
        for relation in RELATIONS:
            for accountant in ("PLD", "RDP"):
                row[f"z ({relation}, {accountant})"] = gaussian_noise_multiplier(
                    eps, delta, steps, sampling_probability, neighbouring=relation, accountant=accountant
                )
        rows.append(row)
    return pd.DataFrame(rows)


def epsilon_against_steps(noise_multiplier, steps_grid=(1, 10, 30, 100, 300, 1000), delta=1e-5, relation="add/remove"):
    """ε of a full-batch Gaussian run at a fixed noise multiplier against its number of steps T.

    Returns
    -------
    pandas.DataFrame
        One row per T: ``steps``, ``ε (RDP)``, ``ε (PLD)``, ``ε (GDP)``.
    """
    rows = []
    for steps in steps_grid:
        event = gaussian_event(noise_multiplier, int(steps), 1.0)
        rows.append(
            {
                "steps": int(steps),
                "ε (RDP)": epsilon_of(event, delta, accountant="RDP", neighbouring=relation),
                "ε (PLD)": epsilon_of(event, delta, accountant="PLD", neighbouring=relation),
                "ε (GDP)": gdp_epsilon(gdp_mu(noise_multiplier, int(steps), neighbouring=relation), delta),
            }
        )
    return pd.DataFrame(rows)


def tuning_cost_table(epsilon=1.0, delta=1e-5, candidates=(5, 10, 20), steps=200, sampling_probability=0.05):
    """What choosing among K hyper-parameter candidates on the private data costs.

    One training run is DP-SGD calibrated to (``epsilon``, ``delta``) under add/remove (the
    relation of the repeat-and-select analysis). For each K:

    * **K runs, composed** — every candidate trained on the same data, ε of the K-fold
      composition by PLD (what a grid search of K settings costs when it is accounted for);
    * **repeat and select (Poisson / geometric K)** — Papernot & Steinke (2022): the number
      of runs is random with mean K and only the best is released; ε by RDP;
    * **pure ε: K runs** and **pure ε: random stopping** — a pure ε-DP method (the papers' PLR)
      tuned over K candidates by basic composition (Kε) or by Liu & Talwar's random stopping
      with mean K runs (3ε whatever K).

    Returns
    -------
    pandas.DataFrame
        One row per K; the columns above and ``one run`` (the ε of a single run, by PLD).
    """
    z = gaussian_noise_multiplier(epsilon, delta, steps, sampling_probability, neighbouring="add/remove")
    run = gaussian_event(z, steps, sampling_probability)
    single = epsilon_of(run, delta, accountant="PLD")
    rows = []
    for k in candidates:
        rows.append(
            {
                "K": int(k),
                "one run": single,
                "K runs, composed": epsilon_of(gaussian_event(z, steps * int(k), sampling_probability), delta),
                "repeat and select (Poisson K)": repeat_and_select_epsilon(run, delta, k, "poisson"),
                "repeat and select (geometric K)": repeat_and_select_epsilon(run, delta, k, "geometric"),
                "pure ε: K runs": int(k) * float(epsilon),
                "pure ε: random stopping": liu_talwar_epsilon(epsilon, k),
            }
        )
    return pd.DataFrame(rows)
