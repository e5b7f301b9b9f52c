"""The flags to paste into vLLM 0.32: the `speculative_config` dict and the `vllm serve` line.

Every `speculative_config` this project builds (the one `recommend` pastes, the ones `acceptance measure` and
`validate` run) comes from here; keys per vllm/config/speculative.py.
"""

from __future__ import annotations

import json
import shlex

from advisor.vllm.defaults import NGRAM_LOOKUP_DEFAULT
from advisor.vllm.drafting import PARALLEL_METHODS
from advisor.vllm.methods import TEXT_LOOKUP


def speculative_dict(method: str, k: int, *, model: str | None = None,
                     lookup: tuple[int, int] = NGRAM_LOOKUP_DEFAULT, draft_tp: int = 1,
                     schedule: list[tuple[int, int, int]] | None = None, parallel_drafting: bool = False) -> dict:
    """The dict vLLM takes as --speculative-config (or LLM(speculative_config=...)); keys per
    vllm/config/speculative.py. `method` is always explicit: vLLM's inference from the model name is fragile.
    mtp and suffix take no model (`SpeculativeConfig.__post_init__` sets the target's, or "suffix"); suffix treats
    num_speculative_tokens as the most it drafts, and its default suffix_decoding_max_tree_depth (24) caps the
    prefix match plus the draft. An EAGLE-3 head trained to draft in parallel (P-EAGLE) needs "parallel_drafting":
    true, which vLLM sets itself for dflash and dspark."""
    config: dict = {"method": method}
    if model is not None:
        config["model"] = model
    config["num_speculative_tokens"] = max([k] + [run[2] for run in schedule or []])
    if method in ("ngram", "ngram_gpu"):
        config["prompt_lookup_min"], config["prompt_lookup_max"] = lookup
    if parallel_drafting and method not in PARALLEL_METHODS:
        config["parallel_drafting"] = True
    if method == "draft_model" and draft_tp > 1:
        config["draft_tensor_parallel_size"] = draft_tp  # vLLM requires draft TP == target TP for draft_model
    if schedule and len({run[2] for run in schedule}) > 1:
        config["num_speculative_tokens_per_batch_size"] = [list(run) for run in schedule]
    return config


def speculative_config(setup, k: int, schedule: list[tuple[int, int, int]] | None = None) -> dict:
    """What `recommend` pastes for a `speculative.Setup` at draft length k ({} at k = 0: speculation off). The model
    imports this module's facts, so the Setup is read by its attributes, not imported."""
    if k == 0:
        return {}
    method = setup.method
    if method == "eagle" and setup.draft is not None and setup.draft.lm_head_vocab is not None:
        method = "eagle3"  # a head with its own reduced vocabulary is an EAGLE-3 head
    drafts_with_model = setup.method not in TEXT_LOOKUP and setup.method != "mtp"
    model = setup.draft.hf_id if drafts_with_model and setup.draft is not None else None
    return speculative_dict(method, k, model=model, draft_tp=setup.tp, schedule=schedule,
                            parallel_drafting=setup.parallel_drafting)


def serve_command(setup, k: int, *, max_model_len: int, gpu_memory_utilization: float,
                  schedule: list[tuple[int, int, int]] | None = None,
                  defaults: tuple[int, int] | None = None) -> str:
    """`vllm serve` for the evaluated setup. `defaults`: vLLM's (max_num_batched_tokens, max_num_seqs) for the
    device (`batch_defaults`); the target's EngineCost limits that differ from them are pasted, so the engine runs
    with what was evaluated."""
    parts = ["vllm", "serve", setup.target.hf_id]
    if setup.tp > 1:
        parts += ["--tensor-parallel-size", str(setup.tp)]
    parts += ["--max-model-len", str(max_model_len), "--gpu-memory-utilization", f"{gpu_memory_utilization:g}"]
    # A quantized checkpoint's quantization_config is read by vLLM itself; a 16-bit one evaluated in fp8 was
    # evaluated under vLLM's online fp8 (--quantization fp8). --kv-cache-dtype: vllm/config/cache.py `CacheDType`.
    if setup.target.quantization is None and setup.target_cost.weight_dtype == "fp8":
        parts += ["--quantization", "fp8"]
    if setup.target_cost.kv_cache_dtype != "auto":
        parts += ["--kv-cache-dtype", setup.target_cost.kv_cache_dtype]
    if defaults is not None:
        cost = setup.target_cost
        if cost.max_num_seqs != defaults[1]:
            parts += ["--max-num-seqs", str(cost.max_num_seqs)]
        if cost.max_num_batched_tokens != defaults[0]:
            parts += ["--max-num-batched-tokens", str(cost.max_num_batched_tokens)]
    config = speculative_config(setup, k, schedule)
    if config:
        parts += ["--speculative-config", json.dumps(config, separators=(",", ":"))]
    return " ".join(shlex.quote(p) for p in parts)


# Every key vLLM 0.32's SpeculativeConfig takes (its init fields, vllm/config/speculative.py); any other is refused
# at start-up: vLLM's config classes forbid extra fields (vllm/config/utils.py `config`: ConfigDict(extra="forbid"))
SPECULATIVE_CONFIG_KEYS = frozenset({
    "enforce_eager", "num_speculative_tokens", "model", "method", "draft_tensor_parallel_size", "tensor_parallel_size",
    "quantization", "moe_backend", "attention_backend", "kv_cache_dtype", "max_model_len", "revision",
    "code_revision", "index_share_for_mtp_iteration", "disable_padded_drafter_batch", "disable_eagle_block_drop",
    "use_local_argmax_reduction", "use_heterogeneous_vocab", "prompt_lookup_max", "prompt_lookup_min",
    "parallel_drafting", "target_model_config", "target_parallel_config", "num_speculative_tokens_per_batch_size",
    "draft_model_config", "draft_parallel_config", "suffix_decoding_max_tree_depth",
    "suffix_decoding_max_cached_requests", "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob",
    "draft_load_config", "rejection_sample_method", "synthetic_acceptance_rates", "synthetic_acceptance_length",
    "enable_adaptive_verification", "draft_sample_method", "dspark_draft_topk",
})


def inferred_method(config: dict, draft_model_type: str | None = None) -> str:
    """The method vLLM 0.32 runs a --speculative-config without "method" as (`SpeculativeConfig.__post_init__`):
    ngram where the model is "ngram" or "[ngram]"; else a draft model, renamed from its model name ("eagle-" in it:
    eagle; "eagle3": eagle3; "dflash": dflash; "dspark": dspark) or its config's model_type (an MTP type: mtp;
    medusa, mlp_speculator), in that order. A custom proposer class path is not inferred here."""
    name = str(config.get("model") or "").lower()
    if name in ("ngram", "[ngram]"):
        return "ngram"
    for part, method in (("eagle-", "eagle"), ("eagle3", "eagle3"), ("dflash", "dflash"), ("dspark", "dspark")):
        if part in name:
            return method
    if draft_model_type in ("medusa", "mlp_speculator"):
        return draft_model_type
    if draft_model_type is not None and draft_model_type.endswith("_mtp"):
        return "mtp"
    return "draft_model"
