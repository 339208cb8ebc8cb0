import numpy as np, warnings
from diffprivlib.models import LogisticRegression
X = np.array([[1.0], [-1.0]]); y = np.array([1, 0])
cnt = 0; big = 0; N = 200
for s in range(N):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        clf = LogisticRegression(epsilon=1.0, data_norm=1.0, random_state=s).fit(X, y)
    conv = [x for x in w if "converge" in str(x.message).lower()]
    if abs(clf.intercept_[0]) > 1e6:
        big += 1; cnt += bool(conv)
print(f"{big}/{N} fits returned |intercept_| > 1e6; of these {cnt} raised a ConvergenceWarning")
