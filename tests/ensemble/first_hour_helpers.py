"""Apps for the issue-16 tests (importable, so worker processes can rebuild them)."""

from __future__ import annotations

import sys
import time
from typing import Any

from ensemble import Result
from tests.ensemble.driver_helpers import QuadApp


class HangingApp(QuadApp):
    """x == 0 hangs in Python (ignores its limit); everything else is the quadratic."""

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        if config["x"] == 0:
            time.sleep(1000)
        return super().run(config, limit)


class FailingApp(QuadApp):
    """Every trial fails: two reasons, one more common than the other."""

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        self.calls += 1
        if config["x"] % 3 == 0:
            return Result(state="FAILED", reason="exit status 3")
        raise RuntimeError("no device found")


class NegativeTimeApp(QuadApp):
    """Returns -1 (a failed parse, say) for x == 0: must not become the best."""

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        if config["x"] == 0:
            return -1.0
        return super().run(config, limit)


class ExitingApp(QuadApp):
    """Calls sys.exit() in run() for x == 0 (a script pasted into run())."""

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        if config["x"] == 0:
            sys.exit(3)
        return super().run(config, limit)


class NeedsToolApp(QuadApp):
    """check_environment() refuses: its tool is missing."""

    def check_environment(self) -> None:
        from ensemble.errors import MissingExtraError

        raise MissingExtraError("--backend fake needs faketool; install it with pip install faketool")
