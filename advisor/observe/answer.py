"""The advice for an observed traffic mix: the best draft length per batch size (vLLM's
`num_speculative_tokens_per_batch_size`), and what it gains weighted by the traffic the server really got.

Workloads: every pair of a prompt bucket and an output bucket, weighted by the product of their shares (vLLM's
length histograms are marginals), pairs under MIN_WEIGHT dropped. Concurrency: the share of the window's gauge
samples at each number of running requests. Per batch size b the schedule's k maximises the mix's decode speed:
Σ_w ω_w·t_decode(b) / Σ_w ω_w·t_iter(k, b)/E_w(k), ω_w = weight × decode tokens (its share of the decode time).
The gains (TPOT, end to end, throughput: `advise.at_concurrency`, each side at the observed concurrency) are then
averaged over workloads × concurrency levels, weighted by workload share × time share; idle samples are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from advisor.advice.advise import K_TABLE, at_concurrency, candidates
from advisor.advice.scenario import Scenario
from advisor.advice.verdict import rule
from advisor.model.acceptance.truncation import tokens_per_step
from advisor.observe.anchor import Anchor, anchored, predicted_tpot
from advisor.observe.traffic import Traffic
from advisor.vllm.command import speculative_config
from advisor.vllm.defaults import MAX_SCHEDULE_BATCH

MIN_WEIGHT = 0.005  # prompt × output pairs rarer than this are dropped (their weight goes to the rest)
# The server's k counts as right when it gains within this of the best: a smaller difference is below what one
# acceptance estimate and one anchored point can tell apart.
CLOSE = 0.02
CURVE_KS = (1, 2, 3, 4)  # draft lengths drawn per batch beside the schedule


@dataclass(frozen=True, slots=True)
class Mix:
    prompt: np.ndarray  # tokens per workload
    output: np.ndarray
    weight: np.ndarray  # shares, summing to 1
    levels: np.ndarray  # running requests (≥ 1) seen in the window
    shares: np.ndarray  # share of the busy samples at each level, summing to 1
    idle_share: float  # share of the samples with nothing running

    @property
    def context(self) -> np.ndarray:
        """Mean tokens cached during a workload's decode."""
        return self.prompt + self.output / 2.0


def mix_of(t: Traffic) -> Mix:
    p, o = np.meshgrid(np.maximum(np.rint(t.prompt.values), 1), np.maximum(np.rint(t.output.values), 1), indexing="ij")
    w = np.outer(t.prompt.share(), t.output.share())
    keep = w >= MIN_WEIGHT
    levels = np.array([c for c, _ in t.concurrency], dtype=float)
    shares = np.array([s for _, s in t.concurrency])
    busy = levels >= 1
    if not busy.any():  # every sample idle (a short window between requests): Little's law's mean instead
        levels, shares, busy = np.array([max(round(t.little_concurrency), 1)], float), np.array([1.0]), np.array([True])
    idle = float(shares[~busy].sum()) if (~busy).any() else 0.0
    return Mix(p[keep], o[keep], w[keep] / w[keep].sum(), levels[busy], shares[busy] / shares[busy].sum(), idle)


@dataclass(frozen=True, slots=True)
class Gains:
    """Traffic-weighted speedups (> 1: faster with speculation) of one way of serving, and where it costs."""

    tpot: float
    e2e: float
    throughput: float
    cost_share: float  # share of the busy window at concurrency levels where its end-to-end speedup is below 1
    per_level: np.ndarray  # (levels, 3): TPOT, e2e, throughput speedups at each observed level, mix-weighted


@dataclass(frozen=True, slots=True)
class Answer:
    traffic: Traffic
    scenario: Scenario  # the pair, GPU and acceptance evaluated (its lengths: the traffic's means)
    mix: Mix
    anchor: Anchor
    schedule: list  # [(first batch, last batch, k)], vLLM's num_speculative_tokens_per_batch_size
    k_per_level: np.ndarray  # the schedule's k at each observed level
    scheduled: Gains  # serving with the schedule
    scheduled_low: Gains  # ... at the low end of the acceptance range
    fixed_k: int  # the best single k for this traffic
    fixed: Gains
    current: Gains | None  # the k the server runs now (speculation on), else None
    verdict: str  # enable | marginal | disable (verdict.rule on the scheduled gains)
    speculative_config: dict  # to paste ({} when the verdict is disable)
    curve_batches: np.ndarray  # 1..n for the picture
    curve_gain: np.ndarray  # (n, 1 + len(CURVE_KS)): the mix's decode speedup per batch, with the schedule and
    # at each of CURVE_KS


def _tokens(s: Scenario, mix: Mix, ks: np.ndarray, alpha=None) -> np.ndarray:
    """Tokens per step, (workloads, k): each workload's own output length truncates its last step."""
    curve = s.acceptance.survival(ks, alpha)
    return np.stack([tokens_per_step(curve, max(o - 1, 0)) for o in mix.output])


