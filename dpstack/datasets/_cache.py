"""Parsed arrays cached as ``.npz`` next to the raw files, or elsewhere, or not at all.

The cache is keyed by the raw file's sha256 and a parser version, so a changed file or
parser never returns stale arrays. The data home may be read-only (a shared copy):
then the per-user cache folder is used, and if that is not writable either, nothing
is cached. Caching never raises.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import numpy as np

PARSER_VERSION = 1


def _writable(folder):
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
        return True
    except OSError:
        return False


def cache_dirs(home):
    """Candidate cache folders, best first: ``<data home>/.cache``, then the user cache.

    The data home counts only if its own permission bits allow writing: a folder
    marked read-only (a shared copy) is left untouched even for a user (root) who
    could write into it anyway.
    """
    user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dpstack"
    home = Path(home)
    try:
        home_writable = bool(home.stat().st_mode & stat.S_IWUSR)
    except OSError:
        home_writable = False
    return ([home / ".cache"] if home_writable else []) + [user]


def _key(name, sha):
    return f"{name}-{sha[:20]}-v{PARSER_VERSION}.npz"


def load(home, name, sha):
    """Arrays cached for (name, sha256), or None."""
    for folder in cache_dirs(home):
        path = folder / _key(name, sha)
        if path.is_file():
            try:
                with np.load(path, allow_pickle=False) as z:
                    return {k: z[k] for k in z.files}
            except (OSError, ValueError):
                continue
    return None


def save(home, name, sha, arrays):
    """Store arrays for (name, sha256) in the first writable cache folder; silently skip if none."""
    for folder in cache_dirs(home):
        if not _writable(folder):
            continue
        path = folder / _key(name, sha)
        try:
            with tempfile.NamedTemporaryFile(dir=folder, suffix=".npz", delete=False) as tmp:
                np.savez(tmp, **arrays)
            os.chmod(tmp.name, 0o644)
            os.replace(tmp.name, path)
            return path
        except OSError:
            try:
                os.unlink(tmp.name)
            except OSError:
                pass
    return None
