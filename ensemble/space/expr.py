"""Safe constraint expressions: parse once, evaluate per point or over arrays.

A constraint such as ``"wx * wy <= 1024"`` is parsed with :mod:`ast` and
checked against a whitelist (names, numbers, strings, arithmetic,
comparisons including chains and ``in``, ``and``/``or``/``not``, the ternary
``a if c else b`` and a few math functions).  Nothing else is accepted, so
evaluating it cannot reach attributes, imports or builtins.

Two evaluators share the parsed tree:

* :meth:`Expression.scalar` compiles the checked tree to a code object and
  evaluates it with an empty ``__builtins__`` -- fast for one configuration.
* :meth:`Expression.vector` walks the tree with NumPy arrays, one element per
  configuration, so that counting and enumerating millions of points is a few
  array operations per node.  It follows Python semantics: division or modulo
  by zero and math domain errors make the constraint *false* for that point
  (the scalar evaluator catches the same errors), and ``and``/``or``/ternary
  only count errors from the branch Python would have evaluated.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ensemble.errors import SpaceError

__all__ = ["FUNCTIONS", "Expression"]

#: functions a constraint may call, with their scalar implementations
FUNCTIONS: dict[str, Any] = {
    "min": min,
    "max": max,
    "abs": abs,
    "ceil": math.ceil,
    "floor": math.floor,
    "log2": math.log2,
    "sqrt": math.sqrt,
    "int": int,
    "round": round,
}

_CONSTANTS = {"True": True, "False": False, "None": None}

_ALLOWED_NODES = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
    ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn,
    ast.IfExp, ast.Call, ast.Name, ast.Load, ast.Constant, ast.Tuple, ast.List, ast.Set,
)  # fmt: skip

_SCALAR_ERRORS = (ArithmeticError, ValueError, TypeError)


class _Invalid(Exception):
    """Internal: the vector evaluator met a construct it cannot vectorise."""


class Expression:
    """A parsed, checked constraint expression over parameter names."""

    def __init__(self, source: str) -> None:
        if not isinstance(source, str) or not source.strip():
            raise SpaceError(
                f"constraint {source!r}: give a non-empty expression string"
            )
        self.source = source
        text = source.strip()
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError as exc:
            raise SpaceError(
                f"constraint {source!r}: not a Python expression ({exc.msg})"
            ) from None
        names: list[str] = []
        called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            if not isinstance(node, _ALLOWED_NODES):
                raise SpaceError(
                    f"constraint {source!r}: {type(node).__name__} is not allowed; use arithmetic, "
                    "comparisons, and/or/not, 'in', 'a if c else b' and "
                    f"{', '.join(sorted(FUNCTIONS))}"
                )
            if isinstance(node, ast.Call):
                if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                    fn = ast.unparse(node.func)
                    raise SpaceError(
                        f"constraint {source!r}: function {fn!r} is not allowed; "
                        f"allowed: {', '.join(sorted(FUNCTIONS))}"
                    )
                if node.keywords:
                    raise SpaceError(
                        f"constraint {source!r}: keyword arguments are not allowed"
                    )
            elif (
                isinstance(node, ast.Name)
                and node.id not in _CONSTANTS
                and id(node) not in called
                and node.id not in names
            ):
                names.append(node.id)
        self.tree = tree
        #: parameter names the expression mentions, in order of first use
        self.names: tuple[str, ...] = tuple(names)
        # the checked tree as a function of the names, for fast per-point calls; the
        # names are identifiers the whitelist accepted, the body is the unparsed tree
        args = ", ".join(self.names)
        lam = compile(
            f"lambda {args}: ({ast.unparse(tree.body)})", f"<constraint {text}>", "eval"
        )
        self._fn = eval(lam, {"__builtins__": {}, **FUNCTIONS})

    # pickling (process workers, multiprocessing): code objects do not pickle, so
    # ship the source and parse again on the other side
    def __getstate__(self) -> dict[str, Any]:
        return {"source": self.source}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["source"])  # type: ignore[misc]

    def check_names(self, known: Iterable[str]) -> None:
        """Raise SpaceError naming any unknown name and listing the known ones."""
        known = list(known)
        unknown = [n for n in self.names if n not in known]
        if unknown:
            raise SpaceError(
                f"constraint {self.source!r}: unknown name(s) {', '.join(map(repr, unknown))}; "
                f"known parameters: {', '.join(known) or '(none yet: add parameters first)'}"
            )

    # --- one point ---------------------------------------------------------
    def scalar(self, config: Mapping[str, Any]) -> bool:
        """Evaluate for one configuration; arithmetic/type errors count as False."""
        try:
            return bool(self._fn(*[config[n] for n in self.names]))
        except _SCALAR_ERRORS:
            return False

    # --- many points -------------------------------------------------------
    def vector(self, columns: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """Evaluate for ``n`` points given one value array per name.

        Returns a bool array.  Raises :class:`TypeError`-like errors (caught by
        the caller, which then falls back to :meth:`scalar`) for value types
        NumPy cannot handle with Python semantics (e.g. object arrays).
        """
        for name in self.names:
            if columns[name].dtype == object:
                raise _Invalid("object column")
        with np.errstate(all="ignore"):
            val, bad = self._v(self.tree.body, columns, n)
            truth = _truth(val, n)
        return truth & ~bad if bad is not None else truth

    def _v(
        self, node: ast.AST, cols: Mapping[str, np.ndarray], n: int
    ) -> tuple[Any, Any]:
        """Return (value, bad-mask or None) for ``node``."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float, str)) or node.value is None:
                return node.value, None
            raise _Invalid(repr(node.value))
        if isinstance(node, ast.Name):
            if node.id in _CONSTANTS:
                return _CONSTANTS[node.id], None
            return cols[node.id], None
        if isinstance(node, ast.BoolOp):
            return self._boolop(node, cols, n)
        if isinstance(node, ast.UnaryOp):
            v, bad = self._v(node.operand, cols, n)
            if isinstance(node.op, ast.Not):
                return ~_truth(v, n), bad
            _numeric(v)
            v = _arith(v)
            return (-v if isinstance(node.op, ast.USub) else +v), bad
        if isinstance(node, ast.BinOp):
            a, ba = self._v(node.left, cols, n)
            b, bb = self._v(node.right, cols, n)
            val, bad = _binop(node.op, a, b)
            return val, _or(_or(ba, bb), bad)
        if isinstance(node, ast.Compare):
            return self._compare(node, cols, n)
        if isinstance(node, ast.IfExp):
            c, bc = self._v(node.test, cols, n)
            c = _truth(c, n)
            a, ba = self._v(node.body, cols, n)
            b, bb = self._v(node.orelse, cols, n)
            val = np.where(c, a, b)
            bad = _or(bc, _where(c, ba, bb, n))
            return val, bad
        if isinstance(node, ast.Call):
            return self._call(node, cols, n)
        raise _Invalid(type(node).__name__)

    def _boolop(
        self, node: ast.BoolOp, cols: Mapping[str, np.ndarray], n: int
    ) -> tuple[Any, Any]:
        is_and = isinstance(node.op, ast.And)
        result = np.full(n, is_and)
        bad = np.zeros(n, dtype=bool)
        # 'live' marks points where Python would still evaluate the next operand
        live = np.ones(n, dtype=bool)
        for operand in node.values:
            v, b = self._v(operand, cols, n)
            t = _truth(v, n)
            if b is not None:
                bad |= live & b
            if is_and:
                result = np.where(live, t, result)
                live = live & t
            else:
                result = np.where(live, t, result)
                live = live & ~t
        return result, bad

    def _compare(
        self, node: ast.Compare, cols: Mapping[str, np.ndarray], n: int
    ) -> tuple[Any, Any]:
        left, bad = self._v(node.left, cols, n)
        result: Any = np.ones(n, dtype=bool)
        for op, comp in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(comp, (ast.Tuple, ast.List, ast.Set)):
                    raise _Invalid("'in' needs a literal list")
                hit = np.zeros(n, dtype=bool)
                for elt in comp.elts:
                    v, b = self._v(elt, cols, n)
                    bad = _or(bad, b)
                    hit |= _eq(left, v, n)
                r = hit if isinstance(op, ast.In) else ~hit
                right = left  # chained comparison after 'in' keeps comparing the container: rare
            else:
                right, b = self._v(comp, cols, n)
                bad = _or(bad, b)
                r = _cmp(op, left, right, n)
            result = result & r
            left = right
        return result, bad

    def _call(
        self, node: ast.Call, cols: Mapping[str, np.ndarray], n: int
    ) -> tuple[Any, Any]:
        fname = node.func.id  # type: ignore[attr-defined]
        args, bad = [], None
        for a in node.args:
            v, b = self._v(a, cols, n)
            _numeric(v)
            args.append(v)
            bad = _or(bad, b)
        if fname in ("min", "max"):
            if len(args) < 2:
                raise _Invalid("min/max of one iterable")
            f: Any = np.minimum if fname == "min" else np.maximum
            out = args[0]
            for a in args[1:]:
                out = f(out, a)
            return out, bad
        if len(args) != 1:
            raise _Invalid(f"{fname} arity")
        x = np.asarray(args[0])
        if fname == "abs":
            return np.abs(x), bad
        if fname in ("ceil", "floor", "int", "round"):
            if x.dtype.kind in "iub":
                return x.astype(np.int64), bad
            if fname == "round":
                raise _Invalid("round of floats (banker's rounding differences)")
            f = {"ceil": np.ceil, "floor": np.floor, "int": np.trunc}[fname]
            y = f(x)
            return y, _or(bad, ~np.isfinite(y))
        if fname == "log2":
            return np.log2(x.astype(float)), _or(bad, x <= 0)
        if fname == "sqrt":
            return np.sqrt(x.astype(float)), _or(bad, x < 0)
        raise _Invalid(fname)


