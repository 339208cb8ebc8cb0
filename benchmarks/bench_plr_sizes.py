"""PLR ``fit`` (ε = ∞ and ε = 1) against scikit-learn's lbfgs over the target sizes, with peak memory.

Sizes: n ∈ {1e3, 1e4, 1e5, 1e6} × d = 100 and n = 1e5 × d ∈ {10, 1000}; the
synthetic logistic model of :mod:`benchmarks.bench_plr` (rows in the unit
ball, so PLR's clipping to ``norm_bound=1`` changes nothing), λ = 0.01 (PLR's
default) and tol = 1e-10 (PLR's default, the exactness its guarantee needs).

*Reference.* ``LogisticRegression(C=1/(nλ), fit_intercept=False,
solver="lbfgs", tol=1e-10)`` minimises PLR's objective at ε = ∞ with the same
stopping quantity ‖∇J‖∞ (see :mod:`benchmarks.bench_plr`; it also stops on a
relative decrease of J below 64·eps, so it may return above tol: the table
prints the ‖∇J‖∞ both reach). At ε = 1 PLR solves the perturbed objective
(noise bᵀw/n) that scikit-learn cannot express; its ratio is its time over
scikit-learn's time for the non-private problem of the same size, λ and tol.

*Timing.* The three fits are interleaved, one warm-up round then medians of
``repeats`` rounds, one BLAS thread. *Memory.* The peak of memory allocated
during one ``fit`` beyond what existed before (tracemalloc, which numpy
reports its array buffers to), as a fraction of X's size; measured in
separate untimed calls. "solver" is :func:`dpstack.solvers.minimize_perturbed_logistic`
alone on the same arrays (ε = ∞): the rest of ``fit``'s peak is input
validation and label encoding (n-vectors, 1/d of X each).
"""

import os
import tracemalloc
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from benchmarks import interleaved_medians, print_table
from benchmarks.bench_plr import synthetic
from dpstack import PrivateLogisticRegression
from dpstack.solvers import logistic_objective, minimize_perturbed_logistic

SIZES = ((1_000, 100), (10_000, 100), (100_000, 100), (1_000_000, 100), (100_000, 10), (100_000, 1000))
LAM, TOL = 1e-2, 1e-10


def peak_extra(fit):
    """Peak bytes allocated during ``fit()`` above the level at its start (tracemalloc)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fit()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def compare(n, d, repeats):
    X, y = synthetic(n=n, d=d)
    sk = LogisticRegression(C=1.0 / (n * LAM), fit_intercept=False, tol=TOL, max_iter=10_000)
    inf = PrivateLogisticRegression(epsilon=np.inf, lam=LAM, tol=TOL, max_iter=200)
    one = PrivateLogisticRegression(epsilon=1.0, lam=LAM, tol=TOL, max_iter=200, random_state=0)
    fits = {
        "sklearn": lambda: sk.fit(X, y).coef_[0].copy(),
        "PLR ε=∞": lambda: inf.fit(X, y).coef_[0].copy(),
        "PLR ε=1": lambda: one.fit(X, y).coef_[0].copy(),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's early-stop notice at tight tol
        medians, coefs = interleaved_medians(fits, repeats)
        peaks = {k: peak_extra(f) / X.nbytes for k, f in fits.items()}
    ys = np.where(y == 1, 1.0, -1.0)
    peaks["solver"] = peak_extra(lambda: minimize_perturbed_logistic(X, ys, LAM, tol=TOL)) / X.nbytes
    grad = {k: float(np.max(np.abs(logistic_objective(coefs[k], X, ys, LAM)[1]))) for k in ("sklearn", "PLR ε=∞")}
    return {
        "n × d": f"{n:.0e} × {d}",
        "X MiB": X.nbytes / 2**20,
        "sklearn s": medians["sklearn"],
        "ε=∞ ratio": medians["PLR ε=∞"] / medians["sklearn"],
        "ε=1 ratio": medians["PLR ε=1"] / medians["sklearn"],
        "sklearn ‖∇J‖∞": grad["sklearn"],
        "PLR ‖∇J‖∞": grad["PLR ε=∞"],
        "max |Δw|": float(np.max(np.abs(coefs["PLR ε=∞"] - coefs["sklearn"]))),
        "peak extra sklearn": f"{peaks['sklearn']:.1%}",
        "peak extra ε=∞": f"{peaks['PLR ε=∞']:.1%}",
        "peak extra ε=1": f"{peaks['PLR ε=1']:.1%}",
        "peak extra solver": f"{peaks['solver']:.1%}",
    }


def main(repeats=None):
    quick = os.environ.get("DPSTACK_BENCH_PROFILE") == "quick"
    rows = []
    with threadpool_limits(limits=1):
        for n, d in SIZES:
            if quick and n * d > 1e7:
                continue
            r = repeats or (3 if quick else (5 if n * d >= 1e7 else 9))
            rows.append(compare(n, d, r))
            print(
                f"  n={n:g} d={d}: ratio ε=∞ {rows[-1]['ε=∞ ratio']:.2f}, ε=1 {rows[-1]['ε=1 ratio']:.2f}", flush=True
            )
    print()
    print_table(rows, list(rows[0]), floatfmt="{:.3g}")
    print(
        f"ratio = PLR fit time / scikit-learn lbfgs fit time (λ = {LAM:g}, tol = {TOL:g}; medians of interleaved "
        "runs). Target: ≤ 1.0 for both ε and peak extra memory ≤ 10 % of X."
    )


if __name__ == "__main__":
    main()
