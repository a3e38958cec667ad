"""The progress line: drawn on a TTY only, with trials, unique, failures, best, technique, rate."""

from __future__ import annotations

import io

from ensemble.driver.search import SearchStatus
from ensemble.progress import Progress, format_status


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _status() -> SearchStatus:
    return SearchStatus(trials=12, unique=10, failures=1, duplicates=2, best_value=0.25, last_technique="NelderMead")


def test_progress_line_on_a_tty():
    out = _Tty()
    p = Progress(stream=out, interval=0.0)
    p.update(_status())
    p.close(_status())
    text = out.getvalue()
    assert text.startswith("\r") and text.endswith("\n")
    for part in ("trials 12", "unique 10", "failures 1", "best 0.25", "technique NelderMead", "/s"):
        assert part in text


def test_progress_is_silent_when_not_a_tty_or_quiet():
    out = io.StringIO()
    p = Progress(stream=out, interval=0.0)
    p.update(_status())
    p.close(_status())
    q = _Tty()
    Progress(stream=q, enabled=False).update(_status())
    assert out.getvalue() == "" and q.getvalue() == ""


def test_format_status_before_any_result():
    assert "best -" in format_status(SearchStatus(), 0.0)
