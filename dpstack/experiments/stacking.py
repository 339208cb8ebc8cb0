"""PST experiments (Yao et al. 2019, §4.1): AUC vs ε, vs K, vs α, the combiners, and the open choices.

Protocol (PST §4.1; errata :ref:`5 <erratum-public-bound>`, :ref:`6 <erratum-pst-split>`,
:ref:`8 <erratum-news20-sizes>` of the book):

* MNIST 0 vs 8 — :func:`dpstack.datasets.mnist_pst`: 5,000 images, 3,000 train /
  2,000 test, PCA to 100, rows clipped to norm 1. NEWS20 sci vs talk —
  :func:`dpstack.datasets.news20_pst`: bydate train (4,325) / test (2,880), TF-IDF,
  PCA to 100. PCA and the importances v_i (PCA variances) are fitted on the
  training data: **outside the guarantee**, as in the paper (same erratum).
  The preprocessing is done once per process (cached); each repeat redraws the
  split of the training set into 2/3 fit / 1/3 validation and all the noise.
* λ is chosen on the validation third by test-free AUC over a grid and the model fitted
  with that λ is scored on the test set. **Choosing λ on private validation data is
  outside the privacy guarantee** (the papers do it without saying so, :ref:`erratum 6 <erratum-pst-split>`).
* K = 5, D_l/D_h = 50/50, ε = ∞ is the non-private version of each method.

Every cell returns tidy rows (one per method × combiner) with the test AUC, the
chosen λ and its validation AUC; :func:`check_claim` turns the repeats into a
paired test of an ordering claim.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from ..base import PrivacyLeakWarning
from ..linear import PrivateLogisticRegression
from ..metrics import roc_auc_score
from ..stacking import PrivateStackingClassifier, bound_rows
from .runner import run_cells

__all__ = [
    "PROFILES", "STACKING_METHODS", "DEFAULT_OPTIONS", "load_task", "stacking_cell", "run_stacking",
    "fig1_epsilon", "synthetic_task", "fig2_groups", "fig3_importance", "fig4_combiners", "ablation",
    "check_claim", "claims_table", "summarise", "require_data", "fig1_claims", "fig2_claims", "fig3_claims",
    "fig4_claims", "chosen_lam", "high_level_signal", "swing_diagnostics", "alpha_label", "eps_axis",
    "set_eps_ticks", "ABLATION_VARIANTS", "synthetic_weights",
]

STACKING_METHODS = ("PLR", "PST-S", "PST-F(U)", "PST-F(W)")

#: The choices the papers leave open (see dpstack.stacking) and their defaults: all DP-correct.
DEFAULT_OPTIONS = {"row_bound": "clip", "row_scale": 1.0, "meta_features": "centred", "lam_high": "tied",
                   "lam_blocks": "same", "low_intercept": False, "high_intercept": True}

#: Repeats and grids. "paper": the papers' repeats (10; 30 for the K sweeps) and denser grids.
PROFILES = {
    "quick": dict(n_repeats=4, k_repeats=3, epsilons=(0.25, 1.0, 4.0, np.inf), lam_grid=(1e-4, 1e-3, 1e-2, 1e-1, 1.0),
                  k_grid=(1, 3, 5, 10, 20), alphas=(0.5, 0.9, 1.0, 1.1, 2.0), datasets=("MNIST", "NEWS20")),
    "paper": dict(n_repeats=10, k_repeats=30, epsilons=(0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, np.inf),
                  lam_grid=(1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 1.0), k_grid=(1, 2, 3, 5, 7, 10, 15, 20, 30, 50),
                  alphas=(0.3, 0.5, 0.7, 0.9, 1.0, 1.1, 1.5, 2.0), datasets=("MNIST", "NEWS20")),
}


def _profile(profile):
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
    return PROFILES[profile]


@functools.lru_cache(maxsize=4)
def load_task(dataset, data_seed=0):
    """Preprocessed (X_train, y_train, X_test, y_test, feature_variance) of ``"MNIST"`` or ``"NEWS20"``.

    Cached per process: PCA / TF-IDF are the slow part and do not change across repeats.
    Raises :class:`dpstack.datasets.DatasetNotFoundError` if the raw files are absent.
    """
    from ..datasets import mnist_pst, news20_pst

    if dataset == "SYNTH":
        return synthetic_task(data_seed)
    if dataset == "MNIST":
        d = mnist_pst(random_state=data_seed)
    elif dataset == "NEWS20":
        d = news20_pst(random_state=data_seed)
    else:
        raise ValueError(f"dataset must be 'MNIST', 'NEWS20' or 'SYNTH', got {dataset!r}")
    return d.X_train, d.y_train, d.X_test, d.y_test, d.feature_variance


def synthetic_weights(data_seed=0, n_features=20):
    """Weights β of :func:`synthetic_task`: random signs, magnitude 1.5·√(d / Σ v)."""
    v = 0.8 ** np.arange(n_features)
    return 1.5 * np.sign(np.random.default_rng([data_seed, 2]).normal(size=n_features)) * np.sqrt(n_features / v.sum())


def synthetic_task(data_seed=0, n_train=900, n_test=600, n_features=20):
    """A small offline task with known importance (``dataset="SYNTH"``; tests and demos).

    Feature i has variance v_i = 0.8^i and weight β_i ∝ √v_i·sign, so the label depends
    more on high-variance features (as with PCA scores); rows are divided by the public
    constant 2 and clipped to norm 1.
    """
    rng = np.random.default_rng(data_seed)
    v = 0.8 ** np.arange(n_features)
    X = rng.normal(size=(n_train + n_test, n_features)) * np.sqrt(v)
    beta = synthetic_weights(data_seed, n_features)
    y = (rng.uniform(size=len(X)) < 1 / (1 + np.exp(-X @ beta))).astype(int)
    X = bound_rows(X, "clip", row_scale=2.0)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:], v


def _importance(method, alpha, feature_variance):
    if method != "PST-F(W)":
        return None
    if alpha is None:
        return feature_variance
    # PST §4.1: v_i = α^i, i = rank of the feature in PCA order (1 = largest variance)
    return float(alpha) ** np.arange(1, feature_variance.size + 1)


def _estimator(method, epsilon, lam, n_groups, importance, options, seed, diagnostics=False):
    """The estimator of one grid cell; the tasks' labels are 0/1, a public label set."""
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    lam_high = lam if opts["lam_high"] == "tied" else float(opts["lam_high"])
    if method == "PLR":
        return PrivateLogisticRegression(epsilon=epsilon, lam=lam, fit_intercept=opts["low_intercept"],
                                         random_state=seed, classes=[0, 1], diagnostics=diagnostics)
    partition = "samples" if method == "PST-S" else "features"
    return PrivateStackingClassifier(
        epsilon=epsilon, partition=partition, n_groups=n_groups, feature_importance=importance, lam=lam,
        lam_blocks=opts["lam_blocks"] if partition == "features" else "same", lam_high=lam_high,
        row_bound=opts["row_bound"], row_scale=opts["row_scale"],
        meta_features=opts["meta_features"],
        low_intercept=opts["low_intercept"], high_intercept=opts["high_intercept"], random_state=seed,
        classes=[0, 1], diagnostics=diagnostics)


