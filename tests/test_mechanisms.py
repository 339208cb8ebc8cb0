"""Calibration values, noise distributions and clipping of dpstack.mechanisms."""

import math

import numpy as np
import pytest
from scipy import stats

from dpstack.mechanisms import (
    check_importance,
    clip_rows,
    feature_split_calibration,
    isotropic_noise,
    objective_perturbation_calibration,
    output_perturbation_noise,
    output_perturbation_scale,
)

# --- objective perturbation, hand-computed from Algorithm 1 as printed -------------------------


def test_calibration_delta_zero_branch_matches_algorithm_1():
    eps, n, lam = 1.0, 1000, 0.01
    cal = objective_perturbation_calibration(eps, n, lam)
    expected = eps - math.log(1 + 1 / (2 * n * lam) + 1 / (16 * n**2 * lam**2))
    assert cal.branch == "delta=0"
    assert cal.epsilon_noise == pytest.approx(expected, rel=1e-14)
    assert cal.epsilon_noise == pytest.approx(0.950614774819257, abs=1e-12)  # by hand: 1 - log(1.050625)
    assert cal.delta == 0.0
    assert cal.noise_scale == pytest.approx(2 / expected)


def test_calibration_delta_positive_branch_matches_algorithm_1():
    eps, n, lam = 0.1, 100, 0.01  # log(1 + 1/2 + 1/16) = 0.446 > 0.1, so ε' <= 0
    cal = objective_perturbation_calibration(eps, n, lam)
    assert cal.branch == "delta>0"
    assert cal.epsilon_noise == pytest.approx(0.05)
    assert cal.delta == pytest.approx(1 / (4 * n * (math.exp(eps / 4) - 1)) - lam, rel=1e-12)
    assert cal.delta == pytest.approx(0.0887548, abs=1e-6)  # by hand
    assert cal.noise_scale == pytest.approx(40.0)


def test_delta_branch_jacobian_plus_noise_spend_exactly_epsilon():
    # In the Δ > 0 branch the Jacobian factor (1 + B²/(4n(λ+Δ)))² must equal e^{ε/2}.
    for eps, n, lam, B in [(0.1, 100, 0.01, 1.0), (0.5, 50, 1e-3, 2.0), (0.05, 3000, 1e-5, 0.3)]:
        cal = objective_perturbation_calibration(eps, n, lam, norm_bound=B)
        assert cal.branch == "delta>0" and cal.delta >= 0
        jac = 2 * math.log1p(B**2 / (4 * n * (lam + cal.delta)))
        noise = 2 * B / cal.noise_scale  # ratio of densities exp(‖Δb‖/scale) with ‖Δb‖ <= 2B
        assert jac + noise == pytest.approx(eps, rel=1e-10)


def test_norm_bound_is_plr_on_rescaled_rows():
    # PLR with ‖x‖ <= B and λ equals PLR on x/B with λ/B²: same ε', Δ scaled by B², noise by B.
    for eps in (0.05, 1.0):
        B, n, lam = 3.0, 200, 0.02
        a = objective_perturbation_calibration(eps, n, lam, norm_bound=B)
        b = objective_perturbation_calibration(eps, n, lam / B**2)
        assert a.epsilon_noise == pytest.approx(b.epsilon_noise)
        assert a.delta == pytest.approx(B**2 * b.delta)
        assert a.noise_scale == pytest.approx(B * b.noise_scale)


def test_non_private_calibration():
    cal = objective_perturbation_calibration(np.inf, 10, 0.1)
    assert (cal.epsilon_noise, cal.delta, cal.noise_scale, cal.branch) == (np.inf, 0.0, 0.0, "non-private")


@pytest.mark.parametrize("bad", [0, -1.0, float("nan")])
def test_calibration_rejects_bad_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        objective_perturbation_calibration(bad, 100, 0.1)


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"lam": 0.0}, "lam"),
        ({"lam": -1.0}, "lam"),
        ({"n": 0}, "n \\(number"),
        ({"n": 2.5}, "n \\(number"),
        ({"norm_bound": 0.0}, "norm_bound"),
    ],
)
def test_calibration_rejects_bad_arguments(kw, match):
    args = {"epsilon": 1.0, "n": 100, "lam": 0.1, **kw}
    with pytest.raises(ValueError, match=match):
        objective_perturbation_calibration(**args)


def test_calibration_rejects_non_numbers():
    with pytest.raises(TypeError, match="epsilon"):
        objective_perturbation_calibration("1", 100, 0.1)


# --- feature-split calibration (PLR-FS) ---------------------------------------------------------


def _fs_total_spend(cal, n, lam):
    """ε actually spent: noise Σ ε_k q_k plus the Jacobians Σ 2 log(1 + q_k²/(4n(λ_k+Δ_k)))."""
    q = cal.importance
    lam = np.broadcast_to(lam, q.shape)
    noise = float(np.sum(cal.epsilon_k * q))
    jac = float(np.sum(2 * np.log1p(q**2 / (4 * n * (lam + cal.delta_k)))))
    return noise + jac


