"""Today's alternatives: the (ε, δ) accounting on dp-accounting and the PATE GNMax aggregator.

Each test names the kind of bug it is there to catch; the bugs were planted and seen to fail
(a halved noise, a dropped replace-one factor 2, a dropped √2, a repeat count ignored).
"""

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import stats

from dpstack.alternatives import (
    Guarantee,
    epsilon_of,
    gaussian_event,
    gaussian_noise_multiplier,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    gnmax_aggregate,
    gnmax_epsilon,
    gnmax_guarantee,
    gnmax_sigma,
    liu_talwar_epsilon,
    pure_to_approx,
    repeat_and_select_epsilon,
    vote_counts,
)

DELTA = 1e-5

# (ε, T, q, neighbouring): full batch and Poisson-subsampled, both relations
CASES = [
    (1.0, 1, 1.0, "add/remove"),
    (1.0, 200, 1.0, "replace-one"),
    (2.0, 100, 0.1, "add/remove"),
    (2.0, 100, 0.1, "replace-one"),
]


# --- calibration ----------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon, steps, q, neighbouring", CASES)
def test_the_noise_multiplier_meets_the_target_and_is_the_smallest_that_does(epsilon, steps, q, neighbouring):
    """Too little noise (ε above target) or far too much (0.99 z still meets it) both fail."""
    z = gaussian_noise_multiplier(epsilon, DELTA, steps, q, neighbouring=neighbouring)
    assert epsilon_of(gaussian_event(z, steps, q), DELTA, "PLD", neighbouring) <= epsilon
    assert epsilon_of(gaussian_event(0.99 * z, steps, q), DELTA, "PLD", neighbouring) > epsilon


def test_the_noise_multiplier_decreases_with_epsilon_and_grows_with_the_steps():
    zs = [gaussian_noise_multiplier(e, DELTA, 50, 0.2) for e in (0.5, 1.0, 2.0, 4.0)]
    assert all(a > b for a, b in zip(zs, zs[1:])), zs
    assert gaussian_noise_multiplier(1.0, DELTA, 200, 0.2) > gaussian_noise_multiplier(1.0, DELTA, 50, 0.2)
    assert gaussian_noise_multiplier(np.inf, DELTA, 50) == 0.0


@pytest.mark.parametrize("epsilon, steps", [(0.5, 1), (1.0, 50), (4.0, 400)])
def test_full_batch_multiplier_is_the_analytic_gaussian_mechanism(epsilon, steps):
    """T full-batch steps of multiplier z are one Gaussian of z/√T: dp-accounting's exact analytic
    calibration (Balle & Wang 2018) gives the add/remove answer, and replace-one is exactly twice it."""
    exact = math.sqrt(steps) * dp_accounting.get_sigma_gaussian(epsilon, DELTA)
    add_remove = gaussian_noise_multiplier(epsilon, DELTA, steps, neighbouring="add/remove")
    replace_one = gaussian_noise_multiplier(epsilon, DELTA, steps, neighbouring="replace-one")
    assert add_remove == pytest.approx(exact, rel=1e-3)
    assert replace_one == pytest.approx(2 * exact, rel=1e-3)


def test_replace_one_costs_more_than_add_remove_with_subsampling():
    event = gaussian_event(1.0, 100, 0.1)
    assert epsilon_of(event, DELTA, "PLD", "replace-one") > epsilon_of(event, DELTA, "PLD", "add/remove")
    assert gaussian_noise_multiplier(2.0, DELTA, 100, 0.1, "replace-one") > gaussian_noise_multiplier(
        2.0, DELTA, 100, 0.1, "add/remove"
    )


