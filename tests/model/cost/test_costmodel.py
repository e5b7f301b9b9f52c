"""The cost model must reproduce the known regimes (module docstring of advisor/model/cost/costmodel.py)."""

import numpy as np
import pytest

from advisor.model.cost.costmodel import draft_pass, pnorm, prefill_time, step_time
from advisor.model.cost.enginecost import DEFAULT_BANDWIDTH_EFFICIENCY, EngineCost
from advisor.profiles.catalog import load_hardware, load_model, names


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


def test_decode_time_is_weights_at_bandwidth_plus_the_overheads_and_floors(llama8b, cost, h100):
    # One decode step streams ~15 GB of bf16 weights (embedding rows are gathered, not streamed): at the default
    # bandwidth efficiency that is most of the step; the rest is the step overhead, the full-graph latency floor of
    # its 32 layers, and the compute of one token that the p-norm does not hide entirely.
    t = float(step_time(llama8b, cost, 1, 1, 0))
    streamed = float(llama8b.weight_bytes_read(1))
    assert streamed == pytest.approx(2 * (llama8b.total_params - llama8b.embedding_params), rel=1e-6)
    memory = streamed / (h100.bandwidth_bytes_per_s * DEFAULT_BANDWIDTH_EFFICIENCY)
    fixed = cost.step_overhead + llama8b.num_layers * cost.layer_floor_graph
    assert memory + fixed < t < 1.02 * (memory + fixed) + 2 * llama8b.active_params / cost.flops


def test_the_p_norm_lies_between_the_max_and_the_sum():
    a, b = np.array([1.0, 2.0, 0.0, 5.0]), np.array([1.0, 0.5, 3.0, 5.0])
    for p in (1.0, 1.45, 4.0):
        norm = pnorm(a, b, p)
        assert np.all(norm >= np.maximum(a, b) - 1e-12) and np.all(norm <= a + b + 1e-12)
    assert pnorm(a, b, 1.0) == pytest.approx(a + b)
    assert pnorm(a, b, 50.0) == pytest.approx(np.maximum(a, b), rel=0.02)


def test_prefill_is_compute_bound_and_linear_in_tokens(llama8b, cost):
    one = float(prefill_time(llama8b, cost, 1, 4096))
    two = float(prefill_time(llama8b, cost, 2, 4096))
    assert two == pytest.approx(2 * one, rel=0.05)
    flops = 4096 * float(llama8b.layer_flops_per_token(2048))  # the lm_head runs on the last position only
    assert one > flops / cost.flops


def test_tensor_parallel_splits_weights_and_adds_allreduce(llama8b, h100):
    cost = EngineCost.from_datasheet(h100)
    one = float(step_time(llama8b, cost, 1, 1, 1000, tp=1))
    two = float(step_time(llama8b, cost, 1, 1, 1000, tp=2))
    fixed = cost.step_overhead + llama8b.num_layers * cost.layer_floor_graph  # not split by tensor parallelism
    assert two < one
    assert two > (one - fixed) / 2 + fixed  # the all-reduces are not free


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


def test_each_expert_a_step_touches_pays_the_expert_overhead_and_a_dense_step_none(llama8b, cost):
    from dataclasses import replace

    from advisor.profiles.catalog import load_model

    mixtral = load_model("mixtral-8x7b-instruct-v0.1")  # 32 layers, top-2 of 8
    priced = replace(cost, expert_overhead=50e-6)
    batch = np.array([1.0, 4.0, 16.0])
    extra = step_time(mixtral, priced, batch, 1, 512) - step_time(mixtral, cost, batch, 1, 512)
    touched = 8 * (1 - (1 - 2 / 8) ** batch)  # E·(1 - (1 - k/E)^N) per layer
    assert extra == pytest.approx(50e-6 * 32 * touched)
    assert float(prefill_time(mixtral, priced, 1, 512) - prefill_time(mixtral, cost, 1, 512)) == \
        pytest.approx(50e-6 * 32 * 8, rel=0.01)  # every expert; a piecewise pass's floor hides a little of it
    assert np.array_equal(step_time(llama8b, priced, batch, 1, 512), step_time(llama8b, cost, batch, 1, 512))


