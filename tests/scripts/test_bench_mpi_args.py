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


def test_loop_figures_separate_the_steady_loop_from_the_ends() -> None:
    """Two measurers, each back to back in 1 s trials for 20 s, in a run of 25 s: the steady rate is
    2 per second, the measurers are busy all the window, and 5 s of the run is outside the loop."""
    from scripts.bench_mpi import _loop_figures

    spans = [[float(k), float(k + 1)] for k in range(20)] * 2
    fig = _loop_figures({"spans": spans, "measurers": 2, "elapsed": 25.0})
    assert abs(fig["steady_rate"] - 2.0) < 0.15
    assert abs(fig["busy"] - 1.0) < 1e-9
    assert abs(fig["outside_s"] - 5.0) < 1e-9
    # one measurer idle half the time between its trials: half as busy, half the rate
    gaps = [[2.0 * k, 2.0 * k + 1] for k in range(20)]
    fig = _loop_figures({"spans": gaps, "measurers": 1, "elapsed": 40.0})
    assert abs(fig["busy"] - 0.5) < 0.05 and abs(fig["steady_rate"] - 0.5) < 0.05
    assert _loop_figures({"spans": [], "measurers": 1, "elapsed": 1.0})["busy"] != 0.0  # nan: too few to say


def test_worker_gaps_are_per_worker_from_a_finish_to_the_next_claim() -> None:
    from scripts.bench_mpi import _worker_gaps

    rows = [("a", 0.0, 1.0), ("b", 0.0, 2.0), ("a", 1.5, 2.5), ("b", 2.0, 3.0), ("a", 2.5, 3.0)]
    assert sorted(_worker_gaps(rows)) == [0.0, 0.0, 0.5]
