"""Nothing in a fitted object regenerates its noise.

Every attribute of a fitted estimator is walked (nested estimators, dicts, lists, tuples,
dataclasses, object arrays): a default object (``random_state=None``) must hold no int
``random_state``, ``Generator``, ``SeedSequence``, ``RandomState`` or bit generator anywhere.
With an int seed only the outer ``random_state`` parameter (the user's own) may hold one.
The attack tests rebuild the noise from a nested seed, as someone holding the object would.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpstack import (
    FeatureSplitLogisticRegression,
    MultipartyPrivateClassifier,
    PrivateLogisticRegression,
    PrivateStackingClassifier,
    PrivateTransferStacking,
    SimComb,
)
from dpstack.audit.laws import _plrfs_noise, recover_noise
from dpstack.mechanisms import isotropic_noise
from dpstack.multiparty import fit_methods
from dpstack.tuning import PrivateParameterTuning

RANDOM_OBJECTS = (np.random.Generator, np.random.SeedSequence, np.random.RandomState, np.random.BitGenerator)


def _randomness(obj, path="est", seen=None, allow=()):
    """Paths of every seed, generator or bit-generator state reachable from ``obj``."""
    seen = set() if seen is None else seen
    if id(obj) in seen or obj is None or isinstance(obj, (str, bytes, int, float, bool, np.generic, type)):
        return []
    seen.add(id(obj))
    if isinstance(obj, RANDOM_OBJECTS):
        return [f"{path}: {type(obj).__name__}"]
    found = []
    if isinstance(obj, dict):
        items = [(f"{path}[{k!r}]", v) for k, v in obj.items()]
    elif isinstance(obj, (list, tuple, set, frozenset)):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(obj)]
    elif isinstance(obj, np.ndarray):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(obj.ravel())] if obj.dtype == object else []
    elif dataclasses.is_dataclass(obj):
        items = [(f"{path}.{f.name}", getattr(obj, f.name)) for f in dataclasses.fields(obj)]
    elif hasattr(obj, "__dict__"):
        items = [(f"{path}.{k}", v) for k, v in vars(obj).items()]
    else:
        items = []
    for where, value in items:
        if where.endswith(".random_state") and value is not None and where not in allow:
            found.append(f"{where} = {value!r}")
        found += _randomness(value, where, seen, allow)
    return found


def _binary(n=400, d=6, seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / 3 + shift
    y = (X[:, 0] + X[:, 1] > 2 * shift).astype(int)
    return X, y


def _parties(seed=0, M=20, size=10, d=3, n_aux=60):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(M * size, d)) / 2
    y = (X[:, 0] > 0).astype(int)
    return X, y, np.repeat(np.arange(M), size), rng.normal(size=(n_aux, d)) / 2


def _fitted(name, random_state):
    """One fitted estimator of each kind, composed and meta-estimators included."""
    X, y = _binary()
    Xs, ys = _binary(600, seed=1)
    c = [0, 1]
    if name == "PLR":
        return PrivateLogisticRegression(random_state=random_state, classes=c).fit(X, y)
    if name == "PLR-FS":
        return FeatureSplitLogisticRegression(groups=[[0, 1], [2, 3, 4, 5]], random_state=random_state, classes=c).fit(
            X, y
        )
    if name in ("PST-F", "PST-S"):
        partition = "features" if name == "PST-F" else "samples"
        return PrivateStackingClassifier(partition=partition, n_groups=3, random_state=random_state, classes=c).fit(
            X, y
        )
    if name == "PPTL-FS":
        return PrivateTransferStacking(n_groups=2, random_state=random_state, classes=c).fit(
            X, y, X_source=Xs, y_source=ys
        )
    if name == "SimComb":
        return SimComb(random_state=random_state, classes=c).fit(X, y, X_source=Xs, y_source=ys)
    if name.startswith("MPL-"):
        Xp, yp, parties, X_aux = _parties()
        return MultipartyPrivateClassifier(name[4:], random_state=random_state, classes=c).fit(Xp, yp, parties, X_aux)
    if name == "tuning(PLR)":
        return PrivateParameterTuning(
            PrivateLogisticRegression(classes=c), {"lam": [0.01, 0.1]}, random_state=random_state
        ).fit(X, y)
    if name == "tuning(PST-S)":
        template = PrivateStackingClassifier(partition="samples", n_groups=2, classes=c)
        return PrivateParameterTuning(template, {"lam": [0.01, 0.1]}, random_state=random_state).fit(*_binary(800))
    if name == "tuning(PPTL-FS)":
        template = PrivateTransferStacking(n_groups=2, random_state=random_state, classes=c).fit_source(Xs, ys)
        return PrivateParameterTuning(template, {"eta": [0.2, 0.8]}, random_state=random_state).fit(*_binary(800))
    if name == "tuning(SimComb)":
        template = SimComb(random_state=random_state, classes=c).fit_source(Xs, ys)
        return PrivateParameterTuning(template, {"eta": [0.2, 0.8]}, random_state=random_state).fit(X, y)
    raise AssertionError(name)


KINDS = [
    "PLR",
    "PLR-FS",
    "PST-F",
    "PST-S",
    "PPTL-FS",
    "SimComb",
    "MPL-soft",
    "MPL-vote",
    "MPL-avg",
    "tuning(PLR)",
    "tuning(PST-S)",
    "tuning(PPTL-FS)",
    "tuning(SimComb)",
]


def test_the_walker_finds_every_kind_of_randomness():
    """The walker itself: a seed or generator hidden at any depth is found (else the tests below prove nothing)."""

    @dataclasses.dataclass
    class Box:
        inner: object

    class Holder:
        def __init__(self, **kw):
            vars(self).update(kw)

    planted = Holder(
        a={"x": [Box(np.random.default_rng(0))]},
        b=(np.array([None, np.random.SeedSequence(1)], dtype=object),),
        c=Holder(random_state=7),
        d=np.random.RandomState(0),
        e=[np.random.PCG64(0)],
    )
    found = _randomness(planted)
    assert len(found) == 5, found
    assert _randomness(Holder(random_state=None, a=[1, 2.0, "s"])) == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_default_fitted_object_holds_no_seed_or_generator(kind):
    est = _fitted(kind, None)
    assert _randomness(est) == []


@pytest.mark.parametrize("kind", KINDS)
def test_with_an_int_seed_only_the_users_own_parameter_holds_it(kind):
    est = _fitted(kind, 3)
    allow = ("est.random_state", "est.estimator.random_state")  # the user's parameters (the tuner's template)
    assert _randomness(est, allow=allow) == []


@pytest.mark.parametrize("kind", ["PLR-FS", "PST-F", "PST-S", "SimComb", "MPL-soft", "tuning(PST-S)"])
def test_diagnostics_objects_keep_no_seed_either(kind):
    est = _fitted(kind, None).set_params(diagnostics=True)
    X, y = _binary()
    Xs, ys = _binary(600, seed=1)
    if kind == "SimComb":
        est.fit(X, y, X_source=Xs, y_source=ys)
    elif kind == "MPL-soft":
        Xp, yp, parties, X_aux = _parties()
        est.fit(Xp, yp, parties, X_aux)
    else:
        est.fit(X, y)
    assert _randomness(est) == []


def test_a_diagnostics_tuner_keeps_every_candidate_without_its_seed():
    """With diagnostics=True the tuner keeps all G candidates (the audit reads their noise): none keeps the
    stream the tuner gave it, even when the tuner's own seed is an int."""
    est = _fitted("tuning(PST-S)", 3).set_params(diagnostics=True).fit(*_binary(800))
    assert len(est.diagnostics_.candidates) == 2
    assert est.diagnostics_.candidates[est.best_index_] is est.best_estimator_
    assert _randomness(est, allow=("est.random_state", "est.estimator.random_state")) == []


