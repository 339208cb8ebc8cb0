"""Input checks shared by every estimator: clear errors naming the parameter."""

from __future__ import annotations

import numbers

import numpy as np


def check_random_state(random_state):
    """Turn None, an int, a SeedSequence or a Generator into a ``numpy.random.Generator``.

    A Generator is returned as is (so a caller can thread one stream through
    several mechanisms); anything else seeds a new one (``None``: fresh entropy from the OS).
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool) and random_state < 0:
        raise ValueError(f"random_state must be None or an int >= 0, got {random_state!r}")
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        if isinstance(random_state, bool):
            raise TypeError(
                f"random_state must be None, an int >= 0, a SeedSequence or a Generator, got {random_state!r}"
            )
        return np.random.default_rng(random_state)
    raise TypeError(
        "random_state must be None, an int, a numpy.random.SeedSequence or a "
        f"numpy.random.Generator, got {type(random_state).__name__}"
    )


def spawn_streams(random_state, n):
    """``n`` independent random streams, one per mechanism (or level, domain, method) of a fit.

    Each returned item is accepted by :func:`check_random_state`:

    - ``None`` gives ``n`` times ``None``: every mechanism draws fresh entropy from the OS,
      and nothing that could regenerate a draw exists anywhere;
    - an int ``s`` gives the children ``numpy.random.SeedSequence(s).spawn(n)`` (never the
      same int reused for two mechanisms); a SeedSequence gives its children in the same way.
      They are built without changing the given SeedSequence, so a refit with the same
      ``random_state`` draws the same streams;
    - a Generator gives ``Generator.spawn(n)``: independent child generators (the given one
      advances, as a Generator threaded through several calls should).

    References
    ----------
    NumPy, "Parallel random number generation" (``SeedSequence.spawn``).
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    if random_state is None:
        return [None] * int(n)
    check_random_state(random_state)  # the type and range checks, with their messages
    if isinstance(random_state, np.random.Generator):
        if hasattr(random_state, "spawn"):
            return random_state.spawn(int(n))
        # NumPy < 1.25 has no Generator.spawn; this is what it does (same children, same bits)
        bit_generator = random_state.bit_generator
        return [np.random.Generator(type(bit_generator)(s)) for s in bit_generator._seed_seq.spawn(int(n))]
    if isinstance(random_state, np.random.SeedSequence):
        root = random_state
        return [
            np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, i), pool_size=root.pool_size)
            for i in range(int(n))
        ]
    return [np.random.SeedSequence(int(random_state), spawn_key=(i,)) for i in range(int(n))]


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
    if X.shape[0] == 0:
        raise ValueError(f"{name} has 0 sample(s) (shape={X.shape}) while a minimum of 1 is required.")
    if X.shape[1] == 0:
        raise ValueError(f"{name} has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or infinity")
    return X


def check_feature_groups(groups, n_features):
    """K disjoint, non-empty groups of integer feature indices in [0, n_features).

    Returns the groups as 1-D int arrays, in the order given.
    """
    groups = [np.asarray(g).ravel() for g in groups]
    if len(groups) > n_features:
        raise ValueError(
            f"groups: K = {len(groups)} groups (n_groups) cannot exceed the number of features ({n_features})"
        )
    seen = np.zeros(n_features, dtype=bool)
    for k, g in enumerate(groups):
        if g.size == 0:
            raise ValueError(f"groups: group {k} is empty; every feature group needs at least one feature")
        if g.dtype.kind not in "iu":
            raise ValueError(f"groups: group {k} must hold integer feature indices, got dtype {g.dtype}")
        if g.min() < 0 or g.max() >= n_features:
            raise ValueError(f"groups: group {k} has feature indices outside [0, {n_features})")
        if np.any(seen[g]) or np.unique(g).size != g.size:
            raise ValueError(f"groups must be disjoint; group {k} repeats a feature")
        seen[g] = True
    return [g.astype(int) for g in groups]


# --------------------------------------------------------------------------------------------------
# Declared parameter constraints (scikit-learn's ``_parameter_constraints`` style).
#
# Every estimator declares a table ``_parameter_constraints = {name: [constraint, ...]}`` built from
# the atoms below, and its ``fit`` (and ``fit_source``) calls :func:`validate_params` first, before
# any state changes. The checks are scikit-learn's own machinery
# (``sklearn.utils._param_validation``); the error is an ``InvalidParameterError`` (a ``ValueError``
# and a ``TypeError``) naming the parameter, the estimator and the accepted values. What a single
# value cannot tell (a length that depends on X, ``intercept_scaling < norm_bound``, disjoint
# groups) is checked in ``fit`` after this table, with messages that also name the parameter.
# --------------------------------------------------------------------------------------------------

