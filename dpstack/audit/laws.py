"""The law of the noise, recovered from real releases and tested against the claim.

Every private mechanism of dpstack adds noise with density ∝ exp(−‖b‖/scale): the
norm is Gamma(d, scale) and the direction uniform on the sphere. The check here
drives the estimator's public ``fit`` many times, reads back each noise vector from
what the fitted object *releases* and the data the audit handed in, and tests the
sample against the law the privacy claim requires (Kolmogorov–Smirnov on the norms
and on the directions' coordinates). Nothing the estimator says about its own noise
(calibration attributes, noise norms, sensitivities) is used: the claimed scale is
recomputed from the public parameters with the papers' formulas.

How each mechanism's noise is read back:

* **Objective perturbation** (PLR, each block of PLR-FS, every level of PST-S, PST-F
  and PPTL-FS). The release w is the exact minimiser of the perturbed objective, so
  stationarity gives b = Σ_i y_i σ(−y_i wᵀz_i) z_i − nλ(w − w0) − nΔw, with z_i the
  rows clipped as the claim says (the audit clips them itself) and Δ, ε′ from the
  claim (``objective_perturbation_calibration`` / ``feature_split_calibration`` of the
  public ε, n, λ, bound). Claimed law: ‖b‖ ~ Gamma(d, 2·bound/ε′). A high level is
  read back from the meta-features the *released* low level gives on D_h, so a high
  level that saw other records (or a low level that is not what was released) shows up.
* **SimComb** (two PLRs). The source PLR's noise from the released w_s and the source
  rows; the target PLR's noise from the released w_t and the target rows with the centre
  w0 = (1 − η)·w_s, which the audit computes itself from the *released* w_s and the public
  η (not from the centre the target model states). The rows are mapped by the audit's own
  copy of SimComb's public row map (``row_bound``, ``row_scale``). A target centred at
  anything but the released source (e.g. the source minimiser without noise) leaves an
  offset in the recovered noise; with one seed on D and on D' with one source record
  replaced, the target's recovered noise must not move
  (:func:`~dpstack.audit.composition_noise_identity`).
* **Output perturbation** (MPL vote, soft, avg; two classes and K ≥ 3). The noise is
  the released ``coef_`` minus the minimiser recomputed by the audit's own solver
  (:func:`mpl_unperturbed`, scipy's L-BFGS on the same objective). Claimed law:
  ‖η‖ ~ Gamma(d·K_out, sensitivity/ε), the sensitivity from Hamm et al.'s theorems
  for the public M, K, λ.

A user's mechanism joins by defining ``recover_noise(X, y, **fit_params)`` (see
:mod:`dpstack.audit.protocol`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import optimize, stats
from scipy.special import expit, log_expit, log_softmax, softmax

from .._validation import check_random_state
from ..linear import FeatureSplitLogisticRegression, PrivateLogisticRegression
from ..mechanisms import clip_rows, feature_split_calibration, objective_perturbation_calibration
from ..multiparty.estimator import MultipartyPrivateClassifier, mpl_sensitivity
from ..stacking import PrivateStackingClassifier
from ..transfer import PrivateTransferStacking, SimComb
from .protocol import NO_MAP, NoiseBlock, fit_clone, ledger_view, split_of

__all__ = [
    "recover_noise",
    "register_noise_recovery",
    "stationarity_noise",
    "mpl_unperturbed",
    "noise_law_test",
    "law_pvalues",
    "ALPHA",
]

#: a law test rejects when its (Bonferroni-corrected) p-value is below this
ALPHA = 1e-3


def stationarity_noise(Z, ys, w, lam, delta=0.0, w0=None):
    """b = Σ y_i σ(−y_i wᵀz_i) z_i − nλ(w − w0) − nΔw: the noise that makes w the exact minimiser."""
    Z, w = np.asarray(Z, dtype=float), np.asarray(w, dtype=float)
    n = Z.shape[0]
    w0 = np.zeros_like(w) if w0 is None else np.asarray(w0, dtype=float)
    return (Z * ys[:, None]).T @ expit(-ys * (Z @ w)) - n * lam * (w - w0) - n * delta * w


def _signed(classes, y):
    return np.where(np.asarray(y) == classes[1], 1.0, -1.0)


# -------------------------------------------------------------------- objective perturbation
def _objective_noise(X, ys, w, epsilon, lam, bound, fit_intercept=False, intercept_scaling=None, w0=None, name="PLR"):
    """The noise of one PLR run read back from its released w, everything else from the claim.

    The rows are clipped here (to √(B² − s²) with the constant s appended when there is an
    intercept, to B otherwise) and ε′, Δ and the scale 2B/ε′ are recomputed from the public
    ε, n, λ and B.
    """
    X = np.asarray(X, dtype=float)
    bound = float(bound)
    if fit_intercept:
        s = bound / 2.0 if intercept_scaling is None else float(intercept_scaling)
        Z = np.hstack([clip_rows(X, np.sqrt(bound**2 - s**2)), np.full((X.shape[0], 1), s)])
    else:
        Z = clip_rows(X, bound)
    cal = objective_perturbation_calibration(epsilon, Z.shape[0], lam, bound)
    w0 = None if w0 is None else np.ravel(w0)
    b = stationarity_noise(Z, ys, w, float(lam), cal.delta, w0)
    return NoiseBlock(name, b, cal.noise_scale)


def _plr_noise(est, X, y, name="PLR", cache=None):
    p = est.get_params(deep=False)
    return [
        _objective_noise(
            X,
            _signed(est.classes_, y),
            est.w_,
            p["epsilon"],
            p["lam"],
            p["norm_bound"],
            p["fit_intercept"],
            p["intercept_scaling"],
            p["w0"],
            name,
        )
    ]


def _plrfs_noise(est, X, y, name="PLR-FS", cache=None):
    p = est.get_params(deep=False)
    X = np.asarray(X, dtype=float)
    K = len(est.groups_)
    cal = feature_split_calibration(p["epsilon"], X.shape[0], p["lam"], est.importance_)
    lam = np.broadcast_to(np.asarray(p["lam"], dtype=float), (K,))
    w0 = None if p["w0"] is None else np.ravel(p["w0"])
    ys = _signed(est.classes_, y)
    out = []
    for k, g in enumerate(est.groups_):
        if cal.noise_scale_k[k] == 0:
            continue
        Zk = clip_rows(X[:, g], est.importance_[k])
        b = stationarity_noise(Zk, ys, est.block_coefs_[k], lam[k], cal.delta_k[k], None if w0 is None else w0[g])
        out.append(NoiseBlock(f"{name} block {k + 1}", b, float(cal.noise_scale_k[k])))
    return out


def _stacking_noise(est, X, y, cache=None, **fit_params):
    X = np.asarray(X, dtype=float)
    ys = _signed(est.classes_, y)
    Z = est.bounded_design(X)
    low, high, sample_parts = split_of(est, X, y, fit_params)
    out = []
    if isinstance(est.low_level_, list):
        for k, (plr, rows) in enumerate(zip(est.low_level_, sample_parts)):
            out += _plr_noise(plr, Z[rows], ys[rows], f"low PLR S_{k + 1}")
    else:
        out += _plrfs_noise(est.low_level_, Z[low], ys[low], "low PLR-FS")
    M = est.high_level_inputs(X[high])
    out += _plr_noise(est.high_level_, M, ys[high], "high PLR")
    X_source, y_source = fit_params.get("X_source"), fit_params.get("y_source")
    if X_source is not None and getattr(est, "source_", None) is not None:  # PPTL-FS: the source blocks too
        Xs = np.asarray(X_source, dtype=float)
        source_classes = getattr(est, "source_classes_", est.classes_)
        out += _plrfs_noise(est.source_, est.bounded_design(Xs), _signed(source_classes, y_source), "source PLR-FS")
    return out


def _one_block_rows(X, row_bound, row_scale, block_max=None):
    """SimComb's row map, recomputed by the audit: x/row_scale, then clipped to norm 1 ("clip",
    "scale"), rescaled to norm 1 ("normalize", 0 stays 0) or divided by the released largest
    norm and clipped ("private_max", outside the guarantee)."""
    X = np.asarray(X, dtype=float) / float(row_scale)
    if row_bound in ("clip", "scale"):
        return clip_rows(X, 1.0)
    norms = np.linalg.norm(X, axis=1)
    if row_bound == "normalize":
        return X * np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)[:, None]
    if row_bound == "private_max":
        m = float(np.ravel(block_max)[0])
        return clip_rows(X * (1.0 / m if m > 0 else 0.0), 1.0)
    raise ValueError(f"the audit does not know the row map {row_bound!r}")


def _simcomb_noise(est, X, y, cache=None, X_source=None, y_source=None):
    """SimComb: the source PLR's noise from the released w_s and the source data; the target
    PLR's noise from the released w_t, the target data and the centre (1 − η)·w_s, which the
    audit computes itself from the *released* w_s and the public η."""
    p = est.get_params(deep=False)
    out = []
    if X_source is not None:
        Zs = _one_block_rows(X_source, p["row_bound"], p["row_scale"], getattr(est, "source_block_max_", None))
        out.append(
            _objective_noise(
                Zs,
                _signed(est.classes_, y_source),
                est.source_.w_,
                p["epsilon_source"],
                p["lam_source"],
                1.0,
                p["fit_intercept"],
                None,
                None,
                "source PLR",
            )
        )
    Zt = _one_block_rows(X, p["row_bound"], p["row_scale"], getattr(est, "block_max_", None))
    w0 = (1.0 - float(p["eta"])) * np.asarray(est.source_.w_, dtype=float)
    out.append(
        _objective_noise(
            Zt,
            _signed(est.classes_, y),
            est.target_.w_,
            p["epsilon_target"],
            p["lam"],
            1.0,
            p["fit_intercept"],
            None,
            w0,
            "target PLR",
        )
    )
    return out


# -------------------------------------------------------------------- output perturbation
def _fit_logistic(Z, T, lam, n_out):
    """argmin (1/n) Σ loss(W z_i; T_i) + (λ/2)‖W‖² by L-BFGS (soft targets, no intercept)."""
    n, d = Z.shape

    def f(v):
        W = v.reshape(n_out, d)
        S = Z @ W.T
        if n_out == 1:
            s = S[:, 0]
            val = -(T * log_expit(s) + (1 - T) * log_expit(-s)).mean()
            r = (expit(s) - T)[:, None]
        else:
            val = -(T * log_softmax(S, axis=1)).sum(axis=1).mean()
            r = softmax(S, axis=1) - T
        grad = r.T @ Z / n + lam * W
        return val + 0.5 * lam * np.sum(W * W), grad.ravel()

    res = optimize.minimize(
        f,
        np.zeros(n_out * d),
        jac=True,
        method="L-BFGS-B",
        options=dict(maxiter=20000, gtol=1e-13, ftol=0.0, maxcor=30),
    )
    return res.x.reshape(n_out, d)


def mpl_unperturbed(est, X, y, parties, X_aux=None):
    """The MPL minimiser w_s recomputed by the audit (not read from the estimator).

    Local models: one λ_local-regularised logistic (softmax for K ≥ 3) regression per
    party on its clipped rows; their predictions on the clipped auxiliary rows give the
    majority vote (ties → ``classes_[1]`` for two classes, lowest index else) or the vote
    fractions α; the global model is the λ-regularised soft-target logistic regression on
    them (vote, soft) or the mean local model (avg). Solved with scipy's L-BFGS.
    """
    p = est.get_params(deep=False)
    method, lam = p["method"], float(p["lam"])
    local_lam = lam if p["local_lam"] is None else float(p["local_lam"])
    classes = est.classes_
    K = classes.size
    n_out = 1 if K == 2 else K
    Xc = clip_rows(np.asarray(X, dtype=float), 1.0)
    y_idx = np.searchsorted(classes, np.asarray(y))
    parties = np.asarray(parties)
    M = int(parties.max()) + 1
    local = []
    for m in range(M):
        rows = parties == m
        T = (y_idx[rows] == 1).astype(float) if K == 2 else np.eye(K)[y_idx[rows]]
        local.append(_fit_logistic(Xc[rows], T, local_lam, n_out))
    local = np.array(local)
    if method == "avg":
        return local.mean(axis=0)
    Xa = clip_rows(np.asarray(X_aux, dtype=float), 1.0)
    S = np.einsum("nd,mkd->mnk", Xa, local)
    votes = (S[..., 0] >= 0).astype(int) if K == 2 else np.argmax(S, axis=2)
    counts = np.stack([(votes == k).sum(axis=0) for k in range(K)], axis=1).astype(float)
    if method == "vote":
        winner = (counts[:, 1] >= counts[:, 0]).astype(int) if K == 2 else np.argmax(counts, axis=1)
        T = np.eye(K)[winner]
    elif method == "soft":
        T = counts / M
    else:
        raise ValueError(f"no private release for method={method!r}")
    return _fit_logistic(Xa, T[:, 1] if K == 2 else T, lam, n_out)


def _mpl_noise(est, X, y, parties, X_aux=None, cache=None):
    p = est.get_params(deep=False)
    key = "mpl_unperturbed"
    if cache is None or key not in cache:
        w_s = mpl_unperturbed(est, X, y, parties, X_aux)
        if cache is not None:
            cache[key] = w_s
    else:
        w_s = cache[key]
    M = int(np.max(parties)) + 1
    n_aux = None if X_aux is None else np.asarray(X_aux).shape[0]
    lam = p["lam"] if p["method"] != "avg" or p["local_lam"] is None else p["local_lam"]
    S = mpl_sensitivity(p["method"], M, est.classes_.size, lam, p["protect_aux"], n_aux)
    eta = (np.asarray(est.coef_) - w_s).ravel()
    return [NoiseBlock(f"MPL {p['method']}", eta, S / float(p["epsilon"]))]


# -------------------------------------------------------------------- registry
_RECOVERERS = {
    PrivateLogisticRegression: _plr_noise,
    FeatureSplitLogisticRegression: _plrfs_noise,
    PrivateStackingClassifier: _stacking_noise,
    PrivateTransferStacking: _stacking_noise,
    SimComb: _simcomb_noise,
    MultipartyPrivateClassifier: _mpl_noise,
}


def register_noise_recovery(cls, function):
    """Teach the audit how to read the noise of ``cls`` back: ``function(fitted, X, y, cache=None, **fit_params)``
    → list of :class:`~dpstack.audit.NoiseBlock`. Subclasses inherit it. (A class can instead define
    a ``recover_noise(X, y, **fit_params)`` method.)"""
    _RECOVERERS[cls] = function


def recover_noise(fitted, X, y, fit_params=None, cache=None):
    """The noise vectors of one fit, read back from its release and the data (see the module doc)."""
    fit_params = fit_params or {}
    if callable(getattr(fitted, "recover_noise", None)):
        return list(fitted.recover_noise(X, y, **fit_params))
    for cls in type(fitted).__mro__:
        if cls in _RECOVERERS:
            return _RECOVERERS[cls](fitted, X, y, cache=cache, **fit_params)
    raise TypeError(
        f"the audit cannot read the noise of {type(fitted).__name__} back: define "
        "recover_noise(X, y, **fit_params) or call register_noise_recovery"
    )


# -------------------------------------------------------------------- the test
def law_pvalues(noise, scale):
    """p-values of the claimed law for a sample of noise vectors, shape (m, d).

    ``norm``: KS of ‖b‖/scale against Gamma(d, 1). ``direction``: for d ≥ 2, KS of the
    first coordinate and of the coordinate along (1, …, 1)/√d of b/‖b‖ against the law of
    a coordinate of a uniform unit vector ((u + 1)/2 ~ Beta((d−1)/2, (d−1)/2)), the smaller
    p-value times 2; for d = 1 a binomial test that the sign is fair.
    """
    noise = np.atleast_2d(noise)
    m, d = noise.shape
    norms = np.linalg.norm(noise, axis=1)
    p_norm = stats.kstest(norms / scale, stats.gamma(d).cdf).pvalue if scale > 0 else float(np.all(norms == 0))
    if d == 1:
        p_dir = stats.binomtest(int((noise[:, 0] > 0).sum()), m).pvalue
    else:
        u = noise / np.maximum(norms, 1e-300)[:, None]
        law = stats.beta((d - 1) / 2, (d - 1) / 2)
        axes = [np.eye(d)[0], np.ones(d) / np.sqrt(d)]
        p_dir = min(1.0, 2 * min(stats.kstest((u @ a + 1) / 2, law.cdf).pvalue for a in axes))
    return float(p_norm), float(p_dir), float(norms.mean() / (d * scale)) if scale > 0 else np.nan


def noise_law_test(template, X, y, n_fits=1000, fit_params=None, random_state=0, alpha=ALPHA, epsilon_from="ledger"):
    """Fit ``template`` ``n_fits`` times by its public ``fit``, read every noise back, test the law.

    Parameters
    ----------
    template : estimator (unfitted)
        Any estimator :func:`recover_noise` can read (dpstack's, or one with
        ``recover_noise``).
    X, y : the data handed to ``fit``.
    n_fits : int, default=1000
    fit_params : dict or None
        Extra arguments of ``fit`` (``parties``, ``X_aux`` for MPL).
    random_state : int or Generator
        Seeds of the fits.
    alpha : float
        The mechanism passes when every p-value, Bonferroni-corrected over all tests,
        is ≥ alpha.
    epsilon_from : {"ledger", "parameters"}, default="ledger"
        Where each level's claimed ε comes from: the ε the fitted object's ledger declares for
        the level's part (:func:`~dpstack.audit.protocol.ledger_view`), or the level's own
        ``epsilon`` parameter (a level that spends another part's or domain's ε then passes).

    Returns
    -------
    pandas.DataFrame, one row per noise block: ``block``, ``d``, ``claimed scale``,
    ``scale ratio`` (mean ‖b‖ / (d·scale): 1 when the scale is right), ``p norm``,
    ``p direction``, ``reject``; attributes ``attrs["pass"]`` (bool), ``attrs["n_fits"]`` and
    ``attrs["samples"]`` (block name → the recovered noise vectors divided by the claimed scale).
    """
    rng = check_random_state(random_state)
    seeds = rng.integers(0, 2**31 - 1, size=int(n_fits))
    cache, samples, scales = {}, {}, {}
    for s in seeds:
        fitted = fit_clone(template, X, y, s, fit_params)
        if epsilon_from == "ledger":
            view, missing = ledger_view(fitted)
            if missing and NO_MAP not in missing:
                raise ValueError(f"the ledger of {type(fitted).__name__} declares no ε for {missing}")
            fitted = view
        for blk in recover_noise(fitted, X, y, fit_params, cache):
            samples.setdefault(blk.name, []).append(blk.noise)
            scales[blk.name] = blk.scale
    n_tests = 2 * len(samples)
    rows = []
    for name, noise in samples.items():
        noise = np.array(noise)
        p_norm, p_dir, ratio = law_pvalues(noise, scales[name])
        rows.append(
            {
                "block": name,
                "d": noise.shape[1],
                "claimed scale": scales[name],
                "scale ratio": ratio,
                "p norm": p_norm,
                "p direction": p_dir,
                "reject": bool(min(p_norm, p_dir) * n_tests < alpha),
            }
        )
    table = pd.DataFrame(rows)
    table.attrs["pass"] = not table["reject"].any()
    table.attrs["n_fits"] = int(n_fits)
    table.attrs["samples"] = {name: np.array(noise) / scales[name] for name, noise in samples.items()}
    return table
