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


def is_orphan(path, now=None):
    """True for a temporary file (or folder) named by :func:`temp_suffix` whose writer is gone.

    Same host: the writer's process no longer exists. Another host (a shared folder): older
    than one hour.
    """
    parts = Path(path).name.split(".")
    try:
        host, pid = parts[-4], int(parts[-3])
    except (IndexError, ValueError):
        host, pid = None, None
    if host == HOST and pid is not None:
        return not _pid_alive(pid)
    try:
        return (now or time.time()) - Path(path).stat().st_mtime > ORPHAN_AGE
    except OSError:
        return False


def remove_orphans(folder, pattern="*.tmp"):
    """Delete the temporary files in ``folder`` left by writers that were killed mid-write."""
    import shutil

    try:
        candidates = list(Path(folder).glob(pattern))
    except OSError:
        return
    for path in candidates:
        try:
            if is_orphan(path):
                if path.is_dir() and not path.is_symlink():
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
