"""JSON encoding for database columns: explicit infinities and NaN, never pickle.

Standard JSON has no spelling for ``inf`` or ``nan``; Python's ``json`` writes
the non-standard tokens ``Infinity``/``NaN`` that other readers (PostgreSQL's
``json`` type, JavaScript) reject.  A failed trial's value is ``math.inf``, so
those numbers are common here.  We therefore write every non-finite float as a
tagged object ``{"__float__": "inf" | "-inf" | "nan"}`` and turn it back on
reading.  Output is canonical (sorted keys, no whitespace, floats written with
``repr`` so they round-trip exactly) so equal values give equal text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ensemble.errors import StorageError

__all__ = ["FLOAT_TAG", "dumps", "loads"]

FLOAT_TAG = "__float__"
_SPECIALS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _tag(x: float) -> Any:
    if math.isnan(x):
        return {FLOAT_TAG: "nan"}
    if math.isinf(x):
        return {FLOAT_TAG: "inf" if x > 0 else "-inf"}
    return x


def _plain(obj: Any, where: str) -> Any:
    """Return ``obj`` as JSON-native values with non-finite floats tagged."""
    if obj is None or isinstance(obj, (str, bool, int)):
        return obj
    if isinstance(obj, float):
        return _tag(obj)
    if isinstance(obj, Mapping):
        out = {}
        for key, value in obj.items():
            if not isinstance(key, str):
                raise StorageError(
                    f"cannot store {where}: dictionary key {key!r} is not a string; "
                    "use string keys in configurations, metrics and state"
                )
            out[key] = _plain(value, f"{where}[{key!r}]")
        return out
    if isinstance(obj, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    tolist = getattr(obj, "tolist", None)  # numpy scalars and arrays, without importing numpy
    if callable(tolist):
        return _plain(tolist(), where)
    raise StorageError(
        f"cannot store {where}: {type(obj).__name__} is not JSON-serialisable; "
        "convert it to str, int, float, bool, None, list or dict first"
    )


# one encoder for every call (json.dumps with options builds a new one each time: hot path)
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False)


_FLAT = (str, int, bool, type(None))


def _flat(obj: Any) -> bool:
    """A dict or list whose values json writes as they are: str keys, no nesting, finite floats.

    The usual metrics (``{"time": 0.0012}``) and times (``[]``) of a result: these
    skip the recursive copy of :func:`_plain` (storage hot path, both stores).
    """
    t = type(obj)
    if t is dict:
        values = obj.values()
        if any(type(k) is not str for k in obj):
            return False
    elif t is list:
        values = obj
    else:
        return False
    for v in values:
        tv = type(v)
        if tv is float:
            if not math.isfinite(v):
                return False
        elif tv not in _FLAT:
            return False
    return True


def dumps(obj: Any, *, where: str = "value") -> str:
    """Encode ``obj`` canonically; ``where`` names the argument in error messages."""
    return _ENCODER.encode(obj if _flat(obj) else _plain(obj, where))


def _hook(d: dict[str, Any]) -> Any:
    if len(d) == 1 and FLOAT_TAG in d and d[FLOAT_TAG] in _SPECIALS:
        return _SPECIALS[d[FLOAT_TAG]]
    return d


def loads(text: str | None) -> Any:
    """Decode text written by :func:`dumps`; ``None`` (SQL NULL) decodes to ``None``."""
    if text is None:
        return None
    return json.loads(text, object_hook=_hook)
