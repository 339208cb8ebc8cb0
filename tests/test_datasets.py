"""dpstack.datasets: raw-format parsing on tiny files written here, bad input, and real-data checks.

The real-data checks (marker ``realdata``) run when DPSTACK_DATA holds the shared copies
(CI: ../shared/data) and are skipped with a reason otherwise.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import tarfile
import urllib.error
import zipfile
from pathlib import Path

import numpy as np
import pytest

import dpstack.datasets as ds
from dpstack.datasets import _home
from dpstack.datasets.kddcup99 import KDD_CATEGORIES, KDD_COLUMNS, kddcup99_feature_names
from dpstack.datasets.preprocessing import fit_pca, scale_and_clip
from dpstack.datasets.url import URL_N_FEATURES


# ----------------------------------------------------------------------------- tiny raw files
def write_idx(path, array):
    array = np.asarray(array, dtype=np.uint8)
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty data home; the cache folder also points into tmp_path so nothing leaks out."""
    monkeypatch.setenv("DPSTACK_CACHE", str(tmp_path / "usercache" / "dpstack"))
    monkeypatch.delenv("DPSTACK_DATA", raising=False)
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def mnist_home(home):
    rng = np.random.default_rng(0)
    (home / "mnist").mkdir()
    tr_lab = np.arange(300) % 10
    te_lab = (np.arange(100) * 3) % 10
    tr_img = rng.integers(0, 256, (300, 28, 28))
    te_img = rng.integers(0, 256, (100, 28, 28))
    write_idx(home / "mnist/train-images-idx3-ubyte.gz", tr_img)
    write_idx(home / "mnist/train-labels-idx1-ubyte.gz", tr_lab)
    write_idx(home / "mnist/t10k-images-idx3-ubyte.gz", te_img)
    write_idx(home / "mnist/t10k-labels-idx1-ubyte.gz", te_lab)
    return home, tr_img, tr_lab, te_img, te_lab


def add_file(tar, name, payload, **kw):
    info = tarfile.TarInfo(name)
    info.size = len(payload)
    for k, v in kw.items():
        setattr(info, k, v)
    tar.addfile(info, io.BytesIO(payload))


def make_news_tar(path, n_per_group=6, extra_members=()):
    groups = ["sci.med", "sci.space", "talk.politics.guns", "talk.religion.misc", "comp.graphics", "rec.autos"]
    words = {
        "sci": b"orbit rocket patient doctor ",
        "talk": b"gun law god church ",
        "comp": b"pixel image render ",
        "rec": b"car engine wheel ",
    }
    with tarfile.open(path, "w:gz") as tar:
        for split in ("train", "test"):
            for g in groups:
                for i in range(n_per_group):
                    body = b"From: a@b\nSubject: x\n\n" + words[g.split(".")[0]] * (i + 1) + b"caf\xe9 %d" % i
                    add_file(tar, f"20news-bydate-{split}/{g}/{100 + i}", body)
        for name, payload, kw in extra_members:
            add_file(tar, name, payload, **kw)


@pytest.fixture
def news_home(home):
    (home / "20newsgroups").mkdir()
    make_news_tar(home / "20newsgroups/20news-bydate.tar.gz")
    return home


def har_files(home, n_train=8, n_test=5, n_cols=561):
    d = home / "uci_har/UCI_HAR_Dataset"
    (d / "train").mkdir(parents=True)
    (d / "test").mkdir()
    (d / "features.txt").write_text("".join(f"{i + 1} f{i}-mean()-X,{i}\n" for i in range(561)))
    (d / "activity_labels.txt").write_text(
        "1 WALKING\n2 WALKING_UPSTAIRS\n3 WALKING_DOWNSTAIRS\n4 SITTING\n5 STANDING\n6 LAYING\n"
    )
    rng = np.random.default_rng(1)
    out = {}
    for part, n in (("train", n_train), ("test", n_test)):
        X = rng.uniform(-1, 1, (n, n_cols))
        y = np.arange(n) % 6 + 1
        s = np.arange(n) % 3 + (1 if part == "train" else 10)
        (d / part / f"X_{part}.txt").write_text(
            "\n".join("  " + " ".join(f"{v: .7e}" for v in row) for row in X) + "\n"
        )
        (d / part / f"y_{part}.txt").write_text("\n".join(map(str, y)) + "\n")
        (d / part / f"subject_{part}.txt").write_text("\n".join(map(str, s)) + "\n")
        out[part] = (X, y, s)
    return out


KDD_ROWS = [
    "0,tcp,http,SF,181,5450,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,8,8,0.00,0.00,0.00,0.00,1.00,0.00,0.00,9,9,1.00,0.00,0.11,0.00,0.00,0.00,0.00,0.00,normal.",
    "0,icmp,ecr_i,SF,1032,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,511,511,0.00,0.00,0.00,0.00,1.00,0.00,0.00,255,255,1.00,0.00,1.00,0.00,0.00,0.00,0.00,0.00,smurf.",
    "2,udp,private,REJ,0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,1,1,1,1,0.00,0.00,1.00,1.00,1.00,0.00,0.00,1,1,1.00,0.00,1.00,0.00,0.00,0.00,1.00,1.00,neptune.",
]


