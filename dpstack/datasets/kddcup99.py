"""KDD Cup 1999: the 10% training file and the labelled ``corrected`` test file."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ._bounded import open_decompressed
from ._home import REGISTRY, CorruptFileError, reading, resolve_files
from ._home import data_home as _home_path

__all__ = ["load_kddcup99", "KDD_COLUMNS", "KDD_CATEGORIES", "kddcup99_feature_names"]

# The 41 attributes in the order of kddcup.names; the seven it calls "symbolic" are one-hot encoded.
KDD_COLUMNS = (
    "duration protocol_type service flag src_bytes dst_bytes land wrong_fragment urgent hot "
    "num_failed_logins logged_in num_compromised root_shell su_attempted num_root "
    "num_file_creations num_shells num_access_files num_outbound_cmds is_host_login "
    "is_guest_login count srv_count serror_rate srv_serror_rate rerror_rate srv_rerror_rate "
    "same_srv_rate diff_srv_rate srv_diff_host_rate dst_host_count dst_host_srv_count "
    "dst_host_same_srv_rate dst_host_diff_srv_rate dst_host_same_src_port_rate "
    "dst_host_srv_diff_host_rate dst_host_serror_rate dst_host_srv_serror_rate "
    "dst_host_rerror_rate dst_host_srv_rerror_rate"
).split()

# Fixed vocabularies: every value that occurs in the 10% training file or the corrected test
# file (67 services: 66 in training, plus icmp in the test file). Fixing them in code keeps the
# encoding identical whichever subset is loaded and independent of the (private) rows.
KDD_CATEGORIES = {
    "protocol_type": ("icmp", "tcp", "udp"),
    "service": tuple(
        "IRC X11 Z39_50 auth bgp courier csnet_ns ctf daytime discard domain domain_u echo eco_i "
        "ecr_i efs exec finger ftp ftp_data gopher hostnames http http_443 icmp imap4 iso_tsap "
        "klogin kshell ldap link login mtp name netbios_dgm netbios_ns netbios_ssn netstat nnsp "
        "nntp ntp_u other pm_dump pop_2 pop_3 printer private red_i remote_job rje shell smtp "
        "sql_net ssh sunrpc supdup systat telnet tftp_u tim_i time urh_i urp_i uucp uucp_path "
        "vmnet whois".split()
    ),
    "flag": ("OTH", "REJ", "RSTO", "RSTOS0", "RSTR", "S0", "S1", "S2", "S3", "SF", "SH"),
    "land": ("0", "1"),
    "logged_in": ("0", "1"),
    "is_host_login": ("0", "1"),
    "is_guest_login": ("0", "1"),
}
_FILES = {"train": "kddcup99/kddcup.data_10_percent.gz", "test": "kddcup99/corrected.gz"}


def kddcup99_feature_names():
    """The 123 output column names: numeric names as is, one-hot columns as ``attr=value``."""
    names = []
    for col in KDD_COLUMNS:
        if col in KDD_CATEGORIES:
            names.extend(f"{col}={v}" for v in KDD_CATEGORIES[col])
        else:
            names.append(col)
    return names


def _encode_into(frame, X):
    """Fill a zeroed (n, 123) array: numeric columns in one assignment, indicators by flat index."""
    names = kddcup99_feature_names()
    n, d = X.shape
    dtype = X.dtype
    numeric = [c for c in KDD_COLUMNS if c not in KDD_CATEGORIES]
    X[:, [names.index(c) for c in numeric]] = frame[numeric].to_numpy(dtype=dtype)
    flat, rows, unknown = X.reshape(-1), np.arange(n, dtype=np.int64) * d, {}
    for col, cats in KDD_CATEGORIES.items():
        # read_csv parsed the column as a categorical: map its few categories to our vocabulary
        seen = frame[col].cat.categories.astype(str)
        remap = np.array([cats.index(v) if v in cats else -1 for v in seen] + [-1], dtype=np.int64)
        codes = remap[frame[col].cat.codes.to_numpy()]  # code -1 (missing) picks the final -1
        ok = codes >= 0
        # a value outside the fixed vocabulary gets an all-zero block (counted, not guessed)
        unknown[col] = int((~ok).sum())
        flat[rows[ok] + names.index(f"{col}={cats[0]}") + codes[ok]] = 1
    return unknown


def load_kddcup99(subset="train", data_home=None, download=False, verify=True, dtype=np.float64):
    """Load KDD Cup 99 as a binary task (attack vs normal) with 123 features.

    Encoding rule (how the 123 of the multiparty paper, MPL §6.2, come out):
    the 41 attributes of ``kddcup.names`` are 34 "continuous" ones, kept as numbers
    (unscaled), and 7 "symbolic" ones, each one-hot encoded over a fixed vocabulary, the
    values occurring in the 10% training file or the corrected test file:
    protocol_type 3 + service 67 + flag 11 + land 2 + logged_in 2 + is_host_login 2 +
    is_guest_login 2 = 89 indicator columns; 34 + 89 = 123. (Other readings give
    118: only the three text attributes, training-file vocabulary; 119: the same over both
    files; 122: the 70 services of the full 4.9M-row file.) Columns keep the order of
    ``kddcup.names``, each symbolic attribute replaced in place by its block. A value
    outside the vocabulary (e.g. a service of the full file) gets an all-zero block and is
    counted in ``unknown_categories``.

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        "train": ``kddcup.data_10_percent.gz`` (494,021 rows); "test": the labelled
        ``corrected.gz`` (311,029 rows); "all": both, training rows first.
    data_home : str or path-like, optional
        Folder holding ``kddcup99/`` (default :func:`dpstack.datasets.data_home`).
    download : bool, default=False
        Fetch missing files (checksum-verified) first.
    verify : bool, default=True
        Check the files' sha256 against the pinned values.
    dtype : numpy dtype, default=np.float64
        dtype of ``data`` (float32 halves the 0.5 GB of the training matrix).

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` (n, 123); ``target`` (n,) int64, 1 = attack, 0 = normal; ``attack`` (n,)
        the raw label without its trailing dot ("normal", "smurf", ...); ``subset``;
        ``feature_names`` (123); ``unknown_categories``; provenance ``files``,
        ``citation``, ``licence``.

    References
    ----------
    S. Stolfo, W. Fan, W. Lee, A. Prodromidis, P. Chan. Cost-based modeling for fraud and
    intrusion detection: results from the JAM project. DISCEX 2000.

    Examples
    --------
    >>> from dpstack.datasets import load_kddcup99
    >>> kdd = load_kddcup99("test")   # doctest: +SKIP
    >>> kdd.data.shape                # doctest: +SKIP
    (311029, 123)
    """
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}")
    parts = ["train", "test"] if subset == "all" else [subset]
    found = resolve_files("kddcup99", data_home, download, verify, only=[_FILES[p] for p in parts])
    frames = []
    raws = {f.path: f for f in REGISTRY["kddcup99"].files}
    for part in parts:
        path = found[_FILES[part]][0]
        # decompressed through a bounded stream: never more than the published file's size (+10 %)
        with reading(path), open_decompressed(path, raws[_FILES[part]].unpacked) as stream:
            try:
                # one column more than the format has, to catch a row with an extra field
                # (read_csv would otherwise take a first row's extra field as the index)
                frame = pd.read_csv(
                    stream,
                    header=None,
                    names=KDD_COLUMNS + ["label", "_extra"],
                    index_col=False,
                    dtype={c: "category" for c in KDD_CATEGORIES} | {"label": "category", "_extra": object},
                )
            except pd.errors.ParserError as exc:
                raise CorruptFileError(
                    f"{path}: not the KDD Cup 99 format (42 comma-separated fields): {exc}"
                ) from None
        extra = frame.pop("_extra").notna()
        if extra.any():
            raise CorruptFileError(
                f"{path}: row {int(np.argmax(extra.to_numpy())) + 1} has more than the 42 comma-separated fields "
                "of the KDD Cup 99 format; the file is damaged or not the published one"
            )
        if frame.empty:
            raise CorruptFileError(f"{path}: no rows; the file is damaged or empty")
        if frame.isna().any().any():
            raise CorruptFileError(f"{path}: rows with missing fields (expected 42 comma-separated fields)")
        frames.append(frame)
    X = np.zeros((sum(len(f) for f in frames), len(kddcup99_feature_names())), dtype=dtype)
    unknown, attack, start = {c: 0 for c in KDD_CATEGORIES}, [], 0
    for frame in frames:
        for col, count in _encode_into(frame, X[start : start + len(frame)]).items():
            unknown[col] += count
        labels = frame["label"].cat.rename_categories(lambda v: str(v).rstrip("."))
        attack.append(np.asarray(labels.astype(str)))
        start += len(frame)
    attack = np.concatenate(attack)
    names = kddcup99_feature_names()
    info = REGISTRY["kddcup99"]
    return Bunch(
        data=X,
        target=(attack != "normal").astype(np.int64),
        attack=attack,
        subset=np.repeat(parts, [len(f) for f in frames]),
        feature_names=names,
        target_names=["normal", "attack"],
        unknown_categories=unknown,
        files={_FILES[p]: found[_FILES[p]][1] for p in parts},
        data_home=str(_home_path(data_home)),
        citation=info.citation,
        licence=info.licence,
        description=f"KDD Cup 99 {subset}: attack (1) vs normal (0), 34 numeric + 89 one-hot columns",
    )