def test_the_gemm_switch_follows_the_tokens_in_a_step_not_per_sequence(llama8b, cost):
    # A batch-4 decode step multiplies a 4-row matrix exactly as a batch-1 verification of 4 tokens does: both pay
    # the multi-token overhead; only a step carrying one token in all runs the matrix-vector kernels.
    switch = 0.009
    with_switch = cost.with_overheads(multi_token_overhead=switch)
    for batch, q in ((1, 1), (4, 1), (1, 4), (4, 5)):
        extra = float(step_time(llama8b, with_switch, batch, q, 500) - step_time(llama8b, cost, batch, q, 500))
        assert extra == pytest.approx(switch if batch * q > 1 else 0.0)
        # a drafter pass is a forward pass too: its kernels switch the same way
        extra = float(draft_pass(llama8b, with_switch, batch, q, 500) - draft_pass(llama8b, cost, batch, q, 500))
        assert extra == pytest.approx(switch if batch * q > 1 else 0.0)


# --- issue 13: the datasheet defaults against the fitted formulas of ../shared/reference/gpu-measurements.md §1 ----
# (Liu et al. 2026, arXiv 2601.11580: vLLM 0.10.1, Llama-3.1-8B-Instruct, one H100, InstructCoder; seconds)

def _f_target(n_kv, n_batched):
    return 3.92645679e-8 * n_kv + 2.10103129e-5 * n_batched + 5.88590713e-3


def _f_eagle(n_kv, n_spec):
    return 2.37768493e-9 * n_kv + 8.41429603e-7 * n_spec + 2.13526175e-3


def test_h100_eagle_proposal_for_k_3_is_within_25_percent_of_the_fitted_formula(llama8b, cost):
    from advisor.model.cost.speculative import Setup
    from advisor.profiles.catalog import load_model

    head = load_model("eagle-llama3.1-instruct-8b")
    proposal = float(Setup(llama8b, cost, "eagle", head, cost).draft_time(3, 1, 512))
    assert proposal == pytest.approx(_f_eagle(512, 3), rel=0.25)  # 2.14 ms: k passes inside one engine step


def test_h100_one_billion_draft_pass_is_30_to_45_percent_of_the_8b_step(llama8b, llama1b, cost):
    # "~37.5% on 8B targets": a 16-layer draft is latency-bound per layer (piecewise floors), not bandwidth-bound
    ratio = float(draft_pass(llama1b, cost, 1, 1, 512) / step_time(llama8b, cost, 1, 1, 512))
    assert 0.30 <= ratio <= 0.45


def test_h100_each_batched_token_costs_about_21_us_well_below_the_ridge(llama8b, cost):
    # §1: +21.0 µs per batched token from N = 8 to 256 (N_kv held fixed: 8 sequences x 512), where a hard max()
    # of memory and compute time would charge almost nothing
    per_token = float(step_time(llama8b, cost, 8, 32, 512) - step_time(llama8b, cost, 8, 1, 512)) / (256 - 8)
    assert per_token == pytest.approx(2.10103129e-5, rel=0.25)
    hard_max = cost.with_overheads(overlap_exponent=50.0)
    flat = float(step_time(llama8b, hard_max, 8, 32, 512) - step_time(llama8b, hard_max, 8, 1, 512)) / (256 - 8)
    assert flat < 0.5 * per_token


def test_h100_step_follows_the_fitted_formula_within_its_data(llama8b, cost):
    # §1's data reach N ≈ 64·(k+1) batched tokens; over N = 1 .. 256 the model stays within 10% of its formula
    for n in (1, 2, 4, 8, 16, 32, 64, 128, 192, 256):
        b = min(n, 8)
        model = float(step_time(llama8b, cost, b, n / b, 4096 / b))
        assert model == pytest.approx(_f_target(4096, n), rel=0.10), n


def test_logits_only_where_vllm_samples(llama8b, cost):
    # prefill computes logits at each prompt's last position; charging all 8000 rows would add the lm_head's
    # 2·8000·V·h FLOPs and 8000 fp32 logit rows
    prefill = float(prefill_time(llama8b, cost, 1, 8000))
    every_row = float(step_time(llama8b, cost, 1, 8000, 0, uniform=False))
    assert every_row - prefill > 0.9 * 2 * 8000 * llama8b.lm_head_params / cost.flops
    # verification samples all k+1 positions of every sequence; a drafter pass one row per sequence
    assert float(step_time(llama8b, cost, 64, 4, 512)) > float(step_time(llama8b, cost, 64, 4, 512, sampled=64))


