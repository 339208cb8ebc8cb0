"""MPL against today's alternatives: the grid of the page that sets the paper's methods beside modern multiparty learners.

Same data and split as MPL's KDD-99 page (:func:`~dpstack.companion.papers.mpl.grids.mpl_trial`):
KDD-99's 10 % file (123 one-hot features, data-independent scaling), M parties of 22 rows and
43,000 unlabelled auxiliary rows drawn by the first child of the repeat's seed sequence exactly as
there, so repeat r of this grid and repeat r of the KDD page share their parties, auxiliary rows and
test file, and the comparisons are paired. The paper's methods (vote, soft, avg) and the references
(batch, indiv) are read from the KDD page's committed result; this grid computes, on the same local
models (the parties' λ-regularised logistic regressions, λ = the paper's 10⁻⁴):

* **PATE-GNMax** (Papernot et al. 2018): the local models vote on :data:`GNMAX_QUERIES` auxiliary
  rows drawn at random (public rows, public randomness); each vote histogram gets N(0, σ²) noise on
  every count and the noisy plurality is the label; a logistic regression with the paper's λ is fitted
  on the labelled rows (the "student"). σ is set by the **data-independent** accounting
  (:func:`dpstack.alternatives.gnmax_sigma`, PLD): that is the released guarantee. The
  data-dependent bound of the paper (:mod:`dpstack.alternatives.pate_bounds`) is computed on the
  same votes only as a diagnostic column (``epsilon_data_dependent``), never as a guarantee: it is a
  function of the private votes.
* **DP-FedAvg** with party-level DP (McMahan et al. 2018): :data:`FEDAVG` — Poisson sampling of
  parties, local gradient steps, each party's update clipped, Gaussian noise on the sum, under
  replace-one of a party (the paper's relation), PLD accounting. No auxiliary data; many rounds of
  interaction.
* **soft + Gaussian noise**: MPL soft's unperturbed model w_s (the same fit) released with Gaussian
  noise of its L2 sensitivity 2/(Mλ) instead of the Gamma-norm noise of pure ε: (ε, δ), replace-one
  of a party. It isolates what the pure-ε, d-dimensional noise costs from the method.

The (ε, δ) methods use δ = :data:`DELTA` (below 1/M for every M). Their hyper-parameters are fixed
in advance, the same for every ε and M, none tuned on the private data (the paper's methods use the
paper's λ, also fixed). Each cell is one (M, split): the local models and votes are computed once
and serve every ε, as on the KDD page.
"""

from __future__ import annotations

import numpy as np

from dpstack.alternatives import (
    DPFederatedAveragingClassifier,
    gaussian_noise_multiplier,
    gnmax_aggregate,
    gnmax_sigma,
)
from dpstack.alternatives.pate_bounds import gnmax_epsilon_data_dependent
from dpstack.companion.papers.mpl.grids import CLASSES, DATASETS, load_mpl_dataset
from dpstack.mechanisms import clip_rows
from dpstack.multiparty import fit_methods, split_auxiliary_and_parties
from dpstack.multiparty.logistic import fit_soft_target_logistic

__all__ = [
    "ALTERNATIVE_METHODS",
    "PAPER_METHODS",
    "REFERENCES",
    "DELTA",
    "GNMAX_QUERIES",
    "FEDAVG",
    "GUARANTEES",
    "PROFILES",
    "PAPER_INV_EPSILONS",
    "alternatives_cells",
    "alternatives_trial",
]

ALTERNATIVE_METHODS = ("PATE-GNMax", "DP-FedAvg", "soft + Gaussian noise")
#: the paper's private methods and its non-private references, read from the KDD page's committed result
PAPER_METHODS = ("vote", "soft", "avg")
REFERENCES = ("batch", "indiv")
#: δ of the (ε, δ) methods: below 1/M for M ≤ 20,000 parties
DELTA = 1e-5
#: GNMax answers this many auxiliary rows (of 43,000)
GNMAX_QUERIES = 1000
#: DP-FedAvg's settings, fixed in advance: rounds, the probability a party takes part in a round,
#: the clipping norm of a party's update, local gradient steps per round
FEDAVG = dict(n_rounds=200, party_fraction=0.02, clip=0.5, local_steps=5)

