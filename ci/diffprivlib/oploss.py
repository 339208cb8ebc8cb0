"""Exact output density / privacy loss of diffprivlib 0.6.6 LogisticRegression (binary).

What diffprivlib computes (binary case, one class, OvR with n_classes=1 so epsilon is not split):
  rows clipped to ||x|| <= q (data_norm); with fit_intercept a column of ones is appended
  (x~ = (x, 1)) and data_norm is replaced by q~ = sqrt(q^2 + 1).
  Vector(epsilon, function_sensitivity=c=0.25, data_sensitivity=q~, alpha=1/C, n):
     eps' = eps - 2 log(1 + c q~ C)                (alpha = 1/C)
     if eps' <= 0: Delta = (c q~/expm1(eps/4) - 1/C)/n,  eps' = eps/2      else Delta = 0
     scale = 2 q~ / eps';   b has density  ∝ exp(-||b||/scale)  in d = p + fit_intercept dims
  objective (sklearn LinearModelLoss, l2_reg_strength = 1/(C n), intercept NOT penalised):
     F(θ) = (1/n) Σ ℓ(y_i, θ·x~_i) + (1/(2Cn)) ||w||² + bᵀθ / n + (Δ/2) ||θ||²     (θ = (w, w0))
  stationarity:  b(θ; D) = -[ Σ (σ(z_i) - y_i) x~_i + P θ / C + n Δ θ ],   P = diag(1,..,1, 0 for intercept)
  Jacobian:      |det ∂b/∂θ| = det A(θ; D),  A = Σ σ'(z_i) x~_i x~_iᵀ + P/C + nΔ I
  privacy loss:  L(θ) = (||b(θ;D')|| - ||b(θ;D)||)/scale + log det A(θ;D) - log det A(θ;D')
"""
import numpy as np
from scipy.special import expit


def dpl_calibration(epsilon, C, q, n, fit_intercept):
    """(q_tilde, eps_p, Delta, scale) exactly as diffprivlib 0.6.6 computes them."""
    qt = np.sqrt(q ** 2 + 1) if fit_intercept else float(q)
    c, alpha = 0.25, 1.0 / C
    eps_p = epsilon - 2 * np.log(1 + c * qt / alpha)
    delta = 0.0
    if eps_p <= 0:
        delta = (c * qt / np.expm1(epsilon / 4) - alpha) / n
        eps_p = epsilon / 2
    return qt, eps_p, delta, qt * 2 / eps_p


def design(X, fit_intercept):
    X = np.asarray(X, float)
    return np.hstack([X, np.ones((X.shape[0], 1))]) if fit_intercept else X


def noise_and_hessian(theta, X, y01, C, delta, fit_intercept):
    """b(θ; D) and A(θ; D) (both in diffprivlib's scaling)."""
    Z = design(X, fit_intercept)
    n, d = Z.shape
    z = Z @ theta
    p = expit(z)
    h = expit(z) * expit(-z)          # σ'(z), no cancellation for |z| large
    P = np.ones(d)
    if fit_intercept:
        P[-1] = 0.0
    b = -(Z.T @ (p - y01) + P * theta / C + n * delta * theta)
    A = (Z * h[:, None]).T @ Z + np.diag(P / C + n * delta)
    return b, A


def privacy_loss(theta, X, y, Xp, yp, epsilon, C, q, fit_intercept, terms=False):
    """log p(θ|D) - log p(θ|D') for diffprivlib's mechanism (labels y in {0,1})."""
    n = len(y)
    _, _, delta, scale = dpl_calibration(epsilon, C, q, n, fit_intercept)
    b, A = noise_and_hessian(theta, X, y, C, delta, fit_intercept)
    bp, Ap = noise_and_hessian(theta, Xp, yp, C, delta, fit_intercept)
    noise = (np.linalg.norm(bp) - np.linalg.norm(b)) / scale
    jac = np.linalg.slogdet(A)[1] - np.linalg.slogdet(Ap)[1]
    return (noise, jac) if terms else noise + jac


def privacy_loss_mp(theta, X, y, Xp, yp, epsilon, C, q, fit_intercept, dps=50, terms=False):
    """Same as privacy_loss, in mpmath with `dps` digits (calibration recomputed in mpmath too)."""
    import mpmath as mp
    mp.mp.dps = dps
    n = len(y)
    qt = mp.sqrt(mp.mpf(q) ** 2 + 1) if fit_intercept else mp.mpf(q)
    C = mp.mpf(C); eps = mp.mpf(epsilon)
    eps_p = eps - 2 * mp.log(1 + mp.mpf('0.25') * qt * C)
    delta = mp.mpf(0)
    if eps_p <= 0:
        delta = (mp.mpf('0.25') * qt / mp.expm1(eps / 4) - 1 / C) / n
        eps_p = eps / 2
    scale = 2 * qt / eps_p
    th = mp.matrix([mp.mpf(float(t)) for t in theta])
    d = len(theta)
    def bh(X, y):
        Z = design(X, fit_intercept)
        b = mp.matrix(d, 1); A = mp.matrix(d, d)
        for i in range(len(y)):
            zr = [mp.mpf(float(v)) for v in Z[i]]
            z = mp.fsum(zr[k] * th[k] for k in range(d))
            s = 1 / (1 + mp.exp(-z)); h = s * (1 - s) if z < 0 else (1 / (1 + mp.exp(z))) * (1 / (1 + mp.exp(-z)))
            for k in range(d):
                b[k] -= (s - int(y[i])) * zr[k]
                for l in range(d):
                    A[k, l] += h * zr[k] * zr[l]
        for k in range(d):
            reg = (0 if (fit_intercept and k == d - 1) else 1 / C) + n * delta
            b[k] -= reg * th[k]
            A[k, k] += reg
        return b, A
    b, A = bh(X, y); bp, Ap = bh(Xp, yp)
    noise = (mp.norm(bp) - mp.norm(b)) / scale
    jac = mp.log(mp.det(A)) - mp.log(mp.det(Ap))
    return (noise, jac) if terms else noise + jac
