"""Deliberately broken mechanisms, each with one privacy bug the audit must catch. Never use them.

Each class is the real estimator with exactly one privacy bug injected, the
way such bugs happen in practice (a wrong calibration, a data-dependent
scaling). They live here, not as switches on the real estimators, so the
book's audit chapter and the tests can show the same mutants being caught.

* :class:`TenfoldEpsilonPLR` — noise (and Δ) calibrated for 10ε, ε claimed.
* :class:`MaxNormScaledPLR` — rows divided by the private data's largest norm
  instead of clipped to the public bound (:ref:`erratum 5 <erratum-public-bound>`).
* :class:`SkippedDeltaPLR` — the Δ > 0 branch skipped: when ε' ≤ 0 it keeps
  ε_noise = ε/2 but adds no extra ridge, so the Jacobian is never paid for.
* :class:`PPTLEpsilonFeatureSplit` — PPTL Algorithm 3 step 6 as printed:
  ε^(k) = ε instead of ε' when ε' > 0 (:ref:`erratum 2 <erratum-pptl-epsilon-k>`).
* :class:`VoteWithSoftScale` — MPL majority-vote ERM released with the
  soft-label noise scale 2/(Mλε) instead of 2/(λε).

The following keep every attribute truthful (calibration, Δ, ledger, sensitivity):
only what ``fit`` computes is wrong, so only an audit that drives ``fit`` and reads the
release can see them.

* :class:`SqrtDNoisePLR` — the noise vector divided by √d inside ``fit``.
* :class:`DoubleEpsilonNoisePLR` — the noise norm halved inside ``fit`` (a 2× scale
  error: noise for 2ε), the power check's smaller error.
* :class:`UnusedDeltaPLR` — Δ computed and reported, but the solver is called with Δ = 0.
* :class:`ClippedThenInterceptPLR` — the constant feature appended *after* clipping the
  rows to the full bound, so the augmented rows exceed it.
* :class:`TenfoldEpsilonNoiseMPL` — MPL ``coef_`` released with noise calibrated for 10ε
  while ``sensitivity_``, ``noise_scale_`` and the ledger state the truth.
* :class:`HighLevelOnLowDataPST` — PST whose high level is trained on D_l's
  meta-features (each D_l record is used twice: cost 2ε) while its index attributes
  still describe the disjoint split.
* :class:`UnperturbedCentreSimComb` — SimComb whose target PLR is centred at (1 − η) times
  the *non-private* source minimiser instead of the released w_s: the target release then
  carries the source data without noise (ε_s is not what it claims).
* :class:`SqrtDNoiseSimComb`, :class:`DoubleEpsilonNoiseSimComb` — SimComb whose *target*
  noise is divided by √d or by 2 inside ``fit`` (source genuine, attributes truthful): the
  power check of the SimComb noise read-back.

The blind spots of a calibration audit, one mutant each (every calibration is genuine; what is
wrong is around the noise). :func:`dpstack.audit.audit_estimator` must catch each of them:

* :class:`DefaultSeedPLR` — ``random_state=None`` draws from seed 0.
* :class:`SeedKeepingPLR` — fresh entropy, but the seed is kept in the fitted object.
* :class:`SharedSeedPST` — every level of PST gets the same seed.
* :class:`SharedNoiseMethodsMPL` — its ``fit_methods`` gives every method the same seed, so
  soft and avg draw one noise vector.
* :class:`UnperturbedPredictPLR` — ``predict`` uses the minimiser without noise.
* :class:`DataBoundPLR` — the norm bound (and with it the calibration) is the data's largest norm.
* :class:`DataImportancePST` — PST-F importances q_k computed from the private data.
* :class:`SourceEpsilonTargetPPTL` — PPTL-FS whose target levels are calibrated with ε_s while the
  ledger says ε_t.
* :class:`PartySizeMPL` — MPL whose noise scale counts parties from the smallest party's size.
* :class:`NoisyMeanPLR` — PLR that also releases the feature means with a little noise.
* :class:`NoHalfSelectionTuning` — private tuning whose exponential mechanism forgets the 2 in
  exp(ε·u/(2Δ)).

The blind spots an independent review found in that audit (each caught by the check named):

* :class:`BootstrapSplitPST` — D_l and D_h drawn with replacement (``split``).
* :class:`StratifiedSplitPST` — the split stratified by the private labels (``split``).
* :class:`KeptSolutionPLR` — the unperturbed minimiser kept in a private attribute (``private``).
* :class:`DataNormNoisePLR` — the noise scale from the data's largest norm when below the bound
  (``canaries``).
* :class:`LinfClipPLR` — each coordinate clipped to [−B, B] instead of the row's norm (``canaries``).
* :class:`Float32NoisePLR` — the noise drawn in single precision (``law``: its precision test).
* :class:`LaplacePerCoordinatePLR` — Laplace noise per coordinate instead of isotropic (``law``).
* :class:`SizeWeightedAverageMPL` — MPL avg weighted by party size (``canaries``: parties of
  unequal sizes).
* :class:`TrainingUtilityTuning` — private tuning that scores the candidates on their training rows
  (``tuning``: the selection recomputed from the candidates' releases and the held-out part).
* :class:`GaussianNoisePLR`, :class:`GammaShapePLR` — a norm law with the claimed mean but another
  shape (``law``: its shape tests; low power at the default profile, see the book's power table).
"""