def _scores(est, method, X, combiners):
    """{combiner name: scores} for one fitted model (PLR: one entry)."""
    if method == "PLR":
        return {"C-hl": est.decision_function(X)}
    if combiners:
        return est.decision_functions(X)
    return {"C-hl": est.decision_function(X)}


def _auc(y, s):
    return float(roc_auc_score(y, s)) if np.all(np.isfinite(s)) else np.nan


def stacking_cell(dataset, method, epsilon, repeat=0, n_groups=5, alpha=None, lam_grid=(1e-3, 1e-2, 1e-1),
                  options=None, combiners=False, val_fraction=1 / 3, data_seed=0, *, seed_sequence):
    """One (dataset, method, ε, repeat): tune λ on validation, return the test AUC row(s).

    The split of the training set (fit / validation) depends only on the repeat's
    seed sequence, so every method and ε of a repeat sees the same split (paired
    comparisons). For each λ the model gets the same noise seed (common random numbers
    across the grid). ``combiners=True`` returns one row per combiner
    (C-0 … C-K−1, C-mv, C-wmv, C-hl), each with its own λ chosen on validation.
    ``options`` overrides :data:`DEFAULT_OPTIONS` (the ablation).

    Returns
    -------
    list of dict with keys ``combiner``, ``auc`` (test), ``val_auc``, ``lam``, ``auc_sd_over_lam``.
    """
    if method not in STACKING_METHODS:
        raise ValueError(f"method must be one of {STACKING_METHODS}, got {method!r}")
    X, y, X_test, y_test, variance = load_task(dataset, data_seed)
    split_ss, noise_ss = seed_sequence.spawn(2)
    perm = np.random.default_rng(split_ss).permutation(len(y))
    n_val = int(round(val_fraction * len(y)))
    val, fit = perm[:n_val], perm[n_val:]
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    if method == "PLR" and (opts["row_bound"] != "clip" or opts["row_scale"] != 1.0):
        X, X_test = _bound_plr_rows(X, X_test, fit, opts["row_bound"], opts["row_scale"])
    importance = _importance(method, alpha, variance)
    noise_seed = int(np.random.default_rng(noise_ss).integers(2**63 - 1))
    trials = []
    for lam in lam_grid:
        est = _estimator(method, epsilon, lam, n_groups, importance, opts, noise_seed)
        with warnings.catch_warnings():
            # the private_max variant warns at every fit; its row says it is not private. Only that
            # warning is silenced: any other PrivacyLeakWarning still reaches the caller.
            warnings.filterwarnings("ignore", message="row_bound='private_max'", category=PrivacyLeakWarning)
            est.fit(X[fit], y[fit])
        trials.append((lam, _scores(est, method, X[val], combiners), _scores(est, method, X_test, combiners)))
    rows = []
    for name in trials[0][1]:
        val_aucs = np.array([_auc(y[val], t[1][name]) for t in trials])
        test_aucs = np.array([_auc(y_test, t[2][name]) for t in trials])
        best = int(np.nanargmax(np.where(np.isnan(val_aucs), -np.inf, val_aucs)))
        rows.append(dict(combiner=name, auc=test_aucs[best], val_auc=val_aucs[best], lam=trials[best][0],
                         auc_sd_over_lam=float(np.nanstd(test_aucs))))
    return rows


