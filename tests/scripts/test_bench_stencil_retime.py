"""The re-timing study's pooling of recorded configurations (no GPU needed)."""

from __future__ import annotations

import json
from pathlib import Path

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
