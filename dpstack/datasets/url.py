"""Malicious URL (URL Reputation) svmlight day files, loaded as a sparse matrix."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.datasets import load_svmlight_files
from sklearn.utils import Bunch

from ._home import REGISTRY, CorruptFileError, reading, resolve_files
from ._home import data_home as _home_path

__all__ = ["load_url", "URL_N_FEATURES"]

URL_N_FEATURES = 3231961  # the dataset's feature count (all 121 days; indices are 1-based)


def load_url(days=range(10), data_home=None, download=False, verify=True, n_features=URL_N_FEATURES):
    """Load some days of the Malicious URL dataset (svmlight ``DayN.svm`` files) as CSR.

    MPL §6.3 trains on days 0-9 and tests on days 10-19 (about 200K URLs each).

    Parameters
    ----------
    days : iterable of int, default=range(10)
        Day numbers 0..120. Days 0-19 and Day 45 are checked against pinned checksums
        (``verify=True``); the other days have no published checksum to pin.
    data_home : str or path-like, optional
        Folder holding ``url_svmlight/DayN.svm``.
    download : bool, default=False
        Fetch ``url_svmlight.tar.gz`` and extract the needed days (checksum-verified)
        first; the tarball is extracted with member checks (no traversal, no links).
    verify : bool, default=True
    n_features : int, default=3,231,961
        Number of columns, fixed so that matrices of different days line up.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` scipy.sparse CSR (n, n_features) float64; ``target`` (n,) int64,
        1 = malicious (+1 in the file), 0 = benign (-1); ``day`` (n,); ``real_valued``
        (0-based indices of the real-valued features, from ``FeatureTypes`` if present,
        else None); provenance ``files``, ``citation``, ``licence``.

    References
    ----------
    J. Ma, L. K. Saul, S. Savage, G. M. Voelker. Identifying suspicious URLs: an
    application of large-scale online learning. ICML 2009.

    Examples
    --------
    >>> from dpstack.datasets import load_url
    >>> url = load_url(days=[0])   # doctest: +SKIP
    """
    days = [days] if isinstance(days, numbers.Integral) else list(days)
    bad = [d for d in days if isinstance(d, bool) or not isinstance(d, numbers.Integral) or not 0 <= d <= 120]
    if not days or bad or len(set(days)) != len(days):
        raise ValueError(f"days must be distinct integers 0..120, got {days!r}")
    needed = [f"url_svmlight/Day{d}.svm" for d in days]
    found = resolve_files("url", data_home, download, verify, only=needed)
    paths = [str(found[p][0]) for p in needed]
    with reading(*paths):
        loaded = load_svmlight_files(paths, n_features=n_features, zero_based=False, dtype=np.float64)
    Xs, ys = loaded[0::2], loaded[1::2]
    for p, y in zip(paths, ys):
        if len(y) == 0:
            raise CorruptFileError(f"{p}: no rows (a day file holds hundreds of URLs); the file is damaged or empty")
        if not set(np.unique(y)) <= {-1.0, 1.0}:
            raise CorruptFileError(f"{p}: labels must be +1/-1, got {np.unique(y)[:5]}")
    import scipy.sparse as sp

    home = _home_path(data_home)
    types = home / "url_svmlight" / "FeatureTypes"
    real = None
    if types.is_file():
        with reading(types):
            real = np.array([int(t) for t in types.read_text("ascii").split()], dtype=np.int64) - 1
            if not len(real) or real.min() < 0 or real.max() >= n_features:
                raise ValueError(f"expected feature indices in 1..{n_features}, found {len(real)} values")
    info = REGISTRY["url"]
    return Bunch(
        data=sp.vstack(Xs, format="csr"),
        target=(np.concatenate(ys) > 0).astype(np.int64),
        day=np.concatenate([np.full(len(y), d) for d, y in zip(days, ys)]),
        real_valued=real,
        target_names=["benign", "malicious"],
        files={p: found[p][1] for p in needed},
        data_home=str(home),
        citation=info.citation,
        licence=info.licence,
        description=f"Malicious URL days {days}: malicious (1) vs benign (0), sparse",
    )
