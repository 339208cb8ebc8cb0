"""No stalls: PLR over 10 data seeds of the realistic data at n = 1e6 × d = 100, with and without the hand-over.

Near the minimiser J stops changing in float64 (its value is a sum of a million
rounded terms), and L-BFGS-B's line search, which works on those values, can
spend some forty evaluations on rounding noise before it gives up. The solver
hands over to its polish (L-BFGS's own steps accepted on the gradient, then Newton
if needed) after two evaluations within rounding of the best value
(:func:`dpstack.solvers._lbfgs`). This benchmark fits
``PrivateLogisticRegression(epsilon=ε)`` (λ = 0.01, tol = 1e-10) on 10 seeds of
:func:`benchmarks.data.realistic`, once as it is and once with the hand-over
switched off (``STALL_EVALUATIONS`` set beyond reach: the solver as it was), and
reports per seed the passes over X (deterministic: value-and-gradient evaluations
plus the polish's passes) and the fit times (interleaved, one run each
after one warm-up fit); then the slowest ÷ median of each (target ≤ 1.3).
``DPSTACK_BENCH_PROFILE=quick`` uses n = 1e5.
"""

import os
import time

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks import print_table
from benchmarks.bench_plr_sizes import count_passes
from benchmarks.data import realistic
from dpstack import PrivateLogisticRegression, solvers

LAM, TOL, SEEDS = 1e-2, 1e-10, 10


def fit_once(X, y, epsilon, seed, hand_over):
    saved = solvers.STALL_EVALUATIONS
    solvers.STALL_EVALUATIONS = saved if hand_over else 10**9
    try:
        est = PrivateLogisticRegression(epsilon=epsilon, lam=LAM, tol=TOL, random_state=seed, classes=[-1, 1])
        start = time.perf_counter()
        passes = count_passes(lambda: est.fit(X, y))
        return time.perf_counter() - start, passes
    finally:
        solvers.STALL_EVALUATIONS = saved


def main():
    quick = os.environ.get("DPSTACK_BENCH_PROFILE") == "quick"
    n, d = (100_000 if quick else 1_000_000), 100
    rows = []
    with threadpool_limits(limits=1):
        for epsilon in (np.inf, 1.0):
            for seed in range(SEEDS):
                X, y = realistic(n, d, seed)
                fit_once(X, y, epsilon, seed, True)  # warm-up (page faults, caches)
                after = fit_once(X, y, epsilon, seed, True)
                before = fit_once(X, y, epsilon, seed, False)
                rows.append(
                    {
                        "ε": f"{epsilon:g}",
                        "seed": seed,
                        "passes, hand-over": after[1],
                        "passes, without": before[1],
                        "s, hand-over": after[0],
                        "s, without": before[0],
                    }
                )
                print(f"  ε={epsilon:g} seed {seed}: passes {after[1]} (without hand-over {before[1]})", flush=True)
                del X, y
    summary = []
    for epsilon in ("inf", "1"):
        sub = [r for r in rows if r["ε"] == epsilon]
        entry = {"ε": epsilon, "seed": "slowest ÷ median"}
        for key in ("passes, hand-over", "passes, without", "s, hand-over", "s, without"):
            values = np.array([r[key] for r in sub], dtype=float)
            entry[key] = float(values.max() / np.median(values))
        summary.append(entry)
    print()
    print(f"n = {n:g}, d = {d}, realistic data, λ = {LAM:g}, tol = {TOL:g}")
    print_table(rows + summary, list(rows[0]), floatfmt="{:.3g}")
    print("passes = passes over X in one fit (deterministic); target: slowest ÷ median ≤ 1.3.")


if __name__ == "__main__":
    main()