def _bound_plr_rows(X, X_test, fit, method, row_scale=1.0):
    """PLR sees whole rows: apply the row-bounding method under study (PLR itself clips to 1)."""
    row_max = None
    if method == "private_max":  # NOT private: the scale is the largest row norm of the private fit set
        row_max = float(np.sqrt((X[fit] ** 2).sum(axis=1)).max()) / row_scale
    return (bound_rows(X, method, row_scale, row_max=row_max),
            bound_rows(X_test, method, row_scale, row_max=row_max))


def run_stacking(cells, seed=0, n_jobs=1, cache=False):
    """Run :func:`stacking_cell` over a list of cells; returns the tidy DataFrame."""
    df = run_cells(stacking_cell, cells, seed=seed, n_jobs=n_jobs, cache=cache, desc="PST")
    return df


def _cells(profile, datasets, methods, epsilons, repeats, **extra):
    p = _profile(profile)
    return [dict(dataset=d, method=m, epsilon=float(e), repeat=r, lam_grid=list(p["lam_grid"]), **extra)
            for r in range(repeats) for d in datasets for m in methods for e in epsilons]


def fig1_epsilon(profile="quick", datasets=None, methods=STACKING_METHODS, epsilons=None, n_repeats=None,
                 seed=0, n_jobs=1, cache=False):
    """PST Figure 1: test AUC against ε for PLR, PST-S, PST-F(U), PST-F(W) on MNIST and NEWS20."""
    p = _profile(profile)
    cells = _cells(profile, datasets or p["datasets"], methods, epsilons or p["epsilons"],
                   n_repeats or p["n_repeats"])
    return run_stacking(cells, seed, n_jobs, cache)


