"""Explicit registries: technique, app and command names -> "module:attr", imported lazily.

Why entry points for the built-ins too: the core must not know the names of
the packages above it (``techniques``, ``apps``).  Every name, ours and third
parties', is declared as an entry point (``setup.cfg``, groups
``ensemble.techniques``, ``ensemble.apps`` and ``ensemble.commands``) and
imported only when used, so a missing optional dependency (deap, scikit-learn,
pyopencl, ...) only matters for the entry that needs it, and the error then
names the pip extra to install.

Names are unique.  The distribution ``ensemble-tuner`` is read first, so a
plug-in cannot shadow a built-in name (its entry is skipped with a warning);
``register`` refuses a taken name.  When the package runs from a source tree
that was never installed (``PYTHONPATH=checkout``, as on the GPU machine), the
entry points are read from the checkout's ``setup.cfg`` instead.

A :class:`Registry` object holds one group; the module keeps one per group
(:data:`TECHNIQUE_REGISTRY`, :data:`APP_REGISTRY`, :data:`COMMAND_REGISTRY`)
and the functions below are thin wrappers kept for callers and plug-ins.
Tests build fresh ``Registry`` objects instead of patching module state.
"""

from __future__ import annotations

import configparser
import importlib
import importlib.metadata
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from ensemble.errors import EnsembleError, MissingExtraError, TechniqueError

__all__ = [
    "APP_REGISTRY",
    "COMMAND_REGISTRY",
    "DISTRIBUTION",
    "EXTRAS",
    "TECHNIQUE_REGISTRY",
    "Registry",
    "app_names",
    "builtin_technique_names",
    "create_technique",
    "load_app",
    "load_technique",
    "register",
    "register_app",
    "resolve",
    "technique_names",
]

_log = logging.getLogger("ensemble.registry")

#: the distribution whose entry points are the built-ins
DISTRIBUTION = "ensemble-tuner"

#: top-level module of an optional dependency -> pip extra that installs it
EXTRAS: dict[str, str] = {
    "pyopencl": "opencl",
    "pycuda": "cuda",
    "mpi4py": "mpi",
    "psycopg2": "postgres",
    "psycopg": "postgres",
    "statsmodels": "stats",
}

EntryPointSource = Callable[[str], Iterable[tuple[str, str, bool]]]


def installed_entry_points(group: str) -> list[tuple[str, str, bool]]:
    """(name, "module:attr", built-in?) of ``group``; our distribution's first.

    Falls back to the source checkout's setup.cfg when ``ensemble-tuner`` is
    not installed, so a bare checkout on PYTHONPATH still knows its built-ins.
    """
    ours: list[tuple[str, str, bool]] = []
    others: list[tuple[str, str, bool]] = []
    for ep in importlib.metadata.entry_points(group=group):
        dist = getattr(getattr(ep, "dist", None), "name", None)
        builtin = dist is not None and dist.replace("_", "-").lower() == DISTRIBUTION
        (ours if builtin else others).append((ep.name, ep.value, builtin))
    if not ours:
        ours = _source_tree_entry_points(group)
    return ours + others


def _source_tree_entry_points(group: str) -> list[tuple[str, str, bool]]:
    cfg = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "setup.cfg")
    if not os.path.exists(cfg):
        return []
    parser = configparser.ConfigParser()
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # names are case-sensitive
    parser.read(cfg, encoding="utf-8")
    text = parser.get("options.entry_points", group, fallback="")
    out = []
    for line in text.splitlines():
        if "=" in line:
            name, value = (part.strip() for part in line.split("=", 1))
            out.append((name, value, True))
    return out


