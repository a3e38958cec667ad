"""FlagSpace: a set of flags that renders configurations to argv lists.

It is the bridge between a tool's options and the tuner: ``to_search_space()``
builds the ``ensemble.SearchSpace`` (one parameter per flag, one constraint
per declared dependency, so techniques never propose "-dlto without -rdc"),
and ``render(config)`` turns a tuned configuration back into argv tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from apps.flags.spec import Flag

__all__ = ["FlagSpace", "Requirement"]


class Requirement:
    """The constraint "if ``flag`` is active then ``other`` is in ``allowed``".

    A named callable (not a lambda) so the stored space description says
    what it checks.
    """

    def __init__(self, flag: Flag, other: str, allowed: Sequence[Any]) -> None:
        self.flag_name = flag.name
        self.default = flag.default
        self.other = other
        self.allowed = list(allowed)
        self.__name__ = f"requires({self.flag_name} -> {other} in {self.allowed!r})"
        self.__qualname__ = self.__name__

    def __call__(self, config: Mapping[str, Any]) -> bool:
        return config[self.flag_name] == self.default or config[self.other] in self.allowed

    def expression(self) -> str:
        """The same rule as a Python expression over parameter names."""
        return f"{self.flag_name} == {self.default!r} or {self.other} in {self.allowed!r}"

    def __repr__(self) -> str:
        return self.__name__


class FlagSpace:
    """An ordered collection of flags plus fixed leading/trailing tokens."""

    def __init__(self, flags: Iterable[Flag] = ()) -> None:
        self._flags: dict[str, Flag] = {}
        self.add(*flags)

    def add(self, *flags: Flag) -> FlagSpace:
        for f in flags:
            if f.name in self._flags:
                raise ValueError(f"FlagSpace.add: duplicate flag name {f.name!r}; give each flag a unique name")
            self._flags[f.name] = f
        return self

    def remove(self, *names: str) -> FlagSpace:
        """Drop flags (e.g. ones a tool version rejects); unknown names are an error."""
        for n in names:
            if n not in self._flags:
                raise ValueError(f"FlagSpace.remove: no flag named {n!r}")
            del self._flags[n]
        return self

    @property
    def flags(self) -> list[Flag]:
        return list(self._flags.values())

    @property
    def names(self) -> list[str]:
        return list(self._flags)

    def __getitem__(self, name: str) -> Flag:
        return self._flags[name]

    def __contains__(self, name: object) -> bool:
        return name in self._flags

    def __len__(self) -> int:
        return len(self._flags)

    def requirements(self) -> list[Requirement]:
        reqs = []
        for f in self._flags.values():
            for other, allowed in f.requires.items():
                if other not in self._flags:
                    raise ValueError(
                        f"flag {f.name!r} requires {other!r}, which is not in this FlagSpace; "
                        "add that flag or drop the requirement"
                    )
                reqs.append(Requirement(f, other, allowed))
        return reqs

    def default_config(self) -> dict[str, Any]:
        """Every flag at its 'tool default' value (renders to the fewest tokens)."""
        return {n: f.default for n, f in self._flags.items()}

    def violations(self, config: Mapping[str, Any]) -> list[str]:
        """Human-readable reasons why ``config`` is not valid (empty list: valid)."""
        problems = []
        for n, f in self._flags.items():
            if n not in config:
                problems.append(f"missing flag {n!r}")
            elif not f.is_legal(config[n]):
                problems.append(f"flag {n!r}: illegal value {config[n]!r}")
        extra = sorted(set(config) - set(self._flags))
        if extra:
            problems.append(f"unknown flags {extra}")
        if not problems:
            problems += [r.__name__ for r in self.requirements() if not r(config)]
        return problems

    def is_valid(self, config: Mapping[str, Any]) -> bool:
        return not self.violations(config)

    def render(self, config: Mapping[str, Any]) -> list[str]:
        """argv tokens for ``config`` in flag order; refuses invalid configs."""
        problems = self.violations(config)
        if problems:
            raise ValueError(f"render(config=...): not a valid configuration: {'; '.join(problems)}")
        argv: list[str] = []
        for n, f in self._flags.items():
            argv.extend(f.render(config[n]))
        for tok in argv:
            if not isinstance(tok, str) or "\0" in tok:
                raise ValueError(f"render: flag produced a bad argv token {tok!r}")
        return argv

    def to_search_space(self) -> Any:
        """The ``ensemble.SearchSpace``: one parameter per flag, one constraint per requirement."""
        from ensemble.space import SearchSpace

        space = SearchSpace()
        space.add(*(f.parameter() for f in self._flags.values()))
        for r in self.requirements():
            space.require(r.expression(), name=r.__name__)
        return space

    def to_json(self) -> dict[str, Any]:
        return {"flags": [f.to_json() for f in self._flags.values()],
                "requirements": [r.expression() for r in self.requirements()]}
