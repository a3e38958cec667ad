"""The README tutorial, run verbatim in a temporary directory with a stand-in ``./bench`` (issue 16).

Why verbatim: the tutorial is the first code a user runs; when it drifted
from the code (a dropped exit status, ``subprocess.run`` leaving grandchildren
behind) nobody noticed.  The app and the three commands are cut out of
README.md as they are; only the stand-in benchmark and the deliberate
mistakes (a bad URL, a resume of a missing run, an unwritable report folder)
are added here.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: the stand-in benchmark: fails for one block size, runs a few ms otherwise
BENCH = """#!/bin/sh
if [ "$1" = "16" ]; then echo "bad block" >&2; exit 3; fi
i=0; while [ $i -lt $(( $1 * $2 / 512 )) ]; do i=$((i+1)); done
"""


def _tutorial() -> tuple[str, list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Tutorial"):]
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, flags=re.DOTALL)
    code = next(body for lang, body in blocks if lang == "python")
    commands = next(body for lang, body in blocks if lang == "")
    return code, [ln for ln in commands.splitlines() if ln.strip()]


def _requests(workdir: Path) -> int:
    with sqlite3.connect(workdir / "ensemble.db") as con:
        return int(con.execute("SELECT count(*) FROM requests").fetchone()[0])


@pytest.fixture()
def workdir(tmp_path: Path) -> Path:
    code, _ = _tutorial()
    (tmp_path / "mytuner.py").write_text(code, encoding="utf-8")
    bench = tmp_path / "bench"
    bench.write_text(BENCH, encoding="utf-8")
    bench.chmod(0o755)
    venv = Path(sys.executable).parent.parent      # the project's .venv (or whatever runs the tests)
    (tmp_path / ".venv").symlink_to(venv, target_is_directory=True)
    return tmp_path


def _sh(workdir: Path, command: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENSEMBLE_")}
    return subprocess.run(["bash", "-c", command.split("#")[0] + " " + " ".join(extra)], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def test_readme_tutorial_verbatim(workdir: Path) -> None:
    _, commands = _tutorial()
    assert len(commands) == 3 and "run_command" in (workdir / "mytuner.py").read_text()
    first, resume, best = commands

    # the tutorial's own commands (smaller budgets keep the test short; the flags are the README's)
    p = _sh(workdir, first.replace("--test-limit 200", "--test-limit 12"), "--quiet", "--seed", "1")
    assert p.returncode == 0, p.stderr
    assert "best configuration" in p.stdout and (workdir / "out/mytuner/best.json").exists()
    p = _sh(workdir, resume.replace("--test-limit 400", "--test-limit 16"), "--quiet", "--seed", "1")
    assert p.returncode == 0, p.stderr
    p = _sh(workdir, best)
    assert p.returncode == 0, p.stderr
    assert '"config"' in p.stdout

    # a bad URL: one line, status 2, nothing created
    p = _sh(workdir, first, "--database", "sqlite://x.db", "--quiet")
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "sqlite:///x.db" in p.stderr
    assert not (workdir / "x.db").exists()

    # --resume of a run that is not there: status 2, the runs there are listed
    p = _sh(workdir, resume, "--run-name", "mytuner-typo", "--quiet")
    assert p.returncode == 2 and "no such run" in p.stderr and "runs there" in p.stderr

    # an unwritable report folder: refused before the first trial, status 2
    before = _requests(workdir)
    p = _sh(workdir, first.replace("out/mytuner", "bench/report"), "--quiet")
    assert p.returncode == 2 and "--report" in p.stderr and "Traceback" not in p.stderr
    assert _requests(workdir) == before


def test_tutorial_run_where_every_trial_fails_exits_1(workdir: Path) -> None:
    (workdir / "bench").write_text("#!/bin/sh\necho 'no device' >&2\nexit 1\n", encoding="utf-8")
    _, commands = _tutorial()
    p = _sh(workdir, commands[0].replace("--test-limit 200", "--test-limit 5"), "--quiet")
    assert p.returncode == 1
    assert "no trial finished successfully" in p.stderr and "x FAILED: exit status 1" in p.stderr


def test_tutorial_trial_limit_kills_the_whole_group_and_records_timeout(workdir: Path) -> None:
    """The tutorial's subprocess.run(timeout=...) recorded FAILED and left a shell's grandchild running."""
    marker = f"first-hour-{os.getpid()}"
    (workdir / "bench").write_text(f"#!/bin/sh\nsh -c 'sleep 300; echo {marker}' &\nwait\n", encoding="utf-8")
    _, commands = _tutorial()
    p = _sh(workdir, commands[0].replace("--test-limit 200", "--test-limit 2").replace("--parallelism 4", ""),
            "--trial-limit", "0.5", "--quiet", "--run-name", "t")
    assert p.returncode == 1 and "x TIMEOUT: time limit of 0.5 s exceeded; process group killed" in p.stderr
    with sqlite3.connect(workdir / "ensemble.db") as con:
        states = {s for (s,) in con.execute("SELECT state FROM requests")}
    assert states == {"TIMEOUT"}
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False).stdout.split()
    assert not left, f"processes left running: {left}"
