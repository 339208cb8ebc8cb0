"""Where the raw files live, which ones are expected, and how to get them on request.

The data home is ``DPSTACK_DATA`` when set, else a per-user folder
(``$XDG_DATA_HOME/dpstack`` or ``~/.local/share/dpstack``). Every file a loader
reads is listed in :data:`REGISTRY` with its path inside the data home and a
pinned checksum (sha256 of the verified file). Nothing is downloaded
unless :func:`fetch` is called (or a loader gets ``download=True``).
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
import urllib.error
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .._files import remove_orphans, temp_suffix
from ._archives import UnsafeArchiveError

__all__ = [
    "ChecksumError",
    "CorruptFileError",
    "DatasetNotFoundError",
    "REGISTRY",
    "data_home",
    "dataset_status",
    "fetch",
    "file_checksum",
]


class DatasetNotFoundError(FileNotFoundError):
    """Raw files of a dataset are missing from the data home."""


class ChecksumError(ValueError):
    """A file's checksum differs from the pinned value: corrupt or a different file."""


class CorruptFileError(ValueError):
    """A raw file cannot be parsed: damaged, truncated, or not in the expected format."""


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
        zlib.error,
        tarfile.TarError,
        zipfile.BadZipFile,
        UnicodeDecodeError,
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
    downloads do) is opened one level deeper.
    """

    path: str
    sha256: tuple = ()
    git_blob: str | None = None
    urls: tuple = ()
    archive: tuple | None = None
    member: str | None = None
    required: bool = True


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
_HAR_ZIP = (
    "https://archive.ics.uci.edu/ml/machine-learning-databases/00240/UCI%20HAR%20Dataset.zip",
    "https://archive.ics.uci.edu/static/public/240/human+activity+recognition+using+smartphones.zip",
)
# The authors' page, then UCI's copy of the same archive (the legacy "machine-learning-databases"
# path that UCI's URL Reputation entry links to, as used by several public loaders). The
# archive itself has no published checksum; every member is verified by its pin.
_URL_TAR = (
    "http://www.sysnet.ucsd.edu/projects/url/url_svmlight.tar.gz",
    "https://archive.ics.uci.edu/ml/machine-learning-databases/url/url_svmlight.tar.gz",
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
    return RawFile(f"mnist/{name}", (sha,), urls=tuple(m + name for m in _MNIST_MIRRORS))


def _har(rel, sha=None, blob=None):
    return RawFile(
        f"uci_har/UCI_HAR_Dataset/{rel}",
        (sha,) if sha else (),
        git_blob=blob,
        archive=_HAR_ZIP,
        member=f"UCI HAR Dataset/{rel}",
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
                    "http://qwone.com/~jason/20Newsgroups/20news-bydate.tar.gz",
                    "https://ndownloader.figshare.com/files/5975967",
                ),
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
                    "http://kdd.ics.uci.edu/databases/kddcup99/kddcup.data_10_percent.gz",
                    "https://ndownloader.figshare.com/files/5976042",
                ),
            ),
            RawFile(
                "kddcup99/corrected.gz",
                ("74f0daef49b242badc09f2adbd457dea6a45b4f77177efbd11216d333651044b",),
                urls=("http://kdd.ics.uci.edu/databases/kddcup99/corrected.gz",),
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
    sha = file_checksum(path)
    if raw.sha256 and sha not in raw.sha256:
        raise ChecksumError(
            f"checksum mismatch for {path}: sha256 {sha}, expected {' or '.join(raw.sha256)}. "
            "The file is corrupt or not the published one; delete it and fetch it again "
            "(or pass verify=False to use it anyway)."
        )
    if raw.git_blob and file_checksum(path, "git_blob") != raw.git_blob:
        raise ChecksumError(
            f"checksum mismatch for {path}: git blob id {file_checksum(path, 'git_blob')}, "
            f"expected {raw.git_blob}. Delete the file and fetch it again (or pass verify=False)."
        )
    return sha


def resolve_files(name, home=None, download=False, verify=True, only=None):
    """Paths of a dataset's raw files, checked; fetch first if ``download`` is true.

    ``only`` restricts to the files whose path ends with one of the given suffixes.
    Returns ``{relative path: (absolute path, sha256)}``.
    """
    info = _get_info(name)
    home = data_home(home)
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


def _download(url, dest, timeout=60):
    """Stream ``url`` to ``dest`` (no progress bar when DPSTACK_QUIET is set).

    Raises :class:`DownloadInterrupted` when fewer bytes arrive than the server announced
    (a dropped connection), so a truncated file is never taken for a whole one.
    """
    quiet = os.environ.get("DPSTACK_QUIET")
    done, total = 0, 0
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(dest, "wb") as out:
            total = int(resp.headers.get("Content-Length") or 0)
            for chunk in iter(lambda: resp.read(1 << 20), b""):
                out.write(chunk)
                done += len(chunk)
                if not quiet:
                    print(f"\r{url}: {done / 1e6:.1f}/{total / 1e6:.1f} MB", end="", flush=True)
    except http.client.HTTPException as exc:  # IncompleteRead, RemoteDisconnected...: not OSErrors
        raise DownloadInterrupted(f"{url}: transfer interrupted after {done} bytes ({exc!r})") from exc
    finally:
        if not quiet and done:
            print()
    if total and done != total:
        raise DownloadInterrupted(f"{url}: transfer interrupted: {done} of {total} bytes")


# What a failed mirror can raise: unreachable or interrupted (OSError covers URLError,
# ConnectionError and timeouts), or bytes that are not the published file.
_ARCHIVE_ERRORS = (OSError, EOFError, KeyError, zipfile.BadZipFile, tarfile.TarError, ChecksumError)


def _raise_all_failed(what, info, home, errors):
    """One error for a file that no mirror could deliver, of the most telling kind."""
    detail = "; ".join(f"{url}: {exc}" for url, exc in errors)
    for kind in (UnsafeArchiveError, ChecksumError):
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
    Each source is tried in turn until one delivers a verified copy: an unreachable mirror,
    an interrupted transfer, a damaged archive or a checksum mismatch moves on to the next.
    Downloads go to a uniquely named ``.part`` file (or a temporary folder for archives)
    renamed into place only once verified; those left by an interrupted or killed earlier
    fetch are removed first, so every download restarts cleanly.

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
        streams over HTTP(S). Tests pass a local one.

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
    UnsafeArchiveError
        When the sources' archives had members escaping the extraction folder (and none
        delivered a valid copy).
    """
    info = _get_info(name)
    home = _home_path(data_home)
    opener = opener or _download
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
        for url in f.urls:
            tmp = _part_name(dest)
            try:
                opener(url, tmp)
                verify_file(tmp, f)
            except (OSError, ChecksumError) as exc:
                tmp.unlink(missing_ok=True)
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
        for url in urls:
            tmpdir = Path(tempfile.mkdtemp(prefix=".dpstack-fetch.", suffix=temp_suffix(), dir=home))
            try:
                archive = tmpdir / "download"
                opener(url, archive)
                extracted = _extract_possibly_nested(archive, tmpdir / "x", [f.member for f in files])
                for f in files:
                    verify_file(extracted[f.member], f)
                for f in files:
                    dest = home / f.path
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(extracted[f.member]), dest)
                    done.append(dest)
                break
            except (*_ARCHIVE_ERRORS, UnsafeArchiveError) as exc:
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


def _extract_possibly_nested(archive, dest, members):
    """Extract ``members``; if absent but the archive holds exactly one inner zip, look inside it."""
    from ._archives import extract_members, safe_extract  # local import: keeps _home light

    try:
        return extract_members(archive, dest, members)
    except KeyError:
        if not zipfile.is_zipfile(archive):
            raise
        with zipfile.ZipFile(archive) as zf:
            inner = [n for n in zf.namelist() if n.lower().endswith(".zip") and "__MACOSX" not in n]
        if len(inner) != 1:
            raise
        outer = safe_extract(archive, Path(dest) / "outer", inner)
        return extract_members(outer[inner[0]], Path(dest) / "inner", members)
