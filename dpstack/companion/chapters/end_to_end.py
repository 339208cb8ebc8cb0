"""Beyond the papers: PST Figure 1 and PPTL Table 1 with the whole pipeline inside the guarantee.

The papers' protocol (:mod:`dpstack.companion.papers.pst.grids`, :mod:`dpstack.companion.papers.pptl.grids`)
has two steps outside the ε-DP guarantee: **PCA** (and with it the importances of PST-F(W) /
PPTL-FS(W), the PCA variances) is fitted on the private training data, and **λ (and η)** is
chosen by the AUC on a private validation set. The end-to-end protocol replaces both:

* **PCA on public data.** :func:`dpstack.datasets.mnist_pst` / :func:`~dpstack.datasets.mnist_transfer`
  with ``fit_on="public"``: PCA and the variances are fitted on 2,000 further images of the same
  digits, disjoint from every training and test image. *Assumption:* those images are public
  (they play the role of a public data set of the same kind, e.g. a published corpus); under it
  the projection and the importances are constants, independent of the private records. The
  training and test images are the same as in the papers' protocol (same draw).
* **Private selection.** :class:`dpstack.tuning.PrivateParameterTuning` (Chaudhuri, Monteleoni &
  Sarwate 2011, §6): the training set is split into G + 1 disjoint parts, candidate g (the
  ε-DP estimator with the g-th setting of the grid) is fitted on part g, and the winner is
  drawn by the exponential mechanism with utility −(errors on the held-out part),
  sensitivity 1 (one sample), at ε_select = ε. The released model is the winner, trained on
  its part. Total: max(ε, ε) = ε for one sample, read from the released object's ledger.
* **Transfer.** The source organisation fits its source once, at ε_s = ε, with λ_s fixed before
  seeing any data (:data:`LAM_SOURCE`, the library's default); the target's (λ, η) are chosen
  privately on the target. Guarantees: ε for each domain (PPTL Thm 5 / PST Cor. 6), read
  from the ledger with :func:`dpstack.theory.domain_guarantees`.

**What each protocol searches.** The papers' protocol is that of the experiment pages
(:func:`dpstack.companion.papers.pst.grids.stacking_cell`, :func:`dpstack.companion.papers.pptl.grids.transfer_cell`
with their :data:`~dpstack.companion.papers.open_choices.DEFAULT_OPTIONS` and profile grids, spanning
:data:`~dpstack.companion.papers.open_choices.LAM_RANGE`): λ chosen per level (λ_l, then λ_h with the low
level fixed), every method evaluating the same number of candidates (PLR a denser λ grid), no
high-level intercept, the validated model scored without refit. The middle protocol (PST only,
``tuning="validation"``) runs exactly that selection, through
:func:`~dpstack.companion.papers.pst.grids.select_on_validation`, on the public-PCA features. The
end-to-end protocol searches its own, smaller candidate set (``private_lam_grid``,
``private_eta_grid`` of :data:`PROFILES`): each candidate is trained on 1/(G + 1) of the
training data, so the papers' protocol's 20 (quick profile) to 30 (paper profile) PST
candidates would leave each 100-140 of the 3,000 images, its 24 to 60 PPTL candidates 13-32 of
the 800 target images. It searches instead a few λ spread over 1e-4…1e2
(:data:`PRIVATE_LAM_GRID`), where the validation curves of the papers' protocol have their
optimum at finite ε, with λ_h = λ_l (a per-level search needs a second selection, hence a
second split of the data or of ε), times a few η for transfer. Both protocols see the
same images and the same test sets; each cell returns the test AUC, the chosen setting and the ε
the ledger certifies (∞ for the papers' protocol and the middle one).
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pandas as pd

from dpstack.companion import stats
from dpstack.companion.papers.open_choices import DEFAULT_OPTIONS
from dpstack.companion.papers.pptl import grids as pptl
from dpstack.companion.papers.pst import grids as pst
from dpstack.companion.runner import run_cells
from dpstack.linear import PrivateLogisticRegression
from dpstack.stacking import PrivateStackingClassifier
from dpstack.theory import domain_guarantees
from dpstack.transfer import PrivateTransferStacking, SimComb
from dpstack.tuning import PrivateParameterTuning

__all__ = [
    "PROFILES",
    "PRIVATE_LAM_GRID",
    "PST_METHODS",
    "TRANSFER_METHODS",
    "LAM_SOURCE",
    "PROTOCOLS",
    "load_public_task",
    "load_public_transfer_task",
    "pst_end_to_end_cell",
    "transfer_end_to_end_cell",
    "CELL_KINDS",
    "end_to_end_cell",
    "end_to_end_cells",
    "finish_end_to_end",
    "end_to_end",
    "ledger_example",
    "compare",
]

PST_METHODS = ("PLR", "PST-F(U)", "PST-F(W)")
TRANSFER_METHODS = ("PPTL-FS(W)", "SimComb", "Direct")
#: λ of the source model in the end-to-end transfer protocol, fixed before any data are seen
LAM_SOURCE = 0.01
#: the protocols, as they appear in the results: the papers', the end-to-end one, and (PST only) the
#: papers' tuning on the public-PCA features, which separates the cost of the two changes
PROTOCOLS = ("papers' protocol", "end-to-end", "public PCA, λ on validation")

#: The end-to-end protocol's candidates: λ (λ_h = λ_l for the stacked methods), spread over
#: 1e-4…1e2, the range where the validation curves of the papers' protocol have their optimum at
#: finite ε. Few, because each candidate trains on 1/(G + 1) of the data.
PRIVATE_LAM_GRID = (1e-4, 1e-2, 1.0, 100.0)

#: quick: the book (about a minute); paper: the papers' repeats and grids. ``lam_grid`` /
#: ``eta_grid`` (PST: ``lam_grid``; PPTL: ``transfer_lam_grid``, ``eta_grid``) are those of the
#: experiment pages, searched by the papers' protocol and the middle one (per level, equal budget);
#: ``private_lam_grid`` / ``private_eta_grid`` are the end-to-end protocol's candidates (PST:
#: G = |private_lam_grid|; PPTL-FS(W), SimComb: G = |private_lam_grid|·|private_eta_grid|;
#: Direct: G = |private_lam_grid|).
PROFILES = {
    "quick": dict(
        n_repeats=3,
        pst_epsilons=(0.25, 1.0, 4.0),
        transfer_epsilons=(0.5, 2.0, 8.0),
        lam_grid=pst.PROFILES["quick"]["lam_grid"],
        transfer_lam_grid=pptl.TRANSFER_PROFILES["quick"]["lam_grid"],
        eta_grid=pptl.TRANSFER_PROFILES["quick"]["eta_grid"],
        private_lam_grid=PRIVATE_LAM_GRID,
        private_eta_grid=(0.2, 0.8),
        pst_methods=("PLR", "PST-F(W)"),
        transfer_methods=("PPTL-FS(W)", "Direct"),
    ),
    "paper": dict(
        n_repeats=10,
        pst_epsilons=pst.PROFILES["paper"]["epsilons"][:-1],
        transfer_epsilons=pptl.TRANSFER_PROFILES["paper"]["epsilons"],
        lam_grid=pst.PROFILES["paper"]["lam_grid"],
        transfer_lam_grid=pptl.TRANSFER_PROFILES["paper"]["lam_grid"],
        eta_grid=pptl.TRANSFER_PROFILES["paper"]["eta_grid"],
        private_lam_grid=PRIVATE_LAM_GRID,
        private_eta_grid=(0.2, 0.5, 0.8),
        pst_methods=PST_METHODS,
        transfer_methods=TRANSFER_METHODS,
    ),
}


def _profile(profile):
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
    return PROFILES[profile]


@functools.lru_cache(maxsize=2)
def load_public_task(data_seed=0):
    """PST's MNIST 0 vs 8 with PCA and variances fitted on held-out images declared public.

    Same draw of the 5,000 images as :func:`dpstack.companion.papers.pst.grids.load_task` (same
    ``data_seed``); returns (X_train, y_train, X_test, y_test, feature_variance).
    """
    from dpstack.datasets import mnist_pst

    d = mnist_pst(fit_on="public", random_state=data_seed)
    return d.X_train, d.y_train, d.X_test, d.y_test, d.feature_variance


@functools.lru_cache(maxsize=2)
def load_public_transfer_task(data_seed=0):
    """PPTL's MNIST transfer task with PCA fitted on held-out images declared public.

    Same source and target images as :func:`dpstack.companion.papers.pptl.grids.load_transfer_task`;
    returns (X_source, y_source, X_target, y_target, feature_variance).
    """
    from dpstack.datasets import mnist_transfer

    d = mnist_transfer(fit_on="public", random_state=data_seed)
    return d.X_source, d.y_source, d.X_target, d.y_target, d.feature_variance


def _pst_template(method, epsilon, importance, n_groups):
    """The estimator of the papers' protocol (the defaults of dpstack.companion.papers.pst.grids), untuned.

    λ_h is tied to λ_l (the end-to-end candidates are set by :func:`_lam_grid`).
    """
    o = DEFAULT_OPTIONS
    if method == "PLR":
        return PrivateLogisticRegression(epsilon=epsilon, fit_intercept=o["low_intercept"], classes=[0, 1])
    return PrivateStackingClassifier(
        epsilon=epsilon,
        partition="features",
        n_groups=n_groups,
        feature_importance=importance if method == "PST-F(W)" else None,
        lam_blocks=o["lam_blocks"],
        row_bound=o["row_bound"],
        row_scale=o["row_scale"],
        meta_features=o["meta_features"],
        low_intercept=o["low_intercept"],
        high_intercept=o["high_intercept"],
        classes=[0, 1],
    )


def _n_candidates(tuner):
    """Number of candidates the tuner fitted, read from its ledger (one part T_g per candidate)."""
    return len({m.group(1) for part in tuner.privacy_.per_part() if (m := re.search(r"/T_(\d+)", part))})


def _lam_grid(method, lam_grid):
    """The end-to-end λ candidates; stacking ties the high level's λ to the low level's (one selection)."""
    if method == "PLR":
        return {"lam": list(lam_grid)}
    return [{"lam": [lam], "lam_high": [lam]} for lam in lam_grid]


def pst_end_to_end_cell(
    method,
    epsilon,
    repeat=0,
    n_groups=5,
    lam_grid=PRIVATE_LAM_GRID,
    data_seed=0,
    tuning="private",
    val_fraction=1 / 3,
    *,
    seed_sequence,
):
    """One (method, ε, repeat) of PST Figure 1 (MNIST) end to end: public PCA, private selection of λ.

    The whole training set (3,000) goes to :class:`~dpstack.tuning.PrivateParameterTuning`
    with ε_select = ε over the candidates ``lam_grid`` (λ_h = λ_l); the chosen model is scored
    on the 2,000 test images.

    ``tuning="validation"`` instead runs the papers' protocol on the public-PCA features:
    :func:`dpstack.companion.papers.pst.grids.select_on_validation`, the selection of
    :func:`~dpstack.companion.papers.pst.grids.stacking_cell` with its defaults (``lam_grid`` per level,
    equal budget, the same split and noise seed): outside the guarantee, ε_total = ∞. Given the
    papers' features it returns the papers' numbers, so it isolates the cost of the PCA change
    from that of private tuning.

    Returns
    -------
    dict with ``auc``, ``lam`` (chosen λ, λ_l of the stacked methods), ``lam_high`` (λ_h; NaN
    for PLR), ``n_candidates``, ``epsilon_total`` (the release's ledger) and ``n_per_candidate``
    (training records of the chosen candidate).
    """
    if method not in PST_METHODS:
        raise ValueError(f"method must be one of {PST_METHODS}, got {method!r}")
    if tuning not in ("private", "validation"):
        raise ValueError(f"tuning must be 'private' or 'validation', got {tuning!r}")
    X, y, X_test, y_test, variance = load_public_task(data_seed)
    importance = variance if method == "PST-F(W)" else None
    if tuning == "validation":
        (row,) = pst.select_on_validation(
            method,
            epsilon,
            X,
            y,
            X_test,
            y_test,
            importance,
            n_groups=n_groups,
            lam_grid=lam_grid,
            val_fraction=val_fraction,
            seed_sequence=seed_sequence,
        )
        n_fit = len(y) - int(round(val_fraction * len(y)))
        return dict(
            auc=row["auc"],
            lam=row["lam"],
            lam_high=row["lam_high"],
            n_candidates=row["n_candidates"],
            epsilon_total=np.inf,
            n_per_candidate=n_fit,
        )
    template = _pst_template(method, epsilon, importance, n_groups)
    seed = int(np.random.default_rng(seed_sequence.spawn(3)[2]).integers(2**63 - 1))
    tuner = _drop_seeds(
        PrivateParameterTuning(template, _lam_grid(method, lam_grid), epsilon_select=epsilon, random_state=seed).fit(
            X, y
        )
    )
    lam = tuner.best_params_["lam"]
    return dict(
        auc=stats.auc(y_test, tuner.decision_function(X_test)),
        lam=lam,
        lam_high=np.nan if method == "PLR" else lam,
        n_candidates=_n_candidates(tuner),
        epsilon_total=tuner.privacy_.total(),
        n_per_candidate=len(y) // (len(lam_grid) + 1),
    )


def _split(n, rng, test_fraction):
    """Train/test split by index, drawn as the papers' protocol draws it (same seeds, same split)."""
    perm = rng.permutation(n)
    n_test = int(round(test_fraction * n))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def _transfer_tuner(method, epsilon, n_groups, lam_grid, eta_grid, test_fraction, data_seed, seed_sequence):
    """The fitted PrivateParameterTuning of one transfer cell, the target test labels and its scores."""
    Xs, ys, Xt, yt, variance = load_public_transfer_task(data_seed)
    split_ss, source_ss, target_ss = seed_sequence.spawn(3)
    s_train, _ = _split(len(ys), np.random.default_rng(split_ss), test_fraction)
    t_train, t_test = _split(len(yt), np.random.default_rng([*split_ss.generate_state(2), 0]), test_fraction)
    source_seed = int(np.random.default_rng(source_ss).integers(2**63 - 1))
    target_seed = int(np.random.default_rng([*target_ss.generate_state(2), 1]).integers(2**63 - 1))
    o = DEFAULT_OPTIONS
    if method == "PPTL-FS(W)":
        template = PrivateTransferStacking(
            epsilon_source=epsilon,
            epsilon_target=epsilon,
            n_groups=n_groups,
            feature_importance=variance,
            lam_source=LAM_SOURCE,
            lam_blocks=o["lam_blocks"],
            row_bound=o["row_bound"],
            row_scale=o["row_scale"],
            meta_features=o["meta_features"],
            low_intercept=o["low_intercept"],
            high_intercept=o["high_intercept"],
            random_state=source_seed,
            classes=[0, 1],
        )
        grid = [{"lam": [lam], "lam_high": [lam], "eta": list(eta_grid)} for lam in lam_grid]
    else:
        template = SimComb(
            epsilon_source=epsilon,
            epsilon_target=epsilon,
            lam_source=LAM_SOURCE,
            fit_intercept=o["low_intercept"],
            row_bound=o["row_bound"],
            row_scale=o["row_scale"],
            random_state=source_seed,
            classes=[0, 1],
        )
        grid = {"lam": list(lam_grid), "eta": [1.0] if method == "Direct" else list(eta_grid)}
    template.fit_source(Xs[s_train], ys[s_train])
    tuner = PrivateParameterTuning(template, grid, epsilon_select=epsilon, random_state=target_seed)
    tuner = _drop_seeds(tuner.fit(Xt[t_train], yt[t_train]))
    return tuner, yt[t_test], tuner.decision_function(Xt[t_test])


def _drop_seeds(tuner):
    """The fitted tuner without the integer seeds it and its template were given; returns it.

    The seeds are drawn from the cell's seed sequence so that a run can be repeated, but a fitted
    object that kept them would regenerate its noise: the tuner's seed every candidate's, and a
    transfer template's seed (it stays in the template the tuner holds) the source release's, so
    that anyone holding the tuner could subtract the noise and identify a source record. Both are
    set to ``None`` once the fits are done; the release (the chosen model, its index, the shared
    source release) is unchanged.
    """
    tuner.estimator.set_params(random_state=None)
    return tuner.set_params(random_state=None)


def transfer_end_to_end_cell(
    method,
    epsilon,
    repeat=0,
    n_groups=5,
    lam_grid=PRIVATE_LAM_GRID,
    eta_grid=(0.2, 0.8),
    test_fraction=0.2,
    data_seed=0,
    *,
    seed_sequence,
):
    """One (method, ε_s = ε_t = ε, repeat) of PPTL Table 1 (MNIST) end to end.

    Source: fitted once on its training part at ε with λ_s = :data:`LAM_SOURCE`. Target:
    (λ, η) chosen by :class:`~dpstack.tuning.PrivateParameterTuning` at ε_select = ε on the
    target's training part (Direct: η = 1, λ only); the chosen model is scored on the
    target's test part. The train/test splits are those of the papers' protocol.

    Candidates: PPTL-FS(W) and SimComb ``lam_grid`` × ``eta_grid`` (PPTL-FS(W): λ_h = λ_l),
    Direct ``lam_grid``.

    Returns
    -------
    dict with ``auc``, ``lam``, ``lam_high`` (= λ for PPTL-FS(W), NaN otherwise), ``eta``,
    ``n_candidates`` (G), ``epsilon_total``, ``epsilon_source``, ``epsilon_target``.
    """
    if method not in TRANSFER_METHODS:
        raise ValueError(f"method must be one of {TRANSFER_METHODS}, got {method!r}")
    tuner, yt_test, scores = _transfer_tuner(
        method, epsilon, n_groups, lam_grid, eta_grid, test_fraction, data_seed, seed_sequence
    )
    domains = domain_guarantees(tuner.privacy_)
    return dict(
        auc=stats.auc(yt_test, scores),
        lam=tuner.best_params_["lam"],
        lam_high=tuner.best_params_["lam"] if method == "PPTL-FS(W)" else np.nan,
        eta=tuner.best_params_["eta"],
        n_candidates=_n_candidates(tuner),
        epsilon_total=tuner.privacy_.total(),
        epsilon_source=domains["source"],
        epsilon_target=domains["target"],
    )


def ledger_example(epsilon=1.0, method="PPTL-FS(W)", profile="quick", data_seed=0, seed=0):
    """The ledger of one end-to-end transfer release (repeat 0), as a table: every mechanism, its part and ε."""
    from dpstack.companion.runner import cell_seed

    p = _profile(profile)
    cell = dict(method=method, epsilon=float(epsilon), repeat=0)
    tuner, _, _ = _transfer_tuner(
        method,
        float(epsilon),
        5,
        list(p["private_lam_grid"]),
        list(p["private_eta_grid"]),
        0.2,
        data_seed,
        cell_seed(seed, cell),
    )
    frame = tuner.privacy_.to_frame()[["mechanism", "part", "epsilon", "unit"]]
    return frame, tuner.privacy_


#: The cell function behind each kind of :func:`end_to_end_cells` cell: (experiment, protocol).
CELL_KINDS = {
    "pst papers": ("PST Fig. 1", PROTOCOLS[0]),
    "pst end to end": ("PST Fig. 1", PROTOCOLS[1]),
    "pst public pca": ("PST Fig. 1", PROTOCOLS[2]),
    "pptl papers": ("PPTL Table 1", PROTOCOLS[0]),
    "pptl end to end": ("PPTL Table 1", PROTOCOLS[1]),
}


def end_to_end_cell(kind, **cell):
    """One cell of :func:`end_to_end_cells`: ``kind`` (a key of :data:`CELL_KINDS`) picks the cell function."""
    if kind == "pst papers":
        return pst.stacking_cell(**cell)
    if kind in ("pst end to end", "pst public pca"):
        return pst_end_to_end_cell(**cell)
    if kind == "pptl papers":
        return pptl.transfer_cell(**cell)
    if kind == "pptl end to end":
        return transfer_end_to_end_cell(**cell)
    raise ValueError(f"kind must be one of {sorted(CELL_KINDS)}, got {kind!r}")


def end_to_end_cells(profile="quick", pst_methods=None, transfer_methods=None, n_repeats=None):
    """The cells of both experiments under each protocol, in the order :func:`end_to_end` lists its rows.

    ``pst_methods`` / ``transfer_methods`` default to the profile's (an empty tuple skips that
    experiment).
    """
    p = _profile(profile)
    pst_methods = p["pst_methods"] if pst_methods is None else tuple(pst_methods)
    transfer_methods = p["transfer_methods"] if transfer_methods is None else tuple(transfer_methods)
    reps = n_repeats or p["n_repeats"]
    lam_grid, eta_grid = list(p["lam_grid"]), list(p["eta_grid"])
    transfer_lam_grid = list(p["transfer_lam_grid"])
    private_lam, private_eta = list(p["private_lam_grid"]), list(p["private_eta_grid"])

    def cells(kind, methods, epsilons, **extra):
        """One cell per (repeat, method, ε), in that order (the order the runner's seeds follow)."""
        return [
            dict(kind=kind, method=m, epsilon=float(e), repeat=r, **extra)
            for r in range(reps)
            for m in methods
            for e in epsilons
        ]

    out = []
    if pst_methods:
        eps = p["pst_epsilons"]
        out += cells("pst papers", pst_methods, eps, dataset="MNIST", lam_grid=lam_grid)
        out += cells("pst end to end", pst_methods, eps, lam_grid=private_lam)
        out += cells("pst public pca", pst_methods, eps, lam_grid=lam_grid, tuning="validation")
    if transfer_methods:
        eps = p["transfer_epsilons"]
        out += cells(
            "pptl papers", transfer_methods, eps, dataset="MNIST", lam_grid=transfer_lam_grid, eta_grid=eta_grid
        )
        out += cells("pptl end to end", transfer_methods, eps, lam_grid=private_lam, eta_grid=private_eta)
    return out


def finish_end_to_end(raw):
    """The tidy table of :func:`end_to_end` from the runner's rows of :func:`end_to_end_cells` (same rows, same order)."""
    df = raw.copy()
    df["experiment"] = df["kind"].map(lambda k: CELL_KINDS[k][0])
    df["protocol"] = df["kind"].map(lambda k: CELL_KINDS[k][1])
    papers = df["protocol"] == PROTOCOLS[0]
    df["epsilon_total"] = np.where(papers, np.inf, df["epsilon_total"] if "epsilon_total" in df else np.nan)
    if "eta" not in df:
        df["eta"] = np.nan
    df.loc[df["experiment"] == "PST Fig. 1", "eta"] = np.nan
    df["pca_fitted_on"] = np.where(papers, "private training data", "public held-out images")
    df["tuning"] = np.where(
        df["protocol"] == PROTOCOLS[1],
        "exponential mechanism on disjoint parts (inside)",
        "best validation AUC (outside the guarantee)",
    )
    cols = [
        "experiment",
        "protocol",
        "method",
        "epsilon",
        "repeat",
        "auc",
        "lam",
        "lam_high",
        "eta",
        "n_candidates",
        "epsilon_total",
        "pca_fitted_on",
        "tuning",
    ]
    return df[cols].astype({"eta": float, "lam_high": float, "epsilon_total": float})


def end_to_end(profile="quick", pst_methods=None, transfer_methods=None, n_repeats=None, seed=0, n_jobs=1, cache=False):
    """Both experiments under both protocols; one tidy DataFrame.

    Columns: ``experiment`` ("PST Fig. 1" / "PPTL Table 1"), ``protocol`` (:data:`PROTOCOLS`),
    ``method``, ``epsilon``, ``repeat``, ``auc``, ``lam``, ``lam_high`` (NaN for one-level
    methods), ``eta``, ``n_candidates`` (settings evaluated), ``epsilon_total`` (the ε the
    ledger certifies; ∞ for the papers' protocol, whose PCA and tuning are outside),
    ``pca_fitted_on``, ``tuning``. ``pst_methods`` / ``transfer_methods`` default to the
    profile's (an empty tuple skips that experiment).
    """
    cells = end_to_end_cells(profile, pst_methods, transfer_methods, n_repeats)
    raw = run_cells(end_to_end_cell, cells, seed=seed, n_jobs=n_jobs, cache=cache, desc="end to end")
    return finish_end_to_end(raw)


def compare(df):
    """Mean test AUC per (experiment, method, ε) under each protocol, and the paired difference.

    The difference is end-to-end − papers' protocol, paired on the repeat (same images, same
    test set), with the half-width of its 95 % t-interval. The third protocol (public PCA, λ on
    validation; PST only) is shown as a column when present.
    """

    key = ["experiment", "method", "epsilon", "repeat"]
    wide = df.pivot_table(index=key, columns="protocol", values="auc").reset_index()
    wide["diff"] = wide[PROTOCOLS[1]] - wide[PROTOCOLS[0]]
    g = wide.groupby(["experiment", "method", "epsilon"], sort=False)
    columns = {name: g[name].mean() for name in (PROTOCOLS[0], PROTOCOLS[2], PROTOCOLS[1]) if name in wide}
    return pd.DataFrame(
        {**columns, "difference": g["diff"].mean(), "ci95": g["diff"].agg(stats.t_half_width)}
    ).reset_index()
