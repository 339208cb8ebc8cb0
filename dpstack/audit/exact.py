"""Exact privacy loss of objective perturbation (PLR and PLR-FS).

For objective perturbation the released ``w`` is the unique minimiser of a
strongly convex objective, so the noise can be read back from the output:

    b(w; D) = −n ∇(loss + reg)(w; D) − nΔw
            = Σ_i y_i σ(−y_i wᵀx_i) x_i − nλ(w − w0) − nΔw.

The map w ↦ b is a bijection with Jacobian −H(w; D), where
H = Σ_i ℓ''(y_i wᵀx_i) x_i x_iᵀ + n(λ + Δ)I, so the output density is

    p(w | D) = h(b(w; D)) · det H(w; D),   h(b) ∝ exp(−‖b‖ / noise_scale).

For two neighbouring datasets the *privacy loss* at ``w`` is therefore

    L(w) = log p(w | D) − log p(w | D')
         = (‖b(w; D')‖ − ‖b(w; D)‖) / noise_scale + log det H(w; D) − log det H(w; D'),

computable exactly at any ``w`` (the normalising constant of h cancels). Pure
ε-DP means |L(w)| ≤ ε for *every* w and every neighbouring pair, so a single
w with |L(w)| > ε is a proof that the mechanism is not ε-DP.

PLR-FS releases K independent blocks, so its loss is the sum of K such terms,
one per block with that block's design, λ_k, Δ_k and noise scale (PST Lemma 8).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit
from sklearn.base import clone

from .._validation import check_random_state
from ..linear import FeatureSplitLogisticRegression, PrivateLogisticRegression
from ..mechanisms import isotropic_noise
from ..solvers import minimize_perturbed_logistic

__all__ = [
    "exact_privacy_loss",
    "exact_privacy_loss_terms",
    "max_privacy_loss",
    "sample_outputs",
    "output_vector",
    "mechanism_blocks",
    "register_density",
    "solve_perturbed_batch",
]

#: w's are processed in chunks of this many so the (m, d, d) Hessians stay small.
_CHUNK = 256


def signed_targets(estimator, y):
    """The labels ``y`` as ±1 against ``estimator.classes_`` (a label outside them is an error)."""
    y = np.asarray(y).ravel()
    unknown = ~np.isin(y, estimator.classes_)
    if np.any(unknown):
        raise ValueError(f"labels {np.unique(y[unknown])!r} are not in the estimator's classes_ {estimator.classes_!r}")
    return np.where(y == estimator.classes_[1], 1.0, -1.0)


def _fs_blocks(estimator, X):
    cal = estimator.calibration_
    K = len(estimator.groups_)
    lam = np.broadcast_to(np.asarray(estimator.lam, dtype=float), (K,))
    w0 = None if estimator.w0 is None else np.asarray(estimator.w0, dtype=float).ravel()
    blocks = []
    for k, g in enumerate(estimator.groups_):
        if cal.noise_scale_k[k] == 0:
            continue
        blocks.append(
            dict(
                Z=estimator.block_design(X, k),
                cols=np.asarray(g),
                lam=float(lam[k]),
                delta=float(cal.delta_k[k]),
                w0=np.zeros(g.size) if w0 is None else w0[g],
                noise_scale=float(cal.noise_scale_k[k]),
            )
        )
    return blocks


def _plr_blocks(estimator, X):
    cal = estimator.calibration_
    Z = estimator._design_matrix(X)
    d = Z.shape[1]
    w0 = np.zeros(d) if estimator.w0 is None else np.asarray(estimator.w0, dtype=float).ravel()
    if cal.noise_scale == 0:
        return []
    return [
        dict(
            Z=Z,
            cols=np.arange(d),
            lam=float(estimator.lam),
            delta=float(cal.delta),
            w0=w0,
            noise_scale=float(cal.noise_scale),
        )
    ]


#: class -> (blocks function, output-vector function); looked up along the MRO, so a subclass
#: (a mutant, a user's variant) is evaluated with the density its code actually implements
_DENSITIES = {
    FeatureSplitLogisticRegression: (_fs_blocks, lambda est: est.coef_.ravel().copy()),
    PrivateLogisticRegression: (_plr_blocks, lambda est: np.asarray(est.w_, dtype=float).copy()),
}


def register_density(cls, blocks, output):
    """Teach the exact check an objective-perturbation mechanism of your own.

    Parameters
    ----------
    cls : type
        The estimator class (subclasses inherit the entry).
    blocks : callable
        ``blocks(fitted, X)`` → list of dicts with keys ``Z`` (the design matrix the
        mechanism really trains on), ``cols``, ``lam``, ``delta``, ``w0``, ``noise_scale``
        (see :func:`mechanism_blocks`).
    output : callable
        ``output(fitted)`` → the released parameter vector in the layout of ``cols``.
    """
    _DENSITIES[cls] = (blocks, output)


def _density(estimator):
    for cls in type(estimator).__mro__:
        if cls in _DENSITIES:
            return _DENSITIES[cls]
    raise TypeError(
        "exact privacy loss needs an objective-perturbation mechanism with a registered density "
        "(PrivateLogisticRegression, FeatureSplitLogisticRegression or register_density), "
        f"got {type(estimator).__name__}"
    )


def mechanism_blocks(estimator, X):
    """The independent objective-perturbation blocks of a fitted PLR / PLR-FS.

    Returns a list of dicts, one per block with non-zero noise, with keys
    ``Z`` (the block's clipped design matrix on ``X``, built by the
    estimator's own code), ``cols`` (the block's positions in the output
    vector of :func:`output_vector`), ``lam``, ``delta``, ``w0`` and
    ``noise_scale``. A block with noise scale 0 (q_k = 0) has all-zero rows,
    so its output is the same on every dataset and contributes no loss.
    Other mechanisms join with :func:`register_density`.
    """
    return _density(estimator)[0](estimator, np.asarray(X, dtype=float))


def output_vector(estimator):
    """The released parameter vector in the layout :func:`exact_privacy_loss` expects.

    PLR: ``w_`` (one entry per column of the design matrix, the intercept
    column last when ``fit_intercept``). PLR-FS: ``coef_.ravel()`` (one entry
    per input feature; ungrouped features are 0 and ignored).
    """
    return _density(estimator)[1](estimator)


def noise_from_output(Z, ys, W, lam, delta, w0):
    """b(w; D) for every row of W, shape (m, d), and ℓ''(margins), shape (n, m)."""
    n = Z.shape[0]
    margins = ys[:, None] * (Z @ W.T)  # (n, m)
    pull = (Z * ys[:, None]).T @ expit(-margins)  # Σ y σ(−z) x, (d, m)
    b = pull.T - n * lam * (W - w0) - n * delta * W
    p = expit(margins)
    return b, p * (1.0 - p)


def _block_loss(Z, ys, Zp, ysp, W, lam, delta, w0, noise_scale, terms=False):
    n, d = Z.shape
    b, curv = noise_from_output(Z, ys, W, lam, delta, w0)
    bp, curvp = noise_from_output(Zp, ysp, W, lam, delta, w0)
    noise_term = (np.linalg.norm(bp, axis=1) - np.linalg.norm(b, axis=1)) / noise_scale
    # log det H(D) − log det H(D') through the rows where D and D' differ:
    # with A the Hessian of the shared part, log det(A + Uᵀ C U) − log det A
    # = log det(I + C^½ U A⁻¹ Uᵀ C^½) (matrix determinant lemma), which is
    # accurate even when the two log-determinants are large and nearly equal.
    same = np.all(Z == Zp, axis=1) & (ys == ysp)
    diff = ~same
    A = np.einsum("im,ij,ik->mjk", curv[same], Z[same], Z[same], optimize=True)
    A[:, np.arange(d), np.arange(d)] += n * (lam + delta)
    jac_term = _logdet_update(A, Z[diff], curv[diff]) - _logdet_update(A, Zp[diff], curvp[diff])
    return (noise_term, jac_term) if terms else noise_term + jac_term


def _logdet_update(A, U, c):
    """log det(A + Uᵀ diag(c) U) − log det A for a stack of A's, shape (m,)."""
    r = U.shape[0]
    if r == 0:
        return np.zeros(A.shape[0])
    X = np.linalg.solve(A, np.broadcast_to(U.T, (A.shape[0],) + U.T.shape))  # (m, d, r)
    K = U @ X  # (m, r, r)
    s = np.sqrt(c.T)  # (m, r)
    M = s[:, :, None] * K * s[:, None, :]
    M[:, np.arange(r), np.arange(r)] += 1.0
    sign, logdet = np.linalg.slogdet(M)
    return logdet


