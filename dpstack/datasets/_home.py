"""Where the raw files live, which ones are expected, and how to get them on request.

The data home is ``DPSTACK_DATA`` when set, else a per-user folder
(``$XDG_DATA_HOME/dpstack`` or ``~/.local/share/dpstack``). Every file a loader
reads is listed in :data:`REGISTRY` with its path inside the data home, a
pinned checksum (sha256 of the verified file) and its size, which bounds every
download, archive member and decompression. Nothing is downloaded
unless :func:`fetch` is called (or a loader gets ``download=True``).

Mirrors are tried https first. Some files have plain-http mirrors only or as a
fallback (:func:`plain_http_mirrors` lists them; :func:`fetch` warns with
:class:`PlainHTTPWarning` when it uses one): their bytes are protected by the
pinned checksum, not by the transport.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import http.client
import os
import shutil
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import warnings
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .._files import remove_orphans, temp_suffix
from ._archives import UnsafeArchiveError
from ._bounded import DiskFullError, SizeLimitError, copy_bounded, disk_full, is_disk_full

__all__ = [
    "ChecksumError",
    "CorruptFileError",
    "DatasetNotFoundError",
    "DiskFullError",
    "PlainHTTPWarning",
    "REGISTRY",
    "SizeLimitError",
    "data_home",
    "dataset_status",
    "fetch",
    "file_checksum",
    "plain_http_mirrors",
]


class DatasetNotFoundError(FileNotFoundError):
    """Raw files of a dataset are missing from the data home."""


class ChecksumError(ValueError):
    """A file's checksum differs from the pinned value: corrupt or a different file."""


class CorruptFileError(ValueError):
    """A raw file cannot be parsed: damaged, truncated, or not in the expected format."""


class PlainHTTPWarning(UserWarning):
    """A file is being downloaded over plain http (its pinned checksum still protects it)."""


@contextlib.contextmanager
def reading(*paths):
    """Turn any failure to parse ``paths`` into a :class:`CorruptFileError` that names them.

    Loaders read through this, so a damaged file met with ``verify=False`` (no checksum
    check) stops with the file's path and what to do, not a bare ``EOFError`` or gzip error.
    """
    try:
        yield
    except (FileNotFoundError, DatasetNotFoundError, ChecksumError, CorruptFileError, UnsafeArchiveError):
        raise
    except (
        OSError,
        EOFError,
        ValueError,
        IndexError,
        zlib.error,
        tarfile.TarError,
        zipfile.BadZipFile,
        pd.errors.ParserError,
    ) as exc:
        names = ", ".join(str(p) for p in paths)
        raise CorruptFileError(
            f"cannot read {names}: {type(exc).__name__}: {exc}. The file is damaged or not the published "
            "one: load it with verify=True (the default) to check it against its pinned checksum, or "
            "delete it and fetch it again."
        ) from exc


@dataclass(frozen=True)
class RawFile:
    """One raw file: path in the data home, accepted checksums, where to get it.

    ``sha256`` holds every accepted sha256 (20 Newsgroups: the original tarball and
    a verified re-pack of the same files). ``git_blob`` is used instead when only the
    git blob id of the genuine file is known (HAR X files, URL days).
    ``archive`` (alternative URLs of one archive) and ``member`` say that the file comes out
    of a downloaded archive; an archive that wraps the members in an inner zip (UCI's newer
    downloads do) is opened one level deeper. URLs are listed https first.

    Sizes bound every read and write of untrusted bytes (nothing larger is ever written,
    inflated or parsed):

    ``size``
        the largest accepted size of the file in bytes: exact when every accepted copy's size
        is known, else an upper bound stated beside it. A download or archive member stops
        there; with ``verify=False`` a larger file in the data home is refused before parsing.
    ``unpacked``
        the largest size the file may decompress to (gzip files and the 20 Newsgroups tar):
        the published file's decompressed size plus 10 %, so a copy with other line endings
        still loads with ``verify=False``, and a decompression bomb stops there.
    ``archive_size``, ``archive_unpacked``
        the same two bounds for the archive a member comes out of.
    """

    path: str
    sha256: tuple = ()
    git_blob: str | None = None
    urls: tuple = ()
    archive: tuple | None = None
    member: str | None = None
    required: bool = True
    size: int | None = None
    unpacked: int | None = None
    archive_size: int | None = None
    archive_unpacked: int | None = None


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    title: str
    citation: str
    licence: str
    files: tuple = field(default_factory=tuple)


