"""A one-point calibration: the server's measured time per output token against what the cost model predicts for
the same traffic, as one factor on every step time of this deployment.

One measured point fixes the scale of the step times, not their shape (how they grow with batch, context or the
tokens verified), so the factor multiplies every time the model computes: rates (bytes/s, FLOP/s) are divided by
it and fixed costs (s) multiplied. Step times are homogeneous of degree one in those (costmodel: sums of overheads
and p-norms of time terms), so every predicted time scales by exactly the factor and every speedup (a ratio of two
times) is unchanged: the anchor makes the predicted milliseconds this server's, and says how far the datasheet (or
calibration) was off. A shape needs more points: `specadvisor calibrate`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.speculative import Setup

# EngineCost fields in seconds (scaled by the factor) and in per-second rates (divided by it)
TIMES = ("step_overhead", "token_overhead", "seq_overhead", "multi_token_overhead", "allreduce_latency",
         "layer_floor_graph", "layer_floor_piecewise", "draft_pass_overhead", "spec_overhead", "spec_seq_overhead",
         "ngram_overhead", "ngram_seq_overhead", "host_step_overhead", "host_seq_overhead")
RATES = ("bandwidth", "flops", "kv_bandwidth", "link_bandwidth")


def scaled(cost: EngineCost, factor: float) -> EngineCost:
    """The same engine `factor` times slower (factor < 1: faster) at everything."""
    return replace(cost, **{f: getattr(cost, f) * factor for f in TIMES},
                   **{f: getattr(cost, f) / factor for f in RATES})


def anchored(setup: Setup, factor: float) -> Setup:
    """The setup with both models' costs scaled by `factor`; an expert --cost-ratio and the Setup's own
    bookkeeping overrides (s) scale with them."""
    return replace(setup, target_cost=scaled(setup.target_cost, factor),
                   draft_cost=None if setup.draft_cost is None else scaled(setup.draft_cost, factor),
                   spec_overhead=None if setup.spec_overhead is None else setup.spec_overhead * factor,
                   spec_seq_overhead=None if setup.spec_seq_overhead is None else setup.spec_seq_overhead * factor,
                   sync_penalty=None if setup.sync_penalty is None else setup.sync_penalty * factor)


@dataclass(frozen=True, slots=True)
class Anchor:
    predicted: float  # s per output token the cost model gives for the window's traffic at the server's k
    observed: float  # s per output token the server measured (mean over finished requests)
    observed_low: float  # 90% interval on that mean
    observed_high: float
    k: int  # draft length the server ran (0: speculation off)

    @property
    def factor(self) -> float:
        """Measured / predicted: > 1 means the server is slower than the model said."""
        return self.observed / self.predicted

    @property
    def factor_range(self) -> tuple[float, float]:
        return self.observed_low / self.predicted, self.observed_high / self.predicted


def predicted_tpot(setup: Setup, E: np.ndarray, k: int, contexts: np.ndarray, decode_tokens: np.ndarray,
                   weights: np.ndarray, levels: np.ndarray, shares: np.ndarray) -> float:
    """Model TPOT (s) averaged as the server's histogram averages it: per request (workload w at concurrency c,
    weight weights[w]·shares[c]) the decode time over its decode tokens, at draft length k. E: (workloads, k+1)."""
    c, ctx = levels[None, :], contexts[:, None]
    step = setup.iteration_time(k, c, ctx) if k else setup.decode_step(c, ctx)
    per_token = step / (E[:, k][:, None] if k else 1.0)
    w = weights[:, None] * shares[None, :] * (decode_tokens[:, None] > 0)
    return float((per_token * w).sum() / w.sum())
