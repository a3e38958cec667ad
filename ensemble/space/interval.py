"""Interval bounds of a constraint expression under a partial assignment.

During exact enumeration parameters are assigned one at a time.  A
constraint that still reads unassigned parameters can already be *certainly
false* for a partial row: ``a*b*c*d <= 130`` with ``a*b = 100`` and ``c, d >=
2`` has no completion.  This module evaluates the expression with interval
arithmetic (Moore, "Interval Analysis", 1966): assigned parameters are exact
arrays, unassigned ones the [min, max] of their values, and every operation
returns an interval that contains all results of all completions.  A
comparison whose intervals cannot satisfy it is certainly false, so the
partial row can be dropped before it is multiplied by the remaining values.

The bounds are conservative: anything not understood (arithmetic on strings,
unassigned non-numeric parameters, possible division by zero) widens to
"unknown", never prunes.  Assigned strings are compared exactly with ``==``,
``!=`` and ``in``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["certainly_false"]


class _Unknown(Exception):
    """The construct cannot be bounded; the caller must not prune."""


# a value is ("num", lo, hi) or ("bool", maybe_true, maybe_false); arrays or scalars


def _fold(op: Any, items: list[Any]) -> Any:
    """Combine scalars and arrays pairwise with broadcasting (ufunc.reduce cannot mix them)."""
    return functools.reduce(op, items)


def _clean(lo: Any, hi: Any) -> tuple[str, Any, Any]:
    lo = np.where(np.isnan(lo), -np.inf, lo)
    hi = np.where(np.isnan(hi), np.inf, hi)
    return ("num", lo, hi)


def _num(v: tuple[Any, ...]) -> tuple[Any, Any]:
    if v[0] == "num":
        return v[1], v[2]
    if v[0] != "bool":
        raise _Unknown  # strings / unknown values in arithmetic
    mt, mf = v[1], v[2]
    return np.where(mf, 0, 1), np.where(mt, 1, 0)


def _bool(v: tuple[Any, ...]) -> tuple[Any, Any]:
    if v[0] == "bool":
        return v[1], v[2]
    if v[0] in ("str", "any"):
        return np.bool_(True), np.bool_(True)
    lo, hi = v[1], v[2]
    maybe_true = (lo != 0) | (hi != 0) | (lo < 0) & (hi > 0)
    maybe_false = (lo <= 0) & (hi >= 0)
    return maybe_true, maybe_false


def certainly_false(
    tree: ast.Expression,
    exact: Mapping[str, np.ndarray],
    ranges: Mapping[str, tuple[float, float] | None],
    n: int,
) -> np.ndarray:
    """Bool mask of the ``n`` partial rows for which the expression cannot hold.

    ``exact`` maps assigned names to their value arrays, ``ranges`` maps
    unassigned names to (min, max) of their values, or None for non-numeric
    ones (strings are compared exactly once assigned: ``mode == 'z'``).  Returns all-False when the
    expression cannot be bounded.
    """
    try:
        with np.errstate(all="ignore"):
            mt, _ = _bool(_iv(tree.body, exact, ranges))
        return np.broadcast_to(~np.asarray(mt, dtype=bool), (n,))
    except (_Unknown, TypeError, ValueError, OverflowError):
        return np.zeros(n, dtype=bool)


def _iv(
    node: ast.AST, exact: Mapping[str, np.ndarray], ranges: Mapping[str, Any]
) -> Any:
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):
            return ("bool", np.bool_(v), np.bool_(not v))
        if isinstance(v, (int, float)):
            return ("num", float(v), float(v))
        if isinstance(v, str):
            return ("str", v)
        raise _Unknown
    if isinstance(node, ast.Name):
        if node.id in ("True", "False"):
            t = node.id == "True"
            return ("bool", np.bool_(t), np.bool_(not t))
        if node.id in exact:
            arr = exact[node.id]
            if arr.dtype.kind == "U":
                return ("str", arr)
            if arr.dtype.kind not in "iufb":
                return ("any",)
            a = arr.astype(float)
            return ("num", a, a)
        if node.id in ranges:
            if ranges[node.id] is None:  # an unassigned non-numeric parameter
                return ("any",)
            lo, hi = ranges[node.id]
            return ("num", lo, hi)
        raise _Unknown
    if isinstance(node, ast.UnaryOp):
        v = _iv(node.operand, exact, ranges)
        if isinstance(node.op, ast.Not):
            mt, mf = _bool(v)
            return ("bool", mf, mt)
        lo, hi = _num(v)
        return ("num", -hi, -lo) if isinstance(node.op, ast.USub) else ("num", lo, hi)
    if isinstance(node, ast.BoolOp):
        parts = [_bool(_iv(v, exact, ranges)) for v in node.values]
        if isinstance(node.op, ast.And):
            mt = _fold(np.logical_and, [p[0] for p in parts])
            mf = _fold(np.logical_or, [p[1] for p in parts])
        else:
            mt = _fold(np.logical_or, [p[0] for p in parts])
            mf = _fold(np.logical_and, [p[1] for p in parts])
        return ("bool", mt, mf)
    if isinstance(node, ast.BinOp):
        return _binop(
            node.op,
            _num(_iv(node.left, exact, ranges)),
            _num(_iv(node.right, exact, ranges)),
        )
    if isinstance(node, ast.Compare):
        return _compare(node, exact, ranges)
    if isinstance(node, ast.IfExp):
        a = _iv(node.body, exact, ranges)
        b = _iv(node.orelse, exact, ranges)
        if a[0] == "bool" and b[0] == "bool":
            return ("bool", a[1] | b[1], a[2] | b[2])
        (alo, ahi), (blo, bhi) = _num(a), _num(b)
        return _clean(np.minimum(alo, blo), np.maximum(ahi, bhi))
    if isinstance(node, ast.Call):
        return _call(node, exact, ranges)
    raise _Unknown


def _binop(op: ast.operator, a: tuple[Any, Any], b: tuple[Any, Any]) -> Any:
    (alo, ahi), (blo, bhi) = a, b
    if isinstance(op, ast.Add):
        return _clean(alo + blo, ahi + bhi)
    if isinstance(op, ast.Sub):
        return _clean(alo - bhi, ahi - blo)
    if isinstance(op, ast.Mult):
        c = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
        c = [
            np.where(np.isnan(x), 0.0, x) for x in c
        ]  # 0 * inf: the product is 0 there
        return _clean(_fold(np.minimum, c), _fold(np.maximum, c))
    if isinstance(op, (ast.Div, ast.FloorDiv)):
        safe = (np.asarray(blo) > 0) | (np.asarray(bhi) < 0)
        c = [alo / blo, alo / bhi, ahi / blo, ahi / bhi]
        lo, hi = _fold(np.minimum, c), _fold(np.maximum, c)
        if isinstance(op, ast.FloorDiv):
            lo, hi = np.floor(lo), np.floor(hi)
        return _clean(np.where(safe, lo, -np.inf), np.where(safe, hi, np.inf))
    if isinstance(op, ast.Mod):
        # Python's a % b has the sign of b and |a % b| < |b|
        pos = np.asarray(blo) > 0
        neg = np.asarray(bhi) < 0
        lo = np.where(pos, 0.0, np.where(neg, blo, -np.inf))
        hi = np.where(pos, bhi, np.where(neg, 0.0, np.inf))
        # when a is already inside [0, b.lo) the result is a itself
        inside = pos & (np.asarray(alo) >= 0) & (np.asarray(ahi) < np.asarray(blo))
        return _clean(np.where(inside, alo, lo), np.where(inside, ahi, hi))
    if isinstance(op, ast.Pow):
        ok = (np.asarray(alo) >= 0) & (np.asarray(blo) >= 0)
        c = [alo**blo, alo**bhi, ahi**blo, ahi**bhi]
        lo, hi = _fold(np.minimum, c), _fold(np.maximum, c)
        return _clean(np.where(ok, lo, -np.inf), np.where(ok, hi, np.inf))
    raise _Unknown


def _cmp_one(op: ast.cmpop, a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
    (alo, ahi), (blo, bhi) = a, b
    if isinstance(op, ast.Lt):
        return alo < bhi, ahi >= blo
    if isinstance(op, ast.LtE):
        return alo <= bhi, ahi > blo
    if isinstance(op, ast.Gt):
        return ahi > blo, alo <= bhi
    if isinstance(op, ast.GtE):
        return ahi >= blo, alo < bhi
    overlap = (alo <= bhi) & (blo <= ahi)
    point_equal = (alo == ahi) & (blo == bhi) & (alo == blo)
    if isinstance(op, ast.Eq):
        return overlap, ~point_equal
    if isinstance(op, ast.NotEq):
        return ~point_equal, overlap
    raise _Unknown


def _eq(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, Any]:
    """(maybe equal, maybe different) with Python semantics across kinds."""
    if a[0] == "any" or b[0] == "any":
        return np.bool_(True), np.bool_(True)
    if a[0] == "str" and b[0] == "str":
        same = np.asarray(a[1] == b[1])
        return same, ~same
    if a[0] == "str" or b[0] == "str":
        return np.bool_(False), np.bool_(True)  # a string never equals a number
    return _cmp_one(ast.Eq(), _num(a), _num(b))


def _compare(
    node: ast.Compare, exact: Mapping[str, np.ndarray], ranges: Mapping[str, Any]
) -> Any:
    left = _iv(node.left, exact, ranges)
    mts, mfs = [], []
    for op, comp in zip(node.ops, node.comparators):
        if isinstance(op, (ast.In, ast.NotIn)):
            if not isinstance(comp, (ast.Tuple, ast.List, ast.Set)):
                raise _Unknown
            eqs = [_eq(left, _iv(e, exact, ranges)) for e in comp.elts]
            mt = _fold(np.logical_or, [e[0] for e in eqs]) if eqs else np.bool_(False)
            definitely = (
                _fold(np.logical_or, [~e[1] for e in eqs]) if eqs else np.bool_(False)
            )
            if isinstance(op, ast.In):
                mts.append(mt)
                mfs.append(~definitely)
            else:
                mts.append(~definitely)
                mfs.append(mt)
            continue
        right = _iv(comp, exact, ranges)
        if isinstance(op, (ast.Eq, ast.NotEq)):
            eq_t, eq_f = _eq(left, right)
            mt, mf = (eq_t, eq_f) if isinstance(op, ast.Eq) else (eq_f, eq_t)
        else:
            mt, mf = _cmp_one(op, _num(left), _num(right))
        mts.append(mt)
        mfs.append(mf)
        left = right
    return ("bool", _fold(np.logical_and, mts), _fold(np.logical_or, mfs))


def _call(
    node: ast.Call, exact: Mapping[str, np.ndarray], ranges: Mapping[str, Any]
) -> Any:
    name = node.func.id  # type: ignore[attr-defined]
    args = [_num(_iv(a, exact, ranges)) for a in node.args]
    if name in ("min", "max") and len(args) >= 2:
        f: Any = np.minimum if name == "min" else np.maximum
        return _clean(_fold(f, [a[0] for a in args]), _fold(f, [a[1] for a in args]))
    if len(args) != 1:
        raise _Unknown
    lo, hi = args[0]
    if name == "abs":
        lo2 = np.where(lo >= 0, lo, np.where(hi <= 0, -hi, 0.0))
        return _clean(lo2, np.maximum(np.abs(lo), np.abs(hi)))
    if name in ("ceil", "floor", "int", "round"):
        f = {"ceil": np.ceil, "floor": np.floor, "int": np.trunc, "round": np.round}[
            name
        ]
        # monotone; widen 'round' by one to cover banker's rounding
        pad = 1.0 if name == "round" else 0.0
        return _clean(f(lo) - pad, f(hi) + pad)
    if name in ("log2", "sqrt"):
        g: Any = np.log2 if name == "log2" else np.sqrt
        lo_ok = (lo > 0) if name == "log2" else (lo >= 0)
        return _clean(np.where(lo_ok, g(np.maximum(lo, 1e-300)), -np.inf), g(hi))
    raise _Unknown
