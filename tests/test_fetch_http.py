"""``fetch`` end to end over HTTP, against a server on 127.0.0.1 started here.

The archives have the real layouts (UCI's nested HAR zip, the URL tarball) and are built in
the test; the registry entries keep their paths and members, with URLs pointing at the local
server and pins of the bytes built here. Cases: success, a checksum mismatch on the first
mirror (the second is used), an interrupted transfer (clean restart, no ``.part`` left).
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import http.server
import io
import os
import socket
import subprocess
import sys
import tarfile
import threading
import zipfile

import pytest

import dpstack.datasets as ds
from dpstack import _files
from dpstack.datasets import _home

HOST = "127.0.0.1"  # never any other address


class _Handler(http.server.BaseHTTPRequestHandler):
    routes = {}  # path -> (bytes, mode); mode "ok" or "cut" (close the connection mid-body)
    hits = []
    timeout = 10

    def do_GET(self):
        self.hits.append(self.path)
        if self.path not in self.routes:
            self.send_error(404)
            return
        body, mode = self.routes[self.path]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mode == "trickle":  # one byte every 20 ms, for ever (until the client gives up)
            import time

            try:
                for i in range(len(body)):
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                    time.sleep(0.02)
            except OSError:
                pass
            return
        if mode == "cut":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def server():
    """A local HTTP server in a thread; stopped at teardown, and by a timer after 120 s whatever happens."""
    _Handler.routes, _Handler.hits = {}, []
    httpd = http.server.ThreadingHTTPServer((HOST, 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    watchdog = threading.Timer(120, httpd.shutdown)
    watchdog.daemon = True
    watchdog.start()
    base = f"http://{HOST}:{httpd.server_address[1]}"
    try:
        yield base, _Handler.routes, _Handler.hits
    finally:
        watchdog.cancel()
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSTACK_QUIET", "1")
    monkeypatch.setenv("DPSTACK_CACHE", str(tmp_path / "cache"))
    h = tmp_path / "home"
    h.mkdir()
    return h


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _leftovers(home):
    return [p for p in home.rglob("*") if p.name.endswith((".part", ".tmp")) or p.name.startswith(".dpstack-fetch")]


def _pin(monkeypatch, name, payloads, urls):
    """Registry entry ``name`` with its real paths/members, these URLs, and pins of ``payloads``."""
    info = _home.REGISTRY[name]
    files = []
    for f in info.files:
        key = f.member or f.path
        if key not in payloads:
            continue
        pinned = dataclasses.replace(f, sha256=(_sha(payloads[key]),), git_blob=None, required=True)
        pinned = (
            dataclasses.replace(pinned, archive=tuple(urls))
            if f.archive
            else dataclasses.replace(pinned, urls=tuple(urls))
        )
        files.append(pinned)
    monkeypatch.setitem(_home.REGISTRY, name, dataclasses.replace(info, files=tuple(files)))


HAR = {
    "UCI HAR Dataset/activity_labels.txt": b"1 WALKING\n2 WALKING_UPSTAIRS\n",
    "UCI HAR Dataset/train/y_train.txt": b"1\n2\n1\n",
    "UCI HAR Dataset/features.txt": b"1 tBodyAcc-mean()-X\n2 tBodyAcc-mean()-Y\n",
}


def nested_har_zip(members):
    """UCI's current download: an outer zip holding ``UCI HAR Dataset.zip`` (plus macOS litter)."""
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    outer = io.BytesIO()
    with zipfile.ZipFile(outer, "w") as zf:
        zf.writestr("UCI HAR Dataset.names", b"description")
        zf.writestr("UCI HAR Dataset.zip", inner.getvalue())
        zf.writestr("__MACOSX/._UCI HAR Dataset.zip", b"resource fork")
    return outer.getvalue()