def test_feature_split_single_block_equals_plr():
    for eps in (0.05, 2.0):
        fs = feature_split_calibration(eps, 300, 0.01, [1.0])
        plr = objective_perturbation_calibration(eps, 300, 0.01)
        assert fs.epsilon_k[0] == pytest.approx(plr.epsilon_noise)
        assert fs.delta_k[0] == pytest.approx(plr.delta)
        assert fs.noise_scale_k[0] == pytest.approx(plr.noise_scale)


def test_feature_split_spends_exactly_epsilon_in_delta_zero_branch():
    q = np.array([0.5, 0.3, 0.15, 0.05])
    cal = feature_split_calibration(1.0, 1000, [0.01, 0.02, 0.005, 0.01], q)
    assert cal.branch == "delta=0"
    assert np.all(cal.epsilon_k == cal.epsilon_prime)
    assert _fs_total_spend(cal, 1000, np.array([0.01, 0.02, 0.005, 0.01])) == pytest.approx(1.0, rel=1e-12)


def test_feature_split_delta_branch_spends_at_most_epsilon_and_clamps():
    rng = np.random.default_rng(3)
    for _ in range(200):
        K = rng.integers(1, 8)
        q = rng.dirichlet(np.ones(K))
        lam = 10 ** rng.uniform(-6, 1, size=K)
        eps = 10 ** rng.uniform(-2, 1)
        n = int(rng.integers(5, 5000))
        cal = feature_split_calibration(eps, n, lam, q)
        assert np.all(cal.delta_k >= 0)
        spent = _fs_total_spend(cal, n, lam)
        assert spent <= eps * (1 + 1e-10)
        if cal.branch == "delta>0":
            assert np.allclose(cal.epsilon_k, eps / 2)
            unclamped = q**2 / (4 * n * np.expm1(eps * q / 4)) - lam
            assert np.allclose(cal.delta_k, np.maximum(unclamped, 0))
            if np.all(unclamped > 0):
                assert spent == pytest.approx(eps, rel=1e-9)


def test_feature_split_zero_importance_block_spends_nothing():
    cal = feature_split_calibration(0.1, 100, 0.001, [0.0, 1.0])
    assert cal.delta_k[0] == 0 and cal.noise_scale_k[0] == 0
    alone = feature_split_calibration(0.1, 100, 0.001, [1.0])
    assert cal.delta_k[1] == pytest.approx(alone.delta_k[0])


@pytest.mark.parametrize(
    "q,match",
    [
        ([0.5, 0.6], "sum to 1"),
        ([1.2, -0.2], ">= 0"),
        ([], "non-empty"),
        ([[0.5, 0.5]], "1-D"),
        ([np.nan, 1.0], "finite"),
    ],
)
def test_bad_importance(q, match):
    with pytest.raises(ValueError, match=match):
        check_importance(q)


def test_feature_split_rejects_bad_lam():
    with pytest.raises(ValueError, match="lam"):
        feature_split_calibration(1.0, 100, [0.1, 0.0], [0.5, 0.5])


# --- noise ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim,scale", [(1, 1.0), (5, 0.3), (100, 2.0)])
def test_noise_norm_is_gamma_distributed(dim, scale):
    draws = isotropic_noise(dim, scale, random_state=1, size=4000)
    assert draws.shape == (4000, dim)
    norms = np.linalg.norm(draws, axis=1)
    assert stats.kstest(norms, stats.gamma(a=dim, scale=scale).cdf).pvalue > 0.01
    # a wrong scale must be rejected by the same test (the test has power)
    assert stats.kstest(norms, stats.gamma(a=dim, scale=1.1 * scale).cdf).pvalue < 1e-3


@pytest.mark.parametrize("dim", [2, 3, 20])
def test_noise_direction_is_uniform_on_the_sphere(dim):
    draws = isotropic_noise(dim, 1.0, random_state=2, size=20000)
    u = draws / np.linalg.norm(draws, axis=1, keepdims=True)
    # For the uniform distribution on S^{d-1}: u_1² ~ Beta(1/2, (d-1)/2), and E[u uᵀ] = I/d.
    assert stats.kstest(u[:, 0] ** 2, stats.beta(0.5, (dim - 1) / 2).cdf).pvalue > 0.01
    assert np.abs(u.mean(axis=0)).max() < 5 / np.sqrt(20000)
    assert np.abs(u.T @ u / 20000 - np.eye(dim) / dim).max() < 0.02


def test_noise_is_deterministic_per_seed_and_zero_at_scale_zero():
    assert np.array_equal(isotropic_noise(4, 1.0, 7), isotropic_noise(4, 1.0, 7))
    assert not np.array_equal(isotropic_noise(4, 1.0, 7), isotropic_noise(4, 1.0, 8))
    assert np.all(isotropic_noise(4, 0.0, 7) == 0)
    with pytest.raises(ValueError, match="dim"):
        isotropic_noise(0, 1.0)
    with pytest.raises(ValueError, match="scale"):
        isotropic_noise(3, -1.0)
    with pytest.raises(TypeError, match="random_state"):
        isotropic_noise(3, 1.0, random_state="seed")


