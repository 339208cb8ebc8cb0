"""Benchmark data: realistic (the default), the old well-conditioned synthetic model, MNIST 0 vs 8 raw pixels.

*Realistic* (:func:`realistic`) is built to be as hard for a solver as real tabular
data, not easier:

* **correlated features of uneven scale**: x = diag(s) L z with z standard normal,
  L the Cholesky factor of an AR(1) correlation (ρ = 0.9 between neighbouring
  features) and feature scales s log-uniform over two decades (0.1 to 10);
* **varied row norms**: every row multiplied by a log-normal factor (σ = 0.5);
* **5 % of rows beyond the norm bound**: the rows are then scaled by one constant
  so that the 95th percentile of the row norms is the bound 1 (a benchmark, not a
  private release: the constant is taken from the data); PLR clips those rows;
* **noisy labels**: y from a logistic model on the clipped rows, then 10 % of
  labels flipped at random.

The loss curvature is then far from λI (condition number of the covariance ≈ 1e5),
which is what makes L-BFGS take tens of evaluations instead of three to five.

*Well-conditioned* (:func:`well_conditioned`): i.i.d. Gaussian rows scaled into
the unit ball, labels from a logistic model, as the benchmarks used before: the
loss curvature is close to λI and every solver converges in a few evaluations.

*MNIST 0 vs 8* (:func:`mnist08`): the raw pixels (784 features in [0, 1]) of the
training images of digits 0 and 8 (11,774 rows), rows scaled by one constant so
that 5 % lie beyond the bound, as for the realistic data; ``None`` when the files
are not in the data home (``DPSTACK_DATA``).
"""

import numpy as np

__all__ = ["PROBLEMS", "mnist08", "problem", "realistic", "well_conditioned"]

#: Share of rows beyond the norm bound 1 in the realistic data and MNIST.
OUTSIDE = 0.05


def realistic(n=100_000, d=100, seed=0, chunk=100_000, out=None):
    """Correlated features of uneven scale, varied row norms, 5 % of rows beyond norm 1, 10 % flipped labels.

    ``out``: an (n, d) float64 array to write X into (e.g. a memory-mapped ``.npy``; the
    same bits as without it), so that no (n, d) array besides it is made.

    Returns
    -------
    X : ndarray of shape (n, d), float64, C order
    y : ndarray of shape (n,), int8 in {−1, +1}
    """
    rng = np.random.default_rng(seed)
    scales = np.exp(rng.uniform(np.log(0.1), np.log(10.0), d))
    rho = 0.9
    corr = rho ** np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
    L = np.linalg.cholesky(corr) * scales[:, None]  # rows of X: z Lᵀ, covariance diag(s) C diag(s)
    w_true = rng.standard_normal(d) / scales  # each feature matters in proportion to its own scale
    X = np.empty((n, d)) if out is None else out
    for start in range(0, n, chunk):  # in chunks: no (n, d) temporary besides X
        stop = min(start + chunk, n)
        block = rng.standard_normal((stop - start, d)) @ L.T
        block *= rng.lognormal(0.0, 0.5, stop - start)[:, None]
        X[start:stop] = block
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    X /= np.quantile(norms, 1.0 - OUTSIDE)
    # labels from a model on the clipped rows (what PLR sees), margins of order 3
    clipped = np.minimum(1.0, 1.0 / (norms / np.quantile(norms, 1.0 - OUTSIDE)))
    margin = (X @ w_true) * clipped
    margin *= 3.0 / np.std(margin)
    y = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-margin)), 1, -1).astype(np.int8)
    flip = rng.random(n) < 0.10
    y[flip] = -y[flip]
    return X, y


def well_conditioned(n=200_000, d=100, seed=1):
    """Gaussian rows scaled into the unit ball, labels from a logistic model (Bayes accuracy ≈ 0.8)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    # strictly inside the unit ball: a row normalised to norm 1 can measure 1 + 1 ulp
    X /= np.linalg.norm(X, axis=1).max() * (1 + 1e-9)
    w_true = rng.standard_normal(d) * 30 / np.sqrt(d)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ w_true)), 1, -1)
    return X, y


def mnist08():
    """MNIST training digits 0 (y = −1) vs 8 (y = +1), raw pixels, 5 % of rows beyond norm 1; None if absent."""
    from dpstack.datasets import load_mnist

    try:
        bunch = load_mnist(digits=(0, 8), subset="train")
    except (OSError, ValueError):
        return None
    X = np.ascontiguousarray(bunch.data, dtype=float)
    X /= np.quantile(np.sqrt(np.einsum("ij,ij->i", X, X)), 1.0 - OUTSIDE)
    return X, np.where(bunch.target == 8, 1, -1).astype(np.int8)


#: Named problems of the benchmark tables: realistic first (the default), then the old data.
PROBLEMS = ("realistic", "well-conditioned")


def problem(kind, n, d, seed=0):
    """``realistic(n, d, seed)`` or ``well_conditioned(n, d, seed + 1)`` by name."""
    if kind == "realistic":
        return realistic(n, d, seed)
    if kind == "well-conditioned":
        return well_conditioned(n, d, seed + 1)
    raise ValueError(f"kind must be one of {PROBLEMS}, got {kind!r}")
