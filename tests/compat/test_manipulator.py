"""ConfigurationManipulator and OpenTuner's parameter classes on our SearchSpace."""

from __future__ import annotations

import numpy as np
import pytest

from ensemble.compat.opentuner.search.manipulator import (
    BooleanArray,
    BooleanParameter,
    BooleanParameterArray,
    ConfigurationManipulator,
    EnumParameter,
    FloatArray,
    FloatParameter,
    IntegerParameter,
    IntegerParameterArray,
    LogFloatParameter,
    LogIntegerParameter,
    ParameterArray,
    PermutationParameter,
    PowerOfTwoParameter,
    ScheduleParameter,
    SelectorParameter,
    SwitchParameter,
)
from ensemble.errors import SpaceError


def _every_kind() -> ConfigurationManipulator:
    m = ConfigurationManipulator()
    m.add_parameter(FloatParameter(0, -5.0, 5.0))                     # integer names, as rosenbrock
    m.add_parameter(IntegerParameter("-O", 0, 3))                     # not an identifier
    m.add_parameter(EnumParameter("align-functions", ["on", "off", "default"]))
    m.add_parameter(EnumParameter(("tuple", 1), [(1, 2), (3, 4)]))    # non-JSON options
    m.add_parameter(LogIntegerParameter("li", 0, 100))                 # log scale from 0, as OpenTuner allows
    m.add_parameter(LogFloatParameter("lf", 0.0, 10.0))
    m.add_parameter(PowerOfTwoParameter("p2", 4, 256))
    m.add_parameter(BooleanParameter("b"))
    m.add_parameter(SwitchParameter("sw", 3))
    m.add_parameter(PermutationParameter("perm", ["a", "b", "c", "d"]))
    m.add_parameter(ScheduleParameter("sched", ["x", "y", "z"], {"z": ["x"]}))
    m.add_parameter(SelectorParameter("sel", ["s1", "s2", "s3"], 1000))
    m.add_parameter(IntegerParameterArray("ia", [0, 10], [5, 20]))
    m.add_parameter(BooleanParameterArray("ba", 3))
    m.add_parameter(ParameterArray("pa", 2, FloatParameter, 0.0, 1.0))
    m.add_parameter(BooleanArray("bar", 4))
    m.add_parameter(FloatArray("far", 3, 2.0, -2.0))
    return m


def test_any_hashable_name_maps_to_identifiers_and_back():
    m = _every_kind()
    space = m.to_space()
    assert all(name.isidentifier() for name in space.names)
    assert space.names[:4] == ["p_0", "p__O", "p_align_functions", "p___tuple___1_"]
    assert m.internal_name(0) == "p_0" and m.internal_name("li") == "li"
    rng = np.random.default_rng(1)
    for internal in space.sample(rng, 20):
        view = m.to_view(internal)
        assert set(view) == {p.name for p in m._top()}
        assert m.to_internal(view) == {**internal, "sched": m.to_internal(view)["sched"]}
        assert space.is_valid(m.to_internal(view))


def test_value_shapes_are_opentuners():
    m = _every_kind()
    view = m.to_view(m.to_space().sample(np.random.default_rng(2), 1)[0])
    assert view[("tuple", 1)] in [(1, 2), (3, 4)]
    assert 0 <= view["li"] <= 100 and isinstance(view["li"], int)
    assert 0.0 <= view["lf"] <= 10.0
    assert view["p2"] in (4, 8, 16, 32, 64, 128, 256)
    assert sorted(view["perm"]) == ["a", "b", "c", "d"]
    assert view["sched"].index("z") < view["sched"].index("x")     # deps hold after normalisation
    assert set(view["sel"]) == {"order", "offsets"} and len(view["sel"]["offsets"]) == 2
    assert 0 <= view["ia"][0] <= 5 and 10 <= view["ia"][1] <= 20
    assert len(view["ba"]) == 3 and all(isinstance(v, bool) for v in view["ba"])
    assert view["bar"].shape == (1, 4) and view["far"].shape == (1, 3)
    sel = m.parameters_dict()["sel"]
    pairs = list(sel.selector_iter(view))
    assert pairs[0] == (None, view["sel"]["order"][0])


def test_sub_parameters_read_their_part_of_the_view():
    m = _every_kind()
    view = m.to_view(m.to_space().sample(np.random.default_rng(3), 1)[0])
    params = m.parameters_dict()
    assert params["ia/1"].get_value(view) == view["ia"][1]
    assert params["sel/order"].get_value(view) == view["sel"]["order"]
    assert params["sel/offsets/0"].get_value(view) == view["sel"]["offsets"][0]


def test_random_and_operators_use_the_seeded_generator():
    a, b = _every_kind(), _every_kind()
    a.seed(7)
    b.seed(7)
    ra, rb = a.random(), b.random()
    assert repr(ra) == repr(rb)
    p = a.parameters_dict()[0]
    cfg = a.copy(ra)
    p.set_unit_value(cfg, 0.75)
    assert p.get_value(cfg) == pytest.approx(2.5)
    assert a.validate(ra)


def test_save_and_load_keep_integer_names(tmp_path):
    m = ConfigurationManipulator()
    m.add_parameter(FloatParameter(0, -1.0, 1.0))
    m.add_parameter(IntegerParameter("BLOCK_SIZE", 1, 10))
    path = tmp_path / "final.json"
    m.save_to_file({0: 0.5, "BLOCK_SIZE": 3}, str(path))
    assert m.load_from_file(str(path)) == {0: 0.5, "BLOCK_SIZE": 3}
    pk = tmp_path / "final.pk"
    m.save_to_file({0: 0.25, "BLOCK_SIZE": 2}, str(pk))
    assert m.load_from_file(str(pk)) == {0: 0.25, "BLOCK_SIZE": 2}


def test_schedule_normalises_like_opentuner():
    s = ScheduleParameter("s", ["a", "b", "c", "d"], {"a": ["b"], "b": ["c"]})
    assert s.deps["a"] == {"b", "c"}                                   # transitive closure
    assert s.topologically_sorted(["c", "b", "a", "d"]) == ["a", "b", "c", "d"]
    assert s.topologically_sorted(["d", "a", "b", "c"]) == ["d", "a", "b", "c"]
    with pytest.raises(SpaceError, match="depends on itself"):
        ScheduleParameter("s", ["a", "b"], {"a": ["b"], "b": ["a"]})


def test_bad_definitions_name_the_parameter():
    with pytest.raises(SpaceError, match="min_value=5 > max_value=1"):
        IntegerParameter("n", 5, 1)
    with pytest.raises(SpaceError, match="not a power of two"):
        PowerOfTwoParameter("p", 3, 16)
    m = ConfigurationManipulator()
    m.add_parameter(IntegerParameter("n", 0, 1))
    with pytest.raises(SpaceError, match="already there"):
        m.add_parameter(IntegerParameter("n", 0, 1))
    with pytest.raises(ValueError, match="no parameters"):
        ConfigurationManipulator().to_space()


def test_proxy_binds_a_configuration():
    m = ConfigurationManipulator()
    m.add_parameter(IntegerParameter("n", 0, 10))
    m.add_parameter(BooleanParameter("b"))
    cfg = {"n": 3, "b": False}
    proxy = m.proxy(cfg)
    assert sorted(proxy.keys()) == ["b", "n"]
    proxy["n"].set_value(7)
    proxy["b"].op1_flip()
    assert cfg == {"n": 7, "b": True} and proxy["n"].max_value == 10
