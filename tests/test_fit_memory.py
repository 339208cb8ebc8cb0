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

from dpstack import PrivateLogisticRegression, solvers
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
def test_clipping_inside_the_solver_reaches_the_minimiser_on_the_clipped_copy(n, d, order):
    """The L-BFGS + Hessian, L-BFGS + CG, Newton-first and CG-only paths, C and Fortran order.

    The factors multiply margins, residuals and curvature weights instead of the rows, so the
    products round differently from those on the clipped copy: the returned point must meet
    the tolerance on the clipped copy's objective and lie within rounding of its minimiser.
    """
    X, y = _clipped_task(n=n, d=d, seed=3)
    X = np.asarray(X, order=order)
    s = signed_labels(y, 1)
    rows, factors = clipped_rows(X, 1.0)
    assert 0 < rows.size < n
    b = np.random.default_rng(4).standard_normal(d) * 20
    Z = clip_rows(X, 1.0)
    np.testing.assert_array_equal(Z[rows], X[rows] * factors[:, None])
    tol = 1e-10
    w_copy, _ = minimize_perturbed_logistic(Z, s, 1e-3, b=b, tol=tol)
    w_scaled, _ = minimize_perturbed_logistic(X, s, 1e-3, b=b, tol=tol, row_scale=(rows, factors))
    on_copy = solvers._Problem(Z, s, 1e-3, b, 0.0, None)
    assert on_copy.converged(w_scaled, on_copy.value_grad(w_scaled)[1], tol)
    # both within √d·tol·scale/λ of the minimiser (strong convexity)
    np.testing.assert_allclose(w_scaled, w_copy, rtol=0, atol=2 * np.sqrt(d) * tol * on_copy.scale(w_copy) / 1e-3)
    # and through the estimator: PLR on X solves the problem on the clipped copy, noise and Δ included
    est = PrivateLogisticRegression(epsilon=1.0, lam=1e-3, classes=[0, 1], random_state=5, diagnostics=True)
    est.fit(X, y)
    on_copy = solvers._Problem(Z, s, 1e-3, est.diagnostics_.noise, est.delta_, None)
    assert on_copy.converged(est.w_, on_copy.value_grad(est.w_)[1], est.tol)


