"""The command line: ``ensemble-tuner`` and the standard flags of every app.

Why argparse lives only here: the drivers take a RunSettings object, so the
same run can be started from Python; this module turns flags into settings,
prints errors the user can fix as one line, and dispatches the subcommands
(run an app, attach a worker, inspect a database).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ensemble.errors import EnsembleError
from ensemble.settings import DEFAULT_DATABASE, RunSettings, SettingsError

if TYPE_CHECKING:  # pragma: no cover
    from ensemble.storage.base import BaseStorage
    from ensemble.storage.records import RunRecord

__all__ = ["add_standard_arguments", "main", "run_app_main", "settings_from_args"]

_log = logging.getLogger("ensemble.cli")


def add_standard_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The standard flags (names follow OpenTuner where it has one)."""
    g = parser.add_argument_group("tuning (ensemble-tuner)")
    g.add_argument("--technique", "-t", default="default", help="search technique (default: the ensemble)")
    g.add_argument("--technique-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the technique, e.g. steps=3 or rest=stop (VALUE is read as JSON, "
                        "else taken as a string); repeatable")
    g.add_argument("--list-techniques", action="store_true", help="list technique names and exit")
    g.add_argument("--stop-after", type=float, metavar="SEC", help="stop after this many seconds")
    g.add_argument("--test-limit", type=int, metavar="N", help="stop after N unique evaluations")
    g.add_argument("--target", type=float, metavar="VALUE", help="stop when the objective reaches VALUE")
    g.add_argument("--database", metavar="URL", default=DEFAULT_DATABASE,
                   help=f"SQLAlchemy URL of the results database (default {DEFAULT_DATABASE})")
    g.add_argument("--run-name", metavar="NAME", help="name of the run (default: app name + time)")
    g.add_argument("--resume", action="store_true", help="continue the run (the latest one without --run-name)")
    g.add_argument("--parallelism", type=int, default=1, metavar="N", help="local measurement workers")
    g.add_argument("--worker-mode", choices=("thread", "process"), default="thread",
                   help="threads (subprocess/GPU objectives) or processes (CPU-bound Python objectives)")
    g.add_argument("--batch", type=int, default=1, metavar="N",
                   help="with one local worker, propose and claim N fast trials at a time (default 1)")
    g.add_argument("--trial-limit", type=float, metavar="SEC", help="seconds one trial may take")
    g.add_argument("--busy-timeout", type=float, default=30.0, metavar="SEC",
                   help="seconds a database write waits for a lock (default 30)")
    g.add_argument("--heartbeat-timeout", type=float, default=30.0, metavar="SEC",
                   help="seconds without heartbeat before a RUNNING trial is given to another worker")
    g.add_argument("--require", action="append", default=[], metavar="EXPR",
                   help="a constraint added to the app's space for this run, e.g. \"x >= 2\" or \"bx * by <= 256\" "
                        "(the app's seeds outside it are left out); repeatable")
    g.add_argument("--seed", type=int, metavar="N", help="random seed of the search")
    g.add_argument("--seed-configuration", action="append", default=[], metavar="FILE",
                   help="JSON file with a configuration (or a list) to measure first; repeatable")
    g.add_argument("--results-log", metavar="FILE", help="append one JSON line per finished trial")
    g.add_argument("--report", metavar="DIR", help="write best.json, trials.csv, convergence.png, techniques.csv")
    g.add_argument("--quiet", action="store_true", help="no progress line and no summary logs")
    return parser


