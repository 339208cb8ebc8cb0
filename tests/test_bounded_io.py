"""Bounded, verified I/O: downloads, archive members and decompression stop at the published size.

Local fixtures only: a server on 127.0.0.1 (from test_fetch_http), archives and gzip bombs built
here, a full disk simulated by a patched ``open``. What is measured is what an attacker
controls: the bytes written to the data home, the memory taken by a read, and the message.
"""

from __future__ import annotations

import builtins
import dataclasses
import errno
import gzip
import io
import re
import tarfile
import tracemalloc
import warnings

import numpy as np
import pytest
import test_fetch_http
from test_datasets import make_news_tar, write_idx
from test_fetch_http import DAYS, _pin, url_tarball

import dpstack.datasets as ds
from dpstack.datasets import _home

MiB = 1 << 20
server, home = test_fetch_http.server, test_fetch_http.home  # the local HTTP server and an empty data home


class _Counted:
    """A file opened for writing whose writes are counted (or refused, as on a full disk)."""

    def __init__(self, fh, key, log, full):
        self._fh, self._key, self._log, self._full = fh, key, log, full

    def write(self, data):
        if self._full:
            raise OSError(errno.ENOSPC, "No space left on device")
        self._log[self._key] = self._log.get(self._key, 0) + len(data)
        return self._fh.write(data)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._fh.__exit__(*exc)

    def __getattr__(self, name):
        return getattr(self._fh, name)


def _watch_writes(monkeypatch, folder, full=False):
    """Count the bytes written to each file under ``folder`` (by name); ``full``: every write fails with ENOSPC."""
    real_open, log = builtins.open, {}

    def counting_open(file, mode="r", *args, **kwargs):
        fh = real_open(file, mode, *args, **kwargs)
        if isinstance(file, (str, bytes)) or hasattr(file, "__fspath__"):
            path = str(file if not isinstance(file, bytes) else file.decode())
            if any(m in mode for m in "wax") and path.startswith(str(folder)):
                return _Counted(fh, path.rsplit("/", 1)[-1], log, full)
        return fh

    monkeypatch.setattr(builtins, "open", counting_open)
    return log


def _with_sizes(monkeypatch, name, sizes):
    """Registry entry ``name`` with ``size`` (the published size) of each file set from ``sizes``."""
    info = _home.REGISTRY[name]
    if "size" in {f.name for f in dataclasses.fields(_home.RawFile)}:
        files = tuple(dataclasses.replace(f, size=sizes(f)) for f in info.files)
        monkeypatch.setitem(_home.REGISTRY, name, dataclasses.replace(info, files=files))


def _written(log, name):
    return sum(n for key, n in log.items() if key.startswith(name))


def _zeros_gzip(n_mib):
    """A gzip stream inflating to ``n_mib`` MiB of zeros, a few KiB on disk (concatenated members)."""
    return gzip.compress(b"\0" * MiB, compresslevel=9, mtime=0) * n_mib


