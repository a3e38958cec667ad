"""The re-timing study's pooling of recorded configurations (no GPU needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.bench_stencil_retime import recorded_configs


def test_pools_picks_and_confirm_candidates_keeping_the_highest_figure(tmp_path: Path) -> None:
    a, b, c = {"bx": 32, "by": 4}, {"bx": 64, "by": 2}, {"bx": 16, "by": 8}
    (tmp_path / "one.json").write_text(json.dumps({"cuda": [
        {"stencil": "j3d7pt", "tuned_config": a, "tuned_roof_frac": 0.93,
         "confirm": {"candidates": [{"config": a, "median_pct_roofline": 94.0},
                                    {"config": b, "median_pct_roofline": 92.5}]}},
        {"stencil": "hypterm", "tuned_config": c, "tuned_roof_frac": 0.60}]}))
    (tmp_path / "two.json").write_text(json.dumps([{"stencil": "j3d7pt", "tuned_config": b,
                                                    "tuned_roof_frac": 0.951}]))
    (tmp_path / "broken.json").write_text("{not json")
    found = recorded_configs(sorted(str(p) for p in tmp_path.iterdir()), "j3d7pt")
    by_cfg = {json.dumps(cfg, sort_keys=True): pct for pct, cfg in found.values()}
    assert by_cfg == {json.dumps(a, sort_keys=True): 94.0, json.dumps(b, sort_keys=True): 95.1}


def test_a_run_s_picks_are_read_in_file_order(tmp_path: Path) -> None:
    from scripts.bench_stencil_retime import picked_configs

    a, b = {"bx": 32, "by": 4}, {"bx": 64, "by": 2}
    (tmp_path / "run.json").write_text(json.dumps({"cuda": [
        {"stencil": "j3d7pt", "seed": 1, "tuned_config": a, "tuned_roof_frac": 0.9},
        {"stencil": "j3d27pt", "seed": 1, "tuned_config": b, "tuned_roof_frac": 0.8},
        {"stencil": "j3d7pt", "seed": 2, "tuned_config": b, "tuned_roof_frac": 0.95}]}))
    assert picked_configs([str(tmp_path / "run.json")], "j3d7pt") == [(90.0, a), (95.0, b)]


def test_nothing_to_re_time_is_refused_with_the_fix_before_any_gpu_work(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from scripts.bench_stencil_retime import main

    (tmp_path / "other.json").write_text(json.dumps([{"stencil": "hypterm", "tuned_config": {"bx": 32}}]))
    with pytest.raises(SystemExit):
        main(["--stencil", "j3d7pt", "--from", str(tmp_path / "*.json")])
    err = capsys.readouterr().err
    assert "nothing to re-time" in err and "quote the globs" in err and "'j3d7pt'" in err
    with pytest.raises(SystemExit):
        main(["--stencil", "j3d7pt", "--from", str(tmp_path / "*.json"), "--rounds", "0"])
    assert "--rounds" in capsys.readouterr().err


def test_the_hold_study_refuses_bad_counts_before_any_gpu_work(capsys: pytest.CaptureFixture[str]) -> None:
    from scripts.bench_cuda_hold import main

    with pytest.raises(SystemExit) as info:
        main(["--rounds", "0"])
    assert info.value.code == 2 and "--rounds" in capsys.readouterr().err


def test_the_benchmark_refuses_an_unknown_opt_in_parameter(capsys: pytest.CaptureFixture[str]) -> None:
    from scripts.bench_stencil_gpu import main

    with pytest.raises(SystemExit) as info:
        main(["--opt-in", "warp_specialise"])
    assert info.value.code == 2 and "l2pf" in capsys.readouterr().err