def test_fit_methods_holds_no_seed():
    Xp, yp, parties, X_aux = _parties()
    for est in fit_methods(("soft", "vote", "avg"), Xp, yp, parties, X_aux, classes=[0, 1]).values():
        assert _randomness(est) == []


# ---------------------------------------------------------------- the attack
def _regenerated(level):
    """The noise an attacker rebuilds from the seed a fitted level keeps (fresh noise when it keeps none)."""
    rng = np.random.default_rng(level.random_state)
    cal = level.calibration_
    if isinstance(level, FeatureSplitLogisticRegression):
        return [isotropic_noise(np.size(w), s, rng) for w, s in zip(level.block_coefs_, cal.noise_scale_k)]
    return [isotropic_noise(level.w_.size, cal.noise_scale, rng)]


def _same(rebuilt, drawn):
    return all(np.allclose(a, b, rtol=1e-6, atol=1e-8) for a, b in zip(rebuilt, drawn, strict=True))


def test_the_noise_of_a_default_simcomb_cannot_be_rebuilt_from_the_object():
    X, y = _binary()
    Xs, ys = _binary(600, seed=1)
    sc = SimComb(classes=[0, 1]).fit(X, y, X_source=Xs, y_source=ys)  # random_state=None: the default
    # the drawn noise, read back exactly from the released w and the data (stationarity)
    source_noise, target_noise = (b.noise for b in recover_noise(sc, X, y, {"X_source": Xs, "y_source": ys}))
    assert not _same(_regenerated(sc.target_), [target_noise])
    assert not _same(_regenerated(sc.source_), [source_noise])