def test_eagle3_fuses_once_eagle1_every_pass(llama8b, cost):
    from dataclasses import replace

    from advisor.model.cost.speculative import Setup
    from advisor.profiles.catalog import load_model

    eagle1 = load_model("eagle-llama3.1-instruct-8b")
    eagle3 = replace(eagle1, lm_head_vocab=32000)
    assert eagle1.fuses_every_pass and not eagle3.fuses_every_pass and eagle3.is_eagle3

    def later_passes(head):  # k = 4: what the three passes after the first cost, each launched on its own
        s = Setup(llama8b, cost, "eagle", head, cost, drafter_graphs=False)
        first = draft_pass(head, cost, 32, 5, 512, fusion_tokens=32 * 5)  # k+1 tokens, all fused
        return float(s.draft_time(4, 32, 512) - first) / 3

    assert later_passes(eagle3) == pytest.approx(float(draft_pass(eagle3, cost, 32, 1, 513)))  # no fusion
    with_fusion = float(draft_pass(eagle1, cost, 32, 1, 513, fusion_tokens=32))
    assert later_passes(eagle1) == pytest.approx(with_fusion)
    assert with_fusion > float(draft_pass(eagle1, cost, 32, 1, 513))


def test_a_drafter_pass_does_not_pay_the_engine_step(llama1b, cost):
    dearer = cost.with_overheads(step_overhead=cost.step_overhead + 0.005)
    assert float(draft_pass(llama1b, dearer, 8, 1, 512)) == float(draft_pass(llama1b, cost, 8, 1, 512))
    costly = cost.with_overheads(draft_pass_overhead=cost.draft_pass_overhead + 0.005)
    assert float(draft_pass(llama1b, costly, 8, 1, 512) - draft_pass(llama1b, cost, 8, 1, 512)) == pytest.approx(0.005)


def test_steps_past_the_cuda_graph_capture_lose_the_graph_but_hide_the_host_latency(llama8b, llama1b, cost):
    # a uniform step replays a full CUDA graph up to min(2·max_num_seqs·q, 512) tokens on an H100; past it the layers
    # run piecewise, whose host latency a long step's GPU work hides (why vLLM captures no larger graphs), while a
    # short piecewise pass (a drafter's) waits for it
    assert float(cost.max_cudagraph_tokens(1)) == 512 and float(cost.max_cudagraph_tokens(4)) == 512
    jump = float(step_time(llama8b, cost, 513, 1, 100) - step_time(llama8b, cost, 512, 1, 100))
    floors = llama8b.num_layers * cost.layer_floor_piecewise
    assert 0 < jump < 0.25 * floors
    short = float(draft_pass(llama1b, cost, 1, 1, 512))
    assert short > llama1b.num_layers * cost.layer_floor_piecewise


LARGE_GPUS = [slug for slug in names("hardware") if (hw := load_hardware(slug)).memory_gib >= 80 and hw.family != "cpu"]


@pytest.mark.parametrize("slug", LARGE_GPUS)
def test_a_4k_prefill_of_a_70b_on_two_gpus_runs_between_30_and_85_percent_of_their_dense_peak(slug):
    """Issue 33: on every GPU with at least 80 GB, a 4096-token prefill of Llama-3.1-70B at TP2 (fp8 where the GPU
    has it) takes between the roofline at 85% and at 30% of the two GPUs' dense peak: a large GEMM's efficiency
    (0.4-0.85 of the peak in microbenchmarks) plus the pass's floors and all-reduces, never a catch-all that runs
    every matmul at a few percent of the peak."""
    hw, model, tokens = load_hardware(slug), load_model("llama-3.1-70b-instruct"), 4096
    dtype = "fp8" if hw.fp8_tflops else "bf16"
    peak = 2 * hw.peak_flops(dtype)
    flops = tokens * float(model.layer_flops_per_token((tokens + 1) / 2, tokens)) + 2 * model.lm_head_params
    weights = model.weight_bytes(dtype) / (2 * hw.bandwidth_bytes_per_s)
    took = float(prefill_time(model, EngineCost.from_datasheet(hw, dtype), 1, tokens, tp=2))
    assert max(weights, flops / (0.85 * peak)) <= took <= max(weights, flops / (0.30 * peak))
