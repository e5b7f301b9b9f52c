"""Every model type the reader reads, as transformers 5 writes it: its own config class is built from a catalog
profile's values (or a published config written out below for the types no profile has),
`save_pretrained` writes config.json, and the project's reader must give the same architecture facts (every
ModelSpec field but the names) as it gives for the profile. Config objects only, no weights.

A model type added to SUPPORTED_MODEL_TYPES (or a multimodal wrapper) without an entry in CASES fails here."""

import json
from dataclasses import fields
from pathlib import Path

import pytest

from advisor.model.shape.architectures_2026 import READERS_2026
from advisor.model.shape.config_reader import _WRAPPERS, SUPPORTED_MODEL_TYPES, spec_from_config
from advisor.profiles.catalog import load_model, profiles_dir

transformers = pytest.importorskip("transformers")
if int(transformers.__version__.split(".")[0]) < 5:
    pytest.skip("the round trip checks the names transformers >= 5 writes", allow_module_level=True)
from transformers import CONFIG_MAPPING  # noqa: E402

# ModelSpec fields that name a model rather than describe it (a saved directory has no `_specadvisor` block)
NAMES = {"name", "hf_id", "family", "published_params_b", "trained_for"}

# Published configs of the model types with no catalog profile (their Hub config.json values)
GEMMA_7B = {  # google/gemma-7b config.json
    "architectures": ["GemmaForCausalLM"], "model_type": "gemma", "hidden_size": 3072, "intermediate_size": 24576,
    "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256,
    "vocab_size": 256000, "max_position_embeddings": 8192, "rope_theta": 10000.0, "torch_dtype": "bfloat16"}
QWEN15_MOE = {  # Qwen/Qwen1.5-MoE-A2.7B config.json
    "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 2048,
    "intermediate_size": 5632, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
    "num_experts": 60, "num_experts_per_tok": 4, "decoder_sparse_step": 1, "num_hidden_layers": 24,
    "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 151936, "max_position_embeddings": 8192,
    "rope_theta": 1000000.0, "tie_word_embeddings": False, "use_sliding_window": False, "torch_dtype": "bfloat16"}
