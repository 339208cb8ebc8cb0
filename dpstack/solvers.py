"""Exact solvers for the (perturbed) regularised logistic regression problem.

The privacy proof of objective perturbation assumes the *exact* minimiser of

    J(w) = (1/n) Σ_i ℓ(y_i wᵀx_i) + bᵀw/n + (Δ/2)‖w‖² + (λ/2)‖w − w0‖²,

with ℓ(z) = log(1 + e^{−z}). J is smooth and (λ + Δ)-strongly convex. We stop
only when ‖∇J‖∞ ≤ tol · (1 + ‖b‖∞/n + (λ+Δ)‖w‖∞ + λ‖w0‖∞) — the factor is ≈ 1
unless the noise or the weights are large, where float64 cannot resolve an
absolute 1e-10 — and raise :class:`ConvergenceError` otherwise, because an
approximate minimiser is not covered by the guarantee. By strong convexity the
returned w is then within √d · tol · factor / (λ + Δ) of the exact minimiser.

How (``method="auto"``), and why:

1. **L-BFGS** (scipy's L-BFGS-B, the same code and settings as scikit-learn's
   ``solver="lbfgs"``) from ``w_init``. With rows in the unit ball the loss
   Hessian has trace ≤ 1/4, so these problems are well conditioned and L-BFGS
   needs a handful of passes over the data; each pass is one fused
   value-and-gradient evaluation that reads X from memory once and never
   copies it: where the optional compiled pass is built (:data:`FUSED`,
   ``dpstack/_fused.c``), one loop takes each row once for its margin, its loss
   and its gradient term; otherwise ``X_b @ w`` and ``r_b @ X_b`` run on each
   block of rows while it is in cache (plain BLAS products, with the loss in
   numpy between them).
2. **Secant polish** when L-BFGS stops above ``tol``: its line search works on
   function values, which stop changing in float64 around ‖∇J‖ ≈ 1e-9, so L-BFGS
   is stopped after :data:`STALL_EVALUATIONS` evaluations within rounding of the
   best value (instead of letting its line search spend tens of passes on
   rounding noise); its own full steps −H∇J, from its curvature pairs, are then
   taken and accepted on the gradient (J not measurably higher, ‖∇J‖∞ lower):
   one or two passes usually reach ``tol``.
3. **Newton polish** when that stalls too:
   damped Newton with a Cholesky solve; the Hessian is a sum of BLAS
   ``syrk`` on the √weight-scaled blocks of rows (one block-sized temporary).
   From the L-BFGS point one or two Newton steps reach 1e-12. Above
   :data:`NEWTON_MAX_FEATURES` features the Newton system is solved by
   conjugate gradients with Hessian-vector products instead.

Rows clipped to a norm bound (``row_scale``, from
:func:`dpstack.mechanisms.clipped_rows`) are never copied or scaled: row i
scaled by f_i has margin f_i·wᵀx_i, gradient term f_i r_i x_i and curvature
f_i² ℓ''_i x_i x_iᵀ, so the factors multiply the margins and residuals of their
block (and the √weights of the Hessian's scaled rows). A constant column
(``intercept``, PLR's ``fit_intercept=True``) is not formed either: its products
are s·w_d and s·Σ r_i. The same problem as on the clipped copy of X, without
that copy; the products round differently (f_i·(wᵀx_i) against (f_i x_i)ᵀw),
so the two fits agree to within the tolerance, not bit for bit.

Small problems (n·d ≤ :data:`NEWTON_FIRST_MAX_SIZE`, e.g. the 30 × 5 fits of the
privacy audits) skip step 1: there a Newton iteration costs little more than an
evaluation, and the fixed cost of starting L-BFGS-B and of its Python-level
iterations is most of the fit; damped Newton from the start takes fewer calls. So do
problems whose Hessian is cheap (n·d² ≤ :data:`NEWTON_FIRST_MAX_HESSIAN`: few
features), where Newton's few iterations beat L-BFGS's many on badly scaled data.

``method="newton"`` runs damped Newton from the start (fewest iterations; best
for ill-conditioned problems, i.e. tiny λ with few samples); ``"lbfgs"`` is
step 1 alone, still held to ``tol``.
"""

from __future__ import annotations

import math
import os

import numpy as np
from scipy import linalg, optimize
from scipy.linalg import blas
from scipy.special import expit

try:  # the optional compiled pass (dpstack/_fused.c), built by pip where a C compiler and glibc's libmvec exist
    from dpstack import _fused
except ImportError:
    _fused = None

__all__ = [
    "ConvergenceError",
    "logistic_objective",
    "minimize_perturbed_logistic",
    "minimize_perturbed_logistic_path",
]

