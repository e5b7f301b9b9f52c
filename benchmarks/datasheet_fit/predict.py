"""The model of a row: the repo's own model (`Setup`, `request_times`, `prefill_time`) on an EngineCost of the
parameters being fitted, turned into the request-level quantity a source publishes (tok/s at batch 1 or at a steady
concurrency, end-to-end latency)."""

from __future__ import annotations

from advisor.model.acceptance.conventions import Acceptance, expected_tokens
from advisor.model.acceptance.priors import MTP_REUSE_DECAY
from advisor.model.cost.costmodel import draft_pass, forward_pass, prefill_time
from advisor.model.cost.speculative import Setup, request_times

from .params import engine_cost
from .sources import DSV3, E8, H100, MI300X, MI300X_MTP, T8


def setup(v, target=T8, hw=H100, method="eagle", draft=E8, tp=1, dtype="bf16", draft_dtype="bf16", seqs=None,
          overlap=False):
    """`overlap` None: the engine as vLLM 0.32 runs it (async scheduling, full-graph EAGLE and MTP drafting);
    the older engines measured (vLLM's V1 model runner) scheduled synchronously and drafted piecewise."""
    return Setup(target, engine_cost(hw, v, dtype, seqs), method, draft,
                 engine_cost(hw, v, draft_dtype, seqs) if draft is not None else None, tp, async_scheduling=overlap,
                 drafter_graphs=None if overlap is None else False)

def tok_per_s_batch1(setup: Setup, prompt: int, out: int, k: int = 0, al: float = 1.0) -> float:
    """Output tokens/s of one request at a time: out / (prefill (+ the drafter's) + (out - 1) decode tokens at `al`
    tokens per step), at the mean context (`request_times`)."""
    t = request_times(setup, al, k, 1, prompt, out)
    return out / float(t.e2e_baseline if k == 0 else t.e2e_spec)


def tok_per_s_concurrency(setup: Setup, batch: int, prompt: int, out: int, k: int = 0, al: float = 1.0) -> float:
    """Total output tokens/s at a steady concurrency B with continuous batching, by Little's law as
    advisor/model/cost/capacity.py: B·out / ((out - 1)·T(B) / AL + B·t_admit), t_admit the marginal cost of one
    prompt prefilled inside running steps (its pass beyond a one-token pass; no extra step overhead)."""
    c = setup.target_cost
    ctx = prompt + out / 2.0
    t = setup.decode_step(batch, ctx) if k == 0 else setup.iteration_time(k, batch, ctx) / al
    admit = (prefill_time(setup.target, c, 1, prompt, setup.tp) - c.step_overhead - c.seq_overhead
             - forward_pass(setup.target, c, 1, 1, 0, sampled=1, graph=False, tp=setup.tp))
    if k:
        admit = (admit + setup.draft_prefill(1, prompt, 1)
                 - draft_pass(setup.draft, setup.draft_cost, 1, 1, prompt, setup.tp))
    return float(batch * out / ((out - 1) * t + batch * admit))


def alpha_from_rate(rate: float, k: int) -> float:
    """vLLM's acceptance rate (E - 1)/k -> the i.i.d. per-token α (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if (float(expected_tokens(mid, k)) - 1) / k < rate else (lo, mid)
    return (lo + hi) / 2



def mi300x_latency(v: dict, batch: int, k: int = 0, tokens: float = 1.0) -> float:
    """S8's mean end-to-end latency per request, ms: random 1024/1024 at a steady concurrency (Little's law,
    `tok_per_s_concurrency`), DeepSeek-V3 fp8 on 8×MI300X, its MTP layer drafting k tokens at `tokens` per step.
    SGLang's engine there is priced as vLLM's V1 runner: synchronous, its draft passes piecewise (SGLang's own graph
    capture of draft passes is not in this project's reference to check)."""
    s = Setup(DSV3, engine_cost(MI300X, v, "fp8"), "mtp", DSV3.mtp_draft(), engine_cost(MI300X, v, "fp8"), 8,
              async_scheduling=False, drafter_graphs=False)
    return batch * 1024 / tok_per_s_concurrency(s, batch, 1024, 1024, k, tokens) * 1e3


def mi300x_curve(v: dict) -> tuple[float, list[tuple[int, float, float]]]:
    """(the AL at k = 2 that reproduces S8's concurrency-1 speedup, [(concurrency, published, predicted speedup)])."""
    base1, spec1 = MI300X_MTP[0][1], MI300X_MTP[0][2]
    lo, hi = 1.0, 3.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mi300x_latency(v, 1) / mi300x_latency(v, 1, 2, mid) < base1 / spec1 else (lo, mid)
    al = (lo + hi) / 2
    return al, [(b, base / spec, mi300x_latency(v, b) / mi300x_latency(v, b, 2, al)) for b, base, spec in MI300X_MTP]


def mtp_tokens(k: int, first: float = 0.9) -> float:
    """Mean acceptance length of one reused MTP layer at draft length k: `first` at position 1 (SGLang PR #3582:
    DeepSeek-V3 AL ~1.9 at k = 1), later positions priced by `priors.MTP_REUSE_DECAY` (fitted on §6)."""
    return float(Acceptance(first, first, first, "§6", known_positions=1,
                            beyond_decay=MTP_REUSE_DECAY).expected_tokens(k))


