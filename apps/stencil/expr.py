"""A tiny expression language for point-update formulas.

Why: every stencil is written once, as a Python function over an accessor,
and the same expression tree is rendered to C (OpenCL and CUDA kernels) and
evaluated with NumPy (the reference).  A generated kernel and its reference
therefore cannot disagree about the formula, only about indexing, which is
exactly what the tests must catch.

Nodes: ``Access`` (a 3-D array at an offset ``(dz, dy, dx)``), ``Line`` (a 1-D
coefficient array along one axis, as SW4's ``strx``), ``Coef`` (entry of the
stencil's coefficient vector: literal, global or constant memory is the
generator's choice), ``Const`` (a literal) and binary/unary operators.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Access",
    "Bin",
    "Coef",
    "Const",
    "Expr",
    "Line",
    "Neg",
    "accesses",
    "as_expr",
    "count_flops",
    "evaluate",
    "lines",
    "render",
    "total",
]

Number = int | float


class Expr:
    """Base class; Python operators build trees."""

    def __add__(self, o: Any) -> Expr:
        return Bin("+", self, as_expr(o))

    def __radd__(self, o: Any) -> Expr:
        return Bin("+", as_expr(o), self)

    def __sub__(self, o: Any) -> Expr:
        return Bin("-", self, as_expr(o))

    def __rsub__(self, o: Any) -> Expr:
        return Bin("-", as_expr(o), self)

    def __mul__(self, o: Any) -> Expr:
        return Bin("*", self, as_expr(o))

    def __rmul__(self, o: Any) -> Expr:
        return Bin("*", as_expr(o), self)

    def __truediv__(self, o: Any) -> Expr:
        return Bin("/", self, as_expr(o))

    def __rtruediv__(self, o: Any) -> Expr:
        return Bin("/", as_expr(o), self)

    def __neg__(self) -> Expr:
        return Neg(self)


@dataclass(frozen=True, eq=True)
class Access(Expr):
    array: str
    dz: int
    dy: int
    dx: int


@dataclass(frozen=True, eq=True)
class Line(Expr):
    array: str
    axis: int  # 0 = z, 1 = y, 2 = x
    d: int


@dataclass(frozen=True, eq=True)
class Coef(Expr):
    index: int


@dataclass(frozen=True, eq=True)
class Const(Expr):
    value: float


@dataclass(frozen=True, eq=True)
class Bin(Expr):
    op: str
    a: Expr
    b: Expr


@dataclass(frozen=True, eq=True)
class Neg(Expr):
    a: Expr


def as_expr(v: Any) -> Expr:
    """Wrap Python numbers as ``Const``; pass expressions through."""
    if isinstance(v, Expr):
        return v
    if isinstance(v, (int, float)):
        return Const(float(v))
    raise TypeError(f"cannot use {v!r} in a stencil formula; use numbers or accessor values")


def _walk(e: Expr, out: list[Expr]) -> None:
    stack = [e]
    while stack:
        n = stack.pop()
        out.append(n)
        if isinstance(n, Bin):
            stack.append(n.a)
            stack.append(n.b)
        elif isinstance(n, Neg):
            stack.append(n.a)


def _leaves(e: Expr) -> tuple[frozenset[Access], frozenset[Line]]:
    """The distinct accesses and line accesses under ``e``, walked once per node and kept on it.

    Why kept: the CUDA generator and its space rules ask for the accesses of
    the same (large: hypterm, rhs4center) output trees once per configuration,
    tens of thousands of times when a space is counted; the walk was most of
    that time.  Nodes are immutable, so the answer cannot go stale.  It is
    stored in the instance ``__dict__`` (past the frozen ``__setattr__``), not
    as a field, so equality, hashing and ``repr`` are unchanged.
    """
    memo = e.__dict__.get("_leaves")
    if memo is None:
        nodes: list[Expr] = []
        _walk(e, nodes)
        memo = (frozenset(n for n in nodes if isinstance(n, Access)),
                frozenset(n for n in nodes if isinstance(n, Line)))
        e.__dict__["_leaves"] = memo
    return memo


def accesses(e: Expr) -> set[Access]:
    """All distinct 3-D array accesses in ``e`` (a new set: the caller may change it)."""
    return set(_leaves(e)[0])


def lines(e: Expr) -> set[Line]:
    """All distinct 1-D line-array accesses in ``e`` (a new set: the caller may change it)."""
    return set(_leaves(e)[1])


def count_flops(exprs: list[Expr]) -> int:
    """Floating-point operations after merging identical subtrees.

    A compiler performs this common-subexpression elimination, so it is the
    honest count for a roofline (operations on coefficients and literals alone
    are folded and not counted).
    """
    seen: set[Expr] = set()

    def const_only(n: Expr) -> bool:
        if isinstance(n, (Const, Coef)):
            return True
        if isinstance(n, Bin):
            return const_only(n.a) and const_only(n.b)
        if isinstance(n, Neg):
            return const_only(n.a)
        return False

    count = 0
    for e in exprs:
        nodes: list[Expr] = []
        _walk(e, nodes)
        for n in nodes:
            if isinstance(n, (Bin, Neg)) and n not in seen and not const_only(n):
                seen.add(n)
                count += 1
    return count


def render(e: Expr, leaf: Callable[[Expr], str]) -> str:
    """C source for ``e``; ``leaf`` renders Access/Line/Coef nodes."""
    if isinstance(e, Const):
        return repr(float(e.value))
    if isinstance(e, Bin):
        return f"({render(e.a, leaf)} {e.op} {render(e.b, leaf)})"
    if isinstance(e, Neg):
        return f"(-{render(e.a, leaf)})"
    return leaf(e)


def evaluate(e: Expr, leaf: Callable[[Expr], Any], memo: dict[Expr, Any] | None = None) -> Any:
    """Evaluate ``e`` with NumPy (or any numbers); ``leaf`` gives leaf values."""
    if memo is None:
        memo = {}
    if e in memo:
        return memo[e]
    if isinstance(e, Const):
        v: Any = e.value
    elif isinstance(e, Bin):
        a = evaluate(e.a, leaf, memo)
        b = evaluate(e.b, leaf, memo)
        if e.op == "+":
            v = a + b
        elif e.op == "-":
            v = a - b
        elif e.op == "*":
            v = a * b
        else:
            v = a / b
    elif isinstance(e, Neg):
        v = -evaluate(e.a, leaf, memo)
    else:
        v = leaf(e)
    memo[e] = v
    return v


def total(terms: list[Any]) -> Expr:
    """Sum of ``terms`` as a balanced tree (shallow recursion, better rounding)."""
    items = [as_expr(t) for t in terms]
    if not items:
        return Const(0.0)
    while len(items) > 1:
        nxt: list[Expr] = [Bin("+", items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]
        if len(items) % 2:
            nxt.append(items[-1])
        items = nxt
    return items[0]
