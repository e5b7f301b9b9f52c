"""advisor/vllm/command.py: the pasted speculative_config and `vllm serve` line, parsed by vLLM."""

import json
import shlex
from pathlib import Path

import pytest

from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.speculative import Setup
from advisor.profiles.catalog import load_model
from advisor.vllm.command import serve_command, speculative_config


def test_draft_model_config_and_schedule(default_setup):
    config = speculative_config(default_setup, 4, [(1, 16, 4), (17, 64, 2), (65, 256, 0)])
    assert config == {"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct",
                      "num_speculative_tokens": 4,
                      "num_speculative_tokens_per_batch_size": [[1, 16, 4], [17, 64, 2], [65, 256, 0]]}
    assert speculative_config(default_setup, 0) == {}


def test_ngram_eagle3_and_tensor_parallel(llama8b, rtx6000):
    cost = EngineCost.from_datasheet(rtx6000)
    ngram = speculative_config(Setup(llama8b, cost, "ngram"), 3)
    assert ngram["method"] == "ngram" and "model" not in ngram and ngram["prompt_lookup_min"] <= ngram["prompt_lookup_max"]
    big = load_model("llama-3.3-70b-instruct")
    head = load_model("eagle3-llama3.3-instruct-70b")
    eagle = speculative_config(Setup(big, cost, "eagle", head, cost, tp=4), 3)
    assert eagle["method"] == "eagle3"
    dm = speculative_config(Setup(big, cost, "draft_model", load_model("llama-3.2-1b-instruct"), cost, tp=4), 3)
    assert dm["draft_tensor_parallel_size"] == 4


def test_serve_command_is_shell_safe(default_setup):
    cmd = serve_command(default_setup, 4, max_model_len=8200, gpu_memory_utilization=0.9)
    argv = shlex.split(cmd)
    assert argv[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]
    config = json.loads(argv[argv.index("--speculative-config") + 1])
    assert config["num_speculative_tokens"] == 4


@pytest.mark.engine
def test_config_keys_exist_in_the_installed_vllm(default_setup):
    """Every key we print must be a field of the installed vLLM's SpeculativeConfig (the source is the truth)."""
    from vllm.config import SpeculativeConfig

    fields = set(SpeculativeConfig.__dataclass_fields__)
    config = speculative_config(default_setup, 4, [(1, 8, 4), (9, 64, 2)])
    assert set(config) <= fields
    assert {"prompt_lookup_min", "prompt_lookup_max", "draft_tensor_parallel_size"} <= fields


def test_new_methods_paste_what_vllm_parses(llama8b, rtx6000):
    from dataclasses import replace

    from advisor.model.cost.drafters import mtp_head

    cost = EngineCost.from_datasheet(rtx6000)
    target = replace(llama8b, mtp_layers=1)
    assert speculative_config(Setup(target, cost, "mtp", mtp_head(target), cost, tp=8), 2) == {
        "method": "mtp", "num_speculative_tokens": 2}  # vLLM takes the target as the model
    assert speculative_config(Setup(llama8b, cost, "ngram_gpu"), 3) == {
        "method": "ngram_gpu", "num_speculative_tokens": 3, "prompt_lookup_min": 5, "prompt_lookup_max": 5}
    assert speculative_config(Setup(llama8b, cost, "suffix"), 6) == {"method": "suffix", "num_speculative_tokens": 6}


# A tiny DeepSeek-V3-shaped config (synthetic sizes, one MTP layer): vLLM reads only config.json to build the config
_TINY_DEEPSEEK = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 256,
                  "intermediate_size": 512, "moe_intermediate_size": 128, "num_hidden_layers": 2,
                  "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1024, "n_routed_experts": 8,
                  "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1, "kv_lora_rank": 64,
                  "q_lora_rank": 96, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32,
                  "num_nextn_predict_layers": 1, "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
                  "n_group": 1, "topk_group": 1}


