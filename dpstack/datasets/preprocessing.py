"""The papers' preprocessing, as named functions with their parameters.

Each function returns a Bunch whose ``steps`` table says, step by step, whether the
step looks at the private data and whether it is inside the ε-DP guarantee. Steps
that fit something on the private data (PCA, TF-IDF vocabulary and weights, feature
variances used as importances) are *outside* the guarantee, as in the papers
(:ref:`erratum 5 <erratum-public-bound>`). Where that is so, ``fit_on="public"`` offers the strict variant:
the same step fitted on a held-out part that plays the role of public data and is
disjoint from every sample used for training or testing.
"""

from __future__ import annotations

import json
import numbers

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.utils import Bunch

from .._validation import check_random_state
from ..mechanisms import clip_rows
from . import _cache
from ._home import resolve_files
from .kddcup99 import KDD_COLUMNS
from .mnist import load_mnist
from .news20 import NEWS20_GROUPS, SCI_GROUPS, TALK_GROUPS, load_news20

__all__ = [
    "STEP_COLUMNS",
    "fit_pca",
    "har_mpl",
    "kddcup99_scale",
    "mnist_pst",
    "mnist_transfer",
    "news20_pst",
    "scale_and_clip",
    "url_mpl",
]

STEP_COLUMNS = ["step", "fitted on", "uses private data", "inside DP guarantee"]


def _mnist_pca_steps(selection, importances, n_components, fitted, fit_on, scale):
    """The steps table of the MNIST pipelines: which steps use private data, which are inside the guarantee."""
    private = fit_on == "private"
    return pd.DataFrame(
        [
            [selection, "-", False, True],
            [f"PCA to {n_components}", fitted, private, not private],
            [importances, fitted, private, not private],
            [f"multiply by {scale}, clip rows to norm 1", "per row", True, True],
        ],
        columns=STEP_COLUMNS,
    )


def _check_fit_on(fit_on):
    if fit_on not in ("private", "public"):
        raise ValueError(f"fit_on must be 'private' (as in the paper) or 'public' (strict), got {fit_on!r}")


def fit_pca(X_fit, n_components, random_state=0):
    """PCA with ``n_components`` fitted on ``X_fit`` (dense: exact SVD; sparse: ARPACK, centred implicitly).

    Returns the fitted :class:`sklearn.decomposition.PCA`. Its ``explained_variance_`` is
    the variance v_i of each output feature on ``X_fit``, the importance of PST eq. (6).
    """
    sparse = hasattr(X_fit, "tocsr")
    solver = "arpack" if sparse else "full"
    n_components = min(n_components, min(X_fit.shape) - (1 if sparse else 0))
    return PCA(n_components=n_components, svd_solver=solver, random_state=random_state).fit(X_fit)


def scale_and_clip(X, scale=1.0, bound=1.0):
    """Multiply rows by a public constant ``scale``, then clip each row to L2 norm ``bound``.

    Both are per-row operations with public constants, so they are inside the guarantee.
    Returns ``(X_out, clipped_fraction)``.
    """
    X = np.asarray(X, dtype=float) * float(scale)
    norms = np.linalg.norm(X, axis=1)
    return clip_rows(X, bound), float(np.mean(norms > bound)) if len(X) else 0.0


def _binary(target, positive):
    return (np.asarray(target) == positive).astype(np.int64)