DEEPSEEK_V2_LITE = {  # deepseek-ai/DeepSeek-V2-Lite config.json
    "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 2048,
    "intermediate_size": 10944, "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2,
    "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1, "num_hidden_layers": 27,
    "num_attention_heads": 16, "num_key_value_heads": 16, "kv_lora_rank": 512, "q_lora_rank": None,
    "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "vocab_size": 102400,
    "max_position_embeddings": 163840, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


def _profile(name: str) -> dict:
    return json.loads((profiles_dir() / "models" / f"{name}.json").read_text())


def _text(source: dict, model_type: str) -> dict:
    """A wrapper's language model on its own, as a text-only checkpoint of it is written."""
    return {**source["text_config"], "model_type": model_type}


# model_type -> (transformers' config class for it, the source config's loader, keys the source leaves to the class's
# default that transformers writes: field -> the value read back from the saved file)
CASES = {
    "llama": ("LlamaConfig", lambda: _profile("llama-3.1-8b-instruct"), {}),
    "mistral": ("MistralConfig", lambda: _profile("mistral-7b-instruct-v0.3"), {}),
    "qwen2": ("Qwen2Config", lambda: _profile("qwen2.5-7b-instruct"), {}),
    "qwen3": ("Qwen3Config", lambda: _profile("qwen3-8b"), {}),
    "gemma": ("GemmaConfig", lambda: GEMMA_7B, {}),
    "gemma2": ("Gemma2Config", lambda: _profile("gemma-2-9b-it"), {}),
    "gemma3": ("Gemma3Config", lambda: _profile("gemma-3-27b-it"), {}),
    "gemma3_text": ("Gemma3TextConfig", lambda: _text(_profile("gemma-3-12b-it"), "gemma3_text"), {}),
    "mixtral": ("MixtralConfig", lambda: _profile("mixtral-8x7b-instruct-v0.1"), {}),
    "qwen2_moe": ("Qwen2MoeConfig", lambda: QWEN15_MOE, {}),
    # transformers 5 writes num_local_experts, not num_experts (configuration_qwen3_moe.py attribute_map)
    "qwen3_moe": ("Qwen3MoeConfig", lambda: _profile("qwen3-30b-a3b"), {}),
    # the profile leaves out max_position_embeddings and intermediate_size (its `source` says why); the class
    # writes its defaults, 32768 and a dense width no layer uses (decoder_sparse_step 1)
    "qwen3_next": ("Qwen3NextConfig", lambda: _profile("qwen3-next-80b-a3b-instruct"),
                   {"max_context": 32768, "dense_intermediate_size": 5632}),
    "qwen3_5_text": ("Qwen3_5TextConfig", lambda: _profile("qwen3.5-9b"), {}),
    "qwen3_5_moe_text": ("Qwen3_5MoeTextConfig", lambda: _text(_profile("qwen3.5-35b-a3b"), "qwen3_5_moe_text"), {}),
    "qwen3_5": ("Qwen3_5Config", lambda: _profile("qwen3.5-27b"), {}),
    "qwen3_5_moe": ("Qwen3_5MoeConfig", lambda: _profile("qwen3.5-397b-a17b"), {}),
    "deepseek_v2": ("DeepseekV2Config", lambda: DEEPSEEK_V2_LITE, {}),
    "deepseek_v3": ("DeepseekV3Config", lambda: _profile("deepseek-v3"), {}),
    # no transformers class of its own: Kimi-K2.5's wrapper rebuilds it as DeepseekV3Config (config_names.py)
    "kimi_k2": ("DeepseekV3Config", lambda: _profile("kimi-k2-instruct"), {}),
    "glm4_moe": ("Glm4MoeConfig", lambda: _profile("glm-4.5-air"), {}),
    "gpt_oss": ("GptOssConfig", lambda: _profile("gpt-oss-120b"), {}),
    "llama4": ("Llama4Config", lambda: _profile("llama-4-maverick-17b-128e-instruct"), {}),
    "llama4_text": ("Llama4TextConfig",
                    lambda: _text(_profile("llama-4-maverick-17b-128e-instruct"), "llama4_text"), {}),
    # Kimi-K2.5: its kimi_k2 language model comes back as deepseek_v3 (config_names.py)
    "kimi_k25": ("Kimi_K25Config", lambda: _profile("kimi-k2.5"), {}),
    "minimax_m2": ("MiniMaxM2Config", lambda: _profile("minimax-m2.5"), {}),
    "glm_moe_dsa": ("GlmMoeDsaConfig", lambda: _profile("glm-5.2"), {}),  # 21 indexers shared over 78 layers
    "deepseek_v32": ("DeepseekV32Config", lambda: _profile("deepseek-v3.2"), {}),
    # transformers 5 writes the global layers' shape as per_layer_config overrides
    "gemma4": ("Gemma4Config", lambda: _profile("gemma-4-26b-a4b"), {}),
    "gemma4_text": ("Gemma4TextConfig", lambda: _text(_profile("gemma-4-26b-a4b"), "gemma4_text"), {}),
    "hy_v3": ("HYV3Config", lambda: _profile("hy3"), {}),
    # issue 47's model types, read by their layer kinds (architectures_2026.py)
    "nemotron_h": ("NemotronHConfig", lambda: _profile("nemotron-3-super-120b-a12b"), {}),
    "kimi_linear": ("KimiLinearConfig", lambda: _text(_profile("kimi-k3"), "kimi_linear"), {}),
    "qwen4_exp": ("Qwen4ExpConfig", lambda: _profile("qwen3.8-flash-next"), {}),
    "qwen4_exp_text": ("Qwen4ExpTextConfig", lambda: _text(_profile("qwen3.8-flash-next"), "qwen4_exp_text"), {}),
    "deepseek_v4": ("DeepseekV4Config", lambda: _profile("deepseek-v4-flash"), {}),
    "mimo_v2_flash": ("MiMoV2FlashConfig", lambda: _profile("mimo-v2-flash"), {}),
}
# transformers 5.19 has no config class for these: nothing writes them but their makers, read as written; and
# Step-3.7's copied config (abridged, SOURCE.md) does not hold its class's field names, which it would rebuild
# from its own defaults
NO_CLASS = {"kimi_k3", "deepseek_v41", "deepseek_v41_text", "minimax_m3", "step3p7"}
READ = sorted((set(SUPPORTED_MODEL_TYPES) | set(_WRAPPERS) | set(READERS_2026)) - NO_CLASS)


def _facts(spec) -> dict:
    return {f.name: getattr(spec, f.name) for f in fields(spec) if f.name not in NAMES}


def save_with_transformers(model_type: str, folder: Path) -> dict:
    """The case's source config, built through transformers' class and saved as config.json in `folder`."""
    class_name, source, _ = CASES[model_type]
    config = dict(source())
    config.pop("_specadvisor", None)
    cls = getattr(transformers, class_name)
    assert model_type == "kimi_k2" or CONFIG_MAPPING[model_type] is cls
    cls(**{k: v for k, v in config.items() if k != "model_type"}).save_pretrained(folder)
    return config


@pytest.mark.parametrize("model_type", READ)
def test_transformers_5_save_reads_back_to_the_same_architecture(model_type, tmp_path):
    assert model_type in CASES, f"{model_type} is read from a directory but has no transformers round-trip case"
    config = save_with_transformers(model_type, tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["transformers_version"].split(".")[0] == "5"
    expected = spec_from_config(dict(CASES[model_type][1]()), name=model_type)
    got = spec_from_config(saved, name=model_type)
    defaulted = CASES[model_type][2]
    assert {k: v for k, v in _facts(got).items() if k not in defaulted} == \
        {k: v for k, v in _facts(expected).items() if k not in defaulted}
    assert {k: getattr(got, k) for k in defaulted} == defaulted
    assert config  # the source the class was built from


def test_qwen3_moe_saved_by_transformers_5_holds_num_local_experts_only(tmp_path):
    save_with_transformers("qwen3_moe", tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["num_local_experts"] == 128 and "num_experts" not in saved  # the refusal issue 39 reports
    assert "dtype" in saved and "torch_dtype" not in saved and "rope_theta" not in saved
    spec = load_model(str(tmp_path))
    assert (spec.num_experts, spec.experts_per_token) == (128, 8)
    assert spec.total_params == load_model("qwen3-30b-a3b").total_params


def test_kimi_k25_wrapper_writes_its_language_model_as_deepseek_v3(tmp_path):
    save_with_transformers("kimi_k25", tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["text_config"]["model_type"] == "deepseek_v3"  # was kimi_k2
    assert saved["text_config"]["quantization_config"]["quant_method"] == "compressed-tensors"


def _without_names(report: dict) -> dict:
    """A recommend report less the lines that name the target (a profile name vs a directory)."""
    text = json.dumps({k: v for k, v in report.items() if k not in ("inputs", "vllm")})
    return json.loads(text)


def test_recommend_on_a_transformers_5_qwen3_moe_directory_matches_the_profile(tmp_path, capsys):
    from advisor.cli.app import main

    save_with_transformers("qwen3_moe", tmp_path)
    args = ["--gpu", "h100-sxm", "--method", "ngram", "--prompt-len", "2000", "--out-len", "500", "--format", "json"]
    reports = []
    for target in (str(tmp_path), "qwen3-30b-a3b"):
        assert main(["recommend", "--target", target, *args]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    assert reports[0]["memory"] == reports[1]["memory"] and reports[0]["per_k"] == reports[1]["per_k"]
    assert _without_names(reports[0]) == _without_names(reports[1])


def test_calibrate_reads_a_transformers_5_qwen3_moe_directory(tmp_path, capsys):
    """calibrate loads the target before anything else, then refuses --dummy-weights for an MoE (issue 33): the line
    it ends on names the experts it read from transformers 5's `num_local_experts` (before issue 39: "config.json ...
    has no 'num_experts'")."""
    from advisor.cli.app import main

    pytest.importorskip("vllm")
    save_with_transformers("qwen3_moe", tmp_path / "model")
    code = main(["calibrate", "--target", str(tmp_path / "model"), "--dummy-weights", "--repeats", "2",
                 "--gpu", "cpu-xeon-icelake-2vcpu", "--out", str(tmp_path / "c.json")])
    err = capsys.readouterr().err
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    experts = f"{config['num_local_experts']} experts, top-{config['num_experts_per_tok']}"
    assert code == 2 and experts in err and "--dummy-weights" in err and "num_experts" not in err

