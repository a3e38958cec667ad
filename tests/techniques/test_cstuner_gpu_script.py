"""The GPU comparison's bookkeeping without a GPU: Nsight CSV parsing, iso-time table, plots."""

from __future__ import annotations

from pathlib import Path

import pytest

from measurement.cuda import parse_ncu_csv
from scripts.bench_cstuner_gpu import _best_at, _best_curve, summarize


def test_parse_ncu_csv_reads_metric_rows_and_skips_noise() -> None:
    text = ('==PROF== Connected to process 1\n'
            '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
            '"0","stencil_kernel","dram__bytes.sum","byte","2,160,115,776"\n'
            '"0","stencil_kernel","lts__t_sector_hit_rate.pct","%","43.5"\n'
            '"0","stencil_kernel","broken","","n/a"\n')
    assert parse_ncu_csv(text) == {"dram__bytes.sum": 2160115776.0, "lts__t_sector_hit_rate.pct": 43.5}
    assert parse_ncu_csv("no csv here") == {}


def test_curves_and_iso_time_table(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    fast = [(1.0, 3e-3), (2.0, 1e-3), (3.0, 1e-3)]
    slow = [(2.0, 4e-3), (4.0, 2e-3), (6.0, 1e-3)]
    assert list(_best_curve(fast, 3)) == [3e-3, 1e-3, 1e-3]
    assert _best_at(slow, 3.0) == 4e-3
    runs = [{"stencil": "j3d7pt", "tuner": "CsTuner", "rep": 0, "budget": 3, "wall_s": 3, "evaluations": 3,
             "best_s": 1e-3, "trace": fast, "error": None},
            {"stencil": "j3d7pt", "tuner": "default", "rep": 0, "budget": 3, "wall_s": 6, "evaluations": 3,
             "best_s": 1e-3, "trace": slow, "error": None}]
    table = summarize(runs, tmp_path)
    # iso-time = the shorter run's end (3 s): CsTuner 1 ms, default 4 ms -> 4.00x
    assert "| j3d7pt | default | 1 | 3 | 6 | 1.0000 | 1.00x | 4.0000 (t=3 s) | 4.00x |" in table
    assert "| geometric mean (1 stencils) | default | | | | | 1.00x | | 4.00x |" in table
    # the same seed recorded by two calls counts once
    again = summarize(runs + [dict(runs[1], best_s=5e-3)], tmp_path)
    assert "| j3d7pt | default | 1 | 3 | 6 | 1.0000 |" in again and "1 record(s)" in again
    assert (tmp_path / "iso_iteration.png").exists() and (tmp_path / "iso_time.png").exists()


def test_jobs_run_stencil_by_stencil_and_number_reps_from_first_rep() -> None:
    import argparse

    from scripts.bench_cstuner_gpu import _jobs

    args = argparse.Namespace(stencils="a,b", tuners="T1,T2", first_rep=3, reps=2)
    jobs = _jobs(args)
    assert [j[0] for j in jobs] == ["a"] * 4 + ["b"] * 4          # each grid made once
    assert sorted({j[2] for j in jobs}) == [3, 4]                   # seeds 3 and 4: no earlier seed repeated
    assert sorted(jobs) == sorted((s, t, r) for s in "ab" for t in ("T1", "T2") for r in (3, 4))


def test_missing_from_runs_only_the_gaps(tmp_path: Path) -> None:
    """--missing-from: complete runs in the file are skipped; failed or cut ones are run again."""
    import argparse
    import json

    from scripts.bench_cstuner_gpu import _jobs

    log = tmp_path / "runs.jsonl"
    recs = [{"stencil": "a", "tuner": "T1", "rep": 0, "evaluations": 6, "error": None},
            {"stencil": "a", "tuner": "T2", "rep": 0, "evaluations": 3, "error": "TimeoutExpired"},
            {"stencil": "b", "tuner": "T1", "rep": 1, "evaluations": 6, "error": None}]
    log.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    args = argparse.Namespace(stencils="a,b", tuners="T1,T2", first_rep=0, reps=2, budget=6, missing_from=str(log))
    jobs = _jobs(args)
    assert ("a", "T1", 0) not in jobs and ("b", "T1", 1) not in jobs
    assert ("a", "T2", 0) in jobs and len(jobs) == 6
    with pytest.raises(SystemExit, match="no such file"):
        _jobs(argparse.Namespace(**{**vars(args), "missing_from": str(tmp_path / "nope.jsonl")}))


@pytest.mark.opencl
@pytest.mark.slow
def test_a_call_records_every_run_once_from_first_rep(tmp_path: Path) -> None:
    """On PoCL: every (stencil, tuner, rep) of the call recorded once, seeds from --first-rep."""
    import json

    from scripts.bench_cstuner_gpu import main

    pytest.importorskip("pyopencl")
    rc = main(["--backend", "opencl", "--size", "12", "--stencils", "j3d7pt", "--tuners", "CsTuner,default",
               "--reps", "2", "--first-rep", "5", "--budget", "6", "--parallelism", "1",
               "--out", str(tmp_path)])
    assert rc == 0
    runs = [json.loads(x) for x in (tmp_path / "runs.jsonl").read_text().splitlines()]
    if any(r["error"] and "OpenCL" in r["error"] for r in runs):
        pytest.skip("no usable OpenCL device")
    assert sorted((r["tuner"], r["rep"]) for r in runs) == [("CsTuner", 5), ("CsTuner", 6), ("default", 5),
                                                            ("default", 6)]
    assert all(r["evaluations"] == 6 and r["lock_wait_s"] == 0.0 for r in runs)   # one process: no lock


def test_gpus_deal_stencils_round_robin_and_split_the_cpus() -> None:
    from scripts.bench_cstuner_gpu import _worker_plan

    plan = _worker_plan(["addsgd6", "rhs4center", "j3d7pt", "helmholtz", "cheby"], 2, list(range(8)), None)
    assert plan == [(["addsgd6", "j3d7pt", "cheby"], "0", [0, 1, 2, 3]),
                    (["rhs4center", "helmholtz"], "1", [4, 5, 6, 7])]
    # a machine already narrowed to some GPUs stays narrowed; a worker without a stencil is not started
    assert _worker_plan(["a"], 2, [0, 1], "3,5") == [(["a"], "3", [0])]
    with pytest.raises(SystemExit, match="names only 1 GPU"):
        _worker_plan(["a", "b"], 2, [0, 1], "7")
    with pytest.raises(SystemExit, match="only 1 CPU"):
        _worker_plan(["a", "b"], 2, [0], None)


@pytest.mark.opencl
@pytest.mark.slow
def test_two_workers_record_every_run_once_in_one_file(tmp_path: Path) -> None:
    """--gpus 2 on PoCL: both workers' runs merged into runs.jsonl, each with its GPU and CPU share."""
    import json
    import os

    from scripts.bench_cstuner_gpu import main

    pytest.importorskip("pyopencl")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    rc = main(["--backend", "opencl", "--size", "12", "--stencils", "j3d7pt,helmholtz", "--tuners", "CsTuner",
               "--reps", "1", "--budget", "4", "--parallelism", "1", "--gpus", "2", "--out", str(tmp_path)])
    assert rc == 0
    runs = [json.loads(x) for x in (tmp_path / "runs.jsonl").read_text().splitlines()]
    if any(r["error"] and "OpenCL" in r["error"] for r in runs):
        pytest.skip("no usable OpenCL device")
    # every run once; a worker done with its own stencil may take the other's runs, so the GPU is not fixed
    assert sorted(r["stencil"] for r in runs) == ["helmholtz", "j3d7pt"]
    assert {r["cuda_visible_devices"] for r in runs} <= {"0", "1"}
    assert all(r["evaluations"] == 4 and r["cpus"] == len(os.sched_getaffinity(0)) // 2 for r in runs)
    assert not (tmp_path / "gpu0").exists() and not (tmp_path / "claims").exists()
    assert (tmp_path / "summary.md").exists()


def test_a_run_is_claimed_by_one_worker_only(tmp_path: Path) -> None:
    """--gpus workers share the runs through claim files: the first to claim a run runs it, nobody else."""
    from scripts.bench_cstuner_gpu import _claim, _claimed

    claims = str(tmp_path)
    assert not _claimed(claims, "j3d7pt", "CsTuner", 3)
    assert _claim(claims, "j3d7pt", "CsTuner", 3)
    assert _claimed(claims, "j3d7pt", "CsTuner", 3)
    assert not _claim(claims, "j3d7pt", "CsTuner", 3)          # the second worker skips it
    assert _claim(claims, "j3d7pt", "CsTuner", 4) and _claim(claims, "j3d7pt", "default", 3)
    assert _claim(None, "j3d7pt", "CsTuner", 3) and not _claimed(None, "j3d7pt", "CsTuner", 3)  # one worker


def test_workers_list_their_own_stencils_first_then_the_others(tmp_path: Path) -> None:
    """A worker's command line: its stencils, then the rest (the runs it may take over), and the claims folder."""
    import argparse

    from scripts.bench_cstuner_gpu import _worker_argv

    args = argparse.Namespace(tuners="CsTuner", budget=8, reps=2, first_rep=0, backend="opencl", parallelism=1,
                              repeats=5, run_timeout=60.0, mpirun="mpirun", mpirun_flags="", size=12, deadline=None,
                              device_lock=None, missing_from=None, ncu_demo=0)
    argv = _worker_argv(args, ["b", "d", "a", "c"], tmp_path / "gpu1", False, tmp_path / "claims")
    assert argv[argv.index("--stencils") + 1] == "b,d,a,c"
    assert argv[argv.index("--claims") + 1] == str(tmp_path / "claims")


def test_two_gpu_mpi_runs_get_one_gpu_per_rank_and_workers_get_gpu_pairs() -> None:
    """CsTuner-mpi2-2gpu needs a GPU per rank; --gpus-per-worker 2 hands each worker a pair."""
    from scripts.bench_cstuner_gpu import _worker_plan, check_rank_gpus

    check_rank_gpus("2,3", 2)
    check_rank_gpus(None, 2)          # nothing narrowed: the engine spreads the ranks over the host's GPUs
    with pytest.raises(SystemExit, match="--gpus-per-worker 2"):
        check_rank_gpus("0", 2)
    plan = _worker_plan(["a", "b", "c"], 4, list(range(8)), None, per_worker=2)
    assert plan == [(["a", "c"], "0,1", [0, 1, 2, 3]), (["b"], "2,3", [4, 5, 6, 7])]
    with pytest.raises(SystemExit, match="divisor"):
        _worker_plan(["a"], 4, list(range(8)), None, per_worker=3)


def test_unknown_tuner_is_a_usage_error_naming_the_choices(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from scripts.bench_cstuner_gpu import main

    with pytest.raises(SystemExit):
        main(["--tuners", "CsTuner,csTuner-mpi", "--out", str(tmp_path)])
    assert "unknown csTuner-mpi" in capsys.readouterr().err
