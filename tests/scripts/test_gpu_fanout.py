"""scripts/gpu_fanout.sh without a GPU: a stand-in nvidia-smi lists two GPUs; each job sees its own."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _fake_smi(tmp_path: Path, gpus: int) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + "".join(f"echo 'GPU {k}: stand-in (UUID: GPU-{k})'\n" for k in range(gpus)))
    smi.chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", OUT=str(tmp_path / "out"))


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs CPU affinity (Linux)")
def test_each_job_sees_its_gpu_its_cpus_and_its_out_folder(tmp_path: Path) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    env = _fake_smi(tmp_path, 2)
    (tmp_path / "out").mkdir()
    job = 'echo "dev=$CUDA_VISIBLE_DEVICES"; taskset -pc $$; echo x > "$OUT/result.txt"'
    proc = subprocess.run(["bash", str(ROOT / "scripts/gpu_fanout.sh"), job, job + "; exit 3"], check=False, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr          # one job failed
    assert "dev=0" in proc.stdout and "dev=1" in proc.stdout
    with tarfile.open(tmp_path / "out" / "fanout.tgz") as tar:
        names = set(tar.getnames())
    assert {"gpu0/job.log", "gpu0/result.txt", "gpu1/job.log", "gpu1/result.txt"} <= names
    assert not (tmp_path / "out" / "gpu0").exists()   # packed, so the device tool brings back one file


def test_more_jobs_than_gpus_is_refused_with_the_count(tmp_path: Path) -> None:
    env = _fake_smi(tmp_path, 1)
    proc = subprocess.run(["bash", str(ROOT / "scripts/gpu_fanout.sh"), "true", "true"], check=False, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "lists 1 GPU" in proc.stderr
