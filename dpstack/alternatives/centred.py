"""DP-GD from a source model: noisy gradient descent regularised towards, and started from, a given model.

Hypothesis transfer (Kuzborskij & Orabona 2013) by gradient perturbation: on the target rows,
minimise the logistic loss plus (λ/2)‖w − w₀‖², w₀ a model fitted on the source, with the
steps of :class:`~dpstack.alternatives.NoisyGradientDescentClassifier` started at w₀:

    w ← w − η · ( (Σ_i ∇ℓ_i(w) + N(0, σ² I)) / n + λ (w − w₀) ).

The regulariser's gradient λ(w − w₀) reads no target record, so the noise, the step count
and the accounting are DP-GD's, unchanged: (ε, δ)-DP for one target sample under the chosen
neighbouring relation, **given w₀**. w₀ must not depend on the target rows. When w₀ is itself
a private release of the source rows (for example DP-GD at (εₛ, δ) on the source), each
party's rows keep their own guarantee, εₛ for a source record and ε for a target record,
as PPTL's source and target do; a w₀ fitted without noise is a model of *public* source data.

λ → ∞ returns w₀ itself; λ = 0 is DP-GD warm-started at w₀ with no pull.
"""

from __future__ import annotations

import numpy as np

from .._validation import ARRAY
from ..mechanisms import row_norms_squared
from .gradient import NoisyGradientDescentClassifier, clipped_logistic_gradient_sum

__all__ = ["SourceCentredGradientDescentClassifier"]


class SourceCentredGradientDescentClassifier(NoisyGradientDescentClassifier):
    """(ε, δ)-DP logistic regression by DP-GD pulled towards a source model w₀ and started from it.

    Parameters
    ----------
    centre : array-like of shape (n_features,) or (n_features + 1,)
        w₀: the source model's ``coef_`` (followed by its ``intercept_`` when ``fit_intercept``).
        Public to the target's guarantee: it must not depend on the target rows.
    epsilon, delta, lam, norm_bound, clip, n_steps, learning_rate, average, neighbouring, accountant, \
fit_intercept, intercept_scaling, random_state, classes
        As in :class:`~dpstack.alternatives.NoisyGradientDescentClassifier`; ``lam`` is the
        weight of (λ/2)‖w − w₀‖².

    **Privacy.** Exactly DP-GD's for the target rows (``guarantee_``), given w₀. One of today's
    alternatives, not a method of the papers.

    Examples
    --------
    >>> import numpy as np
    >>> from dpstack.alternatives.centred import SourceCentredGradientDescentClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3)) / 3
    >>> y = (X[:, 0] > 0).astype(int)
    >>> w0 = np.array([2.0, 0.0, 0.0])
    >>> clf = SourceCentredGradientDescentClassifier(centre=w0, lam=1e6, random_state=0, classes=[0, 1]).fit(X, y)
    >>> bool(np.allclose(clf.coef_[0], w0, atol=1e-3))  # an infinite pull keeps the source model
    True
    """

    _parameter_constraints = {**NoisyGradientDescentClassifier._parameter_constraints, "centre": [ARRAY]}

    def __init__(
        self,
        centre=None,
        epsilon=1.0,
        delta=1e-5,
        lam=0.01,
        norm_bound=1.0,
        clip=None,
        n_steps=100,
        learning_rate=None,
        average=False,
        neighbouring="replace-one",
        accountant="PLD",
        fit_intercept=False,
        intercept_scaling=None,
        random_state=None,
        classes=None,
    ):
        self.centre = centre
        super().__init__(
            epsilon=epsilon,
            delta=delta,
            lam=lam,
            norm_bound=norm_bound,
            clip=clip,
            n_steps=n_steps,
            learning_rate=learning_rate,
            average=average,
            neighbouring=neighbouring,
            accountant=accountant,
            fit_intercept=fit_intercept,
            intercept_scaling=intercept_scaling,
            random_state=random_state,
            classes=classes,
        )

    def _centre_on_design(self, d):
        """w₀ on the design's coordinates (an intercept b becomes the constant feature's weight b/s)."""
        c = np.asarray(self.centre, dtype=float).ravel()
        if self.fit_intercept:
            if c.size != d:
                raise ValueError(f"centre must hold {d - 1} coefficients and the intercept, got {c.size} values")
            c = c.copy()
            c[-1] /= self._scaling()[1]
        elif c.size != d:
            raise ValueError(f"centre must hold {d} coefficients (one per feature), got {c.size} values")
        if not np.all(np.isfinite(c)):
            raise ValueError("centre must be finite")
        return c

    def _descend(self, Z, y, z, q, rng):
        n, d = Z.shape
        centre = self._centre_on_design(d)
        C = self._contribution_bound()
        clip = C if C < float(self.norm_bound) else None
        norms = None if clip is None else np.sqrt(row_norms_squared(Z))
        lam, eta, sigma = float(self.lam), self._step_size(), z * C
        # a pull with η·λ ≥ 1 would overshoot w₀ at every step: the step is capped at the exact
        # minimiser of the regulariser's quadratic (public numbers only; ∞ pull returns w₀)
        shrink = min(eta * lam, 1.0)
        w = centre.copy()
        total = np.zeros(d) if self.average else None
        for _ in range(int(self.n_steps)):
            g = clipped_logistic_gradient_sum(Z, y, w, clip, norms)
            if sigma > 0:
                g += sigma * rng.standard_normal(d)
            w = w - eta * g / n - shrink * (w - centre)
            if total is not None:
                total += w
        return w if total is None else total / int(self.n_steps)
