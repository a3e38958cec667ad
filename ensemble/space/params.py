"""Parameter types of a search space, each with a unit-cube and an index view.

Techniques work on numbers, users on values.  Every parameter therefore maps
its values to ``dims`` coordinates in [0, 1] (``to_unit`` / ``from_unit``) and,
when it has finitely many values, to indices ``0 .. cardinality-1``
(``index_of`` / ``value_at``).  Discrete values sit at the centres of equal
cells of the unit interval, so ``from_unit(to_unit(v)) == v`` exactly and
every value owns the same share of the cube.  Log-scaled parameters use the
log of the value instead, so small values are as easy to reach as large ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ensemble.errors import ConfigurationError, SpaceError
from ensemble.space.canonical import canonical_json

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
    "parameter_from_json",
]


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise SpaceError(
            f"parameter name {name!r} must be a Python identifier (letters, digits, _), "
            "so that constraints can refer to it"
        )
    return name


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_real(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
        v, (bool, np.bool_)
    )



def _bounds_json(kind: str, name: str, low: Any, high: Any) -> dict[str, Any]:
    """JSON of a parameter described by its bounds alone (Integer, PowerOfTwo, Float and log kinds)."""
    return {"type": kind, "name": name, "low": low, "high": high}

class Parameter:
    """One named dimension of the space.  Subclasses define the value set."""

    kind: str = "parameter"
    #: number of unit-cube coordinates this parameter uses
    dims: int = 1
    #: False for continuous parameters (Float, LogFloat)
    discrete: bool = True

    def __init__(self, name: str) -> None:
        self.name = _check_name(name)

    # --- value checks ------------------------------------------------------
    def is_legal(self, value: Any) -> bool:
        """True when ``value`` is one of this parameter's values."""
        raise NotImplementedError

    def check(self, value: Any) -> None:
        """Raise ConfigurationError naming the parameter when ``value`` is not legal."""
        if not self.is_legal(value):
            raise ConfigurationError(
                f"parameter {self.name!r}: value {value!r} is not in {self.describe()}"
            )

    def describe(self) -> str:
        """Short human text of the value set, for error messages."""
        raise NotImplementedError

    # --- unit cube ---------------------------------------------------------
    def to_unit(self, value: Any) -> list[float]:
        """Coordinates of ``value`` in [0, 1]^dims."""
        raise NotImplementedError

    def from_unit(self, x: Sequence[float] | np.ndarray) -> Any:
        """The legal value nearest to the coordinates ``x`` (clipped to [0, 1])."""
        raise NotImplementedError

    def sample(self, rng: np.random.Generator) -> Any:
        """One value drawn uniformly (in this parameter's own scale)."""
        return self.from_unit(rng.random(self.dims))

    # --- serialisation -----------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """JSON-able description; :func:`parameter_from_json` reads it back."""
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and canonical_json(
            self.to_json()
        ) == canonical_json(
            other.to_json()  # type: ignore[attr-defined]
        )

    def __hash__(self) -> int:
        return hash(canonical_json(self.to_json()))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.to_json().items() if k != "type")
        return f"{type(self).__name__}({args})"


class DiscreteParameter(Parameter):
    """A parameter with finitely many values and an index view."""

    @property
    def cardinality(self) -> int:
        """Number of values."""
        raise NotImplementedError

    def values(self) -> list[Any]:
        """All values in index order."""
        return [self.value_at(i) for i in range(self.cardinality)]

    def index_of(self, value: Any) -> int:
        """Index of ``value``; ConfigurationError when it is not legal."""
        raise NotImplementedError

    def value_at(self, index: int) -> Any:
        """Value at ``index`` (0-based)."""
        raise NotImplementedError

    def is_legal(self, value: Any) -> bool:
        try:
            self.index_of(value)
        except ConfigurationError:
            return False
        return True

    def _bad(self, value: Any) -> ConfigurationError:
        return ConfigurationError(
            f"parameter {self.name!r}: value {value!r} is not in {self.describe()}"
        )

    # index <-> unit: value i owns the cell [i/n, (i+1)/n), represented by its centre
    def to_unit(self, value: Any) -> list[float]:
        return [(self.index_of(value) + 0.5) / self.cardinality]

    def from_unit(self, x: Sequence[float] | np.ndarray) -> Any:
        n = self.cardinality
        i = math.floor(min(max(float(x[0]), 0.0), 1.0) * n)
        return self.value_at(min(i, n - 1))

    def sample(self, rng: np.random.Generator) -> Any:
        return self.value_at(int(rng.integers(self.cardinality)))


