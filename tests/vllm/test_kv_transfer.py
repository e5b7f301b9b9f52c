"""advisor/vllm/kv_transfer.py: the NIXL facts against vLLM 0.32's own code, and the router line against
vllm-router's own parser."""

import inspect
import shlex

import pytest

from advisor.vllm.kv_transfer import (
    KV_CONSUMER,
    KV_PRODUCER,
    NIXL_HASHED_SPECULATIVE_KEYS,
    NIXL_SIDE_CHANNEL_DEFAULT,
    NIXL_SIDE_CHANNEL_ENV,
    hashed,
    kv_transfer_config,
    prefill_speculative,
    router_command,
)


def test_the_config_is_vllms_kv_transfer_config():
    config = pytest.importorskip("vllm.config.kv_transfer")
    for role in (KV_PRODUCER, KV_CONSUMER):
        built = config.KVTransferConfig(**kv_transfer_config(role))
        assert (built.kv_connector, built.kv_role) == ("NixlConnector", role)


def test_the_hashed_keys_are_those_nixl_hashes_and_k_is_not_one():
    metadata = pytest.importorskip("vllm.distributed.kv_transfer.kv_connector.v1.nixl.metadata")
    source = inspect.getsource(metadata._get_speculative_compatibility_factors)
    for key in NIXL_HASHED_SPECULATIVE_KEYS:
        assert f'"{key}"' in source
    assert "num_speculative_tokens" not in source and "use_eagle()" in source


def test_the_side_channel_default_is_vllms():
    envs = pytest.importorskip("vllm.envs")
    assert envs.environment_variables[NIXL_SIDE_CHANNEL_ENV]() == NIXL_SIDE_CHANNEL_DEFAULT


def test_the_prefill_config_hashes_as_the_decode_one():
    decode = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3,
              "num_speculative_tokens_per_batch_size": [[1, 8, 3], [9, 64, 1]]}
    prefill = prefill_speculative(decode)
    assert hashed(prefill) == hashed(decode) and prefill["num_speculative_tokens"] == 1
    assert "num_speculative_tokens_per_batch_size" not in prefill and prefill_speculative({}) == {}


def test_the_router_line_parses_with_vllm_routers_own_arguments():
    router_args = pytest.importorskip("vllm_router.router_args")
    import argparse

    line = router_command(["http://$PREFILL_IP_1:8000", "http://$PREFILL_IP_2:8000"], ["http://$DECODE_IP:8000"])
    parser = argparse.ArgumentParser()
    router_args.RouterArgs.add_cli_args(parser)
    args = router_args.RouterArgs.from_cli_args(parser.parse_args(shlex.split(line)[1:]))
    assert args.vllm_pd_disaggregation and args.kv_connector == "nixl"
    assert [url for url, _ in args.prefill_urls] == ["http://$PREFILL_IP_1:8000", "http://$PREFILL_IP_2:8000"]
    assert args.decode_urls == ["http://$DECODE_IP:8000"]
