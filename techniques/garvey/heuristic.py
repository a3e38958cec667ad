"""The ``garvey`` technique: predicted loading, then grouped exhaustive search.

Garvey & Abdelrahman, "A Strategy for Automatic Performance Tuning of Stencil
Computations on GPUs", Scientific Programming 2018:

* Sec. 6.3 (overall strategy): predict the data-loading technique with the
  random forest (``techniques.garvey.predictor``), fix it, run a heuristic.
* Sec. 6.2 (grouping heuristics): each group's parameters are explored
  exhaustively with the others held at the best configuration so far; the
  best values are then fixed and the next group is tuned; the sequence of
  groups is repeated ``n`` times (Sec. 8.3.1 chooses n = 2, our default).
* Sec. 7.3: the groups come from a heuristic specification file
  (``techniques.garvey.spec``); the paper's three heuristics ship as
  ``heuristics/dims.spec``, ``opts.spec`` and ``hybrid.spec``.

What the app must tell the technique (array size, the paper's parameter
names, what each loading technique fixes, the stencil's features) arrives as
plain data: the ``hints`` option, or ``space.hints["garvey"]`` set by the app
(``apps.stencil``).  On a space without hints and with the default heuristic
(the conformance suite's spaces, a user's own app) the technique falls back
to one group per parameter, repeated until a pass finds nothing new: the
"group by optimisation" idea with every parameter its own optimisation.
Differences from the paper are listed in docs/GARVEY.md.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Generator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ensemble.errors import TechniqueError
from techniques.base import SequentialTechnique, Step
from techniques.garvey.spec import HeuristicSpec, SpecError, Statement, parse_spec

__all__ = ["HEURISTICS", "Garvey", "load_heuristic"]

_log = logging.getLogger("ensemble.techniques.garvey")

HEURISTICS = ("dims", "opts", "hybrid")


def load_heuristic(name_or_path: str) -> HeuristicSpec:
    """A shipped heuristic (``dims``, ``opts``, ``hybrid``) or a file of the user's."""
    if name_or_path in HEURISTICS:
        ref = resources.files("techniques.garvey") / "heuristics" / f"{name_or_path}.spec"
        return parse_spec(ref.read_text(), source=f"{name_or_path}.spec")
    p = Path(name_or_path)
    if not p.is_file():
        raise SpecError(f"heuristic={name_or_path!r} is neither one of {HEURISTICS} nor a readable file",
                        source=name_or_path)
    return parse_spec(p.read_text(), source=str(p))


