"""Names and flags to a Scenario: the default draft a user would pick, and refusals that name what the user typed."""

import json

import pytest

from advisor.advice.resolve import build_scenario, default_draft
from advisor.errors import InputError
from advisor.model.cost.memory import budget_for
from advisor.profiles.catalog import load_model
from advisor.vllm.command import serve_command


@pytest.mark.parametrize("target, draft", [
    ("llama-3.1-8b-instruct", "llama-3.2-1b-instruct"),
    ("meta-llama-3-8b-instruct", "llama-3.2-1b-instruct"),  # same vocabulary and family, though another release
    ("gemma-2-9b-it", "gemma-2-2b-it"),  # no draft an eighth of its size: the family's smallest
    ("llama-3.3-70b-instruct", "llama-3.1-8b-instruct"),
])
def test_the_default_draft_is_the_one_a_user_would_pair(target, draft):
    assert default_draft(load_model(target), "draft_model") == draft


def test_a_plans_tensor_parallel_is_named_as_the_plan_names_it():
    with pytest.raises(InputError, match=r"^tensor_parallel = 3 \(deployment 'x'\) must divide the attention heads"):
        build_scenario(prompt_len=100, out_len=100, num_gpus=3, tp_flag="tensor_parallel = 3 (deployment 'x')")
    with pytest.raises(InputError, match=r"^--num-gpus 3 must divide"):
        build_scenario(prompt_len=100, out_len=100, num_gpus=3)


@pytest.mark.parametrize("kwargs, says", [
    ({"method": "ngram_gpu", "draft": "llama-3.2-1b-instruct"}, "--method ngram_gpu drafts from the text itself"),
    ({"method": "mtp"}, "needs a target with MTP layers"),
    ({"method": "deepseek_mtp"}, "needs a target with MTP layers"),
    ({"method": "eagle3", "target": "llama-3.1-8b-instruct", "draft": "eagle-llama3.1-instruct-8b"},
     "EAGLE-1 head"),
    ({"method": "medusa"}, "--method medusa is not modelled: "),
    ({"method": "dflash"}, "no DFlash head profile matches Llama-3.1-8B-Instruct"),  # issue 47: priced, by its head
])
def test_methods_vllm_would_refuse_or_we_cannot_model_are_one_line(kwargs, says):
    with pytest.raises(InputError, match=says):
        build_scenario(prompt_len=100, out_len=100, **kwargs)


def test_mtp_with_a_draft_is_refused(llama8b):
    with pytest.raises(InputError, match="takes no --draft"):
        build_scenario(prompt_len=100, out_len=100, method="mtp", draft="llama-3.2-1b-instruct")


def test_eagle3_finds_the_eagle3_head_and_text_lookups_need_none():
    target = load_model("llama-3.3-70b-instruct")
    assert default_draft(target, "eagle3") == "eagle3-llama3.3-instruct-70b"
    assert default_draft(target, "suffix") is None and default_draft(target, "mtp") is None
    with pytest.raises(InputError, match="no EAGLE-3 head profile matches"):
        default_draft(load_model("qwen2.5-7b-instruct"), "eagle3")
    # Llama-3.1-8B ships both kinds: each method takes its own; eagle falls back to an EAGLE-3 head (Llama-3.3-70B)
    llama8b = load_model("llama-3.1-8b-instruct")
    assert default_draft(llama8b, "eagle3") == "eagle3-llama3.1-instruct-8b"
    assert default_draft(llama8b, "eagle") == "eagle-llama3.1-instruct-8b"
    assert default_draft(target, "eagle") == "eagle3-llama3.3-instruct-70b"


def test_a_target_with_mtp_layers_is_pointed_at_them_when_no_draft_model_matches():
    with pytest.raises(InputError, match="or --method mtp"):
        default_draft(load_model("hy3"), "draft_model")


