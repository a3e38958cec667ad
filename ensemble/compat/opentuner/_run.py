"""Starting a run for an OpenTuner app: every call into the core's run entry points is here.

Why one module: the core is moving to one RunSession object that every entry
point goes through (ensemble/driver/session.py). :func:`start_run` (a whole
run, for ``MeasurementInterface.main``: a RunSession) and :func:`start_asktell`
(an ask/tell run, for ``opentuner.api.TuningRunManager``: the core's Tuner,
itself on a RunSession) are the only two places that reach the drivers. :func:`run_interface` is ``main()``'s body: everything that
can be refused (unsupported parts of OpenTuner, a bad technique name, a bad
seed file) is checked before :func:`start_run` measures anything.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from ensemble.compat.opentuner._errors import UnsupportedError
from ensemble.errors import EnsembleError
from ensemble.settings import RunSettings

__all__ = ["run_interface", "start_asktell", "start_run"]

_log = logging.getLogger("ensemble.compat.opentuner")

#: exit statuses of main() calls inside an ``ensemble-tuner opentuner`` run (see _command)
_STATUS_SINKS: list[list[int]] = []


def start_run(app: Any, settings: RunSettings, *, app_ref: str, app_argv: list[str],
              technique: Any = None) -> Any:
    """Tune ``app`` (a TunerApp) under ``settings`` through the core's RunSession; returns its TuneResult.

    The session picks the loop (local workers, or MPI ranks under mpirun).
    """
    from ensemble.driver.session import RunSession

    return RunSession(app, settings, app_ref=app_ref, app_argv=app_argv, technique=technique).run()


def start_asktell(space: Any, objective: Any, settings: RunSettings) -> Any:
    """An ask/tell run (the core's ``ensemble.tune.Tuner``)."""
    from ensemble.tune import Tuner

    fields = {k: v for k, v in vars(settings).items()}
    return Tuner(space, objective=objective, **fields)


def _setup_logging(quiet: bool) -> None:
    logger = logging.getLogger("ensemble")
    if not any(getattr(h, "_ensemble_compat", False) or getattr(h, "_ensemble_cli", False)
               for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("ensemble: %(levelname)s: %(message)s"))
        handler._ensemble_compat = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.ERROR if quiet else logging.WARNING)


def choose_technique(names: list[str] | None, manipulator: Any, objective: Any,
                     seed: int | None) -> tuple[str, Any]:
    """(registry name, technique object or None) for OpenTuner's ``--technique`` values."""
    from ensemble import registry
    from ensemble.compat.opentuner._flags import DEFAULT_TECHNIQUE, TECHNIQUE_NAMES
    from ensemble.compat.opentuner._technique_adapter import OpenTunerTechnique
    from ensemble.compat.opentuner.search.technique import registered

    if not names:
        # OpenTuner's own default (AUCBanditMetaTechniqueA) is what an OpenTuner app expects
        return DEFAULT_TECHNIQUE, None
    user = registered()
    ours = set(registry.technique_names())
    arms: list[Any] = []
    for name in names:
        if name in user:
            arms.append(OpenTunerTechnique(user[name], manipulator, objective, seed=seed))
        elif name in TECHNIQUE_NAMES:
            arms.append(TECHNIQUE_NAMES[name])
        elif name in ours or ":" in name:
            arms.append(name)
        else:
            known = sorted(set(user) | set(TECHNIQUE_NAMES) | ours)
            raise UnsupportedError(f"--technique {name!r}",
                                   f"choose one of {', '.join(known)}, or register(YourTechnique()) before main()")
    if len(arms) == 1:
        return (arms[0], None) if isinstance(arms[0], str) else (arms[0].name, arms[0])
    return "RoundRobin", registry.create_technique("RoundRobin", seed=seed, arms=arms)


def _listing(args: argparse.Namespace, interface_cls: type) -> bool:
    """OpenTuner's print-and-exit flags; True when one was handled."""
    if getattr(args, "list_techniques", False):
        from ensemble import registry
        from ensemble.compat.opentuner._flags import TECHNIQUE_NAMES
        from ensemble.compat.opentuner.search.technique import registered

        print("\n".join(sorted(set(registry.technique_names()) | set(TECHNIQUE_NAMES) | set(registered()))))
        return True
    return False


