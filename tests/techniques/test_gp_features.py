"""The GP's divisibility inputs (techniques.gp_features): which columns a space gets, and what they buy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ensemble.errors import TechniqueError
from ensemble.space import Boolean, Enum, Float, Integer, PowerOfTwo, SearchSpace
from techniques.bayes_opt import BayesOpt
from techniques.default import MODEL_FEATURES, DefaultEnsemble
from techniques.gp_features import MAX_LEVELS, divisibility_columns, twos
from tests.techniques.driven import run_technique


def test_twos_counts_the_factors_of_two() -> None:
    assert [twos(v) for v in (1, 2, 3, 16, 48, 96, 256)] == [0, 1, 0, 4, 4, 5, 8]
    with pytest.raises(ValueError, match="positive integer"):
        twos(0)


def test_columns_only_for_integer_levels_where_they_vary() -> None:
    s = SearchSpace()
    s.add(Enum("width", list(range(16, 257, 16))),  # powers of two among others: both columns
          PowerOfTwo("tile", 1, 8),                 # all powers of two: only the factors-of-two column
          Enum("odd", [3, 5, 7]),                   # no factor of two, none a power: no column
          Integer("pair", 1, 2),                    # two levels: no column
          Boolean("flag"), Enum("kind", ["a", "b", "c"]), Float("x", 0.0, 1.0))
    cols = divisibility_columns(s)
    assert [name for name, _ in cols] == ["width", "width", "tile"]
    pow2, width_twos = cols[0][1], cols[1][1]
    assert [v for v in pow2 if pow2[v] == 1.0] == [16, 32, 64, 128, 256]
    # scaled over the levels: 16, 48, 80 ... have four factors of two (the fewest), 256 eight (the most)
    assert width_twos[48] == width_twos[16] == 0.0 and width_twos[256] == 1.0
    assert width_twos[96] == pytest.approx(0.25)
    assert cols[2][1] == {1: 0.0, 2: 1 / 3, 4: 2 / 3, 8: 1.0}


def test_a_parameter_with_very_many_levels_gets_no_column_and_no_table() -> None:
    s = SearchSpace()
    s.add(Integer("n", 1, MAX_LEVELS + 1), Integer("m", 1, MAX_LEVELS))
    assert [name for name, _ in divisibility_columns(s)] == ["m", "m"]


def _width_space() -> SearchSpace:
    s = SearchSpace()
    s.add(Enum("width", list(range(16, 513, 16))), Integer("tile", 1, 8))
    return s


def _width_time(c: dict) -> float:
    """A run time that is several times lower at power-of-two widths, with a smooth bowl in the tile."""
    w = c["width"]
    aligned = 1.0 if w & (w - 1) == 0 else 4.0
    return aligned * (1.0 + 0.1 * (c["tile"] - 5) ** 2) * (1.0 + 0.1 * abs(math.log2(w) - 7))


def test_the_gp_gets_the_columns_after_the_unit_inputs() -> None:
    bo = BayesOpt(features="divisibility", seed=0)
    run_technique(bo, _width_space(), _width_time, budget=12, seed=0)
    x = bo._gx({"width": 96, "tile": 3})
    # width and tile in [0, 1]; then width's power of two and factors of two (96: 5 of 4..9), then tile's
    # (1..8: 1, 2, 4 and 8 are powers of two; 3 is neither, with no factor of two)
    assert len(x) == 2 + 2 + 2
    assert list(x[2:]) == [0.0, pytest.approx(1 / 5), 0.0, 0.0]
    assert len(bo._gx({"width": 96, "tile": 3})) == bo._Xp.shape[1]


def _evaluations_to_optimum(log) -> int:
    return next((n for n, best in log.trace if best <= 1.0 + 1e-9), 10**6)


def test_powers_of_two_are_found_sooner_where_only_they_run_fast() -> None:
    """Behaviour, not plumbing: with the columns the GP learns "aligned" from a few results and measures
    the other powers of two next; over the index alone it keeps measuring their slow neighbours.
    (Seeds 0-7 at budget 40: 12-36 evaluations to the optimum with the columns, 16 to never without.)"""
    div, unit = [], []
    for seed in range(8):
        div.append(_evaluations_to_optimum(run_technique(BayesOpt(features="divisibility"), _width_space(),
                                                         _width_time, budget=40, seed=seed)))
        unit.append(_evaluations_to_optimum(run_technique(BayesOpt(), _width_space(), _width_time, budget=40,
                                                          seed=seed)))
    assert np.median(div) < np.median(unit), (div, unit)
    assert sum(d < u for d, u in zip(div, unit)) >= 5, (div, unit)


def test_bad_feature_names_are_refused_naming_the_choices() -> None:
    with pytest.raises(TechniqueError, match="features must be 'unit'.*'divisibility'"):
        BayesOpt(features="log")
    with pytest.raises(TechniqueError, match="model_features must be one of 'unit', 'divisibility'"):
        DefaultEnsemble(model_features="pow2")


def test_the_default_ensemble_gives_its_model_the_columns_and_can_turn_them_off() -> None:
    assert MODEL_FEATURES == "divisibility"
    on = DefaultEnsemble(seed=0)
    off = DefaultEnsemble(seed=0, model_features="unit")
    assert on.arms[on._model].features == "divisibility"
    assert off.arms[off._model].features == "unit"
