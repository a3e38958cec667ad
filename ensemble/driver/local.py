"""Compatibility names for code written before the run session (import from ``ensemble.driver`` instead).

Everything that sets up a run now lives in :mod:`ensemble.driver.session`;
the loops that move work between the drivers in :mod:`ensemble.driver.loops`.
"""

from ensemble.driver.apps import build_app
from ensemble.driver.loops import serve_worker
from ensemble.driver.session import TuneResult, make_technique, run_app

__all__ = ["TuneResult", "build_app", "make_technique", "run_app", "serve_worker"]
