"""Reading tar/zip archives safely: no path traversal, no absolute paths, no links.

A downloaded archive is untrusted input: a member named ``../../.bashrc`` or a
symlink pointing outside the folder would write outside the extraction folder
(CVE-2007-4559 and friends). Every member is checked before anything is read.
"""

from __future__ import annotations

import shutil
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

__all__ = ["UnsafeArchiveError", "check_member_name", "iter_tar_files", "safe_extract", "extract_members"]


class UnsafeArchiveError(ValueError):
    """An archive member would escape the extraction folder or is not a plain file/folder."""


def check_member_name(name):
    """Refuse absolute names, drive letters, backslashes and ``..`` components; return the parts."""
    if not name or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchiveError(f"archive member {name!r} has an absolute path; refused")
    if "\\" in name:
        raise UnsafeArchiveError(f"archive member {name!r} contains a backslash; refused")
    parts = PurePosixPath(name).parts
    if ".." in parts:
        raise UnsafeArchiveError(f"archive member {name!r} escapes the extraction folder; refused")
    return parts


def _check_tar_member(member):
    check_member_name(member.name)
    if not (member.isfile() or member.isdir()):
        kind = "link" if (member.issym() or member.islnk()) else "special file"
        raise UnsafeArchiveError(f"archive member {member.name!r} is a {kind}; refused")


def iter_tar_files(path):
    """Yield ``(member name, bytes)`` for every regular file of a tar(.gz), in archive order.

    Every member (files, folders, links) is checked first; one unsafe member refuses the
    whole archive. Nothing is written to disk.
    """
    with tarfile.open(path, "r:*") as tar:
        members = tar.getmembers()
        for m in members:
            _check_tar_member(m)
        for m in members:
            if m.isfile():
                yield m.name, tar.extractfile(m).read()


def safe_extract(path, dest, members=None):
    """Extract a tar(.gz) or zip archive into ``dest`` after checking every member.

    Parameters
    ----------
    path : path-like
        The archive.
    dest : path-like
        Extraction folder (created).
    members : list of str, optional
        Member names to extract (default all).

    Returns
    -------
    extracted : dict
        Member name -> extracted path, for the regular files written.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    out = {}
    wanted = None if members is None else set(members)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            for info in infos:
                check_member_name(info.filename)
                if (info.external_attr >> 16) & 0o170000 == 0o120000:  # a symlink stored in the zip
                    raise UnsafeArchiveError(f"archive member {info.filename!r} is a link; refused")
            for info in infos:
                if info.is_dir() or (wanted is not None and info.filename not in wanted):
                    continue
                target = dest.joinpath(*check_member_name(info.filename))
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                out[info.filename] = target
        return out
    with tarfile.open(path, "r:*") as tar:
        tmembers = tar.getmembers()
        for m in tmembers:
            _check_tar_member(m)
        for m in tmembers:
            if not m.isfile() or (wanted is not None and m.name not in wanted):
                continue
            target = dest.joinpath(*check_member_name(m.name))
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(m) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            out[m.name] = target
    return out


def extract_members(path, dest, members):
    """Extract the named members; raise ``KeyError`` naming any member not in the archive."""
    out = safe_extract(path, dest, members)
    absent = [m for m in members if m not in out]
    if absent:
        raise KeyError(f"archive {path} has no member(s) {', '.join(absent)}")
    return out
