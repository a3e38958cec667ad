"""Which parameters does a constraint callable read?  Static analysis of its source.

A callable constraint such as ``lambda c: c["a"] < c["b"]`` reads two
parameters; if the space knew that, it could split into independent
components (exact counts, uniform sampling) instead of treating the callable
as reading everything.  This module reads the callable's source with
:mod:`ast` and accepts only the provable case: every use of the config
argument is a subscript with a constant string (``c["a"]``) or
``c.get("a", ...)``.  Anything else -- passing ``c`` on, iterating it,
``**c``, a source that cannot be found or parsed, several lambdas on one line
that disagree -- returns None, and the caller assumes every parameter.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["infer_names"]


def infer_names(fn: Callable[..., Any], known: Sequence[str]) -> tuple[str, ...] | None:
    """Parameter names ``fn`` provably reads (in ``known`` order), or None."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_argcount != 1:
        return None
    arg = code.co_varnames[0]
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    if fn.__name__ == "<lambda>":
        nodes: list[ast.AST] = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
    else:
        nodes = [
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name == fn.__name__
        ]
    results = set()
    for node in nodes:
        args = node.args  # type: ignore[attr-defined]
        if len(args.args) != 1 or args.args[0].arg != arg or args.vararg or args.kwarg:
            continue
        found = _reads(node, arg)
        if found is None:
            return None
        results.add(found)
    if len(results) != 1:
        return None
    names = results.pop()
    if not names <= set(known):
        return None
    return tuple(n for n in known if n in names)


def _reads(func: ast.AST, arg: str) -> frozenset[str] | None:
    """Constant keys read from ``arg`` in ``func``'s body, or None if it escapes."""
    parents: dict[int, ast.AST] = {}
    for parent in ast.walk(func):
        for child in ast.iter_child_nodes(parent):
            parents[id(child)] = parent
    body = func.body if isinstance(func.body, list) else [func.body]  # type: ignore[attr-defined]
    names: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = [a.arg for a in node.args.args + node.args.kwonlyargs]
                if arg in inner:
                    return None  # shadowed: too clever to follow
            if isinstance(node, ast.Name) and node.id == arg:
                if not isinstance(node.ctx, ast.Load):
                    return None  # reassigned
                key = _constant_key(node, parents)
                if key is None:
                    return None
                names.add(key)
    return frozenset(names)


def _constant_key(node: ast.Name, parents: dict[int, ast.AST]) -> str | None:
    parent = parents.get(id(node))
    if isinstance(parent, ast.Subscript) and parent.value is node:
        s = parent.slice
        if isinstance(s, ast.Constant) and isinstance(s.value, str):
            return s.value
        return None
    if (
        isinstance(parent, ast.Attribute)
        and parent.value is node
        and parent.attr == "get"
    ):
        call = parents.get(id(parent))
        if isinstance(call, ast.Call) and call.func is parent and call.args:
            first = call.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                return first.value
    return None
