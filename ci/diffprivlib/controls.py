"""Controls: (a) dpstack PrivateLogisticRegression on the same neighbours (its own exact loss code);
(b) diffprivlib at q=1 without intercept (analytic sup + numeric search)."""
import numpy as np, warnings, sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))  # the repository
from scipy.optimize import minimize
from dpstack import PrivateLogisticRegression
from dpstack.audit.exact import exact_privacy_loss
from dpstack.mechanisms import objective_perturbation_calibration
from oploss import privacy_loss
from sup import Lstar
from search1 import search
warnings.simplefilter("ignore")

def dpstack_sup(eps, lam, n, q):
    cal = objective_perturbation_calibration(eps, n, lam, q)
    R = n * (lam + cal.delta); beta = 1 / cal.noise_scale
    s = np.linspace(1e-6, 1 - 1e-6, 200001)
    return np.max(beta * q * (1 + s) + np.log1p(q**2 * s * (1 - s) / R))

def maximise_dpstack(est, X, y, Xp, yp, d, starts=60, seed=0):
    rng = np.random.default_rng(seed); best = -np.inf
    f = lambda th: -exact_privacy_loss(est, X, y, Xp, yp, th)
    g = lambda th: exact_privacy_loss(est, X, y, Xp, yp, th)   # other direction
    for _ in range(starts):
        th0 = rng.normal(scale=rng.choice([0.3, 3, 10]), size=d)
        for fun in (f, g):
            r = minimize(fun, th0, method="Nelder-Mead", options=dict(maxiter=3000, xatol=1e-9, fatol=1e-12))
            best = max(best, abs(r.fun))
    return best

print("== dpstack PrivateLogisticRegression, issue-1 neighbours (d=2, q=4, lam = 1/(C n)) ==")
q = 4.0
X  = np.array([[0, q], [q, 0]]); y  = np.array([1, 0])
Xp = np.array([[0, q], [0, q]]); yp = np.array([1, 0])
for eps, C in [(1.0, 0.64), (0.5, 0.28), (1.0, 1.0), (0.5, 1.0)]:
    n = 2; lam = 1 / (C * n)
    est = PrivateLogisticRegression(epsilon=eps, lam=lam, norm_bound=q, classes=[0, 1], random_state=0).fit(X, y)
    th = np.array([0.0, 10.0])
    L_at = exact_privacy_loss(est, X, y, Xp, yp, th)
    L_dpl = privacy_loss(th, X, y, Xp, yp, eps, C, q, False)
    Lmax = maximise_dpstack(est, X, y, Xp, yp, 2)
    Cs = np.exp(np.linspace(np.log(1e-3), np.log(1e3), 400))
    sup_all = max(dpstack_sup(eps, 1/(c*n), n, q) for c in Cs)
    print(f"eps={eps} C={C}: at theta=(0,10) dpstack loss {L_at:.5f} (diffprivlib {L_dpl:.5f}); max over theta {Lmax:.5f}; "
          f"analytic sup this lam {dpstack_sup(eps, lam, n, q):.5f}; analytic sup over all lam {sup_all:.5f}  (<= eps: {sup_all <= eps})")

print("== dpstack PrivateLogisticRegression(fit_intercept=True), issue-2 neighbours (q=1) ==")
X2  = np.array([[1.0], [-1.0]]); y2 = np.array([1, 0])
X2p = np.array([[0.0], [-1.0]]); y2p = np.array([1, 0])
for C in [1.0, 1.5]:
    n = 2; lam = 1 / (C * n)
    est = PrivateLogisticRegression(epsilon=1.0, lam=lam, norm_bound=1.0, fit_intercept=True, classes=[0, 1], random_state=0).fit(X2, y2)
    Ls = [abs(exact_privacy_loss(est, X2, y2, X2p, y2p, np.array([T, -T / est._scaling()[1]]))) for T in [5, 10, 20, 50, 100]]
    Lmax = maximise_dpstack(est, X2, y2, X2p, y2p, 2)
    print(f"C={C}: |loss| along diffprivlib's bad outputs {np.round(Ls, 4).tolist()}, max over theta {Lmax:.5f} (eps=1)")

print("== diffprivlib at q=1, fit_intercept=False ==")
for eps in [1.0, 0.5]:
    Cs = np.exp(np.linspace(np.log(1e-3), np.log(1e3), 400))
    sups = [Lstar(eps, c, 1.0)[0] for c in Cs]
    print(f"eps={eps}: analytic sup over C in [1e-3,1e3] = {max(sups):.5f} (<= eps: {max(sups) <= eps})")
for eps, C in [(1.0, 1.0), (1.0, 0.01), (1.0, 10.0), (0.5, 1.0)]:
    L, _ = search(eps, C, 1.0, n=2, starts=60, seed=2)
    print(f"eps={eps} C={C}: searched max loss {L:.5f}, analytic sup {Lstar(eps, C, 1.0)[0]:.5f}")
