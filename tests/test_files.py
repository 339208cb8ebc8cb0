"""The orphan cleaner deletes only the project's own temporary files, never through a symbolic link."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from dpstack._files import HOST, is_orphan, remove_orphans


def _dead_pid():
    return int(
        subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True, text=True
        ).stdout
    )


def _plant(folder, pid):
    """A dead writer's file of this host, an old one of another host, and an old file of another naming."""
    folder.mkdir(parents=True, exist_ok=True)
    dead = folder / f"data.npz.{HOST}.{pid}.0123abcd.tmp"
    foreign = folder / "data.npz.otherhost.17.89abcdef.tmp"
    theirs = folder / "notes.tmp"
    for p in (dead, foreign, theirs):
        p.write_text("x")
    old = time.time() - 7200
    os.utime(foreign, (old, old))
    os.utime(theirs, (old, old))
    return dead, foreign, theirs


def test_only_the_projects_own_naming_is_ever_an_orphan(tmp_path):
    dead, foreign, theirs = _plant(tmp_path / "cache", _dead_pid())
    assert is_orphan(dead) and is_orphan(foreign) and not is_orphan(theirs)
    remove_orphans(tmp_path / "cache")
    assert not dead.exists() and not foreign.exists() and theirs.exists()


def test_a_symlinked_cache_folder_is_not_cleaned_through(tmp_path, monkeypatch):
    """Whoever can write a shared cache links a sub-folder to the victim's folder: nothing there is deleted."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("DPSTACK_CACHE", str(cache))
    victim = tmp_path / "home" / "documents"
    planted = _plant(victim, _dead_pid())
    cache.mkdir()
    (cache / "mnist").symlink_to(victim, target_is_directory=True)
    remove_orphans(cache / "mnist")
    (victim / "sub").mkdir()
    sub_planted = _plant(victim / "sub", _dead_pid())
    remove_orphans(cache / "mnist" / "sub")  # under the link, inside the cache
    assert all(p.exists() for p in planted + sub_planted)
    # a candidate that is itself a link is not followed either
    real = cache / "real"
    real.mkdir()
    target = tmp_path / "keep.txt"
    target.write_text("keep")
    link = real / f"data.npz.{HOST}.{_dead_pid()}.0123abcd.tmp"
    link.symlink_to(target)
    remove_orphans(real)
    assert link.is_symlink() and target.exists()