def mnist_pst(
    digits=(0, 8),
    n_samples=5000,
    n_train=3000,
    n_components=100,
    fit_on="private",
    n_public=2000,
    scale=1.0,
    random_state=0,
    data_home=None,
    verify=True,
):
    """PST §4.1 / Table 1: an MNIST digit pair, 5,000 samples, PCA to 100, rows clipped to norm 1.

    Steps: (1) pool every official train and test image of the two digits (13,728 for
    0/8); (2) draw ``n_samples`` without replacement, the first ``n_train`` for training
    (3,000, of which the paper uses 1/3 for validation) and the rest for testing (2,000);
    (3) PCA to ``n_components`` fitted on the training samples (``fit_on="private"``, as in
    the paper: outside the guarantee) or on ``n_public`` further images of the pool that are
    used nowhere else (``"public"``: strict); (4) project, multiply by the public constant
    ``scale`` and clip each row to norm 1. With ``scale=1`` almost every row is longer than 1,
    so clipping normalises rows to unit length; it uses no other row, so it is inside the
    guarantee.

    Parameters
    ----------
    digits : tuple of two int, default=(0, 8)
        The pair; label 1 = ``digits[1]``.
    n_samples, n_train : int, default=5000, 3000
    n_components : int, default=100
    fit_on : {"private", "public"}, default="private"
    n_public : int, default=2000
        Size of the held-out public part when ``fit_on="public"``.
    scale : float, default=1.0
        Public constant multiplying the PCA scores before clipping.
    random_state : int, Generator or None, default=0
    data_home : str or path-like, optional
    verify : bool, default=True
        Check the raw files' checksums (see :func:`dpstack.datasets.load_mnist`).

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``X_train`` (3000, 100), ``y_train``, ``X_test`` (2000, 100), ``y_test`` (0/1),
        ``feature_variance`` (v_i of PST eq. 6, on the PCA fit set, decreasing),
        ``pca``, ``clipped_fraction``, ``mnist_index`` (official indices of the samples),
        ``steps`` (DataFrame: which steps are inside the guarantee), ``target_names``.

    Examples
    --------
    >>> from dpstack.datasets.preprocessing import mnist_pst
    >>> d = mnist_pst()                 # doctest: +SKIP
    >>> d.X_train.shape, d.X_test.shape # doctest: +SKIP
    ((3000, 100), (2000, 100))
    """
    _check_fit_on(fit_on)
    if len(tuple(digits)) != 2:
        raise ValueError(f"digits must be a pair, got {digits!r}")
    if not 0 < n_train < n_samples:
        raise ValueError(f"need 0 < n_train < n_samples, got n_train={n_train}, n_samples={n_samples}")
    rng = check_random_state(random_state)
    pool = load_mnist(digits, "all", data_home=data_home, verify=verify)
    n_needed = n_samples + (n_public if fit_on == "public" else 0)
    if n_needed > len(pool.target):
        raise ValueError(f"{n_needed} samples requested, only {len(pool.target)} images of digits {digits}")
    perm = rng.permutation(len(pool.target))
    use, public = perm[:n_samples], perm[n_samples:n_needed]
    X, y = pool.data[use], _binary(pool.target[use], digits[1])
    pca = fit_pca(X[:n_train] if fit_on == "private" else pool.data[public], n_components, 0)
    Z, clipped = scale_and_clip(pca.transform(X), scale)
    fitted = "training samples" if fit_on == "private" else f"{n_public:,} held-out images"
    steps = _mnist_pca_steps(
        "select digits, sample 5,000, split 3,000/2,000",
        "feature variances v_i (PST eq. 6 importances)",
        n_components,
        fitted,
        fit_on,
        scale,
    )
    return Bunch(
        X_train=Z[:n_train],
        y_train=y[:n_train],
        X_test=Z[n_train:],
        y_test=y[n_train:],
        feature_variance=pca.explained_variance_.copy(),
        pca=pca,
        clipped_fraction=clipped,
        mnist_index=pool.index[use],
        public_index=pool.index[public],
        steps=steps,
        target_names=list(digits),
        fit_on=fit_on,
    )


def mnist_transfer(
    source_digits=(0, 8),
    target_digits=(0, 9),
    n_source=2000,
    n_target=1000,
    n_components=100,
    fit_on="private",
    n_public=2000,
    scale=1.0,
    random_state=0,
    data_home=None,
    verify=True,
):
    """PPTL §4.1: source task 0 vs 8 (2,000 samples), target task 0 vs 9 (1,000), PCA to 100.

    Steps: pool every official image of the digits involved; draw disjoint source and
    target samples (an image of a shared digit, 0, goes to at most one task); PCA fitted
    on source ∪ target (``fit_on="private"``: the paper's "PCA on the whole dataset",
    outside the guarantee of both parties) or on ``n_public`` further images of the
    three digits used nowhere else (``"public"``: strict); scale by ``scale`` and clip rows
    to norm 1 (inside). The 80/20 train/test split of PPTL is left to the experiment.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``X_source`` (2000, 100), ``y_source`` (1 = source_digits[1]), ``X_target``
        (1000, 100), ``y_target`` (1 = target_digits[1]), ``feature_variance``, ``pca``,
        ``clipped_fraction``, ``steps``.
    """
    _check_fit_on(fit_on)
    rng = check_random_state(random_state)
    digits = tuple(sorted(set(source_digits) | set(target_digits)))
    pool = load_mnist(digits, "all", data_home=data_home, verify=verify)
    labels = pool.target
    src_pool = np.flatnonzero(np.isin(labels, source_digits))
    if n_source > len(src_pool):
        raise ValueError(f"n_source={n_source} but only {len(src_pool)} images of digits {source_digits}")
    src = rng.choice(src_pool, n_source, replace=False)
    # target drawn uniformly from the images the source did not take (a shared digit, 0, is split)
    tgt_pool = np.setdiff1d(np.flatnonzero(np.isin(labels, target_digits)), src)
    if n_target > len(tgt_pool):
        raise ValueError(f"n_target={n_target} but only {len(tgt_pool)} unused images of digits {target_digits}")
    tgt = rng.choice(tgt_pool, n_target, replace=False)
    used = np.concatenate([src, tgt])
    rest = np.setdiff1d(np.arange(len(labels)), used)
    public = rng.choice(rest, min(n_public, len(rest)), replace=False)
    X_fit = pool.data[used] if fit_on == "private" else pool.data[public]
    pca = fit_pca(X_fit, n_components, 0)
    Zs, c1 = scale_and_clip(pca.transform(pool.data[src]), scale)
    Zt, c2 = scale_and_clip(pca.transform(pool.data[tgt]), scale)
    fitted = "source + target samples" if fit_on == "private" else f"{len(public):,} held-out images"
    steps = _mnist_pca_steps(
        "select digits, draw disjoint source/target samples",
        "feature variances (importances for PPTL-FS(W))",
        n_components,
        fitted,
        fit_on,
        scale,
    )
    return Bunch(
        X_source=Zs,
        y_source=_binary(pool.target[src], source_digits[1]),
        X_target=Zt,
        y_target=_binary(pool.target[tgt], target_digits[1]),
        feature_variance=pca.explained_variance_.copy(),
        pca=pca,
        clipped_fraction=(c1 * len(src) + c2 * len(tgt)) / (len(src) + len(tgt)),
        source_index=pool.index[src],
        target_index=pool.index[tgt],
        steps=steps,
        fit_on=fit_on,
    )


