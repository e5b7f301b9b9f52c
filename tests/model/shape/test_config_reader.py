"""config.json -> ModelSpec for the architectures beyond dense Llama, on small synthetic configs whose counts are
worked out by hand below (the shipped profiles' published counts are checked in tests/profiles/test_catalog.py)."""

import pytest

from advisor.errors import InputError
from advisor.model.shape.config_reader import SUPPORTED_MODEL_TYPES, spec_from_config

# A DeepSeek-V3-shaped miniature: MLA, 1 dense layer then 3 MoE layers (8 routed experts, top-2, 1 shared), 1 MTP.
TINY_MLA = {"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 16,
            "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 100,
            "intermediate_size": 64, "moe_intermediate_size": 8, "n_routed_experts": 8, "num_experts_per_tok": 2,
            "n_shared_experts": 1, "first_k_dense_replace": 1, "q_lora_rank": 12, "kv_lora_rank": 8,
            "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 8, "num_nextn_predict_layers": 1,
            "tie_word_embeddings": False, "max_position_embeddings": 4096}
# gpt-oss-shaped: 4 layers alternating 128-token sliding windows, 4 experts top-2, MXFP4 experts
TINY_OSS = {"model_type": "gpt_oss", "hidden_size": 32, "num_hidden_layers": 4, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 50, "intermediate_size": 16,
            "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 128,
            "max_position_embeddings": 131072, "tie_word_embeddings": False,
            "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
                "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}}
# Qwen3-Next-shaped: 3 Gated DeltaNet layers + 1 full-attention layer, MoE with a shared expert
TINY_NEXT = {"model_type": "qwen3_next", "hidden_size": 32, "num_hidden_layers": 4, "num_attention_heads": 4,
             "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 50, "intermediate_size": 64,
             "moe_intermediate_size": 8, "shared_expert_intermediate_size": 8, "num_experts": 4,
             "num_experts_per_tok": 2, "decoder_sparse_step": 1, "full_attention_interval": 4,
             "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
             "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4, "max_position_embeddings": 65536}


def test_mla_kv_is_the_latent_per_layer():
    # DeepSeek-V3's own values (transformers DeepseekV3Config defaults): 61 layers x (512 + 64) x 2 bytes
    v3 = spec_from_config({**TINY_MLA, "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
                           "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                           "v_head_dim": 128, "q_lora_rank": 1536, "first_k_dense_replace": 3}, "v3")
    assert v3.kv_bytes_per_token() == 61 * (512 + 64) * 2 == 70_272
    assert v3.kv_bytes_per_token(1.0) == 35_136  # fp8 KV: one byte per element
    assert v3.kv_elements_per_layer_token_per_gpu(8) == 576  # one latent "head": every GPU keeps it whole
    # absorbed decode: per head 2 (512 + 64) for QK and 2 x 512 for AV; prefill expands: 2 (128 + 64) + 2 x 128
    assert float(v3.attention_flops_per_context_token(1)) == 128 * (2 * 576 + 2 * 512) == 278_528
    assert float(v3.attention_flops_per_context_token(2048)) == 128 * (2 * 192 + 2 * 128)


def test_moe_with_shared_experts_and_dense_layers_counts_by_hand():
    m = spec_from_config(TINY_MLA, "tiny")
    # attention per layer: q_a 16x12 + q_b 12x(2 heads x 12) + kv_a 16x(8+4) + kv_b 8x(2 x (8+8)) + o (2x8)x16
    assert m.attention_params_per_layer == 192 + 288 + 192 + 256 + 256 == 1184
    # layer 0 dense 3x16x64 = 3072; layers 1-3: 8 experts x 3x16x8 = 3072, shared 3x16x8 = 384, router 16x8 = 128
    assert m.total_params == 4 * 1184 + 3072 + 3 * (3072 + 384 + 128) + 100 * 16 * 2 == 21_760
    # a token uses 2 of the 8 experts (768), the shared one and the router; the embedding is a gather
    assert m.active_params == 4 * 1184 + 3072 + 3 * (768 + 384 + 128) + 100 * 16 == 13_248
    assert m.kv_bytes_per_token() == 4 * (8 + 4) * 2


def test_mtp_head_is_one_moe_block_with_eh_proj_and_no_embedding_or_lm_head():
    target = spec_from_config(TINY_MLA, "tiny")
    assert target.mtp_layers == 1
    mtp = target.mtp_draft()
    assert mtp.kind == "mtp_head" and mtp.embedding_params == 0 and not mtp.owns_lm_head
    # one MoE block (1184 + 3072 + 384 + 128) plus eh_proj 2h x h = 2 x 16 x 16
    assert mtp.total_params == 1184 + 3584 + 512 == 5280
    assert mtp.fuses_every_pass and mtp.fusion_params == 512
    assert mtp.kv_bytes_per_token() == 1 * (8 + 4) * 2
    # each pass streams the block, the shared lm_head (100 x 16) and eh_proj, all 16 bit here
    assert float(mtp.weight_bytes_read(1)) == pytest.approx(2 * (1184 + 384 + 128 + 2 * 384 + 1600 + 512))
    with pytest.raises(InputError, match="no MTP layers"):
        spec_from_config({**TINY_MLA, "num_nextn_predict_layers": 0}, "none").mtp_draft()


def test_sliding_window_layers_read_only_their_window():
    oss = spec_from_config(TINY_OSS, "oss")
    assert (oss.sliding_window, oss.sliding_layers) == (128, 2)  # even layers slide (gpt_oss.py OAIAttention)
    # 2 full layers x 1000 + 2 sliding x 128 tokens, each 2 x 2 KV heads x 8 dims x 2 bytes
    assert float(oss.attended_tokens(1000)) == 2 * 1000 + 2 * 128
    assert float(oss.kv_bytes_read(1000)) == (2 * 1000 + 2 * 128) * 32 * 2 == 144_384


def test_gemma3_layer_pattern_and_llama4_chunked_layers():
    gemma3 = spec_from_config({"model_type": "gemma3", "text_config": {
        "model_type": "gemma3_text", "hidden_size": 32, "num_hidden_layers": 12, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 50, "intermediate_size": 64, "sliding_window": 1024,
        "sliding_window_pattern": 6}}, "g3")
    assert gemma3.sliding_layers == 10 and gemma3.tied_embeddings  # 5 local : 1 global
    scout = spec_from_config({"model_type": "llama4", "text_config": {
        "model_type": "llama4_text", "hidden_size": 32, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 50, "intermediate_size": 16,
        "intermediate_size_mlp": 64, "num_local_experts": 4, "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 2, "attention_chunk_size": 8192, "no_rope_layers": [1, 1, 1, 0]}}, "l4")
    assert (scout.chunked_layers, scout.dense_layers) == (3, 2)
    # 1 global layer x 20000 + 3 chunked layers x half a chunk (past the first chunk)
    assert float(scout.attended_tokens(20_000)) == 20_000 + 3 * 4096
    assert float(scout.attended_tokens(100)) == 4 * 100


def test_hybrid_linear_attention_state():
    nxt = spec_from_config(TINY_NEXT, "next")
    assert (nxt.linear_layers, nxt.kv_layers) == (3, 1)
    # conv channels 2 x (2 x 8) + 4 x 8 = 64, kernel - 1 = 3 kept; recurrent 4 v-heads x 8 x 8; bf16
    assert nxt.linear_state_bytes() == 3 * (64 * 3 + 256) * 2 == 2688
    assert nxt.linear_state_bytes(num_spec=2) == 3 * (64 * 5 + 256) * 2
    assert nxt.kv_bytes_per_token() == 1 * 2 * 2 * 8 * 2  # only the full-attention layer caches K and V
    # one step: the full layer's KV at 1000 tokens, and every state read and written back
    assert float(nxt.kv_bytes_read(1000)) == 1000 * 64 + 2 * 2688
    assert nxt.mtp_layers == 1  # vLLM builds one MTP layer when the config omits num_nextn_predict_layers


def test_quantization_config_is_read():
    oss = spec_from_config(TINY_OSS, "oss")
    assert (oss.quantization, oss.quantized_dtype, oss.unquantized) == ("mxfp4", "mxfp4", ("attention",))
    # only the experts are MXFP4 (4 + 8/32 bits): 4 layers x 4 experts x 3 x 32 x 16 = 24,576 weights; attention
    # (q 32x32, k and v 32x16 each, o 32x32 = 3,072 a layer), routers (32 x 4 a layer), embedding and lm_head
    # (50 x 32 each) stay 16 bit
    assert oss.weight_bytes("mxfp4") == pytest.approx(24_576 * 0.53125 + (4 * 3072 + 4 * 128 + 2 * 1600) * 2)


def test_an_unknown_model_type_is_read_by_its_layer_kinds_or_refused_by_name():
    # issue 47: Qwen3-Next's layer kinds under another model_type are read (tests/model/shape/test_kinds_reader.py);
    # a model type with no attention layers and no list of kinds is refused by what it is
    renamed = spec_from_config({**TINY_NEXT, "model_type": "acme_next", "attn_output_gate": True}, "m")
    assert (renamed.linear_layers, renamed.total_params) == (3, spec_from_config(TINY_NEXT, "m").total_params)
    with pytest.raises(InputError, match="'mamba2'.*no attention layers"):
        spec_from_config({"model_type": "mamba2", "hidden_size": 32, "num_hidden_layers": 2, "vocab_size": 50}, "m")
    assert "deepseek_v3" in SUPPORTED_MODEL_TYPES and "qwen3_next" in SUPPORTED_MODEL_TYPES


# --- issue 25 item 5: malformed and inconsistent config.json files are refused in one line ------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from advisor.model.shape.config_fields import NON_NEGATIVE, POSITIVE  # noqa: E402

TINY_LLAMA = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 8,
              "num_key_value_heads": 2, "vocab_size": 100, "intermediate_size": 128, "max_position_embeddings": 2048,
              "tie_word_embeddings": False}
TINY_MIXTRAL = {**TINY_LLAMA, "model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2}
BASES = {"llama": TINY_LLAMA, "mixtral": TINY_MIXTRAL, "mla": TINY_MLA, "oss": TINY_OSS, "next": TINY_NEXT}
NONSENSE = [0, -1, -(2**40), float("nan"), float("inf"), 10**30, 2**31, "8", "4096", 8.5, True, [8], {"n": 8}]


def _inconsistent(cfg: dict) -> list[tuple[str, dict]]:
    """Configs whose numbers are each plausible but contradict one another."""
    out = [("kv heads above heads", {**cfg, "num_key_value_heads": cfg["num_attention_heads"] + 1}),
           ("kv heads that do not divide", {**cfg, "num_attention_heads": 4, "num_key_value_heads": 3}),
           ("layer_types of another length", {**cfg, "layer_types": ["full_attention"] * (cfg["num_hidden_layers"] + 1)}),
           ("draft vocabulary above the vocabulary", {**cfg, "draft_vocab_size": cfg["vocab_size"] + 1})]
    experts = next((key for key in ("num_local_experts", "num_experts", "n_routed_experts") if key in cfg), None)
    if experts:
        out.append(("more experts per token than experts", {**cfg, "num_experts_per_tok": cfg[experts] + 1}))
    if "first_k_dense_replace" in cfg:
        out.append(("more dense layers than layers", {**cfg, "first_k_dense_replace": cfg["num_hidden_layers"] + 1}))
    return out


def test_25_5_the_issues_configs_are_refused_by_field():
    for change, field in [({"num_attention_heads": 0}, "num_attention_heads"),
                          ({"num_key_value_heads": 0}, "num_key_value_heads"),  # was read as multi-head
                          ({"max_position_embeddings": 0}, "max_position_embeddings"),  # skipped the context check
                          ({"hidden_size": "4096"}, "hidden_size"),  # a string was accepted
                          ({"num_experts_per_tok": 8}, "num_experts_per_tok")]:  # RuntimeWarnings, then an answer
        with pytest.raises(InputError, match=field):
            spec_from_config({**TINY_MIXTRAL, **change}, "bad")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(sorted(BASES)), data=st.data())
def test_25_5_config_fuzz_no_traceback_and_no_silent_answer(base, data):
    cfg = BASES[base]
    kind = data.draw(st.sampled_from(["nonsense", "missing", "inconsistent"]))
    if kind == "inconsistent":
        _, bad = data.draw(st.sampled_from(_inconsistent(cfg)))
        with pytest.raises(InputError):
            spec_from_config(bad, "fuzzed")
        return
    key = data.draw(st.sampled_from(sorted(k for k in cfg if k in POSITIVE + NON_NEGATIVE)))
    if kind == "missing":
        try:  # a key with a default (head_dim, ...) may go; a required one is named
            spec_from_config({k: v for k, v in cfg.items() if k != key}, "fuzzed")
        except InputError:
            pass
        return
    value = data.draw(st.sampled_from(NONSENSE))
    if value == 0 and key in NON_NEGATIVE:
        return  # 0 is a real value there (no shared experts, no MTP layer, ...)
    with pytest.raises(InputError, match=key):
        spec_from_config({**cfg, key: value}, "fuzzed")


@pytest.mark.parametrize("change", [{"num_attention_heads": 0}, {"num_key_value_heads": 0},
                                    {"max_position_embeddings": 0}, {"hidden_size": "64"},
                                    {"num_experts_per_tok": 9}])
def test_25_5_recommend_on_a_bad_config_dir_is_one_line_and_exit_2(tmp_path, change, capsys):
    import json

    from advisor.cli.app import main

    (tmp_path / "config.json").write_text(json.dumps({**TINY_MIXTRAL, **change}))
    assert main(["recommend", "--target", str(tmp_path), "--method", "ngram", "--prompt-len", "100",
                 "--out-len", "100"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and next(iter(change)) in err


def test_a_dense_config_without_intermediate_size_is_told_that_field():
    """Issue 49: it was told it lacked moe_intermediate_size, a field a dense model never has."""
    dense = {k: v for k, v in TINY_LLAMA.items() if k != "intermediate_size"}
    with pytest.raises(InputError, match="has no 'intermediate_size'"):
        spec_from_config(dense, "dense")
    moe_only = {**{k: v for k, v in TINY_MIXTRAL.items() if k != "intermediate_size"}, "moe_intermediate_size": 32}
    assert spec_from_config(moe_only, "moe").intermediate_size == 32
