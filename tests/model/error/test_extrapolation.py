"""advisor/model/error/extrapolation.py: an answer outside the published rows says so, and its interval widens."""

import pytest

from advisor.model.error.extrapolation import Covered, gpu_kind, reasons, widened
from advisor.model.uncertainty import TARGET_REGIMES, CostError

COVER = Covered({"gddr": "S5 (A40)"}, {"vllm": ("nvidia",), "sglang": ("amd", "nvidia"), "trtllm": ("nvidia",)},
                {"trtllm": "S12 (B200)"}, moe_min_active_b=20.0, moe_max_batch=64, max_context=6000)
INSIDE = {"kind": "nvidia-hbm", "vendor": "nvidia", "moe": False, "active_b": 8.0, "batch": 16, "context": 2000}


def test_inside_the_published_rows_nothing_is_said():
    assert reasons(COVER, **INSIDE) == ()
    # a dense model at any batch, and a dense MoE (as active as a published one) up to the largest MoE batch
    assert reasons(COVER, **{**INSIDE, "moe": True, "active_b": 37.0, "batch": 64}) == ()


@pytest.mark.parametrize("change, said", [
    ({"kind": "gddr"}, "GDDR's bandwidth share rests on one source (S5 (A40))"),
    ({"vendor": "amd", "kind": "cdna3"}, "no published vLLM row on an AMD GPU"),
    ({"moe": True, "active_b": 3.3, "batch": 8}, "no published row of an MoE this sparse at concurrency above 1"),
    ({"moe": True, "active_b": 37.0, "batch": 128}, "no published MoE row above concurrency 64"),
    ({"context": 8200}, "no published row prices a context over 6000 tokens"),
    ({"engine": "trtllm"}, "TensorRT-LLM's terms rest on one source (S12 (B200))"),
])
def test_each_way_out_is_named(change, said):
    out = reasons(COVER, **{**INSIDE, **change})
    assert len(out) == 1 and out[0].startswith(said), out


def test_a_sparse_moe_alone_at_concurrency_1_is_inside():
    assert reasons(COVER, **{**INSIDE, "moe": True, "active_b": 3.3, "batch": 1}) == ()


def test_an_engine_is_inside_on_the_vendors_its_rows_ran_on():
    assert reasons(COVER, **{**INSIDE, "engine": "sglang", "vendor": "amd", "kind": "cdna3"}) == ()
    assert reasons(COVER, **{**INSIDE, "vendor": "amd", "kind": "cdna3"})[0].startswith("no published vLLM row")


def test_the_kind_follows_memory_then_generation():
    assert gpu_kind(True, "ampere") == "gddr" and gpu_kind(False, "cdna3") == "cdna3"
    assert gpu_kind(False, "hopper") == gpu_kind(False, "blackwell") == "nvidia-hbm"


def test_widening_raises_each_spread_to_the_extrapolating_one_and_never_narrows():
    err = CostError({**{r: 0.05 for r in TARGET_REGIMES}, "long_context": 0.3, "drafter": 0.1}, "fit", "datasheet")
    wide = widened(err, 0.2)
    assert wide.sigma["dense_memory_bound"] == 0.2 and wide.sigma["drafter"] == 0.2
    assert wide.sigma["long_context"] == 0.3  # already wider
    assert "extrapolating" in wide.source and wide.kind == "datasheet"


def test_a_coverage_needs_positive_limits():
    with pytest.raises(ValueError):
        Covered({}, {"vllm": ("nvidia",)}, {}, moe_min_active_b=0.0, moe_max_batch=64, max_context=6000)
