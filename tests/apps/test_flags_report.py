"""The flag apps' closing summary: default levels read back from the run's database."""

from __future__ import annotations

import shutil

import pytest


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_gcc_main_prints_speedup_over_default_levels(tmp_path, capsys) -> None:
    from apps.gcc_flags.__main__ import main

    db = f"sqlite:///{tmp_path / 'm.db'}"
    rc = main(["--program", "kahan", "--size", "20000", "--repeats", "1", "--test-limit", "4",
               "--database", db, "--technique", "Random", "--seed", "1", "--quiet"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "default levels measured in this run" in out
    for level in ("-O1", "-O2", "-O3"):
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(level + ":"))
        assert "tuned" in line and line.rstrip().endswith("x)")
    assert "tuned flags: " in out