def url_tarball(days):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in [("url_svmlight/FeatureTypes", b"4\n5\n")] + list(days.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


DAYS = {"url_svmlight/Day0.svm": b"+1 4:0.5 17:1\n-1 5:0.25\n", "url_svmlight/Day1.svm": b"-1 4:1\n"}


def test_fetch_success_nested_har_zip(server, home, monkeypatch):
    base, routes, hits = server
    routes["/har.zip"] = (nested_har_zip(HAR), "ok")
    _pin(monkeypatch, "har", HAR, [f"{base}/har.zip", f"{base}/never-used.zip"])
    got = ds.fetch("har", data_home=home)
    assert sorted(p.relative_to(home).as_posix() for p in got) == sorted(
        "uci_har/UCI_HAR_Dataset/" + m.split("/", 1)[1] for m in HAR
    )
    for member, data in HAR.items():
        assert (home / "uci_har/UCI_HAR_Dataset" / member.split("/", 1)[1]).read_bytes() == data
    assert hits == ["/har.zip"] and not _leftovers(home)
    assert ds.fetch("har", data_home=home) == []  # nothing missing any more


def test_checksum_mismatch_on_the_first_mirror_falls_back_to_the_second(server, home, monkeypatch):
    base, routes, hits = server
    routes["/a/url_svmlight.tar.gz"] = (url_tarball({**DAYS, "url_svmlight/Day0.svm": b"+1 4:9\n"}), "ok")
    routes["/b/url_svmlight.tar.gz"] = (url_tarball(DAYS), "ok")
    _pin(monkeypatch, "url", DAYS, [f"{base}/a/url_svmlight.tar.gz", f"{base}/b/url_svmlight.tar.gz"])
    got = ds.fetch("url", data_home=home)
    assert hits == ["/a/url_svmlight.tar.gz", "/b/url_svmlight.tar.gz"]
    assert sorted(p.name for p in got) == ["Day0.svm", "Day1.svm"]
    assert (home / "url_svmlight/Day0.svm").read_bytes() == DAYS["url_svmlight/Day0.svm"]
    assert not _leftovers(home)
    # a single (direct) file: wrong bytes on the first mirror, the right ones on the second
    kdd = {"kddcup99/corrected.gz": gzip.compress(b"0,tcp,http,SF,normal.\n", mtime=0)}
    routes["/a/corrected.gz"] = (b"not the file", "ok")
    routes["/b/corrected.gz"] = (kdd["kddcup99/corrected.gz"], "ok")
    _pin(monkeypatch, "kddcup99", kdd, [f"{base}/a/corrected.gz", f"{base}/b/corrected.gz"])
    assert [p.name for p in ds.fetch("kddcup99", data_home=home)] == ["corrected.gz"]
    assert (home / "kddcup99/corrected.gz").read_bytes() == kdd["kddcup99/corrected.gz"] and not _leftovers(home)


def test_every_mirror_wrong_is_a_checksum_error_naming_them_and_keeps_nothing(server, home, monkeypatch):
    base, routes, _ = server
    kdd = {"kddcup99/corrected.gz": b"the published bytes"}
    routes["/a/corrected.gz"] = routes["/b/corrected.gz"] = (b"other bytes", "ok")
    _pin(monkeypatch, "kddcup99", kdd, [f"{base}/a/corrected.gz", f"{base}/b/corrected.gz"])
    with pytest.raises(ds.ChecksumError, match="/a/corrected.gz.*/b/corrected.gz"):
        ds.fetch("kddcup99", data_home=home)
    assert not any(p.is_file() for p in home.rglob("*"))


def test_interrupted_transfer_restarts_cleanly(server, home, monkeypatch):
    base, routes, hits = server
    data = gzip.compress(os.urandom(300_000), mtime=0)  # big enough to be cut mid-body
    kdd = {"kddcup99/corrected.gz": data}
    routes["/cut/corrected.gz"] = (data, "cut")
    routes["/ok/corrected.gz"] = (data, "ok")
    # the only mirror drops the connection: a clear error, and no partial file anywhere
    _pin(monkeypatch, "kddcup99", kdd, [f"{base}/cut/corrected.gz"])
    with pytest.raises(ConnectionError, match="interrupted"):
        ds.fetch("kddcup99", data_home=home)
    assert not (home / "kddcup99/corrected.gz").exists() and not _leftovers(home)
    # the first mirror drops the connection, the second delivers
    _pin(monkeypatch, "kddcup99", kdd, [f"{base}/cut/corrected.gz", f"{base}/ok/corrected.gz"])
    assert [p.name for p in ds.fetch("kddcup99", data_home=home)] == ["corrected.gz"]
    assert (home / "kddcup99/corrected.gz").read_bytes() == data and not _leftovers(home)
    # an archive cut mid-body on its first mirror
    routes["/cut/har.zip"] = (nested_har_zip(HAR), "cut")
    routes["/ok/har.zip"] = (nested_har_zip(HAR), "ok")
    _pin(monkeypatch, "har", HAR, [f"{base}/cut/har.zip", f"{base}/ok/har.zip"])
    assert len(ds.fetch("har", data_home=home)) == 3 and not _leftovers(home)
    assert hits.count("/cut/corrected.gz") == 2 and hits[-2:] == ["/cut/har.zip", "/ok/har.zip"]


def test_partial_files_of_a_killed_fetch_are_removed_by_the_next(server, home, monkeypatch):
    base, routes, _ = server
    data = b"published"
    routes["/corrected.gz"] = (data, "ok")
    _pin(monkeypatch, "kddcup99", {"kddcup99/corrected.gz": data}, [f"{base}/corrected.gz"])
    (home / "kddcup99").mkdir()
    # a fetch process killed mid-download: its .part (named with its dead pid) and temporary folder
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    ).stdout.strip()
    suffix = f".{_files.HOST}.{dead}.0a0b0c0d"
    stale_part = home / "kddcup99" / f"corrected.gz{suffix}.part"
    stale_part.write_bytes(data[:3])
    legacy_part = home / "kddcup99" / "corrected.gz.part"  # the fixed name of earlier versions
    legacy_part.write_bytes(data[:3])
    stale_dir = home / f".dpstack-fetch.abc{suffix}.tmp"
    (stale_dir / "x").mkdir(parents=True)
    live_part = home / "kddcup99" / f"corrected.gz.{_files.HOST}.{os.getpid()}.0a0b0c0d.part"
    live_part.write_bytes(b"another fetch, still running")
    ds.fetch("kddcup99", data_home=home)
    assert (home / "kddcup99/corrected.gz").read_bytes() == data
    assert not stale_part.exists() and not legacy_part.exists() and live_part.exists()
    routes["/har.zip"] = (nested_har_zip(HAR), "ok")
    _pin(monkeypatch, "har", HAR, [f"{base}/har.zip"])
    ds.fetch("har", data_home=home)
    assert not stale_dir.exists()


