"""Search and measurement drivers and their local orchestration.

The search driver and the measurement drivers share nothing but the database
(DESIGN.md, "The data flow"); ``run_app`` wires them together in one process.
"""

from ensemble.driver.local import TuneResult, run_app, serve_worker
from ensemble.driver.measure import MeasurementDriver, worker_name
from ensemble.driver.outcome import coerce_result, failure_from_exception
from ensemble.driver.search import SearchDriver, SearchStatus

__all__ = [
    "MeasurementDriver",
    "SearchDriver",
    "SearchStatus",
    "TuneResult",
    "coerce_result",
    "failure_from_exception",
    "run_app",
    "serve_worker",
    "worker_name",
]