@pytest.fixture
def kdd_home(home):
    (home / "kddcup99").mkdir()
    with gzip.open(home / "kddcup99/kddcup.data_10_percent.gz", "wt") as f:
        f.write("\n".join(KDD_ROWS) + "\n")
    with gzip.open(home / "kddcup99/corrected.gz", "wt") as f:
        f.write(
            KDD_ROWS[0].replace(",http,", ",made_up_service,") + "\n" + KDD_ROWS[1].replace("smurf.", "mscan.") + "\n"
        )
    return home


# ----------------------------------------------------------------------------- data home
def test_data_home_env_wins_over_default_and_argument_wins_over_env(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DPSTACK_DATA", raising=False)
    assert ds.data_home() == tmp_path / "xdg" / "dpstack"
    monkeypatch.setenv("DPSTACK_DATA", str(tmp_path / "env"))
    assert ds.data_home() == tmp_path / "env"
    assert ds.data_home(tmp_path / "arg") == tmp_path / "arg"


def test_status_lists_present_and_missing_files(mnist_home):
    home = mnist_home[0]
    st = ds.dataset_status(home)
    mn = st[st.dataset == "mnist"]
    assert len(mn) == 4 and mn.present.all()
    assert not st[st.dataset == "kddcup99"].present.any()
    assert st[st.dataset == "kddcup99"]["path"].str.startswith(str(home)).all()


# ----------------------------------------------------------------------------- MNIST
def test_load_mnist_parses_idx_and_selects_digits(mnist_home):
    home, tr_img, tr_lab, te_img, te_lab = mnist_home
    b = ds.load_mnist((0, 8), "train", data_home=home, verify=False)
    keep = np.flatnonzero(np.isin(tr_lab, (0, 8)))
    assert b.data.shape == (len(keep), 784)
    np.testing.assert_array_equal(b.target, tr_lab[keep])
    np.testing.assert_allclose(b.data, tr_img[keep].reshape(len(keep), -1) / 255.0)
    both = ds.load_mnist((0, 9), "all", data_home=home, verify=False)
    n_te = np.isin(te_lab, (0, 9)).sum()
    assert (both.subset == "test").sum() == n_te
    assert both.index[both.subset == "test"].min() >= 60000  # test positions counted after training
    assert set(both.target) == {0, 9}
    assert len(ds.load_mnist(None, "test", data_home=home, verify=False).target) == 100
    assert set(b.files) == {"mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz"}
    assert b.citation == "lecun1998gradient"


@pytest.mark.parametrize("digits", [(0, 10), (-1, 3), (0, 0), ("0", "8"), (0.5, 8)])
def test_load_mnist_rejects_unknown_digits(mnist_home, digits):
    with pytest.raises(ValueError, match="digits"):
        ds.load_mnist(digits, data_home=mnist_home[0], verify=False)


def test_load_mnist_rejects_unknown_subset(mnist_home):
    with pytest.raises(ValueError, match="subset"):
        ds.load_mnist(subset="validation", data_home=mnist_home[0], verify=False)


def test_missing_file_message_names_file_and_data_home(home):
    with pytest.raises(ds.DatasetNotFoundError) as err:
        ds.load_mnist(data_home=home)
    msg = str(err.value)
    assert "mnist/train-images-idx3-ubyte.gz" in msg and str(home) in msg and "fetch('mnist')" in msg


def test_checksum_mismatch_is_reported(mnist_home):
    with pytest.raises(ds.ChecksumError, match="checksum mismatch.*train-images"):
        ds.load_mnist(data_home=mnist_home[0])  # the tiny files are not the published ones


def test_read_idx_rejects_bad_magic_and_truncated_files(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x01\x02\x08\x01" + b"\x00" * 8)
    with pytest.raises(ValueError, match="not an IDX"):
        ds.read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(bytes([0, 0, 8, 1]) + (10).to_bytes(4, "big") + b"\x00" * 9)
    with pytest.raises(ValueError, match="header says"):
        ds.read_idx(tmp_path / "short")


# ----------------------------------------------------------------------------- NEWS20 and archives
def test_load_news20_sci_vs_talk(news_home):
    b = ds.load_news20("train", data_home=news_home, verify=False)
    assert len(b.data) == 4 * 6
    assert b.target.sum() == 12
    assert set(b.group[b.target == 1]) == {"sci.med", "sci.space"}
    assert all(t.endswith(f"caf\u00e9 {int(i) - 100}") for t, i in zip(b.data, b.article_id))  # Latin-1
    assert all(("orbit" in t) == (y == 1) for t, y in zip(b.data, b.target))
    assert len(ds.load_news20("all", data_home=news_home, verify=False).data) == 48
    other = ds.load_news20(
        "test", positive=("comp.graphics",), negative=("rec.autos",), data_home=news_home, verify=False
    )
    assert len(other.data) == 12 and all(("pixel" in t) == (y == 1) for t, y in zip(other.data, other.target))


def test_load_news20_rejects_unknown_group(news_home):
    with pytest.raises(ValueError, match="unknown"):
        ds.load_news20(positive=("sci.nonsense",), data_home=news_home, verify=False)


@pytest.mark.parametrize(
    "name, kw",
    [
        ("../escape", {}),
        ("/etc/evil", {}),
        ("20news-bydate-train/sci.med/../../../escape", {}),
        ("20news-bydate-train/sci.med/link", {"type": tarfile.SYMTYPE, "linkname": "/etc/passwd"}),
        ("20news-bydate-train/sci.med/hard", {"type": tarfile.LNKTYPE, "linkname": "../x"}),
    ],
)
def test_unsafe_tar_member_is_refused(home, tmp_path, name, kw):
    (home / "20newsgroups").mkdir()
    tar = home / "20newsgroups/20news-bydate.tar.gz"
    make_news_tar(tar, n_per_group=1, extra_members=[(name, b"" if kw else b"pwned", kw)])
    with pytest.raises(ds.UnsafeArchiveError, match="refused"):
        ds.load_news20(data_home=home, verify=False)
    out = tmp_path / "extract" / "deep"
    with pytest.raises(ds.UnsafeArchiveError):
        ds.safe_extract(tar, out)
    assert not (tmp_path / "extract" / "escape").exists() and not (tmp_path / "escape").exists()
    assert not out.exists() or not any(out.rglob("*"))  # refused before writing anything


def test_safe_extract_zip_refuses_traversal_and_extracts_plain_members(tmp_path):
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as zf:
        zf.writestr("a/b.txt", "hello")
    assert ds.safe_extract(good, tmp_path / "out")["a/b.txt"].read_text() == "hello"
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("../evil.txt", "x")
    with pytest.raises(ds.UnsafeArchiveError):
        ds.safe_extract(bad, tmp_path / "out2")
    assert not (tmp_path / "evil.txt").exists()


# ----------------------------------------------------------------------------- HAR
def test_load_har_reads_text_files(home):
    truth = har_files(home)
    b = ds.load_har("all", data_home=home, verify=False)
    assert b.data.shape == (13, 561) and len(b.feature_names) == 561
    np.testing.assert_allclose(b.data[:8], truth["train"][0], rtol=1e-7)
    np.testing.assert_array_equal(b.target[8:], truth["test"][1])
    np.testing.assert_array_equal(b.subject[:8], truth["train"][2])
    assert b.target_names[5] == "LAYING" and b.feature_names[0] == "f0-mean()-X,0"
    assert list(b.subset).count("test") == 5


def test_load_har_rejects_wrong_column_count(home):
    har_files(home, n_cols=560)
    with pytest.raises(ValueError, match="560 columns, expected 561"):
        ds.load_har(data_home=home, verify=False)


def test_load_har_missing_x_files_says_so(home):
    har_files(home)
    (home / "uci_har/UCI_HAR_Dataset/test/X_test.txt").unlink()
    with pytest.raises(ds.DatasetNotFoundError, match="X_test.txt in data home"):
        ds.load_har("test", data_home=home)


# ----------------------------------------------------------------------------- KDD
def test_kdd_feature_count_is_123_by_the_documented_rule():
    names = kddcup99_feature_names()
    assert len(names) == 123
    n_symbolic = sum(len(v) for v in KDD_CATEGORIES.values())
    assert n_symbolic == 89 and len(KDD_COLUMNS) - len(KDD_CATEGORIES) == 34
    assert len(KDD_CATEGORIES["service"]) == 67


def test_load_kddcup99_one_hot_and_labels(kdd_home):
    b = ds.load_kddcup99("train", data_home=kdd_home, verify=False)
    names = b.feature_names
    assert b.data.shape == (3, 123)
    np.testing.assert_array_equal(b.target, [0, 1, 1])
    assert list(b.attack) == ["normal", "smurf", "neptune"]
    row = dict(zip(names, b.data[2]))
    assert row["protocol_type=udp"] == 1 and row["service=private"] == 1 and row["flag=REJ"] == 1
    assert row["land=1"] == 1 and row["is_host_login=1"] == 1 and row["duration"] == 2
    # exactly one indicator per symbolic attribute in every row
    for attr, cats in KDD_CATEGORIES.items():
        block = b.data[:, [names.index(f"{attr}={c}") for c in cats]]
        np.testing.assert_array_equal(block.sum(axis=1), 1)
    assert b.data[0, names.index("src_bytes")] == 181


def test_load_kddcup99_unknown_category_is_an_empty_block(kdd_home):
    b = ds.load_kddcup99("test", data_home=kdd_home, verify=False)
    svc = [i for i, n in enumerate(b.feature_names) if n.startswith("service=")]
    assert b.unknown_categories["service"] == 1
    np.testing.assert_array_equal(b.data[:, svc].sum(axis=1), [0, 1])
    assert list(b.target) == [0, 1]  # a test-only attack name still counts as an attack


def test_kddcup99_scale_is_bounded_and_monotone(kdd_home):
    b = ds.load_kddcup99("all", data_home=kdd_home, verify=False)
    X = b.data.copy()
    X[0, b.feature_names.index("src_bytes")] = 1.4e9
    Z = ds.kddcup99_scale(X, b.feature_names)
    assert np.linalg.norm(Z, axis=1).max() <= 1 + 1e-12
    j = b.feature_names.index("src_bytes")
    assert Z[0, j] > Z[1, j] > Z[3, j] > Z[2, j] == 0  # larger byte counts map to larger values


# ----------------------------------------------------------------------------- URL
def test_load_url_reads_svmlight_days(home):
    d = home / "url_svmlight"
    d.mkdir()
    (d / "Day0.svm").write_text("+1 1:0.5 4:1\n-1 2:1 7:3\n")
    (d / "Day1.svm").write_text("-1 7:2\n")
    (d / "FeatureTypes").write_text("1\n2\n")
    b = ds.load_url(days=[0, 1], data_home=home, verify=False, n_features=10)
    assert b.data.shape == (3, 10) and b.data.format == "csr"
    np.testing.assert_array_equal(b.target, [1, 0, 0])
    np.testing.assert_array_equal(b.day, [0, 0, 1])
    assert b.data[0, 0] == 0.5 and b.data[1, 6] == 3 and b.data[2, 6] == 2  # 1-based indices
    np.testing.assert_array_equal(b.real_valued, [0, 1])
    with pytest.raises(ds.DatasetNotFoundError, match="Day5.svm"):
        ds.load_url(days=[5], data_home=home)
    with pytest.raises(ValueError, match="days"):
        ds.load_url(days=[121], data_home=home)


# ----------------------------------------------------------------------------- fetch
def test_fetch_unknown_dataset_name():
    with pytest.raises(ValueError, match="unknown dataset 'cifar'"):
        ds.fetch("cifar")


def test_fetch_offline_names_files_and_home(home):
    def offline(url, dest):
        raise urllib.error.URLError("no network")

    with pytest.raises(ConnectionError) as err:
        ds.fetch("kddcup99", data_home=home, opener=offline)
    assert "kddcup99/kddcup.data_10_percent.gz" in str(err.value) and str(home) in str(err.value)
    assert not any(p.is_file() for p in home.rglob("*"))  # no partial download left behind


def test_fetch_rejects_wrong_bytes_and_keeps_nothing(home):
    def junk(url, dest):
        Path(dest).write_bytes(b"not the file")

    with pytest.raises(ds.ChecksumError):
        ds.fetch("mnist", data_home=home, opener=junk)
    assert not any(p.is_file() for p in home.rglob("*"))


def test_fetch_refuses_unsafe_archive(home):
    def evil_tar(url, dest):
        with tarfile.open(dest, "w:gz") as tar:
            add_file(tar, "../../escape.svm", b"+1 1:1\n")

    with pytest.raises(ds.UnsafeArchiveError):
        ds.fetch("url", data_home=home, only=["url_svmlight/Day0.svm"], opener=evil_tar)
    assert not (home.parent / "escape.svm").exists()


def test_fetch_from_archive_verifies_git_blob(home):
    def har_zip(url, dest):
        with zipfile.ZipFile(dest, "w") as zf:
            zf.writestr("UCI HAR Dataset/train/X_train.txt", "1 2 3\n")

    with pytest.raises(ds.ChecksumError, match="git blob"):
        ds.fetch("har", data_home=home, only=["uci_har/UCI_HAR_Dataset/train/X_train.txt"], opener=har_zip)
    assert not (home / "uci_har/UCI_HAR_Dataset/train/X_train.txt").exists()


def test_loader_never_downloads_unless_asked(home, monkeypatch):
    def forbidden(*a, **k):
        raise AssertionError("a download was attempted")

    monkeypatch.setattr(_home, "_download", forbidden)
    monkeypatch.setattr(_home.urllib.request, "urlopen", forbidden)
    with pytest.raises(ds.DatasetNotFoundError):
        ds.load_kddcup99(data_home=home)


# ----------------------------------------------------------------------------- cache
def test_the_data_home_is_never_written_and_the_cache_goes_to_dpstack_cache(news_home, tmp_path):
    first = ds.load_news20(data_home=news_home, verify=False)  # writable, and still not written
    assert sorted(p.name for p in news_home.rglob("*")) == ["20news-bydate.tar.gz", "20newsgroups"]
    assert list((tmp_path / "usercache" / "dpstack" / "datasets").glob("news20-*.npz"))
    again = ds.load_news20(data_home=news_home, verify=False)
    assert again.data == first.data


def test_cache_hit_gives_identical_result(news_home, tmp_path):
    a = ds.load_news20("all", data_home=news_home, verify=False)
    assert list((tmp_path / "usercache" / "dpstack" / "datasets").glob("news20-*.npz"))
    b = ds.load_news20("all", data_home=news_home, verify=False)
    assert a.data == b.data and np.array_equal(a.target, b.target)
    c = ds.load_news20("all", data_home=news_home, verify=False, cache=False)
    assert c.data == a.data


# ----------------------------------------------------------------------------- preprocessing
def test_mnist_pst_shapes_norms_and_public_split(mnist_home):
    home = mnist_home[0]
    priv = ds.mnist_pst(n_samples=40, n_train=25, n_components=5, data_home=home, verify=False)
    pub = ds.mnist_pst(
        n_samples=40, n_train=25, n_components=5, fit_on="public", n_public=15, data_home=home, verify=False
    )
    assert priv.X_train.shape == (25, 5) and priv.X_test.shape == (15, 5)
    assert np.linalg.norm(priv.X_train, axis=1).max() <= 1 + 1e-12
    assert set(priv.y_train) <= {0, 1} and np.all(np.diff(priv.feature_variance) <= 0)
    assert not set(pub.public_index) & set(pub.mnist_index)  # the public part is used nowhere else
    np.testing.assert_array_equal(priv.mnist_index, pub.mnist_index)  # same samples, other PCA
    assert not np.allclose(priv.X_train, pub.X_train)
    assert priv.steps["inside DP guarantee"].tolist() == [True, False, False, True]
    assert pub.steps["inside DP guarantee"].all()
    with pytest.raises(ValueError, match="fit_on"):
        ds.mnist_pst(fit_on="test", data_home=home, verify=False)


def test_mnist_transfer_disjoint_source_and_target(mnist_home):
    d = ds.mnist_transfer(n_source=30, n_target=20, n_components=4, data_home=mnist_home[0], verify=False)
    assert d.X_source.shape == (30, 4) and d.X_target.shape == (20, 4)
    assert not set(d.source_index) & set(d.target_index)
    tr_lab = mnist_home[2]
    assert set(tr_lab[d.source_index[d.source_index < 60000]]) <= {0, 8}


def test_mnist_transfer_target_is_a_uniform_draw_of_the_unused_images(mnist_home):
    # 40 images each of 0, 8 and 9; the source takes ~15 zeros, so the target (20 of the
    # remaining ~25 zeros and 40 nines) should be ~40/65 nines, not all nines
    fractions = [
        ds.mnist_transfer(
            n_source=30, n_target=20, n_components=2, random_state=s, data_home=mnist_home[0], verify=False
        ).y_target.mean()
        for s in range(10)
    ]
    assert abs(np.mean(fractions) - 40 / 65) < 0.08


def test_news20_pst_on_tiny_tar(news_home):
    d = ds.news20_pst(n_components=3, min_df=1, data_home=news_home, verify=False)
    assert d.X_train.shape == (24, 3) and d.X_test.shape == (24, 3)
    assert np.linalg.norm(d.X_test, axis=1).max() <= 1 + 1e-12
    # the first component separates sci from talk in this toy corpus
    assert abs(np.corrcoef(d.X_train[:, 0], d.y_train)[0, 1]) > 0.9
    pub = ds.news20_pst(n_components=3, min_df=1, fit_on="public", data_home=news_home, verify=False)
    assert "orbit" not in pub.vectorizer.vocabulary_  # fitted only on comp/rec posts


def test_fit_pca_and_scale_and_clip():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 6)) * np.arange(1, 7)
    pca = fit_pca(X, 3)
    assert pca.n_components_ == 3 and pca.explained_variance_[0] > pca.explained_variance_[2]
    Z, frac = scale_and_clip(X, 0.1)
    assert np.linalg.norm(Z, axis=1).max() <= 1 + 1e-12
    assert frac == np.mean(np.linalg.norm(0.1 * X, axis=1) > 1)
    with pytest.raises(ValueError, match="X_public"):
        ds.har_mpl(X, X, n_components=2, fit_on="public")
    assert ds.url_mpl(X, X[:5], n_components=2).X_test.shape == (5, 2)


