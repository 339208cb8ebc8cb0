"""(ε, δ) accounting for today's alternatives, on top of Google's dp-accounting.

Every guarantee here is computed by dp-accounting's accountants (``"PLD"``: privacy loss
distributions; ``"RDP"``: Rényi DP) from ``dp_event`` objects; this module only builds the
events, calibrates noise by searching over them, and records the result in a
:class:`Guarantee`. dp-accounting 0.6.0 has no PRV accountant, so none is offered.

**Noise multipliers and neighbouring relations.** A noise multiplier ``z`` is always
``σ / C``: the standard deviation of the Gaussian noise added to a *sum* of per-record
contributions, each of L2 norm at most ``C`` (the clipping norm). ``C`` is the sensitivity
of the sum under **add/remove** (one record added or removed). Under **replace-one** (one
record replaced by another, n fixed) the sum moves by up to ``2C``; the accounting, not the
multiplier, pays for that factor 2:

- without subsampling, the event is accounted as a Gaussian of multiplier ``z / 2``
  (sensitivity 2C); dp-accounting's PLD accountant does exactly this for its
  ``REPLACE_ONE`` relation, while its RDP accountant ignores the relation for a
  ``GaussianDpEvent``, so the halving is done here, once, for both;
- with Poisson subsampling (probability q per record), dp-accounting's PLD accountant
  analyses replace-one directly (the record's contribution moves from −C·e to +C·e, each
  present with probability q); its RDP accountant supports only add/remove for Poisson
  sampling, so ``accountant="RDP"`` with replace-one and q < 1 is refused.

Replace-one is the relation of the papers' methods (and of
:class:`~dpstack.PrivateLogisticRegression`); add/remove is the one of the standard
DP-SGD analysis (Abadi et al. 2016) and of DP-FedAvg (McMahan et al. 2018).

References
----------
M. Abadi et al. Deep learning with differential privacy. CCS 2016.
J. Dong, A. Roth, W. J. Su. Gaussian differential privacy. JRSS B 84(1), 2022.
J. Liu, K. Talwar. Private selection from private candidates. STOC 2019.
N. Papernot, T. Steinke. Hyperparameter tuning with Rényi differential privacy. ICLR 2022.
Google's dp-accounting library (``dp_accounting``): ``PLDAccountant``, ``RdpAccountant``,
``calibrate_dp_mechanism``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from numbers import Integral, Real

import dp_accounting
import numpy as np
from dp_accounting.dp_event import RepeatAndSelectDpEvent
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import optimize
from scipy.special import log_ndtr

from .._validation import Number, StrOptions, validate_function_params

__all__ = [
    "NEIGHBOURING",
    "ACCOUNTANTS",
    "Guarantee",
    "gaussian_event",
    "gaussian_noise_multiplier",
    "epsilon_of",
    "gdp_mu",
    "gdp_delta",
    "gdp_epsilon",
    "pure_to_approx",
    "repeat_and_select_epsilon",
    "liu_talwar_epsilon",
]

#: the neighbouring relations: one record replaced (n fixed), or one record added or removed
NEIGHBOURING = ("replace-one", "add/remove")
#: dp-accounting's accountants offered here (0.6.0 has no PRV accountant)
ACCOUNTANTS = ("PLD", "RDP")
#: PLD discretisation used while calibrating, relative to the target ε: ε/2000, within
#: [1e-4, 0.01]. Coarser than dp-accounting's default (1e-4) for ε > 0.2, and several times
#: faster; its pessimistic estimate is still an upper bound on ε, within about 0.1 % of the
#: finer one.
CALIBRATION_DISCRETIZATION = 1 / 2000
#: shapes of dp-accounting's RepeatAndSelectDpEvent (Papernot & Steinke 2022)
DISTRIBUTIONS = {"poisson": math.inf, "geometric": 1.0, "logarithmic": 0.0}

_NR = dp_accounting.NeighboringRelation
_EPSILON = Number(Real, 0, np.inf, closed="right", desc="a float > 0 (np.inf for non-private)")
_DELTA = Number(Real, 0, 1, closed="neither", desc="a float in (0, 1)")
_STEPS = Number(Integral, 1, None, closed="left", desc="an int >= 1")
_PROBABILITY = Number(Real, 0, 1, closed="right", desc="a float in (0, 1]")
_MULTIPLIER = Number(Real, 0, np.inf, closed="right", desc="a float > 0 (np.inf: no privacy loss)")
_RELATION = StrOptions(set(NEIGHBOURING))
_ACCOUNTANT = StrOptions(set(ACCOUNTANTS))


@dataclass(frozen=True)
class Guarantee:
    """What a release of today's alternatives guarantees: (ε, δ)-DP for a stated unit and relation.

    Attributes
    ----------
    epsilon : float
        ε ≥ 0 (``inf``: no guarantee).
    delta : float
        δ in [0, 1] (0 for pure ε-DP).
    neighbouring : {"replace-one", "add/remove"}
        What two neighbouring datasets differ in: one unit replaced by another (the number
        of units fixed), or one unit added or removed.
    unit : str
        The privacy unit: ``"one sample"``, ``"one party"``, ``"one teacher"``.
    accountant : str
        How ε was obtained: ``"PLD"`` or ``"RDP"`` (dp-accounting), ``"pure"`` (a pure ε-DP
        theorem), ``"none"`` (non-private, ε = ∞).
    assumptions : tuple of str
        What the guarantee takes for granted (public hyper-parameters, a public n, …).

    Examples
    --------
    >>> g = Guarantee(1.0, 1e-5, "replace-one", "one sample", "PLD", ("n is public",))
    >>> str(g)
    '(ε = 1, δ = 1e-05)-DP, replace-one, unit: one sample, accountant: PLD'
    """

    epsilon: float
    delta: float
    neighbouring: str
    unit: str
    accountant: str
    assumptions: tuple = ()

    def __post_init__(self):
        for name in ("epsilon", "delta"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real) or math.isnan(value):
                raise TypeError(f"Guarantee: {name} must be a real number, got {value!r}")
            object.__setattr__(self, name, float(value))
        if self.epsilon < 0:
            raise ValueError(f"Guarantee: epsilon must be >= 0, got {self.epsilon!r}")
        if not 0 <= self.delta <= 1:
            raise ValueError(f"Guarantee: delta must be in [0, 1], got {self.delta!r}")
        if self.neighbouring not in NEIGHBOURING:
            raise ValueError(f"Guarantee: neighbouring must be one of {NEIGHBOURING}, got {self.neighbouring!r}")
        for name in ("unit", "accountant"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"Guarantee: {name} must be a non-empty string, got {getattr(self, name)!r}")
        assumptions = (self.assumptions,) if isinstance(self.assumptions, str) else tuple(self.assumptions)
        if not all(isinstance(a, str) for a in assumptions):
            raise ValueError(f"Guarantee: assumptions must be strings, got {self.assumptions!r}")
        object.__setattr__(self, "assumptions", assumptions)

    @property
    def pure(self):
        """Whether the guarantee is pure ε-DP (δ = 0)."""
        return self.delta == 0.0

    def __str__(self):
        return (
            f"(ε = {self.epsilon:.4g}, δ = {self.delta:.4g})-DP, {self.neighbouring}, "
            f"unit: {self.unit}, accountant: {self.accountant}"
        )


def _make_accountant(accountant, relation, discretization=None):
    if accountant == "PLD":
        if discretization is None:
            return pld_privacy_accountant.PLDAccountant(relation)
        return pld_privacy_accountant.PLDAccountant(relation, value_discretization_interval=discretization)
    return rdp_privacy_accountant.RdpAccountant(neighboring_relation=relation)


def _sampled(event):
    """Whether a subsampled event occurs anywhere in ``event``."""
    if isinstance(event, (dp_accounting.PoissonSampledDpEvent, dp_accounting.SampledWithoutReplacementDpEvent)):
        return True
    if isinstance(event, (dp_accounting.SelfComposedDpEvent, RepeatAndSelectDpEvent)):
        return _sampled(event.event)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return any(_sampled(e) for e in event.events)
    return False


def _doubled_sensitivity(event):
    """``event`` with every Gaussian and Laplace noise multiplier halved: sensitivity 2C instead of C."""
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return dp_accounting.GaussianDpEvent(event.noise_multiplier / 2.0)
    if isinstance(event, dp_accounting.LaplaceDpEvent):
        return dp_accounting.LaplaceDpEvent(event.noise_multiplier / 2.0)
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return dp_accounting.SelfComposedDpEvent(_doubled_sensitivity(event.event), event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return dp_accounting.ComposedDpEvent([_doubled_sensitivity(e) for e in event.events])
    if isinstance(event, RepeatAndSelectDpEvent):
        return RepeatAndSelectDpEvent(_doubled_sensitivity(event.event), event.mean, event.shape)
    if isinstance(event, (dp_accounting.NoOpDpEvent, dp_accounting.NonPrivateDpEvent)):
        return event
    raise ValueError(
        f"replace-one accounting of {type(event).__name__} is not supported here: give the event "
        "with its replace-one sensitivity and neighbouring='add/remove'"
    )


def _accounted(event, accountant, neighbouring):
    """(event, dp-accounting relation) that account ``event`` under ``neighbouring`` (see module docstring)."""
    if neighbouring == "add/remove":
        return event, _NR.ADD_OR_REMOVE_ONE
    if not _sampled(event):
        return _doubled_sensitivity(event), _NR.ADD_OR_REMOVE_ONE
    if accountant == "RDP":
        raise ValueError(
            "accountant='RDP' with neighbouring='replace-one' and Poisson subsampling: dp-accounting's "
            "RDP accountant analyses Poisson subsampling only under add/remove; use accountant='PLD'"
        )
    return event, _NR.REPLACE_ONE


def gaussian_event(noise_multiplier, steps, sampling_probability=1.0):
    """The dp-accounting event of ``steps`` Gaussian steps, Poisson-subsampled when q < 1.

    Parameters
    ----------
    noise_multiplier : float
        z = σ / C (see the module docstring); ``np.inf`` gives a step that leaks nothing.
    steps : int
        T ≥ 1 compositions.
    sampling_probability : float, default=1.0
        q in (0, 1]: each record (or party) takes part in a step independently with
        probability q.

    Returns
    -------
    dp_accounting.DpEvent
        ``SelfComposedDpEvent(GaussianDpEvent(z), T)``, or
        ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), T)`` when q < 1.
    """
    validate_function_params(
        {"noise_multiplier": [_MULTIPLIER], "steps": [_STEPS], "sampling_probability": [_PROBABILITY]},
        "gaussian_event",
        noise_multiplier=noise_multiplier,
        steps=steps,
        sampling_probability=sampling_probability,
    )
    if math.isinf(noise_multiplier):
        return dp_accounting.NoOpDpEvent()
    step = dp_accounting.GaussianDpEvent(float(noise_multiplier))
    if sampling_probability < 1.0:
        step = dp_accounting.PoissonSampledDpEvent(float(sampling_probability), step)
    return dp_accounting.SelfComposedDpEvent(step, int(steps))


def epsilon_of(event, delta, accountant="PLD", neighbouring="add/remove"):
    """ε at ``delta`` of a dp-accounting event, by one of dp-accounting's accountants.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        Noise multipliers relative to the add/remove sensitivity C (module docstring).
    delta : float
        δ in (0, 1).
    accountant : {"PLD", "RDP"}, default="PLD"
        dp-accounting's ``PLDAccountant`` (default discretisation 1e-4, pessimistic: an
        upper bound) or ``RdpAccountant`` (default orders).
    neighbouring : {"add/remove", "replace-one"}, default="add/remove"
        Replace-one doubles the sensitivity (module docstring).

    Returns
    -------
    float
        ε (``inf`` for a non-private event).
    """
    validate_function_params(
        {"delta": [_DELTA], "accountant": [_ACCOUNTANT], "neighbouring": [_RELATION]},
        "epsilon_of",
        delta=delta,
        accountant=accountant,
        neighbouring=neighbouring,
    )
    if not isinstance(event, dp_accounting.DpEvent):
        raise TypeError(f"event must be a dp_accounting.DpEvent, got {type(event).__name__}")
    event, relation = _accounted(event, accountant, neighbouring)
    return float(_make_accountant(accountant, relation).compose(event).get_epsilon(float(delta)))


def gaussian_noise_multiplier(
    epsilon, delta, steps, sampling_probability=1.0, neighbouring="replace-one", accountant="PLD"
):
    """The smallest noise multiplier z = σ/C meeting (ε, δ) after ``steps`` Gaussian steps.

    Each step adds N(0, (zC)² I) to a sum of per-record contributions of L2 norm ≤ C; with
    ``sampling_probability`` q < 1 each record takes part independently with probability q
    (Poisson subsampling). Under replace-one the sum moves by up to 2C, under add/remove by
    C: for q = 1 the replace-one multiplier is exactly twice the add/remove one.

    The search is dp-accounting's ``calibrate_dp_mechanism`` (Brent's method, falling back
    to bisection, returning a point whose ε does not exceed the target) over
    :func:`gaussian_event`, inside a bracket found here; PLD is evaluated with the
    discretisation ε/2000 within [1e-4, 0.01] (:data:`CALIBRATION_DISCRETIZATION`). The result is
    cached (it depends on public numbers only).

    Parameters
    ----------
    epsilon : float
        ε > 0; ``np.inf`` returns 0 (no noise).
    delta : float
        δ in (0, 1).
    steps : int
        T ≥ 1.
    sampling_probability : float, default=1.0
        q in (0, 1].
    neighbouring : {"replace-one", "add/remove"}, default="replace-one"
    accountant : {"PLD", "RDP"}, default="PLD"

    Returns
    -------
    float
        z, with ``epsilon_of(gaussian_event(z, steps, q), delta, accountant, neighbouring) <= epsilon``
        and z within about 0.1 % of the smallest such value (the PLD discretisation's margin).

    Examples
    --------
    >>> z = gaussian_noise_multiplier(1.0, 1e-5, steps=1, neighbouring="add/remove")
    >>> round(z, 2)  # the analytic Gaussian mechanism needs 3.73; PLD's pessimistic estimate is close
    3.73
    """
    validate_function_params(
        {
            "epsilon": [_EPSILON],
            "delta": [_DELTA],
            "steps": [_STEPS],
            "sampling_probability": [_PROBABILITY],
            "neighbouring": [_RELATION],
            "accountant": [_ACCOUNTANT],
        },
        "gaussian_noise_multiplier",
        epsilon=epsilon,
        delta=delta,
        steps=steps,
        sampling_probability=sampling_probability,
        neighbouring=neighbouring,
        accountant=accountant,
    )
    if math.isinf(epsilon):
        return 0.0
    if accountant == "RDP" and neighbouring == "replace-one" and sampling_probability < 1:
        _accounted(gaussian_event(1.0, 1, sampling_probability), accountant, neighbouring)  # raises
    return _calibrated(float(epsilon), float(delta), int(steps), float(sampling_probability), neighbouring, accountant)


@functools.lru_cache(maxsize=512)
def _calibrated(epsilon, delta, steps, q, neighbouring, accountant):
    def make_event(z):
        return _accounted(gaussian_event(z, steps, q), accountant, neighbouring)[0]

    relation = _accounted(gaussian_event(1.0, steps, q), accountant, neighbouring)[1]

    # never finer than epsilon_of's 1e-4: a finer grid could find a z whose ε there is above target
    interval = min(0.01, max(1e-4, epsilon * CALIBRATION_DISCRETIZATION))

    def fresh():
        return _make_accountant(accountant, relation, interval)

    def gap(z):
        return fresh().compose(make_event(z)).get_epsilon(delta) - epsilon

    # Without subsampling the analytic Gaussian mechanism is exact: T steps of multiplier z are
    # one step of z/√T, so the answer is near √T·σ(ε, δ) (×2 for replace-one); subsampling only
    # lowers it. The bracket is widened until it holds.
    factor = 2.0 if neighbouring == "replace-one" else 1.0
    exact = factor * math.sqrt(steps) * dp_accounting.get_sigma_gaussian(epsilon, delta)
    upper = 1.002 * exact
    while gap(upper) > 0:
        upper *= 1.1
    lower = min(0.998 * exact, upper / 1.1) if q == 1.0 else upper / 2.0
    while gap(lower) <= 0:
        upper, lower = lower, lower / 2.0
    return float(
        dp_accounting.calibrate_dp_mechanism(
            fresh,
            make_event,
            epsilon,
            delta,
            dp_accounting.ExplicitBracketInterval(lower, upper),
            tol=5e-4 * lower,
        )
    )


def gdp_mu(noise_multiplier, steps, neighbouring="add/remove"):
    """μ of Gaussian DP for ``steps`` full-batch Gaussian steps: μ = √T · Δ/σ.

    A Gaussian mechanism of sensitivity Δ and standard deviation σ is (Δ/σ)-GDP, and T of
    them compose to (√T·Δ/σ)-GDP exactly (Dong, Roth & Su 2022, Corollary 3.3). With
    z = σ/C, Δ = C under add/remove and 2C under replace-one, so μ = √T/z or 2√T/z.
    (For Poisson subsampling GDP has only a central-limit approximation, not offered here.)

    Examples
    --------
    >>> gdp_mu(1.0, 4), gdp_mu(1.0, 4, neighbouring="replace-one")
    (2.0, 4.0)
    """
    validate_function_params(
        {"noise_multiplier": [_MULTIPLIER], "steps": [_STEPS], "neighbouring": [_RELATION]},
        "gdp_mu",
        noise_multiplier=noise_multiplier,
        steps=steps,
        neighbouring=neighbouring,
    )
    sensitivity = 2.0 if neighbouring == "replace-one" else 1.0
    return math.sqrt(steps) * sensitivity / float(noise_multiplier)


def gdp_delta(mu, epsilon):
    """δ(ε) of μ-GDP: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth & Su 2022, Corollary 2.13).

    Examples
    --------
    >>> round(gdp_delta(1.0, 0.0), 6)  # Φ(1/2) − Φ(−1/2)
    0.382925
    """
    mu, epsilon = _check_mu(mu), float(epsilon)
    if math.isnan(epsilon) or epsilon < 0:
        raise ValueError(f"epsilon must be a number >= 0, got {epsilon!r}")
    if mu == 0.0 or math.isinf(epsilon):
        return 0.0
    if math.isinf(mu):
        return 1.0
    first = log_ndtr(-epsilon / mu + mu / 2.0)
    second = epsilon + log_ndtr(-epsilon / mu - mu / 2.0)
    return float(math.exp(first) * -math.expm1(second - first)) if second < first else 0.0


def gdp_epsilon(mu, delta):
    """The smallest ε with ``gdp_delta(mu, ε) <= delta``: μ-GDP as (ε, δ)-DP.

    The conversion is exact (μ-GDP holds for every (ε, δ(ε)) and for no smaller δ); it is the
    analytic Gaussian mechanism's curve of Balle & Wang (2018) with σ = 1/μ.
    """
    mu = _check_mu(mu)
    validate_function_params({"delta": [_DELTA]}, "gdp_epsilon", delta=delta)
    if math.isinf(mu):
        return math.inf
    if gdp_delta(mu, 0.0) <= delta:
        return 0.0
    upper = 1.0
    while gdp_delta(mu, upper) > delta:
        upper *= 2.0
    log_delta = math.log(delta)
    return float(optimize.brentq(lambda e: math.log(max(gdp_delta(mu, e), 1e-300)) - log_delta, 0.0, upper, xtol=1e-12))


def _check_mu(mu):
    if isinstance(mu, (bool, np.bool_)) or not isinstance(mu, Real) or math.isnan(mu) or mu < 0:
        raise ValueError(f"mu must be a number >= 0, got {mu!r}")
    return float(mu)


def pure_to_approx(epsilon):
    """``(ε, 0)``: an ε-DP mechanism is (ε, δ)-DP for every δ ≥ 0, with the same ε.

    The plain conversion, for putting a pure guarantee (objective or output perturbation) on
    the (ε, δ) axis of the others. (At δ > 0 a somewhat smaller ε could be claimed for every
    ε-DP mechanism, from the randomised response that dominates them; it is not claimed here.)
    """
    validate_function_params({"epsilon": [_EPSILON]}, "pure_to_approx", epsilon=epsilon)
    return float(epsilon), 0.0


def repeat_and_select_epsilon(event, delta, mean_candidates, distribution="poisson", neighbouring="add/remove"):
    """ε of tuning by random repetition (Papernot & Steinke 2022), by dp-accounting's RDP accountant.

    The candidate training run ``event`` is repeated K times, K random with mean
    ``mean_candidates`` (a hyper-parameter setting drawn at random for each run), and only
    the best run is released (its model and its score). dp-accounting's
    ``RepeatAndSelectDpEvent`` gives the RDP of the whole procedure (Papernot & Steinke,
    Theorems 2 and 6); only its RDP accountant supports it. Releasing more than the best run,
    or running a fixed number of candidates, is not covered.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        One training run (e.g. :func:`gaussian_event`).
    delta : float
        δ in (0, 1).
    mean_candidates : float
        E[K] ≥ 1.
    distribution : {"poisson", "geometric", "logarithmic"} or float, default="poisson"
        The law of K: Poisson, geometric (truncated negative binomial of shape 1),
        logarithmic (shape 0), or a truncated negative binomial of the given shape > 0.
    neighbouring : {"add/remove", "replace-one"}, default="add/remove"

    Returns
    -------
    float
    """
    validate_function_params(
        {
            "delta": [_DELTA],
            "mean_candidates": [Number(Real, 1, None, closed="left", desc="a float >= 1")],
            "distribution": [StrOptions(set(DISTRIBUTIONS)), Number(Real, 0, None, closed="neither")],
            "neighbouring": [_RELATION],
        },
        "repeat_and_select_epsilon",
        delta=delta,
        mean_candidates=mean_candidates,
        distribution=distribution,
        neighbouring=neighbouring,
    )
    shape = DISTRIBUTIONS[distribution] if isinstance(distribution, str) else float(distribution)
    repeated = RepeatAndSelectDpEvent(event, float(mean_candidates), shape)
    return epsilon_of(repeated, delta, accountant="RDP", neighbouring=neighbouring)


def liu_talwar_epsilon(epsilon, mean_candidates=None):
    """Total pure ε of private selection with random stopping (Liu & Talwar 2019): 3ε.

    **Theorem (Liu & Talwar 2019, §3, random stopping).** Let Q be an ε-DP mechanism that
    returns a candidate and its score. Run Q repeatedly on the same data; after each run stop
    with probability γ ∈ (0, 1] (so the number of runs K is geometric with mean 1/γ) and
    release the candidate with the best score among those seen. The whole procedure is
    3ε-DP, whatever γ (and whatever the relation under which Q is ε-DP). A cap on the number
    of runs, or a Q that is only (ε, δ)-DP, needs the paper's other statements (with a δ);
    neither is covered here. Papernot & Steinke (2022) improve the constant for other laws
    of K (:func:`repeat_and_select_epsilon`).

    Parameters
    ----------
    epsilon : float
        ε of one run, > 0.
    mean_candidates : float or None
        1/γ ≥ 1, for the record only: the bound does not depend on it.

    Returns
    -------
    float
        3ε.
    """
    validate_function_params(
        {"epsilon": [_EPSILON], "mean_candidates": [None, Number(Real, 1, None, closed="left", desc="a float >= 1")]},
        "liu_talwar_epsilon",
        epsilon=epsilon,
        mean_candidates=mean_candidates,
    )
    return 3.0 * float(epsilon)
