"""Running the OpenTuner-style fixture apps both ways: unchanged and with imports changed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = Path(__file__).resolve().parent / "apps"
ENSEMBLE_TUNER = [sys.executable, "-m", "ensemble.cli"]


def changed_imports(source: str) -> str:
    """What a user does to run an OpenTuner app with only its imports changed."""
    source = re.sub(r"^import opentuner$", "from ensemble.compat import opentuner", source, flags=re.MULTILINE)
    return re.sub(r"^from opentuner(\.[\w.]+)? import", r"from ensemble.compat.opentuner\1 import", source,
                  flags=re.MULTILINE)


def prepare(tmp_path: Path) -> Path:
    """A working directory holding the fixture programs (the apps compile and write files there)."""
    work = tmp_path / "work"
    work.mkdir()
    for f in (APPS / "programs").iterdir():
        shutil.copy(f, work / f.name)
    shutil.copy(APPS / "cities10.txt", work / "cities10.txt")
    return work


def run_app(app: str, args: list[str], cwd: Path, mode: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run fixture ``app`` (file name in apps/) with ``args``; mode 'unchanged' or 'changed'."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if mode == "unchanged":
        cmd = [*ENSEMBLE_TUNER, "opentuner", str(APPS / app), *args]
    else:
        script = cwd / f"changed_{app}"
        script.write_text(changed_imports((APPS / app).read_text()))
        cmd = [sys.executable, str(script), *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
