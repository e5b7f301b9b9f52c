"""advisor/model/shape/mixed_precision.py: ModelOpt MIXED_PRECISION read per part, as NVIDIA's Qwen3.6 re-exports
store it."""

import pytest

from advisor.errors import InputError
from advisor.model.shape.mixed_precision import mixed_formats
from advisor.model.shape.quantization import bytes_per_weight
from advisor.profiles.catalog import load_model


def test_attention_fp8_beside_nvfp4_mlps():
    layers = {"model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
              "model.layers.0.linear_attn.out_proj": {"quant_algo": "FP8"},
              "model.layers.0.mlp.gate_proj": {"quant_algo": "W4A16_NVFP4", "group_size": 16},
              "lm_head": {"quant_algo": "W4A16_NVFP4"}}
    assert mixed_formats({"quantized_layers": layers}, "m") == ("nvfp4a16", (("attention", "fp8"),), ("experts",))


@pytest.mark.parametrize("layers, words", [
    ({"model.layers.0.mlp.up_proj": {"quant_algo": "INT8"}}, "INT8"),
    ({"model.layers.0.mlp.up_proj": {"quant_algo": "FP8"}, "model.layers.1.mlp.up_proj": {"quant_algo": "NVFP4"}},
     "two formats in one part"),
    ({}, "without quantized_layers"),
])
def test_what_is_not_modelled_is_one_line(layers, words):
    with pytest.raises(InputError, match=words):
        mixed_formats({"quantized_layers": layers}, "m")


def test_the_qwen3_6_profiles_bytes_by_part():
    spec = load_model("qwen3.6-27b")
    parts = spec.part_params()
    rest = spec.total_params - spec.decoder_params()  # embedding and lm_head: 16 bit
    assert spec.weight_bytes(spec.quantized_dtype) == pytest.approx(
        parts["attention"] * bytes_per_weight("fp8") + parts["mlp"] * bytes_per_weight("nvfp4a16")
        + (parts["router"] + parts["wide"] + rest) * 2.0)
