import numpy as np
from scipy.optimize import minimize_scalar
from oploss import dpl_calibration
def Lstar(eps, C, q, fi=False):
    qt, ep, delta, scale = dpl_calibration(eps, C, q, 1, fi)   # n=1: n*Delta is n-independent
    reg = 1/C + 1*delta
    beta = 1/scale
    g = lambda s: -(beta*qt*(1+s) + np.log1p(qt**2*s*(1-s)/reg))
    r = minimize_scalar(g, bounds=(1e-9, 1-1e-9), method="bounded", options=dict(xatol=1e-12))
    return -r.fun, r.x, ep, delta
if __name__ == "__main__":
 for eps in [1.0, 0.5, 0.1, 2.0]:
  for q in [1, 2, 3, 4, 10]:
    Cs = np.exp(np.linspace(np.log(1e-3), np.log(1e3), 2000))
    vals = [Lstar(eps, C, q)[0] for C in Cs]
    i = int(np.argmax(vals))
    print(f"eps={eps} q={q}: max over C of L* = {vals[i]:.4f} at C={Cs[i]:.4g}; L*(C=1)={Lstar(eps,1.0,q)[0]:.4f}")
