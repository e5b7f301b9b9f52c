"""DeepSeek-V4's attention, as vLLM 0.32 builds it (vllm/models/deepseek_v4/attention.py `DeepseekV4Attention`,
compressor.py `DeepseekCompressor`; V4.1: vllm/models/deepseek_v41/attention.py).

Every layer keeps a sliding window of `sliding_window` tokens of one 512-wide latent row (one KV head, K and V
alike), in the fp8_ds_mla format the default NVIDIA backend fixes (`_resolve_dsv4_kv_cache_dtype`: 576 B a token
slot whatever --kv-cache-dtype says). A layer whose `compress_ratios` entry r > 1 also keeps one compressed row per r
tokens: r = 4 layers attend the index_topk rows their indexer picks (its keys, index_head_dim fp8 with a scale per
128, compressed 4 to 1 as well), r = 128 layers all of them. V4.1 keeps compressed caches only on
`kv_source_layer_ids` (r = 2, or 1: a full-length one) and indexers on `index_source_layer_ids`; the other compressed
layers read the nearest source below them and attend its top-k.

Projections per layer: fused_wqa_wkv h x (q_lora_rank + head_dim), wq_b q_lora_rank x heads·head_dim, wo_a (grouped:
heads·head_dim x o_lora_rank), wo_b o_groups·o_lora_rank x h; a compressor's fused_wkv_wgate h x 2·coff·head_dim
(coff 2 where r = 4: overlapping windows); an indexer's wq_b q_lora_rank x heads·index_head_dim, weights_proj h x
heads and its own compressor. The hyper-connections (hc_mult streams: hc_attn_fn and hc_ffn_fn, (2 + m)·m x m·h each,
nvidia/model.py) are 16-bit weights of their own. MoE on every layer (the first num_hash_layers route by a token
hash, still over the experts).
"""

from __future__ import annotations

from typing import Any

from advisor.errors import InputError
from advisor.model.shape.mixers import Need

FP8_DS_MLA_ROW = 576  # bytes per token slot of the fp8_ds_mla cache (_resolve_dsv4_kv_cache_dtype's docstring)


def _ids(cfg: dict[str, Any], key: str, layers: int) -> set[int]:
    ids = cfg.get(key) or []
    if not isinstance(ids, list) or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < layers
                                        for i in ids):
        raise InputError(f"DeepSeek-V4.1's {key} must list layer numbers below {layers}")
    return set(ids)