# ----------------------------------------------------------------------------- real data
REAL = Path(os.environ.get("DPSTACK_DATA", "/nonexistent"))
need_real = pytest.mark.skipif(
    not (REAL / "MANIFEST.md").is_file(),
    reason="DPSTACK_DATA does not hold the real files (CI sets it to ../shared/data)",
)
realdata = [pytest.mark.realdata, need_real]


def manifest_sha256():
    text = (REAL / "MANIFEST.md").read_text()
    return dict(re.findall(r"^\| `([^`]+)` \| [\d,]+ \| `([0-9a-f]{64})`", text, flags=re.M))


@pytest.mark.realdata
@need_real
def test_real_files_match_manifest_and_registry():
    pins = manifest_sha256()
    assert len(pins) == 19  # 18 files of the original copy + the genuine URL Day45.svm
    registry = {f.path: f for info in ds.REGISTRY.values() for f in info.files}
    for path, sha in pins.items():
        assert _home.file_checksum(REAL / path) == sha, path
        if path in registry:
            assert sha in registry[path].sha256, path


@pytest.mark.realdata
@need_real
def test_real_url_day45_loads_with_its_pins():
    """The one genuine URL day file we hold: 130 rows, 41 malicious, 15,020 non-zeros."""
    b = ds.load_url(days=[45], data_home=REAL)  # verify=True: sha256 and git blob id
    assert b.data.shape == (130, URL_N_FEATURES) and b.data.nnz == 15020
    assert int(b.target.sum()) == 41 and set(np.unique(b.target)) == {0, 1}
    assert b.data.indices.max() == 3231931 - 1  # max 1-based index 3,231,931
    assert (b.day == 45).all()