from numbers import Integral, Real  # noqa: E402

from sklearn.utils._param_validation import (  # noqa: E402
    HasMethods,
    Interval,
    InvalidParameterError,
    StrOptions,
    validate_parameter_constraints,
)

__all__ = [
    "check_random_state",
    "spawn_streams",
    "check_epsilon",
    "check_positive",
    "check_X",
    "check_feature_groups",
    "Number",
    "NonEmpty",
    "EPSILON",
    "POSITIVE",
    "TOL",
    "MAX_ITER",
    "RANDOM_STATE",
    "BOOLEAN",
    "CLASSES",
    "ARRAY",
    "ARRAY_OR_NONE",
    "HasMethods",
    "StrOptions",
    "InvalidParameterError",
    "validate_params",
    "validate_function_params",
]


class Number(Interval):
    """scikit-learn's ``Interval`` that refuses ``True``/``False`` (a bool is not a number here).

    ``desc``, when given, replaces the interval's wording in messages (e.g. ``"a float > 0 or
    np.inf"`` for ε, whose interval (0, inf] scikit-learn would print as ``(0.0, inf)``).
    """

    def __init__(self, type, left, right, *, closed, desc=None):
        super().__init__(type, left, right, closed=closed)
        self.desc = desc

    def is_satisfied_by(self, val):
        if isinstance(val, (bool, np.bool_)):
            return False
        return super().is_satisfied_by(val)

    def __str__(self):
        return self.desc if self.desc is not None else super().__str__()


class NonEmpty(HasMethods):
    """A list, tuple or array (anything with ``__array__``) with at least one entry (e.g. feature ``groups``).

    (A ``HasMethods`` constraint only so that scikit-learn's ``make_constraint`` takes it as is.)
    """

    def __init__(self, what="a non-empty list"):
        super().__init__(["__len__"])
        self.what = what

    def is_satisfied_by(self, val):
        if isinstance(val, np.ndarray):
            return val.ndim >= 1 and val.shape[0] > 0
        if hasattr(val, "__array__") and not isinstance(val, (str, bytes, dict)):  # pandas, array API
            return np.ndim(val) >= 1 and len(val) > 0
        return isinstance(val, (list, tuple)) and len(val) > 0

    def __str__(self):
        return self.what


#: ε of a mechanism: > 0, ``np.inf`` for non-private
EPSILON = [Number(Real, 0, np.inf, closed="right", desc="a float > 0 (np.inf for non-private)")]
#: a finite number > 0 (λ, bounds, scales)
POSITIVE = [Number(Real, 0, np.inf, closed="neither", desc="a finite float > 0")]
TOL = [Number(Real, 0, np.inf, closed="neither", desc="a finite float > 0")]
MAX_ITER = [Number(Integral, 1, None, closed="left", desc="an int >= 1")]
RANDOM_STATE = [
    None,
    Number(Integral, 0, None, closed="left", desc="an int >= 0"),
    np.random.Generator,
    np.random.SeedSequence,
]
BOOLEAN = ["boolean"]
CLASSES = [None, NonEmpty("a non-empty 1-D list of labels")]
#: a list, tuple or array (not a dict, a string or a number); its content is checked in fit
ARRAY = NonEmpty("a non-empty list or array")
ARRAY_OR_NONE = [None, ARRAY]


def validate_params(estimator):
    """Check ``estimator``'s parameters against its declared ``_parameter_constraints`` table.

    Raises ``InvalidParameterError`` (a ``ValueError`` and a ``TypeError``) naming the
    parameter, the estimator and the accepted values; returns None.
    """
    cls = type(estimator)
    validate_parameter_constraints(
        cls._parameter_constraints, estimator.get_params(deep=False), caller_name=cls.__name__
    )


def validate_function_params(constraints, caller_name, **params):
    """The same check for a public function's arguments (``constraints`` declared next to it)."""
    validate_parameter_constraints(constraints, params, caller_name=caller_name)
