import numpy as np
from oploss import privacy_loss, privacy_loss_mp, dpl_calibration
from sup import Lstar
def show(name, X, y, Xp, yp, theta, eps, C, q, fi):
    qt, ep, de, sc = dpl_calibration(eps, C, q, len(y), fi)
    nz, jc = privacy_loss(theta, X, y, Xp, yp, eps, C, q, fi, terms=True)
    nzm, jcm = privacy_loss_mp(theta, X, y, Xp, yp, eps, C, q, fi, terms=True)
    print(f"{name}: eps={eps} C={C} q={q} fit_intercept={fi} eps'={ep:.6f} Delta={de:.4g} theta={theta}")
    print(f"   float64 loss={nz+jc:.10f} (noise {nz:.6f}, jac {jc:.6f});  mpmath(50 digits) loss={float(nzm+jcm):.10f}")
q = 4.0
X  = np.array([[0, q], [q, 0]]); y  = np.array([1, 0])
Xp = np.array([[0, q], [0, q]]); yp = np.array([1, 0])
for eps, C in [(1.0, 0.64), (0.5, 0.28), (1.0, 1.0), (0.5, 1.0)]:
    for T in [10.0]:
        show("issue1", X, y, Xp, yp, np.array([0.0, T]), eps, C, q, False)
    print("   analytic sup over all neighbours/outputs:", round(Lstar(eps, C, q)[0], 5))
# issue 2
X  = np.array([[1.0], [-1.0]]); y = np.array([1, 0])
Xp = np.array([[0.0], [-1.0]]); yp = np.array([1, 0])
for C in [1.0, 1.5]:
    for T in [5.0, 10.0, 20.0, 50.0, 100.0]:
        show("issue2", X, y, Xp, yp, np.array([T, -T]), 1.0, C, 1.0, True)