@pytest.mark.realdata
@need_real
def test_real_mnist_shapes_and_counts():
    tr = ds.load_mnist((0, 8), "train")
    te = ds.load_mnist((0, 9), "test")
    assert tr.data.shape == (5923 + 5851, 784) and np.sum(tr.target == 8) == 5851
    assert te.data.shape == (980 + 1009, 784)
    assert tr.data.max() == 1.0 and tr.data.min() == 0.0
    d = ds.mnist_pst()
    assert d.X_train.shape == (3000, 100) and d.X_test.shape == (2000, 100)
    assert np.linalg.norm(d.X_train, axis=1).max() <= 1 + 1e-12
    t = ds.mnist_transfer()
    assert t.X_source.shape == (2000, 100) and t.X_target.shape == (1000, 100)


@pytest.mark.realdata
@need_real
def test_real_kddcup99_shapes_and_counts():
    tr = ds.load_kddcup99("train")
    assert tr.data.shape == (494021, 123) and np.sum(tr.target == 0) == 97278
    assert not any(tr.unknown_categories.values())
    te = ds.load_kddcup99("test", dtype=np.float32)
    assert te.data.shape == (311029, 123) and np.sum(te.target == 0) == 60593
    assert np.sum(te.attack == "smurf") == 164091


@pytest.mark.realdata
@need_real
def test_real_news20_sizes():
    tr, te = ds.load_news20("train"), ds.load_news20("test")
    assert (len(tr.data), tr.target.sum()) == (4325, 2373)
    assert (len(te.data), te.target.sum()) == (2880, 1579)
    everything = ds.load_news20("all", positive=ds.NEWS20_GROUPS, negative=())
    assert len(everything.data) == 18846