def technique_options(pairs: list[str]) -> dict[str, Any]:
    """``--technique-option KEY=VALUE`` flags as keyword arguments of the technique.

    VALUE is parsed as JSON (``3``, ``0.05``, ``true``, ``null``, ``"text"``,
    ``[1, 2]``) and taken as a plain string when it is not JSON, so
    ``rest=stop`` and ``rest='"stop"'`` mean the same.  Unknown keys are
    refused by the technique itself, naming the options it has.
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise SettingsError(f"--technique-option {pair!r}: write KEY=VALUE with KEY an option name, "
                                "e.g. --technique-option steps=3")
        try:
            out[key] = json.loads(text)
        except ValueError:
            out[key] = text
    return out


def settings_from_args(ns: argparse.Namespace) -> RunSettings:
    """RunSettings from parsed standard flags (the only place a namespace is read)."""
    return RunSettings(
        technique=ns.technique, technique_options=technique_options(getattr(ns, "technique_option", None) or []),
        stop_after=ns.stop_after, test_limit=ns.test_limit, target=ns.target,
        database=ns.database, run_name=ns.run_name, resume=ns.resume, parallelism=ns.parallelism,
        seed=ns.seed, seed_configurations=list(ns.seed_configuration or []), results_log=ns.results_log,
        report_dir=ns.report, quiet=ns.quiet, trial_limit=getattr(ns, "trial_limit", None),
        worker_mode=getattr(ns, "worker_mode", "thread"),
        batch=getattr(ns, "batch", 1), busy_timeout=getattr(ns, "busy_timeout", 30.0), heartbeat_timeout=getattr(ns, "heartbeat_timeout", 30.0),
        require=list(getattr(ns, "require", None) or []),
    )


def _setup_logging(quiet: bool) -> None:
    """One handler on the library's logger (never the root logger)."""
    logger = logging.getLogger("ensemble")
    if not any(getattr(h, "_ensemble_cli", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("ensemble: %(levelname)s: %(message)s"))
        handler._ensemble_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.ERROR if quiet else logging.WARNING)


def list_techniques() -> list[str]:
    """One line per registered technique: its name, then its one-line summary.

    A technique whose module cannot be imported (a missing extra) is still
    listed, with the reason, so the list never fails as a whole.
    """
    from ensemble import registry

    names = sorted(registry.technique_names())
    width = max((len(n) for n in names), default=0)
    lines = []
    for name in names:
        try:
            summary = str(getattr(registry.load_technique(name), "summary", "") or "")
        except Exception as exc:  # noqa: BLE001 - listing must not fail on one bad entry
            summary = f"(unavailable: {exc})"
        lines.append(f"{name:<{width}}  {summary}".rstrip())
    return lines


def print_result(result: Any, out: Any = None) -> None:
    out = out or sys.stdout
    if result.best_config is None:
        print(f"run {result.run_name}: no successful evaluation "
              f"({result.evaluations} evaluations, {result.failures} failed)", file=out)
    else:
        print(f"best configuration ({result.evaluations} evaluations, value {result.best_value:.6g}, "
              f"found by {result.best_technique}): {json.dumps(result.best_config, sort_keys=True)}", file=out)
    print(f"run {result.run_name!r} in {result.database}"
          + (f"; stopped: {result.stop_reason}" if result.stop_reason else ""), file=out)
    if result.report_dir:
        print(f"report written to {result.report_dir}/ (best.json, trials.csv, convergence.png, "
              "techniques.csv)", file=out)


def run_app_main(app_class: type, argv: list[str], prog: str | None = None,
                 parents: Sequence[argparse.ArgumentParser] = ()) -> int:
    """Parse flags for ``app_class``, tune, print the best configuration."""
    from ensemble.driver.apps import app_reference, build_app
    from ensemble.driver.session import run_app

    parser = argparse.ArgumentParser(prog=prog or app_class.__name__, parents=list(parents),
                                     description=(app_class.__doc__ or "").strip().split("\n")[0] or None)
    add_standard_arguments(parser)
    add = getattr(app_class, "add_arguments", None)
    if add is not None:
        add(parser)
    ns = parser.parse_args(argv)
    return _run_parsed(app_class, ns, argv, lambda: build_app(app_class, argv), app_reference, run_app)


def _run_parsed(app_class: type, ns: argparse.Namespace, argv: list[str], make_app: Any,
                app_reference: Any, run_app: Any) -> int:
    with _library_logging():
        return _run_parsed_body(app_class, ns, argv, make_app, app_reference, run_app)


