"""The numbers and flags a config.json gives the reader (`config_reader`), checked before any is used: a real
config holds whole, positive, consistent counts, and anything else is one InputError line, never a coerced value,
a ZeroDivisionError or a quiet answer from nonsense (issue 25).
"""

from __future__ import annotations

from typing import Any

from advisor.errors import InputError

# Every number the reader takes from a config, by the range a real one has: a count or size is a positive int (a
# string, a float, NaN, a bool, zero or a negative is refused, not coerced), these may also be 0, and none is above
# LARGEST (torch indexes with int32-sized dimensions; no model comes near).
POSITIVE = ("hidden_size", "num_attention_heads", "num_hidden_layers", "vocab_size", "num_key_value_heads", "head_dim",
            "intermediate_size", "moe_intermediate_size", "max_position_embeddings", "num_local_experts",
            "num_experts", "n_routed_experts", "num_experts_per_tok", "experts_per_token", "sliding_window",
            "sliding_window_pattern", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
            "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
            "linear_conv_kernel_dim", "full_attention_interval", "decoder_sparse_step",
            "interleave_moe_layer_step", "intermediate_size_mlp", "attention_chunk_size", "draft_vocab_size")
# issue 39's model types: DSA indexers, Gemma-4's global layers and MoE, Hy3's experts
POSITIVE += ("index_topk", "index_n_heads", "index_head_dim", "index_topk_freq", "global_head_dim",
             "num_global_key_value_heads", "top_k_experts", "expert_hidden_dim")
# issue 47's layer kinds: Mamba2, latent MoE, DeepSeek-V4's low-rank output, MiMo's two head shapes, QSA,
# hyper-connections, n-gram tables
POSITIVE += ("mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel", "moe_latent_size",
             "moe_shared_expert_intermediate_size", "routed_expert_hidden_size", "o_lora_rank", "o_groups",
             "attention_head_dim", "swa_num_key_value_heads", "swa_head_dim", "swa_v_head_dim", "indexer_budget",
             "indexer_n_heads", "indexer_head_dim", "dense_intermediate_size", "share_expert_dim",
             "num_experts_per_token", "hc_count", "hc_lowrank", "hc_mult", "indexer_compress_ratio", "ngram_size",
             "heads_per_ngram", "ngram_vocab_size_base", "ple_embed_dim", "engram_head_dim", "model_max_length")
NON_NEGATIVE = ("q_lora_rank", "n_shared_experts", "first_k_dense_replace", "shared_expert_intermediate_size",
                "num_nextn_predict_layers", "mtp_num_hidden_layers")
NON_NEGATIVE += ("num_shared_experts", "index_skip_topk_offset", "num_mtp_modules", "block_size",
                 "dspark_block_size")
FLAGS = ("tie_word_embeddings", "use_sliding_window", "attn_output_gate")
LARGEST = 2**31 - 1
_EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts")


def check_fields(cfg: dict[str, Any], name: str) -> None:
    """One InputError line for the first number or flag the reader would take that no real config holds, or a
    pair of them that contradict each other; None (JSON null) counts as absent."""
    for key in POSITIVE + NON_NEGATIVE:
        value = cfg.get(key)
        if value is None:
            continue
        lowest = 1 if key in POSITIVE else 0
        if isinstance(value, bool) or not isinstance(value, int) or not lowest <= value <= LARGEST:
            raise InputError(f"config.json for {name!r}: {key} must be a whole number in {lowest}..{LARGEST}, "
                             f"got {value!r}")
    for key in FLAGS:
        if cfg.get(key) is not None and not isinstance(cfg[key], bool):
            raise InputError(f"config.json for {name!r}: {key} must be true or false, got {cfg[key]!r}")
    experts = next((cfg[key] for key in _EXPERTS if cfg.get(key) is not None), None)
    chosen = cfg.get("num_experts_per_tok") or cfg.get("experts_per_token")
    if experts is not None and chosen is not None and chosen > experts:
        raise InputError(f"config.json for {name!r}: each token is routed to {chosen} experts "
                         f"(num_experts_per_tok) of only {experts}")
    heads, kv_heads = cfg.get("num_attention_heads"), cfg.get("num_key_value_heads")
    if heads is not None and kv_heads is not None and (kv_heads > heads or heads % kv_heads):
        raise InputError(f"config.json for {name!r}: num_key_value_heads {kv_heads} must divide "
                         f"num_attention_heads {heads}")
    freq = cfg.get("moe_layer_freq")  # a period (deepseek_v2.py) or one 0/1 per layer (MiniMax-M3, MiMo-V2)
    if freq is not None and not ((type(freq) is int and 1 <= freq <= LARGEST) or
                                 (isinstance(freq, list) and all(f in (0, 1) and type(f) is int for f in freq))):
        raise InputError(f"config.json for {name!r}: moe_layer_freq must be a whole number >= 1 or a list of 0/1 per "
                         f"layer, got {freq!r:.60}")
    types, layers = cfg.get("layer_types"), cfg.get("num_hidden_layers")
    if types is not None and layers is not None and (not isinstance(types, list) or len(types) != layers):
        raise InputError(f"config.json for {name!r}: layer_types must list num_hidden_layers = {layers} layers, "
                         f"got {len(types) if isinstance(types, list) else repr(types)}")
    if cfg.get("draft_vocab_size") is not None and cfg.get("vocab_size") is not None \
            and cfg["draft_vocab_size"] > cfg["vocab_size"]:
        raise InputError(f"config.json for {name!r}: draft_vocab_size {cfg['draft_vocab_size']} is larger than "
                         f"vocab_size {cfg['vocab_size']}")


# The blocks a config.json nests, and the type each must have (None: absent); `_specadvisor` is our own metadata.
BLOCKS = {"text_config": dict, "quantization_config": dict, "_specadvisor": dict, "architectures": list}
META_STRINGS = ("name", "hf_id", "family", "kind", "target")


def check_blocks(config: dict[str, Any], name: str) -> None:
    """One InputError line for a nested block of the wrong type (a text_config that is a number, architectures
    that are not a list of names), before any reader indexes into it."""
    inner = config.get("text_config")
    for where, cfg in (("", config), ("text_config.", inner if isinstance(inner, dict) else {})):
        for key, kind in BLOCKS.items():
            value = cfg.get(key)
            if value is not None and not isinstance(value, kind):
                raise InputError(f"config.json for {name!r}: {where}{key} must be a JSON "
                                 f"{'object' if kind is dict else 'list'}, got {value!r:.60}")
        if any(not isinstance(a, str) for a in cfg.get("architectures") or ()):
            raise InputError(f"config.json for {name!r}: {where}architectures must list class names (strings)")
    meta = config.get("_specadvisor") or {}
    bad = [key for key in META_STRINGS if meta.get(key) is not None and not isinstance(meta[key], str)]
    aliases = meta.get("aliases", [])
    if bad or not isinstance(aliases, list) or any(not isinstance(a, str) for a in aliases):
        raise InputError(f"config.json for {name!r}: _specadvisor.{(bad or ['aliases'])[0]} must be "
                         f"{'a string' if bad else 'a list of strings'}")
    size = meta.get("published_params_b")
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, float)) or not 0 < size < 1e5):
        raise InputError(f"config.json for {name!r}: _specadvisor.published_params_b must be billions of "
                         f"parameters, got {size!r}")
