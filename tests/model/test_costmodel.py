"""The cost model must reproduce the known regimes (module docstring of advisor/model/costmodel.py)."""

from dataclasses import fields

import numpy as np
import pytest

from advisor.model.costmodel import (
    EngineCost,
    calibrated_fields,
    prefill_time,
    step_time,
)


@pytest.fixture(scope="module")
def cost(h100):
    return EngineCost.from_datasheet(h100)


def test_small_batch_decode_is_memory_bound_so_verification_is_nearly_free(llama8b, cost):
    decode = step_time(llama8b, cost, 1, 1, 1000)
    verify = step_time(llama8b, cost, 1, 5, 1000)  # k = 4 drafts + 1
    assert verify / decode < 1.05


def test_large_batch_turns_compute_bound_so_verification_costs_about_k_plus_1(llama8b, cost):
    batch, k = 512, 4
    decode = step_time(llama8b, cost, batch, 1, 100)
    verify = step_time(llama8b, cost, batch, k + 1, 100)
    assert verify / decode > 0.7 * (k + 1)


def test_long_context_kv_reads_dominate_and_keep_large_batches_memory_bound(llama8b, cost):
    # MagicDec: at 32k context and batch 64 the KV cache, not the weights, is what each step streams, so
    # verification is cheap again even at a batch where short contexts would be compute-bound.
    batch, k = 64, 4
    short = step_time(llama8b, cost, batch, k + 1, 256) / step_time(llama8b, cost, batch, 1, 256)
    long = step_time(llama8b, cost, batch, k + 1, 32_000) / step_time(llama8b, cost, batch, 1, 32_000)
    assert long < short
    assert long < 1.3
    kv = batch * llama8b.kv_bytes_read(32_000)
    assert kv > 4 * llama8b.weight_bytes_read(batch)


def test_decode_time_matches_the_bandwidth_sanity_figure(llama8b, cost, h100):
    # One decode step streams ~15 GB of bf16 weights (embedding rows are gathered, not streamed);
    # at 85% of 3.35 TB/s that is ~5.3 ms, plus the 1 ms step overhead.
    t = float(step_time(llama8b, cost, 1, 1, 0))
    streamed = float(llama8b.weight_bytes_read(1))
    assert streamed == pytest.approx(2 * (llama8b.total_params - llama8b.embedding_params), rel=1e-6)
    assert t == pytest.approx(streamed / (h100.bandwidth_bytes_per_s * 0.85) + cost.step_overhead, rel=0.02)


def test_prefill_is_compute_bound_and_linear_in_tokens(llama8b, cost):
    one = float(prefill_time(llama8b, cost, 1, 4096))
    two = float(prefill_time(llama8b, cost, 2, 4096))
    assert two == pytest.approx(2 * one, rel=0.05)
    flops = 4096 * float(llama8b.flops_per_token(2048))
    assert one > flops / cost.flops


def test_tensor_parallel_splits_weights_and_adds_allreduce(llama8b, h100):
    cost = EngineCost.from_datasheet(h100)
    one = float(step_time(llama8b, cost, 1, 1, 1000, tp=1))
    two = float(step_time(llama8b, cost, 1, 1, 1000, tp=2))
    assert two < one
    assert two > (one - cost.step_overhead) / 2 + cost.step_overhead  # the all-reduces are not free


def test_broadcasts_over_grids(llama8b, cost):
    grid = step_time(llama8b, cost, np.array([1, 8, 64])[:, None], np.array([1, 5])[None, :], 2000)
    assert grid.shape == (3, 2)
    assert np.all(np.diff(grid, axis=0) > 0)


def test_moe_verification_touches_more_experts():
    from advisor.profiles.catalog import load_model

    mixtral = load_model("mixtral-8x7b-instruct-v0.1")
    assert mixtral.active_params < 0.35 * mixtral.total_params
    assert float(mixtral.experts_touched(1)) == pytest.approx(2.0)
    assert float(mixtral.weight_bytes_read(5)) > 2 * float(mixtral.weight_bytes_read(1))


def test_the_gemm_switch_follows_the_tokens_in_a_step_not_per_sequence(llama8b, cost):
    # A batch-4 decode step multiplies a 4-row matrix exactly as a batch-1 verification of 4 tokens does: both pay
    # the multi-token overhead; only a step carrying one token in all runs the matrix-vector kernels.
    switch = 0.009
    with_switch = cost.with_overheads(multi_token_overhead=switch)
    for batch, q in ((1, 1), (4, 1), (1, 4), (4, 5)):
        extra = float(step_time(llama8b, with_switch, batch, q, 500) - step_time(llama8b, cost, batch, q, 500))
        assert extra == pytest.approx(switch if batch * q > 1 else 0.0)


def test_calibrated_fields_are_the_fitted_parameters_then_the_stored_ones():
    fitted = [f.how.unit is not None for f in calibrated_fields()]
    assert fitted == sorted(fitted, reverse=True) and any(fitted) and not all(fitted)
    assert {f.name for f in calibrated_fields()} <= {f.name for f in fields(EngineCost)}
