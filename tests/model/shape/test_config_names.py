"""One name per field, whichever transformers wrote (advisor/model/shape/config_names.py); the round trip through
transformers' own classes is tests/model/shape/test_config_roundtrip.py."""

import pytest

from advisor.errors import InputError
from advisor.model.shape.config_names import normalise, rope_factors
from advisor.model.shape.config_reader import spec_from_config

LLAMA = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "vocab_size": 100, "intermediate_size": 128, "max_position_embeddings": 4096}
MOE = {**LLAMA, "model_type": "qwen3_moe", "moe_intermediate_size": 32, "num_experts_per_tok": 2}


def test_either_name_of_an_expert_count_is_read():
    old = spec_from_config({**MOE, "num_experts": 8}, "old")
    new = spec_from_config({**MOE, "num_local_experts": 8}, "new")
    assert old.num_experts == new.num_experts == 8 and old.total_params == new.total_params


def test_two_names_of_one_field_disagreeing_are_refused():
    with pytest.raises(InputError, match="num_experts 8 and num_local_experts 16"):
        spec_from_config({**MOE, "num_experts": 8, "num_local_experts": 16}, "both")
    assert normalise({**MOE, "num_experts": 8, "num_local_experts": 8}, "qwen3_moe", "x")["num_experts"] == 8


def test_names_are_paired_only_where_transformers_pairs_them():
    # Qwen3-Next's class has no attribute_map: a stray num_local_experts is not its expert count (vLLM neither)
    assert "num_experts" not in normalise({"num_local_experts": 8}, "qwen3_next", "x")
    assert normalise({"num_mtp_layers": 1}, "deepseek_v3", "x")["num_nextn_predict_layers"] == 1


def test_legacy_and_transformers_5_rope_give_the_same_context():
    linear = {"rope_type": "linear", "factor": 4.0}
    old = spec_from_config({**LLAMA, "rope_scaling": linear, "rope_theta": 1e4}, "old")
    new = spec_from_config({**LLAMA, "rope_parameters": {**linear, "rope_theta": 1e4}}, "new")
    legacy_key = spec_from_config({**LLAMA, "rope_scaling": {"type": "dynamic", "factor": 2.0}}, "type")
    assert old.max_context == new.max_context == 4 * 4096 and legacy_key.max_context == 2 * 4096


def test_prescaled_rope_types_and_gemma3_keep_max_position_embeddings():
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}
    assert spec_from_config({**LLAMA, "rope_parameters": yarn}, "yarn").max_context == 4096
    nested = {"full_attention": {"rope_type": "linear", "factor": 8.0}, "sliding_attention": {"rope_type": "default"}}
    assert rope_factors({"rope_parameters": nested}, "x") == [("linear", 8.0), ("default", 1.0)]
    gemma3 = {**LLAMA, "model_type": "gemma3_text", "sliding_window": 512, "rope_parameters": nested}
    assert spec_from_config(gemma3, "g").max_context == 4096  # vLLM skips Gemma-3's factor


@pytest.mark.parametrize("scaling", ["yarn", 5, [1, 2], True])
def test_a_rope_scaling_that_is_not_an_object_is_one_line(scaling):
    """Issue 49: a regression of the transformers-5 normalisation, which read it with dict(): a traceback."""
    with pytest.raises(InputError, match="rope_scaling must be an object"):
        spec_from_config({**LLAMA, "rope_scaling": scaling}, "bad")


def test_a_malformed_rope_factor_is_one_line():
    with pytest.raises(InputError, match="RoPE scaling factor must be a positive number"):
        spec_from_config({**LLAMA, "rope_parameters": {"rope_type": "linear", "factor": "4"}}, "bad")