def deepseek_v4(cfg: dict[str, Any], layers: int, need: Need, *, v41: bool) -> dict[str, Any]:
    hidden, heads, head_dim = int(need("hidden_size")), int(need("num_attention_heads")), int(need("head_dim"))
    q_lora, o_lora, groups = int(need("q_lora_rank")), int(need("o_lora_rank")), int(need("o_groups"))
    rope = int(need("qk_rope_head_dim"))
    ratios = list(cfg.get("compress_ratios") or _ratios_from_types(cfg, layers))[:layers]
    if len(ratios) < layers or any(isinstance(r, bool) or not isinstance(r, int) or r < 0 for r in ratios):
        raise InputError(f"compress_ratios must give a whole ratio >= 0 for each of the {layers} layers")
    index_heads, index_dim, topk = int(need("index_n_heads")), int(need("index_head_dim")), int(need("index_topk"))
    attention = layers * (hidden * (q_lora + head_dim) + q_lora * heads * head_dim + heads * head_dim * o_lora
                          + groups * o_lora * hidden)

    def compressor(ratio: int, dim: int) -> int:
        return hidden * 2 * (2 if ratio == 4 else 1) * dim

    indexer = q_lora * index_heads * index_dim + hidden * index_heads + compressor(4, index_dim)
    if v41:
        sources, indexers = _ids(cfg, "kv_source_layer_ids", layers), _ids(cfg, "index_source_layer_ids", layers)
        attention += sum(compressor(ratios[i], head_dim) for i in sources if ratios[i] > 0)
        attention += len(indexers) * indexer
        groups_by_ratio = {r: (sum(1 for x in ratios if x == r), sum(1 for i in sources if ratios[i] == r))
                           for r in sorted({x for x in ratios if x > 0})}
        compressed = tuple((r, attending, cached, topk) for r, (attending, cached) in groups_by_ratio.items())
        per_token = sum(1.0 / max(ratios[i], 1) for i in indexers)
        index_layers, index_compress = len(indexers), len(indexers) / per_token if per_token else 1.0
    else:
        attention += sum(compressor(r, head_dim) for r in ratios if r > 1)
        index_layers = sum(1 for r in ratios if r == 4)
        attention += index_layers * indexer
        compressed = tuple((r, n, n, topk if r == 4 else 0) for r in sorted({x for x in ratios if x > 1})
                           for n in [sum(1 for x in ratios if x == r)])
        index_compress = 4.0
    hc = int(cfg.get("hc_mult") or 1)
    return {"kv_lora_rank": head_dim - rope, "qk_rope_head_dim": rope, "q_lora_rank": q_lora, "head_dim": head_dim,
            "v_head_dim": head_dim, "num_kv_heads": heads, "mixer_params": attention,
            "sliding_window": int(need("sliding_window")), "sliding_layers": layers, "compressed": compressed,
            "index_topk": topk, "index_heads": index_heads, "index_head_dim": index_dim, "index_layers": index_layers,
            "index_compress": index_compress, "fixed_kv_row_bytes": FP8_DS_MLA_ROW,
            "wide_params": layers * 2 * (2 + hc) * hc * hc * hidden if hc > 1 else 0,
            "lookup_params": _engram(cfg), "part_formats": _expert_format(cfg),
            # V4.1's next-n layers are DSpark stages, not MTP: vLLM refuses method mtp for it and drafts with them as
            # method dspark without a model (config/speculative.py)
            **({"mtp_layers": 0, "dspark_block": int(cfg.get("dspark_block_size") or 0)} if v41 else {})}


def _engram(cfg: dict[str, Any]) -> int:
    """V4.1's Engram n-gram tables (models/deepseek_v41/common/engram.py `EngramLayout`): engram_num_embeddings rows
    per Engram layer, engram_head_dim wide, gathered by token hash."""
    rows = cfg.get("engram_num_embeddings") or []
    return sum(int(r) for r in rows) * int(cfg.get("engram_head_dim") or 0)


def _expert_format(cfg: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The routed experts' own format beside the checkpoint's fp8 (models/deepseek_v4/quant_config.py: expert_dtype
    "fp4", the default, runs MXFP4 experts; "fp8" the checkpoint's block fp8)."""
    quant = cfg.get("quantization_config") if isinstance(cfg.get("quantization_config"), dict) else {}
    dtype = cfg.get("expert_dtype") or quant.get("expert_dtype") or "fp4"
    if dtype not in ("fp4", "fp8"):
        raise InputError(f"DeepSeek-V4 expert_dtype {dtype!r} is not fp4 or fp8")
    return (("experts", "mxfp4"),) if dtype == "fp4" else ()


def _ratios_from_types(cfg: dict[str, Any], layers: int) -> list[int]:
    """The compress_ratios a config saved by transformers 5 states as layer_types and compress_rates
    (configuration_deepseek_v4.py: sliding_attention 0, each compressed kind its rate)."""
    types, rates = cfg.get("layer_types"), cfg.get("compress_rates")
    if not isinstance(types, list) or not isinstance(rates, dict):
        raise InputError("DeepSeek-V4 needs compress_ratios, or layer_types with compress_rates")
    try:
        return [0 if kind == "sliding_attention" else int(rates[kind]) for kind in types[:layers]]
    except (KeyError, TypeError, ValueError):
        raise InputError("DeepSeek-V4's layer_types name a kind compress_rates does not rate") from None