def _or(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a | b


def _where(c: np.ndarray, a: Any, b: Any, n: int) -> Any:
    if a is None and b is None:
        return None
    a = np.zeros(n, dtype=bool) if a is None else a
    b = np.zeros(n, dtype=bool) if b is None else b
    return np.where(c, a, b)


def _numeric(v: Any) -> None:
    if isinstance(v, str) or v is None:
        raise _Invalid("arithmetic on str/None")
    if isinstance(v, np.ndarray) and v.dtype.kind not in "iufb":
        raise _Invalid("arithmetic on non-numeric array")


def _truth(v: Any, n: int) -> np.ndarray:
    if isinstance(v, np.ndarray):
        if v.dtype.kind == "b":
            return np.broadcast_to(v, (n,)).copy() if v.shape != (n,) else v
        if v.dtype.kind in "iuf":
            return np.broadcast_to(v != 0, (n,)).copy()
        if v.dtype.kind == "U":
            return np.broadcast_to(np.char.str_len(v) > 0, (n,)).copy()
        raise _Invalid("truth of object array")
    return np.full(n, bool(v))


def _eq(a: Any, b: Any, n: int) -> np.ndarray:
    """Python ``==`` elementwise: str never equals a number, bools equal 0/1."""
    a_str = isinstance(a, str) or (isinstance(a, np.ndarray) and a.dtype.kind == "U")
    b_str = isinstance(b, str) or (isinstance(b, np.ndarray) and b.dtype.kind == "U")
    if a is None or b is None:
        return (
            np.full(n, a is None and b is None)
            if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray)
            else np.zeros(n, dtype=bool)
        )
    if a_str != b_str:
        return np.zeros(n, dtype=bool)
    return np.broadcast_to(np.asarray(a == b), (n,))