class Garvey(SequentialTechnique):
    """Predict the loading technique, then explore one group of parameters at a time, exhaustively.

    Options: ``heuristic`` (``dims``, ``opts``, ``hybrid`` or a file path),
    ``repeats`` (the paper's n), ``loading`` (None: predict; or ``global``,
    ``vec``, ``local``, ``image``), ``model`` (a loading-model file; default:
    the shipped one), ``hints`` (what the app knows; default
    ``space.hints["garvey"]``).
    """

    name: ClassVar[str] = "garvey"
    summary: ClassVar[str] = ("Garvey & Abdelrahman 2018: RF-predicted data loading, then grouped exhaustive "
                              "heuristics (dims/opts/hybrid spec files)")

    def __init__(self, *, seed: int | None = None, heuristic: str | None = None, repeats: int = 2,
                 loading: str | None = None, model: str | None = None,
                 hints: Mapping[str, Any] | None = None, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        if int(repeats) < 0:
            raise TechniqueError(f"garvey: repeats={repeats} must be >= 0 (the paper uses 2)")
        self.heuristic_option = heuristic
        self.heuristic = heuristic or "hybrid"
        self.repeats = int(repeats)
        self.loading_option = loading
        self.model = model
        self.hints_option = dict(hints) if hints is not None else None
        self.spec = load_heuristic(self.heuristic)  # parse now: a malformed file fails before any run
        self.loading: str | None = None
        self.groups_run = 0
        self.group_log: list[dict[str, Any]] = []

    # -- set-up ---------------------------------------------------------------------------------------------
    def _hints(self) -> dict[str, Any]:
        if self.hints_option is not None:
            return self.hints_option
        return dict((getattr(self.space, "hints", None) or {}).get("garvey") or {})

    def _choose_loading(self, hints: Mapping[str, Any]) -> dict[str, Any]:
        loadings = hints.get("loadings") or {}
        if not loadings:
            return {"fixed": {}, "constants": {"VMIN": 1, "VMAX": 1}}
        choice = self.loading_option
        if choice is None:
            features = hints.get("features")
            if features:
                from techniques.garvey.predictor import LoadingPredictor

                key = self.heuristic if self.heuristic in HEURISTICS else "hybrid"
                choice = LoadingPredictor.load(self.model, key).predict(features)
            else:
                choice = "global"
                _log.warning("garvey: no stencil features to predict the loading technique; using global memory")
        if choice not in loadings:
            raise TechniqueError(f"garvey: loading={choice!r} is not one of {sorted(loadings)}")
        self.loading = choice
        return dict(loadings[choice])

    # -- the search ---------------------------------------------------------------------------------------------
    def _on_bind(self) -> None:
        super()._on_bind()
        hints = self._hints()
        # the app may name the heuristic and loading (``--heuristic FILE``, ``--loading``); options win
        if self.heuristic_option is None and hints.get("heuristic"):
            self.heuristic = str(hints["heuristic"])
            self.spec = load_heuristic(self.heuristic)
        if self.loading_option is None and hints.get("loading"):
            self.loading_option = str(hints["loading"])
        if self.model is None and hints.get("model"):
            self.model = str(hints["model"])

    def steps(self) -> Generator[Step, Any, None]:
        hints = self._hints()
        if not hints and self.heuristic == "hybrid" and not (self.spec.targets() <= set(self.space.names)):
            yield from self._per_parameter()
        else:
            yield from self._heuristic(hints)
        self._exhausted = True
        while True:  # done: the drivers stop asking; answer from the best if they do not
            yield dict(self.best_config or self.random_config())

    def _heuristic(self, hints: Mapping[str, Any]) -> Generator[Step, Any, None]:
        names = dict(hints.get("names") or {})
        for n in self.space.names:
            names.setdefault(n, n)
        self.spec.check_targets(set(names))
        loading = self._choose_loading(hints)
        fixed = dict(loading.get("fixed") or {})
        constants = {**dict(hints.get("constants") or {}), **dict(loading.get("constants") or {})}
        current = {**self.random_config(), **fixed}
        value = math.inf
        for it in range(1 + self.repeats):
            for st in self.spec.statements:
                if not st.explores:
                    if it == 0:
                        current = self._apply(current, next(iter(self._assignments(st, current, current, names,
                                                                                     constants, it))), names, fixed)
                    continue
                cands = self._candidates(st, current, names, fixed, constants, it)
                self.groups_run += 1
                if not cands:
                    _log.warning("garvey: group at line %d has no valid configuration; skipped", st.line)
                    self.group_log.append({"line": st.line, "pass": it, "candidates": 0})
                    continue
                values = yield cands
                self.group_log.append({"line": st.line, "pass": it, "candidates": len(cands),
                                       "ok": sum(1 for v in values if math.isfinite(v))})
                i = int(np.argmin(values))
                if values[i] < value:
                    current, value = cands[i], values[i]
                elif not math.isfinite(values[i]):
                    _log.warning("garvey: every configuration of the group at line %d failed (the device may "
                                 "refuse all its work-group sizes); keeping the current values", st.line)

    def _env(self, config: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
        env = {k: v for k, v in config.items()}
        for spec_name, space_name in names.items():
            if space_name in config:
                env[spec_name] = config[space_name]
        return env

    def _assignments(self, st: Statement, current: Mapping[str, Any], best: Mapping[str, Any],
                     names: Mapping[str, str], constants: Mapping[str, Any], it: int) -> Any:
        env = {**self._env(current, names), **constants, "ITER": it}
        return st.expand(env, self._env(best, names), self.spec.source)

    def _apply(self, base: Mapping[str, Any], assigned: Mapping[str, Any], names: Mapping[str, str],
               fixed: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(base)
        for k, v in assigned.items():
            out[names[k]] = v
        out.update(fixed)
        return out

    def _candidates(self, st: Statement, current: dict[str, Any], names: Mapping[str, str],
                    fixed: Mapping[str, Any], constants: Mapping[str, Any], it: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for assigned in self._assignments(st, current, current, names, constants, it):
            cand = self._apply(current, assigned, names, fixed)
            try:
                ok = self.space.is_valid(cand)
            except Exception:  # noqa: BLE001 - a value of the wrong type is just not a candidate
                ok = False
            if ok:
                h = self.hash(cand)
                if h not in seen:
                    seen.add(h)
                    out.append(cand)
        return out

    # -- fallback: one group per parameter ------------------------------------------------------------------
    def _per_parameter(self) -> Generator[Step, Any, None]:
        current = self.random_config()
        value = math.inf
        width = 1.0
        for _ in range(64):
            new = 0
            for p in self.space.params:
                cands = []
                for v in self._values_of(p, current, width):
                    c = {**current, p.name: v}
                    if self.space.is_valid(c) and c not in cands:
                        cands.append(c)
                new += sum(1 for c in cands if self.value_of(c) is None)
                if not cands:
                    continue
                values = yield cands
                i = int(np.argmin(values))
                if values[i] < value:
                    current, value = cands[i], values[i]
            width /= 2
            if new == 0:
                return

    def _values_of(self, p: Any, current: Mapping[str, Any], width: float) -> list[Any]:
        card = getattr(p, "cardinality", None)
        if isinstance(card, int) and card <= 64 and hasattr(p, "value_at"):
            return [p.value_at(i) for i in range(card)]
        if isinstance(card, int) and hasattr(p, "value_at"):
            return [p.value_at(int(i)) for i in np.linspace(0, card - 1, 16).round()]
        u = np.asarray(p.to_unit(current[p.name]), dtype=float)
        lo = np.clip(u - width / 2, 0.0, 1.0)
        hi = np.clip(u + width / 2, 0.0, 1.0)
        return [p.from_unit(lo + (hi - lo) * t) for t in np.linspace(0.0, 1.0, 9)]

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "loading": self.loading, "groups_run": self.groups_run}
