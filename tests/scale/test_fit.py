"""advisor/scale/fit.py: the one-GPU-group memory rule with the deployment's weights per GPU, and what would fit."""

import pytest

from advisor.model.parallel.deployment import Deployment
from advisor.scale import fit
from advisor.scale.load import answer
from advisor.render.scale_report import text
from tests.scale_scenarios import scenario


def test_glm52_bf16_on_eight_h200_at_dp8_ep_is_disable_and_says_fp8_fits():
    s = scenario(target="glm-5.2", method="mtp", gpu="h200", batch=256, prompt_len=2000, out_len=1000)
    a = answer(s, Deployment(data_parallel_size=8, enable_expert_parallel=True))
    assert a.verdict == "disable" and a.best_k == 0
    assert all(r.padded_requests == 0 for r in a.rows)  # no request runs where the weights do not fit
    assert "FP8 fits (--quantization fp8" in a.does_not_fit
    report = text(a, width=120)
    assert report.startswith("warning: GLM-5.2 (bf16) does not fit") and "no vllm serve" in report
    fp8 = scenario(target="glm-5.2", method="mtp", gpu="h200", batch=256, prompt_len=2000, out_len=1000)
    from dataclasses import replace

    fp8 = replace(fp8, setup=replace(fp8.setup, target_cost=replace(fp8.setup.target_cost, weight_dtype="fp8"),
                                     draft_cost=replace(fp8.setup.draft_cost, weight_dtype="fp8")))
    served = answer(fp8, Deployment(data_parallel_size=8, enable_expert_parallel=True))
    assert not served.does_not_fit and served.rows[0].padded_requests > 0  # what it said would fit, fits


def test_deepseek_v3_on_eight_rtx_4090_is_disable():
    a = answer(scenario(gpu="rtx-4090", batch=64), Deployment(data_parallel_size=8, enable_expert_parallel=True))
    assert a.verdict == "disable" and a.weights_gb_per_gpu > 24 and "does not fit" in a.does_not_fit


def test_more_gpus_are_named_when_they_fit():
    s = scenario(target="glm-5.2", method="mtp", gpu="h200", batch=256, prompt_len=2000, out_len=1000)
    d = Deployment(data_parallel_size=8, enable_expert_parallel=True)
    found = fit.what_fits(s, s.setup, d)
    assert "16 GPUs fit at bf16 (--data-parallel-size 16 over 2 nodes" in found
    assert fit.budget(s, s.setup, Deployment(data_parallel_size=16, enable_expert_parallel=True, nodes=2), 0).fits


def test_the_budget_is_the_one_gpu_rule_at_one_group():
    """At TP alone the deployment puts each weight over tp, as one GPU group: the same budget, not a copy of it."""
    from advisor.model.cost import memory

    s = scenario(target="qwen3-30b-a3b", method="eagle3", gpu="h100-sxm", batch=8, num_gpus=2)
    for k in (0, 3):
        at_scale = fit.budget(s, s.setup, Deployment(tensor_parallel_size=2), k)
        one_group = memory.budget_for(s.setup, s.hardware, k, prompt_len=s.prompt_len, out_len=s.out_len,
                                      gpu_memory_utilization=s.gpu_memory_utilization)
        assert at_scale.target_weights == pytest.approx(one_group.target_weights, rel=1e-12)
        assert at_scale.draft_weights == pytest.approx(one_group.draft_weights, rel=1e-12)
        assert (at_scale.max_concurrency_baseline, at_scale.max_concurrency_spec) == (
            one_group.max_concurrency_baseline, one_group.max_concurrency_spec)
