"""A RUIJIN-like diabetes cohort: a main centre and 16 branches (the real data are private).

Built only from what the papers state (PST §4.2, Tables 3 and 4; PPTL §4.1) plus the
assumptions listed in :func:`make_ruijin_like`. It is a stand-in for running the transfer
experiments end to end, not a model of the real cohort, and it is never tuned to
reproduce the papers' AUCs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.utils import Bunch

from .._validation import check_random_state

__all__ = ["RUIJIN_SIZES", "make_ruijin_like", "ruijin_borrowing_check", "ruijin_centre_table", "ruijin_feature_table"]

# PST Table 4 (= PPTL Table 3 with its centres 1+2 merged into the main centre: 7,882 + 4,820).
RUIJIN_SIZES = {
    "main": 12702,
    **{
        f"branch_{i + 1}": n
        for i, n in enumerate(
            [4334, 4739, 6121, 2327, 5619, 6360, 4966, 5793, 6215, 3659, 5579, 2316, 4285, 6017, 6482, 4493]
        )
    },
}

# PST Table 3: the nine features the paper names, with the doctors' importances.
DOCTOR_IMPORTANCE = {
    "mchild": 0.010,
    "weight": 0.012,
    "bone": 0.013,
    "eggw": 0.005,
    "Glu120": 0.055,
    "Glu0": 0.060,
    "age": 0.018,
    "bmi": 0.043,
    "HDL": 0.045,
}

# (name, correlated group, tier for the 41 unnamed features (3 high, 2 medium, 1 low; None for
#  the nine of Table 3), direction of the association with later diabetes, kind)
_FEATURES = [
    ("Glu0", "glycaemia", None, +1, "z"),
    ("Glu120", "glycaemia", None, +1, "z"),
    ("HbA1c", "glycaemia", 3, +1, "z"),
    ("insulin0", "glycaemia", 2, +1, "z"),
    ("insulin120", "glycaemia", 2, +1, "z"),
    ("bmi", "adiposity", None, +1, "z"),
    ("waist", "adiposity", 3, +1, "z"),
    ("whr", "adiposity", 3, +1, "z"),
    ("hip", "adiposity", 2, +1, "z"),
    ("body_fat", "adiposity", 2, +1, "z"),
    ("body_weight", "adiposity", 2, +1, "z"),
    ("bone", "adiposity", None, -1, "z"),
    ("sbp", "blood_pressure", 2, +1, "z"),
    ("dbp", "blood_pressure", 2, +1, "z"),
    ("hypertension", "blood_pressure", 2, +1, "binary"),
    ("pulse", "blood_pressure", 1, +1, "z"),
    ("HDL", "lipids", None, -1, "z"),
    ("TG", "lipids", 3, +1, "z"),
    ("TC", "lipids", 1, +1, "z"),
    ("LDL", "lipids", 1, +1, "z"),
    ("dyslipidemia_history", "lipids", 2, +1, "binary"),
    ("ALT", "liver_kidney", 2, +1, "z"),
    ("GGT", "liver_kidney", 2, +1, "z"),
    ("AST", "liver_kidney", 1, +1, "z"),
    ("uric_acid", "liver_kidney", 2, +1, "z"),
    ("creatinine", "liver_kidney", 1, +1, "z"),
    ("fatty_liver", "liver_kidney", 2, +1, "binary"),
    ("age", "demographics", None, +1, "z"),
    ("sex", "demographics", 1, +1, "binary"),
    ("height", "demographics", 1, -1, "z"),
    ("education", "demographics", 1, -1, "count"),
    ("income", "demographics", 1, +1, "count"),
    ("mchild", "demographics", None, +1, "count"),
    ("menopause", "demographics", 1, +1, "binary"),
    ("family_history_diabetes", "history", 3, +1, "binary"),
    ("weight", "history", None, -1, "z"),
    ("gestational_diabetes", "history", 2, +1, "binary"),
    ("cvd_history", "history", 1, +1, "binary"),
    ("physical_activity", "lifestyle", 2, -1, "count"),
    ("smoking", "lifestyle", 1, +1, "binary"),
    ("drinking", "lifestyle", 1, +1, "binary"),
    ("sleep_hours", "lifestyle", 1, -1, "z"),
    ("eggw", "lifestyle", None, +1, "count"),
    ("vegetables", "lifestyle", 1, -1, "count"),
    ("meat", "lifestyle", 1, +1, "count"),
    ("tea", "lifestyle", 1, -1, "count"),
    ("sedentary_hours", "lifestyle", 1, +1, "z"),
    ("hemoglobin", "blood", 1, +1, "z"),
    ("white_blood_cells", "blood", 1, +1, "z"),
    ("depression_score", "blood", 1, +1, "z"),
]
# within-group correlation of the latent variables (one factor per group)
_GROUP_RHO = {
    "glycaemia": 0.6,
    "adiposity": 0.6,
    "blood_pressure": 0.5,
    "lipids": 0.3,
    "liver_kidney": 0.3,
    "demographics": 0.2,
    "history": 0.1,
    "lifestyle": 0.1,
    "blood": 0.1,
}
_METABOLIC = ("glycaemia", "adiposity", "blood_pressure", "lipids", "liver_kidney")


def ruijin_feature_table():
    """The 50 features: name, group, importance, where the importance comes from, direction.

    Importance rule: the nine features of PST Table 3 keep the doctors' values (sum
    0.261); each of the other 41 gets a tier (3 high, 2 medium, 1 low, by clinical
    plausibility) and importance 0.739 · tier / Σ tiers, so the 41 sum to 1 − 0.261 and
    all 50 sum to 1 (high 0.0336, medium 0.0224, low 0.0112: inside Table 3's range).
    """
    tiers = np.array([t or 0 for _, _, t, _, _ in _FEATURES], dtype=float)
    rest = 1.0 - sum(DOCTOR_IMPORTANCE.values())
    rows = []
    for (name, group, tier, sign, kind), t in zip(_FEATURES, tiers):
        doctor = name in DOCTOR_IMPORTANCE
        rows.append(
            {
                "feature": name,
                "group": group,
                "kind": kind,
                "direction": sign,
                "importance": DOCTOR_IMPORTANCE[name] if doctor else rest * t / tiers.sum(),
                "importance source": "doctors (PST Table 3)" if doctor else f"assumed, tier {tier}",
            }
        )
    return pd.DataFrame(rows)


def _latent(rng, n, names, groups, signs, shift):
    """Unit-variance Gaussian latents: group factor + shared metabolic factor + noise.

    Loadings carry the feature's direction, so risk-raising features co-vary positively
    (e.g. HDL falls when triglycerides and waist rise).
    """
    uniq = list(dict.fromkeys(groups))
    G = rng.standard_normal((n, len(uniq)))
    m = rng.standard_normal(n)
    E = rng.standard_normal((n, len(names)))
    Z = np.empty((n, len(names)))
    for j, g in enumerate(groups):
        a = np.sqrt(_GROUP_RHO[g])
        b = 0.3 if g in _METABOLIC else 0.0  # links the metabolic groups to each other
        noise = np.sqrt(1 - a * a - b * b)
        Z[:, j] = signs[j] * (a * G[:, uniq.index(g)] + b * m) + noise * E[:, j]
    return Z + shift


def _observe(Z, kinds):
    """Observed values: z as is; binary = 1{z > 1} (prevalence ~16%); counts = floor(z + 2) in 0..5."""
    X = Z.copy()
    for j, kind in enumerate(kinds):
        if kind == "binary":
            X[:, j] = (Z[:, j] > 1.0).astype(float)
        elif kind == "count":
            X[:, j] = np.clip(np.floor(Z[:, j] + 2.0), 0, 5)
    return X


def _standardise(X, kinds):
    """Reference-population standardisation (fixed constants, not fitted) for the risk model."""
    S = X.copy()
    for j, kind in enumerate(kinds):
        if kind == "binary":
            p = 0.1587  # P(z > 1) for a standard normal
            S[:, j] = (X[:, j] - p) / np.sqrt(p * (1 - p))
        elif kind == "count":
            S[:, j] = (X[:, j] - 2.0) / 1.05
    return S


def make_ruijin_like(
    random_state=0,
    sizes=None,
    signal_sd=1.0,
    relevance_noise=0.3,
    mean_shift=0.3,
    coef_shift=0.25,
    prevalence_main=0.10,
    prevalence_range=(0.05, 0.15),
):
    """Generate a RUIJIN-like cohort: centres with 50 features and diabetes three years later.

    Assumptions (all of them; none is fitted to the papers' results):

    1. Sizes: main centre 12,702 and branches 1-16 with PST Table 4's sizes (``sizes``
       overrides, e.g. smaller for tests).
    2. Features: 50 (PST §4.2), the nine of PST Table 3 with the doctors' importances and
       41 more, named after common items of such surveys (anthropometry, blood pressure,
       lipids, liver and kidney tests, history, life-style) with importances from the tier
       rule of :func:`ruijin_feature_table`; all 50 sum to 1.
    3. Correlation: each feature is a unit-variance Gaussian latent = group factor (within-group
       correlation 0.6 glycaemia/adiposity, 0.5 blood pressure, 0.3 lipids/liver-kidney,
       0.1-0.2 otherwise) + a shared "metabolic" factor (loading 0.3) for the five metabolic
       groups + noise. Observed: continuous features as z-scores of a reference population;
       binary features 1{latent > 1}; counts floor(latent + 2) clipped to 0..5.
    4. Label: diabetes diagnosed three years later ~ Bernoulli(sigmoid(b_c + Σ_j β_cj s_j)),
       s_j the feature standardised with fixed reference constants. The true relevance
       tracks the doctors' importance: β_j = c · direction_j · q_j · exp(r_j),
       r_j ~ N(0, ``relevance_noise``²) (importance is a good but imperfect guide), and c is
       set so that the risk score Σ_j β_j s_j has standard deviation ``signal_sd`` = 1 in the
       main centre: a moderate predictability, chosen a priori (it is what separates cases
       from non-cases, and it is not adjusted to any AUC of the papers).
    5. Centre shifts (so a branch differs from the main centre but can borrow from it):
       latent means shifted by a centre effect per group ~ N(0, ``mean_shift``²) plus
       per feature ~ N(0, (``mean_shift``/2)²); coefficients β_cj = β_j (1 + u_cj),
       u_cj ~ N(0, ``coef_shift``²); prevalence (diabetes by 2013) ``prevalence_main`` = 10%
       in the main centre and uniform on ``prevalence_range`` in each branch, met by choosing
       the intercept b_c so the centre's mean risk equals it. The main centre has no shift.

    Deterministic per ``random_state``: the same seed gives the same cohort, bit for bit.

    Parameters
    ----------
    random_state : int, Generator or None, default=0
    sizes : dict, optional
        Centre name -> size (default :data:`RUIJIN_SIZES`; the first key is the source).
    signal_sd, relevance_noise, mean_shift, coef_shift, prevalence_main : float
    prevalence_range : tuple of float

    Returns
    -------
    cohort : sklearn.utils.Bunch
        ``centres``: dict name -> Bunch(``data`` (n, 50), ``target`` (n,) 0/1, ``coef``,
        ``intercept``, ``prevalence`` (the centre's set value), ``mean_shift``);
        ``feature_names`` (50); ``feature_importance`` (50, sums to 1, doctor-style);
        ``features`` (the table of :func:`ruijin_feature_table`); ``coef`` (the shared β);
        ``sizes``; ``description``.

    References
    ----------
    Yao et al., IJCAI 2019, §4.2, Tables 3-4; Guo et al., PPTL §4.1, Table 3.

    Examples
    --------
    >>> from dpstack.datasets import make_ruijin_like
    >>> cohort = make_ruijin_like(random_state=0)
    >>> cohort.centres["main"].data.shape
    (12702, 50)
    >>> round(float(cohort.feature_importance.sum()), 6)
    1.0
    """
    rng = check_random_state(random_state)
    sizes = dict(RUIJIN_SIZES if sizes is None else sizes)
    table = ruijin_feature_table()
    names, groups = list(table["feature"]), list(table["group"])
    kinds, sign = list(table["kind"]), table["direction"].to_numpy(float)
    q = table["importance"].to_numpy(float)
    beta = sign * q * np.exp(relevance_noise * rng.standard_normal(len(q)))
    uniq = list(dict.fromkeys(groups))
    centres = {}
    for i, (name, n) in enumerate(sizes.items()):
        main = i == 0
        if main:
            shift, coef, prev = np.zeros(len(q)), beta.copy(), prevalence_main
        else:
            g_shift = mean_shift * rng.standard_normal(len(uniq))
            shift = g_shift[[uniq.index(g) for g in groups]] + 0.5 * mean_shift * rng.standard_normal(len(q))
            coef = beta * (1 + coef_shift * rng.standard_normal(len(q)))
            prev = rng.uniform(*prevalence_range)
        X = _observe(_latent(rng, int(n), names, groups, sign, shift), kinds)
        if main:  # fix the scale c of assumption 4 on the main centre; branches draw after it
            beta = beta * (signal_sd / np.std(_standardise(X, kinds) @ beta))
            coef = beta.copy()
        score = _standardise(X, kinds) @ coef
        lo, hi = -20.0, 20.0  # bisection: mean risk is increasing in the intercept
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if expit(score + mid).mean() < prev else (lo, mid)
        b = 0.5 * (lo + hi)
        y = (rng.uniform(size=len(X)) < expit(score + b)).astype(np.int64)
        centres[name] = Bunch(data=X, target=y, coef=coef, intercept=b, prevalence=prev, mean_shift=shift, name=name)
    return Bunch(
        centres=centres,
        feature_names=names,
        feature_importance=q,
        features=table,
        coef=beta,
        sizes=sizes,
        description="RUIJIN-like synthetic cohort (not real data): main centre + branches, "
        "50 features, label = diabetes three years later; see make_ruijin_like.",
    )


def ruijin_centre_table(cohort):
    """One row per centre: size (and PST Table 4's), set and observed prevalence, how far it is from main.

    ``mean shift`` is the root-mean-square shift of the latent feature means; ``coef corr`` the
    correlation of the centre's true coefficients with the main centre's.
    """
    main = cohort.centres[next(iter(cohort.centres))]
    rows = []
    for name, c in cohort.centres.items():
        rows.append(
            {
                "centre": name,
                "samples": len(c.target),
                "PST Table 4": RUIJIN_SIZES.get(name, np.nan),
                "prevalence (set)": round(float(c.prevalence), 4),
                "prevalence (drawn)": round(float(c.target.mean()), 4),
                "mean shift (rms)": round(float(np.sqrt(np.mean(c.mean_shift**2))), 4),
                "coef corr with main": round(float(np.corrcoef(c.coef, main.coef)[0, 1]), 4),
            }
        )
    return pd.DataFrame(rows)


def ruijin_borrowing_check(cohort, n_small=200, test_fraction=0.5, random_state=0):
    """Non-private sanity check of assumption 5: does a branch gain from the main centre's model?

    For each branch: a logistic regression (scikit-learn, C=1, non-private) fitted on
    ``n_small`` of its samples, one fitted on all its training samples (the rest after the
    held-out ``test_fraction``) and one fitted on the whole main centre, all scored by AUC on
    the branch's held-out part. This checks the generator's design, not any
    result of the papers (their methods are private and are run elsewhere).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    rng = check_random_state(random_state)
    names = list(cohort.centres)
    main = cohort.centres[names[0]]
    big = LogisticRegression(max_iter=2000).fit(main.data, main.target)
    rows = []
    for name in names[1:]:
        c = cohort.centres[name]
        perm = rng.permutation(len(c.target))
        n_test = int(test_fraction * len(perm))
        test, train = perm[:n_test], perm[n_test : n_test + n_small]
        rest = perm[n_test:]
        own = LogisticRegression(max_iter=2000).fit(c.data[train], c.target[train])
        full = LogisticRegression(max_iter=2000).fit(c.data[rest], c.target[rest])

        def auc(model, c=c, test=test):
            return round(roc_auc_score(c.target[test], model.decision_function(c.data[test])), 4)

        rows.append(
            {
                "branch": name,
                f"own {n_small} samples": auc(own),
                "own training half": auc(full),
                "main-centre model": auc(big),
            }
        )
    return pd.DataFrame(rows)