@pytest.mark.realdata
@need_real
def test_real_har_labels_and_clear_error_for_absent_x_files():
    y_counts = np.bincount(np.loadtxt(REAL / "uci_har/UCI_HAR_Dataset/train/y_train.txt", dtype=int))
    np.testing.assert_array_equal(y_counts[1:], [1226, 1073, 986, 1286, 1374, 1407])
    if (REAL / "uci_har/UCI_HAR_Dataset/train/X_train.txt").is_file():
        assert ds.load_har("train").data.shape == (7352, 561)
    else:
        with pytest.raises(ds.DatasetNotFoundError, match="X_train.txt"):
            ds.load_har("train")


@pytest.mark.realdata
@need_real
def test_fetch_success_path_with_a_local_source(home):
    """fetch verifies and installs files; the 'download' here copies the shared copies."""

    def local_copy(url, dest):
        Path(dest).write_bytes((REAL / "kddcup99" / Path(url).name).read_bytes())

    paths = ds.fetch("kddcup99", data_home=home, opener=local_copy)
    assert sorted(p.name for p in paths) == ["corrected.gz", "kddcup.data_10_percent.gz"]
    assert ds.load_kddcup99("test", data_home=home, dtype=np.float32).data.shape == (311029, 123)
    assert ds.fetch("kddcup99", data_home=home, opener=local_copy) == []  # nothing missing any more

    def har_zip(url, dest):
        with zipfile.ZipFile(dest, "w") as zf:
            for rel in ("features.txt", "activity_labels.txt", "train/y_train.txt"):
                zf.write(REAL / "uci_har/UCI_HAR_Dataset" / rel, f"UCI HAR Dataset/{rel}")

    wanted = ["uci_har/UCI_HAR_Dataset/features.txt", "uci_har/UCI_HAR_Dataset/train/y_train.txt"]
    got = ds.fetch("har", data_home=home, only=wanted, opener=har_zip)
    assert sorted(str(p.relative_to(home)) for p in got) == sorted(wanted)
    assert not [p for p in home.iterdir() if p.name.startswith("tmp")]  # temporary folder removed


