"""Auditing the privacy claims: the law of the noise, exact privacy loss, statistical checks.

Every private mechanism in dpstack states an ε and a privacy unit. This subpackage checks
those claims instead of trusting them. Every check drives the estimator's public ``fit`` and
reads only what the fitted object releases (:mod:`.protocol` states what an estimator must
offer, so a user's own mechanism can be audited the same way):

* :func:`noise_law_test` — many real fits; each noise vector is read back from the release
  and the data (:func:`recover_noise`: stationarity of the released weights for objective
  perturbation, ``coef_`` minus the audit's own minimiser :func:`mpl_unperturbed` for
  output perturbation; for SimComb's target, stationarity with the centre (1 − η)·w_s
  computed from the released source) and tested against the claimed law,
  ‖b‖ ~ Gamma(d, scale) with the scale recomputed from the public parameters, direction
  uniform; :func:`power_table` shows that it rejects a √d or 2× scale error;
* :func:`exact_privacy_loss` — log p(w | D) − log p(w | D') of objective perturbation
  (PLR, PLR-FS with K blocks), exactly, at any output w;
* :func:`output_perturbation_audit` — the same for output perturbation (MPL vote, soft,
  avg; two or more classes): law of the noise, sensitivity, exact maximum loss, ε_lo;
* :func:`epsilon_lower_bound` / :func:`audit_release` — a statistical lower bound on ε
  from a threshold test on repeated runs (Clopper–Pearson intervals); the latter treats
  any :class:`PrivateMechanism` as a black box;
* :func:`composition_noise_identity`, :func:`composition_post_processing`,
  :func:`composition_checks` — a level of a composed model is a function of its own part
  and the earlier release;
* :func:`worst_case_neighbours`, :func:`adversarial_case`, :func:`party_neighbours`
  — the neighbouring datasets the checks are run on;
* :func:`adversary_experiment` — what an adversary holding a fitted object learns;
* :func:`audit_estimator` — the one public entry point: every check below and those of
  :mod:`dpstack.audit.checks` (seeding, the released function, public attributes, the
  ledger's ε, neighbours over the privacy unit, a black-box lower bound on the whole release,
  private tuning, composition per domain) on any auditable estimator, as an
  :class:`AuditReport`;
* :func:`audit_mechanisms` / :func:`audit_mutants` — every mechanism (and every
  deliberately broken mechanism of :mod:`dpstack.audit.mutants`) as one table;
  :mod:`dpstack.audit.stored` keeps the book's tables (1,000 real fits per case) as CSV with
  their provenance.
"""

from .adversary import adversary_experiment, adversary_guess, adversary_table
from .checks import AuditReport, audit_estimator, rebuild_from_release, release_numbers, seed_findings
from .exact import (
    exact_privacy_loss,
    exact_privacy_loss_terms,
    max_privacy_loss,
    mechanism_blocks,
    output_vector,
    register_density,
    sample_outputs,
    solve_perturbed_batch,
)
from .laws import (
    law_pvalues,
    mpl_unperturbed,
    noise_law_test,
    recover_noise,
    register_noise_recovery,
    stationarity_noise,
)
from .levels import changed_levels, composition_checks, mechanism_levels
from .neighbours import changed_rows, worst_case_neighbours
from .output import output_perturbation_audit, party_neighbours
from .protocol import (
    NoiseBlock,
    PrivateMechanism,
    audit_release,
    claimed_epsilon,
    ledger_view,
    privacy_unit,
    release_of,
    release_vector,
    split_of,
)
from .report import (
    audit_data,
    audit_level,
    audit_mechanisms,
    audit_mutants,
    composition_noise_identity,
    composition_post_processing,
    law_data,
    loss_distribution,
    power_table,
)
from .statistical import EpsilonLowerBound, clopper_pearson, epsilon_lower_bound, epsilon_lower_bound_from_scores
from .worst_case import AdversarialCase, adversarial_case, block_loss_table

__all__ = [
    "AuditReport",
    "audit_estimator",
    "ledger_view",
    "rebuild_from_release",
    "release_numbers",
    "seed_findings",
    "adversary_experiment",
    "adversary_guess",
    "adversary_table",
    "power_table",
    "split_of",
    "register_density",
    "NoiseBlock",
    "PrivateMechanism",
    "audit_release",
    "claimed_epsilon",
    "composition_noise_identity",
    "composition_post_processing",
    "law_data",
    "law_pvalues",
    "mpl_unperturbed",
    "noise_law_test",
    "privacy_unit",
    "recover_noise",
    "register_noise_recovery",
    "release_of",
    "release_vector",
    "stationarity_noise",
    "AdversarialCase",
    "EpsilonLowerBound",
    "adversarial_case",
    "audit_data",
    "audit_level",
    "audit_mechanisms",
    "audit_mutants",
    "block_loss_table",
    "changed_levels",
    "changed_rows",
    "clopper_pearson",
    "composition_checks",
    "epsilon_lower_bound",
    "epsilon_lower_bound_from_scores",
    "exact_privacy_loss",
    "exact_privacy_loss_terms",
    "max_privacy_loss",
    "mechanism_blocks",
    "loss_distribution",
    "mechanism_levels",
    "output_perturbation_audit",
    "output_vector",
    "party_neighbours",
    "sample_outputs",
    "solve_perturbed_batch",
    "worst_case_neighbours",
]
