"""The per-batch schedule priced on the runner it meets (vLLM #49548: ~14% at one stream): the V1 runner's forced
PIECEWISE steps, Model Runner V2's graph captures per k, and a plain num_speculative_tokens where it does not pay."""

from dataclasses import replace

import numpy as np
import pytest

from advisor.advice.schedule import SCHEDULE_MIN_GAIN, price_schedule, schedule
from advisor.model.acceptance.conventions import expected_tokens
from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.speculative import Setup
from advisor.vllm.runner import GRAPH_MEMORY_FLOOR, decode_graph_sizes


@pytest.fixture(scope="module")
def lookups(llama8b, h100):
    """The same text lookup on each runner: ngram_gpu (Model Runner V2) and suffix (V1), every sequence drafted."""
    cost = EngineCost.from_datasheet(h100)
    return Setup(llama8b, cost, "ngram_gpu"), Setup(llama8b, cost, "suffix")


def test_v1_pays_piecewise_steps_for_a_schedule_and_v2_pays_graph_captures(lookups):
    v2, v1 = lookups
    E = expected_tokens(0.8, np.arange(17))
    runs = [(1, 31, 3), (32, 256, 2)]
    on_v2, on_v1 = (price_schedule(s, E, 1500.0, runs, 3, 256) for s in (v2, v1))
    assert (on_v2.runner, on_v2.graph_mode) == ("v2", "FULL_AND_PIECEWISE")
    assert (on_v1.runner, on_v1.graph_mode) == ("v1", "PIECEWISE")
    assert on_v2.one_stream == pytest.approx(0.0, abs=1e-12)  # batch 1 runs k=3 either way, in full graphs
    forced = replace(v1, target_cost=replace(v1.target_cost, cudagraph_ceiling=0))
    one_stream = float(v1.iteration_time(3, 1, 1500.0) / forced.iteration_time(3, 1, 1500.0)) - 1.0
    assert on_v1.one_stream == pytest.approx(one_stream, rel=1e-12)
    assert -0.2 < on_v1.one_stream < -0.03  # the host's piecewise floors on an 8B step at one stream
    assert on_v1.gain < on_v2.gain
    # V2: one more decode graph set (k=2: q=3) of the capture sizes within min(1024·3·2, 512) tokens
    sizes = decode_graph_sizes(3, 512)
    assert on_v2.extra_graphs == len(sizes) and on_v2.memory_bytes == len(sizes) * GRAPH_MEMORY_FLOOR
    assert on_v2.startup_s > 0 and on_v1.extra_graphs == 0
    assert sizes[0] == 3 and all(s % 3 == 0 for s in sizes) and sizes[-1] <= 512


def test_a_schedule_that_does_not_pay_is_not_pasted(lookups):
    """A schedule whose other k gains under SCHEDULE_MIN_GAIN on V2 is dropped; on V1 the same schedule loses at one
    stream, so a plain num_speculative_tokens is pasted there too."""
    from advisor.advice.advise import advise
    from advisor.advice.resolve import AcceptanceInput, build_scenario

    v2, v1 = lookups
    E = expected_tokens(0.8, np.arange(17))
    ks = np.arange(1, 17)
    runs = schedule(v2, E, 1500.0, ks, 256, (0, 0))  # the best k at every batch, none pinned
    assert len({r[2] for r in runs}) > 1
    k = runs[0][2]  # the plain k: the schedule's own at batch 1
    assert price_schedule(v1, E, 1500.0, runs, k, 256).one_stream < 0.0
    pasted = []
    for method, task, gpu, prompt, out in (("draft_model", None, "h100-sxm", 1000, 300),
                                           ("draft_model", None, "h100-sxm", 200, 2000),
                                           ("ngram", "code", "h100-sxm", 1000, 300),
                                           ("suffix", "code", "h100-sxm", 1000, 300)):
        s = build_scenario(method=method, gpu=gpu, batch=8, prompt_len=prompt, out_len=out,
                           acceptance=AcceptanceInput(task=task))
        a = advise(s)
        price = a.schedule_price
        assert price is not None, method
        assert bool(a.schedule) == (price.gain >= SCHEDULE_MIN_GAIN) == price.pays, method
        assert price.runner == ("v1" if method == "suffix" else "v2")
        pasted.append(bool(a.schedule))
    assert pasted == [True, False, True, True]  # long outputs: under SCHEDULE_MIN_GAIN, one plain k pasted
    # the README's default: one k at every batch the server runs: no schedule, nothing to price
    a = advise(build_scenario(method="draft_model", gpu="rtx-pro-6000-blackwell", batch=8, prompt_len=8000,
                              out_len=200, acceptance=AcceptanceInput()))
    assert a.best_k > 0 and a.schedule == [] and a.schedule_price is None