_MNIST_MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
)


def _margin(n):
    """``n`` plus 10 %: the decompressed-size bound of a file whose decompressed size is ``n``."""
    return n + n // 10


# Sizes of the published files (bytes, from the verified copies): compressed, then decompressed.
_MNIST_SIZES = {
    "train-images-idx3-ubyte.gz": (9_912_422, 47_040_016),
    "train-labels-idx1-ubyte.gz": (28_881, 60_008),
    "t10k-images-idx3-ubyte.gz": (1_648_877, 7_840_016),
    "t10k-labels-idx1-ubyte.gz": (4_542, 10_008),
}
# UCI HAR: the zip is about 60 MB (58-61 MB for UCI's two downloads) and holds about 270 MB; the X
# files are 7,352 and 2,947 rows of 561 values of 16 characters (about 66 and 26.5 MB): bounds.
_HAR_ZIP_SIZE, _HAR_ZIP_UNPACKED = 80_000_000, 400_000_000
_HAR_X_SIZES = {"train/X_train.txt": 80_000_000, "test/X_test.txt": 32_000_000}
_HAR_SIZES = {
    "features.txt": 15_785,
    "activity_labels.txt": 80,
    "train/y_train.txt": 14_704,
    "train/subject_train.txt": 20_152,
    "test/y_test.txt": 5_894,
    "test/subject_test.txt": 7_934,
}
# The URL tarball: 121 day files, 2.4 million rows (Day45: 130 rows in 119,513 bytes, so about
# 20 MB for a day of 20,000 rows): bounds of 64 MiB a day, 4 GiB unpacked, 1 GiB compressed.
_URL_DAY_SIZE, _URL_TAR_SIZE, _URL_TAR_UNPACKED = 64 << 20, 1 << 30, 4 << 30
_URL_SIZES = {45: 119_513}
# 20 Newsgroups: the verified re-pack is 14,387,951 bytes (50,288,640 decompressed); the original
# tarball about 14.5 MB. Bounds with room for the original.
_NEWS20_SIZE, _NEWS20_UNPACKED = 15_000_000, 64_000_000
_KDD_SIZES = {
    "kddcup.data_10_percent.gz": (2_144_903, 74_889_749),
    "corrected.gz": (1_409_035, 47_251_540),
}

_HAR_ZIP = (
    "https://archive.ics.uci.edu/ml/machine-learning-databases/00240/UCI%20HAR%20Dataset.zip",
    "https://archive.ics.uci.edu/static/public/240/human+activity+recognition+using+smartphones.zip",
)
# UCI's copy of the archive (the legacy "machine-learning-databases" path that UCI's URL Reputation
# entry links to, as used by several public loaders; https), then the authors' page (plain http).
# The archive itself has no published checksum; every member is verified by its pin.
_URL_TAR = (
    "https://archive.ics.uci.edu/ml/machine-learning-databases/url/url_svmlight.tar.gz",
    "http://www.sysnet.ucsd.edu/projects/url/url_svmlight.tar.gz",
)
_URL_BLOBS = (
    "71b394a5430e9386a4d97d8ddd850155b9905b8b",
    "0278e110842fe5a3d9b3d94807cd4f7cee854d09",
    "0bc8e2dcfaf8e0e8b7c702b564c1f75a3b3d29ef",
    "f49a42d67f50bdc7993ee0fae85908a41a6b66b5",
    "95852083751c4fd9f605f0e68d293c43ad1e54fc",
    "2dbcd0f8f847d16676282f94bea98110323c29d5",
    "779d5e58de986ff9f02a5dc7eb64f96b5c3e4032",
    "6fb749033f33f6ae067c7fcef3faaf0e34f8efe4",
    "47dafea47d79160f57051f8bc2af54309bf220b9",
    "2620f8a5c058f535fe95b5729f7f83c941143d49",
    "ad76768351b5b6add3e3f5cbfe52c642fec8da54",
    "ba5963e98c1905dd0ab48e6040cfc075172c7197",
    "632ad0241ecca4bd8c1c20d5f9deb4f9d04b3ace",
    "9046a24af79544ffaf22d512a53730c8955960ca",
    "41a578226d2d8b26d4cc0392d6e91b0036d41985",
    "1229d9f3344826bfa64278b456449f0f57d18bc0",
    "2f33515620e3e004aeada63c63fb4623e626973c",
    "e350a0085c7f8509e6fc91781ca88d4c98409e7a",
    "850702fc6bd0ab1b1e759d4ece1455b72b32b51e",
    "6f9cb6af28b919b8988d030e46f81a41c35f8079",
)

