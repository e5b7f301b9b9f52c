"""What to paste into vLLM: the `vllm serve` command, the speculative config, and the batch-size -> k schedule."""

from __future__ import annotations

import json
import shlex

from advisor.model.speculative import Setup

NGRAM_LOOKUP = (2, 5)  # prompt_lookup_min / _max: short enough to match often, long enough to be specific


def speculative_config(setup: Setup, k: int, schedule: list[tuple[int, int, int]] | None = None) -> dict:
    """The dict vLLM takes as --speculative-config (or LLM(speculative_config=...)); keys per
    vllm/config/speculative.py. `method` is always explicit: vLLM's inference from the model name is fragile."""
    if k == 0:
        return {}
    method = setup.method
    config: dict = {"method": method}
    if method == "eagle" and setup.draft is not None and setup.draft.lm_head_vocab is not None:
        config["method"] = "eagle3"  # a head with its own reduced vocabulary is an EAGLE-3 head
    if method != "ngram" and setup.draft is not None:
        config["model"] = setup.draft.hf_id
    config["num_speculative_tokens"] = max([k] + [run[2] for run in schedule or []])
    if method == "ngram":
        config["prompt_lookup_min"], config["prompt_lookup_max"] = NGRAM_LOOKUP
    if method == "draft_model" and setup.tp > 1:
        config["draft_tensor_parallel_size"] = setup.tp  # vLLM requires draft TP == target TP for draft_model
    if schedule and len({run[2] for run in schedule}) > 1:
        config["num_speculative_tokens_per_batch_size"] = [list(run) for run in schedule]
    return config


def serve_command(setup: Setup, k: int, *, max_model_len: int, gpu_memory_utilization: float,
                  schedule: list[tuple[int, int, int]] | None = None) -> str:
    parts = ["vllm", "serve", setup.target.hf_id]
    if setup.tp > 1:
        parts += ["--tensor-parallel-size", str(setup.tp)]
    parts += ["--max-model-len", str(max_model_len), "--gpu-memory-utilization", f"{gpu_memory_utilization:g}"]
    config = speculative_config(setup, k, schedule)
    if config:
        parts += ["--speculative-config", json.dumps(config, separators=(",", ":"))]
    return " ".join(shlex.quote(p) for p in parts)
