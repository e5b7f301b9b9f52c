"""config.json -> ModelSpec, read the way vLLM's model code reads it (vllm/model_executor/models/<file>.py, named
per model type below). The model types in SUPPORTED_MODEL_TYPES have readers of their own; the 2026 types
(architectures_2026.DESCRIBED_2026), and any model_type this project has never seen, are read by their layer kinds
(kinds_reader): a config whose layers are all kinds modelled here is read whatever its model_type, and one naming a
kind that is not is refused by that kind, in one line.
"""

from __future__ import annotations

from typing import Any

from advisor.errors import InputError
from advisor.model.shape.architectures import READERS, count, dsa_indexer, layer_types
from advisor.model.shape.architectures_2026 import read_2026
from advisor.model.shape.config_fields import FLAGS, check_blocks, check_fields
from advisor.model.shape.config_names import normalise, rope_factors
from advisor.model.shape.draft_heads import block_drafter
from advisor.model.shape.mixers import SSM_DTYPE_BYTES, gated_deltanet, ssm_bytes
from advisor.model.shape.modelspec import ModelSpec
from advisor.model.shape.quantization import from_quantization_config
from advisor.vllm.defaults import derived_max_model_len

# model_type -> what it is (and the vLLM model file whose layers are counted)
SUPPORTED_MODEL_TYPES = {
    "llama": "Llama 2/3, Vicuna, EAGLE heads: dense GQA (llama.py)",
    "mistral": "Mistral: dense GQA, optional sliding window on every layer (llama.py)",
    "qwen2": "Qwen2/2.5: dense GQA (qwen2.py)",
    "qwen3": "Qwen3 dense: GQA with q/k norms (qwen3.py)",
    "gemma": "Gemma: dense, tied embeddings (gemma.py)",
    "gemma2": "Gemma-2: alternating sliding-window and global layers (gemma2.py)",
    "gemma3": "Gemma-3: 5 sliding-window layers to 1 global (gemma3.py, gemma3_mm.py)",
    "gemma3_text": "Gemma-3 text-only (gemma3.py)",
    "mixtral": "Mixtral: MoE, top-2 of 8 (mixtral.py)",
    "qwen2_moe": "Qwen1.5/2-MoE: MoE with a shared expert (qwen2_moe.py)",
    "qwen3_moe": "Qwen3-MoE (30B-A3B, 235B-A22B): 128 experts, top-8 (qwen3_moe.py)",
    "qwen3_next": "Qwen3-Next: Gated DeltaNet + gated full attention 3:1, MoE with shared expert, MTP (qwen3_next.py)",
    "qwen3_5_text": "Qwen3.5 dense text: Gated DeltaNet + full attention 3:1, MTP (qwen3_5.py)",
    "qwen3_5_moe_text": "Qwen3.5 MoE text: Gated DeltaNet + full attention 3:1, MoE, MTP (qwen3_5.py)",
    "deepseek_v2": "DeepSeek-V2: MLA, MoE with shared experts, first dense layers (deepseek_v2.py)",
    "deepseek_v3": "DeepSeek-V3/R1: MLA, 256 experts top-8 + 1 shared, 3 dense layers, MTP (deepseek_v2.py)",
    "kimi_k2": "Kimi-K2: DeepSeek-V3 architecture, 384 experts (deepseek_v2.py)",
    "deepseek_v32": "DeepSeek-V3.2: DeepSeek-V3 with sparse attention (DSA indexer, top-2048), MTP "
                    "(vllm/models/deepseek_v32)",
    "glm_moe_dsa": "GLM-5/5.1/5.2: MLA + DSA indexer (5.2: shared by 4 layers), MoE with shared expert, MTP "
                   "(vllm/models/deepseek_v32)",
    "minimax_m2": "MiniMax-M2/M2.5: GQA, MoE 256 experts top-8, its MTP modules dropped by vLLM (minimax_m2.py)",
    "hy_v3": "Hunyuan 3 (Hy3): GQA, MoE with shared expert, first dense layer, MTP (hy_v3.py)",
    "gemma4_text": "Gemma-4: 5 sliding-window layers to 1 wider global, dense MLP beside MoE (gemma4.py, gemma4_mm.py)",
    "glm4_moe": "GLM-4.5/4.6: GQA, MoE with shared expert, first dense layers, MTP (glm4_moe.py)",
    "gpt_oss": "gpt-oss: MoE, alternating 128-token sliding windows, MXFP4 experts (gpt_oss.py)",
    "llama4": "Llama-4 Scout/Maverick: MoE + shared expert, chunked local attention 3:1 (llama4.py)",
    "llama4_text": "Llama-4 text-only (llama4.py)",
}
__all__ = ["SSM_DTYPE_BYTES", "SUPPORTED_MODEL_TYPES", "model_type_of", "spec_from_config"]
# A config without model_type (hand-written, or an EAGLE head's) is read by its architecture, as vLLM's registry does
# (vllm/model_executor/models/registry.py)
_ARCHITECTURES = {"LlamaForCausalLM": "llama", "EagleLlamaForCausalLM": "llama", "LlamaForCausalLMEagle3": "llama",
                  "Eagle3LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2",
                  "Qwen3ForCausalLM": "qwen3", "MixtralForCausalLM": "mixtral", "DeepseekV3ForCausalLM": "deepseek_v3",
                  "Qwen3MoeForCausalLM": "qwen3_moe", "GptOssForCausalLM": "gpt_oss",
                  "DeepseekV32ForCausalLM": "deepseek_v32", "GlmMoeDsaForCausalLM": "glm_moe_dsa",
                  "MiniMaxM2ForCausalLM": "minimax_m2", "HYV3ForCausalLM": "hy_v3", "Gemma4ForCausalLM": "gemma4_text",
                  "NemotronHForCausalLM": "nemotron_h", "DeepseekV4ForCausalLM": "deepseek_v4",
                  "KimiLinearForCausalLM": "kimi_linear", "MiMoV2FlashForCausalLM": "mimo_v2_flash"}
