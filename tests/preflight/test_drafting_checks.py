"""advisor/preflight/drafting_checks.py: each check has a command that triggers it and a neighbour that does not,
and each rests on what vLLM 0.32's own config code decides, called here on the same inputs."""

import inspect
import json
from types import SimpleNamespace

import pytest

from advisor.cli.app import main
from advisor.preflight import drafting_checks
from advisor.preflight.run import CHECKS


def run(*args: str) -> tuple[int, str]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["preflight", *args, "--gpu", "h100-sxm"])
    return code, out.getvalue().replace("\n  ", " ")


def serve(model: str, config: dict, *flags: str, env: str = "") -> str:
    return " ".join([env, "vllm", "serve", model, "--max-model-len", "4096", *flags, "--speculative-config",
                     "'" + json.dumps(config) + "'"]).strip()


Q8, DFLASH, DSPARK = "Qwen/Qwen3-8B", "z-lab/Qwen3-8B-DFlash-b16", "deepseek-ai/dspark_qwen3_8b_block7"
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
PEAGLE = {"method": "eagle3", "model": "./qwen3-8b-peagle", "num_speculative_tokens": 5, "parallel_drafting": True}

# check -> (the triggering command, its clean neighbour)
CASES = {
    "block_k": (serve(Q8, {"method": "dflash", "model": DFLASH, "num_speculative_tokens": 16}),
                serve(Q8, {"method": "dflash", "model": DFLASH, "num_speculative_tokens": 15})),
    "model_runner": (serve(Q8, {"method": "dspark", "model": DSPARK, "num_speculative_tokens": 7},
                           env="VLLM_USE_V2_MODEL_RUNNER=0"),
                     serve(Q8, {"method": "dspark", "model": DSPARK, "num_speculative_tokens": 7})),
    "draft_attention_backend": (
        serve(Q8, {"method": "dflash", "model": DFLASH, "num_speculative_tokens": 15,
                   "attention_backend": "TRITON_FLASH_ATTN"}),
        serve(Q8, {"method": "dflash", "model": DFLASH, "num_speculative_tokens": 15,
                   "attention_backend": "FLASH_ATTN"})),
    "fused_dspark": (serve(Q8, {"method": "dspark", "num_speculative_tokens": 5}),
                     serve(V41, {"method": "dspark", "num_speculative_tokens": 5}, "-tp 8")),
    "parallel_token": (serve(Q8, PEAGLE), serve(Q8, {**PEAGLE, "model": "AngelSlim/Qwen3-8B_eagle3",
                                                     "parallel_drafting": False})),
}


def test_every_drafting_check_has_a_case_and_runs_in_preflight():
    names = {c.__name__ for c in CHECKS if c.__module__ == drafting_checks.__name__}
    assert set(CASES) == names


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_command_that_triggers_the_check_and_one_that_does_not(name):
    trigger, clean = CASES[name]
    code, out = run(trigger)
    line = next((line for line in out.splitlines() if f"[{name}]" in line), None)
    assert code == 1 and line is not None and line.startswith("problem") and "(vLLM 0.32: " in line, out
    code, out = run(clean)
    assert f"[{name}]" not in out, out


def test_more_triggers():
    # dual batch overlap without VLLM_USE_V2_MODEL_RUNNER takes the V1 runner, which has no DSpark
    code, out = run(serve(Q8, {"method": "dspark", "model": DSPARK, "num_speculative_tokens": 7}, "--enable-dbo"))
    assert code == 1 and "[model_runner]" in out and "--enable-dbo" in out
    # P-EAGLE forced onto Model Runner V2
    code, out = run(serve(Q8, PEAGLE, env="VLLM_USE_V2_MODEL_RUNNER=1"))
    assert "[model_runner]" in out and "P-EAGLE" in out
    # mtp on DeepSeek-V4.1, whose next-n layers are DSpark stages
    code, out = run(serve(V41, {"method": "mtp", "num_speculative_tokens": 3}, "-tp 8"))
    assert code == 1 and "[fused_dspark]" in out and "not MTP" in out
    # Step-3.7-Flash has 3 MTP layers: k = 4 is refused (the refusals' k_divisible), k = 6 is not
    code, out = run(serve("stepfun-ai/Step-3.7-Flash", {"method": "mtp", "num_speculative_tokens": 4}, "-tp 8"))
    assert code == 1 and "[k_divisible]" in out
    code, out = run(serve("stepfun-ai/Step-3.7-Flash", {"method": "mtp", "num_speculative_tokens": 6}, "-tp 8"))
    assert "[k_divisible]" not in out