def fig2_groups(profile="quick", datasets=None, k_grid=None, epsilon=1.0, n_repeats=None, seed=0, n_jobs=1,
                cache=False):
    """PST Figure 2(a)-(b): test AUC against K at ε = 1 for PST-F(U) and PST-F(W) (PLR as reference)."""
    p = _profile(profile)
    reps = n_repeats or p["k_repeats"]
    cells = [dict(dataset=d, method=m, epsilon=float(epsilon), repeat=r, n_groups=int(k), lam_grid=list(p["lam_grid"]))
             for r in range(reps) for d in (datasets or p["datasets"]) for k in (k_grid or p["k_grid"])
             for m in ("PST-F(U)", "PST-F(W)")]
    cells += [dict(dataset=d, method="PLR", epsilon=float(epsilon), repeat=r, n_groups=1, lam_grid=list(p["lam_grid"]))
              for r in range(reps) for d in (datasets or p["datasets"])]
    return run_stacking(cells, seed, n_jobs, cache)


def fig3_importance(profile="quick", datasets=None, alphas=None, epsilon=1.0, n_repeats=None, seed=0, n_jobs=1,
                    cache=False):
    """PST Figure 2(c)-(d): PST-F(W) with v_i = α^i against α; PST-F(U) (α-free) as reference."""
    p = _profile(profile)
    reps = n_repeats or p["n_repeats"]
    ds = datasets or p["datasets"]
    cells = [dict(dataset=d, method="PST-F(W)", epsilon=float(epsilon), repeat=r, alpha=float(a),
                  lam_grid=list(p["lam_grid"])) for r in range(reps) for d in ds for a in (alphas or p["alphas"])]
    cells += [dict(dataset=d, method="PST-F(U)", epsilon=float(epsilon), repeat=r, lam_grid=list(p["lam_grid"]))
              for r in range(reps) for d in ds]
    return run_stacking(cells, seed, n_jobs, cache)


def fig4_combiners(profile="quick", dataset="NEWS20", epsilon=1.0, n_repeats=None, seed=0, n_jobs=1, cache=False):
    """PST Figure 3 (Figure 4 of the arXiv version): C-0 … C-4, C-mv, C-wmv, C-hl of PST-F(U) and PST-F(W)."""
    p = _profile(profile)
    cells = [dict(dataset=dataset, method=m, epsilon=float(epsilon), repeat=r, combiners=True,
                  lam_grid=list(p["lam_grid"])) for r in range(n_repeats or p["n_repeats"])
             for m in ("PST-F(U)", "PST-F(W)")]
    return run_stacking(cells, seed, n_jobs, cache)


#: The ablation's variations, each a change of one option from the defaults.
ABLATION_VARIANTS = {
    "default": {},
    "row_bound=normalize": {"row_bound": "normalize"},
    "row_bound=scale": {"row_bound": "scale"},
    "row_bound=private_max (NOT DP)": {"row_bound": "private_max"},
    "rows ÷ 4 (public constant)": {"row_scale": 4.0},
    "meta_features=sigmoid": {"meta_features": "sigmoid"},
    "meta_features=sigmoid, no high intercept": {"meta_features": "sigmoid", "high_intercept": False},
    "lam_blocks=importance": {"lam_blocks": "importance"},
    "lam_high=1e-3": {"lam_high": 1e-3},
    "lam_high=1e-1": {"lam_high": 1e-1},
    "low_intercept": {"low_intercept": True},
    "no high intercept": {"high_intercept": False},
}


def ablation(profile="quick", dataset="MNIST", methods=("PLR", "PST-F(U)", "PST-F(W)"), epsilons=(1.0,),
             variants=None, n_repeats=None, seed=0, n_jobs=1, cache=False):
    """The open choices (row bounding, meta-features, λ per level, intercepts), one at a time."""
    p = _profile(profile)
    variants = ABLATION_VARIANTS if variants is None else variants
    cells = [dict(dataset=dataset, method=m, epsilon=float(e), repeat=r, options=dict(variants[v]), variant=v,
                  lam_grid=list(p["lam_grid"]))
             for r in range(n_repeats or p["n_repeats"]) for v in variants for m in methods for e in epsilons]
    return run_cells(_ablation_cell, cells, seed=seed, n_jobs=n_jobs, cache=cache, desc="PST ablation")


