"""What ``fit`` allocates beside X: label encoding, label checks and clipping stay small.

PLR's peak extra memory is measured with tracemalloc (numpy reports its array buffers to it).
Memory, unlike time, does not depend on the machine's load, so these are assertions, not
benchmarks. Each bound fails on the code before this change: the float64 label encoding, the
``np.unique(y)`` / ``np.isin`` label checks and the n-vector of squared norms in ``clip_rows``
each cost a tenth of X when it has 10 features.
"""

import tracemalloc
import warnings

import numpy as np
import pytest

from dpstack import PrivateLogisticRegression
from dpstack.base import PrivacyLeakWarning, resolve_classes, signed_labels
from dpstack.mechanisms import clip_rows, clipped_rows
from dpstack.solvers import minimize_perturbed_logistic


def _peak(call):
    """Bytes allocated at the peak of ``call()`` beyond what existed before it."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def _task(n=100_000, d=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1).max() * (1 + 1e-9)  # inside the unit ball: nothing to clip
    y = np.where(X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0, 1, 0)
    return X, y


@pytest.mark.parametrize("classes", [[0, 1], None])
def test_plr_fit_with_ten_features_allocates_under_a_tenth_of_x(classes):
    X, y = _task()
    est = PrivateLogisticRegression(epsilon=1.0, lam=1e-2, classes=classes, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        est.fit(X, y)  # first call: imports and caches out of the measurement
        peak = _peak(lambda: est.fit(X, y))
    assert peak <= 0.10 * X.nbytes, f"fit allocated {peak / X.nbytes:.1%} of X"


def test_clip_rows_keeps_no_n_vector_when_no_row_is_clipped():
    X, _ = _task(n=200_000, d=4)
    peak = _peak(lambda: clip_rows(X, 1.0))
    assert clip_rows(X, 1.0) is X
    assert peak < 0.25 * 8 * X.shape[0], f"clip_rows allocated {peak} bytes for {X.shape[0]} rows"


def test_clip_rows_scans_blocks_like_one_pass():
    """Rows beyond the bound in the first, a middle and the last block of the scan get the same bits."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20_000, 3)) * 0.1
    X[[0, 9_000, 19_999]] *= 40
    Z = clip_rows(X, 1.0)
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    expected = X * np.where(norms > 1.0, 1.0 / np.where(norms > 1.0, norms, 1.0), 1.0)[:, None]
    np.testing.assert_array_equal(Z, expected)
    assert np.count_nonzero(np.any(Z != X, axis=1)) == 3


def test_signed_labels_are_int8_and_fit_bit_for_bit_like_float_labels():
    X, y = _task(n=3_000, d=5)
    s = signed_labels(y, 1)
    assert s.dtype == np.int8 and set(np.unique(s)) == {-1, 1}
    np.testing.assert_array_equal(s, np.where(y == 1, 1.0, -1.0))
    b = np.random.default_rng(2).standard_normal(5)
    for method in ("newton", "auto"):
        w8, _ = minimize_perturbed_logistic(X, s, 1e-3, b=b, method=method)
        w64, _ = minimize_perturbed_logistic(X, s.astype(float), 1e-3, b=b, method=method)
        np.testing.assert_array_equal(w8, w64)


def test_label_checks_keep_their_answers():
    y = np.array([3, 1, 3, 1])
    with pytest.warns(PrivacyLeakWarning):
        classes, from_data = resolve_classes(None, y)
    assert from_data and classes.tolist() == [1, 3]
    with pytest.warns(PrivacyLeakWarning):
        assert resolve_classes(None, np.array(["b", "a", "b"]))[0].tolist() == ["a", "b"]
    with pytest.warns(PrivacyLeakWarning), pytest.raises(ValueError, match=r"got 3: array\(\[0, 1, 2\]\)"):
        resolve_classes(None, np.array([2, 0, 1, 0]))
    with pytest.raises(ValueError, match=r"not in classes=.*array\(\[2, 7\]\)"):
        resolve_classes([0, 1], np.array([0, 7, 1, 2, 7]))
    with pytest.raises(ValueError, match="not in classes"):
        resolve_classes([0, 1], np.array(["a", "b"]))
    assert resolve_classes([0, 1], np.array([1, 1]))[0].tolist() == [0, 1]  # one class present keeps the set


def _clipped_task(n, d, seed=0, share=0.05):
    """Like ``_task`` with a share of the rows (spread over X) scaled beyond the bound 1."""
    X, y = _task(n=n, d=d, seed=seed)
    rng = np.random.default_rng(seed + 100)
    X[rng.random(n) < share] *= 3.0
    return X, y


def test_plr_fit_with_clipped_rows_allocates_under_a_tenth_of_x():
    """5 % of rows beyond the bound: clipped inside the solver's passes, no copy of X (was 101 % of X)."""
    X, y = _clipped_task(n=400_000, d=10)
    assert clipped_rows(X, 1.0) is not None
    est = PrivateLogisticRegression(epsilon=1.0, lam=1e-2, classes=[0, 1], random_state=0)
    est.fit(X, y)
    peak = _peak(lambda: est.fit(X, y))
    assert peak <= 0.10 * X.nbytes, f"fit allocated {peak / X.nbytes:.1%} of X"


@pytest.mark.parametrize(
    ("n", "d", "order"), [(30_000, 20, "C"), (20_000, 60, "F"), (400, 40, "C"), (1_000, 1_600, "C")]
)
def test_clipping_inside_the_solver_is_bit_for_bit_the_fit_on_the_clipped_copy(n, d, order):
    """The L-BFGS + Hessian, L-BFGS + CG, Newton-first and CG-only paths, C and Fortran order."""
    X, y = _clipped_task(n=n, d=d, seed=3)
    X = np.asarray(X, order=order)
    s = signed_labels(y, 1)
    rows, factors = clipped_rows(X, 1.0)
    assert 0 < rows.size < n
    b = np.random.default_rng(4).standard_normal(d) * 20
    Z = clip_rows(X, 1.0)
    np.testing.assert_array_equal(Z[rows], X[rows] * factors[:, None])
    w_copy, it_copy = minimize_perturbed_logistic(Z, s, 1e-3, b=b)
    w_scaled, it_scaled = minimize_perturbed_logistic(X, s, 1e-3, b=b, row_scale=(rows, factors))
    np.testing.assert_array_equal(w_scaled, w_copy)
    assert it_scaled == it_copy
    # and through the estimator: PLR on X is the solver on the clipped copy, noise and Δ included
    est = PrivateLogisticRegression(epsilon=1.0, lam=1e-3, classes=[0, 1], random_state=5, diagnostics=True)
    est.fit(X, y)
    w_ref, _ = minimize_perturbed_logistic(Z, s, 1e-3, b=est.diagnostics_.noise, delta=est.delta_)
    np.testing.assert_array_equal(est.w_, w_ref)


def test_row_scale_is_checked():
    X, y = _task(n=100, d=3)
    with pytest.raises(ValueError, match="row_scale"):
        minimize_perturbed_logistic(X, y, 1e-2, row_scale=(np.array([3, 1]), np.array([0.5, 0.5])))
    with pytest.raises(ValueError, match="row_scale"):
        minimize_perturbed_logistic(X, y, 1e-2, row_scale=(np.array([1]), np.array([0.5, 0.5])))
