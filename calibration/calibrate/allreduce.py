"""Tensor parallelism's all-reduce, measured directly: the ladder of message sizes, timing it through the engine, and
the fit of `advisor.model.cost.costmodel.allreduce_time`'s two terms.

Why not fit them from step times with the rest: a step at TP = N pays 2·layers all-reduces, and for one model the
per-call latency × 2·layers is a constant per step, inseparable from `step_overhead`; the per-byte term is likewise
near-collinear with the per-token costs. So calibrate times vLLM's own all-reduce (the function the layers call, in
the workers the engine runs: calibration/engine/allreduce_worker.py) on tokens × hidden tensors from one token to
the largest step it times, and fits

    seconds per call = allreduce_latency + 2·(N-1)/N · bytes / link_bandwidth       (a ring all-reduce: each rank
    sends and receives 2·(N-1)/N of the message; Patarasuk & Yuan 2009)

by linear least squares on relative error (calls span three orders of magnitude of time). The step grid is then
fitted with these two held fixed, so its step model contains the all-reduces exactly as `recommend` prices them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import lsq_linear

from calibration.calibrate.bench import PLAN_CHUNK

REPEATS = 30  # samples per message size (each from a barrier on a CPU, a graph replay on a GPU); the median is kept
CALLS = 5  # back-to-back all-reduces per sample: their mean is one sample (a lone call's time is mostly skew)
MAX_LINK_BANDWIDTH = 1e15  # bytes/s: the fit's bound when the slope is lost in noise (1 PB/s, beyond any link)


@dataclass(frozen=True, slots=True)
class AllReduceFit:
    """The two terms of one all-reduce call and how well they describe the measured ladder."""

    allreduce_latency: float  # s per call
    link_bandwidth: float  # bytes/s, per rank, one direction (EngineCost.link_bandwidth)
    median_error: float  # median |predicted/measured - 1| over the ladder
    worst_error: float


def ladder(max_tokens: int = PLAN_CHUNK) -> list[int]:
    """Token counts to time: powers of two from 1 to `max_tokens` (the largest step calibrate times), and it."""
    sizes, n = [], 1
    while n < max_tokens:
        sizes.append(n)
        n *= 2
    return [*sizes, max_tokens]


def ring_bytes(message_bytes, tp: int) -> np.ndarray:
    """Bytes each rank sends in a ring all-reduce of `message_bytes` over `tp` ranks: 2·(tp-1)/tp of the message."""
    return 2.0 * (tp - 1) / tp * np.asarray(message_bytes, dtype=float)


def fit_allreduce(tp: int, message_bytes, seconds) -> AllReduceFit:
    """Least squares of seconds = latency + ring_bytes / link_bandwidth over the ladder (one time per size, s),
    each row divided by its measured time so that every size weighs alike; latency ≥ 0, bandwidth ≤ 1 PB/s."""
    if tp < 2:
        raise ValueError(f"fit_allreduce: an all-reduce needs at least 2 ranks, got tp={tp}")
    sent, seconds = ring_bytes(message_bytes, tp), np.asarray(seconds, dtype=float)
    if len(sent) != len(seconds) or len(sent) < 3 or np.any(~np.isfinite(seconds)) or np.any(seconds <= 0):
        raise ValueError("fit_allreduce: needs at least 3 message sizes with positive times")
    scale = sent.max()  # solve for seconds per `scale` bytes: both unknowns O(seconds), well conditioned
    design = np.column_stack([np.ones_like(sent), sent / scale]) / seconds[:, None]
    solved = lsq_linear(design, np.ones_like(seconds), bounds=([0.0, scale / MAX_LINK_BANDWIDTH], [np.inf, np.inf]))
    latency, per_scale = (float(v) for v in solved.x)
    errors = np.abs((latency + sent / scale * per_scale) / seconds - 1.0)
    return AllReduceFit(allreduce_latency=latency, link_bandwidth=float(scale / per_scale),
                        median_error=float(np.median(errors)), worst_error=float(errors.max()))


def measure(engine, max_tokens: int, repeats: int = REPEATS, calls: int = CALLS) -> dict:
    """The ladder timed through `engine` (tensor_parallel_size > 1): what a profile's `allreduce` block stores
    before its fit ({"tensor_parallel_size", "points": [{"tokens", "bytes", "samples"}]}), seconds per call."""
    tokens = ladder(max_tokens)
    per_token, samples, paths = engine.allreduce_times(tokens, repeats, calls)
    return {"tensor_parallel_size": engine.tensor_parallel_size,
            "points": [{"tokens": t, "bytes": t * per_token, "samples": s, "timed": p}
                       for t, s, p in zip(tokens, samples, paths)]}


def fit_block(block: dict, norm_s: float = 0.0) -> AllReduceFit:
    """The fit of a profile's `allreduce` block, from each size's median. A size timed "fused" ran FlashInfer's
    all-reduce + residual add + RMSNorm in one kernel, and the cost model charges that norm apart (a small kernel's
    floor, `norm_s`: advisor.model.gpu.kernels NORMS per layer), so it is taken out of those sizes before the fit."""
    points = block["points"]
    seconds = [float(np.median(p["samples"])) - (norm_s if p.get("timed") == "fused" else 0.0) for p in points]
    return fit_allreduce(int(block["tensor_parallel_size"]), [p["bytes"] for p in points],
                         [max(s, 1e-9) for s in seconds])
