"""One validator for the notebooks' papermill parameters: fail in seconds, naming the parameter.

Every notebook of the book checks its parameters in the cell right after the parameters cell
(and after anything papermill injected), with :func:`check_parameters`. A value that would
make the page vacuous (no draws, a one-point curve, an empty ε grid) or fail minutes later
("'int' object is not iterable") stops the run at once with the parameter's name, so a
re-run never overwrites a committed notebook with an empty table.

A parameter the page does not declare is refused too. papermill only warns ("Passed unknown
parameter") and runs the page with its defaults, so ``-p epsilons "[0.05, 0.1]"`` on a page
without that parameter would silently render the committed results. :func:`check_parameters`
reads the cell papermill injected (from the kernel's input history, ``In``) and fails, listing
the page's parameters, when it assigns a name the page does not check.
"""

from __future__ import annotations

import ast
import math
import numbers

from dpstack.mechanisms import SMALLEST_EPSILON

__all__ = [
    "RULES",
    "check_parameters",
    "injected_parameters",
    "ParameterError",
    "is_real",
    "is_int",
    "choices",
    "one_of",
    "ints",
    "positive_reals",
    "nonnegative_reals",
    "count",
]

PROFILES = ("smoke", "quick", "paper")


class ParameterError(ValueError):
    """A notebook parameter has a value the page cannot use."""


