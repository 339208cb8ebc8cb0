import numpy as np, warnings
from diffprivlib.models import LogisticRegression
from oploss import dpl_calibration
warnings.simplefilter("ignore")
X  = np.array([[1.0], [-1.0]]); y = np.array([1, 0])
qt, ep, de, sc = dpl_calibration(1.0, 1.0, 1.0, 2, True)
rows=[]
for s in range(3000):
    clf = LogisticRegression(epsilon=1.0, data_norm=1.0, C=1.0, random_state=s).fit(X, y)
    rs = np.random.RandomState(s); v = rs.standard_normal((2,4)).sum(1)/2; r = rs.gamma(0.5, sc, 4).sum(); b = v/np.linalg.norm(v)*r
    rows.append((clf.coef_[0,0], clf.intercept_[0], b[0], b[1], clf.n_iter_[0]))
R = np.array(rows)
exist = (R[:,3] > -1) & (R[:,3] < 1)
print("frac exist", exist.mean())
for name, m in [("exist", exist), ("b0>1", R[:,3] >= 1), ("b0<-1", R[:,3] <= -1)]:
    print(name, m.sum(), "intercept quantiles", np.round(np.quantile(R[m,1], [0, .01, .1, .5, .9, .99, 1]), 1), "n_iter", np.unique(R[m,4])[:10])
S = (R[:,1] < -8) & (np.abs(R[:,0] + R[:,1]) < 5)
print("S hits", S.sum(), "of which exist", (S & exist).sum())