from __future__ import annotations

import dataclasses
import functools
from contextlib import contextmanager

import numpy as np

from dpstack import stacking, tuning
from dpstack._validation import check_random_state
from dpstack.accounting import PrivacyLedger

from .. import linear
from ..linear import FeatureSplitLogisticRegression, PrivateLogisticRegression
from ..mechanisms import clip_rows, feature_split_calibration, objective_perturbation_calibration
from ..multiparty import estimator as mpl_estimator
from ..multiparty.estimator import MultipartyPrivateClassifier, mpl_sensitivity
from ..stacking import PrivateStackingClassifier, meta_features
from ..transfer import PrivateTransferStacking, SimComb
from ..tuning import PrivateParameterTuning

__all__ = [
    "TenfoldEpsilonPLR",
    "MaxNormScaledPLR",
    "SkippedDeltaPLR",
    "PPTLEpsilonFeatureSplit",
    "VoteWithSoftScale",
    "SqrtDNoisePLR",
    "DoubleEpsilonNoisePLR",
    "UnusedDeltaPLR",
    "ClippedThenInterceptPLR",
    "TenfoldEpsilonNoiseMPL",
    "HighLevelOnLowDataPST",
    "UnperturbedCentreSimComb",
    "SqrtDNoiseSimComb",
    "DoubleEpsilonNoiseSimComb",
    "DefaultSeedPLR",
    "SeedKeepingPLR",
    "SharedSeedPST",
    "SharedNoiseMethodsMPL",
    "UnperturbedPredictPLR",
    "DataBoundPLR",
    "DataImportancePST",
    "SourceEpsilonTargetPPTL",
    "PartySizeMPL",
    "NoHalfSelectionTuning",
    "NoisyMeanPLR",
    "BootstrapSplitPST",
    "StratifiedSplitPST",
    "KeptSolutionPLR",
    "DataNormNoisePLR",
    "LinfClipPLR",
    "GaussianNoisePLR",
    "GammaShapePLR",
    "Float32NoisePLR",
    "LaplacePerCoordinatePLR",
    "scaled_noise",
    "TrainingUtilityTuning",
    "SizeWeightedAverageMPL",
    "MUTANTS",
]


@contextmanager
def _swapped(module, name, replacement):
    original = getattr(module, name)
    setattr(module, name, replacement)
    try:
        yield
    finally:
        setattr(module, name, original)


def _fit_with(module, name, make):
    """Class decorator: the class's ``fit`` is its base's, run with ``module.name`` replaced by ``make()``
    (built at each fit, so a replacement that wraps the original wraps whatever is in place then)."""

    def decorate(cls):
        base_fit = cls.fit

        @functools.wraps(base_fit)
        def fit(self, *args, **kwargs):
            with _swapped(module, name, make()):
                return base_fit(self, *args, **kwargs)

        cls.fit = fit
        return cls

    return decorate


