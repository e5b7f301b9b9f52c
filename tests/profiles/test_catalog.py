import json

import pytest

from advisor.errors import InputError
from advisor.model.shape.config_reader import spec_from_config
from advisor.profiles.catalog import load_hardware, load_model, names

REQUIRED_GPUS = ["rtx-pro-6000-blackwell", "b200", "h200", "h100-sxm", "h100-pcie", "a100-80gb-sxm",
                 "a100-40gb-sxm", "l40s", "l4", "a10g", "rtx-4090", "rtx-3090", "rtx-3060-12gb", "rtx-a6000", "mi300x"]


def test_at_least_15_gpus_with_datasheet_numbers():
    assert len(names("hardware")) >= 15
    for slug in REQUIRED_GPUS:
        hw = load_hardware(slug)
        assert hw.memory_gib > 0 and hw.memory_bandwidth_gbs > 0 and hw.bf16_tflops > 0
        assert hw.source.startswith("https://")


def test_every_model_matches_its_published_parameter_count():
    """Within 3% of the count its source publishes; a profile whose sources publish none says so in
    published_params_source (and is cross-checked against a same-architecture profile below where one exists)."""
    assert len(names("models")) >= 25
    for name in names("models"):
        spec = load_model(name)
        if spec.published_params_b is None:
            assert _meta(name)["published_params_source"].startswith("None published"), name
            continue
        assert spec.total_params / 1e9 == pytest.approx(spec.published_params_b, rel=0.03), name


def _meta(name: str) -> dict:
    return json.loads((load_model.__globals__["profiles_dir"]() / "models" / f"{name}.json").read_text())["_specadvisor"]


MOE_PROFILES = ["deepseek-v3", "gpt-oss-120b", "qwen3-next-80b-a3b-instruct", "llama-4-scout-17b-16e-instruct",
                "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-20b", "kimi-k2-instruct", "glm-4.5-air",
                "llama-4-maverick-17b-128e-instruct", "qwen3.5-35b-a3b", "qwen3.5-122b-a10b", "qwen3.5-397b-a17b",
                "gemma-4-26b-a4b", "hy3"]
# Model cards give the active count to the precision they state: Qwen3-Next's "3B activated" has one significant
# figure, so it is checked to +-0.5B; the others to the same 3% as the totals.
# The "A3B" / "A4B" in a model's name is such a one-figure count too.
CARD_PRECISION_B = {"qwen3-next-80b-a3b-instruct": 0.5, "qwen3.5-35b-a3b": 0.5, "gemma-4-26b-a4b": 0.5,
                    "qwen3.6-35b-a3b": 0.5}


def test_moe_active_parameters_match_the_model_card():
    """Cards differ in what 'active' counts; each profile's `published_active_counts` says which (and why):
    'unembedding' is specadvisor's own active_params (the lm_head but not the gathered embedding rows), 'embeddings'
    adds the input embedding, 'non_embedding' drops the lm_head too."""
    with_active = [n for n in names("models") if "published_active_params_b" in _meta(n)]
    assert set(MOE_PROFILES) <= set(with_active)
    for name in with_active:
        spec, meta = load_model(name), _meta(name)
        counted = {"unembedding": spec.active_params, "embeddings": spec.active_params + spec.embedding_params,
                   "non_embedding": spec.active_params - spec.lm_head_params}[meta["published_active_counts"]]
        published = meta["published_active_params_b"]
        if name in CARD_PRECISION_B:
            assert abs(counted / 1e9 - published) < CARD_PRECISION_B[name], name
        else:
            assert counted / 1e9 == pytest.approx(published, rel=0.03), name
        assert spec.active_params < spec.total_params / 5, name  # a sparse model activates a small share


def test_qwen3_next_non_embedding_count_matches_the_card():
    spec = load_model("qwen3-next-80b-a3b-instruct")
    assert spec.mtp_layers == 1  # no num_nextn_predict_layers in the profile: vLLM's qwen3_next_mtp.py assumes 1
    # the card: "Number of Parameters (Non-Embedding): 79B"; untied, so both 151936 x 2048 tables come off
    non_embedding = spec.total_params - 2 * 151936 * 2048
    assert non_embedding / 1e9 == pytest.approx(_meta("qwen3-next-80b-a3b-instruct")["published_non_embedding_params_b"],
                                                rel=0.03)


