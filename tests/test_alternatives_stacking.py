"""PST-F with DP-GD blocks (:class:`~dpstack.alternatives.stacking.NoisyGradientStackingClassifier`).

What is checked: a record's concatenated block gradient has norm ≤ 1 after the rows are clipped,
even for rows far outside the ball (hypothesis), so the K blocks cost one Gaussian mechanism; one
noisy step's spread is η·z·C/n_l with DP-GD's multiplier z and C = 1 for K = 1 and K = 4; without
noise each block reaches its own regularised minimiser on D_l (PST-F's D_l for the same seed); it
learns; the estimator conventions (parameters untouched, the release and no randomness held,
determinism, errors naming the parameter before any state change, the label set flagged).
Planted bugs seen to fail: each block clipped to norm 1 instead of the row (norm bound), the noise
calibrated to C = max q_k (spread, K = 4), one joint margin for all blocks (minimisers).
"""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from dpstack import PrivateStackingClassifier
from dpstack.alternatives import NoisyGradientDescentClassifier, gaussian_noise_multiplier
from dpstack.alternatives.stacking import (
    NoisyGradientStackingClassifier,
    block_design,
    block_logistic_gradient_sum,
)
from dpstack.base import PrivacyLeakWarning
from dpstack.solvers import minimize_perturbed_logistic

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra.numpy import arrays  # noqa: E402

DELTA = 1e-5
CLASSES = [0, 1]


def task(n=600, d=8, seed=0):
    """Rows inside the unit ball, labels from a noisy hyperplane."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= 1.1 * np.linalg.norm(X, axis=1, keepdims=True) * rng.uniform(1.0, 2.0, size=(n, 1))
    w = rng.normal(size=d)
    y = (X @ w + 0.05 * rng.normal(size=n) > 0).astype(int)
    return X, y


@given(
    rows=arrays(np.float64, (3, 9), elements=st.floats(-1e6, 1e6, allow_nan=False)),
    w=arrays(np.float64, 9, elements=st.floats(-50, 50, allow_nan=False)),
    K=st.integers(1, 9),
    labels=st.lists(st.sampled_from([-1.0, 1.0]), min_size=3, max_size=3),
)
def test_a_records_concatenated_block_gradient_has_norm_at_most_one(rows, w, K, labels):
    """The one-mechanism bound: ‖(r_1 x(1), …, r_K x(K))‖ ≤ ‖clip(x)‖ ≤ 1, whatever the groups."""
    groups = np.array_split(np.random.default_rng(K).permutation(9), K)
    Z, starts = block_design(rows, groups)
    y = np.array(labels)
    for i in range(len(y)):
        g = block_logistic_gradient_sum(Z[i : i + 1], y[i : i + 1], w, starts)
        assert np.linalg.norm(g) <= 1.0 + 1e-12
        assert np.linalg.norm(g) <= np.linalg.norm(Z[i]) + 1e-12


def test_the_block_gradient_is_each_blocks_own_logistic_gradient():
    X, y = task(n=50, d=6)
    ys = np.where(y == 1, 1.0, -1.0)
    groups = [np.array([4, 0]), np.array([1, 5, 2]), np.array([3])]
    Z, starts = block_design(X, groups)
    w = np.random.default_rng(2).normal(size=6) * 3
    g = block_logistic_gradient_sum(Z, ys, w, starts)
    for a, b in zip(starts[:-1], starts[1:]):
        Zk = Z[:, a:b]
        own = ((-ys / (1 + np.exp(ys * (Zk @ w[a:b]))))[:, None] * Zk).sum(axis=0)
        assert np.allclose(g[a:b], own, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("K", [1, 4])
def test_one_noisy_step_has_dp_gds_noise_for_the_k_blocks_together(K):
    """One step from w = 0: private − non-private blocks = −η·noise/n_l, std η·z·C/n_l, C = 1 and z
    DP-GD's multiplier for one step (replace-one): one Gaussian mechanism, ε not split among the blocks."""
    X, y = task(n=80, d=8)
    eps, lr = 2.0, 0.7
    params = dict(n_groups=K, n_steps=1, learning_rate=lr, classes=CLASSES)

    def blocks(epsilon, seed):
        est = NoisyGradientStackingClassifier(epsilon=epsilon, random_state=seed, **params).fit(X, y)
        return np.concatenate(est.block_coefs_)

    # the same seed draws the same split and groups with and without noise: the difference is the noise
    diffs = np.array([blocks(eps, s) - blocks(np.inf, s) for s in range(400)])
    z = gaussian_noise_multiplier(eps, DELTA, 1, neighbouring="replace-one")
    dp_gd = NoisyGradientDescentClassifier(epsilon=eps, n_steps=1, classes=CLASSES, random_state=0).fit(X, y)
    assert z == dp_gd.noise_multiplier_
    n_low = round(0.5 * len(y))
    expected = lr * z * 1.0 / n_low
    assert np.std(diffs) == pytest.approx(expected, rel=0.08)
    assert np.abs(np.mean(diffs)) < 4 * expected / math.sqrt(diffs.size)


