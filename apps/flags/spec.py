"""Flag specifications: how one tuning parameter becomes command-line tokens.

A compiler flag space is more than a list of parameters: each value must be
rendered to argv tokens (``-funroll-loops``, ``-fno-unroll-loops``, nothing,
``--param=max-unroll-times=8``, ``-Xptxas -O2``), and some flags only mean
something together with another one (``-dlto`` needs relocatable device code,
``--preserve-relocs`` is an nvlink option that only runs when device code is
linked).  A :class:`Flag` carries its parameter, its renderer and its
requirements; :class:`apps.flags.space.FlagSpace` collects them.

Tokens are always a list of separate argv items; nothing here ever builds a
shell string.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Choice", "Flag", "IntRange", "PowerOfTwoRange", "Switch", "Template"]

#: tokens with "{}" placeholders (one argv item each), or a function value -> tokens
Template = Sequence[str] | Callable[[Any], Sequence[str]]


def _render_template(template: Template, value: Any) -> list[str]:
    if callable(template):
        return [str(t) for t in template(value)]
    if isinstance(template, str):
        template = [template]
    return [t.replace("{}", str(value)) for t in template]


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise ValueError(f"flag name={name!r}: give a non-empty name without spaces")
    return name


@dataclass(frozen=True)
class Flag:
    """Base of all flag kinds.

    ``requires`` maps another flag's name to the values it must take whenever
    this flag is *active* (its value differs from ``default``): "a flag only
    valid with another".  ``default`` is the value that means "leave the
    tool's own default"; it always satisfies the requirements.
    """

    name: str
    requires: Mapping[str, Sequence[Any]] = field(default_factory=dict, kw_only=True)
    doc: str = field(default="", kw_only=True)

    def __post_init__(self) -> None:
        _check_name(self.name)

    # -- what subclasses define ------------------------------------------------
    def values(self) -> list[Any]:
        """All legal values, the default first when it is one of them."""
        raise NotImplementedError

    @property
    def default(self) -> Any:
        raise NotImplementedError

    def render(self, value: Any) -> list[str]:
        """The argv tokens for ``value`` (an empty list: tool default)."""
        raise NotImplementedError

    def parameter(self) -> Any:
        """The ``ensemble.space`` parameter for this flag (imported lazily)."""
        raise NotImplementedError

    # -- shared --------------------------------------------------------------
    def is_legal(self, value: Any) -> bool:
        return value in self.values()

    def is_active(self, value: Any) -> bool:
        return value != self.default

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": type(self).__name__,
            "name": self.name,
            "values": self.values() if len(self.values()) <= 64 else [self.values()[0], self.values()[-1]],
            "default": self.default,
            "requires": {k: list(v) for k, v in self.requires.items()},
            "example": self.render(self.values()[-1]),
        }


@dataclass(frozen=True)
class Switch(Flag):
    """An on/off flag.

    Two-state (``tristate=False``): values False/True, False renders ``off``
    (often nothing).  Three-state (``tristate=True``, OpenTuner's gcc tuner
    style): values "default"/"on"/"off", "default" renders nothing so the
    optimisation level decides.
    """

    on: Sequence[str] = ()
    off: Sequence[str] = ()
    tristate: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.on:
            raise ValueError(f"Switch({self.name!r}, on=...) is empty; give the tokens that enable it")

    def values(self) -> list[Any]:
        return ["default", "on", "off"] if self.tristate else [False, True]

    @property
    def default(self) -> Any:
        return "default" if self.tristate else False

    def render(self, value: Any) -> list[str]:
        if value in (True, "on"):
            return list(self.on)
        if value in (False, "off") and value in self.values():
            return list(self.off)
        if value == "default" and self.tristate:
            return []
        raise ValueError(f"flag {self.name!r}: value {value!r} is not one of {self.values()}")

    def parameter(self) -> Any:
        from ensemble.space import Boolean, Enum

        return Enum(self.name, self.values()) if self.tristate else Boolean(self.name)


@dataclass(frozen=True)
class Choice(Flag):
    """One of an enumerated list of values rendered through ``template``.

    A value of ``None`` renders nothing (the tool's default).  ``default_value``
    defaults to the first value.
    """

    choices: Sequence[Any] = ()
    template: Template = ("{}",)
    default_value: Any = field(default="__first__", kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.choices) < 1:
            raise ValueError(f"Choice({self.name!r}, choices=...) is empty; give at least one value")
        if self.default_value != "__first__" and self.default_value not in self.choices:
            raise ValueError(f"Choice({self.name!r}): default_value={self.default_value!r} is not in choices")

    def values(self) -> list[Any]:
        return list(self.choices)

    @property
    def default(self) -> Any:
        return self.choices[0] if self.default_value == "__first__" else self.default_value

    def render(self, value: Any) -> list[str]:
        if value not in self.choices:
            raise ValueError(f"flag {self.name!r}: value {value!r} is not one of {list(self.choices)}")
        return [] if value is None else _render_template(self.template, value)

    def parameter(self) -> Any:
        from ensemble.space import Enum

        return Enum(self.name, list(self.choices))


@dataclass(frozen=True)
class IntRange(Flag):
    """An integer option in ``[low, high]``, always rendered.

    ``omit_default=True`` renders ``default_value`` as nothing, so the default
    configuration is the tool's own behaviour (gcc params).
    ``log=True`` makes the search move on a log scale (LogInteger; needs
    ``low >= 1``), the right view for thresholds spanning decades such as
    gcc's ``max-inline-insns-*``.  ``default_value`` is the tool's own value.
    """

    low: int = 0
    high: int = 0
    template: Template = ("{}",)
    default_value: int | None = field(default=None, kw_only=True)
    log: bool = field(default=False, kw_only=True)
    omit_default: bool = field(default=False, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.low <= self.high:
            raise ValueError(f"IntRange({self.name!r}): low={self.low} must be <= high={self.high}")
        if self.log and self.low < 1:
            raise ValueError(f"IntRange({self.name!r}, log=True) needs low >= 1, got {self.low}")
        if self.default_value is not None and not self.low <= self.default_value <= self.high:
            raise ValueError(f"IntRange({self.name!r}): default_value={self.default_value} outside [{self.low}, {self.high}]")

    def values(self) -> list[Any]:
        return list(range(self.low, self.high + 1))

    def is_legal(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high

    @property
    def default(self) -> Any:
        return self.low if self.default_value is None else self.default_value

    def render(self, value: Any) -> list[str]:
        if not self.is_legal(value):
            raise ValueError(f"flag {self.name!r}: value {value!r} is not an integer in [{self.low}, {self.high}]")
        if self.omit_default and value == self.default:
            return []
        return _render_template(self.template, value)

    def parameter(self) -> Any:
        from ensemble.space import Integer, LogInteger

        return (LogInteger if self.log else Integer)(self.name, self.low, self.high)


@dataclass(frozen=True)
class PowerOfTwoRange(Flag):
    """A power-of-two option in ``[low, high]`` (both powers of two), always rendered."""

    low: int = 1
    high: int = 1
    template: Template = ("{}",)
    default_value: int | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        for label, v in (("low", self.low), ("high", self.high)):
            if v < 1 or v & (v - 1):
                raise ValueError(f"PowerOfTwoRange({self.name!r}): {label}={v} is not a power of two")
        if self.low > self.high:
            raise ValueError(f"PowerOfTwoRange({self.name!r}): low={self.low} must be <= high={self.high}")

    def values(self) -> list[Any]:
        lo, hi = int(math.log2(self.low)), int(math.log2(self.high))
        return [1 << k for k in range(lo, hi + 1)]

    @property
    def default(self) -> Any:
        return self.low if self.default_value is None else self.default_value

    def render(self, value: Any) -> list[str]:
        if value not in self.values():
            raise ValueError(f"flag {self.name!r}: value {value!r} is not a power of two in [{self.low}, {self.high}]")
        return _render_template(self.template, value)

    def parameter(self) -> Any:
        from ensemble.space import PowerOfTwo

        return PowerOfTwo(self.name, self.low, self.high)
