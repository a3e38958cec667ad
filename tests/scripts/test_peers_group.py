"""A peer script that times out is killed with every process it started."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripts._peers import _run_group


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    status = Path(f"/proc/{pid}/status")
    try:
        state = next(ln for ln in status.read_text().splitlines() if ln.startswith("State:"))
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "Z" not in state.split()[1]


def test_a_timeout_kills_the_peer_and_its_workers(tmp_path: Path) -> None:
    if not Path("/proc").is_dir():
        pytest.skip("needs /proc")
    pidfile = tmp_path / "worker.pid"
    script = ("import subprocess, sys, time\n"
              "w = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              f"open({str(pidfile)!r}, 'w').write(str(w.pid))\n"
              "time.sleep(60)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        _run_group([sys.executable, "-c", script], None, timeout=3.0)
    worker = int(pidfile.read_text())
    deadline = time.monotonic() + 5.0
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker)


def test_output_and_exit_status_come_back() -> None:
    out, _err, rc = _run_group([sys.executable, "-c", "import sys; print(sys.stdin.read()); sys.exit(3)"], "hi", 30.0)
    assert (out.strip(), rc) == ("hi", 3)


def test_a_peer_named_by_environment_runs_with_its_own_pythonpath_only(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """KERNELTUNER_PYTHON / _PYTHONPATH (the offline GPU machine's way): no venv, and our PYTHONPATH stays out."""
    import json

    from scripts import _peers

    script = tmp_path / "peer.py"
    script.write_text("import json, os, sys\njson.dump({'path': os.environ.get('PYTHONPATH'), 'exe': sys.executable}, "
                      "sys.stdout)\n")
    monkeypatch.setenv("PYTHONPATH", "/ours/sqlalchemy2")
    monkeypatch.setenv("KERNELTUNER_PYTHON", sys.executable)
    monkeypatch.setenv("KERNELTUNER_PYTHONPATH", str(tmp_path / "site_kt"))
    monkeypatch.setattr(_peers, "peer_python", lambda *a, **k: pytest.fail("no venv may be made or checked"))
    out = _peers.run_peer("kerneltuner", script)
    assert out["path"] == str(tmp_path / "site_kt")
    assert _peers.peer_interpreter("kerneltuner") == (sys.executable, str(tmp_path / "site_kt"))
    monkeypatch.delenv("KERNELTUNER_PYTHONPATH")
    assert json.loads(json.dumps(_peers.run_peer("kerneltuner", script)))["path"] == "/ours/sqlalchemy2"


def test_an_unknown_peer_name_is_refused_naming_the_known_ones() -> None:
    from scripts._peers import peer_interpreter

    with pytest.raises(ValueError, match="kerneltuner"):
        peer_interpreter("optuna")


def test_a_peer_interpreter_that_cannot_start_names_the_variable_and_the_fix(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from scripts import _peers

    monkeypatch.setenv("OPENTUNER_PYTHON", str(tmp_path / "no-such-python"))
    with pytest.raises(RuntimeError, match=r"cannot start .*OPENTUNER_PYTHON=.*unset OPENTUNER_PYTHON"):
        _peers.run_peer("opentuner", tmp_path / "peer.py")
    script = tmp_path / "peer.py"
    script.write_text("import kernel_tuner_missing_here\n")
    monkeypatch.setenv("KERNELTUNER_PYTHON", sys.executable)
    with pytest.raises(RuntimeError, match=r"(?s)KERNELTUNER_PYTHON=.*ModuleNotFoundError"):
        _peers.run_peer("kerneltuner", script)