class Integer(DiscreteParameter):
    """Integers ``low..high`` inclusive."""

    kind = "Integer"

    def __init__(self, name: str, low: int, high: int) -> None:
        super().__init__(name)
        if not (_is_int(low) and _is_int(high)):
            raise SpaceError(
                f"Integer {name!r}: low and high must be ints, got {low!r}, {high!r}"
            )
        if low > high:
            raise SpaceError(f"Integer {name!r}: low={low} > high={high}; swap them")
        self.low, self.high = int(low), int(high)

    @property
    def cardinality(self) -> int:
        return self.high - self.low + 1

    def index_of(self, value: Any) -> int:
        if not _is_int(value) or not self.low <= value <= self.high:
            raise self._bad(value)
        return int(value) - self.low

    def value_at(self, index: int) -> int:
        return self.low + int(index)

    def describe(self) -> str:
        return f"integers {self.low}..{self.high}"

    def to_json(self) -> dict[str, Any]:
        return _bounds_json(self.kind, self.name, self.low, self.high)


class LogInteger(Integer):
    """Integers ``low..high`` (low >= 1) whose unit coordinate is log-scaled."""

    kind = "LogInteger"

    def __init__(self, name: str, low: int, high: int) -> None:
        super().__init__(name, low, high)
        if self.low < 1:
            raise SpaceError(f"LogInteger {name!r}: low={low} must be >= 1 (log scale)")

    def to_unit(self, value: Any) -> list[float]:
        i = self.index_of(value)
        if self.high == self.low:
            return [0.5]
        # cell of value v on the log axis is [log(v-0.5), log(v+0.5)), clipped to the range
        lo, hi = (
            math.log(self.low - 0.5 if self.low > 1 else 1.0),
            math.log(self.high + 0.5),
        )
        v = self.low + i
        a = max(math.log(v - 0.5), lo) if v > 1 else lo
        b = min(math.log(v + 0.5), hi)
        return [((a + b) / 2 - lo) / (hi - lo)]

    def from_unit(self, x: Sequence[float] | np.ndarray) -> Any:
        if self.high == self.low:
            return self.low
        lo, hi = (
            math.log(self.low - 0.5 if self.low > 1 else 1.0),
            math.log(self.high + 0.5),
        )
        t = min(max(float(x[0]), 0.0), 1.0)
        v = math.exp(lo + t * (hi - lo))
        # v lies in the cell [k-0.5, k+0.5) of integer k
        return min(max(math.floor(v + 0.5), self.low), self.high)

    def sample(self, rng: np.random.Generator) -> Any:
        return self.from_unit(rng.random(1))


class PowerOfTwo(DiscreteParameter):
    """Powers of two ``low, 2*low, ..., high`` (both powers of two)."""

    kind = "PowerOfTwo"

    def __init__(self, name: str, low: int, high: int) -> None:
        super().__init__(name)
        for label, v in (("low", low), ("high", high)):
            if not _is_int(v) or v < 1 or (int(v) & (int(v) - 1)) != 0:
                raise SpaceError(
                    f"PowerOfTwo {name!r}: {label}={v!r} must be a power of two >= 1"
                )
        if low > high:
            raise SpaceError(f"PowerOfTwo {name!r}: low={low} > high={high}; swap them")
        self.low, self.high = int(low), int(high)
        self._e0 = self.low.bit_length() - 1

    @property
    def cardinality(self) -> int:
        return self.high.bit_length() - self.low.bit_length() + 1

    def index_of(self, value: Any) -> int:
        if (
            not _is_int(value)
            or not self.low <= value <= self.high
            or (value & (value - 1))
        ):
            raise self._bad(value)
        return int(value).bit_length() - 1 - self._e0

    def value_at(self, index: int) -> int:
        return 1 << (self._e0 + int(index))

    def describe(self) -> str:
        return f"powers of two {self.low}..{self.high}"

    def to_json(self) -> dict[str, Any]:
        return _bounds_json(self.kind, self.name, self.low, self.high)


