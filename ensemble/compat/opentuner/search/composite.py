"""OpenTuner's composite parameters: schedules, selectors and arrays.

Why they are built from several of our parameters: a selector is an
ordering plus cut-off offsets, an array is ``count`` elements; our space
stores each part as its own parameter (``<name>__order``, ``<name>__0``...)
so every technique of ours can move them, and the app still sees
OpenTuner's value shapes: ``{'order': [...], 'offsets': [...]}`` for a
selector, a list for ``ParameterArray`` and a ``(1, size)`` NumPy array for
``BooleanArray`` / ``FloatArray``. Where OpenTuner 0.8.8 cannot build a
class (``BooleanParameterArray`` and ``IntegerParameterArray`` fail in its
constructor) we build what the name says; docs/OPENTUNER.md lists this.
"""

from __future__ import annotations

import collections
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ensemble.compat.opentuner._names import NameMap
from ensemble.compat.opentuner.search.parameters import (
    BooleanParameter,
    ComplexParameter,
    IntegerParameter,
    LogIntegerParameter,
    Parameter,
    PermutationParameter,
)
from ensemble.errors import SpaceError
from ensemble.space import Boolean, Float

__all__ = [
    "Array",
    "BooleanArray",
    "BooleanParameterArray",
    "FloatArray",
    "IntegerParameterArray",
    "ParameterArray",
    "ScheduleParameter",
    "SelectorParameter",
]


class ScheduleParameter(PermutationParameter):
    """An ordering of ``items`` in which each key of ``deps`` comes before every item it lists.

    OpenTuner normalises a schedule by a topological sort before measuring;
    so do we, when the ordering is handed to the app (``_view_value``).
    """

    def __init__(self, name: Hashable, items: Sequence[Any], deps: dict[Any, Sequence[Any]]) -> None:
        super().__init__(name, items)
        self.deps = {k: set(v) for k, v in deps.items()}
        self._close_deps()

    def _close_deps(self) -> None:
        """Transitive closure of ``deps``; refuses cycles and unknown items (at definition)."""
        changed = True
        while changed:
            changed = False
            for key, after in self.deps.items():
                extra = set().union(*(self.deps.get(d, set()) for d in after)) - after
                if extra:
                    after |= extra
                    changed = True
        known = set(map(repr, self._items))
        for key, after in self.deps.items():
            if key in after:
                raise SpaceError(f"ScheduleParameter({self.name!r}): {key!r} depends on itself (a cycle); "
                                 "remove the cycle from deps")
            unknown = [v for v in [key, *after] if repr(v) not in known]
            if unknown:
                raise SpaceError(f"ScheduleParameter({self.name!r}): {unknown!r} not in items; "
                                 "deps may name only items")

    def is_topologically_sorted(self, values: Sequence[Any]) -> bool:
        position = {repr(v): i for i, v in enumerate(values)}
        return all(position[repr(k)] < position[repr(a)] for k, after in self.deps.items() for a in after)

    def topologically_sorted(self, values: Sequence[Any]) -> list[Any]:
        """The stable topological order closest to ``values``: repeatedly take the first ready item."""
        values = list(values)
        if self.is_topologically_sorted(values):
            return values
        waiting_on = collections.Counter(repr(a) for after in self.deps.values() for a in after)
        blockers = {repr(k): [repr(a) for a in after] for k, after in self.deps.items()}
        remaining = list(values)
        out: list[Any] = []
        while remaining:
            for i, v in enumerate(remaining):
                if waiting_on[repr(v)] == 0:
                    out.append(remaining.pop(i))
                    for a in blockers.get(repr(v), []):
                        waiting_on[a] -= 1
                    break
        return out

    def normalize(self, config: Any) -> None:
        self._set(config, self.topologically_sorted(self._get(config)))

    def _view_value(self, internal: dict[str, Any], iname: str) -> Any:
        return self.topologically_sorted(super()._view_value(internal, iname))


class SelectorParameter(ComplexParameter):
    """Choose among ``choices`` by input size: an order plus ``len(choices) - 1`` cut-off offsets."""

    def __init__(self, name: Hashable, choices: Sequence[Any], max_cutoff: int,
                 order_class: type = PermutationParameter, offset_class: type = LogIntegerParameter) -> None:
        super().__init__(name)
        self.choices = list(choices)
        self.max_cutoff = int(max_cutoff)
        self.order_param = order_class(f"{name}/order", self.choices)
        self.offset_params = [offset_class(f"{name}/offsets/{i}", 0, self.max_cutoff)
                              for i in range(len(self.choices) - 1)]
        for p in self.sub_parameters():
            p.set_parent(self)

    def sub_parameters(self) -> list[Parameter]:
        return [self.order_param, *self.offset_params]

    def seed_value(self) -> Any:
        return {"order": self.order_param.seed_value(), "offsets": [p.seed_value() for p in self.offset_params]}

    def random_value(self) -> Any:
        return {"order": self.order_param.random_value(), "offsets": [p.random_value() for p in self.offset_params]}

    def search_space_size(self) -> int | float:
        size = self.order_param.search_space_size()
        for p in self.offset_params:
            size *= p.search_space_size()
        return size

    def selector_iter(self, config: Any) -> Any:
        """(cutoff, choice) pairs; the first cutoff is None (as in OpenTuner)."""
        value = self._get(config)
        order = value["order"]
        yield None, order[0]
        cutoff = 0
        for n, offset in enumerate(value["offsets"]):
            if offset > 0:
                cutoff += offset
                yield cutoff, order[n + 1]

    def _internal_params(self, iname: str, names: NameMap) -> list[Any]:
        out = self.order_param._internal_params(names.derived(iname, "order"), names)
        for i, p in enumerate(self.offset_params):
            out += p._internal_params(names.derived(iname, i), names)
        return out

    def _view_value(self, internal: dict[str, Any], iname: str) -> Any:
        return {"order": self.order_param._view_value(internal, f"{iname}__order"),
                "offsets": [p._view_value(internal, f"{iname}__{i}") for i, p in enumerate(self.offset_params)]}

    def _internal_value(self, value: Any, iname: str) -> dict[str, Any]:
        out = self.order_param._internal_value(value["order"], f"{iname}__order")
        for i, p in enumerate(self.offset_params):
            out.update(p._internal_value(value["offsets"][i], f"{iname}__{i}"))
        return out


