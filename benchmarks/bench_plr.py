"""Non-private PLR fit (dpstack) against scikit-learn's lbfgs at equal λ and tolerance.

*Same problem.* scikit-learn's ``LogisticRegression(C, fit_intercept=False,
solver="lbfgs")`` minimises ``(1/n) Σ log(1 + exp(−y wᵀx)) + ‖w‖²/(2Cn)``
(it divides the loss by the sample count), which is PLR's objective J with
``C = 1/(nλ)``, ε = ∞ (no noise, Δ = 0), on the rows clipped to the unit ball:
scikit-learn gets the pre-clipped X (``clip_rows(X, 1)``, made once outside the
timing), PLR the raw X, which it clips inside its fit.

*Equal tolerance.* scikit-learn's ``tol`` is L-BFGS-B's ``gtol``: stop when
‖∇J‖∞ ≤ tol, the same quantity and scale as dpstack's ``tol`` (after its
float64 rescaling, which is ≈ 1 here). scikit-learn also stops when J's relative
decrease falls below 64·eps, so at tight ``tol`` it may return early; the table
prints the ‖∇J‖∞ each side actually reached, and the largest coefficient
difference.

Problems (:mod:`benchmarks.data`): the realistic data at n = 200,000, d = 100
(5 % of rows beyond the bound), MNIST digits 0 vs 8 raw pixels (11,774 × 784,
5 % beyond the bound; when the files are in the data home), and the two older,
well-conditioned problems: MNIST 0 vs 8, n = 3,000 training images projected on
their top 100 principal components (rows rescaled by the largest norm), and the
synthetic n = 200,000, d = 100 logistic model with rows inside the unit ball. Timed: the whole ``fit`` (input
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
from benchmarks.data import mnist08, realistic, well_conditioned
from dpstack import PrivateLogisticRegression
from dpstack.mechanisms import clip_rows
from dpstack.solvers import logistic_objective, minimize_perturbed_logistic

#: The old name of the well-conditioned model (bench_plrfs and bench_solver_rules use it).
synthetic = well_conditioned

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


def compare(name, X, y, lam, tol, repeats):
    n = X.shape[0]
    Z = clip_rows(X, 1.0)  # X itself when no row is beyond the bound
    plr = PrivateLogisticRegression(epsilon=np.inf, lam=lam, tol=tol, max_iter=200)
    sk = LogisticRegression(C=1.0 / (n * lam), fit_intercept=False, tol=tol, max_iter=10_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's early-stop notice at tight tol
        medians, fitted = interleaved_medians(
            {
                "sklearn": lambda: sk.fit(Z, y).coef_[0].copy(),
                "dpstack": lambda: plr.fit(X, y).coef_[0].copy(),
                "solver": lambda: minimize_perturbed_logistic(Z, y, lam, tol=tol)[0],
            },
            repeats,
        )
    grad = {k: float(np.max(np.abs(logistic_objective(fitted[k], Z, y, lam)[1]))) for k in ("sklearn", "dpstack")}
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
        problems = [("realistic n=200000 d=100", *realistic(200_000, 100), repeats_large)]
        mnist = mnist08()
        if mnist is not None:
            problems.append(("MNIST 0 vs 8 raw pixels", *mnist, repeats))
        problems += [
            ("MNIST-PCA100 n=3000 (well-conditioned)", *mnist_pca100(), repeats),
            ("synthetic n=200000 d=100 (well-conditioned)", *well_conditioned(), repeats_large),
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
