"""How vLLM 0.32 runs a parallel (block) drafter: DFlash, DSpark, and an EAGLE-3 head with parallel_drafting
(P-EAGLE). Each drafts all k tokens in one forward instead of k chained ones. Paths under vllm/.

- DFlash (v1/worker/gpu/spec_decode/dflash/speculator.py `DFlashSpeculator.propose`; V1: v1/spec_decode/dflash.py):
  the step's context tokens (k + 1 a request at decode: the verified ones) are projected into the draft's K/V
  (`precompute_and_store_context_kv`), then one forward over 1 + k queries a request (the bonus token and k mask
  tokens), non-causal within the block, sampling k rows a request. Model Runner V2 replays it as one FULL CUDA
  graph (FULL_DECODE_ONLY; "PIECEWISE cudagraphs are not supported for dflash") where the draft's attention
  backend supports uniform batches, else eagerly.
- DSpark (v1/worker/gpu/spec_decode/dspark/speculator.py, a DFlashSpeculator): the same, over k queries a request
  when the anchor is the first prediction (`sample_from_anchor`, its default; else 1 + k), then k sequential Markov
  steps on the logits inside the same graph. Model Runner V2 only (config/vllm.py
  `_get_v1_model_runner_unsupported_features`: "dspark speculative decoding").
- P-EAGLE (v1/spec_decode/llm_base_proposer.py `propose` with `parallel_drafting`): the EAGLE first pass over the
  k + 1 verified tokens plus k - 1 placeholder ("pard") tokens a request, sampling k rows, and no further pass.
  Model Runner V2 refuses it ("parallel drafting for EAGLE speculative decoding"), so the engine runs the V1 runner,
  whose drafter graphs are PIECEWISE (`initialize_cudagraph_keys`), never full.
"""

from __future__ import annotations

PARALLEL_METHODS = ("dflash", "dspark")  # vLLM forces parallel_drafting for these (config/speculative.py)


def parallel(method: str, parallel_drafting: bool = False) -> bool:
    """Whether `method` drafts all its tokens in one forward: DFlash and DSpark always, EAGLE-3 with
    parallel_drafting (P-EAGLE)."""
    return method in PARALLEL_METHODS or (method == "eagle3" and parallel_drafting)


def query_tokens(method: str, k: int, *, anchor_sampled: bool = True) -> int:
    """Tokens a request brings to the one draft forward at draft length k: DFlash 1 + k, DSpark k (1 + k without
    sample_from_anchor), P-EAGLE the k + 1 verified tokens and k - 1 placeholders."""
    if method == "dflash" or (method == "dspark" and not anchor_sampled):
        return 1 + k
    if method == "dspark":
        return k
    return 2 * k


def context_tokens(k: int) -> int:
    """The target's tokens a request's hidden states come from at a decode step: the k + 1 it just verified."""
    return k + 1


def new_slots(method: str, k: int, parallel_drafting: bool = False) -> int:
    """`SpeculativeConfig.max_num_new_slots_for_drafting` (config/speculative.py, its docstring's table): the
    scheduler slots a request takes for drafting beyond its query: DFlash K, DSpark and P-EAGLE K - 1, a draft model
    1 (PARD K), EAGLE, MTP and n-gram 0."""
    if method == "dflash":
        return k
    if method == "draft_model":
        return k if parallel_drafting else 1
    if parallel(method, parallel_drafting):
        return k - 1  # k >= 1 (numbers or numpy arrays of them)
    return 0


def lookahead(method: str, k: int, *, anchor_sampled: bool = True, text_lookup: bool = False) -> int:
    """`VllmConfig.num_lookahead_tokens` (config/vllm.py): KV slots past the verified tokens a drafter writes: DFlash
    (and DSpark without sample_from_anchor) k + 1, the other model drafters k, a text lookup none."""
    if k == 0 or text_lookup:
        return 0
    return k + 1 if method == "dflash" or (method == "dspark" and not anchor_sampled) else k


def trained_length(method: str, block_size: int, *, anchor_sampled: bool = True) -> int | None:
    """The longest k a block drafter was trained to draft: a DFlash block of B holds the bonus and B - 1 mask
    positions (the recipes serve block 16 at k = 15: ../shared/reference/model-configs/README-2026.md), a DSpark one
    drafting from its anchor B; None where no block is stated (P-EAGLE). vLLM checks none of this: only
    Qwen3-Omni's DSpark (config/speculative.py `_validate_qwen3_omni_dspark`) requires k == block_size."""
    if block_size <= 0 or method not in PARALLEL_METHODS:
        return None
    return block_size if method == "dspark" and anchor_sampled else block_size - 1


def v1_only(method: str, parallel_drafting: bool = False) -> bool:
    """P-EAGLE runs only on the V1 model runner (config/vllm.py `_get_v2_model_runner_unsupported_features`)."""
    return method == "eagle3" and parallel_drafting


def v2_only(method: str, *, mixed_windows: bool = False) -> bool:
    """DSpark, and a DFlash draft mixing sliding and full layers (two draft KV groups), run only on Model Runner V2
    (config/vllm.py `_get_v1_model_runner_unsupported_features`)."""
    return method == "dspark" or (method == "dflash" and mixed_windows)


# Attention backends (vLLM's AttentionBackendEnum names) whose class says `supports_non_causal()`: a DFlash or DSpark
# draft with a non-causal layer must run on one (v1/attention/backend.py `validate_configuration`: "non-causal
# attention not supported"; v1/worker/gpu/spec_decode/dflash/utils.py `load_dflash_model` picks the draft's backend
# with use_non_causal, from the speculative config's attention_backend when it names one). Read from
# v1/attention/backends/*.py: flash_attn, flashinfer, flex_attention, triton_attn, rocm_attn, rocm_segmented_attn,
# rocm_aiter_fa, cpu_attn and the two diffkv subclasses; not triton_flash_attn or rocm_aiter_unified_attn, nor the
# MLA backends a GQA draft never runs on.
NON_CAUSAL_BACKENDS = frozenset({"FLASH_ATTN", "FLASH_ATTN_DIFFKV", "FLASHINFER", "FLEX_ATTENTION", "TRITON_ATTN",
                                 "TRITON_ATTN_DIFFKV", "ROCM_ATTN", "ROCM_SEGMENTED_ATTN", "ROCM_AITER_FA", "CPU_ATTN"})


def drafts_fixed_k(method: str) -> bool:
    """Whether the method's speculator drafts its configured k at every step whatever a per-batch schedule says:
    DFlash and DSpark on Model Runner V2 size their query block once (v1/worker/gpu/spec_decode/dflash/speculator.py:
    num_query_per_req from num_speculative_steps at construction; `propose` leaves its num_speculative_tokens
    argument unused), so num_speculative_tokens_per_batch_size would shorten only the verification."""
    return method in PARALLEL_METHODS
