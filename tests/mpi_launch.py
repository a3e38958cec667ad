"""Shared by the tests that start ``mpirun``: where it is, the repository root, and the skip rule."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

#: the mpich wheel puts mpirun next to the venv's python
MPIRUN = Path(sys.executable).parent / "mpirun"
ROOT = Path(__file__).resolve().parents[1]


def need_mpi(*modules: str) -> None:
    """Skip unless mpi4py, ``modules`` and mpirun are all there (the skip names the extra)."""
    for name in ("mpi4py", *modules):
        pytest.importorskip(name)
    if not MPIRUN.exists():
        pytest.skip(f"no mpirun next to {sys.executable}; pip install 'ensemble-tuner[mpi]'")
