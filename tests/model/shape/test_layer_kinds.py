"""advisor/model/shape/layer_kinds.py: each list a config states its layer kinds in, counted by hand, and a kind not
modelled refused by name."""

import re

import pytest

from advisor.errors import InputError
from advisor.model.shape.layer_kinds import Plan, dense_mlps, mixer_plan


def test_nemotron_blocks_by_pattern_and_by_name_count_the_same():
    # 2 Mamba2, 1 attention, 2 MoE and 1 MLP block: 3 mixers, 3 MLPs, each block one of them
    pattern = mixer_plan({"hybrid_override_pattern": "ME*E-M"}, 6, "n")
    named = mixer_plan({"layers_block_type": ["mamba", "moe", "attention", "moe", "mlp", "mamba"]}, 6, "n")
    assert pattern == named == Plan(layers=6, linear=2, mixerless=3, mlpless=3, dense=1, moe_from_pattern=True)


@pytest.mark.parametrize("cfg, where", [
    ({"hybrid_override_pattern": "M*X"}, "hybrid_override_pattern[2]"),
    ({"layers_block_type": ["mamba", "conv"]}, "layers_block_type[1]"),
    ({"layer_types": ["full_attention", "rwkv_time_mix"]}, "layer_types[1]"),
    ({"attn_type_list": [1, 0]}, "attn_type_list[1]"),
])
def test_a_kind_not_modelled_is_refused_by_name(cfg, where):
    layers = len(next(iter(cfg.values())))
    with pytest.raises(InputError, match=rf"layer kind .* \({re.escape(where)}\) is not modelled; modelled kinds: "
                                         "full_attention"):
        mixer_plan(cfg, layers, "m")


def test_layer_types_and_the_other_lists():
    assert mixer_plan({"layer_types": ["linear_attention"] * 3 + ["full_attention"]}, 4, "q") == Plan(4, linear=3)
    assert mixer_plan({"layer_types": ["sliding_attention", "full_attention", "chunked_attention"]}, 3, "g") == \
        Plan(3, sliding=1, chunked=1)
    # Kimi's kda_layers number layers from 1: layers 1, 2, 3 of 4
    assert mixer_plan({"linear_attn_config": {"kda_layers": [1, 2, 3], "full_attn_layers": [4]}}, 4, "k") == \
        Plan(4, linear=3)
    assert mixer_plan({"hybrid_layer_pattern": [0, 1, 1, 1]}, 4, "mimo") == Plan(4, sliding=3)
    assert mixer_plan({"attn_type_list": [1, 1]}, 2, "mm") == Plan(2)
    assert mixer_plan({}, 8, "next", every=4) == Plan(8, linear=6)  # Qwen3-Next: every 4th layer full
    assert mixer_plan({}, 8, "llama") == Plan(8)


def test_a_list_of_the_wrong_length_is_one_line():
    with pytest.raises(InputError, match="layer_types must list num_hidden_layers = 4 layers"):
        mixer_plan({"layer_types": ["full_attention"] * 3}, 4, "m")
    with pytest.raises(InputError, match="kda_layers must number layers 1..4"):
        mixer_plan({"linear_attn_config": {"kda_layers": [0, 5]}}, 4, "k")


@pytest.mark.parametrize("cfg, dense", [
    ({}, 0),
    ({"first_k_dense_replace": 3}, 3),  # deepseek_v2.py
    ({"moe_layer_freq": [0, 0, 1, 1, 1, 1]}, 2),  # MiniMax-M3, MiMo-V2: a 0/1 per layer
    ({"decoder_sparse_step": 2}, 3),  # qwen3_moe.py: MoE on layers 1, 3, 5
    ({"mlp_only_layers": [0, 5]}, 2),
])
def test_dense_mlps_follow_each_familys_rule(cfg, dense):
    assert dense_mlps(cfg, 6, "m") == dense
