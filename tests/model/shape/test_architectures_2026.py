"""advisor/model/shape/architectures_2026.py: what each 2026 model type adds to its layer kinds, on small configs worked
out by hand (the shipped profiles are sized against their configs in tests/profiles/test_models_2026.py)."""

import pytest

from advisor.errors import InputError
from advisor.model.shape.architectures_2026 import DESCRIBED_2026, READERS_2026
from advisor.model.shape.config_reader import spec_from_config

# MiniMax-M3-shaped: 4 GQA layers (4 heads, 2 KV x 8), the last 3 block-sparse (an index branch of 2 heads x 16
# picking 2 blocks of 4 tokens plus the local one), the first a dense MLP of 24, then 4 experts top-2 of 8 + shared
TINY_M3 = {"model_type": "minimax_m3", "architectures": ["MiniMaxM3ForCausalLM"], "hidden_size": 32,
           "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
           "intermediate_size": 8, "moe_intermediate_size": 8, "dense_intermediate_size": 24,
           "moe_layer_freq": [0, 1, 1, 1], "num_local_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1,
           "shared_intermediate_size": 8, "vocab_size": 50, "num_mtp_modules": 7, "num_nextn_predict_layers": 1,
           "sparse_attention_config": {"use_sparse_attention": True, "sparse_attention_freq": [0, 1, 1, 1],
                                       "sparse_block_size": 4, "sparse_topk_blocks": 2, "sparse_local_block": 1,
                                       "sparse_num_index_heads": 2, "sparse_index_dim": 16}}


def test_minimax_m3_block_sparse_layers_index_and_attend_their_blocks():
    spec = spec_from_config(TINY_M3, "m3")
    assert (spec.index_layers, spec.index_topk, spec.index_heads, spec.index_head_dim) == (3, 12, 2, 16)
    assert (spec.dense_layers, spec.moe_layers, spec.mtp_layers) == (1, 3, 7)  # vLLM's n_predict: num_mtp_modules
    gqa = 32 * (32 + 2 * 16) + 32 * 32
    index = 32 * 2 * 16 + 32 * (16 + 2)  # index_q from the hidden state; index_k and the per-head weights
    assert spec.part_params()["attention"] == 4 * gqa + 3 * index
    # every token's K and V in all 4 layers, and one 16-wide fp8 index key (+ a 4 B scale) in the 3 sparse ones
    assert spec.kv_bytes_per_token() == 4 * 2 * 2 * 8 * 2 + 3 * (16 + 0 * 4)
    # the dense layer attends all 100 tokens, each sparse one the 12 its index picks; the index scores all 100
    assert float(spec.kv_bytes_read(100)) == (100 + 3 * 12) * 2 * 2 * 8 * 2 + 3 * 100 * 16


def test_mimo_v2_two_head_shapes_read_as_their_mean():
    cfg = {"model_type": "mimo_v2_flash", "hidden_size": 32, "num_hidden_layers": 4, "num_attention_heads": 4,
           "num_key_value_heads": 1, "head_dim": 12, "v_head_dim": 8, "swa_num_key_value_heads": 2,
           "swa_head_dim": 12, "swa_v_head_dim": 4, "hybrid_layer_pattern": [0, 1, 1, 1], "sliding_window": 16,
           "intermediate_size": 16, "vocab_size": 50}
    spec = spec_from_config(cfg, "mimo")
    # full layers: 1 KV head of a 12-wide key and an 8-wide value; sliding: 2 of 12 and 4
    assert spec.kv_bytes_per_token() == (1 * (12 + 8) + 3 * 2 * (12 + 4)) * 2
    full = 32 * 4 * 12 + 32 * 1 * (12 + 8) + 4 * 8 * 32  # q, k and v, o
    sliding = 32 * 4 * 12 + 32 * 2 * (12 + 4) + 4 * 4 * 32
    assert spec.attention_params == full + 3 * sliding
    assert spec.mtp_layers == 1  # vLLM's _MIMO_V2_FLASH_NUM_MTP_LAYERS


def test_qwen4_exp_indexed_layers_hyper_connections_and_ngram_tables():
    cfg = {"model_type": "qwen4_exp_text", "hidden_size": 32, "num_hidden_layers": 4, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 16, "vocab_size": 50,
           "layer_types": ["linear_attention"] * 3 + ["full_attention"], "linear_num_key_heads": 2,
           "linear_num_value_heads": 2, "linear_key_head_dim": 8, "linear_value_head_dim": 8,
           "linear_conv_kernel_dim": 4, "mamba_ssm_dtype": "float32", "indexer_n_heads": 2, "indexer_head_dim": 16,
           "indexer_budget": 32, "indexer_compress_ratio": 4, "hc_count": 2, "hc_lowrank": 4,
           "ple_layer_ids": [2], "ngram_size": 3, "heads_per_ngram": 2, "ngram_vocab_size_base": 100,
           "ple_embed_dim": 8, "mtp_num_hidden_layers": 1}
    spec = spec_from_config(cfg, "q4")
    assert (spec.index_layers, spec.index_topk, spec.index_compress, spec.gated_attention) == (1, 32, 4.0, True)
    assert spec.lookup_params == 4 * 100 * (8 // 4)  # 2 n-gram orders x 2 heads of 100 rows, 8 / 4 wide
    assert spec.wide_params == 4 * 2 * 2 * 2 * 32 * 4 + 8 * 3 * 32  # HC maps, and the n-gram kv_proj
    assert spec.linear_state_dtype_bytes == 4 and spec.mtp_layers == 1
    smaller = spec_from_config({**cfg, "ngram_vocab_size_base": 60}, "q4")
    assert spec.total_params - smaller.total_params == 4 * (100 - 60) * 2  # held in memory, never streamed
    assert spec.active_params == smaller.active_params


def test_every_2026_reader_is_described():
    assert set(READERS_2026) == set(DESCRIBED_2026)


def test_a_sparse_config_missing_its_keys_is_one_line():
    with pytest.raises(InputError, match="malformed or missing value"):
        spec_from_config({**TINY_M3, "sparse_attention_config": {"sparse_attention_freq": [0, 1, 1, 1]}}, "m3")
