"""Explicit registries: technique and app names -> "module:attr", imported lazily.

The core never imports ``techniques`` or ``apps``; it looks names up here and
imports the target only when it is used, so a missing optional dependency
(deap, scikit-learn, pyopencl, ...) only matters for the technique that needs
it, and then the error names the pip extra to install.  Third parties add
names through entry points in the groups ``ensemble.techniques`` and
``ensemble.apps``.  Names are unique: registering a taken name is refused.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Mapping
from typing import Any

from ensemble.errors import EnsembleError, MissingExtraError, TechniqueError

__all__ = [
    "APPS",
    "EXTRAS",
    "TECHNIQUES",
    "app_names",
    "create_technique",
    "load_app",
    "load_technique",
    "register",
    "register_app",
    "resolve",
    "technique_names",
]

#: technique name -> "module:attr" (a Technique subclass or a factory taking seed=, **options)
TECHNIQUES: dict[str, str] = {
    "AUCBandit": "techniques.bandit:AUCBandit",
    "RoundRobin": "techniques.round_robin:RoundRobin",
    "Random": "techniques.random_search:Random",
    "NelderMead": "techniques.nelder_mead:NelderMead",
    "Torczon": "techniques.torczon:Torczon",
    "SimulatedAnnealing": "techniques.annealing:SimulatedAnnealing",
    "DifferentialEvolution": "techniques.differential_evolution:DifferentialEvolution",
    "GreedyMutation": "techniques.greedy_mutation:GreedyMutation",
    "NormalGreedyMutation": "techniques.greedy_mutation:NormalGreedyMutation",
    "PatternSearch": "techniques.pattern_search:PatternSearch",
    "GA": "techniques.ga:GA",
    "DiscreteGA": "techniques.discrete_ga:DiscreteGA",
    "PSO": "techniques.pso:PSO",
    "GreedyILS": "techniques.local_search:GreedyILS",
    "Surrogate": "techniques.surrogate:SurrogateForest",
    "BayesOpt": "techniques.bayes_opt:BayesOpt",
    "IslandGA": "techniques.island_ga:IslandGA",
    "CsTuner": "techniques.cstuner:CsTuner",
    "default": "techniques.default:DefaultEnsemble",
}

#: app name -> "module:attr" (a TunerApp subclass)
APPS: dict[str, str] = {
    "demo_matmul": "apps.demo.matmul:BlockedMatmul",
    "gcc_flags": "apps.gcc_flags.app:GccFlagsApp",
    "hls_flags": "apps.hls_flags.app:HlsFlagsApp",
    "nvcc_flags": "apps.nvcc_flags.app:NvccFlagsApp",
    "replay": "apps.replay.app:ReplayApp",
    "stencil": "apps.stencil.app:StencilApp",
}

#: top-level module of an optional dependency -> pip extra that installs it
EXTRAS: dict[str, str] = {
    "pyopencl": "opencl",
    "pycuda": "cuda",
    "mpi4py": "mpi",
    "psycopg2": "postgres",
    "statsmodels": "stats",
}

# configured variants registered at run time: name -> (base name, options)
_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {}

_ENTRY_POINTS_LOADED: set[str] = set()


def _load_entry_points(group: str, table: dict[str, str]) -> None:
    """Merge third-party entry points of ``group`` into ``table`` (once per group)."""
    if group in _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED.add(group)
    for ep in importlib.metadata.entry_points(group=group):
        if ep.name in table and table[ep.name] != ep.value:
            continue  # built-in names win; a plug-in cannot shadow them
        table.setdefault(ep.name, ep.value)


def register(name: str, target: str | type | Any, **options: Any) -> None:
    """Register a technique name.

    ``target`` is a "module:attr" string, a class/factory, or the name of an
    already registered technique; with ``options`` the name becomes a configured
    variant (e.g. ``register("AUCBandit-C1", "AUCBandit", exploration=1.0)``).
    A name that is already taken is refused.
    """
    _load_entry_points("ensemble.techniques", TECHNIQUES)
    if not isinstance(name, str) or not name:
        raise TechniqueError(f"register(name={name!r}): give a non-empty string")
    if name in TECHNIQUES or name in _VARIANTS:
        raise TechniqueError(
            f"register(name={name!r}): the name is already registered "
            f"(-> {TECHNIQUES.get(name) or _VARIANTS[name][0]}); choose another name"
        )
    if options or (isinstance(target, str) and ":" not in target):
        base = target if isinstance(target, str) else _object_path(target)
        if (
            isinstance(base, str)
            and ":" not in base
            and base not in TECHNIQUES
            and base not in _VARIANTS
        ):
            raise TechniqueError(
                f"register({name!r}, {base!r}): {base!r} is neither 'module:attr' nor a "
                f"registered technique; known: {', '.join(technique_names())}"
            )
        _VARIANTS[name] = (base, dict(options))
        return
    TECHNIQUES[name] = target if isinstance(target, str) else _object_path(target)


def register_app(name: str, target: str | type) -> None:
    """Register an app name -> "module:attr" (or a class); taken names are refused."""
    _load_entry_points("ensemble.apps", APPS)
    if name in APPS:
        raise EnsembleError(
            f"register_app(name={name!r}): already registered -> {APPS[name]}"
        )
    APPS[name] = target if isinstance(target, str) else _object_path(target)


def _object_path(obj: Any) -> str:
    mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not mod or not qual or "<" in qual:
        raise TechniqueError(
            f"register(target={obj!r}): cannot refer to it by 'module:attr'; "
            "define it at module level or pass the 'module:attr' string"
        )
    return f"{mod}:{qual}"


def technique_names() -> list[str]:
    """All technique names: built-in, entry points and registered variants."""
    _load_entry_points("ensemble.techniques", TECHNIQUES)
    return sorted(set(TECHNIQUES) | set(_VARIANTS))


def app_names() -> list[str]:
    """All app names: built-in and entry points."""
    _load_entry_points("ensemble.apps", APPS)
    return sorted(APPS)


def resolve(path: str, *, what: str = "technique") -> Any:
    """Import "module:attr"; MissingExtraError names the pip extra when a dependency is absent."""
    if ":" not in path:
        raise TechniqueError(
            f"{what} target {path!r} must look like 'package.module:attr'"
        )
    module_name, attr = path.split(":", 1)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing and missing != module_name.split(".")[0] and missing in EXTRAS:
            raise MissingExtraError(
                f"{what} {path!r} needs the optional package {missing!r}: "
                f"pip install 'ensemble-tuner[{EXTRAS[missing]}]'"
            ) from exc
        if (
            missing
            and missing != module_name.split(".")[0]
            and not module_name.startswith(missing)
        ):
            raise MissingExtraError(
                f"{what} {path!r} needs the package {missing!r}, which is not installed: "
                f"pip install {missing}"
            ) from exc
        raise TechniqueError(
            f"{what} {path!r}: module {module_name!r} cannot be imported ({exc}); "
            "is the name registered correctly?"
        ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TechniqueError(
                f"{what} {path!r}: module {module_name!r} has no attribute {attr!r}"
            ) from None
    return obj


def load_technique(name: str) -> Any:
    """The class or factory registered as technique ``name``."""
    names = technique_names()
    if name in _VARIANTS:
        return (
            load_technique(_VARIANTS[name][0])
            if ":" not in _VARIANTS[name][0]
            else resolve(_VARIANTS[name][0])
        )
    if name not in TECHNIQUES:
        raise TechniqueError(
            f"unknown technique {name!r}; known techniques: {', '.join(names)} "
            "(see --list-techniques)"
        )
    return resolve(TECHNIQUES[name])


def create_technique(name: str, seed: int | None = None, **options: Any) -> Any:
    """Instantiate technique ``name`` with ``seed`` and ``options`` (variant options first)."""
    if name in _VARIANTS:
        base, preset = _VARIANTS[name]
        merged = {**preset, **options}
        if ":" in base:
            obj = resolve(base)(seed=seed, **merged)
        else:
            obj = create_technique(base, seed=seed, **merged)
        _set_name(obj, name)
        return obj
    factory = load_technique(name)
    try:
        return factory(seed=seed, **options)
    except TypeError as exc:
        raise TechniqueError(
            f"technique {name!r}: bad options {sorted(options)}: {exc}"
        ) from exc


def _set_name(obj: Any, name: str) -> None:
    try:
        obj.name = name
    except AttributeError:  # pragma: no cover - frozen objects keep their own name
        pass


def load_app(name: str) -> Any:
    """The TunerApp subclass registered as ``name``."""
    names = app_names()
    if name not in APPS:
        raise EnsembleError(
            f"unknown app {name!r}; known apps: {', '.join(names) or '(none)'}"
        )
    return resolve(APPS[name], what="app")


def _snapshot() -> Mapping[str, Any]:  # pragma: no cover - debugging helper
    return {
        "techniques": dict(TECHNIQUES),
        "variants": dict(_VARIANTS),
        "apps": dict(APPS),
    }
