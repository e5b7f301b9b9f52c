"""GPU memory: does the pair fit, and how many sequences can run at once with and without speculation?

vLLM gives each instance `gpu_memory_utilization` of the GPU. From that it subtracts the weights and the peak
activations of a profiling run; what is left becomes the KV cache, in 16-token blocks. With a draft model both
models' layers draw KV blocks from that one pool, so each token costs target + draft KV bytes, and the draft's
weights come out of the same budget. Each running sequence also holds slots for its drafts past its own tokens
(`advisor.vllm.defaults.lookahead_slots`: k + 1 for DFlash). Concurrency = KV budget / KV bytes per sequence.

Not every layer's cache grows with the sequence. vLLM's hybrid KV-cache manager frees a sliding-window (or
chunked-local) layer's blocks once they leave its window, but admits a request only with room for its window plus
every token in flight (vllm/v1/kv_cache_interface.py `SlidingWindowSpec.max_admission_blocks_per_request`:
min(window - 1 + max_in_flight_tokens, max_model_len) tokens + 1 block; `ChunkedLocalAttentionSpec` alike with the
chunk; applied per request in vllm/v1/core/single_type_kv_cache_manager.py `get_num_blocks_to_allocate`). With
vLLM's defaults max_in_flight_tokens is 2 x max_num_batched_tokens (async scheduling), so the window caps memory only
for requests longer than that. Linear-attention layers hold a constant state per request.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.model.cost.speculative import Setup
from advisor.model.gpu.hardware import GIB, Hardware
from advisor.model.shape.modelspec import ModelSpec
from advisor.model.shape.quantization import kv_bytes_per_element
from advisor.vllm.defaults import (
    BLOCK_TOKENS,
    GPU_MEMORY_UTILIZATION,
    MAX_NUM_BATCHED_TOKENS,
    MAX_NUM_SEQS,
    lookahead_slots,
)
from advisor.vllm.runner import async_scheduling_default

RUNTIME_RESERVE_BYTES = 1.0 * GIB  # CUDA context, CUDA-graph pool, NCCL buffers: outside the profiled peak


def activation_peak_bytes(model: ModelSpec, tp: int = 1, max_num_batched_tokens: int = MAX_NUM_BATCHED_TOKENS,
                          max_num_seqs: int = MAX_NUM_SEQS) -> float:
    """Peak of vLLM's profiling forward (`gpu_model_runner.profile_run`): max_num_batched_tokens tokens through the
    widest layer (hidden + the gate/up output, bf16) plus fp32 logits for max_num_seqs sequences (the sampler's
    dummy run)."""
    routed = model.intermediate_size * model.experts_per_token + model.shared_expert_intermediate_size
    mlp = max(routed, model.dense_intermediate_size if model.dense_layers else 0)
    widest = (2 * model.hidden_size + 2 * mlp / tp) * 2.0
    logits = max_num_seqs * model.logits_bytes_per_row()
    return max_num_batched_tokens * widest + logits


# Extra state copies a hybrid model's linear-attention layers keep per request: with prefix caching on (vLLM's
# default for hybrid models, vllm/config/model.py `is_prefix_caching_supported`) mamba_cache_mode becomes "align"
# (vllm/model_executor/models/config.py `MambaModelConfig`), which holds 2 + num_speculative_tokens state blocks
# (vllm/v1/kv_cache_interface.py `MambaSpec.max_memory_usage_bytes`).
STATE_SLOTS = 2
def in_flight_tokens(method: str, k: int, max_num_batched_tokens: int) -> int:
    """vLLM's max_in_flight_tokens (vllm/config/vllm.py): max_concurrent_batches x max_num_batched_tokens, two
    batches under async scheduling, one where vLLM turns it off for the method (`async_scheduling_default`; the GPU's
    rule, which `vllm serve` sizes its cache by)."""
    return (1 if k > 0 and not async_scheduling_default(method, cpu=False) else 2) * max_num_batched_tokens


def kv_bytes_per_sequence_per_gpu(model: ModelSpec, tp: int, tokens: int, *, kv_dtype_bytes: float = 2.0,
                                  in_flight: int = 2 * MAX_NUM_BATCHED_TOKENS, num_spec: int = 0) -> float:
    """Cache one `tokens`-token request holds on one GPU: full-attention layers every token, windowed layers at most
    their admission cap (see the module docstring), linear-attention layers (2 + k) copies of their state, sharded
    by TP (`MambaStateShapeCalculator.gated_delta_net_state_shape` divides the heads)."""
    blocks = math.ceil(tokens / BLOCK_TOKENS)
    held, windowed = model.full_layers * tokens, 0
    if model.sliding_layers:
        cap = math.ceil(min(model.sliding_window - 1 + in_flight, tokens) / BLOCK_TOKENS) + 1
        windowed += model.sliding_layers * min(blocks, cap) * BLOCK_TOKENS
    if model.chunked_layers:
        cap = math.ceil(min(model.attention_chunk + in_flight, tokens) / BLOCK_TOKENS)
        windowed += model.chunked_layers * min(blocks, cap) * BLOCK_TOKENS
    state = model.linear_state_bytes(num_spec) / tp * (STATE_SLOTS + num_spec) if model.linear_layers else 0.0
    return (held * model.kv_row_bytes(kv_dtype_bytes, tp) + windowed * model.kv_row_bytes(kv_dtype_bytes, tp, False)
            + model.extra_cache_bytes(tokens, kv_dtype_bytes, tp) + state)


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    """Per GPU, in bytes, for one vLLM instance."""

    usable: float  # gpu memory × gpu_memory_utilization
    target_weights: float
    draft_weights: float  # 0 for ngram
    reserve: float  # activations peak + runtime
    kv_per_token_baseline: float  # KV (and state) per request / its tokens: per token on average at this length
    kv_per_token_spec: float  # target + draft KV per token
    tokens_per_sequence: int  # prompt + output (+ lookahead), rounded up to whole blocks
    tokens_per_sequence_spec: int
    max_concurrency_baseline: int
    max_concurrency_spec: int

    @property
    def kv_budget_baseline(self) -> float:
        return max(self.usable - self.target_weights - self.reserve, 0.0)

    @property
    def kv_budget_spec(self) -> float:
        return max(self.usable - self.target_weights - self.draft_weights - self.reserve, 0.0)

    @property
    def fits(self) -> bool:
        """The target alone can serve at least one full-length request."""
        return self.max_concurrency_baseline >= 1

    @property
    def fits_spec(self) -> bool:
        return self.max_concurrency_spec >= 1

    def reason(self) -> str:
        """Why it does not fit, in numbers; empty when both fit."""
        gb = lambda b: f"{b / 1e9:.1f} GB"  # noqa: E731
        if self.target_weights + self.reserve >= self.usable:
            return (f"the target's weights ({gb(self.target_weights)} per GPU) and runtime ({gb(self.reserve)}) exceed "
                    f"the usable {gb(self.usable)} by {gb(self.target_weights + self.reserve - self.usable)}: spread "
                    "it over more GPUs (--num-gpus), or serve a checkpoint with fewer bytes per weight")
        if not self.fits:
            return (f"target weights {gb(self.target_weights)} + runtime {gb(self.reserve)} leave "
                    f"{gb(self.kv_budget_baseline)} of the usable {gb(self.usable)} for KV, less than one "
                    f"{self.tokens_per_sequence}-token request ({gb(self.tokens_per_sequence * self.kv_per_token_baseline)})")
        if not self.fits_spec:
            return (f"adding the draft ({gb(self.draft_weights)} weights, KV {self.kv_per_token_spec / 1e3:.0f} KB/token "
                    f"in all) leaves no room for one {self.tokens_per_sequence_spec}-token request")
        return ""


def _round_to_blocks(tokens: int) -> int:
    return math.ceil(tokens / BLOCK_TOKENS) * BLOCK_TOKENS


def budget_for(setup: Setup, hw: Hardware, k: int, *, prompt_len: int, out_len: int,
               gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION, target_weights: float | None = None,
               draft_weights: float | None = None) -> MemoryBudget:
    """`budget` for a Setup: each model's weights in the dtype its EngineCost streams them in, and the KV cache in
    the target engine's --kv-cache-dtype, so the time and the memory of a step always agree on the bytes.
    `target_weights`, `draft_weights`: bytes per GPU where a deployment splits them otherwise than over tp (expert
    parallelism: advisor.scale.fit); None: each model's weights over tp."""
    draft_dtype = setup.draft_cost.weight_dtype if setup.draft_cost is not None else "bf16"
    return budget(setup.target, setup.draft, setup.method, k, hw, prompt_len=prompt_len, out_len=out_len,
                  tp=setup.tp, gpu_memory_utilization=gpu_memory_utilization,
                  weight_dtype=setup.target_cost.weight_dtype, draft_weight_dtype=draft_dtype,
                  max_num_batched_tokens=setup.target_cost.max_num_batched_tokens,
                  max_num_seqs=setup.target_cost.max_num_seqs, kv_cache_dtype=setup.target_cost.kv_cache_dtype,
                  target_weights=target_weights, draft_weights=draft_weights)