# Multimodal wrappers whose language model sits in text_config (kimi_k25.py builds Kimi-K2.5's from text_config, a
# DeepSeek-V3-architecture kimi_k2 config; a text_config without its own model_type is read as the wrapper names)
_WRAPPERS = {"gemma3": "gemma3_text", "llama4": "llama4_text", "qwen3_5": "qwen3_5_text",
             "qwen3_5_moe": "qwen3_5_moe_text", "gemma4": "gemma4_text", "kimi_k25": "kimi_k2",
             "kimi_k3": "kimi_linear", "qwen4_exp": "qwen4_exp_text", "deepseek_v41": "deepseek_v41_text"}
# Architectures a config of a model_type without a reader of its own may name: a decoder that generates text
_GENERATIVE = ("ForCausalLM", "ForConditionalGeneration", "LMHeadModel", "DraftModel", "DSparkModel", "Eagle3")


def _kind(cfg: dict[str, Any], block=None) -> str:
    """An EAGLE head, as vLLM recognises one from its config: an architecture named for EAGLE (EagleLlamaForCausalLM,
    LlamaForCausalLMEagle3, ...) or a reduced draft vocabulary (`draft_vocab_size`, EAGLE-3). A plain one-layer
    config can be an EAGLE-1 head too; that is only known from --method eagle (resolve.check_pair). A DFlash or
    DSpark drafter (`draft_heads.block_drafter`) is a block head."""
    if block is not None and block.method != "eagle3":
        return "block_head"
    eagle_arch = any("eagle" in str(a).lower() for a in cfg.get("architectures") or ())
    return "eagle_head" if eagle_arch or cfg.get("draft_vocab_size") else "model"


