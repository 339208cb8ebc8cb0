"""Learning privately from multiparty data (Hamm, Cao & Belkin, ICML 2016).

The privacy unit of everything here is **one whole party**: neighbouring
datasets differ in all the samples of one party (Section 2.2 of the paper).
A fitted :class:`MultipartyPrivateClassifier` carries its release only (the
perturbed model, the public label set, the public sensitivity and the ledger);
the non-private model, the parties' local models and the vote targets are kept
only with ``diagnostics=True``, and such an object is not private.

* :mod:`.logistic` — the batched local solver and the soft-target global solver;
* :mod:`.estimator` — :class:`MultipartyPrivateClassifier` (soft, vote, avg,
  batch, indiv), the sensitivities, the auxiliary/party split;
* :mod:`.theory` — Theorems 1, 3, 4 and Lemma 2 checked numerically.
"""

from .estimator import METHODS, MultipartyPrivateClassifier, fit_methods, mpl_sensitivity, split_auxiliary_and_parties
from .logistic import fit_local_logistic, fit_soft_target_logistic, pad_parties
from .theory import (
    excess_risk_simulation,
    lemma2_simulation,
    make_synthetic_multiparty,
    sensitivity_by_construction,
    theorem4_bound,
)

__all__ = [
    "METHODS",
    "MultipartyPrivateClassifier",
    "excess_risk_simulation",
    "fit_local_logistic",
    "fit_methods",
    "fit_soft_target_logistic",
    "lemma2_simulation",
    "make_synthetic_multiparty",
    "mpl_sensitivity",
    "pad_parties",
    "sensitivity_by_construction",
    "split_auxiliary_and_parties",
    "theorem4_bound",
]
