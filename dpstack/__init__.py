"""dpstack: differentially private stacking, transfer and multiparty learning.

The reference implementation of

* Yao et al., Privacy-preserving Stacking with Application to Cross-organizational
  Diabetes Prediction, IJCAI 2019 (PST);
* Guo et al., Privacy-preserving Transfer Learning for Knowledge Sharing (PPTL);
* Hamm, Cao & Belkin, Learning Privately from Multiparty Data, ICML 2016 (MPL).
"""
from .accounting import PrivacyLedger
from .linear import FeatureSplitLogisticRegression, PrivateLogisticRegression
from .solvers import ConvergenceError

__version__ = "0.1.0"

__all__ = [
    "ConvergenceError",
    "FeatureSplitLogisticRegression",
    "PrivacyLedger",
    "PrivateLogisticRegression",
]