def decode_gain(setup, E: np.ndarray, ks: np.ndarray, batches: np.ndarray, mix: Mix) -> np.ndarray:
    """The mix's decode speedup, (batches, k): plain decode time over speculative, each workload weighted by its
    share of decode tokens."""
    b, ctx = batches[None, :, None], mix.context[:, None, None]
    w = (mix.weight * np.maximum(mix.output - 1, 0))[:, None, None]
    base = (w * setup.decode_step(b, ctx)).sum(axis=0)[:, 0]
    spec = (w * setup.iteration_time(ks[None, None, :], b, ctx) / E[:, None, :]).sum(axis=0)
    return base[:, None] / spec


def best_per_batch(gain: np.ndarray, ks: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Per batch, the k of the largest speedup among `allowed`, 0 where none beats 1."""
    masked = np.where(allowed[None, :], gain, -np.inf)
    best = masked.argmax(axis=1)
    return np.where(masked.max(axis=1) > 1.0, ks[best], 0)


def runs(best: np.ndarray) -> list[tuple[int, int, int]]:
    """Run-length encoding of k per batch size 1..n as vLLM's [(start, end, k)]."""
    out, start = [], 1
    for b in range(2, len(best) + 2):
        if b == len(best) + 1 or best[b - 1] != best[b - 2]:
            out.append((start, b - 1, int(best[start - 1])))
            start = b
    return out


def speedups(s: Scenario, mix: Mix, E: np.ndarray) -> np.ndarray:
    """(levels, workloads, 3, k): TPOT, end-to-end and throughput speedups of each workload at each observed level,
    both sides running that many requests (`advise.at_concurrency`)."""
    ks = np.arange(E.shape[1])
    return np.array([[at_concurrency(s.setup, E[w], ks, c, c, np.full(len(ks), c), p, o)
                      for w, (p, o) in enumerate(zip(mix.prompt, mix.output))] for c in mix.levels])


def gains(mix: Mix, table: np.ndarray, k_at: np.ndarray) -> Gains:
    """Speedups of serving the mix with k_at[i] at level i (0: plain decoding), weighted over workloads × levels."""
    per = np.array([mix.weight @ table[i, :, :, k] if k else np.ones(3) for i, k in enumerate(k_at)])
    mean = mix.shares @ per
    return Gains(*map(float, mean), float(mix.shares[per[:, 1] < 1.0].sum()), per)


def answer(t: Traffic, s: Scenario) -> Answer:
    """The advice for traffic `t` on the pair of scenario `s` (whose acceptance is measured when the server
    speculates: `s.acceptance` from the window's counters)."""
    mix = mix_of(t)
    current_k = t.counts.k if t.counts is not None else 0
    ks = np.arange(0, max(K_TABLE, current_k) + 1)
    E = _tokens(s, mix, ks)
    mean, low, high = t.tpot_interval()
    predicted = predicted_tpot(s.setup, E, current_k, mix.context, mix.output - 1, mix.weight, mix.levels, mix.shares)
    anchor = Anchor(predicted, mean, low, high, current_k)
    s = _anchored(s, anchor)
    allowed = candidates(s, ks)
    top = int(np.clip(s.setup.target_cost.max_num_seqs, 1, MAX_SCHEDULE_BATCH))
    batches = np.arange(1, top + 1, dtype=float)
    gain = decode_gain(s.setup, E, ks, batches, mix)
    best = best_per_batch(gain, ks, allowed)
    level_k = best[np.minimum(mix.levels.astype(int), top) - 1]
    table = speedups(s, mix, E)
    every = np.ones(len(mix.levels), dtype=int)
    scheduled = gains(mix, table, level_k)
    scheduled_low = gains(mix, speedups(s, mix, _tokens(s, mix, ks, s.acceptance.low)), level_k)
    fixed_e2e = [gains(mix, table, k * every).e2e if allowed[k] else -np.inf for k in ks]
    fixed_k = int(np.argmax(fixed_e2e)) if max(fixed_e2e) > 1.0 else 0
    fixed = gains(mix, table, fixed_k * every)
    current = gains(mix, table, current_k * every) if current_k else None
    schedule = runs(best)
    speculates = max(k for *_, k in schedule) > 0
    verdict = str(rule(scheduled.e2e, scheduled_low.e2e, scheduled.throughput)) if speculates else "disable"
    config = speculative_config(s.setup, max(k for *_, k in schedule), schedule) if verdict != "disable" else {}
    shown = np.arange(1, int(min(max(mix.levels.max() * 2, 16), top)) + 1)
    curve = np.stack([gain[shown - 1, best[shown - 1]]] + [gain[shown - 1, k] for k in CURVE_KS if k < len(ks)],
                     axis=1)
    return Answer(t, s, mix, anchor, schedule, level_k, scheduled, scheduled_low, fixed_k, fixed, current, verdict,
                  config, shown, curve)


def _anchored(s: Scenario, anchor: Anchor) -> Scenario:
    return replace(s, setup=anchored(s.setup, anchor.factor),
                   cost_source=f"{s.cost_source}, scaled x{anchor.factor:.3g} to the server's measured TPOT")


def current_is_right(a: Answer) -> bool:
    """Whether the k the server runs gains end to end within CLOSE of the best way to serve this traffic."""
    return a.current is not None and a.current.e2e >= (1.0 - CLOSE) * max(a.scheduled.e2e, a.fixed.e2e)
