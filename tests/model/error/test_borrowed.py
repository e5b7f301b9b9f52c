"""advisor/model/error/borrowed.py: what an answer on a GPU takes from elsewhere than its own pages and measured
rows."""

from dataclasses import replace

import pytest

from advisor.model.cost.enginecost import (
    DEFAULT_BANDWIDTH_EFFICIENCY,
    DEFAULT_GDDR_BANDWIDTH_SCALE,
    EngineCost,
    streams_like,
)
from advisor.model.error import borrowed
from advisor.profiles.catalog import load_hardware


def test_a_measured_gpu_with_stated_figures_has_no_caveat():
    for slug in ("h100-sxm", "mi300x", "b300", "a100-80gb-sxm"):
        assert borrowed.caveats(load_hardware(slug), "bf16", datasheet=True, tp=8) == ()


def test_the_rate_the_costs_use_is_named_when_derived_and_only_that_one():
    mi355x = load_hardware("mi355x")
    bf16 = borrowed.caveats(mi355x, "bf16", datasheet=True)
    assert bf16[0].startswith("mi355x's bf16 peak 2516.6 TFLOP/s is derived: half the FP8 rate")
    assert not any("fp8 peak" in line or "fp4 peak" in line for line in bf16)
    assert borrowed.caveats(mi355x, "fp4", datasheet=True)[0].startswith("mi355x's fp4 peak 10066.3 TFLOP/s is derived")
    # CDNA3's matmul share is NVIDIA's (issue 33); its bandwidth share was fitted apart: both are said
    assert bf16[1] == "kernel floors and bandwidth share are CDNA3's (MI300X): CDNA4 has no measured rows"
    assert borrowed.floors(load_hardware("rtx-pro-6000-blackwell")) == \
        "kernel floors are Hopper's (H100): client Blackwell has no measured rows"
    assert borrowed.floors(load_hardware("l20")) == "kernel floors are Ampere's (A100): Ada has no measured rows"
    # the link only matters across GPUs; the MI350X's is the MI355X's
    assert not any("link" in line for line in borrowed.caveats(load_hardware("mi350x"), "bf16", datasheet=True))
    tp2 = borrowed.caveats(load_hardware("mi350x"), "bf16", datasheet=True, tp=2)
    assert any(line.startswith("mi350x's link 535.5 GB/s is borrowed from mi355x") for line in tp2)


def test_measured_costs_borrow_no_rate_floor_or_memory_share():
    """A calibration measured the rates and floors on the GPU itself: only what it cannot measure stays."""
    assert borrowed.caveats(load_hardware("mi355x"), "bf16", datasheet=False) == ()
    spark = borrowed.caveats(load_hardware("dgx-spark"), "bf16", datasheet=False)
    assert len(spark) == 1 and "shared with the CPU" in spark[0]


def test_lpddr_streams_at_gddrs_share_and_says_so():
    spark = load_hardware("dgx-spark")
    assert streams_like(spark) == "GDDR" and streams_like(load_hardware("h20")) == "HBM"
    cost = EngineCost.from_datasheet(spark)
    assert cost.bandwidth == pytest.approx(273e9 * DEFAULT_GDDR_BANDWIDTH_SCALE * DEFAULT_BANDWIDTH_EFFICIENCY)
    said = borrowed.caveats(spark, "bf16", datasheet=True)
    assert "LPDDR5X streams at GDDR's share of its peak (the A40's rows): no measured rows on it" in said
    assert any("Hopper's" in line for line in said)  # client Blackwell's floors


def test_mark_tags_derived_and_borrowed_figures_only():
    mi350x = load_hardware("mi350x")
    assert borrowed.mark(mi350x, "memory_bandwidth_gbs") == ""
    assert borrowed.mark(mi350x, "fp8_tflops") == " (derived)"
    assert borrowed.mark(mi350x, "interconnect_gbs") == " (borrowed from mi355x)"
    assert borrowed.mark(replace(mi350x, derived=(), cited=()), "fp8_tflops") == ""  # stated by its one source


def test_a_synchronous_methods_default_host_step_is_said_to_be_a_lower_bound(llama8b, h100):
    """Issue 46: on a GPU vLLM runs ngram synchronously beside an async baseline, and each of its steps waits for
    the host; the default prices vLLM's scheduler alone, so the answer says it is a lower bound. Not where the
    wait was measured (validate), not for a method scheduled like its baseline, not on a CPU (both synchronous)."""
    from advisor.model.cost.speculative import Setup

    gpu = EngineCost.from_datasheet(h100)
    said = borrowed.synchronous_host(Setup(llama8b, gpu, "ngram"))
    assert said.startswith("ngram runs synchronously here: each step waits for the host, priced as vLLM's "
                           "scheduler alone (46 µs + 16 µs per request), a lower bound: the step's input staging")
    assert borrowed.synchronous_host(Setup(llama8b, gpu, "ngram", sync_penalty=0.4e-3)) is None
    assert borrowed.synchronous_host(Setup(llama8b, gpu, "ngram_gpu")) is None  # async, as its baseline
    cpu = EngineCost.from_datasheet(load_hardware("cpu-xeon-icelake-2vcpu"))
    assert borrowed.synchronous_host(Setup(llama8b, cpu, "ngram")) is None
