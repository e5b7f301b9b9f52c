"""config.json field names as transformers 5 writes them and as earlier versions did: `normalise` gives the reader
(`config_reader`) every name of a field whichever one a checkpoint holds, once, before anything is read.

What transformers 5 (5.19, read in its models/<type>/configuration_<type>.py) renames in the fields the reader uses:
- expert counts: a config class's `attribute_map` makes two names one field, and `save_pretrained` writes the stored
  one. Qwen3-MoE stores `num_local_experts` where transformers 4 wrote `num_experts` (configuration_qwen3_moe.py:
  attribute_map {"num_experts": "num_local_experts"}); vLLM reads `config.num_experts` through that map
  (vllm/model_executor/models/qwen3_moe.py). `SAME_FIELD` lists every pair of the model types read here.
- a Kimi-K2 language model under a wrapper's text_config is rebuilt as DeepseekV3Config and saved with model_type
  `deepseek_v3` (kimi_k25/configuration_kimi_k25.py `Kimi_K25Config.__post_init__`: "kimi_k2" -> "deepseek_v3"):
  the same architecture, read by the same branch.
- `rope_scaling` and `rope_theta` move into `rope_parameters`, per layer type where layers differ (Gemma-3)
  (modeling_rope_utils.py `RotaryEmbeddingConfigMixin.convert_rope_params_to_dict`); `rope_factors` reads either.
- `torch_dtype` is written `dtype` (configuration_utils.py `PreTrainedConfig.__post_init__`). Neither is read: vLLM
  serves a float32 checkpoint in 16 bit too (vllm/config/model.py `_resolve_auto_dtype`), so weights cost 16 bits.
- Qwen2-MoE writes `sliding_window` 0 where it uses none (configuration_qwen2_moe.py `__post_init__`: `sliding_window
  if use_sliding_window else 0`; transformers 4 kept the configured window): read as no window.
- Gemma-4 turns `global_head_dim` and `num_global_key_value_heads` into `per_layer_config` overrides, and
  DeepSeek-V3.2 / Kimi-K2.5 write `head_dim` as qk_rope_head_dim: their readers take either form
  (architectures.py `_gemma4_global_shape`; the MLA branch computes head_dim from qk_nope + qk_rope).
- Qwen3-Next / Qwen3.5 drop `full_attention_interval` for the `layer_types` it expands to, and Gemma-3 writes
  `_sliding_window_pattern` beside its `layer_types` (configuration_qwen3_next.py, configuration_gemma3.py
  `__post_init__`): the reader takes layer_types first.
"""

from __future__ import annotations

from typing import Any

from advisor.errors import InputError

_EXPERTS_MAP = ("num_experts", "num_local_experts")  # attribute_map {"num_experts": "num_local_experts"}
_DEEPSEEK = (("num_local_experts", "n_routed_experts"), ("num_mtp_layers", "num_nextn_predict_layers"))
# model_type -> pairs of names transformers treats as one field: the config class's attribute_map (alias, stored
# name), and the `num_experts` re-route of DeepSeek-V3.2 / GLM-5 (`__post_init__`: "BC: re-route `num_experts`")
SAME_FIELD: dict[str, tuple[tuple[str, str], ...]] = {
    "qwen3_moe": (_EXPERTS_MAP,),  # configuration_qwen3_moe.py
    "mixtral": (_EXPERTS_MAP,),  # configuration_mixtral.py
    "gpt_oss": (_EXPERTS_MAP,),  # configuration_gpt_oss.py
    "minimax_m2": (_EXPERTS_MAP,),  # configuration_minimax_m2.py
    "deepseek_v2": (("num_experts", "n_routed_experts"),),  # configuration_deepseek_v2.py
    "deepseek_v3": _DEEPSEEK,  # configuration_deepseek_v3.py
    "kimi_k2": _DEEPSEEK,  # read as DeepseekV3Config (above)
    "glm4_moe": _DEEPSEEK,  # configuration_glm4_moe.py
    "deepseek_v32": (_DEEPSEEK[0], ("num_experts", "n_routed_experts")),  # configuration_deepseek_v32.py
    "glm_moe_dsa": (_DEEPSEEK[0], ("num_experts", "n_routed_experts")),  # configuration_glm_moe_dsa.py
    "hy_v3": (("num_local_experts", "num_experts"),),  # configuration_hy_v3.py
}
# The layer types a nested rope_parameters is keyed by (transformers' `nested_rope_parameter_keys`: the config's
# layer_types; vllm/transformers_utils/config.py `is_rope_parameters_nested`)
_LAYER_KINDS = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention")


def normalise(cfg: dict[str, Any], model_type: str, name: str) -> dict[str, Any]:
    """A copy of one (language-model) config in which every name `SAME_FIELD` pairs holds the value, and
    `rope_parameters` is set from `rope_scaling` / `rope_theta` when only those are there. A config giving two
    names of one field two values is refused: transformers would keep whichever it set last."""
    out = dict(cfg)
    for alias, stored in SAME_FIELD.get(model_type, ()):
        a, b = out.get(alias), out.get(stored)
        if a is not None and b is not None and a != b:
            raise InputError(f"config.json for {name!r} gives {alias} {a!r} and {stored} {b!r}: transformers reads "
                             f"them as one field ({model_type}); keep one")
        if a is not None or b is not None:
            out[alias] = out[stored] = b if b is not None else a
    window = out.get("sliding_window")
    if type(window) is int and window == 0 and not out.get("use_sliding_window"):
        out["sliding_window"] = None  # transformers 5's Qwen2-MoE writes 0 for "no window" (above)
    scaling = out.get("rope_scaling")
    if scaling is not None and not isinstance(scaling, dict):  # "yarn", 5, [1, 2]: transformers refuses them too
        raise InputError(f"config.json for {name!r}: rope_scaling must be an object (rope_type, factor, ...), got "
                         f"{str(scaling)[:60]!r}")
    if out.get("rope_parameters") is None and (scaling or out.get("rope_theta") is not None):
        legacy = dict(scaling or {})
        legacy.setdefault("rope_type", legacy.get("type", "default"))
        if out.get("rope_theta") is not None:
            legacy.setdefault("rope_theta", out["rope_theta"])
        out["rope_parameters"] = legacy
    return out


def rope_factors(cfg: dict[str, Any], name: str) -> list[tuple[str, float]]:
    """(rope_type, factor) of each RoPE a normalised config declares: one, or one per layer type when nested
    (transformers 5 nests Gemma-3's by full_attention / sliding_attention). A legacy `type` key counts as
    `rope_type` (vllm/transformers_utils/config.py `patch_legacy_rope_type`)."""
    params = cfg.get("rope_parameters")
    if not params:
        return []
    if not isinstance(params, dict):
        raise InputError(f"config.json for {name!r}: rope_parameters must be an object, got {params!r}")
    nested = set(params) <= set(_LAYER_KINDS)
    found = []
    for each in params.values() if nested else [params]:
        if not isinstance(each, dict):
            continue  # a layer type saved with no RoPE (null)
        factor = each.get("factor", 1.0)
        if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float)) or
                                   not 0 < factor < float("inf")):
            raise InputError(f"config.json for {name!r}: the RoPE scaling factor must be a positive number, "
                             f"got {factor!r}")
        found.append((str(each.get("rope_type", each.get("type", "default"))), float(factor or 1.0)))
    return found