def _tenfold(epsilon, n, lam, norm_bound=1.0):
    cal = objective_perturbation_calibration(10 * epsilon, n, lam, norm_bound)
    return dataclasses.replace(cal, epsilon=epsilon)


def _skipped_delta(epsilon, n, lam, norm_bound=1.0):
    cal = objective_perturbation_calibration(epsilon, n, lam, norm_bound)
    return dataclasses.replace(cal, delta=0.0) if cal.branch == "delta>0" else cal


def _pptl_epsilon_k(epsilon, n, lam, importance):
    cal = feature_split_calibration(epsilon, n, lam, importance)
    if cal.branch != "delta=0":
        return cal
    eps_k = np.full(cal.epsilon_k.shape, float(epsilon))
    return dataclasses.replace(cal, epsilon_k=eps_k, noise_scale_k=np.where(cal.importance > 0, 2.0 / eps_k, 0.0))


@_fit_with(linear, "objective_perturbation_calibration", lambda: _tenfold)
class TenfoldEpsilonPLR(PrivateLogisticRegression):
    """MUTANT: PLR that claims ε but calibrates its noise and Δ for 10ε."""


@_fit_with(linear, "objective_perturbation_calibration", lambda: _skipped_delta)
class SkippedDeltaPLR(PrivateLogisticRegression):
    """MUTANT: PLR whose ε' ≤ 0 branch keeps ε/2 for the noise but adds no Δ."""


class MaxNormScaledPLR(PrivateLogisticRegression):
    """MUTANT: PLR that divides the rows by the largest norm in the data it is given."""

    def _design_matrix(self, X):
        X = np.asarray(X, dtype=float)
        largest = np.sqrt(np.einsum("ij,ij->i", X, X)).max()
        return clip_rows(X * (float(self.norm_bound) / largest), float(self.norm_bound))


@_fit_with(linear, "feature_split_calibration", lambda: _pptl_epsilon_k)
class PPTLEpsilonFeatureSplit(FeatureSplitLogisticRegression):
    """MUTANT: PLR-FS with PPTL Alg. 3's ε^(k) = ε (instead of ε') when ε' > 0."""


def _soft_sensitivity_for_vote(method, *args, **kwargs):
    return mpl_sensitivity("soft" if method == "vote" else method, *args, **kwargs)


@_fit_with(mpl_estimator, "mpl_sensitivity", lambda: _soft_sensitivity_for_vote)
class VoteWithSoftScale(MultipartyPrivateClassifier):
    """MUTANT: majority-vote ERM released with the soft-label sensitivity 2/(Mλ).

    Construct it with ``method="vote"`` (it inherits the real constructor, so any
    parameter the real estimator gains is inherited too).
    """


def _noise_divided(factor_of_dim):
    original = linear.isotropic_noise

    def noise(dim, scale, random_state=None, size=None):
        return original(dim, scale, random_state, size) / factor_of_dim(dim)

    return noise


@_fit_with(linear, "isotropic_noise", lambda: _noise_divided(np.sqrt))
class SqrtDNoisePLR(PrivateLogisticRegression):
    """MUTANT: PLR whose noise vector is divided by √d inside ``fit`` (attributes truthful)."""


@_fit_with(linear, "isotropic_noise", lambda: _noise_divided(lambda dim: 2.0))
class DoubleEpsilonNoisePLR(PrivateLogisticRegression):
    """MUTANT: PLR whose noise norm is halved inside ``fit`` (noise for 2ε; attributes truthful)."""


def _solver_without_delta():
    original = linear.minimize_perturbed_logistic

    def solve(*args, **kwargs):
        kwargs["delta"] = 0.0
        return original(*args, **kwargs)

    return solve


@_fit_with(linear, "minimize_perturbed_logistic", _solver_without_delta)
class UnusedDeltaPLR(PrivateLogisticRegression):
    """MUTANT: PLR that computes and reports Δ but solves the problem without it."""


class ClippedThenInterceptPLR(PrivateLogisticRegression):
    """MUTANT: PLR with ``fit_intercept=True`` that clips the rows to B and *then* appends
    the constant s, so the augmented rows have norm up to √(B² + s²) > B."""

    def _design_matrix(self, X):
        bound, s = self._scaling()
        Xc = clip_rows(X, bound)
        if not self.fit_intercept:
            return Xc
        return np.hstack([Xc, np.full((Xc.shape[0], 1), s)])


