"""UCI Human Activity Recognition (smartphones): 561 features, 6 activities, train/test as distributed."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from . import _cache
from ._home import REGISTRY, reading, resolve_files
from ._home import data_home as _home_path

__all__ = ["load_har"]

_DIR = "uci_har/UCI_HAR_Dataset/"
LOADER_VERSION = 2  # bump when the parsed matrix changes: cached parses of older versions are not used


def _read_matrix(path, n_cols=None):
    with reading(path):
        frame = pd.read_csv(path, sep=r"\s+", header=None, engine="c", dtype=np.float64)
    if n_cols is not None and frame.shape[1] != n_cols:
        raise ValueError(f"{path}: {frame.shape[1]} columns, expected {n_cols}")
    return frame.to_numpy()


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
    names = [
        line.split(" ", 1)[1].strip()
        for line in found[_DIR + "features.txt"][0].read_text("latin-1").splitlines()
        if line.strip()
    ]
    labels = [
        line.split(" ", 1)[1].strip()
        for line in found[_DIR + "activity_labels.txt"][0].read_text("latin-1").splitlines()
        if line.strip()
    ]
    Xs, ys, subjects, which = [], [], [], []
    for p in parts:
        x_path, x_sha = found[f"{_DIR}{p}/X_{p}.txt"]
        key = {"source_sha256": x_sha, "loader_version": LOADER_VERSION, "n_features": len(names)}
        cached = _cache.load(f"har-{p}", key) if cache else None
        X = cached.get("X") if cached is not None else None
        if X is None or X.dtype != np.float64 or X.ndim != 2 or X.shape[1] != len(names):
            X = _read_matrix(x_path, len(names))
            if cache:
                _cache.save(f"har-{p}", key, {"X": X})
        y = _read_matrix(found[f"{_DIR}{p}/y_{p}.txt"][0], 1).ravel().astype(np.int64)
        s = _read_matrix(found[f"{_DIR}{p}/subject_{p}.txt"][0], 1).ravel().astype(np.int64)
        if not len(X) == len(y) == len(s):
            raise ValueError(f"HAR {p}: X has {len(X)} rows, y {len(y)}, subject {len(s)}")
        if not set(np.unique(y)) <= set(range(1, len(labels) + 1)):
            raise ValueError(f"HAR {p}: activity labels outside 1..{len(labels)}")
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
