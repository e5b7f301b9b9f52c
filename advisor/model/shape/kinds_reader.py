"""A config.json read by its layer kinds (`layer_kinds`) rather than its model_type: how a model type this project
has no reader of its own for is read, and how the 2026 hybrids are (Nemotron-H, Kimi-K3, MiniMax-M3, Step-3.7,
MiMo-V2, Qwen4-exp: `architectures_2026`). Each part is read from the keys the configs of vLLM 0.32's model files
name it by; a key two model families spell two ways is listed with both spellings below.
"""

from __future__ import annotations

from typing import Any

from advisor.errors import InputError
from advisor.model.shape.layer_kinds import dense_mlps, mixer_plan
from advisor.model.shape.mixers import Need, linear_mixer, mla, ssm_bytes

# Field -> the keys it is stored under, first found wins (vLLM's model files, per family)
EXPERTS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
TOP_K = ("num_experts_per_tok", "num_experts_per_token", "top_k_experts", "moe_top_k", "experts_per_token")
LATENT = ("moe_latent_size", "routed_expert_hidden_size")  # nemotron_h.py; models/kimi_k3 (latent MoE)
MTP = ("num_mtp_modules", "mtp_num_hidden_layers", "num_nextn_predict_layers")  # MiniMax-M3's n_predict first
GATES = ("attn_output_gate", "attention_output_gate")  # Qwen3-Next/3.5; MiniMax-M3
# Refused by name where no model type says otherwise: parts no reader here counts
FOREIGN = {"is_encoder_decoder": "an encoder-decoder (cross-attention) model",
           "num_kv_shared_layers": "KV-shared layers", "cross_attention_layers": "cross-attention layers"}


def first(cfg: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((cfg[k] for k in keys if cfg.get(k) is not None), None)


def shared_width(cfg: dict[str, Any], moe_width: int) -> int:
    """All shared experts of one MoE layer together, by the family's key: Qwen's shared_expert_intermediate_size;
    Nemotron-H's moe_shared_expert_intermediate_size and Step's share_expert_dim per shared expert; MiniMax's
    shared_intermediate_size; else n_shared_experts (num_shared_experts) x the routed width (deepseek_v2.py)."""
    count = int(first(cfg, ("n_shared_experts", "num_shared_experts")) or 0)
    if cfg.get("shared_expert_intermediate_size") is not None:
        return int(cfg["shared_expert_intermediate_size"])
    for key in ("moe_shared_expert_intermediate_size", "share_expert_dim"):
        if cfg.get(key) is not None:
            return int(cfg[key]) * max(count, 1)
    if cfg.get("shared_intermediate_size") is not None:
        return int(cfg["shared_intermediate_size"])
    return count * moe_width


def read_by_kinds(cfg: dict[str, Any], layers: int, hidden: int, need: Need, name: str) -> dict[str, Any]:
    """ModelSpec fields from the layer kinds the config lists, or one InputError line naming a kind not modelled."""
    for key, what in FOREIGN.items():
        if cfg.get(key):
            raise InputError(f"config.json for {name!r}: {key} ({what}) is not modelled")
    # Qwen3-Next's rule where no list is given: every full_attention_interval-th layer full, the rest Gated DeltaNet
    every = int(cfg.get("full_attention_interval") or 0) if cfg.get("linear_num_value_heads") is not None else 0
    plan = mixer_plan(cfg, layers, name, every=every)
    out: dict[str, Any] = {"mixerless_layers": plan.mixerless, "mlpless_layers": plan.mlpless}
    if cfg.get("kv_lora_rank"):
        out.update(mla(cfg, need))
    else:
        out["gated_attention"] = bool(first(cfg, GATES))
        if cfg.get("attention_head_dim") and not cfg.get("head_dim"):
            out["head_dim"] = int(cfg["attention_head_dim"])  # Nemotron-H-56B's name for it
    if plan.sliding:
        out.update(sliding_window=int(first(cfg, ("sliding_window", "sliding_window_size")) or need("sliding_window")),
                   sliding_layers=plan.sliding)
    elif cfg.get("sliding_window") and cfg.get("use_sliding_window", False) and not plan.linear:
        out.update(sliding_window=int(cfg["sliding_window"]), sliding_layers=layers - plan.mixerless)
    if plan.chunked:
        out.update(attention_chunk=int(need("attention_chunk_size")), chunked_layers=plan.chunked)
    if plan.linear:
        out.update(linear_mixer(cfg, hidden, need, name), linear_layers=plan.linear)
        if cfg.get("linear_num_value_heads") is not None and cfg.get("mamba_ssm_dtype") is not None:
            out["linear_state_dtype_bytes"] = ssm_bytes(cfg, "mamba_ssm_dtype")  # as Qwen3.5 states it
    act = str(cfg.get("mlp_hidden_act") or cfg.get("hidden_act") or "silu")
    out["mlp_projections"] = 2 if act == "relu2" else 3  # nemotron_h.py `NemotronHMLP`: up and down only
    experts = first(cfg, EXPERTS)
    if experts is not None and int(experts) > 1:
        width = int(cfg.get("moe_intermediate_size") or need("intermediate_size"))
        top_k = first(cfg, TOP_K)
        if top_k is None:
            raise InputError(f"config.json for {name!r} has {experts} experts but no num_experts_per_tok")
        out.update(num_experts=int(experts), experts_per_token=int(top_k), intermediate_size=width,
                   dense_layers=plan.dense if plan.moe_from_pattern else dense_mlps(cfg, layers, name),
                   dense_intermediate_size=int(cfg.get("dense_intermediate_size") or cfg.get("intermediate_size")
                                               or width),
                   shared_expert_intermediate_size=shared_width(cfg, width),
                   expert_hidden_size=int(first(cfg, LATENT) or 0))
    out["mtp_layers"] = int(first(cfg, MTP) or 0)
    return out
