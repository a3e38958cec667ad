"""Canonical JSON and hashes of configurations.

A configuration is identified across processes, hosts and restarts by the
SHA-256 of one canonical text, so the encoding must be a function of the
*value* only: keys sorted, no whitespace, floats written with ``repr`` (the
shortest text that reads back to the same double), ``int`` and ``float`` kept
apart (``1`` and ``1.0`` are different Enum values), ``bool`` kept apart from
``int`` (``true`` is not ``1``), ``-0.0`` folded into ``0.0`` (they compare
equal, so they must be the same configuration), and non-finite floats written
explicitly as ``{"$float": "inf"}`` because strict JSON has no spelling for
them.  NumPy scalars are converted to the Python values they stand for.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from ensemble.errors import ConfigurationError

__all__ = ["canonical_json", "config_hash", "from_canonical_json", "normalize_value"]

_FLOAT_TAG = "$float"


def normalize_value(value: Any, where: str = "value") -> Any:
    """Return ``value`` as plain JSON-native Python data (the canonical form)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value):
            return {_FLOAT_TAG: "nan"}
        if math.isinf(value):
            return {_FLOAT_TAG: "inf" if value > 0 else "-inf"}
        return 0.0 if value == 0.0 else float(value)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ConfigurationError(
                    f"{where}: key {k!r} is not a string; configurations must use str keys"
                )
            out[k] = normalize_value(v, f"{where}[{k!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return [normalize_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    # NumPy scalars and 0-d arrays, without importing numpy here.
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy":
        try:
            return normalize_value(item(), where)
        except (ValueError, TypeError):
            pass
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and type(value).__module__ == "numpy":
        return normalize_value(tolist(), where)
    raise ConfigurationError(
        f"{where}: {value!r} of type {type(value).__name__} is not JSON-native; "
        "use str, int, float, bool, None or lists of them"
    )


_PLAIN = (str, int, bool, type(None))


def _is_plain(config: Any) -> bool:
    """True for a flat dict whose values json.dumps already writes canonically."""
    if type(config) is not dict:
        return False
    for k, v in config.items():
        t = type(v)
        if type(k) is not str:
            return False
        if t in _PLAIN:
            continue
        if t is float and v != 0.0 and math.isfinite(v):
            continue
        return False
    return True


# one encoder for every call: json.dumps with non-default options builds a new encoder each
# time, which cost a third of a canonical_json on the driver's hot path (scripts/bench_overhead.py)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(config: Any) -> str:
    """Return the canonical JSON text of ``config`` (sorted keys, no whitespace)."""
    return _CANONICAL.encode(config if _is_plain(config) else normalize_value(config, "config"))


def config_hash(config: Any) -> str:
    """Return the SHA-256 hex digest of :func:`canonical_json` of ``config``."""
    return hashlib.sha256(canonical_json(config).encode("utf-8")).hexdigest()


def _decode_hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and _FLOAT_TAG in obj:
        return float(obj[_FLOAT_TAG])
    return obj


def from_canonical_json(text: str) -> Any:
    """Read back a text written by :func:`canonical_json` (non-finite floats restored)."""
    return json.loads(text, object_hook=_decode_hook)
