"""scripts/bench_search.py and its peers: a peer killed at its time limit keeps the seeds it finished."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from apps.replay import load_space
from tests.apps._replay_fixtures import kt_cache


def test_a_peer_past_its_time_limit_keeps_its_finished_seeds_in_seed_order(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import scripts._peers as peers
    from scripts import bench_search as bench

    space = load_space(kt_cache(tmp_path / "c.json.gz"))
    payload = bench.peer_input(space, "file", 3, [0, 1, 2, 3], ["AUCBanditMetaTechniqueA"])
    seen: dict[str, Any] = {}

    def killed(name: str, script: Any, args: Any, *, timeout: float | None = None) -> Any:
        spec = json.loads(Path(args[0]).read_text())
        seen["progress"] = spec["progress"]
        for seed, cfgs in ((2, [[64, 2]]), (0, [[32, 1], [64, 2]])):  # seeds 0 and 2 finished, out of order
            Path(spec["progress"], f"AUCBanditMetaTechniqueA__{seed}.json").write_text(
                json.dumps({"strategy": "AUCBanditMetaTechniqueA", "seed": seed, "configs": cfgs}))
        raise subprocess.TimeoutExpired("peer", timeout or 0)

    monkeypatch.setattr(peers, "run_peer", killed)
    out = bench.run_peer_batch("opentuner", "_bench_search_opentuner.py", payload, space, timeout=5)
    assert list(out) == ["AUCBanditMetaTechniqueA (2 of 4 seeds, time limit)"]
    runs = out["AUCBanditMetaTechniqueA (2 of 4 seeds, time limit)"]
    assert [len(r) for r in runs] == [2, 1]  # seed 0 (two configurations) first, then seed 2
    assert runs[0][1] == pytest.approx(0.5) and runs[1][0] == pytest.approx(0.5)  # (64, 2) is 0.5 in the table
    assert not Path(seen["progress"]).exists()  # the progress folder is removed


def test_a_peer_past_its_time_limit_with_no_seed_finished_still_raises(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import scripts._peers as peers
    from scripts import bench_search as bench

    space = load_space(kt_cache(tmp_path / "c.json.gz"))
    payload = bench.peer_input(space, "file", 3, [0, 1], ["AUCBanditMetaTechniqueA"])

    def killed(name: str, script: Any, args: Any, *, timeout: float | None = None) -> Any:
        raise subprocess.TimeoutExpired("peer", timeout or 0)

    monkeypatch.setattr(peers, "run_peer", killed)
    with pytest.raises(subprocess.TimeoutExpired):
        bench.run_peer_batch("opentuner", "_bench_search_opentuner.py", payload, space, timeout=5)


@pytest.mark.slow
def test_kernel_tuner_gives_the_same_runs_in_several_processes_as_in_one(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """--peer-jobs spreads Kernel Tuner's (strategy, seed) runs over processes; each run seeds itself."""
    import scripts._peers as peers
    from scripts import bench_search as bench

    if not peers.peer_available("kerneltuner"):
        pytest.skip("Kernel Tuner's venv is missing: python -m scripts._peers kerneltuner")
    space = load_space(kt_cache(tmp_path / "c.json.gz"))
    outs = []
    for jobs in (1, 2):
        payload = bench.peer_input(space, "file", 3, [0, 1, 2], ["random_sample", "genetic_algorithm"])
        payload["jobs"] = jobs
        outs.append(bench.run_peer_batch("kerneltuner", "_bench_search_kerneltuner.py", payload, space, timeout=300))
    assert outs[0] == outs[1]
    assert sorted(outs[0]) == ["genetic_algorithm", "random_sample"] and all(len(r) == 3 for r in outs[0].values())
