import json
import shlex

import pytest

from advisor.model.costmodel import EngineCost
from advisor.model.speculative import Setup
from advisor.profiles.catalog import load_model
from advisor.vllm import serve_command, speculative_config


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


def test_batch_defaults_follow_vllms_device_classes():
    # vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (vLLM 0.32), `vllm serve` and offline LLM
    from advisor.profiles.catalog import load_hardware, names
    from advisor.vllm import batch_defaults

    expected = {"b200": (16384, 1024), "mi300x": (16384, 1024), "mi325x": (16384, 1024),
                "h100-sxm": (8192, 1024), "h100-pcie": (8192, 1024), "h100-nvl": (8192, 1024), "h200": (8192, 1024),
                "rtx-pro-6000-blackwell": (8192, 1024), "a100-80gb-sxm": (2048, 256), "a100-80gb-pcie": (2048, 256),
                "a100-40gb-sxm": (2048, 256), "l40s": (2048, 256), "rtx-4090": (2048, 256), "l4": (2048, 256)}
    for slug, limits in expected.items():
        hw = load_hardware(slug)
        assert batch_defaults(hw.memory_gib, hw.name) == limits, slug
    assert batch_defaults(80, "NVIDIA H100", server=False) == (16384, 1024)
    assert batch_defaults(80, "NVIDIA A100-SXM4-80GB", server=False) == (8192, 256)
    assert batch_defaults(24, "cpu", cpu=True) == (2048, 128)
    assert batch_defaults(24, "cpu", cpu=True, ranks=2, server=False) == (8192, 512)
    assert set(expected) <= set(names("hardware"))
