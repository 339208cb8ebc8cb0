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


#: singular values closer than this fraction of the largest one count as equal: the directions they
#: span cover X equally little for the audit's purpose, and which of them an SVD returns first can
#: turn on rounding (about 1e-16 of the largest), i.e. on the BLAS kernels
_TIE_RTOL = 1e-8


def _canonical_basis(V, k):
    """The first ``k`` vectors of an orthonormal basis of span(rows of V) that depends only on that span.

    Parameters
    ----------
    V : ndarray of shape (m, p)
        Orthonormal rows spanning the subspace (any basis of it, with any signs).
    k : int
        How many basis vectors to return, ``k <= m``.

    Returns
    -------
    ndarray of shape (k, p)
        Pivoted Gram–Schmidt on the projector P = VᵀV: each vector is the remaining part of the
        subspace closest to a coordinate axis (the lowest-numbered axis on a tie), i.e. P's column
        for that axis, normalised, so its entry on that axis is positive. P, unlike V, is the same
        for every basis of the subspace, so the result is too.
    """
    R = V.T @ V
    basis = []
    for _ in range(k):
        reach = np.linalg.norm(R, axis=0)  # ‖R e_j‖: how much of axis j is left in the subspace
        # reaches equal up to rounding (e.g. several empty pixels, each wholly in the subspace) are
        # a tie, broken by the axis number, never by which one rounding happened to make larger
        j = int(np.flatnonzero(reach >= (1.0 - 1e-6) * reach.max())[0])
        q = R[:, j] / reach[j]
        basis.append(q)
        R = R - np.outer(q, q)
    return np.array(basis)


def _least_covered_directions(X):
    """Two orthonormal unit vectors along which X has the least energy, the same on every machine.

    The smallest singular values' right singular vectors, made canonical: an SVD's singular
    vectors have arbitrary signs, and when several singular values are equal (e.g. every
    feature that is 0 in all rows, such as the constant border pixels of the digits, gives a
    singular value 0) any orthonormal basis of their subspace is an equally valid answer. Which
    one LAPACK returns depends on the BLAS kernels, and the records built from it (and so every
    loss measured on them) would change from machine to machine. Tied singular values are grouped
    and each group's subspace is given a basis by :func:`_canonical_basis`; this picks one of the
    directions that were all least covered, so the meaning is unchanged.

    Returns
    -------
    first, second : ndarrays of shape (p,)
        ``first`` covered least; ``second`` the least covered direction orthogonal to it
        (``second`` is ``first`` when p = 1).
    """
    X = np.asarray(X, dtype=float)
    p = X.shape[1]
    _, s, Vt = np.linalg.svd(X, full_matrices=True)
    s = np.r_[s, np.zeros(p - s.size)]  # with fewer rows than columns the last p − n directions are uncovered
    tol = _TIE_RTOL * s.max()
    tied = np.flatnonzero(s <= s[-1] + tol)
    if tied.size >= 2 or p == 1:
        basis = _canonical_basis(Vt[tied], min(2, tied.size))
        return basis[0], basis[-1]
    first = _canonical_basis(Vt[tied], 1)[0]
    second = _canonical_basis(Vt[np.flatnonzero(np.abs(s - s[-2]) <= tol)], 1)[0]
    return first, second


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


def worst_case_neighbours(X, y, index=0, norm_bound=1.0, groups=None, importance=None, far=100.0, classes=None):
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
    classes : array-like of two labels or None
        The labels the mechanism knows (a fitted level's ``classes_``); ``None``: the two labels
        of ``y``. Given, ``y`` may hold one class only (a level whose part drew one class): the
        flipped label is the other one.

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
    if classes is None:
        classes = np.unique(y)
        if classes.size != 2:
            raise ValueError(
                f"y must have exactly two classes, got {classes.size} (pass classes= for a part that holds one)"
            )
    else:
        classes = np.asarray(classes)
        if classes.size != 2 or not np.all(np.isin(np.unique(y), classes)):
            raise ValueError(f"classes must be the two labels y is drawn from, got {classes!r}")
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


def neighbour_kwargs(level):
    """Where the neighbours put their records: the public bound, or the public groups and q_k."""
    params = level.get_params(deep=False)
    if "groups" in params:  # feature blocks, block k bounded by q_k
        return dict(
            groups=getattr(level, "groups_", params["groups"]),
            importance=getattr(level, "importance_", params.get("importance")),
        )
    return dict(norm_bound=float(params.get("norm_bound", 1.0)))
