"""PLR ``fit`` on a memory-mapped n = 10,000,000 × d = 100 float64 ``.npy`` (7.5 GiB), or another size, against scikit-learn.

Opt-in (it writes 7.5 GiB): ``DPSTACK_BENCH_SCALE_DIR=/some/dir python -m benchmarks plr_scale``
(the files are created there once and reused; realistic data by default, PLR reading the raw
X and clipping inside its fit, scikit-learn the pre-clipped copy (a second file of the same size);
``DPSTACK_BENCH_SCALE_DATA=well-conditioned`` for the old data, one file; ``DPSTACK_BENCH_SCALE_ROWS`` changes n and
``DPSTACK_BENCH_SCALE_FEATURES`` d, e.g. 1e8 × 10, also 7.5 GiB). Each fit runs
in a fresh subprocess that opens the file with ``np.load(mmap_mode="r")``, so the page cache is
shared but nothing else; the subprocess reports the fit's wall time, the peak of memory allocated
during it (tracemalloc: numpy's buffers, as a fraction of X), scikit-learn's iterations or PLR's passes over
X. After one untimed pass over the files that loads them into the page cache, ``DPSTACK_BENCH_SCALE_REPEATS``
rounds (default 3) of the fits, interleaved: scikit-learn, PLR at ε = ∞ and ε = 1 at tol = 1e-10, and PLR
at scikit-learn's final ‖∇J‖∞ of that round (*equal exactness*, as in :mod:`benchmarks.bench_plr_sizes`:
scikit-learn stops on its relative-decrease test above tol); medians over the rounds. λ = 0.01.
"""

import json
import os
import subprocess
import sys

import numpy as np

from benchmarks import print_table
from benchmarks.data import realistic
from dpstack.mechanisms import clip_rows
from dpstack.solvers import logistic_objective

LAM, TOL = 1e-2, 1e-10

CHILD = r"""
import json, sys, time, tracemalloc, warnings
import numpy as np
from threadpoolctl import threadpool_limits
side, path_x, path_y, lam, tol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
X = np.load(path_x, mmap_mode="r")
y = np.load(path_y)
if side == "sklearn":
    from sklearn.linear_model import LogisticRegression
    est = LogisticRegression(C=1.0 / (X.shape[0] * lam), fit_intercept=False, tol=tol, max_iter=10_000)
    fit = lambda: est.fit(X, y)
else:
    from benchmarks.bench_plr_sizes import count_passes
    from dpstack import PrivateLogisticRegression
    est = PrivateLogisticRegression(epsilon=float(side), lam=lam, tol=tol, random_state=0)
    fit = lambda: count_passes(lambda: est.fit(X, y))
tracemalloc.start()
with threadpool_limits(1), warnings.catch_warnings():
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    try:
        passes = fit()
        error = None
    except MemoryError as exc:
        error = f"MemoryError: {exc}"
    seconds = time.perf_counter() - start
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
coef = est.coef_[0].tolist() if error is None else None
work = int(est.n_iter_[0]) if side == "sklearn" else passes
print(json.dumps(dict(seconds=seconds, peak_bytes=peak, coef=coef, error=error, work=work)))
"""


def make_data(directory, n, d=100, seed=1, chunk=200_000, kind=None):
    """Write ``X``, ``y`` and scikit-learn's input (``X`` clipped to the unit ball) as ``.npy`` files.

    ``kind`` (default ``DPSTACK_BENCH_SCALE_DATA`` or "realistic"): "realistic" is
    :func:`benchmarks.data.realistic` written into a memory map (5 % of the rows beyond the
    bound, so PLR clips inside its fit) plus its clipped copy for scikit-learn (a second
    file of the same size); "well-conditioned" the i.i.d. model of ``bench_plr`` with every
    row inside the unit ball (one file, read by both sides). Returns the paths of PLR's X,
    scikit-learn's X and y.
    """
    kind = kind or os.environ.get("DPSTACK_BENCH_SCALE_DATA", "realistic")
    if kind == "realistic":
        path_x, path_y = os.path.join(directory, f"Xr_{n}x{d}.npy"), os.path.join(directory, f"yr_{n}x{d}.npy")
        path_c = os.path.join(directory, f"Xr_clipped_{n}x{d}.npy")
        if not all(os.path.exists(p) for p in (path_x, path_y, path_c)):
            X = np.lib.format.open_memmap(path_x + ".tmp", mode="w+", dtype=np.float64, shape=(n, d))
            _, y = realistic(n, d, seed, chunk=chunk, out=X)
            C = np.lib.format.open_memmap(path_c + ".tmp", mode="w+", dtype=np.float64, shape=(n, d))
            for start in range(0, n, chunk):
                C[start : start + chunk] = clip_rows(X[start : start + chunk], 1.0)
            for M, path in ((X, path_x), (C, path_c)):
                M.flush()
                os.replace(path + ".tmp", path)
            del X, C
            np.save(path_y, y)
        return path_x, path_c, path_y
    if kind != "well-conditioned":
        raise ValueError(f"DPSTACK_BENCH_SCALE_DATA must be 'realistic' or 'well-conditioned', got {kind!r}")
    path_x, path_y = os.path.join(directory, f"X_{n}x{d}.npy"), os.path.join(directory, f"y_{n}x{d}.npy")
    if os.path.exists(path_x) and os.path.exists(path_y):
        return path_x, path_x, path_y
    rng = np.random.default_rng(seed)
    w_true = rng.standard_normal(d) * 30 / np.sqrt(d)
    X = np.lib.format.open_memmap(path_x + ".tmp", mode="w+", dtype=np.float64, shape=(n, d))
    y = np.empty(n, dtype=np.int8)
    scale = 1.0 / (1.2 * np.sqrt(d + 6 * np.sqrt(2 * d)))  # rows of norm ≲ 1 (a χ_d tail bound)
    for start in range(0, n, chunk):
        block = rng.standard_normal((min(chunk, n - start), d)) * scale
        # the rare rows beyond the tail bound are scaled back inside the unit ball here
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))
        outside = norms > 0.999
        block[outside] *= (0.999 / norms[outside])[:, None]
        X[start : start + block.shape[0]] = block
        y[start : start + block.shape[0]] = rng.random(block.shape[0]) < 1 / (1 + np.exp(-block @ w_true))
    X.flush()
    del X
    os.replace(path_x + ".tmp", path_x)
    np.save(path_y, y)
    return path_x, path_x, path_y


