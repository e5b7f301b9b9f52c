import json

import pytest

from advisor.errors import InputError
from advisor.model.modelspec import spec_from_config
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
    assert len(names("models")) >= 25
    for name in names("models"):
        spec = load_model(name)
        assert spec.published_params_b is not None, name
        assert spec.total_params / 1e9 == pytest.approx(spec.published_params_b, rel=0.03), name


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
                                            ('{"hidden_size": 64}', "no 'num_attention_heads'")])
def test_malformed_config_json_is_an_input_error(tmp_path, content, match):
    (tmp_path / "config.json").write_text(content)
    with pytest.raises(InputError, match=match):
        load_model(str(tmp_path))


def test_gqa_kv_bytes_and_derived_counts(llama8b):
    # 2 (K and V) · 32 layers · 8 KV heads · 128 dims · 2 bytes
    assert llama8b.kv_bytes_per_token() == 2 * 32 * 8 * 128 * 2
    assert llama8b.weight_bytes("fp8") == pytest.approx(llama8b.weight_bytes("bf16") / 2)
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
