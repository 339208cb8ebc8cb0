"""Write the small fixture of the "Use it on your data" page and its test: ``own_data/{target,source}.csv``.

A synthetic two-organisation task, offline and seeded: 12 numeric features, a 0/1 label
``diabetes``; 400 target rows and 800 source rows whose true weights differ from the target's in
a few features (so transfer has something to gain and something to lose). Run from anywhere::

    python tests/data/make_own_data.py

The features' public importances (decreasing with the index, as a domain expert might rank
them) and the public row-norm bound (6) are the notebook's defaults, not properties read from
these rows.
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent / "own_data"
N_FEATURES = 12


def make(n, weights, rng):
    X = rng.normal(size=(n, N_FEATURES)) * np.linspace(1.5, 0.5, N_FEATURES)
    logits = X @ weights - 0.2
    y = (rng.random(n) < 1 / (1 + np.exp(-logits))).astype(int)
    return X, y


def write(path, X, y):
    header = ",".join([f"f{i}" for i in range(X.shape[1])] + ["diabetes"])
    lines = [header] + [",".join([f"{v:.4f}" for v in row] + [str(label)]) for row, label in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")


def main():
    rng = np.random.default_rng(20261125)
    w_target = np.array([1.2, -1.0, 0.9, 0.8, -0.6, 0.5, 0.4, -0.3, 0.2, 0.1, 0.0, 0.0])
    w_source = w_target + np.array([0.0, 0.3, -0.2, 0.0, 0.2, 0.0, -0.3, 0.0, 0.1, 0.0, 0.2, -0.1])
    HERE.mkdir(exist_ok=True)
    write(HERE / "target.csv", *make(400, w_target, rng))
    write(HERE / "source.csv", *make(800, w_source, rng))


if __name__ == "__main__":
    main()
