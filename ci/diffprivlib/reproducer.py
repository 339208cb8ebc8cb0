#!/usr/bin/env python
"""Privacy violations in diffprivlib 0.6.6 `diffprivlib.models.LogisticRegression` (objective perturbation).

Needs only numpy, scipy and diffprivlib (0.6.6; with scikit-learn 1.7.x -- 1.8 removed the `multi_class`
argument diffprivlib passes, so diffprivlib 0.6.6 cannot be constructed with scikit-learn 1.8).

    python reproducer.py                  # exact privacy losses + black-box test of issue 2 (N=6000 per dataset, ~15 min; --n2 0 skips it)
    python reproducer.py --n1 30000 --n2 20000   # larger black-box runs (issue 1 needs N ~ 30000, ~10 min)

What diffprivlib computes for a binary problem (models/logistic_regression.py, mechanisms/vector.py):
  * rows are clipped to ||x|| <= q = data_norm; with fit_intercept=True a constant 1 is appended,
    x~ = (x, 1), and data_norm becomes q~ = sqrt(q^2 + 1) (logistic_regression.py, `_logistic_regression_path`);
  * Vector(epsilon, function_sensitivity=c=0.25, data_sensitivity=q~, alpha=1/C, n):
        eps' = eps - 2 log(1 + c q~ / alpha)                                  (vector.py, `randomise`)
        if eps' <= 0:  Delta = (c q~ / (e^{eps/4} - 1) - alpha) / n,  eps' = eps/2
        b = (uniform direction) * Gamma(d, scale) norm,  scale = 2 q~ / eps'
          -> density of b  ∝ exp(-||b|| / scale) in d = n_features + fit_intercept dimensions;
  * minimised objective (sklearn LinearModelLoss, l2_reg_strength = 1/(C n); the intercept is NOT penalised):
        F(θ) = (1/n) Σ_i ℓ(y_i, θ·x~_i) + ||w||² / (2 C n) + bᵀθ / n + (Delta/2) ||θ||²,   θ = (w, w0).
For an output θ the noise is recovered from the first-order condition,
        b(θ; D) = -[ Σ_i (σ(θ·x~_i) - y_i) x~_i + P θ / C + n Delta θ ],   P = diag(1, ..., 1, 0 for the intercept),
with Jacobian  A(θ; D) = Σ_i σ'(θ·x~_i) x~_i x~_iᵀ + P / C + n Delta I, so the output density is
        p(θ | D) = ν(b(θ; D)) det A(θ; D)
and the privacy loss at θ for neighbours D, D' (one row replaced) is
        L(θ) = (||b(θ; D')|| - ||b(θ; D)||) / scale + log det A(θ; D) - log det A(θ; D').
ε-DP requires L(θ) <= ε for every θ and every neighbouring pair.

Black-box results with the seeds hard-coded below (diffprivlib 0.6.6, scikit-learn 1.7.2, numpy 2.4.6):
  issue 1 (--n1 30000): S = {-0.1 < coef_ < 0.1}: 778/30000 on D, 147/30000 on D'  -> eps >= 1.434 (95% CP), claimed 1
  issue 2 (--n2 6000):  S = {intercept_ < -8, |coef_ + intercept_| < 5}: 54/6000 on D, 0/6000 on D' -> eps >= 2.399, claimed 1
"""
import argparse
import warnings

import numpy as np
import scipy
from scipy.special import expit
from scipy.stats import beta as beta_dist

import diffprivlib
from diffprivlib.models import LogisticRegression

warnings.simplefilter("ignore")


# ----------------------------------------------------------------------------------------------- the mechanism
def calibration(epsilon, C, q, n, fit_intercept):
    """(q~, eps', Delta, scale) exactly as diffprivlib 0.6.6 computes them."""
    qt = np.sqrt(q ** 2 + 1) if fit_intercept else float(q)
    c, alpha = 0.25, 1.0 / C
    eps_p = epsilon - 2 * np.log(1 + c * qt / alpha)
    delta = 0.0
    if eps_p <= 0:
        delta = (c * qt / np.expm1(epsilon / 4) - alpha) / n
        eps_p = epsilon / 2
    return qt, eps_p, delta, qt * 2 / eps_p


