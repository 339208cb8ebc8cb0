"""What a computed number depends on: the code that computed it and the numerical platform it ran on.

One home for two pieces of provenance that the committed results, the runner's cell cache and
the audit's stored tables all record:

* **Code.** :func:`code_hash` is the one hasher of source files: a Python file counts by its
  syntax tree without docstrings (so an edit of the documentation, a comment or the layout does
  not change what it computes), a C file (the compiled solver pass, ``dpstack/_fused.c``) by its
  whole text. :func:`code_hashes` hashes a set of files; :func:`module_closure` finds, from the
  source alone (nothing is imported), the dpstack modules a module imports, transitively, and
  :func:`closure_hashes` hashes them. The committed results record these hashes (their
  staleness check compares them) and the runner's cell cache keys on them.
* **Numerical platform.** The same code and inputs give the same bits only on the same
  *numerical platform*: the BLAS libraries and the kernels they picked for this CPU (OpenBLAS
  chooses, e.g., Haswell or SkylakeX kernels at load time, or what ``OPENBLAS_CORETYPE`` says),
  the solver's compiled pass on or off (``DPSTACK_FUSED``), the vector extensions numpy's own
  loops dispatch to (its ``exp`` and ``log`` differ in the last bit between AVX2 and AVX-512
  code), the CPU architecture and the versions of Python, numpy, scipy and scikit-learn.
  :func:`numerical_platform` records these; :func:`platform_key` is a short hash of them.
  On the same platform a result is reproduced bit for bit; on another, within the stated
  tolerances of :mod:`dpstack.companion.results` (its replay).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import platform
from pathlib import Path

__all__ = [
    "code_hash",
    "code_hashes",
    "module_file",
    "module_closure",
    "closure_hashes",
    "numerical_platform",
    "platform_key",
    "current_platform_key",
    "platform_summary",
]

#: The vector extensions that change which code numpy's loops (and the compiled pass) run; the
#: first enabled one of each family is what the dispatch picks, so their set identifies the path.
_EXTENSIONS = ("SSE42", "AVX", "FMA3", "AVX2", "AVX512F", "AVX512_SKX", "AVX512_ICL", "AVX512_SPR", "ASIMD", "SVE")


def _strip_docstrings(source, filename="<source>"):
    tree = ast.parse(source, filename=filename)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False)


def code_hash(path):
    """sha256 (hex) of what a source file computes.

    A Python file counts by its syntax tree without docstrings: comments, layout and
    docstrings do not change the hash, any change of code does. Any other file (the compiled
    pass's C source) counts by its whole content.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    str
        64 hex digits.
    """
    path = Path(path)
    data = path.read_bytes()
    if path.suffix == ".py":
        data = _strip_docstrings(data, str(path)).encode()
    return hashlib.sha256(data).hexdigest()


def code_hashes(paths, root):
    """``{path relative to root (posix): code_hash(path)}`` for ``paths``, sorted by name."""
    root = Path(root)
    return {Path(p).relative_to(root).as_posix(): code_hash(p) for p in sorted(map(Path, paths))}


#: The folder of the dpstack package and the project folder that holds it.
PACKAGE_ROOT = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_ROOT.parent


def module_file(name, package_root=None):
    """The source file of dpstack module ``name`` (a package's ``__init__.py``; a C file for a compiled one), or None."""
    parts = name.split(".")
    if parts[0] != "dpstack":
        return None
    base = Path(package_root or PACKAGE_ROOT).joinpath(*parts[1:])
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    for suffix in (".py", ".c"):  # dpstack._fused is built from dpstack/_fused.c
        path = base.with_suffix(suffix)
        if path.is_file():
            return path
    return None


def _imports_of(name, path, package_root):
    """dpstack modules imported anywhere in ``path`` (module level or inside functions)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            # a bare `import dpstack` reads the version (recorded apart), not the API it re-exports
            found.extend(alias.name for alias in node.names if alias.name != "dpstack")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:  # `from pkg import mod` imports mod (pkg only as its parent)
                sub = f"{base}.{alias.name}"
                found.append(sub if module_file(sub, package_root) is not None else base)
    return [m for m in found if m.split(".")[0] == "dpstack" and module_file(m, package_root) is not None]


def module_closure(*modules, package_root=None):
    """The dpstack modules that ``modules`` import, transitively, including themselves.

    Imports are read from the source (module level and inside functions), so a module
    imported lazily counts, and nothing is imported. Parent packages imported only implicitly
    (``dpstack``, ``dpstack.companion``) do not count, unless a module imports a name from
    them; a bare ``import dpstack`` (read for its version, which provenance records apart)
    does not either.

    Parameters
    ----------
    *modules : str
        Dotted module names (names outside dpstack are ignored).
    package_root : path, optional
        The dpstack folder to read (default: this one).

    Returns
    -------
    list of str
        Module names, sorted.
    """
    seen, todo = set(), [m for m in modules if module_file(m, package_root) is not None]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = module_file(name, package_root)
        if path.suffix == ".py":
            todo.extend(_imports_of(name, path, package_root))
    return sorted(seen)


def closure_hashes(*modules, package_root=None):
    """``{path relative to the project: code_hash}`` of every file in :func:`module_closure` of ``modules``."""
    root = Path(package_root or PACKAGE_ROOT)
    files = [module_file(m, root) for m in module_closure(*modules, package_root=root)]
    return code_hashes(files, root.parent)


def _blas():
    """The BLAS/LAPACK libraries loaded (numpy's and scipy's), as threadpoolctl reports them."""
    import numpy  # noqa: F401 - loads numpy's BLAS, so that threadpoolctl sees it
    import scipy.linalg  # noqa: F401 - and scipy's

    try:
        from threadpoolctl import threadpool_info

        info = threadpool_info()
    except Exception:  # noqa: BLE001 - provenance never fails a computation; an empty list says it is unknown
        return []
    out = []
    for lib in info:
        if lib.get("user_api") != "blas":
            continue
        out.append(
            {
                "library": lib.get("internal_api"),
                "file": Path(lib.get("filepath") or "").name,
                "version": lib.get("version"),
                "architecture": lib.get("architecture"),
                "threading_layer": lib.get("threading_layer"),
            }
        )
    return sorted(out, key=lambda d: json.dumps(d, sort_keys=True))


def _extensions():
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # numpy < 2
        try:
            from numpy.core._multiarray_umath import __cpu_features__
        except ImportError:
            return []
    return [name for name in _EXTENSIONS if __cpu_features__.get(name)]


def numerical_platform():
    """What decides the bits of a floating-point result, besides the code and the inputs.

    Returns
    -------
    dict
        ``machine`` (the CPU architecture, e.g. ``x86_64``), ``cpu_extensions`` (the vector
        extensions numpy dispatches to, from :data:`_EXTENSIONS`), ``blas`` (one entry per
        loaded BLAS library: library, file, version and the kernel architecture it picked),
        ``fused_pass`` (whether the solver's compiled value-and-gradient pass runs) and
        ``versions`` (Python, numpy, scipy, scikit-learn). Read afresh at each call (the
        environment decides the BLAS kernels and the pass when the libraries load).
    """
    import numpy as np
    import scipy
    import sklearn

    from dpstack import solvers

    return {
        "machine": platform.machine(),
        "cpu_extensions": _extensions(),
        "blas": _blas(),
        "fused_pass": bool(solvers.FUSED),
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__,
        },
    }


def platform_key(plat=None):
    """A short hash (16 hex digits) of :func:`numerical_platform` (or of ``plat``): equal keys, equal bits."""
    plat = numerical_platform() if plat is None else plat
    text = json.dumps(plat, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=2)
def _cached_key(fused):
    return platform_key()


def current_platform_key():
    """:func:`platform_key` of this process, memoised: the BLAS kernels are fixed once the libraries
    are loaded; the solver's pass (:data:`dpstack.solvers.FUSED`) is read at every call."""
    from dpstack import solvers

    return _cached_key(bool(solvers.FUSED))


_LIBRARY_NAMES = {"openblas": "OpenBLAS", "mkl": "MKL", "blis": "BLIS", "accelerate": "Accelerate"}


def platform_summary(plat):
    """One phrase for a reader: ``x86_64 with AVX512_ICL, OpenBLAS SkylakeX kernels, compiled pass``.

    The versions and library files are in the full record (:func:`numerical_platform`).
    """
    if not plat:
        return "not recorded"
    kernels = sorted(
        {
            f"{_LIBRARY_NAMES.get(b.get('library'), b.get('library') or 'BLAS')} {b.get('architecture')}"
            for b in plat.get("blas", [])
        }
    )
    ext = plat.get("cpu_extensions") or []
    top = f" with {ext[-1]}" if ext else ""
    passes = "compiled pass" if plat.get("fused_pass") else "numpy pass"
    return f"{plat.get('machine')}{top}, {' and '.join(kernels) or 'BLAS unknown'} kernels, {passes}"