def _run_parsed_body(app_class: type, ns: argparse.Namespace, argv: list[str], make_app: Any,
                     app_reference: Any, run_app: Any) -> int:
    _setup_logging(ns.quiet)
    if ns.list_techniques:
        print("\n".join(list_techniques()))
        return 0
    try:
        settings = settings_from_args(ns)
        app = make_app()
        app.args = ns
        # the run session picks the loop: same thread, threads, processes, or MPI under mpirun
        result = run_app(app, settings, app_ref=app_reference(app_class), app_argv=argv)
        if result.extra.get("rank", 0) != 0:
            return 0
    except EnsembleError as exc:
        print_error(exc)
        return 2
    except KeyboardInterrupt:
        print("interrupted; committed results are in the database (continue with --resume)", file=sys.stderr)
        return 130
    print_result(result)
    if result.best_config is None:
        print_failures(result)
        return 1
    return 0


#: names in messages from the Python API -> the flags a command-line user types
_FLAG_NAMES = (("busy_timeout_s", "--busy-timeout"), ("busy_timeout", "--busy-timeout"),
               ("heartbeat_timeout", "--heartbeat-timeout"), ("run_name=", "--run-name "),
               ("trial_limit", "--trial-limit"), ("test_limit", "--test-limit"), ("stop_after", "--stop-after"),
               ("worker_mode=", "--worker-mode "), ("parallelism=", "--parallelism "),
               ("database=", "--database "))


def cli_message(exc: BaseException) -> str:
    """An error's text with Python argument names replaced by the flags the user typed."""
    text = str(exc)
    for name, flag in _FLAG_NAMES:
        text = text.replace(name, flag)
    return text


def print_error(exc: BaseException) -> None:
    """One line on stderr: ``error: <message naming the flag and the fix>``."""
    print(f"error: {cli_message(exc)}", file=sys.stderr)


def print_failures(result: Any, out: Any = None) -> None:
    """Why no trial succeeded: the most common failure reasons with their counts."""
    out = out or sys.stderr
    reasons = result.extra.get("failure_reasons") or []
    if not reasons:
        print("error: no trial finished successfully (none was measured: check --test-limit/--stop-after)",
              file=out)
        return
    print(f"error: no trial finished successfully; the most common failure reasons of {result.failures}:",
          file=out)
    for reason, n in reasons:
        print(f"  {n:5d} x {reason}", file=out)


# -- subcommands ----------------------------------------------------------------
def _cmd_run(ns: argparse.Namespace, rest: list[str]) -> int:
    from ensemble.driver.apps import load_app_class

    app_class = load_app_class(ns.app)
    main = getattr(app_class, "main", None)
    if main is not None and getattr(app_class, "_ensemble_opentuner", False):
        return int(main(rest) or 0)
    return run_app_main(app_class, rest, prog=f"ensemble-tuner run {ns.app}")


def _open(ns: argparse.Namespace, *, create: bool = False) -> BaseStorage:
    """The store at ``--database``; inspection commands (create=False) never create one."""
    from ensemble.driver.preflight import database_url, existing_database
    from ensemble.storage import open_storage

    url = database_url(ns.database) if create else existing_database(ns.database,
                                                                      what=f"ensemble-tuner {ns.command}")
    return open_storage(url)


def _find_run(storage: BaseStorage, name: str | None) -> RunRecord:
    runs = storage.list_runs()
    if name is None:
        if not runs:
            raise EnsembleError("the database has no runs; start one first (ensemble-tuner run APP ...)")
        return max(runs, key=lambda r: (r.created_at, r.id))
    record = storage.get_run(name)
    if record is None:
        names = ", ".join(repr(r.name) for r in sorted(runs, key=lambda r: (r.created_at, r.id))[-10:])
        raise EnsembleError(f"--run-name {name!r}: no such run in this database; runs there: {names or 'none'} "
                            "(all of them: ensemble-tuner runs --database URL)")
    return record


