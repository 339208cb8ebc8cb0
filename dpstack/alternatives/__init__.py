"""Today's alternatives: modern private learners to compare the papers' methods against.

These are **not** the methods of the three papers (PST, PPTL, MPL) that dpstack implements;
they are the private learners a reader would reach for today, implemented with numpy for
binary logistic regression on rows clipped to a public norm bound, so that the papers'
methods can be compared with them on the same data. Their (ε, δ) accounting is done by
Google's dp-accounting library (RDP and PLD accountants over ``dp_event`` objects); each
fitted estimator records what it guarantees in ``guarantee_``, a :class:`Guarantee`
(ε, δ, neighbouring relation, privacy unit, accountant, assumptions), not in the pure-ε
:class:`~dpstack.PrivacyLedger` of the papers' estimators.

What each one guarantees:

============================================  ===========  ==============  ==========================
method                                        guarantee    neighbouring    unit
============================================  ===========  ==============  ==========================
:class:`NoisyGradientDescentClassifier`       (ε, δ)       replace-one*    one sample
:class:`NoisySGDClassifier`                   (ε, δ)       replace-one*    one sample
:class:`OutputPerturbationClassifier`         pure ε       replace-one     one sample
:func:`gnmax_aggregate` (PATE GNMax)          (ε, δ)       replace-one     one teacher (one sample)
:class:`DPFederatedAveragingClassifier`       (ε, δ)       add/remove*     one party
============================================  ===========  ==============  ==========================

\\* the default; ``neighbouring`` selects the other relation. Replace-one (one record
replaced, n fixed) is the papers' relation; add/remove (one record added or removed) is
the relation of the standard DP-SGD and DP-FedAvg analyses. For a Gaussian sum of
contributions clipped to C, replace-one costs sensitivity 2C, add/remove C. A pure ε
guarantee is (ε, 0)-DP (:func:`pure_to_approx`); the papers' methods are pure ε-DP,
replace-one, one sample (one party for MPL).

Tuning is not free: choosing hyper-parameters by looking at private results spends privacy
too; :func:`repeat_and_select_epsilon` (Papernot & Steinke 2022) and
:func:`liu_talwar_epsilon` (Liu & Talwar 2019) give its cost.
"""

from .accounting import (
    Guarantee,
    epsilon_of,
    gaussian_event,
    gaussian_noise_multiplier,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    liu_talwar_epsilon,
    pure_to_approx,
    repeat_and_select_epsilon,
)
from .federated import DPFederatedAveragingClassifier, stack_parties
from .gradient import NoisyGradientDescentClassifier, NoisySGDClassifier, clipped_logistic_gradient_sum
from .output import OutputPerturbationClassifier, output_perturbation_sensitivity
from .voting import gnmax_aggregate, gnmax_epsilon, gnmax_guarantee, gnmax_sigma, vote_counts

__all__ = [
    "DPFederatedAveragingClassifier",
    "Guarantee",
    "NoisyGradientDescentClassifier",
    "NoisySGDClassifier",
    "OutputPerturbationClassifier",
    "clipped_logistic_gradient_sum",
    "epsilon_of",
    "gaussian_event",
    "gaussian_noise_multiplier",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "gnmax_aggregate",
    "gnmax_epsilon",
    "gnmax_guarantee",
    "gnmax_sigma",
    "liu_talwar_epsilon",
    "output_perturbation_sensitivity",
    "pure_to_approx",
    "repeat_and_select_epsilon",
    "stack_parties",
    "vote_counts",
]
