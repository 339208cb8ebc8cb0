import numpy as np
import pytest
from sklearn.metrics import roc_auc_score as sk_auc

from dpstack.metrics import roc_auc_score


@pytest.mark.parametrize("seed", range(20))
def test_auc_equals_sklearn_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 300))
    y = rng.integers(0, 2, size=n)
    y[:2] = [0, 1]
    # few distinct values: many ties, within and across the classes
    s = rng.integers(0, int(rng.integers(1, 8)), size=n) + 0.5 * y * rng.random(n)
    if seed % 2:
        s = np.round(s, 1)
    assert roc_auc_score(y, s) == pytest.approx(sk_auc(y, s), abs=1e-12)
    labels = np.where(y == 1, "spam", "ham")  # positive = the larger label, as in scikit-learn
    assert roc_auc_score(labels, s) == pytest.approx(sk_auc(labels, s), abs=1e-12)
    assert roc_auc_score(2 * y - 1, s) == pytest.approx(sk_auc(2 * y - 1, s), abs=1e-12)


def test_auc_edge_cases():
    assert roc_auc_score([0, 1], [0.2, 0.9]) == 1.0
    assert roc_auc_score([0, 1], [0.9, 0.2]) == 0.0
    assert roc_auc_score([0, 1, 0, 1], [3.0, 3.0, 3.0, 3.0]) == 0.5  # all tied
    rng = np.random.default_rng(0)
    y, s = rng.integers(0, 2, 1000), rng.normal(size=1000)  # no ties
    assert roc_auc_score(y, s) == pytest.approx(sk_auc(y, s), abs=1e-12)
    assert roc_auc_score(y, -s) == pytest.approx(1.0 - sk_auc(y, s), abs=1e-12)


def test_auc_errors_name_the_problem():
    with pytest.raises(ValueError, match="two classes.*got only the class 1"):
        roc_auc_score([1, 1, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="two classes"):
        roc_auc_score([0, 1, 2], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="NaN"):
        roc_auc_score([0, 1], [0.1, np.nan])
    with pytest.raises(ValueError, match="same length"):
        roc_auc_score([0, 1], [0.1, 0.2, 0.3])
