"""Garvey and Abdelrahman's tuning strategy for stencils (Scientific Programming 2018).

``Garvey`` (registered as ``garvey``): random-forest choice of the data-loading
technique, then grouped exhaustive heuristics from specification files;
``GarveyRand`` and ``ExpS``: the paper's two reference approaches (Sec. 8.1).
The random-forest model (``predictor``) loads scikit-learn lazily.
"""

from techniques.garvey.heuristic import HEURISTICS, Garvey, load_heuristic
from techniques.garvey.references import ExpS, GarveyRand
from techniques.garvey.spec import HeuristicSpec, SpecError, parse_spec

__all__ = ["HEURISTICS", "ExpS", "Garvey", "GarveyRand", "HeuristicSpec", "SpecError", "load_heuristic",
           "parse_spec"]
