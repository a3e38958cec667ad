"""Fixtures shared by the app tests."""

from __future__ import annotations

import pytest

from tests.apps.stencil_cases import ParallelCases


@pytest.fixture(scope="module")
def parallel_cases(request: pytest.FixtureRequest) -> ParallelCases:
    """One ``ParallelCases`` per test module: the cases of its parametrized tests run side by side, once."""
    return ParallelCases(request)