@pytest.mark.engine
def test_every_modelled_method_builds_vllms_own_speculative_config(tmp_path, rtx6000):
    """What we paste, fed to the installed vLLM's SpeculativeConfig (its pydantic validation and __post_init__), on a
    CPU: the targets and drafts are local directories holding the profiles' config.json (no weights are read), the
    pasted Hugging Face id swapped for that directory. suffix needs arctic-inference; without it vLLM refuses with
    the install line, which is what this checks then."""
    from dataclasses import replace

    from vllm.config import ModelConfig, ParallelConfig, SpeculativeConfig
    from vllm.utils.import_utils import has_arctic_inference

    from advisor.model.cost.drafters import mtp_head

    def local(profile: str | None = None, config: dict | None = None) -> str:
        folder = tmp_path / (profile or "tiny-deepseek")
        folder.mkdir()
        text = (Path(__file__).parents[2] / "profiles" / "models" / f"{profile}.json").read_text() if profile else \
            json.dumps(config)
        (folder / "config.json").write_text(text)
        return str(folder)

    def build(printed: dict, target_dir: str | None, draft_dir: str | None = None) -> SpeculativeConfig:
        if draft_dir is not None:
            printed = {**printed, "model": draft_dir}
        target = None if target_dir is None else ModelConfig(model=target_dir, skip_tokenizer_init=True,
                                                             max_model_len=2048)
        return SpeculativeConfig(**printed, target_model_config=target, target_parallel_config=ParallelConfig())

    cost = EngineCost.from_datasheet(rtx6000)
    llama70b, tiny_t, tiny_d = (load_model(n) for n in ("llama-3.3-70b-instruct", "tiny-llama-target",
                                                        "tiny-llama-draft"))
    head = load_model("eagle3-llama3.3-instruct-70b")
    big = local("llama-3.3-70b-instruct")
    built = build(speculative_config(Setup(llama70b, cost, "eagle3", head, cost), 3), big,
                  local("eagle3-llama3.3-instruct-70b"))
    assert (built.method, built.num_speculative_tokens) == ("eagle3", 3)
    built = build(speculative_config(Setup(tiny_t, cost, "draft_model", tiny_d, cost), 3, [(1, 4, 3), (5, 9, 2)]),
                  local("tiny-llama-target"), local("tiny-llama-draft"))
    assert built.method == "draft_model" and built.max_num_new_slots_for_drafting == 1
    for method in ("ngram", "ngram_gpu"):
        built = build(speculative_config(Setup(tiny_t, cost, method), 4), None)
        assert (built.method, built.prompt_lookup_min, built.prompt_lookup_max) == (method, 5, 5)
    target = replace(llama70b, mtp_layers=1)
    built = build(speculative_config(Setup(target, cost, "mtp", mtp_head(target), cost), 3), local(
        config=_TINY_DEEPSEEK))
    assert built.method == "mtp" and built.draft_model_config.hf_config.model_type == "deepseek_mtp"
    assert built.max_num_new_slots_for_drafting == 0
    suffix = speculative_config(Setup(tiny_t, cost, "suffix"), 4)
    if has_arctic_inference():
        assert build(suffix, None).num_speculative_tokens == 4
    else:
        with pytest.raises(ImportError, match="arctic-inference"):
            build(suffix, None)


def test_the_speculative_config_keys_are_vllms():
    import dataclasses

    from vllm.config import SpeculativeConfig

    from advisor.vllm.command import SPECULATIVE_CONFIG_KEYS

    assert SPECULATIVE_CONFIG_KEYS == {f.name for f in dataclasses.fields(SpeculativeConfig) if f.init}


def test_the_inferred_method_is_the_one_vllm_infers(tmp_path):
    """A config without "method": vLLM's own SpeculativeConfig, on local copies of the profiles' config.json (the
    directory named as the Hugging Face id it stands for), infers what `inferred_method` says."""
    from vllm.config import ModelConfig, ParallelConfig, SpeculativeConfig

    from advisor.vllm.command import inferred_method

    def local(profile: str, name: str) -> str:
        folder = tmp_path / name
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(
            (Path(__file__).parents[2] / "profiles" / "models" / f"{profile}.json").read_text())
        return str(folder)

    target = ModelConfig(model=local("tiny-llama-target", "target"), skip_tokenizer_init=True, max_model_len=256)
    for profile, name in (("eagle3-llama3.1-instruct-8b", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"),
                          ("eagle-llama3.1-instruct-8b", "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"),
                          ("tiny-llama-draft", "someone/tiny-draft")):
        config = {"model": local(profile, name), "num_speculative_tokens": 2}
        built = SpeculativeConfig(**config, target_model_config=target, target_parallel_config=ParallelConfig())
        assert built.method == inferred_method(config), name
    assert inferred_method({"model": "[ngram]"}) == "ngram"


def test_block_drafters_paste_their_method_and_p_eagle_its_parallel_drafting(rtx6000):
    """DFlash and DSpark paste their method and head (vLLM sets parallel_drafting itself for them); a P-EAGLE head
    is eagle3 with "parallel_drafting": true, a field of the installed vLLM's SpeculativeConfig."""
    from vllm.config import SpeculativeConfig

    cost = EngineCost.from_datasheet(rtx6000)
    qwen = load_model("qwen3-8b")
    cases = {"dflash-qwen3-8b-b16": ("dflash", "z-lab/Qwen3-8B-DFlash-b16"),
             "dspark-qwen3-8b-b7": ("dspark", "deepseek-ai/dspark_qwen3_8b_block7"),
             "peagle-qwen3-8b": ("eagle3", "./qwen3-8b-peagle")}
    for name, (method, model) in cases.items():
        config = speculative_config(Setup(qwen, cost, method, load_model(name), cost), 7)
        expected = {"method": method, "model": model, "num_speculative_tokens": 7}
        if method == "eagle3":
            expected["parallel_drafting"] = True
        assert config == expected, name
        assert set(config) <= set(SpeculativeConfig.__dataclass_fields__)
    plain = speculative_config(Setup(qwen, cost, "eagle3", load_model("eagle3-qwen3-8b"), cost), 3)
    assert "parallel_drafting" not in plain and plain["model"] == "AngelSlim/Qwen3-8B_eagle3"