#: The 1/ε grid of the paper profile: the KDD page's without 1/ε = 0.01 and 0.03 (ε = 100 and 33, where
#: every method is at its noiseless accuracy), to keep the grid within its compute budget on two cores
PAPER_INV_EPSILONS = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0)
#: quick: one split, two M values, two noise draws (a page in about a minute); paper: the KDD page's
#: first 6 splits (of its 30; the paper reports 10: cut to keep within the compute budget on the shared
#: machine) × 10 noise draws
PROFILES = {
    "quick": dict(n_trials=1, n_noise=2, n_parties=(5000, 20000), inv_epsilons=PAPER_INV_EPSILONS),
    "paper": dict(n_trials=6, n_noise=10, n_parties=(5000, 10000, 20000), inv_epsilons=PAPER_INV_EPSILONS),
}

#: What each method of the page guarantees: (guarantee, neighbouring relation, privacy unit, what it
#: assumes beyond public hyper-parameters and a public norm bound).
GUARANTEES = {
    "vote": ("pure ε", "replace-one", "one party", "public unlabelled auxiliary data; one round"),
    "soft": ("pure ε", "replace-one", "one party", "public unlabelled auxiliary data; one round"),
    "avg": ("pure ε", "replace-one", "one party", "one round"),
    "PATE-GNMax": (
        "(ε, δ)",
        "replace-one",
        "one party (one teacher)",
        f"public unlabelled auxiliary data ({GNMAX_QUERIES:,} rows answered); one round; PLD accounting",
    ),
    "DP-FedAvg": (
        "(ε, δ)",
        "replace-one",
        "one party",
        f"{FEDAVG['n_rounds']} rounds of interaction, parties sampled at random "
        f"(q = {FEDAVG['party_fraction']:g}); PLD accounting",
    ),
    "soft + Gaussian noise": (
        "(ε, δ)",
        "replace-one",
        "one party",
        "public unlabelled auxiliary data; one round; PLD accounting",
    ),
}