def test_without_noise_each_block_reaches_its_own_minimiser_on_pst_fs_low_part():
    X, y = task(n=400, d=7, seed=1)
    groups = [np.array([0, 3]), np.array([1, 2, 6]), np.array([4, 5])]
    lam = 0.05
    est = NoisyGradientStackingClassifier(
        epsilon=np.inf, groups=groups, lam=lam, n_steps=2000, random_state=11, classes=CLASSES
    ).fit(X, y)
    pst = PrivateStackingClassifier(epsilon=1.0, groups=groups, random_state=11, classes=CLASSES, diagnostics=True)
    low = pst.fit(X, y).diagnostics_.low_index  # the same seed draws the same D_l as PST-F
    Z, starts = block_design(X[low], groups)
    ys = np.where(y[low] == 1, 1.0, -1.0)
    for k, (a, b) in enumerate(zip(starts[:-1], starts[1:])):
        w, _ = minimize_perturbed_logistic(Z[:, a:b], ys, lam, tol=1e-12)
        assert np.max(np.abs(est.block_coefs_[k] - w)) < 1e-7
    assert est.noise_multiplier_ == 0.0 and est.guarantee_.epsilon == math.inf


def test_it_learns_and_says_its_guarantee():
    X, y = task(n=4000, d=10, seed=2)
    X, y, X_test, y_test = X[:3000], y[:3000], X[3000:], y[3000:]
    imp = np.arange(10, 0, -1.0)
    est = NoisyGradientStackingClassifier(
        epsilon=4.0, feature_importance=imp, n_groups=2, lam=1e-3, n_steps=200, random_state=0, classes=CLASSES
    ).fit(X, y)
    assert est.score(X_test, y_test) > 0.85
    assert [g.tolist() for g in est.groups_] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]  # variant W
    g = est.guarantee_
    assert (g.epsilon, g.delta, g.neighbouring, g.unit, g.accountant) == (
        4.0,
        DELTA,
        "replace-one",
        "one sample",
        "PLD",
    )
    assert est.privacy_.per_part() == {"D_l": 4.0, "D_h": 4.0} and est.privacy_.total() == 4.0


RANDOM_OBJECTS = (np.random.Generator, np.random.SeedSequence, np.random.RandomState, np.random.BitGenerator)


def randomness(obj, path="est", seen=None):
    seen = set() if seen is None else seen
    if id(obj) in seen or obj is None or isinstance(obj, (str, bytes, int, float, bool, np.generic, type)):
        return []
    seen.add(id(obj))
    if isinstance(obj, RANDOM_OBJECTS):
        return [path]
    if isinstance(obj, dict):
        items = [(f"{path}[{k!r}]", v) for k, v in obj.items()]
    elif isinstance(obj, (list, tuple, set)):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(obj)]
    elif hasattr(obj, "__dict__"):
        items = [(f"{path}.{k}", v) for k, v in vars(obj).items()]
    else:
        items = []
    return [p for where, value in items for p in randomness(value, where, seen)]


