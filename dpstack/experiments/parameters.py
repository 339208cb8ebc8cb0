"""One validator for the notebooks' papermill parameters: fail in seconds, naming the parameter.

Every notebook of the book checks its parameters in the cell right after the parameters cell
(and after anything papermill injected), with :func:`check_parameters`. A value that would
make the page vacuous (no draws, a one-point curve, an empty ε grid) or fail minutes later
("'int' object is not iterable") stops the run at once with the parameter's name, so a
re-run never overwrites a committed notebook with an empty table.
"""

from __future__ import annotations

import math
import numbers

__all__ = ["RULES", "check_parameters", "ParameterError"]

PROFILES = ("smoke", "quick", "paper")


class ParameterError(ValueError):
    """A notebook parameter has a value the page cannot use."""


def _real(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and not math.isnan(v)


def _int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _epsilon(v):
    return _real(v) and v > 0


def _positive(v):
    return _real(v) and math.isfinite(v) and v > 0


def _list_of(check, min_len=1, distinct=False):
    def ok(v):
        return (
            isinstance(v, (list, tuple))
            and len(v) >= min_len
            and all(check(x) for x in v)
            and (not distinct or len(set(v)) == len(v))
        )

    return ok


def _importance(v):
    return (
        isinstance(v, (list, tuple)) and len(v) >= 1 and all(_real(x) and x >= 0 for x in v) and abs(sum(v) - 1) < 1e-8
    )


#: parameter name -> (check, what a valid value is)
RULES = {
    "profile": (lambda v: v in PROFILES, f"one of {PROFILES}"),
    "epsilon": (_epsilon, "a number > 0 (float('inf') for non-private)"),
    "epsilon_source": (_epsilon, "a number > 0"),
    "epsilon_target": (_epsilon, "a number > 0"),
    "epsilons": (_list_of(_epsilon), "a non-empty list of numbers > 0, e.g. [0.1, 1.0]"),
    "figure_epsilons": (_list_of(_epsilon), "a non-empty list of numbers > 0"),
    "lam": (_positive, "a finite number > 0"),
    "lams": (_list_of(_positive), "a non-empty list of finite numbers > 0"),
    "n_grid": (
        _list_of(lambda x: _int(x) and x >= 4, min_len=2, distinct=True),
        "a list of at least two distinct sample sizes >= 4 (a curve needs two points)",
    ),
    "n_parties_grid": (
        _list_of(lambda x: _int(x) and x >= 1, min_len=2, distinct=True),
        "a list of at least two distinct integers >= 1",
    ),
    "class_counts": (_list_of(lambda x: _int(x) and x >= 2), "a non-empty list of integers >= 2"),
    "n_repeats": (lambda v: _int(v) and v >= 2, "an integer >= 2 (an interval needs two repeats)"),
    "n_draws": (lambda v: _int(v) and v >= 2, "an integer >= 2"),
    "n_trials": (lambda v: _int(v) and v >= 2, "an integer >= 2"),
    "pool_size": (lambda v: _int(v) and v >= 2, "an integer >= 2"),
    "n_parties": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "n_groups": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "K": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "d": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "n_jobs": (lambda v: _int(v) and (v >= 1 or v == -1), "an integer >= 1, or -1 for all cores"),
    "seed": (lambda v: _int(v) and v >= 0, "an integer >= 0"),
    "random_state": (lambda v: _int(v) and v >= 0, "an integer >= 0"),
    "fit_on": (lambda v: v in ("aux", "private", "public"), "'aux', 'private' or 'public'"),
    "dataset": (lambda v: isinstance(v, str) and v.isidentifier(), "a dataset name such as 'kdd'"),
    "importance": (_importance, "a list of numbers >= 0 summing to 1"),
    "data_home": (lambda v: v is None or isinstance(v, str), "None or a folder path"),
    "n_power_repeats": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "audit_profile": (lambda v: v in ("default", "page"), "'default' (the size tests use) or 'page' (heavier)"),
}


def check_parameters(namespace, *names):
    """Check the notebook parameters ``names`` found in ``namespace`` (the notebook's ``globals()``).

    Raises
    ------
    ParameterError
        Naming the first parameter whose value is unusable, what it got and what is expected.
        Every problem is listed when there are several.
    """
    problems = []
    for name in names:
        if name not in RULES:
            raise KeyError(f"no validation rule for notebook parameter {name!r}; add one to RULES")
        if name not in namespace:
            problems.append(f"parameter {name!r} is missing")
            continue
        check, expected = RULES[name]
        value = namespace[name]
        if not check(value):
            problems.append(f"parameter {name} = {value!r}: expected {expected}")
    if problems:
        raise ParameterError("; ".join(problems))
