#!/usr/bin/env bash
# The GPU path end to end on one GPU, sized to fit in 10 minutes (not yet timed on one): calibrate a generated
# Llama-style pair with dummy weights, validate a few points against real vLLM runs, and print what vLLM ran (model
# runner, async scheduling, CUDA-graph mode) and the held-out errors. Needs `pip install 'specadvisor[vllm,nvml]'` (vLLM 0.32 for CUDA) and one GPU.
#   benchmarks/gpu_smoke.sh [OUT_DIR]          (default: a new temporary folder; everything it writes stays there)
# Engine starts dominate its time (9 of them: 2 for calibrate, 7 for validate, with the synchronous baseline n-gram
# is compared with); each engine takes SMOKE_GPU_SHARE of the GPU (default 0.5) so one closing beside the next fits.
set -euo pipefail
OUT=${1:-$(mktemp -d -t specadvisor-gpu-smoke-XXXX)}
SHARE=${SMOKE_GPU_SHARE:-0.5}
PY=${PYTHON:-python}
mkdir -p "$OUT"
cli() { "$PY" -m advisor.cli.app "$@"; }
export VLLM_LOGGING_LEVEL=${VLLM_LOGGING_LEVEL:-WARNING}

start=$(date +%s)
echo "== specadvisor GPU smoke test: results in $OUT"
"$PY" -c "import vllm, torch; print(f'vLLM {vllm.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name(0)}')"
cli make-test-pair --out "$OUT/pair" --scale 0.1
cli calibrate --target "$OUT/pair/target" --draft "$OUT/pair/draft" --dummy-weights --max-batch 16 \
    --max-context 1024 --max-k 3 --repeats 3 --min-seconds 5 --gpu-memory-utilization "$SHARE" --out "$OUT/cal.json"
cli validate --out "$OUT/validation" --scales 0.1 --ks 1,3 --batches 1,8 --prompt-lens 128 --out-lens 64 \
    --calibration "$OUT/cal.json" --gpu-memory-utilization "$SHARE"

"$PY" - "$OUT" <<'PY'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
cal = json.loads((out / "cal.json").read_text())
val = json.loads((out / "validation" / "validation.json").read_text())
def ran(c):
    return (f"runner {c.get('model_runner')}, async scheduling {c.get('async_scheduling')}, "
            f"CUDA graphs {c.get('cudagraph_mode')}, attention {c.get('attention_backend')}, "
            f"block {c.get('block_size')}")
print(f"\n== what ran on {cal['device'].get('gpu')} ({cal['hardware']}, vLLM {cal['vllm_version']})")
for role in ("target", "draft"):
    run = cal[role]
    print(f"calibrate {role}: {ran(run['engine'].get('vllm_config', {}))}")
    fit = run.get("fit") or {}
    if fit:
        print(f"  held-out error: median {100 * fit['heldout_median_error']:.1f}%, "
              f"worst {100 * fit['heldout_worst_error']:.1f}%")
for method, c in val.get("engine", {}).get("vllm_config", {}).items():
    print(f"validate {method}: {ran(c)}")
s = val.get("summary", {})
pct = lambda v: "n/a" if v is None else f"{100 * v:.1f}%"
print(f"validation: TPOT error median {pct(s.get('tpot_median_abs_error'))}, p90 {pct(s.get('tpot_p90_abs_error'))};"
      f" e2e error median {pct(s.get('e2e_median_abs_error'))}; failed points {s.get('failed_points')}")
print(f"n-gram: measured sync-scheduling host time {1e3 * val.get('costs', {}).get('sync_host', 0.0):.3f} ms/step, "
      f"bookkeeping {1e3 * val.get('costs', {}).get('spec_overhead', 0.0):.3f} ms/step")
PY
echo "== done in $(( $(date +%s) - start )) s; report: $OUT/validation/validation.md"
