"""The PST / PPTL theorems as functions: sample complexity, budgets, guarantees.

* PST Proposition 2 (= Chaudhuri et al. 2011, Thm 18) and PST Theorem 5 /
  PPTL Proposition 4: how many samples PLR and one low-level block of PLR-FS
  need to come within ε_g of a reference model
  (:func:`plr_sample_complexity`, :func:`block_sample_complexity`), and the
  ratio of their dominant terms (:func:`sample_complexity_ratio`).
* The privacy accounting of the proofs (PST Lemma 8): what a feature-split
  calibration spends in the worst case (:func:`feature_split_spend`), and what
  PPTL Algorithm 3 *as printed* (ε^(k) = ε) would spend (:func:`pptl_printed_spend`).
* PST Corollary 6 / PPTL Theorem 5: the per-domain guarantees read off a
  ledger (:func:`domain_guarantees`).

The bounds hold up to the unknown constant C₁ of the theorems, so only their
*ratios* and their dependence on n, d, K, q_k, ε are meaningful numbers.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_expit

from .mechanisms import check_importance, feature_split_calibration

__all__ = [
    "sample_complexity_ratio",
    "plr_sample_complexity",
    "block_sample_complexity",
    "feature_split_spend",
    "pptl_printed_spend",
    "domain_guarantees",
    "logistic_loss",
    "make_weighted_features",
    "excess_loss_curve",
    "single_record_privacy_loss",
    "max_single_record_loss",
]


def _check_delta(delta):
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    return float(delta)


def sample_complexity_ratio(d, K, q, delta):
    """r^(k) = log(d/(Kδ)) / (q_k K log(d/δ)) (PPTL Proposition 4; PST Theorem 5 vs Proposition 2).

    The dominant (second) term of the block's sample complexity divided by
    PLR's on all d features, when a_k = q_k‖v_k‖ equals ‖v‖ (the block's
    reference model rescaled by 1/q_k along with its inputs). r < 1 means the
    block needs fewer samples than PLR. With q_k = 1/K: r = log(d/(Kδ))/log(d/δ) < 1.

    Parameters
    ----------
    d : int
        Total number of features (blocks have d/K each).
    K : int
        Number of blocks, 1 ≤ K ≤ d.
    q : float or array-like
        Importance q_k > 0 of the block(s).
    delta : float
        Failure probability δ ∈ (0, 1); the formula needs d/(Kδ) > 1.

    Returns
    -------
    r : float or ndarray

    Examples
    --------
    >>> round(sample_complexity_ratio(100, 5, 0.2, 0.05), 4)
    0.7883
    """
    delta = _check_delta(delta)
    if not 1 <= K <= d:
        raise ValueError(f"need 1 <= K <= d, got K={K}, d={d}")
    q = np.asarray(q, dtype=float)
    if np.any(q <= 0):
        raise ValueError("q must be > 0 (a block with q_k = 0 learns nothing and has no bound)")
    r = math.log(d / (K * delta)) / (q * K * math.log(d / delta))
    return float(r) if r.ndim == 0 else r


def plr_sample_complexity(d, w_norm, epsilon, eps_g, delta, C=1.0):
    """The three terms of PST Proposition 2 (PLR) and their maximum.

    n > C·max(‖v‖² log(1/δ)/ε_g², d log(d/δ)‖v‖/(ε_g ε), ‖v‖²/(ε_g ε)).

    Returns
    -------
    terms : ndarray of shape (3,)
        The three terms times C (statistical, noise, regularisation).
    n_required : float
        Their maximum.
    """
    delta = _check_delta(delta)
    terms = C * np.array(
        [
            w_norm**2 * math.log(1 / delta) / eps_g**2,
            d * math.log(d / delta) * w_norm / (eps_g * epsilon),
            w_norm**2 / (eps_g * epsilon),
        ]
    )
    return terms, float(terms.max())


def block_sample_complexity(d, K, q, a, epsilon, eps_g, delta, C=1.0):
    """The three terms of PST Theorem 5 / PPTL Proposition 4 for block k, and their maximum.

    n > C·max(a_k² log(1/δ)/ε_g², d log(d/(Kδ)) a_k/(q_k K ε_g ε), a_k²/(ε_g ε)),
    with a_k = q_k‖v_k‖ (PST prints "log(d/κδ)" in the IJCAI version; the arXiv
    version and PPTL have K). With K = 1, q = 1 this is :func:`plr_sample_complexity`
    (PST Remark 2).
    """
    delta = _check_delta(delta)
    terms = C * np.array(
        [
            a**2 * math.log(1 / delta) / eps_g**2,
            d * math.log(d / (K * delta)) * a / (q * K * eps_g * epsilon),
            a**2 / (eps_g * epsilon),
        ]
    )
    return terms, float(terms.max())


def feature_split_spend(epsilon_k, importance, n, lam, delta_k):
    """Worst-case privacy loss of K objective-perturbation blocks, as PST Lemma 8 counts it.

    Σ_k [ ε_k q_k  (noise: ‖b_k‖ − ‖b_k'‖ ≤ 2q_k, density exp(−ε_k‖b‖/2))
          + 2 log(1 + q_k²/(4n(λ_k + Δ_k)))  (Jacobian, c = 1/4) ].

    Blocks with q_k = 0 contribute 0. Returns the total and the two parts.

    Returns
    -------
    total, noise, jacobian : float
    """
    q = check_importance(importance)
    K = q.size
    eps_k = np.broadcast_to(np.asarray(epsilon_k, dtype=float), (K,))
    lam = np.broadcast_to(np.asarray(lam, dtype=float), (K,))
    dk = np.broadcast_to(np.asarray(delta_k, dtype=float), (K,))
    active = q > 0
    noise = float(np.sum(eps_k[active] * q[active]))
    ridge = lam[active] + dk[active]
    if np.any(ridge <= 0):
        raise ValueError("λ_k + Δ_k must be > 0 for every active block (the objective must be strongly convex)")
    jac = float(np.sum(2.0 * np.log1p(q[active] ** 2 / (4.0 * n * ridge))))
    return noise + jac, noise, jac


def pptl_printed_spend(epsilon, n, lam, importance):
    """What PLR-FS would spend with PPTL Algorithm 3 step 6 as printed (ε^(k) = ε when ε' > 0).

    The noise alone then spends Σ_k ε q_k = ε, and the Jacobian factor of the
    proof comes on top: the total is ε + Σ_k log(1 + q_k²/(2nλ_k) + q_k⁴/(16n²λ_k²)) = 2ε − ε'.
    PST Algorithm 3's ε_k = ε' spends exactly ε (:ref:`erratum 2 <erratum-pptl-epsilon-k>`).

    Returns
    -------
    spent : float
        Worst-case privacy loss of the printed variant.
    excess : float
        ``spent − ε`` (≤ 0 in the ε' ≤ 0 branch, where both papers agree).
    """
    cal = feature_split_calibration(epsilon, n, lam, importance)
    eps_k = np.full(cal.importance.size, epsilon) if cal.branch == "delta=0" else cal.epsilon_k
    spent = feature_split_spend(eps_k, cal.importance, n, lam, cal.delta_k)[0]
    return spent, spent - epsilon


def domain_guarantees(ledger, source_prefix="D_s", target_prefix="D_t"):
    """PST Corollary 6 / PPTL Theorem 5 read off a ledger: ε per domain.

    Within one domain, mechanisms on one part add up and disjoint parts cost
    their maximum; the source and target are different people, so each domain
    has its own guarantee (they are not added).

    Returns
    -------
    dict
        ``{"source": ε_s, "target": ε_t}`` (0 for a domain with no entries).
    """
    out = {}
    for name, prefix in (("source", source_prefix), ("target", target_prefix)):
        parts = {p: e for p, e in ledger.per_part().items() if p == prefix or p.startswith(prefix + "/")}
        out[name] = max(parts.values()) if parts else 0.0
    return out


def logistic_loss(w, X, y):
    """Mean logistic loss (1/n) Σ log(1 + exp(−y_i wᵀx_i)), y in {−1, +1} or {0, 1}."""
    y = np.asarray(y, dtype=float)
    if set(np.unique(y)) <= {0.0, 1.0}:
        y = 2 * y - 1
    return float(-np.mean(log_expit(y * (np.asarray(X, dtype=float) @ np.asarray(w, dtype=float)))))


def make_weighted_features(n, beta, random_state=None):
    """Synthetic binary data with known feature relevance: x ~ N(0, I/d), P(y=1|x) = σ(√d·βᵀx).

    ``|β_i|`` is the true importance of feature i, so it can play the role of
    the public side information v_i of PST eq. (6). Rows have ‖x‖ ≈ 1.
    """
    from ._validation import check_random_state

    rng = check_random_state(random_state)
    beta = np.asarray(beta, dtype=float)
    d = beta.size
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-np.sqrt(d) * X @ beta))).astype(int)
    return X, y


def excess_loss_curve(
    beta,
    n_grid,
    groups,
    importance,
    epsilon=1.0,
    lam=0.01,
    n_repeats=10,
    n_test=20000,
    n_reference=50000,
    reference_lam=None,
    block_lam=None,
    random_state=0,
):
    """Empirical excess logistic loss of PLR (all features) and of each PLR-FS block, against n.

    For each n and repeat: draw n training samples from :func:`make_weighted_features`,
    fit PLR(ε) on all features (rows clipped to 1) and PLR-FS(ε) with the given
    groups and q_k (block k clipped to q_k); report L(w) − L(v) on a large test
    sample, where v is the non-private minimiser (λ = ``reference_lam``, default
    ``lam``) on ``n_reference`` samples of the *same* inputs (all clipped features
    for PLR, block k clipped to q_k for block k) — the reference models of
    Proposition 2 and Theorem 5. With the same λ the excess measures what noise
    and sampling cost, not the bias of a fixed λ. ``block_lam``: λ_k of the
    blocks (default ``lam`` for every block; see
    :func:`dpstack.stacking.block_lambdas` for the importance-scaled choice).

    Returns
    -------
    pandas.DataFrame
        Columns ``n``, ``repeat``, ``model`` ("PLR" or "block k"), ``q``, ``excess``.
    """
    import pandas as pd

    from ._validation import check_random_state
    from .linear import FeatureSplitLogisticRegression, PrivateLogisticRegression
    from .mechanisms import clip_rows

    rng = check_random_state(random_state)
    q = check_importance(importance)
    Xr, yr = make_weighted_features(n_reference, beta, rng)
    Xt, yt = make_weighted_features(n_test, beta, rng)
    lam_ref = lam if reference_lam is None else reference_lam
    lam_k = np.broadcast_to(np.asarray(lam if block_lam is None else block_lam, dtype=float), q.shape)
    ref_k = lam_k * (lam_ref / lam)
    # the labels of make_weighted_features are 0/1: a public label set
    full_ref = PrivateLogisticRegression(epsilon=np.inf, lam=lam_ref, classes=[0, 1]).fit(Xr, yr)
    ref_fs = FeatureSplitLogisticRegression(epsilon=np.inf, groups=groups, importance=q, lam=ref_k, classes=[0, 1]).fit(
        Xr, yr
    )
    L_full_ref = logistic_loss(full_ref.w_, clip_rows(Xt, 1.0), yt)
    L_block_ref = [logistic_loss(w, ref_fs.block_design(Xt, k), yt) for k, w in enumerate(ref_fs.block_coefs_)]
    rows = []
    for n in n_grid:
        for r in range(n_repeats):
            X, y = make_weighted_features(int(n), beta, rng)
            seed = int(rng.integers(0, 2**63 - 1))
            plr = PrivateLogisticRegression(epsilon=epsilon, lam=lam, random_state=seed, classes=[0, 1]).fit(X, y)
            rows.append((n, r, "PLR", 1.0, logistic_loss(plr.w_, clip_rows(Xt, 1.0), yt) - L_full_ref))
            fs = FeatureSplitLogisticRegression(
                epsilon=epsilon, groups=groups, importance=q, lam=lam_k, random_state=seed, classes=[0, 1]
            ).fit(X, y)
            for k, w in enumerate(fs.block_coefs_):
                rows.append((n, r, f"block {k}", q[k], logistic_loss(w, fs.block_design(Xt, k), yt) - L_block_ref[k]))
    return pd.DataFrame(rows, columns=["n", "repeat", "model", "q", "excess"])


def single_record_privacy_loss(w, x, y, x_prime, y_prime, n_lam, noise_scale):
    """Exact privacy loss of PLR at output w when all other rows are zero.

    D and D' differ in one record (x, y) → (x', y'); the other n − 1 rows are 0,
    so the shared Hessian is nλI and the loss has a closed form:
    (‖b(w; D')‖ − ‖b(w; D)‖)/scale + log(1 + c‖x‖²/(nλ)) − log(1 + c'‖x'‖²/(nλ)),
    with b(w; D) = yσ(−y wᵀx)x − nλw and c = σ(wᵀx)σ(−wᵀx). A family of
    neighbouring pairs in which both of Lemma 7's terms can be pushed to their
    extremes; used to see how tight the proof's accounting is.
    """
    from scipy.special import expit

    w, x, xp = (np.asarray(v, dtype=float) for v in (w, x, x_prime))
    m, mp = w @ x, w @ xp
    b = y * expit(-y * m) * x - n_lam * w
    bp = y_prime * expit(-y_prime * mp) * xp - n_lam * w
    c, cp = expit(m) * expit(-m), expit(mp) * expit(-mp)
    return float(
        (np.linalg.norm(bp) - np.linalg.norm(b)) / noise_scale
        + np.log1p(c * (x @ x) / n_lam)
        - np.log1p(cp * (xp @ xp) / n_lam)
    )


def max_single_record_loss(n_lam, noise_scale, norm_bound=1.0, n_starts=30, random_state=0):
    """Largest :func:`single_record_privacy_loss` found in 2-D by Nelder–Mead from random starts.

    Searches over the output w, the two records on the sphere of radius
    ``norm_bound`` and the four label pairs. A lower bound on the mechanism's
    worst-case loss (over this family of datasets), to set beside the proof's
    upper bound.

    Returns
    -------
    loss : float
    argmax : dict
        w, x, y, x', y' of the best point found.
    """
    from scipy.optimize import minimize

    from ._validation import check_random_state

    rng = check_random_state(random_state)
    best, arg = -np.inf, None

    def unpack(p):
        x = norm_bound * np.array([np.cos(p[2]), np.sin(p[2])])
        xp = norm_bound * np.array([np.cos(p[3]), np.sin(p[3])])
        return p[:2], x, xp

    for s in range(n_starts):
        y, yp = (1.0, -1.0)[s % 2], (1.0, -1.0)[(s // 2) % 2]  # the four label pairs in turn
        p0 = np.r_[rng.normal(scale=10 ** rng.uniform(-1, 2), size=2), rng.uniform(0, 2 * np.pi, 2)]
        res = minimize(
            lambda p, y=y, yp=yp: -single_record_privacy_loss(*unpack(p)[:2], y, unpack(p)[2], yp, n_lam, noise_scale),
            p0,
            method="Nelder-Mead",
            options=dict(maxiter=2000, xatol=1e-10, fatol=1e-12),
        )
        if -res.fun > best:
            w, x, xp = unpack(res.x)
            best, arg = -res.fun, {"w": w, "x": x, "y": y, "x_prime": xp, "y_prime": yp}
    return float(best), arg