def noise_and_jacobian(theta, X, y, C, delta, fit_intercept):
    """b(θ; D) and A(θ; D) for labels y in {0, 1}."""
    Z = np.hstack([X, np.ones((len(X), 1))]) if fit_intercept else np.asarray(X, float)
    n, d = Z.shape
    z = Z @ theta
    P = np.ones(d)
    if fit_intercept:
        P[-1] = 0.0
    b = -(Z.T @ (expit(z) - y) + P * theta / C + n * delta * theta)
    A = (Z * (expit(z) * expit(-z))[:, None]).T @ Z + np.diag(P / C + n * delta)
    return b, A


def privacy_loss(theta, D, Dp, epsilon, C, q, fit_intercept):
    """log p(θ|D) - log p(θ|D') and its two parts (noise, Jacobian)."""
    (X, y), (Xp, yp) = D, Dp
    _, _, delta, scale = calibration(epsilon, C, q, len(y), fit_intercept)
    b, A = noise_and_jacobian(theta, X, y, C, delta, fit_intercept)
    bp, Ap = noise_and_jacobian(theta, Xp, yp, C, delta, fit_intercept)
    noise = (np.linalg.norm(bp) - np.linalg.norm(b)) / scale
    jac = np.linalg.slogdet(A)[1] - np.linalg.slogdet(Ap)[1]
    return noise + jac, noise, jac


def sup_loss_no_intercept(epsilon, C, q):
    """Supremum of L over all neighbours (||x|| <= q, d >= 2, any n) and all outputs, fit_intercept=False:
         sup_{0<s<1}  (q/scale)(1 + s) + log(1 + q² s(1-s) / (1/C + n Delta)).
    Upper bound: |noise term| <= ||g_x - g_x'||/scale <= q(s + 1)/scale with s = |σ(z_x) - y|, and
    log det(A0 + σ'(z_x) x xᵀ) - log det(A0 + σ'(z_x') x' x'ᵀ) <= log(1 + σ'(z_x) ||x||² / λ_min(A0)).
    It is approached by the pairs below (x' saturated, σ'(z_x') -> 0)."""
    _, _, delta, scale = calibration(epsilon, C, q, 1, False)   # n*Delta does not depend on n
    s = np.linspace(1e-7, 1 - 1e-7, 400001)
    return float(np.max(q / scale * (1 + s) + np.log1p(q ** 2 * s * (1 - s) / (1 / C + delta))))


def fit_output(X, y, seed, **kw):
    clf = LogisticRegression(random_state=seed, **kw).fit(X, y)
    return np.append(clf.coef_[0], clf.intercept_) if kw.get("fit_intercept", True) else clf.coef_[0].copy()


def cp_eps_lower_bound(k1, k0, N, alpha=0.05):
    """Clopper-Pearson: lower bound on log(p1/p0) at joint confidence 1-alpha (alpha/2 on each side)."""
    p1 = beta_dist.ppf(alpha / 2, k1, N - k1 + 1) if k1 > 0 else 0.0
    p0 = beta_dist.ppf(1 - alpha / 2, k0 + 1, N - k0) if k0 < N else 1.0
    return np.log(p1 / p0) if p1 > 0 else -np.inf


def show_pair(D, Dp):
    for name, (X, y) in (("D ", D), ("D'", Dp)):
        print(f"    {name}: rows {np.asarray(X).tolist()}  labels {np.asarray(y).tolist()}")


