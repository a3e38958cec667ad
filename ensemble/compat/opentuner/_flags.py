"""OpenTuner's command-line flags, and what each becomes in our RunSettings.

Why OpenTuner's own flag names and defaults: apps build their parser with
``argparse.ArgumentParser(parents=opentuner.argparsers())`` and users keep
their scripts and habits (``--test-limit``, ``--technique``, ``--database``).
Flags that mean nothing here are accepted and warned about when set (never
fatal); a few of our flags that OpenTuner lacks are added in their own
group (``--seed``, ``--resume``, ``--report``, ``--trial-limit``, ``--target``).
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from ensemble.settings import DEFAULT_DATABASE, RunSettings

__all__ = ["DEFAULT_TECHNIQUE", "IGNORED_FLAGS", "TECHNIQUE_NAMES", "argparsers", "database_url",
           "settings_from_args"]

_log = logging.getLogger("ensemble.compat.opentuner")

#: what an app without ``--technique`` is tuned with: OpenTuner's default, AUCBanditMetaTechniqueA,
#: built from our techniques (techniques/opentuner_bandits.py; why: docs/OPENTUNER.md)
DEFAULT_TECHNIQUE = "OpenTunerA"

#: OpenTuner technique names -> ours (the same ensemble, or the nearest technique of the same family)
TECHNIQUE_NAMES = {
    "AUCBanditMetaTechniqueA": "OpenTunerA",
    "AUCBanditMetaTechniqueB": "OpenTunerB",
    "AUCBanditMetaTechniqueC": "OpenTunerC",
    "AUCBanditMutationTechnique": "default",
    "PureRandom": "Random",
    "DifferentialEvolution": "DifferentialEvolution",
    "DifferentialEvolutionAlt": "DifferentialEvolution",
    "DifferentialEvolution_20_100": "DifferentialEvolution",
    "UniformGreedyMutation": "GreedyMutation",
    "UniformGreedyMutation05": "GreedyMutation",
    "UniformGreedyMutation10": "GreedyMutation",
    "UniformGreedyMutation20": "GreedyMutation",
    "NormalGreedyMutation": "NormalGreedyMutation",
    "NormalGreedyMutation05": "NormalGreedyMutation",
    "NormalGreedyMutation10": "NormalGreedyMutation",
    "NormalGreedyMutation20": "NormalGreedyMutation",
    "RandomNelderMead": "NelderMead",
    "RegularNelderMead": "NelderMead",
    "RightNelderMead": "NelderMead",
    "MultiNelderMead": "NelderMead",
    "RandomTorczon": "Torczon",
    "RegularTorczon": "Torczon",
    "RightTorczon": "Torczon",
    "MultiTorczon": "Torczon",
    "PatternSearch": "PatternSearch",
    "PSO": "PSO",
    "PSO_GA_Bandit": "PSO",
    "PseudoAnnealingSearch": "SimulatedAnnealing",
    "GA": "GA",
    "GGA": "GA",
    "ga-base": "GA",
    "GlobalGA": "GA",
}

#: OpenTuner flags accepted but without effect here: dest -> why
IGNORED_FLAGS = {
    "pipelining": "results are used as soon as they are committed",
    "bail_threshold": "our drivers stop on --test-limit / --stop-after / exhaustion",
    "machine_class": "measurements are not grouped by machine class",
    "results_log_details": "--results-log already holds every trial (one JSON line each)",
    "display_frequency": "the progress line updates itself",
    "generate_bandit_technique": "the default technique is OpenTuner's AUCBanditMetaTechniqueA (OpenTunerA)",
}


class _GivenParallelism(argparse.Action):
    """Keeps OpenTuner's default (4, which apps may read) but remembers whether the user gave it."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.parallelism_given = True


