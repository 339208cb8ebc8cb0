"""A near-worst case of objective perturbation: neighbours, centre w0 and output together.

The privacy loss at an output w has two parts (see :mod:`.exact`): the noise
part (‖b(w; D')‖ − ‖b(w; D)‖)/scale ≤ ‖Δb‖/scale, with Δb = b(w; D) − b(w; D'),
and the Jacobian part log det H(w; D) − log det H(w; D'). The proofs bound
both separately; a single w reaches a large share of both only if

* the changed record is *isolated* (the other rows are zero, so its Hessian
  term q²/(4n(λ+Δ)) is not diluted),
* its margin is 0 in D (ℓ'' = 1/4, the largest curvature) while the
  replacement record in D' has a very negative margin (ℓ'' ≈ 0, |ℓ'| ≈ 1),
  pointing almost opposite (‖Δb‖ → 1.5·bound), and
* b(w; D) points along −Δb, which the centre w0 of the regulariser
  (λ/2)‖w − w0‖² can arrange: b contains the free term nλ·w0.

The guarantee must hold for every public w0 (PPTL and PST-H use the source
model as w0), so this is a legitimate neighbouring pair for the audit. At the
constructed output the loss is ≈ 0.74·ε_noise + (Jacobian cost)/2 per unit of
importance, below ε for a correct calibration and above it when the noise
or Δ are mis-calibrated (e.g. PPTL's ε^(k) = ε, or a skipped Δ).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import clone

from .exact import (
    exact_privacy_loss,
    exact_privacy_loss_terms,
    mechanism_blocks,
    noise_from_output,
    sample_outputs,
    signed_targets,
)

__all__ = ["AdversarialCase", "adversarial_case", "block_loss_table"]


@dataclass
class AdversarialCase:
    """Output of :func:`adversarial_case`.

    Attributes
    ----------
    estimator : fitted clone of the audited estimator, with the adversarial ``w0``
    X, y, X_prime, y_prime : the neighbouring datasets (row 0 differs)
    w_star : ndarray, the constructed output (layout of :func:`~dpstack.audit.output_vector`)
    loss_at_w_star : float, log p(w* | D) − log p(w* | D')
    """

    estimator: object
    X: np.ndarray
    y: np.ndarray
    X_prime: np.ndarray
    y_prime: np.ndarray
    w_star: np.ndarray
    loss_at_w_star: float

    def max_loss(self, n_draws=500, random_state=0):
        """max |loss| over w* and ``n_draws`` outputs of the mechanism on D and on D'."""
        W = np.vstack(
            [
                self.w_star,
                sample_outputs(self.estimator, self.X, self.y, n_draws, random_state),
                sample_outputs(self.estimator, self.X_prime, self.y_prime, n_draws, random_state),
            ]
        )
        loss = exact_privacy_loss(self.estimator, self.X, self.y, self.X_prime, self.y_prime, W)
        return float(np.max(np.abs(loss)))


def adversarial_case(estimator, n_samples=40, n_features=None, margin=12.0, angle=0.9 * np.pi, record_margin=0.0):
    """Build the near-worst neighbouring pair, centre and output for PLR or PLR-FS.

    Parameters
    ----------
    estimator : PrivateLogisticRegression or FeatureSplitLogisticRegression (unfitted is fine)
        Its ``w0`` is replaced by the adversarial centre (any public w0 is allowed).
    n_samples : int, default=40
        n; the other n − 1 rows are zero (labels alternate so both classes occur).
    n_features : int, optional
        For PLR (default 2); PLR-FS takes it from ``groups``.
    margin : float
        −margin is the replacement record's margin at w* (|ℓ'| ≈ 1, ℓ'' ≈ 0).
    angle : float
        Angle between the record and its replacement, per block (with an intercept:
        between their signed augmented rows y·z, the replacement taking the other label).
    record_margin : float, default=0.0
        The changed record's margin in D at w*. 0 puts its curvature at the largest
        value (the Jacobian part is large, the noise part ≈ 0.74·ε′); ``-margin`` makes
        both curvatures ≈ 0 and ‖Δb‖ ≈ 2·bound (the noise part ≈ 0.99·ε′, the
        Jacobian part ≈ 0) — the case that exposes rows longer than the bound.

    Returns
    -------
    AdversarialCase
    """
    is_fs = "groups" in estimator.get_params(deep=False)  # feature blocks (PLR-FS and its kind)
    if is_fs:
        groups = [np.asarray(g, dtype=int).ravel() for g in estimator.groups]
        p = int(max(g.max() for g in groups)) + 1 if n_features is None else int(n_features)
    else:
        p = 2 if n_features is None else int(n_features)
        groups = [np.arange(p)]
    X = np.zeros((n_samples, p))
    Xp = np.zeros((n_samples, p))
    # rows far outside every bound: clipping puts them exactly on the bound
    big = 1e3 * (1.0 if is_fs else float(estimator.norm_bound))
    # With an intercept every augmented row ends in the same constant s, so two records with the
    # same label can never point almost opposite: the replacement then takes the other label and
    # the mirrored angle, which makes the *signed* augmented rows y·z almost opposite.
    augmented = not is_fs and bool(estimator.get_params().get("fit_intercept", False))
    theta = np.pi - angle if augmented else angle
    for g in groups:
        X[0, g[0]] = big
        if g.size >= 2:
            Xp[0, g[0]], Xp[0, g[1]] = big * np.cos(theta), big * np.sin(theta)
        else:
            Xp[0, g[0]] = big if augmented else -big
    y = np.arange(n_samples) % 2
    y[0] = 1
    yp = y.copy()
    if augmented:
        yp[0] = 0
    est = clone(estimator).set_params(w0=None, classes=[0, 1]).fit(X, y)
    ys, ysp = signed_targets(est, y), signed_targets(est, yp)
    blocks, blocks_p = mechanism_blocks(est, X), mechanism_blocks(est, Xp)
    d_out = est.w_.size if not is_fs else p
    w_star, w0 = np.zeros(d_out), np.zeros(d_out)
    for blk, blk_p in zip(blocks, blocks_p):
        Z, Zp = blk["Z"], blk_p["Z"]
        u, v = ys[0] * Z[0], ysp[0] * Zp[0]  # signed rows: the margin of a row is y·wᵀz
        A = np.vstack([u, v])
        if np.linalg.matrix_rank(A) == 2:
            wk = np.linalg.lstsq(A, np.array([float(record_margin), -margin]), rcond=None)[0]
        else:
            wk = np.zeros(u.size)
        n = Z.shape[0]
        zeros = np.zeros(u.size)
        b0, _ = noise_from_output(Z, ys, wk[None], blk["lam"], blk["delta"], zeros)
        b0p, _ = noise_from_output(Zp, ysp, wk[None], blk["lam"], blk["delta"], zeros)
        db = (b0 - b0p)[0]
        R = u.size * blk["noise_scale"]  # the mean of ‖b‖: outputs near w* are typical
        w0[blk["cols"]] = (-R * db / np.linalg.norm(db) - b0[0]) / (n * blk["lam"])
        w_star[blk["cols"]] = wk
    est = clone(estimator).set_params(w0=w0, classes=[0, 1]).fit(X, y)
    loss = exact_privacy_loss(est, X, y, Xp, yp, w_star)
    return AdversarialCase(est, X, y, Xp, yp, w_star, loss)


def block_loss_table(case):
    """PST Lemma 8 block by block: each block's bounds next to its realised loss at w*.

    For every block k of the case's estimator (PLR: one block) lists q_k
    (the block's norm bound), d_k, λ_k, Δ_k, ε_k, the noise bound (ε_k·q_k for PLR-FS) and
    the Jacobian bound 2·log(1 + q_k²/(4n(λ_k + Δ_k))) of the proof, and the
    noise and Jacobian parts of the exact loss at the constructed output w*.

    Returns
    -------
    pandas.DataFrame, one row per block plus a ``total`` row.
    """
    import pandas as pd

    est = case.estimator
    terms = exact_privacy_loss_terms(est, case.X, case.y, case.X_prime, case.y_prime, case.w_star)
    n = case.X.shape[0]
    cal = est.calibration_
    if "groups" in est.get_params(deep=False):
        eps_blocks = cal.epsilon_k[cal.noise_scale_k > 0]
    else:
        eps_blocks = [cal.epsilon_noise]
    rows = []
    for k, (blk, eps_k) in enumerate(zip(terms["blocks"], eps_blocks)):
        q = float(np.linalg.norm(blk["Z"][0]))  # the changed record sits on the block's bound
        ridge = blk["lam"] + blk["delta"]
        rows.append(
            {
                "block": k + 1,
                "q_k": q,
                "d_k": blk["Z"].shape[1],
                "λ_k": blk["lam"],
                "Δ_k": blk["delta"],
                "ε_k": float(eps_k),
                # ‖b_k(D) − b_k(D')‖ ≤ 2q_k and the density is exp(−‖b‖/scale)
                "noise bound": 2.0 * q / blk["noise_scale"],
                "Jacobian bound": 2.0 * np.log1p(q * q / (4.0 * n * ridge)),
                "noise part at w*": float(terms["noise"][0, k]),
                "Jacobian part at w*": float(terms["jacobian"][0, k]),
            }
        )
    table = pd.DataFrame(rows)
    total = table.drop(columns=["block", "q_k", "d_k", "λ_k", "Δ_k", "ε_k"]).sum()
    table = pd.concat([table, pd.DataFrame([{"block": "total", **total.to_dict()}])], ignore_index=True)
    table["d_k"] = table["d_k"].astype("Int64")
    return table