def exact_privacy_loss(estimator, X, y, X_prime, y_prime, w):
    """Exact privacy loss log p(w | D) − log p(w | D') of PLR or PLR-FS.

    Parameters
    ----------
    estimator : PrivateLogisticRegression or FeatureSplitLogisticRegression
        Fitted (on D or any dataset of the same size). The mechanism is read
        from the estimator itself: its design matrix (``_design_matrix`` /
        ``block_design``, i.e. its clipping), ``calibration_`` (noise scale,
        Δ), ``lam`` and ``w0``. ``epsilon`` is the *claim* to compare with.
    X, y : arrays, shapes (n, p) and (n,)
        Dataset D.
    X_prime, y_prime : arrays, shapes (n, p) and (n,)
        A neighbouring dataset D' of the same size (replace-one neighbours:
        typically one row differs; any number of differing rows is handled
        exactly).
    w : array of shape (d,) or (m, d)
        Outputs at which to evaluate the loss, in the layout of
        :func:`output_vector` (PLR: ``w_``; PLR-FS: ``coef_.ravel()``).

    Returns
    -------
    loss : float or ndarray of shape (m,)
        log p(w | D) − log p(w | D'). The mechanism is ε-DP on this pair only
        if |loss| ≤ ε at every w.

    Examples
    --------
    >>> import numpy as np
    >>> from dpstack import PrivateLogisticRegression
    >>> from dpstack.audit import exact_privacy_loss, sample_outputs
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 3)) / 3; y = (X[:, 0] > 0).astype(int)
    >>> Xp, yp = X.copy(), y.copy(); yp[0] = 1 - yp[0]
    >>> est = PrivateLogisticRegression(epsilon=1.0, lam=0.05, random_state=0).fit(X, y)
    >>> W = sample_outputs(est, X, y, n_draws=200, random_state=1)
    >>> bool(np.abs(exact_privacy_loss(est, X, y, Xp, yp, W)).max() <= 1.0)
    True
    """
    if np.shape(X) != np.shape(X_prime):
        raise ValueError(
            f"D and D' must have the same shape (replace-one neighbours), got {np.shape(X)} and {np.shape(X_prime)}"
        )
    single = np.ndim(w) == 1
    terms = exact_privacy_loss_terms(estimator, X, y, X_prime, y_prime, w)
    loss = terms["noise"].sum(axis=1) + terms["jacobian"].sum(axis=1)
    return float(loss[0]) if single else loss