def _ablation_cell(variant, **cell):
    return stacking_cell(**cell)


# --- claims ----------------------------------------------------------------------------------------

def check_claim(df, better, worse, by="method", value="auc", pair_on=("repeat",), where=None,
                alternative="greater", alpha=0.05, claim=None):
    """Paired one-sided t-test of "``better`` has larger ``value`` than ``worse``" at level 1 − alpha.

    Rows of ``df`` with ``df[by] == better`` and ``df[by] == worse`` are matched on
    ``pair_on`` (e.g. repeat and ε: the same data split) after filtering by ``where``
    (a dict column -> value or list of values). Verdict: ``"agrees"`` if the
    one-sided p-value < alpha; ``"disagrees (reversed)"`` if the opposite one-sided
    test is significant; else ``"disagrees (no significant difference)"``.
    ``alternative="less"`` tests the reversed ordering.

    Returns
    -------
    dict with claim, n_pairs, mean_diff (better − worse), p_value, verdict.
    """
    part = df
    for col, val in (where or {}).items():
        vals = val if isinstance(val, (list, tuple, set)) else [val]
        part = part[part[col].isin(vals)]
    keys = list(pair_on)
    a = part[part[by] == better].set_index(keys)[value]
    b = part[part[by] == worse].set_index(keys)[value]
    joined = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
    diff = (joined["a"] - joined["b"]).to_numpy()
    if alternative == "less":
        diff = -diff
    n = diff.size
    if n < 2:
        p_fwd = p_rev = np.nan
    elif np.allclose(diff, diff[0]):  # no spread: the t statistic is undefined
        p_fwd, p_rev = (0.0, 1.0) if diff[0] > 0 else ((1.0, 0.0) if diff[0] < 0 else (1.0, 1.0))
    else:
        p_fwd = float(stats.ttest_1samp(diff, 0.0, alternative="greater").pvalue)
        p_rev = float(stats.ttest_1samp(diff, 0.0, alternative="less").pvalue)
    if n >= 2 and p_fwd < alpha:
        verdict = "agrees"
    elif n >= 2 and p_rev < alpha:
        verdict = "disagrees (reversed)"
    elif n < 2:
        verdict = "untestable (fewer than 2 pairs)"
    else:
        verdict = "disagrees (no significant difference)"
    rel = ">" if alternative == "greater" else "<"
    return dict(claim=claim or f"{better} {rel} {worse}", n_pairs=n,
                mean_diff=float(np.mean(diff)) if n else np.nan, p_value=p_fwd, verdict=verdict)


def claims_table(results):
    """A DataFrame of :func:`check_claim` results, rounded for printing."""
    out = pd.DataFrame(results)
    return out.round({"mean_diff": 4, "p_value": 4})


def summarise(df, index, columns="method", value="auc"):
    """mean ± s.d. over repeats as strings, index × columns, for printing."""
    g = df.groupby([*np.atleast_1d(index), *np.atleast_1d(columns)])[value].agg(["mean", "std"])
    txt = g.apply(lambda r: f"{r['mean']:.4f} ± {r['std']:.4f}", axis=1)
    return txt.unstack(list(np.atleast_1d(columns)))


def require_data(*datasets):
    """Load (and cache) each dataset; stop with one clear message if its raw files are absent."""
    from ..datasets import DatasetNotFoundError

    for name in datasets:
        try:
            load_task(name)
        except DatasetNotFoundError as err:
            raise DatasetNotFoundError(f"this page needs {name}: {err}") from None


def _finite(df):
    return df[np.isfinite(df["epsilon"])]


