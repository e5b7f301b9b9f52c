"""advisor/model/shape/kinds_reader.py and mixers.py: a config read by its layer kinds whatever its model_type, the
kinds' parameters and state worked out by hand on small configs, and what is refused."""

import json
from dataclasses import asdict

import pytest

from advisor.errors import InputError
from advisor.model.shape.config_reader import spec_from_config
from advisor.profiles.catalog import profiles_dir


def _profile(name: str) -> dict:
    return json.loads((profiles_dir() / "models" / f"{name}.json").read_text())


def _renamed(config: dict, model_type: str) -> dict:
    out = json.loads(json.dumps(config))
    inner = out.get("text_config") or out
    inner["model_type"] = model_type
    if inner is not out:
        out["model_type"] = model_type + "_wrapper"
    out["architectures"] = ["AcmeForCausalLM"]
    return out


# model types with readers of their own whose configs state every default they need: read by their kinds alone,
# renamed, they give the same ModelSpec (family and the MLP width of layers that have none aside)
@pytest.mark.parametrize("name", ["qwen3-8b", "llama-3.1-8b-instruct", "qwen3-30b-a3b", "deepseek-v3", "glm-4.5-air",
                                  "qwen3.5-27b", "qwen3.6-35b-a3b", "mixtral-8x7b-instruct-v0.1"])
def test_a_renamed_model_type_with_known_layer_kinds_reads_the_same(name):
    config = _profile(name)
    original, renamed = spec_from_config(config, name), spec_from_config(_renamed(config, "acme_finetune"), name)
    differ = {k for k, v in asdict(original).items()
              if asdict(renamed)[k] != v and k not in ("family", "dense_intermediate_size")}
    assert not differ, differ
    assert renamed.total_params == original.total_params and renamed.kv_bytes_per_token() == \
        original.kv_bytes_per_token() and renamed.linear_state_bytes() == original.linear_state_bytes()


def test_an_unknown_layer_kind_is_refused_by_that_kind():
    config = _renamed(_profile("qwen3.5-27b"), "acme_hybrid")
    config["text_config"]["layer_types"][5] = "lightning_conv"
    with pytest.raises(InputError, match=r"layer kind 'lightning_conv' \(layer_types\[5\]\) is not modelled"):
        spec_from_config(config, "acme")


@pytest.mark.parametrize("config, words", [
    ({"model_type": "bert", "architectures": ["BertForMaskedLM"], "hidden_size": 64, "num_attention_heads": 4},
     "not a text decoder"),
    ({"model_type": "mamba", "architectures": ["MambaForCausalLM"], "hidden_size": 64, "state_size": 16},
     "no attention layers"),
    ({"model_type": "t5x", "is_encoder_decoder": True, "hidden_size": 64, "num_attention_heads": 4,
      "num_hidden_layers": 2, "vocab_size": 50, "intermediate_size": 8}, "encoder-decoder"),
])
def test_what_no_layer_kind_here_describes_is_refused(config, words):
    with pytest.raises(InputError, match=words):
        spec_from_config(config, "x")


# Nemotron-H-shaped: 6 blocks "ME*E-M", hidden 32; Mamba2 of 4 heads x 8 (I = 32), 2 groups of state 16, conv 4;
# attention 4 heads, 2 KV x 8; MoE of 4 experts top-2 at width 8 plus a shared one of 16, relu2 (up and down only)
TINY_NEMOTRON = {"model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"], "hidden_size": 32,
                 "hybrid_override_pattern": "ME*E-M", "num_hidden_layers": 6, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "head_dim": 8, "mamba_num_heads": 4, "mamba_head_dim": 8, "n_groups": 2,
                 "ssm_state_size": 16, "conv_kernel": 4, "mamba_ssm_cache_dtype": "float32", "n_routed_experts": 4,
                 "num_experts_per_tok": 2, "moe_intermediate_size": 8, "moe_shared_expert_intermediate_size": 16,
                 "n_shared_experts": 1, "intermediate_size": 24, "mlp_hidden_act": "relu2", "vocab_size": 50,
                 "num_nextn_predict_layers": 1, "tie_word_embeddings": False}