def test_fetch_opens_an_inner_zip_and_tries_the_next_url(home):
    tried = []

    def nested(url, dest):
        tried.append(url)
        if len(tried) == 1:
            raise urllib.error.URLError("first mirror down")
        inner = io.BytesIO()
        with zipfile.ZipFile(inner, "w") as zf:
            zf.writestr("UCI HAR Dataset/activity_labels.txt", "1 WALKING\n")
        with zipfile.ZipFile(dest, "w") as zf:
            zf.writestr("UCI HAR Dataset.zip", inner.getvalue())

    # the payload is not the published file, so it reaches the checksum step and stops there
    with pytest.raises(ds.ChecksumError, match="activity_labels.txt"):
        ds.fetch("har", data_home=home, only=["uci_har/UCI_HAR_Dataset/activity_labels.txt"], opener=nested)
    assert len(tried) == 2


def test_fetch_rejects_unknown_file_names(home):
    with pytest.raises(ValueError, match="no file"):
        ds.fetch("kddcup99", data_home=home, only=["kddcup99/kddcup.data.gz"], opener=lambda u, d: None)


@pytest.mark.realdata
@need_real
def test_har_loader_on_the_real_label_files_with_stand_in_features(home):
    """The real features/labels/subject files, with X files of the right shape written here."""
    import shutil

    src = REAL / "uci_har/UCI_HAR_Dataset"
    dst = home / "uci_har/UCI_HAR_Dataset"
    for rel in (
        "features.txt",
        "activity_labels.txt",
        "train/y_train.txt",
        "train/subject_train.txt",
        "test/y_test.txt",
        "test/subject_test.txt",
    ):
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src / rel, dst / rel)
    for part, n in (("train", 7352), ("test", 2947)):
        (dst / part / f"X_{part}.txt").write_text((" ".join(["0.5"] * 561) + "\n") * n)
    with pytest.raises(ds.ChecksumError, match="git blob"):
        ds.load_har("train", data_home=home)  # stand-in X files are not the genuine ones
    b = ds.load_har("all", data_home=home, verify=False)
    assert b.data.shape == (7352 + 2947, 561)
    np.testing.assert_array_equal(np.bincount(b.target[b.subset == "test"])[1:], [496, 471, 420, 491, 532, 537])
    assert len(np.unique(b.subject[b.subset == "train"])) == 21
    assert b.feature_names[0] == "tBodyAcc-mean()-X" and b.target_names[-1] == "LAYING"


