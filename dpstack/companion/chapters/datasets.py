"""Tables for the datasets page: what is present, loaded shapes, sizes next to the papers'."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpstack.datasets._home import DatasetNotFoundError, dataset_status
from dpstack.datasets._home import data_home as _home_path
from dpstack.datasets.har import load_har
from dpstack.datasets.kddcup99 import KDD_CATEGORIES, KDD_COLUMNS, load_kddcup99
from dpstack.datasets.mnist import load_mnist
from dpstack.datasets.news20 import load_news20
from dpstack.datasets.url import load_url

__all__ = [
    "PAGE_DATASETS",
    "absent_data_note",
    "file_summary",
    "kdd_encoding_counts",
    "loaded_shapes",
    "paper_sizes",
    "stop_if_data_absent",
]

#: The datasets the datasets page loads beyond its first two tables (which show absence themselves).
PAGE_DATASETS = {"mnist": "MNIST", "news20": "20 Newsgroups", "kddcup99": "KDD Cup 99"}


def absent_data_note(data_home=None):
    """HTML of the note the datasets page shows when files it loads are missing; None when all are there.

    Names the data home, the missing files of :data:`PAGE_DATASETS`, the command that fetches
    them, and what the page shows once they are there (as the other pages' notes do).
    """
    import html

    status = dataset_status(data_home)
    status = status[status.required & status.dataset.isin(list(PAGE_DATASETS))]
    missing = status[~status.present]
    if missing.empty:
        return None
    names = [n for n in PAGE_DATASETS if n in set(missing.dataset)]
    parts = []
    for name in names:
        files = missing.loc[missing.dataset == name, "file"].tolist()
        parts.append(f"{PAGE_DATASETS[name]} ({len(files)} file{'s' if len(files) > 1 else ''}: {', '.join(files)})")
    home = html.escape(str(_home_path(data_home)))
    command = html.escape(f"python -m dpstack.datasets fetch {' '.join(names)}")
    return (
        '<div class="admonition warning dpstack-data-absent"><p class="admonition-title">Data absent: '
        "the rest of this page needs it</p>"
        f"<p>Missing from the data home <code>{home}</code>: {html.escape('; '.join(parts))}.</p>"
        f"<p><code>{command}</code> downloads them (checksum-verified), or copy them there by hand. Once they are "
        "there, this page shows the loaded shapes, the preprocessing steps of each task, the sizes beside the "
        "papers' and the importance of the PCA features.</p></div>"
    )


def stop_if_data_absent(data_home=None):
    """On the datasets page: show :func:`absent_data_note` and run no further cell when files are missing.

    Returns the note (None when every file the page loads is present). Outside IPython it only
    returns the note.
    """
    note = absent_data_note(data_home)
    if note is None:
        return None
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display
    except ImportError:
        return note
    shell = get_ipython()
    if shell is not None:
        display(HTML(note), metadata={"dpstack": {"data_absent": True}})
        shell.input_transformers_post.append(lambda lines: [])  # the cells below need the data: run none
    return note


def file_summary(data_home=None):
    """Per dataset: raw files the experiments read, how many are present, and the missing ones.

    Only files marked ``required`` in the registry are counted, so further files in the data home
    (e.g. URL days the experiments do not use) do not change the table.
    """
    st = dataset_status(data_home)
    st = st[st.required]
    rows = []
    for name, g in st.groupby("dataset", sort=False):
        missing = list(g.loc[~g.present, "file"])
        rows.append(
            {
                "dataset": name,
                "files expected": len(g),
                "present": int(g.present.sum()),
                "missing": ", ".join(missing[:3]) + (f" (+{len(missing) - 3} more)" if len(missing) > 3 else ""),
            }
        )
    return pd.DataFrame(rows)


def _row(dataset, subset, bunch=None, reason=""):
    if bunch is None:
        return {
            "dataset": dataset,
            "subset": subset,
            "samples": np.nan,
            "features": np.nan,
            "classes": np.nan,
            "positive fraction": np.nan,
            "note": reason,
        }
    y = np.asarray(bunch.target)
    return {
        "dataset": dataset,
        "subset": subset,
        "samples": bunch.data.shape[0] if hasattr(bunch.data, "shape") else len(bunch.data),
        "features": bunch.data.shape[1] if hasattr(bunch.data, "shape") else np.nan,
        "classes": len(np.unique(y)),
        "positive fraction": round(float(np.mean(y == y.max())), 4) if len(np.unique(y)) == 2 else np.nan,
        "note": "" if hasattr(bunch.data, "shape") else "raw texts (features come from TF-IDF)",
    }


def loaded_shapes(data_home=None, keep=()):
    """Load every dataset as the experiments do and tabulate shapes and class balance.

    Absent datasets get a row saying which files are missing instead of failing.
    ``keep``: (dataset, subset) pairs whose Bunches are also returned, as
    ``(table, {(dataset, subset): bunch})``, so a caller need not load them again.
    """
    jobs = [
        ("MNIST 0/8", "train", lambda: load_mnist((0, 8), "train", data_home=data_home)),
        ("MNIST 0/8", "test", lambda: load_mnist((0, 8), "test", data_home=data_home)),
        ("MNIST 0/9", "all", lambda: load_mnist((0, 9), "all", data_home=data_home)),
        ("NEWS20 sci/talk", "train", lambda: load_news20("train", data_home=data_home)),
        ("NEWS20 sci/talk", "test", lambda: load_news20("test", data_home=data_home)),
        ("KDD Cup 99", "train (10%)", lambda: load_kddcup99("train", data_home=data_home, dtype=np.float32)),
        ("KDD Cup 99", "test (corrected)", lambda: load_kddcup99("test", data_home=data_home, dtype=np.float32)),
        ("UCI HAR", "train", lambda: load_har("train", data_home=data_home)),
        ("UCI HAR", "test", lambda: load_har("test", data_home=data_home)),
        ("Malicious URL", "days 0-9", lambda: load_url(range(10), data_home=data_home)),
        ("Malicious URL", "days 10-19", lambda: load_url(range(10, 20), data_home=data_home)),
    ]
    rows, kept = [], {}
    for name, subset, job in jobs:
        try:
            bunch = job()
            rows.append(_row(name, subset, bunch))
            if (name, subset) in keep:
                kept[(name, subset)] = bunch
        except DatasetNotFoundError as exc:
            missing = str(exc).split("missing file(s) ", 1)[1].split(" in data home")[0]
            n = missing.count(",") + 1
            rows.append(
                _row(name, subset, reason=f"missing {n} file(s): {missing[:60]}{'…' if len(missing) > 60 else ''}")
            )
    table = pd.DataFrame(rows)
    for col in ("samples", "features", "classes"):
        table[col] = table[col].astype("Int64")
    return (table, kept) if keep else table


def kdd_encoding_counts(train=None, test=None, data_home=None):
    """Feature counts of the candidate one-hot rules, computed from the two KDD files.

    ``train``/``test``: Bunches of :func:`load_kddcup99` (loaded here if not given).
    Returns a table: rule, numeric columns, indicator columns, total. Only the rule used by
    :func:`load_kddcup99` gives 123.
    """
    train = train if train is not None else load_kddcup99("train", data_home=data_home, dtype=np.float32)
    test = test if test is not None else load_kddcup99("test", data_home=data_home, dtype=np.float32)

    def n_values(bunches, attr):
        cols = [i for i, n in enumerate(train.feature_names) if n.startswith(attr + "=")]
        return int(sum(np.any(np.vstack([b.data[:, cols].sum(axis=0) > 0 for b in bunches]), axis=0)))

    text_attrs = ("protocol_type", "service", "flag")
    rows = []
    for label, bunches, attrs in [
        ("3 text attributes, 10% training file", [train], text_attrs),
        ("3 text attributes, training ∪ corrected", [train, test], text_attrs),
        ("all 7 symbolic attributes, 10% training file", [train], tuple(KDD_CATEGORIES)),
        ("all 7 symbolic attributes, training ∪ corrected (used)", [train, test], tuple(KDD_CATEGORIES)),
    ]:
        n_ind = sum(n_values(bunches, a) for a in attrs)
        n_num = len(KDD_COLUMNS) - len(attrs)
        rows.append({"rule": label, "numeric columns": n_num, "indicator columns": n_ind, "total": n_num + n_ind})
    return pd.DataFrame(rows)


def paper_sizes(shapes, mnist, news, transfer):
    """Sizes as used here next to the papers' (PST Table 1, PPTL §4.1, MPL §6).

    ``shapes`` is the table of :func:`loaded_shapes`; ``mnist``, ``news`` and ``transfer``
    are the Bunches of :func:`mnist_pst`, :func:`news20_pst` and :func:`mnist_transfer`.
    An absent dataset shows "absent".
    """

    def n(x):
        return "absent" if x is None or pd.isna(x) else f"{int(x):,}"

    def size(dataset, subset, col="samples"):
        row = shapes[(shapes.dataset == dataset) & (shapes.subset == subset)]
        return row[col].iloc[0] if len(row) else None

    rows = [
        (
            "PST Table 1",
            "MNIST 0 vs 8",
            "3,000 / 2,000 / 100",
            f"{n(len(mnist.y_train))} / {n(len(mnist.y_test))} / {mnist.X_train.shape[1]}",
        ),
        (
            "PST Table 1",
            "NEWS20 sci vs talk",
            "4,321 / 643 / 100",
            f"{n(len(news.y_train))} / {n(len(news.y_test))} / {news.X_train.shape[1]}",
        ),
        (
            "PPTL §4.1",
            "MNIST source 0/8, target 0/9",
            "2,000 / 1,000 / 100",
            f"{n(len(transfer.y_source))} / {n(len(transfer.y_target))} / {transfer.X_source.shape[1]}",
        ),
        (
            "MPL §6.1",
            "UCI HAR (6 classes)",
            "7K / 3K / 50 after PCA",
            f"{n(size('UCI HAR', 'train'))} / {n(size('UCI HAR', 'test'))} / 50 after PCA",
        ),
        (
            "MPL §6.2",
            "KDD Cup 99",
            "493K / 311K / 123",
            f"{n(size('KDD Cup 99', 'train (10%)'))} / {n(size('KDD Cup 99', 'test (corrected)'))} / "
            f"{n(size('KDD Cup 99', 'train (10%)', 'features'))}",
        ),
        (
            "MPL §6.3",
            "Malicious URL",
            "200K / 200K / 50 after PCA",
            f"{n(size('Malicious URL', 'days 0-9'))} / {n(size('Malicious URL', 'days 10-19'))} / 50 after PCA",
        ),
    ]
    return pd.DataFrame(
        rows, columns=["paper", "task", "paper: train / test / features", "here: train / test / features"]
    )
