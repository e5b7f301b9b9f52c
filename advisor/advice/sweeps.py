"""The model swept over one or two inputs: the numbers behind `specadvisor plot` and the notebook.

Pure functions of a Scenario returning numpy arrays (no drawing, no I/O), so tests can check them against
`advise()` point by point. Speedups are baseline time / speculative time: above 1.0 speculation pays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.advice import confidence
from advisor.advice.advise import K_TABLE, Advice, at_concurrency, candidates, choose_k
from advisor.advice.scenario import Scenario
from advisor.advice.verdict import fastest, rule
from advisor.model.acceptance.conventions import survival, with_match_share
from advisor.model.acceptance.truncation import tokens_per_step
from advisor.model.cost import memory
from advisor.model.cost.speculative import request_times, tpot_speedup, tpot_speedup_alpha
from advisor.model.uncertainty import band
from advisor.vllm.defaults import lookahead_slots

PLOT_KS = np.arange(1, 9)  # the draft lengths drawn as curves: vLLM users rarely go past 8
# Go/no-go map classes, in the order of the map's colour scale.
NO_FIT, DISABLE, MARGINAL, ENABLE = 0, 1, 2, 3
CLASS_NAMES = ("does not fit", "disable", "marginal", "enable")


@dataclass(frozen=True, slots=True)
class AlphaSweep:
    alphas: np.ndarray  # (A,) per-token acceptance probability
    ks: np.ndarray  # (K,) draft lengths
    tpot: np.ndarray  # (K, A) decode speedup per k
    e2e_best: np.ndarray  # (A,) end-to-end speedup at shown_k (prefill and draft prefill included)
    shown_k: int  # the k of the report's row (`Advice.shown_k`: the asked or advised k; 1 when off)
    tpot_band: tuple[np.ndarray, np.ndarray] | None  # (A,) low and high of shown_k's TPOT curve: the cost model's 80%
    # interval; None where shown_k does not fit (as the report's interval)
    e2e_band: tuple[np.ndarray, np.ndarray] | None  # (A,) ... of the end-to-end curve (α is the axis: the cost's alone)


def alpha_sweep(a: Advice, alphas: np.ndarray | None = None, ks: np.ndarray = PLOT_KS) -> AlphaSweep:
    s = a.scenario
    alphas = np.linspace(0.0, 1.0, 201) if alphas is None else np.asarray(alphas, dtype=float)
    tpot = tpot_speedup_alpha(s.setup, alphas[None, :], ks[:, None], s.batch, s.context, s.decode_tokens)
    k = a.shown_k
    curve = with_match_share(survival(alphas, k), s.acceptance.match_share)
    t = request_times(s.setup, tokens_per_step(curve, s.decode_tokens), k, s.batch, s.prompt_len, s.out_len)
    e2e = t.e2e_baseline / t.e2e_spec
    tpot_k = tpot_speedup_alpha(s.setup, alphas, k, s.batch, s.context, s.decode_tokens)
    bands = [(b.low, b.high) if a.runs(k) else None for b in
             (band(curve, curve, curve, sigma[k]) for curve, sigma in
              ((tpot_k, a.bands.sigma_cost), (e2e, a.bands.e2e.sigma_cost)))]
    return AlphaSweep(alphas, ks, tpot, e2e, k, *bands)


@dataclass(frozen=True, slots=True)
class BatchSweep:
    batches: np.ndarray  # (N,) concurrent sequences
    ks: np.ndarray  # (K,)
    tpot: np.ndarray  # (K, N) decode speedup per k
    envelope: np.ndarray  # (N,) best decode speedup over k = 1..K_TABLE (1.0 where none gains)
    best_k: np.ndarray  # (N,) the k that reaches it (0: off)
    fits_baseline: int  # most sequences that fit in memory without speculation
    fits_spec: int  # ... with speculation at the advised k (or k = 1)
    envelope_band: tuple[np.ndarray, np.ndarray]  # (N,) the envelope's 80% interval: acceptance range and cost


def batch_sweep(a: Advice, ks: np.ndarray = PLOT_KS, max_batch: int | None = None) -> BatchSweep:
    s = a.scenario
    top = max_batch or int(np.clip(2 * max(a.memory.max_concurrency_baseline, s.batch, 8), 16, 1024))
    batches = np.unique(np.round(np.geomspace(1, top, 240)))
    tpot = tpot_speedup(s.setup, s.tokens_per_step(ks)[:, None], ks[:, None], batches[None, :], s.context)
    all_ks = np.arange(1, K_TABLE + 1)
    every = tpot_speedup(s.setup, s.tokens_per_step(all_ks)[:, None], all_ks[:, None], batches[None, :], s.context)
    gains = every.max(axis=0) > 1.0
    best = fastest(every, axis=0)
    pick = lambda x: np.take_along_axis(x, best[None, :], axis=0)[0]  # noqa: E731
    ends = [pick(tpot_speedup(s.setup, s.tokens_per_step(all_ks, alpha)[:, None], all_ks[:, None],
                              batches[None, :], s.context)) for alpha in (s.acceptance.low, s.acceptance.high)]
    sigma, _ = confidence.cost_sigmas(s.cost_error, s.setup, s.tokens_per_step(all_ks)[:, None], all_ks[:, None],
                                      batches[None, :], s.prompt_len, s.out_len)
    b = band(pick(every), *ends, pick(np.broadcast_to(sigma, every.shape)))
    return BatchSweep(batches, ks, tpot, np.where(gains, every.max(axis=0), 1.0),
                      np.where(gains, all_ks[best], 0),
                      a.memory.max_concurrency_baseline, a.memory.max_concurrency_spec,
                      (np.where(gains, b.low, 1.0), np.where(gains, b.high, 1.0)))


@dataclass(frozen=True, slots=True)
class LengthMap:
    prompt_lens: np.ndarray  # (P,) tokens
    out_lens: np.ndarray  # (O,) tokens
    e2e: np.ndarray  # (O, P) end-to-end speedup at the best k that fits (1.0 where none gains)
    best_k: np.ndarray  # (O, P) 0 where speculation should stay off
    verdict: np.ndarray  # (O, P) NO_FIT | DISABLE | MARGINAL | ENABLE, by `verdict.rule`
    vram_blocked: np.ndarray  # (O, P) the target fits, but with the draft no k runs as many requests at once


def _concurrency(s: Scenario, prompt_len: int, out_len: int, ks: np.ndarray) -> np.ndarray:
    """Requests each side runs at once at this shape, per k (index 0: the baseline), as `advise` counts them."""
    budgets = [memory.budget_for(s.setup, s.hardware, int(k), prompt_len=prompt_len, out_len=out_len,
                                 gpu_memory_utilization=s.gpu_memory_utilization) for k in ks]
    return np.array([min(s.batch, b.max_concurrency_baseline if k == 0 else b.max_concurrency_spec)
                     for k, b in zip(ks, budgets)], dtype=float)


def length_map(s: Scenario, prompt_lens: np.ndarray | None = None, out_lens: np.ndarray | None = None) -> LengthMap:
    """The go/no-go verdict over prompt x output length, decided at every point as `advise` decides one: each side
    at the concurrency it holds, the k chosen by `advise.choose_k` (or --k), judged by `verdict.rule` at the point
    and the low end of its 80% interval (`confidence`)."""
    acc = s.acceptance
    P = np.unique(np.round(np.geomspace(32, 32768, 46))) if prompt_lens is None else np.asarray(prompt_lens, float)
    O = np.unique(np.round(np.geomspace(16, 8192, 40))) if out_lens is None else np.asarray(out_lens, float)
    ks = np.arange(0, max(K_TABLE, s.k or 0) + 1)
    conc = np.array([[_concurrency(s, int(p), int(o), ks) for p in P] for o in O])  # (O, P, K)
    lengths = dict(prompt_len=P[None, :, None], out_len=O[:, None, None])
    decode_tokens = O[:, None, None] - 1.0
    E, E_low, E_high = (tokens_per_step(acc.survival(ks, alpha), decode_tokens) for alpha in (None, acc.low, acc.high))
    _, e2e, throughput = at_concurrency(s.setup, E, ks, s.batch, conc[..., :1], conc, **lengths)
    e2e_low, e2e_high = (at_concurrency(s.setup, Ex, ks, s.batch, conc[..., :1], conc, **lengths)[1]
                         for Ex in (E_low, E_high))
    _, sigma = confidence.cost_sigmas(s.cost_error, s.setup, E, ks, conc, **lengths)
    allowed = candidates(s, ks) & (conc >= 1)
    best = np.full(conc.shape[:2], s.k) if s.k is not None else choose_k(e2e, throughput, allowed)
    at = lambda values: np.take_along_axis(values, best[..., None], axis=2)[..., 0]  # noqa: E731
    low = band(at(e2e), at(e2e_low), at(e2e_high), at(sigma)).low  # the 80% interval's low end, as `advise`'s
    decided = rule(at(e2e), low, at(throughput), s.ceiling)
    codes = np.vectorize({"disable": DISABLE, "marginal": MARGINAL, "enable": ENABLE}.__getitem__, otypes=[int])
    fits = conc[..., 0] >= 1
    off = (best == 0) | (at(conc) < 1)
    verdict = np.where(~fits, NO_FIT, np.where(off, DISABLE, codes(decided)))
    on = verdict >= MARGINAL
    blocked = fits & ~(conc[..., 1:] >= conc[..., :1]).any(axis=2)
    return LengthMap(P, O, np.where(on, at(e2e), 1.0), np.where(on, best, 0), verdict, blocked)


@dataclass(frozen=True, slots=True)
class MemorySplit:
    """One GPU's memory, GB, split the way vLLM spends it, for one side (baseline or speculative)."""

    label: str
    parts: dict[str, float]  # segment name -> GB, in drawing order; they add up to the GPU's memory
    max_concurrency: int  # sequences of this length the KV cache holds
    overflow: float  # GB of KV the batch needs beyond the budget (0 when it fits); the KV parts then show the
    # share that fits, scaled down in proportion


