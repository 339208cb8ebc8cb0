"""MNIST from the four original IDX files."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import Bunch

from ._bounded import open_decompressed, unpacked_limit
from ._home import REGISTRY, CorruptFileError, reading, resolve_files
from ._home import data_home as _home_path

__all__ = ["load_mnist", "read_idx"]

_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_FILES = {
    "train": ("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz"),
    "test": ("mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz"),
}


def read_idx(path, max_bytes=None):
    """Read an IDX file (gzip-compressed or not) into a numpy array, header first, bounded.

    The format (LeCun et al.): two zero bytes, a type code, the number of dimensions,
    one big-endian int32 per dimension, then the data in C order. The header is read and
    checked first; then exactly the bytes it announces are read (plus one, to detect extra
    data), never more than ``max_bytes``, so a damaged or hostile file that inflates to
    gigabytes stops after reading its header.

    Parameters
    ----------
    path : path-like
        An IDX file, optionally gzip-compressed (recognised by its magic bytes).
    max_bytes : int, optional
        Largest accepted decompressed size, header included (default: 200 times the file's
        size, at least 1 MiB).

    Raises
    ------
    dpstack.datasets.CorruptFileError
        (a ``ValueError``) naming the file, on a bad magic number, a header announcing more
        than ``max_bytes``, or a size that does not match the header.
    """
    limit = unpacked_limit(path, max_bytes)
    with reading(path), open_decompressed(path, limit, what=str(path)) as f:
        head = f.read(4)
        if len(head) < 4 or head[0] != 0 or head[1] != 0 or head[2] not in _IDX_DTYPES:
            raise CorruptFileError(f"{path} is not an IDX file (bad magic number {head.hex()})")
        ndim = head[3]
        dims = f.read(4 * ndim)
        if len(dims) != 4 * ndim:
            raise CorruptFileError(f"{path}: truncated IDX header")
        shape = tuple(int(s) for s in np.frombuffer(dims, ">i4"))
        dtype = np.dtype(_IDX_DTYPES[head[2]])
        offset = 4 + 4 * ndim
        expected = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if min(shape, default=0) < 0 or offset + expected > limit:
            raise CorruptFileError(
                f"{path}: header announces shape {shape} ({expected:,} bytes), more than the {limit:,} bytes "
                "accepted; refused before reading the data"
            )
        raw = f.read(expected + 1)
    if len(raw) != expected:
        raise CorruptFileError(
            f"{path}: header says shape {shape} ({expected} bytes), file has "
            f"{'more' if len(raw) > expected else len(raw)}"
        )
    return np.frombuffer(raw, dtype).reshape(shape).astype(dtype.newbyteorder("="))


def _check_digits(digits):
    if digits is None:
        return None
    digits = tuple(digits)
    if len(digits) < 1 or len(set(digits)) != len(digits):
        raise ValueError(f"digits must be distinct digits 0-9, got {digits!r}")
    for d in digits:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral) or not 0 <= d <= 9:
            raise ValueError(f"digits must be integers 0-9, got {d!r} in {digits!r}")
    return digits


def load_mnist(digits=(0, 8), subset="train", data_home=None, download=False, verify=True):
    """Load MNIST images of some digits from the original IDX files.

    Parameters
    ----------
    digits : tuple of int or None, default=(0, 8)
        Which digits to keep (the papers use (0, 8) and (0, 9)); None keeps all ten.
    subset : {"train", "test", "all"}, default="train"
        The official split: 60,000 training or 10,000 test images, or both
        (training images first).
    data_home : str or path-like, optional
        Folder holding ``mnist/*.gz`` (default :func:`dpstack.datasets.data_home`).
    download : bool, default=False
        Fetch missing files from the canonical mirrors (checksum-verified) first.
    verify : bool, default=True
        Check each file's sha256 against the pinned value.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` (n, 784) float64 pixel values in [0, 1] (the raw bytes / 255);
        ``target`` (n,) int64, the digit of each image (any two digits give a binary
        task; the estimators accept any two labels); ``index`` (n,) position in the
        official file (test positions counted after the 60,000 training images when
        ``subset="all"``); ``subset`` (n,) "train"/"test"; ``images_shape`` (28, 28);
        ``feature_names``; provenance ``files`` (path -> sha256), ``citation``,
        ``licence``, ``description``.

    Raises
    ------
    ValueError
        Unknown subset or digits outside 0-9.
    dpstack.datasets.DatasetNotFoundError
        Files missing (the message names them and the data home).
    dpstack.datasets.ChecksumError
        A file differs from the published one.

    References
    ----------
    Y. LeCun, L. Bottou, Y. Bengio, P. Haffner. Gradient-based learning applied to
    document recognition. Proc. IEEE 86(11), 1998.

    Examples
    --------
    >>> from dpstack.datasets import load_mnist
    >>> mnist = load_mnist(digits=(0, 8), subset="test")   # doctest: +SKIP
    >>> mnist.data.shape                                   # doctest: +SKIP
    (1954, 784)
    """
    digits = _check_digits(digits)
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}")
    parts = ["train", "test"] if subset == "all" else [subset]
    needed = [p for part in parts for p in _FILES[part]]
    found = resolve_files("mnist", data_home, download, verify, only=needed)
    data, target, index, which = [], [], [], []
    raws = {f.path: f for f in REGISTRY["mnist"].files}
    for part in parts:
        img_path, lab_path = (found[p][0] for p in _FILES[part])
        img_raw, lab_raw = (raws[p] for p in _FILES[part])
        images, labels = read_idx(img_path, img_raw.unpacked), read_idx(lab_path, lab_raw.unpacked)
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise CorruptFileError(
                f"MNIST {part}: images {images.shape} in {img_path} and labels {labels.shape} in {lab_path} "
                "do not match"
            )
        keep = np.flatnonzero(np.isin(labels, digits)) if digits is not None else np.arange(len(labels))
        data.append(images[keep].reshape(len(keep), -1))
        target.append(labels[keep].astype(np.int64))
        index.append(keep + (60000 if part == "test" and subset == "all" else 0))
        which.append(np.full(len(keep), part))
    X = np.concatenate(data).astype(np.float64) / 255.0
    info = REGISTRY["mnist"]
    return Bunch(
        data=X,
        target=np.concatenate(target),
        index=np.concatenate(index),
        subset=np.concatenate(which),
        images_shape=(28, 28),
        feature_names=[f"pixel_{r}_{c}" for r in range(28) for c in range(28)],
        digits=digits,
        files={p: found[p][1] for p in needed},
        data_home=str(_home_path(data_home)),
        citation=info.citation,
        licence=info.licence,
        description=f"MNIST {subset} images of digits {digits}, pixels scaled to [0, 1]",
    )
