"""Put one scenario through the model: per-k speedups, best k, break-even α, critical batch, checks, verdict."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.model import memory
from advisor.model.speculative import Setup, request_times, tpot_speedup
from advisor.model.truncation import alpha_for_tokens_per_step
from advisor.scenario import Scenario
from advisor.verdict import Check, checks, decide
from advisor.vllm import MAX_SCHEDULE_BATCH

K_TABLE = 16  # the per-k table runs k = 0..16


@dataclass(frozen=True, slots=True)
class Advice:
    scenario: Scenario
    ks: np.ndarray  # 0..K
    tokens_per_step: np.ndarray  # per k, over out_len - 1 decode tokens (the last step cut short)
    tpot_speedup: np.ndarray  # per k
    e2e_speedup: np.ndarray  # per k
    throughput_speedup: np.ndarray  # per k, with each side's concurrency capped by memory
    best_k: int
    e2e_range: tuple[float, float]  # e2e speedup at best k over the acceptance range (low α, high α)
    break_even_alpha: float | None  # decode break-even at this batch and context; None: never pays
    critical_batch: int | None  # largest batch at which decode still gains; None: beyond CRITICAL_BATCH_LIMIT
    memory: memory.MemoryBudget  # at best k (or k = 1 when off, to show the cost)
    prefill_fraction: float  # of baseline request time
    schedule: list[tuple[int, int, int]]  # vLLM num_speculative_tokens_per_batch_size: (start_bs, end_bs, k)
    checks: list[Check]  # the talk's four checks, each with its numbers
    verdict: str  # enable | marginal | disable (`verdict.rule`)
    reasons: list[str]  # why, in numbers

    def at_best(self, values: np.ndarray) -> float:
        return float(values[self.best_k])


def _best_k_per_batch(setup: Setup, E: np.ndarray, batches: np.ndarray, context: float, ks: np.ndarray):
    """Decode speedup on a (batch, k) grid given tokens per step E[k], and the best k per batch (0: none beats 1.0)."""
    speed = tpot_speedup(setup, E[None, :], ks[None, :], batches[:, None], context)
    best = np.where(speed.max(axis=1) > 1.0, speed.argmax(axis=1), 0)
    return speed, best


def break_even_alpha(setup: Setup, batch: int, context: float, ks: np.ndarray, decode_tokens: int) -> float | None:
    """Smallest α at which some k ≥ 1 decodes faster than no speculation. Speedup = E·t_decode/t_iter(k), and
    t_iter does not depend on α, so per k the break-even solves tokens per step (over the request's decode
    tokens) = t_iter/t_decode exactly."""
    ks = ks[ks > 0].astype(float)
    needed = setup.iteration_time(ks, batch, context) / setup.decode_step(batch, context)  # E that breaks even
    alphas = alpha_for_tokens_per_step(needed, ks, decode_tokens)  # NaN where not even α = 1 reaches it
    return None if np.isnan(alphas).all() else float(np.nanmin(alphas))


def critical_batch(setup: Setup, E: np.ndarray, context: float, ks: np.ndarray, limit: int) -> int | None:
    """Largest batch at which the best k still decodes faster; 0 if not even batch 1 gains; None if it still gains
    at `limit` (the most sequences that fit in memory: larger batches cannot run)."""
    batches = np.unique(np.round(np.geomspace(1, max(limit, 1), 400)))
    speed, _ = _best_k_per_batch(setup, E, batches, context, ks)
    losing = np.nonzero(speed.max(axis=1) <= 1.0)[0]
    if losing.size == 0:
        return None
    if losing[0] == 0:
        return 0
    lo, hi = int(batches[losing[0] - 1]), int(batches[losing[0]])
    fine = np.arange(lo, hi + 1, dtype=float)
    speed, _ = _best_k_per_batch(setup, E, fine, context, ks)
    return int(fine[np.nonzero(speed.max(axis=1) > 1.0)[0].max()])


def schedule(setup: Setup, E: np.ndarray, context: float, ks: np.ndarray, max_batch: int):
    """Best k for every batch size 1..max_batch, run-length encoded as vLLM's [start_bs, end_bs, k] list."""
    batches = np.arange(1, max_batch + 1, dtype=float)
    _, best = _best_k_per_batch(setup, E, batches, context, ks)
    runs, start = [], 1
    for b in range(2, max_batch + 2):
        if b == max_batch + 1 or best[b - 1] != best[b - 2]:
            runs.append((start, b - 1, int(best[start - 1])))
            start = b
    return runs