def test_parameters_untouched_release_held_and_no_randomness():
    X, y = task(n=300)
    imp = np.linspace(2, 1, 8)
    est = NoisyGradientStackingClassifier(
        epsilon=2.0, feature_importance=imp, random_state=np.random.default_rng(1), classes=CLASSES
    )
    before = est.get_params()
    est.fit(X, y)
    after = est.get_params()
    assert before.keys() == after.keys() and all(after[k] is before[k] for k in before)
    assert not hasattr(clone(est), "block_coefs_")
    est.random_state = None
    assert randomness(est) == []
    fitted = {k for k in vars(est) if k.endswith("_")}
    assert fitted == {
        "classes_",
        "n_features_in_",
        "groups_",
        "importance_",
        "block_coefs_",
        "high_level_",
        "noise_multiplier_",
        "n_iter_",
        "guarantee_",
        "privacy_",
    }
    assert est.high_level_.random_state is None
    assert est.predict_proba(X).shape == (len(y), 2) and set(est.predict(X)) <= {0, 1}
    assert est.decision_function_low(X).shape == (len(y), 5)  # K = 5, the default


def test_a_fit_is_determined_by_its_random_state():
    X, y = task(n=300)

    def coefs(seed):
        est = NoisyGradientStackingClassifier(epsilon=2.0, random_state=seed, classes=CLASSES).fit(X, y)
        return np.concatenate([*est.block_coefs_, est.high_level_.coef_[0]])

    assert np.array_equal(coefs(7), coefs(7)) and not np.array_equal(coefs(7), coefs(8))


@pytest.mark.parametrize(
    "param, value",
    [
        ("epsilon", -1.0),
        ("epsilon", 0.0),
        ("delta", 1.0),
        ("accountant", "PRV"),
        ("lam", -0.1),
        ("lam_high", 0.0),
        ("n_groups", 0),
        ("n_steps", 0),
        ("low_fraction", 1.0),
        ("meta_features", "tanh"),
        ("n_groups", 9),
    ],
)
def test_a_bad_parameter_is_named_before_any_state_changes(param, value):
    X, y = task(n=200)
    est = NoisyGradientStackingClassifier(epsilon=2.0, random_state=0, classes=CLASSES).fit(X, y)
    state = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(est).items()}
    est.set_params(**{param: value})
    with pytest.raises(ValueError, match=param):
        est.fit(X, y)
    est.set_params(**{param: state[param]})
    assert vars(est).keys() == state.keys()
    assert all(
        np.array_equal(vars(est)[k], v) if isinstance(v, np.ndarray) else vars(est)[k] is v or vars(est)[k] == v
        for k, v in state.items()
        if k != "groups_" and k != "block_coefs_"
    )
    assert all(np.array_equal(a, b) for a, b in zip(vars(est)["block_coefs_"], state["block_coefs_"]))


def test_lam_zero_needs_a_lam_high():
    X, y = task(n=200)
    with pytest.raises(ValueError, match="lam_high"):
        NoisyGradientStackingClassifier(lam=0.0, random_state=0, classes=CLASSES).fit(X, y)
    NoisyGradientStackingClassifier(lam=0.0, lam_high=0.1, random_state=0, classes=CLASSES).fit(X, y)


def test_a_label_set_read_from_the_data_is_flagged():
    X, y = task(n=200)
    with pytest.warns(PrivacyLeakWarning):
        est = NoisyGradientStackingClassifier(epsilon=2.0, n_steps=5, random_state=0).fit(X, y)
    assert any("classes=None" in a for a in est.guarantee_.assumptions) and est.privacy_.total() == math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        est = NoisyGradientStackingClassifier(epsilon=2.0, n_steps=5, random_state=0, classes=CLASSES).fit(X, y)
    assert not any("classes=None" in a for a in est.guarantee_.assumptions) and est.privacy_.total() == 2.0