def test_quantization_and_kv_cache_dtype_flow_into_costs_and_the_paste():
    s = build_scenario(prompt_len=1000, out_len=100, gpu="h100", quantization="fp8", kv_cache_dtype="fp8")
    cost = s.setup.target_cost
    assert (cost.weight_dtype, cost.kv_cache_dtype) == ("fp8", "fp8")
    assert cost.flops == pytest.approx(s.hardware.fp8_tflops * 1e12 * 0.63)  # fp8 tensor cores, datasheet efficiency
    assert s.setup.draft_cost.weight_dtype == "bf16"  # the draft is loaded as its own config says
    mem = budget_for(s.setup, s.hardware, 0, prompt_len=1000, out_len=100)
    assert mem.kv_per_token_baseline == 2 * 32 * 8 * 128 * 1  # Llama-3.1-8B, one byte per KV element
    paste = serve_command(s.setup, 3, max_model_len=1100, gpu_memory_utilization=0.9)
    assert "--quantization fp8 --kv-cache-dtype fp8" in paste
    with pytest.raises(InputError, match="needs a checkpoint quantized that way"):
        build_scenario(prompt_len=1000, out_len=100, quantization="awq")
    with pytest.raises(InputError, match="--kv-cache-dtype 'fp4' is not modelled"):
        build_scenario(prompt_len=1000, out_len=100, kv_cache_dtype="fp4")


# --- issue 25 item 5: inputs vLLM (or the model) would refuse are refused in one line ------------------------------

@pytest.mark.parametrize("measured_at", [5.0, -1.0, float("nan")])
def test_25_5_a_measured_temperature_outside_what_vllm_samples_at_is_refused(measured_at):
    # vLLM's SamplingParams refuses a temperature outside [0, 2] (vllm/sampling_params.py `_verify_args`): no
    # acceptance was measured there, and clipping it silently raised α 1.67x
    from advisor.advice.resolve import AcceptanceInput

    with pytest.raises(InputError, match="--measured-temperature"):
        build_scenario(prompt_len=200, out_len=200, temperature=1.0,
                       acceptance=AcceptanceInput(alpha=0.6, measured_temperature=measured_at))


@pytest.mark.parametrize("given", [{}, {"alpha": 0.7}, {"task": "code"}])
def test_25_5_measured_k_without_a_rate_or_length_is_refused(given):
    from advisor.advice.resolve import AcceptanceInput

    with pytest.raises(InputError, match="--measured-k"):
        build_scenario(prompt_len=200, out_len=200, acceptance=AcceptanceInput(measured_k=4, **given))


def test_25_5_max_num_batched_tokens_below_max_num_seqs_is_refused_as_vllm_does():
    # vllm/config/scheduler.py `SchedulerConfig.verify_max_model_len`: "max_num_batched_tokens (...) must be
    # greater than or equal to max_num_seqs"
    with pytest.raises(InputError, match="--max-num-batched-tokens 5.*max_num_seqs"):
        build_scenario(prompt_len=200, out_len=200, max_num_batched_tokens=5)
    with pytest.raises(InputError, match="max_num_seqs 64"):
        build_scenario(prompt_len=200, out_len=200, max_num_batched_tokens=32, max_num_seqs=64)
    build_scenario(prompt_len=200, out_len=200, max_num_batched_tokens=64, max_num_seqs=64)  # vLLM starts


# --- issue 34: the prior names its origin; a measurement far below published, or a mis-served head, is said ---------

def test_34_with_nothing_named_the_default_pair_takes_its_kinds_general_prior_and_says_so():
    acc = build_scenario(prompt_len=8000, out_len=200).acceptance
    assert acc.prior and acc.origin.kind == "same-family draft models" and acc.origin.task == ""
    assert "no task named: a general prior; name the traffic or measure it" in acc.notes
    assert acc.source.startswith("same-family draft models prior, no task named: AL ")
    head = build_scenario(target="llama-3.3-70b-instruct", method="eagle3", gpu="h100-sxm", num_gpus=4,
                          prompt_len=1000, out_len=200).acceptance  # a head the catalog has no figure for
    assert any(n.startswith("EAGLE3-LLaMA3.3-Instruct-70B has no published figure") for n in head.notes)
    assert head.origin.kind == "EAGLE-3 heads" and head.origin.drafter == ""


