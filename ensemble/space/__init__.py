"""Search spaces: parameter types, constraints, exact counting, valid sampling, hashing."""

from ensemble.space.canonical import canonical_json, config_hash, from_canonical_json
from ensemble.space.params import (
    Boolean,
    DiscreteParameter,
    Enum,
    Float,
    Integer,
    LogFloat,
    LogInteger,
    Parameter,
    Permutation,
    PowerOfTwo,
)
from ensemble.space.space import SearchSpace

__all__ = [
    "Boolean",
    "DiscreteParameter",
    "Enum",
    "Float",
    "Integer",
    "LogFloat",
    "LogInteger",
    "Parameter",
    "Permutation",
    "PowerOfTwo",
    "SearchSpace",
    "canonical_json",
    "config_hash",
    "from_canonical_json",
]
