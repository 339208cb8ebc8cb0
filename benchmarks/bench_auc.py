"""ROC AUC: :func:`dpstack.metrics.roc_auc_score` (rank sum) against :func:`sklearn.metrics.roc_auc_score`.

The experiment grids compute one AUC per cell and combiner on test sets of a
few hundred to a few thousand rows, where scikit-learn's time goes mostly to
input checks and building the ROC curve. Scores are rounded to 2 decimals so
that there are ties. Both values are printed: they must be equal.
"""

import numpy as np
from sklearn.metrics import roc_auc_score as sklearn_auc

from benchmarks import interleaved_medians, print_table
from dpstack.metrics import roc_auc_score


def main(repeats=7, calls=200):
    rows = []
    for n in (100, 1_000, 10_000):
        rng = np.random.default_rng(n)
        y = rng.integers(0, 2, size=n)
        s = np.round(rng.normal(size=n) + 0.5 * y, 2)
        medians, values = interleaved_medians(
            {
                "sklearn": lambda y=y, s=s: [sklearn_auc(y, s) for _ in range(calls)][-1],
                "dpstack": lambda y=y, s=s: [roc_auc_score(y, s) for _ in range(calls)][-1],
            },
            repeats,
        )
        rows.append(
            {
                "n": n,
                "sklearn µs": medians["sklearn"] / calls * 1e6,
                "dpstack µs": medians["dpstack"] / calls * 1e6,
                "ratio": medians["dpstack"] / medians["sklearn"],
                "|Δ AUC|": abs(values["dpstack"] - values["sklearn"]),
            }
        )
    print_table(rows, list(rows[0]), floatfmt="{:.3g}")
    print("ratio = dpstack time / scikit-learn time per AUC (medians of interleaved runs).")


if __name__ == "__main__":
    main()
