"""Issue 48: `preflight` on twelve realistic `vllm serve` lines, by kind (6 it read right before, the false alarm on
a kv_both decode instance, the 5 refusals it missed, and a config without "method"): each gets its expected exit
code and the check that should (or should not) speak. Where vLLM refuses a line, tests/preflight/test_refusals.py
shows vLLM's own config code refusing it."""

import contextlib
import io
import json
from pathlib import Path

import pytest

from advisor.cli.app import main

L8, HEAD3 = "meta-llama/Llama-3.1-8B-Instruct", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
DSV3 = "deepseek-ai/DeepSeek-V3"
MTP2 = str(Path(__file__).parents[1] / "data" / "mtp2-model")
PD = "--kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"%s\"}'"


def line(model: str, config: dict | None, *flags: str) -> str:
    spec = ["--speculative-config", "'" + json.dumps(config) + "'"] if config else []
    return " ".join(["vllm", "serve", model, *flags, *spec])


EAGLE3 = {"method": "eagle3", "model": HEAD3, "num_speculative_tokens": 3}
MTP1 = {"method": "mtp", "num_speculative_tokens": 1}
WIDE_EP = "--data-parallel-size 16 --enable-expert-parallel --all2all-backend deepep_low_latency"

# kind -> (the line, exit code, the check that must speak or None, checks that must stay silent)
LINES = {
    "a clean EAGLE-3 line": (line(L8, EAGLE3, "--max-model-len 2048"), 0, None, ()),
    "an EAGLE-3 head served as eagle": (line(L8, {**EAGLE3, "method": "eagle"}, "--max-model-len 2048"), 1,
                                        "eagle3_as_eagle", ()),
    "a head past its trained context": (line(L8, EAGLE3, "--max-model-len 8192"), 1, "head_context", ()),
    "a per-batch schedule under DP": (line(L8, {**EAGLE3, "num_speculative_tokens_per_batch_size": [[1, 4, 3],
                                                                                                    [5, 1024, 1]]},
                                           "--max-model-len 2048 --data-parallel-size 2"), 1,
                                      "schedule_data_parallel", ()),
    "wide EP with MTP under vLLM's own DeepEP limits (docs/scale.md's paste)": (
        line(DSV3, MTP1, WIDE_EP, "--enable-dbo --max-model-len 4000"), 0, "deepep_token_cap", ("dbo_backend",)),
    "a decode pool over NIXL": (line(DSV3, MTP1, WIDE_EP, "--max-num-seqs 128 --max-model-len 4000",
                                     PD % "kv_consumer"), 0, None, ("nixl_producer_drafter",)),
    "a kv_both instance that speculates (the false alarm)": (line(L8, EAGLE3, "--max-model-len 2048", PD % "kv_both"),
                                                             0, None, ("nixl_producer_drafter",)),
    "an unknown key in --speculative-config": (line(L8, {**EAGLE3, "draft_tp": 1}, "--max-model-len 2048"), 1,
                                               "speculative_keys", ()),
    "mtp on a model without MTP layers": (line(L8, MTP1, "--max-model-len 2048"), 1, "mtp_without_layers", ()),
    "k not divisible by n_predict": (line(MTP2, {**MTP1, "num_speculative_tokens": 3}), 1, "k_divisible", ()),
    "draft_tensor_parallel_size neither 1 nor the TP": (
        line(L8, {"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 3,
                  "draft_tensor_parallel_size": 2}, "-tp 4 --max-model-len 4096"), 1, "draft_tensor_parallel", ()),
    "DBO on the default all2all backend": (line(DSV3, MTP1, "--data-parallel-size 16 --enable-expert-parallel "
                                                "--enable-dbo --max-model-len 4000"), 1, "dbo_backend", ()),
}


def run(command: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["preflight", command, "--gpu", "h200"])
    return code, out.getvalue().replace("\n  ", " ")


def test_twelve_kinds():
    assert len(LINES) == 12


@pytest.mark.parametrize("kind", sorted(LINES))
def test_each_line_gets_its_answer(kind):
    command, expected, speaks, silent = LINES[kind]
    code, out = run(command)
    assert code == expected, (kind, out)
    if speaks is not None:
        assert f"[{speaks}]" in out, (kind, out)
    for name in silent:
        assert f"[{name}]" not in out, (kind, out)