def test_no_writable_cache_anywhere_still_loads(news_home, tmp_path, monkeypatch):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("x")  # a file where the cache folder would go: mkdir fails
    monkeypatch.setenv("DPSTACK_CACHE", str(blocker))
    b = ds.load_news20("test", data_home=news_home, verify=False)
    assert len(b.data) == 24 and not (news_home / ".cache").exists()


def test_file_summary_ignores_files_the_experiments_do_not_read(home):
    """Extra files in the data home (e.g. URL days no experiment uses) leave the datasets page's table as is."""
    from dpstack.companion.chapters.datasets import file_summary

    before = file_summary(home)
    url = home / "url_svmlight"
    url.mkdir(parents=True, exist_ok=True)
    for day in (20, 45, 120):
        (url / f"Day{day}.svm").write_text("+1 1:0.5\n")
    (home / "notes.txt").write_text("a file of the user's own")
    after = file_summary(home)
    assert after.equals(before)
    assert int(after.loc[after.dataset == "url", "files expected"].iloc[0]) == 20
    # a file the experiments do read is counted
    (url / "Day0.svm").write_text("+1 1:0.5\n")
    assert int(file_summary(home).loc[lambda f: f.dataset == "url", "present"].iloc[0]) == 1


@pytest.mark.parametrize(
    "loader,files",
    [
        (
            lambda h: ds.load_mnist((0, 8), "train", data_home=h, verify=False),
            ["mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz"],
        ),
        (lambda h: ds.load_kddcup99("train", data_home=h, verify=False), ["kddcup99/kddcup.data_10_percent.gz"]),
        (
            lambda h: ds.load_news20("train", data_home=h, verify=False, cache=False),
            ["20newsgroups/20news-bydate.tar.gz"],
        ),
        (lambda h: ds.load_url(days=[0], data_home=h, verify=False, n_features=10), ["url_svmlight/Day0.svm"]),
    ],
    ids=["mnist", "kddcup99", "news20", "url"],
)
def test_a_corrupt_file_read_without_verification_is_named(tmp_path, loader, files):
    """verify=False skips the checksum; a damaged file must still stop with its path, not a bare EOFError."""
    for rel in files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"\x1f\x8b\x08\x00 truncated gzip stream")
    with pytest.raises(ds.CorruptFileError, match=re.escape(str(tmp_path / files[0]))):
        loader(tmp_path)


# ----------------------------------------------------------------------------- the datasets page without data
def test_the_datasets_page_note_names_what_is_missing_and_how_to_fetch_it(home):
    """What the datasets page calls after its first table: a note (no KeyError) when the files are missing."""
    from dpstack.companion.chapters import datasets as overview

    note = overview.stop_if_data_absent(home)
    assert note is not None and str(home) in note and "Data absent" in note
    assert "mnist/train-images-idx3-ubyte.gz" in note and "kddcup99/corrected.gz" in note
    assert "python -m dpstack.datasets fetch mnist news20 kddcup99" in note


@pytest.mark.realdata
@need_real
def test_the_datasets_page_with_its_files_shows_no_note():
    from dpstack.companion.chapters import datasets as overview

    assert overview.absent_data_note(REAL) is None and overview.stop_if_data_absent(REAL) is None


def test_the_datasets_page_runs_with_an_empty_data_home(tmp_path):
    """``datasets.ipynb -p data_home <empty dir>``: the absent-data note, not a KeyError."""
    import importlib.util
    import json
    import shutil

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("run_notebooks", root / "scripts" / "run_notebooks.py")
    run_notebooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_notebooks)
    empty = tmp_path / "empty"
    empty.mkdir()
    page = tmp_path / "datasets.ipynb"
    shutil.copy(root / "notebooks" / "datasets.ipynb", page)
    run_notebooks.run(page, {"data_home": str(empty)}, "python3", capture=True)
    outputs = [o for c in json.loads(page.read_text())["cells"] for o in c.get("outputs", [])]
    notes = [o for o in outputs if o.get("metadata", {}).get("dpstack", {}).get("data_absent")]
    assert len(notes) == 1 and str(empty) in "".join(notes[0]["data"]["text/html"])
    assert not any(o.get("output_type") == "error" for o in outputs)