@pytest.mark.parametrize("name, layers, dense, sliding, chunked, mtp", [
    ("gpt-oss-20b", 24, 0, 12, 0, 0),  # layer_types alternate sliding/full: 24 / 2
    ("kimi-k2-instruct", 61, 1, 0, 0, 0),  # first_k_dense_replace 1, num_nextn_predict_layers 0
    ("glm-4.5-air", 46, 1, 0, 0, 1),  # first_k_dense_replace 1, one MTP layer
    ("llama-4-maverick-17b-128e-instruct", 48, 24, 0, 36, 0),  # MoE on odd layers; 48 - 48 / 4 NoPE layers chunk
    ("gemma-3-27b-it", 62, 0, 52, 0, 0),  # every 6th layer global: 62 - 62 // 6
    ("gemma-3-12b-it", 48, 0, 40, 0, 0),  # 48 - 48 // 6
])
def test_layer_patterns_of_the_derived_profiles(name, layers, dense, sliding, chunked, mtp):
    spec = load_model(name)
    assert (spec.num_layers, spec.dense_layers, spec.sliding_layers, spec.chunked_layers, spec.mtp_layers) == \
        (layers, dense, sliding, chunked, mtp)


@pytest.mark.parametrize("name, layers, dense, sliding, linear, index, mtp", [
    ("qwen3.5-27b", 64, 64, 0, 48, 0, 1),  # dense hybrid: 3 Gated DeltaNet layers to 1 gated attention
    ("qwen3.5-397b-a17b", 60, 0, 0, 45, 0, 1),
    ("qwen3.5-9b", 32, 32, 0, 24, 0, 1),  # from the card's layout 8 x (3 DeltaNet + 1 attention)
    ("gemma-4-26b-a4b", 30, 0, 25, 0, 0, 0),  # layer_types: 5 sliding to 1 global
    ("deepseek-v3.2", 61, 3, 0, 0, 61, 1),  # an indexer in every layer
    ("glm-5", 78, 3, 0, 0, 78, 1),
    ("glm-5.2", 78, 3, 0, 0, 21, 1),  # indexer_types: 21 'full', 57 'shared'
    ("minimax-m2.5", 62, 0, 0, 0, 0, 0),  # its 3 MTP modules are dropped by vLLM 0.32
    ("kimi-k2.5", 61, 1, 0, 0, 0, 0),
    ("hy3", 80, 1, 0, 0, 0, 1),
])
def test_layer_patterns_of_the_issue_39_profiles(name, layers, dense, sliding, linear, index, mtp):
    spec = load_model(name)
    dense_layers = spec.num_layers if spec.num_experts == 1 else spec.dense_layers
    assert (spec.num_layers, dense_layers, spec.sliding_layers, spec.linear_layers, spec.index_layers,
            spec.mtp_layers) == (layers, dense, sliding, linear, index, mtp)


def test_glm_5_2_indexers_follow_its_indexer_types():
    """vLLM derives which layers run an indexer from index_topk_freq / index_skip_topk_offset; the config's own
    indexer_types list says the same, layer by layer."""
    config = json.loads((load_model.__globals__["profiles_dir"]() / "models" / "glm-5.2.json").read_text())
    assert config["indexer_types"].count("full") == load_model("glm-5.2").index_layers


def test_profiles_without_a_published_count_match_their_architecture_twins():
    """Kimi-K2.5's language model is Kimi-K2's architecture (1T in its card); DeepSeek-V3.2 is V3's (671B) plus an
    indexer per layer: wq_b 1536 x (64 x 128) and wk / weights_proj 7168 x (128 + 64); GLM-5.1 is GLM-5."""
    assert load_model("kimi-k2.5").total_params == load_model("kimi-k2-instruct").total_params
    indexers = 61 * (1536 * 64 * 128 + 7168 * (128 + 64))
    assert load_model("deepseek-v3.2").total_params == load_model("deepseek-v3").total_params + indexers
    assert load_model("glm-5.1").total_params == load_model("glm-5").total_params


def test_hy3_mtp_layer_matches_its_card():
    """The Hy3-preview card: 'MTP Layer Parameters 3.8B' (one MoE block and its eh_proj; embedding and head shared)."""
    assert load_model("hy3").mtp_draft().total_params / 1e9 == pytest.approx(_meta("hy3")["published_mtp_params_b"],
                                                                             rel=0.03)


