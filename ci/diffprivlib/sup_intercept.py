"""Upper bound on the privacy loss of diffprivlib with fit_intercept=True when Delta>0 (eps'<=0 branch):
   beta*qt*(1+s) + log(1 + s(1-s) * (q^2/(1/C + nDelta) + 1/(nDelta)));  (Delta=0 branch: +infinity)."""
import numpy as np
from oploss import dpl_calibration
def sup_int(eps, C, q):
    qt, ep, delta, scale = dpl_calibration(eps, C, q, 1, True)
    if delta == 0: return np.inf
    k = q**2 / (1/C + delta) + 1/delta
    s = np.linspace(1e-6, 1-1e-6, 100001)
    return np.max(qt/scale*(1+s) + np.log1p(s*(1-s)*k))
for eps in [1.0, 0.5]:
    for q in [1.0, 4.0]:
        Cmin = 4*np.expm1(eps/2)/np.sqrt(q**2+1)
        Cs = np.exp(np.linspace(np.log(Cmin*1.0001), np.log(1e4), 400))
        v = [sup_int(eps, c, q) for c in Cs]; i = int(np.argmax(v))
        print(f"eps={eps} q={q}: Delta=0 (unbounded loss) for C < {Cmin:.4f}; Delta>0 branch: max bound {v[i]:.4f} at C={Cs[i]:.4g}, bound at C=1e4 {v[-1]:.4f}")
