"""Honest selection (dpstack.selection): the AUC's sensitivity, random stopping, repeat-and-select's accounting."""

import math

import dp_accounting
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpstack.alternatives.accounting import epsilon_of, gaussian_event
from dpstack.base import PrivacyLeakWarning
from dpstack.metrics import roc_auc_score
from dpstack.selection import (
    auc_sensitivity,
    calibrate_repeat_and_select,
    liu_talwar_epsilon,
    private_auc,
    random_stopping,
    repeat_and_select,
    repeat_and_select_epsilon,
)


# ------------------------------------------------------------------ the AUC's sensitivity
@st.composite
def neighbours(draw, keep_label):
    """A validation set (labels, scores) and a copy with one record replaced."""
    n_pos = draw(st.integers(2, 12))
    n_neg = draw(st.integers(2, 12))
    # a few distinct score values, so that ties occur
    values = st.integers(0, 6).map(float)
    scores = np.array(draw(st.lists(values, min_size=n_pos + n_neg, max_size=n_pos + n_neg)))
    y = np.array([1] * n_pos + [0] * n_neg)
    i = draw(st.integers(0, y.size - 1))
    y2, s2 = y.copy(), scores.copy()
    s2[i] = draw(values)
    if not keep_label:
        y2[i] = 1 - y2[i]
    return y, scores, y2, s2


@settings(max_examples=300, deadline=None)
@given(neighbours(keep_label=True))
def test_auc_moves_by_at_most_the_sensitivity_when_a_record_is_replaced_by_one_of_its_label(case):
    y, s, y2, s2 = case
    change = abs(roc_auc_score(y, s) - roc_auc_score(y2, s2))
    assert change <= auc_sensitivity(int(y.sum()), int((1 - y).sum())) + 1e-12


@settings(max_examples=300, deadline=None)
@given(neighbours(keep_label=False))
def test_auc_moves_by_at_most_the_sensitivity_of_either_set_when_the_label_changes(case):
    y, s, y2, s2 = case
    change = abs(roc_auc_score(y, s) - roc_auc_score(y2, s2))
    assert change <= auc_sensitivity(int(y.sum()), int((1 - y).sum())) + 1e-12
    assert change <= auc_sensitivity(int(y2.sum()), int((1 - y2).sum())) + 1e-12


