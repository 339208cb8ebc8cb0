"""Where dpstack writes (the user cache folder) and how: atomically, cleaning up after killed writers.

The data home is read-only input; everything dpstack derives from it (parsed datasets,
preprocessed tasks, experiment results) goes to :func:`user_cache_dir`.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

HOST = (socket.gethostname() or "host").replace(".", "_")
ORPHAN_AGE = 3600.0  # s: a temporary file of another host counts as orphaned once this old


def user_cache_dir():
    """``$DPSTACK_CACHE`` when set, else ``$XDG_CACHE_HOME/dpstack`` (default ``~/.cache/dpstack``)."""
    env = os.environ.get("DPSTACK_CACHE")
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "dpstack"


def temp_suffix():
    """``.<host>.<pid>.<random>.tmp``: unique, and tells a later run whether its writer is still alive."""
    return f".{HOST}.{os.getpid()}.{os.urandom(4).hex()}.tmp"


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: the process exists
        return True
    return True


def _writer_of(name):
    """``(host, pid)`` from a name made by :func:`temp_suffix` (``….<host>.<pid>.<8 hex>.tmp|part``), else None."""
    parts = name.split(".")
    if len(parts) < 5 or parts[-1] not in ("tmp", "part"):
        return None
    host, pid, tag = parts[-4], parts[-3], parts[-2]
    if not (host and pid.isdigit() and len(tag) == 8 and all(c in "0123456789abcdef" for c in tag)):
        return None
    return host, int(pid)


def is_orphan(path, now=None):
    """True for a temporary file (or folder) named by :func:`temp_suffix` whose writer is gone.

    Same host: the writer's process no longer exists. Another host (a shared folder): older
    than one hour. A name not made by :func:`temp_suffix` is never an orphan, whatever its age.
    """
    writer = _writer_of(Path(path).name)
    if writer is None:
        return False
    host, pid = writer
    if host == HOST:
        return not _pid_alive(pid)
    try:
        return (now or time.time()) - Path(path).lstat().st_mtime > ORPHAN_AGE
    except OSError:
        return False


def _through_link(folder):
    """True when ``folder`` is a symbolic link, or lies under one inside the user cache folder."""
    folder = Path(os.path.abspath(folder))
    cache = Path(os.path.abspath(user_cache_dir()))
    inside = folder == cache or cache in folder.parents
    for path in [folder, *folder.parents]:
        if path.is_symlink():
            return True
        if not inside or path == cache:
            return False
    return False


def remove_orphans(folder, pattern="*.tmp"):
    """Delete the temporary files in ``folder`` left by writers that were killed mid-write.

    Only names made by :func:`temp_suffix` are candidates; nothing is deleted through a
    symbolic link: a ``folder`` that is (or lies under) a link the cache did not make is left
    alone, and a candidate that is a link is not followed.
    """
    import shutil

    folder = Path(folder)
    try:
        if _through_link(folder):
            return  # a linked folder: its files may be anybody's
        candidates = list(folder.glob(pattern))
    except OSError:
        return
    for path in candidates:
        try:
            if path.is_symlink() or not is_orphan(path):
                continue
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink()
        except OSError:
            pass  # vanished meanwhile, or not ours to delete


@contextmanager
def atomic_output(path):
    """Yield a unique temporary path next to ``path``; on success rename it onto ``path`` (os.replace).

    A crash or an exception leaves ``path`` untouched (the temporary file is removed; one
    killed by SIGKILL is removed by :func:`remove_orphans` on a later run), and concurrent
    writers never see each other's partial files.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=temp_suffix())
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------------------------
# The per-user key that authenticates cache entries (HMAC-SHA256), kept outside every cache.
# ---------------------------------------------------------------------------------------------
KEY_ENV = "DPSTACK_CACHE_KEY"


class CacheKeyError(OSError):
    """The cache key cannot be created or read, is readable by others, or lies inside a cache folder."""


def cache_key_path():
    """Where the cache key lives: ``$DPSTACK_CACHE_KEY`` when set, else ``$XDG_CONFIG_HOME/dpstack/cache.key``.

    ``$XDG_CONFIG_HOME`` defaults to ``~/.config``: a per-user folder, never the cache folder
    (whoever can write the cache must not be able to read or replace the key).
    """
    env = os.environ.get(KEY_ENV)
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config").expanduser() / "dpstack" / "cache.key"


def _inside(path, folder):
    try:
        Path(path).resolve().relative_to(Path(folder).resolve())
    except ValueError:
        return False
    return True


def _read_key(path):
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise CacheKeyError(f"the cache key {path} belongs to another user; refused")
        if st.st_mode & 0o077:
            raise CacheKeyError(
                f"the cache key {path} is readable or writable by others (mode {st.st_mode & 0o777:o}); "
                f"refused. Make it private (chmod 600 {path}) or delete it to create a new one"
            )
        text = fh.read(129).strip()
    try:
        key = bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) < 32:
        raise CacheKeyError(f"the cache key {path} is damaged (expected 64 hex digits); delete it to create a new one")
    return key


def _create_key(path):
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + temp_suffix())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(32).hex().encode() + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # never replaces: a concurrent first use keeps the key that won
        except FileExistsError:
            pass
    finally:
        Path(tmp).unlink(missing_ok=True)


def cache_key(*caches):
    """The per-user secret (32 bytes) that authenticates cache entries; created on first use.

    Read from :func:`cache_key_path`; created there with mode 0600 (its folder 0700) the first
    time it is needed (read again at every use: a small file). Refused (:class:`CacheKeyError`) when it lies inside :func:`user_cache_dir`
    or one of ``caches`` (whoever can write a cache could then replace the key), belongs to
    another user, or is readable by others.

    Parameters
    ----------
    *caches : path-like
        Further cache folders the key must lie outside of.

    Returns
    -------
    bytes
    """
    path = cache_key_path()
    for folder in (user_cache_dir(), *caches):
        if _inside(path, folder):
            raise CacheKeyError(
                f"the cache key {path} lies inside the cache folder {folder}: whoever can write the cache "
                f"could replace it. Point {KEY_ENV} at a file outside it (default ~/.config/dpstack/cache.key)"
            )
    try:
        try:
            key = _read_key(path)
        except FileNotFoundError:
            _create_key(path)
            key = _read_key(path)
    except CacheKeyError:
        raise
    except OSError as err:
        raise CacheKeyError(f"cannot create or read the cache key {path}: {err}") from err
    return key


def mac(key, data):
    """HMAC-SHA256 of ``data`` (bytes) under ``key``, as 64 hex digits."""
    import hmac

    return hmac.new(key, data, "sha256").hexdigest()


def mac_ok(key, data, expected):
    """True when ``expected`` (hex str or bytes) is the HMAC-SHA256 of ``data``; constant-time comparison."""
    import hmac

    if isinstance(expected, bytes):
        try:
            expected = expected.decode("ascii")
        except UnicodeDecodeError:
            return False
    return isinstance(expected, str) and hmac.compare_digest(mac(key, data), expected)
