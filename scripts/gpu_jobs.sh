#!/usr/bin/env bash
# The open issues' GPU jobs, one per device call (carry [".whl"]; .whl/opentuner/ from
# scripts/fetch_opentuner_wheels.sh for `ot`). Every job stops itself LIMIT seconds after the
# call starts (default 570, under the device's 600 s per command) and writes under $OUT.
#   bash scripts/gpu_jobs.sh ot    [LIMIT]  issue 12: OpenTuner 0.8.8 itself, 8 stencils x 10 reps (CSTUNER.md)
#   bash scripts/gpu_jobs.sh pair  [LIMIT]  issue 12: CsTuner and OpenTuner 0.8.8 on one machine, REPS (7) reps
#                                          each, so their iso-time curves share the host's compile speed
#   bash scripts/gpu_jobs.sh zqpf  [LIMIT]  issue 17: the GPU tests of zq with prefetch (STENCILS.md)
#   bash scripts/gpu_jobs.sh pf17  [LIMIT]  issue 17: four GPUs: Nsight Compute on zq with and without prefetch
#                                          (docs/stencil_gpu_results/issue17_zqpf/plan.json), then 5 x 300 searches
#                                          of hypterm and rhs4center with prefetch free to combine with zq
#   bash scripts/gpu_jobs.sh stage17 [LIMIT] issue 17: four GPUs: on GPU 0 the GPU tests of zqs (the in-plane
#                                          tiles staged with cp.async), then Nsight Compute on zq + prefetch with
#                                          and without zqs (docs/stencil_gpu_results/issue17_stage_s22/plan.json);
#                                          on GPUs 1-3 5 x 300 searches of hypterm with zqs in the space, then
#                                          addsgd6 (seeds 1-5, GPU 0 too once done) while time is left
#   bash scripts/gpu_jobs.sh stage17s [LIMIT] issue 17: four GPUs: 5 x 300 searches of rhs4center and addsgd4
#                                          with zqs in the space (the other two targets of stage17's call)
#   bash scripts/gpu_jobs.sh stage17n [LIMIT] issue 17: four GPUs: Nsight Compute on GPU 0 of zq + prefetch, full
#                                          zqs and zqsn (only the tiles with the most in-plane loads staged)
#                                          (docs/stencil_gpu_results/issue17_stage_s22/zqsn/plan.json), the GPU
#                                          tests of zqs/zqsn on GPU 1 meanwhile; then, only if a hypterm zqs/zqsn
#                                          item of the probe is faster than its zq + prefetch item (gate.txt),
#                                          5 x 300 searches of hypterm with zqsn in the space on the four GPUs
#   bash scripts/gpu_jobs.sh mpi   [LIMIT]  issue 18: bench_mpi at 1, 8 and 32 ranks on the machine's CPUs
#   bash scripts/gpu_jobs.sh auto18 [LIMIT] issue 18: spread_refits="auto" against the code before it
#                                          (docs/bo_auto_s23/rule.md): stand-in, bench_mpi at 32 ranks, replays
#                                          at 1, 8 and 32 simulated workers (the machine's CPUs only)
# `ot` takes --missing-from $OT_DONE when that file exists (records of an earlier call), so a
# second call runs only what the first did not finish.
set -u
job=${1:?name a job: ot, pair, zqpf, pf17, stage17, stage17s, stage17n, auto18 or mpi}; LIMIT=${2:-570}
t0=$(date +%s)
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
OUT=${OUT:-out-gpu}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/gpus.txt"
ngpu=$(wc -l < "$OUT/gpus.txt")
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
MF="--allow-run-as-root --oversubscribe --bind-to none"
case "$job" in
  ot)
    extra=()
    if [ -n "${OT_DONE:-}" ]; then
      [ -f "$OT_DONE" ] || { echo "gpu_jobs: OT_DONE=$OT_DONE: no such file (copy the first call's runs.jsonl into the tree)" >&2; exit 2; }
      extra=(--missing-from "$OT_DONE")
    fi
    l=$(left)
    timeout $((l - 5)) "$PY" -m scripts.bench_cstuner_gpu --gpus "$ngpu" \
      --stencils helmholtz,cheby,j3d7pt,addsgd4,hypterm,rhs4center,addsgd6,j3d27pt \
      --tuners opentuner-0.8.8 --budget 48 --reps 10 --first-rep 0 "${extra[@]}" \
      --parallelism 16 --deadline $((l - 90)) --run-timeout 110 --mpirun-flags "$MF" --out "$OUT/ot" \
      > "$OUT/ot.log" 2>&1
    rc=$?
    # cut short by the timeout, the parent did not merge its workers' records: merge them here
    [ -f "$OUT/ot/runs.jsonl" ] || cat "$OUT"/ot/gpu*/runs.jsonl > "$OUT/ot/runs.jsonl" 2>/dev/null
    echo "rc=$rc"; tail -25 "$OUT/ot.log"; wc -l "$OUT/ot/runs.jsonl" ;;
  pair)
    l=$(left)
    timeout $((l - 5)) "$PY" -m scripts.bench_cstuner_gpu --gpus "$ngpu" \
      --stencils hypterm,rhs4center,addsgd6,addsgd4,j3d27pt,helmholtz,cheby,j3d7pt \
      --tuners CsTuner,opentuner-0.8.8 --budget 48 --reps "${REPS:-7}" --first-rep 0 \
      --parallelism 16 --deadline $((l - 90)) --run-timeout 110 --mpirun-flags "$MF" --out "$OUT/pair" \
      > "$OUT/pair.log" 2>&1
    rc=$?
    [ -f "$OUT/pair/runs.jsonl" ] || cat "$OUT"/pair/gpu*/runs.jsonl > "$OUT/pair/runs.jsonl" 2>/dev/null
    echo "rc=$rc"; tail -25 "$OUT/pair.log"; wc -l "$OUT/pair/runs.jsonl" ;;
  zqpf)
    timeout $(( $(left) - 5 )) "$PY" -m pytest tests/apps/test_stencil_cuda_zq.py -m cuda -k prefetch -q \
      -p no:cacheprovider > "$OUT/cuda_tests_zq_prefetch.log" 2>&1
    echo "rc=$?"; tail -8 "$OUT/cuda_tests_zq_prefetch.log" ;;
  pf17)
    [ "$ngpu" -ge 4 ] || { echo "gpu_jobs: pf17 needs four GPUs, this machine has $ngpu" >&2; exit 2; }
    end=$(( t0 + LIMIT - 15 ))
    W=docs/stencil_gpu_results/issue17_h100_full/run_watch.sh
    PLAN=docs/stencil_gpu_results/issue17_zqpf/plan.json
    OUT="$OUT" PY="$PY" bash scripts/gpu_fanout.sh \
      "DEADLINE=220 bash scripts/gpu_ncu.sh --plan $PLAN; END=$end bash $W hypterm:5:1:130" \
      "END=$end bash $W hypterm:1:2:130 rhs4center:1:1:145" \
      "END=$end bash $W hypterm:3:2:130 rhs4center:2:1:145" \
      "END=$end bash $W rhs4center:3:3:145"
    echo "rc=$?" ;;
  stage17)
    [ "$ngpu" -ge 4 ] || { echo "gpu_jobs: stage17 needs four GPUs, this machine has $ngpu" >&2; exit 2; }
    end=$(( t0 + LIMIT - 15 ))
    W=docs/stencil_gpu_results/issue17_h100_full/run_watch.sh
    PLAN=docs/stencil_gpu_results/issue17_stage_s22/plan.json
    T="timeout 150 \"\$PY\" -m pytest tests/apps/test_stencil_cuda_stage.py -m cuda -q -p no:cacheprovider"
    OUT="$OUT" PY="$PY" bash scripts/gpu_fanout.sh \
      "$T > \$OUT/cuda_tests_stage.log 2>&1; echo tests rc=\$?; tail -6 \$OUT/cuda_tests_stage.log;
       DEADLINE=\$(( $end - \$(date +%s) - 5 )) bash scripts/gpu_ncu.sh --plan $PLAN; END=$end bash $W addsgd6:5:1:150" \
      "END=$end bash $W hypterm:1:2:130 addsgd6:1:1:150" \
      "END=$end bash $W hypterm:3:2:130 addsgd6:2:1:150" \
      "END=$end bash $W hypterm:5:1:130 addsgd6:3:2:150"
    echo "rc=$?" ;;
  stage17s)
    [ "$ngpu" -ge 4 ] || { echo "gpu_jobs: stage17s needs four GPUs, this machine has $ngpu" >&2; exit 2; }
    end=$(( t0 + LIMIT - 15 ))
    W=docs/stencil_gpu_results/issue17_h100_full/run_watch.sh
    OUT="$OUT" PY="$PY" bash scripts/gpu_fanout.sh \
      "END=$end bash $W rhs4center:1:2:145 addsgd4:5:1:90" \
      "END=$end bash $W rhs4center:3:2:145" \
      "END=$end bash $W rhs4center:5:1:145 addsgd4:1:2:90" \
      "END=$end bash $W addsgd4:3:2:90"
    echo "rc=$?" ;;
  stage17n)
    [ "$ngpu" -ge 4 ] || { echo "gpu_jobs: stage17n needs four GPUs, this machine has $ngpu" >&2; exit 2; }
    end=$(( t0 + LIMIT - 15 ))
    W=docs/stencil_gpu_results/issue17_h100_full/run_watch.sh
    PLAN=docs/stencil_gpu_results/issue17_stage_s22/zqsn/plan.json
    mkdir -p "$OUT/probe"
    ( export CUDA_VISIBLE_DEVICES=1
      timeout 200 "$PY" -m pytest tests/apps/test_stencil_cuda_stage.py -m cuda -q -p no:cacheprovider \
        > "$OUT/cuda_tests_stage.log" 2>&1; echo "tests rc=$?" >> "$OUT/cuda_tests_stage.log" ) &
    tests=$!
    ( export CUDA_VISIBLE_DEVICES=0 OUT="$OUT/probe"
      DEADLINE=$(( end - $(date +%s) - 5 )) bash scripts/gpu_ncu.sh --plan $PLAN > "$OUT/probe.log" 2>&1 )  # OUT: .../probe
    wait "$tests"; tail -4 "$OUT/cuda_tests_stage.log"; grep -E "OK pct|FAIL|rc=" "$OUT/probe/probe.log"
    tar -xzOf "$OUT/probe/ncu.tgz" ncu/items.jsonl > "$OUT/items.jsonl" 2>/dev/null
    # the gate: a hypterm item with zqs (any zqsn) faster, by the same process's event timing, than zq + prefetch
    # on the same configuration (label <shape>_pf)
    "$PY" - "$OUT/items.jsonl" > "$OUT/gate.txt" <<'PYEOF'