def _real(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and not math.isnan(v)


def _int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def is_real(v):
    """A real number, not a bool and not NaN."""
    return _real(v)


def is_int(v):
    """An integer, not a bool."""
    return _int(v)


def _seq(v):
    return isinstance(v, (list, tuple)) and len(v) >= 1


def _distinct(v):
    return len(set(v)) == len(v)


# ------------------------------------------------------------------ rules built for one knob: (check, expected)
def choices(allowed):
    """A non-empty list of distinct names from ``allowed``."""
    allowed = tuple(allowed)

    def ok(v):
        return _seq(v) and _distinct(v) and all(isinstance(x, str) and x in allowed for x in v)

    return ok, f"a non-empty list of distinct names from {list(allowed)}"


def one_of(allowed):
    """One name of ``allowed``."""
    allowed = tuple(allowed)
    return (lambda v: isinstance(v, str) and v in allowed), f"one of {list(allowed)}"


def ints(low, high=None, min_len=1):
    """A list of at least ``min_len`` distinct integers from ``low`` (to ``high``)."""

    def ok(v):
        return (
            _seq(v)
            and len(v) >= min_len
            and _distinct(v)
            and all(_int(x) and x >= low and (high is None or x <= high) for x in v)
        )

    rng = f">= {low}" if high is None else f"from {low} to {high}"
    return ok, f"a list of at least {min_len} distinct integers {rng}"


def positive_reals(note=None):
    """A non-empty list of distinct finite numbers > 0 (``note``: what they are, said in brackets)."""

    def ok(v):
        return _seq(v) and _distinct(v) and all(_real(x) and math.isfinite(x) and x > 0 for x in v)

    return ok, "a non-empty list of distinct finite numbers > 0" + (f" ({note})" if note else "")


def nonnegative_reals(note=None):
    """A non-empty list of distinct finite numbers >= 0 (``note``: what they are, said in brackets)."""

    def ok(v):
        return _seq(v) and _distinct(v) and all(_real(x) and math.isfinite(x) and x >= 0 for x in v)

    return ok, "a non-empty list of distinct finite numbers >= 0" + (f" ({note})" if note else "")


def count(low):
    """An integer >= ``low``."""
    return (lambda v: _int(v) and v >= low), f"an integer >= {low}"


def _epsilon(v):
    return _real(v) and v >= SMALLEST_EPSILON  # the estimators' own bound (float('inf'): non-private)


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


#: the most repeats a page or the command line accepts (a grid is built in memory before it runs)
MAX_REPEATS = 1000

#: parameter name -> (check, what a valid value is)
RULES = {
    "profile": (lambda v: v in PROFILES, f"one of {PROFILES}"),
    "epsilon": (_epsilon, f"a number >= {SMALLEST_EPSILON:g} (float('inf') for non-private)"),
    "epsilon_source": (_epsilon, f"a number >= {SMALLEST_EPSILON:g}"),
    "epsilon_target": (_epsilon, f"a number >= {SMALLEST_EPSILON:g}"),
    "epsilons": (_list_of(_epsilon), f"a non-empty list of numbers >= {SMALLEST_EPSILON:g}, e.g. [0.1, 1.0]"),
    "figure_epsilons": (_list_of(_epsilon), f"a non-empty list of numbers >= {SMALLEST_EPSILON:g}"),
    "delta": (lambda v: _real(v) and 0 < v < 1, "a number strictly between 0 and 1, e.g. 1e-5"),
    "n_steps": (lambda v: _int(v) and 1 <= v <= 100_000, "an integer from 1 to 100,000"),
    "candidate_counts": (
        _list_of(lambda x: _int(x) and 1 <= x <= 1000, distinct=True),
        "a non-empty list of distinct integers from 1 to 1,000",
    ),
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
    "n_repeats": (
        lambda v: _int(v) and 2 <= v <= MAX_REPEATS,
        f"an integer from 2 (an interval needs two repeats) to {MAX_REPEATS:,}",
    ),
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
    "data_path": (
        lambda v: isinstance(v, str) and v.endswith((".csv", ".npy")),
        "a path to a .csv or .npy file",
    ),
    "source_path": (
        lambda v: v is None or (isinstance(v, str) and v.endswith((".csv", ".npy"))),
        "None or a path to a .csv or .npy file with the same columns",
    ),
    "label": (
        lambda v: (isinstance(v, str) and v != "") or _int(v),
        "the label column: a name (CSV) or an index (.npy)",
    ),
    "classes": (
        lambda v: isinstance(v, (list, tuple)) and len(v) == 2 and v[0] != v[1],
        "the two public labels, negative first, e.g. [0, 1]",
    ),
    "norm_bound": (_positive, "a finite number > 0 (a public bound on the rows' norms)"),
    "feature_importance": (
        lambda v: (
            v is None
            or v == "variance"
            or (isinstance(v, (list, tuple)) and len(v) >= 1 and all(_real(x) and x >= 0 for x in v) and sum(v) > 0)
        ),
        "None, 'variance' or a list of numbers >= 0 (one per feature)",
    ),
    "groups": (
        lambda v: (
            v is None
            or (isinstance(v, (list, tuple)) and len(v) >= 1 and all(isinstance(g, (list, tuple)) and g for g in v))
        ),
        "None or a list of non-empty lists of feature indices",
    ),
    "lam_grid": (
        lambda v: v is None or _list_of(_positive)(v),
        "None (λ fixed) or a non-empty list of finite numbers > 0",
    ),
    "eta": (lambda v: _real(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "n_power_repeats": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "audit_profile": (lambda v: v in ("default", "page"), "'default' (the size tests use) or 'page' (heavier)"),
}


#: The first line of the cell papermill injects for ``-p`` parameters (its Python translator).
INJECTED_HEADER = "# Parameters"


def injected_parameters(namespace):
    """Names assigned by the cell papermill injected, read from the kernel's input history.

    ``namespace`` is a notebook's ``globals()``: IPython keeps the source of every executed cell
    in ``In``. The injected cell starts with the line ``# Parameters`` (a page's own parameters
    cell says more after it). Returns ``[]`` outside a kernel or when nothing was injected.
    """
    history = namespace.get("In")
    if not isinstance(history, list):
        return []
    for source in reversed(history):
        if isinstance(source, str) and source.splitlines()[:1] == [INJECTED_HEADER]:
            try:
                tree = ast.parse(source)
            except SyntaxError:
                return []
            return [
                target.id
                for node in tree.body
                if isinstance(node, ast.Assign)
                for target in node.targets
                if isinstance(target, ast.Name)
            ]
    return []


def check_parameters(namespace, *names):
    """Check the notebook parameters ``names`` found in ``namespace`` (the notebook's ``globals()``).

    Raises
    ------
    ParameterError
        For a parameter injected by papermill that is not one of ``names`` (the message lists the
        page's parameters), and naming the first parameter whose value is unusable, what it got
        and what is expected. Every problem is listed when there are several.
    """
    unknown = [n for n in injected_parameters(namespace) if n not in names]
    if unknown:
        raise ParameterError(
            f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: this page's "
            f"parameters are {', '.join(names)}"
        )
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