class Enum(DiscreteParameter):
    """One of a list of JSON-native values (str, int, float, bool, None)."""

    kind = "Enum"

    def __init__(self, name: str, values: Sequence[Any]) -> None:
        super().__init__(name)
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            values = list(values) if not isinstance(values, (str, bytes)) else [values]
        if len(values) == 0:
            raise SpaceError(f"Enum {name!r}: values is empty; give at least one value")
        self._values: list[Any] = []
        self._index: dict[str, int] = {}
        # (type, value) -> index: the hot path; canonical JSON keys are the fallback
        self._fast: dict[tuple[type, Any], int] = {}
        for v in values:
            if not (v is None or isinstance(v, (str, bool, int, float, np.generic))):
                raise SpaceError(
                    f"Enum {name!r}: value {v!r} is not JSON-native (str, int, float, bool, None)"
                )
            key = canonical_json(v)
            if key in self._index:
                raise SpaceError(
                    f"Enum {name!r}: value {v!r} appears twice; list each once"
                )
            v = v.item() if isinstance(v, np.generic) else v
            self._index[key] = len(self._values)
            self._fast[(type(v), v)] = len(self._values)
            self._values.append(v)

    @property
    def cardinality(self) -> int:
        return len(self._values)

    def values(self) -> list[Any]:
        return list(self._values)

    def index_of(self, value: Any) -> int:
        try:
            return self._fast[(type(value), value)]
        except (KeyError, TypeError):
            pass
        try:
            return self._index[canonical_json(value)]
        except (KeyError, ValueError, TypeError):
            raise self._bad(value) from None

    def value_at(self, index: int) -> Any:
        return self._values[int(index)]

    def describe(self) -> str:
        shown = ", ".join(repr(v) for v in self._values[:8])
        more = ", ..." if len(self._values) > 8 else ""
        return f"{{{shown}{more}}}"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.kind, "name": self.name, "values": list(self._values)}


class Boolean(Enum):
    """``False`` or ``True``."""

    kind = "Boolean"

    def __init__(self, name: str) -> None:
        super().__init__(name, [False, True])

    def to_json(self) -> dict[str, Any]:
        return {"type": self.kind, "name": self.name}


class Float(Parameter):
    """Real numbers in ``[low, high]``."""

    kind = "Float"
    discrete = False

    def __init__(self, name: str, low: float, high: float) -> None:
        super().__init__(name)
        if not (_is_real(low) and _is_real(high)) or not (
            math.isfinite(low) and math.isfinite(high)
        ):
            raise SpaceError(
                f"{self.kind} {name!r}: low and high must be finite numbers"
            )
        if low > high:
            raise SpaceError(
                f"{self.kind} {name!r}: low={low} > high={high}; swap them"
            )
        self.low, self.high = float(low), float(high)

    def is_legal(self, value: Any) -> bool:
        return _is_real(value) and self.low <= value <= self.high

    def describe(self) -> str:
        return f"reals [{self.low}, {self.high}]"

    def _fwd(self, v: float) -> float:
        return v

    def _inv(self, t: float) -> float:
        return t

    def to_unit(self, value: Any) -> list[float]:
        self.check(value)
        a, b = self._fwd(self.low), self._fwd(self.high)
        return [0.5 if b == a else (self._fwd(float(value)) - a) / (b - a)]

    def from_unit(self, x: Sequence[float] | np.ndarray) -> float:
        a, b = self._fwd(self.low), self._fwd(self.high)
        t = min(max(float(x[0]), 0.0), 1.0)
        if t == 0.0 or t == 1.0:  # exact bounds, whatever exp(log(x)) rounds to
            return self.low if t == 0.0 else self.high
        return float(min(max(self._inv(a + t * (b - a)), self.low), self.high))

    def to_json(self) -> dict[str, Any]:
        return _bounds_json(self.kind, self.name, self.low, self.high)