_URL_LATER_BLOBS = {45: "654394c782d5361d08f69b89239ef9c2a2762c9d"}
_URL_SHA256 = {45: ("4136f74965ef86fc0c9a2dc0d75faa75ece0425f20cea18e85535d99341a1eb3",)}


def _mnist(name, sha):
    size, unpacked = _MNIST_SIZES[name]
    return RawFile(
        f"mnist/{name}", (sha,), urls=tuple(m + name for m in _MNIST_MIRRORS), size=size, unpacked=_margin(unpacked)
    )


def _har(rel, sha=None, blob=None):
    return RawFile(
        f"uci_har/UCI_HAR_Dataset/{rel}",
        (sha,) if sha else (),
        git_blob=blob,
        archive=_HAR_ZIP,
        member=f"UCI HAR Dataset/{rel}",
        size=_HAR_SIZES.get(rel) or _HAR_X_SIZES[rel],
        archive_size=_HAR_ZIP_SIZE,
        archive_unpacked=_HAR_ZIP_UNPACKED,
    )


REGISTRY = {
    "mnist": DatasetInfo(
        "mnist",
        "MNIST handwritten digits (IDX files)",
        "lecun1998gradient",
        "no licence stated on the original page; used freely for research with attribution",
        (
            _mnist("train-images-idx3-ubyte.gz", "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"),
            _mnist("train-labels-idx1-ubyte.gz", "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"),
            _mnist("t10k-images-idx3-ubyte.gz", "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"),
            _mnist("t10k-labels-idx1-ubyte.gz", "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"),
        ),
    ),
    "news20": DatasetInfo(
        "news20",
        "20 Newsgroups, 'bydate' split",
        "lang1995newsweeder",
        "no explicit licence on the distribution page; UCI lists CC BY 4.0",
        (
            RawFile(
                "20newsgroups/20news-bydate.tar.gz",
                # the original tarball (scikit-learn's pin) and a verified re-pack of the same files
                (
                    "8f1b2514ca22a5ade8fbb9cfa5727df95fa587f4c87b786e15c759fa66d95610",
                    "f934583ecd65eae06e4d23af0fcb72ade56b76bad2279c0aed7d520aa6527b02",
                ),
                urls=(
                    "https://ndownloader.figshare.com/files/5975967",
                    "http://qwone.com/~jason/20Newsgroups/20news-bydate.tar.gz",
                ),
                size=_NEWS20_SIZE,
                unpacked=_NEWS20_UNPACKED,
            ),
        ),
    ),
    "har": DatasetInfo(
        "har",
        "UCI Human Activity Recognition Using Smartphones",
        "anguita2013public",
        "UCI lists CC BY 4.0; the dataset README forbids commercial use",
        (
            _har("features.txt", "b384889885b1c8680ecf250e0e605b4c79536cdf09ce9f2fa7225a3c6773b5c7"),
            _har("activity_labels.txt", "f6e6b292704438261f0283b2a82659ab0661447dc16520938bdf379ed1bf8de0"),
            _har("train/X_train.txt", blob="b06f3e4c7cddf435f2f2b102b4824f51ee8a6298"),
            _har("train/y_train.txt", "415b3357e2e2d5e70a45c781947c6bdd80e0410a579d862eedcd6bbce3c694ef"),
            _har("train/subject_train.txt", "66e1e2fbe9b396fa5155f531dc3348c803f503be663e2318772d49947db9153a"),
            _har("test/X_test.txt", blob="f3c01cbd355e0000229bce4e38156ee338fa6b08"),
            _har("test/y_test.txt", "2a94cb53ca46b956c1b2aebd4a09a72badd8a8e9ea9cdfe9f31b3306a08666bb"),
            _har("test/subject_test.txt", "63b8c577f4a85431c06bd87f6384608c90a9f72f05c7956dd21255dc63515c07"),
        ),
    ),
    "kddcup99": DatasetInfo(
        "kddcup99",
        "KDD Cup 1999 (10% training file, labelled 'corrected' test file)",
        "stolfo2000cost",
        "CC BY 4.0 (per UCI)",
        (
            RawFile(
                "kddcup99/kddcup.data_10_percent.gz",
                ("8045aca0d84e70e622d1148d7df782496f6333bf6eb979a1b0837c42a9fd9561",),
                urls=(
                    "https://ndownloader.figshare.com/files/5976042",
                    "http://kdd.ics.uci.edu/databases/kddcup99/kddcup.data_10_percent.gz",
                ),
                size=_KDD_SIZES["kddcup.data_10_percent.gz"][0],
                unpacked=_margin(_KDD_SIZES["kddcup.data_10_percent.gz"][1]),
            ),
            RawFile(
                "kddcup99/corrected.gz",
                ("74f0daef49b242badc09f2adbd457dea6a45b4f77177efbd11216d333651044b",),
                urls=("http://kdd.ics.uci.edu/databases/kddcup99/corrected.gz",),  # plain http only
                size=_KDD_SIZES["corrected.gz"][0],
                unpacked=_margin(_KDD_SIZES["corrected.gz"][1]),
            ),
        ),
    ),
    "url": DatasetInfo(
        "url",
        "Malicious URL (URL Reputation) svmlight day files",
        "ma2009identifying",
        "check the UCI entry before redistributing",
        # Days 0-19 (the ones MPL uses) are pinned by the git blob ids of the genuine files;
        # Day45 by its sha256 (the one later day whose genuine bytes we hold); the other days are
        # not used by any experiment and have no published checksum to pin.
        tuple(
            RawFile(
                f"url_svmlight/Day{d}.svm",
                sha256=_URL_SHA256.get(d, ()),
                git_blob=_URL_BLOBS[d] if d < 20 else (_URL_LATER_BLOBS.get(d)),
                archive=_URL_TAR,
                member=f"url_svmlight/Day{d}.svm",
                required=d < 20,
                size=_URL_SIZES.get(d, _URL_DAY_SIZE),
                archive_size=_URL_TAR_SIZE,
                archive_unpacked=_URL_TAR_UNPACKED,
            )
            for d in range(121)
        ),
    ),
}