@pytest.mark.parametrize(("order", "intercept"), [("C", None), ("F", None), ("C", 0.5), ("F", 0.25)])
def test_every_pass_with_row_scale_is_the_pass_on_the_clipped_copy(monkeypatch, order, intercept):
    """Value, gradient, curvature weights, diagonal, Hessian and Hessian-vector product, to rounding.

    With ``intercept`` s, against the copy with the constant column s appended (what PLR's
    ``fit_intercept=True`` solved on before).

    Small blocks (several per pass, clipped rows in some blocks and not others, a short last
    block) so that the partition of the clipped rows into blocks is exercised.
    """
    monkeypatch.setattr(solvers, "_BLOCK_BYTES", 37 * 8 * 6)
    monkeypatch.setattr(solvers, "_MIN_BLOCK_ROWS", 1)
    monkeypatch.setattr(solvers, "_ONE_PASS_BYTES", 0)
    X, y = _clipped_task(n=1_000, d=6, seed=7, share=0.1)
    X = np.asarray(X, order=order)
    s = signed_labels(y, 1)
    rows, factors = clipped_rows(X, 1.0)
    Z = clip_rows(X, 1.0)
    d = 6 if intercept is None else 7
    if intercept is not None:
        Z = np.asarray(np.hstack([Z, np.full((Z.shape[0], 1), intercept)]), order=order)
    b = np.random.default_rng(8).standard_normal(d)
    w0 = np.random.default_rng(10).standard_normal(d)
    scaled = solvers._Problem(X, s, 1e-2, b, 0.1, w0, (rows, factors), intercept)
    copy = solvers._Problem(Z, s, 1e-2, b, 0.1, w0)
    assert scaled.block == 37 and scaled.small_block == 32 and scaled.d == d  # two partitions of the rows
    w = np.random.default_rng(9).standard_normal(d) * 3
    v_s, g_s = scaled.value_grad(w)
    v_c, g_c = copy.value_grad(w)
    assert v_s == pytest.approx(v_c, rel=1e-13)
    np.testing.assert_allclose(g_s, g_c, rtol=1e-12, atol=1e-15)
    (wt_s, diag_s), (wt_c, diag_c) = scaled.curvature(w), copy.curvature(w)
    np.testing.assert_allclose(wt_s, wt_c, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(diag_s, diag_c, rtol=1e-12)
    np.testing.assert_allclose(scaled.hessian_lower(w), copy.hessian_lower(w), rtol=1e-12, atol=1e-15)
    p = np.linspace(-1.0, 2.0, d)
    np.testing.assert_allclose(scaled.hess_vec(wt_s, p), copy.hess_vec(wt_c, p), rtol=1e-12, atol=1e-15)
    # the whole fit: the same minimiser (Newton-first at this size, and L-BFGS + Newton)
    for method in ("newton", "lbfgs", "auto"):
        w_scaled, _ = minimize_perturbed_logistic(
            X, s, 1e-2, b=b, delta=0.1, w0=w0, method=method, row_scale=(rows, factors), intercept=intercept
        )
        assert copy.converged(w_scaled, copy.value_grad(w_scaled)[1], 1e-10)


def test_row_scale_is_checked():
    X, y = _task(n=100, d=3)
    with pytest.raises(ValueError, match="row_scale"):
        minimize_perturbed_logistic(X, y, 1e-2, row_scale=(np.array([3, 1]), np.array([0.5, 0.5])))
    with pytest.raises(ValueError, match="row_scale"):
        minimize_perturbed_logistic(X, y, 1e-2, row_scale=(np.array([1]), np.array([0.5, 0.5])))


def test_plr_with_an_intercept_and_clipped_rows_allocates_under_a_tenth_of_x():
    """fit_intercept=True: the constant column is not appended to a copy of X (was 110 % of X)."""
    X, y = _clipped_task(n=400_000, d=10)
    est = PrivateLogisticRegression(epsilon=1.0, lam=1e-2, classes=[0, 1], random_state=0, fit_intercept=True)
    est.fit(X, y)
    peak = _peak(lambda: est.fit(X, y))
    assert peak <= 0.10 * X.nbytes, f"fit allocated {peak / X.nbytes:.1%} of X"


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_decision_function_scales_margins_instead_of_copying_x(fit_intercept):
    X, y = _clipped_task(n=200_000, d=20)
    est = PrivateLogisticRegression(
        epsilon=1.0, lam=1e-2, classes=[0, 1], random_state=0, fit_intercept=fit_intercept
    ).fit(X, y)
    margins = est.decision_function(X)
    np.testing.assert_allclose(margins, est._design_matrix(X) @ est.w_, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(est.predict(X), est.classes_[(margins > 0).astype(int)])
    peak = _peak(lambda: est.decision_function(X))
    # the n-vector of margins (5 % of X at 20 features) and the clipped rows' indices and factors
    assert peak <= margins.nbytes + 0.05 * X.nbytes, f"decision_function allocated {peak / X.nbytes:.1%} of X"


@pytest.mark.parametrize("order", ["C", "F"])
def test_plr_with_an_intercept_solves_on_the_clipped_copy_with_the_constant_column(order):
    X, y = _clipped_task(n=20_000, d=30, seed=11)
    X = np.asarray(X, order=order)
    est = PrivateLogisticRegression(
        epsilon=1.0, lam=1e-3, classes=[0, 1], random_state=2, fit_intercept=True, diagnostics=True
    ).fit(X, y)
    Z = est._design_matrix(X)  # clip to √(1 − s²), then the constant column s = 1/2
    assert Z.shape[1] == 31 and np.all(Z[:, -1] == 0.5)
    on_copy = solvers._Problem(Z, signed_labels(y, 1), 1e-3, est.diagnostics_.noise, est.delta_, None)
    assert on_copy.converged(est.w_, on_copy.value_grad(est.w_)[1], est.tol)
    assert est.intercept_[0] == pytest.approx(est.w_[-1] * 0.5, rel=1e-15)


@pytest.mark.parametrize(
    ("n", "d", "fit_intercept", "share"),
    [(100_000, 10, False, 0.05), (100_000, 10, True, 0.1), (20_000, 50, False, 0.05)],
)
def test_plr_on_a_small_x_with_clipped_rows_allocates_under_a_tenth_of_x(n, d, fit_intercept, share):
    """X of 7.6 MiB, 5 % of rows clipped: no block buffer, short loss-pass blocks, one Hessian buffer.

    λ = 1e-3 makes the fit end with a Newton polish (a Hessian at 10 features, conjugate
    gradients at 50), the passes with a block-sized temporary. With an intercept the bound
    √(1 − s²) clips more rows (here 10 % of them): no copy of their indices per block size and
    no second vector of signs (11.3 % of X before).
    """
    X, y = _clipped_task(n=n, d=d, seed=12, share=share)
    assert X.nbytes < 32 * 2**20 and clipped_rows(X, 1.0) is not None
    est = PrivateLogisticRegression(epsilon=1.0, lam=1e-3, classes=[0, 1], random_state=0, fit_intercept=fit_intercept)
    est.fit(X, y)
    peak = _peak(lambda: est.fit(X, y))
    assert peak <= 0.10 * X.nbytes, f"fit allocated {peak / X.nbytes:.1%} of X"
