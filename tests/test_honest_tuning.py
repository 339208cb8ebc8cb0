"""The honest-tuning grid (dpstack.companion.papers.pst.honest) and its page helpers."""

import numpy as np
import pandas as pd
import pytest

from dpstack.companion.papers.pst import honest, pages
from dpstack.companion.runner import cell_seed


def test_cells_cover_the_grid_and_refuse_unknown_methods():
    cells = honest.honest_cells("paper")
    assert len(cells) == 30 * 2 * 2 * 3
    assert {c["epsilon"] for c in cells} == set(honest.EPSILONS)
    with pytest.raises(ValueError, match="methods"):
        honest.honest_cells("quick", methods=["DP-GD"])
    with pytest.raises(ValueError, match="profile"):
        honest.honest_cells("huge")


@pytest.mark.parametrize("method", honest.HONEST_METHODS)
def test_a_cell_spends_the_total_epsilon_and_releases_a_candidate_of_the_grid(method):
    cell = dict(dataset="SYNTH", method=method, epsilon=1.0, repeat=0, lam_grid=[1e-4, 1.0])
    row = honest.honest_cell(**cell, seed_sequence=cell_seed(0, cell))
    assert row["total_epsilon_honest"] == pytest.approx(1.0)
    grid = np.geomspace(1e-4, 1.0, honest.N_CANDIDATES)
    assert np.isclose(grid, row["lam_honest"]).any() and np.isclose(grid, row["lam_papers"]).any()
    assert row["n_runs"] >= 1 and 0.0 <= row["auc_honest"] <= 1.0
    # the score's noise: Laplace of scale (1/m)/(ε/3), m the public floor on the validation class counts
    n_val = round(900 / 3)
    assert row["score_scale"] == pytest.approx(1 / int(honest.MIN_CLASS_SHARE * n_val) / (1.0 / 3))
    again = honest.honest_cell(**cell, seed_sequence=cell_seed(0, cell))
    assert again == row  # the same seed, the same row


def test_paired_gaps_are_honest_minus_papers_by_repeat():
    frame = pd.DataFrame(
        dict(
            dataset="D",
            method="PLR",
            epsilon=1.0,
            repeat=[0, 1, 2],
            auc_papers=[0.9, 0.8, 0.7],
            auc_honest=[0.8, 0.8, 0.6],
            n_runs=[3, 10, 17],
        )
    )
    gap = pages.honest_gaps(frame).iloc[0]
    assert gap["difference"] == pytest.approx(-0.2 / 3)
    assert gap["low"] < gap["difference"] < gap["high"]
    assert gap["repeats"] == 3 and gap["runs"] == pytest.approx(10.0)
    assert "behind in 0 and ahead in 0 of these 1" in pages.honest_findings(pages.honest_gaps(frame))


def test_the_price_of_honest_tuning_is_three_epsilon_for_pure_and_less_than_composition_for_dp_gd():
    row = pages.tuning_price([1.0], n_candidates=10, steps=10).iloc[0].tolist()
    eps, composed_pure, liu_talwar, composed, poisson, geometric, run = map(float, row)
    assert (eps, composed_pure, liu_talwar) == (1.0, 10.0, 3.0)
    assert eps < poisson < composed and eps < geometric < composed and run < eps
