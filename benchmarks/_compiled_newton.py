"""A compiled per-party Newton kernel for the multiparty local fits: a measurement, not part of dpstack.

The lever named for the batched local fits (:func:`dpstack.multiparty.fit_local_logistic`) is one
compiled kernel per party that forms its 22 × 22 Newton system, factors it by Cholesky and runs
the line search while the party's arrays sit in cache, instead of one numpy pass per step over
a block of parties. This module writes that kernel with numba so that
:mod:`benchmarks.bench_multiparty` can time it beside the batched solver and the floor of its numpy formulation.
numba is not a dependency of dpstack: the benchmark uses this module only when numba is
installed (``pip install numba``), and reports numba's import and compilation time with it,
which every process that fits would pay (numba's on-disk cache of compiled functions stores
pickled objects, which this project does not load).

The method is the batched solver's, for two classes: damped Newton on the coefficients β of
w = Xᵀβ (the party's sample space), the same gradient-norm stopping rule, the same Armijo test
with its rounding allowance, started from β = 0. The Newton system is solved in its symmetric
form (S G S + nλI) u = S G c with S = diag(√h), so that Cholesky applies; H·sol = S u is the
same vector as the batched solver's H (G H + nλI)⁻¹ G c.
"""

import time
from math import exp, log1p, sqrt

import numpy as np

t0 = time.perf_counter()
import numba  # noqa: E402  (optional; ImportError tells the benchmark to skip this side)

IMPORT_SECONDS = time.perf_counter() - t0


@numba.njit(cache=False)
def _party(G, t01, n, lam, tol, max_iter, beta):
    """Newton for one party (its first ``n`` rows); writes β into ``beta``; returns the iterations, −1 if none converged."""
    z = np.zeros(n)
    c, gc, S, u = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    step, gstep, cand, zc = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    R, h = np.empty(n), np.empty(n)
    L = np.empty((n, n))
    value = 0.0
    for i in range(n):
        beta[i] = 0.0
        value += log1p(1.0)  # softplus(0); the target term is 0 at z = 0
        R[i] = 0.5 - t01[i]
        h[i] = 0.25
    value /= n
    previous = np.inf
    for it in range(max_iter + 1):
        for i in range(n):
            c[i] = R[i] / n + lam * beta[i]
        norm2 = 0.0
        for i in range(n):
            acc = 0.0
            for j in range(n):
                acc += G[i, j] * c[j]
            gc[i] = acc
            norm2 += c[i] * acc
        grad_norm = sqrt(max(norm2, 0.0))
        if grad_norm <= tol or (grad_norm <= 100 * tol and grad_norm > 0.5 * previous):
            return it
        previous = grad_norm
        if it == max_iter:
            return -1
        for i in range(n):
            S[i] = sqrt(h[i])
        for i in range(n):  # Cholesky of S G S + nλI, lower triangle
            for j in range(i + 1):
                acc = S[i] * G[i, j] * S[j] + (n * lam if i == j else 0.0)
                for k in range(j):
                    acc -= L[i, k] * L[j, k]
                L[i, j] = sqrt(acc) if i == j else acc / L[j, j]
        for i in range(n):
            acc = S[i] * gc[i]
            for k in range(i):
                acc -= L[i, k] * u[k]
            u[i] = acc / L[i, i]
        for i in range(n - 1, -1, -1):
            acc = u[i]
            for k in range(i + 1, n):
                acc -= L[k, i] * u[k]
            u[i] = acc / L[i, i]
        slope = 0.0
        for i in range(n):
            step[i] = (c[i] - S[i] * u[i]) / lam
            slope += gc[i] * step[i]
        for i in range(n):
            acc = 0.0
            for j in range(n):
                acc += G[i, j] * step[j]
            gstep[i] = acc
        t = 1.0
        while True:
            loss, quad = 0.0, 0.0
            for i in range(n):
                cand[i] = beta[i] - t * step[i]
                zc[i] = z[i] - t * gstep[i]
                loss += log1p(exp(-abs(zc[i]))) + max(zc[i], 0.0) - t01[i] * zc[i]
                quad += cand[i] * zc[i]
            trial = loss / n + 0.5 * lam * quad
            if trial <= value - 1e-4 * t * slope + 1e-14 * abs(value) or t < 1e-10:
                break
            t *= 0.5
        for i in range(n):
            beta[i], z[i] = cand[i], zc[i]
            e = exp(-abs(zc[i]))
            p = 1.0 / (1.0 + e) if zc[i] >= 0 else e / (1.0 + e)
            R[i] = p - t01[i]
            h[i] = p * (1.0 - p)
        value = trial
    return -1


@numba.njit(cache=False)
def _parties(G, T, sizes, lam, tol, max_iter):
    B = np.zeros((G.shape[0], G.shape[1]))
    worst = 0
    for m in range(G.shape[0]):
        it = _party(G[m], T[m], sizes[m], lam, tol, max_iter, B[m])
        if it < 0:
            return B, -1
        worst = max(worst, it)
    return B, worst


def fit_local_logistic_compiled(Xp, T, sizes, lam, tol=1e-12, max_iter=100, block=270):
    """Two-class local fits of padded parties ``Xp`` (M, n, d) with 0/1 targets ``T`` (M, n): W of shape (M, d).

    The Gram products and Bᵀ X are the batched solver's numpy products, block by block.
    """
    M, _, d = Xp.shape
    W = np.empty((M, d))
    for start in range(0, M, block):
        part = slice(start, start + block)
        G = Xp[part] @ Xp[part].transpose(0, 2, 1)
        B, it = _parties(G, T[part], sizes[part], lam, tol, max_iter)
        if it < 0:
            raise RuntimeError(f"compiled Newton did not converge among parties {start}–{start + block - 1}")
        np.matmul(B[:, None, :], Xp[part], out=W[part, None, :])
    return W


def compile_seconds():
    """Time of the first call (numba compiles both functions then)."""
    G = np.eye(2)[None]
    start = time.perf_counter()
    _parties(G, np.zeros((1, 2)), np.array([2]), 1.0, 1e-12, 100)
    return time.perf_counter() - start
