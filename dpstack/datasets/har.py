"""UCI Human Activity Recognition (smartphones): 561 features, 6 activities, train/test as distributed."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from . import _cache
from ._home import REGISTRY, CorruptFileError, reading, resolve_files
from ._home import data_home as _home_path

__all__ = ["load_har"]

_DIR = "uci_har/UCI_HAR_Dataset/"
LOADER_VERSION = 2  # bump when the parsed matrix changes: cached parses of older versions are not used


def _read_matrix(path, n_cols=None, why=""):
    with reading(path):
        frame = pd.read_csv(path, sep=r"\s+", header=None, engine="c", dtype=np.float64)
    if n_cols is not None and frame.shape[1] != n_cols:
        raise CorruptFileError(f"{path}: {frame.shape[1]} columns, expected {n_cols}{why}")
    return frame.to_numpy()


def _read_names(path):
    """The names of a numbered list (``features.txt``, ``activity_labels.txt``): lines ``i name``, i = 1, 2, ..."""
    with reading(path):
        lines = [line for line in path.read_text("latin-1").splitlines() if line.strip()]
        names = []
        for i, line in enumerate(lines, 1):
            number, _, name = line.strip().partition(" ")
            if number != str(i) or not name.strip():
                raise ValueError(f"line {i} is {line[:60]!r}, expected '{i} <name>'")
            names.append(name.strip())
        if not names:
            raise ValueError("no entries")
    return names


def load_har(subset="train", data_home=None, download=False, verify=True, cache=True):
    """Load UCI HAR: 561 precomputed features per window, 6 activities, 30 subjects.

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        The distributed split: 7,352 training windows (21 subjects) and 2,947 test
        windows (9 subjects); "all" stacks them, training first.
    data_home : str or path-like, optional
        Folder holding ``uci_har/UCI_HAR_Dataset/`` (the distribution's folder
        ``UCI HAR Dataset`` with the space replaced by ``_``).
    download : bool, default=False
        Fetch the UCI zip and extract the needed files (checksum-verified) first.
    verify : bool, default=True
        Check the files: sha256 for the small files, the git blob id of the genuine
        ``X_train.txt``/``X_test.txt`` (the only checksum known for them).
    cache : bool, default=True
        Keep the parsed feature matrix as ``.npz`` in the user cache folder
        (``$DPSTACK_CACHE``, else ``~/.cache/dpstack``; never the data home), bound to
        the file's sha256 and the loader's version; a damaged entry is ignored.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` (n, 561) float64 (features as distributed, already scaled to [-1, 1]);
        ``target`` (n,) int64 activity 1..6; ``target_names`` (WALKING ... LAYING);
        ``subject`` (n,); ``subset`` (n,); ``feature_names`` (561); provenance ``files``,
        ``citation``, ``licence``.

    References
    ----------
    D. Anguita, A. Ghio, L. Oneto, X. Parra, J. L. Reyes-Ortiz. A public domain dataset
    for human activity recognition using smartphones. ESANN 2013.

    Examples
    --------
    >>> from dpstack.datasets import load_har
    >>> har = load_har("train")   # doctest: +SKIP
    >>> har.data.shape            # doctest: +SKIP
    (7352, 561)
    """
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}")
    parts = ["train", "test"] if subset == "all" else [subset]
    needed = [_DIR + "features.txt", _DIR + "activity_labels.txt"] + [
        f"{_DIR}{p}/{k}_{p}.txt" for p in parts for k in ("X", "y", "subject")
    ]
    found = resolve_files("har", data_home, download, verify, only=needed)
    home = _home_path(data_home)
    features_path, labels_path = found[_DIR + "features.txt"][0], found[_DIR + "activity_labels.txt"][0]
    names, labels = _read_names(features_path), _read_names(labels_path)
    Xs, ys, subjects, which = [], [], [], []
    for p in parts:
        x_path, x_sha = found[f"{_DIR}{p}/X_{p}.txt"]
        key = {"source_sha256": x_sha, "loader_version": LOADER_VERSION, "n_features": len(names)}
        cached = _cache.load(f"har-{p}", key) if cache else None
        X = cached.get("X") if cached is not None else None
        if X is None or X.dtype != np.float64 or X.ndim != 2 or X.shape[1] != len(names):
            X = _read_matrix(x_path, len(names), f" (the {len(names)} features listed in {features_path})")
            if cache:
                _cache.save(f"har-{p}", key, {"X": X})
        y_path, s_path = found[f"{_DIR}{p}/y_{p}.txt"][0], found[f"{_DIR}{p}/subject_{p}.txt"][0]
        y = _read_matrix(y_path, 1).ravel().astype(np.int64)
        s = _read_matrix(s_path, 1).ravel().astype(np.int64)
        if not len(X) == len(y) == len(s):
            raise CorruptFileError(
                f"HAR {p}: {x_path} has {len(X)} rows, {y_path} {len(y)}, {s_path} {len(s)}; they must match"
            )
        if not set(np.unique(y)) <= set(range(1, len(labels) + 1)):
            raise CorruptFileError(
                f"HAR {p}: activity labels in {y_path} outside 1..{len(labels)} (the activities listed in {labels_path})"
            )
        Xs.append(X)
        ys.append(y)
        subjects.append(s)
        which.append(np.full(len(y), p))
    info = REGISTRY["har"]
    return Bunch(
        data=np.vstack(Xs),
        target=np.concatenate(ys),
        target_names=labels,
        subject=np.concatenate(subjects),
        subset=np.concatenate(which),
        feature_names=names,
        files={k: found[k][1] for k in needed},
        data_home=str(home),
        citation=info.citation,
        licence=info.licence,
        description=f"UCI HAR {subset}: 561 features, activities 1..6",
    )