def alternatives_cells(
    profile="quick", n_parties=None, inv_epsilons=None, n_trials=None, n_noise=None, methods=None, lam=1e-4
):
    """The cells of the page: one per (M, split) of MPL KDD-99's grid, each computing ``methods`` at every 1/ε."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
    methods = list(ALTERNATIVE_METHODS if methods is None else methods)
    unknown = [m for m in methods if m not in ALTERNATIVE_METHODS]
    if unknown or not methods:
        raise ValueError(f"methods must be taken from {list(ALTERNATIVE_METHODS)}, got {methods}")
    p = PROFILES[profile]
    cfg = DATASETS["kdd"]
    grid = p["n_parties"] if n_parties is None else tuple(np.atleast_1d(n_parties))
    return [
        dict(
            dataset="kdd",
            n_parties=int(M),
            party_size=int(cfg["party_size"]),
            n_aux=int(cfg["n_aux"]),
            inv_epsilons=[float(v) for v in (p["inv_epsilons"] if inv_epsilons is None else inv_epsilons)],
            n_noise=int(n_noise or p["n_noise"]),
            lam=float(lam),
            methods=methods,
            repeat=r,
        )
        for M in grid
        for r in range(int(n_trials or p["n_trials"]))
    ]


def _accuracy(X, y, coefs):
    """Accuracy of each of R binary linear models (R, d) on (X, y) with labels 0/1 (margin ≥ 0 → 1)."""
    return list(((X @ np.atleast_2d(coefs).T >= 0).astype(int) == y[:, None]).mean(axis=0))


def alternatives_trial(
    dataset,
    n_parties,
    party_size,
    n_aux,
    inv_epsilons,
    n_noise,
    lam=1e-4,
    methods=ALTERNATIVE_METHODS,
    *,
    seed_sequence,
    **_,
):
    """One (M, split): the KDD page's split and local models, then every alternative at every 1/ε.

    The split is drawn from the first child of ``seed_sequence`` as
    :func:`~dpstack.companion.papers.mpl.grids.mpl_trial` draws it; the alternatives' randomness
    comes from its fourth child (the KDD page uses the first three).

    Returns
    -------
    list of dicts
        method, inv_epsilon, draw, accuracy, noise_multiplier (σ over the sensitivity; for GNMax σ
        on the counts), epsilon_data_dependent and epsilon_rdp (GNMax: the diagnostic bound and the
        data-independent ε by the same RDP conversion; NaN otherwise), agreement (GNMax: share of
        answers equal to the noiseless plurality), soft_check (the test accuracy of soft's
        unperturbed model: equal to the KDD page's soft at 1/ε = 0 for the same split),
        steps_outside_guarantee.
    """
    split_ss, _, _, own_ss = seed_sequence.spawn(4)
    query_ss, gnmax_ss, fed_ss, gauss_ss = own_ss.spawn(4)
    X_tr, y_tr, X_te, y_te = load_mpl_dataset(dataset)
    aux_idx, priv_idx, parties = split_auxiliary_and_parties(
        X_tr.shape[0], n_parties, party_size, n_aux, np.random.default_rng(split_ss)
    )
    Xa, Xp, Xt = np.asarray(X_tr[aux_idx]), np.asarray(X_tr[priv_idx]), np.asarray(X_te)
    yp, y_te = np.asarray(y_tr[priv_idx]), np.asarray(y_te)
    classes = np.asarray(CLASSES[dataset])
    # An analysis, not a release: soft's fit keeps its diagnostics (the local models' votes and the
    # unperturbed w_s; such an object is not private and is never published). The releases below are
    # functions of them plus noise, exactly as the mechanisms would compute them.
    soft = fit_methods(("soft",), Xp, yp, parties, Xa, epsilon=np.inf, lam=lam, classes=classes, diagnostics=True)[
        "soft"
    ]
    w_s = soft.diagnostics_.unperturbed_coef[0]
    Xt_clipped = clip_rows(Xt, 1.0)
    soft_check = _accuracy(Xt_clipped, y_te, w_s)[0]
    rows = []

    def add(method, inv, draw, accuracy, **extra):
        rows.append(
            dict(
                method=method,
                inv_epsilon=float(inv),
                draw=draw,
                accuracy=float(accuracy),
                noise_multiplier=extra.get("noise_multiplier", np.nan),
                epsilon_data_dependent=extra.get("epsilon_data_dependent", np.nan),
                epsilon_rdp=extra.get("epsilon_rdp", np.nan),
                agreement=extra.get("agreement", np.nan),
                soft_check=soft_check,
                steps_outside_guarantee="",
            )
        )

    if "PATE-GNMax" in methods:
        queries = np.random.default_rng(query_ss).choice(
            Xa.shape[0], size=min(GNMAX_QUERIES, Xa.shape[0]), replace=False
        )
        votes = soft.diagnostics_.vote_counts[queries]
        Xq = clip_rows(Xa[queries], 1.0)
        plurality = np.argmax(votes, axis=1)
        for inv in inv_epsilons:
            sigma = 0.0 if inv == 0 else gnmax_sigma(1.0 / inv, DELTA, len(queries))
            dd, di = (np.nan, np.nan) if inv == 0 else gnmax_epsilon_data_dependent(votes, sigma, DELTA)
            rng = np.random.default_rng(gnmax_ss.spawn(1)[0])
            for r in range(1 if inv == 0 else n_noise):
                labels = gnmax_aggregate(votes, sigma, rng)
                W, _ = fit_soft_target_logistic(Xq, labels.astype(float), lam)
                add(
                    "PATE-GNMax",
                    inv,
                    r,
                    _accuracy(Xt_clipped, y_te, W[0])[0],
                    noise_multiplier=sigma,
                    epsilon_data_dependent=dd,
                    epsilon_rdp=di,
                    agreement=float(np.mean(labels == plurality)),
                )
    if "soft + Gaussian noise" in methods:
        for inv in inv_epsilons:
            z = 0.0 if inv == 0 else gaussian_noise_multiplier(1.0 / inv, DELTA, 1, neighbouring="add/remove")
            # the sensitivity 2/(Mλ) is already the replace-one one: the Gaussian is accounted as a plain shift by it
            rng = np.random.default_rng(gauss_ss.spawn(1)[0])
            draws = 1 if inv == 0 else n_noise
            eta = z * soft.sensitivity_ * rng.standard_normal((draws, w_s.size))
            for r, a in enumerate(_accuracy(Xt_clipped, y_te, w_s + eta)):
                add("soft + Gaussian noise", inv, r, a, noise_multiplier=z)
    if "DP-FedAvg" in methods:
        for inv in inv_epsilons:
            fed = DPFederatedAveragingClassifier(
                epsilon=np.inf if inv == 0 else 1.0 / inv,
                delta=DELTA,
                lam=lam,
                neighbouring="replace-one",
                accountant="PLD",
                random_state=fed_ss.spawn(1)[0],
                classes=classes,
                **FEDAVG,
            ).fit(Xp, yp, parties)
            add("DP-FedAvg", inv, 0, fed.score(Xt, y_te), noise_multiplier=fed.noise_multiplier_)
    return rows
