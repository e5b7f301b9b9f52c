"""Put one scenario through the model: per-k speedups, best k, break-even α, the batches where it pays, the
batch -> k schedule to paste, checks, verdict.

Every speedup is taken at the concurrency each side can actually hold: the user's batch, or fewer requests when
memory holds fewer (the baseline's KV cache, or the pair's with the draft's weights and KV). The per-k table, the
chosen k, the verdict and the pasted flags all come from these numbers, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from advisor.advice import confidence
from advisor.advice.scenario import Scenario
from advisor.advice.schedule import SchedulePrice, decode_speedups, price_schedule, schedule
from advisor.advice.verdict import Check, binding, checks, decide, fastest
from advisor.model.acceptance.truncation import alpha_for_tokens_per_step
from advisor.model.cost import memory
from advisor.model.cost.speculative import RequestTimes, Setup, request_times
from advisor.model.uncertainty import cost_factors
from advisor.vllm.defaults import MAX_K, MAX_SCHEDULE_BATCH
from advisor.vllm.drafting import drafts_fixed_k

K_TABLE = MAX_K  # the per-k table runs k = 0..MAX_K: the k the advisor may choose are those --k accepts


@dataclass(frozen=True, slots=True)
class Advice:
    scenario: Scenario
    ks: np.ndarray  # 0..K
    tokens_per_step: np.ndarray  # per k, over out_len - 1 decode tokens (the last step cut short)
    tpot_speedup: np.ndarray  # per k, each side at the concurrency it holds
    e2e_speedup: np.ndarray  # per k, each side at the concurrency it holds
    throughput_speedup: np.ndarray  # per k, output tokens/s, each side at the concurrency it holds
    concurrency: np.ndarray  # per k: requests running at once, min(batch, what memory holds); [0] = baseline
    # (TPOT compares both sides at concurrency[k]; end to end and throughput each side at its own)
    best_k: int  # the evaluated k: the best one, or --k (0: speculation off, or the evaluated k does not fit)
    shown_k: int  # the k whose memory, concurrency and checks are shown: the evaluated k, or 1 when off
    e2e_range: tuple[float, float]  # e2e speedup at best k over the acceptance range (low α, high α)
    break_even_alpha: float | None  # decode break-even at this batch and context; None: never pays, or no decode
    paying_batches: list[tuple[int, int]]  # batch ranges (inclusive) where the best k's decode gains
    critical_batch: int | None  # end of the paying range from batch 1 (0: batch 1 loses; None: pays up to the limit)
    memory: memory.MemoryBudget  # at best k (or k = 1 when off, to show the cost)
    prefill_fraction: float  # of baseline request time
    schedule: list[tuple[int, int, int]]  # pasted num_speculative_tokens_per_batch_size ([] when not dynamic, or
    # when it does not pay for itself on the runner it meets: `schedule_price`)
    checks: list[Check]  # the talk's four checks, each with its numbers
    verdict: str  # enable | marginal | disable (`verdict.rule`)
    reasons: list[str]  # why, in numbers
    bands: confidence.Bands | None = None  # 80% intervals per k: the acceptance's range and the cost model's error
    break_even_range: tuple[float | None, float | None] = (None, None)  # break-even α at the cost model's 80% ends
    paying_range: tuple[list, list] = ([], [])  # paying_batches at the low and high ends of the 80% interval
    critical_range: tuple[int | None, int | None] = (0, 0)  # critical_batch of each of paying_range
    schedule_price: SchedulePrice | None = None  # the best-k-per-batch schedule against plain best_k; None: no k
    # varies with the batch (or speculation is off, or --k was given)
    baseline_times: RequestTimes | None = None  # one request without speculation, at the concurrency it holds
    speculative_times: RequestTimes | None = None  # ... with speculation at best_k, at the concurrency it holds
    binds: str = ""  # what memory or the scheduler does to the batch at shown_k, in words (`verdict.binding`)
    narrow: str = ""  # what would narrow shown_k's end-to-end interval most (`confidence.narrowing`)

    def at_best(self, values: np.ndarray) -> float:
        return float(values[self.best_k])

    def runs(self, k: int) -> bool:
        """Whether a request runs at k (k = 0: the target alone): where none does, k's speedups and bands are null."""
        return bool(self.concurrency[k] >= 1)

    @property
    def speculating(self) -> bool:
        """Whether the pasted command turns speculation on: the target fits and the verdict is not `disable`."""
        return self.best_k > 0 and self.verdict != "disable"


