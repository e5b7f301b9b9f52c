"""advisor/model/shape/architectures.py: issue 39's model types on small synthetic configs whose counts are worked out
by hand below (the shipped profiles' counts are checked in tests/profiles/test_catalog.py, their reports through the CLI
in tests/cli/test_recommend_new_architectures.py)."""

import pytest
from tests.model.shape.test_config_reader import TINY_MLA, TINY_NEXT

from advisor.errors import InputError
from advisor.model.shape.config_reader import SUPPORTED_MODEL_TYPES, spec_from_config

# GLM-5.2-shaped DSA miniature: 8 MLA layers, an indexer of 2 heads x 128 (one fp32 scale per 128 keys)
TINY_DSA = {**TINY_MLA, "model_type": "glm_moe_dsa", "architectures": ["GlmMoeDsaForCausalLM"],
            "num_hidden_layers": 8, "index_topk": 64, "index_n_heads": 2, "index_head_dim": 128}
# gemma-4-shaped: 6 layers, 5 sliding (4 KV heads x 8) then 1 global (1 KV head x 16), dense MLP beside 4 experts
TINY_GEMMA4 = {"model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"], "text_config": {
    "model_type": "gemma4_text", "hidden_size": 32, "num_hidden_layers": 6, "num_attention_heads": 4,
    "num_key_value_heads": 4, "head_dim": 8, "global_head_dim": 16, "num_global_key_value_heads": 1,
    "attention_k_eq_v": True, "intermediate_size": 24, "moe_intermediate_size": 8, "num_experts": 4,
    "top_k_experts": 2, "vocab_size": 50, "sliding_window": 16, "max_position_embeddings": 4096,
    "layer_types": ["sliding_attention"] * 5 + ["full_attention"], "num_kv_shared_layers": 0,
    "hidden_size_per_layer_input": 0}}
TINY_HY3 = {"model_type": "hy_v3", "hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 64, "expert_hidden_dim": 8,
            "moe_intermediate_size": 8, "num_experts": 6, "num_experts_per_tok": 2, "num_shared_experts": 1,
            "first_k_dense_replace": 1, "vocab_size": 50, "num_nextn_predict_layers": 1}
TINY_MINIMAX = {"model_type": "minimax_m2", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 8, "num_local_experts": 4,
                "num_experts_per_tok": 2, "vocab_size": 50, "use_mtp": True, "num_mtp_modules": 3,
                "shared_intermediate_size": 0}


# vLLM's rule (deepseek_v32/attention.py): layer i skips its indexer when max(i - offset + 1, 0) % freq != 0
@pytest.mark.parametrize("freq, offset, pattern, indexers", [
    (None, None, None, 8),  # DeepSeek-V3.2 / GLM-5: every layer
    (4, 3, None, 4),  # GLM-5.2's values: layers 0, 1, 2 (max(.., 0) = 0), then 6
    (2, 2, None, 5),  # layers 0, 1, then 3, 5, 7
    (None, None, "FSFSFSFS", 4),  # an explicit pattern: 'S' layers reuse the top-k
])
def test_dsa_indexer_layers_follow_vllms_skip_rule(freq, offset, pattern, indexers):
    cfg = {**TINY_DSA, **({"index_topk_freq": freq} if freq else {}),
           **({"index_skip_topk_offset": offset} if offset is not None else {}),
           **({"index_topk_pattern": pattern} if pattern else {})}
    spec = spec_from_config(cfg, "dsa")
    assert (spec.index_layers, spec.index_topk, spec.index_heads, spec.index_head_dim) == (indexers, 64, 2, 128)


def test_dsa_cache_and_reads():
    spec = spec_from_config(TINY_DSA, "dsa")  # kv_lora_rank 8 + rope 4; 8 indexers of 128 fp8 keys + 4 B of scale
    assert spec.kv_bytes_per_token(2.0) == 8 * (8 + 4) * 2 + 8 * 132
    assert spec.kv_bytes_per_token(1.0) == 8 * (8 * (1 + 4 / 128) + 4 * 2) + 8 * 132  # sparse fp8: rope in bf16
    # attention reads the 64 tokens picked, the indexer every cached token
    assert float(spec.kv_bytes_read(1000, 2.0)) == 8 * 64 * (8 + 4) * 2 + 8 * 1000 * 132
    dense = spec_from_config({**TINY_MLA, "num_hidden_layers": 8}, "mla")
    indexer = 12 * 2 * 128 + 16 * (128 + 2)  # wq_b from the q latent, wk + weights_proj from the hidden state
    assert spec.total_params - dense.total_params == 8 * indexer
    assert spec.mtp_draft().index_layers == 1  # an MTP layer always has its own indexer


def test_gemma4_two_layer_shapes_and_a_dense_mlp_beside_the_experts():
    spec = spec_from_config(TINY_GEMMA4, "g4")
    assert (spec.sliding_layers, spec.global_head_dim, spec.global_kv_heads) == (5, 16, 1)
    assert spec.kv_bytes_per_token(2.0) == (5 * 2 * 4 * 8 + 1 * 2 * 1 * 16) * 2
    local = 32 * (4 * 8 + 2 * 4 * 8) + 4 * 8 * 32
    glob = 32 * (4 * 16 + 2 * 1 * 16) + 4 * 16 * 32
    layer_mlp = 3 * 32 * 24 + 4 * 3 * 32 * 8 + 32 * 4  # dense MLP, 4 experts, router
    assert spec.total_params == 5 * local + glob + 6 * layer_mlp + 50 * 32  # tied embeddings
    assert float(spec.attended_tokens(100)) == 5 * 16 + 100
    assert float(spec.attention_flops_per_context_token(1, full=False)) == 4 * 4 * 8
    assert float(spec.attention_flops_per_context_token(1)) == 4 * 4 * 16


