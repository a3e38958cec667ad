"""Behaviour of measurement.process.run_command."""

from __future__ import annotations

import os
import sys
import time

import pytest

from measurement.process import CommandState, run_command

PY = sys.executable


def test_ok_captures_output_and_status() -> None:
    out = run_command([PY, "-c", "import sys; print('hi'); print('err', file=sys.stderr)"], timeout=30)
    assert out.state is CommandState.OK and out.ok
    assert out.returncode == 0
    assert out.stdout.strip() == "hi"
    assert out.stderr.strip() == "err"
    assert not out.truncated


def test_nonzero_exit_is_failed_with_reason() -> None:
    out = run_command([PY, "-c", "import sys; sys.exit(3)"], timeout=30)
    assert out.state is CommandState.FAILED
    assert out.returncode == 3
    assert out.reason == "exit status 3"


def test_missing_program_is_failed_not_exception() -> None:
    out = run_command(["/nonexistent/definitely-not-here"], timeout=5)
    assert out.state is CommandState.FAILED
    assert out.returncode is None
    assert "cannot start" in (out.reason or "")


def test_string_argv_refused() -> None:
    with pytest.raises(ValueError, match="argv"):
        run_command("echo hi; rm -rf /", timeout=5)  # type: ignore[arg-type]


def test_no_shell_interpretation() -> None:
    out = run_command([PY, "-c", "import sys; print(sys.argv[1])", "$HOME; echo pwned"], timeout=30)
    assert out.stdout.strip() == "$HOME; echo pwned"


def test_timeout_kills_whole_process_group(tmp_path) -> None:
    # The child starts a grandchild that writes its pid and sleeps; both must die.
    pidfile = tmp_path / "grandchild.pid"
    grandchild = tmp_path / "grandchild.py"
    grandchild.write_text(f"import os, time\nopen({str(pidfile)!r} + '.tmp', 'w').write(str(os.getpid()))\nos.replace({str(pidfile)!r} + '.tmp', {str(pidfile)!r})\ntime.sleep(60)\n")
    script = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, {str(grandchild)!r}])\n"
        "import os\n"
        f"while not os.path.exists({str(pidfile)!r}): time.sleep(0.01)\n"
        "time.sleep(60)\n"
    )
    t0 = time.monotonic()
    out = run_command([PY, "-c", script], timeout=3.0)
    assert out.state is CommandState.TIMEOUT
    assert time.monotonic() - t0 < 30  # did not wait for the sleeps
    assert pidfile.exists(), out.stderr
    gpid = int(pidfile.read_text())
    for _ in range(50):
        try:
            os.kill(gpid, 0)
        except ProcessLookupError:
            break
        # may be a zombie of its (dead) parent, reaped by init shortly
        with open(f"/proc/{gpid}/stat") as f:
            if f.read().split()[2] == "Z":
                break
        time.sleep(0.1)
    else:
        pytest.fail("grandchild survived the timeout")


def test_output_is_bounded() -> None:
    out = run_command([PY, "-c", "import sys; sys.stdout.write('x' * 200000)"], timeout=30, max_output=1000)
    assert out.state is CommandState.OK
    assert len(out.stdout) == 1000
    assert out.truncated


def test_input_and_env_and_cwd(tmp_path) -> None:
    out = run_command(
        [PY, "-c", "import os, sys; print(sys.stdin.read().upper(), os.environ['FOO'], os.getcwd())"],
        timeout=30, input="abc", env={**os.environ, "FOO": "bar"}, cwd=tmp_path,
    )
    words = out.stdout.split()
    assert words[:2] == ["ABC", "bar"]
    assert os.path.samefile(words[2], tmp_path)


def test_killed_by_signal_is_failed() -> None:
    out = run_command([PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"], timeout=30)
    assert out.state is CommandState.FAILED
    assert "SIGSEGV" in (out.reason or "")


def test_bad_timeout_refused() -> None:
    with pytest.raises(ValueError, match="timeout"):
        run_command([PY, "-c", "pass"], timeout=0)
