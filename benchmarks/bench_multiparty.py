"""Batched local training (dpstack) against a per-party scikit-learn loop.

M = 20,000 parties of 22 samples in d = 123 dimensions (the KDD-99 setting of
Hamm et al. 2016, Section 6.2), synthetic rows on the unit sphere with labels
from a noisy linear rule. Both sides fit the same model: λ = 1e-4 logistic
regression without intercept, i.e. scikit-learn's
``LogisticRegression(C=1/(22·λ), fit_intercept=False)``. scikit-learn needs two
classes, so the loop skips one-class parties (they are checked against
``dpstack.solvers.minimize_perturbed_logistic`` on a sample instead) and the
ratio is reported per fitted party. Both timings come from this run.
"""
import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression

from dpstack.multiparty import fit_local_logistic
from dpstack.solvers import minimize_perturbed_logistic


def main(n_parties=20_000, party_size=22, n_features=123, lam=1e-4, seed=0):
    rng = np.random.default_rng(seed)
    n = n_parties * party_size
    X = rng.normal(size=(n, n_features))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] + 0.1 * rng.normal(size=n) > 0.12).astype(int)  # ~18% positive: some one-class parties
    parties = np.repeat(np.arange(n_parties), party_size)

    t0 = time.perf_counter()
    W, n_iter = fit_local_logistic(X, y, parties, n_parties, 2, lam)
    t_batched = time.perf_counter() - t0

    C = 1.0 / (party_size * lam)
    max_diff, fitted, one_class = 0.0, 0, []
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in range(n_parties):
            rows = slice(m * party_size, (m + 1) * party_size)
            if y[rows].min() == y[rows].max():
                one_class.append(m)
                continue
            coef = LogisticRegression(C=C, fit_intercept=False, tol=1e-10, solver="newton-cholesky",
                                      max_iter=1000).fit(X[rows], y[rows]).coef_[0]
            max_diff = max(max_diff, float(np.max(np.abs(coef - W[m, 0]))))
            fitted += 1
    t_sklearn = time.perf_counter() - t0
    one_diff = 0.0
    for m in one_class[:200]:
        rows = slice(m * party_size, (m + 1) * party_size)
        w, _ = minimize_perturbed_logistic(X[rows], 2.0 * y[rows] - 1.0, lam, tol=1e-13)
        one_diff = max(one_diff, float(np.max(np.abs(w - W[m, 0]))))

    per_party_batched = t_batched / n_parties
    per_party_sklearn = t_sklearn / max(fitted, 1)
    print(f"MPL local training: M = {n_parties} parties x {party_size} samples, d = {n_features}, lambda = {lam:g}")
    print(f"  batched Newton (all parties): {t_batched:8.2f} s  ({n_iter} iterations)")
    print(f"  scikit-learn loop ({fitted} two-class parties, C = {C:.1f}): {t_sklearn:8.2f} s")
    print(f"  speed-up per party: {per_party_sklearn / per_party_batched:8.1f}x")
    print(f"  max |w_batched - w_sklearn| = {max_diff:.2e} (two-class parties); "
          f"vs exact Newton on {min(len(one_class), 200)} one-class parties: {one_diff:.2e}")
    ok = max_diff <= 1e-6 and one_diff <= 1e-6
    print("  solutions equal to 1e-6:", "yes" if ok else "NO")
    return {"t_batched": t_batched, "t_sklearn": t_sklearn, "ratio": per_party_sklearn / per_party_batched,
            "max_diff": max_diff, "one_class_diff": one_diff, "ok": ok}


if __name__ == "__main__":
    main()
