"""Exact solvers for the (perturbed) regularised logistic regression problem.

The privacy proof of objective perturbation assumes the *exact* minimiser of

    J(w) = (1/n) Σ_i ℓ(y_i wᵀx_i) + bᵀw/n + (Δ/2)‖w‖² + (λ/2)‖w − w0‖²,

with ℓ(z) = log(1 + e^{−z}). J is smooth and (λ + Δ)-strongly convex, so a damped
Newton method converges quadratically; we stop only when the gradient is
below a tight tolerance and raise :class:`ConvergenceError` otherwise, because
an approximate minimiser is not covered by the guarantee.
"""
from __future__ import annotations

import numpy as np
from scipy import linalg, optimize
from scipy.special import expit, log_expit

__all__ = ["ConvergenceError", "logistic_objective", "minimize_perturbed_logistic"]

#: Above this many features the d×d Newton system costs more than L-BFGS.
NEWTON_MAX_FEATURES = 1500


class ConvergenceError(RuntimeError):
    """The solver did not reach the exact minimiser the privacy proof assumes."""


def logistic_objective(w, X, y, lam, b=None, delta=0.0, w0=None):
    """Value and gradient of J(w) above (y in {−1, +1})."""
    n = X.shape[0]
    z = y * (X @ w)
    diff = w if w0 is None else w - w0
    value = -log_expit(z).mean() + 0.5 * delta * (w @ w) + 0.5 * lam * (diff @ diff)
    grad = -(X.T @ (y * expit(-z))) / n + delta * w + lam * diff
    if b is not None:
        value += (b @ w) / n
        grad += b / n
    return value, grad


def minimize_perturbed_logistic(X, y, lam, b=None, delta=0.0, w0=None, tol=1e-10, max_iter=100, w_init=None):
    """Exact minimiser of J(w) (see module docstring).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,), values in {−1, +1}
    lam : float
        λ > 0.
    b : ndarray of shape (d,) or None
        Objective-perturbation noise (``None``: no noise).
    delta : float
        Extra ridge Δ ≥ 0.
    w0 : ndarray of shape (d,) or None
        Regulariser centre (transfer learning); ``None`` means 0.
    tol : float
        Stop when ‖∇J‖∞ ≤ tol.
    max_iter : int
        Newton iterations (L-BFGS uses 50× as many) before :class:`ConvergenceError`.
    w_init : ndarray or None
        Warm start.

    Returns
    -------
    w : ndarray of shape (d,)
    n_iter : int
    """
    n, d = X.shape
    w = np.zeros(d) if w_init is None else np.array(w_init, dtype=float)
    if d > NEWTON_MAX_FEATURES:
        return _lbfgs(X, y, lam, b, delta, w0, tol, max_iter * 50, w)
    ridge = lam + delta
    value, grad = logistic_objective(w, X, y, lam, b, delta, w0)
    for it in range(1, max_iter + 1):
        if np.max(np.abs(grad)) <= tol:
            return w, it - 1
        p = expit(y * (X @ w))
        weights = p * (1.0 - p) / n
        H = (X.T * weights) @ X
        H.flat[:: d + 1] += ridge
        step = linalg.cho_solve(linalg.cho_factor(H, lower=True, check_finite=False), grad, check_finite=False)
        # Backtracking keeps the damped-Newton iterates monotone far from w*;
        # near w* the full step is always accepted and convergence is quadratic.
        t, slope = 1.0, grad @ step
        while True:
            w_new = w - t * step
            value_new, grad_new = logistic_objective(w_new, X, y, lam, b, delta, w0)
            if value_new <= value - 1e-4 * t * slope or t < 1e-10:
                break
            t *= 0.5
        w, value, grad = w_new, value_new, grad_new
    if np.max(np.abs(grad)) <= tol:
        return w, max_iter
    raise ConvergenceError(
        f"Newton did not reach ‖∇J‖∞ ≤ {tol:g} in {max_iter} iterations "
        f"(reached {np.max(np.abs(grad)):.3g}); the privacy guarantee assumes the exact minimiser"
    )


def _lbfgs(X, y, lam, b, delta, w0, tol, max_iter, w):
    result = optimize.minimize(
        logistic_objective, w, args=(X, y, lam, b, delta, w0), jac=True, method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol, "ftol": 0.0, "maxcor": 20},
    )
    gmax = np.max(np.abs(result.jac))
    if gmax > tol * 10:  # L-BFGS-B stops on line-search noise near machine precision
        raise ConvergenceError(
            f"L-BFGS did not reach ‖∇J‖∞ ≤ {tol:g} (reached {gmax:.3g}: {result.message}); "
            "the privacy guarantee assumes the exact minimiser"
        )
    return result.x, int(result.nit)
