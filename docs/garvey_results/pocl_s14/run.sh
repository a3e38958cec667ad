#!/usr/bin/env bash
# PoCL Table 3 (session 14): the ten strata of the H100 call, 16^3, caps 30, +RF with the PoCL model.
# Run from the repository root:  nohup bash docs/garvey_results/pocl_s14/run.sh &
set -u
D=docs/garvey_results/pocl_s14
export PYOPENCL_NO_CACHE=1 POCL_KERNEL_CACHE=0 PYTHONUNBUFFERED=1   # every build a real build
date -u > $D/run.started
nice -n 19 .venv/bin/python -m scripts.bench_garvey measure --size 16 \
    --names box1d_r5_z,star2d_r2_x,thumbtack3d_r1_z,box3d_r1_none,diamond2d_r3_z,star3d_r2_none,diamond3d_r2_none,nocorners2d_r2_y,box2d_r2_x,nocorners3d_r2_none \
    --strategies Rand,hybrid+RF,dims+RF,opts+RF,default,AUCBandit --model techniques/garvey/data/loading_model_pocl.json \
    --rand-samples 30 --cap 30 --budget 30 --repeats 1 --threads 2 --max-launch 0.005 \
    --time-limit 3650 --hard-limit 3800 --out $D/pocl_table3.json 2>&1 | grep --line-buffered -v "kernel = getattr\|RepeatedKernelRetrieval" > $D/table3.log
date -u > $D/run.finished
