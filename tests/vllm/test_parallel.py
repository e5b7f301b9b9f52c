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


def test_dbo_backends_are_those_vllm_microbatches_with():
    from vllm.config.vllm import VllmConfig

    from advisor.vllm.parallel import DBO_ALL2ALL_BACKENDS

    source = inspect.getsource(VllmConfig.__post_init__)
    block = source[source.index("if self.parallel_config.use_ubatching:"):]
    block = block[:block.index("], (")]
    assert all(f'"{b}"' in block for b in DBO_ALL2ALL_BACKENDS) and block.count('"') == 2 * len(DBO_ALL2ALL_BACKENDS)


def test_dbo_turns_model_runner_v2_off():
    from vllm.config.vllm import VllmConfig

    from advisor.vllm.parallel import DBO_DRAFTS_FULL_GRAPHS

    source = inspect.getsource(VllmConfig._get_dbo_unsupported_features)
    assert 'return ["dual batch overlap"]' in source and "VLLM_USE_V2_MODEL_RUNNER is None" in source
    assert DBO_DRAFTS_FULL_GRAPHS is False


def test_no_all_to_all_and_no_dbo_split_at_dp_1():
    from vllm.config.parallel import ParallelConfig
    from vllm.v1.worker import dp_utils

    from advisor.vllm.parallel import all2all_runs, dbo_splits

    use = inspect.getsource(ParallelConfig.use_all2all.fget)
    seq = inspect.getsource(ParallelConfig.use_sequence_parallel_moe.fget)
    assert "self.data_parallel_size > 1" in use and "self.data_parallel_size > 1" in seq
    early = inspect.getsource(dp_utils.coordinate_batch_across_dp)
    assert "if parallel_config.data_parallel_size == 1:" in early
    assert not all2all_runs(1) and all2all_runs(2) and not dbo_splits(1) and dbo_splits(2)


def test_limits_are_vllms_defaults_at_the_shape():
    from vllm.engine.arg_utils import EngineArgs

    from advisor.vllm.parallel import limits

    source = inspect.getsource(EngineArgs._set_default_max_num_seqs_and_batched_tokens_args)
    assert "self.max_num_seqs = min(self.max_num_seqs, self.max_num_batched_tokens)" in source
    assert limits((8192, 1024), "deepep_low_latency", True, 16) == (256, 256)
    assert limits((8192, 1024), "allgather_reducescatter", True, 16) == (8192, 1024)
    assert limits((8192, 1024), "deepep_low_latency", True, 16, 1024, None) == (1024, 1024)
    assert limits((8192, 1024), "deepep_low_latency", True, 16, None, 64) == (256, 64)
