"""Tests of dpstack.audit: the exact privacy loss, the statistical bound, and the mutants it must catch.

Every test uses fixed seeds; nothing here is timed.
"""
import numpy as np
import pytest
from scipy import stats

from dpstack import FeatureSplitLogisticRegression, PrivateLogisticRegression
from dpstack.audit import exact_privacy_loss, max_privacy_loss, sample_outputs, worst_case_neighbours
from dpstack.audit.exact import _noise_from_output
from dpstack.mechanisms import objective_perturbation_calibration
from dpstack.solvers import logistic_objective

GROUPS = [[0, 1], [2], [3, 4]]
Q = [0.6, 0.3, 0.1]


def _data(n=60, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) / np.sqrt(p)
    y = (X[:, 0] + 0.5 * X[:, 2] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _random_neighbour(X, y, rng):
    Xp, yp = X.copy(), y.copy()
    i = rng.integers(X.shape[0])
    Xp[i] = rng.normal(size=X.shape[1]) * rng.uniform(0.1, 3.0)
    yp[i] = rng.integers(2)
    return Xp, yp


# -- the mechanisms under test, in both branches -------------------------------------------------
# n = 60: λ = 0.05 gives ε' > 0 (Δ = 0); λ = 0.002 gives ε' ≤ 0 (Δ > 0), for PLR and PLR-FS.
PLR_CASES = {
    "plr-delta0": dict(epsilon=1.0, lam=0.05),
    "plr-delta>0": dict(epsilon=1.0, lam=0.002),
    "plr-intercept-w0-delta0": dict(epsilon=0.5, lam=0.05, fit_intercept=True, w0=np.full(6, 0.4)),
    "plr-intercept-w0-delta>0": dict(epsilon=2.0, lam=0.0005, fit_intercept=True, w0=np.full(6, -0.3)),
}
FS_CASES = {
    "fs-delta0": dict(epsilon=1.0, groups=GROUPS, importance=Q, lam=0.05),
    "fs-delta>0": dict(epsilon=1.0, groups=GROUPS, importance=Q, lam=[0.002, 0.001, 0.05]),
    "fs-w0-delta0": dict(epsilon=2.0, groups=GROUPS, importance=Q, lam=[0.05, 0.02, 0.01], w0=np.full(5, 0.2)),
}


def _fitted(kind, params, X, y, seed=0):
    cls = FeatureSplitLogisticRegression if kind.startswith("fs") else PrivateLogisticRegression
    return cls(random_state=seed, **params).fit(X, y)


def test_branches_are_the_intended_ones():
    X, y = _data()
    for name, params in {**PLR_CASES, **FS_CASES}.items():
        est = _fitted(name, params, X, y)
        assert est.calibration_.branch == ("delta>0" if name.endswith("delta>0") else "delta=0"), name


# -- correctness of the loss itself ----------------------------------------------------------------
@pytest.mark.parametrize("name", ["plr-delta0", "plr-intercept-w0-delta>0"])
def test_noise_read_back_from_the_output_is_the_noise_drawn(name):
    X, y = _data()
    est = _fitted(name, PLR_CASES[name], X, y, seed=3)
    Z = est._design_matrix(X)
    w0 = np.zeros(Z.shape[1]) if est.w0 is None else est.w0
    b, _ = _noise_from_output(Z, np.where(y == 1, 1.0, -1.0), est.w_[None], est.lam, est.delta_, w0)
    assert np.linalg.norm(b) == pytest.approx(est.noise_norm_, rel=1e-6)


def _reference_loss(est, blocks_D, blocks_Dp, y, yp, w):
    """Independent computation: gradient from the solver, full log-determinants."""
    total = 0.0
    for (Z, lam, delta, w0, scale, cols), (Zp, *_rest) in zip(blocks_D, blocks_Dp):
        wk = w[cols]
        terms = []
        for M, lab in ((Z, y), (Zp, yp)):
            s = np.where(lab == 1, 1.0, -1.0)
            n = M.shape[0]
            _, grad = logistic_objective(wk, M, s, lam, None, delta, w0)
            b = -n * grad
            p = 1 / (1 + np.exp(-s * (M @ wk)))
            H = (M.T * (p * (1 - p))) @ M + n * (lam + delta) * np.eye(M.shape[1])
            terms.append(-np.linalg.norm(b) / scale + np.linalg.slogdet(H)[1])
        total += terms[0] - terms[1]
    return total


def test_exact_loss_matches_an_independent_computation():
    X, y = _data()
    rng = np.random.default_rng(7)
    Xp, yp = X.copy(), y.copy()
    Xp[[3, 10]] = rng.normal(size=(2, 5))
    yp[3] = 1 - yp[3]
    # PLR with an intercept and w0, Δ > 0 branch
    est = _fitted("plr", PLR_CASES["plr-intercept-w0-delta>0"], X, y)
    cal = est.calibration_
    blk = lambda M: [(est._design_matrix(M), est.lam, cal.delta, est.w0, cal.noise_scale, np.arange(6))]
    W = rng.normal(size=(5, 6)) * 3
    got = exact_privacy_loss(est, X, y, Xp, yp, W)
    want = [_reference_loss(est, blk(X), blk(Xp), y, yp, w) for w in W]
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    # PLR-FS with unequal q_k and per-block λ_k, Δ > 0 branch
    fs = _fitted("fs", FS_CASES["fs-delta>0"], X, y)
    cal = fs.calibration_
    lam = np.asarray(fs.lam)
    blk = lambda M: [(fs.block_design(M, k), lam[k], cal.delta_k[k], np.zeros(len(g)), cal.noise_scale_k[k],
                      np.asarray(g)) for k, g in enumerate(GROUPS)]
    W = rng.normal(size=(5, 5)) * 3
    got = exact_privacy_loss(fs, X, y, Xp, yp, W)
    want = [_reference_loss(fs, blk(X), blk(Xp), y, yp, w) for w in W]
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


def test_one_dimensional_output_distribution_is_the_change_of_variables():
    # In 1-D, b(w) is decreasing and b is Laplace(0, scale): P(w ≤ t) = P(b ≥ b(t)).
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(40, 1))
    y = (X[:, 0] > 0).astype(int)
    est = PrivateLogisticRegression(epsilon=1.0, lam=0.1, random_state=0).fit(X, y)
    W = sample_outputs(est, X, y, n_draws=2000, random_state=2)
    Z = est._design_matrix(X)
    grid = np.quantile(W[:, 0], [0.1, 0.3, 0.5, 0.7, 0.9])[:, None]
    b, _ = _noise_from_output(Z, np.where(y == 1, 1.0, -1.0), grid, est.lam, 0.0, np.zeros(1))
    cdf = stats.laplace.sf(b[:, 0], scale=est.calibration_.noise_scale)
    np.testing.assert_allclose(cdf, [0.1, 0.3, 0.5, 0.7, 0.9], atol=0.04)