# ----------------------------------------------------------------------------- damaged files with verify=False
_UNVERIFIED = {
    "mnist/train-images-idx3-ubyte.gz": lambda h: ds.load_mnist((0, 8), "train", data_home=h, verify=False),
    "mnist/train-labels-idx1-ubyte.gz": lambda h: ds.load_mnist((0, 8), "train", data_home=h, verify=False),
    "20newsgroups/20news-bydate.tar.gz": lambda h: ds.load_news20("all", data_home=h, verify=False, cache=False),
    "uci_har/UCI_HAR_Dataset/features.txt": lambda h: ds.load_har("train", data_home=h, verify=False, cache=False),
    "uci_har/UCI_HAR_Dataset/activity_labels.txt": lambda h: ds.load_har(
        "train", data_home=h, verify=False, cache=False
    ),
    "uci_har/UCI_HAR_Dataset/train/X_train.txt": lambda h: ds.load_har("train", data_home=h, verify=False, cache=False),
    "uci_har/UCI_HAR_Dataset/train/y_train.txt": lambda h: ds.load_har("train", data_home=h, verify=False, cache=False),
    "uci_har/UCI_HAR_Dataset/train/subject_train.txt": lambda h: ds.load_har(
        "train", data_home=h, verify=False, cache=False
    ),
    "kddcup99/kddcup.data_10_percent.gz": lambda h: ds.load_kddcup99("train", data_home=h, verify=False),
    "url_svmlight/Day0.svm": lambda h: ds.load_url([0], data_home=h, verify=False, n_features=20),
    "url_svmlight/FeatureTypes": lambda h: ds.load_url([0], data_home=h, verify=False, n_features=20),
}


def _unverified_home(home):
    rng = np.random.default_rng(0)
    (home / "mnist").mkdir()
    write_idx(home / "mnist/train-images-idx3-ubyte.gz", rng.integers(0, 256, (30, 28, 28)))
    write_idx(home / "mnist/train-labels-idx1-ubyte.gz", np.arange(30) % 10)
    (home / "20newsgroups").mkdir()
    make_news_tar(home / "20newsgroups/20news-bydate.tar.gz")
    har_files(home)
    (home / "kddcup99").mkdir()
    with gzip.open(home / "kddcup99/kddcup.data_10_percent.gz", "wt") as fh:
        fh.write("\n".join(KDD_ROWS) + "\n")
    (home / "url_svmlight").mkdir()
    (home / "url_svmlight/Day0.svm").write_text("+1 4:0.5 17:1\n-1 5:0.25\n")
    (home / "url_svmlight/FeatureTypes").write_text("4\n5\n")
    return home


@pytest.mark.parametrize("rel", list(_UNVERIFIED))
def test_every_damaged_file_read_without_verification_is_named(home, rel):
    """Seven kinds of damage to each raw file, read with verify=False: a CorruptFileError naming that file.

    (A truncated FeatureTypes, a list of numbers, still parses: only its checksum could tell.)
    """
    _unverified_home(home)
    path = home / rel
    good = path.read_bytes()
    damages = {
        "empty": b"",
        "truncated": good[: len(good) // 2],
        "garbage": b"\x89garbage\xff\x00" * 50,
        "text": b"hello world\nfoo bar\n",
        "gzip of garbage": gzip.compress(b"\x00\x01 garbage \xff\n" * 20, mtime=0),
        "gzip of text": gzip.compress(b"a b c\n1 2\n", mtime=0),
        "latin-1": "é 1 2\n".encode("latin-1"),
    }
    unnamed = []
    for what, data in damages.items():
        path.write_bytes(data)
        try:
            _UNVERIFIED[rel](home)
        except ds.CorruptFileError as exc:
            if str(path) not in str(exc):
                unnamed.append((what, f"CorruptFileError naming another file: {exc}"))
        except Exception as exc:  # noqa: BLE001 - collecting the misleading errors is the point
            unnamed.append((what, f"{type(exc).__name__}: {exc}"))
        else:
            if not (rel.endswith("FeatureTypes") and what == "truncated"):
                unnamed.append((what, "loaded without an error"))
        path.write_bytes(good)
    assert not unnamed, unnamed


@pytest.mark.parametrize("where", ["first", "last"])
def test_a_kdd_row_with_an_extra_field_is_refused_naming_the_file(home, where):
    (home / "kddcup99").mkdir()
    rows = list(KDD_ROWS)
    i = 0 if where == "first" else len(rows) - 1
    rows[i] = rows[i] + ",surplus"
    with gzip.open(home / "kddcup99/kddcup.data_10_percent.gz", "wt") as f:
        f.write("\n".join(rows) + "\n")
    with pytest.raises(ds.CorruptFileError, match="kddcup.data_10_percent.gz.*(more than the 42|42 comma-separated)"):
        ds.load_kddcup99("train", data_home=home, verify=False)


def test_a_data_home_that_is_a_file_is_named_as_such(tmp_path):
    not_a_folder = tmp_path / "data"
    not_a_folder.write_text("")
    with pytest.raises(ds.DatasetNotFoundError, match="data home .*data is a file, not a folder"):
        ds.load_mnist(data_home=not_a_folder)
