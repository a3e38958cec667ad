"""``ensemble-tuner opentuner APP.py [OpenTuner flags]``: run an unmodified OpenTuner app.

Why run the script itself: an OpenTuner app is a script that builds its own
parser and calls ``Tuner.main(args)`` under ``if __name__ == '__main__'``;
running it as ``__main__`` (with ``sys.argv`` set to the app's flags) inside
``_hook.opentuner_imports()`` is exactly "no change at all". The exit status
is the one ``MeasurementInterface.main`` reported (2 after an error it
printed), or the script's own ``sys.exit``.
"""

from __future__ import annotations

import os
import runpy
import sys

from ensemble.compat.opentuner import _run
from ensemble.compat.opentuner._hook import opentuner_imports
from ensemble.errors import EnsembleError

__all__ = ["main"]

_USAGE = """usage: ensemble-tuner opentuner APP.py [flags of the app and of OpenTuner]

Runs an unmodified OpenTuner app on ensemble-tuner: `import opentuner` and its
submodules resolve to ensemble.compat.opentuner for this run only. Results go to
--database (default sqlite:///ensemble.db); see docs/OPENTUNER.md."""


def main(argv: list[str]) -> int:
    """Run the app script ``argv[0]`` with ``argv[1:]`` as its command line."""
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE)
        return 0 if argv else 2
    path, rest = os.path.abspath(argv[0]), list(argv[1:])
    if not os.path.isfile(path):
        print(f"error: ensemble-tuner opentuner {argv[0]!r}: no such file; give the path of the app's .py script",
              file=sys.stderr)
        return 2
    statuses: list[int] = []
    _run._STATUS_SINKS.append(statuses)
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *rest]
    sys.path.insert(0, os.path.dirname(path))
    try:
        with opentuner_imports():
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if isinstance(code, int) and code != 0:
            return code
        if code not in (None, 0):  # sys.exit("message"): printed, status 1, as Python does
            print(code, file=sys.stderr)
            return 1
    except EnsembleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        _run._STATUS_SINKS.remove(statuses)
    return next((s for s in statuses if s), 0)


main.summary = "run an unmodified OpenTuner app: ensemble-tuner opentuner APP.py [flags]"  # type: ignore[attr-defined]
