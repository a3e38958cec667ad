"""Linear models and ANOVA screening (techniques.doe.models) on data from known models."""

from __future__ import annotations

import numpy as np
import pytest

from ensemble.errors import TechniqueError
from ensemble.space import Boolean, Enum, Integer, PowerOfTwo, SearchSpace
from techniques.doe.design import candidate_set, code_columns, fedorov
from techniques.doe.factors import factors_of
from techniques.doe.models import (
    anova,
    auto_model,
    drop_aliased,
    fit,
    model_matrix,
    parse_formula,
    screen,
)
from techniques.doe.subspace import SubSpace

LEVELS = [round(-1 + 0.2 * i, 1) for i in range(11)]  # Section IV-A's levels
ALPHA = 0.01


def truth(c: dict) -> float:
    """x1, x3 (linear) and x5 (quadratic) matter; x2, x4, x6 do not."""
    return 3.0 * c["x1"] - 2.0 * c["x3"] + 1.5 * c["x5"] ** 2


def _screen_once(seed: int) -> tuple[list[str], list[str]]:
    space = SearchSpace().add(*[Enum(f"x{i}", LEVELS) for i in range(1, 7)])
    rng = np.random.default_rng(seed)
    model = auto_model(factors_of(space), "quadratic")
    cands, _ = candidate_set(SubSpace(space), rng, 300)
    x = code_columns(model_matrix(model, cands)[0])
    design = fedorov(x, model.width() + 8, rng)
    configs = [cands[i] for i in design.rows]
    y = [truth(c) + rng.normal(0.0, 0.3) for c in configs]
    rows = anova(fit(model, configs, y))
    return screen(model, rows, ALPHA)


def test_anova_keeps_the_true_factors_and_drops_the_null_ones() -> None:
    """10 synthetic data sets: the three true factors always kept; null terms rejected at about the level."""
    false_terms = 0
    for seed in range(10):
        terms, factors = _screen_once(seed)
        assert {"x1", "x3", "x5"} <= set(factors), (seed, terms)
        false_terms += sum(1 for t in terms if any(n in t for n in ("x2", "x4", "x6")))
    # 6 null terms (x2, x4, x6 and their squares) x 10 data sets, each kept with probability ALPHA
    assert false_terms <= 2


def test_laplacian_style_formula_with_inverse_terms() -> None:
    space = SearchSpace().add(Integer("elements_number", 1, 24), PowerOfTwo("threads_number", 32, 1024),
                              Boolean("load_overlap"))
    model = parse_formula("time ~ elements_number + I(1/elements_number) + threads_number + "
                          "I(1/threads_number) + load_overlap", factors_of(space))
    assert model.response == "time" and len(model.terms) == 5
    rng = np.random.default_rng(0)
    configs = space.sample(rng, 40)
    y = [2.0 / c["elements_number"] + 0.001 * c["threads_number"] + rng.normal(0, 0.01) for c in configs]
    f = fit(model, configs, y)
    assert f.coefficients["I(1 / elements_number)"] == pytest.approx(2.0, rel=0.05)
    _, factors = screen(model, anova(f), ALPHA)
    assert factors == ["elements_number", "threads_number"]


def test_formula_naming_an_unknown_factor_is_refused_with_the_names() -> None:
    space = SearchSpace().add(Integer("a", 1, 4))
    with pytest.raises(TechniqueError, match="names no factor.*factors: a"):
        parse_formula("y ~ a + b", factors_of(space))


def test_categorical_factor_and_names_that_clash_with_patsy() -> None:
    space = SearchSpace().add(Enum("kind", ["x", "y", "z"]), Integer("C", 1, 8))
    facs = factors_of(space)
    assert [f.kind for f in facs] == ["categorical", "numeric"]
    model = auto_model(facs, "quadratic")
    assert model.terms[1] == "C_"
    rng = np.random.default_rng(1)
    configs = space.sample(rng, 30)
    y = [{"x": 0.0, "y": 5.0, "z": 1.0}[c["kind"]] + rng.normal(0, 0.1) for c in configs]
    _, factors = screen(model, anova(fit(model, configs, y)), ALPHA)
    assert factors == ["kind"]


def test_one_level_factors_and_permutations_are_not_factors() -> None:
    space = SearchSpace().add(Integer("a", 3, 3), Enum("b", [7]), Integer("c", 0, 2))
    assert [f.name for f in factors_of(space)] == ["c"]


