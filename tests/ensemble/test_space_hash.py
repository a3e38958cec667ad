"""Canonical JSON, configuration hashes, space JSON round trip and space identity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ensemble import (
    Boolean,
    ConfigurationError,
    Enum,
    Float,
    Integer,
    LogFloat,
    LogInteger,
    Permutation,
    PowerOfTwo,
    SearchSpace,
    canonical_json,
    config_hash,
)
from ensemble.space import from_canonical_json


def test_key_order_does_not_matter():
    assert (
        canonical_json({"b": 1, "a": 2})
        == canonical_json({"a": 2, "b": 1})
        == '{"a":2,"b":1}'
    )
    assert config_hash({"b": 1, "a": 2}) == config_hash({"a": 2, "b": 1})


def test_int_float_bool_are_distinct():
    hashes = {config_hash({"x": v}) for v in (1, 1.0, True)}
    assert len(hashes) == 3
    assert config_hash({"x": 0}) != config_hash({"x": False})


def test_negative_zero_is_zero():
    assert canonical_json({"x": -0.0}) == canonical_json({"x": 0.0}) == '{"x":0.0}'


def test_non_finite_floats_are_encoded_explicitly_and_read_back():
    text = canonical_json({"a": math.inf, "b": -math.inf, "c": math.nan})
    assert "Infinity" not in text and "NaN" not in text
    back = from_canonical_json(text)
    assert back["a"] == math.inf and back["b"] == -math.inf and math.isnan(back["c"])
    assert config_hash({"a": math.inf}) != config_hash({"a": "inf"})


def test_floats_are_repr_exact_and_numpy_scalars_normalised():
    assert canonical_json({"x": 0.1}) == '{"x":0.1}'
    assert from_canonical_json(canonical_json({"x": 1 / 3}))["x"] == 1 / 3
    assert canonical_json(
        {"x": np.int64(3), "y": np.float64(0.5), "z": np.bool_(True)}
    ) == ('{"x":3,"y":0.5,"z":true}')
    assert canonical_json({"p": ("a", "b")}) == canonical_json({"p": ["a", "b"]})


def test_no_whitespace_and_unicode_kept():
    assert canonical_json({"m": "ü x"}) == '{"m":"ü x"}'


def test_non_json_values_are_refused_with_the_key():
    with pytest.raises(ConfigurationError, match=r"config\['x'\]"):
        canonical_json({"x": object()})
    with pytest.raises(ConfigurationError, match="str keys"):
        canonical_json({1: 2})


def test_hash_is_sha256_hex():
    h = config_hash({"a": 1})
    assert len(h) == 64 and int(h, 16) >= 0


def full_space():
    s = SearchSpace(
        Integer("i", 0, 9),
        Float("f", 0.0, 1.0),
        LogInteger("li", 1, 64),
        LogFloat("lf", 0.01, 1.0),
        PowerOfTwo("p", 1, 64),
        Enum("e", ["a", 2, 2.5, None, True]),
        Boolean("b"),
        Permutation("perm", [1, 2, 3]),
    )
    s.require("i * p <= 100", name="budget").require("b or i < 5")
    return s


def test_space_json_round_trip_preserves_behaviour_and_hash():
    s = full_space()
    t = SearchSpace.from_json(s.to_json())
    assert t.to_json() == s.to_json()
    assert t.space_hash() == s.space_hash()
    rng = np.random.default_rng(0)
    for c in s.sample(rng, 100):
        assert t.is_valid(c)
    assert t.count_valid() == s.count_valid()


def test_space_hash_changes_with_the_space():
    s = full_space()
    h = s.space_hash()
    assert SearchSpace.from_json(s.to_json()).space_hash() == h
    s.require("i != 3")
    assert s.space_hash() != h
    t = full_space()
    t.add(Boolean("extra"))
    assert t.space_hash() != h


def test_callables_are_recorded_but_not_restored(caplog):
    def even(c):
        return c["i"] % 2 == 0

    s = SearchSpace(Integer("i", 0, 9)).require(even)
    d = s.to_json()
    assert d["constraints"][0]["callable"].endswith("even")
    assert "return" in d["constraints"][0]["source"]
    t = SearchSpace.from_json(d)
    assert t.count_valid() == 10
    assert "cannot be restored" in caplog.text


def test_expression_spaces_pickle_and_keep_working():
    import pickle

    s = full_space()
    n = s.count_valid()
    t = pickle.loads(pickle.dumps(s))
    assert t.count_valid() == n and t.space_hash() == s.space_hash()
    assert all(t.is_valid(c) for c in t.sample(np.random.default_rng(0), 20))


def test_coerce_makes_file_configs_hash_like_technique_configs():
    s = full_space()
    made = s.sample(np.random.default_rng(0), 1)[0]
    loaded = dict(made)
    loaded["f"] = 1 if made["f"] == 1.0 else made["f"]
    loaded["i"] = float(made["i"])  # 3.0 for an Integer
    loaded["perm"] = tuple(made["perm"])
    loaded["p"] = np.int64(made["p"])
    fixed = s.coerce(loaded)
    assert s.config_hash(fixed) == s.config_hash(made) and s.is_valid(fixed)
    t = SearchSpace(Float("x", 0.0, 2.0), Enum("e", [1.0, 2.5]))
    assert t.coerce({"x": 1, "e": 1}) == {"x": 1.0, "e": 1.0}
    assert type(t.coerce({"x": 1, "e": 1})["x"]) is float
    with pytest.raises(ConfigurationError, match="no value for parameter 'e'"):
        t.coerce({"x": 1})
    with pytest.raises(ConfigurationError, match="unknown parameter"):
        t.coerce({"x": 1, "e": 1.0, "z": 0})
    assert not t.is_valid(t.coerce({"x": 1, "e": 3}))  # not lossless: left for check()
