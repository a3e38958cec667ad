"""Heuristic specification files (Garvey & Abdelrahman 2018, Sec. 7.3, Algorithm 3).

Why a parser and not ``eval``: the files are user input; a tokenizer and a
recursive-descent parser accept exactly the language below and report the
line and column of anything else.

The language, as Algorithm 3 writes it::

    BX=1,BY=1,WY=1,...,WX=1:NX:*2,CX=1:NX/WX:*2;
    WY=1:NY:*2, CY=1:NY/WY:*2;

* A *statement* (one group of the heuristic) ends with ``;`` and holds
  comma-separated *assignments*.  Newlines are spaces; ``#`` starts a comment.
* ``NAME=expr`` fixes a parameter; ``NAME=start:stop:*k`` (or ``+k``) is a
  range that the group explores exhaustively, ``start, start*k, ...`` up to
  ``stop``.  Later assignments of a statement may use earlier ones
  (``CX=1:NX/WX:*2``).
* Expressions: integers and decimals, ``+ - * / %``, parentheses,
  comparisons, ``min(a, b)``, ``max(a, b)``, ``if(cond, a, b)``; names are
  parameters (the value being tried, else the current configuration),
  constants the technique provides (the data size ``NX NY NZ``, ``ITER`` the
  repetition index from 0, a loading's ``VMIN VMAX``) and ``best.NAME``, the
  best configuration found so far (Sec. 7.3).
* ``/`` is exact: it gives an integer when the division is exact, else a
  fraction (which no power-of-two parameter accepts, so the candidate drops).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ensemble.errors import ConfigurationError

__all__ = ["Assign", "HeuristicSpec", "SpecError", "Statement", "parse_spec"]

_MAX_RANGE = 100_000


class SpecError(ConfigurationError):
    """A heuristic specification that cannot be parsed or evaluated; names line and column."""

    def __init__(self, message: str, line: int = 0, col: int = 0, source: str = "<spec>") -> None:
        self.line, self.col, self.source = line, col, source
        where = f"{source}:{line}:{col}: " if line else f"{source}: "
        super().__init__(where + message)


# ---- tokens --------------------------------------------------------------------------------------------
_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n]+) | (?P<comment>\#[^\n]*) |
    (?P<num>\d+(?:\.\d+)?) | (?P<name>[A-Za-z_][A-Za-z_0-9]*) |
    (?P<op>==|!=|<=|>=|[-+*/%(),;:=<>.])
""", re.VERBOSE)


@dataclass(frozen=True)
class _Tok:
    kind: str  # num, name, op, end
    text: str
    line: int
    col: int


