"""An engine's costs (advisor/model/cost/enginecost.py): the one list of calibrated parameters, and vLLM's limits by
device class."""

from dataclasses import fields

from advisor.model.cost.enginecost import EngineCost, calibrated_fields
from advisor.profiles.catalog import load_hardware


def test_calibrated_fields_are_the_fitted_parameters_then_the_stored_ones():
    fitted = [f.how.unit is not None for f in calibrated_fields()]
    assert fitted == sorted(fitted, reverse=True) and any(fitted) and not all(fitted)
    assert {f.name for f in calibrated_fields()} <= {f.name for f in fields(EngineCost)}


def test_limits_and_graphs_follow_the_device_class(h100):
    assert (h100.slug, cost_limits(h100)) == ("h100-sxm", (8192, 1024, 512))
    assert cost_limits(load_hardware("a100-80gb-sxm")) == (2048, 256, 512)
    assert cost_limits(load_hardware("b200")) == (16384, 1024, 1024)
    cpu = EngineCost.from_datasheet(load_hardware("cpu-xeon-icelake-2vcpu"))
    assert (cpu.max_num_batched_tokens, cpu.max_num_seqs, cpu.cudagraph_ceiling) == (2048, 128, 0)
    assert cpu.layer_floor_graph == cpu.layer_floor_piecewise == 0.0  # no CUDA graphs on a CPU
    assert EngineCost.from_datasheet(h100).for_hardware(h100, max_num_seqs=8).max_num_seqs == 8


def cost_limits(hw):
    c = EngineCost.from_datasheet(hw)
    return c.max_num_batched_tokens, c.max_num_seqs, c.cudagraph_ceiling
