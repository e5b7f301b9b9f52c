"""`specadvisor preflight` (advisor/preflight/): every check has a command that triggers it (exit 1 and its line;
exit 0 and a note line for the notes) and a neighbour that does not."""

import contextlib
import io
import json
from pathlib import Path

import pytest

from advisor.cli.app import main
from advisor.preflight import checks, drafting_checks, refusals, scheduling
from advisor.preflight.run import CHECKS


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["preflight", *args])
    return code, out.getvalue().replace("\n  ", " ")  # each finding is one line, wrapped to the terminal


def serve(model: str, config: dict | None, *flags: str) -> str:
    spec = ["--speculative-config", "'" + json.dumps(config) + "'"] if config else []
    return " ".join(["vllm", "serve", model, *flags, *spec])


L8, HEAD3 = "meta-llama/Llama-3.1-8B-Instruct", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
EAGLE3 = {"method": "eagle3", "model": HEAD3, "num_speculative_tokens": 3}
DRAFT = {"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 3}
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 5, "prompt_lookup_max": 5}
SUFFIX = {"method": "suffix", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[1, 4, 3],
                                                                                                  [5, 1024, 1]]}
SCHEDULE = {**EAGLE3, "num_speculative_tokens_per_batch_size": [[1, 4, 3], [5, 1024, 1]]}
MTP = {"method": "mtp", "num_speculative_tokens": 1}
PD = "--kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"%s\"}'"
DEEPEP = ("--data-parallel-size", "8", "--enable-expert-parallel", "--all2all-backend", "deepep_low_latency")
QWEN_MOE, NGRAM3 = "Qwen/Qwen3-30B-A3B", {"method": "ngram_gpu", "num_speculative_tokens": 3}
MTP2 = str(Path(__file__).parents[1] / "data" / "mtp2-model")  # a DeepSeek-shaped config with 2 MTP layers

# check -> (problem or note, the triggering arguments, the clean neighbour's arguments)
CASES = {
    "vocab_mismatch": (True, [serve(L8, {**DRAFT, "model": "Qwen/Qwen3-0.6B"}, "--max-model-len 4096")],
                       [serve(L8, DRAFT, "--max-model-len 4096")]),
    "eagle3_as_eagle": (True, [serve(L8, {**EAGLE3, "method": "eagle"}, "--max-model-len 2048")],
                        [serve(L8, EAGLE3, "--max-model-len 2048")]),
    "async_off": (True, [serve(L8, NGRAM, "--max-model-len 4096 --async-scheduling")],
                  [serve(L8, {**NGRAM, "method": "ngram_gpu"}, "--max-model-len 4096 --async-scheduling")]),
    "speculative_keys": (True, [serve(L8, {**NGRAM, "method": "ngram_gpu", "lookahead": 2}, "--max-model-len 4096")],
                         [serve(L8, {**NGRAM, "method": "ngram_gpu"}, "--max-model-len 4096")]),
    "mtp_without_layers": (True, [serve(L8, MTP, "--max-model-len 4096")],
                           [serve("deepseek-ai/DeepSeek-V3", MTP, "-tp 8 --max-model-len 4096")]),
    "k_divisible": (True, [serve(MTP2, {**MTP, "num_speculative_tokens": 3})],
                    [serve(MTP2, {**MTP, "num_speculative_tokens": 4})]),
    "draft_tensor_parallel": (True, [serve(L8, {**DRAFT, "draft_tensor_parallel_size": 2},
                                           "-tp 4 --max-model-len 4096")],
                              [serve(L8, {**DRAFT, "draft_tensor_parallel_size": 4}, "-tp 4 --max-model-len 4096")]),
    "dbo_backend": (True, [serve(QWEN_MOE, NGRAM3, "--data-parallel-size 8 --enable-expert-parallel --enable-dbo")],
                    [serve(QWEN_MOE, NGRAM3, *DEEPEP, "--enable-dbo --max-num-seqs 64")]),
    "nixl_producer_drafter": (False, [serve(L8, None, "--max-model-len 2048", PD % "kv_producer")],
                              [serve(L8, {**EAGLE3, "num_speculative_tokens": 1}, "--max-model-len 2048",
                                     PD % "kv_producer")]),
    "head_context": (True, [serve(L8, EAGLE3, "--max-model-len 8192")], [serve(L8, EAGLE3, "--max-model-len 2048")]),
    "draft_context": (True, [serve("Qwen/Qwen3-Next-80B-A3B-Instruct", {**DRAFT, "model": "Qwen/Qwen3-0.6B"},
                                   "--max-model-len 65536 -tp 4")],
                      [serve("Qwen/Qwen3-Next-80B-A3B-Instruct", {**DRAFT, "model": "Qwen/Qwen3-0.6B"},
                             "--max-model-len 32768 -tp 4")]),
    "k_beyond_measured": (True, [serve(L8, {**EAGLE3, "num_speculative_tokens": 5}, "--max-model-len 2048"),
                                 "--measured-k", "3"],
                          [serve(L8, EAGLE3, "--max-model-len 2048"), "--measured-k", "3"]),
    "schedule_data_parallel": (True, [serve(L8, SCHEDULE, "--max-model-len 2048 --data-parallel-size 2")],
                               [serve(L8, SCHEDULE, "--max-model-len 2048")]),
    "schedule_graph_mode": (True, [serve(L8, SUFFIX, "--max-model-len 4096",
                                         "--compilation-config '{\"cudagraph_mode\":\"FULL_AND_PIECEWISE\"}'")],
                            [serve(L8, {**SUFFIX, "num_speculative_tokens_per_batch_size": None},
                                   "--max-model-len 4096")]),
    "deepep_token_cap": (True, [serve(QWEN_MOE, NGRAM3, *DEEPEP, "--max-num-batched-tokens 512")],
                         [serve(QWEN_MOE, NGRAM3, *DEEPEP, "--max-num-batched-tokens 8192 --max-num-seqs 256")]),
    "token_budget": (True, [serve(L8, EAGLE3, "--max-model-len 2048 --max-num-batched-tokens 2048")],
                     [serve(L8, EAGLE3, "--max-model-len 2048 --max-num-batched-tokens 2048 --max-num-seqs 512")]),
    "hybrid_prefix_cache": (False, [serve("Qwen/Qwen3-Next-80B-A3B-Instruct", MTP, "-tp 4 --max-model-len 32768")],
                            [serve("Qwen/Qwen3-Next-80B-A3B-Instruct", MTP,
                                   "-tp 4 --max-model-len 32768 --no-enable-prefix-caching")]),
    "structured_ngram": (False, [serve(L8, {**NGRAM, "method": "ngram_gpu"}, "--max-model-len 4096"), "--task",
                                 "json"], [serve(L8, {**NGRAM, "method": "ngram_gpu"}, "--max-model-len 4096"),
                                           "--task", "code"]),
}