def data_home(data_home=None):
    """The folder holding the raw files, as a :class:`pathlib.Path`.

    Parameters
    ----------
    data_home : str or path-like, optional
        Explicit folder; wins over everything else.

    Returns
    -------
    path : pathlib.Path
        ``data_home`` if given, else ``$DPSTACK_DATA`` if set, else
        ``$XDG_DATA_HOME/dpstack`` (default ``~/.local/share/dpstack``).
        The folder is not created here (it may be read-only, e.g. a shared copy).

    Examples
    --------
    >>> import os
    >>> from dpstack.datasets import data_home
    >>> os.environ["DPSTACK_DATA"] = "/tmp/dpstack-example"
    >>> str(data_home())
    '/tmp/dpstack-example'
    >>> del os.environ["DPSTACK_DATA"]
    """
    if data_home is not None:
        return Path(data_home).expanduser()
    env = os.environ.get("DPSTACK_DATA")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "dpstack"


_home_path = data_home  # for functions whose parameter is also called data_home


def _get_info(name):
    if name not in REGISTRY:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


_CHECKSUM_MEMO = {}


def file_checksum(path, kind="sha256"):
    """sha256 (``kind="sha256"``) or git blob id (``kind="git_blob"``) of a file, read in chunks.

    Results are remembered per (path, size, mtime) so repeated loads do not re-hash.
    """
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, kind)
    if key not in _CHECKSUM_MEMO:
        h = hashlib.sha256() if kind == "sha256" else hashlib.sha1(f"blob {st.st_size}\0".encode())
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _CHECKSUM_MEMO[key] = h.hexdigest()
    return _CHECKSUM_MEMO[key]


def verify_file(path, raw):
    """Check ``path`` against the pinned checksum of ``raw``; return its sha256.

    Raises
    ------
    ChecksumError
        If the file differs from every accepted value.
    """
    return _compare(path, raw)