def run(side, path_x, path_y, tol=TOL):
    out = subprocess.run(
        [sys.executable, "-c", CHILD, side, path_x, path_y, str(LAM), repr(tol)],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def gradient_norm(coef, path_c, path_y):
    """‖∇J‖∞ of the non-private objective on the clipped file at ``coef`` (one blocked pass)."""
    Z = np.load(path_c, mmap_mode="r")
    ys = np.where(np.load(path_y) == 1, 1.0, -1.0)
    return float(np.max(np.abs(logistic_objective(np.asarray(coef), Z, ys, LAM)[1])))


def main():
    directory = os.environ.get("DPSTACK_BENCH_SCALE_DIR")
    if not directory:
        print("skipped: set DPSTACK_BENCH_SCALE_DIR to a folder with ≥ 8 GB free to run it")
        return None
    n = int(float(os.environ.get("DPSTACK_BENCH_SCALE_ROWS", "1e7")))
    d = int(float(os.environ.get("DPSTACK_BENCH_SCALE_FEATURES", "100")))
    path_x, path_c, path_y = make_data(directory, n, d)
    X = np.load(path_x, mmap_mode="r")
    for path in {path_x, path_c}:  # warm the page cache (both sides then read from memory)
        M = np.load(path, mmap_mode="r")
        for start in range(0, n, 1_000_000):
            float(M[start : start + 1_000_000].sum())
    repeats = int(os.environ.get("DPSTACK_BENCH_SCALE_REPEATS", "3"))
    sides = (
        ("sklearn", "scikit-learn lbfgs (its iterations)"),
        ("inf", "PLR ε=∞, tol 1e-10 (its passes)"),
        ("inf same", "PLR ε=∞, equal ‖∇J‖∞"),
        ("1.0", "PLR ε=1, tol 1e-10"),
        ("1.0 same", "PLR ε=1, equal ‖∇J‖∞"),
    )
    runs = {side: [] for side, _ in sides}
    for r in range(repeats):
        sk = run("sklearn", path_c, path_y)
        sk["grad"] = gradient_norm(sk["coef"], path_c, path_y)
        runs["sklearn"].append(sk)
        for side, _ in sides[1:]:
            eps, _, same = side.partition(" ")
            runs[side].append(run(eps, path_x, path_y, max(TOL, sk["grad"]) if same else TOL))
        times = ", ".join(f"{side} {runs[side][-1]['seconds']:.1f} s" for side, _ in sides)
        print(
            f"  round {r + 1}: {times}; scikit-learn's ‖∇J‖∞ {sk['grad']:.2g}; load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    reference = float(np.median([x["seconds"] for x in runs["sklearn"]]))
    rows = []
    for side, label in sides:
        seconds = [x["seconds"] for x in runs[side]]
        rows.append(
            {
                "fit": label,
                "median s": float(np.median(seconds)),
                "runs (s)": " / ".join(f"{t:.1f}" for t in seconds),
                "ratio (medians)": float(np.median(seconds)) / reference,
                "ratio per round": " / ".join(f"{t / x['seconds']:.2f}" for t, x in zip(seconds, runs["sklearn"])),
                "iterations or passes": "/".join(str(x["work"]) for x in runs[side]),
                "peak allocated": f"{max(x['peak_bytes'] for x in runs[side]) / X.nbytes:.1%} of X",
                "error": next((x["error"] for x in runs[side] if x["error"]), ""),
            }
        )
    if runs["sklearn"][0]["coef"] and runs["inf"][0]["coef"]:
        diff = np.max(np.abs(np.subtract(runs["sklearn"][0]["coef"], runs["inf"][0]["coef"])))
        print(f"max |w_PLR(ε=∞) − w_sklearn| = {diff:.2e}")
    print(
        f"n = {n}, d = {d}, X = {X.nbytes / 2**30:.2f} GiB memory-mapped ({path_x}; scikit-learn reads {path_c}); "
        f"{repeats} interleaved rounds; load {os.getloadavg()[0]:.1f}"
    )
    print_table(rows, list(rows[0]), floatfmt="{:.3g}")
    return rows


if __name__ == "__main__":
    main()