def test_aliased_terms_are_dropped_for_a_singular_candidate_set() -> None:
    """A constraint makes b equal to a: b's terms cannot be separated from a's and are dropped."""
    space = SearchSpace().add(Integer("a", 0, 4), Integer("b", 0, 4), Integer("c", 0, 4))
    space.require("a == b")
    model = auto_model(factors_of(space), "quadratic")
    cands = [dict(c) for c in space.enumerate_valid()]
    x, _, slices = model_matrix(model, cands)
    kept, dropped = drop_aliased(model, x, slices)
    assert dropped == ["b", "I(b ** 2)"]
    assert "a" in kept.terms and "c" in kept.terms


def test_no_residual_degree_of_freedom_gives_no_anova() -> None:
    space = SearchSpace().add(Integer("a", 0, 4))
    model = auto_model(factors_of(space), "linear")
    assert anova(fit(model, [{"a": 0}, {"a": 4}], [1.0, 2.0])) == []


def _multiplicative(seed: int, n: int = 60) -> tuple[list[dict], list[float], list[float], object]:
    """Times whose effects multiply (log-linear) with a multiplicative error, and the same effects added."""
    from techniques.doe.models import auto_model as _auto

    space = SearchSpace().add(*[Enum(f"x{i}", LEVELS) for i in range(1, 4)])
    rng = np.random.default_rng(seed)
    configs, _ = candidate_set(SubSpace(space), rng, n)
    mult = [float(np.exp(1.0 + 1.2 * c["x1"] - 0.8 * c["x2"] + rng.normal(0.0, 0.25))) for c in configs]
    add = [5.0 + 1.2 * c["x1"] - 0.8 * c["x2"] + rng.normal(0.0, 0.25) for c in configs]
    return configs, mult, add, _auto(factors_of(space), "linear")


def test_box_cox_exponent_is_the_log_for_multiplicative_times() -> None:
    """Section III's power transformation: log-linear times with multiplicative error give lambda ~ 0."""
    from techniques.doe.models import boxcox_lambda

    lams = [boxcox_lambda(m, c, y) for c, y, _, m in (_multiplicative(s) for s in range(5))]
    assert all(abs(lam) <= 0.25 for lam in lams), lams
    lams_add = [boxcox_lambda(m, c, y) for c, _, y, m in (_multiplicative(s) for s in range(5))]
    assert all(lam >= 0.5 for lam in lams_add), lams_add


def test_nonconstant_variance_test_flags_multiplicative_error_only() -> None:
    """The ncvTest-style score test rejects for multiplicative error, and mostly not for additive error."""
    from techniques.doe.models import nonconstant_variance_p

    mult = [nonconstant_variance_p(m, c, y) for c, y, _, m in (_multiplicative(s, 120) for s in range(5))]
    add = [nonconstant_variance_p(m, c, y) for c, _, y, m in (_multiplicative(s, 120) for s in range(5))]
    assert sum(p < 0.05 for p in mult) >= 4, mult
    assert sum(p < 0.05 for p in add) <= 1, add


def test_log_scale_fits_a_power_law_exactly_and_leaves_narrow_and_boolean_factors_alone() -> None:
    """scale="log": log2 of wide positive factors, so time = bx^-1 * t^2 is linear in the model's columns."""
    space = SearchSpace().add(PowerOfTwo("bx", 16, 1024), Enum("t", [1, 2, 4, 8]), Enum("narrow", [3, 4, 5]),
                              Boolean("flag"))
    fs = {f.name: f for f in factors_of(space, scale="log")}
    assert (fs["bx"].scale, fs["t"].scale, fs["narrow"].scale, fs["flag"].scale) == ("log", "log", "linear", "linear")
    assert (fs["bx"].low, fs["bx"].high) == (4.0, 10.0) and fs["bx"].encode(64) == 6.0
    assert all(f.scale == "linear" for f in factors_of(space))  # the default is the paper's
    model = auto_model(list(fs.values()), "linear")
    rng = np.random.default_rng(0)
    configs = space.sample(rng, 20)
    y = [np.log(c["t"] ** 2 / c["bx"]) for c in configs]  # log time: a power law in bx and t
    f = fit(model, configs, y)
    assert f.r2 > 1 - 1e-9
    assert abs(f.coefficients["bx"] + np.log(2)) < 1e-6 and abs(f.coefficients["t"] - 2 * np.log(2)) < 1e-6
    with pytest.raises(ValueError, match="scale"):
        factors_of(space, scale="ln")
