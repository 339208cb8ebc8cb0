"""Parsed and preprocessed arrays cached as ``.npz`` in the user cache folder, never in the data home.

The data home is read-only input. Derived arrays go to ``<cache>/datasets`` where
``<cache>`` is ``$DPSTACK_CACHE``, else ``$XDG_CACHE_HOME/dpstack`` (``~/.cache/dpstack``).
Each entry is bound to its key (the source file's sha256, the loader's version and any
parameters) and to a sha256 of its arrays; both are stored in the entry and checked on
read. Entries are read with ``allow_pickle=False`` (nothing stored can run code). A
missing, truncated, corrupt or foreign entry is deleted and the caller re-parses from the
source; a cache folder that cannot be written means no caching. Caching never raises.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from .._files import atomic_output, remove_orphans, user_cache_dir

FORMAT = "dpstack-dataset-cache/2"
_META = "__meta__"


def cache_dir():
    """The folder of the dataset caches: ``<user cache>/datasets``."""
    return user_cache_dir() / "datasets"


def _key_text(name, key):
    return json.dumps({"name": name, **key}, sort_keys=True)


def _path(name, key_text):
    return cache_dir() / f"{name}-{hashlib.sha256(key_text.encode()).hexdigest()[:24]}.npz"


def _digest(arrays):
    h = hashlib.sha256()
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def load(name, key):
    """Arrays cached under ``(name, key)``, or None (absent, unreadable, corrupt or another key).

    Parameters
    ----------
    name : str
        Entry name (e.g. ``"news20"``).
    key : dict
        JSON-serialisable; must hold everything the arrays depend on, at least
        ``source_sha256`` and ``loader_version``.
    """
    text = _key_text(name, key)
    path = _path(name, text)
    remove_orphans(path.parent)  # temporary files of writers killed mid-write
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(arrays.pop(_META).tobytes().decode("utf-8"))
        if meta == {"format": FORMAT, "key": text, "sha256": _digest(arrays)}:
            return arrays
    except Exception:  # noqa: BLE001, S110 - truncated/corrupt zip, bad header, object arrays...: re-parse instead
        pass
    try:
        path.unlink()
    except OSError:
        pass
    return None


def save(name, key, arrays):
    """Store ``arrays`` (dict of non-object numpy arrays) under ``(name, key)``; the path, or None if not writable."""
    text = _key_text(name, key)
    path = _path(name, text)
    meta = json.dumps({"format": FORMAT, "key": text, "sha256": _digest(arrays)})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_orphans(path.parent)
        with atomic_output(path) as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, **arrays, **{_META: np.frombuffer(meta.encode("utf-8"), np.uint8)})
        return path
    except (OSError, ValueError):
        return None