class LogFloat(Float):
    """Positive reals in ``[low, high]`` (low > 0), log-scaled in the unit cube."""

    kind = "LogFloat"

    def __init__(self, name: str, low: float, high: float) -> None:
        super().__init__(name, low, high)
        if self.low <= 0:
            raise SpaceError(f"LogFloat {name!r}: low={low} must be > 0 (log scale)")

    def _fwd(self, v: float) -> float:
        return math.log(v)

    def _inv(self, t: float) -> float:
        return math.exp(t)


class Permutation(DiscreteParameter):
    """An ordering of ``items``; the value is a list.

    Unit cube: random keys (Bean, ORSA J. Computing 1994): one coordinate per
    item, the permutation is the items sorted by key.  Index view: the Lehmer
    code rank among all ``k!`` orderings (lexicographic in item positions).
    """

    kind = "Permutation"

    def __init__(self, name: str, items: Sequence[Any]) -> None:
        super().__init__(name)
        items = list(items)
        if not items:
            raise SpaceError(
                f"Permutation {name!r}: items is empty; give at least one item"
            )
        keys = [canonical_json(v) for v in items]
        if len(set(keys)) != len(keys):
            raise SpaceError(f"Permutation {name!r}: items must be distinct")
        self.items = items
        self._pos = {k: i for i, k in enumerate(keys)}
        self.dims = len(items)

    @property
    def cardinality(self) -> int:
        return math.factorial(len(self.items))

    def _positions(self, value: Any) -> list[int]:
        if not isinstance(value, (list, tuple)) or len(value) != len(self.items):
            raise self._bad(value)
        try:
            pos = [self._pos[canonical_json(v)] for v in value]
        except (KeyError, ValueError, TypeError):
            raise self._bad(value) from None
        if len(set(pos)) != len(pos):
            raise self._bad(value)
        return pos

    def index_of(self, value: Any) -> int:
        pos = self._positions(value)
        k, rank = len(pos), 0
        remaining = list(range(k))
        for j, p in enumerate(pos):
            r = remaining.index(p)
            rank += r * math.factorial(k - 1 - j)
            remaining.pop(r)
        return rank

    def value_at(self, index: int) -> list[Any]:
        k, index = len(self.items), int(index)
        remaining = list(range(k))
        out = []
        for j in range(k):
            f = math.factorial(k - 1 - j)
            r, index = divmod(index, f)
            out.append(self.items[remaining.pop(r)])
        return out

    def values(self) -> list[Any]:
        if len(self.items) > 9:
            raise SpaceError(
                f"Permutation {self.name!r}: {len(self.items)}! values are too many to list"
            )
        return super().values()

    def describe(self) -> str:
        return f"orderings of {self.items!r}"

    def to_unit(self, value: Any) -> list[float]:
        pos = self._positions(value)
        k = len(pos)
        keys = [0.0] * k
        for rank, item_pos in enumerate(pos):
            keys[item_pos] = (rank + 0.5) / k
        return keys

    def from_unit(self, x: Sequence[float] | np.ndarray) -> list[Any]:
        order = np.argsort(np.asarray(x, dtype=float)[: len(self.items)], kind="stable")
        return [self.items[int(i)] for i in order]

    def sample(self, rng: np.random.Generator) -> list[Any]:
        return [self.items[int(i)] for i in rng.permutation(len(self.items))]

    def to_json(self) -> dict[str, Any]:
        return {"type": self.kind, "name": self.name, "items": list(self.items)}


_TYPES: dict[str, type[Parameter]] = {
    cls.kind: cls
    for cls in (
        Integer,
        LogInteger,
        PowerOfTwo,
        Enum,
        Boolean,
        Float,
        LogFloat,
        Permutation,
    )
}


def parameter_from_json(d: dict[str, Any]) -> Parameter:
    """Rebuild a parameter from :meth:`Parameter.to_json` output."""
    try:
        cls = _TYPES[d["type"]]
    except KeyError:
        raise SpaceError(
            f"parameter description {d!r}: unknown 'type'; known types: {sorted(_TYPES)}"
        ) from None
    args = {k: v for k, v in d.items() if k != "type"}
    return cls(**args)
