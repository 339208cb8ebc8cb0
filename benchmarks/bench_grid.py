"""The PST Figure 1 grid (AUC vs ε; PLR, PST-S, PST-F(U), PST-F(W); MNIST and NEWS20) with n_jobs = 1 and 2.

Runs :func:`dpstack.experiments.stacking.fig1_epsilon` in the paper profile
(``DPSTACK_BENCH_PROFILE=quick`` for a short run) once with one job and once
with two loky workers, and checks that the two result tables are identical
(the runner's seeding contract). The datasets are preprocessed once in this
process before the timed runs; the two-job run also pays for that
preprocessing in each fresh worker, as a real first run does, and the table
shows it separately. One run per setting: the paper-profile grid takes minutes,
so this is a wall-clock measurement, not a median.
"""
import os
import time

import pandas as pd

from benchmarks import print_table


def main(profile=None):
    from dpstack.experiments import code_version, stacking

    profile = profile or os.environ.get("DPSTACK_BENCH_PROFILE", "paper")
    os.environ.setdefault("DPSTACK_QUIET", "1")
    p = stacking.PROFILES[profile]
    n_cells = p["n_repeats"] * len(p["datasets"]) * len(stacking.STACKING_METHODS) * len(p["epsilons"])

    version = code_version()
    start = time.perf_counter()
    for dataset in p["datasets"]:
        stacking.load_task(dataset, 0)  # the call stacking_cell makes (lru_cache keys on the call form)
    t_prep = time.perf_counter() - start

    timings, tables = {}, {}
    for n_jobs in (1, 2):
        start = time.perf_counter()
        tables[n_jobs] = stacking.fig1_epsilon(profile=profile, n_jobs=n_jobs)
        timings[n_jobs] = time.perf_counter() - start
        print(f"  n_jobs={n_jobs}: {timings[n_jobs]:.1f} s", flush=True)
    try:
        pd.testing.assert_frame_equal(tables[1], tables[2], check_exact=True)
        identical = "yes"
    except AssertionError:
        identical = "NO"
    code_version.cache_clear()
    if code_version() != version:
        identical += " (dpstack source edited during the run: the runs used different code)"
    rows = [{"grid": f"PST Fig. 1, {profile} profile", "cells": n_cells, "rows": len(tables[1]),
             "preprocessing s (once)": t_prep, "n_jobs=1 s": timings[1], "n_jobs=2 s": timings[2],
             "speed-up": timings[1] / timings[2], "tables identical": identical}]
    print_table(rows, list(rows[0]), floatfmt="{:.3g}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          "(other processes share the cores; the speed-up is bounded by 2).")


if __name__ == "__main__":
    main()