def _tenfold_mpl_noise():
    original = mpl_estimator.isotropic_noise
    return lambda dim, scale, random_state=None, size=None: original(dim, scale / 10.0, random_state, size)


@_fit_with(mpl_estimator, "isotropic_noise", _tenfold_mpl_noise)
class TenfoldEpsilonNoiseMPL(MultipartyPrivateClassifier):
    """MUTANT: MPL whose released ``coef_`` carries noise calibrated for 10ε; the
    sensitivity, noise scale and ledger it reports are the true ones."""


class HighLevelOnLowDataPST(PrivateStackingClassifier):
    """MUTANT: PST whose high level is trained on the meta-features of D_l (with D_l's
    labels) instead of D_h; the split it reports still describes the disjoint parts.
    Every D_l record is used by both levels: the release costs 2ε."""

    def _high_level_rows(self, parts):  # the high level's rows, where the estimator names them
        return parts.low

    def _validate_fit_inputs(self, X, y):
        out = super()._validate_fit_inputs(X, y)
        if not hasattr(PrivateStackingClassifier, "_high_level_rows"):
            self._mutant_data = (out[0], out[1])
        return out

    def _fit_high(self, M, y_signed, epsilon, rng):  # estimators that fit the high level in _fit_high
        X, ys = self._mutant_data
        del self._mutant_data
        Zl = self._design(X)[self.low_index_]
        return super()._fit_high(
            meta_features(self._low_margins(Zl), self.meta_features), ys[self.low_index_], epsilon, rng
        )


class UnperturbedCentreSimComb(SimComb):
    """MUTANT: SimComb whose target PLR is centred at (1 − η)·(the source minimiser *without*
    noise) — the released w_s and every attribute are the genuine ones."""

    def fit(self, X, y, X_source=None, y_source=None):
        if X_source is None:
            raise ValueError("this mutant needs X_source, y_source at fit")
        self.fit_source(X_source, y_source)
        Xs = np.asarray(X_source, dtype=float)
        ys = np.where(np.asarray(y_source) == self.classes_[1], 1.0, -1.0)
        exact = self._plr(np.inf, self.lam_source, None, 0)
        exact.diagnostics = False
        self._exact_source_w = exact._fit_unchecked(self._rows(Xs, self.source_block_max_), ys).w_
        try:
            return super().fit(X, y)
        finally:
            del self._exact_source_w

    def _plr(self, epsilon, lam, w0, seed):
        if w0 is not None and hasattr(self, "_exact_source_w"):  # the target: the bug
            w0 = (1.0 - float(self.eta)) * self._exact_source_w
        return super()._plr(epsilon, lam, w0, seed)


class _TargetNoiseDividedSimComb(SimComb):
    _divide = staticmethod(lambda dim: 1.0)

    def fit(self, X, y, X_source=None, y_source=None):
        if X_source is not None:
            self.fit_source(X_source, y_source)  # the source is the genuine one
        with _swapped(linear, "isotropic_noise", _noise_divided(self._divide)):
            return super().fit(X, y)


class SqrtDNoiseSimComb(_TargetNoiseDividedSimComb):
    """MUTANT: SimComb whose target noise vector is divided by √d inside ``fit`` (attributes truthful)."""

    _divide = staticmethod(np.sqrt)


class DoubleEpsilonNoiseSimComb(_TargetNoiseDividedSimComb):
    """MUTANT: SimComb whose target noise norm is halved inside ``fit`` (noise for 2ε_t; attributes truthful)."""

    _divide = staticmethod(lambda dim: 2.0)


# ---------------------------------------------------------------------- blind spots of a calibration audit
class DefaultSeedPLR(PrivateLogisticRegression):
    """MUTANT: PLR that draws its noise from seed 0 when ``random_state`` is None."""

    def fit(self, X, y):
        if self.random_state is not None:
            return super().fit(X, y)
        self.random_state = 0
        try:
            return super().fit(X, y)
        finally:
            self.random_state = None


