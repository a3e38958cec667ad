"""Cummins et al.'s work-group size prediction (ADAPT 2016) on plain feature arrays.

Models (scikit-learn, imported lazily), the fallbacks of Algorithm 1, the
regressor loop of Algorithm 2, and :class:`WorkgroupSeed`, the technique that
proposes predicted sizes first and then hands over.  Features arrive as plain
numbers: this package never imports ``apps`` (``apps.workgroup`` extracts them).
"""

from techniques.workgroup.fallbacks import FALLBACKS
from techniques.workgroup.predictor import METHODS, Prediction, WorkgroupPredictor
from techniques.workgroup.sizes import baseline, legal, oracle, performance, w_safe

__all__ = ["FALLBACKS", "METHODS", "Prediction", "WorkgroupPredictor", "baseline", "legal", "oracle",
           "performance", "w_safe"]
