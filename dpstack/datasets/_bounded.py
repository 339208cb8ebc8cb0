"""Bounded reads and writes: nothing larger than the published file is ever written, inflated or read.

A download, an archive member and a compressed file are untrusted input until their checksum
is compared. Every stream here has a limit taken from the registry (the size of the published
file): a copy writes at most that many bytes and is hashed while it is written (no second
read), and a decompressing reader stops once it has produced that many bytes, so a small
archive that inflates to gigabytes costs one chunk of memory and no disk. A full disk is
reported as such, with the path being written.
"""

from __future__ import annotations

import bz2
import errno
import gzip
import hashlib
import io
import lzma
import os

__all__ = ["CHUNK", "DiskFullError", "SizeLimitError", "copy_bounded", "open_decompressed", "unpacked_limit"]

CHUNK = 1 << 20  # bytes read and written at a time
#: With no registry size to go by, a compressed file may inflate to at most this ratio of its size
#: (the published files inflate 3–35 times; a gzip bomb about 1,000 times) ...
MAX_RATIO = 200
#: ... and never less than this (tiny files compress badly or not at all)
MIN_LIMIT = 1 << 20

_DISK_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


class SizeLimitError(ValueError):
    """A download, archive member or decompressed stream is larger than the published file allows."""


class DiskFullError(OSError):
    """No space left on the device (ENOSPC) or the user's quota is exhausted (EDQUOT) while writing a file."""


def is_disk_full(exc):
    """True for an ``OSError`` saying the disk or the quota is full."""
    return isinstance(exc, OSError) and exc.errno in _DISK_FULL


def disk_full(exc, path, what):
    """A :class:`DiskFullError` naming the path being written and what it was."""
    code = errno.errorcode.get(exc.errno, str(exc.errno))
    return DiskFullError(
        exc.errno,
        f"no space left on the device holding {path} ({code}: {os.strerror(exc.errno)}) while writing {what}. "
        "Free some space (or raise the quota), or use a data home on another disk, then try again",
        str(path),
    )


def copy_bounded(src, dest, limit, what, size=None, progress=None):
    """Copy the readable ``src`` into the new file ``dest``, at most ``limit`` bytes, hashing as it goes.

    Parameters
    ----------
    src : readable binary file object
    dest : path-like
        Created (or truncated) and written in chunks of :data:`CHUNK` bytes.
    limit : int or None
        Largest number of bytes accepted. A chunk that would go past it is not written:
        :class:`SizeLimitError` is raised with at most ``limit`` bytes on disk.
    what : str
        What is copied (a URL, an archive member), for messages.
    size : int, optional
        The size announced beforehand (an archive member's header); when given, the git blob
        id is computed too.
    progress : callable, optional
        Called with the number of bytes written after each chunk.

    Returns
    -------
    n_bytes, sha256, git_blob : int, str, str or None

    Raises
    ------
    SizeLimitError
        More than ``limit`` bytes (or more than ``size``) arrived.
    DiskFullError
        The disk or quota is full (the message names ``dest``).
    """
    if size is not None and limit is not None and size > limit:
        raise SizeLimitError(f"{what} is {size:,} bytes, more than the {limit:,} of the published file; refused")
    cap = limit if size is None else size if limit is None else min(size, limit)
    sha = hashlib.sha256()
    blob = hashlib.sha1(f"blob {size}\0".encode()) if size is not None else None
    done = 0
    try:
        with open(dest, "wb") as out:
            while True:
                chunk = src.read(CHUNK)
                if not chunk:
                    break
                if cap is not None and done + len(chunk) > cap:
                    raise SizeLimitError(
                        f"{what} is larger than {cap:,} bytes "
                        f"({'its announced size' if cap == size else 'the size of the published file'}); "
                        f"stopped after {done:,} bytes"
                    )
                out.write(chunk)
                sha.update(chunk)
                if blob is not None:
                    blob.update(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(done)
    except OSError as exc:
        if is_disk_full(exc):
            raise disk_full(exc, dest, what) from exc
        raise
    if size is not None and done != size:
        raise SizeLimitError(f"{what}: {done:,} bytes, its header announced {size:,}")
    return done, sha.hexdigest(), blob.hexdigest() if blob is not None else None


class CappedReader(io.RawIOBase):
    """A read-only (forward- and backward-seekable) view of a stream that refuses to go past ``limit`` bytes.

    Wraps a decompressing file object (:class:`gzip.GzipFile`, :class:`bz2.BZ2File`,
    :class:`lzma.LZMAFile`) or a plain file; positions are positions in the decompressed data,
    so reading or seeking beyond ``limit`` raises :class:`SizeLimitError` before the data
    past it is produced.
    """

    def __init__(self, raw, limit, what):
        super().__init__()
        self._raw, self._limit, self._what = raw, int(limit), what

    def _refuse(self):
        return SizeLimitError(
            f"{self._what} decompresses to more than {self._limit:,} bytes, more than the published file; "
            "refused (a damaged file, or a decompression bomb)"
        )

    def readable(self):
        return True

    def seekable(self):
        return self._raw.seekable()

    def tell(self):
        return self._raw.tell()

    def read(self, n=-1):
        pos = self._raw.tell()
        room = self._limit - pos
        want = room + 1 if n is None or n < 0 else min(n, room + 1)
        data = self._raw.read(max(want, 0))
        if pos + len(data) > self._limit:
            raise self._refuse()
        return data

    def readall(self):
        return self.read(-1)

    def readinto(self, buffer):
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset, whence=io.SEEK_SET):
        if whence == io.SEEK_CUR:
            offset, whence = self.tell() + offset, io.SEEK_SET
        if whence != io.SEEK_SET:
            raise io.UnsupportedOperation("a bounded reader seeks from the start or the current position only")
        if offset > self._limit:
            raise self._refuse()
        return self._raw.seek(offset)

    def close(self):
        if not self.closed:
            self._raw.close()
        super().close()


def unpacked_limit(path, limit=None):
    """The decompressed size accepted for ``path``: ``limit`` if given, else :data:`MAX_RATIO` × its size."""
    if limit is not None:
        return int(limit)
    return max(MIN_LIMIT, MAX_RATIO * os.path.getsize(path))


def open_decompressed(path, limit=None, what=None):
    """Open ``path`` for reading, decompressed (gzip, bzip2, xz by their magic bytes) and bounded.

    The stream refuses to produce more than ``limit`` bytes (default: :func:`unpacked_limit`),
    whatever the compressed file says; a plain file is bounded the same way.

    Returns
    -------
    CappedReader
    """
    with open(path, "rb") as fh:
        magic = fh.read(6)
    if magic[:2] == b"\x1f\x8b":
        raw = gzip.open(path, "rb")
    elif magic[:3] == b"BZh":
        raw = bz2.open(path, "rb")
    elif magic == b"\xfd7zXZ\x00":
        raw = lzma.open(path, "rb")
    else:
        raw = open(path, "rb")  # closed by the CappedReader
    return CappedReader(raw, unpacked_limit(path, limit), what or str(path))