class SeedKeepingPLR(PrivateLogisticRegression):
    """MUTANT: PLR that draws a fresh seed but keeps it in the fitted object (``noise_seed_``)."""

    def fit(self, X, y):
        given = self.random_state
        seed = int(np.random.SeedSequence().generate_state(1)[0]) if given is None else given
        self.random_state = seed
        try:
            super().fit(X, y)
        finally:
            self.random_state = given
        self.noise_seed_ = seed
        return self


def _one_stream():
    original = stacking.spawn_streams
    return lambda random_state, n: original(random_state, 1) * int(n)


@_fit_with(stacking, "spawn_streams", _one_stream)
class SharedSeedPST(PrivateStackingClassifier):
    """MUTANT: PST whose low-level models all draw their noise from one stream (one seed for all)."""


class SharedNoiseMethodsMPL(MultipartyPrivateClassifier):
    """MUTANT: MPL whose methods draw from the given seed itself, not from a stream of their own:
    ``fit_methods`` with one seed gives soft and avg the same noise vector (the recorded old version)."""

    def _check_params(self):
        epsilon, lam, local_lam, _ = super()._check_params()

        return epsilon, lam, local_lam, check_random_state(self.random_state)

    @classmethod
    def fit_methods(cls, methods, X, y, parties, X_aux=None, **params):
        cache = {}
        return {m: cls(m, **params)._fit(X, y, parties, X_aux, cache) for m in methods}


class UnperturbedPredictPLR(PrivateLogisticRegression):
    """MUTANT: PLR whose ``predict`` / ``decision_function`` use the minimiser without noise (kept
    in a private attribute); the release itself is the genuine noisy one."""

    def fit(self, X, y):
        super().fit(X, y)
        exact = PrivateLogisticRegression(**dict(self.get_params(), epsilon=np.inf, random_state=None)).fit(X, y)
        self._w_exact = exact.w_
        return self

    def _decision_function_unchecked(self, X):
        return self._design_matrix(X) @ self._w_exact


class DataBoundPLR(PrivateLogisticRegression):
    """MUTANT: PLR whose norm bound — and so its released calibration — is the data's largest row norm."""

    def fit(self, X, y):
        given = self.norm_bound
        self.norm_bound = float(np.linalg.norm(np.asarray(X, dtype=float), axis=1).max())
        try:
            return super().fit(X, y)
        finally:
            self.norm_bound = given


class DataImportancePST(PrivateStackingClassifier):
    """MUTANT: PST-F whose block importances q_k are the blocks' absolute correlations with the
    private labels (released in ``importance_``)."""

    def fit(self, X, y, low_level=None):
        Xa, ya = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
        groups = [np.asarray(g) for g in self.groups]
        corr = np.abs(np.corrcoef(np.column_stack([Xa, ya]), rowvar=False)[-1, :-1])
        q = np.array([corr[g].sum() for g in groups]) + 1e-3
        given = self.group_importance
        self.group_importance = list(q / q.sum())
        try:
            return super().fit(X, y, low_level)
        finally:
            self.group_importance = given


class SourceEpsilonTargetPPTL(PrivateTransferStacking):
    """MUTANT: PPTL-FS whose target levels are calibrated with ε_s while its ledger (and every
    other attribute of the outer model) states ε_t."""

    def fit(self, X, y, X_source=None, y_source=None, low_level=None):

        eps_t = self.epsilon_target
        if X_source is not None:
            self.fit_source(X_source, y_source)
        self.epsilon_target = self.epsilon_source
        try:
            super().fit(X, y, low_level=low_level)
        finally:
            self.epsilon_target = eps_t
        ledger = PrivacyLedger()
        for e in self.privacy_.entries:
            target = e.part.startswith("D_t") and not e.outside
            ledger.entries.append(dataclasses.replace(e, epsilon=float(eps_t)) if target else e)
        self.privacy_ = ledger
        return self


