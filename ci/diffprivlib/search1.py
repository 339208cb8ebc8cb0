"""Issue 1: numerically maximise the exact privacy loss over outputs θ, replaced rows and small base data
(fit_intercept=False, all rows with norm exactly q, d=2)."""
import numpy as np, itertools, sys
from scipy.optimize import minimize
from oploss import privacy_loss, dpl_calibration
from sup import Lstar

def search(eps, C, q, n=2, d=2, starts=200, seed=0, fi=False):
    rng = np.random.default_rng(seed)
    best = (-np.inf, None)
    def unpack(v, n):
        ang = v[:n+1]  # n rows of D (last one is replaced) + x'
        th = v[n+1:n+1+d+fi]
        rows = q*np.stack([np.cos(ang), np.sin(ang)], 1)
        return rows, th
    for labels in itertools.product([0,1], repeat=n+1):
        ys = np.array(labels[:n]); yp = ys.copy(); yp[-1] = labels[n]
        if len(set(ys)) < 2 or len(set(yp)) < 2: continue
        def f(v):
            rows, th = unpack(v, n)
            X = rows[:n]; Xp = X.copy(); Xp[-1] = rows[n]
            return -privacy_loss(th, X, ys, Xp, yp, eps, C, q, fi)
        for s in range(starts // 4):
            v0 = np.concatenate([rng.uniform(0, 2*np.pi, n+1), rng.normal(scale=rng.choice([0.3, 3, 10]), size=d+fi)])
            r = minimize(f, v0, method="Nelder-Mead", options=dict(maxiter=4000, xatol=1e-10, fatol=1e-12))
            if -r.fun > best[0]:
                best = (-r.fun, (labels, r.x))
    return best

if __name__ == "__main__":
    for eps, C, q in [(1.0, 0.6448, 4.0), (1.0, 1.0, 4.0), (0.5, 0.2833, 4.0), (0.5, 1.0, 4.0), (1.0, 0.001, 1.0), (1.0, 1.0, 1.0), (1.0, 10.0, 1.0)]:
        L, (labels, v) = search(eps, C, q)
        print(f"eps={eps} C={C} q={q}: searched max loss {L:.5f}   analytic sup {Lstar(eps, C, q)[0]:.5f}   labels {labels}  v={np.round(v,3)}", flush=True)
