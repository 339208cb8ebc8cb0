"""20 Newsgroups ("bydate") from ``20news-bydate.tar.gz``, read without extracting to disk."""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch

from . import _cache
from ._archives import iter_tar_files
from ._home import REGISTRY, reading, resolve_files
from ._home import data_home as _home_path

__all__ = ["load_news20", "SCI_GROUPS", "TALK_GROUPS", "NEWS20_GROUPS"]

SCI_GROUPS = ("sci.crypt", "sci.electronics", "sci.med", "sci.space")
TALK_GROUPS = ("talk.politics.guns", "talk.politics.mideast", "talk.politics.misc", "talk.religion.misc")
NEWS20_GROUPS = (
    "alt.atheism",
    "comp.graphics",
    "comp.os.ms-windows.misc",
    "comp.sys.ibm.pc.hardware",
    "comp.sys.mac.hardware",
    "comp.windows.x",
    "misc.forsale",
    "rec.autos",
    "rec.motorcycles",
    "rec.sport.baseball",
    "rec.sport.hockey",
    *SCI_GROUPS,
    "soc.religion.christian",
    *TALK_GROUPS,
)
_TAR = "20newsgroups/20news-bydate.tar.gz"
LOADER_VERSION = 2  # bump when the parsed arrays change: cached parses of older versions are not used
_SPLIT_DIRS = {"20news-bydate-train": "train", "20news-bydate-test": "test"}


def _parse_tar(path):
    """All posts as arrays: texts (Latin-1 decoded), group, split, article id; sorted like the tree."""
    texts, groups, splits, ids = [], [], [], []
    with reading(path):  # inflated through a bounded stream: never more than the published tar's size
        members = list(iter_tar_files(path, REGISTRY["news20"].files[0].unpacked))
    for name, payload in members:
        parts = name.split("/")
        if len(parts) != 3 or parts[0] not in _SPLIT_DIRS or parts[1] not in NEWS20_GROUPS:
            continue  # e.g. stray metadata files: not posts
        texts.append(payload.decode("latin-1"))  # posts are 8-bit; Latin-1 never fails, as in sklearn
        groups.append(parts[1])
        splits.append(_SPLIT_DIRS[parts[0]])
        ids.append(parts[2])
    order = sorted(range(len(texts)), key=lambda i: (splits[i] != "train", groups[i], _numeric(ids[i])))
    return (
        [texts[i] for i in order],
        np.array([groups[i] for i in order]),
        np.array([splits[i] for i in order]),
        np.array([ids[i] for i in order]),
    )


def _numeric(article_id):
    return (0, int(article_id), "") if article_id.isdigit() else (1, 0, article_id)


def _to_arrays(texts, groups, splits, ids):
    blobs = [t.encode("utf-8") for t in texts]
    return {
        "blob": np.frombuffer(b"".join(blobs), np.uint8),
        "offsets": np.cumsum([0] + [len(b) for b in blobs]),
        "groups": groups,
        "splits": splits,
        "ids": ids,
    }


def _from_arrays(a):
    blob, off = a["blob"].tobytes(), a["offsets"]
    texts = [blob[off[i] : off[i + 1]].decode("utf-8") for i in range(len(off) - 1)]
    return texts, a["groups"].astype(str), a["splits"].astype(str), a["ids"].astype(str)


def load_news20(
    subset="train", positive=SCI_GROUPS, negative=TALK_GROUPS, data_home=None, download=False, verify=True, cache=True
):
    """Load the papers' NEWS20 task: posts of the ``sci.*`` groups (1) vs the ``talk.*`` groups (0).

    Posts are read straight out of ``20news-bydate.tar.gz``: every member is checked
    first (no absolute paths, no ``..``, no links or special files, else
    :class:`~dpstack.datasets.UnsafeArchiveError`) and nothing is written to disk.
    Texts are decoded as Latin-1 (as scikit-learn does) and kept whole, headers included.

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        The "bydate" split. Sizes for sci vs talk: 2,373 + 1,952 = 4,325 training and
        1,579 + 1,301 = 2,880 test posts (PST Table 1 reports 4,321 / 643; see the
        datasets page).
    positive, negative : tuple of str
        Newsgroups labelled 1 and 0 (default the four ``sci.*`` and four ``talk.*``
        groups). ``negative=()`` with ``positive=NEWS20_GROUPS`` loads every post.
    data_home : str or path-like, optional
        Folder holding ``20newsgroups/20news-bydate.tar.gz``.
    download : bool, default=False
        Fetch the tarball (checksum-verified) first if missing.
    verify : bool, default=True
        Check the tarball against the accepted sha256 values (the original tarball
        or the verified re-pack of the shared data folder).
    cache : bool, default=True
        Keep the parsed posts as ``.npz`` in the user cache folder (``$DPSTACK_CACHE``,
        else ``~/.cache/dpstack``; never the data home), bound to the tarball's sha256
        and the loader's version; a damaged entry is ignored and the tarball re-parsed.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` list of str (the posts); ``target`` (n,) int64, 1 = positive group;
        ``group`` (n,) newsgroup name; ``subset`` (n,); ``article_id`` (n,);
        ``target_names`` ["talk", "sci"] for the default groups; provenance ``files``,
        ``citation``, ``licence``.

    References
    ----------
    K. Lang. NewsWeeder: Learning to filter netnews. ICML 1995.

    Examples
    --------
    >>> from dpstack.datasets import load_news20
    >>> news = load_news20("train")   # doctest: +SKIP
    >>> len(news.data), news.target.sum()   # doctest: +SKIP
    (4325, 2373)
    """
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}")
    positive, negative = tuple(positive), tuple(negative)
    bad = [g for g in positive + negative if g not in NEWS20_GROUPS]
    if bad or not positive or set(positive) & set(negative):
        raise ValueError(
            f"positive/negative must be disjoint, non-empty lists of 20 Newsgroups names; "
            f"unknown: {bad}; known: {', '.join(NEWS20_GROUPS)}"
        )
    found = resolve_files("news20", data_home, download, verify)
    path, sha = found[_TAR]
    home = _home_path(data_home)
    key = {"source_sha256": sha, "loader_version": LOADER_VERSION}
    arrays = _cache.load("news20", key) if cache else None
    texts = None
    if arrays is not None:
        try:
            texts, groups, splits, ids = _from_arrays(arrays)
        except (KeyError, ValueError, IndexError):  # inconsistent entry: parse the source instead
            texts = None
    if texts is None:
        arrays = _to_arrays(*_parse_tar(path))
        if cache:
            _cache.save("news20", key, arrays)
        texts, groups, splits, ids = _from_arrays(arrays)
    keep = np.isin(groups, positive + negative)
    if subset != "all":
        keep &= splits == subset
    idx = np.flatnonzero(keep)
    info = REGISTRY["news20"]
    default = positive == SCI_GROUPS and negative == TALK_GROUPS
    return Bunch(
        data=[texts[i] for i in idx],
        target=np.isin(groups[idx], positive).astype(np.int64),
        group=groups[idx],
        subset=splits[idx],
        article_id=ids[idx],
        target_names=["talk", "sci"] if default else ["negative", "positive"],
        positive=positive,
        negative=negative,
        files={_TAR: sha},
        data_home=str(home),
        citation=info.citation,
        licence=info.licence,
        description=f"20 Newsgroups bydate {subset}: {positive} (1) vs {negative} (0)",
    )
