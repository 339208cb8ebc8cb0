"""Evaluation metrics computed without scikit-learn's per-call input checks.

The experiment grids compute thousands of AUCs on small test sets, where
:func:`sklearn.metrics.roc_auc_score` spends most of its time validating its
inputs and building the ROC curve. :func:`roc_auc_score` here gives the same
number from one sort, by the rank-sum (Mann–Whitney) identity.
"""

from __future__ import annotations

import numpy as np

__all__ = ["roc_auc_score"]


def roc_auc_score(y_true, y_score):
    """Area under the ROC curve of binary scores, exactly, from the ranks of the scores.

    With ``P`` positives and ``N`` negatives and ``R`` the sum of the positives'
    ranks among all scores (tied scores share the average of their ranks),
    ``AUC = (R − P(P+1)/2) / (P·N)``: the probability that a random positive
    scores above a random negative, ties counting one half. This equals the
    trapezoidal area under the ROC curve, i.e. what
    :func:`sklearn.metrics.roc_auc_score` returns for binary labels.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Two distinct labels; the larger one (in sorted order) is the positive
        class, as in scikit-learn (e.g. 1 of {0, 1} or of {−1, 1}).
    y_score : array-like of shape (n_samples,)
        Finite scores, larger meaning more likely positive.

    Returns
    -------
    auc : float

    Raises
    ------
    ValueError
        If ``y_true`` does not hold exactly two classes, if the shapes differ
        or if ``y_score`` is not finite.

    References
    ----------
    Hanley, J. A. & McNeil, B. J. (1982). The meaning and use of the area under
    a receiver operating characteristic (ROC) curve. *Radiology* 143(1), 29–36.

    Examples
    --------
    >>> roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    y_true = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=float)
    if y_true.ndim != 1 or y_score.shape != y_true.shape:
        raise ValueError(
            f"y_true and y_score must be 1-D of the same length, got shapes {y_true.shape} and {y_score.shape}"
        )
    classes, y_idx = np.unique(y_true, return_inverse=True)
    if classes.size != 2:
        found = f"only the class {classes[0]}" if classes.size == 1 else f"{classes.size} classes"
        raise ValueError(f"y_true must contain exactly two classes for a ROC AUC, got {found}")
    if not np.all(np.isfinite(y_score)):
        raise ValueError("y_score contains NaN or infinity")
    positive = y_idx.astype(bool)
    n_pos = int(np.count_nonzero(positive))
    n_neg = positive.size - n_pos
    order = np.argsort(y_score, kind="stable")
    sorted_score = y_score[order]
    sorted_pos = positive[order]
    new_value = sorted_score[1:] != sorted_score[:-1]
    if np.all(new_value):  # no ties: the ranks are the positions
        rank_sum = float(np.sum(np.flatnonzero(sorted_pos) + 1.0))
    else:  # tied scores share the mean of their 1-based ranks (start + 1 + end) / 2
        starts = np.concatenate([[0], np.flatnonzero(new_value) + 1])
        ends = np.concatenate([starts[1:], [positive.size]])
        pos_per_group = np.add.reduceat(sorted_pos.astype(float), starts)
        rank_sum = float(np.sum(pos_per_group * (starts + ends + 1) * 0.5))
    return (rank_sum - 0.5 * n_pos * (n_pos + 1.0)) / (n_pos * float(n_neg))