# ----------------------------------------------------------------------------------------------- checks
def check_density_model():
    """The noise recovered from a fitted diffprivlib model equals the noise diffprivlib drew (same RNG stream)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)); X *= 0.95 / np.linalg.norm(X, axis=1, keepdims=True).max()   # inside every data_norm used (no clipping)
    y = (X[:, 0] + rng.normal(size=len(X)) > 0).astype(int)   # not separable: well-conditioned
    worst = 0.0
    for fi in (False, True):
        for eps, C, q in ((1.0, 0.5, 4.0), (1.0, 5.0, 4.0), (2.0, 1.0, 1.0)):   # Delta = 0 and Delta > 0
            kw = dict(epsilon=eps, data_norm=q, C=C, fit_intercept=fi, tol=1e-10, max_iter=1000)
            theta = fit_output(X, y, 123, **kw)
            d = theta.size
            _, _, delta, scale = calibration(eps, C, q, len(y), fi)
            rs = np.random.RandomState(123)                       # what Vector.randomise draws
            u = rs.standard_normal((d, 4)).sum(axis=1) / 2
            b_drawn = u / np.linalg.norm(u) * rs.gamma(d / 4, scale, 4).sum()
            b_recovered, _ = noise_and_jacobian(theta, X, y, C, delta, fi)
            worst = max(worst, np.max(np.abs(b_drawn - b_recovered)) / np.linalg.norm(b_drawn))
    print(f"model check: noise recovered from diffprivlib's output vs noise it drew: max rel. error {worst:.1e}")


# ----------------------------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n1", type=int, default=0, help="black-box fits per dataset for issue 1 (30000 recommended)")
    ap.add_argument("--n2", type=int, default=6000, help="black-box fits per dataset for issue 2")
    args = ap.parse_args()
    print(f"numpy {np.__version__}, scipy {scipy.__version__}, diffprivlib {diffprivlib.__version__}, "
          f"scikit-learn {__import__('sklearn').__version__}")
    check_density_model()

    # ------------------------------------------------------------------ issue 1: q used where q² is needed
    print("\n=== Issue 1: data_norm q > 1, fit_intercept=False (eps' uses c*q/alpha, the proof needs c*q²/alpha) ===")
    q = 4.0
    D = (np.array([[0.0, q], [q, 0.0]]), np.array([1, 0]))
    Dp = (np.array([[0.0, q], [0.0, q]]), np.array([1, 0]))    # row 2 replaced: (q e1, 0) -> (q e2, 0)
    theta = np.array([0.0, 10.0])        # x = q e1 on the decision boundary; x' = q e2 saturated (margin 40)
    show_pair(D, Dp)
    for eps, C in ((1.0, 0.64), (0.5, 0.28), (1.0, 1.0), (0.5, 1.0)):
        qt, eps_p, delta, scale = calibration(eps, C, q, 2, False)
        L, nz, jc = privacy_loss(theta, D, Dp, eps, C, q, False)
        print(f"  eps={eps} C={C} q={q} n=2 d=2: eps'={eps_p:.5f} Delta={delta:.4g}  output w={theta.tolist()}: "
              f"loss={L:.6f} (noise {nz:.5f} + Jacobian {jc:.5f})  claimed eps={eps}  "
              f"{'VIOLATION' if L > eps else 'ok'};  sup over all pairs/outputs = {sup_loss_no_intercept(eps, C, q):.4f}")
    for eps in (1.0, 0.5):
        Cs = np.exp(np.linspace(np.log(1e-3), np.log(1e3), 2000))
        sups = [sup_loss_no_intercept(eps, C, q) for C in Cs]
        i = int(np.argmax(sups))
        C_star = 4 * np.expm1(eps / 2) / q          # eps' -> 0+ as C -> C_star from below
        print(f"  eps={eps}, q={q}: grid max over C of the sup = {sups[i]:.4f} at C={Cs[i]:.4f}; "
              f"limit C -> {C_star:.4f}-: log(1 + q(e^(eps/2) - 1)) = {np.log1p(q * np.expm1(eps / 2)):.4f}")
    print("  control q=1: sup over C in [1e-3, 1e3] of the sup loss = "
          f"{max(sup_loss_no_intercept(1.0, C, 1.0) for C in np.exp(np.linspace(np.log(1e-3), np.log(1e3), 600))):.4f} (eps=1)")

    # black-box, d=1, q=10, C=0.2:  D = {(10, 0), (0, 1)},  D' = {(0, 0), (0, 1)},  S = {-0.1 < coef_ < 0.1}
    q1, C1 = 10.0, 0.2
    D1 = (np.array([[q1], [0.0]]), np.array([0, 1]))
    D1p = (np.array([[0.0], [0.0]]), np.array([0, 1]))
    grid = np.linspace(-1, 1, 200001)
    L1 = np.array([privacy_loss(np.array([t]), D1, D1p, 1.0, C1, q1, False)[0] for t in grid[::100]])
    print(f"  black-box pair (eps=1, q={q1}, C={C1}, n=2, d=1):")
    show_pair(D1, D1p)
    print(f"    max exact loss over w in [-1, 1]: {L1.max():.4f} at w={grid[::100][np.argmax(L1)]:.4f}")
    if args.n1 > 0:
        kw = dict(epsilon=1.0, data_norm=q1, C=C1, fit_intercept=False)
        k = [sum(-0.1 < fit_output(X, y, s0 + i, **kw)[0] < 0.1 for i in range(args.n1))
             for (X, y), s0 in ((D1, 10 ** 6), (D1p, 2 * 10 ** 6))]
        print(f"    S = {{-0.1 < coef_ < 0.1}}: {k[0]}/{args.n1} on D, {k[1]}/{args.n1} on D'; "
              f"95% Clopper-Pearson lower bound on eps: {cp_eps_lower_bound(k[0], k[1], args.n1):.3f} (claimed 1.0)")
    else:
        print("    (black-box skipped: run with --n1 30000; exact P[S|D]=0.0253, P[S|D']=0.0047, log ratio 1.68)")

    # ------------------------------------------------------------------ issue 2: unregularised intercept
    print("\n=== Issue 2: fit_intercept=True (default) leaves the intercept unregularised (Delta = 0 branch) ===")
    eps, C, q = 1.0, 1.0, 1.0             # diffprivlib's defaults, data_norm=1
    D = (np.array([[1.0], [-1.0]]), np.array([1, 0]))
    Dp = (np.array([[0.0], [-1.0]]), np.array([1, 0]))          # row 1 replaced: (1, 1) -> (0, 1)
    qt, eps_p, delta, scale = calibration(eps, C, q, 2, True)
    print(f"  eps={eps} C={C} q={q} (q~={qt:.4f}) n=2 d=1+intercept: eps'={eps_p:.5f} Delta={delta}")
    show_pair(D, Dp)
    for T in (5.0, 10.0, 20.0, 72.0, 200.0):
        theta = np.array([T, -T])          # coef_ = T, intercept_ = -T: x=1 on the boundary, both D' rows saturated
        L, nz, jc = privacy_loss(theta, D, Dp, eps, C, q, True)
        print(f"  output (coef_, intercept_) = ({T:g}, {-T:g}): loss={L:.4f} (noise {nz:.4f} + Jacobian {jc:.4f})  "
              f"claimed eps={eps}  {'VIOLATION' if L > eps else 'ok'}")
    if args.n2 > 0:
        kw = dict(epsilon=eps, data_norm=q, C=C, fit_intercept=True)
        inS = lambda t: t[1] < -8 and abs(t[0] + t[1]) < 5
        k = [sum(inS(fit_output(X, y, s0 + i, **kw)) for i in range(args.n2))
             for (X, y), s0 in ((D, 3 * 10 ** 6), (Dp, 4 * 10 ** 6))]
        print(f"  black-box S = {{intercept_ < -8 and |coef_ + intercept_| < 5}} (exact P[S|D]=0.0080, P[S|D']=3.2e-6):")
        print(f"    {k[0]}/{args.n2} on D, {k[1]}/{args.n2} on D'; 95% Clopper-Pearson lower bound on eps: "
              f"{cp_eps_lower_bound(k[0], k[1], args.n2):.3f} (claimed {eps})")


if __name__ == "__main__":
    main()
