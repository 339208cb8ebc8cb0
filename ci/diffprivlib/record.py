"""Record diffprivlib's outputs for the offline unit tests, and its black-box runs for the book.

    PYTHONPATH=. python ci/diffprivlib/record.py oracle      # -> tests/data/diffprivlib_oracle.json
    PYTHONPATH=. python ci/diffprivlib/record.py blackbox    # -> dpstack/companion/data/diffprivlib_blackbox.json

Run in the diffprivlib virtualenv (README.md). ``oracle`` records, for fixed inputs and seeds, the
calibration diffprivlib draws with (observed by ``oracle.fit_observed``, not recomputed), the noise vector
it drew and the coefficients it released; ``tests/test_diffprivlib_oracle.py`` checks dpstack against them
without diffprivlib. ``blackbox`` fits diffprivlib many times on the two neighbouring pairs of the book's
section "diffprivlib's logistic regression, checked" (the seeds of ``reproducer.py``) and records how often
the event fixed in advance occurred: ``--n1 30000 --n2 6000`` took about 25 min on one core.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import oracle

REPO = Path(__file__).resolve().parents[2]
TIGHT = {"tol": 1e-12, "max_iter": 10000}


def _floats(a):
    return [float(v) for v in np.ravel(a)]


def record_oracle(path):
    X, y = oracle.oracle_data(n=60, p=3, seed=7)
    out = {
        "how": (
            "Recorded by ci/diffprivlib/record.py oracle from diffprivlib's LogisticRegression (its noise observed "
            "by wrapping its Vector mechanism: the same draw applied to a zero function). Inputs: X (60 x 3, "
            "a fifth of the rows beyond norm 1), y; each case gives epsilon, C, data_norm, fit_intercept, seed, "
            "what diffprivlib drew with (noise_scale, delta, epsilon_noise), the noise vector b and the released "
            "theta (coef_, then intercept_), fitted with tol=1e-12."
        ),
        "versions": oracle.versions(),
        "X": [_floats(row) for row in X],
        "y": [int(v) for v in y],
        "cases": [],
    }
    cases = [
        # row bound 1, no intercept: where dpstack and diffprivlib must agree (both branches of Δ)
        (1.0, 1.0, 1.0, False, 101),
        (1.0, 10.0, 1.0, False, 102),
        (0.3, 1.0, 1.0, False, 103),
        (4.0, 0.1, 1.0, False, 104),
        # the two documented divergences: row bound 4 (Δ = 0 and Δ > 0), and the intercept
        (1.0, 0.64, 4.0, False, 105),
        (1.0, 5.0, 4.0, False, 106),
        (1.0, 1.0, 1.0, True, 107),
        (1.0, 5.0, 4.0, True, 108),
    ]
    for eps, C, q, fi, seed in cases:
        theta, seen = oracle.fit_observed(X * q, y, seed, epsilon=eps, C=C, data_norm=q, fit_intercept=fi, **TIGHT)
        out["cases"].append(
            {
                "epsilon": eps,
                "C": C,
                "data_norm": q,
                "fit_intercept": fi,
                "seed": seed,
                "noise_scale": seen["noise_scale"],
                "delta": seen["delta"],
                "epsilon_noise": seen["epsilon_noise"],
                "b": _floats(seen["b"]),
                "theta": _floats(theta),
            }
        )
    dpl, dps = oracle.law_samples(1.0)
    _, doubled = oracle.law_samples(2.0)
    out["law"] = {
        "how": (
            "Two-sample Kolmogorov-Smirnov p-values (first coefficient, norm of the release) between diffprivlib's "
            "and dpstack's releases over `seeds` seeds each (epsilon 1, C 1, row bound 1, 100 rows, 2 features), "
            "and between diffprivlib's and a dpstack whose noise scale is doubled"
        ),
        "seeds": oracle.LAW_SEEDS,
        "p_same": list(oracle.ks_pvalues(dpl, dps)),
        "p_doubled": list(oracle.ks_pvalues(dpl, doubled)),
    }
    Path(path).write_text(json.dumps(out, indent=1) + "\n")
    print(
        f"wrote {path}: {len(out['cases'])} cases, {out['versions']}, law {out['law']['p_same']}, {out['law']['p_doubled']}"
    )


#: the book's two black-box tests: (name, pair, settings, event, seeds of D and D' as in reproducer.py)
BLACKBOX = {
    "row_bound": {
        "D": {"X": [[10.0], [0.0]], "y": [0, 1]},
        "D_prime": {"X": [[0.0], [0.0]], "y": [0, 1]},
        "settings": {"epsilon": 1.0, "data_norm": 10.0, "C": 0.2, "fit_intercept": False},
        "event": "-0.1 < coef_ < 0.1",
        "seed0": [1_000_000, 2_000_000],
    },
    "intercept": {
        "D": {"X": [[1.0], [-1.0]], "y": [1, 0]},
        "D_prime": {"X": [[0.0], [-1.0]], "y": [1, 0]},
        "settings": {"epsilon": 1.0, "data_norm": 1.0, "C": 1.0, "fit_intercept": True},
        "event": "intercept_ < -8 and |coef_ + intercept_| < 5",
        "seed0": [3_000_000, 4_000_000],
    },
}


def _in_event(name, theta):
    if name == "row_bound":
        return -0.1 < theta[0] < 0.1
    return theta[1] < -8 and abs(theta[0] + theta[1]) < 5


def record_blackbox(path, runs):
    out = {
        "how": (
            "Recorded by ci/diffprivlib/record.py blackbox: diffprivlib's LogisticRegression fitted `runs` times on "
            "D (random_state seed0[0], seed0[0] + 1, ...) and on D' (from seed0[1]), with `settings`; `hits` counts "
            "the fits whose output is in `event`, fixed in advance from the exact output densities. `no_minimiser` "
            "counts the fits that returned |intercept_| > 1e10. The same seeds as ci/diffprivlib/reproducer.py."
        ),
        "versions": oracle.versions(),
        "tests": {},
    }
    for name, spec in BLACKBOX.items():
        n = runs[name]
        hits, far = [], []
        for which, seed0 in zip(("D", "D_prime"), spec["seed0"]):
            X, y = np.array(spec[which]["X"]), np.array(spec[which]["y"])
            thetas = np.array([oracle.fit(X, y, seed0 + i, **spec["settings"]) for i in range(n)])
            hits.append(int(sum(_in_event(name, t) for t in thetas)))
            far.append(int((np.abs(thetas[:, -1]) > 1e10).sum()) if spec["settings"]["fit_intercept"] else 0)
            print(f"{name} {which}: {hits[-1]} of {n} in the event", flush=True)
        out["tests"][name] = {**spec, "runs": n, "hits": hits, "no_minimiser": far}
    Path(path).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["oracle", "blackbox"])
    ap.add_argument("--n1", type=int, default=30000, help="fits per dataset, row-bound test")
    ap.add_argument("--n2", type=int, default=6000, help="fits per dataset, intercept test")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.what == "oracle":
        record_oracle(args.out or REPO / "tests" / "data" / "diffprivlib_oracle.json")
    else:
        out = args.out or REPO / "dpstack" / "companion" / "data" / "diffprivlib_blackbox.json"
        record_blackbox(out, {"row_bound": args.n1, "intercept": args.n2})


if __name__ == "__main__":
    main()