def test_the_uci_mirror_of_the_url_archive_is_listed_first():
    urls = {f.archive for f in _home.REGISTRY["url"].files}
    assert urls == {
        (
            "https://archive.ics.uci.edu/ml/machine-learning-databases/url/url_svmlight.tar.gz",
            "http://www.sysnet.ucsd.edu/projects/url/url_svmlight.tar.gz",
        )
    }


def test_a_mirror_that_trickles_is_abandoned_for_the_next(server, home, monkeypatch):
    """One byte every 20 ms never trips the socket timeout; the pace check abandons it (limits
    lowered here from 8,000 bytes/s after 30 s, so the test takes a second)."""
    import time

    base, routes, hits = server
    data = gzip.compress(os.urandom(5_000), mtime=0)
    kdd = {"kddcup99/corrected.gz": data}
    routes["/slow/corrected.gz"] = (data, "trickle")
    routes["/ok/corrected.gz"] = (data, "ok")
    monkeypatch.setattr(_home, "GRACE_SECONDS", 0.5)
    monkeypatch.setattr(_home, "MIN_RATE", 1_000)
    _pin(monkeypatch, "kddcup99", kdd, [f"{base}/slow/corrected.gz"])
    start = time.monotonic()
    with pytest.raises(ConnectionError, match="too slow, .* bytes in .* s"):
        ds.fetch("kddcup99", data_home=home)
    assert time.monotonic() - start < 30 and not _leftovers(home)
    _pin(monkeypatch, "kddcup99", kdd, [f"{base}/slow/corrected.gz", f"{base}/ok/corrected.gz"])
    assert [p.name for p in ds.fetch("kddcup99", data_home=home)] == ["corrected.gz"]
    # and a download that takes longer than the whole limit, however fast
    monkeypatch.setattr(_home, "MAX_SECONDS", 0.3)
    (home / "kddcup99/corrected.gz").unlink()
    _pin(monkeypatch, "kddcup99", kdd, [f"{base}/slow/corrected.gz"])
    with pytest.raises(ConnectionError, match="abandoned after .* s, the limit of one download"):
        ds.fetch("kddcup99", data_home=home)