def unverified_size_limit(raw):
    """The largest file accepted for ``raw`` with ``verify=False``: twice the published size (at least 1 MiB more).

    Room for another copy of the same data (other line endings, another packing), not for a
    file that would take unbounded memory to parse.
    """
    return None if raw.size is None else max(2 * raw.size, raw.size + (1 << 20))


def _check_unverified_size(path, raw):
    limit = unverified_size_limit(raw)
    size = path.stat().st_size
    if limit is not None and size > limit:
        raise CorruptFileError(
            f"{path} is {size:,} bytes, far larger than the published file ({raw.size:,} bytes); refused "
            "without reading it. Load it with verify=True (the default) to check it against its pinned "
            "checksum, or delete it and fetch it again."
        )


def resolve_files(name, home=None, download=False, verify=True, only=None):
    """Paths of a dataset's raw files, checked; fetch first if ``download`` is true.

    ``only`` restricts to the files whose path ends with one of the given suffixes.
    Returns ``{relative path: (absolute path, sha256)}``.
    """
    info = _get_info(name)
    home = data_home(home)
    if home.exists() and not home.is_dir():
        raise DatasetNotFoundError(
            f"the data home {home} is a file, not a folder (set by "
            f"{'DPSTACK_DATA' if os.environ.get('DPSTACK_DATA') else 'the data_home argument or the default'}); "
            "point it at the folder that holds the datasets"
        )
    files = [f for f in info.files if only is None or any(f.path.endswith(s) for s in only)]
    missing = [f for f in files if not (home / f.path).is_file()]
    if missing and download:
        fetch(name, home, only=[f.path for f in missing])
        missing = [f for f in files if not (home / f.path).is_file()]
    if missing:
        raise DatasetNotFoundError(
            f"{info.title}: missing file(s) {', '.join(f.path for f in missing)} in data home "
            f"{home}. Put them there, point DPSTACK_DATA at a folder holding them, or call "
            f"dpstack.datasets.fetch({name!r}) (or pass download=True) to download them."
        )
    out = {}
    for f in files:
        path = home / f.path
        if not verify:
            _check_unverified_size(path, f)
        out[f.path] = (path, verify_file(path, f) if verify else file_checksum(path))
    return out


def dataset_status(home=None):
    """Which raw files are present and which are missing, as a table.

    Returns
    -------
    status : pandas.DataFrame
        One row per raw file: ``dataset``, ``file`` (path in the data home),
        ``required`` (read by the book's experiments), ``present``, and ``path`` (the absolute path it is, or should be, at).
    """
    home = data_home(home)
    rows = []
    for info in REGISTRY.values():
        for f in info.files:
            rows.append(
                {
                    "dataset": info.name,
                    "file": f.path,
                    "required": f.required,
                    "present": (home / f.path).is_file(),
                    "path": str(home / f.path),
                }
            )
    return pd.DataFrame(rows)


class DownloadInterrupted(ConnectionError):
    """The connection closed before the announced number of bytes arrived."""


class DownloadTooSlow(DownloadInterrupted):
    """A mirror sent too slowly (below :data:`MIN_RATE` on average) or for too long (:data:`MAX_SECONDS`)."""


#: a download is abandoned (and the next mirror tried) when, after GRACE_SECONDS, fewer than
#: MIN_RATE bytes per second arrived on average, or when it takes longer than MAX_SECONDS in all;
#: a mirror that sends nothing at all is cut off by the socket's 60 s timeout
MIN_RATE = 8_000
GRACE_SECONDS = 30.0
MAX_SECONDS = 3600.0


class _PacedReader:
    """``resp.read`` that returns what has arrived (``read1``) and checks the pace after each piece."""

    def __init__(self, resp, url):
        self.resp, self.url, self.start, self.n = resp, url, time.monotonic(), 0

    def read(self, size):
        chunk = self.resp.read1(size) if hasattr(self.resp, "read1") else self.resp.read(size)
        self.n += len(chunk)
        elapsed = time.monotonic() - self.start
        if chunk and elapsed > MAX_SECONDS:
            raise DownloadTooSlow(
                f"{self.url}: abandoned after {elapsed:.0f} s, the limit of one download ({self.n:,} bytes arrived)"
            )
        if chunk and elapsed > GRACE_SECONDS and self.n < MIN_RATE * elapsed:
            raise DownloadTooSlow(
                f"{self.url}: too slow, {self.n:,} bytes in {elapsed:.0f} s "
                f"(below {MIN_RATE:,} bytes/s on average); abandoned"
            )
        return chunk


