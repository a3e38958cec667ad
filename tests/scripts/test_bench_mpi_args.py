"""bench_mpi finds the mpirun it is given by name, as a shell would (the GPU machine passes ``--mpirun mpirun``)."""
from __future__ import annotations

import os
from pathlib import Path

from scripts.bench_mpi import resolve_mpirun


def _fake_mpirun(folder: Path) -> Path:
    exe = folder / "mpirun"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return exe


def test_a_bare_name_is_looked_up_on_path(tmp_path: Path, monkeypatch) -> None:
    exe = _fake_mpirun(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.chdir(tmp_path.parent)  # "mpirun" is not a path from here
    assert resolve_mpirun("mpirun") == str(exe)


def test_a_path_is_kept_and_a_missing_name_gives_none(tmp_path: Path, monkeypatch) -> None:
    exe = _fake_mpirun(tmp_path)
    assert resolve_mpirun(str(exe)) == str(exe)
    monkeypatch.chdir(tmp_path)  # a relative path is made absolute: the ranks start elsewhere
    assert resolve_mpirun("./mpirun") == str(exe.resolve())
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert resolve_mpirun("no-such-mpirun-here") is None