def budget(target: ModelSpec, draft: ModelSpec | None, method: str, k: int, hw: Hardware, *,
           prompt_len: int, out_len: int, tp: int = 1, gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION,
           weight_dtype: str = "bf16", draft_weight_dtype: str = "bf16",
           max_num_batched_tokens: int = MAX_NUM_BATCHED_TOKENS, max_num_seqs: int = MAX_NUM_SEQS,
           kv_cache_dtype: str = "auto", target_weights: float | None = None,
           draft_weights: float | None = None) -> MemoryBudget:
    """One vLLM instance's memory for the pair at draft length k. vLLM loads a draft model unquantized unless the
    speculative config says otherwise, hence bf16 by default; EAGLE heads are bf16. One --kv-cache-dtype covers
    both models' caches (they share the engine's CacheConfig). `target_weights`, `draft_weights`: as `budget_for`."""
    kv_bytes = kv_bytes_per_element(kv_cache_dtype)
    usable = hw.memory_bytes * gpu_memory_utilization
    drafted = draft is not None and method != "ngram"
    target_w = target.weight_bytes(weight_dtype) / tp if target_weights is None else target_weights
    draft_w = (draft.weight_bytes(draft_weight_dtype) / tp if draft_weights is None else draft_weights) if drafted \
        else 0.0
    reserve = RUNTIME_RESERVE_BYTES + activation_peak_bytes(target, tp, max_num_batched_tokens, max_num_seqs)
    if drafted:
        reserve += activation_peak_bytes(draft, tp, max_num_batched_tokens, max_num_seqs)
    tokens = _round_to_blocks(prompt_len + out_len)
    anchor = draft.block.anchor_sampled if draft is not None and draft.block is not None else True
    tokens_spec = _round_to_blocks(prompt_len + out_len + lookahead_slots(method, k, anchor_sampled=anchor))

    def per_sequence(model: ModelSpec, length: int, spec_k: int) -> float:
        return kv_bytes_per_sequence_per_gpu(model, tp, length, kv_dtype_bytes=kv_bytes, num_spec=spec_k,
                                             in_flight=in_flight_tokens(method, spec_k, max_num_batched_tokens))

    seq_base = per_sequence(target, tokens, 0)
    seq_spec = per_sequence(target, tokens_spec, k) + (per_sequence(draft, tokens_spec, k) if drafted else 0.0)
    base_budget = max(usable - target_w - reserve, 0.0)
    spec_budget = max(usable - target_w - draft_w - reserve, 0.0)
    return MemoryBudget(
        usable=usable, target_weights=target_w, draft_weights=draft_w, reserve=reserve,
        kv_per_token_baseline=seq_base / tokens, kv_per_token_spec=seq_spec / tokens_spec,
        tokens_per_sequence=tokens, tokens_per_sequence_spec=tokens_spec,
        max_concurrency_baseline=int(base_budget // seq_base),
        max_concurrency_spec=int(spec_budget // seq_spec) if k > 0 else int(base_budget // seq_base),
    )
