"""Neighbouring datasets for privacy audits (replace-one, one sample).

A replace-one neighbour D' of D differs in one record. Objective perturbation's
worst cases put the changed record *at the norm bound* and in a direction the
rest of the data covers least (then its Hessian term xᵀA⁻¹x is largest), and
change its label or its direction. A record far *outside* the bound is what
breaks data-dependent rescaling (dividing by the largest norm found in the
data) while clipping maps it back onto the bound.
"""

from __future__ import annotations

import numpy as np

__all__ = ["worst_case_neighbours", "changed_rows"]


def _least_covered_directions(X):
    """Unit vectors along which X has the least energy (last right singular vectors)."""
    X = np.asarray(X, dtype=float)
    _, _, Vt = np.linalg.svd(X, full_matrices=True)
    return Vt[-1], Vt[-2] if Vt.shape[0] > 1 else Vt[-1]


def _record(X, bound, groups, importance, which):
    """A record with ‖x‖ = bound (or ‖x_(k)‖ = bound·q_k per block)."""
    p = X.shape[1]
    if groups is None:
        return bound * _least_covered_directions(X)[which]
    q = np.full(len(groups), 1.0 / len(groups)) if importance is None else np.asarray(importance, dtype=float)
    r = np.zeros(p)
    for k, g in enumerate(groups):
        g = np.asarray(g, dtype=int)
        r[g] = bound * q[k] * _least_covered_directions(X[:, g])[which]
    return r


def worst_case_neighbours(X, y, index=0, norm_bound=1.0, groups=None, importance=None, far=100.0):
    """Pairs of neighbouring datasets (D, D') built around ``(X, y)``.

    Every pair changes only row ``index``. In D that row is a record at the
    norm bound along the direction the other rows cover least; D' replaces it:

    - ``"label_flip"``: the same record with the other label;
    - ``"orthogonal"``: a record at the bound in a second, orthogonal direction;
    - ``"opposite"``: the mirrored record −x with the same label;
    - ``"zero"``: the all-zero record (removes the record's Hessian term);
    - ``"far_outside"``: a record ``far`` times beyond the bound, other label
      (clipping maps it onto the bound; dividing by the data's largest norm
      shrinks every other record instead).

    Parameters
    ----------
    X : array of shape (n, p)
    y : array of shape (n,), two classes
    index : int, default=0
        The row that differs.
    norm_bound : float, default=1.0
        The mechanism's public row bound (PLR's ``norm_bound``); for feature
        blocks, block k is put at ``norm_bound · q_k``.
    groups, importance : PLR-FS's feature groups and q_k (``None`` for PLR).
    far : float, default=100.0

    Returns
    -------
    pairs : dict name -> (X_D, y_D, X_D', y_D')

    Examples
    --------
    >>> import numpy as np
    >>> X = np.eye(4)[:3] / 2; y = np.array([0, 1, 1])
    >>> pairs = worst_case_neighbours(X, y)
    >>> sorted(pairs)
    ['far_outside', 'label_flip', 'opposite', 'orthogonal', 'zero']
    >>> XD, yD, XDp, yDp = pairs["label_flip"]
    >>> bool(np.allclose(XD, XDp)), int(yD[0]), int(yDp[0])
    (True, 0, 1)
    """
    X = np.array(X, dtype=float, copy=True)
    y = np.asarray(y).copy()
    classes = np.unique(y)
    if classes.size != 2:
        raise ValueError(f"y must have exactly two classes, got {classes.size}")
    other = np.delete(X, index, axis=0)
    r1 = _record(other, norm_bound, groups, importance, 0)
    r2 = _record(other, norm_bound, groups, importance, 1)
    flipped = classes[1] if y[index] == classes[0] else classes[0]
    XD = X.copy()
    XD[index] = r1

    def replaced(row, label):
        Xp, yp = XD.copy(), y.copy()
        Xp[index], yp[index] = row, label
        return Xp, yp

    pairs = {
        "label_flip": replaced(r1, flipped),
        "orthogonal": replaced(r2, y[index]),
        "opposite": replaced(-r1, y[index]),
        "zero": replaced(np.zeros_like(r1), y[index]),
        "far_outside": replaced(far * r2, flipped),
    }
    return {name: (XD, y.copy(), Xp, yp) for name, (Xp, yp) in pairs.items()}


def changed_rows(X, y, X_prime, y_prime):
    """Indices of the rows where two same-size datasets differ."""
    X, X_prime = np.asarray(X), np.asarray(X_prime)
    return np.flatnonzero(np.any(X != X_prime, axis=1) | (np.asarray(y) != np.asarray(y_prime)))
