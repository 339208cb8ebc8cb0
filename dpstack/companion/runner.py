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
  ``dask.distributed`` cluster (see the reproducing page, ``notebooks/reproducing.ipynb``); there is no
  home-made distribution layer.
* **Cache key = everything the result depends on**: the function's qualified
  name (and, when it lives outside dpstack, its source and that of the helpers,
  modules and constants it refers to, with the values of its constants and arrays), the cell, the seed, the versions of
  dpstack, numpy, scipy, scikit-learn and Python, :func:`code_version` (a
  hash of the code of every source file of the installed dpstack, the compiled
  pass's C file included) and the numerical platform
  (:func:`dpstack.provenance.current_platform_key`: the BLAS kernels, the solver's
  compiled or numpy pass, the CPU's vector extensions). Editing the code of any dpstack
  module therefore invalidates the whole cache, and a run on another platform
  (``OPENBLAS_CORETYPE``, ``DPSTACK_FUSED=0``) never reads another platform's cells.
* **Cache entries cannot run code and cannot be forged.** An entry is JSON with a
  closed set of value types, never a pickle, and carries its full key and an
  HMAC-SHA256 of its content under a per-user secret kept outside the cache
  (:func:`dpstack._files.cache_key`, ``~/.config/dpstack/cache.key`` or
  ``$DPSTACK_CACHE_KEY``). Someone who can write the cache folder but not read
  the key cannot make an entry that is accepted: a corrupt, truncated, planted,
  edited or colliding entry is discarded with a warning naming the file, and the
  cell recomputed. Entries larger than :data:`MAX_ENTRY_BYTES`, and arrays whose
  declared dtype or size exceed the limits, are refused before they are parsed or
  allocated. Writes go to a unique temporary file renamed into place; temporary
  files orphaned by a killed writer are removed by the next run. Without a usable
  key (e.g. a read-only home) the cells are computed and not cached, with a warning.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import platform
import shutil
import sys
import sysconfig
import tempfile
import types
import warnings
from numbers import Integral
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from threadpoolctl import ThreadpoolController
from tqdm import tqdm  # not tqdm.auto: without ipywidgets it warns into notebook outputs

from dpstack._files import CacheKeyError, cache_key, mac, mac_ok, remove_orphans, temp_suffix, user_cache_dir
from dpstack.provenance import code_hash, current_platform_key, module_closure, module_file

__all__ = [
    "CacheIntegrityWarning",
    "cell_seed",
    "run_cells",
    "code_version",
    "cache_dir",
    "clear_cache",
    "progress_disabled",
]


class CacheIntegrityWarning(RuntimeWarning):
    """A cache entry was discarded: its MAC did not verify, or it broke a size or type limit."""


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


#: The source files of dpstack whose code the cache key covers: every Python module and the C
#: source of the compiled solver pass.
SOURCE_PATTERNS = ("*.py", "*.c")


def code_version(func=None):
    """SHA-256 (hex, 16 chars) of the dpstack code a cell function runs.

    For a function defined in dpstack, the files of its module's import closure
    (:func:`dpstack.provenance.module_closure`, read from the source: the same files whose
    hashes a committed result records and its staleness check compares). For any other
    function (a notebook's, a user module's) or ``None``, every source file of dpstack
    (``.py`` and ``.c``), since such code may call any of it. Each file counts by
    :func:`dpstack.provenance.code_hash` (a Python file's code without docstrings, the C file
    whole). Re-hashed whenever a file's size or modification time changes (an edit in a
    running session counts), so a cache written by other code is never returned.
    """
    while isinstance(func, functools.partial):
        func = func.func
    fingerprint = []
    paths = sorted({p for pattern in SOURCE_PATTERNS for p in _PACKAGE_ROOT.rglob(pattern)})
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            continue
        fingerprint.append((path.relative_to(_PACKAGE_ROOT).as_posix(), st.st_size, st.st_mtime_ns))
    module = getattr(func, "__module__", None) or ""
    if module.split(".")[0] == "dpstack" and module_file(module, _PACKAGE_ROOT) is not None:
        wanted = set(_closure_files(_PACKAGE_ROOT, module, tuple(fingerprint)))
        fingerprint = [f for f in fingerprint if f[0] in wanted]
    return _hash_sources(_PACKAGE_ROOT, tuple(fingerprint))


@functools.lru_cache(maxsize=64)
def _closure_files(root, module, fingerprint):
    """The files (relative to ``root``) of ``module``'s import closure; ``fingerprint`` keys the memo."""
    return tuple(module_file(m, root).relative_to(root).as_posix() for m in module_closure(module, package_root=root))


@functools.lru_cache(maxsize=64)
def _hash_sources(root, fingerprint):
    digest = hashlib.sha256()
    for rel, _, _ in fingerprint:
        digest.update(rel.encode())
        digest.update(b"\0")
        digest.update(code_hash(root / rel).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _forget_code_versions():
    _hash_sources.cache_clear()
    _closure_files.cache_clear()


code_version.cache_clear = _forget_code_versions  # forget the memo (benchmarks use it)


def cache_dir(cache=True):
    """Folder of the result cache.

    Parameters
    ----------
    cache : bool or path-like, default=True
        A path is used as is; otherwise ``$DPSTACK_CACHE`` when set, else the
        user cache folder ``$XDG_CACHE_HOME/dpstack`` (default ``~/.cache/dpstack``).
        Never the data home, which is read-only input.

    Returns
    -------
    pathlib.Path
    """
    if isinstance(cache, (str, os.PathLike)):
        return Path(cache)
    return user_cache_dir()


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


def _workers(n_jobs, n_todo):
    """joblib's ``n_jobs``, but never more workers than cells to compute (``-1``, all of a
    backend's workers, is left to the backend unless one cell is left)."""
    if isinstance(n_jobs, int) and not isinstance(n_jobs, bool):
        if n_jobs > 0 or n_todo <= 1:
            return max(1, min(n_jobs, n_todo)) if n_jobs > 0 else 1
    return n_jobs


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
        are columns, followed by the result's keys. ``frame.attrs["cells"]`` counts
        the cells: ``{"total", "computed", "from_cache"}`` (those read from the cache
        took no computing time).

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

    with tqdm(
        total=len(cells), initial=len(cells) - len(todo), desc=desc, disable=progress_disabled(), leave=False
    ) as bar:
        if todo:
            jobs = (delayed(_evaluate)(func, cells[i], seeds[i]) for i in todo)
            outputs = Parallel(n_jobs=_workers(n_jobs, len(todo)), return_as="generator")(jobs)
            for i, rows in zip(todo, outputs):
                results[i] = rows
                if store is not None:
                    store.save(cells[i], rows)
                bar.update(1)

    records = []
    for cell, rows in zip(cells, results):
        for row in rows:
            records.append(_merge(cell, row))
    frame = pd.DataFrame.from_records(records) if records else pd.DataFrame(columns=list(_union_keys(cells)))
    frame.attrs["cells"] = {"total": len(cells), "computed": len(todo), "from_cache": len(cells) - len(todo)}
    return frame


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
    """Name, bound partial arguments, and the code of functions defined outside dpstack (with their helpers)."""
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
        ident["depends"] = external_code_hashes(func)
    return ident


def external_code_hashes(func):
    """Hashes of the code outside dpstack that ``func`` depends on (dpstack: see :func:`code_version`).

    Walks what the function's code refers to: global functions and classes (their source,
    recursively), the source file of modules outside the installed packages (a project's own
    helper module), closure cells, global constants of immutable plain types (their value) and
    global numpy arrays (a hash of their content). A
    helper edited in a notebook or in a user module therefore changes the key.
    """
    out, seen = {}, set()

    def visit(obj, label):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, functools.partial):
            visit(obj.func, label)
            return
        if isinstance(obj, types.ModuleType):
            path = _local_module_file(obj)
            if path is not None:
                out[f"module:{obj.__name__}"] = code_hash(path)
            return
        if isinstance(obj, (types.FunctionType, type)):
            module = getattr(obj, "__module__", "") or ""
            if module.split(".")[0] == "dpstack" or _is_installed_module(module):
                return
            try:
                out[f"source:{label}"] = hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()
            except (OSError, TypeError):
                out[f"source:{label}"] = None
            mod = sys.modules.get(module)
            if mod is not None:
                visit(mod, module)
            if isinstance(obj, types.FunctionType):
                visit_code(obj.__code__, obj.__globals__)
                for i, cell in enumerate(obj.__closure__ or ()):
                    try:
                        visit(cell.cell_contents, f"{label}.<closure {i}>")
                    except ValueError:  # empty cell
                        pass
            return
        scalars = (bool, int, float, complex, str, bytes, type(None), np.generic)
        if isinstance(obj, scalars) or (
            isinstance(obj, (tuple, frozenset)) and all(isinstance(v, scalars) for v in obj)
        ):
            out[f"value:{label}"] = repr(obj)  # immutable constants; lists/dicts are state, not inputs
        elif isinstance(obj, np.ndarray) and obj.dtype != object:  # a data set the cell reads
            digest = hashlib.sha256(f"{obj.dtype.str}{obj.shape}".encode())
            digest.update(np.ascontiguousarray(obj).tobytes())
            out[f"value:{label}"] = digest.hexdigest()

    def visit_code(code, namespace):
        for name in code.co_names:
            if name in namespace:
                visit(namespace[name], name)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                visit_code(const, namespace)

    visit(func, _func_name(func))
    return out


@functools.lru_cache(maxsize=1)
def _installed_roots():
    import site

    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    try:
        paths |= set(site.getsitepackages()) | {site.getusersitepackages()}
    except AttributeError:  # some virtualenv versions lack them
        pass
    roots = (str(Path(p).resolve()) for p in paths if p)
    return tuple(r + os.sep for r in roots if r != os.sep)


def _is_installed_module(name):
    """True for the standard library and installed packages (numpy, sklearn...): versioned, not hashed.

    A module without a file (a notebook's ``__main__``, ``exec``'d code) is the user's code.
    """
    if name in sys.builtin_module_names:
        return True
    path = getattr(sys.modules.get(name), "__file__", None)
    if not name or not path:
        return False
    return str(Path(path).resolve()).startswith(_installed_roots())


def _local_module_file(mod):
    """The source file of a module outside the standard library and site-packages, else None."""
    path = getattr(mod, "__file__", None)
    if not path or not str(path).endswith(".py"):
        return None
    path = Path(path).resolve()
    if str(path).startswith(str(_PACKAGE_ROOT) + os.sep):
        return None  # dpstack: covered by code_version()
    if str(path).startswith(_installed_roots()):
        return None
    return path if path.is_file() else None


def _versions():
    import scipy
    import sklearn

    import dpstack

    return {
        "dpstack": dpstack.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "python": platform.python_version(),
    }


# ---------------------------------------------------------------------------------------------
# The on-disk entries: JSON that cannot run code, with a sha256 over everything after line 1.
# ---------------------------------------------------------------------------------------------
_FORMAT = "dpstack-cells/4"
#: Largest cache entry read (bytes); a cell's rows are a few kB. Larger files are refused unread.
MAX_ENTRY_BYTES = 16 << 20
#: Largest array rebuilt from an entry (bytes, from its declared dtype and shape, before allocating)
MAX_ARRAY_BYTES = 64 << 20


class UncacheableValueError(TypeError):
    """A result value that the JSON cache cannot store exactly."""


def _encode(value):
    """A JSON tree that :func:`_decode` turns back into an equal value of the same type."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, np.integer):
        return value
    if isinstance(value, float) and not isinstance(value, np.floating):
        return value if np.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, np.generic) and value.dtype.kind in "biufU":
        return {"__np__": value.dtype.str, "v": _encode(value.item())}
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufU":
        return {
            "__nd__": value.dtype.str,
            "shape": list(value.shape),
            "data": [_encode(v) for v in value.ravel().tolist()],
        }
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"__dict__": [[k, _encode(v)] for k, v in value.items()]}
    raise UncacheableValueError(f"cannot store a value of type {type(value).__name__} in the results cache")


def _dtype(text):
    """A numeric or str dtype from its ``.str``, refusing object dtypes and giant items (before any allocation)."""
    dtype = np.dtype(text)
    if dtype.kind not in "biufU" or dtype.itemsize > MAX_ARRAY_BYTES:
        raise ValueError(f"refusing dtype {dtype} in a cache entry")
    return dtype


def _decode(tree):
    if isinstance(tree, list):
        return [_decode(v) for v in tree]
    if not isinstance(tree, dict):
        return tree
    if "__float__" in tree:
        return float(tree["__float__"])
    if "__np__" in tree:
        return _dtype(tree["__np__"]).type(_decode(tree["v"]))
    if "__nd__" in tree:
        dtype = _dtype(tree["__nd__"])
        shape = tree["shape"]
        if not isinstance(shape, list) or not all(isinstance(n, int) and 0 <= n < 2**40 for n in shape):
            raise ValueError("bad array shape in a cache entry")
        size = int(np.prod(shape, dtype=object))
        if size != len(tree["data"]) or size * dtype.itemsize > MAX_ARRAY_BYTES:
            raise ValueError(f"refusing an array of shape {shape} and dtype {dtype} in a cache entry")
        return np.array([_decode(v) for v in tree["data"]], dtype=dtype).reshape(shape)
    if "__tuple__" in tree:
        return tuple(_decode(v) for v in tree["__tuple__"])
    if "__dict__" in tree:
        return {k: _decode(v) for k, v in tree["__dict__"]}
    raise ValueError("unknown tag in a cache entry")


class _CellStore:
    """Result rows of one (func, seed) as JSON files ``<dir>/cells/<func name>/<key>.json``.

    An entry is two lines: the HMAC-SHA256 (hex) of the second line under the per-user cache
    key, then the JSON document ``{"format", "key", "rows"}``. On read the size (at most
    :data:`MAX_ENTRY_BYTES`), the MAC, the format and the full key are checked; any mismatch
    or parse failure is a miss (the entry is deleted, a :class:`CacheIntegrityWarning` names
    it, and the cell is recomputed). Nothing in an entry is ever executed: values are rebuilt
    from JSON with a closed set of types (Python scalars, numpy scalars and numeric/str arrays,
    tuples, lists, dicts with str keys), arrays only after their declared size is checked.
    """

    def __init__(self, root, func, seed):
        self.root = Path(root)
        self.folder = Path(root) / "cells" / _func_name(func).replace("<", "_").replace(">", "_")
        self.prefix = {
            "format": _FORMAT,
            "func": _func_identity(func),
            "seed": int(seed),
            "code": code_version(func),
            "versions": _versions(),
            "platform": current_platform_key(),
        }
        self._warned = False
        try:
            self.secret = cache_key(self.root)
        except CacheKeyError as err:
            self.secret = None
            self._warn(f"results of {self.folder.name} are not cached: {err}")
        if self.folder.is_dir():
            remove_orphans(self.folder)

    def _warn(self, message, category=RuntimeWarning):
        if not self._warned:
            warnings.warn(message, category, stacklevel=4)
            self._warned = True

    def _key(self, cell):
        return json.dumps({**self.prefix, "cell": cell}, sort_keys=True, default=_json_default)

    def _path(self, key):
        return self.folder / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")

    def load(self, cell):
        if self.secret is None:
            return None
        key = self._key(cell)
        path = self._path(key)
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_ENTRY_BYTES + 1)  # never more, whatever the file's size
        except OSError:  # absent (the usual miss) or unreadable
            return None
        if len(data) > MAX_ENTRY_BYTES:
            rows, why = None, f"it is larger than {MAX_ENTRY_BYTES:,} bytes (refused unread)"
        else:
            rows, why = self._parse(data, key, self.secret)
        if rows is None:
            warnings.warn(
                f"discarded the cache entry {path}: {why}; the cell is recomputed", CacheIntegrityWarning, stacklevel=3
            )
            try:
                path.unlink(missing_ok=True)  # corrupt, forged, foreign or stale: recompute and rewrite
            except OSError as err:  # a read-only cache: the entry stays, the cell is recomputed each time
                self._warn(f"could not remove the discarded cache entry {path} ({err}); it is ignored")
        return rows

    @staticmethod
    def _parse(data, key, secret):
        """``(rows, None)``, or ``(None, why)`` for an entry that is not accepted."""
        head, sep, body = data.partition(b"\n")
        if not sep or not mac_ok(secret, body, head):
            return None, "its MAC does not verify (edited, damaged, or written with another key)"
        try:
            doc = json.loads(body.decode("utf-8"))
            if not isinstance(doc, dict) or doc.get("format") != _FORMAT or doc.get("key") != key:
                return None, "it belongs to another cell or format"
            rows = _decode(doc["rows"])
        except (ValueError, KeyError, TypeError, IndexError, OverflowError, MemoryError) as err:
            return None, f"its content is refused ({type(err).__name__}: {err})"
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            return None, "its content is not a list of rows"
        return rows, None

    def save(self, cell, rows):
        if self.secret is None:
            return
        key = self._key(cell)
        try:
            body = json.dumps(
                {"format": _FORMAT, "key": key, "rows": _encode(rows)}, separators=(",", ":"), allow_nan=False
            ).encode("utf-8")
        except UncacheableValueError as err:
            if not self._warned:
                warnings.warn(f"results of {self.folder.name} are not cached: {err}", RuntimeWarning, stacklevel=3)
                self._warned = True
            return
        if len(body) + 65 > MAX_ENTRY_BYTES:
            self._warn(f"results of {self.folder.name} are not cached: an entry of {len(body):,} bytes is too large")
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Unique temp name (host, pid: a later run can tell an orphan) + os.replace: atomic, so
            # neither a crash nor a concurrent writer leaves a half-written entry under the final name.
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".", suffix=temp_suffix())
        except OSError as err:
            if not self._warned:
                warnings.warn(
                    f"results cache {self.folder} is not writable ({err}); not caching", RuntimeWarning, stacklevel=3
                )
                self._warned = True
            return
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(mac(self.secret, body).encode() + b"\n" + body)
            os.replace(tmp, path)
        except BaseException as err:
            Path(tmp).unlink(missing_ok=True)
            if not isinstance(err, OSError):
                raise
