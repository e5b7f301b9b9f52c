"""vLLM 0.32's defaults and limits, and this project's choices about vLLM (the longest k, the schedule's reach).

Every number vLLM decides comes from here or its neighbours in this folder (runner: how a step runs; command: the
flags to paste; parallel: DP and EP; methods: the speculative methods). Sources are in vllm/config/ of the installed
package.
"""

from __future__ import annotations

from advisor.errors import InputError
from advisor.vllm.drafting import lookahead
from advisor.vllm.methods import TEXT_LOOKUP

VLLM_SERIES = "0.32"  # the release every fact below is read from; pyproject's `vllm` extra pins it

# --- vLLM's defaults -------------------------------------------------------------------------------------------
BLOCK_TOKENS = 16  # KV cache block size (CacheConfig.block_size)
# The share of the GPU's memory an engine takes when --gpu-memory-utilization is not given
# (CacheConfig.gpu_memory_utilization; 0.9 before 0.32)
GPU_MEMORY_UTILIZATION = 0.92
# max_num_batched_tokens (the chunked-prefill token budget per step) and max_num_seqs (sequences per step) depend on
# the device: `batch_defaults` gives them by GPU class. These two are the offline `LLM` defaults of the GPUs below
# 70 GiB (A100, L40S, ...): what a profile written before the class defaults records, and a plan's fallback.
MAX_NUM_BATCHED_TOKENS = 8192
MAX_NUM_SEQS = 256
# prompt_lookup_min/max when neither is set (SpeculativeConfig.__post_init__); `recommend` pastes it explicitly, as
# `acceptance ngram` and `acceptance measure` measure at it: the pasted lookup is the one measured
NGRAM_LOOKUP_DEFAULT = (5, 5)

# RoPE types whose max_position_embeddings is already the scaled length, so vLLM does not multiply it by their
# `factor`; any other type's factor (linear, dynamic) lengthens the context vLLM accepts. Gemma-3's length is scaled
# already whatever its type. (vllm/config/model.py `_get_and_verify_max_len`)
ROPE_TYPES_PRESCALED = frozenset({"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"})


def derived_max_model_len(max_position_embeddings: int, rope: list[tuple[str, float]], model_type: str) -> int:
    """The longest --max-model-len vLLM accepts for a model, tokens: max_position_embeddings, times the factor of
    the last RoPE (`rope`: (rope_type, factor) each) whose type is not `ROPE_TYPES_PRESCALED`."""
    factor = 1.0
    if "gemma3" not in model_type:
        for rope_type, each in rope:
            if rope_type not in ROPE_TYPES_PRESCALED:
                factor = each
    return int(max_position_embeddings * factor)


# --- this project's choices about vLLM ---------------------------------------------------------------------------
# The longest draft evaluated, chosen or accepted (vLLM sets no bound). Any k beyond it adds at most E(α, ∞)/E(α, 16)
# tokens per step: 2% at α = 0.8, 7% at 0.85, 20% at 0.9, for a verification 17 tokens wide.
MAX_K = 16
MAX_SCHEDULE_BATCH = 1024  # the batch -> k schedule stops here: max_num_seqs rarely exceeds it
NGRAM_LOOKUP_VALIDATION = (2, 4)  # `validate`: the default 5/5 rarely matches the test pairs' short outputs


def batch_defaults(memory_gib: float, name: str, *, cpu: bool = False, ranks: int = 1,
                   server: bool = True) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) as vLLM sets them when the user gives neither, by device class
    (vllm/engine/arg_utils.py, `EngineArgs.get_batch_defaults`, applied by
    `_set_default_max_num_seqs_and_batched_tokens_args`): `vllm serve` (UsageContext.OPENAI_API_SERVER, `server`)
    or the offline `LLM` class. The device's total memory decides, in GiB (NVML's total; every shipped profile's
    memory_gib lands on the same side of 160 and 70 GiB as NVML's figure), and "a100" in its name keeps an 80 GB
    A100 in the small class (PR #17885: a larger token budget cut A100 throughput). On a CPU both scale with the
    ranks (world size)."""
    if cpu:
        return (2048 * ranks, 128 * ranks) if server else (4096 * ranks, 256 * ranks)
    if memory_gib >= 160:
        return 16384, 1024
    if memory_gib >= 70 and "a100" not in name.lower():
        return (8192, 1024) if server else (16384, 1024)
    return (2048, 256) if server else (8192, 256)


def check_k(k: int, flag: str = "--k", lowest: int = 1) -> None:
    """One line for a draft length outside lowest..MAX_K."""
    if not lowest <= k <= MAX_K:
        raise InputError(f"{flag} must be in {lowest}..{MAX_K}, got {k}")


def check_scheduler(max_num_seqs: int, max_num_batched_tokens: int, defaults_of: str = "") -> None:
    """One line where vLLM refuses to start: max_num_batched_tokens below max_num_seqs (vllm/config/scheduler.py
    `SchedulerConfig.verify_max_model_len`). `defaults_of` names the device whose default max_num_seqs it is."""
    if max_num_batched_tokens < max_num_seqs:
        default = f" (vLLM's default on {defaults_of})" if defaults_of else ""
        raise InputError(f"--max-num-batched-tokens {max_num_batched_tokens} is below max_num_seqs {max_num_seqs}"
                         f"{default}: vLLM refuses to start (max_num_batched_tokens must be >= max_num_seqs); raise it "
                         "or lower --max-num-seqs")


def lookahead_slots(method: str, k: int, *, anchor_sampled: bool = True) -> int:
    """KV slots each running sequence holds past its own tokens at draft length k: the k draft tokens the target
    verifies (scheduled with it: `Request.num_tokens_with_spec`), plus the slots where a drafter that keeps a KV
    cache writes past them (vllm/config/vllm.py `VllmConfig.num_lookahead_tokens`, given to `allocate_slots`: k for
    EAGLE and MTP heads, DSpark and draft models, k + 1 for DFlash, 0 for a text lookup: `drafting.lookahead`)."""
    if k == 0:
        return 0
    return k + lookahead(method, k, anchor_sampled=anchor_sampled, text_lookup=method in TEXT_LOOKUP)


# --- what vLLM refuses, overrides or drops around speculation (read by `specadvisor preflight`) ------------------
# Methods whose drafter rides on the target's hidden states (`SpeculativeConfig.use_eagle`): their prefix-cache hits
# lose the trailing block (v1/core/kv_cache_coordinator.py, the EAGLE last-block drop)
EAGLE_BLOCK_DROP_METHODS = frozenset({"eagle", "eagle3", "mtp", "dflash", "dspark"})
