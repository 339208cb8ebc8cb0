"""Run diffprivlib many times on one dataset and save the outputs.  usage: blackbox.py CASE WHICH N SEED0"""
import sys, numpy as np, warnings
from diffprivlib.models import LogisticRegression
warnings.simplefilter("ignore")
case, which, N, seed0 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if case == "issue1":   # q=10, eps=1, C=0.2, no intercept, d=1
    X = np.array([[10.0], [0.0]]) if which == "D" else np.array([[0.0], [0.0]]); y = np.array([0, 1])
    kw = dict(epsilon=1.0, data_norm=10.0, C=0.2, fit_intercept=False)
else:                  # issue2: q=1, eps=1, C=1 (defaults), intercept
    X = np.array([[1.0], [-1.0]]) if which == "D" else np.array([[0.0], [-1.0]]); y = np.array([1, 0])
    kw = dict(epsilon=1.0, data_norm=1.0, C=1.0, fit_intercept=True)
out = np.empty((N, 2))
for i in range(N):
    clf = LogisticRegression(random_state=seed0 + i, **kw).fit(X, y)
    out[i] = clf.coef_[0, 0], clf.intercept_[0]
    if (i + 1) % 500 == 0:
        np.save(f"bb_{case}_{which}_partial.npy", out[:i + 1])
np.save(f"bb_{case}_{which}.npy", out)
print("done", case, which, N)
