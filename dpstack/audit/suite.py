"""The estimators and mutants :func:`~dpstack.audit.audit_estimator` is run on, and their tables.

:func:`audit_cases` gives every dpstack estimator at the audit's default size (small public
synthetic data), transfer with ε_s ≠ ε_t included; :func:`mutant_cases` gives one deliberately
broken estimator per blind spot with the check that must catch it. :func:`audit_table` and
:func:`mutant_table` run the audit on them; :func:`check_catalogue` says what each check
catches and measures its power on the mutants. The book's audit chapter and
``tests/test_audit_estimator.py`` use these.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from dpstack.audit import mutants as mu
from dpstack.linear import FeatureSplitLogisticRegression, PrivateLogisticRegression
from dpstack.multiparty import MultipartyPrivateClassifier
from dpstack.stacking import PrivateStackingClassifier
from dpstack.transfer import PrivateTransferStacking, SimComb
from dpstack.tuning import PrivateParameterTuning

from .._validation import check_random_state
from .checks import CHECKS, FAIL, audit_estimator
from .report import audit_data

__all__ = [
    "mpl_audit_data",
    "audit_cases",
    "mutant_cases",
    "audit_table",
    "mutant_table",
    "check_catalogue",
    "scale_power",
    "CHECK_TEXT",
]

#: what each check looks at and the bug class it catches
CHECK_TEXT = {
    "fresh_entropy": ("two fits with random_state=None", "a default seed"),
    "no_seed": ("the whole fitted object, nested levels included", "a kept seed, Generator or SeedSequence"),
    "streams": ("the noise of every level, domain and method of one fit", "seeds shared across levels or methods"),
    "function": ("predictions vs a predictor rebuilt from the release", "a predictor using anything but the release"),
    "attributes": ("every public attribute, one record replaced", "an attribute computed from the data"),
    "private": ("every attribute, private and nested ones included, one record replaced", "a model kept privately"),
    "neighbours": ("the same over the privacy unit: positions, source rows, a party, its size", "a party-size leak"),
    "split": ("a composed model's parts on neighbours, one seed", "overlapping parts, a split that reads the data"),
    "law": ("the law of the noise at the ledger's ε", "noise calibrated for another ε than the ledger's"),
    "canaries": (
        "the law and the identity of the noise on public data far inside and outside the bound, unequal parties",
        "a sensitivity taken from the data, clipping of the wrong norm, parties weighted by size",
    ),
    "exact": ("the exact loss of each level at the ledger's ε", "a level spending another part's or domain's ε"),
    "blackbox": (
        "the whole release vector, canaries, learned distinguishers and the likelihood ratio under the declared law",
        "any large leak the release shows",
    ),
    "tuning": (
        "the parts and the selection of private tuning, held-out and training records changed",
        "a selection with the wrong sensitivity, a utility scored on the training rows",
    ),
    "composition": ("the ledger's ε per domain", "a ledger above the claim"),
}


def mpl_audit_data(n_parties=7, party_size=4, n_aux=20, n_features=4, random_state=0):
    """A small multiparty dataset: ``(X, y, {"parties": …, "X_aux": …})``."""
    rng = check_random_state(random_state)
    n = n_parties * party_size
    X = rng.normal(size=(n, n_features)) / np.sqrt(n_features)
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    X_aux = rng.normal(size=(n_aux, n_features)) / np.sqrt(n_features)
    return X, y, {"parties": np.repeat(np.arange(n_parties), party_size), "X_aux": X_aux}


def _data():
    X, y = audit_data(random_state=0)
    Xs, ys = audit_data(n_samples=80, random_state=1)
    return X, y, {"X_source": Xs, "y_source": ys}


def _settings(epsilon, epsilon_source):
    """The data of the cases — one sample (X, y), multiparty, transfer — and the parameters they share."""
    X, y, src = _data()
    Xm, ym, mp = mpl_audit_data()
    eps = float(epsilon)
    data = {"sample": (X, y, {}), "parties": (Xm, ym, mp), "transfer": (X, y, src)}
    params = {
        "plr": dict(epsilon=eps, lam=0.05, classes=[0, 1]),
        "stack": dict(epsilon=eps, n_groups=2, lam=0.05, classes=[0, 1]),
        "pst-f": dict(groups=[[0, 1, 2], [3, 4, 5]]),
        "mpl": dict(epsilon=eps, lam=1.0, classes=[0, 1]),
        "transfer": dict(
            epsilon_source=float(epsilon_source), epsilon_target=eps, lam_source=0.05, lam=0.05, classes=[0, 1]
        ),
        "tuning": (PrivateLogisticRegression(epsilon=eps, classes=[0, 1]), {"lam": [0.01, 0.1, 1.0]}),
    }
    return data, params


def audit_cases(epsilon=1.0, epsilon_source=4.0):
    """Every dpstack estimator at the audit's default size: name → (estimator, X, y, fit_params).

    Transfer models are configured with ε_s = ``epsilon_source`` ≠ ε_t = ``epsilon``.
    """
    data, p = _settings(epsilon, epsilon_source)
    eps, es = float(epsilon), float(epsilon_source)
    plr_fs = dict(groups=[[0, 1, 2], [3, 4], [5]], importance=[0.5, 0.35, 0.15], lam=0.05, classes=[0, 1])
    return {
        "PLR": (PrivateLogisticRegression(**p["plr"]), *data["sample"]),
        "PLR (intercept, Δ > 0)": (
            PrivateLogisticRegression(epsilon=eps, lam=0.002, fit_intercept=True, classes=[0, 1]),
            *data["sample"],
        ),
        "PLR-FS": (FeatureSplitLogisticRegression(epsilon=eps, **plr_fs), *data["sample"]),
        "PST-S": (PrivateStackingClassifier(partition="samples", **p["stack"]), *data["sample"]),
        "PST-F": (PrivateStackingClassifier(group_importance=[0.7, 0.3], **p["pst-f"], **p["stack"]), *data["sample"]),
        f"PPTL-FS (ε_s = {es:g}, ε_t = {eps:g})": (
            PrivateTransferStacking(n_groups=2, **p["transfer"]),
            *data["transfer"],
        ),
        f"SimComb (ε_s = {es:g}, ε_t = {eps:g})": (SimComb(**p["transfer"]), *data["transfer"]),
        "MPL soft": (MultipartyPrivateClassifier("soft", **p["mpl"]), *data["parties"]),
        "MPL vote (auxiliary rows protected)": (
            MultipartyPrivateClassifier("vote", protect_aux=True, **p["mpl"]),
            *data["parties"],
        ),
        "PrivateParameterTuning (PLR)": (PrivateParameterTuning(*p["tuning"], epsilon_select=eps), *data["sample"]),
    }


def _mutant(check, cls, data, *args, **params):
    """One mutant case: (the mutant, X, y, fit_params, the check that must catch it, what it breaks)."""
    return (cls(*args, **params), *data, check, cls.__doc__)


def mutant_cases(epsilon=1.0, epsilon_source=4.0):
    """One mutant per blind spot: name → (estimator, X, y, fit_params, the check that must catch it, the bug)."""
    data, p = _settings(epsilon, epsilon_source)
    eps, es = float(epsilon), float(epsilon_source)
    one, parties = data["sample"], data["parties"]
    plr, stack, pst_f, mpl = p["plr"], p["stack"], p["pst-f"], p["mpl"]
    return {
        "default seed (PLR)": _mutant("fresh_entropy", mu.DefaultSeedPLR, one, **plr),
        "seed kept in the object (PLR)": _mutant("no_seed", mu.SeedKeepingPLR, one, **plr),
        "seeds shared across levels (PST-S)": _mutant("streams", mu.SharedSeedPST, one, partition="samples", **stack),
        "soft and avg share their noise (MPL)": _mutant("streams", mu.SharedNoiseMethodsMPL, parties, "soft", **mpl),
        "predicts with the unperturbed model (PLR)": _mutant("function", mu.UnperturbedPredictPLR, one, **plr),
        "bound from the data's largest norm (PLR)": _mutant("attributes", mu.DataBoundPLR, one, **plr),
        "importances from the data (PST-F)": _mutant("attributes", mu.DataImportancePST, one, **pst_f, **stack),
        f"target levels spend ε_s (PPTL-FS, ε_s = {es:g})": _mutant(
            "exact", mu.SourceEpsilonTargetPPTL, data["transfer"], n_groups=2, **p["transfer"]
        ),
        "noise scale from the smallest party (MPL)": _mutant("neighbours", mu.PartySizeMPL, parties, "soft", **mpl),
        "selection without the factor 2 (tuning)": _mutant(
            "tuning", mu.NoHalfSelectionTuning, one, *p["tuning"], epsilon_select=eps
        ),
        "average weighted by party size (MPL avg)": _mutant(
            "canaries", mu.SizeWeightedAverageMPL, parties, "avg", **mpl
        ),
        "utility scored on the training rows (tuning)": _mutant(
            "tuning", mu.TrainingUtilityTuning, one, *p["tuning"], epsilon_select=eps
        ),
        "feature means released with little noise (PLR)": _mutant("blackbox", mu.NoisyMeanPLR, one, **plr),
        "noise for 10ε (PLR)": _mutant("law", mu.TenfoldEpsilonPLR, one, **plr),
        "bootstrap split (PST-F)": _mutant("split", mu.BootstrapSplitPST, one, **pst_f, **stack),
        "split stratified by the labels (PST-S)": _mutant(
            "split", mu.StratifiedSplitPST, one, partition="samples", **stack
        ),
        "unperturbed model kept privately (PLR)": _mutant("private", mu.KeptSolutionPLR, one, **plr),
        "noise scale from the data's largest norm (PLR)": _mutant("canaries", mu.DataNormNoisePLR, one, **plr),
        "noise drawn in single precision (PLR)": _mutant("law", mu.Float32NoisePLR, one, **plr),
        "Laplace noise per coordinate (PLR)": _mutant("law", mu.LaplacePerCoordinatePLR, one, **plr),
        "each coordinate clipped, not the row (PLR)": _mutant("canaries", mu.LinfClipPLR, one, **plr),
    }


def _first_line(doc):
    """A docstring as one line of plain text (no reStructuredText literals)."""
    return " ".join((doc or "").replace("``", "").strip().split())


def audit_table(cases=None, checks=None, random_state=0, profile="default"):
    """:func:`audit_estimator` on every case; one row per estimator with its verdicts and wall time.

    Returns
    -------
    pandas.DataFrame with ``estimator``, one column per check (its verdict), ``passed``,
    ``failed checks``, ``wall time (s)``; ``attrs["reports"]`` holds the reports.
    """
    cases = audit_cases() if cases is None else cases
    rows, reports = [], {}
    for name, (est, X, y, fp, *_rest) in cases.items():
        t0 = time.perf_counter()
        rep = audit_estimator(est, X, y, checks=checks, random_state=random_state, profile=profile, **fp)
        wall = time.perf_counter() - t0
        reports[name] = rep
        row = {"estimator": name}
        row.update(dict(zip(rep.checks["check"], rep.checks["verdict"])))
        row.update(
            {
                "passed": rep.passed,
                "failed checks": ", ".join(rep.failures["check"]),
                "wall time (s)": wall,
                "CPU time (s)": rep.cpu_time,
            }
        )
        rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs["reports"] = reports
    return table


def mutant_table(cases=None, random_state=0, profile="default"):
    """The full default audit on every mutant: which checks fail, whether the planted check is one of them.

    Returns
    -------
    pandas.DataFrame with ``mutant``, ``bug``, ``planted for``, ``failed checks``, ``caught``
    (the planted check failed), ``caught by the planted check's statistic`` and ``wall time (s)``.
    """
    cases = mutant_cases() if cases is None else cases
    table = audit_table({k: v[:4] for k, v in cases.items()}, random_state=random_state, profile=profile)
    reports = table.attrs["reports"]
    rows = []
    for name, (*_rest, planted, doc) in cases.items():
        rep = reports[name]
        hit = rep.checks.set_index("check").loc[planted]
        rows.append(
            {
                "mutant": name,
                "bug": _first_line(doc).removeprefix("MUTANT: "),
                "planted for": planted,
                "statistic": hit["statistic"],
                "threshold": hit["threshold"],
                "caught": hit["verdict"] == FAIL,
                "failed checks": ", ".join(rep.failures["check"]),
                "wall time (s)": float(table.loc[table["estimator"] == name, "wall time (s)"].iloc[0]),
                "CPU time (s)": rep.cpu_time,
            }
        )
    out = pd.DataFrame(rows)
    out.attrs["reports"] = reports
    return out


def mutant_power(cases=None, n_repeats=5, profile="default"):
    """How often each mutant's planted check catches it over ``n_repeats`` audits (random_state 0, 1, …).

    Returns
    -------
    pandas.DataFrame with ``mutant``, ``planted for``, ``caught`` (count), ``runs`` and ``power``.
    """
    cases = mutant_cases() if cases is None else cases
    rows = []
    for name, (est, X, y, fp, planted, _doc) in cases.items():
        hits = sum(
            audit_estimator(est, X, y, checks=planted, random_state=r, profile=profile, **fp).checks["verdict"].iloc[0]
            == FAIL
            for r in range(int(n_repeats))
        )
        rows.append({"mutant": name, "planted for": planted, "caught": hits, "runs": int(n_repeats)})
    out = pd.DataFrame(rows)
    out["power"] = out["caught"] / out["runs"]
    return out


def check_catalogue(mutants=None, genuine=None, power=None):
    """Check → what it looks at → what it catches → power, measured on the mutant and genuine tables.

    ``power``: the share of the mutants planted for the check that it fails (over the audits of
    :func:`mutant_power` when ``power`` is given, else in the one audit of ``mutants``); ``mutants it
    fails``: every mutant it fails (a check often catches more than its own); ``false positives``:
    the genuine estimators it fails.
    """
    rows = []
    for key in CHECKS:
        looks, catches = CHECK_TEXT[key]
        row = {"check": key, "looks at": looks, "catches": catches}
        if power is not None:
            planted = power[power["planted for"] == key]
            row["power (planted mutants caught)"] = (
                f"{int(planted['caught'].sum())}/{int(planted['runs'].sum())}" if len(planted) else "—"
            )
        elif mutants is not None:
            planted = mutants[mutants["planted for"] == key]
            row["power (planted mutants caught)"] = (
                f"{int(planted['caught'].sum())}/{len(planted)}" if len(planted) else "—"
            )
        if mutants is not None:
            failing = [m for m, f in zip(mutants["mutant"], mutants["failed checks"]) if key in f.split(", ")]
            row["mutants it fails"] = len(failing)
        if genuine is not None and key in genuine:
            row["false positives"] = int((genuine[key] == FAIL).sum())
        rows.append(row)
    return pd.DataFrame(rows)


def scale_power(factors=(0.8, 0.9), profile="power", n_repeats=10, cases=None, checks=None):
    """How often the audit catches noise scaled by each factor: one row per estimator and factor.

    Every estimator of ``cases`` (default :func:`audit_cases`) is wrapped by
    :func:`~dpstack.audit.mutants.scaled_noise` (every noise vector of its ``fit`` multiplied by the
    factor, every attribute truthful; ε_eff ≈ ε/factor) and audited with ``random_state`` 0, 1, …,
    ``n_repeats`` − 1. ``checks``: the statistical checks by default (the others compare exact
    quantities and do not see a scale error; the family of tests is the full audit's).

    Returns
    -------
    pandas.DataFrame with ``estimator``, ``factor``, ``ε_eff``, ``profile``, ``caught``, ``runs``,
    ``caught by`` (check → count) and ``median wall time (s)`` of one audit.
    """
    cases = audit_cases() if cases is None else cases
    checks = ["streams", "law", "canaries", "blackbox"] if checks is None else checks
    rows = []
    for name, (est, X, y, fp, *_rest) in cases.items():
        for c in factors:
            mutant = mu.scaled_noise(est, c)
            caught, walls, by = 0, [], {}
            for r in range(int(n_repeats)):
                t0 = time.perf_counter()
                rep = audit_estimator(mutant, X, y, checks=checks, random_state=r, profile=profile, **fp)
                walls.append(time.perf_counter() - t0)
                caught += not rep.passed
                for key in rep.failures["check"]:
                    by[key] = by.get(key, 0) + 1
            rows.append(
                {
                    "estimator": name,
                    "factor": float(c),
                    "ε_eff": 1.0 / float(c),
                    "profile": profile if isinstance(profile, str) else "custom",
                    "caught": caught,
                    "runs": int(n_repeats),
                    "caught by": ", ".join(f"{k} {v}" for k, v in sorted(by.items())),
                    "median wall time (s)": float(np.median(walls)),
                }
            )
    return pd.DataFrame(rows)