def resolve(path: str, *, what: str = "technique") -> Any:
    """Import "module:attr"; MissingExtraError names the pip extra when a dependency is absent."""
    if ":" not in path:
        raise TechniqueError(f"{what} target {path!r} must look like 'package.module:attr'")
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
        if missing and missing != module_name.split(".")[0] and not module_name.startswith(missing):
            raise MissingExtraError(
                f"{what} {path!r} needs the package {missing!r}, which is not installed: pip install {missing}"
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
            raise TechniqueError(f"{what} {path!r}: module {module_name!r} has no attribute {attr!r}") from None
    return obj


def _object_path(obj: Any) -> str:
    mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not mod or not qual or "<" in qual:
        raise TechniqueError(
            f"register(target={obj!r}): cannot refer to it by 'module:attr'; "
            "define it at module level or pass the 'module:attr' string"
        )
    return f"{mod}:{qual}"


class Registry:
    """Names of one entry-point group -> "module:attr", plus configured variants.

    Entry points are read on first use.  ``what`` is the word used in errors
    ("technique", "app", "command").
    """

    def __init__(self, group: str, *, what: str, source: EntryPointSource = installed_entry_points) -> None:
        self.group = group
        self.what = what
        self._source = source
        self._targets: dict[str, str] | None = None
        self._builtin: set[str] = set()
        self._variants: dict[str, tuple[str, dict[str, Any]]] = {}

    # -- reading ---------------------------------------------------------------
    def _table(self) -> dict[str, str]:
        if self._targets is None:
            table: dict[str, str] = {}
            for name, value, builtin in self._source(self.group):
                if name in table:
                    if table[name] != value:
                        _log.warning("%s entry point %r -> %s ignored: the name is taken by %s",
                                     self.what, name, value, table[name])
                    continue
                table[name] = value
                if builtin:
                    self._builtin.add(name)
            self._targets = table
        return self._targets

    def names(self) -> list[str]:
        """Every registered name (entry points and variants), sorted."""
        return sorted(set(self._table()) | set(self._variants))

    def builtin_names(self) -> list[str]:
        """Names declared by the ensemble-tuner distribution itself."""
        self._table()
        return sorted(self._builtin)

    def target(self, name: str) -> str:
        """The "module:attr" behind ``name`` (a variant's base target for variants)."""
        if name in self._variants:
            base = self._variants[name][0]
            return base if ":" in base else self.target(base)
        table = self._table()
        if name not in table:
            raise self._unknown(name)
        return table[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._table() or name in self._variants)

    def _unknown(self, name: str) -> EnsembleError:
        known = ", ".join(self.names()) or "(none)"
        if self.what == "technique":
            return TechniqueError(f"unknown technique {name!r}; known techniques: {known} (see --list-techniques)")
        return EnsembleError(f"unknown {self.what} {name!r}; known {self.what}s: {known}")

    # -- writing ---------------------------------------------------------------
    def register(self, name: str, target: str | type | Any, **options: Any) -> None:
        """Add ``name``; a taken name is refused.

        ``target`` is "module:attr", a module-level class/factory, or (with or
        without ``options``) an already registered name: then ``name`` is a
        configured variant, e.g. ``register("AUCBandit-C1", "AUCBandit", exploration=1.0)``.
        """
        if not isinstance(name, str) or not name:
            raise TechniqueError(f"register(name={name!r}): give a non-empty string")
        if name in self:
            raise TechniqueError(
                f"register(name={name!r}): the name is already registered (-> {self.target(name)}); "
                "choose another name"
            )
        if options or (isinstance(target, str) and ":" not in target):
            base = target if isinstance(target, str) else _object_path(target)
            if ":" not in base and base not in self:
                raise TechniqueError(
                    f"register({name!r}, {base!r}): {base!r} is neither 'module:attr' nor a registered "
                    f"{self.what}; known: {', '.join(self.names())}"
                )
            self._variants[name] = (base, dict(options))
            return
        self._table()[name] = target if isinstance(target, str) else _object_path(target)

    # -- loading ---------------------------------------------------------------
    def load(self, name: str) -> Any:
        """The object registered as ``name`` (imported now)."""
        return resolve(self.target(name), what=self.what)

    def create(self, name: str, seed: int | None = None, **options: Any) -> Any:
        """Instantiate ``name`` with ``seed`` and ``options`` (a variant's preset options first)."""
        if name in self._variants:
            base, preset = self._variants[name]
            merged = {**preset, **options}
            obj = resolve(base, what=self.what)(seed=seed, **merged) if ":" in base \
                else self.create(base, seed=seed, **merged)
            try:
                obj.name = name
            except AttributeError:  # pragma: no cover - frozen objects keep their own name
                pass
            return obj
        factory = self.load(name)
        try:
            return factory(seed=seed, **options)
        except TypeError as exc:
            raise TechniqueError(f"{self.what} {name!r}: bad options {sorted(options)}: {exc}") from exc


#: the process's registries (entry points are read once, on first use)
TECHNIQUE_REGISTRY = Registry("ensemble.techniques", what="technique")
APP_REGISTRY = Registry("ensemble.apps", what="app")
COMMAND_REGISTRY = Registry("ensemble.commands", what="command")


def register(name: str, target: str | type | Any, **options: Any) -> None:
    """Register a technique name (see :meth:`Registry.register`)."""
    TECHNIQUE_REGISTRY.register(name, target, **options)


def register_app(name: str, target: str | type) -> None:
    """Register an app name -> "module:attr" (or a class); taken names are refused."""
    if name in APP_REGISTRY:
        raise EnsembleError(f"register_app(name={name!r}): already registered -> {APP_REGISTRY.target(name)}")
    APP_REGISTRY.register(name, target if isinstance(target, str) else _object_path(target))


def technique_names() -> list[str]:
    """All technique names: built-in, entry points and registered variants."""
    return TECHNIQUE_REGISTRY.names()


def builtin_technique_names() -> list[str]:
    """The techniques this distribution ships (what the conformance suite runs)."""
    return TECHNIQUE_REGISTRY.builtin_names()


def app_names() -> list[str]:
    """All app names: built-in and entry points."""
    return APP_REGISTRY.names()


def load_technique(name: str) -> Any:
    """The class or factory registered as technique ``name``."""
    return TECHNIQUE_REGISTRY.load(name)


def create_technique(name: str, seed: int | None = None, **options: Any) -> Any:
    """Instantiate technique ``name`` with ``seed`` and ``options`` (variant options first)."""
    return TECHNIQUE_REGISTRY.create(name, seed=seed, **options)


def load_app(name: str) -> Any:
    """The TunerApp subclass registered as ``name``."""
    return APP_REGISTRY.load(name)
