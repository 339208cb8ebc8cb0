"""Privacy mechanisms: norm clipping, Gamma-norm noise and their calibration.

Everything here is a pure function of public quantities (ε, n, λ, norm bounds,
dimensions) plus a random generator. The estimators in :mod:`dpstack.linear`,
:mod:`dpstack.stacking` and :mod:`dpstack.multiparty` call these and nothing
else to decide how much noise to add, so a reader can audit the privacy
arithmetic of the whole library in this one file.

Objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2; PLR,
Alg. 1 of Yao et al. 2019) protects **one sample** (replace-one neighbours):
the noise vector ``b`` in the objective ``(1/n) Σ ℓ + bᵀw/n + Δ‖w‖²/2 + λ g(w)``
has density ∝ exp(−‖b‖ / scale), so ``‖b‖ ~ Gamma(d, scale)`` with a uniform
direction. The papers print exp(+ε'‖b‖/2); the sign is a typo (:ref:`erratum 1 <erratum-noise-sign>`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ._validation import check_epsilon, check_positive, check_random_state

__all__ = [
    "clip_rows",
    "clipped_rows",
    "row_norms_squared",
    "isotropic_noise",
    "ObjectivePerturbationCalibration",
    "objective_perturbation_calibration",
    "FeatureSplitCalibration",
    "feature_split_calibration",
    "output_perturbation_scale",
    "output_perturbation_noise",
]


def _as_number(value, name, kind=float):
    """``float(value)`` or ``int(value)``, with an error naming the argument when it is not a number."""
    what = "an int" if kind is int else "a number"
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be {what}, not a bool, got {value!r}")
    try:
        out = kind(value)
    except (TypeError, ValueError, OverflowError):
        raise (TypeError if not isinstance(value, (numbers.Real, str)) else ValueError)(
            f"{name} must be {what}, got {value!r}"
        ) from None
    if kind is int and out != value:
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return out


def clip_rows(X, bound):
    """Scale every row of ``X`` whose L2 norm exceeds ``bound`` down to ``bound``.

    This is how rows are brought under the norm bound the privacy proofs
    assume. ``bound`` must be *public* (fixed before seeing the data); dividing
    by the largest norm found in the private data instead would make the scale
    depend on one person's record and void the guarantee (:ref:`erratum 5 <erratum-public-bound>`).

    The input is never modified. When no row exceeds the bound, ``X`` itself is
    returned (as a float array: no copy if it already is one, memory-mapped
    arrays included); otherwise the result is one new array, written in a
    single pass as ``X`` times a per-row factor (1 for rows inside the bound).
    A row scaled to norm exactly ``bound`` may measure a rounding error above it
    and is then clipped (a copy of ``X``): scale to slightly below the bound,
    e.g. ``bound · (1 − 1e-9)``, to keep large arrays uncopied.
    Norms are computed without overflow: a row whose squared norm overflows
    float64 (entries beyond about 1e154) is measured after dividing it by its
    largest absolute entry.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Finite values.
    bound : float
        Public norm bound, ``bound >= 0``.

    Returns
    -------
    X_clipped : ndarray of shape (n_samples, n_features)
        ``X`` itself when no row is clipped, else a new float array; rows
        already inside the bound are unchanged.

    Raises
    ------
    ValueError
        If ``bound`` is negative or not finite, or if ``X`` contains NaN or infinity.

    Examples
    --------
    >>> clip_rows([[3.0, 4.0], [0.3, 0.4]], 1.0)
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """
    X = np.asarray(X, dtype=float)
    if X.ndim < 2:
        X = X.reshape(1, -1)
    bound = _as_number(bound, "bound")
    if not bound >= 0 or not np.isfinite(bound):
        raise ValueError(f"bound must be a finite number >= 0, got {bound!r}")
    if bound >= _TINY_NORM:
        factor = _clip_factors(X, bound)
        if factor is None:
            return X
        if factor is not NORM_OVERFLOW:
            return np.multiply(X, factor[:, None])
    norms = np.sqrt(row_norms_squared(X))
    # Rows whose squared norm overflowed (or is NaN), and, under a tiny bound, rows whose
    # squared norm may have underflowed: measured again on the row divided by its peak.
    unsafe = ~np.isfinite(norms)
    if bound < _TINY_NORM:
        unsafe |= norms < _TINY_NORM
    rescaled = None
    if np.any(unsafe):
        rows = np.flatnonzero(unsafe)
        sub = X[rows]
        peak = np.max(np.abs(sub), axis=1)
        if not np.all(np.isfinite(peak)):
            raise ValueError("X contains NaN or infinity: such rows have no norm to clip")
        peak[peak == 0] = 1.0
        sub /= peak[:, None]
        rel = np.sqrt(row_norms_squared(sub))  # ‖x‖ / peak, in [1, √d] for non-zero rows
        long_rows = rel > bound / peak  # ‖x‖ > bound, without forming ‖x‖ (it may overflow)
        norms[rows] = np.where(long_rows, np.inf, 0.0)
        rescaled = (rows[long_rows], sub[long_rows] * (bound / rel[long_rows])[:, None])
    too_long = norms > bound
    if not np.any(too_long):
        return X
    factor = np.ones(X.shape[0])
    factor[too_long] = bound / norms[too_long]
    out = np.multiply(X, factor[:, None])
    if rescaled is not None:
        out[rescaled[0]] = rescaled[1]
    return out


NORM_OVERFLOW = object()
#: Rows per block of the clipping scan: its squared norms (two blocks' worth live at once) take
#: 128 KiB, whatever n.
_CLIP_BLOCK_ROWS = 2**13


def _clip_factors(X, bound):
    """The common case of :func:`clip_rows`, with no overflow or underflow to guard against.

    ``None`` when no row is longer than ``bound``, else the per-row factors (1 inside the
    bound; the same norms and factors as the guarded path), or ``NORM_OVERFLOW`` when a squared
    norm is not finite (the guarded path measures again). See :func:`clipped_rows`.
    """
    found = clipped_rows(X, bound)
    if found is None or found is NORM_OVERFLOW:
        return found
    rows, factors = found
    factor = np.ones(X.shape[0])
    factor[rows] = factors
    return factor


def clipped_rows(X, bound):
    """The rows :func:`clip_rows` would scale, and their factors, without copying ``X``.

    ``clip_rows(X, bound)`` equals ``X`` with ``X[rows]`` multiplied by ``factors[:, None]``,
    bit for bit (each factor is ``bound / ‖x_i‖``, the same float64 division as
    :func:`clip_rows`). A solver that applies the factors to the margins and residuals of
    those rows (the ``row_scale`` of :func:`dpstack.solvers.minimize_perturbed_logistic`) fits
    the clipped data without a clipped copy of X: what is kept is 16 bytes per clipped row.

    X is scanned in blocks of rows (two blocks of squared norms live at once, 128 KiB,
    whatever n); √ is monotone, so a block's largest squared norm decides whether any of its
    rows is clipped.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        A float64 array (memory-mapped arrays included).
    bound : float
        Public norm bound, ``bound >= 1e-150`` (below it squared norms may underflow:
        use :func:`clip_rows`).

    Returns
    -------
    None, or (rows, factors), or the private sentinel ``NORM_OVERFLOW``
        ``None`` when no row is longer than ``bound``; else ``rows`` (int64, increasing)
        and ``factors`` (float64, each < 1); ``NORM_OVERFLOW`` when a squared norm overflows or
        is NaN (entries beyond about 1e154, or NaN or infinity): :func:`clip_rows` measures
        such rows again on a rescaled copy, which no factor reproduces.

    Examples
    --------
    >>> import numpy as np
    >>> clipped_rows(np.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)
    (array([0]), array([0.2]))
    """
    n = X.shape[0]
    rows, factors = [], []
    for start in range(0, n, _CLIP_BLOCK_ROWS):
        stop = min(start + _CLIP_BLOCK_ROWS, n)
        squared = row_norms_squared(X[start:stop])
        largest = squared.max(initial=0.0)  # NaN if any squared norm is NaN
        if not np.isfinite(largest):
            return NORM_OVERFLOW
        if np.sqrt(largest) <= bound:
            continue
        norms = np.sqrt(squared)
        too_long = np.flatnonzero(norms > bound)
        rows.append(too_long + start)
        factors.append(bound / norms[too_long])
    if not rows:
        return None
    return np.concatenate(rows).astype(np.int64, copy=False), np.concatenate(factors)


def row_norms_squared(X):
    """Squared L2 norm of every row of a 2-D float array, in one pass without a temporary copy of ``X``."""
    return np.einsum("ij,ij->i", X, X)


# Below this norm a row's squared norm may underflow (sub-normal or zero in float64).
_TINY_NORM = 1e-150


def isotropic_noise(dim, scale, random_state=None, size=None):
    """Draw vectors with density ∝ exp(−‖b‖ / scale) in ``dim`` dimensions.

    The norm is ``Gamma(shape=dim, scale=scale)`` distributed and the
    direction uniform on the sphere (a normalised standard Gaussian).
    ``scale = 0`` returns zeros (the non-private limit ε = ∞).

    Parameters
    ----------
    dim : int
        Dimension of each vector, ``dim >= 1``.
    scale : float
        Scale of the norm, ``scale >= 0``. For objective perturbation this is
        ``2 · bound / ε'``; for output perturbation ``sensitivity / ε``.
    random_state : None, int or numpy.random.Generator
    size : None or int
        ``None`` returns one vector of shape ``(dim,)``; an int returns an
        array of shape ``(size, dim)``.

    Returns
    -------
    noise : ndarray
    """
    dim = _as_number(dim, "dim", int)
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    scale = _as_number(scale, "scale")
    if size is not None and (_as_number(size, "size", int) < 0 or _as_number(size, "size", int) != size):
        raise ValueError(f"size must be None or an int >= 0, got {size!r}")
    if not (scale >= 0 and np.isfinite(scale)):
        raise ValueError(f"scale must be a finite number >= 0, got {scale!r}")
    rng = check_random_state(random_state)
    shape = (1 if size is None else int(size), dim)
    direction = rng.standard_normal(shape)
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    norms = rng.gamma(shape=dim, scale=1.0, size=shape[0]) * scale
    noise = direction * norms[:, None]
    return noise[0] if size is None else noise


@dataclass(frozen=True)
class ObjectivePerturbationCalibration:
    """Noise and extra ridge of objective perturbation for one block of features.

    Attributes
    ----------
    epsilon : float
        The budget the block is protected with.
    epsilon_noise : float
        ε' of Algorithm 1: the part of ε paid by the noise vector ``b``.
    delta : float
        Δ of Algorithm 1: the extra ridge added when ε' would be ≤ 0.
    noise_scale : float
        Scale of ``‖b‖ ~ Gamma(d, noise_scale)``, equal to ``2 · norm_bound / ε'``.
    norm_bound : float
        Rows of the block are clipped to this norm.
    branch : str
        ``"delta=0"`` (ε' > 0, no extra ridge), ``"delta>0"`` or ``"non-private"``.
    n_samples : int or None
        The public number of samples n the calibration was computed for (``None`` when
        not recorded): with ε, λ and the bound, all a release needs to recompute it.
    """

    epsilon: float
    epsilon_noise: float
    delta: float
    noise_scale: float
    norm_bound: float
    branch: str
    n_samples: int | None = None


def _jacobian_cost(n, lam, bound):
    # log of the worst-case Jacobian ratio (1 + c·B²/(nλ))², c = 1/4 bounds ℓ''.
    # Equals log(1 + B²/(2nλ) + B⁴/(16n²λ²)), the form printed in the papers.
    return 2.0 * math.log1p(bound * bound / (4.0 * n * lam))


def objective_perturbation_calibration(epsilon, n, lam, norm_bound=1.0):
    """ε' and Δ of objective perturbation (PLR, Algorithm 1) for one block.

    With ``norm_bound = 1`` this is exactly Algorithm 1 of Yao et al. (2019) /
    Algorithm 2 of Chaudhuri et al. (2011)::

        ε' = ε − log(1 + 1/(2nλ) + 1/(16 n² λ²))
        if ε' > 0:  Δ = 0
        else:       Δ = 1/(4n(e^{ε/4} − 1)) − λ,  ε' = ε/2

    A general bound ``B`` (rows with ‖x‖ ≤ B) replaces 1 by B² in the Jacobian
    terms and scales the noise by B: the mechanism is then PLR on x/B with
    λ/B², which keeps the guarantee at ε. This is the form one block of
    PLR-FS uses with ``B = q_k``.

    Parameters
    ----------
    epsilon : float
        Privacy budget, ``ε > 0``; ``np.inf`` gives the non-private calibration.
    n : int
        Number of samples the block is trained on.
    lam : float
        Regularisation strength λ > 0 of the 1-strongly convex regulariser.
    norm_bound : float, default=1.0
        Public bound on the rows' L2 norm.

    Returns
    -------
    ObjectivePerturbationCalibration

    Examples
    --------
    >>> cal = objective_perturbation_calibration(1.0, n=1000, lam=0.01)
    >>> round(cal.epsilon_noise, 6), cal.delta
    (0.950615, 0.0)
    """
    epsilon = check_epsilon(epsilon)
    n = _check_n(n)
    lam = check_positive(lam, "lam")
    norm_bound = check_positive(norm_bound, "norm_bound")
    if np.isinf(epsilon):
        return ObjectivePerturbationCalibration(epsilon, np.inf, 0.0, 0.0, norm_bound, "non-private", n)
    _check_representable(epsilon, norm_bound)
    try:
        eps_noise = epsilon - _jacobian_cost(n, lam, norm_bound)
        if eps_noise > 0:
            delta, branch = 0.0, "delta=0"
        else:
            delta = norm_bound**2 / (4.0 * n * math.expm1(epsilon / 4.0)) - lam
            eps_noise, branch = epsilon / 2.0, "delta>0"
        scale = 2.0 * norm_bound / eps_noise
    except (OverflowError, ZeroDivisionError):
        delta = scale = math.inf
    if not (math.isfinite(delta) and math.isfinite(scale)):
        raise ValueError(_beyond_float("epsilon", epsilon, n=n, lam=lam, norm_bound=norm_bound))
    return ObjectivePerturbationCalibration(epsilon, eps_noise, delta, scale, norm_bound, branch, n)


def _check_representable(epsilon, norm_bound, name="norm_bound"):
    """A bound whose square is beyond float64 cannot be calibrated: say so, naming it."""
    if not math.isfinite(norm_bound * norm_bound):
        raise ValueError(
            f"{name}={norm_bound!r} is too large: its square, which the calibration needs, is beyond "
            "float64 (bounds up to about 1e150 work). Divide the rows by a public constant "
            "(row_scale, or X / c) and use a smaller bound."
        )


#: the smallest ε every calibration represents in float64 (below it ε/4 or e^(ε/4) − 1 underflows)
SMALLEST_EPSILON = 1e-300


def _beyond_float(name, value, **context):
    """The message of a calibration whose noise scale or Δ is not a finite float64."""
    given = ", ".join(f"{k}={v!r}" for k, v in context.items())
    return (
        f"{name}={value!r} is too small for this calibration ({given}): the noise scale or the "
        "added ridge Δ would be infinite in float64 (ε/4 underflows, e^(ε/4) − 1 = 0). "
        f"Use {name} >= {SMALLEST_EPSILON:g} (any such ε works; a tiny ε gives essentially pure noise)."
    )


@dataclass(frozen=True)
class FeatureSplitCalibration:
    """Calibration of PLR-FS: K feature blocks with importances q_k, Σ q_k = 1.

    Attributes
    ----------
    epsilon : float
        Total budget.
    epsilon_prime : float
        Global ε' = ε − Σ_k log(1 + q_k²/(2nλ_k) + q_k⁴/(16n²λ_k²)) before the
        branch is chosen (may be ≤ 0).
    epsilon_k : ndarray of shape (K,)
        Per-block noise budget: ε' if ε' > 0, else ε/2 (PST Alg. 3; *not* ε as
        PPTL Alg. 3 prints, :ref:`erratum 2 <erratum-pptl-epsilon-k>`).
    delta_k : ndarray of shape (K,)
        Per-block extra ridge, clamped at 0 (:ref:`erratum 4 <erratum-negative-delta>`).
    noise_scale_k : ndarray of shape (K,)
        ``‖b_k‖ ~ Gamma(d_k, 2/ε_k)``; ``inf``-free: 0 for blocks with q_k = 0.
    importance : ndarray of shape (K,)
        The q_k, which are also the blocks' norm bounds.
    branch : str
    n_samples : int or None
        The public number of samples n the calibration was computed for.
    """

    epsilon: float
    epsilon_prime: float
    epsilon_k: np.ndarray
    delta_k: np.ndarray
    noise_scale_k: np.ndarray
    importance: np.ndarray
    branch: str
    n_samples: int | None = None


def feature_split_calibration(epsilon, n, lam, importance):
    """ε_k and Δ_k of PLR-FS (the low level of PST-F, Algorithm 3 of Yao et al.).

    Block k's rows are clipped to ‖x_(k)‖ ≤ q_k. With Σ q_k = 1 the noise
    spends Σ_k ε_k q_k and the Jacobians Σ_k 2 log(1 + q_k²/(4n(λ_k + Δ_k))),
    which add up to ε in both branches::

        ε' = ε − Σ_k log(1 + q_k²/(2nλ_k) + q_k⁴/(16n²λ_k²))
        if ε' > 0:  Δ_k = 0,  ε_k = ε'
        else:       Δ_k = max(0, q_k²/(4n(e^{ε q_k/4} − 1)) − λ_k),  ε_k = ε/2

    A block with q_k = 0 carries no information and spends nothing (PST
    Remark 1): its rows are clipped to zero, its Δ_k and noise are 0.

    Parameters
    ----------
    epsilon : float
        Total budget ε > 0 (``np.inf``: non-private).
    n : int
        Samples seen by the low level.
    lam : float or array-like of shape (K,)
        λ_k per block (a scalar is shared).
    importance : array-like of shape (K,)
        q_k ≥ 0 with Σ q_k = 1.

    Returns
    -------
    FeatureSplitCalibration
    """
    epsilon = check_epsilon(epsilon)
    n = _check_n(n)
    q = check_importance(importance)
    if isinstance(lam, (bool, np.bool_)):
        raise TypeError(f"lam must be one finite number > 0 or one per block ({q.size}), got {lam!r}")
    try:
        lam = np.broadcast_to(np.asarray(lam, dtype=float), q.shape).copy()
    except (TypeError, ValueError):
        raise ValueError(f"lam must be one finite number > 0 or one per block ({q.size}), got {lam!r}") from None
    if lam.ndim != 1 or np.any(~(lam > 0)) or np.any(~np.isfinite(lam)):
        raise ValueError(f"lam must be a positive finite number per block, got {lam!r}")
    K = q.size
    if np.isinf(epsilon):
        zeros = np.zeros(K)
        return FeatureSplitCalibration(epsilon, np.inf, np.full(K, np.inf), zeros, zeros, q, "non-private", n)
    active = q > 0
    cost = sum(_jacobian_cost(n, lam[k], q[k]) for k in range(K) if active[k])
    eps_prime = epsilon - cost
    if eps_prime > 0:
        eps_k = np.full(K, eps_prime)
        delta_k = np.zeros(K)
        branch = "delta=0"
    else:
        eps_k = np.full(K, epsilon / 2.0)
        delta_k = np.zeros(K)
        for k in np.flatnonzero(active):
            denominator = 4.0 * n * math.expm1(epsilon * q[k] / 4.0)
            if denominator == 0.0:
                raise ValueError(_beyond_float("epsilon", epsilon, n=n, importance=q.tolist()))
            delta_k[k] = max(0.0, q[k] ** 2 / denominator - lam[k])
        branch = "delta>0"
    with np.errstate(divide="ignore", over="ignore"):
        noise_scale_k = np.where(active, 2.0 / eps_k, 0.0)
    if not (np.all(np.isfinite(noise_scale_k)) and np.all(np.isfinite(delta_k))):
        raise ValueError(_beyond_float("epsilon", epsilon, n=n, importance=q.tolist()))
    return FeatureSplitCalibration(epsilon, eps_prime, eps_k, delta_k, noise_scale_k, q, branch, n)


def output_perturbation_scale(sensitivity, epsilon):
    """Scale of ``‖η‖ ~ Gamma(d, sensitivity/ε)`` for output perturbation.

    Releasing ``w + η`` with density ∝ exp(−ε‖η‖/sensitivity) is ε-DP when
    ``sensitivity`` bounds ‖w(D) − w(D')‖₂ over neighbouring D, D' (Chaudhuri
    et al. 2011, Alg. 1; Hamm et al. 2016, Alg. 1–2). What "neighbouring"
    means (one sample, one party) is fixed by how the sensitivity was derived.
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = _as_number(sensitivity, "sensitivity")
    if not (sensitivity >= 0 and np.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be a finite number >= 0, got {sensitivity!r}")
    return 0.0 if np.isinf(epsilon) else sensitivity / epsilon


def output_perturbation_noise(sensitivity, epsilon, dim, random_state=None):
    """Noise vector η with density ∝ exp(−ε‖η‖/sensitivity) in ``dim`` dimensions."""
    return isotropic_noise(dim, output_perturbation_scale(sensitivity, epsilon), random_state)


def check_importance(importance, atol=1e-8, name="importance"):
    """Validate q_k: a 1-D array of finite values ≥ 0 summing to 1 (errors name ``name``)."""
    try:
        q = np.asarray(importance, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D array of numbers >= 0 summing to 1, got {importance!r}") from None
    if q.ndim != 1 or q.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {q.shape}")
    if not np.all(np.isfinite(q)) or np.any(q < 0):
        raise ValueError(f"{name} must be finite and >= 0, got {q!r}")
    if abs(q.sum() - 1.0) > atol:
        raise ValueError(f"{name} must sum to 1, got sum {q.sum():.6g}")
    return q


def _check_n(n):
    if isinstance(n, bool) or _as_number(n, "n (number of samples)", int) != n or n < 1:
        raise ValueError(f"n (number of samples) must be a positive integer, got {n!r}")
    return int(n)
