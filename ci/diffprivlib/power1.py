"""Black-box power for issue 1 in d=1 (fit_intercept=False):
D = {(q,0),(0,1)}, D' = {(0,0),(0,1)};  theta ↦ b monotone, so P(theta in (a1,a2)) is exact via Laplace CDF."""
import numpy as np
from scipy.special import expit
from scipy.stats import beta as B
from oploss import dpl_calibration

def lap_cdf(x, s): return np.where(x < 0, 0.5*np.exp(x/s), 1 - 0.5*np.exp(-x/s))
def probs(eps, C, q, a1, a2, n=2):
    qt, ep, delta, scale = dpl_calibration(eps, C, q, n, False)
    R = 1/C + n*delta
    bD = lambda t: -(R*t + q*expit(q*t))   # decreasing in t
    bDp = lambda t: -(R*t)
    pD = lap_cdf(bD(a1), scale) - lap_cdf(bD(a2), scale)
    pDp = lap_cdf(bDp(a1), scale) - lap_cdf(bDp(a2), scale)
    return pD, pDp
def cp_lower_eps(k1, k0, N, alpha=0.05):
    # one-sided CP: lower bound on p1, upper on p0, each at alpha/2
    p1 = B.ppf(alpha/2, k1, N-k1+1) if k1 > 0 else 0
    p0 = B.ppf(1-alpha/2, k0+1, N-k0)
    return np.log(p1/p0)
if __name__ == "__main__":
    N = 20000
    for eps in [1.0]:
        best = []
        for q in [4, 10, 30, 100, 1000]:
            for C in np.exp(np.linspace(np.log(0.01), np.log(1e4), 60)):
                for a1 in np.linspace(-3, 0, 61)/q:
                    for width in np.array([0.25, 0.5, 1, 2, 3, 4, 6])/q:
                        pD, pDp = probs(eps, C, q, a1, a1+width)
                        lb = cp_lower_eps(N*pD, N*pDp, N)
                        best.append((lb, q, C, a1, a1+width, pD, pDp, np.log(pD/pDp)))
        best.sort(key=lambda r: -r[0])
        for q in [4, 10, 30, 100, 1000]:
            r = [b for b in best if b[1]==q][0]
            print("q=%g C=%.4g S=(%.4f,%.4f) pD=%.4g pD'=%.4g log ratio=%.3f  expected CP lower eps (N=%d) = %.3f" % (r[1], r[2], r[3], r[4], r[5], r[6], r[7], N, r[0]))
