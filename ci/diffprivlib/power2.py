"""Issue 2 black-box design: exact P[M(D) in S] and P[M(D') in S] by integrating the exact density
over S = {intercept_ < -T0, |coef_ + intercept_| < U} (q=1, d=1 feature + intercept)."""
import numpy as np
from scipy.special import expit
from oploss import dpl_calibration
X  = np.array([1.0, -1.0]); y = np.array([1, 0])
Xp = np.array([0.0, -1.0]); yp = np.array([1, 0])
def dens(W, W0, X, y, C, scale):
    b0 = np.zeros_like(W); b1 = np.zeros_like(W); A11 = np.full_like(W, 1/C); A12 = np.zeros_like(W); A22 = np.zeros_like(W)
    for x, yy in zip(X, y):
        z = W*x + W0; p = expit(z); h = expit(z)*expit(-z)
        b1 -= (p-yy)*x; b0 -= (p-yy); A11 += h*x*x; A12 += h*x; A22 += h
    b1 -= W/C
    det = A11*A22 - A12**2
    return np.exp(-np.hypot(b0, b1)/scale)/(2*np.pi*scale**2)*det
def prob(C, T0, U, T1=200.0, eps=1.0, which=(X, y)):
    qt, ep, delta, scale = dpl_calibration(eps, C, 1.0, 2, True)
    assert delta == 0
    w0 = np.linspace(-T1, -T0, 40001); u = np.linspace(-U, U, 801)
    W0, Uu = np.meshgrid(w0, u, indexing="ij"); W = Uu - W0
    f = dens(W, W0, which[0], which[1], C, scale)
    return np.trapezoid(np.trapezoid(f, u, axis=1), w0)
if __name__ == "__main__":
    # sanity: total mass over a big box = P(minimiser exists)
    C = 1.0; qt, ep, delta, scale = dpl_calibration(1.0, C, 1.0, 2, True)
    w = np.linspace(-150, 150, 3001); w0 = np.linspace(-150, 150, 3001)
    Wg, W0g = np.meshgrid(w, w0, indexing="ij")
    print("mass in box, D:", np.trapezoid(np.trapezoid(dens(Wg, W0g, X, y, C, scale), w0, axis=1), w))
    rng = np.random.default_rng(0); m = 400000
    r = rng.gamma(2, scale, m); ang = rng.uniform(0, 2*np.pi, m); bb0 = r*np.sin(ang)
    print("MC P(-n0 < b0 < n1) = P(-1<b0<1):", np.mean((bb0 > -1) & (bb0 < 1)))
    N = 20000
    for C in [0.5, 1.0, 1.5, 1.8]:
        for T0 in [4, 6, 8, 10]:
            pD = prob(C, T0, 5.0); pDp = prob(C, T0, 5.0, which=(Xp, yp))
            print(f"C={C} T0={T0}: P_D(S)={pD:.4g}  P_D'(S)={pDp:.3g}  ratio log={np.log(pD/pDp):.2f}  expected hits in N={N}: {N*pD:.1f} vs {N*pDp:.3g}")
