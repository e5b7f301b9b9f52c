"""What this project knows about vLLM 0.32's data parallelism (DP), expert parallelism (EP) and their flags.

vLLM's facts for deployments beyond one tensor-parallel group: every DP/EP default, limit and choice `recommend`
uses at scale lives here. Sources: vllm/config/parallel.py (`ParallelConfig`), vllm/config/vllm.py,
vllm/engine/arg_utils.py, vllm/config/scheduler.py of the installed package; ../shared/reference/scale-notes.md §1
reads them.
"""

from __future__ import annotations

from advisor.errors import InputError

# --all2all-backend: vLLM 0.32's default (ParallelConfig.all2all_backend)
DEFAULT_ALL2ALL_BACKEND = "allgather_reducescatter"
# The backends the advisor prices per MoE layer (`advisor.model.parallel.scale.all2all_time`)
MODELLED_ALL2ALL_BACKENDS = ("allgather_reducescatter", "deepep_low_latency")
# vLLM 0.32's other choices, each with what is missing to model it (ParallelConfig's All2AllBackend literal)
UNMODELLED_ALL2ALL_BACKENDS = {
    "deepep_high_throughput": "vLLM runs it without CUDA graphs, for prefill (a decode pool uses "
                              "deepep_low_latency); no per-step decode latency of it is published",
    "deepep_v2": "DeepEP V2 publishes bandwidth at 8K tokens only, no decode-size latency",
    "mori_high_throughput": "an AMD backend; no latency of it is published",
    "mori_low_latency": "an AMD backend; no latency of it is published",
    "moonep": "no latency of it is published",
    "nixl_ep": "no latency of it is published",
    "flashinfer_nvlink_two_sided": "only one relative figure is published (4% lower TPOT than the default on one "
                                   "node)",
    "flashinfer_all2allv": "only one relative figure is published (4% lower TPOT than the default on one node)",
    "flashinfer_nvlink_one_sided": "no latency of it is published",
}
# Removed in 0.32: vLLM logs "The '%s' all2all backend has been removed. Falling back to 'allgather_reducescatter'"
REMOVED_ALL2ALL_BACKENDS = ("naive", "pplx")

# Backends whose MoE takes a batched (masked) layout per DP rank: with EP and DP > 1 vLLM then lowers the default
# max_num_batched_tokens to 256 (`use_batched_dp_moe`, SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP),
# the DeepEP low-latency buffer's tokens per rank (DeepEP recommends fewer than 256)
BATCHED_DP_BACKENDS = frozenset({"deepep_low_latency", "nixl_ep"})
BATCHED_DP_MAX_TOKENS = 256

# The all2all backends vLLM 0.32 microbatches with (--enable-dbo): any other fails an assert at config time, on every
# node ("Microbatching currently only supports the deepep_low_latency, deepep_high_throughput, and nixl_ep all2all
# backends": vllm/config/vllm.py `VllmConfig.__post_init__`, `parallel_config.use_ubatching`)
DBO_ALL2ALL_BACKENDS = ("deepep_low_latency", "deepep_high_throughput", "nixl_ep")
# --enable-dbo turns Model Runner V2 off unless VLLM_USE_V2_MODEL_RUNNER is set (vllm/config/vllm.py
# `_get_dbo_unsupported_features` returns "dual batch overlap", and `use_v2_model_runner` falls back to V1), whose
# proposer runs every draft pass piecewise (v1/spec_decode/llm_base_proposer.py), never as a full CUDA graph
DBO_DRAFTS_FULL_GRAPHS = False

# Dual batch overlap splits a uniform decode step into two microbatches only from this many tokens per rank
# (ParallelConfig.dbo_decode_token_threshold)
DBO_DECODE_TOKEN_THRESHOLD = 32
# Steps between the DP ranks' all-reduce of whether any still has requests (ParallelConfig.dp_sync_interval)
DP_SYNC_INTERVAL = 16
# DP token-count all-reduces per engine step (`coordinate_batch_across_dp`, vllm/v1/worker/dp_utils.py): one before
# the target pass; an EAGLE/MTP proposer adds one for its first draft pass and one for the k-1 others
# (vllm/v1/spec_decode/llm_base_proposer.py `_determine_batch_execution_and_padding`)
DP_SYNCS_TARGET = 1
DP_SYNCS_DRAFTER = 2


def schedule_kept(data_parallel_size: int) -> bool:
    """Whether vLLM keeps `num_speculative_tokens_per_batch_size` (a per-batch k schedule). With DP > 1 it drops it
    and drafts num_speculative_tokens at every batch (vllm/config/vllm.py
    `_maybe_disable_dynamic_sd_for_data_parallel`: the ranks' batch sizes differ, and a k per rank would desync
    their lock-stepped passes), so the advisor pastes one fixed k there."""
    return data_parallel_size == 1


