"""Auditing the privacy claims: exact privacy loss, sensitivity and statistical checks.

Every private mechanism in dpstack states an ε and a privacy unit. This
subpackage checks those claims instead of trusting them:

* :func:`exact_privacy_loss` — log p(w | D) − log p(w | D') of objective
  perturbation (PLR, PLR-FS), exactly, at any output w;
* :func:`epsilon_lower_bound` — a statistical lower bound on ε from a
  threshold test on repeated runs (Clopper–Pearson intervals);
* :func:`audit_mechanisms` — both checks for every mechanism, as a table.
"""
from .exact import exact_privacy_loss, max_privacy_loss, mechanism_blocks, output_vector, sample_outputs
from .neighbours import changed_rows, worst_case_neighbours

__all__ = [
    "changed_rows",
    "exact_privacy_loss",
    "max_privacy_loss",
    "mechanism_blocks",
    "output_vector",
    "sample_outputs",
    "worst_case_neighbours",
]
