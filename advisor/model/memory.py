"""GPU memory: does the pair fit, and how many sequences can run at once with and without speculation?

vLLM gives each instance `gpu_memory_utilization` of the GPU. From that it subtracts the weights and the peak
activations of a profiling run; what is left becomes the KV cache, in 16-token blocks. With a draft model both
models' layers draw KV blocks from that one pool, so each token costs target + draft KV bytes, and the draft's
weights come out of the same budget. Each running sequence also holds k lookahead slots for its drafts
(k + 1 for draft_model: `max_num_new_slots_for_drafting`). Concurrency = KV budget / KV bytes per sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.model.hardware import GIB, Hardware
from advisor.model.modelspec import ModelSpec
from advisor.model.speculative import Setup
from advisor.vllm import BLOCK_TOKENS, MAX_NUM_BATCHED_TOKENS, MAX_NUM_SEQS, lookahead_slots

RUNTIME_RESERVE_BYTES = 1.0 * GIB  # CUDA context, CUDA-graph pool, NCCL buffers: outside the profiled peak


def activation_peak_bytes(model: ModelSpec, tp: int = 1, max_num_batched_tokens: int = MAX_NUM_BATCHED_TOKENS,
                          max_num_seqs: int = MAX_NUM_SEQS) -> float:
    """Peak of vLLM's profiling forward (`gpu_model_runner.profile_run`): max_num_batched_tokens tokens through the
    widest layer (hidden + the gate/up output, bf16) plus fp32 logits for max_num_seqs sequences (the sampler's
    dummy run)."""
    widest = (2 * model.hidden_size + 2 * model.intermediate_size * model.experts_per_token / tp) * 2.0
    logits = max_num_seqs * model.logits_bytes_per_row()
    return max_num_batched_tokens * widest + logits


def kv_bytes_per_token_per_gpu(model: ModelSpec, tp: int) -> float:
    """TP shards KV heads across GPUs; with fewer KV heads than GPUs each GPU keeps a replica of one head."""
    heads_per_gpu = max(model.num_kv_heads / tp, 1.0)
    return 2 * model.num_layers * heads_per_gpu * model.head_dim * 2.0


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    """Per GPU, in bytes, for one vLLM instance."""

    usable: float  # gpu memory × gpu_memory_utilization
    target_weights: float
    draft_weights: float  # 0 for ngram
    reserve: float  # activations peak + runtime
    kv_per_token_baseline: float
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
                    "it over more GPUs (--num-gpus), or use smaller weights (fp8)")
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
               gpu_memory_utilization: float = 0.9) -> MemoryBudget:
    """`budget` for a Setup: each model's weights in the dtype its EngineCost streams them in, so the time and the
    memory of a step always agree on the bytes."""
    draft_dtype = setup.draft_cost.weight_dtype if setup.draft_cost is not None else "bf16"
    return budget(setup.target, setup.draft, setup.method, k, hw, prompt_len=prompt_len, out_len=out_len,
                  tp=setup.tp, gpu_memory_utilization=gpu_memory_utilization,
                  weight_dtype=setup.target_cost.weight_dtype, draft_weight_dtype=draft_dtype,
                  max_num_batched_tokens=setup.target_cost.max_num_batched_tokens,
                  max_num_seqs=setup.target_cost.max_num_seqs)


def budget(target: ModelSpec, draft: ModelSpec | None, method: str, k: int, hw: Hardware, *,
           prompt_len: int, out_len: int, tp: int = 1, gpu_memory_utilization: float = 0.9,
           weight_dtype: str = "bf16", draft_weight_dtype: str = "bf16",
           max_num_batched_tokens: int = MAX_NUM_BATCHED_TOKENS, max_num_seqs: int = MAX_NUM_SEQS) -> MemoryBudget:
    """One vLLM instance's memory for the pair at draft length k. vLLM loads a draft model unquantized unless the
    speculative config says otherwise, hence bf16 by default; EAGLE heads are bf16."""
    usable = hw.memory_bytes * gpu_memory_utilization
    target_w = target.weight_bytes(weight_dtype) / tp
    draft_w = draft.weight_bytes(draft_weight_dtype) / tp if draft is not None and method != "ngram" else 0.0
    reserve = RUNTIME_RESERVE_BYTES + activation_peak_bytes(target, tp, max_num_batched_tokens, max_num_seqs)
    if draft is not None and method != "ngram":
        reserve += activation_peak_bytes(draft, tp, max_num_batched_tokens, max_num_seqs)
    kv_base = kv_bytes_per_token_per_gpu(target, tp)
    kv_spec = kv_base + (kv_bytes_per_token_per_gpu(draft, tp) if draft is not None and method != "ngram" else 0.0)
    tokens = _round_to_blocks(prompt_len + out_len)
    tokens_spec = _round_to_blocks(prompt_len + out_len + lookahead_slots(method, k))
    base_budget = max(usable - target_w - reserve, 0.0)
    spec_budget = max(usable - target_w - draft_w - reserve, 0.0)
    return MemoryBudget(
        usable=usable, target_weights=target_w, draft_weights=draft_w, reserve=reserve,
        kv_per_token_baseline=kv_base, kv_per_token_spec=kv_spec,
        tokens_per_sequence=tokens, tokens_per_sequence_spec=tokens_spec,
        max_concurrency_baseline=int(base_budget // (kv_base * tokens)),
        max_concurrency_spec=int(spec_budget // (kv_spec * tokens_spec)) if k > 0 else int(base_budget // (kv_base * tokens)),
    )
