"""advisor/model/kernels.py: kernels per layer kind, generations, all-reduce latency by link."""

import numpy as np
import pytest
from dataclasses import replace

from advisor.model import kernels
from advisor.model.costmodel import forward_pass
from advisor.model.enginecost import DEFAULT_LAYER_FLOOR_GRAPH_S, EngineCost
from advisor.profiles.catalog import load_hardware, load_model


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

