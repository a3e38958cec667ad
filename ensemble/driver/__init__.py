"""Search and measurement drivers, the run session that sets them up, and the loops between them.

The search driver and the measurement drivers share nothing but the database
(DESIGN.md, "The data flow"); a :class:`RunSession` sets up every run, whatever
the entry point, and ``run_app`` runs one to the end.
"""

from ensemble.driver.channel import SameThreadChannel
from ensemble.driver.loops import serve_worker
from ensemble.driver.measure import MeasurementDriver, worker_name
from ensemble.driver.outcome import coerce_result, failure_from_exception
from ensemble.driver.search import SearchDriver, SearchOptions, SearchStatus
from ensemble.driver.session import (
    RunHandle,
    RunSession,
    TuneResult,
    make_technique,
    run_app,
)

__all__ = [
    "MeasurementDriver",
    "RunHandle",
    "RunSession",
    "SameThreadChannel",
    "SearchDriver",
    "SearchOptions",
    "SearchStatus",
    "TuneResult",
    "coerce_result",
    "failure_from_exception",
    "make_technique",
    "run_app",
    "serve_worker",
    "worker_name",
]