def exact_privacy_loss_terms(estimator, X, y, X_prime, y_prime, w):
    """The privacy loss split by block and by source: noise part and Jacobian part.

    Same arguments as :func:`exact_privacy_loss`. Returns a dict with

    - ``"noise"``: array (m, K), (‖b_k(w; D')‖ − ‖b_k(w; D)‖)/scale_k per block;
    - ``"jacobian"``: array (m, K), log det H_k(w; D) − log det H_k(w; D') per block;
    - ``"blocks"``: the K entries of :func:`mechanism_blocks` (blocks with noise).

    Their total over both parts and all blocks is :func:`exact_privacy_loss`;
    PST Lemma 8 bounds the noise part of block k by ε_k·q_k and its Jacobian
    part by 2 log(1 + q_k²/(4n(λ_k + Δ_k))).
    """
    X, X_prime = np.asarray(X, dtype=float), np.asarray(X_prime, dtype=float)
    ys, ysp = signed_targets(estimator, y), signed_targets(estimator, y_prime)
    W = np.atleast_2d(np.asarray(w, dtype=float))
    blocks, blocks_p = mechanism_blocks(estimator, X), mechanism_blocks(estimator, X_prime)
    noise, jac = np.zeros((W.shape[0], len(blocks))), np.zeros((W.shape[0], len(blocks)))
    for start in range(0, W.shape[0], _CHUNK):
        Wc = W[start : start + _CHUNK]
        for k, (blk, blk_p) in enumerate(zip(blocks, blocks_p)):
            nz, jc = _block_loss(
                blk["Z"],
                ys,
                blk_p["Z"],
                ysp,
                Wc[:, blk["cols"]],
                blk["lam"],
                blk["delta"],
                blk["w0"],
                blk["noise_scale"],
                terms=True,
            )
            noise[start : start + _CHUNK, k], jac[start : start + _CHUNK, k] = nz, jc
    return {"noise": noise, "jacobian": jac, "blocks": blocks}


def max_privacy_loss(estimator, X, y, X_prime, y_prime, w):
    """max over the rows of ``w`` of |log p(w | D) − log p(w | D')| (both directions)."""
    return float(np.max(np.abs(exact_privacy_loss(estimator, X, y, X_prime, y_prime, w))))


