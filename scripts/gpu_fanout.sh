#!/usr/bin/env bash
# Run independent GPU jobs side by side on a machine with several GPUs, one job per GPU (device machine).
#
#   . scripts/gpu_env.sh >/dev/null
#   bash scripts/gpu_fanout.sh "END=... bash docs/stencil_gpu_results/issue17_h100_full/run_watch.sh hypterm:1:5:115" \
#                              "END=... bash docs/stencil_gpu_results/issue17_h100_full/run_watch.sh rhs4center:1:5:140"
#
# Job k (from 0) runs in its own shell with CUDA_VISIBLE_DEVICES=k (so it sees one GPU, as device 0), pinned to
# the k-th of N equal slices of this process's CPUs (nvcc and every thread it starts inherit the affinity), and
# OUT=$OUT/gpu<k> (created), its stdout and stderr in $OUT/gpu<k>/job.log. Why: the benchmark scripts measure
# on device 0 and compile with a fixed number of threads; on a 4-GPU machine with 64 cores four of them run at
# once, each with a GPU and 16 cores to itself, the conditions of a one-GPU machine with 16 cores.
# At the end every job's folder is packed into $OUT/fanout.tgz (the device tool brings back few files) and the
# last lines of each log are printed. The exit status is the number of jobs that failed.
# GPU_SHARE=1: every job on GPU 0 at once (a one-GPU machine; the CPUs are still split). Why: two arms compared
# side by side then meet the same contention; what is compared is their picks re-timed afterwards, one at a time.
set -u
OUT=${OUT:-.}
n=$#
if [ "$n" -lt 1 ]; then echo "usage: gpu_fanout.sh 'job for GPU 0' ['job for GPU 1' ...]" >&2; exit 2; fi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
share=${GPU_SHARE:-0}
if [ "$share" != 1 ] && [ "${gpus:-0}" -lt "$n" ]; then
  echo "gpu_fanout: $n jobs but nvidia-smi lists ${gpus:-0} GPU(s); give at most that many jobs" >&2; exit 2
fi
cpus=$(python3 -c "import os; print(' '.join(map(str, sorted(os.sched_getaffinity(0)))))")
read -r -a cpu_list <<< "$cpus"
per=$(( ${#cpu_list[@]} / n ))
if [ "$per" -lt 1 ]; then echo "gpu_fanout: fewer CPUs (${#cpu_list[@]}) than jobs ($n)" >&2; exit 2; fi
pids=()
k=0
for job in "$@"; do
  slice=$(IFS=,; echo "${cpu_list[*]:$(( k * per )):$per}")
  d="$OUT/gpu$k"; mkdir -p "$d"
  echo "job $k: GPU $([ "$share" = 1 ] && echo 0 || echo $k), CPUs $slice: $job"
  dev=$k; [ "$share" = 1 ] && dev=0
  ( export CUDA_VISIBLE_DEVICES=$dev OUT="$d"; exec taskset -c "$slice" bash -c "$job" ) > "$d/job.log" 2>&1 &
  pids+=($!)
  k=$(( k + 1 ))
done
failed=0
k=0
for pid in "${pids[@]}"; do
  wait "$pid" || { echo "job $k exited with $?"; failed=$(( failed + 1 )); }
  k=$(( k + 1 ))
done
for (( k = 0; k < n; k++ )); do echo "== job $k"; tail -n 15 "$OUT/gpu$k/job.log"; done
(cd "$OUT" && tar -czf fanout.tgz gpu* && rm -rf gpu*)
exit "$failed"
