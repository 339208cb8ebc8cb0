"""The companion: what the book, its notebooks and CI run on top of the algorithms.

Nothing in the algorithms (:mod:`dpstack`'s estimators, mechanisms, solver, ledger, release,
theory), in :mod:`dpstack.datasets` or in :mod:`dpstack.audit` imports it; it uses their public
names. Its parts:

- :mod:`~dpstack.companion.papers`: one folder per paper (its claims, its grids, its page
  helpers);
- :mod:`~dpstack.companion.chapters`: the pages beyond the papers' figures, one module each;
- :mod:`~dpstack.companion.runner` (cells, seeds, parallelism, the cell cache) and
  :mod:`~dpstack.companion.results` (the registry of committed results, their provenance,
  staleness and replay);
- :mod:`~dpstack.companion.rule`, :mod:`~dpstack.companion.verdicts`,
  :mod:`~dpstack.companion.variants`: the one rule, the judged claims, the protocol variants;
- :mod:`~dpstack.companion.show`, :mod:`~dpstack.companion.tables`,
  :mod:`~dpstack.companion.plotting`: what a page shows.

Each cell function takes ``(**params, seed_sequence)``; :func:`run_cells` runs a grid of them
with joblib, one seed stream per repeat, a cell cache and a progress bar.
"""

from dpstack.companion.runner import cell_seed, clear_cache, code_version, run_cells

__all__ = ["cell_seed", "clear_cache", "code_version", "run_cells"]
