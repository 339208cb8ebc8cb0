import numpy as np, warnings
from diffprivlib.models import LogisticRegression
from oploss import dpl_calibration, noise_and_hessian
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
for fi in [False, True]:
  for (eps, C, q) in [(1.0, 0.3, 4.0), (1.0, 5.0, 4.0), (0.5, 1.0, 1.0)]:
    n, p = 30, 3
    X = rng.normal(size=(n, p)); X *= q / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), q) ; X*=0.9
    y = (X[:, 0] + 0.3*rng.normal(size=n) > 0).astype(int)
    seed = 123
    clf = LogisticRegression(epsilon=eps, data_norm=q, C=C, fit_intercept=fi, random_state=seed, max_iter=1000, tol=1e-10).fit(X, y)
    theta = np.append(clf.coef_[0], clf.intercept_) if fi else clf.coef_[0]
    d = len(theta)
    qt, ep, delta, scale = dpl_calibration(eps, C, q, n, fi)
    rs = np.random.RandomState(seed)
    v = rs.standard_normal((d, 4)).sum(axis=1) / 2
    r = rs.gamma(d / 4, scale, 4).sum()
    b_true = v / np.linalg.norm(v) * r
    b_rec, A = noise_and_hessian(theta, X, y, C, delta, fi)
    print(fi, eps, C, q, "eps'=%.4f Delta=%.4g" % (ep, delta), "b_true", np.round(b_true, 4), "b_rec", np.round(b_rec, 4))
