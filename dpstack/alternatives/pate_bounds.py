"""PATE's data-dependent Rényi bound for GNMax — a diagnostic, never a released guarantee.

Papernot et al. (2018) bound the privacy loss of one GNMax answer by how clear the vote was:
when the plurality class wins by a wide margin, the noisy argmax almost never differs from
it, and the Rényi divergence between neighbouring vote histograms is far smaller than the
data-independent λ/σ² (:func:`dpstack.alternatives.gnmax_epsilon`). Two steps, written here
from the paper's statements:

* **Proposition 7.** With noise N(0, σ²) on every count, the probability that the noisy
  argmax is not the plurality class i* is at most q = Σ_{i ≠ i*} ½ erfc((n_{i*} − n_i)/(2σ)),
  i.e. Σ Φ(−(n_{i*} − n_i)/(√2 σ)) (capped at 1 − 1/K).
* **Theorem 6 with Proposition 10's orders.** A mechanism that is (μ₁, ε₁)- and (μ₂, ε₂)-RDP
  (GNMax: ε(μ) = μ/σ²) and returns i* with probability at least 1 − q has, at every order
  λ < μ₁, Rényi divergence at most (1/(λ−1)) log((1−q) A^{λ−1} + q B^{λ−1}) with
  A = (1−q)/(1 − (q e^{ε₂})^{(μ₂−1)/μ₂}) and B = e^{ε₁}/q^{1/(μ₁−1)}, provided
  q ≤ e^{(μ₂−1)ε₂}/(μ₁/(μ₁−1) · μ₂/(μ₂−1))^{μ₂}. Proposition 10 takes μ₂ = σ√(log 1/q),
  μ₁ = μ₂ + 1; where the conditions fail the data-independent λ/σ² is kept.

**Why this is only a diagnostic.** The bound is a function of the votes, which are computed
from the private data: publishing it (or choosing σ by it) leaks. The paper releases it only
after a smooth-sensitivity analysis of the bound itself; none is done here. The released
guarantee of a GNMax run is the data-independent one.

Reference
---------
N. Papernot, S. Song, I. Mironov, A. Raghunathan, K. Talwar, Ú. Erlingsson. Scalable private
learning with PATE. ICLR 2018 (Proposition 7, Theorem 6, Proposition 10).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, logsumexp

__all__ = ["RDP_ORDERS", "gnmax_log_q", "gnmax_rdp_data_dependent", "rdp_to_epsilon", "gnmax_epsilon_data_dependent"]

#: the Rényi orders λ the bounds are evaluated at (those of dp-accounting's RDP accountant)
RDP_ORDERS = np.concatenate([np.linspace(1.01, 8, num=50), np.arange(8, 64), np.linspace(65, 512, num=8)])


def gnmax_log_q(votes, sigma):
    """log q per query (Proposition 7): log of the bound on Pr[noisy argmax ≠ plurality class].

    Parameters
    ----------
    votes : array-like of shape (n_queries, n_classes)
    sigma : float > 0

    Returns
    -------
    ndarray of shape (n_queries,)
    """
    V = np.atleast_2d(np.asarray(votes, dtype=float))
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma!r}")
    K = V.shape[1]
    top = V.max(axis=1, keepdims=True)
    winner = np.argmax(V, axis=1)
    gaps = (top - V) / (math.sqrt(2.0) * float(sigma))
    terms = log_ndtr(-gaps)
    terms[np.arange(V.shape[0]), winner] = -np.inf  # the plurality class itself is not an error
    return np.minimum(logsumexp(terms, axis=1), math.log1p(-1.0 / K))


def _log1mexp(x):
    """log(1 − eˣ) for x < 0."""
    return np.where(x < -math.log(2.0), np.log1p(-np.exp(x)), np.log(-np.expm1(x)))


def gnmax_rdp_data_dependent(log_q, sigma, orders=RDP_ORDERS):
    """Per-query Rényi divergence bound at each order (Theorem 6, Proposition 10), shape (n_queries, n_orders).

    Never above the data-independent λ/σ², which is kept wherever the theorem's conditions fail.
    """
    log_q = np.atleast_1d(np.asarray(log_q, dtype=float))
    orders = np.asarray(orders, dtype=float)
    var = float(sigma) ** 2
    independent = np.broadcast_to(orders / var, (log_q.size, orders.size)).copy()
    for j, lq in enumerate(log_q):
        if not np.isfinite(lq):  # q = 0: the answer is certain; the bound tends to 0
            independent[j] = 0.0
            continue
        mu2 = math.sqrt(var * -lq)
        mu1 = mu2 + 1.0
        if mu2 <= 1.0:
            continue
        eps1, eps2 = mu1 / var, mu2 / var
        # the theorem's condition on q, and q e^{ε₂} < 1 so that A is finite and positive
        limit = (mu2 - 1.0) * eps2 - mu2 * (math.log1p(1.0 / (mu1 - 1.0)) + math.log1p(1.0 / (mu2 - 1.0)))
        if not (lq <= limit and -lq > eps2):
            continue
        mask = orders < mu1
        lam = orders[mask]
        log_1q = float(_log1mexp(lq))
        log_a = (lam - 1.0) * (log_1q - float(_log1mexp((lq + eps2) * (1.0 - 1.0 / mu2))))
        log_b = (lam - 1.0) * (eps1 - lq / (mu1 - 1.0))
        bound = np.logaddexp(log_1q + log_a, lq + log_b) / (lam - 1.0)
        independent[j, mask] = np.minimum(independent[j, mask], bound)
    return independent


def rdp_to_epsilon(rdp, delta, orders=RDP_ORDERS):
    """(ε, δ) from RDP curve ``rdp`` at ``orders``: min over λ of rdp(λ) + log1p(−1/λ) − (log δ + log λ)/(λ − 1).

    The conversion of dp-accounting's RDP accountant (Canonne, Kamath & Steinke 2020, Proposition 12).
    """
    orders = np.asarray(orders, dtype=float)
    rdp = np.asarray(rdp, dtype=float)
    eps = rdp + np.log1p(-1.0 / orders) - (math.log(delta) + np.log(orders)) / (orders - 1.0)
    return float(max(np.min(eps), 0.0))


def gnmax_epsilon_data_dependent(votes, sigma, delta, orders=RDP_ORDERS):
    """ε at ``delta`` of GNMax answers to ``votes`` by the data-dependent RDP bound, and by the data-independent one.

    Returns
    -------
    (float, float)
        (data-dependent ε, data-independent ε), both by RDP with the same orders and conversion.
        The first is a function of the private votes: a diagnostic, not a guarantee.
    """
    V = np.atleast_2d(np.asarray(votes, dtype=float))
    if float(sigma) == 0.0:
        return math.inf, math.inf
    rdp = gnmax_rdp_data_dependent(gnmax_log_q(V, sigma), sigma, orders).sum(axis=0)
    independent = V.shape[0] * np.asarray(orders, dtype=float) / float(sigma) ** 2
    return rdp_to_epsilon(rdp, delta, orders), rdp_to_epsilon(independent, delta, orders)