def _download(url, dest, timeout=60, limit=None):
    """Stream ``url`` to ``dest``, at most ``limit`` bytes, hashing while writing; return the sha256.

    No progress bar when DPSTACK_QUIET is set. A server announcing more than ``limit`` bytes is
    refused before anything is written; one sending more is cut off at ``limit``
    (:class:`SizeLimitError`). Raises :class:`DownloadInterrupted` when fewer bytes arrive than
    the server announced (a dropped connection), so a truncated file is never taken for a whole
    one, and :class:`DiskFullError` (naming ``dest``) when the disk is full.
    """
    quiet = os.environ.get("DPSTACK_QUIET")
    done, total = 0, 0

    def show(n):
        nonlocal done
        done = n
        if not quiet:
            print(f"\r{url}: {n / 1e6:.1f}/{total / 1e6:.1f} MB", end="", flush=True)

    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            total = int(resp.headers.get("Content-Length") or 0)
            if limit is not None and total > limit:
                raise SizeLimitError(
                    f"{url} announces {total:,} bytes, more than the {limit:,} of the published file; not downloaded"
                )
            n, sha, _ = copy_bounded(_PacedReader(resp, url), dest, limit, url, progress=show)
    except http.client.HTTPException as exc:  # IncompleteRead, RemoteDisconnected...: not OSErrors
        raise DownloadInterrupted(f"{url}: transfer interrupted after {done} bytes ({exc!r})") from exc
    finally:
        if not quiet and done:
            print()
    if total and n != total:
        raise DownloadInterrupted(f"{url}: transfer interrupted: {n} of {total} bytes")
    return sha


def _is_plain_http(url):
    return url.lower().startswith("http:")


def _https_first(urls):
    """The mirrors with the https ones first (the registry's order otherwise kept)."""
    return sorted(urls, key=_is_plain_http)


def plain_http_mirrors():
    """The mirrors reached over plain http, as ``(dataset, file or archive, url)`` tuples.

    Files fetched from them are still checked against their pinned checksum before use
    (except the URL days other than 0-19 and 45, which have none); :func:`fetch` tries https
    mirrors first and warns (:class:`PlainHTTPWarning`) when it falls back to one of these.
    """
    out = []
    for info in REGISTRY.values():
        seen = set()
        for f in info.files:
            what, urls = (f"archive of {f.path.split('/')[0]}", f.archive) if f.archive else (f.path, f.urls)
            for url in urls:
                if _is_plain_http(url) and (what, url) not in seen:
                    seen.add((what, url))
                    out.append((info.name, what, url))
    return out


def _warn_plain_http(url, what, files):
    unpinned = [f.path for f in files if not f.sha256 and not f.git_blob]
    protection = (
        f"{', '.join(unpinned[:3])}{' ...' if len(unpinned) > 3 else ''} ha{'s' if len(unpinned) == 1 else 've'} "
        "no pinned checksum, so nothing protects it (them) against tampering in transit"
        if unpinned
        else "its pinned checksum is checked before the file is used"
    )
    warnings.warn(
        f"downloading {what} over plain http from {url} (https mirrors, if any, are tried first); {protection}",
        PlainHTTPWarning,
        stacklevel=3,
    )


def _get(opener, url, dest, limit):
    """Download ``url`` to ``dest`` with the default streamer (bounded, hashed) or a caller's opener.

    A caller's ``opener(url, dest)`` writes the file itself; its size is checked against
    ``limit`` afterwards. Returns the sha256 when it was computed while writing, else None.
    """
    if opener is None:
        return _download(url, dest, limit=limit)
    opener(url, dest)
    size = Path(dest).stat().st_size
    if limit is not None and size > limit:
        raise SizeLimitError(f"{url} delivered {size:,} bytes, more than the {limit:,} of the published file")
    return None


