"""Batched local training (dpstack) against the floor of its numpy formulation, the arithmetic bound, a lean loop and scikit-learn.

M = 20,000 parties of 22 samples in d = 123 dimensions (the KDD-99 setting of
Hamm et al. 2016, Section 6.2), synthetic rows on the unit sphere with labels
from a noisy linear rule. Every side fits the same model: λ = 1e-4 logistic
regression without intercept, i.e. scikit-learn's
``LogisticRegression(C=1/(22·λ), fit_intercept=False)``.

Compared, interleaved (one warm-up round, then medians of ``repeats`` rounds):

* **batched**: :func:`dpstack.multiparty.fit_local_logistic` on all M parties.
* **numpy floor** (the floor of this numpy formulation, not a physical limit): the
  two steps no numpy implementation of this Newton method can skip, timed on the
  same shapes: the batched Gram products ``X_m X_mᵀ`` of all parties plus, for
  every Newton iteration, one batched ``np.linalg.solve`` of the 22 × 22 systems
  of the parties still iterating (the counts recorded from the batched run). Timed
  two ways, as whole (M, 22, 22) arrays and in the solver's blocks of parties with
  each block's systems already in cache; the floor is the faster of the two in
  each round.
* **arithmetic bound**: the floating-point operations of the batched work (Gram
  products 2n²d and primal coefficients 2nd per party; per Newton iteration and
  party still iterating, an LU solve of the n × n system, ⅔n³ + 2n², and about
  6n² for forming the system, the products G·β and the line search's trial point)
  divided by the speed of one large matrix product on one core (a 2,000 × 2,000
  ``@``, measured in the same run). No implementation does better than this on
  this core; small 22 × 22 operations cannot reach a large product's speed, so it
  is a bound, not a target.
* **lean loop**: the same Newton method (sample space, 22 × 22 Cholesky solve,
  Armijo backtracking, same stopping rule) written for one party and called in
  a Python loop, on the first ``loop_parties`` parties.
* **scikit-learn loop**: ``LogisticRegression(solver="newton-cholesky", tol=1e-10)``
  per party (its fastest solver here), on the two-class parties among the first
  ``sklearn_parties`` (scikit-learn refuses one-class parties).

* **compiled kernel** (only when numba is installed; it is not a dependency): the same
  Newton method compiled per party, :mod:`benchmarks._compiled_newton`, with the batched
  solver's Gram products and Bᵀ X around it; numba's import and compilation times are
  printed with it.

Loop times are reported per party and scaled to M for the ratios.
"""

import time
import warnings

import numpy as np
from scipy import linalg
from scipy.special import expit, log_expit
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from benchmarks import print_table
from dpstack.multiparty import fit_local_logistic, logistic, pad_parties

try:
    from benchmarks import _compiled_newton as compiled
except ImportError:  # numba is not installed: no compiled side
    compiled = None


def lean_newton(Xm, ym, lam, tol=1e-12, max_iter=100):
    """One party's λ-regularised logistic regression by Newton in its sample space (w = Xmᵀβ)."""
    n = Xm.shape[0]
    G = Xm @ Xm.T
    t01 = ym.astype(float)
    beta = np.zeros(n)
    z = np.zeros(n)
    previous = np.inf
    for _ in range(max_iter + 1):
        p = expit(z)
        c = (p - t01) / n + lam * beta
        gc = G @ c
        gnorm = np.sqrt(max(c @ gc, 0.0))
        if gnorm <= tol or (gnorm <= 100 * tol and gnorm > 0.5 * previous):
            break
        previous = gnorm
        h = p * (1 - p)
        S = np.sqrt(h)
        A = (S[:, None] * G) * S[None, :]
        A.flat[:: n + 1] += n * lam
        sol = S * linalg.cho_solve(linalg.cho_factor(A, check_finite=False), S * gc, check_finite=False)
        step = (c - sol) / lam
        value = np.sum(-log_expit(-z) - t01 * z) / n + 0.5 * lam * beta @ z
        slope, t = gc @ step, 1.0
        while True:
            cand = beta - t * step
            zc = G @ cand
            vc = np.sum(-log_expit(-zc) - t01 * zc) / n + 0.5 * lam * cand @ zc
            if vc <= value - 1e-4 * t * slope + 1e-14 * abs(value) or t < 1e-10:
                break
            t *= 0.5
        beta, z = cand, zc
    return beta @ Xm


