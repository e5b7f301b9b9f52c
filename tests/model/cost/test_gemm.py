"""advisor/model/cost/gemm.py: grouped GEMMs by tokens per expert, against §7's FusedMoE table and Hy3's TPOT curve
(../shared/reference/gpu-measurements.md §7: Hy3-FP8 on 8×H20, vLLM)."""

import numpy as np
import pytest

from advisor.model.cost.costmodel import grouped_gemm_time, pnorm, step_time
from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.gemm import expert_flops, moe_block_rows, padded_rows, tokens_per_expert
from advisor.model.gpu.kernels import MOE_DISPATCH
from advisor.profiles.catalog import load_hardware, load_model

# §7: one FusedMoE layer, µs by tokens in the step, TP8/EP1, the Triton column (vLLM's default kernel)
TRITON_US = {4: 56.4, 16: 124.2, 32: 184.3, 64: 374.9, 128: 302.9, 256: 310.9, 512: 331.6, 1024: 652.7}
# §7: baseline TPOT without speculation, default backends, ms by batch
HY3_TPOT_MS = {1: 8.00, 4: 11.14, 8: 13.49, 16: 17.98, 32: 24.13, 64: 31.10}
HY3_CONTEXT = 3000  # not published: output 4K, so ~2K into the output on a ~1K prompt (assumed)


@pytest.fixture(scope="module")
def hy3_on_h20():
    return load_model("hy3"), EngineCost.from_datasheet(load_hardware("h20"), "fp8")


def fused_moe_layer_us(model, cost, tokens) -> float:
    """One FusedMoE layer on one of 8 GPUs: the grouped GEMMs under the MoE kernels' floors, as forward_pass adds it."""
    gemm = grouped_gemm_time(model, cost, tokens, 8) / model.moe_layers
    return float(pnorm(gemm, MOE_DISPATCH * cost.moe_kernel_floor, cost.floor_exponent)) * 1e6


def test_fused_moe_layer_follows_the_triton_column_by_tokens_per_expert(hy3_on_h20):
    errors = {n: fused_moe_layer_us(*hy3_on_h20, n) / us - 1 for n, us in TRITON_US.items()}
    # GROUPED_STREAM_SHARE is solved for a median error of 0 over the table
    assert abs(np.median(list(errors.values()))) < 0.02
    # 4-512 tokens (a decode or verification step's): 1 to 21 tokens per expert, each within a quarter; at 1024
    # tokens the Triton default config (64-row tiles, 43 tokens per expert) runs at 653 µs where CUTLASS takes 438:
    # the model's 367 µs follows the better kernel there, and that row is not held to it
    assert all(abs(errors[n]) < 0.25 for n in TRITON_US if n <= 512), errors


def test_hy3_baseline_tpot_on_8_h20_follows_the_published_curve(hy3_on_h20):
    model, cost = hy3_on_h20
    errors = {b: float(step_time(model, cost, b, 1, HY3_CONTEXT, tp=8)) * 1e3 / ms - 1 for b, ms in HY3_TPOT_MS.items()}
    # measured: -13%, -19%, -10%, -3%, 0%, -2% at batch 1, 4, 8, 16, 32, 64 (before the grouped GEMMs: -15% to -42%,
    # falling behind as the batch grew). Batch 1-4 is kernel floors, which the datasheet fit sets.
    assert all(abs(e) < 0.20 for e in errors.values()), errors
    assert all(abs(errors[b]) < 0.10 for b in (8, 16, 32, 64)), errors


def test_tiles_follow_vllms_default_fused_moe_config():
    assert list(moe_block_rows([1, 64, 65, 4096], "fp8")) == [16, 16, 64, 64]
    assert list(moe_block_rows([32, 33, 96, 97, 512, 513], "bf16")) == [16, 32, 32, 64, 64, 128]


def test_padding_is_at_least_a_tile_continuous_and_about_half_a_tile_past_it():
    rows = np.array([1.0, 8.0, 8.5, 9.0, 100.0])
    assert list(padded_rows(rows, 16)) == [16.0, 16.0, 16.0, 16.5, 107.5]
    assert padded_rows(1.0, 1.0) == 1.0  # a CPU's: no tiles


def test_few_tokens_per_expert_compute_whole_tiles(hy3_on_h20):
    model, _ = hy3_on_h20
    assert float(tokens_per_expert(model, 1)) == pytest.approx(1.0)
    nominal, padded = (float(expert_flops(model, 64, "fp8", kernel)) for kernel in ("none", "triton"))
    assert padded / nominal == pytest.approx(16 / float(tokens_per_expert(model, 64)))
    assert float(expert_flops(load_model("llama-3.1-8b-instruct"), 64, "bf16", "triton")) == 0.0


def test_a_cpu_streams_experts_at_its_dense_rate_without_tiles():
    model = load_model("qwen3-30b-a3b")
    cpu = EngineCost.from_datasheet(load_hardware("cpu-xeon-icelake-2vcpu"))
    stream = float(model.expert_weight_bytes_read(8, cpu.weight_dtype)) / cpu.bandwidth
    compute = float(expert_flops(model, 8, cpu.weight_dtype)) / cpu.flops
    assert float(grouped_gemm_time(model, cpu, 8)) == pytest.approx(max(stream, compute))
