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


@pytest.mark.parametrize("extra, message", [
    (["--enable-dbo"], "--enable-dbo with --all2all-backend allgather_reducescatter: vLLM 0.32 refuses to start"),
    (["--request-rate", "-1"], "--request-rate is requests per second"),
])
def test_what_vllm_or_the_rate_refuses_is_one_line(capsys, extra, message):
    assert main([*EXAMPLE, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_deployment_files_need_a_deployment(capsys):
    one = ["recommend", "--prompt-len", "100", "--out-len", "100", "--format", "llm-d"]
    assert main(one) == 2 and "writes the files of a deployment at scale" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["llm-d", "ray"])
def test_deployment_files_at_scale(capsys, kind):
    assert main([*EXAMPLE, "--all2all-backend", "deepep_low_latency", "--disaggregated", "--format", kind]) == 0
    out = capsys.readouterr().out
    assert "NixlConnector" in out and "kv_producer" in out and "kv_consumer" in out


def test_a_rate_at_scale_sets_the_concurrency(capsys):
    assert main([*EXAMPLE, "--request-rate", "10", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["load"]["rate"] == 10 and doc["batch"] == doc["load"]["batch"] != 2048
    assert any("10 requests/s puts" in n for n in doc["notes"])