NEWS20_PST_VERSION = 1  # bump when news20_pst's output changes: older cached results are then ignored


def news20_pst(
    n_components=100,
    fit_on="private",
    n_train=None,
    n_test=None,
    min_df=2,
    scale=1.0,
    random_state=0,
    data_home=None,
    verify=True,
    cache=True,
):
    """PST §4.1 / Table 1: NEWS20 sci.* (1) vs talk.* (0), TF-IDF, PCA to 100, rows clipped to 1.

    Sizes: the "bydate" training split of the eight groups is the training set (4,325
    posts; PST Table 1: 4,321) and its test split the test set (2,880; PST: 643, which
    matches no split; ``n_test=643`` draws that many at random). Steps: (1) TF-IDF
    (scikit-learn ``TfidfVectorizer``, terms in at least ``min_df`` posts, l2-normalised
    rows) and (2) PCA to ``n_components`` (centred, ARPACK on the sparse matrix: the
    "PCA" of the paper), both fitted on the training posts (``fit_on="private"``, outside
    the guarantee) or on the training posts of the twelve *other* newsgroups, which the
    task never uses (``"public"``: strict); (3) multiply by ``scale``, clip rows to norm 1
    (inside; TF-IDF rows have norm 1, so few rows are clipped).

    ``cache=True`` keeps the result (arrays, vocabulary, idf weights and PCA) as ``.npz``
    in the user cache folder, keyed by the tarball's sha256, every parameter, this
    function's version and the numpy/scipy/scikit-learn versions, so each new process
    reads it instead of refitting TF-IDF and PCA (about 5 s). A damaged entry is ignored.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``X_train`` (4325, 100), ``y_train``, ``X_test`` (2880, 100), ``y_test``,
        ``feature_variance``, ``vectorizer``, ``pca``, ``clipped_fraction``, ``steps``,
        ``group_train``, ``group_test``.
    """
    _check_fit_on(fit_on)
    key = None
    if cache and ((n_train is None and n_test is None) or _is_int(random_state)):
        sha = resolve_files("news20", data_home, False, verify)[_NEWS20_TAR][1]
        key = _news20_pst_key(
            sha,
            dict(
                n_components=n_components,
                fit_on=fit_on,
                n_train=n_train,
                n_test=n_test,
                min_df=min_df,
                scale=float(scale),
                random_state=None if n_train is None and n_test is None else int(random_state),
            ),
        )
        hit = _cache.load("news20-pst", key)
        if hit is not None:
            try:
                return _news20_pst_bunch(n_components, fit_on, scale, **_news20_from_arrays(hit, min_df))
            except (KeyError, ValueError, TypeError, IndexError):
                pass  # an entry of another layout: recompute (and overwrite it)
    rng = check_random_state(random_state)
    train = load_news20("train", data_home=data_home, verify=verify)
    test = load_news20("test", data_home=data_home, verify=verify)
    i_tr = (
        np.arange(len(train.data)) if n_train is None else np.sort(rng.choice(len(train.data), n_train, replace=False))
    )
    i_te = np.arange(len(test.data)) if n_test is None else np.sort(rng.choice(len(test.data), n_test, replace=False))
    docs_tr = [train.data[i] for i in i_tr]
    docs_te = [test.data[i] for i in i_te]
    if fit_on == "private":
        fit_docs = docs_tr
    else:
        others = tuple(g for g in NEWS20_GROUPS if g not in SCI_GROUPS + TALK_GROUPS)
        fit_docs = load_news20("train", positive=others, negative=(), data_home=data_home, verify=verify).data
    vec = TfidfVectorizer(min_df=min_df, dtype=np.float64).fit(fit_docs)
    pca = fit_pca(vec.transform(fit_docs), n_components, 0)
    Z_tr, c1 = scale_and_clip(pca.transform(vec.transform(docs_tr)), scale)
    Z_te, c2 = scale_and_clip(pca.transform(vec.transform(docs_te)), scale)
    parts = dict(
        X_train=Z_tr,
        y_train=train.target[i_tr],
        X_test=Z_te,
        y_test=test.target[i_te],
        vectorizer=vec,
        pca=pca,
        clipped_fraction=(c1 * len(i_tr) + c2 * len(i_te)) / (len(i_tr) + len(i_te)),
        group_train=train.group[i_tr],
        group_test=test.group[i_te],
    )
    if key is not None:
        _cache.save("news20-pst", key, _news20_to_arrays(parts))
    return _news20_pst_bunch(n_components, fit_on, scale, **parts)