def _cmp(op: ast.cmpop, a: Any, b: Any, n: int) -> np.ndarray:
    if isinstance(op, ast.Eq):
        return _eq(a, b, n)
    if isinstance(op, ast.NotEq):
        return ~_eq(a, b, n)
    _numeric(a)
    _numeric(b)
    f = {
        ast.Lt: operator.lt,
        ast.LtE: operator.le,
        ast.Gt: operator.gt,
        ast.GtE: operator.ge,
    }[type(op)]
    return np.broadcast_to(np.asarray(f(a, b)), (n,))


def _is_int_like(v: Any) -> bool:
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "iub"
    return isinstance(v, (int, bool))


_INT_SAFE = float(2**62)


def _arith(v: Any) -> Any:
    """Booleans count as 0/1 in arithmetic (NumPy would use logical or/and)."""
    if isinstance(v, np.ndarray) and v.dtype.kind == "b":
        return v.astype(np.int64)
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    return v


def _exact_int(result: Any, approx: Any) -> Any:
    """``result`` of an int operation, unless int64 may have overflowed (Python ints do not)."""
    if np.max(np.abs(approx), initial=0.0) >= _INT_SAFE:
        raise _Invalid("integer result beyond int64: evaluate point by point")
    return result


def _binop(op: ast.operator, a: Any, b: Any) -> tuple[Any, Any]:
    _numeric(a)
    _numeric(b)
    a, b = _arith(a), _arith(b)
    ints = _is_int_like(a) and _is_int_like(b)
    fa: Any = np.asarray(a, dtype=float) if ints else None
    fb: Any = np.asarray(b, dtype=float) if ints else None
    if isinstance(op, ast.Add):
        return (_exact_int(np.add(a, b), fa + fb) if ints else np.add(a, b)), None
    if isinstance(op, ast.Sub):
        return (
            _exact_int(np.subtract(a, b), fa - fb) if ints else np.subtract(a, b)
        ), None
    if isinstance(op, ast.Mult):
        return (
            _exact_int(np.multiply(a, b), fa * fb) if ints else np.multiply(a, b)
        ), None
    if isinstance(op, ast.Div):
        return np.true_divide(a, b), np.asarray(b) == 0
    if isinstance(op, (ast.FloorDiv, ast.Mod)):
        zero = np.asarray(b) == 0
        bb = np.where(zero, 1, b) if _is_int_like(b) else b
        f = np.floor_divide if isinstance(op, ast.FloorDiv) else np.remainder
        return f(a, bb), zero
    if isinstance(op, ast.Pow):
        if _is_int_like(a) and _is_int_like(b):
            neg = np.asarray(b) < 0
            if np.any(neg):
                return np.power(np.asarray(a, dtype=float), b), np.asarray(a) == 0
            approx = np.power(np.asarray(a, dtype=float), b)
            return _exact_int(np.power(np.asarray(a, dtype=np.int64), b), approx), None
        base = np.asarray(a, dtype=float)
        return np.power(base, b), (base == 0) & (np.asarray(b) < 0)
    raise _Invalid(type(op).__name__)