#: Above this many features the d×d Newton system costs more than conjugate gradients.
NEWTON_MAX_FEATURES = 1500
#: ``method="auto"`` runs Newton from the start when n·d is at most this (per-call costs
#: dominate there; measured faster than L-BFGS + polish from 30 × 5 to 1,000 × 10 and
#: 300 × 50, slower at 1,000 × 100).
NEWTON_FIRST_MAX_SIZE = 20_000
#: ... or when a Hessian costs at most this many multiply-adds (n·d²): with few features a
#: Newton iteration costs little more than an evaluation at any n, and damped Newton's 5–8
#: iterations beat L-BFGS's 10–30 evaluations on data of uneven scale (measured up to 3×
#: faster at 3,000 × 10 and 10,000 × 10; up to 1.15× slower on well-conditioned data there).
NEWTON_FIRST_MAX_HESSIAN = 1_000_000
_METHODS = ("auto", "newton", "lbfgs")
#: Rows of X are processed in blocks of about this many bytes: small enough that a block
#: read for ``X_b @ w`` is still in cache for ``r_b @ X_b`` (the L2/L3 caches of current
#: CPUs), large enough that the Python loop over blocks costs < 1 % of the arithmetic.
_BLOCK_BYTES = 2**20
_MIN_BLOCK_ROWS = 64
#: An X of at most this many bytes is walked in one block by every pass (Hessian included).
_ONE_PASS_BYTES = 2**18
#: Whether value-and-gradient evaluations use the compiled pass of ``dpstack/_fused.c`` (one read of
#: each row for both products and the loss): built, on a CPU with AVX2 and FMA, and not switched off
#: by the environment variable ``DPSTACK_FUSED=0``. The numpy pass computes the same sums in another
#: order (agreeing to about 1e-14 relative), so results differ between the two at rounding level.
FUSED = _fused is not None and _fused.supported() and os.environ.get("DPSTACK_FUSED", "1").strip() != "0"
#: Rows per call of the compiled pass: each call's sums are added to the totals, which bounds the
#: rounding of the gradient's sum over many rows (about 8 MiB of X per call).
_FUSED_BLOCK_BYTES = 2**23
#: ``ndarray.sum`` without its Python-level wrapper (the same reduction, the same bits; the
#: per-block sums of a pass are hundreds of calls on short vectors).
_sum = np.add.reduce


class ConvergenceError(RuntimeError):
    """The solver did not reach the exact minimiser the privacy proof assumes."""


def logistic_objective(w, X, y, lam, b=None, delta=0.0, w0=None):
    """Value and gradient of J(w) above (y in {−1, +1})."""
    return _Problem(X, y, lam, b, delta, w0).value_grad(w)


def _is_signs(y):
    """Whether the int8 vector ``y`` holds only −1 and +1 (no temporary of y's size)."""
    return y.size == 0 or (y.min() >= -1 and y.max() <= 1 and np.count_nonzero(y) == y.size)


