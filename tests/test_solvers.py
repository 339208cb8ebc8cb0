"""The exact logistic solvers: stationarity to tol, agreement across methods and with scikit-learn."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpstack import solvers
from dpstack.solvers import (
    ConvergenceError,
    logistic_objective,
    minimize_perturbed_logistic,
    minimize_perturbed_logistic_path,
)

_NEWTON_FIRST = solvers._newton_first


@pytest.fixture(autouse=True)
def _lbfgs_first_at_every_size(monkeypatch):
    # These tests' problems are small; method="auto" would run Newton from the start on them.
    # They exercise the L-BFGS + polish path of larger problems (the routing has its own test).
    monkeypatch.setattr(solvers, "_newton_first", lambda n, d: False)


def make_problem(n=400, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1).max()  # rows in the unit ball, as after clipping
    w_true = rng.standard_normal(d) * 4
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ w_true)), 1.0, -1.0)
    b = rng.standard_normal(d) * 3
    w0 = rng.standard_normal(d) * 0.5
    return X, y, b, w0


def grad_inf(w, X, y, lam, b=None, delta=0.0, w0=None):
    """‖∇J(w)‖∞ divided by the solver's float64 scale (1 + ‖b‖∞/n + (λ+Δ)‖w‖∞ + λ‖w0‖∞)."""
    grad = logistic_objective(w, X, y, lam, b, delta, w0)[1]
    scale = 1 + (lam + delta) * np.max(np.abs(w))
    scale += 0 if b is None else np.max(np.abs(b)) / X.shape[0]
    scale += 0 if w0 is None else lam * np.max(np.abs(w0))
    return np.max(np.abs(grad)) / scale


def test_gradient_matches_finite_differences():
    X, y, b, w0 = make_problem(n=50, d=4)
    w = np.array([0.3, -1.0, 2.0, 0.1])
    value, grad = logistic_objective(w, X, y, 0.1, b, 0.05, w0)
    h = 1e-6
    numeric = [
        (
            logistic_objective(w + h * e, X, y, 0.1, b, 0.05, w0)[0]
            - logistic_objective(w - h * e, X, y, 0.1, b, 0.05, w0)[0]
        )
        / (2 * h)
        for e in np.eye(4)
    ]
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)
    direct = np.mean(np.log1p(np.exp(-y * (X @ w)))) + b @ w / 50 + 0.025 * w @ w + 0.05 * (w - w0) @ (w - w0)
    assert value == pytest.approx(direct, rel=1e-12)


def test_hessian_is_the_derivative_of_the_gradient():
    X, y, b, w0 = make_problem(n=60, d=5)
    problem = solvers._Problem(X, y, 0.2, b, 0.1, w0)
    w = np.linspace(-1, 1, 5)
    H = np.tril(problem.hessian_lower(w))
    H = H + np.tril(H, -1).T
    h = 1e-6
    numeric = np.column_stack(
        [(problem.value_grad(w + h * e)[1] - problem.value_grad(w - h * e)[1]) / (2 * h) for e in np.eye(5)]
    )
    np.testing.assert_allclose(H, numeric, rtol=1e-6, atol=1e-9)
    fortran = solvers._Problem(np.asfortranarray(X), y, 0.2, b, 0.1, w0)
    np.testing.assert_allclose(np.tril(fortran.hessian_lower(w)), np.tril(problem.hessian_lower(w)), rtol=1e-12)


@pytest.mark.parametrize("method", ["auto", "newton", "lbfgs"])
def test_every_method_reaches_tol_and_they_agree(method):
    X, y, b, w0 = make_problem()
    lam, delta = 0.01, 0.003
    # L-BFGS alone stalls near ‖∇J‖ ≈ 1e-9, where J stops changing in float64.
    tol = 1e-8 if method == "lbfgs" else 1e-10
    w, n_iter = minimize_perturbed_logistic(X, y, lam, b=b, delta=delta, w0=w0, tol=tol, method=method)
    assert grad_inf(w, X, y, lam, b, delta, w0) <= tol
    assert n_iter > 0
    reference, _ = minimize_perturbed_logistic(X, y, lam, b=b, delta=delta, w0=w0, tol=1e-12, method="newton")
    # Strong convexity: ‖w − w*‖₂ ≤ ‖∇J(w)‖₂ / (λ + Δ) ≤ √d · tol / (λ + Δ).
    assert np.linalg.norm(w - reference) <= 2 * np.sqrt(8) * tol / (lam + delta)


