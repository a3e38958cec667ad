"""From a kernel, a device and a dataset to a predicted work-group size (the paper's run-time path).

:func:`train` fits a ``techniques.workgroup.WorkgroupPredictor`` on an
extract (default: the one shipped with the package); :func:`scenario_vector`
assembles f(s) from the kernel source, the device's feature dict and the
dataset; :func:`predict` ties them together and never raises on bad input: a
kernel the extractor cannot read, a feature vector the model cannot use or a
device smaller than every training device all give the W_safe baseline with
the reason in ``Prediction.note``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from apps.workgroup.data import WorkgroupData, load
from apps.workgroup.features import (
    DEVICE_FEATURES,
    KernelParseError,
    dataset_features,
    kernel_features,
    vector,
)
from techniques.workgroup import Prediction, WorkgroupPredictor

__all__ = ["predict", "scenario_vector", "train"]

_ITEMSIZE = {"int": 4, "float": 4, "double": 8}


def train(method: str = "speedup", *, model: str = "J48", fallback: str = "nearest", seed: int = 0,
          data: WorkgroupData | str | Path | None = None) -> WorkgroupPredictor:
    """A predictor fitted on ``data`` (a loaded data set, an extract folder, or None: the shipped one)."""
    d = data if isinstance(data, WorkgroupData) else load(data)
    return WorkgroupPredictor(method, model=model, fallback=fallback, seed=seed).fit(
        d.features, d.times, d.refused, d.column("w_max"))


@functools.lru_cache(maxsize=8)
def _shipped(method: str, model: str, fallback: str, seed: int) -> WorkgroupPredictor:
    return train(method, model=model, fallback=fallback, seed=seed)


def shipped_predictor(method: str = "speedup", model: str = "J48", fallback: str = "nearest",
                      seed: int = 0) -> WorkgroupPredictor:
    """The predictor trained on the shipped extract (cached per process)."""
    return _shipped(method, model, fallback, seed)


def scenario_vector(source: str, device: dict[str, float], rows: int, cols: int, dtype: str) -> list[float]:
    """f(s) for a kernel source, a device feature dict and a dataset; raises KernelParseError."""
    if dtype not in _ITEMSIZE:
        raise KernelParseError(f"scenario_vector(dtype={dtype!r}): use one of {sorted(_ITEMSIZE)}")
    missing = [k for k in DEVICE_FEATURES if k not in device]
    if missing:
        raise KernelParseError(f"scenario_vector(device=...): device features {missing} are missing; build "
                               "them with apps.workgroup.features.device_features(pyopencl_device)")
    return vector(device, kernel_features(source), dataset_features(rows, cols, _ITEMSIZE[dtype], dtype))


def predict(predictor: WorkgroupPredictor, source: str, device: dict[str, float], rows: int, cols: int,
            dtype: str, w_max: int, is_legal: Callable[[tuple[int, int]], bool] | None = None,
            **kw: Any) -> Prediction:
    """Predict a size; bad input gives the W_safe baseline with the reason in ``note`` (no exception)."""
    try:
        x = scenario_vector(source, device, rows, cols, dtype)
    except KernelParseError as exc:
        p = predictor.predict([float("nan")] * predictor.n_features, w_max, is_legal, **kw)
        return Prediction(p.size, p.method, None, 0, (), p.seconds, f"{exc}; using the W_safe baseline")
    return predictor.predict(x, w_max, is_legal, **kw)
