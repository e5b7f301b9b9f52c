"""The model types that issue 39 added to `config_reader`, each read the way vLLM 0.32's model file builds its layers
(the file is named in each reader), and the layer-pattern helpers every reader shares. A reader takes the language
model's config, its layer count and `need` (reads a required key) and returns ModelSpec fields.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from advisor.errors import InputError

Need = Callable[[str], Any]


def count(types: list[str], *names: str) -> int:
    return sum(1 for t in types if t in names)


def layer_types(cfg: dict[str, Any], layers: int, every: int, other: str, each: str) -> list[str]:
    """config's layer_types, or transformers' default pattern: layer i is `each` when (i + 1) % every == 0."""
    types = cfg.get("layer_types")
    if types:
        if len(types) != layers:
            raise InputError(f"layer_types lists {len(types)} layers, num_hidden_layers says {layers}")
        return list(types)
    return [each if (i + 1) % every == 0 else other for i in range(layers)]


def dsa_indexer(cfg: dict[str, Any], layers: int, need: Need) -> dict[str, Any]:
    """DeepSeek sparse attention (deepseek_v32, glm_moe_dsa: vllm/models/deepseek_v32/attention.py
    `DeepseekV32Attention.__init__`): layer i builds its own indexer unless it reuses the top-k of the one before
    (skip_topk: index_topk_pattern[i] == "S", else max(i - index_skip_topk_offset + 1, 0) % index_topk_freq != 0;
    GLM-5.2 runs 21 indexers over 78 layers); every layer attends the index_topk tokens picked."""
    freq, offset = int(cfg.get("index_topk_freq") or 1), int(cfg.get("index_skip_topk_offset", 2))
    pattern = cfg.get("index_topk_pattern")
    if pattern is None:
        skips = [max(i - offset + 1, 0) % freq != 0 for i in range(layers)]
    else:
        skips = [i < len(pattern) and pattern[i] == "S" for i in range(layers)]
    return {"index_topk": int(need("index_topk")), "index_heads": int(need("index_n_heads")),
            "index_head_dim": int(need("index_head_dim")), "index_layers": skips.count(False)}


def minimax_m2(cfg: dict[str, Any], layers: int, need: Need) -> dict[str, Any]:
    """minimax_m2.py: full GQA attention on every layer (its decoder layer passes no window), every layer an MoE of
    num_local_experts experts intermediate_size wide, no shared expert. Its MTP modules (num_mtp_modules) are dropped
    at load ("Drop spec-decode (MTP) layers") and vLLM 0.32 has no MiniMax-M2 MTP drafter, so they count for
    nothing here."""
    if cfg.get("shared_intermediate_size"):
        raise InputError(f"minimax_m2 with a shared expert (shared_intermediate_size "
                         f"{cfg['shared_intermediate_size']}) is not what vLLM's minimax_m2.py builds")
    return {"num_experts": int(need("num_local_experts")), "experts_per_token": int(need("num_experts_per_tok")),
            "intermediate_size": int(need("intermediate_size"))}


def gemma4(cfg: dict[str, Any], layers: int, need: Need) -> dict[str, Any]:
    """gemma4.py: sliding-window and full layers as layer_types lists them; full layers take global_head_dim and,
    with attention_k_eq_v, num_global_key_value_heads (transformers' Gemma4TextConfig.__post_init__ per_layer_config,
    which `Gemma4DecoderLayer` reads). With num_experts, every layer runs its dense MLP (intermediate_size) beside a
    routed MoE block (top_k_experts of num_experts, moe_intermediate_size wide): the dense MLP counts as a shared
    expert. KV-shared layers and per-layer embeddings (Gemma-4 E2B/E4B) are not modelled."""
    for key in ("num_kv_shared_layers", "hidden_size_per_layer_input"):
        if cfg.get(key):
            raise InputError(f"gemma4 with {key} {cfg[key]} (per-layer embeddings or KV-shared layers) is not "
                             "modelled")
    types = layer_types(cfg, layers, 6, "sliding_attention", "full_attention")
    head_dim, kv_heads = _gemma4_global_shape(cfg, types)
    out: dict[str, Any] = {"sliding_window": int(need("sliding_window")),
                           "sliding_layers": count(types, "sliding_attention"), "global_head_dim": head_dim,
                           "global_kv_heads": kv_heads}
    if cfg.get("num_experts") is not None:
        out.update(num_experts=int(need("num_experts")), experts_per_token=int(need("top_k_experts")),
                   intermediate_size=int(cfg.get("moe_intermediate_size") or need("expert_intermediate_size")),
                   shared_expert_intermediate_size=int(need("intermediate_size")))
    return out


def _gemma4_global_shape(cfg: dict[str, Any], types: list[str]) -> tuple[int, int]:
    """(head_dim, KV heads) of Gemma-4's full-attention layers (0: as the others). transformers 5 saves them as
    per_layer_config overrides of those layers ({"05": {"head_dim": 512, "num_key_value_heads": 2}, ...}); a config
    written before holds global_head_dim (default 512) and, where attention_k_eq_v (default false),
    num_global_key_value_heads, from which Gemma4TextConfig.__post_init__ builds the same overrides."""
    per_layer = cfg.get("per_layer_config")
    if not per_layer:
        kv_heads = cfg.get("num_global_key_value_heads") if cfg.get("attention_k_eq_v") else None
        return int(cfg.get("global_head_dim") or 512), int(kv_heads or 0)
    full = {i for i, kind in enumerate(types) if kind == "full_attention"}
    overrides = list(per_layer.values()) if isinstance(per_layer, dict) else []
    shapes = {(o.get("head_dim"), o.get("num_key_value_heads")) for o in overrides if isinstance(o, dict)}
    if len(overrides) != len(full) or {int(i) for i in per_layer} != full or len(shapes) != 1:
        raise InputError("gemma4 per_layer_config that does not override every full-attention layer alike is not "
                         "modelled")
    head_dim, kv_heads = shapes.pop()
    return int(head_dim or 0), int(kv_heads or 0)


def hy_v3(cfg: dict[str, Any], layers: int, need: Need) -> dict[str, Any]:
    """hy_v3.py: GQA with q/k norms; the first first_k_dense_replace layers a dense MLP of intermediate_size, the
    rest num_experts_per_tok of num_experts experts expert_hidden_dim wide plus num_shared_experts of the same width
    (`HYV3MoEFused`: shared_mlp expert_hidden_dim x num_shared_experts). The MTP layer is an MoE block
    (hy_v3_mtp.py: HYV3DecoderLayer at index num_hidden_layers)."""
    width = int(cfg.get("expert_hidden_dim") or need("moe_intermediate_size"))
    return {"num_experts": int(need("num_experts")), "experts_per_token": int(need("num_experts_per_tok")),
            "intermediate_size": width, "dense_layers": int(need("first_k_dense_replace")),
            "dense_intermediate_size": int(need("intermediate_size")),
            "shared_expert_intermediate_size": int(cfg.get("num_shared_experts") or 0) * width}


READERS: dict[str, Callable[[dict[str, Any], int, Need], dict[str, Any]]] = {
    "minimax_m2": minimax_m2, "gemma4_text": gemma4, "hy_v3": hy_v3}