def test_mamba2_blocks_relu2_mlps_and_hybrid_blocks():
    spec = spec_from_config(TINY_NEMOTRON, "nem")
    conv = 32 + 2 * 2 * 16  # I + 2 groups x state
    mamba = 32 * (32 + conv + 4) + conv * 4 + 3 * 4 + 32 + 32 * 32  # in_proj, conv1d, A/D/dt, norm, out_proj
    attention = 32 * (32 + 2 * 16) + 32 * 32  # q, k, v and o
    moe = 4 * 2 * 32 * 8 + 2 * 32 * 16 + 32 * 4  # experts (up + down), shared expert, router
    assert (spec.linear_layers, spec.kv_layers, spec.moe_layers, spec.dense_mlp_layers) == (2, 1, 2, 1)
    assert spec.decoder_params() == 2 * mamba + attention + 2 * moe + 2 * 32 * 24
    assert spec.linear_state_bytes() == 2 * (conv * 3 * 2 + 4 * 8 * 16 * 4)  # conv in bf16, SSM state in fp32
    assert spec.kv_bytes_per_token() == 1 * 2 * 2 * 8 * 2
    assert spec.mtp_layers == 1 and spec.mtp_draft().kv_layers == 1  # an MTP block: attention and MoE


def test_transformers_5s_block_names_read_as_the_pattern():
    # Nemotron-3.5 (transformers 5.8) writes layers_block_type and no num_hidden_layers
    renamed = {k: v for k, v in TINY_NEMOTRON.items() if k not in ("hybrid_override_pattern", "num_hidden_layers")}
    renamed["layers_block_type"] = ["mamba", "moe", "attention", "moe", "mlp", "mamba"]
    assert asdict(spec_from_config(renamed, "nem")) == asdict(spec_from_config(TINY_NEMOTRON, "nem"))


def test_a_latent_moe_runs_its_experts_at_the_latent_width():
    spec = spec_from_config({**TINY_NEMOTRON, "moe_latent_size": 16}, "nem")
    plain = spec_from_config(TINY_NEMOTRON, "nem")
    # each MoE layer: experts at width 16 (4 x 2 x 16 x 8), plus the h x l down and l x h up projections
    assert spec.decoder_params() - plain.decoder_params() == 2 * (4 * 2 * (16 - 32) * 8 + 2 * 32 * 16)


# Kimi-K3-shaped: 4 layers, KDA on 1-3 (numbered from 1), MLA on the 4th with an output gate; KDA 2 heads x 8, conv 4
TINY_KIMI = {"model_type": "kimi_linear", "hidden_size": 32, "num_hidden_layers": 4, "num_attention_heads": 2,
             "num_key_value_heads": 2, "kv_lora_rank": 8, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4,
             "v_head_dim": 8, "q_lora_rank": 0, "mla_use_output_gate": True, "intermediate_size": 16,
             "vocab_size": 50, "linear_attn_config": {"kda_layers": [1, 2, 3], "full_attn_layers": [4], "num_heads": 2,
                                                      "head_dim": 8, "short_conv_kernel_size": 4}}


def test_kda_and_gated_mla():
    spec = spec_from_config(TINY_KIMI, "kimi")
    proj = 2 * 8
    kda = 32 * (4 * proj + 8 + 2) + 8 * proj + proj + 3 * proj * 4 + proj * 32
    mla = 32 * 2 * 12 + 32 * (8 + 4) + 8 * 2 * (8 + 8) + 2 * 8 * 32 + 32 * 2 * 8  # q, kv_a, kv_b, o, g_proj
    assert spec.part_params()["attention"] == 3 * kda + mla
    assert spec.linear_state_bytes() == 3 * (3 * proj * 3 + 2 * 8 * 8) * 2
    assert spec.kv_bytes_per_token() == (8 + 4) * 2
