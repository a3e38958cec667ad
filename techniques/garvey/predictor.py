"""Random-forest prediction of the data-loading technique (Garvey & Abdelrahman 2018, Sec. 6.1, 7.2, 8.2).

Why here and why plain dicts: the technique must fix the loading technique
before its heuristic runs (Sec. 6.3), and techniques may not import apps, so
the model takes the four static features as a dict (``size``, ``dims``,
``density``, ``unique``; ``apps.stencil.garvey_suite.garvey_features`` makes
them) and measured rows as plain data.

* Training data (Sec. 7.2): for each kernel, each heuristic run with each
  loading technique; the label is the loading whose best configuration is
  fastest.  A separate model per heuristic (Sec. 6.3).
* Evaluation (Sec. 7.2, 8.2): leave-one-out; *absolute accuracy* (fraction
  of kernels whose best loading is predicted) and *penalty-weighted accuracy*
  (mean over kernels of oracle time / time with the predicted loading).
* The forest: Weka 3.6's default random forest in the paper; here
  scikit-learn's ``RandomForestClassifier`` with Weka's defaults (10 trees,
  ``int(log2(M) + 1)`` features per split, unpruned) and a fixed seed.
  ``unique`` is one-hot encoded (Weka handles nominal attributes itself).
* The model file is JSON (no pickles): the training rows and the forest's
  settings.  Loading it refits the forest with the same seed, which gives
  the same trees in any process; the rows are a few KiB.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ensemble.errors import ConfigurationError

__all__ = ["LOADINGS", "LoadingPredictor", "best_loading", "default_model_path", "leave_one_out"]

LOADINGS = ("global", "vec", "local", "image")
_UNIQUE = ("none", "x", "y", "z")
FORMAT = "ensemble-tuner/garvey-loading-model/1"


def _vector(f: Mapping[str, Any]) -> list[float]:
    try:
        u = str(f.get("unique") or "none")
        return [float(f["size"]), float(f["dims"]), float(f["density"])] + [1.0 if u == k else 0.0 for k in _UNIQUE]
    except KeyError as exc:
        raise ConfigurationError(f"features={dict(f)!r} lack {exc}; give size, dims, density and unique") from None


def best_loading(times: Mapping[str, float]) -> str | None:
    """The loading with the smallest finite time, or None when none ran."""
    ok = {k: v for k, v in times.items() if v is not None and math.isfinite(v)}
    return min(ok, key=lambda k: (ok[k], LOADINGS.index(k) if k in LOADINGS else 99)) if ok else None


class LoadingPredictor:
    """RF classifier: features -> loading technique, for one heuristic."""

    def __init__(self, *, n_estimators: int = 10, max_features: int | None = None, seed: int = 1) -> None:
        self.n_estimators = n_estimators
        self.max_features = max_features or int(math.log2(3 + len(_UNIQUE)) + 1)  # Weka: log2(M) + 1
        self.seed = seed
        self._forest: Any = None
        self._constant: str | None = None

    def fit(self, rows: Sequence[Mapping[str, Any]], heuristic: str) -> LoadingPredictor:
        """``rows``: ``{"features": {...}, "times": {heuristic: {loading: seconds}}}``; unlabeled rows skipped."""
        X, y = [], []
        for r in rows:
            label = best_loading(r["times"].get(heuristic, {}))
            if label is not None:
                X.append(_vector(r["features"]))
                y.append(label)
        if not y:
            raise ConfigurationError(f"no row has a measured time for heuristic={heuristic!r}; "
                                     f"heuristics in the rows: {sorted({h for r in rows for h in r['times']})}")
        if len(set(y)) == 1:
            self._constant, self._forest = y[0], None
            return self
        from sklearn.ensemble import (
            RandomForestClassifier,  # heavy: only when a model is fitted
        )

        self._constant = None
        self._forest = RandomForestClassifier(n_estimators=self.n_estimators, max_features=self.max_features,
                                              random_state=self.seed).fit(X, y)
        return self

    def predict(self, features: Mapping[str, Any]) -> str:
        if self._constant is not None:
            return self._constant
        if self._forest is None:
            raise ConfigurationError("LoadingPredictor.predict() before fit(); fit it or load a model file")
        return str(self._forest.predict([_vector(features)])[0])

    # -- model file ------------------------------------------------------------------------------------------
    @staticmethod
    def save(path: str | Path, rows: Sequence[Mapping[str, Any]], *, platform: str, n_estimators: int = 10,
             seed: int = 1, note: str = "") -> None:
        """Write the model file (training rows + forest settings) as JSON."""
        doc = {"format": FORMAT, "platform": platform, "n_estimators": n_estimators, "seed": seed,
               "features": ["size", "dims", "density", "unique"], "note": note, "rows": list(rows)}
        Path(path).write_text(json.dumps(doc, indent=1, sort_keys=True))

    @classmethod
    def load(cls, path: str | Path | None, heuristic: str) -> LoadingPredictor:
        """The model for ``heuristic`` from a model file (default: the one shipped with the package).

        A file measured with the hybrid heuristic only (the shipped NVIDIA one: the device time did not
        allow all three) serves the other heuristics with its hybrid labels.
        """
        doc = read_model_file(path)
        if not any(heuristic in r["times"] for r in doc["rows"]) and any("hybrid" in r["times"] for r in doc["rows"]):
            heuristic = "hybrid"
        return cls(n_estimators=int(doc["n_estimators"]), seed=int(doc["seed"])).fit(doc["rows"], heuristic)


def default_model_path() -> Path:
    return Path(str(resources.files("techniques.garvey") / "data" / "loading_model.json"))


def read_model_file(path: str | Path | None) -> dict[str, Any]:
    p = Path(path) if path is not None else default_model_path()
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigurationError(f"model file {p} does not exist; make one with scripts/garvey_dataset.py "
                                 "or pass loading='global'/'vec'/'local'/'image'") from None
    if doc.get("format") != FORMAT:
        raise ConfigurationError(f"{p} is not a loading-model file (format {doc.get('format')!r}, want {FORMAT!r})")
    return doc  # type: ignore[no-any-return]


def leave_one_out(rows: Sequence[Mapping[str, Any]], heuristic: str, *, n_estimators: int = 10,
                  seed: int = 1) -> dict[str, Any]:
    """Sec. 7.2 / 8.2: LOO accuracy and penalty-weighted accuracy for one heuristic.

    Returns ``absolute_accuracy``, ``penalty_weighted_accuracy`` (mean of
    oracle time / time with the predicted loading; a predicted loading that
    found nothing counts 0) and per-kernel ``predictions``.
    """
    usable = [r for r in rows if best_loading(r["times"].get(heuristic, {})) is not None]
    if len(usable) < 2:
        raise ConfigurationError(f"leave-one-out needs at least 2 measured kernels for {heuristic!r}, "
                                 f"got {len(usable)}")
    preds: list[dict[str, Any]] = []
    hits, pwa = 0, 0.0
    for i, r in enumerate(usable):
        train = usable[:i] + usable[i + 1:]
        model = LoadingPredictor(n_estimators=n_estimators, seed=seed).fit(train, heuristic)
        times = r["times"][heuristic]
        best = best_loading(times)
        p = model.predict(r["features"])
        t_pred = times.get(p)
        ratio = times[best] / t_pred if t_pred is not None and math.isfinite(t_pred) and t_pred > 0 else 0.0
        hits += p == best
        pwa += ratio
        preds.append({"name": r.get("name"), "predicted": p, "best": best, "ratio": ratio})
    n = len(usable)
    return {"heuristic": heuristic, "kernels": n, "absolute_accuracy": hits / n,
            "penalty_weighted_accuracy": pwa / n, "predictions": preds}
