"""Constraints: an expression string or a Python callable, with the names it reads.

Knowing which parameters a constraint reads is what makes large spaces
tractable: constraints that share no parameter split the space into
independent components that are counted, enumerated and sampled separately.
Expressions declare their names by themselves.  For a callable the names are
read from its source when that is provable (every use of the config argument
is ``c["name"]`` or ``c.get("name")``, see :mod:`ensemble.space.callables`);
otherwise it is assumed to read every parameter unless ``names=[...]`` is given
to :meth:`SearchSpace.require`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ensemble.errors import SpaceError
from ensemble.space.callables import infer_names
from ensemble.space.expr import Expression

__all__ = ["Constraint"]


class Constraint:
    """One requirement on configurations."""

    #: set on AllowedTable constraints (see ensemble.space.allowed); None here
    allowed: Any = None

    def __init__(
        self,
        rule: str | Callable[[dict[str, Any]], Any],
        *,
        known: Sequence[str],
        label: str | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        self.expression: Expression | None = None
        self.function: Callable[[dict[str, Any]], Any] | None = None
        if isinstance(rule, str):
            self.expression = Expression(rule)
            self.expression.check_names(known)
            if names is not None:
                raise SpaceError(
                    f"constraint {rule!r}: names= is only for callables; "
                    "an expression lists its own names"
                )
            self.names: tuple[str, ...] = self.expression.names
            self.label = label or rule.strip()
        elif callable(rule):
            self.function = rule
            if names is None:
                # read the source: `lambda c: c["a"] < c["b"]` provably reads a and b only
                inferred = infer_names(rule, known)
                self.names = tuple(known) if inferred is None else inferred
                self.declared = False
            else:
                names = list(names)
                unknown = [n for n in names if n not in known]
                if unknown:
                    raise SpaceError(
                        f"constraint {label or _callable_name(rule)!r}: names= has unknown "
                        f"parameter(s) {unknown}; known parameters: {', '.join(known)}"
                    )
                self.names = tuple(n for n in known if n in names)
                self.declared = True
            self.label = label or _callable_name(rule)
        else:
            raise SpaceError(
                f"require({rule!r}): give an expression string such as 'a * b <= 1024' "
                "or a callable taking the configuration dict"
            )

    @property
    def source(self) -> str | None:
        """Expression text, or the callable's source when it can be found."""
        if self.expression is not None:
            return self.expression.source
        try:
            return inspect.getsource(self.function).strip()  # type: ignore[arg-type]
        except (OSError, TypeError):
            return None

    def holds(self, config: Mapping[str, Any]) -> bool:
        """True when the constraint holds for ``config``."""
        if self.expression is not None:
            return self.expression.scalar(config)
        assert self.function is not None
        try:
            return bool(self.function(dict(config)))
        except ArithmeticError:
            return False
        except KeyError as exc:
            raise SpaceError(
                f"constraint {self.label!r} read parameter {exc.args[0]!r}, which it was not "
                f"given; pass names=[...] listing every parameter it reads (it got {list(config)})"
            ) from None
        except Exception as exc:
            raise SpaceError(
                f"constraint {self.label!r} raised {type(exc).__name__}: {exc}; "
                "fix the callable so it returns True/False for every configuration"
            ) from exc

    def holds_many(
        self,
        columns: Mapping[str, np.ndarray],
        n: int,
        rows: Callable[[], list[dict[str, Any]]],
    ) -> np.ndarray:
        """Bool mask over ``n`` points: vectorised when possible, else point by point.

        ``columns`` maps each name to the values of the points; ``rows`` builds the
        same points as dicts for the per-point fallback.
        """
        if self.expression is not None:
            try:
                out = self.expression.vector(columns, n)
                return np.asarray(out, dtype=bool)
            except Exception:  # noqa: BLE001, S110 - any vectorisation trouble: exact fallback
                pass
        return np.fromiter((self.holds(r) for r in rows()), dtype=bool, count=n)

    def to_json(self) -> dict[str, Any]:
        """Expressions are restorable; callables are recorded by name and source only."""
        if self.expression is not None:
            d: dict[str, Any] = {"expression": self.expression.source}
            if self.label != self.expression.source.strip():
                d["label"] = self.label
            return d
        d = {"callable": self.label, "source": self.source}
        if getattr(self, "declared", False):
            d["names"] = list(self.names)
        return d

    def __repr__(self) -> str:
        return f"Constraint({self.label!r})"


def _callable_name(fn: Callable[..., Any]) -> str:
    return (
        getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    )