def batched_dp_moe(backend: str, expert_parallel: bool, data_parallel_size: int) -> bool:
    """Whether vLLM caps a rank's tokens per step at BATCHED_DP_MAX_TOKENS by default (arg_utils.py: the backend is
    in BATCHED_DP_BACKENDS, with EP and DP > 1)."""
    return backend in BATCHED_DP_BACKENDS and expert_parallel and data_parallel_size > 1


def all2all_runs(data_parallel_size: int) -> bool:
    """Whether vLLM runs an all-to-all in the MoE layers (`ParallelConfig.use_all2all`): only at DP > 1 (sequence-
    parallel MoE also needs DP > 1; prefill context parallelism is not modelled). TP + EP at DP = 1 combines the
    experts' outputs in the tensor-parallel all-reduce the dense layers already pay."""
    return data_parallel_size > 1


def dbo_splits(data_parallel_size: int) -> bool:
    """Whether dual batch overlap ever splits a step: `coordinate_batch_across_dp` (vllm/v1/worker/dp_utils.py)
    returns before microbatching at data_parallel_size 1, so --enable-dbo there only turns Model Runner V2 off."""
    return data_parallel_size > 1


def limits(device_defaults: tuple[int, int], backend: str, expert_parallel: bool, data_parallel_size: int,
           max_num_batched_tokens: int | None = None, max_num_seqs: int | None = None) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) one DP rank runs with, as vLLM 0.32 sets what the command leaves
    unset (vllm/engine/arg_utils.py `_set_default_max_num_seqs_and_batched_tokens_args`): the token budget is
    BATCHED_DP_MAX_TOKENS under `batched_dp_moe`, else the device's default (`device_defaults`, from
    `defaults.batch_defaults`); an unset max_num_seqs is the device's, cut to the token budget (256 with DeepEP
    low latency, not the 1024 of a 141 GB GPU)."""
    tokens = max_num_batched_tokens
    if tokens is None:
        tokens = BATCHED_DP_MAX_TOKENS if batched_dp_moe(backend, expert_parallel, data_parallel_size) \
            else device_defaults[0]
    seqs = max_num_seqs if max_num_seqs is not None else min(device_defaults[1], tokens)
    return tokens, seqs


def requests_per_rank_cap(max_tokens_per_rank: int, k: int) -> int:
    """The most requests one DP rank runs per step at draft length k under a token cap: a verification step
    carries k+1 tokens per request, so ⌊cap / (k+1)⌋ (64 at the DeepEP low-latency default 256 and k = 3)."""
    return max_tokens_per_rank // (k + 1)


def check_all2all_backend(backend: str) -> None:
    """One line for a backend vLLM 0.32 removed or this project does not price."""
    if backend in REMOVED_ALL2ALL_BACKENDS:
        raise InputError(f"--all2all-backend {backend} was removed in vLLM 0.32 (it falls back to "
                         f"{DEFAULT_ALL2ALL_BACKEND}): pass {DEFAULT_ALL2ALL_BACKEND} or deepep_low_latency")
    if backend in UNMODELLED_ALL2ALL_BACKENDS:
        raise InputError(f"--all2all-backend {backend} is not modelled ({UNMODELLED_ALL2ALL_BACKENDS[backend]}): "
                         f"the advisor prices {' and '.join(MODELLED_ALL2ALL_BACKENDS)}")
    if backend not in MODELLED_ALL2ALL_BACKENDS:
        raise InputError(f"--all2all-backend {backend!r} is not one of vLLM 0.32's: "
                         f"{', '.join([*MODELLED_ALL2ALL_BACKENDS, *UNMODELLED_ALL2ALL_BACKENDS])}")


def check_dbo_backend(backend: str) -> None:
    """One line where vLLM 0.32 would fail its microbatching assert on every node (`DBO_ALL2ALL_BACKENDS`)."""
    if backend not in DBO_ALL2ALL_BACKENDS:
        modelled = [b for b in DBO_ALL2ALL_BACKENDS if b in MODELLED_ALL2ALL_BACKENDS]
        raise InputError(f"--enable-dbo with --all2all-backend {backend}: vLLM 0.32 refuses to start (microbatching "
                         f"runs only with {', '.join(DBO_ALL2ALL_BACKENDS)}); add --all2all-backend "
                         f"{modelled[0]}, or drop --enable-dbo")