def fig1_claims(df):
    """PST Figure 1's claims, tested per dataset (pairs: repeat × finite ε)."""
    out = []
    for d, part in df.groupby("dataset", sort=False):
        fin = _finite(part)
        lo, hi = fin["epsilon"].min(), fin["epsilon"].max()
        for m in STACKING_METHODS:
            out.append(dict(dataset=d, **check_claim(fin, hi, lo, by="epsilon", where={"method": m},
                                                     claim=f"{m}: AUC at ε={hi:g} > at ε={lo:g}")))
        per_eps = [check_claim(fin, "PLR", "PST-S", pair_on=("repeat",), where={"epsilon": e})
                   for e in sorted(fin["epsilon"].unique())]
        some = [r for r in per_eps if r["verdict"] == "agrees"]
        best = some[0] if some else min(per_eps, key=lambda r: r["p_value"])
        out.append(dict(dataset=d, **{**best, "claim": "PST-S can be inferior to PLR (PLR > PST-S at some ε)",
                                      "verdict": "agrees" if some else best["verdict"]}))
        for better in ("PST-F(W)", "PST-F(U)"):
            for worse in ("PST-S", "PLR"):
                out.append(dict(dataset=d, **check_claim(fin, better, worse, pair_on=("repeat", "epsilon"))))
        out.append(dict(dataset=d, **check_claim(fin, "PST-F(W)", "PST-F(U)", pair_on=("repeat", "epsilon"),
                                                 claim="PST-F(W) is the best: PST-F(W) > PST-F(U)")))
    return claims_table(out)


def fig2_claims(df):
    """PST Figure 2(a)-(b): a peak at an intermediate K (best interior K beats both ends)."""
    out = []
    for (d, m), part in df[df["method"] != "PLR"].groupby(["dataset", "method"], sort=False):
        ks = sorted(part["n_groups"].unique())
        means = part.groupby("n_groups")["auc"].mean()
        k_best = int(means.loc[ks[1:-1]].idxmax())
        for end in (ks[0], ks[-1]):
            out.append(dict(dataset=d, method=m, **check_claim(
                part, k_best, end, by="n_groups", claim=f"peak: K={k_best} > K={end}")))
    return claims_table(out)


def alpha_label(row):
    """"W(α=0.5)" for PST-F(W) rows with an α, else the method name."""
    a = row.get("alpha")
    return f"W(α={a:g})" if row["method"] == "PST-F(W)" and a is not None and np.isfinite(a) else row["method"]


def fig3_claims(df):
    """PST Figure 2(c)-(d): α < 1 beats U; α > 1 is worse than α < 1; W is flat in α < 1."""
    df = df.assign(label=df.apply(alpha_label, axis=1))
    out = []
    for d, part in df.groupby("dataset", sort=False):
        alphas = sorted(part["alpha"].dropna().unique())
        small, large = [a for a in alphas if a < 1], [a for a in alphas if a > 1]
        for a in small:
            out.append(dict(dataset=d, **check_claim(part, f"W(α={a:g})", "PST-F(U)", by="label")))
        for a in large:
            out.append(dict(dataset=d, **check_claim(part, f"W(α={small[-1]:g})", f"W(α={a:g})", by="label",
                                                     claim=f"AUC decreases for α > 1: α={small[-1]:g} > α={a:g}")))
        if len(small) >= 2:  # "not sensitive": no significant difference either way
            r = check_claim(part, f"W(α={small[0]:g})", f"W(α={small[-1]:g})", by="label")
            two_sided = min(1.0, 2 * min(r["p_value"], 1 - r["p_value"]))
            verdict = "agrees" if two_sided >= 0.05 else "disagrees (significant difference)"
            claim = f"not sensitive for α < 1: α={small[0]:g} ≈ α={small[-1]:g}"
            out.append(dict(dataset=d, **{**r, "claim": claim, "p_value": two_sided, "verdict": verdict}))
    return claims_table(out)


def fig4_claims(df):
    """PST Figure 3 (Figure 4 of the arXiv version): C-0 best single model (W); C-hl beats votes and singles."""
    out = []
    w = df[df["method"] == "PST-F(W)"]
    singles = sorted(c for c in df["combiner"].unique() if c not in ("C-mv", "C-wmv", "C-hl"))
    for c in singles[1:]:
        out.append(dict(method="PST-F(W)", **check_claim(w, "C-0", c, by="combiner")))
    for m, part in df.groupby("method", sort=False):
        for c in ["C-mv", "C-wmv", *singles]:
            out.append(dict(method=m, **check_claim(part, "C-hl", c, by="combiner")))
    return claims_table(out)


