"""OpenTuner's parameter classes, each backed by one or more of our parameters.

Why a parameter has two faces: the app and OpenTuner-style techniques read
and write configurations keyed by the app's own names, with OpenTuner's
value shapes (a permutation is a list, a selector a dict, an array a list);
our drivers, techniques and database see identifier-named parameters of
ensemble.space. Each class here therefore says which of our parameters it
stands for (``_internal_params``) and how a value moves between the two
(``_view_value`` / ``_internal_value``). Names may be anything hashable
(``_names.NameMap``).

Randomness comes from the owning manipulator's seeded ``numpy.random.Generator``
(OpenTuner uses the global ``random`` module).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ensemble.compat.opentuner._names import NameMap
from ensemble.errors import SpaceError
from ensemble.space import (
    Boolean,
    Enum,
    Float,
    Integer,
    LogFloat,
    LogInteger,
    Permutation,
    PowerOfTwo,
)

__all__ = [
    "BooleanParameter",
    "ComplexParameter",
    "EnumParameter",
    "FloatParameter",
    "IntegerParameter",
    "LogFloatParameter",
    "LogIntegerParameter",
    "NumericParameter",
    "Parameter",
    "PermutationParameter",
    "PowerOfTwoParameter",
    "PrimitiveParameter",
    "SwitchParameter",
    "json_native",
]


def json_native(values: Sequence[Any]) -> bool:
    """True when every value can be stored as is in a JSON configuration."""
    return all(v is None or isinstance(v, (str, bool, int, float)) for v in values)


class Parameter:
    """Base class: a named part of a configuration."""

    def __init__(self, name: Hashable) -> None:
        hash(name)  # OpenTuner allows any hashable name; refuse the rest here, at definition
        self.name = name
        self.parent: Any = None
        self._own_rng: np.random.Generator | None = None

    # -- where the value lives in an OpenTuner-shaped configuration ------------
    def _read_node(self, config: Any) -> tuple[Any, Any]:
        """(container, key): a top-level name is a key; a part of an array or selector is a path."""
        if not isinstance(self.parent, Parameter) or not isinstance(self.name, str):
            return config, self.name
        node = config
        parts = self.name.split("/")
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        last: Any = parts[-1]
        return node, (int(last) if isinstance(node, list) else last)

    def _get(self, config: Any) -> Any:
        node, key = self._read_node(config)
        return node[key]

    def _set(self, config: Any, value: Any) -> None:
        node, key = self._read_node(config)
        node[key] = value

    def get_value(self, config: Any) -> Any:
        return self._get(config)

    def set_value(self, config: Any, value: Any) -> None:
        self._set(config, value)

    def set_parent(self, parent: Any) -> None:
        self.parent = parent

    @property
    def rng(self) -> np.random.Generator:
        """The seeded generator of the manipulator this parameter belongs to."""
        node = self.parent
        while node is not None:
            rng = getattr(node, "rng", None)
            if isinstance(rng, np.random.Generator):
                return rng
            node = getattr(node, "parent", None)
        if self._own_rng is None:
            self._own_rng = np.random.default_rng()
        return self._own_rng

    # -- OpenTuner's parameter interface that apps and techniques call ---------
    def is_primitive(self, ignored: Any = None) -> bool:
        return isinstance(self, PrimitiveParameter)

    def is_permutation(self, ignored: Any = None) -> bool:
        return isinstance(self, PermutationParameter)

    def sub_parameters(self) -> list[Parameter]:
        return []

    def validate(self, config: Any) -> bool:
        return True

    def normalize(self, config: Any) -> None:
        """Bring the value into canonical form (schedules sort themselves)."""

    def seed_value(self) -> Any:
        return self.random_value()

    def random_value(self) -> Any:
        raise NotImplementedError

    def op1_randomize(self, config: Any) -> None:
        self._set(config, self.random_value())

    def op1_nop(self, config: Any) -> None:
        """OpenTuner's no-op operator."""

    def copy_value(self, src: Any, dst: Any) -> None:
        self._set(dst, self._get(src))

    def same_value(self, cfg1: Any, cfg2: Any) -> bool:
        return bool(np.all(np.asarray(self._get(cfg1)) == np.asarray(self._get(cfg2))))

    def hash_value(self, config: Any) -> bytes:
        return hashlib.sha256(repr(self._get(config)).encode()).digest()

    def search_space_size(self) -> int | float:
        return 1

    # -- the compatibility layer's side ------------------------------------------
    def _internal_params(self, iname: str, names: NameMap) -> list[Any]:
        raise NotImplementedError

    def _view_value(self, internal: dict[str, Any], iname: str) -> Any:
        return internal[iname]

    def _internal_value(self, value: Any, iname: str) -> dict[str, Any]:
        return {iname: value}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class PrimitiveParameter(Parameter):
    """A number: OpenTuner's techniques move it through its unit value."""

    value_type: type = float

    def __init__(self, name: Hashable, value_type: type | None = None, **_: Any) -> None:
        super().__init__(name)
        if value_type is not None:
            self.value_type = value_type

    def get_unit_value(self, config: Any) -> float:
        low, high = self.legal_range(config)
        if high == low:
            return 0.0
        return (self._scale(self._get(config)) - low) / (high - low)

    def set_unit_value(self, config: Any, unit_value: float) -> None:
        low, high = self.legal_range(config)
        self._set(config, self._clip(self._unscale(low + min(1.0, max(0.0, unit_value)) * (high - low))))

    def legal_range(self, config: Any = None) -> tuple[float, float]:
        raise NotImplementedError

    def _scale(self, v: float) -> float:
        return float(v)

    def _unscale(self, v: float) -> Any:
        return self.value_type(v)

    def _clip(self, v: Any) -> Any:
        return v