def test_the_n_predict_vllm_reads_is_the_profiles_mtp_layers():
    """vllm/config/speculative.py `hf_config_override` sets n_predict from num_nextn_predict_layers (Step-3.7 as
    step3p5_mtp, DeepSeek-V3 as deepseek_mtp), and `__post_init__` refuses a k above it that it does not divide."""
    from transformers import PretrainedConfig
    from vllm.config import SpeculativeConfig

    from advisor.profiles.catalog import load_model

    step = PretrainedConfig(architectures=["Step3p7ForConditionalGeneration"], model_type="step3p7",
                            num_nextn_predict_layers=load_model("step-3.7-flash").mtp_layers)
    assert SpeculativeConfig.hf_config_override(step).n_predict == 3
    source = inspect.getsource(SpeculativeConfig.__post_init__)
    assert "self.num_speculative_tokens > n_predict" in source and "% n_predict != 0" in source


def test_vllm_runs_dspark_on_model_runner_v2_only(monkeypatch):
    """vllm/config/vllm.py `use_v2_model_runner` with VLLM_USE_V2_MODEL_RUNNER=0 takes V1, whose unsupported
    features include DSpark: vLLM refuses to start."""
    import vllm.config.vllm as source
    from vllm.config import VllmConfig

    monkeypatch.setattr(source, "HAS_TRITON", True)
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "0")
    spec = SimpleNamespace(method="dspark", parallel_drafting=True, enable_adaptive_verification=False,
                           draft_model_config=SimpleNamespace(hf_config=SimpleNamespace(), architectures=[]))
    config = SimpleNamespace(attention_config=SimpleNamespace(hisparse_config=None), speculative_config=spec,
                             model_config=None, scheduler_config=SimpleNamespace(async_scheduling=True),
                             parallel_config=SimpleNamespace(prefill_context_parallel_size=1,
                                                             pipeline_parallel_size=1,
                                                             enable_batch_sharded_sampling=False))
    for name in ("_dflash_needs_multi_kv_group", "_is_dflash_candidate_draft"):
        setattr(config, name, getattr(VllmConfig, name).__get__(config))
    assert VllmConfig.use_v2_model_runner.fget(config) is False
    assert "dspark speculative decoding" in VllmConfig._get_v1_model_runner_unsupported_features(config)


def test_vllm_gives_deepseek_v4_an_mtp_draft_and_v41_none():
    """`hf_config_override`: DeepSeek-V4's next-n layer becomes DeepSeekV4MTPModel; V4.1's stay DSpark stages (no MTP
    architecture), and `dspark` without a model takes the target's own checkpoint (`__post_init__`)."""
    from transformers import PretrainedConfig
    from vllm.config import SpeculativeConfig

    v4 = SpeculativeConfig.hf_config_override(PretrainedConfig(
        architectures=["DeepseekV4ForCausalLM"], model_type="deepseek_v4", num_nextn_predict_layers=1))
    v41 = SpeculativeConfig.hf_config_override(PretrainedConfig(
        architectures=["DeepseekV41ForCausalLM"], model_type="deepseek_v41", num_nextn_predict_layers=3))
    assert v4.architectures == ["DeepSeekV4MTPModel"] and v41.architectures == ["DeepseekV41ForCausalLM"]
    assert "self.model = self.target_model_config.model" in inspect.getsource(SpeculativeConfig.__post_init__)
