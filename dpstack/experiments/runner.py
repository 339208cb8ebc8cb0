"""Run the independent cells of an experiment grid: seeds, parallelism, disk cache.

An experiment is a list of *cells* (dicts of JSON-serialisable parameters, e.g.
``{"method": "PST-S", "epsilon": 1.0, "repeat": 3}``) and a function that
computes the result row(s) of one cell. :func:`run_cells` evaluates the cells
through :class:`joblib.Parallel` and returns one :class:`pandas.DataFrame`.

Design choices, and why:

* **Seeds depend on the cell, never on the worker.** Cell ``c`` gets
  ``SeedSequence(seed, spawn_key=(c["repeat"],))`` (:func:`cell_seed`), so the
  result of a cell is the same whether it runs first or last, in this process,
  in a loky worker or on a dask cluster. All cells of one repeat share their
  seed sequence on purpose (common random numbers: the same data split for
  every method and ε of a repeat, so paired comparisons are valid); a cell that
  needs independent streams spawns children from it.
* **One BLAS thread per cell.** OpenBLAS may sum in a different order with a
  different number of threads, which changes the last bits of a result. Each
  cell runs with BLAS/OpenMP limited to one thread (threadpoolctl) so that ``n_jobs=1`` and
  ``n_jobs=2`` give bit-identical tables; the parallelism is across cells.
* **Backends are joblib's.** ``run_cells`` only calls ``Parallel(n_jobs=...)``,
  so ``with joblib.parallel_config(backend="dask"):`` sends the cells to a
  ``dask.distributed`` cluster (see ``book/reproducing.md``); there is no
  home-made distribution layer.
* **Cache key = everything the result depends on**: the function's qualified
  name (and its source when it lives outside dpstack), the cell, the seed and
  :func:`code_version` (a hash of every ``.py`` file of the installed dpstack).
  Editing any dpstack module therefore invalidates the whole cache.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import pickle
import shutil
import sys
import tempfile
from numbers import Integral
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from threadpoolctl import ThreadpoolController
from tqdm import tqdm  # not tqdm.auto: without ipywidgets it warns into notebook outputs

__all__ = ["cell_seed", "run_cells", "code_version", "cache_dir", "clear_cache", "progress_disabled"]

_PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def cell_seed(seed, cell):
    """The :class:`numpy.random.SeedSequence` of one cell.

    ``SeedSequence(seed, spawn_key=(repeat,))`` with ``repeat = cell.get("repeat", 0)``:
    identical to ``SeedSequence(seed).spawn(repeat + 1)[repeat]``, and shared by
    all cells of the same repeat.

    Parameters
    ----------
    seed : int
        The experiment's root seed (non-negative).
    cell : dict
        The cell's parameters.

    Returns
    -------
    numpy.random.SeedSequence
    """
    repeat = cell.get("repeat", 0)
    if isinstance(repeat, bool) or not isinstance(repeat, Integral) or repeat < 0:
        raise ValueError(f"cell['repeat'] must be a non-negative int, got {repeat!r}")
    if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return np.random.SeedSequence(int(seed), spawn_key=(int(repeat),))


@functools.lru_cache(maxsize=1)
def code_version():
    """SHA-256 (hex, 16 chars) of the source of every ``.py`` file in dpstack.

    Computed once per process: a cache written by an older version of the
    code is never returned.
    """
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE_ROOT.rglob("*.py")):
        digest.update(path.relative_to(_PACKAGE_ROOT).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def cache_dir(cache=True):
    """Folder of the result cache.

    Parameters
    ----------
    cache : bool or path-like, default=True
        A path is used as is; otherwise ``$DPSTACK_CACHE`` when set, else
        ``~/.cache/dpstack``.

    Returns
    -------
    pathlib.Path
    """
    if isinstance(cache, (str, os.PathLike)):
        return Path(cache)
    env = os.environ.get("DPSTACK_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "dpstack"


def clear_cache(cache=True):
    """Delete every cached cell result (the ``cells`` folder of :func:`cache_dir`).

    Parameters
    ----------
    cache : bool or path-like, default=True
        Which cache, as in :func:`cache_dir`.
    """
    shutil.rmtree(cache_dir(cache) / "cells", ignore_errors=True)


def progress_disabled():
    """True when progress bars would pollute output: ``DPSTACK_QUIET=1``, CI, or stderr not a terminal.

    Papermill and nbval run kernels whose stderr is not a terminal, so they are
    quiet without configuration.
    """
    if os.environ.get("DPSTACK_QUIET", "").strip().lower() in {"1", "true", "yes"}:
        return True
    if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
        return True
    stream = sys.stderr
    return not (stream is not None and hasattr(stream, "isatty") and stream.isatty())


def run_cells(func, cells, *, seed=0, n_jobs=1, cache=False, desc=None):
    """Evaluate ``func`` on every cell and collect the result rows in one DataFrame.

    Parameters
    ----------
    func : callable
        ``func(**cell, seed_sequence=SeedSequence)`` returning a dict (one row)
        or a list of dicts (several rows). Must be picklable for ``n_jobs != 1``
        (a module-level function; cloudpickle also handles notebook functions).
    cells : list of dict
        JSON-serialisable parameters; an optional ``"repeat"`` (int ≥ 0) selects
        the seed (see :func:`cell_seed`). ``"seed_sequence"`` is reserved.
    seed : int, default=0
        Root seed of the experiment.
    n_jobs : int, default=1
        Joblib workers (−1: all cores). The backend is joblib's current one
        (loky by default; ``joblib.parallel_config(backend="dask")`` for a dask
        cluster). Results do not depend on ``n_jobs`` or the backend.
    cache : bool or path-like, default=False
        Cache each cell's rows on disk (``True``: in :func:`cache_dir`) and reuse
        them when func, cell, seed and :func:`code_version` are all unchanged.
    desc : str or None
        Label of the tqdm progress bar (shown only on a terminal, see
        :func:`progress_disabled`).

    Returns
    -------
    pandas.DataFrame
        One row per result row, cells in the order given; the cell's parameters
        are columns, followed by the result's keys.

    Examples
    --------
    >>> def draw(scale, repeat, seed_sequence):
    ...     return {"x": scale * np.random.default_rng(seed_sequence).random()}
    >>> cells = [{"scale": s, "repeat": r} for r in range(2) for s in (1.0, 2.0)]
    >>> df = run_cells(draw, cells, seed=0)
    >>> bool(df.x[1] == 2 * df.x[0])   # same repeat, same random number
    True
    """
    cells = [_check_cell(cell) for cell in cells]
    seeds = [cell_seed(seed, cell) for cell in cells]  # validates seed and repeats up front
    store = _CellStore(cache_dir(cache), func, seed) if cache is not False and cache is not None else None

    results = [None] * len(cells)
    todo = []
    for i, cell in enumerate(cells):
        hit = store.load(cell) if store is not None else None
        if hit is not None:
            results[i] = hit
        else:
            todo.append(i)

    with tqdm(total=len(cells), initial=len(cells) - len(todo), desc=desc,
              disable=progress_disabled(), leave=False) as bar:
        if todo:
            jobs = (delayed(_evaluate)(func, cells[i], seeds[i]) for i in todo)
            outputs = Parallel(n_jobs=n_jobs, return_as="generator")(jobs)
            for i, rows in zip(todo, outputs):
                results[i] = rows
                if store is not None:
                    store.save(cells[i], rows)
                bar.update(1)

    records = []
    for cell, rows in zip(cells, results):
        for row in rows:
            records.append(_merge(cell, row))
    return pd.DataFrame.from_records(records) if records else pd.DataFrame(columns=list(_union_keys(cells)))


def _check_cell(cell):
    if not isinstance(cell, dict):
        raise TypeError(f"each cell must be a dict, got {type(cell).__name__}")
    if "seed_sequence" in cell:
        raise ValueError("'seed_sequence' is reserved: run_cells passes it to func")
    for key in cell:
        if not isinstance(key, str):
            raise TypeError(f"cell keys must be str, got {key!r}")
    return cell


@functools.lru_cache(maxsize=1)
def _threadpools():
    # Scanning the loaded libraries costs ~10 ms; do it once per process, not once per cell.
    return ThreadpoolController()


def _evaluate(func, cell, seed_sequence):
    """Run one cell with one BLAS thread (bit-identical results whatever the worker)."""
    with _threadpools().limit(limits=1):
        out = func(**cell, seed_sequence=seed_sequence)
    if isinstance(out, dict):
        return [out]
    if isinstance(out, (list, tuple)) and all(isinstance(row, dict) for row in out):
        return list(out)
    raise TypeError(f"{_func_name(func)} must return a dict or a list of dicts, got {type(out).__name__}")


def _merge(cell, row):
    merged = dict(cell)
    for key, value in row.items():
        if key in cell and not _same(cell[key], value):
            raise ValueError(f"result key {key!r} = {value!r} contradicts the cell parameter {cell[key]!r}")
        merged[key] = value
    return merged


def _same(a, b):
    try:
        return bool(np.all(a == b)) or (a != a and b != b)  # NaN parameters compare equal
    except Exception:  # noqa: BLE001 - incomparable objects are different
        return False


def _union_keys(cells):
    keys = {}
    for cell in cells:
        keys.update(dict.fromkeys(cell))
    return keys


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"cell value {obj!r} of type {type(obj).__name__} is not JSON-serialisable")


def _func_name(func):
    if isinstance(func, functools.partial):
        return _func_name(func.func)
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', type(func).__name__)}"


def _func_identity(func):
    """Name, bound partial arguments, and the source of functions defined outside dpstack."""
    ident = {"name": _func_name(func)}
    if isinstance(func, functools.partial):
        ident["partial"] = {"args": func.args, "kwargs": func.keywords, "inner": _func_identity(func.func)}
        return ident
    module = getattr(func, "__module__", "") or ""
    if module.split(".")[0] != "dpstack":  # dpstack code is covered by code_version()
        try:
            ident["source"] = hashlib.sha256(inspect.getsource(func).encode()).hexdigest()
        except (OSError, TypeError):
            ident["source"] = None
    return ident


class _CellStore:
    """Pickled result rows of one (func, seed) in ``<dir>/cells/<func name>/<key>.pkl``."""

    def __init__(self, root, func, seed):
        self.folder = Path(root) / "cells" / _func_name(func).replace("<", "_").replace(">", "_")
        self.prefix = {"func": _func_identity(func), "seed": int(seed), "code": code_version()}

    def _path(self, cell):
        text = json.dumps({**self.prefix, "cell": cell}, sort_keys=True, default=_json_default)
        return self.folder / (hashlib.sha256(text.encode()).hexdigest()[:32] + ".pkl")

    def load(self, cell):
        path = self._path(cell)
        try:
            with open(path, "rb") as fh:
                return pickle.load(fh)
        except FileNotFoundError:
            return None
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            return None  # unreadable or stale entry: recompute and overwrite

    def save(self, cell, rows):
        path = self._path(cell)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write-then-rename, so a crash or a concurrent run never leaves a half-written entry.
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(rows, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
