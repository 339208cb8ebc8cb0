"""Dataset caches: bound to the source's sha256 and the loader's version, robust to damage, never in the data home."""

from __future__ import annotations

import io
import os
import pickle
import random
import re
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from test_datasets import KDD_ROWS, har_files, make_news_tar, write_idx

import dpstack.datasets as ds
from dpstack.datasets import _cache, news20

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("DPSTACK_CACHE", str(folder))
    return folder / "datasets"


@pytest.fixture
def news_home(tmp_path, cache):
    home = tmp_path / "home"
    (home / "20newsgroups").mkdir(parents=True)
    make_news_tar(home / "20newsgroups/20news-bydate.tar.gz")
    return home


@pytest.fixture
def parses(monkeypatch):
    """Counts the parses of the news20 tarball (a cache hit parses nothing)."""
    calls = []
    real = news20._parse_tar

    def counting(path):
        calls.append(path)
        return real(path)

    monkeypatch.setattr(news20, "_parse_tar", counting)
    return calls


def _entry(cache, name="news20"):
    (path,) = cache.glob(f"{name}-*.npz")
    return path


def _same(a, b):
    assert a.data == b.data
    for k in ("target", "group", "subset", "article_id"):
        np.testing.assert_array_equal(a[k], b[k])


class Planted:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _npz(**arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_damaged_entries_are_reparsed_and_replaced(news_home, cache, parses, tmp_path):
    ref = ds.load_news20("all", data_home=news_home, verify=False, cache=False)
    ds.load_news20("all", data_home=news_home, verify=False)
    entry = _entry(cache)
    good = entry.read_bytes()
    texts = [t.encode() for t in ref.data[::-1]]  # a well-formed entry with other (poisoned) posts
    poisoned = _npz(
        blob=np.frombuffer(b"".join(texts), np.uint8),
        offsets=np.cumsum([0] + [len(t) for t in texts]),
        groups=ref.group[::-1],
        splits=ref.subset[::-1],
        ids=ref.article_id[::-1],
    )
    marker = tmp_path / "code-ran"
    damages = {
        "empty": b"",
        "truncated": good[: len(good) // 2],
        "last byte cut": good[:-1],
        "byte flipped mid-file": good[: len(good) // 2]
        + bytes([good[len(good) // 2] ^ 0xFF])
        + good[len(good) // 2 + 1 :],
        "not a zip": b"garbage" * 100,
        "poisoned but well-formed": poisoned,
        "object array (pickle)": _npz(blob=np.array([Planted(marker)], dtype=object)),
        "raw pickle": pickle.dumps(Planted(marker)),
    }
    for what, data in damages.items():
        entry.write_bytes(data)
        parses.clear()
        got = ds.load_news20("all", data_home=news_home, verify=False)
        _same(got, ref)
        assert len(parses) == 1, what  # the tarball was parsed again
        assert entry.read_bytes() != data and _cache.load("news20", _key(news_home)) is not None, what
        assert not marker.exists(), what


def _key(home):
    sha = _files_sha(home / "20newsgroups/20news-bydate.tar.gz")
    return {"source_sha256": sha, "loader_version": news20.LOADER_VERSION}


def _files_sha(path):
    from dpstack.datasets._home import file_checksum

    return file_checksum(path)


def test_random_byte_corruptions_of_the_dataset_cache(news_home, cache, parses, capsys):
    seed = int(os.environ.get("DPSTACK_CORRUPTION_SEED") or random.SystemRandom().randrange(2**32))
    with capsys.disabled():
        print(f"\ndataset cache corruption test: seed {seed}")
    rng = random.Random(seed)
    ref = ds.load_news20("all", data_home=news_home, verify=False, cache=False)
    ds.load_news20("all", data_home=news_home, verify=False)
    entry = _entry(cache)
    good = entry.read_bytes()
    wrong, crashed = [], []
    for _ in range(150):
        pos = rng.randrange(len(good))
        entry.write_bytes(good[:pos] + bytes([rng.choice([b for b in range(256) if b != good[pos]])]) + good[pos + 1 :])
        try:
            got = ds.load_news20("all", data_home=news_home, verify=False)
        except Exception as exc:  # noqa: BLE001
            crashed.append((pos, repr(exc)))
            continue
        try:
            _same(got, ref)
        except AssertionError:
            wrong.append(pos)
    assert not crashed and not wrong, f"seed {seed}: crashes {crashed[:3]}, wrong results at {wrong[:3]}"


def test_the_entry_is_bound_to_the_source_sha256_and_the_loader_version(news_home, cache, parses, monkeypatch):
    ds.load_news20("all", data_home=news_home, verify=False)
    assert len(parses) == 1
    ds.load_news20("all", data_home=news_home, verify=False)
    assert len(parses) == 1  # hit
    version = news20.LOADER_VERSION
    monkeypatch.setattr(news20, "LOADER_VERSION", version + 1)
    ds.load_news20("all", data_home=news_home, verify=False)
    assert len(parses) == 2  # a new loader never reads an older loader's parse
    monkeypatch.setattr(news20, "LOADER_VERSION", version)
    # Another tarball (another sha256) must not read this tarball's entry, even when the
    # entry is copied to where the other tarball's entry would be.
    other = news_home.parent / "other"
    (other / "20newsgroups").mkdir(parents=True)
    make_news_tar(other / "20newsgroups/20news-bydate.tar.gz", n_per_group=3)
    target = _cache._path("news20", _cache._key_text("news20", _key(other)))
    for path in cache.glob("news20-*.npz"):
        shutil.copy(path, target)
        parses.clear()
        b = ds.load_news20("all", data_home=other, verify=False)
        assert len(parses) == 1 and len(b.data) == 4 * 3 * 2


def test_har_cache_damage_is_reparsed(tmp_path, cache):
    home = tmp_path / "home"
    X = har_files(home)
    ds.load_har("train", data_home=home, verify=False)
    (entry,) = cache.glob("har-train-*.npz")
    for data in (b"", entry.read_bytes()[:100], _npz(X=np.zeros((8, 561)))):
        entry.write_bytes(data)
        got = ds.load_har("train", data_home=home, verify=False)
        np.testing.assert_allclose(got.data, X["train"][0], rtol=1e-7)


def test_orphaned_temp_files_of_a_killed_writer_are_removed(news_home, cache):
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path[:0] = [{str(ROOT)!r}]
        os.environ["DPSTACK_CACHE"] = {str(cache.parent)!r}
        import dpstack._files as f
        import dpstack.datasets as ds
        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)  # killed after writing the temp file, before the rename
        f.os.replace = die
        ds.load_news20("all", data_home={str(news_home)!r}, verify=False)
    """)
    proc = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()
    assert [p.suffix for p in cache.iterdir()] == [".tmp"]
    ds.load_news20("all", data_home=news_home, verify=False)
    assert [p.suffix for p in cache.iterdir()] == [".npz"]


def test_a_read_only_data_home_is_enough_and_stays_untouched(tmp_path, cache):
    """The small fixture files copied into a folder marked read-only load, with and without cache hits."""
    src = tmp_path / "fixtures"
    (src / "20newsgroups").mkdir(parents=True)
    make_news_tar(src / "20newsgroups/20news-bydate.tar.gz")
    har_files(src)
    (src / "mnist").mkdir()
    rng = np.random.default_rng(0)
    write_idx(src / "mnist/train-images-idx3-ubyte.gz", rng.integers(0, 256, (60, 28, 28)))
    write_idx(src / "mnist/train-labels-idx1-ubyte.gz", np.arange(60) % 10)
    write_idx(src / "mnist/t10k-images-idx3-ubyte.gz", rng.integers(0, 256, (20, 28, 28)))
    write_idx(src / "mnist/t10k-labels-idx1-ubyte.gz", np.arange(20) % 10)
    (src / "kddcup99").mkdir()
    import gzip

    for name in ("kddcup.data_10_percent.gz", "corrected.gz"):
        with gzip.open(src / "kddcup99" / name, "wt") as fh:
            fh.write("\n".join(KDD_ROWS) + "\n")
    home = tmp_path / "readonly"
    shutil.copytree(src, home)
    for path in sorted(home.rglob("*"), reverse=True) + [home]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    before = {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in home.rglob("*")}
    try:
        for _ in range(2):  # cold, then from the cache
            news = ds.load_news20("all", data_home=home, verify=False)
            h = ds.load_har("all", data_home=home, verify=False)
            m = ds.load_mnist(subset="train", data_home=home, verify=False)
            k = ds.load_kddcup99(data_home=home, verify=False)
            pst = ds.news20_pst(n_components=3, min_df=1, data_home=home, verify=False)
            assert len(news.data) == 48 and h.data.shape == (13, 561) and len(m.target) == 12
            assert k.data.shape[0] == 3 and pst.X_train.shape[1] == 3
        after = {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in home.rglob("*")}
        assert after == before
        assert not any(p.name == ".cache" for p in home.rglob("*"))
    finally:
        for path in [home, *home.rglob("*")]:
            if path.is_dir():
                path.chmod(stat.S_IRWXU)


def test_the_test_session_fails_if_a_test_writes_into_the_data_home(tmp_path):
    home = tmp_path / "data"
    home.mkdir()
    (home / "MANIFEST.md").write_text("x")
    tests = tmp_path / "t"
    tests.mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", tests / "conftest.py")
    (tests / "test_writes.py").write_text(
        "import os, pathlib\ndef test_writes():\n    pathlib.Path(os.environ['DPSTACK_DATA'], '.cache').mkdir()\n"
    )
    env = {**os.environ, "DPSTACK_DATA": str(home)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stdout
    assert "wrote into the data home" in proc.stdout and ".cache" in proc.stdout
    (home / ".cache").rmdir()
    (tests / "test_writes.py").write_text("def test_reads():\n    pass\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout


# ----------------------------------------------------------------------------- NEWS20 preprocessed once
def _pst_equal(a, b):
    for k in ("X_train", "y_train", "X_test", "y_test", "group_train", "group_test", "feature_variance"):
        np.testing.assert_array_equal(a[k], b[k])
        assert a[k].dtype == b[k].dtype
    assert a.clipped_fraction == b.clipped_fraction
    assert a.vectorizer.vocabulary_ == b.vectorizer.vocabulary_
    assert a.steps.equals(b.steps)


def test_news20_pst_cached_result_equals_the_fitted_one(news_home, cache, parses, monkeypatch):
    kw = dict(n_components=3, min_df=1, data_home=news_home, verify=False)
    fresh = ds.news20_pst(cache=False, **kw)
    parses.clear()
    first = ds.news20_pst(**kw)
    assert len(list(cache.glob("news20-pst-*.npz"))) == 1
    from dpstack.datasets import preprocessing

    def no_refit(*args, **kwargs):
        raise AssertionError("TF-IDF/PCA refitted despite the cache")

    real_fit_pca = preprocessing.fit_pca
    monkeypatch.setattr(preprocessing, "fit_pca", no_refit)
    parses.clear()
    again = ds.news20_pst(**kw)
    assert parses == []  # not even the posts were parsed
    for got in (first, again):
        _pst_equal(got, fresh)
    # the rebuilt vectorizer and PCA transform new posts exactly as the fitted ones
    docs = ["orbit rocket law", "gun church patient pixel", ""]
    np.testing.assert_array_equal(
        again.vectorizer.transform(docs).toarray(), fresh.vectorizer.transform(docs).toarray()
    )
    np.testing.assert_array_equal(
        again.pca.transform(again.vectorizer.transform(docs)), fresh.pca.transform(fresh.vectorizer.transform(docs))
    )
    monkeypatch.setattr(preprocessing, "fit_pca", real_fit_pca)
    # another parameter is another entry; a damaged entry is recomputed
    ds.news20_pst(n_components=2, min_df=1, data_home=news_home, verify=False, fit_on="public")
    assert len(list(cache.glob("news20-pst-*.npz"))) == 2


def test_news20_pst_damaged_entry_is_recomputed(news_home, cache):
    kw = dict(n_components=3, min_df=1, data_home=news_home, verify=False)
    fresh = ds.news20_pst(**kw)
    (entry,) = cache.glob("news20-pst-*.npz")
    for data in (b"", entry.read_bytes()[:-10], _npz(X_train=np.zeros((3, 3)))):
        entry.write_bytes(data)
        _pst_equal(ds.news20_pst(**kw), fresh)


def test_news20_pst_with_a_random_generator_is_not_cached(news_home, cache):
    ds.news20_pst(
        n_components=2, min_df=1, n_test=5, random_state=np.random.default_rng(0), data_home=news_home, verify=False
    )
    assert not list(cache.glob("news20-pst-*.npz"))


# ----------------------------------------------------------------------------- forged entries (HMAC)
def test_a_replaced_news20_cache_with_a_recomputed_checksum_is_rejected(news_home, cache, parses):
    """Someone who can write the cache folder (not read the key) replaces the entry: every post forged,
    the sha256 of the arrays recomputed, the rest of the genuine metadata kept."""
    import json
    import warnings

    ref = ds.load_news20("all", data_home=news_home, verify=False, cache=False)
    ds.load_news20("all", data_home=news_home, verify=False)  # the fixture tarball is not the published one
    entry = _entry(cache)
    with np.load(entry, allow_pickle=False) as z:
        genuine = {k: z[k] for k in z.files}
    meta = json.loads(genuine.pop("__meta__").tobytes())
    blob, off = genuine["blob"].tobytes(), genuine["offsets"]
    texts = [b"FORGED " + blob[off[i] : off[i + 1]] for i in range(len(off) - 1)]  # every cached post
    forged = dict(
        genuine, blob=np.frombuffer(b"".join(texts), np.uint8), offsets=np.cumsum([0] + [len(t) for t in texts])
    )
    meta["sha256"] = _cache._digest(forged)
    entry.write_bytes(_npz(**forged, __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8)))
    parses.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = ds.load_news20("all", data_home=news_home, verify=False)
    n_forged = sum(t.startswith("FORGED") for t in got.data)
    assert n_forged == 0, f"{n_forged} of {len(got.data)} forged posts came back"
    _same(got, ref)
    assert len(parses) == 1 and any(str(entry) in str(w.message) for w in caught)


def test_an_entry_declaring_huge_or_object_arrays_is_refused_before_loading(news_home, cache, parses, monkeypatch):
    import zipfile

    ds.load_news20("all", data_home=news_home, verify=False)
    entry = _entry(cache)
    loads = []
    real_load = np.load
    monkeypatch.setattr(np, "load", lambda *a, **k: loads.append(a) or real_load(*a, **k))
    for dtype, shape in (("<U100000", (1 << 20,)), ("|O", (3,)), ("<f8", (1 << 40,))):
        header = {"descr": dtype, "fortran_order": False, "shape": shape}
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, header)
        with zipfile.ZipFile(entry, "w") as zf:
            zf.writestr("blob.npy", buf.getvalue() + b"\0" * 64)
        loads.clear()
        parses.clear()
        with pytest.warns(RuntimeWarning, match=re.escape(str(entry))):
            ds.load_news20("all", data_home=news_home, verify=False)
        assert loads == [] and len(parses) == 1, dtype  # refused from its header: np.load never called
