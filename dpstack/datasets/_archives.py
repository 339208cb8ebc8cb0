"""Reading tar/zip archives safely: no path traversal, no absolute paths, no links, bounded sizes.

A downloaded archive is untrusted input: a member named ``../../.bashrc`` or a
symlink pointing outside the folder would write outside the extraction folder
(CVE-2007-4559 and friends). Every member is checked before anything is read.
A member that inflates far beyond the published file (a decompression bomb) is
stopped by a size limit: members are streamed to disk in chunks with a cap and
hashed while written, and a compressed tar is read through a bounded stream.
"""

from __future__ import annotations

import contextlib
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from ._bounded import SizeLimitError, copy_bounded, open_decompressed, unpacked_limit

__all__ = [
    "UnsafeArchiveError",
    "check_member_name",
    "extract_members",
    "extract_verified",
    "iter_tar_files",
    "safe_extract",
]


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


#: More members than any of the published archives holds (20 Newsgroups: 18,888): a tar of millions
#: of empty headers would otherwise fill memory with their records before any data is read.
MAX_MEMBERS = 100_000


@contextlib.contextmanager
def _open_tar(path, total_limit):
    """A :class:`tarfile.TarFile` over the bounded, decompressed stream of ``path``."""
    with open_decompressed(path, total_limit, what=f"archive {path}") as reader:
        with tarfile.open(fileobj=reader, mode="r:") as tar:
            yield tar


def _tar_members(tar):
    """Every member's header, checked (names, kinds), with the member count bounded."""
    members = []
    for m in tar:
        members.append(m)
        if len(members) > MAX_MEMBERS:
            raise UnsafeArchiveError(f"archive has more than {MAX_MEMBERS:,} members; refused")
    for m in members:
        _check_tar_member(m)
    return members


def _limit_for(limits, name):
    return limits.get(name) if isinstance(limits, dict) else limits


def iter_tar_files(path, total_limit=None):
    """Yield ``(member name, bytes)`` for every regular file of a tar(.gz, .bz2, .xz), in archive order.

    Every member (files, folders, links) is checked first; one unsafe member refuses the
    whole archive. Nothing is written to disk. The archive is decompressed through a bounded
    stream: ``total_limit`` (default: 200 times the compressed size) caps the bytes it may
    inflate to, headers included, so a decompression bomb stops with
    :class:`~dpstack.datasets._bounded.SizeLimitError` after at most that many bytes.
    """
    with _open_tar(path, unpacked_limit(path, total_limit)) as tar:
        members = _tar_members(tar)
        for m in members:
            if m.isfile():
                with tar.extractfile(m) as fh:
                    yield m.name, fh.read()


def extract_verified(path, dest, members=None, limits=None, total_limit=None):
    """Extract members of a tar or zip archive into ``dest``, bounded, hashing while writing.

    Parameters
    ----------
    path : path-like
        The archive (tar, possibly gzip/bzip2/xz-compressed, or zip).
    dest : path-like
        Extraction folder (created).
    members : list of str, optional
        Member names to extract (default all regular files).
    limits : int or dict, optional
        Largest accepted size of a member (a dict: per member name). A member whose header
        announces more is refused before a byte is written; one that delivers more than its
        header announced stops at the announced size.
    total_limit : int, optional
        Largest size the archive may inflate to (tar: the whole stream; zip: the extracted
        members). Default: 200 times the archive's size.

    Returns
    -------
    extracted : dict
        Member name -> ``(path, n_bytes, sha256, git blob id)``.

    Raises
    ------
    UnsafeArchiveError
        A member escapes the folder, is a link or special file, or there are too many members.
    SizeLimitError
        A member or the whole archive is larger than allowed.
    DiskFullError
        The disk is full (the message names the file being written).
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    total_limit = unpacked_limit(path, total_limit)
    out = {}
    wanted = None if members is None else set(members)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_MEMBERS:
                raise UnsafeArchiveError(f"archive {path} has more than {MAX_MEMBERS:,} members; refused")
            for info in infos:
                check_member_name(info.filename)
                if (info.external_attr >> 16) & 0o170000 == 0o120000:  # a symlink stored in the zip
                    raise UnsafeArchiveError(f"archive member {info.filename!r} is a link; refused")
            chosen = [i for i in infos if not i.is_dir() and (wanted is None or i.filename in wanted)]
            announced = sum(i.file_size for i in chosen)
            if announced > total_limit:
                raise SizeLimitError(
                    f"archive {path}: the members to extract announce {announced:,} bytes, more than the "
                    f"{total_limit:,} allowed; refused"
                )
            for info in chosen:
                target = dest.joinpath(*check_member_name(info.filename))
                target.parent.mkdir(parents=True, exist_ok=True)
                what = f"archive member {info.filename!r} of {path}"
                with zf.open(info) as src:
                    got = copy_bounded(src, target, _limit_for(limits, info.filename), what, size=info.file_size)
                out[info.filename] = (target, *got)
        return out
    with _open_tar(path, total_limit) as tar:
        for m in _tar_members(tar):
            if not m.isfile() or (wanted is not None and m.name not in wanted):
                continue
            target = dest.joinpath(*check_member_name(m.name))
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(m) as src:
                got = copy_bounded(
                    src, target, _limit_for(limits, m.name), f"archive member {m.name!r} of {path}", m.size
                )
            out[m.name] = (target, *got)
    return out


def safe_extract(path, dest, members=None, limits=None, total_limit=None):
    """Extract a tar(.gz) or zip archive into ``dest`` after checking every member, bounded.

    Parameters
    ----------
    path : path-like
        The archive.
    dest : path-like
        Extraction folder (created).
    members : list of str, optional
        Member names to extract (default all).
    limits, total_limit : optional
        Size limits, as in :func:`extract_verified`.

    Returns
    -------
    extracted : dict
        Member name -> extracted path, for the regular files written.
    """
    return {name: got[0] for name, got in extract_verified(path, dest, members, limits, total_limit).items()}


def extract_members(path, dest, members, limits=None, total_limit=None):
    """Extract the named members (as :func:`extract_verified`); ``KeyError`` names any member not in the archive."""
    out = extract_verified(path, dest, members, limits, total_limit)
    absent = [m for m in members if m not in out]
    if absent:
        raise KeyError(f"archive {path} has no member(s) {', '.join(absent)}")
    return out