def _tokens(text: str, source: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos, line, start = 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise SpecError(f"unexpected character {text[pos]!r}", line, pos - start + 1, source)
        kind = m.lastgroup or ""
        if kind not in ("ws", "comment"):
            out.append(_Tok(kind, m.group(), line, pos - start + 1))
        for i, ch in enumerate(m.group()):
            if ch == "\n":
                line, start = line + 1, pos + i + 1
        pos = m.end()
    out.append(_Tok("end", "", line, pos - start + 1))
    return out


# ---- expressions -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Expr:
    line: int
    col: int


@dataclass(frozen=True)
class _Num(_Expr):
    value: int | float


@dataclass(frozen=True)
class _Name(_Expr):
    name: str
    best: bool = False


@dataclass(frozen=True)
class _Unary(_Expr):
    arg: _Expr


@dataclass(frozen=True)
class _Bin(_Expr):
    op: str
    a: _Expr
    b: _Expr


@dataclass(frozen=True)
class _Call(_Expr):
    fn: str
    args: tuple[_Expr, ...]


_FUNCS = {"min": 2, "max": 2, "if": 3}


def _div(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and b and a % b == 0:
        return a // b
    return a / b


def _num(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


class _Env:
    """Where names are looked up while a statement is expanded."""

    def __init__(self, values: Mapping[str, Any], best: Mapping[str, Any], source: str) -> None:
        self.values, self.best, self.source = values, best, source


def _eval(e: _Expr, env: _Env) -> Any:
    if isinstance(e, _Num):
        return e.value
    if isinstance(e, _Name):
        table = env.best if e.best else env.values
        if e.name not in table:
            what = f"best.{e.name}" if e.best else e.name
            raise SpecError(f"unknown name {what}; known: {', '.join(sorted(table))}", e.line, e.col, env.source)
        return table[e.name]
    if isinstance(e, _Unary):
        return -_eval(e.arg, env)
    if isinstance(e, _Call):
        args = [_eval(a, env) for a in e.args]
        if e.fn == "min":
            return min(args)
        if e.fn == "max":
            return max(args)
        return args[1] if args[0] else args[2]
    assert isinstance(e, _Bin)
    a, b = _eval(e.a, env), _eval(e.b, env)
    try:
        if e.op == "+":
            return _num(a + b)
        if e.op == "-":
            return _num(a - b)
        if e.op == "*":
            return _num(a * b)
        if e.op == "/":
            return _div(a, b)
        if e.op == "%":
            return a % b
    except ZeroDivisionError:
        raise SpecError("division by zero", e.line, e.col, env.source) from None
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[e.op]


# ---- statements --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Assign:
    """``name = value`` or ``name = start:stop:op step``."""

    name: str
    value: _Expr | None
    start: _Expr | None
    stop: _Expr | None
    step_op: str | None
    step: _Expr | None
    line: int
    col: int

    @property
    def is_range(self) -> bool:
        return self.start is not None


@dataclass(frozen=True)
class Statement:
    """One group: its assignments in order."""

    assigns: tuple[Assign, ...]
    line: int
    source: str = "<spec>"

    @property
    def explores(self) -> bool:
        """True when the group has a range (it is tuned); False: it only sets values."""
        return any(a.is_range for a in self.assigns)

    def expand(self, values: Mapping[str, Any], best: Mapping[str, Any], source: str | None = None
               ) -> Iterator[dict[str, Any]]:
        """Every assignment this group explores: one dict of the assigned names per candidate."""
        yield from self._expand(0, dict(values), {}, best, source or self.source)

    def _expand(self, i: int, env: dict[str, Any], out: dict[str, Any], best: Mapping[str, Any],
                source: str) -> Iterator[dict[str, Any]]:
        if i == len(self.assigns):
            yield dict(out)
            return
        a = self.assigns[i]
        e = _Env(env, best, source)
        if not a.is_range:
            assert a.value is not None
            vals = [_eval(a.value, e)]
        else:
            assert a.start is not None and a.stop is not None and a.step is not None
            vals = _range(_eval(a.start, e), _eval(a.stop, e), a.step_op or "+", _eval(a.step, e), a, source)
        for v in vals:
            env2 = dict(env)
            env2[a.name] = v
            out2 = dict(out)
            out2[a.name] = v
            yield from self._expand(i + 1, env2, out2, best, source)


def _range(start: Any, stop: Any, op: str, k: Any, a: Assign, source: str) -> list[Any]:
    if op == "*" and not k > 1:
        raise SpecError(f"{a.name}: a '*' step must be greater than 1, got {k}", a.line, a.col, source)
    if op == "+" and not k > 0:
        raise SpecError(f"{a.name}: a '+' step must be positive, got {k}", a.line, a.col, source)
    out: list[Any] = []
    v = start
    while v <= stop:
        out.append(_num(v))
        if len(out) > _MAX_RANGE:
            raise SpecError(f"{a.name}: range has more than {_MAX_RANGE} values", a.line, a.col, source)
        v = v * k if op == "*" else v + k
    return out


@dataclass(frozen=True)
class HeuristicSpec:
    """A parsed file: its groups in order."""

    statements: tuple[Statement, ...]
    source: str = "<spec>"

    def targets(self) -> set[str]:
        return {a.name for s in self.statements for a in s.assigns}

    def check_targets(self, known: set[str]) -> None:
        """Raise a SpecError at the first assignment to a name not in ``known``."""
        for s in self.statements:
            for a in s.assigns:
                if a.name not in known:
                    raise SpecError(f"{a.name} is not a parameter here; known: {', '.join(sorted(known))}",
                                    a.line, a.col, self.source)


# ---- parser ------------------------------------------------------------------------------------------------
class _Parser:
    def __init__(self, text: str, source: str) -> None:
        self.toks = _tokens(text, source)
        self.i = 0
        self.source = source

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def error(self, msg: str, t: _Tok | None = None) -> SpecError:
        t = t or self.peek()
        got = "end of file" if t.kind == "end" else repr(t.text)
        return SpecError(f"{msg}, got {got}", t.line, t.col, self.source)

    def expect(self, text: str, what: str) -> _Tok:
        t = self.peek()
        if t.kind != "op" or t.text != text:
            raise self.error(f"expected {what}")
        return self.take()

    def file(self) -> HeuristicSpec:
        stmts: list[Statement] = []
        while self.peek().kind != "end":
            if self.peek().text == ";":
                self.take()
                continue
            stmts.append(self.statement())
        if not stmts:
            raise SpecError("the file has no statements", 1, 1, self.source)
        return HeuristicSpec(tuple(stmts), self.source)

    def statement(self) -> Statement:
        first = self.peek()
        assigns = [self.assign()]
        while self.peek().text == ",":
            self.take()
            if self.peek().text in (";",) or self.peek().kind == "end":
                break  # a trailing comma, as Algorithm 3's first line has
            assigns.append(self.assign())
        t = self.peek()
        if t.kind == "end":
            raise self.error("expected ';' at the end of the statement")
        self.expect(";", "',' or ';'")
        return Statement(tuple(assigns), first.line, self.source)

    def assign(self) -> Assign:
        t = self.peek()
        if t.kind != "name":
            raise self.error("expected a parameter name")
        self.take()
        self.expect("=", f"'=' after {t.text}")
        first = self.expr()
        if self.peek().text != ":":
            return Assign(t.text, first, None, None, None, None, t.line, t.col)
        self.take()
        stop = self.expr()
        self.expect(":", "':' and a step such as *2 or +1")
        op = self.peek()
        if op.kind != "op" or op.text not in ("*", "+"):
            raise self.error("expected a step starting with '*' or '+'")
        self.take()
        step = self.unary()
        return Assign(t.text, None, first, stop, op.text, step, t.line, t.col)

    def expr(self) -> _Expr:
        a = self.add()
        t = self.peek()
        if t.kind == "op" and t.text in ("==", "!=", "<", "<=", ">", ">="):
            self.take()
            return _Bin(t.line, t.col, t.text, a, self.add())
        return a

    def add(self) -> _Expr:
        a = self.mul()
        while self.peek().kind == "op" and self.peek().text in ("+", "-"):
            t = self.take()
            a = _Bin(t.line, t.col, t.text, a, self.mul())
        return a

    def mul(self) -> _Expr:
        a = self.unary()
        while self.peek().kind == "op" and self.peek().text in ("*", "/", "%"):
            t = self.take()
            a = _Bin(t.line, t.col, t.text, a, self.unary())
        return a

    def unary(self) -> _Expr:
        t = self.peek()
        if t.kind == "op" and t.text == "-":
            self.take()
            return _Unary(t.line, t.col, self.unary())
        return self.atom()

    def atom(self) -> _Expr:
        t = self.peek()
        if t.kind == "num":
            self.take()
            return _Num(t.line, t.col, float(t.text) if "." in t.text else int(t.text))
        if t.kind == "op" and t.text == "(":
            self.take()
            e = self.expr()
            self.expect(")", "')'")
            return e
        if t.kind == "name":
            self.take()
            if t.text == "best" and self.peek().text == ".":
                self.take()
                n = self.peek()
                if n.kind != "name":
                    raise self.error("expected a parameter name after 'best.'")
                self.take()
                return _Name(t.line, t.col, n.text, best=True)
            if self.peek().text == "(":
                if t.text not in _FUNCS:
                    raise self.error(f"unknown function {t.text}; use one of {', '.join(_FUNCS)}", t)
                self.take()
                args = [self.expr()]
                while self.peek().text == ",":
                    self.take()
                    args.append(self.expr())
                self.expect(")", "')' after the arguments")
                if len(args) != _FUNCS[t.text]:
                    raise SpecError(f"{t.text}() takes {_FUNCS[t.text]} arguments, got {len(args)}",
                                    t.line, t.col, self.source)
                return _Call(t.line, t.col, t.text, tuple(args))
            return _Name(t.line, t.col, t.text)
        raise self.error("expected a number, a name or '('")


def parse_spec(text: str, source: str = "<spec>") -> HeuristicSpec:
    """Parse a heuristic specification; raises :class:`SpecError` naming line and column."""
    return _Parser(text, source).file()