def test_rdp_and_pld_use_one_convention_for_replace_one():
    """dp-accounting's RDP accountant ignores REPLACE_ONE for a Gaussian (its PLD doubles the
    sensitivity): here both double it, and RDP (the looser bound) stays above PLD."""
    event = gaussian_event(3.0, 20)
    rdp = epsilon_of(event, DELTA, "RDP", "replace-one")
    assert rdp == pytest.approx(epsilon_of(gaussian_event(1.5, 20), DELTA, "RDP", "add/remove"))
    assert rdp > epsilon_of(event, DELTA, "RDP", "add/remove")
    pld = epsilon_of(event, DELTA, "PLD", "replace-one")
    native = pld_privacy_accountant.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE)
    assert pld == pytest.approx(native.compose(event).get_epsilon(DELTA), rel=1e-6)
    assert pld < rdp
    direct = rdp_privacy_accountant.RdpAccountant().compose(gaussian_event(1.5, 20)).get_epsilon(DELTA)
    assert rdp == pytest.approx(direct)
    with pytest.raises(ValueError, match="RDP"):
        epsilon_of(gaussian_event(1.0, 10, 0.1), DELTA, "RDP", "replace-one")
    with pytest.raises(ValueError, match="RDP"):
        gaussian_noise_multiplier(1.0, DELTA, 10, 0.1, "replace-one", accountant="RDP")


def test_the_rdp_calibration_meets_its_own_target():
    z = gaussian_noise_multiplier(1.0, DELTA, 100, 0.1, "add/remove", accountant="RDP")
    assert epsilon_of(gaussian_event(z, 100, 0.1), DELTA, "RDP", "add/remove") <= 1.0
    # RDP is the looser accountant: it asks for more noise than PLD
    assert z > gaussian_noise_multiplier(1.0, DELTA, 100, 0.1, "add/remove", accountant="PLD")


# --- Gaussian DP ----------------------------------------------------------------------------------


def test_gdp_mu_and_its_conversion():
    assert gdp_mu(1.0, 4) == 2.0
    assert gdp_mu(1.0, 4, neighbouring="replace-one") == 4.0
    assert gdp_mu(2.0, 9) == 1.5
    assert gdp_delta(1.0, 0.0) == pytest.approx(stats.norm.cdf(0.5) - stats.norm.cdf(-0.5), rel=1e-12)
    # μ-GDP is the analytic Gaussian mechanism with σ = 1/μ (dp-accounting's own implementation)
    for z, T in [(2.0, 4), (10.0, 100), (0.8, 1)]:
        mu = gdp_mu(z, T)
        assert gdp_epsilon(mu, DELTA) == pytest.approx(dp_accounting.get_epsilon_gaussian(1 / mu, DELTA), rel=1e-7)
        assert gdp_delta(mu, gdp_epsilon(mu, DELTA)) == pytest.approx(DELTA, rel=1e-7)
    # and PLD's (pessimistic) full-batch ε is within its discretisation of the exact one
    z, T = 5.0, 30
    exact = gdp_epsilon(gdp_mu(z, T, "replace-one"), DELTA)
    assert epsilon_of(gaussian_event(z, T), DELTA, "PLD", "replace-one") == pytest.approx(exact, rel=1e-3)


def test_pure_and_liu_talwar():
    assert pure_to_approx(1.5) == (1.5, 0.0)
    assert liu_talwar_epsilon(0.5) == 1.5
    assert liu_talwar_epsilon(0.5, mean_candidates=20) == 1.5
    with pytest.raises(ValueError, match="mean_candidates"):
        liu_talwar_epsilon(0.5, mean_candidates=0.5)


def test_tuning_by_repetition_costs_more_than_one_run_and_more_with_more_candidates():
    run = gaussian_event(30.0, 100)  # one full-batch training run
    one = epsilon_of(run, DELTA, "RDP", "add/remove")
    costs = [repeat_and_select_epsilon(run, DELTA, m, "poisson") for m in (1, 5, 50)]
    assert one < costs[0] < costs[1] < costs[2]
    direct = rdp_privacy_accountant.RdpAccountant().compose(
        dp_accounting.dp_event.RepeatAndSelectDpEvent(run, 5.0, math.inf)
    )
    assert costs[1] == pytest.approx(direct.get_epsilon(DELTA))
    assert repeat_and_select_epsilon(run, DELTA, 5, "geometric") > one
    assert repeat_and_select_epsilon(run, DELTA, 5, "poisson", "replace-one") > costs[1]


