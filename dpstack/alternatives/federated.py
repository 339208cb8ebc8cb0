"""Party-level DP federated averaging (DP-FedAvg, McMahan et al. 2018) for logistic regression.

Each of T rounds:

1. every party takes part independently with probability q (``party_fraction``; q = 1: all);
2. each one starting from the global model w runs ``local_steps`` gradient steps of its own
   regularised logistic loss (1/n_k) Σ_{i∈k} ℓ(y_i wᵀz_i) + (λ/2)‖w‖² and sends its update
   Δ_k = w_k − w, clipped to L2 norm S (``clip``);
3. the server adds the clipped updates, adds N(0, (z·S)² I) and divides by the *expected*
   number of parties q·M: w ← w + η_server · (Σ_k Δ_k + noise)/(q·M).

Every party weighs the same (McMahan et al.'s estimator with equal weights), so one party
changes the sum by at most S (added or removed) or 2S (replaced).

**Privacy unit: one party** (all of its records). Under ``neighbouring="add/remove"`` (the
relation of McMahan et al., the default here) a party's presence moves the sum by ≤ S; under
``"replace-one"`` by ≤ 2S. z is calibrated by dp-accounting for T (Poisson-subsampled when
q < 1) Gaussian steps. The set of parties and their number M are public (M fixes the
divisor). Rows are clipped to a public bound inside ``fit``.

All local updates of a round are computed together: rows are sorted by party once, and each
local step is one product per row and one segment sum per party (``np.add.reduceat``).

References
----------
H. B. McMahan, D. Ramage, K. Talwar, L. Zhang. Learning differentially private recurrent
language models. ICLR 2018.
H. B. McMahan, E. Moore, D. Ramage, S. Hampson, B. Agüera y Arcas. Communication-efficient
learning of deep networks from decentralized data. AISTATS 2017 (FedAvg).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from .._validation import (
    BOOLEAN,
    CLASSES,
    EPSILON,
    POSITIVE,
    RANDOM_STATE,
    Number,
    StrOptions,
    check_random_state,
    validate_params,
)
from ..base import atomic_fit
from ._model import ClippedLinearClassifier, loss_gradient_weights
from .accounting import ACCOUNTANTS, NEIGHBOURING, Guarantee, gaussian_noise_multiplier

__all__ = ["DPFederatedAveragingClassifier", "stack_parties"]


def stack_parties(parties):
    """``(X, y, parties)`` from a list of per-party ``(X_k, y_k)``: the rows stacked, ``parties`` the index k."""
    if not isinstance(parties, (list, tuple)) or not parties:
        raise ValueError("parties must be a non-empty list of (X_k, y_k) pairs")
    Xs, ys, ids = [], [], []
    for k, pair in enumerate(parties):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"parties[{k}] must be a pair (X_k, y_k)")
        X_k, y_k = np.asarray(pair[0], dtype=float), np.asarray(pair[1])
        if X_k.ndim != 2 or y_k.ndim != 1 or X_k.shape[0] != y_k.shape[0] or X_k.shape[0] == 0:
            raise ValueError(
                f"parties[{k}]: X_k must be 2-D with as many rows (>= 1) as y_k, got {X_k.shape}, {y_k.shape}"
            )
        Xs.append(X_k)
        ys.append(y_k)
        ids.append(np.full(X_k.shape[0], k))
    if len({X.shape[1] for X in Xs}) != 1:
        raise ValueError("parties: every X_k must have the same number of features")
    return np.vstack(Xs), np.concatenate(ys), np.concatenate(ids)


class DPFederatedAveragingClassifier(ClippedLinearClassifier):
    """(ε, δ)-DP logistic regression by DP-FedAvg, private for one whole party.

    See :mod:`dpstack.alternatives.federated` for the algorithm. One of today's alternatives
    (a comparison for the multiparty paper's methods), not a method of the papers.

    Parameters
    ----------
    epsilon : float, default=1.0
        ε > 0; ``np.inf``: no noise (non-private FedAvg with clipped updates).
    delta : float, default=1e-5
        δ in (0, 1).
    n_rounds : int, default=50
        T.
    party_fraction : float, default=1.0
        q in (0, 1]: each party's probability of taking part in a round.
    clip : float, default=1.0
        S: every party's update is clipped to this L2 norm.
    local_steps : int, default=5
        Gradient steps per party per round (on all of its rows).
    local_learning_rate : float or None, default=None
        ``None`` uses 1/L, L = B²/4 + λ.
    server_learning_rate : float, default=1.0
    lam : float, default=0.01
        λ ≥ 0 of each party's local objective.
    norm_bound : float, default=1.0
        Public bound B on the rows (the constant feature included).
    neighbouring : {"add/remove", "replace-one"}, default="add/remove"
        Of one party.
    accountant : {"PLD", "RDP"}, default="PLD"
    fit_intercept : bool, default=False
    intercept_scaling : float or None, default=None
        s < B; ``None`` means B/2.
    random_state : None, int, SeedSequence or numpy.random.Generator
        Source of the sampling and the noise; not kept.
    classes : array-like of shape (2,) or None, default=None
        The public label set; ``None`` reads it from y, outside the guarantee.

    Attributes
    ----------
    classes_, coef_, intercept_
    n_parties_ : int
        M (public).
    noise_multiplier_ : float
        z = σ/S.
    n_iter_ : int
        T.
    guarantee_ : Guarantee
        Unit "one party".

    References
    ----------
    H. B. McMahan, D. Ramage, K. Talwar, L. Zhang. Learning differentially private recurrent
    language models. ICLR 2018.
    """

    _parameter_constraints = {
        "epsilon": EPSILON,
        "delta": [Number(Real, 0, 1, closed="neither", desc="a float in (0, 1)")],
        "n_rounds": [Number(Integral, 1, None, closed="left", desc="an int >= 1")],
        "party_fraction": [Number(Real, 0, 1, closed="right", desc="a float in (0, 1]")],
        "clip": POSITIVE,
        "local_steps": [Number(Integral, 1, None, closed="left", desc="an int >= 1")],
        "local_learning_rate": [None, *POSITIVE],
        "server_learning_rate": POSITIVE,
        "lam": [Number(Real, 0, np.inf, closed="left", desc="a finite float >= 0")],
        "norm_bound": POSITIVE,
        "neighbouring": [StrOptions(set(NEIGHBOURING))],
        "accountant": [StrOptions(set(ACCOUNTANTS))],
        "fit_intercept": BOOLEAN,
        "intercept_scaling": [None, *POSITIVE],
        "random_state": RANDOM_STATE,
        "classes": CLASSES,
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        n_rounds=50,
        party_fraction=1.0,
        clip=1.0,
        local_steps=5,
        local_learning_rate=None,
        server_learning_rate=1.0,
        lam=0.01,
        norm_bound=1.0,
        neighbouring="add/remove",
        accountant="PLD",
        fit_intercept=False,
        intercept_scaling=None,
        random_state=None,
        classes=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.n_rounds = n_rounds
        self.party_fraction = party_fraction
        self.clip = clip
        self.local_steps = local_steps
        self.local_learning_rate = local_learning_rate
        self.server_learning_rate = server_learning_rate
        self.lam = lam
        self.norm_bound = norm_bound
        self.neighbouring = neighbouring
        self.accountant = accountant
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.random_state = random_state
        self.classes = classes

    @atomic_fit
    def fit(self, X, y, parties):
        """Run T rounds of DP-FedAvg; ``parties[i]`` names the party of row i. Returns self."""
        validate_params(self)
        self._scaling()
        q = float(self.party_fraction)
        z = gaussian_noise_multiplier(
            self.epsilon, self.delta, self.n_rounds, q, neighbouring=self.neighbouring, accountant=self.accountant
        )
        X, y_signed, classes, from_data = self._checked_data(X, y)
        parties = np.asarray(parties)
        if parties.shape != (X.shape[0],):
            raise ValueError(f"parties must have one entry per row ({X.shape[0]}), got shape {parties.shape}")
        _, party = np.unique(parties, return_inverse=True)
        order = np.argsort(party, kind="stable")
        Z, y_signed, party = self._design(X)[order], y_signed[order], party[order]
        counts = np.bincount(party)
        w = self._rounds(Z, y_signed, party, counts, z, q, check_random_state(self.random_state))
        self.n_features_in_ = X.shape[1]
        self._set_release(w, classes)
        self.n_parties_ = int(counts.size)
        self.noise_multiplier_ = z
        self.n_iter_ = int(self.n_rounds)
        if math.isinf(self.epsilon):
            self.guarantee_ = Guarantee(math.inf, 0.0, self.neighbouring, "one party", "none", ())
        else:
            self.guarantee_ = Guarantee(
                float(self.epsilon),
                float(self.delta),
                self.neighbouring,
                "one party",
                self.accountant,
                self._assumptions(from_data, "the set of parties and their number M are public"),
            )
        return self

    def _rounds(self, Z, y, party, counts, z, q, rng):
        M, d = counts.size, Z.shape[1]
        lam, S = float(self.lam), float(self.clip)
        eta = (
            float(self.local_learning_rate)
            if self.local_learning_rate is not None
            else 1.0 / (float(self.norm_bound) ** 2 / 4.0 + lam)
        )
        w = np.zeros(d)
        for _ in range(int(self.n_rounds)):
            if q < 1.0:
                taking_part = rng.random(M) < q
                rows = taking_part[party]
                Zr, yr, n_k = Z[rows], y[rows], counts[taking_part]
                local = np.repeat(np.arange(n_k.size), n_k)
            else:
                Zr, yr, n_k, local = Z, y, counts, party
            total = np.zeros(d)
            if n_k.size:
                starts = np.concatenate([[0], np.cumsum(n_k)[:-1]])
                W = np.tile(w, (n_k.size, 1))
                for _ in range(int(self.local_steps)):
                    r = loss_gradient_weights(np.einsum("ij,ij->i", Zr, W[local]), yr)
                    G = np.add.reduceat(r[:, None] * Zr, starts, axis=0) / n_k[:, None] + lam * W
                    W -= eta * G
                updates = W - w
                norms = np.sqrt(np.einsum("ij,ij->i", updates, updates))
                too_long = norms > S
                updates[too_long] *= (S / norms[too_long])[:, None]
                total = updates.sum(axis=0)
            if z > 0:
                total += z * S * rng.standard_normal(d)
            w = w + float(self.server_learning_rate) * total / (q * M)
        return w
