"""Parameter names: OpenTuner's any-hashable names <-> our identifier names.

Why: OpenTuner lets a parameter be named by anything hashable (its own
rosenbrock example uses the integers 0, 1, ...; gcc flags use names such as
``align-functions`` or ``-O``), while our SearchSpace needs Python
identifiers (they appear in constraint expressions and in the database).
The app only ever sees its own names; the internal ones are what the
database stores, so they must be readable and stable for the same
manipulator (same names in the same order give the same internal names).
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Hashable

__all__ = ["NameMap"]

_UNSAFE = re.compile(r"\W")


class NameMap:
    """Assigns each OpenTuner name a unique identifier, in order of addition."""

    def __init__(self) -> None:
        self._internal: dict[Hashable, str] = {}
        self._taken: set[str] = set()

    def internal(self, name: Hashable) -> str:
        """The identifier used for ``name`` (created on first use)."""
        try:
            return self._internal[name]
        except KeyError:
            pass
        except TypeError as exc:
            raise TypeError(
                f"parameter name {name!r} ({type(name).__name__}) is not hashable; "
                "name parameters by a str, an int or a tuple"
            ) from exc
        candidate = self._clean(name)
        unique, n = candidate, 2
        while unique in self._taken:
            unique, n = f"{candidate}_{n}", n + 1
        self._internal[name] = unique
        self._taken.add(unique)
        return unique

    @staticmethod
    def _clean(name: Hashable) -> str:
        if isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name):
            return name
        text = _UNSAFE.sub("_", str(name)) or "param"
        return f"p_{text}"

    def derived(self, base: str, suffix: object) -> str:
        """A reserved identifier for a part of parameter ``base`` (array element, selector offset)."""
        name = f"{base}__{suffix}"
        if name in self._taken:
            raise ValueError(
                f"parameter name {name!r} is used twice; rename the parameter that is called {name!r}"
            )
        self._taken.add(name)
        return name