def sample_outputs(estimator, X, y, n_draws, random_state=None, method="direct"):
    """Draw ``n_draws`` outputs of the estimator's mechanism on (X, y).

    Parameters
    ----------
    estimator : PrivateLogisticRegression or FeatureSplitLogisticRegression
        Fitted or not; with ``method="direct"`` it is fitted on (X, y) first
        if needed, and its calibration and design are reused.
    X, y : the dataset.
    n_draws : int
    random_state : None, int or Generator
    method : {"direct", "refit"}
        ``"direct"``: draw the noise b with the estimator's own calibration and
        design and solve every perturbed problem exactly at once
        (:func:`solve_perturbed_batch`) — the same distribution as ``fit`` at
        a fraction of the cost; the estimator must have been fitted on a
        dataset of the same size (the calibration depends on n). ``"refit"``: call
        ``clone(estimator).fit`` with a fresh seed per draw, so any change to
        ``fit`` itself is exercised (slower; works for any estimator with the
        output layout of :func:`output_vector`).

    Returns
    -------
    W : ndarray of shape (n_draws, d)
        Outputs in the layout of :func:`output_vector`.
    """
    rng = check_random_state(random_state)
    if method == "refit":
        seeds = rng.integers(0, 2**63 - 1, size=n_draws)
        return np.array([output_vector(clone(estimator).set_params(random_state=int(s)).fit(X, y)) for s in seeds])
    if method != "direct":
        raise ValueError(f"method must be 'direct' or 'refit', got {method!r}")
    if not hasattr(estimator, "calibration_"):
        estimator = clone(estimator).set_params(random_state=int(rng.integers(2**31))).fit(X, y)
    ys = signed_targets(estimator, y)
    W = np.tile(output_vector(estimator), (n_draws, 1))
    for blk in mechanism_blocks(estimator, X):
        B = isotropic_noise(blk["Z"].shape[1], blk["noise_scale"], rng, size=n_draws)
        W[:, blk["cols"]] = solve_perturbed_batch(
            blk["Z"], ys, blk["lam"], B, blk["delta"], blk["w0"], tol=estimator.tol, max_iter=estimator.max_iter
        )
    return W


def _objective_batch(Z, ys, lam, B, delta, w0, W):
    n = Z.shape[0]
    margins = ys[:, None] * (Z @ W.T)
    diff = W - w0
    value = (
        -log_expit(margins).mean(axis=0)
        + 0.5 * delta * np.einsum("md,md->m", W, W)
        + 0.5 * lam * np.einsum("md,md->m", diff, diff)
        + np.einsum("md,md->m", B, W) / n
    )
    grad = (-((Z * ys[:, None]).T @ expit(-margins)) / n).T + delta * W + lam * diff + B / n
    return value, grad, margins


def solve_perturbed_batch(Z, ys, lam, B, delta=0.0, w0=None, tol=1e-10, max_iter=100):
    """Exact minimisers of the perturbed objective for many noise vectors at once.

    The same problem as :func:`dpstack.solvers.minimize_perturbed_logistic`,
    one row of ``B`` per problem, solved by damped Newton on all rows together
    (the privacy analysis assumes the exact minimiser, so every row must reach
    the solver's relative gradient tolerance; any row that does not is
    re-solved by the library solver, which raises if it cannot converge).

    Returns
    -------
    W : ndarray of shape (m, d)
    """
    n, d = Z.shape
    B = np.atleast_2d(np.asarray(B, dtype=float))
    m = B.shape[0]
    w0 = np.zeros(d) if w0 is None else np.asarray(w0, dtype=float)
    W = np.zeros((m, d))
    value, grad, margins = _objective_batch(Z, ys, lam, B, delta, w0, W)
    scale = 1.0 + np.abs(B).max(axis=1) / n + lam * np.abs(w0).max()

    def done(W, grad):
        return np.abs(grad).max(axis=1) <= tol * (scale + (lam + delta) * np.abs(W).max(axis=1))

    for _ in range(max_iter):
        active = ~done(W, grad)
        if not active.any():
            break
        idx = np.flatnonzero(active)
        p = expit(margins[:, idx])
        H = np.einsum("im,ij,ik->mjk", p * (1 - p) / n, Z, Z, optimize=True)
        H[:, np.arange(d), np.arange(d)] += lam + delta
        step = np.linalg.solve(H, grad[idx][:, :, None])[:, :, 0]
        slope = np.einsum("md,md->m", grad[idx], step)
        t = np.ones(idx.size)
        pending = np.ones(idx.size, dtype=bool)
        for _ in range(40):  # backtracking, row by row
            W_try = W[idx] - t[:, None] * step
            v_try, g_try, m_try = _objective_batch(Z, ys, lam, B[idx], delta, w0, W_try)
            # Armijo, or (near the minimiser, where J is flat to rounding) a smaller gradient
            ok = pending & (
                (v_try <= value[idx] - 1e-4 * t * slope)
                | (np.abs(g_try).max(axis=1) < 0.5 * np.abs(grad[idx]).max(axis=1))
                | (t < 1e-10)
            )
            rows = idx[ok]
            W[rows], value[rows], grad[rows], margins[:, rows] = W_try[ok], v_try[ok], g_try[ok], m_try[:, ok]
            pending &= ~ok
            if not pending.any():
                break
            t[pending] *= 0.5
    for i in np.flatnonzero(~done(W, grad)):
        W[i], _ = minimize_perturbed_logistic(
            Z, ys, lam, b=B[i], delta=delta, w0=w0, tol=tol, max_iter=max_iter, w_init=W[i], method="newton"
        )
    return W