def test_every_check_has_a_case():
    from tests.preflight.test_drafting_checks import CASES as DRAFTING  # issue 47's checks: their own module

    assert set(CASES) | set(DRAFTING) == {c.__name__ for c in CHECKS}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_command_that_triggers_the_check_and_one_that_does_not(name):
    problem, trigger, clean = CASES[name]
    code, out = run(*trigger)
    assert code == (1 if problem else 0), out
    line = next(line for line in out.splitlines() if f"[{name}]" in line)
    assert line.startswith("problem" if problem else "note") and "(vLLM 0.32: " in line and "; fix: " in line
    code, out = run(*clean)
    assert f"[{name}]" not in out
    assert code == 0, out


@pytest.mark.parametrize("check", CHECKS)
def test_each_check_cites_the_vllm_file_it_reads(check):
    doc = check.__doc__
    assert "vLLM 0.32" in doc and ".py" in doc
    assert check.__module__ in (checks.__name__, scheduling.__name__, refusals.__name__, drafting_checks.__name__)


@pytest.mark.parametrize("args, words", [
    (["vllm serve"], "names no model"),
    (["python -m vllm serve x"], "vllm serve MODEL"),
    (["vllm serve x --speculative-config '{bad'"], "not valid JSON"),
    (["--model", "x", "--speculative-config", "[" * 5000 + "]" * 5000], "nests deeper than"),  # not a RecursionError
    (["--model", "x", "--speculative-config", '{"method": "ngram", "num_speculative_tokens": NaN}'], "NaN"),
    (["vllm serve x --speculative-config.prompt_lookup_max " + "[" * 5000 + "]" * 5000], "nests deeper than"),
    (["vllm serve x --max-num-seqs many"], "whole number"),
    (["--speculative-config", "{}"], "needs --model"),
    (["vllm serve x", "--task", "jsn"], "unknown --task 'jsn'"),  # recommend's own check: not silently unstructured
    ([], "one"),
    # issue 49: tracebacks where a list stood for a text vLLM types as one
    (["--model", "x", "--speculative-config", '{"method": ["eagle"], "num_speculative_tokens": 3}'],
     '--speculative-config method must be text, as vLLM takes it; got ["eagle"]'),
    (["vllm serve x --speculative-config.method '[\"eagle\"]'"], "method must be text"),
    (["vllm serve x --kv-transfer-config '{\"kv_role\":[1]}' --speculative-config '{\"method\":\"ngram\","
      "\"num_speculative_tokens\":3}'"], "--kv-transfer-config kv_role must be text"),
    (["vllm serve x --data-parallel-size " + "9" * 400], "takes a whole number"),
    (["vllm serve x " + "--max-num-seqs 8 " * 20_000], "characters long"),
])
def test_bad_input_is_one_line_and_exit_2(args, words, capsys):
    assert main(["preflight", *args]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("paste", [
    "vllm serve x --speculative-config '\"" + '\\"' * 500_000 + "'",  # the regex scan's quadratic case, 1 MB
    "vllm serve x --speculative-config " + "[" * 1_000_000,
])
def test_a_1_mb_hostile_paste_on_stdin_is_refused_within_a_second(paste, monkeypatch, capsys):
    import time

    monkeypatch.setattr("sys.stdin", io.StringIO(paste))
    began = time.monotonic()
    assert main(["preflight", "-"]) == 2
    assert time.monotonic() - began < 1.0  # generous for CI; speed figures belong in benchmarks/
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_bare_speculative_config_with_its_model():
    code, out = run("--speculative-config", json.dumps({**EAGLE3, "method": "eagle"}), "--model", L8,
                    "--max-model-len", "2048")
    assert code == 1 and "[eagle3_as_eagle]" in out


def test_an_unknown_model_is_said_and_the_rest_still_checked():
    code, out = run(serve("someone/private-model", {**SCHEDULE, "model": "someone/private-head"},
                          "--data-parallel-size 2"))
    assert code == 1 and "[schedule_data_parallel]" in out and "not checked: someone/private-model" in out


def test_exit_zero_reports_and_exits_0():
    trigger = CASES["head_context"][1]
    code, out = run(*trigger, "--exit-zero")
    assert code == 0 and "problem [head_context]" in out


def test_vllms_dotted_and_underscored_spellings_are_read():
    code, out = run("vllm serve meta-llama/Llama-3.1-8B-Instruct --max_model_len 8192 --speculative-config.method "
                    f"eagle3 --speculative-config.model {HEAD3} --speculative-config.num_speculative_tokens 3")
    assert code == 1 and "[head_context]" in out and "8192" in out


def test_a_k_past_the_published_figures_is_a_note():
    code, out = run(serve(L8, {**EAGLE3, "num_speculative_tokens": 12}, "--max-model-len 2048"))
    assert code == 0 and "note [k_beyond_measured]" in out and "stop at k=" in out
    code, out = run(serve(L8, {**EAGLE3, "num_speculative_tokens": 2}, "--max-model-len 2048"))
    assert "[k_beyond_measured]" not in out


def test_the_deepep_cap_under_vllms_own_limits_is_a_note():
    """vLLM sets 256 tokens and cuts an unset max_num_seqs to them (not the 1024 of a 141 GB GPU): a note."""
    code, out = run(serve(QWEN_MOE, NGRAM3, *DEEPEP), "--gpu", "h200")
    assert code == 0 and "note [deepep_token_cap]" in out and "of max_num_seqs 256 requests" in out


def test_no_false_alarm_on_a_kv_both_instance_or_a_nixl_consumer():
    for role in ("kv_both", "kv_consumer"):
        code, out = run(serve(L8, EAGLE3, "--max-model-len 2048", PD % role))
        assert code == 0 and "nixl" not in out.lower(), out


def test_a_producer_with_the_decode_sides_k_is_told_k_1_is_enough():
    code, out = run(serve(L8, EAGLE3, "--max-model-len 2048", PD % "kv_producer"))
    assert code == 0 and "note [nixl_producer_drafter]" in out and "num_speculative_tokens 1" in out


def test_a_missing_method_is_a_note_naming_what_vllm_infers_and_is_checked_as_that():
    code, out = run(serve(L8, {"model": HEAD3, "num_speculative_tokens": 3}, "--max-model-len 8192"))
    assert "note [missing_method]" in out and "infers 'eagle3'" in out
    assert code == 1 and "[head_context]" in out  # checked as eagle3: the head was trained on 2048 positions
    code, out = run(serve(L8, {"model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 3},
                          "--max-model-len 4096"))
    assert code == 0 and "infers 'draft_model'" in out