def candidates(s: Scenario, ks: np.ndarray) -> np.ndarray:
    """The k the advisor may choose: k ≥ 1, up to the scenario's limit, and within the measured positions when
    per-position rates were measured (n-gram runs often accept every draft they made, which would extrapolate to
    ever-longer k: nothing certain is known past the last position), and within the block a DFlash/DSpark head was
    trained on (`Setup.trained_k`)."""
    ok = ks > 0
    if s.k_limit is not None:
        ok &= ks <= s.k_limit
    if s.setup.trained_k is not None:
        ok &= ks <= s.setup.trained_k
    if s.acceptance.per_position is not None:
        ok &= ks <= len(s.acceptance.per_position)
    if s.acceptance.known_positions is not None:
        ok &= ks <= s.acceptance.known_positions
    return ok


def choose_k(e2e: np.ndarray, throughput: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """The k with the best end-to-end gain among the allowed ones that gain at all (the smallest among ties,
    `verdict.fastest`), preferring those that keep throughput (the draft's memory can cost concurrency); 0 where
    none gains. Broadcasts over leading axes."""
    gains = allowed & (e2e > 1.0)
    keeps = gains & (throughput >= 1.0)
    pool = np.where(keeps.any(axis=-1, keepdims=True), keeps, gains)
    return np.where(pool.any(axis=-1), fastest(np.where(pool, e2e, -np.inf)), 0)


def mean_waves(batch, conc) -> np.ndarray:
    """Mean request latency of a closed batch, in units of one request's time, when `conc` of its `batch` requests
    run at once: the first conc finish after one request time, the next conc after two, and so on (identical
    requests: continuous batching admits a new one as each finishes). 1 when the whole batch fits."""
    batch, conc = np.asarray(batch, dtype=float), np.maximum(np.asarray(conc, dtype=float), 1.0)
    full, rest = np.floor(batch / conc), np.mod(batch, conc)
    return (conc * full * (full + 1) / 2 + rest * (full + 1)) / batch


def times_at_concurrency(setup: Setup, E, ks, conc_base, conc_spec, prompt_len,
                         out_len) -> tuple[RequestTimes, RequestTimes]:
    """(baseline, speculative) request timings, the baseline running `conc_base` requests at once and speculation
    `conc_spec` (per k), each at least one. E may stack several acceptances on leading axes (the estimate and its
    range's ends): the step times do not depend on it, so they are computed once for all of them."""
    return (request_times(setup, 1.0, 0, np.maximum(conc_base, 1), prompt_len, out_len),
            request_times(setup, E, ks, np.maximum(conc_spec, 1), prompt_len, out_len))


def speedups(base: RequestTimes, spec: RequestTimes, batch, conc_base, conc_spec):
    """(TPOT, end-to-end, throughput) speedups of `times_at_concurrency`'s timings; see `at_concurrency`."""
    e2e = base.e2e_baseline * mean_waves(batch, conc_base) / (spec.e2e_spec * mean_waves(batch, conc_spec))
    with np.errstate(divide="ignore", invalid="ignore"):
        throughput = np.where(conc_base > 0, (conc_spec / spec.e2e_spec) / (conc_base / base.e2e_baseline), 0.0)
    return spec.tpot_baseline / spec.tpot_spec, e2e, throughput  # spec.tpot_baseline: a plain step at conc_spec


def at_concurrency(setup: Setup, E, ks, batch, conc_base, conc_spec, prompt_len, out_len):
    """(TPOT, end-to-end, throughput) speedups for a batch of `batch` requests, with the baseline running
    `conc_base` of them at once and speculation `conc_spec` (per k). TPOT compares equal concurrency: both sides
    at conc_spec, so it is the decode gain of drafting alone (at most k + 1 tokens per step). What the draft's
    memory does to concurrency shows where it belongs: end to end is the batch's mean latency, the requests that
    wait for a slot included (`mean_waves`); throughput is each side serving at the concurrency it holds. A side
    that holds none runs nothing (throughput 0)."""
    return speedups(*times_at_concurrency(setup, E, ks, conc_base, conc_spec, prompt_len, out_len), batch,
                    conc_base, conc_spec)


def break_even_alpha(setup: Setup, batch: int, context: float, ks: np.ndarray, decode_tokens: int,
                     scales=(1.0,)) -> list[float | None]:
    """Smallest α at which some k ≥ 1 decodes faster than no speculation, one per entry of `scales` (a factor on
    the predicted speedup: the cost model's error at an end of its interval; 1: as predicted). Speedup =
    E·t_decode/t_iter(k), and t_iter does not depend on α, so per k the break-even solves tokens per step (over the
    request's decode tokens) = t_iter/(scale·t_decode) exactly, all scales in one vectorised solve. None where no α
    pays, or when there is no decode (one output token)."""
    ks = ks[ks > 0].astype(float)
    if decode_tokens < 1 or ks.size == 0:
        return [None] * len(scales)
    ratio = setup.iteration_time(ks, batch, context) / setup.decode_step(batch, context)
    needed = ratio[None, :] / np.asarray(scales, dtype=float)[:, None]  # E that breaks even, per scale and k
    # NaN where not even α = 1 reaches it; α is the acceptance on the steps that draft (n-gram: that find a match)
    alphas = alpha_for_tokens_per_step(needed, ks[None, :], decode_tokens, setup.draft_share)
    return [None if np.isnan(row).all() else float(np.nanmin(row)) for row in alphas]


def paying_batches(setup: Setup, E: np.ndarray, context: float, ks: np.ndarray, limit: int,
                   scales=(1.0,)) -> list[list[tuple[int, int]]]:
    """The batch ranges 1..limit where the best of `ks` decodes faster than no speculation, one list per entry of
    `scales` (a factor on every speedup: an end of the 80% interval; 1: as predicted). Usually one range from
    batch 1 (verification turns compute-bound as the batch grows: SmartSpec), but an MoE target or long context
    can make the gain rise with batch (more experts touched per step anyway; KV reads dominate: MagicDec), so
    there can be a range that starts later, or two. Coarse grid, then each edge to the exact batch; the speedups
    do not depend on the scale, so each batch's are computed once for all scales."""
    if ks.size == 0:
        return [[] for _ in scales]
    grid = np.unique(np.round(np.geomspace(1, max(limit, 1), 400)))
    speed, fine = decode_speedups(setup, E, grid, context, ks), {}  # fine: grid interval -> (batches, speedups)
    found = []
    for scale in scales:
        pays = (scale * speed).max(axis=1) > 1.0
        edges = []  # the first batch of each change between pays and not
        for i in np.nonzero(pays[1:] != pays[:-1])[0]:
            if i not in fine:
                batches = np.arange(grid[i], grid[i + 1] + 1)
                fine[i] = batches, decode_speedups(setup, E, batches, context, ks)
            batches, between = fine[i]
            fine_pays = (scale * between).max(axis=1) > 1.0
            edges.append(int(batches[np.nonzero(fine_pays != pays[i])[0][0]]))
        bounds = [1, *edges, int(grid[-1]) + 1]
        first = bool(pays[0])
        found.append([(lo, hi - 1) for j, (lo, hi) in enumerate(zip(bounds, bounds[1:])) if first == (j % 2 == 0)])
    return found


def critical_batch(ranges: list[tuple[int, int]], limit: int) -> int | None:
    """The largest batch of the paying range that starts at batch 1: 0 when batch 1 does not gain, None when it
    still gains at `limit` (the most sequences that fit in memory: larger batches cannot run)."""
    if not ranges or ranges[0][0] > 1:
        return 0
    return None if ranges[0][1] >= limit else ranges[0][1]


def running(s: Scenario, ks: np.ndarray) -> tuple[list[memory.MemoryBudget], np.ndarray]:
    """Each k's memory budget, and the requests that run at once at each k ([0]: the baseline): min(batch, what
    the KV cache holds, vLLM's scheduler limits: max_num_seqs and the token budget). 0 where nothing fits."""
    budgets = [memory.budget_for(s.setup, s.hardware, int(k), prompt_len=s.prompt_len, out_len=s.out_len,
                                 gpu_memory_utilization=s.gpu_memory_utilization) for k in ks]
    conc = np.array([min(s.batch, b.max_concurrency_spec) for b in budgets], dtype=float)
    conc[0] = min(s.batch, budgets[0].max_concurrency_baseline)
    return budgets, np.minimum(conc, s.setup.max_running(ks))


def advise(s: Scenario) -> Advice:
    setup, acc = s.setup, s.acceptance
    ks = np.arange(0, max(K_TABLE, s.k or 0) + 1)
    E = s.tokens_per_step(ks)
    budgets, conc = running(s, ks)
    # the estimate and the acceptance range's ends in one pass: their step times are the same
    stacked = np.stack([E, *(s.tokens_per_step(ks, alpha) for alpha in (acc.low, acc.high))])
    base, spec = times_at_concurrency(setup, stacked, ks, conc[0], conc, s.prompt_len, s.out_len)
    # a k whose pair holds not one request does not run: no speedup to speak of
    (tpot, e2e, throughput), *ends = ([np.where(conc >= 1, x, 0.0) for x in at_alpha]
                                      for at_alpha in zip(*speedups(base, spec, s.batch, conc[0], conc)))
    allowed_ks = candidates(s, ks)
    choosable = ks[allowed_ks]
    allowed = allowed_ks & (conc >= 1)
    chosen = s.k if s.k is not None else int(choose_k(e2e, throughput, allowed))
    best_k = chosen if conc[chosen] >= 1 and conc[0] >= 1 else 0  # nothing runs at a k that does not fit, and
    # where the target alone does not, there is no speedup to be best at (issue 36 #3)
    shown_k = chosen or 1
    low_high = (float(ends[0][1][shown_k]), float(ends[1][1][shown_k]))
    at_estimate = RequestTimes(*(np.broadcast_to(getattr(spec, f.name), spec.tpot_spec.shape)[0]
                                 for f in fields(RequestTimes)))  # the speculative timings at the estimate
    b = confidence.bands(s, E, ks, conc, (tpot, e2e, throughput), *ends, spec=at_estimate)
    m = budgets[shown_k]
    # the most requests that can run at once: larger batches wait for a slot, so no batch beyond it runs
    limit = max(min(m.max_concurrency_spec, setup.target_cost.max_num_seqs), 1)
    evaluated = np.array([s.k]) if s.k is not None else choosable  # the k the ranges speak of
    at_once = int(max(conc[shown_k], 1))  # break-even where speculation runs, not at the batch asked for
    worse, better = (float(f) for f in cost_factors(b.sigma_cost[shown_k]))
    breakeven, *breakeven_ends = break_even_alpha(setup, at_once, s.context, choosable, s.decode_tokens,
                                                  (1.0, better, worse))
    point = b.tpot.point[shown_k]
    factors = (float(b.tpot.low[shown_k] / point), float(b.tpot.high[shown_k] / point)) if point > 0 else (1.0, 1.0)
    ranges, *paying_ends = (paying_batches(setup, E, s.context, evaluated, limit, (1.0, *factors))
                            if s.decode_tokens >= 1 else [[], [], []])
    if conc[shown_k] < 1 or conc[0] < 1:  # a side that does not fit: no break-even, no batch where it gains
        ranges, breakeven, breakeven_ends, paying_ends = [], None, [None, None], ([], [])
    prefill_fraction = float(base.prefill / base.e2e_baseline)
    narrow = confidence.narrowing(b.e2e, shown_k)
    verdict, reasons = decide(s, m, chosen, e2e, float(b.e2e.low[shown_k]), float(throughput[chosen]), conc,
                              allowed_ks, narrow)
    dynamic = s.k is None and verdict != "disable" and best_k > 0 and not drafts_fixed_k(setup.method)
    span = int(np.clip(limit, 1, MAX_SCHEDULE_BATCH))
    pasted = schedule(setup, E, s.context, ks[allowed], span, pin=(int(conc[best_k]), best_k)) if dynamic else []
    if len({r[2] for r in pasted}) < 2:
        pasted = []  # one k at every batch the server runs is a plain num_speculative_tokens (`vllm.speculative_dict`)
    price = price_schedule(setup, E, s.context, pasted, best_k, span) if pasted else None
    if price is not None and not price.pays:
        pasted = []  # one plain num_speculative_tokens serves as well (`advisor.advice.schedule`)
    return Advice(
        scenario=s, ks=ks, tokens_per_step=E, tpot_speedup=tpot, e2e_speedup=e2e, throughput_speedup=throughput,
        concurrency=conc, best_k=best_k, shown_k=shown_k, e2e_range=low_high, break_even_alpha=breakeven,
        paying_batches=ranges,
        critical_batch=critical_batch(ranges, limit), memory=m, prefill_fraction=prefill_fraction, schedule=pasted,
        checks=checks(s, m, breakeven, ranges, prefill_fraction, conc, shown_k, float(throughput[shown_k]), limit,
                      (float(at_estimate.draft_prefill[shown_k]),
                       float(at_estimate.decode_baseline[shown_k] - at_estimate.decode_spec[shown_k]))),
        verdict=verdict, reasons=reasons, bands=b, break_even_range=tuple(breakeven_ends),
        paying_range=tuple(paying_ends), critical_range=tuple(critical_batch(r, limit) for r in paying_ends),
        schedule_price=price, baseline_times=_times(s, E, conc, 0), speculative_times=_times(s, E, conc, best_k),
        binds=binding(s, conc, shown_k), narrow=narrow,
    )


def _times(s: Scenario, E: np.ndarray, conc: np.ndarray, k: int) -> RequestTimes:
    """Request timings at draft length k (0: the baseline), at the concurrency that side holds (at least one)."""
    return request_times(s.setup, E[k], k, max(conc[k], 1), s.prompt_len, s.out_len)
