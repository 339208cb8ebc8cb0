"""Datasets of the three papers: raw-format loaders, the papers' preprocessing, a RUIJIN-like cohort.

Raw files live in the data home (:func:`data_home`: ``$DPSTACK_DATA`` or a per-user
folder); :func:`dataset_status` lists what is present. Nothing is downloaded unless
:func:`fetch` is called or a loader gets ``download=True``; every file is checked against
a pinned checksum. Each loader returns a :class:`sklearn.utils.Bunch` with ``data``,
``target`` and provenance (``files``: path -> sha256, ``citation``, ``licence``).
"""

from ._archives import UnsafeArchiveError, safe_extract
from ._bounded import DiskFullError, SizeLimitError
from ._home import (
    REGISTRY,
    ChecksumError,
    CorruptFileError,
    DatasetNotFoundError,
    PlainHTTPWarning,
    data_home,
    dataset_status,
    fetch,
    plain_http_mirrors,
)
from .har import load_har
from .kddcup99 import load_kddcup99
from .mnist import load_mnist, read_idx
from .news20 import NEWS20_GROUPS, SCI_GROUPS, TALK_GROUPS, load_news20
from .preprocessing import har_mpl, kddcup99_scale, mnist_pst, mnist_transfer, news20_pst, url_mpl
from .ruijin import RUIJIN_SIZES, make_ruijin_like, ruijin_borrowing_check, ruijin_centre_table, ruijin_feature_table
from .url import load_url

__all__ = [
    "ChecksumError",
    "CorruptFileError",
    "DatasetNotFoundError",
    "DiskFullError",
    "NEWS20_GROUPS",
    "PlainHTTPWarning",
    "REGISTRY",
    "RUIJIN_SIZES",
    "SCI_GROUPS",
    "SizeLimitError",
    "TALK_GROUPS",
    "UnsafeArchiveError",
    "data_home",
    "dataset_status",
    "fetch",
    "har_mpl",
    "kddcup99_scale",
    "load_har",
    "load_kddcup99",
    "load_mnist",
    "load_news20",
    "load_url",
    "make_ruijin_like",
    "mnist_pst",
    "mnist_transfer",
    "news20_pst",
    "plain_http_mirrors",
    "read_idx",
    "ruijin_borrowing_check",
    "ruijin_centre_table",
    "ruijin_feature_table",
    "safe_extract",
    "url_mpl",
]