# --- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"epsilon": -1.0}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"delta": 0.0}, "delta"),
        ({"steps": 0}, "steps"),
        ({"sampling_probability": 1.5}, "sampling_probability"),
        ({"neighbouring": "x"}, "neighbouring"),
        ({"accountant": "PRV"}, "accountant"),
    ],
)
def test_calibration_errors_name_the_argument(kwargs, name):
    args = {"epsilon": 1.0, "delta": DELTA, "steps": 10, **kwargs}
    with pytest.raises(ValueError, match=name):
        gaussian_noise_multiplier(**args)


def test_a_guarantee_checks_its_fields_and_is_frozen():
    g = Guarantee(1.0, DELTA, "replace-one", "one sample", "PLD", ["n public"])
    assert g.assumptions == ("n public",) and not g.pure
    assert Guarantee(1.0, 0.0, "replace-one", "one sample", "pure").pure
    with pytest.raises(AttributeError):
        g.epsilon = 2.0
    with pytest.raises(ValueError, match="neighbouring"):
        Guarantee(1.0, DELTA, "replace one", "one sample", "PLD")
    with pytest.raises(ValueError, match="delta"):
        Guarantee(1.0, 2.0, "add/remove", "one sample", "PLD")


# --- PATE GNMax -----------------------------------------------------------------------------------


def test_gnmax_without_noise_is_the_argmax_and_counts_votes():
    predictions = np.array([[0, 2, 1], [0, 1, 1], [1, 2, 1], [0, 2, 0]])  # 4 teachers, 3 queries
    counts = vote_counts(predictions, 3)
    assert counts.tolist() == [[3, 1, 0], [0, 1, 3], [1, 3, 0]]
    assert gnmax_aggregate(counts, sigma=0.0).tolist() == [0, 2, 1]
    assert gnmax_aggregate(counts[0], sigma=0.0) == 0
    # noise far below the margins changes nothing
    assert gnmax_aggregate(counts, sigma=1e-3, random_state=0).tolist() == [0, 2, 1]


def test_gnmax_noise_has_the_stated_scale():
    """With votes (c, c + m) the second class wins with probability Φ(m / (σ√2))."""
    sigma, m, n = 4.0, 3.0, 40_000
    votes = np.tile([10.0, 10.0 + m], (n, 1))
    won = np.mean(gnmax_aggregate(votes, sigma, random_state=1) == 1)
    expected = stats.norm.cdf(m / (sigma * math.sqrt(2)))
    assert abs(won - expected) < 4 * math.sqrt(expected * (1 - expected) / n)


def test_gnmax_accounting_is_the_gaussian_mechanism_of_sensitivity_sqrt2():
    sigma, T = 40.0, 100
    direct = pld_privacy_accountant.PLDAccountant().compose(
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(sigma / math.sqrt(2)), T)
    )
    eps = gnmax_epsilon(sigma, T, DELTA)
    assert eps == pytest.approx(direct.get_epsilon(DELTA), rel=1e-9)
    # T Gaussians of std σ and sensitivity √2 = one of std σ/√(2T)... in units of the sensitivity:
    assert eps == pytest.approx(dp_accounting.get_epsilon_gaussian(sigma / math.sqrt(2 * T), DELTA), rel=1e-3)
    sigma_for = gnmax_sigma(eps, DELTA, T)
    assert sigma_for == pytest.approx(sigma, rel=2e-3)
    assert gnmax_epsilon(sigma_for, T, DELTA) <= eps + 1e-9
    g = gnmax_guarantee(sigma, T, DELTA)
    assert (g.unit, g.neighbouring, g.epsilon) == ("one teacher", "replace-one", eps)
    assert gnmax_epsilon(0.0, T, DELTA) == math.inf