def test_auc_sensitivity_is_reached():
    # 3 positives, 5 negatives: one positive from below every negative to above them all
    y = np.array([1, 1, 1, 0, 0, 0, 0, 0])
    s = np.array([9.0, 9.0, -1.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    s2 = s.copy()
    s2[2] = 10.0
    assert abs(roc_auc_score(y, s2) - roc_auc_score(y, s)) == pytest.approx(auc_sensitivity(3, 5)) == 1 / 3


def test_private_auc_noise_scale_is_calibrated_to_the_public_floor():
    y = np.array([1] * 40 + [0] * 60)
    scores = np.linspace(0, 1, 100)
    draws = np.array([private_auc(y, scores, 0.5, 20, random_state=s)[0] for s in range(4000)])
    noisy, exact, scale = private_auc(y, scores, 0.5, 20, random_state=0)
    assert scale == pytest.approx(1 / 20 / 0.5)
    assert exact == pytest.approx(roc_auc_score(y, scores))
    # Laplace(b): mean |x − median| = b; 4000 draws give it to within a few per cent
    assert np.mean(np.abs(draws - exact)) == pytest.approx(scale, rel=0.08)
    with pytest.warns(PrivacyLeakWarning, match="min_class_count"):
        private_auc(y, scores, 0.5, 50, random_state=0)


# ------------------------------------------------------------------ Liu & Talwar
def test_liu_talwar_total_is_three_times_the_run():
    assert liu_talwar_epsilon(0.4) == pytest.approx(1.2)


def test_random_stopping_makes_one_over_gamma_runs_on_average_and_releases_the_best_seen():
    seen = []

    def run(candidate, rng):
        score = candidate + rng.normal()
        seen.append(score)
        return score, candidate

    counts = []
    for seed in range(3000):
        seen.clear()
        out = random_stopping(run, [0.0, 1.0, 2.0], gamma=0.1, random_state=seed)
        counts.append(out.n_runs)
        assert out.n_runs == len(seen) and out.score == max(seen)
        assert out.output == out.candidate
    counts = np.array(counts)
    # geometric of mean 10, sd ≈ 9.5: the mean of 3000 draws is within 0.17 of 10 at one sd
    assert abs(counts.mean() - 10) < 5 * math.sqrt(0.9) / 0.1 / math.sqrt(counts.size)
    assert counts.min() == 1


def test_random_stopping_draws_candidates_uniformly():
    picks = []

    def run(candidate, rng):
        picks.append(candidate)
        return 0.0, None

    for seed in range(400):
        random_stopping(run, ["a", "b", "c", "d"], gamma=0.2, random_state=seed)
    _, counts = np.unique(picks, return_counts=True)
    expected = len(picks) / 4
    assert counts.size == 4 and np.all(np.abs(counts - expected) < 5 * math.sqrt(expected))


# ------------------------------------------------------------------ Papernot & Steinke
def test_repeat_and_select_total_lies_between_one_run_and_the_composition_of_many():
    event = gaussian_event(3.0, 10)
    one = epsilon_of(event, 1e-5, accountant="RDP", neighbouring="replace-one")
    total = repeat_and_select_epsilon(event, 1e-5, 10)
    composed = epsilon_of(
        dp_accounting.SelfComposedDpEvent(event, 10), 1e-5, accountant="RDP", neighbouring="replace-one"
    )
    assert one < total < composed
    # more candidates cost more, under either law of K
    assert total < repeat_and_select_epsilon(event, 1e-5, 30)
    geometric = repeat_and_select_epsilon(event, 1e-5, 10, distribution="geometric")
    assert one < geometric < repeat_and_select_epsilon(event, 1e-5, 30, distribution="geometric")


def test_repeat_and_select_matches_dp_accountings_event_directly():
    event = gaussian_event(2.0, 5)
    # replace-one doubles the sensitivity: the multiplier is halved for the add/remove accountant
    halved = dp_accounting.dp_event.RepeatAndSelectDpEvent(gaussian_event(1.0, 5), 10.0, math.inf)
    direct = dp_accounting.rdp.RdpAccountant().compose(halved).get_epsilon(1e-5)
    assert repeat_and_select_epsilon(event, 1e-5, 10) == pytest.approx(direct, rel=1e-12)


def test_calibration_reaches_the_target_total_from_below():
    out = calibrate_repeat_and_select(1.0, 1e-5, 10, steps=20)
    assert out["total_epsilon"] <= 1.0 and out["total_epsilon"] == pytest.approx(1.0, rel=1e-4)
    assert out["run_epsilon"] < out["total_epsilon"]
    again = repeat_and_select_epsilon(gaussian_event(out["noise_multiplier"], 20), 1e-5, 10)
    assert again == pytest.approx(out["total_epsilon"], rel=1e-12)


def test_repeat_and_select_runs_a_poisson_number_of_times():
    counts = [
        repeat_and_select(lambda c, rng: (rng.random(), c), [1, 2], 5, random_state=s).n_runs for s in range(2000)
    ]
    assert abs(np.mean(counts) - 5) < 5 * math.sqrt(5 / 2000)
    assert min(counts) == 0  # K = 0 releases nothing


# ------------------------------------------------------------------ errors name the parameter
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: auc_sensitivity(0, 5), "n_pos"),
        (lambda: auc_sensitivity(5, 1.5), "n_neg"),
        (lambda: private_auc([0, 1], [0.1, 0.2], 0.0, 1), "epsilon"),
        (lambda: private_auc([0, 1], [0.1, 0.2], 1.0, 0), "min_class_count"),
        (lambda: liu_talwar_epsilon(-1.0), "epsilon"),
        (lambda: random_stopping(lambda c, r: (0.0, c), [1], gamma=0.0), "gamma"),
        (lambda: random_stopping(lambda c, r: (0.0, c), [1], gamma=1.5), "gamma"),
        (lambda: repeat_and_select_epsilon(gaussian_event(1.0, 1), 0.0, 10), "delta"),
        (lambda: repeat_and_select_epsilon(gaussian_event(1.0, 1), 1e-5, 0.5), "mean_candidates"),
        (lambda: repeat_and_select_epsilon(gaussian_event(1.0, 1), 1e-5, 10, distribution="uniform"), "distribution"),
        (lambda: repeat_and_select_epsilon(gaussian_event(1.0, 1), 1e-5, 10, neighbouring="swap"), "neighbouring"),
        (lambda: calibrate_repeat_and_select(1.0, 1e-5, 10, steps=0), "steps"),
        (lambda: repeat_and_select(lambda c, r: (0.0, c), [1], 10, distribution="logarithmic"), "distribution"),
    ],
)
def test_bad_parameters_raise_naming_the_parameter(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


def test_non_callable_run_and_empty_candidates_are_refused():
    with pytest.raises(TypeError, match="run"):
        random_stopping(3, [1], 0.5)
    with pytest.raises(ValueError, match="candidates"):
        random_stopping(lambda c, r: (0.0, c), [], 0.5)