def test_noise_free_solution_equals_scikit_learn():
    X, y, _, _ = make_problem(n=500, d=6, seed=3)
    lam = 0.02
    w, _ = minimize_perturbed_logistic(X, y, lam, tol=1e-12)
    sk = LogisticRegression(C=1 / (X.shape[0] * lam), fit_intercept=False, tol=1e-12, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(w, sk.coef_[0], atol=1e-7)


def test_memory_layout_and_row_blocks_do_not_change_the_solution(monkeypatch):
    X, y, b, w0 = make_problem(n=300, d=7, seed=4)
    w_c, _ = minimize_perturbed_logistic(X, y, 0.05, b=b, w0=w0, tol=1e-12)
    w_f, _ = minimize_perturbed_logistic(np.asfortranarray(X), y, 0.05, b=b, w0=w0, tol=1e-12)
    # Blocks of 7 rows (300 = 42·7 + 6: a short last block): every pass sums over blocks.
    monkeypatch.setattr(solvers, "_BLOCK_BYTES", 7 * 8 * 7)
    monkeypatch.setattr(solvers, "_MIN_BLOCK_ROWS", 1)
    w_e, _ = minimize_perturbed_logistic(X, y, 0.05, b=b, w0=w0, tol=1e-12)
    w_ef, _ = minimize_perturbed_logistic(np.asfortranarray(X), y, 0.05, b=b, w0=w0, tol=1e-12)
    np.testing.assert_allclose(w_f, w_c, atol=1e-9)
    np.testing.assert_allclose(w_e, w_c, atol=1e-9)
    np.testing.assert_allclose(w_ef, w_c, atol=1e-9)
    blocked = solvers._Problem(X, y, 0.05, b, 0.01, w0)
    assert blocked.block == 7
    # against the whole-array formulas
    m = y * (X @ w_c)
    value = np.mean(np.logaddexp(0, -m)) + b @ w_c / 300 + 0.005 * w_c @ w_c + 0.025 * (w_c - w0) @ (w_c - w0)
    grad = -(y / (1 + np.exp(m))) @ X / 300 + b / 300 + 0.01 * w_c + 0.05 * (w_c - w0)
    assert blocked.value_grad(w_c)[0] == pytest.approx(value, rel=1e-13)
    np.testing.assert_allclose(blocked.value_grad(w_c)[1], grad, rtol=1e-10, atol=1e-14)
    curvature = np.exp(-np.logaddexp(0, m) - np.logaddexp(0, -m)) / 300
    H_whole = X.T @ (curvature[:, None] * X) + 0.06 * np.eye(7)
    H = np.tril(blocked.hessian_lower(w_c))
    np.testing.assert_allclose(H + np.tril(H, -1).T, H_whole, rtol=1e-12, atol=1e-15)
    p = np.linspace(-1.0, 2.0, 7)
    weights, diag = blocked.curvature(w_c)
    np.testing.assert_allclose(weights, curvature, rtol=1e-12)
    np.testing.assert_allclose(diag, np.diag(H_whole), rtol=1e-12)
    np.testing.assert_allclose(blocked.hess_vec(weights, p), H_whole @ p, rtol=1e-12)


def test_conjugate_gradient_newton_for_many_features(monkeypatch):
    X, y, b, w0 = make_problem(n=200, d=12, seed=5)
    monkeypatch.setattr(solvers, "NEWTON_MAX_FEATURES", 5)
    for method in ("newton", "auto"):
        w, _ = minimize_perturbed_logistic(X, y, 0.001, b=b, delta=0.001, w0=w0, tol=1e-11, method=method)
        assert grad_inf(w, X, y, 0.001, b, 0.001, w0) <= 1e-11


def test_ill_conditioned_problem_is_polished_to_tol():
    # Tiny λ and nearly separable data: L-BFGS stops on float64 resolution of J first.
    X, y, b, _ = make_problem(n=100, d=10, seed=6)
    y = np.sign(X @ np.arange(1.0, 11.0))
    w, _ = minimize_perturbed_logistic(X, y, 1e-6, b=b * 1e-3, tol=1e-10)
    assert grad_inf(w, X, y, 1e-6, b * 1e-3) <= 1e-10


def test_warm_start_at_the_solution_needs_no_iteration():
    X, y, b, w0 = make_problem(seed=7)
    w, n_cold = minimize_perturbed_logistic(X, y, 0.01, b=b, w0=w0, tol=1e-10)
    w_again, n_warm = minimize_perturbed_logistic(X, y, 0.01, b=b, w0=w0, tol=1e-10, w_init=w)
    assert n_warm == 0 and n_cold > 0
    np.testing.assert_array_equal(w_again, w)


def test_lambda_path_equals_separate_solves():
    X, y, b, _ = make_problem(seed=8)
    lams = [1.0, 0.1, 0.01, 0.001]
    deltas = [0.0, 0.0, 0.002, 0.004]
    W, n_iter = minimize_perturbed_logistic_path(X, y, lams, b=b, delta=deltas, tol=1e-11)
    assert W.shape == (4, 8) and n_iter.shape == (4,)
    for lam, dlt, w in zip(lams, deltas, W):
        assert grad_inf(w, X, y, lam, b, dlt) <= 1e-11
        alone, _ = minimize_perturbed_logistic(X, y, lam, b=b, delta=dlt, tol=1e-11)
        assert np.linalg.norm(w - alone) <= 2 * np.sqrt(8) * 1e-11 / (lam + dlt)


def test_failure_to_converge_raises():
    X, y, b, _ = make_problem(seed=9)
    with pytest.raises(ConvergenceError, match="exact minimiser"):
        minimize_perturbed_logistic(X, y, 1e-4, b=b, tol=1e-14, max_iter=1, method="newton")
    with pytest.raises(ConvergenceError, match="exact minimiser"):
        minimize_perturbed_logistic(X, y, 1e-4, b=b, tol=1e-14, max_iter=0, method="lbfgs")
    with pytest.raises(ValueError, match="method"):
        minimize_perturbed_logistic(X, y, 0.1, method="sgd")


@pytest.mark.parametrize("seed", range(4))
def test_lbfgs_stops_at_the_first_point_that_meets_tol(seed):
    # Near w* J changes only by rounding; L-BFGS-B's line search would keep evaluating
    # points that are already exact enough (each a pass over X).
    X, y, b, w0 = make_problem(n=2000, d=30, seed=seed)
    problem = solvers._Problem(X, y, 0.01, b, 0.0, w0)
    met = []
    evaluate = problem.value_grad

    def recording(w):
        value, grad = evaluate(w)
        met.append(bool(problem.converged(w, grad, 1e-10)))
        return value, grad

    problem.value_grad = recording
    w, value, grad, _, _ = solvers._lbfgs(problem, np.zeros(30), 1e-10, 200)
    assert met[-1] and not any(met[:-1])
    assert grad_inf(w, X, y, 0.01, b, 0.0, w0) <= 1e-10


def test_auto_runs_newton_from_the_start_on_small_problems_only(monkeypatch):
    monkeypatch.setattr(solvers, "_newton_first", _NEWTON_FIRST)
    calls = []
    lbfgs = solvers._lbfgs

    def recording(problem, *args):
        calls.append((problem.n, problem.d))
        return lbfgs(problem, *args)

    monkeypatch.setattr(solvers, "_lbfgs", recording)
    X, y, b, w0 = make_problem(n=30, d=5, seed=8)  # an audit-sized fit
    w, _ = minimize_perturbed_logistic(X, y, 0.05, b=b, w0=w0, tol=1e-10)
    assert calls == []
    np.testing.assert_array_equal(w, minimize_perturbed_logistic(X, y, 0.05, b=b, w0=w0, tol=1e-10, method="newton")[0])
    assert grad_inf(w, X, y, 0.05, b, 0.0, w0) <= 1e-10
    # few features: the Hessian is cheap at any n (n·d² ≤ NEWTON_FIRST_MAX_HESSIAN), Newton first
    n = solvers.NEWTON_FIRST_MAX_HESSIAN // 25
    assert n * 5 > solvers.NEWTON_FIRST_MAX_SIZE
    X, y, b, w0 = make_problem(n=n, d=5, seed=9)
    w, _ = minimize_perturbed_logistic(X, y, 0.05, b=b, w0=w0, tol=1e-10)
    assert calls == []
    # above both sizes: L-BFGS first
    d = 12
    n = max(solvers.NEWTON_FIRST_MAX_SIZE // d, solvers.NEWTON_FIRST_MAX_HESSIAN // d**2) + 1
    X, y, b, w0 = make_problem(n=n, d=d, seed=9)
    w, _ = minimize_perturbed_logistic(X, y, 0.05, b=b, w0=w0, tol=1e-10)
    assert calls == [(n, d)]
    assert grad_inf(w, X, y, 0.05, b, 0.0, w0) <= 1e-10


def test_a_small_x_is_one_block_in_every_pass_and_a_large_one_is_not():
    # below _ONE_PASS_BYTES the Hessian is one syrk (per-block calls cost more than the arithmetic);
    # above it, the Hessian's temporary stays at 1/32 of the rows and the loss pass's blocks at n·d/128 rows
    X, y, b, w0 = make_problem(n=3000, d=10, seed=6)  # 240,000 bytes
    small = solvers._Problem(X, y, 0.05, b, 0.0, w0)
    assert X.nbytes <= solvers._ONE_PASS_BYTES and small.small_block >= small.n
    big = solvers._Problem(np.vstack([X, X]), np.concatenate([y, y]), 0.05, b, 0.0, w0)
    assert big.small_block == -(-big.n // 32)
    assert big.block == -(-big.n * 10 // 128)
    w = np.linspace(-0.5, 0.5, 10)
    curvature = np.exp(-np.logaddexp(0, y * (X @ w)) - np.logaddexp(0, -y * (X @ w))) / 3000
    H = np.tril(small.hessian_lower(w))
    np.testing.assert_allclose(H + np.tril(H, -1).T, X.T @ (curvature[:, None] * X) + 0.05 * np.eye(10), rtol=1e-12)


def test_lbfgs_hands_over_to_newton_when_the_objective_stops_changing(monkeypatch):
    """J whose value stops changing near w* (here quantised to 1e-7, so that the stall is exact and
    does not depend on which BLAS kernel or solver pass computed the bits of the iterates). L-BFGS-B's
    line search then works on equal values; the hand-over stops it at the STALL_EVALUATIONS-th
    consecutive evaluation within rounding of the best value, and the polish reaches tol from there.
    Asserted as properties of the recorded evaluations, not as counts that one kernel meets and
    another does not: the run stops exactly where the rule says, and L-BFGS-B alone goes on past it."""
    value_grad = solvers._Problem.value_grad
    values = []

    def flat_near_optimum(self, w):
        value, grad = value_grad(self, w)
        value = float(np.round(value, 7))
        values.append(value)
        return value, grad

    monkeypatch.setattr(solvers._Problem, "value_grad", flat_near_optimum)
    X, y, b, w0 = make_problem(n=2000, d=10, seed=2)
    w, _ = minimize_perturbed_logistic(X, y, 1e-4, b=b, w0=w0)
    assert grad_inf(w, X, y, 1e-4, b, 0.0, w0) <= 1e-10

    def stop_index(vals):
        """Where the hand-over rule stops: the STALL_EVALUATIONS-th consecutive flat evaluation."""
        best, run = None, 0
        for k, v in enumerate(vals):
            run = run + 1 if best is not None and abs(v - best) <= solvers._rounding(best) else 0
            best = v if best is None or v < best else best
            if run >= solvers.STALL_EVALUATIONS:
                return k
        return None

    problem = solvers._Problem(X, y, 1e-4, b, 0.0, w0)
    values.clear()
    solvers._lbfgs(problem, np.zeros(10), 1e-10, 50, hand_over=True)
    with_hand_over = list(values)
    k = stop_index(with_hand_over)
    assert k is not None and len(with_hand_over) == k + 1, (k, len(with_hand_over))
    problem = solvers._Problem(X, y, 1e-4, b, 0.0, w0)
    values.clear()
    solvers._lbfgs(problem, np.zeros(10), 1e-10, 50)  # no hand-over: L-BFGS-B alone on the equal values
    assert values[: k + 1] == with_hand_over  # the same run up to the stall ...
    assert len(values) > len(with_hand_over) + 1  # ... which L-BFGS-B alone does not stop at


def test_two_loop_is_the_dense_bfgs_inverse_update():
    # H0 = (sᵀy / yᵀy) I from the newest pair, then H ← (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ per pair, oldest first
    rng = np.random.default_rng(3)
    d = 7
    A = rng.standard_normal((d, d))
    A = A @ A.T + 0.1 * np.eye(d)  # a positive definite curvature: every pair has sᵀy > 0
    pairs = [(s, A @ s) for s in rng.standard_normal((5, d))]
    s_new, y_new = pairs[-1]
    H = (s_new @ y_new) / (y_new @ y_new) * np.eye(d)
    for s, y in pairs:
        rho = 1.0 / (y @ s)
        H = (np.eye(d) - rho * np.outer(s, y)) @ H @ (np.eye(d) - rho * np.outer(y, s)) + rho * np.outer(s, s)
    g = rng.standard_normal(d)
    np.testing.assert_allclose(solvers._two_loop(g, pairs), H @ g, rtol=1e-10)
    np.testing.assert_allclose(solvers._two_loop(y_new, pairs), s_new, rtol=1e-10)  # the secant equation


def _counting_passes(monkeypatch):
    counts = {"value_grad": 0, "curvature": 0, "hessian_lower": 0}
    for name in counts:
        original = getattr(solvers._Problem, name)

        def counted(self, *args, _name=name, _original=original):
            counts[_name] += 1
            return _original(self, *args)

        monkeypatch.setattr(solvers._Problem, name, counted)
    return counts


def test_after_the_hand_over_lbfgs_steps_accepted_on_the_gradient_finish_without_newton(monkeypatch):
    # From the hand-over point (J flat in float64, ‖∇J‖∞ above tol) the full L-BFGS steps reach tol
    # in a pass or two, without the Newton polish's curvature pass and Hessian(-vector) products.
    X, y, b, w0 = make_problem(n=20_000, d=30, seed=4)
    counts = _counting_passes(monkeypatch)
    handed_over = []
    lbfgs = solvers._lbfgs

    def recording(problem, *args):
        out = lbfgs(problem, *args)
        handed_over.append((np.max(np.abs(out[2])), len(out[4])))
        return out

    monkeypatch.setattr(solvers, "_lbfgs", recording)
    w, _ = minimize_perturbed_logistic(X, y, 1e-3, b=b, w0=w0, tol=1e-12)
    ((gmax, n_pairs),) = handed_over
    assert gmax > 1e-12 * 2 and n_pairs >= 5  # L-BFGS stopped above tol, with its curvature pairs
    assert grad_inf(w, X, y, 1e-3, b, 0.0, w0) <= 1e-12
    assert counts["curvature"] == counts["hessian_lower"] == 0, counts


def test_a_refused_secant_step_leaves_the_newton_polish_to_finish():
    # Curvature pairs of a far too flat model give a far too long step: J rises, the step is refused,
    # the polish returns the point it started from, and the Newton polish reaches tol from there.
    X, y, b, w0 = make_problem(n=3000, d=12, seed=5)
    problem = solvers._Problem(X, y, 1e-3, b, 0.0, w0)
    w, value, grad, _, pairs = solvers._lbfgs(problem, np.zeros(12), 1e-6, 200)
    rng = np.random.default_rng(0)
    wrong = [(s, 1e-3 * np.abs(rng.standard_normal(12)) * s) for s, _ in pairs]
    evaluations = problem.n_evals
    w2, value2, grad2, steps = solvers._secant_polish(problem, w, value, grad, wrong, 1e-12)
    assert steps == 1 and problem.n_evals == evaluations + 1  # one pass spent on the refused step
    assert w2 is w and value2 == value and grad2 is grad
    w3, _ = solvers._newton(problem, w2, value2, grad2, 1e-12, 50, polish=True)
    assert grad_inf(w3, X, y, 1e-3, b, 0.0, w0) <= 1e-12
