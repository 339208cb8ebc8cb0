"""The solver's two size thresholds, measured: is ``method="auto"`` ever slower than the alternative?

:func:`dpstack.solvers.minimize_perturbed_logistic` chooses its algorithm by two thresholds:

* **Newton first** when n·d ≤ :data:`~dpstack.solvers.NEWTON_FIRST_MAX_SIZE` (20,000) or
  n·d² ≤ :data:`~dpstack.solvers.NEWTON_FIRST_MAX_HESSIAN` (1,000,000: a cheap Hessian): damped
  Newton from the start instead of L-BFGS followed by its polish. Timed here around the
  threshold on both sides, against forcing either algorithm (``method="newton"`` and
  ``method="lbfgs"``, the latter with the same polish that ``"auto"`` would add, i.e.
  ``"auto"`` with Newton first switched off).
* **Conjugate gradients** for the Newton polish above
  :data:`~dpstack.solvers.NEWTON_MAX_FEATURES` (1,500) features instead of a Cholesky solve of
  the d × d Hessian. Timed at n = 5,000, d = 1,000 and 2,000, λ = 1e-4 (where L-BFGS stops
  above the tolerance and one polish step follows), with the threshold moved so that each
  side takes the other solve. Below the threshold the polish first tries a short CG run (at
  most d/8 Hessian-vector products, about the cost of forming the Hessian) and forms the
  Hessian only if that fails; when the short run succeeds, as it does here, both sides take
  the same path (equal coefficients, equal times) and the threshold does not matter.

Every fit solves the objective-perturbed problem of PLR at ε = 1 (the noise vector of
:func:`~dpstack.mechanisms.objective_perturbation_calibration`, fixed per size) to the default
tolerance 1e-10, on the realistic data of :mod:`benchmarks.data` (clipped to the unit ball
first, as PLR's fit does) and, as a second row, the old well-conditioned data; λ = 0.01 and
1e-4 for the first threshold. A size rule cannot see λ, which changes the iteration counts of
both algorithms, so no threshold is best at every size and λ: the table shows by how much it
misses. The variants are interleaved, one warm-up round then medians of ``repeats`` rounds, one
BLAS thread. "auto ÷ best" above 1 would mean that a threshold sends this size to the slower
algorithm on this machine.
"""

import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks import interleaved_medians, print_table
from benchmarks.data import PROBLEMS, problem
from dpstack import solvers
from dpstack.mechanisms import clip_rows, isotropic_noise, objective_perturbation_calibration

NEWTON_FIRST_SIZES = (
    (30, 5),
    (500, 10),
    (2_000, 10),
    (3_000, 10),
    (10_000, 10),
    (30_000, 10),
    (2_500, 20),
    (5_000, 20),
    (1_000, 30),
    (300, 50),
    (400, 50),
    (1_000, 50),
    (3_000, 50),
    (10_000, 50),
    (1_000, 100),
    (3_000, 100),
)
CG_SIZES = ((5_000, 1_000), (5_000, 2_000))
LAMS = (1e-2, 1e-4)


def _problem(kind, n, d, lam):
    X, y = problem(kind, n, d)
    X = clip_rows(X, 1.0)
    cal = objective_perturbation_calibration(1.0, n, lam, 1.0)
    b = isotropic_noise(d, cal.noise_scale, np.random.default_rng(0))
    return X, y, dict(lam=lam, b=b, delta=cal.delta)


def _with_threshold(name, value, fit):
    """``fit()`` with ``solvers.<name>`` set to ``value`` for the call."""

    def run():
        saved = getattr(solvers, name)
        setattr(solvers, name, value)
        try:
            return fit()
        finally:
            setattr(solvers, name, saved)

    return run


def newton_first_rows(repeats):
    rows = []
    for kind, (n, d), lam in ((k, s, lam) for k in PROBLEMS for s in NEWTON_FIRST_SIZES for lam in LAMS):
        X, y, kw = _problem(kind, n, d, lam)

        def fit(method, X=X, y=y, kw=kw):
            return solvers.minimize_perturbed_logistic(X, y, method=method, **kw)[0]

        variants = {
            "auto": lambda: fit("auto"),
            "newton": lambda: fit("newton"),
            "lbfgs + polish": _with_threshold("_newton_first", lambda n, d: False, lambda: fit("auto")),
        }
        times, out = interleaved_medians(variants, repeats=repeats)
        best = min(times["newton"], times["lbfgs + polish"])
        rows.append(
            {
                "data": kind,
                "n": n,
                "d": d,
                "n·d": n * d,
                "λ": lam,
                "auto takes": "newton" if solvers._newton_first(n, d) else "lbfgs + polish",
                "newton (ms)": 1e3 * times["newton"],
                "lbfgs + polish (ms)": 1e3 * times["lbfgs + polish"],
                "auto ÷ best": times["auto"] / best,
                "max |Δw|": float(np.max(np.abs(out["newton"] - out["lbfgs + polish"]))),
            }
        )
    return rows


def cg_rows(repeats):
    rows = []
    for kind, (n, d) in ((k, s) for k in PROBLEMS for s in CG_SIZES):
        X, y, kw = _problem(kind, n, d, 1e-4)  # (at λ = 0.01 L-BFGS alone reaches the tolerance here)

        def fit(X=X, y=y, kw=kw):
            return solvers.minimize_perturbed_logistic(X, y, **kw)[0]

        variants = {
            "auto": fit,
            "cholesky": _with_threshold("NEWTON_MAX_FEATURES", 10**9, fit),
            "cg": _with_threshold("NEWTON_MAX_FEATURES", 0, fit),
        }
        times, out = interleaved_medians(variants, repeats=repeats)
        rows.append(
            {
                "data": kind,
                "n": n,
                "d": d,
                "auto takes": "cg" if d > solvers.NEWTON_MAX_FEATURES else "cholesky",
                "cholesky polish (s)": times["cholesky"],
                "cg polish (s)": times["cg"],
                "auto ÷ best": times["auto"] / min(times["cholesky"], times["cg"]),
                "max |Δw|": float(np.max(np.abs(out["cholesky"] - out["cg"]))),
            }
        )
    return rows


def main(repeats=5):
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = newton_first_rows(repeats)
        print(
            f"Newton first when n·d ≤ {solvers.NEWTON_FIRST_MAX_SIZE:,} or n·d² ≤ {solvers.NEWTON_FIRST_MAX_HESSIAN:,} (ε = 1, tol = 1e-10; medians of {repeats})"
        )
        print_table(first, list(first[0]), floatfmt="{:.3g}")
        cg = cg_rows(max(3, repeats // 2))
        print(f"Newton polish by CG above d = {solvers.NEWTON_MAX_FEATURES:,} (ε = 1, λ = 1e-4, tol = 1e-10)")
        print_table(cg, list(cg[0]), floatfmt="{:.3g}")
    worst = max(r["auto ÷ best"] for r in first + cg)
    print(f"largest auto ÷ best: {worst:.2f}")
    return {"newton_first": first, "cg": cg, "worst": worst}


if __name__ == "__main__":
    main()
