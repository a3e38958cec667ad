"""Scenario features f(s) (Cummins et al., Section 3.2): device, kernel and dataset.

* Device features come from the OpenCL Device API (:func:`device_features`),
  as in the paper: local memory, maximum work-group size, compute units and
  the other numeric properties listed in :data:`DEVICE_FEATURES`.
* Kernel features.  The paper compiles each kernel to LLVM IR and divides
  static per-opcode instruction counts by the total (instruction
  *densities*).  Neither PyOpenCL nor PoCL's binary distribution hands back
  the IR of a built program portably (PoCL keeps it in its private cache;
  NVIDIA returns PTX), so we count the same categories in the *generated
  OpenCL C source* of the user function and the tile loader
  (:func:`kernel_features`): loads from local memory, global loads and
  stores, additions, multiplications, divisions, comparisons, math built-ins,
  branches/loops and barriers, each divided by their total, plus the total
  and the four border sizes and the complexity flag.  This difference is
  listed in docs/CUMMINS.md.
* Dataset features: rows, columns, element size and whether the type is an
  integer, single or double (the paper's input/output types and 2-D size).

Everything returns plain ``dict[str, float]``; :func:`vector` orders them
by :data:`FEATURE_NAMES` into the array the models in
``techniques.workgroup`` take (techniques never import this module).
"""

from __future__ import annotations

import re
from typing import Any

from ensemble.errors import EnsembleError

__all__ = [
    "DATASET_FEATURES",
    "DEVICE_FEATURES",
    "FEATURE_NAMES",
    "KERNEL_FEATURES",
    "KernelParseError",
    "dataset_features",
    "device_features",
    "kernel_features",
    "vector",
]

#: OpenCL device info names read by :func:`device_features` (all numeric)
DEVICE_FEATURES = ("max_compute_units", "max_work_group_size", "local_mem_size", "global_mem_size",
                   "global_mem_cache_size", "global_mem_cacheline_size", "max_clock_frequency",
                   "preferred_vector_width_float", "max_work_item_sizes_0", "max_work_item_sizes_1",
                   "is_gpu")

_CATEGORIES = ("local_load", "global_load", "global_store", "add", "mul", "div", "cmp", "math", "branch",
               "barrier")
KERNEL_FEATURES = tuple(f"density_{c}" for c in _CATEGORIES) + (
    "instructions", "north", "east", "south", "west", "complexity")
DATASET_FEATURES = ("rows", "cols", "itemsize", "is_int", "is_double")
FEATURE_NAMES = tuple(f"dev_{n}" for n in DEVICE_FEATURES) + KERNEL_FEATURES + DATASET_FEATURES


class KernelParseError(EnsembleError, ValueError):
    """The kernel source cannot be read for features (callers fall back to W_safe)."""


def device_features(device: Any) -> dict[str, float]:
    """Numeric properties of a ``pyopencl.Device`` (or any object with the same attributes)."""
    sizes = list(getattr(device, "max_work_item_sizes", [0, 0])) + [0, 0]
    out = {
        "max_compute_units": float(device.max_compute_units),
        "max_work_group_size": float(device.max_work_group_size),
        "local_mem_size": float(device.local_mem_size),
        "global_mem_size": float(device.global_mem_size),
        "global_mem_cache_size": float(getattr(device, "global_mem_cache_size", 0) or 0),
        "global_mem_cacheline_size": float(getattr(device, "global_mem_cacheline_size", 0) or 0),
        "max_clock_frequency": float(getattr(device, "max_clock_frequency", 0) or 0),
        "preferred_vector_width_float": float(getattr(device, "preferred_vector_width_float", 1) or 1),
        "max_work_item_sizes_0": float(sizes[0]),
        "max_work_item_sizes_1": float(sizes[1]),
        "is_gpu": float(_is_gpu(device)),
    }
    return out


def _is_gpu(device: Any) -> bool:
    t = getattr(device, "type", None)
    if isinstance(t, (int, float)):
        return bool(int(t) & 4)  # CL_DEVICE_TYPE_GPU
    return "gpu" in str(t).lower()


_PATTERNS: dict[str, str] = {
    "local_load": r"\bGET\s*\(|\btile\s*\[",
    "global_load": r"\bin\s*\[",
    "global_store": r"\bout\s*\[[^\]]*\]\s*=",
    "add": r"(?<![+\-*/<>=!&|])(\+=?|-=?)(?![+\-=>])",
    "mul": r"(?<![/*])\*(?![/])",
    "div": r"(?<![/*])/(?![/*])|%",
    "cmp": r"==|!=|<=|>=|(?<![<\-])<(?![<=])|(?<![>\-])>(?![>=])",
    "math": r"\b(sqrt|fabs|exp|log|sin|cos|pow|clamp|min|max|fma|mad)\s*\(",
    "branch": r"\b(if|for|while)\b|\?",
    "barrier": r"\bbarrier\s*\(",
}

_BORDER = re.compile(r"#define\s+B([NESW])\s+(\d+)")


def _strip_comments(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.DOTALL)
    return re.sub(r"//[^\n]*", " ", source)


def kernel_features(source: str) -> dict[str, float]:
    """Instruction densities and border sizes of a generated stencil kernel (see the module docstring).

    Raises :class:`KernelParseError` (a ``ValueError``) when ``source`` is not
    one of our stencil kernels: no ``kernel void``, no border definitions, or
    unbalanced braces.  Callers answer that with W_safe.
    """
    if not isinstance(source, str) or "kernel" not in source:
        raise KernelParseError("kernel_features(source=...): no 'kernel void ...' function in the source; "
                               "pass the OpenCL C of a stencil made by apps.workgroup.kernels")
    body = _strip_comments(source)
    if body.count("{") != body.count("}") or body.count("(") != body.count(")"):
        raise KernelParseError("kernel_features(source=...): unbalanced braces or parentheses; "
                               "the source does not compile as given")
    borders = {d: int(v) for d, v in _BORDER.findall(body)}
    if set(borders) != set("NESW"):
        raise KernelParseError("kernel_features(source=...): the border sizes '#define BN/BE/BS/BW <int>' are "
                               "missing; features need the stencil's border region (Section 2)")
    code = "\n".join(ln for ln in body.splitlines() if not ln.lstrip().startswith("#"))
    counts = {c: float(len(re.findall(p, code))) for c, p in _PATTERNS.items()}
    total = sum(counts.values())
    out = {f"density_{c}": (counts[c] / total if total else 0.0) for c in _CATEGORIES}
    out["instructions"] = total
    out.update(north=float(borders["N"]), east=float(borders["E"]), south=float(borders["S"]),
               west=float(borders["W"]), complexity=float("sqrt(" in code and "for (int it" in code))
    return out


def dataset_features(rows: int, cols: int, itemsize: int, dtype: str) -> dict[str, float]:
    """The 2-D size and element type of the data (Section 3.2)."""
    return {"rows": float(rows), "cols": float(cols), "itemsize": float(itemsize),
            "is_int": float(dtype == "int"), "is_double": float(dtype == "double")}


def vector(device: dict[str, float], kernel: dict[str, float], dataset: dict[str, float]) -> list[float]:
    """f(s) in :data:`FEATURE_NAMES` order (a plain list: the models take arrays, not dicts)."""
    merged = {f"dev_{k}": v for k, v in device.items()}
    merged.update(kernel)
    merged.update(dataset)
    missing = [n for n in FEATURE_NAMES if n not in merged]
    if missing:
        raise KernelParseError(f"vector(...): features {missing} are missing; build them with "
                               "device_features, kernel_features and dataset_features")
    return [float(merged[n]) for n in FEATURE_NAMES]
