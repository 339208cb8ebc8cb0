"""dpstack: differentially private stacking, transfer and multiparty learning.

The reference implementation of

* Yao et al., Privacy-preserving Stacking with Application to Cross-organizational
  Diabetes Prediction, IJCAI 2019 (PST);
* Guo et al., Privacy-preserving Transfer Learning for Knowledge Sharing (PPTL);
* Hamm, Cao & Belkin, Learning Privately from Multiparty Data, ICML 2016 (MPL).
"""

from . import datasets as datasets  # the loaders, reachable as dpstack.datasets
from .accounting import PrivacyLedger
from .linear import FeatureSplitLogisticRegression, PrivateLogisticRegression
from .multiparty import MultipartyPrivateClassifier
from .solvers import ConvergenceError
from .stacking import PrivateStackingClassifier, bound_rows
from .transfer import PrivateTransferStacking, SimComb
from .tuning import PrivateParameterTuning

__version__ = "0.1.0"

__all__ = [
    "ConvergenceError",
    "FeatureSplitLogisticRegression",
    "MultipartyPrivateClassifier",
    "PrivacyLedger",
    "PrivateLogisticRegression",
    "PrivateParameterTuning",
    "PrivateStackingClassifier",
    "PrivateTransferStacking",
    "SimComb",
    "bound_rows",
]
