"""The DP/EP facts against vLLM 0.32's own source and config classes."""

import inspect

import pytest

from advisor.vllm.parallel import (
    BATCHED_DP_MAX_TOKENS,
    DBO_DECODE_TOKEN_THRESHOLD,
    DEFAULT_ALL2ALL_BACKEND,
    DP_SYNC_INTERVAL,
    MODELLED_ALL2ALL_BACKENDS,
    REMOVED_ALL2ALL_BACKENDS,
    UNMODELLED_ALL2ALL_BACKENDS,
    batched_dp_moe,
    requests_per_rank_cap,
    schedule_kept,
)

config = pytest.importorskip("vllm.config")


def test_backends_and_defaults_match_vllm():
    import typing

    from vllm.config.parallel import All2AllBackend, ParallelConfig
    from vllm.config.scheduler import SchedulerConfig

    choices = set(typing.get_args(All2AllBackend)) - {"passthrough"}  # passthrough: not selectable from the CLI
    assert choices == {*MODELLED_ALL2ALL_BACKENDS, *UNMODELLED_ALL2ALL_BACKENDS, *REMOVED_ALL2ALL_BACKENDS}
    fields = ParallelConfig.__dataclass_fields__
    assert fields["all2all_backend"].default == DEFAULT_ALL2ALL_BACKEND
    assert fields["dbo_decode_token_threshold"].default.default == DBO_DECODE_TOKEN_THRESHOLD
    assert fields["dp_sync_interval"].default.default == DP_SYNC_INTERVAL
    assert SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP == BATCHED_DP_MAX_TOKENS


def test_vllm_drops_the_per_batch_schedule_at_dp_above_one():
    from vllm.config.vllm import VllmConfig

    source = inspect.getsource(VllmConfig._maybe_disable_dynamic_sd_for_data_parallel)
    assert "data_parallel_size <= 1" in source and "num_speculative_tokens_per_batch_size = None" in source
    assert schedule_kept(1) and not schedule_kept(2)


def test_batched_dp_cap_rule_matches_vllm():
    from vllm.config.parallel import ParallelConfig

    source = inspect.getsource(ParallelConfig.use_batched_dp_moe.fget)
    assert all(b in source for b in ("deepep_low_latency", "nixl_ep"))
    assert batched_dp_moe("deepep_low_latency", True, 2) and not batched_dp_moe("deepep_low_latency", True, 1)
    assert not batched_dp_moe(DEFAULT_ALL2ALL_BACKEND, True, 8)
    assert [requests_per_rank_cap(256, k) for k in (0, 1, 3, 7)] == [256, 128, 64, 32]