def test_output_perturbation():
    assert output_perturbation_scale(2.0, 0.5) == 4.0
    assert output_perturbation_scale(2.0, np.inf) == 0.0
    norms = [np.linalg.norm(output_perturbation_noise(0.2, 1.0, 3, s)) for s in range(3000)]
    assert stats.kstest(norms, stats.gamma(a=3, scale=0.2).cdf).pvalue > 0.01
    with pytest.raises(ValueError, match="epsilon"):
        output_perturbation_scale(1.0, 0.0)
    with pytest.raises(ValueError, match="sensitivity"):
        output_perturbation_scale(-1.0, 1.0)


# --- clipping ---------------------------------------------------------------------------------


def test_clip_rows():
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0], [-6.0, 8.0]])
    C = clip_rows(X, 1.0)
    assert np.allclose(np.linalg.norm(C, axis=1), [1.0, 0.5, 0.0, 1.0])
    assert np.array_equal(C[1], X[1])  # rows inside the bound are untouched
    assert np.allclose(C[3], [-0.6, 0.8])  # direction kept
    assert np.array_equal(X[0], [3.0, 4.0])  # input not modified
    with pytest.raises(ValueError, match="bound"):
        clip_rows(X, -1.0)


def test_clip_rows_returns_the_input_when_no_row_is_clipped():
    X = np.array([[0.3, 0.4], [0.0, 0.0], [-0.6, 0.8]])
    before = X.copy()
    assert clip_rows(X, 1.0) is X  # no copy at all
    assert clip_rows(X.T, 1.0).base is X  # a non-contiguous view is not copied either
    C = clip_rows(X, 0.5)  # now the third row is clipped: a new array, input untouched
    assert not np.shares_memory(C, X)
    assert np.array_equal(X, before)
    assert np.allclose(C, [[0.3, 0.4], [0.0, 0.0], [-0.3, 0.4]])


def test_clip_rows_does_not_copy_a_memory_map(tmp_path):
    path = tmp_path / "X.npy"
    np.save(path, np.full((50, 4), 0.1))
    X = np.load(path, mmap_mode="r")
    assert np.shares_memory(clip_rows(X, 1.0), X)


def test_clip_rows_huge_and_tiny_values():
    # squared norms of these rows overflow float64: they must still be clipped to the bound
    X = np.array([[3e160, 4e160], [1e308, -1e308], [0.3, 0.4]])
    C = clip_rows(X, 1.0)
    assert np.allclose(C, [[0.6, 0.8], [np.sqrt(0.5), -np.sqrt(0.5)], [0.3, 0.4]])
    # and under a tiny bound, rows whose squared norm underflows are measured exactly
    T = np.array([[3e-200, 4e-200], [3e-202, 4e-202]])
    assert np.allclose(clip_rows(T, 1e-201) / 1e-201, [[0.6, 0.8], [0.3, 0.4]])
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="NaN or infinity"):
            clip_rows([[1.0, bad]], 1.0)


def test_plr_on_rows_near_1e160_is_not_silently_zero():
    from dpstack import PrivateLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    unit = clip_rows(X / np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    big = PrivateLogisticRegression(epsilon=np.inf, lam=0.01).fit(X * 1e160, y)
    ref = PrivateLogisticRegression(epsilon=np.inf, lam=0.01).fit(unit, y)
    assert np.allclose(big.coef_, ref.coef_, atol=1e-8)
    assert abs(big.coef_[0, 0]) > 1.0


@pytest.mark.parametrize("bound", [0.5, 1.0, 3.0])
def test_clip_rows_is_the_scaling_by_min_one_bound_over_norm_exactly(bound):
    # the common path (no overflow, bound >= 1e-150) skips the per-row guards: it must give the
    # very bits of x · min(1, bound / ‖x‖), including rows with bound < ‖x‖ < √bound (bound < 1),
    # which a comparison of squared norms against the bound would miss
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 6)) * rng.uniform(0.0, 2.0, size=(300, 1))
    X[0] = 0.0
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    expected = X * np.where(norms > bound, bound / np.where(norms > 0, norms, 1.0), 1.0)[:, None]
    C = clip_rows(X, bound)
    assert np.array_equal(C, expected)
    assert np.all(np.linalg.norm(C, axis=1) <= bound * (1 + 1e-15))
    inside = X[norms <= bound]
    assert clip_rows(inside, bound) is inside
    # rows just outside the bound, alone: every one of them is clipped (at bound 0.5 their squared
    # norms, 0.36, are below the bound)
    outside = X[norms > 0] / norms[norms > 0, None] * (1.2 * bound)
    assert np.all(np.abs(np.linalg.norm(clip_rows(outside, bound), axis=1) - bound) < 1e-12)