def _compare(path, raw, sha=None, blob=None):
    """Check digests (computed while writing, else now) against the pins of ``raw``; return the sha256."""
    sha = sha or file_checksum(path)
    if raw.sha256 and sha not in raw.sha256:
        raise ChecksumError(
            f"checksum mismatch for {path}: sha256 {sha}, expected {' or '.join(raw.sha256)}. "
            "The file is corrupt or not the published one; delete it and fetch it again "
            "(or pass verify=False to use it anyway)."
        )
    if raw.git_blob:
        blob = blob or file_checksum(path, "git_blob")
        if blob != raw.git_blob:
            raise ChecksumError(
                f"checksum mismatch for {path}: git blob id {blob}, "
                f"expected {raw.git_blob}. Delete the file and fetch it again (or pass verify=False)."
            )
    return sha


# What a failed mirror can raise: unreachable or interrupted (OSError covers URLError,
# ConnectionError and timeouts), or bytes that are not the published file (too many of them
# included). A full disk is not a mirror's fault: it stops the fetch at once.
_ARCHIVE_ERRORS = (
    OSError,
    EOFError,
    KeyError,
    zipfile.BadZipFile,
    tarfile.TarError,
    ChecksumError,
    SizeLimitError,
    UnsafeArchiveError,
)


def _raise_all_failed(what, info, home, errors):
    """One error for a file that no mirror could deliver, of the most telling kind."""
    detail = "; ".join(f"{url}: {exc}" for url, exc in errors)
    for kind in (UnsafeArchiveError, SizeLimitError, ChecksumError):
        hits = [exc for _, exc in errors if isinstance(exc, kind)]
        if hits:
            raise kind(f"no mirror delivered a valid copy of {what} for {info.title}: {detail}") from hits[-1]
    raise ConnectionError(
        f"could not download {what} for {info.title} into data home {home} (offline?). "
        f"Tried: {detail}. Copy the file(s) there by hand instead."
    )


def _part_name(dest):
    """``<dest>.<host>.<pid>.<random>.part``: unique, and a later run can tell that its writer died."""
    return dest.with_name(dest.name + temp_suffix()[:-4] + ".part")


def _clean_parts(dest):
    """Remove the partial downloads of ``dest`` left by an interrupted or killed earlier fetch."""
    dest.with_name(dest.name + ".part").unlink(missing_ok=True)  # the older fixed name
    remove_orphans(dest.parent, glob.escape(dest.name) + ".*.part")


