#!/usr/bin/env bash
# Second pass (session 14): hybrid and dims with the other three loadings (vec, local, image), for the
# oracle rows (opts left out: at cap 30 it never leaves its first group); global is the "+RF" run of run.sh (the PoCL model predicts global on every kernel).
# Starts when run.sh has finished; stops by 15:21 UTC (--hard-limit from the time left).
set -u
D=docs/garvey_results/pocl_s14
export PYOPENCL_NO_CACHE=1 POCL_KERNEL_CACHE=0 PYTHONUNBUFFERED=1
while [ ! -f $D/run.finished ]; do sleep 10; done
L=$(( $(date -u -d "2026-11-26 15:21:00" +%s) - $(date -u +%s) ))
date -u > $D/oracle.started; echo "hard limit $L s" >> $D/oracle.started
nice -n 19 .venv/bin/python -m scripts.bench_garvey measure --size 16 \
    --names box1d_r5_z,star2d_r2_x,thumbtack3d_r1_z,box3d_r1_none,diamond2d_r3_z,star3d_r2_none,diamond3d_r2_none,nocorners2d_r2_y,box2d_r2_x,nocorners3d_r2_none \
    --strategies hybrid,dims --loadings vec,local,image \
    --cap 30 --repeats 1 --threads 2 --max-launch 0.005 \
    --time-limit $((L - 60)) --hard-limit $L --out $D/pocl_oracle.json 2>&1 | grep --line-buffered -v "kernel = getattr\|RepeatedKernelRetrieval" > $D/oracle.log
date -u > $D/oracle.finished