def _cmd_worker(ns: argparse.Namespace, rest: list[str]) -> int:
    import time

    from ensemble.driver.loops import serve_worker

    storage = _open(ns, create=True)
    if not storage.shareable_across_processes:
        raise EnsembleError(
            f"--database {ns.database}: an in-memory store lives in the process that made it, so a worker "
            "cannot attach to it; run the tuner on a SQLite file (sqlite:///tuning.db) or PostgreSQL"
        )
    deadline = time.monotonic() + ns.wait
    while True:
        try:
            record = _find_run(storage, ns.run)
            break
        except EnsembleError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)
    settings = json.loads(record.settings_json or "{}")
    n = serve_worker(ns.database, int(record.id), record.app, list(settings.get("app_argv") or []),
                     ns.name or "worker", ns.heartbeat)
    if not ns.quiet:
        print(f"worker measured {n} trial(s) of run {record.name!r}")
    return 0


def _cmd_best(ns: argparse.Namespace, rest: list[str]) -> int:
    from ensemble.report import best_summary

    storage = _open(ns)
    record = _find_run(storage, ns.run)
    best = best_summary(storage, int(record.id))
    print(json.dumps({"run": record.name, **(best or {"config": None})}, sort_keys=True, indent=2,
                     default=lambda x: None if isinstance(x, float) and not math.isfinite(x) else str(x)))
    return 0


def _cmd_report(ns: argparse.Namespace, rest: list[str]) -> int:
    from ensemble.report import write_report

    storage = _open(ns)
    record = _find_run(storage, ns.run)
    paths = write_report(storage, int(record.id), ns.out)
    print("\n".join(paths))
    return 0


def _cmd_runs(ns: argparse.Namespace, rest: list[str]) -> int:
    storage = _open(ns)
    print(f"{'name':40s} {'app':40s} {'status':12s} {'requests':>8s} {'unique':>7s}  created")
    for r in sorted(storage.list_runs(), key=lambda r: (r.created_at, r.id)):
        c = storage.counts(int(r.id))
        total = sum(v for k, v in c.items() if k.isupper())
        print(f"{r.name:40s} {r.app[-40:]:40s} {r.status:12s} {total:8d} {c.get('unique', 0):7d}  {r.created_at:%Y-%m-%d %H:%M:%S}")
    return 0


def _cmd_db(ns: argparse.Namespace, rest: list[str]) -> int:
    from ensemble import storage as storage_pkg

    upgrade = getattr(storage_pkg, "upgrade", None)
    if upgrade is None:
        raise EnsembleError("this version has no schema migrations to run")
    from ensemble.driver.preflight import existing_database

    upgrade(existing_database(ns.database, what="ensemble-tuner db upgrade"))
    print(f"{ns.database}: schema is up to date")
    return 0


def _database_flags(parser: argparse.ArgumentParser, *, run_name: bool = True) -> None:
    """``--database`` and ``--run-name`` as ``run`` spells them (``--run`` stays an alias)."""
    parser.add_argument("--database", metavar="URL", default=DEFAULT_DATABASE,
                        help=f"SQLAlchemy URL of the results database (default {DEFAULT_DATABASE})")
    if run_name:
        parser.add_argument("--run-name", "--run", dest="run", metavar="NAME",
                            help="name of the run (default: the latest run)")


def _run_help(args: list[str]) -> int:
    """``ensemble-tuner run`` with no app, or ``run --help``: the run flags (an app adds its own)."""
    p = argparse.ArgumentParser(prog="ensemble-tuner run", description=(
        "Tune an app. APP is module:Class, path/to/app.py[:Class] or a registered app name; "
        "`ensemble-tuner run APP --help` adds the app's own flags."))
    p.add_argument("app", metavar="APP")
    add_standard_arguments(p)
    if len(args) >= 2 and args[1] in ("-h", "--help"):
        p.print_help()
        return 0
    p.print_usage(sys.stderr)
    print("ensemble-tuner run: error: give the app to tune first: ensemble-tuner run APP [flags]", file=sys.stderr)
    return 2


