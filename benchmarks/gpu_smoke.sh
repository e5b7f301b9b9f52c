#!/usr/bin/env bash
# Estimate: about 10 minutes on one H200 with cold caches (torch.compile and CUDA-graph captures at every start):
# 12 engine starts of this 67 MB pair at ~45 s each (15-75 s) (5 for calibrate: the target, one per uniform
# verification width q = 2..4 (--max-k 3: none wider than max_k + 1), the draft without graphs; 7 for validate: the
# baseline twice, draft_model and ngram at two ks, the synchronous baseline ngram is compared with) plus about a
# minute of measuring. The first step prints this plan from the code that starts the engines
# (benchmarks/gpu_smoke_plan.py). Not yet timed on an H200.
# The GPU path end to end on one GPU: calibrate a generated Llama-style pair with dummy weights, validate a few points
# against real vLLM runs, then ALWAYS print what ran (model runner, CUDA-graph mode, async scheduling, attention
# backend, block size), each engine's start-up seconds and the fit's held-out error, whichever step failed (a
# calibration over its 15% held-out gate included). Needs `pip install 'specadvisor[vllm,nvml]'` (vLLM 0.32 for CUDA).
#   benchmarks/gpu_smoke.sh [OUT_DIR]          (default: a new temporary folder; everything it writes stays there)
# vLLM's INFO log and every step's stderr go to OUT_DIR/logs/<step>.log. Each engine takes SMOKE_GPU_SHARE of the GPU
# (default 0.5) so one closing beside the next fits. SMOKE_CLI replaces the specadvisor command (tests: a stand-in
# engine); SMOKE_MIN_SECONDS the seconds each model is measured at least (default 5).
set -uo pipefail  # not -e: a failed step must not cost the summary
OUT=${1:-$(mktemp -d -t specadvisor-gpu-smoke-XXXX)}
SHARE=${SMOKE_GPU_SHARE:-0.5}
PY=${PYTHON:-python}
read -r -a CLI <<< "${SMOKE_CLI:-$PY -m advisor.cli.app}"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$OUT/logs"
export VLLM_LOGGING_LEVEL=${VLLM_LOGGING_LEVEL:-INFO} VLLM_LOGGING_STREAM=ext://sys.stderr

echo "== specadvisor GPU smoke test: about 10 minutes on one H200 with cold caches; results in $OUT"
start=$(date +%s)
steps=()
step() {  # step NAME COMMAND...: stdout to the console, stderr (vLLM's log) to logs/NAME.log; the tail on failure
    local name=$1 began rc
    shift
    began=$(date +%s)
    echo "== $name"
    "$@" 2> "$OUT/logs/$name.log"
    rc=$?
    steps+=("$name=$rc:$(( $(date +%s) - began ))")
    if [ "$rc" -ne 0 ]; then
        echo "-- $name exited $rc; the last lines of $OUT/logs/$name.log:"
        tail -n 15 "$OUT/logs/$name.log"
    fi
    return 0
}
CAL_ARGS=(--target "$OUT/pair/target" --draft "$OUT/pair/draft" --dummy-weights --max-batch 16 --max-context 1024
          --max-k 3 --repeats 3 --min-seconds "${SMOKE_MIN_SECONDS:-5}" --gpu-memory-utilization "$SHARE"
          --out "$OUT/cal.json")
VAL_ARGS=(--out "$OUT/validation" --scales 0.1 --ks 1,3 --batches 1,8 --prompt-lens 128 --out-lens 64
          --calibration "$OUT/cal.json" --gpu-memory-utilization "$SHARE")
step plan "$PY" "$HERE/gpu_smoke_plan.py" calibrate "${CAL_ARGS[@]}" -- validate "${VAL_ARGS[@]}"
step versions "$PY" -c "import vllm, torch; print(f'vLLM {vllm.__version__}, torch {torch.__version__}, '
    f'{torch.cuda.get_device_name(0) if torch.cuda.is_available() else \"no CUDA device\"}')"
step make-test-pair "${CLI[@]}" make-test-pair --out "$OUT/pair" --scale 0.1
step calibrate "${CLI[@]}" calibrate "${CAL_ARGS[@]}"
step validate "${CLI[@]}" validate "${VAL_ARGS[@]}"
"$PY" "$HERE/gpu_smoke_summary.py" "$OUT" "${steps[@]}"
echo "== done in $(( $(date +%s) - start )) s; logs in $OUT/logs"
