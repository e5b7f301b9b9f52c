"""advisor/model/gpu/kernels.py: kernels per layer kind, generations, all-reduce latency by link."""

from dataclasses import replace

import numpy as np
import pytest

from advisor.model.cost.costmodel import forward_pass
from advisor.model.cost.enginecost import DEFAULT_FLOOR_SCALE, DEFAULT_LAYER_FLOOR_GRAPH_S, EngineCost
from advisor.model.gpu import kernels
from advisor.profiles.catalog import load_hardware, load_model
from advisor.vllm.runner import CUDAGRAPH_CEILING, CUDAGRAPH_CEILING_DC_BLACKWELL, data_center_blackwell


def test_a_dense_llama_layer_is_six_small_kernels_and_pays_the_floor_it_is_quoted_per(llama8b, h100):
    small, dispatch = kernels.kernels_per_pass(llama8b)
    assert (small, dispatch) == (6.0 * llama8b.num_layers, 0.0)  # 2 norms, rotary, KV write, attention, activation
    cost = EngineCost.from_datasheet(h100)
    bare = replace(cost, layer_floor_graph=0.0)
    for graph in (True, False):  # a kernel's minimum duration is the GPU's, however it was launched
        with_floor = forward_pass(llama8b, cost, 1, 1, 512, sampled=1, graph=graph)
        without = forward_pass(llama8b, bare, 1, 1, 512, sampled=1, graph=graph)
        assert float(with_floor - without) > 0
    graph_pass = forward_pass(llama8b, cost, 1, 1, 512, sampled=1, graph=True)
    assert float(graph_pass - forward_pass(llama8b, bare, 1, 1, 512, sampled=1, graph=True)) == pytest.approx(
        llama8b.num_layers * DEFAULT_LAYER_FLOOR_GRAPH_S)


def test_an_mla_moe_layer_launches_more_kernels_than_a_dense_one():
    dsv3 = load_model("deepseek-v3")
    small, dispatch = kernels.kernels_per_pass(dsv3)
    moe = dsv3.moe_layers
    assert dispatch == kernels.MOE_DISPATCH * moe
    assert small / dsv3.num_layers > kernels.DENSE_LAYER_KERNELS
    # an MTP head runs its one MoE layer per pass
    assert kernels.kernels_per_pass(dsv3.mtp_draft())[1] == kernels.MOE_DISPATCH


def test_dsa_indexers_launch_their_kernels_where_they_run():
    """DeepSeek-V3.2 is V3 with an indexer in every layer; GLM-5.2 runs one in 21 of its 78 (the rest reuse the
    previous top-k), GLM-5 in all 78. An MTP head's one layer has its own indexer."""
    dsv3, dsv32 = load_model("deepseek-v3"), load_model("deepseek-v3.2")
    assert kernels.kernels_per_pass(dsv32)[0] - kernels.kernels_per_pass(dsv3)[0] == kernels.DSA_INDEXER * 61
    glm5, glm52 = load_model("glm-5"), load_model("glm-5.2")
    assert kernels.kernels_per_pass(glm5)[0] - kernels.kernels_per_pass(glm52)[0] == kernels.DSA_INDEXER * (78 - 21)
    assert kernels.kernels_per_pass(glm52.mtp_draft())[0] - kernels.kernels_per_pass(
        replace(glm52.mtp_draft(), index_layers=0))[0] == kernels.DSA_INDEXER


def test_generations_and_links_come_from_the_profiles():
    gen = {slug: kernels.generation(load_hardware(slug)) for slug in ("a100-80gb-sxm", "h100-sxm", "b300", "mi300x",
                                                                      "rtx-pro-6000-blackwell", "l40s")}
    assert gen == {"a100-80gb-sxm": "ampere", "h100-sxm": "hopper", "b300": "blackwell", "mi300x": "cdna3",
                   "rtx-pro-6000-blackwell": "hopper", "l40s": "ampere"}
    assert [kernels.link(load_hardware(s)) for s in ("h100-sxm", "mi300x", "l40s")] == ["nvlink", "xgmi", "pcie"]
    # every Hopper profile takes Hopper's floors (the H800 and GH200 profiles came after the rule was written)
    hopper = [s for s in ("h100-nvl", "h100-pcie", "h200", "h200-nvl", "h800", "gh200")]
    assert {s: kernels.generation(load_hardware(s)) for s in hopper} == dict.fromkeys(hopper, "hopper")


