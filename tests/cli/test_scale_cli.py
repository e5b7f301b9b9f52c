import json

import pytest

from advisor.cli.app import main

EXAMPLE = ["recommend", "--target", "deepseek-v3", "--method", "mtp", "--gpu", "h200", "--num-gpus", "1",
           "--data-parallel-size", "16", "--enable-expert-parallel", "--nodes", "2", "--prompt-len", "2000",
           "--out-len", "2000", "--batch", "2048", "--calibration", "datasheet"]


def test_the_issues_example_answers_with_per_node_commands(capsys):
    assert main(EXAMPLE) == 0
    out = capsys.readouterr().out
    assert "TP1 x DP16 = 16 GPUs on 2 node(s)" in out and "EP16 (allgather_reducescatter)" in out
    assert "node 0: vllm serve deepseek-ai/DeepSeek-V3" in out and "--headless" in out


def test_json_at_scale_carries_the_user_token_cap(capsys):
    assert main([*EXAMPLE, "--all2all-backend", "deepep_low_latency", "--max-num-batched-tokens", "1024",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["token_cap"] == 1024 and doc["deployment"]["ep_size"] == 16
    assert all("--max-num-batched-tokens 1024" in c for c in doc["serve_commands"])


@pytest.mark.parametrize("extra, message", [
    (["--all2all-backend", "mori_low_latency"], "is not modelled"),
    (["--all2all-backend", "naive"], "removed in vLLM 0.32"),
    (["--nodes", "3"], "must divide"),
])
def test_unmodelled_shapes_are_refused_in_one_line(capsys, extra, message):
    assert main([*EXAMPLE, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_redundant_experts_paste_eplb_and_cost_memory(capsys):
    assert main([*EXAMPLE, "--format", "json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*EXAMPLE, "--redundant-experts", "32", "--format", "json"]) == 0
    eplb = json.loads(capsys.readouterr().out)
    assert eplb["weights_gb_per_gpu"] > plain["weights_gb_per_gpu"] + 4
    assert all("--enable-eplb --eplb-config '{\"num_redundant_experts\": 32}'" in c for c in eplb["serve_commands"])


def test_markdown_at_scale_is_the_report_fenced(capsys):
    assert main([*EXAMPLE, "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("```text\nverdict at scale:") and out.endswith("```\n")