def main(
    n_parties=20_000,
    party_size=22,
    n_features=123,
    lam=1e-4,
    seed=0,
    repeats=5,
    loop_parties=2_000,
    sklearn_parties=600,
):
    rng = np.random.default_rng(seed)
    n = n_parties * party_size
    X = rng.normal(size=(n, n_features))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] + 0.1 * rng.normal(size=n) > 0.12).astype(int)  # ~18% positive: some one-class parties
    parties = np.repeat(np.arange(n_parties), party_size)
    slices = [slice(m * party_size, (m + 1) * party_size) for m in range(n_parties)]
    two_class = [m for m in range(sklearn_parties) if y[slices[m]].min() != y[slices[m]].max()]
    C = 1.0 / (party_size * lam)

    # the batch sizes of the Newton systems, recorded from one batched run (per block of parties)
    batch_sizes, solve = [], np.linalg.solve

    def recording_solve(a, b):
        batch_sizes.append(a.shape[0])
        return solve(a, b)

    newton_block = logistic._newton_block

    def recording_block(*args):
        batch_sizes.append(None)  # a new block starts
        return newton_block(*args)

    np.linalg.solve, logistic._newton_block = recording_solve, recording_block
    try:
        W, n_iter = fit_local_logistic(X, y, parties, n_parties, 2, lam)
    finally:
        np.linalg.solve, logistic._newton_block = solve, newton_block
    whole_sizes = _whole_batch_sizes(batch_sizes)
    batch_sizes = [size for size in batch_sizes if size is not None]
    block = max(batch_sizes)  # the first solve of the first block has every party of that block
    A = rng.normal(size=(block, party_size, party_size)) / party_size
    A = A @ A.transpose(0, 2, 1) + party_size * lam * np.eye(party_size)
    rhs = rng.normal(size=(block, party_size, 1))
    whole = [((A[np.arange(size) % block]), rhs[np.arange(size) % block]) for size in whole_sizes]

    def numpy_floor_whole():
        # the work as (M, 22, 22) arrays: all Gram products at once, one solve per iteration
        Xp = pad_parties(X, parties, n_parties)[0]
        G = Xp @ Xp.transpose(0, 2, 1)
        for a, b in whole:
            np.linalg.solve(a, b)
        return G

    def numpy_floor_blocked():
        # the same work in the solver's blocks, each block's systems already in cache
        Xp = pad_parties(X, parties, n_parties)[0]
        for start in range(0, n_parties, block):
            Xp[start : start + block] @ Xp[start : start + block].transpose(0, 2, 1)
        for size in batch_sizes:
            np.linalg.solve(A[:size], rhs[:size])
        return Xp

    def lean_loop():
        return np.array([lean_newton(X[slices[m]], y[slices[m]], lam) for m in range(loop_parties)])

    def sklearn_loop():
        return np.array(
            [
                LogisticRegression(C=C, fit_intercept=False, tol=1e-10, solver="newton-cholesky", max_iter=1000)
                .fit(X[slices[m]], y[slices[m]])
                .coef_[0]
                for m in two_class
            ]
        )

    functions = {
        "batched": lambda: fit_local_logistic(X, y, parties, n_parties, 2, lam)[0],
        **({"compiled kernel (numba)": lambda: _compiled(X, y, parties, n_parties, lam)} if compiled else {}),
        "numpy floor, whole arrays": numpy_floor_whole,
        "numpy floor, blocks": numpy_floor_blocked,
        "lean loop": lean_loop,
        "scikit-learn loop": sklearn_loop,
    }
    per_party = {
        "batched": n_parties,
        "compiled kernel (numba)": n_parties,
        "numpy floor, whole arrays": n_parties,
        "numpy floor, blocks": n_parties,
        "lean loop": loop_parties,
        "scikit-learn loop": len(two_class),
    }
    compile_s = compiled.compile_seconds() if compiled else None
    times = {k: [] for k in functions}
    results = {}
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for round_ in range(repeats + 1):  # round 0 is the warm-up
            for name, fn in functions.items():
                start = time.perf_counter()
                results[name] = fn()
                if round_:
                    times[name].append(time.perf_counter() - start)
    per = {k: float(np.median(v)) / per_party[k] for k, v in times.items()}
    # the floor is the faster way of doing that work, taken round by round
    per["numpy floor"] = (
        float(np.median(np.minimum(times["numpy floor, whole arrays"], times["numpy floor, blocks"]))) / n_parties
    )
    per_party["numpy floor"] = n_parties
    # the arithmetic bound: the batched work's flops at the speed of one large matrix product on one core
    p_, d_ = party_size, n_features
    flops = n_parties * (2 * p_**2 * d_ + 2 * p_ * d_) + sum(batch_sizes) * (2 / 3 * p_**3 + 8 * p_**2)
    big = rng.normal(size=(2000, 2000))
    with threadpool_limits(limits=1):
        big @ big  # warm-up
        matmul = []
        for _ in range(5):
            start = time.perf_counter()
            big @ big
            matmul.append(time.perf_counter() - start)
    gflops = 2 * 2000**3 / float(np.median(matmul)) / 1e9
    per["arithmetic bound"] = flops / (gflops * 1e9) / n_parties
    per_party["arithmetic bound"] = n_parties
    W = results["batched"]
    diff_lean = float(np.max(np.abs(results["lean loop"] - W[:loop_parties, 0])))
    diff_sk = float(np.max(np.abs(results["scikit-learn loop"] - W[two_class, 0])))
    print(
        f"MPL local training: M = {n_parties} parties x {party_size} samples, d = {n_features}, "
        f"lambda = {lam:g}; {n_iter} batched Newton iterations; medians of {repeats} interleaved rounds"
    )
    rows = []
    for name in [*functions, "numpy floor", "arithmetic bound"]:
        rows.append(
            {
                "side": name,
                "parties timed": per_party[name],
                "µs per party": per[name] * 1e6,
                "time for all M (s)": per[name] * n_parties,
                "batched ÷ side": per["batched"] / per[name] if name != "batched" else 1.0,
            }
        )
    print_table(rows, list(rows[0]), floatfmt="{:.4g}")
    print(
        f"batched ÷ numpy floor (of this formulation) = {per['batched'] / per['numpy floor']:.2f} (target ≤ 1.15); "
        f"batched ÷ arithmetic bound = {per['batched'] / per['arithmetic bound']:.1f} "
        f"({flops / 1e9:.2f} GFLOP at {gflops:.1f} GFLOP/s, a 2000 × 2000 matrix product on one core; the batched "
        f"work runs at {flops / (per['batched'] * n_parties) / 1e9:.1f} GFLOP/s); "
        f"speed-up per party vs lean loop {per['lean loop'] / per['batched']:.1f}x, "
        f"vs scikit-learn loop {per['scikit-learn loop'] / per['batched']:.1f}x"
    )
    if compiled:
        diff_c = float(np.max(np.abs(results["compiled kernel (numba)"] - W[:, 0])))
        print(
            f"compiled kernel ÷ numpy floor = {per['compiled kernel (numba)'] / per['numpy floor']:.2f}; "
            f"max |w_compiled − w_batched| = {diff_c:.2e}; numba {compiled.numba.__version__}: import "
            f"{compiled.IMPORT_SECONDS:.1f} s and compilation {compile_s:.1f} s, paid once per process"
        )
    ok = diff_lean <= 1e-6 and diff_sk <= 1e-6
    print(
        f"max |w_batched − w_lean| = {diff_lean:.2e}; max |w_batched − w_sklearn| = {diff_sk:.2e} "
        f"({len(two_class)} two-class parties); equal to 1e-6: {'yes' if ok else 'NO'}"
    )
    return {
        "gflops": gflops,
        "flops": flops,
        "per_party": per,
        "n_iter": n_iter,
        "diff_lean": diff_lean,
        "diff_sklearn": diff_sk,
        "ok": ok,
    }


def _compiled(X, y, parties, n_parties, lam):
    Xp, rows, sizes = pad_parties(X, parties, n_parties)
    T = np.where(rows >= 0, np.asarray(y)[rows], 0).astype(float)
    return compiled.fit_local_logistic_compiled(Xp, T, sizes, lam)


def _whole_batch_sizes(block_sizes):
    """Per-iteration batch sizes of the whole-array method, from the per-block solve sizes.

    ``block_sizes`` lists each block's solve sizes in order, ``None`` where a block starts.
    """
    per_iteration, it = [], 0
    for size in block_sizes:
        if size is None:
            it = 0
            continue
        if it == len(per_iteration):
            per_iteration.append(0)
        per_iteration[it] += size
        it += 1
    return per_iteration


if __name__ == "__main__":
    main()