def fetch(name, data_home=None, only=None, opener=None):
    """Download a dataset's raw files into the data home, verified against pinned checksums.

    Called only on explicit request: loaders never download unless given ``download=True``.
    Each source is tried in turn, https mirrors first, until one delivers a verified copy: an
    unreachable mirror, an interrupted transfer, a damaged archive, a file larger than the
    published one or a checksum mismatch moves on to the next. A plain-http mirror is used only
    when no https one delivered, with a :class:`PlainHTTPWarning` (:func:`plain_http_mirrors`
    lists them).

    Every download and every archive member is streamed in chunks into a temporary file in
    the target folder (a uniquely named ``.part`` file, or a temporary folder for archives),
    hashed while it is written, and stopped at the size of the published file
    (``RawFile.size``; an archive at ``RawFile.archive_size``, its decompressed stream at
    ``RawFile.archive_unpacked``): nothing larger than the published file is ever written.
    Files are renamed into place only once verified; those left by an interrupted or killed
    earlier fetch are removed first, so every download restarts cleanly.

    Parameters
    ----------
    name : {"mnist", "news20", "har", "kddcup99", "url"}
        Dataset name.
    data_home : str or path-like, optional
        Target folder (default :func:`data_home`).
    only : list of str, optional
        Relative paths to fetch (default: every file of the dataset that is missing).
    opener : callable, optional
        ``opener(url, dest)`` that writes the resource at ``url`` to ``dest``; default
        streams over HTTP(S), bounded and hashed while writing. Tests pass a local one (its
        output is size-checked after it returns).

    Returns
    -------
    paths : list of pathlib.Path
        The files now present.

    Raises
    ------
    ConnectionError
        When no source could be reached (offline): names the files and the data home.
    ChecksumError
        When no source delivered a file matching its pinned checksum (nothing is kept).
    SizeLimitError
        When no source delivered a valid copy and at least one delivered too many bytes.
    DiskFullError
        When the disk (or quota) holding the data home is full: names the path being written;
        no further mirror is tried.
    UnsafeArchiveError
        When the sources' archives had members escaping the extraction folder (and none
        delivered a valid copy).
    """
    info = _get_info(name)
    home = _home_path(data_home)
    unknown = sorted(set(only or ()) - {f.path for f in info.files})
    if unknown:
        raise ValueError(
            f"{name} has no file(s) {', '.join(unknown)}; its files are "
            f"{', '.join(f.path for f in info.files[:8])}{' ...' if len(info.files) > 8 else ''}"
        )
    todo = [
        f
        for f in info.files
        if (only is None and not (home / f.path).is_file()) or (only is not None and f.path in only)
    ]
    direct = [f for f in todo if f.archive is None]
    by_archive = {}
    for f in todo:
        if f.archive is not None:
            by_archive.setdefault(f.archive, []).append(f)
    done = []
    for f in direct:
        dest = home / f.path
        dest.parent.mkdir(parents=True, exist_ok=True)
        _clean_parts(dest)
        errors = []
        for url in _https_first(f.urls):
            tmp = _part_name(dest)
            if _is_plain_http(url):
                _warn_plain_http(url, f.path, [f])
            try:
                sha = _get(opener, url, tmp, f.size)
                _compare(tmp, f, sha)
            except (OSError, ChecksumError, SizeLimitError) as exc:
                tmp.unlink(missing_ok=True)
                if is_disk_full(exc):
                    raise (exc if isinstance(exc, DiskFullError) else disk_full(exc, tmp, url)) from exc
                errors.append((url, exc))
                continue
            os.replace(tmp, dest)
            done.append(dest)
            break
        else:
            _raise_all_failed(f.path, info, home, errors)
    for urls, files in by_archive.items():
        home.mkdir(parents=True, exist_ok=True)
        remove_orphans(home, ".dpstack-fetch.*.tmp")
        errors = []
        first = files[0]
        for url in _https_first(urls):
            if _is_plain_http(url):
                _warn_plain_http(url, f"the archive {url.rsplit('/', 1)[-1]}", files)
            tmpdir = Path(tempfile.mkdtemp(prefix=".dpstack-fetch.", suffix=temp_suffix(), dir=home))
            try:
                archive = tmpdir / "download"
                _get(opener, url, archive, first.archive_size)
                extracted = _extract_possibly_nested(
                    archive,
                    tmpdir / "x",
                    [f.member for f in files],
                    limits={f.member: f.size for f in files},
                    total_limit=first.archive_unpacked,
                    archive_size=first.archive_size,
                )
                for f in files:
                    path, _, sha, blob = extracted[f.member]
                    _compare(path, f, sha, blob)
                for f in files:
                    dest = home / f.path
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(extracted[f.member][0]), dest)
                    done.append(dest)
                break
            except DiskFullError:
                raise
            except _ARCHIVE_ERRORS as exc:
                if is_disk_full(exc):
                    raise disk_full(exc, tmpdir, f"the archive from {url}") from exc
                errors.append((url, exc))
            finally:
                shutil.rmtree(tmpdir, ignore_errors=True)
        else:
            _raise_all_failed(
                f"the archive holding {', '.join(f.path for f in files[:4])}{' ...' if len(files) > 4 else ''}",
                info,
                home,
                errors,
            )
    return done


def _extract_possibly_nested(archive, dest, members, limits=None, total_limit=None, archive_size=None):
    """Extract ``members`` (bounded, hashed); if absent but the archive holds exactly one inner zip, look inside it.

    Returns member -> ``(path, n_bytes, sha256, git blob id)``.
    """
    from ._archives import extract_members  # local import: keeps _home light

    try:
        return extract_members(archive, dest, members, limits, total_limit)
    except KeyError:
        if not zipfile.is_zipfile(archive):
            raise
        with zipfile.ZipFile(archive) as zf:
            inner = [n for n in zf.namelist() if n.lower().endswith(".zip") and "__MACOSX" not in n]
        if len(inner) != 1:
            raise
        outer = extract_members(archive, Path(dest) / "outer", inner, archive_size, archive_size)
        return extract_members(outer[inner[0]][0], Path(dest) / "inner", members, limits, total_limit)