@pytest.mark.parametrize("key", ["num_kv_shared_layers", "hidden_size_per_layer_input"])
def test_gemma4_per_layer_embeddings_and_shared_kv_are_refused(key):
    cfg = {**TINY_GEMMA4, "text_config": {**TINY_GEMMA4["text_config"], key: 2}}
    with pytest.raises(InputError, match=key):
        spec_from_config(cfg, "g4")


def test_hy3_dense_first_layer_shared_expert_and_mtp():
    spec = spec_from_config(TINY_HY3, "hy")
    assert (spec.dense_layers, spec.dense_intermediate_size, spec.intermediate_size,
            spec.shared_expert_intermediate_size, spec.mtp_layers) == (1, 64, 8, 8, 1)
    attention = 32 * (4 * 8 + 2 * 2 * 8) + 4 * 8 * 32
    moe = 6 * 3 * 32 * 8 + 3 * 32 * 8 + 32 * 6
    assert spec.total_params == 3 * attention + 3 * 32 * 64 + 2 * moe + 2 * 50 * 32
    assert spec.mtp_draft().moe_layers == 1  # the MTP block sits past first_k_dense_replace


def test_minimax_m2_mtp_modules_are_not_a_drafter_in_vllm():
    spec = spec_from_config(TINY_MINIMAX, "mm")
    assert (spec.num_experts, spec.intermediate_size, spec.shared_expert_intermediate_size, spec.mtp_layers) == \
        (4, 8, 0, 0)
    with pytest.raises(InputError, match="shared expert"):
        spec_from_config({**TINY_MINIMAX, "shared_intermediate_size": 16}, "mm")


def test_kimi_k25_wraps_a_kimi_k2_language_model_even_without_its_model_type():
    text = {**TINY_MLA, "model_type": "kimi_k2", "num_nextn_predict_layers": 0}
    nested = spec_from_config({"model_type": "kimi_k25", "text_config": text}, "k25")
    bare = spec_from_config({"model_type": "kimi_k25", "text_config": {k: v for k, v in text.items()
                                                                       if k != "model_type"}}, "k25")
    assert nested.total_params == bare.total_params == spec_from_config(text, "k2").total_params


def test_the_new_model_types_are_listed_and_read_by_architecture_too():
    for model_type in ("deepseek_v32", "glm_moe_dsa", "minimax_m2", "hy_v3", "gemma4_text"):
        assert model_type in SUPPORTED_MODEL_TYPES
    by_arch = {k: v for k, v in TINY_DSA.items() if k != "model_type"}
    assert spec_from_config(by_arch, "dsa").index_layers == 8


def test_qwen3_5_recurrent_state_takes_its_configs_mamba_ssm_dtype():
    """vLLM sets Qwen3.5's mamba_ssm_cache_dtype from the config's mamba_ssm_dtype (float32 in every published one);
    the conv state stays in the model's dtype. Qwen3-Next's config has no such key: its state is 16 bit."""
    text = {**TINY_NEXT, "model_type": "qwen3_5_moe_text", "mtp_num_hidden_layers": 1}
    wrapped = {"model_type": "qwen3_5_moe", "text_config": {**text, "mamba_ssm_dtype": "float32"}}
    conv, state = 3 * 64 * 3, 3 * 4 * 8 * 8  # 3 linear layers: 64 conv channels x (kernel - 1); 4 v heads x 8 x 8
    assert spec_from_config(wrapped, "q35").linear_state_bytes() == conv * 2 + state * 4
    assert spec_from_config(text, "q35").linear_state_bytes() == (conv + state) * 2
    with pytest.raises(InputError, match="mamba_ssm_dtype"):
        spec_from_config({**text, "mamba_ssm_dtype": "int8"}, "q35")


def test_gemma4_global_layers_as_transformers_5_saves_them():
    """transformers 5 drops global_head_dim / num_global_key_value_heads on save and writes per_layer_config
    overrides of the full-attention layers (keys as zero-padded strings), which vLLM's gemma4.py reads."""
    text = {k: v for k, v in TINY_GEMMA4["text_config"].items()
            if k not in ("global_head_dim", "num_global_key_value_heads")}
    saved = {**TINY_GEMMA4, "text_config": {**text, "per_layer_config": {"05": {"head_dim": 16,
                                                                                "num_key_value_heads": 1}}}}
    assert spec_from_config(saved, "g4").kv_bytes_per_token() == \
        spec_from_config(TINY_GEMMA4, "g4").kv_bytes_per_token() == (5 * 2 * 4 * 8 + 2 * 1 * 16) * 2
    # without attention_k_eq_v (the class default is false) the global layers keep num_key_value_heads
    plain = {**TINY_GEMMA4, "text_config": {**TINY_GEMMA4["text_config"], "attention_k_eq_v": False}}
    assert spec_from_config(plain, "g4").kv_bytes_per_token() == (5 * 2 * 4 * 8 + 2 * 4 * 16) * 2
    odd = {**TINY_GEMMA4, "text_config": {**text, "per_layer_config": {"0": {"head_dim": 16}}}}
    with pytest.raises(InputError, match="per_layer_config"):
        spec_from_config(odd, "g4")
