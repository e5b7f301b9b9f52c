"""advisor/model/cost/engines.py and `recommend --engine`: another engine's own terms on the shared physics."""

import json

import pytest

from advisor.cli.app import main
from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.engines import ENGINES, SERVED, TERMS, VLLM, Engine, priced_for
from advisor.profiles.catalog import load_hardware

FLAGS = ["recommend", "--prompt-len", "500", "--out-len", "200", "--gpu", "h100-sxm", "--format", "json"]


def test_every_engine_names_its_sources_and_only_its_own_terms():
    assert ENGINES[VLLM].terms == {} and VLLM in SERVED and "trtllm" in SERVED and "gpt-fast" not in SERVED
    for e in ENGINES.values():
        assert set(e.terms) <= set(TERMS) and e.sources
    with pytest.raises(ValueError):
        Engine("x", "X", {"step_overhead": -1.0}, ("S1",))
    with pytest.raises(ValueError):
        Engine("x", "X", {"layer_floor_graph": 1e-6}, ("S1",))


def test_an_engines_terms_replace_vllms_on_every_cost_and_nothing_else():
    cost = EngineCost.from_datasheet(load_hardware("h100-sxm"))
    target, draft, none = priced_for("sglang", cost, cost, None)
    assert none is None and target.step_overhead == ENGINES["sglang"].terms["step_overhead"] == draft.step_overhead
    assert target.bandwidth == cost.bandwidth and target.layer_floor_graph == cost.layer_floor_graph


def _json(capsys, *flags):
    assert main([*FLAGS, *flags]) == 0
    return json.loads(capsys.readouterr().out)


def test_recommend_prices_sglang_with_its_own_terms_and_says_so(capsys):
    vllm, sglang = _json(capsys), _json(capsys, "--engine", "sglang")
    # SGLang's per-step and per-token terms (1 ms and 31 µs in the fit) lengthen every baseline step
    assert sglang["time_split"]["tpot_baseline_ms"] > vllm["time_split"]["tpot_baseline_ms"]
    said = [n for n in sglang["gpu_caveats"] if n.startswith("engine: SGLang's own terms")]
    assert len(said) == 1 and "S2, S4, S8, S10" in said[0], sglang["gpu_caveats"]
    assert not [n for n in vllm["gpu_caveats"] if n.startswith("engine:")]
    assert (vllm["inputs"]["engine"], sglang["inputs"]["engine"]) == ("vllm", "sglang")  # a script can tell them apart


def test_an_engine_that_one_source_priced_extrapolates(capsys):
    trt = _json(capsys, "--engine", "trtllm")
    assert any(n.startswith("extrapolating: TensorRT-LLM's terms rest on one source (S12")
               for n in trt["gpu_caveats"]), trt["gpu_caveats"]


@pytest.mark.parametrize("flags, said", [
    (["--engine", "tgi"], "unknown --engine 'tgi'; choose one of vllm, sglang, trtllm"),
    (["--engine", "gpt-fast"], "unknown --engine 'gpt-fast'"),
    (["--engine", "sglang", "--calibration", "profiles/calibrations/x.json"], "a calibration measured vLLM"),
])
def test_a_bad_engine_is_one_line_exit_2(capsys, flags, said):
    assert main([*FLAGS, *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and len(err.splitlines()) == 1, err
