"""advisor/model/shape/compressed_attention.py: DeepSeek-V4's attention on small configs worked out by hand, and the
same read from transformers 5's layer_types and compress_rates."""

import pytest

from advisor.errors import InputError
from advisor.model.shape.config_reader import spec_from_config

# 4 layers: ratios 0, 4, 128, 0 (a sliding window only; compressed 4 to 1 with an indexer; 128 to 1 attended whole);
# hidden 32, 2 heads of 16 (rope 4), q_lora 8, o_lora 6 in 2 groups, indexer 2 heads x 128, top-8, window 4
TINY_V4 = {"model_type": "deepseek_v4", "architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 32,
           "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
           "qk_rope_head_dim": 4, "q_lora_rank": 8, "o_lora_rank": 6, "o_groups": 2, "sliding_window": 4,
           "compress_ratios": [0, 4, 128, 0, 0], "index_n_heads": 2, "index_head_dim": 128, "index_topk": 8,
           "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1, "moe_intermediate_size": 8,
           "vocab_size": 50, "num_nextn_predict_layers": 1, "hc_mult": 2, "expert_dtype": "fp4"}


def test_every_layer_a_window_and_the_compressed_caches_beside_it():
    spec = spec_from_config(TINY_V4, "v4")
    assert (spec.sliding_layers, spec.sliding_window, spec.full_layers) == (4, 4, 0)
    assert spec.compressed == ((4, 1, 1, 8), (128, 1, 1, 0))
    # per token: one 576-byte fp8_ds_mla row in each window (before the window caps it), 1/4 and 1/128 of one in
    # the compressed layers, and 1/4 of the indexer's 128 fp8 keys + 4 B of scale
    assert spec.kv_bytes_per_token() == pytest.approx(4 * 576 + 576 / 4 + 576 / 128 + 132 / 4)
    assert spec.kv_bytes_per_token(1.0) == spec.kv_bytes_per_token(2.0)  # the row format is fixed
    # at 1024 tokens: 4 windows of 4 rows, the ratio-4 layer its top-8 of 256 rows, the ratio-128 layer all 8, the
    # indexer every one of its 256 keys
    assert float(spec.kv_bytes_read(1024)) == pytest.approx((4 * 4 + 8 + 8) * 576 + 256 * 132)


def test_the_projections_by_hand():
    spec = spec_from_config(TINY_V4, "v4")
    layer = 32 * (8 + 16) + 8 * 2 * 16 + 2 * 16 * 6 + 2 * 6 * 32  # fused_wqa_wkv, wq_b, wo_a, wo_b
    compressor = {4: 32 * 2 * 2 * 16, 128: 32 * 2 * 1 * 16}  # fused_wkv_wgate, 2·coff·head_dim (coff 2 at r = 4)
    indexer = 8 * 2 * 128 + 32 * 2 + 32 * 2 * 2 * 128  # wq_b, weights_proj and its own compressor
    assert spec.mixer_params == 4 * layer + compressor[4] + compressor[128] + indexer
    assert spec.wide_params == 4 * 2 * (2 + 2) * 2 * 2 * 32  # hc_attn_fn and hc_ffn_fn, (2 + m)·m x m·h each
    assert spec.part_formats == (("experts", "mxfp4"),) and spec.mtp_layers == 1


def test_transformers_5s_layer_types_and_compress_rates_read_as_compress_ratios():
    saved = {k: v for k, v in TINY_V4.items() if k != "compress_ratios"}
    saved.update(layer_types=["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention",
                              "sliding_attention"],
                 compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 128})
    assert spec_from_config(saved, "v4") == spec_from_config(TINY_V4, "v4")
    with pytest.raises(InputError, match="compress_rates does not rate"):
        spec_from_config({**saved, "compress_rates": {"compressed_sparse_attention": 4}}, "v4")


def test_v41_compresses_on_source_layers_and_holds_dspark_stages_not_mtp():
    v41 = {**TINY_V4, "model_type": "deepseek_v41_text", "compress_ratios": [0, 2, 2, 1], "kv_source_layer_ids": [1],
           "index_source_layer_ids": [1, 3], "num_nextn_predict_layers": 3, "dspark_block_size": 5,
           "engram_num_embeddings": [100, 200], "engram_head_dim": 4}
    spec = spec_from_config(v41, "v41")
    # ratio 2: layers 1 and 2 attend it, layer 1 caches it; ratio 1: layer 3 attends the source below it, caching none
    assert spec.compressed == ((1, 1, 0, 8), (2, 2, 1, 8))
    assert (spec.index_layers, spec.index_compress) == (2, pytest.approx(2 / (1 / 2 + 1)))
    assert (spec.mtp_layers, spec.dspark_block, spec.lookup_params) == (0, 5, 300 * 4)
