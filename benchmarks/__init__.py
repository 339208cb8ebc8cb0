"""Benchmarks of dpstack against scikit-learn and of the experiment grids.

Run all of them with ``python -m benchmarks`` (or ``make benchmark``), or some
with ``python -m benchmarks plr grid``. They are not part of the test suite:
timings depend on the machine, so nothing here asserts a speed. Every ratio is
measured in the same run, with the compared fits interleaved so that a change
in machine load hits both sides.

BLAS runs with one thread (``OMP_NUM_THREADS=1`` is set before numpy is
imported, unless already set, and enforced with threadpoolctl while timing):
scikit-learn and dpstack then do the same single-threaded arithmetic.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# Like the Makefile: the project's offline data copy, when it sits beside the repository.
_SHARED_DATA = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "shared", "data"
)
if "DPSTACK_DATA" not in os.environ and os.path.isfile(os.path.join(_SHARED_DATA, "MANIFEST.md")):
    os.environ["DPSTACK_DATA"] = _SHARED_DATA

import datetime  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from dpstack import solvers  # noqa: E402

__all__ = ["interleaved_medians", "machine_summary", "print_table"]


def interleaved_medians(functions, repeats=5, warmup=1):
    """Median wall time (s) of each function, calling them in turn ``repeats`` times.

    Parameters
    ----------
    functions : dict of str -> callable
        The functions to time (called without arguments).
    repeats : int
        Timed rounds (≥ 5 for the README numbers).
    warmup : int
        Untimed rounds first (imports, caches, page faults).

    Returns
    -------
    medians : dict of str -> float
    results : dict of str -> object
        The return value of each function's last call.
    """
    results = {}
    for _ in range(warmup):
        for name, fn in functions.items():
            results[name] = fn()
    times = {name: [] for name in functions}
    for _ in range(repeats):
        for name, fn in functions.items():
            start = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - start)
    return {name: float(np.median(ts)) for name, ts in times.items()}, results


def machine_summary():
    """One line: date, CPU model (/proc/cpuinfo), cores, load average, BLAS libraries and their threads, versions."""
    import scipy
    import sklearn
    from threadpoolctl import threadpool_info

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    blas = ", ".join(
        f"{p.get('internal_api')} {p.get('version')} ({p.get('num_threads')} thr)"
        for p in threadpool_info()
        if p.get("user_api") == "blas"
    )
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    try:
        load = "load average " + " / ".join(f"{v:.2f}" for v in os.getloadavg()) + " (1 / 5 / 15 min)"
    except OSError:
        load = "load average unknown"
    return (
        f"{today}; {cpu}, {os.cpu_count()} cores, {load}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}; "
        f"BLAS {blas}; numpy {np.__version__}, scipy {scipy.__version__}, scikit-learn {sklearn.__version__}; "
        f"fused pass {'on' if solvers.FUSED else 'off'}"
    )


def print_table(rows, columns, floatfmt="{:.4g}"):
    """Print a list of dicts as a Markdown table (pasteable into the README), then the machine.

    Ratios hold for the machine they were measured on (CPU, BLAS, threads): the
    line under every table names it.
    """

    def fmt(v):
        if isinstance(v, float):
            return floatfmt.format(v)
        return str(v)

    print("| " + " | ".join(columns) + " |")
    print("|" + "|".join("---" for _ in columns) + "|")
    for row in rows:
        print("| " + " | ".join(fmt(row.get(c, "")) for c in columns) + " |")
    print(f"\nmachine: {machine_summary()}", flush=True)
    print(flush=True)
