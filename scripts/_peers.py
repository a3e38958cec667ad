"""Peer tuners (OpenTuner, Kernel Tuner) in their own virtual environments.

Why: side-by-side benchmarks must run the peers' real code, but OpenTuner 0.8.8
needs an SQLAlchemy older than the 2.x our core uses, and Kernel Tuner pins its
own numpy/scipy range. Each peer therefore lives in a venv under ``.bench/``
(git-ignored) and is driven as a subprocess; results come back as JSON on
stdout. The techniques and core-drivers benchmarks reuse this helper::

    from scripts._peers import peer_python, run_peer
    py = peer_python("opentuner")            # creates .bench/opentuner-venv on first use
    out = run_peer("opentuner", "scripts/_peer_opentuner.py", ["--space", f])

Create both venvs ahead of a benchmark with ``python -m scripts._peers``.

Where no venv can be made (the offline GPU machine), ``OPENTUNER_PYTHON`` /
``KERNELTUNER_PYTHON`` name another interpreter for :func:`run_peer`, with
``OPENTUNER_PYTHONPATH`` / ``KERNELTUNER_PYTHONPATH`` as the peer's whole
``PYTHONPATH`` (scripts/gpu_env.sh sets both from wheels carried in .whl/).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["BENCH_DIR", "PEERS", "peer_available", "peer_interpreter", "peer_python", "run_peer"]

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / ".bench"

#: peer name -> (venv folder, pip requirements). Versions are the ones the
#: benchmarks cite; OpenTuner 0.8.8 uses the pre-1.4 SQLAlchemy query API.
PEERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "opentuner": ("opentuner-venv", ("opentuner==0.8.8", "SQLAlchemy<1.4", "numpy")),
    "kerneltuner": ("kt-venv", ("kernel_tuner==1.5.0",)),
}


def _venv_python(folder: Path) -> Path:
    return folder / "bin" / "python"


def peer_available(name: str) -> bool:
    """True when the peer's venv exists and was completed (marker file)."""
    folder, _ = _lookup(name)
    return (folder / ".complete").exists()


def _lookup(name: str) -> tuple[Path, tuple[str, ...]]:
    if name not in PEERS:
        raise ValueError(f"peer name {name!r} is unknown; choose one of {sorted(PEERS)}")
    folder, reqs = PEERS[name]
    return BENCH_DIR / folder, reqs


def peer_python(name: str, *, create: bool = True) -> Path:
    """Path to the peer venv's interpreter, creating and filling the venv if needed.

    Raises RuntimeError (with pip's output) when the install fails, so callers
    can report the peer as missing instead of crashing the whole benchmark.
    """
    folder, reqs = _lookup(name)
    py = _venv_python(folder)
    if (folder / ".complete").exists():
        return py
    if not create:
        raise RuntimeError(f"peer venv {folder} is missing; run `python -m scripts._peers {name}`")
    folder.parent.mkdir(parents=True, exist_ok=True)
    if not py.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(folder)
    proc = subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", *reqs],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"installing {reqs} into {folder} failed:\n{proc.stdout}\n{proc.stderr}")
    (folder / ".complete").write_text("\n".join(reqs) + "\n")
    return py


def peer_interpreter(name: str, *, create: bool = True) -> tuple[str, str | None]:
    """(python, PYTHONPATH or None) for the peer: ``<NAME>_PYTHON`` if set, else its venv.

    ``<NAME>`` is the peer's name in capitals (``OPENTUNER``, ``KERNELTUNER``).
    With ``<NAME>_PYTHON`` set, ``<NAME>_PYTHONPATH`` (when set) replaces the
    caller's ``PYTHONPATH`` in the peer's process, so that our own packages
    (SQLAlchemy 2) never meet the peer's; no venv is created or checked.
    Otherwise :func:`peer_python` (``create`` passed on).
    """
    _lookup(name)
    key = name.upper()
    py = os.environ.get(f"{key}_PYTHON")
    if py:
        return py, os.environ.get(f"{key}_PYTHONPATH") or None
    return str(peer_python(name, create=create)), None


def run_peer(name: str, script: str | Path, args: Sequence[str] = (), *,
             timeout: float | None = None, input_json: Any = None) -> Any:
    """Run ``script`` with the peer's interpreter (:func:`peer_interpreter`); parse its stdout as JSON.

    The script is given by path (it must not import our packages: they need
    SQLAlchemy 2). ``input_json`` is sent on stdin. Raises RuntimeError with
    the peer's stderr when it exits non-zero.
    """
    py, pythonpath = peer_interpreter(name)
    env = None if pythonpath is None else {**os.environ, "PYTHONPATH": pythonpath}
    key = name.upper()
    # where the interpreter came from, and how to change it, for the messages below
    origin = (f"{key}_PYTHON={py!r}, {key}_PYTHONPATH={pythonpath!r}; point them at a Python with the peer "
              f"installed (scripts/gpu_env.sh does on the GPU machine), or unset {key}_PYTHON to use "
              f"{_lookup(name)[0]} (python -m scripts._peers {name})") if os.environ.get(f"{key}_PYTHON") else (
              f"the venv {_lookup(name)[0]}; recreate it with `rm -r` and python -m scripts._peers {name}")
    try:
        stdout, stderr, rc = _run_group([py, str(script), *args],
                                        None if input_json is None else json.dumps(input_json), timeout, env)
    except OSError as exc:
        raise RuntimeError(f"peer {name}: cannot start {py!r} ({exc}); from {origin}") from exc
    if rc != 0:
        raise RuntimeError(f"peer {name} script {script} failed (rc {rc}; interpreter from {origin}):\n"
                           f"{stderr[-4000:]}")
    return json.loads(stdout)


def _run_group(argv: list[str], stdin: str | None, timeout: float | None,
               env: dict[str, str] | None = None) -> tuple[str, str, int]:
    """Run ``argv`` in its own process group; on a timeout kill the whole group, then re-raise.

    Why a group: a peer script with ``--peer-jobs 2`` starts worker processes;
    ``subprocess.run`` killed only the script on a timeout, and its workers
    went on using the CPUs for the rest of the benchmark (seen 2026-11-26:
    an OpenTuner worker still running 14 minutes after its 1800 s limit).
    """
    import signal

    with subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else None, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=str(ROOT), start_new_session=True,
                          env=env) as proc:
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return out, err, proc.returncode


def main(argv: Sequence[str] | None = None) -> int:
    """Create the named peer venvs (all when none are named)."""
    names = list(argv if argv is not None else sys.argv[1:]) or list(PEERS)
    status = 0
    for name in names:
        try:
            print(f"{name}: {peer_python(name)}")
        except RuntimeError as exc:
            print(f"{name}: FAILED\n{exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
