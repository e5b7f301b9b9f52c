"""The CLI through typer's runner: the report, the JSON schema, and one clear line for every bad input."""

import json

import pytest
from typer.testing import CliRunner

from advisor.advice.recommendation_json import from_json
from advisor.cli.app import app, main

runner = CliRunner()
BASE = ["recommend", "--prompt-len", "8000", "--out-len", "200"]


def test_default_report_names_the_pair_and_prints_flags():
    result = runner.invoke(app, BASE)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Llama-3.1-8B-Instruct + Llama-3.2-1B-Instruct" in out and "RTX PRO 6000" in out
    assert "decode_share" in out and "prefill" in out
    assert "vllm serve meta-llama/Llama-3.1-8B-Instruct" in out and "--speculative-config" in out


def test_json_matches_the_documented_schema():
    result = runner.invoke(app, BASE + ["--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    from_json(result.output)  # raises on a missing, mistyped or undeclared key
    for key in ("verdict", "best_k", "speedup", "per_k", "break_even_alpha", "critical_batch", "memory",
                "time_split", "checks", "vllm", "cost_source", "inputs"):
        assert key in data
    assert set(data["speedup"]) == {"tpot", "e2e_latency", "throughput"}
    assert {"k", "expected_tokens_per_step", "tpot_speedup", "e2e_speedup", "throughput_speedup", "fits",
            "concurrency", "tpot_low", "tpot_high", "e2e_low", "e2e_high", "throughput_low",
            "throughput_high"} == set(data["per_k"][0])
    assert {"max_concurrency_baseline", "max_concurrency_spec", "fits"} <= set(data["memory"])
    assert "prefill_fraction_baseline" in data["time_split"]
    assert {"serve_command", "speculative_config", "per_batch_size_schedule", "model_runner",
            "schedule_check"} == set(data["vllm"])
    # vLLM sizes its drafts for the largest k it may run: best_k, or a larger one the batch-size schedule switches to
    schedule_ks = [run[2] for run in data["vllm"]["per_batch_size_schedule"] or ()]
    assert data["vllm"]["speculative_config"]["num_speculative_tokens"] == max([data["best_k"], *schedule_ks])
    assert data["inputs"]["prompt_len"] == 8000


def test_markdown_format():
    result = runner.invoke(app, BASE + ["--format", "markdown"])
    assert result.exit_code == 0
    assert result.output.startswith("## specadvisor:") and "| k |" in result.output


@pytest.mark.parametrize("extra, message", [
    (["--prompt-len", "0"], "at least 1"),
    (["--out-len", "-5"], "at least 1"),
    (["--alpha", "1.5"], "--alpha must be in [0, 1]"),
    (["--k", "17"], "--k must be in 0..16"),
    (["--gpu", "h1000"], "did you mean"),
    (["--target", "llama-3.1-8b-instrct"], "did you mean"),
    (["--draft", "llama-3.1-70b-instruct"], "not smaller than the target"),
    (["--draft", "qwen3-0.6b"], "vocabulary mismatch"),
    (["--acceptance-rate", "0.5"], "--measured-k"),
    (["--alpha", "0.5", "--task", "code"], "one acceptance source"),
    (["--batch", "0"], "--batch must be at least 1"),
    (["--gpu-memory-utilization", "1.5"], "gpu-memory-utilization"),
    (["--temperature", "5"], "--temperature"),
    (["--prompt-len", "abc"], "prompt-len"),
    (["--frobnicate"], "No such option"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, extra, message):
    args = BASE + extra if extra[0] not in ("--prompt-len", "--out-len") else (
        ["recommend"] + extra + (["--out-len", "200"] if extra[0] == "--prompt-len" else ["--prompt-len", "10"]))
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("specadvisor: error:")
    assert message in err
    assert "Traceback" not in err


def test_malformed_config_json_in_a_model_dir(tmp_path, capsys):
    (tmp_path / "config.json").write_text("{oops")
    assert main(BASE + ["--target", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "config.json is not valid JSON (malformed at line 1" in err and err.count("\n") == 1


def test_missing_model_dir(capsys):
    assert main(BASE + ["--draft", "./no/such/dir"]) == 2
    assert "no such model directory" in capsys.readouterr().err


def test_list_profiles():
    result = runner.invoke(app, ["list", "hardware"])
    assert result.exit_code == 0 and "h100-sxm" in result.output.split()


def test_help_into_a_closed_pipe_prints_no_traceback():
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "advisor.cli.app", "recommend", "--help"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # like `| head -0`: the reader is gone before the help is written
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err


def test_list_methods_names_every_method_and_why_some_are_not_modelled():
    result = runner.invoke(app, ["list", "methods"])
    words = result.output.split()
    assert result.exit_code == 0
    for method in ("draft_model", "eagle", "eagle3", "mtp", "ngram", "ngram_gpu", "suffix", "dflash", "medusa"):
        assert method in words
    assert result.output.count("not modelled:") == 4  # medusa, mlp_speculator, custom_class, extract_hidden_states


@pytest.mark.parametrize("method, says", [
    ("medusa", "--method medusa is not modelled: "),
    ("mtp", "--method mtp needs a target with MTP layers"),
    ("lookahead", "unknown --method 'lookahead'"),
])
def test_methods_that_cannot_be_advised_exit_2_with_one_line(capsys, method, says):
    assert main(BASE + ["--method", method]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
