"""``opentuner.search.manipulator``: ConfigurationManipulator and the parameter classes.

Why the manipulator is also a codec: it is the one object that knows both
the app's configuration shape (keys are the app's names, values in
OpenTuner's shapes) and our SearchSpace (identifier names, JSON values).
``to_space()`` builds the space the drivers search; ``to_view(config)``
turns a configuration from the database into what the app reads, and
``to_internal(cfg)`` turns an app's or an OpenTuner technique's
configuration back (seed files, user techniques, ``load_from_file``).
"""

from __future__ import annotations

import copy
import json
import os
import pickle
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ensemble.compat.opentuner._names import NameMap
from ensemble.compat.opentuner.search.composite import (
    Array,
    BooleanArray,
    BooleanParameterArray,
    FloatArray,
    IntegerParameterArray,
    ParameterArray,
    ScheduleParameter,
    SelectorParameter,
)
from ensemble.compat.opentuner.search.parameters import (
    BooleanParameter,
    ComplexParameter,
    EnumParameter,
    FloatParameter,
    IntegerParameter,
    LogFloatParameter,
    LogIntegerParameter,
    NumericParameter,
    Parameter,
    PermutationParameter,
    PowerOfTwoParameter,
    PrimitiveParameter,
    SwitchParameter,
    dumps_config,
)
from ensemble.errors import SpaceError
from ensemble.space import SearchSpace

__all__ = [
    "Array",
    "BooleanArray",
    "BooleanParameter",
    "BooleanParameterArray",
    "ComplexParameter",
    "ConfigurationManipulator",
    "EnumParameter",
    "FloatArray",
    "FloatParameter",
    "IntegerParameter",
    "IntegerParameterArray",
    "LogFloatParameter",
    "LogIntegerParameter",
    "NumericParameter",
    "Parameter",
    "ParameterArray",
    "PermutationParameter",
    "PowerOfTwoParameter",
    "PrimitiveParameter",
    "ScheduleParameter",
    "SelectorParameter",
    "SwitchParameter",
]


