"""The PST Figure 1 grid (AUC vs ε; PLR, PST-S, PST-F(U), PST-F(W); MNIST and NEWS20) with n_jobs = 1 and 2.

Runs :func:`dpstack.companion.papers.pst.grids.fig1_epsilon` in the paper profile
(``DPSTACK_BENCH_PROFILE=quick`` for a short run) once with one job and once
with two loky workers (twice: "cold" fresh workers that must first load and
preprocess the datasets, as a real first run does, then "warm" the same
workers again), and checks that the result tables are identical (the runner's
seeding contract). The n_jobs = 1 run uses datasets preprocessed beforehand in
this process (that time is shown separately) and after a one-repeat warm-up.
One run per setting: the
paper-profile grid takes minutes, so this is a wall-clock measurement, not a
median, and on a shared machine it moves with the load of other processes.
"""

import os
import time

import pandas as pd

from benchmarks import print_table


def main(profile=None):
    from dpstack.companion import code_version
    from dpstack.companion.papers.pst import grids as stacking

    profile = profile or os.environ.get("DPSTACK_BENCH_PROFILE", "paper")
    os.environ.setdefault("DPSTACK_QUIET", "1")
    p = stacking.PROFILES[profile]
    n_cells = p["n_repeats"] * len(p["datasets"]) * len(stacking.STACKING_METHODS) * len(p["epsilons"])

    version = code_version()
    start = time.perf_counter()
    for dataset in p["datasets"]:
        stacking.load_task(dataset, 0)  # the call stacking_cell makes (lru_cache keys on the call form)
    t_prep = time.perf_counter() - start
    stacking.fig1_epsilon(profile=profile, n_repeats=1, epsilons=(1.0,), n_jobs=1)  # first-call imports

    timings, tables = {}, {}
    # "2 warm": the same two loky workers again (joblib reuses them), their datasets already loaded.
    for key, n_jobs in ((1, 1), (2, 2), ("2 warm", 2)):
        start = time.perf_counter()
        tables[key] = stacking.fig1_epsilon(profile=profile, n_jobs=n_jobs)
        timings[key] = time.perf_counter() - start
        print(f"  n_jobs={key}: {timings[key]:.1f} s", flush=True)
    try:
        for key in (2, "2 warm"):
            pd.testing.assert_frame_equal(tables[1], tables[key], check_exact=True)
        identical = "yes"
    except AssertionError:
        identical = "NO"
    code_version.cache_clear()
    if code_version() != version:
        identical += " (dpstack source edited during the run: the runs used different code)"
    rows = [
        {
            "grid": f"PST Fig. 1, {profile} profile",
            "cells": n_cells,
            "rows": len(tables[1]),
            "preprocessing s (per process)": t_prep,
            "n_jobs=1 s": timings[1],
            "n_jobs=2 s (cold)": timings[2],
            "n_jobs=2 s (warm)": timings["2 warm"],
            "speed-up (warm)": timings[1] / timings["2 warm"],
            "tables identical": identical,
        }
    ]
    print_table(rows, list(rows[0]), floatfmt="{:.3g}")
    print(
        f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
        "(other processes share the cores; the speed-up is bounded by 2)."
    )


if __name__ == "__main__":
    main()