_NEWS20_TAR = "20newsgroups/20news-bydate.tar.gz"
_ARRAYS = ("X_train", "y_train", "X_test", "y_test", "group_train", "group_test")


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _news20_pst_key(sha, params):
    import scipy
    import sklearn

    return {
        "source_sha256": sha,
        "loader_version": NEWS20_PST_VERSION,
        "params": params,
        "versions": {"numpy": np.__version__, "scipy": scipy.__version__, "scikit-learn": sklearn.__version__},
    }


def _news20_to_arrays(parts):
    """The result as plain arrays: the fitted vectorizer and PCA by their learned attributes."""
    vec, pca = parts["vectorizer"], parts["pca"]
    out = {k: np.asarray(parts[k]) for k in _ARRAYS}
    out["clipped_fraction"] = np.asarray(parts["clipped_fraction"], dtype=float)
    out["vocabulary"] = np.array(sorted(vec.vocabulary_, key=vec.vocabulary_.get), dtype=str)
    out["idf"] = vec.idf_
    out["pca_params"] = np.array(json.dumps(pca.get_params()))
    for name, value in vars(pca).items():
        if name.endswith("_") and not name.startswith("__"):
            value = np.asarray(value)
            flipped = [axis for axis, step in enumerate(value.strides) if step < 0]
            base = np.flip(value, flipped) if flipped else value
            # ARPACK's components_ is a reversed view; keep its memory layout so that transform()
            # of the rebuilt PCA sums in the same order (bit-identical results)
            out["pca." + name] = base
            out["layout." + name] = np.array([int(base.flags.f_contiguous and not base.flags.c_contiguous), *flipped])
    return out


def _news20_from_arrays(a, min_df):
    """Inverse of :func:`_news20_to_arrays`: refitted-equivalent TfidfVectorizer and PCA objects."""
    vec = TfidfVectorizer(min_df=min_df, dtype=np.float64)
    vec.vocabulary_ = {term: i for i, term in enumerate(a["vocabulary"].tolist())}
    vec.fixed_vocabulary_ = False
    vec.idf_ = a["idf"]
    vec._tfidf.n_features_in_ = len(a["idf"])
    pca = PCA(**json.loads(str(a["pca_params"])))
    for name in a:
        if name.startswith("pca."):
            value, layout = a[name], a["layout." + name[4:]].tolist()
            if value.ndim == 0:
                setattr(pca, name[4:], value.item())
                continue
            value = np.asfortranarray(value) if layout[0] else value
            setattr(pca, name[4:], np.flip(value, layout[1:]) if layout[1:] else value)
    parts = {k: a[k] for k in _ARRAYS}
    return dict(parts, vectorizer=vec, pca=pca, clipped_fraction=float(a["clipped_fraction"]))


