"""The 2026 model types: read by their layer kinds (`kinds_reader`), then what each adds that no other has, as vLLM
0.32 builds it (paths under vllm/). A reader takes the language model's config, its layer count and `need` and
returns ModelSpec fields over those `read_by_kinds` gave.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from advisor.errors import InputError
from advisor.model.shape.compressed_attention import deepseek_v4
from advisor.model.shape.kinds_reader import read_by_kinds
from advisor.model.shape.mixers import Need, ssm_bytes


def minimax_m3(cfg: dict[str, Any], layers: int, need: Need) -> dict[str, Any]:
    """models/minimax_m3/nvidia/model.py: GQA on every layer; the layers sparse_attention_freq marks also run an
    index branch (index_q, sparse_num_index_heads x sparse_index_dim, and one index_k in the fused qkv_proj) whose
    key is cached per token (common/indexer.py: one vector, `MLAAttentionSpec` num_kv_heads 1) and that picks
    sparse_topk_blocks blocks of sparse_block_size tokens, plus sparse_local_block local ones, for attention.
    Shared expert: intermediate_size x n_shared_experts (`MiniMaxM3MoE`). MTP: num_mtp_modules, which vLLM takes
    as n_predict (config/speculative.py `hf_config_override`, minimax_m3_mtp)."""
    sparse = cfg.get("sparse_attention_config") or {}
    if not isinstance(sparse, dict) or not sparse.get("use_sparse_attention", bool(sparse)):
        return {}
    freq = sparse.get("sparse_attention_freq") or []
    if not isinstance(freq, list) or len(freq) != layers:
        raise InputError(f"sparse_attention_config.sparse_attention_freq must hold one 0/1 per layer ({layers})")
    block = int(sparse["sparse_block_size"])
    layers_sparse = sum(1 for f in freq if f)
    return {"index_topk": (int(sparse["sparse_topk_blocks"]) + int(sparse.get("sparse_local_block", 0))) * block,
            "index_layers": layers_sparse, "sparse_layers": layers_sparse,
            "index_heads": int(sparse["sparse_num_index_heads"]), "index_head_dim": int(sparse["sparse_index_dim"])}


def mimo_v2(cfg: dict[str, Any], layers: int, need: Need) -> dict[str, Any]:
    """mimo_v2.py: full layers of num_key_value_heads, sliding ones of swa_num_key_value_heads, each head a
    head_dim key and a v_head_dim value. A head of (head_dim + v_head_dim) / 2 for both K and V gives the same
    projections, cache and attention FLOPs. vLLM drafts with the first MTP layer only (mimo_v2_mtp.py
    `_MIMO_V2_FLASH_NUM_MTP_LAYERS` = 1; the config states none)."""
    full = (int(need("head_dim")) + int(cfg.get("v_head_dim") or need("head_dim"))) // 2
    swa = (int(cfg.get("swa_head_dim") or need("head_dim")) + int(cfg.get("swa_v_head_dim") or
                                                                  cfg.get("v_head_dim") or need("head_dim"))) // 2
    return {"head_dim": swa, "global_head_dim": full, "num_kv_heads": int(cfg.get("swa_num_key_value_heads") or
                                                                        need("num_key_value_heads")),
            "global_kv_heads": int(need("num_key_value_heads")), "mtp_layers": 1}


def nemotron_h(cfg: dict[str, Any], layers: int, need: Need) -> dict[str, Any]:
    """nemotron_h.py: the pattern's blocks (`layer_kinds`), Mamba2 mixers (mamba_mixer2.py), relu2 MLPs; MTP layers
    per num_nextn_predict_layers (config/speculative.py: nemotron_h_mtp)."""
    return {"linear_state_dtype_bytes": ssm_bytes(cfg, "mamba_ssm_cache_dtype")}


def kimi_linear(cfg: dict[str, Any], layers: int, need: Need) -> dict[str, Any]:
    """models/kimi_k3/nvidia/model.py `KimiDecoderLayer`: KDA on linear_attn_config's kda_layers, MLA (NoPE, with
    an output gate) on the rest; MoE from first_k_dense_replace, latent routed experts; the attention-residual
    projections (attn_res_block_size) are two h x 1 maps per layer, not counted."""
    return {"linear_state_dtype_bytes": ssm_bytes(cfg, "mamba_ssm_dtype")}


def qwen4_exp(cfg: dict[str, Any], layers: int, need: Need) -> dict[str, Any]:
    """models/qwen4_exp: Gated DeltaNet and QSA layers (layer_types' full_attention): gated GQA with an indexer of
    indexer_n_heads x indexer_head_dim over keys compressed indexer_compress_ratio to one, attending its
    indexer_budget tokens (nvidia/qsa.py, indexer_qsa.py); hc_count hyper-connection streams, each layer mixing them
    through two lora-rank maps per sub-block (nvidia/hyperconnection.py: input_mix_weight_down/up, 16 bit); n-gram
    embeddings at ple_layer_ids, (ngram_size - 1) x heads_per_ngram heads of ngram_vocab_size_base rows each (the
    first primes past it: nvidia/ngram_embedding.py `_make_vocab_layout`), ple_embed_dim / heads wide, gathered by
    token, and their kv_proj (ple_embed_dim x (hc_count + 1)h)."""
    hidden, hc, rank = int(need("hidden_size")), int(cfg.get("hc_count") or 1), int(cfg.get("hc_lowrank") or 0)
    ple_layers = len(cfg.get("ple_layer_ids") or [])
    ngram_heads = (int(cfg.get("ngram_size") or 1) - 1) * int(cfg.get("heads_per_ngram") or 0)
    embed = int(cfg.get("ple_embed_dim") or 0)
    table = ngram_heads * int(cfg.get("ngram_vocab_size_base") or 0) * (embed // ngram_heads if ngram_heads else 0)
    out = {"gated_attention": True, "lookup_params": ple_layers * table,
           "linear_state_dtype_bytes": ssm_bytes(cfg, "mamba_ssm_dtype"),
           "wide_params": layers * 2 * 2 * hc * hidden * rank + ple_layers * embed * (hc + 1) * hidden}
    if cfg.get("indexer_n_heads"):
        out.update(index_topk=int(need("indexer_budget")), index_heads=int(need("indexer_n_heads")),
                   index_head_dim=int(need("indexer_head_dim")),
                   index_compress=float(cfg.get("indexer_compress_ratio") or 1),
                   index_layers=sum(1 for t in cfg.get("layer_types") or () if t == "full_attention")
                   or layers // int(cfg.get("full_attention_interval") or 4))
    return out


READERS_2026: dict[str, Callable[[dict[str, Any], int, Need], dict[str, Any]]] = {
    "minimax_m3": minimax_m3, "mimo_v2_flash": mimo_v2, "nemotron_h": nemotron_h, "kimi_linear": kimi_linear,
    "qwen4_exp_text": qwen4_exp, "step3p7": lambda cfg, layers, need: {},
    "deepseek_v4": lambda cfg, layers, need: deepseek_v4(cfg, layers, need, v41=False),
    "deepseek_v41_text": lambda cfg, layers, need: deepseek_v4(cfg, layers, need, v41=True),
}
# What each type is, for `specadvisor list models` and the docs (the vLLM model each is read as)
DESCRIBED_2026 = {
    "nemotron_h": "Nemotron-H / Nemotron-3: Mamba2, attention, MoE (latent) and MLP blocks, MTP (nemotron_h.py)",
    "kimi_linear": "Kimi-K3 / Kimi-Linear: KDA linear attention + MLA, latent MoE (vllm/models/kimi_k3)",
    "minimax_m3": "MiniMax-M3: GQA with block-sparse attention (index branch), MoE + shared expert, 7 MTP modules "
                  "(vllm/models/minimax_m3)",
    "qwen4_exp_text": "Qwen3.8-Flash-Next (qwen4_exp): Gated DeltaNet + QSA sparse attention, hyper-connections, "
                      "n-gram embeddings, MoE, MTP (vllm/models/qwen4_exp)",
    "deepseek_v4": "DeepSeek-V4: sliding window + compressed KV + indexer, hyper-connections, MoE, MTP "
                   "(vllm/models/deepseek_v4)",
    "deepseek_v41_text": "DeepSeek-V4.1: as V4, KV compressed on source layers, Engram n-gram tables, fused DSpark "
                         "stages (vllm/models/deepseek_v41)",
    "step3p7": "Step-3.7-Flash: sliding-window and full GQA, MoE + shared expert, MTP (step3p5.py)",
    "mimo_v2_flash": "MiMo-V2-Flash: sliding-window and full GQA of two head shapes, MoE, MTP (mimo_v2.py)",
}


def read_2026(cfg: dict[str, Any], model_type: str, layers: int, hidden: int, need: Need, name: str) -> dict[str, Any]:
    """ModelSpec fields of a model type without a reader in config_reader: its layer kinds, then its type's own
    additions (`READERS_2026`; none for a model type this project has never seen)."""
    out = read_by_kinds(cfg, layers, hidden, need, name)
    extra = READERS_2026.get(model_type)
    return {**out, **extra(cfg, layers, need)} if extra else out