def test_deepseek_v3_count_excludes_its_mtp_layer():
    """DeepSeek's 671B is the main model; the 685B on Hugging Face adds the 14B MTP module. vLLM loads the MTP layer
    only as the drafter (deepseek_mtp.py), so the target's count leaves it out and mtp_layers says it is there."""
    spec = load_model("deepseek-v3")
    assert spec.mtp_layers == 1
    assert spec.total_params / 1e9 == pytest.approx(671, rel=0.03)


def test_every_eagle_head_names_a_shipped_target_it_fits():
    heads = [n for n in names("models") if load_model(n).kind == "eagle_head"]
    assert heads
    for name in heads:
        head = load_model(name)
        target = load_model(head.trained_for)  # an InputError here: the target profile is not shipped
        assert target.kind == "model", name
        assert head.hidden_size == target.hidden_size, name
        assert head.vocab_size == target.vocab_size, name


def test_lookup_is_case_insensitive_and_takes_aliases_and_hf_ids():
    assert load_model("Llama-3.1-8B-Instruct").name == load_model("meta-llama/Llama-3.1-8B-Instruct").name
    assert load_hardware("H100").slug == load_hardware("h100-sxm").slug


def test_unknown_names_suggest_close_matches():
    with pytest.raises(InputError, match="did you mean.*h100"):
        load_hardware("h1000")
    with pytest.raises(InputError, match="did you mean"):
        load_model("llama-3.1-8b-instrct")


def test_local_directory_with_config_json(tmp_path):
    config = json.loads((load_model.__globals__["profiles_dir"]() / "models" / "qwen3-0.6b.json").read_text())
    config.pop("_specadvisor")
    (tmp_path / "config.json").write_text(json.dumps(config))
    spec = load_model(str(tmp_path))
    assert spec.hf_id == str(tmp_path.resolve())
    assert spec.total_params == load_model("qwen3-0.6b").total_params


@pytest.mark.parametrize("content, match", [("{not json", "malformed"), ("[1, 2]", "malformed"),
                                            ('{"model_type": "llama", "hidden_size": 64}', "no 'num_attention_heads'"),
                                            ('{"hidden_size": 64}', "model_type '\\(none\\)'")])
def test_malformed_config_json_is_an_input_error(tmp_path, content, match):
    (tmp_path / "config.json").write_text(content)
    with pytest.raises(InputError, match=match):
        load_model(str(tmp_path))


def test_gqa_kv_bytes_and_derived_counts(llama8b):
    # 2 (K and V) · 32 layers · 8 KV heads · 128 dims · 2 bytes
    assert llama8b.kv_bytes_per_token() == 2 * 32 * 8 * 128 * 2
    # fp8 halves the decoder layers; the embedding and the untied lm_head (128,256 x 4,096 each) stay 16 bit
    assert llama8b.weight_bytes("fp8") == pytest.approx(llama8b.weight_bytes("bf16") / 2 + 2 * 128256 * 4096)
    assert llama8b.weight_bytes("int4") < llama8b.weight_bytes("fp8")


def test_attention_flops_grow_with_context(llama8b):
    assert float(llama8b.flops_per_token(0)) == pytest.approx(2 * llama8b.active_params)
    extra = float(llama8b.flops_per_token(1000)) - float(llama8b.flops_per_token(0))
    assert extra == pytest.approx(4 * 32 * 32 * 128 * 1000)


def test_sliding_window_layers_cap_attended_context():
    gemma = load_model("gemma-2-9b-it")
    assert gemma.sliding_layers == gemma.num_layers // 2
    assert float(gemma.attended_tokens(100_000)) < gemma.num_layers * 100_000


def test_bad_config_values_are_input_errors():
    with pytest.raises(InputError):
        spec_from_config({"hidden_size": 64, "num_attention_heads": 6, "num_key_value_heads": 4,
                          "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100}, "bad")


@pytest.mark.parametrize("name, said", [("~nosuchuser49/x", "no such user's home folder"),
                                        ("a" * 120_000, "120000 characters. is neither a profile name nor a path"),
                                        ("a" * 4000, "File name too long"), ("x\0y", "neither a profile")])
def test_a_name_no_path_can_be_is_one_line(name, said):
    """Issue 49: `--target '~nosuchuser/x'` and a 120,000-character model name were tracebacks."""
    with pytest.raises(InputError, match=said) as exc:
        load_model(name)
    assert "\n" not in str(exc.value) and len(str(exc.value)) < 400