def _news20_pst_bunch(
    n_components,
    fit_on,
    scale,
    X_train,
    y_train,
    X_test,
    y_test,
    vectorizer,
    pca,
    clipped_fraction,
    group_train,
    group_test,
):
    fitted = "training posts" if fit_on == "private" else "training posts of the 12 other groups"
    steps = pd.DataFrame(
        [
            ["sci.* vs talk.*, bydate train/test split", "-", False, True],
            ["TF-IDF vocabulary and idf weights", fitted, fit_on == "private", fit_on == "public"],
            [f"PCA to {n_components}", fitted, fit_on == "private", fit_on == "public"],
            ["feature variances v_i (PST eq. 6 importances)", fitted, fit_on == "private", fit_on == "public"],
            [f"multiply by {scale}, clip rows to norm 1", "per row", True, True],
        ],
        columns=STEP_COLUMNS,
    )
    return Bunch(
        X_train=X_train,
        y_train=y_train,
        X_test=X_test,
        y_test=y_test,
        feature_variance=pca.explained_variance_.copy(),
        vectorizer=vectorizer,
        pca=pca,
        clipped_fraction=clipped_fraction,
        group_train=group_train,
        group_test=group_test,
        steps=steps,
        target_names=["talk", "sci"],
        fit_on=fit_on,
    )


_KDD_RATES = {c for c in KDD_COLUMNS if c.endswith("_rate")}


def kddcup99_scale(X, feature_names):
    """Data-independent scaling of the 123 KDD columns so every row has norm <= 1.

    Rates (already in [0, 1]) and one-hot columns are kept; every other numeric column
    (durations, byte and connection counts, all >= 0) becomes log1p(x) / log1p(1e10),
    which is in [0, 1] for any value below 10^10 (the largest in the files is 1.4e9)
    and is then capped at 1. Each of the 41 attributes then contributes at most 1 to the
    squared norm, so dividing rows by √41 bounds them by 1 (the final clip is a safety
    net). No constant is computed from the data: the whole map is inside the guarantee.
    """
    X = np.array(X, dtype=float, copy=True)
    for j, name in enumerate(feature_names):
        if "=" in name or name in _KDD_RATES:
            continue
        X[:, j] = np.minimum(np.log1p(np.maximum(X[:, j], 0.0)) / np.log1p(1e10), 1.0)
    X /= np.sqrt(len(KDD_COLUMNS))
    return clip_rows(X, 1.0)


def _mpl_pca(X_train, X_test, n_components, fit_on, X_public, scale):
    _check_fit_on(fit_on)
    if fit_on == "public" and X_public is None:
        raise ValueError("fit_on='public' needs X_public, a held-out part used nowhere else")
    pca = fit_pca(X_train if fit_on == "private" else X_public, n_components, 0)
    Z_tr, c1 = scale_and_clip(pca.transform(X_train), scale)
    Z_te, c2 = scale_and_clip(pca.transform(X_test), scale)
    fitted = "training samples of all parties" if fit_on == "private" else "held-out public samples"
    steps = pd.DataFrame(
        [
            [f"PCA to {n_components}", fitted, fit_on == "private", fit_on == "public"],
            [f"multiply by {scale}, clip rows to norm 1", "per row", True, True],
        ],
        columns=STEP_COLUMNS,
    )
    return Bunch(X_train=Z_tr, X_test=Z_te, pca=pca, clipped_fraction=(c1, c2), steps=steps, fit_on=fit_on)


def har_mpl(X_train, X_test, n_components=50, fit_on="private", X_public=None, scale=1.0):
    """MPL §6.1: UCI HAR's 561 features → PCA to 50, rows scaled and clipped to norm 1.

    The paper fits PCA on the data without saying on which part; ``fit_on="private"``
    fits it on ``X_train`` (all parties' samples together: outside the party-level
    guarantee); ``"public"`` fits it on ``X_public`` (e.g. the auxiliary unlabeled
    samples the aggregator holds anyway). Returns a Bunch with ``X_train``, ``X_test``
    (n, 50), ``pca``, ``clipped_fraction``, ``steps``.
    """
    return _mpl_pca(X_train, X_test, n_components, fit_on, X_public, scale)


def url_mpl(X_train, X_test, n_components=50, fit_on="private", X_public=None, scale=1.0):
    """MPL §6.3: sparse URL features (days 0-9 train, 10-19 test) → PCA to 50, clipped to norm 1.

    PCA on the sparse matrix is centred implicitly (ARPACK). Same ``fit_on`` choice as
    :func:`har_mpl`. Returns a Bunch with ``X_train``, ``X_test`` (n, 50), ``pca``,
    ``clipped_fraction``, ``steps``.
    """
    return _mpl_pca(X_train, X_test, n_components, fit_on, X_public, scale)
