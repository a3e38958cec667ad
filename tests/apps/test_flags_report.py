"""The flag apps' closing summary: default levels read back from the run's database.

One test per app (gcc: -O1/-O2/-O3; nvcc: plain -O3; FPGA flow: the default
yosys/nextpnr options); the LegUp variant is in test_hls_flags.py (mock legup).
"""

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


def _ratio_line(out: str, label: str) -> str:
    line = next(ln for ln in out.splitlines() if ln.strip().startswith(label + ":"))
    assert "tuned" in line and line.rstrip().endswith("x)"), line
    return line


@pytest.mark.cuda
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_nvcc_main_prints_ratio_over_plain_O3(tmp_path, capsys) -> None:
    """The compile-only objective (nvcc, no GPU): the closing summary compares with ``nvcc -O3``."""
    from apps.nvcc_flags.__main__ import main

    db = f"sqlite:///{tmp_path / 'n.db'}"
    rc = main(["--program", "gaussian", "--objective", "compile", "--test-limit", "3", "--database", db,
               "--technique", "Random", "--seed", "1", "--quiet"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "default levels measured in this run" in out
    line = _ratio_line(out, "-O3")
    assert "(ptxas cost)" in line
    assert float(line.rsplit("(", 1)[1].rstrip("x)")) >= 1.0  # the -O3 build is seeded: never worse
    assert "tuned flags: " in out


@pytest.mark.skipif(not (shutil.which("yosys") and shutil.which("nextpnr-ice40")),
                    reason="yosys/nextpnr-ice40 not installed")
def test_hls_main_prints_cost_ratio_over_default_flow(tmp_path, capsys) -> None:
    """The FPGA flow: the summary compares with the default yosys/nextpnr configuration, per metric too."""
    from apps.hls_flags.__main__ import main

    db = f"sqlite:///{tmp_path / 'h.db'}"
    rc = main(["--design", "crc32", "--scenario", "area", "--test-limit", "3", "--database", db,
               "--technique", "Random", "--seed", "1", "--quiet"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "default levels measured in this run" in out
    line = _ratio_line(out, "default")
    assert line.split(":", 1)[1].split()[0] == "1" and "(cost)" in line  # the default costs exactly 1
    assert float(line.rsplit("(", 1)[1].rstrip("x)")) >= 1.0
    assert "best / default per metric: fmax_mhz" in out and "luts" in out
