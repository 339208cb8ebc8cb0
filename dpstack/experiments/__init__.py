"""Experiment grids of the three papers, run cell by cell through :func:`run_cells`.

Each experiment module (``stacking``, ``transfer``, ``multiparty``, ...) defines a
cell function ``func(**params, seed_sequence)`` and a driver that builds the grid
and calls :func:`dpstack.experiments.runner.run_cells`, which takes care of
parallelism (joblib), seeding, caching and progress bars.
"""

from .runner import cell_seed, clear_cache, code_version, run_cells

__all__ = ["cell_seed", "clear_cache", "code_version", "run_cells"]
