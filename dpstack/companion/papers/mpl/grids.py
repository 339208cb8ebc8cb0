"""MPL experiments (Hamm, Cao & Belkin 2016, Section 6): accuracy against 1/ε.

One *cell* is one trial: a fresh random split of the training set into the
auxiliary (unlabelled) rows and M parties of ``party_size`` rows, the local
models, the five methods, and ``n_noise`` output-perturbation draws per
private method and ε (the noise is the only ε-dependent step, so one fit
serves the whole ε grid). The paper reports 10 trials for the non-private and
100 for the private methods; the paper profile uses 10 splits × 10 noise draws.

Preprocessing, and where it stands with respect to the guarantee (unit: one
party): the auxiliary rows are public in the paper's setting (Section 3.3), so
PCA and the norm scale fitted on them (``fit_on="aux"``, our default) are
inside the guarantee; ``fit_on="private"`` fits PCA on the parties' rows as the
paper seems to (outside the guarantee, labelled in the output). KDD-99's
scaling is data-independent. With ``protect_aux=True`` (Section 4.5) the
auxiliary data are protected too and fitting PCA on them is outside.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from dpstack.companion.runner import run_cells
from dpstack.mechanisms import clip_rows
from dpstack.multiparty import fit_methods, split_auxiliary_and_parties

__all__ = [
    "DATASETS",
    "data_status",
    "load_mpl_dataset",
    "mpl_trial",
    "mpl_cells",
    "mpl_row_scale_cells",
    "run_mpl",
    "finish_mpl",
    "summarize_mpl",
    "PROFILES",
    "QUICK_GRID",
    "noise_to_signal",
    "DP_NOISE",
    "EXP_NOISE",
    "CLASSES",
    "PRIVATE",
    "INV_EPSILONS",
]

PRIVATE = ("soft", "vote", "avg")
DP_NOISE = "Gamma(dK) norm (ε-DP)"
EXP_NOISE = "Exp norm (not DP)"

#: Paper settings per dataset: parties, samples per party, auxiliary rows, PCA dims.
DATASETS = {
    "har": dict(n_parties=(1000,), party_size=6, n_aux=1000, n_components=50),
    "kdd": dict(n_parties=(5000, 10000, 20000), party_size=22, n_aux=43000, n_components=None),
    "url": dict(n_parties=(5000, 10000, 20000), party_size=9, n_aux=16000, n_components=50),
    "mnist10": dict(n_parties=(1000,), party_size=6, n_aux=1000, n_components=50),
}

#: The public label set of each task (from the dataset's description, not from the parties'
#: labels): HAR's six activities, KDD-99 normal/attack, URL benign/malicious, the ten digits.
CLASSES = {"har": (1, 2, 3, 4, 5, 6), "kdd": (0, 1), "url": (0, 1), "mnist10": tuple(range(10))}

#: quick: a few splits and draws so a notebook runs in under a minute; paper: 10 × 10.
PROFILES = {"quick": dict(n_trials=2, n_noise=5), "paper": dict(n_trials=10, n_noise=10)}

#: The quick profile of the three-M datasets runs two of the M values and one split (a page in a minute).
QUICK_GRID = {"kdd": dict(n_parties=(5000, 20000), n_trials=1), "url": dict(n_parties=(5000, 20000), n_trials=1)}

INV_EPSILONS = (0.0, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)


def data_status(dataset):
    """``None`` when the raw files of ``dataset`` load, else a message naming the files.

    The message names the dataset, the missing files relative to the data home,
    and how the data home is chosen (``$DPSTACK_DATA``), but not its absolute
    path, so that executed notebooks compare equal across machines.
    """
    try:
        load_mpl_dataset(dataset)
    except (FileNotFoundError, ImportError, AttributeError) as exc:
        files = []
        for text in [str(exc)] + _other_part_errors(dataset):
            missing = re.search(r"missing file\(s\) (.*?) in data home", text)
            files.extend((missing.group(1) if missing else text).split(", "))
        files = ", ".join(dict.fromkeys(files))
        return (
            f"Data absent: the {dataset.upper()} figure cannot be drawn here. Missing file(s) "
            f"in the data home ($DPSTACK_DATA, see dpstack.datasets.data_home()): {files}. "
            f"`python -m dpstack.datasets fetch {_REGISTRY_NAME.get(dataset, dataset)}` downloads them (checked against the "
            "checksums pinned in dpstack.datasets.REGISTRY); the code below is the one that will "
            "run once they are there."
        )
    return None


def _other_part_errors(dataset):
    """Messages of the test-part loaders, so a missing-data note lists train and test files."""
    from dpstack import datasets

    tries = {"har": lambda: datasets.load_har(subset="test"), "url": lambda: datasets.load_url(days=range(10, 20))}.get(
        dataset
    )
    if tries is None:
        return []
    try:
        tries()
    except (FileNotFoundError, ImportError, AttributeError) as exc:
        return [str(exc)]
    return []


#: the dpstack.datasets registry name of each MPL task's raw files
_REGISTRY_NAME = {"kdd": "kddcup99", "mnist10": "mnist"}


@functools.lru_cache(maxsize=2)
def load_mpl_dataset(dataset):
    """(X_train, y_train, X_test, y_test) before the split-dependent steps.

    har: UCI HAR's 561 features, 6 activities. kdd: the 10% file for training,
    'corrected' for testing, 123 one-hot features scaled data-independently
    (:func:`dpstack.datasets.preprocessing.kddcup99_scale`), attack vs normal.
    url: days 0–9 train, 10–19 test (sparse). mnist10: all ten digits, pixels/255.
    """
    from dpstack import datasets

    if dataset == "har":
        tr, te = datasets.load_har(subset="train"), datasets.load_har(subset="test")
        return tr.data, tr.target, te.data, te.target
    if dataset == "kdd":
        from dpstack.datasets.preprocessing import kddcup99_scale

        tr, te = datasets.load_kddcup99("train"), datasets.load_kddcup99("test")
        return (
            kddcup99_scale(tr.data, tr.feature_names),
            tr.target,
            kddcup99_scale(te.data, te.feature_names),
            te.target,
        )
    if dataset == "url":
        tr, te = datasets.load_url(days=range(0, 10)), datasets.load_url(days=range(10, 20))
        return tr.data, tr.target, te.data, te.target
    if dataset == "mnist10":
        tr, te = datasets.load_mnist(digits=None, subset="train"), datasets.load_mnist(digits=None, subset="test")
        return tr.data, tr.target, te.data, te.target
    raise ValueError(f"dataset must be one of {sorted(DATASETS)}, got {dataset!r}")


def _project(X_fit, n_components, *Xs):
    """PCA fitted on ``X_fit``, then one public scale (the largest norm of the projected
    ``X_fit``) and clipping to norm 1 for every array."""
    from dpstack.datasets.preprocessing import fit_pca

    pca = fit_pca(X_fit, n_components, 0)
    scale = 1.0 / np.max(np.linalg.norm(pca.transform(X_fit), axis=1))
    return [clip_rows(np.asarray(pca.transform(X)) * scale, 1.0) for X in Xs]


def mpl_trial(
    dataset,
    n_parties,
    party_size,
    n_aux,
    inv_epsilons,
    n_noise,
    lam=1e-4,
    fit_on="aux",
    n_test_indiv=5000,
    diagnostic_noise=True,
    row_scale=1.0,
    seed_sequence=None,
    **_,
):
    """One trial: split, local models, all five methods, noise draws → rows.

    With ``diagnostic_noise=True`` every draw is also evaluated with the same
    direction but a norm ~ Exponential(S/ε) instead of Gamma(d·K, S/ε): the
    noise of a sampler that forgets the dimension factor. That release is
    **not** ε-DP (its density has a pole at 0); it is a hypothesis about the
    paper's curves, reported in rows with ``noise = "Exp norm (not DP)"``.

    ``row_scale`` (a protocol the paper leaves open; default 1): every row (auxiliary, parties'
    and test) is divided by this public constant after the preprocessing, before the estimators
    clip it to norm 1. The constant does not look at the data, so the guarantee is unchanged.

    Returns
    -------
    list of dicts with keys method, noise, inv_epsilon (NaN for batch/indiv),
    draw, accuracy, ws_norm (‖w_s‖), noise_norm, steps_outside_guarantee.
    """
    split_ss, noise_ss, test_ss = seed_sequence.spawn(3)
    X_tr, y_tr, X_te, y_te = load_mpl_dataset(dataset)
    aux_idx, priv_idx, parties = split_auxiliary_and_parties(
        X_tr.shape[0], n_parties, party_size, n_aux, np.random.default_rng(split_ss)
    )
    n_comp = DATASETS[dataset]["n_components"]
    outside = ""
    if n_comp is None:
        Xa, Xp, Xt = (np.asarray(X_tr[aux_idx]), np.asarray(X_tr[priv_idx]), np.asarray(X_te))
    else:
        fit_rows = X_tr[aux_idx] if fit_on == "aux" else X_tr[priv_idx]
        if fit_on != "aux":
            outside = "PCA and scale fitted on the parties' rows"
        Xa, Xp, Xt = _project(fit_rows, n_comp, X_tr[aux_idx], X_tr[priv_idx], X_te)
    if not (np.isfinite(row_scale) and row_scale > 0):
        raise ValueError(f"row_scale must be a positive number, got {row_scale!r}")
    if row_scale != 1.0:  # a public constant: rows ÷ s, then clipped to norm 1 by the estimators
        Xa, Xp, Xt = Xa / row_scale, Xp / row_scale, Xt / row_scale
    yp = np.asarray(y_tr[priv_idx])
    # An analysis, not a release: the curves need w_s (the non-private minimiser) and its norm, so
    # the fits keep their diagnostics (such objects are not private and are never published); the
    # ε-DP releases are w_s + release_noise(ε), drawn below exactly as fit(epsilon=ε) would.
    classes = np.asarray(CLASSES[dataset])
    fits = fit_methods(
        ("soft", "vote", "avg", "batch", "indiv"),
        Xp,
        yp,
        parties,
        Xa,
        epsilon=np.inf,
        lam=lam,
        classes=classes,
        diagnostics=True,
    )
    y_te = np.asarray(y_te)
    base = dict(noise=DP_NOISE, draw=0, inv_epsilon=np.nan, noise_norm=0.0)
    rows = [
        dict(
            base,
            method="batch",
            accuracy=fits["batch"].score(Xt, y_te),
            ws_norm=float(np.linalg.norm(fits["batch"].coef_)),
        )
    ]
    sub = np.random.default_rng(test_ss).choice(Xt.shape[0], size=min(n_test_indiv, Xt.shape[0]), replace=False)
    rows.append(dict(base, method="indiv", accuracy=fits["indiv"].score(Xt[sub], y_te[sub]), ws_norm=np.nan))
    for method in PRIVATE:
        est = fits[method]
        w_s = est.diagnostics_.unperturbed_coef
        ws_norm = float(np.linalg.norm(w_s))
        for inv in inv_epsilons:
            if inv == 0:
                variants = {DP_NOISE: np.zeros((1,) + w_s.shape)}
            else:
                rng = np.random.default_rng(noise_ss.spawn(1)[0])
                eta = est.release_noise(1.0 / inv, rng, size=n_noise)
                variants = {DP_NOISE: eta}
                if diagnostic_noise:
                    norms = np.linalg.norm(eta.reshape(n_noise, -1), axis=1)
                    exp_norms = rng.exponential(est.sensitivity_ * inv, size=n_noise)
                    variants[EXP_NOISE] = eta * (exp_norms / norms)[:, None, None]
            for noise, etas in variants.items():
                acc = _accuracies(Xt, y_te, w_s + etas, classes)
                nn = np.linalg.norm(etas.reshape(len(etas), -1), axis=1)
                for r, a in enumerate(acc):
                    rows.append(
                        dict(
                            method=method,
                            noise=noise,
                            inv_epsilon=float(inv),
                            draw=r,
                            accuracy=a,
                            ws_norm=ws_norm,
                            noise_norm=float(nn[r]),
                        )
                    )
    for row in rows:
        row["steps_outside_guarantee"] = outside
    return rows


def _accuracies(X, y, coefs, classes):
    """Accuracy of each of R linear models (R, K_out, d) on (X, y)."""
    R, K, d = coefs.shape
    Z = X @ coefs.reshape(R * K, d).T  # (n, R·K)
    if K == 1:
        pred = classes[(Z >= 0).astype(int)]
    else:
        pred = classes[np.argmax(Z.reshape(-1, R, K), axis=2)]
    return list((pred == y[:, None]).mean(axis=0))


def mpl_cells(
    dataset,
    profile="quick",
    n_parties=None,
    inv_epsilons=INV_EPSILONS,
    lam=1e-4,
    fit_on="aux",
    row_scale=1.0,
    diagnostic_noise=True,
    **overrides,
):
    """The cells (one per M and split) of one dataset's figure, for :func:`mpl_trial`.

    ``profile`` sets the number of splits and noise draws (:data:`PROFILES`); ``n_trials``
    and ``n_noise`` in ``overrides`` replace them, any other key replaces a setting of
    :data:`DATASETS` (``party_size``, ``n_aux``). ``n_parties`` (an int or a list) replaces
    the dataset's M grid. ``row_scale`` ≠ 1 and ``diagnostic_noise=False`` are passed to
    :func:`mpl_trial` (the cells of the defaults do not carry them).
    """
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {sorted(DATASETS)}, got {dataset!r}")
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
    cfg = dict(DATASETS[dataset])
    prof = dict(PROFILES[profile])
    prof.update({k: overrides.pop(k) for k in list(overrides) if k in prof})
    unknown = sorted(set(overrides) - {"party_size", "n_aux"})
    if unknown:
        raise TypeError(
            f"unknown setting(s) {unknown} for run_mpl (known: n_parties, n_trials, n_noise, party_size, n_aux)"
        )
    cfg.update(overrides)
    grid = cfg.pop("n_parties") if n_parties is None else tuple(np.atleast_1d(n_parties))
    return [
        dict(
            dataset=dataset,
            n_parties=int(M),
            party_size=int(cfg["party_size"]),
            n_aux=int(cfg["n_aux"]),
            inv_epsilons=[float(v) for v in inv_epsilons],
            n_noise=int(prof["n_noise"]),
            lam=float(lam),
            fit_on=fit_on,
            repeat=r,
            **({} if float(row_scale) == 1.0 else {"row_scale": float(row_scale)}),
            **({} if diagnostic_noise else {"diagnostic_noise": False}),
        )
        for M in grid
        for r in range(int(prof["n_trials"]))
    ]


def mpl_row_scale_cells(dataset, profile="quick", row_scales=(2.0, 4.0, 8.0), **kwargs):
    """One copy of :func:`mpl_cells` per public row scale s (rows ÷ s before the fits), the ε-DP release only.

    The diagnostic release (``noise = "Exp norm (not DP)"``) is left out (``diagnostic_noise=False``):
    no claim is judged on it. ``kwargs`` are :func:`mpl_cells`'s.
    """
    if not row_scales:
        raise ValueError("row_scales must name at least one scale")
    return [
        c for s in row_scales for c in mpl_cells(dataset, profile, row_scale=float(s), diagnostic_noise=False, **kwargs)
    ]


def finish_mpl(df):
    """The tidy table of :func:`run_mpl` from the rows of :func:`mpl_trial` (drops the ε grid column).

    A grid whose cells carry ``row_scale`` (:func:`mpl_row_scale_cells`) gets it in every row (1
    where a cell did not carry it).
    """
    df = df.drop(columns=[c for c in ("inv_epsilons",) if c in df.columns])
    if "row_scale" in df.columns:
        df = df.assign(row_scale=df["row_scale"].astype(float).fillna(1.0))
    return df


def run_mpl(
    dataset,
    profile="quick",
    n_parties=None,
    inv_epsilons=INV_EPSILONS,
    lam=1e-4,
    fit_on="aux",
    seed=0,
    n_jobs=1,
    cache=False,
    **overrides,
):
    """All trials of one dataset's figure as a tidy DataFrame (one row per accuracy).

    The book's pages read the committed paper-profile table instead
    (:func:`dpstack.companion.results.load_or_run`); this computes it live.
    """
    cells = mpl_cells(dataset, profile, n_parties, inv_epsilons, lam, fit_on, **overrides)
    df = run_cells(mpl_trial, cells, seed=seed, n_jobs=n_jobs, cache=cache, desc=f"MPL {dataset}")
    return finish_mpl(df)


def summarize_mpl(df, noise=DP_NOISE):
    """Mean and s.d. of the accuracy (and of ‖η‖, ‖w_s‖) per (M, method, 1/ε) for one noise kind.

    batch and indiv (non-private) are included with 1/ε = NaN.
    """
    d = df.copy()
    if "noise" in df:  # 1/ε = 0 and the references carry no noise: shared by both kinds
        d = df[(df["noise"] == noise) | (df["inv_epsilon"].fillna(0.0) == 0.0)].copy()
    d["inv_epsilon"] = d["inv_epsilon"].fillna(-1.0)  # groupby drops NaN keys
    g = d.groupby(["n_parties", "method", "inv_epsilon"])
    out = g["accuracy"].agg(["mean", "std", "count"])
    out["noise_norm"] = g["noise_norm"].mean()
    out["ws_norm"] = g["ws_norm"].mean()
    out = out.reset_index()
    out["inv_epsilon"] = out["inv_epsilon"].where(out["inv_epsilon"] >= 0)
    return out


def noise_to_signal(summary):
    """E‖η‖ / ‖w_s‖ per private method and 1/ε: above ~1 the released model is mostly noise."""
    s = summary[summary["method"].isin(PRIVATE) & (summary["inv_epsilon"] > 0)].copy()
    s["noise_over_ws"] = s["noise_norm"] / s["ws_norm"]
    return s.pivot_table(index=["n_parties", "inv_epsilon"], columns="method", values="noise_over_ws")
