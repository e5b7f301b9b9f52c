"""The host's share of a vLLM engine step, which async scheduling hides and a synchronous engine waits for:
`python benchmarks/bench_host_step.py [BATCH ...]`.

Drives vLLM's own V1 `Scheduler` (the one `vllm serve` runs, on any device) through decode steps of B running
requests: `schedule()` then `update_from_output()` with one sampled token per request, no model, no device. That is
the engine core's per-step work between two forward passes (vllm/v1/engine/core.py `step`): a synchronous engine
(vLLM 0.32 runs ngram and suffix so, `advisor.vllm.runner.async_scheduling_default`) leaves the GPU idle for it, and an
async one runs it under the previous step (`advisor.vllm.runner.sync_penalty`). Prefix caching is on, as in `vllm
serve`. Prints the median and the 10th percentile per batch (the low percentile is the least disturbed by other work on
the machine) and the line a + b·B through the 10th percentiles of the batches up to 32, which `EngineCost`'s
`host_step_overhead` and `host_seq_overhead` default to.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import tempfile
import time

import numpy as np

from calibration.engine.testpair import TinyArch, hf_config

STEPS, SKIPPED = 300, 50  # decode steps timed per batch; the first ones (chunked prefill) are skipped


def scheduler():
    """vLLM's Scheduler for a tiny Llama config, with prefix caching and its block hasher, as the engine builds it."""
    import torch
    from vllm.config import CacheConfig, ModelConfig, SchedulerConfig, VllmConfig
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
    from vllm.v1.structured_output import StructuredOutputManager

    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(hf_config(TinyArch(), 2), f)
    config = VllmConfig(model_config=ModelConfig(model=folder, skip_tokenizer_init=True, max_model_len=4096),
                        scheduler_config=SchedulerConfig(max_num_seqs=1024, max_num_batched_tokens=16384,
                                                         max_model_len=4096, is_encoder_decoder=False),
                        cache_config=CacheConfig(block_size=16))
    config.cache_config.num_gpu_blocks = 200_000
    spec = FullAttentionSpec(block_size=16, num_kv_heads=1, head_size=64, dtype=torch.bfloat16)
    kv = KVCacheConfig(num_blocks=200_000, kv_cache_tensors=[], kv_cache_groups=[KVCacheGroupSpec(["l0"], spec)])
    hash_fn = get_hash_fn_by_name(config.cache_config.prefix_caching_hash_algo)
    init_none_hash(hash_fn)
    build = lambda: Scheduler(config, kv, StructuredOutputManager(config), block_size=16, log_stats=True)  # noqa
    return build, get_request_block_hasher(16, hash_fn)


def step_times(batch: int) -> np.ndarray:
    """Seconds of schedule() + update_from_output() per decode step with `batch` requests running."""
    from vllm.sampling_params import SamplingParams
    from vllm.v1.outputs import ModelRunnerOutput
    from vllm.v1.request import Request

    build, hasher = scheduler()
    sched = build()
    for i in range(batch):
        sched.add_request(Request(str(i), list(range(1, 513)), SamplingParams(max_tokens=10**6, ignore_eos=True),
                                  None, arrival_time=0.0, block_hasher=hasher))
    times = []
    for _ in range(STEPS):
        start = time.perf_counter()
        out = sched.schedule()
        ids = list(out.num_scheduled_tokens)
        sched.update_from_output(out, ModelRunnerOutput(req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)},
                                                        sampled_token_ids=[[7] for _ in ids]))
        times.append(time.perf_counter() - start)
    return np.array(times[SKIPPED:])


def main(batches: list[int]) -> None:
    gc.disable()  # the engine core freezes its garbage collector too (vllm/v1/engine/core.py)
    low = {}
    for batch in batches:
        t = step_times(batch)
        low[batch] = float(np.percentile(t, 10))
        print(f"B={batch:4d}: median {np.median(t) * 1e6:8.0f} us, p10 {low[batch] * 1e6:8.0f} us", flush=True)
    small = [b for b in batches if b <= 32]
    if len(small) >= 2:
        b, a = np.polyfit(small, [low[x] for x in small], 1)
        print(f"p10 over B <= 32: {a * 1e6:.0f} us + {b * 1e6:.1f} us per request")


if __name__ == "__main__":
    main([int(b) for b in sys.argv[1:]] or [1, 4, 8, 16, 32, 128, 256])