# -- the guarantee holds ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(PLR_CASES) + list(FS_CASES))
def test_max_loss_within_epsilon_on_worst_case_and_random_neighbours(name):
    X, y = _data()
    params = {**PLR_CASES, **FS_CASES}[name]
    is_fs = name.startswith("fs")
    pairs = worst_case_neighbours(
        X, y, index=0, groups=GROUPS if is_fs else None, importance=Q if is_fs else None
    )
    rng = np.random.default_rng(11)
    XD, yD = pairs["label_flip"][:2]
    for _ in range(3):
        pairs[f"random{_}"] = (XD, yD) + _random_neighbour(XD, yD, rng)
    est = _fitted(name, params, XD, yD)
    W = sample_outputs(est, XD, yD, n_draws=300, random_state=5)
    # outputs from the neighbour's distribution and far-out w's too: pure DP bounds every w
    W = np.vstack([W, sample_outputs(est, pairs["orthogonal"][2], yD, n_draws=100, random_state=6), 3 * W[:50]])
    worst = max(max_privacy_loss(est, *pair, W) for pair in pairs.values())
    assert 0.05 * est.epsilon < worst <= est.epsilon


# -- a broken calibration is caught ------------------------------------------------------------------
class _TenfoldEpsilonPLR(PrivateLogisticRegression):
    """Mutant: claims ε but draws noise (and Δ) calibrated for 10ε."""

    def fit(self, X, y):
        claimed = self.epsilon
        self.epsilon = 10 * claimed
        try:
            return super().fit(X, y)
        finally:
            self.epsilon = claimed


@pytest.mark.parametrize("name", ["plr-delta0", "plr-delta>0"])
def test_exact_loss_catches_noise_calibrated_for_ten_epsilon(name):
    X, y = _data()
    XD, yD, XP, yP = worst_case_neighbours(X, y)["orthogonal"]
    est = _TenfoldEpsilonPLR(random_state=0, **PLR_CASES[name]).fit(XD, yD)
    W = sample_outputs(est, XD, yD, n_draws=300, random_state=5)
    assert max_privacy_loss(est, XD, yD, XP, yP, W) > 2 * est.epsilon