def advise(s: Scenario) -> Advice:
    setup, acc = s.setup, s.acceptance
    ks = np.arange(0, max(K_TABLE, s.k or 0) + 1)
    E = s.tokens_per_step(ks)
    times = request_times(setup, E, ks, s.batch, s.prompt_len, s.out_len)
    tpot = times.tpot_baseline / times.tpot_spec
    e2e = times.e2e_baseline / times.e2e_spec

    budgets = [memory.budget(setup.target, setup.draft, setup.method, int(k), s.hardware, prompt_len=s.prompt_len,
                             out_len=s.out_len, tp=setup.tp, gpu_memory_utilization=s.gpu_memory_utilization,
                             weight_dtype=setup.target_cost.weight_dtype) for k in ks]
    conc_base = min(s.batch, budgets[0].max_concurrency_baseline)
    conc_spec = np.array([min(s.batch, b.max_concurrency_spec) for b in budgets], dtype=float)
    # Throughput (output tokens/s) of a closed batch: each side runs as many of the B requests as fit at once.
    capped = request_times(setup, E, ks, np.maximum(conc_spec, 1), s.prompt_len, s.out_len)
    base_tps = conc_base * s.out_len / float(request_times(setup, 1.0, 0, max(conc_base, 1), s.prompt_len,
                                                           s.out_len).e2e_baseline)
    spec_tps = conc_spec * s.out_len / capped.e2e_spec
    throughput = spec_tps / base_tps if base_tps > 0 else np.zeros_like(spec_tps)

    holds_batch = np.array([b.max_concurrency_spec >= min(s.batch, max(conc_base, 1)) for b in budgets])
    if s.k is not None:
        best_k = s.k
    else:
        # A measured per-position vector says nothing certain past its last position (n-gram runs often accept
        # every draft they made, which would extrapolate to ever-longer k): choose only among measured k.
        measured = ks <= len(acc.per_position) if acc.per_position is not None else True
        candidates = np.where(holds_batch & (ks > 0) & measured, e2e, -np.inf)
        best_k = int(candidates.argmax()) if candidates.max() > 1.0 else 0

    shown_k = best_k or 1
    low_high = []
    for alpha in (acc.low, acc.high):
        E_a = s.tokens_per_step(shown_k, alpha)
        t = request_times(setup, E_a, shown_k, s.batch, s.prompt_len, s.out_len)
        low_high.append(float(t.e2e_baseline / t.e2e_spec))
    m = budgets[shown_k]
    fits_at_most = m.max_concurrency_spec
    schedule_max = int(np.clip(max(fits_at_most, s.batch), 1, MAX_SCHEDULE_BATCH))
    breakeven = break_even_alpha(setup, s.batch, s.context, ks, s.decode_tokens)
    critical = critical_batch(setup, E, s.context, ks, max(fits_at_most, s.batch))
    prefill_fraction = float(times.prefill / times.e2e_baseline)
    verdict, reasons = decide(m, best_k, e2e, min(low_high), float(throughput[best_k]))
    return Advice(
        scenario=s, ks=ks, tokens_per_step=E, tpot_speedup=tpot, e2e_speedup=e2e, throughput_speedup=throughput,
        best_k=best_k, e2e_range=(low_high[0], low_high[1]), break_even_alpha=breakeven, critical_batch=critical,
        memory=m, prefill_fraction=prefill_fraction, schedule=schedule(setup, E, s.context, ks, schedule_max),
        checks=checks(s, m, breakeven, critical, prefill_fraction), verdict=verdict, reasons=reasons,
    )


def times_at(a: Advice, k: int | None = None):
    """Request timings (speculative.RequestTimes) at draft length k (default: the best k)."""
    s = a.scenario
    k = a.best_k if k is None else k
    return request_times(s.setup, a.tokens_per_step[k], k, s.batch, s.prompt_len, s.out_len)