def test_the_noise_of_a_default_pptl_source_cannot_be_rebuilt_from_the_object():
    Xs, ys = _binary(600, seed=1)
    est = PrivateTransferStacking(n_groups=2, classes=[0, 1]).fit_source(Xs, ys)  # random_state=None
    # the source's drawn noise, read back exactly from its released blocks and the source data
    drawn = [b.noise for b in _plrfs_noise(est.source_, est.bounded_design(Xs), np.where(ys == 1, 1.0, -1.0))]
    assert not _same(_regenerated(est.source_), drawn)


@pytest.mark.parametrize("partition", ["features", "samples"])
def test_the_noise_of_the_stacking_levels_cannot_be_rebuilt_from_the_object(partition):
    X, y = _binary(800)
    est = PrivateStackingClassifier(partition=partition, n_groups=3, classes=[0, 1], diagnostics=True).fit(X, y)
    diag = est.diagnostics_
    assert not _same(_regenerated(est.high_level_), [diag.high_level.noise])
    if partition == "samples":
        for level, d in zip(est.low_level_, diag.low_level):
            assert not _same(_regenerated(level), [d.noise])
    else:
        assert not _same(_regenerated(est.low_level_), diag.low_level.noises)


def test_rebuilding_the_noise_from_a_kept_seed_would_succeed():
    """The attack's control: it works whenever the seed is known (here the user's own outer seed)."""
    X, y = _binary()
    Xs, ys = _binary(600, seed=1)
    sc = SimComb(classes=[0, 1], random_state=11).fit(X, y, X_source=Xs, y_source=ys)
    _, target_noise = (b.noise for b in recover_noise(sc, X, y, {"X_source": Xs, "y_source": ys}))
    from dpstack.transfer import _domain_streams

    rebuilt = isotropic_noise(target_noise.size, sc.target_.calibration_.noise_scale, _domain_streams(11)[1])
    assert _same([rebuilt], [target_noise])


# ---------------------------------------------------------------- independent streams
def test_fit_methods_soft_and_avg_draw_independent_noise():
    Xp, yp, parties, X_aux = _parties()
    fits = fit_methods(("soft", "avg"), Xp, yp, parties, X_aux, classes=[0, 1], random_state=0, diagnostics=True)
    soft, avg = fits["soft"].diagnostics_.noise, fits["avg"].diagnostics_.noise
    # the directions of two independent isotropic draws are not (anti)parallel
    cos = float(soft.ravel() @ avg.ravel() / (np.linalg.norm(soft) * np.linalg.norm(avg)))
    assert abs(cos) < 0.99, cos
    # and the difference of the released models is not the difference of the unperturbed ones
    diff = fits["soft"].coef_ - fits["avg"].coef_
    unperturbed = fits["soft"].diagnostics_.unperturbed_coef - fits["avg"].diagnostics_.unperturbed_coef
    assert not np.allclose(diff, unperturbed)
    # fit_methods stays equivalent to fitting each method alone with the same random_state
    alone = MultipartyPrivateClassifier("avg", classes=[0, 1], random_state=0).fit(Xp, yp, parties)
    np.testing.assert_array_equal(alone.coef_, fits["avg"].coef_)


def test_the_levels_of_one_seeded_fit_draw_from_different_streams():
    """PST-S with an int seed: the K low-level models and the high level never reuse one stream."""
    X, y = _binary(800)
    est = PrivateStackingClassifier(partition="samples", n_groups=3, random_state=0, classes=[0, 1], diagnostics=True)
    est.fit(X, y)
    noises = [m.noise for m in est.diagnostics_.low_level] + [est.diagnostics_.high_level.noise]
    directions = [b / np.linalg.norm(b) for b in noises if b.size == noises[0].size]
    for i in range(len(directions)):
        for j in range(i):
            assert abs(directions[i] @ directions[j]) < 0.99


def test_default_fits_draw_fresh_noise_at_every_level():
    X, y = _binary()
    a = PrivateStackingClassifier(n_groups=2, classes=[0, 1], diagnostics=True).fit(X, y)
    b = PrivateStackingClassifier(n_groups=2, classes=[0, 1], diagnostics=True).fit(X, y)
    assert not np.allclose(a.diagnostics_.high_level.noise, b.diagnostics_.high_level.noise)


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (True, TypeError), ("0", TypeError)])
def test_a_bad_random_state_is_refused_by_name(bad, error):
    X, y = _binary()
    with pytest.raises(error, match="random_state"):
        PrivateStackingClassifier(n_groups=2, random_state=bad, classes=[0, 1]).fit(X, y)


def test_a_seed_sequence_gives_the_same_streams_on_every_fit():
    X, y = _binary()
    ss = np.random.SeedSequence(9)
    a = PrivateStackingClassifier(n_groups=2, random_state=ss, classes=[0, 1]).fit(X, y)
    b = PrivateStackingClassifier(n_groups=2, random_state=ss, classes=[0, 1]).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert ss.n_children_spawned == 0  # the user's SeedSequence is not changed
