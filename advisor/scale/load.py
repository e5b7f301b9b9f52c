"""The answer at scale for a request rate (--request-rate) and, under PD, with its prefill pool: what `recommend`
prints beyond one GPU group (`answer`).

A rate sets the concurrency as `review` does (advisor.model.cost.capacity, Little's law): a DP rank offered
λ_r = rate / dp requests/s runs B requests at once where λ(B) = B / ((O - 1)·T(B) + B·t_pf) reaches λ_r, T(B) its
plain decode step at B requests (the lock-stepped, expert-parallel step of `advise.iteration`), t_pf one prompt's
prefill on the rank (0 under PD: the prefill pool's). Where the prompts alone take a rank's whole time
(ρ = λ_r·t_pf ≥ 1) the instance is prefill-saturated: its queue is prompts, which speculation cannot shorten, and
that is said before any number.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from advisor.advice.rate import check_rate
from advisor.advice.scenario import Scenario
from advisor.model.parallel.deployment import Deployment
from advisor.scale.advise import ScaleAdvice, advise_scale, iteration, priced_setup, shape_of
from advisor.scale.pools import Load, prefill_pool

PROBE_BATCH = 10 ** 6  # requests per rank asked of a probe: whatever bounds them (memory, caps) then binds


def answer(s: Scenario, d: Deployment, request_rate: float | None = None) -> ScaleAdvice:
    """advise_scale at the scenario's batch, or at the concurrency `request_rate` puts on the instance; under PD
    with the prefill pool that rate (or the decode pool's own completion rate) needs."""
    load = None
    if request_rate is not None:
        load = at_rate(s, d, request_rate)
        s = replace(s, batch=load.batch)
    a = advise_scale(s, d)
    if load is not None and load.prefill_busy >= 1.0:  # a queue of prompts: no k shortens it
        a = replace(a, verdict="disable", best_k=0)
    pool = None
    if d.disaggregated:
        rate, source = (request_rate, "--request-rate") if request_rate is not None else \
            (completion_rate(a), "the decode pool's completion rate at its batch")
        pool = prefill_pool(s, s.setup, d, a.best_k, rate, source)
    return replace(a, load=load, prefill_pool=pool)


def completion_rate(a: ScaleAdvice) -> float:
    """Requests/s the instance completes at its batch and pasted k: its decode tokens per second over each
    request's out_len - 1 decode tokens (the first token is the prefill's)."""
    row = a.row(a.best_k)
    if not row.padded_requests:
        return 0.0
    return row.decode_tokens_per_gpu * a.deployment.gpus / max(a.scenario.out_len - 1, 1)


def at_rate(s: Scenario, d: Deployment, rate: float) -> Load:
    """The concurrency `rate` requests/s puts on the instance without speculation, or why it cannot carry it."""
    check_rate(rate)
    per_rank = rate / d.data_parallel_size
    probe = advise_scale(replace(s, batch=PROBE_BATCH * d.data_parallel_size), d)
    prefill = 0.0 if d.disaggregated else probe.prefill_s
    busy = per_rank * prefill
    if busy >= 1.0:
        return Load(rate=rate, prefill_busy=busy, batch=s.batch, saturated=(
            f"prefill-saturated: {rate:g} requests/s of {s.prompt_len}-token prompts take {busy:.2f} s of prefill per "
            f"second on each of the {d.data_parallel_size} DP rank(s) (one prompt {prefill * 1e3:.0f} ms): the queue "
            "is prompts, which speculation cannot shorten; prefill on other GPUs (--disaggregated: a prefill pool) or "
            f"add ranks (at least {math.ceil(rate * prefill)} for this rate)"))
    most = int(probe.row(0).requests_per_rank)
    if most < 1:  # nothing fits: advise_scale says why
        return Load(rate=rate, prefill_busy=busy, batch=s.batch, saturated="")
    setup, _, _ = priced_setup(s, d)
    batches = np.arange(1, most + 1, dtype=float)
    step = iteration(setup, shape_of(d, s), 0, batches, s.context)
    carried = batches / (max(s.out_len - 1, 1) * step + batches * prefill)
    reached = np.nonzero(carried >= per_rank)[0]
    if reached.size == 0:
        return Load(rate=rate, prefill_busy=busy, batch=most * d.data_parallel_size, saturated=(
            f"decode-saturated: {rate:g} requests/s is past the {float(carried[-1]) * d.data_parallel_size:.2f} "
            f"requests/s the instance completes at the most requests its ranks hold ({most} each, "
            f"{probe.row(0).bound_by}): requests queue; add GPUs"))
    return Load(rate=rate, prefill_busy=busy, batch=int(batches[reached[0]]) * d.data_parallel_size, saturated="")