import json, sys
rows = [json.loads(ln) for ln in open(sys.argv[1]) if ln.strip()]
t = {r["label"]: r.get("time") for r in rows if r.get("state") == "OK"}
faster = []
for lab, v in t.items():
    if lab.startswith("hypterm_") and "_pf_zqs" in lab:
        base = t.get(lab.split("_pf_zqs")[0] + "_pf")
        print(f"{lab}: {v * 1e3:.3f} ms against {base * 1e3 if base else float('nan'):.3f} ms")
        if base and v < base:
            faster.append(lab)
print("GATE", "open" if faster else "closed", " ".join(faster))
PYEOF
    cat "$OUT/gate.txt"
    if grep -q "^GATE open" "$OUT/gate.txt"; then
      OUT="$OUT" PY="$PY" bash scripts/gpu_fanout.sh \
        "END=$end bash $W hypterm:1:2:130" "END=$end bash $W hypterm:3:1:130" \
        "END=$end bash $W hypterm:4:1:130" "END=$end bash $W hypterm:5:1:130"
    fi
    echo "rc=$? after $(( $(date +%s) - t0 ))s" ;;
  auto18)
    # issue 18 point 3 (docs/bo_auto_s23/rule.md): spread_refits="auto" against the code before it. Needs
    # .whl/head.tgz (git archive of the code before: ensemble techniques measurement apps scripts setup.cfg)
    # and .whl/spaces/ (the five replay spaces of ../shared/data/spaces).
    [ -f .whl/head.tgz ] && [ -d .whl/spaces ] || { echo "gpu_jobs: auto18 needs .whl/head.tgz and .whl/spaces/" >&2; exit 2; }
    HEAD_DIR=/tmp/head; rm -rf "$HEAD_DIR"; mkdir -p "$HEAD_DIR"; tar -xzf .whl/head.tgz -C "$HEAD_DIR"
    NEW_DIR=$(pwd); SP=$(ls "$NEW_DIR"/.whl/spaces/*.json.gz)
    # the stand-in, new code only (HEAD has no "auto"), one core, beside bench_mpi
    ( for s in 1 2 3; do for m in off auto on; do
        echo "seed $s spread $m"; timeout 120 "$PY" -m scripts.bench_bo_pick --workers 32 --results 1280 --seed $s --spread $m
      done; done > "$OUT/standin.jsonl" 2>&1 ) &
    standin=$!
    for v in head new; do
      d=$HEAD_DIR; [ $v = new ] && d=$NEW_DIR
      ( cd "$d" && PYTHONPATH=/tmp/site:$d timeout 150 "$PY" -m scripts.bench_mpi --params 2 --side 1000 \
          --trials-per-rank 40 --ranks 32 --repeats 2 --modes central --techniques default --mpirun mpirun \
          --mpirun-flags "$MF" --json "$OUT/mpi32_$v.json" > "$OUT/mpi32_$v.log" 2>&1 ); echo "mpi $v rc=$?"
    done
    wait "$standin"
    pids=()
    for v in head new; do
      d=$HEAD_DIR; [ $v = new ] && d=$NEW_DIR
      for f in $SP; do
        sp=$(basename "$f" .json.gz)
        ( cd "$d" && PYTHONPATH=/tmp/site:$d timeout $(( $(left) - 20 )) "$PY" -m scripts.bench_search "$f" --space file \
            --techniques default --repeats ${W32_REPEATS:-20} --jobs 3 --workers 32 --model-retirement on --peers "" \
            --random-repeats 20 --json-out "$OUT/w32_${v}_$sp.json" > "$OUT/w32_${v}_$sp.log" 2>&1 ) &
        pids+=($!)
        ( cd "$d" && PYTHONPATH=/tmp/site:$d timeout $(( $(left) - 20 )) "$PY" -m scripts.bench_search "$f" --space file \
            --techniques default --repeats 3 --jobs 2 --workers 1,8 --peers "" \
            --random-repeats 20 --json-out "$OUT/w18_${v}_$sp.json" > "$OUT/w18_${v}_$sp.log" 2>&1 ) &
        pids+=($!)
      done
    done
    wait "${pids[@]}"
    # one archive: the device returns only a few files per call
    tar -czf /tmp/auto18.tgz -C "$OUT" . && rm -f "$OUT"/*.json "$OUT"/*.log "$OUT"/*.jsonl && mv /tmp/auto18.tgz "$OUT/"
    for v in head new; do tar -xzOf "$OUT/auto18.tgz" ./mpi32_$v.log | tail -1; done
    echo "rc=0 after $(( $(date +%s) - t0 ))s" ;;
  mpi)
    timeout $(( $(left) - 5 )) "$PY" -m scripts.bench_mpi --params 2 --side 1000 --trials-per-rank 40 \
      --ranks ${MPI_RANKS:-1,8,32} --repeats 2 --modes central --techniques default --mpirun mpirun --mpirun-flags "$MF" \
      --json "$OUT/mpi.json" > "$OUT/mpi.log" 2>&1
    echo "rc=$?"; tail -20 "$OUT/mpi.log" ;;
  *) echo "gpu_jobs: unknown job '$job'; name ot, pair, zqpf, pf17, stage17, stage17s, stage17n, auto18 or mpi" >&2; exit 2 ;;
esac
