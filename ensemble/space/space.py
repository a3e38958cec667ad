"""SearchSpace: parameters plus constraints, with the views techniques need.

Users describe a space; techniques move in it through the unit cube
(``to_unit`` / ``from_unit``) or the index view, and ask the space for valid
points (``sample``, ``repair``, ``neighbours``, ``mutate``).  The heavy lifting
for constraints (splitting into independent components, exact enumeration,
sampling) lives in :mod:`ensemble.space.components`; this module keeps the
public surface and caches that analysis until the space changes.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import logging
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ensemble.errors import ConfigurationError, InfeasibleSpaceError, SpaceError
from ensemble.space.allowed import AllowedTable
from ensemble.space.canonical import canonical_json, config_hash, normalize_value
from ensemble.space.components import Component, split_components
from ensemble.space.constraints import Constraint
from ensemble.space.params import (
    DiscreteParameter,
    Float,
    Parameter,
    parameter_from_json,
)

__all__ = ["SearchSpace"]

_log = logging.getLogger("ensemble.space")

Rule = str | Callable[[dict[str, Any]], Any]


class SearchSpace:
    """A set of named parameters and the constraints valid configurations meet."""

    def __init__(self, *params: Parameter) -> None:
        self._params: dict[str, Parameter] = {}
        self._constraints: list[Constraint] = []
        self._components: list[Component] | None = None
        self._by_param: tuple[list[Component], dict[str, list[Constraint]]] | None = (
            None
        )
        self._free: (
            tuple[list[Component], list[Parameter], list[Component], np.ndarray] | None
        ) = None
        self._slices: dict[str, slice] = {}
        self._dims = 0
        if params:
            self.add(*params)

    def __getstate__(self) -> dict[str, Any]:
        # the component analysis is a cache: rebuild it after unpickling
        state = dict(self.__dict__)
        state["_components"] = None
        state["_by_param"] = None
        state["_free"] = None
        return state

    # --- building ----------------------------------------------------------
    def add(self, *params: Parameter) -> SearchSpace:
        """Add parameters; returns self so calls chain."""
        for p in params:
            if not isinstance(p, Parameter):
                raise SpaceError(
                    f"add({p!r}): not a Parameter; use Integer, Float, LogInteger, LogFloat, "
                    "PowerOfTwo, Enum, Boolean or Permutation"
                )
            if p.name in self._params:
                raise SpaceError(
                    f"add(): parameter {p.name!r} is already in the space; rename one"
                )
            self._params[p.name] = p
            self._slices[p.name] = slice(self._dims, self._dims + p.dims)
            self._dims += p.dims
        self._components = None
        return self

    def require(
        self, rule: Rule, *, name: str | None = None, names: Sequence[str] | None = None
    ) -> SearchSpace:
        """Add a constraint: an expression over parameter names or a callable.

        ``name`` labels it in error messages.  ``names`` (callables only) lists the
        parameters the callable reads; without it the callable is assumed to read
        all of them, which prevents splitting the space into independent parts.
        """
        self._constraints.append(
            Constraint(rule, known=list(self._params), label=name, names=names)
        )
        self._components = None
        return self

    def narrowed(self, exprs: Sequence[str]) -> SearchSpace:
        """A copy with each expression of ``exprs`` added as a constraint labelled ``--require EXPR``.

        Why a copy: ``--require`` narrows one run, and an app may hand out the same space object every
        time. An expression the space cannot take (an unknown name, a syntax error) raises ConfigurationError
        naming it and the flag. No expressions: ``self`` itself.
        """
        if not exprs:
            return self
        out = copy.deepcopy(self)
        for e in exprs:
            try:
                out.require(e, name=f"--require {e!r}")
            except SpaceError as exc:
                raise ConfigurationError(f"--require {e!r}: {exc}") from exc
        return out

    def restrict_to(
        self,
        configs: Iterable[Mapping[str, Any]],
        *,
        name: str = "allowed configurations",
    ) -> SearchSpace:
        """Allow only the listed configurations (of the parameters their keys name).

        For recorded spaces: the valid set is exactly what was measured.  Unlike
        an equivalent callable, the table seeds exact counting and uniform
        sampling directly, however large the grid of those parameters.
        """
        configs = list(configs)
        if not configs:
            raise SpaceError(
                "restrict_to(): no configurations given; give at least one"
            )
        keys = list(configs[0])
        unknown = [k for k in keys if k not in self._params]
        if unknown:
            raise SpaceError(
                f"restrict_to(): unknown parameter(s) {unknown}; known parameters: "
                f"{', '.join(self._params)}"
            )
        params = [p for n, p in self._params.items() if n in keys]
        self._constraints.append(AllowedTable(params, configs, name))  # type: ignore[arg-type]
        self._components = None
        return self

    # --- basic views -------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return list(self._params)

    @property
    def params(self) -> list[Parameter]:
        return list(self._params.values())

    @property
    def constraints(self) -> list[Constraint]:
        return list(self._constraints)

    def __getitem__(self, name: str) -> Parameter:
        try:
            return self._params[name]
        except KeyError:
            raise ConfigurationError(
                f"unknown parameter {name!r}; known parameters: {', '.join(self._params)}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._params

    def __len__(self) -> int:
        return len(self._params)

    def __repr__(self) -> str:
        return f"SearchSpace({len(self._params)} parameters, {len(self._constraints)} constraints)"

    @property
    def dims(self) -> int:
        """Length of the unit-cube vector."""
        return self._dims

    @property
    def size(self) -> float:
        """Product of the parameter cardinalities (an int), or math.inf with Float params."""
        total = 1
        for p in self._params.values():
            if not isinstance(p, DiscreteParameter):
                return math.inf
            total *= p.cardinality
        return total

    def _comps(self) -> list[Component]:
        if self._components is None:
            self._components = split_components(self.params, self._constraints)
        return self._components

    def _touching(self) -> dict[str, list[Constraint]]:
        """Parameter name -> constraints that read it (cached with the components)."""
        comps = self._comps()
        if self._by_param is None or self._by_param[0] is not comps:
            table: dict[str, list[Constraint]] = {n: [] for n in self._params}
            for c in self._constraints:
                for n in c.names:
                    table[n].append(c)
            self._by_param = (comps, table)
        return self._by_param[1]

    def components(self) -> list[list[str]]:
        """Parameter names of each independent component (for techniques and reports)."""
        return [c.names for c in self._comps()]

    # --- validity ----------------------------------------------------------
    def check(self, config: Mapping[str, Any]) -> None:
        """Raise ConfigurationError naming the parameter or constraint at fault."""
        if not isinstance(config, Mapping):
            raise ConfigurationError(
                f"config {config!r} must be a dict of parameter name -> value"
            )
        missing = [n for n in self._params if n not in config]
        extra = [n for n in config if n not in self._params]
        if missing or extra:
            raise ConfigurationError(
                f"config keys do not match the space: missing {missing}, unknown {extra}; "
                f"parameters are {', '.join(self._params)}"
            )
        for n, p in self._params.items():
            p.check(config[n])
        for c in self._constraints:
            if not c.holds(config):
                raise ConfigurationError(
                    f"config violates constraint {c.label!r}: {dict(config)}"
                )

    def coerce(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """``config`` with each value in its parameter's own type (for configs read from files).

        JSON and user code blur number types: ``1`` for a Float, ``4.0`` for an
        Integer, NumPy scalars, tuples for permutations.  The canonical hash tells
        them apart, so seed configurations should pass through here first.  Only
        lossless conversions are made; anything else is left for :meth:`check`
        to report.  Constraints are not checked.
        """
        out = {}
        for n, p in self._params.items():
            if n not in config:
                raise ConfigurationError(
                    f"config has no value for parameter {n!r}; parameters are "
                    f"{', '.join(self._params)}"
                )
            v = normalize_value(config[n], f"config[{n!r}]")
            is_int = isinstance(v, int) and not isinstance(v, bool)
            if isinstance(p, Float) and is_int:
                v = float(v)  # Float values are floats, whatever JSON wrote
            elif not p.is_legal(v):
                if isinstance(v, float) and v.is_integer() and p.is_legal(int(v)):
                    v = int(v)
                elif is_int and p.is_legal(float(v)):
                    v = float(v)
            out[n] = v
        extra = [n for n in config if n not in self._params]
        if extra:
            raise ConfigurationError(
                f"config has unknown parameter(s) {extra}; parameters are {', '.join(self._params)}"
            )
        return out

    def is_valid(self, config: Mapping[str, Any]) -> bool:
        """True when ``config`` is a point of the space meeting every constraint."""
        if not isinstance(config, Mapping) or len(config) != len(self._params):
            return False
        for n, p in self._params.items():
            if n not in config or not p.is_legal(config[n]):
                return False
        return all(c.holds(config) for c in self._constraints)

    def violated(self, config: Mapping[str, Any]) -> list[str]:
        """Labels of the constraints ``config`` violates (values assumed legal)."""
        return [c.label for c in self._constraints if not c.holds(config)]

    # --- unit cube ---------------------------------------------------------
    def to_unit(self, config: Mapping[str, Any]) -> np.ndarray:
        """Coordinates of ``config`` in [0, 1]^dims."""
        out: list[float] = []
        for n, p in self._params.items():
            if n not in config:
                raise ConfigurationError(
                    f"to_unit(): config has no value for parameter {n!r}"
                )
            out.extend(p.to_unit(config[n]))
        return np.array(out, dtype=float)

    def from_unit(self, x: Sequence[float] | np.ndarray) -> dict[str, Any]:
        """Nearest legal values to ``x`` (clipped to the cube); constraints may fail."""
        x = np.asarray(x, dtype=float)
        if x.shape != (self._dims,):
            raise ConfigurationError(
                f"from_unit(x): x has shape {x.shape}, the space needs ({self._dims},)"
            )
        xs = x.tolist()
        return {n: p.from_unit(xs[self._slices[n]]) for n, p in self._params.items()}

    # --- valid points ------------------------------------------------------
    def _need_params(self, what: str) -> None:
        if not self._params:
            raise InfeasibleSpaceError(
                f"{what}: the space has no parameters; add some with space.add(...)"
            )

    def sample(self, rng: np.random.Generator, n: int = 1) -> list[dict[str, Any]]:
        """``n`` valid configurations, independent draws.

        Exactly uniform over the valid set of every component small enough to
        tabulate (exact enumeration, cached); larger components use rejection
        inside the component, a randomised pruned join, then depth-first search
        (see ensemble.space.fallback).  InfeasibleSpaceError names the
        constraints when nothing valid exists or can be found.
        """
        self._need_params("sample()")
        comps = self._comps()
        if self._free is None or self._free[0] is not comps:
            # unconstrained finite parameters are drawn together, in one generator call
            is_free = [
                not c.constraints and len(c.params) == 1 and c.discrete for c in comps
            ]
            free = [c.params[0] for c, f in zip(comps, is_free) if f]
            rest = [c for c, f in zip(comps, is_free) if not f]
            cards = np.array([p.cardinality for p in free], dtype=np.int64)  # type: ignore[attr-defined]
            self._free = (comps, free, rest, cards)
        _, free, rest, cards = self._free
        parts = [c.sample(rng, n) for c in rest]
        if free:
            idx = rng.integers(0, cards, size=(n, len(free))).tolist()
            parts.append(
                [{p.name: p.value_at(i) for p, i in zip(free, row)} for row in idx]  # type: ignore[attr-defined]
            )
        return [self._merge(part[i] for part in parts) for i in range(n)]

    def _merge(self, parts: Any) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for d in parts:
            merged.update(d)
        return {k: merged[k] for k in self._params}

    def repair(
        self, config: Mapping[str, Any], rng: np.random.Generator
    ) -> dict[str, Any]:
        """The valid configuration nearest to ``config`` in the index view.

        Components whose part of ``config`` is already valid are kept as they are;
        the others move to their nearest valid assignment (L1 over indices
        normalised by each parameter's range; ties broken by ``rng``).  Missing or
        illegal values are first replaced by the nearest legal number (clipped)
        or, for non-numbers, a random legal value.
        """
        self._need_params("repair()")
        if self.is_valid(config):
            return {n: config[n] for n in self._params}
        out = dict(config)
        for n, p in self._params.items():
            if n not in out or not p.is_legal(out[n]):
                out[n] = _nearest_legal(p, out.get(n), rng)
        parts = []
        for comp in self._comps():
            part = {n: out[n] for n in comp.names}
            if comp.constraints and not comp.holds(part):
                part = comp.nearest(part, rng)
            parts.append(part)
        return self._merge(parts)

    def neighbours(
        self, config: Mapping[str, Any], rng: np.random.Generator
    ) -> list[dict[str, Any]]:
        """Valid configurations one step away (one index +-1, adjacent swap), shuffled."""
        if not self.is_valid(config):
            self.check(config)  # raises, naming what is wrong
        touching = self._touching()
        out = []
        for n, p in self._params.items():
            for v in _steps(p, config[n]):
                cand = dict(config)
                cand[n] = v
                # only the constraints reading n can change their verdict
                if all(c.holds(cand) for c in touching[n]):
                    out.append(cand)
        order = rng.permutation(len(out))
        return [out[int(i)] for i in order]

    def mutate(
        self, config: Mapping[str, Any], rng: np.random.Generator, rate: float = 0.1
    ) -> dict[str, Any]:
        """A valid configuration with each parameter redrawn with probability ``rate``.

        At least one parameter changes when the space allows it; invalid results
        are redrawn a few times, then repaired.
        """
        names = self.names
        cand: dict[str, Any] = dict(config)
        for _ in range(16):
            cand = dict(config)
            flips = rng.random(len(names)) < rate
            if not flips.any():
                flips[int(rng.integers(len(names)))] = True
            for name, f in zip(names, flips):
                if f:
                    cand[name] = self._params[name].sample(rng)
            if cand != config and self.is_valid(cand):
                return cand
        return self.repair(cand, rng)

    # --- counting and enumeration -----------------------------------------
    def count_valid(self, limit: int = 10**7, *, merge: bool = False) -> int | None:
        """Exact number of valid configurations, or None when it cannot be computed.

        Each independent component whose grid has at most ``limit`` points is
        enumerated exactly, so the count is exact far beyond ``limit`` when the
        constraints split the space; None when a component is larger or continuous.

        ``merge=True`` counts each component by variable elimination instead
        (partial rows that agree on every parameter a pending constraint still
        reads are merged, with a multiplicity): the same number, often many
        times faster and within ``limit`` for spaces of billions of valid
        configurations, but nothing is tabulated on the way, so later
        ``sample`` and ``repair`` calls do not reuse it.  The default keeps
        the join, whose table those calls reuse.
        """
        if not isinstance(merge, bool):
            raise SpaceError(f"count_valid(merge={merge!r}): merge must be True or False")
        if not self._params:
            return 0
        total = 1
        for comp in self._comps():
            c = comp.count_merged(limit) if merge else comp.count(limit)
            if c is None:
                return None
            total *= c
        return total

    def enumerate_valid(self, limit: int = 10**7) -> Iterator[dict[str, Any]]:
        """Every valid configuration exactly once (components' product order)."""
        self._need_params("enumerate_valid()")
        tables: list[tuple[Component, np.ndarray | None]] = []
        for comp in self._comps():
            if not comp.discrete or comp.grid_size > limit:
                raise SpaceError(
                    f"enumerate_valid(): parameters {', '.join(comp.names)} span "
                    f"{comp.grid_size} points (limit {limit}); use sample() instead, or raise limit"
                )
            if comp.constraints:
                t = comp.table(limit)
                assert t is not None
                tables.append((comp, t))
            else:
                tables.append((comp, None))

        def rows(comp: Component, t: np.ndarray | None) -> Iterator[tuple[Any, ...]]:
            values = [p.values() for p in comp.params]  # type: ignore[attr-defined]
            if t is None:
                yield from itertools.product(*values)
                return
            for start in range(0, t.shape[0], 1 << 16):  # decode column-wise, in blocks
                block = t[start : start + (1 << 16)]
                cols = [
                    [vals[i] for i in block[:, j].tolist()]
                    for j, vals in enumerate(values)
                ]
                yield from zip(*cols)

        concat = [n for comp, _ in tables for n in comp.names]
        where = {n: i for i, n in enumerate(concat)}
        order = [(n, where[n]) for n in self._params]
        # materialise all but the first component (they are re-iterated)
        rest = [list(rows(c, t)) for c, t in tables[1:]]
        for head in rows(*tables[0]):
            for tail in itertools.product(*rest):
                flat = (
                    head + tuple(itertools.chain.from_iterable(tail)) if tail else head
                )
                yield {n: flat[i] for n, i in order}

    # --- identity ----------------------------------------------------------
    @staticmethod
    def canonical_json(config: Mapping[str, Any]) -> str:
        """Sorted keys, repr-exact floats, no whitespace: see ensemble.space.canonical."""
        return canonical_json(config)

    @staticmethod
    def config_hash(config: Mapping[str, Any]) -> str:
        """SHA-256 hex of canonical_json(config)."""
        return config_hash(config)

    def to_json(self) -> dict[str, Any]:
        """Parameters and constraints (callables recorded by name and source only)."""
        return {
            "parameters": [p.to_json() for p in self._params.values()],
            "constraints": [c.to_json() for c in self._constraints],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SearchSpace:
        """Rebuild a space from :meth:`to_json`; callable constraints cannot be restored."""
        if not isinstance(d, Mapping) or "parameters" not in d:
            raise SpaceError(
                "SearchSpace.from_json(d): d must be a dict with a 'parameters' list"
            )
        s = cls(*(parameter_from_json(p) for p in d["parameters"]))
        for c in d.get("constraints", []):
            if "allowed" in c:
                names = c["allowed"]
                s.restrict_to(
                    (dict(zip(names, row)) for row in c["rows"]),
                    name=c.get("label", "allowed configurations"),
                )
            elif "expression" in c:
                s.require(c["expression"], name=c.get("label"))
            else:
                _log.warning(
                    "constraint %r is a callable and cannot be restored from JSON; "
                    "the rebuilt space does not enforce it",
                    c.get("callable"),
                )
        return s

    def space_hash(self) -> str:
        """SHA-256 of the canonical JSON of :meth:`to_json` (identity of the space)."""
        return hashlib.sha256(
            canonical_json(self.to_json()).encode("utf-8")
        ).hexdigest()


def _nearest_legal(p: Parameter, v: Any, rng: np.random.Generator) -> Any:
    """A legal value of ``p`` close to the illegal ``v`` (clipped numbers) or a random one."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        if isinstance(p, DiscreteParameter):
            try:
                vals = np.asarray(p.values(), dtype=float)
                return p.value_at(int(np.argmin(np.abs(vals - v))))
            except (TypeError, ValueError, SpaceError):
                pass
        else:
            return float(min(max(v, p.low), p.high))  # type: ignore[attr-defined]
    return p.sample(rng)


def _steps(p: Parameter, v: Any) -> list[Any]:
    """Values one step from ``v`` in ``p``'s index (or unit) view."""
    from ensemble.space.params import Permutation

    if isinstance(p, Permutation):
        out = []
        for i in range(len(v) - 1):
            w = list(v)
            w[i], w[i + 1] = w[i + 1], w[i]
            out.append(w)
        return out
    if isinstance(p, DiscreteParameter):
        i = p.index_of(v)
        return [p.value_at(j) for j in (i - 1, i + 1) if 0 <= j < p.cardinality]
    x = p.to_unit(v)[0]
    return [
        p.from_unit([min(max(x + d, 0.0), 1.0)])
        for d in (-0.05, 0.05)
        if 0 <= x + d <= 1
    ]
