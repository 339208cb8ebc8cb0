"""Non-private PLR fit (dpstack) against scikit-learn's lbfgs at equal λ and tolerance.

*Same problem.* scikit-learn's ``LogisticRegression(C, fit_intercept=False,
solver="lbfgs")`` minimises ``(1/n) Σ log(1 + exp(−y wᵀx)) + ‖w‖²/(2Cn)``
(it divides the loss by the sample count), which is PLR's objective J with
``C = 1/(nλ)``, ε = ∞ (no noise, Δ = 0). Rows lie inside the unit ball, so
PLR's clipping to ``norm_bound=1`` leaves the data unchanged.

*Equal tolerance.* scikit-learn's ``tol`` is L-BFGS-B's ``gtol``: stop when
‖∇J‖∞ ≤ tol, the same quantity and scale as dpstack's ``tol`` (after its
float64 rescaling, which is ≈ 1 here). scikit-learn also stops when J's relative
decrease falls below 64·eps, so at tight ``tol`` it may return early; the table
prints the ‖∇J‖∞ each side actually reached, and the largest coefficient
difference.

Problems: MNIST digits 0 vs 8, n = 3,000 training images projected on their top
100 principal components (rows rescaled by the largest norm), and a synthetic
n = 200,000, d = 100 logistic model. Timed: the whole ``fit`` (input
validation included) of ``PrivateLogisticRegression(epsilon=np.inf)`` and of
scikit-learn, interleaved, medians of ``repeats`` runs, one BLAS thread.
"solver only" is :func:`dpstack.solvers.minimize_perturbed_logistic` on the same
arrays, without the estimator's input validation and clipping check.
"""

import warnings

import numpy as np
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from benchmarks import interleaved_medians, print_table
from dpstack import PrivateLogisticRegression
from dpstack.solvers import logistic_objective, minimize_perturbed_logistic

LAMS = (1e-2, 1e-4)
TOLS = (1e-4, 1e-8, 1e-10)


def mnist_pca100(n=3000, seed=0):
    """Digits 0 (y = −1) vs 8 (y = +1): n random training images, PCA to 100, rows in the unit ball."""
    from dpstack.datasets import load_mnist

    bunch = load_mnist(digits=(0, 8), subset="train")  # from DPSTACK_DATA (see benchmarks/__init__.py)
    rng = np.random.default_rng(seed)
    rows = rng.choice(bunch.target.size, size=n, replace=False)
    X = PCA(n_components=100, random_state=seed).fit_transform(bunch.data[rows])
    X /= np.linalg.norm(X, axis=1).max()
    return X, np.where(bunch.target[rows] == 8, 1, -1)


def synthetic(n=200_000, d=100, seed=1):
    """Gaussian rows scaled into the unit ball, labels from a logistic model (Bayes accuracy ≈ 0.8)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    # strictly inside the unit ball: a row normalised to norm 1 can measure 1 + 1 ulp,
    # and clipping it would make PLR copy X (clip_rows returns X itself only when no row is clipped)
    X /= np.linalg.norm(X, axis=1).max() * (1 + 1e-9)
    w_true = rng.standard_normal(d) * 30 / np.sqrt(d)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ w_true)), 1, -1)
    return X, y


def compare(name, X, y, lam, tol, repeats):
    n = X.shape[0]
    plr = PrivateLogisticRegression(epsilon=np.inf, lam=lam, tol=tol, max_iter=200)
    sk = LogisticRegression(C=1.0 / (n * lam), fit_intercept=False, tol=tol, max_iter=10_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's early-stop notice at tight tol
        medians, fitted = interleaved_medians(
            {
                "sklearn": lambda: sk.fit(X, y).coef_[0].copy(),
                "dpstack": lambda: plr.fit(X, y).coef_[0].copy(),
                "solver": lambda: minimize_perturbed_logistic(X, y, lam, tol=tol)[0],
            },
            repeats,
        )
    grad = {k: float(np.max(np.abs(logistic_objective(fitted[k], X, y, lam)[1]))) for k in ("sklearn", "dpstack")}
    return {
        "problem": name,
        "λ": f"{lam:g}",
        "tol": f"{tol:g}",
        "sklearn s": medians["sklearn"],
        "dpstack s": medians["dpstack"],
        "ratio": medians["dpstack"] / medians["sklearn"],
        "solver only s": medians["solver"],
        "sklearn ‖∇J‖∞": grad["sklearn"],
        "dpstack ‖∇J‖∞": grad["dpstack"],
        "max |Δw|": float(np.max(np.abs(fitted["dpstack"] - fitted["sklearn"]))),
    }


def main(repeats=7, repeats_large=5):
    rows = []
    with threadpool_limits(limits=1):
        problems = [
            ("MNIST-PCA100 n=3000", *mnist_pca100(), repeats),
            ("synthetic n=200000 d=100", *synthetic(), repeats_large),
        ]
        for name, X, y, r in problems:
            for lam in LAMS:
                for tol in TOLS:
                    rows.append(compare(name, X, y, lam, tol, r))
                    print(f"  {name} λ={lam:g} tol={tol:g}: ratio {rows[-1]['ratio']:.2f}", flush=True)
    print()
    print_table(rows, list(rows[0]), floatfmt="{:.3g}")
    print("ratio = dpstack time / scikit-learn time (medians, interleaved runs; < 1 means dpstack is faster).")


if __name__ == "__main__":
    main()
