"""Exact solvers for the two logistic problems of multiparty learning.

* :func:`fit_local_logistic` fits the M local models (one λ-regularised logistic
  regression per party, no intercept) **all at once**: the parties are padded
  into an ``(M, n_max, d)`` tensor and a damped Newton method runs on every
  party simultaneously. Because each party holds only a handful of samples
  (6–22 in the paper) and λ‖w‖² is the regulariser, the minimiser lies in the
  span of that party's rows (representer theorem), so Newton works on
  ``n_max·K`` coefficients per party instead of ``d·K`` weights: the
  Hessian of party m is inverted through the Woodbury identity with an
  ``(n_m·K) × (n_m·K)`` system. Cost per iteration: O(M·(n·K)³ + M·n²·d),
  no Python loop over parties (only over blocks of a few hundred parties, so
  that each block's arrays stay in the CPU caches).
* :func:`fit_soft_target_logistic` fits one global model on (auxiliary) data
  with soft targets: the weighted loss α ℓ(wᵀx) + (1 − α) ℓ(−wᵀx) of Hamm et
  al. (2016, eq. 14) for two classes, and cross-entropy with target
  probabilities (softmax, Appendix B.3, eq. 55) for K ≥ 3. Hard labels are the
  special case of 0/1 targets (majority vote, batch).

Both minimise ``(1/n) Σ_i loss_i + (λ/2)‖W‖²`` over every coordinate: there is
no unregularised intercept, because the sensitivities of the paper (and of
parameter averaging) need a λ-strongly convex objective in all parameters.
In scikit-learn's terms this is ``LogisticRegression(fit_intercept=False,
C=1/(n·λ))`` (multinomial for K ≥ 3), except that ours also fits a party
that saw a single class, which scikit-learn refuses.

Parametrisation: two classes use one weight vector (sigmoid, ``K_out = 1``,
the margin is positive for ``classes_[1]``); K ≥ 3 classes use K vectors
(softmax, ``K_out = K``), as scikit-learn does.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg
from scipy.special import logsumexp

from ..solvers import ConvergenceError

__all__ = ["pad_parties", "fit_local_logistic", "fit_soft_target_logistic", "soft_target_objective"]


def pad_parties(X, parties, n_parties):
    """Pack rows into a zero-padded ``(M, n_max, d)`` tensor, one slab per party.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    parties : ndarray of shape (n,)
        Party id in ``0 … n_parties − 1`` of each row.
    n_parties : int

    Returns
    -------
    Xp : ndarray of shape (M, n_max, d)
    rows : ndarray of shape (M, n_max)
        Index into ``X`` of each slot, −1 for padding.
    sizes : ndarray of shape (M,)
    """
    parties = np.asarray(parties)
    sizes = np.bincount(parties, minlength=n_parties)
    n_max = int(sizes.max())
    if np.all(sizes == n_max) and np.all(parties[:-1] <= parties[1:]):
        # rows already grouped by party in equal blocks (the usual split): a view, no copy
        rows = np.arange(parties.size).reshape(n_parties, n_max)
        return X.reshape(n_parties, n_max, X.shape[1]), rows, sizes
    order = np.argsort(parties, kind="stable")
    sorted_ids = parties[order]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    slot = np.arange(parties.size) - starts[sorted_ids]
    rows = np.full((n_parties, n_max), -1, dtype=np.intp)
    rows[sorted_ids, slot] = order
    Xp = np.take(X, np.maximum(rows, 0), axis=0)  # one gather; padding slots zeroed below
    if np.any(rows < 0):
        Xp[rows < 0] = 0.0
    return Xp, rows, sizes


def _loss_terms(Z, T, mask):
    """Per-sample loss, residual ∂loss/∂z and curvature ∂²loss/∂z² (padded rows → 0).

    ``Z`` has shape (..., K_out). Binary (K_out = 1): T holds α ∈ [0, 1], loss
    softplus(z) − α z. Softmax: T holds target probabilities, loss
    logsumexp(z) − Σ_k T_k z_k. ``mask`` is boolean, 0/1 floats, or ``None``
    when no row is padding.
    """
    if Z.shape[-1] == 1:
        z = Z[..., 0]
        # one exponential e = e^{−|z|}: softplus(z) = log1p(e) + max(z, 0), σ(z) = 1/(1+e) or e/(1+e)
        e = np.abs(z)
        np.negative(e, out=e)
        np.exp(e, out=e)
        loss = np.log1p(e)
        loss += np.maximum(z, 0.0)
        loss -= T[..., 0] * z
        p = np.where(z >= 0, 1.0, e)
        e += 1.0
        p /= e
        R = (p - T[..., 0])[..., None]
        h = (p * (1.0 - p))[..., None, None]
    else:
        lse = logsumexp(Z, axis=-1)
        loss = lse - np.sum(T * Z, axis=-1)
        P = np.exp(Z - lse[..., None])
        R = P - T
        h = P[..., :, None] * (np.eye(Z.shape[-1]) - P[..., None, :])
    if mask is not None:
        m = mask if mask.dtype == float else mask.astype(float)
        loss *= m
        R *= m[..., None]
        h *= m[..., None, None]
    return loss, R, h


def _targets(y_idx, n_classes):
    """Hard labels → target array (..., K_out): α ∈ {0, 1} or one-hot."""
    if n_classes == 2:
        return (y_idx == 1).astype(float)[..., None]
    return (y_idx[..., None] == np.arange(n_classes)).astype(float)


# Parties are fitted in blocks whose Newton matrices take about this many bytes: a block's
# Gram matrices, its Newton systems and the per-sample vectors then stay in the CPU caches
# across the iterations instead of streaming (M, n, n) arrays through memory several
# times per iteration. Every party's iterates are its own, so the blocking does not change
# any result (bit for bit); it only trades passes over memory for Python calls per block.
_BLOCK_BYTES = 1 << 20


def fit_local_logistic(X, y_idx, parties, n_parties, n_classes, lam, tol=1e-12, max_iter=100):
    """Fit one λ-regularised logistic regression per party, all parties at once.

    Party m's model minimises ``(1/n_m) Σ_{i∈m} loss(W x_i, y_i) + (λ/2)‖W‖²``
    exactly (damped Newton, ‖∇‖₂ ≤ ``tol`` for every party). A party that saw
    one class still has a unique minimiser (λ > 0) and gets it.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y_idx : ndarray of shape (n,)
        Class index in ``0 … n_classes − 1``.
    parties : ndarray of shape (n,)
        Party id in ``0 … n_parties − 1``; every party must own a row.
    n_parties, n_classes : int
    lam : float
    tol : float, default=1e-12
        On ‖∇‖₂. λ = 1e-4 makes the problem ill-conditioned (w moves by up to
        ‖∇‖/λ), so the tolerance is tight; Newton reaches it in ~10 steps.
    max_iter : int, default=100

    Returns
    -------
    coefs : ndarray of shape (M, K_out, d)
        ``K_out = 1`` for two classes (sigmoid), else ``n_classes`` (softmax).
    n_iter : int
        Newton iterations of the slowest party.

    Notes
    -----
    The parties are processed in blocks of a few hundred (about 1 MiB of Newton
    matrices each), every block by the same vectorised Newton method; a party's
    iterates do not depend on the other parties, so the result does not depend
    on the blocking.

    With K ≥ 3 classes, the weight vectors of the classes a party did not see are
    returned **bitwise equal** (their mean; see :func:`_tie_unseen_classes`): the
    exact minimiser has them equal, and their margins must tie exactly in a vote.
    """
    Xp, rows, sizes = pad_parties(X, parties, n_parties)
    if np.any(sizes == 0):
        raise ValueError(f"party {int(np.flatnonzero(sizes == 0)[0])} has no samples")
    mask = rows >= 0
    T = _targets(np.where(mask, np.asarray(y_idx)[rows], 0), n_classes)
    K = T.shape[-1]
    M, n_max, d = Xp.shape
    block = max(1, _BLOCK_BYTES // (8 * (n_max * K) ** 2))
    coefs = np.empty((M, K, d))
    n_iter = 0
    for start in range(0, M, block):
        part = slice(start, min(M, start + block))
        B, it = _newton_block(Xp[part], T[part], mask[part], sizes[part], lam, tol, max_iter, start, M)
        np.matmul(B.transpose(0, 2, 1), Xp[part], out=coefs[part])
        n_iter = max(n_iter, it)
    if K > 1:
        _tie_unseen_classes(coefs, np.any(T * mask[..., None] > 0, axis=1))
    return coefs, n_iter


def _tie_unseen_classes(coefs, seen):
    """Make the weight vectors of the classes a party did not see bitwise equal (in place).

    Why: with K ≥ 3 classes (softmax) the objective of party m is symmetric in the
    weight vectors of the classes absent from its rows (their targets are all 0, and
    logsumexp and the regulariser are symmetric), and it is strictly convex, so its
    unique minimiser gives every absent class **the same** weight vector. The Newton
    iterates break that symmetry by rounding (≈1e-13 here, amplified to ≈1e-9 between
    BLAS kernels through the λ = 1e-4 conditioning). The vote of a party that prefers
    its unseen classes (about 5% of the votes on MNIST with 6 rows per party and ten
    classes) is then a tie in exact arithmetic, and the rounding decided which unseen
    class got it: a different class under each BLAS kernel. Replacing those vectors by
    their mean moves each by far less than the solver's accuracy (‖w − w*‖ ≤ ‖∇‖/λ) and
    restores the exact symmetry, so the tie is seen as one and broken by the stated rule
    (:class:`~dpstack.multiparty.MultipartyPrivateClassifier` gives a tied vote to the
    lowest tied class index).

    Parameters
    ----------
    coefs : ndarray of shape (M, K, d)
        The local models (softmax parametrisation); modified in place.
    seen : ndarray of bool, shape (M, K)
        Whether party m holds a row of class k.

    Returns
    -------
    coefs : ndarray of shape (M, K, d)
        The same array.
    """
    unseen = ~np.asarray(seen, dtype=bool)
    n_unseen = unseen.sum(axis=1)
    tied = np.flatnonzero(n_unseen >= 2)
    if tied.size:
        sub, mask = coefs[tied], unseen[tied][..., None]
        mean = np.where(mask, sub, 0.0).sum(axis=1) / n_unseen[tied][:, None]  # (m, d), numpy sums
        coefs[tied] = np.where(mask, mean[:, None, :], sub)
    return coefs


def _newton_block(Xp, T, mask, sizes, lam, tol, max_iter, first, n_parties):
    """Damped Newton in coefficient space for a block of parties; returns B (W_m = B_mᵀ X_m)."""
    K = T.shape[-1]
    M, n_max, _ = Xp.shape
    nK = n_max * K
    G = Xp @ Xp.transpose(0, 2, 1)  # (M, n, n) Gram matrices
    B_out = np.zeros((M, n_max, K))
    # State of the parties still iterating. These are the full arrays (no copies) until a
    # party converges; only then are the remaining parties' rows gathered, once.
    active = np.arange(M)
    # the 0/1 row mask: None when no party has padding rows (the usual equal split)
    Ga, Ta, na = G, T, sizes.astype(float)
    ma = None if mask.all() else mask.astype(float)
    B = np.zeros((M, n_max, K))
    Z = np.zeros((M, n_max, K))  # G B of the current point (from the line search)
    loss, R, h = _loss_terms(Z, Ta, ma)
    value = loss.sum(axis=1) / na
    previous = np.full(M, np.inf)  # last gradient norm, to detect the rounding floor
    A = np.empty((M, nK, nK))  # buffer of the Newton systems
    for it in range(max_iter + 1):
        C = R / na[:, None, None]
        C += lam * B  # primal gradient = Cᵀ X
        GC = Ga @ C
        grad_norm = np.sqrt(np.maximum(np.sum(C * GC, axis=(1, 2)), 0.0))
        # Converged: below tol, or stalled at the rounding floor within 100·tol (a
        # Newton step that no longer halves the gradient there is pure rounding noise).
        done = (grad_norm <= tol) | ((grad_norm <= 100 * tol) & (grad_norm > 0.5 * previous))
        previous = grad_norm
        if np.any(done):
            B_out[active[done]] = B[done]
            keep = ~done
            active, Ga, Ta, na, B, Z, value, R, h, C, GC, previous = (
                a[keep] for a in (active, Ga, Ta, na, B, Z, value, R, h, C, GC, previous)
            )
            ma = None if ma is None else ma[keep]
            A = A[: active.size]
        if active.size == 0:
            break
        if it == max_iter:
            raise ConvergenceError(
                f"batched Newton: {active.size} parties did not reach ‖∇‖ ≤ {tol:g} in {max_iter} "
                f"iterations (worst {grad_norm.max():.3g}; among parties {first}–{first + M - 1} "
                f"of {n_parties})"
            )
        # Newton step in coefficient space (Woodbury): Δ = (C − H (nλI + G_K H)⁻¹ G_K C)/λ,
        # H = block-diagonal per-sample curvature, G_K = G ⊗ I_K.
        if K == 1:  # binary: the curvature is a scalar per sample
            np.multiply(Ga, h[:, None, :, 0, 0], out=A)
        else:
            A[...] = np.einsum("mij,mjkl->mikjl", Ga, h).reshape(-1, nK, nK)
        A.reshape(active.size, nK * nK)[:, :: nK + 1] += (na * lam)[:, None]
        sol = np.linalg.solve(A, GC.reshape(-1, nK, 1)).reshape(-1, n_max, K)
        Hsol = h[..., 0, 0, None] * sol if K == 1 else np.einsum("mikl,mil->mik", h, sol)
        step = C - Hsol
        step /= lam
        slope = np.sum(GC * step, axis=(1, 2))  # ⟨∇, primal step⟩ > 0
        # Full Newton step for every party, then backtracking only for those it did not suit.
        # G·step = n·sol exactly (the system says G H sol = G C − nλ sol): the margins of
        # every trial point follow without a product, and are kept with the accepted point.
        Gstep = sol
        Gstep *= na[:, None, None]
        cand = B - step
        Zc = Z - Gstep
        lc, Rc, hc = _loss_terms(Zc, Ta, ma)
        vc = lc.sum(axis=1) / na + 0.5 * lam * np.sum(cand * Zc, axis=(1, 2))
        # Armijo, up to rounding of the value: near w* the decrease is below
        # machine precision and the full Newton step must still be taken.
        ok = vc <= value - 1e-4 * slope + 1e-14 * np.abs(value)
        pending = np.flatnonzero(~ok)
        B_old, Z_old, v_old = B, Z, value
        B, Z, R, h, value = cand, Zc, Rc, hc, vc  # the accepted point's terms carry over
        t = 1.0
        while pending.size:  # rejected parties: shorter steps from their previous point
            t *= 0.5
            cb = B_old[pending] - t * step[pending]
            zb = Z_old[pending] - t * Gstep[pending]
            lb, Rb, hb = _loss_terms(zb, Ta[pending], None if ma is None else ma[pending])
            vb = lb.sum(axis=1) / na[pending] + 0.5 * lam * np.sum(cb * zb, axis=(1, 2))
            vp = v_old[pending]
            ok = (vb <= vp - 1e-4 * t * slope[pending] + 1e-14 * np.abs(vp)) | (t < 1e-10)
            acc = pending[ok]
            B[acc], Z[acc], R[acc], h[acc], value[acc] = cb[ok], zb[ok], Rb[ok], hb[ok], vb[ok]
            pending = pending[~ok]
    return B_out, it


def soft_target_objective(W, X, T, lam):
    """Value of ``(1/N) Σ loss(W x_i, T_i) + (λ/2)‖W‖²`` (W of shape (K_out, d))."""
    loss, _, _ = _loss_terms(X @ W.T, T, None)
    return loss.mean() + 0.5 * lam * np.sum(W * W)


def fit_soft_target_logistic(X, T, lam, tol=1e-12, max_iter=100):
    """Exact minimiser of the (soft-)labelled regularised logistic risk.

    Minimises ``(1/N) Σ_i loss(W x_i, T_i) + (λ/2)‖W‖²`` where, for two classes
    (``T`` of shape (N,) or (N, 1): α_i ∈ [0, 1]) the loss is
    α ℓ(wᵀx) + (1 − α) ℓ(−wᵀx) (Hamm et al. eq. 14/19), and for K ≥ 3 classes
    (``T`` of shape (N, K), rows summing to 1) the softmax cross-entropy
    logsumexp(Wx) − Σ_k T_k w_kᵀx (eq. 55). 0/1 targets give ordinary
    (majority-voted or batch) logistic regression.

    Returns
    -------
    W : ndarray of shape (K_out, d)
    n_iter : int
    """
    X = np.asarray(X, dtype=float)
    T = np.asarray(T, dtype=float)
    if T.ndim == 1:
        T = T[:, None]
    N, d = X.shape
    K = T.shape[1]
    D = K * d
    W = np.zeros((K, d))

    def evaluate(W):
        loss, R, h = _loss_terms(X @ W.T, T, None)
        value = loss.mean() + 0.5 * lam * np.sum(W * W)
        grad = R.T @ X / N + lam * W
        return value, grad, h

    value, grad, h = evaluate(W)
    for it in range(max_iter + 1):
        if np.max(np.abs(grad)) <= tol:
            return W, it
        if it == max_iter:
            break
        if K == 1:
            H = np.zeros((d, d))
            for start in range(0, N, 8192):  # chunks keep the weighted copy in cache
                A = X[start : start + 8192] * np.sqrt(h[start : start + 8192, 0, 0])[:, None]
                H += A.T @ A
            H /= N
        else:
            # H = (1/N) Σ_i (diag(p_i) − p_i p_iᵀ) ⊗ x_i x_iᵀ: K diagonal blocks minus AᵀA
            # with A_i = p_i ⊗ x_i, all as BLAS products (an einsum here is 100× slower).
            Z = X @ W.T
            P = np.exp(Z - logsumexp(Z, axis=1, keepdims=True))
            A = (P[:, :, None] * X[:, None, :]).reshape(N, D)
            H = -(A.T @ A)
            for k in range(K):
                H[k * d : (k + 1) * d, k * d : (k + 1) * d] += (X * P[:, k : k + 1]).T @ X
            H /= N
        H.flat[:: D + 1] += lam
        step = linalg.cho_solve(linalg.cho_factor(H, check_finite=False), grad.ravel(), check_finite=False)
        step = step.reshape(K, d)
        t, slope = 1.0, np.sum(grad * step)
        while True:
            W_new = W - t * step
            value_new, grad_new, h_new = evaluate(W_new)
            if value_new <= value - 1e-4 * t * slope + 1e-14 * abs(value) or t < 1e-10:
                break
            t *= 0.5
        W, value, grad, h = W_new, value_new, grad_new, h_new
    raise ConvergenceError(
        f"Newton did not reach ‖∇‖∞ ≤ {tol:g} in {max_iter} iterations "
        f"(reached {np.max(np.abs(grad)):.3g}); output perturbation assumes the exact minimiser"
    )