def test_34_a_catalog_drafter_sets_the_prior(tmp_path):
    acc = build_scenario(target="deepseek-v3", method="mtp", gpu="h200", num_gpus=8, prompt_len=1000,
                         out_len=200).acceptance
    assert acc.origin.drafter == "DeepSeek-V3 MTP" and "AL 2.44 at k=3" in acc.origin.published
    assert acc.per_position is not None  # MTP's falling shape


def _eagle3_head_dir(tmp_path, name="my-eagle3-head"):
    from advisor.profiles.catalog import profiles_dir

    config = json.loads((profiles_dir() / "models" / "eagle3-llama3.3-instruct-70b.json").read_text())
    del config["_specadvisor"]
    head = tmp_path / name
    head.mkdir()
    (head / "config.json").write_text(json.dumps(config))
    return head


def test_34_an_eagle3_head_directory_under_method_eagle_is_warned_about_before_any_number(tmp_path):
    s = build_scenario(target="llama-3.3-70b-instruct", draft=str(_eagle3_head_dir(tmp_path)), method="eagle",
                       gpu="h100-sxm", num_gpus=4, prompt_len=1000, out_len=200)
    assert s.acceptance.warnings and "use --method eagle3" in s.acceptance.warnings[0]
    assert s.acceptance.origin.kind == "EAGLE-3 heads"  # pasted as eagle3 (advisor.vllm.command), so priced as one
    s = build_scenario(target="llama-3.3-70b-instruct", draft=str(_eagle3_head_dir(tmp_path, "b")), method="eagle3",
                       gpu="h100-sxm", num_gpus=4, prompt_len=1000, out_len=200)
    assert not s.acceptance.warnings


def test_34_a_measured_acceptance_far_below_published_is_diagnosed():
    from advisor.advice.resolve import AcceptanceInput

    kw = dict(target="llama-3.3-70b-instruct", method="eagle3", gpu="h100-sxm", num_gpus=4, prompt_len=1000,
              out_len=200)
    low = build_scenario(acceptance=AcceptanceInput(length=1.05, measured_k=3), **kw).acceptance
    assert len(low.warnings) == 1
    assert "AL 1.05 at k=3 against" in low.warnings[0] and "for EAGLE-3 heads" in low.warnings[0]
    assert "likely causes: a chat template" in low.warnings[0] and "method eagle" in low.warnings[0]
    assert not build_scenario(acceptance=AcceptanceInput(length=2.5, measured_k=3), **kw).acceptance.warnings
    assert low.origin is None and not low.prior


def test_34_a_known_drafter_is_the_yardstick_and_the_pairs_facts_come_first():
    from advisor.advice.resolve import AcceptanceInput

    acc = build_scenario(target="deepseek-v3", method="mtp", gpu="h200", num_gpus=8, prompt_len=1000, out_len=200,
                         quantization="fp8", acceptance=AcceptanceInput(length=1.1, measured_k=2)).acceptance
    (line,) = acc.warnings
    assert "for DeepSeek-V3 MTP" in line and "AL 2.44 at k=3 on ISL 64K / OSL 4K" in line
    assert "likely causes: a chat template" in line and "#55605" in line
    assert "served quantized" not in line  # MTP layers ship quantized with the target
    head = build_scenario(target="llama-3.3-70b-instruct", method="eagle3", gpu="h100-sxm", num_gpus=4,
                          prompt_len=4000, out_len=200, quantization="fp8",
                          acceptance=AcceptanceInput(length=1.05, measured_k=3)).acceptance
    assert "likely causes: the target is served quantized (fp8)" in head.warnings[0]
    assert "prompts of 4000 tokens are past the drafter's 2048-token training context" in head.warnings[0]


def test_ngram_on_a_gpu_says_its_host_wait_is_a_lower_bound():
    """The note reaches the report: the synchronous host step n-gram waits for on a GPU is the scheduler's alone."""
    notes = build_scenario(method="ngram", gpu="h100-sxm", prompt_len=512, out_len=128).gpu_caveats
    assert any("a lower bound" in n and "sampled tokens' copy back" in n for n in notes)
    assert not any("synchronously" in n for n in build_scenario(gpu="h100-sxm", prompt_len=512,
                                                               out_len=128).gpu_caveats)
