"""Does one GPU of a deployment hold its share of the model, and if not, what would: the one-GPU-group memory rule
(`advisor.model.cost.memory.budget_for`: usable memory less weights, the profiling run's activations and the
runtime, the rest KV cache), with the weights this deployment puts on a GPU (the routed experts over the EP group,
the rest over the rank's tp GPUs: `scale.rank_weight_bytes`). Each DP rank holds its own requests' KV cache, the
MTP layer's included, as one GPU group does.
"""

from __future__ import annotations

from dataclasses import replace

from advisor.errors import InputError
from advisor.model.cost import memory
from advisor.model.cost.speculative import Setup
from advisor.model.gpu.quant_support import check_weights
from advisor.model.parallel.deployment import Deployment
from advisor.model.parallel.scale import rank_weight_bytes
from advisor.vllm.methods import TEXT_LOOKUP

SIXTEEN_BIT = ("bf16", "fp16")
MORE_GPUS = (2, 3, 4, 6, 8)  # the multiples of the instance tried when its GPUs do not hold the weights


def rank_weights(model, dtype: str, d: Deployment) -> float:
    """One GPU's share of a model's weights in this deployment, bytes (`scale.rank_weight_bytes`)."""
    moe = model.moe_layers > 0
    return rank_weight_bytes(model, dtype, d.tensor_parallel_size, d.moe_shards if moe else 1,
                             d.redundant_experts if moe else 0)


def weights(setup: Setup, d: Deployment, dtype: str | None = None) -> tuple[float, float]:
    """(target, drafter) weights per GPU, bytes; `dtype` other than the served one re-prices both (an MTP layer
    ships in the target's checkpoint, quantized with it). A text lookup has no drafter weights."""
    target = rank_weights(setup.target, dtype or setup.target_cost.weight_dtype, d)
    if setup.draft is None or setup.method in TEXT_LOOKUP:
        return target, 0.0
    draft_dtype = dtype if dtype and setup.draft.kind == "mtp_head" else setup.draft_cost.weight_dtype
    return target, rank_weights(setup.draft, draft_dtype, d)


def budget(s, setup: Setup, d: Deployment, k: int, dtype: str | None = None) -> memory.MemoryBudget:
    """One GPU's memory at draft length k (k = 0: the target alone), the deployment's weights on it."""
    target, draft = weights(setup, d, dtype)
    return memory.budget_for(setup, s.hardware, k, prompt_len=s.prompt_len, out_len=s.out_len,
                             gpu_memory_utilization=s.gpu_memory_utilization, target_weights=target,
                             draft_weights=draft)


def what_fits(s, setup: Setup, d: Deployment) -> str:
    """Where the target alone does not fit: why in numbers, then what would, FP8 weights for a 16-bit checkpoint
    (vLLM's online --quantization fp8, where the GPU runs it) and the fewest more GPUs at the same layout (more DP
    ranks for an MoE target, whose experts spread over them; more tensor parallelism for a dense one, whose DP ranks
    are replicas); "" when it fits."""
    b = budget(s, setup, d, 0)
    if b.fits:
        return ""
    dtype = setup.target_cost.weight_dtype
    gb = lambda n: f"{n / 1e9:.1f} GB"  # noqa: E731
    lines = [f"{setup.target.name} ({dtype}) does not fit: {b.reason().split(': spread')[0]} per GPU"]
    options = []
    if dtype in SIXTEEN_BIT and _runs_fp8(s, setup):
        fp8 = budget(s, setup, d, 0, "fp8")
        if fp8.fits:
            options.append(f"FP8 fits (--quantization fp8: {gb(fp8.target_weights)} of weights per GPU)")
    bigger = _bigger(s, setup, d)
    if bigger is not None:
        more, b2 = bigger
        layout = (f"--data-parallel-size {more.data_parallel_size}" if more.data_parallel_size != d.data_parallel_size
                  else f"--num-gpus {more.tensor_parallel_size}")
        nodes = f" over {more.nodes} nodes" if more.nodes > 1 else ""
        options.append(f"{more.gpus} GPUs fit at {dtype} ({layout}{nodes}"
                       f": {gb(b2.target_weights)} per GPU)")
    lines.append(" or ".join(options) if options else "neither FP8 nor up to 8x the GPUs fits")
    return ": ".join(lines)


def _runs_fp8(s, setup: Setup) -> bool:
    try:
        check_weights("fp8", s.hardware, setup.target.name)
    except InputError:
        return False
    return True


def _bigger(s, setup: Setup, d: Deployment):
    """The smallest multiple of the instance, at the same GPUs per node, whose share fits; None when none does."""
    moe = setup.target.moe_layers > 0
    for m in MORE_GPUS:
        if moe:
            more = replace(d, data_parallel_size=d.data_parallel_size * m, nodes=d.nodes * m)
        elif d.tensor_parallel_size * m <= d.gpus_per_node:
            more = replace(d, tensor_parallel_size=d.tensor_parallel_size * m)
        else:
            return None
        b = budget(s, replace(setup, tp=more.tensor_parallel_size), more, 0)
        if b.fits:
            return more, b
    return None