class _Problem:
    """J(w) with its data, evaluated block by block over the rows of X.

    Every pass over X (value and gradient, Hessian, Hessian-vector product)
    walks it in blocks of about :data:`_BLOCK_BYTES`: the block's product with
    ``w`` and its transposed product with the residuals both run while the
    block sits in cache, so X is read from memory once per evaluation instead of
    twice, and no temporary larger than a block (or than an n-vector) is
    created. X is never copied: a C- or Fortran-ordered array or a memory map
    is used as given. The value-and-gradient pass over a C-ordered X is the
    compiled one when :data:`FUSED` (calls of about :data:`_FUSED_BLOCK_BYTES`,
    each row read once; no temporary of a block's length at all).

    Rows clipped to the norm bound (``row_scale``) are never scaled themselves: row
    i scaled by f_i has margin f_i·(wᵀx_i), gradient term (f_i r_i) x_i and curvature
    f_i² ℓ''_i x_i x_iᵀ, so the factors multiply the block's margins and residuals
    (vectors of a block's length) and every product reads X as given. With
    ``intercept`` s, the unknowns are d = k + 1 for X's k columns and the constant
    column s (never formed).
    """

    def __init__(self, X, y, lam, b, delta, w0, row_scale=None, intercept=None):
        self.X = np.asarray(X, dtype=float)
        # Labels ±1 enter only as signs: a margin times y_i is the margin, negated where y_i < 0
        # (bit for bit the product, exact in IEEE arithmetic). One int8 per row, whatever y's
        # dtype (1/(8d) of X), and no float copy of the labels; labels that already are int8 ±1
        # (the estimators' signed labels) are used as given, without a second vector.
        y = np.asarray(y)
        if y.dtype == np.int8 and y.ndim == 1 and y.flags.c_contiguous and _is_signs(y):
            self.sign = y
        else:
            self.sign = np.where(y < 0, np.int8(-1), np.int8(1))
        # k columns of X, d unknowns: with ``intercept`` s, a constant column s follows X's
        # columns (never formed: its products are s·w_d and s·Σ r_i).
        self.n, self.k = self.X.shape
        self.s = None if intercept is None else float(intercept)
        self.d = self.k + (self.s is not None)
        self.lam, self.delta = float(lam), float(delta)
        self.b = None if b is None else np.asarray(b, dtype=float)
        self.w0 = None if w0 is None else np.asarray(w0, dtype=float)
        self.block = max(_MIN_BLOCK_ROWS, _BLOCK_BYTES // (8 * max(self.k, 1)))
        # Passes that make a block-sized temporary (Hessian, CG diagonal) use blocks of
        # at most 1/32 of the rows, so that the temporary stays small next to X itself; an X
        # of at most _ONE_PASS_BYTES is one block (there the per-block calls cost more than
        # the arithmetic, and the temporary is small in absolute terms).
        if self.X.nbytes <= _ONE_PASS_BYTES:
            self.small_block = self.block
        else:
            self.small_block = min(self.block, max(_MIN_BLOCK_ROWS, -(-self.n // 32)))
            # The loss pass keeps about four vectors of a block's length: with few features
            # (a row of 8k bytes) and a small X, 1 MiB blocks would make them a sizeable share
            # of X (40 % of a block at k = 10); blocks of at most n·k/128 rows keep each
            # vector below 1/128 of X.
            self.block = min(self.block, max(_MIN_BLOCK_ROWS, -(-self.n * self.k // 128)))
        self.n_evals = 0
        self.rows, self.factors, self._cuts = None, None, {}
        if row_scale is not None:
            rows, factors = row_scale
            self.rows = np.asarray(rows, dtype=np.int64)
            self.factors = np.asarray(factors, dtype=float)
            if self.rows.shape != self.factors.shape or self.rows.ndim != 1:
                raise ValueError("row_scale must be two 1-d arrays of equal length (rows, factors)")
            if self.rows.size and (self.rows[0] < 0 or self.rows[-1] >= self.n or np.any(np.diff(self.rows) <= 0)):
                raise ValueError("row_scale's rows must be increasing row indices of X")
            if not self.rows.size:
                self.rows, self.factors = None, None
        # The compiled pass reads X as a C-ordered float64 array (a memory map too); any other
        # layout takes the numpy pass.
        self.fused = FUSED and self.X.flags.c_contiguous

    def _blocks(self, size=None):
        """``(start, stop, X[start:stop], sign, scaled)`` per block; ``scaled`` is None or (local rows, factors).

        Where ``row_scale`` is cut into blocks is found once per block size (8 bytes per
        block); a block's local row numbers are made when the block is reached, so no
        copy of the clipped rows is kept.
        """
        size = size or self.block
        starts = range(0, self.n, size)
        cuts = None
        if self.rows is not None:
            cuts = self._cuts.get(size)
            if cuts is None:
                cuts = self._cuts[size] = np.searchsorted(self.rows, np.append(np.asarray(starts), self.n))
        for i, start in enumerate(starts):
            stop = min(start + size, self.n)
            scaled = None
            if cuts is not None and cuts[i + 1] > cuts[i]:
                lo, hi = cuts[i], cuts[i + 1]
                scaled = (self.rows[lo:hi] - start, self.factors[lo:hi])
            yield start, stop, self.X[start:stop], self.sign[start:stop], scaled

    def value_grad(self, w):
        """J(w) and ∇J(w): one pass over X (the compiled pass when :data:`FUSED`, else numpy's)."""
        self.n_evals += 1
        loss, grad = self._loss_sums_fused(w) if self.fused else self._loss_sums(w)
        diff = w if self.w0 is None else w - self.w0
        value = loss / self.n + 0.5 * self.delta * (w @ w) + 0.5 * self.lam * (diff @ diff)
        grad /= self.n
        grad += self.delta * w + self.lam * diff
        if self.b is not None:
            value += (self.b @ w) / self.n
            grad += self.b / self.n
        return value, grad

    def _loss_sums(self, w):
        """Σ_i ℓ(m_i) and Σ_i ℓ'(m_i) y_i z_i over the rows (z_i clipped, with the constant): numpy and BLAS."""
        loss, grad = 0.0, np.zeros(self.d)
        wx, gx = w[: self.k], grad[: self.k]
        for _, _, Xb, sign, scaled in self._blocks():
            m = Xb @ wx
            if scaled is not None:
                m[scaled[0]] *= scaled[1]  # the margins of the clipped rows: f_i · wᵀx_i
            if self.s is not None:
                m += self.s * w[-1]
            m *= sign  # margins y_i wᵀx_i
            # ℓ(m) = log(1 + e^{−m}) = log1p(e) − min(m, 0) and −ℓ'(m) = 1/(1 + e^{m}) from
            # the one exponential e = e^{−|m|} (stable for any m; one exp and one log1p per row);
            # Σ min(m, 0) = (Σ m − Σ |m|)/2 from two sums. Block-sized vectors only: e
            # overwrites m once m's sum and sign are taken. No masked (where=) ufunc: those run
            # several times slower than plain ones and than np.where.
            low = _sum(m)
            inside = m >= 0
            e = np.abs(m, out=m)
            low -= _sum(e)
            np.negative(e, out=e)
            np.exp(e, out=e)
            r = np.where(inside, e, 1.0)
            loss += _sum(np.log1p(e)) - 0.5 * low
            e += 1.0
            r /= e
            r *= sign
            if self.s is not None:
                grad[-1] -= self.s * _sum(r)
            if scaled is not None:
                r[scaled[0]] *= scaled[1]  # the residual of a clipped row: f_i r_i
            gx -= r @ Xb
        return loss, grad

    def _loss_sums_fused(self, w):
        """The sums of :meth:`_loss_sums` from the compiled pass, in calls of about 8 MiB of X.

        Each call takes each of its rows once (the margin, the loss and residual, the
        row's gradient term while it is in L1); the calls' sums are added here, so the
        gradient is summed in two levels, like the numpy pass's blocks. The loss (whose
        value the line searches compare to within a few ulps) is summed with compensation
        inside each call and exactly (``math.fsum``) over the calls.
        """
        losses, r_sums, grad = [], [], np.zeros(self.d)
        wx = np.ascontiguousarray(w[: self.k])
        part = np.empty(self.k)
        c = 0.0 if self.s is None else self.s * w[-1]
        none_rows, none_factors = np.empty(0, dtype=np.int64), np.empty(0)
        size = max(_MIN_BLOCK_ROWS, _FUSED_BLOCK_BYTES // (8 * max(self.k, 1)))
        for start, stop, Xb, sign, scaled in self._blocks(size):
            rows, factors = (none_rows, none_factors) if scaled is None else scaled
            part[:] = 0.0
            block_loss, r_sum = _fused.logistic_pass(Xb, stop - start, self.k, wx, sign, rows, factors, c, part)
            losses.append(block_loss)
            r_sums.append(r_sum)
            grad[: self.k] += part
        if self.s is not None:
            grad[-1] = -self.s * math.fsum(r_sums)
        return math.fsum(losses), grad

    def scale(self, w):
        """1 + ‖b‖∞/n + (λ+Δ)‖w‖∞ + λ‖w0‖∞: the size of ∇J's terms at w."""
        scale = 1.0 + (self.lam + self.delta) * np.max(np.abs(w), initial=0.0)
        if self.b is not None:
            scale += np.max(np.abs(self.b), initial=0.0) / self.n
        if self.w0 is not None:
            scale += self.lam * np.max(np.abs(self.w0), initial=0.0)
        return scale

    def converged(self, w, grad, tol):
        """‖∇J‖∞ ≤ tol · (1 + ‖b‖∞/n + (λ+Δ)‖w‖∞ + λ‖w0‖∞).

        ∇J is a sum of terms of those sizes; relative to them, float64 cannot
        resolve a gradient much below 1e-16, so an absolute tolerance of 1e-10
        is unreachable when the noise or the weights are large (small ε).
        """
        return np.max(np.abs(grad)) <= tol * self.scale(w)

    def _block_weights(self, Xb, sign, scaled, w):
        """Curvature weights c_i = ℓ''(y_i zᵢᵀw)/n of a block's rows z_i (clipped, with the constant)."""
        m = Xb @ w[: self.k]
        if scaled is not None:
            m[scaled[0]] *= scaled[1]
        if self.s is not None:
            m += self.s * w[-1]
        m *= sign
        p = expit(m)
        p *= 1.0 - p
        p /= self.n
        return p

    @staticmethod
    def _scale(v, scaled, power=1):
        """``v`` with the entries of the clipped rows multiplied by f_i**power (a copy if any)."""
        if scaled is None:
            return v
        v = v.copy()
        v[scaled[0]] *= scaled[1] if power == 1 else scaled[1] ** power
        return v

    def curvature(self, w):
        """Curvature weights c_i of every row (an n-vector) and the diagonal of ∇²J(w), in one pass."""
        weights, diag = np.empty(self.n), np.full(self.d, self.lam + self.delta)
        for start, stop, Xb, sign, scaled in self._blocks(self.small_block):
            wb = weights[start:stop]
            wb[:] = self._block_weights(Xb, sign, scaled, w)
            diag[: self.k] += self._scale(wb, scaled, 2) @ np.square(Xb)  # Σ c_i f_i² x_ij²
        if self.s is not None:
            diag[-1] += self.s**2 * weights.sum()
        return weights, diag

    def hessian_lower(self, w):
        """Lower triangle of ∇²J(w): one syrk per block of √weight-scaled rows, summed in place."""
        k = self.k
        H = np.zeros((self.d, self.d), order="F")
        Hx = H[:k, :k]  # all of H without intercept (syrk then updates it in place)
        # One C-ordered buffer for the scaled rows of every block (whatever X's layout): a new
        # array per block would keep two blocks' worth alive while the next one is computed.
        buffer = np.empty((min(self.small_block, self.n), k))
        for start, stop, Xb, sign, scaled in self._blocks(self.small_block):
            wb = self._block_weights(Xb, sign, scaled, w)
            scaled_rows = np.multiply(Xb, self._scale(np.sqrt(wb), scaled)[:, None], out=buffer[: stop - start])
            # √c_i f_i x_i; its transpose is Fortran-ordered, which syrk takes without a copy
            Hx = blas.dsyrk(1.0, scaled_rows.T, beta=1.0, c=Hx, trans=0, lower=1, overwrite_c=1)
            if self.s is not None:  # the border of the constant column: s Σ c_i f_i x_i and s² Σ c_i
                H[k, :k] += self.s * (self._scale(wb, scaled) @ Xb)
                H[k, k] += self.s**2 * wb.sum()
        H[:k, :k] = Hx  # a no-op when syrk wrote in place
        H.flat[:: self.d + 1] += self.lam + self.delta
        return H

    def hess_vec(self, weights, p):
        """∇²J p with the curvature ``weights`` (from :meth:`curvature`): one fused pass over X."""
        out = (self.lam + self.delta) * p
        px, ox = p[: self.k], out[: self.k]
        for start, stop, Xb, _, scaled in self._blocks():
            q = Xb @ px
            if scaled is not None:
                q[scaled[0]] *= scaled[1]
            if self.s is not None:
                q += self.s * p[-1]
            q *= weights[start:stop]  # c_i z_iᵀp
            if self.s is not None:
                out[-1] += self.s * q.sum()
            if scaled is not None:
                q[scaled[0]] *= scaled[1]
            ox += q @ Xb
        return out

    def newton_step(self, w, grad, target=None):
        """Newton direction: Cholesky of the full Hessian, or preconditioned CG.

        With ``target`` (a bound on ‖∇J‖₂ wanted after the step), CG is tried
        first, for at most about the cost of forming the Hessian; the Cholesky
        step is the fallback. Without it (far from w*) the exact step is used.
        """
        if self.d > NEWTON_MAX_FEATURES:
            s, _ = self._cg_step(w, grad, 10 * self.d, target)
            return s
        # One syrk costs ~ n d² flops at gemm speed, one Hessian-vector product one
        # memory-bound pass (~ 4 n d flops): about d / 8 products for one Hessian. Below
        # 5 products (d < 40) the Hessian is cheaper than a CG attempt that may fail.
        if target is not None and self.d >= 40:
            s, ok = self._cg_step(w, grad, self.d // 8, target)
            if ok:
                return s
        H = self.hessian_lower(w)
        return linalg.cho_solve(linalg.cho_factor(H, lower=True, check_finite=False), grad, check_finite=False)

    def _cg_step(self, w, grad, max_iter, target=None):
        """Solve ∇²J s = ∇J by Jacobi-preconditioned conjugate gradients (Hessian-vector products only).

        The curvature weights and the diagonal preconditioner come from one pass over X.
        Stops when the residual ‖∇²J s − ∇J‖₂ is below ``target`` (default: the
        superlinear inexact-Newton forcing term min(0.1, √‖∇J‖∞)·‖∇J‖₂).
        """
        weights, diag = self.curvature(w)
        if target is None:
            target = min(0.1, np.sqrt(np.max(np.abs(grad)))) * np.linalg.norm(grad)
        s, r = np.zeros(self.d), grad.copy()
        z = r / diag
        p, rz = z.copy(), r @ z
        for _ in range(max_iter):
            Hp = self.hess_vec(weights, p)
            alpha = rz / (p @ Hp)
            s += alpha * p
            r -= alpha * Hp
            if np.linalg.norm(r) <= target:
                return s, True
            z = r / diag
            rz_new = r @ z
            p = z + (rz_new / rz) * p
            rz = rz_new
        return s, False


def minimize_perturbed_logistic(
    X,
    y,
    lam,
    b=None,
    delta=0.0,
    w0=None,
    tol=1e-10,
    max_iter=100,
    w_init=None,
    method="auto",
    row_scale=None,
    intercept=None,
):
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
        Stop when ‖∇J‖∞ ≤ tol · (1 + ‖b‖∞/n + (λ+Δ)‖w‖∞ + λ‖w0‖∞), checked on the
        returned point (see ``_Problem.converged``: relative to the size of the
        gradient's terms, so that it stays reachable in float64 under large noise).
    max_iter : int
        Newton iterations before :class:`ConvergenceError`; L-BFGS may use
        ``max(50, d)`` iterations before handing over to Newton (50 × max_iter
        when it runs alone).
    w_init : ndarray or None
        Warm start (e.g. the solution for a neighbouring λ or noise vector).
    method : {"auto", "newton", "lbfgs"}, default="auto"
        See the module docstring. All three return a point meeting ``tol``.
    row_scale : tuple (rows, factors) or None
        Solve on X with ``X[rows]`` multiplied by ``factors[:, None]`` (``rows`` increasing
        row indices), without forming that array: each pass reads X as given and
        multiplies the scaled rows' margins and residuals by their factors. With
        :func:`dpstack.mechanisms.clipped_rows`, the fit on X clipped to a norm bound (the
        minimiser on ``clip_rows(X, bound)``, to within ``tol``) with no copy of X.
    intercept : float or None
        Solve on ``[X, intercept · 1]`` (a constant last column, after ``row_scale``)
        without forming it: w, ``b`` and ``w0`` then have ``d + 1`` entries, the last one
        the weight of the constant column.

    Returns
    -------
    w : ndarray of shape (d,) (``d + 1`` with ``intercept``)
    n_iter : int
        L-BFGS plus Newton iterations.
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    problem = _Problem(X, y, lam, b, delta, w0, row_scale, intercept)
    w = np.zeros(problem.d) if w_init is None else np.array(w_init, dtype=float)
    n_lbfgs = 0
    if method == "auto" and _newton_first(problem.n, problem.d):
        method = "newton"
    if method in ("auto", "lbfgs"):
        budget = max(50, problem.d) if method == "auto" else 50 * max_iter
        w, value, grad, n_lbfgs, pairs = _lbfgs(problem, w, tol, budget, method == "auto")
        if problem.converged(w, grad, tol):
            return w, n_lbfgs
        if method == "auto":
            w, value, grad, n_secant = _secant_polish(problem, w, value, grad, pairs, tol)
            n_lbfgs += n_secant
            if problem.converged(w, grad, tol):
                return w, n_lbfgs
        if method == "lbfgs":
            raise ConvergenceError(
                f"L-BFGS did not reach ‖∇J‖∞ ≤ {tol:g} (reached {np.max(np.abs(grad)):.3g}); "
                "the privacy guarantee assumes the exact minimiser (try method='auto')"
            )
    else:
        value, grad = problem.value_grad(w)
    w, n_newton = _newton(problem, w, value, grad, tol, max_iter, polish=n_lbfgs > 0)
    return w, n_lbfgs + n_newton


def _newton_first(n, d):
    """Whether ``method="auto"`` runs damped Newton from the start on an n × d problem."""
    return n * d <= NEWTON_FIRST_MAX_SIZE or n * d * d <= NEWTON_FIRST_MAX_HESSIAN


def minimize_perturbed_logistic_path(
    X, y, lams, b=None, delta=0.0, w0=None, tol=1e-10, max_iter=100, method="auto", row_scale=None, intercept=None
):
    """Exact minimisers along a λ path, each warm-started from the previous one.

    Parameters
    ----------
    X, y, b, delta, w0, tol, max_iter, method, row_scale, intercept
        As in :func:`minimize_perturbed_logistic` (``delta`` may also be an
        array with one value per λ, since Δ depends on λ in objective perturbation).
    lams : sequence of float
        The λ values, solved in the given order; start from the largest λ
        (the best-conditioned problem) for the most useful warm starts.

    Returns
    -------
    W : ndarray of shape (len(lams), d) (``d + 1`` with ``intercept``)
    n_iter : ndarray of int
    """
    lams = np.asarray(lams, dtype=float).ravel()
    deltas = np.broadcast_to(np.asarray(delta, dtype=float), lams.shape)
    d = np.shape(X)[1] + (intercept is not None)
    W, n_iter, w = np.empty((lams.size, d)), np.zeros(lams.size, dtype=int), None
    for i, (lam, dlt) in enumerate(zip(lams, deltas)):
        w, n_iter[i] = minimize_perturbed_logistic(
            X,
            y,
            lam,
            b=b,
            delta=dlt,
            w0=w0,
            tol=tol,
            max_iter=max_iter,
            w_init=w,
            method=method,
            row_scale=row_scale,
            intercept=intercept,
        )
        W[i] = w
    return W, n_iter


class _Reached(Exception):
    """Raised from inside L-BFGS-B to stop it: a point meets the tolerance, or J stopped changing."""

    def __init__(self, w, value, grad):
        super().__init__()
        self.w, self.value, self.grad = w, value, grad


def _rounding(value):
    """How far J's computed value may be from its exact value near ``value``: 64·eps·(1 + |J|).

    J is a sum of O(1) terms that can cancel to a small |J|, so its rounding is about
    eps·(1 + |J|), not eps·|J|. A step whose J is within this of the previous J neither
    decreased nor increased J measurably; the solvers then judge it by its gradient.
    """
    return 64 * np.finfo(float).eps * (1.0 + abs(value))


#: L-BFGS hands over to Newton after this many consecutive evaluations at which J is
#: within rounding of the best value seen (see :func:`_lbfgs`).
STALL_EVALUATIONS = 2


def _lbfgs(problem, w, tol, max_iter, hand_over=False):
    """scipy L-BFGS-B with scikit-learn's settings; returns its point, value, gradient, iterations, pairs.

    Every evaluated point is checked against :meth:`_Problem.converged`, and the run
    stops at the first one that meets it: near the minimiser J changes only by
    rounding, and L-BFGS-B's line search would otherwise spend further passes over
    the data on points that are already exact enough.

    With ``hand_over``, the run also stops when J has stopped changing in float64:
    after :data:`STALL_EVALUATIONS` consecutive evaluations whose value is within
    64·eps·(1 + |J|) of the best value seen (neither a decrease nor an increase
    beyond rounding). L-BFGS-B's line search works on those values, which are then
    rounding noise; left alone it can spend some forty further passes over the data
    before giving up. The point returned is the one with the smallest ‖∇J‖∞ among
    the best and those flat evaluations (their values are equal up to rounding), for
    the polish to finish from.

    ``pairs`` are the last :data:`SECANT_MEMORY` curvature pairs (s, y) = (w' − w,
    ∇J(w') − ∇J(w)) between consecutive accepted iterates, the returned point last,
    for :func:`_secant_polish`.
    """
    best, flat, n_iter = {}, {"count": 0, "point": None}, [0]
    # The accepted iterates (L-BFGS-B's callback) and the last evaluation, to pair them.
    last, anchor, pairs = {}, {}, []

    def remember(v, grad):
        if anchor:
            s, y = v - anchor["w"], grad - anchor["grad"]
            if s @ y > 0:  # J is strictly convex; rounding can still spoil a tiny pair
                pairs.append((s, y))
                del pairs[:-SECANT_MEMORY]
        anchor.update(w=v, grad=grad)

    def count(xk):
        n_iter[0] += 1
        if last and np.array_equal(xk, last["w"]):
            remember(last["w"], last["grad"])

    def fun(v):
        value, grad = problem.value_grad(v)
        if problem.converged(v, grad, tol):
            raise _Reached(v.copy(), value, grad)
        last.update(w=v.copy(), grad=grad)
        if not anchor:  # the starting point
            remember(last["w"], grad)
        if best and abs(value - best["value"]) <= _rounding(best["value"]):
            flat["count"] += 1
            gmax = np.max(np.abs(grad))
            if flat["point"] is None or gmax < flat["point"][0]:
                flat["point"] = (gmax, v.copy(), value, grad)
        else:
            flat["count"], flat["point"] = 0, None
        if not best or value < best["value"]:
            best.update(w=v.copy(), value=value, grad=grad)
        if hand_over and flat["count"] >= STALL_EVALUATIONS:
            gmax, v_flat, value_flat, grad_flat = flat["point"]
            if gmax < np.max(np.abs(best["grad"])):
                raise _Reached(v_flat, value_flat, grad_flat)
            raise _Reached(best["w"], best["value"], best["grad"])
        return value, grad

    try:
        result = optimize.minimize(
            fun,
            w,
            jac=True,
            method="L-BFGS-B",
            callback=count,
            options={"maxiter": max_iter, "gtol": tol, "ftol": 64 * np.finfo(float).eps, "maxls": 50},
        )
    except _Reached as reached:
        w, value, grad, nit = reached.w, reached.value, reached.grad, n_iter[0]
    else:
        # L-BFGS-B returns the last accepted iterate; keep the best point seen (they coincide
        # unless the final line search failed).
        if np.max(np.abs(result.jac)) <= tol:
            w, value, grad, nit = result.x, result.fun, result.jac, int(result.nit)
        else:
            w, value, grad, nit = best["w"], best["value"], best["grad"], int(result.nit)
    if not anchor or not np.array_equal(w, anchor["w"]):
        remember(w, grad)
    return w, value, grad, nit, pairs


#: Curvature pairs kept for the secant polish (scikit-learn's and scipy's L-BFGS-B memory).
SECANT_MEMORY = 10
#: The secant polish goes on while each step divides ‖∇J‖∞ by at least this much.
SECANT_MIN_REDUCTION = 2.0


def _secant_polish(problem, w, value, grad, pairs, tol, max_steps=10):
    """Quasi-Newton steps from L-BFGS's own curvature pairs, accepted on the gradient.

    After the hand-over J no longer changes measurably in float64, so L-BFGS-B's
    line search (which tests J) cannot accept a step; its direction is still good.
    Each step here is the full L-BFGS step −H∇J (two-loop recursion over ``pairs``,
    one pass over X to evaluate it), accepted when J did not increase beyond
    rounding and ‖∇J‖∞ fell; near w* L-BFGS's steps divide ‖∇J‖∞ by about ten each,
    so one or two passes replace the Newton polish's curvature pass, Hessian-vector
    products and final evaluation. The polish stops as soon as a step is refused or
    divides ‖∇J‖∞ by less than :data:`SECANT_MIN_REDUCTION`, and returns its best
    point for the Newton polish to finish from; a point is returned as converged only
    after its gradient was evaluated and met ``tol``.

    Returns
    -------
    w, value, grad, n_steps : the best point reached and the passes taken
    """
    pairs = list(pairs)
    gmax = np.max(np.abs(grad))
    for step_count in range(1, max_steps + 1):
        if not pairs:
            return w, value, grad, step_count - 1
        direction = _two_loop(grad, pairs)
        w_new = w - direction
        value_new, grad_new = problem.value_grad(w_new)
        gmax_new = np.max(np.abs(grad_new))
        if not (value_new <= value + _rounding(value) and gmax_new < gmax):
            return w, value, grad, step_count
        s, y = w_new - w, grad_new - grad
        if s @ y > 0:
            pairs.append((s, y))
            del pairs[:-SECANT_MEMORY]
        slow = gmax_new * SECANT_MIN_REDUCTION > gmax
        w, value, grad, gmax = w_new, value_new, grad_new, gmax_new
        if problem.converged(w, grad, tol) or slow:
            return w, value, grad, step_count
    return w, value, grad, max_steps


def _two_loop(grad, pairs):
    """H∇J for L-BFGS's inverse-Hessian approximation H from ``pairs`` (oldest first)."""
    q = grad.copy()
    alphas = []
    for s, y in reversed(pairs):
        rho = 1.0 / (y @ s)
        alpha = rho * (s @ q)
        q -= alpha * y
        alphas.append((rho, alpha))
    s, y = pairs[-1]
    q *= (s @ y) / (y @ y)
    for (s, y), (rho, alpha) in zip(pairs, reversed(alphas)):
        q += (alpha - rho * (y @ q)) * s
    return q


def _newton(problem, w, value, grad, tol, max_iter, polish=False):
    gmax = np.max(np.abs(grad))
    for it in range(1, max_iter + 1):
        if problem.converged(w, grad, tol):
            return w, it - 1
        # Close to w* (after L-BFGS) an inexact step that brings ‖∇J‖ below tol/2 suffices.
        target = 0.5 * tol * problem.scale(w) if polish else None
        step = problem.newton_step(w, grad, target)
        # Backtracking keeps the damped-Newton iterates monotone far from w*. Near w*
        # the decrease of J drops below float64 resolution, so a full step is also
        # accepted when J did not measurably increase and the gradient shrank.
        t, slope = 1.0, grad @ step
        while True:
            w_new = w - t * step
            value_new, grad_new = problem.value_grad(w_new)
            gmax_new = np.max(np.abs(grad_new))
            if value_new <= value - 1e-4 * t * slope:
                break
            if value_new <= value + _rounding(value) and gmax_new < gmax:
                break
            if t < 1e-10:
                raise ConvergenceError(
                    f"Newton line search failed at ‖∇J‖∞ = {gmax:.3g} > tol = {tol:g}; "
                    "the privacy guarantee assumes the exact minimiser"
                )
            t *= 0.5
        w, value, grad, gmax = w_new, value_new, grad_new, gmax_new
    if problem.converged(w, grad, tol):
        return w, max_iter
    raise ConvergenceError(
        f"Newton did not reach ‖∇J‖∞ ≤ {tol:g} in {max_iter} iterations "
        f"(reached {gmax:.3g}); the privacy guarantee assumes the exact minimiser"
    )