class PartySizeMPL(MultipartyPrivateClassifier):
    """MUTANT: MPL whose sensitivity (and noise) counts the parties as n / (smallest party's size)."""

    def fit(self, X, y, parties, X_aux=None, **kwargs):
        sizes = np.unique(np.asarray(parties), return_counts=True)[1]
        counted = int(np.asarray(y).size // sizes.min())

        def sensitivity(method, n_parties, *args, **kw):
            return mpl_sensitivity(method, counted, *args, **kw)

        with _swapped(mpl_estimator, "mpl_sensitivity", sensitivity):
            return super().fit(X, y, parties, X_aux, **kwargs)


def _doubled_selection():
    original = tuning.selection_probabilities
    return lambda utilities, epsilon, sensitivity=1.0: original(utilities, 2.0 * epsilon, sensitivity)


@_fit_with(tuning, "selection_probabilities", _doubled_selection)
class NoHalfSelectionTuning(PrivateParameterTuning):
    """MUTANT: private tuning whose exponential mechanism draws with P(g) ∝ exp(ε·u(g)/Δ) (the 2 of
    exp(ε·u(g)/(2Δ)) forgotten): the selection is 2ε-DP while the ledger says ε."""


class NoisyMeanPLR(PrivateLogisticRegression):
    """MUTANT: PLR that also releases the data's feature means (``feature_means_``) with a little
    Gaussian noise (σ = 0.01): a noisy part of the release that no calibration describes."""

    _release_attributes = PrivateLogisticRegression._release_attributes + ("feature_means_",)

    def fit(self, X, y):
        super().fit(X, y)
        rng = np.random.default_rng(None if self.random_state is None else [0, self.random_state])
        self.feature_means_ = np.asarray(X, dtype=float).mean(axis=0) + 0.01 * rng.standard_normal(np.shape(X)[1])
        return self


#: name shown in the audit table -> (mutant class, what it breaks)
MUTANTS = {
    "noise for 10ε": (TenfoldEpsilonPLR, "PLR noise and Δ calibrated for 10ε"),
    "max-norm rescaling": (MaxNormScaledPLR, "rows divided by the private data's largest norm"),
    "Δ > 0 branch skipped": (SkippedDeltaPLR, "ε' ≤ 0 but no extra ridge Δ"),
    "PPTL ε^(k) = ε": (PPTLEpsilonFeatureSplit, "PLR-FS noise at ε instead of ε' (PPTL Alg. 3 step 6)"),
    "vote with soft scale": (VoteWithSoftScale, "majority-vote ERM released with noise for sensitivity 2/(Mλ)"),
    "noise / √d": (SqrtDNoisePLR, "PLR noise vector divided by √d inside fit"),
    "noise / 2": (DoubleEpsilonNoisePLR, "PLR noise norm halved inside fit (noise for 2ε)"),
    "Δ computed, not used": (UnusedDeltaPLR, "Δ reported but the solver runs with Δ = 0"),
    "intercept after clipping": (ClippedThenInterceptPLR, "constant feature appended after clipping to B"),
    "MPL noise for 10ε": (TenfoldEpsilonNoiseMPL, "MPL coef_ noise for 10ε, attributes truthful"),
    "high level on D_l": (HighLevelOnLowDataPST, "PST high level trained on D_l's meta-features (2ε)"),
    "target centred at the unperturbed source": (
        UnperturbedCentreSimComb,
        "SimComb target centred at (1 − η)·(source minimiser without noise)",
    ),
    "SimComb target noise / √d": (SqrtDNoiseSimComb, "SimComb target noise vector divided by √d inside fit"),
    "SimComb target noise / 2": (DoubleEpsilonNoiseSimComb, "SimComb target noise norm halved inside fit"),
}


# ---------------------------------------------------------------------- the blind spots a review found
class BootstrapSplitPST(PrivateStackingClassifier):
    """MUTANT: PST whose D_l and D_h are bootstrap samples of the data (drawn with replacement, by
    index only): a record can sit in both parts, or twice in one, and then costs 2ε or more."""

    def _split(self, n, rng):
        n_low = int(round(self.low_fraction * n))
        return np.sort(rng.choice(n, n_low, replace=True)), np.sort(rng.choice(n, n - n_low, replace=True))


class StratifiedSplitPST(PrivateStackingClassifier):
    """MUTANT: PST whose split into D_l and D_h is stratified by the private labels: which part a
    record lands in depends on every label, so a changed label moves other records between parts."""

    def fit(self, X, y, low_level=None):
        self._labels_for_split = np.asarray(y)
        try:
            return super().fit(X, y, low_level)
        finally:
            del self._labels_for_split

    def _split(self, n, rng):
        y = self._labels_for_split
        low = []
        for c in np.unique(y):
            rows = rng.permutation(np.flatnonzero(y == c))
            low.append(rows[: int(round(self.low_fraction * rows.size))])
        low = np.sort(np.concatenate(low))
        return low, np.setdiff1d(np.arange(n), low)


class KeptSolutionPLR(PrivateLogisticRegression):
    """MUTANT: PLR that keeps the minimiser without noise in a private attribute; its release and its
    predictions are the genuine noisy ones, but anyone holding the object reads the unperturbed model."""

    def fit(self, X, y):
        super().fit(X, y)
        exact = PrivateLogisticRegression(**dict(self.get_params(), epsilon=np.inf, random_state=None)).fit(X, y)
        self._w_exact = exact.w_
        return self


class DataNormNoisePLR(PrivateLogisticRegression):
    """MUTANT: PLR whose noise scale uses the data's largest row norm when it is below the public
    bound (sensitivity from the data: min(B, max‖x_i‖)); its attributes state the public bound."""

    def fit(self, X, y):
        largest = float(np.linalg.norm(np.asarray(X, dtype=float), axis=1).max())
        factor = min(1.0, largest / float(self.norm_bound))
        with _swapped(linear, "isotropic_noise", _noise_divided(lambda dim: 1.0 / max(factor, 1e-300))):
            return super().fit(X, y)


class LinfClipPLR(PrivateLogisticRegression):
    """MUTANT: PLR that clips each coordinate to [−B, B] instead of each row to norm B: a row can keep
    norm B·√p, so the sensitivity is √p times the claimed one."""

    def _design_matrix(self, X):
        bound = float(self.norm_bound)
        return np.clip(np.asarray(X, dtype=float), -bound, bound)


def _noise_of_law(draw):
    """``isotropic_noise`` replaced by ``draw(dim, scale, rng)``: one vector of another law."""

    def noise(dim, scale, random_state=None, size=None):
        rng = check_random_state(random_state)
        if size is None:
            return draw(dim, scale, rng)
        return np.stack([draw(dim, scale, rng) for _ in range(int(size))])

    return noise


def _gaussian(dim, scale, rng):
    # E‖g‖ = σ·√2·Γ((d+1)/2)/Γ(d/2); σ chosen so that the mean norm is the claimed d·scale
    from scipy.special import gammaln

    mean_unit = np.sqrt(2.0) * np.exp(gammaln((dim + 1) / 2) - gammaln(dim / 2))
    return rng.standard_normal(dim) * (dim * scale / mean_unit)


def _gamma_shape_plus_one(dim, scale, rng):
    u = rng.standard_normal(dim)
    return u / np.linalg.norm(u) * rng.gamma(dim + 1, scale * dim / (dim + 1))  # the same mean norm


def _float32(dim, scale, rng):
    u = rng.standard_normal(dim)
    return (u / np.linalg.norm(u) * rng.gamma(dim, scale)).astype(np.float32).astype(float)


def _laplace_per_coordinate(dim, scale, rng):
    return rng.laplace(0.0, scale, size=dim)  # E‖b‖ ≈ the claimed d·scale for moderate d, not isotropic


@_fit_with(linear, "isotropic_noise", lambda: _noise_of_law(_gaussian))
class GaussianNoisePLR(PrivateLogisticRegression):
    """MUTANT: PLR whose noise is Gaussian with the claimed mean norm (not ∝ exp(−‖b‖/s))."""


@_fit_with(linear, "isotropic_noise", lambda: _noise_of_law(_gamma_shape_plus_one))
class GammaShapePLR(PrivateLogisticRegression):
    """MUTANT: PLR whose noise norm is Gamma(d + 1) rescaled to the claimed mean (a shape off by one)."""


@_fit_with(linear, "isotropic_noise", lambda: _noise_of_law(_float32))
class Float32NoisePLR(PrivateLogisticRegression):
    """MUTANT: PLR whose noise is drawn in single precision (a discrete support: the floating-point
    attack of Mironov 2012)."""


@_fit_with(linear, "isotropic_noise", lambda: _noise_of_law(_laplace_per_coordinate))
class LaplacePerCoordinatePLR(PrivateLogisticRegression):
    """MUTANT: PLR whose noise is Laplace in each coordinate (the ℓ1 mechanism) instead of isotropic."""


_SCALED = {}


def scaled_noise(estimator, factor):
    """MUTANT factory: ``estimator`` with every noise vector of its ``fit`` multiplied by ``factor``.

    The noise of every dpstack mechanism is drawn by ``isotropic_noise``; the returned estimator
    (an instance of a subclass of the estimator's class, with the same parameters) draws it
    ``factor`` times too large (``factor`` < 1: less noise than claimed, ε_eff ≈ ε/factor), every
    attribute truthful. The power table of the audit measures how often each check sees it.

    Parameters
    ----------
    estimator : a dpstack estimator (unfitted)
    factor : float > 0

    Returns
    -------
    estimator of class ``ScaledNoise<factor><class name>``
    """
    factor = float(factor)
    if not factor > 0:
        raise ValueError(f"factor must be > 0, got {factor!r}")
    base = type(estimator)
    key = (base, factor)
    if key not in _SCALED:
        original_linear, original_mpl = linear.isotropic_noise, mpl_estimator.isotropic_noise

        def noise_linear(dim, scale, random_state=None, size=None):
            return original_linear(dim, scale, random_state, size) * factor

        def noise_mpl(dim, scale, random_state=None, size=None):
            return original_mpl(dim, scale, random_state, size) * factor

        def fit(self, *args, **kwargs):
            with (
                _swapped(linear, "isotropic_noise", noise_linear),
                _swapped(mpl_estimator, "isotropic_noise", noise_mpl),
            ):
                return base.fit(self, *args, **kwargs)

        doc = f"MUTANT: {base.__name__} whose noise is {factor:g} times the claimed one (ε_eff ≈ ε/{factor:g})."
        _SCALED[key] = type(f"ScaledNoise{factor:g}{base.__name__}", (base,), {"fit": fit, "__doc__": doc})
    return _SCALED[key](**estimator.get_params(deep=False))


class TrainingUtilityTuning(PrivateParameterTuning):
    """MUTANT: private tuning whose exponential mechanism scores each candidate by its errors on the
    rows it was trained on, not on the held-out part (parts, ledger and sensitivity as claimed): the
    selection reads training records directly, not only through the candidates' releases."""

    def fit(self, X, y):
        fitted = []
        cls = type(self.estimator)
        original_fit, original_probabilities = cls.fit, tuning.selection_probabilities

        def recording_fit(est, Xp, yp, *args, **kwargs):
            out = original_fit(est, Xp, yp, *args, **kwargs)
            fitted.append((est, np.asarray(Xp), np.asarray(yp)))
            return out

        def training_probabilities(utilities, epsilon, sensitivity=1.0):
            candidates = fitted[-len(utilities) :]
            scores = [-float(np.sum(est.predict(Xp) != yp)) for est, Xp, yp in candidates]
            return original_probabilities(np.asarray(scores), epsilon, sensitivity)

        with _swapped(cls, "fit", recording_fit), _swapped(tuning, "selection_probabilities", training_probabilities):
            return super().fit(X, y)


class SizeWeightedAverageMPL(MultipartyPrivateClassifier):
    """MUTANT: MPL avg whose global model is the local models' average weighted by party size (the
    sensitivity 2/(Mλ) holds for the plain average only: a large party moves the weighted one more)."""

    def fit(self, X, y, parties, X_aux=None):
        original = mpl_estimator.fit_local_logistic

        def weighted(X, y_idx, party_idx, M, *args, **kwargs):
            coefs, it = original(X, y_idx, party_idx, M, *args, **kwargs)
            sizes = np.bincount(np.asarray(party_idx), minlength=M).astype(float)
            w = M * sizes / sizes.sum()
            return coefs * w.reshape((M,) + (1,) * (np.ndim(coefs) - 1)), it

        with _swapped(mpl_estimator, "fit_local_logistic", weighted):
            return super().fit(X, y, parties, X_aux)
