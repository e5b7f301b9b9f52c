"""Token mixers a config.json may describe, each read the way vLLM 0.32 builds it (paths under vllm/): the ModelSpec
fields of its shape, its parameters and the state or cache it keeps. `need` reads a required key.

- MLA (model_executor/models/deepseek_v2.py `DeepseekV2MLAAttention`; Kimi-K3's with a sigmoid output gate g_proj,
  h x heads·v_head_dim: model_executor/layers/mla.py);
- Gated DeltaNet (model_executor/layers/mamba/qwen_gdn_linear_attn.py): in_proj_qkvz h x (2 key + 2 value), in_proj_ba
  h x 2 v_heads, conv1d (2 key + value) x kernel, A_log and dt_bias per v head, a norm per v dim, out_proj value x h;
  state: the conv's last kernel - 1 inputs and v_heads x v_dim x k_dim;
- Mamba2 (model_executor/layers/mamba/mamba_mixer2.py `MambaMixer2`): in_proj h x (I + conv_dim + heads), conv1d
  conv_dim x kernel, A, D and dt_bias per head, a norm of I, out_proj I x h, with I = heads·head_dim and conv_dim =
  I + 2·n_groups·state; state (mamba_utils.py `mamba2_state_shape`): conv_dim x (kernel - 1) and heads x head_dim x
  state, the latter in mamba_ssm_cache_dtype;
- KDA, Kimi-K3's full-rank-gate delta attention (models/kimi_k3/nvidia/kda.py `KimiK3DeltaAttention`): in_proj
  h x (4P + head_dim + heads) with P = heads·head_dim, f_b_proj head_dim x P, dt_bias P, conv1d 3P x kernel, o_proj
  P x h; state (mamba_utils.py `kda_state_shape`): 3P x (kernel - 1) and heads x head_dim x head_dim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from advisor.errors import InputError

Need = Callable[[str], Any]
# mamba_ssm_dtype / mamba_ssm_cache_dtype -> the recurrent state's bytes ("auto", absent: the model's 16-bit dtype;
# vllm/model_executor/models/config.py `Qwen3_5ForConditionalGenerationConfig`, `MambaModelConfig`)
SSM_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "auto": 2}


def ssm_bytes(cfg: dict[str, Any], key: str) -> int:
    ssm = str(cfg.get(key) or "auto")
    if ssm not in SSM_DTYPE_BYTES:
        raise InputError(f"{key} {ssm!r} is not one of {', '.join(SSM_DTYPE_BYTES)}")
    return SSM_DTYPE_BYTES[ssm]


def mla(cfg: dict[str, Any], need: Need) -> dict[str, Any]:
    """MLA's shape: the latent cache is kv_lora_rank + qk_rope_head_dim per token, shared by every head."""
    rope, nope = int(need("qk_rope_head_dim")), int(need("qk_nope_head_dim"))
    return {"kv_lora_rank": int(need("kv_lora_rank")), "q_lora_rank": int(cfg.get("q_lora_rank") or 0),
            "qk_rope_head_dim": rope, "v_head_dim": int(need("v_head_dim")), "head_dim": nope + rope,
            "num_kv_heads": int(need("num_attention_heads")),
            "gated_attention": bool(cfg.get("mla_use_output_gate", False))}


def gated_deltanet(cfg: dict[str, Any], hidden: int, need: Need) -> dict[str, Any]:
    k_heads, v_heads = int(need("linear_num_key_heads")), int(need("linear_num_value_heads"))
    k_dim, v_dim, kernel = int(need("linear_key_head_dim")), int(need("linear_value_head_dim")), \
        int(need("linear_conv_kernel_dim"))
    key, value = k_heads * k_dim, v_heads * v_dim
    conv = 2 * key + value
    return {"linear_conv_channels": conv, "linear_conv_kernel": kernel,
            "linear_state_elements": v_heads * v_dim * k_dim,
            "linear_mixer_params": hidden * (2 * key + 2 * value) + hidden * 2 * v_heads + conv * kernel
            + 2 * v_heads + v_dim + value * hidden}


def mamba2(cfg: dict[str, Any], hidden: int, need: Need) -> dict[str, Any]:
    heads, head_dim = int(need("mamba_num_heads")), int(need("mamba_head_dim"))
    groups, state, kernel = int(need("n_groups")), int(need("ssm_state_size")), int(need("conv_kernel"))
    inner = heads * head_dim
    conv = inner + 2 * groups * state
    return {"linear_conv_channels": conv, "linear_conv_kernel": kernel,
            "linear_state_elements": heads * head_dim * state,
            "linear_state_dtype_bytes": ssm_bytes(cfg, "mamba_ssm_cache_dtype"),
            "linear_mixer_params": hidden * (inner + conv + heads) + conv * kernel + 3 * heads + inner
            + inner * hidden}


def kda(cfg: dict[str, Any], hidden: int) -> dict[str, Any]:
    linear = cfg["linear_attn_config"]
    try:
        heads, head_dim, kernel = int(linear["num_heads"]), int(linear["head_dim"]), \
            int(linear["short_conv_kernel_size"])
    except (KeyError, TypeError, ValueError):
        raise InputError("linear_attn_config needs num_heads, head_dim and short_conv_kernel_size (KDA)") from None
    if min(heads, head_dim, kernel) < 1:
        raise InputError("linear_attn_config's num_heads, head_dim and short_conv_kernel_size must be positive")
    proj = heads * head_dim
    return {"linear_conv_channels": 3 * proj, "linear_conv_kernel": kernel,
            "linear_state_elements": heads * head_dim * head_dim,
            "linear_mixer_params": hidden * (4 * proj + head_dim + heads) + head_dim * proj + proj
            + 3 * proj * kernel + proj * hidden}


def linear_mixer(cfg: dict[str, Any], hidden: int, need: Need, name: str) -> dict[str, Any]:
    """Whichever linear mixer the config's keys describe: Gated DeltaNet, Mamba2 or KDA."""
    if cfg.get("linear_num_value_heads") is not None:
        return gated_deltanet(cfg, hidden, need)
    if cfg.get("mamba_num_heads") is not None:
        return mamba2(cfg, hidden, need)
    if isinstance(cfg.get("linear_attn_config"), dict):
        return kda(cfg, hidden)
    raise InputError(f"config.json for {name!r} lists linear-attention layers but none of the linear mixers modelled "
                     "here (Gated DeltaNet: linear_num_value_heads; Mamba2: mamba_num_heads; KDA: linear_attn_config)")