def _check_unknown(config: dict[str, Any], cfg: dict[str, Any], model_type: str, name: str) -> None:
    """A model_type without a reader of its own is read by its layer kinds only if it is a text decoder with
    attention heads; anything else is refused here, by what it is."""
    archs = [str(a) for a in config.get("architectures") or cfg.get("architectures") or ()]
    what = f"model_type {model_type or '(none)'!r} ({', '.join(archs) or 'no architectures'})"
    if archs and not any(a.endswith(_GENERATIVE) for a in archs):
        raise InputError(f"{name!r}: {what} is not a text decoder vLLM generates with: not modelled")
    if cfg.get("num_attention_heads") is None:
        raise InputError(f"{name!r}: {what} has no attention layers (num_attention_heads) and no layer kinds this "
                         "reader knows: not modelled (`specadvisor list models` names the readers)")


def _architecture(cfg: dict[str, Any], model_type: str, layers: int, hidden: int, need, name: str) -> dict[str, Any]:
    """The fields that differ by model type (`need` reads a required key)."""
    if model_type not in SUPPORTED_MODEL_TYPES:
        return read_2026(cfg, model_type, layers, hidden, need, name)
    out: dict[str, Any] = {}
    get = cfg.get
    if model_type in ("gemma2", "mistral", "qwen2", "qwen3", "llama", "gemma", "mixtral", "qwen2_moe", "qwen3_moe"):
        window = get("sliding_window") if get("use_sliding_window", True) else None
        if window and window >= get("max_position_embeddings", 0):
            window = None  # a window as long as the context is no window
        if window:  # Gemma-2 alternates sliding and global layers (gemma2.py); Mistral-style configs slide on all
            out.update(sliding_window=int(window), sliding_layers=layers // 2 if model_type == "gemma2" else layers)
    if model_type in ("gemma3_text", "gpt_oss"):
        # Gemma-3: sliding_window_pattern 6 (5 local : 1 global); gpt-oss: even layers slide (gpt_oss.py
        # `OAIAttention`: sliding_window if layer_idx % 2 == 0), as transformers' layer_types default writes it.
        every = int(get("sliding_window_pattern") or 6) if model_type == "gemma3_text" else 2
        types = layer_types(cfg, layers, every, "sliding_attention", "full_attention")
        out.update(sliding_window=int(need("sliding_window")), sliding_layers=count(types, "sliding_attention"))
    if model_type in ("mixtral", "gpt_oss"):
        out.update(num_experts=int(need("num_local_experts")),
                   experts_per_token=int(get("num_experts_per_tok") or get("experts_per_token")))
    if model_type in ("qwen2_moe", "qwen3_moe", "qwen3_next", "qwen3_5_moe_text"):
        # qwen3_moe.py `Qwen3MoeDecoderLayer`: MoE unless in mlp_only_layers, every decoder_sparse_step-th layer
        step, dense_only = int(get("decoder_sparse_step") or 1), set(get("mlp_only_layers") or ())
        moe = [i not in dense_only and (i + 1) % step == 0 for i in range(layers)]
        out.update(num_experts=int(need("num_experts")), experts_per_token=int(need("num_experts_per_tok")),
                   intermediate_size=int(need("moe_intermediate_size")), dense_layers=moe.count(False),
                   dense_intermediate_size=int(get("intermediate_size") or 0),
                   shared_expert_intermediate_size=int(get("shared_expert_intermediate_size") or 0))
    if model_type in ("deepseek_v2", "deepseek_v3", "kimi_k2", "glm4_moe", "deepseek_v32", "glm_moe_dsa"):
        # deepseek_v2.py / glm4_moe.py: layers from first_k_dense_replace on are MoE (moe_layer_freq 1 in these
        # models), with n_shared_experts x moe_intermediate_size of shared expert
        if get("moe_layer_freq") not in (None, 1):
            raise InputError(f"{model_type} with moe_layer_freq {get('moe_layer_freq')} is not modelled")
        moe_width = int(need("moe_intermediate_size"))
        out.update(num_experts=int(need("n_routed_experts")), experts_per_token=int(need("num_experts_per_tok")),
                   intermediate_size=moe_width, dense_layers=int(get("first_k_dense_replace") or 0),
                   dense_intermediate_size=int(need("intermediate_size")),
                   shared_expert_intermediate_size=int(get("n_shared_experts") or 0) * moe_width)
    if model_type in ("deepseek_v2", "deepseek_v3", "kimi_k2", "deepseek_v32", "glm_moe_dsa"):
        rope, nope = int(need("qk_rope_head_dim")), int(need("qk_nope_head_dim"))
        out.update(kv_lora_rank=int(need("kv_lora_rank")), q_lora_rank=int(get("q_lora_rank") or 0),
                   qk_rope_head_dim=rope, v_head_dim=int(need("v_head_dim")), head_dim=nope + rope,
                   num_kv_heads=int(need("num_attention_heads")))
    if model_type in ("deepseek_v32", "glm_moe_dsa"):
        out.update(dsa_indexer(cfg, layers, need))
    if model_type in READERS:
        out.update(READERS[model_type](cfg, layers, need))
    if model_type in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"):
        # qwen_gdn_linear_attn.py: in_proj_qkvz h x (2 key_dim + 2 value_dim), in_proj_ba h x 2 v_heads, conv1d
        # conv_dim x kernel, A_log and dt_bias per v head, out_proj value_dim x h; conv_dim = 2 key_dim + value_dim
        types = layer_types(cfg, layers, int(get("full_attention_interval") or 4), "linear_attention",
                             "full_attention")
        out.update(gated_deltanet(cfg, hidden, need), linear_layers=count(types, "linear_attention"),
                   gated_attention=bool(get("attn_output_gate", True)))
    if model_type in ("qwen3_5_text", "qwen3_5_moe_text"):  # vLLM reads mamba_ssm_dtype for Qwen3.5 only
        out["linear_state_dtype_bytes"] = ssm_bytes(cfg, "mamba_ssm_dtype")
    if model_type == "llama4_text":
        # llama4.py: layer i is MoE when (i + 1) % interleave_moe_layer_step == 0, else a dense MLP of
        # intermediate_size_mlp; each MoE layer has one shared expert as wide as an expert; layers with
        # no_rope_layers[i] == 1 use chunked local attention (`Llama4Attention`: ChunkedLocalAttention unless nope)
        step = int(get("interleave_moe_layer_step") or 1)
        width = int(need("intermediate_size"))
        no_rope = list(get("no_rope_layers") or [])
        out.update(num_experts=int(need("num_local_experts")), experts_per_token=int(need("num_experts_per_tok")),
                   dense_layers=sum(1 for i in range(layers) if step <= 0 or (i + 1) % step),
                   dense_intermediate_size=int(need("intermediate_size_mlp")), shared_expert_intermediate_size=width)
        if get("attention_chunk_size") and no_rope:
            out.update(attention_chunk=int(need("attention_chunk_size")), chunked_layers=sum(no_rope))
    # MTP layers: num_nextn_predict_layers, or mtp_num_hidden_layers for Qwen3.5 (vllm/config/speculative.py
    # `SpeculativeConfig.hf_config_override`). Qwen3-Next checkpoints omit the key and vLLM builds one MTP layer
    # (qwen3_next_mtp.py `Qwen3NextMultiTokenPredictor.__init__`: getattr(config, "num_nextn_predict_layers", 1)).
    mtp = get("num_nextn_predict_layers", get("mtp_num_hidden_layers", 1 if model_type == "qwen3_next" else 0))
    out["mtp_layers"] = int(mtp or 0)
    return out


def model_type_of(config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the language model's model_type, its config): multimodal wrappers nest it in text_config."""
    cfg = config.get("text_config") or config
    archs = [str(a) for a in config.get("architectures") or ()]
    inner = str(cfg.get("model_type") or config.get("model_type") or
                next((_ARCHITECTURES[a] for a in archs if a in _ARCHITECTURES), ""))
    return _WRAPPERS.get(inner, inner), cfg


def spec_from_config(config: dict[str, Any], name: str, hf_id: str | None = None) -> ModelSpec:
    """Build a ModelSpec from a config.json dict (plus our optional `_specadvisor` metadata block)."""
    check_blocks(config, name)
    meta = config.get("_specadvisor") or {}
    model_type, cfg = model_type_of(config)

    def need(key: str) -> Any:
        if key not in cfg or cfg[key] is None:
            raise InputError(f"config.json for {name!r} has no {key!r}: is it a decoder-only language model?")
        return cfg[key]

    if model_type not in SUPPORTED_MODEL_TYPES:  # before any key: an encoder or a Mamba-1 is not read as a Llama
        _check_unknown(config, cfg, model_type, name)
    wrapped, written = cfg is not config, cfg
    cfg = normalise(written, model_type, name)  # one name per field, whoever wrote it
    check_fields({key: cfg.get(key) for key in written}, name)  # errors name the key the file holds
    if wrapped:
        check_fields({key: config[key] for key in FLAGS if key in config}, name)
    try:
        hidden, heads = int(need("hidden_size")), int(need("num_attention_heads"))
        pattern = cfg.get("hybrid_override_pattern") or cfg.get("layers_block_type")  # Nemotron-H: one per block
        layers = int(cfg["num_hidden_layers"]) if cfg.get("num_hidden_layers") is not None or not pattern else \
            len(pattern)
        block = block_drafter(cfg, name)
        # vLLM takes model_max_length where a config has it (transformers 5 writes Kimi-Linear's length so:
        # vllm/transformers_utils/model_arch_config_convertor.py), else max_position_embeddings
        positions = cfg.get("model_max_length") or cfg.get("max_position_embeddings")
        fields: dict[str, Any] = {
            "name": meta.get("name", name),
            "hf_id": hf_id or meta.get("hf_id", name),
            "family": meta.get("family", cfg.get("model_type", "unknown")),
            "kind": meta.get("kind", "model" if wrapped else _kind(config, block)),
            "vocab_size": int(need("vocab_size")),
            "hidden_size": hidden,
            "num_layers": layers,
            "num_heads": heads,
            "num_kv_heads": int(cfg.get("num_key_value_heads") or heads),
            "head_dim": int(cfg.get("head_dim") or hidden // heads),
            # a dense MLP's width; an MoE config without one (every layer routed) gives the experts'
            "intermediate_size": int(cfg.get("intermediate_size") or cfg.get("moe_intermediate_size")
                                     or need("intermediate_size")),
            # Gemma's configs omit the key and its config class defaults to tied; others default to untied.
            "tied_embeddings": bool(cfg.get("tie_word_embeddings", config.get(
                "tie_word_embeddings", model_type.startswith("gemma")))),
            "lm_head_vocab": int(cfg["draft_vocab_size"]) if cfg.get("draft_vocab_size") else None,
            "published_params_b": meta.get("published_params_b"),
            "trained_for": str(meta.get("target", "")),
            "max_context": derived_max_model_len(positions, rope_factors(cfg, name), model_type) if positions else None,
        }
        fields.update(_architecture(cfg, model_type, layers, hidden, need, name), block=block)
        quant = config.get("quantization_config") or cfg.get("quantization_config")
        if quant:
            checkpoint = from_quantization_config(quant, name)
            fields.update(quantization=checkpoint.method, quantized_dtype=checkpoint.weight_dtype,
                          unquantized=checkpoint.unquantized,
                          part_formats=checkpoint.part_formats + tuple(fields.get("part_formats", ())))
        return ModelSpec(**fields)
    except (TypeError, ValueError, OverflowError, KeyError, AttributeError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"config.json for {name!r} has a malformed or missing value: {exc!s:.200}") from None