def test_one_shot_allreduce_latency_is_flat_in_tp_and_a_pcie_ring_grows():
    tp = np.array([1, 2, 4, 8])
    assert kernels.allreduce_hops("nvlink", tp).tolist() == [0.0, 1.0, 1.0, 1.0]
    assert kernels.allreduce_hops("xgmi", tp).tolist() == [0.0, 1.0, 1.0, 1.0]
    assert kernels.allreduce_hops("pcie", tp).tolist() == [0.0, 1.0, 6.0, 14.0]


def test_a_verifications_extra_experts_hide_under_the_moe_floors_at_batch_1():
    dsv3, b300 = load_model("deepseek-v3"), load_hardware("b300")  # §6's GPU
    cost = EngineCost.from_datasheet(b300, "fp8")
    one, three = (float(forward_pass(dsv3, cost, 1, q, 1024, sampled=q, graph=True, tp=8)) for q in (1, 3))
    bytes_ratio = float(dsv3.expert_weight_bytes_read(3) / dsv3.expert_weight_bytes_read(1))
    assert bytes_ratio > 2.5  # 3 tokens touch nearly 3x the experts ...
    assert three / one < 1.15  # ... which cost little over the kernel floors of a latency-bound step



@pytest.mark.parametrize("slug, gen, link, borrowed", [
    ("mi355x", "cdna3", "xgmi", True), ("mi350x", "cdna3", "xgmi", True), ("h20", "hopper", "nvlink", False),
    ("l20", "ampere", "pcie", True), ("rtx-pro-5000-blackwell", "hopper", "pcie", True),
    ("rtx-pro-5000-blackwell-72gb", "hopper", "pcie", True), ("rtx-pro-4500-blackwell", "hopper", "pcie", True),
    ("dgx-spark", "hopper", "network", True),
])
def test_new_gpus_take_their_generations_floors_and_link_and_say_when_they_are_borrowed(slug, gen, link, borrowed):
    hw = load_hardware(slug)
    assert (kernels.generation(hw), kernels.link(hw)) == (gen, link)
    assert kernels.floors_borrowed_from(hw) == (gen if borrowed else None)
    cost = EngineCost.from_datasheet(hw)
    assert cost.layer_floor_graph == pytest.approx(DEFAULT_LAYER_FLOOR_GRAPH_S * DEFAULT_FLOOR_SCALE[gen])
    assert cost.link == link and cost.cudagraph_ceiling == CUDAGRAPH_CEILING  # none is compute capability 10.x


def test_the_generation_comes_from_the_architecture_not_the_slug():
    """h20 is a prefix of h200 and mi3 of mi355x: a name says nothing about the chip."""
    h20, mi355x, b300 = (load_hardware(s) for s in ("h20", "mi355x", "b300"))
    assert kernels.generation(replace(mi355x, slug="h200", name="H200")) == "cdna3"
    assert kernels.generation(replace(h20, slug="mi300x", name="b200")) == "hopper"
    renamed = replace(b300, slug="x", name="x")
    assert kernels.generation(renamed) == "blackwell"
    assert EngineCost.from_datasheet(renamed).cudagraph_ceiling == CUDAGRAPH_CEILING_DC_BLACKWELL
    assert all(kernels.floors_borrowed_from(load_hardware(s)) is None for s in ("a100-80gb-sxm", "a10", "h100-sxm", "b300",
                                                                           "mi300x", "cpu-xeon-icelake-2vcpu"))


def test_data_center_blackwell_is_compute_capability_10_as_vllm_asks():
    assert [data_center_blackwell(a) for a in ("sm_100", "sm_103", "sm_120", "sm_121", "sm_90", "gfx950", "x86_64")] \
        == [True, True, False, False, False, False, False]


def test_a_network_between_boxes_all_reduces_as_a_ring():
    tp = np.array([1, 2, 4])
    assert kernels.allreduce_hops("network", tp).tolist() == kernels.allreduce_hops("pcie", tp).tolist()
