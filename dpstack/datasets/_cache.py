"""Parsed and preprocessed arrays cached as ``.npz`` in the user cache folder, never in the data home.

The data home is read-only input. Derived arrays go to ``<cache>/datasets`` where
``<cache>`` is ``$DPSTACK_CACHE``, else ``$XDG_CACHE_HOME/dpstack`` (``~/.cache/dpstack``).
Each entry is bound to its key (the source file's sha256, the loader's version and any
parameters) and to a sha256 of its arrays, and carries an HMAC-SHA256 of both under the
per-user cache key (:func:`dpstack._files.cache_key`, kept outside the cache): someone who
can write the cache folder but not read the key cannot make an entry that is accepted.
Before any array is read, the file's size, the number of arrays and each array's header
(dtype: numbers and fixed-width strings only, never objects; declared size) are checked
against limits. Entries are read with ``allow_pickle=False`` (nothing stored can run code).
A missing entry is a miss; a truncated, corrupt, forged, oversized or foreign one is deleted
with a :class:`CacheIntegrityWarning` naming it, and the caller re-parses from the source. A
cache folder that cannot be written, or no usable key, means no caching. Caching never raises.
"""

from __future__ import annotations

import hashlib
import json
import warnings
import zipfile

import numpy as np

from .._files import CacheKeyError, atomic_output, cache_key, mac, mac_ok, remove_orphans, user_cache_dir

FORMAT = "dpstack-dataset-cache/3"
_META = "__meta__"
#: Largest entry read (bytes on disk, and the arrays' declared size in memory): the largest
#: entry the loaders write (the parsed 20 Newsgroups posts, HAR's feature matrix) is about 40 MB.
MAX_ENTRY_BYTES = 1 << 30
MAX_ARRAYS = 64
_KINDS = "biufcSU"  # numbers, bytes and str of fixed width: never objects


class CacheIntegrityWarning(RuntimeWarning):
    """A dataset cache entry was discarded: damaged, forged (bad MAC), oversized or of a refused dtype."""


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


def _check_headers(path):
    """Refuse an entry before reading any array: size on disk, number of arrays, dtypes, declared sizes."""
    size = path.stat().st_size
    if size > MAX_ENTRY_BYTES:
        raise ValueError(f"it is {size:,} bytes, more than the {MAX_ENTRY_BYTES:,} accepted")
    total = 0
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        if len(names) > MAX_ARRAYS:
            raise ValueError(f"it holds {len(names)} arrays, more than {MAX_ARRAYS}")
        for name in names:
            with zf.open(name) as fh:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
                else:
                    shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
            if dtype.hasobject or dtype.kind not in _KINDS:
                raise ValueError(f"array {name} has the refused dtype {dtype}")
            total += int(np.prod(shape, dtype=object)) * dtype.itemsize
            if total > MAX_ENTRY_BYTES:
                raise ValueError(f"its arrays declare more than {MAX_ENTRY_BYTES:,} bytes")


def _mac_text(text, digest):
    return json.dumps({"format": FORMAT, "key": text, "sha256": digest}, sort_keys=True).encode("utf-8")


def _discard(path, why):
    if why is not None:
        warnings.warn(
            f"discarded the dataset cache entry {path}: {why}; the source is parsed again",
            CacheIntegrityWarning,
            stacklevel=3,
        )
    try:
        path.unlink()
    except OSError:
        pass


def load(name, key):
    """Arrays cached under ``(name, key)``, or None (absent, unreadable, corrupt, forged or another key).

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
        secret = cache_key(user_cache_dir())
    except CacheKeyError as err:
        warnings.warn(f"dataset cache not used: {err}", RuntimeWarning, stacklevel=2)
        return None
    try:
        _check_headers(path)
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(arrays.pop(_META).tobytes().decode("utf-8"))
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key") != text:
            why = None  # an entry of an earlier version (or a colliding key): replaced without a warning
        else:
            digest = _digest(arrays)
            if meta.get("sha256") == digest and mac_ok(secret, _mac_text(text, digest), meta.get("mac")):
                return arrays
            why = "its MAC does not verify (edited, replaced, damaged, or written with another key)"
    except Exception as err:  # noqa: BLE001 - truncated/corrupt zip, bad header, object arrays...: re-parse instead
        why = f"it cannot be read or is refused ({type(err).__name__}: {err})"
    _discard(path, why)
    return None


def save(name, key, arrays):
    """Store ``arrays`` (dict of non-object numpy arrays) under ``(name, key)``; the path, or None if not cached."""
    text = _key_text(name, key)
    path = _path(name, text)
    try:
        secret = cache_key(user_cache_dir())
    except CacheKeyError:
        return None
    digest = _digest(arrays)
    meta = json.dumps({"format": FORMAT, "key": text, "sha256": digest, "mac": mac(secret, _mac_text(text, digest))})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_orphans(path.parent)
        with atomic_output(path) as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, **arrays, **{_META: np.frombuffer(meta.encode("utf-8"), np.uint8)})
        return path
    except (OSError, ValueError):
        return None
