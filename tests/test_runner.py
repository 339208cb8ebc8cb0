"""The experiment runner: per-cell seeds, n_jobs/backend invariance, disk cache, quiet progress."""

import io
import sys
import threading

import numpy as np
import pandas as pd
import pytest

from dpstack import PrivateLogisticRegression
from dpstack.companion import runner
from dpstack.companion.runner import cell_seed, clear_cache, code_version, progress_disabled, run_cells

CALLS = []


def private_fit_cell(epsilon, repeat, seed_sequence, n=300, d=5):
    """A realistic cell: data drawn from the repeat's seed, a noisy PLR fit, two result rows."""
    data_seed, noise_seed = seed_sequence.spawn(2)
    rng = np.random.default_rng(data_seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = (X @ np.arange(1, d + 1) + 0.3 * rng.standard_normal(n) > 0).astype(int)
    model = PrivateLogisticRegression(epsilon=epsilon, lam=0.05, random_state=np.random.default_rng(noise_seed))
    model.fit(X, y)
    CALLS.append((epsilon, repeat))
    return [
        {"split": "train", "score": model.score(X, y), "coef0": float(model.coef_[0, 0])},
        {"split": "data", "score": float(X[0, 0]), "coef0": float(np.abs(model.coef_).sum())},
    ]


GRID = [{"epsilon": eps, "repeat": r} for r in range(3) for eps in (0.5, 2.0, np.inf)]


def test_cell_seed_is_the_repeat_child_of_the_root_seed():
    a = cell_seed(7, {"method": "x", "repeat": 2})
    b = cell_seed(7, {"method": "y", "repeat": 2})
    child = np.random.SeedSequence(7).spawn(3)[2]
    assert a.generate_state(4).tolist() == b.generate_state(4).tolist() == child.generate_state(4).tolist()
    assert cell_seed(7, {"repeat": 1}).generate_state(4).tolist() != a.generate_state(4).tolist()
    assert (
        cell_seed(7, {}).generate_state(4).tolist() == np.random.SeedSequence(7).spawn(1)[0].generate_state(4).tolist()
    )
    for bad in (-1, 1.0, "0", True):
        with pytest.raises(ValueError):
            cell_seed(0, {"repeat": bad})


def test_rows_follow_cell_order_with_parameters_as_columns():
    df = run_cells(private_fit_cell, GRID, seed=3)
    assert list(df.columns) == ["epsilon", "repeat", "split", "score", "coef0"]
    assert len(df) == 2 * len(GRID)
    expected = [(c["epsilon"], c["repeat"]) for c in GRID for _ in range(2)]
    assert list(zip(df.epsilon, df.repeat)) == expected
    # Common random numbers: every cell of a repeat sees the same data, different repeats do not.
    first_x = df[df.split == "data"].groupby("repeat").score.nunique()
    assert (first_x == 1).all()
    assert df[df.split == "data"].score.nunique() == 3
    # Non-private cells (epsilon = inf) of one repeat equal a direct call with the same seed.
    direct = private_fit_cell(np.inf, 1, cell_seed(3, {"repeat": 1}))
    row = df[(df.repeat == 1) & (df.epsilon == np.inf) & (df.split == "train")].iloc[0]
    assert row.coef0 == direct[0]["coef0"]


def test_results_identical_for_n_jobs_1_and_2():
    one = run_cells(private_fit_cell, GRID, seed=11, n_jobs=1)
    two = run_cells(private_fit_cell, GRID, seed=11, n_jobs=2)
    pd.testing.assert_frame_equal(one, two, check_exact=True)
    other_seed = run_cells(private_fit_cell, GRID, seed=12, n_jobs=1)
    assert not np.array_equal(one.coef0.to_numpy(), other_seed.coef0.to_numpy())


def thread_name_cell(epsilon, repeat, seed_sequence):
    return {"thread": threading.current_thread().name}


def test_results_identical_on_a_two_worker_dask_cluster():
    """The grid on a dask LocalCluster with two workers gives the n_jobs=1 table bit for bit.

    dask and distributed come with the ``distributed`` extra, which ``make install`` installs:
    this test runs in CI rather than being skipped. The workers are threads of this process
    (``processes=False``): worker processes would each import numpy/scikit-learn/dpstack
    first, which took about 20 s on the 2-core CI machine, for no extra coverage of the
    runner (the loky test above already runs the cells in other processes).
    """
    try:
        import distributed
    except ImportError:  # pragma: no cover - the distributed extra is part of the test install
        pytest.fail("dask.distributed is not installed: pip install -e '.[distributed]'")
    from joblib import parallel_config

    one = run_cells(private_fit_cell, GRID, seed=5, n_jobs=1)
    before = len(CALLS)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None, worker_dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        assert len(client.scheduler_info()["workers"]) == 2
        with parallel_config(backend="dask"):
            on_dask = run_cells(private_fit_cell, GRID, seed=5, n_jobs=2)
            where = run_cells(thread_name_cell, GRID, seed=5, n_jobs=2)
        executed = sum(w.state.executed_count for w in cluster.workers.values())
    assert len(CALLS) - before == len(GRID)  # every cell was computed, none came from a cache
    assert executed > 0 and threading.current_thread().name not in set(where.thread)  # ... by the workers
    pd.testing.assert_frame_equal(one, on_dask, check_exact=True)


def test_cache_hit_is_identical_and_skips_the_computation(tmp_path):
    CALLS.clear()
    first = run_cells(private_fit_cell, GRID, seed=1, cache=tmp_path)
    assert len(CALLS) == len(GRID)
    again = run_cells(private_fit_cell, GRID, seed=1, cache=tmp_path)
    assert len(CALLS) == len(GRID)  # every cell came from disk
    pd.testing.assert_frame_equal(first, again, check_exact=True)


def test_cache_misses_when_a_parameter_seed_or_code_changes(tmp_path, monkeypatch):
    run_cells(private_fit_cell, GRID, seed=1, cache=tmp_path)
    CALLS.clear()
    changed = [dict(GRID[0], n=301)] + GRID[1:]
    run_cells(private_fit_cell, changed, seed=1, cache=tmp_path)
    assert CALLS == [(GRID[0]["epsilon"], GRID[0]["repeat"])]  # only the changed cell recomputed
    CALLS.clear()
    run_cells(private_fit_cell, GRID[:2], seed=2, cache=tmp_path)
    assert len(CALLS) == 2
    CALLS.clear()
    monkeypatch.setattr(runner, "code_version", lambda func=None: "edited-source")
    run_cells(private_fit_cell, GRID[:2], seed=1, cache=tmp_path)
    assert len(CALLS) == 2


def test_cache_folder_from_environment_and_clear_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSTACK_CACHE", str(tmp_path))
    run_cells(private_fit_cell, GRID[:2], seed=0, cache=True)
    assert len(list((tmp_path / "cells").rglob("*.json"))) == 2
    clear_cache()
    assert not (tmp_path / "cells").exists()
    CALLS.clear()
    run_cells(private_fit_cell, GRID[:2], seed=0, cache=True)
    assert len(CALLS) == 2


def test_code_version_hashes_the_package_source():
    version = code_version()
    assert len(version) == 16 and int(version, 16) >= 0
    assert code_version() == version


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_on_a_terminal_quiet_under_dpstack_quiet_and_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("DPSTACK_QUIET", raising=False)
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert not progress_disabled()
    run_cells(private_fit_cell, GRID[:2], seed=0, desc="grid")
    assert "grid" in terminal.getvalue()  # tqdm drew its bar

    for var, value in (("DPSTACK_QUIET", "1"), ("CI", "true")):
        monkeypatch.setenv(var, value)
        quiet = FakeTerminal()
        monkeypatch.setattr(sys, "stderr", quiet)
        assert progress_disabled()
        run_cells(private_fit_cell, GRID[:2], seed=0, desc="grid")
        assert quiet.getvalue() == ""
        monkeypatch.delenv(var)


def test_quiet_without_a_terminal(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("DPSTACK_QUIET", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # papermill / nbval kernels, pipes
    assert progress_disabled()


def test_invalid_cells_and_results_are_rejected():
    with pytest.raises(ValueError, match="reserved"):
        run_cells(private_fit_cell, [{"epsilon": 1.0, "repeat": 0, "seed_sequence": 1}])
    with pytest.raises(TypeError):
        run_cells(private_fit_cell, [("epsilon", 1.0)])
    with pytest.raises(ValueError):
        run_cells(private_fit_cell, GRID, seed=-1)
    with pytest.raises(TypeError, match="dict"):
        run_cells(lambda seed_sequence: 3.0, [{}])
    with pytest.raises(ValueError, match="contradicts"):
        run_cells(lambda x, seed_sequence: {"x": x + 1}, [{"x": 1}])
    empty = run_cells(private_fit_cell, [])
    assert empty.empty


def blas_threads_cell(seed_sequence):
    from threadpoolctl import threadpool_info

    return {"threads": max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")}


def test_cells_run_with_one_blas_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):
        df = run_cells(blas_threads_cell, [{}])
    assert df.threads.tolist() == [1]


def test_never_more_workers_than_cells_to_compute(monkeypatch):
    """--n-jobs 12 on 3 cells starts 3 workers (joblib is asked for 3), and -1 is left to the backend."""
    from dpstack.companion import runner as R

    asked = []
    real = R.Parallel

    def recording(*args, **kwargs):
        asked.append(kwargs.get("n_jobs"))
        return real(*args, **{**kwargs, "n_jobs": 1})

    monkeypatch.setattr(R, "Parallel", recording)
    cells = [{"repeat": r} for r in range(3)]
    R.run_cells(_draw_cell, cells, n_jobs=12)
    R.run_cells(_draw_cell, cells, n_jobs=-1)
    R.run_cells(_draw_cell, cells[:1], n_jobs=-1)
    assert asked == [3, -1, 1]


def _draw_cell(repeat, seed_sequence):
    return {"x": float(np.random.default_rng(seed_sequence).random())}
