"""The advisor's prediction of a `vllm bench` run's timings, from the cost model at the run's exact load.

  latency  B prompts decoded together: `speculative.request_times`, the shape that bench measures.
  serve    a replica under load, as `advisor.model.cost.capacity` models one: T the decode time per output token at
           B sequences decoding (a plain step, or an iteration / tokens per step), t_pf one prompt's prefill
           (target, plus the draft's with speculation), ρ = λ·t_pf the engine's share spent prefilling:
    open loop  (--request-rate r):  λ = r, B from λ(B) = B / ((O-1)·T(B) + B·t_pf);
               TPOT = T / (1 - ρ), TTFT = W_q + t_pf + chunks·T_step, W_q the M/D/1 wait (capacity.py).
    closed loop (C clients, --max-concurrency, the bench's default shape): each client sends its next request
               when the last one ends, so λ = C / e2e (Little's law), e2e = TTFT + (O-1)·TPOT. A request's decode
               is interrupted only by the other clients' prefills, a share s = (C-1)/C of ρ:
               TPOT = T(B) / (1 - s·ρ), TTFT = t_pf + s·chunks·T_step (its prefill shares steps with the others'
               decoding, when there are others), and B = λ·(O-1)·TPOT; solved by fixed-point iteration on B.
ITL is the time between streamed chunks: one step, so TPOT × tokens per step. Throughput is λ·O output tokens/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from advisor.errors import InputError
from advisor.model.acceptance import truncation
from advisor.model.acceptance.conventions import survival_per_position
from advisor.model.cost.costmodel import chunks, prefill_time
from advisor.model.cost.speculative import Setup, request_times
from calibration.from_bench.runs import BenchRun, Load

FIXED_POINT_ROUNDS = 60


@dataclass(frozen=True, slots=True)
class Predicted:
    """The same quantities `runs.Measured` holds, predicted (None where the bench does not measure them)."""

    e2e: float
    ttft: float | None = None
    tpot: float | None = None
    itl: float | None = None
    throughput: float | None = None
    request_rate: float | None = None
    decoding: float | None = None  # mean sequences decoding at once, B
    tokens_per_step: float = 1.0


def survival_of(run: BenchRun) -> np.ndarray:
    """[1, p_1 .. p_k]: the run's measured per-position acceptance as a survival curve ([1] without speculation)."""
    if run.counts is None:
        return np.ones(1)
    return survival_per_position(run.counts.rates(), run.k)


def predict(setup: Setup, run: BenchRun, survival: np.ndarray | None = None) -> Predicted:
    """The run's timings under `setup`'s costs at its own load and k, with its measured acceptance (or `survival`,
    e.g. an end of the acceptance interval)."""
    curve = survival_of(run) if survival is None else survival
    k = len(curve) - 1
    tps = float(truncation.tokens_per_step(curve, run.load.out_len - 1.0)) if k else 1.0
    if run.kind == "latency":
        times = request_times(setup, tps, k, run.load.concurrency, run.load.prompt_len, run.load.out_len)
        return Predicted(e2e=float(times.e2e_spec if k else times.e2e_baseline), tokens_per_step=tps)
    if run.load.request_rate is not None:
        return _open_loop(setup, k, tps, run.load)
    return _closed_loop(setup, k, tps, run.load)


def _iteration(setup: Setup, k: int, batch, context) -> np.ndarray:
    """Seconds of one engine step: a plain decode (k = 0) or a draft-and-verify iteration."""
    return setup.iteration_time(k, batch, context) if k else setup.decode_step(batch, context)


def _prefill(setup: Setup, k: int, prompt_len: float) -> float:
    """One prompt's prefill; with speculation the drafter's pass over it and its first proposal come with it."""
    target = float(prefill_time(setup.target, setup.target_cost, 1, prompt_len, setup.tp))
    return target + (float(setup.draft_prefill(1, prompt_len, k)) if k else 0.0)


def _closed_loop(setup: Setup, k: int, tps: float, load: Load) -> Predicted:
    clients, out = load.concurrency, load.out_len
    context, t_pf = load.prompt_len + out / 2.0, _prefill(setup, k, load.prompt_len)
    steps = float(chunks(setup.target_cost, 1, load.prompt_len))  # engine steps a prompt's prefill spans
    share = (clients - 1.0) / clients
    batch = clients
    for _ in range(FIXED_POINT_ROUNDS):
        step = float(_iteration(setup, k, max(batch, 1e-3), context))
        ttft = t_pf + share * steps * step
        decode = (out - 1.0) * step / tps  # a request's decode time if nothing interrupted it
        # λ·(TTFT + decode / (1 - a·λ)) = C with a = s·t_pf, i.e. the smaller root of
        # a·TTFT·λ² - (TTFT + decode + a·C)·λ + C (the larger one has 1 - a·λ < 0)
        a = share * t_pf
        b = ttft + decode + a * clients
        rate = clients / b if a == 0 else (b - math.sqrt(max(b * b - 4 * a * ttft * clients, 0.0))) / (2 * a * ttft)
        tpot = step / tps / (1.0 - a * rate)
        # B feeds back only through T(B), weakly (a step's time grows slowly with its batch): plain iteration
        batch, previous = rate * (out - 1.0) * tpot, batch
        if abs(batch - previous) < 1e-7 * clients:
            break
    return Predicted(e2e=ttft + (out - 1.0) * tpot, ttft=ttft, tpot=tpot, itl=tpot * tps, throughput=rate * out,
                     request_rate=rate, decoding=batch, tokens_per_step=tps)


def _open_loop(setup: Setup, k: int, tps: float, load: Load) -> Predicted:
    out, rate = load.out_len, load.request_rate
    context, t_pf = load.prompt_len + out / 2.0, _prefill(setup, k, load.prompt_len)
    top = max(load.concurrency or 1.0, 1.0)  # the bench caps requests in flight at --max-concurrency (or all)
    batches = np.linspace(1e-3, top, 4000)
    per_token = _iteration(setup, k, batches, context) / tps
    rates = np.maximum.accumulate(batches / ((out - 1.0) * per_token + batches * t_pf))  # for interp: never falls
    if rates[-1] <= rate:
        raise InputError(f"the model says this engine sustains at most {rates[-1]:.3g} requests/s at this shape, "
                         f"below the run's {rate:g}: no steady state to predict (the queue only grows)")
    batch = float(np.interp(rate, rates, batches))
    step = float(_iteration(setup, k, batch, context))
    rho = rate * t_pf
    tpot = step / tps / (1.0 - rho)
    ttft = rho * t_pf / (2.0 * (1.0 - rho)) + t_pf + float(chunks(setup.target_cost, 1, load.prompt_len)) * step
    return Predicted(e2e=ttft + (out - 1.0) * tpot, ttft=ttft, tpot=tpot, itl=tpot * tps, throughput=rate * out,
                     request_rate=rate, decoding=batch, tokens_per_step=tps)