class ParameterArray(ComplexParameter):
    """``count`` parameters of ``element_type``, each built with ``*args, **kwargs``; the value is a list."""

    def __init__(self, name: Hashable, count: int, element_type: type, *args: Any, **kwargs: Any) -> None:
        super().__init__(name)
        self.count = int(count)
        self.sub_params: list[Parameter] = [self._element(element_type, i, args, kwargs) for i in range(self.count)]
        for p in self.sub_params:
            p.set_parent(self)

    def _element(self, element_type: type, i: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Parameter:
        return element_type(f"{self.name}/{i}", *args, **kwargs)  # type: ignore[no-any-return]

    def sub_parameters(self) -> list[Parameter]:
        return list(self.sub_params)

    def seed_value(self) -> Any:
        return [p.seed_value() for p in self.sub_params]

    def random_value(self) -> Any:
        return [p.random_value() for p in self.sub_params]

    def search_space_size(self) -> int | float:
        size: int | float = 1
        for p in self.sub_params:
            size *= p.search_space_size()
        return size

    def _internal_params(self, iname: str, names: NameMap) -> list[Any]:
        out: list[Any] = []
        for i, p in enumerate(self.sub_params):
            out += p._internal_params(names.derived(iname, i), names)
        return out

    def _view_value(self, internal: dict[str, Any], iname: str) -> Any:
        return [p._view_value(internal, f"{iname}__{i}") for i, p in enumerate(self.sub_params)]

    def _internal_value(self, value: Any, iname: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i, p in enumerate(self.sub_params):
            out.update(p._internal_value(value[i], f"{iname}__{i}"))
        return out


class BooleanParameterArray(ParameterArray):
    """``count`` booleans (a list)."""

    def __init__(self, name: Hashable, count: int) -> None:
        super().__init__(name, count, BooleanParameter)


class IntegerParameterArray(ParameterArray):
    """Integers with their own bounds: element ``i`` lies in ``[min_values[i], max_values[i]]``."""

    def __init__(self, name: Hashable, min_values: Sequence[int], max_values: Sequence[int]) -> None:
        if len(min_values) != len(max_values):
            raise SpaceError(f"IntegerParameterArray({name!r}): min_values and max_values differ in length")
        self._bounds = list(zip(min_values, max_values))
        super().__init__(name, len(self._bounds), IntegerParameter)

    def _element(self, element_type: type, i: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Parameter:
        low, high = self._bounds[i]
        return IntegerParameter(f"{self.name}/{i}", low, high)


class Array(ComplexParameter):
    """``size`` values held as a ``(1, size)`` NumPy array, as OpenTuner's array parameters hold them."""

    def __init__(self, name: Hashable, size: int) -> None:
        super().__init__(name)
        self.size = int(size)

    def _element_param(self, name: str) -> Any:
        raise NotImplementedError

    def _internal_params(self, iname: str, names: NameMap) -> list[Any]:
        return [self._element_param(names.derived(iname, i)) for i in range(self.size)]

    def _view_value(self, internal: dict[str, Any], iname: str) -> Any:
        return np.array([[internal[f"{iname}__{i}"] for i in range(self.size)]])

    def _internal_value(self, value: Any, iname: str) -> dict[str, Any]:
        flat = np.asarray(value).reshape(-1)
        return {f"{iname}__{i}": self._element_value(flat[i]) for i in range(self.size)}

    def _element_value(self, v: Any) -> Any:
        raise NotImplementedError


class BooleanArray(Array):
    def random_value(self) -> Any:
        return self.rng.random((1, self.size)) > 0.5

    def search_space_size(self) -> int | float:
        return 2 ** self.size

    def _element_param(self, name: str) -> Any:
        return Boolean(name)

    def _element_value(self, v: Any) -> Any:
        return bool(v)


class FloatArray(Array):
    """Floats in ``[fmin, fmax]`` (OpenTuner's argument order: size, fmax, fmin)."""

    def __init__(self, name: Hashable, size: int, fmax: float, fmin: float) -> None:
        super().__init__(name, size)
        self.fmax, self.fmin = float(fmax), float(fmin)

    def random_value(self) -> Any:
        return self.rng.random((1, self.size)) * (self.fmax - self.fmin) + self.fmin

    def search_space_size(self) -> int | float:
        return float("inf")

    def _element_param(self, name: str) -> Any:
        return Float(name, self.fmin, self.fmax)

    def _element_value(self, v: Any) -> Any:
        return min(self.fmax, max(self.fmin, float(v)))