def _parser() -> argparse.ArgumentParser:
    from ensemble import __version__

    p = argparse.ArgumentParser(prog="ensemble-tuner", description="Ensemble autotuner over a shared results database.")
    p.add_argument("--version", action="version", version=f"ensemble-tuner {__version__}")
    p.add_argument("--list-techniques", action="store_true", help="list technique names and exit")
    sub = p.add_subparsers(dest="command")
    r = sub.add_parser("run", help="tune an app: ensemble-tuner run module:Class|file.py [flags]", add_help=False)
    r.add_argument("app", help="module:Class, path/to/app.py[:Class] or a registered app name")
    w = sub.add_parser("worker", help="attach a measurement worker to a run")
    _database_flags(w)
    w.add_argument("--name", help="worker tag shown in the requests table")
    w.add_argument("--heartbeat", type=float, default=5.0, metavar="SEC", help="heartbeat interval")
    w.add_argument("--wait", type=float, default=0.0, metavar="SEC",
                   help="wait up to SEC seconds for the run to be created")
    w.add_argument("--quiet", action="store_true")
    for cmd, helptext in (("best", "print the best configuration of a run"),
                          ("report", "write the report files of a run"),
                          ("runs", "list the runs in a database")):
        c = sub.add_parser(cmd, help=helptext)
        _database_flags(c, run_name=cmd != "runs")
        if cmd == "report":
            c.add_argument("--out", default="report", metavar="DIR", help="output directory (default ./report)")
    d = sub.add_parser("db", help="database maintenance")
    d.add_argument("action", choices=("upgrade",))
    _database_flags(d, run_name=False)
    from ensemble.registry import COMMAND_REGISTRY

    for name in COMMAND_REGISTRY.names():   # plug-in commands: listed here, parsed by themselves
        if name not in _COMMANDS:
            sub.add_parser(name, help=f"see: ensemble-tuner {name} --help", add_help=False)
    return p


_COMMANDS = {"run": _cmd_run, "worker": _cmd_worker, "best": _cmd_best, "report": _cmd_report,
             "runs": _cmd_runs, "db": _cmd_db}


def _plugin_command(name: str) -> Any:
    """The ``ensemble.commands`` entry point ``name`` as a callable ``(argv) -> int``, or None."""
    from ensemble.registry import COMMAND_REGISTRY

    if name in _COMMANDS or name not in COMMAND_REGISTRY:
        return None
    obj = COMMAND_REGISTRY.load(name)
    run = getattr(obj, "main", obj)
    if not callable(run):
        raise EnsembleError(f"command {name!r}: its entry point is neither callable nor has main(argv)")
    return run


@contextlib.contextmanager
def _library_logging() -> Iterator[None]:
    """Give the ``ensemble`` logger its level back afterwards (main(exit=False) from Python, tests)."""
    logger = logging.getLogger("ensemble")
    level = logger.level
    try:
        yield
    finally:
        logger.setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    """Console script entry point ``ensemble-tuner``."""
    with _library_logging():
        return _main(list(sys.argv[1:] if argv is None else argv))


def _main(args: list[str]) -> int:
    if args and not args[0].startswith("-"):
        try:
            plugin = _plugin_command(args[0])
        except EnsembleError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if plugin is not None:
            _setup_logging("--quiet" in args)
            try:
                return int(plugin(args[1:]) or 0)
            except EnsembleError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
    parser = _parser()
    if args and args[0] == "run":
        if len(args) < 2 or args[1].startswith("-"):
            return _run_help(args)
        ns, rest = argparse.Namespace(command="run", app=args[1], list_techniques=False), args[2:]
    else:
        ns, rest = parser.parse_args(args), []
    _setup_logging(getattr(ns, "quiet", False))
    if ns.list_techniques:
        print("\n".join(list_techniques()))
        return 0
    if not ns.command:
        parser.print_help()
        return 2
    try:
        return _COMMANDS[ns.command](ns, rest)
    except EnsembleError as exc:
        print_error(exc)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