def _print_result(result: Any, manipulator: Any) -> Any:
    from ensemble.compat.opentuner.search.parameters import dumps_config

    view = None if result.best_config is None else manipulator.to_view(result.best_config)
    if view is None:
        print(f"run {result.run_name}: no successful evaluation ({result.evaluations} evaluations, "
              f"{result.failures} failed)")
    else:
        print(f"best configuration ({result.evaluations} evaluations, value {result.best_value:.6g}, "
              f"found by {result.best_technique}): {dumps_config(view)}")
    print(f"run {result.run_name!r} in {result.database}"
          + (f"; stopped: {result.stop_reason}" if result.stop_reason else ""))
    if result.report_dir:
        print(f"report written to {result.report_dir}/")
    return view


class _NoSession:
    """Stands for OpenTuner's database session in prefix_hook(); any use is refused."""

    def __getattr__(self, name: str) -> Any:
        raise UnsupportedError(
            f"OpenTuner's results-database session (session.{name}, e.g. in prefix_hook)",
            "read results with `ensemble-tuner best --database URL` or ensemble.storage.Storage(url).trials(run_id)",
        )


def _load_seed(manipulator: Any, path: str) -> Any:
    from ensemble.errors import ConfigurationError

    try:
        return manipulator.load_from_file(path)
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"--seed-configuration {path!r}: cannot read it ({exc}); give a JSON file "
                                 "written by ConfigurationManipulator.save_to_file") from exc


#: MeasurementInterface hooks our drivers have no moment for -> what to do instead
_UNCALLED_HOOKS = {
    "extra_convergence_criteria": "stop with --target VALUE, --test-limit N or --stop-after SEC",
    "pre_process": "there are no generations here; do per-measurement work in run() or compile()",
    "post_process": "there are no generations here; do per-measurement work in run() or compile()",
    "input_manager": "tune with the single fixed input (run() gets input=Input())",
}


def check_supported(interface: Any) -> None:
    """Refuse, before anything is measured, an interface that relies on a hook we never call."""
    from ensemble.compat.opentuner.measurement.interface import MeasurementInterface

    for hook, instead in _UNCALLED_HOOKS.items():
        if getattr(type(interface), hook) is not getattr(MeasurementInterface, hook):
            raise UnsupportedError(f"MeasurementInterface.{hook}() (overridden by {type(interface).__name__})",
                                   instead)
    if getattr(interface, "_input_manager", None) is not None:
        raise UnsupportedError("MeasurementInterface(input_manager=...)", _UNCALLED_HOOKS["input_manager"])


def _exit(status: int) -> int:
    for sink in _STATUS_SINKS:
        sink.append(status)
    return status


def run_interface(cls: type, args: argparse.Namespace, pargs: tuple[Any, ...], kwargs: dict[str, Any],
                  interface: Any = None) -> int:
    """Body of MeasurementInterface.main(): check everything, tune, save the final configuration.

    ``interface``: an instance already built (opentuner.tuningrunmain.main); else ``cls(args, ...)``.
    """
    from ensemble.app import app_reference
    from ensemble.compat.opentuner._adapter import make_app
    from ensemble.compat.opentuner._flags import settings_from_args, warn_ignored
    from ensemble.compat.opentuner.resultsdb.models import Configuration

    _setup_logging(bool(getattr(args, "quiet", False)))
    if _listing(args, cls):
        return _exit(0)
    try:
        warn_ignored(args)
        if interface is None:
            interface = cls(args, *pargs, **kwargs)
        check_supported(interface)
        manipulator = interface.manipulator()
        if getattr(args, "print_params", False):
            for p in manipulator.parameters():
                print(f"{p.name!r}: {p!r}")
            return _exit(0)
        if getattr(args, "print_search_space_size", False):
            print(f"search space size: {manipulator.search_space_size()}")
            return _exit(0)
        interface.prefix_hook(_NoSession())
        seeds = [_load_seed(manipulator, path) for path in getattr(args, "seed_configuration", None) or []]
        app = make_app(interface, seeds)
        settings = settings_from_args(args)
        name, technique = choose_technique(getattr(args, "technique", None), app.manipulator, app.ot_objective,
                                           settings.seed)
        if technique is None:
            settings.technique = name
        result = start_run(app, settings, app_ref=app_reference(cls), app_argv=list(sys.argv[1:]),
                           technique=technique)
    except EnsembleError as exc:
        # one line, no traceback; the process fails as OpenTuner's would (its main raises)
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(_exit(2)) from None
    except KeyboardInterrupt:
        print("interrupted; committed results are in the database (continue with --resume)", file=sys.stderr)
        raise SystemExit(_exit(130)) from None
    if getattr(result, "extra", {}).get("rank", 0) != 0:
        return _exit(0)
    view = _print_result(result, app.manipulator)
    if view is not None:
        interface.save_final_config(Configuration(view))
    return _exit(0)
