"""The model swept over one or two inputs: the numbers behind `specadvisor plot` and the notebook.

Pure functions of a Scenario returning numpy arrays (no drawing, no I/O), so tests can check them against
`advise()` point by point. Speedups are baseline time / speculative time: above 1.0 speculation pays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.advise import K_TABLE, Advice
from advisor.model import memory
from advisor.model.acceptance import survival
from advisor.model.speculative import request_times, tpot_speedup, tpot_speedup_alpha
from advisor.model.truncation import tokens_per_step
from advisor.scenario import Scenario
from advisor.verdict import rule
from advisor.vllm import lookahead_slots

PLOT_KS = np.arange(1, 9)  # the draft lengths drawn as curves: vLLM users rarely go past 8
# Go/no-go map classes, in the order of the map's colour scale.
NO_FIT, DISABLE, MARGINAL, ENABLE = 0, 1, 2, 3
CLASS_NAMES = ("does not fit", "disable", "marginal", "enable")


@dataclass(frozen=True, slots=True)
class AlphaSweep:
    alphas: np.ndarray  # (A,) per-token acceptance probability
    ks: np.ndarray  # (K,) draft lengths
    tpot: np.ndarray  # (K, A) decode speedup per k
    e2e_best: np.ndarray  # (A,) end-to-end speedup at the advised k (prefill and draft prefill included)
    best_k: int  # the advised k (0: off; the e2e curve then shows k = 1)


def alpha_sweep(a: Advice, alphas: np.ndarray | None = None, ks: np.ndarray = PLOT_KS) -> AlphaSweep:
    s = a.scenario
    alphas = np.linspace(0.0, 1.0, 201) if alphas is None else np.asarray(alphas, dtype=float)
    tpot = tpot_speedup_alpha(s.setup, alphas[None, :], ks[:, None], s.batch, s.context, s.decode_tokens)
    k = a.best_k or 1
    t = request_times(s.setup, tokens_per_step(survival(alphas, k), s.decode_tokens), k, s.batch, s.prompt_len,
                      s.out_len)
    return AlphaSweep(alphas, ks, tpot, t.e2e_baseline / t.e2e_spec, a.best_k)


@dataclass(frozen=True, slots=True)
class BatchSweep:
    batches: np.ndarray  # (N,) concurrent sequences
    ks: np.ndarray  # (K,)
    tpot: np.ndarray  # (K, N) decode speedup per k
    envelope: np.ndarray  # (N,) best decode speedup over k = 1..K_TABLE (1.0 where none gains)
    best_k: np.ndarray  # (N,) the k that reaches it (0: off)
    fits_baseline: int  # most sequences that fit in memory without speculation
    fits_spec: int  # ... with speculation at the advised k (or k = 1)


def batch_sweep(a: Advice, ks: np.ndarray = PLOT_KS, max_batch: int | None = None) -> BatchSweep:
    s = a.scenario
    top = max_batch or int(np.clip(2 * max(a.memory.max_concurrency_baseline, s.batch, 8), 16, 1024))
    batches = np.unique(np.round(np.geomspace(1, top, 240)))
    tpot = tpot_speedup(s.setup, s.tokens_per_step(ks)[:, None], ks[:, None], batches[None, :], s.context)
    all_ks = np.arange(1, K_TABLE + 1)
    every = tpot_speedup(s.setup, s.tokens_per_step(all_ks)[:, None], all_ks[:, None], batches[None, :], s.context)
    gains = every.max(axis=0) > 1.0
    return BatchSweep(batches, ks, tpot, np.where(gains, every.max(axis=0), 1.0),
                      np.where(gains, all_ks[every.argmax(axis=0)], 0),
                      a.memory.max_concurrency_baseline, a.memory.max_concurrency_spec)


@dataclass(frozen=True, slots=True)
class LengthMap:
    prompt_lens: np.ndarray  # (P,) tokens
    out_lens: np.ndarray  # (O,) tokens
    e2e: np.ndarray  # (O, P) end-to-end speedup at the best k that fits (1.0 where none gains)
    best_k: np.ndarray  # (O, P) 0 where speculation should stay off
    verdict: np.ndarray  # (O, P) NO_FIT | DISABLE | MARGINAL | ENABLE, by `verdict.rule`
    vram_blocked: np.ndarray  # (O, P) the target fits, but with the draft no k holds the batch in memory


def _holding_ks(s: Scenario, prompt_len: int, out_len: int, ks: np.ndarray) -> tuple[bool, np.ndarray]:
    """Does the target serve one request at all, and at which k does the speculative pair hold the batch?"""
    def fits(k: int) -> memory.MemoryBudget:
        return memory.budget(s.setup.target, s.setup.draft, s.setup.method, int(k), s.hardware,
                             prompt_len=prompt_len, out_len=out_len, tp=s.setup.tp,
                             gpu_memory_utilization=s.gpu_memory_utilization,
                             weight_dtype=s.setup.target_cost.weight_dtype)
    longest = fits(ks.max())
    if longest.max_concurrency_spec >= s.batch:  # more lookahead only costs memory: the longest k is the worst
        return longest.fits, np.ones(ks.shape, dtype=bool)
    return longest.fits, np.array([fits(k).max_concurrency_spec >= s.batch for k in ks])


def length_map(s: Scenario, prompt_lens: np.ndarray | None = None, out_lens: np.ndarray | None = None) -> LengthMap:
    """The go/no-go verdict over prompt x output length by `verdict.rule`: the best k maximises end-to-end speedup
    among the k whose memory holds the batch, and the rule judges it at the point and the low end of α."""
    acc = s.acceptance
    P = np.unique(np.round(np.geomspace(32, 32768, 46))) if prompt_lens is None else np.asarray(prompt_lens, float)
    O = np.unique(np.round(np.geomspace(16, 8192, 40))) if out_lens is None else np.asarray(out_lens, float)
    ks = np.arange(1, K_TABLE + 1)
    grid = dict(batch=s.batch, prompt_len=P[None, :, None], out_len=O[:, None, None])
    decode_tokens = O[:, None, None] - 1.0
    point = request_times(s.setup, tokens_per_step(acc.survival(ks), decode_tokens), ks, **grid)
    low_curve = acc.survival(ks) if acc.per_position is not None else survival(acc.low, ks)
    low = request_times(s.setup, tokens_per_step(low_curve, decode_tokens), ks, **grid)
    e2e, e2e_low = point.e2e_baseline / point.e2e_spec, low.e2e_baseline / low.e2e_spec  # (O, P, K)
    fits = np.zeros(e2e.shape[:2], dtype=bool)
    holds = np.zeros(e2e.shape, dtype=bool)
    for i, o in enumerate(O):
        for j, p in enumerate(P):
            fits[i, j], holds[i, j] = _holding_ks(s, int(p), int(o), ks)
    candidates = np.where(holds, e2e, -np.inf)
    k_idx = candidates.argmax(axis=2)
    best = np.take_along_axis(candidates, k_idx[..., None], axis=2)[..., 0]
    best_low = np.take_along_axis(e2e_low, k_idx[..., None], axis=2)[..., 0]
    on = best > 1.0
    # The map does not size throughput per point: it is taken as not falling (`advise` checks it for one point).
    codes = {"disable": DISABLE, "marginal": MARGINAL, "enable": ENABLE}
    decided = np.vectorize(codes.__getitem__, otypes=[int])(rule(best, best_low, np.inf))
    verdict = np.where(~fits, NO_FIT, decided)
    return LengthMap(P, O, np.where(on, best, 1.0), np.where(on, ks[k_idx], 0), verdict, fits & ~holds.any(axis=2))


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
    k = a.best_k or 1
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