class ConfigurationManipulator:
    """The app's parameters; configurations are ``config_type`` (a dict) keyed by the parameter names."""

    def __init__(self, params: Sequence[Parameter] | None = None, config_type: type = dict,
                 seed_config: Any = None, **_: Any) -> None:
        self.params: list[Parameter] = []
        self.config_type = config_type
        self._seed_config = seed_config
        self.rng: np.random.Generator = np.random.default_rng()
        self._layout_cache: tuple[list[tuple[Parameter, str]], SearchSpace] | None = None
        for p in params or []:
            self.add_parameter(p)

    # -- what apps call -----------------------------------------------------------
    def add_parameter(self, p: Parameter) -> None:
        """Add ``p`` (its parts, e.g. array elements, are listed after it, as in OpenTuner)."""
        if not isinstance(p, Parameter):
            raise SpaceError(f"add_parameter({p!r}): give a parameter object such as IntegerParameter(name, lo, hi)")
        if any(q.name == p.name for q in self._top()):
            raise SpaceError(f"add_parameter: a parameter named {p.name!r} is already there; names must be unique")
        p.set_parent(self)
        self.params.append(p)
        self.params.extend(p.sub_parameters())
        self._layout_cache = None

    def parameters(self, config: Any = None) -> list[Parameter]:
        return list(self.params)

    def parameters_dict(self, config: Any = None) -> dict[Hashable, Parameter]:
        return {p.name: p for p in self.params}

    def param_names(self, *configs: Any) -> list[Any]:
        return sorted((p.name for p in self.params), key=repr)

    def proxy(self, config: Any) -> _ManipulatorProxy:
        """``proxy(cfg)[name].op1_randomize()``: parameter operators bound to one configuration."""
        return _ManipulatorProxy(self, config)

    def seed(self, seed: int | None) -> None:
        """Reseed the generator behind random() and the parameters' operators."""
        self.rng = np.random.default_rng(seed)

    def seed_config(self) -> Any:
        """A fixed starting configuration (``seed_config=`` if given, else each parameter's seed value)."""
        if self._seed_config:
            return copy.deepcopy(self._seed_config)
        cfg = self.config_type()
        for p in self._top():
            cfg[p.name] = p.seed_value()
        return cfg

    def random(self) -> Any:
        cfg = self.config_type()
        for p in self._top():
            cfg[p.name] = p.random_value()
        return cfg

    def copy(self, config: Any) -> Any:
        return copy.deepcopy(config)

    def validate(self, config: Any) -> bool:
        try:
            return self.to_space().is_valid(self.to_internal(config))
        except (KeyError, ValueError, TypeError, IndexError):
            return False

    def normalize(self, config: Any) -> None:
        for p in self._top():
            p.normalize(config)

    def hash_config(self, config: Any) -> str:
        return self.to_space().config_hash(self.to_internal(config))

    def search_space_size(self) -> int | float:
        size: int | float = 1
        for p in self._top():
            size *= p.search_space_size()
        return size

    def parameters_to_json(self) -> str:
        return json.dumps([[type(p).__name__, repr(p.name)] for p in self._top()])

    def save_to_file(self, cfg: Any, filename: str, format: str | None = None, mode: str = "w") -> None:
        """Write ``cfg`` as JSON (``.pk``/``.pickle``, or format='pickle': pickled, as OpenTuner allows)."""
        if self._format(filename, format) == "pickle":
            with open(filename, mode if "b" in mode else mode + "b") as fh:
                pickle.dump(cfg, fh)
            return
        with open(filename, mode, encoding="utf-8") as fh:
            fh.write(dumps_config(cfg))

    def load_from_file(self, filename: str, format: str | None = None) -> Any:
        if self._format(filename, format) == "pickle":
            with open(filename, "rb") as fh:
                return pickle.load(fh)
        with open(filename, encoding="utf-8") as fh:
            data = json.load(fh)
        return self._rekey(data)

    @staticmethod
    def _format(filename: str, format: str | None) -> str:
        fmt = (format or os.path.splitext(filename)[1].lstrip(".")).lower()
        return "pickle" if fmt in ("pickle", "pk") else "json"

    def _rekey(self, data: Any) -> Any:
        """JSON keys are strings: give back integer (or other) parameter names where they match."""
        if not isinstance(data, dict):
            return data
        by_text = {str(p.name): p.name for p in self._top()}
        out = self.config_type()
        for key, value in data.items():
            out[by_text.get(key, key)] = value
        return out

    # -- the compatibility layer's side ----------------------------------------
    def _top(self) -> list[Parameter]:
        return [p for p in self.params if p.parent is self]

    def _layout(self) -> tuple[list[tuple[Parameter, str]], SearchSpace]:
        if self._layout_cache is None:
            if not self._top():
                raise SpaceError("ConfigurationManipulator has no parameters; add some with add_parameter(...)")
            names = NameMap()
            layout = [(p, names.internal(p.name)) for p in self._top()]
            space = SearchSpace()
            for p, iname in layout:
                space.add(*p._internal_params(iname, names))
            self._layout_cache = (layout, space)
        return self._layout_cache

    def to_space(self) -> SearchSpace:
        """The SearchSpace our drivers search (identifier names; see _names.NameMap)."""
        return self._layout()[1]

    def internal_name(self, name: Hashable) -> str:
        """Our name for the app's parameter ``name``."""
        for p, iname in self._layout()[0]:
            if p.name == name:
                return iname
        raise KeyError(f"no parameter named {name!r}")

    def to_view(self, internal: dict[str, Any]) -> Any:
        """The app's configuration (its names and value shapes) from one of ours."""
        cfg = self.config_type()
        for p, iname in self._layout()[0]:
            cfg[p.name] = p._view_value(internal, iname)
        return cfg

    def to_internal(self, view: Any) -> dict[str, Any]:
        """Our configuration from the app's (missing parameters raise KeyError naming them)."""
        out: dict[str, Any] = {}
        for p, iname in self._layout()[0]:
            if p.name not in view:
                raise KeyError(f"configuration has no value for parameter {p.name!r}")
            out.update(p._internal_value(view[p.name], iname))
        return out


class _ParameterProxy:
    """A parameter with its configuration bound: ``proxy.set_value(v)`` is ``param.set_value(cfg, v)``."""

    def __init__(self, param: Parameter, config: Any) -> None:
        self.param, self.config = param, config

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.param, name)
        if callable(attr):
            return lambda *args, **kwargs: attr(self.config, *args, **kwargs)
        return attr


class _ManipulatorProxy:
    """OpenTuner's ManipulatorProxy: ``keys()`` and ``[name]`` over one configuration."""

    def __init__(self, manipulator: ConfigurationManipulator, config: Any) -> None:
        self.manipulator, self.cfg = manipulator, config
        self.params = manipulator.parameters_dict(config)

    def keys(self) -> list[Any]:
        return list(self.params)

    def __getitem__(self, name: Hashable) -> _ParameterProxy:
        return _ParameterProxy(self.params[name], self.cfg)
