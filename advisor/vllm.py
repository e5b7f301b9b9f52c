"""Everything this project knows about vLLM (0.32): its defaults and limits, and the flags to paste into it.

Every number vLLM decides, and every `speculative_config` this project builds (the one `recommend` pastes, the ones
`acceptance measure` and `validate` run), comes from here. Sources are in vllm/config/ of the installed package.
"""

from __future__ import annotations

import json
import shlex

from advisor.errors import InputError

# --- vLLM's defaults -------------------------------------------------------------------------------------------
BLOCK_TOKENS = 16  # KV cache block size (CacheConfig.block_size)
MAX_NUM_BATCHED_TOKENS = 8192  # chunked-prefill token budget per step (SchedulerConfig): prompts prefill in chunks
MAX_NUM_SEQS = 256  # sequences per step (SchedulerConfig.max_num_seqs); sizes the sampler in the profiling run
NGRAM_LOOKUP_DEFAULT = (5, 5)  # prompt_lookup_min/max when neither is set (SpeculativeConfig.__post_init__)

# --- this project's choices about vLLM ---------------------------------------------------------------------------
MAX_K = 32  # the longest draft evaluated or accepted (vLLM sets no bound; past ~32 no α < 1 gains anything)
MAX_SCHEDULE_BATCH = 1024  # the batch -> k schedule stops here: max_num_seqs rarely exceeds it
NGRAM_LOOKUP_PASTED = (2, 5)  # pasted by `recommend`: short enough to match often, long enough to be specific
NGRAM_LOOKUP_VALIDATION = (2, 4)  # `validate`: the default 5/5 rarely matches the test pairs' short outputs


def check_k(k: int, flag: str = "--k", lowest: int = 1) -> None:
    """One line for a draft length outside lowest..MAX_K."""
    if not lowest <= k <= MAX_K:
        raise InputError(f"{flag} must be in {lowest}..{MAX_K}, got {k}")


def lookahead_slots(method: str, k: int) -> int:
    """KV slots each running sequence reserves for its drafts: k, and k + 1 for draft_model, whose proposer
    writes the bonus token's KV too (`max_num_new_slots_for_drafting`)."""
    if k == 0:
        return 0
    return k + 1 if method == "draft_model" else k


def speculative_dict(method: str, k: int, *, model: str | None = None,
                     lookup: tuple[int, int] = NGRAM_LOOKUP_PASTED, draft_tp: int = 1,
                     schedule: list[tuple[int, int, int]] | None = None) -> dict:
    """The dict vLLM takes as --speculative-config (or LLM(speculative_config=...)); keys per
    vllm/config/speculative.py. `method` is always explicit: vLLM's inference from the model name is fragile."""
    config: dict = {"method": method}
    if model is not None:
        config["model"] = model
    config["num_speculative_tokens"] = max([k] + [run[2] for run in schedule or []])
    if method == "ngram":
        config["prompt_lookup_min"], config["prompt_lookup_max"] = lookup
    if method == "draft_model" and draft_tp > 1:
        config["draft_tensor_parallel_size"] = draft_tp  # vLLM requires draft TP == target TP for draft_model
    if schedule and len({run[2] for run in schedule}) > 1:
        config["num_speculative_tokens_per_batch_size"] = [list(run) for run in schedule]
    return config


def speculative_config(setup, k: int, schedule: list[tuple[int, int, int]] | None = None) -> dict:
    """What `recommend` pastes for a `speculative.Setup` at draft length k ({} at k = 0: speculation off). The model
    imports this module's facts, so the Setup is read by its attributes, not imported."""
    if k == 0:
        return {}
    method = setup.method
    if method == "eagle" and setup.draft is not None and setup.draft.lm_head_vocab is not None:
        method = "eagle3"  # a head with its own reduced vocabulary is an EAGLE-3 head
    model = setup.draft.hf_id if setup.method != "ngram" and setup.draft is not None else None
    return speculative_dict(method, k, model=model, draft_tp=setup.tp, schedule=schedule)


def serve_command(setup, k: int, *, max_model_len: int, gpu_memory_utilization: float,
                  schedule: list[tuple[int, int, int]] | None = None) -> str:
    parts = ["vllm", "serve", setup.target.hf_id]
    if setup.tp > 1:
        parts += ["--tensor-parallel-size", str(setup.tp)]
    parts += ["--max-model-len", str(max_model_len), "--gpu-memory-utilization", f"{gpu_memory_utilization:g}"]
    config = speculative_config(setup, k, schedule)
    if config:
        parts += ["--speculative-config", json.dumps(config, separators=(",", ":"))]
    return " ".join(shlex.quote(p) for p in parts)