# ----------------------------------------------------------------------------- downloads and archive members
def test_an_oversized_archive_member_is_stopped_at_the_published_size(server, home, monkeypatch):
    """A small tarball whose Day0.svm inflates to 48 MiB: refused from its header, nothing written; mirror 2 used."""
    base, routes, hits = server
    bomb = io.BytesIO()
    with tarfile.open(fileobj=bomb, mode="w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo("url_svmlight/Day0.svm")
        info.size = 48 * MiB
        tar.addfile(info, io.BytesIO(b"\0" * info.size))
    assert len(bomb.getvalue()) < MiB  # small on the wire
    routes["/a/url_svmlight.tar.gz"] = (bomb.getvalue(), "ok")
    routes["/b/url_svmlight.tar.gz"] = (url_tarball(DAYS), "ok")
    _pin(monkeypatch, "url", DAYS, [f"{base}/a/url_svmlight.tar.gz", f"{base}/b/url_svmlight.tar.gz"])
    day0 = len(DAYS["url_svmlight/Day0.svm"])
    _with_sizes(monkeypatch, "url", lambda f: len(DAYS[f.member]))
    log = _watch_writes(monkeypatch, home)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ds.fetch("url", data_home=home)
    assert hits == ["/a/url_svmlight.tar.gz", "/b/url_svmlight.tar.gz"]
    assert sorted(p.name for p in got) == ["Day0.svm", "Day1.svm"]
    assert (home / "url_svmlight/Day0.svm").read_bytes() == DAYS["url_svmlight/Day0.svm"]
    # the bomb's member was never written beyond the published size (+ one chunk at most)
    assert _written(log, "Day0.svm") <= 2 * day0 + MiB, log


def test_an_oversized_download_is_refused_before_or_at_its_limit(server, home, monkeypatch):
    base, routes, hits = server
    data = gzip.compress(b"0,tcp,http,SF,normal.\n", mtime=0)
    routes["/a/corrected.gz"] = (b"x" * (8 * MiB), "ok")  # announces 8 MiB for a file of a few bytes
    routes["/b/corrected.gz"] = (data, "ok")
    _pin(monkeypatch, "kddcup99", {"kddcup99/corrected.gz": data}, [f"{base}/a/corrected.gz", f"{base}/b/corrected.gz"])
    _with_sizes(monkeypatch, "kddcup99", lambda f: len(data))
    log = _watch_writes(monkeypatch, home)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [p.name for p in ds.fetch("kddcup99", data_home=home)] == ["corrected.gz"]
    assert hits == ["/a/corrected.gz", "/b/corrected.gz"]
    assert (home / "kddcup99/corrected.gz").read_bytes() == data
    assert _written(log, "corrected.gz") <= len(data) + MiB, log  # not the 8 MiB of the first mirror
    # the only mirror too large: a SizeLimitError naming it, nothing kept
    (home / "kddcup99/corrected.gz").unlink()
    _pin(monkeypatch, "kddcup99", {"kddcup99/corrected.gz": data}, [f"{base}/a/corrected.gz"])
    _with_sizes(monkeypatch, "kddcup99", lambda f: len(data))
    with warnings.catch_warnings(), pytest.raises(ValueError, match="/a/corrected.gz.*more than"):
        warnings.simplefilter("ignore")
        ds.fetch("kddcup99", data_home=home)
    assert not any(p.is_file() for p in home.rglob("*"))


def test_a_full_disk_says_so_and_names_the_path(server, home, monkeypatch):
    """ENOSPC while writing: a DiskFullError naming the file, not "could not download … (offline?)"."""
    base, routes, hits = server
    data = b"published bytes"
    routes["/a/corrected.gz"] = routes["/b/corrected.gz"] = (data, "ok")
    _pin(monkeypatch, "kddcup99", {"kddcup99/corrected.gz": data}, [f"{base}/a/corrected.gz", f"{base}/b/corrected.gz"])
    _watch_writes(monkeypatch, home, full=True)
    with warnings.catch_warnings(), pytest.raises(OSError) as err:
        warnings.simplefilter("ignore")
        ds.fetch("kddcup99", data_home=home)
    assert type(err.value).__name__ == "DiskFullError" and err.value.errno == errno.ENOSPC, repr(err.value)
    message = str(err.value)
    assert "no space left" in message and str(home / "kddcup99") in message and "offline" not in message
    assert hits == ["/a/corrected.gz"]  # a full disk is not the mirror's fault: no other mirror tried
    # the same from an archive
    routes["/har.zip"] = (b"PK\x05\x06" + b"\0" * 18, "ok")
    _pin(monkeypatch, "har", {"UCI HAR Dataset/features.txt": b"1 f\n"}, [f"{base}/har.zip"])
    with warnings.catch_warnings(), pytest.raises(OSError, match="no space left"):
        warnings.simplefilter("ignore")
        ds.fetch("har", data_home=home)


def test_https_mirrors_come_first_and_plain_http_is_named_and_warned(server, home, monkeypatch):
    for info in _home.REGISTRY.values():
        for f in info.files:
            for urls in (f.urls, f.archive or ()):
                schemes = [u.split(":", 1)[0] for u in urls]
                assert schemes == sorted(schemes, key=lambda s: s == "http"), urls
    plain = _home.plain_http_mirrors()
    assert ("kddcup99", "kddcup99/corrected.gz", "http://kdd.ics.uci.edu/databases/kddcup99/corrected.gz") in plain
    assert all(url.startswith("http:") for _, _, url in plain) and len(plain) == 8
    base, routes, _ = server
    data = b"published"
    routes["/corrected.gz"] = (data, "ok")
    _pin(monkeypatch, "kddcup99", {"kddcup99/corrected.gz": data}, [f"{base}/corrected.gz"])
    with pytest.warns(ds.PlainHTTPWarning, match=re.escape(f"{base}/corrected.gz")):
        ds.fetch("kddcup99", data_home=home)


# ----------------------------------------------------------------------------- decompression with verify=False
def test_a_gzip_bomb_read_without_verification_stops_after_its_header(tmp_path, monkeypatch):
    """An MNIST labels file announcing 60,000 labels that inflates to 256 MiB: refused, memory stays small."""
    monkeypatch.setenv("DPSTACK_CACHE", str(tmp_path / "cache"))
    home = tmp_path / "home"
    (home / "mnist").mkdir(parents=True)
    write_idx(home / "mnist/train-images-idx3-ubyte.gz", np.zeros((3, 28, 28)))
    header = bytes([0, 0, 0x08, 1]) + (60000).to_bytes(4, "big")
    bomb = home / "mnist/train-labels-idx1-ubyte.gz"
    bomb.write_bytes(gzip.compress(header + bytes(60000), mtime=0) + _zeros_gzip(256))
    assert bomb.stat().st_size < 2 * MiB
    tracemalloc.start()
    try:
        with pytest.raises(ds.CorruptFileError, match=re.escape(str(bomb))):
            ds.load_mnist((0, 8), "train", data_home=home, verify=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * MiB, f"{peak / MiB:.0f} MiB allocated reading a bomb"
    # a header announcing more than the published file is refused before any data is read
    header = bytes([0, 0, 0x08, 3]) + b"".join(int(s).to_bytes(4, "big") for s in (2**31 - 1, 28, 28))
    (home / "mnist/train-images-idx3-ubyte.gz").write_bytes(gzip.compress(header, mtime=0))
    with pytest.raises(ds.CorruptFileError, match="header announces"):
        ds.load_mnist((0, 8), "train", data_home=home, verify=False)


def test_a_tar_bomb_read_without_verification_is_refused(tmp_path, monkeypatch):
    """A 20 Newsgroups tarball with one post inflating to 72 MiB (the whole tar is 50 MB): refused, named."""
    monkeypatch.setenv("DPSTACK_CACHE", str(tmp_path / "cache"))
    home = tmp_path / "home"
    (home / "20newsgroups").mkdir(parents=True)
    path = home / "20newsgroups/20news-bydate.tar.gz"
    make_news_tar(path, extra_members=[("20news-bydate-train/sci.med/999", b"\0" * (72 * MiB), {})])
    assert path.stat().st_size < 2 * MiB
    with pytest.raises(ds.CorruptFileError, match=re.escape(str(path)) + ".*more than"):
        ds.load_news20("all", data_home=home, verify=False, cache=False)


def test_a_plain_file_far_larger_than_the_published_one_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSTACK_CACHE", str(tmp_path / "cache"))
    home = tmp_path / "home"
    (home / "url_svmlight").mkdir(parents=True)
    day45 = home / "url_svmlight/Day45.svm"
    with open(day45, "wb") as fh:
        fh.truncate(4 * MiB)  # sparse: the published Day45.svm is 119,513 bytes
    with pytest.raises(ds.CorruptFileError, match=re.escape(str(day45)) + ".*larger than the published"):
        ds.load_url(days=[45], data_home=home, verify=False, n_features=10)