def eps_axis(df, column="epsilon"):
    """Copy of df with ``eps_pos``: ε, and ε = ∞ drawn at twice the largest finite ε (tick "∞")."""
    finite = df.loc[np.isfinite(df[column]), column]
    inf_pos = 2 * finite.max() if len(finite) else 1.0
    return df.assign(eps_pos=np.where(np.isfinite(df[column]), df[column], inf_pos)), inf_pos


def set_eps_ticks(ax, df, inf_pos):
    """Log-x ticks at the ε values, the ∞ position labelled "∞"."""
    vals = sorted(df["eps_pos"].unique())
    ax.set_xscale("log")
    ax.set_xticks(vals)
    ax.set_xticklabels(["∞" if v == inf_pos and not np.isfinite(df["epsilon"]).all() else f"{v:g}" for v in vals])
    ax.minorticks_off()


def chosen_lam(df, index, columns="method"):
    """The λ chosen most often over repeats (ties: the smaller), index × columns."""
    return df.groupby([*np.atleast_1d(index), *np.atleast_1d(columns)])["lam"].agg(
        lambda s: s.mode().min()).unstack(list(np.atleast_1d(columns)))


def high_level_signal(est, X, y):
    """Signal and noise the high-level PLR of a fitted stacking model saw on its part D_h.

    signal = ‖∇ of the mean logistic loss at w = 0‖ = ‖mean(y·m)‖/2 over the meta-features m of
    D_h (y = ±1); noise = ‖b‖/n_h, the size of the perturbation term's gradient. When
    noise ≳ signal the high level's weights, and with them the sign of C-hl, are mostly noise.

    An analysis, not a release: it needs the rows of D_h and the high level's noise, which
    exist only on an estimator fitted with ``diagnostics=True`` (such an object is not private).
    """
    from ..stacking import meta_features

    diag = getattr(est, "diagnostics_", None)
    if diag is None:
        raise ValueError("high_level_signal needs an estimator fitted with diagnostics=True "
                         "(the rows of D_h and the high level's noise are diagnostics)")
    rows = diag.high_index
    M = meta_features(est.decision_function_low(X[rows]), est.meta_features)
    ys = np.where(y[rows] == est.classes_[1], 1.0, -1.0)
    signal = float(np.linalg.norm((ys[:, None] * M).mean(axis=0)) / 2)
    noise = float(diag.high_level.noise_norm / rows.size)
    return dict(meta_rms=float(np.sqrt((M ** 2).sum(axis=1).mean())), signal=signal, noise=noise,
                high_coef_norm=float(np.linalg.norm(est.high_level_.coef_)))


def swing_diagnostics(dataset="MNIST", method="PST-F(U)", epsilon=0.25, lam=0.1, n_seeds=20, options=None):
    """Refit one PST-F configuration with ``n_seeds`` noise seeds on the whole training set.

    Returns one row per seed: test AUC of C-hl, of the best single low-level model and
    of C-wmv, and :func:`high_level_signal`. Shows where an AUC that swings across repeats
    comes from.
    """
    X, y, X_test, y_test, variance = load_task(dataset)
    rows = []
    for s in range(n_seeds):
        # an analysis of the noise: diagnostics=True keeps the high level's noise and the rows of D_h
        est = _estimator(method, epsilon, lam, 5, _importance(method, None, variance), options, s,
                         diagnostics=True).fit(X, y)
        d = est.decision_functions(X_test)
        singles = [_auc(y_test, v) for k, v in d.items() if k not in ("C-mv", "C-wmv", "C-hl")]
        rows.append(dict(seed=s, auc_hl=_auc(y_test, d["C-hl"]), auc_best_single=max(singles),
                         auc_wmv=_auc(y_test, d["C-wmv"]), **high_level_signal(est, X, y)))
    return pd.DataFrame(rows)