SEGMENTS = ("target weights", "draft weights", "activations + runtime", "target KV", "draft KV", "lookahead slots",
            "free KV (headroom)", "outside vLLM")


def memory_split(a: Advice) -> tuple[MemorySplit, MemorySplit]:
    """Baseline and speculative budgets at the scenario's batch (per GPU; `advise` sized both at the best k)."""
    s, m = a.scenario, a.memory
    k = a.shown_k
    gb = 1e-9
    total = s.hardware.memory_bytes
    seqs = s.batch
    out = []
    for spec in (False, True):
        kv_target = seqs * m.tokens_per_sequence * m.kv_per_token_baseline
        kv_draft = seqs * m.tokens_per_sequence * (m.kv_per_token_spec - m.kv_per_token_baseline) if spec else 0.0
        slots = seqs * lookahead_slots(s.setup.method, k) * m.kv_per_token_spec if spec else 0.0
        budget = m.kv_budget_spec if spec else m.kv_budget_baseline
        used = kv_target + kv_draft + slots
        fit = min(budget / used, 1.0) if used > 0 else 1.0
        parts = dict(zip(SEGMENTS, (m.target_weights, m.draft_weights if spec else 0.0, m.reserve, kv_target * fit,
                                    kv_draft * fit, slots * fit, max(budget - used, 0.0), total - m.usable)))
        label = f"with speculation (k={k})" if spec else "without speculation"
        out.append(MemorySplit(label, {name: v * gb for name, v in parts.items()},
                               m.max_concurrency_spec if spec else m.max_concurrency_baseline,
                               max(used - budget, 0.0) * gb))
    return out[0], out[1]