def argparsers() -> list[argparse.ArgumentParser]:
    """Parents for the app's parser: OpenTuner's flags (same names and defaults) plus ours."""
    measurement = argparse.ArgumentParser(add_help=False)
    measurement.add_argument("--parallel-compile", action="store_true", default=False,
                             help="compile() in parallel workers, run_precompiled() one at a time")
    measurement.add_argument("--machine-class", help="(no effect here)")
    search = argparse.ArgumentParser(add_help=False)
    search.add_argument("--test-limit", type=int, help="stop after this many unique configurations")
    search.add_argument("--stop-after", type=float, help="stop after this many seconds")
    search.add_argument("--parallelism", type=int, default=4, action=_GivenParallelism,
                        help="measure N configurations at the same time, really in parallel (when not "
                             "given: one at a time, as OpenTuner measures)")
    search.add_argument("--pipelining", type=int, default=0, help="(no effect here)")
    search.add_argument("--bail-threshold", type=int, default=500, help="(no effect here)")
    search.add_argument("--no-dups", action="store_true", help="(duplicates are never re-measured here)")
    search.add_argument("--seed-configuration", action="append", default=[], metavar="FILENAME",
                        help="start from this configuration (ConfigurationManipulator.load_from_file format)")
    plugin = argparse.ArgumentParser(add_help=False)
    plugin.add_argument("--results-log", help="append one JSON line per finished trial to this file")
    plugin.add_argument("--results-log-details", help="(no effect here)")
    plugin.add_argument("--quiet", action="store_true", help="print less")
    plugin.add_argument("--display-frequency", default=10, type=int, help="(no effect here)")
    technique = argparse.ArgumentParser(add_help=False)
    technique.add_argument("--technique", "-t", action="append", help="technique to use (repeat: round-robin)")
    technique.add_argument("--list-techniques", "-lt", action="store_true", help="list techniques and exit")
    technique.add_argument("--generate-bandit-technique", "-gbt", action="store_true", help="(no effect here)")
    main = argparse.ArgumentParser(add_help=False)
    main.add_argument("--label", help="name of the run in the database")
    main.add_argument("--print-search-space-size", action="store_true",
                      help="print the size of the search space and exit")
    main.add_argument("--database", help=f"SQLAlchemy URL or SQLite file (default {DEFAULT_DATABASE})")
    main.add_argument("--print-params", "-pp", action="store_true", help="print the parameters and exit")
    ours = argparse.ArgumentParser(add_help=False)
    g = ours.add_argument_group("ensemble-tuner (beyond OpenTuner)")
    g.add_argument("--seed", type=int, metavar="N", help="random seed of the search")
    g.add_argument("--run-name", dest="label", metavar="NAME", help="same as --label")
    g.add_argument("--resume", action="store_true", help="continue the run named by --label")
    g.add_argument("--report", metavar="DIR", help="write best.json, trials.csv, convergence.png")
    g.add_argument("--trial-limit", type=float, metavar="SEC", help="seconds one measurement may take")
    g.add_argument("--target", type=float, metavar="VALUE", help="stop when the objective reaches VALUE")
    return [measurement, search, plugin, technique, main, ours]


def database_url(value: str | None) -> str:
    """OpenTuner takes a URL or a plain SQLite path; we store URLs."""
    if not value:
        return DEFAULT_DATABASE
    return value if "://" in value else f"sqlite:///{value}"


def warn_ignored(args: argparse.Namespace) -> list[str]:
    """Warn (once per flag) about OpenTuner flags set to something that has no effect here."""
    defaults = {"pipelining": 0, "bail_threshold": 500, "display_frequency": 10}
    warned = []
    for dest, why in IGNORED_FLAGS.items():
        value = getattr(args, dest, None)
        if value not in (None, False, defaults.get(dest)):
            flag = "--" + dest.replace("_", "-")
            _log.warning("OpenTuner flag %s=%r has no effect here: %s", flag, value, why)
            warned.append(flag)
    return warned


def settings_from_args(args: argparse.Namespace, technique: str = "default",
                       technique_options: dict[str, Any] | None = None) -> RunSettings:
    """RunSettings from an OpenTuner namespace (missing flags take OpenTuner's defaults)."""
    get = lambda name, default=None: getattr(args, name, default)
    return RunSettings(
        technique=technique, technique_options=dict(technique_options or {}),
        stop_after=get("stop_after"), test_limit=get("test_limit"), target=get("target"),
        database=database_url(get("database")), run_name=get("label"), resume=bool(get("resume", False)),
        parallelism=int(get("parallelism") or 1) if get("parallelism_given", False) else 1, seed=get("seed"), results_log=get("results_log"),
        report_dir=get("report"), quiet=bool(get("quiet", False)), trial_limit=get("trial_limit"),
    )
