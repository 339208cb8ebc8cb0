"""Input checks shared by every estimator: clear errors naming the parameter."""

from __future__ import annotations

import numbers

import numpy as np


def check_random_state(random_state):
    """Turn None, an int, a SeedSequence or a Generator into a ``numpy.random.Generator``.

    A Generator is returned as is (so a caller can thread one stream through
    several mechanisms); anything else seeds a new one.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        return np.random.default_rng(random_state)
    raise TypeError(
        "random_state must be None, an int, a numpy.random.SeedSequence or a "
        f"numpy.random.Generator, got {type(random_state).__name__}"
    )


def check_epsilon(epsilon, name="epsilon"):
    """ε must be a number > 0; ``np.inf`` means non-private."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise TypeError(f"{name} must be a real number > 0 (np.inf for non-private), got {epsilon!r}")
    epsilon = float(epsilon)
    if np.isnan(epsilon) or epsilon <= 0:
        raise ValueError(f"{name} must be > 0 (np.inf for non-private), got {epsilon!r}")
    return epsilon


def check_positive(value, name):
    """A finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a finite real number > 0, got {value!r}")
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite real number > 0, got {value!r}")
    return value


def check_X(X, name="X"):
    """A finite 2-D float array."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} must have at least one sample and one feature, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or infinity")
    return X


def check_feature_groups(groups, n_features):
    """K disjoint, non-empty groups of integer feature indices in [0, n_features).

    Returns the groups as 1-D int arrays, in the order given.
    """
    groups = [np.asarray(g).ravel() for g in groups]
    if len(groups) > n_features:
        raise ValueError(f"n_groups (K = {len(groups)}) cannot exceed the number of features ({n_features})")
    seen = np.zeros(n_features, dtype=bool)
    for k, g in enumerate(groups):
        if g.size == 0:
            raise ValueError(f"group {k} is empty; every feature group needs at least one feature")
        if g.dtype.kind not in "iu":
            raise ValueError(f"group {k} must hold integer feature indices, got dtype {g.dtype}")
        if g.min() < 0 or g.max() >= n_features:
            raise ValueError(f"group {k} has feature indices outside [0, {n_features})")
        if np.any(seen[g]) or np.unique(g).size != g.size:
            raise ValueError(f"groups must be disjoint; group {k} repeats a feature")
        seen[g] = True
    return [g.astype(int) for g in groups]