class NumericParameter(PrimitiveParameter):
    """A number in ``[min_value, max_value]`` (inclusive)."""

    def __init__(self, name: Hashable, min_value: float, max_value: float, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        if not min_value <= max_value:
            raise SpaceError(f"{type(self).__name__}({name!r}): min_value={min_value!r} > "
                             f"max_value={max_value!r}; swap them")
        self.min_value = self.value_type(min_value)
        self.max_value = self.value_type(max_value)

    def seed_value(self) -> Any:
        return self.min_value  # OpenTuner seeds numbers with their minimum

    def legal_range(self, config: Any = None) -> tuple[float, float]:
        return self._scale(self.min_value), self._scale(self.max_value)

    def random_value(self) -> Any:
        low, high = self.legal_range()
        return self._clip(self._unscale(self.rng.uniform(low, high)))

    def _clip(self, v: Any) -> Any:
        return min(self.max_value, max(self.min_value, self.value_type(v)))

    def validate(self, config: Any) -> bool:
        return bool(self.min_value <= self._get(config) <= self.max_value)

    def search_space_size(self) -> int | float:
        if self.value_type is float:
            return math.inf
        return int(self.max_value - self.min_value) + 1


class IntegerParameter(NumericParameter):
    value_type = int

    def _unscale(self, v: float) -> Any:
        return round(v)

    def random_value(self) -> Any:
        return int(self.rng.integers(self.min_value, self.max_value + 1))

    def _internal_params(self, iname: str, names: NameMap) -> list[Any]:
        return [Integer(iname, self.min_value, self.max_value)]

    def _internal_value(self, value: Any, iname: str) -> dict[str, Any]:
        return {iname: self._clip(round(value))}


class FloatParameter(NumericParameter):
    value_type = float

    def _internal_params(self, iname: str, names: NameMap) -> list[Any]:
        return [Float(iname, self.min_value, self.max_value)]

    def _internal_value(self, value: Any, iname: str) -> dict[str, Any]:
        return {iname: self._clip(float(value))}


class _Shifted(NumericParameter):
    """Log scale as OpenTuner searches it: log2(v + 1 - min), so min may be 0 or negative.

    Our log parameters need a positive lower bound, so the stored value is
    ``v + 1 - min`` (in [1, max + 1 - min]); the app sees ``v``.
    """

    def _scale(self, v: float) -> float:
        return math.log2(v + 1.0 - self.min_value)

    def _unscale(self, v: float) -> Any:
        return self.value_type(2.0 ** v - 1.0 + self.min_value)

    def _view_value(self, internal: dict[str, Any], iname: str) -> Any:
        return self._clip(self.value_type(internal[iname] - 1 + self.min_value))

    def _internal_value(self, value: Any, iname: str) -> dict[str, Any]:
        return {iname: self.value_type(self._clip(value) + 1 - self.min_value)}


class LogIntegerParameter(_Shifted):
    """An integer searched on a log scale."""

    value_type = int

    def _unscale(self, v: float) -> Any:
        return round(2.0 ** v - 1.0 + self.min_value)

    def legal_range(self, config: Any = None) -> tuple[float, float]:
        # widened by half a step so that rounding reaches both ends (as OpenTuner does)
        return self._scale(self.min_value - 0.4999), self._scale(self.max_value + 0.4999)

    def _internal_params(self, iname: str, names: NameMap) -> list[Any]:
        return [LogInteger(iname, 1, self.max_value + 1 - self.min_value)]

    def _internal_value(self, value: Any, iname: str) -> dict[str, Any]:
        return {iname: int(self._clip(round(value))) + 1 - self.min_value}


class LogFloatParameter(_Shifted):
    """A float searched on a log scale."""

    value_type = float

    def _internal_params(self, iname: str, names: NameMap) -> list[Any]:
        return [LogFloat(iname, 1.0, self.max_value + 1.0 - self.min_value)]

    def _internal_value(self, value: Any, iname: str) -> dict[str, Any]:
        stored = float(self._clip(float(value))) + 1.0 - self.min_value
        return {iname: min(self.max_value + 1.0 - self.min_value, max(1.0, stored))}


class PowerOfTwoParameter(NumericParameter):
    """An integer power of two, searched by its exponent."""

    value_type = int

    def __init__(self, name: Hashable, min_value: int, max_value: int, **kwargs: Any) -> None:
        kwargs.pop("value_type", None)
        for what, v in (("min_value", min_value), ("max_value", max_value)):
            if v < 1 or math.log2(v) % 1:
                raise SpaceError(f"PowerOfTwoParameter({name!r}): {what}={v!r} is not a power of two >= 1")
        super().__init__(name, min_value, max_value, **kwargs)

    def _scale(self, v: float) -> float:
        return math.log2(v)

    def _unscale(self, v: float) -> Any:
        return 2 ** round(v)

    def random_value(self) -> Any:
        low, high = self.legal_range()
        return 2 ** int(self.rng.integers(int(low), int(high) + 1))

    def search_space_size(self) -> int | float:
        return int(math.log2(self.max_value) - math.log2(self.min_value)) + 1

    def _internal_params(self, iname: str, names: NameMap) -> list[Any]:
        return [PowerOfTwo(iname, self.min_value, self.max_value)]

    def _internal_value(self, value: Any, iname: str) -> dict[str, Any]:
        return {iname: self._clip(2 ** round(math.log2(max(1, value))))}


class ComplexParameter(Parameter):
    """A value moved by its own operators (choices, orderings, composites)."""


class BooleanParameter(ComplexParameter):
    def random_value(self) -> Any:
        return bool(self.rng.integers(2))

    def op1_flip(self, config: Any) -> None:
        self._set(config, not self._get(config))

    def search_space_size(self) -> int | float:
        return 2

    def _internal_params(self, iname: str, names: NameMap) -> list[Any]:
        return [Boolean(iname)]

    def _internal_value(self, value: Any, iname: str) -> dict[str, Any]:
        return {iname: bool(value)}


class SwitchParameter(ComplexParameter):
    """An unordered choice among ``0 .. option_count - 1``."""

    def __init__(self, name: Hashable, option_count: int) -> None:
        super().__init__(name)
        if int(option_count) < 1:
            raise SpaceError(f"SwitchParameter({name!r}): option_count={option_count!r}; give at least 1")
        self.option_count = int(option_count)

    def random_value(self) -> Any:
        return int(self.rng.integers(self.option_count))

    def search_space_size(self) -> int | float:
        return self.option_count

    def _internal_params(self, iname: str, names: NameMap) -> list[Any]:
        return [Enum(iname, list(range(self.option_count)))]


class EnumParameter(ComplexParameter):
    """An unordered choice among ``options`` (any values; non-JSON ones are stored by index)."""

    def __init__(self, name: Hashable, options: Sequence[Any]) -> None:
        super().__init__(name)
        self.options = list(options)
        if not self.options:
            raise SpaceError(f"EnumParameter({name!r}): options is empty; give at least one option")
        self._by_index = not json_native(self.options)

    def random_value(self) -> Any:
        return self.options[int(self.rng.integers(len(self.options)))]

    def search_space_size(self) -> int | float:
        return len(self.options)

    def _internal_params(self, iname: str, names: NameMap) -> list[Any]:
        return [Enum(iname, list(range(len(self.options))) if self._by_index else self.options)]

    def _view_value(self, internal: dict[str, Any], iname: str) -> Any:
        return self.options[internal[iname]] if self._by_index else internal[iname]

    def _internal_value(self, value: Any, iname: str) -> dict[str, Any]:
        return {iname: self.options.index(value) if self._by_index else value}


class PermutationParameter(ComplexParameter):
    """An ordering of ``items``; the value is a list (non-JSON items are stored by index)."""

    def __init__(self, name: Hashable, items: Sequence[Any]) -> None:
        super().__init__(name)
        self._items = list(items)
        self.size = len(self._items)
        if not self._items:
            raise SpaceError(f"PermutationParameter({name!r}): items is empty; give at least one item")
        self._by_index = not json_native(self._items)

    def seed_value(self) -> Any:
        return list(self._items)  # OpenTuner seeds a permutation with the given order

    def random_value(self) -> Any:
        return [self._items[i] for i in self.rng.permutation(self.size)]

    def search_space_size(self) -> int | float:
        return math.factorial(self.size)

    def validate(self, config: Any) -> bool:
        return sorted(map(repr, self._get(config))) == sorted(map(repr, self._items))

    def _internal_params(self, iname: str, names: NameMap) -> list[Any]:
        return [Permutation(iname, list(range(self.size)) if self._by_index else self._items)]

    def _view_value(self, internal: dict[str, Any], iname: str) -> Any:
        order = internal[iname]
        return [self._items[i] for i in order] if self._by_index else list(order)

    def _internal_value(self, value: Any, iname: str) -> dict[str, Any]:
        values = list(value)
        return {iname: [self._items.index(v) for v in values] if self._by_index else values}


def dumps_config(config: Any) -> str:
    """JSON text of an OpenTuner-shaped configuration (NumPy arrays as lists)."""
    return json.dumps(config, default=lambda o: o.tolist() if hasattr(o, "tolist") else repr(o))
