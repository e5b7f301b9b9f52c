import pytest

from advisor.errors import InputError
from advisor.model.parallel.deployment import Deployment


def test_defaults_are_one_group():
    d = Deployment()
    assert not d.beyond_one_group and d.gpus == 1 and d.ep_size == 1


def test_shape_and_token_cap():
    d = Deployment(tensor_parallel_size=2, data_parallel_size=16, enable_expert_parallel=True, nodes=4,
                   all2all_backend="deepep_low_latency")
    assert (d.gpus, d.gpus_per_node, d.ranks_per_node, d.ep_size) == (32, 8, 4, 32)
    assert d.token_cap(8192) == 256  # vLLM's default with DeepEP LL, EP and DP > 1
    assert Deployment(data_parallel_size=2, enable_expert_parallel=True).token_cap(8192) == 8192
    assert Deployment(data_parallel_size=2, enable_expert_parallel=True, all2all_backend="deepep_low_latency",
                      max_num_batched_tokens=1024).token_cap(8192) == 1024


@pytest.mark.parametrize("changes, words", [
    ({"data_parallel_size": 0}, "--data-parallel-size must be at least 1"),
    ({"data_parallel_size": 4, "nodes": 3}, "--nodes 3 must divide"),
    ({"tensor_parallel_size": 8, "nodes": 2}, "tensor parallelism across nodes"),
    ({"data_parallel_size": 2, "enable_dbo": True}, "add --enable-expert-parallel"),
    ({"data_parallel_size": 2, "enable_expert_parallel": True, "enable_dbo": True}, "vLLM 0.32 refuses to start"),
    ({"data_parallel_size": 2, "imbalance": 0.5}, "--dp-imbalance"),
    # issue 49: the busiest rank holds at most every request (imbalance DP); above it, or inf, was read silently
    ({"data_parallel_size": 4, "imbalance": 9.0}, "at most --data-parallel-size 4"),
    ({"data_parallel_size": 4, "imbalance": float("inf")}, "got inf"),
    ({"imbalance": 2.0}, "at most --data-parallel-size 1"),
    ({"data_parallel_size": 2, "all2all_backend": "pplx"}, "removed in vLLM 0.32"),
    ({"data_parallel_size": 2, "all2all_backend": "deepep_high_throughput"}, "not modelled"),
])
def test_bad_shapes_are_one_line(changes, words):
    with pytest.raises(InputError, match=words) as caught:
        Deployment(**changes)
    assert "\n" not in str(caught.value)


def test_redundant_experts_need_eplb_over_expert_parallelism():
    with pytest.raises(InputError, match="--enable-expert-parallel"):
        Deployment(data_parallel_size=4, redundant_experts=32)
    assert Deployment(data_parallel_size=4, enable_expert_parallel=True, redundant_experts=32).redundant_experts == 32


def test_moe_layers_shard_over_tp_times_dp_with_or_without_ep():
    assert Deployment(tensor_parallel_size=2, data_parallel_size=4).moe_shards == 8
    assert Deployment(tensor_parallel_size=2, data_parallel_size=4, enable_expert_parallel=True).moe_shards == 8
    assert Deployment(tensor_parallel_size=4).moe_shards == 4
