"""`recommend --request-rate`: the concurrency a request rate puts on one GPU group, by the queueing `review` uses
(advisor.model.cost.capacity: Little's law over the plain decode step, prompts prefilled between steps, an M/D/1
prefill queue), and the answer there.

Where the prompts alone take the GPUs' whole time (ρ = λ·t_pf ≥ 1: the prefill share of `capacity.load_curve`),
the server is prefill-saturated: its queue is prompts, and a drafter only adds its own prefill to them. That is
said before any number, and the verdict is disable.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from advisor.advice.advise import advise
from advisor.advice.recommendation import Recommendation, from_advice
from advisor.advice.scenario import Scenario
from advisor.errors import InputError
from advisor.model.cost import capacity, memory
from advisor.model.cost.costmodel import prefill_time


def check_rate(rate: float) -> None:
    """One line for a --request-rate that is not a positive, finite number of requests per second."""
    if not rate > 0 or not math.isfinite(rate):
        raise InputError(f"--request-rate is requests per second: a positive number, got {rate}")


def saturation(s: Scenario, rate: float) -> str:
    """Why `rate` requests/s of the scenario's prompts saturate its GPUs with prefill alone; "" when they do not."""
    setup = s.setup
    prompt = float(prefill_time(setup.target, setup.target_cost, 1, s.prompt_len, setup.tp))
    busy = rate * prompt
    if busy < 1.0:
        return ""
    gpus = f"{setup.tp} GPUs" if setup.tp > 1 else "the GPU"
    return (f"prefill-saturated: {rate:g} requests/s of {s.prompt_len}-token prompts take {busy:.2f} s of prefill per "
            f"second on {gpus} (one prompt {prompt * 1e3:.0f} ms): the queue is prompts, which speculation cannot "
            f"shorten; serve them on at least {math.ceil(busy)} such groups (replicas, or a prefill pool: "
            "--disaggregated)")


def at_rate(s: Scenario, rate: float) -> Recommendation:
    """The recommendation at the concurrency `rate` requests/s holds on one GPU group, without speculation (the
    server as it runs today): prefill-saturated first where it is."""
    check_rate(rate)
    setup = s.setup
    held = memory.budget_for(setup, s.hardware, 0, prompt_len=s.prompt_len, out_len=s.out_len,
                             gpu_memory_utilization=s.gpu_memory_utilization).max_concurrency_baseline
    most = min(held, setup.target_cost.max_num_seqs)
    shape = capacity.Shape(float(s.prompt_len), float(s.prompt_len), float(s.out_len))
    saturated = saturation(s, rate)
    if most < 1:  # nothing fits: advise says why
        return from_advice(advise(s))
    curve = capacity.load_curve(setup, np.ones(1), shape, most, speculative=False)
    batch = max(math.ceil(capacity.concurrency_at(curve, rate) - 1e-9), 1)
    a = advise(replace(s, batch=batch))
    carried = float(curve.rate[-1])
    busy = float(np.interp(batch, curve.batch, curve.prefill_share))
    said = (f"at {rate:g} requests/s: {batch} running at once (Little's law, prefill {busy:.0%} of the GPUs' time, "
            "as `review`)")
    if saturated:
        a = replace(a, verdict="disable", reasons=[saturated, *a.reasons])
    elif rate > carried:
        said = (f"at {rate:g} requests/s: past the {carried:.2f} requests/s the GPUs complete at the {most} requests "
                "they hold: requests queue (the answer is at that full load)")
    r = from_advice(replace(a, reasons=[*a.reasons, said]))
    return replace(r, warnings=(saturated, *r.warnings)) if saturated else r
